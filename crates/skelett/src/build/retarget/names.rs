//! Joint names, normalised for matching across rigs: namespaces and rig prefixes
//! (`mixamorig:`, `DEF-`, `Bip01`, `b_`), case, separators and camel case are removed, and
//! the side marker (`Left`, `L`, `.l`, `_L`, `gauche`, `izquierdo`, ...) is taken out as a
//! [`Side`]. What is left is a key such as `upleg`, `forearm`, `handindex1`; roles are
//! recognised from those keys (the vocabularies of CMU and Bandai Namco BVH, Mixamo, Unreal,
//! Blender/Rigify, Quaternius, KayKit, 3ds Max Biped, and French, Spanish and German words).

/// Which side of the body a joint's name puts it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// No side marker.
    Center,
    /// Left.
    Left,
    /// Right.
    Right,
}

/// A joint name taken apart: its side and the rest as one lowercase key without separators.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NameKey {
    /// The side marker found, if any.
    pub side: Side,
    /// The name without namespace, prefix, side marker, case or separators.
    pub key: String,
}

const LEFT: &[&str] = &[
    "left",
    "l",
    "lft",
    "lt",
    "gauche",
    "izquierdo",
    "izquierda",
    "izq",
    "links",
    "sinistra",
    "sx",
];
const RIGHT: &[&str] = &[
    "right", "r", "rgt", "rt", "droit", "droite", "derecho", "derecha", "der", "rechts", "destra",
    "dx",
];
/// Prefix tokens that rigs put in front of every joint and that say nothing about it.
const PREFIXES: &[&str] = &[
    "mixamorig",
    "def",
    "org",
    "mch",
    "bip01",
    "bip001",
    "bip",
    "b",
    "bn",
    "jnt",
    "j",
    "bone",
    "rig",
    "armature",
    "cc",
    "base",
    "sk",
    "ik",
    "fk",
];

/// Splits `name` into its side and key.
///
/// ```
/// use skelett::retarget::{normalize, Side};
/// for (name, side, key) in [
///     ("mixamorig:LeftUpLeg", Side::Left, "upleg"),
///     ("thigh_l", Side::Left, "thigh"),
///     ("UpperArm.R", Side::Right, "upperarm"),
///     ("LHipJoint", Side::Left, "hipjoint"),
///     ("DEF-forearm.L", Side::Left, "forearm"),
///     ("bras gauche", Side::Left, "bras"),
///     ("Bip01 R Finger0Nub", Side::Right, "finger0nub"),
///     ("Spine1", Side::Center, "spine1"),
///     ("Lefthand", Side::Left, "hand"),
/// ] {
///     let n = normalize(name);
///     assert_eq!((n.side, n.key.as_str()), (side, key), "{name}");
/// }
/// ```
pub fn normalize(name: &str) -> NameKey {
    // Namespaces: "mixamorig:Hips", "Rig_Medium|hips".
    let name = name.rsplit([':', '|']).next().unwrap_or(name);
    let mut tokens: Vec<String> = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                tokens.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let prev = if i > 0 { Some(chars[i - 1]) } else { None };
        let next = chars.get(i + 1).copied();
        // Camel case: "LeftUpLeg" -> Left Up Leg; "LHipJoint" -> L Hip Joint; digits stay
        // with the word before them ("Spine1"), letters after digits start a word.
        let boundary = match prev {
            Some(p) if p.is_alphanumeric() => {
                (c.is_uppercase() && p.is_lowercase())
                    || (c.is_uppercase()
                        && p.is_uppercase()
                        && next.is_some_and(|n| n.is_lowercase()))
                    || (c.is_alphabetic() && p.is_ascii_digit())
            }
            _ => false,
        };
        if boundary && !cur.is_empty() {
            tokens.push(std::mem::take(&mut cur));
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        tokens.push(cur);
    }
    let merged = tokens;
    let mut side = Side::Center;
    let mut kept: Vec<String> = Vec::with_capacity(merged.len());
    for (i, t) in merged.iter().enumerate() {
        let is_prefix = i == 0 && merged.len() > 1 && PREFIXES.contains(&t.as_str());
        if is_prefix {
            continue;
        }
        // "Lefthand": a side word glued to a lowercase word.
        if side == Side::Center {
            for (word, s) in [("left", Side::Left), ("right", Side::Right)] {
                if let Some(rest) = t.strip_prefix(word) {
                    if rest.len() >= 3 && rest.chars().all(|c| c.is_alphanumeric()) {
                        side = s;
                        kept.push(rest.to_owned());
                    }
                }
            }
            if side != Side::Center {
                continue;
            }
        }
        if side == Side::Center && merged.len() > 1 {
            if LEFT.contains(&t.as_str()) {
                side = Side::Left;
                continue;
            }
            if RIGHT.contains(&t.as_str()) {
                side = Side::Right;
                continue;
            }
        }
        kept.push(t.clone());
    }
    // Side markers glued to a lowercase word ("lefthand", "handl") are left alone (too
    // ambiguous); camel case ("LeftHand") is split above.
    NameKey {
        side,
        key: kept.concat(),
    }
}

/// The body part a joint plays in a humanoid rig.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    Head,
    Neck,
    Shoulder,
    UpperArm,
    LowerArm,
    Hand,
    UpperLeg,
    LowerLeg,
    Foot,
    Toes,
}

/// The part a key names, and how sure the name is (0 is surest).
pub(crate) fn part_of(key: &str) -> Option<(Part, u8)> {
    let k = key.trim_end_matches(|c: char| c.is_ascii_digit());
    let p = match k {
        "head" | "tete" | "tête" | "kopf" | "cabeza" | "testa" | "skull" => (Part::Head, 0),
        "neck" | "cou" | "hals" | "cuello" | "collo" => (Part::Neck, 0),
        "shoulder" | "clavicle" | "clav" | "collar" | "collarbone" | "epaule" | "épaule"
        | "schulter" | "hombro" => (Part::Shoulder, 0),
        "upperarm" | "uparm" | "armupper" | "humerus" | "oberarm" | "brazo" => (Part::UpperArm, 0),
        "arm" | "bras" => (Part::UpperArm, 1),
        "lowerarm" | "forearm" | "armlower" | "lowarm" | "elbow" | "avantbras" | "ulna"
        | "unterarm" | "antebrazo" => (Part::LowerArm, 0),
        "wrist" | "poignet" | "handgelenk" | "muneca" => (Part::Hand, 0),
        "hand" | "main" | "mano" => (Part::Hand, 1),
        "upleg" | "upperleg" | "thigh" | "legupper" | "femur" | "cuisse" | "oberschenkel"
        | "muslo" => (Part::UpperLeg, 0),
        "hip" => (Part::UpperLeg, 1),
        "lowerleg" | "shin" | "calf" | "knee" | "leglower" | "lowleg" | "crus"
        | "unterschenkel" | "pierna" => (Part::LowerLeg, 0),
        "leg" | "jambe" => (Part::LowerLeg, 1),
        "ankle" | "cheville" => (Part::Foot, 0),
        "foot" | "pied" | "pie" | "fuss" | "fuß" => (Part::Foot, 1),
        "toe" | "toes" | "toebase" | "ball" | "orteil" | "orteils" | "zeh" | "zehen"
        | "footthumb" => (Part::Toes, 0),
        _ => return None,
    };
    Some(p)
}

/// `true` for keys that say "leg" in some way (a limb root whose subtree has one is a leg).
pub(crate) fn says_leg(key: &str) -> bool {
    matches!(
        part_of(key),
        Some((Part::UpperLeg | Part::LowerLeg | Part::Foot | Part::Toes, _))
    ) || key.contains("leg")
        || key.contains("foot")
        || key.contains("toe")
        || key.contains("thigh")
        || key.contains("knee")
        || key.contains("jambe")
        || key.contains("pied")
}

/// `true` for keys that say "arm" in some way.
pub(crate) fn says_arm(key: &str) -> bool {
    matches!(
        part_of(key),
        Some((
            Part::Shoulder | Part::UpperArm | Part::LowerArm | Part::Hand,
            _
        ))
    ) || key.contains("arm")
        || key.contains("hand")
        || key.contains("finger")
        || key.contains("thumb") && !key.contains("foot")
        || key.contains("clavicle")
        || key.contains("palm")
        || key.contains("bras")
        || key.contains("main")
}
