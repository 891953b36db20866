"""Skinned-vertex reference for an FBX file, computed by Blender's own FBX importer.

Run with Blender 3.4 (Debian: apt install blender), one file at a time:

    blender -b --factory-startup --python-exit-code 1 \
        --python scripts/reference/blender_fbx_skin.py -- IN.fbx JOINT_REF.json OUT.json

JOINT_REF.json is the file's joint reference in ../shared/data/reference: its clips give the
stack names and the times (where every curve is keyed or linear, so Blender is exact).
The output holds, for the first skinned mesh object (by name), 256 control points spread
evenly over its vertices, their coordinates as the file stores them, and their skinned
world positions at each of those times in the file's own units and axes (Blender's unit scale and
axis conversion undone, as in the joint references). It also records the joints' world
positions, so that the space handling can be checked against the joint reference.

Blender shares no code with ufbx: this is an independent check of skelett's FBX skinning
(skin clusters, bind matrices, weights), not a copy of what skelett computes.
"""
import json
import sys

import bpy
from mathutils import Matrix


def global_settings(path):
    """UnitScaleFactor and the axis properties from the file's GlobalSettings."""
    from io_scene_fbx import parse_fbx

    root, _version = parse_fbx.parse(path)
    out = {}
    for e in root.elems:
        if e.id != b"GlobalSettings":
            continue
        for p70 in e.elems:
            if p70.id != b"Properties70":
                continue
            for p in p70.elems:
                if p.props and p.props[0] in (b"UnitScaleFactor", b"UpAxis", b"UpAxisSign",
                                              b"FrontAxis", b"FrontAxisSign", b"CoordAxis",
                                              b"CoordAxisSign"):
                    out[p.props[0].decode()] = p.props[4]
    return out


def r7(v):
    """A vector rounded to 7 significant digits, as the shared references are."""
    return [float(f"{x:.7g}") for x in v]


def main():
    argv = sys.argv[sys.argv.index("--") + 1:]
    src, joint_ref_path, out_path = argv
    with open(joint_ref_path) as f:
        joint_ref = json.load(f)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    settings = global_settings(src)
    unit = float(settings.get("UnitScaleFactor", 1.0))
    # Axes as the file states them: identity conversion with manual Y-forward, Z-up
    # (Blender's own), and a scale that cancels the importer's unit conversion.
    scene = bpy.context.scene
    factor = unit / 100.0 * scene.unit_settings.scale_length  # the importer's unit scale
    bpy.ops.import_scene.fbx(
        filepath=src,
        use_manual_orientation=True,
        axis_forward="Y",
        axis_up="Z",
        global_scale=1.0 / factor,
        automatic_bone_orientation=False,
        use_anim=True,
        use_custom_props=False,
    )
    fps = scene.render.fps / scene.render.fps_base

    meshes = sorted(
        (o for o in scene.objects if o.type == "MESH"
         and any(m.type == "ARMATURE" for m in o.modifiers)),
        key=lambda o: o.name,
    )
    if not meshes:
        raise SystemExit(f"{src}: no skinned mesh")
    mesh_obj = meshes[0]
    arm_obj = next(m for m in mesh_obj.modifiers if m.type == "ARMATURE").object

    # skelett has no morph targets (the importer warns about FBX blend shapes): mute every
    # shape key so that the reference is skinning alone.
    muted = []
    if mesh_obj.data.shape_keys is not None:
        for kb in mesh_obj.data.shape_keys.key_blocks:
            kb.mute = True
            muted.append(kb.name)

    n = len(mesh_obj.data.vertices)
    count = min(256, n)
    picks = [round(k * (n - 1) / (count - 1)) if count > 1 else 0 for k in range(count)]
    weighted = [len(mesh_obj.data.vertices[i].groups) > 0 for i in picks]

    clips = []
    for clip in joint_ref["clips"]:
        # The importer makes one action per object and stack, named "<object>|<stack>".
        for obj in scene.objects:
            if obj.animation_data is None:
                continue
            action = bpy.data.actions.get(f"{obj.name}|{clip['name']}")
            if action is not None:
                obj.animation_data.action = action
        samples = []
        for s in clip["samples"]:
            t = s["t"]
            frame = t * fps + 1.0
            scene.frame_set(int(frame // 1), subframe=frame - frame // 1)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            ev = mesh_obj.evaluated_get(depsgraph)
            m = ev.to_mesh()
            world = ev.matrix_world
            positions = [r7(world @ m.vertices[i].co) for i in picks]
            ev.to_mesh_clear()
            arm_ev = arm_obj.evaluated_get(depsgraph)
            joints = {pb.name: r7(arm_ev.matrix_world @ pb.head) for pb in arm_ev.pose.bones}
            samples.append({"t": t, "positions": positions, "joints": joints})
        clips.append({"index": clip["index"], "name": clip["name"], "samples": samples})

    out = {
        "source": src.rsplit("/", 1)[-1],
        "oracle": f"Blender {bpy.app.version_string} FBX importer (automatic bone orientation "
                  "off) and armature modifier",
        "convention": "positions: skinned world positions of the mesh object's control points "
                      "(Blender vertex i = FBX control point i) in the FBX file's own units and "
                      "axes; rest: the control points as the file stores them (mesh geometry "
                      "space); joints: pose bone heads in the same space; t in seconds of "
                      "absolute FBX time (frame = t * fps + 1); clips and times are the joint "
                      "reference's (where every curve is keyed or linear); shape keys muted (skinning only)",
        "mesh": mesh_obj.name,
        "mesh_data": mesh_obj.data.name,
        "shape_keys_muted": muted,
        "vertex_count": n,
        "vertices": picks,
        "weighted": weighted,
        "rest": [r7(mesh_obj.data.vertices[i].co) for i in picks],
        "clips": clips,
    }
    with open(out_path, "w") as f:
        json.dump(out, f, separators=(",", ":"))


main()
