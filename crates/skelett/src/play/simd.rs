//! AVX building blocks shared by the eight-wide kernels of sampling (`sampling/lanes.rs`),
//! blending (`pose/avx.rs`) and local-to-model (`hierarchy/avx.rs`): moving four-float rows
//! of eight joints in and out of one-register-per-component form.
//!
//! Plain `#[inline(always)]` functions, not `#[target_feature]` ones: they are inlined into
//! their AVX callers and take on their features there (which closures would not).

#![cfg(all(target_arch = "x86_64", not(feature = "scalar")))]

use std::arch::x86_64::*;

/// f32 from one `Transform` to the next: ten, or twelve where glam aligns `Quat` to 16
/// bytes (the last two then padding). The rotation is floats 0..4, the translation 4..7,
/// the scale 7..10 (asserted here, relied on by the blend and local-to-model).
pub(crate) const TRANSFORM_STRIDE: usize = std::mem::size_of::<crate::Transform>() / 4;
const _: () = assert!(
    TRANSFORM_STRIDE * 4 == std::mem::size_of::<crate::Transform>() && TRANSFORM_STRIDE >= 10
);
const _: () = assert!(std::mem::offset_of!(crate::Transform, rotation) == 0);
const _: () = assert!(std::mem::offset_of!(crate::Transform, translation) == 16);
const _: () = assert!(std::mem::offset_of!(crate::Transform, scale) == 28);

/// Whether this CPU has AVX and FMA (checked once by std, then a cached load): what every
/// kernel built for them checks before it is called.
#[inline]
pub(crate) fn avx_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx") && std::arch::is_x86_feature_detected!("fma")
}

/// Whether this CPU has AVX2 and FMA (as [`avx_fma`], a cached load after the first call).
#[inline]
pub(crate) fn avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// The two f32 at `p` in the low half of a register (the rest zero): an unaligned 8-byte
/// load (`_mm_load_sd` reads through an `f64` pointer, which must be 8-byte aligned; a
/// transform's scale is at byte 28).
///
/// # Safety
/// `p` must be valid for reading two f32.
#[inline(always)]
pub(crate) unsafe fn load2(p: *const f32) -> __m128 {
    _mm_castsi128_ps(_mm_loadu_si64(p as *const u8))
}

/// Writes the low two f32 of `v` to `p` (an unaligned 8-byte store).
///
/// # Safety
/// `p` must be valid for writing two f32.
#[inline(always)]
pub(crate) unsafe fn store2(p: *mut f32, v: __m128) {
    _mm_storeu_si64(p as *mut u8, _mm_castps_si128(v));
}

/// `lo` and `hi` as the two halves of a register.
///
/// # Safety
/// The CPU must support AVX (the caller's target features).
#[inline(always)]
pub(crate) unsafe fn pair(lo: __m128, hi: __m128) -> __m256 {
    _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(lo), hi)
}

/// A four-by-four transpose in each half: row `i` of the result holds lane `i` of `a`, `b`,
/// `c` and `d` (in each half). Rows of joints `i` and `i + 4` in the halves of the inputs
/// become one register per component; the same call turns them back.
///
/// # Safety
/// The CPU must support AVX (the caller's target features).
#[inline(always)]
pub(crate) unsafe fn transpose4(a: __m256, b: __m256, c: __m256, d: __m256) -> [__m256; 4] {
    let (t0, t1) = (_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    let (t2, t3) = (_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    [
        _mm256_shuffle_ps::<0x44>(t0, t2),
        _mm256_shuffle_ps::<0xEE>(t0, t2),
        _mm256_shuffle_ps::<0x44>(t1, t3),
        _mm256_shuffle_ps::<0xEE>(t1, t3),
    ]
}

/// Joint `lane`'s four floats from rows transposed back by [`transpose4`] (joints 0..4 in the
/// low halves, 4..8 in the high ones).
///
/// # Safety
/// The CPU must support AVX (the caller's target features); `lane < 8`.
#[inline(always)]
pub(crate) unsafe fn joint(rows: &[__m256; 4], lane: usize) -> __m128 {
    if lane < 4 {
        _mm256_castps256_ps128(rows[lane])
    } else {
        _mm256_extractf128_ps::<1>(rows[lane - 4])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposing_twice_gives_the_rows_back() {
        if !std::arch::is_x86_feature_detected!("avx") {
            eprintln!("no AVX: these helpers are not used on this CPU");
            return;
        }
        let rows: [[f32; 8]; 4] =
            std::array::from_fn(|r| std::array::from_fn(|c| (r * 8 + c) as f32));
        // SAFETY: AVX was just detected; every array holds eight f32.
        unsafe {
            let [a, b, c, d] = rows.map(|r| _mm256_loadu_ps(r.as_ptr()));
            let t = transpose4(a, b, c, d);
            let mut out = [[0f32; 8]; 4];
            for (o, r) in out.iter_mut().zip(t) {
                _mm256_storeu_ps(o.as_mut_ptr(), r);
            }
            // Row i of the result: lane i of each input, in each half.
            for i in 0..4 {
                for (k, row) in rows.iter().enumerate() {
                    assert_eq!(out[i][k], row[i]);
                    assert_eq!(out[i][4 + k], row[4 + i]);
                }
            }
            let back = transpose4(t[0], t[1], t[2], t[3]);
            for (r, b) in rows.iter().zip(back) {
                let mut o = [0f32; 8];
                _mm256_storeu_ps(o.as_mut_ptr(), b);
                assert_eq!(&o, r);
            }
            let mut lane5 = [0f32; 4];
            _mm_storeu_ps(lane5.as_mut_ptr(), joint(&t, 5));
            assert_eq!(lane5, [rows[0][5], rows[1][5], rows[2][5], rows[3][5]]);
        }
    }
}
