//! Geometric objects, in metres, and point-in-shape tests used to rasterise materials.

/// A shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Axis-aligned box with its edge lengths.
    Box {
        /// Edge lengths (m).
        size: [f64; 3],
    },
    /// Sphere.
    Sphere {
        /// Radius (m).
        radius: f64,
    },
    /// Circular cylinder along a unit axis, centred on the object's centre.
    Cylinder {
        /// Radius (m).
        radius: f64,
        /// Length along the axis (m).
        height: f64,
        /// Unit axis vector.
        axis: [f64; 3],
    },
}

/// A shape filled with a material.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// The shape.
    pub shape: Shape,
    /// Centre (m).
    pub center: [f64; 3],
    /// Material id.
    pub material: u8,
}

impl Object {
    /// Whether point `p` (m) lies inside (boundary included, with a relative tolerance of
    /// 1e-9 of the object size so that grid points exactly on a face are inside).
    pub fn contains(&self, p: [f64; 3]) -> bool {
        let d = [0, 1, 2].map(|a| p[a] - self.center[a]);
        match &self.shape {
            Shape::Box { size } => (0..3).all(|a| d[a].abs() <= 0.5 * size[a] * (1.0 + 1e-9)),
            Shape::Sphere { radius } => dot(d, d) <= radius * radius * (1.0 + 1e-9),
            Shape::Cylinder {
                radius,
                height,
                axis,
            } => {
                let along = dot(d, *axis);
                let radial2 = dot(d, d) - along * along;
                along.abs() <= 0.5 * height * (1.0 + 1e-9)
                    && radial2 <= radius * radius * (1.0 + 1e-9)
            }
        }
    }

    /// Axis-aligned bounding box (min, max) in metres.
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        let half = match &self.shape {
            Shape::Box { size } => size.map(|s| 0.5 * s),
            Shape::Sphere { radius } => [*radius; 3],
            Shape::Cylinder {
                radius,
                height,
                axis,
            } => axis.map(|a| 0.5 * height * a.abs() + radius * (1.0 - a * a).max(0.0).sqrt()),
        };
        (
            [0, 1, 2].map(|a| self.center[a] - half[a]),
            [0, 1, 2].map(|a| self.center[a] + half[a]),
        )
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cylinder_along_y() {
        let c = Object {
            shape: Shape::Cylinder {
                radius: 1.0,
                height: 4.0,
                axis: [0.0, 1.0, 0.0],
            },
            center: [0.0; 3],
            material: 1,
        };
        assert!(c.contains([0.5, 1.9, 0.5]));
        assert!(!c.contains([0.0, 2.1, 0.0]));
        assert!(!c.contains([0.9, 0.0, 0.9]));
        let (lo, hi) = c.bounds();
        assert_eq!(lo, [-1.0, -2.0, -1.0]);
        assert_eq!(hi, [1.0, 2.0, 1.0]);
    }
}
