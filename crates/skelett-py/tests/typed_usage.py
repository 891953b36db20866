"""Type-checked use of the skelett package (`mypy --strict` runs on this file in the tests):
the stubs must describe what the README shows."""

import numpy as np
import numpy.typing as npt

import skelett


def world_positions(path: str) -> npt.NDArray[np.float32]:
    asset: skelett.Asset = skelett.load(path)
    clip: skelett.Clip = asset.clips[0]
    times = np.linspace(clip.start, clip.end, 10)
    world = clip.sample_world(times)
    names: list[str] = asset.skeleton.names
    assert world.shape[1] == len(names)
    return world[:, :, :3, 3]


def animate(asset: skelett.Asset) -> float:
    a = skelett.Animator(asset.skeleton)
    a.play(asset.clips[0], wrap="loop", rotation="nlerp")
    result = a.update(1 / 60)
    names = [e["name"] for e in result["events"] if e["kind"] == "event"]
    yaw: float = result["root_motion"]["yaw"]
    return yaw + len(names)


def skinned(asset: skelett.Asset, clip: skelett.Clip) -> npt.NDArray[np.float32]:
    positions, normals = asset.skin(0, clip, [0.0, 0.5], normals=True)
    assert normals.shape == positions.shape
    return asset.skin(0, clip, np.array([0.0]))


def compress(asset: skelett.Asset) -> float:
    packed, reports = asset.compress(error_cm=0.01)
    return sum(float(r["ratio"]) for r in reports) / max(1, len(packed.clips))
