//! The CUDA kernels compiled as C++ on the host and driven by the CUDA backend's own engine
//! (design.md section 8, layer 3): `kernels/*.cu` behind `kernels/host_shim.h` become a shared
//! object (built here with `c++`), and [`HostDevice`] implements the engine's `Device` with
//! plain memory and calls into it. Launch geometry, kernel order, boundary/interior plane
//! split, halo routes (same GPU, peer, staged through pinned memory, PMC mirror) and monitor
//! staging are the engine's, unchanged; only the memory and launch calls are swapped.
//!
//! Every comparison is with the CPU backend and bit for bit (`assert_identical`: fields,
//! probes, snapshots and flux spectra; the kernels are built without floating-point
//! contraction and the flux weights use the host's libm, as the CPU backend does), on scenes
//! with PML, dielectrics, conductors (lossy, PEC and conformal PEC), dipole and plane-wave
//! sources and lumped ports and RLC elements (a cell pass's device form), on 1 and 3 slabs.
//! Monitors are read the way the time loop reads them (queued on the device, collected later,
//! flux DFTs accumulated by `flux_dft`), also on a device whose events lag (the copies land a
//! few queries after they are queued), and the whole time loop's HDF5 file is compared with
//! the CPU's. A device that fails mid-run stops the loop with `RunError::Device` and leaves a
//! valid file with `complete = false`.

mod cuda_support;

use cuda_support::host::*;
use cuda_support::*;
use std::path::PathBuf;
use yee::backend::cuda::args::{arg_sizes, rust_arg_sizes};
use yee::backend::cuda::engine::{estimate, probe_ring_rows, staged_trade_bytes, trade_bytes};
use yee::backend::cuda::{CudaEngine, EngineOptions};
use yee::backend::{Backend, Half, Pass};
use yee::decomp::split_even;
use yee::flux::flux_cells;
use yee::model::{Component, Model, Precision};
use yee::plan::bytes::flux_accumulator_bytes;
use yee::real::Real;

/// How the slabs sit on (emulated) GPUs, how monitors are read, and how far the device's
/// events lag.
#[derive(Debug, Clone, Copy)]
struct Layout {
    slabs: usize,
    gpus: usize,
    peer: bool,
    staged: bool,
    reads: Reads,
    lag: usize,
}

const ONE: Layout = Layout {
    slabs: 1,
    gpus: 1,
    peer: false,
    staged: false,
    reads: Reads::Queued,
    lag: 0,
};
const THREE_ON_ONE: Layout = Layout {
    slabs: 3,
    gpus: 1,
    peer: false,
    staged: false,
    reads: Reads::Queued,
    lag: 0,
};

fn host_trace<T: Real>(model: &Model, l: Layout) -> (Trace, Log) {
    let ranges = split_even(model.grid.shape[0], l.slabs);
    let gpu_of: Vec<usize> = (0..ranges.len())
        .map(|s| s * l.gpus / ranges.len())
        .collect();
    let dev = HostDevice::new(T::PRECISION, l.gpus, l.peer).lagging(l.lag);
    let mut b = CudaEngine::<HostDevice, T>::new(
        dev,
        model,
        &ranges,
        &gpu_of,
        EngineOptions {
            staged_halos: l.staged,
        },
        "host",
    )
    .expect("host engine");
    assert_eq!(
        b.allocation(),
        estimate(model, &ranges, std::mem::size_of::<T>()),
        "the engine allocates what estimate() says"
    );
    let trace = drive_with(model, &mut b, &ranges, l.reads);
    let log = b.device().log.borrow().clone();
    (trace, log)
}

fn compare<T: Real>(scene: &str, steps: usize, layout: Layout) -> Log {
    let _guard = serial();
    let model = model(scene, T::PRECISION.name(), steps);
    let want = cpu_trace::<T>(&model);
    let (got, log) = host_trace::<T>(&model, layout);
    assert_identical(
        &got,
        &want,
        &format!("{} {} {:?}", model.name, T::PRECISION.name(), layout),
    );
    log
}

#[test]
fn host_kernel_argument_structs_match_their_rust_mirrors() {
    for p in [Precision::F32, Precision::F64] {
        let k = host_kernels(p);
        // SAFETY: the signature of yee_host_arg_size in host_launch.h.
        let size = unsafe {
            k.lib
                .get::<unsafe extern "C" fn(i32) -> u64>(b"yee_host_arg_size")
        }
        .unwrap();
        let n = arg_sizes(p.bytes()).len() as i32;
        let c_sizes: Vec<usize> = (0..n).map(|i| unsafe { size(i) } as usize).collect();
        let rust = if p == Precision::F32 {
            rust_arg_sizes::<f32>()
        } else {
            rust_arg_sizes::<f64>()
        };
        assert_eq!(c_sizes, rust.to_vec(), "{}", p.name());
        assert_eq!(c_sizes, arg_sizes(p.bytes()).to_vec());
        assert_eq!(
            unsafe { size(99) } as usize,
            p.bytes(),
            "real is {}",
            p.name()
        );
    }
}

#[test]
fn host_kernels_match_cpu_with_pml_dielectric_conductor_dipole_f32_one_slab() {
    let log = compare::<f32>(PML_SCENE, 40, ONE);
    // Each step: main updates, CPML passes along all three axes, the dipole; no halo copies.
    assert_eq!(log.launches["update_h"], 40);
    assert_eq!(log.launches["inject_source"], 40);
    assert!(
        log.launches["cpml_x_e"] >= 40
            && log.launches["cpml_y_h"] == 40
            && log.launches["cpml_z_e"] == 40
    );
    assert_eq!(
        log.local_copies + log.peer_copies + log.from_pinned,
        0,
        "one slab, no halo copies"
    );
    // Monitors: the probe samples into the device ring every step, the ring copied to pinned
    // memory once per drain (every 5 steps), the two snapshot components every 7 steps; then
    // the six whole fields read at the end, each gathered on the device and copied once.
    assert_eq!(log.launches["probe_gather"], 40);
    assert_eq!(log.to_pinned, 40 / 5 + 2 * (40 / 7) + 6);
    assert_eq!(log.launches["snapshot_gather"], 2 * (40 / 7) + 6);
}

#[test]
fn host_kernels_match_cpu_with_pml_dielectric_conductor_dipole_f32_three_slabs() {
    let log = compare::<f32>(PML_SCENE, 40, THREE_ON_ONE);
    // Two interior boundaries, Hy and Hz after H, Ey and Ez after E: 8 plane copies a step.
    assert_eq!(log.local_copies, 8 * 40);
}

#[test]
fn host_kernels_match_cpu_with_pml_dielectric_conductor_dipole_f64_one_slab() {
    compare::<f64>(PML_SCENE, 40, ONE);
}

#[test]
fn host_kernels_match_cpu_with_pml_dielectric_conductor_dipole_f64_three_slabs() {
    compare::<f64>(PML_SCENE, 40, THREE_ON_ONE);
}

/// [`PML_SCENE`] with thick z layers, 10 cells at z_min and 17 at z_max, and a conducting box
/// through the z_max layer: z-layer runs longer than one AVX2 vector (9, 10, 16 and 17 cells
/// at the two ends of a row, for E and H), so their vector loops and remainders both run, and
/// rows crossing the box take per-cell coefficients. [`PML_SCENE`]'s 5-cell layers are shorter
/// than a vector of f32.
fn thick_z_layer_scene() -> String {
    PML_SCENE
        .replace("size = [26.0, 22.0, 20.0]", "size = [26.0, 22.0, 40.0]")
        .replace(
            "default = { type = \"pml\", cells = 5 }",
            "default = { type = \"pml\", cells = 5 }\nz_min = { type = \"pml\", cells = 10 }\nz_max = { type = \"pml\", cells = 17 }",
        )
        + r#"
[[geometry]]
shape = "box"
material = "soil"
center = [0.0, 0.0, 15.0]
size = [10.0, 10.0, 12.0]
"#
}

/// [`PML_SCENE`] with metal thinner than a cell: a zero-thickness sheet, a foil off the node
/// planes and a thin slanted wire, in and around the glass box, which smoothing mixes around.
#[test]
fn host_kernels_match_cpu_with_thin_metal_sheets_and_wires() {
    let scene = PML_SCENE.to_string()
        + r#"
[[geometry]]
shape = "box"
material = "metal"
center = [3.0, 2.0, 0.0]
size = [6.0, 6.0, 0.0]
[[geometry]]
shape = "box"
material = "metal"
center = [-3.0, 2.0, -2.3]
size = [6.0, 6.0, 0.035]
[[geometry]]
shape = "cylinder"
material = "metal"
center = [2.0, 0.0, 1.0]
radius = 0.05
height = 8.0
axis = [1.0, 1.0, 1.0]
"#;
    for layout in [ONE, THREE_ON_ONE] {
        compare::<f32>(&scene, 30, layout);
    }
}

#[test]
fn host_kernels_match_cpu_with_thick_z_layers() {
    let scene = thick_z_layer_scene();
    assert!(scene.contains("cells = 17") && scene.contains("[26.0, 22.0, 40.0]"));
    for layout in [ONE, THREE_ON_ONE] {
        compare::<f32>(&scene, 30, layout);
        compare::<f64>(&scene, 30, layout);
    }
}

#[test]
fn host_kernels_match_cpu_with_periodic_pmc_plane_wave_f32_one_and_three_slabs() {
    let log = compare::<f32>(PERIODIC_SCENE, 30, ONE);
    // Periodic x: one slab copies its own planes across (2 after H, 2 after E).
    assert_eq!(log.local_copies, 4 * 30);
    compare::<f32>(PERIODIC_SCENE, 30, THREE_ON_ONE);
}

#[test]
fn host_kernels_match_cpu_with_periodic_pmc_plane_wave_f64_one_and_three_slabs() {
    compare::<f64>(PERIODIC_SCENE, 30, ONE);
    compare::<f64>(PERIODIC_SCENE, 30, THREE_ON_ONE);
}

#[test]
fn host_kernels_match_cpu_with_pmc_mirror_halo_and_anisotropic_cells_f32_and_f64() {
    let log = compare::<f32>(PMC_SCENE, 40, THREE_ON_ONE);
    // The PMC x face: Hy and Hz mirrored into slab 0's left halo every step.
    assert_eq!(log.launches["copy_negated"], 2 * 40);
    compare::<f64>(PMC_SCENE, 40, ONE);
    compare::<f64>(PMC_SCENE, 40, THREE_ON_ONE);
}

#[test]
fn host_kernels_match_cpu_across_gpus_with_peer_copies() {
    let log = compare::<f32>(
        PML_SCENE,
        25,
        Layout {
            slabs: 3,
            gpus: 2,
            peer: true,
            staged: false,
            reads: Reads::Queued,
            lag: 0,
        },
    );
    // Slabs 0 and 1 share GPU 0, slab 2 is on GPU 1: one boundary in each GPU, one across.
    assert_eq!(log.local_copies, 4 * 25);
    assert_eq!(log.peer_copies, 4 * 25);
    assert_eq!(log.from_pinned, 0);
}

#[test]
fn host_kernels_match_cpu_across_gpus_staged_through_pinned_memory() {
    let log = compare::<f64>(
        PML_SCENE,
        25,
        Layout {
            slabs: 3,
            gpus: 2,
            peer: false,
            staged: false,
            reads: Reads::Queued,
            lag: 0,
        },
    );
    assert_eq!(log.peer_copies, 0);
    assert_eq!(
        log.from_pinned,
        4 * 25,
        "the cross-GPU planes land from pinned memory"
    );
}

#[test]
fn host_kernels_match_cpu_with_every_halo_forced_through_pinned_memory() {
    let log = compare::<f32>(
        PERIODIC_SCENE,
        20,
        Layout {
            slabs: 3,
            gpus: 1,
            peer: false,
            staged: true,
            reads: Reads::Queued,
            lag: 0,
        },
    );
    assert_eq!(log.local_copies, 0);
    // Three boundaries (two interior, one periodic) x 4 planes per step.
    assert_eq!(log.from_pinned, 12 * 20);
}

#[test]
fn host_engine_reports_allocations_by_category_like_the_cpu_backend() {
    let _guard = serial();
    let model = model(PML_SCENE, "f32", 1);
    let ranges = split_even(model.grid.shape[0], 3);
    let dev = HostDevice::new(Precision::F32, 1, false);
    let b = CudaEngine::<HostDevice, f32>::new(
        dev,
        &model,
        &ranges,
        &[0, 0, 0],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    let cpu = yee::backend::cpu::CpuBackend::<f32>::new(&model, &ranges);
    let (a, c) = (b.allocation(), cpu.allocation());
    assert_eq!((a.fields, a.halos, a.pml), (c.fields, c.halos, c.pml));
    let [nx, ny, nz] = model.grid.shape;
    // The PEC box is conformal: its cut faces' tables are material bytes too.
    let faces = model.conformal().face_count() as u64;
    assert!(faces > 0);
    assert_eq!(
        a.materials,
        3 * (nx * ny * nz) as u64 + faces * yee::plan::bytes::conformal_face_bytes(4),
        "one byte per E component per cell, no row summaries; the cut faces"
    );
    // One probe (an address per stencil point, and a ring of one row per step, here one
    // step), and a strided plane of two components, device and pinned.
    let snap: usize = model.snapshots[0]
        .regions
        .iter()
        .map(|(_, r)| r.len())
        .sum();
    assert_eq!(probe_ring_rows(&model), 1);
    // Interpolated probes read every point of each component's stencil.
    let samples = model.probes[0].samples.len();
    assert!(samples >= 3);
    assert_eq!(a.monitors, (samples * 8 + 2 * (samples + snap) * 4) as u64);
}

/// The scene text without its monitors (every scene lists them last).
fn without_monitors(scene: &str) -> &str {
    &scene[..scene.find("[[monitor]]").expect("the scene has monitors")]
}

/// Bytes the engine allocates but does not count in its `Allocation` categories (listed in the
/// doc of `estimate`; the plan counts them apart): on every GPU the CPML coefficient tables
/// (four reals per layer index, E and H, per axis), the update's step tables (1/primal and
/// 1/dual, one real per index of each axis) and the 4-byte NaN flag; a pinned plane per
/// staged halo copy. (The flux monitors' frequency and weight tables are monitor bytes.)
fn uncounted_bytes(model: &Model, l: Layout, real: usize) -> usize {
    let ranges = split_even(model.grid.shape[0], l.slabs);
    let gpu_of: Vec<usize> = (0..ranges.len())
        .map(|s| s * l.gpus / ranges.len())
        .collect();
    let profiles = &model.boundaries.profiles;
    let tables: usize = profiles.iter().map(|p| (p.e.len() + p.h.len()) * 4).sum();
    let steps: usize = 2 * model.grid.shape.iter().sum::<usize>();
    let per_gpu = (tables + steps) * real + 4;
    let [_, ny, nz] = model.grid.shape;
    let halos = yee::decomp::HaloPlan::new(&ranges, &model.boundaries);
    let staged = halos
        .after_h
        .iter()
        .chain(&halos.after_e)
        .filter(|c| !c.negate)
        .filter(|c| l.staged || (gpu_of[c.src_slab] != gpu_of[c.dst_slab] && !l.peer))
        .count();
    let ports = model.surface_ports();
    let staged_ports = if l.staged || !l.peer {
        staged_trade_bytes(&ports, &ranges, &gpu_of, real) as usize
    } else {
        0
    };
    l.gpus * per_gpu + staged * ny * nz * real + staged_ports
}

/// What the engine allocated on construction, from the device's own count of every `alloc`
/// and `alloc_pinned`, and what the engine reports.
fn engine_bytes<T: Real>(model: &Model, l: Layout) -> (usize, yee::backend::Allocation) {
    let ranges = split_even(model.grid.shape[0], l.slabs);
    let gpu_of: Vec<usize> = (0..ranges.len())
        .map(|s| s * l.gpus / ranges.len())
        .collect();
    let dev = HostDevice::new(T::PRECISION, l.gpus, l.peer);
    let b = CudaEngine::<HostDevice, T>::new(
        dev,
        model,
        &ranges,
        &gpu_of,
        EngineOptions {
            staged_halos: l.staged,
        },
        "host",
    )
    .expect("host engine");
    let log = b.device().log.borrow().clone();
    (log.device_bytes + log.pinned_bytes, b.allocation())
}

fn check_engine_allocation<T: Real>(scene: &str, l: Layout) {
    let real = std::mem::size_of::<T>();
    let with = model(scene, T::PRECISION.name(), 10);
    let bare = model(without_monitors(scene), T::PRECISION.name(), 10);
    assert!(bare.probes.is_empty() && bare.snapshots.is_empty() && bare.fluxes.is_empty());
    let what = format!("{} {} {l:?}", with.name, T::PRECISION.name());
    let (got_with, a_with) = engine_bytes::<T>(&with, l);
    let (got_bare, a_bare) = engine_bytes::<T>(&bare, l);
    // Everything the engine counts is what it allocated, to the byte.
    assert_eq!(
        (got_with - uncounted_bytes(&with, l, real)) as u64,
        a_with.total(),
        "{what}: the engine's count of its allocations"
    );
    assert_eq!(
        (got_bare - uncounted_bytes(&bare, l, real)) as u64,
        a_bare.total(),
        "{what} without monitors"
    );
    // The monitor buffers are what the monitors add to the allocations.
    let monitors =
        (got_with - uncounted_bytes(&with, l, real)) - (got_bare - uncounted_bytes(&bare, l, real));
    assert!(
        monitors > 0,
        "{what}: the scene's monitors allocate nothing"
    );
    assert_eq!(
        a_with.monitors - a_bare.monitors,
        monitors as u64,
        "{what}: monitor buffers"
    );
    // Without monitors, the lumped terminals' samples still go to the probe ring (8 bytes of
    // address and a value per row on the device, a value per row in the pinned mirror).
    let terminal_samples: usize = bare.terminals.iter().map(|t| t.probe.samples.len()).sum();
    let rows = probe_ring_rows(&bare);
    assert_eq!(
        a_bare.monitors,
        (terminal_samples * (8 + 2 * rows * real)) as u64,
        "{what}: the terminals' probe ring"
    );
    let slabs_only = |a: yee::backend::Allocation| yee::backend::Allocation { monitors: 0, ..a };
    assert_eq!(
        slabs_only(a_with),
        slabs_only(a_bare),
        "{what}: monitors change only the monitor category"
    );
    // And the engine's count is the estimate the GPU selection and the planner use.
    let ranges = split_even(with.grid.shape[0], l.slabs);
    let gpu_of: Vec<usize> = (0..ranges.len())
        .map(|s| s * l.gpus / ranges.len())
        .collect();
    let trades = trade_bytes(&with.surface_ports(), &ranges, &gpu_of, real);
    let mut want = estimate(&with, &ranges, real);
    want.dispersive += trades;
    assert_eq!(a_with, want, "{what}");
    let layout = yee::plan::Layout::of(&with).with_precision(T::PRECISION);
    let mut planned = yee::backend::Allocation::default();
    for r in &ranges {
        planned.add(&layout.gpu_slab_bytes(*r));
    }
    planned.dispersive += trades;
    assert_eq!(slabs_only(a_bare), planned, "{what}: the plan's GPU slabs");
}

#[test]
fn host_engine_allocates_what_it_counts_from_the_devices_own_allocations() {
    let _guard = serial();
    let across = Layout {
        slabs: 3,
        gpus: 2,
        peer: true,
        staged: false,
        reads: Reads::Queued,
        lag: 0,
    };
    let staged = Layout {
        peer: false,
        ..across
    };
    let tfsf = TFSF_SCENE
        .replace("DIRECTION", "[1.0, 2.0, 3.0]")
        .replace("POLARIZATION", "[-2.0, 1.0, 0.0]");
    for scene in [
        PML_SCENE,
        PERIODIC_SCENE,
        PMC_SCENE,
        FLUX_SCENE,
        BOX_SCENE,
        &tfsf,
        LUMPED_SCENE,
    ] {
        for l in [ONE, THREE_ON_ONE, across, staged] {
            check_engine_allocation::<f32>(scene, l);
            check_engine_allocation::<f64>(scene, l);
        }
    }
    // The surface ports (their arrays and the `port_poles` runs' arguments), and over GPUs
    // their trades' buffers.
    for l in [ONE, THREE_ON_ONE, across, staged] {
        check_engine_allocation::<f32>(&ports_scene(), l);
        check_engine_allocation::<f64>(&ports_scene(), l);
    }
}

#[test]
fn host_kernels_without_the_load_pipeline_match_cpu_bit_for_bit() {
    let _guard = serial();
    let model = model(PML_SCENE, "f32", 40);
    let want = cpu_trace::<f32>(&model);
    let ranges = split_even(model.grid.shape[0], 3);
    let dev = HostDevice::with_kernels(host_kernels_variant(Precision::F32, false), 1, false);
    let mut b = CudaEngine::<HostDevice, f32>::new(
        dev,
        &model,
        &ranges,
        &[0, 0, 0],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    let got = drive(&model, &mut b, &ranges);
    // Reordering loads changes nothing.
    assert_identical(&got, &want, "plain loads");
}

#[test]
fn host_flux_dft_probe_ring_and_queued_snapshots_match_cpu_f32_and_f64() {
    // x planes on a slab boundary (H below from the left halo) and inside a slab, y and z
    // planes across all three slabs; two snapshots due together; flux spectra bit for bit.
    // Sampled every step (the launch count is the geometry's); the automatic decimation is
    // compared on the same scene after.
    let every = every_step(FLUX_SCENE);
    for layout in [ONE, THREE_ON_ONE] {
        let log = compare::<f32>(&every, 60, layout);
        assert_eq!(log.launches["flux_dft"], 60 * (1 + 1 + 2 * layout.slabs));
        compare::<f64>(&every, 60, layout);
        let log = compare::<f64>(FLUX_SCENE, 60, layout);
        assert!(log.launches["flux_dft"] < 60 * (1 + 1 + 2 * layout.slabs));
    }
    let _guard = serial();
    let model = model(&every, "f64", 60);
    assert_eq!(
        model.fluxes[0].patches[0].index, 8,
        "x_boundary sits on slab 1's first plane"
    );
    assert_eq!(split_even(model.grid.shape[0], 3)[1].x0, 8);
    let want = cpu_trace::<f64>(&model);
    let (got, _) = host_trace::<f64>(&model, THREE_ON_ONE);
    assert_eq!(
        got.flux, want.flux,
        "the device DFT is the host DFT, bit for bit"
    );
    assert_eq!(got.probes, want.probes);
    assert_eq!(got.snapshots, want.snapshots);
}

#[test]
fn host_face_patch_dfts_of_flux_and_far_field_boxes_match_cpu_bit_for_bit() {
    let every = every_step(BOX_SCENE);
    for layout in [ONE, THREE_ON_ONE] {
        let log = compare::<f32>(&every, 40, layout);
        // Per step one DFT launch per patch part: a box's x faces lie in one slab each; on three
        // slabs the flux box's y and z faces (x nodes 8 to 18) cross slabs 1 and 2, the far
        // field's (x nodes 6 to 18) all three.
        let parts = if layout.slabs == 1 {
            12
        } else {
            (2 + 4 * 2) + (2 + 4 * 3)
        };
        assert_eq!(log.launches["flux_dft"], 40 * parts);
        compare::<f64>(&every, 40, layout);
        compare::<f32>(BOX_SCENE, 40, layout);
    }
    let _guard = serial();
    let model = model(BOX_SCENE, "f64", 40);
    assert_eq!(
        model.fluxes[0].patches[0].index, 8,
        "x_min on slab 1's first plane"
    );
    assert_eq!(split_even(model.grid.shape[0], 3)[1].x0, 8);
    // Every patch's DFTs, not only the spectra they sum to.
    let ranges = split_even(model.grid.shape[0], 3);
    let mut cpu = yee::backend::cpu::CpuBackend::<f64>::new(&model, &ranges);
    drive_with(&model, &mut cpu, &ranges, Reads::Immediate);
    let dev = HostDevice::new(Precision::F64, 1, false);
    let gpu_of = vec![0; 3];
    let mut host = CudaEngine::<HostDevice, f64>::new(
        dev,
        &model,
        &ranges,
        &gpu_of,
        EngineOptions {
            staged_halos: false,
        },
        "host",
    )
    .expect("host engine");
    drive_with(&model, &mut host, &ranges, Reads::Queued);
    for i in 0..model.fluxes.len() {
        let (want, got) = (cpu.flux_dft(i).unwrap(), host.flux_dft(i).unwrap());
        assert_eq!(want.patches.len(), 6);
        assert!(
            want.power().iter().all(|p| *p != 0.0),
            "the boxes saw the fields"
        );
        assert_eq!(
            got, want,
            "monitor {i}: the device's face DFTs are the host's"
        );
    }
}

#[test]
fn host_queued_monitors_on_a_lagging_device_across_gpus_match_cpu() {
    // Events report "not yet" twice after each record: probe rows are collected a drain later
    // and snapshots are taken after the next step's update has changed the fields.
    for (lag, staged) in [(2, false), (5, true)] {
        let layout = Layout {
            slabs: 3,
            gpus: 2,
            peer: true,
            staged,
            reads: Reads::Queued,
            lag,
        };
        compare::<f32>(FLUX_SCENE, 50, layout);
        compare::<f64>(PML_SCENE, 40, layout);
    }
}

#[test]
fn host_probe_ring_smaller_than_the_run_is_read_when_full() {
    // 5000 steps of a tiny grid: the 4096-row ring fills before the first drain.
    let _guard = serial();
    let text = r#"
[simulation]
name = "ring"
length_unit = "mm"
cell_size = 1.0
size = [6.0, 5.0, 4.0]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "periodic" }
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "ricker", frequency = 3.0e10 }
[[monitor]]
type = "probe"
name = "p"
position = [1.0, 1.0, 1.0]
components = ["Ez", "Hx"]
"#;
    let model = model(text, "f32", 5000);
    assert_eq!(probe_ring_rows(&model), 4096);
    let ranges = split_even(model.grid.shape[0], 2);
    let samples: Vec<_> = model.probes[0].samples.clone();
    let mut cpu = yee::backend::cpu::CpuBackend::<f32>::new(&model, &ranges);
    let dev = HostDevice::new(Precision::F32, 2, true).lagging(1);
    let mut b = CudaEngine::<HostDevice, f32>::new(
        dev,
        &model,
        &ranges,
        &[0, 1],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    let mut s1 = yee::run::Stepper::new(&model, &mut cpu, &ranges);
    let mut want = Vec::new();
    for _ in 0..5000 {
        s1.step();
        s1.backend.queue_probes(&samples);
    }
    s1.backend.drain_probes(&mut want, true);
    let mut got = Vec::new();
    let mut s2 = yee::run::Stepper::new(&model, &mut b, &ranges);
    for step in 1..=5000 {
        s2.step();
        s2.backend.queue_probes(&samples);
        if step == 4500 {
            // Without waiting: what reached the host (the 4096 rows read when the ring filled).
            s2.backend.drain_probes(&mut got, false);
            assert_eq!(got.len(), 4096 * samples.len());
        }
    }
    s2.backend.drain_probes(&mut got, true);
    assert_eq!(got.len(), 5000 * samples.len());
    assert_eq!(got, want);
}

fn host_engine<T: Real>(model: &Model, slabs: usize, dev: HostDevice) -> CudaEngine<HostDevice, T> {
    let ranges = split_even(model.grid.shape[0], slabs);
    let gpus = dev.gpus;
    let gpu_of: Vec<usize> = (0..slabs).map(|s| s * gpus / slabs).collect();
    CudaEngine::<HostDevice, T>::new(
        dev,
        model,
        &ranges,
        &gpu_of,
        EngineOptions::default(),
        "host",
    )
    .expect("host engine")
}

fn out_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("host-run-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cpu_run<T: Real>(model: &Model, path: &std::path::Path) {
    let ranges = split_even(model.grid.shape[0], 1);
    let mut cpu = yee::backend::cpu::CpuBackend::<T>::new(model, &ranges);
    let opts = yee::run::RunOptions::new(path.to_path_buf());
    yee::run::run_backend(model, &mut cpu, &ranges, 1, &opts, &mut yee::run::Quiet)
        .expect("cpu run");
}

#[test]
fn host_engine_time_loop_writes_the_same_file_as_the_cpu_backend() {
    let _guard = serial();
    let dir = out_dir("same-file");
    for (precision, lag) in [("f32", 3), ("f64", 0)] {
        let model = model(FLUX_SCENE, precision, 50);
        let (cpu_path, host_path) = (dir.join("cpu.h5"), dir.join("host.h5"));
        let slabs = 3;
        let ranges = split_even(model.grid.shape[0], slabs);
        let (summary, downloaded) = if precision == "f32" {
            cpu_run::<f32>(&model, &cpu_path);
            let dev = HostDevice::new(Precision::F32, 2, true).lagging(lag);
            let mut b = host_engine::<f32>(&model, slabs, dev);
            let opts = yee::run::RunOptions::new(host_path.clone());
            let r = yee::run::run_backend(&model, &mut b, &ranges, 1, &opts, &mut yee::run::Quiet);
            let downloaded = b.device().log.borrow().downloaded;
            (r, downloaded)
        } else {
            cpu_run::<f64>(&model, &cpu_path);
            let dev = HostDevice::new(Precision::F64, 1, false).lagging(lag);
            let mut b = host_engine::<f64>(&model, slabs, dev);
            let opts = yee::run::RunOptions::new(host_path.clone());
            let r = yee::run::run_backend(&model, &mut b, &ranges, 1, &opts, &mut yee::run::Quiet);
            let downloaded = b.device().log.borrow().downloaded;
            (r, downloaded)
        };
        let summary = summary.expect("host engine run");
        assert!(summary.complete);
        // The device's own time per phase, from its timing marks (here the host's time
        // between them, the kernels running at their launch): every phase the run has.
        let device = summary
            .device
            .expect("an engine on a device with marks reports its time");
        for half in [Half::H, Half::E] {
            assert!(
                !device.passes[half.index()][Pass::CurlCpml.index()].is_zero(),
                "{precision}: the {half:?} curl's time"
            );
        }
        for (what, d) in [
            ("exchange", device.exchange),
            ("monitors", device.monitors),
            ("checks", device.checks),
        ] {
            assert!(!d.is_zero(), "{precision}: {what} took no device time");
        }
        assert!(device.fused.is_zero() && device.checkpoint.is_zero());
        let (want, got) = (h5_contents(&cpu_path), h5_contents(&host_path));
        assert_same_contents(
            &got,
            &want,
            &format!("{precision}, host engine against CPU"),
        );
        assert_eq!(want["probes/a/Ez"].len(), 50);
        // The spectra came from the row sums: what the run read back synchronously is far
        // less than one copy of the accumulators, which the file does not keep.
        let accumulators: u64 = model
            .fluxes
            .iter()
            .map(|f| flux_accumulator_bytes(f.frequencies.len(), flux_cells(f)))
            .sum();
        let downloaded = downloaded as u64;
        assert!(
            downloaded < accumulators / 4,
            "{precision}: {downloaded} bytes read back, the accumulators are {accumulators}"
        );
        assert_eq!(
            want["snapshots/ez/step"],
            (1..=12).map(|i| 4.0 * i as f64).collect::<Vec<_>>()
        );
        assert_eq!(want["snapshots/box/Ey"].len() % 8, 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_engine_flux_of_more_frequencies_than_one_launch_takes_is_the_cpus_bit_for_bit() {
    // A flux_dft launch takes FLUX_FREQS_PER_LAUNCH frequencies with their weights in its
    // arguments: 70 frequencies are three launches (the last one short) and 33 are two (the
    // second of one frequency); every accumulator must land at its own frequency.
    let _guard = serial();
    let dir = out_dir("many-frequencies");
    let per_launch = yee::backend::cuda::args::FLUX_FREQS_PER_LAUNCH;
    assert!(70 > 2 * per_launch && 33 == per_launch + 1);
    let scene = FLUX_SCENE
        .replace("count = 7 }", "count = 70 }")
        .replace("count = 5 }", "count = 33 }");
    let model = model(&scene, "f32", 40);
    assert_eq!(model.fluxes[0].frequencies.len(), 70);
    let (cpu_path, host_path) = (dir.join("cpu.h5"), dir.join("host.h5"));
    cpu_run::<f32>(&model, &cpu_path);
    let slabs = 3;
    let ranges = split_even(model.grid.shape[0], slabs);
    let dev = HostDevice::new(Precision::F32, 2, true).lagging(2);
    let mut b = host_engine::<f32>(&model, slabs, dev);
    let opts = yee::run::RunOptions::new(host_path.clone());
    let summary = yee::run::run_backend(&model, &mut b, &ranges, 1, &opts, &mut yee::run::Quiet)
        .expect("host engine run");
    assert!(summary.complete);
    let (want, got) = (h5_contents(&cpu_path), h5_contents(&host_path));
    assert_eq!(want["flux/x_boundary/power"].len(), 70);
    assert_eq!(want["flux/y/power"].len(), 33);
    assert_same_contents(
        &got,
        &want,
        "70 and 33 frequencies, host engine against CPU",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn host_engine_failure_mid_run_stops_with_a_device_error_and_a_valid_incomplete_file() {
    let _guard = serial();
    let dir = out_dir("failure");
    let model = model(FLUX_SCENE, "f32", 60);
    let ranges = split_even(model.grid.shape[0], 3);
    let cpu_path = dir.join("cpu.h5");
    cpu_run::<f32>(&model, &cpu_path);
    let want = h5_contents(&cpu_path);
    // A launch fails with a driver error in some step (the device's own failure), or the
    // engine's test hook fails every launch from step 33 on.
    for how in ["device", "hook"] {
        let path = dir.join(format!("{how}.h5"));
        let dev = HostDevice::new(Precision::F32, 1, false).lagging(1);
        if how == "device" {
            dev.launches_before_failure.set(Some(1500));
        }
        let mut b = host_engine::<f32>(&model, 3, dev);
        if how == "hook" {
            b.fail_at_step(33);
        }
        let opts = yee::run::RunOptions::new(path.clone());
        let r = yee::run::run_backend(&model, &mut b, &ranges, 1, &opts, &mut yee::run::Quiet);
        let err = r.expect_err("the run fails");
        let text = err.to_string();
        let yee::run::RunError::Device {
            step,
            message,
            summary,
        } = err
        else {
            panic!("{how}: expected a device error, got {text}");
        };
        eprintln!("{how}: {text}");
        assert!(text.contains(&format!("detected in step {step}")), "{text}");
        assert!(text.contains("complete = false"), "{text}");
        if how == "hook" {
            assert_eq!(step, 33);
            assert!(message.contains("injected failure"), "{message}");
        } else {
            assert!(
                message.contains("CUDA_ERROR_ILLEGAL_ADDRESS")
                    && message.contains("the GPU failed while"),
                "{message}"
            );
            assert!(step > 5 && step < 60, "failed in step {step}");
        }
        assert_eq!(summary.steps_done, step - 1);
        assert!(!summary.complete);
        // The file is valid, says it is incomplete, and holds what was written: each series a
        // prefix of the CPU run's.
        let got = h5_contents(&path);
        assert_eq!(got["@complete"], vec![0.0]);
        assert_eq!(got["@steps_done"], vec![(step - 1) as f64]);
        let rows = got["probes/a/Ez"].len();
        assert!(
            rows > 0 && rows < step,
            "{rows} probe rows before step {step}"
        );
        for (k, g) in &got {
            if k.starts_with('@') || k.starts_with("flux/") {
                continue;
            }
            let w = &want[k];
            assert!(g.len() <= w.len());
            assert_eq!(g[..], w[..g.len()], "{how}: {k}");
        }
        assert!(!got["snapshots/ez/Ez"].is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One-way plane waves along x on 3 slabs: a +x sheet whose electric plane opens slab 1 and
/// whose magnetic plane closes slab 0, a -x sheet inside slab 1, and a -y sheet across every
/// slab, through glass. The host kernels (magnetic sheets injected by `inject_source` in the H
/// phase) give the CPU backend's fields bit for bit, on 1 and 3 slabs, f32 and f64.
#[test]
fn host_kernels_match_cpu_bit_for_bit_with_one_way_plane_waves_on_slab_boundaries() {
    const SCENE: &str = r#"
[simulation]
name = "huygens"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 6.0, 5.0]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "periodic" }
x_min = { type = "pml", cells = 4 }
x_max = { type = "pml", cells = 4 }
[materials]
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "glass"
center = [6.0, 0.0, 0.0]
size = [4.0, 6.0, 5.0]
[[source]]
type = "plane_wave"
direction = "+x"
polarization = "Ez"
position = -4.0
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }
[[source]]
type = "plane_wave"
direction = "-x"
polarization = "Ey"
position = 2.0
amplitude = 0.5
waveform = { type = "ricker", frequency = 2.0e10 }
[[source]]
type = "plane_wave"
direction = "-y"
polarization = "Ex"
position = 1.0
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }
[[monitor]]
type = "probe"
name = "p"
position = [0.3, 0.2, -0.4]
components = ["Ez", "Hy", "Ex"]
"#;
    let _guard = serial();
    for precision in [Precision::F32, Precision::F64] {
        let model = model(SCENE, precision.name(), 30);
        let s = &model.sources[0];
        let ranges = split_even(model.grid.shape[0], 3);
        assert_eq!(s.cells[0][0], ranges[1].x0, "the E sheet opens slab 1");
        assert_eq!(
            s.magnetic.as_ref().unwrap().cells[0][0],
            ranges[0].x1 - 1,
            "the H sheet closes slab 0"
        );
        for layout in [ONE, THREE_ON_ONE] {
            let (want, got, log) = match precision {
                Precision::F32 => {
                    let (g, l) = host_trace::<f32>(&model, layout);
                    (cpu_trace::<f32>(&model), g, l)
                }
                Precision::F64 => {
                    let (g, l) = host_trace::<f64>(&model, layout);
                    (cpu_trace::<f64>(&model), g, l)
                }
            };
            // Electric and magnetic sheets each launched at least once per step.
            assert!(log.launches["inject_source"] >= 6 * 30);
            assert!(
                got.fields == want.fields && got.probes == want.probes,
                "{} {layout:?}: host kernels differ from the CPU backend",
                precision.name()
            );
            assert!(want.fields.iter().flatten().any(|v| *v != 0.0));
        }
    }
}

/// The ferrite line of [`MATERIALS_SCENE`], for the variants below.
const FERRITE: &str = "ferrite = { epsilon = 2.0, mu = 4.0, magnetic_conductivity = 1.0e4 }";

/// [`MATERIALS_SCENE`] with the ferrite made a plain dielectric: poles, no H material ids.
fn dispersive_only() -> String {
    MATERIALS_SCENE.replace(FERRITE, "ferrite = { epsilon = 2.0 }")
}

/// [`MATERIALS_SCENE`] with the metal and water made plain dielectrics: H material ids, no
/// dispersive pass.
fn magnetic_only() -> String {
    MATERIALS_SCENE
        .replace(
            r#"metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }], lorentz = [{ delta_epsilon = 1.0, frequency = 1.5e10, damping = 2.0e9 }] }"#,
            "metal = { epsilon = 3.0 }",
        )
        .replace(
            r#"water = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }"#,
            "water = { epsilon = 4.9, conductivity = 0.3 }",
        )
}

/// Compare the host engine with the CPU backend on `scene` in both precisions, on 1 and 3
/// slabs (and 3 slabs over 2 GPUs staged through pinned memory), every field bit for bit; the
/// dispersive launches (per step and slab: one per group with cells in the planes run) as
/// `dispersive` says, the fields inside the materials not all zero.
fn compare_materials(scene: &str, steps: usize, dispersive: bool, magnetic: bool) {
    let across = Layout {
        slabs: 3,
        gpus: 2,
        peer: false,
        staged: false,
        reads: Reads::Queued,
        lag: 0,
    };
    for layout in [ONE, THREE_ON_ONE, across] {
        for precision in [Precision::F32, Precision::F64] {
            let _guard = serial();
            let m = model(scene, precision.name(), steps);
            assert_eq!(m.materials.any_dispersive(), dispersive);
            assert_eq!(m.materials.any_magnetic(), magnetic);
            if dispersive {
                assert!(
                    paints_a_series_mixture(&m),
                    "the water ball's surface is smoothed"
                );
            }
            let (want, got, log) = match precision {
                Precision::F32 => {
                    let (g, l) = host_trace::<f32>(&m, layout);
                    (cpu_trace::<f32>(&m), g, l)
                }
                Precision::F64 => {
                    let (g, l) = host_trace::<f64>(&m, layout);
                    (cpu_trace::<f64>(&m), g, l)
                }
            };
            let what = format!("{} {} {layout:?}", m.name, precision.name());
            assert_identical(&got, &want, &what);
            let launches = log.launches.get("dispersive").copied().unwrap_or(0);
            if dispersive {
                // Every step runs the pass on each group at least once (more where a group
                // has cells on both boundary and interior planes).
                assert!(launches >= steps, "{what}: {launches} dispersive launches");
            } else {
                assert_eq!(launches, 0, "{what}: no dispersive groups");
            }
            // The probes inside the water box and the ferrite see the wave.
            assert!(
                want.probes.iter().all(|p| p.iter().any(|v| *v != 0.0)),
                "{what}: a probe saw nothing"
            );
        }
    }
}

/// True when some E cell of `m` is a series mixture (a smoothed dispersive surface).
fn paints_a_series_mixture(m: &Model) -> bool {
    let [nx, ny, nz] = m.grid.shape;
    let mut ids = vec![0u8; nx * ny * nz];
    [Component::Ex, Component::Ey, Component::Ez]
        .iter()
        .any(|&c| {
            m.paint_materials(c, 0, nx, &mut ids);
            ids.iter()
                .any(|&id| !m.materials.materials[id as usize].series.is_empty())
        })
}

#[test]
fn host_kernels_match_cpu_with_drude_lorentz_debye_and_magnetic_materials() {
    compare_materials(MATERIALS_SCENE, 60, true, true);
}

#[test]
fn host_kernels_match_cpu_with_dispersive_materials_only() {
    compare_materials(&dispersive_only(), 60, true, false);
}

#[test]
fn host_kernels_match_cpu_with_a_lossy_magnetic_material_in_the_cpml() {
    compare_materials(&magnetic_only(), 60, false, true);
}

/// The dispersive pass changes the fields: the same scene with the metal's and the water's
/// poles and without them differ (so the bit-for-bit comparisons above test the pass, not
/// two engines that both skip it), and the run with poles stays finite.
#[test]
fn host_dispersive_pass_changes_the_fields() {
    let _guard = serial();
    let with = model(MATERIALS_SCENE, "f64", 60);
    let without = model(&magnetic_only(), "f64", 60);
    let (a, _) = host_trace::<f64>(&with, THREE_ON_ONE);
    let (b, _) = host_trace::<f64>(&without, THREE_ON_ONE);
    assert!(a.fields.iter().flatten().all(|v| v.is_finite()));
    assert_ne!(a.fields, b.fields);
}

#[test]
fn host_engine_allocates_what_it_counts_with_dispersive_and_magnetic_materials() {
    let _guard = serial();
    let across = Layout {
        slabs: 3,
        gpus: 2,
        peer: false,
        staged: false,
        reads: Reads::Queued,
        lag: 0,
    };
    for scene in [
        MATERIALS_SCENE.to_string(),
        dispersive_only(),
        magnetic_only(),
    ] {
        for l in [ONE, THREE_ON_ONE, across] {
            check_engine_allocation::<f32>(&scene, l);
            check_engine_allocation::<f64>(&scene, l);
        }
        // And the categories: the dispersive arrays and the H ids are there when the
        // materials need them, and the CPU backend counts the same dispersive bytes.
        let m = model(&scene, "f32", 10);
        let ranges = split_even(m.grid.shape[0], 3);
        let dev = HostDevice::new(Precision::F32, 1, false);
        let b = CudaEngine::<HostDevice, f32>::new(
            dev,
            &m,
            &ranges,
            &[0, 0, 0],
            EngineOptions::default(),
            "host",
        )
        .unwrap();
        let cpu = yee::backend::cpu::CpuBackend::<f32>::new(&m, &ranges);
        let (a, c) = (b.allocation(), cpu.allocation());
        assert_eq!(a.dispersive, c.dispersive, "{}", m.name);
        assert_eq!(a.dispersive > 0, m.materials.any_dispersive());
        let [nx, ny, nz] = m.grid.shape;
        let per_component = (nx * ny * nz) as u64;
        let components = if m.materials.any_magnetic() { 6 } else { 3 };
        assert_eq!(a.materials, components * per_component);
    }
}

/// The scene resolver refuses more than `MAX_POLES` poles per material; the engine checks
/// again (a model built in code skips the resolver), here with a ninth pole added by hand.
#[test]
fn host_engine_refuses_a_material_with_more_poles_than_the_kernel_takes() {
    let _guard = serial();
    let poles: Vec<String> = (0..8)
        .map(|i| format!("{{ delta_epsilon = 1.0, relaxation_time = {}e-11 }}", i + 1))
        .collect();
    let scene = MATERIALS_SCENE.replace(
        r#"debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }]"#,
        &format!("debye = [{}]", poles.join(", ")),
    );
    let mut m = model(&scene, "f32", 1);
    let water = m.materials.id("water").expect("water") as usize;
    let extra = m.materials.materials[water].poles[0];
    m.materials.materials[water].poles.push(extra);
    let ranges = split_even(m.grid.shape[0], 1);
    let err = CudaEngine::<HostDevice, f32>::new(
        HostDevice::new(Precision::F32, 1, false),
        &m,
        &ranges,
        &[0],
        EngineOptions::default(),
        "host",
    )
    .err()
    .expect("nine poles are refused");
    let text = err.to_string();
    assert!(
        text.contains("`water` has 9 poles") && text.contains("at most 8"),
        "{text}"
    );
}

/// A 2-D grid (one cell along z, periodic z faces), for the CPU backend's flat-plane update
/// (its loop runs along y when z has one cell): PML on x and y max, a PMC y minimum (the mirror
/// below y = 0), a conductor, a Drude metal and a lossy ferrite, and sources on Ez (TM) and Ex
/// (TE) so that all six components move.
const FLAT_SCENE: &str = r#"
[simulation]
name = "flat"
length_unit = "mm"
cell_size = 1.0
size = [40.0, 32.0, 1.0]
steps = STEPS
courant = 0.99
precision = "PRECISION"

[boundaries]
default = { type = "pml", cells = 6 }
y_min = { type = "pmc" }
z_min = { type = "periodic" }
z_max = { type = "periodic" }

[materials]
lossy = { epsilon = 3.0, conductivity = 0.05 }
metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }] }
ferrite = { epsilon = 2.0, mu = 3.0, magnetic_conductivity = 2.0e3 }

[[geometry]]
shape = "cylinder"
material = "lossy"
center = [-8.0, 2.0, 0.0]
radius = 5.0
height = 10.0
axis = "z"

[[geometry]]
shape = "box"
material = "metal"
center = [6.0, -4.0, 0.0]
size = [6.0, 8.0, 10.0]

[[geometry]]
shape = "box"
material = "ferrite"
center = [14.0, 10.0, 0.0]
size = [10.0, 8.0, 10.0]

[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 3.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }

[[source]]
type = "dipole"
component = "Ex"
position = [-3.0, -6.0, 0.0]
waveform = { type = "ricker", frequency = 2.5e10 }

[[monitor]]
type = "probe"
name = "p"
position = [4.0, 1.0, 0.0]
components = ["Ez", "Ex", "Hy", "Hz"]
"#;

#[test]
fn host_kernels_match_cpu_on_a_flat_grid_with_one_cell_along_z() {
    compare::<f32>(FLAT_SCENE, 60, ONE);
    compare::<f64>(FLAT_SCENE, 60, THREE_ON_ONE);
    // Periodic y too (the wrap of the y neighbour in the flat loop).
    let periodic = FLAT_SCENE.replace(
        "y_min = { type = \"pmc\" }",
        "y_min = { type = \"periodic\" }\ny_max = { type = \"periodic\" }",
    );
    compare::<f32>(&periodic, 60, THREE_ON_ONE);
    // Without a magnetic material the flat H update takes its own loop (no H material ids).
    let plain = FLAT_SCENE.replace(
        "ferrite = { epsilon = 2.0, mu = 3.0, magnetic_conductivity = 2.0e3 }",
        "ferrite = { epsilon = 2.0 }",
    );
    compare::<f32>(&plain, 60, ONE);
    compare::<f64>(
        &periodic.replace(", mu = 3.0, magnetic_conductivity = 2.0e3", ""),
        60,
        THREE_ON_ONE,
    );
    // A magnetic z minimum and an electric z maximum (PMC is a symmetry plane, on minimum
    // faces only): Ex and Ey stay free on the one z plane, and the flat loops take the
    // mirrored H below the z face and zero E beyond it, which periodic z faces never reach
    // (mutants of those terms in update.rs survived every other test).
    let z_walls = |lo: &str, hi: &str| {
        let walls = format!("z_min = {{ type = \"{lo}\" }}\nz_max = {{ type = \"{hi}\" }}");
        let scene = FLAT_SCENE.replace(
            "z_min = { type = \"periodic\" }\nz_max = { type = \"periodic\" }",
            &walls,
        );
        assert_ne!(scene, FLAT_SCENE);
        scene
    };
    let pmc_z = z_walls("pmc", "pec");
    compare::<f32>(&pmc_z, 60, ONE);
    compare::<f64>(&pmc_z, 60, THREE_ON_ONE);
    compare::<f32>(
        &pmc_z.replace(", mu = 3.0, magnetic_conductivity = 2.0e3", ""),
        60,
        ONE,
    );
    // (Electric walls on both z faces leave only Ez, Hx and Hy: Ex and Ey lie on the wall,
    // which zeroes whatever their z terms compute, so that grid checks no term of these.)
}

/// The TF/SF pass on the host kernels (`tfsf_incident` once per half step on each slab's copy
/// of the 1-D grid, `tfsf_correct` per group and plane range) gives the CPU backend's six
/// fields and probe series bit for bit: axial (+x, Ez) and oblique ([1, 2, 3] with
/// [-2, 1, 0]), f32 and f64, 1 and 3 slabs; the field outside the box (the probe) is not zero,
/// so the objects inside scatter and the comparison sees the corrections.
#[test]
fn host_kernels_match_cpu_bit_for_bit_with_a_tfsf_box_across_slabs() {
    for (dir, pol) in [
        ("\"+x\"", "\"Ez\""),
        ("[1.0, 2.0, 3.0]", "[-2.0, 1.0, 0.0]"),
    ] {
        let scene = TFSF_SCENE
            .replace("DIRECTION", dir)
            .replace("POLARIZATION", pol);
        for layout in [ONE, THREE_ON_ONE] {
            let log = compare::<f32>(&scene, 50, layout);
            assert!(log.launches["tfsf_incident"] >= 100 * layout.slabs.min(3));
            assert!(log.launches["tfsf_correct"] >= 100);
            compare::<f64>(&scene, 50, layout);
        }
        let _guard = serial();
        let m = model(&scene, "f64", 50);
        let want = cpu_trace::<f64>(&m);
        assert!(
            want.probes.iter().all(|p| p.iter().any(|v| *v != 0.0)),
            "{dir}: nothing scattered out of the box"
        );
    }
}

/// The conformal PEC pass on the host kernels (`conformal_h`, one launch per plane range over
/// the cut faces of Hx, Hy and Hz together) gives the CPU backend's fields and probe series
/// bit for bit: [`CONFORMAL_SCENE`], a cylinder cavity whose wall, off the grid lines, cuts
/// faces of all three H components, 300 steps, f32 and f64, on 1 and 3 slabs (the slab
/// boundaries cross the wall, so the pass runs on the planes the halo copies read and on the
/// rest apart).
#[test]
fn host_kernels_match_cpu_bit_for_bit_with_conformal_pec_cut_faces() {
    {
        let _guard = serial();
        let m = model(CONFORMAL_SCENE, "f32", 1);
        let c = m.conformal();
        assert!(c.face_count() > 0, "the cylinder cuts faces");
        assert!(
            c.faces.iter().all(|f| !f.is_empty()),
            "faces of Hx, Hy and Hz are cut"
        );
    }
    for layout in [ONE, THREE_ON_ONE] {
        let log = compare::<f32>(CONFORMAL_SCENE, 300, layout);
        if layout.slabs == 1 {
            // One slab between PEC x faces: no halo copies, one launch a step.
            assert_eq!(log.launches["conformal_h"], 300);
        } else {
            assert!(log.launches["conformal_h"] > 300);
        }
        compare::<f64>(CONFORMAL_SCENE, 300, layout);
    }
    // Blocks and threads in reverse order change nothing: no face reads what another writes.
    let _guard = serial();
    let m = model(CONFORMAL_SCENE, "f32", 300);
    let want = cpu_trace::<f32>(&m);
    let ranges = split_even(m.grid.shape[0], 3);
    let dev = HostDevice::with_kernels(host_kernels_reversed(Precision::F32), 1, false);
    let mut b = CudaEngine::<HostDevice, f32>::new(
        dev,
        &m,
        &ranges,
        &[0, 0, 0],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    assert_identical(&drive(&m, &mut b, &ranges), &want, "threads reversed");
}

/// The conformal pass changes the fields: the cavity with conformal walls and with staircased
/// ones (`conformal = false`) differ after the same steps (so the comparisons above see the
/// pass's arithmetic, not two engines that both skip it), and stays finite.
#[test]
fn host_conformal_pass_changes_the_fields() {
    let _guard = serial();
    let staircase = CONFORMAL_SCENE.replace(
        "metal = { pec = true }",
        "metal = { pec = true, conformal = false }",
    );
    assert_ne!(staircase, CONFORMAL_SCENE);
    let with = model(CONFORMAL_SCENE, "f64", 100);
    let without = model(&staircase, "f64", 100);
    assert_eq!(without.conformal().face_count(), 0);
    let (a, _) = host_trace::<f64>(&with, THREE_ON_ONE);
    let (b, _) = host_trace::<f64>(&without, THREE_ON_ONE);
    assert!(a.fields.iter().flatten().all(|v| v.is_finite()));
    assert_ne!(a.fields, b.fields);
}

/// The engine allocates the cut faces' tables (a u32 offset and four weights per face, once
/// per slab) as it counts them, under `materials` as the plan does, on 1 and 3 slabs and
/// across two GPUs.
#[test]
fn host_engine_allocates_the_conformal_faces_as_the_plan_counts_them() {
    let _guard = serial();
    let across = Layout {
        slabs: 3,
        gpus: 2,
        peer: false,
        staged: false,
        reads: Reads::Queued,
        lag: 0,
    };
    for l in [ONE, THREE_ON_ONE, across] {
        check_engine_allocation::<f32>(CONFORMAL_SCENE, l);
        check_engine_allocation::<f64>(CONFORMAL_SCENE, l);
    }
    let m = model(CONFORMAL_SCENE, "f64", 10);
    let faces = m.conformal().face_count() as u64;
    let ranges = split_even(m.grid.shape[0], 3);
    let b = CudaEngine::<HostDevice, f64>::new(
        HostDevice::new(Precision::F64, 1, false),
        &m,
        &ranges,
        &[0, 0, 0],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    let [nx, ny, nz] = m.grid.shape;
    assert_eq!(
        b.allocation().materials,
        3 * (nx * ny * nz) as u64 + faces * (4 + 4 * 8),
        "ids, and per cut face its offset and weights"
    );
}

/// [`graded_pml_scene`], and [`PERIODIC_SCENE`] refined along z only around its
/// slab (the plane wave's sheets and the PMC mirror on a graded axis).
fn graded_scenes() -> [String; 2] {
    let pml = graded_pml_scene();
    let periodic = PERIODIC_SCENE.replace(
        "[materials]\n",
        r#"[[refine]]
box = { center = [0.0, 0.0, 3.0], size = [18.0, 12.0, 8.0] }
cell_size = [1.0, 1.0, 0.5]

[materials]
"#,
    );
    [pml, periodic]
}

#[test]
fn host_kernels_match_cpu_bit_for_bit_on_graded_meshes() {
    for (n, scene) in graded_scenes().iter().enumerate() {
        let m = model(scene, "f32", 1);
        let graded: Vec<bool> = m.grid.lines.iter().map(|l| l.is_some()).collect();
        assert_eq!(
            graded,
            if n == 0 {
                vec![true, true, true]
            } else {
                vec![false, false, true]
            }
        );
        if n == 0 {
            assert!(m.materials.any_dispersive());
        }
        for layout in [ONE, THREE_ON_ONE] {
            compare::<f32>(scene, 30, layout);
            compare::<f64>(scene, 30, layout);
        }
    }
}

#[test]
fn host_face_dfts_match_cpu_bit_for_bit_on_a_graded_mesh() {
    // BOX_SCENE refined to half cells around its glass block: every face of the flux and
    // far-field boxes has graded in-plane axes, and some of the flux box's faces lie in the
    // grading (H interpolated with unequal weights by `flux_dft`).
    let scene = BOX_SCENE.replace(
        "[materials]\n",
        r#"[[refine]]
box = { center = [3.0, -1.0, 1.0], size = [4.0, 4.0, 3.0] }
cell_size = 0.5

[materials]
"#,
    );
    let m = model(&scene, "f64", 1);
    assert!(m.grid.lines.iter().all(|l| l.is_some()));
    let unequal = m.fluxes[0]
        .patches
        .iter()
        .filter(|p| yee::flux::h_weights(&m.grid, p) != [0.5, 0.5])
        .count();
    assert!(unequal > 0, "a face of the flux box lies in the grading");
    for layout in [ONE, THREE_ON_ONE] {
        compare::<f32>(&scene, 30, layout);
        compare::<f64>(&scene, 30, layout);
    }
}

/// `scene` with every flux and far-field monitor sampled every step (`decimation = 1`).
fn every_step(scene: &str) -> String {
    scene
        .replace("type = \"flux\"\n", "type = \"flux\"\ndecimation = 1\n")
        .replace(
            "type = \"far_field\"\n",
            "type = \"far_field\"\ndecimation = 1\n",
        )
}

/// The engine's planes for another process (the MPI ranks' halo exchange): `read_plane` gives
/// the CPU backend's plane bit for bit, and a plane `write_halo` puts in a slab's halo is the
/// one the next half step reads, as on the CPU. Both run 3 slabs of the PML scene for 25 steps;
/// then, after the H exchange of one more step, slab 1's left Hy and Hz halos are overwritten
/// with half the true planes in both, and E then reads them: every field still agrees.
#[test]
fn host_engine_reads_and_writes_halo_planes_as_the_cpu_backend() {
    use yee::decomp::{HaloPlan, HaloSide};
    use yee::model::Component;
    use yee::run::{magnetic_source_values, source_values};
    let _guard = serial();
    let model = model(PML_SCENE, "f32", 26);
    let ranges = split_even(model.grid.shape[0], 3);
    let halos = HaloPlan::new(&ranges, &model.boundaries);
    let mut cpu = yee::backend::cpu::CpuBackend::<f32>::new(&model, &ranges);
    let mut gpu = host_engine::<f32>(&model, 3, HostDevice::new(Precision::F32, 1, false));
    let (mut m, mut j) = (Vec::new(), Vec::new());
    let dt = model.grid.dt;
    macro_rules! both {
        ($b:ident => $e:expr) => {{
            {
                let $b = &mut cpu;
                $e;
            }
            {
                let $b = &mut gpu;
                $e;
            }
        }};
    }
    for n in 0..26 {
        magnetic_source_values(&model, n as f64 * dt, &mut m);
        source_values(&model, (n as f64 + 0.5) * dt, &mut j);
        both!(b => { b.update_h(&m); b.exchange(&halos.after_h); });
        if n == 25 {
            // Overwrite slab 1's left H halos (the planes its first E plane reads) in both.
            let plane = model.grid.shape[1] * model.grid.shape[2];
            for c in [Component::Hy, Component::Hz] {
                let mut p = vec![0f32; plane];
                cpu.read_plane(c, 0, ranges[1].x0 - 1, &mut p);
                p.iter_mut().for_each(|v| *v *= 0.5);
                assert!(
                    p.iter().any(|v| *v != 0.0),
                    "{c:?}: a plane with a field in it"
                );
                both!(b => b.write_halo(c, 1, HaloSide::Left, &p));
            }
        }
        both!(b => { b.update_e(&j); b.exchange(&halos.after_e); });
    }
    let plane = model.grid.shape[1] * model.grid.shape[2];
    for (s, r) in ranges.iter().enumerate() {
        for x in [r.x0, (r.x0 + r.x1) / 2, r.x1 - 1] {
            for c in Component::ALL {
                let (mut a, mut b) = (vec![0f32; plane], vec![1f32; plane]);
                cpu.read_plane(c, s, x, &mut a);
                gpu.read_plane(c, s, x, &mut b);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert!(bits(&a) == bits(&b), "slab {s}, x {x}, {c:?}");
            }
        }
    }
    let region = whole(&model);
    for c in Component::ALL {
        let (mut a, mut b) = (vec![0f32; region.len()], vec![0f32; region.len()]);
        cpu.gather(c, &region, &mut a);
        gpu.gather(c, &region, &mut b);
        assert!(a == b, "{c:?} after the written halos");
    }
    assert_eq!(gpu.failure(), None);
}

/// Launches per step of the host engine over `steps` steps of `model` on `slabs` slabs of one
/// emulated GPU, leaving out those the plan does not count (snapshot gathers, flux DFTs, NaN
/// checks, the PMC mirror's negated copies).
fn engine_launches_per_step(model: &Model, slabs: usize, steps: usize) -> f64 {
    let ranges = split_even(model.grid.shape[0], slabs);
    let dev = HostDevice::new(model.precision, 1, false);
    let mut b = CudaEngine::<HostDevice, f32>::new(
        dev,
        model,
        &ranges,
        &vec![0; ranges.len()],
        EngineOptions::default(),
        "host",
    )
    .expect("host engine");
    drive_with(model, &mut b, &ranges, Reads::Queued);
    let log = b.device().log.borrow();
    let uncounted = [
        "snapshot_gather",
        "flux_dft",
        "flux_rows",
        "check_finite",
        "copy_negated",
    ];
    let n: usize = log
        .launches
        .iter()
        .filter(|(k, _)| !uncounted.contains(k))
        .map(|(_, n)| n)
        .sum();
    n as f64 / steps as f64
}

#[test]
fn the_plans_kernel_launches_per_step_are_the_engines() {
    // The plan's GPU time counts each launch (a small grid's step is mostly launches): its
    // count per slab must be what the engine launches, on scenes with every kind of pass, one
    // slab and several (a pass then runs on the planes the halo copies read and on the rest
    // apart). Exact on one slab (periodic and PMC x faces included); on several it may count
    // up to a quarter more, never fewer: it takes a dispersive group over every plane from its
    // first cell to its last and a TF/SF group over every plane of the slab with points (the x
    // faces' groups lie on one plane each), so it errs on the slow side.
    let tfsf = TFSF_SCENE
        .replace("DIRECTION", "[1.0, 2.0, 3.0]")
        .replace("POLARIZATION", "[-2.0, 1.0, 0.0]");
    let steps = 6;
    let _guard = serial();
    let models = [
        PML_SCENE,
        MATERIALS_SCENE,
        PERIODIC_SCENE,
        PMC_SCENE,
        &tfsf,
        CONFORMAL_SCENE,
    ]
    .map(|scene| model(scene, "f32", steps))
    .into_iter()
    // The lumped port and elements: a `lumped` launch per cell pass and slab part, and the
    // probe gather of the terminals' samples. The surface ports: their own launches, and an
    // E half step that is not split at the slabs' boundary planes.
    .chain([lumped_model("f32", steps), ports_model("f32", steps)]);
    for m in models {
        let layout = yee::plan::Layout::of(&m);
        for slabs in [1, 3] {
            let ranges = split_even(m.grid.shape[0], slabs);
            let planned: u64 = ranges
                .iter()
                .map(|r| layout.gpu_launches_per_step(*r))
                .sum();
            let got = engine_launches_per_step(&m, slabs, steps);
            let what = format!("{} on {slabs} slab(s)", m.name);
            assert!(
                planned as f64 >= got,
                "{what}: planned {planned}, engine {got}"
            );
            if slabs == 1 {
                assert_eq!(planned as f64, got, "{what}");
            } else {
                assert!(
                    planned as f64 <= 1.25 * got,
                    "{what}: planned {planned}, engine {got}"
                );
            }
        }
    }
}

/// Mode sources on a 2-D grid (one periodic cell along z): the fundamental +x mode of a silicon
/// guide along x (E along z), whose sheets lie inside one slab of three, and the second -y mode
/// of a guide along y (E in the plane), whose sheets (normal to y) span every slab, so that each
/// slab holds a part of their weights and every field component is driven. PML elsewhere.
const MODE_SCENE: &str = r#"
[simulation]
name = "mode_src"
length_unit = "um"
cell_size = 0.05
size = [2.0, 1.5, 0.05]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 8 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
si = { epsilon = 12.0 }
[[geometry]]
shape = "box"
material = "si"
center = [0.0, 0.0, 0.0]
size = [20.0, 0.3, 20.0]
[[geometry]]
shape = "box"
material = "si"
center = [0.3, 0.0, 0.0]
size = [0.3, 20.0, 20.0]
[[source]]
type = "mode"
box = { center = [-0.5, 0.0, 0.0], size = [0.0, 1.5, 0.05] }
direction = "+x"
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 4.0e13 }
[[source]]
type = "mode"
box = { center = [0.0, 0.35, 0.0], size = [1.9, 0.0, 0.05] }
direction = "-y"
mode = 1
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 4.0e13 }
[[monitor]]
type = "probe"
name = "p"
position = [0.4, -0.1, 0.0]
components = ["Ex", "Ey", "Ez", "Hz"]
"#;

/// [`MODE_SCENE`] in `precision` over `steps`, its modes solved (the sources' weights).
fn mode_model(precision: &str, steps: usize) -> Model {
    let m = model(MODE_SCENE, precision, steps);
    yee::modes::prepare(&m).unwrap();
    m
}

/// Mode sources on the host kernels (`inject_source` with a weight per cell, electric and
/// magnetic sheets) give the CPU backend's fields and probe series bit for bit, f32 and f64, on
/// 1 and 3 slabs: [`MODE_SCENE`], whose -y sheets cross both slab boundaries (each slab's
/// launches start at their own weight) and whose +x sheets sit inside the first slab.
#[test]
fn host_kernels_match_cpu_bit_for_bit_with_mode_sources_across_slabs() {
    let _guard = serial();
    for precision in [Precision::F32, Precision::F64] {
        let m = mode_model(precision.name(), 60);
        let nx = m.grid.shape[0];
        let ranges = split_even(nx, 3);
        let across = m
            .sources
            .iter()
            .position(|s| s.mode.is_some() && s.cells[1][1] - s.cells[1][0] == 1)
            .expect("a sheet normal to y");
        let cells = m.sources[across].cells;
        assert!(
            cells[0][0] < ranges[0].x1 && ranges[2].x0 < cells[0][1],
            "spans 3 slabs"
        );
        // The weights are a profile, not a constant (so a uniform injection would differ).
        let w = m.sheet_weights(across, false, 0, nx).unwrap();
        assert!(w.iter().any(|v| *v != w[0]), "a uniform sheet");
        let sheets = m.sources.len() + m.magnetic_sources_in(0, nx).len();
        for layout in [ONE, THREE_ON_ONE] {
            let log = match precision {
                Precision::F32 => mode_against_cpu::<f32>(&m, layout),
                Precision::F64 => mode_against_cpu::<f64>(&m, layout),
            };
            // Every sheet, electric and magnetic, launched at least once per step.
            assert!(log.launches["inject_source"] >= sheets * 60);
        }
    }
}

/// The host engine's trace of `m` (modes solved) on `layout` against the CPU backend's, bit for
/// bit; the engine's launch log.
fn mode_against_cpu<T: Real>(m: &Model, layout: Layout) -> Log {
    let want = cpu_trace::<T>(m);
    let (got, log) = host_trace::<T>(m, layout);
    let what = format!("{} {} {layout:?}", m.name, T::PRECISION.name());
    assert_identical(&got, &want, &what);
    log
}

/// The engine allocates each slab's part of the mode sources' weights (one table per sheet in
/// the slab, in the run's precision) as the plan counts them, under `sources`: the device's own
/// count of its allocations, the engine's categories and the plan's GPU slabs agree, on 1 and 3
/// slabs and across two GPUs.
#[test]
fn host_engine_allocates_the_mode_sources_weights_as_the_plan_counts_them() {
    let _guard = serial();
    let across = Layout {
        gpus: 2,
        ..THREE_ON_ONE
    };
    for l in [ONE, THREE_ON_ONE, across] {
        mode_allocation::<f32>(l);
        mode_allocation::<f64>(l);
    }
}

fn mode_allocation<T: Real>(l: Layout) {
    let real = std::mem::size_of::<T>();
    let m = mode_model(T::PRECISION.name(), 10);
    let what = format!("{} {l:?}", T::PRECISION.name());
    let (got, a) = engine_bytes::<T>(&m, l);
    assert_eq!(
        (got - uncounted_bytes(&m, l, real)) as u64,
        a.total(),
        "{what}: the engine's count of its allocations"
    );
    let ranges = split_even(m.grid.shape[0], l.slabs);
    let layout = yee::plan::Layout::of(&m).with_precision(T::PRECISION);
    let mut planned = yee::backend::Allocation::default();
    for r in &ranges {
        planned.add(&layout.gpu_slab_bytes(*r));
    }
    // (The probe's ring and mirror are monitor bytes, which the plan counts apart.)
    let slabs = yee::backend::Allocation { monitors: 0, ..a };
    assert_eq!(slabs, planned, "{what}: the plan's GPU slabs");
    assert_eq!(a, estimate(&m, &ranges, real), "{what}: the estimate");
    // No TF/SF source: the sources are the weights alone, every sheet's cells once.
    let values = m.sheet_weight_values(0, m.grid.shape[0]);
    assert!(values > 0);
    assert_eq!(a.sources, values * real as u64, "{what}: the weights");
}

/// Two engines' states are the same, bit for bit: the fields and every registered array by
/// name (the step each engine counts is left out: a CPU backend stepped by hand counts none).
fn assert_same_state<T: Real>(
    got: &yee::backend::State<T>,
    want: &yee::backend::State<T>,
    what: &str,
) {
    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
    for (c, (g, w)) in got.fields.iter().zip(&want.fields).enumerate() {
        assert!(bits(g) == bits(w), "{what}: field {c}");
    }
    let names = |s: &yee::backend::State<T>| -> Vec<String> {
        s.arrays.iter().map(|a| a.name.clone()).collect()
    };
    assert_eq!(names(got), names(want), "{what}: the arrays");
    for (g, w) in got.arrays.iter().zip(&want.arrays) {
        assert_eq!(g.spread, w.spread, "{what}: {}", g.name);
        assert!(bits(&g.values) == bits(&w.values), "{what}: {}", g.name);
    }
}

/// The global x planes [x0, x1) of every cell pass of `m`.
fn cell_pass_planes(m: &Model) -> Vec<[usize; 2]> {
    m.cell_passes.iter().map(|p| p.cells()[0]).collect()
}

/// The host engine on `ranges` (one emulated GPU of `kernels`), stepped through `model` with
/// queued reads: its trace, final state and launch log.
fn host_trace_on<T: Real>(
    model: &Model,
    ranges: &[yee::decomp::SlabRange],
    kernels: &'static HostKernels,
) -> (Trace, yee::backend::State<T>, Log) {
    let one_gpu = Placed {
        gpu_of: vec![0; ranges.len()],
        peer: false,
        staged: false,
    };
    host_trace_placed(model, ranges, kernels, &one_gpu)
}

/// Where [`host_trace_placed`] puts the slabs: each slab's GPU, whether the GPUs have peer
/// access, and whether every copy between slabs goes through pinned memory.
struct Placed {
    gpu_of: Vec<usize>,
    peer: bool,
    staged: bool,
}

/// [`host_trace_on`] with the slabs on the GPUs `placed` says; the engine allocates what
/// the estimate counts and, between GPUs, the surface ports' trades.
fn host_trace_placed<T: Real>(
    model: &Model,
    ranges: &[yee::decomp::SlabRange],
    kernels: &'static HostKernels,
    placed: &Placed,
) -> (Trace, yee::backend::State<T>, Log) {
    let gpus = placed.gpu_of.iter().max().map_or(1, |g| g + 1);
    let dev = HostDevice::with_kernels(kernels, gpus, placed.peer);
    let mut b = CudaEngine::<HostDevice, T>::new(
        dev,
        model,
        ranges,
        &placed.gpu_of,
        EngineOptions {
            staged_halos: placed.staged,
        },
        "host",
    )
    .expect("host engine");
    let real = std::mem::size_of::<T>();
    let mut want = estimate(model, ranges, real);
    want.dispersive += trade_bytes(&model.surface_ports(), ranges, &placed.gpu_of, real);
    assert_eq!(b.allocation(), want);
    let trace = drive_with(model, &mut b, ranges, Reads::Queued);
    let log = b.device().log.borrow().clone();
    (trace, b.export_state().expect("the state"), log)
}

/// Slab ranges of `nx` planes cut at `cuts`.
fn cut_at(nx: usize, cuts: &[usize]) -> Vec<yee::decomp::SlabRange> {
    let mut at = vec![0];
    at.extend_from_slice(cuts);
    at.push(nx);
    at.windows(2)
        .map(|w| yee::decomp::SlabRange { x0: w[0], x1: w[1] })
        .collect()
}

fn lumped_against_cpu<T: Real>() {
    let m = lumped_model(T::PRECISION.name(), 300);
    let nx = m.grid.shape[0];
    let planes = cell_pass_planes(&m);
    // The port and the series element on plane 10, the shunt on planes 13 to 15, its rows
    // on plane 15 (in the glass) not those on 13 and 14.
    assert_eq!(planes, [[10, 11], [10, 11], [13, 16]]);
    let shunt = m.cell_passes[2].kernel().unwrap();
    let rows = shunt.lumped().unwrap().coefficients;
    assert_eq!(rows.len(), 18);
    assert!(rows[..12].iter().all(|r| *r == rows[0]) && rows[12] != rows[0]);
    let one = split_even(nx, 1);
    let mut cpu = yee::backend::cpu::CpuBackend::<T>::new(&m, &one);
    let want = drive(&m, &mut cpu, &one);
    let want_state = cpu.export_state().unwrap();
    // The elements' state is in it, and moved.
    for name in [
        "port.feed.state",
        "element.rlc.state",
        "element.shunt.state",
    ] {
        let a = want_state.arrays.iter().find(|a| a.name == name);
        let a = a.unwrap_or_else(|| panic!("no {name}"));
        assert!(a.values.iter().any(|v| *v != T::ZERO), "{name} stayed zero");
    }
    // One slab; three with the port's and the series element's plane first in its slab (the
    // plane the E halo copies read: the cells pass runs there before the copies, on the rest
    // after) and last, the shunt's box split between two slabs either way (each slab its own
    // part of the state and of the coefficient rows).
    for cuts in [vec![], vec![10, 14], vec![11, 15]] {
        let ranges = cut_at(nx, &cuts);
        let what = format!("lumped {} cut at {cuts:?}", T::PRECISION.name());
        let (got, state, log) = host_trace_on::<T>(&m, &ranges, host_kernels(T::PRECISION));
        assert_identical(&got, &want, &what);
        assert_same_state(&state, &want_state, &what);
        if cuts.is_empty() {
            // One slab between PEC x faces: a launch per cell pass and step, in the E half.
            assert_eq!(log.launches["lumped"], 3 * 300, "{what}");
        }
    }
    // Blocks and threads in reverse order change nothing: no cell reads what another writes.
    let reversed = host_kernels_reversed(T::PRECISION);
    let (got, state, _) = host_trace_on::<T>(&m, &cut_at(nx, &[10, 14]), reversed);
    assert_identical(&got, &want, "threads reversed");
    assert_same_state(&state, &want_state, "threads reversed");
}

/// The lumped kernel (a port's parallel R, a series RLC, a parallel RC) on the host engine is
/// the CPU backend's cells pass bit for bit: fields, probes (the terminals' voltage and current
/// samples among them), snapshots and the elements' state, f32 and f64, on one slab and on
/// three cut through the elements' planes.
#[test]
fn host_kernels_match_cpu_bit_for_bit_with_lumped_ports_and_elements() {
    let _guard = serial();
    lumped_against_cpu::<f32>();
    lumped_against_cpu::<f64>();
}

/// The lumped elements' state moves between the engines as the checkpoint does: the CPU to
/// step 120, the host engine (3 slabs cut at the elements' planes, 2 emulated GPUs) to 240,
/// the CPU again to 300, is the CPU all the way, bit for bit.
#[test]
fn host_engine_resumes_the_lumped_elements_state_of_the_cpu_and_back() {
    let _guard = serial();
    let m = lumped_model("f32", 300);
    let three = cut_at(m.grid.shape[0], &[10, 14]);
    let dev = HostDevice::new(Precision::F32, 2, true);
    assert_cpu_host_cpu_is_the_cpu(&m, [120, 120, 60], &three, &[0, 0, 1], dev);
}

/// The CPU (one slab) for `legs[0]` steps, the host engine on `dev` (slabs `ranges` on GPUs
/// `gpu_of`) for `legs[1]`, the CPU on 2 slabs for `legs[2]`, each state moved between them as
/// a checkpoint moves it: the CPU's state all the way, bit for bit.
fn assert_cpu_host_cpu_is_the_cpu(
    m: &Model,
    legs: [usize; 3],
    ranges: &[yee::decomp::SlabRange],
    gpu_of: &[usize],
    dev: HostDevice,
) {
    use yee::run::Stepper;
    let nx = m.grid.shape[0];
    let copies = |ranges: &[yee::decomp::SlabRange]| {
        let h = yee::decomp::HaloPlan::new(ranges, &m.boundaries);
        h.after_h
            .iter()
            .chain(&h.after_e)
            .cloned()
            .collect::<Vec<_>>()
    };
    let one = split_even(nx, 1);
    let mut cpu = yee::backend::cpu::CpuBackend::<f32>::new(m, &one);
    let mut s = Stepper::new(m, &mut cpu, &one);
    let mut states = Vec::new();
    for n in legs {
        for _ in 0..n {
            s.step();
        }
        states.push(s.backend.export_state().unwrap());
    }
    let mut gpu =
        CudaEngine::<HostDevice, f32>::new(dev, m, ranges, gpu_of, Default::default(), "host")
            .unwrap();
    gpu.import_state(&states[0], &copies(ranges)).unwrap();
    let mut s = Stepper::new(m, &mut gpu, ranges);
    s.resume_after(legs[0]);
    for _ in 0..legs[1] {
        s.step();
    }
    let mid = s.backend.export_state().unwrap();
    assert_same_state(&mid, &states[1], "the host engine after the CPU");
    let two = split_even(nx, 2);
    let mut cpu2 = yee::backend::cpu::CpuBackend::<f32>::new(m, &two);
    cpu2.import_state(&mid, &copies(&two)).unwrap();
    let mut s = Stepper::new(m, &mut cpu2, &two);
    s.resume_after(legs[0] + legs[1]);
    for _ in 0..legs[2] {
        s.step();
    }
    assert_same_state(
        &s.backend.export_state().unwrap(),
        &states[2],
        "the CPU after the host engine",
    );
}

/// Every dataset under /ports and /elements of a result file, complex values as (re, im).
fn terminal_contents(path: &std::path::Path) -> std::collections::BTreeMap<String, Vec<f64>> {
    let f = hdf5::File::open(path).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for top in ["ports", "elements"] {
        let g = f.group(top).unwrap_or_else(|e| panic!("{top}: {e}"));
        for name in g.member_names().unwrap() {
            let sub = g.group(&name).unwrap();
            for d in sub.member_names().unwrap() {
                let ds = sub.dataset(&d).unwrap();
                let values = match ds.read_raw::<f64>() {
                    Ok(v) => v,
                    Err(_) => ds
                        .read_raw::<yee::output::Complex>()
                        .unwrap()
                        .iter()
                        .flat_map(|c| [c.r, c.i])
                        .collect(),
                };
                out.insert(format!("{top}/{name}/{d}"), values);
            }
        }
    }
    out
}

/// The time loop on the host engine (3 slabs on 2 GPUs, cut at the elements' planes) writes the
/// CPU's file for a scene with a lumped port and elements: every probe and snapshot dataset and
/// the ports' and elements' series and spectra, bit for bit, f32 and f64.
#[test]
fn host_engine_time_loop_writes_the_cpus_ports_and_elements() {
    let _guard = serial();
    let dir = out_dir("lumped-file");
    for precision in [Precision::F32, Precision::F64] {
        let model = model(LUMPED_SCENE, precision.name(), 300);
        let (cpu_path, host_path) = (dir.join("cpu.h5"), dir.join("host.h5"));
        let ranges = cut_at(model.grid.shape[0], &[10, 14]);
        let opts = yee::run::RunOptions::new(host_path.clone());
        // Two emulated GPUs with peer access: slabs 0, 1 on the first, 2 on the second.
        fn engine<T: Real>(m: &Model, r: &[yee::decomp::SlabRange]) -> CudaEngine<HostDevice, T> {
            let dev = HostDevice::new(T::PRECISION, 2, true);
            CudaEngine::new(dev, m, r, &[0, 0, 1], EngineOptions::default(), "host").unwrap()
        }
        let r = match precision {
            Precision::F32 => {
                cpu_run::<f32>(&model, &cpu_path);
                let mut b = engine::<f32>(&model, &ranges);
                yee::run::run_backend(&model, &mut b, &ranges, 1, &opts, &mut yee::run::Quiet)
            }
            Precision::F64 => {
                cpu_run::<f64>(&model, &cpu_path);
                let mut b = engine::<f64>(&model, &ranges);
                yee::run::run_backend(&model, &mut b, &ranges, 1, &opts, &mut yee::run::Quiet)
            }
        };
        assert!(r.expect("host engine run").complete);
        let what = format!("{}, host engine against CPU", precision.name());
        assert_same_contents(&h5_contents(&host_path), &h5_contents(&cpu_path), &what);
        let (got, want) = (terminal_contents(&host_path), terminal_contents(&cpu_path));
        for key in [
            "ports/feed/voltage",
            "elements/rlc/current",
            "elements/shunt/power",
        ] {
            assert!(want.contains_key(key), "{key}: {:?}", want.keys());
        }
        assert_same_contents(&got, &want, &what);
        assert!(want["ports/feed/voltage"].iter().any(|v| *v != 0.0));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The lumped elements' device bytes: the state (as on the CPU) and a coefficient row of eight
/// reals per edge, under `passes`, in the engine's own count, its categories and the plan's GPU
/// slabs (also in `host_engine_allocates_what_it_counts_from_the_devices_own_allocations`).
#[test]
fn host_engine_allocates_the_lumped_elements_as_the_plan_counts_them() {
    let _guard = serial();
    for precision in [Precision::F32, Precision::F64] {
        let m = model(LUMPED_SCENE, precision.name(), 10);
        let p = precision.bytes() as u64;
        let edges = |name: &str| -> (u64, u64) {
            let pass = m.cell_passes.iter().find(|c| c.name() == name).unwrap();
            let c = pass.cells();
            let n: usize = (0..3).map(|a| c[a][1] - c[a][0]).product();
            (n as u64, pass.slots() as u64)
        };
        let passes: u64 = ["port.feed", "element.rlc", "element.shunt"]
            .iter()
            .map(|name| {
                let (n, slots) = edges(name);
                n * (slots + 8) * p
            })
            .sum();
        for slabs in [1, 3] {
            let ranges = split_even(m.grid.shape[0], slabs);
            let layout = yee::plan::Layout::of(&m).with_precision(precision);
            let planned: u64 = ranges
                .iter()
                .map(|r| layout.gpu_slab_bytes(*r).passes)
                .sum();
            assert_eq!(planned, passes, "{} on {slabs} slab(s)", precision.name());
            let got = match precision {
                Precision::F32 => estimate(&m, &ranges, 4).passes,
                Precision::F64 => estimate(&m, &ranges, 8).passes,
            };
            assert_eq!(got, passes);
        }
    }
}

/// The imaginary set's six components over the whole grid.
fn imaginary_fields<B: Backend>(
    pair: &yee::backend::bloch::BlochPair<B>,
    model: &Model,
) -> Vec<Vec<f64>> {
    let r = whole(model);
    Component::ALL
        .iter()
        .map(|&c| {
            let mut out = vec![B::Real::ZERO; r.len()];
            pair.imaginary().gather(c, &r, &mut out);
            out.iter().map(|v| v.to_f64()).collect()
        })
        .collect()
}

/// A Bloch pair of host-compiled CUDA engines equals the CPU's pair bit for bit (the real
/// set's probes, flux spectra and fields, the imaginary set's fields), on 1 and 3 slabs (3:
/// the corrections of the interior planes run deferred, after the halo copies start), in f32
/// and f64; each engine allocates what the plan counts.
fn compare_bloch<T: Real>(slabs: usize) {
    use yee::backend::bloch::BlochPair;
    use yee::backend::cpu::CpuBackend;
    let model = model(BLOCH_SCENE, T::PRECISION.name(), 60);
    assert!(model.boundaries.has_bloch());
    let ranges = split_even(model.grid.shape[0], slabs);
    let imaginary = model.imaginary_set();
    let mut cpu = BlochPair::new(
        &model,
        CpuBackend::<T>::new(&model, &ranges),
        CpuBackend::<T>::new(&imaginary, &ranges),
    );
    let want = drive(&model, &mut cpu, &ranges);
    let gpu_of = vec![0; ranges.len()];
    let engine = |m: &Model| {
        let dev = HostDevice::new(T::PRECISION, 1, false);
        CudaEngine::<HostDevice, T>::new(dev, m, &ranges, &gpu_of, EngineOptions::default(), "host")
            .expect("host engine")
    };
    let mut host = BlochPair::new(&model, engine(&model), engine(&imaginary));
    for b in [host.real(), host.imaginary()] {
        assert_eq!(
            b.allocation(),
            estimate(&model, &ranges, std::mem::size_of::<T>()),
            "each engine allocates what estimate() says"
        );
    }
    // The pair, both sets with their images and monitors, is what the plan counts for it.
    let layout = yee::plan::Layout::of(&model).with_precision(T::PRECISION);
    let mut planned = yee::backend::Allocation::default();
    for r in &ranges {
        planned.add(&layout.gpu_slab_bytes_with_monitors(*r));
    }
    planned.monitors += layout.gpu_pinned_bytes();
    assert_eq!(
        host.allocation(),
        planned,
        "the pair allocates what the plan counts"
    );
    assert_eq!(
        host.host_monitor_bytes(&model),
        layout.gpu_host_monitor_bytes(),
        "the pair's host monitor buffers are what the plan counts"
    );
    assert!(layout.bloch_images(ranges[0]) > 0);
    let got = drive(&model, &mut host, &ranges);
    let what = format!("Bloch pair, {} slabs, {}", slabs, T::PRECISION.name());
    assert_identical(&got, &want, &what);
    let (got, want) = (
        imaginary_fields(&host, &model),
        imaginary_fields(&cpu, &model),
    );
    assert!(
        want[2].iter().any(|&v| v != 0.0),
        "the imaginary set is driven"
    );
    assert_eq!(got, want, "{what}: the imaginary set");
}

#[test]
fn host_bloch_pair_matches_the_cpu_pair_bit_for_bit() {
    let _guard = serial();
    for slabs in [1, 3] {
        compare_bloch::<f32>(slabs);
        compare_bloch::<f64>(slabs);
    }
}

/// [`MATERIALS_SCENE`] with the metal sphere's curved surface placed by the surface ports
/// (its `conformal = false` dropped).
fn ports_scene() -> String {
    MATERIALS_SCENE.replace("metal = { conformal = false, ", "metal = { ")
}

/// [`ports_scene`]'s model: edges on both sides of x planes 16 and 8, where three slabs of the
/// 24 planes meet.
fn ports_model(precision: &str, steps: usize) -> Model {
    let m = model(&ports_scene(), precision, steps);
    let ports = m.surface_ports();
    assert!(ports.surface_edges > 50, "{}", ports.surface_edges);
    let planes: Vec<u32> = ports.edges.iter().map(|e| e.cell[0]).collect();
    assert!(planes.contains(&15) && planes.contains(&16), "{planes:?}");
    m
}

fn ports_against_cpu<T: Real>() {
    let steps = 60;
    let m = ports_model(T::PRECISION.name(), steps);
    let nx = m.grid.shape[0];
    let one = split_even(nx, 1);
    let mut cpu = yee::backend::cpu::CpuBackend::<T>::new(&m, &one);
    let want = drive(&m, &mut cpu, &one);
    let want_state = cpu.export_state().unwrap();
    let ports: Vec<_> = want_state
        .arrays
        .iter()
        .filter(|a| a.name.starts_with("dispersive.ports."))
        .collect();
    assert!(ports.len() >= 4, "the ports' state is registered");
    assert!(ports.iter().all(|a| a.values.iter().any(|v| *v != T::ZERO)));
    // One slab; three (split_even: cuts at 8 and 16, through the sphere's ports); and cuts
    // that put a slab boundary on every plane of the sphere's first half.
    for cuts in [vec![], vec![8, 16], vec![12, 13, 14, 15]] {
        let ranges = cut_at(nx, &cuts);
        let what = format!("ports {} cut at {cuts:?}", T::PRECISION.name());
        let (got, state, log) = host_trace_on::<T>(&m, &ranges, host_kernels(T::PRECISION));
        assert_identical(&got, &want, &what);
        assert_same_state(&state, &want_state, &what);
        assert_eq!(log.launches["port_gather"], steps, "{what}");
        assert_eq!(log.launches["port_increment"], steps, "{what}");
    }
    // Over GPUs, each a part of the planes that trades its ports' boundary values with the
    // GPUs beside it: peer to peer, through pinned memory, and five GPUs of which the middle
    // three hold one plane each (each trades with both sides).
    let over = [
        (vec![8, 16], vec![0, 0, 1], true, false),
        (vec![8, 16], vec![0, 0, 1], false, false),
        (vec![8, 16], vec![0, 1, 2], true, true),
        (vec![12, 13, 14, 15], vec![0, 1, 2, 3, 4], true, false),
    ];
    for (cuts, gpu_of, peer, staged) in over {
        let ranges = cut_at(nx, &cuts);
        let what = format!(
            "ports {} cut at {cuts:?} on GPUs {gpu_of:?}, peer {peer}, staged {staged}",
            T::PRECISION.name()
        );
        let real = std::mem::size_of::<T>();
        assert!(trade_bytes(&m.surface_ports(), &ranges, &gpu_of, real) > 0);
        let placed = Placed {
            gpu_of,
            peer,
            staged,
        };
        let kernels = host_kernels(T::PRECISION);
        let (got, state, log) = host_trace_placed::<T>(&m, &ranges, kernels, &placed);
        assert_identical(&got, &want, &what);
        assert_same_state(&state, &want_state, &what);
        let gpus = placed.gpu_of.iter().max().unwrap() + 1;
        assert_eq!(log.launches["port_gather"], steps * gpus, "{what}");
    }
    // Blocks and threads in reverse order change nothing.
    let reversed = host_kernels_reversed(T::PRECISION);
    let (got, state, _) = host_trace_on::<T>(&m, &cut_at(nx, &[8, 16]), reversed);
    assert_identical(&got, &want, "threads reversed");
    assert_same_state(&state, &want_state, "threads reversed");
}

/// The surface ports on the host engine (`kernels/ports.cu` and the dispersive kernel over the
/// ports' virtual cells) are the CPU backend's pass bit for bit: fields, probes, snapshots and
/// the ports' state, f32 and f64, on one slab, on slabs cut through the sphere's surface, and
/// on several GPUs trading across the cuts.
#[test]
fn host_kernels_match_cpu_bit_for_bit_with_surface_ports() {
    let _guard = serial();
    ports_against_cpu::<f32>();
    ports_against_cpu::<f64>();
}

/// The ports' state moves between the engines as a checkpoint does: the CPU to step 40, the
/// host engine (3 slabs) to 80, the CPU on 2 slabs to 100, is the CPU all the way, bit for bit.
#[test]
fn host_engine_resumes_the_surface_ports_state_of_the_cpu_and_back() {
    let _guard = serial();
    let m = ports_model("f32", 100);
    let three = split_even(m.grid.shape[0], 3);
    let dev = HostDevice::new(Precision::F32, 1, false);
    assert_cpu_host_cpu_is_the_cpu(&m, [40, 40, 20], &three, &[0, 0, 0], dev);
}

/// The engine allocates what the plan counts for the ports (the bytes are in `dispersive`:
/// the CPU backend's, and the arguments of the `port_poles` runs); a GPU's slabs that are not
/// side by side (which the plan never places) are refused, as the GPUs' trades need each
/// GPU's part of the grid to be a run of planes.
#[test]
fn host_engine_counts_the_surface_ports_bytes_and_refuses_a_gpus_slabs_apart() {
    let _guard = serial();
    let m = ports_model("f32", 4);
    let three = split_even(m.grid.shape[0], 3);
    let dev = HostDevice::new(Precision::F32, 2, true);
    let err =
        CudaEngine::<HostDevice, f32>::new(dev, &m, &three, &[0, 1, 0], Default::default(), "host")
            .err()
            .expect("GPU 0's slabs apart are refused");
    let text = err.to_string();
    assert!(text.contains("side by side"), "{text}");
    for precision in [Precision::F32, Precision::F64] {
        let m = ports_model(precision.name(), 4);
        let layout = yee::plan::Layout::of(&m);
        for ranges in [split_even(m.grid.shape[0], 1), three.clone()] {
            let cpu = match precision {
                Precision::F32 => {
                    yee::backend::cpu::CpuBackend::<f32>::new(&m, &ranges).allocation()
                }
                Precision::F64 => {
                    yee::backend::cpu::CpuBackend::<f64>::new(&m, &ranges).allocation()
                }
            };
            let gpu = estimate(&m, &ranges, precision.bytes());
            let ports: u64 = ranges.iter().map(|r| layout.port_bytes(*r)).sum();
            assert!(ports > 0);
            // The GPU's `port_poles` runs (a model with poles in a slab) hold the dispersive
            // kernel's arguments besides.
            let run = yee::plan::bytes::gpu_port_run_bytes(precision.bytes());
            let runs: u64 = ranges.iter().map(|r| layout.gpu_port_runs(*r)).sum();
            assert!(runs > 0);
            assert_eq!(gpu.dispersive, cpu.dispersive + runs * run, "{ranges:?}");
            for r in &ranges {
                let (g, c) = (layout.gpu_slab_bytes(*r), layout.slab_bytes(*r));
                assert_eq!(g.dispersive, c.dispersive + layout.gpu_port_runs(*r) * run);
                assert!(c.dispersive >= layout.port_bytes(*r));
            }
        }
    }
}
