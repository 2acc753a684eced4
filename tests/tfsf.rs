//! The total-field / scattered-field source: an empty box leaks (almost) nothing into the
//! scattered-field region, the total-field region holds the analytic plane wave, objects
//! inside scatter outwards, and slabs do not change a bit.
//!
//! Each case is a vacuum cube with CPML on every face, in f64 unless said otherwise, 30 cells
//! per wavelength at the band centre.

mod common;

use yee::backend::cpu::CpuBackend;
use yee::backend::Backend;
use yee::decomp::split_even;
use yee::model::{Component, Model, ETA0};
use yee::real::Real;
use yee::run::Stepper;

const F0: f64 = 2.0e14;

/// A 3 um vacuum cube at 0.05 um cells (60^3, 10 CPML cells per face) with a TF/SF box of
/// 1.5 um edge at the centre.
fn scene(
    direction: &str,
    polarization: &str,
    precision: &str,
    steps: usize,
    extra: &str,
) -> String {
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [3.0, 3.0, 3.0]
steps = {steps}
precision = "{precision}"
[boundaries]
default = {{ type = "pml", cells = 10 }}
{extra}
[[source]]
type = "tfsf"
box = {{ center = [0.0, 0.0, 0.0], size = [1.5, 1.5, 1.5] }}
direction = {direction}
polarization = {polarization}
waveform = {{ type = "gaussian", frequency = {F0:e}, bandwidth = 1.0e14 }}
amplitude = 2.0
"#
    )
}

/// Sum of E^2 + (eta0 H)^2 over the scattered-field cells outside the PML and over the
/// total-field cells, a component's cell being in the total-field region when its position (in
/// cells) lies in the box on every axis.
fn energies<B: Backend>(b: &B, m: &Model) -> (f64, f64) {
    let t = m.tfsf.as_ref().unwrap();
    let [nx, ny, nz] = m.grid.shape;
    let pml = [0, 1, 2].map(|a| (m.boundaries.profiles[a].lo, m.boundaries.profiles[a].hi));
    let (mut sf, mut tf) = (0.0, 0.0);
    for c in Component::ALL {
        let f = common::field(b, m, c);
        let off = c.offset();
        let scale = if c.is_electric() { 1.0 } else { ETA0 * ETA0 };
        for i in 0..nx {
            for j in 0..ny {
                for k in 0..nz {
                    let idx = [i, j, k];
                    let v = f[(i * ny + j) * nz + k];
                    let inside = (0..3).all(|a| {
                        let p = idx[a] as f64 + off[a];
                        t.lo[a] as f64 <= p && p <= t.hi[a] as f64
                    });
                    let in_pml =
                        (0..3).any(|a| idx[a] < pml[a].0 || idx[a] + pml[a].1 >= m.grid.shape[a]);
                    if inside {
                        tf += scale * v * v;
                    } else if !in_pml {
                        sf += scale * v * v;
                    }
                }
            }
        }
    }
    (sf, tf)
}

/// The scattered-field energy summed over the run (every 10 steps) against the total-field
/// energy likewise, in dB.
fn leakage_db<T: Real>(m: &Model, slabs: usize) -> f64 {
    let ranges = split_even(m.grid.shape[0], slabs);
    let mut b = CpuBackend::<T>::new(m, &ranges);
    let (mut sf, mut tf) = (0.0, 0.0);
    {
        let mut s = Stepper::new(m, &mut b, &ranges);
        for n in 0..m.grid.steps {
            s.step();
            if n % 10 == 9 {
                let (a, b) = energies(&*s.backend, m);
                sf += a;
                tf += b;
            }
        }
    }
    assert!(tf > 0.0, "no incident field in the box");
    10.0 * (sf / tf).log10()
}

/// Axial incidence: the 1-D grid is the 3-D grid along the axis, so an empty box leaks only
/// rounding. Measured: about -300 dB in f64 (the corrections cancel to the last bit or two)
/// and about -130 dB in f32 (rounding of 1e-7 relative, squared). The issue asks for -60 dB.
#[test]
fn axial_empty_box_leaks_below_minus_60_db() {
    for (dir, pol) in [
        ("\"+z\"", "\"Ex\""),
        ("\"-x\"", "\"Ey\""),
        ("\"+y\"", "\"Ez\""),
    ] {
        let m = common::model(&scene(dir, pol, "f64", 700, ""));
        let db = leakage_db::<f64>(&m, 1);
        eprintln!("axial {dir} {pol} f64: leakage {db:.1} dB");
        assert!(db < -60.0, "{dir} {pol}: {db:.1} dB");
    }
    let m = common::model(&scene("\"+z\"", "\"Ex\"", "f32", 700, ""));
    let db = leakage_db::<f32>(&m, 2);
    eprintln!("axial +z Ex f32: leakage {db:.1} dB");
    assert!(db < -60.0, "f32: {db:.1} dB");
}

/// Oblique incidence: the matched-dispersion 1-D grid, interpolated linearly. What is left is
/// the interpolation error ((k d1)^2 / 8 of the field, d1 = c dt / 0.9) and the dispersion
/// mismatch away from the band centre: the issue asks for -40 dB.
#[test]
fn oblique_empty_box_leaks_below_minus_40_db() {
    for (dir, pol) in [
        ("[1.0, 0.0, 2.0]", "\"Ey\""),
        ("[1.0, 2.0, 3.0]", "[-2.0, 1.0, 0.0]"),
    ] {
        let m = common::model(&scene(dir, pol, "f64", 700, ""));
        let db = leakage_db::<f64>(&m, 1);
        eprintln!("oblique {dir} {pol} f64: leakage {db:.1} dB");
        assert!(db < -40.0, "{dir} {pol}: {db:.1} dB");
    }
}

/// Inside the box the field is the analytic plane wave amplitude * waveform(t - xi / c) along
/// the polarization, xi measured from the box corner the wave reaches first: the arrival
/// time follows from the distance.
#[test]
fn total_field_region_holds_the_incident_wave() {
    for (dir, pol, comp) in [
        ("\"+z\"", "\"Ex\"", Component::Ex),
        ("[1.0, 0.0, 2.0]", "\"Ey\"", Component::Ey),
    ] {
        let m = common::model(&scene(dir, pol, "f64", 600, ""));
        let t = m.tfsf.as_ref().unwrap().clone();
        let ranges = split_even(m.grid.shape[0], 1);
        let mut b = CpuBackend::<f64>::new(&m, &ranges);
        // A point well inside the box, off its centre.
        let idx = [36, 33, 38];
        let p = m.grid.position(comp, idx.map(|i| i as f64));
        let ci = comp as usize;
        let (mut worst, mut peak) = (0.0f64, 0.0f64);
        {
            let mut s = Stepper::new(&m, &mut b, &ranges);
            for n in 0..m.grid.steps {
                s.step();
                let time = (n + 1) as f64 * m.grid.dt;
                let want = t.incident_e(p, time)[ci];
                let got = s.backend.sample(comp, idx);
                worst = worst.max((got - want).abs());
                peak = peak.max(got.abs());
            }
        }
        eprintln!(
            "{dir}: peak {peak:.4} V/m, worst deviation from the analytic wave {worst:.2e} V/m"
        );
        // The peak of a Gaussian-modulated sine of amplitude 2 is 2 exp(-(T/4)^2 / (2 s^2))
        // or more (the carrier's crest within a quarter period of the envelope peak): 1.88.
        assert!(peak > 1.85 && peak < 2.02, "{dir}: peak {peak}");
        // The grid's wave lags the continuum by its numerical dispersion: at 30 cells per
        // wavelength the phase velocity is low by about 0.2 %, which over the ~1.5 um from
        // the 1-D source to the point is a phase error below 0.02 rad, plus the pulse's spread
        // in group delay across the band: 3 % of the amplitude bounds both.
        assert!(worst < 0.03 * 2.0, "{dir}: deviation {worst}");
    }
}

/// An object inside the box scatters into the scattered-field region (a PEC sphere, a Drude
/// sphere and a lossy magnetic one, whose H cells take the H material coefficients): no
/// error, finite fields, scattered energy far above the empty box's.
#[test]
fn objects_inside_the_box_scatter_outwards() {
    for material in [
        "metal = { pec = true }",
        "metal = { epsilon = 1.0, drude = [{ frequency = 1.0e15, damping = 1.0e13 }] }",
        "metal = { epsilon = 2.0, mu = 3.0, magnetic_conductivity = 100.0 }",
    ] {
        let extra = format!(
            "[materials]\n{material}\n[[geometry]]\nshape = \"sphere\"\nmaterial = \"metal\"\ncenter = [0.0, 0.0, 0.0]\nradius = 0.4\n"
        );
        let m = common::model(&scene("\"+z\"", "\"Ex\"", "f64", 700, &extra));
        let db = leakage_db::<f64>(&m, 1);
        eprintln!("{material}: scattered / total {db:.1} dB");
        // A sphere of radius 0.4 um at 1.5 um wavelength (size parameter 1.7) scatters a
        // good part of what it intercepts: the scattered energy outside is tens of dB above
        // the empty box's rounding level.
        assert!(db > -30.0 && db.is_finite(), "{material}: {db:.1} dB");
    }
}

/// 1 and 3 slabs give the same fields bit for bit, axial and oblique, with the box cut by
/// the slab boundaries.
#[test]
fn slabs_do_not_change_a_bit() {
    for (dir, pol) in [
        ("\"+x\"", "\"Ez\""),
        ("[1.0, 2.0, 3.0]", "[-2.0, 1.0, 0.0]"),
    ] {
        let m = common::model(&scene(dir, pol, "f64", 120, ""));
        let (_, one) = common::run_cpu::<f64>(&m, 1);
        let (_, three) = common::run_cpu::<f64>(&m, 3);
        assert!(one[0].iter().any(|v| *v != 0.0) || one[2].iter().any(|v| *v != 0.0));
        for c in 0..6 {
            assert!(
                one[c]
                    .iter()
                    .zip(&three[c])
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{dir}: component {c} differs between 1 and 3 slabs"
            );
        }
    }
}

/// A plane wave in a periodic cell: periodic x and y with a box spanning both (its x and y
/// faces are skipped), PML along z; and the same box with PEC walls instead of the PML
/// outside. The scattered-field region stays empty to rounding either way.
#[test]
fn periodic_cell_and_pec_walls_outside_the_box() {
    let periodic = r#"x_min = { type = "periodic" }
x_max = { type = "periodic" }
y_min = { type = "periodic" }
y_max = { type = "periodic" }"#;
    let text = scene("\"+z\"", "\"Ex\"", "f64", 700, periodic)
        .replace("size = [1.5, 1.5, 1.5] }", "size = [3.0, 3.0, 1.5] }");
    let m = common::model(&text);
    let t = m.tfsf.as_ref().unwrap();
    assert_eq!(t.spans, [true, true, false]);
    let db = leakage_db::<f64>(&m, 3);
    eprintln!("periodic cell: leakage {db:.1} dB");
    assert!(db < -60.0, "periodic: {db:.1} dB");
    // PEC walls on every face, a wave along -y polarized along z.
    let pec = scene("\"-y\"", "\"Ez\"", "f64", 700, "").replace(
        "default = { type = \"pml\", cells = 10 }",
        "default = { type = \"pec\" }",
    );
    let m = common::model(&pec);
    let db = leakage_db::<f64>(&m, 1);
    eprintln!("PEC walls: leakage {db:.1} dB");
    assert!(db < -60.0, "pec: {db:.1} dB");
}

/// The incident spectrum offered to cross-section computations is the flux monitors' DFT
/// of the grid's own incident wave: on an axial run its complex value equals the DFT of the
/// total field recorded at the reference point (the box corner the wave enters first; in the
/// empty box the total field is the incident one to rounding), and its magnitude is the closed
/// form of the Gaussian-modulated sine, amplitude * s sqrt(2 pi) / 2 at the carrier (s the
/// envelope's standard deviation; the image at -f0 is ~1e-19 smaller), up to the pulse's tail
/// before t = 0 (the drive starts about 5 s before its peak, exp(-5^2 / 2) ~ 4e-6 of it):
/// 1e-5 relative. The intensity is |E|^2 / (2 eta0).
#[test]
fn incident_spectrum_is_the_grids_incident_wave() {
    let m = common::model(&scene("\"+z\"", "\"Ex\"", "f64", 700, ""));
    let t = m.tfsf.as_ref().unwrap().clone();
    let (dt, steps) = (m.grid.dt, m.grid.steps);
    let freqs = [F0 - 0.5e14, F0, F0 + 0.5e14];
    let got = t.incident_dft(&freqs, dt, steps);
    // The reference point: Ex at the corner (lo, lo, lo) of the box, on the plane z = lo.
    let ranges = split_even(m.grid.shape[0], 1);
    let mut b = CpuBackend::<f64>::new(&m, &ranges);
    let mut series = Vec::with_capacity(steps);
    {
        let mut s = Stepper::new(&m, &mut b, &ranges);
        for _ in 0..steps {
            s.step();
            series.push(s.backend.sample(Component::Ex, t.lo));
        }
    }
    for (q, &f) in freqs.iter().enumerate() {
        let (mut re, mut im) = (0.0, 0.0);
        for (n, v) in series.iter().enumerate() {
            let tn = (n + 1) as f64 * dt;
            let ph = -2.0 * std::f64::consts::PI * f * tn;
            re += v * ph.cos() * dt;
            im += v * ph.sin() * dt;
        }
        let (gr, gi) = got[q];
        let err = ((gr - re).powi(2) + (gi - im).powi(2)).sqrt() / (re * re + im * im).sqrt();
        eprintln!("f = {f:e}: incident DFT vs the grid's field at the corner: {err:.2e}");
        // The 3-D field there is the 1-D wave to f64 rounding (the -300 dB of the leakage);
        // measured 5e-12 to 1e-11, the rounding of the 700-term sums.
        assert!(err < 1e-9, "f = {f:e}: relative difference {err:e}");
    }
    let sf = 1.0e14 / (2.0 * (2.0 * 2f64.ln()).sqrt());
    let s = 1.0 / (2.0 * std::f64::consts::PI * sf);
    let want = 2.0 * s * (2.0 * std::f64::consts::PI).sqrt() / 2.0;
    let mag = (got[1].0.powi(2) + got[1].1.powi(2)).sqrt();
    eprintln!("|E(f0)| = {mag:e}, closed form {want:e}");
    assert!((mag - want).abs() < 1e-5 * want, "{mag:e} vs {want:e}");
    let i = t.incident_intensity(&[F0], dt, steps)[0];
    assert!((i - mag * mag / ETA0).abs() < 1e-12 * i);
}

/// The scene checks that are warnings, not errors: a box whose faces had to move to the grid
/// planes says where they went, and an object reaching a face of the box is flagged (the
/// incident field is that of vacuum there); the TF/SF waveform takes part in the run-wide
/// warnings (here: a run that ends before the pulse peaks).
#[test]
fn tfsf_warnings() {
    let warnings = |text: &str| match yee::scene::load_str(text, "test.toml") {
        Ok((_, w)) => w,
        Err(e) => panic!("{e}"),
    };
    let quiet = warnings(&scene("\"+z\"", "\"Ex\"", "f64", 700, ""));
    assert!(quiet.is_empty(), "{quiet:?}");
    let moved = warnings(
        &scene("\"+z\"", "\"Ex\"", "f64", 700, "")
            .replace("size = [1.5, 1.5, 1.5] }", "size = [1.52, 1.5, 1.5] }"),
    );
    assert!(
        moved
            .iter()
            .any(|w| w.contains("source[0].box") && w.contains("x = [-0.75, 0.75]")),
        "{moved:?}"
    );
    let crossing = warnings(&scene(
        "\"+z\"",
        "\"Ex\"",
        "f64",
        700,
        "[materials]\nglass = { epsilon = 2.0 }\n[[geometry]]\nshape = \"box\"\nmaterial = \"glass\"\ncenter = [0.0, 0.0, -1.0]\nsize = [0.5, 0.5, 1.0]\n",
    ));
    assert!(
        crossing
            .iter()
            .any(|w| w.contains("`glass` reaches a face of the box")),
        "{crossing:?}"
    );
    let short = warnings(&scene("\"+z\"", "\"Ex\"", "f64", 50, ""));
    assert!(short.iter().any(|w| w.contains("peak")), "{short:?}");
}

/// A 2-D run (one periodic cell along z) with an oblique wave in the xy plane: the wave does
/// not travel along the periodic axis, so it needs no Bloch walls; the box spans z (its z
/// faces are skipped) and the empty box leaks below -40 dB as in 3-D.
#[test]
fn oblique_in_plane_wave_in_a_2d_run() {
    let text = scene(
        "[1.0, 2.0, 0.0]",
        "\"Ez\"",
        "f64",
        700,
        "z_min = { type = \"periodic\" }\nz_max = { type = \"periodic\" }",
    )
    .replace("size = [3.0, 3.0, 3.0]", "size = [3.0, 3.0, 0.05]")
    .replace("size = [1.5, 1.5, 1.5] }", "size = [1.5, 1.5, 0.05] }");
    let m = common::model(&text);
    assert_eq!(m.grid.shape[2], 1);
    assert_eq!(m.tfsf.as_ref().unwrap().spans, [false, false, true]);
    let db = leakage_db::<f64>(&m, 2);
    eprintln!("2-D oblique [1, 2, 0] Ez: leakage {db:.1} dB");
    assert!(db < -40.0, "{db:.1} dB");
}
