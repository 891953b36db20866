//! RGBA images read back from the GPU, and their PNG and animated GIF files.
//!
//! PNG through the `png` crate; GIF through the `gif` crate, each frame quantised to its own
//! 256-colour palette (NeuQuant, from `gif`'s `color_quant`).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use crate::RenderError;

/// An 8-bit sRGB RGBA image, rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
}

impl Image {
    /// The pixel at (x, y), or `None` outside the image.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = ((y * self.width + x) * 4) as usize;
        self.rgba.get(i..i + 4).map(|p| [p[0], p[1], p[2], p[3]])
    }

    /// Writes a PNG file.
    ///
    /// # Errors
    /// [`RenderError::Write`] naming the file.
    pub fn write_png(&self, path: impl AsRef<Path>) -> Result<(), RenderError> {
        let path = path.as_ref();
        let err = |e: Box<dyn std::error::Error + Send + Sync>| RenderError::Write {
            path: path.to_path_buf(),
            source: e,
        };
        let file = create_output(path).map_err(|e| err(Box::new(e)))?;
        let mut enc = png::Encoder::new(BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let mut w = enc.write_header().map_err(|e| err(Box::new(e)))?;
        w.write_image_data(&self.rgba)
            .map_err(|e| err(Box::new(e)))?;
        w.finish().map_err(|e| err(Box::new(e)))
    }
}

/// An animated GIF being written frame by frame.
pub struct GifWriter {
    encoder: gif::Encoder<BufWriter<File>>,
    path: std::path::PathBuf,
    width: u16,
    height: u16,
    /// Seconds per frame, and the time written so far in hundredths of a second: each
    /// frame's delay is rounded so the running total tracks the true time.
    frame_seconds: f64,
    written_cs: u64,
    frames: usize,
}

impl GifWriter {
    /// Starts `path`, looping forever, showing each frame for `frame_seconds`. GIF delays are
    /// whole hundredths of a second: each frame's delay is rounded so the animation's total
    /// time stays true (15 fps alternates 7 and 6); at most 50 fps.
    ///
    /// # Errors
    /// [`RenderError::Write`] naming the file; [`RenderError::Invalid`] for an image larger
    /// than 65535 pixels across.
    pub fn create(
        path: impl AsRef<Path>,
        width: u32,
        height: u32,
        frame_seconds: f32,
    ) -> Result<GifWriter, RenderError> {
        let path = path.as_ref().to_path_buf();
        let err = |e: Box<dyn std::error::Error + Send + Sync>| RenderError::Write {
            path: path.clone(),
            source: e,
        };
        let (w, h) = (
            u16::try_from(width)
                .map_err(|_| RenderError::Invalid("GIF width over 65535".into()))?,
            u16::try_from(height)
                .map_err(|_| RenderError::Invalid("GIF height over 65535".into()))?,
        );
        let file = create_output(&path).map_err(|e| err(Box::new(e)))?;
        let mut encoder =
            gif::Encoder::new(BufWriter::new(file), w, h, &[]).map_err(|e| err(Box::new(e)))?;
        encoder
            .set_repeat(gif::Repeat::Infinite)
            .map_err(|e| err(Box::new(e)))?;
        Ok(GifWriter {
            encoder,
            path,
            width: w,
            height: h,
            frame_seconds: frame_seconds.max(0.0) as f64,
            written_cs: 0,
            frames: 0,
        })
    }

    /// Appends a frame of the writer's size.
    ///
    /// # Errors
    /// [`RenderError::Invalid`] for a frame of another size; [`RenderError::Write`].
    pub fn push(&mut self, image: &Image) -> Result<(), RenderError> {
        if image.width != self.width as u32 || image.height != self.height as u32 {
            return Err(RenderError::Invalid(format!(
                "GIF frame is {}x{}, the animation {}x{}",
                image.width, image.height, self.width, self.height
            )));
        }
        let expected = self.width as usize * self.height as usize * 4;
        if image.rgba.len() != expected {
            return Err(RenderError::Invalid(format!(
                "GIF frame has {} bytes, {}x{} RGBA needs {expected}",
                image.rgba.len(),
                self.width,
                self.height
            )));
        }
        let mut rgba = image.rgba.clone();
        let mut frame = gif::Frame::from_rgba_speed(self.width, self.height, &mut rgba, 10);
        // Viewers treat delays under 2 cs as 10 cs, so 2 cs is the shortest honest delay.
        let due = ((self.frames + 1) as f64 * self.frame_seconds * 100.0).round() as u64;
        let delay = due.saturating_sub(self.written_cs).clamp(2, 65535);
        self.written_cs += delay;
        frame.delay = delay as u16;
        self.encoder
            .write_frame(&frame)
            .map_err(|e| RenderError::Write {
                path: self.path.clone(),
                source: Box::new(e),
            })?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }
}

/// Creates (or truncates) an image file, refusing a path that exists and is not a regular
/// file: a FIFO would block until something reads it. (skelett-io's writers do the same;
/// this crate does not depend on it.)
fn create_output(path: &Path) -> std::io::Result<File> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "exists and is not a regular file (a folder, device or pipe)",
        )),
        _ => File::create(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gif_delays_add_up_to_the_true_duration() {
        let path = std::env::temp_dir().join(format!("skelett-gif-{}.gif", std::process::id()));
        let mut g = GifWriter::create(&path, 4, 2, 1.0 / 15.0).unwrap();
        let img = Image {
            width: 4,
            height: 2,
            rgba: vec![128; 32],
        };
        for _ in 0..30 {
            g.push(&img).unwrap();
        }
        assert_eq!(g.written_cs, 200, "30 frames at 15 fps are 2 s");
        let bad = Image {
            rgba: vec![0; 31],
            ..img
        };
        assert!(g.push(&bad).is_err());
        drop(g);
        let _ = std::fs::remove_file(path);
    }
}
