//! Allocation equals plan: what the CPU backend allocates, category by category and byte for
//! byte, is what the planner lists for the same slab split; and a whole run reports the plan's
//! allocation (slabs plus the monitor buffers). The monitor buffers are counted from the
//! backend's own vectors after a run of the time loop (snapshots gathered, flux DFTs
//! accumulated), not from the planner's formula; the scenes have probes, plane, box and
//! volume snapshots and flux planes along every axis. And the CPU engine's allocations are
//! paged in when it is built, not by its first step.

mod common;

use common::*;
use yee::backend::cpu::{CpuBackend, MonitorBuffers};
use yee::backend::{Allocation, Backend};
use yee::decomp::{split_even, SlabRange};
use yee::model::{Model, Precision};
use yee::plan::{self, Hardware, PlanBackend, PlanOptions};
use yee::run::{BackendChoice, Observer, RunInfo, RunOptions};

fn scene(precision: &str, boundaries: &str, monitors: &str) -> String {
    format!(
        r#"
[simulation]
name = "alloc"
length_unit = "um"
cell_size = [0.05, 0.04, 0.05]
size = [1.5, 1.0, 1.2]
steps = 6
precision = "{precision}"
[boundaries]
{boundaries}
[materials]
glass = {{ epsilon = 2.25 }}
[[geometry]]
shape = "box"
material = "glass"
center = [0.1, 0.0, -0.2]
size = [0.6, 0.5, 0.3]
[[source]]
type = "dipole"
component = "Ez"
position = [0.02, 0.03, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }}
{monitors}
"#
    )
}

const SNAPSHOTS: &str = r#"
[[monitor]]
type = "probe"
name = "p"
position = [0.3, -0.1, 0.05]
components = ["Ex", "Hz"]
[[monitor]]
type = "snapshot"
name = "xy"
components = ["Ez", "Hx"]
plane = { z = 0.0 }
every = 2
[[monitor]]
type = "snapshot"
name = "cube"
components = ["Ex"]
box = { center = [0.0, 0.0, 0.0], size = [0.6, 0.4, 0.4] }
every = 3
[[monitor]]
type = "snapshot"
name = "volume"
components = ["Ey"]
every = 5
stride = 2
"#;

const FLUXES: &str = r#"
[[monitor]]
type = "flux"
name = "fx"
plane = { x = 0.3 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 5 }
[[monitor]]
type = "flux"
name = "fy"
plane = { y = -0.2 }
frequencies = { min = 2.5e14, max = 3.5e14, count = 2 }
[[monitor]]
type = "flux"
name = "fz"
plane = { z = 0.1 }
frequencies = { min = 1.0e14, max = 5.0e14, count = 9 }
"#;

/// The scene of [`scene`] with dispersive and magnetic materials instead of the glass box: a
/// Drude + Lorentz metal box across the x PML's inner edge, a Debye water sphere and a lossy
/// ferrite box reaching into the y max layer, so the plan counts dispersive cells in some
/// slabs and not others and H material ids everywhere. Pole rates against dt (about 8.8e-17
/// s): 2 pi f dt = 0.55 (Drude), 0.33 (Lorentz); dt / tau ~ 1e-5 (Debye); all resolved.
fn materials_scene(precision: &str, monitors: &str) -> String {
    format!(
        r#"
[simulation]
name = "alloc-materials"
length_unit = "um"
cell_size = [0.05, 0.04, 0.05]
size = [1.5, 1.0, 1.2]
steps = 6
precision = "{precision}"
[boundaries]
default = {{ type = "pml", cells = 5 }}
z_min = {{ type = "pec" }}
[materials]
metal = {{ epsilon = 1.0, drude = [{{ frequency = 1.0e15, damping = 1.0e13 }}], lorentz = [{{ delta_epsilon = 1.0, frequency = 6.0e14, damping = 5.0e13 }}] }}
water = {{ epsilon = 4.9, debye = [{{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }}] }}
ferrite = {{ epsilon = 2.0, mu = 4.0, magnetic_conductivity = 100.0 }}
[[geometry]]
shape = "box"
material = "metal"
center = [-0.45, 0.0, -0.1]
size = [0.3, 0.4, 0.5]
[[geometry]]
shape = "sphere"
material = "water"
center = [0.2, -0.1, 0.1]
radius = 0.2
[[geometry]]
shape = "box"
material = "ferrite"
center = [0.3, 0.35, -0.3]
size = [0.4, 0.3, 0.6]
[[source]]
type = "dipole"
component = "Ez"
position = [0.02, 0.03, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }}
{monitors}
"#
    )
}

/// [`materials_scene`] with its metal a sphere: a curved metal surface, so surface ports.
fn metal_sphere_scene(precision: &str) -> String {
    materials_scene(precision, "").replace(
        r#"shape = "box"
material = "metal"
center = [-0.45, 0.0, -0.1]
size = [0.3, 0.4, 0.5]"#,
        r#"shape = "sphere"
material = "metal"
center = [-0.4, 0.02, -0.1]
radius = 0.22"#,
    )
}

/// A closed flux box and a far-field box (six face patches each, across the slabs along x).
const BOXES: &str = r#"
[[monitor]]
type = "flux"
name = "box"
box = { center = [0.0, 0.0, 0.0], size = [0.5, 0.3, 0.3] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 4 }
fields = true
[[monitor]]
type = "far_field"
name = "ff"
box = { center = [0.1, 0.0, 0.0], size = [0.4, 0.36, 0.4] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
theta = { min = 0.0, max = 180.0, count = 7 }
phi = { min = 0.0, max = 360.0, count = 9 }
"#;

/// [`scene`] with its dipole replaced by a TF/SF box (x nodes 9..21 of 30, so some slabs of
/// every split hold correction points and the 1-D grid and others hold none).
fn tfsf_scene(precision: &str, boundaries: &str, monitors: &str, direction: &str) -> String {
    scene(precision, boundaries, monitors).replace(
        r#"type = "dipole"
component = "Ez"
position = [0.02, 0.03, 0.0]"#,
        &format!(
            r#"type = "tfsf"
box = {{ center = [0.0, 0.0, 0.0], size = [0.6, 0.36, 0.4] }}
direction = {direction}
polarization = [0.0, 0.0, 1.0]"#
        ),
    )
}

/// Scenes covering PML on all faces, uneven PML, periodic and PEC x faces, snapshots, flux
/// planes, flux and far-field boxes, both and none, f32 and f64, and dispersive and magnetic
/// materials, and TF/SF boxes.
/// A PEC sphere inside the PML: its surface's cut faces are the conformal pass's tables.
const PEC_SPHERE: &str = r#"
[[geometry]]
shape = "sphere"
material = "pec"
center = [-0.25, 0.05, 0.1]
radius = 0.15
"#;

fn scenes() -> Vec<(&'static str, Model)> {
    let pml = r#"default = { type = "pml", cells = 6 }"#;
    let uneven = r#"default = { type = "pml", cells = 4 }
x_min = { type = "pml", cells = 3 }
x_max = { type = "pml", cells = 7 }
y_max = { type = "pec" }"#;
    let periodic = r#"default = { type = "pml", cells = 5 }
x_min = { type = "periodic" }
x_max = { type = "periodic" }"#;
    let pec = r#"default = { type = "pec" }"#;
    vec![
        ("pml f32 snapshots", model(&scene("f32", pml, SNAPSHOTS))),
        ("pml f64 snapshots", model(&scene("f64", pml, SNAPSHOTS))),
        ("uneven pml f32", model(&scene("f32", uneven, SNAPSHOTS))),
        ("periodic x f64", model(&scene("f64", periodic, ""))),
        ("pec f32 no monitors", model(&scene("f32", pec, ""))),
        (
            "pml f64 snapshots and fluxes",
            model(&scene("f64", pml, &format!("{SNAPSHOTS}{FLUXES}"))),
        ),
        (
            "periodic x f32 fluxes",
            model(&scene("f32", periodic, FLUXES)),
        ),
        (
            "dispersive and magnetic f32 snapshots",
            model(&materials_scene("f32", SNAPSHOTS)),
        ),
        (
            "dispersive and magnetic f64 fluxes",
            model(&materials_scene("f64", FLUXES)),
        ),
        ("pml f64 boxes", model(&scene("f64", pml, BOXES))),
        (
            "uneven pml f32 planes and boxes",
            model(&scene("f32", uneven, &format!("{FLUXES}{BOXES}"))),
        ),
        (
            "tfsf axial f32 snapshots",
            model(&tfsf_scene("f32", pml, SNAPSHOTS, "\"+x\"")),
        ),
        (
            "tfsf oblique f64 uneven pml",
            model(&tfsf_scene("f64", uneven, "", "[1.0, 2.0, 0.0]")),
        ),
        (
            "conformal pec f32 snapshots",
            model(&scene("f32", pml, &format!("{SNAPSHOTS}{PEC_SPHERE}"))),
        ),
        (
            "conformal pec f64 uneven pml",
            model(&scene("f64", uneven, PEC_SPHERE)),
        ),
        ("metal sphere f32", model(&metal_sphere_scene("f32"))),
        ("metal sphere f64", model(&metal_sphere_scene("f64"))),
    ]
}

/// The TF/SF scenes have a TF/SF source, and the plan's `sources` bytes lie on the slabs
/// that hold its box and not on the others.
#[test]
fn tfsf_scenes_count_their_points_and_1d_grid_on_the_slabs_of_the_box() {
    for (name, m) in scenes().into_iter().filter(|(n, _)| n.starts_with("tfsf")) {
        let t = m.tfsf.as_ref().expect("a tfsf source");
        let ranges = split_even(m.grid.shape[0], 5);
        let bytes: Vec<u64> = ranges
            .iter()
            .map(|r| plan::slab_bytes(&m, *r, m.precision).sources)
            .collect();
        assert!(bytes[0] == 0 && bytes[4] == 0, "{name}: {bytes:?}");
        let p = m.precision.bytes() as u64;
        // At least the 1-D grid (e and h per node) on each slab inside the box.
        assert!(
            bytes[1..4].iter().all(|&b| b > 2 * t.nodes as u64 * p),
            "{name}: {bytes:?}"
        );
    }
}

/// The materials scenes are what they are meant to be: poles and mu in the model, and the
/// plan's dispersive and H-id bytes there, on some slabs and not on others (so a formula that
/// spread them evenly, or forgot them, would fail the comparisons of this file). The water
/// sphere ends 0.05 um (a cell) short of the last slab: its smoothed surface cells, which carry
/// poles too, stay out of it.
#[test]
fn materials_scenes_have_dispersive_cells_and_h_ids() {
    for precision in ["f32", "f64"] {
        let m = model(&materials_scene(precision, ""));
        assert!(m.materials.any_dispersive() && m.materials.any_magnetic());
        let p = if precision == "f32" {
            Precision::F32
        } else {
            Precision::F64
        };
        let ranges = split_even(m.grid.shape[0], 5);
        let bytes: Vec<Allocation> = ranges.iter().map(|r| plan::slab_bytes(&m, *r, p)).collect();
        assert!(bytes.iter().any(|b| b.dispersive > 0));
        assert!(bytes.iter().any(|b| b.dispersive == 0));
        // The same slab without the ferrite: half the material bytes.
        let plain = model(&materials_scene(precision, "").replace(
            "mu = 4.0, magnetic_conductivity = 100.0",
            "conductivity = 0.0",
        ));
        assert!(!plain.materials.any_magnetic());
        let half = plan::slab_bytes(&plain, ranges[0], p);
        assert_eq!(bytes[0].materials, 2 * half.materials);
    }
}

/// The metal sphere's scenes hold surface ports, which the plan counts (so the allocation
/// tests compare them).
#[test]
fn metal_sphere_scenes_have_surface_ports_in_the_plan() {
    let m = model(&metal_sphere_scene("f32"));
    let ports = m.surface_ports();
    assert!(ports.surface_edges > 100, "{}", ports.surface_edges);
    let layout = plan::Layout::of(&m);
    let whole = SlabRange {
        x0: 0,
        x1: m.grid.shape[0],
    };
    assert!(layout.port_bytes(whole) > 0);
}

fn splits(nx: usize) -> Vec<Vec<SlabRange>> {
    vec![
        split_even(nx, 1),
        split_even(nx, 3),
        split_even(nx, 5),
        // Uneven, with slabs that start and end inside the x PML layers.
        vec![
            SlabRange { x0: 0, x1: 2 },
            SlabRange { x0: 2, x1: 9 },
            SlabRange { x0: 9, x1: nx - 4 },
            SlabRange { x0: nx - 4, x1: nx },
        ],
    ]
}

fn backend_allocation(model: &Model, ranges: &[SlabRange], precision: Precision) -> Allocation {
    match precision {
        Precision::F32 => CpuBackend::<f32>::new(model, ranges).allocation(),
        Precision::F64 => CpuBackend::<f64>::new(model, ranges).allocation(),
    }
}

#[test]
fn cpu_backend_allocates_exactly_what_slab_bytes_says() {
    for (name, m) in scenes() {
        for ranges in splits(m.grid.shape[0]) {
            // Both precisions on every scene: the plan's formula takes the precision.
            for precision in [Precision::F32, Precision::F64] {
                let got = backend_allocation(&m, &ranges, precision);
                let mut want = Allocation::default();
                for r in &ranges {
                    want.add(&plan::slab_bytes(&m, *r, precision));
                }
                assert_eq!(
                    got,
                    want,
                    "{name}, {} slabs, {}",
                    ranges.len(),
                    precision.name()
                );
            }
        }
    }
}

#[test]
fn cpu_plan_lists_the_backend_allocation_category_by_category() {
    for (name, m) in scenes() {
        let nx = m.grid.shape[0];
        for slabs in [1, 2, 4, 7] {
            let hw = Hardware::new(Vec::new(), 64 << 30, 2);
            let options = PlanOptions {
                backend: BackendChoice::Cpu,
                slabs: Some(slabs),
                ..Default::default()
            };
            let p = plan::plan(&m, &hw, &options);
            assert_eq!(p.backend, PlanBackend::Cpu, "{name}");
            assert!(p.fits);
            assert_eq!(
                p.ranges(),
                split_even(nx, slabs),
                "{name}: the CPU plan uses the run's split"
            );
            let got = backend_allocation(&m, &p.ranges(), m.precision);
            assert_eq!(p.bytes.fields, got.fields, "{name} fields");
            assert_eq!(p.bytes.halos, got.halos, "{name} halos");
            assert_eq!(p.bytes.materials, got.materials, "{name} materials");
            assert_eq!(p.bytes.pml, got.pml, "{name} pml");
            assert_eq!(got.monitors, 0, "{name}: no monitor buffers in the slabs");
            assert_eq!(
                p.bytes.overhead, 0,
                "{name}: no per-device overhead on the CPU"
            );
            // The monitor buffers exist once the run gathers: they are counted from the
            // backend's vectors in cpu_monitor_buffers_after_a_run_are_what_the_plan_lists.
            let mut total = got;
            total.monitors = p.bytes.monitors;
            assert_eq!(p.allocation(), total, "{name}");
            // The plan's total counts every category of the slabs, the dispersive arrays too.
            assert_eq!(
                p.bytes.total,
                total.total() + p.bytes.probe_series,
                "{name} total (dispersive bytes of the slabs: {})",
                got.dispersive
            );
            for s in &p.slabs {
                assert_eq!(s.bytes, s.allocation.total());
            }
        }
    }
}

#[test]
fn staging_is_the_largest_snapshot_region() {
    let m = model(&scene(
        "f32",
        r#"default = { type = "pml", cells = 6 }"#,
        SNAPSHOTS,
    ));
    let [nx, ny, nz] = m.grid.shape;
    let volume = nx.div_ceil(2) * ny.div_ceil(2) * nz.div_ceil(2);
    let largest = m
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter().map(|(_, r)| r.len()))
        .max()
        .unwrap();
    assert_eq!(plan::monitor_staging_len(&m), largest);
    assert!(largest >= volume.min(nx * ny));
    assert_eq!(
        plan::monitor_staging_bytes(&m, Precision::F64),
        8 * largest as u64
    );
    let none = model(&scene("f32", r#"default = { type = "pec" }"#, ""));
    assert_eq!(plan::monitor_staging_len(&none), 0);
}

struct Record(Option<RunInfo>, Vec<String>);
impl Observer for Record {
    fn start(&mut self, info: &RunInfo) {
        self.0 = Some(info.clone());
    }
    fn message(&mut self, m: &str) {
        self.1.push(m.to_string());
    }
}

#[test]
fn a_run_allocates_what_its_plan_lists_and_says_why() {
    let dir = std::env::temp_dir().join(format!("yee-plan-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (name, m)) in scenes().into_iter().enumerate() {
        let mut opts = RunOptions::new(dir.join(format!("run{i}.h5")));
        opts.backend = BackendChoice::Cpu;
        opts.slabs = Some(3);
        opts.threads = Some(2);
        let mut rec = Record(None, Vec::new());
        yee::run::run(&m, &opts, &mut rec).unwrap_or_else(|e| panic!("{name}: {e}"));
        let info = rec.0.expect("the run started");
        let hw = Hardware::detect(Some(Vec::new()), None);
        let p = plan::plan(
            &m,
            &hw,
            &PlanOptions {
                backend: BackendChoice::Cpu,
                slabs: Some(3),
                threads: Some(2),
                ..Default::default()
            },
        );
        assert_eq!(info.slabs, p.ranges(), "{name}");
        assert_eq!(
            info.allocation,
            p.allocation(),
            "{name}: the run allocates what the plan lists"
        );
        // The host figure moves between two reads of /proc/meminfo: compare the sentence's start.
        let said = rec
            .1
            .first()
            .expect("the run prints the plan's reason first");
        assert!(
            said.starts_with("The CPU backend was requested (--backend cpu); it needs"),
            "{name}: {said}"
        );
        assert!(
            p.reason
                .starts_with("The CPU backend was requested (--backend cpu); it needs"),
            "{name}: {}",
            p.reason
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cuda_engine_allocates_exactly_what_gpu_slab_bytes_says() {
    // The CUDA engine's own count of its device arrays (computed from the lengths it allocates)
    // must equal the planner's GPU formula, category by category, for every split.
    for (name, m) in scenes() {
        for ranges in splits(m.grid.shape[0]) {
            for precision in [Precision::F32, Precision::F64] {
                let engine = yee::backend::cuda::engine::estimate(&m, &ranges, precision.bytes());
                let layout = plan::Layout::of(&m).with_precision(precision);
                let mut planned = Allocation::default();
                for r in &ranges {
                    planned.add(&layout.gpu_slab_bytes(*r));
                }
                assert_eq!(
                    (
                        engine.fields,
                        engine.halos,
                        engine.materials,
                        engine.pml,
                        engine.dispersive,
                        engine.sources
                    ),
                    (
                        planned.fields,
                        planned.halos,
                        planned.materials,
                        planned.pml,
                        planned.dispersive,
                        planned.sources
                    ),
                    "{name}, {ranges:?}, {precision:?}"
                );
            }
        }
    }
}

/// Run the whole time loop of `model` on the CPU backend split as `ranges`; the backend's
/// slab allocation and the monitor buffers it holds at the end.
fn run_and_count<T: yee::real::Real>(
    model: &Model,
    ranges: &[SlabRange],
    path: std::path::PathBuf,
) -> (Allocation, MonitorBuffers) {
    let mut cpu = CpuBackend::<T>::new(model, ranges);
    let opts = RunOptions::new(path);
    let summary = yee::run::run_backend(model, &mut cpu, ranges, 2, &opts, &mut yee::run::Quiet)
        .expect("the run completes");
    assert!(summary.complete);
    (cpu.allocation(), cpu.monitor_buffer_bytes())
}

/// After a whole run (every snapshot gathered, every flux DFT accumulated) the CPU backend's
/// monitor buffers, counted from its vectors' capacities, are the plan's `monitors` bytes.
#[test]
fn cpu_monitor_buffers_after_a_run_are_what_the_plan_lists() {
    let dir = std::env::temp_dir().join(format!("yee-plan-buffers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (name, m)) in scenes().into_iter().enumerate() {
        let hw = Hardware::new(Vec::new(), 64 << 30, 2);
        let options = PlanOptions {
            backend: BackendChoice::Cpu,
            slabs: Some(3),
            ..Default::default()
        };
        let p = plan::plan(&m, &hw, &options);
        let path = dir.join(format!("buffers{i}.h5"));
        let (slabs, bufs) = match m.precision {
            Precision::F32 => run_and_count::<f32>(&m, &p.ranges(), path),
            Precision::F64 => run_and_count::<f64>(&m, &p.ranges(), path),
        };
        let mut real = slabs;
        real.monitors = bufs.gathers + bufs.flux;
        assert_eq!(real, p.allocation(), "{name}: {bufs:?}");
        if !m.fluxes.is_empty() {
            assert!(bufs.flux > 0, "{name}: flux buffers");
        }
        if !m.snapshots.is_empty() {
            assert!(bufs.gathers > 0, "{name}: snapshot buffers");
        }
        // Not compared: the probe rows queued between two writes of the probe series (a
        // row of every probe sample per step, handed to the writer when it flushes), which
        // the plan counts as the writer's probe series instead.
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// scripts/test.sh runs this file again with debug assertions on, so that the backends' own
/// allocation checks (`debug_assert_eq!` against the plan and the estimate) run; it says so
/// with YEE_EXPECT_DEBUG_ASSERTIONS, and this fails if that run was built without them.
#[test]
// The constant is what this build was compiled with: the point of the check.
#[allow(clippy::assertions_on_constants)]
fn debug_assertions_are_on_where_the_suite_expects_them() {
    if std::env::var_os("YEE_EXPECT_DEBUG_ASSERTIONS").is_some() {
        assert!(
            cfg!(debug_assertions),
            "YEE_EXPECT_DEBUG_ASSERTIONS is set but this build has no debug assertions"
        );
    }
}

/// Minor page faults of the calling thread so far.
#[cfg(target_os = "linux")]
fn thread_minor_faults() -> i64 {
    // SAFETY: `rusage` is plain data, for which all zeros is a valid value, and getrusage
    // only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let status = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(status, 0, "getrusage(RUSAGE_THREAD)");
    usage.ru_minflt
}

/// The CPU engine writes every page of its fields, psi arrays and pole state when it allocates
/// them, so that the first step takes no copy-on-write fault per page (each one a TLB flush
/// on every other core running the process: docs/performance.md, 2026-12-03). Counted on a
/// pool of one thread, which builds the engine and runs its first step, for a grid whose
/// arrays span thousands of pages.
#[cfg(target_os = "linux")]
#[test]
fn the_first_step_faults_in_no_page_the_engine_allocated() {
    let m = model(
        r#"
[simulation]
name = "pages"
length_unit = "um"
cell_size = 0.05
size = [3.2, 3.2, 3.2]
steps = 1
precision = "f32"
[boundaries]
default = { type = "pml", cells = 8 }
[materials]
metal = { epsilon = 1.0, drude = [{ frequency = 5.0e14, damping = 1.0e14 }] }
[[geometry]]
shape = "sphere"
material = "metal"
center = [0.0, 0.0, 0.0]
radius = 0.8
[[source]]
type = "dipole"
component = "Ez"
position = [1.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }
"#,
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool of one thread");
    let (faults, pages) = pool.install(|| {
        let ranges = split_even(m.grid.shape[0], 1);
        let mut b = CpuBackend::<f32>::new(&m, &ranges);
        let pages = b.allocation().total() / 4096;
        let mut s = yee::run::Stepper::new(&m, &mut b, &ranges);
        let before = thread_minor_faults();
        s.step();
        (thread_minor_faults() - before, pages)
    });
    // A page read and then written in the step faults once or twice; the step's own small
    // buffers (source values, the halo plan) touch a few pages at most.
    assert!(pages > 1000, "a grid of {pages} pages is too small to tell");
    assert!(
        faults * 50 < pages as i64,
        "the first step took {faults} page faults on an engine of {pages} pages"
    );
}
