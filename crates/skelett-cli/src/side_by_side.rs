//! `skelett retarget ... --render FILE`: the source clip and its retargeted clip drawn side
//! by side, frame for frame, into one GIF (or a PNG of the last frame), to judge a retarget
//! by eye: the source on the left (its meshes if it has any, always its bones), the target on
//! the right (its skin).
//!
//! Each half has its own camera, fixed for the whole shot (framed on everything the
//! character does in it, the same yaw and pitch for both), so that the floor grid stays put
//! and a sliding foot shows as sliding.

use std::path::Path;

use glam::{Mat4, Vec3};
use skelett::{local_to_model, Clip, SamplingCache};
use skelett_io::Asset;
use skelett_render::{
    Bounds, Character, GifWriter, Gpu, Image, OrbitCamera, RenderOptions, Renderer,
};

use crate::outln;
use crate::Result;

/// One half of the picture: a character, its clip and how it is drawn.
struct Half<'a> {
    asset: &'a Asset,
    clip: &'a Clip,
    renderer: Renderer,
    camera: OrbitCamera,
    cache: SamplingCache,
    pose: skelett::Pose,
    model: Vec<Mat4>,
}

impl<'a> Half<'a> {
    fn new(
        gpu: &Gpu,
        asset: &'a Asset,
        clip: &'a Clip,
        options: RenderOptions,
        times: &[f32],
        view: (f32, f32),
    ) -> Result<Half<'a>> {
        let sk = &asset.skeleton;
        let character = Character::new(sk, &asset.skins, &asset.meshes, &asset.images);
        let mut renderer = Renderer::new(gpu, character, options)?;
        let mut pose = skelett::Pose::rest(sk);
        let mut model = vec![Mat4::IDENTITY; sk.len()];
        let mut cache = SamplingCache::for_clip(clip);
        let mut bounds: Option<Bounds> = None;
        for &t in times {
            skelett::sample(clip, t, &mut cache, &mut pose)?;
            local_to_model(sk, &pose, 0, &mut model)?;
            if let Some(b) = renderer.bounds(&model) {
                bounds = Some(bounds.map_or(b, |a| a.union(b)));
            }
        }
        let bounds = bounds.ok_or("nothing to frame: the skeleton has no finite joints")?;
        let mut camera = OrbitCamera::framing(bounds, options.width as f32 / options.height as f32);
        camera.yaw = view.0.to_radians();
        camera.pitch = view.1.to_radians();
        let center = Vec3::new(bounds.center().x, bounds.min.y, bounds.center().z);
        renderer.set_ground(center, bounds.radius() * 1.5);
        Ok(Half {
            asset,
            clip,
            renderer,
            camera,
            cache,
            pose,
            model,
        })
    }

    fn draw(&mut self, gpu: &Gpu, t: f32) -> Result<Image> {
        let sk = &self.asset.skeleton;
        skelett::sample(self.clip, t, &mut self.cache, &mut self.pose)?;
        local_to_model(sk, &self.pose, 0, &mut self.model)?;
        Ok(self.renderer.render(gpu, &self.model, &self.camera)?)
    }
}

/// Two images of one height, left and right, as one.
fn beside(a: &Image, b: &Image) -> Image {
    let height = a.height.min(b.height);
    let width = a.width + b.width;
    let mut rgba = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height as usize {
        let row = |i: &Image| {
            let w = i.width as usize * 4;
            i.rgba[y * w..(y + 1) * w].to_vec()
        };
        rgba.extend(row(a));
        rgba.extend(row(b));
    }
    Image {
        width,
        height,
        rgba,
    }
}

/// Renders `source_clip` on `source` and `target_clip` on `target` side by side into
/// `out` (`.gif`: `seconds` at `fps`; `.png`: the frame at `seconds`), each half
/// `size` pixels.
#[allow(clippy::too_many_arguments)]
pub fn render(
    out_text: &mut String,
    source: &Asset,
    source_clip: &Clip,
    target: &Asset,
    target_clip: &Clip,
    out: &Path,
    seconds: f32,
    (width, height): (u32, u32),
) -> Result<()> {
    let gif = match out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("gif") => true,
        Some("png") => false,
        _ => return Err(format!("{}: --render writes .gif or .png", out.display()).into()),
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 600.0) {
        return Err("--render-seconds must be above 0 and at most 600".into());
    }
    let fps = 15.0;
    let frames = ((seconds * fps).round() as usize).max(1);
    let times: Vec<f32> = (0..frames)
        .map(|f| source_clip.start() + f as f32 / fps)
        .collect();
    let gpu = Gpu::new()?;
    let view = (35.0, 15.0);
    let options = RenderOptions {
        width,
        height,
        ..Default::default()
    };
    let mut left = Half::new(
        &gpu,
        source,
        source_clip,
        RenderOptions {
            skeleton: true,
            skin: !source.meshes.is_empty(),
            ..options
        },
        &times,
        view,
    )?;
    let mut right = Half::new(&gpu, target, target_clip, options, &times, view)?;
    let mut writer = if gif {
        Some(GifWriter::create(out, 2 * width, height, 1.0 / fps)?)
    } else {
        None
    };
    let mut last = None;
    for (f, &t) in times.iter().enumerate() {
        if !gif && f + 1 < frames {
            continue;
        }
        let image = beside(&left.draw(&gpu, t)?, &right.draw(&gpu, t)?);
        match writer.as_mut() {
            Some(w) => w.push(&image)?,
            None => last = Some(image),
        }
    }
    if let Some(image) = last {
        image.write_png(out)?;
    }
    outln!(
        out_text,
        "wrote {} (source left, target right; {} frame{}, {}x{}) on {}",
        out.display(),
        if gif { frames } else { 1 },
        if gif && frames != 1 { "s" } else { "" },
        2 * width,
        height,
        gpu.describe()
    );
    Ok(())
}
