//! The pose in blocks: where one layer makes the whole pose (the first enabled layer
//! playing, override at full weight without a mask, nothing above it playing, no inertial
//! transition, no root motion and no modifiers) and its slots are clips that sample into
//! blocks, blend spaces of such clips or blend trees of them (trees of blends: 1D and 2D
//! spaces, lerps), an update samples and blends them into blocks of eight joints
//! ([`SoaPose`]) and stops there: no rows are made. [`Animator::local_to_model`] and
//! [`Animator::update_model`] read those blocks as they are ([`crate::local_to_model_soa`]),
//! and [`Animator::pose_soa`] hands them out; [`Animator::pose`] writes rows from them the
//! first time it is called after such an update (the same bits as the rows the update would
//! have made: the blend and the samples are the same, only where they are written differs).
//!
//! ```text
//! evaluate ─▶ layer.soa[next] (blocks) ─┬─▶ local_to_model / update_model (no transposes)
//!                                        ├─▶ pose_soa
//!                                        └─▶ pose(): rows written once, on first call
//! ```
//!
//! Against the rows path this saves the transposes from blocks to rows (on CesiumMan, a
//! cross-fade: about 340 of 6,300 instructions of an update with local-to-model and
//! palette; a single clip: about 360 of 4,350). A layer keeps its last two block outputs, so an
//! inertial transition started after such updates still finds the two poses before the
//! switch: they are written into the layer's rows outputs then ([`Layer::rows_for_capture`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use glam::Mat4;

use super::layer::Layer;
use super::Animator;
use crate::{Error, Skin, SoaPose, Transform};

/// Where the last update's pose is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// In [`Animator::pose`]'s own buffer (`Animator::pose` the field).
    Own,
    /// In a layer's rows output: (layer, output).
    Output(usize, usize),
    /// In a layer's newer block output (`layers[i].soa[soa_cur]`).
    Blocks(usize),
}

/// Rows written from the blocks on demand, at most once per update, by `&self` (so that
/// [`Animator::pose`] keeps its signature and the animator stays `Sync`): a `OnceLock`
/// holds them until the next update takes them back as the spare buffer (no allocation
/// after the first).
///
/// It also remembers whether [`Animator::pose`] was called since the last update: an
/// animator whose caller reads rows makes rows (as it would without blocks: writing rows
/// from blocks afterwards costs more than making them during the blend), one whose caller
/// reads blocks or model matrices ([`Animator::local_to_model`], [`Animator::update_model`])
/// makes blocks.
#[derive(Debug, Default)]
pub(super) struct LazyRows {
    rows: OnceLock<Vec<Transform>>,
    spare: Mutex<Vec<Transform>>,
    read: AtomicBool,
    /// The rows' room made up front: the skeleton's joints, or 0 for a lean animator.
    joints: usize,
}

impl Clone for LazyRows {
    /// Empty but for whether rows were read, with a buffer of its own: a clone writes its
    /// own rows from its own blocks when asked.
    fn clone(&self) -> Self {
        LazyRows {
            read: AtomicBool::new(self.read.load(Ordering::Relaxed)),
            ..LazyRows::new(self.joints)
        }
    }
}

impl LazyRows {
    /// For a skeleton of `joints`: the buffer made now, so that rows are never allocated
    /// during a frame.
    pub(super) fn new(joints: usize) -> Self {
        LazyRows {
            spare: Mutex::new(Vec::with_capacity(joints)),
            joints,
            ..LazyRows::default()
        }
    }

    /// Forgets the rows (the blocks are about to change), keeping their buffer; returns
    /// whether [`Animator::pose`] was called since the last reset.
    pub(super) fn reset(&mut self) -> bool {
        if let Some(rows) = self.rows.take() {
            *self.spare.get_mut().unwrap_or_else(|e| e.into_inner()) = rows;
        }
        std::mem::take(self.read.get_mut())
    }

    /// [`Animator::pose`] was called.
    #[inline(always)]
    pub(super) fn note_read(&self) {
        self.read.store(true, Ordering::Relaxed);
    }

    /// The rows of `blocks`, written on the first call after [`LazyRows::reset`].
    pub(super) fn get(&self, blocks: &SoaPose) -> &[Transform] {
        self.rows.get_or_init(|| {
            let mut rows =
                std::mem::take(&mut *self.spare.lock().unwrap_or_else(|e| e.into_inner()));
            rows.resize(blocks.len(), Transform::IDENTITY);
            let _ = blocks.write_to(&mut rows);
            rows
        })
    }
}

impl Layer {
    /// Makes the rows outputs and scratch poses (copies of `rest`) where a lean animator
    /// ([`Animator::new_lean`]) has not made them yet: before a path in rows writes or
    /// reads them.
    #[inline]
    pub(super) fn ensure_rows(&mut self, rest: &[Transform]) {
        if self.outputs[0].len() != rest.len() {
            self.make_rows(rest);
        }
    }

    #[cold]
    fn make_rows(&mut self, rest: &[Transform]) {
        for p in self.outputs.iter_mut().chain(self.scratch.iter_mut()) {
            p.0.clear();
            p.0.extend_from_slice(rest);
        }
    }

    /// The newer block output.
    pub(super) fn newest_blocks(&self) -> &SoaPose {
        let soa = self.soa.as_deref().expect("a layer with block outputs");
        &soa[self.soa_cur]
    }

    /// Writes the last two outputs that went to blocks into their places among the rows
    /// outputs (`outputs[cur]` the newest, `outputs[(cur + 2) % 3]` the one before), so that
    /// an inertial transition captures them from rows.
    pub(super) fn rows_for_capture(&mut self, rest: &[Transform]) {
        self.ensure_rows(rest);
        let (Some(soa), mask) = (self.soa.as_deref(), self.in_blocks) else {
            return;
        };
        let prev = self.cur;
        let prev2 = (self.cur + 2) % 3;
        // The newest block output is the newest output if bit 0 is set, else the one before.
        let mut at = self.soa_cur;
        if mask & 1 != 0 {
            let _ = soa[at].write_to(&mut self.outputs[prev]);
            at ^= 1;
        }
        if mask & 2 != 0 {
            let _ = soa[at].write_to(&mut self.outputs[prev2]);
        }
        self.in_blocks = 0;
    }
}

impl Animator {
    /// The pose of the last update in blocks of eight joints, where the update left it
    /// there; `None` where it is in rows only ([`Animator::pose`]). The same transforms as
    /// [`Animator::pose`], bit for bit.
    ///
    /// An update leaves the pose in blocks when all of these hold: the first enabled layer
    /// that plays is an override layer at full weight (its slots' weights summing to 1 or
    /// more) without a mask, and no layer above it plays; its slots are clips that sample
    /// into blocks (keyed clips with LINEAR tracks on a CPU with AVX: not compressed clips,
    /// not clips whose tracks are all STEP or CUBICSPLINE, not the `scalar` build), blend
    /// spaces whose two clips around the parameter do, or blend trees whose clips do and
    /// whose nodes are blends (1D and 2D spaces, lerps: not additive or layered nodes); no
    /// inertial transition runs on it; no root motion and no
    /// modifiers are set; the skeleton has eight joints or more; and [`Animator::pose`] was
    /// not called since the update before (a caller that reads rows gets rows made by the
    /// update, and `None` here).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::{*, animator::*};
    /// # use glam::{Mat4, Vec3};
    /// # let skeleton = Arc::new(RawSkeleton { joints: (0..10).map(|i| RawJoint { name: format!("j{i}"),
    /// #     parent: (i > 0).then(|| i - 1), rest: Transform::IDENTITY }).collect(), ..Default::default() }.build().unwrap());
    /// # let clip = Arc::new(RawClip { name: "walk".into(), start: 0.0, duration: 1.0,
    /// #     channels: vec![RawChannel { joint: "j3".into(), target: Target::Translation,
    /// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
    /// #     values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::X]) }] }.build(&skeleton).unwrap());
    /// let mut animator = Animator::new(skeleton.clone());
    /// animator.play(0, clip, PlayOptions::default())?;
    /// animator.update(0.25);
    /// if let Some(blocks) = animator.pose_soa() {
    ///     // As the rows are (written from the blocks on this first call).
    ///     assert_eq!(blocks.get(3), animator.pose()[3]);
    /// }
    /// let mut model = vec![Mat4::IDENTITY; skeleton.len()];
    /// animator.local_to_model(&mut model)?; // from the blocks where they hold the pose
    /// assert!((model[9].w_axis.x - 0.25).abs() < 1e-6);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    pub fn pose_soa(&self) -> Option<&SoaPose> {
        match self.held {
            Held::Blocks(li) => Some(self.layers[li].newest_blocks()),
            _ => None,
        }
    }

    /// The model matrices of the last update's pose ([`Animator::pose`], modifiers applied)
    /// into `model`: from the blocks where the update left the pose in blocks
    /// ([`Animator::pose_soa`]; no rows are made), else from the rows. The same bits as
    /// [`crate::local_to_model`] on [`Animator::pose`]; the fastest way from an update to
    /// model matrices in a buffer of the caller's (a crowd's, a renderer's).
    ///
    /// # Errors
    /// [`Error::Length`] if `model` is shorter than the skeleton; nothing is written.
    pub fn local_to_model(&self, model: &mut [Mat4]) -> Result<(), Error> {
        match self.held {
            Held::Blocks(li) => {
                crate::local_to_model_soa(&self.skeleton, self.layers[li].newest_blocks(), 0, model)
            }
            // Not through `pose`, which would ask the next update for rows.
            held => {
                let own = super::own_rows(&self.pose, &self.skeleton);
                let pose = super::held_pose(&self.layers, own, held, &self.lazy);
                crate::local_to_model(&self.skeleton, pose, 0, model)
            }
        }
    }

    /// The skinning palette of the last update's pose into `palette`, without model
    /// matrices of the caller's: [`Animator::local_to_model`] into a buffer the calling
    /// thread keeps for every animator it serves (grown to the largest skeleton it has
    /// seen, so no allocation after the first call at that size), then
    /// [`crate::skinning_palette`] from there. The same bits as those two calls.
    ///
    /// For crowds whose characters need their palette and not their model matrices (no
    /// attachments): each update then writes one array of
    /// matrices per character instead of two, and a crowd's time is mostly the memory its
    /// characters bring in and write out (measured in the README's "Speed").
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use skelett::{*, animator::*};
    /// # use glam::{Mat4, Vec3};
    /// # let skeleton = Arc::new(RawSkeleton { joints: (0..10).map(|i| RawJoint { name: format!("j{i}"),
    /// #     parent: (i > 0).then(|| i - 1), rest: Transform::IDENTITY }).collect(), ..Default::default() }.build().unwrap());
    /// # let clip = Arc::new(RawClip { name: "walk".into(), start: 0.0, duration: 1.0,
    /// #     channels: vec![RawChannel { joint: "j3".into(), target: Target::Translation,
    /// #     interpolation: Interpolation::Linear, times: vec![0.0, 1.0],
    /// #     values: RawValues::Vec3(vec![Vec3::ZERO, Vec3::X]) }] }.build(&skeleton).unwrap());
    /// // A skin on joints 9 and 3 with identity inverse bind matrices.
    /// let skin = Skin::new("body", vec![9, 3], vec![Mat4::IDENTITY; 2])?;
    /// let mut animator = Animator::new(skeleton.clone());
    /// animator.play(0, clip, PlayOptions::default())?;
    /// animator.update(0.25);
    /// let mut palette = vec![Mat4::IDENTITY; skin.len()];
    /// animator.skinning_palette(&skin, &mut palette)?;
    /// assert!((palette[0].w_axis.x - 0.25).abs() < 1e-6);
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Length`] if `palette` is shorter than the skin, or the skin uses a joint the
    /// skeleton lacks; nothing is written.
    pub fn skinning_palette(&self, skin: &Skin, palette: &mut [Mat4]) -> Result<(), Error> {
        let n = self.skeleton.len();
        MODEL_SCRATCH.with_borrow_mut(|model| {
            if model.len() < n {
                model.resize(n, Mat4::IDENTITY);
            }
            let model = &mut model[..n];
            // On an error only the thread's matrices may have been written.
            self.local_to_model(model)?;
            crate::skinning_palette(skin, model, palette)
        })
    }
}

thread_local! {
    /// The model matrices [`Animator::skinning_palette`] computes on their way to the
    /// palette: the calling thread's, for every animator it serves.
    static MODEL_SCRATCH: std::cell::RefCell<Vec<Mat4>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use glam::{Mat4, Quat};

    use super::super::held_pose;
    use super::super::test_rig::{bits, rig};
    use crate::animator::{Animator, BlendMode, Curve, PlayOptions, RootMotionConfig};
    use crate::{Interpolation, RawChannel, RawClip, RawValues, Target, Transform};

    /// The pose without asking for rows (which would turn the next update to rows).
    fn quiet_pose(a: &Animator) -> Vec<Transform> {
        held_pose(
            &a.layers,
            super::super::own_rows(&a.pose, &a.skeleton),
            a.held,
            &a.lazy,
        )
        .to_vec()
    }

    fn model_bits(m: &[Mat4]) -> Vec<u32> {
        m.iter()
            .flat_map(|m| m.to_cols_array())
            .map(f32::to_bits)
            .collect()
    }

    /// An animator reading blocks (`local_to_model`, `pose_soa`) and one reading rows
    /// (`pose` every frame, so that its updates make rows), driven alike through cross-fades,
    /// inertial switches (their capture after updates in blocks, in rows, and mixed), a
    /// layer added above and removed, a layer disabled, root motion, a clone and a frame
    /// whose rows are read: the same bits every frame.
    #[test]
    fn blocks_and_rows_give_the_same_bits() {
        let (skeleton, [ca, cb]) = rig(11);
        let blocks_possible = crate::play::sampling::writes_blocks(&ca);
        let mut a = Animator::new(skeleton.clone());
        let mut b = Animator::new(skeleton.clone());
        let _ = b.pose(); // rows from the first update on
        let (mut ma, mut mb) = (vec![Mat4::IDENTITY; 11], vec![Mat4::IDENTITY; 11]);
        let mut in_blocks = 0;
        let po = PlayOptions::default();
        for frame in 0..240 {
            for x in [&mut a, &mut b] {
                match frame {
                    0 => x.play(0, ca.clone(), po).unwrap(),
                    20 => x
                        .crossfade(0, cb.clone(), 0.3, Curve::SmoothStep, po)
                        .unwrap(),
                    // Both outputs before the switch made in blocks.
                    50 => x.inertialize(0, ca.clone(), 0.2, po).unwrap(),
                    // A layer above plays for two updates and stops: while layer 0 makes
                    // the pose in blocks, the empty layer above is marked as not playing,
                    // so the switch on it has no old pose to decay from, as in rows.
                    60 => {
                        let l = x.add_layer(BlendMode::Override, 0.5, None).unwrap();
                        x.play(l, cb.clone(), po).unwrap();
                    }
                    62 => x.stop(1).unwrap(),
                    66 => x.inertialize(1, ca.clone(), 0.3, po).unwrap(),
                    70 => x.remove_layer(1).unwrap(),
                    80 => {
                        let l = x.add_layer(BlendMode::Additive, 0.5, None).unwrap();
                        x.play(l, cb.clone(), po).unwrap();
                    }
                    90 => x.remove_layer(1).unwrap(),
                    95 => x.set_layer_enabled(0, false).unwrap(),
                    98 => x.set_layer_enabled(0, true).unwrap(),
                    110 => x.crossfade(0, cb.clone(), 0.5, Curve::Linear, po).unwrap(),
                    // A switch two updates after one in rows (frame 131 below): the newest
                    // output in rows, the one before in blocks.
                    132 => x.inertialize(0, ca.clone(), 0.25, po).unwrap(),
                    // A switch right after the update in rows: the newest in rows, the one
                    // before in blocks.
                    170 => x
                        .set_root_motion(Some(RootMotionConfig {
                            joint: 0,
                            ..Default::default()
                        }))
                        .unwrap(),
                    175 => x.set_root_motion(None).unwrap(),
                    176 => x.inertialize(0, cb.clone(), 0.3, po).unwrap(),
                    _ => {}
                }
            }
            if frame == 150 {
                a = a.clone();
            }
            a.update(1.0 / 30.0);
            b.update(1.0 / 30.0);
            let want = b.pose().to_vec();
            if frame == 130 {
                // Rows asked for once: the next update makes rows, the one after blocks.
                assert_eq!(bits(a.pose()), bits(&want), "frame {frame}");
            }
            if let Some(soa) = a.pose_soa() {
                in_blocks += 1;
                let rows: Vec<Transform> = (0..soa.len()).map(|j| soa.get(j)).collect();
                assert_eq!(bits(&rows), bits(&want), "frame {frame}: blocks");
            }
            assert_eq!(bits(&quiet_pose(&a)), bits(&want), "frame {frame}");
            a.local_to_model(&mut ma).unwrap();
            crate::local_to_model(&skeleton, &want, 0, &mut mb).unwrap();
            assert_eq!(model_bits(&ma), model_bits(&mb), "frame {frame}: model");
            // The animator's own model matrices too.
            a.update_model();
            assert_eq!(model_bits(a.model()), model_bits(&mb), "frame {frame}");
            if frame == 131 {
                assert!(
                    a.pose_soa().is_none(),
                    "rows were read: this update made rows"
                );
            }
        }
        if blocks_possible {
            // Every frame but the inertial switches', the added layer's, the disabled
            // layer's, root motion's and the one after rows were read.
            assert!(in_blocks > 120, "{in_blocks} frames in blocks");
        } else {
            assert_eq!(in_blocks, 0);
        }
        assert!(
            b.pose_soa().is_none(),
            "an animator whose rows are read makes rows"
        );
    }

    /// Rows read after an update in blocks are written once, into a buffer the animator
    /// keeps: the same slice on a second call, and no allocation from the second time on.
    #[test]
    fn rows_from_blocks_are_written_once() {
        let (skeleton, [ca, _]) = rig(9);
        let mut a = Animator::new(skeleton);
        a.play(0, ca, PlayOptions::default()).unwrap();
        a.update(0.1);
        if a.pose_soa().is_none() {
            return; // no AVX (or the `scalar` build): no blocks
        }
        let first = a.pose().as_ptr();
        assert_eq!(a.pose().as_ptr(), first, "the same rows");
        let rows = a.pose().to_vec();
        let soa = a.pose_soa().unwrap();
        assert_eq!(
            bits(&rows),
            bits(&(0..9).map(|j| soa.get(j)).collect::<Vec<_>>())
        );
        // The rows were read: the next update makes rows, the one after (not read) blocks.
        a.update(0.1);
        assert!(a.pose_soa().is_none());
        a.update(0.1);
        assert!(a.pose_soa().is_some());
        // A clone writes its own rows.
        let c = a.clone();
        assert_eq!(bits(c.pose()), bits(a.pose()));
        assert_ne!(c.pose().as_ptr(), a.pose().as_ptr());
    }

    /// Threads reading the rows of one animator at once all see the same rows.
    #[test]
    fn rows_from_blocks_read_from_threads() {
        let (skeleton, [ca, cb]) = rig(16);
        let mut a = Animator::new(skeleton);
        a.play(0, ca, PlayOptions::default()).unwrap();
        a.crossfade(0, cb, 1.0, Curve::Linear, PlayOptions::default())
            .unwrap();
        for _ in 0..5 {
            a.update(0.07);
            let want = quiet_pose(&a);
            std::thread::scope(|s| {
                let hs: Vec<_> = (0..4).map(|_| s.spawn(|| bits(a.pose()))).collect();
                for h in hs {
                    assert_eq!(h.join().unwrap(), bits(&want));
                }
            });
        }
    }

    /// Morph weights of an animator whose pose stays in blocks are the rows way's, through a
    /// cross-fade and an inertial switch (the weights are blended as in rows either way).
    #[test]
    fn morph_weights_in_blocks_are_the_rows_weights() {
        let (skeleton, [ca, cb]) = rig(10);
        let skeleton = Arc::new(
            (*skeleton)
                .clone()
                .with_morph_channels(vec![
                    crate::MorphChannel {
                        name: "smile".into(),
                        rest: 0.1,
                    },
                    crate::MorphChannel {
                        name: "blink".into(),
                        rest: 0.0,
                    },
                ])
                .unwrap(),
        );
        let with_weights = |c: &crate::Clip, v: f32| {
            let raw = RawClip {
                name: c.name().into(),
                start: 0.0,
                duration: 1.0,
                channels: (0..10)
                    .map(|i| RawChannel {
                        joint: format!("j{i}"),
                        target: Target::Rotation,
                        interpolation: Interpolation::Linear,
                        times: vec![0.0, 1.0],
                        values: RawValues::Quat(vec![Quat::IDENTITY, Quat::from_rotation_y(v)]),
                    })
                    .collect(),
            };
            let track = |channel: &str, a: f32, b: f32| crate::RawMorphTrack {
                channel: channel.into(),
                interpolation: Interpolation::Linear,
                times: vec![0.0, 0.5, 1.0],
                values: vec![a, b, a],
            };
            Arc::new(
                raw.build(&skeleton)
                    .unwrap()
                    .with_morph_tracks(
                        &skeleton,
                        vec![track("smile", 0.0, v), track("blink", v, 0.2)],
                    )
                    .unwrap(),
            )
        };
        let (ma, mb) = (with_weights(&ca, 0.9), with_weights(&cb, 0.3));
        let mut a = Animator::new(skeleton.clone());
        let mut b = Animator::new(skeleton.clone());
        let _ = b.pose();
        let po = PlayOptions::default();
        let mut in_blocks = 0;
        for frame in 0..90 {
            for x in [&mut a, &mut b] {
                match frame {
                    0 => x.play(0, ma.clone(), po).unwrap(),
                    20 => x.crossfade(0, mb.clone(), 0.4, Curve::Linear, po).unwrap(),
                    50 => x.inertialize(0, ma.clone(), 0.3, po).unwrap(),
                    _ => {}
                }
            }
            a.update(1.0 / 30.0);
            b.update(1.0 / 30.0);
            let _ = b.pose();
            in_blocks += usize::from(a.pose_soa().is_some());
            let w: Vec<u32> = a.morph_weights().iter().map(|w| w.to_bits()).collect();
            let want: Vec<u32> = b.morph_weights().iter().map(|w| w.to_bits()).collect();
            assert_eq!(w, want, "frame {frame}");
            assert_eq!(bits(&quiet_pose(&a)), bits(b.pose()), "frame {frame}");
        }
        if crate::play::sampling::writes_blocks(&ma) {
            assert!(in_blocks > 60, "{in_blocks} of 90 in blocks");
        }
    }

    /// Skeletons under eight joints have no blocks.
    #[test]
    fn short_skeletons_stay_in_rows() {
        let (skeleton, [ca, _]) = rig(5);
        let mut a = Animator::new(skeleton);
        a.play(0, ca, PlayOptions::default()).unwrap();
        a.update(0.1);
        assert!(a.pose_soa().is_none());
        assert!(a.layers[0].soa.is_none());
    }

    /// `skinning_palette` gives the bits of `local_to_model` then the free
    /// `skinning_palette`, from blocks and from rows, on skeletons of two sizes served by one
    /// thread (its buffer grows, then serves the smaller one), and refuses a short palette
    /// or a skin on joints the skeleton lacks without writing.
    #[test]
    fn palette_from_the_animator_is_the_two_calls() {
        for n in [11, 30, 5] {
            let (skeleton, [ca, cb]) = rig(n);
            // Every other joint, backwards, with inverse bind matrices of their own.
            let joints: Vec<u16> = (0..n as u16).rev().step_by(2).collect();
            let ibm = joints
                .iter()
                .map(|&j| Mat4::from_translation(glam::Vec3::new(0.1 * j as f32, -1.0, 0.5)))
                .collect();
            let skin = crate::Skin::new("s", joints, ibm).unwrap();
            let mut a = Animator::new(skeleton.clone());
            let po = PlayOptions::default();
            a.play(0, ca.clone(), po).unwrap();
            let mut model = vec![Mat4::IDENTITY; n];
            let (mut want, mut got) = (vec![Mat4::ZERO; skin.len()], vec![Mat4::ZERO; skin.len()]);
            for frame in 0..40 {
                if frame == 10 {
                    a.crossfade(0, cb.clone(), 0.3, Curve::SmoothStep, po)
                        .unwrap();
                }
                if frame == 25 {
                    let _ = a.pose(); // rows for the next update
                }
                a.update(1.0 / 30.0);
                a.local_to_model(&mut model).unwrap();
                crate::skinning_palette(&skin, &model, &mut want).unwrap();
                a.skinning_palette(&skin, &mut got).unwrap();
                assert_eq!(
                    model_bits(&got),
                    model_bits(&want),
                    "{n} joints, frame {frame}"
                );
            }
            let mut short = vec![Mat4::ZERO; skin.len() - 1];
            assert!(matches!(
                a.skinning_palette(&skin, &mut short),
                Err(crate::Error::Length { .. })
            ));
            assert!(short.iter().all(|m| *m == Mat4::ZERO));
            // A skin on a joint past the skeleton's end.
            let wide = crate::Skin::new("w", vec![n as u16], vec![Mat4::IDENTITY]).unwrap();
            let mut one = vec![Mat4::ZERO];
            assert!(matches!(
                a.skinning_palette(&wide, &mut one),
                Err(crate::Error::Length { .. })
            ));
            assert_eq!(one[0], Mat4::ZERO);
        }
    }

    /// A lean animator (`Animator::new_lean`, its rows, identity pose, model matrices,
    /// inertial offsets and event buffers made when first needed) gives what a full one
    /// gives, bit for bit, through the paths that need them: cross-fades in blocks (three
    /// slots at once), a queued clip, rows read (the next update in rows), inertial switches from blocks, a masked layer above,
    /// an additive layer, a fade from nothing, a disabled layer, root motion, a modifier,
    /// events and notifications, a blend space, a compressed clip, and clones made before
    /// and after it made them.
    #[test]
    fn lean_animators_match_full_ones() {
        for n in [11, 5] {
            let (skeleton, [ca, cb]) = rig(n);
            let event = |t: f32| crate::ClipEvent {
                time: t,
                name: format!("e{t}"),
                payload: None,
            };
            let cb = Arc::new(
                (*cb)
                    .clone()
                    .with_events(vec![event(0.25), event(0.75)])
                    .unwrap(),
            );
            let mask = crate::pose::JointMask::from_weights(
                (0..n).map(|j| if j % 2 == 0 { 1.0 } else { 0.3 }).collect(),
            );
            let (mut lean, mut full) = (
                Animator::new_lean(skeleton.clone()),
                Animator::new(skeleton.clone()),
            );
            let po = PlayOptions::default();
            let (mut ml, mut mf) = (vec![Mat4::IDENTITY; n], vec![Mat4::IDENTITY; n]);
            // A compressed clip (sampled as rows, then copied into blocks).
            let small = Arc::new(
                crate::compress::compress(&skeleton, &ca, &Default::default())
                    .unwrap()
                    .0,
            );
            let space =
                || crate::animator::BlendSpace1D::new(vec![(0.0, ca.clone()), (1.0, cb.clone())]);
            let mut fired = 0;
            // Before any update: the rest pose, though the lean one has no rows yet (read on
            // clones: reading rows makes the next update make rows).
            let fresh = lean.clone();
            assert!(fresh.pose.is_empty());
            assert_eq!(bits(fresh.pose()), bits(full.clone().pose()));
            assert_eq!(bits(fresh.pose()), bits(skeleton.rest_pose()));
            for frame in 0..320 {
                if frame == 15 || frame == 230 {
                    // Cloned before any path in rows made the lean one's buffers, and after.
                    lean = lean.clone();
                }
                for x in [&mut lean, &mut full] {
                    match frame {
                        0 => x.play(0, ca.clone(), po).unwrap(),
                        20 => x
                            .crossfade(0, cb.clone(), 0.3, Curve::SmoothStep, po)
                            .unwrap(),
                        // A third slot while the cross-fade runs (a lean layer keeps room
                        // for two), then a queued clip (a lean layer's queue starts empty).
                        24 => x.crossfade(0, ca.clone(), 0.2, Curve::Linear, po).unwrap(),
                        28 => x
                            .queue(
                                0,
                                cb.clone(),
                                crate::animator::When::At(0.1),
                                crate::animator::Transition::Crossfade(0.1, Curve::Linear),
                                po,
                            )
                            .unwrap(),
                        40 => x.inertialize(0, ca.clone(), 0.2, po).unwrap(),
                        60 => {
                            let l = x
                                .add_layer(BlendMode::Override, 0.7, Some(mask.clone()))
                                .unwrap();
                            // A fade from nothing on the new layer.
                            x.crossfade(l, cb.clone(), 0.4, Curve::Linear, po).unwrap();
                        }
                        80 => x.remove_layer(1).unwrap(),
                        90 => {
                            let l = x.add_layer(BlendMode::Additive, 0.5, None).unwrap();
                            x.play(l, cb.clone(), po).unwrap();
                        }
                        100 => x.remove_layer(1).unwrap(),
                        105 => x.set_layer_enabled(0, false).unwrap(),
                        108 => x.set_layer_enabled(0, true).unwrap(),
                        120 => x.set_notifications(true),
                        130 => x
                            .set_root_motion(Some(RootMotionConfig {
                                joint: 0,
                                ..Default::default()
                            }))
                            .unwrap(),
                        140 => x.set_root_motion(None).unwrap(),
                        150 => {
                            let chain =
                                crate::ik::TwoBoneChain::new(&x.skeleton, [0, 1, 2]).unwrap();
                            let ik = crate::ik::TwoBone::new(
                                glam::Vec3::new(0.5, 1.5, 0.2),
                                glam::Vec3::Z,
                            );
                            x.add_modifier(crate::animator::Modifier::TwoBone { chain, ik }, 1.0)
                                .unwrap();
                        }
                        190 => x.inertialize(0, cb.clone(), 0.25, po).unwrap(),
                        210 => x
                            .play_blend_space(0, space(), crate::animator::Transition::Immediate)
                            .unwrap(),
                        212..=240 => x.set_parameter(0, (frame - 212) as f32 / 28.0).unwrap(),
                        250 => x
                            .crossfade(0, small.clone(), 0.3, Curve::Linear, po)
                            .unwrap(),
                        _ => {}
                    }
                }
                let el: Vec<(String, u32, usize)> = lean
                    .update(1.0 / 30.0)
                    .events
                    .iter()
                    .map(|e| (e.name().to_owned(), e.at.to_bits(), e.layer))
                    .collect();
                let ef: Vec<(String, u32, usize)> = full
                    .update(1.0 / 30.0)
                    .events
                    .iter()
                    .map(|e| (e.name().to_owned(), e.at.to_bits(), e.layer))
                    .collect();
                assert_eq!(el, ef, "{n} joints, frame {frame}: events");
                fired += el.len();
                // Nothing made before a path needed it; rows once they were read.
                let rows_made = !lean.layers[0].outputs[0].is_empty();
                if frame == 25 {
                    // Rows from the start where blocks are not possible (short skeletons,
                    // the `scalar` build).
                    let blocks = n >= crate::SOA_LANES && crate::play::sampling::writes_blocks(&ca);
                    assert_eq!(rows_made, !blocks, "{n} joints");
                    assert!(lean.model.is_empty() && lean.identity.is_empty());
                    assert!(lean.events.capacity() == 0 && full.events.capacity() >= 64);
                }
                if frame == 35 {
                    assert!(rows_made);
                }
                assert_eq!(
                    bits(&quiet_pose(&lean)),
                    bits(&quiet_pose(&full)),
                    "{n} joints, frame {frame}"
                );
                if (30..35).contains(&frame) || (170..175).contains(&frame) {
                    // Rows read: both make rows next.
                    assert_eq!(bits(lean.pose()), bits(full.pose()), "frame {frame}");
                }
                lean.local_to_model(&mut ml).unwrap();
                full.local_to_model(&mut mf).unwrap();
                assert_eq!(
                    model_bits(&ml),
                    model_bits(&mf),
                    "{n} joints, frame {frame}"
                );
                if frame >= 150 {
                    assert_eq!(model_bits(lean.model()), model_bits(full.model()));
                }
            }
            assert!(fired > 4, "{fired} events");
        }
    }
}
