//! The plan is the one decider and the one source of sizes: it places the CUDA engine's monitor
//! buffers on the GPUs of the slabs they read (a large flux plane's DFT accumulators on the
//! GPU, not in host memory), it models `--gpus 0,2` and `--slabs-per-gpu`, and the CUDA engine
//! allocates, GPU by GPU and in pinned host memory, exactly what the plan lists.

mod common;

use common::*;
use std::cell::RefCell;
use yee::backend::cuda::args::{Dims, Kernel, Ptr};
use yee::backend::cuda::engine::{Device, DeviceError, Event, KernelArgs, Stream};
use yee::backend::cuda::nvrtc::NvrtcError;
use yee::backend::cuda::placement::Placement;
use yee::backend::cuda::{CudaEngine, CudaError, EngineOptions};
use yee::backend::Backend;
use yee::model::Model;
use yee::plan::{self, parse_gpus, BackendChoice, Hardware, Plan, PlanBackend, PlanOptions};

const GIB: u64 = 1 << 30;

/// 2000 x 2000 x 400 cells of 10 nm in f32 with one z-normal flux plane at `nf` frequencies:
/// 38.4 GB of fields and 2000 * 2000 * 101 * 64 B = 25.9 GB of DFT accumulators.
fn big_flux_scene(nf: usize) -> String {
    format!(
        r#"
[simulation]
name = "bigflux"
length_unit = "nm"
cell_size = 10.0
size = [20000.0, 20000.0, 4000.0]
steps = 2000
precision = "f32"
[boundaries]
default = {{ type = "pml", cells = 10 }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }}
[[monitor]]
type = "flux"
name = "up"
plane = {{ z = 1000.0 }}
frequencies = {{ min = 2.0e14, max = 4.0e14, count = {nf} }}
"#
    )
}

#[test]
fn a_large_flux_plane_is_planned_on_one_h200_with_its_accumulators_on_the_gpu() {
    let m = model(&big_flux_scene(101));
    assert_eq!(m.grid.shape, [2000, 2000, 400]);
    let hw = Hardware::new(parse_gpus("1xH200").unwrap(), 24 * GIB, 16);
    let p = plan::plan(&m, &hw, &PlanOptions::default());
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    assert!(p.fits);
    let accumulators = 64 * 101 * 2000 * 2000u64;
    // On the GPU: the accumulators, the cells' quadrature weights (two f64 each) and four f64
    // per row and frequency of the spectrum's row sums (each sample's DFT weights travel in
    // the launch arguments).
    let on_device = accumulators + 16 * 2000 * 2000 + 32 * 101 * 2000;
    assert_eq!(p.bytes.device_monitors, on_device);
    assert_eq!(p.slabs.len(), 1);
    assert_eq!(p.slabs[0].allocation.monitors, on_device);
    // In host memory only the plane's quadrature weights (two f64 per cell, for the spectrum
    // formed from the DFTs read back): no snapshots, no probes, no other host monitor buffers.
    assert_eq!(p.bytes.monitors, 16 * 2000 * 2000);
    assert_eq!(p.bytes.pinned + p.bytes.probe_series, 0);
    // The slab with its accumulators and the context reserve is what the H200 holds.
    let on_gpu = p.slabs[0].bytes + plan::CUDA_CONTEXT_RESERVE;
    assert!((p.slabs[0].share - on_gpu as f64 / 141e9).abs() < 1e-12);
    assert!(on_gpu > 64 * 1_000_000_000 && on_gpu < 141_000_000_000);

    // The same scene planned for the CPU keeps them in host memory, where 24 GiB is too little.
    let cpu = plan::plan(
        &m,
        &hw,
        &PlanOptions {
            backend: BackendChoice::Cpu,
            ..Default::default()
        },
    );
    assert_eq!(cpu.backend, PlanBackend::None);
    assert!(cpu.bytes.monitors >= accumulators);
    assert_eq!(cpu.bytes.device_monitors, 0);
}

#[test]
fn yee_plan_puts_the_large_flux_plane_on_one_h200() {
    let dir = std::env::temp_dir().join(format!("yee-plan-decider-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("bigflux.toml");
    std::fs::write(&scene, big_flux_scene(101)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
        .args([
            "plan",
            "--json",
            "--gpus",
            "1xH200",
            "--host-memory",
            "24GiB",
        ])
        .arg(&scene)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["backend"], "cuda", "{}", v["reason"]);
    assert_eq!(v["fits"], true);
    assert_eq!(
        v["bytes"]["device_monitors"].as_u64().unwrap(),
        64 * 101 * 2000 * 2000 + 16 * 2000 * 2000 + 32 * 101 * 2000
    );
}

/// A small scene with every kind of monitor: probes, a plane and a box snapshot, and flux
/// planes normal to x (held by one slab) and to z (shared by every slab).
fn monitored() -> Model {
    model(&monitored_scene())
}

/// [`monitored`] with periodic x faces: halo copies wrap round from one end to the other.
fn monitored_periodic() -> Model {
    model(&monitored_scene().replace(
        "default = { type = \"pml\", cells = 4 }",
        "default = { type = \"pml\", cells = 4 }\nx_min = { type = \"periodic\" }\nx_max = { type = \"periodic\" }",
    ))
}

fn monitored_scene() -> String {
    String::from(
        r#"
[simulation]
name = "decider"
length_unit = "um"
cell_size = 0.05
size = [2.0, 1.0, 1.0]
steps = 7
precision = "f32"
[boundaries]
default = { type = "pml", cells = 4 }
[materials]
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "glass"
center = [0.1, 0.0, -0.2]
size = [0.6, 0.5, 0.3]
[[source]]
type = "dipole"
component = "Ez"
position = [0.02, 0.03, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }
[[monitor]]
type = "probe"
name = "left"
position = [-0.7, 0.1, 0.05]
components = ["Ex", "Hz"]
[[monitor]]
type = "probe"
name = "right"
position = [0.8, -0.1, 0.0]
components = ["Ez"]
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
box = { center = [0.3, 0.0, 0.0], size = [0.6, 0.4, 0.4] }
every = 3
[[monitor]]
type = "flux"
name = "x"
plane = { x = 0.5 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 5 }
[[monitor]]
type = "flux"
name = "z"
plane = { z = 0.3 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
"#,
    )
}

/// A device that only counts what is allocated on each GPU and in pinned memory.
struct Counting {
    gpus: usize,
    /// Whether GPUs have peer access (else halos between them are staged in pinned memory).
    peer: bool,
    /// A GPU (index among those used) whose every device allocation runs out of memory.
    full: Option<usize>,
    device: RefCell<Vec<u64>>,
    pinned: RefCell<u64>,
    next: RefCell<Ptr>,
}

impl Counting {
    fn new(gpus: usize, peer: bool) -> Self {
        Counting {
            gpus,
            peer,
            full: None,
            device: RefCell::new(vec![0; gpus]),
            pinned: RefCell::new(0),
            next: RefCell::new(4096),
        }
    }
    fn ptr(&self, bytes: usize) -> Ptr {
        let mut n = self.next.borrow_mut();
        let p = *n;
        *n += (bytes as u64).div_ceil(256) * 256 + 256;
        p
    }
}

impl Device for Counting {
    fn gpus(&self) -> usize {
        self.gpus
    }
    fn alloc(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError> {
        if self.full == Some(gpu) {
            return Err(DeviceError::OutOfMemory {
                gpu,
                requested: bytes as u64,
                free: 0,
            });
        }
        self.device.borrow_mut()[gpu] += bytes as u64;
        Ok(self.ptr(bytes))
    }
    fn alloc_pinned(&self, _: usize, bytes: usize) -> Result<Ptr, DeviceError> {
        *self.pinned.borrow_mut() += bytes as u64;
        Ok(self.ptr(bytes))
    }
    fn upload(&self, _: usize, _: Ptr, _: &[u8]) -> Result<(), DeviceError> {
        Ok(())
    }
    fn download(&self, _: usize, _: Ptr, _: &mut [u8]) -> Result<(), DeviceError> {
        Ok(())
    }
    fn set_constant(&self, _: usize, _: &str, _: &[u8]) -> Result<(), DeviceError> {
        Ok(())
    }
    unsafe fn launch<A: KernelArgs>(
        &self,
        _: usize,
        _: Stream,
        _: Kernel,
        _: Dims,
        _: &A,
    ) -> Result<(), DeviceError> {
        Ok(())
    }
    fn copy_dtod(
        &self,
        _: usize,
        _: Stream,
        _: (usize, Ptr),
        _: (usize, Ptr),
        _: usize,
    ) -> Result<(), DeviceError> {
        Ok(())
    }
    fn copy_dtoh(&self, _: usize, _: Stream, _: Ptr, _: Ptr, _: usize) -> Result<(), DeviceError> {
        Ok(())
    }
    fn copy_htod(&self, _: usize, _: Stream, _: Ptr, _: Ptr, _: usize) -> Result<(), DeviceError> {
        Ok(())
    }
    fn record(&self, _: usize, _: Stream, _: Event) -> Result<(), DeviceError> {
        Ok(())
    }
    fn wait(&self, _: usize, _: Stream, _: usize, _: Event) -> Result<(), DeviceError> {
        Ok(())
    }
    fn sync_event(&self, _: usize, _: Event) -> Result<(), DeviceError> {
        Ok(())
    }
    fn query(&self, _: usize, _: Event) -> Result<bool, DeviceError> {
        Ok(true)
    }
    fn peer(&self, _: usize, _: usize) -> bool {
        self.peer
    }
}

/// Build the CUDA engine on a counting device where `p` places the slabs and check that every
/// GPU holds what the plan lists for it (slabs with their monitor buffers, and the small
/// per-GPU tables), that pinned memory is the plan's pinned mirrors, and that the engine's own
/// count by category is the plan's. Without peer access the engine also stages every halo
/// copy between GPUs through a pinned plane: the plan's `staged_halo_total`.
fn engine_allocates_the_plan(m: &Model, p: &Plan) {
    engine_allocates_the_plan_with(m, p, true);
    engine_allocates_the_plan_with(m, p, false);
}

fn engine_allocates_the_plan_with(m: &Model, p: &Plan, peer: bool) {
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    let placement = p.gpu_slabs();
    let mut used: Vec<usize> = Vec::new();
    let gpu_of: Vec<usize> = placement
        .iter()
        .map(|&(_, d)| match used.iter().position(|&u| u == d) {
            Some(i) => i,
            None => {
                used.push(d);
                used.len() - 1
            }
        })
        .collect();
    let ranges: Vec<_> = placement.iter().map(|&(r, _)| r).collect();
    let dev = Counting::new(used.len(), peer);
    let engine = CudaEngine::<Counting, f32>::new(
        dev,
        m,
        &ranges,
        &gpu_of,
        EngineOptions::default(),
        "counting",
    )
    .expect("a counting device never runs out");
    let layout = plan::Layout::of(m);
    for (i, &d) in used.iter().enumerate() {
        let planned: u64 = p
            .slabs
            .iter()
            .filter(|s| s.device == d)
            .map(|s| s.bytes)
            .sum();
        assert_eq!(
            engine.device().device.borrow()[i],
            planned + layout.gpu_table_bytes(),
            "GPU {d}"
        );
    }
    let staged = if peer {
        0
    } else {
        layout.staged_halo_total(&gpu_of)
    };
    assert_eq!(*engine.device().pinned.borrow(), p.bytes.pinned + staged);
    // What a run reports (the time loop adds the host monitor buffers, here the host copy of
    // a snapshot region) is what the plan lists.
    let mut a = engine.allocation();
    a.monitors += engine.host_monitor_bytes(m);
    assert_eq!(engine.host_monitor_bytes(m), p.bytes.monitors);
    assert_eq!(a, p.allocation());
}

#[test]
fn gpus_0_and_2_are_planned_and_allocated_as_asked() {
    let m = monitored();
    let hw = Hardware::new(parse_gpus("4x80GiB").unwrap(), 64 * GIB, 16);
    let p = plan::plan(
        &m,
        &hw,
        &PlanOptions {
            gpus: Some(vec![0, 2]),
            ..Default::default()
        },
    );
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    let devices: Vec<usize> = p.slabs.iter().map(|s| s.device).collect();
    assert_eq!(devices, [0, 2], "one slab on each GPU given, in order");
    assert!(
        p.reason.contains("GPUs 0, 2 as given with --gpus"),
        "{}",
        p.reason
    );
    assert_eq!(p.bytes.overhead, 2 * plan::CUDA_CONTEXT_RESERVE);
    let used: Vec<bool> = p.devices.iter().map(|d| d.used).collect();
    assert_eq!(used, [true, false, true, false, false]);
    // Equal GPUs share the planes evenly.
    assert_eq!(p.ranges(), yee::decomp::split_even(m.grid.shape[0], 2));
    // The monitor buffers are on the GPU of the slab they read: the z-normal flux plane on
    // both, the x-normal plane (x = 0.5 um, in the upper half) on GPU 2 only.
    let ml = plan::MonitorLayout::of(&m);
    for s in &p.slabs {
        let r = yee::decomp::SlabRange {
            x0: s.x_start,
            x1: s.x_end,
        };
        assert_eq!(s.allocation.monitors, ml.device_bytes(r, 4));
        assert!(s.allocation.monitors > 0);
    }
    assert!(p.slabs[1].allocation.monitors > p.slabs[0].allocation.monitors);
    // Without peer access the one boundary between the GPUs stages Hy, Hz, Ey and Ez through a
    // pinned plane each.
    let [_, ny, nz] = m.grid.shape;
    assert_eq!(
        plan::Layout::of(&m).staged_halo_total(&[0, 1]),
        (4 * ny * nz * 4) as u64
    );
    engine_allocates_the_plan(&m, &p);
}

#[test]
fn slabs_per_gpu_are_planned_and_allocated_as_asked() {
    let m = monitored();
    let hw = Hardware::new(parse_gpus("4x80GiB").unwrap(), 64 * GIB, 16);
    for (gpus, spg, want) in [
        (None, 2, vec![0, 0]),
        (Some(vec![0, 2]), 2, vec![0, 0, 2, 2]),
        (Some(vec![3, 1]), 3, vec![3, 3, 3, 1, 1, 1]),
    ] {
        let p = plan::plan(
            &m,
            &hw,
            &PlanOptions {
                gpus: gpus.clone(),
                slabs_per_gpu: Some(spg),
                ..Default::default()
            },
        );
        let devices: Vec<usize> = p.slabs.iter().map(|s| s.device).collect();
        assert_eq!(devices, want, "--gpus {gpus:?} --slabs-per-gpu {spg}");
        let k = want.iter().collect::<std::collections::BTreeSet<_>>().len() as u64;
        assert_eq!(p.bytes.overhead, k * plan::CUDA_CONTEXT_RESERVE);
        // Equal GPUs: the plan's split is the even split into that many slabs.
        assert_eq!(
            p.ranges(),
            yee::decomp::split_even(m.grid.shape[0], want.len())
        );
        engine_allocates_the_plan(&m, &p);
    }
    // Periodic x: the wrap-round copies between the first and last GPU are staged too.
    let m = monitored_periodic();
    let l = plan::Layout::of(&m);
    assert_eq!(l.periodic_x, [true, true]);
    assert_eq!(l.cross_gpu_copies(&[0, 0, 1, 1]), 4 + 2 + 2);
    assert_eq!(l.cross_gpu_copies(&[0, 0]), 0);
    let p = plan::plan(
        &m,
        &hw,
        &PlanOptions {
            gpus: Some(vec![1, 3]),
            slabs_per_gpu: Some(2),
            ..Default::default()
        },
    );
    engine_allocates_the_plan(&m, &p);
}

#[test]
fn gpus_the_hardware_lacks_are_named() {
    let m = monitored();
    let hw = Hardware::new(parse_gpus("2x80GiB").unwrap(), 64 * GIB, 16);
    let ask = |gpus: Vec<usize>, backend| {
        plan::plan(
            &m,
            &hw,
            &PlanOptions {
                backend,
                gpus: Some(gpus),
                ..Default::default()
            },
        )
    };
    let p = ask(vec![0, 2], BackendChoice::Cuda);
    assert_eq!(p.backend, PlanBackend::None);
    assert!(
        p.reason
            .contains("--gpus names GPU 2, but the GPUs are 0..1"),
        "{}",
        p.reason
    );
    let p = ask(vec![1, 1], BackendChoice::Cuda);
    assert!(p.reason.contains("GPU 1 is listed twice"), "{}", p.reason);
    // Under auto the CPU runs it, with its own split and host check.
    let p = ask(vec![0, 2], BackendChoice::Auto);
    assert_eq!(p.backend, PlanBackend::Cpu, "{}", p.reason);
    assert!(p.reason.contains("--gpus names GPU 2"), "{}", p.reason);
    assert_eq!(p.bytes.overhead, 0);
}

#[test]
fn the_split_cuda_engine_counts_what_the_plan_counts() {
    // Uneven GPUs: slabs follow usable memory; the engine's allocation per GPU is the plan's.
    let m = monitored();
    let hw = Hardware::new(parse_gpus("1x40GiB,1x80GiB,1x24GiB").unwrap(), 64 * GIB, 16);
    let p = plan::plan(
        &m,
        &hw,
        &PlanOptions {
            gpus: Some(vec![1, 0, 2]),
            ..Default::default()
        },
    );
    let devices: Vec<usize> = p.slabs.iter().map(|s| s.device).collect();
    assert_eq!(devices, [1, 0, 2]);
    let len: Vec<usize> = p.slabs.iter().map(|s| s.x_end - s.x_start).collect();
    assert!(len[0] > len[1] && len[1] > len[2], "{len:?}");
    engine_allocates_the_plan(&m, &p);
}

#[test]
fn a_failed_cuda_start_under_auto_replans_on_the_cpu_with_its_own_split_and_host_check() {
    let m = monitored();
    let nx = m.grid.shape[0];
    let hw = Hardware::new(parse_gpus("2x80GiB").unwrap(), 64 * GIB, 16);
    let options = PlanOptions {
        threads: Some(4),
        slabs_per_gpu: Some(3),
        ..Default::default()
    };
    let p = plan::plan(&m, &hw, &options);
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    assert!(matches!(p.decision, plan::Decision::Cuda { .. }));
    assert_eq!(p.slabs.len(), 3, "one GPU, three slabs on it");

    // CUDA cannot start: the CPU runs it, split as the CPU backend splits, not as the GPUs were.
    let cpu = plan::replan(&m, &hw, &options, plan::StartFailure::CudaUnavailable);
    assert_eq!(cpu.backend, PlanBackend::Cpu, "{}", cpu.reason);
    assert!(
        cpu.reason
            .contains("no GPU is available (all 2 GPUs failed to start)"),
        "{}",
        cpu.reason
    );
    let k = plan::cpu_slabs(nx, 4, None);
    assert_eq!(cpu.ranges(), yee::decomp::split_even(nx, k));
    assert!(cpu.slabs.iter().all(|s| s.device == 2), "on the host");
    assert_eq!(cpu.bytes.overhead, 0);
    assert_eq!(cpu.bytes.device_monitors + cpu.bytes.pinned, 0);
    // The CPU's own host check: the flux accumulators are now host memory.
    assert!(cpu.bytes.monitors > p.bytes.monitors);

    // ... and a host too small for the CPU plan is refused, not run on the GPU's figures.
    let small = Hardware::new(parse_gpus("2x80GiB").unwrap(), cpu.bytes.total - 1, 16);
    let none = plan::replan(&m, &small, &options, plan::StartFailure::CudaUnavailable);
    assert_eq!(none.backend, PlanBackend::None, "{}", none.reason);
    assert!(matches!(
        none.decision,
        plan::Decision::NothingFitsNoGpu { .. }
    ));

    // Out of memory on the GPU used: the plan moves to the other one.
    let used = p.slabs[0].device;
    let other = plan::replan(&m, &hw, &options, plan::StartFailure::OutOfMemory(used));
    assert_eq!(other.backend, PlanBackend::Cuda, "{}", other.reason);
    assert!(other.slabs.iter().all(|s| s.device == 1 - used));
    assert_eq!(other.slabs.len(), 3);

    // Under --backend cuda there is nothing left to run on, and the reason says why.
    let cuda = PlanOptions {
        backend: BackendChoice::Cuda,
        ..options.clone()
    };
    let none = plan::replan(&m, &hw, &cuda, plan::StartFailure::CudaUnavailable);
    assert_eq!(none.backend, PlanBackend::None);
    assert!(none.reason.contains("failed to start"), "{}", none.reason);
}

/// Messages a run says, kept for the test to read.
#[derive(Debug, Default)]
struct Said(Vec<String>);

impl yee::run::Observer for Said {
    fn message(&mut self, m: &str) {
        self.0.push(m.to_string());
    }
}

/// What following a plan on counting devices came to.
type Followed = Result<yee::run::Started<CudaEngine<Counting, f32>>, yee::run::StartError>;

/// Follow `p` as a run does, starting each CUDA plan on a counting device whose GPUs listed
/// in `full` (plan device indices, which are driver ordinals) run out of memory. Returns what
/// following came to, the plan devices each start was tried on, and the messages.
fn follow_with_full_gpus(
    m: &Model,
    hw: &Hardware,
    options: &PlanOptions,
    p: &Plan,
    full: &[usize],
) -> (Followed, Vec<Vec<usize>>, Vec<String>) {
    let mut tried = Vec::new();
    let mut said = Said::default();
    let started = yee::run::follow_plan(
        m,
        hw,
        options,
        p.clone(),
        |p| {
            let placement = Placement::of(p);
            let (devices, gpu_of) = placement.devices();
            let mut dev = Counting::new(devices.len(), true);
            dev.full = devices.iter().position(|d| full.contains(d));
            tried.push(devices);
            CudaEngine::<Counting, f32>::new(
                dev,
                m,
                &placement.ranges,
                &gpu_of,
                EngineOptions::default(),
                "counting",
            )
            .map_err(CudaError::from)
        },
        &mut said,
    );
    (started, tried, said.0)
}

#[test]
fn out_of_memory_on_a_gpu_replans_without_it_and_under_auto_falls_back_to_the_cpu() {
    let m = monitored();
    let nx = m.grid.shape[0];
    let hw = Hardware::new(parse_gpus("2x80GiB").unwrap(), 64 * GIB, 16);
    let options = PlanOptions {
        threads: Some(4),
        slabs_per_gpu: Some(2),
        ..Default::default()
    };
    let p = plan::plan(&m, &hw, &options);
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    let first = p.slabs[0].device;
    let other = 1 - first;
    assert!(
        p.slabs.iter().all(|s| s.device == first),
        "one GPU holds it"
    );

    // The GPU used runs out of memory: the run is planned again on the other one, which starts
    // and holds exactly what the new plan lists for it.
    let (started, tried, said) = follow_with_full_gpus(&m, &hw, &options, &p, &[first]);
    assert_eq!(tried, [vec![first], vec![other]]);
    let Ok(yee::run::Started::Gpus(engine, replanned)) = started else {
        panic!("expected a start on GPU {other}: {said:?}");
    };
    assert!(replanned.slabs.iter().all(|s| s.device == other));
    assert_eq!(replanned.slabs.len(), 2, "--slabs-per-gpu kept");
    let planned: u64 = replanned.slabs.iter().map(|s| s.bytes).sum();
    assert_eq!(
        engine.device().device.borrow()[0],
        planned + plan::Layout::of(&m).gpu_table_bytes()
    );
    // The failure names the plan's GPU (the driver ordinal), not the engine's index 0.
    assert!(
        said[0].starts_with(&format!("out of memory on GPU {first} allocating")),
        "{said:?}"
    );
    assert!(said[0].ends_with(&format!("planning again without GPU {first}")));

    // Both GPUs run out: under auto the CPU runs it, with its own split and host check.
    let (started, tried, said) = follow_with_full_gpus(&m, &hw, &options, &p, &[0, 1]);
    assert_eq!(tried, [vec![first], vec![other]], "each GPU tried once");
    let Ok(yee::run::Started::Cpu(cpu)) = started else {
        panic!("expected the CPU: {said:?}");
    };
    assert_eq!(cpu.backend, PlanBackend::Cpu);
    assert_eq!(
        cpu.ranges(),
        yee::decomp::split_even(nx, plan::cpu_slabs(nx, 4, None))
    );
    assert!(cpu.slabs.iter().all(|s| s.device == 2), "on the host");
    assert_eq!(cpu.bytes.device_monitors + cpu.bytes.overhead, 0);
    assert!(said
        .last()
        .unwrap()
        .contains("no GPU is available (all 2 GPUs failed to start)"));

    // ... unless the host cannot hold the CPU plan: then nothing runs, and the plan says why.
    let small = Hardware::new(parse_gpus("2x80GiB").unwrap(), cpu.bytes.total - 1, 16);
    let p_small = plan::plan(&m, &small, &options);
    assert_eq!(p_small.backend, PlanBackend::Cuda, "{}", p_small.reason);
    let (started, _, _) = follow_with_full_gpus(&m, &small, &options, &p_small, &[0, 1]);
    match started {
        Err(yee::run::StartError::DoesNotFit { reason, .. }) => {
            assert!(
                reason.starts_with("Nothing here holds the grid"),
                "{reason}"
            )
        }
        other => panic!("expected DoesNotFit, got {:?}", other.map(|_| ())),
    }

    // Under --backend cuda there is no CPU to fall back to: the error is what ran out.
    let cuda = PlanOptions {
        backend: BackendChoice::Cuda,
        ..options.clone()
    };
    let p = plan::plan(&m, &hw, &cuda);
    let (started, tried, _) = follow_with_full_gpus(&m, &hw, &cuda, &p, &[0, 1]);
    assert_eq!(tried.len(), 2);
    match started {
        Err(e @ yee::run::StartError::GpuMemory(_)) => {
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("out of memory on GPU {other}")),
                "{e}"
            );
            assert!(e.contains("the grid does not fit on the GPUs"), "{e}");
        }
        other => panic!("expected GpuMemory, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn cuda_that_cannot_start_is_said_from_the_plan() {
    let m = monitored();
    // No GPU: under --backend cuda the plan's decision gives the message, and nothing starts.
    let mut hw = Hardware::new(Vec::new(), 64 * GIB, 16);
    hw.gpu_note = format!("no GPU found: {}", CudaError::NoDriver);
    let cuda = PlanOptions {
        backend: BackendChoice::Cuda,
        ..Default::default()
    };
    let p = plan::plan(&m, &hw, &cuda);
    let (started, tried, _) = follow_with_full_gpus(&m, &hw, &cuda, &p, &[]);
    assert!(tried.is_empty());
    match started {
        Err(e @ yee::run::StartError::Refused(_)) => assert_eq!(
            e.to_string(),
            format!("CUDA cannot be used: {}", CudaError::NoDriver)
        ),
        other => panic!("expected Refused, got {:?}", other.map(|_| ())),
    }
    // ... also with --gpus: why there is no GPU comes before which index is missing.
    let listed = PlanOptions {
        gpus: Some(vec![0]),
        ..cuda.clone()
    };
    let p = plan::plan(&m, &hw, &listed);
    let (started, _, _) = follow_with_full_gpus(&m, &hw, &listed, &p, &[]);
    assert!(
        matches!(&started, Err(yee::run::StartError::Refused(e)) if e.starts_with("CUDA cannot be used: the NVIDIA driver")),
        "{:?}",
        started.map(|_| ())
    );

    // GPUs planned, but CUDA fails to start: auto runs on the CPU, --backend cuda says why.
    let hw = Hardware::new(parse_gpus("2x80GiB").unwrap(), 64 * GIB, 16);
    let fail = |_: &Plan| -> Result<(), CudaError> {
        Err(CudaError::Compile(NvrtcError::Call {
            call: "nvrtcCompileProgram",
            message: "bad".into(),
        }))
    };
    let auto = PlanOptions::default();
    let p = plan::plan(&m, &hw, &auto);
    let mut said = Said::default();
    let started = yee::run::follow_plan(&m, &hw, &auto, p, fail, &mut said);
    assert!(
        matches!(started, Ok(yee::run::Started::Cpu(ref c)) if c.backend == PlanBackend::Cpu),
        "{said:?}"
    );
    assert!(said.0[0].starts_with("CUDA could not start (NVRTC could not compile"));
    let p = plan::plan(&m, &hw, &cuda);
    let started = yee::run::follow_plan(&m, &hw, &cuda, p, fail, &mut Said::default());
    assert!(matches!(
        started,
        Err(yee::run::StartError::Cuda(CudaError::Compile(_)))
    ));
}

#[test]
fn without_peer_access_the_staged_halo_planes_are_in_the_plan() {
    let m = monitored_periodic();
    let mut hw = Hardware::new(parse_gpus("4x80GiB").unwrap(), 64 * GIB, 16);
    let options = PlanOptions {
        gpus: Some(vec![0, 2]),
        slabs_per_gpu: Some(2),
        ..Default::default()
    };
    let with_peers = plan::plan(&m, &hw, &options);
    assert_eq!(with_peers.bytes.staged_halos, 0);
    hw.peer_access = false;
    let p = plan::plan(&m, &hw, &options);
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    // Slabs on GPUs [0, 0, 2, 2] with periodic x: one boundary between the GPUs (Hy, Hz, Ey,
    // Ez) and the two wrap-round copies of each periodic face, one pinned plane each.
    let [_, ny, nz] = m.grid.shape;
    let plane = (ny * nz * 4) as u64;
    assert_eq!(p.bytes.staged_halos, (4 + 2 + 2) * plane);
    assert_eq!(
        p.bytes.total,
        with_peers.bytes.total + p.bytes.staged_halos,
        "counted in the totals"
    );
    assert!(p.render().contains("staged halo planes"));
    assert!(!with_peers.render().contains("staged halo planes"));
    // The engine on GPUs without peer access pins exactly the mirrors and those planes.
    let (_, gpu_of) = Placement::of(&p).devices();
    assert_eq!(
        plan::Layout::of(&m).staged_halo_total(&gpu_of),
        p.bytes.staged_halos
    );
    let placement = Placement::of(&p);
    let engine = CudaEngine::<Counting, f32>::new(
        Counting::new(2, false),
        &m,
        &placement.ranges,
        &gpu_of,
        EngineOptions::default(),
        "counting",
    )
    .expect("a counting device never runs out");
    assert_eq!(
        *engine.device().pinned.borrow(),
        p.bytes.pinned + p.bytes.staged_halos
    );
    // A host that holds everything but the staged planes is short.
    let mut small = hw.clone();
    small.host.memory_bytes = p.bytes.monitors + p.bytes.pinned + p.bytes.probe_series;
    let short = plan::plan(&m, &small, &options);
    assert_eq!(short.backend, PlanBackend::None, "{}", short.reason);
}
