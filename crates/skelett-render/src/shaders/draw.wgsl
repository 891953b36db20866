// Lit skinned meshes, wireframes and coloured lines (grid, skeleton overlay).

struct Camera {
    view_proj: mat4x4<f32>,
    // The skeleton's root transform (model space to scene space).
    root: mat4x4<f32>,
    // Its inverse-transpose, for normals.
    root_normal: mat4x4<f32>,
    eye: vec4<f32>,
    light_dir: vec4<f32>,
};

struct Material {
    base_color: vec4<f32>,
    // x: 1 when the base colour texture is used.
    flags: vec4<f32>,
};

@group(0) @binding(0) var<uniform> camera: Camera;
@group(1) @binding(0) var<uniform> material: Material;
@group(1) @binding(1) var base_tex: texture_2d<f32>;
@group(1) @binding(2) var base_sampler: sampler;

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) uv: vec2<f32>,
    @location(2) world: vec3<f32>,
};

@vertex
fn vs_mesh(@location(0) pos: vec3<f32>, @location(1) normal: vec3<f32>, @location(2) uv: vec2<f32>) -> MeshOut {
    var o: MeshOut;
    let world = camera.root * vec4<f32>(pos, 1.0);
    o.clip = camera.view_proj * world;
    o.normal = (camera.root_normal * vec4<f32>(normal, 0.0)).xyz;
    o.uv = uv;
    o.world = world.xyz;
    return o;
}

@fragment
fn fs_mesh(i: MeshOut) -> @location(0) vec4<f32> {
    var albedo = material.base_color;
    if (material.flags.x > 0.5) {
        albedo = albedo * textureSample(base_tex, base_sampler, i.uv);
    }
    var n = normalize(i.normal);
    let to_eye = normalize(camera.eye.xyz - i.world);
    // Two-sided: light the side that faces the camera.
    if (dot(n, to_eye) < 0.0) {
        n = -n;
    }
    let l = normalize(-camera.light_dir.xyz);
    let diffuse = max(dot(n, l), 0.0);
    // Hemisphere ambient: sky above, ground bounce below.
    let sky = mix(vec3<f32>(0.10, 0.09, 0.08), vec3<f32>(0.22, 0.25, 0.30), n.y * 0.5 + 0.5);
    let h = normalize(l + to_eye);
    let spec = pow(max(dot(n, h), 0.0), 32.0) * 0.08;
    let rgb = albedo.rgb * (sky + diffuse * vec3<f32>(0.80, 0.76, 0.68)) + vec3<f32>(spec);
    return vec4<f32>(rgb, 1.0);
}

@vertex
fn vs_wire(@location(0) pos: vec3<f32>) -> @builtin(position) vec4<f32> {
    return camera.view_proj * (camera.root * vec4<f32>(pos, 1.0));
}

@fragment
fn fs_wire() -> @location(0) vec4<f32> {
    return vec4<f32>(0.05, 0.05, 0.06, 1.0);
}

struct LineOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) color: vec4<f32>,
};

// Lines are given in scene space.
@vertex
fn vs_line(@location(0) pos: vec3<f32>, @location(1) color: vec4<f32>) -> LineOut {
    var o: LineOut;
    o.clip = camera.view_proj * vec4<f32>(pos, 1.0);
    o.color = color;
    return o;
}

@fragment
fn fs_line(i: LineOut) -> @location(0) vec4<f32> {
    return i.color;
}
