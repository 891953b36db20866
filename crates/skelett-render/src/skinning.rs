//! GPU skinning: a compute shader doing `skelett::skin`'s linear blend on the GPU.
//!
//! [`GpuSkinner::new`] uploads a [`SkinningMesh`]'s bind-pose positions and normals and its
//! influences (padded to 8 per vertex, the implied last weight written out) once. Each
//! [`GpuSkinner::skin`] uploads the palette (and the inverse-transposes when the palette
//! needs them, as the CPU path decides) and dispatches one invocation per vertex into
//! [`GpuSkinner::output`]: position then normal per vertex, 32 bytes, usable directly as a
//! vertex buffer. Linear and dual quaternion skinning follow the palette's
//! [`skelett::skin::SkinningMethod`], with the CPU's per-vertex fallback. Tangents are
//! skinned on the CPU only.
//!
//! **Morph targets** are applied in the same dispatch, before skinning, as
//! [`skelett::morph::morph`] does on the CPU. `new` uploads the mesh's sparse targets once,
//! regrouped per vertex (for each vertex, the targets that move it: target index, position
//! and normal offset), so an invocation reads only the offsets of its own vertex and a target
//! never costs anything at vertices it does not move. [`GpuSkinner::set_morph_weights`]
//! uploads one weight per target; with every weight zero the morph loop is skipped. There is
//! no cap on the number of targets, active or not: the only bound is the device's storage
//! buffer size (32 bytes per vertex a target moves).
//!
//! A skinner holds one palette: to draw one mesh for several characters in one submission,
//! make a skinner per character (the bind-pose buffers are small next to the outputs).

use glam::{Mat3, Mat4, Vec4};
use skelett::skin::{SkinPalette, SkinningMesh};
use wgpu::util::DeviceExt;

use crate::{Gpu, RenderError};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    count: u32,
    use_normal: u32,
    method: u32,
    /// 1 when some morph target has a non-zero weight.
    morph: u32,
    /// Where the morph entries start (vec4s), after the weights.
    morph_base: u32,
    _pad: [u32; 3],
}

/// One mesh primitive skinned on the GPU.
pub struct GpuSkinner {
    count: u32,
    palette_len: usize,
    palette: wgpu::Buffer,
    normal_palette: wgpu::Buffer,
    params: wgpu::Buffer,
    dual: wgpu::Buffer,
    output: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    pipeline: wgpu::ComputePipeline,
    normals: Vec<Mat4>,
    duals: Vec<Vec4>,
    /// How the targets read the skeleton's morph channels (in-betweens included).
    morph_binding: skelett::morph::MorphBinding,
    /// The target weights, then the per-vertex offsets.
    morph: wgpu::Buffer,
    /// Where the offsets start in `morph`, in vec4s.
    morph_base: u32,
    /// Per target weight, the upload scratch.
    target_weights: Vec<f32>,
    morph_active: bool,
}

impl GpuSkinner {
    /// Uploads `mesh` (in its skinning order), with its morph targets and their channels
    /// ([`SkinningMesh::bind_morph`]; in-between shapes are blended on the CPU, one weight
    /// per target, before the upload).
    ///
    /// # Errors
    /// [`RenderError::Invalid`] if the mesh, its morph offsets or its palette are larger than
    /// the device's storage buffers or dispatch size allow (on WebGPU's default limits, about
    /// 4 million vertices per primitive, 4 million morphed vertex offsets and 2 million
    /// palette entries).
    pub fn new(gpu: &Gpu, mesh: &SkinningMesh) -> Result<GpuSkinner, RenderError> {
        let n = mesh.vertex_count();
        let limits = gpu.device.limits();
        let binding = limits.max_storage_buffer_binding_size as u64;
        let groups = limits.max_compute_workgroups_per_dimension as u64 * 64;
        if (n as u64) * 32 > binding
            || (n as u64) > groups
            || (mesh.palette_len() as u64) * 64 > binding
        {
            return Err(RenderError::Invalid(format!(
                "a primitive of {n} vertices and {} palette entries does not fit this GPU's \
                 storage buffers ({binding} bytes) or dispatch size ({groups} invocations); \
                 split the mesh",
                mesh.palette_len()
            )));
        }
        let (offsets, entries) = morph_rows(mesh);
        if (entries.len() as u64 + mesh.morph_target_count() as u64) * 16 > binding
            || (n as u64 + 1) * 32 > binding
        {
            return Err(RenderError::Invalid(format!(
                "{} morph target offsets do not fit this GPU's storage buffers ({binding} \
                 bytes); split the mesh",
                entries.len() / 2
            )));
        }
        // Per vertex, as 32-bit words: position and influence count, normal and the start of
        // its morph entries, then one sentinel vertex whose last word ends the last one's.
        let mut bind: Vec<[u32; 4]> = Vec::with_capacity(2 * n + 2);
        let mut joints = Vec::with_capacity(2 * n);
        let mut weights = Vec::with_capacity(2 * n);
        let bits = |v: glam::Vec3, w: u32| [v.x.to_bits(), v.y.to_bits(), v.z.to_bits(), w];
        for v in 0..n {
            let infl: Vec<(u16, f32)> = mesh.influences(v).collect();
            let normal = mesh.normals().map(|nr| nr[v]).unwrap_or(glam::Vec3::Y);
            bind.push(bits(mesh.positions()[v], infl.len() as u32));
            bind.push(bits(normal, offsets[v]));
            let mut j = [0u32; 8];
            let mut w = [0f32; 8];
            for (i, &(ji, wi)) in infl.iter().enumerate() {
                j[i] = ji as u32;
                w[i] = wi;
            }
            joints.push([j[0], j[1], j[2], j[3]]);
            joints.push([j[4], j[5], j[6], j[7]]);
            weights.push(Vec4::from_slice(&w[..4]));
            weights.push(Vec4::from_slice(&w[4..]));
        }
        bind.push([0; 4]);
        bind.push([0, 0, 0, offsets[n]]);
        let d = &gpu.device;
        let storage = |label: &str, contents: &[u8], usage: wgpu::BufferUsages| {
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::STORAGE | usage,
            })
        };
        let none = wgpu::BufferUsages::empty();
        // Never-empty buffers: wgpu rejects zero-sized bindings.
        let bind_buf = storage("bind pose", bytemuck::cast_slice(&bind), none);
        let joint_buf = storage(
            "joints",
            bytemuck::cast_slice(&pad(joints, [0u32; 4])),
            none,
        );
        let weight_buf = storage(
            "weights",
            bytemuck::cast_slice(&pad(weights, Vec4::ZERO)),
            none,
        );
        // The morph buffer: the target weights (4 per vec4, rewritten by set_morph_weights),
        // then the entries. One buffer, as WebGPU allows 8 storage buffers per stage.
        let targets = mesh.morph_target_count();
        let morph_base = targets.div_ceil(4);
        let mut morph = vec![[0u32; 4]; morph_base];
        morph.extend_from_slice(&entries);
        let morph_buf = storage(
            "morph targets",
            bytemuck::cast_slice(&pad(morph, [0u32; 4])),
            wgpu::BufferUsages::COPY_DST,
        );
        let palette_len = mesh.palette_len().max(1);
        let mat_buf = |label: &str| {
            d.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (palette_len * 64) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let palette = mat_buf("palette");
        let normal_palette = mat_buf("normal palette");
        let dual = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("dual quaternions"),
            size: (palette_len * 48) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let params = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skin params"),
            size: std::mem::size_of::<Params>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let output = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("skinned vertices"),
            size: (n.max(1) * 32) as u64,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::VERTEX
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("skin.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("shaders/skin.wgsl").into()),
        });
        let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("skinning"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let layout = pipeline.get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry> = [
            &palette,
            &normal_palette,
            &bind_buf,
            &joint_buf,
            &weight_buf,
            &output,
            &params,
            &dual,
            &morph_buf,
        ]
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
        let bind_group = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("skinning"),
            layout: &layout,
            entries: &entries,
        });
        Ok(GpuSkinner {
            count: n as u32,
            palette_len: mesh.palette_len(),
            palette,
            normal_palette,
            params,
            dual,
            output,
            bind_group,
            pipeline,
            normals: Vec::new(),
            duals: Vec::new(),
            morph_binding: mesh.morph_binding().clone(),
            morph: morph_buf,
            morph_base: morph_base as u32,
            target_weights: vec![0.0; targets],
            morph_active: false,
        })
    }

    /// Number of morph targets.
    pub fn morph_target_count(&self) -> usize {
        self.morph_binding.target_count()
    }

    /// Sets the morph weights the next [`GpuSkinner::encode`] applies: one per skeleton morph
    /// channel, as [`skelett::morph::morph`] takes them (from
    /// [`skelett::animator::Animator::morph_weights`] or [`skelett::sample_morph_weights`]).
    /// NaN counts as 0, weights outside 0..=1 extrapolate. Weights stay set until the next
    /// call; a mesh without targets ignores them.
    ///
    /// ```no_run
    /// # fn f(gpu: &skelett_render::Gpu, mesh: &skelett::skin::SkinningMesh,
    /// #      palette: &skelett::skin::SkinPalette) -> Result<(), skelett_render::RenderError> {
    /// let mut skinner = skelett_render::GpuSkinner::new(gpu, mesh)?;
    /// skinner.set_morph_weights(gpu, &[0.5, 1.0])?; // one weight per morph channel
    /// let (positions, normals) = skinner.skin_and_read(gpu, palette)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`RenderError::Skelett`] if `weights` does not reach the highest channel a target
    /// reads; the previous weights stay then.
    pub fn set_morph_weights(&mut self, gpu: &Gpu, weights: &[f32]) -> Result<(), RenderError> {
        if self.morph_binding.target_count() == 0 {
            return Ok(());
        }
        let active = self
            .morph_binding
            .target_weights(weights, &mut self.target_weights)
            .map_err(RenderError::from)?;
        self.morph_active = active > 0;
        if self.morph_active {
            gpu.queue
                .write_buffer(&self.morph, 0, bytemuck::cast_slice(&self.target_weights));
        }
        Ok(())
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.count as usize
    }

    /// The skinned vertices: per vertex a position (`vec4`, w = 1) then a unit normal
    /// (`vec4`, w = 0), in the mesh's skinning order.
    pub fn output(&self) -> &wgpu::Buffer {
        &self.output
    }

    /// Records the skinning dispatch into `encoder` after queueing the palette upload.
    ///
    /// # Errors
    /// [`RenderError::Skelett`] if the palette is shorter than the mesh needs.
    pub fn encode(
        &mut self,
        gpu: &Gpu,
        palette: &SkinPalette,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<(), RenderError> {
        let m = palette.matrices();
        if m.len() < self.palette_len {
            return Err(skelett::Error::Length {
                what: "palette",
                expected: self.palette_len,
                got: m.len(),
            }
            .into());
        }
        let m = &m[..self.palette_len];
        if !m.is_empty() {
            gpu.queue
                .write_buffer(&self.palette, 0, bytemuck::cast_slice(m));
        }
        let use_normal = palette.uses_normal_matrices();
        if use_normal && !m.is_empty() {
            self.normals.clear();
            self.normals.extend(m.iter().map(|m| {
                let m3 = Mat3::from_mat4(*m);
                let det = m3.determinant();
                let it = if det.abs() > f32::MIN_POSITIVE && det.is_finite() {
                    m3.inverse().transpose()
                } else {
                    m3
                };
                Mat4::from_mat3(it)
            }));
            gpu.queue
                .write_buffer(&self.normal_palette, 0, bytemuck::cast_slice(&self.normals));
        }
        let dq = palette.dual_quaternions();
        if let Some((dual, rigid)) = dq.filter(|_| !m.is_empty()) {
            self.duals.clear();
            for (q, &r) in dual.iter().zip(rigid).take(self.palette_len) {
                self.duals.push(Vec4::from(q.real));
                self.duals.push(Vec4::from(q.dual));
                self.duals.push(Vec4::new(r as u32 as f32, 0.0, 0.0, 0.0));
            }
            gpu.queue
                .write_buffer(&self.dual, 0, bytemuck::cast_slice(&self.duals));
        }
        gpu.queue.write_buffer(
            &self.params,
            0,
            bytemuck::bytes_of(&Params {
                count: self.count,
                use_normal: use_normal as u32,
                method: dq.is_some() as u32,
                morph: self.morph_active as u32,
                morph_base: self.morph_base,
                _pad: [0; 3],
            }),
        );
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("skinning"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.count.div_ceil(64), 1, 1);
        Ok(())
    }

    /// Skins on the GPU and waits for the result: positions and normals, in skinning order.
    /// Meant for tests and tools; renderers use [`GpuSkinner::encode`] and draw from
    /// [`GpuSkinner::output`] without a round trip.
    ///
    /// # Errors
    /// As [`GpuSkinner::encode`], or [`RenderError::Readback`].
    #[allow(clippy::type_complexity)]
    pub fn skin_and_read(
        &mut self,
        gpu: &Gpu,
        palette: &SkinPalette,
    ) -> Result<(Vec<glam::Vec3>, Vec<glam::Vec3>), RenderError> {
        let mut enc = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        self.encode(gpu, palette, &mut enc)?;
        gpu.queue.submit([enc.finish()]);
        let bytes = gpu.read_buffer(&self.output, self.count as u64 * 32)?;
        let v: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&bytes);
        let xyz = |a: &[f32; 4]| glam::Vec3::new(a[0], a[1], a[2]);
        Ok((
            v.iter().step_by(2).map(xyz).collect(),
            v.iter().skip(1).step_by(2).map(xyz).collect(),
        ))
    }
}

fn pad<T: Copy>(mut v: Vec<T>, zero: T) -> Vec<T> {
    if v.is_empty() {
        v.push(zero);
    }
    v
}

/// The mesh's sparse targets regrouped per vertex: `offsets[v]..offsets[v + 1]` index the
/// vertex's entries, two `vec4`s of 32-bit words each: (position offset, target index) and
/// (normal offset, 0). Targets appear in ascending order within a vertex, as the CPU adds
/// them.
fn morph_rows(mesh: &SkinningMesh) -> (Vec<u32>, Vec<[u32; 4]>) {
    let n = mesh.vertex_count();
    let mut counts = vec![0u32; n + 1];
    let targets: Vec<_> = (0..mesh.morph_target_count())
        .filter_map(|k| mesh.morph_target(k))
        .collect();
    for t in &targets {
        for &r in t.rows {
            counts[r as usize + 1] += 1;
        }
    }
    for v in 0..n {
        counts[v + 1] += counts[v];
    }
    let mut fill = counts.clone();
    let mut entries = vec![[0u32; 4]; 2 * counts[n] as usize];
    let bits = |v: glam::Vec3, w: u32| [v.x.to_bits(), v.y.to_bits(), v.z.to_bits(), w];
    for (k, t) in targets.iter().enumerate() {
        for (i, &r) in t.rows.iter().enumerate() {
            let at = fill[r as usize] as usize;
            fill[r as usize] += 1;
            let p = t.positions.get(i).copied().unwrap_or_default();
            let nn = t.normals.get(i).copied().unwrap_or_default();
            entries[2 * at] = bits(p, k as u32);
            entries[2 * at + 1] = bits(nn, 0);
        }
    }
    (counts, entries)
}
