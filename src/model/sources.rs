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
        self.amplitude * self.waveform.value(t + self.lead())
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
            .map_or(0.0, |m| m.amplitude * self.waveform.value(t))
    }
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
