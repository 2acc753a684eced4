//! The one-way plane wave: a Huygens sheet launches its wave only in `direction`, with the
//! incident E equal to `amplitude`; `two_way = true` keeps the plain current sheet.
//!
//! Each case is a 1-D column (one periodic cell across, PML along the direction) in f64, with
//! flux planes before and behind the sheet.

mod common;

use yee::backend::cpu::CpuBackend;
use yee::backend::Backend;
use yee::decomp::split_even;
use yee::model::{Model, ETA0};
use yee::run::Stepper;

const F0: f64 = 2.0e14;

/// A column along `axis` with the sheet at 0 and flux planes at -1 um and +1 um.
fn scene(axis: &str, direction: &str, polarization: &str, extra: &str) -> String {
    let size = match axis {
        "x" => "[6.0, 0.05, 0.05]",
        "y" => "[0.05, 6.0, 0.05]",
        _ => "[0.05, 0.05, 6.0]",
    };
    format!(
        r#"
[simulation]
cell_size = 0.05
size = {size}
steps = 3000
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
{axis}_min = {{ type = "pml", cells = 20 }}
{axis}_max = {{ type = "pml", cells = 20 }}
[[source]]
type = "plane_wave"
direction = "{direction}"
polarization = "{polarization}"
position = 0.0
waveform = {{ type = "gaussian", frequency = {F0:e}, bandwidth = 1.0e14 }}
amplitude = 2.0
{extra}
[[monitor]]
type = "flux"
name = "low"
plane = {{ {axis} = -1.0 }}
frequencies = {{ min = 1.5e14, max = 2.5e14, count = 3 }}
[[monitor]]
type = "flux"
name = "high"
plane = {{ {axis} = 1.0 }}
frequencies = {{ min = 1.5e14, max = 2.5e14, count = 3 }}
[[monitor]]
type = "probe"
name = "p"
position = [0.0, 0.0, 0.0]
components = ["{polarization}"]
"#
    )
}

/// Flux spectra through the low and high planes (power along +axis).
fn run(model: &Model, slabs: usize) -> (Vec<f64>, Vec<f64>) {
    run_in::<f64>(model, slabs)
}

fn run_in<T: yee::real::Real>(model: &Model, slabs: usize) -> (Vec<f64>, Vec<f64>) {
    let ranges = split_even(model.grid.shape[0], slabs);
    let mut b = CpuBackend::<T>::new(model, &ranges);
    {
        let mut s = Stepper::new(model, &mut b, &ranges);
        for n in 0..model.grid.steps {
            s.step();
            s.backend.accumulate_flux(n + 1, model.grid.dt);
        }
    }
    let low = b.flux_dft(0).unwrap().power();
    let high = b.flux_dft(1).unwrap().power();
    (low, high)
}

/// Backward leakage (flux behind the sheet against flux in front) at the band centre is below
/// -30 dB for every axis and both signs, and the direction is the one asked for.
#[test]
fn one_way_sheet_leaks_less_than_minus_30_db_backwards() {
    for (axis, dir, pol) in [
        ("x", "+x", "Ez"),
        ("x", "-x", "Ez"),
        ("x", "+x", "Ey"),
        ("y", "-y", "Ex"),
        ("y", "+y", "Ez"),
        ("z", "+z", "Ey"),
        ("z", "-z", "Ex"),
    ] {
        let m = common::model(&scene(axis, dir, pol, ""));
        let (low, high) = run(&m, 1);
        let (front, back) = if dir.starts_with('+') {
            (high[1], -low[1])
        } else {
            (-low[1], high[1])
        };
        let db = 10.0 * (back.abs() / front).log10();
        eprintln!("{dir} {pol}: band centre forward {front:.4e}, backward {back:.3e}: {db:.1} dB");
        // Forward power must flow in the asked direction.
        assert!(front > 0.0, "{dir} {pol}: no forward power ({front})");
        // The sheet's two halves cancel behind it exactly at the band centre (the delay uses the
        // grid's own dispersion there); what is left is f64 rounding and the PML's own
        // reflection (< -60 dB at 20 cells). The two-way sheet this replaces gives 0 dB, so
        // -30 dB separates them by a wide margin.
        assert!(db < -30.0, "{dir} {pol}: backward leakage {db:.1} dB");
        // Across the band (1.5e14 and 2.5e14 Hz, a third of the band centre away) the phase
        // mismatch of the half-cell delay is second order in the offset: still below -30 dB.
        for q in [0, 2] {
            let (f, b) = if dir.starts_with('+') {
                (high[q], -low[q])
            } else {
                (-low[q], high[q])
            };
            assert!(
                b.abs() < 1e-3 * f,
                "{dir} {pol} at frequency {q}: {b} vs {f}"
            );
        }
    }
    // Inside a dielectric the sheet launches into the medium's impedance and speed.
    let glass = "[materials]\nglass = { epsilon = 4.0 }\n[[geometry]]\nshape = \"box\"\nmaterial = \"glass\"\ncenter = [0.0, 0.0, 0.0]\nsize = [1.0, 1.0, 10.0]";
    let m = common::model(&scene("z", "+z", "Ex", glass));
    let (low, high) = run(&m, 1);
    let db = 10.0 * (-low[1] / high[1]).abs().log10();
    eprintln!("+z Ex in epsilon 4: band centre backward leakage {db:.1} dB");
    assert!(high[1] > 0.0 && db < -30.0, "in glass: {db:.1} dB");
    // In f32 (the default precision) rounding of the fields limits the cancellation, still far
    // below -30 dB.
    let m = common::model(&scene("x", "-x", "Ey", "").replace("f64", "f32"));
    let (low, high) = run_in::<f32>(&m, 1);
    let db = 10.0 * (high[1].abs() / -low[1]).log10();
    eprintln!("-x Ey f32: band centre backward leakage {db:.1} dB");
    assert!(db < -30.0, "f32: backward leakage {db:.1} dB");
}

/// `-x` is the mirror image of `+x`: the same forward spectrum through the mirrored plane.
/// (Before the sheet was one-way, the two gave bit-identical fields.)
#[test]
fn direction_minus_x_mirrors_plus_x() {
    let (pl, ph) = run(&common::model(&scene("x", "+x", "Ez", "")), 1);
    let (ml, mh) = run(&common::model(&scene("x", "-x", "Ez", "")), 1);
    for q in 0..3 {
        // The mirror maps the high plane (1 um) onto the low one (-1 um); the flux planes and the
        // sheet sit on E nodes so the mirrored geometry is the same grid up to the half-cell
        // offset of the magnetic sheet, which moves with the direction. Equal to 1e-6 of the
        // forward flux (the leakage of either is far below that difference's bound).
        assert!(
            (ph[q] + ml[q]).abs() < 1e-6 * ph[q],
            "forward flux +x {} vs -x {}",
            ph[q],
            -ml[q]
        );
        assert!(ph[q] > 1e3 * pl[q].abs() && -ml[q] > 1e3 * mh[q].abs());
    }
}

/// The incident E has the peak `amplitude` (V/m): the probe on the sheet sees a pulse of peak
/// 2 V/m.
#[test]
fn amplitude_is_the_incident_field_and_two_way_keeps_the_current_sheet() {
    let m = common::model(&scene("z", "+z", "Ex", ""));
    let (series, _) = common::run_cpu::<f64>(&m, 1);
    let peak = common::max_abs(&series[0]);
    // The Gaussian's carrier crest lies off the envelope peak by at most a quarter period:
    // sampled peak between 0.94 and 1.0 of the amplitude (see the waveform test), and the grid
    // changes the launched amplitude by O((k d)^2) < 0.5 % at 30 cells per wavelength.
    assert!(peak > 0.93 * 2.0 && peak < 2.0 * 1.005, "peak E {peak}");

    // The two-way sheet radiates both ways, equally: J d eta / 2 of E each way.
    let m = common::model(&scene("z", "+z", "Ex", "two_way = true"));
    assert!(m.sources[0].magnetic.is_none());
    let (low, high) = run(&m, 1);
    for q in 0..3 {
        assert!(
            (high[q] + low[q]).abs() < 1e-6 * high[q],
            "{} {}",
            high[q],
            low[q]
        );
    }
    let (series, _) = common::run_cpu::<f64>(&m, 1);
    let peak = common::max_abs(&series[0]);
    let expect = 2.0 * 0.05e-6 * ETA0 / 2.0;
    assert!(
        peak > 0.93 * expect && peak < 1.01 * expect,
        "{peak} vs {expect}"
    );
}

/// The sheet on a slab boundary (and anywhere else) gives bit-identical fields on 1 and k slabs:
/// the electric sheet on the first plane of one slab, the magnetic one on the last of the other.
#[test]
fn one_way_sheet_is_bit_identical_across_slabs_including_on_a_slab_boundary() {
    let text = scene("x", "+x", "Ez", "").replace("steps = 3000", "steps = 400");
    let m = common::model(&text);
    let nx = m.grid.shape[0];
    let e = m.sources[0].cells[0][0];
    let h = m.sources[0].magnetic.as_ref().unwrap().cells[0][0];
    assert_eq!((e, h), (nx / 2, nx / 2 - 1));
    let (_, one) = common::run_cpu::<f64>(&m, 1);
    // Two even slabs split at nx / 2: the E sheet opens the second slab, the H sheet closes
    // the first.
    let (_, two) = common::run_cpu::<f64>(&m, 2);
    let (_, five) = common::run_cpu::<f32>(&m, 5);
    let (_, one32) = common::run_cpu::<f32>(&m, 1);
    assert!(one == two, "1 vs 2 slabs");
    assert!(one32 == five, "1 vs 5 slabs (f32)");
    // The -x sheet puts its magnetic plane ahead: split there too.
    let m = common::model(&text.replace("\"+x\"", "\"-x\""));
    let h = m.sources[0].magnetic.as_ref().unwrap().cells[0][0];
    assert_eq!(h, nx / 2);
    let ranges = [
        yee::decomp::SlabRange { x0: 0, x1: h + 1 },
        yee::decomp::SlabRange { x0: h + 1, x1: nx },
    ];
    let (_, one) = common::run_cpu::<f64>(&m, 1);
    let (_, split) = common::run_ranges::<f64>(&m, &ranges);
    assert!(one == split, "-x: 1 slab vs split after the magnetic sheet");
}

/// Flux spectra (low, high) of `model` as a run builds its CPU engine: a Bloch cell's pair
/// of engines where the model has a phase.
fn run_engine(model: &Model, slabs: usize) -> (Vec<f64>, Vec<f64>) {
    fn go<B: Backend>(
        model: &Model,
        b: &mut B,
        ranges: &[yee::decomp::SlabRange],
    ) -> (Vec<f64>, Vec<f64>) {
        {
            let mut s = Stepper::new(model, b, ranges);
            for n in 0..model.grid.steps {
                s.step();
                s.backend.accumulate_flux(n + 1, model.grid.dt);
            }
        }
        (
            b.flux_dft(0).unwrap().power(),
            b.flux_dft(1).unwrap().power(),
        )
    }
    let ranges = split_even(model.grid.shape[0], slabs);
    let pool = yee::run::worker_pool(2).unwrap();
    match yee::run::cpu_engine(model, &ranges, &pool) {
        yee::backend::Engine::CpuF64(mut b) => go(model, &mut b, &ranges),
        yee::backend::Engine::BlochCpuF64(mut b) => go(model, &mut b, &ranges),
        _ => unreachable!("an f64 CPU engine"),
    }
}

/// An oblique one-way sheet in a Bloch cell (the wave sets the phase of the axis it tilts
/// towards) launches one way, and its power along the normal is cos(theta) times the normal
/// wave's: for s and p, tilted towards each axis, so that every wrap (x: the halo copy
/// between slabs, y and z: the kernels' wrap) carries the wave's phase.
#[test]
fn oblique_sheets_are_one_way_and_carry_cos_theta_of_the_power() {
    let (s, c) = 30f64.to_radians().sin_cos();
    // (column axis, tilt axis, s polarisation, p polarisation)
    for (axis, tilt, s_pol, p_pol) in [
        ("x", 1, "Ez", "Ey"),
        ("z", 0, "Ey", "Ex"),
        ("x", 2, "Ey", "Ez"),
    ] {
        let a = ["x", "y", "z"].iter().position(|n| *n == axis).unwrap();
        let mut size = ["0.05"; 3];
        size[a] = "6.0";
        size[tilt] = "0.2";
        let mut dir = [0.0; 3];
        dir[a] = c;
        dir[tilt] = s;
        for pol in [s_pol, p_pol] {
            let normal = scene(axis, &format!("+{axis}"), pol, "")
                .replace("[0.05, 0.05, 6.0]", "[SIZE]")
                .replace("[6.0, 0.05, 0.05]", "[SIZE]")
                .replace("[SIZE]", &format!("[{}]", size.join(", ")));
            let oblique = normal.replace(
                &format!("direction = \"+{axis}\""),
                &format!(
                    "direction = [{:.17}, {:.17}, {:.17}]",
                    dir[0], dir[1], dir[2]
                ),
            );
            let m = common::model(&oblique);
            assert!(m.boundaries.has_bloch());
            let (low, high) = run_engine(&m, 2);
            let (_, high_n) = run_engine(&common::model(&normal), 2);
            let back = -low[1] / high[1];
            let ratio = high[1] / high_n[1];
            eprintln!("+{axis} tilted to {tilt} {pol}: backward {back:.2e}, power ratio {ratio:.6} (cos {c:.6})");
            // At the band centre the sheet's two halves cancel behind it (its delay and the
            // J/M balance use the grid's own dispersion with the fixed transverse k): what is
            // left is rounding and the PML's reflection, as for the normal wave.
            assert!(back.abs() < 1e-5, "{axis} {tilt} {pol}: backward {back}");
            // The grid's cos(theta) differs from the continuum's by O((k d)^2 / 24) ~ 3e-4
            // at 30 cells per wavelength, and the flux plane's half-cell H average by as much.
            assert!(
                (ratio - c).abs() < 2e-3,
                "{axis} {tilt} {pol}: ratio {ratio} vs {c}"
            );
        }
    }
}
