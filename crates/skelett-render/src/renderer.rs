//! The offscreen renderer: skinned meshes (lit, shaded, base colour), a wireframe, a
//! skeleton overlay, a ground grid (or a ground surface given as heights) and markers (IK
//! targets), drawn into a multisampled texture and read back.
//!
//! Meshes without normals get area-weighted smooth normals at load, so they can be lit.
//!
//! ```text
//! Renderer::new(gpu, character, options)   per mesh primitive: SkinningMesh -> GpuSkinner,
//!                                      index and edge buffers, UVs, material
//! render(gpu, model, camera):
//!   SkinPalette::update per skin (CPU, from the model matrices)
//!   compute: GpuSkinner::encode per primitive -> skinned vertex buffers
//!   render pass (4x MSAA): mesh -> grid -> wireframe -> skeleton overlay, markers (always on top)
//!   resolve -> copy to a buffer -> Image
//! ```

use std::sync::Arc;

use glam::{Mat4, Vec3};
use skelett::skin::{SkinPalette, SkinningMesh, SkinningMethod};
use skelett::{Skeleton, Skin};
use wgpu::util::DeviceExt;

use crate::prepare::smooth_normals;
use crate::targets::Targets;
use crate::texture::{srgb_texture, upload_texture};
use crate::{Bounds, Character, Gpu, GpuSkinner, Image, OrbitCamera, RenderError, RenderOptions};

pub(crate) const SAMPLES: u32 = 4;
pub(crate) const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
pub(crate) const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CameraUniform {
    view_proj: [f32; 16],
    root: [f32; 16],
    root_normal: [f32; 16],
    eye: [f32; 4],
    light_dir: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct MaterialUniform {
    base_color: [f32; 4],
    flags: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct LineVertex {
    pos: [f32; 3],
    color: [f32; 4],
}

struct DrawPrimitive {
    skin: usize,
    skinner: GpuSkinner,
    indices: wgpu::Buffer,
    index_count: u32,
    edges: wgpu::Buffer,
    edge_count: u32,
    uvs: wgpu::Buffer,
    material: wgpu::BindGroup,
}

/// Renders one asset's skinned meshes offscreen. Keep it for the whole animation: buffers
/// and pipelines are made once.
pub struct Renderer {
    options: RenderOptions,
    skeleton: Arc<Skeleton>,
    skins: Vec<Skin>,
    /// Scene-space bounds of the bind-pose meshes.
    mesh_bounds: Option<Bounds>,
    palettes: Vec<SkinPalette>,
    primitives: Vec<DrawPrimitive>,
    targets: Targets,
    camera: wgpu::Buffer,
    camera_group: wgpu::BindGroup,
    mesh_pipeline: wgpu::RenderPipeline,
    wire_pipeline: wgpu::RenderPipeline,
    grid_pipeline: wgpu::RenderPipeline,
    overlay_pipeline: wgpu::RenderPipeline,
    lines: wgpu::Buffer,
    line_capacity: usize,
    line_scratch: Vec<LineVertex>,
    grid: Vec<LineVertex>,
    /// Scene-space points drawn as crosses on top of everything (IK targets).
    markers: Vec<(Vec3, [f32; 4])>,
}

impl Renderer {
    /// Prepares every skinned mesh primitive of `character` for drawing.
    ///
    /// # Errors
    /// [`RenderError::Invalid`] for an empty image size; [`RenderError::Skelett`] if a mesh
    /// does not fit its skin.
    pub fn new(
        gpu: &Gpu,
        character: Character<'_>,
        options: RenderOptions,
    ) -> Result<Renderer, RenderError> {
        let (w, h) = (options.width, options.height);
        let d = &gpu.device;
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("draw.wgsl"),
            source: wgpu::ShaderSource::Wgsl(include_str!("shaders/draw.wgsl").into()),
        });
        let camera_layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("camera"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let material_layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("material"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        });
        let camera = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("camera"),
            size: std::mem::size_of::<CameraUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let camera_group = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("camera"),
            layout: &camera_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: camera.as_entire_binding(),
            }],
        });
        let mesh_layout = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("mesh"),
            bind_group_layouts: &[&camera_layout, &material_layout],
            push_constant_ranges: &[],
        });
        let line_layout = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("lines"),
            bind_group_layouts: &[&camera_layout],
            push_constant_ranges: &[],
        });
        let skinned_layout = wgpu::VertexBufferLayout {
            array_stride: 32,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &[
                wgpu::VertexAttribute {
                    format: wgpu::VertexFormat::Float32x3,
                    offset: 0,
                    shader_location: 0,
                },
                wgpu::VertexAttribute {
                    format: wgpu::VertexFormat::Float32x3,
                    offset: 16,
                    shader_location: 1,
                },
            ],
        };
        let uv_layout = wgpu::VertexBufferLayout {
            array_stride: 8,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &[wgpu::VertexAttribute {
                format: wgpu::VertexFormat::Float32x2,
                offset: 0,
                shader_location: 2,
            }],
        };
        let line_vertex_layout = wgpu::VertexBufferLayout {
            array_stride: std::mem::size_of::<LineVertex>() as u64,
            step_mode: wgpu::VertexStepMode::Vertex,
            // Position then colour, packed (LineVertex is repr(C), 12 + 16 bytes).
            attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4],
        };
        let pipeline = |label: &str,
                        layout: &wgpu::PipelineLayout,
                        vs: &str,
                        fs: &str,
                        buffers: &[wgpu::VertexBufferLayout],
                        topology: wgpu::PrimitiveTopology,
                        depth_compare: wgpu::CompareFunction,
                        depth_write: bool| {
            d.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    cull_mode: None,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: depth_write,
                    depth_compare,
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: wgpu::MultisampleState {
                    count: SAMPLES,
                    ..Default::default()
                },
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: COLOR_FORMAT,
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview: None,
                cache: None,
            })
        };
        use wgpu::CompareFunction::{Always, LessEqual};
        use wgpu::PrimitiveTopology::{LineList, TriangleList};
        let mesh_pipeline = pipeline(
            "mesh",
            &mesh_layout,
            "vs_mesh",
            "fs_mesh",
            &[skinned_layout.clone(), uv_layout],
            TriangleList,
            LessEqual,
            true,
        );
        let wire_pipeline = pipeline(
            "wireframe",
            &line_layout,
            "vs_wire",
            "fs_wire",
            &[skinned_layout],
            LineList,
            LessEqual,
            false,
        );
        let grid_pipeline = pipeline(
            "grid",
            &line_layout,
            "vs_line",
            "fs_line",
            std::slice::from_ref(&line_vertex_layout),
            LineList,
            LessEqual,
            true,
        );
        let overlay_pipeline = pipeline(
            "skeleton overlay",
            &line_layout,
            "vs_line",
            "fs_line",
            &[line_vertex_layout],
            LineList,
            Always,
            false,
        );

        // A 1x1 white texture stands in where a primitive has no base colour texture.
        let white_view = srgb_texture(gpu, "white", 1, 1, &[255, 255, 255, 255]);
        let sampler = d.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("base colour"),
            address_mode_u: wgpu::AddressMode::Repeat,
            address_mode_v: wgpu::AddressMode::Repeat,
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        });

        let mut primitives = Vec::new();
        let mut mesh_bounds: Option<Bounds> = None;
        let mut rest_model = vec![Mat4::IDENTITY; character.skeleton.len()];
        skelett::local_to_model(
            character.skeleton,
            character.skeleton.rest_pose(),
            0,
            &mut rest_model,
        )?;
        for mesh in character.meshes {
            let skin = character.skins.get(mesh.skin).ok_or_else(|| {
                RenderError::Invalid(format!("mesh {:?} names a missing skin", mesh.name))
            })?;
            for p in &mesh.primitives {
                let with_normals;
                let p = if p.normals.is_none() {
                    with_normals = skelett::MeshPrimitive {
                        normals: Some(smooth_normals(&p.positions, &p.indices)),
                        ..p.clone()
                    };
                    &with_normals
                } else {
                    p
                };
                let mut sm = SkinningMesh::new(p, skin.len())?;
                if !mesh.morph_channels.is_empty() {
                    sm.bind_morph(&mesh.morph_channels, &mesh.morph_full_weights)?;
                }
                // Bounds of the mesh as the rest pose skins it: a rigid mesh bound to its
                // node (positions in the node's space) lands where it is drawn.
                let mut rest_palette = SkinPalette::new(SkinningMethod::Linear);
                rest_palette.update(skin, &rest_model)?;
                let mut rest = vec![Vec3::ZERO; sm.vertex_count()];
                skelett::skin::skin(
                    &sm,
                    &rest_palette,
                    skelett::skin::SkinOutput {
                        positions: &mut rest,
                        normals: None,
                        tangents: None,
                    },
                )?;
                let root = character.skeleton.root_transform();
                if let Some(b) = Bounds::of(rest.iter().map(|&x| root.transform_point3(x))) {
                    mesh_bounds = Some(mesh_bounds.map_or(b, |m| m.union(b)));
                }
                let skinner = GpuSkinner::new(gpu, &sm)?;
                let tri = sm.indices();
                let mut edges = Vec::with_capacity(tri.len() * 2);
                for t in tri.chunks_exact(3) {
                    edges.extend_from_slice(&[t[0], t[1], t[1], t[2], t[2], t[0]]);
                }
                let uvs: Vec<[f32; 2]> = match &p.uvs {
                    Some(uv) => sm.reorder(uv)?.iter().map(|v| v.to_array()).collect(),
                    None => vec![[0.0, 0.0]; sm.vertex_count()],
                };
                let buf = |label: &str, bytes: &[u8], usage| {
                    d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some(label),
                        contents: if bytes.is_empty() { &[0; 4] } else { bytes },
                        usage,
                    })
                };
                let texture = p
                    .base_color_texture
                    .and_then(|i| character.images.get(i).cloned().flatten())
                    .and_then(|img| upload_texture(gpu, &img));
                let material = MaterialUniform {
                    base_color: p.base_color.to_array(),
                    flags: [texture.is_some() as u32 as f32, 0.0, 0.0, 0.0],
                };
                let texture_view = texture.as_ref().unwrap_or(&white_view);
                let material_buf = buf(
                    "material",
                    bytemuck::bytes_of(&material),
                    wgpu::BufferUsages::UNIFORM,
                );
                let material = d.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("material"),
                    layout: &material_layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: material_buf.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::TextureView(texture_view),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: wgpu::BindingResource::Sampler(&sampler),
                        },
                    ],
                });
                primitives.push(DrawPrimitive {
                    skin: mesh.skin,
                    skinner,
                    indices: buf(
                        "indices",
                        bytemuck::cast_slice(tri),
                        wgpu::BufferUsages::INDEX,
                    ),
                    index_count: tri.len() as u32,
                    edges: buf(
                        "edges",
                        bytemuck::cast_slice(&edges),
                        wgpu::BufferUsages::INDEX,
                    ),
                    edge_count: edges.len() as u32,
                    uvs: buf(
                        "uvs",
                        bytemuck::cast_slice(&uvs),
                        wgpu::BufferUsages::VERTEX,
                    ),
                    material,
                });
            }
        }

        let targets = Targets::new(gpu, w, h)?;
        // Grid (2 x 2 x 21 vertices) plus, per joint, a bone and three axes (8 vertices).
        let line_capacity = 84 + character.skeleton.len() * 8;
        let lines = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("lines"),
            size: (line_capacity * std::mem::size_of::<LineVertex>()) as u64,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let rest = character.skeleton.morph_rest();
        if rest.len() >= character.skeleton.morph_channel_count() {
            for p in &mut primitives {
                // A mesh whose channels the skeleton lacks shows unmorphed.
                let _ = p.skinner.set_morph_weights(gpu, rest);
            }
        }
        Ok(Renderer {
            options,
            skeleton: character.skeleton.clone(),
            skins: character.skins.to_vec(),
            mesh_bounds,
            palettes: vec![SkinPalette::new(SkinningMethod::Linear); character.skins.len()],
            primitives,
            targets,
            camera,
            camera_group,
            mesh_pipeline,
            wire_pipeline,
            grid_pipeline,
            overlay_pipeline,
            lines,
            line_capacity,
            line_scratch: Vec::with_capacity(line_capacity),
            grid: Vec::new(),
            markers: Vec::new(),
        })
    }

    /// The options it was made with.
    pub fn options(&self) -> &RenderOptions {
        &self.options
    }

    /// Changes what is drawn (the image size stays).
    pub fn set_layers(&mut self, skin: bool, wireframe: bool, skeleton: bool, grid: bool) {
        self.options.skin = skin;
        self.options.wireframe = wireframe;
        self.options.skeleton = skeleton;
        self.options.grid = grid;
    }

    /// Number of mesh primitives drawn.
    pub fn primitive_count(&self) -> usize {
        self.primitives.len()
    }

    /// Places the ground grid: a square of `2 * half_extent` around `center` at its height.
    pub fn set_ground(&mut self, center: Vec3, half_extent: f32) {
        self.grid.clear();
        let n = 20;
        let step = 2.0 * half_extent / n as f32;
        for i in 0..=n {
            let o = -half_extent + step * i as f32;
            let c = if i == n / 2 {
                [0.32, 0.34, 0.38, 1.0]
            } else {
                [0.16, 0.17, 0.19, 1.0]
            };
            for (a, b) in [
                (
                    Vec3::new(o, 0.0, -half_extent),
                    Vec3::new(o, 0.0, half_extent),
                ),
                (
                    Vec3::new(-half_extent, 0.0, o),
                    Vec3::new(half_extent, 0.0, o),
                ),
            ] {
                self.grid.push(LineVertex {
                    pos: (center + a).to_array(),
                    color: c,
                });
                self.grid.push(LineVertex {
                    pos: (center + b).to_array(),
                    color: c,
                });
            }
        }
    }

    /// Replaces the ground grid by a surface given as heights: `height(x, z)` is the
    /// scene-space height of the ground at `(x, z)` (`None` where there is none), drawn as 21
    /// lines each way over the square of `2 * half_extent` around `center`, each line bent to
    /// follow the ground in 96 pieces, so that slopes, steps and terrain show as they are.
    /// A piece whose ends are both missing, or that jumps more than a tenth of the square
    /// (a cliff, not a step), is left out.
    ///
    /// ```no_run
    /// # fn f(renderer: &mut skelett_render::Renderer) {
    /// use glam::Vec3;
    /// // A 15 degree slope rising along +Z through the origin.
    /// let tan = 15f32.to_radians().tan();
    /// renderer.set_ground_surface(Vec3::ZERO, 2.0, &|_x, z| Some(z * tan));
    /// # }
    /// ```
    pub fn set_ground_surface(
        &mut self,
        center: Vec3,
        half_extent: f32,
        height: &dyn Fn(f32, f32) -> Option<f32>,
    ) {
        self.grid.clear();
        let (n, pieces) = (20, 96);
        let step = 2.0 * half_extent / n as f32;
        let piece = 2.0 * half_extent / pieces as f32;
        let cliff = 0.2 * half_extent;
        for i in 0..=n {
            let o = -half_extent + step * i as f32;
            let c = if i == n / 2 {
                [0.36, 0.38, 0.42, 1.0]
            } else {
                [0.2, 0.21, 0.24, 1.0]
            };
            for along_z in [true, false] {
                let at = |k: usize| {
                    let s = -half_extent + piece * k as f32;
                    let (x, z) = if along_z {
                        (center.x + o, center.z + s)
                    } else {
                        (center.x + s, center.z + o)
                    };
                    height(x, z)
                        .filter(|h| h.is_finite())
                        .map(|h| Vec3::new(x, h, z))
                };
                let mut prev = at(0);
                for k in 1..=pieces {
                    let next = at(k);
                    if let (Some(a), Some(b)) = (prev, next) {
                        if (a.y - b.y).abs() <= cliff {
                            for p in [a, b] {
                                self.grid.push(LineVertex {
                                    pos: p.to_array(),
                                    color: c,
                                });
                            }
                        }
                    }
                    prev = next;
                }
            }
        }
    }

    /// Scene-space points drawn as small crosses on top of the picture (IK targets, look-at
    /// points), each in its RGBA colour; replaces the previous ones.
    pub fn set_markers(&mut self, markers: &[(Vec3, [f32; 4])]) {
        self.markers.clear();
        self.markers.extend_from_slice(markers);
    }

    /// The scene-space bounds of the bind-pose meshes and of the joints posed by `model`.
    pub fn bounds(&self, model: &[Mat4]) -> Option<Bounds> {
        let root = self.skeleton.root_transform();
        let joints = Bounds::of(
            model
                .iter()
                .take(self.skeleton.len())
                .map(|m| root.transform_point3(m.w_axis.truncate())),
        );
        match (joints, self.mesh_bounds) {
            (Some(a), Some(b)) => Some(a.union(b)),
            (a, b) => a.or(b),
        }
    }

    /// Skins every primitive on the GPU with the skeleton posed by `model` (model-space
    /// joint matrices, as `skelett::local_to_model` writes them), draws, and reads the image
    /// back.
    ///
    /// # Errors
    /// [`RenderError::Skelett`] if `model` is shorter than the skeleton;
    /// [`RenderError::Readback`] if the GPU fails.
    pub fn render(
        &mut self,
        gpu: &Gpu,
        model: &[Mat4],
        camera: &OrbitCamera,
    ) -> Result<Image, RenderError> {
        self.frame(gpu, model, camera, true)?;
        let t = &self.targets;
        let (w, h) = (t.width, t.height);
        let bytes = gpu.map_read(&t.readback)?;
        let mut rgba = Vec::with_capacity((w * h * 4) as usize);
        for row in bytes.chunks_exact(t.padded_row as usize).take(h as usize) {
            rgba.extend_from_slice(&row[..(w * 4) as usize]);
        }
        Ok(Image {
            width: w,
            height: h,
            rgba,
        })
    }

    /// As [`Renderer::render`] without reading the image back: the frame is drawn into
    /// [`Renderer::target`] (for a window to show, e.g. as an egui texture).
    ///
    /// # Errors
    /// As [`Renderer::render`].
    pub fn draw(
        &mut self,
        gpu: &Gpu,
        model: &[Mat4],
        camera: &OrbitCamera,
    ) -> Result<(), RenderError> {
        self.frame(gpu, model, camera, false)
    }

    /// The resolved colour image (RGBA8 sRGB, `TEXTURE_BINDING` usage) the last frame was
    /// drawn into. It is replaced by [`Renderer::resize`].
    pub fn target(&self) -> &wgpu::TextureView {
        &self.targets.resolve_view
    }

    /// Sets the morph weights every primitive applies from the next frame on: one per
    /// skeleton morph channel ([`skelett::animator::Animator::morph_weights`],
    /// [`skelett::sample_morph_weights`]). Until the first call, meshes show with the
    /// skeleton's rest weights ([`skelett::Skeleton::morph_rest`], the file's defaults).
    ///
    /// # Errors
    /// [`RenderError::Skelett`] if `weights` is shorter than a mesh's channels need.
    pub fn set_morph_weights(&mut self, gpu: &Gpu, weights: &[f32]) -> Result<(), RenderError> {
        for p in &mut self.primitives {
            p.skinner.set_morph_weights(gpu, weights)?;
        }
        Ok(())
    }

    /// Changes the image size (new targets; meshes and pipelines stay).
    ///
    /// # Errors
    /// [`RenderError::Invalid`] for a size the GPU cannot hold.
    pub fn resize(&mut self, gpu: &Gpu, width: u32, height: u32) -> Result<(), RenderError> {
        if (width, height) != (self.targets.width, self.targets.height) {
            self.targets = Targets::new(gpu, width, height)?;
            self.options.width = width;
            self.options.height = height;
        }
        Ok(())
    }

    fn frame(
        &mut self,
        gpu: &Gpu,
        model: &[Mat4],
        camera: &OrbitCamera,
        readback: bool,
    ) -> Result<(), RenderError> {
        let (w, h) = (self.targets.width, self.targets.height);
        let n = self.skeleton.len();
        if model.len() < n {
            return Err(skelett::Error::Length {
                what: "model",
                expected: n,
                got: model.len(),
            }
            .into());
        }
        for (palette, skin) in self.palettes.iter_mut().zip(&self.skins) {
            palette.update(skin, model)?;
        }
        let root = self.skeleton.root_transform();
        let aspect = w as f32 / h as f32;
        let eye = camera.eye();
        let light = Vec3::new(-0.4, -1.0, -0.6).normalize();
        gpu.queue.write_buffer(
            &self.camera,
            0,
            bytemuck::bytes_of(&CameraUniform {
                view_proj: camera.view_proj(aspect).to_cols_array(),
                root: root.to_cols_array(),
                root_normal: normal_matrix(&root).to_cols_array(),
                eye: eye.extend(1.0).to_array(),
                light_dir: light.extend(0.0).to_array(),
            }),
        );
        // Lines: the grid (or ground surface), then the skeleton overlay and the markers.
        self.line_scratch.clear();
        if self.options.grid {
            self.line_scratch.extend_from_slice(&self.grid);
        }
        let grid_count = self.line_scratch.len() as u32;
        if self.options.skeleton {
            let size = camera.distance * 0.02;
            let world: Vec<Mat4> = model[..n].iter().map(|m| root * *m).collect();
            for j in 0..n {
                let p = world[j].w_axis.truncate();
                if let Some(parent) = self.skeleton.parent(j as skelett::JointIndex) {
                    let q = world[parent as usize].w_axis.truncate();
                    self.line_scratch.push(LineVertex {
                        pos: q.to_array(),
                        color: [1.0, 0.78, 0.1, 1.0],
                    });
                    self.line_scratch.push(LineVertex {
                        pos: p.to_array(),
                        color: [1.0, 0.78, 0.1, 1.0],
                    });
                }
                for (axis, color) in [
                    (world[j].x_axis, [1.0, 0.15, 0.1, 1.0]),
                    (world[j].y_axis, [0.2, 1.0, 0.2, 1.0]),
                    (world[j].z_axis, [0.2, 0.4, 1.0, 1.0]),
                ] {
                    let dir = axis.truncate().normalize_or_zero() * size;
                    self.line_scratch.push(LineVertex {
                        pos: p.to_array(),
                        color,
                    });
                    self.line_scratch.push(LineVertex {
                        pos: (p + dir).to_array(),
                        color,
                    });
                }
            }
        }
        let size = camera.distance * 0.04;
        for &(p, color) in &self.markers {
            for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
                for q in [p - axis * size, p + axis * size] {
                    self.line_scratch.push(LineVertex {
                        pos: q.to_array(),
                        color,
                    });
                }
            }
        }
        if self.line_scratch.len() > self.line_capacity {
            // A ground surface or markers added since: a larger buffer, made once.
            self.line_capacity = self.line_scratch.len().next_power_of_two();
            self.lines = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("lines"),
                size: (self.line_capacity * std::mem::size_of::<LineVertex>()) as u64,
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
        }
        if !self.line_scratch.is_empty() {
            gpu.queue
                .write_buffer(&self.lines, 0, bytemuck::cast_slice(&self.line_scratch));
        }
        let overlay_count = self.line_scratch.len() as u32 - grid_count;

        let mut enc = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame"),
            });
        if self.options.skin || self.options.wireframe {
            for p in &mut self.primitives {
                p.skinner.encode(gpu, &self.palettes[p.skin], &mut enc)?;
            }
        }
        {
            let bg = self.options.background;
            let mut pass = enc.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("draw"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &self.targets.color,
                    depth_slice: None,
                    resolve_target: Some(&self.targets.resolve_view),
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color {
                            r: bg[0] as f64,
                            g: bg[1] as f64,
                            b: bg[2] as f64,
                            a: 1.0,
                        }),
                        store: wgpu::StoreOp::Discard,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &self.targets.depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Discard,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
            });
            pass.set_bind_group(0, &self.camera_group, &[]);
            if self.options.skin {
                pass.set_pipeline(&self.mesh_pipeline);
                for p in &self.primitives {
                    pass.set_bind_group(1, &p.material, &[]);
                    pass.set_vertex_buffer(0, p.skinner.output().slice(..));
                    pass.set_vertex_buffer(1, p.uvs.slice(..));
                    pass.set_index_buffer(p.indices.slice(..), wgpu::IndexFormat::Uint32);
                    pass.draw_indexed(0..p.index_count, 0, 0..1);
                }
            }
            if grid_count > 0 {
                pass.set_pipeline(&self.grid_pipeline);
                pass.set_vertex_buffer(0, self.lines.slice(..));
                pass.draw(0..grid_count, 0..1);
            }
            if self.options.wireframe {
                pass.set_pipeline(&self.wire_pipeline);
                for p in &self.primitives {
                    pass.set_vertex_buffer(0, p.skinner.output().slice(..));
                    pass.set_index_buffer(p.edges.slice(..), wgpu::IndexFormat::Uint32);
                    pass.draw_indexed(0..p.edge_count, 0, 0..1);
                }
            }
            if overlay_count > 0 {
                pass.set_pipeline(&self.overlay_pipeline);
                pass.set_vertex_buffer(0, self.lines.slice(..));
                pass.draw(grid_count..grid_count + overlay_count, 0..1);
            }
        }
        if readback {
            enc.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture: &self.targets.resolve,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: &self.targets.readback,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(self.targets.padded_row),
                        rows_per_image: Some(h),
                    },
                },
                wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
            );
        }
        gpu.queue.submit([enc.finish()]);
        Ok(())
    }

    /// Where a scene-space point lands in the image (pixels from the top left), or `None`
    /// behind the camera.
    pub fn project(&self, camera: &OrbitCamera, point: Vec3) -> Option<(f32, f32)> {
        let (w, h) = (self.options.width as f32, self.options.height as f32);
        let clip = camera.view_proj(w / h) * point.extend(1.0);
        if clip.w <= 0.0 {
            return None;
        }
        let ndc = clip / clip.w;
        Some(((ndc.x * 0.5 + 0.5) * w, (0.5 - ndc.y * 0.5) * h))
    }
}

/// The inverse-transpose of `m`'s upper 3x3 (normals' transform), or `m` itself if singular.
fn normal_matrix(m: &Mat4) -> Mat4 {
    let m3 = glam::Mat3::from_mat4(*m);
    let det = m3.determinant();
    if det.abs() > f32::MIN_POSITIVE && det.is_finite() {
        Mat4::from_mat3(m3.inverse().transpose())
    } else {
        Mat4::from_mat3(m3)
    }
}
