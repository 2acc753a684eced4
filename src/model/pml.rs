//! Boundaries of the domain and the convolutional PML (CPML) profiles.
//!
//! The CPML follows Roden and Gedney (2000) with the complex-frequency-shifted stretch
//! s = kappa + sigma / (alpha + j omega eps0). Along each axis the auxiliary psi arrays exist
//! only for the layers inside the PML: the `lo` cells next to the minimum face and the `hi`
//! cells next to the maximum face. Every grid index in a layer has three coefficients
//! (b, c, 1/kappa); E and H sit half a cell apart, so each has its own set.

use super::grid::{Axis, EPS0, ETA0};

/// The grading of one PML face.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PmlParams {
    /// Thickness in cells.
    pub cells: usize,
    /// Polynomial grading order m of sigma and kappa.
    pub order: f64,
    /// Peak sigma as a multiple of the optimum 0.8 (m+1) / (eta0 d).
    pub sigma_factor: f64,
    /// Peak kappa.
    pub kappa_max: f64,
    /// Peak alpha (S/m) at the inner face, linear down to 0 at the outer face.
    pub alpha_max: f64,
}

impl PmlParams {
    /// The defaults: m = 3, the optimal sigma, kappa 1 and alpha 0 (no frequency shift: the
    /// plain CPML, whose reflection a 10-cell layer keeps below -85 dB in the tests).
    pub fn with_cells(cells: usize) -> Self {
        PmlParams {
            cells,
            order: 3.0,
            sigma_factor: 1.0,
            kappa_max: 1.0,
            alpha_max: 0.0,
        }
    }
}

/// What terminates a face.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BoundaryKind {
    /// Perfect electric conductor: tangential E is zero on the face.
    Pec,
    /// Perfect magnetic conductor: tangential H is zero on the face (minimum faces only).
    Pmc,
    /// The opposite face is the same plane.
    Periodic,
    /// An absorbing CPML backed by a PEC wall.
    Pml(PmlParams),
}

impl BoundaryKind {
    /// PML thickness in cells (0 for other kinds).
    pub fn pml_cells(&self) -> usize {
        match self {
            BoundaryKind::Pml(p) => p.cells,
            _ => 0,
        }
    }
    /// "pec", "pmc", "periodic" or "pml".
    pub fn name(&self) -> &'static str {
        match self {
            BoundaryKind::Pec => "pec",
            BoundaryKind::Pmc => "pmc",
            BoundaryKind::Periodic => "periodic",
            BoundaryKind::Pml(_) => "pml",
        }
    }
    /// True where tangential E is forced to zero on the face (PEC, and the PEC behind a PML).
    pub fn zeroes_tangential_e(&self) -> bool {
        matches!(self, BoundaryKind::Pec | BoundaryKind::Pml(_))
    }
}

/// All six faces, `faces[axis][0]` = min, `[axis][1]` = max.
#[derive(Debug, Clone, PartialEq)]
pub struct Boundaries {
    /// Face kinds.
    pub faces: [[BoundaryKind; 2]; 3],
    /// CPML coefficient profiles per axis.
    pub profiles: [AxisProfile; 3],
}

impl Boundaries {
    /// Build the profiles for the grid of `shape`, `cell` and `dt`.
    pub fn new(faces: [[BoundaryKind; 2]; 3], shape: [usize; 3], cell: [f64; 3], dt: f64) -> Self {
        let profiles =
            [0, 1, 2].map(|a| AxisProfile::new(Axis::ALL[a], faces[a], shape[a], cell[a], dt));
        Boundaries { faces, profiles }
    }
    /// The kind of one face.
    pub fn face(&self, axis: Axis, high: bool) -> BoundaryKind {
        self.faces[axis as usize][high as usize]
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
}
