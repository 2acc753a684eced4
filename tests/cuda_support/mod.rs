//! Shared by the host-kernel tests and the GPU tests: the comparison scenes, a driver that
//! steps any backend as the time loop does (probes every step, snapshots when due, flux DFTs
//! every step), reading monitors either at once (`sample`, `gather`) or queued (`queue_probes`
//! / `drain_probes`, `queue_gather` / `take_gather` a step later, after the next update has
//! overwritten the fields), and the comparisons with the CPU backend: bit for bit
//! ([`assert_identical`], the host-compiled kernels) or within a tolerance ([`assert_close`], a
//! real GPU, which cannot flush f64 subnormals as the CPU's threads do; its f32 runs and the
//! end-to-end file are checked bit for bit in `tests/cuda_backend.rs`).
#![allow(dead_code)]

pub mod host;

use yee::backend::cpu::CpuBackend;
use yee::backend::{Backend, GatherTicket};
use yee::decomp::{split_even, HaloPlan, SlabRange};
use yee::model::{Component, Model, Region};
use yee::real::Real;
use yee::run::{magnetic_source_values, source_values};

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

/// [`PML_SCENE`] on a graded mesh: a refine box of half cells around the glass box (so every
/// axis is graded, the refinement reaching close to the PML), with a Drude sphere added (the
/// dispersive pass on graded cells).
pub fn graded_pml_scene() -> String {
    PML_SCENE.replace(
        "[materials]\n",
        r#"[[refine]]
box = { center = [2.0, 1.0, 0.0], size = [12.0, 12.0, 10.0] }
cell_size = 0.5

[materials]
drude = { conformal = false, epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }] }
"#,
    ) + r#"
[[geometry]]
shape = "sphere"
material = "drude"
center = [-2.0, 4.0, -3.0]
radius = 2.5
"#
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

/// A closed flux box (its x_min face on slab 1's first plane of a 3-slab split, its y and z
/// faces across all three slabs) and a far-field box, around two dipoles and a lossy
/// dielectric; the face patches' DFTs must match the CPU backend's bit for bit.
pub const BOX_SCENE: &str = r#"
[simulation]
name = "boxes"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 18.0, 16.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "pml", cells = 4 }

[materials]
glass = { epsilon = 3.0, conductivity = 0.1 }

[[geometry]]
shape = "box"
material = "glass"
center = [3.0, -1.0, 1.0]
size = [4.0, 4.0, 2.0]

[[source]]
type = "dipole"
component = "Ez"
position = [-1.0, 1.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[source]]
type = "dipole"
component = "Ex"
position = [1.0, -2.0, 1.0]
waveform = { type = "ricker", frequency = 2.5e10 }

[[monitor]]
type = "flux"
name = "box"
box = { center = [1.0, 0.0, 0.0], size = [10.0, 8.0, 6.0] }
frequencies = { min = 1.0e10, max = 5.0e10, count = 4 }

[[monitor]]
type = "far_field"
name = "ff"
box = { center = [0.0, 0.0, 1.0], size = [12.0, 6.0, 4.0] }
frequencies = { min = 2.0e10, max = 4.0e10, count = 3 }
theta = { min = 0.0, max = 180.0, count = 5 }
phi = { min = 0.0, max = 360.0, count = 9 }
"#;

/// Flux planes normal to x (one on a slab boundary of a 3-slab split, where H below the plane
/// is in the left halo, one inside a slab), y and z, through a lossy dielectric and a dipole's
/// field; probes, and two snapshots due together every 12 steps.
pub const FLUX_SCENE: &str = r#"
[simulation]
name = "flux"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 18.0, 16.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "pml", cells = 4 }

[materials]
glass = { epsilon = 3.0, conductivity = 0.1 }

[[geometry]]
shape = "box"
material = "glass"
center = [3.0, -1.0, 2.0]
size = [6.0, 8.0, 6.0]

[[source]]
type = "dipole"
component = "Ez"
position = [-1.0, 1.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[source]]
type = "dipole"
component = "Ex"
position = [1.0, -2.0, 1.0]
waveform = { type = "ricker", frequency = 2.5e10 }

[[monitor]]
type = "flux"
name = "x_boundary"
plane = { x = -4.0 }
frequencies = { min = 1.0e10, max = 5.0e10, count = 7 }

[[monitor]]
type = "flux"
name = "x_inside"
plane = { x = 5.0 }
frequencies = { min = 2.0e10, max = 4.0e10, count = 3 }

[[monitor]]
type = "flux"
name = "y"
plane = { y = 3.0 }
frequencies = { min = 1.0e10, max = 5.0e10, count = 5 }

[[monitor]]
type = "flux"
name = "z"
plane = { z = -2.0 }
frequencies = { min = 1.0e10, max = 5.0e10, count = 4 }

[[monitor]]
type = "probe"
name = "a"
position = [2.0, 1.0, 1.0]
components = ["Ez", "Hy"]

[[monitor]]
type = "probe"
name = "b"
position = [-6.0, 3.0, -2.0]
components = ["Ex", "Hz", "Ey"]

[[monitor]]
type = "snapshot"
name = "ez"
components = ["Ez", "Hx"]
plane = { z = 0.0 }
every = 4

[[monitor]]
type = "snapshot"
name = "box"
components = ["Ey"]
box = { center = [0.0, 0.0, 0.0], size = [16.0, 10.0, 8.0] }
every = 6
stride = 2
"#;

/// Everything a run produced: probe series (per sample), snapshot frames, flux spectra,
/// final fields.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// probes[sample][step]
    pub probes: Vec<Vec<f64>>,
    /// snapshot values in order of capture, per (snapshot, component)
    pub snapshots: Vec<Vec<f64>>,
    /// each flux monitor's spectrum at the end
    pub flux: Vec<Vec<f64>>,
    /// the six components over the whole grid
    pub fields: Vec<Vec<f64>>,
}

/// A Bloch cell with phases on x, y and z (the x images through the halo copies, y and z
/// through the curl's wrap), a Drude sphere (the dispersive pass) and a magnetic block (the
/// H factor of the material), a dipole, a probe and a flux plane.
pub const BLOCH_SCENE: &str = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [0.6, 0.6, 0.7]
steps = STEPS
precision = "PRECISION"
[boundaries]
x_min = { type = "bloch", phase = 0.3 }
y_min = { type = "bloch", phase = -0.2 }
z_min = { type = "bloch", phase = 0.45 }
[materials]
metal = { conformal = false, epsilon = 2.0, drude = [{ frequency = 5.0e14, damping = 2.0e13 }] }
ferrite = { epsilon = 3.0, mu = 2.0 }
[[geometry]]
shape = "sphere"
material = "metal"
center = [0.15, 0.0, 0.0]
radius = 0.12
[[geometry]]
shape = "box"
material = "ferrite"
center = [-0.15, 0.1, -0.2]
size = [0.15, 0.2, 0.15]
[[source]]
type = "dipole"
component = "Ez"
position = [0.06, -0.11, 0.13]
waveform = { type = "gaussian", frequency = 2.0e14, bandwidth = 3.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [-0.14, 0.17, -0.08]
components = ["Ez", "Hy"]
[[monitor]]
type = "flux"
name = "f"
plane = { z = 0.2 }
frequencies = { min = 1.0e14, max = 3.0e14, count = 5 }
"#;

/// How the driver reads monitors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// `sample` and `gather` right after the step.
    Immediate,
    /// Queued after the step; snapshots taken after the next step's update, probe rows
    /// drained without waiting every 5 steps and with waiting at the end.
    Queued,
}

/// The region of the whole grid.
pub fn whole(model: &Model) -> Region {
    Region {
        start: [0; 3],
        end: model.grid.shape,
        stride: [1; 3],
    }
}

/// Step `b` (holding `model` split as `ranges`) through all the model's steps as the time
/// loop does, reading probes and snapshots at once.
pub fn drive<B: Backend>(model: &Model, b: &mut B, ranges: &[SlabRange]) -> Trace {
    drive_with(model, b, ranges, Reads::Immediate)
}

/// Step `b` through all the model's steps, recording every probe sample each step, every
/// snapshot when due and the flux DFTs, read as `reads` says.
pub fn drive_with<B: Backend>(
    model: &Model,
    b: &mut B,
    ranges: &[SlabRange],
    reads: Reads,
) -> Trace {
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
    let mut rows = Vec::new();
    let mut drain = |b: &mut B, trace: &mut Trace, wait: bool| {
        rows.clear();
        b.drain_probes(&mut rows, wait);
        for row in rows.chunks_exact(samples.len().max(1)) {
            for (k, v) in row.iter().enumerate() {
                trace.probes[k].push(*v);
            }
        }
    };
    // Queued gathers: (trace slot, ticket), taken after the next step's update.
    let mut pending: Vec<(usize, GatherTicket)> = Vec::new();
    let take = |b: &mut B, trace: &mut Trace, pending: &mut Vec<(usize, GatherTicket)>| {
        for (slot, ticket) in pending.drain(..) {
            let values = b.take_gather(ticket).expect("no device failure");
            trace.snapshots[slot].extend(values.iter().map(|v: &B::Real| v.to_f64()));
        }
    };
    let mut j = Vec::new();
    let mut m = Vec::new();
    for n in 0..model.grid.steps {
        magnetic_source_values(model, n as f64 * model.grid.dt, &mut m);
        source_values(model, (n as f64 + 0.5) * model.grid.dt, &mut j);
        b.update_h(&m);
        b.exchange(&halos.after_h);
        b.update_e(&j);
        b.exchange(&halos.after_e);
        take(b, &mut trace, &mut pending);
        let step = n + 1;
        match reads {
            Reads::Immediate => {
                for (k, &(c, idx)) in samples.iter().enumerate() {
                    trace.probes[k].push(b.sample(c, idx));
                }
            }
            Reads::Queued if !samples.is_empty() => {
                b.queue_probes(&samples);
                if step % 5 == 0 {
                    drain(b, &mut trace, false);
                }
            }
            Reads::Queued => {}
        }
        let mut slot = 0;
        for s in &model.snapshots {
            for (c, region) in &s.regions {
                if step % s.every == 0 {
                    match reads {
                        Reads::Immediate => {
                            let mut out = vec![B::Real::ZERO; region.len()];
                            b.gather(*c, region, &mut out);
                            trace.snapshots[slot].extend(out.iter().map(|v| v.to_f64()));
                        }
                        Reads::Queued => pending.push((slot, b.queue_gather(*c, region))),
                    }
                }
                slot += 1;
            }
        }
        if !model.fluxes.is_empty() {
            b.accumulate_flux(step, model.grid.dt);
        }
    }
    take(b, &mut trace, &mut pending);
    if reads == Reads::Queued && !samples.is_empty() {
        drain(b, &mut trace, true);
    }
    assert!(b.all_finite(), "fields stayed finite");
    assert_eq!(b.failure(), None);
    trace.flux = (0..model.fluxes.len())
        .map(|i| b.flux_dft(i).expect("a flux spectrum").power())
        .collect();
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
    for (k, w) in want.probes.iter().enumerate() {
        assert_eq!(
            got.probes[k].len(),
            w.len(),
            "{what}: probe sample {k} has one value per step"
        );
    }
    assert_eq!(got.flux.len(), want.flux.len());
    for (k, (g, w)) in got.flux.iter().zip(&want.flux).enumerate() {
        assert!(
            max_abs(w) > 0.0,
            "{what}: flux {k} is zero in the reference"
        );
        let d = rel_diff(g, w);
        assert!(
            d <= tol,
            "{what}: flux spectrum {k} differs by {d:e} (tolerance {tol:e})"
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

/// The first index where `got` and `want` differ in any bit (so -0.0 and 0.0 differ too), with
/// both values; `None` if they are the same series.
fn first_bit_difference(got: &[f64], want: &[f64]) -> Option<(usize, f64, f64)> {
    if got.len() != want.len() {
        return Some((got.len().min(want.len()), f64::NAN, f64::NAN));
    }
    got.iter()
        .zip(want)
        .position(|(a, b)| a.to_bits() != b.to_bits())
        .map(|i| (i, got[i], want[i]))
}

/// Assert that `got` is `want` bit for bit: every final field value, probe sample, snapshot
/// value and flux spectrum. The host-compiled kernels do the CPU backend's arithmetic in the
/// same order with the same rounding (no fused multiply-add, `-ffp-contract=off`), and the
/// flux DFT weights come from the same libm `sin`/`cos`, so nothing may differ at all; a
/// tolerance would hide a wrong coefficient in the last bits of a field that is small where
/// it is wrong. As [`assert_close`], the reference must not be trivially zero.
pub fn assert_identical(got: &Trace, want: &Trace, what: &str) {
    let check = |kind: &str, k: usize, g: &[f64], w: &[f64]| {
        if let Some((i, a, b)) = first_bit_difference(g, w) {
            panic!(
                "{what}: {kind} {k} differs first at value {i} of {}: {a:e} (got) vs {b:e} \
                 (want), largest relative difference {:e}",
                w.len(),
                if g.len() == w.len() {
                    rel_diff(g, w)
                } else {
                    f64::NAN
                }
            );
        }
    };
    assert_eq!(
        got.fields.len(),
        want.fields.len(),
        "{what}: six components"
    );
    for (c, (g, w)) in got.fields.iter().zip(&want.fields).enumerate() {
        assert!(
            max_abs(w) > 0.0,
            "{what}: component {} is all zero in the reference: the scene tests nothing",
            Component::ALL[c].name()
        );
        check(Component::ALL[c].name(), c, g, w);
    }
    assert_eq!(got.probes.len(), want.probes.len(), "{what}: probe samples");
    for (k, (g, w)) in got.probes.iter().zip(&want.probes).enumerate() {
        check("probe sample", k, g, w);
    }
    assert_eq!(got.flux.len(), want.flux.len(), "{what}: flux monitors");
    for (k, (g, w)) in got.flux.iter().zip(&want.flux).enumerate() {
        assert!(
            max_abs(w) > 0.0,
            "{what}: flux {k} is zero in the reference"
        );
        check("flux spectrum", k, g, w);
    }
    assert_eq!(got.snapshots.len(), want.snapshots.len());
    for (k, (g, w)) in got.snapshots.iter().zip(&want.snapshots).enumerate() {
        assert!(!w.is_empty(), "{what}: snapshot {k} was never taken");
        check("snapshot", k, g, w);
    }
}

/// Tolerance of a comparison: 1e-6 in f32, 1e-12 in f64 (relative to the largest magnitude).
pub fn tolerance<T: Real>() -> f64 {
    match T::PRECISION {
        yee::model::Precision::F32 => 1e-6,
        yee::model::Precision::F64 => 1e-12,
    }
}

/// Every dataset in `group` and the groups below it (a snapshot's `coordinates/<component>`)
/// as f64, keyed by its path under `prefix`.
fn datasets_below(
    group: &hdf5::Group,
    prefix: &str,
    out: &mut std::collections::BTreeMap<String, Vec<f64>>,
) {
    for name in group.member_names().unwrap() {
        let path = format!("{prefix}/{name}");
        if let Ok(ds) = group.dataset(&name) {
            out.insert(path, ds.read_raw().unwrap());
        } else if let Ok(g) = group.group(&name) {
            datasets_below(&g, &path, out);
        }
    }
}

/// Two result files' contents ([`h5_contents`]) that must agree bit for bit: the same
/// datasets, none empty, with the same values; `what` names the runs in a failure.
pub fn assert_same_contents(
    got: &std::collections::BTreeMap<String, Vec<f64>>,
    want: &std::collections::BTreeMap<String, Vec<f64>>,
    what: &str,
) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: datasets"
    );
    for (k, w) in want {
        assert!(!w.is_empty(), "{k} is empty");
        assert_eq!(&got[k], w, "{what}: {k} differs");
    }
}

/// Every dataset of a result file as f64 (probes, snapshots, flux), and the attributes the
/// run sets at the end.
pub fn h5_contents(path: &std::path::Path) -> std::collections::BTreeMap<String, Vec<f64>> {
    let f = hdf5::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = std::collections::BTreeMap::new();
    for top in ["probes", "snapshots", "flux"] {
        let Ok(g) = f.group(top) else { continue };
        for name in g.member_names().unwrap() {
            let sub = g.group(&name).unwrap();
            datasets_below(&sub, &format!("{top}/{name}"), &mut out);
            if top == "flux" {
                let n: u64 = sub
                    .attr("steps_accumulated")
                    .unwrap()
                    .read_scalar()
                    .unwrap();
                out.insert(format!("{top}/{name}@steps_accumulated"), vec![n as f64]);
            }
        }
    }
    let done: u64 = f.attr("steps_done").unwrap().read_scalar().unwrap();
    let complete: bool = f.attr("complete").unwrap().read_scalar().unwrap();
    out.insert("@steps_done".into(), vec![done as f64]);
    out.insert("@complete".into(), vec![complete as u8 as f64]);
    out
}

/// Dispersive and magnetic materials with PML on five faces and a PEC z minimum: a Drude +
/// Lorentz metal sphere and a Debye water box, each across the 3-slab split's boundary planes
/// (x = -4 and x = 4), the water box on the PEC face (whose tangential E cells the dispersive
/// pass leaves out); a lossy ferrite (mu = 4, magnetic conductivity) reaching into the x max
/// and y min CPML layers, so the H CPML correction takes its dt/mu. The pole rates are well
/// inside what dt (about 1.9 ps) resolves: 2 pi f dt = 0.36 (Drude), 0.18 (Lorentz), dt/tau
/// = 0.2 (Debye).
pub const MATERIALS_SCENE: &str = r#"
[simulation]
name = "materials"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 20.0, 18.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "pml", cells = 4 }
z_min = { type = "pec" }

[materials]
metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }], lorentz = [{ delta_epsilon = 1.0, frequency = 1.5e10, damping = 2.0e9 }] }
water = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }
ferrite = { epsilon = 2.0, mu = 4.0, magnetic_conductivity = 1.0e4 }

[[geometry]]
shape = "sphere"
material = "metal"
center = [2.0, 4.0, 1.0]
radius = 3.0

[[geometry]]
shape = "box"
material = "water"
center = [-4.0, -1.0, -5.0]
size = [6.0, 6.0, 8.0]

[[geometry]]
shape = "box"
material = "ferrite"
center = [8.0, -6.0, 2.0]
size = [8.0, 8.0, 6.0]

# A water ball: a curved dispersive surface, smoothed by series mixtures (the dispersive
# kernel's series branch).
[[geometry]]
shape = "sphere"
material = "water"
center = [-5.0, 5.0, 4.0]
radius = 2.6

# A ferrite column through every z: its rows are one material end to end, so they take the
# update's one-coefficient row path with the lossy H's ca != 1 (the box above gives per-cell
# rows only).
[[geometry]]
shape = "box"
material = "ferrite"
center = [-7.0, 6.0, 0.0]
size = [3.0, 3.0, 40.0]

[[source]]
type = "dipole"
component = "Ez"
position = [0.0, -1.0, 1.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[source]]
type = "dipole"
component = "Ex"
position = [3.0, -4.0, 2.0]
waveform = { type = "ricker", frequency = 2.5e10 }

[[monitor]]
type = "probe"
name = "inside"
position = [-4.0, -1.0, -4.0]
components = ["Ez", "Ex", "Hy"]

[[monitor]]
type = "probe"
name = "ferrite"
position = [9.0, -7.0, 2.0]
components = ["Ex", "Hz"]

[[monitor]]
type = "snapshot"
name = "s"
components = ["Ez", "Hx"]
plane = { z = 1.0 }
every = 9
"#;

/// A one-way plane wave along x: its electric and magnetic sheets lie on x planes, so the
/// sweep applies them on their planes only; the cuts put a slab face between the sheets.
pub const X_PLANE_WAVE: &str = r#"
[simulation]
name = "xwave"
length_unit = "mm"
cell_size = 1.0
size = [30.0, 8.0, 6.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "periodic" }
x_min = { type = "pml", cells = 6 }
x_max = { type = "pml", cells = 6 }

[materials]
glass = { epsilon = 3.0, conductivity = 0.05 }

[[geometry]]
shape = "box"
material = "glass"
center = [6.0, 0.0, 0.0]
size = [6.0, 8.0, 6.0]

[[source]]
type = "plane_wave"
direction = "+x"
polarization = "Ey"
position = -6.0
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[monitor]]
type = "probe"
name = "t"
position = [10.0, 0.0, 0.0]
components = ["Ey", "Hz"]
"#;

/// A TF/SF box crossing the slab boundaries of a 3-slab split (x nodes 6..18 of 24), with a
/// Drude-Lorentz sphere and a lossy magnetic box inside it (the dispersive pass and the H
/// material coefficients at work inside the total-field region), PML around and a PEC z_min
/// wall. DIRECTION and POLARIZATION are filled in per case.
pub const TFSF_SCENE: &str = r#"
[simulation]
name = "tfsf"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 20.0, 18.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "pml", cells = 4 }
z_min = { type = "pec" }

[materials]
metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }], lorentz = [{ delta_epsilon = 1.0, frequency = 1.5e10, damping = 2.0e9 }] }
ferrite = { epsilon = 2.0, mu = 4.0, magnetic_conductivity = 1.0e4 }

[[geometry]]
shape = "sphere"
material = "metal"
center = [1.0, 1.0, 0.0]
radius = 2.5

[[geometry]]
shape = "box"
material = "ferrite"
center = [-3.0, -2.0, 0.0]
size = [3.0, 3.0, 3.0]

[[source]]
type = "tfsf"
box = { center = [0.0, 0.0, 0.0], size = [12.0, 10.0, 8.0] }
direction = DIRECTION
polarization = POLARIZATION
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }
amplitude = 1.5

[[monitor]]
type = "probe"
name = "scattered"
position = [0.0, 0.0, 6.0]
components = ["Ex", "Ey", "Hz"]
"#;

/// A PEC cylinder cavity with conformal walls (Dey-Mittra cut faces, the conformal PEC pass):
/// a vacuum cylinder of radius 10 mm along z, its axis off the grid lines, cut out of a PEC
/// block that fills the domain, the caps being the domain's PEC z faces; rung by an Ez dipole
/// off the axis. Uniform 1 mm cells, 24 x 24 x 10.
pub const CONFORMAL_SCENE: &str = r#"
[simulation]
name = "conformal"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 24.0, 10.0]
steps = STEPS
precision = "PRECISION"

[boundaries]
default = { type = "pec" }

[materials]
metal = { pec = true }

[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [30.0, 30.0, 30.0]

[[geometry]]
shape = "cylinder"
material = "vacuum"
center = [0.37, 0.21, 0.0]
radius = 10.0
height = 20.0
axis = [0.0, 0.0, 1.0]

[[source]]
type = "dipole"
component = "Ez"
position = [1.67, 0.91, 0.3]
waveform = { type = "gaussian", frequency = 1.15e10, bandwidth = 1.0e10 }

[[monitor]]
type = "probe"
name = "p"
position = [-0.23, 0.61, -0.2]
components = ["Ez", "Hx", "Hy"]
"#;

/// Lumped circuits (`src/model/lumped.rs`, `kernels/lumped.cu`): a closed PEC box (10 mm, 0.5
/// mm cells) with a PEC wire up its axis between two one-cell gaps, a 50 ohm port `feed` in the
/// lower one and a series RLC `rlc` in the upper (both on x plane 10), and a parallel RLC
/// `shunt` of 3 x 3 x 2 edges on x planes 13 to 15 (the scene of `tests/lumped.rs`, the shunt
/// made three planes thick, so that a slab cut splits its box, its last plane in a glass block,
/// so that its coefficient rows differ from plane to plane, and given an inductance, so that
/// the parallel update's inductor current is not zero); a probe in the upper gap and a
/// snapshot plane last.
pub const LUMPED_SCENE: &str = r#"
[simulation]
name = "rlc"
length_unit = "mm"
cell_size = 0.5
size = [10.0, 10.0, 10.0]
steps = STEPS
precision = "PRECISION"

[boundaries]
default = { type = "pec" }

[materials]
glass = { epsilon = 4.0 }

[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, 0.0]
size = [0.0, 0.0, 9.0]

[[geometry]]
shape = "box"
material = "glass"
center = [3.5, 0.0, 0.0]
size = [2.5, 10.0, 10.0]

[[geometry]]
shape = "box"
center = [0.0, 0.0, 4.75]
size = [0.0, 0.0, 0.5]
element = { resistance = 50.0, inductance = 1.0e-7, capacitance = 1.0e-12, direction = "z", topology = "series", name = "rlc" }

[[geometry]]
shape = "box"
center = [2.0, 0.0, 0.0]
size = [1.0, 1.0, 1.0]
element = { resistance = 20.0, inductance = 1.0e-8, capacitance = 1.0e-12, topology = "parallel", direction = "z", name = "shunt" }

[[source]]
type = "lumped_port"
name = "feed"
box = { center = [0.0, 0.0, -4.75], size = [0.0, 0.0, 0.5] }
direction = "+z"
impedance = 50.0
waveform = { type = "gaussian", frequency = 5.0e8, bandwidth = 8.0e8 }
frequencies = { min = 3.0e8, max = 8.0e8, count = 11 }

[[monitor]]
type = "probe"
name = "gap"
position = [0.0, 0.0, 4.75]
components = ["Ez", "Hx"]

[[monitor]]
type = "snapshot"
name = "ez"
components = ["Ez"]
plane = { y = 0.0 }
every = 50
"#;

/// [`LUMPED_SCENE`] with its lumped terminals' probes listed as plain probes after the scene's
/// own: the samples the time loop reads every step (`Model::every_probe`, the CUDA engine's
/// probe ring) in the same order, for the test driver, which reads `Model::probes`. The
/// backends do not see terminals otherwise.
pub fn lumped_model(precision: &str, steps: usize) -> Model {
    let mut m = model(LUMPED_SCENE, precision, steps);
    let terminals = std::mem::take(&mut m.terminals);
    assert_eq!(terminals.len(), 3, "the port and two elements");
    m.probes.extend(terminals.into_iter().map(|t| t.probe));
    m
}
