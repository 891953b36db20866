"""Speed of the skelett package beside bvhio (pure Python, the common choice for BVH) in the
same run, and skelett's world matrices per second over every clip of ../shared/data.

    .venv-py/bin/python crates/skelett-py/bench/bench_bvhio.py [--repeat 5]

Prints medians. Both libraries load the file and compute every joint's world position at
every frame; bvhio's positions are checked against skelett's (same file, same units) so
that the two do the same work.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import skelett

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def skelett_positions(path: Path) -> np.ndarray:
    asset = skelett.load(path)
    clip = asset.clips[0]
    frames = round(clip.duration * clip.frame_rate) + 1
    times = clip.start + np.arange(frames) / clip.frame_rate
    return clip.sample_positions(times)


def bvhio_positions(path: Path) -> np.ndarray:
    import bvhio

    root = bvhio.readAsHierarchy(str(path))
    joints = [j for j, _, _ in root.layout()]
    start, end = root.getKeyframeRange()
    out = np.empty((end - start + 1, len(joints), 3))
    for f in range(start, end + 1):
        root.loadPose(f)
        for k, j in enumerate(joints):
            p = j.PositionWorld
            out[f - start, k] = (p.x, p.y, p.z)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--file", default=str(DATA / "bvh" / "01_01.bvh"))
    args = ap.parse_args()
    path = Path(args.file)

    ours = skelett_positions(path)
    theirs = bvhio_positions(path)
    names = skelett.load(path).skeleton.names
    # bvhio has no End Site joints: compare the joints both have, by order of the layout.
    import bvhio

    bnames = [j.Name for j, _, _ in bvhio.readAsHierarchy(str(path)).layout()]
    idx = [names.index(n) for n in bnames]
    diff = np.abs(ours[:, idx] - theirs).max()
    print(f"{path.name}: {ours.shape[0]} frames, {len(bnames)} joints; largest difference "
          f"between the two {diff:.2e} units")

    t_ours = median_time(lambda: skelett_positions(path), args.repeat)
    t_theirs = median_time(lambda: bvhio_positions(path), max(1, args.repeat // 2))
    print(f"load + world positions of every frame: skelett {t_ours * 1e3:.1f} ms, "
          f"bvhio {t_theirs * 1e3:.0f} ms: {t_theirs / t_ours:.0f}x")

    # World matrices for every frame of every clip of the data (30 fps where the clip has no
    # rate), loading excluded.
    assets = []
    for folder in ("gltf", "bvh", "fbx", "x"):
        for p in sorted((DATA / folder).iterdir()):
            if p.suffix.lower() in {".glb", ".gltf", ".bvh", ".fbx", ".x"}:
                assets.append(skelett.load(p))
    work = []
    for a in assets:
        for c in a.clips:
            rate = c.frame_rate or 30.0
            n = max(1, round(c.duration * rate) + 1)
            work.append((c, c.start + np.arange(n) / rate, len(a.skeleton)))
    total = sum(len(t) * j for _, t, j in work)

    def every_clip() -> None:
        for c, t, _ in work:
            c.sample_world(t)

    t_all = median_time(every_clip, args.repeat)
    print(f"world matrices, every frame of {len(work)} clips ({total} joint-frames): "
          f"{t_all * 1e3:.1f} ms = {total / t_all / 1e6:.1f} M matrices per second")


if __name__ == "__main__":
    main()
