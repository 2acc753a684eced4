//! Backends: how a set of slabs is stored and stepped on one kind of hardware.
//!
//! The time loop ([`crate::run`]), the halo plan ([`crate::decomp`]), the coefficient tables
//! ([`crate::operator`]) and the list of passes of a step ([`pass`]) are shared; a backend only
//! knows how to run each pass on its slabs, copy halo planes and read fields back. A run steps
//! one [`Engine`], an enum over the concrete backends.
//!
//! Monitors are *queued*: the time loop asks for this step's probe samples, snapshot regions
//! and flux DFTs right after the E exchange and collects the values later, so a backend on a
//! device (CUDA) records them on the device and copies them to pinned host memory while the
//! next steps run, instead of waiting for the device every step. The CPU backend reads them at
//! once. [`Backend::sample`] and [`Backend::gather`] read immediately (tests, tools).
//!
//! A backend never panics on a device failure: it records the first one, skips further work,
//! and reports it through [`Backend::failure`], which the time loop checks every step.

pub mod bloch;
pub mod cpu;
/// The CUDA engine; without the `cuda` feature only its device-independent parts (the slab
/// engine the host-kernel tests drive) are built.
pub mod cuda;
pub mod engine;
pub mod parts;
pub mod pass;
pub mod ports;
pub mod timing;

use crate::decomp::{HaloCopy, HaloPlan, HaloSide};
use crate::model::{Component, Region};
use crate::real::Real;
pub use engine::Engine;
pub use parts::{
    ArrayRequest, ArrayShape, Spread, StateArray, StatePlace, StateReader, StateRequest,
    StateShape, StateSink,
};
pub use pass::{Half, Pass, StepMode};
pub use timing::{Phase, PhaseTimes};

/// Which engine to run on: the plan's (it decides under the user's choice).
pub use crate::plan::BackendChoice;

/// Bytes allocated, by category: the plan's type, which every backend reports.
pub use crate::plan::Allocation;

/// The whole state of a run after a step, in a layout that depends on neither the backend
/// nor the slab split: the fields laid out by global x plane (the slabs' planes concatenated
/// in x order), and the arrays the passes register ([`StateArray`]: the CPML psi arrays, the
/// poles' state, the TF/SF incident grid, ...), each spread over the slabs as its
/// [`Spread`] says, so a state exported from one engine imports into any other engine of the
/// same model and precision ([`Backend::export_state`], [`Backend::import_state`]). What a
/// checkpoint file holds (`crate::checkpoint`). Nothing here names a physics: a pass adds an
/// array by registering it ([`pass::arrays`]), and checkpoints, resume and MPI parts carry it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State<T> {
    /// Steps done when the state was taken.
    pub step: usize,
    /// Ex, Ey, Ez, Hx, Hy, Hz: the owned cells (no halos), C order over (x, y, z).
    pub fields: [Vec<T>; 6],
    /// The passes' registered arrays, by name in increasing order.
    pub arrays: Vec<StateArray<T>>,
    /// The running DFTs of every surface DFT monitor, model order.
    pub flux: Vec<crate::flux::FluxDft>,
}

impl<T: Real> State<T> {
    /// Bytes of the arrays (what a checkpoint stores, without its metadata).
    pub fn bytes(&self) -> u64 {
        let t = std::mem::size_of::<T>() as u64;
        let mut n: u64 = self.fields.iter().map(|f| f.len() as u64).sum();
        n += self
            .arrays
            .iter()
            .map(|a| a.values.len() as u64)
            .sum::<u64>();
        let flux: u64 = self
            .flux
            .iter()
            .flat_map(|f| &f.patches)
            .map(|p| 8 * 2 * p.re.iter().map(|v| v.len() as u64).sum::<u64>())
            .sum();
        n * t + flux
    }

    /// The registered array `name`, if the state holds it.
    pub fn array(&self, name: &str) -> Option<&StateArray<T>> {
        self.arrays.iter().find(|a| a.name == name)
    }
}

/// Why a state cannot be imported: it was taken from another model (array lengths differ).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the saved state does not fit this run: {0}")]
pub struct StateError(pub String);

/// Check that `got` values were saved where `want` are needed, for the message of a mismatch.
/// [`Backend::step_fused_many`] one step at a time: [`Backend::step_fused`] for each of
/// `steps`, then [`Backend::queue_probes`] of `samples` (none if empty): the default, and what
/// an engine that cannot sweep several steps at once with `halos` falls back to.
pub(crate) fn step_each<B: Backend + ?Sized>(
    backend: &mut B,
    halos: &HaloPlan,
    steps: &[(&[f64], &[f64])],
    samples: &[(Component, [usize; 3])],
) {
    for &(magnetic, currents) in steps {
        backend.step_fused(halos, magnetic, currents);
        if !samples.is_empty() {
            backend.queue_probes(samples);
        }
    }
}

pub(crate) fn check_len(what: &str, got: usize, want: usize) -> Result<(), StateError> {
    if got == want {
        Ok(())
    } else {
        Err(StateError(format!(
            "{what} has {got} values, this model needs {want}"
        )))
    }
}

/// A snapshot region queued by [`Backend::queue_gather`], to be read once with
/// [`Backend::take_gather`].
#[derive(Debug, PartialEq, Eq)]
pub struct GatherTicket(pub usize);

/// A set of slabs that together hold the whole grid, stepped in lock step.
pub trait Backend {
    /// The field value type.
    type Real: Real;

    /// Start half step `half` on every slab (before its first pass).
    fn begin_half(&mut self, _half: Half) {}
    /// Apply `pass` of half step `half` to every slab. `values[s]` is the value of model
    /// source `s` for this half step: for H the magnetic current M at t = n dt (0 for sources
    /// without a magnetic sheet), followed by the drive of the TF/SF source's 1-D grid at
    /// t = n dt when the model has one ([`crate::run::magnetic_source_values`]); for E the
    /// current J at t = (n + 1/2) dt. The half step ends with [`Backend::exchange`] of its
    /// halo copies.
    fn run_pass(&mut self, half: Half, pass: Pass, values: &[f64]);
    /// Advance H by one step on every slab, H^{n-1/2} -> H^{n+1/2}: every pass of
    /// [`pass::H_PASSES`] with the magnetic currents `magnetic_values` (see
    /// [`Backend::run_pass`]), untimed; the time loop walks the list itself.
    fn update_h(&mut self, magnetic_values: &[f64]) {
        self.begin_half(Half::H);
        for &p in Half::H.passes() {
            self.run_pass(Half::H, p, magnetic_values);
        }
    }
    /// Advance E by one step on every slab, E^n -> E^{n+1}: every pass of
    /// [`pass::E_PASSES`] with the source currents `source_values`.
    fn update_e(&mut self, source_values: &[f64]) {
        self.begin_half(Half::E);
        for &p in Half::E.passes() {
            self.run_pass(Half::E, p, source_values);
        }
    }
    /// True if [`Backend::step_fused`] sweeps H and E together on this engine (else it is the
    /// two half steps in turn).
    fn has_fused_step(&self) -> bool {
        false
    }
    /// True if the fused sweep runs one thread per slab (the CPU engine), so that with fewer
    /// slabs than threads the two-pass update, parallel within a slab, is the faster
    /// (`crate::run::step::mode_for_split`).
    fn fused_sweep_is_per_slab(&self) -> bool {
        false
    }
    /// One whole step, H with `magnetic_values` then E with `source_values` (see
    /// [`Backend::run_pass`]), with both halves' halo copies of `halos`: on an engine with a
    /// fused sweep ([`Backend::has_fused_step`]) every pass of both lists plane by plane in
    /// one sweep, the same bits as the two half steps, which are the default.
    fn step_fused(&mut self, halos: &HaloPlan, magnetic_values: &[f64], source_values: &[f64]) {
        self.update_h(magnetic_values);
        self.exchange(&halos.after_h);
        self.update_e(source_values);
        self.exchange(&halos.after_e);
    }
    /// True if [`Backend::step_fused_many`] sweeps several steps at once on this engine with
    /// the halo copies `halos` (temporal blocking); else it runs them one by one.
    fn can_step_fused_many(&self, halos: &HaloPlan) -> bool {
        let _ = halos;
        false
    }
    /// Whole steps in turn, step k (numbered `first + k` in the run) with the magnetic
    /// currents `steps[k].0` and the currents `steps[k].1`, queueing after each a row of the
    /// probe samples `samples` (none if empty) as [`Backend::queue_probes`] does: on an engine
    /// where [`Backend::can_step_fused_many`], all of them in one sweep (the same bits); by
    /// default [`Backend::step_fused`] and [`Backend::queue_probes`] for each. An engine that
    /// [`Backend::reads_flux_in_sweep`] also reads the flux DFTs' planes of a step among them
    /// at which one samples.
    fn step_fused_many(
        &mut self,
        halos: &HaloPlan,
        steps: &[(&[f64], &[f64])],
        first: usize,
        samples: &[(Component, [usize; 3])],
    ) {
        let _ = first;
        step_each(self, halos, steps, samples);
    }
    /// The first part of [`Backend::step_fused`] for a driver that exchanges the H halos
    /// itself ([`crate::ranks`]): H on every slab's first plane and on the source planes of
    /// `h_sources` (the planes whose new H another slab or process reads). Then the driver
    /// starts the H exchange, calls [`Backend::step_fused_planes`] on consecutive ranges of
    /// local planes from 2 up while the halos travel, ends the exchange, calls
    /// [`Backend::step_fused_first_e`] and exchanges the E halos: the bits of
    /// [`Backend::step_fused`], all arguments the same. By default the H half step, the
    /// planes nothing and the first E the E half step.
    fn step_fused_h(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic_values: &[f64],
        source_values: &[f64],
    ) {
        let _ = (h_sources, source_values);
        self.update_h(magnetic_values);
    }
    /// The interior of the split fused step ([`Backend::step_fused_h`]), which reads no H
    /// halo: on the local planes `planes` of every slab (clipped to its planes 2..=n), H but on
    /// the planes the first part did, and E, in one sweep.
    fn step_fused_planes(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic_values: &[f64],
        source_values: &[f64],
        planes: std::ops::Range<usize>,
    ) {
        let _ = (h_sources, magnetic_values, source_values, planes);
    }
    /// The end of the split fused step ([`Backend::step_fused_h`]), once the H halos are in:
    /// E on every slab's first plane. By default the E half step.
    fn step_fused_first_e(&mut self, source_values: &[f64]) {
        self.update_e(source_values);
    }
    /// Trade the surface ports' values ([`crate::model::SurfacePorts`]) with the engines of
    /// the other parts of the grid through the links `links` makes (one per field set), for
    /// an engine built on some of the grid's planes (an MPI rank's). Called once, before the
    /// first step, on a model with surface ports; an engine that cannot says why (by
    /// default: it cannot).
    fn link_ports(
        &mut self,
        links: &dyn Fn() -> Box<dyn ports::PortLinks<Self::Real>>,
    ) -> Result<(), String> {
        let _ = links;
        Err(format!(
            "the {} engine runs surface ports in one process only",
            self.name()
        ))
    }
    /// True if this engine runs its half of the Bloch pass ([`Pass::Bloch`]):
    /// [`Backend::bloch_images`] and [`Backend::bloch_correct`]. The plan keeps a Bloch cell
    /// on an engine that does ([`crate::plan`]).
    fn has_bloch_pass(&self) -> bool {
        false
    }
    /// The Bloch pass, first part: append to `out` the values of the other field that the
    /// curl of half step `half` read across each Bloch-periodic face (the plain periodic
    /// images: for H, E beyond the maximum faces; for E, H below the minimum faces), in an
    /// order of the engine's own that is the same for the two engines of a Bloch pair (one
    /// model, one split). Nothing on an engine without the pass.
    fn bloch_images(&mut self, half: Half, out: &mut Vec<Self::Real>) {
        let _ = (half, out);
    }
    /// The Bloch pass, second part, right after the curl of half step `half`: correct the
    /// cells next to each Bloch face for the image's phase, from this engine's images `own`
    /// and the other field set's `other` ([`Backend::bloch_images`] of both engines);
    /// `imaginary` when this engine holds the imaginary set (the rotation's sign).
    fn bloch_correct(
        &mut self,
        half: Half,
        own: &[Self::Real],
        other: &[Self::Real],
        imaginary: bool,
    ) {
        let _ = (half, own, other, imaginary);
    }
    /// True if this engine sweeps a Bloch pair's two field sets together in the fused step
    /// ([`Backend::bloch_fused_part`]); else a pair of its engines steps two-pass.
    fn has_bloch_sweep(&self) -> bool {
        false
    }
    /// One part of the fused step of a Bloch pair ([`crate::backend::bloch::BlochPair`]),
    /// `self` the real set's engine and `im` the imaginary set's (the same split), as
    /// [`Backend::step_fused_h`], [`Backend::step_fused_planes`] and
    /// [`Backend::step_fused_first_e`] split one engine's step, the halo copies `h_sources`
    /// of the H half step: the two sets swept together, plane by plane, with the Bloch pass
    /// of each plane between the passes before and after it, the bits of the pair's two-pass
    /// step. `values` holds per set (real, imaginary) the source values of the H and of the E
    /// half step. Only on an engine that [`Backend::has_bloch_sweep`].
    fn bloch_fused_part(
        &mut self,
        im: &mut Self,
        part: FusedPart,
        h_sources: &[HaloCopy],
        values: [[&[f64]; 2]; 2],
    ) where
        Self: Sized,
    {
        let _ = (im, part, h_sources, values);
        unreachable!("the {} engine has no fused Bloch sweep", self.name());
    }
    /// Several whole steps of a Bloch pair in one sweep (temporal blocking, as
    /// [`Backend::step_fused_many`]; only where this engine [`Backend::has_bloch_sweep`] and
    /// [`Backend::can_step_fused_many`] with `halos`): `self` the real set's engine, `im` the
    /// imaginary set's, `steps[k]` step k's source values per set and half step (as
    /// [`Backend::bloch_fused_part`] takes them), a row of the real set's probe samples
    /// `samples` queued after each step.
    fn bloch_fused_steps(
        &mut self,
        im: &mut Self,
        halos: &HaloPlan,
        steps: &[[[&[f64]; 2]; 2]],
        samples: &[(Component, [usize; 3])],
    ) where
        Self: Sized,
    {
        let _ = (im, halos, steps, samples);
        unreachable!("the {} engine sweeps no Bloch steps at once", self.name());
    }
    /// Replay a list of halo plane copies: those of the half step just done, which this call
    /// ends (a backend that started them early waits for them here).
    fn exchange(&mut self, copies: &[HaloCopy]);
    /// The x planes this engine's slabs hold, in order: the whole grid but on one rank of a
    /// run over several ([`crate::ranks`]).
    fn x_planes(&self) -> std::ops::Range<usize>;
    /// The field sets this engine steps: 2 for a Bloch cell's pair (the real and the
    /// imaginary set, [`crate::backend::bloch`]), else 1. A plane of [`Backend::read_plane`]
    /// and [`Backend::write_halo`] holds one plane of each, set after set.
    fn field_sets(&self) -> usize {
        1
    }
    /// Copy the owned x plane `x` of `component` in slab `slab` (an index into this backend's
    /// slabs) into `out` (`ny * nz` values per field set, C order: [`Backend::field_sets`]):
    /// the source of a halo copy whose destination another process holds
    /// ([`crate::ranks`]). A device waits for its queued work first.
    fn read_plane(&mut self, component: Component, slab: usize, x: usize, out: &mut [Self::Real]);
    /// Write `data` (`ny * nz` values per field set) into the `side` halo plane of `component` in slab `slab`:
    /// a halo plane received from another process, which the next half step reads.
    fn write_halo(
        &mut self,
        component: Component,
        slab: usize,
        side: HaloSide,
        data: &[Self::Real],
    );
    /// The values of a queued region in parts along x, handed to `part` in order as (the
    /// region's first x row in the part, the part's values in C order): the whole region at
    /// once by default; a backend spread over processes hands each process's rows in turn, so
    /// no process holds the whole region ([`crate::ranks`]). False after a
    /// [`Backend::failure`] (nothing handed over); the first error of `part` is returned.
    fn take_gather_parts<E>(
        &mut self,
        ticket: GatherTicket,
        mut part: impl FnMut(usize, &[Self::Real]) -> Result<(), E>,
    ) -> Result<bool, E> {
        match self.take_gather(ticket) {
            Some(values) => part(0, values).map(|()| true),
            None => Ok(false),
        }
    }
    /// The value of `component` at global index `index`.
    fn sample(&self, component: Component, index: [usize; 3]) -> f64;
    /// Copy the strided `region` of `component` into `out` (C order, `region.len()` values).
    fn gather(&self, component: Component, region: &Region, out: &mut [Self::Real]);
    /// [`Backend::gather`] from field set `set` ([`Backend::field_sets`]: 0 the real set,
    /// which [`Backend::gather`] reads, 1 a Bloch pair's imaginary set).
    fn gather_set(
        &self,
        set: usize,
        component: Component,
        region: &Region,
        out: &mut [Self::Real],
    ) {
        assert_eq!(set, 0, "the {} engine steps one field set", self.name());
        self.gather(component, region, out);
    }
    /// Record the value of every probe sample in `samples` (one row, in order) as the fields
    /// are now, without waiting for a device. Called once per step after the E exchange, with
    /// the same list every time (the model's probe samples in model order).
    fn queue_probes(&mut self, samples: &[(Component, [usize; 3])]);
    /// Append queued probe rows to `out`, oldest first, one value per sample each. With
    /// `wait`, every row queued so far; without, only those already in host memory (the
    /// copy of the others starts, so a later call finds them): it never waits for a device.
    /// After a [`Backend::failure`], the rows that reached the host before it.
    fn drain_probes(&mut self, out: &mut Vec<f64>, wait: bool);
    /// Start reading the strided `region` of `component` as the fields are now (after the E
    /// exchange), without waiting for a device: later updates do not change what is read. Every
    /// ticket must be taken before the same region is queued again.
    fn queue_gather(&mut self, component: Component, region: &Region) -> GatherTicket;
    /// True if [`Backend::take_gather`] would not wait for the device.
    fn gather_ready(&self, ticket: &GatherTicket) -> bool;
    /// The values of a queued region (C order, `region.len()` values), waiting for them if
    /// needed; `None` after a [`Backend::failure`].
    fn take_gather(&mut self, ticket: GatherTicket) -> Option<&[Self::Real]>;
    /// Add the fields after step `step` (E at `step dt`, H at `(step - 1/2) dt`) to the
    /// running DFT of every flux monitor of the model ([`crate::flux`]). On an engine that
    /// [`Backend::reads_flux_in_sweep`], first the sample its last sweep read at an earlier
    /// or the same step; `step` itself only if no sweep read it.
    fn accumulate_flux(&mut self, step: usize, dt: f64);
    /// True if [`Backend::step_fused_many`] reads the planes of the flux DFTs' sample at one
    /// step among its steps as its sweep passes them, when their values are in cache: a sweep
    /// may then go past one flux sample (not two), and [`Backend::accumulate_flux`] after the
    /// sweep adds what it read. Otherwise a sweep must end at every flux sample.
    fn reads_flux_in_sweep(&self) -> bool {
        false
    }
    /// The DFTs of flux monitor `index` (model order) accumulated so far, from which its
    /// spectrum follows ([`crate::flux::FluxDft::power`]); `None` after a [`Backend::failure`].
    fn flux_dft(&mut self, index: usize) -> Option<crate::flux::FluxDft>;
    /// The spectrum of flux monitor `index` so far ([`crate::flux::FluxDft::power`], bit for
    /// bit), for a monitor whose DFTs the file does not keep: an engine whose DFTs live on a
    /// device forms it there and reads back a few values per row instead of every DFT.
    /// `None` after a [`Backend::failure`].
    fn flux_power(&mut self, index: usize) -> Option<Vec<f64>> {
        self.flux_dft(index).map(|d| d.power())
    }
    /// False if any field value is NaN or infinite.
    fn all_finite(&self) -> bool;
    /// The device's own time in each phase so far, where the engine queues its work on a
    /// device and the host's times around its calls are those of issuing it (a GPU: from
    /// timing marks, the stepping calls sampled, averaged over the GPUs); waits for the
    /// device. `None` where the host's times are the work's (the CPU), or the device cannot
    /// time itself.
    fn device_times(&mut self) -> Option<PhaseTimes> {
        None
    }
    /// The first device failure, in the driver's words; after one, every method does nothing
    /// (reads give zeros or `None`). Always `None` on the CPU.
    fn failure(&self) -> Option<String> {
        None
    }
    /// What this backend allocated, by category.
    fn allocation(&self) -> Allocation;
    /// Host monitor bytes the run holds besides [`Backend::allocation`], as the plan counts them
    /// (`Bytes::monitors`): by default the CPU backend's snapshot gather buffer and flux DFT
    /// accumulators ([`crate::plan::monitor_staging_bytes`]).
    fn host_monitor_bytes(&self, model: &crate::model::Model) -> u64 {
        crate::plan::monitor_staging_bytes(model, <Self::Real as Real>::PRECISION)
    }
    /// Host bytes this backend holds for its flux monitors alone: what the imaginary set of a
    /// Bloch pair adds to the real set's [`Backend::host_monitor_bytes`] (nothing else reads
    /// it). By default the CPU backend's flux DFT accumulators ([`crate::plan::flux_bytes`]).
    fn flux_host_bytes(&self, model: &crate::model::Model) -> u64 {
        crate::plan::flux_bytes(model)
    }
    /// A short name for output files and messages ("cpu", "cuda").
    fn name(&self) -> String;
    /// The whole state after the last step ([`State`]), read from the device where there is
    /// one (waiting for it). Call between steps, with no monitor read queued (the time loop
    /// drains them first); `None` after a [`Backend::failure`].
    fn export_state(&mut self) -> Option<State<Self::Real>>;
    /// Replace the whole state with `state` (from [`Backend::export_state`] of any engine of
    /// the same model and precision), before the first step. `halo_copies` are this engine's
    /// halo copies of both half steps ([`crate::decomp::HaloPlan`]): each halo plane gets its
    /// source plane's value from `state`, as the last exchange left it.
    fn import_state(
        &mut self,
        state: &State<Self::Real>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), StateError>;
    /// The shape of what [`Backend::export_state`] would return, without copying the state
    /// (by default it does copy); `None` after a [`Backend::failure`].
    fn state_shape(&mut self) -> Option<StateShape> {
        self.export_state().map(|s| StateShape::of(&s))
    }
    /// Hand the whole state after step `step` to `sink` (a checkpoint being written), part by
    /// part: by default in one part ([`Backend::export_state`]) placed at
    /// [`Backend::x_planes`]; a backend spread over
    /// processes hands each process's part in turn, so no process holds the whole. False
    /// after a [`Backend::failure`] (nothing handed over); the first error of `sink` is
    /// returned.
    fn write_state(
        &mut self,
        step: usize,
        sink: &mut dyn StateSink<Self::Real>,
    ) -> Result<bool, String> {
        let Some(mut state) = self.export_state() else {
            return Ok(false);
        };
        state.step = step;
        sink.begin(&StateShape::of(&state))?;
        // The part starts at this engine's first plane: on one rank of several, not plane 0.
        let place = StatePlace {
            x0: self.x_planes().start,
            ..StatePlace::whole(&state)
        };
        sink.part(&state, &place)?;
        Ok(true)
    }
    /// Replace the whole state, as [`Backend::import_state`], with what `read` gives: by
    /// default the whole state at once; a backend spread over processes has each process
    /// read its own part. `halo_copies` as for [`Backend::import_state`].
    fn import_state_from(
        &mut self,
        read: &StateReader<'_, Self::Real>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), String> {
        let state = read(None)?;
        self.import_state(&state, halo_copies)
            .map_err(|e| e.to_string())
    }
}

/// A part of a fused step split around its H halo exchange ([`Backend::step_fused_h`] and the
/// two after it): the early H planes, the interior planes in a range, or E on the first planes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FusedPart {
    /// H on every slab's first plane and on the planes the H halo copies read.
    Early,
    /// The sweep over these local planes (clipped to 2..=n of each slab).
    Planes(std::ops::Range<usize>),
    /// E on every slab's first plane, once the H halos are in.
    FirstE,
}
