// Linear blend skinning, one invocation per vertex, in the CPU path's skinning order and
// arithmetic order (skelett::skin): palette matrices blended with the weights (the last
// weight stored as one minus the others), the vertex transformed once; normals blend the
// inverse-transposes when `use_normal` is set, else use the blended matrix; renormalised.

struct Params {
    count: u32,
    use_normal: u32,
    _pad0: u32,
    _pad1: u32,
};

@group(0) @binding(0) var<storage, read> palette: array<mat4x4<f32>>;
@group(0) @binding(1) var<storage, read> normal_palette: array<mat4x4<f32>>;
// Per vertex: position (w = influence count), normal.
@group(0) @binding(2) var<storage, read> bind: array<vec4<f32>>;
// Per vertex: 8 palette indices as two vec4<u32>, 8 weights as two vec4<f32>.
@group(0) @binding(3) var<storage, read> joints: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> weights: array<vec4<f32>>;
// Per vertex: skinned position (w = 1), skinned normal (w = 0).
@group(0) @binding(5) var<storage, read_write> skinned: array<vec4<f32>>;
@group(0) @binding(6) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if (v >= params.count) {
        return;
    }
    let p = bind[2u * v];
    let n = bind[2u * v + 1u].xyz;
    let k = u32(p.w);
    if (k == 0u) {
        skinned[2u * v] = vec4<f32>(p.xyz, 1.0);
        skinned[2u * v + 1u] = vec4<f32>(n, 0.0);
        return;
    }
    let j = array<vec4<u32>, 2>(joints[2u * v], joints[2u * v + 1u]);
    let w = array<vec4<f32>, 2>(weights[2u * v], weights[2u * v + 1u]);
    var m = palette[j[0].x] * w[0].x;
    var nm = normal_palette[j[0].x] * w[0].x;
    for (var i = 1u; i < k; i = i + 1u) {
        let ji = j[i / 4u][i % 4u];
        let wi = w[i / 4u][i % 4u];
        m = m + palette[ji] * wi;
        if (params.use_normal != 0u) {
            nm = nm + normal_palette[ji] * wi;
        }
    }
    let pos = m * vec4<f32>(p.xyz, 1.0);
    var dir: vec3<f32>;
    if (params.use_normal != 0u) {
        dir = (nm * vec4<f32>(n, 0.0)).xyz;
    } else {
        dir = (m * vec4<f32>(n, 0.0)).xyz;
    }
    let len2 = dot(dir, dir);
    var out_n = n;
    if (len2 > 0.0) {
        out_n = dir * inverseSqrt(len2);
    }
    skinned[2u * v] = vec4<f32>(pos.xyz, 1.0);
    skinned[2u * v + 1u] = vec4<f32>(out_n, 0.0);
}
