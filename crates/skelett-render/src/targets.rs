//! The render targets: a multisampled colour and depth target, the resolved image, and the
//! buffer it is read back through (rows padded to wgpu's copy alignment).

use crate::renderer::{COLOR_FORMAT, DEPTH_FORMAT, SAMPLES};
use crate::texture::texture_2d;
use crate::{Gpu, RenderError};

/// The multisampled colour and depth targets, the resolved image and its readback buffer.
pub(crate) struct Targets {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) color: wgpu::TextureView,
    pub(crate) resolve: wgpu::Texture,
    pub(crate) resolve_view: wgpu::TextureView,
    pub(crate) depth: wgpu::TextureView,
    pub(crate) readback: wgpu::Buffer,
    pub(crate) padded_row: u32,
}

impl Targets {
    pub(crate) fn new(gpu: &Gpu, w: u32, h: u32) -> Result<Targets, RenderError> {
        let d = &gpu.device;
        let max = d.limits().max_texture_dimension_2d;
        if w == 0 || h == 0 || w > max || h > max {
            return Err(RenderError::Invalid(format!(
                "image size {w}x{h}: each side must be 1 to {max} pixels"
            )));
        }
        let padded_row = (w * 4).div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
            * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let readback_size = padded_row as u64 * h as u64;
        if readback_size > d.limits().max_buffer_size {
            return Err(RenderError::Invalid(format!(
                "image size {w}x{h} needs a {readback_size}-byte readback buffer; this GPU \
                 allows {}",
                d.limits().max_buffer_size
            )));
        }
        let target = |label: &str, format, samples, usage| {
            d.create_texture(&texture_2d(label, (w, h), format, samples, usage))
        };
        let color = target(
            "colour (MSAA)",
            COLOR_FORMAT,
            SAMPLES,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        )
        .create_view(&Default::default());
        let resolve = target(
            "colour",
            COLOR_FORMAT,
            1,
            wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::COPY_SRC
                | wgpu::TextureUsages::TEXTURE_BINDING,
        );
        let resolve_view = resolve.create_view(&Default::default());
        let depth = target(
            "depth",
            DEPTH_FORMAT,
            SAMPLES,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        )
        .create_view(&Default::default());
        let readback = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("image readback"),
            size: readback_size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(Targets {
            width: w,
            height: h,
            color,
            resolve,
            resolve_view,
            depth,
            readback,
            padded_row,
        })
    }
}
