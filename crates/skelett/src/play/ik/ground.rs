//! Grounds for foot placement: what is under a foot, asked as a ray cast.
//!
//! [`super::place_feet`] asks a [`Ground`] where a ray from above each foot meets the world.
//! A game answers from its physics engine (implement [`Ground`] over its ray cast); skelett
//! ships three grounds for tools, tests and games without one: an infinite [`Plane`], a
//! regular [`Heightfield`] (terrain) and a [`TriangleMesh`] (stairs, ramps, any static
//! level geometry) with a bounding-volume hierarchy, so a cast visits a handful of triangles
//! whatever the mesh's size. They are written here because the crates that do ray casts
//! (parry, rapier) are whole physics engines, far heavier than the three queries needed.

use glam::{Vec2, Vec3};

use crate::Error;

/// Where a ray met the ground.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroundHit {
    /// The point hit (ground space).
    pub point: Vec3,
    /// The ground's unit normal there, on the side the ray came from.
    pub normal: Vec3,
}

/// Something feet can stand on.
pub trait Ground {
    /// The first point where the ray `origin + s · direction`, `0 <= s <= max_distance`
    /// (`direction` of unit length), meets the ground, or `None`.
    fn cast(&self, origin: Vec3, direction: Vec3, max_distance: f32) -> Option<GroundHit>;
}

impl<G: Ground + ?Sized> Ground for &G {
    fn cast(&self, origin: Vec3, direction: Vec3, max_distance: f32) -> Option<GroundHit> {
        (**self).cast(origin, direction, max_distance)
    }
}

/// An infinite plane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plane {
    /// A point on the plane.
    pub point: Vec3,
    /// Its unit normal.
    pub normal: Vec3,
}

impl Plane {
    /// The plane through `point` with normal `normal` (normalized).
    ///
    /// # Errors
    /// [`Error::BadGround`] for a NaN or infinite number or a zero normal.
    pub fn new(point: Vec3, normal: Vec3) -> Result<Self, Error> {
        if !point.is_finite() || !normal.is_finite() {
            return Err(Error::BadGround {
                what: "a plane with a NaN or infinite number",
            });
        }
        let normal = normal.try_normalize().ok_or(Error::BadGround {
            what: "a plane with a zero normal",
        })?;
        Ok(Plane { point, normal })
    }

    /// A slope through the origin rising `degrees` along +X (Y up): the plane a character
    /// walking along X climbs.
    pub fn slope(degrees: f32) -> Self {
        Self::slope_toward(degrees, Vec3::X)
    }

    /// A slope through the origin rising `degrees` toward the horizontal direction `along`
    /// (Y up; its vertical part is ignored, and a vertical or zero `along` means +X): with
    /// `Vec3::Z`, the slope a glTF character (facing +Z) walks up.
    ///
    /// ```
    /// use glam::Vec3;
    /// use skelett::ik::{Ground, Plane};
    /// let up_ahead = Plane::slope_toward(15.0, Vec3::Z);
    /// let hit = up_ahead.cast(Vec3::new(0.0, 5.0, 1.0), Vec3::NEG_Y, 10.0).unwrap();
    /// assert!((hit.point.y - 15f32.to_radians().tan()).abs() < 1e-5);
    /// ```
    pub fn slope_toward(degrees: f32, along: Vec3) -> Self {
        let a = degrees.to_radians();
        let along = Vec3::new(along.x, 0.0, along.z)
            .try_normalize()
            .unwrap_or(Vec3::X);
        Plane {
            point: Vec3::ZERO,
            normal: Vec3::Y * a.cos() - along * a.sin(),
        }
    }
}

impl Ground for Plane {
    fn cast(&self, origin: Vec3, direction: Vec3, max_distance: f32) -> Option<GroundHit> {
        let along = direction.dot(self.normal);
        if along.abs() <= 1e-12 {
            return None;
        }
        let s = (self.point - origin).dot(self.normal) / along;
        (0.0..=max_distance).contains(&s).then(|| GroundHit {
            point: origin + direction * s,
            normal: if along > 0.0 {
                -self.normal
            } else {
                self.normal
            },
        })
    }
}

/// A regular grid of heights (Y up): `columns × rows` samples `cell` apart along X and Z from
/// `origin` (the sample of column 0, row 0, at height `origin.y + heights[0]`), each cell
/// split into two triangles. Rays outside the grid miss.
#[derive(Clone, Debug, PartialEq)]
pub struct Heightfield {
    origin: Vec3,
    cell: f32,
    columns: usize,
    rows: usize,
    heights: Vec<f32>,
}

impl Heightfield {
    /// A heightfield from `heights`, row by row (`heights[row * columns + column]`).
    ///
    /// # Errors
    /// [`Error::BadGround`] for fewer than 2 × 2 samples, a length that is not
    /// `columns × rows`, a cell size that is not positive, or a NaN or infinite number.
    pub fn new(
        origin: Vec3,
        cell: f32,
        columns: usize,
        rows: usize,
        heights: Vec<f32>,
    ) -> Result<Self, Error> {
        let bad = |what| Err(Error::BadGround { what });
        if columns < 2 || rows < 2 {
            return bad("a heightfield needs at least 2 x 2 samples");
        }
        if columns.checked_mul(rows) != Some(heights.len()) {
            return bad("a heightfield whose heights are not columns x rows");
        }
        if !(cell.is_finite() && cell > 0.0) {
            return bad("a heightfield whose cell size is not positive and finite");
        }
        if !origin.is_finite() || heights.iter().any(|h| !h.is_finite()) {
            return bad("a heightfield with a NaN or infinite number");
        }
        Ok(Heightfield {
            origin,
            cell,
            columns,
            rows,
            heights,
        })
    }

    fn corner(&self, c: usize, r: usize) -> Vec3 {
        self.origin
            + Vec3::new(
                c as f32 * self.cell,
                self.heights[r * self.columns + c],
                r as f32 * self.cell,
            )
    }

    /// The ray against the two triangles of cell (`c`, `r`): the nearest hit's distance and
    /// normal.
    fn cast_cell(&self, c: usize, r: usize, o: Vec3, d: Vec3, max: f32) -> Option<(f32, Vec3)> {
        let (p00, p10, p01, p11) = (
            self.corner(c, r),
            self.corner(c + 1, r),
            self.corner(c, r + 1),
            self.corner(c + 1, r + 1),
        );
        let a = triangle(o, d, max, p00, p01, p10);
        let b = triangle(o, d, max, p10, p01, p11);
        match (a, b) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }
}

impl Ground for Heightfield {
    fn cast(&self, origin: Vec3, direction: Vec3, max_distance: f32) -> Option<GroundHit> {
        // Walk the cells the ray's XZ shadow crosses, in order (Amanatides and Woo), over
        // the part of the ray inside the grid; the first cell with a hit has the nearest.
        let size = Vec2::new(
            (self.columns - 1) as f32 * self.cell,
            (self.rows - 1) as f32 * self.cell,
        );
        let o = Vec2::new(origin.x - self.origin.x, origin.z - self.origin.z);
        let d = Vec2::new(direction.x, direction.z);
        let (mut s0, mut s1) = (0.0f32, max_distance);
        for k in 0..2 {
            if d[k].abs() < 1e-12 {
                if o[k] < 0.0 || o[k] > size[k] {
                    return None;
                }
            } else {
                let (a, b) = ((0.0 - o[k]) / d[k], (size[k] - o[k]) / d[k]);
                s0 = s0.max(a.min(b));
                s1 = s1.min(a.max(b));
            }
        }
        if s0.is_nan() || s1.is_nan() || s0 > s1 {
            return None;
        }
        let start = (o + d * s0) / self.cell;
        let clamp = |x: f32, n: usize| (x.floor().max(0.0) as usize).min(n - 2);
        let (mut c, mut r) = (clamp(start.x, self.columns), clamp(start.y, self.rows));
        let step = |dk: f32| if dk > 0.0 { 1i64 } else { -1 };
        let (sx, sz) = (step(d.x), step(d.y));
        // Ray distance to the next cell boundary along each axis, and between boundaries.
        let next = |pos: f32, cell: usize, dk: f32| {
            if dk.abs() < 1e-12 {
                f32::INFINITY
            } else {
                let edge = if dk > 0.0 { cell + 1 } else { cell } as f32;
                s0 + (edge - pos) * self.cell / dk
            }
        };
        let mut tx = next(start.x, c, d.x);
        let mut tz = next(start.y, r, d.y);
        let dtx = if d.x.abs() < 1e-12 {
            f32::INFINITY
        } else {
            self.cell / d.x.abs()
        };
        let dtz = if d.y.abs() < 1e-12 {
            f32::INFINITY
        } else {
            self.cell / d.y.abs()
        };
        // At most every cell once along each axis.
        for _ in 0..(self.columns + self.rows) {
            if let Some((s, normal)) = self.cast_cell(c, r, origin, direction, max_distance) {
                return Some(GroundHit {
                    point: origin + direction * s,
                    normal,
                });
            }
            if tx.min(tz) > s1 {
                return None;
            }
            if tx < tz {
                let nc = c as i64 + sx;
                if nc < 0 || nc as usize > self.columns - 2 {
                    return None;
                }
                c = nc as usize;
                tx += dtx;
            } else {
                let nr = r as i64 + sz;
                if nr < 0 || nr as usize > self.rows - 2 {
                    return None;
                }
                r = nr as usize;
                tz += dtz;
            }
        }
        None
    }
}

/// A static triangle mesh with a bounding-volume hierarchy (median splits, up to four
/// triangles a leaf).
#[derive(Clone, Debug, PartialEq)]
pub struct TriangleMesh {
    /// Triangles' corners, three per triangle, in BVH leaf order.
    corners: Vec<[Vec3; 3]>,
    nodes: Vec<Node>,
}

/// A BVH node: a box, and either two children (`count == 0`, the first child follows the
/// node and the second is at `index`) or `count` triangles from `index`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    min: Vec3,
    max: Vec3,
    index: u32,
    count: u32,
}

const LEAF: usize = 4;
/// Deep enough for any median-split tree of up to 2^48 triangles.
const STACK_DEPTH: usize = 64;

impl TriangleMesh {
    /// A mesh from `positions` and `indices` (three per triangle).
    ///
    /// # Errors
    /// [`Error::BadGround`] for an index count that is not a multiple of 3, an index past
    /// the positions, a NaN or infinite position, or more than 2^31 triangles.
    pub fn new(positions: &[Vec3], indices: &[u32]) -> Result<Self, Error> {
        let bad = |what| Err(Error::BadGround { what });
        if indices.len() % 3 != 0 {
            return bad("a triangle mesh whose index count is not a multiple of 3");
        }
        if indices.len() / 3 > i32::MAX as usize {
            return bad("a triangle mesh of more than 2^31 triangles");
        }
        if positions.iter().any(|p| !p.is_finite()) {
            return bad("a triangle mesh with a NaN or infinite position");
        }
        let mut corners = Vec::with_capacity(indices.len() / 3);
        for t in indices.chunks_exact(3) {
            let mut tri = [Vec3::ZERO; 3];
            for (k, &i) in t.iter().enumerate() {
                match positions.get(i as usize) {
                    Some(&p) => tri[k] = p,
                    None => return bad("a triangle mesh with an index past its positions"),
                }
            }
            corners.push(tri);
        }
        let mut nodes = Vec::with_capacity(2 * corners.len() / LEAF + 1);
        let n = corners.len();
        build(&mut corners, 0, n, &mut nodes);
        Ok(TriangleMesh { corners, nodes })
    }

    /// How many triangles.
    pub fn len(&self) -> usize {
        self.corners.len()
    }

    /// Whether it has no triangles.
    pub fn is_empty(&self) -> bool {
        self.corners.is_empty()
    }

    /// Steps: `steps` treads `depth` deep and `rise` high along +X from x = 0, `width` wide
    /// (centred on Z = 0), the floor at y = 0 before them and the top step's height after.
    /// Each tread and each riser is two triangles.
    pub fn stairs(steps: usize, rise: f32, depth: f32, width: f32) -> Self {
        let (z0, z1) = (-0.5 * width, 0.5 * width);
        let mut positions = Vec::new();
        let mut indices = Vec::new();
        let mut quad = |a: Vec3, b: Vec3, c: Vec3, d: Vec3| {
            let i = positions.len() as u32;
            positions.extend([a, b, c, d]);
            indices.extend([i, i + 1, i + 2, i, i + 2, i + 3]);
        };
        let far = 1000.0;
        quad(
            Vec3::new(-far, 0.0, z0),
            Vec3::new(-far, 0.0, z1),
            Vec3::new(0.0, 0.0, z1),
            Vec3::new(0.0, 0.0, z0),
        );
        for s in 0..steps {
            let (x, y) = (s as f32 * depth, s as f32 * rise);
            let (y1, x1) = (y + rise, if s + 1 == steps { far } else { x + depth });
            quad(
                Vec3::new(x, y, z0),
                Vec3::new(x, y, z1),
                Vec3::new(x, y1, z1),
                Vec3::new(x, y1, z0),
            );
            quad(
                Vec3::new(x, y1, z0),
                Vec3::new(x, y1, z1),
                Vec3::new(x1, y1, z1),
                Vec3::new(x1, y1, z0),
            );
        }
        TriangleMesh::new(&positions, &indices).expect("stairs are a valid mesh")
    }

    /// The triangles, three corners each (in the hierarchy's order).
    pub fn triangles(&self) -> &[[Vec3; 3]] {
        &self.corners
    }
}

fn build(tris: &mut [[Vec3; 3]], start: usize, end: usize, nodes: &mut Vec<Node>) {
    let (mut min, mut max) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    let (mut cmin, mut cmax) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
    for t in &tris[start..end] {
        for p in t {
            min = min.min(*p);
            max = max.max(*p);
        }
        let c = (t[0] + t[1] + t[2]) / 3.0;
        cmin = cmin.min(c);
        cmax = cmax.max(c);
    }
    let me = nodes.len();
    nodes.push(Node {
        min,
        max,
        index: start as u32,
        count: (end - start) as u32,
    });
    if end - start <= LEAF {
        return;
    }
    let extent = cmax - cmin;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let mid = (start + end) / 2;
    let key = |t: &[Vec3; 3]| t[0][axis] + t[1][axis] + t[2][axis];
    tris[start..end].select_nth_unstable_by(mid - start, |a, b| key(a).total_cmp(&key(b)));
    build(tris, start, mid, nodes);
    let second = nodes.len() as u32;
    build(tris, mid, end, nodes);
    nodes[me].index = second;
    nodes[me].count = 0;
}

impl Ground for TriangleMesh {
    fn cast(&self, origin: Vec3, direction: Vec3, max_distance: f32) -> Option<GroundHit> {
        if self.nodes.is_empty() {
            return None;
        }
        let inv = direction.recip();
        let mut best: Option<(f32, Vec3)> = None;
        let mut stack = [0u32; STACK_DEPTH];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let at = stack[top];
            let node = self.nodes[at as usize];
            let limit = best.map_or(max_distance, |b| b.0);
            if !slab(origin, inv, limit, node.min, node.max) {
                continue;
            }
            if node.count > 0 {
                let first = node.index as usize;
                for t in &self.corners[first..first + node.count as usize] {
                    let limit = best.map_or(max_distance, |b| b.0);
                    if let Some(hit) = triangle(origin, direction, limit, t[0], t[1], t[2]) {
                        best = Some(hit);
                    }
                }
            } else if top + 2 <= STACK_DEPTH {
                // The first child is written right after its parent, the second at `index`.
                stack[top] = node.index;
                stack[top + 1] = at + 1;
                top += 2;
            }
        }
        best.map(|(s, normal)| GroundHit {
            point: origin + direction * s,
            normal,
        })
    }
}

/// Whether the ray meets the box within `limit`.
#[inline]
fn slab(o: Vec3, inv: Vec3, limit: f32, min: Vec3, max: Vec3) -> bool {
    let a = (min - o) * inv;
    let b = (max - o) * inv;
    // NaN (0 * inf for a ray in a box face's plane) is dropped by min/max.
    let near = a.min(b).max_element().max(0.0);
    let far = a.max(b).min_element().min(limit);
    near <= far
}

/// Möller–Trumbore: the ray against triangle (a, b, c), its distance in `0..=max` and the
/// normal facing the ray's origin.
#[inline]
fn triangle(o: Vec3, d: Vec3, max: f32, a: Vec3, b: Vec3, c: Vec3) -> Option<(f32, Vec3)> {
    let (e1, e2) = (b - a, c - a);
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det.abs() <= 1e-12 {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - a;
    let u = s.dot(p) * inv;
    if !(-1e-6..=1.0 + 1e-6).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < -1e-6 || u + v > 1.0 + 1e-6 {
        return None;
    }
    let t = e2.dot(q) * inv;
    if !(0.0..=max).contains(&t) {
        return None;
    }
    let n = e1.cross(e2).normalize();
    Some((t, if n.dot(d) > 0.0 { -n } else { n }))
}
