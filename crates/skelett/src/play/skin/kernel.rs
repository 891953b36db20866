//! The skinning kernels: one loop per influence count, linear blend or dual quaternion,
//! built twice (baseline SSE2 and AVX+FMA, chosen at run time unless the `scalar` feature
//! is on).

use glam::{Mat3A, Mat4, Vec3, Vec3A, Vec4};

use super::*;

#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
pub(super) use crate::play::simd::avx_fma as fma_available;

/// [`skin_range`] with fused multiply-adds and VEX encoding where the CPU has them (every
/// x86_64 CPU since 2013), the baseline SSE2 build otherwise. Fused and separate
/// multiply-adds round differently, so results differ in the last bits between CPUs with and
/// without FMA; the `scalar` feature always takes the baseline build.
pub(super) fn skin_range_dispatch(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: Option<&Morphed>,
    start: usize,
    out: SkinOutput<'_>,
) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if fma_available() {
        // SAFETY: `skin_range_fma` only needs the CPU to support AVX and FMA, which
        // `fma_available` has just confirmed at run time.
        unsafe { skin_range_fma(mesh, palette, morphed, start, out) };
        return;
    }
    skin_range::<false>(mesh, palette, morphed, start, out);
}

/// [`skin_range`] compiled for AVX + FMA. Only call it when the CPU has both.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[target_feature(enable = "avx,fma")]
pub(super) fn skin_range_fma(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: Option<&Morphed>,
    start: usize,
    out: SkinOutput<'_>,
) {
    skin_range::<true>(mesh, palette, morphed, start, out);
}

/// `a * b + c`, fused when `F` (only ever set inside [`skin_range_fma`]).
#[inline(always)]
pub(super) fn madd<const F: bool>(a: Vec4, b: Vec4, c: Vec4) -> Vec4 {
    #[cfg(target_arch = "x86_64")]
    if F {
        use std::arch::x86_64::_mm_fmadd_ps;
        // SAFETY: `F` is true only in code instantiated from `skin_range_fma`, which is
        // compiled with FMA enabled and called only after `fma_available()` confirmed the
        // CPU has it. The intrinsic reads and writes registers only.
        // `fma_and_baseline_paths_agree` runs both instantiations.
        return unsafe { Vec4::from(_mm_fmadd_ps(a.into(), b.into(), c.into())) };
    }
    a * b + c
}

/// Skins vertices `start..start + out.positions.len()` (skinning order) from the mesh's bind
/// pose, or from `morphed` (the bind pose after morph targets, same layout) when given. The
/// outputs may be longer than needed only at the top level; `check` has run. `F`: fused
/// multiply-adds.
/// Inlined (with the group loops) into its callers, so the FMA instantiation is compiled
/// with FMA enabled from top to bottom.
#[inline(always)]
pub(super) fn skin_range<const F: bool>(
    mesh: &SkinningMesh,
    palette: &SkinPalette,
    morphed: Option<&Morphed>,
    start: usize,
    out: SkinOutput<'_>,
) {
    let (positions, normals, tangents) = match morphed {
        Some(m) => (
            &m.positions[..],
            m.normals.as_deref(),
            m.tangents.as_deref(),
        ),
        None => (
            &mesh.positions[..],
            mesh.normals.as_deref(),
            mesh.tangents.as_deref(),
        ),
    };
    // A morphed bind pose's normals have their targets' offsets added: not unit.
    let unit_normals = mesh.unit_normals && morphed.is_none();
    let end = start + out.positions.len().min(mesh.vertex_count() - start);
    // Outputs the mesh has no source for are zero, in every group.
    let mut out = out;
    if mesh.normals.is_none() {
        if let Some(o) = out.normals.take() {
            o[..end - start].fill(Vec3::ZERO);
        }
    }
    if mesh.tangents.is_none() {
        if let Some(o) = out.tangents.take() {
            o[..end - start].fill(Vec4::ZERO);
        }
    }
    let mut rest = out;
    let mut at = start;
    for g in &mesh.groups {
        let (lo, hi) = (g.start.max(at), (g.start + g.len).min(end));
        if lo >= hi {
            continue;
        }
        let (mut now, later) = rest.split_at(hi - at);
        if lo > at {
            now = now.split_at(lo - at).1;
        }
        rest = later;
        at = hi;
        let k = g.influences;
        let first = lo - g.start;
        let count = hi - lo;
        let joints = &mesh.joints[g.joint_offset + first * k..][..count * k];
        let weights = &mesh.weights[g.weight_offset + first * k.saturating_sub(1)..]
            [..count * k.saturating_sub(1)];
        let src = Source {
            positions: &positions[lo..hi],
            normals: normals.map(|n| &n[lo..hi]),
            tangents: tangents.map(|t| &t[lo..hi]),
            unit_normals,
        };
        match k {
            0 => copy_bind(&src, now),
            1 => group::<1, F>(palette, joints, weights, &src, now),
            2 => group::<2, F>(palette, joints, weights, &src, now),
            3 => group::<3, F>(palette, joints, weights, &src, now),
            4 => group::<4, F>(palette, joints, weights, &src, now),
            5 => group::<5, F>(palette, joints, weights, &src, now),
            6 => group::<6, F>(palette, joints, weights, &src, now),
            7 => group::<7, F>(palette, joints, weights, &src, now),
            _ => group::<8, F>(palette, joints, weights, &src, now),
        }
    }
}

pub(super) struct Source<'a> {
    pub(super) positions: &'a [Vec3],
    pub(super) normals: Option<&'a [Vec3]>,
    pub(super) tangents: Option<&'a [Vec4]>,
    /// Whether `normals` are unit within [`super::mesh::UNIT_NORMAL_TOLERANCE`]: dual
    /// quaternion skinning, whose matrices are rotations, then leaves them as rotated.
    pub(super) unit_normals: bool,
}

pub(super) fn copy_bind(src: &Source<'_>, out: SkinOutput<'_>) {
    out.positions.copy_from_slice(src.positions);
    if let Some(o) = out.normals {
        match src.normals {
            Some(n) => o.copy_from_slice(n),
            None => o.fill(Vec3::ZERO),
        }
    }
    if let Some(o) = out.tangents {
        match src.tangents {
            Some(t) => o.copy_from_slice(t),
            None => o.fill(Vec4::ZERO),
        }
    }
}

/// A blended affine matrix as four SIMD columns.
#[derive(Clone, Copy)]
pub(super) struct Affine {
    pub(super) x: Vec4,
    pub(super) y: Vec4,
    pub(super) z: Vec4,
    pub(super) w: Vec4,
}

impl Affine {
    #[inline(always)]
    pub(super) fn of(m: &Mat4, w: f32) -> Affine {
        Affine {
            x: m.x_axis * w,
            y: m.y_axis * w,
            z: m.z_axis * w,
            w: m.w_axis * w,
        }
    }
    #[inline(always)]
    pub(super) fn add<const F: bool>(&mut self, m: &Mat4, w: f32) {
        let w = Vec4::splat(w);
        self.x = madd::<F>(m.x_axis, w, self.x);
        self.y = madd::<F>(m.y_axis, w, self.y);
        self.z = madd::<F>(m.z_axis, w, self.z);
        self.w = madd::<F>(m.w_axis, w, self.w);
    }
    #[inline(always)]
    pub(super) fn point<const F: bool>(&self, p: Vec3) -> Vec3 {
        let z = madd::<F>(self.z, Vec4::splat(p.z), self.w);
        let y = madd::<F>(self.y, Vec4::splat(p.y), z);
        madd::<F>(self.x, Vec4::splat(p.x), y).truncate()
    }
    #[inline(always)]
    pub(super) fn vector<const F: bool>(&self, v: Vec3) -> Vec3A {
        let z = self.z * v.z;
        let y = madd::<F>(self.y, Vec4::splat(v.y), z);
        Vec3A::from_vec4(madd::<F>(self.x, Vec4::splat(v.x), y))
    }
}

/// Blends `K` matrices of `mats` with `w` (the last weight implied), as ozz does.
#[inline(always)]
pub(super) fn blend_mats<const K: usize, const F: bool>(
    mats: &[Mat4],
    j: &[u16],
    w: &[f32],
) -> Affine {
    if K == 1 {
        let m = &mats[j[0] as usize];
        return Affine {
            x: m.x_axis,
            y: m.y_axis,
            z: m.z_axis,
            w: m.w_axis,
        };
    }
    let mut acc = Affine::of(&mats[j[0] as usize], w[0]);
    let mut last = 1.0 - w[0];
    for i in 1..K - 1 {
        acc.add::<F>(&mats[j[i] as usize], w[i]);
        last -= w[i];
    }
    acc.add::<F>(&mats[j[K - 1] as usize], last);
    acc
}

#[inline(always)]
pub(super) fn blend_normals<const K: usize>(
    mats: &[Mat3A],
    j: &[u16],
    w: &[f32],
    n: Vec3,
) -> Vec3A {
    let n = Vec3A::from(n);
    if K == 1 {
        return mats[j[0] as usize] * n;
    }
    let mut acc = mats[j[0] as usize] * (n * w[0]);
    let mut last = 1.0 - w[0];
    for i in 1..K - 1 {
        acc += mats[j[i] as usize] * (n * w[i]);
        last -= w[i];
    }
    acc + mats[j[K - 1] as usize] * (n * last)
}

/// `v` scaled to unit length, or `fallback` if it has none.
#[inline(always)]
pub(super) fn unit(v: Vec3A, fallback: Vec3) -> Vec3 {
    let l = v.length_squared();
    // Normal numbers only: the SSE estimate treats subnormals as zero.
    if (f32::MIN_POSITIVE..=f32::MAX).contains(&l) {
        Vec3::from(v * crate::transform::inv_sqrt(l))
    } else {
        fallback
    }
}

/// One vertex by linear blending.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn linear_vertex<const K: usize, const F: bool>(
    palette: &SkinPalette,
    j: &[u16],
    w: &[f32],
    src: &Source<'_>,
    v: usize,
    out: &mut SkinOutput<'_>,
) {
    let m = blend_mats::<K, F>(&palette.matrices, j, w);
    out.positions[v] = m.point::<F>(src.positions[v]);
    if let (Some(o), Some(n)) = (out.normals.as_deref_mut(), src.normals) {
        let n = n[v];
        let b = if palette.use_normal {
            blend_normals::<K>(&palette.normal, j, w, n)
        } else {
            m.vector::<F>(n)
        };
        o[v] = if palette.raw_directions {
            Vec3::from(b)
        } else {
            unit(b, n)
        };
    }
    if let (Some(o), Some(t)) = (out.tangents.as_deref_mut(), src.tangents) {
        let t = t[v];
        o[v] = tangent(m.vector::<F>(t.truncate()), t, palette.raw_directions);
    }
}

/// A skinned tangent: the direction `d` (renormalised unless `raw`, falling back to the
/// source's as [`unit`]), with the source tangent `t`'s handedness `w`.
#[inline(always)]
pub(super) fn tangent(d: Vec3A, t: Vec4, raw: bool) -> Vec4 {
    let d = if raw {
        Vec3::from(d)
    } else {
        unit(d, t.truncate())
    };
    d.extend(t.w)
}

/// The blended dual quaternion `(r, d)` of one vertex and `n = |r|²`, all its joints rigid;
/// the first joint's when the blend cancels out.
#[inline(always)]
pub(super) fn blend_dual<const K: usize, const F: bool>(
    d: &[DualQuat],
    j: &[u16],
    w: &[f32],
) -> (Vec4, Vec4, f32) {
    let first = &d[j[0] as usize];
    let r0 = Vec4::from(first.real);
    let (mut real, mut dual) = (r0, Vec4::from(first.dual));
    if K > 1 {
        real *= w[0];
        dual *= w[0];
        let mut last = 1.0 - w[0];
        for i in 1..K {
            let q = &d[j[i] as usize];
            let wi = if i + 1 < K { w[i] } else { last };
            last -= wi;
            let qr = Vec4::from(q.real);
            // Shortest path: blend each rotation on the first one's hemisphere (the weight
            // takes the sign of the dot product; branch-free).
            let s = f32::from_bits(wi.to_bits() ^ (r0.dot(qr).to_bits() & 0x8000_0000));
            let s = Vec4::splat(s);
            real = madd::<F>(qr, s, real);
            dual = madd::<F>(Vec4::from(q.dual), s, dual);
        }
    }
    let n = real.dot(real);
    // Weights are sorted heaviest first and every rotation is put on the first one's
    // hemisphere, so n >= w[0]² >= 1/K² for a unit palette: this only catches NaN and
    // infinite palettes, which then keep the first joint's transform.
    if (1e-12..=f32::MAX).contains(&n) {
        (real, dual, n)
    } else {
        (r0, Vec4::from(first.dual), 1.0)
    }
}

/// One vertex by dual quaternion blending (all its joints are rigid).
///
/// The blended dual quaternion `(r, d)` is not normalised with a square root: with
/// `n = |r|²`, its rotation is the matrix of `r` scaled by `1 / n` and its translation is
/// `2 (d r*) / n` (the unit dual quaternion `(r, d) / |r|` gives the same), so one division
/// turns it into an affine matrix, applied to the position and directions as linear blending
/// applies its blended matrix.
#[inline(always)]
pub(super) fn dual_vertex<const K: usize, const F: bool>(
    palette: &SkinPalette,
    j: &[u16],
    w: &[f32],
    src: &Source<'_>,
    v: usize,
    out: &mut SkinOutput<'_>,
) {
    let (real, dual, n) = blend_dual::<K, F>(&palette.dual, j, w);
    rigid_vertex::<F>(&dual_to_affine(real, dual, n), src, v, out);
}

/// One vertex through the matrix `m` of a dual quaternion blend: directions always come out
/// unit (as dual quaternion skinning gives them): renormalised, or, where the source's
/// normals are unit already, as `m` (a rotation) leaves them.
#[inline(always)]
pub(super) fn rigid_vertex<const F: bool>(
    m: &Affine,
    src: &Source<'_>,
    v: usize,
    out: &mut SkinOutput<'_>,
) {
    out.positions[v] = m.point::<F>(src.positions[v]);
    if let (Some(o), Some(nr)) = (out.normals.as_deref_mut(), src.normals) {
        let nr = nr[v];
        let d = m.vector::<F>(nr);
        o[v] = if src.unit_normals {
            Vec3::from(d)
        } else {
            unit(d, nr)
        };
    }
    if let (Some(o), Some(t)) = (out.tangents.as_deref_mut(), src.tangents) {
        let t = t[v];
        o[v] = tangent(m.vector::<F>(t.truncate()), t, false);
    }
}

/// The affine matrix of the dual quaternion `(r, d) / sqrt(n)` with `n = |r|²`.
#[inline(always)]
pub(super) fn dual_to_affine(r: Vec4, d: Vec4, n: f32) -> Affine {
    let s = 2.0 / n;
    let (x, y, z, w) = (r.x, r.y, r.z, r.w);
    let (xs, ys, zs) = (x * s, y * s, z * s);
    let (xx, yy, zz) = (x * xs, y * ys, z * zs);
    let (xy, xz, yz) = (x * ys, x * zs, y * zs);
    let (wx, wy, wz) = (w * xs, w * ys, w * zs);
    // Translation: 2 (d r*) / n, whose vector part is w·d_v - d_w·r_v + r_v × d_v.
    let rv = Vec3::new(x, y, z);
    let dv = Vec3::new(d.x, d.y, d.z);
    let t = (dv * w - rv * d.w + rv.cross(dv)) * s;
    Affine {
        x: Vec4::new(1.0 - (yy + zz), xy + wz, xz - wy, 0.0),
        y: Vec4::new(xy - wz, 1.0 - (xx + zz), yz + wx, 0.0),
        z: Vec4::new(xz + wy, yz - wx, 1.0 - (xx + yy), 0.0),
        w: t.extend(1.0),
    }
}

/// Skins one influence group with `K` influences per vertex.
#[inline(always)]
pub(super) fn group<const K: usize, const F: bool>(
    palette: &SkinPalette,
    joints: &[u16],
    weights: &[f32],
    src: &Source<'_>,
    out: SkinOutput<'_>,
) {
    // Every slice cut to exactly `n` (or `n` vertices' worth) up front, so the loop's
    // indexing needs no bounds checks.
    let n = src.positions.len();
    let mut out = SkinOutput {
        positions: &mut out.positions[..n],
        normals: out.normals.map(|o| &mut o[..n]),
        tangents: out.tangents.map(|o| &mut o[..n]),
    };
    let src = Source {
        positions: &src.positions[..n],
        normals: src.normals.map(|s| &s[..n]),
        tangents: src.tangents.map(|s| &s[..n]),
        unit_normals: src.unit_normals,
    };
    let joints = &joints[..n * K];
    let w1 = K.saturating_sub(1);
    let weights = &weights[..n * w1];
    // Dual quaternions need rigid joints: without any, every vertex blends linearly.
    if !palette.dual_ready || !palette.any_rigid {
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        if F && K > 0 {
            // SAFETY: `F` is true only in code instantiated from `skin_range_fma`, called
            // only after `fma_available()` confirmed AVX and FMA.
            // `avx_linear_matches_one_vertex_at_a_time` runs it.
            unsafe {
                let p = super::linear_avx::Palette::linear(palette);
                super::linear_avx::linear_group::<K>(p, joints, weights, &src, &mut out)
            };
            return;
        }
        for (v, (j, w)) in joints
            .chunks_exact(K)
            .zip(
                weights
                    .chunks_exact(w1.max(1))
                    .chain(std::iter::repeat(&[][..])),
            )
            .enumerate()
        {
            linear_vertex::<K, F>(palette, j, &w[..w1], &src, v, &mut out);
        }
        return;
    }
    if K == 1 {
        // One rigid joint: its dual quaternion's matrix, made once per palette entry (the
        // blend of one is itself), so these vertices cost what linear blending costs.
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        if F && palette.all_rigid {
            // Every vertex as `rigid_vertex` skins it: the palette's dual matrices, unit
            // directions. SAFETY: as for linear blending above;
            // `avx_dual_blocks_all_rigid_without_normals` and the test above run it.
            unsafe {
                // Rotations: unit normals stay unit, as `rigid_vertex` leaves them (`raw`
                // would also leave tangents, which it renormalises, so not with tangents).
                let p = super::linear_avx::Palette {
                    matrices: &palette.dual_matrices,
                    normal: None,
                    raw: src.unit_normals && (src.tangents.is_none() || out.tangents.is_none()),
                };
                super::linear_avx::linear_group::<1>(p, joints, weights, &src, &mut out)
            };
            return;
        }
        for v in 0..n {
            let j = joints[v] as usize;
            if palette.rigid[j] {
                let m = &palette.dual_matrices[j];
                let a = Affine {
                    x: m.x_axis,
                    y: m.y_axis,
                    z: m.z_axis,
                    w: m.w_axis,
                };
                rigid_vertex::<F>(&a, &src, v, &mut out);
            } else {
                linear_vertex::<1, F>(palette, &joints[v..v + 1], &[], &src, v, &mut out);
            }
        }
        return;
    }
    let rigid = |j: &[u16]| palette.all_rigid || j.iter().all(|&j| palette.rigid[j as usize]);
    let one = |v: usize, out: &mut SkinOutput<'_>| {
        let (j, w) = (&joints[v * K..][..K], &weights[v * w1..][..w1]);
        if rigid(j) {
            dual_vertex::<K, F>(palette, j, w, &src, v, out);
        } else {
            linear_vertex::<K, F>(palette, j, w, &src, v, out);
        }
    };
    // In the FMA build every rigid vertex goes through the AVX kernel: whole blocks of LANES
    // rigid vertices directly, the others gathered into a padded block. Lanes are computed
    // independently, so a vertex gets the same bits whichever block it is in, and `skin_par`'s
    // chunks (which need not fall on block boundaries) give what one call gives.
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    let v = {
        use super::dual_avx::{dual_block, dual_gathered, LANES};
        // What makes the kernel's unchecked loads sound: every joint of the group below the
        // palette's dual quaternions (`SkinningMesh::new` and `skin`'s checks already
        // guarantee it; one vectorised pass keeps the proof local).
        if F {
            let top = super::joint_bound(joints);
            assert!(
                top <= palette.dual.len(),
                "skinning: joint index {} beyond the palette of {}",
                top - 1,
                palette.dual.len()
            );
        }
        let mut v = 0;
        while F && v < n {
            let end = (v + LANES).min(n);
            // SAFETY (both calls): `F` is true only in code instantiated from
            // `skin_range_fma`, called only after `fma_available()` confirmed AVX and FMA;
            // every joint of the group is below `palette.dual.len()` (asserted above), and
            // `dual_gathered` reads joints of this group only.
            // `avx_dual_blocks_match_one_vertex_at_a_time` runs both.
            if end == v + LANES && rigid(&joints[v * K..end * K]) {
                unsafe { dual_block::<K>(&palette.dual, joints, weights, &src, v, &mut out) };
            } else {
                let mut idx = [0usize; LANES];
                let mut m = 0;
                for u in v..end {
                    let (j, w) = (&joints[u * K..][..K], &weights[u * w1..][..w1]);
                    if rigid(j) {
                        idx[m] = u;
                        m += 1;
                    } else {
                        linear_vertex::<K, F>(palette, j, w, &src, u, &mut out);
                    }
                }
                if m > 0 {
                    unsafe {
                        dual_gathered::<K>(
                            &palette.dual,
                            joints,
                            weights,
                            &src,
                            &idx[..m],
                            &mut out,
                        )
                    };
                }
            }
            v = end;
        }
        v
    };
    #[cfg(not(all(target_arch = "x86_64", not(feature = "scalar"))))]
    let v = 0;
    for u in v..n {
        one(u, &mut out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::palette::{is_rigid, is_similarity};
    use super::*;
    use glam::Quat;

    /// Whether this CPU lacks AVX and FMA (said on stderr): the tests of the FMA build
    /// have nothing to run then, only the baseline build exists.
    #[cfg(not(feature = "scalar"))]
    fn no_fma_build() -> bool {
        let no = !fma_available();
        if no {
            eprintln!("no AVX and FMA on this CPU: only the baseline build exists here");
        }
        no
    }

    /// Vertices `start..end` of `mesh` skinned with `pal` in ranges of `chunk` (as `skin_par`
    /// splits a mesh), by the FMA build through the run-time dispatch (`fma`) or by the
    /// baseline build; normals and tangents when asked (else they come back as a sentinel).
    /// Each range is written into a buffer one longer than it, whose last entry must still
    /// be the sentinel afterwards: nothing is written past a range.
    #[cfg(not(feature = "scalar"))]
    fn skin_ranges(
        mesh: &SkinningMesh,
        pal: &SkinPalette,
        fma: bool,
        (start, end): (usize, usize),
        chunk: usize,
        normals: bool,
        tangents: bool,
    ) -> (Vec<Vec3>, Vec<Vec3>, Vec<Vec4>) {
        let sentinel = Vec3::splat(-7.0);
        let (mut pos, mut nrm, mut tan) = (Vec::new(), Vec::new(), Vec::new());
        let mut at = start;
        while at < end {
            let to = (at + chunk.max(1)).min(end);
            let m = to - at;
            let mut p = vec![sentinel; m + 1];
            let mut q = vec![sentinel; m + 1];
            let mut t = vec![sentinel.extend(-7.0); m + 1];
            let out = SkinOutput {
                positions: &mut p[..m],
                normals: normals.then_some(&mut q[..m]),
                tangents: tangents.then_some(&mut t[..m]),
            };
            if fma {
                skin_range_dispatch(mesh, pal, None, at, out);
            } else {
                skin_range::<false>(mesh, pal, None, at, out);
            }
            assert_eq!(
                (p[m], q[m], t[m]),
                (sentinel, sentinel, sentinel.extend(-7.0)),
                "written past vertex {to}"
            );
            pos.extend_from_slice(&p[..m]);
            nrm.extend_from_slice(&q[..m]);
            tan.extend_from_slice(&t[..m]);
            at = to;
        }
        (pos, nrm, tan)
    }

    #[test]
    pub(super) fn tiny_and_huge_directions_fall_back_instead_of_blowing_up() {
        let f = Vec3::X;
        for l in [1e-45f32, 1e-40, 0.0, f32::INFINITY, f32::NAN] {
            assert_eq!(unit(Vec3A::new(l, 0.0, 0.0), f), f, "length {l}");
        }
        let v = unit(Vec3A::new(0.0, 2e-19, 0.0), f);
        assert!((v - Vec3::Y).length() < 1e-5, "{v}");
    }

    /// The FMA build (used on this machine when it has FMA) and the baseline build agree.
    /// (With `scalar` the dispatch always takes the baseline build: nothing to compare.)
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn fma_and_baseline_paths_agree() {
        let n = 200;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.1, (i % 7) as f32, 1.0))
                .collect(),
            normals: Some(
                (0..n)
                    .map(|i| Vec3::new(1.0, i as f32, 0.5).normalize())
                    .collect(),
            ),
            tangents: Some((0..n).map(|_| Vec4::new(0.0, 0.0, 1.0, -1.0)).collect()),
            influences: 8,
            ..Default::default()
        };
        for v in 0..n {
            for i in 0..8 {
                p.joints.push(((v + 3 * i) % 5) as u16);
                p.weights
                    .push(if i <= v % 8 { 1.0 + i as f32 } else { 0.0 });
            }
        }
        let mesh = SkinningMesh::new(&p, 5).unwrap();
        assert!(
            mesh.groups().len() >= 8,
            "every influence count is exercised"
        );
        let mats: Vec<Mat4> = (0..5)
            .map(|i| {
                Mat4::from_scale_rotation_translation(
                    Vec3::new(1.0, 1.0 + i as f32 * 0.2, 1.0),
                    Quat::from_rotation_y(i as f32),
                    Vec3::splat(i as f32),
                )
            })
            .collect();
        let mut pal = SkinPalette::new(SkinningMethod::Linear);
        pal.set_matrices(&mats);
        let run = |fma: bool| skin_ranges(&mesh, &pal, fma, (0, n), n, true, true);
        let (a, b) = (run(true), run(false));
        for v in 0..n {
            assert!(
                (a.0[v] - b.0[v]).length() < 1e-4,
                "{v}: {} {}",
                a.0[v],
                b.0[v]
            );
            assert!((a.1[v] - b.1[v]).length() < 1e-5);
            assert!((a.2[v] - b.2[v]).length() < 1e-5);
        }
    }

    /// The AVX linear kernel (`linear_avx.rs`, taken by the FMA build) gives what the
    /// baseline build gives one vertex at a time: for every influence count, in each of its
    /// modes (positions only; unit or raw normals; normal matrices or tangents, tested per
    /// vertex), with zero and overflowing normals (which fall back to the bind direction),
    /// partial blocks, ranges that do not fall on block boundaries (the same bits), and no
    /// write past the end of an output.
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_linear_matches_one_vertex_at_a_time() {
        if no_fma_build() {
            return;
        }
        // Runs of 71 vertices per influence count: groups longer than the kernel's 64-vertex
        // chunks, with partial blocks at their ends.
        let n = 71 * 8 + 5;
        let joints = 9;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.1 - 5.0, (i % 7) as f32, (i % 3) as f32))
                .collect(),
            normals: Some(
                (0..n)
                    .map(|i| match i % 50 {
                        7 => Vec3::ZERO,
                        8 => Vec3::splat(3e38),
                        9 => Vec3::new(1e-21, 0.0, 0.0), // a subnormal squared length
                        _ => Vec3::new(1.0, i as f32 * 0.3, -0.5).normalize(),
                    })
                    .collect(),
            ),
            tangents: Some(
                (0..n)
                    .map(|i| Vec4::new(0.0, 1.0, i as f32, -1.0).normalize())
                    .collect(),
            ),
            influences: 8,
            ..Default::default()
        };
        for v in 0..n {
            let k = (v / 71) % 8;
            for i in 0..8 {
                // One-influence vertices in runs of ten, then fifteen, on one joint (rigid
                // parts, which the AVX kernel takes eight at a time where eight in a row
                // share their joint; after eight of fifteen, seven in a row do and the eighth
                // does not).
                let j = if k != 0 {
                    v + 3 * i
                } else if v < 40 {
                    v / 10
                } else {
                    v / 15
                };
                p.joints.push((j % joints) as u16);
                p.weights.push(if i <= k {
                    1.0 + (i * v % 5) as f32
                } else {
                    0.0
                });
            }
        }
        let mesh = SkinningMesh::new(&p, joints).unwrap();
        assert!(mesh.groups().len() >= 8);
        for uniform in [true, false] {
            let mats: Vec<Mat4> = (0..joints)
                .map(|i| {
                    let axis = Vec3::new(1.0, i as f32, 0.5 - i as f32).normalize();
                    let scale = if uniform {
                        Vec3::splat(2.0)
                    } else {
                        Vec3::new(1.0, 1.0 + 0.2 * i as f32, 1.0)
                    };
                    Mat4::from_scale_rotation_translation(
                        scale,
                        Quat::from_axis_angle(axis, 0.9 * i as f32 - 3.0),
                        Vec3::new(i as f32, -2.0 * i as f32, 0.5),
                    )
                })
                .collect();
            for raw in [false, true] {
                let mut pal = SkinPalette::new(SkinningMethod::Linear);
                pal.set_matrices(&mats);
                pal.set_normalize_directions(!raw);
                assert_eq!(pal.use_normal, !uniform);
                for outputs in 1..=3 {
                    let what = format!("uniform {uniform}, raw {raw}, outputs {outputs}");
                    let (normals, tangents) = (outputs >= 2, outputs >= 3);
                    let run = |fma: bool, start: usize, end: usize| {
                        skin_ranges(
                            &mesh,
                            &pal,
                            fma,
                            (start, end),
                            end - start,
                            normals,
                            tangents,
                        )
                    };
                    let (a, b) = (run(true, 0, n), run(false, 0, n));
                    for v in 0..n {
                        let scale = b.0[v].length().max(1.0);
                        let near = |x: Vec3, y: Vec3, tol: f32| (x - y).length() <= tol;
                        assert!(near(a.0[v], b.0[v], 2e-6 * scale), "{what} {v}");
                        if raw && mesh.source_vertices()[v] % 50 == 8 {
                            continue; // overflows to infinities and NaN, in either order
                        }
                        // Raw directions scale with the palette (up to 2, or 2.6 blended).
                        let tol = if raw { 1e-5 } else { 2e-6 };
                        assert!(
                            near(a.1[v], b.1[v], tol),
                            "{what} {v}: {} {}",
                            a.1[v],
                            b.1[v]
                        );
                        let (ta, tb) = (a.2[v], b.2[v]);
                        assert!(near(ta.truncate(), tb.truncate(), tol), "{what} {v}");
                        assert_eq!(ta.w, tb.w);
                    }
                    if outputs >= 2 && !raw {
                        // The zero and the overflowing normals came back as given, the others
                        // unit.
                        for (v, &s) in mesh.source_vertices().iter().enumerate() {
                            let want = match s % 50 {
                                7 => Some(Vec3::ZERO),
                                8 => Some(Vec3::splat(3e38)),
                                9 => Some(Vec3::new(1e-21, 0.0, 0.0)),
                                _ => None,
                            };
                            match want {
                                Some(w) => assert_eq!(a.1[v], w, "{what} {v}"),
                                None => assert!((a.1[v].length() - 1.0).abs() < 1e-6, "{what}"),
                            }
                        }
                    }
                    // In ranges of 13 (as `skin_par` splits), the same bits.
                    let mut start = 0;
                    while start < n {
                        let end = (start + 13).min(n);
                        let part = run(true, start, end);
                        assert_eq!(part.0, a.0[start..end], "{what} {start}");
                        assert_eq!(part.1, a.1[start..end], "{what} {start}");
                        assert_eq!(part.2, a.2[start..end], "{what} {start}");
                        start = end;
                    }
                }
            }
        }
    }

    /// The last vertex of a group's slice is written with its narrow stores (nothing past
    /// the range: `skin_ranges`' sentinels), whether a rigid run of eight or the per-vertex
    /// path takes it, in every mode the kernel picks (positions only, unit normals: a
    /// uniform-scale palette, where one-influence runs go through `rigid8`; the general
    /// mode with normal matrices: a non-uniform one), for ranges of 1 to 25 vertices, in one
    /// group or two (one- and two-influence vertices), with the bits of the same vertices
    /// skinned in ranges of other lengths, and near the baseline build's values. (With every
    /// vertex on one joint, 8, 16 and 24 vertices end in a rigid run; 9, 17 and 25 in one
    /// vertex after it.)
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_linear_range_ends() {
        if no_fma_build() {
            return;
        }
        for n in [1usize, 2, 7, 8, 9, 15, 16, 17, 24, 25] {
            // 0: every vertex one influence; 1: the last apart on another joint; 2: the
            // first half with two influences (a group of its own, sorted first).
            for shape in 0..3 {
                let two = |v: usize| shape == 2 && v < n / 2;
                let mut p = crate::MeshPrimitive {
                    positions: (0..n)
                        .map(|i| Vec3::new(i as f32 * 0.3 - 1.0, 1.0 + (i % 4) as f32, 0.25))
                        .collect(),
                    normals: Some(
                        (0..n)
                            .map(|i| Vec3::new(0.5, 1.0, i as f32 * 0.1).normalize())
                            .collect(),
                    ),
                    influences: 2,
                    ..Default::default()
                };
                for v in 0..n {
                    let j = if shape == 1 && v + 1 == n { 2 } else { 1 };
                    p.joints.extend([j, 0]);
                    p.weights.extend([1.0, if two(v) { 0.5 } else { 0.0 }]);
                }
                let mesh = SkinningMesh::new(&p, 3).unwrap();
                for uniform in [true, false] {
                    let mats: Vec<Mat4> = (0..3)
                        .map(|i| {
                            let scale = if uniform {
                                Vec3::splat(1.5)
                            } else {
                                Vec3::new(1.0, 1.5, 1.0)
                            };
                            Mat4::from_scale_rotation_translation(
                                scale,
                                Quat::from_rotation_y(0.7 * i as f32 + 0.2),
                                Vec3::new(i as f32, 1.0, -0.5),
                            )
                        })
                        .collect();
                    let mut pal = SkinPalette::new(SkinningMethod::Linear);
                    pal.set_matrices(&mats);
                    assert_eq!(pal.use_normal, !uniform);
                    for normals in [true, false] {
                        let run = |fma: bool, chunk: usize| {
                            skin_ranges(&mesh, &pal, fma, (0, n), chunk, normals, false)
                        };
                        let (whole, base) = (run(true, n), run(false, n));
                        for v in 0..n {
                            let what = format!(
                                "n {n}, shape {shape}, uniform {uniform}, normals {normals}, \
                                 vertex {v}"
                            );
                            assert!((whole.0[v] - base.0[v]).length() <= 1e-5, "{what}");
                            assert!((whole.1[v] - base.1[v]).length() <= 2e-6, "{what}");
                        }
                        for chunk in [1, 2, 5, 8, 9] {
                            let parts = run(true, chunk);
                            let what = format!("n {n}, shape {shape}, chunks of {chunk}");
                            assert_eq!(parts.0, whole.0, "{what}");
                            assert_eq!(parts.1, whole.1, "{what}");
                        }
                    }
                }
            }
        }
    }

    /// The positions of the AVX linear kernel have the bits of `linear_vertex`'s FMA
    /// instantiation (the same operations in the same order), for every influence count.
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_linear_positions_have_the_fma_builds_bits() {
        if no_fma_build() {
            return;
        }
        let n = 300;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.37 - 9.0, (i % 11) as f32, 0.5 * (i % 5) as f32))
                .collect(),
            influences: 8,
            ..Default::default()
        };
        for v in 0..n {
            for i in 0..8 {
                // One-influence vertices (every eighth) in runs of ten on one joint.
                let j = if v % 8 == 0 { v / 80 } else { v * 5 + 3 * i };
                p.joints.push((j % 7) as u16);
                p.weights.push(if i <= v % 8 {
                    0.3 + (i * v % 7) as f32
                } else {
                    0.0
                });
            }
        }
        let mesh = SkinningMesh::new(&p, 7).unwrap();
        let mats: Vec<Mat4> = (0..7)
            .map(|i| {
                Mat4::from_scale_rotation_translation(
                    Vec3::splat(1.0 + 0.1 * i as f32),
                    Quat::from_axis_angle(Vec3::new(1.0, 2.0, i as f32).normalize(), i as f32),
                    Vec3::new(i as f32, 0.5, -(i as f32)),
                )
            })
            .collect();
        let mut pal = SkinPalette::new(SkinningMethod::Linear);
        pal.set_matrices(&mats);
        let mut pos = vec![Vec3::ZERO; n];
        let out = SkinOutput {
            positions: &mut pos,
            normals: None,
            tangents: None,
        };
        skin_range_dispatch(&mesh, &pal, None, 0, out);
        // SAFETY: AVX and FMA were detected above.
        let want = unsafe { fma_positions(&mesh, &pal) };
        for v in 0..n {
            assert_eq!(pos[v].to_array(), want[v].to_array(), "{v}");
        }
    }

    /// Every vertex one at a time through `blend_mats` and `Affine::point`, FMA build.
    #[cfg(not(feature = "scalar"))]
    #[target_feature(enable = "avx,fma")]
    unsafe fn fma_positions(mesh: &SkinningMesh, pal: &SkinPalette) -> Vec<Vec3> {
        let mut out = mesh.positions.clone();
        for g in &mesh.groups {
            let k = g.influences;
            for v in 0..g.len {
                let j = &mesh.joints[g.joint_offset + v * k..][..k];
                let w = &mesh.weights[g.weight_offset + v * k.saturating_sub(1)..]
                    [..k.saturating_sub(1)];
                let m = &pal.matrices;
                let a = match k {
                    0 => continue,
                    1 => blend_mats::<1, true>(m, j, w),
                    2 => blend_mats::<2, true>(m, j, w),
                    3 => blend_mats::<3, true>(m, j, w),
                    4 => blend_mats::<4, true>(m, j, w),
                    5 => blend_mats::<5, true>(m, j, w),
                    6 => blend_mats::<6, true>(m, j, w),
                    7 => blend_mats::<7, true>(m, j, w),
                    _ => blend_mats::<8, true>(m, j, w),
                };
                out[g.start + v] = a.point::<true>(mesh.positions[g.start + v]);
            }
        }
        out
    }

    /// With every palette entry rigid, dual quaternion skinning sends one-joint vertices
    /// through the AVX linear kernel with the dual quaternions' matrices: unit normals and
    /// tangents (their `w` kept) as `rigid_vertex` gives them, whatever
    /// `set_normalize_directions` says, zero normals falling back, in any ranges.
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_dual_one_joint_vertices_match_rigid_vertex() {
        if no_fma_build() {
            return;
        }
        let n = 150;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.2, 1.0, -(i as f32) * 0.5))
                .collect(),
            normals: Some(
                (0..n)
                    .map(|i| {
                        if i % 40 == 3 {
                            Vec3::ZERO
                        } else {
                            Vec3::new(0.3, 1.0, i as f32 * 0.1).normalize()
                        }
                    })
                    .collect(),
            ),
            tangents: Some(
                (0..n)
                    .map(|i| {
                        Vec4::new(
                            1.0,
                            0.0,
                            0.1 * i as f32,
                            if i % 2 == 0 { 1.0 } else { -1.0 },
                        )
                    })
                    .collect(),
            ),
            influences: 2,
            ..Default::default()
        };
        for v in 0..n {
            p.joints.extend([(v % 5) as u16, ((v + 2) % 5) as u16]);
            // Every third vertex has a second joint.
            p.weights.extend([1.0, if v % 3 == 0 { 0.5 } else { 0.0 }]);
        }
        let mesh = SkinningMesh::new(&p, 5).unwrap();
        assert!(mesh
            .groups()
            .iter()
            .any(|g| g.influences == 1 && g.len > 64));
        let mats: Vec<Mat4> = (0..5)
            .map(|i| {
                Mat4::from_rotation_translation(
                    Quat::from_rotation_y(0.7 * i as f32 - 1.0),
                    Vec3::new(i as f32, 2.0, 0.0),
                )
            })
            .collect();
        for raw in [false, true] {
            let mut pal = SkinPalette::new(SkinningMethod::DualQuaternion);
            pal.set_matrices(&mats);
            pal.set_normalize_directions(!raw);
            assert!(pal.all_rigid);
            let run =
                |fma: bool, chunk: usize| skin_ranges(&mesh, &pal, fma, (0, n), chunk, true, true);
            let (a, b) = (run(true, n), run(false, n));
            for v in 0..n {
                let scale = b.0[v].length().max(1.0);
                assert!((a.0[v] - b.0[v]).length() < 2e-6 * scale, "raw {raw} {v}");
                assert!(
                    (a.1[v] - b.1[v]).length() < 2e-6,
                    "raw {raw} {v}: {} {}",
                    a.1[v],
                    b.1[v]
                );
                let (ta, tb) = (a.2[v], b.2[v]);
                assert!(
                    (ta.truncate() - tb.truncate()).length() < 2e-6,
                    "raw {raw} {v}"
                );
                assert_eq!(ta.w, tb.w);
                let s = mesh.source_vertices()[v] as usize;
                if s % 40 == 3 {
                    assert_eq!(a.1[v], Vec3::ZERO, "raw {raw} {v}");
                } else {
                    assert!((a.1[v].length() - 1.0).abs() < 1e-6, "raw {raw} {v}");
                }
            }
            assert_eq!(run(true, 7), a, "raw {raw}");
        }
    }

    /// The AVX dual quaternion blocks (taken by the FMA build) give what the baseline build
    /// gives one vertex at a time, for every influence count, with blocks that mix rigid and
    /// scaling joints (those vertices fall back to linear blending) and leftover vertices.
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_dual_blocks_match_one_vertex_at_a_time() {
        if no_fma_build() {
            return;
        }
        let n = 203;
        let joints = 9;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.1 - 5.0, (i % 7) as f32, (i % 3) as f32))
                .collect(),
            normals: Some(
                (0..n)
                    .map(|i| {
                        if i % 50 == 7 {
                            Vec3::ZERO // falls back to the bind direction
                        } else {
                            Vec3::new(1.0, i as f32 * 0.3, -0.5).normalize()
                        }
                    })
                    .collect(),
            ),
            tangents: Some(
                (0..n)
                    .map(|i| Vec4::new(0.0, 1.0, i as f32, -1.0).normalize())
                    .collect(),
            ),
            influences: 8,
            ..Default::default()
        };
        for v in 0..n {
            for i in 0..8 {
                // Joint 8 scales; only vertices past 160 use it.
                let j = if v > 160 && i == 0 {
                    8
                } else {
                    (v + 3 * i) % 8
                };
                p.joints.push(j as u16);
                let k = (v / 16) % 8; // 16-vertex runs of each influence count
                p.weights.push(if i <= k {
                    1.0 + (i * v % 5) as f32
                } else {
                    0.0
                });
            }
        }
        let mesh = SkinningMesh::new(&p, joints).unwrap();
        assert!(mesh.groups().len() >= 8);
        let mut mats: Vec<Mat4> = (0..joints)
            .map(|i| {
                let axis = Vec3::new(1.0, i as f32, 0.5 - i as f32).normalize();
                Mat4::from_rotation_translation(
                    Quat::from_axis_angle(axis, 0.9 * i as f32 - 3.0),
                    Vec3::new(i as f32, -2.0 * i as f32, 0.5),
                )
            })
            .collect();
        mats[8] *= Mat4::from_scale(Vec3::new(1.0, 1.5, 1.0));
        let mut pal = SkinPalette::new(SkinningMethod::DualQuaternion);
        pal.set_matrices(&mats);
        assert!(!pal.all_rigid);
        let run = |fma: bool| skin_ranges(&mesh, &pal, fma, (0, n), n, true, true);
        let (a, b) = (run(true), run(false));
        for v in 0..n {
            let scale = b.0[v].length().max(1.0);
            assert!(
                (a.0[v] - b.0[v]).length() < 2e-6 * scale,
                "{v}: {} {}",
                a.0[v],
                b.0[v]
            );
            assert!(
                (a.1[v] - b.1[v]).length() < 2e-6,
                "{v}: {} {}",
                a.1[v],
                b.1[v]
            );
            assert!(
                (a.2[v] - b.2[v]).length() < 2e-6,
                "{v}: {} {}",
                a.2[v],
                b.2[v]
            );
        }
        // The zero normal came back as given.
        assert_eq!(a.1[7], Vec3::ZERO);
        // Skinned in ranges that do not fall on block boundaries (as `skin_par` does), the
        // FMA build gives the same bits.
        assert_eq!(skin_ranges(&mesh, &pal, true, (0, n), 13, true, true), a);
    }

    /// The same with every joint rigid (no per-block check) and a mesh without normals.
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_dual_blocks_all_rigid_without_normals() {
        if no_fma_build() {
            return;
        }
        let n = 77;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32, 1.0, -(i as f32) * 0.5))
                .collect(),
            influences: 4,
            ..Default::default()
        };
        for v in 0..n {
            for i in 0..4 {
                p.joints.push(((v * 7 + i * 3) % 6) as u16);
                p.weights
                    .push(if i <= v % 4 { 1.0 + i as f32 } else { 0.0 });
            }
        }
        let mesh = SkinningMesh::new(&p, 6).unwrap();
        // Joints 3 and 5 nearly opposite joint 0's rotation (the hemisphere flip).
        let mats: Vec<Mat4> = (0..6)
            .map(|i| {
                let angle = if i % 2 == 1 { 3.1 } else { 0.2 * i as f32 };
                Mat4::from_rotation_translation(Quat::from_rotation_z(angle), Vec3::splat(i as f32))
            })
            .collect();
        let mut pal = SkinPalette::new(SkinningMethod::DualQuaternion);
        pal.set_matrices(&mats);
        assert!(pal.all_rigid);
        let run =
            |fma: bool, chunk: usize| skin_ranges(&mesh, &pal, fma, (0, n), chunk, false, false).0;
        let (a, b) = (run(true, n), run(false, n));
        for v in 0..n {
            let scale = b[v].length().max(1.0);
            assert!(
                (a[v] - b[v]).length() < 2e-6 * scale,
                "{v}: {} {}",
                a[v],
                b[v]
            );
        }
        assert_eq!(run(true, 5), a);
    }

    /// A dual quaternion whose rotation is not finite (only a palette edited by hand has
    /// one: such a matrix is never rigid) blends to a not finite length: those vertices keep
    /// their first joint's transform, in the AVX blocks (which reload it only then) as in the
    /// one-vertex path.
    #[cfg(not(feature = "scalar"))]
    #[test]
    pub(super) fn avx_dual_blocks_fall_back_to_the_first_joint() {
        if no_fma_build() {
            return;
        }
        let n = 43;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.3, 1.0, 2.0 - i as f32))
                .collect(),
            normals: Some(vec![Vec3::Y; n]),
            influences: 4,
            ..Default::default()
        };
        for v in 0..n {
            // Joint 2 is the first (heaviest) influence of vertices 16..24 (one block of
            // eight) and the lightest of every other vertex from 24 on: blocks where some
            // lanes fall back and others do not, and a last, gathered block (40..43).
            let first = if (16..24).contains(&v) { 2 } else { 1 };
            let last = if v >= 24 && v % 2 == 0 { 2 } else { 4 };
            p.joints.extend_from_slice(&[first, 0, 3, last]);
            p.weights.extend_from_slice(&[4.0, 2.0, 1.5, 1.0]);
        }
        let mesh = SkinningMesh::new(&p, 5).unwrap();
        assert_eq!(mesh.groups().len(), 1);
        let mats: Vec<Mat4> = (0..5)
            .map(|i| {
                Mat4::from_rotation_translation(
                    Quat::from_rotation_x(0.4 * i as f32),
                    Vec3::new(i as f32, 0.0, -1.0),
                )
            })
            .collect();
        let mut pal = SkinPalette::new(SkinningMethod::DualQuaternion);
        pal.set_matrices(&mats);
        assert!(pal.all_rigid);
        pal.dual[2].real = Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0);
        let run =
            |fma: bool, chunk: usize| skin_ranges(&mesh, &pal, fma, (0, n), chunk, true, false);
        let (a, b) = (run(true, n), run(false, n));
        // In ranges of three: every block gathered (a vertex gets the same bits anywhere).
        let c = run(true, 3);
        for v in 0..n {
            let bits = |p: Vec3| p.to_array().map(f32::to_bits);
            assert_eq!(bits(a.0[v]), bits(c.0[v]), "{v}");
        }
        // Outputs, joints and bind positions are all in skinning order.
        let first = |v: usize| mesh.joints[4 * v];
        let mut fell_back = 0;
        for v in 0..n {
            let joint = first(v);
            if joint == 2 {
                // The first joint itself is not finite: nothing finite to fall back to.
                assert!(a.0[v].is_nan() && b.0[v].is_nan(), "{v}");
                continue;
            }
            // Every vertex with joint 2 among its others fell back to its first joint (1).
            let expect = pal.dual_matrices[joint as usize].transform_point3(mesh.positions[v]);
            if mesh.joints[4 * v..4 * v + 4].contains(&2) {
                fell_back += 1;
                let tol = 1e-6 * (1.0 + expect.length());
                assert!((a.0[v] - expect).length() < tol, "{v}: {} {expect}", a.0[v]);
            }
            assert!(
                (a.0[v] - b.0[v]).length() < 2e-5,
                "{v}: {} {}",
                a.0[v],
                b.0[v]
            );
            assert!(
                (a.1[v] - b.1[v]).length() < 2e-6,
                "{v}: {} {}",
                a.1[v],
                b.1[v]
            );
        }
        assert_eq!(fell_back, 10); // 24, 26, ..., 42
    }

    /// A mesh of 203 vertices with 1 to 4 influences over `joints` joints and the bind
    /// normals `normal(i)`.
    fn mixed_mesh(joints: usize, normal: impl Fn(usize) -> Vec3) -> SkinningMesh {
        let n = 203;
        let mut p = crate::MeshPrimitive {
            positions: (0..n)
                .map(|i| Vec3::new(i as f32 * 0.1 - 5.0, (i % 7) as f32, (i % 3) as f32))
                .collect(),
            normals: Some((0..n).map(normal).collect()),
            influences: 4,
            ..Default::default()
        };
        for v in 0..n {
            let k = 1 + (v / 24) % 4; // runs of each influence count, blocks and remainders
            for i in 0..4 {
                p.joints.push(((v + 3 * i) % joints) as u16);
                p.weights
                    .push(if i < k { 1.0 + (i * v % 5) as f32 } else { 0.0 });
            }
        }
        SkinningMesh::new(&p, joints).unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Dual quaternion skinning leaves unit bind normals as its rotations turn them:
        /// they come out unit within twice `UNIT_NORMAL_TOLERANCE` in the AVX blocks, the
        /// gathered blocks, the one-joint path and the one-vertex path alike, and the two
        /// builds agree. Bind normals not all unit are renormalised instead.
        #[test]
        fn dual_quaternion_normals_stay_unit(
            angles in proptest::collection::vec(-3.2f32..3.2, 8),
            axes in proptest::collection::vec((-1.0f32..1.0, -1.0f32..1.0, 0.1f32..1.0), 8),
            normal_seed in 0u32..1000,
            all_rigid in proptest::bool::ANY,
        ) {
            use super::super::mesh::UNIT_NORMAL_TOLERANCE;
            let normal = |i: usize| {
                let a = (i as u32 * 7919 + normal_seed) as f32;
                Vec3::new(a.sin(), (a * 0.37).cos(), 0.3).normalize()
            };
            let mats: Vec<Mat4> = (0..8)
                .map(|i| {
                    let (x, y, z) = axes[i];
                    let m = Mat4::from_rotation_translation(
                        Quat::from_axis_angle(Vec3::new(x, y, z).normalize(), angles[i]),
                        Vec3::new(i as f32, 1.0 - i as f32, 0.5),
                    );
                    // Joint 7 scales unless every joint is to be rigid: its vertices blend
                    // linearly (and renormalise).
                    if i == 7 && !all_rigid { m * Mat4::from_scale(Vec3::splat(1.2)) } else { m }
                })
                .collect();
            let mut pal = SkinPalette::new(SkinningMethod::DualQuaternion);
            pal.set_matrices(&mats);
            proptest::prop_assert_eq!(pal.all_rigid, all_rigid);
            let mesh = mixed_mesh(8, normal);
            proptest::prop_assert!(mesh.unit_normals);
            let n = mesh.vertex_count();
            let skinned = |mesh: &SkinningMesh, fma: bool| {
                let mut pos = vec![Vec3::ZERO; n];
                let mut nrm = vec![Vec3::ZERO; n];
                let out = SkinOutput { positions: &mut pos, normals: Some(&mut nrm), tangents: None };
                #[cfg(not(feature = "scalar"))]
                if fma {
                    skin_range_dispatch(mesh, &pal, None, 0, out);
                    return nrm;
                }
                let _ = fma;
                skin_range::<false>(mesh, &pal, None, 0, out);
                nrm
            };
            let baseline = skinned(&mesh, false);
            let fma = skinned(&mesh, true);
            for v in 0..n {
                for d in [baseline[v], fma[v]] {
                    proptest::prop_assert!(
                        (d.length() - 1.0).abs() <= 2.0 * UNIT_NORMAL_TOLERANCE,
                        "{}: {} long", v, d.length()
                    );
                }
                proptest::prop_assert!((baseline[v] - fma[v]).length() < 2e-6, "{}", v);
            }
            // Bind normals 0.1 % too long: not unit, so renormalised (tighter than the above).
            let long = mixed_mesh(8, |i| normal(i) * 1.001);
            proptest::prop_assert!(!long.unit_normals);
            for fma in [false, true] {
                for (v, d) in skinned(&long, fma).iter().enumerate() {
                    proptest::prop_assert!((d.length() - 1.0).abs() <= 1e-6, "{}: {}", v, d.length());
                }
            }
        }
    }

    #[test]
    pub(super) fn rigidity_and_similarity() {
        let r = Mat4::from_rotation_translation(Quat::from_rotation_y(1.0), Vec3::X);
        assert!(is_rigid(&r, 1e-3) && is_similarity(&r, 1e-4));
        let s = r * Mat4::from_scale(Vec3::splat(2.0));
        assert!(!is_rigid(&s, 1e-3) && is_similarity(&s, 1e-4));
        let n = r * Mat4::from_scale(Vec3::new(1.0, 2.0, 1.0));
        assert!(!is_rigid(&n, 1e-3) && !is_similarity(&n, 1e-4));
        let mirror = Mat4::from_scale(Vec3::new(-1.0, 1.0, 1.0));
        assert!(!is_rigid(&mirror, 1e-3) && is_similarity(&mirror, 1e-4));
    }
}
