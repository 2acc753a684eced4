//! The material library: published dispersion fits that a scene names with
//! `{ library = "Au" }`, listed by `yee materials`.
//!
//! Every entry is either a published model rewritten exactly as poles (the Rakic et al.
//! Lorentz-Drude metals, the Sellmeier glasses, water's Debye relaxation), or a fit of one Debye
//! pole and a conductivity to a published semi-empirical model (the Peplinski soils, built here
//! by [`fit_debye`] from [`peplinski`]). The conversions, with e^{-iwt} and the poles of
//! [`Pole`]:
//! - Rakic: `eps = 1 - f0 wp^2 / (w (w + i G0)) + sum_j f_j wp^2 / (w_j^2 - w^2 - i w G_j)`, every
//!   parameter an energy in eV, is a Drude pole of plasma frequency sqrt(f0) wp and damping G0,
//!   and Lorentz poles of strength f_j wp^2 / w_j^2, resonance w_j and damping G_j; an energy
//!   E (eV) is the frequency E / h (h in eV s) in Hz.
//! - Sellmeier: `n^2 = 1 + sum B lambda^2 / (lambda^2 - C)` is a sum of lossless Lorentz poles of
//!   strength B at the frequency c / sqrt(C).

use super::dispersion::Pole;
use super::space::{C0, EPS0};
use num_complex::Complex64;
use std::f64::consts::PI;
use std::sync::OnceLock;

/// Planck's constant in eV s (CODATA 2018, exact): a photon of energy E (eV) has the frequency
/// E / H_EV (Hz).
pub const H_EV: f64 = 4.135_667_696e-15;

/// One published fit of a material's permittivity.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryFit {
    /// The name a scene writes (`library = "Au"`).
    pub name: &'static str,
    /// What the material is, in a few words.
    pub description: &'static str,
    /// The band (Hz) where the fit holds.
    pub band: [f64; 2],
    /// The publication the parameters come from.
    pub source: &'static str,
    /// eps_inf.
    pub epsilon: f64,
    /// The poles, in the units of [`Pole`] (Hz, s).
    pub poles: Vec<Pole>,
    /// Conductivity (S/m), the `i sigma / (w eps0)` term; zero except for the fitted soils,
    /// whose losses at the bottom of the band are ionic conduction.
    pub conductivity: f64,
    /// For a fit made here to a published model (the soils): the largest relative error
    /// |eps_fit - eps_model| / |eps_model| over the band. `None` when the poles are the
    /// published model itself, rewritten exactly.
    pub fit_error: Option<f64>,
}

impl LibraryFit {
    /// eps(f) of the fit (Hz), e^{-iwt}: epsilon, the poles and the conductivity.
    pub fn epsilon_at(&self, f: f64) -> Complex64 {
        let w = 2.0 * PI * f;
        let mut eps = Complex64::new(self.epsilon, self.conductivity / (w * EPS0));
        for p in &self.poles {
            eps += p.susceptibility(f);
        }
        eps
    }
}

/// One metal of Rakic et al. (1998), Table 1 (Lorentz-Drude model), energies in eV.
struct Rakic {
    name: &'static str,
    description: &'static str,
    /// Plasma frequency wp.
    wp: f64,
    /// Oscillator strength of the free electrons.
    f0: f64,
    /// Damping of the free electrons.
    g0: f64,
    /// The interband oscillators: (f_j, G_j, w_j).
    oscillators: &'static [(f64, f64, f64)],
}

/// The Lorentz-Drude parameters of Rakic, Djurisic, Elazar and Majewski, Appl. Opt. 37, 5271
/// (1998), Table 1 (Ag and Au have five oscillators, the others four).
// Pt's third resonance is 3.141 eV, the paper's value, not an approximation of pi.
#[allow(clippy::approx_constant)]
const RAKIC: [Rakic; 9] = [
    Rakic {
        name: "Ag",
        description: "silver, Lorentz-Drude fit (1 free-electron + 5 interband terms)",
        wp: 9.01,
        f0: 0.845,
        g0: 0.048,
        oscillators: &[
            (0.065, 3.886, 0.816),
            (0.124, 0.452, 4.481),
            (0.011, 0.065, 8.185),
            (0.840, 0.916, 9.083),
            (5.646, 2.419, 20.29),
        ],
    },
    Rakic {
        name: "Al",
        description: "aluminium, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 14.98,
        f0: 0.523,
        g0: 0.047,
        oscillators: &[
            (0.227, 0.333, 0.162),
            (0.050, 0.312, 1.544),
            (0.166, 1.351, 1.808),
            (0.030, 3.382, 3.473),
        ],
    },
    Rakic {
        name: "Au",
        description: "gold, Lorentz-Drude fit (1 free-electron + 5 interband terms)",
        wp: 9.03,
        f0: 0.760,
        g0: 0.053,
        oscillators: &[
            (0.024, 0.241, 0.415),
            (0.010, 0.345, 0.830),
            (0.071, 0.870, 2.969),
            (0.601, 2.494, 4.304),
            (4.384, 2.214, 13.32),
        ],
    },
    Rakic {
        name: "Cu",
        description: "copper, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 10.83,
        f0: 0.575,
        g0: 0.030,
        oscillators: &[
            (0.061, 0.378, 0.291),
            (0.104, 1.056, 2.957),
            (0.723, 3.213, 5.300),
            (0.638, 4.305, 11.18),
        ],
    },
    Rakic {
        name: "Cr",
        description: "chromium, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 10.75,
        f0: 0.168,
        g0: 0.047,
        oscillators: &[
            (0.151, 3.175, 0.121),
            (0.150, 1.305, 0.543),
            (1.149, 2.676, 1.970),
            (0.825, 1.335, 8.775),
        ],
    },
    Rakic {
        name: "Ni",
        description: "nickel, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 15.92,
        f0: 0.096,
        g0: 0.048,
        oscillators: &[
            (0.100, 4.511, 0.174),
            (0.135, 1.334, 0.582),
            (0.106, 2.178, 1.597),
            (0.729, 6.292, 6.089),
        ],
    },
    Rakic {
        name: "Pt",
        description: "platinum, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 9.59,
        f0: 0.333,
        g0: 0.080,
        oscillators: &[
            (0.191, 0.517, 0.780),
            (0.659, 1.838, 1.314),
            (0.547, 3.668, 3.141),
            (3.576, 8.517, 9.249),
        ],
    },
    Rakic {
        name: "Ti",
        description: "titanium, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 7.29,
        f0: 0.148,
        g0: 0.082,
        oscillators: &[
            (0.899, 2.276, 0.777),
            (0.393, 2.518, 1.545),
            (0.187, 1.663, 2.509),
            (0.001, 1.762, 19.43),
        ],
    },
    Rakic {
        name: "W",
        description: "tungsten, Lorentz-Drude fit (1 free-electron + 4 interband terms)",
        wp: 13.22,
        f0: 0.206,
        g0: 0.064,
        oscillators: &[
            (0.054, 0.530, 1.004),
            (0.166, 1.281, 1.917),
            (0.706, 3.332, 3.580),
            (2.590, 5.836, 7.498),
        ],
    },
];

/// The band of the Rakic fits, in eV: 0.1-6 eV (0.2066-12.4 um). The paper fits each metal
/// over roughly this range (its spectral range of data differs a little by metal); Meep's
/// library, with the same parameters, states 0.2-12.4 um. The narrower common range is taken.
const RAKIC_BAND_EV: [f64; 2] = [0.1, 6.0];

/// The Rakic et al. citation.
const RAKIC_SOURCE: &str = "Rakic, Djurisic, Elazar & Majewski, Appl. Opt. 37, 5271 (1998)";

impl Rakic {
    /// The poles: one Drude pole and one Lorentz pole per oscillator (see the module doc).
    fn fit(&self) -> LibraryFit {
        let hz = |e_ev: f64| e_ev / H_EV;
        let mut poles = vec![Pole::Drude {
            frequency: hz(self.f0.sqrt() * self.wp),
            damping: hz(self.g0),
        }];
        poles.extend(self.oscillators.iter().map(|&(f, g, w)| Pole::Lorentz {
            delta_epsilon: f * self.wp * self.wp / (w * w),
            frequency: hz(w),
            damping: hz(g),
        }));
        LibraryFit {
            name: self.name,
            description: self.description,
            band: [hz(RAKIC_BAND_EV[0]), hz(RAKIC_BAND_EV[1])],
            source: RAKIC_SOURCE,
            epsilon: 1.0,
            poles,
            conductivity: 0.0,
            fit_error: None,
        }
    }
}

/// A Sellmeier formula `n^2 = 1 + sum B lambda^2 / (lambda^2 - lambda0^2)` (lambda in um).
struct Sellmeier {
    name: &'static str,
    description: &'static str,
    source: &'static str,
    /// The terms, (B, lambda0 in um): C = lambda0^2.
    terms: &'static [(f64, f64)],
    /// The wavelength range (um) of the measurements the formula fits.
    range_um: [f64; 2],
}

/// The Sellmeier formulas of the library.
const SELLMEIER: [Sellmeier; 4] = [
    Sellmeier {
        name: "SiO2",
        description: "fused silica, Sellmeier (3 terms), room temperature",
        source: "Malitson, J. Opt. Soc. Am. 55, 1205 (1965)",
        terms: &[
            (0.696_166_3, 0.068_404_3),
            (0.407_942_6, 0.116_241_4),
            (0.897_479_4, 9.896_161),
        ],
        range_um: [0.21, 6.7],
    },
    Sellmeier {
        name: "Si3N4",
        description: "stoichiometric LPCVD silicon nitride, Sellmeier (2 terms)",
        source: "Luke, Okawachi, Lamont, Gaeta & Lipson, Opt. Lett. 40, 4823 (2015)",
        terms: &[(3.0249, 0.135_340_6), (40314.0, 1239.842)],
        range_um: [0.31, 5.504],
    },
    Sellmeier {
        name: "Si3N4",
        description: "amorphous silicon nitride film, Sellmeier (1 term), visible and near IR",
        source: "Philipp, J. Electrochem. Soc. 120, 295 (1973)",
        terms: &[(2.8939, 0.13967)],
        range_um: [0.207, 1.24],
    },
    Sellmeier {
        name: "Si",
        description: "crystalline silicon in the infrared (transparent), Sellmeier (3 terms), 26 C",
        source: "Salzberg & Villa, J. Opt. Soc. Am. 47, 244 (1957)",
        terms: &[
            (10.668_429_3, 0.301_516_485),
            (0.003_043_474_8, 1.134_751_15),
            (1.541_334_08, 1104.0),
        ],
        range_um: [1.36, 11.0],
    },
];

impl Sellmeier {
    /// The poles: one lossless Lorentz pole per term (see the module doc).
    fn fit(&self) -> LibraryFit {
        let hz = |um: f64| C0 / (um * 1e-6);
        LibraryFit {
            name: self.name,
            description: self.description,
            band: [hz(self.range_um[1]), hz(self.range_um[0])],
            source: self.source,
            epsilon: 1.0,
            poles: self
                .terms
                .iter()
                .map(|&(b, l0)| Pole::Lorentz {
                    delta_epsilon: b,
                    frequency: hz(l0),
                    damping: 0.0,
                })
                .collect(),
            conductivity: 0.0,
            fit_error: None,
        }
    }
}

/// Pure water's Debye relaxation at `temperature` (C) as the Peplinski soil model uses it
/// (Stogryn's fit, after Ulaby, Moore & Fung, Microwave Remote Sensing III, 1986):
/// (eps_inf, eps_static, tau in s), eps_inf = 4.9, 2 pi tau = 1.1109e-10 - 3.824e-12 T +
/// 6.938e-14 T^2 - 5.096e-16 T^3 s, eps_static = 88.045 - 0.4147 T + 6.295e-4 T^2 +
/// 1.075e-5 T^3. At 20 C: 2 pi tau = 0.58e-10 s and eps_static = 80.1, as Peplinski et al.
/// quote.
pub fn water_debye(temperature: f64) -> (f64, f64, f64) {
    let t = temperature;
    let two_pi_tau = 1.1109e-10 - 3.824e-12 * t + 6.938e-14 * t * t - 5.096e-16 * t * t * t;
    let eps_static = 88.045 - 0.4147 * t + 6.295e-4 * t * t + 1.075e-5 * t * t * t;
    (4.9, eps_static, two_pi_tau / (2.0 * PI))
}

/// A soil for the Peplinski et al. model: texture, densities, water and temperature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Soil {
    /// Sand mass fraction S of the solid (0-1).
    pub sand: f64,
    /// Clay mass fraction C of the solid (0-1); silt is the rest.
    pub clay: f64,
    /// Bulk density rho_b, g/cm^3.
    pub bulk_density: f64,
    /// Specific density of the solid particles rho_s, g/cm^3 (about 2.66 for quartz sand).
    pub particle_density: f64,
    /// Volumetric water content m_v (0-1), at most the porosity 1 - rho_b / rho_s.
    pub water: f64,
    /// Temperature, C (sets the water's relaxation).
    pub temperature: f64,
}

impl Soil {
    /// An error naming the first parameter out of its range, or Ok.
    pub fn check(&self) -> Result<(), String> {
        let fraction = |v: f64, key: &str| {
            if v.is_finite() && (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!(
                    "soil `{key}` must be a mass fraction in [0, 1], got {v}"
                ))
            }
        };
        fraction(self.sand, "sand")?;
        fraction(self.clay, "clay")?;
        if self.sand + self.clay > 1.0 {
            return Err(format!(
                "soil `sand` + `clay` must be at most 1 (silt is the rest), got {}",
                self.sand + self.clay
            ));
        }
        for (v, key) in [
            (self.bulk_density, "bulk_density"),
            (self.particle_density, "particle_density"),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("soil `{key}` must be > 0 g/cm^3, got {v}"));
            }
        }
        if self.bulk_density >= self.particle_density {
            return Err(format!(
                "soil `bulk_density` ({}) must be below `particle_density` ({}): the soil needs pores",
                self.bulk_density, self.particle_density
            ));
        }
        let porosity = 1.0 - self.bulk_density / self.particle_density;
        if !(self.water.is_finite() && self.water > 0.0 && self.water <= porosity) {
            return Err(format!(
                "soil `water` must be a volumetric fraction in (0, {porosity:.3}] (the porosity 1 - bulk_density / particle_density), got {}",
                self.water
            ));
        }
        if !(self.temperature.is_finite() && (0.0..=40.0).contains(&self.temperature)) {
            return Err(format!(
                "soil `temperature` must be in [0, 40] C (the range of the water model), got {}",
                self.temperature
            ));
        }
        Ok(())
    }
}

/// The band (Hz) Peplinski et al. fitted their low-frequency form to measurements.
pub const PEPLINSKI_BAND: [f64; 2] = [0.3e9, 1.3e9];

/// The complex permittivity (e^{-iwt}: eps' + i eps'') of `soil` at `f` (Hz) by the
/// semi-empirical mixing model of Peplinski, Ulaby & Dobson, IEEE Trans. Geosci. Remote Sens.
/// 33, 803 (1995), in its 0.3-1.3 GHz form ([`PEPLINSKI_BAND`]; used below 0.3 GHz, as GPR
/// codes do, it is an extrapolation):
/// - free water: eps_fw = 4.9 + (eps_w0 - 4.9) / (1 - i w tau_w) + i sigma_eff / (w eps0)
///   (rho_s - rho_b) / (rho_s m_v), [`water_debye`] at the soil's temperature;
/// - sigma_eff = 0.0467 + 0.2204 rho_b - 0.4111 S + 0.6614 C (S/m);
/// - eps' = 1.15 [1 + (rho_b / rho_s)(eps_s^a - 1) + m_v^b1 eps_fw'^a - m_v]^(1/a) - 0.68,
///   eps'' = m_v^(b2 / a) eps_fw'', with a = 0.65, eps_s = (1.01 + 0.44 rho_s)^2 - 0.062,
///   b1 = 1.2748 - 0.519 S - 0.152 C, b2 = 1.33797 - 0.603 S - 0.166 C (densities in g/cm^3).
pub fn peplinski(soil: &Soil, f: f64) -> Result<Complex64, String> {
    soil.check()?;
    if !(f.is_finite() && f > 0.0) {
        return Err(format!("frequency must be > 0 Hz, got {f}"));
    }
    let Soil {
        sand: s,
        clay: c,
        bulk_density: rb,
        particle_density: rs,
        water: mv,
        temperature,
    } = *soil;
    let w = 2.0 * PI * f;
    let (eps_winf, eps_w0, tau) = water_debye(temperature);
    let sigma_eff = 0.0467 + 0.2204 * rb - 0.4111 * s + 0.6614 * c;
    let relax = (eps_w0 - eps_winf) / Complex64::new(1.0, -w * tau);
    let water_re = eps_winf + relax.re;
    let water_im = relax.im + sigma_eff / (w * EPS0) * (rs - rb) / (rs * mv);
    let alpha = 0.65;
    let eps_solid = (1.01 + 0.44 * rs).powi(2) - 0.062;
    let beta1 = 1.2748 - 0.519 * s - 0.152 * c;
    let beta2 = 1.33797 - 0.603 * s - 0.166 * c;
    let mix =
        1.0 + rb / rs * (eps_solid.powf(alpha) - 1.0) + mv.powf(beta1) * water_re.powf(alpha) - mv;
    let re = 1.15 * mix.powf(1.0 / alpha) - 0.68;
    let im = mv.powf(beta2 / alpha) * water_im;
    Ok(Complex64::new(re, im))
}

/// One Debye pole, eps_inf and a conductivity fitted to a permittivity over a band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DebyeFit {
    /// eps_inf (at least 1).
    pub epsilon: f64,
    /// The pole's strength (>= 0).
    pub delta_epsilon: f64,
    /// The pole's relaxation time, s.
    pub relaxation_time: f64,
    /// Conductivity, S/m (>= 0).
    pub conductivity: f64,
    /// The largest |eps_fit - eps_target| / |eps_target| over the band's samples.
    pub max_relative_error: f64,
}

impl DebyeFit {
    /// eps(f) of the fit.
    pub fn epsilon_at(&self, f: f64) -> Complex64 {
        let w = 2.0 * PI * f;
        Complex64::new(self.epsilon, self.conductivity / (w * EPS0))
            + self.delta_epsilon / Complex64::new(1.0, -w * self.relaxation_time)
    }
}

/// Frequencies where [`fit_debye`] compares the fit with its target: log-spaced over the band.
pub const FIT_SAMPLES: usize = 64;

/// The least-squares fit of `eps_inf + d_eps / (1 - i w tau) + i sigma / (w eps0)` to
/// `target(f)` over `band` (Hz), on [`FIT_SAMPLES`] log-spaced frequencies, minimising the sum of
/// |eps_fit - eps_target|^2 / |eps_target|^2 (the relative error, so that eps'' counts where it
/// is small next to eps'), with the passive bounds eps_inf >= 1, d_eps >= 0, sigma >= 0, and
/// tau >= `min_relaxation_time` (s) (the time step must resolve the pole: the resolver refuses
/// dt / tau beyond 1.1).
///
/// For a fixed tau the model is linear in (eps_inf, d_eps, sigma): that bounded linear problem
/// is solved exactly (every set of active bounds is tried, and the best feasible solution
/// taken), and tau is found by a scan of 40 points per decade from 1 / (2 pi f_max) / 1000 to
/// 1000 / (2 pi f_min) followed by a golden-section search around the best point. A target that
/// is itself one such Debye medium is recovered to rounding.
pub fn fit_debye(
    band: [f64; 2],
    min_relaxation_time: f64,
    target: impl Fn(f64) -> Complex64,
) -> Result<DebyeFit, String> {
    let [lo, hi] = band;
    if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && lo < hi) {
        return Err(format!(
            "the fit band must be [fmin, fmax] in Hz with 0 < fmin < fmax, got [{lo}, {hi}]"
        ));
    }
    if !(min_relaxation_time.is_finite() && min_relaxation_time >= 0.0) {
        return Err(format!(
            "the minimum relaxation time must be >= 0 s, got {min_relaxation_time}"
        ));
    }
    let freqs: Vec<f64> = (0..FIT_SAMPLES)
        .map(|k| lo * (hi / lo).powf(k as f64 / (FIT_SAMPLES - 1) as f64))
        .collect();
    let targets: Vec<Complex64> = freqs.iter().map(|&f| target(f)).collect();
    if let Some((f, t)) = freqs
        .iter()
        .zip(&targets)
        .find(|(_, t)| !(t.re.is_finite() && t.im.is_finite()) || t.norm() == 0.0)
    {
        return Err(format!(
            "the target permittivity is {t} at {f} Hz: it must be finite and non-zero"
        ));
    }
    let solve = |tau: f64| linear_fit(&freqs, &targets, tau);
    let t_lo = (1.0 / (2.0 * PI * hi) / 1000.0).max(min_relaxation_time);
    let t_hi = 1000.0 / (2.0 * PI * lo);
    if t_lo >= t_hi {
        return Err(format!(
            "the minimum relaxation time {min_relaxation_time} s leaves no pole that acts in the band"
        ));
    }
    let decades = (t_hi / t_lo).log10();
    let n = ((40.0 * decades).ceil() as usize).max(2);
    let at = |k: f64| (t_lo.ln() + (t_hi / t_lo).ln() * k / n as f64).exp();
    let (mut best_k, mut best) = (0usize, f64::INFINITY);
    for k in 0..=n {
        let r = solve(at(k as f64)).1;
        if r < best {
            (best_k, best) = (k, r);
        }
    }
    // Golden section in ln tau over the scan's neighbours of the best point.
    let (mut a, mut b) = (
        at(best_k.saturating_sub(1) as f64).ln(),
        at((best_k + 1).min(n) as f64).ln(),
    );
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let cost = |x: f64| solve(x.exp()).1;
    let (mut x1, mut x2) = (b - g * (b - a), a + g * (b - a));
    let (mut c1, mut c2) = (cost(x1), cost(x2));
    for _ in 0..200 {
        if (b - a).abs() < 1e-14 * a.abs().max(1.0) {
            break;
        }
        if c1 < c2 {
            (b, x2, c2) = (x2, x1, c1);
            x1 = b - g * (b - a);
            c1 = cost(x1);
        } else {
            (a, x1, c1) = (x1, x2, c2);
            x2 = a + g * (b - a);
            c2 = cost(x2);
        }
    }
    // The best of the search's end points and the scan's (the cost may be flat).
    let mut tau = at(best_k as f64);
    for x in [x1, x2] {
        if cost(x) < solve(tau).1 {
            tau = x.exp();
        }
    }
    // exp(ln tau) may land an ulp below the lower bound.
    let tau = tau.clamp(t_lo, t_hi);
    let ([epsilon, delta_epsilon, conductivity], _) = solve(tau);
    let mut fit = DebyeFit {
        epsilon,
        delta_epsilon,
        relaxation_time: tau,
        conductivity,
        max_relative_error: 0.0,
    };
    fit.max_relative_error = freqs
        .iter()
        .zip(&targets)
        .map(|(&f, t)| (fit.epsilon_at(f) - t).norm() / t.norm())
        .fold(0.0, f64::max);
    Ok(fit)
}

/// The best (eps_inf, d_eps, sigma) for relaxation time `tau` under the bounds eps_inf >= 1,
/// d_eps >= 0, sigma >= 0, and its weighted squared residual.
fn linear_fit(freqs: &[f64], targets: &[Complex64], tau: f64) -> ([f64; 3], f64) {
    // Rows: the real and imaginary parts at each frequency, weighted by 1 / |target|.
    let n = freqs.len();
    let mut cols = [vec![0.0; 2 * n], vec![0.0; 2 * n], vec![0.0; 2 * n]];
    let mut rhs = vec![0.0; 2 * n];
    for (k, (&f, t)) in freqs.iter().zip(targets).enumerate() {
        let w = 2.0 * PI * f;
        let x = w * tau;
        let wt = 1.0 / t.norm();
        let d = 1.0 + x * x;
        cols[0][2 * k] = wt;
        cols[1][2 * k] = wt / d;
        cols[1][2 * k + 1] = wt * x / d;
        cols[2][2 * k + 1] = wt / (w * EPS0);
        rhs[2 * k] = wt * t.re;
        rhs[2 * k + 1] = wt * t.im;
    }
    let bounds = [1.0, 0.0, 0.0];
    let mut best = ([1.0, 0.0, 0.0], f64::INFINITY);
    // Every set of variables held at their bounds (the bounded optimum is the unbounded
    // optimum of its own free set); 8 small solves.
    for held in 0u32..8 {
        let mut p = bounds;
        let free: Vec<usize> = (0..3).filter(|j| held & (1 << j) == 0).collect();
        let mut r = rhs.clone();
        for j in (0..3).filter(|j| held & (1 << j) != 0) {
            for (ri, ci) in r.iter_mut().zip(&cols[j]) {
                *ri -= bounds[j] * ci;
            }
        }
        let a: Vec<&[f64]> = free.iter().map(|&j| cols[j].as_slice()).collect();
        let Some(x) = least_squares(&a, &r) else {
            continue;
        };
        for (&j, v) in free.iter().zip(&x) {
            p[j] = *v;
        }
        if p[0] < bounds[0] || p[1] < 0.0 || p[2] < 0.0 {
            continue;
        }
        let res: f64 = (0..2 * n)
            .map(|i| {
                let m: f64 = (0..3).map(|j| cols[j][i] * p[j]).sum();
                (m - rhs[i]).powi(2)
            })
            .sum();
        if res < best.1 {
            best = (p, res);
        }
    }
    best
}

/// min |A x - b| for the columns `a` by modified Gram-Schmidt (QR), with one
/// re-orthogonalisation; None when the columns are (numerically) dependent.
fn least_squares(a: &[&[f64]], b: &[f64]) -> Option<Vec<f64>> {
    let m = a.len();
    if m == 0 {
        return Some(Vec::new());
    }
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>();
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(m);
    let mut r = vec![vec![0.0; m]; m];
    for (j, col) in a.iter().enumerate() {
        let mut v = col.to_vec();
        let norm0 = dot(&v, &v).sqrt();
        for _ in 0..2 {
            for (i, qi) in q.iter().enumerate() {
                let c = dot(qi, &v);
                r[i][j] += c;
                for (vk, qk) in v.iter_mut().zip(qi) {
                    *vk -= c * qk;
                }
            }
        }
        let norm = dot(&v, &v).sqrt();
        if norm0 == 0.0 || norm < 1e-12 * norm0 {
            return None;
        }
        r[j][j] = norm;
        v.iter_mut().for_each(|x| *x /= norm);
        q.push(v);
    }
    let qtb: Vec<f64> = q.iter().map(|qi| dot(qi, b)).collect();
    let mut x = vec![0.0; m];
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|k| r[i][k] * x[k]).sum();
        x[i] = (qtb[i] - s) / r[i][i];
    }
    Some(x)
}

/// A soil entry of the library: the Peplinski model of `soil` fitted over [`SOIL_BAND`].
struct SoilEntry {
    name: &'static str,
    description: &'static str,
    soil: Soil,
}

/// The band (Hz) of the soil fits: 0.1-1.3 GHz, the GPR band up to the top of the model's
/// low-frequency form (below 0.3 GHz the model itself is extrapolated).
pub const SOIL_BAND: [f64; 2] = [1e8, 1.3e9];

/// The shortest relaxation time a soil fit may take (s): 30 ps keeps the pole resolvable
/// (dt / tau <= 1.1) on grids with cells up to about 1 cm (dt = 19 ps in 3-D), fine enough for
/// 1.3 GHz in soils with eps' up to about 20; the water relaxation itself (9 ps) lies far above the
/// band and only its low-frequency tail counts there.
pub const SOIL_MIN_RELAXATION_TIME: f64 = 30e-12;

/// A loam (USDA: 40 % sand, 20 % clay, 40 % silt) and a sandy soil (90 % sand, 5 % clay), both
/// at bulk density 1.5 g/cm^3, quartz particles (2.66 g/cm^3), 20 C.
const SOILS: [SoilEntry; 6] = {
    const LOAM: Soil = Soil {
        sand: 0.4,
        clay: 0.2,
        bulk_density: 1.5,
        particle_density: 2.66,
        water: 0.0,
        temperature: 20.0,
    };
    const SAND: Soil = Soil {
        sand: 0.9,
        clay: 0.05,
        ..LOAM
    };
    [
        SoilEntry {
            name: "loam_5",
            description: "loam (S 0.4, C 0.2, rho_b 1.5), 5 % water by volume, 20 C",
            soil: Soil {
                water: 0.05,
                ..LOAM
            },
        },
        SoilEntry {
            name: "loam_10",
            description: "loam (S 0.4, C 0.2, rho_b 1.5), 10 % water by volume, 20 C",
            soil: Soil {
                water: 0.10,
                ..LOAM
            },
        },
        SoilEntry {
            name: "loam_20",
            description: "loam (S 0.4, C 0.2, rho_b 1.5), 20 % water by volume, 20 C",
            soil: Soil {
                water: 0.20,
                ..LOAM
            },
        },
        SoilEntry {
            name: "sand_5",
            description: "sandy soil (S 0.9, C 0.05, rho_b 1.5), 5 % water by volume, 20 C",
            soil: Soil {
                water: 0.05,
                ..SAND
            },
        },
        SoilEntry {
            name: "sand_10",
            description: "sandy soil (S 0.9, C 0.05, rho_b 1.5), 10 % water by volume, 20 C",
            soil: Soil {
                water: 0.10,
                ..SAND
            },
        },
        SoilEntry {
            name: "sand_20",
            description: "sandy soil (S 0.9, C 0.05, rho_b 1.5), 20 % water by volume, 20 C",
            soil: Soil {
                water: 0.20,
                ..SAND
            },
        },
    ]
};

/// The Peplinski et al. citation, with the fit made here.
const PEPLINSKI_SOURCE: &str = "Peplinski, Ulaby & Dobson, IEEE TGRS 33, 803 (1995), fitted here with one Debye pole + conductivity";

impl SoilEntry {
    /// The soil's library fit: [`fit_debye`] of [`peplinski`] over [`SOIL_BAND`].
    fn fit(&self) -> LibraryFit {
        let soil = self.soil;
        // The soils are constants that pass `Soil::check` (tests/material_library.rs evaluates
        // the model for each), so the model cannot fail here; were one edited out of range, the
        // NaN target makes `fit_debye` return an error, which the expect names at start-up.
        let fit = fit_debye(SOIL_BAND, SOIL_MIN_RELAXATION_TIME, |f| {
            peplinski(&soil, f).unwrap_or(Complex64::new(f64::NAN, f64::NAN))
        })
        .expect("the library's soils are valid Peplinski soils");
        LibraryFit {
            name: self.name,
            description: self.description,
            band: SOIL_BAND,
            source: PEPLINSKI_SOURCE,
            epsilon: fit.epsilon,
            poles: vec![Pole::Debye {
                delta_epsilon: fit.delta_epsilon,
                relaxation_time: fit.relaxation_time,
            }],
            conductivity: fit.conductivity,
            fit_error: Some(fit.max_relative_error),
        }
    }
}

/// The water entry: [`water_debye`] at 20 C, a single relaxation that holds up to about
/// 30 GHz (the second, 1 ps relaxation shows above about 100 GHz).
fn water() -> LibraryFit {
    let (eps_inf, eps_static, tau) = water_debye(20.0);
    LibraryFit {
        name: "water",
        description: "pure liquid water at 20 C, single Debye relaxation",
        band: [1e7, 3e10],
        source: "Stogryn's fit as used by Peplinski et al., IEEE TGRS 33, 803 (1995); agrees with Kaatze, J. Chem. Eng. Data 34, 371 (1989)",
        epsilon: eps_inf,
        poles: vec![Pole::Debye {
            delta_epsilon: eps_static - eps_inf,
            relaxation_time: tau,
        }],
        conductivity: 0.0,
        fit_error: None,
    }
}

/// Every fit of the library, in the order `yee materials` lists them (fits sharing a name:
/// the first is the default).
pub fn fits() -> Vec<LibraryFit> {
    // The soil fits take a few milliseconds; make them once.
    static ALL: OnceLock<Vec<LibraryFit>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<LibraryFit> = RAKIC.iter().map(Rakic::fit).collect();
        all.extend(SELLMEIER.iter().map(Sellmeier::fit));
        all.push(water());
        all.extend(SOILS.iter().map(SoilEntry::fit));
        all
    })
    .clone()
}

/// Common names a scene might write for a library material, with the name it holds.
const ALIASES: [(&str, &str); 14] = [
    ("silver", "Ag"),
    ("aluminium", "Al"),
    ("aluminum", "Al"),
    ("gold", "Au"),
    ("copper", "Cu"),
    ("chromium", "Cr"),
    ("nickel", "Ni"),
    ("platinum", "Pt"),
    ("titanium", "Ti"),
    ("tungsten", "W"),
    ("silica", "SiO2"),
    ("glass", "SiO2"),
    ("silicon", "Si"),
    ("nitride", "Si3N4"),
];

/// The fit named `name`; with `band`, the one whose band covers it best. The error says what
/// the library holds and the closest name, or, for a band outside every fit of the name, where
/// its fits hold.
pub fn lookup(name: &str, band: Option<[f64; 2]>) -> Result<LibraryFit, String> {
    let all = fits();
    let mut named: Vec<LibraryFit> = all.iter().filter(|f| f.name == name).cloned().collect();
    if named.is_empty() {
        let mut names: Vec<&str> = all.iter().map(|f| f.name).collect();
        names.dedup();
        return Err(format!(
            "no material `{name}` in the library (it has {}; `yee materials` lists them){}",
            names.join(", "),
            suggestion(name, &names)
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default()
        ));
    }
    let Some([lo, hi]) = band else {
        return Ok(named.remove(0));
    };
    // The fit covering most of the requested band (on a log scale, so that an octave counts
    // the same at either end); on a tie the first listed. A band that no fit touches is a
    // mistake in the scene (a fit used far outside its band is no model of the material).
    let overlap = |f: &LibraryFit| (f.band[1].min(hi).ln() - f.band[0].max(lo).ln()).max(0.0);
    named.sort_by(|a, b| overlap(b).total_cmp(&overlap(a)));
    if overlap(&named[0]) == 0.0 {
        let bands: Vec<String> = named
            .iter()
            .map(|f| format!("{:.3e}-{:.3e} Hz", f.band[0], f.band[1]))
            .collect();
        return Err(format!(
            "no fit of `{name}` covers any of the band [{lo:.3e}, {hi:.3e}] Hz: its fits hold over {}",
            bands.join(", ")
        ));
    }
    Ok(named.remove(0))
}

/// The library name closest to `name`: the same name in another case, a common name
/// ("gold"), or the most similar name (Jaro-Winkler above 0.7).
fn suggestion<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    let lower = name.trim().to_lowercase();
    if let Some(n) = names.iter().find(|n| n.to_lowercase() == lower) {
        return Some(n);
    }
    if let Some((_, n)) = ALIASES.iter().find(|(alias, _)| lower.starts_with(alias)) {
        return names.iter().find(|m| *m == n).copied();
    }
    names
        .iter()
        .map(|n| (strsim::jaro_winkler(&n.to_lowercase(), &lower), *n))
        .filter(|(s, _)| *s > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// `x` to four significant figures, without trailing zeros.
fn sig4(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The band as wavelengths: in um below 1 mm, else in m.
fn wavelengths(band: [f64; 2]) -> String {
    let (short, long) = (C0 / band[1], C0 / band[0]);
    if long < 1e-3 {
        format!("{}-{} um", sig4(short * 1e6), sig4(long * 1e6))
    } else {
        format!("{}-{} m", sig4(short), sig4(long))
    }
}

/// The poles by kind, e.g. "1 drude + 5 lorentz".
fn pole_counts(poles: &[Pole]) -> String {
    let kinds = ["drude", "lorentz", "debye"];
    let parts: Vec<String> = kinds
        .iter()
        .filter_map(|k| {
            let n = poles.iter().filter(|p| p.kind() == *k).count();
            (n > 0).then(|| format!("{n} {k}"))
        })
        .collect();
    if parts.is_empty() {
        "no poles".into()
    } else {
        parts.join(" + ")
    }
}

/// The listing `yee materials` prints: per fit, its name, band in Hz and wavelength, poles by
/// kind and source, then its description (with the fit error and conductivity of the soils).
pub fn table() -> String {
    let all = fits();
    let mut out = format!(
        "{:<8} {:<22} {:<18} {:<20} source\n",
        "name", "band (Hz)", "wavelength", "poles"
    );
    for f in &all {
        out += &format!(
            "{:<8} {:<22} {:<18} {:<20} {}\n",
            f.name,
            format!("{:.3e}-{:.3e}", f.band[0], f.band[1]),
            wavelengths(f.band),
            pole_counts(&f.poles),
            f.source
        );
        let mut note = f.description.to_string();
        if f.conductivity > 0.0 {
            note += &format!("; conductivity {} S/m", sig4(f.conductivity));
        }
        if let Some(e) = f.fit_error {
            note += &format!(
                "; fit within {}% of the model over the band",
                sig4(100.0 * e)
            );
        }
        out += &format!("{:<8} {note}\n", "");
    }
    out += "A scene names one with `{ library = \"Au\" }`; `band = [fmin, fmax]` (Hz) picks among fits sharing a name (default: the first listed).\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A single-Debye medium with a conductivity is recovered exactly (to the rounding of the
    /// tau search: the cost is quadratic in ln tau at its zero, so ln tau is found to about
    /// sqrt(machine epsilon) and the linear parameters follow; 1e-6 leaves a margin).
    #[test]
    fn fit_recovers_a_single_debye_medium() {
        for (eps_inf, d, tau, sigma) in [
            (4.0, 12.0, 2e-10, 0.01),
            (1.0, 75.0, 9.4e-12, 0.0),
            (2.5, 0.0, 1e-9, 0.05),
        ] {
            let truth = DebyeFit {
                epsilon: eps_inf,
                delta_epsilon: d,
                relaxation_time: tau,
                conductivity: sigma,
                max_relative_error: 0.0,
            };
            let fit = fit_debye([5e7, 2e9], 0.0, |f| truth.epsilon_at(f)).unwrap();
            assert!(fit.max_relative_error < 1e-9, "{fit:?}");
            let close = |a: f64, b: f64, scale: f64| (a - b).abs() <= 1e-6 * scale;
            assert!(close(fit.epsilon, eps_inf, eps_inf), "{fit:?}");
            assert!(close(fit.delta_epsilon, d, eps_inf + d), "{fit:?}");
            assert!(close(fit.conductivity, sigma, 1e-3), "{fit:?}");
            if d > 0.0 {
                assert!(close(fit.relaxation_time, tau, tau), "{fit:?}");
            }
        }
    }

    /// The bounds hold when the best unbounded fit breaks them: a target with eps' below 1
    /// and a negative (active) loss gets eps_inf = 1, sigma = 0.
    #[test]
    fn fit_respects_the_passive_bounds() {
        let fit = fit_debye([1e8, 1e9], 0.0, |f| Complex64::new(0.5, -1e8 / f)).unwrap();
        assert!(fit.epsilon >= 1.0 && fit.delta_epsilon >= 0.0 && fit.conductivity >= 0.0);
        assert_eq!(fit.epsilon, 1.0);
        assert!(
            fit.max_relative_error > 0.1,
            "the target is not passive: {fit:?}"
        );
    }

    /// Bad bands, bounds and targets are errors naming what is wrong.
    #[test]
    fn fit_rejects_bad_input() {
        let one = |_: f64| Complex64::new(2.0, 0.0);
        assert!(fit_debye([2e9, 1e9], 0.0, one)
            .unwrap_err()
            .contains("fmin < fmax"));
        assert!(fit_debye([1e8, 1e9], -1.0, one)
            .unwrap_err()
            .contains(">= 0 s"));
        assert!(fit_debye([1e8, 1e9], 1.0, one)
            .unwrap_err()
            .contains("no pole"));
        let nan = |_: f64| Complex64::new(f64::NAN, 0.0);
        assert!(fit_debye([1e8, 1e9], 0.0, nan)
            .unwrap_err()
            .contains("finite"));
    }

    /// The Gram-Schmidt least squares solves an exact over-determined system and reports
    /// dependent columns.
    #[test]
    fn least_squares_solves_and_detects_dependence() {
        let c0 = [1.0, 1.0, 1.0, 1.0];
        let c1 = [0.0, 1.0, 2.0, 3.0];
        let b: Vec<f64> = c1.iter().map(|x| 2.0 - 0.5 * x).collect();
        let x = least_squares(&[&c0, &c1], &b).unwrap();
        assert!(
            (x[0] - 2.0).abs() < 1e-14 && (x[1] + 0.5).abs() < 1e-14,
            "{x:?}"
        );
        assert!(least_squares(&[&c0, &c0], &b).is_none());
    }

    #[test]
    fn sig4_formats_four_significant_figures() {
        assert_eq!(sig4(0.2), "0.2");
        assert_eq!(sig4(12.39842), "12.4");
        assert_eq!(sig4(299.792458), "299.8");
        assert_eq!(sig4(12345.0), "12345");
        assert_eq!(sig4(0.00123456), "0.001235");
    }
}
