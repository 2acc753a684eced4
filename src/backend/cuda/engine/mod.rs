//! The slab engine of the CUDA backend, written once over a [`Device`]: the CUDA driver in
//! production ([`super::CudaDevice`]), the same kernels compiled for the host in the tests.
//!
//! Everything that decides *what* runs lives in this module, one job per file:
//! - `device`: the [`Device`] trait (allocate, copy, launch, record/wait on events), streams
//!   and events; swapping the device swaps nothing else;
//! - `slab`: one slab's buffers and their sizes ([`SlabSizes`], the CUDA side of the memory
//!   plan), its x-CPML plane runs, its boundary and interior planes;
//! - `passes`: the kernel launches of each pass of [`crate::backend::pass`] on a plane range;
//! - `halo`: the halo copy routes and their overlap with the interior update;
//! - `monitors`: the probe ring, snapshot staging, flux accumulators and scratch reads;
//! - `clock`: the GPU's own time per phase, from timing marks around the calls below;
//! - here: building the engine and the [`Backend`] implementation over them.
//!
//! One half step (H or E) on every GPU:
//! 1. `begin_half`: record `PhaseStart` on the compute stream (all earlier work that reads a
//!    halo is queued before it);
//! 2. `run_pass`, for each pass of the half step's list: the pass on the boundary planes (the
//!    planes another slab's halo copies from);
//! 3. `exchange`: record `Boundary`; each source GPU's halo stream waits for its own `Boundary`
//!    and every destination's `PhaseStart`, then copies (same device: `cuMemcpyDtoDAsync`;
//!    other device with peer access: `cuMemcpyPeerAsync`; otherwise through pinned host
//!    memory, the destination's halo stream doing the host-to-device half; PMC mirror:
//!    `copy_negated`); each halo stream that worked records `Copied`;
//! 4. still in `exchange`: every pass again, in order, on the interior planes, overlapping the
//!    copies; then every compute stream waits for every `Copied`.
//!
//! Without halo copies (one slab, no periodic x) each pass runs on every plane at once.
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

mod bloch;
mod build;
mod clock;
mod device;
mod halo;
mod monitors;
mod passes;
mod ports;
pub use ports::{staged_trade_bytes, trade_bytes};
mod slab;
mod state;

pub use device::{Device, DeviceError, Event, KernelArgs, Stream, EVENTS, MARKS};
pub use monitors::{monitor_bytes, probe_ring_rows, PROBE_RING_ROWS};
pub use slab::{DispersiveLen, SlabSizes};

use super::args::*;
use crate::backend::{Allocation, Backend, GatherTicket, Half, Pass, Phase};
use crate::decomp::{HaloCopy, HaloPlan, HaloSide, ProcessHalos, SlabRange};
use crate::model::{Component, Model, Region};
use crate::operator::{Beyond, Operator};
use crate::real::Real;
use halo::Route;
use monitors::{FluxMonitor, Probes, Slot, Ticket};
use slab::Slab;
use std::cell::RefCell;
use std::marker::PhantomData;

/// The CUDA engine's options that are not in the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Send every halo plane through pinned host memory, even between slabs on one GPU or
    /// GPUs with peer access (tests the staged path on one GPU).
    pub staged_halos: bool,
}

/// What the engine was doing in half step `half`, for a failure message.
fn doing(half: Half) -> &'static str {
    match half {
        Half::H => "updating H",
        Half::E => "updating E",
    }
}

/// What the engine allocates on the GPUs and in pinned host memory for `model` split as
/// `ranges` (the CUDA backend's memory plan): the same categories as the CPU backend, with
/// `materials` = 3 one-byte ids per owned cell, 6 when some material is magnetic (no per-row
/// summaries on the GPU), and a u32 offset and four weights per conformal PEC cut face
/// ([`crate::plan::bytes::conformal_face_bytes`]), `dispersive` = a u32 index, E^n and the
/// pole state per dispersive cell (from the plan's per-plane counts), `passes` = each cell
/// pass's state and coefficient rows over its cells in the slab
/// ([`crate::plan::Layout::gpu_cell_pass_values`]) and `monitors` = every slab's monitor
/// buffers on its GPU plus their pinned mirrors (the lumped terminals' probe samples among
/// them), as the plan counts them ([`crate::plan::bytes::MonitorLayout`]). Counted by the plan apart from these categories:
/// the CPML coefficient tables and the NaN flag of every GPU
/// ([`crate::plan::Layout::gpu_table_bytes`], within the context reserve) and, between GPUs
/// without peer access (or with [`EngineOptions::staged_halos`]), one pinned plane per staged
/// halo copy ([`crate::plan::Layout::staged_halo_total`]). Not counted: the device and pinned
/// scratch buffers of regions gathered outside the snapshot schedule (whole-field reads by
/// tests and tools), sized to the largest such region and allocated on first use.
pub fn estimate(model: &Model, ranges: &[SlabRange], real: usize) -> Allocation {
    estimate_for_process(
        model,
        ranges,
        real,
        &ProcessHalos::own(ranges, &model.boundaries),
    )
}

/// [`estimate`] for one process's part of a run over several ([`CudaEngine::for_process`]):
/// besides, in `halos`, the pinned host planes its planes for other processes are read
/// through (one, when it sends any) and those it receives are written from (one per plane
/// received in a half step), [`ProcessHalos::staging_planes`] of them.
pub fn estimate_for_process(
    model: &Model,
    ranges: &[SlabRange],
    real: usize,
    halos: &ProcessHalos,
) -> Allocation {
    let [_, ny, nz] = model.grid.shape;
    let mut a = Allocation::default();
    let layout = crate::plan::Layout::of(model);
    let monitors = &layout.monitors;
    for r in ranges {
        a.add(&SlabSizes::of(&layout, *r).allocation(ny * nz, real));
        a.monitors += monitors.device_bytes(*r, real);
    }
    a.monitors += monitors.pinned_bytes_in(ranges, real);
    a.halos += halos.staging_planes() as u64 * crate::plan::bytes::staged_halo_bytes(ny * nz, real);
    a
}

/// The slab engine over a device `D`, fields of type `T`.
pub struct CudaEngine<D: Device, T: Real> {
    dev: D,
    /// Cells along x in the whole grid (this process's slabs may hold fewer).
    nx: usize,
    ny: usize,
    nz: usize,
    plane: usize,
    /// Per GPU: device tables of the derivatives' steps, [primal (H), dual (E)][axis], the
    /// operator's `inv_primal` and `inv_dual` over the whole grid.
    inv: Vec<[[Ptr; 3]; 2]>,
    ch: T,
    /// Some material is magnetic: H has material ids and the tables `c_hca`, `c_hcb`.
    magnetic: bool,
    /// Per material with poles: the dispersive kernel's arguments, without the group's arrays.
    poles: Vec<Option<DispersiveArgs<T>>>,
    /// The surface ports, one part per GPU that holds slabs ([`ports`]); empty without.
    ports: Vec<ports::DevicePorts<T>>,
    /// Per axis with a Bloch phase, its rotation and steps ([`bloch`]).
    bloch: [Option<bloch::BlochAxis<T>>; 3],
    /// The TF/SF source's 1-D grid: (nodes, Courant number, index of the drive in the H half
    /// step's values).
    tfsf: Option<(usize, T, usize)>,
    faces: [i32; 4],
    zero_min_face: [bool; 3],
    /// (lo, hi, n) of each axis' CPML layers.
    layers: [(usize, usize, usize); 3],
    /// Per GPU, per axis: device tables [E, H] of (b, c, 1/kappa - 1, 1/d).
    pml_coef: Vec<[[Ptr; 2]; 3]>,
    slabs: Vec<Slab>,
    plan: HaloPlan,
    routes: [Vec<Route>; 2],
    /// Over MPI ranks: the pinned plane the planes for other processes are read through (0:
    /// none is sent), and per half step the pinned planes received halos are written from, one
    /// per plane, so the uploads queue without a wait ([`Backend::write_halo`]).
    process_out: Ptr,
    process_in: [Vec<Ptr>; 2],
    /// Received halos written so far in the half step under way.
    process_in_used: usize,
    /// Per phase (after H, after E): whether the passes run on the boundary planes first and
    /// defer the interior to the exchange: when the phase has halo copies within the process
    /// (`routes`), or planes another process reads (over MPI ranks), so that those are read
    /// while the interior is still to run and travel while it runs.
    defers: [bool; 2],
    /// Halo streams that issued copies in the phase in flight.
    copied: Vec<bool>,
    in_flight: Option<Half>,
    /// The half step under way (or last done).
    half: Half,
    /// The passes of that half step still to run on the interior planes, with their values.
    /// (The first `deferred_len` slots; the others are kept for reuse.)
    deferred: Vec<(Pass, Vec<f64>)>,
    deferred_len: usize,
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
    /// Bytes of fields per part of a checkpoint ([`crate::backend::parts::FIELD_PART_BYTES`]).
    checkpoint_part_bytes: usize,
    allocation: Allocation,
    name: String,
    /// The GPU time per phase ([`Backend::device_times`]).
    clock: RefCell<clock::Clock>,
    _t: PhantomData<T>,
}

impl<D: Device, T: Real> CudaEngine<D, T> {
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
        let halos = ProcessHalos::own(ranges, &model.boundaries);
        Self::for_process(dev, model, ranges, gpu_of, opts, name, halos)
    }

    /// [`CudaEngine::new`] for one process's part of a run over several (MPI ranks): `ranges` are
    /// its own slabs (contiguous, inside [0, nx)), `model` the model its monitors were cut to
    /// ([`crate::decomp::ranks::RankLayout::local_model`]), and `halos` its copies between its own
    /// slabs and the planes it sends: those are updated with the boundary planes, before the
    /// interior passes are deferred, so [`Backend::read_plane`] reads them final once the
    /// half step's passes are queued.
    #[allow(clippy::too_many_arguments)] // new's arguments and the process's halos
    pub fn for_process(
        dev: D,
        model: &Model,
        ranges: &[SlabRange],
        gpu_of: &[usize],
        opts: EngineOptions,
        name: &str,
        halos: ProcessHalos,
    ) -> Result<Self, DeviceError> {
        assert_eq!(ranges.len(), gpu_of.len(), "one GPU per slab");
        assert!(
            gpu_of.iter().all(|&g| g < dev.gpus()),
            "slab on a GPU the device lacks"
        );
        let g = &model.grid;
        let [_, ny, nz] = g.shape;
        let plane = ny * nz;
        let t = std::mem::size_of::<T>();
        let ngpu = dev.gpus();
        assert!(model.materials.materials.len() <= crate::model::MAX_MATERIALS);
        build::check_poles(model)?;
        build::check_cell_passes(model)?;
        let op = Operator::<T>::new(model);
        let tables = build::tables(&dev, &op)?;
        let magnetic_materials = tables.magnetic;

        let process_planes = halos.staging_planes();
        let ProcessHalos {
            plan,
            sent,
            received,
        } = halos;
        let layout = crate::plan::Layout::of(model);
        let mut slabs = Vec::with_capacity(ranges.len());
        let mut allocation = Allocation::default();
        for (&range, &gpu) in ranges.iter().zip(gpu_of) {
            let (slab, allocated) = build::slab(
                &dev,
                model,
                (&op, &layout),
                (range, gpu),
                magnetic_materials,
            )?;
            allocation.add(&allocated);
            slabs.push(slab);
        }
        let ports = ports::build(&dev, model, &op, &slabs, opts.staged_halos)?;
        allocation.dispersive += ports.iter().map(|p| p.bytes()).sum::<u64>();
        slab::mark_boundaries(&mut slabs, &plan, &sent);
        let routes = halo::routes(&dev, &slabs, &plan, plane, t, opts)?;
        // The ports' stencils cross the slabs' boundary planes: the E half step of a model
        // with ports runs every pass on every plane before its halo copies.
        let defers = [Half::H, Half::E].map(|half| {
            let pi = half.index();
            (ports.is_empty() || half == Half::H)
                && (!routes[pi].is_empty() || !sent[pi].is_empty())
        });
        let process_bytes = crate::plan::bytes::staged_halo_bytes(plane, t);
        let (process_out, process_in) =
            build::process_planes(&dev, &sent, &received, process_bytes)?;
        allocation.halos += process_planes as u64 * process_bytes;

        let (probes, probe_bytes) = build::probes::<D, T>(&dev, model, &slabs)?;
        let (slots, staging, pinned, snapshot_bytes) =
            build::snapshots::<D, T>(&dev, model, &slabs)?;
        let (fluxes, flux_bytes) = build::fluxes::<D, T>(&dev, model, &slabs)?;
        allocation.monitors += probe_bytes + snapshot_bytes + flux_bytes;
        debug_assert_eq!(allocation, {
            let mut estimate = estimate_for_process(
                model,
                ranges,
                t,
                &ProcessHalos {
                    plan: plan.clone(),
                    sent: sent.clone(),
                    received,
                },
            );
            estimate.dispersive += ports::trade_bytes(&model.surface_ports(), ranges, gpu_of, t);
            estimate
        });

        let clock = RefCell::new(clock::Clock::new(ngpu, dev.has_marks()));
        Ok(CudaEngine {
            dev,
            nx: g.shape[0],
            ny,
            nz,
            plane,
            inv: tables.inv,
            ch: op.ch,
            magnetic: magnetic_materials,
            poles: tables.poles,
            ports,
            bloch: bloch::axes(&op),
            tfsf: op
                .tfsf
                .as_ref()
                .map(|t| (t.nodes, t.courant, t.drive_index)),
            faces: [op.faces.y_lo, op.faces.y_hi, op.faces.z_lo, op.faces.z_hi].map(Beyond::code),
            zero_min_face: op.faces.zero_min_face,
            layers: op.pml.each_ref().map(|p| (p.lo, p.hi, p.n)),
            pml_coef: tables.pml_coef,
            slabs,
            plan,
            routes,
            process_out,
            process_in,
            process_in_used: 0,
            defers,
            copied: vec![false; ngpu],
            in_flight: None,
            half: Half::E,
            deferred: Vec::new(),
            deferred_len: 0,
            finite_flag: tables.finite_flag,
            probes,
            slots,
            staging,
            pinned,
            tickets: Vec::new(),
            host_gather: Vec::new(),
            fluxes,
            step: 0,
            scratch: RefCell::new(vec![(0, 0, 0); ngpu]),
            failure: RefCell::new(None),
            fail_at_step: None,
            checkpoint_part_bytes: crate::backend::parts::FIELD_PART_BYTES,
            allocation,
            name: name.to_string(),
            clock,
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

    /// Hand a checkpoint the fields in parts of at most `bytes` (at least a plane) instead of
    /// [`crate::backend::parts::FIELD_PART_BYTES`]: for tests, on grids far smaller than the
    /// default part.
    pub fn set_checkpoint_part_bytes(&mut self, bytes: usize) {
        self.checkpoint_part_bytes = bytes;
    }

    /// Test hook: make every kernel launch from step `step` (1-based) on fail, as a GPU that
    /// fails mid-run would (`YEE_CUDA_FAIL_AT_STEP` for `yee run`).
    pub fn fail_at_step(&mut self, step: usize) {
        self.fail_at_step = Some(step);
    }

    /// The clock: a call of `phase` begins.
    fn clock_begin(&self, phase: Phase) {
        self.clock.borrow_mut().begin(&self.dev, phase, self.step);
    }

    /// The clock: the call under way goes on in `phase`.
    fn clock_switch(&self, phase: Phase) {
        self.clock.borrow_mut().switch(&self.dev, phase);
    }

    /// The clock: the call under way ends.
    fn clock_end(&self) {
        self.clock.borrow_mut().end(&self.dev);
    }

    /// Launch the flux DFT of every flux monitor sampled at `step` (E at `t_e`, H at `t_h`).
    fn accumulate_flux_at(&self, step: usize, t_e: f64, t_h: f64, dt: f64) {
        for m in 0..self.fluxes.len() {
            let (nf, decimation) = (self.fluxes[m].nf, self.fluxes[m].decimation);
            if step % decimation != 0 {
                continue;
            }
            // Each sample stands for `decimation` steps (the CPU's weight, src/flux.rs), and
            // its weights are the CPU's, computed here: they travel in the launch arguments,
            // FLUX_FREQS_PER_LAUNCH frequencies at a time.
            let weight = dt * decimation as f64;
            let w = crate::flux::sample_weights(&self.fluxes[m].frequencies, t_e, t_h, weight);
            debug_assert_eq!(w.len(), nf);
            for p in 0..self.fluxes[m].patches.len() {
                for i in 0..self.fluxes[m].patches[p].parts.len() {
                    let part = self.fluxes[m].patches[p].parts[i];
                    let dims = Dims::elements(part.cells as u64, 1);
                    for (k, chunk) in w.chunks(FLUX_FREQS_PER_LAUNCH).enumerate() {
                        let mut args = part.args;
                        args.f0 = (k * FLUX_FREQS_PER_LAUNCH) as i32;
                        args.nw = chunk.len() as i32;
                        args.w[..chunk.len()].copy_from_slice(chunk);
                        let r =
                            self.launch(part.gpu, Stream::Compute, Kernel::FluxDft, dims, &args);
                        if self.ok(r, "accumulating a flux DFT").is_none() {
                            return;
                        }
                    }
                }
            }
        }
    }

    fn slab_of(&self, x: usize) -> &Slab {
        self.slabs
            .iter()
            .find(|s| s.range.x0 <= x && x < s.range.x1)
            .expect("x index inside the grid")
    }
}

impl<D: Device, T: Real> Backend for CudaEngine<D, T> {
    type Real = T;

    fn link_ports(
        &mut self,
        links: &dyn Fn() -> Box<dyn crate::backend::ports::PortLinks<T>>,
    ) -> Result<(), String> {
        self.link_process_ports(links);
        Ok(())
    }

    fn begin_half(&mut self, half: Half) {
        if half == Half::H {
            self.step += 1;
        }
        self.process_in_used = 0;
        if !self.failed() {
            let r = self.begin(half);
            self.ok(r, doing(half));
        }
        // Which half step the next passes and exchange belong to, also after a failure (when
        // nothing runs): the time loop keeps calling them with the plan's lists.
        self.half = half;
    }

    fn run_pass(&mut self, half: Half, pass: Pass, values: &[f64]) {
        debug_assert_eq!(half, self.half, "a pass of the half step begun");
        if !self.failed() {
            self.clock_begin(Phase::Pass(half, pass));
            let r = self.pass(pass, values);
            self.ok(r, doing(half));
            self.clock_end();
        }
    }

    fn has_bloch_pass(&self) -> bool {
        true
    }

    fn bloch_images(&mut self, half: Half, out: &mut Vec<T>) {
        self.read_bloch_images(half, out);
    }

    fn bloch_correct(&mut self, half: Half, own: &[T], other: &[T], imaginary: bool) {
        self.correct_bloch(half, own, other, imaginary);
    }

    /// Issues the halo copies (and the interior planes the last passes left), then makes
    /// every compute stream wait for the copies. The engine replays its own [`HaloPlan`],
    /// built from the same slab ranges and boundaries as the caller's, so `copies` must be
    /// that plan's list for the half step just done.
    fn exchange(&mut self, copies: &[HaloCopy]) {
        let planned = match self.half {
            Half::H => &self.plan.after_h,
            Half::E => &self.plan.after_e,
        };
        debug_assert_eq!(
            planned.as_slice(),
            copies,
            "the engine replays the halo plan of its own slabs"
        );
        self.clock_begin(Phase::Exchange);
        if !self.failed() {
            let r = self.issue_exchange();
            self.ok(r, doing(self.half));
        }
        if !self.failed() {
            let r = self.finish_copies();
            self.ok(r, "exchanging halos");
        }
        self.clock_end();
    }

    fn x_planes(&self) -> std::ops::Range<usize> {
        let first = self.slabs.first().map_or(0, |s| s.range.x0);
        first..self.slabs.last().map_or(first, |s| s.range.x1)
    }

    fn read_plane(&mut self, component: Component, slab: usize, x: usize, out: &mut [T]) {
        if self.failed() {
            out.fill(T::ZERO);
            return;
        }
        let s = &self.slabs[slab];
        let t = std::mem::size_of::<T>();
        let off = ((x - s.range.x0 + 1) * self.plane * t) as u64;
        if self.process_out != 0 && out.len() == self.plane {
            // Through the pinned plane, behind the kernels of the compute stream only (the
            // interior a half step defers is not queued yet: it runs while the plane travels).
            let (gpu, src, pinned) = (s.gpu, s.f[component as usize] + off, self.process_out);
            let r = self
                .dev
                .copy_dtoh(gpu, Stream::Compute, pinned, src, self.plane * t)
                .and_then(|_| self.dev.record(gpu, Stream::Compute, Event::PlaneRead))
                .and_then(|_| self.dev.sync_event(gpu, Event::PlaneRead));
            if self
                .ok(r, "reading a halo plane for another process")
                .is_some()
            {
                // SAFETY: the pinned plane holds `plane` values of T, copied in above.
                let values = unsafe { std::slice::from_raw_parts(pinned as *const T, self.plane) };
                out.copy_from_slice(values);
            } else {
                out.fill(T::ZERO);
            }
            return;
        }
        // SAFETY: plain float values; any bytes are valid.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out),
            )
        };
        // A download waits for the work queued on the GPU: the plane is the one the half step
        // just computed.
        let r = self
            .dev
            .download(s.gpu, s.f[component as usize] + off, bytes);
        self.ok(r, "reading a halo plane for another process");
    }

    fn write_halo(&mut self, component: Component, slab: usize, side: HaloSide, data: &[T]) {
        if self.failed() {
            return;
        }
        let s = &self.slabs[slab];
        let t = std::mem::size_of::<T>();
        let p = match side {
            HaloSide::Left => 0,
            HaloSide::Right => s.range.len() + 1,
        };
        let off = (p * self.plane * t) as u64;
        let dst = s.f[component as usize] + off;
        let gpu = s.gpu;
        let half = self.half.index();
        if let Some(&pinned) = self.process_in[half].get(self.process_in_used) {
            if data.len() == self.plane {
                // The plane of the same slot a step ago has long left (its copy queued behind
                // that step's kernels); the first write of a half step makes sure of it.
                let wait = if self.process_in_used == 0 {
                    self.dev.sync_event(gpu, Event::HaloWritten)
                } else {
                    Ok(())
                };
                self.process_in_used += 1;
                if self
                    .ok(wait, "writing a halo plane from another process")
                    .is_none()
                {
                    return;
                }
                // SAFETY: the pinned plane holds `plane` values of T; no copy reads it now.
                unsafe { std::slice::from_raw_parts_mut(pinned as *mut T, self.plane) }
                    .copy_from_slice(data);
                let r = self
                    .dev
                    .copy_htod(gpu, Stream::Compute, dst, pinned, self.plane * t)
                    .and_then(|_| self.dev.record(gpu, Stream::Compute, Event::HaloWritten));
                self.ok(r, "writing a halo plane from another process");
                return;
            }
        }
        // SAFETY: plain float values viewed as bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data))
        };
        let r = self.dev.upload(gpu, dst, bytes);
        self.ok(r, "writing a halo plane from another process");
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
        self.clock_begin(Phase::Monitors);
        let r = self.queue_probe_row();
        self.ok(r, "recording probe samples");
        self.clock_end();
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
            self.clock_begin(Phase::Monitors);
            let r = self.queue_slot(i);
            self.ok(r, "gathering a snapshot");
            self.clock_end();
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
        let sampled = self
            .fluxes
            .iter()
            .any(|f| step % f.decimation == 0 && !f.patches.is_empty());
        if sampled {
            self.clock_begin(Phase::Monitors);
        }
        self.accumulate_flux_at(step, t_e, t_h, dt);
        if sampled {
            self.clock_end();
        }
    }

    fn flux_dft(&mut self, index: usize) -> Option<crate::flux::FluxDft> {
        if self.failed() {
            return None;
        }
        self.clock_begin(Phase::Monitors);
        let r = self.read_flux(index);
        self.clock_end();
        self.ok(r, "reading a flux spectrum")
    }

    fn flux_power(&mut self, index: usize) -> Option<Vec<f64>> {
        if self.failed() {
            return None;
        }
        self.clock_begin(Phase::Monitors);
        let r = self.read_flux_power(index);
        self.clock_end();
        self.ok(r, "forming a flux spectrum")
    }

    fn device_times(&mut self) -> Option<crate::backend::PhaseTimes> {
        self.clock.get_mut().times(&self.dev)
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
            self.clock_end();
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
        self.clock_begin(Phase::Checks);
        let r = check();
        self.clock_end();
        self.ok(r, "checking for NaN");
        finite
    }

    fn failure(&self) -> Option<String> {
        self.failure.borrow().clone()
    }

    fn allocation(&self) -> Allocation {
        self.allocation
    }

    /// The host copy of the largest snapshot region and the flux patches' quadrature weights;
    /// the flux DFTs stay on the GPUs.
    fn host_monitor_bytes(&self, model: &Model) -> u64 {
        crate::plan::Layout::of(model)
            .with_precision(T::PRECISION)
            .gpu_engine_host_monitor_bytes()
    }

    /// The flux patches' quadrature weights; the DFTs stay on the GPUs.
    fn flux_host_bytes(&self, model: &Model) -> u64 {
        crate::plan::Layout::of(model).gpu_flux_weight_bytes()
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn export_state(&mut self) -> Option<crate::backend::State<T>> {
        if self.failed() {
            return None;
        }
        let r = self.export();
        self.ok(r, "reading the state for a checkpoint")
    }

    fn state_shape(&mut self) -> Option<crate::backend::StateShape> {
        (!self.failed()).then(|| self.shape())
    }

    fn write_state(
        &mut self,
        step: usize,
        sink: &mut dyn crate::backend::StateSink<T>,
    ) -> Result<bool, String> {
        if self.failed() {
            return Ok(false);
        }
        let r = self.write_parts(step, sink);
        match self.ok(r, "reading the state for a checkpoint") {
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    fn import_state_from(
        &mut self,
        read: &crate::backend::StateReader<'_, T>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), String> {
        if self.failed() {
            return Err(self.failure().unwrap_or_default());
        }
        let r = self.import_from(&|request| read(Some(request)), halo_copies);
        match self.ok(r, "loading the state of a checkpoint") {
            Some(fits) => fits,
            None => Err(self.failure().unwrap_or_default()),
        }
    }

    fn import_state(
        &mut self,
        state: &crate::backend::State<T>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), crate::backend::StateError> {
        if self.failed() {
            return Err(crate::backend::StateError(
                self.failure().unwrap_or_default(),
            ));
        }
        let r = self.import(state, halo_copies);
        match self.ok(r, "loading the state of a checkpoint") {
            Some(fits) => fits,
            None => Err(crate::backend::StateError(
                self.failure().unwrap_or_default(),
            )),
        }
    }
}
