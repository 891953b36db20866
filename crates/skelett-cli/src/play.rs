//! `skelett play`: the animator run headless on a timed script, printing per step the events
//! fired, the root motion and (optionally) the joint world matrices.
//!
//! The script is JSON (documented in the README):
//!
//! ```json
//! { "events": [{"clip": "Walk", "time": 0.2, "name": "left_foot"}],
//!   "layers": [{"mode": "override", "weight": 1, "mask": {"subtree": "b_Spine01_02"}}],
//!   "root_motion": {"joint": "b_Root_00"},
//!   "duration": 3.0,
//!   "commands": [{"at": 0, "play": "Walk", "sync": 1},
//!                {"at": 1, "crossfade": "Run", "duration": 0.4, "sync": 1}] }
//! ```
//!
//! Steps are taken at a fixed `--dt`; a command runs before the first step that starts at or
//! after its `at`. Output is deterministic: the same file, script and dt print the same bytes.

use std::path::Path;
use std::sync::Arc;

use glam::{Mat4, Vec3};
use serde::{Deserialize, Serialize};
use skelett::animator::{
    Animator, BlendMode, BlendSpace1D, Curve, EventPolicy, PlayOptions, RootMotionConfig,
    Transition, UpdateResult, When, Wrap,
};
use skelett::graph::{Graph, GraphInstance, StateEventKind, Value as GraphValue};
use skelett::{local_to_model, Clip, ClipEvent, JointMask, RotationInterpolation};
use skelett_io::Asset;

use crate::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default)]
    events: Vec<EventSpec>,
    #[serde(default)]
    layers: Vec<LayerSpec>,
    root_motion: Option<RootSpec>,
    /// Seconds to run; default: one second past the last command.
    duration: Option<f32>,
    /// Minimum player weight for events (default 0.5), and whether only sync leaders fire.
    event_min_weight: Option<f32>,
    sync_leader_only: Option<bool>,
    /// Report loops, ends and finished transitions as events (`looped`, `ended`,
    /// `transition_finished`).
    notifications: Option<bool>,
    commands: Vec<Command>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventSpec {
    clip: String,
    time: f32,
    name: String,
    payload: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerSpec {
    #[serde(default)]
    mode: Mode,
    #[serde(default = "one")]
    weight: f32,
    mask: Option<MaskSpec>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Override,
    Additive,
}

fn one() -> f32 {
    1.0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MaskSpec {
    /// Joints whose whole sub-tree is in the mask.
    #[serde(default)]
    subtree: Vec<String>,
    /// Single joints in the mask.
    #[serde(default)]
    joints: Vec<String>,
    /// Sub-trees taken out again.
    #[serde(default)]
    exclude: Vec<String>,
    /// A dominant layer: the joints this clip (a name or index) animates, and no others;
    /// stands alone.
    animated_by: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RootSpec {
    joint: String,
    #[serde(default = "up")]
    up: [f32; 3],
    #[serde(default = "forward")]
    forward: [f32; 3],
}

fn up() -> [f32; 3] {
    [0.0, 1.0, 0.0]
}

fn forward() -> [f32; 3] {
    [0.0, 0.0, 1.0]
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Command {
    at: f32,
    #[serde(default)]
    layer: usize,
    // Actions (exactly one per command).
    play: Option<String>,
    crossfade: Option<String>,
    inertialize: Option<String>,
    queue: Option<String>,
    blend_space: Option<Vec<(f32, String)>>,
    parameter: Option<f32>,
    set_speed: Option<f32>,
    layer_weight: Option<f32>,
    /// Enables (`true`) or disables (`false`) the layer, keeping its state.
    layer_enabled: Option<bool>,
    seek: Option<f32>,
    stop: Option<bool>,
    pause: Option<bool>,
    /// Turns an IK modifier on, moves its target or fades it (see [`IkSpec`]).
    ik: Option<IkSpec>,
    /// With `--graph`: sets parameters by name (numbers, `true`/`false`; a trigger is set
    /// by `true`).
    set: Option<serde_json::Map<String, serde_json::Value>>,
    // Options of the actions.
    duration: Option<f32>,
    curve: Option<String>,
    speed: Option<f32>,
    wrap: Option<String>,
    /// "slerp" (the default) or "nlerp": how the clip's rotation keys are interpolated.
    rotation: Option<String>,
    sync: Option<u32>,
    start: Option<f32>,
    normalized: Option<bool>,
    fire_events: Option<bool>,
    /// For `queue`: "end" or a local time in seconds.
    when: Option<serde_json::Value>,
    /// For `queue` and `blend_space`: "immediate", {"crossfade": s} or {"inertial": s}.
    transition: Option<serde_json::Value>,
}

impl Command {
    /// Whether the command names an action that plays or steers clips directly.
    fn plays_clips(&self) -> bool {
        self.play.is_some()
            || self.crossfade.is_some()
            || self.inertialize.is_some()
            || self.queue.is_some()
            || self.blend_space.is_some()
            || self.parameter.is_some()
            || self.set_speed.is_some()
            || self.layer_weight.is_some()
            || self.layer_enabled.is_some()
            || self.seek.is_some()
            || self.stop.is_some()
            || self.pause.is_some()
    }
}

/// An IK modifier in a script: one of the kinds. A command naming the same kind and joints
/// as an earlier one changes that modifier (target, pole, weight) instead of adding one; it
/// stays on until its weight is set to 0. Points and directions are in scene space (the
/// space of `--joints`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum IkSpec {
    TwoBone(TwoBoneSpec),
    Aim(AimSpec),
    Chain(ChainSpec),
    Feet(FeetSpec),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TwoBoneSpec {
    joints: [String; 3],
    target: [f32; 3],
    #[serde(default)]
    pole: [f32; 3],
    #[serde(default = "one")]
    weight: f32,
    #[serde(default = "one")]
    soften: f32,
    /// Degrees.
    #[serde(default)]
    twist: f32,
    /// Seconds over which the weight changes (0: at once).
    #[serde(default)]
    fade: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AimSpec {
    /// Top to the aiming joint.
    joints: Vec<String>,
    /// Each joint's share (default: all 1).
    weights: Option<Vec<f32>>,
    target: [f32; 3],
    /// The aiming joint's local forward axis.
    #[serde(default = "forward")]
    forward: [f32; 3],
    #[serde(default)]
    offset: [f32; 3],
    #[serde(default = "up")]
    up: [f32; 3],
    /// Scene-space direction the up axis leans to (none by default).
    #[serde(default)]
    pole: [f32; 3],
    /// Largest turn per joint, degrees (default: none).
    max_angle: Option<f32>,
    #[serde(default = "one")]
    weight: f32,
    #[serde(default)]
    fade: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainSpec {
    joints: Vec<String>,
    target: [f32; 3],
    /// "fabrik" (default) or "ccd".
    solver: Option<String>,
    iterations: Option<u32>,
    #[serde(default = "one")]
    weight: f32,
    #[serde(default)]
    fade: f32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FeetSpec {
    /// Each leg's [hip, knee, ankle]; the ankle stands, its sole below it at rest. An
    /// ankle that is not below the knee (a foot control joint at the root, as in
    /// robot_quaternius) is reached by the knee's tip where the ankle is at rest.
    legs: Vec<[String; 3]>,
    /// Each leg's knee direction in scene space (default: all forward, +Z; a quadruped's
    /// front legs bend backward, -Z).
    poles: Option<Vec<[f32; 3]>>,
    /// The joint lowered so the legs reach (none: not lowered).
    pelvis: Option<String>,
    /// {"slope": degrees} (rising along +Z), {"plane": {"point": [..], "normal": [..]}} or
    /// {"stairs": {"steps": n, "rise": m, "depth": m}} (rising along +Z from z = 0).
    ground: GroundSpec,
    /// Scene units; default: a fifth of the first leg.
    max_pelvis_drop: Option<f32>,
    #[serde(default = "one")]
    weight: f32,
    #[serde(default)]
    fade: f32,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum GroundSpec {
    Slope(f32),
    Plane { point: [f32; 3], normal: [f32; 3] },
    Stairs { steps: usize, rise: f32, depth: f32 },
}

#[derive(Serialize)]
struct Step {
    t: f64,
    /// With `--graph`: each layer's current state.
    #[serde(skip_serializing_if = "Option::is_none")]
    states: Option<Vec<String>>,
    /// With `--graph`: the transitions taken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    transitions: Vec<TransitionOut>,
    events: Vec<EventOut>,
    root_motion: Option<RootOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    joints: Option<Vec<JointOut>>,
}

#[derive(Serialize)]
struct EventOut {
    name: String,
    /// The clip of a clip event (empty for a state event).
    clip: String,
    time: f32,
    layer: usize,
    backward: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<String>,
    /// The state of a state event (`on_enter`/`on_exit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<String>,
    /// "enter" or "exit", for a state event.
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
}

#[derive(Serialize)]
struct TransitionOut {
    layer: usize,
    from: String,
    to: String,
    path: String,
    interrupted: bool,
}

#[derive(Serialize)]
struct RootOut {
    translation: [f32; 3],
    yaw: f32,
}

#[derive(Serialize)]
struct JointOut {
    name: String,
    world: [f32; 16],
}

/// Parses `1/60` or `0.0166`.
pub fn parse_dt(s: &str) -> std::result::Result<f32, String> {
    let v = match s.split_once('/') {
        Some((a, b)) => {
            let a: f32 = a.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
            let b: f32 = b.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
            a / b
        }
        None => s.trim().parse().map_err(|e| format!("{s:?}: {e}"))?,
    };
    if v.is_finite() && v > 0.0 && v <= 10.0 {
        Ok(v)
    } else {
        Err(format!(
            "{s:?}: a time step must be a positive number of seconds up to 10"
        ))
    }
}

fn clip(asset: &Asset, name: &str, clips: &[Arc<Clip>]) -> Result<Arc<Clip>> {
    asset
        .clip_index(name)
        .map(|i| clips[i].clone())
        .ok_or_else(|| {
            let names: Vec<&str> = asset.clips.iter().map(|c| c.name()).collect();
            format!("no clip {name:?}; the file has: {}", names.join(", ")).into()
        })
}

fn curve(s: Option<&str>) -> Result<Curve> {
    Ok(match s.unwrap_or("smoothstep") {
        "linear" => Curve::Linear,
        "smoothstep" => Curve::SmoothStep,
        "ease_in" => Curve::EaseIn,
        "ease_out" => Curve::EaseOut,
        other => {
            return Err(
                format!("unknown curve {other:?} (linear, smoothstep, ease_in, ease_out)").into(),
            )
        }
    })
}

fn transition(v: Option<&serde_json::Value>, c: Curve) -> Result<Transition> {
    match v {
        None => Ok(Transition::Immediate),
        Some(serde_json::Value::String(s)) if s == "immediate" => Ok(Transition::Immediate),
        Some(serde_json::Value::Object(o)) => {
            if let Some(d) = o.get("crossfade").and_then(|d| d.as_f64()) {
                Ok(Transition::Crossfade(d as f32, c))
            } else if let Some(d) = o.get("inertial").and_then(|d| d.as_f64()) {
                Ok(Transition::Inertial(d as f32))
            } else {
                Err(
                    "transition must be \"immediate\", {\"crossfade\": s} or {\"inertial\": s}"
                        .into(),
                )
            }
        }
        Some(other) => Err(format!("bad transition {other}").into()),
    }
}

fn options(c: &Command) -> Result<PlayOptions> {
    Ok(PlayOptions {
        speed: c.speed.unwrap_or(1.0),
        wrap: match c.wrap.as_deref().unwrap_or("loop") {
            "loop" => Wrap::Loop,
            "once" => Wrap::Once,
            "pingpong" | "ping_pong" => Wrap::PingPong,
            other => return Err(format!("unknown wrap {other:?} (loop, once, pingpong)").into()),
        },
        sync_group: c.sync,
        start: c.start.unwrap_or(0.0),
        rotation: c
            .rotation
            .as_deref()
            .unwrap_or("slerp")
            .parse::<RotationInterpolation>()?,
    })
}

fn run_command(
    anim: &mut Animator,
    asset: &Asset,
    clips: &[Arc<Clip>],
    iks: &mut Vec<(String, usize)>,
    c: &Command,
) -> Result<()> {
    let l = c.layer;
    let actions = [
        c.play.is_some(),
        c.crossfade.is_some(),
        c.inertialize.is_some(),
        c.queue.is_some(),
        c.blend_space.is_some(),
        // `parameter` is an option of `blend_space`, or an action of its own.
        c.parameter.is_some() && c.blend_space.is_none(),
        c.set_speed.is_some(),
        c.layer_weight.is_some(),
        c.layer_enabled.is_some(),
        c.seek.is_some(),
        c.stop.is_some(),
        c.pause.is_some(),
        c.ik.is_some(),
        c.set.is_some(),
    ];
    let n = actions.iter().filter(|&&a| a).count();
    if n != 1 {
        return Err(format!(
            "needs exactly one action (play, crossfade, inertialize, queue, blend_space, parameter, \
             set_speed, layer_weight, layer_enabled, seek, stop, pause, ik, set), found {n}"
        )
        .into());
    }
    let cv = curve(c.curve.as_deref())?;
    if let Some(name) = &c.play {
        anim.play(l, clip(asset, name, clips)?, options(c)?)?;
    } else if let Some(name) = &c.crossfade {
        anim.crossfade(
            l,
            clip(asset, name, clips)?,
            c.duration.unwrap_or(0.25),
            cv,
            options(c)?,
        )?;
    } else if let Some(name) = &c.inertialize {
        anim.inertialize(
            l,
            clip(asset, name, clips)?,
            c.duration.unwrap_or(0.25),
            options(c)?,
        )?;
    } else if let Some(name) = &c.queue {
        let when = match &c.when {
            None => When::End,
            Some(serde_json::Value::String(s)) if s == "end" => When::End,
            Some(v) => When::At(
                v.as_f64()
                    .ok_or("when must be \"end\" or a time in seconds")? as f32,
            ),
        };
        anim.queue(
            l,
            clip(asset, name, clips)?,
            when,
            transition(c.transition.as_ref(), cv)?,
            options(c)?,
        )?;
    } else if let Some(entries) = &c.blend_space {
        let mut v = Vec::new();
        for (pos, name) in entries {
            v.push((*pos, clip(asset, name, clips)?));
        }
        anim.play_blend_space(
            l,
            BlendSpace1D::new(v),
            transition(c.transition.as_ref(), cv)?,
        )?;
        if let Some(p) = c.parameter {
            anim.set_parameter(l, p)?;
        }
    } else if let Some(p) = c.parameter {
        anim.set_parameter(l, p)?;
    } else if let Some(s) = c.set_speed {
        anim.set_speed(l, s)?;
    } else if let Some(w) = c.layer_weight {
        anim.set_layer_weight(l, w)?;
    } else if let Some(on) = c.layer_enabled {
        anim.set_layer_enabled(l, on)?;
    } else if let Some(t) = c.seek {
        let fire = c.fire_events.unwrap_or(false);
        if c.normalized.unwrap_or(false) {
            anim.seek_normalized(l, t, fire)?;
        } else {
            anim.seek(l, t, fire)?;
        }
    } else if let Some(stop) = c.stop {
        if stop {
            anim.stop(l)?;
        }
    } else if let Some(p) = c.pause {
        anim.set_paused(l, p)?;
    } else if let Some(spec) = &c.ik {
        run_ik(anim, asset, clips, iks, spec)?;
    } else if c.set.is_some() {
        return Err("\"set\" sets graph parameters: play the script with --graph".into());
    }
    Ok(())
}

/// Runs a command of a script played with `--graph`: exactly one of `set` and `ik`.
fn run_graph_command(
    graph: &mut GraphInstance,
    asset: &Asset,
    clips: &[Arc<Clip>],
    iks: &mut Vec<(String, usize)>,
    c: &Command,
) -> Result<()> {
    match (&c.set, &c.ik, c.plays_clips()) {
        (Some(set), None, false) => {
            for (name, v) in set {
                let id = graph.graph().parameter(name).ok_or_else(|| {
                    let names: Vec<&str> = graph
                        .graph()
                        .parameters()
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect();
                    format!("set: no parameter {name:?}; the graph has: {}", names.join(", "))
                })?;
                let value = match v {
                    serde_json::Value::Bool(b) => GraphValue::Bool(*b),
                    serde_json::Value::Number(n) => {
                        GraphValue::Number(n.as_f64().ok_or("set: a number out of range")?)
                    }
                    other => {
                        return Err(
                            format!("set {name:?}: {other} is not a number or a bool").into()
                        )
                    }
                };
                graph.set(id, value).map_err(|e| format!("set: {e}"))?;
            }
            Ok(())
        }
        (None, Some(spec), false) => run_ik(graph.animator_mut(), asset, clips, iks, spec),
        _ => Err("with --graph, each command does exactly one of \"set\" (parameters) and \"ik\"; the graph plays the clips".into()),
    }
}

/// Adds or changes the IK modifier `spec` describes.
fn run_ik(
    anim: &mut Animator,
    asset: &Asset,
    clips: &[Arc<Clip>],
    iks: &mut Vec<(String, usize)>,
    spec: &IkSpec,
) -> Result<()> {
    use skelett::animator::{ChainSolver, Modifier};
    use skelett::ik;
    let sk = &asset.skeleton;
    let find = |n: &str| {
        sk.find(n)
            .ok_or_else(|| format!("ik: no joint {n:?} in the skeleton ({} joints)", sk.len()))
    };
    let finds = |names: &[String]| {
        names
            .iter()
            .map(|n| find(n))
            .collect::<std::result::Result<Vec<_>, _>>()
    };
    // Scene space to model space.
    let to_model = sk.root_transform().inverse();
    let point = |p: [f32; 3]| to_model.transform_point3(Vec3::from(p));
    let direction = |v: [f32; 3]| to_model.transform_vector3(Vec3::from(v));
    let (key, weight, fade) = match spec {
        IkSpec::TwoBone(s) => (format!("two_bone {:?}", s.joints), s.weight, s.fade),
        IkSpec::Aim(s) => (format!("aim {:?}", s.joints), s.weight, s.fade),
        IkSpec::Chain(s) => (format!("chain {:?}", s.joints), s.weight, s.fade),
        IkSpec::Feet(s) => (format!("feet {:?}", s.legs), s.weight, s.fade),
    };
    if !(weight.is_finite() && fade.is_finite()) {
        return Err("ik: weight and fade must be finite numbers".into());
    }
    if !(0.0..=1.0).contains(&weight) {
        return Err(format!("ik: weight {weight} is outside 0..1").into());
    }
    // Every point and direction finite (1e39 reads as infinity).
    let vectors: Vec<(&str, [f32; 3])> = match spec {
        IkSpec::TwoBone(s) => vec![("target", s.target), ("pole", s.pole)],
        IkSpec::Aim(s) => vec![
            ("target", s.target),
            ("forward", s.forward),
            ("offset", s.offset),
            ("up", s.up),
            ("pole", s.pole),
        ],
        IkSpec::Chain(s) => vec![("target", s.target)],
        IkSpec::Feet(s) => s.poles.iter().flatten().map(|p| ("poles", *p)).collect(),
    };
    for (what, v) in vectors {
        if !v.iter().all(|x| x.is_finite()) {
            return Err(format!("ik: {what} {v:?} is not finite").into());
        }
    }
    if let IkSpec::Aim(s) = spec {
        if let Some(w) = &s.weights {
            if w.len() != s.joints.len() {
                return Err(format!(
                    "ik aim: {} weights for {} joints (one per joint)",
                    w.len(),
                    s.joints.len()
                )
                .into());
            }
        }
    }
    let existing = iks.iter().find(|(k, _)| *k == key).map(|(_, i)| *i);
    let index = match existing {
        Some(i) => {
            // Same modifier: a new target, pole and request.
            let m = anim.modifier_mut(i).ok_or("ik: modifier vanished")?;
            match (m, spec) {
                (Modifier::TwoBone { ik: r, .. }, IkSpec::TwoBone(s)) => {
                    r.target = point(s.target);
                    r.bend = ik::Bend::Pole(direction(s.pole));
                    r.soften = s.soften;
                    r.twist = s.twist.to_radians();
                }
                (Modifier::Aim { aim, .. }, IkSpec::Aim(s)) => {
                    aim.target = point(s.target);
                    aim.pole = direction(s.pole);
                }
                (Modifier::Chain { reach, .. }, IkSpec::Chain(s)) => {
                    reach.target = point(s.target);
                }
                _ => {}
            }
            i
        }
        None => {
            let modifier = match spec {
                IkSpec::TwoBone(s) => {
                    let chain = ik::TwoBoneChain::new(
                        sk,
                        [
                            find(&s.joints[0])?,
                            find(&s.joints[1])?,
                            find(&s.joints[2])?,
                        ],
                    )
                    .map_err(|e| format!("ik two_bone {:?}: {e}", s.joints))?;
                    let mut r = ik::TwoBone::new(point(s.target), direction(s.pole));
                    r.soften = s.soften;
                    r.twist = s.twist.to_radians();
                    Modifier::TwoBone { chain, ik: r }
                }
                IkSpec::Aim(s) => {
                    let chain = finds(&s.joints)?;
                    for (pair, names) in chain.windows(2).zip(s.joints.windows(2)) {
                        ik::Chain::new(sk, pair).map_err(|e| {
                            format!("ik aim: {:?} is not below {:?} ({e})", names[1], names[0])
                        })?;
                    }
                    let weights = s.weights.clone().unwrap_or_else(|| vec![1.0; chain.len()]);
                    let mut aim = ik::Aim::new(point(s.target), Vec3::from(s.forward));
                    aim.offset = Vec3::from(s.offset);
                    aim.up = Vec3::from(s.up);
                    aim.pole = direction(s.pole);
                    aim.max_angle = s.max_angle.map_or(std::f32::consts::PI, f32::to_radians);
                    Modifier::Aim {
                        chain,
                        weights,
                        aim,
                    }
                }
                IkSpec::Chain(s) => {
                    let chain = ik::Chain::new(sk, &finds(&s.joints)?)
                        .map_err(|e| format!("ik chain {:?}: {e}", s.joints))?;
                    let mut reach = ik::Reach::new(point(s.target));
                    if let Some(n) = s.iterations {
                        if n > MAX_IK_ITERATIONS {
                            return Err(format!(
                                "ik chain: \"iterations\": {n}, more than the \
                                 {MAX_IK_ITERATIONS} a step takes (FABRIK and CCD converge in \
                                 tens)"
                            )
                            .into());
                        }
                        reach.iterations = n;
                    }
                    let solver = match s.solver.as_deref().unwrap_or("fabrik") {
                        "fabrik" => ChainSolver::Fabrik,
                        "ccd" => ChainSolver::Ccd,
                        other => {
                            return Err(
                                format!("ik chain: unknown solver {other:?} (fabrik, ccd)").into()
                            )
                        }
                    };
                    Modifier::Chain {
                        chain,
                        reach,
                        solver,
                    }
                }
                IkSpec::Feet(s) => feet_modifier(asset, clips, s)?,
            };
            let i = anim.add_modifier(modifier, 0.0)?;
            iks.push((key, i));
            i
        }
    };
    anim.fade_modifier(index, weight, fade.max(0.0))?;
    Ok(())
}

/// Foot placement from a script: legs from rest, contacts from every clip of the file.
fn feet_modifier(
    asset: &Asset,
    clips: &[Arc<Clip>],
    s: &FeetSpec,
) -> Result<skelett::animator::Modifier> {
    use skelett::animator::{Modifier, SharedGround};
    use skelett::ik;
    let sk = &asset.skeleton;
    let root = sk.root_transform();
    let up = root.inverse().transform_vector3(Vec3::Y);
    if let Some(p) = &s.poles {
        if p.len() != s.legs.len() {
            return Err(format!(
                "ik feet: {} poles for {} legs (one per leg, or none)",
                p.len(),
                s.legs.len()
            )
            .into());
        }
    }
    let mut legs = Vec::new();
    for (i, names) in s.legs.iter().enumerate() {
        let find = |n: &str| {
            sk.find(n)
                .ok_or_else(|| format!("ik feet: no joint {n:?} in the skeleton"))
        };
        let [hip, knee, ankle] = [find(&names[0])?, find(&names[1])?, find(&names[2])?];
        let below_knee =
            std::iter::successors(sk.parent(ankle), |&j| sk.parent(j)).any(|j| j == knee);
        let chain = if below_knee {
            ik::TwoBoneChain::new(sk, [hip, knee, ankle])
        } else {
            ik::TwoBoneChain::reaching_joint(sk, [hip, knee], ankle)
        }
        .map_err(|e| format!("ik feet: leg {names:?}: {e}"))?;
        let leg = ik::Leg::from_rest(sk, chain, ankle, up)
            .map_err(|e| format!("ik feet: leg {names:?}: {e}"))?;
        // Knees forward (+Z, where glTF characters face) unless given, in model space.
        let pole = s.poles.as_ref().map_or(Vec3::Z, |p| Vec3::from(p[i]));
        legs.push(leg.with_pole(root.inverse().transform_vector3(pole)));
    }
    let pelvis = match &s.pelvis {
        Some(n) => Some(
            sk.find(n)
                .ok_or_else(|| format!("ik feet: no joint {n:?} for the pelvis"))?,
        ),
        None => None,
    };
    let feet = ik::Feet::new(sk, legs, pelvis, up)?;
    let ground: SharedGround = match s.ground {
        GroundSpec::Slope(deg) => {
            if !(deg.is_finite() && deg.abs() < 90.0) {
                return Err(
                    format!("ik feet: slope {deg} must be between -90 and 90 degrees").into(),
                );
            }
            Arc::new(ik::Plane::slope_toward(deg, Vec3::Z))
        }
        GroundSpec::Plane { point, normal } => Arc::new(
            ik::Plane::new(point.into(), normal.into())
                .map_err(|e| format!("ik feet: ground plane: {e}"))?,
        ),
        GroundSpec::Stairs { steps, rise, depth } => {
            if !((1..=10_000).contains(&steps)
                && rise.is_finite()
                && depth.is_finite()
                && depth > 0.0)
            {
                return Err(
                    "ik feet: stairs need 1 to 10000 steps, a finite rise and a positive depth"
                        .into(),
                );
            }
            // Stairs rise along +X; turn them to rise along +Z.
            let mesh = ik::TriangleMesh::stairs(steps, rise, depth, 1000.0);
            let turn = glam::Quat::from_rotation_y(-std::f32::consts::FRAC_PI_2);
            let positions: Vec<Vec3> = mesh
                .triangles()
                .iter()
                .flatten()
                .map(|p| turn * *p)
                .collect();
            let indices: Vec<u32> = (0..positions.len() as u32).collect();
            Arc::new(ik::TriangleMesh::new(&positions, &indices)?)
        }
    };
    let first = feet.legs().first().ok_or("ik feet: no legs")?;
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(sk, sk.rest_pose(), 0, &mut model)?;
    let leg_length = first.length(&model);
    let drop = match s.max_pelvis_drop {
        Some(d) => root.inverse().transform_vector3(Vec3::Y * d).length(),
        None => 0.2 * leg_length,
    };
    let mut m = Modifier::feet(feet.clone(), ik::Placement::new(root, drop), ground);
    for c in clips {
        m = m.with_contacts(c.clone(), feet.contacts(sk, c));
    }
    Ok(m)
}

fn mask(asset: &Asset, spec: &MaskSpec) -> Result<JointMask> {
    if let Some(name) = &spec.animated_by {
        if !(spec.subtree.is_empty() && spec.joints.is_empty() && spec.exclude.is_empty()) {
            return Err("mask: animated_by stands alone (no subtree, joints or exclude)".into());
        }
        let c = asset
            .clip_index(name)
            .ok_or_else(|| format!("mask: animated_by: no clip {name:?}"))?;
        return Ok(JointMask::animated_by(&asset.skeleton, &asset.clips[c])?);
    }
    JointMask::from_names(&asset.skeleton, &spec.subtree, &spec.joints, &spec.exclude).map_err(
        |(list, i)| {
            let names = match list {
                "subtree" => &spec.subtree,
                "joints" => &spec.joints,
                _ => &spec.exclude,
            };
            format!("mask: no joint {:?} in the skeleton", names[i]).into()
        },
    )
}

/// A play script bound to an asset: what `skelett play` prints and `skelett render --script`
/// draws. [`ScriptPlayer::start`] makes the animator with the script's layers and root
/// motion; [`ScriptPlayer::run_due`] runs the commands due by a time.
pub struct ScriptPlayer<'a> {
    asset: &'a Asset,
    script: Script,
    /// The asset's clips with the script's events added.
    clips: Vec<Arc<Clip>>,
    /// Command indices in the order they run (by time, then as written).
    order: Vec<usize>,
    duration: f32,
    /// With `--graph`: the graph the script's `set` commands drive.
    graph: Option<Arc<Graph>>,
    /// The script's file (named in errors).
    path: std::path::PathBuf,
}

/// What a script drives.
enum Driver {
    Animator(Box<Animator>),
    Graph(Box<GraphInstance>),
}

/// One run of a [`ScriptPlayer`]: the animator (or graph) and how far the commands have
/// gone.
pub struct ScriptState {
    driver: Driver,
    next: usize,
    iks: Vec<(String, usize)>,
}

impl ScriptState {
    /// The animator: the script's own, or the one the graph plays its states on.
    pub fn anim(&mut self) -> &mut Animator {
        match &mut self.driver {
            Driver::Animator(a) => a,
            Driver::Graph(g) => g.animator_mut(),
        }
    }

    /// The graph instance, with `--graph`.
    pub fn graph(&self) -> Option<&GraphInstance> {
        match &self.driver {
            Driver::Graph(g) => Some(g),
            Driver::Animator(_) => None,
        }
    }

    /// Advances by `dt`: the graph's update (transitions, then its animator), or the
    /// animator's.
    pub fn update(&mut self, dt: f32) -> UpdateResult<'_> {
        match &mut self.driver {
            Driver::Animator(a) => a.update(dt),
            Driver::Graph(g) => {
                let r = g.update(dt);
                UpdateResult {
                    events: r.events,
                    root_motion: r.root_motion,
                }
            }
        }
    }
}

impl<'a> ScriptPlayer<'a> {
    /// Reads and checks the script at `path` for `asset`, driving the graph file `graph`
    /// when given (its commands then set parameters).
    pub fn load(asset: &'a Asset, path: &Path, graph: Option<&Path>) -> Result<Self> {
        Self::load_unnamed(asset, path, graph).map_err(|e| named(path, graph, e))
    }

    fn load_unnamed(asset: &'a Asset, path: &Path, graph: Option<&Path>) -> Result<Self> {
        let bytes = skelett_io::read_input(path)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{}: not UTF-8 text at byte {}",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        Self::parse_unnamed(asset, &text, path, graph)
    }

    /// Parses and checks the script `text` for `asset`, as [`ScriptPlayer::load`] does;
    /// `path` is what errors call it (and only the graph, when given, is read from a file).
    ///
    /// ```
    /// use std::path::Path;
    /// let (fox, _) = skelett_cli::load(None)?;
    /// let script = r#"{"duration": 1, "commands": [{"at": 0, "play": "Walk"}]}"#;
    /// let player = skelett_cli::play::ScriptPlayer::parse(&fox, script, Path::new("s.json"), None)?;
    /// let mut state = player.start()?;
    /// player.run_due(&mut state, 0.0)?;
    /// state.update(0.5);
    /// player.check_done(&state)?;
    /// # Ok::<(), skelett_cli::Error>(())
    /// ```
    ///
    /// # Errors
    /// The script is not the JSON described in the README, or names clips, joints or layers
    /// the asset or graph lacks; the message names `path` and the element.
    pub fn parse(asset: &'a Asset, text: &str, path: &Path, graph: Option<&Path>) -> Result<Self> {
        Self::parse_unnamed(asset, text, path, graph).map_err(|e| named(path, graph, e))
    }

    fn parse_unnamed(
        asset: &'a Asset,
        text: &str,
        path: &Path,
        graph: Option<&Path>,
    ) -> Result<Self> {
        // Typed first, for messages with a line and column; then the numbers' range.
        let script: Script =
            serde_json::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some((at, x)) = skelett_io::json_past_f32(&value) {
            return Err(format!(
                "{}: {at}: {x:e} is outside the range of the 32-bit numbers skelett uses \
                 (at most {:e})",
                path.display(),
                f32::MAX
            )
            .into());
        }
        let mut clips: Vec<Arc<Clip>> = asset.clips.clone();
        for (i, e) in script.events.iter().enumerate() {
            let ci = asset
                .clip_index(&e.clip)
                .ok_or_else(|| format!("events[{i}]: no clip {:?}", e.clip))?;
            let c = (*clips[ci]).clone().with_events(vec![ClipEvent {
                time: e.time,
                name: e.name.clone(),
                payload: e.payload.clone(),
            }])?;
            clips[ci] = Arc::new(c);
        }
        let mut order: Vec<usize> = (0..script.commands.len()).collect();
        order.sort_by(|&a, &b| {
            script.commands[a]
                .at
                .total_cmp(&script.commands[b].at)
                .then(a.cmp(&b))
        });
        let last_at = script.commands.iter().map(|c| c.at).fold(0.0f32, f32::max);
        let duration = script.duration.unwrap_or(last_at + 1.0).max(0.0);
        let graph = match graph {
            None => None,
            Some(g) => {
                if !script.layers.is_empty() {
                    return Err(format!(
                        "{}: \"layers\" come from the graph when it plays; leave them out",
                        path.display()
                    )
                    .into());
                }
                let def = skelett_io::graph_file::load(g)?;
                Some(Arc::new(skelett_io::graph_file::build(
                    &def, asset, &clips, g,
                )?))
            }
        };
        Ok(ScriptPlayer {
            asset,
            script,
            clips,
            order,
            duration,
            graph,
            path: path.to_path_buf(),
        })
    }

    /// Seconds the script runs: its `duration`, or one second past its last command.
    pub fn duration(&self) -> f32 {
        self.duration
    }

    /// Whether the script asks for root motion.
    fn root_motion(&self) -> bool {
        self.script.root_motion.is_some()
    }

    /// A fresh animator with the script's layers, event policy and root motion, no command
    /// run yet.
    pub fn start(&self) -> Result<ScriptState> {
        let (asset, script) = (self.asset, &self.script);
        let mut graph = self.graph.clone().map(GraphInstance::new);
        let mut own = Animator::new(asset.skeleton.clone());
        let anim = match &mut graph {
            Some(g) => g.animator_mut(),
            None => &mut own,
        };
        anim.set_event_policy(EventPolicy {
            min_weight: script.event_min_weight.unwrap_or(0.5),
            sync_leader_only: script.sync_leader_only.unwrap_or(true),
        });
        anim.set_notifications(script.notifications.unwrap_or(false));
        for (i, l) in script.layers.iter().enumerate() {
            let m = l
                .mask
                .as_ref()
                .map(|m| mask(asset, m))
                .transpose()
                .map_err(|e| format!("layers[{i}]: {e}"))?;
            let mode = match l.mode {
                Mode::Override => BlendMode::Override,
                Mode::Additive => BlendMode::Additive,
            };
            anim.add_layer(mode, l.weight, m)
                .map_err(|e| format!("layers[{i}]: {e}"))?;
        }
        if let Some(r) = &script.root_motion {
            let joint = asset
                .skeleton
                .find(&r.joint)
                .ok_or_else(|| format!("root_motion: no joint {:?}", r.joint))?;
            anim.set_root_motion(Some(RootMotionConfig {
                joint,
                up: Vec3::from(r.up).normalize_or(Vec3::Y),
                forward: Vec3::from(r.forward).normalize_or(Vec3::Z),
            }))?;
        }
        Ok(ScriptState {
            driver: match graph {
                Some(g) => Driver::Graph(Box::new(g)),
                None => Driver::Animator(Box::new(own)),
            },
            next: 0,
            iks: Vec::new(),
        })
    }

    /// Runs the commands due at or before `t` seconds that have not run yet.
    pub fn run_due(&self, state: &mut ScriptState, t: f64) -> Result<()> {
        while let Some(&i) = self.order.get(state.next) {
            let c = &self.script.commands[i];
            if c.at as f64 > t + 1e-9 {
                break;
            }
            match &mut state.driver {
                Driver::Animator(a) => run_command(a, self.asset, &self.clips, &mut state.iks, c),
                Driver::Graph(g) => {
                    run_graph_command(g, self.asset, &self.clips, &mut state.iks, c)
                }
            }
            .map_err(|e| {
                format!(
                    "{}: commands[{i}] (at {} s): {e}",
                    self.path.display(),
                    c.at
                )
            })?;
            state.next += 1;
        }
        Ok(())
    }

    /// An error if commands are left that come after the script's end.
    pub fn check_done(&self, state: &ScriptState) -> Result<()> {
        match self.order.get(state.next) {
            None => Ok(()),
            Some(&i) => Err(format!(
                "commands[{i}] (at {} s) and {} more come after the script's end ({} s); \
                 lengthen \"duration\"",
                self.script.commands[i].at,
                self.order.len() - state.next - 1,
                self.duration
            )
            .into()),
        }
    }
}

/// The most steps one `play` run takes (a day at 120 Hz).
const MAX_STEPS: usize = 10_368_000;

/// The most iterations a script's chain IK takes per step (a bound on a step's cost).
const MAX_IK_ITERATIONS: u32 = 1_000;

/// Runs `skelett play`, writing each step to `out` as it is computed: a long run at a small
/// `--dt` with `--joints` never holds its whole output (text or JSON) in memory. A closed pipe
/// (`skelett play ... | head`) ends the run quietly. A script error found during the run
/// (a command that cannot run at its time) ends it with the steps so far already printed (the
/// JSON then unclosed) and the error on standard error.
pub fn run(
    out: &mut dyn std::io::Write,
    file: Option<&Path>,
    script: &Path,
    graph: Option<&Path>,
    dt: f32,
    json: bool,
    joints: bool,
) -> Result<()> {
    let (asset, source) = crate::load(file)?;
    let player = ScriptPlayer::load(&asset, script, graph)?;
    let mut state = player.start().map_err(|e| named(script, graph, e))?;
    let duration = player.duration();
    // A bound on the run, said rather than applied silently.
    let steps = (f64::from(duration) / f64::from(dt)).round();
    if steps.is_nan() || steps > MAX_STEPS as f64 {
        return Err(format!(
            "{}: a duration of {duration} s at --dt {dt} s is {steps} steps, more than the \
             {MAX_STEPS} a run takes (shorten the script or raise --dt)",
            script.display()
        )
        .into());
    }
    let steps = steps as usize;

    let skin_joints = asset.skin_joints(0);
    let root = asset.skeleton.root_transform();
    let mut model = vec![Mat4::IDENTITY; asset.skeleton.len()];
    let mut sink = Sink {
        out,
        json,
        written: 0,
    };
    let opened = if json {
        // The bytes serde_json's value writes for the whole object (keys sorted, numbers as
        // f64), with the steps streamed.
        sink.put(&format!(
            "{{\"dt\":{},\"source\":{},\"steps\":[",
            serde_json::to_value(dt)?,
            serde_json::to_value(&source)?
        ))
    } else {
        sink.put(&format!("{source}: {steps} steps of {dt} s\n"))
    };
    if closed(opened)? {
        return Ok(());
    }
    for step in 0..steps {
        let t0 = step as f64 * dt as f64;
        player
            .run_due(&mut state, t0)
            .map_err(|e| named(script, graph, e))?;
        let r = state.update(dt);
        let mut events: Vec<EventOut> = r
            .events
            .iter()
            .map(|e| EventOut {
                name: e.name().to_string(),
                clip: e.clip.name().to_string(),
                time: e.time(),
                layer: e.layer,
                backward: e.backward,
                payload: e.payload().map(str::to_string),
                state: None,
                kind: None,
            })
            .collect();
        let rm = player.root_motion().then(|| RootOut {
            translation: r.root_motion.translation.to_array(),
            yaw: r.root_motion.yaw,
        });
        let (mut states, mut transitions) = (None, Vec::new());
        if let Some(g) = state.graph() {
            let graph = g.graph();
            // State events before the clip events of the same update: transitions run first.
            let state_events = g.state_events().iter().map(|e| EventOut {
                name: e.name.to_string(),
                clip: String::new(),
                time: 0.0,
                layer: e.layer,
                backward: false,
                payload: None,
                state: Some(graph.state_full_name(e.state).to_string()),
                kind: Some(match e.kind {
                    StateEventKind::Enter => "enter",
                    StateEventKind::Exit => "exit",
                }),
            });
            events = state_events.chain(events).collect();
            transitions = g
                .transitions_taken()
                .iter()
                .map(|t| TransitionOut {
                    layer: t.layer,
                    from: graph.state_full_name(t.from).to_string(),
                    to: graph.state_full_name(t.to).to_string(),
                    path: t.path.to_string(),
                    interrupted: t.interrupted,
                })
                .collect();
            states = Some(
                (0..graph.layer_count())
                    .map(|l| graph.state_full_name(g.current_state(l)).to_string())
                    .collect(),
            );
        }
        let js = if joints {
            local_to_model(&asset.skeleton, state.anim().pose(), 0, &mut model)?;
            Some(
                skin_joints
                    .iter()
                    .map(|&j| JointOut {
                        name: asset.skeleton.name(j).to_string(),
                        world: (root * model[j as usize]).to_cols_array(),
                    })
                    .collect(),
            )
        } else {
            None
        };
        let step_out = Step {
            t: t0 + dt as f64,
            states,
            transitions,
            events,
            root_motion: rm,
            joints: js,
        };
        if closed(sink.step(step, &step_out))? {
            return Ok(());
        }
    }
    player
        .check_done(&state)
        .map_err(|e| named(script, graph, e))?;
    if json {
        closed(sink.put("]}\n"))?;
    }
    Ok(())
}

/// `e` naming the script it comes from, unless it already names the script or the graph.
fn named(script: &Path, graph: Option<&Path>, e: crate::Error) -> crate::Error {
    let msg = e.to_string();
    let names = |p: &Path| msg.starts_with(&p.display().to_string());
    if names(script) || graph.is_some_and(names) {
        e
    } else {
        format!("{}: {msg}", script.display()).into()
    }
}

/// Where `play` writes, step by step.
struct Sink<'w> {
    out: &'w mut dyn std::io::Write,
    json: bool,
    /// Bytes written so far, held to the output limit (`--max-output-mb`).
    written: u64,
}

impl Sink<'_> {
    /// Writes `s` with control characters escaped, as every command's output is; refuses
    /// to pass the output limit.
    fn put(&mut self, s: &str) -> std::io::Result<()> {
        let text = crate::term_text(s);
        self.written = self.written.saturating_add(text.len() as u64);
        let max = skelett_io::max_output_bytes();
        if self.written > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!(
                    "the output passed the output limit of {max} bytes (--max-output-mb \
                     raises it)"
                ),
            ));
        }
        self.out.write_all(text.as_bytes())
    }

    /// Step `i` as a JSON array element, or as text lines (steps with nothing to say are
    /// left out of the text).
    fn step(&mut self, i: usize, s: &Step) -> std::io::Result<()> {
        if self.json {
            let sep = if i == 0 { "" } else { "," };
            let js = serde_json::to_value(s).map_err(std::io::Error::other)?;
            return self.put(&format!("{sep}{js}"));
        }
        if s.events.is_empty()
            && s.transitions.is_empty()
            && s.root_motion.is_none()
            && s.joints.is_none()
        {
            return Ok(());
        }
        let mut line = format!("t={:.4}", s.t);
        if let Some(states) = &s.states {
            line += &format!("  states: {}", states.join(" | "));
        }
        for t in &s.transitions {
            line += &format!(
                "  layer {}: {} -> {}{}",
                t.layer,
                t.from,
                t.to,
                if t.interrupted { " (interrupting)" } else { "" }
            );
        }
        if !s.events.is_empty() {
            let names: Vec<String> = s
                .events
                .iter()
                .map(|e| match (&e.state, e.kind) {
                    (Some(st), Some(k)) => format!("{} ({k} {st})", e.name),
                    _ => format!("{} ({} @ {:.4})", e.name, e.clip, e.time),
                })
                .collect();
            line += &format!("  events: {}", names.join(", "));
        }
        if let Some(r) = &s.root_motion {
            line += &format!(
                "  root: [{:.5}, {:.5}, {:.5}] yaw {:.5}",
                r.translation[0], r.translation[1], r.translation[2], r.yaw
            );
        }
        line.push('\n');
        if let Some(js) = &s.joints {
            for j in js {
                let w = &j.world;
                line += &format!(
                    "    {} [{:.5}, {:.5}, {:.5}]\n",
                    j.name, w[12], w[13], w[14]
                );
            }
        }
        self.put(&line)
    }
}

/// `Ok(true)` when the reader went away (a closed pipe ends the run quietly), `Ok(false)`
/// when written, the error otherwise.
fn closed(written: std::io::Result<()>) -> Result<bool> {
    match written {
        Ok(()) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(true),
        Err(e) => Err(format!("cannot write the output: {e}").into()),
    }
}
