//! The material library against the published models it rewrites: every fit's eps(f), built
//! from its stored poles by `Material::epsilon_at`, equals the paper's own formula (evaluated
//! here from the paper's parameters in the paper's units) to 1e-9; a few measured values; the
//! soil fits against the Peplinski model; the lookup's errors and band choice; `yee materials`.

use num_complex::Complex64;
use std::f64::consts::PI;
use std::process::Command;
use yee::model::library::{self, fit_debye, lookup, peplinski, water_debye, LibraryFit, Soil};
use yee::model::{Material, C0};

/// Planck's constant in eV s (exact since 2019): E (eV) = H_EV f (Hz).
const H_EV: f64 = 4.135_667_696e-15;

/// The fit as the solver sees it: a `Material` with the fit's epsilon, poles and conductivity.
fn material(fit: &LibraryFit) -> Material {
    let mut m = Material::dielectric(fit.name, fit.epsilon, fit.conductivity);
    m.poles = fit.poles.clone();
    m.band = Some(fit.band);
    m
}

/// The one fit named `name` whose source contains `source`.
fn fit(name: &str, source: &str) -> LibraryFit {
    let all: Vec<LibraryFit> = library::fits()
        .into_iter()
        .filter(|f| f.name == name && f.source.contains(source))
        .collect();
    assert_eq!(all.len(), 1, "{name} from {source}");
    all[0].clone()
}

fn rel(a: Complex64, b: Complex64) -> f64 {
    (a - b).norm() / b.norm()
}

/// Log-spaced frequencies across a band, ends included.
fn across(band: [f64; 2], n: usize) -> Vec<f64> {
    (0..n)
        .map(|k| band[0] * (band[1] / band[0]).powf(k as f64 / (n - 1) as f64))
        .collect()
}

/// Rakic et al., Appl. Opt. 37, 5271 (1998), Table 1, transcribed again here in the paper's
/// form: (name, wp, f0, G0, [(f_j, G_j, w_j)]), energies in eV.
type RakicRow = (&'static str, f64, f64, f64, &'static [(f64, f64, f64)]);
// Pt's third resonance is 3.141 eV, the paper's value, not an approximation of pi.
#[allow(clippy::approx_constant)]
const RAKIC_TABLE: [RakicRow; 9] = [
    (
        "Ag",
        9.01,
        0.845,
        0.048,
        &[
            (0.065, 3.886, 0.816),
            (0.124, 0.452, 4.481),
            (0.011, 0.065, 8.185),
            (0.840, 0.916, 9.083),
            (5.646, 2.419, 20.29),
        ],
    ),
    (
        "Al",
        14.98,
        0.523,
        0.047,
        &[
            (0.227, 0.333, 0.162),
            (0.050, 0.312, 1.544),
            (0.166, 1.351, 1.808),
            (0.030, 3.382, 3.473),
        ],
    ),
    (
        "Au",
        9.03,
        0.760,
        0.053,
        &[
            (0.024, 0.241, 0.415),
            (0.010, 0.345, 0.830),
            (0.071, 0.870, 2.969),
            (0.601, 2.494, 4.304),
            (4.384, 2.214, 13.32),
        ],
    ),
    (
        "Cu",
        10.83,
        0.575,
        0.030,
        &[
            (0.061, 0.378, 0.291),
            (0.104, 1.056, 2.957),
            (0.723, 3.213, 5.300),
            (0.638, 4.305, 11.18),
        ],
    ),
    (
        "Cr",
        10.75,
        0.168,
        0.047,
        &[
            (0.151, 3.175, 0.121),
            (0.150, 1.305, 0.543),
            (1.149, 2.676, 1.970),
            (0.825, 1.335, 8.775),
        ],
    ),
    (
        "Ni",
        15.92,
        0.096,
        0.048,
        &[
            (0.100, 4.511, 0.174),
            (0.135, 1.334, 0.582),
            (0.106, 2.178, 1.597),
            (0.729, 6.292, 6.089),
        ],
    ),
    (
        "Pt",
        9.59,
        0.333,
        0.080,
        &[
            (0.191, 0.517, 0.780),
            (0.659, 1.838, 1.314),
            (0.547, 3.668, 3.141),
            (3.576, 8.517, 9.249),
        ],
    ),
    (
        "Ti",
        7.29,
        0.148,
        0.082,
        &[
            (0.899, 2.276, 0.777),
            (0.393, 2.518, 1.545),
            (0.187, 1.663, 2.509),
            (0.001, 1.762, 19.43),
        ],
    ),
    (
        "W",
        13.22,
        0.206,
        0.064,
        &[
            (0.054, 0.530, 1.004),
            (0.166, 1.281, 1.917),
            (0.706, 3.332, 3.580),
            (2.590, 5.836, 7.498),
        ],
    ),
];

/// The Lorentz-Drude formula of the paper at photon energy `e` (eV), e^{-iwt} as the paper's
/// eq. (2)-(4): eps = 1 - f0 wp^2 / (w (w + i G0)) + sum f_j wp^2 / (w_j^2 - w^2 - i w G_j).
fn rakic_formula(row: &RakicRow, e: f64) -> Complex64 {
    let (_, wp, f0, g0, osc) = *row;
    let i = Complex64::i();
    let mut eps = Complex64::new(1.0, 0.0) - f0 * wp * wp / (e * (e + i * g0));
    for &(f, g, w) in osc {
        eps += f * wp * wp / (w * w - e * e - i * e * g);
    }
    eps
}

/// The library's metals are the paper's formula, at 25 energies across each band.
#[test]
fn rakic_metals_match_the_papers_formula() {
    for row in &RAKIC_TABLE {
        let fit = fit(row.0, "Rakic");
        let m = material(&fit);
        // The band is 0.1-6 eV.
        assert!((fit.band[0] * H_EV - 0.1).abs() < 1e-12, "{}", row.0);
        assert!((fit.band[1] * H_EV - 6.0).abs() < 1e-12, "{}", row.0);
        assert_eq!(fit.poles.len(), 1 + row.4.len(), "{}", row.0);
        for f in across(fit.band, 25) {
            let e = f * H_EV;
            let want = rakic_formula(row, e);
            let got = m.epsilon_at(f);
            // The same function in other units: only rounding separates them.
            assert!(
                rel(got, want) < 1e-9,
                "{} at {e} eV: {got} vs {want}",
                row.0
            );
        }
    }
}

/// A Sellmeier formula n^2 = 1 + sum B lambda^2 / (lambda^2 - C), lambda in um.
fn sellmeier(terms: &[(f64, f64)], lambda_um: f64) -> f64 {
    let l2 = lambda_um * lambda_um;
    1.0 + terms.iter().map(|&(b, c)| b * l2 / (l2 - c)).sum::<f64>()
}

/// Malitson (1965) fused silica, with C in um^2 as the paper writes it.
const MALITSON: [(f64, f64); 3] = [
    (0.6961663, 0.0684043 * 0.0684043),
    (0.4079426, 0.1162414 * 0.1162414),
    (0.8974794, 9.896161 * 9.896161),
];
/// Luke et al. (2015) Si3N4.
const LUKE: [(f64, f64); 2] = [
    (3.0249, 0.1353406 * 0.1353406),
    (40314.0, 1239.842 * 1239.842),
];
/// Philipp (1973) Si3N4.
const PHILIPP: [(f64, f64); 1] = [(2.8939, 0.13967 * 0.13967)];
/// Salzberg & Villa (1957) Si.
const SALZBERG_VILLA: [(f64, f64); 3] = [
    (10.6684293, 0.301516485 * 0.301516485),
    (0.0030434748, 1.13475115 * 1.13475115),
    (1.54133408, 1104.0 * 1104.0),
];

/// The glasses are their Sellmeier formulas in wavelength, over their published ranges.
#[test]
fn sellmeier_glasses_match_their_formulas() {
    type Case<'a> = (&'a str, &'a str, &'a [(f64, f64)], [f64; 2]);
    let cases: [Case; 4] = [
        ("SiO2", "Malitson", &MALITSON, [0.21, 6.7]),
        ("Si3N4", "Luke", &LUKE, [0.31, 5.504]),
        ("Si3N4", "Philipp", &PHILIPP, [0.207, 1.24]),
        ("Si", "Salzberg", &SALZBERG_VILLA, [1.36, 11.0]),
    ];
    for (name, source, terms, range) in cases {
        let fit = fit(name, source);
        let m = material(&fit);
        let want_band = [C0 / (range[1] * 1e-6), C0 / (range[0] * 1e-6)];
        assert!(
            (fit.band[0] / want_band[0] - 1.0).abs() < 1e-12
                && (fit.band[1] / want_band[1] - 1.0).abs() < 1e-12,
            "{name} ({source}): band {:?}",
            fit.band
        );
        for f in across(fit.band, 25) {
            let lambda_um = C0 / f * 1e6;
            let want = sellmeier(terms, lambda_um);
            let got = m.epsilon_at(f);
            assert!(
                (got.re - want).abs() < 1e-9 * want && got.im == 0.0,
                "{name} ({source}) at {lambda_um} um: {got} vs {want}"
            );
        }
    }
}

/// The refractive index of a lossless library material at `lambda_um`.
fn index(fit: &LibraryFit, lambda_um: f64) -> f64 {
    material(fit).epsilon_at(C0 / (lambda_um * 1e-6)).sqrt().re
}

/// Published indices. SiO2: Malitson gives n = 1.45702 at the He-Ne line (0.6328 um), and his
/// formula the commonly quoted 1.44402 at 1.55 um; his formula reproduces his measurements to
/// about 1e-5, so 2e-5 (that plus the last digit). Si: the commonly quoted room-temperature
/// value at 1.55 um is 3.476; Salzberg & Villa measured at 26 C, and dn/dT = 1.8e-4 /K moves n
/// by 1e-3 over 5 K, so 2e-3. Si3N4: Luke et al. quote 1.996 at 1.55 um for their films, of
/// which the formula is the fit: 1e-3 is the rounding of the quoted value.
#[test]
fn indices_match_published_values() {
    let sio2 = fit("SiO2", "Malitson");
    assert!(
        (index(&sio2, 0.6328) - 1.45702).abs() < 2e-5,
        "{}",
        index(&sio2, 0.6328)
    );
    assert!(
        (index(&sio2, 1.55) - 1.44402).abs() < 2e-5,
        "{}",
        index(&sio2, 1.55)
    );
    let si = fit("Si", "Salzberg");
    assert!(
        (index(&si, 1.55) - 3.476).abs() < 2e-3,
        "{}",
        index(&si, 1.55)
    );
    let sin = fit("Si3N4", "Luke");
    assert!(
        (index(&sin, 1.55) - 1.996).abs() < 1e-3,
        "{}",
        index(&sin, 1.55)
    );
}

/// Gold and silver against Johnson & Christy, Phys. Rev. B 6, 4370 (1972), at their points
/// 1.64, 2.01 and 2.13 eV (0.756, 0.617, 0.582 um). Measured here: the Rakic fit is 14-18 %
/// (Au) and 20-22 % (Ag) from J&C in |eps|, its eps' less negative and its eps'' larger. That is
/// the data, not the conversion (which the formula test pins to 1e-9): Rakic et al. fitted a
/// compilation of other measurements, and evaporated-film data of the noble metals differ
/// between authors by 10-20 % in eps' in the visible; the interband edge is the LD model's weak
/// point (the paper's Brendel-Bormann model improves it). So |eps_fit - eps_JC| / |eps_JC| <= 25 %, eps' negative and eps'' positive:
/// a wrong parameter (wp, f0 off by a few tens of %) or a sign error fails it.
#[test]
fn noble_metals_near_johnson_and_christy() {
    let jc = |n: f64, k: f64| Complex64::new(n * n - k * k, 2.0 * n * k);
    let points = [
        ("Au", 1.64, jc(0.14, 4.542)),
        ("Au", 2.01, jc(0.21, 3.272)),
        ("Au", 2.13, jc(0.29, 2.863)),
        ("Ag", 1.64, jc(0.03, 5.242)),
        ("Ag", 2.01, jc(0.06, 4.152)),
        ("Ag", 2.13, jc(0.05, 3.858)),
    ];
    for (name, e, want) in points {
        let got = material(&fit(name, "Rakic")).epsilon_at(e / H_EV);
        assert!(got.re < 0.0 && got.im > 0.0, "{name}: {got}");
        assert!(
            rel(got, want) < 0.25,
            "{name} at {e} eV: {got} vs J&C {want}: {}",
            rel(got, want)
        );
    }
}

/// Water is the Peplinski water model at 20 C: the temperature polynomials give the paper's
/// rounded 20 C values (eps_static = 80.1, 2 pi tau = 0.58e-10 s) to their last digit, and the
/// entry is that single Debye pole. Kaatze (1989) measured 80.2 and tau = 9.36 ps at 20 C:
/// within 0.2 % and 1 % of the model.
#[test]
fn water_is_a_single_debye_relaxation() {
    let (eps_inf, eps_s, tau) = water_debye(20.0);
    assert_eq!(eps_inf, 4.9);
    assert!((eps_s - 80.1).abs() < 0.05, "{eps_s}");
    assert!((2.0 * PI * tau - 0.58e-10).abs() < 0.005e-10, "{tau}");
    assert!((eps_s / 80.2 - 1.0).abs() < 2e-3 && (tau / 9.36e-12 - 1.0).abs() < 0.01);
    let w = fit("water", "Peplinski");
    let m = material(&w);
    for f in across(w.band, 9) {
        let want = eps_inf + (eps_s - eps_inf) / Complex64::new(1.0, -2.0 * PI * f * tau);
        assert!(rel(m.epsilon_at(f), want) < 1e-12, "{f}");
    }
}

/// The Peplinski model, written out again from the paper's equations (5)-(9) for one soil
/// (transcription check), its dry limit, and its trend with water. Topp et al. (Water Resour.
/// Res. 16, 574, 1980), the TDR calibration eps' = 3.03 + 9.3 m_v + 146 m_v^2 - 76.7 m_v^3,
/// is a different empirical model of other soils: measured here, this loam's Peplinski eps' is
/// 25-33 % above it at m_v = 0.1-0.3, so the comparison (within 40 %) guards against gross
/// errors only (a factor of 2, water's eps taken at the wrong temperature by tens of degrees).
#[test]
fn peplinski_soil_follows_the_papers_equations() {
    let loam = Soil {
        sand: 0.4,
        clay: 0.2,
        bulk_density: 1.5,
        particle_density: 2.66,
        water: 0.2,
        temperature: 20.0,
    };
    let f = 5e8;
    // Eq. (5), free water with the effective conductivity (0.3-1.3 GHz, eq. (8)).
    // Water at 20 C from the temperature polynomials, worked by hand: 88.045 - 8.294 + 0.2518 +
    // 0.086 and (11.109 - 7.648 + 2.7752 - 0.40768) 1e-11 s.
    let (einf, e0, tau) = (4.9, 80.0888, 5.828_52e-11 / (2.0 * PI));
    let x = 2.0 * PI * f * tau;
    let sigma = 0.0467 + 0.2204 * 1.5 - 0.4111 * 0.4 + 0.6614 * 0.2;
    let fw_re = einf + (e0 - einf) / (1.0 + x * x);
    let fw_im = x * (e0 - einf) / (1.0 + x * x)
        + sigma / (2.0 * PI * f * yee::model::EPS0) * (2.66 - 1.5) / (2.66 * 0.2);
    let (b1, b2) = (
        1.2748 - 0.519 * 0.4 - 0.152 * 0.2,
        1.33797 - 0.603 * 0.4 - 0.166 * 0.2,
    );
    let es: f64 = (1.01 + 0.44 * 2.66_f64).powi(2) - 0.062;
    let re = 1.15
        * (1.0 + 1.5 / 2.66 * (es.powf(0.65) - 1.0) + 0.2_f64.powf(b1) * fw_re.powf(0.65) - 0.2)
            .powf(1.0 / 0.65)
        - 0.68;
    let im = (0.2_f64.powf(b2) * fw_im.powf(0.65)).powf(1.0 / 0.65);
    let got = peplinski(&loam, f).unwrap();
    // The same arithmetic in another order: rounding only.
    assert!(
        rel(got, Complex64::new(re, im)) < 1e-12,
        "{got} vs {re} + {im}i"
    );
    // Dry limit: eps' tends to the solid-air mixture, eps'' to 0.
    let dry = peplinski(
        &Soil {
            water: 1e-9,
            ..loam
        },
        f,
    )
    .unwrap();
    let dry_re = 1.15 * (1.0 + 1.5 / 2.66 * (es.powf(0.65) - 1.0)).powf(1.0 / 0.65) - 0.68;
    assert!(
        (dry.re - dry_re).abs() < 1e-6 && dry.im.abs() < 1e-3,
        "{dry}"
    );
    let mut last = dry.re;
    for mv in [0.1, 0.2, 0.3] {
        let eps = peplinski(&Soil { water: mv, ..loam }, 1e9).unwrap();
        let topp = 3.03 + 9.3 * mv + 146.0 * mv * mv - 76.7 * mv * mv * mv;
        assert!(
            (eps.re / topp - 1.0).abs() < 0.4,
            "m_v {mv}: {eps} vs Topp {topp}"
        );
        assert!(eps.re > last && eps.im > 0.0 && eps.im < eps.re, "{eps}");
        last = eps.re;
    }
}

/// Bad soils are errors naming the parameter and its range, not panics.
#[test]
fn peplinski_rejects_bad_soils() {
    let ok = Soil {
        sand: 0.4,
        clay: 0.2,
        bulk_density: 1.5,
        particle_density: 2.66,
        water: 0.1,
        temperature: 20.0,
    };
    assert!(peplinski(&ok, 1e9).is_ok());
    let err = |s: Soil| peplinski(&s, 1e9).unwrap_err();
    assert!(err(Soil { sand: 1.2, ..ok }).contains("`sand`"));
    assert!(err(Soil {
        sand: 0.9,
        clay: 0.2,
        ..ok
    })
    .contains("at most 1"));
    assert!(err(Soil {
        bulk_density: 3.0,
        ..ok
    })
    .contains("pores"));
    assert!(err(Soil { water: 0.6, ..ok }).contains("porosity"));
    assert!(err(Soil { water: 0.0, ..ok }).contains("`water`"));
    assert!(err(Soil {
        temperature: 80.0,
        ..ok
    })
    .contains("`temperature`"));
    assert!(peplinski(&ok, -1.0).unwrap_err().contains("frequency"));
}

/// The soil entries: each is the Peplinski model of its soil within its stated fit error
/// over the band, that error is small (a single Debye pole and a conductivity suffice for
/// 0.1-1.3 GHz: under 1 %), and the pole is passive and resolvable on a coarse GPR grid.
#[test]
fn soil_entries_fit_the_peplinski_model() {
    let soils: Vec<LibraryFit> = library::fits()
        .into_iter()
        .filter(|f| f.source.contains("Peplinski") && f.name != "water")
        .collect();
    assert_eq!(soils.len(), 6);
    for s in &soils {
        let (texture, mv): (&str, f64) = {
            let (t, w) = s.name.split_once('_').unwrap();
            (t, w.parse::<f64>().unwrap() / 100.0)
        };
        let (sand, clay) = if texture == "loam" {
            (0.4, 0.2)
        } else {
            (0.9, 0.05)
        };
        let soil = Soil {
            sand,
            clay,
            bulk_density: 1.5,
            particle_density: 2.66,
            water: mv,
            temperature: 20.0,
        };
        let err = s.fit_error.unwrap();
        assert!(err < 0.01, "{}: {err}", s.name);
        let m = material(s);
        // The stated error is the largest over the fit's samples; between them it can only be
        // a little larger (both curves are smooth on the 64-point log grid): 1.1x.
        for f in across(s.band, 301) {
            let e = rel(m.epsilon_at(f), peplinski(&soil, f).unwrap());
            assert!(
                e <= 1.1 * err + 1e-12,
                "{} at {f}: {e} vs stated {err}",
                s.name
            );
        }
        assert!(s.epsilon >= 1.0 && s.conductivity >= 0.0, "{s:?}");
        let yee::model::Pole::Debye {
            delta_epsilon,
            relaxation_time,
        } = s.poles[0]
        else {
            panic!("{}: a soil is one Debye pole", s.name);
        };
        assert!(delta_epsilon >= 0.0 && relaxation_time >= library::SOIL_MIN_RELAXATION_TIME);
    }
}

/// The fit of a soil beats the simplest alternative, a constant eps' with a conductivity
/// (what a non-dispersive FDTD material is): it must, or the pole would be decoration.
#[test]
fn soil_fit_beats_a_constant_permittivity() {
    let soil = Soil {
        sand: 0.4,
        clay: 0.2,
        bulk_density: 1.5,
        particle_density: 2.66,
        water: 0.2,
        temperature: 20.0,
    };
    let target = |f: f64| peplinski(&soil, f).unwrap();
    let band = library::SOIL_BAND;
    let debye = fit_debye(band, 30e-12, target).unwrap();
    // The constant fit at the band's geometric centre.
    let fc = (band[0] * band[1]).sqrt();
    let c = target(fc);
    let sigma = c.im * 2.0 * PI * fc * yee::model::EPS0;
    let constant = across(band, 64)
        .into_iter()
        .map(|f| {
            let eps = Complex64::new(c.re, sigma / (2.0 * PI * f * yee::model::EPS0));
            rel(eps, target(f))
        })
        .fold(0.0, f64::max);
    assert!(
        debye.max_relative_error < constant / 5.0,
        "{} vs {constant}",
        debye.max_relative_error
    );
}

/// Unknown names are errors that list the library and suggest the closest name, for another
/// case, a common name and a near miss.
#[test]
fn lookup_suggests_the_closest_name() {
    for (asked, suggested) in [
        ("Gold", "Au"),
        ("au", "Au"),
        ("silver", "Ag"),
        ("sio2", "SiO2"),
        ("Tungsten", "W"),
        ("watr", "water"),
        ("loam-10", "loam_10"),
    ] {
        let e = lookup(asked, None).unwrap_err();
        assert!(
            e.contains(&format!("no material `{asked}`"))
                && e.contains(&format!("did you mean `{suggested}`?"))
                && e.contains("yee materials"),
            "{asked}: {e}"
        );
    }
    let e = lookup("unobtainium", None).unwrap_err();
    assert!(!e.contains("did you mean") && e.contains("Au, Cu"), "{e}");
}

/// `band` picks among fits sharing a name: Si3N4 has Luke (0.31-5.5 um) first and Philipp
/// (0.207-1.24 um); a UV band takes Philipp, an infrared band and no band take Luke.
#[test]
fn band_picks_the_covering_fit() {
    let hz = |um: f64| C0 / (um * 1e-6);
    assert!(lookup("Si3N4", None).unwrap().source.contains("Luke"));
    let uv = lookup("Si3N4", Some([hz(1.0), hz(0.22)])).unwrap();
    assert!(uv.source.contains("Philipp"), "{}", uv.source);
    let ir = lookup("Si3N4", Some([hz(3.0), hz(1.3)])).unwrap();
    assert!(ir.source.contains("Luke"), "{}", ir.source);
    // Both cover the telecom band fully: the first listed.
    let telecom = lookup("Si3N4", Some([hz(1.6), hz(1.5)])).unwrap();
    assert!(telecom.source.contains("Luke"));
    // A name with one fit returns it for a band it partly covers, and refuses a band it does
    // not touch, saying where it holds.
    assert_eq!(lookup("Au", Some([1e13, 1e14])).unwrap().name, "Au");
    let e = lookup("Au", Some([1e9, 2e9])).unwrap_err();
    assert!(
        e.contains("no fit of `Au`") && e.contains("2.418e13-1.451e15 Hz"),
        "{e}"
    );
}

/// `yee materials` lists every fit, Au with its band in Hz and um, and exits 0.
#[test]
fn cli_lists_the_library() {
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .arg("materials")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    let au = lookup("Au", None).unwrap();
    let line = out
        .lines()
        .find(|l| l.starts_with("Au "))
        .unwrap_or_else(|| panic!("no Au line in:\n{out}"));
    assert!(
        line.contains(&format!("{:.3e}-{:.3e}", au.band[0], au.band[1]))
            && line.contains("0.2066-12.4 um")
            && line.contains("1 drude + 5 lorentz")
            && line.contains("Rakic"),
        "{line}"
    );
    for f in library::fits() {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{} ", f.name))),
            "{} missing",
            f.name
        );
    }
}

/// A small scene in nm with library materials (the geometry is a placeholder: only the
/// resolved materials are looked at).
fn scene(materials: &str) -> String {
    format!(
        r#"[simulation]
length_unit = "nm"
cell_size = 5
size = [200, 200, 200]
duration = 2e-14
[boundaries]
default = {{ type = "pml", cells = 5 }}
[materials]
{materials}
[[geometry]]
shape = "box"
material = "m"
center = [0, 0, 0]
size = [50, 50, 50]
[[source]]
type = "dipole"
component = "Ez"
position = [-60, 0, 0]
waveform = {{ type = "gaussian", frequency = 4.0e14, bandwidth = 2.0e14 }}
"#
    )
}

/// A scene's `{ library = ... }` material is the library fit, and `band` picks the fit; an
/// unknown name is refused with the suggestion.
#[test]
fn scenes_resolve_library_materials() {
    for (spec, name, source) in [
        (r#"m = { library = "Au" }"#, "Au", "Rakic"),
        (r#"m = { library = "Si3N4" }"#, "Si3N4", "Luke"),
        (
            r#"m = { library = "Si3N4", band = [3.0e14, 1.2e15] }"#,
            "Si3N4",
            "Philipp",
        ),
    ] {
        let text = scene(spec);
        let (model, _) = yee::scene::load_str(&text, "lib.toml")
            .unwrap_or_else(|e| panic!("{spec} should load:\n{e}"));
        let id = model.materials.id("m").unwrap() as usize;
        let got = &model.materials.materials[id];
        let want = fit(name, source);
        assert_eq!(got.band, Some(want.band), "{spec}");
        for f in across(want.band, 7) {
            assert_eq!(
                got.epsilon_at(f),
                material(&want).epsilon_at(f),
                "{spec} at {f}"
            );
        }
    }
    let err = match yee::scene::load_str(&scene(r#"m = { library = "gold" }"#), "lib.toml") {
        Ok(_) => panic!("an unknown library name is refused"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("did you mean `Au`?"), "{err}");
}
