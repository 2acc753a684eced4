//! Source waveforms and current sources on grid cells.

use super::grid::Component;
use std::f64::consts::PI;

/// A source's time dependence, normalised to a peak of about 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Waveform {
    /// Gaussian-modulated sine: sin(2 pi f (t - t0)) exp(-(t - t0)^2 / (2 s^2)).
    Gaussian {
        /// Carrier frequency (Hz).
        frequency: f64,
        /// Spectral full width at half maximum (Hz).
        bandwidth: f64,
        /// Extra delay (s).
        delay: f64,
    },
    /// Ricker wavelet (second derivative of a Gaussian), peak spectrum at `frequency`.
    Ricker {
        /// Peak frequency (Hz).
        frequency: f64,
        /// Extra delay (s).
        delay: f64,
    },
    /// A sine switched on smoothly over `ramp` seconds (raised-cosine envelope).
    Continuous {
        /// Frequency (Hz).
        frequency: f64,
        /// Turn-on time (s).
        ramp: f64,
        /// Extra delay (s).
        delay: f64,
    },
}

impl Waveform {
    /// Temporal standard deviation of the Gaussian envelope, from the spectral FWHM.
    fn gaussian_sigma(bandwidth: f64) -> f64 {
        // Spectrum exp(-(f - f0)^2 / (2 sf^2)) has FWHM 2 sqrt(2 ln 2) sf; time width s = 1 / (2 pi sf).
        let sf = bandwidth / (2.0 * (2.0 * 2f64.ln()).sqrt());
        1.0 / (2.0 * PI * sf)
    }

    /// Time of the pulse peak: far enough after t = 0 that switching on is smooth
    /// (the envelope there is below 1e-6 of its peak).
    pub fn peak_time(&self) -> f64 {
        match *self {
            Waveform::Gaussian {
                bandwidth, delay, ..
            } => 5.3 * Self::gaussian_sigma(bandwidth) + delay,
            Waveform::Ricker { frequency, delay } => 1.3 / frequency + delay,
            Waveform::Continuous { delay, .. } => delay,
        }
    }

    /// Time after which the source is off for good (within 1e-6 of peak), or None if it never is.
    pub fn end_time(&self) -> Option<f64> {
        match *self {
            Waveform::Continuous { .. } => None,
            _ => Some(2.0 * self.peak_time() - self.delay()),
        }
    }

    fn delay(&self) -> f64 {
        match *self {
            Waveform::Gaussian { delay, .. }
            | Waveform::Ricker { delay, .. }
            | Waveform::Continuous { delay, .. } => delay,
        }
    }

    /// The carrier (Gaussian, continuous) or peak (Ricker) frequency: the band centre.
    pub fn centre_frequency(&self) -> f64 {
        match *self {
            Waveform::Gaussian { frequency, .. }
            | Waveform::Ricker { frequency, .. }
            | Waveform::Continuous { frequency, .. } => frequency,
        }
    }

    /// The highest frequency with significant energy (used for the resolution warning).
    pub fn max_frequency(&self) -> f64 {
        match *self {
            // Spectrum down to about 1e-3 of its peak: f0 + 3.7 sf.
            Waveform::Gaussian {
                frequency,
                bandwidth,
                ..
            } => frequency + 3.7 * bandwidth / 2.3548,
            // The Ricker spectrum (f/fp)^2 exp(1 - (f/fp)^2) falls to about 1e-3 at 3 fp.
            Waveform::Ricker { frequency, .. } => 3.0 * frequency,
            Waveform::Continuous { frequency, .. } => frequency,
        }
    }

    /// The frequency above which the spectrum is negligible for sampling (1.5e-8 of its peak
    /// for a Gaussian, f0 + 6 sigma; 1e-9 for a Ricker, 5 fp): a running DFT sampled at a rate
    /// of at least this plus its own highest frequency sees no alias. `None` for a continuous
    /// wave, whose switch-on ramp has no such bound.
    pub fn negligible_above(&self) -> Option<f64> {
        match *self {
            Waveform::Gaussian {
                frequency,
                bandwidth,
                ..
            } => Some(frequency + 6.0 * bandwidth / 2.3548),
            Waveform::Ricker { frequency, .. } => Some(5.0 * frequency),
            Waveform::Continuous { .. } => None,
        }
    }

    /// The `n`-th time derivative at `t` (s^-n), exact: a Gaussian pulse is Im exp(p(u)) and a
    /// Ricker wavelet a second derivative of exp(-k u^2), u = t - peak, and the derivatives of
    /// exp(a u + b u^2) follow y_n = (a + 2 b u) y_{n-1} + 2 b (n - 1) y_{n-2}. None for a
    /// continuous wave (its switch-on is not smooth enough to differentiate freely).
    pub fn derivative(&self, n: usize, t: f64) -> Option<f64> {
        let u = t - self.peak_time();
        // Derivative n of exp(a u + b u^2) at u, (re, im), with a = (ar, ai) and b real.
        let exp_quadratic = |ar: f64, ai: f64, b: f64, n: usize| -> (f64, f64) {
            let e = (ar * u + b * u * u).exp();
            let (s, c) = (ai * u).sin_cos();
            let y0 = (e * c, e * s);
            let slope = (ar + 2.0 * b * u, ai);
            let mul = |x: (f64, f64), y: (f64, f64)| (x.0 * y.0 - x.1 * y.1, x.0 * y.1 + x.1 * y.0);
            let (mut prev, mut cur) = ((0.0, 0.0), y0);
            for k in 1..=n {
                let next = mul(slope, cur);
                let back = 2.0 * b * (k - 1) as f64;
                let next = (next.0 + back * prev.0, next.1 + back * prev.1);
                prev = cur;
                cur = next;
            }
            cur
        };
        match *self {
            Waveform::Gaussian {
                frequency,
                bandwidth,
                ..
            } => {
                let s = Self::gaussian_sigma(bandwidth);
                let w = 2.0 * PI * frequency;
                Some(exp_quadratic(0.0, w, -0.5 / (s * s), n).1)
            }
            Waveform::Ricker { frequency, .. } => {
                let k = (PI * frequency).powi(2);
                Some(-exp_quadratic(0.0, 0.0, -k, n + 2).0 / (2.0 * k))
            }
            Waveform::Continuous { .. } => None,
        }
    }

    /// Value at time `t` (s).
    pub fn value(&self, t: f64) -> f64 {
        match *self {
            Waveform::Gaussian {
                frequency,
                bandwidth,
                ..
            } => {
                let s = Self::gaussian_sigma(bandwidth);
                let u = t - self.peak_time();
                (2.0 * PI * frequency * u).sin() * (-(u * u) / (2.0 * s * s)).exp()
            }
            Waveform::Ricker { frequency, .. } => {
                let a = (PI * frequency * (t - self.peak_time())).powi(2);
                (1.0 - 2.0 * a) * (-a).exp()
            }
            Waveform::Continuous {
                frequency,
                ramp,
                delay,
            } => {
                let u = t - delay;
                if u <= 0.0 {
                    return 0.0;
                }
                let envelope = if u >= ramp {
                    1.0
                } else {
                    0.5 * (1.0 - (PI * u / ramp).cos())
                };
                envelope * (2.0 * PI * frequency * u).sin()
            }
        }
    }
}

/// A current source: J on a set of E-component cells, J(t) = amplitude * waveform(t + advance),
/// optionally paired with a magnetic current sheet (a one-way plane wave).
///
/// The E update subtracts (dt / eps) J at the cell, the discrete form of dE/dt = (curl H - J) / eps;
/// J is sampled at t = (n + 1/2) dt, when the E update of step n is centred.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The driven E component.
    pub component: Component,
    /// Global cell ranges [start, end) along x, y, z (one cell for a dipole, a sheet for a plane wave).
    pub cells: [[usize; 2]; 3],
    /// Peak current density (A/m^2).
    pub amplitude: f64,
    /// Time dependence.
    pub waveform: Waveform,
    /// J is the waveform this much later (s): a one-way plane wave's electric sheet leads its
    /// magnetic sheet by the grid's travel time over half a cell.
    pub advance: f64,
    /// The magnetic current sheet of a one-way (Huygens) plane wave, or None.
    pub magnetic: Option<MagneticSheet>,
    /// A mode source's sheet and this source's role in it (0: J on E_u with M on H_v, 1: J on
    /// E_v with M on H_u): J and M then vary over their cells by the solved profile's weights
    /// ([`Source::profiles`]) and the advance is the mode's; None for a uniform sheet.
    pub mode: Option<(std::sync::Arc<super::ModeSheet>, usize)>,
    /// A filter on the waveform: J and M follow `sum_m filter[m] d^(2m)/dt^(2m)` of it, a
    /// polynomial in w^2 over the spectrum (with w^2 <-> -d^2/dt^2); empty for the waveform
    /// itself. A broadband mode source's profile at each of its frequencies weighs the
    /// waveform by that frequency's Lagrange polynomial ([`crate::model::lagrange_filters`]).
    pub filter: Vec<f64>,
    /// An oblique plane wave's wavevector along the sheet (rad/m, 0 along the sheet's normal),
    /// or None: the sheet then drives the same current on every cell. With it the current is
    /// the complex J e^{-i k . r} (a wave e^{i (w t - k . r)} in yee's phasors, travelling
    /// along +k), whose real part drives the real field set of a Bloch cell and whose
    /// imaginary part the imaginary set ([`crate::model::Model::sheet_weights`]).
    pub transverse_k: Option<[f64; 3]>,
    /// True for the second sheet of a plane wave whose tangential E lies along both in-plane
    /// axes (conical incidence, or a vector polarisation): the same wave as the source before
    /// it, which drives the other in-plane E component and its H partner.
    pub partner: bool,
}

/// The magnetic half of a Huygens source: M on a sheet of H-component cells half a cell behind
/// the electric sheet, M(t) = amplitude * waveform(t) sampled at t = n dt (the centre of the H
/// update of step n). The H update subtracts (dt / mu0) M, the discrete form of
/// dH/dt = -(curl E + M) / mu0. Scaled and timed so that the backward waves of the two sheets
/// cancel on the Yee grid.
#[derive(Debug, Clone, PartialEq)]
pub struct MagneticSheet {
    /// The driven H component.
    pub component: Component,
    /// Global cell ranges [start, end) of the H cells.
    pub cells: [[usize; 2]; 3],
    /// Peak magnetic current density (V/m^2).
    pub amplitude: f64,
}

impl Source {
    /// J (A/m^2) at time `t` (for a mode source, times the weight of each cell, [`Source::profiles`]).
    pub fn current(&self, t: f64) -> f64 {
        self.amplitude * self.shaped(t + self.lead())
    }

    /// The waveform through [`Source::filter`] at `t`.
    fn shaped(&self, t: f64) -> f64 {
        if self.filter.is_empty() {
            return self.waveform.value(t);
        }
        self.filter
            .iter()
            .enumerate()
            .map(|(m, a)| {
                a * self
                    .waveform
                    .derivative(2 * m, t)
                    .expect("a filtered waveform has derivatives")
            })
            .sum()
    }

    /// +1 or -1: the direction a one-way sheet launches along its `axis` (its magnetic sheet
    /// lies half a cell behind the electric one); None for a source without a magnetic sheet.
    pub fn travel_sign(&self, axis: usize) -> Option<f64> {
        let m = self.magnetic.as_ref()?;
        Some(if m.cells[axis][0] < self.cells[axis][0] {
            1.0
        } else {
            -1.0
        })
    }

    /// How far J runs ahead of the waveform (s): [`Source::advance`], or a mode source's
    /// solved advance.
    pub fn lead(&self) -> f64 {
        match &self.mode {
            Some((sheet, _)) => sheet.solved.get().map_or(0.0, |s| s.advance),
            None => self.advance,
        }
    }

    /// A mode source's per-cell weights of J (over `cells`) and M (over the magnetic sheet's
    /// cells), C order; None for a uniform sheet.
    ///
    /// # Panics
    /// If the mode source was not solved ([`crate::modes::prepare`] runs at run start).
    pub fn profiles(&self) -> Option<[&[f64]; 2]> {
        self.mode.as_ref().map(|(sheet, role)| {
            let s = sheet
                .solved
                .get()
                .expect("mode sources are solved before a backend is built");
            [&s.weights[*role][0][..], &s.weights[*role][1][..]]
        })
    }
    /// M (V/m^2) of the magnetic sheet at time `t` (0 without one).
    pub fn magnetic_current(&self, t: f64) -> f64 {
        self.magnetic
            .as_ref()
            .map_or(0.0, |m| m.amplitude * self.shaped(t))
    }
}

/// The filters ([`Source::filter`]) that interpolate a quantity known at the frequencies
/// `nodes` (Hz) across the band: filter i is the Lagrange polynomial of node i in w^2 (1 at its
/// node, 0 at the others), written as sum_m a_m d^(2m)/dt^(2m) (w^2 <-> -d^2/dt^2). A sum of
/// sources, each with its node's profile and its filter, carries at every node exactly that
/// node's profile, and between the nodes their polynomial interpolation in w^2 (even in w,
/// so the sources stay real).
pub fn lagrange_filters(nodes: &[f64]) -> Vec<Vec<f64>> {
    let u: Vec<f64> = nodes.iter().map(|f| (2.0 * PI * f).powi(2)).collect();
    (0..u.len())
        .map(|i| {
            // The polynomial in w^2, coefficients by power, built factor by factor.
            let mut poly = vec![1.0];
            for (j, &uj) in u.iter().enumerate() {
                if j == i {
                    continue;
                }
                let scale = 1.0 / (u[i] - uj);
                let mut next = vec![0.0; poly.len() + 1];
                for (p, c) in poly.iter().enumerate() {
                    next[p + 1] += c * scale;
                    next[p] -= c * uj * scale;
                }
                poly = next;
            }
            // (w^2)^p <-> (-1)^p d^(2p)/dt^(2p).
            poly.iter()
                .enumerate()
                .map(|(p, c)| if p % 2 == 0 { *c } else { -c })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_starts_and_ends_quietly() {
        let w = Waveform::Gaussian {
            frequency: 2e14,
            bandwidth: 1e14,
            delay: 0.0,
        };
        assert!(w.value(0.0).abs() < 1e-5);
        assert!(w.value(w.end_time().unwrap()).abs() < 1e-5);
        let peak = (0..1000)
            .map(|i| w.value(w.peak_time() + (i as f64 - 500.0) * 1e-17).abs())
            .fold(0.0, f64::max);
        // The carrier's crest sits a quarter period off the envelope peak: exp(-(T/4)^2 / (2 s^2)) = 0.94.
        assert!(peak > 0.93 && peak <= 1.0, "{peak}");
    }

    /// The analytic derivatives match central differences of the values (to 1e-5 of the
    /// derivative's scale, (2 pi f)^n, the differences' own error at this step).
    #[test]
    fn derivatives_match_differences() {
        let waves = [
            Waveform::Gaussian {
                frequency: 2e14,
                bandwidth: 5e13,
                delay: 0.0,
            },
            Waveform::Ricker {
                frequency: 1e9,
                delay: 0.0,
            },
        ];
        for w in waves {
            let f = w.centre_frequency();
            let h = 1e-4 / f;
            let t = w.peak_time() + 0.13 / f;
            for n in 1..4 {
                let d = |t: f64| w.derivative(n - 1, t).unwrap();
                let numeric = (d(t + h) - d(t - h)) / (2.0 * h);
                let exact = w.derivative(n, t).unwrap();
                let scale = (2.0 * PI * f).powi(n as i32);
                assert!(
                    (numeric - exact).abs() < 1e-5 * scale,
                    "{w:?} n {n}: {numeric} vs {exact}"
                );
            }
            // The 0th derivative is the value (to rounding: exp and sin are taken apart).
            assert!((w.derivative(0, t).unwrap() - w.value(t)).abs() < 1e-14);
        }
    }

    /// Lagrange filters are 1 at their node and 0 at the others, as polynomials in w^2.
    #[test]
    fn lagrange_filters_interpolate() {
        let nodes = [1.8e14, 1.934e14, 2.1e14];
        let filters = lagrange_filters(&nodes);
        for (i, filter) in filters.iter().enumerate() {
            for (j, f) in nodes.iter().enumerate() {
                let u = (2.0 * PI * f).powi(2);
                // The operator's value on exp(-i w t): (-1)^m a_m (-w^2)^m... = sum a_m (-u)^m.
                let v: f64 = filter
                    .iter()
                    .enumerate()
                    .map(|(m, a)| a * (-u).powi(m as i32))
                    .sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((v - want).abs() < 1e-9, "{i} at {j}: {v}");
            }
        }
    }

    #[test]
    fn continuous_ramps_up() {
        let w = Waveform::Continuous {
            frequency: 1e9,
            ramp: 3e-9,
            delay: 0.0,
        };
        assert_eq!(w.value(0.0), 0.0);
        assert!((w.value(5.25e-9) - 1.0).abs() < 1e-9);
    }
}
