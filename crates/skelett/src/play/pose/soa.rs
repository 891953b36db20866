//! Poses in structure-of-arrays form: eight joints per block, one array of eight floats per
//! component, for engines that run their own per-frame jobs (as ozz-animation's
//! `SoaTransform` poses do) and want the blend without moving floats between joints.
//!
//! ```text
//! sample_soa() ──▶ SoaPose ──blend_soa()──▶ SoaPose ──local_to_model_soa()──▶ model matrices
//!                     ▲  │                                  (or write_to() ──▶ &mut [Transform])
//!   copy_from(&[Transform])
//! ```
//!
//! A [`Transform`] slice keeps a joint's ten floats together, which is what the rest of the
//! library (the animator, IK, retargeting, skinning) reads. Blending wants the opposite: the
//! same component of eight joints in one register. On the slice form the blend's side tests
//! and normalisation transpose every rotation in and out of registers, about as much work
//! as the blend's arithmetic; on a [`SoaPose`] a block is ten aligned loads per input and
//! ten stores, and nothing else moves.
//!
//! [`blend_soa`] gives, on CPUs with AVX and FMA, the bits [`super::blend`] gives for the same
//! inputs without masks, up to eight of them (for poses of at least eight joints: `blend`
//! takes shorter poses one joint at a time, with four-wide dot products rounded otherwise),
//! and the portable path's bits in the `scalar` build. Lanes past the pose's last joint (the last block's padding)
//! hold the identity when a constructor makes them and whatever the blend makes of the
//! inputs' padding after [`blend_soa`]: nothing reads them as joints.

use glam::{Quat, Vec3};

use super::blend_joint;
use crate::error::check_len;
use crate::{Error, Skeleton, Transform};

/// Joints per [`SoaBlock`].
pub const SOA_LANES: usize = 8;

/// Eight joints' transforms, one array per component (`rotation[c][lane]`: component `c` of
/// the rotation, x y z w, of joint `8 * block + lane`). Aligned to 32 bytes: each array is
/// one 256-bit load. (Its `==` compares all eight lanes; [`SoaPose`]'s only its joints.)
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(32))]
pub struct SoaBlock {
    /// Rotation components x, y, z, w.
    pub rotation: [[f32; SOA_LANES]; 4],
    /// Translation components x, y, z.
    pub translation: [[f32; SOA_LANES]; 3],
    /// Scale components x, y, z.
    pub scale: [[f32; SOA_LANES]; 3],
}

impl SoaBlock {
    /// Eight identity transforms.
    pub const IDENTITY: SoaBlock = SoaBlock {
        rotation: [[0.0; 8], [0.0; 8], [0.0; 8], [1.0; 8]],
        translation: [[0.0; 8]; 3],
        scale: [[1.0; 8]; 3],
    };

    /// The transform in lane `lane` (below [`SOA_LANES`]).
    ///
    /// # Panics
    /// If `lane` is not below 8.
    #[inline]
    pub fn get(&self, lane: usize) -> Transform {
        let r = &self.rotation;
        let (t, s) = (&self.translation, &self.scale);
        Transform {
            rotation: Quat::from_xyzw(r[0][lane], r[1][lane], r[2][lane], r[3][lane]),
            translation: Vec3::new(t[0][lane], t[1][lane], t[2][lane]),
            scale: Vec3::new(s[0][lane], s[1][lane], s[2][lane]),
        }
    }

    /// Writes `t` to lane `lane`.
    ///
    /// # Panics
    /// If `lane` is not below 8.
    #[inline]
    pub fn set(&mut self, lane: usize, t: &Transform) {
        let q = t.rotation.to_array();
        for (c, v) in q.into_iter().enumerate() {
            self.rotation[c][lane] = v;
        }
        for c in 0..3 {
            self.translation[c][lane] = t.translation[c];
            self.scale[c][lane] = t.scale[c];
        }
    }
}

/// A pose of `len` joints in blocks of eight, structure of arrays (see the module docs).
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// let joints = [Transform::new(Vec3::X, Quat::from_rotation_z(0.5), Vec3::ONE); 11];
/// let pose = SoaPose::from_transforms(&joints);
/// assert_eq!((pose.len(), pose.blocks().len()), (11, 2));
/// assert_eq!(pose.get(10), joints[10]);
/// let mut back = vec![Transform::IDENTITY; 11];
/// pose.write_to(&mut back)?;
/// assert_eq!(back, joints);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// Two poses are equal when they have the same joints (lanes past `len()`, the last block's
/// padding, are not compared).
#[derive(Clone, Debug, Default)]
pub struct SoaPose {
    blocks: Vec<SoaBlock>,
    len: usize,
    /// Where [`crate::sample_soa`] samples clips that cannot write blocks (compact clips, the
    /// `scalar` build) before copying them in: empty until the first such sample.
    staging: Vec<Transform>,
    /// The identity of the clip [`crate::sample_soa`] last sampled into the pose, 0 if none
    /// or if the pose was written since: the pose then holds that clip's static joints (its
    /// base pose where no track writes), which the next sample of the same clip leaves as
    /// they are instead of writing them again.
    statics: u64,
}

impl PartialEq for SoaPose {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && (0..self.len).all(|j| self.get(j) == other.get(j))
    }
}

impl SoaPose {
    /// `len` identity transforms.
    pub fn identity(len: usize) -> Self {
        SoaPose {
            blocks: vec![SoaBlock::IDENTITY; len.div_ceil(SOA_LANES)],
            len,
            staging: Vec::new(),
            statics: 0,
        }
    }

    /// The skeleton's rest pose.
    pub fn rest(skeleton: &Skeleton) -> Self {
        Self::from_transforms(skeleton.rest_pose())
    }

    /// The transforms of `joints`, in their order.
    pub fn from_transforms(joints: &[Transform]) -> Self {
        let mut pose = Self::identity(joints.len());
        let _ = pose.copy_from(joints);
        pose
    }

    /// Makes the pose `len` joints long, its blocks reused (allocating only to grow past
    /// the largest it has held); the contents are identities where new blocks were added
    /// and otherwise what they were, and no clip's static joints count as written.
    pub(crate) fn reset_len(&mut self, len: usize) {
        self.blocks
            .resize(len.div_ceil(SOA_LANES), SoaBlock::IDENTITY);
        self.len = len;
        self.statics = 0;
    }

    /// The staging buffer, `n` transforms long (allocated on the first call only).
    pub(crate) fn take_staging(&mut self, n: usize) -> Vec<Transform> {
        let mut staging = std::mem::take(&mut self.staging);
        staging.resize(n, Transform::IDENTITY);
        staging
    }

    /// Gives the staging buffer back for the next sample.
    pub(crate) fn put_staging(&mut self, staging: Vec<Transform>) {
        self.staging = staging;
    }

    /// The blocks to sample `clip` into, and whether its static joints must be written:
    /// not where the last write was a sample of the same clip (clips whose content changes
    /// take a new identity). The pose counts as holding `clip`'s static joints afterwards.
    pub(crate) fn blocks_for(&mut self, clip: u64) -> (&mut [SoaBlock], bool) {
        let statics = self.statics != clip;
        self.statics = clip;
        (&mut self.blocks, statics)
    }

    /// Joints in the pose.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pose has no joints.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The blocks, `len().div_ceil(8)` of them: joint `j` is lane `j % 8` of block `j / 8`.
    #[inline]
    pub fn blocks(&self) -> &[SoaBlock] {
        &self.blocks
    }

    /// The blocks, to write (lanes past `len()` are never read as joints).
    #[inline]
    pub fn blocks_mut(&mut self) -> &mut [SoaBlock] {
        self.statics = 0;
        &mut self.blocks
    }

    /// Joint `j`'s transform.
    ///
    /// # Panics
    /// If `j` is not below `len()`.
    #[inline]
    pub fn get(&self, j: usize) -> Transform {
        assert!(j < self.len, "joint {j} of a pose of {}", self.len);
        self.blocks[j / SOA_LANES].get(j % SOA_LANES)
    }

    /// Writes joint `j`'s transform.
    ///
    /// # Panics
    /// If `j` is not below `len()`.
    #[inline]
    pub fn set(&mut self, j: usize, t: &Transform) {
        assert!(j < self.len, "joint {j} of a pose of {}", self.len);
        self.statics = 0;
        self.blocks[j / SOA_LANES].set(j % SOA_LANES, t);
    }

    /// Takes the first `len()` transforms of `joints` (no allocation; with AVX, eight joints
    /// per 8x8 transpose).
    ///
    /// # Errors
    /// [`Error::Length`] if `joints` is shorter than the pose; nothing is written.
    pub fn copy_from(&mut self, joints: &[Transform]) -> Result<(), Error> {
        check_len("transforms", self.len, joints.len())?;
        self.statics = 0;
        fill_blocks(&mut self.blocks, &joints[..self.len]);
        Ok(())
    }

    /// Writes the pose's transforms to the first `len()` entries of `out` (no allocation;
    /// with AVX, eight joints per 8x8 transpose).
    ///
    /// # Errors
    /// [`Error::Length`] if `out` is shorter than the pose; nothing is written.
    pub fn write_to(&self, out: &mut [Transform]) -> Result<(), Error> {
        check_len("transforms", self.len, out.len())?;
        for (block, eight) in self
            .blocks
            .iter()
            .zip(out[..self.len].chunks_mut(SOA_LANES))
        {
            #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
            if super::avx::available() {
                // SAFETY: AVX was just detected; `eight` has at most eight entries.
                // `transforms_round_trip` runs it.
                unsafe { super::soa_avx::write_block(block, eight) };
                continue;
            }
            for (lane, o) in eight.iter_mut().enumerate() {
                *o = block.get(lane);
            }
        }
        Ok(())
    }
}

/// Writes the first `joints.len()` transforms into the lanes of `blocks`, in order (joint
/// `j` to lane `j % 8` of block `j / 8`; `blocks` holds at least that many lanes). With
/// AVX, eight joints per 8x8 transpose.
pub(crate) fn fill_blocks(blocks: &mut [SoaBlock], joints: &[Transform]) {
    let mut whole = joints.chunks_exact(SOA_LANES);
    for (block, eight) in blocks.iter_mut().zip(&mut whole) {
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        if super::avx::available() {
            // SAFETY: AVX was just detected; `eight` is eight transforms.
            // `transforms_round_trip` runs it.
            unsafe { super::soa_avx::read_block(eight.try_into().unwrap(), block) };
            continue;
        }
        for (lane, t) in eight.iter().enumerate() {
            block.set(lane, t);
        }
    }
    let last = joints.len() / SOA_LANES;
    for (lane, t) in whole.remainder().iter().enumerate() {
        blocks[last].set(lane, t);
    }
}

/// One input of [`blend_soa`]: a pose and its weight.
#[derive(Clone, Copy, Debug)]
pub struct SoaBlendInput<'a> {
    /// The pose, at least as long as the output.
    pub pose: &'a SoaPose,
    /// Weight of the whole pose (weights that are not positive, NaN included, count as 0).
    pub weight: f32,
}

/// [`super::blend`] on poses in structure-of-arrays form, without masks: the positive weights
/// are normalised to sum to 1, translations and scales averaged, rotations summed on the
/// first input's side and normalised (the identity where they cancel); where no weight is
/// positive, `out` takes `rest`. Infinite weights count as the largest finite one, and
/// weights whose sum overflows are taken at 2^-64. Any number of inputs (more than eight
/// with a positive weight allocate two small vectors per call; up to eight allocate nothing).
///
/// With at most eight inputs (`blend`'s unmasked path), on CPUs with AVX and FMA, the result
/// has the bits `blend` gives for the same inputs as slices (poses of eight joints or more),
/// eight joints per register and nothing transposed; the `scalar` build gives the portable
/// `blend`'s bits. With more inputs `blend` takes its per-joint path (for masks), which
/// sums and divides per joint: the results agree within rounding (rotations within 3e-7,
/// translations and scales within a few units in the last place); on poses shorter than
/// eight joints, within 2e-7.
///
/// ```
/// # use skelett::*;
/// # use glam::{Quat, Vec3};
/// let a = SoaPose::from_transforms(&[Transform::IDENTITY; 20]);
/// let b = SoaPose::from_transforms(&[Transform::new(Vec3::X, Quat::IDENTITY, Vec3::ONE); 20]);
/// let mut out = SoaPose::identity(20);
/// blend_soa(&[SoaBlendInput { pose: &a, weight: 1.0 },
///             SoaBlendInput { pose: &b, weight: 3.0 }], &a, &mut out)?;
/// assert!((out.get(19).translation - Vec3::new(0.75, 0.0, 0.0)).length() < 1e-6);
/// # Ok::<(), skelett::Error>(())
/// ```
///
/// # Errors
/// [`Error::Length`] if an input or `rest` is shorter than `out`; nothing is written.
pub fn blend_soa(inputs: &[SoaBlendInput], rest: &SoaPose, out: &mut SoaPose) -> Result<(), Error> {
    let n = out.len();
    check_len("rest", n, rest.len())?;
    let blocks = out.blocks.len();
    let blended = blend_into(inputs, n, &mut out.blocks[..])?;
    out.statics = 0;
    if !blended {
        out.blocks.copy_from_slice(&rest.blocks[..blocks]);
    }
    Ok(())
}

/// [`blend_soa`] with the result written as rows: the same bits, each block transposed once
/// on its way out (the animator's layers, whose output the rest of the frame reads as
/// [`Transform`]s), without a whole pose of blocks in between.
///
/// # Errors
/// [`Error::Length`] if an input or `rest` is shorter than `out`; nothing is written.
pub(crate) fn blend_soa_to_rows(
    inputs: &[SoaBlendInput],
    rest: &[Transform],
    out: &mut [Transform],
) -> Result<(), Error> {
    let n = out.len();
    check_len("rest", n, rest.len())?;
    let mut rows = Rows {
        temp: SoaBlock::IDENTITY,
        out,
    };
    if !blend_into(inputs, n, &mut rows)? {
        rows.out.copy_from_slice(&rest[..n]);
    }
    Ok(())
}

/// [`blend_soa`] over a rest pose given as rows (the animator's, where a layer's output
/// stays in blocks): the same bits.
///
/// # Errors
/// [`Error::Length`] if an input or `rest` is shorter than `out`; nothing is written.
pub(crate) fn blend_soa_over_rows(
    inputs: &[SoaBlendInput],
    rest: &[Transform],
    out: &mut SoaPose,
) -> Result<(), Error> {
    let n = out.len();
    check_len("rest", n, rest.len())?;
    let blended = blend_into(inputs, n, &mut out.blocks[..])?;
    out.statics = 0;
    if !blended {
        fill_blocks(&mut out.blocks, &rest[..n]);
    }
    Ok(())
}

/// `out = lerp(a, b, t)` joint by joint, `a` being `from` or, where that is `None`, `out`
/// itself: as a blend tree folds a child into what its earlier children made and as a blend
/// space mixes its two neighbouring clips. Translations and scales `a * (1 - t) + b * t`,
/// rotations the same on `a`'s side (`b` negated where the four-wide dot product is
/// negative) and, with `NORMALISE`, divided by their length (`v * (1 / sqrt(v · v))`, the
/// nlerp of [`crate::transform::nlerp`]). The bits of those row formulas (glam's `lerp`,
/// `dot`, `length_recip`) on every lane: with AVX eight joints per operation in the same
/// order, without fused multiply-adds, otherwise lane by lane through the row functions
/// themselves. `from` and `b` hold at least `out`'s joints.
pub(crate) fn lerp_soa<const NORMALISE: bool>(
    out: &mut SoaPose,
    from: Option<&SoaPose>,
    b: &SoaPose,
    t: f32,
) {
    let n = out.blocks.len();
    out.statics = 0;
    let (out, from, b) = (
        &mut out.blocks[..],
        from.map(|f| &f.blocks[..n]),
        &b.blocks[..n],
    );
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if super::avx::available() {
        // SAFETY: AVX was just detected; every slice has `n` blocks.
        // `lerp_soa_is_the_row_lerp` runs it.
        unsafe { super::soa_avx::lerp::<NORMALISE>(out, from, b, t) };
        return;
    }
    lerp_portable::<NORMALISE>(out, from, b, t);
}

/// [`lerp_soa`] lane by lane through glam's row functions (CPUs without AVX, the `scalar`
/// build).
fn lerp_portable<const NORMALISE: bool>(
    out: &mut [SoaBlock],
    from: Option<&[SoaBlock]>,
    b: &[SoaBlock],
    t: f32,
) {
    for k in 0..out.len() {
        for lane in 0..SOA_LANES {
            let x = from.map_or(&out[k], |f| &f[k]).get(lane);
            let y = b[k].get(lane);
            let (qa, mut qb) = (glam::Vec4::from(x.rotation), glam::Vec4::from(y.rotation));
            if qa.dot(qb) < 0.0 {
                qb = -qb;
            }
            let mut q = qa.lerp(qb, t);
            if NORMALISE {
                q *= q.length_recip();
            }
            let joint = Transform {
                translation: x.translation.lerp(y.translation, t),
                rotation: Quat::from_vec4(q),
                scale: x.scale.lerp(y.scale, t),
            };
            out[k].set(lane, &joint);
        }
    }
}

/// Every rotation of `out` divided by its length (`v * (1 / sqrt(v · v))`, glam's
/// `length_recip`, the bits of the row formula on every lane; the end of a blend tree's
/// fold, [`lerp_soa`] without `NORMALISE`).
pub(crate) fn normalise_rotations_soa(out: &mut SoaPose) {
    out.statics = 0;
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if super::avx::available() {
        // SAFETY: AVX was just detected. `lerp_soa_is_the_row_lerp` runs it.
        unsafe { super::soa_avx::normalise_rotations(&mut out.blocks) };
        return;
    }
    normalise_portable(&mut out.blocks);
}

/// [`normalise_rotations_soa`] lane by lane through glam's row functions.
fn normalise_portable(out: &mut [SoaBlock]) {
    for o in out {
        for lane in 0..SOA_LANES {
            let mut j = o.get(lane);
            let v = glam::Vec4::from(j.rotation);
            j.rotation = Quat::from_vec4(v * v.length_recip());
            o.set(lane, &j);
        }
    }
}

/// Where a structure-of-arrays blend puts block `b`'s result: straight into a pose's blocks,
/// or into a block on the stack that [`Sink::done`] then writes out as rows.
pub(super) trait Sink {
    /// Blocks to produce.
    fn blocks(&self) -> usize;
    /// The block that receives block `b`'s result.
    fn block(&mut self, b: usize) -> &mut SoaBlock;
    /// Block `b`'s result is complete in [`Sink::block`].
    fn done(&mut self, b: usize);
}

impl Sink for [SoaBlock] {
    #[inline(always)]
    fn blocks(&self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn block(&mut self, b: usize) -> &mut SoaBlock {
        &mut self[b]
    }

    #[inline(always)]
    fn done(&mut self, _: usize) {}
}

/// A [`Sink`] writing rows ([`Transform`]s): each block's result goes through `temp` (in the
/// first-level cache) to its eight joints.
struct Rows<'a> {
    temp: SoaBlock,
    out: &'a mut [Transform],
}

impl Sink for Rows<'_> {
    #[inline(always)]
    fn blocks(&self) -> usize {
        self.out.len().div_ceil(SOA_LANES)
    }

    #[inline(always)]
    fn block(&mut self, _: usize) -> &mut SoaBlock {
        &mut self.temp
    }

    #[inline(always)]
    fn done(&mut self, b: usize) {
        let end = (b * SOA_LANES + SOA_LANES).min(self.out.len());
        let out = &mut self.out[b * SOA_LANES..end];
        #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
        if super::avx::available() {
            // SAFETY: AVX was just detected; `out` has at most eight entries.
            // `soa_blend_is_the_slice_blend` runs it (through `blend_soa_to_rows`).
            unsafe { super::soa_avx::write_block(&self.temp, out) };
            return;
        }
        for (lane, o) in out.iter_mut().enumerate() {
            *o = self.temp.get(lane);
        }
    }
}

/// The blend of `inputs` (poses of at least `n` joints) into `sink`; `false`, with nothing
/// written, where no weight is positive.
fn blend_into(
    inputs: &[SoaBlendInput],
    n: usize,
    sink: &mut (impl Sink + ?Sized),
) -> Result<bool, Error> {
    for i in inputs {
        check_len("blend input pose", n, i.pose.len())?;
    }
    let blocks = sink.blocks();
    // Two or three inputs, all of positive weight (a cross-fade, `skelett bench`'s rows): as
    // below without gathering them first (the eight-entry arrays' set-up was about a third
    // of a 19-joint blend's instructions outside its kernel).
    match inputs {
        [a, b] if a.weight > 0.0 && b.weight > 0.0 => return Ok(blend_all([a, b], blocks, sink)),
        [a, b, c] if a.weight > 0.0 && b.weight > 0.0 && c.weight > 0.0 => {
            return Ok(blend_all([a, b, c], blocks, sink));
        }
        _ => {}
    }
    // The positive inputs and their weights (infinite ones as the largest finite weight),
    // on the stack up to eight (the animator's layers and cross-fades), else in vectors.
    let mut poses8: [&[SoaBlock]; 8] = [&[]; 8];
    let mut w8 = [0.0f32; 8];
    let (mut poses, mut w) = (Vec::new(), Vec::new());
    let mut m = 0;
    for i in inputs {
        if i.weight > 0.0 {
            let (p, wk) = (&i.pose.blocks[..blocks], i.weight.min(f32::MAX));
            if m < 8 {
                (poses8[m], w8[m]) = (p, wk);
            } else {
                if poses.is_empty() {
                    (poses, w) = (poses8.to_vec(), w8.to_vec());
                }
                poses.push(p);
                w.push(wk);
            }
            m += 1;
        }
    }
    let (poses, w): (&[&[SoaBlock]], &mut [f32]) = if m <= 8 {
        (&poses8[..m], &mut w8[..m])
    } else {
        (&poses, &mut w)
    };
    // Over their sum (as the slice blend's `w /= total`), taken at 2^-64 where it overflows.
    let Some(total) = super::weight_total(w) else {
        return Ok(false);
    };
    // Weights that already sum to 1 (a cross-fade's w and 1 - w often do) divide to
    // themselves: the divisions are skipped, not their bits.
    if total != 1.0 {
        for x in w.iter_mut() {
            *x /= total;
        }
    }
    blend_weighted(poses, w, sink);
    Ok(true)
}

/// [`blend_into`] of `M` inputs whose weights are all positive (the caller checked; their
/// lengths too): the same weights, divided by the same total, and the same kernel. Returns
/// whether it blended: always, as positive weights have a positive total (the check is the
/// general path's, kept in case `weight_total` changes). The division is written out here
/// rather than shared with the general path through a slice: on this array of `M` it
/// unrolls (sharing it cost 4 of the 434 instructions of a two-pose blend).
#[inline(always)]
fn blend_all<const M: usize>(
    inputs: [&SoaBlendInput; M],
    blocks: usize,
    sink: &mut (impl Sink + ?Sized),
) -> bool {
    let mut w = inputs.map(|i| i.weight.min(f32::MAX));
    let poses = inputs.map(|i| &i.pose.blocks[..blocks]);
    let Some(total) = super::weight_total(&mut w) else {
        return false;
    };
    if total != 1.0 {
        for x in w.iter_mut() {
            *x /= total;
        }
    }
    blend_weighted(&poses, &w, sink);
    true
}

/// The blend's kernel on `poses` with normalised positive weights `w` (paired, at least
/// one; every pose holding the sink's blocks): AVX where the CPU has it, else portable.
#[inline(always)]
fn blend_weighted(poses: &[&[SoaBlock]], w: &[f32], sink: &mut (impl Sink + ?Sized)) {
    #[cfg(all(target_arch = "x86_64", not(feature = "scalar")))]
    if super::avx::available() {
        // SAFETY: AVX and FMA were just detected; `poses` and `w` pair up (at least one),
        // every pose has the sink's blocks. `soa_blend_is_the_slice_blend` runs it.
        unsafe { super::soa_avx::blend(poses, w, sink) };
        return;
    }
    portable_blend(poses, w, sink);
}

/// [`blend_soa`]'s loop with the portable `blend`'s arithmetic, lane by lane.
fn portable_blend(poses: &[&[SoaBlock]], w: &[f32], sink: &mut (impl Sink + ?Sized)) {
    for b in 0..sink.blocks() {
        let o = sink.block(b);
        for lane in 0..SOA_LANES {
            let t = blend_joint(poses.len(), |k| poses[k][b].get(lane), w);
            o.set(lane, &t);
        }
        sink.done(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{blend, BlendInput};
    use glam::Vec4;
    use proptest::prelude::*;

    fn transform() -> impl Strategy<Value = Transform> {
        (
            proptest::array::uniform3(-5.0f32..5.0),
            proptest::array::uniform4(-1.0f32..1.0),
            proptest::array::uniform3(0.1f32..3.0),
        )
            .prop_map(|(t, q, s)| {
                let q = Vec4::from_array(q);
                let q = if q.length() > 1e-3 {
                    q.normalize()
                } else {
                    Vec4::W
                };
                Transform::new(Vec3::from(t), Quat::from_vec4(q), Vec3::from(s))
            })
    }

    /// 1 to 9 poses of `n` joints (1 to 40) and a weight each, some not positive.
    fn inputs() -> impl Strategy<Value = (Vec<Vec<Transform>>, Vec<f32>)> {
        (1usize..40, 1usize..10).prop_flat_map(|(n, k)| {
            (
                proptest::collection::vec(proptest::collection::vec(transform(), n), k),
                proptest::collection::vec(
                    prop_oneof![
                        8 => 0.01f32..5.0,
                        2 => Just(0.0f32),
                        2 => Just(-1.0f32),
                        1 => Just(f32::NAN),
                        // 1e30 to 3e38 (not as a float range: proptest's sampler can
                        // trip its own assertion on one that wide).
                        1 => (30i32..=38, 1.0f32..3.0).prop_map(|(e, m)| m * 10f32.powi(e)),
                        1 => Just(f32::MAX),
                        1 => Just(f32::INFINITY),
                    ],
                    k,
                ),
            )
        })
    }

    /// Any transform, rotations not normalised (a blend tree folds unnormalised sums).
    fn any_transform() -> impl Strategy<Value = Transform> {
        (
            proptest::array::uniform3(-5.0f32..5.0),
            proptest::array::uniform4(-1.0f32..1.0),
            proptest::array::uniform3(-3.0f32..3.0),
        )
            .prop_map(|(t, q, s)| {
                Transform::new(
                    Vec3::from(t),
                    Quat::from_xyzw(q[0], q[1], q[2], q[3]),
                    Vec3::from(s),
                )
            })
    }

    fn bits(t: &Transform) -> [u32; 10] {
        let (q, v, s) = (t.rotation.to_array(), t.translation, t.scale);
        [q[0], q[1], q[2], q[3], v.x, v.y, v.z, s.x, s.y, s.z].map(f32::to_bits)
    }

    /// The row formulas `lerp_soa` and `normalise_rotations_soa` promise: a blend tree's
    /// fold (`BlendTree::eval_blend`) and a blend space's mix (`blend_two`, through
    /// `transform::nlerp`), written as rows.
    fn row_lerp(a: &Transform, b: &Transform, t: f32, normalise: bool) -> Transform {
        let rotation = if normalise {
            crate::transform::nlerp(a.rotation, b.rotation, t)
        } else {
            let (qa, mut qb) = (Vec4::from(a.rotation), Vec4::from(b.rotation));
            if qa.dot(qb) < 0.0 {
                qb = -qb;
            }
            Quat::from_vec4(qa.lerp(qb, t))
        };
        Transform {
            translation: a.translation.lerp(b.translation, t),
            rotation,
            scale: a.scale.lerp(b.scale, t),
        }
    }

    fn lerped(
        normalise: bool,
        out: &[Transform],
        from: Option<&[Transform]>,
        b: &[Transform],
        t: f32,
        portable: bool,
    ) -> SoaPose {
        let mut o = SoaPose::from_transforms(out);
        let from = from.map(SoaPose::from_transforms);
        let b = SoaPose::from_transforms(b);
        match (normalise, portable) {
            (true, false) => lerp_soa::<true>(&mut o, from.as_ref(), &b, t),
            (false, false) => lerp_soa::<false>(&mut o, from.as_ref(), &b, t),
            (true, true) => lerp_portable::<true>(
                &mut o.blocks,
                from.as_ref().map(|f| &f.blocks[..]),
                &b.blocks,
                t,
            ),
            (false, true) => lerp_portable::<false>(
                &mut o.blocks,
                from.as_ref().map(|f| &f.blocks[..]),
                &b.blocks,
                t,
            ),
        }
        o
    }

    proptest! {
        /// `lerp_soa` (from the pose itself or from another) and `normalise_rotations_soa`
        /// give the row formulas' bits on every joint, on the AVX path where the CPU has it
        /// and on the portable one; rotations on both sides of the dot product's sign.
        #[test]
        fn lerp_soa_is_the_row_lerp(
            joints in (1usize..30).prop_flat_map(|n| (
                proptest::collection::vec(any_transform(), n),
                proptest::collection::vec(any_transform(), n),
                proptest::collection::vec(any_transform(), n),
            )),
            t in prop_oneof![0.0f32..1.0, Just(0.0f32), Just(1.0f32), Just(0.5f32)],
            normalise in any::<bool>(),
            from_other in any::<bool>(),
        ) {
            let (x, a, b) = joints;
            let from = from_other.then_some(&a[..]);
            let first = if from_other { &a } else { &x };
            for portable in [false, true] {
                let got = lerped(normalise, &x, from, &b, t, portable);
                for j in 0..x.len() {
                    let want = row_lerp(&first[j], &b[j], t, normalise);
                    prop_assert_eq!(bits(&got.get(j)), bits(&want), "joint {} portable {}", j, portable);
                }
                let mut unit = got.clone();
                if portable {
                    normalise_portable(&mut unit.blocks);
                } else {
                    normalise_rotations_soa(&mut unit);
                }
                for j in 0..x.len() {
                    let v = Vec4::from(got.get(j).rotation);
                    let want = Quat::from_vec4(v * v.length_recip());
                    prop_assert_eq!(unit.get(j).rotation.to_array().map(f32::to_bits),
                        want.to_array().map(f32::to_bits));
                    prop_assert_eq!(unit.get(j).translation, got.get(j).translation);
                }
            }
        }
    }

    /// `lerp_soa` and `normalise_rotations_soa` leave a pose holding no clip's static
    /// joints.
    #[test]
    fn blends_drop_static_joints() {
        let mut b = SoaPose::from_transforms(&[Transform::IDENTITY; 10]);
        let _ = b.blocks_for(7);
        let c = b.clone();
        lerp_soa::<false>(&mut b, None, &c, 0.5);
        assert_eq!(b.statics, 0);
        let _ = b.blocks_for(7);
        normalise_rotations_soa(&mut b);
        assert_eq!(b.statics, 0);
    }

    proptest! {
        /// The structure-of-arrays blend is the slice blend: the same bits with up to eight
        /// inputs for poses of eight joints or more (and on the portable path), within 1e-6
        /// for shorter ones (which the slice blend takes one joint at a time with four-wide
        /// dot products) and with nine inputs (which it divides by the weights' sum per
        /// joint); the rest pose where no weight is positive. Weights up to `f32::MAX`,
        /// infinite ones and sums that overflow give finite poses both ways.
        #[test]
        fn soa_blend_is_the_slice_blend((poses, weights) in inputs()) {
            let n = poses[0].len();
            let rest: Vec<Transform> = (0..n)
                .map(|j| Transform::new(Vec3::splat(j as f32), Quat::IDENTITY, Vec3::ONE))
                .collect();
            let slices: Vec<BlendInput> = poses
                .iter()
                .zip(&weights)
                .map(|(p, &w)| BlendInput { pose: p, weight: w, mask: None })
                .collect();
            let mut want = vec![Transform::IDENTITY; n];
            blend(&slices, &rest, &mut want).unwrap();

            let soa: Vec<SoaPose> = poses.iter().map(|p| SoaPose::from_transforms(p)).collect();
            let inputs: Vec<SoaBlendInput> = soa
                .iter()
                .zip(&weights)
                .map(|(p, &w)| SoaBlendInput { pose: p, weight: w })
                .collect();
            let mut out = SoaPose::identity(n);
            blend_soa(&inputs, &SoaPose::from_transforms(&rest), &mut out).unwrap();
            let mut got = vec![Transform::IDENTITY; n];
            out.write_to(&mut got).unwrap();

            let exact = poses.len() <= 8
                && (n >= 8 || cfg!(feature = "scalar") || !cfg!(target_arch = "x86_64"));
            for (g, w) in got.iter().zip(&want) {
                // Large, infinite and overflowing weights still give finite unit rotations.
                prop_assert!(g.translation.is_finite() && g.scale.is_finite(), "{g:?}");
                prop_assert!((g.rotation.length() - 1.0).abs() < 1e-5, "{g:?}");
                prop_assert!(w.translation.is_finite() && w.scale.is_finite(), "{w:?}");
                if exact {
                    prop_assert_eq!(g, w);
                } else {
                    let d = Vec4::from(g.rotation) - Vec4::from(w.rotation);
                    prop_assert!(d.abs().max_element() <= 1e-6, "{g:?} {w:?}");
                    prop_assert!((g.translation - w.translation).abs().max_element() <= 1e-5);
                    prop_assert!((g.scale - w.scale).abs().max_element() <= 1e-5);
                }
            }
            if !weights.iter().any(|&w| w > 0.0) {
                prop_assert_eq!(&got, &rest);
            }
            // Written as rows on the way out (the animator's layers): the same bits.
            let mut rows = vec![Transform::IDENTITY; n];
            blend_soa_to_rows(&inputs, &rest, &mut rows).unwrap();
            prop_assert_eq!(&rows, &got);
        }

        /// `blend_soa_to_rows` writes as many joints as its output has (a shorter output than
        /// the inputs, the last block partial) and nothing past them.
        #[test]
        fn soa_blend_to_rows_writes_only_its_joints(n in 1usize..20, extra in 0usize..9) {
            let a = SoaPose::from_transforms(&vec![Transform::IDENTITY; n + extra]);
            let x = Transform::new(Vec3::X, Quat::IDENTITY, Vec3::ONE);
            let b = SoaPose::from_transforms(&vec![x; n + extra]);
            let inputs = [
                SoaBlendInput { pose: &a, weight: 1.0 },
                SoaBlendInput { pose: &b, weight: 1.0 },
            ];
            let marker = Transform::new(Vec3::splat(9.0), Quat::IDENTITY, Vec3::ONE);
            let rest = vec![Transform::IDENTITY; n];
            let mut out = vec![marker; n + 3];
            blend_soa_to_rows(&inputs, &rest, &mut out[..n]).unwrap();
            for t in &out[..n] {
                prop_assert!((t.translation - Vec3::new(0.5, 0.0, 0.0)).length() < 1e-6, "{t:?}");
            }
            prop_assert_eq!(&out[n..], &[marker; 3][..]);
            // Short inputs or rest: an error, nothing written.
            let short = SoaPose::identity(n - 1);
            let before = out.clone();
            let one = [SoaBlendInput { pose: &short, weight: 1.0 }];
            let e = blend_soa_to_rows(&one, &rest, &mut out[..n]);
            prop_assert!(matches!(e, Err(Error::Length { .. })), "{:?}", e);
            let e = blend_soa_to_rows(&inputs, &rest[..n - 1], &mut out[..n]);
            prop_assert!(matches!(e, Err(Error::Length { .. })), "{:?}", e);
            prop_assert_eq!(&out, &before);
        }

        /// Lanes and joints round-trip through the block form, and a copy into an existing
        /// pose gives the pose a constructor gives.
        #[test]
        fn transforms_round_trip(joints in proptest::collection::vec(transform(), 0..30)) {
            let pose = SoaPose::from_transforms(&joints);
            prop_assert_eq!(pose.blocks().len(), joints.len().div_ceil(8));
            let mut back = vec![Transform::IDENTITY; joints.len()];
            pose.write_to(&mut back).unwrap();
            prop_assert_eq!(&back, &joints);
            let mut copy = SoaPose::identity(joints.len());
            copy.copy_from(&joints).unwrap();
            prop_assert_eq!(&copy, &pose);
            for (j, t) in joints.iter().enumerate() {
                prop_assert_eq!(pose.get(j), *t);
            }
        }
    }

    #[test]
    fn short_inputs_are_errors() {
        let a = SoaPose::identity(9);
        let mut out = SoaPose::identity(10);
        let e = blend_soa(
            &[SoaBlendInput {
                pose: &a,
                weight: 1.0,
            }],
            &a,
            &mut out,
        );
        assert!(
            matches!(
                e,
                Err(Error::Length {
                    expected: 10,
                    got: 9,
                    ..
                })
            ),
            "{e:?}"
        );
        assert_eq!(out, SoaPose::identity(10), "nothing written");
        assert!(a.write_to(&mut [Transform::IDENTITY; 8]).is_err());
        assert!(out.copy_from(&[Transform::IDENTITY; 9]).is_err());
    }
}
