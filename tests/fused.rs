//! The fused H+E sweep gives the two-pass update's fields bit for bit: on every kind of physics
//! scene of the suite (CPML, smoothed dielectrics, conductors, PEC objects and faces, Drude,
//! Lorentz and Debye poles, magnetic materials, TF/SF boxes axial and oblique, plane waves with
//! their magnetic sheets, periodic and PMC faces, a graded mesh, 2-D grids), on 1 and 3 slabs
//! (and an uneven split with one-plane slabs), with the sweep in whole planes and in row bands
//! of one and of three rows, in f32 and f64. The whole state is compared,
//! not only the fields: the CPML psi arrays, the poles' currents and the TF/SF incident grid,
//! and every probe sample of every step. The same scenes hold the plane updates' baseline
//! (SSE2) variant to the AVX2 one ([`Isa`]) where the CPU has AVX2.

mod cuda_support;

use cuda_support::{
    assert_same_contents, h5_contents, model, FLUX_SCENE, MATERIALS_SCENE, PERIODIC_SCENE,
    PMC_SCENE, PML_SCENE, TFSF_SCENE, X_PLANE_WAVE,
};
use std::path::Path;
use yee::backend::cpu::{CpuBackend, Isa};
use yee::backend::{Backend, StepMode};
use yee::decomp::{split_even, SlabRange};
use yee::model::{BoundaryKind, Component, Model};
use yee::real::Real;
use yee::run::Stepper;

/// The bits of everything a run holds after its last step, and of its probe samples.
#[derive(PartialEq)]
struct Bits {
    /// Per probe sample, per step.
    probes: Vec<Vec<u64>>,
    /// Fields, psi arrays, pole state and incident grid, named.
    state: Vec<(String, Vec<u64>)>,
}

fn bits<T: Real>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// Step `model` split as `ranges` through all its steps in `mode`.
fn run<T: Real>(model: &Model, ranges: &[SlabRange], mode: StepMode) -> Bits {
    run_banded::<T>(model, ranges, mode, None, Isa::detect())
}

/// [`run`] with the fused sweep in row bands of `band` values (None: the default) and the
/// plane updates in the vector ISA `isa`.
fn run_banded<T: Real>(
    model: &Model,
    ranges: &[SlabRange],
    mode: StepMode,
    band: Option<usize>,
    isa: Isa,
) -> Bits {
    let mut b = CpuBackend::<T>::new(model, ranges);
    b.set_isa(isa).expect("the ISA is available");
    assert_eq!(b.isa(), isa);
    if let Some(values) = band {
        b.set_fused_band_values(values);
    }
    // The sweep really runs in the bands asked for (the bits cannot tell: any bands give the
    // same fields): whole rows, `values / nz` (at least one) each but the last, tiling the
    // rows in order; one band of every row when y is periodic, on a flat grid, or when a
    // band would hold the whole plane (the default).
    let [_, ny, nz] = model.grid.shape;
    let rows = band.map_or(ny, |v| (v / nz).max(1));
    let periodic_y = model.boundaries.faces[1][0] == BoundaryKind::Periodic;
    let want: Vec<_> = if periodic_y || nz == 1 || rows >= ny {
        std::iter::once(0..ny).collect()
    } else {
        (0..ny)
            .step_by(rows)
            .map(|j| j..(j + rows).min(ny))
            .collect()
    };
    assert_eq!(
        b.fused_bands(),
        want,
        "{}: bands of {band:?} values",
        model.name
    );
    let samples = samples_of(model);
    let mut probes = vec![Vec::new(); samples.len()];
    {
        let mut s = Stepper::new(model, &mut b, ranges).with_mode(mode);
        assert_eq!(s.mode(), mode, "the CPU engine steps in either mode");
        for _ in 0..model.grid.steps {
            s.step();
            for (series, &(c, idx)) in probes.iter_mut().zip(&samples) {
                series.push(s.backend.sample(c, idx).to_bits());
            }
        }
    }
    Bits {
        probes,
        state: state_bits(&mut b),
    }
}

/// The probe samples the runs record every step: the scene's, and every component on two
/// lines along x (through the middle of the grid and by its corner), so every plane of every
/// slab (the first and last ones by the halos included) is read in every step.
fn samples_of(model: &Model) -> Vec<(Component, [usize; 3])> {
    let [nx, ny, nz] = model.grid.shape;
    let mut samples: Vec<_> = model
        .probes
        .iter()
        .flat_map(|p| p.samples.iter().copied())
        .collect();
    for (j, k) in [(ny / 2, nz / 2), (ny.min(2) - 1, nz.min(2) - 1)] {
        for i in 0..nx {
            samples.extend(Component::ALL.iter().map(|&c| (c, [i, j, k])));
        }
    }
    samples
}

/// Fields, psi arrays, pole state and incident grid of `b`, named.
fn state_bits<T: Real>(b: &mut CpuBackend<T>) -> Vec<(String, Vec<u64>)> {
    let st = b.export_state().expect("the CPU engine exports its state");
    let mut state = Vec::new();
    for (c, f) in st.fields.iter().enumerate() {
        state.push((format!("field {c}"), bits(f)));
    }
    for a in &st.arrays {
        state.push((a.name.clone(), bits(&a.values)));
    }
    state
}

/// The state after all of `model`'s steps split as `ranges`, stepped fused in sweeps of
/// `per_sweep` steps ([`Stepper::step_many`]), and the probe samples of every step as the
/// sweeps queued them; None where the engine cannot sweep several steps at once (periodic or
/// PMC x faces).
fn run_swept<T: Real>(model: &Model, ranges: &[SlabRange], per_sweep: usize) -> Option<Bits> {
    let mut b = CpuBackend::<T>::new(model, ranges);
    let samples = samples_of(model);
    let mut rows = Vec::new();
    {
        let mut s = Stepper::new(model, &mut b, ranges)
            .with_mode(StepMode::Fused)
            .with_steps_per_sweep(per_sweep);
        if s.steps_per_sweep() != per_sweep {
            return None;
        }
        // An uneven last sweep too: the steps are not a multiple of `per_sweep`.
        s.step_many(model.grid.steps, &samples, &mut Default::default());
        assert_eq!(s.steps_done(), model.grid.steps);
        s.backend.drain_probes(&mut rows, true);
    }
    assert_eq!(
        rows.len(),
        model.grid.steps * samples.len(),
        "a row per step"
    );
    let probes = (0..samples.len())
        .map(|i| {
            rows.iter()
                .skip(i)
                .step_by(samples.len())
                .map(|v| v.to_bits())
                .collect()
        })
        .collect();
    Some(Bits {
        probes,
        state: state_bits(&mut b),
    })
}

/// Fused on 1 slab, 3 slabs and the uneven split `uneven` (cuts along x) against two-pass on
/// 1 slab, bit for bit.
fn check<T: Real>(model: &Model, uneven: &[usize]) {
    let nx = model.grid.shape[0];
    let reference = run::<T>(model, &split_even(nx, 1), StepMode::TwoPass);
    // A scene whose fields stayed zero would compare equal for any update.
    let field_bits = |b: &Bits| {
        b.state
            .iter()
            .take(6)
            .flat_map(|(_, v)| v.clone())
            .collect::<Vec<_>>()
    };
    assert!(
        field_bits(&reference)
            .iter()
            .any(|&v| f64::from_bits(v) != 0.0),
        "{}: the fields stayed zero",
        model.name
    );
    let mut cuts = vec![0];
    cuts.extend_from_slice(uneven);
    cuts.push(nx);
    let uneven: Vec<SlabRange> = cuts
        .windows(2)
        .map(|w| SlabRange { x0: w[0], x1: w[1] })
        .collect();
    // Row bands of the sweep: the default (whole planes on these small grids), one row, and
    // three rows (bands that end on and next to the CPML, source and TF/SF rows).
    let nz = model.grid.shape[2];
    let bands = [None, Some(nz), Some(3 * nz + 1)];
    let splits = [split_even(nx, 1), split_even(nx, 3), uneven];
    for (ranges, band) in splits
        .iter()
        .flat_map(|r| bands.iter().map(move |b| (r, *b)))
    {
        let fused = run_banded::<T>(model, ranges, StepMode::Fused, band, Isa::detect());
        let what = format!(
            "{} {} fused on slabs {:?}, bands of {band:?} values",
            model.name,
            T::PRECISION.name(),
            ranges.iter().map(|r| (r.x0, r.x1)).collect::<Vec<_>>()
        );
        assert_eq!(fused.state.len(), reference.state.len(), "{what}");
        for ((name, a), (_, b)) in fused.state.iter().zip(&reference.state) {
            assert!(a == b, "{what}: {name} differs from the two-pass update");
        }
        assert!(
            fused.probes == reference.probes,
            "{what}: probe series differ"
        );
    }
    // Several steps per sweep (temporal blocking), where the engine can: the same state
    // after the last step. Sweeps of 2 and 3 steps, and of more steps than a slab has planes,
    // on 1, 2 (a slab sweeping each way) and 3 slabs and the uneven split (slabs of one
    // plane, neighbours that wait on each other's halos at different rounds).
    // (Not with surface ports, which step between whole steps.)
    let swept_scene = model.boundaries.faces[0]
        .iter()
        .all(|f| !matches!(f, BoundaryKind::Periodic | BoundaryKind::Pmc))
        && model.surface_ports().is_empty();
    let cuts: Vec<&[SlabRange]> = vec![&splits[0], &splits[1], &splits[2]];
    let two = split_even(nx, 2);
    for ranges in cuts.into_iter().chain([two.as_slice()]) {
        for per_sweep in [2, 3, nx + 2] {
            let swept = run_swept::<T>(model, ranges, per_sweep);
            let what = format!(
                "{} {} on slabs {:?} in sweeps of {per_sweep} steps",
                model.name,
                T::PRECISION.name(),
                ranges.iter().map(|r| (r.x0, r.x1)).collect::<Vec<_>>()
            );
            assert_eq!(
                swept.is_some(),
                swept_scene,
                "{what}: can sweep several steps"
            );
            if let Some(swept) = swept {
                for ((name, a), (_, b)) in swept.state.iter().zip(&reference.state) {
                    assert!(a == b, "{what}: {name} differs from the two-pass update");
                }
                // Every sample of every step, read as the sweeps passed its plane.
                assert_eq!(swept.probes.len(), reference.probes.len());
                for (i, (a, b)) in swept.probes.iter().zip(&reference.probes).enumerate() {
                    if let Some(step) = a.iter().zip(b).position(|(x, y)| x != y) {
                        panic!("{what}: sample {i} differs first after step {}", step + 1);
                    }
                }
            }
        }
    }
    // The reference ran the widest ISA this CPU has; the baseline (SSE2) plane updates give
    // the same bits in both modes.
    if Isa::detect() == Isa::Baseline {
        eprintln!(
            "{}: this CPU has no wider ISA than the baseline",
            model.name
        );
        return;
    }
    for (ranges, mode) in [
        (split_even(nx, 1), StepMode::TwoPass),
        (split_even(nx, 3), StepMode::Fused),
    ] {
        let base = run_banded::<T>(model, &ranges, mode, None, Isa::Baseline);
        let what = format!(
            "{} {} {mode:?} on {} slabs, baseline ISA against {}",
            model.name,
            T::PRECISION.name(),
            ranges.len(),
            Isa::detect()
        );
        for ((name, a), (_, b)) in base.state.iter().zip(&reference.state) {
            assert!(a == b, "{what}: {name} differs");
        }
        assert!(
            base.probes == reference.probes,
            "{what}: probe series differ"
        );
    }
}

#[test]
fn fused_matches_two_pass_with_pml_smoothed_dielectric_conductor_and_pec_box() {
    let m = model(PML_SCENE, "f32", 40);
    check::<f32>(&m, &[1, 2, 13]);
    let m = model(PML_SCENE, "f64", 40);
    check::<f64>(&m, &[5, 6]);
}

#[test]
fn fused_matches_two_pass_with_drude_lorentz_debye_and_magnetic_materials() {
    // The metal sphere and the water box cross the 3-slab boundaries; the ferrite reaches into
    // the x max and y min CPML; the PEC z minimum face zeroes tangential E.
    let m = model(MATERIALS_SCENE, "f32", 40);
    check::<f32>(&m, &[8, 9, 16]);
    let m = model(MATERIALS_SCENE, "f64", 40);
    check::<f64>(&m, &[12]);
}

/// The metal sphere's curved surface placed by the surface ports (its `conformal = false`
/// dropped): they step after each step's sweep, over every slab (their stencils cross the
/// slabs' planes), so a sweep holds one step and the bits are the two-pass update's.
#[test]
fn fused_matches_two_pass_with_surface_ports() {
    let scene = MATERIALS_SCENE.replace("metal = { conformal = false, ", "metal = { ");
    let m = model(&scene, "f32", 40);
    assert!(m.surface_ports().surface_edges > 50);
    check::<f32>(&m, &[8, 9, 16]);
}

#[test]
fn fused_matches_two_pass_with_tfsf_boxes_axial_and_oblique() {
    // The box spans x nodes 6..18: the cuts put slab faces on and next to its x faces.
    for (dir, pol) in [
        ("\"+x\"", "\"Ez\""),
        ("[1.0, 2.0, 3.0]", "[-2.0, 1.0, 0.0]"),
    ] {
        let scene = TFSF_SCENE
            .replace("DIRECTION", dir)
            .replace("POLARIZATION", pol);
        check::<f32>(&model(&scene, "f32", 40), &[6, 7, 18]);
        check::<f64>(&model(&scene, "f64", 40), &[5, 17]);
    }
}

#[test]
fn fused_matches_two_pass_with_periodic_faces_pmc_and_a_plane_wave() {
    check::<f32>(&model(PERIODIC_SCENE, "f32", 40), &[1, 9]);
    check::<f64>(&model(PERIODIC_SCENE, "f64", 40), &[17]);
}

#[test]
fn fused_matches_two_pass_with_a_pmc_x_face_mirror_halo() {
    // The PMC x minimum's halo copy reads slab 0's first H plane, which the fused step updates
    // before the sweep; a one-plane first slab has that plane as its last too.
    check::<f32>(&model(PMC_SCENE, "f32", 40), &[1, 11]);
    check::<f64>(&model(PMC_SCENE, "f64", 40), &[4]);
}

#[test]
fn fused_matches_two_pass_with_a_plane_wave_along_x() {
    let m = model(X_PLANE_WAVE, "f32", 60);
    assert!(
        m.sources.iter().any(|s| s.magnetic.is_some()),
        "the plane wave has a magnetic sheet"
    );
    let sheet = m.sources[0].magnetic.as_ref().unwrap().cells[0][0];
    check::<f32>(&m, &[sheet, sheet + 1, 20]);
    check::<f64>(&model(X_PLANE_WAVE, "f64", 60), &[sheet + 1]);
}

/// Dispersive layers that fill whole x planes, across periodic y and z faces: every plane's
/// first cell (row 0, z 0) is a pole cell whose field is not zeroed by a wall, so the fused
/// sweep's per-plane range of pole cells must begin exactly there; and the Drude-Lorentz layer
/// holds more cells of each component than one parallel chunk of the two-pass pass (4096), so
/// that pass splits the group and the chunks' ranges of E must line up. A plane wave along x
/// drives every cell of the planes, a dipole off the axis the other components.
const DISPERSIVE_LAYERS: &str = r#"
[simulation]
name = "layers"
length_unit = "mm"
cell_size = 1.0
size = [32.0, 16.0, 16.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "periodic" }
x_min = { type = "pml", cells = 4 }
x_max = { type = "pml", cells = 4 }

[materials]
metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }], lorentz = [{ delta_epsilon = 1.0, frequency = 1.5e10, damping = 2.0e9 }] }
water = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }

[[geometry]]
shape = "box"
material = "metal"
center = [1.0, 0.0, 0.0]
size = [18.0, 16.0, 16.0]

[[geometry]]
shape = "box"
material = "water"
center = [-9.5, 0.0, 0.0]
size = [3.0, 16.0, 16.0]

[[source]]
type = "plane_wave"
direction = "+x"
polarization = "Ey"
position = -11.5
waveform = { type = "gaussian", frequency = 2.0e10, bandwidth = 2.0e10 }

[[source]]
type = "dipole"
component = "Ez"
position = [-3.0, 2.0, -4.0]
waveform = { type = "ricker", frequency = 2.5e10 }

[[monitor]]
type = "probe"
name = "in"
position = [0.0, 3.0, 1.0]
components = ["Ex", "Ey", "Ez"]
"#;

#[test]
fn fused_matches_two_pass_with_dispersive_layers_across_whole_planes() {
    let m = model(DISPERSIVE_LAYERS, "f32", 40);
    let nx = m.grid.shape[0];
    let st = CpuBackend::<f32>::new(&m, &split_even(nx, 1))
        .export_state()
        .expect("the CPU engine exports its state");
    let largest = st
        .arrays
        .iter()
        .filter(|a| a.name.starts_with("dispersive.") && a.name.ends_with(".e_prev"))
        .map(|a| a.values.len())
        .max();
    assert!(
        largest > Some(4096),
        "the largest pole group has {largest:?} cells, not more than one chunk"
    );
    check::<f32>(&m, &[5, 17]);
    check::<f64>(&model(DISPERSIVE_LAYERS, "f64", 40), &[12]);
}

/// A graded mesh (a refined box in a coarser background, every axis graded), a glass box and
/// a Drude sphere inside the refinement, CPML around.
const GRADED_SCENE: &str = r#"
[simulation]
name = "graded"
length_unit = "um"
cell_size = 0.05
size = [1.2, 1.0, 0.9]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 5 }
[materials]
glass = { epsilon = 2.25 }
metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 1.0e15, damping = 1.0e14 }] }
[[geometry]]
shape = "box"
material = "glass"
center = [0.05, 0.0, 0.0]
size = [0.3, 0.25, 0.2]
[[geometry]]
shape = "sphere"
material = "metal"
center = [-0.12, 0.08, 0.0]
radius = 0.08
[[refine]]
box = { center = [0.0, 0.0, 0.0], size = [0.4, 0.3, 0.3] }
cell_size = 0.025
[[source]]
type = "dipole"
component = "Ez"
position = [0.11, -0.07, 0.03]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [-0.05, 0.07, 0.03]
components = ["Ex", "Ez", "Hy"]
"#;

#[test]
fn fused_matches_two_pass_on_a_graded_mesh() {
    let m = model(GRADED_SCENE, "f32", 50);
    assert!(
        m.grid.lines.iter().all(|l| l.is_some()),
        "every axis graded"
    );
    let nx = m.grid.shape[0];
    check::<f32>(&m, &[nx / 2, nx / 2 + 1]);
    check::<f64>(&model(GRADED_SCENE, "f64", 50), &[nx / 3]);
}

/// A 2-D grid (one periodic cell along z) with a CPML on x and y, a refined (graded) square,
/// a dielectric, a magnetic box (the flat H path's per-cell coefficients), a Drude disc and a
/// PEC rod.
const FLAT_SCENE: &str = r#"
[simulation]
name = "flat"
length_unit = "um"
cell_size = 0.05
size = [1.5, 1.2, 0.05]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 6 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
glass = { epsilon = 2.25 }
ferrite = { epsilon = 2.0, mu = 3.0, magnetic_conductivity = 2.0e5 }
metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 1.0e15, damping = 1.0e14 }] }
[[geometry]]
shape = "box"
material = "glass"
center = [0.2, 0.1, 0.0]
size = [0.3, 0.2, 0.05]
[[geometry]]
shape = "box"
material = "ferrite"
center = [-0.3, -0.2, 0.0]
size = [0.2, 0.3, 0.05]
[[geometry]]
shape = "cylinder"
material = "metal"
center = [-0.1, 0.25, 0.0]
radius = 0.1
height = 0.05
axis = "z"
[[geometry]]
shape = "cylinder"
material = "pec"
center = [0.35, -0.3, 0.0]
radius = 0.06
height = 0.05
axis = "z"
[[refine]]
box = { center = [0.0, 0.0, 0.0], size = [0.4, 0.4, 0.05] }
cell_size = [0.025, 0.025, 0.05]
[[source]]
type = "dipole"
component = "Ez"
position = [0.02, 0.01, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }
[[source]]
type = "dipole"
component = "Ex"
position = [-0.2, 0.1, 0.0]
waveform = { type = "ricker", frequency = 2.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [0.1, -0.15, 0.0]
components = ["Ez", "Ex", "Hz", "Hx"]
"#;

#[test]
fn fused_matches_two_pass_on_a_2d_grid() {
    let m = model(FLAT_SCENE, "f32", 80);
    assert_eq!(m.grid.shape[2], 1, "one cell along z");
    let nx = m.grid.shape[0];
    check::<f32>(&m, &[1, nx / 2]);
    check::<f64>(&model(FLAT_SCENE, "f64", 80), &[nx - 1]);
    // The same flat grid with a PMC y minimum (the mirrored H row below it) and a PEC y
    // maximum.
    let pec = FLAT_SCENE.replace(
        "z_min = { type = \"periodic\" }",
        "y_min = { type = \"pmc\" }\ny_max = { type = \"pec\" }\nz_min = { type = \"periodic\" }",
    );
    check::<f32>(&model(&pec, "f32", 60), &[nx / 3]);
}

/// The messages a run gives its observer.
#[derive(Default)]
struct Notes(Vec<String>);

impl yee::run::Observer for Notes {
    fn message(&mut self, m: &str) {
        self.0.push(m.to_string());
    }
}

/// Run `model` split as `ranges` on as many threads, with up to `per_sweep` steps per sweep,
/// into `path`; the run's messages.
fn run_file(model: &Model, ranges: &[SlabRange], per_sweep: usize, path: &Path) -> Vec<String> {
    let mut b = CpuBackend::<f32>::new(model, ranges);
    let mut opts = yee::run::RunOptions::new(path.to_path_buf());
    opts.steps_per_sweep = per_sweep;
    let mut notes = Notes::default();
    let summary = yee::run::run_backend(model, &mut b, ranges, ranges.len(), &opts, &mut notes)
        .expect("the run");
    assert!(summary.complete);
    notes.0
}

/// A whole run in sweeps of up to 8 steps between the steps its monitors read (snapshots
/// every 4 and 6 steps, flux DFTs at their decimation, the NaN checks; the probes within the
/// sweeps) writes the file of one step per sweep, value for value, on 1 and 2 slabs; and with
/// the flux planes and probes alone (sweeps as long as the DFTs' decimation allows).
#[test]
fn a_run_in_sweeps_of_several_steps_writes_the_file_of_one_step_per_sweep() {
    let dir = std::env::temp_dir().join(format!("yee-swept-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let everything = model(FLUX_SCENE, "f32", 50);
    assert!(!everything.probes.is_empty() && !everything.snapshots.is_empty());
    let mut flux_and_probes = everything.clone();
    flux_and_probes.snapshots.clear();
    assert!(
        flux_and_probes.fluxes.iter().any(|f| f.decimation > 1),
        "a DFT sampled less often than every step leaves steps to sweep together"
    );
    for (what, m) in [
        ("probes, snapshots and flux", &everything),
        ("probes and flux", &flux_and_probes),
    ] {
        let nx = m.grid.shape[0];
        let one = dir.join("one.h5");
        let notes = run_file(m, &split_even(nx, 1), 1, &one);
        assert!(
            !notes.iter().any(|n| n.contains("steps per sweep")),
            "{notes:?}"
        );
        let want = h5_contents(&one);
        for slabs in [1, 2] {
            let swept = dir.join(format!("swept{slabs}.h5"));
            let notes = run_file(m, &split_even(nx, slabs), 8, &swept);
            assert!(
                notes.iter().any(|n| n.contains("up to 8 steps per sweep")),
                "{what}, {slabs} slab(s): {notes:?}"
            );
            let got = h5_contents(&swept);
            assert_same_contents(&got, &want, &format!("{what}, {slabs} slab(s)"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The engine sweeps several steps at once only with the plain copies between neighbours:
/// any copy that differs from them in one respect (negated, to another slab, into the other
/// halo, from another plane), in either half step's list, makes it refuse. The copies the
/// halo plans of the suite's scenes hold (periodic wraps, the PMC mirror) differ in several
/// respects at once, so each respect is checked here on its own.
#[test]
fn only_plain_neighbour_copies_allow_several_steps_per_sweep() {
    use yee::decomp::{HaloPlan, HaloSide};
    let m = model(PML_SCENE, "f32", 4);
    let ranges = split_even(m.grid.shape[0], 3);
    let b = CpuBackend::<f32>::new(&m, &ranges);
    let plain = HaloPlan::new(&ranges, &m.boundaries);
    assert!(!plain.after_h.is_empty() && !plain.after_e.is_empty());
    assert!(b.can_step_fused_many(&plain));
    let other = |s: HaloSide| match s {
        HaloSide::Left => HaloSide::Right,
        HaloSide::Right => HaloSide::Left,
    };
    for half in 0..2 {
        for change in 0..4 {
            let mut plan = plain.clone();
            let copies = if half == 0 {
                &mut plan.after_h
            } else {
                &mut plan.after_e
            };
            let c = &mut copies[0];
            match change {
                0 => c.negate = true,
                1 => c.dst_slab = c.src_slab,
                2 => c.dst_side = other(c.dst_side),
                _ => c.src_x += 1,
            }
            let changed = *c;
            assert!(
                !b.can_step_fused_many(&plan),
                "copy list {half}, change {change}: {changed:?}"
            );
        }
    }
}

/// The threads that sweep several steps at once flush subnormals as the caller's do (a run's
/// pool flushes them, `yee::fpu`): on a scene whose fields decay through subnormals (a
/// source of 1e-36 in f32), sweeps of 4 steps on 2 slabs give the bits of one step per sweep
/// on the pool's threads, with and without the flush, and the two differ.
#[test]
fn several_steps_per_sweep_flush_subnormals_as_the_callers_pool_does() {
    let scene = PML_SCENE.replacen(
        "position = [-1.0, 1.0, 0.0]\n",
        "position = [-1.0, 1.0, 0.0]\namplitude = 1.0e-36\n",
        1,
    );
    let m = model(&scene, "f32", 30);
    let ranges = split_even(m.grid.shape[0], 2);
    let state_in = |flush: bool, per_sweep: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .start_handler(move |_| {
                if flush {
                    yee::fpu::flush_subnormals_to_zero();
                }
            })
            .build()
            .expect("a pool");
        pool.install(|| {
            let mut b = CpuBackend::<f32>::new(&m, &ranges);
            {
                let mut s = Stepper::new(&m, &mut b, &ranges)
                    .with_mode(StepMode::Fused)
                    .with_steps_per_sweep(per_sweep);
                assert_eq!(s.steps_per_sweep(), per_sweep);
                s.step_many(m.grid.steps, &[], &mut Default::default());
            }
            state_bits(&mut b)
        })
    };
    let flushed = state_in(true, 1);
    let kept = state_in(false, 1);
    assert!(
        flushed != kept,
        "the fields pass through subnormals, so the flush changes them"
    );
    assert!(flushed == state_in(true, 4), "sweeps on a flushing pool");
    assert!(
        kept == state_in(false, 4),
        "sweeps on a pool that keeps subnormals"
    );
}
