//! Physics checks of the CPU engine against analytic results.

mod common;

use common::*;
use std::f64::consts::PI;
use yee::backend::cpu::CpuBackend;
use yee::decomp::split_even;
use yee::model::{Component, C0, EPS0, MU0};
use yee::run::Stepper;

/// A PEC box of 1.0 x 0.8 x 0.6 um at 50 nm cells, excited off its symmetry planes.
fn cavity(precision: &str, steps: usize) -> String {
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.0, 0.8, 0.6]
steps = {steps}
precision = "{precision}"
[boundaries]
default = {{ type = "pec" }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.13, 0.11, 0.07]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[source]]
type = "dipole"
component = "Ex"
position = [-0.21, 0.17, 0.09]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[source]]
type = "dipole"
component = "Ey"
position = [0.27, -0.13, -0.11]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [-0.31, -0.17, 0.12]
components = ["Ez", "Ex", "Ey", "Hy"]
"#
    )
}

/// Resonance of PEC-box mode (m, n, p) on the Yee grid: the discrete modes are exact
/// standing waves with k = (m pi / a, ...), and the Yee dispersion relation
/// sin^2(w dt / 2) / (c dt)^2 = sum sin^2(k_i d_i / 2) / d_i^2 gives their frequency.
fn yee_resonance(mode: [f64; 3], box_size: [f64; 3], cell: [f64; 3], dt: f64) -> f64 {
    let s: f64 = (0..3)
        .map(|a| ((mode[a] * PI / box_size[a]) * cell[a] / 2.0).sin().powi(2) / cell[a].powi(2))
        .sum();
    2.0 * ((C0 * dt) * s.sqrt()).asin() / dt / (2.0 * PI)
}

fn analytic_resonance(mode: [f64; 3], box_size: [f64; 3]) -> f64 {
    C0 / 2.0
        * (0..3)
            .map(|a| (mode[a] / box_size[a]).powi(2))
            .sum::<f64>()
            .sqrt()
}

#[test]
fn pec_cavity_resonances_match_yee_corrected_analytic_values() {
    let m = model(&cavity("f64", 16000));
    let g = m.grid.clone();
    // The PEC walls sit exactly on the domain faces: the box is 1.0 x 0.8 x 0.6 um.
    assert_eq!(g.shape, [20, 16, 12]);
    let size = g.size();
    assert!((size[0] - 1.0e-6).abs() < 1e-18);
    let (series, _) = run_cpu::<f64>(&m, 1);
    // Skip the source's turn-on so the record is the free ring-down.
    let start = (2.0 * 5.3 / (2.0 * PI * 3.0e14 / 2.3548) / g.dt) as usize;
    let modes = [
        [1.0, 1.0, 0.0],
        [1.0, 0.0, 1.0],
        [0.0, 1.0, 1.0],
        [1.0, 1.0, 1.0],
    ];
    for mode in modes {
        let f_yee = yee_resonance(mode, size, g.cell, g.dt);
        let f_cont = analytic_resonance(mode, size);
        // Search +-1.5 % around the prediction: wider than the grid correction (~0.5 %), far
        // narrower than the spacing to the nearest other mode (> 5 %).
        let mut found = None;
        let mut strongest = 0.0;
        for s in &series {
            let x = &s[start..];
            let f = peak_frequency(x, g.dt, f_yee * 0.985, f_yee * 1.015);
            let a = hann_dft(x, g.dt, f);
            if a > strongest {
                strongest = a;
                found = Some(f);
            }
        }
        let f = found.unwrap();
        let err = (f - f_yee).abs() / f_yee;
        let err_cont = (f - f_cont).abs() / f_yee;
        eprintln!("mode {mode:?}: measured {f:.6e} Hz, Yee-corrected {f_yee:.6e} (err {err:.1e}), continuum {f_cont:.6e} (err {err_cont:.1e})");
        // 1e-6: the discrete modes are exact standing waves of the scheme, so only the peak
        // estimate limits the match (measured 1e-10 to 6e-9: a ~380-period ring-down, a Hann
        // window and golden-section refinement; the other modes are > 5 % away). A wrong
        // coefficient anywhere in the update (curl, dt, eps0, mu0) moves the lines by far more.
        assert!(err < 1e-6, "mode {mode:?}: peak {f:.6e} Hz, Yee {f_yee:.6e}, continuum {f_cont:.6e}, error {err:.2e}");
        // The continuum frequency differs from the Yee one by 3.6e-4 to 1.1e-3 for these modes:
        // it must fail the bound above by a wide margin (the old 2e-3 bound accepted it).
        assert!(
            err_cont > 100.0 * 1e-6,
            "mode {mode:?}: the continuum value {f_cont:.6e} would pass (error {err_cont:.2e})"
        );
    }
}

/// Total discrete energy W^n = 1/2 sum eps E^n.E^n + 1/2 sum mu H^{n-1/2}.H^{n+1/2}, which the
/// Yee scheme with PEC walls conserves exactly in exact arithmetic.
#[test]
fn lossless_pec_cavity_conserves_energy_to_1e6() {
    let m = model(&cavity("f64", 7000));
    let ranges = split_even(m.grid.shape[0], 2);
    let mut b = CpuBackend::<f64>::new(&m, &ranges);
    let dv = m.grid.cell.iter().product::<f64>();
    let end_of_source = m
        .sources
        .iter()
        .map(|s| s.waveform.end_time().unwrap())
        .fold(0.0, f64::max);
    let quiet_from = (end_of_source / m.grid.dt).ceil() as usize + 1;
    assert!(quiet_from + 5000 < m.grid.steps);
    let mut s = Stepper::new(&m, &mut b, &ranges);
    for _ in 0..quiet_from {
        s.step();
    }
    let energy = |s: &mut Stepper<CpuBackend<f64>>| {
        // State now: E^n, H^{n-1/2}. Step once to get H^{n+1/2}.
        let e: Vec<Vec<f64>> = (0..3)
            .map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        let h0: Vec<Vec<f64>> = (3..6)
            .map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        s.step();
        let h1: Vec<Vec<f64>> = (3..6)
            .map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        let we: f64 = e.iter().flatten().map(|v| v * v).sum::<f64>() * EPS0 * 0.5 * dv;
        let wh: f64 = (0..3)
            .map(|c| h0[c].iter().zip(&h1[c]).map(|(a, b)| a * b).sum::<f64>())
            .sum::<f64>()
            * MU0
            * 0.5
            * dv;
        we + wh
    };
    let w0 = energy(&mut s);
    assert!(w0 > 0.0);
    for _ in 0..5000 {
        s.step();
    }
    let w1 = energy(&mut s);
    let rel = (w1 - w0).abs() / w0;
    // 1e-6 is the issue's bound; the invariant is exact, so only f64 rounding (~1e-13 per
    // step, random-walk) remains.
    assert!(
        rel < 1e-6,
        "energy drifted by {rel:.3e} over 5000 steps ({w0:.6e} -> {w1:.6e})"
    );
    eprintln!("energy drift over 5000 steps: {rel:.2e}");
}

/// A plane wave along x (periodic y and z, PML at the x ends) at 10 cells per wavelength:
/// its phase advance between two probes must match the Yee dispersion relation, not the
/// continuum one (the two differ by ~1.2 % at this resolution).
#[test]
fn plane_wave_travels_at_the_yee_phase_velocity() {
    let f0 = 3.0e14;
    let text = format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.1               # lambda = 1 um = 10 cells
size = [30.0, 0.2, 0.2]
steps = 3200
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
x_min = {{ type = "pml", cells = 20 }}
x_max = {{ type = "pml", cells = 20 }}
[[source]]
type = "plane_wave"
direction = "+x"
polarization = "Ey"
position = -11.0
waveform = {{ type = "gaussian", frequency = {f0}, bandwidth = 1.0e14 }}
[[monitor]]
type = "probe"
name = "a"
position = [-6.0, 0.0, 0.0]
components = ["Ey"]
[[monitor]]
type = "probe"
name = "b"
position = [6.0, 0.0, 0.0]
components = ["Ey"]
"#
    );
    let m = model(&text);
    let g = m.grid.clone();
    let (series, _) = run_cpu::<f64>(&m, 3);
    let dft = |x: &[f64]| {
        let (mut re, mut im) = (0.0, 0.0);
        for (i, v) in x.iter().enumerate() {
            let ph = 2.0 * PI * f0 * (i + 1) as f64 * g.dt;
            re += v * ph.cos();
            im -= v * ph.sin();
        }
        (re, im)
    };
    let (ar, ai) = dft(&series[0]);
    let (br, bi) = dft(&series[1]);
    let distance = 12.0e-6;
    // Phase of b relative to a: exp(-i k d); unwrap with the continuum guess.
    let k_cont = 2.0 * PI * f0 / C0;
    let raw = -((bi * ar - br * ai).atan2(br * ar + bi * ai));
    let turns = ((k_cont * distance - raw) / (2.0 * PI)).round();
    let k_meas = (raw + 2.0 * PI * turns) / distance;
    let dx = g.cell[0];
    let k_yee = 2.0 / dx * ((dx / (C0 * g.dt)) * (PI * f0 * g.dt).sin()).asin();
    let err_yee = (k_meas - k_yee).abs() / k_yee;
    let err_cont = (k_meas - k_cont).abs() / k_cont;
    eprintln!("k measured {k_meas:.6e}, Yee {k_yee:.6e} (err {err_yee:.1e}), continuum {k_cont:.6e} (err {err_cont:.1e})");
    // 0.05 %: PML reflections (< -40 dB, i.e. < 1 % amplitude) perturb the phase by < 0.01 rad
    // over a 75 rad advance (1.3e-4); the Yee-vs-continuum gap is 1.2 %, 20x larger.
    assert!(
        err_yee < 5e-4,
        "measured k deviates from Yee dispersion by {err_yee:.2e}"
    );
    assert!(
        err_cont > 5e-3,
        "the test must distinguish Yee from continuum dispersion"
    );
}

/// Three dipoles (Ex, Ey, Ez), off every symmetry plane so that all six components are excited
/// at every probe.
const CPML_SOURCES: [([f64; 3], &str); 3] = [
    ([0.05, 0.0, -0.05], "Ez"),
    ([-0.1, 0.05, 0.1], "Ex"),
    ([0.0, -0.1, 0.05], "Ey"),
];

/// Probes 3 to 5 cells from the CPML of the small domain (interior [-0.5, 0.5] um), each near a
/// different corner, so reflections from all six faces at normal and oblique incidence reach
/// at least one of them.
const CPML_PROBES: [[f64; 3]; 4] = [
    [0.25, 0.15, 0.1],
    [-0.3, 0.2, -0.25],
    [0.1, -0.35, 0.3],
    [-0.2, -0.25, -0.35],
];

/// A cube of side `size` um with PML faces `pml`, the dipoles above and every probe recording
/// all six components.
fn cpml_scene(size: f64, pml: &str) -> String {
    // 26 cells per centre wavelength, so even the top of the band (2.6 f0) has 10 cells.
    let f0 = 2.3e14;
    let mut s = format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [{size}, {size}, {size}]
steps = 175
precision = "f64"
[boundaries]
default = {pml}
"#
    );
    for (p, c) in CPML_SOURCES {
        s.push_str(&format!(
            r#"
[[source]]
type = "dipole"
component = "{c}"
position = [{}, {}, {}]
waveform = {{ type = "gaussian", frequency = {f0}, bandwidth = {f0} }}
"#,
            p[0], p[1], p[2]
        ));
    }
    for (n, p) in CPML_PROBES.iter().enumerate() {
        s.push_str(&format!(
            r#"
[[monitor]]
type = "probe"
name = "p{n}"
position = [{}, {}, {}]
components = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"]
"#,
            p[0], p[1], p[2]
        ));
    }
    s
}

/// The CPML's reflection in dB for each of the six components: the largest deviation from the
/// reference record over time and over the probes, relative to that probe's reference peak of
/// the same component.
fn reflection_db(small: &yee::model::Model, reference: &[Vec<f64>]) -> [f64; 6] {
    let (a, _) = run_cpu::<f64>(small, 2);
    assert_eq!(a.len(), 6 * CPML_PROBES.len());
    let mut db = [f64::MIN; 6];
    for (k, (x, y)) in a.iter().zip(reference).enumerate() {
        let peak = max_abs(y);
        assert!(peak > 0.0, "probe series {k} is never excited");
        let err = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        db[k % 6] = db[k % 6].max(20.0 * (err / peak).log10());
    }
    db
}

/// The dipoles inside a 10-cell CPML: every probe record must match a run in a domain large
/// enough that nothing reflected can reach any probe within the record, for the default
/// profile and for a complex-frequency-shifted one (kappa > 1, alpha > 0, order 4).
#[test]
fn cpml_reflection_is_below_minus_80_db_on_all_components() {
    let default = r#"{ type = "pml", cells = 10 }"#;
    let cfs =
        r#"{ type = "pml", cells = 10, order = 4, kappa_max = 3.0, alpha_frequency = 2.0e13 }"#;
    // Small: a 20-cell interior inside a 10-cell PML.
    let small = model(&cpml_scene(2.0, default));
    // Reference: every source-face-probe path (source and probe mirrored across the inner
    // face of the big PML) must exceed c T plus 6 cells; |s_a + p_a| <= 0.45 um here. The side is
    // a whole even number of cells so both grids put every source and probe on the same nodes.
    let travel = C0 * small.grid.steps as f64 * small.grid.dt * 1e6;
    let inner = (travel + 0.3 + 0.45) / 2.0;
    let half_cells = ((inner + 0.5) / 0.05).ceil();
    let big = model(&cpml_scene(2.0 * half_cells * 0.05, default));
    assert_eq!(small.grid.dt, big.grid.dt);
    assert_eq!(big.grid.shape[0] % 2, 0);
    // Nothing from the big domain's own PML reaches a probe within the record, so one
    // reference serves every profile.
    let (reference, _) = run_cpu::<f64>(&big, 2);
    let names = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"];
    for (label, pml) in [
        ("default", default),
        ("CFS kappa 3, alpha 2e13 Hz, order 4", cfs),
    ] {
        let db = reflection_db(&model(&cpml_scene(2.0, pml)), &reference);
        let worst = db.iter().cloned().fold(f64::MIN, f64::max);
        let each: Vec<String> = (0..6)
            .map(|c| format!("{} {:.1}", names[c], db[c]))
            .collect();
        eprintln!(
            "CPML reflection, 10 cells, {label}: worst {worst:.1} dB ({})",
            each.join(", ")
        );
        // -80 dB: a 10-cell CPML measures -89 dB (default) and -96 dB (CFS) here; the grading
        // limits it, not the measurement (the reference is exact within the record). A wrong
        // sign in one correction term (the y-layer Hz term) raises it to +3 dB here (-49 dB on
        // the single probe and two components this test once used): far above the bound.
        assert!(
            worst < -80.0,
            "{label}: reflection {worst:.1} dB ({})",
            each.join(", ")
        );
    }
    // The measurement must be able to see a reflection: a layer with 1 % of the optimal
    // conductivity is nearly a bare PEC wall (measured -0.5 dB). An alpha at 1e15 Hz, above
    // the whole band, makes the stretch s = kappa + sigma / (alpha + i w eps0) nearly real in
    // the inner half of the layer (alpha falls linearly to 0 at the wall), which absorbs little:
    // measured -44 dB, so alpha_frequency visibly reaches the update.
    let worst_of = |pml: &str| {
        reflection_db(&model(&cpml_scene(2.0, pml)), &reference)
            .iter()
            .cloned()
            .fold(f64::MIN, f64::max)
    };
    for (label, pml, above) in [
        (
            "sigma x 0.01",
            r#"{ type = "pml", cells = 10, sigma_factor = 0.01 }"#,
            -20.0,
        ),
        (
            "alpha at 1e15 Hz",
            r#"{ type = "pml", cells = 10, alpha_frequency = 1.0e15 }"#,
            -60.0,
        ),
    ] {
        let db = worst_of(pml);
        eprintln!("CPML reflection ({label}): {db:.1} dB");
        assert!(
            db > above,
            "{label}: should reflect above {above} dB, measured {db:.1} dB"
        );
    }
    // kappa_max and order reach the profile: 1/kappa is 1/kappa_max on the outer wall and
    // follows the order-4 grade, kappa = 1 + (kappa_max - 1) depth^4, halfway in.
    let p = &model(&cpml_scene(2.0, cfs)).boundaries.profiles[0];
    assert_eq!(p.e[0][2], 1.0 / 3.0);
    assert!((p.e[5][2] - 1.0 / (1.0 + 2.0 * 0.5f64.powi(4))).abs() < 1e-15);
}

/// f32 and f64 runs of the cavity agree to what f32 rounding allows.
#[test]
fn f32_and_f64_agree_on_the_cavity_probe() {
    let (s32, _) = run_cpu::<f32>(&model(&cavity("f32", 2000)), 1);
    let (s64, _) = run_cpu::<f64>(&model(&cavity("f64", 2000)), 1);
    for (a, b) in s32.iter().zip(&s64) {
        let peak = max_abs(b);
        let err = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
            / peak;
        // f32 keeps 24 bits (6e-8); per-step rounding of ~10 operations accumulates like a
        // random walk over 2000 steps (~6e-8 * 10 * sqrt(2000) = 3e-5), and rounding dt/eps
        // shifts each resonance by ~1e-7 relative. 2e-4 leaves headroom while still catching
        // any real divergence (a precision-dependent bug shows up at the 1e-2 level).
        assert!(err < 2e-4, "f32 vs f64 relative difference {err:.2e}");
        eprintln!("f32 vs f64: {err:.2e}");
    }
}

/// A 2-D PEC cavity (1.0 x 0.8 um at 50 nm cells, one cell along z between periodic faces),
/// stepped at 0.99 of the 2-D stability limit 1 / (c sqrt(1/dx^2 + 1/dy^2)), which is 1.22
/// times the 3-D step. Its modes (m, n) are exact standing waves of the 2-D Yee scheme, whose
/// dispersion relation is the 3-D one without the z term: they must sit at the 2-D
/// Yee-corrected frequencies to 1e-6 (as in 3-D; the issue asks 0.2 %), and the discrete energy
/// must stay constant over 5,000 steps to 1e-6. A time step beyond the 2-D limit would blow up;
/// one computed from the 3-D limit would fail the dt check.
#[test]
fn flat_pec_cavity_at_the_2d_time_step_has_its_modes_and_conserves_energy() {
    let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.0, 0.8, 0.05]
steps = 12000
precision = "f64"
[boundaries]
default = { type = "pec" }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[[source]]
type = "dipole"
component = "Ez"
position = [0.13, 0.11, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }
[[source]]
type = "dipole"
component = "Ex"
position = [-0.21, 0.17, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [-0.31, -0.17, 0.0]
components = ["Ez", "Ex", "Hz"]
"#;
    let m = model(text);
    let g = m.grid.clone();
    assert_eq!(g.shape, [20, 16, 1]);
    let limit_2d = 1.0 / (C0 * (1.0 / g.cell[0].powi(2) + 1.0 / g.cell[1].powi(2)).sqrt());
    assert!(
        (g.dt / (0.99 * limit_2d) - 1.0).abs() < 1e-12,
        "dt {}",
        g.dt
    );
    let size = [1.0e-6, 0.8e-6, g.cell[2]];
    let (series, _) = run_cpu::<f64>(&m, 2);
    let start = (2.0 * 5.3 / (2.0 * PI * 3.0e14 / 2.3548) / g.dt) as usize;
    // TM (Ez) and TE (Hz) modes with k_z = 0.
    for mode in [
        [1.0, 1.0, 0.0],
        [2.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 2.0, 0.0],
    ] {
        let f_yee = yee_resonance(mode, size, g.cell, g.dt);
        let f_cont = analytic_resonance(mode, size);
        let mut best = (0.0, 0.0);
        for s in &series {
            let x = &s[start..];
            let f = peak_frequency(x, g.dt, f_yee * 0.985, f_yee * 1.015);
            let a = hann_dft(x, g.dt, f);
            if a > best.0 {
                best = (a, f);
            }
        }
        let f = best.1;
        let err = (f - f_yee).abs() / f_yee;
        eprintln!("2-D mode {mode:?}: {f:.6e} Hz, Yee {f_yee:.6e} (err {err:.1e}), continuum {f_cont:.6e}");
        assert!(err < 1e-6, "mode {mode:?}: {f:.6e} vs {f_yee:.6e}");
        // The continuum value misses the 1e-6 bound by a wide margin (9e-5 for mode (1, 1)).
        assert!(
            (f - f_cont).abs() / f_yee > 20e-6,
            "the continuum value would pass"
        );
    }
    // Energy, as in the 3-D test: W = eps0 |E^n|^2 / 2 + mu0 H^{n-1/2}.H^{n+1/2} / 2.
    let ranges = split_even(g.shape[0], 2);
    let mut b = CpuBackend::<f64>::new(&m, &ranges);
    let mut s = Stepper::new(&m, &mut b, &ranges);
    for _ in 0..start {
        s.step();
    }
    let energy = |s: &mut Stepper<CpuBackend<f64>>| {
        let e: Vec<f64> = (0..3)
            .flat_map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        let h0: Vec<f64> = (3..6)
            .flat_map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        s.step();
        let h1: Vec<f64> = (3..6)
            .flat_map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        EPS0 * 0.5 * e.iter().map(|v| v * v).sum::<f64>()
            + MU0 * 0.5 * h0.iter().zip(&h1).map(|(a, b)| a * b).sum::<f64>()
    };
    let w0 = energy(&mut s);
    for _ in 0..5000 {
        s.step();
    }
    let w1 = energy(&mut s);
    let rel = (w1 - w0).abs() / w0;
    eprintln!("2-D energy drift over 5000 steps: {rel:.2e}");
    assert!(w0 > 0.0 && rel < 1e-6, "energy drifted by {rel:.3e}");
}
