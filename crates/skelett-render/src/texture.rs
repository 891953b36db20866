//! Base colour textures: decoding the PNG and JPEG images meshes refer to (glTF's two core
//! formats; sizes checked against the device's limit before decoding) and uploading them as
//! sRGB textures. Images arrive as [`EncodedImage`] bytes from any importer.

use skelett::EncodedImage;
use wgpu::util::DeviceExt;

use crate::Gpu;

/// Decodes a PNG or JPEG base colour image (glTF's two core formats) and uploads it;
/// `None` for other formats or undecodable data (the primitive then uses its base colour
/// factor alone).
pub(crate) fn upload_texture(gpu: &Gpu, image: &EncodedImage) -> Option<wgpu::TextureView> {
    let max = gpu.device.limits().max_texture_dimension_2d;
    let (w, h, rgba) = match image.mime.as_str() {
        "image/png" => decode_png(&image.bytes, max)?,
        "image/jpeg" => decode_jpeg(&image.bytes, max)?,
        _ => return None,
    };
    Some(srgb_texture(gpu, "base colour", w, h, &rgba))
}

/// An sRGB RGBA8 texture of `w` x `h` pixels filled from `rgba`, ready to sample.
pub(crate) fn srgb_texture(
    gpu: &Gpu,
    label: &str,
    w: u32,
    h: u32,
    rgba: &[u8],
) -> wgpu::TextureView {
    gpu.device
        .create_texture_with_data(
            &gpu.queue,
            &texture_2d(
                label,
                (w, h),
                wgpu::TextureFormat::Rgba8UnormSrgb,
                1,
                wgpu::TextureUsages::TEXTURE_BINDING,
            ),
            wgpu::util::TextureDataOrder::LayerMajor,
            rgba,
        )
        .create_view(&Default::default())
}

/// A JPEG as RGBA8, refusing images larger than `max` pixels across before decoding them.
fn decode_jpeg(bytes: &[u8], max: u32) -> Option<(u32, u32, Vec<u8>)> {
    let mut dec = jpeg_decoder::Decoder::new(bytes);
    dec.read_info().ok()?;
    let info = dec.info()?;
    let (w, h) = (info.width as u32, info.height as u32);
    if w == 0 || h == 0 || w > max || h > max {
        return None;
    }
    let pixels = dec.decode().ok()?;
    let rgba: Vec<u8> = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => pixels
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        jpeg_decoder::PixelFormat::L8 => pixels.iter().flat_map(|&l| [l, l, l, 255]).collect(),
        _ => return None,
    };
    (rgba.len() == (w * h * 4) as usize).then_some((w, h, rgba))
}

/// A PNG as RGBA8, refusing images larger than `max` pixels across.
fn decode_png(bytes: &[u8], max: u32) -> Option<(u32, u32, Vec<u8>)> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(bytes));
    dec.set_transformations(
        png::Transformations::normalize_to_color8() | png::Transformations::ALPHA,
    );
    let mut reader = dec.read_info().ok()?;
    let (w, h) = (reader.info().width, reader.info().height);
    if w == 0 || h == 0 || w > max || h > max {
        return None;
    }
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).ok()?;
    let rgba: Vec<u8> = match info.color_type {
        png::ColorType::Rgba => buf.get(..(w * h * 4) as usize)?.to_vec(),
        png::ColorType::GrayscaleAlpha => buf
            .get(..(w * h * 2) as usize)?
            .chunks_exact(2)
            .flat_map(|g| [g[0], g[0], g[0], g[1]])
            .collect(),
        _ => return None,
    };
    Some((w, h, rgba))
}

/// A 2D texture of `size` pixels with one mip level.
pub(crate) fn texture_2d(
    label: &str,
    (width, height): (u32, u32),
    format: wgpu::TextureFormat,
    samples: u32,
    usage: wgpu::TextureUsages,
) -> wgpu::TextureDescriptor<'_> {
    wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width,
            height,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: samples,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats: &[],
    }
}
