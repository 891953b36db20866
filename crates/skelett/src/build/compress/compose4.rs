//! Model space in f64 for four poses at once, for the error measurement (`metric`): the
//! poses of four times go into the four lanes of every number, joint by joint, and each lane
//! does exactly what `DAffine3::from_scale_rotation_translation`, the affine product and the
//! vertex distance do for one pose, operation for operation and in the same order (no fused
//! multiply-adds): the same bits, at a fraction of the instructions (the compiler keeps the
//! lanes in vector registers). Measuring a candidate clip was half of the compressor's time,
//! most of it these compositions.
//!
//! f64, because at a budget of 0.01 cm on a skeleton a few metres in size f32's own
//! rounding is a tenth of the budget, too much for the measurement the guarantee rests on.
//! Affine (3x3 and translation): the same sums as 4x4 matrices without the constant row (for
//! finite values; a 4x4 product adds `0 * translation`, a NaN where a translation overflowed
//! f64, which only absurd scales down a long chain reach).

#[cfg(test)]
use glam::DAffine3;

use crate::Transform;

/// Lanes per number.
pub(super) const LANES: usize = 4;

type L = [f64; LANES];

// Written out lane by lane (no `array::from_fn`, which is not always inlined).
#[inline(always)]
fn lanes(mut f: impl FnMut(usize) -> f64) -> L {
    [f(0), f(1), f(2), f(3)]
}

#[inline(always)]
fn add(a: L, b: L) -> L {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]
}

#[inline(always)]
fn sub(a: L, b: L) -> L {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]]
}

#[inline(always)]
fn mul(a: L, b: L) -> L {
    [a[0] * b[0], a[1] * b[1], a[2] * b[2], a[3] * b[3]]
}

#[inline(always)]
fn three(mut f: impl FnMut(usize) -> L) -> [L; 3] {
    [f(0), f(1), f(2)]
}

/// An affine transform per lane: columns x, y, z of the 3x3 part and the translation, each
/// as x, y, z.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Affine4 {
    pub c: [[L; 3]; 4],
}

impl Affine4 {
    pub const IDENTITY: Self = Self {
        c: [
            [[1.0; LANES], [0.0; LANES], [0.0; LANES]],
            [[0.0; LANES], [1.0; LANES], [0.0; LANES]],
            [[0.0; LANES], [0.0; LANES], [1.0; LANES]],
            [[0.0; LANES]; 3],
        ],
    };

    /// Lane `l` of `m` set from one transform.
    #[cfg(test)]
    pub fn set(&mut self, l: usize, m: &DAffine3) {
        let cols = [
            m.matrix3.x_axis,
            m.matrix3.y_axis,
            m.matrix3.z_axis,
            m.translation,
        ];
        for (c, v) in self.c.iter_mut().zip(cols) {
            c[0][l] = v.x;
            c[1][l] = v.y;
            c[2][l] = v.z;
        }
    }

    /// Lane `l` as one transform.
    #[cfg(test)]
    pub fn get(&self, l: usize) -> DAffine3 {
        let v = |c: &[L; 3]| glam::DVec3::new(c[0][l], c[1][l], c[2][l]);
        DAffine3 {
            matrix3: glam::DMat3::from_cols(v(&self.c[0]), v(&self.c[1]), v(&self.c[2])),
            translation: v(&self.c[3]),
        }
    }

    /// `DAffine3::from_scale_rotation_translation` of each lane's local transform, the
    /// rotation normalised in f64 (`DQuat::normalize`).
    #[inline(always)]
    pub fn local(t: [&Transform; LANES]) -> Self {
        let q = |k: usize| lanes(|l| f64::from(t[l].rotation.to_array()[k]));
        let (x, y, z, w) = (q(0), q(1), q(2), q(3));
        // DVec4::dot left to right, length, recip, mul.
        let dot = add(add(add(mul(x, x), mul(y, y)), mul(z, z)), mul(w, w));
        let r = lanes(|l| 1.0 / dot[l].sqrt());
        let (x, y, z, w) = (mul(x, r), mul(y, r), mul(z, r), mul(w, r));
        // DMat3::from_quat.
        let (x2, y2, z2) = (add(x, x), add(y, y), add(z, z));
        let (xx, xy, xz) = (mul(x, x2), mul(x, y2), mul(x, z2));
        let (yy, yz, zz) = (mul(y, y2), mul(y, z2), mul(z, z2));
        let (wx, wy, wz) = (mul(w, x2), mul(w, y2), mul(w, z2));
        let one = [1.0; LANES];
        let rot = [
            [sub(one, add(yy, zz)), add(xy, wz), sub(xz, wy)],
            [sub(xy, wz), sub(one, add(xx, zz)), add(yz, wx)],
            [add(xz, wy), sub(yz, wx), sub(one, add(xx, yy))],
        ];
        let s = |k: usize| lanes(|l| f64::from(t[l].scale[k]));
        let scale = [s(0), s(1), s(2)];
        let tr = |k: usize| lanes(|l| f64::from(t[l].translation[k]));
        let col = |c: usize| three(|k| mul(rot[c][k], scale[c]));
        Self {
            c: [col(0), col(1), col(2), [tr(0), tr(1), tr(2)]],
        }
    }

    /// `DMat3::mul_vec3` of the 3x3 part.
    #[inline(always)]
    fn mul_vec(&self, v: &[L; 3]) -> [L; 3] {
        let m = &self.c;
        three(|k| {
            add(
                add(mul(m[0][k], v[0]), mul(m[1][k], v[1])),
                mul(m[2][k], v[2]),
            )
        })
    }

    /// The affine product `self * rhs`, as `DAffine3`'s.
    #[inline(always)]
    pub fn mul(&self, rhs: &Self) -> Self {
        let t = self.mul_vec(&rhs.c[3]);
        Self {
            c: [
                self.mul_vec(&rhs.c[0]),
                self.mul_vec(&rhs.c[1]),
                self.mul_vec(&rhs.c[2]),
                three(|k| add(t[k], self.c[3][k])),
            ],
        }
    }

    /// Per lane, the largest distance between the virtual vertices (`shell` along each axis)
    /// under `a` (the reference) and `self`: the largest `DVec3::length` of the three offsets.
    #[inline(always)]
    pub fn vertex_error(&self, a: &Self, shell: f64) -> [f32; LANES] {
        let o: [L; 3] = three(|k| sub(self.c[3][k], a.c[3][k]));
        let sh = [shell; LANES];
        let squared = |c: usize| {
            let v: [L; 3] = three(|k| add(o[k], mul(sub(self.c[c][k], a.c[c][k]), sh)));
            add(add(mul(v[0], v[0]), mul(v[1], v[1])), mul(v[2], v[2]))
        };
        let (ex, ey, ez) = (squared(0), squared(1), squared(2));
        // The root of the largest square: the largest root, bit for bit (the square root is
        // correctly rounded, so it never reverses an order), NaNs passed over by `max` as
        // before; one root where there were three.
        let e = |l: usize| ex[l].max(ey[l]).max(ez[l]).sqrt() as f32;
        [e(0), e(1), e(2), e(3)]
    }
}

/// Model space of the `needed` joints (all without it) of four poses, parents first.
///
/// Built twice: for the baseline (two lanes per instruction) and with AVX (four), chosen at
/// run time; AVX adds no fused multiply-add, so both give the same bits (a test checks).
pub(super) fn compose(
    parents: &[crate::JointIndex],
    poses: [&[Transform]; LANES],
    model: &mut [Affine4],
    needed: Option<&[bool]>,
) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (just checked), the only feature `compose_avx` is built
        // for; it is `compose_in` (safe code) compiled with it.
        unsafe { compose_avx(parents, poses, model, needed) };
        return;
    }
    compose_in(parents, poses, model, needed);
}

/// Per measured joint `j`, its lanes' vertex errors of `model[j]` against `reference[j]`
/// ([`Affine4::vertex_error`]); built for the baseline and for AVX as [`compose`].
pub(super) fn errors(
    model: &[Affine4],
    reference: &[Affine4],
    measured: &[usize],
    shell: f64,
    out: &mut [[f32; LANES]],
) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (just checked), the only feature `errors_avx` is built
        // for; it is `errors_in` (safe code) compiled with it.
        unsafe { errors_avx(model, reference, measured, shell, out) };
        return;
    }
    errors_in(model, reference, measured, shell, out);
}

/// [`errors_in`] built for AVX.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[target_feature(enable = "avx")]
unsafe fn errors_avx(
    model: &[Affine4],
    reference: &[Affine4],
    measured: &[usize],
    shell: f64,
    out: &mut [[f32; LANES]],
) {
    errors_in(model, reference, measured, shell, out);
}

#[inline(always)]
fn errors_in(
    model: &[Affine4],
    reference: &[Affine4],
    measured: &[usize],
    shell: f64,
    out: &mut [[f32; LANES]],
) {
    for (e, &j) in out.iter_mut().zip(measured) {
        *e = model[j].vertex_error(&reference[j], shell);
    }
}

/// [`compose_in`] built for AVX.
///
/// # Safety
/// The CPU must support AVX.
#[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
#[target_feature(enable = "avx")]
unsafe fn compose_avx(
    parents: &[crate::JointIndex],
    poses: [&[Transform]; LANES],
    model: &mut [Affine4],
    needed: Option<&[bool]>,
) {
    compose_in(parents, poses, model, needed);
}

#[inline(always)]
fn compose_in(
    parents: &[crate::JointIndex],
    poses: [&[Transform]; LANES],
    model: &mut [Affine4],
    needed: Option<&[bool]>,
) {
    for (j, m) in model.iter_mut().enumerate() {
        if needed.is_some_and(|n| !n[j]) {
            continue;
        }
        *m = Affine4::local([&poses[0][j], &poses[1][j], &poses[2][j], &poses[3][j]]);
    }
    for j in 0..model.len() {
        let p = parents[j];
        if p == crate::JointIndex::MAX || needed.is_some_and(|n| !n[j]) {
            continue;
        }
        model[j] = model[p as usize].mul(&model[j]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{Quat, Vec3};
    use proptest::prelude::*;

    fn transform() -> impl Strategy<Value = Transform> {
        (
            prop::array::uniform3(-50.0f32..50.0),
            prop::array::uniform4(-1.0f32..1.0),
            prop::array::uniform3(0.1f32..3.0),
        )
            .prop_filter("a rotation", |(_, q, _)| {
                q.iter().map(|x| x * x).sum::<f32>() > 1e-3
            })
            .prop_map(|(t, q, s)| Transform::new(Vec3::from(t), Quat::from_array(q), Vec3::from(s)))
    }

    /// Every f64 of an affine transform, bit for bit.
    fn bits(m: &DAffine3) -> [u64; 12] {
        m.to_cols_array().map(f64::to_bits)
    }

    fn scalar(t: &Transform) -> DAffine3 {
        DAffine3::from_scale_rotation_translation(
            t.scale.as_dvec3(),
            t.rotation.as_dquat().normalize(),
            t.translation.as_dvec3(),
        )
    }

    proptest! {
        /// Every lane has the bits of glam's one-transform arithmetic: locals, products and
        /// vertex errors.
        #[test]
        fn lanes_have_the_scalar_bits(
            a in prop::array::uniform4(transform()),
            b in prop::array::uniform4(transform()),
            shell in 0.01f64..10.0,
        ) {
            let la = Affine4::local([&a[0], &a[1], &a[2], &a[3]]);
            let lb = Affine4::local([&b[0], &b[1], &b[2], &b[3]]);
            let product = la.mul(&lb);
            let errors = product.vertex_error(&la, shell);
            for l in 0..LANES {
                let (sa, sb) = (scalar(&a[l]), scalar(&b[l]));
                prop_assert_eq!(bits(&la.get(l)), bits(&sa));
                prop_assert_eq!(bits(&product.get(l)), bits(&(sa * sb)));
                // What the measurement composed before: 4x4 matrices (equal values; only the
                // sign of a zero may differ, from the 4x4 product's extra `+ 0 * t`).
                let m4 = |t: &Transform| glam::DMat4::from_scale_rotation_translation(
                    t.scale.as_dvec3(),
                    t.rotation.as_dquat().normalize(),
                    t.translation.as_dvec3(),
                );
                let old = m4(&a[l]) * m4(&b[l]);
                let new = glam::DMat4::from(product.get(l));
                prop_assert_eq!(old, new);
                let p = sa * sb;
                let o = p.translation - sa.translation;
                let e = (o + (p.matrix3.x_axis - sa.matrix3.x_axis) * shell)
                    .length()
                    .max((o + (p.matrix3.y_axis - sa.matrix3.y_axis) * shell).length())
                    .max((o + (p.matrix3.z_axis - sa.matrix3.z_axis) * shell).length());
                prop_assert_eq!(errors[l].to_bits(), (e as f32).to_bits());
            }
        }
    }

    /// The run-time choice (AVX where the CPU has it) composes a chain with the bits of the
    /// baseline build and of glam's one-transform arithmetic.
    #[test]
    fn the_avx_build_composes_the_same_bits() {
        let parents = [crate::JointIndex::MAX, 0, 1, 1, 3];
        let poses: [Vec<Transform>; LANES] = std::array::from_fn(|l| {
            (0..parents.len())
                .map(|j| {
                    let x = (l * 7 + j) as f32;
                    Transform::new(
                        Vec3::new(x.sin() * 30.0, x.cos(), 0.3 * x),
                        Quat::from_xyzw(x.sin(), 0.2, x.cos(), 0.7),
                        Vec3::new(1.0 + 0.1 * x.sin(), 0.9, 1.1),
                    )
                })
                .collect()
        });
        let refs = [&poses[0][..], &poses[1][..], &poses[2][..], &poses[3][..]];
        let mut chosen = vec![Affine4::IDENTITY; parents.len()];
        let mut base = chosen.clone();
        compose(&parents, refs, &mut chosen, None);
        compose_in(&parents, refs, &mut base, None);
        assert_eq!(chosen, base);
        // Only the needed joints (a chain: 0, 1, 3, 4; not 2) are composed, the same way.
        let needed = [true, true, false, true, true];
        let mut some = vec![Affine4::IDENTITY; parents.len()];
        compose(&parents, refs, &mut some, Some(&needed));
        for (j, &n) in needed.iter().enumerate() {
            let expect = if n { chosen[j] } else { Affine4::IDENTITY };
            assert_eq!(some[j], expect, "joint {j}");
        }
        // Errors of the chain against itself shifted by one joint: nonzero, and the same
        // from both builds.
        let (mut e1, mut e2) = (vec![[0f32; LANES]; 4], vec![[0f32; LANES]; 4]);
        errors(&chosen[1..], &chosen[..4], &[0, 1, 2, 3], 3.0, &mut e1);
        errors_in(&chosen[1..], &chosen[..4], &[0, 1, 2, 3], 3.0, &mut e2);
        assert_eq!(e1, e2);
        assert!(e1.iter().flatten().all(|&e| e > 0.0), "{e1:?}");
        for (l, pose) in poses.iter().enumerate() {
            let mut model: Vec<DAffine3> = Vec::new();
            for (j, &p) in parents.iter().enumerate() {
                let local = scalar(&pose[j]);
                let m = if p == crate::JointIndex::MAX {
                    local
                } else {
                    model[p as usize] * local
                };
                model.push(m);
                assert_eq!(bits(&chosen[j].get(l)), bits(&m), "lane {l} joint {j}");
            }
        }
    }

    #[test]
    fn set_and_get_round_trip() {
        let t = Transform::new(
            Vec3::new(1.0, 2.0, 3.0),
            Quat::from_rotation_y(0.3),
            Vec3::splat(2.0),
        );
        let mut m = Affine4::IDENTITY;
        m.set(2, &scalar(&t));
        assert_eq!(m.get(2), scalar(&t));
        assert_eq!(m.get(0), DAffine3::IDENTITY);
    }
}
