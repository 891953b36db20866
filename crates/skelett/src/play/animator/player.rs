//! A player: one clip's playback position, speed and wrap mode, and the events it crosses.
//!
//! A player keeps its position on an *unwrapped* timeline (seconds since the clip's first
//! frame, growing past the end when looping, in f64 so hours of play stay exact); the clip
//! time is that position wrapped by the [`Wrap`] mode. Events are found on the unwrapped
//! timeline: an event at clip time `e` sits at every unwrapped position that maps to `e`
//! (`e + k·D` when looping, also `2D - e + 2k·D` when ping-ponging), and an advance from `a` to
//! `b` fires those in `(a, b]` (forward) or `[b, a)` (backward), in travel order. So each
//! crossing fires exactly once whatever the step, and a step spanning several loops fires
//! several times.

use std::sync::Arc;

use crate::{Clip, SamplingCache, Transform};

/// What happens at the ends of a clip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Wrap {
    /// Start over at the other end.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "loop"))]
    Loop,
    /// Stop at the end and hold its pose.
    #[cfg_attr(feature = "serde", serde(rename = "once"))]
    Once,
    /// Turn around at each end.
    #[cfg_attr(feature = "serde", serde(rename = "ping_pong"))]
    PingPong,
}

/// The most events one player reports per update; a step spanning more loops than that
/// reports the first ones (a guard against unbounded output on absurd steps).
pub const MAX_EVENTS_PER_UPDATE: usize = 1024;

/// Plays one clip.
#[derive(Clone, Debug)]
pub struct Player {
    pub(crate) clip: Arc<Clip>,
    pos: f64,
    pub(crate) speed: f32,
    pub(crate) wrap: Wrap,
    pub(crate) paused: bool,
    /// The next advance also fires events exactly at its start (a fresh start or a seek).
    fresh: bool,
    /// The whole cycles before the last sampled position: the quotient of its wrap
    /// ([`Player::sampled_time`]), tried first by the next sample.
    cycles: f64,
    pub(crate) cache: SamplingCache,
}

/// An event position found by [`Player::advance`]: (event index, clip time, travel distance
/// from the advance's start, direction of travel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Crossing {
    pub event: usize,
    pub distance: f64,
    pub backward: bool,
    pub kind: super::EventKind,
}

/// `pos.rem_euclid(d)`, bit for bit for every input, without `fmod`'s bit-by-bit loop where
/// `pos` is not negative and the quotient below 2^52 (every player's position in practice;
/// other inputs go to `f64::rem_euclid`): the floored quotient `q`, one less where the
/// division rounded up across an integer (rounding is monotonic, so it never rounds below
/// the true floor), and `pos - q d` in one fused multiply-add, exact because the remainder
/// of an integer quotient is representable. (`fmod`, from compiler-builtins, took about 5 %
/// of a 19-joint character's update.)
pub(crate) fn rem_euclid(pos: f64, d: f64) -> f64 {
    if (0.0..d).contains(&pos) {
        return pos;
    }
    let x = pos / d;
    if !(pos >= 0.0 && d > 0.0 && x < (1u64 << 52) as f64) {
        return pos.rem_euclid(d);
    }
    // `x` is in [0, 2^52) (a NaN fails the test above): its floor is its integer part,
    // which the two conversions give exactly (`f64::floor` is a library call without SSE4.1).
    let q = x as i64 as f64;
    let r = (-q).mul_add(d, pos);
    debug_assert!(r < d, "the quotient is never below the true floor");
    if r < 0.0 {
        (-(q - 1.0)).mul_add(d, pos)
    } else {
        r
    }
}

/// [`rem_euclid`]`(pos, d)` from the quotient `q` of an earlier call, kept in `q`: where
/// `pos` has a positive sign and `pos - q d` lies in `[0, d)`, `q` is the floored quotient
/// (one more or one less puts the exact difference below 0 or at or past `d`, where
/// rounding keeps it), and the fused multiply-add gives the exact remainder, as
/// `rem_euclid` does, so the same bits; elsewhere `rem_euclid` and its quotient. (Negative
/// positions and -0 go to `rem_euclid` every time: it may answer -0 there.) A player's next
/// position is almost always in the same cycle: one fused multiply-add instead of a
/// division on the way from the position to the sample.
#[inline(always)]
fn wrap_from(pos: f64, d: f64, q: &mut f64) -> f64 {
    let r = (-*q).mul_add(d, pos);
    if pos.is_sign_positive() && r >= 0.0 && r < d {
        return r;
    }
    let r = rem_euclid(pos, d);
    // Whole after `rem_euclid`'s exact subtraction; NaN or infinite inputs leave a quotient
    // that fails the test above next time too.
    *q = ((pos - r) / d).round();
    r
}

impl Player {
    /// A player at the clip's first frame, speed 1, looping.
    pub fn new(clip: Arc<Clip>) -> Self {
        let cache = SamplingCache::for_clip(&clip);
        Self {
            clip,
            pos: 0.0,
            speed: 1.0,
            wrap: Wrap::Loop,
            paused: false,
            fresh: true,
            cycles: 0.0,
            cache,
        }
    }

    /// The clip.
    pub fn clip(&self) -> &Arc<Clip> {
        &self.clip
    }

    fn duration(&self) -> f64 {
        self.clip.duration() as f64
    }

    /// Local time (0 at the first frame) at an unwrapped position.
    pub(crate) fn local_at(&self, pos: f64) -> f64 {
        let d = self.duration();
        if d <= 0.0 {
            return 0.0;
        }
        match self.wrap {
            Wrap::Loop => rem_euclid(pos, d),
            Wrap::Once => pos.clamp(0.0, d),
            Wrap::PingPong => {
                let m = rem_euclid(pos, 2.0 * d);
                if m <= d {
                    m
                } else {
                    2.0 * d - m
                }
            }
        }
    }

    /// [`Player::time`], the wrap's quotient tried from the last sample's (and kept for the
    /// next): one fused multiply-add instead of a division, the same bits.
    #[inline(always)]
    fn sampled_time(&mut self) -> f32 {
        let d = self.duration();
        let local = if d <= 0.0 {
            0.0
        } else {
            match self.wrap {
                Wrap::Loop => wrap_from(self.pos, d, &mut self.cycles),
                Wrap::Once => self.pos.clamp(0.0, d),
                Wrap::PingPong => {
                    let m = wrap_from(self.pos, 2.0 * d, &mut self.cycles);
                    if m <= d {
                        m
                    } else {
                        2.0 * d - m
                    }
                }
            }
        };
        self.clip.start() + local as f32
    }

    /// Time since the clip's first frame, 0 to the clip's duration.
    pub fn local_time(&self) -> f32 {
        self.local_at(self.pos) as f32
    }

    /// The time in the clip's own time base ([`Clip::start`] + local time).
    pub fn time(&self) -> f32 {
        self.clip.start() + self.local_time()
    }

    /// Position as a fraction of the clip, 0..=1.
    pub fn normalized_time(&self) -> f32 {
        let d = self.duration();
        if d <= 0.0 {
            0.0
        } else {
            (self.local_at(self.pos) / d) as f32
        }
    }

    /// The unwrapped position in seconds (grows past the end while looping).
    pub fn position(&self) -> f64 {
        self.pos
    }

    /// Playback speed (negative plays backwards).
    pub fn speed(&self) -> f32 {
        self.speed
    }

    /// The wrap mode.
    pub fn wrap(&self) -> Wrap {
        self.wrap
    }

    /// `true` for a [`Wrap::Once`] player that reached the end it is moving towards.
    pub fn finished(&self) -> bool {
        self.wrap == Wrap::Once
            && ((self.speed >= 0.0 && self.pos >= self.duration())
                || (self.speed < 0.0 && self.pos <= 0.0))
    }

    /// Moves to a local time (seconds since the first frame) within the current cycle.
    /// Events at the new position fire on the next advance.
    pub fn seek(&mut self, local: f32) {
        self.pos = self.seek_target(local);
        self.fresh = true;
    }

    /// The unwrapped position [`Player::seek`] moves to: `local` within the current cycle
    /// (for ping-pong, on the current leg, so that the clip time is `local` either way).
    pub(crate) fn seek_target(&self, local: f32) -> f64 {
        let d = self.duration();
        let local = if local.is_finite() {
            (local as f64).clamp(0.0, d.max(0.0))
        } else {
            0.0
        };
        if d <= 0.0 || self.wrap == Wrap::Once {
            return local;
        }
        match self.wrap {
            Wrap::PingPong => {
                let cycle = (self.pos / (2.0 * d)).floor() * 2.0 * d;
                let on_return_leg = self.pos - cycle > d;
                cycle
                    + if on_return_leg {
                        2.0 * d - local
                    } else {
                        local
                    }
            }
            _ => (self.pos / d).floor() * d + local,
        }
    }

    /// Moves to `pos` firing the events between here and there into `out` (exactly those a
    /// playthrough would), after which events at `pos` count as fired.
    pub(crate) fn seek_through(&mut self, pos: f64, out: &mut Vec<Crossing>) {
        let a = self.pos;
        self.crossings(a, pos, out, false);
        self.pos = pos;
        if a != pos {
            self.fresh = false;
        }
    }

    /// Moves to a fraction of the clip (0 = first frame, 1 = last).
    pub fn seek_normalized(&mut self, n: f32) {
        self.seek(n * self.clip.duration());
    }

    /// Sets the speed (non-finite: 0).
    pub(crate) fn set_speed(&mut self, speed: f32) {
        self.speed = if speed.is_finite() { speed } else { 0.0 };
    }

    /// Moves to `pos` as a fresh start: events at `pos` fire on the next advance.
    pub(crate) fn set_fresh(&mut self, pos: f64) {
        self.pos = pos;
        self.fresh = true;
    }

    /// Sets the unwrapped position directly (sync groups use it).
    pub(crate) fn set_position(&mut self, pos: f64) {
        self.pos = pos;
    }

    /// Advances by `delta` seconds of clip time (signed), appending every event crossed to
    /// `out` (in travel order) when given, with the seams and ends passed when `notify`.
    /// Returns the unwrapped positions before and after.
    ///
    /// Inlined into the animator's loops: a call cost about 30 instructions of its 49 per
    /// player and update.
    #[inline(always)]
    pub(crate) fn advance(
        &mut self,
        delta: f64,
        out: Option<&mut Vec<Crossing>>,
        notify: bool,
    ) -> (f64, f64) {
        let a = self.pos;
        let d = self.duration();
        let mut b = a + if delta.is_finite() { delta } else { 0.0 };
        if self.wrap == Wrap::Once || d <= 0.0 {
            b = b.clamp(0.0, d.max(0.0));
        }
        if let Some(out) = out {
            // A fresh start on the end it plays towards has ended already: say so once.
            let toward = if delta < 0.0 { 0.0 } else { d };
            if notify
                && self.wrap == Wrap::Once
                && self.fresh
                && d > 0.0
                && delta != 0.0
                && a == toward
            {
                out.push(Crossing {
                    event: usize::MAX,
                    distance: 0.0,
                    backward: delta < 0.0,
                    kind: super::EventKind::Ended {
                        at_end: delta > 0.0,
                    },
                });
                self.fresh = false;
            }
            self.crossings(a, b, out, notify);
        }
        self.pos = b;
        if a != b {
            self.fresh = false;
        }
        (a, b)
    }

    /// Every event position in the travel from `a` to `b`, and with `notify` the seams
    /// (multiples of the duration, looping or ping-ponging) and the end reached (playing
    /// once) as [`super::EventKind::Looped`] and [`super::EventKind::Ended`].
    #[inline(always)]
    pub(crate) fn crossings(&mut self, a: f64, b: f64, out: &mut Vec<Crossing>, notify: bool) {
        // Most players cross nothing: that answer without a call.
        if (self.clip.events().is_empty() && !notify) || a == b {
            return;
        }
        self.find_crossings(a, b, out, notify);
    }

    /// [`Player::crossings`] where the clip has events or `notify` asks for seams and ends.
    fn find_crossings(&mut self, a: f64, b: f64, out: &mut Vec<Crossing>, notify: bool) {
        let events = self.clip.events();
        let start = out.len();
        let d = self.duration();
        let backward = b < a;
        let (lo, hi) = if backward { (b, a) } else { (a, b) };
        // Half-open towards the start of travel, closed at its end; a fresh start includes
        // its own position.
        let inside = |p: f64| {
            let after_start = if backward { p < hi } else { p > lo };
            let before_end = if backward { p >= lo } else { p <= hi };
            (after_start || (self.fresh && p == a)) && before_end
        };
        let push_kind = |event: usize, kind, p: f64, out: &mut Vec<Crossing>| {
            if inside(p) && out.len() - start < MAX_EVENTS_PER_UPDATE {
                out.push(Crossing {
                    event,
                    distance: (p - a).abs(),
                    backward,
                    kind,
                });
            }
        };
        let push = |event: usize, p: f64, out: &mut Vec<Crossing>| {
            push_kind(event, super::EventKind::Clip, p, out)
        };
        if notify && d > 0.0 {
            if self.wrap == Wrap::Once {
                // Clamped travel reaches an end only by stopping on it (not from a fresh
                // start there).
                let end = if backward { 0.0 } else { d };
                if b == end && a != end {
                    push_kind(
                        usize::MAX,
                        super::EventKind::Ended { at_end: !backward },
                        end,
                        out,
                    );
                }
            } else {
                // Seams at every multiple of the duration; a fresh start on one is not a
                // seam passed.
                let kmin = (lo / d).floor() as i64;
                let kmax = ((hi / d).ceil() as i64)
                    .min(kmin.saturating_add(MAX_EVENTS_PER_UPDATE as i64 * 2));
                for k in kmin..=kmax {
                    let p = k as f64 * d;
                    if p == a {
                        continue;
                    }
                    let at_end = if self.wrap == Wrap::PingPong {
                        k.rem_euclid(2) == 1
                    } else {
                        !backward
                    };
                    push_kind(usize::MAX, super::EventKind::Looped { at_end }, p, out);
                }
            }
        }
        for (i, e) in events.iter().enumerate() {
            let e = (e.time - self.clip.start()) as f64;
            if d <= 0.0 || self.wrap == Wrap::Once {
                push(i, e, out);
                continue;
            }
            let period = if self.wrap == Wrap::PingPong {
                2.0 * d
            } else {
                d
            };
            let mut bases = [e, f64::NAN];
            if self.wrap == Wrap::PingPong && e > 0.0 && e < d {
                bases[1] = 2.0 * d - e;
            }
            for base in bases.into_iter().filter(|x| !x.is_nan()) {
                let kmin = ((lo - base) / period).floor() as i64;
                let kmax = ((hi - base) / period).ceil() as i64;
                if kmax.saturating_sub(kmin) > MAX_EVENTS_PER_UPDATE as i64 * 2 {
                    // An absurd step: report the first crossings in travel order only.
                    let k0 = if backward { kmax } else { kmin };
                    for s in 0..MAX_EVENTS_PER_UPDATE as i64 {
                        let k = if backward { k0 - s } else { k0 + s };
                        push(i, base + k as f64 * period, out);
                    }
                    continue;
                }
                for k in kmin..=kmax {
                    push(i, base + k as f64 * period, out);
                }
            }
        }
        out[start..].sort_by(|x, y| {
            x.distance
                .total_cmp(&y.distance)
                .then(x.event.cmp(&y.event))
        });
    }

    /// Samples the clip at the player's time into `pose`.
    #[inline]
    pub(crate) fn sample(&mut self, pose: &mut [Transform]) {
        let t = self.sampled_time();
        // The pose was sized for the clip's skeleton when the animator was built.
        let _ = crate::sample(&self.clip, t, &mut self.cache, pose);
    }

    /// Samples the clip at the player's time into `pose`'s blocks (the same bits as
    /// [`Player::sample`]).
    #[inline]
    pub(crate) fn sample_soa(&mut self, pose: &mut crate::SoaPose) {
        let t = self.sampled_time();
        // Sized for the clip's skeleton when the animator was built.
        let _ = crate::sample_soa(&self.clip, t, &mut self.cache, pose);
    }

    /// Samples the clip's morph weights at the player's time into `weights`.
    pub(crate) fn sample_weights(&self, weights: &mut [f32]) {
        // Sized for the clip's skeleton's channels when the animator was built.
        let _ = crate::sample_morph_weights(&self.clip, self.time(), weights);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// `rem_euclid` is `f64::rem_euclid` bit for bit: positions within a few loops,
        /// far out (quotients up to and past 2^52), negative, and durations of any size.
        #[test]
        fn rem_euclid_is_the_standard_one(
            d in prop_oneof![1e-6f64..1e-3, 0.01f64..100.0, 1e3f64..1e9],
            loops in prop_oneof![0.0f64..4.0, 0.0f64..1e6, 0.0f64..1e17],
            frac in prop_oneof![Just(0.0f64), Just(1.0), 0.0f64..1.0],
            negative in any::<bool>(),
        ) {
            let pos = (loops.floor() + frac) * d * if negative { -1.0 } else { 1.0 };
            let (a, b) = (super::rem_euclid(pos, d), pos.rem_euclid(d));
            prop_assert_eq!(a.to_bits(), b.to_bits(), "{} % {}", pos, d);
        }
    }

    proptest! {
        /// Whatever quotient a player kept from an earlier sample (a nearby one, one off
        /// either way, a stale one after a seek, garbage), `wrap_from` gives `rem_euclid`'s
        /// bits, and keeps a quotient that the same position then takes as it is.
        #[test]
        fn wrap_from_is_rem_euclid(
            d in prop_oneof![1e-6f64..1e-3, 0.01f64..100.0, 1e3f64..1e9],
            loops in prop_oneof![0.0f64..4.0, 0.0f64..1e6, 0.0f64..1e15],
            frac in prop_oneof![Just(0.0f64), Just(1.0), 0.0f64..1.0],
            kept in prop_oneof![Just(0i64), -2i64..3, any::<i32>().prop_map(i64::from)],
            negative in any::<bool>(),
        ) {
            let pos = (loops.floor() + frac) * d * if negative { -1.0 } else { 1.0 };
            let want = super::rem_euclid(pos, d);
            // Near the right quotient, or anywhere.
            let near = (pos / d).floor();
            for start in [near + kept as f64, kept as f64, -0.0, f64::NAN] {
                let mut q = start;
                let got = super::wrap_from(pos, d, &mut q);
                prop_assert_eq!(got.to_bits(), want.to_bits(), "{} % {} from {}", pos, d, start);
                let again = super::wrap_from(pos, d, &mut q);
                prop_assert_eq!(again.to_bits(), want.to_bits());
            }
        }
    }

    /// A player's sampled time (through the kept quotient) is its `time()`, bit for bit,
    /// over loops, ping-pong legs, seeks back and a clamped end.
    #[test]
    fn sampled_time_is_time() {
        use super::{Player, Wrap};
        let (_, [clip, _]) = crate::play::animator::test_rig::rig(3);
        for wrap in [Wrap::Loop, Wrap::PingPong, Wrap::Once] {
            let mut p = Player::new(clip.clone());
            p.wrap = wrap;
            for step in 0..2000 {
                let delta = match step % 300 {
                    0 => -7.3,
                    150 => 1e4,
                    _ => 1.0 / 60.0 + step as f64 * 1e-5,
                };
                p.advance(delta, None, false);
                assert_eq!(
                    p.sampled_time().to_bits(),
                    p.time().to_bits(),
                    "{wrap:?} step {step}"
                );
            }
        }
    }

    #[test]
    fn rem_euclid_edges() {
        for (pos, d) in [
            (0.0, 1.0),
            (-0.0, 1.0),
            (1.0, 1.0),
            (3.0, 0.1),
            (0.3, 0.1),
            (f64::MAX, 3.0),
            (1e300, 1e-300),
            (5.0, f64::INFINITY),
            (f64::INFINITY, 2.0),
            (f64::NAN, 2.0),
            (2.0, f64::NAN),
            // Subnormal durations.
            (3e-320, 1e-320),
            (1e-310, 3e-311),
            (1.0, 5e-324),
        ] {
            let (a, b) = (super::rem_euclid(pos, d), f64::rem_euclid(pos, d));
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{pos} % {d}: {a} {b}"
            );
        }
    }
}
