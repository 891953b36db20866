#!/usr/bin/env python3
"""Writes a BVH with a wide skeleton (every joint has four children, depth log4 N) and two
random frames: the input for measuring how `skelett compress` scales with joint count.

    python3 scripts/hostile/wide_bvh.py 8191 /tmp/wide8191.bvh
    /usr/bin/time skelett compress /tmp/wide8191.bvh /tmp/wide8191.skl --cm-per-unit 1

End sites add joints: N named joints give about 1.75 N in the skeleton.
"""
import random
import sys


def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    random.seed(1)
    kids = [[] for _ in range(n)]
    for i in range(1, n):
        kids[(i - 1) // 4].append(i)
    out = ["HIERARCHY"]
    stack = [(0, False)]
    while stack:
        i, closing = stack.pop()
        if closing:
            out.append("}")
            continue
        out += [f"{'ROOT' if i == 0 else 'JOINT'} j{i}", "{", "OFFSET 0 1 0",
                "CHANNELS 3 Zrotation Xrotation Yrotation"]
        if not kids[i]:
            out += ["End Site", "{", "OFFSET 0 1 0", "}"]
        stack.append((i, True))
        stack += [(k, False) for k in reversed(kids[i])]
    out += ["MOTION", "Frames: 2", "Frame Time: 0.0333333"]
    for _ in range(2):
        out.append(" ".join(f"{random.uniform(-20, 20):.3f}" for _ in range(3 * n)))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
