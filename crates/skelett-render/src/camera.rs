//! An orbit camera that frames a character: yaw and pitch around a target, at a distance
//! that fits a bounding sphere in the view.

use glam::{Mat4, Vec3};

/// An axis-aligned box in scene space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Smallest corner.
    pub min: Vec3,
    /// Largest corner.
    pub max: Vec3,
}

impl Bounds {
    /// The box around `points` (`None` if there are none or they are not finite).
    pub fn of(points: impl IntoIterator<Item = Vec3>) -> Option<Bounds> {
        let mut it = points.into_iter().filter(|p| p.is_finite());
        let first = it.next()?;
        Some(it.fold(
            Bounds {
                min: first,
                max: first,
            },
            |b, p| Bounds {
                min: b.min.min(p),
                max: b.max.max(p),
            },
        ))
    }

    /// Grows the box to hold `other` too.
    pub fn union(self, other: Bounds) -> Bounds {
        Bounds {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// The centre.
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Half the diagonal: the radius of a sphere holding the box.
    pub fn radius(&self) -> f32 {
        ((self.max - self.min) * 0.5).length().max(1e-6)
    }
}

/// A camera orbiting `target` (Y up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// The point looked at.
    pub target: Vec3,
    /// Angle around the Y axis, radians (0 looks along -Z from +Z).
    pub yaw: f32,
    /// Angle above the horizon, radians.
    pub pitch: f32,
    /// Distance from the target.
    pub distance: f32,
    /// Vertical field of view, radians.
    pub fov_y: f32,
}

impl OrbitCamera {
    /// A three-quarter view from slightly above that fits `bounds` in a `aspect` (width /
    /// height) image.
    ///
    /// ```
    /// use glam::Vec3;
    /// use skelett_render::{Bounds, OrbitCamera};
    /// let b = Bounds { min: Vec3::new(-1.0, 0.0, -1.0), max: Vec3::new(1.0, 2.0, 1.0) };
    /// let cam = OrbitCamera::framing(b, 4.0 / 3.0);
    /// let clip = cam.view_proj(4.0 / 3.0).project_point3(b.center());
    /// assert!(clip.x.abs() < 1e-5 && clip.y.abs() < 1e-5);
    /// ```
    pub fn framing(bounds: Bounds, aspect: f32) -> OrbitCamera {
        let fov_y = 40f32.to_radians();
        // The narrower of the two fields of view decides the distance.
        let half = (fov_y * 0.5).tan().min((fov_y * 0.5).tan() * aspect).atan();
        OrbitCamera {
            target: bounds.center(),
            yaw: 35f32.to_radians(),
            pitch: 15f32.to_radians(),
            distance: bounds.radius() / half.sin() * 1.05,
            fov_y,
        }
    }

    /// The eye position.
    pub fn eye(&self) -> Vec3 {
        let dir = Vec3::new(
            self.pitch.cos() * self.yaw.sin(),
            self.pitch.sin(),
            self.pitch.cos() * self.yaw.cos(),
        );
        self.target + dir * self.distance
    }

    /// Projection times view, right-handed, depth 0..1 (wgpu's clip space).
    pub fn view_proj(&self, aspect: f32) -> Mat4 {
        let view = Mat4::look_at_rh(self.eye(), self.target, Vec3::Y);
        let near = (self.distance * 0.01).max(1e-4);
        let far = self.distance * 10.0;
        Mat4::perspective_rh(self.fov_y, aspect, near, far) * view
    }
}
