#!/usr/bin/env python3
"""Interleaved A/B runs of criterion bench binaries, for a noisy shared machine.

Usage: ab.py ROUNDS FILTER BINARY...

Runs each BINARY (a built criterion bench, e.g. a copy of target/release/deps/skinning-*
taken before and after a change) ROUNDS times in turn with `--bench FILTER`, short
measurements, and prints per benchmark the median and the minimum of the criterion
medians over the rounds, in ns. Alternating the binaries spreads the machine's slow spells
over all of them; compare medians from one invocation only.
"""
import collections
import re
import statistics
import subprocess
import sys

UNIT = {"ps": 1e-3, "ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def medians(output):
    """(name, median in ns) for each benchmark in criterion's text output."""
    name = None
    for line in output.splitlines():
        m = re.match(r"^(\S+/\S+)\s*(time:\s*\[(\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\])?", line)
        if m and not line.startswith("Benchmarking"):
            name = m.group(1)
            if m.group(2):
                yield name, float(m.group(5)) * UNIT[m.group(6)]
                name = None
            continue
        m = re.match(r"^\s+time:\s*\[(\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\]", line)
        if m and name:
            yield name, float(m.group(3)) * UNIT[m.group(4)]
            name = None


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, filt, bins = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    res = collections.defaultdict(list)
    for _ in range(rounds):
        for b in bins:
            out = subprocess.run(
                [b, "--bench", filt, "--warm-up-time", "0.5", "--measurement-time", "1.5",
                 "--sample-size", "20"],
                capture_output=True, text=True, check=True,
            ).stdout
            for n, v in medians(out):
                res[(n, b)].append(v)
    for n in sorted({n for n, _ in res}):
        cells = []
        for b in bins:
            v = res[(n, b)]
            if v:
                cells.append("%s: median %.1f min %.1f" % (b.split("/")[-1], statistics.median(v), min(v)))
        print(n, " | ".join(cells))


if __name__ == "__main__":
    main()
