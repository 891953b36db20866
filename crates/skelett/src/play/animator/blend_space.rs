//! One-dimensional blend spaces: clips placed on a line by a parameter (walk, jog, run at
//! their speeds), blended between the two neighbours of the parameter and advanced together
//! by normalised time (see `advance.rs`).

use std::sync::Arc;

use super::Player;
use crate::Clip;

/// A one-dimensional blend space: clips placed on a line (walk, jog and run at their
/// speeds), blended by a parameter and played in sync by normalised time.
#[derive(Clone, Debug)]
pub struct BlendSpace1D {
    pub(super) entries: Vec<(f32, Player)>,
    pub(super) parameter: f32,
}

impl BlendSpace1D {
    /// Places each clip at its position (sorted by position; at least one clip).
    pub fn new(mut clips: Vec<(f32, Arc<Clip>)>) -> Self {
        clips.sort_by(|a, b| a.0.total_cmp(&b.0));
        let parameter = clips.first().map_or(0.0, |c| c.0);
        Self {
            entries: clips
                .into_iter()
                .map(|(p, c)| (p, Player::new(c)))
                .collect(),
            parameter,
        }
    }

    /// The parameter (clamped to the clips' positions when blending).
    pub fn parameter(&self) -> f32 {
        self.parameter
    }

    /// The two entries around the parameter and the weight of the second.
    pub(super) fn bracket(&self) -> (usize, usize, f32) {
        let n = self.entries.len();
        if n <= 1 {
            return (0, 0, 0.0);
        }
        let p = self.parameter;
        let i = self.entries.partition_point(|e| e.0 <= p);
        if i == 0 {
            return (0, 0, 0.0);
        }
        if i == n {
            return (n - 1, n - 1, 0.0);
        }
        let (a, b) = (self.entries[i - 1].0, self.entries[i].0);
        let w = if b > a { (p - a) / (b - a) } else { 0.0 };
        (i - 1, i, w.clamp(0.0, 1.0))
    }

    /// The players and their weights.
    pub fn players(&self) -> impl Iterator<Item = (&Player, f32)> {
        let (a, b, w) = self.bracket();
        self.entries.iter().enumerate().map(move |(i, (_, p))| {
            let wi = if a == b {
                if i == a {
                    1.0
                } else {
                    0.0
                }
            } else if i == a {
                1.0 - w
            } else if i == b {
                w
            } else {
                0.0
            };
            (p, wi)
        })
    }
}
