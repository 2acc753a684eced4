//! What terminates each face of the domain: the kinds a scene names in `[boundaries]`, and a
//! PML face's grading parameters. Below both the grid (which reads beyond a face when it
//! interpolates) and the CPML profiles (built from these on the grid).

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
