//! The wgpu device and queue, created once and shared by skinners and renderers.

use crate::RenderError;

/// A wgpu device with its queue.
pub struct Gpu {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// What the adapter says about itself (name, backend, driver), for logs.
    pub info: wgpu::AdapterInfo,
}

impl Gpu {
    /// Opens the first adapter wgpu finds on the primary backends (high performance
    /// preferred; a software adapter such as lavapipe is accepted).
    ///
    /// # Errors
    /// [`RenderError::NoAdapter`] or [`RenderError::Device`].
    pub fn new() -> Result<Gpu, RenderError> {
        pollster::block_on(Self::new_async())
    }

    async fn new_async() -> Result<Gpu, RenderError> {
        let instance = wgpu::Instance::new(&wgpu::InstanceDescriptor {
            backends: wgpu::Backends::PRIMARY,
            ..Default::default()
        });
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
            })
            .await
            .map_err(RenderError::NoAdapter)?;
        let info = adapter.get_info();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("skelett"),
                required_features: wgpu::Features::empty(),
                // WebGPU's defaults (8 storage buffers per stage; skinning binds 6), with the
                // adapter's own texture size limits.
                required_limits: wgpu::Limits::default().using_resolution(adapter.limits()),
                ..Default::default()
            })
            .await
            .map_err(RenderError::Device)?;
        Ok(Gpu {
            device,
            queue,
            info,
        })
    }

    /// Wraps a device made elsewhere (a window toolkit's, such as eframe's), so skinners
    /// and renderers draw with it.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue, info: wgpu::AdapterInfo) -> Gpu {
        Gpu {
            device,
            queue,
            info,
        }
    }

    /// Blocks until the GPU has finished everything submitted so far.
    ///
    /// # Errors
    /// [`RenderError::Readback`] if the device is lost.
    pub fn wait(&self) -> Result<(), RenderError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| RenderError::Readback(Box::new(e)))
    }

    /// A one-line description of the adapter.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}, {})",
            self.info.name, self.info.backend, self.info.device_type, self.info.driver_info
        )
    }

    /// Copies `buffer` (which must have `COPY_SRC` usage) to the CPU.
    ///
    /// # Errors
    /// [`RenderError::Readback`] if mapping fails.
    pub fn read_buffer(&self, buffer: &wgpu::Buffer, size: u64) -> Result<Vec<u8>, RenderError> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        self.map_read(&staging)
    }

    /// Maps a `MAP_READ` buffer and copies its contents out.
    pub(crate) fn map_read(&self, staging: &wgpu::Buffer) -> Result<Vec<u8>, RenderError> {
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RenderError::Readback(Box::new(e)))?;
        rx.recv()
            .map_err(|e| RenderError::Readback(Box::new(e)))?
            .map_err(|e| RenderError::Readback(Box::new(e)))?;
        let bytes = slice.get_mapped_range().to_vec();
        staging.unmap();
        Ok(bytes)
    }
}
