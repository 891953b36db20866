//! Clips as Python objects: metadata, keys per channel, and batch sampling into arrays (local
//! transforms, world matrices, joint positions) over any number of times in one call, in
//! parallel on rayon's threads with the GIL released. Also clips made from arrays of local
//! transforms, the way back from NumPy to a file.

use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Quat, Vec3};
use numpy::ndarray::{Array1, Array2, Array3, Array4};
use numpy::{
    AllowTypeChange, IntoPyArray, PyArray3, PyArrayLike1, PyArrayLike2, PyArrayLike3,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rayon::prelude::*;
use skelett::{
    local_to_model, sample, ChannelValues, Interpolation, RawChannel, RawClip, RawValues,
    SamplingCache, Target, Transform,
};

use crate::asset::{rows, skl_of, Skeleton};
use crate::{io_error, value_error};

/// A local transform as 10 floats: translation, rotation (x, y, z, w), scale.
pub(crate) fn srt(t: &Transform) -> [f32; 10] {
    let (p, q, s) = (t.translation, t.rotation, t.scale);
    [p.x, p.y, p.z, q.x, q.y, q.z, q.w, s.x, s.y, s.z]
}

/// 10 floats back to a local transform (the rotation normalised; a zero one is identity).
pub(crate) fn transform_from(v: &[f32]) -> Transform {
    let q = Quat::from_xyzw(v[3], v[4], v[5], v[6]);
    let l = q.length_squared();
    Transform {
        translation: Vec3::new(v[0], v[1], v[2]),
        rotation: if l.is_finite() && l > 1e-12 {
            q.normalize()
        } else {
            Quat::IDENTITY
        },
        scale: Vec3::new(v[7], v[8], v[9]),
    }
}

/// Times as f32 seconds from any 1-D array or sequence of numbers: `ValueError` for NaN or
/// infinite ones (naming the first), `TypeError` for what is not numbers.
pub(crate) fn times_from(times: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    let a: PyArrayLike1<'_, f64, AllowTypeChange> = times.extract().map_err(|_| {
        PyTypeError::new_err("times: a 1-D array (or sequence) of numbers, in seconds")
    })?;
    let v = a.as_array();
    if let Some(i) = v.iter().position(|t| !t.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "times must be finite: times[{i}] is {}",
            v[i]
        )));
    }
    Ok(v.iter().map(|&t| t as f32).collect())
}

/// Local transforms `(T, J, 10)` or `(J, 10)` as (T, whether one pose, flat floats), every
/// value finite.
pub(crate) fn locals_from(
    local: &Bound<'_, PyAny>,
    joints: usize,
) -> PyResult<(usize, bool, Vec<f32>)> {
    let (frames, single, data) = locals_any(local, joints)?;
    if let Some(i) = data.iter().position(|v| !v.is_finite()) {
        let per = (joints * 10).max(1);
        return Err(PyValueError::new_err(format!(
            "local transforms must be finite: pose {}, joint {}, value {} is {}",
            i / per,
            (i % per) / 10,
            i % 10,
            data[i]
        )));
    }
    Ok((frames, single, data))
}

fn locals_any(local: &Bound<'_, PyAny>, joints: usize) -> PyResult<(usize, bool, Vec<f32>)> {
    if let Ok(a) = local.extract::<PyArrayLike3<'_, f32, AllowTypeChange>>() {
        let s = a.shape().to_vec();
        if s[1] != joints || s[2] != 10 {
            return Err(PyValueError::new_err(format!(
                "local transforms of shape (T, {joints}, 10) needed, got {s:?}"
            )));
        }
        return Ok((s[0], false, a.as_array().iter().copied().collect()));
    }
    if let Ok(a) = local.extract::<PyArrayLike2<'_, f32, AllowTypeChange>>() {
        let s = a.shape().to_vec();
        if s[0] != joints || s[1] != 10 {
            return Err(PyValueError::new_err(format!(
                "local transforms of shape ({joints}, 10) needed, got {s:?}"
            )));
        }
        return Ok((1, true, a.as_array().iter().copied().collect()));
    }
    Err(PyTypeError::new_err(
        "local transforms: a float array of shape (T, J, 10) or (J, 10): [tx, ty, tz, qx, qy, \
         qz, qw, sx, sy, sz] per joint",
    ))
}

/// A clip: keys per animated channel, events and frame rate, bound to its skeleton.
#[pyclass(module = "skelett", frozen)]
pub struct Clip {
    pub(crate) inner: Arc<skelett::Clip>,
    skeleton: Arc<skelett::Skeleton>,
}

impl Clip {
    pub(crate) fn new(inner: Arc<skelett::Clip>, skeleton: Arc<skelett::Skeleton>) -> Self {
        Clip { inner, skeleton }
    }

    /// Whether the clip was made for `skeleton`.
    pub(crate) fn fits(&self, skeleton: &skelett::Skeleton) -> bool {
        self.inner.fits(skeleton)
    }

    /// Samples every time in parallel; `each(t, pose, out)` turns pose `t` into its `per`
    /// output floats.
    fn batch(
        &self,
        py: Python<'_>,
        times: Vec<f32>,
        per: usize,
        each: impl Fn(&[Transform], &mut [f32]) + Send + Sync,
    ) -> PyResult<Vec<f32>> {
        let clip = self.inner.clone();
        let sk = self.skeleton.clone();
        let pool = crate::pool()?;
        Ok(py.detach(move || {
            pool.install(|| {
                let mut out = vec![0f32; times.len() * per];
                out.par_chunks_mut(per.max(1))
                    .zip(times.par_iter())
                    .for_each_init(
                        || (SamplingCache::for_clip(&clip), skelett::Pose::rest(&sk)),
                        |(cache, pose), (o, &t)| {
                            // The pose has the clip's joint count: sampling cannot fail.
                            let _ = sample(&clip, t, cache, pose);
                            each(pose, o);
                        },
                    );
                out
            })
        }))
    }

    /// Scene-space world matrices of a pose, row-major, into `o` (16 per joint).
    fn world_into(sk: &skelett::Skeleton, pose: &[Transform], model: &mut [Mat4], o: &mut [f32]) {
        let _ = local_to_model(sk, pose, 0, model);
        let root = sk.root_transform();
        for (k, m) in model.iter().enumerate() {
            o[k * 16..k * 16 + 16].copy_from_slice(&rows(&(root * *m)));
        }
    }
}

#[pymethods]
impl Clip {
    /// The clip's name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Time of its first frame, seconds.
    #[getter]
    fn start(&self) -> f32 {
        self.inner.start()
    }

    /// Length, seconds.
    #[getter]
    fn duration(&self) -> f32 {
        self.inner.duration()
    }

    /// Time of its last frame, seconds.
    #[getter]
    fn end(&self) -> f32 {
        self.inner.end()
    }

    /// Frames per second the clip was made at, where the file says or its keys show; `None`
    /// otherwise.
    #[getter]
    fn frame_rate(&self) -> Option<f32> {
        self.inner.frame_rate()
    }

    /// Whether the clip is compressed (`Asset.compress`).
    #[getter]
    fn is_compact(&self) -> bool {
        self.inner.is_compact()
    }

    /// A compressed clip's key layout: `"stream"` (the default, smallest), `"seek"` (random
    /// access) or `"lanes"` (fast playback, larger); `None` for a clip with keys.
    #[getter]
    fn compact_layout(&self) -> Option<&'static str> {
        self.inner.compact_layout().map(|l| match l {
            skelett::compress::CompactLayout::Stream => "stream",
            skelett::compress::CompactLayout::Seek => "seek",
            skelett::compress::CompactLayout::Lanes => "lanes",
        })
    }

    /// A compressed clip with its keys in `layout` (`"stream"` or `"seek"`: the same keys,
    /// sampled to the same values; `"lanes"`: rounded to 16 bits, not measured again, and not
    /// convertible back). `ValueError` for a clip with keys, another layout name, or a clip
    /// in the lanes layout asked for another.
    fn with_compact_layout(&self, layout: &str) -> PyResult<Clip> {
        let layout = match layout {
            "stream" => skelett::compress::CompactLayout::Stream,
            "seek" => skelett::compress::CompactLayout::Seek,
            "lanes" => skelett::compress::CompactLayout::Lanes,
            other => {
                return Err(PyValueError::new_err(format!(
                    "layout {other:?}: \"stream\", \"seek\" or \"lanes\""
                )))
            }
        };
        let c = self.inner.with_compact_layout(layout).ok_or_else(|| {
            PyValueError::new_err(
                "not a compressed clip, too large for the layout, or in the lanes layout",
            )
        })?;
        Ok(Clip::new(Arc::new(c), self.skeleton.clone()))
    }

    /// Bytes the clip's keys take in memory.
    #[getter]
    fn size_bytes(&self) -> usize {
        self.inner.size_bytes()
    }

    /// Events: `(time, name, payload)` tuples, by time.
    #[getter]
    fn events(&self) -> Vec<(f32, String, Option<String>)> {
        self.inner
            .events()
            .iter()
            .map(|e| (e.time, e.name.clone(), e.payload.clone()))
            .collect()
    }

    /// The raw keys of every animated channel, as dicts: `joint` (name), `target`
    /// (`"translation"`, `"rotation"`, `"scale"`), `interpolation` (`"linear"`, `"step"`,
    /// `"cubic"`), `times` float32 `(K,)` and `values` float32 `(K, 3)` or `(K, 4)` (x, y,
    /// z, w); for cubic channels `(3K, ...)`: in-tangent, value, out-tangent per key. A
    /// compressed clip gives its decoded keys.
    fn channels<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let keyed = self.inner.decompressed();
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(ch) = keyed.channel(i) {
            i += 1;
            let d = PyDict::new(py);
            d.set_item("joint", self.skeleton.name(ch.joint))?;
            d.set_item(
                "target",
                match ch.target {
                    Target::Translation => "translation",
                    Target::Rotation => "rotation",
                    Target::Scale => "scale",
                },
            )?;
            d.set_item(
                "interpolation",
                match ch.interpolation {
                    Interpolation::Linear => "linear",
                    Interpolation::Step => "step",
                    Interpolation::CubicSpline => "cubic",
                },
            )?;
            d.set_item(
                "times",
                Array1::from_vec(ch.times.to_vec()).into_pyarray(py),
            )?;
            let values = match ch.values {
                ChannelValues::Vec3(v) => {
                    let flat: Vec<f32> = v.iter().flat_map(|x| <[f32; 3]>::from(*x)).collect();
                    Array2::from_shape_vec((v.len(), 3), flat).map_err(value_error)?
                }
                ChannelValues::Quat(q) => {
                    let flat: Vec<f32> = q.iter().flat_map(|x| x.to_array()).collect();
                    Array2::from_shape_vec((q.len(), 4), flat).map_err(value_error)?
                }
            };
            d.set_item("values", values.into_pyarray(py))?;
            out.push(d);
        }
        Ok(out)
    }

    /// Local transforms at each time, float32 `(T, J, 10)`:
    /// `[tx, ty, tz, qx, qy, qz, qw, sx, sy, sz]` per joint. Times are seconds in the clip's
    /// time base (`start` is its first frame); before and after the keys the ends hold.
    fn sample_local<'py>(
        &self,
        py: Python<'py>,
        times: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let times = times_from(times)?;
        let (t, j) = (times.len(), self.skeleton.len());
        let out = self.batch(py, times, j * 10, |pose, o| {
            for (k, p) in pose.iter().enumerate() {
                o[k * 10..k * 10 + 10].copy_from_slice(&srt(p));
            }
        })?;
        Ok(Array3::from_shape_vec((t, j, 10), out)
            .map_err(value_error)?
            .into_pyarray(py))
    }

    /// World matrices at each time, float32 `(T, J, 4, 4)`, scene space, for column vectors
    /// (translation in `[..., :3, 3]`).
    fn sample_world<'py>(
        &self,
        py: Python<'py>,
        times: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let times = times_from(times)?;
        let (t, j) = (times.len(), self.skeleton.len());
        let sk = self.skeleton.clone();
        let out = self.batch(py, times, j * 16, move |pose, o| {
            let mut model = vec![Mat4::IDENTITY; sk.len()];
            Self::world_into(&sk, pose, &mut model, o);
        })?;
        Ok(Array4::from_shape_vec((t, j, 4, 4), out)
            .map_err(value_error)?
            .into_pyarray(py)
            .into_any())
    }

    /// Joint positions at each time, float32 `(T, J, 3)`, scene space.
    fn sample_positions<'py>(
        &self,
        py: Python<'py>,
        times: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let times = times_from(times)?;
        let (t, j) = (times.len(), self.skeleton.len());
        let sk = self.skeleton.clone();
        let out = self.batch(py, times, j * 3, move |pose, o| {
            let mut model = vec![Mat4::IDENTITY; sk.len()];
            let _ = local_to_model(&sk, pose, 0, &mut model);
            let root = sk.root_transform();
            for (k, m) in model.iter().enumerate() {
                let p = root.transform_point3(m.w_axis.truncate());
                o[k * 3..k * 3 + 3].copy_from_slice(&p.to_array());
            }
        })?;
        Ok(Array3::from_shape_vec((t, j, 3), out)
            .map_err(value_error)?
            .into_pyarray(py))
    }

    /// A clip from poses: local transforms `(T, J, 10)` at increasing `times` `(T,)` for
    /// `skeleton`, one LINEAR channel per joint and component, reduced losslessly (keys a
    /// straight line or a constant would give are dropped). What `Asset.with_clips` and
    /// `Asset.save` write back to a file.
    #[staticmethod]
    fn from_local(
        py: Python<'_>,
        skeleton: &Skeleton,
        name: &str,
        times: &Bound<'_, PyAny>,
        local: &Bound<'_, PyAny>,
    ) -> PyResult<Clip> {
        let sk = skeleton.inner.clone();
        let times = times_from(times)?;
        let (frames, single, data) = locals_from(local, sk.len())?;
        if single || frames != times.len() {
            return Err(PyValueError::new_err(format!(
                "one pose per time: {} times, {} poses",
                times.len(),
                if single { 1 } else { frames }
            )));
        }
        if times.is_empty() {
            return Err(PyValueError::new_err("at least one time"));
        }
        if let Some(i) = times.windows(2).position(|w| w[1] <= w[0]) {
            return Err(PyValueError::new_err(format!(
                "times must increase: times[{}] = {} after {}",
                i + 1,
                times[i + 1],
                times[i]
            )));
        }
        let name = name.to_string();
        let clip = py
            .detach(move || {
                let j = sk.len();
                let at = |t: usize, k: usize| {
                    transform_from(&data[(t * j + k) * 10..(t * j + k) * 10 + 10])
                };
                let mut channels = Vec::with_capacity(j * 3);
                for k in 0..j {
                    let joint = sk.name(k as u16).to_string();
                    let poses: Vec<Transform> = (0..frames).map(|t| at(t, k)).collect();
                    let channel = |target, values| RawChannel {
                        joint: joint.clone(),
                        target,
                        interpolation: Interpolation::Linear,
                        times: times.clone(),
                        values,
                    };
                    channels.push(channel(
                        Target::Translation,
                        RawValues::Vec3(poses.iter().map(|p| p.translation).collect()),
                    ));
                    channels.push(channel(
                        Target::Rotation,
                        RawValues::Quat(poses.iter().map(|p| p.rotation).collect()),
                    ));
                    channels.push(channel(
                        Target::Scale,
                        RawValues::Vec3(poses.iter().map(|p| p.scale).collect()),
                    ));
                }
                let mut raw = RawClip {
                    name,
                    channels,
                    ..Default::default()
                };
                raw.fit_range_to_keys();
                raw.build(&sk).map(|c| (c, sk))
            })
            .map_err(value_error)?;
        Ok(Clip::new(Arc::new(clip.0), clip.1))
    }

    /// The same clip with `events` added: `(time, name)` or `(time, name, payload)` tuples,
    /// times within the clip (`ValueError` otherwise). The animator reports them as they are
    /// crossed.
    fn with_events(&self, events: Vec<Bound<'_, PyAny>>) -> PyResult<Clip> {
        let mut list = Vec::with_capacity(events.len());
        for e in events {
            let (time, name, payload) = if let Ok((t, n)) = e.extract::<(f32, String)>() {
                (t, n, None)
            } else {
                e.extract::<(f32, String, Option<String>)>().map_err(|_| {
                    PyTypeError::new_err("an event: (time, name) or (time, name, payload)")
                })?
            };
            list.push(skelett::ClipEvent {
                time,
                name,
                payload,
            });
        }
        let c = (*self.inner)
            .clone()
            .with_events(list)
            .map_err(value_error)?;
        Ok(Clip::new(Arc::new(c), self.skeleton.clone()))
    }

    /// This clip retargeted onto `target` (another character: names, proportions and rest
    /// poses may differ), as `skelett retarget` does: joints paired by `joint_map` (a dict
    /// target name -> source name) or automatically by body part and name
    /// (`skelett.joint_map`), the target's reference pose aligned to the source's, the root
    /// scaled by the hip heights. Returns a clip of `target`.
    #[pyo3(signature = (target, joint_map = None))]
    fn retarget(
        &self,
        py: Python<'_>,
        target: &Skeleton,
        joint_map: Option<std::collections::HashMap<String, String>>,
    ) -> PyResult<Clip> {
        use skelett::retarget::{BakeOptions, JointMap, Options, Retargeter};
        let source = self.skeleton.clone();
        let onto = target.inner.clone();
        let clip = self.inner.clone();
        let baked = py.detach(move || {
            let map = match joint_map {
                Some(m) => JointMap::from_pairs(m.into_iter().map(|(t, s)| (s, t))),
                None => JointMap::auto(&source, &onto)?,
            };
            let r = Retargeter::new(&source, &onto, &map, &Options::default())?;
            r.bake(&clip, &source, &onto, &BakeOptions::default())
        });
        let baked = baked.map_err(value_error)?;
        Ok(Clip::new(Arc::new(baked), target.inner.clone()))
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let f = py.import("skelett")?.getattr("clip_from_skl_bytes")?;
        let bytes = skl_of(&self.skeleton, vec![self.inner.clone()]);
        Ok((f, (PyBytes::new(py, &bytes),)))
    }

    fn __repr__(&self) -> String {
        format!(
            "<skelett.Clip {:?}: {:.3} s, {} channels>",
            self.inner.name(),
            self.inner.duration(),
            self.inner.track_count()
        )
    }
}

/// The automatic joint map from `source` to `target` (what `Clip.retarget` uses without a
/// map): a dict target joint name -> source joint name, for the joints it pairs.
#[pyfunction]
pub fn joint_map(
    source: &Skeleton,
    target: &Skeleton,
) -> PyResult<std::collections::HashMap<String, String>> {
    let map =
        skelett::retarget::JointMap::auto(&source.inner, &target.inner).map_err(value_error)?;
    Ok(map
        .pairs
        .into_iter()
        .map(|p| (p.target, p.source))
        .collect())
}

/// A clip from `.skl` bytes (its skeleton and the one clip; unpickling uses it).
#[pyfunction]
pub fn clip_from_skl_bytes(data: &[u8]) -> PyResult<Clip> {
    let a = skelett_io::native::from_bytes(data, Path::new("<pickle>")).map_err(io_error)?;
    let c = a
        .clips
        .first()
        .cloned()
        .ok_or_else(|| PyValueError::new_err("the bytes hold no clip"))?;
    Ok(Clip::new(c, a.skeleton))
}
