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
//! After the E exchange, probes and due snapshots are gathered on the compute stream into a
//! device staging buffer and copied to pinned host memory on the monitor stream, so the next
//! step's kernels may be queued while the copy runs; `sample` and `gather` wait for that copy
//! only when they read.

use super::args::*;
use crate::backend::{Allocation, Backend};
use crate::decomp::{HaloCopy, HaloPlan, HaloSide, SlabRange};
use crate::model::{Axis, BoundaryKind, Component, Model, Region};
use crate::real::Real;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
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
}

/// Number of [`Event`] kinds.
pub const EVENTS: usize = 7;

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

/// Monitor staging bytes for the whole model: probe pointers, and device plus pinned staging
/// for every probe sample and every snapshot value.
pub fn monitor_bytes(model: &Model, real: usize) -> u64 {
    let samples: usize = model.probes.iter().map(|p| p.samples.len()).sum();
    let values: usize = model
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter().map(|(_, r)| r.len()))
        .sum();
    (samples * 8 + 2 * (samples + values) * real) as u64
}

/// What the engine allocates on the GPUs and in pinned host memory for `model` split as
/// `ranges` (the CUDA backend's memory plan): the same categories as the CPU backend, with
/// `materials` = 3 one-byte ids per owned cell (no per-row summaries on the GPU) and
/// `monitors` = [`monitor_bytes`]. Not counted: the CPML coefficient tables (a few hundred
/// bytes per GPU), the NaN flag (4 bytes per GPU), and, between GPUs without peer access (or
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

/// Paint the material ids of one E component over a slab's owned cells: objects in order, each
/// only over the index box its bounds cover (the same painting as the CPU backend's).
fn paint_materials(model: &Model, c: Component, range: SlabRange, out: &mut [u8]) {
    let g = &model.grid;
    let [_, ny, nz] = g.shape;
    let off = c.offset();
    for obj in &model.objects {
        let (lo, hi) = obj.bounds();
        let idx = |a: usize, x: f64| (x - g.origin[a]) / g.cell[a] - off[a];
        let first = |a: usize| (idx(a, lo[a]) - 1e-6).ceil().max(0.0) as usize;
        let last = |a: usize, n: usize| {
            ((idx(a, hi[a]) + 1e-6).floor() + 1.0).clamp(0.0, n as f64) as usize
        };
        let (i0, i1) = (first(0).max(range.x0), last(0, g.shape[0]).min(range.x1));
        let (j0, j1) = (first(1), last(1, ny));
        let (k0, k1) = (first(2), last(2, nz));
        for i in i0..i1 {
            for j in j0..j1 {
                for k in k0..k1 {
                    let p = g.position(c, [i as f64, j as f64, k as f64]);
                    if obj.contains(p) {
                        out[((i - range.x0) * ny + j) * nz + k] = obj.material;
                    }
                }
            }
        }
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

#[derive(Debug, Clone)]
struct SnapshotStage {
    every: usize,
    /// (component, region, chunks) per component.
    regions: Vec<(Component, Region, Vec<Chunk>)>,
}

/// Per-GPU monitor staging.
#[derive(Debug, Clone, Default)]
struct GpuMonitors {
    /// Device staging and its pinned mirror, `len` values each.
    staging: Ptr,
    pinned: Ptr,
    len: usize,
    /// Device array of probe sample addresses, and their count.
    probe_src: Ptr,
    probes: usize,
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
    gpu_mon: Vec<GpuMonitors>,
    /// Model probe sample -> (GPU, index in its staging).
    probe_index: HashMap<(Component, [usize; 3]), (usize, usize)>,
    snapshots: Vec<SnapshotStage>,
    /// E updates done.
    steps: usize,
    /// The step whose monitors are in staging, and which snapshots were gathered for it.
    gathered_step: Option<usize>,
    snapshot_due: Vec<bool>,
    monitors_synced: Cell<bool>,
    /// Per GPU: (device, pinned, capacity in values) of the scratch buffers that regions
    /// gathered outside the snapshot schedule (flux planes, whole fields) go through;
    /// allocated on first use, grown as needed, not counted in `allocation`.
    scratch: RefCell<Vec<(Ptr, Ptr, usize)>>,
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
                paint_materials(model, Component::ALL[c], range, &mut ids);
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
            let sources = model
                .sources
                .iter()
                .enumerate()
                .filter_map(|(k, src)| {
                    let x0 = src.cells[0][0].max(range.x0);
                    let x1 = src.cells[0][1].min(range.x1);
                    (x0 < x1).then(|| {
                        (
                            k,
                            src.component,
                            [
                                [x0 - range.x0 + 1, x1 - range.x0 + 1],
                                src.cells[1],
                                src.cells[2],
                            ],
                        )
                    })
                })
                .collect();
            allocation.add(&sizes.allocation(plane, t));
            slabs.push(Slab {
                range,
                gpu,
                f,
                mat,
                psi,
                x_runs,
                sources,
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

        // Monitors: probe sample addresses and snapshot chunks, per GPU.
        let mut gpu_mon = vec![GpuMonitors::default(); ngpu];
        let mut probe_ptrs: Vec<Vec<u64>> = vec![Vec::new(); ngpu];
        let mut probe_index = HashMap::new();
        let slab_of = |x: usize| {
            slabs
                .iter()
                .position(|s| s.range.x0 <= x && x < s.range.x1)
                .expect("x inside the grid")
        };
        for p in &model.probes {
            for &(c, idx) in &p.samples {
                if probe_index.contains_key(&(c, idx)) {
                    continue;
                }
                let s = &slabs[slab_of(idx[0])];
                let off = ((idx[0] - s.range.x0 + 1) * plane + idx[1] * nz + idx[2]) * t;
                probe_index.insert((c, idx), (s.gpu, probe_ptrs[s.gpu].len()));
                probe_ptrs[s.gpu].push(s.f[c as usize] + off as u64);
            }
        }
        let mut staging_len: Vec<usize> = probe_ptrs.iter().map(|v| v.len()).collect();
        let mut snapshots = Vec::new();
        for snap in &model.snapshots {
            let mut regions = Vec::new();
            for &(c, region) in &snap.regions {
                let chunks = region_chunks(&slabs, plane, nz, c, &region)
                    .into_iter()
                    .map(|mut ch| {
                        ch.staging = staging_len[ch.gpu];
                        staging_len[ch.gpu] += ch.len;
                        ch
                    })
                    .collect();
                regions.push((c, region, chunks));
            }
            snapshots.push(SnapshotStage {
                every: snap.every,
                regions,
            });
        }
        for gpu in 0..ngpu {
            let m = &mut gpu_mon[gpu];
            m.len = staging_len[gpu];
            m.probes = probe_ptrs[gpu].len();
            if m.probes > 0 {
                m.probe_src = dev.alloc(gpu, m.probes * 8)?;
                dev.upload(gpu, m.probe_src, bytes_of(&probe_ptrs[gpu]))?;
            }
            if m.len > 0 {
                m.staging = dev.alloc(gpu, m.len * t)?;
                m.pinned = dev.alloc_pinned(gpu, m.len * t)?;
            }
            allocation.monitors += (m.probes * 8 + 2 * m.len * t) as u64;
        }
        for stage in &mut snapshots {
            for (_, _, chunks) in &mut stage.regions {
                for ch in chunks.iter_mut() {
                    ch.args.out = gpu_mon[ch.gpu].staging;
                    ch.args.out0 = ch.staging as i64;
                }
            }
        }
        debug_assert_eq!(allocation, estimate(model, ranges, t));

        let n_snap = snapshots.len();
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
            gpu_mon,
            probe_index,
            snapshots,
            steps: 0,
            gathered_step: None,
            snapshot_due: vec![false; n_snap],
            monitors_synced: Cell::new(true),
            scratch: RefCell::new(vec![(0, 0, 0); ngpu]),
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
        if phase == Phase::E {
            for &(k, c, cells) in &s.sources {
                let (a, b) = (cells[0][0].max(p0), cells[0][1].min(p1));
                if a >= b {
                    continue;
                }
                let ci = c as usize;
                let args = SourceArgs {
                    f: s.f[ci],
                    mat: s.mat[ci],
                    plane: self.plane as i64,
                    nz: self.nz as i32,
                    p0: a as i32,
                    p1: b as i32,
                    y0: cells[1][0] as i32,
                    y1: cells[1][1] as i32,
                    z0: cells[2][0] as i32,
                    z1: cells[2][1] as i32,
                    pad: 0,
                    j: T::from_f64(currents[k]),
                };
                let n =
                    ((b - a) * (cells[1][1] - cells[1][0]) * (cells[2][1] - cells[2][0])) as u64;
                self.launch(
                    gpu,
                    Stream::Compute,
                    Kernel::InjectSource,
                    Dims::elements(n, 1),
                    &args,
                )?;
            }
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
        // The staged monitor values describe the fields before this half step.
        self.gathered_step = None;
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

    /// After the E exchange: gather probes and due snapshots, and start their copy to pinned
    /// host memory.
    fn gather_monitors(&mut self) -> Result<(), DeviceError> {
        let step = self.steps;
        for (s, stage) in self.snapshots.iter().enumerate() {
            self.snapshot_due[s] = step % stage.every == 0;
        }
        let t = std::mem::size_of::<T>();
        let any_probe = self.gpu_mon.iter().any(|m| m.probes > 0);
        if !any_probe && !self.snapshot_due.iter().any(|&d| d) {
            return Ok(());
        }
        for gpu in 0..self.dev.gpus() {
            let m = &self.gpu_mon[gpu];
            let chunks: Vec<&Chunk> = self
                .snapshots
                .iter()
                .zip(&self.snapshot_due)
                .filter(|(_, &due)| due)
                .flat_map(|(st, _)| st.regions.iter().flat_map(|(_, _, c)| c.iter()))
                .filter(|c| c.gpu == gpu)
                .collect();
            if m.probes == 0 && chunks.is_empty() {
                continue;
            }
            // The staging is free once the previous copy to pinned memory is done.
            self.dev
                .wait(gpu, Stream::Compute, gpu, Event::MonitorsDone)?;
            if m.probes > 0 {
                let args = ProbeArgs {
                    src: m.probe_src,
                    out: m.staging,
                    n: m.probes as i32,
                    pad: 0,
                };
                self.launch(
                    gpu,
                    Stream::Compute,
                    Kernel::ProbeGather,
                    Dims::elements(m.probes as u64, 1),
                    &args,
                )?;
            }
            for c in &chunks {
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
            if m.probes > 0 {
                self.dev
                    .copy_dtoh(gpu, Stream::Monitor, m.pinned, m.staging, m.probes * t)?;
            }
            for c in &chunks {
                let off = (c.staging * t) as u64;
                self.dev.copy_dtoh(
                    gpu,
                    Stream::Monitor,
                    m.pinned + off,
                    m.staging + off,
                    c.len * t,
                )?;
            }
            self.dev.record(gpu, Stream::Monitor, Event::MonitorsDone)?;
        }
        self.gathered_step = Some(step);
        self.monitors_synced.set(false);
        Ok(())
    }

    /// Wait until the monitor staging of this step is in pinned memory.
    fn sync_monitors(&self) {
        if self.monitors_synced.get() {
            return;
        }
        for gpu in 0..self.dev.gpus() {
            fail(
                self.dev.sync_event(gpu, Event::MonitorsDone),
                "waiting for monitor data",
            );
        }
        self.monitors_synced.set(true);
    }

    fn pinned_values(&self, gpu: usize, first: usize, len: usize) -> &[T] {
        let m = &self.gpu_mon[gpu];
        assert!(first + len <= m.len);
        // SAFETY: `pinned` holds `m.len` values of T, allocated by the device and alive as long
        // as it; the copy into it finished (sync_monitors) and nothing writes it until the
        // next gather, which needs `&mut self`.
        unsafe { std::slice::from_raw_parts((m.pinned as *const T).add(first), len) }
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

/// A device failure in the middle of a run cannot be returned through [`Backend`]: stop with
/// the driver's words.
fn fail<V>(r: Result<V, DeviceError>, doing: &str) -> V {
    match r {
        Ok(v) => v,
        Err(e) => panic!("the GPU failed while {doing}: {e}"),
    }
}

impl<D: Device, T: Real> Backend for Engine<D, T> {
    type Real = T;

    fn update_h(&mut self) {
        let r = self.phase(Phase::H, &[]);
        fail(r, "updating H");
    }

    fn update_e(&mut self, source_values: &[f64]) {
        let r = self.phase(Phase::E, source_values);
        fail(r, "updating E");
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
        let r = self.finish_copies();
        fail(r, "exchanging halos");
        if self.last_phase == Phase::E {
            let r = self.gather_monitors();
            fail(r, "gathering monitors");
        }
    }

    fn sample(&self, component: Component, index: [usize; 3]) -> f64 {
        if self.gathered_step == Some(self.steps) {
            if let Some(&(gpu, i)) = self.probe_index.get(&(component, index)) {
                self.sync_monitors();
                return self.pinned_values(gpu, i, 1)[0].to_f64();
            }
        }
        let s = self.slab_of(index[0]);
        let t = std::mem::size_of::<T>();
        let off = ((index[0] - s.range.x0 + 1) * self.plane + index[1] * self.nz + index[2]) * t;
        let mut v = [T::ZERO];
        // SAFETY: one plain float value; any bytes are valid.
        let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), t) };
        fail(
            self.dev
                .download(s.gpu, s.f[component as usize] + off as u64, bytes),
            "reading a sample",
        );
        v[0].to_f64()
    }

    fn gather(&self, component: Component, region: &Region, out: &mut [T]) {
        if self.gathered_step == Some(self.steps) {
            let staged = self
                .snapshots
                .iter()
                .zip(&self.snapshot_due)
                .filter(|(_, &due)| due)
                .flat_map(|(st, _)| st.regions.iter())
                .find(|(c, r, _)| *c == component && r == region);
            if let Some((_, _, chunks)) = staged {
                self.sync_monitors();
                for c in chunks {
                    out[c.out0..c.out0 + c.len]
                        .copy_from_slice(self.pinned_values(c.gpu, c.staging, c.len));
                }
                return;
            }
        }
        let r = self.gather_now(component, region, out);
        fail(r, "gathering a region");
    }

    fn all_finite(&self) -> bool {
        for s in &self.slabs {
            let n = s.range.len();
            let args = FiniteArgs {
                f: s.f,
                flag: self.finite_flag[s.gpu],
                begin: self.plane as i64,
                count: (n * self.plane) as i64,
            };
            fail(
                self.launch(
                    s.gpu,
                    Stream::Compute,
                    Kernel::CheckFinite,
                    Dims::elements((n * self.plane) as u64, 6),
                    &args,
                ),
                "checking for NaN",
            );
        }
        let mut finite = true;
        for gpu in 0..self.dev.gpus() {
            let mut flag = [0u8; 4];
            fail(
                self.dev.download(gpu, self.finite_flag[gpu], &mut flag),
                "reading the NaN flag",
            );
            if flag != [0; 4] {
                finite = false;
                fail(
                    self.dev.upload(gpu, self.finite_flag[gpu], &[0; 4]),
                    "resetting the NaN flag",
                );
            }
        }
        finite
    }

    fn allocation(&self) -> Allocation {
        self.allocation
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}
