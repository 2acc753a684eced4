//! The slab engine of the CUDA backend, written once over a [`Device`]: the CUDA driver in
//! production ([`super::CudaDevice`]), the same kernels compiled for the host in the tests.
//!
//! Everything that decides *what* runs lives here: buffer layout, launch geometry, the order
//! of kernels within a half step, which planes are boundary planes, the halo copy routes and
//! the events that order them, monitor staging. A [`Device`] only allocates, copies,
//! launches and records/waits on events; swapping it swaps nothing else.
//!
//! One half step (H or E) on every GPU:
//! 1. record `PhaseStart` on the compute stream (all earlier work that reads a halo is queued
//!    before it);
//! 2. update the boundary planes (the planes another slab's halo copies from): main update,
//!    CPML x/y/z, and for E the sources and PEC faces;
//! 3. record `Boundary`; each source GPU's halo stream waits for its own `Boundary` and every
//!    destination's `PhaseStart`, then copies (same device: `cuMemcpyDtoDAsync`; other device
//!    with peer access: `cuMemcpyPeerAsync`; otherwise through pinned host memory, the
//!    destination's halo stream doing the host-to-device half; PMC mirror: `copy_negated`);
//!    each halo stream that worked records `Copied`;
//! 4. update the interior planes, overlapping the copies;
//! 5. [`Backend::exchange`] makes every compute stream wait for every `Copied`.
//!
//! Monitors are queued after the E exchange, on the compute stream, so the next step's
//! kernels (which overwrite the fields) run after them without the host waiting:
//! - probes: `probe_gather` writes the step's samples into row `k` of a device ring of
//!   [`PROBE_RING_ROWS`] rows; [`Backend::drain_probes`] copies the rows queued since the last
//!   call to a pinned mirror on the monitor stream and reads those that have arrived (or, with
//!   `wait` or when the ring is full, waits for them);
//! - snapshots: `snapshot_gather` writes the region into its device staging, the monitor
//!   stream copies it to its own range of one pinned buffer and records `MonitorsDone`;
//!   [`Backend::take_gather`] waits for that event only if it has not happened yet, and hands
//!   out the pinned values themselves;
//! - flux: `flux_dft` adds the step's tangential fields to f64 DFT accumulators on the device,
//!   read back only by [`Backend::flux_dft`].
//!
//! A failed driver call never panics: the engine records the first failure, skips every later
//! operation, and reports it through [`Backend::failure`].

use super::args::*;
use crate::backend::{Allocation, Backend, GatherTicket};
use crate::decomp::{HaloCopy, HaloPlan, HaloSide, SlabRange};
use crate::model::{Axis, BoundaryKind, Component, Model, Region};
use crate::real::Real;
use std::cell::RefCell;
use std::marker::PhantomData;

/// A stream of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Field updates, sources, monitors' gathers.
    Compute = 0,
    /// Halo plane copies.
    Halo = 1,
    /// Monitor staging to pinned host memory.
    Monitor = 2,
}

/// The events each GPU records (one of each, re-recorded every half step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Start of a half step on the compute stream.
    PhaseStart = 0,
    /// Boundary planes updated (compute stream).
    Boundary = 1,
    /// Staged halo planes are in pinned memory (halo stream of the source GPU).
    Staged = 2,
    /// Every halo copy this GPU's halo stream issued has landed.
    Copied = 3,
    /// Monitor values gathered into device staging (compute stream).
    Gathered = 4,
    /// Monitor staging copied to pinned host memory (monitor stream).
    MonitorsDone = 5,
    /// A gather outside the monitor schedule has reached pinned memory (compute stream).
    Fallback = 6,
    /// Probe rows queued so far are in the device ring (compute stream).
    ProbesQueued = 7,
    /// Probe rows requested so far are in the pinned ring (monitor stream).
    ProbesCopied = 8,
}

/// Number of [`Event`] kinds.
pub const EVENTS: usize = 9;

/// Rows (steps) of probe samples the device ring holds before it must be read.
pub const PROBE_RING_ROWS: usize = 4096;

/// Why a device operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeviceError {
    /// An allocation did not fit.
    #[error("out of memory on GPU {gpu} allocating {requested} bytes ({free} bytes free)")]
    OutOfMemory {
        /// Index of the GPU among those used.
        gpu: usize,
        /// Bytes asked for.
        requested: u64,
        /// Bytes free on the device when it failed.
        free: u64,
    },
    /// Anything else, with the driver's words.
    #[error("{0}")]
    Failed(String),
}

/// Argument structs a kernel may be launched with (`#[repr(C)]` mirrors of `common.cuh`).
///
/// # Safety
/// Implement only for plain `#[repr(C)]` structs whose layout matches a kernel argument.
pub unsafe trait KernelArgs: Copy {}
unsafe impl<T: Copy> KernelArgs for UpdateArgs<T> {}
unsafe impl<T: Copy> KernelArgs for CpmlArgs<T> {}
unsafe impl<T: Copy> KernelArgs for SourceArgs<T> {}
unsafe impl KernelArgs for PecArgs {}
unsafe impl KernelArgs for ProbeArgs {}
unsafe impl KernelArgs for GatherArgs {}
unsafe impl KernelArgs for FiniteArgs {}
unsafe impl KernelArgs for NegateArgs {}
unsafe impl KernelArgs for FluxArgs {}
// SAFETY: as above, `#[repr(C)]` plain data matching kernels/common.cuh.
unsafe impl KernelArgs for FluxWeightsArgs {}

/// What the engine needs from the hardware. GPUs are numbered 0.. among those used.
///
/// Operations on a stream are asynchronous and ordered within the stream; `record` / `wait`
/// order streams against each other (across GPUs too). A device that runs everything at once
/// in call order (the host test device) satisfies this trivially.
pub trait Device {
    /// Number of GPUs.
    fn gpus(&self) -> usize;
    /// Zero-filled device memory, freed when the device is dropped.
    fn alloc(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError>;
    /// Zero-filled page-locked host memory usable by every GPU, freed when the device is dropped.
    fn alloc_pinned(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError>;
    /// Copy host bytes to the device, synchronously.
    fn upload(&self, gpu: usize, dst: Ptr, src: &[u8]) -> Result<(), DeviceError>;
    /// Copy device bytes to the host after all queued work on the GPU, synchronously.
    fn download(&self, gpu: usize, src: Ptr, dst: &mut [u8]) -> Result<(), DeviceError>;
    /// Set a `__constant__` symbol of the kernel module.
    fn set_constant(&self, gpu: usize, name: &str, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Queue a kernel.
    ///
    /// # Safety
    /// `args` must be the argument struct of `kernel` for the module's precision, and every
    /// pointer in it valid for what the kernel touches under `dims`.
    unsafe fn launch<A: KernelArgs>(
        &self,
        gpu: usize,
        stream: Stream,
        kernel: Kernel,
        dims: Dims,
        args: &A,
    ) -> Result<(), DeviceError>;
    /// Queue a device-to-device copy on `gpu`'s `stream` (same GPU, or peer).
    fn copy_dtod(
        &self,
        gpu: usize,
        stream: Stream,
        dst: (usize, Ptr),
        src: (usize, Ptr),
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// Queue a device-to-pinned-host copy.
    fn copy_dtoh(
        &self,
        gpu: usize,
        stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// Queue a pinned-host-to-device copy.
    fn copy_htod(
        &self,
        gpu: usize,
        stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// Record `event` of `gpu` on `stream` of `gpu`.
    fn record(&self, gpu: usize, stream: Stream, event: Event) -> Result<(), DeviceError>;
    /// Make `stream` of `gpu` wait for `event` of `event_gpu`.
    fn wait(
        &self,
        gpu: usize,
        stream: Stream,
        event_gpu: usize,
        event: Event,
    ) -> Result<(), DeviceError>;
    /// Block the host until `event` of `gpu` has happened.
    fn sync_event(&self, gpu: usize, event: Event) -> Result<(), DeviceError>;
    /// True if `event` of `gpu` has happened (or was never recorded); never waits.
    fn query(&self, gpu: usize, event: Event) -> Result<bool, DeviceError>;
    /// True if `a` can read and write `b`'s memory directly (peer access enabled).
    fn peer(&self, a: usize, b: usize) -> bool;
}

/// Engine options that are not in the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Send every halo plane through pinned host memory, even between slabs on one GPU or
    /// GPUs with peer access (tests the staged path on one GPU).
    pub staged_halos: bool,
}

/// Half step kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    H = 0,
    E = 1,
}

/// Bytes the engine allocates for one slab, by category, and the array lengths behind them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabSizes {
    /// Values per component with halos: (n + 2) ny nz.
    pub field_len: usize,
    /// Material ids per component: n ny nz.
    pub mat_len: usize,
    /// Owned planes inside the x PML.
    pub x_planes: usize,
    /// Values per psi array along x, y, z.
    pub psi_len: [usize; 3],
}

impl SlabSizes {
    /// The sizes for `range` of `model`.
    pub fn new(model: &Model, range: SlabRange) -> Self {
        let [_, ny, nz] = model.grid.shape;
        let plane = ny * nz;
        let n = range.len();
        let px = &model.boundaries.profiles[0];
        let x_planes = (0..px.layers())
            .map(|l| px.global_index(l))
            .filter(|i| range.x0 <= *i && *i < range.x1)
            .count();
        let ly = model.boundaries.profiles[1].layers();
        let lz = model.boundaries.profiles[2].layers();
        SlabSizes {
            field_len: (n + 2) * plane,
            mat_len: n * plane,
            x_planes,
            psi_len: [x_planes * plane, n * ly * nz, n * ny * lz],
        }
    }

    /// Bytes by category for values of `real` bytes, monitors excluded.
    pub fn allocation(&self, plane: usize, real: usize) -> Allocation {
        let t = real as u64;
        let fields_with_halos = 6 * self.field_len as u64 * t;
        let halos = 6 * 2 * plane as u64 * t;
        Allocation {
            fields: fields_with_halos - halos,
            halos,
            materials: 3 * self.mat_len as u64,
            pml: 4 * self.psi_len.iter().map(|&l| l as u64).sum::<u64>() * t,
            monitors: 0,
        }
    }
}

/// Rows of the probe ring: [`PROBE_RING_ROWS`], or the step count when smaller.
pub fn probe_ring_rows(model: &Model) -> usize {
    model.grid.steps.clamp(1, PROBE_RING_ROWS)
}

/// Monitor bytes for the whole model: probe sample addresses (8 bytes each) and the probe
/// ring on the device and in pinned memory ([`probe_ring_rows`] rows of every sample); device
/// staging plus pinned memory for every snapshot value; and the flux monitors' DFT
/// accumulators on the device (8 f64 per cell and frequency: real and imaginary parts of
/// E_b, E_c, H_b, H_c).
pub fn monitor_bytes(model: &Model, real: usize) -> u64 {
    let samples: usize = model.probes.iter().map(|p| p.samples.len()).sum();
    let values: usize = model
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter().map(|(_, r)| r.len()))
        .sum();
    let flux: usize = model
        .fluxes
        .iter()
        .map(|f| 64 * crate::flux::plane_cells(model, f).0 * f.frequencies.len())
        .sum();
    (samples * 8 + 2 * (probe_ring_rows(model) * samples + values) * real + flux) as u64
}

/// What the engine allocates on the GPUs and in pinned host memory for `model` split as
/// `ranges` (the CUDA backend's memory plan): the same categories as the CPU backend, with
/// `materials` = 3 one-byte ids per owned cell (no per-row summaries on the GPU) and
/// `monitors` = [`monitor_bytes`]. Not counted: the CPML coefficient tables (a few hundred
/// bytes per GPU), the NaN flag (4 bytes per GPU), the flux monitors' frequency and
/// weight tables (40 bytes per frequency and slab), and, between GPUs without peer access (or
/// with [`EngineOptions::staged_halos`]), one pinned plane per staged halo copy; and the
/// device and pinned scratch buffers of regions gathered outside the snapshot schedule (flux
/// planes, whole-field reads), sized to the largest such region and allocated on first use.
pub fn estimate(model: &Model, ranges: &[SlabRange], real: usize) -> Allocation {
    let [_, ny, nz] = model.grid.shape;
    let mut a = Allocation::default();
    for r in ranges {
        a.add(&SlabSizes::new(model, *r).allocation(ny * nz, real));
    }
    a.monitors = monitor_bytes(model, real);
    a
}

/// (b, c, 1/kappa - 1) per layer, the tables the CPML kernels read.
fn pml_table<T: Real>(v: &[[f64; 3]]) -> Vec<T> {
    v.iter()
        .flat_map(|c| {
            [
                T::from_f64(c[0]),
                T::from_f64(c[1]),
                T::from_f64(c[2] - 1.0),
            ]
        })
        .collect()
}

fn beyond(kind: BoundaryKind) -> i32 {
    match kind {
        BoundaryKind::Periodic => 1,
        BoundaryKind::Pmc => 2,
        BoundaryKind::Pec | BoundaryKind::Pml(_) => 0,
    }
}

fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: any initialised memory may be read as bytes; the length is the slice's size.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// A run of consecutive x-PML planes in one slab: local planes [p0, p1), layer l0 at p0,
/// psi plane q0 at p0.
#[derive(Debug, Clone, Copy)]
struct XRun {
    p0: usize,
    p1: usize,
    l0: usize,
    q0: usize,
}

/// One slab's device arrays (addresses on its GPU).
#[derive(Debug, Clone)]
struct Slab {
    range: SlabRange,
    gpu: usize,
    /// Ex, Ey, Ez, Hx, Hy, Hz with halos.
    f: [Ptr; 6],
    /// Material ids of Ex, Ey, Ez.
    mat: [Ptr; 3],
    /// psi arrays: x for Ey, Ez, Hy, Hz; y for Ex, Ez, Hx, Hz; z for Ex, Ey, Hx, Hy.
    psi: [[Ptr; 4]; 3],
    x_runs: Vec<XRun>,
    /// Sources touching this slab: (model source, component, local cell ranges).
    sources: Vec<(usize, Component, [[usize; 2]; 3])>,
    /// Magnetic sheets touching this slab, likewise (H components).
    magnetic: Vec<(usize, Component, [[usize; 2]; 3])>,
    /// Plane ranges [p0, p1) updated before (boundary) and after (interior) the halo copies
    /// start, per phase.
    boundary: [Vec<(usize, usize)>; 2],
    interior: [Vec<(usize, usize)>; 2],
}

/// How a halo copy travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RouteKind {
    /// Within one GPU.
    Local,
    /// Between GPUs with peer access.
    Peer,
    /// Device to pinned host memory to device.
    Staged,
    /// The PMC mirror: a negating kernel.
    Negate,
}

#[derive(Debug, Clone, Copy)]
struct Route {
    kind: RouteKind,
    src_gpu: usize,
    dst_gpu: usize,
    src: Ptr,
    dst: Ptr,
    /// Pinned plane for staged copies.
    pinned: Ptr,
}

/// Part of a snapshot region inside one slab: output values [out0, out0 + len) of the
/// region, gathered into the slab's GPU staging at `staging`.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    gpu: usize,
    out0: usize,
    len: usize,
    staging: usize,
    args: GatherArgs,
}

/// The staging of one snapshot component of the model: its chunks are gathered into their
/// GPUs' device staging and copied to `[pinned_off, pinned_off + len)` of the shared pinned
/// buffer, so the region's values end up contiguous in C order.
#[derive(Debug, Clone)]
struct Slot {
    component: Component,
    region: Region,
    chunks: Vec<Chunk>,
    /// The GPUs the chunks are on.
    gpus: Vec<usize>,
    pinned_off: usize,
    len: usize,
    /// Queued and not yet taken.
    queued: bool,
}

/// A queued gather: a planned slot, or a region outside the plan read at once.
#[derive(Debug)]
enum Ticket<T> {
    Slot(usize),
    Host(Vec<T>),
}

/// One GPU's share of the probe ring.
#[derive(Debug, Clone, Copy, Default)]
struct RingGpu {
    /// Device array of sample addresses; device ring and its pinned mirror, `rows` rows of `n`
    /// values each.
    src: Ptr,
    ring: Ptr,
    pinned: Ptr,
    n: usize,
}

/// Probe rows on their way to the host. Row r (the r-th queued step) sits in ring row
/// r % rows; rows [collected, requested) are being copied to (or are in) the pinned mirror,
/// rows [requested, queued) only on the device. At most `rows` rows are not yet collected.
#[derive(Debug, Clone, Default)]
struct Probes {
    gpus: Vec<RingGpu>,
    /// Model sample k (model order) -> (GPU, column in its ring rows).
    column: Vec<(usize, usize)>,
    rows: usize,
    queued: usize,
    requested: usize,
    collected: usize,
    /// Rows collected when the ring filled, not yet drained (model order).
    host: Vec<f64>,
}

/// One flux monitor's part in one slab: accumulators `[8][nf][cells]` on the slab's GPU,
/// covering cells `[cell0, cell0 + cells)` of the monitor's plane.
#[derive(Debug, Clone, Copy)]
struct FluxPart {
    gpu: usize,
    cell0: usize,
    cells: usize,
    args: FluxArgs,
    /// The frequency table and this step's weights on the part's GPU.
    weights: FluxWeightsArgs,
}

#[derive(Debug, Clone)]
struct FluxMonitor {
    cells: usize,
    area: f64,
    nf: usize,
    parts: Vec<FluxPart>,
}

/// The slab engine over a device `D`, fields of type `T`.
pub struct Engine<D: Device, T: Real> {
    dev: D,
    ny: usize,
    nz: usize,
    plane: usize,
    inv: [T; 3],
    ch: T,
    faces: [i32; 4],
    zero_min_face: [bool; 3],
    /// (lo, hi, n) of each axis' CPML layers.
    layers: [(usize, usize, usize); 3],
    /// Per GPU, per axis: device tables [E, H] of (b, c, 1/kappa - 1).
    pml_coef: Vec<[[Ptr; 2]; 3]>,
    slabs: Vec<Slab>,
    plan: HaloPlan,
    routes: [Vec<Route>; 2],
    /// Halo streams that issued copies in the phase in flight.
    copied: Vec<bool>,
    in_flight: Option<Phase>,
    last_phase: Phase,
    finite_flag: Vec<Ptr>,
    probes: Probes,
    /// Snapshot components of the model, their device staging per GPU and the pinned buffer
    /// they all land in.
    slots: Vec<Slot>,
    staging: Vec<Ptr>,
    pinned: Ptr,
    /// Queued gathers by ticket number (`None`: free).
    tickets: Vec<Option<Ticket<T>>>,
    /// The values of the last `Ticket::Host` taken.
    host_gather: Vec<T>,
    fluxes: Vec<FluxMonitor>,
    /// E updates done.
    steps: usize,
    /// The step under way (1-based): its H update has started.
    step: usize,
    /// Per GPU: (device, pinned, capacity in values) of the scratch buffers that regions
    /// gathered outside the snapshot schedule (whole fields, tests) go through; allocated on
    /// first use, grown as needed, not counted in `allocation`.
    scratch: RefCell<Vec<(Ptr, Ptr, usize)>>,
    /// The first device failure, as the message [`Backend::failure`] gives.
    failure: RefCell<Option<String>>,
    /// Test hook: every launch from this step (1-based) on fails.
    fail_at_step: Option<usize>,
    allocation: Allocation,
    name: String,
    _t: PhantomData<T>,
}

impl<D: Device, T: Real> Engine<D, T> {
    /// Allocate and initialise the slabs of `model` split as `ranges` (tiling [0, nx)), slab
    /// `s` on GPU `gpu_of[s]` of `dev`. Fails (freeing everything) if an allocation fails.
    pub fn new(
        dev: D,
        model: &Model,
        ranges: &[SlabRange],
        gpu_of: &[usize],
        opts: EngineOptions,
        name: &str,
    ) -> Result<Self, DeviceError> {
        assert_eq!(ranges.len(), gpu_of.len(), "one GPU per slab");
        assert!(
            gpu_of.iter().all(|&g| g < dev.gpus()),
            "slab on a GPU the device lacks"
        );
        let g = &model.grid;
        let [_, ny, nz] = g.shape;
        let plane = ny * nz;
        let b = &model.boundaries;
        let t = std::mem::size_of::<T>();
        let ngpu = dev.gpus();
        assert!(model.materials.materials.len() <= crate::model::MAX_MATERIALS);

        // Material table in constant memory, CPML tables in device memory, on every GPU.
        let coef = model.materials.coefficients(g.dt);
        let mut ca = vec![T::ZERO; crate::model::MAX_MATERIALS];
        let mut cb = vec![T::ZERO; crate::model::MAX_MATERIALS];
        for (i, c) in coef.iter().enumerate() {
            ca[i] = T::from_f64(c.ca);
            cb[i] = T::from_f64(c.cb);
        }
        let mut pml_coef = Vec::with_capacity(ngpu);
        let mut finite_flag = Vec::with_capacity(ngpu);
        for gpu in 0..ngpu {
            dev.set_constant(gpu, "c_ca", bytes_of(&ca))?;
            dev.set_constant(gpu, "c_cb", bytes_of(&cb))?;
            let mut axes = [[0; 2]; 3];
            for (a, axis) in axes.iter_mut().enumerate() {
                let p = &b.profiles[a];
                for (k, v) in [&p.e, &p.h].into_iter().enumerate() {
                    if !v.is_empty() {
                        let table = pml_table::<T>(v);
                        let ptr = dev.alloc(gpu, table.len() * t)?;
                        dev.upload(gpu, ptr, bytes_of(&table))?;
                        axis[k] = ptr;
                    }
                }
            }
            pml_coef.push(axes);
            finite_flag.push(dev.alloc(gpu, 4)?);
        }

        let plan = HaloPlan::new(ranges, b);
        let mut slabs = Vec::with_capacity(ranges.len());
        let mut allocation = Allocation::default();
        for (s, &range) in ranges.iter().enumerate() {
            let gpu = gpu_of[s];
            let sizes = SlabSizes::new(model, range);
            let mut f = [0; 6];
            for p in f.iter_mut() {
                *p = dev.alloc(gpu, sizes.field_len * t)?;
            }
            let mut mat = [0; 3];
            let mut ids = vec![0u8; sizes.mat_len];
            for (c, m) in mat.iter_mut().enumerate() {
                ids.fill(0);
                model.paint_materials(Component::ALL[c], range.x0, range.x1, &mut ids);
                *m = dev.alloc(gpu, ids.len())?;
                dev.upload(gpu, *m, &ids)?;
            }
            let mut psi = [[0; 4]; 3];
            for (a, arrays) in psi.iter_mut().enumerate() {
                for p in arrays.iter_mut() {
                    if sizes.psi_len[a] > 0 {
                        *p = dev.alloc(gpu, sizes.psi_len[a] * t)?;
                    }
                }
            }
            // The x-PML planes of this slab as runs of consecutive planes and layers.
            let px = &b.profiles[0];
            let mut x_runs: Vec<XRun> = Vec::new();
            let mut q = 0;
            for l in 0..px.layers() {
                let i = px.global_index(l);
                if range.x0 <= i && i < range.x1 {
                    let p = i - range.x0 + 1;
                    match x_runs.last_mut() {
                        Some(r) if r.p1 == p && r.l0 + (r.p1 - r.p0) == l => r.p1 += 1,
                        _ => x_runs.push(XRun {
                            p0: p,
                            p1: p + 1,
                            l0: l,
                            q0: q,
                        }),
                    }
                    q += 1;
                }
            }
            debug_assert_eq!(q, sizes.x_planes);
            let sources = model.sources_in(range.x0, range.x1);
            let magnetic = model.magnetic_sources_in(range.x0, range.x1);
            allocation.add(&sizes.allocation(plane, t));
            slabs.push(Slab {
                range,
                gpu,
                f,
                mat,
                psi,
                x_runs,
                sources,
                magnetic,
                boundary: [vec![], vec![]],
                interior: [vec![], vec![]],
            });
        }

        // Boundary planes: those a halo copy reads, per phase; the rest is interior.
        for (pi, copies) in [&plan.after_h, &plan.after_e].into_iter().enumerate() {
            for (s, slab) in slabs.iter_mut().enumerate() {
                let n = slab.range.len();
                let mut marked = vec![false; n + 2];
                for c in copies.iter().filter(|c| c.src_slab == s) {
                    marked[c.src_x - slab.range.x0 + 1] = true;
                }
                slab.boundary[pi] = plane_runs(&marked, true);
                slab.interior[pi] = plane_runs(&marked, false);
            }
        }
        let mut routes = [Vec::new(), Vec::new()];
        for (pi, copies) in [&plan.after_h, &plan.after_e].into_iter().enumerate() {
            for c in copies {
                let (src_slab, dst_slab) = (&slabs[c.src_slab], &slabs[c.dst_slab]);
                let fi = c.component as usize;
                let src = src_slab.f[fi] + ((c.src_x - src_slab.range.x0 + 1) * plane * t) as u64;
                let dp = match c.dst_side {
                    HaloSide::Left => 0,
                    HaloSide::Right => dst_slab.range.len() + 1,
                };
                let dst = dst_slab.f[fi] + (dp * plane * t) as u64;
                let (src_gpu, dst_gpu) = (src_slab.gpu, dst_slab.gpu);
                let kind = if c.negate {
                    assert_eq!(src_gpu, dst_gpu, "the PMC mirror stays within a slab");
                    RouteKind::Negate
                } else if opts.staged_halos || (src_gpu != dst_gpu && !dev.peer(src_gpu, dst_gpu)) {
                    RouteKind::Staged
                } else if src_gpu == dst_gpu {
                    RouteKind::Local
                } else {
                    RouteKind::Peer
                };
                let pinned = if kind == RouteKind::Staged {
                    dev.alloc_pinned(src_gpu, plane * t)?
                } else {
                    0
                };
                routes[pi].push(Route {
                    kind,
                    src_gpu,
                    dst_gpu,
                    src,
                    dst,
                    pinned,
                });
            }
        }

        // Probes: each model sample's address on its slab's GPU, and a ring of rows per GPU.
        let slab_of = |x: usize| {
            slabs
                .iter()
                .position(|s| s.range.x0 <= x && x < s.range.x1)
                .expect("x inside the grid")
        };
        let rows = probe_ring_rows(model);
        let mut probe_ptrs: Vec<Vec<u64>> = vec![Vec::new(); ngpu];
        let mut column = Vec::new();
        for p in &model.probes {
            for &(c, idx) in &p.samples {
                let s = &slabs[slab_of(idx[0])];
                let off = ((idx[0] - s.range.x0 + 1) * plane + idx[1] * nz + idx[2]) * t;
                column.push((s.gpu, probe_ptrs[s.gpu].len()));
                probe_ptrs[s.gpu].push(s.f[c as usize] + off as u64);
            }
        }
        let mut ring = vec![RingGpu::default(); ngpu];
        for (gpu, r) in ring.iter_mut().enumerate() {
            r.n = probe_ptrs[gpu].len();
            if r.n > 0 {
                r.src = dev.alloc(gpu, r.n * 8)?;
                dev.upload(gpu, r.src, bytes_of(&probe_ptrs[gpu]))?;
                r.ring = dev.alloc(gpu, rows * r.n * t)?;
                r.pinned = dev.alloc_pinned(gpu, rows * r.n * t)?;
            }
            allocation.monitors += (r.n * 8 + 2 * rows * r.n * t) as u64;
        }
        let probes = Probes {
            gpus: ring,
            column,
            rows,
            ..Default::default()
        };

        // Snapshots: each component's chunks gathered into device staging, copied to pinned.
        let mut staging_len = vec![0usize; ngpu];
        let mut slots = Vec::new();
        let mut pinned_len = 0;
        for snap in &model.snapshots {
            for &(c, region) in &snap.regions {
                let chunks: Vec<Chunk> = region_chunks(&slabs, plane, nz, c, &region)
                    .into_iter()
                    .map(|mut ch| {
                        ch.staging = staging_len[ch.gpu];
                        staging_len[ch.gpu] += ch.len;
                        ch
                    })
                    .collect();
                let mut gpus: Vec<usize> = chunks.iter().map(|ch| ch.gpu).collect();
                gpus.dedup();
                slots.push(Slot {
                    component: c,
                    region,
                    chunks,
                    gpus,
                    pinned_off: pinned_len,
                    len: region.len(),
                    queued: false,
                });
                pinned_len += region.len();
            }
        }
        let mut staging = vec![0; ngpu];
        for (gpu, &len) in staging_len.iter().enumerate() {
            if len > 0 {
                staging[gpu] = dev.alloc(gpu, len * t)?;
            }
            allocation.monitors += (len * t) as u64;
        }
        let pinned = if pinned_len > 0 {
            dev.alloc_pinned(0, pinned_len * t)?
        } else {
            0
        };
        allocation.monitors += (pinned_len * t) as u64;
        for slot in &mut slots {
            for ch in slot.chunks.iter_mut() {
                ch.args.out = staging[ch.gpu];
                ch.args.out0 = ch.staging as i64;
            }
        }

        // Flux monitors: DFT accumulators next to the fields they read.
        let mut fluxes = Vec::new();
        for f in &model.fluxes {
            let (cells, area) = crate::flux::plane_cells(model, f);
            let nf = f.frequencies.len();
            let mut parts = Vec::new();
            for s in &slabs {
                let Some((mut args, cell0, part_cells)) = flux_part(s, f, plane, [ny, nz], t)
                else {
                    continue;
                };
                args.acc = dev.alloc(s.gpu, 8 * nf * part_cells * 8)?;
                let freq = dev.alloc(s.gpu, nf * 8)?;
                dev.upload(s.gpu, freq, bytes_of(&f.frequencies))?;
                args.w = dev.alloc(s.gpu, 4 * nf * 8)?;
                let weights = FluxWeightsArgs {
                    freq,
                    w: args.w,
                    nf: nf as i32,
                    ..Default::default()
                };
                parts.push(FluxPart {
                    gpu: s.gpu,
                    cell0,
                    cells: part_cells,
                    args,
                    weights,
                });
            }
            debug_assert_eq!(parts.iter().map(|p| p.cells).sum::<usize>(), cells);
            allocation.monitors += (64 * nf * cells) as u64;
            fluxes.push(FluxMonitor {
                cells,
                area,
                nf,
                parts,
            });
        }
        debug_assert_eq!(allocation, estimate(model, ranges, t));

        Ok(Engine {
            dev,
            ny,
            nz,
            plane,
            inv: g.cell.map(|d| T::from_f64(1.0 / d)),
            ch: T::from_f64(g.dt / crate::model::MU0),
            faces: [
                beyond(b.face(Axis::Y, false)),
                beyond(b.face(Axis::Y, true)),
                beyond(b.face(Axis::Z, false)),
                beyond(b.face(Axis::Z, true)),
            ],
            zero_min_face: [0, 1, 2].map(|a| b.faces[a][0].zeroes_tangential_e()),
            layers: [0, 1, 2].map(|a| (b.profiles[a].lo, b.profiles[a].hi, b.profiles[a].n)),
            pml_coef,
            slabs,
            plan,
            routes,
            copied: vec![false; ngpu],
            in_flight: None,
            last_phase: Phase::E,
            finite_flag,
            probes,
            slots,
            staging,
            pinned,
            tickets: Vec::new(),
            host_gather: Vec::new(),
            fluxes,
            steps: 0,
            step: 0,
            scratch: RefCell::new(vec![(0, 0, 0); ngpu]),
            failure: RefCell::new(None),
            fail_at_step: None,
            allocation,
            name: name.to_string(),
            _t: PhantomData,
        })
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Each slab's x range and GPU.
    pub fn slabs(&self) -> Vec<(SlabRange, usize)> {
        self.slabs.iter().map(|s| (s.range, s.gpu)).collect()
    }

    fn launch<A: KernelArgs>(
        &self,
        gpu: usize,
        stream: Stream,
        kernel: Kernel,
        dims: Dims,
        args: &A,
    ) -> Result<(), DeviceError> {
        if let Some(step) = self.fail_at_step.filter(|&s| self.step >= s) {
            return Err(DeviceError::Failed(format!(
                "launching {}: injected failure from step {step} (test hook)",
                kernel.name()
            )));
        }
        // SAFETY: every launch below builds `args` for `kernel` from this engine's own
        // allocations, sized by `SlabSizes` for the planes and cells the launch covers.
        unsafe { self.dev.launch(gpu, stream, kernel, dims, args) }
    }

    fn update_args(&self, s: &Slab, p0: usize, p1: usize, chunk: u32) -> UpdateArgs<T> {
        let [idx, idy, idz] = self.inv;
        UpdateArgs {
            ex: s.f[0],
            ey: s.f[1],
            ez: s.f[2],
            hx: s.f[3],
            hy: s.f[4],
            hz: s.f[5],
            mx: s.mat[0],
            my: s.mat[1],
            mz: s.mat[2],
            plane: self.plane as i64,
            ny: self.ny as i32,
            nz: self.nz as i32,
            p0: p0 as i32,
            p1: p1 as i32,
            chunk: chunk as i32,
            y_lo: self.faces[0],
            y_hi: self.faces[1],
            z_lo: self.faces[2],
            z_hi: self.faces[3],
            pad: 0,
            idx,
            idy,
            idz,
            ch: self.ch,
        }
    }

    fn cpml_args(&self, s: &Slab, axis: usize, phase: Phase, p0: usize, p1: usize) -> CpmlArgs<T> {
        let (lo, hi, n) = self.layers[axis];
        // psi arrays 0, 1 belong to E, 2, 3 to H; coefficient tables are (E, H).
        let (first, table) = match phase {
            Phase::E => (0, 0),
            Phase::H => (2, 1),
        };
        CpmlArgs {
            ex: s.f[0],
            ey: s.f[1],
            ez: s.f[2],
            hx: s.f[3],
            hy: s.f[4],
            hz: s.f[5],
            psi0: s.psi[axis][first],
            psi1: s.psi[axis][first + 1],
            coef: self.pml_coef[s.gpu][axis][table],
            mx: s.mat[0],
            my: s.mat[1],
            mz: s.mat[2],
            plane: self.plane as i64,
            ny: self.ny as i32,
            nz: self.nz as i32,
            p0: p0 as i32,
            p1: p1 as i32,
            lo: lo as i32,
            hi: hi as i32,
            n_axis: n as i32,
            l0: 0,
            q0: 0,
            pad: 0,
            inv: self.inv[axis],
            ch: self.ch,
        }
    }

    /// Everything one half step does to planes [p0, p1) of slab `s`, in the CPU backend's
    /// order: main update, CPML x, y, z; for E then the sources in model order and PEC faces.
    fn run_planes(
        &self,
        s: &Slab,
        phase: Phase,
        p0: usize,
        p1: usize,
        currents: &[f64],
    ) -> Result<(), DeviceError> {
        let gpu = s.gpu;
        let np = p1 - p0;
        if np == 0 {
            return Ok(());
        }
        let (dims, chunk) = Dims::columns(self.plane as u64, np as u32);
        let main = match phase {
            Phase::H => Kernel::UpdateH,
            Phase::E => Kernel::UpdateE,
        };
        self.launch(
            gpu,
            Stream::Compute,
            main,
            dims,
            &self.update_args(s, p0, p1, chunk),
        )?;
        let [kx, ky, kz] = match phase {
            Phase::H => [Kernel::CpmlXH, Kernel::CpmlYH, Kernel::CpmlZH],
            Phase::E => [Kernel::CpmlXE, Kernel::CpmlYE, Kernel::CpmlZE],
        };
        for run in &s.x_runs {
            let (a, b) = (run.p0.max(p0), run.p1.min(p1));
            if a < b {
                let mut args = self.cpml_args(s, 0, phase, a, b);
                args.l0 = (run.l0 + a - run.p0) as i32;
                args.q0 = (run.q0 + a - run.p0) as i32;
                self.launch(
                    gpu,
                    Stream::Compute,
                    kx,
                    Dims::elements(((b - a) * self.plane) as u64, 1),
                    &args,
                )?;
            }
        }
        let (ylo, yhi, _) = self.layers[1];
        if ylo + yhi > 0 {
            let n = (np * (ylo + yhi) * self.nz) as u64;
            self.launch(
                gpu,
                Stream::Compute,
                ky,
                Dims::elements(n, 1),
                &self.cpml_args(s, 1, phase, p0, p1),
            )?;
        }
        let (zlo, zhi, _) = self.layers[2];
        if zlo + zhi > 0 {
            let n = (np * self.ny * (zlo + zhi)) as u64;
            self.launch(
                gpu,
                Stream::Compute,
                kz,
                Dims::elements(n, 1),
                &self.cpml_args(s, 2, phase, p0, p1),
            )?;
        }
        // Phase H: the magnetic sheets (H -= ch M); phase E: the electric ones (E -= cb J).
        let sheets = match phase {
            Phase::H => &s.magnetic,
            Phase::E => &s.sources,
        };
        for &(k, c, cells) in sheets {
            let (a, b) = (cells[0][0].max(p0), cells[0][1].min(p1));
            if a >= b {
                continue;
            }
            let (fi, mat, magnetic) = match phase {
                Phase::H => (3 + c as usize % 3, Ptr::default(), 1),
                Phase::E => (c as usize, s.mat[c as usize], 0),
            };
            let args = SourceArgs {
                f: s.f[fi],
                mat,
                plane: self.plane as i64,
                nz: self.nz as i32,
                p0: a as i32,
                p1: b as i32,
                y0: cells[1][0] as i32,
                y1: cells[1][1] as i32,
                z0: cells[2][0] as i32,
                z1: cells[2][1] as i32,
                magnetic,
                j: T::from_f64(currents[k]),
                ch: self.ch,
            };
            let n = ((b - a) * (cells[1][1] - cells[1][0]) * (cells[2][1] - cells[2][0])) as u64;
            self.launch(
                gpu,
                Stream::Compute,
                Kernel::InjectSource,
                Dims::elements(n, 1),
                &args,
            )?;
        }
        if phase == Phase::E {
            let x_face = self.zero_min_face[0] && s.range.x0 == 0 && p0 <= 1 && 1 < p1;
            let [_, y_face, z_face] = self.zero_min_face;
            let threads = [
                if x_face { self.plane } else { 0 },
                if y_face { np * self.nz } else { 0 },
                if z_face { np * self.ny } else { 0 },
            ]
            .into_iter()
            .max()
            .unwrap_or(0);
            if threads > 0 {
                let args = PecArgs {
                    ex: s.f[0],
                    ey: s.f[1],
                    ez: s.f[2],
                    plane: self.plane as i64,
                    ny: self.ny as i32,
                    nz: self.nz as i32,
                    p0: p0 as i32,
                    p1: p1 as i32,
                    x_face: x_face as i32,
                    y_face: y_face as i32,
                    z_face: z_face as i32,
                    pad: 0,
                };
                self.launch(
                    gpu,
                    Stream::Compute,
                    Kernel::ZeroPec,
                    Dims::elements(threads as u64, 1),
                    &args,
                )?;
            }
        }
        Ok(())
    }

    /// One half step on every slab, halo copies started as soon as their planes are ready.
    fn phase(&mut self, phase: Phase, currents: &[f64]) -> Result<(), DeviceError> {
        let pi = phase as usize;
        let ngpu = self.dev.gpus();
        self.last_phase = phase;
        if self.routes[pi].is_empty() {
            for s in &self.slabs {
                self.run_planes(s, phase, 1, s.range.len() + 1, currents)?;
            }
            self.in_flight = None;
            return Ok(());
        }
        for gpu in 0..ngpu {
            self.dev.record(gpu, Stream::Compute, Event::PhaseStart)?;
        }
        for s in &self.slabs {
            for &(p0, p1) in &s.boundary[pi] {
                self.run_planes(s, phase, p0, p1, currents)?;
            }
        }
        for gpu in 0..ngpu {
            self.dev.record(gpu, Stream::Compute, Event::Boundary)?;
        }
        self.issue_copies(pi)?;
        for s in &self.slabs {
            for &(p0, p1) in &s.interior[pi] {
                self.run_planes(s, phase, p0, p1, currents)?;
            }
        }
        self.in_flight = Some(phase);
        Ok(())
    }

    /// Queue the halo copies of phase `pi` on the halo streams.
    fn issue_copies(&mut self, pi: usize) -> Result<(), DeviceError> {
        let ngpu = self.dev.gpus();
        let bytes = self.plane * std::mem::size_of::<T>();
        let routes = &self.routes[pi];
        let mut used = vec![false; ngpu];
        for (a, used_a) in used.iter_mut().enumerate() {
            let mine: Vec<&Route> = routes.iter().filter(|r| r.src_gpu == a).collect();
            if mine.is_empty() {
                continue;
            }
            self.dev.wait(a, Stream::Halo, a, Event::Boundary)?;
            let mut dsts: Vec<usize> = mine
                .iter()
                .filter(|r| r.kind != RouteKind::Staged)
                .map(|r| r.dst_gpu)
                .collect();
            dsts.sort_unstable();
            dsts.dedup();
            for b in dsts {
                self.dev.wait(a, Stream::Halo, b, Event::PhaseStart)?;
            }
            let mut staged = false;
            for r in &mine {
                match r.kind {
                    RouteKind::Local | RouteKind::Peer => self.dev.copy_dtod(
                        a,
                        Stream::Halo,
                        (r.dst_gpu, r.dst),
                        (a, r.src),
                        bytes,
                    )?,
                    RouteKind::Negate => {
                        let args = NegateArgs {
                            dst: r.dst,
                            src: r.src,
                            n: self.plane as i64,
                        };
                        self.launch(
                            a,
                            Stream::Halo,
                            Kernel::CopyNegated,
                            Dims::elements(self.plane as u64, 1),
                            &args,
                        )?;
                    }
                    RouteKind::Staged => {
                        self.dev
                            .copy_dtoh(a, Stream::Halo, r.pinned, r.src, bytes)?;
                        staged = true;
                    }
                }
            }
            if staged {
                self.dev.record(a, Stream::Halo, Event::Staged)?;
            }
            *used_a = true;
        }
        // Staged planes land from the destination GPU's halo stream.
        for (b, used_b) in used.iter_mut().enumerate() {
            let landing: Vec<&Route> = routes
                .iter()
                .filter(|r| r.kind == RouteKind::Staged && r.dst_gpu == b)
                .collect();
            if landing.is_empty() {
                continue;
            }
            let mut srcs: Vec<usize> = landing.iter().map(|r| r.src_gpu).collect();
            srcs.sort_unstable();
            srcs.dedup();
            for a in srcs {
                self.dev.wait(b, Stream::Halo, a, Event::Staged)?;
            }
            self.dev.wait(b, Stream::Halo, b, Event::PhaseStart)?;
            for r in landing {
                self.dev
                    .copy_htod(b, Stream::Halo, r.dst, r.pinned, bytes)?;
            }
            *used_b = true;
        }
        for (gpu, &u) in used.iter().enumerate() {
            if u {
                self.dev.record(gpu, Stream::Halo, Event::Copied)?;
            }
        }
        self.copied = used;
        Ok(())
    }

    /// Make every compute stream wait for the copies in flight.
    fn finish_copies(&mut self) -> Result<(), DeviceError> {
        if self.in_flight.take().is_none() {
            return Ok(());
        }
        for gpu in 0..self.dev.gpus() {
            for (a, &u) in self.copied.iter().enumerate() {
                if u {
                    self.dev.wait(gpu, Stream::Compute, a, Event::Copied)?;
                }
            }
        }
        Ok(())
    }

    /// Record the first failure; `None` if `r` failed.
    fn ok<V>(&self, r: Result<V, DeviceError>, doing: &str) -> Option<V> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                let mut f = self.failure.borrow_mut();
                if f.is_none() {
                    *f = Some(format!("the GPU failed while {doing}: {e}"));
                }
                None
            }
        }
    }

    fn failed(&self) -> bool {
        self.failure.borrow().is_some()
    }

    /// Test hook: make every kernel launch from step `step` (1-based) on fail, as a GPU that
    /// fails mid-run would (`YEE_CUDA_FAIL_AT_STEP` for `yee run`).
    pub fn fail_at_step(&mut self, step: usize) {
        self.fail_at_step = Some(step);
    }

    /// Write this step's probe samples into the next ring row (reading the ring first if it
    /// is full of rows not yet read).
    fn queue_probe_row(&mut self) -> Result<(), DeviceError> {
        let t = std::mem::size_of::<T>();
        if self.probes.queued - self.probes.collected == self.probes.rows {
            let mut host = std::mem::take(&mut self.probes.host);
            let r = self.read_probe_rows(&mut host, true);
            self.probes.host = host;
            r?;
        }
        let row = self.probes.queued % self.probes.rows;
        for (gpu, r) in self.probes.gpus.iter().enumerate() {
            if r.n == 0 {
                continue;
            }
            let args = ProbeArgs {
                src: r.src,
                out: r.ring + (row * r.n * t) as u64,
                n: r.n as i32,
                pad: 0,
            };
            self.launch(
                gpu,
                Stream::Compute,
                Kernel::ProbeGather,
                Dims::elements(r.n as u64, 1),
                &args,
            )?;
        }
        self.probes.queued += 1;
        Ok(())
    }

    /// Start copying the rows queued since the last request to the pinned ring.
    fn request_probe_rows(&mut self) -> Result<(), DeviceError> {
        let p = &self.probes;
        let (first, queued) = (p.requested, p.queued);
        let count = queued - first;
        if count == 0 {
            return Ok(());
        }
        let t = std::mem::size_of::<T>();
        let start = first % p.rows;
        let head = count.min(p.rows - start);
        for (gpu, r) in p.gpus.iter().enumerate() {
            if r.n == 0 {
                continue;
            }
            let row_bytes = r.n * t;
            self.dev.record(gpu, Stream::Compute, Event::ProbesQueued)?;
            self.dev
                .wait(gpu, Stream::Monitor, gpu, Event::ProbesQueued)?;
            let off = (start * row_bytes) as u64;
            self.dev.copy_dtoh(
                gpu,
                Stream::Monitor,
                r.pinned + off,
                r.ring + off,
                head * row_bytes,
            )?;
            if count > head {
                self.dev.copy_dtoh(
                    gpu,
                    Stream::Monitor,
                    r.pinned,
                    r.ring,
                    (count - head) * row_bytes,
                )?;
            }
            self.dev.record(gpu, Stream::Monitor, Event::ProbesCopied)?;
        }
        self.probes.requested = queued;
        Ok(())
    }

    /// Append the requested rows to `out` (model sample order) once their copy has landed:
    /// waiting for it with `wait`, else only if it already has (and then request the rows
    /// queued since). With `wait`, every queued row is requested first.
    fn read_probe_rows(&mut self, out: &mut Vec<f64>, wait: bool) -> Result<(), DeviceError> {
        if wait {
            self.request_probe_rows()?;
        }
        let p = &self.probes;
        if p.requested > p.collected {
            let mut landed = true;
            for (gpu, r) in p.gpus.iter().enumerate() {
                if r.n > 0 {
                    if wait {
                        self.dev.sync_event(gpu, Event::ProbesCopied)?;
                    } else if !self.dev.query(gpu, Event::ProbesCopied)? {
                        landed = false;
                    }
                }
            }
            if landed {
                out.reserve((p.requested - p.collected) * p.column.len());
                for row in p.collected..p.requested {
                    let slot = row % p.rows;
                    for &(gpu, i) in &p.column {
                        let r = &p.gpus[gpu];
                        // SAFETY: the pinned ring of this GPU holds `rows * n` values of T,
                        // allocated by the device and alive as long as it; this row's copy has
                        // landed (event above) and no copy writes its slot until it is
                        // collected (`queued - collected <= rows`).
                        let v = unsafe { *(r.pinned as *const T).add(slot * r.n + i) };
                        out.push(v.to_f64());
                    }
                }
                self.probes.collected = self.probes.requested;
            }
        }
        // One request in flight at a time: its event then stands for its rows alone, and a
        // later drain finds them even if the device is always a little behind.
        if !wait && self.probes.requested == self.probes.collected {
            self.request_probe_rows()?;
        }
        Ok(())
    }

    /// Gather slot `i` on the compute stream and copy it to pinned memory on the monitor
    /// stream, recording `MonitorsDone`.
    fn queue_slot(&mut self, i: usize) -> Result<(), DeviceError> {
        let t = std::mem::size_of::<T>();
        let slot = &self.slots[i];
        for &gpu in &slot.gpus {
            let mine = || slot.chunks.iter().filter(move |c| c.gpu == gpu);
            for c in mine() {
                self.launch(
                    gpu,
                    Stream::Compute,
                    Kernel::SnapshotGather,
                    Dims::elements(c.len as u64, 1),
                    &c.args,
                )?;
            }
            self.dev.record(gpu, Stream::Compute, Event::Gathered)?;
            self.dev.wait(gpu, Stream::Monitor, gpu, Event::Gathered)?;
            for c in mine() {
                self.dev.copy_dtoh(
                    gpu,
                    Stream::Monitor,
                    self.pinned + ((slot.pinned_off + c.out0) * t) as u64,
                    self.staging[gpu] + (c.staging * t) as u64,
                    c.len * t,
                )?;
            }
            self.dev.record(gpu, Stream::Monitor, Event::MonitorsDone)?;
        }
        self.slots[i].queued = true;
        Ok(())
    }

    /// Read flux monitor `index`'s accumulators back and form its spectrum.
    fn read_flux(&self, index: usize) -> Result<crate::flux::FluxDft, DeviceError> {
        let m = &self.fluxes[index];
        let n = m.nf * m.cells;
        let mut re: [Vec<f64>; 4] = [0; 4].map(|_| vec![0.0; n]);
        let mut im: [Vec<f64>; 4] = [0; 4].map(|_| vec![0.0; n]);
        for part in &m.parts {
            let pc = part.cells;
            let mut acc = vec![0.0f64; 8 * m.nf * pc];
            // SAFETY: plain f64 values; any bytes are valid.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(acc.as_mut_ptr().cast::<u8>(), acc.len() * 8)
            };
            self.dev.download(part.gpu, part.args.acc, bytes)?;
            for q in 0..8 {
                let dst = if q < 4 { &mut re[q] } else { &mut im[q - 4] };
                for f in 0..m.nf {
                    let src = &acc[(q * m.nf + f) * pc..][..pc];
                    dst[f * m.cells + part.cell0..][..pc].copy_from_slice(src);
                }
            }
        }
        Ok(crate::flux::FluxDft {
            re,
            im,
            cells: m.cells,
            area: m.area,
        })
    }

    fn slab_of(&self, x: usize) -> &Slab {
        self.slabs
            .iter()
            .find(|s| s.range.x0 <= x && x < s.range.x1)
            .expect("x index inside the grid")
    }

    /// Gather a region outside the monitor schedule: on the device into the scratch buffers,
    /// one copy to pinned memory per GPU, then wait.
    fn gather_now(
        &self,
        component: Component,
        region: &Region,
        out: &mut [T],
    ) -> Result<(), DeviceError> {
        let t = std::mem::size_of::<T>();
        let ngpu = self.dev.gpus();
        let mut chunks = region_chunks(&self.slabs, self.plane, self.nz, component, region);
        let mut need = vec![0usize; ngpu];
        for ch in chunks.iter_mut() {
            ch.staging = need[ch.gpu];
            need[ch.gpu] += ch.len;
        }
        let mut scratch = self.scratch.borrow_mut();
        for (gpu, &n) in need.iter().enumerate() {
            if n > scratch[gpu].2 {
                let cap = n.max(2 * scratch[gpu].2);
                scratch[gpu] = (
                    self.dev.alloc(gpu, cap * t)?,
                    self.dev.alloc_pinned(gpu, cap * t)?,
                    cap,
                );
            }
        }
        for ch in chunks.iter_mut() {
            ch.args.out = scratch[ch.gpu].0;
            ch.args.out0 = ch.staging as i64;
            self.launch(
                ch.gpu,
                Stream::Compute,
                Kernel::SnapshotGather,
                Dims::elements(ch.len as u64, 1),
                &ch.args,
            )?;
        }
        for (gpu, &n) in need.iter().enumerate() {
            if n > 0 {
                self.dev
                    .copy_dtoh(gpu, Stream::Compute, scratch[gpu].1, scratch[gpu].0, n * t)?;
                self.dev.record(gpu, Stream::Compute, Event::Fallback)?;
            }
        }
        for (gpu, &n) in need.iter().enumerate() {
            if n > 0 {
                self.dev.sync_event(gpu, Event::Fallback)?;
            }
        }
        for ch in &chunks {
            // SAFETY: the pinned scratch of this GPU holds at least `staging + len` values and
            // the copy into it has completed (sync_event above).
            let src = unsafe {
                std::slice::from_raw_parts((scratch[ch.gpu].1 as *const T).add(ch.staging), ch.len)
            };
            out[ch.out0..ch.out0 + ch.len].copy_from_slice(src);
        }
        Ok(())
    }
}

/// The parts of a strided `region` of component `c`, one per slab it crosses, in output order:
/// each part is a contiguous run of the region's C-order output (x is outermost). `staging`
/// and the args' `out` / `out0` are left for the caller.
fn region_chunks(
    slabs: &[Slab],
    plane: usize,
    nz: usize,
    c: Component,
    region: &Region,
) -> Vec<Chunk> {
    let [cx, cy, cz] = region.counts();
    let mut chunks = Vec::new();
    let mut out0 = 0;
    for slab in slabs {
        // Region samples along x that fall in this slab.
        let inside = |ii: &usize| {
            let x = region.start[0] + ii * region.stride[0];
            slab.range.x0 <= x && x < slab.range.x1
        };
        let xs: Vec<usize> = (0..cx).filter(inside).collect();
        let Some(&first) = xs.first() else { continue };
        debug_assert_eq!(first * cy * cz, out0);
        let len = xs.len() * cy * cz;
        let args = GatherArgs {
            f: slab.f[c as usize],
            out: 0,
            plane: plane as i64,
            out0: 0,
            nz: nz as i32,
            p0: (region.start[0] + first * region.stride[0] - slab.range.x0 + 1) as i32,
            cx: xs.len() as i32,
            cy: cy as i32,
            cz: cz as i32,
            sx: region.stride[0] as i32,
            sy: region.stride[1] as i32,
            sz: region.stride[2] as i32,
            y0: region.start[1] as i32,
            z0: region.start[2] as i32,
        };
        chunks.push(Chunk {
            gpu: slab.gpu,
            out0,
            len,
            staging: 0,
            args,
        });
        out0 += len;
    }
    chunks
}

/// The part of flux monitor `f` inside slab `s`: its kernel arguments (without `acc`, `freq`
/// and the times), its first cell in the monitor's plane and its cell count; `None` if the
/// plane does not cross the slab. Offsets in values: the E plane's first cell at `base`, the H
/// plane below it `below` earlier (for an x plane at the slab's first plane, the left halo,
/// which holds the neighbour's tangential H after the H exchange).
fn flux_part(
    s: &Slab,
    f: &crate::model::Flux,
    plane: usize,
    [ny, nz]: [usize; 2],
    t: usize,
) -> Option<(FluxArgs, usize, usize)> {
    let a = f.axis as usize;
    let (b, c) = crate::flux::tangential(a);
    let (k, x0, n) = (f.index, s.range.x0, s.range.len());
    // (base, below, su, sv, nv, cells, cell0): cell (u, v) of the part at base + u su + v sv.
    let (base, below, su, sv, nv, cells, cell0) = match a {
        0 if (x0..s.range.x1).contains(&k) => ((k - x0 + 1) * plane, plane, nz, 1, nz, ny * nz, 0),
        0 => return None,
        1 => (plane + k * nz, nz, plane, 1, nz, n * nz, x0 * nz),
        _ => (plane + k, 1, plane, nz, ny, n * ny, x0 * ny),
    };
    let at = |comp: usize, off: usize| s.f[comp] + (off * t) as u64;
    let args = FluxArgs {
        eb: at(b, base),
        ec: at(c, base),
        hb0: at(3 + b, base - below),
        hb1: at(3 + b, base),
        hc0: at(3 + c, base - below),
        hc1: at(3 + c, base),
        acc: 0,
        w: 0,
        su: su as i64,
        sv: sv as i64,
        cells: cells as i64,
        nv: nv as i32,
        nf: f.frequencies.len() as i32,
    };
    Some((args, cell0, cells))
}

/// Split planes 1..=n by `marked[p] == want` into ranges [p0, p1).
fn plane_runs(marked: &[bool], want: bool) -> Vec<(usize, usize)> {
    let n = marked.len() - 2;
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (p, &m) in marked.iter().enumerate().take(n + 1).skip(1) {
        if m == want {
            match out.last_mut() {
                Some(r) if r.1 == p => r.1 = p + 1,
                _ => out.push((p, p + 1)),
            }
        }
    }
    out
}

impl<D: Device, T: Real> Backend for Engine<D, T> {
    type Real = T;

    fn update_h(&mut self, magnetic_values: &[f64]) {
        self.step = self.steps + 1;
        // Which half step the next exchange follows, also after a failure (when no phase
        // runs): the time loop keeps calling exchange with the plan's lists.
        self.last_phase = Phase::H;
        if !self.failed() {
            let r = self.phase(Phase::H, magnetic_values);
            self.ok(r, "updating H");
        }
    }

    fn update_e(&mut self, source_values: &[f64]) {
        self.last_phase = Phase::E;
        if !self.failed() {
            let r = self.phase(Phase::E, source_values);
            self.ok(r, "updating E");
        }
        self.steps += 1;
    }

    /// Waits for the halo copies the last update started. The engine replays its own
    /// [`HaloPlan`], built from the same slab ranges and boundaries as the caller's, so
    /// `copies` must be that plan's list for the half step just done.
    fn exchange(&mut self, copies: &[HaloCopy]) {
        let planned = match self.last_phase {
            Phase::H => &self.plan.after_h,
            Phase::E => &self.plan.after_e,
        };
        debug_assert_eq!(
            planned.as_slice(),
            copies,
            "the engine replays the halo plan of its own slabs"
        );
        if !self.failed() {
            let r = self.finish_copies();
            self.ok(r, "exchanging halos");
        }
    }

    fn sample(&self, component: Component, index: [usize; 3]) -> f64 {
        if self.failed() {
            return 0.0;
        }
        let s = self.slab_of(index[0]);
        let t = std::mem::size_of::<T>();
        let off = ((index[0] - s.range.x0 + 1) * self.plane + index[1] * self.nz + index[2]) * t;
        let mut v = [T::ZERO];
        // SAFETY: one plain float value; any bytes are valid.
        let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), t) };
        let r = self
            .dev
            .download(s.gpu, s.f[component as usize] + off as u64, bytes);
        self.ok(r, "reading a sample");
        v[0].to_f64()
    }

    fn gather(&self, component: Component, region: &Region, out: &mut [T]) {
        if self.failed() {
            out.fill(T::ZERO);
            return;
        }
        let r = self.gather_now(component, region, out);
        self.ok(r, "gathering a region");
    }

    fn queue_probes(&mut self, samples: &[(Component, [usize; 3])]) {
        debug_assert_eq!(
            samples.len(),
            self.probes.column.len(),
            "the model's probe samples"
        );
        if self.probes.column.is_empty() || self.failed() {
            return;
        }
        let r = self.queue_probe_row();
        self.ok(r, "recording probe samples");
    }

    fn drain_probes(&mut self, out: &mut Vec<f64>, wait: bool) {
        out.append(&mut self.probes.host);
        if self.probes.column.is_empty() || self.failed() {
            return;
        }
        let r = self.read_probe_rows(out, wait);
        self.ok(r, "reading probe samples");
    }

    fn queue_gather(&mut self, component: Component, region: &Region) -> GatherTicket {
        let ticket = if self.failed() {
            Ticket::Host(Vec::new())
        } else if let Some(i) = self
            .slots
            .iter()
            .position(|s| !s.queued && s.component == component && s.region == *region)
        {
            let r = self.queue_slot(i);
            self.ok(r, "gathering a snapshot");
            Ticket::Slot(i)
        } else {
            // Not a snapshot of the model (or one queued twice): read it at once.
            let mut v = vec![T::ZERO; region.len()];
            self.gather(component, region, &mut v);
            Ticket::Host(v)
        };
        let id = match self.tickets.iter().position(|t| t.is_none()) {
            Some(id) => id,
            None => {
                self.tickets.push(None);
                self.tickets.len() - 1
            }
        };
        self.tickets[id] = Some(ticket);
        GatherTicket(id)
    }

    fn gather_ready(&self, ticket: &GatherTicket) -> bool {
        match &self.tickets[ticket.0] {
            Some(Ticket::Slot(i)) if !self.failed() => {
                for &gpu in &self.slots[*i].gpus {
                    let r = self.dev.query(gpu, Event::MonitorsDone);
                    // After a failure the ticket is "ready": take_gather returns None at once.
                    if self.ok(r, "checking on a snapshot") == Some(false) {
                        return false;
                    }
                }
                true
            }
            _ => true,
        }
    }

    fn take_gather(&mut self, ticket: GatherTicket) -> Option<&[T]> {
        let taken = self.tickets[ticket.0]
            .take()
            .expect("a ticket is taken once");
        match taken {
            Ticket::Slot(i) => {
                self.slots[i].queued = false;
                for &gpu in &self.slots[i].gpus {
                    if self.failed() {
                        break;
                    }
                    let r = self.dev.sync_event(gpu, Event::MonitorsDone);
                    self.ok(r, "waiting for a snapshot");
                }
                if self.failed() {
                    return None;
                }
                let s = &self.slots[i];
                // SAFETY: the pinned buffer holds every slot's values, `pinned_off + len` at
                // most, allocated by the device and alive as long as it; the copies into this
                // slot's range have completed (sync_event above) and nothing writes it until
                // it is queued again, which needs `&mut self`.
                Some(unsafe {
                    std::slice::from_raw_parts((self.pinned as *const T).add(s.pinned_off), s.len)
                })
            }
            Ticket::Host(v) => {
                if self.failed() {
                    return None;
                }
                self.host_gather = v;
                Some(&self.host_gather)
            }
        }
    }

    fn accumulate_flux(&mut self, step: usize, dt: f64) {
        if self.failed() {
            return;
        }
        let t_e = step as f64 * dt;
        let t_h = t_e - 0.5 * dt;
        for m in 0..self.fluxes.len() {
            for p in 0..self.fluxes[m].parts.len() {
                let part = &self.fluxes[m].parts[p];
                let nf = self.fluxes[m].nf;
                // The weights once per frequency, then the accumulation, in stream order.
                let weights = FluxWeightsArgs {
                    t_e,
                    t_h,
                    dt,
                    ..part.weights
                };
                let (gpu, args, cells) = (part.gpu, part.args, part.cells);
                let dims = Dims::elements(nf as u64, 1);
                let r = self.launch(gpu, Stream::Compute, Kernel::FluxWeights, dims, &weights);
                if self.ok(r, "computing flux DFT weights").is_none() {
                    return;
                }
                let dims = Dims::elements((cells * nf) as u64, 1);
                let r = self.launch(gpu, Stream::Compute, Kernel::FluxDft, dims, &args);
                if self.ok(r, "accumulating a flux DFT").is_none() {
                    return;
                }
            }
        }
    }

    fn flux_dft(&mut self, index: usize) -> Option<crate::flux::FluxDft> {
        if self.failed() {
            return None;
        }
        let r = self.read_flux(index);
        self.ok(r, "reading a flux spectrum")
    }

    fn all_finite(&self) -> bool {
        if self.failed() {
            return true;
        }
        let mut finite = true;
        let mut check = || -> Result<(), DeviceError> {
            for s in &self.slabs {
                let n = s.range.len();
                let args = FiniteArgs {
                    f: s.f,
                    flag: self.finite_flag[s.gpu],
                    begin: self.plane as i64,
                    count: (n * self.plane) as i64,
                };
                self.launch(
                    s.gpu,
                    Stream::Compute,
                    Kernel::CheckFinite,
                    Dims::elements((n * self.plane) as u64, 6),
                    &args,
                )?;
            }
            for gpu in 0..self.dev.gpus() {
                let mut flag = [0u8; 4];
                self.dev.download(gpu, self.finite_flag[gpu], &mut flag)?;
                if flag != [0; 4] {
                    finite = false;
                    self.dev.upload(gpu, self.finite_flag[gpu], &[0; 4])?;
                }
            }
            Ok(())
        };
        let r = check();
        self.ok(r, "checking for NaN");
        finite
    }

    fn failure(&self) -> Option<String> {
        self.failure.borrow().clone()
    }

    fn allocation(&self) -> Allocation {
        self.allocation
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
