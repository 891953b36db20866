//! # skelett-viewer: the interactive viewer behind `skelett view`
//!
//! An eframe/egui window on the same wgpu device as [`skelett_render`]: each frame the
//! [`Animator`] advances, the pose goes through `local_to_model`, and the renderer skins and
//! draws the character into its own texture, which egui shows in the central panel (no
//! readback). The side panel drives the animator:
//!
//! - Open: another model without restarting, from a file browser in the window (folders and
//!   the files skelett reads) or by dropping a file on the window;
//! - the clip list (click to play, or to cross-fade with the chosen duration);
//! - play / pause / stop (stop shows the rest pose), speed as a multiplier and, for clips
//!   with a frame rate, in frames per second (RiTE's viewer's control), a timeline scrubber;
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
//! toolkit. `--exit-after N` and `--screenshot FILE` let CI run it under Xvfb, and
//! `--then-open FILE` opens a second file halfway through such a run, through the same path
//! the file browser and a dropped file take.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
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
    /// How files opened from the viewer (the file browser, a dropped file) are read.
    pub load: skelett_io::LoadOptions,
    /// With `exit_after`: open this file halfway through the run, as the file browser would,
    /// or for a folder show the file browser on it (for scripted runs and CI).
    pub then_open: Option<PathBuf>,
}

/// What stops the viewer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewerError {
    /// The asset has no clip to play (no longer returned: such a file shows its rest pose;
    /// kept so that matches on it still compile).
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
    /// A file opened from the viewer (Open…, a dropped file) could not be read.
    #[error(transparent)]
    Load(skelett_io::Error),
}

/// Opens the viewer on `asset` and returns when the window closes.
///
/// # Errors
/// [`ViewerError`]: no window or GPU, or the first failure while running (a
/// screenshot that cannot be written, for one).
pub fn run(asset: Asset, options: ViewerOptions) -> Result<(), ViewerError> {
    let asset = prepare(asset)?;
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

/// Checks an asset can be viewed and adds footsteps to every clip, so that the event log has
/// something to show for locomotion.
fn prepare(mut asset: Asset) -> Result<Asset, ViewerError> {
    if asset.clips.is_empty() {
        // A model without animation (a mesh, a RAM without its RAA) is shown in its rest
        // pose, as a clip of its own.
        let rest = skelett::RawClip {
            name: "(rest pose)".into(),
            start: 0.0,
            duration: 1.0,
            channels: Vec::new(),
        }
        .build(&asset.skeleton)?;
        asset.clips.push(Arc::new(rest));
        asset
            .warnings
            .push("the file has no clips: showing its rest pose".into());
    }
    for clip in &mut asset.clips {
        let steps = skelett::contacts::footstep_events(&asset.skeleton, clip);
        if !steps.is_empty() {
            *clip = Arc::new((**clip).clone().with_events(steps)?);
        }
    }
    Ok(asset)
}

/// One entry of the file browser.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    name: String,
    dir: bool,
}

/// What the file browser lists in `dir`: its folders, then the files skelett reads
/// ([`skelett_io::is_known_extension`]), each group sorted by name; hidden entries left out.
fn list_dir(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let dir = e.path().is_dir();
        if dir || skelett_io::is_known_extension(&e.path()) {
            out.push(Entry { name, dir });
        }
    }
    out.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.name.cmp(&b.name)));
    Ok(out)
}

/// The file browser's state: the folder shown, its entries, and the path being typed.
struct Picker {
    dir: PathBuf,
    entries: Result<Vec<Entry>, String>,
    typed: String,
}

impl Picker {
    fn at(dir: PathBuf) -> Self {
        // Absolute, so that ".." always has somewhere to go.
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        let entries = list_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()));
        let typed = dir.display().to_string();
        Picker {
            dir,
            entries,
            typed,
        }
    }
}

/// The playback speed multiplier that plays a clip made at `clip_fps` frames per second at
/// `fps` frames per second (the sign of `speed`, the current multiplier, kept: backwards
/// stays backwards).
fn speed_for_fps(fps: f32, clip_fps: f32, speed: f32) -> f32 {
    let s = (fps / clip_fps).abs();
    if speed < 0.0 {
        -s
    } else {
        s
    }
}

const OVERRIDE_LAYER: usize = 1;
const ADDITIVE_LAYER: usize = 2;

struct Viewer {
    asset: Asset,
    /// eframe's wgpu state: a model opened later is drawn with it.
    render_state: egui_wgpu::RenderState,
    /// The file browser, while it is open.
    picker: Option<Picker>,
    /// The file this run started from, or the one opened last (the browser starts beside it).
    file: Option<PathBuf>,
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
        Self::build(rs, asset, options, failure)
    }

    /// The viewer on `asset`, drawing with eframe's wgpu state `rs`.
    fn build(
        rs: &egui_wgpu::RenderState,
        asset: Asset,
        options: ViewerOptions,
        failure: Arc<std::sync::Mutex<Option<ViewerError>>>,
    ) -> Result<Viewer, ViewerError> {
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
        let file = Some(PathBuf::from(&options.title)).filter(|p| p.is_file());
        Ok(Viewer {
            render_state: rs.clone(),
            picker: None,
            file,
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
        .with_slope(slope)
        .with_warnings())
    }

    /// The asset's warnings, in the log.
    fn with_warnings(mut self) -> Self {
        for w in self.asset.warnings.clone() {
            self.log(format!("warning: {w}"));
        }
        self
    }

    /// Opens another model in place of this one (the file browser, a dropped file,
    /// `--then-open`): loaded with the viewer's load options, framed and played from its first
    /// clip. A file that cannot be viewed leaves the current one and says why in the log.
    fn open(&mut self, ctx: &egui::Context, path: &Path) {
        let opened = skelett_io::load_with(path, &self.options.load)
            .map_err(ViewerError::Load)
            .and_then(prepare)
            .and_then(|asset| {
                let mut options = self.options.clone();
                options.title = path.display().to_string();
                // A graph was written for the file it came with.
                options.graph = None;
                options.then_open = None;
                options.look_at = self.look_on;
                options.slope = Some(self.slope).filter(|s| *s != 0.0);
                Self::build(&self.render_state, asset, options, self.failure.clone())
            });
        match opened {
            Ok(mut next) => {
                if self.graph.is_some() {
                    next.log(format!(
                        "{}: opened without the animation graph, which named the clips of {}",
                        path.display(),
                        self.options.title
                    ));
                }
                next.log(format!(
                    "opened {} ({} joints, {} clips)",
                    path.display(),
                    next.asset.skeleton.len(),
                    next.asset.clips.len()
                ));
                next.frames = self.frames;
                next.screenshot_asked = self.screenshot_asked;
                next.options.exit_after = self.options.exit_after;
                next.options.screenshot = self.options.screenshot.clone();
                next.file = Some(path.to_path_buf());
                self.render_state
                    .renderer
                    .write()
                    .free_texture(&self.texture);
                ctx.send_viewport_cmd(egui::ViewportCommand::Title(format!(
                    "skelett: {}",
                    path.display()
                )));
                *self = next;
            }
            // skelett's errors name the file already.
            Err(e @ (ViewerError::Load(_) | ViewerError::Skelett(_))) => {
                self.log(format!("could not open: {e}"))
            }
            Err(e) => self.log(format!("could not open {}: {e}", path.display())),
        }
    }

    /// The file browser's window, while it is open; returns a file chosen in it.
    fn picker_window(&mut self, ctx: &egui::Context) -> Option<PathBuf> {
        let picker = self.picker.as_mut()?;
        let mut chosen = None;
        let mut go: Option<PathBuf> = None;
        let mut open = true;
        egui::Window::new("Open a file")
            .open(&mut open)
            .default_width(420.0)
            .show(ctx, |ui| {
                ui.horizontal(|ui| {
                    let r = ui.text_edit_singleline(&mut picker.typed);
                    let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                    if ui.button("Go").clicked() || enter {
                        let p = PathBuf::from(picker.typed.trim());
                        if p.is_dir() {
                            go = Some(p);
                        } else {
                            chosen = Some(p);
                        }
                    }
                });
                ui.label(".glb .gltf .fbx .bvh .x .ram .skl; or drop a file on the window");
                if ui.button("⬆ ..").clicked() {
                    go = picker.dir.parent().map(Path::to_path_buf);
                }
                egui::ScrollArea::vertical()
                    .max_height(360.0)
                    .show(ui, |ui| match &picker.entries {
                        Ok(entries) => {
                            for e in entries {
                                let label = if e.dir {
                                    format!("📁 {}", e.name)
                                } else {
                                    e.name.clone()
                                };
                                if ui.selectable_label(false, label).clicked() {
                                    let p = picker.dir.join(&e.name);
                                    if e.dir {
                                        go = Some(p);
                                    } else {
                                        chosen = Some(p);
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            ui.colored_label(egui::Color32::LIGHT_RED, e);
                        }
                    });
            });
        if let Some(dir) = go {
            *picker = Picker::at(dir);
        }
        if !open || chosen.is_some() {
            self.picker = None;
        }
        chosen
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
        if ui
            .button("Open…")
            .on_hover_text("another model, without restarting (or drop a file on the window)")
            .clicked()
        {
            let dir = self
                .file
                .as_ref()
                .and_then(|f| f.parent())
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_else(|| PathBuf::from("."));
            self.picker = Some(Picker::at(dir));
        }
        ui.separator();
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
        // The same speed in frames per second of the clip's own rate.
        match self.asset.clips[self.current].frame_rate() {
            Some(rate) => {
                let mut fps = (self.speed * rate).abs();
                let r = ui.add(
                    egui::Slider::new(&mut fps, 1.0..=(3.0 * rate).max(60.0))
                        .text(format!("frames per second (made at {rate} fps)")),
                );
                if r.changed() {
                    self.speed = speed_for_fps(fps, rate, self.speed);
                    let _ = self.animator.set_speed(0, self.speed);
                }
            }
            None => {
                ui.label("frames per second: the clip has no frame rate");
            }
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

        // Another model: halfway through a scripted run, dropped on the window, or chosen
        // in the file browser.
        let halfway = self.options.exit_after.map_or(0, |n| n / 2).max(1);
        if let Some(path) = self.options.then_open.take_if(|_| self.frames >= halfway) {
            if path.is_dir() {
                self.picker = Some(Picker::at(path));
            } else {
                self.open(ctx, &path);
            }
        }
        let dropped = ctx.input(|i| i.raw.dropped_files.iter().find_map(|f| f.path.clone()));
        if let Some(path) = dropped {
            self.open(ctx, &path);
        }
        if let Some(path) = self.picker_window(ctx) {
            self.open(ctx, &path);
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
    fn the_file_browser_lists_folders_then_known_files() {
        let dir = std::env::temp_dir().join(format!("skelett_picker_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("captures")).unwrap();
        std::fs::create_dir_all(dir.join(".hidden")).unwrap();
        for f in [
            "walk.bvh",
            "Fox.GLB",
            "notes.txt",
            "robot.ram",
            "robot.raa",
            ".x",
        ] {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        let names: Vec<(String, bool)> = list_dir(&dir)
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.dir))
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            names,
            [
                ("captures".to_string(), true),
                ("Fox.GLB".to_string(), false),
                ("robot.ram".to_string(), false),
                ("walk.bvh".to_string(), false),
            ]
        );
        assert!(list_dir(Path::new("/no/such/folder")).is_err());
    }

    #[test]
    fn frames_per_second_set_the_speed_of_the_clip() {
        // A 30 fps clip at 15 fps plays at half speed, at 60 at double; backwards stays so.
        assert_eq!(speed_for_fps(15.0, 30.0, 1.0), 0.5);
        assert_eq!(speed_for_fps(60.0, 30.0, 0.7), 2.0);
        assert_eq!(speed_for_fps(60.0, 30.0, -1.0), -2.0);
        assert_eq!(speed_for_fps(120.0, 120.0, 3.0), 1.0);
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
