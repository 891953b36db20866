//! Footstep detection on the Fox's Walk and Run: every contact joint gets one touchdown per
//! cycle, placed where that joint is near the ground after coming down.

use skelett_testdata::data;

use glam::Mat4;
use skelett::{local_to_model, sample_uncached, Pose};

#[test]
fn fox_footsteps_are_touchdowns_once_per_cycle() {
    let fox = skelett_io::load(data("gltf/Fox.glb")).unwrap();
    let sk = &fox.skeleton;
    for name in ["Walk", "Run"] {
        let clip = fox.clip(name).unwrap();
        let events = skelett::contacts::footstep_events(sk, clip);
        let mut payloads: Vec<&str> = events
            .iter()
            .map(|e| e.payload.as_deref().unwrap())
            .collect();
        payloads.sort();
        // Four legs, each down once per cycle: hind feet by name, front paws ("Hand" joints).
        assert_eq!(
            payloads,
            ["left foot", "left hand", "right foot", "right hand"],
            "{name}"
        );
        let height = |joint: &str, t: f32| {
            let mut pose = Pose::rest(sk);
            let mut model = vec![Mat4::IDENTITY; sk.len()];
            let t = clip.start() + (t - clip.start()).rem_euclid(clip.duration());
            sample_uncached(clip, t, &mut pose).unwrap();
            local_to_model(sk, &pose, 0, &mut model).unwrap();
            let j = sk.find(joint).unwrap() as usize;
            (sk.root_transform() * model[j]).w_axis.y
        };
        for e in &events {
            let p = e.payload.as_deref().unwrap();
            let joint = match p {
                "left foot" => "b_LeftFoot02_018",
                "right foot" => "b_RightFoot02_022",
                "left hand" => "b_LeftHand_011",
                _ => "b_RightHand_08",
            };
            // The joint's range over a dense sampling of the cycle.
            let hs: Vec<f32> = (0..500)
                .map(|i| height(joint, clip.start() + clip.duration() * i as f32 / 500.0))
                .collect();
            let lo = hs.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = hs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let at = height(joint, e.time);
            let before = height(joint, e.time - clip.duration() * 0.08);
            assert!(
                at <= lo + 0.25 * (hi - lo),
                "{name} {p}: {at} at touchdown, range {lo}..{hi}"
            );
            assert!(
                before > at,
                "{name} {p}: comes down ({before} before, {at} at)"
            );
            assert_eq!(e.name, "footstep");
        }
    }
}
