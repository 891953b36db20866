//! Assets, skeletons, skins and meshes as Python objects, and the functions that load, convert
//! and save them. Mesh arrays are made once, when the asset is loaded, read-only, and handed
//! out as the same NumPy objects on every access (no copy); they are NumPy's own memory, so
//! they stay valid after the asset is gone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use glam::{Mat4, Vec3};
use numpy::ndarray::{Array1, Array2, Array3, Array4};
use numpy::{
    AllowTypeChange, IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayLike3, PyArrayLike4,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rayon::prelude::*;
use skelett::skin::{skin, SkinOutput, SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{local_to_model, Transform};

use crate::clip::{srt, times_from, transform_from, Clip};
use crate::{io_error, value_error};

/// Makes a NumPy array read-only (what the docs promise for arrays an object holds).
fn read_only(a: &Bound<'_, PyAny>) -> PyResult<()> {
    let kw = PyDict::new(a.py());
    kw.set_item("write", false)?;
    a.call_method("setflags", (), Some(&kw))?;
    Ok(())
}

/// A column-vector matrix as a row-major 4x4 (NumPy's `M[row, column]`).
pub(crate) fn rows(m: &Mat4) -> [f32; 16] {
    m.transpose().to_cols_array()
}

/// A row-major 4x4 back to a matrix.
fn from_rows(r: &[f32]) -> Mat4 {
    Mat4::from_cols_slice(r).transpose()
}

/// A loaded file: skeleton, skins, skinned meshes, clips and what the reader warned about.
#[pyclass(module = "skelett", frozen)]
pub struct Asset {
    pub(crate) inner: Arc<skelett_io::Asset>,
    skeleton: Py<Skeleton>,
    clips: Vec<Py<Clip>>,
    skins: Vec<Py<Skin>>,
    meshes: Vec<Py<Mesh>>,
}

impl Asset {
    /// Wraps a Rust asset, making its Python objects (and mesh arrays) once.
    pub(crate) fn new(py: Python<'_>, asset: skelett_io::Asset) -> PyResult<Self> {
        let inner = Arc::new(asset);
        let skeleton = Py::new(
            py,
            Skeleton {
                inner: inner.skeleton.clone(),
            },
        )?;
        let clips = inner
            .clips
            .iter()
            .map(|c| Py::new(py, Clip::new(c.clone(), inner.skeleton.clone())))
            .collect::<PyResult<_>>()?;
        let skins = inner
            .skins
            .iter()
            .map(|s| Skin::new(py, s).and_then(|s| Py::new(py, s)))
            .collect::<PyResult<_>>()?;
        let meshes = inner
            .meshes
            .iter()
            .map(|m| Mesh::new(py, m, &inner.skeleton).and_then(|m| Py::new(py, m)))
            .collect::<PyResult<_>>()?;
        Ok(Asset {
            inner,
            skeleton,
            clips,
            skins,
            meshes,
        })
    }
}

#[pymethods]
impl Asset {
    /// The joint hierarchy every skin and clip refers to.
    #[getter]
    fn skeleton(&self, py: Python<'_>) -> Py<Skeleton> {
        self.skeleton.clone_ref(py)
    }

    /// The clips, in the file's order.
    #[getter]
    fn clips(&self, py: Python<'_>) -> Vec<Py<Clip>> {
        self.clips.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// The skins (joints and inverse bind matrices), in the file's order.
    #[getter]
    fn skins(&self, py: Python<'_>) -> Vec<Py<Skin>> {
        self.skins.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// The skinned meshes.
    #[getter]
    fn meshes(&self, py: Python<'_>) -> Vec<Py<Mesh>> {
        self.meshes.iter().map(|c| c.clone_ref(py)).collect()
    }

    /// What the reader skipped or changed, for the user to read.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }

    /// How long one unit of the file's scene space is in metres, where the file says.
    #[getter]
    fn meters_per_unit(&self) -> Option<f32> {
        self.inner.meters_per_unit
    }

    /// The clip named `name` (or at that index).
    fn clip(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Py<Clip>> {
        if let Ok(i) = name.extract::<i64>() {
            return usize::try_from(i)
                .ok()
                .and_then(|i| self.clips.get(i))
                .map(|c| c.clone_ref(py))
                .ok_or_else(|| {
                    PyIndexError::new_err(format!("no clip {i} ({} clips)", self.clips.len()))
                });
        }
        let n: String = name
            .extract()
            .map_err(|_| PyTypeError::new_err("a clip's name (str) or index (int) is needed"))?;
        self.inner
            .clips
            .iter()
            .position(|c| c.name() == n)
            .map(|i| self.clips[i].clone_ref(py))
            .ok_or_else(|| {
                let names: Vec<&str> = self.inner.clips.iter().map(|c| c.name()).collect();
                PyValueError::new_err(format!("no clip named {n:?} (clips: {names:?})"))
            })
    }

    /// Skins mesh `mesh` (every primitive, in order, one after the other) with `clip` at each
    /// of `times`: vertex positions `(T, N, 3)` in scene space, and with `normals=True` also
    /// unit normals `(T, N, 3)`. The times are skinned in parallel, without the GIL.
    #[pyo3(signature = (mesh, clip, times, normals = false))]
    fn skin<'py>(
        &self,
        py: Python<'py>,
        mesh: i64,
        clip: &Clip,
        times: &Bound<'py, PyAny>,
        normals: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let times = times_from(times)?;
        if !clip.fits(&self.inner.skeleton) {
            return Err(PyValueError::new_err(format!(
                "clip {:?} was not made for this asset's skeleton",
                clip.inner.name()
            )));
        }
        let sk = self.inner.skeleton.clone();
        let c = clip.inner.clone();
        self.skin_each(py, mesh, times.len(), false, normals, move |t, model| {
            let mut pose = skelett::Pose::rest(&sk);
            let _ = skelett::sample_uncached(&c, times[t], &mut pose);
            let _ = local_to_model(&sk, &pose, 0, model);
        })
    }

    /// Skins mesh `mesh` with world matrices the caller computed, `(T, J, 4, 4)` or
    /// `(J, 4, 4)` in scene space (what `Clip.sample_world` and `Skeleton.world_from_local`
    /// return): positions `(T, N, 3)` (and normals with `normals=True`).
    #[pyo3(signature = (mesh, world, normals = false))]
    fn skin_world<'py>(
        &self,
        py: Python<'py>,
        mesh: i64,
        world: &Bound<'py, PyAny>,
        normals: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let j = self.inner.skeleton.len();
        let (frames, single, data) = matrices_from(world, j)?;
        let to_model = self.inner.skeleton.root_transform().inverse();
        self.skin_each(py, mesh, frames, single, normals, move |t, model| {
            for (k, m) in model.iter_mut().enumerate() {
                let at = (t * j + k) * 16;
                *m = to_model * from_rows(&data[at..at + 16]);
            }
        })
    }

    /// This asset with `clips` in place of its own (clips of the same skeleton, such as
    /// `Clip.from_local` makes), for saving.
    fn with_clips(&self, py: Python<'_>, clips: Vec<PyRef<'_, Clip>>) -> PyResult<Asset> {
        let mut a = (*self.inner).clone();
        a.clips = Vec::with_capacity(clips.len());
        for c in &clips {
            if !c.fits(&a.skeleton) {
                return Err(PyValueError::new_err(format!(
                    "clip {:?} was not made for this asset's skeleton",
                    c.inner.name()
                )));
            }
            a.clips.push(c.inner.clone());
        }
        Asset::new(py, a)
    }

    /// Writes the asset: `.glb`, `.skl` (skelett's own fast-loading file) or `.ram` (with
    /// its first clip as the `.raa` beside it; `ram_counts`: skelett's counted layout instead
    /// of the article's; `raa_fps`: the frame rate of its whole frames), by the path's
    /// extension. Returns what the format cannot hold (as `skelett convert` warns).
    #[pyo3(signature = (path, *, ram_counts = false, raa_fps = 30.0))]
    fn save(
        &self,
        py: Python<'_>,
        path: PathBuf,
        ram_counts: bool,
        raa_fps: f32,
    ) -> PyResult<Vec<String>> {
        let ram = ram_options(ram_counts, raa_fps)?;
        let a = self.inner.clone();
        py.detach(move || skelett_io::save_by_extension(&a, &path, &ram))
            .map_err(io_error)
    }

    /// The asset with every length multiplied by `factor` (0.01: centimetres to metres).
    fn scaled(&self, py: Python<'_>, factor: f32) -> PyResult<Asset> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(PyValueError::new_err(format!(
                "factor must be positive, not {factor}"
            )));
        }
        let a = self.inner.scaled(factor).map_err(value_error)?;
        Asset::new(py, a)
    }

    /// The asset as `.skl` bytes (what pickling stores).
    fn to_skl_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &skelett_io::native::to_bytes(&self.inner))
    }

    /// Compresses every clip within `error_cm` (ACL's error: how far a virtual vertex
    /// `shell_cm` from its joint may move), returning the compressed asset and one report
    /// dict per clip (sizes, ratio, maximum and 99th-percentile error, unit, time). The
    /// unit: `cm_per_unit` if given, else the file's declared unit, else detected. With
    /// `seekable`, the keys are laid out for random access (the same keys and errors, larger;
    /// see the README); with `lanes`, for fast playback (16-bit integers eight tracks side by
    /// side: several times larger, played at about a keyed clip's speed; the errors are
    /// measured in that layout). With `fast`, no joint-by-joint loosening after the budget search:
    /// three fifths to three quarters of the time on motion capture, 7% larger, the same error bound
    /// (`max_error_cm`, measured as for the default).
    #[pyo3(signature = (error_cm = 0.01, shell_cm = 3.0, cm_per_unit = None, seekable = false, fast = false, lanes = false))]
    // Python's keyword arguments, one parameter each.
    #[allow(clippy::too_many_arguments)]
    fn compress<'py>(
        &self,
        py: Python<'py>,
        error_cm: f32,
        shell_cm: f32,
        cm_per_unit: Option<f32>,
        seekable: bool,
        fast: bool,
        lanes: bool,
    ) -> PyResult<(Asset, Vec<Bound<'py, PyDict>>)> {
        if seekable && lanes {
            return Err(PyValueError::new_err(
                "seekable and lanes are two layouts: ask for one",
            ));
        }
        for (what, v) in [("error_cm", error_cm), ("shell_cm", shell_cm)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(PyValueError::new_err(format!(
                    "{what} must be positive, not {v}"
                )));
            }
        }
        if let Some(u) = cm_per_unit.filter(|u| !(u.is_finite() && *u > 0.0)) {
            return Err(PyValueError::new_err(format!(
                "cm_per_unit must be positive, not {u}"
            )));
        }
        let a = self.inner.clone();
        let options = skelett::compress::CompressOptions {
            error_cm,
            shell_cm,
            cm_per_unit,
            declared_cm_per_unit: a.model_cm_per_unit(),
            layout: if lanes {
                skelett::compress::CompactLayout::Lanes
            } else if seekable {
                skelett::compress::CompactLayout::Seek
            } else {
                skelett::compress::CompactLayout::Stream
            },
            level: if fast {
                skelett::compress::CompressLevel::Fast
            } else {
                skelett::compress::CompressLevel::Smallest
            },
            ..Default::default()
        };
        let pool = crate::pool()?;
        let results = py.detach(move || {
            pool.install(|| {
                a.clips
                    .par_iter()
                    .map(|c| skelett::compress::compress(&a.skeleton, c, &options))
                    .collect::<Vec<_>>()
            })
        });
        let mut out = (*self.inner).clone();
        let mut reports = Vec::new();
        for (i, r) in results.into_iter().enumerate() {
            let (clip, report) = r.map_err(|e| {
                crate::SkelettError::new_err(format!("clip {:?}: {e}", self.inner.clips[i].name()))
            })?;
            let d = PyDict::new(py);
            d.set_item("clip", clip.name())?;
            d.set_item("raw_bytes", report.raw_bytes)?;
            d.set_item("compressed_bytes", report.compressed_bytes)?;
            d.set_item(
                "ratio",
                report.raw_bytes as f64 / report.compressed_bytes.max(1) as f64,
            )?;
            d.set_item("error_cm", report.error_cm)?;
            d.set_item("max_error_cm", report.max_error_cm)?;
            d.set_item("p99_error_cm", report.p99_error_cm)?;
            d.set_item("cm_per_unit", report.cm_per_unit)?;
            d.set_item("sample_rate", report.sample_rate)?;
            d.set_item("samples", report.samples)?;
            d.set_item("seconds", report.seconds)?;
            reports.push(d);
            out.clips[i] = Arc::new(clip);
        }
        Ok((Asset::new(py, out)?, reports))
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let f = py.import("skelett")?.getattr("from_skl_bytes")?;
        Ok((f, (self.to_skl_bytes(py),)))
    }

    fn __repr__(&self) -> String {
        format!(
            "<skelett.Asset: {} joints, {} clips, {} meshes>",
            self.inner.skeleton.len(),
            self.inner.clips.len(),
            self.inner.meshes.len()
        )
    }
}

impl Asset {
    /// Skins mesh `mesh` at `frames` poses in parallel; `model(t, out)` writes pose `t`'s
    /// model-space matrices.
    #[allow(clippy::too_many_arguments)]
    fn skin_each<'py>(
        &self,
        py: Python<'py>,
        mesh: i64,
        frames: usize,
        single: bool,
        normals: bool,
        model: impl Fn(usize, &mut [Mat4]) + Send + Sync,
    ) -> PyResult<Bound<'py, PyAny>> {
        let a = self.inner.clone();
        let m = usize::try_from(mesh)
            .ok()
            .and_then(|i| a.meshes.get(i))
            .ok_or_else(|| {
                PyIndexError::new_err(format!("no mesh {mesh} ({} meshes)", a.meshes.len()))
            })?;
        let s = &a.skins[m.skin];
        let meshes = m
            .primitives
            .iter()
            .map(|p| SkinningMesh::new(p, s.len()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(value_error)?;
        let n: usize = m.primitives.iter().map(|p| p.positions.len()).sum();
        let root = a.skeleton.root_transform();
        let pool = crate::pool()?;
        let (pos, nrm) = py.detach(|| {
            pool.install(|| {
                let mut pos = vec![0f32; frames * n * 3];
                let mut nrm = vec![0f32; if normals { frames * n * 3 } else { 0 }];
                let per = n * 3;
                let work = |t: usize, p: &mut [f32], q: Option<&mut [f32]>| {
                    let mut mats = vec![Mat4::IDENTITY; a.skeleton.len()];
                    model(t, &mut mats);
                    let mut matrices = vec![Mat4::IDENTITY; s.len()];
                    let _ = skelett::skinning_palette(s, &mats, &mut matrices);
                    let mut palette = SkinPalette::new(SkinningMethod::Linear);
                    palette.set_matrices(&matrices);
                    let mut offset = 0;
                    let mut q = q;
                    for (prim, sm) in m.primitives.iter().zip(&meshes) {
                        let count = prim.positions.len();
                        let mut out_p = vec![Vec3::ZERO; count];
                        let mut out_n = vec![
                            Vec3::ZERO;
                            if normals && prim.normals.is_some() {
                                count
                            } else {
                                0
                            }
                        ];
                        let _ = skin(
                            sm,
                            &palette,
                            SkinOutput {
                                positions: &mut out_p,
                                normals: (!out_n.is_empty()).then_some(&mut out_n[..]),
                                tangents: None,
                            },
                        );
                        for (k, &src) in sm.source_vertices().iter().enumerate() {
                            let v = root.transform_point3(out_p[k]);
                            let at = (offset + src as usize) * 3;
                            p[at..at + 3].copy_from_slice(&v.to_array());
                            if let Some(q) = q.as_deref_mut() {
                                if !out_n.is_empty() {
                                    let w = root.transform_vector3(out_n[k]).normalize_or_zero();
                                    q[at..at + 3].copy_from_slice(&w.to_array());
                                }
                            }
                        }
                        offset += count;
                    }
                };
                if normals {
                    pos.par_chunks_mut(per.max(1))
                        .zip(nrm.par_chunks_mut(per.max(1)))
                        .enumerate()
                        .for_each(|(t, (p, q))| work(t, p, Some(q)));
                } else {
                    pos.par_chunks_mut(per.max(1))
                        .enumerate()
                        .for_each(|(t, p)| work(t, p, None));
                }
                (pos, nrm)
            })
        });
        // One pose in (a (J, 4, 4) array), one set of vertices out.
        let shaped = |v: Vec<f32>| -> PyResult<Bound<'py, PyAny>> {
            Ok(if single {
                Array2::from_shape_vec((n, 3), v)
                    .map_err(value_error)?
                    .into_pyarray(py)
                    .into_any()
            } else {
                Array3::from_shape_vec((frames, n, 3), v)
                    .map_err(value_error)?
                    .into_pyarray(py)
                    .into_any()
            })
        };
        let p = shaped(pos)?;
        if normals {
            let q = shaped(nrm)?;
            Ok((p, q).into_pyobject(py)?.into_any())
        } else {
            Ok(p)
        }
    }
}

/// `(T, J, 4, 4)` or `(J, 4, 4)` matrices as (T, whether one pose, row-major floats), every
/// element finite.
fn matrices_from(world: &Bound<'_, PyAny>, joints: usize) -> PyResult<(usize, bool, Vec<f32>)> {
    let (frames, single, data) =
        if let Ok(a) = world.extract::<PyArrayLike4<'_, f32, AllowTypeChange>>() {
            let s = a.shape().to_vec();
            if s[1] != joints || s[2] != 4 || s[3] != 4 {
                return Err(PyValueError::new_err(format!(
                    "world matrices of shape (T, {joints}, 4, 4) needed, got {s:?}"
                )));
            }
            (
                s[0],
                false,
                a.as_array().iter().copied().collect::<Vec<f32>>(),
            )
        } else if let Ok(a) = world.extract::<PyArrayLike3<'_, f32, AllowTypeChange>>() {
            let s = a.shape().to_vec();
            if s[0] != joints || s[1] != 4 || s[2] != 4 {
                return Err(PyValueError::new_err(format!(
                    "world matrices of shape ({joints}, 4, 4) needed, got {s:?}"
                )));
            }
            (1, true, a.as_array().iter().copied().collect())
        } else {
            return Err(PyTypeError::new_err(
                "world matrices: a float array of shape (T, J, 4, 4) or (J, 4, 4)",
            ));
        };
    if let Some(i) = data.iter().position(|v| !v.is_finite()) {
        let per = joints * 16;
        return Err(PyValueError::new_err(format!(
            "world matrices must be finite: pose {}, joint {}, element {} is {}",
            i / per.max(1),
            (i % per.max(1)) / 16,
            i % 16,
            data[i]
        )));
    }
    Ok((frames, single, data))
}

/// How a `.ram` + `.raa` pair is written.
fn ram_options(counted: bool, fps: f32) -> PyResult<skelett_io::rite::WriteOptions> {
    if !(fps.is_finite() && fps > 0.0) {
        return Err(PyValueError::new_err(format!(
            "raa_fps must be positive, not {fps}"
        )));
    }
    let layout = if counted {
        skelett_io::rite::Layout::Counted
    } else {
        skelett_io::rite::Layout::Article
    };
    Ok(skelett_io::rite::WriteOptions::layout(layout).with_fps(fps))
}

/// The readers' options from `load`'s keywords.
fn load_options(
    to_meters: bool,
    y_up: bool,
    right_handed: bool,
    animation_options: bool,
    raa: Option<Vec<PathBuf>>,
    raa_fps: f32,
) -> PyResult<skelett_io::LoadOptions> {
    if !(raa_fps.is_finite() && raa_fps > 0.0) {
        return Err(PyValueError::new_err(format!(
            "raa_fps must be positive, not {raa_fps}"
        )));
    }
    Ok(skelett_io::LoadOptions {
        fbx: skelett_io::fbx::Options { to_meters, y_up },
        x: skelett_io::x::Options {
            right_handed,
            animation_options,
        },
        rite: skelett_io::rite::Options::animations(raa.unwrap_or_default()).with_fps(raa_fps),
    })
}

/// The joint hierarchy: names, parents and rest pose, and forward kinematics from arrays.
#[pyclass(module = "skelett", frozen)]
pub struct Skeleton {
    pub(crate) inner: Arc<skelett::Skeleton>,
}

#[pymethods]
impl Skeleton {
    /// Joint names, in joint order (parents before children).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.inner.names().to_vec()
    }

    /// Each joint's parent index, `-1` for a root: int32 `(J,)`.
    #[getter]
    fn parents<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i32>> {
        let sk = &self.inner;
        Array1::from_iter((0..sk.len() as u16).map(|j| sk.parent(j).map_or(-1, i32::from)))
            .into_pyarray(py)
    }

    /// The rest pose as local transforms, float32 `(J, 10)`:
    /// `[tx, ty, tz, qx, qy, qz, qw, sx, sy, sz]`.
    #[getter]
    fn rest_local<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f32>> {
        let v: Vec<f32> = self.inner.rest_pose().iter().flat_map(srt).collect();
        Array2::from_shape_vec((self.inner.len(), 10), v)
            .expect("10 per joint")
            .into_pyarray(py)
    }

    /// The rest pose's world matrices, float32 `(J, 4, 4)`, scene space.
    #[getter]
    fn rest_world<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f32>> {
        let model = self.inner.rest_model();
        let root = self.inner.root_transform();
        let v: Vec<f32> = model.iter().flat_map(|m| rows(&(root * *m))).collect();
        Array3::from_shape_vec((self.inner.len(), 4, 4), v)
            .expect("16 per joint")
            .into_pyarray(py)
    }

    /// The matrix from model space (where poses are composed) to the file's scene space,
    /// float32 `(4, 4)`.
    #[getter]
    fn root_transform<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f32>> {
        Array2::from_shape_vec((4, 4), rows(&self.inner.root_transform()).to_vec())
            .expect("16")
            .into_pyarray(py)
    }

    /// The index of the joint named `name`, or `None`.
    fn find(&self, name: &str) -> Option<u16> {
        self.inner.find(name)
    }

    /// Forward kinematics from arrays: local transforms `(T, J, 10)` or `(J, 10)` (as
    /// `Clip.sample_local` gives them) to world matrices `(T, J, 4, 4)` or `(J, 4, 4)`, scene
    /// space. Rotations are normalised first. In parallel, without the GIL.
    fn world_from_local<'py>(
        &self,
        py: Python<'py>,
        local: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (frames, single, data) = crate::clip::locals_from(local, self.inner.len())?;
        let sk = self.inner.clone();
        let j = sk.len();
        let pool = crate::pool()?;
        let out = py.detach(move || {
            pool.install(|| {
                let mut out = vec![0f32; frames * j * 16];
                out.par_chunks_mut((j * 16).max(1))
                    .enumerate()
                    .for_each(|(t, o)| {
                        let pose: Vec<Transform> = (0..j)
                            .map(|k| transform_from(&data[(t * j + k) * 10..(t * j + k) * 10 + 10]))
                            .collect();
                        let mut model = vec![Mat4::IDENTITY; j];
                        let _ = local_to_model(&sk, &pose, 0, &mut model);
                        let root = sk.root_transform();
                        for (k, m) in model.iter().enumerate() {
                            o[k * 16..k * 16 + 16].copy_from_slice(&rows(&(root * *m)));
                        }
                    });
                out
            })
        });
        if single {
            Ok(Array3::from_shape_vec((j, 4, 4), out)
                .map_err(value_error)?
                .into_pyarray(py)
                .into_any())
        } else {
            Ok(Array4::from_shape_vec((frames, j, 4, 4), out)
                .map_err(value_error)?
                .into_pyarray(py)
                .into_any())
        }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let f = py.import("skelett")?.getattr("skeleton_from_skl_bytes")?;
        Ok((f, (PyBytes::new(py, &skl_of(&self.inner, Vec::new())),)))
    }

    fn __repr__(&self) -> String {
        format!("<skelett.Skeleton: {} joints>", self.inner.len())
    }
}

/// `.skl` bytes of a skeleton with `clips` (what pickling a skeleton or a clip stores).
pub(crate) fn skl_of(sk: &Arc<skelett::Skeleton>, clips: Vec<Arc<skelett::Clip>>) -> Vec<u8> {
    let a = skelett_io::Asset {
        skeleton: sk.clone(),
        skins: Vec::new(),
        meshes: Vec::new(),
        clips,
        warnings: Vec::new(),
        images: Vec::new(),
        meters_per_unit: None,
    };
    skelett_io::native::to_bytes(&a)
}

/// A skin: the joints its meshes' influences index, and their inverse bind matrices.
#[pyclass(module = "skelett", frozen)]
pub struct Skin {
    name: String,
    joints: Py<PyArray1<u16>>,
    inverse_binds: Py<PyArray3<f32>>,
}

impl Skin {
    fn new(py: Python<'_>, s: &skelett::Skin) -> PyResult<Self> {
        let joints = Array1::from_vec(s.joints().to_vec()).into_pyarray(py);
        read_only(joints.as_any())?;
        let v: Vec<f32> = s.inverse_bind().iter().flat_map(rows).collect();
        let ib = Array3::from_shape_vec((s.len(), 4, 4), v)
            .map_err(value_error)?
            .into_pyarray(py);
        read_only(ib.as_any())?;
        Ok(Skin {
            name: s.name().to_string(),
            joints: joints.unbind(),
            inverse_binds: ib.unbind(),
        })
    }
}

#[pymethods]
impl Skin {
    /// The skin's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Skeleton joint index of each skin joint, uint16 `(S,)` (read-only, no copy).
    #[getter]
    fn joints(&self, py: Python<'_>) -> Py<PyArray1<u16>> {
        self.joints.clone_ref(py)
    }

    /// Inverse bind matrices, float32 `(S, 4, 4)` (read-only, no copy).
    #[getter]
    fn inverse_binds(&self, py: Python<'_>) -> Py<PyArray3<f32>> {
        self.inverse_binds.clone_ref(py)
    }
}

/// A skinned mesh: its skin, and its primitives' arrays concatenated (vertices of primitive
/// 1 after those of primitive 0; `indices` offset to match).
#[pyclass(module = "skelett", frozen)]
pub struct Mesh {
    name: String,
    skin: usize,
    arrays: Py<PyDict>,
    morph_names: Vec<String>,
}

impl Mesh {
    fn new(py: Python<'_>, m: &skelett::SkinnedMesh, sk: &skelett::Skeleton) -> PyResult<Self> {
        let n: usize = m.primitives.iter().map(|p| p.positions.len()).sum();
        let k = m.primitives.iter().map(|p| p.influences).max().unwrap_or(0);
        let mut positions = Vec::with_capacity(n * 3);
        let mut normals = Vec::with_capacity(n * 3);
        let mut uvs = Vec::with_capacity(n * 2);
        let mut indices = Vec::new();
        let mut joints = vec![0u16; n * k];
        let mut weights = vec![0f32; n * k];
        let all_normals = m.primitives.iter().all(|p| p.normals.is_some());
        let all_uvs = m.primitives.iter().all(|p| p.uvs.is_some());
        let targets = m.morph_channels.len();
        let mut morph = vec![0f32; targets * n * 3];
        let mut base = 0usize;
        for p in &m.primitives {
            let c = p.positions.len();
            positions.extend(p.positions.iter().flat_map(|v| v.to_array()));
            if let Some(nr) = &p.normals {
                normals.extend(nr.iter().flat_map(|v| v.to_array()));
            }
            if let Some(uv) = &p.uvs {
                uvs.extend(uv.iter().flat_map(|v| v.to_array()));
            }
            indices.extend(p.indices.iter().map(|&i| i + base as u32));
            for v in 0..c {
                for q in 0..p.influences {
                    joints[(base + v) * k + q] = p.joints[v * p.influences + q];
                    weights[(base + v) * k + q] = p.weights[v * p.influences + q];
                }
            }
            for (t, target) in p.morph_targets.iter().enumerate().take(targets) {
                if let Some(d) = &target.positions {
                    for (v, dv) in d.iter().enumerate() {
                        let at = (t * n + base + v) * 3;
                        morph[at..at + 3].copy_from_slice(&dv.to_array());
                    }
                }
            }
            base += c;
        }
        let d = PyDict::new(py);
        let put = |name: &str, a: Bound<'_, PyAny>| -> PyResult<()> {
            read_only(&a)?;
            d.set_item(name, a)
        };
        put(
            "positions",
            Array2::from_shape_vec((n, 3), positions)
                .map_err(value_error)?
                .into_pyarray(py)
                .into_any(),
        )?;
        if all_normals {
            put(
                "normals",
                Array2::from_shape_vec((n, 3), normals)
                    .map_err(value_error)?
                    .into_pyarray(py)
                    .into_any(),
            )?;
        }
        if all_uvs {
            put(
                "uvs",
                Array2::from_shape_vec((n, 2), uvs)
                    .map_err(value_error)?
                    .into_pyarray(py)
                    .into_any(),
            )?;
        }
        put(
            "indices",
            Array1::from_vec(indices).into_pyarray(py).into_any(),
        )?;
        put(
            "joints",
            Array2::from_shape_vec((n, k), joints)
                .map_err(value_error)?
                .into_pyarray(py)
                .into_any(),
        )?;
        put(
            "weights",
            Array2::from_shape_vec((n, k), weights)
                .map_err(value_error)?
                .into_pyarray(py)
                .into_any(),
        )?;
        put(
            "morph_positions",
            Array3::from_shape_vec((targets, n, 3), morph)
                .map_err(value_error)?
                .into_pyarray(py)
                .into_any(),
        )?;
        Ok(Mesh {
            name: m.name.clone(),
            skin: m.skin,
            arrays: d.unbind(),
            morph_names: m
                .morph_channels
                .iter()
                .map(|&c| {
                    sk.morph_channel_names()
                        .get(c as usize)
                        .cloned()
                        .unwrap_or_default()
                })
                .collect(),
        })
    }

    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.arrays.bind(py).get_item(key)
    }
}

#[pymethods]
impl Mesh {
    /// The mesh's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Index of its skin in `Asset.skins`.
    #[getter]
    fn skin(&self) -> usize {
        self.skin
    }

    /// Vertex positions, float32 `(N, 3)`, the mesh's bind space.
    #[getter]
    fn positions<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "positions")
    }

    /// Unit normals, float32 `(N, 3)`, or `None`.
    #[getter]
    fn normals<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "normals")
    }

    /// Texture coordinates, float32 `(N, 2)`, or `None`.
    #[getter]
    fn uvs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "uvs")
    }

    /// Triangle corners, uint32 `(3 * triangles,)`.
    #[getter]
    fn indices<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "indices")
    }

    /// Influencing skin joints per vertex, uint16 `(N, K)` (indices into `Skin.joints`).
    #[getter]
    fn joints<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "joints")
    }

    /// Influence weights per vertex, float32 `(N, K)`, summing to 1.
    #[getter]
    fn weights<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "weights")
    }

    /// Morph target position offsets, float32 `(M, N, 3)`, one per `morph_names`.
    #[getter]
    fn morph_positions<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.get(py, "morph_positions")
    }

    /// The morph targets' names.
    #[getter]
    fn morph_names(&self) -> Vec<String> {
        self.morph_names.clone()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let n = self
            .get(py, "positions")
            .ok()
            .flatten()
            .and_then(|a| a.getattr("shape").ok())
            .map(|s| s.to_string())
            .unwrap_or_default();
        format!("<skelett.Mesh {:?}: positions {n}>", self.name)
    }
}

/// Loads a file skelett reads (`.glb`, `.gltf`, `.fbx`, `.bvh`, `.x`, `.ram` (+ `.raa`),
/// `.skl`), with the CLI's options, each for the format it names: FBX `to_meters` and
/// `y_up`, `.x` `right_handed` and `animation_options`, and for a `.ram` the `.raa` files to
/// read onto it (`raa`, default: the one beside it) and their frame rate (`raa_fps`).
/// Reads without the GIL.
#[pyfunction]
#[pyo3(signature = (path, *, to_meters = false, y_up = false, right_handed = false, animation_options = false, raa = None, raa_fps = 30.0))]
#[allow(clippy::too_many_arguments)]
pub fn load(
    py: Python<'_>,
    path: PathBuf,
    to_meters: bool,
    y_up: bool,
    right_handed: bool,
    animation_options: bool,
    raa: Option<Vec<PathBuf>>,
    raa_fps: f32,
) -> PyResult<Asset> {
    let options = load_options(
        to_meters,
        y_up,
        right_handed,
        animation_options,
        raa,
        raa_fps,
    )?;
    let asset = py
        .detach(move || skelett_io::load_with(&path, &options))
        .map_err(io_error)?;
    Asset::new(py, asset)
}

/// Loads a file from bytes (the format from its first bytes: glTF binary, FBX, BVH, `.x`,
/// `.skl`) with `load`'s options; `name` is used in errors.
#[pyfunction]
#[pyo3(signature = (data, name = "<bytes>", *, to_meters = false, y_up = false, right_handed = false, animation_options = false))]
pub fn load_bytes(
    py: Python<'_>,
    data: &[u8],
    name: &str,
    to_meters: bool,
    y_up: bool,
    right_handed: bool,
    animation_options: bool,
) -> PyResult<Asset> {
    let name = PathBuf::from(name);
    let options = load_options(
        to_meters,
        y_up,
        right_handed,
        animation_options,
        None,
        skelett_io::rite::DEFAULT_FPS,
    )?;
    let asset = py
        .detach(move || skelett_io::from_bytes_with(data, &name, &options))
        .map_err(io_error)?;
    Asset::new(py, asset)
}

/// Converts a file to another format by the output's extension (`.glb`, `.skl`, `.ram`),
/// as `skelett convert` does, with `load`'s options for reading and `Asset.save`'s for
/// writing; returns the reader's warnings and what the output format cannot hold.
#[pyfunction]
#[pyo3(signature = (source, output, *, to_meters = false, y_up = false, right_handed = false, animation_options = false, raa = None, raa_fps = 30.0, ram_counts = false))]
#[allow(clippy::too_many_arguments)]
pub fn convert(
    py: Python<'_>,
    source: PathBuf,
    output: PathBuf,
    to_meters: bool,
    y_up: bool,
    right_handed: bool,
    animation_options: bool,
    raa: Option<Vec<PathBuf>>,
    raa_fps: f32,
    ram_counts: bool,
) -> PyResult<Vec<String>> {
    let options = load_options(
        to_meters,
        y_up,
        right_handed,
        animation_options,
        raa,
        raa_fps,
    )?;
    let ram = ram_options(ram_counts, raa_fps)?;
    py.detach(move || {
        let a = skelett_io::load_with(&source, &options)?;
        let lost = skelett_io::save_by_extension(&a, &output, &ram)?;
        Ok(a.warnings.into_iter().chain(lost).collect())
    })
    .map_err(io_error)
}

/// An asset from `.skl` bytes (`Asset.to_skl_bytes`; unpickling uses it).
#[pyfunction]
pub fn from_skl_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Asset> {
    let a = skelett_io::native::from_bytes(data, Path::new("<pickle>")).map_err(io_error)?;
    Asset::new(py, a)
}

/// A skeleton from `.skl` bytes (unpickling uses it).
#[pyfunction]
pub fn skeleton_from_skl_bytes(data: &[u8]) -> PyResult<Skeleton> {
    let a = skelett_io::native::from_bytes(data, Path::new("<pickle>")).map_err(io_error)?;
    Ok(Skeleton { inner: a.skeleton })
}
