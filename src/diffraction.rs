//! Diffraction orders of a periodic cell from a plane's surface DFTs (`type = "diffraction"`).
//!
//! A field on a plane across a cell of periods L_p, L_q with Bloch wavevector k_B (yee's
//! phasors are e^{+i w t}, so a wave travelling along +k goes as e^{-i k . r}) is a sum of
//! Floquet orders, F(r) = sum_mn F_mn e^{-i k_mn . r} with k_mn = k_B + 2 pi (m / L_p,
//! n / L_q). On the grid's N_p x N_q cells the N_p N_q orders nearest k_B are an exact basis:
//! F_mn = (1 / N) sum_cells F(r) e^{+i k_mn . r}, each field at its own Yee position. The
//! flux the monitor measures, Re sum (E_b H_c* - E_c H_b*) dA, is then by Parseval's identity
//! exactly the sum over the orders of N dA Re(E_b,mn H_c,mn* - E_c,mn H_b,mn*): each order's
//! power, and the orders' powers add up to the plane's flux to rounding.
//!
//! Each order splits into its s part (E across the order's plane of incidence, along
//! s = n x t with t the unit transverse wavevector) and its p part (E in that plane, along
//! t): P = P_s + P_p with P_s = -Re(E_s H_t*) and P_p = Re(E_t H_s*) along the normal. At
//! normal incidence (k_mn = 0) t is the first in-plane axis.
//!
//! Powers are fractions of the incident plane wave's power through the cell
//! ([`crate::model::Diffraction::incident`]), counted away from the source's sheet.

use crate::flux::PatchDft;
use crate::model::{Diffraction, Flux, Model};

/// One diffraction monitor's orders at each of its frequencies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Orders {
    /// `[frequency][order]`: the order's power over the incident power.
    pub power: Vec<Vec<f64>>,
    /// `[frequency][order]`: its s part.
    pub power_s: Vec<Vec<f64>>,
    /// `[frequency][order]`: its p part.
    pub power_p: Vec<Vec<f64>>,
    /// `[frequency][order]`: the polar angle from the normal (degrees), NaN where the order
    /// does not propagate.
    pub angle: Vec<Vec<f64>>,
    /// `[frequency][order]`: the azimuth of its transverse wavevector from the first in-plane
    /// axis towards the second (degrees), NaN where it does not propagate.
    pub azimuth: Vec<Vec<f64>>,
}

/// A complex number as (re, im).
pub type C = (f64, f64);

fn mul(a: C, b: C) -> C {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

/// Re(a conj(b)).
fn re_dot(a: C, b: C) -> f64 {
    a.0 * b.0 + a.1 * b.1
}

/// The transverse wavevector (rad/m) of order `o` along the plane's two in-plane axes.
pub fn order_k(model: &Model, flux: &Flux, d: &Diffraction, o: [i64; 2]) -> [f64; 2] {
    let patch = &flux.patches[0];
    let [p, q] = patch.in_plane();
    let two_pi = 2.0 * std::f64::consts::PI;
    let size = model.grid.size();
    [
        d.bloch_k[0] + two_pi * o[0] as f64 / size[p],
        d.bloch_k[1] + two_pi * o[1] as f64 / size[q],
    ]
}

/// The amplitudes of the order of transverse wavevector `k` (along the plane's in-plane
/// axes) in the DFTs `dft` of plane `patch` at frequency index `fi`: E_b, E_c, H_b, H_c, each
/// (1 / N) sum over the cells of the field times e^{+i k . r} at its Yee position ((E_b, H_c)
/// half a cell along b, (E_c, H_b) half a cell along c).
pub fn order_amplitudes(
    model: &Model,
    patch: &crate::model::Patch,
    dft: &PatchDft,
    fi: usize,
    k: [f64; 2],
) -> [C; 4] {
    let [p, q] = patch.in_plane();
    let a = patch.axis as usize;
    let (b, c) = ((a + 1) % 3, (a + 2) % 3);
    let [np, nq] = patch.count;
    let n = np * nq;
    let g = &model.grid;
    let amp = |field: usize, shift: usize| -> C {
        let at = |axis: usize, idx: usize| {
            let half = if axis == shift { 0.5 } else { 0.0 };
            g.coordinate(axis, idx as f64 + half)
        };
        let mut sum = (0.0, 0.0);
        for u in 0..np {
            let xu = at(p, patch.start[0] + u);
            for v in 0..nq {
                let yv = at(q, patch.start[1] + v);
                let cell = fi * n + u * nq + v;
                let value = (dft.re[field][cell], dft.im[field][cell]);
                let (s, cph) = (k[0] * xu + k[1] * yv).sin_cos();
                let w = mul(value, (cph, s));
                sum = (sum.0 + w.0, sum.1 + w.1);
            }
        }
        (sum.0 / n as f64, sum.1 / n as f64)
    };
    [amp(0, b), amp(1, c), amp(2, c), amp(3, b)]
}

/// Split monitor `flux`'s plane DFT `dft` into the orders of `d` at each frequency.
pub fn decompose(model: &Model, flux: &Flux, d: &Diffraction, dft: &PatchDft) -> Orders {
    let patch = &flux.patches[0];
    let [p, q] = patch.in_plane();
    let a = patch.axis as usize;
    let b = (a + 1) % 3;
    let n = patch.count[0] * patch.count[1];
    let incident = d.incident.get();
    // (p x q) . n: +1 when (p, q, a) is cyclic.
    let orient = if (p + 1) % 3 == q { 1.0 } else { -1.0 };
    let mut out = Orders::default();
    for (fi, &f) in flux.frequencies.iter().enumerate() {
        let medium = &model.materials.materials[d.material as usize];
        let k0 = 2.0 * std::f64::consts::PI * f / crate::model::C0 * medium.index_at(f);
        let inc = incident
            .and_then(|v| v.power.get(fi))
            .copied()
            .unwrap_or(f64::NAN);
        let direct = incident.and_then(|v| v.direct.get(fi));
        let mut row = [vec![], vec![], vec![], vec![], vec![]];
        for &o in &d.orders {
            let k = order_k(model, flux, d, o);
            let mut amps = order_amplitudes(model, patch, dft, fi, k);
            if let (Some(direct), [0, 0]) = (direct, o) {
                for (x, y) in amps.iter_mut().zip(direct) {
                    *x = (x.0 - y.0, x.1 - y.1);
                }
            }
            let [eb, ec, hb, hc] = amps;
            // Along the in-plane axes (p, q) rather than the cyclic (b, c).
            let pq = |vb: C, vc: C| if b == p { (vb, vc) } else { (vc, vb) };
            let (ep, eq) = pq(eb, ec);
            let (hp, hq) = pq(hb, hc);
            let kt = k[0].hypot(k[1]);
            let t = if kt > 0.0 {
                [k[0] / kt, k[1] / kt]
            } else {
                [1.0, 0.0]
            };
            let s = [-t[1], t[0]];
            let along =
                |vp: C, vq: C, u: [f64; 2]| (vp.0 * u[0] + vq.0 * u[1], vp.1 * u[0] + vq.1 * u[1]);
            let (e_t, e_s) = (along(ep, eq, t), along(ep, eq, s));
            let (h_t, h_s) = (along(hp, hq, t), along(hp, hq, s));
            // (s x t) . n = -orient, (t x s) . n = orient; the patch's flux is along +axis.
            let scale =
                patch.sign * crate::flux::cell_area(model, patch) * n as f64 * d.toward / inc;
            let ps = -orient * re_dot(e_s, h_t) * scale;
            let pp = orient * re_dot(e_t, h_s) * scale;
            row[0].push(ps + pp);
            row[1].push(ps);
            row[2].push(pp);
            let propagates = kt < k0;
            let angle = |v: f64| if propagates { v.to_degrees() } else { f64::NAN };
            row[3].push(angle((kt / k0).min(1.0).asin()));
            row[4].push(angle(k[1].atan2(k[0])));
        }
        let [power, power_s, power_p, angle, azimuth] = row;
        out.power.push(power);
        out.power_s.push(power_s);
        out.power_p.push(power_p);
        out.angle.push(angle);
        out.azimuth.push(azimuth);
    }
    out
}
