//! Grid geometry and field components.

use super::faces::BoundaryKind;
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
///
/// Each axis is either uniform (every cell `cell[a]` wide) or graded: a tensor-product mesh
/// whose node coordinates `lines[a]` are listed (openEMS, Tidy3D). Every position, index and
/// cell-size question goes through the methods below ([`Grid::primal`], [`Grid::dual`],
/// [`Grid::coordinate`], [`Grid::fractional_index`]), which on a uniform axis compute exactly
/// what the uniform formulas did (`origin + f * cell`), so a uniform grid's numbers do not
/// change by a bit.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Cells along x, y, z.
    pub shape: [usize; 3],
    /// Cell size in metres along x, y, z on a uniform axis; on a graded axis the largest cell
    /// (the background cell), for messages and defaults only: never a cell's size there.
    pub cell: [f64; 3],
    /// Coordinates (m) of grid node (0, 0, 0): the minimum corner of the domain.
    pub origin: [f64; 3],
    /// Time step in seconds.
    pub dt: f64,
    /// Number of time steps.
    pub steps: usize,
    /// Per axis: `None` for a uniform axis, or the node coordinates (m) of a graded one:
    /// `shape[a] + 1` increasing values, the first equal to `origin[a]`.
    pub lines: [Option<Vec<f64>>; 3],
}

impl Grid {
    /// A grid uniform along every axis.
    pub fn uniform(
        shape: [usize; 3],
        cell: [f64; 3],
        origin: [f64; 3],
        dt: f64,
        steps: usize,
    ) -> Grid {
        Grid {
            shape,
            cell,
            origin,
            dt,
            steps,
            lines: [None, None, None],
        }
    }

    /// True if every axis is uniform.
    pub fn is_uniform(&self) -> bool {
        self.lines.iter().all(|l| l.is_none())
    }

    /// The node coordinates (m) along `axis` (0..3): `shape[axis] + 1` values, for uniform
    /// axes too (computed as `origin + i * cell`).
    pub fn nodes(&self, axis: usize) -> Vec<f64> {
        (0..=self.shape[axis])
            .map(|i| self.coordinate(axis, i as f64))
            .collect()
    }

    /// The size (m) along `axis` of primal cell `i` (0..shape): the distance between nodes i
    /// and i + 1, the step of the H update's derivatives. Indices past either end take the
    /// end cell (the mirror image a wall implies) or, on a periodic axis, the caller wraps.
    pub fn primal(&self, axis: usize, i: isize) -> f64 {
        match &self.lines[axis] {
            None => self.cell[axis],
            Some(l) => {
                let n = self.shape[axis] as isize;
                let i = i.clamp(0, n - 1) as usize;
                l[i + 1] - l[i]
            }
        }
    }

    /// The size (m) along `axis` of dual cell `i` (0..shape): the distance between the centres
    /// of primal cells i - 1 and i, the step of the E update's derivatives at node i. At the
    /// minimum face the missing cell -1 is cell `shape - 1` when `periodic`, else cell 0 (the
    /// image of the first cell in the wall).
    pub fn dual(&self, axis: usize, i: usize, periodic: bool) -> f64 {
        match &self.lines[axis] {
            None => self.cell[axis],
            Some(_) => {
                let n = self.shape[axis] as isize;
                let below = if i == 0 {
                    if periodic {
                        n - 1
                    } else {
                        0
                    }
                } else {
                    i as isize - 1
                };
                0.5 * (self.primal(axis, below) + self.primal(axis, i as isize))
            }
        }
    }

    /// The smallest cell along each axis (the time step's bound).
    pub fn min_cell(&self) -> [f64; 3] {
        [0, 1, 2].map(|a| match &self.lines[a] {
            None => self.cell[a],
            Some(l) => l
                .windows(2)
                .map(|w| w[1] - w[0])
                .fold(f64::INFINITY, f64::min),
        })
    }

    /// The coordinate (m) along `axis` of fractional node index `f` (node i at f = i, the
    /// centre of cell i at f = i + 1/2): `origin + f * cell` on a uniform axis; on a graded one
    /// linear within each cell, and past either end continued with the end cell's size.
    pub fn coordinate(&self, axis: usize, f: f64) -> f64 {
        match &self.lines[axis] {
            None => self.origin[axis] + f * self.cell[axis],
            Some(l) => {
                let n = self.shape[axis];
                let c = (f.floor().max(0.0) as usize).min(n - 1);
                l[c] + (f - c as f64) * (l[c + 1] - l[c])
            }
        }
    }

    /// The fractional node index of coordinate `x` (m) along `axis`: the inverse of
    /// [`Grid::coordinate`].
    pub fn fractional_index(&self, axis: usize, x: f64) -> f64 {
        match &self.lines[axis] {
            None => (x - self.origin[axis]) / self.cell[axis],
            Some(l) => {
                let n = self.shape[axis];
                // The cell whose lower node is the last one at or below x, kept in 0..n.
                let c = l.partition_point(|&v| v <= x).saturating_sub(1).min(n - 1);
                c as f64 + (x - l[c]) / (l[c + 1] - l[c])
            }
        }
    }

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
        [0, 1, 2].map(|a| self.coordinate(a, index[a] + off[a]))
    }
    /// The grid index of `component` nearest to physical point `p`, clamped into the grid.
    pub fn nearest_index(&self, component: Component, p: [f64; 3]) -> [usize; 3] {
        let off = component.offset();
        [0, 1, 2].map(|a| {
            let f = self.fractional_index(a, p[a]) - off[a];
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
                let f = (self.fractional_index(a, p[a]) - off[a]).clamp(-off[a], n as f64 - off[a]);
                let i0 = f.floor();
                // On a graded axis the component's points are not evenly spaced in the node
                // index, so the weight is the distance ratio between the two points.
                let t = match self.lines[a] {
                    None => f - i0,
                    Some(_) => {
                        let lo = self.coordinate(a, i0 + off[a]);
                        let hi = self.coordinate(a, i0 + 1.0 + off[a]);
                        ((p[a] - lo) / (hi - lo)).clamp(0.0, 1.0)
                    }
                };
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
        [0, 1, 2].map(|a| match &self.lines[a] {
            None => self.shape[a] as f64 * self.cell[a],
            Some(l) => l[self.shape[a]] - l[0],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trilinear weights sum to one and reproduce the requested point from the staggered grid
    /// positions of the component (so a linear field is interpolated exactly).
    #[test]
    fn stencils_reproduce_the_point() {
        let g = Grid::uniform([10, 8, 6], [0.1, 0.2, 0.3], [-0.5, -0.8, -0.9], 1e-18, 1);
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

    /// On a graded axis the index and coordinate maps invert each other, cells sum to the
    /// extent, and stencils still reproduce the point (trilinear on the non-uniform lines).
    #[test]
    fn graded_axes_map_both_ways() {
        let mut g = Grid::uniform([5, 4, 3], [0.1, 0.2, 0.3], [-0.25, -0.4, -0.45], 1e-18, 1);
        g.lines[0] = Some(vec![-0.25, -0.15, -0.07, -0.02, 0.1, 0.25]);
        assert!(!g.is_uniform());
        assert!((g.size()[0] - 0.5).abs() < 1e-15);
        assert!((g.min_cell()[0] - 0.05).abs() < 1e-15);
        assert_eq!(g.min_cell()[1], 0.2);
        for f in [0.0, 0.3, 1.0, 2.5, 4.99] {
            let x = g.coordinate(0, f);
            assert!((g.fractional_index(0, x) - f).abs() < 1e-12, "{f}");
        }
        assert!((g.primal(0, 2) - 0.05).abs() < 1e-15);
        assert!((g.dual(0, 2, false) - 0.065).abs() < 1e-15);
        assert!((g.dual(0, 0, true) - 0.125).abs() < 1e-15);
        assert_eq!(g.dual(1, 0, false), 0.2);
        let faces = [[BoundaryKind::Pec; 2]; 3];
        for c in Component::ALL {
            let p = [0.013, -0.1, 0.05];
            let s = g.stencil(c, p, &faces);
            let at: f64 = s
                .iter()
                .map(|(i, w)| w * g.position(c, i.map(|v| v as f64))[0])
                .sum();
            assert!((at - p[0]).abs() < 1e-12, "{c:?}: {at} {s:?}");
        }
    }
}
