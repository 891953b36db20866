//! The joint map: which source joint drives which target joint. Built automatically
//! ([`JointMap::auto`]) from the humanoid parts both skeletons have (`rig.rs`) and, for the
//! joints left over, from equal normalised names ([`super::normalize`]); or written by hand
//! (the CLI saves and reads it as JSON). Target joints the map leaves out keep the target's
//! reference pose, or share the rotation of the chain they sit in.

use std::collections::HashMap;

use super::names::normalize;
use super::rig::{guess, Rig};
use crate::{Error, JointIndex, Skeleton};

/// How a pair of a [`JointMap`] was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// By body part (hips, spine, arm, leg, ...), from names and the rest pose's layout.
    Part,
    /// By equal names after normalisation (case, separators, prefixes, side markers).
    Name,
    /// Given by the user.
    User,
}

/// One pair of a [`JointMap`].
#[derive(Clone, Debug, PartialEq)]
pub struct MapPair {
    /// The source joint's name.
    pub source: String,
    /// The target joint's name.
    pub target: String,
    /// How the pair was found.
    pub found: Found,
}

/// Which source joint drives which target joint, by name.
///
/// ```
/// use skelett::retarget::JointMap;
/// let map = JointMap::from_pairs([("Hips", "pelvis"), ("LeftUpLeg", "thigh_l")]);
/// assert_eq!(map.source_of("thigh_l"), Some("LeftUpLeg"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointMap {
    /// The pairs, in target joint order where built automatically.
    pub pairs: Vec<MapPair>,
}

impl JointMap {
    /// A map from (source, target) name pairs.
    pub fn from_pairs<S: Into<String>, T: Into<String>>(
        pairs: impl IntoIterator<Item = (S, T)>,
    ) -> Self {
        JointMap {
            pairs: pairs
                .into_iter()
                .map(|(s, t)| MapPair {
                    source: s.into(),
                    target: t.into(),
                    found: Found::User,
                })
                .collect(),
        }
    }

    /// The source joint mapped onto `target`.
    pub fn source_of(&self, target: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|p| p.target == target)
            .map(|p| p.source.as_str())
    }

    /// Builds the map from the two skeletons: body parts where both are humanoid (hips with
    /// each other, spines and necks spread over each other's joints, arms and legs part by
    /// part), then equal normalised names for the joints left on both sides.
    ///
    /// ```
    /// use skelett::{RawSkeleton, RawJoint, Transform};
    /// use skelett::retarget::JointMap;
    /// let joint = |name: &str, parent| RawJoint { name: name.into(), parent, rest: Transform::IDENTITY };
    /// let a = RawSkeleton { joints: vec![joint("Root", None), joint("LeftHand", Some(0))], ..Default::default() }.build()?;
    /// let b = RawSkeleton { joints: vec![joint("mixamorig:Root", None), joint("mixamorig:hand_L", Some(0))], ..Default::default() }.build()?;
    /// let map = JointMap::auto(&a, &b)?;
    /// assert_eq!(map.source_of("mixamorig:hand_L"), Some("LeftHand"));
    /// # Ok::<(), skelett::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoCommonChain`] when nothing could be paired.
    pub fn auto(source: &Skeleton, target: &Skeleton) -> Result<JointMap, Error> {
        let rs = guess(source, &super::rest_world_positions(source));
        let rt = guess(target, &super::rest_world_positions(target));
        let mut by_target: Vec<Option<(JointIndex, Found)>> = vec![None; target.len()];
        let mut used = vec![false; source.len()];
        let mut put = |s: JointIndex, t: JointIndex, found: Found| {
            if by_target[t as usize].is_none() && !used[s as usize] {
                by_target[t as usize] = Some((s, found));
                used[s as usize] = true;
            }
        };
        if let (Some(rs), Some(rt)) = (&rs, &rt) {
            for (s, t) in part_pairs(rs, rt) {
                put(s, t, Found::Part);
            }
        }
        // Equal normalised names, for everything else (fingers, extra bones, rigs that are
        // not humanoid, renamed copies).
        let mut source_keys: HashMap<_, Vec<JointIndex>> = HashMap::new();
        for j in 0..source.len() as JointIndex {
            source_keys
                .entry(normalize(source.name(j)))
                .or_default()
                .push(j);
        }
        for t in 0..target.len() as JointIndex {
            if let Some(ss) = source_keys.get(&normalize(target.name(t))) {
                if let [s] = ss[..] {
                    put(s, t, Found::Name);
                }
            }
        }
        let pairs: Vec<MapPair> = by_target
            .iter()
            .enumerate()
            .filter_map(|(t, m)| {
                m.map(|(s, found)| MapPair {
                    source: source.name(s).to_owned(),
                    target: target.name(t as JointIndex).to_owned(),
                    found,
                })
            })
            .collect();
        if pairs.is_empty() {
            return Err(Error::NoCommonChain {
                problem: format!(
                    "no joint of the target ({}) matches a source joint ({}) by body part or name: {}; write a joint map",
                    preview(target),
                    preview(source),
                    match (rs.is_some(), rt.is_some()) {
                        (false, _) => "the source has no pair of legs named left and right",
                        (_, false) => "the target has no pair of legs named left and right",
                        _ => "the humanoid parts found did not pair up",
                    }
                ),
            });
        }
        Ok(JointMap { pairs })
    }

    /// The map as joint indices: for each target joint, the source joint that drives it.
    ///
    /// # Errors
    /// [`Error::MapUnknownJoint`] for a name either skeleton lacks;
    /// [`Error::MapDuplicateTarget`] for a target joint mapped twice.
    pub fn resolve(
        &self,
        source: &Skeleton,
        target: &Skeleton,
    ) -> Result<Vec<Option<JointIndex>>, Error> {
        let mut out: Vec<Option<JointIndex>> = vec![None; target.len()];
        for p in &self.pairs {
            let s = source
                .find(&p.source)
                .ok_or_else(|| Error::MapUnknownJoint {
                    side: "source",
                    joint: p.source.clone(),
                })?;
            let t = target
                .find(&p.target)
                .ok_or_else(|| Error::MapUnknownJoint {
                    side: "target",
                    joint: p.target.clone(),
                })?;
            if let Some(prev) = out[t as usize] {
                return Err(Error::MapDuplicateTarget {
                    target: p.target.clone(),
                    first: source.name(prev).to_owned(),
                    second: p.source.clone(),
                });
            }
            out[t as usize] = Some(s);
        }
        Ok(out)
    }
}

fn preview(sk: &Skeleton) -> String {
    let names: Vec<&str> = sk.names().iter().take(4).map(String::as_str).collect();
    let more = if sk.len() > 4 { ", ..." } else { "" };
    format!("{}{more}", names.join(", "))
}

/// (source, target) pairs of the body parts both rigs have.
fn part_pairs(s: &Rig, t: &Rig) -> Vec<(JointIndex, JointIndex)> {
    let mut out = vec![(s.hips, t.hips)];
    out.extend(spread(&s.spine, &t.spine, true));
    // A one-joint neck takes the source neck's base: it then aims at the head.
    out.extend(spread(&s.neck, &t.neck, false));
    if let (Some(a), Some(b)) = (s.head, t.head) {
        out.push((a, b));
    }
    for (ls, lt) in s.arms.iter().zip(&t.arms).chain(s.legs.iter().zip(&t.legs)) {
        for (a, b) in ls.parts().into_iter().zip(lt.parts()) {
            if let (Some(a), Some(b)) = (a, b) {
                out.push((a, b));
            }
        }
    }
    out
}

/// Pairs a source chain with a target chain of any lengths: tops together, bottoms
/// together, the joints between by their place along the chain (a target joint left out
/// shares the rotation of its neighbours).
fn spread(s: &[JointIndex], t: &[JointIndex], top: bool) -> Vec<(JointIndex, JointIndex)> {
    let (m, n) = (s.len(), t.len());
    if m == 0 || n == 0 {
        return Vec::new();
    }
    if n == 1 && !top {
        return vec![(s[0], t[0])];
    }
    let mut out = vec![(s[m - 1], t[n - 1])];
    if m >= 2 && n >= 2 {
        out.push((s[0], t[0]));
        let mut used = vec![false; m];
        used[0] = true;
        used[m - 1] = true;
        for (i, &tj) in t.iter().enumerate().take(n - 1).skip(1) {
            let f = i as f32 / (n - 1) as f32;
            let k = (f * (m - 1) as f32).round() as usize;
            if !used[k] {
                used[k] = true;
                out.push((s[k], tj));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_pairs_ends_and_middles() {
        let s: Vec<JointIndex> = vec![10, 11, 12];
        let t: Vec<JointIndex> = vec![0, 1];
        let mut p = spread(&s, &t, true);
        p.sort();
        assert_eq!(p, [(10, 0), (12, 1)]);
        let t4: Vec<JointIndex> = vec![0, 1, 2, 3];
        let mut p = spread(&s, &t4, true);
        p.sort();
        // 3 onto 4: ends paired; the middle source joint to the nearer middle target.
        assert_eq!(p, [(10, 0), (11, 1), (12, 3)]);
        assert_eq!(spread(&s[..1], &t4, true), [(10, 3)]);
        assert_eq!(spread(&s, &t[..1], false), [(10, 0)]);
    }
}
