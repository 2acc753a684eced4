//! Shared by the host-kernel tests and the GPU tests: the comparison scenes, a driver that
//! steps any backend exactly as the time loop does (probes every step, snapshots when due),
//! and the comparison with the CPU backend.
#![allow(dead_code)]

use yee::backend::cpu::CpuBackend;
use yee::backend::Backend;
use yee::decomp::{split_even, HaloPlan, SlabRange};
use yee::model::{Component, Model, Region};
use yee::real::Real;
use yee::run::source_values;

/// Parse and resolve scene text with a precision and step count substituted.
pub fn model(text: &str, precision: &str, steps: usize) -> Model {
    let text = text
        .replace("PRECISION", precision)
        .replace("STEPS", &steps.to_string());
    match yee::scene::load_str(&text, "test.toml") {
        Ok((m, _)) => m,
        Err(e) => panic!("{e}"),
    }
}

/// PML on every face, a dielectric box, a lossy sphere, a PEC box and a dipole; a probe and
/// a strided snapshot plane.
pub const PML_SCENE: &str = r#"
[simulation]
name = "pml"
length_unit = "mm"
cell_size = 1.0
size = [26.0, 22.0, 20.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "pml", cells = 5 }

[materials]
glass = { epsilon = 4.0 }
soil = { epsilon = 3.0, conductivity = 0.5 }
metal = { pec = true }

[[geometry]]
shape = "box"
material = "glass"
center = [3.0, 2.0, -1.0]
size = [8.0, 8.0, 6.0]

[[geometry]]
shape = "sphere"
material = "soil"
center = [-5.0, -3.0, 2.0]
radius = 3.0

[[geometry]]
shape = "box"
material = "metal"
center = [5.0, -4.0, 4.0]
size = [3.0, 3.0, 3.0]

[[source]]
type = "dipole"
component = "Ez"
position = [-1.0, 1.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[monitor]]
type = "probe"
name = "p"
position = [2.0, 1.0, 1.0]
components = ["Ez", "Hy", "Ex"]

[[monitor]]
type = "snapshot"
name = "s"
components = ["Ez", "Hx"]
plane = { z = 0.0 }
every = 7
stride = 2
"#;

/// Periodic x and y, a PMC z minimum and a PML z maximum, a plane wave, a dielectric slab and a
/// conductor; a volume snapshot.
pub const PERIODIC_SCENE: &str = r#"
[simulation]
name = "periodic"
length_unit = "mm"
cell_size = 1.0
size = [18.0, 12.0, 30.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
x_min = { type = "periodic" }
x_max = { type = "periodic" }
y_min = { type = "periodic" }
y_max = { type = "periodic" }
z_min = { type = "pmc" }
z_max = { type = "pml", cells = 6 }

[materials]
glass = { epsilon = 2.25 }
metal = { pec = true }
lossy = { epsilon = 2.0, conductivity = 0.2 }

[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 4.0]
size = [18.0, 12.0, 4.0]

[[geometry]]
shape = "cylinder"
material = "metal"
center = [2.0, 0.0, -4.0]
radius = 2.0
height = 4.0
axis = "y"

[[geometry]]
shape = "sphere"
material = "lossy"
center = [-4.0, 2.0, -6.0]
radius = 2.5

[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ex"
position = -10.0
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[source]]
type = "dipole"
component = "Ey"
position = [3.0, -2.0, 0.0]
waveform = { type = "ricker", frequency = 2.0e10 }
amplitude = 0.5

[[monitor]]
type = "probe"
name = "q"
position = [0.0, 0.0, 8.0]
components = ["Ex", "Hy"]

[[monitor]]
type = "snapshot"
name = "v"
components = ["Ex", "Hz"]
box = { center = [0.0, 0.0, 0.0], size = [12.0, 8.0, 20.0] }
every = 5
stride = 3
"#;

/// PMC x and y minima (the mirror halo copy and the mirrored E update), PEC x maximum, PML y
/// maximum, periodic z; a conductor and a dipole.
pub const PMC_SCENE: &str = r#"
[simulation]
name = "pmc"
length_unit = "mm"
cell_size = [1.0, 0.8, 1.2]
size = [21.0, 16.0, 14.4]
steps = STEPS
courant = 0.95
precision = "PRECISION"

[boundaries]
x_min = { type = "pmc" }
x_max = { type = "pec" }
y_min = { type = "pmc" }
y_max = { type = "pml", cells = 4 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }

[materials]
ceramic = { epsilon = 6.0, conductivity = 0.05 }

[[geometry]]
shape = "box"
material = "ceramic"
center = [-6.0, -5.0, 0.0]
size = [6.0, 4.0, 14.4]

[[source]]
type = "dipole"
component = "Ey"
position = [-9.0, -7.0, 2.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[monitor]]
type = "probe"
name = "r"
position = [0.0, 0.0, 0.0]
components = ["Ey", "Hz", "Hx"]
"#;

/// Everything a run produced: probe series (per sample), snapshot frames, final fields.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// probes[sample][step]
    pub probes: Vec<Vec<f64>>,
    /// snapshot values in order of capture, per (snapshot, component)
    pub snapshots: Vec<Vec<f64>>,
    /// the six components over the whole grid
    pub fields: Vec<Vec<f64>>,
}

fn whole(model: &Model) -> Region {
    Region {
        start: [0; 3],
        end: model.grid.shape,
        stride: [1; 3],
    }
}

/// Step `b` (holding `model` split as `ranges`) through all the model's steps as the time
/// loop does, recording every probe sample each step and every snapshot when due.
pub fn drive<B: Backend>(model: &Model, b: &mut B, ranges: &[SlabRange]) -> Trace {
    let halos = HaloPlan::new(ranges, &model.boundaries);
    let samples: Vec<(Component, [usize; 3])> = model
        .probes
        .iter()
        .flat_map(|p| p.samples.clone())
        .collect();
    let mut trace = Trace {
        probes: vec![Vec::new(); samples.len()],
        ..Default::default()
    };
    let mut n_snap = 0;
    for s in &model.snapshots {
        n_snap += s.regions.len();
    }
    trace.snapshots = vec![Vec::new(); n_snap];
    let mut j = Vec::new();
    for n in 0..model.grid.steps {
        b.update_h();
        b.exchange(&halos.after_h);
        source_values(model, (n as f64 + 0.5) * model.grid.dt, &mut j);
        b.update_e(&j);
        b.exchange(&halos.after_e);
        let step = n + 1;
        for (k, &(c, idx)) in samples.iter().enumerate() {
            trace.probes[k].push(b.sample(c, idx));
        }
        let mut slot = 0;
        for s in &model.snapshots {
            for (c, region) in &s.regions {
                if step % s.every == 0 {
                    let mut out = vec![B::Real::ZERO; region.len()];
                    b.gather(*c, region, &mut out);
                    trace.snapshots[slot].extend(out.iter().map(|v| v.to_f64()));
                }
                slot += 1;
            }
        }
    }
    assert!(b.all_finite(), "fields stayed finite");
    let r = whole(model);
    trace.fields = Component::ALL
        .iter()
        .map(|&c| {
            let mut out = vec![B::Real::ZERO; r.len()];
            b.gather(c, &r, &mut out);
            out.iter().map(|v| v.to_f64()).collect()
        })
        .collect();
    trace
}

/// The CPU backend's trace on one slab.
pub fn cpu_trace<T: Real>(model: &Model) -> Trace {
    let ranges = split_even(model.grid.shape[0], 1);
    let mut b = CpuBackend::<T>::new(model, &ranges);
    drive(model, &mut b, &ranges)
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Largest difference between two series relative to the largest magnitude of `want`.
fn rel_diff(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len(), "same length");
    let scale = max_abs(want);
    let d = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    if scale == 0.0 {
        if d == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        d / scale
    }
}

/// Assert that `got` matches `want` within `tol` relative to each quantity's largest
/// magnitude; returns the largest relative difference seen.
pub fn assert_close(got: &Trace, want: &Trace, tol: f64, what: &str) -> f64 {
    let mut worst: f64 = 0.0;
    for (c, (g, w)) in got.fields.iter().zip(&want.fields).enumerate() {
        assert!(
            max_abs(w) > 0.0,
            "{what}: component {} is all zero in the reference: the scene tests nothing",
            Component::ALL[c].name()
        );
        let d = rel_diff(g, w);
        assert!(
            d <= tol,
            "{what}: {} differs by {d:e} of its maximum (tolerance {tol:e})",
            Component::ALL[c].name()
        );
        worst = worst.max(d);
    }
    for (k, (g, w)) in got.probes.iter().zip(&want.probes).enumerate() {
        let d = rel_diff(g, w);
        assert!(
            d <= tol,
            "{what}: probe sample {k} differs by {d:e} (tolerance {tol:e})"
        );
        worst = worst.max(d);
    }
    assert_eq!(got.snapshots.len(), want.snapshots.len());
    for (k, (g, w)) in got.snapshots.iter().zip(&want.snapshots).enumerate() {
        assert!(!w.is_empty(), "{what}: snapshot {k} was never taken");
        let d = rel_diff(g, w);
        assert!(
            d <= tol,
            "{what}: snapshot {k} differs by {d:e} (tolerance {tol:e})"
        );
        worst = worst.max(d);
    }
    worst
}

/// Tolerance of a comparison: 1e-6 in f32, 1e-12 in f64 (relative to the largest magnitude).
pub fn tolerance<T: Real>() -> f64 {
    match T::PRECISION {
        yee::model::Precision::F32 => 1e-6,
        yee::model::Precision::F64 => 1e-12,
    }
}
