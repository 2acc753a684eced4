//! Grid geometry and field components.

use super::pml::BoundaryKind;
use super::space::{Axis, C0};

/// Floating-point precision of the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// 32-bit floats (the default: half the memory traffic).
    F32,
    /// 64-bit floats.
    F64,
}

impl Precision {
    /// Bytes per field value.
    pub fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
    /// "f32" or "f64".
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// A face of the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Face {
    /// Normal axis.
    pub axis: Axis,
    /// True for the maximum-coordinate face.
    pub high: bool,
}

/// One of the six field components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Component {
    /// E along x, at (i+1/2, j, k).
    Ex = 0,
    /// E along y, at (i, j+1/2, k).
    Ey = 1,
    /// E along z, at (i, j, k+1/2).
    Ez = 2,
    /// H along x, at (i, j+1/2, k+1/2).
    Hx = 3,
    /// H along y, at (i+1/2, j, k+1/2).
    Hy = 4,
    /// H along z, at (i+1/2, j+1/2, k).
    Hz = 5,
}

impl Component {
    /// All six, E first.
    pub const ALL: [Component; 6] = [
        Component::Ex,
        Component::Ey,
        Component::Ez,
        Component::Hx,
        Component::Hy,
        Component::Hz,
    ];
    /// "Ex", "Ey", ...
    pub fn name(self) -> &'static str {
        ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"][self as usize]
    }
    /// Parse "Ex".."Hz" (case-sensitive, as written in scenes and HDF5).
    pub fn parse(s: &str) -> Option<Component> {
        Component::ALL.iter().copied().find(|c| c.name() == s)
    }
    /// True for Ex, Ey, Ez.
    pub fn is_electric(self) -> bool {
        (self as usize) < 3
    }
    /// The axis the component points along.
    pub fn axis(self) -> Axis {
        Axis::ALL[self as usize % 3]
    }
    /// Yee staggering in units of a cell: half-cell offsets along x, y, z.
    pub fn offset(self) -> [f64; 3] {
        match self {
            Component::Ex => [0.5, 0.0, 0.0],
            Component::Ey => [0.0, 0.5, 0.0],
            Component::Ez => [0.0, 0.0, 0.5],
            Component::Hx => [0.0, 0.5, 0.5],
            Component::Hy => [0.5, 0.0, 0.5],
            Component::Hz => [0.5, 0.5, 0.0],
        }
    }
}

/// The Yee grid: shape, spacing, origin and time step.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Cells along x, y, z.
    pub shape: [usize; 3],
    /// Cell size in metres along x, y, z.
    pub cell: [f64; 3],
    /// Coordinates (m) of grid node (0, 0, 0): the minimum corner of the domain.
    pub origin: [f64; 3],
    /// Time step in seconds.
    pub dt: f64,
    /// Number of time steps.
    pub steps: usize,
}

impl Grid {
    /// Total number of cells.
    pub fn cells(&self) -> u64 {
        self.shape.iter().map(|&n| n as u64).product()
    }
    /// The largest stable time step: the 3D Courant limit 1 / (c sqrt(1/dx^2 + 1/dy^2 + 1/dz^2)).
    pub fn courant_limit(cell: [f64; 3]) -> f64 {
        Self::courant_limit_of(cell, [false; 3])
    }

    /// The flat axes of a grid of `shape` whose faces along each axis are periodic where
    /// `periodic[a]` says so: one cell between periodic faces, where every derivative
    /// vanishes. None when every axis is such (nothing would move: the 3-D rules apply).
    pub fn flat_axes_of(shape: [usize; 3], periodic: [bool; 3]) -> [bool; 3] {
        let flat = [0, 1, 2].map(|a| shape[a] == 1 && periodic[a]);
        if flat.iter().all(|&f| f) {
            [false; 3]
        } else {
            flat
        }
    }

    /// The Courant limit without the axes marked `flat` (one cell between periodic faces,
    /// where every derivative vanishes): the 2-D limit 1 / (c sqrt(1/dx^2 + 1/dy^2)) for a grid
    /// flat along z, the 1-D limit dx / c for one flat along y and z.
    pub fn courant_limit_of(cell: [f64; 3], flat: [bool; 3]) -> f64 {
        let s: f64 = (0..3)
            .filter(|&a| !flat[a])
            .map(|a| 1.0 / (cell[a] * cell[a]))
            .sum();
        1.0 / (C0 * s.sqrt())
    }
    /// Physical position (m) of `component` at fractional grid index `index`.
    pub fn position(&self, component: Component, index: [f64; 3]) -> [f64; 3] {
        let off = component.offset();
        [0, 1, 2].map(|a| self.origin[a] + (index[a] + off[a]) * self.cell[a])
    }
    /// The grid index of `component` nearest to physical point `p`, clamped into the grid.
    pub fn nearest_index(&self, component: Component, p: [f64; 3]) -> [usize; 3] {
        let off = component.offset();
        [0, 1, 2].map(|a| {
            let f = (p[a] - self.origin[a]) / self.cell[a] - off[a];
            (f.round().max(0.0) as usize).min(self.shape[a] - 1)
        })
    }
    /// The grid points of `component` around physical point `p` and their trilinear weights
    /// (corners with zero weight left out; a point on a grid plane reads that plane alone).
    ///
    /// In the last half cell next to a face the second neighbour along an axis lies on or
    /// beyond the face, and `faces` says what it is: on a periodic axis the first plane of the
    /// other end; on a PEC wall (or the PEC behind a PML) zero for the components that vanish
    /// there (tangential E and normal H sit on the wall) and the mirror image for the others
    /// (normal E and tangential H, half a cell inside, are even about the wall); on a PMC wall
    /// the opposite parities, so the image of normal E and tangential H is the negated first
    /// plane. Every point of the domain is therefore interpolated on the component's own grid,
    /// extended by the boundary, and the weights need not sum to 1 next to a wall.
    pub fn stencil(
        &self,
        component: Component,
        p: [f64; 3],
        faces: &[[BoundaryKind; 2]; 3],
    ) -> Vec<([usize; 3], f64)> {
        let off = component.offset();
        let per_axis: Vec<Vec<(usize, f64)>> = (0..3)
            .map(|a| {
                let n = self.shape[a];
                let half = off[a] > 0.0;
                // Fractional index on the component's grid; points are inside the domain
                // (to rounding), which spans [-off, n - off].
                let f = ((p[a] - self.origin[a]) / self.cell[a] - off[a])
                    .clamp(-off[a], n as f64 - off[a]);
                let i0 = f.floor();
                let t = f - i0;
                // A point on a grid plane (up to rounding) reads that plane alone.
                let (i0, t) = if t < 1e-9 {
                    (i0, 0.0)
                } else if t > 1.0 - 1e-9 {
                    (i0 + 1.0, 0.0)
                } else {
                    (i0, t)
                };
                let i0 = i0 as i64;
                let mut points: Vec<(usize, f64)> = Vec::with_capacity(2);
                for (m, w) in [(i0, 1.0 - t), (i0 + 1, t)] {
                    if w == 0.0 {
                        continue;
                    }
                    // The stored plane standing for index m and its sign, or None for a zero.
                    let image = if (0..n as i64).contains(&m) {
                        Some((m as usize, 1.0))
                    } else {
                        let high = m >= n as i64;
                        match faces[a][high as usize] {
                            BoundaryKind::Periodic => Some((if high { 0 } else { n - 1 }, 1.0)),
                            // Integer-aligned components at m = n sit on the wall: zero.
                            BoundaryKind::Pec | BoundaryKind::Pml(_) if !half => None,
                            BoundaryKind::Pec | BoundaryKind::Pml(_) => {
                                Some((if high { n - 1 } else { 0 }, 1.0))
                            }
                            BoundaryKind::Pmc if !half => None,
                            BoundaryKind::Pmc => Some((if high { n - 1 } else { 0 }, -1.0)),
                        }
                    };
                    if let Some((i, sign)) = image {
                        match points.iter_mut().find(|q| q.0 == i) {
                            Some(q) => q.1 += sign * w,
                            None => points.push((i, sign * w)),
                        }
                    }
                }
                points.retain(|q| q.1 != 0.0);
                points
            })
            .collect();
        let mut out = Vec::new();
        for &(i, wi) in &per_axis[0] {
            for &(j, wj) in &per_axis[1] {
                for &(k, wk) in &per_axis[2] {
                    out.push(([i, j, k], wi * wj * wk));
                }
            }
        }
        out
    }

    /// Domain extent (m) along each axis.
    pub fn size(&self) -> [f64; 3] {
        [0, 1, 2].map(|a| self.shape[a] as f64 * self.cell[a])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trilinear weights sum to one and reproduce the requested point from the staggered grid
    /// positions of the component (so a linear field is interpolated exactly).
    #[test]
    fn stencils_reproduce_the_point() {
        let g = Grid {
            shape: [10, 8, 6],
            cell: [0.1, 0.2, 0.3],
            origin: [-0.5, -0.8, -0.9],
            dt: 1e-18,
            steps: 1,
        };
        let faces = [[BoundaryKind::Pec; 2]; 3];
        for c in Component::ALL {
            for p in [[0.013, -0.27, 0.31], [-0.3, 0.5, -0.66], [0.0, 0.0, 0.0]] {
                let s = g.stencil(c, p, &faces);
                assert!(s.len() <= 8);
                assert!((s.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-12);
                for (a, &target) in p.iter().enumerate() {
                    let at: f64 = s
                        .iter()
                        .map(|(i, w)| w * g.position(c, i.map(|v| v as f64))[a])
                        .sum();
                    assert!(
                        (at - target).abs() < 1e-12,
                        "{c:?} axis {a}: {at} vs {target}"
                    );
                }
            }
        }
        // On a grid point the stencil is that point alone.
        let on = g.position(Component::Ez, [3.0, 4.0, 2.0]);
        assert_eq!(g.stencil(Component::Ez, on, &faces), vec![([3, 4, 2], 1.0)]);
    }
}
