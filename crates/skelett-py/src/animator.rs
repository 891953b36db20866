//! The animator for scripted playback from Python: clips played and cross-faded on layers,
//! events and notifications as they fire, root motion, and the pose as arrays. One Python
//! object per character, wrapping `skelett::animator::Animator`.

use std::sync::Arc;

use glam::Mat4;
use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray2, PyArray3};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use skelett::animator::{
    Animator as Inner, BlendMode, Curve, EventKind, PlayOptions, RootMotionConfig, Wrap,
};
use skelett::{JointMask, RotationInterpolation};

use crate::asset::{rows, Skeleton};
use crate::clip::{srt, Clip};
use crate::value_error;

/// Plays clips on layers for one character: `play`, `crossfade`, `add_layer`, then `update`
/// every frame; `pose_local` / `pose_world` give the pose.
#[pyclass(module = "skelett")]
pub struct Animator {
    inner: Inner,
    skeleton: Arc<skelett::Skeleton>,
}

fn options(speed: f32, wrap: &str, start: f32, rotation: &str) -> PyResult<PlayOptions> {
    if !speed.is_finite() {
        return Err(PyValueError::new_err(format!(
            "speed must be finite, not {speed}"
        )));
    }
    if !(0.0..=1.0).contains(&start) {
        return Err(PyValueError::new_err(format!(
            "start is a fraction of the clip, 0 to 1, not {start}"
        )));
    }
    Ok(PlayOptions {
        speed,
        wrap: match wrap {
            "loop" => Wrap::Loop,
            "once" => Wrap::Once,
            "pingpong" => Wrap::PingPong,
            other => {
                return Err(PyValueError::new_err(format!(
                    "wrap {other:?}: \"loop\", \"once\" or \"pingpong\""
                )))
            }
        },
        start,
        rotation: rotation
            .parse::<RotationInterpolation>()
            .map_err(PyValueError::new_err)?,
        ..Default::default()
    })
}

impl Animator {
    fn clip(&self, clip: &Clip) -> PyResult<Arc<skelett::Clip>> {
        if !clip.fits(&self.skeleton) {
            return Err(PyValueError::new_err(format!(
                "clip {:?} was not made for this animator's skeleton",
                clip.inner.name()
            )));
        }
        Ok(clip.inner.clone())
    }
}

#[pymethods]
impl Animator {
    /// An animator for `skeleton` with one layer (layer 0) showing the rest pose.
    #[new]
    fn new(skeleton: &Skeleton) -> Self {
        Animator {
            inner: Inner::new(skeleton.inner.clone()),
            skeleton: skeleton.inner.clone(),
        }
    }

    /// Adds a layer on top and returns its index: `mode` `"override"` (replaces what is below
    /// on its joints, by its weight) or `"additive"`; `mask`: a joint name, to limit the
    /// layer to that joint and the joints below it.
    #[pyo3(signature = (mode = "override", weight = 1.0, mask = None))]
    fn add_layer(&mut self, mode: &str, weight: f32, mask: Option<&str>) -> PyResult<usize> {
        if !(-1.0..=1.0).contains(&weight) {
            return Err(PyValueError::new_err(format!(
                "a layer weight is 0 to 1 (-1 to 1 for an additive layer), not {weight}"
            )));
        }
        let mode = match mode {
            "override" => BlendMode::Override,
            "additive" => BlendMode::Additive,
            other => {
                return Err(PyValueError::new_err(format!(
                    "mode {other:?}: \"override\" or \"additive\""
                )))
            }
        };
        let mask = match mask {
            Some(j) => Some(JointMask::subtree(&self.skeleton, j).ok_or_else(|| {
                PyValueError::new_err(format!("no joint named {j:?} for the mask"))
            })?),
            None => None,
        };
        self.inner
            .add_layer(mode, weight, mask)
            .map_err(value_error)
    }

    /// Plays `clip` on `layer` at once. `wrap`: `"loop"`, `"once"`, `"pingpong"`; `start`:
    /// where, as a fraction of the clip; `rotation`: `"slerp"` or the cheaper `"nlerp"`.
    #[pyo3(signature = (clip, layer = 0, speed = 1.0, wrap = "loop", start = 0.0, rotation = "slerp"))]
    fn play(
        &mut self,
        clip: &Clip,
        layer: usize,
        speed: f32,
        wrap: &str,
        start: f32,
        rotation: &str,
    ) -> PyResult<()> {
        let c = self.clip(clip)?;
        let o = options(speed, wrap, start, rotation)?;
        self.inner.play(layer, c, o).map_err(value_error)
    }

    /// Cross-fades `layer` to `clip` over `duration` seconds (`curve`: `"linear"`,
    /// `"smoothstep"`, `"ease_in"`, `"ease_out"`).
    #[pyo3(signature = (clip, duration, layer = 0, curve = "smoothstep", speed = 1.0, wrap = "loop", rotation = "slerp"))]
    #[allow(clippy::too_many_arguments)]
    fn crossfade(
        &mut self,
        clip: &Clip,
        duration: f32,
        layer: usize,
        curve: &str,
        speed: f32,
        wrap: &str,
        rotation: &str,
    ) -> PyResult<()> {
        let c = self.clip(clip)?;
        if !(duration.is_finite() && duration >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "duration must be 0 or more seconds, not {duration}"
            )));
        }
        let curve = match curve {
            "linear" => Curve::Linear,
            "smoothstep" => Curve::SmoothStep,
            "ease_in" => Curve::EaseIn,
            "ease_out" => Curve::EaseOut,
            other => {
                return Err(PyValueError::new_err(format!(
                    "curve {other:?}: \"linear\", \"smoothstep\", \"ease_in\" or \"ease_out\""
                )))
            }
        };
        let o = options(speed, wrap, 0.0, rotation)?;
        self.inner
            .crossfade(layer, c, duration, curve, o)
            .map_err(value_error)
    }

    /// Sets a layer's weight: 0 to 1; an additive layer also takes -1 to 0 (its delta
    /// subtracted), an override layer holds those at 0.
    fn set_layer_weight(&mut self, layer: usize, weight: f32) -> PyResult<()> {
        if !(-1.0..=1.0).contains(&weight) {
            return Err(PyValueError::new_err(format!(
                "a layer weight is 0 to 1 (-1 to 1 for an additive layer), not {weight}"
            )));
        }
        self.inner
            .set_layer_weight(layer, weight)
            .map_err(value_error)
    }

    /// Sets the playback speed of what plays on `layer` (negative plays backwards).
    fn set_speed(&mut self, layer: usize, speed: f32) -> PyResult<()> {
        if !speed.is_finite() {
            return Err(PyValueError::new_err(format!(
                "speed must be finite, not {speed}"
            )));
        }
        self.inner.set_speed(layer, speed).map_err(value_error)
    }

    /// Stops `layer` (it then shows nothing; layer 0 shows the rest pose).
    fn stop(&mut self, layer: usize) -> PyResult<()> {
        self.inner.stop(layer).map_err(value_error)
    }

    /// Extracts root motion from `joint` (Y up, Z forward), or turns it off with `None`:
    /// `update` then reports the root's horizontal motion (in the character's frame at the
    /// start of the update: forward is +Z however the character has turned) and its turn
    /// about the up axis, and the pose keeps the root in place.
    #[pyo3(signature = (joint))]
    fn set_root_motion(&mut self, joint: Option<&str>) -> PyResult<()> {
        let config = match joint {
            Some(name) => Some(RootMotionConfig {
                joint: self
                    .skeleton
                    .find(name)
                    .ok_or_else(|| PyValueError::new_err(format!("no joint named {name:?}")))?,
                ..Default::default()
            }),
            None => None,
        };
        self.inner.set_root_motion(config).map_err(value_error)
    }

    /// Whether `update` also reports clips that loop or end and cross-fades that finish.
    fn set_notifications(&mut self, on: bool) {
        self.inner.set_notifications(on);
    }

    /// Advances `dt` seconds (0 or more). Returns a dict: `events`, a list of dicts
    /// (`layer`, `clip`, `kind` (`"event"`, `"looped"`, `"ended"`,
    /// `"transition_finished"`), `name` and `time` (the event's name and its time in the
    /// clip, for kind `"event"`; else `None`), `at` (where in this update it was crossed, 0
    /// to 1), `weight`), in the order they were crossed; and `root_motion`, a dict with
    /// `translation` (3 floats, in the character's frame at the start of the update) and
    /// `yaw` (radians about the up axis).
    fn update<'py>(&mut self, py: Python<'py>, dt: f32) -> PyResult<Bound<'py, PyDict>> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "dt is 0 or more seconds, not {dt}"
            )));
        }
        let r = self.inner.update(dt);
        let d = PyDict::new(py);
        let mut events = Vec::new();
        for e in r.events {
            let ev = PyDict::new(py);
            ev.set_item("layer", e.layer)?;
            ev.set_item("clip", e.clip.name())?;
            let event = e.clip.events().get(e.index);
            let (kind, name, time) = match e.kind {
                EventKind::Clip => (
                    "event",
                    event.map(|x| x.name.clone()),
                    event.map(|x| x.time),
                ),
                EventKind::Looped { .. } => ("looped", None, None),
                EventKind::Ended { .. } => ("ended", None, None),
                EventKind::TransitionFinished => ("transition_finished", None, None),
                _ => ("other", None, None),
            };
            ev.set_item("kind", kind)?;
            ev.set_item("name", name)?;
            ev.set_item("time", time)?;
            ev.set_item("at", e.at)?;
            ev.set_item("weight", e.weight)?;
            events.push(ev);
        }
        d.set_item("events", events)?;
        let rm = PyDict::new(py);
        rm.set_item("translation", r.root_motion.translation.to_array())?;
        rm.set_item("yaw", r.root_motion.yaw)?;
        d.set_item("root_motion", rm)?;
        Ok(d)
    }

    /// The current pose's local transforms, float32 `(J, 10)`.
    fn pose_local<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f32>> {
        let v: Vec<f32> = self.inner.pose().iter().flat_map(srt).collect();
        Array2::from_shape_vec((self.skeleton.len(), 10), v)
            .expect("10 per joint")
            .into_pyarray(py)
    }

    /// The current pose's world matrices, float32 `(J, 4, 4)`, scene space.
    fn pose_world<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f32>> {
        let sk = &self.skeleton;
        let mut model = vec![Mat4::IDENTITY; sk.len()];
        let _ = self.inner.local_to_model(&mut model);
        let root = sk.root_transform();
        let v: Vec<f32> = model.iter().flat_map(|m| rows(&(root * *m))).collect();
        Array3::from_shape_vec((sk.len(), 4, 4), v)
            .expect("16 per joint")
            .into_pyarray(py)
    }
}
