//! A character made of skelett's stateless calls alone, in the shape of ozz-animation's
//! harness (`../shared/bench/ozz`): two clips sampled into structure-of-arrays poses through
//! a cache each, blended half and half, local-to-model, the palette. No animator: nothing
//! fades, syncs or fires events. Shared by `benches/animator.rs` and `skelett-io`'s
//! `cost_probe` example (each includes this file with `#[path]`).

use glam::Mat4;
use skelett::{
    blend_soa, crowd, local_to_model_soa, sample_soa, skinning_palette, Clip, SamplingCache,
    Skeleton, Skin, SoaBlendInput, SoaPose,
};

/// A character of stateless calls alone (no animator): two clips sampled into
/// structure-of-arrays poses through a cache each, blended half and half, local-to-model,
/// the palette; its times wrap as ozz's harness's ratios do.
pub struct Stateless {
    /// Each clip's local time, 0 to its duration.
    times: [f32; 2],
    caches: [SamplingCache; 2],
    /// The two samples and their blend.
    poses: [SoaPose; 3],
    model: Vec<Mat4>,
    pub palette: Vec<Mat4>,
}

/// What every [`Stateless`] character shares.
pub struct Shared<'a> {
    pub skeleton: &'a Skeleton,
    pub rest: SoaPose,
    pub clips: [&'a Clip; 2],
    pub skin: &'a Skin,
}

impl Stateless {
    /// At `phase` (0 to 1) of each clip; a second clip that is the first again starts half a
    /// cycle on, as ozz's harness plays CesiumMan's one clip.
    pub fn new(s: &Shared, phase: f32) -> Self {
        let [a, b] = s.clips;
        let offset = if std::ptr::eq(a, b) { 0.5 } else { 0.0 };
        Stateless {
            times: [
                phase * a.duration(),
                ((phase + offset) % 1.0) * b.duration(),
            ],
            caches: [SamplingCache::for_clip(a), SamplingCache::for_clip(b)],
            poses: std::array::from_fn(|_| SoaPose::rest(s.skeleton)),
            model: vec![Mat4::IDENTITY; s.skeleton.len()],
            palette: vec![Mat4::IDENTITY; s.skin.len()],
        }
    }

    pub fn update(&mut self, s: &Shared, dt: f32) {
        let [a, b, blended] = &mut self.poses;
        for (k, (clip, pose)) in s.clips.iter().zip([&mut *a, &mut *b]).enumerate() {
            let mut t = self.times[k] + dt;
            if t >= clip.duration() {
                t -= clip.duration();
            }
            self.times[k] = t;
            sample_soa(clip, clip.start() + t, &mut self.caches[k], pose).unwrap();
        }
        let inputs = [
            SoaBlendInput {
                pose: a,
                weight: 0.5,
            },
            SoaBlendInput {
                pose: b,
                weight: 0.5,
            },
        ];
        blend_soa(&inputs, &s.rest, blended).unwrap();
        local_to_model_soa(s.skeleton, blended, 0, &mut self.model).unwrap();
        skinning_palette(s.skin, &self.model, &mut self.palette).unwrap();
    }

    pub fn prefetch(&self) {
        for p in &self.poses {
            crowd::prefetch(p.blocks());
        }
        crowd::prefetch(&self.model);
        crowd::prefetch(&self.palette);
    }
}
