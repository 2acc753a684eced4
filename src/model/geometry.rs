//! Geometric objects, in metres, and point-in-shape tests used to rasterise materials.

use super::prism::Prism;
use super::trimesh::TriMesh;
use super::voxels::VoxelGrid;
use std::sync::Arc;

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
    /// Polygons extruded along an axis (`polygon`, a `gds` layer), in absolute coordinates.
    Prism(Arc<Prism>),
    /// A closed triangle mesh (`mesh`), in absolute coordinates.
    Mesh(Arc<TriMesh>),
    /// The voxels of a material grid (`voxels`) that hold `value`.
    Voxels {
        /// The grid.
        grid: Arc<VoxelGrid>,
        /// The value this object paints.
        value: u16,
        /// The bounding box of its voxels (min, max).
        bounds: ([f64; 3], [f64; 3]),
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
    /// The index of the scene's `[[geometry]]` entry it comes from (a thin slanted PEC wire
    /// becomes several objects, one per straight run of grid edges).
    pub geometry: usize,
}

impl Object {
    /// An object of `shape` (one held in absolute coordinates: a prism, a mesh, voxels),
    /// centred on its bounding box, from `[[geometry]]` entry `geometry`.
    pub fn at_bounds(shape: Shape, material: u8, geometry: usize) -> Object {
        let mut o = Object {
            shape,
            center: [0.0; 3],
            material,
            geometry,
        };
        let (lo, hi) = o.bounds();
        o.center = [0, 1, 2].map(|a| 0.5 * (lo[a] + hi[a]));
        o
    }

    /// Whether point `p` (m) lies inside (boundary included, with a relative tolerance of
    /// 1e-9 of the object size so that grid points exactly on a face are inside). A zero
    /// extent (a PEC sheet or line, a disc) holds the points within 1e-9 of the object's
    /// largest extent of it: the grid plane or line it was put on, to rounding.
    pub fn contains(&self, p: [f64; 3]) -> bool {
        let d = [0, 1, 2].map(|a| p[a] - self.center[a]);
        let flat = 1e-9 * self.largest_extent();
        let within = |d: f64, extent: f64| {
            if extent > 0.0 {
                d.abs() <= 0.5 * extent * (1.0 + 1e-9)
            } else {
                d.abs() <= flat
            }
        };
        match &self.shape {
            Shape::Box { size } => (0..3).all(|a| within(d[a], size[a])),
            Shape::Sphere { radius } => dot(d, d) <= radius * radius * (1.0 + 1e-9),
            Shape::Cylinder {
                radius,
                height,
                axis,
            } => {
                let along = dot(d, *axis);
                let radial2 = dot(d, d) - along * along;
                within(along, *height) && radial2 <= radius * radius * (1.0 + 1e-9)
            }
            Shape::Prism(prism) => prism.contains(p),
            Shape::Mesh(mesh) => mesh.contains(p),
            Shape::Voxels { grid, value, .. } => grid.value_at(p) == Some(*value),
        }
    }

    /// Which points of the 4 x 4 x 4 grid `xyz[0] x xyz[1] x xyz[2]` (m) are inside: bit
    /// `(a * 4 + b) * 4 + d` for point (x_a, y_b, z_d), each as [`Object::contains`] finds
    /// it. What the smoothing samples a cell with; a prism tests each column once.
    pub fn sample_mask(&self, xyz: [[f64; 4]; 3]) -> u64 {
        let (lo, hi) = self.bounds();
        // Outside the bounds by more than the faces' tolerance: none of them.
        let slack = 1e-6 * self.largest_extent();
        let apart = (0..3).any(|a| {
            let (mn, mx) = xyz[a]
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(m, n), &v| {
                    (m.min(v), n.max(v))
                });
            mx < lo[a] - slack || mn > hi[a] + slack
        });
        if apart {
            return 0;
        }
        if let Shape::Prism(prism) = &self.shape {
            return prism.sample_mask(xyz);
        }
        let mut mask = 0;
        for a in 0..4 {
            for b in 0..4 {
                for d in 0..4 {
                    if self.contains([xyz[0][a], xyz[1][b], xyz[2][d]]) {
                        mask |= 1 << ((a * 4 + b) * 4 + d);
                    }
                }
            }
        }
        mask
    }

    /// Whether every face of the object lies along a grid plane (normal to x, y or z): a box,
    /// a voxel grid, a prism of axis-aligned edges and upright walls, a mesh of axis-aligned
    /// triangles. Where one does not, a dispersive metal's surface is staircased
    /// (`src/model/smoothing.rs`).
    pub fn faces_along_grid_planes(&self) -> bool {
        let aligned = |d: [f64; 3]| {
            let len = d.iter().map(|v| v.abs()).fold(0.0, f64::max);
            d.iter().filter(|v| v.abs() > 1e-9 * len).count() <= 1
        };
        match &self.shape {
            Shape::Box { .. } | Shape::Voxels { .. } => true,
            Shape::Sphere { .. } | Shape::Cylinder { .. } => false,
            Shape::Prism(prism) => {
                prism.taper == 0.0
                    && prism.polygons.iter().all(|p| {
                        (0..p.len()).all(|i| {
                            let (a, b) = (p[i], p[(i + 1) % p.len()]);
                            aligned([b[0] - a[0], b[1] - a[1], 0.0])
                        })
                    })
            }
            Shape::Mesh(mesh) => mesh.triangles.iter().all(|[a, b, c]| {
                let (u, v) = (
                    [0, 1, 2].map(|x| b[x] - a[x]),
                    [0, 1, 2].map(|x| c[x] - a[x]),
                );
                aligned([
                    u[1] * v[2] - u[2] * v[1],
                    u[2] * v[0] - u[0] * v[2],
                    u[0] * v[1] - u[1] * v[0],
                ])
            }),
        }
    }

    /// Whether the object encloses a volume: false for a sheet, a line or a disc.
    pub fn has_volume(&self) -> bool {
        match &self.shape {
            Shape::Box { size } => size.iter().all(|&s| s > 0.0),
            Shape::Sphere { radius } => *radius > 0.0,
            Shape::Cylinder { radius, height, .. } => *radius > 0.0 && *height > 0.0,
            Shape::Prism(prism) => prism.has_volume(),
            Shape::Mesh(_) | Shape::Voxels { .. } => true,
        }
    }

    /// The largest edge of the object's bounding box (m).
    pub fn largest_extent(&self) -> f64 {
        let (lo, hi) = self.bounds();
        (0..3).map(|a| hi[a] - lo[a]).fold(0.0, f64::max)
    }

    /// Where the line `p + t e_axis` runs inside the object for `t` in `[t0, t1]` (m), as the
    /// interval `(ta, tb)` of `t`, or None when it misses it (or only touches it). The exact
    /// chord the smoothing integrates across cells that thin objects cross.
    /// An object of no volume (a sheet, a line) has no chord. A shape that may hold several
    /// (a prism, a mesh, voxels) gives its first; [`Object::chords`] gives them all.
    pub fn chord(&self, p: [f64; 3], axis: usize, t0: f64, t1: f64) -> Option<(f64, f64)> {
        if !self.has_volume() {
            return None;
        }
        if matches!(
            self.shape,
            Shape::Prism(_) | Shape::Mesh(_) | Shape::Voxels { .. }
        ) {
            return self.chords(p, axis, t0, t1).first().copied();
        }
        let d = [0, 1, 2].map(|a| p[a] - self.center[a]);
        let (ta, tb) = match &self.shape {
            Shape::Box { size } => {
                let inside = (0..3)
                    .filter(|&a| a != axis)
                    .all(|a| d[a].abs() <= 0.5 * size[a]);
                if !inside {
                    return None;
                }
                (-0.5 * size[axis] - d[axis], 0.5 * size[axis] - d[axis])
            }
            Shape::Sphere { radius } => {
                let half2 = radius * radius - (dot(d, d) - d[axis] * d[axis]);
                if half2 <= 0.0 {
                    return None;
                }
                (-half2.sqrt() - d[axis], half2.sqrt() - d[axis])
            }
            Shape::Cylinder {
                radius,
                height,
                axis: u,
            } => cylinder_chord(d, axis, *radius, *height, *u)?,
            Shape::Prism(_) | Shape::Mesh(_) | Shape::Voxels { .. } => unreachable!(),
        };
        let (ta, tb) = (ta.max(t0), tb.min(t1));
        (tb > ta).then_some((ta, tb))
    }

    /// Every interval of `t` in `[t0, t1]` where the line `p + t e_axis` runs inside, in
    /// order (the chords the smoothing integrates across thin objects).
    pub fn chords(&self, p: [f64; 3], axis: usize, t0: f64, t1: f64) -> Vec<(f64, f64)> {
        if !self.has_volume() {
            return Vec::new();
        }
        let clip = |v: Vec<(f64, f64)>| {
            v.into_iter()
                .filter_map(|(a, b)| {
                    let (a, b) = (a.max(t0), b.min(t1));
                    (b > a).then_some((a, b))
                })
                .collect()
        };
        match &self.shape {
            Shape::Prism(prism) => prism.chords(p, axis, t0, t1),
            Shape::Mesh(mesh) => clip(mesh.spans(p, axis)),
            Shape::Voxels { grid, value, .. } => clip(voxel_runs(grid, *value, p, axis, t0, t1)),
            _ => self.chord(p, axis, t0, t1).into_iter().collect(),
        }
    }

    /// Axis-aligned bounding box (min, max) in metres.
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        let half = match &self.shape {
            Shape::Prism(prism) => return prism.bounds(),
            Shape::Mesh(mesh) => return mesh.bounds(),
            Shape::Voxels { bounds, .. } => return *bounds,
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

/// The interval of `t` where `d + t e_axis` (relative to the cylinder's centre) lies inside a
/// cylinder of `radius` and `height` along unit vector `u`: the radial quadratic intersected
/// with the slab of the end caps.
fn cylinder_chord(
    d: [f64; 3],
    axis: usize,
    radius: f64,
    height: f64,
    u: [f64; 3],
) -> Option<(f64, f64)> {
    let along0 = dot(d, u);
    // Radial distance squared: a t^2 + b t + c.
    let a = 1.0 - u[axis] * u[axis];
    let b = 2.0 * (d[axis] - along0 * u[axis]);
    let c = dot(d, d) - along0 * along0 - radius * radius;
    let (mut lo, mut hi) = if a <= 1e-12 {
        // The line runs along the cylinder's axis: inside for every t, or never.
        if c > 0.0 {
            return None;
        }
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            return None;
        }
        let root = disc.sqrt();
        ((-b - root) / (2.0 * a), (-b + root) / (2.0 * a))
    };
    // The caps: |along0 + t u_axis| <= height / 2.
    if u[axis].abs() <= 1e-12 {
        if along0.abs() > 0.5 * height {
            return None;
        }
    } else {
        let (e0, e1) = (
            (-0.5 * height - along0) / u[axis],
            (0.5 * height - along0) / u[axis],
        );
        lo = lo.max(e0.min(e1));
        hi = hi.min(e0.max(e1));
    }
    (hi > lo).then_some((lo, hi))
}

/// The runs of the line `p + t e_axis`, `t` in `[t0, t1]`, through voxels holding `value`:
/// the line crosses voxel faces at known places, so each run is exact.
fn voxel_runs(
    grid: &VoxelGrid,
    value: u16,
    p: [f64; 3],
    axis: usize,
    t0: f64,
    t1: f64,
) -> Vec<(f64, f64)> {
    let (lo, hi) = (grid.lo[axis], grid.hi[axis]);
    let n = grid.shape[axis];
    let step = (hi - lo) / n as f64;
    let (a, b) = (t0.max(lo), t1.min(hi));
    let mut out: Vec<(f64, f64)> = Vec::new();
    if b <= a {
        return out;
    }
    let first = (((a - lo) / step).floor().max(0.0) as usize).min(n - 1);
    let last = (((b - lo) / step).ceil() as usize).clamp(first + 1, n);
    for i in first..last {
        let (s, e) = (
            (lo + step * i as f64).max(a),
            (lo + step * (i + 1) as f64).min(b),
        );
        let mut q = p;
        q[axis] = 0.5 * (s + e);
        if e > s && grid.value_at(q) == Some(value) {
            match out.last_mut() {
                Some(run) if run.1 >= s => run.1 = e,
                _ => out.push((s, e)),
            }
        }
    }
    out
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
            geometry: 0,
        };
        assert!(c.contains([0.5, 1.9, 0.5]));
        assert!(!c.contains([0.0, 2.1, 0.0]));
        assert!(!c.contains([0.9, 0.0, 0.9]));
        let (lo, hi) = c.bounds();
        assert_eq!(lo, [-1.0, -2.0, -1.0]);
        assert_eq!(hi, [1.0, 2.0, 1.0]);
    }

    /// The chord of each shape against the point test: the points of the line strictly
    /// between the chord's ends are inside, those beyond are outside.
    #[test]
    fn chords_agree_with_the_point_test() {
        let shapes = [
            Shape::Box {
                size: [1.0, 0.4, 2.0],
            },
            Shape::Sphere { radius: 0.7 },
            Shape::Cylinder {
                radius: 0.5,
                height: 1.5,
                axis: [0.6, 0.0, 0.8],
            },
            Shape::Cylinder {
                radius: 0.3,
                height: 1.0,
                axis: [0.0, 1.0, 0.0],
            },
        ];
        for shape in shapes {
            let o = Object {
                shape,
                center: [0.1, -0.05, 0.2],
                material: 1,
                geometry: 0,
            };
            for axis in 0..3 {
                for n in 0..50 {
                    let p = [0, 1, 2].map(|a| 0.37 * ((n * (a + 3)) % 11) as f64 / 11.0 - 0.15);
                    let along = |t: f64| {
                        let mut q = p;
                        q[axis] += t;
                        q
                    };
                    match o.chord(p, axis, -3.0, 3.0) {
                        Some((ta, tb)) => {
                            assert!(o.contains(along(0.5 * (ta + tb))));
                            assert!(o.contains(along(ta + 1e-6)) && o.contains(along(tb - 1e-6)));
                            assert!(!o.contains(along(ta - 1e-6)) && !o.contains(along(tb + 1e-6)));
                        }
                        None => {
                            assert!((0..600).all(|s| !o.contains(along(-3.0 + 0.01 * s as f64))))
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_sheet_holds_its_plane_to_rounding() {
        let sheet = Object {
            shape: Shape::Box {
                size: [2.0, 0.0, 1.0],
            },
            center: [0.0, 0.5, 0.0],
            material: 1,
            geometry: 0,
        };
        assert!(sheet.contains([0.3, 0.5 + 1e-12, 0.2]));
        assert!(!sheet.contains([0.3, 0.5 + 1e-6, 0.2]));
        assert!(!sheet.contains([1.3, 0.5, 0.2]));
    }
}
