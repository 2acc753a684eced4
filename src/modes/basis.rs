//! Mode decomposition of a surface DFT plane: the modes as the monitor sees them, at unit
//! power, and the forward and backward amplitudes of the DFT fields in them.
//!
//! A plane's DFTs hold the tangential E on the E plane and the tangential H interpolated onto
//! it ([`crate::flux`]), with the pairs (E_u, H_v) and (E_v, H_u) sharing their positions. A mode
//! is taken the same way: its E on the plane and its H ([`CrossSection::magnetic`]) times
//! cos(beta d / 2), the monitor's interpolation of `e^{i beta x}` from the H planes either side.
//! With the monitor's own quadrature (weights w_uv, w_vu and cell area dA,
//! [`crate::flux::patch_weights`]), the overlap of two fields is
//!
//! ```text
//!   <1, 2> = sum (w_uv E1_u H2_v - w_vu E1_v H2_u) dA
//! ```
//!
//! and each mode is scaled so that <m, m> = 1, in the units of the monitor's flux spectrum (which
//! is the same sum with H conjugated, real part). A field F = sum_m a_m (E_m, H_m) + b_m (E_m,
//! -H_m) then has <F, m> = a_m + b_m and <m, F> = a_m - b_m (the modes of a lossless cross-section
//! are real and orthogonal under this product), so
//!
//! ```text
//!   a_m = (<F, m> + <m, F>) / 2,   b_m = (<F, m> - <m, F>) / 2,
//! ```
//!
//! Meep's convention; |a_m|^2 is the power the mode carries forward in the units of the plane's
//! flux, and the flux is sum |a_m|^2 - |b_m|^2 when only these modes are present.

use super::plane::Solved;
use super::{CrossSection, Mode, Plane, PlaneError};
use crate::flux::{cell_area, patch_weights, PatchDft};
use crate::model::{BasisMode, Model, PlaneBasis};

impl Plane {
    /// The first `count` modes of the plane at `f` (Hz) as its monitor sees them, each at unit
    /// power under the monitor's quadrature.
    pub fn basis(&self, model: &Model, f: f64, count: usize) -> Result<PlaneBasis, PlaneError> {
        Ok(self.basis_near(model, f, count, &[])?.0)
    }

    /// [`Plane::basis`] started from `warm` (the plane's modes at a nearby frequency), with the
    /// modes as solved, to start the next frequency from.
    pub fn basis_near(
        &self,
        model: &Model,
        f: f64,
        count: usize,
        warm: &[Mode],
    ) -> Result<(PlaneBasis, Vec<Mode>), PlaneError> {
        let s = self.solved_near(model, f, count, warm)?;
        Ok((self.basis_of(model, f, &s), s.modes))
    }

    /// The unit-power basis, as this plane's monitor sees it, of the solve `s` at `f` (Hz).
    pub(super) fn basis_of(&self, model: &Model, f: f64, s: &Solved) -> PlaneBasis {
        let patch = self.patch();
        let weights = patch_weights(model, &patch);
        let area = cell_area(model, &patch);
        let d = self.step(model);
        let modes = s
            .modes
            .iter()
            .zip(&s.beta)
            .zip(&s.neff)
            .zip(&s.loss)
            .map(|(((mode, &beta), &neff), &loss)| {
                let h = s.cs.magnetic(mode, s.k0);
                let interp = (beta * d / 2.0).cos();
                let order = |v: &[f64], scale: f64| box_order(self, &s.cs, v, scale);
                let e = [order(&mode.e[0], 1.0), order(&mode.e[1], 1.0)];
                let h = [order(&h[0], interp), order(&h[1], interp)];
                let power = overlap(&e, &h, &weights, area);
                // A mode below cutoff carries no power: it stays as solved (zero amplitude).
                let scale = if power > 0.0 { 1.0 / power.sqrt() } else { 0.0 };
                BasisMode {
                    neff,
                    loss,
                    e: e.map(|v| v.into_iter().map(|x| x * scale).collect()),
                    h: h.map(|v| v.into_iter().map(|x| x * scale).collect()),
                }
            })
            .collect();
        PlaneBasis {
            frequency: f,
            modes,
        }
    }
}

/// `sum (w_uv E_u H_v - w_vu E_v H_u) dA` of real fields.
fn overlap(e: &[Vec<f64>; 2], h: &[Vec<f64>; 2], w: &[Vec<f64>; 2], area: f64) -> f64 {
    let mut sum = 0.0;
    for i in 0..e[0].len() {
        sum += w[0][i] * e[0][i] * h[1][i] - w[1][i] * e[1][i] * h[0][i];
    }
    sum * area
}

/// A complex amplitude (sqrt of the flux unit).
pub type Amplitude = (f64, f64);

/// The forward and backward amplitudes (a_m, b_m) of each mode of `basis` in the DFT fields of
/// frequency index `f` of `dft` (the monitor's one patch, the same plane).
pub fn decompose(basis: &PlaneBasis, dft: &PatchDft, f: usize) -> Vec<(Amplitude, Amplitude)> {
    let n = dft.cells();
    let at = f * n..(f + 1) * n;
    let field = |q: usize| (&dft.re[q][at.clone()], &dft.im[q][at.clone()]);
    let [(eu_r, eu_i), (ev_r, ev_i), (hu_r, hu_i), (hv_r, hv_i)] = [0, 1, 2, 3].map(field);
    let [w0, w1] = &dft.weights;
    basis
        .modes
        .iter()
        .map(|m| {
            // <F, m> and <m, F>, real and imaginary parts.
            let (mut fm, mut mf) = ((0.0, 0.0), (0.0, 0.0));
            for i in 0..n {
                let (a, b) = (w0[i], w1[i]);
                fm.0 += a * eu_r[i] * m.h[1][i] - b * ev_r[i] * m.h[0][i];
                fm.1 += a * eu_i[i] * m.h[1][i] - b * ev_i[i] * m.h[0][i];
                mf.0 += a * m.e[0][i] * hv_r[i] - b * m.e[1][i] * hu_r[i];
                mf.1 += a * m.e[0][i] * hv_i[i] - b * m.e[1][i] * hu_i[i];
            }
            let s = 0.5 * dft.area;
            (
                ((fm.0 + mf.0) * s, (fm.1 + mf.1) * s),
                ((fm.0 - mf.0) * s, (fm.1 - mf.1) * s),
            )
        })
        .collect()
}

/// The coupling of two unit-power modes of one plane, `(<a, b> + <b, a>) / 2` under the
/// monitor's quadrature ([`decompose`]): the forward amplitude in mode `b` of a field that is
/// mode `a`, so its square is the fraction of `a`'s power that `b` carries.
pub fn coupling(model: &Model, plane: &Plane, a: &BasisMode, b: &BasisMode) -> f64 {
    let patch = plane.patch();
    let w = patch_weights(model, &patch);
    let area = cell_area(model, &patch);
    0.5 * (overlap(&a.e, &b.h, &w, area) + overlap(&b.e, &a.h, &w, area))
}

/// `values` (`j * n_v + k` over the plane) times `scale`, in the C order of the sheet's cell
/// box (x, y, z; the plane's normal one cell thick).
pub(super) fn box_order(plane: &Plane, cs: &CrossSection, values: &[f64], scale: f64) -> Vec<f64> {
    let [nu, nv] = cs.n;
    let [u, v] = plane.in_plane();
    let mut out = vec![0.0; nu * nv];
    for j in 0..nu {
        for k in 0..nv {
            let at = if u < v { j * nv + k } else { k * nu + j };
            out[at] = values[j * nv + k] * scale;
        }
    }
    out
}
