//! Waveguide modes on the FDTD's own cross-section: a finite-difference eigenproblem on the
//! Yee positions of a plane normal to the propagation axis, with the same difference stencils
//! as the update, so that a mode found here is a mode of the 3-D grid.
//!
//! With propagation along x as `e^{i beta x}`, e^{-iwt}, mu = 1 and k0 = w/c, the transverse E
//! field (E_u, E_v) of a mode satisfies (Fallahkhair, Li and Murphy, J. Lightwave Technol. 26,
//! 2008; the longitudinal E eliminated by Gauss's law, div(eps E) = 0)
//!
//! ```text
//!   beta^2 E_u = k0^2 eps_u E_u - d_v (d_u E_v - d_v E_u) + d_u [ (1/eps_x) (d_u eps_u E_u + d_v eps_v E_v) ]
//!   beta^2 E_v = k0^2 eps_v E_v + d_u (d_u E_v - d_v E_u) + d_v [ (1/eps_x) (d_u eps_u E_u + d_v eps_v E_v) ]
//! ```
//!
//! (u, v) = (y, z) for a plane normal to x, and cyclically. On the Yee plane E_u sits at
//! (j + 1/2, k), E_v at (j, k + 1/2), E_x and the divergence at the node (j, k), H_x (the curl
//! term) at (j + 1/2, k + 1/2): every derivative is the update's own difference between
//! neighbouring Yee positions, over the primal step between nodes or the dual step between
//! cell centres. Walls: a PEC wall holds the E tangential to it (E_v on a u wall, E_u on a v
//! wall) and the node quantity there at zero; a periodic wall wraps. A PEC painted in the
//! plane holds every E position it covers (and the node quantity, the normal E, there) at zero,
//! as the run's update does. [`solve`] finds the modes
//! of largest beta^2 (highest n_eff) by shift-invert Arnoldi on a sparse LU (faer).

mod basis;
mod eigen;
mod fields;
mod plane;
mod prepare;

pub use crate::model::ModePlane as Plane;
pub use basis::{coupling, decompose, Amplitude};
pub use plane::{PlaneError, PlaneModes, Search};
pub use prepare::{prepare, purity, Purity};

use eigen::Scalar;
use faer::c64;
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};

/// What lies at both ends of one in-plane axis of a cross-section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wall {
    /// A perfect electric conductor at both ends (the nodes at index 0 and n).
    Pec,
    /// The axis wraps: node n is node 0.
    Periodic,
}

/// A cross-section: permittivities on the Yee positions of a plane, cell sizes and walls.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossSection {
    /// Cells along the plane's two axes (u, v).
    pub n: [usize; 2],
    /// Primal cell sizes (m) along u (`n[0]` values) and v (`n[1]`).
    pub cells: [Vec<f64>; 2],
    /// Relative permittivity at the normal component's node (j, k), at E_u (j + 1/2, k) and at
    /// E_v (j, k + 1/2), each `n[0] * n[1]` values indexed `j * n[1] + k`: its real part.
    pub eps: [Vec<f64>; 3],
    /// The permittivity's imaginary part (loss, e^{-iwt}: positive) at the same positions;
    /// empty vectors for a lossless cross-section, whose modes are real.
    pub eps_imag: [Vec<f64>; 3],
    /// Per in-plane axis, an in-plane PML: the imaginary part kappa of the coordinate stretch
    /// s = 1 + i kappa by which each step is multiplied (each d/du becomes (1/s) d/du), at
    /// half-cell resolution: entry 2 i at node i, 2 i + 1 at the centre of cell i. Empty
    /// vectors without one.
    pub stretch: [Vec<f64>; 2],
    /// Dey-Mittra weights of the faces normal to the plane that a conformal PEC surface cuts
    /// (the run's, `src/model/conformal.rs`): per face (j + 1/2, k + 1/2), `j * n[1] + k`, the
    /// factors on the curl's four terms E_v(j), E_v(j + 1), E_u(k), E_u(k + 1): each edge's
    /// free fraction over the face's used area fraction. Empty without a cut face.
    pub cut_curl: Vec<[f64; 4]>,
    /// Per E_u and E_v position, 1 over the used area fraction of the longitudinal face it
    /// bounds (normal to the other in-plane axis, along the plane's normal), which divides
    /// the longitudinal E's difference there; empty without a cut face.
    pub cut_long: [Vec<f64>; 2],
    /// Look for the modes whose n_eff is nearest this (leaky modes, or modes below a
    /// high-index substrate's), instead of the most guided (the shift of the solve).
    pub target_neff: Option<f64>,
    /// The walls of u and v.
    pub walls: [Wall; 2],
    /// Where a perfect conductor holds the field at zero, at the same positions as `eps` (the
    /// normal component's node, E_u, E_v); empty vectors where there is none.
    pub pec: [Vec<bool>; 3],
}

/// A mode of a cross-section.
#[derive(Debug, Clone, PartialEq)]
pub struct Mode {
    /// The eigenvalue beta^2 (1/m^2): its real part.
    pub beta2: f64,
    /// The eigenvalue's imaginary part (1/m^2): positive for a mode that decays along +axis in
    /// a lossy cross-section; 0 for a lossless one.
    pub beta2_imag: f64,
    /// E_u at (j + 1/2, k) and E_v at (j, k + 1/2), `j * n[1] + k`, scaled so the largest
    /// transverse value is 1. A lossy cross-section's mode is complex: this is its real part
    /// once turned so that its largest value is real (the part a source drives and a monitor
    /// projects on; its imaginary part is of the order of the loss).
    pub e: [Vec<f64>; 2],
}

impl Mode {
    /// The effective index beta / k0 at free-space wavenumber `k0` (1/m); 0 below cutoff.
    pub fn neff(&self, k0: f64) -> f64 {
        self.beta2.max(0.0).sqrt() / k0
    }

    /// The fraction of the transverse E energy in E_v (the TE fraction of a slab whose
    /// normal is u).
    pub fn v_fraction(&self) -> f64 {
        let sum = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        let (u, v) = (sum(&self.e[0]), sum(&self.e[1]));
        v / (u + v)
    }
}

/// Why a mode solve failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModeError {
    /// The shifted operator is singular (the shift sits on an eigenvalue).
    #[error("the mode operator could not be factorised near n_eff = {0}: move the shift")]
    Singular(f64),
    /// Fewer modes converged than asked for.
    #[error("{found} of {asked} modes converged")]
    Unconverged {
        /// Modes asked for.
        asked: usize,
        /// Modes found.
        found: usize,
    },
}

impl CrossSection {
    /// Unknowns: E_u then E_v over the plane.
    fn unknowns(&self) -> usize {
        2 * self.n[0] * self.n[1]
    }

    /// The dual step (m) at node `i` along `axis`: from the centre of cell i - 1 to that of
    /// cell i (wrapping on a periodic axis; at a PEC wall's node nothing is read).
    fn dual(&self, axis: usize, i: usize) -> f64 {
        let d = &self.cells[axis];
        let before = if i == 0 { d[d.len() - 1] } else { d[i - 1] };
        0.5 * (before + d[i % d.len()])
    }

    /// Index `i + step` along `axis` (step -1 or +1), wrapped on a periodic axis; None beyond
    /// a PEC wall (the value there is held at zero).
    fn step(&self, axis: usize, i: usize, step: isize) -> Option<usize> {
        let n = self.n[axis] as isize;
        let j = i as isize + step;
        match self.walls[axis] {
            Wall::Periodic => Some(j.rem_euclid(n) as usize),
            Wall::Pec => (0..n).contains(&j).then_some(j as usize),
        }
    }

    /// True where a PEC in the plane holds quantity `q` (0: the node, 1: E_u, 2: E_v) at cell
    /// `at`.
    fn held(&self, q: usize, at: usize) -> bool {
        self.pec[q].get(at).copied().unwrap_or(false)
    }

    /// The cross-section with every node that a held E_u or E_v touches held too: a node at
    /// the end of a conductor's edge is on that conductor.
    ///
    /// Painting tests each Yee position on its own, so on a staircased curve an edge's midpoint
    /// can fall inside a conductor while one of its end nodes falls outside. That node would
    /// keep Gauss's law (no charge) while the held edge ties its potential to the conductor's,
    /// and a node at a conductor's potential with no charge forces its neighbours to that
    /// potential too, and theirs: the discrete TEM mode of a coax or a microstrip (two
    /// conductors at different potentials) would not exist. Holding the node lets it carry
    /// the conductor's surface charge, as the run's update does at every node a held edge
    /// touches (its incident fluxes no longer sum to zero).
    pub fn closed(mut self) -> CrossSection {
        if self.pec[1].is_empty() && self.pec[2].is_empty() {
            return self;
        }
        let [nu, nv] = self.n;
        let mut nodes = if self.pec[0].is_empty() {
            vec![false; nu * nv]
        } else {
            self.pec[0].clone()
        };
        for j in 0..nu {
            for k in 0..nv {
                let at = j * nv + k;
                // E_u at (j + 1/2, k) joins nodes (j, k) and (j + 1, k); E_v, (j, k) and (j, k + 1).
                if self.held(1, at) {
                    nodes[at] = true;
                    if let Some(jp) = self.step(0, j, 1) {
                        nodes[jp * nv + k] = true;
                    }
                }
                if self.held(2, at) {
                    nodes[at] = true;
                    if let Some(kp) = self.step(1, k, 1) {
                        nodes[j * nv + kp] = true;
                    }
                }
            }
        }
        self.pec[0] = nodes;
        self
    }

    /// E_u at (j, k) as an unknown, None where a PEC v wall or a PEC in the plane holds it.
    fn eu(&self, j: usize, k: usize) -> Option<usize> {
        let at = j * self.n[1] + k;
        ((self.walls[1] == Wall::Periodic || k > 0) && !self.held(1, at)).then_some(at)
    }

    /// E_v at (j, k) as an unknown, None where a PEC u wall or a PEC in the plane holds it.
    fn ev(&self, j: usize, k: usize) -> Option<usize> {
        let n = self.n[0] * self.n[1];
        let at = j * self.n[1] + k;
        ((self.walls[0] == Wall::Periodic || j > 0) && !self.held(2, at)).then_some(n + at)
    }

    /// True when some position has a lossy permittivity or lies in an in-plane PML: the
    /// modes are complex.
    pub fn is_complex(&self) -> bool {
        self.eps_imag.iter().flatten().any(|&x| x != 0.0)
            || self.stretch.iter().flatten().any(|&x| x != 0.0)
    }

    /// The primal step of cell `i` along `axis`, stretched in a PML.
    fn primal_step<T: Scalar>(&self, axis: usize, i: usize) -> T {
        let h = self.cells[axis][i];
        match self.stretch[axis].get(2 * i + 1) {
            Some(&kappa) => T::from_parts(h, h * kappa),
            None => T::real(h),
        }
    }

    /// The dual step at node `i` along `axis` ([`CrossSection::dual`]), stretched in a PML.
    fn dual_step<T: Scalar>(&self, axis: usize, i: usize) -> T {
        let d = self.dual(axis, i);
        match self.stretch[axis].get(2 * (i % self.n[axis])) {
            Some(&kappa) => T::from_parts(d, d * kappa),
            None => T::real(d),
        }
    }

    /// The permittivity of quantity `q` (0: the node, 1: E_u, 2: E_v) at cell `at`, in the
    /// solve's field (its real part alone for a real solve).
    fn permittivity<T: Scalar>(&self, q: usize, at: usize) -> T {
        let imag = self.eps_imag[q].get(at).copied().unwrap_or(0.0);
        T::from_parts(self.eps[q][at], imag)
    }

    /// The node quantity (1/eps_x)(d_u eps_u E_u + d_v eps_v E_v) at node (j, k) as a
    /// combination of unknowns; empty on a PEC wall's node.
    fn divergence<T: Scalar>(&self, j: usize, k: usize) -> Vec<(usize, T)> {
        let pec_node = (self.walls[0] == Wall::Pec && j == 0)
            || (self.walls[1] == Wall::Pec && k == 0)
            || self.held(0, j * self.n[1] + k);
        if pec_node {
            return Vec::new();
        }
        let at = |j: usize, k: usize| j * self.n[1] + k;
        let inv = T::real(1.0) / self.permittivity::<T>(0, at(j, k));
        let mut out = Vec::with_capacity(4);
        let (du, dv) = (self.dual_step::<T>(0, j), self.dual_step::<T>(1, k));
        if let Some(u) = self.eu(j, k) {
            out.push((u, inv * self.permittivity::<T>(1, at(j, k)) / du));
        }
        if let Some(jm) = self.step(0, j, -1) {
            if let Some(u) = self.eu(jm, k) {
                out.push((u, T::ZERO - inv * self.permittivity::<T>(1, at(jm, k)) / du));
            }
        }
        if let Some(v) = self.ev(j, k) {
            out.push((v, inv * self.permittivity::<T>(2, at(j, k)) / dv));
        }
        if let Some(km) = self.step(1, k, -1) {
            if let Some(v) = self.ev(j, km) {
                out.push((v, T::ZERO - inv * self.permittivity::<T>(2, at(j, km)) / dv));
            }
        }
        out
    }

    /// The curl term d_u E_v - d_v E_u at (j + 1/2, k + 1/2) as a combination of unknowns.
    fn curl<T: Scalar>(&self, j: usize, k: usize) -> Vec<(usize, T)> {
        let (hu, hv) = (self.primal_step::<T>(0, j), self.primal_step::<T>(1, k));
        // On a cut face, each edge's free length over the face's free area (1 elsewhere: exact).
        let w = self
            .cut_curl
            .get(j * self.n[1] + k)
            .map_or([T::real(1.0); 4], |w| w.map(T::real));
        let (one, minus) = (T::real(1.0), T::real(-1.0));
        let mut out = Vec::with_capacity(4);
        if let Some(v) = self.step(0, j, 1).and_then(|jp| self.ev(jp, k)) {
            out.push((v, one / hu * w[1]));
        }
        if let Some(v) = self.ev(j, k) {
            out.push((v, minus / hu * w[0]));
        }
        if let Some(u) = self.step(1, k, 1).and_then(|kp| self.eu(j, kp)) {
            out.push((u, minus / hv * w[3]));
        }
        if let Some(u) = self.eu(j, k) {
            out.push((u, one / hv * w[2]));
        }
        out
    }

    /// The factor on the longitudinal E's difference next to E_u (`q` 0) or E_v (1) at `at`:
    /// 1 over its longitudinal face's used area fraction (1 away from a cut face).
    fn long_weight<T: Scalar>(&self, q: usize, at: usize) -> T {
        T::real(self.cut_long[q].get(at).copied().unwrap_or(1.0))
    }

    /// Per unknown (E_u then E_v), true where a wall or a PEC holds it at zero: its row of the
    /// operator is zero, so it is an eigenvector of its own (beta^2 = 0) that the solver keeps
    /// out of its Krylov space.
    fn held_unknowns(&self) -> Vec<bool> {
        let [nu, nv] = self.n;
        let mut held = vec![true; self.unknowns()];
        for j in 0..nu {
            for k in 0..nv {
                if let Some(i) = self.eu(j, k) {
                    held[i] = false;
                }
                if let Some(i) = self.ev(j, k) {
                    held[i] = false;
                }
            }
        }
        held
    }

    /// The operator `A - shift I` (A the module's eigenproblem at `k0`), as triplets. Rows of
    /// the unknowns a PEC wall holds are zero in A.
    fn shifted<T: Scalar>(&self, k0: f64, shift: f64) -> Vec<Triplet<usize, usize, T>> {
        let [nu, nv] = self.n;
        let mut t = Vec::with_capacity(self.unknowns() * 12);
        let mut add = |row: usize, terms: &[(usize, T)], scale: T| {
            for &(col, c) in terms {
                t.push(Triplet::new(row, col, scale * c));
            }
        };
        let k02 = T::real(k0 * k0);
        let (one, minus) = (T::real(1.0), T::real(-1.0));
        for j in 0..nu {
            for k in 0..nv {
                let at = j * nv + k;
                if let Some(row) = self.eu(j, k) {
                    add(row, &[(row, k02 * self.permittivity::<T>(1, at))], one);
                    // - d_v (curl): from (j+1/2, k-1/2) to (j+1/2, k+1/2) across node k.
                    let dv = self.dual_step::<T>(1, k);
                    add(row, &self.curl::<T>(j, k), minus / dv);
                    if let Some(km) = self.step(1, k, -1) {
                        add(row, &self.curl::<T>(j, km), one / dv);
                    }
                    // + d_u (divergence): from node j to node j + 1.
                    let hu = self.primal_step::<T>(0, j) / self.long_weight::<T>(0, at);
                    if let Some(jp) = self.step(0, j, 1) {
                        add(row, &self.divergence::<T>(jp, k), one / hu);
                    }
                    add(row, &self.divergence::<T>(j, k), minus / hu);
                }
                if let Some(row) = self.ev(j, k) {
                    add(row, &[(row, k02 * self.permittivity::<T>(2, at))], one);
                    let du = self.dual_step::<T>(0, j);
                    add(row, &self.curl::<T>(j, k), one / du);
                    if let Some(jm) = self.step(0, j, -1) {
                        add(row, &self.curl::<T>(jm, k), minus / du);
                    }
                    let hv = self.primal_step::<T>(1, k) / self.long_weight::<T>(1, at);
                    if let Some(kp) = self.step(1, k, 1) {
                        add(row, &self.divergence::<T>(j, kp), one / hv);
                    }
                    add(row, &self.divergence::<T>(j, k), minus / hv);
                }
            }
        }
        for i in 0..self.unknowns() {
            t.push(Triplet::new(i, i, T::real(-shift)));
        }
        t
    }

    /// The shift of the shift-invert solve at `k0`: (k0 n)^2 for a target n_eff; otherwise
    /// just above the largest beta^2 a guided mode can have, so that the nearest eigenvalues are the most guided. That bound is
    /// (k0 n_max)^2 for dielectrics (n_max the largest index in the plane); where a metal
    /// (Re eps_m < 0) meets a dielectric eps_d with eps_m + eps_d < 0, the interface carries
    /// a surface plasmon above it, at eps_m eps_d / (eps_m + eps_d) (the planar one; a thin
    /// film's short-range plasmon can lie higher still, and is found only if asked for
    /// enough modes).
    pub fn shift(&self, k0: f64) -> f64 {
        if let Some(n) = self.target_neff {
            return (k0 * n).powi(2);
        }
        let values = || self.eps[1..].iter().flatten().copied();
        let dielectric = values().fold(1.0f64, f64::max);
        let metal = values().fold(0.0f64, f64::min);
        let plasmon = if metal < 0.0 && metal + dielectric < 0.0 {
            metal * dielectric / (metal + dielectric)
        } else {
            0.0
        };
        (k0 * dielectric.max(plasmon).sqrt()).powi(2) * 1.0001
    }
}

/// The `count` modes of `cs` with the largest beta^2 (real part) at free-space wavenumber `k0`
/// (1/m), in decreasing beta^2: shift-invert Arnoldi around [`CrossSection::shift`],
/// factorised once by a sparse LU; in complex arithmetic for a lossy cross-section.
pub fn solve(cs: &CrossSection, k0: f64, count: usize) -> Result<Vec<Mode>, ModeError> {
    solve_near(cs, k0, count, &[])
}

/// [`solve`] started from `warm` (modes of the same cross-section at a nearby frequency, whose
/// transverse E are close to the wanted ones): a frequency sweep converges in about one
/// Arnoldi cycle per frequency instead of several.
pub fn solve_near(
    cs: &CrossSection,
    k0: f64,
    count: usize,
    warm: &[Mode],
) -> Result<Vec<Mode>, ModeError> {
    let shift = cs.shift(k0);
    let joined: Vec<Vec<f64>> = warm
        .iter()
        .map(|m| [&m.e[0][..], &m.e[1][..]].concat())
        .collect();
    let mut modes = if cs.is_complex() {
        let warm: Vec<Vec<c64>> = joined
            .iter()
            .map(|v| v.iter().map(|&x| c64::new(x, 0.0)).collect())
            .collect();
        let found = eigenpairs::<c64>(cs, k0, shift, count, &warm)?;
        found
            .into_iter()
            .map(|(mu, v)| lossy_mode(shift, mu, &v))
            .collect()
    } else {
        let found = eigenpairs::<f64>(cs, k0, shift, count, &joined)?;
        found
            .into_iter()
            .map(|(mu, v)| real_mode(shift, mu, &v))
            .collect::<Vec<Mode>>()
    };
    modes.sort_by(|a, b| b.beta2.total_cmp(&a.beta2));
    Ok(modes)
}

/// The `count` eigenpairs of `inv(A - shift I)` of largest magnitude, A the operator at `k0`
/// in field `T`.
fn eigenpairs<T: Scalar + faer::traits::ComplexField>(
    cs: &CrossSection,
    k0: f64,
    shift: f64,
    count: usize,
    warm: &[Vec<T>],
) -> Result<Vec<(T, Vec<T>)>, ModeError> {
    let n = cs.unknowns();
    let a = SparseColMat::<usize, T>::try_new_from_triplets(n, n, &cs.shifted::<T>(k0, shift))
        .expect("the triplets index the operator");
    let lu = a
        .sp_lu()
        .map_err(|_| ModeError::Singular(shift.sqrt() / k0))?;
    let warm: Vec<&[T]> = warm.iter().map(|v| &v[..]).collect();
    let held = cs.held_unknowns();
    let apply = |x: &[T]| -> Vec<T> {
        let mut b = faer::Mat::<T>::from_fn(n, 1, |i, _| x[i]);
        lu.solve_in_place(b.as_mut());
        (0..n).map(|i| b[(i, 0)]).collect()
    };
    eigen::largest_inverse(&apply, n, count, &warm, &held)
}

/// A lossless mode from its eigenpair (mu, v).
fn real_mode(shift: f64, mu: f64, v: &[f64]) -> Mode {
    Mode {
        beta2: shift + 1.0 / mu,
        beta2_imag: 0.0,
        e: profile(v),
    }
}

/// A lossy mode from its eigenpair (mu, v): turned so that its largest value is real, its real
/// part kept as the profile.
fn lossy_mode(shift: f64, mu: c64, v: &[c64]) -> Mode {
    let top = v.iter().copied().fold(
        c64::new(0.0, 0.0),
        |m, x| if x.norm() > m.norm() { x } else { m },
    );
    let turn = top.conj() / top.norm();
    let turned: Vec<f64> = v.iter().map(|x| (x * turn).re).collect();
    let beta2 = c64::new(shift, 0.0) + 1.0 / mu;
    Mode {
        beta2: beta2.re,
        beta2_imag: beta2.im,
        e: profile(&turned),
    }
}

/// The transverse E (E_u then E_v) of eigenvector `v`: the largest value 1 in magnitude, the
/// sign fixed by a fixed pseudo-random functional (positive), so a mode has the same sign
/// however it was found (from a cold or a warm start) and from one frequency to the next.
fn profile(v: &[f64]) -> [Vec<f64>; 2] {
    let half = v.len() / 2;
    let magnitude = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let scale = if eigen::probe(v) < 0.0 {
        -magnitude
    } else {
        magnitude
    };
    [
        v[..half].iter().map(|x| x / scale).collect(),
        v[half..].iter().map(|x| x / scale).collect(),
    ]
}

#[cfg(test)]
mod tests;
