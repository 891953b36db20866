"""skelett: skeletal animation for Python, with NumPy arrays in and out.

Load every format skelett reads (glTF, FBX, BVH, DirectX .x, RAM/RAA, .skl), sample clips
at any number of times in one call (in parallel, without the GIL), skin meshes, convert,
compress and play clips with an animator.

Conventions:
- a local transform is 10 float32s: ``[tx, ty, tz, qx, qy, qz, qw, sx, sy, sz]``;
- a matrix is 4x4 for column vectors (``M @ [x, y, z, 1]``; translation in ``M[:3, 3]``);
- world matrices and positions are in the file's scene space (the skeleton's root
  transform applied); times are seconds in the clip's time base.

Arrays returned by methods are new and C-contiguous; their memory lives as long as the
array does (NumPy keeps it alive). Arrays held by objects (``Mesh.positions``,
``Skin.inverse_binds``, ...) are made once, read-only, and returned without copying; they
stay valid after their object is gone. Skeleton arrays are new, writable copies each time.

Batch calls run on a thread pool made per process, so a process forked after using one
(multiprocessing's ``fork``) makes its own and works.
"""

from os import PathLike
from typing import Any, Literal, Optional, Sequence, TypedDict, Union, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "Animator",
    "Asset",
    "Clip",
    "Mesh",
    "Skeleton",
    "SkelettError",
    "Skin",
    "clip_from_skl_bytes",
    "convert",
    "from_skl_bytes",
    "joint_map",
    "load",
    "load_bytes",
    "skeleton_from_skl_bytes",
]

__version__: str

_Path = Union[str, PathLike[str]]
_Times = Union[npt.NDArray[np.floating[Any]], npt.NDArray[np.integer[Any]], Sequence[float]]
_F32 = npt.NDArray[np.float32]
_Wrap = Literal["loop", "once", "pingpong"]
_Rotation = Literal["slerp", "nlerp"]
_Curve = Literal["linear", "smoothstep", "ease_in", "ease_out"]

class Event(TypedDict):
    """One entry of ``Animator.update()["events"]``."""

    layer: int
    clip: str
    kind: Literal["event", "looped", "ended", "transition_finished", "other"]
    name: Optional[str]
    time: Optional[float]
    at: float
    weight: float

class RootMotion(TypedDict):
    translation: list[float]
    yaw: float

class Update(TypedDict):
    events: list[Event]
    root_motion: RootMotion

class SkelettError(Exception):
    """A file skelett cannot read or write, or data that does not fit; the message names the
    file, the place in it and what was expected."""

def load(
    path: _Path,
    *,
    to_meters: bool = False,
    y_up: bool = False,
    right_handed: bool = False,
    animation_options: bool = False,
    raa: Optional[Sequence[_Path]] = None,
    raa_fps: float = 30.0,
) -> Asset:
    """Loads a file by its extension, each option for the format it names. FBX:
    ``to_meters``, ``y_up``; .x: ``right_handed``, ``animation_options``; .ram: the ``raa``
    animations to read onto it (default: the .raa beside it) and their frame rate. Raises
    FileNotFoundError, SkelettError."""

def load_bytes(
    data: bytes,
    name: str = "<bytes>",
    *,
    to_meters: bool = False,
    y_up: bool = False,
    right_handed: bool = False,
    animation_options: bool = False,
) -> Asset:
    """Loads a file from bytes, the format from its first bytes; ``name`` is used in errors."""

def convert(
    source: _Path,
    output: _Path,
    *,
    to_meters: bool = False,
    y_up: bool = False,
    right_handed: bool = False,
    animation_options: bool = False,
    raa: Optional[Sequence[_Path]] = None,
    raa_fps: float = 30.0,
    ram_counts: bool = False,
) -> list[str]:
    """Converts a file to .glb, .skl or .ram (+ .raa) by the output's extension; returns the
    reader's warnings and what the output format cannot hold."""

def joint_map(source: Skeleton, target: Skeleton) -> dict[str, str]:
    """The automatic joint map (target name -> source name) ``Clip.retarget`` uses."""

def from_skl_bytes(data: bytes) -> Asset:
    """An asset from .skl bytes (``Asset.to_skl_bytes``; unpickling uses it)."""

def clip_from_skl_bytes(data: bytes) -> Clip:
    """A clip from .skl bytes (unpickling uses it)."""

def skeleton_from_skl_bytes(data: bytes) -> Skeleton:
    """A skeleton from .skl bytes (unpickling uses it)."""

class Asset:
    """A loaded file. Pickles (as .skl bytes), so it travels between processes."""

    @property
    def skeleton(self) -> Skeleton: ...
    @property
    def clips(self) -> list[Clip]: ...
    @property
    def skins(self) -> list[Skin]: ...
    @property
    def meshes(self) -> list[Mesh]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def meters_per_unit(self) -> Optional[float]: ...
    def clip(self, name: Union[str, int]) -> Clip:
        """The clip with this name (or index); ValueError / IndexError if there is none."""
    @overload
    def skin(
        self, mesh: int, clip: Clip, times: _Times, normals: Literal[False] = False
    ) -> _F32: ...
    @overload
    def skin(
        self, mesh: int, clip: Clip, times: _Times, normals: Literal[True]
    ) -> tuple[_F32, _F32]: ...
    def skin(self, mesh: int, clip: Clip, times: _Times, normals: bool = False) -> Any:
        """Skinned positions of mesh ``mesh`` at each time, float32 (T, N, 3), scene space;
        with ``normals=True`` a tuple (positions, normals)."""
    @overload
    def skin_world(
        self, mesh: int, world: npt.ArrayLike, normals: Literal[False] = False
    ) -> _F32: ...
    @overload
    def skin_world(
        self, mesh: int, world: npt.ArrayLike, normals: Literal[True]
    ) -> tuple[_F32, _F32]: ...
    def skin_world(self, mesh: int, world: npt.ArrayLike, normals: bool = False) -> Any:
        """Skinned positions from world matrices: (T, J, 4, 4) gives (T, N, 3), one pose
        (J, 4, 4) gives (N, 3); scene space."""
    def with_clips(self, clips: Sequence[Clip]) -> Asset:
        """This asset with these clips (of the same skeleton) instead of its own."""
    def save(
        self, path: _Path, *, ram_counts: bool = False, raa_fps: float = 30.0
    ) -> list[str]:
        """Writes .glb, .skl or .ram (+ .raa) by the extension; returns what the format
        cannot hold."""
    def scaled(self, factor: float) -> Asset:
        """Every length multiplied by ``factor``."""
    def to_skl_bytes(self) -> bytes: ...
    def compress(
        self,
        error_cm: float = 0.01,
        shell_cm: float = 3.0,
        cm_per_unit: Optional[float] = None,
        seekable: bool = False,
        fast: bool = False,
        lanes: bool = False,
    ) -> tuple[Asset, list[dict[str, Any]]]:
        """Compresses every clip within ``error_cm``; returns the compressed asset and per
        clip a report: clip, raw_bytes, compressed_bytes, ratio, error_cm, max_error_cm,
        p99_error_cm, cm_per_unit, sample_rate, samples, seconds. ``seekable``: keys laid
        out for random access (the same keys and errors, larger). ``lanes``: keys as 16-bit
        integers eight tracks side by side, for playback at about a keyed clip's speed
        (several times larger; the errors are measured in this layout). ``fast``: no joint-by-joint
        loosening after the budget search (three fifths to three quarters of the time on motion
        capture, 7% larger, the same error bound: ``max_error_cm`` is measured as for the
        default)."""

class Skeleton:
    """The joint hierarchy. Pickles."""

    @property
    def names(self) -> list[str]: ...
    @property
    def parents(self) -> npt.NDArray[np.int32]:
        """(J,) parent index per joint, -1 for roots."""
    @property
    def rest_local(self) -> npt.NDArray[np.float32]:
        """(J, 10) rest pose local transforms."""
    @property
    def rest_world(self) -> npt.NDArray[np.float32]:
        """(J, 4, 4) rest pose world matrices."""
    @property
    def root_transform(self) -> npt.NDArray[np.float32]:
        """(4, 4) model space to scene space."""
    def find(self, name: str) -> Optional[int]: ...
    def world_from_local(self, local: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Forward kinematics: (T, J, 10) or (J, 10) local transforms to (T, J, 4, 4) or
        (J, 4, 4) world matrices."""
    def __len__(self) -> int: ...

class Skin:
    @property
    def name(self) -> str: ...
    @property
    def joints(self) -> npt.NDArray[np.uint16]:
        """(S,) skeleton joint index per skin joint (read-only)."""
    @property
    def inverse_binds(self) -> npt.NDArray[np.float32]:
        """(S, 4, 4) inverse bind matrices (read-only)."""

class Mesh:
    """A skinned mesh, its primitives' vertices one after the other (read-only arrays)."""

    @property
    def name(self) -> str: ...
    @property
    def skin(self) -> int: ...
    @property
    def positions(self) -> npt.NDArray[np.float32]:
        """(N, 3)"""
    @property
    def normals(self) -> Optional[npt.NDArray[np.float32]]:
        """(N, 3) or None"""
    @property
    def uvs(self) -> Optional[npt.NDArray[np.float32]]:
        """(N, 2) or None"""
    @property
    def indices(self) -> npt.NDArray[np.uint32]:
        """(3 * triangles,)"""
    @property
    def joints(self) -> npt.NDArray[np.uint16]:
        """(N, K) skin joint per influence"""
    @property
    def weights(self) -> npt.NDArray[np.float32]:
        """(N, K) influence weights"""
    @property
    def morph_positions(self) -> npt.NDArray[np.float32]:
        """(M, N, 3) morph target position offsets"""
    @property
    def morph_names(self) -> list[str]: ...

class Clip:
    """A clip bound to its skeleton. Pickles (with its skeleton)."""

    @property
    def name(self) -> str: ...
    @property
    def start(self) -> float: ...
    @property
    def duration(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def frame_rate(self) -> Optional[float]: ...
    @property
    def is_compact(self) -> bool: ...
    @property
    def compact_layout(self) -> Optional[Literal["stream", "seek", "lanes"]]: ...
    def with_compact_layout(self, layout: Literal["stream", "seek", "lanes"]) -> Clip:
        """A compressed clip with its keys in ``layout``: the same keys, sampled alike
        (``"lanes"``: rounded to 16 bits, and not convertible back)."""
    @property
    def size_bytes(self) -> int: ...
    @property
    def events(self) -> list[tuple[float, str, Optional[str]]]: ...
    def channels(self) -> list[dict[str, Any]]:
        """Raw keys per animated channel: joint, target, interpolation, times (K,), values
        (K, 3) or (K, 4)."""
    def sample_local(self, times: _Times) -> npt.NDArray[np.float32]:
        """(T, J, 10) local transforms."""
    def sample_world(self, times: _Times) -> npt.NDArray[np.float32]:
        """(T, J, 4, 4) world matrices, scene space."""
    def sample_positions(self, times: _Times) -> npt.NDArray[np.float32]:
        """(T, J, 3) joint positions, scene space."""
    def with_events(
        self, events: Sequence[Union[tuple[float, str], tuple[float, str, Optional[str]]]]
    ) -> Clip:
        """The same clip with these events (time, name[, payload]) added."""
    def retarget(
        self, target: Skeleton, joint_map: Optional[dict[str, str]] = None
    ) -> Clip:
        """This clip on another character (joints paired by ``joint_map``, target name ->
        source name, or automatically)."""
    @staticmethod
    def from_local(
        skeleton: Skeleton, name: str, times: _Times, local: npt.ArrayLike
    ) -> Clip:
        """A clip from (T, J, 10) local transforms at increasing times."""

class Animator:
    """Plays clips on layers for one character."""

    def __new__(cls, skeleton: Skeleton) -> Animator: ...
    def add_layer(
        self,
        mode: Literal["override", "additive"] = "override",
        weight: float = 1.0,
        mask: Optional[str] = None,
    ) -> int: ...
    def play(
        self,
        clip: Clip,
        layer: int = 0,
        speed: float = 1.0,
        wrap: _Wrap = "loop",
        start: float = 0.0,
        rotation: _Rotation = "slerp",
    ) -> None: ...
    def crossfade(
        self,
        clip: Clip,
        duration: float,
        layer: int = 0,
        curve: _Curve = "smoothstep",
        speed: float = 1.0,
        wrap: _Wrap = "loop",
        rotation: _Rotation = "slerp",
    ) -> None: ...
    def set_layer_weight(self, layer: int, weight: float) -> None: ...
    def set_speed(self, layer: int, speed: float) -> None: ...
    def stop(self, layer: int) -> None: ...
    def set_root_motion(self, joint: Optional[str]) -> None: ...
    def set_notifications(self, on: bool) -> None: ...
    def update(self, dt: float) -> Update:
        """Advances dt seconds: the events crossed (clip events with their name and clip
        time, loops, ends, finished transitions) and the root motion (in the character's
        frame at the start of the update)."""
    def pose_local(self) -> npt.NDArray[np.float32]: ...
    def pose_world(self) -> npt.NDArray[np.float32]: ...
