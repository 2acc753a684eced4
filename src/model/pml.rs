//! Boundaries of the domain and the convolutional PML (CPML) profiles.
//!
//! The CPML follows Roden and Gedney (2000) with the complex-frequency-shifted stretch
//! s = kappa + sigma / (alpha + j omega eps0). Along each axis the auxiliary psi arrays exist
//! only for the layers inside the PML: the `lo` cells next to the minimum face and the `hi`
//! cells next to the maximum face. Every grid index in a layer has three coefficients
//! (b, c, 1/kappa); E and H sit half a cell apart, so each has its own set.

use super::faces::{BoundaryKind, PmlParams};
use super::grid::Grid;
use super::space::{Axis, EPS0, ETA0};

/// All six faces, `faces[axis][0]` = min, `[axis][1]` = max.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundaries {
    /// Face kinds.
    pub faces: [[BoundaryKind; 2]; 3],
    /// CPML coefficient profiles per axis.
    pub profiles: [AxisProfile; 3],
    /// The Bloch phase of each periodic axis, in periods of 2 pi (0 on every other axis and on
    /// a plain periodic one): a wave of wavevector k along a Bloch axis of length L has phase
    /// k L / (2 pi), positive for a wave travelling towards +axis (Meep's `k_point`). With
    /// yee's e^{+i w t} phasors (a DFT weighs by e^{-i w t}) its fields repeat as
    /// F(x + L) = F(x) e^{-i 2 pi phase}.
    pub bloch: [f64; 3],
}

impl Boundaries {
    /// Build the profiles for the grid of `shape`, `cell` and `dt`.
    pub fn new(faces: [[BoundaryKind; 2]; 3], shape: [usize; 3], cell: [f64; 3], dt: f64) -> Self {
        let profiles =
            [0, 1, 2].map(|a| AxisProfile::new(Axis::ALL[a], faces[a], shape[a], cell[a], dt));
        Boundaries {
            faces,
            profiles,
            bloch: [0.0; 3],
        }
    }
    /// Build the profiles for `grid`: on a uniform axis exactly [`Boundaries::new`]; on a graded
    /// one each layer's depth is measured in metres along the actual node coordinates and its
    /// optimal sigma uses the local cell (see [`AxisProfile::graded`]), so a PML whose `cells`
    /// are of unequal size still grades smoothly from its inner face to the wall.
    pub fn on_grid(faces: [[BoundaryKind; 2]; 3], grid: &Grid) -> Self {
        let profiles = [0, 1, 2].map(|a| match &grid.lines[a] {
            None => AxisProfile::new(Axis::ALL[a], faces[a], grid.shape[a], grid.cell[a], grid.dt),
            Some(lines) => AxisProfile::graded(faces[a], lines, grid.dt),
        });
        Boundaries {
            faces,
            profiles,
            bloch: [0.0; 3],
        }
    }
    /// The kind of one face.
    pub fn face(&self, axis: Axis, high: bool) -> BoundaryKind {
        self.faces[axis as usize][high as usize]
    }
    /// The Bloch phase of `axis` reduced to (-1/2, 1/2], or None where the axis repeats
    /// plainly (not periodic, or a whole number of periods): only then does a run carry the
    /// imaginary field set.
    pub fn bloch_phase(&self, axis: usize) -> Option<f64> {
        let p = self.bloch[axis] - self.bloch[axis].round();
        (p != 0.0 && self.faces[axis][0] == BoundaryKind::Periodic).then_some(p)
    }
    /// True if some axis has a Bloch phase ([`Boundaries::bloch_phase`]): the fields are
    /// complex, carried as two real sets.
    pub fn has_bloch(&self) -> bool {
        (0..3).any(|a| self.bloch_phase(a).is_some())
    }
}

/// CPML coefficients of the layers along one axis.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AxisProfile {
    /// Cells in the minimum-side layer.
    pub lo: usize,
    /// Cells in the maximum-side layer.
    pub hi: usize,
    /// Cells along the axis.
    pub n: usize,
    /// (b, c, 1/kappa) for E nodes at integer positions, one per layer index.
    pub e: Vec<[f64; 3]>,
    /// (b, c, 1/kappa) for H nodes at half-integer positions, one per layer index.
    pub h: Vec<[f64; 3]>,
}

impl AxisProfile {
    fn new(axis: Axis, faces: [BoundaryKind; 2], n: usize, d: f64, dt: f64) -> Self {
        let _ = axis;
        let lo = faces[0].pml_cells();
        let hi = faces[1].pml_cells();
        let mut prof = AxisProfile {
            lo,
            hi,
            n,
            e: Vec::new(),
            h: Vec::new(),
        };
        for l in 0..lo + hi {
            let i = prof.global_index(l) as f64;
            let (params, de, dh) = if l < lo {
                let BoundaryKind::Pml(p) = faces[0] else {
                    unreachable!()
                };
                let t = lo as f64;
                (p, (t - i) / t, (t - i - 0.5) / t)
            } else {
                let BoundaryKind::Pml(p) = faces[1] else {
                    unreachable!()
                };
                let t = hi as f64;
                let start = (n - hi) as f64;
                (p, (i - start) / t, (i + 0.5 - start) / t)
            };
            prof.e
                .push(coefficients(&params, de.clamp(0.0, 1.0), d, dt));
            prof.h
                .push(coefficients(&params, dh.clamp(0.0, 1.0), d, dt));
        }
        prof
    }

    /// The profile along a graded axis of node coordinates `lines` (n + 1 values): the layer of
    /// `cells` at a face spans the first (last) `cells` cells, whatever their sizes. The depth
    /// of an E node (a node) or an H node (a cell centre) is its distance from the layer's
    /// inner face over the layer's thickness in metres, and sigma_max = 0.8 (m + 1) / (eta0 d)
    /// takes d as the local cell there: the dual cell (half the two neighbouring cells) for an
    /// E node, the cell itself for an H node. On equal cells this is the uniform profile (to
    /// rounding: uniform axes take `AxisProfile::new`, which is exact).
    pub fn graded(faces: [BoundaryKind; 2], lines: &[f64], dt: f64) -> Self {
        let n = lines.len() - 1;
        let lo = faces[0].pml_cells();
        let hi = faces[1].pml_cells();
        let mut prof = AxisProfile {
            lo,
            hi,
            n,
            e: Vec::new(),
            h: Vec::new(),
        };
        let cell = |i: usize| lines[i + 1] - lines[i];
        let centre = |i: usize| 0.5 * (lines[i] + lines[i + 1]);
        for l in 0..lo + hi {
            let i = prof.global_index(l);
            let (params, de, dh) = if l < lo {
                let BoundaryKind::Pml(p) = faces[0] else {
                    unreachable!()
                };
                let (inner, t) = (lines[lo], lines[lo] - lines[0]);
                (p, (inner - lines[i]) / t, (inner - centre(i)) / t)
            } else {
                let BoundaryKind::Pml(p) = faces[1] else {
                    unreachable!()
                };
                let (inner, t) = (lines[n - hi], lines[n] - lines[n - hi]);
                (p, (lines[i] - inner) / t, (centre(i) - inner) / t)
            };
            let dual = 0.5 * (cell(i.saturating_sub(1)) + cell(i));
            prof.e
                .push(coefficients(&params, de.clamp(0.0, 1.0), dual, dt));
            prof.h
                .push(coefficients(&params, dh.clamp(0.0, 1.0), cell(i), dt));
        }
        prof
    }

    /// Number of layer indices (lo + hi).
    pub fn layers(&self) -> usize {
        self.lo + self.hi
    }

    /// Global grid index of layer index `l`.
    pub fn global_index(&self, l: usize) -> usize {
        if l < self.lo {
            l
        } else {
            self.n - self.hi + (l - self.lo)
        }
    }

    /// Layer index of global grid index `i`, if it lies in a PML layer.
    pub fn layer_of(&self, i: usize) -> Option<usize> {
        if i < self.lo {
            Some(i)
        } else if i >= self.n - self.hi {
            Some(self.lo + i - (self.n - self.hi))
        } else {
            None
        }
    }
}

/// (b, c, 1/kappa) at normalised depth `depth` (0 at the inner face, 1 at the outer wall).
fn coefficients(p: &PmlParams, depth: f64, d: f64, dt: f64) -> [f64; 3] {
    let m = p.order;
    let sigma_max = p.sigma_factor * 0.8 * (m + 1.0) / (ETA0 * d);
    let grade = depth.powf(m);
    let sigma = sigma_max * grade;
    let kappa = 1.0 + (p.kappa_max - 1.0) * grade;
    let alpha = p.alpha_max * (1.0 - depth);
    let b = (-(sigma / kappa + alpha) * dt / EPS0).exp();
    let denom = sigma * kappa + kappa * kappa * alpha;
    let c = if denom > 0.0 {
        sigma / denom * (b - 1.0)
    } else {
        0.0
    };
    [b, c, 1.0 / kappa]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_map_to_both_ends() {
        let f = [
            BoundaryKind::Pml(PmlParams::with_cells(3)),
            BoundaryKind::Pml(PmlParams::with_cells(2)),
        ];
        let p = AxisProfile::new(Axis::X, f, 20, 1e-8, 1e-17);
        assert_eq!(p.layers(), 5);
        assert_eq!(
            (0..5).map(|l| p.global_index(l)).collect::<Vec<_>>(),
            vec![0, 1, 2, 18, 19]
        );
        assert_eq!(p.layer_of(19), Some(4));
        assert_eq!(p.layer_of(5), None);
        // The inner E node of the low layer has zero depth: b = 1, c = 0 (no absorption).
        assert!(p.e[0][1] < 0.0 && p.e[2][1] < 0.0);
        assert_eq!(p.e[3], [1.0, 0.0, 1.0]);
    }

    /// On equal cells the graded profile is the uniform one (to rounding of the node
    /// coordinates), and on cells growing towards the wall the depth follows the metres: the
    /// E node halfway through the layer's thickness has sigma at 1/2^m of the peak.
    #[test]
    fn graded_profile_follows_the_coordinates() {
        let f = [
            BoundaryKind::Pml(PmlParams::with_cells(4)),
            BoundaryKind::Pml(PmlParams::with_cells(4)),
        ];
        let (d, dt) = (1e-8, 1e-17);
        let lines: Vec<f64> = (0..=20).map(|i| i as f64 * d).collect();
        let u = AxisProfile::new(Axis::X, f, 20, d, dt);
        let g = AxisProfile::graded(f, &lines, dt);
        for (a, b) in u.e.iter().chain(&u.h).zip(g.e.iter().chain(&g.h)) {
            for k in 0..3 {
                assert!(
                    (a[k] - b[k]).abs() <= 1e-12 * a[k].abs().max(1e-30),
                    "{a:?} {b:?}"
                );
            }
        }
        // Cells 1, 1, 2, 4 (units of d) from the wall inwards on the low side: thickness 8 d.
        let mut lines = vec![0.0, 4.0, 6.0, 7.0, 8.0];
        lines.extend((9..=20).map(|i| i as f64));
        let lines: Vec<f64> = lines.iter().map(|x| x * d).collect();
        let f = [
            BoundaryKind::Pml(PmlParams::with_cells(4)),
            BoundaryKind::Pec,
        ];
        let g = AxisProfile::graded(f, &lines, dt);
        // E node 1 at 4 d: depth (8 - 4) / 8 = 1/2; its local cell is (4 + 2) / 2 = 3 d.
        let half = coefficients(&PmlParams::with_cells(4), 0.5, 3.0 * d, dt);
        assert_eq!(g.e[1], half);
    }
}
