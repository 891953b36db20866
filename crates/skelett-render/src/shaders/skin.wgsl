// Skinning, one invocation per vertex, in the CPU path's skinning order (skelett::skin).
//
// Linear blending: the palette matrices blended with the weights (the last weight as the
// CPU computes it, one minus the others subtracted in order), the vertex transformed once;
// normals blend the inverse-transposes when `use_normal` is set, else use the blended
// matrix; renormalised, falling back to the bind normal where the length is not a normal
// float. Dual quaternions (`method` 1): as the CPU's dual_vertex, for vertices whose joints
// are all rigid; the others blend linearly.
//
// Morph targets (`morph` 1): before skinning, the vertex's own target offsets weighted by
// their target's weight are added to its bind position and normal, as skelett::morph::morph.

struct Params {
    count: u32,
    use_normal: u32,
    method: u32,
    morph: u32,
    morph_base: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

@group(0) @binding(0) var<storage, read> palette: array<mat4x4<f32>>;
@group(0) @binding(1) var<storage, read> normal_palette: array<mat4x4<f32>>;
// Per vertex, as 32-bit words: position (w = influence count), normal (w = first morph
// entry); one more vertex at the end whose normal's w ends the last vertex's entries.
@group(0) @binding(2) var<storage, read> bind: array<vec4<u32>>;
// Per vertex: 8 palette indices as two vec4<u32>, 8 weights as two vec4<f32>.
@group(0) @binding(3) var<storage, read> joints: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> weights: array<vec4<f32>>;
// Per vertex: skinned position (w = 1), skinned normal (w = 0).
@group(0) @binding(5) var<storage, read_write> skinned: array<vec4<f32>>;
@group(0) @binding(6) var<uniform> params: Params;
// Per joint: rotation quaternion, dual part, (rigid, 0, 0, 0).
@group(0) @binding(7) var<storage, read> dual: array<vec4<f32>>;
// As 32-bit words: first the target weights, 4 per vec4 (0 skips a target); from
// params.morph_base on, two vec4s per entry: (position offset, target index), (normal
// offset, 0).
@group(0) @binding(8) var<storage, read> morph: array<vec4<u32>>;

fn unit_or(v: vec3<f32>, fallback: vec3<f32>) -> vec3<f32> {
    let l = dot(v, v);
    if (l >= 1.17549435e-38 && l <= 3.40282347e38) {
        return v * inverseSqrt(l);
    }
    return fallback;
}

fn qmul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(a.w * b.xyz + b.w * a.xyz + cross(a.xyz, b.xyz), a.w * b.w - dot(a.xyz, b.xyz));
}

fn rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if (v >= params.count) {
        return;
    }
    let pw = bind[2u * v];
    let nw = bind[2u * v + 1u];
    var p = bitcast<vec4<f32>>(vec4<u32>(pw.xyz, 0u));
    var n = bitcast<vec3<f32>>(nw.xyz);
    let k = pw.w;
    if (params.morph != 0u) {
        var dp = vec3<f32>(0.0);
        var dn = vec3<f32>(0.0);
        for (var e = nw.w; e < bind[2u * v + 3u].w; e = e + 1u) {
            let a = morph[params.morph_base + 2u * e];
            let wt = bitcast<f32>(morph[a.w / 4u][a.w % 4u]);
            if (wt != 0.0) {
                dp = dp + wt * bitcast<vec3<f32>>(a.xyz);
                dn = dn + wt * bitcast<vec3<f32>>(morph[params.morph_base + 2u * e + 1u].xyz);
            }
        }
        p = vec4<f32>(p.xyz + dp, 0.0);
        n = n + dn;
        if (k == 0u) {
            n = unit_or(n, n);
        }
    }
    if (k == 0u) {
        skinned[2u * v] = vec4<f32>(p.xyz, 1.0);
        skinned[2u * v + 1u] = vec4<f32>(n, 0.0);
        return;
    }
    let j = array<vec4<u32>, 2>(joints[2u * v], joints[2u * v + 1u]);
    let w = array<vec4<f32>, 2>(weights[2u * v], weights[2u * v + 1u]);

    if (params.method == 1u) {
        var rigid = true;
        for (var i = 0u; i < k; i = i + 1u) {
            rigid = rigid && dual[3u * j[i / 4u][i % 4u] + 2u].x > 0.5;
        }
        if (rigid) {
            let first = dual[3u * j[0].x];
            var real = vec4<f32>(0.0);
            var du = vec4<f32>(0.0);
            for (var i = 0u; i < k; i = i + 1u) {
                let ji = j[i / 4u][i % 4u];
                var wi = w[i / 4u][i % 4u];
                let q = dual[3u * ji];
                if (dot(first, q) < 0.0) {
                    wi = -wi;
                }
                real = real + q * wi;
                du = du + dual[3u * ji + 1u] * wi;
            }
            let len = length(real);
            if (len > 1e-6) {
                real = real / len;
                du = du / len;
            } else {
                real = first;
                du = dual[3u * j[0].x + 1u];
            }
            let t = 2.0 * qmul(du, vec4<f32>(-real.xyz, real.w));
            skinned[2u * v] = vec4<f32>(rotate(real, p.xyz) + t.xyz, 1.0);
            skinned[2u * v + 1u] = vec4<f32>(unit_or(rotate(real, n), n), 0.0);
            return;
        }
    }

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
    skinned[2u * v] = vec4<f32>(pos.xyz, 1.0);
    skinned[2u * v + 1u] = vec4<f32>(unit_or(dir, n), 0.0);
}
