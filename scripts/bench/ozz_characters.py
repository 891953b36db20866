#!/usr/bin/env python3
"""One character and a crowd of 1024, skelett's animator beside ozz-animation's harness,
interleaved tightly enough that both see the same state of a shared, noisy machine.

Per round and per asset (robot_quaternius, Fox, CesiumMan): ozz's `ozz_bench` on that asset
(built and converted by ../shared/bench/ozz: build.sh, convert.sh), then `cost_probe crowd`
of each skelett build given (order alternating between rounds). Prints, per build and
asset, the medians (and quartiles) of the per-round ratios: skelett's one character over
ozz's, and its crowd of 1024 (in turn, prefetched, and where the build has them, lean
animators prefetched, with model matrices and writing their palettes alone) over ozz's
crowd; and where the build has them, the same for the stateless calls alone (one
character, the crowd in turn and prefetched), which do what ozz's harness does: no
animator, so nothing fades, syncs or fires events.

usage: scripts/bench/ozz_characters.py OZZ_BUILD OZZ_ASSETS ROUNDS COST_PROBE [COST_PROBE...]
  OZZ_BUILD   the directory holding ozz_bench (../shared/bench/ozz/build.sh's)
  OZZ_ASSETS  convert.sh's output directory
  COST_PROBE  `cargo build --release -p skelett-io --example cost_probe` gives
              target/release/examples/cost_probe; copy it aside to compare builds
Environment: DATA (default ../shared/data beside the repository), OZZ_ROUNDS (5).
"""
import json, os, re, statistics, subprocess, sys

if len(sys.argv) < 5:
    sys.exit(__doc__)
ozz_build, ozz_assets, rounds, bins = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
data = os.environ.get("DATA", os.path.join(repo, "..", "shared", "data")) + "/gltf"
ozz_rounds = os.environ.get("OZZ_ROUNDS", "5")
# name, ozz's clips and phase of the second (its harness), skelett's clips (cost_probe's).
assets = [("robot_quaternius", "Robot_Running", "Robot_Walking", "0", "Robot_Walking", "Robot_Running"),
          ("Fox", "Walk", "Run", "0", "Walk", "Run"),
          ("CesiumMan", "animation_0", "animation_0", "0.5", "0", "0")]
rows = {}
for r in range(rounds):
    for name, oa, ob, phase, sa, sb in assets:
        out = subprocess.run([f"{ozz_build}/ozz_bench", f"{data}/{name}.glb", f"{ozz_assets}/{name}",
                              oa, ob, phase, "--rounds", ozz_rounds],
                             capture_output=True, text=True, check=True).stdout
        d = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
        ozz_one, ozz_crowd = d["character_one_us"] * 1e3, d["character_crowd1024_us"] * 1e3
        for b in (bins if (r + len(name)) % 2 == 0 else bins[::-1]):
            out = subprocess.run([b, "crowd", f"{data}/{name}.glb", sa, sb, "3000", "5"],
                                 capture_output=True, text=True, check=True).stdout
            m = re.search(r"one (\d+), \d+ in turn (\d+) \([^)]*\), prefetched (\d+)", out)
            one, turn, pre = (float(x) for x in m.groups())
            # Builds from 2026-11-30 on: lean animators writing palettes alone.
            lean = re.search(r"lean animators.*prefetched: (\d+) .*palette only (\d+)", out)
            lean_model, lean = (float(x) for x in lean.groups()) if lean else (float("nan"),) * 2
            # Builds from 2026-11-30 on: the stateless calls alone, ozz's harness's shape.
            direct = re.search(r"stateless calls.*: one (\d+), \d+ in turn (\d+) \([^)]*\), prefetched (\d+)", out)
            d_one, d_turn, d_pre = (float(x) for x in direct.groups()) if direct else (float("nan"),) * 3
            rows.setdefault((b, name), []).append(
                (one / ozz_one, turn / ozz_crowd, pre / ozz_crowd, one, pre, ozz_one, ozz_crowd,
                 lean / ozz_crowd, lean, lean_model / ozz_crowd,
                 d_one / ozz_one, d_turn / ozz_crowd, d_pre / ozz_crowd, d_one, d_pre))
    print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)
for (b, name), v in rows.items():
    med = lambda i: statistics.median(x[i] for x in v)
    quart = lambda i: "-".join(f"{q:.2f}" for q in statistics.quantiles([x[i] for x in v], n=4)[::2]) if len(v) > 1 else "-"
    print(f"{b} {name}: one/ozz {med(0):.3f} (quartiles {quart(0)}), crowd/ozz {med(1):.3f}, "
          f"prefetched/ozz {med(2):.3f} (quartiles {quart(2)}), lean prefetched/ozz {med(9):.3f} "
          f"(quartiles {quart(9)}), lean palette prefetched/ozz "
          f"{med(7):.3f} (quartiles {quart(7)}); medians: skelett one {med(3):.0f} ns, "
          f"prefetched {med(4):.0f}, lean palette {med(8):.0f}; ozz one {med(5):.0f}, crowd {med(6):.0f}")
    print(f"{b} {name}, stateless calls: one/ozz {med(10):.3f} (quartiles {quart(10)}), "
          f"crowd/ozz {med(11):.3f} (quartiles {quart(11)}), prefetched/ozz {med(12):.3f} "
          f"(quartiles {quart(12)}); medians: skelett one {med(13):.0f} ns, prefetched {med(14):.0f}")
