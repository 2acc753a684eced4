//! Dispersive materials: the poles of the permittivity and the coefficients of their
//! auxiliary-differential-equation (ADE) update.
//!
//! With the e^{-iwt} convention and w = 2 pi f,
//!
//! ```text
//! eps(w) = eps_inf + sum_lorentz d_eps w0^2 / (w0^2 - w^2 - i w g)
//!          - sum_drude wp^2 / (w^2 + i w g) + sum_debye d_eps / (1 - i w tau) + i sigma / (w eps0)
//! ```
//!
//! # The update
//! Each pole carries a polarisation current J (and, for Lorentz, the polarisation P = int J):
//! Lorentz: dP/dt = J, dJ/dt = -g J - w0^2 P + eps0 d_eps w0^2 E; Drude: dJ/dt = -g J +
//! eps0 wp^2 E; Debye: tau dP/dt = eps0 d_eps E - P, J = dP/dt. E obeys
//! `eps_inf eps0 dE/dt = curl H - sigma E - sum J`. Every pole equation and the conductivity
//! are discretised by the trapezoidal rule (Crank-Nicolson) between E^n and E^{n+1}, and the E
//! equation uses the mean current (J^n + J^{n+1}) / 2. Then, for a lossless Lorentz or Drude
//! medium,
//!
//! ```text
//! W = eps_inf eps0 |E^n|^2 / 2 + mu0 H^{n-1/2} . H^{n+1/2} / 2 + sum (|J|^2 + w0^2 |P|^2) / (2 eps0 w)
//! ```
//!
//! (w = d_eps w0^2 or wp^2) is conserved exactly by the discrete equations, and damping, conductivity and Debye poles only take energy away. The
//! pole energy is positive whatever the time step, so the scheme is stable at the grid's own
//! Courant step for any passive pole, however large w0 dt or wp dt (the explicit scheme of
//! Meep, which drives the poles with E^n alone, needs (courant)^2 + sum w dt^2 / (4 eps_inf) <= 1
//! instead). It is second order: the trapezoidal rule is the bilinear transform, so the
//! numerical permittivity at frequency w is the exact one at (2/dt) tan(w dt/2) = w (1 + (w dt)^2 / 12 + ...).
//!
//! The coupling is implicit in E^{n+1} but local, so it is solved cell by cell: the curl pass
//! uses the material's (ca, cb) with the poles' instantaneous response folded in
//! ([`AdeMaterial::ca_cb`]), and the dispersive pass then adds the poles' memory term and
//! advances their state from E^n (a copy kept per dispersive cell) and the final E^{n+1}.

use super::space::EPS0;
use num_complex::Complex64;
use std::f64::consts::PI;

/// The most poles one material may have (Lorentz, Drude and Debye together): the CUDA
/// dispersive kernel takes a material's poles as a fixed-size argument. The library's fits have
/// at most six.
pub const MAX_POLES: usize = 8;

/// One pole of a permittivity, in the scene's units (Hz, s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pole {
    /// `d_eps w0^2 / (w0^2 - w^2 - i w g)`, w0 = 2 pi `frequency`, g = 2 pi `damping`.
    Lorentz {
        /// Strength (static contribution to epsilon).
        delta_epsilon: f64,
        /// Resonance frequency w0 / 2pi, Hz.
        frequency: f64,
        /// Damping g / 2pi, Hz.
        damping: f64,
    },
    /// `-wp^2 / (w^2 + i w g)`, wp = 2 pi `frequency`, g = 2 pi `damping`.
    Drude {
        /// Plasma frequency wp / 2pi, Hz.
        frequency: f64,
        /// Collision frequency g / 2pi, Hz.
        damping: f64,
    },
    /// `d_eps / (1 - i w tau)`.
    Debye {
        /// Strength (static contribution to epsilon).
        delta_epsilon: f64,
        /// Relaxation time tau, s.
        relaxation_time: f64,
    },
}

/// The name of a pole kind as the scene writes it.
impl Pole {
    /// "lorentz", "drude" or "debye".
    pub fn kind(&self) -> &'static str {
        match self {
            Pole::Lorentz { .. } => "lorentz",
            Pole::Drude { .. } => "drude",
            Pole::Debye { .. } => "debye",
        }
    }

    /// The pole with its strength scaled by `fraction` (its susceptibility times `fraction`
    /// at every frequency): a Lorentz or Debye `delta_epsilon`, a Drude plasma frequency's
    /// square.
    pub fn scaled(&self, fraction: f64) -> Pole {
        match *self {
            Pole::Lorentz {
                delta_epsilon,
                frequency,
                damping,
            } => Pole::Lorentz {
                delta_epsilon: delta_epsilon * fraction,
                frequency,
                damping,
            },
            Pole::Drude { frequency, damping } => Pole::Drude {
                frequency: frequency * fraction.sqrt(),
                damping,
            },
            Pole::Debye {
                delta_epsilon,
                relaxation_time,
            } => Pole::Debye {
                delta_epsilon: delta_epsilon * fraction,
                relaxation_time,
            },
        }
    }

    /// The pole's susceptibility at frequency `f` (Hz): its term of eps(f).
    pub fn susceptibility(&self, f: f64) -> Complex64 {
        let w = 2.0 * PI * f;
        let i = Complex64::i();
        match *self {
            Pole::Lorentz {
                delta_epsilon,
                frequency,
                damping,
            } => {
                let (w0, g) = (2.0 * PI * frequency, 2.0 * PI * damping);
                delta_epsilon * w0 * w0 / (w0 * w0 - w * w - i * w * g)
            }
            Pole::Drude { frequency, damping } => {
                let (wp, g) = (2.0 * PI * frequency, 2.0 * PI * damping);
                -wp * wp / (w * w + i * w * g)
            }
            Pole::Debye {
                delta_epsilon,
                relaxation_time,
            } => delta_epsilon / (1.0 - i * w * relaxation_time),
        }
    }

    /// How many state values per cell the pole's update keeps: J and P for Lorentz, J for
    /// Drude, P for Debye.
    pub fn state_len(&self) -> usize {
        match self {
            Pole::Lorentz { .. } => 2,
            Pole::Drude { .. } | Pole::Debye { .. } => 1,
        }
    }

    /// The pole's update coefficients at time step `dt` (see [`AdePole`]).
    pub fn ade(&self, dt: f64) -> AdePole {
        match *self {
            Pole::Lorentz {
                delta_epsilon,
                frequency,
                damping,
            } => {
                let (w0, g) = (2.0 * PI * frequency, 2.0 * PI * damping);
                second_order(w0, g, delta_epsilon * w0 * w0, dt)
            }
            Pole::Drude { frequency, damping } => {
                let (wp, g) = (2.0 * PI * frequency, 2.0 * PI * damping);
                second_order(0.0, g, wp * wp, dt)
            }
            Pole::Debye {
                delta_epsilon,
                relaxation_time,
            } => {
                // tau (P' - P) / dt + (P' + P) / 2 = eps0 d_eps (E' + E) / 2, in units of eps0:
                // P' = a P + b (E' + E); the mean current is (P' - P) / dt.
                let r = dt / (2.0 * relaxation_time);
                AdePole::Debye {
                    a: (1.0 - r) / (1.0 + r),
                    b: delta_epsilon * r / (1.0 + r),
                }
            }
        }
    }
}

/// The trapezoidal update of J' = -g J - w0^2 P + w E, P' = J (P, J in units of eps0):
/// J' = alpha J + beta P + kappa (E' + E), P' = P + dt (J + J') / 2.
fn second_order(w0: f64, g: f64, w: f64, dt: f64) -> AdePole {
    let q = (w0 * dt) * (w0 * dt) / 4.0;
    let d = 1.0 + g * dt / 2.0 + q;
    let alpha = (1.0 - g * dt / 2.0 - q) / d;
    let beta = -w0 * w0 * dt / d;
    let kappa = w * dt / (2.0 * d);
    if w0 == 0.0 {
        AdePole::Drude { alpha, kappa }
    } else {
        AdePole::Lorentz {
            alpha,
            beta,
            kappa,
            half_dt: dt / 2.0,
        }
    }
}

/// One pole's update coefficients, with P and J stored in units of eps0 (P / eps0 is in V/m,
/// like E, which keeps f32 values far from the subnormal range).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AdePole {
    /// J' = alpha J + beta P + kappa (E' + E); P' = P + half_dt (J + J').
    Lorentz {
        /// J's own factor.
        alpha: f64,
        /// P's factor in J'.
        beta: f64,
        /// E's factor in J'.
        kappa: f64,
        /// dt / 2.
        half_dt: f64,
    },
    /// J' = alpha J + kappa (E' + E).
    Drude {
        /// J's own factor.
        alpha: f64,
        /// E's factor in J'.
        kappa: f64,
    },
    /// P' = a P + b (E' + E).
    Debye {
        /// P's own factor.
        a: f64,
        /// E's factor.
        b: f64,
    },
}

impl AdePole {
    /// True when every coefficient is a finite number (a pole of absurd strength or rate
    /// overflows them, and the fields with them).
    pub fn is_finite(&self) -> bool {
        match *self {
            AdePole::Lorentz {
                alpha,
                beta,
                kappa,
                half_dt,
            } => [alpha, beta, kappa, half_dt].iter().all(|x| x.is_finite()),
            AdePole::Drude { alpha, kappa } => alpha.is_finite() && kappa.is_finite(),
            AdePole::Debye { a, b } => a.is_finite() && b.is_finite(),
        }
    }

    /// The pole's instantaneous response: the coefficient of E^{n+1} in its mean current
    /// (J + J') / 2 (Lorentz, Drude) or (P' - P) / dt (Debye), times dt, in units of eps0.
    pub fn instantaneous(&self, dt: f64) -> f64 {
        match *self {
            AdePole::Lorentz { kappa, .. } | AdePole::Drude { kappa, .. } => kappa * dt / 2.0,
            AdePole::Debye { b, .. } => b,
        }
    }
}

/// A dispersive material's whole update: the curl pass's (ca, cb) with the poles folded in,
/// and the poles.
#[derive(Debug, Clone, PartialEq)]
pub struct AdeMaterial {
    /// E = ca E + cb (curl H - J_source - memory), the E-update coefficients.
    pub ca: f64,
    /// The gain from curl H, dt / eps_effective.
    pub cb: f64,
    /// The poles' coefficients.
    pub poles: Vec<AdePole>,
}

impl AdeMaterial {
    /// The update of a material with relative permittivity `epsilon` (eps_inf), conductivity
    /// `sigma` and `poles` at time step `dt`.
    ///
    /// Solving `eps_inf eps0 (E' - E) / dt + sigma (E' + E) / 2 = curl H - sum Jmean` for E',
    /// with each pole's mean current `Jmean = r + k (E' + E) / dt` (r its memory part, k its
    /// [`AdePole::instantaneous`] response times eps0), gives
    /// `E' = ca E + cb (curl H - sum r)` with `cb = dt / (eps0 (eps_inf + K) + sigma dt / 2)`,
    /// `ca = (eps0 (eps_inf - K) - sigma dt / 2) cb / dt`, K = sum k.
    pub fn new(epsilon: f64, sigma: f64, poles: &[Pole], dt: f64) -> AdeMaterial {
        let poles: Vec<AdePole> = poles.iter().map(|p| p.ade(dt)).collect();
        let k: f64 = poles.iter().map(|p| p.instantaneous(dt)).sum();
        let denominator = EPS0 * (epsilon + k) + sigma * dt / 2.0;
        let cb = dt / denominator;
        let ca = (EPS0 * (epsilon - k) - sigma * dt / 2.0) / denominator;
        AdeMaterial { ca, cb, poles }
    }
}

/// The largest w dt the update resolves: beyond it the bilinear transform maps the pole's
/// frequency (2/dt) atan(w dt / 2) more than 10% below where it is (at w dt = 1.1, tan(x)/x at
/// x = 0.55 is 1.11). The scheme stays stable; the answer would be wrong.
pub const MAX_POLE_OMEGA_DT: f64 = 1.1;

/// w dt of the pole's fastest rate at time step `dt`: w0 (Lorentz), wp (Drude), 1/tau (Debye).
pub fn pole_omega_dt(pole: &Pole, dt: f64) -> f64 {
    match *pole {
        Pole::Lorentz { frequency, .. } | Pole::Drude { frequency, .. } => {
            2.0 * PI * frequency * dt
        }
        Pole::Debye {
            relaxation_time, ..
        } => dt / relaxation_time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pole's discrete response at frequency f: the bilinear transform of the continuous
    /// one, i.e. the continuous susceptibility at (2/dt) tan(w dt / 2).
    #[test]
    fn trapezoidal_poles_are_the_bilinear_transform() {
        let dt = 1e-17;
        let poles = [
            Pole::Lorentz {
                delta_epsilon: 1.5,
                frequency: 4e14,
                damping: 2e13,
            },
            Pole::Drude {
                frequency: 2.18e15,
                damping: 4.35e12,
            },
            Pole::Debye {
                delta_epsilon: 75.0,
                relaxation_time: 9.4e-17,
            },
        ];
        for pole in poles {
            let f = 5e14;
            let w = 2.0 * PI * f;
            // z = e^{-i w dt}; the state goes as z^n. The E equation term sum Jmean = sum over
            // poles of (mean current) / (E' + E) * (E' + E); check the susceptibility from the
            // pole update alone: chi = P / E with P' = z P.
            let z = Complex64::new(0.0, -w * dt).exp();
            let chi = match pole.ade(dt) {
                AdePole::Lorentz {
                    alpha,
                    beta,
                    kappa,
                    half_dt,
                } => {
                    // J (z - alpha) = beta P + kappa (z + 1) E, P (z - 1) = half_dt (z + 1) J.
                    let j_over_p = (z - 1.0) / (half_dt * (z + 1.0));
                    kappa * (z + 1.0) / (j_over_p * (z - alpha) - beta)
                }
                AdePole::Drude { alpha, kappa } => {
                    // J (z - alpha) = kappa (z + 1) E, and P = J / (-i w~) with the bilinear
                    // derivative: P (z - 1) = (dt/2) (z + 1) J.
                    let j = kappa * (z + 1.0) / (z - alpha);
                    j * dt / 2.0 * (z + 1.0) / (z - 1.0)
                }
                AdePole::Debye { a, b } => b * (z + 1.0) / (z - a),
            };
            let warped = (2.0 / dt) * (w * dt / 2.0).tan() / (2.0 * PI);
            let exact = pole.susceptibility(warped);
            assert!(
                (chi - exact).norm() < 1e-9 * exact.norm(),
                "{pole:?}: {chi} vs {exact}"
            );
        }
    }

    #[test]
    fn instantaneous_response_folds_into_ca_cb() {
        let dt = 1e-17;
        let m = AdeMaterial::new(1.0, 0.0, &[], dt);
        assert_eq!((m.ca, m.cb), (1.0, dt / EPS0));
        let d = Pole::Drude {
            frequency: 2e15,
            damping: 1e13,
        };
        let m = AdeMaterial::new(2.0, 0.0, &[d], dt);
        let k = d.ade(dt).instantaneous(dt);
        assert!((m.cb - dt / (EPS0 * (2.0 + k))).abs() < 1e-30);
        assert!((m.ca - (2.0 - k) / (2.0 + k)).abs() < 1e-15);
    }

    /// The rate the scene check holds below [`MAX_POLE_OMEGA_DT`] is each kind's fastest one:
    /// w0 dt, wp dt (2 pi times the frequency, times dt) and dt / tau.
    #[test]
    fn pole_omega_dt_is_the_fastest_rate_times_dt() {
        let dt = 3e-17;
        // The same products in possibly another order: a few ulps apart at most.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-15 * b.abs();
        let lorentz = Pole::Lorentz {
            delta_epsilon: 1.5,
            frequency: 4e14,
            damping: 2e13,
        };
        assert!(close(pole_omega_dt(&lorentz, dt), 2.0 * PI * 4e14 * dt));
        let drude = Pole::Drude {
            frequency: 2.18e15,
            damping: 4.35e12,
        };
        assert!(close(pole_omega_dt(&drude, dt), 2.0 * PI * 2.18e15 * dt));
        let debye = Pole::Debye {
            delta_epsilon: 75.0,
            relaxation_time: 9.4e-17,
        };
        assert!(close(pole_omega_dt(&debye, dt), dt / 9.4e-17));
    }

    /// The kind names are the scene's keys and the HDF5 dataset names under `/materials`
    /// (design.md section 6), which readers look up by name.
    #[test]
    fn pole_kinds_are_the_scene_keys() {
        let l = Pole::Lorentz {
            delta_epsilon: 1.0,
            frequency: 1.0,
            damping: 0.0,
        };
        let d = Pole::Drude {
            frequency: 1.0,
            damping: 0.0,
        };
        let b = Pole::Debye {
            delta_epsilon: 1.0,
            relaxation_time: 1.0,
        };
        assert_eq!(
            [l.kind(), d.kind(), b.kind()],
            ["lorentz", "drude", "debye"]
        );
    }
}
