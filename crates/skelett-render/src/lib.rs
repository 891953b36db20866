//! # skelett-render: GPU skinning and an offscreen renderer for skelett characters
//!
//! ```text
//! Gpu::new()                        one wgpu device (Vulkan, Metal or DX12; lavapipe works)
//! GpuSkinner::new(&gpu, &SkinningMesh)      bind-pose vertices uploaded once per mesh
//!   .skin(&gpu, &SkinPalette)               compute pass: palette -> skinned vertex buffer
//! Renderer::new(&gpu, Character { .. }, options)   core types (skeleton, skins, meshes,
//!                                           encoded images): a GpuSkinner per primitive
//!   .render(&gpu, &model, &camera)          skin on the GPU, draw mesh / wireframe /
//!                                           skeleton / grid offscreen, read back an Image
//! Image::write_png, GifWriter               files for CI, docs and users
//! ```
//!
//! Everything renders offscreen: no window or surface is needed, so the same code runs in
//! CI on Mesa's software Vulkan (lavapipe) and on any real GPU. The compute shader does the
//! same linear blend as `skelett::skin`, in the same vertex order, so the CPU and GPU paths
//! agree to float rounding (tested to 1e-5 of the mesh's size).

#![warn(missing_docs)]

mod camera;
mod gpu;
mod image;
mod input;
mod prepare;
mod renderer;
mod skinning;
mod targets;
mod texture;

pub use camera::{Bounds, OrbitCamera};
pub use gpu::Gpu;
pub use image::{GifWriter, Image};
pub use input::{Character, RenderOptions};
pub use renderer::Renderer;
pub use skinning::GpuSkinner;

/// What can go wrong while rendering.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// No GPU adapter (on Linux without a GPU, install Mesa's lavapipe:
    /// `mesa-vulkan-drivers libvulkan1`).
    #[error("no GPU adapter found ({0}); without a GPU, install Mesa's software Vulkan (apt: mesa-vulkan-drivers libvulkan1)")]
    NoAdapter(#[source] wgpu::RequestAdapterError),
    /// The adapter refused to create a device.
    #[error("the GPU adapter refused a device: {0}")]
    Device(#[source] wgpu::RequestDeviceError),
    /// A buffer could not be read back (the device was lost, or mapping failed); the cause
    /// is wgpu's error (`wgpu::PollError`, `wgpu::BufferAsyncError`) or the lost callback.
    #[error("reading back from the GPU failed: {0}")]
    Readback(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The character data does not fit (sizes, palette).
    #[error(transparent)]
    Skelett(#[from] skelett::Error),
    /// Writing an image file failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong (an I/O, PNG or GIF encoder error).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An option is out of range.
    #[error("{0}")]
    Invalid(String),
}
