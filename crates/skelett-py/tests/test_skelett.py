"""The skelett Python package against the golden references of ../shared/data/reference
(three.js, assimp), against skelett's own CLI (the Rust API), and its contracts: shapes,
dtypes, contiguity, read-only views that outlive their owner, errors as exceptions, pickling.

Run by `cargo test --workspace` (crates/skelett-py/tests/pytest.rs) in the virtual
environment scripts/setup.sh makes, or directly: `.venv-py/bin/python -m pytest
crates/skelett-py/tests`.
"""

import gc
import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import skelett

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"


def data(rel: str) -> Path:
    p = DATA / rel
    if not p.exists():
        pytest.fail(f"{p} is missing: ../shared must be beside the repository")
    return p


def reference(name: str) -> dict:
    return json.loads((DATA / "reference" / f"{name}.json").read_text())


def world_from_reference(w) -> np.ndarray:
    """A reference's column-major 16 floats as a 4x4 for column vectors."""
    return np.array(w, dtype=np.float64).reshape(4, 4).T


def check_against_reference(asset: "skelett.Asset", ref: dict, by_name: bool) -> float:
    """Every reference joint's world position at every reference time, relative to the
    skeleton's size; returns the largest error."""
    names = asset.skeleton.names
    worst = 0.0
    for rc in ref["clips"]:
        clip = asset.clips[rc["index"]]
        times = np.array([s["t"] for s in rc["samples"]])
        world = clip.sample_world(times)
        for k, s in enumerate(rc["samples"]):
            want = [world_from_reference(j["world"]) for j in s["joints"]]
            size = max(1e-6, max(np.linalg.norm(w[:3, 3]) for w in want))
            for j, w in zip(s["joints"], want):
                if by_name:
                    if j["name"] == "ENDSITE":
                        continue
                    index = names.index(j["name"])
                else:
                    index = int(asset.skins[0].joints[j["joint"]])
                got = world[k, index]
                err = np.linalg.norm(got[:3, 3] - w[:3, 3]) / size
                worst = max(worst, err)
                assert err < 1e-5, (rc["name"], s["t"], j["name"], got[:3, 3], w[:3, 3])
    return worst


def test_the_smallest_use_from_the_readme():
    asset = skelett.load(data("bvh/01_01.bvh"))
    world = asset.clips[0].sample_world(np.array([0.0, 0.5]))
    names = asset.skeleton.names
    assert world.shape == (2, len(names), 4, 4)
    assert world.dtype == np.float32 and world.flags["C_CONTIGUOUS"]


@pytest.mark.parametrize(
    "file,by_name",
    [("bvh/01_01.bvh", True), ("gltf/CesiumMan.glb", False), ("gltf/Fox.glb", False)],
)
def test_world_positions_match_the_golden_references(file, by_name):
    asset = skelett.load(data(file))
    worst = check_against_reference(asset, reference(Path(file).name), by_name)
    assert worst < 1e-5


def skelett_cli() -> Path:
    for build in ("debug", "release"):
        p = REPO / "target" / build / "skelett"
        if p.exists():
            return p
    pytest.fail("no skelett binary under target/: cargo build -p skelett-cli")


def test_values_equal_the_rust_api():
    """`skelett sample --json` (the Rust API through the CLI) gives the same world matrices."""
    file = data("gltf/Fox.glb")
    times = [0.0, 0.37, 1.1]
    out = subprocess.run(
        [str(skelett_cli()), "sample", str(file), "--clip", "Run", "--json",
         "--times", ",".join(str(t) for t in times)],
        check=True, capture_output=True, text=True,
    ).stdout
    cli = json.loads(out)
    asset = skelett.load(file)
    world = asset.clip("Run").sample_world(np.array(times))
    skin = asset.skins[0].joints
    for k, s in enumerate(cli["clips"][0]["samples"]):
        for j in s["joints"]:
            want = world_from_reference(j["world"])
            got = world[k, int(skin[j["joint"]])]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * max(1.0, np.abs(want).max()))


def test_sampling_shapes_and_forward_kinematics_agree():
    asset = skelett.load(data("gltf/robot_quaternius.glb"))
    clip = asset.clip("Robot_Running")
    j = len(asset.skeleton)
    times = np.linspace(clip.start, clip.end, 7)
    local = clip.sample_local(times)
    world = clip.sample_world(times)
    pos = clip.sample_positions(times)
    assert local.shape == (7, j, 10) and world.shape == (7, j, 4, 4) and pos.shape == (7, j, 3)
    for a in (local, world, pos):
        assert a.dtype == np.float32 and a.flags["C_CONTIGUOUS"] and a.flags["WRITEABLE"]
    # Forward kinematics from the arrays gives the sampled world matrices.
    fk = asset.skeleton.world_from_local(local)
    np.testing.assert_allclose(fk, world, atol=1e-5)
    np.testing.assert_allclose(pos, world[:, :, :3, 3], atol=0)
    # One pose in, one pose out; lists and float32 times are accepted.
    assert asset.skeleton.world_from_local(local[0]).shape == (j, 4, 4)
    np.testing.assert_array_equal(clip.sample_local([float(t) for t in times]), local)
    np.testing.assert_array_equal(clip.sample_local(times.astype(np.float32)), local)
    # Rotations are unit quaternions; the rest pose's world is its FK.
    q = local[..., 3:7]
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(
        asset.skeleton.world_from_local(asset.skeleton.rest_local), asset.skeleton.rest_world, atol=1e-5
    )
    parents = asset.skeleton.parents
    assert parents.dtype == np.int32 and parents[0] == -1 and (parents < np.arange(j)).all()


def test_mesh_arrays_are_views_that_outlive_the_asset():
    asset = skelett.load(data("gltf/CesiumMan.glb"))
    mesh = asset.meshes[0]
    pos = mesh.positions
    # The same object on every access: no copy.
    assert asset.meshes[0].positions is pos
    assert pos.dtype == np.float32 and pos.shape[1] == 3 and pos.flags["C_CONTIGUOUS"]
    assert not pos.flags["WRITEABLE"]
    with pytest.raises(ValueError):
        pos[0, 0] = 1.0
    n = pos.shape[0]
    assert mesh.weights.shape == mesh.joints.shape and mesh.joints.shape[0] == n
    np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, atol=1e-5)
    assert mesh.indices.dtype == np.uint32 and mesh.indices.max() < n
    ib = asset.skins[0].inverse_binds
    total = float(pos.sum())
    del asset, mesh
    gc.collect()
    # Still valid memory, still the same numbers.
    assert float(pos.sum()) == total
    assert ib.shape[1:] == (4, 4)


def test_skinning_matches_the_three_js_reference():
    ref = json.loads((DATA / "reference" / "skin" / "CesiumMan.glb.skin.json").read_text())
    asset = skelett.load(data("gltf/CesiumMan.glb"))
    clip = asset.clips[ref["clip"]["index"]]
    samples = ref["samples"]
    times = np.array([s["t"] for s in samples])
    skinned = asset.skin(0, clip, times)
    assert skinned.shape == (len(times), asset.meshes[0].positions.shape[0], 3)
    verts = ref["vertices"]
    size = float(np.abs(asset.meshes[0].positions).max())
    for k, s in enumerate(samples):
        want = np.array(s["world"], dtype=np.float64)
        got = skinned[k, verts]
        assert np.abs(got - want).max() < 1e-4 * max(1.0, size), (s["t"], np.abs(got - want).max())
    # The same from world matrices the caller computed; one pose gives (N, 3).
    world = clip.sample_world(times)
    np.testing.assert_allclose(asset.skin_world(0, world), skinned, atol=1e-4)
    np.testing.assert_allclose(asset.skin_world(0, world[1]), skinned[1], atol=1e-4)
    bad = world.copy()
    bad[0, 3, 1, 2] = math.nan
    with pytest.raises(ValueError, match="finite: pose 0, joint 3"):
        asset.skin_world(0, bad)
    pos, nrm = asset.skin(0, clip, times[:2], normals=True)
    np.testing.assert_allclose(np.linalg.norm(nrm, axis=-1), 1.0, atol=1e-4)


def test_errors_are_exceptions_with_file_and_place():
    with pytest.raises(FileNotFoundError):
        skelett.load("/no/such/file.glb")
    bvh = data("bvh/01_01.bvh").read_bytes()
    damaged = bvh.replace(b"CHANNELS 6", b"CHANNELS X", 1)
    with pytest.raises(skelett.SkelettError) as e:
        skelett.load_bytes(damaged, "damaged.bvh")
    assert "damaged.bvh" in str(e.value) and "line" in str(e.value)
    asset = skelett.load(data("gltf/Fox.glb"))
    clip = asset.clips[0]
    with pytest.raises(ValueError, match="finite"):
        clip.sample_world(np.array([0.0, math.nan]))
    with pytest.raises(TypeError):
        clip.sample_world("soon")
    with pytest.raises(ValueError, match="shape"):
        asset.skeleton.world_from_local(np.zeros((3, 5, 10), dtype=np.float32))
    with pytest.raises(ValueError):
        asset.clip("NoSuchClip")
    with pytest.raises(IndexError):
        asset.clip(-1)
    with pytest.raises(TypeError):
        asset.clip(1.5)
    with pytest.raises(IndexError):
        asset.skin(7, clip, [0.0])
    with pytest.raises(IndexError):
        asset.skin(-1, clip, [0.0])
    local = clip.sample_local([0.0])
    local[0, 2, 4] = math.inf
    with pytest.raises(ValueError, match="finite: pose 0, joint 2, value 4"):
        asset.skeleton.world_from_local(local)
    other = skelett.load(data("bvh/01_01.bvh")).clips[0]
    with pytest.raises(ValueError, match="skeleton"):
        asset.skin(0, other, [0.0])
    a = skelett.Animator(asset.skeleton)
    with pytest.raises(ValueError):
        a.play(clip, wrap="sometimes")
    for bad in (lambda: a.play(clip, start=2.0), lambda: a.play(clip, start=math.nan),
                lambda: a.set_layer_weight(0, math.nan), lambda: a.set_layer_weight(0, 5.0),
                lambda: a.set_speed(0, math.nan), lambda: a.update(-0.1),
                lambda: a.update(math.inf), lambda: a.add_layer(weight=-2.0)):
        with pytest.raises(ValueError):
            bad()


def test_objects_pickle_and_come_back_equal():
    asset = skelett.load(data("gltf/Fox.glb"))
    times = np.linspace(0, 1, 5)
    again = pickle.loads(pickle.dumps(asset))
    assert again.skeleton.names == asset.skeleton.names
    np.testing.assert_array_equal(again.clips[1].sample_world(times), asset.clips[1].sample_world(times))
    np.testing.assert_array_equal(again.meshes[0].positions, asset.meshes[0].positions)
    clip = pickle.loads(pickle.dumps(asset.clips[2]))
    np.testing.assert_array_equal(clip.sample_local(times), asset.clips[2].sample_local(times))
    sk = pickle.loads(pickle.dumps(asset.skeleton))
    np.testing.assert_array_equal(sk.rest_world, asset.skeleton.rest_world)


def test_poses_edited_in_numpy_go_back_to_a_clip_and_a_file(tmp_path):
    asset = skelett.load(data("gltf/Fox.glb"))
    clip = asset.clip("Walk")
    times = np.arange(0.0, clip.duration, 1 / 30)
    local = clip.sample_local(times)
    # Raise the whole character by 10 units: the root's translation.
    local[:, 0, 1] += 10.0
    edited = skelett.Clip.from_local(asset.skeleton, "Walk raised", times, local)
    np.testing.assert_allclose(edited.sample_local(times), local, atol=1e-5)
    out = tmp_path / "raised.glb"
    asset.with_clips([edited]).save(out)
    back = skelett.load(out)
    assert back.clips[0].name == "Walk raised"
    diff = back.clips[0].sample_positions(times) - clip.sample_positions(times)
    # Joint 0 and every joint below it moved by the root transform's image of 10 up.
    parents = asset.skeleton.parents
    below = [0]
    for j in range(1, len(parents)):
        if parents[j] in below:
            below.append(j)
    up = asset.skeleton.root_transform[:3, :3] @ np.array([0.0, 10.0, 0.0])
    np.testing.assert_allclose(diff[:, below, :], np.broadcast_to(up, diff[:, below, :].shape), atol=1e-3)
    with pytest.raises(ValueError, match="increase"):
        skelett.Clip.from_local(asset.skeleton, "x", times[::-1], local)


def test_convert_and_compress(tmp_path):
    out = tmp_path / "fox.skl"
    assert skelett.convert(data("gltf/Fox.glb"), out) == []
    # What a format cannot hold is returned, as the CLI warns.
    lost = skelett.load(out).save(tmp_path / "fox.ram")
    assert any("clips after the first" in w for w in lost), lost
    counted = tmp_path / "fox_counted.ram"
    skelett.convert(data("gltf/Fox.glb"), counted, ram_counts=True, raa_fps=25.0)
    assert (tmp_path / "fox_counted.raa").read_text().startswith("fps 25\n")
    assert skelett.load(out).scaled(0.01).skeleton.rest_local[1, 1] == pytest.approx(
        skelett.load(out).skeleton.rest_local[1, 1] * 0.01)
    fox = skelett.load(out)
    compressed, reports = fox.compress(error_cm=0.01)
    assert [r["clip"] for r in reports] == [c.name for c in fox.clips]
    for r in reports:
        assert r["ratio"] > 1.0 and r["max_error_cm"] <= 0.01 + 1e-6
    assert all(c.is_compact for c in compressed.clips)
    assert sum(c.size_bytes for c in compressed.clips) < sum(c.size_bytes for c in fox.clips)
    with pytest.raises(ValueError):
        fox.compress(error_cm=-1.0)
    # The fast level: within the budget, never smaller than the default.
    quick, quick_reports = fox.compress(error_cm=0.01, fast=True)
    for r, q in zip(reports, quick_reports):
        assert q["max_error_cm"] <= 0.01 + 1e-6
        assert q["compressed_bytes"] >= r["compressed_bytes"]
    assert all(c.is_compact for c in quick.clips)
    # The seekable layout: the same errors and samples, somewhat larger.
    seekable, seek_reports = fox.compress(error_cm=0.01, seekable=True)
    for r, s in zip(reports, seek_reports):
        assert s["max_error_cm"] == r["max_error_cm"]
        assert r["compressed_bytes"] <= s["compressed_bytes"] < 2 * r["compressed_bytes"]
    for a, b in zip(compressed.clips, seekable.clips):
        times = [a.start, a.start + 0.37, a.start + a.duration]
        assert (a.sample_local(times) == b.sample_local(times)).all()
        assert (a.compact_layout, b.compact_layout) == ("stream", "seek")
        converted = a.with_compact_layout("seek")
        assert converted.size_bytes == b.size_bytes
        assert (converted.sample_local(times) == b.sample_local(times)).all()
    # The lanes layout: within the budget as measured in it, larger, close to the streamed
    # samples (16-bit keys), and not convertible back.
    lanes, lanes_reports = fox.compress(error_cm=0.01, lanes=True)
    for r, s in zip(reports, lanes_reports):
        assert s["max_error_cm"] <= 0.01 + 1e-6
        assert s["compressed_bytes"] > r["compressed_bytes"]
    for a, b in zip(compressed.clips, lanes.clips):
        assert b.compact_layout == "lanes"
        times = [a.start, a.start + 0.37, a.start + a.duration]
        assert abs(a.sample_local(times) - b.sample_local(times)).max() < 1e-2
        with pytest.raises(ValueError):
            b.with_compact_layout("stream")
    assert compressed.clips[0].with_compact_layout("lanes").compact_layout == "lanes"
    with pytest.raises(ValueError):
        fox.compress(seekable=True, lanes=True)
    assert fox.clips[0].compact_layout is None
    with pytest.raises(ValueError):
        fox.clips[0].with_compact_layout("seek")
    with pytest.raises(ValueError):
        compressed.clips[0].with_compact_layout("random")


def test_a_process_forked_after_a_batch_call_samples_too():
    """multiprocessing's fork (Linux's default) copies no threads: the package makes its
    thread pool per process, so a forked worker does not wait forever on the parent's."""
    import multiprocessing as mp

    clip = skelett.load(data("bvh/01_01.bvh")).clips[0]
    times = np.linspace(clip.start, clip.end, 64)
    want = clip.sample_positions(times)  # the parent's pool now exists
    with mp.get_context("fork").Pool(2) as pool:
        got = pool.starmap_async(_positions, [(clip, times), (clip, times)]).get(timeout=120)
    for g in got:
        np.testing.assert_array_equal(g, want)


def _positions(clip, times):
    return clip.sample_positions(times)


def test_a_capture_retargets_onto_a_game_character(tmp_path):
    capture = skelett.load(data("bvh/01_01.bvh"))
    robot = skelett.load(data("gltf/robot_quaternius.glb"))
    m = skelett.joint_map(capture.skeleton, robot.skeleton)
    assert m["Body"] == "Hips"
    clip = capture.clips[0].retarget(robot.skeleton)
    assert abs(clip.duration - capture.clips[0].duration) < 1e-3
    world = clip.sample_world(np.linspace(clip.start, clip.end, 20))
    assert world.shape == (20, len(robot.skeleton), 4, 4) and np.isfinite(world).all()
    # The root travels as the capture's hips do, scaled to the robot.
    body = robot.skeleton.find("Body")
    p = clip.sample_positions([clip.start, clip.end])
    assert np.linalg.norm(p[1, body] - p[0, body]) > 0.1
    robot.with_clips([clip]).save(tmp_path / "robot_walk.glb")
    with pytest.raises(ValueError):
        capture.clips[0].retarget(robot.skeleton, joint_map={"Body": "NoSuchJoint"})


def test_the_animator_plays_cross_fades_and_reports():
    asset = skelett.load(data("gltf/Fox.glb"))
    a = skelett.Animator(asset.skeleton)
    a.set_notifications(True)
    a.play(asset.clip("Walk"))
    kinds = []
    for _ in range(60):
        r = a.update(1 / 30)
        kinds += [e["kind"] for e in r["events"]]
    assert "looped" in kinds
    a.crossfade(asset.clip("Run"), 0.25)
    for _ in range(12):
        kinds += [e["kind"] for e in a.update(1 / 30)["events"]]
    assert "transition_finished" in kinds
    # Clip events, added from Python, fire with their name and clip time.
    survey = asset.clip("Survey").with_events([(0.5, "look", "left"), (1.0, "blink")])
    assert survey.events == [(0.5, "look", "left"), (1.0, "blink", None)]
    e = skelett.Animator(asset.skeleton)
    e.play(survey)
    fired = []
    for _ in range(40):
        fired += [(x["name"], x["time"]) for x in e.update(1 / 30)["events"] if x["kind"] == "event"]
    assert fired[:2] == [("look", 0.5), ("blink", 1.0)]
    with pytest.raises(ValueError):
        asset.clip("Survey").with_events([(99.0, "late")])
    upper = a.add_layer("override", 0.5, mask="b_Spine01_02")
    a.play(asset.clip("Survey"), layer=upper, rotation="nlerp")
    a.update(1 / 30)
    w = a.pose_world()
    assert w.shape == (len(asset.skeleton), 4, 4) and a.pose_local().shape == (len(asset.skeleton), 10)
    np.testing.assert_allclose(asset.skeleton.world_from_local(a.pose_local()), w, rtol=1e-5, atol=1e-5)

    # Root motion: the CMU walk moves its hips; extracted, the pose stays in place and the
    # motion comes out of update.
    walk = skelett.load(data("bvh/01_01.bvh"))
    b = skelett.Animator(walk.skeleton)
    b.play(walk.clips[0])
    b.set_root_motion("Hips")
    moved = np.zeros(3)
    for _ in range(120):
        moved += np.asarray(b.update(1 / 60)["root_motion"]["translation"])
    assert np.linalg.norm(moved) > 1.0
    with pytest.raises(ValueError, match="no joint"):
        b.set_root_motion("Tail")


def test_batch_sampling_releases_the_gil_and_agrees_across_threads():
    """While one thread samples a long batch, another keeps running Python (the GIL is
    released during the call); two threads sampling at once get one call's result."""
    import threading

    small = skelett.load(data("gltf/RiggedSimple.glb")).clips[0]
    many = np.linspace(small.start, small.end, 4_000_000)
    done = threading.Event()
    spins = 0

    def long_call():
        small.sample_positions(many)
        done.set()

    t = threading.Thread(target=long_call)
    t.start()
    while not done.is_set():
        spins += 1
    t.join()
    # With the GIL held for the whole call this loop could not run during it.
    assert spins > 1000, spins

    clip = skelett.load(data("bvh/01_01.bvh")).clips[0]
    times = np.linspace(clip.start, clip.end, 2000)
    want = clip.sample_world(times)
    results = [None, None]

    def run(i):
        results[i] = clip.sample_world(times)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for r in results:
        np.testing.assert_array_equal(r, want)


def test_the_type_stubs_check_with_mypy():
    example = Path(__file__).with_name("typed_usage.py")
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(example)],
        capture_output=True, text=True, cwd=Path(__file__).parent,
        env={**os.environ},
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_folder_converts_and_compresses_on_a_dask_cluster_of_two_workers(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import dask_compress

    files = [data("bvh/01_01.bvh"), data("gltf/Fox.glb"), data("gltf/RiggedFigure.glb")]
    results = dask_compress.run(files, tmp_path, workers=2)
    assert len(results) == 3
    for src, out, reports in results:
        assert Path(out).exists()
        back = skelett.load(out)
        assert all(c.is_compact for c in back.clips)
        assert all(r["max_error_cm"] <= 0.01 + 1e-6 for r in reports)
    # The work ran in the workers' processes, not this one.
    pids = {rep["worker_pid"] for r in results for rep in r[2]}
    assert pids and os.getpid() not in pids
