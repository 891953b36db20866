"""Converts and compresses a folder of captures as tasks on Dask's distributed scheduler.

Each task loads one file, compresses its clips within 0.01 cm and writes a .skl beside the
others; assets pickle (as .skl bytes), so they could travel between workers too, though here
each task reads its own file. Run on a local cluster of two worker processes:

    python crates/skelett-py/examples/dask_compress.py ../shared/data/bvh out/

On a real cluster, point `Client` at its scheduler instead of starting a `LocalCluster`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import skelett


def compress_one(source: str, out_dir: str) -> tuple[str, str, list[dict[str, Any]]]:
    """One task: load, compress, write `<name>.skl`; returns the reports."""
    asset = skelett.load(source)
    packed, reports = asset.compress(error_cm=0.01)
    out = str(Path(out_dir) / (Path(source).stem + ".skl"))
    packed.save(out)
    for r in reports:
        r["worker_pid"] = os.getpid()
    return source, out, reports


def run(files: list[Path] | list[str], out_dir: Path | str, workers: int = 2) -> list[Any]:
    """Compresses `files` into `out_dir` on a local cluster of `workers` processes."""
    from dask.distributed import Client, LocalCluster

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        futures = [client.submit(compress_one, str(f), str(out_dir), pure=False) for f in files]
        return client.gather(futures)


if __name__ == "__main__":
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in
                   {".bvh", ".glb", ".gltf", ".fbx", ".x", ".skl"})
    for source, written, reports in run(files, out):
        ratio = sum(r["raw_bytes"] for r in reports) / max(1, sum(r["compressed_bytes"] for r in reports))
        print(f"{source} -> {written}: {len(reports)} clips, {ratio:.1f}:1")
