//! Finding the humanoid parts of a skeleton: hips, spine, neck, head, and per side an arm
//! (shoulder, upper arm, forearm, hand) and a leg (thigh, shin, foot, toes), from the
//! joints' names ([`super::names`]) and the topology and heights of the rest pose. What a
//! name does not say, the layout does: the hips are where the legs meet, the spine runs from
//! there to where the arms meet, legs are ordered by height (thigh near the hips, knee half
//! way down, foot near the ground), an arm's hand is a wrist or hand by name, or where the
//! fingers branch.

use glam::Vec3;

use super::names::{normalize, part_of, says_arm, says_leg, NameKey, Part, Side};
use crate::{JointIndex, Skeleton};

/// One limb of a [`Rig`]: its joints from the body outward (any may be missing).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Limb {
    /// Clavicle (arms only).
    pub shoulder: Option<JointIndex>,
    /// Upper arm or thigh.
    pub upper: Option<JointIndex>,
    /// Forearm or shin.
    pub lower: Option<JointIndex>,
    /// Hand or foot.
    pub end: Option<JointIndex>,
    /// Toes (legs only).
    pub tip: Option<JointIndex>,
}

impl Limb {
    pub fn parts(&self) -> [Option<JointIndex>; 5] {
        [self.shoulder, self.upper, self.lower, self.end, self.tip]
    }
}

/// The humanoid parts of a skeleton.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rig {
    pub hips: JointIndex,
    /// From the hips (exclusive) up to where the arms meet (inclusive).
    pub spine: Vec<JointIndex>,
    /// From the spine's top (exclusive) up to the head (exclusive).
    pub neck: Vec<JointIndex>,
    pub head: Option<JointIndex>,
    /// Left, right.
    pub arms: [Limb; 2],
    /// Left, right.
    pub legs: [Limb; 2],
}

struct Tree<'a> {
    sk: &'a Skeleton,
    keys: Vec<NameKey>,
    children: Vec<Vec<JointIndex>>,
    size: Vec<usize>,
    /// Height (scene Y) of each joint in the rest pose.
    y: Vec<f32>,
}

impl Tree<'_> {
    fn is_ancestor(&self, a: JointIndex, mut j: JointIndex) -> bool {
        while let Some(p) = self.sk.parent(j) {
            if p == a {
                return true;
            }
            j = p;
        }
        false
    }

    fn lca(&self, a: JointIndex, b: JointIndex) -> Option<JointIndex> {
        let mut up = vec![false; self.sk.len()];
        let mut j = Some(a);
        while let Some(k) = j {
            up[k as usize] = true;
            j = self.sk.parent(k);
        }
        let mut j = Some(b);
        while let Some(k) = j {
            if up[k as usize] {
                return Some(k);
            }
            j = self.sk.parent(k);
        }
        None
    }

    /// Joints strictly below `top` down to `bottom` (inclusive), top first.
    fn path(&self, top: JointIndex, bottom: JointIndex) -> Vec<JointIndex> {
        let mut out = Vec::new();
        let mut j = bottom;
        while j != top {
            out.push(j);
            match self.sk.parent(j) {
                Some(p) => j = p,
                None => return Vec::new(),
            }
        }
        out.reverse();
        out
    }

    /// From `j` down through the child with the largest subtree, to a leaf (`j` first).
    fn main_path(&self, j: JointIndex) -> Vec<JointIndex> {
        let mut out = vec![j];
        let mut k = j;
        while let Some(&c) = self.children[k as usize]
            .iter()
            .max_by_key(|&&c| (self.size[c as usize], std::cmp::Reverse(c)))
        {
            out.push(c);
            k = c;
        }
        out
    }

    /// The shallowest joint of `j`'s subtree (itself included) named as `part`, surest
    /// name first, on `side`.
    fn named_below(&self, j: JointIndex, part: Part, side: Side) -> Option<JointIndex> {
        self.sk
            .subtree(j)
            .into_iter()
            .filter(|&k| self.keys[k as usize].side == side)
            .filter_map(|k| match part_of(&self.keys[k as usize].key) {
                Some((p, rank)) if p == part => Some((rank, self.sk.depth(k), k)),
                _ => None,
            })
            .min()
            .map(|(_, _, k)| k)
    }

    fn part(&self, j: JointIndex) -> Option<Part> {
        part_of(&self.keys[j as usize].key).map(|(p, _)| p)
    }
}

/// Finds the humanoid parts of `sk`, whose rest-pose joint positions (scene space, Y up)
/// are `rest_world`; `None` where it has no pair of legs.
pub(crate) fn guess(sk: &Skeleton, rest_world: &[Vec3]) -> Option<Rig> {
    let n = sk.len();
    let mut children = vec![Vec::new(); n];
    for j in 0..n as JointIndex {
        if let Some(p) = sk.parent(j) {
            children[p as usize].push(j);
        }
    }
    let mut size = vec![1usize; n];
    for j in (0..n).rev() {
        if let Some(p) = sk.parent(j as JointIndex) {
            size[p as usize] += size[j];
        }
    }
    let t = Tree {
        sk,
        keys: sk.names().iter().map(|s| normalize(s)).collect(),
        children,
        size,
        y: rest_world.iter().map(|p| p.y).collect(),
    };
    let ground = t.y.iter().copied().fold(f32::INFINITY, f32::min);
    let top = t.y.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let extent = (top - ground).max(1e-6);
    let frac = |j: JointIndex| (t.y[j as usize] - ground) / extent;

    // Limb roots: the topmost joint of each run of joints named on one side.
    let mut legs: [Option<JointIndex>; 2] = [None, None];
    let mut arms: [Option<JointIndex>; 2] = [None, None];
    for j in 0..n as JointIndex {
        let side = t.keys[j as usize].side;
        if side == Side::Center {
            continue;
        }
        if sk
            .parent(j)
            .is_some_and(|p| t.keys[p as usize].side == side)
        {
            continue;
        }
        let sub = sk.subtree(j);
        let leg_words = sub
            .iter()
            .filter(|&&k| says_leg(&t.keys[k as usize].key))
            .count();
        let arm_words = sub
            .iter()
            .filter(|&&k| says_arm(&t.keys[k as usize].key))
            .count();
        let low = sub.iter().map(|&k| frac(k)).fold(f32::INFINITY, f32::min);
        let is_leg = match leg_words.cmp(&arm_words) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => low < 0.15 && frac(j) < 0.6,
        };
        let s = if side == Side::Left { 0 } else { 1 };
        let slot = if is_leg { &mut legs[s] } else { &mut arms[s] };
        // Prefer the limb with more joints, then the one inside the body (with a parent).
        let better = match *slot {
            None => true,
            Some(o) => {
                (t.size[j as usize], sk.parent(j).is_some())
                    > (t.size[o as usize], sk.parent(o).is_some())
            }
        };
        if better {
            *slot = Some(j);
        }
    }
    let (Some(ll), Some(rl)) = (legs[0], legs[1]) else {
        return None;
    };
    let hips = t.lca(ll, rl)?;

    // Spine: up to where the arms meet; neck and head above.
    let spine_top = match (arms[0], arms[1]) {
        (Some(a), Some(b)) => t.lca(a, b).filter(|&s| s == hips || t.is_ancestor(hips, s)),
        _ => None,
    };
    let center_child_path = |from: JointIndex| -> Vec<JointIndex> {
        // From `from` down through centre joints (largest subtree first), excluding `from`.
        let mut out = Vec::new();
        let mut k = from;
        while let Some(&c) = t.children[k as usize]
            .iter()
            .filter(|&&c| t.keys[c as usize].side == Side::Center)
            .max_by_key(|&&c| (t.size[c as usize], std::cmp::Reverse(c)))
        {
            out.push(c);
            k = c;
        }
        out
    };
    let head = t
        .named_below(spine_top.unwrap_or(hips), Part::Head, Side::Center)
        .filter(|&h| h != hips);
    let spine_top = spine_top.or_else(|| {
        // No arms: the spine runs to the neck (or the head).
        let top = t
            .named_below(hips, Part::Neck, Side::Center)
            .or(head)
            .and_then(|h| sk.parent(h))?;
        (top == hips || t.is_ancestor(hips, top)).then_some(top)
    });
    let spine = match spine_top {
        Some(s) => t.path(hips, s),
        None => Vec::new(),
    };
    let above = spine_top.unwrap_or(hips);
    let neck = match head {
        Some(h) if t.is_ancestor(above, h) => {
            let mut p = t.path(above, h);
            p.pop();
            p
        }
        Some(_) => Vec::new(),
        None if spine_top.is_some() => center_child_path(above),
        None => Vec::new(),
    };

    let mut rig = Rig {
        hips,
        spine,
        neck,
        head,
        ..Default::default()
    };
    for (s, side) in [(0, Side::Left), (1, Side::Right)] {
        if let Some(root) = legs[s] {
            rig.legs[s] = leg(&t, root, side, &frac);
        }
        if let Some(root) = arms[s] {
            rig.arms[s] = arm(&t, root, side);
        }
    }
    Some(rig)
}

fn leg(t: &Tree, root: JointIndex, side: Side, frac: &dyn Fn(JointIndex) -> f32) -> Limb {
    // The path down the leg: to a foot by name where there is one inside the limb.
    let named_foot = t.named_below(root, Part::Foot, side);
    let path: Vec<JointIndex> = match named_foot {
        Some(f) => {
            let mut p = vec![root];
            p.extend(t.path(root, f));
            p.extend(t.main_path(f).into_iter().skip(1));
            p
        }
        None => t.main_path(root),
    };
    // Heights as fractions of the limb root's height above the ground.
    let h_root = frac(root).max(1e-6);
    let f = |j: JointIndex| frac(j) / h_root;
    let mut limb = Limb::default();
    // Thigh: the last joint still near the hips' height; knee: the next, part way down;
    // foot: the first near the ground after them (or a foot by name outside the chain, as a
    // root-level IK control); toes: the next after the foot.
    let upper_i = path.iter().rposition(|&j| f(j) > 0.75).unwrap_or(0);
    limb.upper = Some(path[upper_i]);
    let mut i = upper_i + 1;
    if let Some(&k) = path.get(i) {
        if f(k) > 0.2 {
            limb.lower = Some(k);
            i += 1;
        }
    }
    if let Some(&k) = path.get(i) {
        limb.end = Some(k);
        limb.tip = path.get(i + 1).copied();
    }
    if limb.end.is_none() {
        // A foot by name anywhere (robot_quaternius's root-level Foot.L).
        limb.end = (0..t.sk.len() as JointIndex)
            .filter(|&k| t.keys[k as usize].side == side)
            .filter_map(|k| match part_of(&t.keys[k as usize].key) {
                Some((Part::Foot, rank)) => Some((rank, k)),
                _ => None,
            })
            .min()
            .map(|(_, k)| k);
    }
    limb
}

fn arm(t: &Tree, root: JointIndex, side: Side) -> Limb {
    let mut limb = Limb::default();
    // The hand: a wrist or hand by name; else where the fingers branch, unless that joint is
    // named as another part (robot_quaternius's fingers hang from the forearm).
    let hand = t.named_below(root, Part::Hand, side).or_else(|| {
        t.main_path(root)
            .into_iter()
            .find(|&j| t.children[j as usize].len() >= 2)
            .filter(|&j| t.part(j).is_none())
    });
    let in_limb = |j: JointIndex| j == root || t.is_ancestor(root, j);
    let named = |part: Part, below: Option<JointIndex>| -> Option<JointIndex> {
        let mut j = below?;
        while let Some(p) = t.sk.parent(j) {
            if !in_limb(p) {
                return None;
            }
            if t.part(p) == Some(part) && t.keys[p as usize].side == side {
                return Some(p);
            }
            j = p;
        }
        None
    };
    // Along the main path when there is no hand, so that the forearm is found from below.
    let bottom = hand.or_else(|| t.main_path(root).last().copied());
    limb.end = hand;
    let below_lower = if hand.is_some() {
        bottom
    } else {
        bottom.map(|b| t.children[b as usize].first().copied().unwrap_or(b))
    };
    limb.lower = named(Part::LowerArm, below_lower)
        .or_else(|| {
            if t.part(bottom?) == Some(Part::LowerArm) {
                bottom
            } else {
                None
            }
        })
        .or_else(|| {
            let p = t.sk.parent(hand?)?;
            (in_limb(p) && t.part(p).is_none()).then_some(p)
        });
    let from = limb.lower.or(hand);
    // The joint right above the forearm is the upper arm when nothing names one, also when
    // it is named a shoulder (BVH files name the upper arm `LeftShoulder` below a
    // `LeftCollar`): no clavicle joins the forearm directly.
    limb.upper = named(Part::UpperArm, from).or_else(|| {
        let p = t.sk.parent(limb.lower?)?;
        (in_limb(p) && matches!(t.part(p), None | Some(Part::Shoulder))).then_some(p)
    });
    limb.shoulder = named(Part::Shoulder, limb.upper.or(from)).or_else(|| {
        let p = t.sk.parent(limb.upper?)?;
        (in_limb(p) && t.part(p).is_none()).then_some(p)
    });
    limb
}
