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
