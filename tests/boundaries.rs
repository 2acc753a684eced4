//! Boundary conditions checked against symmetry and translation, where the exact answer is
//! another run of the engine: a PMC wall equals a mirror-symmetric full domain, and a periodic
//! axis is translation invariant.

mod common;

use common::*;
use yee::model::Component;

fn scene(size: [f64; 3], faces: &str, sources: &[([f64; 3], &str)]) -> String {
    let mut s = format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [{}, {}, {}]
steps = 150
precision = "f64"
[boundaries]
default = {{ type = "pml", cells = 6 }}
{faces}
[materials]
glass = {{ epsilon = 3.0 }}
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [0.2, 0.2, 10.0]
"#,
        size[0], size[1], size[2]
    );
    for (p, c) in sources {
        s.push_str(&format!(
            r#"
[[source]]
type = "dipole"
component = "{c}"
position = [{}, {}, {}]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }}
"#,
            p[0], p[1], p[2]
        ));
    }
    s
}

/// Index of component `c` at (i, j, k) in a field gathered from a grid of `shape`.
fn at(shape: [usize; 3], i: usize, j: usize, k: usize) -> usize {
    (i * shape[1] + j) * shape[2] + k
}

/// A PMC wall on the minimum face of `axis` equals the mirror-symmetric full domain: two
/// dipoles tangential to the plane at +-0.25 um (same sign) make tangential H vanish on the
/// symmetry plane, so the half domain with one dipole must reproduce the full domain's half.
fn check_pmc_symmetry(axis: usize) {
    let names = ["x", "y", "z"];
    let component = if axis == 2 { "Ex" } else { "Ez" };
    let mut size_full = [1.2; 3];
    size_full[axis] = 1.8;
    let mut size_half = [1.2; 3];
    size_half[axis] = 0.9;
    let base = [0.1, 0.15, 0.05];
    let with = |d: f64| {
        let mut p = base;
        p[axis] = d;
        p
    };
    // No geometry here: the rod is along z and would break the symmetry for axis z.
    let strip = |t: String| t.replace("size = [0.2, 0.2, 10.0]", "size = [0.0001, 0.0001, 0.0001]");
    let full = model(&strip(scene(
        size_full,
        "",
        &[(with(0.25), component), (with(-0.25), component)],
    )));
    let face = format!("{}_min = {{ type = \"pmc\" }}", names[axis]);
    let half = model(&strip(scene(
        size_half,
        &face,
        &[(with(0.25 - 0.45), component)],
    )));
    assert_eq!(half.sources[0].cells[axis][0], 5);
    let (_, f) = run_cpu::<f64>(&full, 1);
    let (_, h) = run_cpu::<f64>(&half, 2);
    let (sf, sh) = (full.grid.shape, half.grid.shape);
    let mut off = [0; 3];
    off[axis] = sf[axis] / 2;
    for c in Component::ALL {
        let (ff, hh) = (&f[c as usize], &h[c as usize]);
        let peak = max_abs(ff);
        let mut worst: f64 = 0.0;
        for i in 0..sh[0] {
            for j in 0..sh[1] {
                for k in 0..sh[2] {
                    worst = worst.max(
                        (ff[at(sf, i + off[0], j + off[1], k + off[2])] - hh[at(sh, i, j, k)])
                            .abs(),
                    );
                }
            }
        }
        // Only rounding differs (the mirror is applied exactly); 1e-9 of the peak is ~1e6 ulps
        // of headroom and still catches a wrong sign or a half-cell shift (errors of order 1).
        assert!(
            worst <= 1e-9 * peak.max(1e-30),
            "PMC on {}: {}: max difference {worst:.3e} of peak {peak:.3e}",
            names[axis],
            c.name()
        );
    }
}

#[test]
fn pmc_wall_on_x_min_equals_the_mirror_symmetric_full_domain() {
    check_pmc_symmetry(0);
}

#[test]
fn pmc_wall_on_y_min_equals_the_mirror_symmetric_full_domain() {
    check_pmc_symmetry(1);
}

#[test]
fn pmc_wall_on_z_min_equals_the_mirror_symmetric_full_domain() {
    check_pmc_symmetry(2);
}

#[test]
fn periodic_axes_are_translation_invariant() {
    let faces = r#"x_min = { type = "periodic" }
x_max = { type = "periodic" }
y_min = { type = "periodic" }
y_max = { type = "periodic" }"#;
    let a = model(
        &scene([1.0, 0.8, 1.0], faces, &[([0.1, 0.05, 0.0], "Ey")])
            .replace("size = [0.2, 0.2, 10.0]", "size = [10.0, 10.0, 10.0]"),
    );
    let b = model(
        &scene(
            [1.0, 0.8, 1.0],
            faces,
            &[([0.1 + 0.35, 0.05 + 0.3, 0.0], "Ey")],
        )
        .replace("size = [0.2, 0.2, 10.0]", "size = [10.0, 10.0, 10.0]"),
    );
    let (sx, sy) = (7, 6);
    assert_eq!(b.sources[0].cells[0][0], a.sources[0].cells[0][0] + sx);
    assert_eq!(b.sources[0].cells[1][0], a.sources[0].cells[1][0] + sy);
    let (_, fa) = run_cpu::<f64>(&a, 3);
    let (_, fb) = run_cpu::<f64>(&b, 2);
    let s = a.grid.shape;
    for c in Component::ALL {
        let (x, y) = (&fa[c as usize], &fb[c as usize]);
        let peak = max_abs(x);
        assert!(peak > 0.0);
        let mut worst: f64 = 0.0;
        for i in 0..s[0] {
            for j in 0..s[1] {
                for k in 0..s[2] {
                    let d = x[at(s, i, j, k)] - y[at(s, (i + sx) % s[0], (j + sy) % s[1], k)];
                    worst = worst.max(d.abs());
                }
            }
        }
        // Translation on a uniform periodic grid is exact: the same operations on the same values.
        assert!(
            worst == 0.0,
            "{}: translated fields differ by {worst:.3e} (peak {peak:.3e})",
            c.name()
        );
    }
}

/// A vacuum cell of 10 x 12 x 14 cells, Bloch-periodic on every axis with `phases` (a phase 0
/// written as a Bloch face), a z dipole and a probe, and `extra` scene text.
fn bloch_scene(phases: [f64; 3], steps: usize, extra: &str) -> String {
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [0.5, 0.6, 0.7]
steps = {steps}
precision = "f64"
[boundaries]
x_min = {{ type = "bloch", phase = {} }}
y_min = {{ type = "bloch", phase = {} }}
z_min = {{ type = "bloch", phase = {} }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.06, -0.11, 0.13]
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 3.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [-0.14, 0.17, -0.08]
components = ["Ez"]
{extra}
"#,
        phases[0], phases[1], phases[2]
    )
}

/// Scene text for a Drude-metal sphere of radius 0.12 um centred at x = `x` um on the axis.
fn drude_sphere(x: f64) -> String {
    format!(
        r#"
[materials]
metal = {{ conformal = false, epsilon = 2.0, drude = [{{ frequency = 5.0e14, damping = 2.0e13 }}] }}
[[geometry]]
shape = "sphere"
material = "metal"
center = [{x}, 0.0, 0.0]
radius = 0.12
"#
    )
}

/// Step a Bloch cell's pair of engines on `slabs` slabs (in the default fused sweep); the
/// probe series (real set) and both sets' final fields.
fn run_bloch<T: yee::real::Real>(
    model: &yee::model::Model,
    slabs: usize,
) -> (Vec<f64>, [Vec<Vec<f64>>; 2]) {
    run_bloch_in::<T>(model, slabs, yee::backend::StepMode::default(), None)
}

/// [`run_bloch`] in step mode `mode`, the fused sweep in bands of `band` values if given.
fn run_bloch_in<T: yee::real::Real>(
    model: &yee::model::Model,
    slabs: usize,
    mode: yee::backend::StepMode,
    band: Option<usize>,
) -> (Vec<f64>, [Vec<Vec<f64>>; 2]) {
    use yee::backend::bloch::BlochPair;
    use yee::backend::cpu::CpuBackend;
    use yee::backend::Backend;
    let ranges = yee::decomp::split_even(model.grid.shape[0], slabs);
    let mut re = CpuBackend::<T>::new(model, &ranges);
    let mut im = CpuBackend::<T>::new(&model.imaginary_set(), &ranges);
    if let Some(values) = band {
        re.set_fused_band_values(values);
        im.set_fused_band_values(values);
    }
    let mut pair = BlochPair::new(model, re, im);
    assert!(
        pair.has_fused_step(),
        "the CPU pair sweeps both sets together"
    );
    let (c, idx) = model.probes[0].samples[0];
    let mut series = Vec::new();
    {
        let mut s = yee::run::Stepper::new(model, &mut pair, &ranges).with_mode(mode);
        assert_eq!(s.mode(), mode);
        for _ in 0..model.grid.steps {
            s.step();
            series.push(s.backend.sample(c, idx));
        }
    }
    let fields = [pair.real(), pair.imaginary()]
        .map(|b| Component::ALL.iter().map(|&c| field(b, model, c)).collect());
    (series, fields)
}

#[test]
fn a_bloch_cell_rings_at_its_own_bloch_wave_on_the_grid() {
    // Phases on all three axes: the lowest mode of the empty cell is the plane wave of
    // k = 2 pi phase / L per axis, at the grid's frequency sin(w dt/2)^2 / (c dt)^2 =
    // sum sin(k d/2)^2 / d^2. Its next modes (k + 2 pi / L) lie above 3x that frequency.
    // The x wrap goes through the halo copy, y and z through the kernels' wrap: a missing
    // or wrong image on any axis moves the frequency by far more than the 1e-4 the peak
    // search resolves over the run's 64 periods (1e-5 with the Hann window's refinement).
    let phases = [0.2, 0.15, 0.1];
    let model = common::model(&bloch_scene(phases, 4000, ""));
    assert!(model.boundaries.has_bloch());
    let (series, _) = run_bloch::<f64>(&model, 2);
    let (d, c0, dt) = (0.05e-6, 299_792_458.0, model.grid.dt);
    let lengths = [0.5e-6, 0.6e-6, 0.7e-6];
    let s2: f64 = (0..3)
        .map(|a| {
            let k = 2.0 * std::f64::consts::PI * phases[a] / lengths[a];
            ((k * d / 2.0).sin() / d).powi(2)
        })
        .sum();
    let exact = 2.0 / dt * (c0 * dt * s2.sqrt()).asin() / (2.0 * std::f64::consts::PI);
    let got = peak_frequency(&series, dt, 0.5 * exact, 1.5 * exact);
    eprintln!("Bloch mode at {got:.6e} Hz, grid's exact {exact:.6e} Hz");
    assert!((got / exact - 1.0).abs() < 1e-4, "{got} vs {exact}");
}

#[test]
fn a_bloch_cell_does_not_depend_on_the_slab_split() {
    // Both field sets of a dispersive Bloch cell, bit for bit on 1 and 3 slabs (the x
    // images then come from another slab's halo), in f64 and f32.
    let metal = drude_sphere(0.2);
    let text = bloch_scene([0.3, -0.2, 0.45], 120, &metal);
    let model = common::model(&text);
    let one = run_bloch::<f64>(&model, 1);
    let three = run_bloch::<f64>(&model, 3);
    assert!(
        one.1[1][2].iter().any(|&v| v != 0.0),
        "the imaginary set is driven"
    );
    assert_eq!(one, three, "f64: 1 vs 3 slabs");
    let model = common::model(&text.replace("\"f64\"", "\"f32\""));
    assert_eq!(
        run_bloch::<f32>(&model, 1),
        run_bloch::<f32>(&model, 3),
        "f32"
    );
}

#[test]
fn a_bloch_pair_sweeps_fused_with_the_bits_of_its_two_pass_step() {
    // The fused sweep runs the Bloch pass plane by plane between the passes before and after
    // it, on both sets together; the two-pass step runs it over the whole grid. Every
    // correction reads a field the half step does not change, so the bits must agree: with
    // phases on x, y and z (a cell next to two faces takes both corrections in axis order),
    // a Drude sphere (the dispersive pass after the Bloch pass in the E list) and a magnetic
    // block (the H coefficients the H correction reads), on 1 and 3 slabs, in f64 and f32.
    use yee::backend::StepMode::{Fused, TwoPass};
    let objects = r#"
[materials]
metal = { conformal = false, epsilon = 2.0, drude = [{ frequency = 5.0e14, damping = 2.0e13 }] }
ferrite = { epsilon = 3.0, mu = 2.5 }
[[geometry]]
shape = "sphere"
material = "metal"
center = [0.2, 0.0, 0.0]
radius = 0.12
[[geometry]]
shape = "box"
material = "ferrite"
center = [-0.2, 0.3, 0.0]
size = [0.1, 0.2, 0.7]
"#;
    let text = bloch_scene([0.3, -0.2, 0.45], 60, objects);
    let model = common::model(&text);
    for slabs in [1, 3] {
        let two_pass = run_bloch_in::<f64>(&model, slabs, TwoPass, None);
        let fused = run_bloch_in::<f64>(&model, slabs, Fused, None);
        assert!(two_pass.1[1][4].iter().any(|&v| v != 0.0), "driven");
        assert_eq!(fused, two_pass, "f64 on {slabs} slabs");
    }
    let model = common::model(&text.replace("\"f64\"", "\"f32\""));
    assert_eq!(
        run_bloch_in::<f32>(&model, 3, Fused, None),
        run_bloch_in::<f32>(&model, 3, TwoPass, None),
        "f32"
    );
    // With y not periodic the sweep may run in row bands: one-row bands, phases on x and z.
    let text = text.replace(
        "y_min = { type = \"bloch\", phase = -0.2 }",
        "y_min = { type = \"pml\", cells = 3 }\ny_max = { type = \"pml\", cells = 3 }",
    );
    let model = common::model(&text);
    assert!(model.boundaries.has_bloch());
    let nz = model.grid.shape[2];
    assert_eq!(
        run_bloch_in::<f64>(&model, 2, Fused, Some(nz)),
        run_bloch_in::<f64>(&model, 2, TwoPass, None),
        "one-row bands"
    );
}

#[test]
fn a_conical_plane_wave_drives_both_sets_with_the_same_bits_fused_and_two_pass() {
    // An oblique wave's sheets drive the imaginary set too (their values the pair hands it in
    // each half step): the fused sweep gives the same bits as the two-pass step, on 1 and 2
    // slabs, with a Drude block in the wave's path.
    use yee::backend::StepMode::{Fused, TwoPass};
    let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.5, 0.3, 0.35]
steps = 80
precision = "f64"
[boundaries]
default = { type = "periodic" }
x_min = { type = "pml", cells = 5 }
x_max = { type = "pml", cells = 5 }
[materials]
metal = { conformal = false, epsilon = 2.0, drude = [{ frequency = 5.0e14, damping = 2.0e13 }] }
[[geometry]]
shape = "box"
material = "metal"
center = [0.2, 0.0, 0.05]
size = [0.2, 0.1, 0.15]
[[source]]
type = "plane_wave"
direction = [0.9396926207859084, 0.29619813272602386, 0.17101007166283436]
polarization = [0.0, -0.5, 0.8660254037844386]
position = -0.3
waveform = { type = "gaussian", frequency = 3.5e14, bandwidth = 1.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [0.35, 0.05, -0.05]
components = ["Ey"]
"#;
    let model = common::model(text);
    assert!(
        model.boundaries.has_bloch(),
        "the wave sets the Bloch phases"
    );
    for slabs in [1, 2] {
        let two_pass = run_bloch_in::<f64>(&model, slabs, TwoPass, None);
        assert!(
            two_pass.1[1][1].iter().any(|&v| v != 0.0),
            "both sets driven"
        );
        let fused = run_bloch_in::<f64>(&model, slabs, Fused, None);
        assert_eq!(fused, two_pass, "{slabs} slabs");
    }
}

#[test]
fn a_bloch_pair_sweeps_several_steps_at_once_with_the_bits_of_its_two_pass_steps() {
    // With x not periodic (a grating's wave axis: PML) the CPU sweeps several steps at once,
    // a wavefront over the planes (temporal blocking): a pair does so with both sets, each
    // set's halo planes travelling between the slabs' threads, the Bloch pass of every plane
    // in its place. The probe rows (queued within the sweep) and both sets' fields equal the
    // two-pass steps', on 1 to 4 slabs, with a Drude sphere and phases on y and z.
    use yee::backend::bloch::BlochPair;
    use yee::backend::cpu::CpuBackend;
    use yee::backend::{Backend, PhaseTimes, StepMode};
    let metal = drude_sphere(0.1);
    let text = bloch_scene([0.0, -0.2, 0.45], 70, &metal).replace(
        "x_min = { type = \"bloch\", phase = 0 }",
        "x_min = { type = \"pml\", cells = 3 }\nx_max = { type = \"pml\", cells = 3 }",
    );
    let model = common::model(&text);
    assert!(model.boundaries.has_bloch());
    let run = |slabs: usize, mode: StepMode, per_sweep: usize| {
        let ranges = yee::decomp::split_even(model.grid.shape[0], slabs);
        let re = CpuBackend::<f64>::new(&model, &ranges);
        let im = CpuBackend::<f64>::new(&model.imaginary_set(), &ranges);
        let mut pair = BlochPair::new(&model, re, im);
        let samples = model.probes[0].samples.clone();
        let mut rows = Vec::new();
        {
            let mut s = yee::run::Stepper::new(&model, &mut pair, &ranges)
                .with_mode(mode)
                .with_steps_per_sweep(per_sweep);
            assert_eq!(s.steps_per_sweep(), per_sweep, "{slabs} slabs, {mode:?}");
            s.step_many(model.grid.steps, &samples, &mut PhaseTimes::default());
            s.backend.drain_probes(&mut rows, true);
        }
        let fields = [pair.real(), pair.imaginary()].map(|b| {
            Component::ALL
                .iter()
                .map(|&c| field(b, &model, c))
                .collect::<Vec<_>>()
        });
        (rows, fields)
    };
    for slabs in [1, 2, 3, 4] {
        let want = run(slabs, StepMode::TwoPass, 1);
        let samples = model.probes[0].samples.len();
        assert_eq!(
            want.0.len(),
            model.grid.steps * samples,
            "a probe row per step"
        );
        assert!(
            want.1[1][2].iter().any(|&v| v != 0.0),
            "the imaginary set is driven"
        );
        let got = run(slabs, StepMode::Fused, 8);
        assert_eq!(got, want, "8 steps per sweep on {slabs} slabs");
    }
}

#[test]
fn bloch_phase_zero_is_the_plain_periodic_cell_with_one_field_set() {
    let bloch = common::model(&bloch_scene([0.0, 1.0, 0.0], 150, ""));
    let plain = common::model(
        &bloch_scene([0.0; 3], 150, "")
            .replace("type = \"bloch\", phase = 0", "type = \"periodic\"")
            .replace(
                "[boundaries]",
                "[boundaries]\ndefault = { type = \"periodic\" }",
            ),
    );
    // A whole period is no phase: no imaginary set, and the plan counts one set.
    assert!(!bloch.boundaries.has_bloch());
    let layout = yee::plan::Layout::of(&bloch);
    assert_eq!(layout.field_sets, 1);
    let pool = yee::run::worker_pool(2).unwrap();
    let ranges = yee::decomp::split_even(bloch.grid.shape[0], 2);
    assert!(matches!(
        yee::run::cpu_engine(&bloch, &ranges, &pool),
        yee::backend::Engine::CpuF64(_)
    ));
    assert_eq!(run_cpu::<f64>(&bloch, 2), run_cpu::<f64>(&plain, 2));
    // With a phase the plan counts both sets, and they are what the pair allocates.
    let with = common::model(&bloch_scene([0.25, 0.0, 0.0], 10, ""));
    let layout = yee::plan::Layout::of(&with);
    assert_eq!(layout.field_sets, 2);
    let planned = ranges
        .iter()
        .fold(yee::backend::Allocation::default(), |mut a, r| {
            a.add(&layout.slab_bytes(*r));
            a
        });
    let yee::backend::Engine::BlochCpuF64(pair) = yee::run::cpu_engine(&with, &ranges, &pool)
    else {
        panic!("a Bloch cell steps a pair of engines");
    };
    use yee::backend::Backend;
    assert_eq!(pair.allocation(), planned);
    let one = ranges
        .iter()
        .fold(yee::backend::Allocation::default(), |mut a, r| {
            a.add(&yee::plan::Layout::of(&plain).slab_bytes(*r));
            a
        });
    assert_eq!(
        planned.total(),
        2 * one.total(),
        "twice the plain periodic cell"
    );
}
