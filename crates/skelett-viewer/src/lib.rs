//! # skelett-viewer: the interactive viewer behind `skelett view`
//!
//! An eframe/egui window on the same wgpu device as [`skelett_render`]: each frame the
//! [`Animator`] advances, the pose goes through `local_to_model`, and the renderer skins and
//! draws the character into its own texture, which egui shows in the central panel (no
//! readback). The side panel drives the animator:
//!
//! - the clip list (click to play, or to cross-fade with the chosen duration);
//! - play / pause / stop (stop shows the rest pose), speed, a timeline scrubber;
//! - a second layer (override or additive) with its clip, weight and a joint-subtree mask;
//! - skin / wireframe / skeleton / grid toggles, and an orbit camera (drag to turn, scroll
//!   to zoom, double-click to frame the character again);
//! - IK: a look-at target (the cyan cross; drag it in the view) that the head and the two
//!   joints above it turn toward, and foot placement on a ground whose slope a slider sets
//!   (legs found by [`skelett::ik::Feet::guess`]), both fading in and out as modifiers of the
//!   animator;
//! - the log of fired events (the file's own, plus footsteps found by
//!   `skelett::contacts`) and the frame-time readout;
//! - with an animation graph (`skelett view FILE --graph G.json`), instead of the clip,
//!   layer and IK controls: the graph's parameters as sliders (floats, ints), checkboxes
//!   (bools) and buttons (triggers), each layer's current state with its cycles played or
//!   the progress of the transition under way, and transitions and state events in the log.
//!
//! It lives in its own crate so the core, the importers and the CLI build without a window
//! toolkit. `--exit-after N` and `--screenshot FILE` let CI run it under Xvfb.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use eframe::egui;
use glam::{Mat4, Vec3};
use skelett::animator::{
    Animator, BlendMode, Curve, EventPolicy, Modifier, PlayOptions, SharedGround,
};
use skelett::graph::{GraphInstance, ParameterId, ParameterKind, StateEventKind};
use skelett::ik::{Aim, Feet, Placement, Plane};
use skelett::{local_to_model, Clip, JointIndex, JointMask, Skeleton};
use skelett_io::Asset;
use skelett_render::{Bounds, Character, Gpu, OrbitCamera, RenderOptions, Renderer};

/// How the viewer starts and ends.
#[derive(Clone, Debug, Default)]
pub struct ViewerOptions {
    /// Window title (usually the file's name).
    pub title: String,
    /// Close after this many frames (for scripted runs and CI).
    pub exit_after: Option<u32>,
    /// Save a screenshot of the whole window as PNG before closing (needs `exit_after`; the
    /// last frame is captured).
    pub screenshot: Option<PathBuf>,
    /// Start with the look-at target on.
    pub look_at: bool,
    /// Start with the ground sloped by this many degrees (rising toward the character's
    /// front, +Z) and the feet placed on it.
    pub slope: Option<f32>,
    /// An animation graph to play instead of clips (its definition and its file, named in
    /// errors): the panel then lists its parameters as sliders, checkboxes and buttons, and
    /// shows each layer's state and transition progress.
    pub graph: Option<(skelett::graph::GraphDef, PathBuf)>,
}

/// What stops the viewer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewerError {
    /// The asset has no clip to play.
    #[error("the file has no clips to view")]
    NoClips,
    /// The window could not be opened (eframe's message: its error is not `Send`).
    #[error("the viewer window could not be opened: {0}")]
    Window(String),
    /// The character has nothing to frame (no mesh and no joint position).
    #[error("nothing to frame: the character has no mesh and no joint positions")]
    NothingToFrame,
    /// A screenshot was asked for and the window system never delivered it.
    #[error("the window system never delivered the screenshot")]
    NoScreenshot,
    /// eframe started without a wgpu device.
    #[error("the viewer started without a wgpu device")]
    NoWgpu,
    /// Rendering, or writing the screenshot, failed.
    #[error(transparent)]
    Render(#[from] skelett_render::RenderError),
    /// The animation did not fit (a clip, a layer or the skeleton).
    #[error(transparent)]
    Skelett(#[from] skelett::Error),
    /// The animation graph does not fit the file (an unknown clip, joint, ...).
    #[error(transparent)]
    Graph(#[from] skelett_io::Error),
}

/// Opens the viewer on `asset` and returns when the window closes.
///
/// # Errors
/// [`ViewerError`]: no clips, no window or GPU, or the first failure while running (a
/// screenshot that cannot be written, for one).
pub fn run(mut asset: Asset, options: ViewerOptions) -> Result<(), ViewerError> {
    if asset.clips.is_empty() {
        return Err(ViewerError::NoClips);
    }
    // Footsteps on every clip, so the event log has something to show for locomotion.
    for clip in &mut asset.clips {
        let steps = skelett::contacts::footstep_events(&asset.skeleton, clip);
        if !steps.is_empty() {
            *clip = Arc::new((**clip).clone().with_events(steps)?);
        }
    }
    let native = eframe::NativeOptions {
        renderer: eframe::Renderer::Wgpu,
        viewport: egui::ViewportBuilder::default()
            .with_title(format!("skelett: {}", options.title))
            .with_inner_size([1180.0, 720.0]),
        ..Default::default()
    };
    let failure: Arc<std::sync::Mutex<Option<ViewerError>>> = Arc::default();
    let fail = failure.clone();
    eframe::run_native(
        "skelett viewer",
        native,
        Box::new(move |cc| {
            Viewer::new(cc, asset, options, fail)
                .map(|v| Box::new(v) as Box<dyn eframe::App>)
                .map_err(|e| e.to_string().into())
        }),
    )
    .map_err(|e| ViewerError::Window(e.to_string()))?;
    let message = failure.lock().ok().and_then(|mut f| f.take());
    match message {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

const OVERRIDE_LAYER: usize = 1;
const ADDITIVE_LAYER: usize = 2;

struct Viewer {
    asset: Asset,
    additive_clips: Vec<Option<Arc<Clip>>>,
    animator: Animator,
    gpu: Gpu,
    renderer: Renderer,
    texture: egui::TextureId,
    egui_renderer: Arc<egui::mutex::RwLock<egui_wgpu::Renderer>>,
    camera: OrbitCamera,
    home: OrbitCamera,
    model: Vec<Mat4>,
    // Base layer.
    current: usize,
    paused: bool,
    stopped: bool,
    speed: f32,
    fade: f32,
    // Second layer.
    layer_on: bool,
    layer_additive: bool,
    layer_clip: usize,
    layer_weight: f32,
    layer_mask: Option<usize>,
    // Display.
    skin: bool,
    wireframe: bool,
    skeleton: bool,
    grid: bool,
    // IK.
    /// The look-at modifier's index and its target (scene space); `None` without a head.
    look: Option<(usize, Vec3)>,
    look_on: bool,
    dragging_target: bool,
    /// The foot-placement modifier's index, or why there is none.
    feet: Result<usize, String>,
    feet_on: bool,
    /// Ground slope in degrees (rising along +Z).
    slope: f32,
    // Morph targets.
    /// Per skeleton morph channel, the weight a slider holds it at (`None`: as animated).
    morph_hold: Vec<Option<f32>>,
    /// The weights drawn: the animated ones with the held ones put in.
    morph_weights: Vec<f32>,
    /// Where the ground grid is drawn: centre and half extent.
    ground_area: (Vec3, f32),
    /// With a graph: the character playing it (then the clip controls are hidden).
    graph: Option<GraphInstance>,
    events: VecDeque<String>,
    time: f64,
    frame_ms: f32,
    anim_ms: f32,
    render_ms: f32,
    // Scripted runs.
    options: ViewerOptions,
    frames: u32,
    screenshot_asked: bool,
    failure: Arc<std::sync::Mutex<Option<ViewerError>>>,
}

impl Viewer {
    fn new(
        cc: &eframe::CreationContext<'_>,
        asset: Asset,
        options: ViewerOptions,
        failure: Arc<std::sync::Mutex<Option<ViewerError>>>,
    ) -> Result<Viewer, ViewerError> {
        let rs = cc.wgpu_render_state.as_ref().ok_or(ViewerError::NoWgpu)?;
        let channels = asset.skeleton.morph_channel_count();
        let gpu = Gpu::from_device(rs.device.clone(), rs.queue.clone(), rs.adapter.get_info());
        let mut renderer = Renderer::new(
            &gpu,
            Character::new(&asset.skeleton, &asset.skins, &asset.meshes, &asset.images),
            RenderOptions {
                width: 800,
                height: 600,
                skeleton: true,
                ..Default::default()
            },
        )?;
        let texture = rs.renderer.write().register_native_texture(
            &rs.device,
            renderer.target(),
            wgpu_filter(),
        );
        let sk = asset.skeleton.clone();
        let mut animator = Animator::new(sk.clone());
        animator.set_event_policy(EventPolicy {
            min_weight: 0.0,
            sync_leader_only: false,
        });
        animator.add_layer(BlendMode::Override, 0.0, None)?;
        animator.add_layer(BlendMode::Additive, 0.0, None)?;
        animator.play(0, asset.clips[0].clone(), PlayOptions::default())?;
        // Frame the character over its first clip.
        let mut model = vec![Mat4::IDENTITY; sk.len()];
        let mut bounds: Option<Bounds> = None;
        {
            let mut probe = Animator::new(sk.clone());
            let clip = asset.clips[0].clone();
            probe.play(0, clip.clone(), PlayOptions::default())?;
            let step = (clip.duration() / 16.0).max(1e-3);
            for _ in 0..17 {
                probe.update(step);
                local_to_model(&sk, probe.pose(), 0, &mut model)?;
                if let Some(b) = renderer.bounds(&model) {
                    bounds = Some(bounds.map_or(b, |a| a.union(b)));
                }
            }
        }
        let bounds = bounds.ok_or(ViewerError::NothingToFrame)?;
        let home = OrbitCamera::framing(bounds, 4.0 / 3.0);
        renderer.set_ground(
            Vec3::new(bounds.center().x, bounds.min.y, bounds.center().z),
            bounds.radius() * 1.5,
        );
        let additive_clips = vec![None; asset.clips.len()];
        let layer_clip = asset.clips.len().min(2) - 1;
        let look = look_at(&mut animator, &sk, bounds)?;
        let feet = feet(&mut animator, &sk, &asset.clips);
        let ground_area = (
            Vec3::new(bounds.center().x, bounds.min.y, bounds.center().z),
            bounds.radius() * 1.5,
        );
        let look_on = options.look_at && look.is_some();
        if let (true, Some((i, _))) = (look_on, look) {
            animator.fade_modifier(i, 1.0, 0.0)?;
        }
        let slope = options
            .slope
            .filter(|s| s.is_finite())
            .unwrap_or(0.0)
            .clamp(-40.0, 40.0);
        let feet_on = options.slope.is_some() && feet.is_ok();
        if let (true, Ok(i)) = (feet_on, &feet) {
            animator.fade_modifier(*i, 1.0, 0.0)?;
        }
        // The graph is built with the viewer's clips (footstep events added).
        let graph =
            match &options.graph {
                Some((def, path)) => Some(GraphInstance::new(Arc::new(
                    skelett_io::graph_file::build(def, &asset, &asset.clips, path)?,
                ))),
                None => None,
            };
        Ok(Viewer {
            graph,
            additive_clips,
            animator,
            gpu,
            renderer,
            texture,
            egui_renderer: rs.renderer.clone(),
            camera: home,
            home,
            model,
            current: 0,
            paused: false,
            stopped: false,
            speed: 1.0,
            fade: 0.3,
            layer_on: false,
            layer_additive: false,
            layer_clip,
            layer_weight: 1.0,
            layer_mask: None,
            skin: true,
            wireframe: false,
            skeleton: true,
            grid: true,
            look,
            look_on,
            dragging_target: false,
            feet,
            feet_on,
            slope: f32::NAN, // set below, with the ground
            ground_area,
            morph_hold: vec![None; channels],
            morph_weights: vec![0.0; channels],
            events: VecDeque::new(),
            time: 0.0,
            frame_ms: 0.0,
            anim_ms: 0.0,
            render_ms: 0.0,
            options,
            frames: 0,
            screenshot_asked: false,
            failure,
            asset,
        }
        .with_slope(slope))
    }

    /// Sets the ground's slope: the feet modifier's plane and the drawn grid.
    fn with_slope(mut self, degrees: f32) -> Self {
        self.set_slope(degrees);
        self
    }

    fn set_slope(&mut self, degrees: f32) {
        if degrees == self.slope {
            return;
        }
        self.slope = degrees;
        let plane = slope_plane(degrees);
        if let Ok(i) = self.feet {
            if let Some(Modifier::Feet { ground, .. }) = self.animator.modifier_mut(i) {
                *ground = Arc::new(plane) as SharedGround;
            }
        }
        let (center, half) = self.ground_area;
        if degrees == 0.0 {
            self.renderer.set_ground(center, half);
        } else {
            let tan = degrees.to_radians().tan();
            self.renderer
                .set_ground_surface(center, half, &|_x, z| Some(z * tan));
        }
    }

    fn log(&mut self, line: String) {
        self.events.push_front(line);
        self.events.truncate(200);
    }

    /// Logs a failure; the first one is what [`run`] returns.
    fn fail(&mut self, error: impl Into<ViewerError>) {
        let error = error.into();
        self.log(format!("error: {error}"));
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert(error);
        }
    }

    fn play(&mut self, clip: usize, crossfade: bool) {
        let c = self.asset.clips[clip].clone();
        let opts = PlayOptions {
            speed: self.speed,
            sync_group: Some(1),
            ..Default::default()
        };
        let result = if crossfade && !self.stopped {
            self.animator
                .crossfade(0, c, self.fade, Curve::SmoothStep, opts)
        } else {
            self.animator.play(0, c, opts)
        };
        if let Err(e) = result {
            self.fail(e);
        }
        self.current = clip;
        self.stopped = false;
        self.paused = false;
        let _ = self.animator.set_paused(0, false);
    }

    /// Applies the second-layer settings to the animator's two spare layers.
    fn apply_layer(&mut self) {
        let (on, off) = if self.layer_additive {
            (ADDITIVE_LAYER, OVERRIDE_LAYER)
        } else {
            (OVERRIDE_LAYER, ADDITIVE_LAYER)
        };
        let _ = self.animator.stop(off);
        let _ = self.animator.set_layer_weight(off, 0.0);
        if !self.layer_on {
            let _ = self.animator.stop(on);
            let _ = self.animator.set_layer_weight(on, 0.0);
            return;
        }
        let clip = if self.layer_additive {
            let cache = &mut self.additive_clips[self.layer_clip];
            cache
                .get_or_insert_with(|| {
                    Arc::new(self.asset.clips[self.layer_clip].to_additive_from_first_frame())
                })
                .clone()
        } else {
            self.asset.clips[self.layer_clip].clone()
        };
        let mask = self.layer_mask.and_then(|j| {
            JointMask::subtree(&self.asset.skeleton, self.asset.skeleton.name(j as u16))
        });
        let result = self
            .animator
            .play(on, clip, PlayOptions::default())
            .and_then(|()| self.animator.set_layer_weight(on, self.layer_weight))
            .and_then(|()| self.animator.set_layer_mask(on, mask));
        if let Err(e) = result {
            self.fail(e);
        }
    }

    /// The graph's parameters (sliders, checkboxes, buttons) and each layer's state and
    /// transition progress.
    fn graph_panel(&mut self, ui: &mut egui::Ui) {
        let Some(g) = &mut self.graph else { return };
        let graph = g.graph().clone();
        ui.heading("Graph parameters");
        for (i, p) in graph.parameters().iter().enumerate() {
            let id = ParameterId(i as u32);
            let v = g.value(id);
            let _ = match p.kind {
                ParameterKind::Float => {
                    let mut x = v;
                    let r = ui.add(
                        egui::Slider::new(&mut x, -5.0..=5.0)
                            .clamping(egui::SliderClamping::Never)
                            .text(&p.name),
                    );
                    if r.changed() {
                        g.set_float(id, x)
                    } else {
                        Ok(())
                    }
                }
                ParameterKind::Int => {
                    let mut x = v as i32;
                    let r = ui.add(
                        egui::Slider::new(&mut x, -10..=10)
                            .clamping(egui::SliderClamping::Never)
                            .text(&p.name),
                    );
                    if r.changed() {
                        g.set_int(id, x)
                    } else {
                        Ok(())
                    }
                }
                ParameterKind::Bool => {
                    let mut b = v != 0.0;
                    if ui.checkbox(&mut b, &p.name).changed() {
                        g.set_bool(id, b)
                    } else {
                        Ok(())
                    }
                }
                ParameterKind::Trigger => {
                    let label = if v != 0.0 {
                        format!("{} (set)", p.name)
                    } else {
                        p.name.clone()
                    };
                    if ui.button(label).clicked() {
                        g.set_trigger(id)
                    } else {
                        Ok(())
                    }
                }
            };
        }
        ui.separator();
        ui.heading("Layers");
        for l in 0..graph.layer_count() {
            let state = graph.state_full_name(g.current_state(l));
            let name = graph.layer_name(l).unwrap_or("");
            match g.transition(l) {
                Some(t) => {
                    ui.label(format!(
                        "{name}: {} -> {state}",
                        graph.state_full_name(t.from)
                    ));
                    let progress = if t.duration > 0.0 {
                        (t.elapsed / t.duration).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    ui.add(egui::ProgressBar::new(progress).show_percentage());
                }
                None => {
                    ui.label(format!("{name}: {state}  ({:.2} cycles)", g.state_time(l)));
                }
            }
        }
    }

    /// A slider per morph channel: it shows the animated weight, and dragging it holds the
    /// channel at the slider's value until released.
    fn morph_panel(&mut self, ui: &mut egui::Ui) {
        if self.morph_hold.is_empty() {
            return;
        }
        ui.separator();
        ui.horizontal(|ui| {
            ui.heading(format!("Morph targets ({})", self.morph_hold.len()));
            if ui
                .button("release all")
                .on_hover_text("every channel back to its animation")
                .clicked()
            {
                self.morph_hold.iter_mut().for_each(|h| *h = None);
            }
        });
        ui.label("drag: hold at a weight; click the dot: back to the animation");
        // The skeleton shared, not its names copied, every frame.
        let sk = self.asset.skeleton.clone();
        let names = sk.morph_channel_names();
        egui::ScrollArea::vertical()
            .id_salt("morph")
            .max_height(220.0)
            .show(ui, |ui| {
                for (c, name) in names.iter().enumerate() {
                    ui.horizontal(|ui| {
                        let held = self.morph_hold[c].is_some();
                        if ui
                            .selectable_label(held, if held { "●" } else { "○" })
                            .on_hover_text(if held {
                                "held: click to release"
                            } else {
                                "animated"
                            })
                            .clicked()
                        {
                            self.morph_hold[c] = None;
                        }
                        let mut w = self.morph_hold[c].unwrap_or(self.morph_weights[c]);
                        let r = ui.add(
                            egui::Slider::new(&mut w, 0.0..=1.0)
                                .clamping(egui::SliderClamping::Never)
                                .text(name.as_str()),
                        );
                        if r.changed() {
                            self.morph_hold[c] = Some(w);
                        }
                    });
                }
            });
    }

    fn side_panel(&mut self, ui: &mut egui::Ui) {
        if self.graph.is_some() {
            self.graph_panel(ui);
            self.morph_panel(ui);
            ui.separator();
            self.display_panel(ui);
            return;
        }
        ui.heading("Clips");
        ui.label("click: cross-fade; double-click: cut");
        egui::ScrollArea::vertical()
            .id_salt("clips")
            .max_height(180.0)
            .show(ui, |ui| {
                for i in 0..self.asset.clips.len() {
                    let c = &self.asset.clips[i];
                    let label = format!("{}  ({:.2} s)", c.name(), c.duration());
                    let r = ui.selectable_label(i == self.current && !self.stopped, label);
                    if r.double_clicked() {
                        self.play(i, false);
                    } else if r.clicked() {
                        self.play(i, true);
                    }
                }
            });
        ui.add(egui::Slider::new(&mut self.fade, 0.0..=2.0).text("cross-fade s"));
        ui.separator();
        ui.horizontal(|ui| {
            let label = if self.paused { "Play" } else { "Pause" };
            if ui.button(label).clicked() {
                if self.stopped {
                    self.play(self.current, false);
                } else {
                    self.paused = !self.paused;
                    let _ = self.animator.set_paused(0, self.paused);
                }
            }
            if ui.button("Stop").clicked() {
                let _ = self.animator.stop(0);
                self.stopped = true;
                self.paused = true;
            }
        });
        if ui
            .add(egui::Slider::new(&mut self.speed, -2.0..=3.0).text("speed"))
            .changed()
        {
            let _ = self.animator.set_speed(0, self.speed);
        }
        // Timeline of the heaviest base-layer clip.
        let heaviest = self
            .animator
            .players(0)
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(p, _)| (p.clip().clone(), p.local_time()));
        if let Some((clip, mut t)) = heaviest.filter(|_| !self.stopped) {
            let r = ui.add(
                egui::Slider::new(&mut t, clip.start()..=clip.end())
                    .text(format!("{} s", clip.name())),
            );
            if r.changed() {
                let _ = self.animator.seek(0, t, false);
            }
        } else {
            ui.label("stopped: rest pose");
        }
        ui.separator();
        ui.heading("Second layer");
        let mut changed = ui.checkbox(&mut self.layer_on, "enabled").changed();
        ui.horizontal(|ui| {
            changed |= ui
                .radio_value(&mut self.layer_additive, false, "override")
                .changed();
            changed |= ui
                .radio_value(&mut self.layer_additive, true, "additive")
                .changed();
        });
        let names: Vec<String> = self
            .asset
            .clips
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        egui::ComboBox::from_label("clip")
            .selected_text(names[self.layer_clip].clone())
            .show_ui(ui, |ui| {
                for (i, n) in names.iter().enumerate() {
                    changed |= ui.selectable_value(&mut self.layer_clip, i, n).changed();
                }
            });
        let joint_names = self.asset.skeleton.names().to_vec();
        egui::ComboBox::from_label("mask")
            .selected_text(match self.layer_mask {
                None => "whole body".to_string(),
                Some(j) => format!("below {}", joint_names[j]),
            })
            .show_ui(ui, |ui| {
                changed |= ui
                    .selectable_value(&mut self.layer_mask, None, "whole body")
                    .changed();
                for (j, n) in joint_names.iter().enumerate() {
                    changed |= ui
                        .selectable_value(&mut self.layer_mask, Some(j), format!("below {n}"))
                        .changed();
                }
            });
        if ui
            .add(egui::Slider::new(&mut self.layer_weight, 0.0..=1.0).text("weight"))
            .changed()
            && self.layer_on
        {
            let layer = if self.layer_additive {
                ADDITIVE_LAYER
            } else {
                OVERRIDE_LAYER
            };
            let _ = self.animator.set_layer_weight(layer, self.layer_weight);
        }
        if changed {
            self.apply_layer();
        }
        self.morph_panel(ui);
        ui.separator();
        self.ik_panel(ui);
        ui.separator();
        self.display_panel(ui);
    }

    /// Display toggles, timings and the event log.
    fn display_panel(&mut self, ui: &mut egui::Ui) {
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut self.skin, "skin");
            ui.checkbox(&mut self.wireframe, "wireframe");
            ui.checkbox(&mut self.skeleton, "skeleton");
            ui.checkbox(&mut self.grid, "grid");
        });
        ui.label(format!(
            "frame {:.1} ms · animation {:.3} ms · GPU skin + draw {:.2} ms",
            self.frame_ms, self.anim_ms, self.render_ms
        ));
        ui.label(self.gpu.describe());
        ui.separator();
        ui.heading("Events");
        egui::ScrollArea::vertical()
            .id_salt("events")
            .show(ui, |ui| {
                for e in &self.events {
                    ui.monospace(e);
                }
            });
    }
}

impl Viewer {
    fn ik_panel(&mut self, ui: &mut egui::Ui) {
        ui.heading("IK");
        match self.look {
            Some((i, _)) => {
                if ui
                    .checkbox(&mut self.look_on, "look at the cyan cross (drag it)")
                    .changed()
                {
                    let w = if self.look_on { 1.0 } else { 0.0 };
                    if let Err(e) = self.animator.fade_modifier(i, w, 0.3) {
                        self.fail(e);
                    }
                }
            }
            None => {
                ui.label("look-at: no joint named like a head");
            }
        }
        match &self.feet {
            Ok(i) => {
                let i = *i;
                if ui
                    .checkbox(&mut self.feet_on, "feet on the ground")
                    .changed()
                {
                    let w = if self.feet_on { 1.0 } else { 0.0 };
                    if let Err(e) = self.animator.fade_modifier(i, w, 0.3) {
                        self.fail(e);
                    }
                }
            }
            Err(why) => {
                ui.label(format!("foot placement: {why}"));
            }
        }
        let mut slope = self.slope;
        if ui
            .add(egui::Slider::new(&mut slope, -40.0..=40.0).text("ground slope °"))
            .changed()
        {
            self.set_slope(slope);
        }
        if let Some((i, _)) = self.look {
            if let Some((w, Some(e))) = self.animator.modifier_state(i) {
                ui.label(format!("look-at (weight {w:.2}): {e}"));
            }
        }
    }

    /// Starts, continues or ends dragging the look-at target with the pointer; returns
    /// whether the drag is the target's (else it turns the camera).
    fn drag_target(&mut self, response: &egui::Response, rect: egui::Rect, ppp: f32) -> bool {
        let Some((i, target)) = self.look.filter(|_| self.look_on) else {
            return false;
        };
        if response.drag_started() {
            let near = response.interact_pointer_pos().and_then(|p| {
                let (x, y) = self.renderer.project(&self.camera, target)?;
                let d = egui::vec2(x, y) / ppp - (p - rect.min);
                Some(d.length() < 16.0)
            });
            self.dragging_target = near == Some(true);
        }
        if !self.dragging_target {
            return false;
        }
        if response.dragged() {
            let d = response.drag_delta() * ppp;
            let h = self.renderer.options().height as f32;
            let moved = drag_in_view_plane(&self.camera, target, (d.x, d.y), h);
            self.look = Some((i, moved));
            let model = self.asset.skeleton.root_transform().inverse();
            if let Err(e) = self
                .animator
                .set_modifier_target(i, model.transform_point3(moved))
            {
                self.fail(e);
            }
        }
        if response.drag_stopped() {
            self.dragging_target = false;
        }
        true
    }
}

/// `point` moved by `(dx, dy)` pixels of an image `height` pixels high, in the plane through
/// it that faces the camera: a pixel of pointer motion is a pixel of motion on screen.
fn drag_in_view_plane(
    camera: &OrbitCamera,
    point: Vec3,
    (dx, dy): (f32, f32),
    height: f32,
) -> Vec3 {
    let eye = camera.eye();
    let fwd = (camera.target - eye).normalize_or(Vec3::NEG_Z);
    let right = fwd.cross(Vec3::Y).normalize_or(Vec3::X);
    let up = right.cross(fwd);
    let depth = (point - eye).dot(fwd).max(1e-3);
    let per_px = 2.0 * depth * (0.5 * camera.fov_y).tan() / height;
    point + (right * dx - up * dy) * per_px
}

/// A plane through the scene origin rising by `degrees` along +Z (a NaN or infinite slope
/// is taken as flat; callers clamp it to -40..=40).
fn slope_plane(degrees: f32) -> Plane {
    Plane::slope_toward(if degrees.is_finite() { degrees } else { 0.0 }, Vec3::Z)
}

/// A look-at modifier (off) on the joint named like a head and up to two joints above it,
/// its forward axis the character's front (+Z) at rest; the target ahead of the head.
fn look_at(
    animator: &mut Animator,
    sk: &Arc<Skeleton>,
    bounds: Bounds,
) -> Result<Option<(usize, Vec3)>, ViewerError> {
    let head = (0..sk.len() as JointIndex)
        .filter(|&j| {
            let n = sk.name(j).to_ascii_lowercase();
            n.contains("head") && !["end", "top", "tip", "nub"].iter().any(|x| n.contains(x))
        })
        .min_by_key(|&j| sk.name(j).len());
    let Some(head) = head else {
        return Ok(None);
    };
    let mut chain = vec![head];
    while chain.len() < 3 {
        match sk.parent(chain[0]).filter(|&p| sk.parent(p).is_some()) {
            Some(p) => chain.insert(0, p),
            None => break,
        }
    }
    let weights = [0.25, 0.5, 1.0][3 - chain.len()..].to_vec();
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(sk, sk.rest_pose(), 0, &mut model)?;
    let root = sk.root_transform();
    let to_model = root.inverse();
    let rest = model[head as usize];
    let forward = rest
        .inverse()
        .transform_vector3(to_model.transform_vector3(Vec3::Z))
        .normalize_or(Vec3::Z);
    let up = rest
        .inverse()
        .transform_vector3(to_model.transform_vector3(Vec3::Y))
        .normalize_or(Vec3::Y);
    let head_at = root.transform_point3(rest.w_axis.truncate());
    // Ahead of the face and a little up, clear of the hands in the default view.
    let target = head_at + Vec3::new(0.3, 0.35, 1.5) * bounds.radius();
    let aim = Aim {
        up,
        pole: to_model.transform_vector3(Vec3::Y),
        ..Aim::new(to_model.transform_point3(target), forward)
    };
    let i = animator.add_modifier(
        Modifier::Aim {
            chain,
            weights,
            aim,
        },
        0.0,
    )?;
    Ok(Some((i, target)))
}

/// A foot-placement modifier (off) on the legs [`Feet::guess`] finds, contacts from every
/// clip, on the flat ground; or why there is none.
fn feet(animator: &mut Animator, sk: &Skeleton, clips: &[Arc<Clip>]) -> Result<usize, String> {
    let feet = Feet::guess(sk).map_err(|e| e.to_string())?;
    let mut model = vec![Mat4::IDENTITY; sk.len()];
    local_to_model(sk, sk.rest_pose(), 0, &mut model).map_err(|e| e.to_string())?;
    let placement = Placement::new(sk.root_transform(), 0.25 * feet.legs()[0].length(&model));
    let mut m = Modifier::feet(feet.clone(), placement, Arc::new(slope_plane(0.0)));
    for c in clips {
        m = m.with_contacts(c.clone(), feet.contacts(sk, c));
    }
    animator.add_modifier(m, 0.0).map_err(|e| e.to_string())
}

fn wgpu_filter() -> egui_wgpu::wgpu::FilterMode {
    egui_wgpu::wgpu::FilterMode::Linear
}

impl eframe::App for Viewer {
    fn update(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        let frame_start = Instant::now();
        let dt = ctx.input(|i| i.stable_dt).clamp(0.0, 0.1);

        // Scripted runs: screenshot and close.
        self.frames += 1;
        if let Some(n) = self.options.exit_after {
            let shot = ctx.input(|i| {
                i.raw.events.iter().find_map(|e| match e {
                    egui::Event::Screenshot { image, .. } => Some(image.clone()),
                    _ => None,
                })
            });
            if let (Some(image), Some(path)) = (shot, self.options.screenshot.clone()) {
                if let Err(e) = save_png(&image, &path) {
                    self.fail(e);
                }
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            } else if self.frames >= n {
                match &self.options.screenshot {
                    Some(_) if !self.screenshot_asked => {
                        ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
                            egui::UserData::default(),
                        ));
                        self.screenshot_asked = true;
                    }
                    Some(_) if self.frames > n + 300 => {
                        self.fail(ViewerError::NoScreenshot);
                        ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                    }
                    Some(_) => {}
                    None => ctx.send_viewport_cmd(egui::ViewportCommand::Close),
                }
            }
        }

        // Animation.
        let start = Instant::now();
        if let Some(g) = &mut self.graph {
            let time = self.time;
            let graph = g.graph().clone();
            let r = g.update(dt);
            let mut lines: Vec<String> = r
                .transitions
                .iter()
                .map(|t| {
                    format!(
                        "{time:8.3} s  {}: {} -> {}",
                        graph.layer_name(t.layer).unwrap_or(""),
                        graph.state_full_name(t.from),
                        graph.state_full_name(t.to)
                    )
                })
                .collect();
            lines.extend(r.state_events.iter().map(|e| {
                let kind = match e.kind {
                    StateEventKind::Enter => "entering",
                    StateEventKind::Exit => "leaving",
                };
                format!(
                    "{time:8.3} s  {} ({kind} {})",
                    e.name,
                    graph.state_full_name(e.state)
                )
            }));
            lines.extend(r.events.iter().map(|e| {
                format!(
                    "{time:8.3} s  {} ({}, layer {})",
                    e.name(),
                    e.clip.name(),
                    e.layer
                )
            }));
            for l in lines {
                self.log(l);
            }
            self.time += dt as f64;
        } else if !self.stopped {
            let result = self.animator.update(dt);
            let lines: Vec<String> = result
                .events
                .iter()
                .map(|e| {
                    format!(
                        "{:8.3} s  {} {} ({} at {:.3} s, layer {})",
                        self.time,
                        e.name(),
                        e.payload().unwrap_or(""),
                        e.clip.name(),
                        e.time(),
                        e.layer
                    )
                })
                .collect();
            for l in lines {
                self.log(l);
            }
            self.time += dt as f64;
        }
        let sk = self.asset.skeleton.clone();
        let pose = if let Some(g) = &self.graph {
            g.pose()
        } else if self.stopped {
            sk.rest_pose()
        } else {
            self.animator.pose()
        };
        if let Err(e) = local_to_model(&sk, pose, 0, &mut self.model) {
            self.fail(e);
        }
        if !self.morph_hold.is_empty() {
            let animated = if let Some(g) = &self.graph {
                g.animator().morph_weights()
            } else if self.stopped {
                sk.morph_rest()
            } else {
                self.animator.morph_weights()
            };
            for (c, w) in self.morph_weights.iter_mut().enumerate() {
                *w = self.morph_hold[c].unwrap_or(animated.get(c).copied().unwrap_or(0.0));
            }
            if let Err(e) = self
                .renderer
                .set_morph_weights(&self.gpu, &self.morph_weights)
            {
                self.fail(e);
            }
        }
        self.anim_ms = start.elapsed().as_secs_f32() * 1e3;

        egui::SidePanel::left("controls")
            .resizable(true)
            .default_width(320.0)
            .show(ctx, |ui| self.side_panel(ui));

        egui::CentralPanel::default()
            .frame(egui::Frame::NONE)
            .show(ctx, |ui| {
                let size = ui.available_size();
                let ppp = ctx.pixels_per_point();
                let (w, h) = (
                    ((size.x * ppp) as u32).clamp(16, 4096),
                    ((size.y * ppp) as u32).clamp(16, 4096),
                );
                if (w, h)
                    != (
                        self.renderer.options().width,
                        self.renderer.options().height,
                    )
                {
                    match self.renderer.resize(&self.gpu, w, h) {
                        Ok(()) => self
                            .egui_renderer
                            .write()
                            .update_egui_texture_from_wgpu_texture(
                                &self.gpu.device,
                                self.renderer.target(),
                                wgpu_filter(),
                                self.texture,
                            ),
                        Err(e) => self.fail(e),
                    }
                }
                // Orbit camera: drag to turn, scroll to zoom, double-click to frame again.
                let (rect, response) = ui.allocate_exact_size(size, egui::Sense::click_and_drag());
                if self.drag_target(&response, rect, ppp) {
                    // The look-at target moved instead of the camera.
                } else if response.dragged() {
                    let d = response.drag_delta();
                    self.camera.yaw -= d.x * 0.01;
                    self.camera.pitch = (self.camera.pitch + d.y * 0.01).clamp(-1.5, 1.5);
                }
                if response.double_clicked() {
                    self.camera = self.home;
                }
                if response.hovered() {
                    let scroll = ctx.input(|i| i.smooth_scroll_delta.y);
                    if scroll != 0.0 {
                        self.camera.distance *= (1.0 - scroll * 0.002).clamp(0.5, 1.5);
                    }
                }
                let start = Instant::now();
                // No allocation per frame: the renderer copies into the list it keeps.
                match self.look {
                    Some((_, t)) if self.look_on => {
                        self.renderer.set_markers(&[(t, [0.2, 0.9, 1.0, 1.0])])
                    }
                    _ => self.renderer.set_markers(&[]),
                }
                self.renderer
                    .set_layers(self.skin, self.wireframe, self.skeleton, self.grid);
                if let Err(e) = self.renderer.draw(&self.gpu, &self.model, &self.camera) {
                    self.fail(e);
                }
                self.render_ms = start.elapsed().as_secs_f32() * 1e3;
                ui.painter().image(
                    self.texture,
                    rect,
                    egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                    egui::Color32::WHITE,
                );
            });
        self.frame_ms = self.frame_ms * 0.9 + frame_start.elapsed().as_secs_f32() * 1e3 * 0.1;
        ctx.request_repaint();
    }
}

fn save_png(
    image: &egui::ColorImage,
    path: &std::path::Path,
) -> Result<(), skelett_render::RenderError> {
    let [w, h] = image.size;
    let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    skelett_render::Image {
        width: w as u32,
        height: h as u32,
        rgba,
    }
    .write_png(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a scene point lands in a `w` x `h` image (pixels from the top left).
    fn project(camera: &OrbitCamera, p: Vec3, w: f32, h: f32) -> (f32, f32) {
        let c = camera.view_proj(w / h) * p.extend(1.0);
        let n = c / c.w;
        ((n.x * 0.5 + 0.5) * w, (0.5 - n.y * 0.5) * h)
    }

    #[test]
    fn a_dragged_target_follows_the_pointer_pixel_for_pixel() {
        let (w, h) = (800.0, 600.0);
        for (yaw, pitch) in [(0.6f32, 0.25f32), (-2.0, -0.4), (3.0, 1.2)] {
            let camera = OrbitCamera {
                yaw,
                pitch,
                ..OrbitCamera::framing(
                    Bounds {
                        min: Vec3::new(-0.5, 0.0, -0.3),
                        max: Vec3::new(0.5, 1.8, 0.3),
                    },
                    w / h,
                )
            };
            let target = Vec3::new(0.3, 1.5, 0.8);
            let (x0, y0) = project(&camera, target, w, h);
            for d in [(12.0, 0.0), (0.0, -9.0), (25.0, 31.0)] {
                let moved = drag_in_view_plane(&camera, target, d, h);
                let (x1, y1) = project(&camera, moved, w, h);
                // Exact at the centre of the image; perspective stretches it a little off it.
                assert!(
                    ((x1 - x0) - d.0).abs() < 0.05 * d.0.abs() + 0.5
                        && ((y1 - y0) - d.1).abs() < 0.05 * d.1.abs() + 0.5,
                    "yaw {yaw} pitch {pitch}: moved by {:?}, wanted {d:?}",
                    (x1 - x0, y1 - y0)
                );
                // And it stays at the same depth from the camera.
                let fwd = (camera.target - camera.eye()).normalize();
                let depth = |p: Vec3| (p - camera.eye()).dot(fwd);
                assert!((depth(moved) - depth(target)).abs() < 1e-4);
            }
        }
    }
}
