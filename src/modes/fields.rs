//! A mode's transverse H, and the mode's fields as the run's surface monitors see them,
//! normalised to unit power.
//!
//! With the eigenproblem's discrete wavenumbers (b = the eigenvalue's square root, the grid's
//! difference along the normal applied to `e^{i beta x}`; k0 the discrete-time free-space
//! wavenumber), Faraday's law on the Yee grid gives the transverse H of a mode propagating along
//! +normal from its transverse E alone. The longitudinal E comes from Gauss's law,
//! `i b eps_n E_n = -(d_u eps_u E_u + d_v eps_v E_v)`, so with `D = (1/eps_n)(d_u eps_u E_u + d_v
//! eps_v E_v)` at the nodes ([`CrossSection::node_divergence`]):
//!
//! ```text
//!   H_u (j, k + 1/2) = (d_v D / b - b E_v) / (k0 eta0)
//!   H_v (j + 1/2, k) = (b E_u - d_u D / b) / (k0 eta0)
//! ```
//!
//! H_u shares its in-plane position with E_v and H_v with E_u: the pairs a surface DFT monitor
//! multiplies ([`crate::flux`]). These H are the mode's at the H planes half a cell either side
//! of the E plane, each referred to its own position; the monitor interpolates H onto the E
//! plane, which for `e^{i beta x}` multiplies it by cos(beta d / 2).

use super::{CrossSection, Mode, Wall};
use crate::model::ETA0;

impl CrossSection {
    /// `D = (1/eps_n)(d_u eps_u E_u + d_v eps_v E_v)` at every node (j, k) (`j * n[1] + k`),
    /// for the transverse E `e` ([`Mode::e`]); zero on a PEC wall's nodes.
    pub fn node_divergence(&self, e: &[Vec<f64>; 2]) -> Vec<f64> {
        let n = self.n[0] * self.n[1];
        let value = |i: usize| if i < n { e[0][i] } else { e[1][i - n] };
        (0..self.n[0])
            .flat_map(|j| (0..self.n[1]).map(move |k| (j, k)))
            .map(|(j, k)| {
                self.divergence::<f64>(j, k)
                    .into_iter()
                    .map(|(i, c)| c * value(i))
                    .sum()
            })
            .collect()
    }

    /// The transverse H (A/m per V/m of E) of `mode` propagating along +normal at the
    /// discrete-time free-space wavenumber `k0` (1/m, the one it was solved at): H_u at
    /// (j, k + 1/2) and H_v at (j + 1/2, k), each `j * n[1] + k`.
    pub fn magnetic(&self, mode: &Mode, k0: f64) -> [Vec<f64>; 2] {
        let b = mode.beta2.max(0.0).sqrt();
        let d = self.node_divergence(&mode.e);
        let [nu, nv] = self.n;
        let node = |j: usize, k: usize| d[j * nv + k];
        // D one node further along `axis` from (j, k): wrapped, or 0 at the far PEC wall.
        let next = |axis: usize, j: usize, k: usize| match (axis, self.walls[axis]) {
            (0, Wall::Periodic) => node((j + 1) % nu, k),
            (1, Wall::Periodic) => node(j, (k + 1) % nv),
            (0, Wall::Pec) if j + 1 < nu => node(j + 1, k),
            (1, Wall::Pec) if k + 1 < nv => node(j, k + 1),
            _ => 0.0,
        };
        let scale = 1.0 / (k0 * ETA0);
        let mut h = [vec![0.0; nu * nv], vec![0.0; nu * nv]];
        for j in 0..nu {
            for k in 0..nv {
                let at = j * nv + k;
                // Across a cut longitudinal face, the difference over its used area.
                let long = |q: usize| self.cut_long[q].get(at).copied().unwrap_or(1.0);
                let dv = (next(1, j, k) - node(j, k)) / self.cells[1][k] * long(1);
                let du = (next(0, j, k) - node(j, k)) / self.cells[0][j] * long(0);
                h[0][at] = (dv / b - b * mode.e[1][at]) * scale;
                h[1][at] = (b * mode.e[0][at] - du / b) * scale;
            }
        }
        h
    }
}

impl CrossSection {
    /// True when the operator factors as the grid's Maxwell equations do, `A = Q P` with `W P`
    /// and `W Q` symmetric (W the positions' areas): a real cross-section (no loss, no in-plane
    /// PML) with no cut face (the Dey-Mittra weights scale one side of the curl only). Then
    /// [`CrossSection::dispersion_slope`] is exact.
    pub(super) fn has_energy_slope(&self) -> bool {
        !self.is_complex() && self.cut_curl.is_empty() && self.cut_long.iter().all(|w| w.is_empty())
    }

    /// d(b^2)/d(k0) of `mode` (b^2 its eigenvalue at the discrete-time wavenumber `k0`), by
    /// first-order perturbation with the left eigenvector the grid supplies.
    ///
    /// Eliminating E_n by Ampere's law instead of Gauss's, the grid's equations read
    /// `b g = P E`, `b E = Q g` with g = eta0 (H_v, -H_u) ([`CrossSection::magnetic`]),
    /// `P = k0 eps + K/k0` (K the curl-curl part of the operator) and `Q = k0 + (1/k0) grad
    /// (1/eps_n) div`, so `A = Q P` (the discrete divergence of K vanishes). With `W P` and
    /// `W Q` symmetric, `y = W P E` is A's left eigenvector, and `y^T (dA/dk0) E / y^T E`
    /// becomes the energy over the power:
    ///
    /// ```text
    ///   d(b^2)/dk0 = b [sum W (eps' E_t^2 + g^2) + W_n eps_n' E_n^2 + W_h h_n^2] / sum W E_t . g
    /// ```
    ///
    /// with `E_n = D / b`, `h_n = eta0 H_n = (curl E) / k0`, and `eps' = eps + k0 deps/dk0`
    /// (`eps_slope` holds `k0 deps/dk0` at the positions of [`CrossSection::eps`], empty
    /// vectors for a non-dispersive plane). Exact to rounding where
    /// [`CrossSection::has_energy_slope`]; the group index follows without a second solve.
    pub(super) fn dispersion_slope(&self, mode: &Mode, k0: f64, eps_slope: &[Vec<f64>; 3]) -> f64 {
        let b = mode.beta2.max(0.0).sqrt();
        let h = self.magnetic(mode, k0);
        let d = self.node_divergence(&mode.e);
        let unknown = |i: usize| {
            let n = self.n[0] * self.n[1];
            if i < n {
                mode.e[0][i]
            } else {
                mode.e[1][i - n]
            }
        };
        let eps =
            |q: usize, at: usize| self.eps[q][at] + eps_slope[q].get(at).copied().unwrap_or(0.0);
        let [nu, nv] = self.n;
        let (mut energy, mut power) = (0.0, 0.0);
        for j in 0..nu {
            for k in 0..nv {
                let at = j * nv + k;
                let (hu, hv) = (self.cells[0][j], self.cells[1][k]);
                let (du, dv) = (self.dual(0, j), self.dual(1, k));
                let (eu, ev) = (mode.e[0][at], mode.e[1][at]);
                let (gu, gv) = (ETA0 * h[1][at], -ETA0 * h[0][at]);
                let curl: f64 = self
                    .curl::<f64>(j, k)
                    .into_iter()
                    .map(|(i, c)| c * unknown(i))
                    .sum();
                energy += hu * dv * (eps(1, at) * eu * eu + gu * gu)
                    + du * hv * (eps(2, at) * ev * ev + gv * gv)
                    + du * dv * eps(0, at) * (d[at] / b).powi(2)
                    + hu * hv * (curl / k0).powi(2);
                power += hu * dv * eu * gu + du * hv * ev * gv;
            }
        }
        b * energy / power
    }
}
