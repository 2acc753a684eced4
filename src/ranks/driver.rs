//! Rank 0 drives, the other ranks follow: the backend that stands for the whole grid on rank 0
//! ([`RankBackend`]) and the loop of the other ranks ([`follow`]).
//!
//! Every call of the time loop on [`RankBackend`] is first broadcast as a small command (a
//! header of [`HEADER`] integers, and for a pass the source values), then done by every rank on
//! its own slabs; what rank 0 needs back (probe values, snapshot parts, flux planes, each
//! rank's failure and stop flag) comes in rank order. So the ranks never decide anything on
//! their own clock: rank 0's loop decides when to flush, check, report or stop, and the
//! others do the same steps in the same order. A command costs one broadcast (microseconds
//! within a node), a few per step.
//!
//! Halo copies between slabs of one rank are the local backend's plane copies; copies between
//! ranks are non-blocking sends and receives of the tangential planes, posted together once the
//! half step's passes are done (the earliest the pass order allows), with the local copies
//! done while they travel.

use super::comm::{World, HALF_TAGS, HALO_TAG};
use crate::backend::bloch::complex_dft;
use crate::backend::pass::ALL_PASSES;
use crate::backend::{
    Allocation, ArrayShape, Backend, GatherTicket, Half, Pass, Spread, State, StateArray,
    StateError, StatePlace, StateReader, StateRequest, StateShape, StateSink,
};
use crate::decomp::ranks::{Exchange, RankLayout};
use crate::decomp::{HaloCopy, HaloPlan, HaloSide};
use crate::flux::FluxAccumulators;
use crate::flux::FluxDft;
use crate::model::{Component, Model, Region};
use crate::real::Real;
use mpi::traits::*;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Integers in a command header.
const HEADER: usize = 16;

/// The pieces the interior sweep of a fused step runs in while the H halos travel, with a test
/// of the requests after each: enough for a transfer to move along during the sweep, few enough
/// that the pause between pieces (the slabs' threads meet) costs nothing measurable.
const SWEEP_PIECES: usize = 8;

/// The MPI tag of the halo copy `index` of half step `half` (0: H, 1: E): both ends of a
/// crossing know the copy's index in the run's halo plan.
fn halo_tag(half: usize, index: usize) -> i32 {
    HALO_TAG + half as i32 * HALF_TAGS + index as i32
}

/// The commands rank 0 sends (header word 0).
mod cmd {
    pub const FINISH: u64 = 0;
    pub const BEGIN: u64 = 1;
    pub const PASS: u64 = 2;
    pub const EXCHANGE: u64 = 3;
    pub const PROBES: u64 = 4;
    pub const QUEUE_GATHER: u64 = 5;
    pub const TAKE_GATHER: u64 = 6;
    pub const FLUX: u64 = 7;
    pub const STATUS: u64 = 8;
    pub const FINITE: u64 = 9;
    pub const SAMPLE: u64 = 10;
    pub const GATHER: u64 = 11;
    pub const EXPORT: u64 = 12;
    pub const IMPORT: u64 = 13;
    pub const FUSED: u64 = 14;
}

/// How a finished run ended, as rank 0 tells the others (header word 1 of FINISH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every step ran.
    Complete,
    /// Stopped early (a stop flag, a failure): the file holds what was written.
    Stopped,
}

/// What every rank holds to take part in the run: its backend, its exchanges, its view of the
/// model's monitors, and the plane buffers of the exchange.
struct Rank<B: Backend> {
    world: World,
    layout: RankLayout,
    local: B,
    /// After H, after E.
    exchanges: [Exchange; 2],
    /// The copies whose source planes (local slab indices) the H exchange reads: the local
    /// copies and the planes sent to other ranks, which the split fused step updates first.
    h_sources: Vec<HaloCopy>,
    /// Send and receive buffers, one plane of each field set each, per half step.
    send_bufs: [Vec<Vec<B::Real>>; 2],
    receive_bufs: [Vec<Vec<B::Real>>; 2],
    /// The probe samples this rank holds, in model order (its local model's samples).
    samples: Vec<(Component, [usize; 3])>,
    /// The queued snapshot regions of the local backend, by the id rank 0 gave them, with the
    /// length of this rank's part.
    tickets: Vec<Option<(GatherTicket, usize)>>,
    /// Steps done (E exchanges).
    steps: usize,
    /// A failure injected for tests (`YEE_RANK_FAIL_AT=RANK:STEP`): the step at which this rank
    /// reports one.
    fail_at: Option<usize>,
    stop: Arc<AtomicBool>,
    /// Reused buffer of one part (snapshot rows, flux planes, probe values).
    buf: RefCell<Vec<B::Real>>,
}

impl<B: Backend> Rank<B> {
    fn new(
        model: &Model,
        local: B,
        layout: RankLayout,
        world: World,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let exchanges = layout.exchanges(&model.boundaries);
        // A halo plane of every field set (a Bloch cell's two travel together).
        let plane = model.grid.shape[1] * model.grid.shape[2] * local.field_sets();
        let bufs = |n: usize| vec![vec![<B::Real as Real>::ZERO; plane]; n];
        let send_bufs = [
            bufs(exchanges[0].sends.len()),
            bufs(exchanges[1].sends.len()),
        ];
        let receive_bufs = [
            bufs(exchanges[0].receives.len()),
            bufs(exchanges[1].receives.len()),
        ];
        let fail_at = injected_failure(layout.rank);
        let mut h_sources = exchanges[0].local.clone();
        h_sources.extend(exchanges[0].sends.iter().map(|s| HaloCopy {
            component: s.component,
            src_slab: s.slab,
            src_x: s.x,
            dst_slab: s.slab,
            dst_side: s.side,
            negate: false,
        }));
        let mine = layout.planes(layout.rank);
        // The probes' and the lumped terminals' samples, as rank 0's time loop lists them.
        let samples = model
            .every_probe()
            .flat_map(|p| p.samples.iter().copied())
            .filter(|(_, idx)| mine.contains(&idx[0]))
            .collect();
        Rank {
            world,
            layout,
            local,
            exchanges,
            h_sources,
            send_bufs,
            receive_bufs,
            samples,
            tickets: Vec::new(),
            steps: 0,
            fail_at,
            stop,
            buf: RefCell::new(Vec::new()),
        }
    }

    fn mine(&self, x: usize) -> bool {
        self.layout.planes(self.layout.rank).contains(&x)
    }

    /// The halo exchange of half step `half` (0: H, 1: E), with nothing to do meanwhile but
    /// the local copies.
    fn exchange(&mut self, half: usize) {
        self.exchange_during(half, |_, _, _| {});
    }

    /// The halo exchange of half step `half` (0: H, 1: E): read the planes to send, post every
    /// receive and send, do the local copies and then `during` while they travel, then write
    /// the received planes. `during` gets the local backend, the H halo sources and a function
    /// to call now and then: it tests the requests, which is what moves a large message along
    /// (an MPI library without a progress thread advances a transfer only inside its calls).
    fn exchange_during(
        &mut self,
        half: usize,
        during: impl FnOnce(&mut B, &[HaloCopy], &mut dyn FnMut()),
    ) {
        let ex = &self.exchanges[half];
        for (s, buf) in ex.sends.iter().zip(self.send_bufs[half].iter_mut()) {
            self.local.read_plane(s.component, s.slab, s.x, buf);
        }
        let sends = &self.send_bufs[half];
        let receives = &mut self.receive_bufs[half];
        let local = &mut self.local;
        let h_sources = &self.h_sources;
        self.world.exchange(|comm, scope| {
            let mut pending = Vec::with_capacity(ex.sends.len() + ex.receives.len());
            for (r, buf) in ex.receives.iter().zip(receives.iter_mut()) {
                pending.push(Some(
                    comm.process_at_rank(r.peer as i32)
                        .immediate_receive_into_with_tag(
                            scope,
                            super::comm::bytes_mut(&mut buf[..]),
                            halo_tag(half, r.index),
                        ),
                ));
            }
            for (s, buf) in ex.sends.iter().zip(sends.iter()) {
                pending.push(Some(
                    comm.process_at_rank(s.peer as i32).immediate_send_with_tag(
                        scope,
                        super::comm::bytes(&buf[..]),
                        halo_tag(half, s.index),
                    ),
                ));
            }
            local.exchange(&ex.local);
            {
                let mut progress = || {
                    for slot in pending.iter_mut() {
                        if let Some(request) = slot.take() {
                            *slot = request.test().err();
                        }
                    }
                };
                during(local, h_sources, &mut progress);
            }
            for request in pending.into_iter().flatten() {
                request.wait();
            }
        });
        for (r, buf) in ex.receives.iter().zip(self.receive_bufs[half].iter_mut()) {
            if r.negate {
                buf.iter_mut().for_each(|v| *v = -*v);
            }
            self.local.write_halo(r.component, r.slab, r.side, buf);
        }
        if half == 1 {
            self.steps += 1;
        }
    }

    /// One fused step on this rank's slabs ([`Backend::step_fused_h`]): H on the first planes
    /// and on those the H exchange reads; the H exchange, with the interior sweep (planes 2..n)
    /// in [`SWEEP_PIECES`] pieces while it travels; E on the first planes; the E exchange.
    fn fused_step(&mut self, magnetic: &[f64], currents: &[f64]) {
        self.local.step_fused_h(&self.h_sources, magnetic, currents);
        let end = self
            .layout
            .local_ranges()
            .iter()
            .map(|r| r.len())
            .max()
            .unwrap_or(0)
            + 1;
        let piece = end.saturating_sub(2).div_ceil(SWEEP_PIECES).max(1);
        self.exchange_during(0, |local, h_sources, progress| {
            let mut p = 2;
            while p < end {
                local.step_fused_planes(h_sources, magnetic, currents, p..p + piece);
                progress();
                p += piece;
            }
        });
        self.local.step_fused_first_e(currents);
        self.exchange(1);
    }

    /// This rank's failure, if any: the local backend's, or the injected one.
    fn own_failure(&self) -> Option<String> {
        if let Some(f) = self.local.failure() {
            return Some(f);
        }
        match self.fail_at {
            Some(step) if self.steps >= step => Some(format!(
                "an injected failure at step {step} (YEE_RANK_FAIL_AT)"
            )),
            _ => None,
        }
    }

    /// This rank's values of the probe samples it holds, in sample order: queued on its
    /// backend and read back at once (a GPU gathers them in one launch, as for one process).
    fn own_samples(&mut self, out: &mut Vec<f64>) {
        out.clear();
        if self.samples.is_empty() {
            return;
        }
        self.local.queue_probes(&self.samples);
        self.local.drain_probes(out, true);
        debug_assert_eq!(out.len(), self.samples.len());
    }

    /// This rank's part of every flux plane sampled after `step`, in the order rank 0's
    /// accumulators read them (a monitor decimated past this step reads nothing): field set
    /// by field set ([`Backend::field_sets`]).
    fn own_flux_planes(&self, model: &Model, step: usize, mut each: impl FnMut(&[B::Real])) {
        for set in 0..self.local.field_sets() {
            self.own_set_flux_planes(set, model, step, &mut each);
        }
    }

    /// [`Rank::own_flux_planes`] of field set `set`.
    fn own_set_flux_planes(
        &self,
        set: usize,
        model: &Model,
        step: usize,
        each: &mut impl FnMut(&[B::Real]),
    ) {
        let mut buf = self.buf.borrow_mut();
        for f in &model.fluxes {
            if step % f.decimation.max(1) != 0 {
                continue;
            }
            for p in &f.patches {
                for (c, region) in crate::flux::planes(p) {
                    if let Some((_, sub)) = self.layout.part(&region, self.layout.rank) {
                        buf.resize(sub.len(), <B::Real as Real>::ZERO);
                        self.local.gather_set(set, c, &sub, &mut buf);
                        each(&buf);
                    }
                }
            }
        }
    }
}

/// A [`StateShape`] as text, for [`World::gather_strings`] ("none" for no state: a failed
/// rank): per array `name,slots,cells` (slots 0: shared), `;` between arrays, behind a `|`.
fn encode_shape(shape: Option<&StateShape>) -> String {
    let Some(s) = shape else {
        return "none".into();
    };
    let arrays: Vec<String> = s
        .arrays
        .iter()
        .map(|a| {
            let slots = match a.spread {
                Spread::Cells { slots } => slots,
                Spread::Shared => 0,
            };
            format!("{},{slots},{}", a.name, a.cells)
        })
        .collect();
    format!("|{}", arrays.join(";"))
}

/// The shape [`encode_shape`] wrote; `None` for "none".
fn decode_shape(text: &str) -> Option<StateShape> {
    let arrays = text.strip_prefix('|')?;
    let mut shape = StateShape::default();
    for a in arrays.split(';').filter(|a| !a.is_empty()) {
        let mut it = a.split(',');
        let (name, slots, cells) = (it.next()?, it.next()?, it.next()?);
        let slots: usize = slots.parse().ok()?;
        shape.arrays.push(ArrayShape {
            name: name.to_string(),
            spread: if slots == 0 {
                Spread::Shared
            } else {
                Spread::Cells { slots }
            },
            cells: cells.parse().ok()?,
        });
    }
    Some(shape)
}

/// Every rank's state shape, on every rank (collective); `None` if some rank has none (a
/// failure).
fn all_shapes<B: Backend>(rank: &Rank<B>, mine: Option<&StateShape>) -> Option<Vec<StateShape>> {
    rank.world
        .gather_strings(&encode_shape(mine))
        .iter()
        .map(|t| decode_shape(t))
        .collect()
}

/// The arrays of a rank's state part in the order they travel (each non-empty one once).
fn part_arrays<T>(st: &State<T>) -> Vec<&Vec<T>> {
    let mut out: Vec<&Vec<T>> = st.fields.iter().collect();
    out.extend(st.arrays.iter().map(|a| &a.values));
    out.retain(|v| !v.is_empty());
    out
}

/// A state piece with `field_values` values of each field component and the `arrays` (each
/// an array of the sending rank's shape with its cells) received from rank `from` (as
/// [`part_arrays`] sent it).
fn receive_part<T: Real>(
    world: &World,
    from: usize,
    arrays: &[ArrayShape],
    field_values: usize,
) -> State<T> {
    let zeros = |n: usize| vec![T::ZERO; n];
    let mut st = State::<T> {
        fields: std::array::from_fn(|_| zeros(field_values)),
        arrays: arrays
            .iter()
            .map(|a| StateArray {
                name: a.name.clone(),
                spread: a.spread,
                values: zeros(a.cells * a.spread.slots()),
            })
            .collect(),
        ..Default::default()
    };
    let mut all: Vec<&mut Vec<T>> = st.fields.iter_mut().collect();
    all.extend(st.arrays.iter_mut().map(|a| &mut a.values));
    for v in all.into_iter().filter(|v| !v.is_empty()) {
        world.receive(from, &mut v[..]);
    }
    st
}

/// What rank 0 brings to [`export_parts`]: the sink, the surface DFTs it accumulated, the step.
type RootSink<'a, T> = (&'a mut dyn StateSink<T>, Vec<FluxDft>, usize);

/// The fixed header of one piece a rank sends rank 0 in [`export_parts`]: kind (0 the end of
/// the rank's pieces, 1 a piece, 2 the rank failed), first x plane, values of each field
/// component and the number of arrays (each then 3 values: its index in the rank's shape, its
/// cells and its offset within the rank's part).
const PIECE_HEADER: usize = 4;

/// Sends each piece of a rank's part of the state to rank 0 as its engine hands it over
/// ([`Backend::write_state`]).
struct Forward<'a> {
    world: &'a World,
    /// The rank's own state shape, whose arrays the pieces' entries index.
    shape: StateShape,
}

impl<T: Copy> StateSink<T> for Forward<'_> {
    fn begin(&mut self, _whole: &StateShape) -> Result<(), String> {
        // Rank 0 knows every rank's shape already (`all_shapes`).
        Ok(())
    }

    fn part(&mut self, part: &State<T>, place: &StatePlace) -> Result<(), String> {
        let mut h = [0u64; PIECE_HEADER];
        h[0] = 1;
        h[1] = place.x0 as u64;
        h[2] = part.fields[0].len() as u64;
        h[3] = part.arrays.len() as u64;
        let mut entries = Vec::with_capacity(3 * part.arrays.len());
        for (a, &at) in part.arrays.iter().zip(&place.offsets) {
            let index = self
                .shape
                .arrays
                .iter()
                .position(|s| s.name == a.name)
                .ok_or_else(|| format!("a piece of `{}`, which the rank's shape lacks", a.name))?;
            entries.extend([index as u64, a.cells() as u64, at as u64]);
        }
        self.world.send(0, &h);
        if !entries.is_empty() {
            self.world.send(0, &entries);
        }
        for v in part_arrays(part) {
            self.world.send(0, v);
        }
        Ok(())
    }
}

/// Rank 0's own engine hands its pieces straight to the checkpoint, whose `begin` the driver
/// has called with the whole state's shape: rank 0's part starts the whole, so its pieces'
/// places are already the whole's.
struct OwnPieces<'a, T>(&'a mut dyn StateSink<T>);

impl<T> StateSink<T> for OwnPieces<'_, T> {
    fn begin(&mut self, _whole: &StateShape) -> Result<(), String> {
        Ok(())
    }

    fn part(&mut self, part: &State<T>, place: &StatePlace) -> Result<(), String> {
        self.0.part(part, place)
    }
}

/// Every rank's part of the state after `step` into `sink`, rank by rank (collective; rank 0
/// passes the sink and the surface DFTs it accumulated, the others `None`), piece by piece as
/// each rank's engine hands its part over ([`Backend::write_state`]): the others send each
/// piece to rank 0, which hands it to the sink and drops it, so no rank holds more than one
/// piece of the state. False when some rank has no state or fails while handing it over.
fn export_parts<B: Backend>(
    rank: &mut Rank<B>,
    sink: Option<RootSink<'_, B::Real>>,
) -> Result<bool, String> {
    let own = rank.local.state_shape();
    let Some(shapes) = all_shapes(rank, own.as_ref()) else {
        return Ok(false);
    };
    let steps = rank.steps;
    let Rank {
        world,
        local,
        layout,
        ..
    } = rank;
    let Some((sink, flux, step)) = sink else {
        let mut forward = Forward {
            world: &*world,
            shape: own.clone().unwrap_or_default(),
        };
        let done = local.write_state(steps, &mut forward);
        let mut end = [0u64; PIECE_HEADER];
        end[0] = if matches!(done, Ok(true)) { 0 } else { 2 };
        world.send(0, &end);
        return Ok(true);
    };
    let whole = StateShape::whole(&shapes);
    let mut first_error = sink.begin(&whole).err();
    let mut failed = false;
    if first_error.is_none() {
        match local.write_state(step, &mut OwnPieces(&mut *sink)) {
            Ok(true) => {}
            Ok(false) => failed = true,
            Err(e) => first_error = Some(e),
        }
    }
    for (r, shape) in shapes.iter().enumerate().skip(1) {
        // Received even after an error, so every rank's sends complete.
        let at = StateShape::place(&shapes, r, layout.planes(r).start);
        loop {
            let mut h = [0u64; PIECE_HEADER];
            world.receive(r, &mut h);
            match h[0] {
                0 => break,
                2 => {
                    failed = true;
                    break;
                }
                _ => {}
            }
            let mut entries = vec![0u64; 3 * h[3] as usize];
            if !entries.is_empty() {
                world.receive(r, &mut entries);
            }
            let mut arrays = Vec::with_capacity(entries.len() / 3);
            let mut place = StatePlace {
                x0: h[1] as usize,
                offsets: Vec::with_capacity(arrays.capacity()),
            };
            for e in entries.chunks_exact(3) {
                let index = (e[0] as usize).min(shape.arrays.len().saturating_sub(1));
                let a = &shape.arrays[index];
                arrays.push(ArrayShape {
                    cells: e[1] as usize,
                    ..a.clone()
                });
                // The rank's own offset, moved to where its part lies in the whole.
                let shift = match a.spread {
                    Spread::Cells { .. } => at.offsets[index],
                    Spread::Shared => 0,
                };
                place.offsets.push(shift + e[2] as usize);
            }
            let piece = receive_part::<B::Real>(world, r, &arrays, h[2] as usize);
            if first_error.is_none() {
                first_error = sink.part(&piece, &place).err();
            }
        }
    }
    if first_error.is_none() && !failed {
        let part = State {
            step,
            flux,
            ..Default::default()
        };
        first_error = sink.part(&part, &StatePlace::default()).err();
    }
    match (first_error, failed) {
        (Some(e), _) => Err(e),
        (None, true) => Ok(false),
        (None, false) => Ok(true),
    }
}

/// Every rank reads its own part of a state with `read`, piece by piece as its engine loads it
/// ([`Backend::import_state_from`]), so no rank holds its whole part in host memory
/// (collective): the halo planes between its own slabs from the part, those from other ranks
/// by one exchange
/// of each half step, as the last exchange left them. Returns the surface DFTs (rank 0's
/// part holds them) and the state's step; an error on any rank is every rank's, naming it.
fn import_parts<B: Backend>(
    rank: &mut Rank<B>,
    read: &StateReader<'_, B::Real>,
) -> Result<(Vec<FluxDft>, usize), String> {
    let me = rank.layout.rank;
    let mine = rank.local.state_shape();
    let shapes = all_shapes(rank, mine.as_ref());
    let result = match &shapes {
        None => Err("a rank failed before reading the checkpoint".to_string()),
        Some(shapes) => {
            let planes = rank.layout.planes(me);
            let place = StateShape::place(shapes, me, planes.start);
            let whole = StateShape::whole(shapes);
            let local_copies: Vec<_> = rank.exchanges[0]
                .local
                .iter()
                .chain(&rank.exchanges[1].local)
                .copied()
                .collect();
            // This rank's engine loads its part piece by piece (`import_state_from`), never
            // the whole part at once. Its requests count its own arrays from 0: they move to
            // where this rank's part lies in the whole. The driver holds the surface DFTs
            // (rank 0's), the engine none.
            let moved = |request: Option<&StateRequest>| {
                let Some(request) = request else {
                    return Err("a rank reads its own part of the state".to_string());
                };
                if request.flux {
                    return read(Some(&StateRequest::fields(0..0)));
                }
                let mut r = request.clone();
                for a in &mut r.arrays {
                    let shift = shapes[me]
                        .arrays
                        .iter()
                        .zip(&place.offsets)
                        .find(|(s, _)| s.name == a.name)
                        .map_or(0, |(_, &at)| at);
                    *a = a.shifted(shift, whole.cells(&a.name));
                }
                read(Some(&r))
            };
            let own = if me == 0 {
                StateRequest::surface_dfts()
            } else {
                StateRequest::fields(0..0)
            };
            read(Some(&own)).and_then(|st| {
                rank.local.import_state_from(&moved, &local_copies)?;
                Ok((st.flux, st.step))
            })
        }
    };
    if !rank.world.all(result.is_ok()) {
        let text = result
            .as_ref()
            .err()
            .map_or(String::new(), |e| format!("rank {me}: {e}"));
        let texts = rank.world.gather_strings(&text);
        return Err(texts
            .into_iter()
            .find(|t| !t.is_empty())
            .unwrap_or_default());
    }
    let (flux, step) = result.expect("agreed above");
    rank.exchange(0);
    rank.exchange(1);
    rank.steps = step;
    Ok((flux, step))
}

/// `YEE_RANK_FAIL_AT=RANK:STEP`: rank RANK reports a failure once it has done STEP steps (the
/// test hook of a failing rank, as `YEE_CUDA_FAIL_AT_STEP` is for a failing GPU).
fn injected_failure(rank: usize) -> Option<usize> {
    let v = crate::fault::hook("YEE_RANK_FAIL_AT")?;
    let (r, s) = v.split_once(':')?;
    (r.trim().parse::<usize>().ok()? == rank)
        .then(|| s.trim().parse::<usize>().ok())
        .flatten()
}

fn encode_region(h: &mut [u64; HEADER], at: usize, c: Component, r: &Region) {
    h[at] = c as u64;
    for a in 0..3 {
        h[at + 1 + a] = r.start[a] as u64;
        h[at + 4 + a] = r.end[a] as u64;
        h[at + 7 + a] = r.stride[a] as u64;
    }
}

fn decode_region(h: &[u64; HEADER], at: usize) -> (Component, Region) {
    let v = |i: usize| h[at + i] as usize;
    (
        Component::ALL[v(0)],
        Region {
            start: [v(1), v(2), v(3)],
            end: [v(4), v(5), v(6)],
            stride: [v(7), v(8), v(9)],
        },
    )
}

/// The backend rank 0's time loop steps: the whole grid, held by every rank in parts.
pub(crate) struct RankBackend<B: Backend> {
    rank: Rank<B>,
    half: Half,
    /// The DFTs of every flux monitor, over the whole of each plane (kept here on rank 0,
    /// fed with each rank's part of the planes), one set of accumulators per field set (a
    /// Bloch cell's DFTs are those of the complex field, [`complex_dft`]); none without flux
    /// monitors.
    flux: Vec<FluxAccumulators>,
    flux_staging: Vec<B::Real>,
    /// Queued probe rows (whole rows, model order).
    probe_rows: Vec<f64>,
    /// Queued regions by id: (component, region), None when taken.
    gathers: Vec<Option<(Component, Region)>>,
    /// The last whole region assembled for [`Backend::take_gather`].
    assembled: Vec<B::Real>,
    /// The first failure seen on any rank, naming it.
    failure: RefCell<Option<String>>,
    finished: bool,
}

impl<B: Backend> RankBackend<B> {
    /// The driver over `local` (rank 0's slabs of `layout`), for `model` (with its monitors;
    /// `local` was built without flux monitors: their DFTs live here). `stop` is set when any
    /// rank's stop flag is.
    pub(crate) fn new(
        model: &Model,
        local: B,
        layout: RankLayout,
        world: World,
        stop: Arc<AtomicBool>,
    ) -> Self {
        let sets = if model.fluxes.is_empty() {
            0
        } else {
            local.field_sets()
        };
        RankBackend {
            rank: Rank::new(model, local, layout, world, stop),
            half: Half::H,
            flux: (0..sets).map(|_| FluxAccumulators::new(model)).collect(),
            flux_staging: vec![<B::Real as Real>::ZERO; crate::flux::largest_plane(model)],
            probe_rows: Vec::new(),
            gathers: Vec::new(),
            assembled: Vec::new(),
            failure: RefCell::new(None),
            finished: false,
        }
    }

    fn send(&self, mut h: [u64; HEADER]) -> [u64; HEADER] {
        self.rank.world.broadcast(&mut h);
        h
    }

    fn command(&self, c: u64) -> [u64; HEADER] {
        let mut h = [0u64; HEADER];
        h[0] = c;
        h
    }

    /// Tell the other ranks the run is over (how, and after how many steps); they return.
    pub(crate) fn finish(mut self, outcome: Outcome, steps_done: usize) {
        self.finish_now(outcome, steps_done);
    }

    fn finish_now(&mut self, outcome: Outcome, steps_done: usize) {
        if !self.finished {
            let mut h = self.command(cmd::FINISH);
            h[1] = (outcome == Outcome::Complete) as u64;
            h[2] = steps_done as u64;
            self.send(h);
            self.finished = true;
        }
    }

    /// Assemble `region` of `component` of field set `set` from every rank's part into `out`
    /// (C order).
    fn collect(&self, set: usize, component: Component, region: &Region, out: &mut [B::Real]) {
        let row = RankLayout::row_len(region);
        let me = self.rank.layout.rank;
        for r in 0..self.rank.world.size() {
            if let Some((first, sub)) = self.rank.layout.part(region, r) {
                let part = &mut out[first * row..first * row + sub.len()];
                if r == me {
                    self.rank.local.gather_set(set, component, &sub, part);
                } else {
                    self.rank.world.receive(r, part);
                }
            }
        }
    }
}

impl<B: Backend> Drop for RankBackend<B> {
    fn drop(&mut self) {
        // A run that ended without saying how (an early error) still releases the others.
        self.finish_now(Outcome::Stopped, self.rank.steps);
    }
}

impl<B: Backend> Backend for RankBackend<B> {
    type Real = B::Real;

    fn begin_half(&mut self, half: Half) {
        self.half = half;
        let mut h = self.command(cmd::BEGIN);
        h[1] = half.index() as u64;
        self.send(h);
        self.rank.local.begin_half(half);
    }

    fn run_pass(&mut self, half: Half, pass: Pass, values: &[f64]) {
        let mut h = self.command(cmd::PASS);
        h[1] = half.index() as u64;
        h[2] = pass.index() as u64;
        h[3] = values.len() as u64;
        self.send(h);
        let mut v = values.to_vec();
        if !v.is_empty() {
            self.rank.world.broadcast(&mut v);
        }
        self.rank.local.run_pass(half, pass, values);
    }

    fn has_fused_step(&self) -> bool {
        self.rank.local.has_fused_step()
    }

    fn fused_sweep_is_per_slab(&self) -> bool {
        self.rank.local.fused_sweep_is_per_slab()
    }

    fn step_fused(&mut self, _halos: &HaloPlan, magnetic: &[f64], currents: &[f64]) {
        // The halo plan is the whole run's; every rank replays its own part of it.
        let mut h = self.command(cmd::FUSED);
        h[1] = magnetic.len() as u64;
        h[2] = currents.len() as u64;
        self.send(h);
        let mut values = [magnetic, currents].concat();
        if !values.is_empty() {
            self.rank.world.broadcast(&mut values);
        }
        self.rank.fused_step(magnetic, currents);
    }

    fn exchange(&mut self, _copies: &[HaloCopy]) {
        // The copies are those of the whole run's slabs (the time loop's halo plan); every
        // rank replays its own view of the same plan, built once.
        let mut h = self.command(cmd::EXCHANGE);
        h[1] = self.half.index() as u64;
        self.send(h);
        self.rank.exchange(self.half.index());
    }

    fn x_planes(&self) -> std::ops::Range<usize> {
        0..self.rank.layout.slabs.last().map_or(0, |s| s.x1)
    }

    fn field_sets(&self) -> usize {
        self.rank.local.field_sets()
    }

    fn read_plane(&mut self, component: Component, slab: usize, x: usize, out: &mut [B::Real]) {
        // Slab indices are the run's; only rank 0's own slabs can be read here.
        let first = self.rank.layout.ranks[0].start;
        self.rank.local.read_plane(component, slab - first, x, out);
    }

    fn write_halo(&mut self, component: Component, slab: usize, side: HaloSide, data: &[B::Real]) {
        let first = self.rank.layout.ranks[0].start;
        self.rank
            .local
            .write_halo(component, slab - first, side, data);
    }

    fn sample(&self, component: Component, index: [usize; 3]) -> f64 {
        let mut h = self.command(cmd::SAMPLE);
        h[1] = component as u64;
        h[2..5].copy_from_slice(&index.map(|v| v as u64));
        self.send(h);
        let owner = self.rank.layout.owner_of_x(index[0]);
        if owner == 0 {
            self.rank.local.sample(component, index)
        } else {
            let mut v = [0f64];
            self.rank.world.receive(owner, &mut v);
            v[0]
        }
    }

    fn gather(&self, component: Component, region: &Region, out: &mut [B::Real]) {
        let mut h = self.command(cmd::GATHER);
        encode_region(&mut h, 1, component, region);
        self.send(h);
        self.collect(0, component, region, out);
    }

    fn queue_probes(&mut self, samples: &[(Component, [usize; 3])]) {
        self.send(self.command(cmd::PROBES));
        let layout = &self.rank.layout;
        let owners: Vec<usize> = samples.iter().map(|s| layout.owner_of_x(s.1[0])).collect();
        let mut row = vec![0.0; samples.len()];
        let mut mine = Vec::new();
        self.rank.own_samples(&mut mine);
        let mut part = Vec::new();
        for r in 0..self.rank.world.size() {
            let n = owners.iter().filter(|&&o| o == r).count();
            if n == 0 {
                continue;
            }
            let values = if r == 0 {
                &mine
            } else {
                part.resize(n, 0.0);
                self.rank.world.receive(r, &mut part);
                &part
            };
            let mut it = values.iter();
            for (slot, _) in row.iter_mut().zip(&owners).filter(|(_, &o)| o == r) {
                *slot = *it.next().expect("one value per sample");
            }
        }
        self.probe_rows.extend_from_slice(&row);
    }

    fn drain_probes(&mut self, out: &mut Vec<f64>, _wait: bool) {
        out.append(&mut self.probe_rows);
    }

    fn queue_gather(&mut self, component: Component, region: &Region) -> GatherTicket {
        let id = match self.gathers.iter().position(|g| g.is_none()) {
            Some(i) => i,
            None => {
                self.gathers.push(None);
                self.gathers.len() - 1
            }
        };
        self.gathers[id] = Some((component, *region));
        let mut h = self.command(cmd::QUEUE_GATHER);
        h[1] = id as u64;
        encode_region(&mut h, 2, component, region);
        self.send(h);
        queue_own(&mut self.rank, id, component, region);
        GatherTicket(id)
    }

    fn gather_ready(&self, ticket: &GatherTicket) -> bool {
        match self.rank.tickets.get(ticket.0) {
            Some(Some((t, _))) => self.rank.local.gather_ready(t),
            _ => true,
        }
    }

    fn take_gather(&mut self, ticket: GatherTicket) -> Option<&[B::Real]> {
        // The whole region in one buffer: only for callers that want it so (the time loop
        // takes its snapshots in parts, `take_gather_parts`).
        let (_, region) = self.gathers[ticket.0]?;
        let mut whole = std::mem::take(&mut self.assembled);
        whole.resize(region.len(), <B::Real as Real>::ZERO);
        let row = RankLayout::row_len(&region);
        let ok = self
            .take_gather_parts(ticket, |first, values| -> Result<(), ()> {
                whole[first * row..first * row + values.len()].copy_from_slice(values);
                Ok(())
            })
            .unwrap_or(false);
        self.assembled = whole;
        ok.then_some(&self.assembled[..])
    }

    fn take_gather_parts<E>(
        &mut self,
        ticket: GatherTicket,
        mut part: impl FnMut(usize, &[B::Real]) -> Result<(), E>,
    ) -> Result<bool, E> {
        let id = ticket.0;
        let (_, region) = self.gathers[id].take().expect("a ticket is taken once");
        let mut h = self.command(cmd::TAKE_GATHER);
        h[1] = id as u64;
        self.send(h);
        let mut result = Ok(true);
        // Rank 0's own rows first (they come first in x), then each rank's as it arrives; after
        // an error the remaining parts are still received (and dropped), so the ranks stay in
        // step.
        if let Some((t, _)) = self.rank.tickets[id].take() {
            match self.rank.local.take_gather_parts(t, &mut part) {
                Ok(true) => {}
                Ok(false) => result = Ok(false),
                Err(e) => result = Err(e),
            }
        }
        let mut buf = self.rank.buf.borrow_mut();
        for r in 1..self.rank.world.size() {
            if let Some((first, sub)) = self.rank.layout.part(&region, r) {
                buf.resize(sub.len(), <B::Real as Real>::ZERO);
                self.rank.world.receive(r, &mut buf[..]);
                if matches!(result, Ok(true)) {
                    if let Err(e) = part(first, &buf) {
                        result = Err(e);
                    }
                }
            }
        }
        result
    }

    fn accumulate_flux(&mut self, step: usize, dt: f64) {
        if self.flux.is_empty() {
            return;
        }
        let mut h = self.command(cmd::FLUX);
        h[1] = step as u64;
        self.send(h);
        let mut staging = std::mem::take(&mut self.flux_staging);
        let mut flux = std::mem::take(&mut self.flux);
        // The accumulators read every plane whole, assembled from the ranks' parts: the same
        // values in the same order as one process, so the DFTs are bit for bit the same.
        for (set, acc) in flux.iter_mut().enumerate() {
            let collect = |c, r: &Region, out: &mut [B::Real]| self.collect(set, c, r, out);
            acc.accumulate(collect, step, dt, &mut staging);
        }
        self.flux_staging = staging;
        self.flux = flux;
    }

    fn flux_dft(&mut self, index: usize) -> Option<crate::flux::FluxDft> {
        match &mut self.flux[..] {
            [] => None,
            [one] => Some(one.dft(index)),
            [re, im, ..] => Some(complex_dft(re.dft(index), &im.dft(index))),
        }
    }

    fn flux_power(&mut self, index: usize) -> Option<Vec<f64>> {
        match &mut self.flux[..] {
            [one] => Some(one.power(index)),
            _ => self.flux_dft(index).map(|d| d.power()),
        }
    }

    /// Rank 0's own engine's (its GPUs'): the ranks step in lock step, so its shares stand for
    /// the others' too, which are not gathered.
    fn device_times(&mut self) -> Option<crate::backend::PhaseTimes> {
        self.rank.local.device_times()
    }

    fn all_finite(&self) -> bool {
        self.send(self.command(cmd::FINITE));
        self.rank.world.all(self.rank.local.all_finite())
    }

    fn failure(&self) -> Option<String> {
        // Every rank's failure and stop flag, each step: one rank's failure stops them all, and
        // a stop (Ctrl-C, SIGTERM) seen by any rank ends the run after this step.
        self.send(self.command(cmd::STATUS));
        let mut first = self.failure.borrow().clone();
        if first.is_none() {
            first = self.rank.own_failure().map(|m| format!("rank 0: {m}"));
        }
        for r in 1..self.rank.world.size() {
            let mut status = [0u64; 3];
            self.rank.world.receive(r, &mut status);
            let mut text = vec![0u8; status[2] as usize];
            if !text.is_empty() {
                self.rank.world.receive(r, &mut text);
            }
            if status[1] != 0 {
                self.rank.stop.store(true, Ordering::SeqCst);
            }
            if status[0] != 0 && first.is_none() {
                first = Some(format!("rank {r}: {}", String::from_utf8_lossy(&text)));
            }
        }
        if first.is_some() {
            *self.failure.borrow_mut() = first.clone();
        }
        first
    }

    fn allocation(&self) -> Allocation {
        self.rank.local.allocation()
    }

    fn host_monitor_bytes(&self, model: &Model) -> u64 {
        self.rank.local.host_monitor_bytes(model)
    }

    fn name(&self) -> String {
        self.rank.local.name()
    }

    fn export_state(&mut self) -> Option<State<B::Real>> {
        // No rank assembles the whole state: checkpoints go part by part (write_state).
        None
    }

    fn import_state(
        &mut self,
        _state: &State<B::Real>,
        _halo_copies: &[HaloCopy],
    ) -> Result<(), StateError> {
        Err(StateError(
            "a run over several MPI ranks imports its state part by part (import_state_from)"
                .into(),
        ))
    }

    fn state_shape(&mut self) -> Option<StateShape> {
        None
    }

    fn write_state(
        &mut self,
        step: usize,
        sink: &mut dyn StateSink<B::Real>,
    ) -> Result<bool, String> {
        self.send(self.command(cmd::EXPORT));
        // Set after set, as one process's Bloch pair lists them.
        let flux = self
            .flux
            .iter_mut()
            .flat_map(|f| (0..f.len()).map(|i| f.dft(i)).collect::<Vec<_>>())
            .collect();
        export_parts(&mut self.rank, Some((sink, flux, step)))
    }

    fn import_state_from(
        &mut self,
        read: &StateReader<'_, B::Real>,
        _halo_copies: &[HaloCopy],
    ) -> Result<(), String> {
        self.send(self.command(cmd::IMPORT));
        let (flux, _step) = import_parts(&mut self.rank, read)?;
        let want: usize = self.flux.iter().map(|f| f.len()).sum();
        if flux.len() != want {
            return Err(format!(
                "the checkpoint holds {} surface DFT monitors, the scene {want}",
                flux.len()
            ));
        }
        let mut saved = flux.iter();
        for acc in &mut self.flux {
            for i in 0..acc.len() {
                acc.restore(i, saved.next().expect("counted above"))?;
            }
        }
        Ok(())
    }
}

/// Queue this rank's part of `region` on its backend under `id`.
fn queue_own<B: Backend>(rank: &mut Rank<B>, id: usize, c: Component, region: &Region) {
    if rank.tickets.len() <= id {
        rank.tickets.resize_with(id + 1, || None);
    }
    rank.tickets[id] = rank
        .layout
        .part(region, rank.layout.rank)
        .map(|(_, sub)| (rank.local.queue_gather(c, &sub), sub.len()));
}

/// The loop of every rank but 0: do what rank 0 says, on this rank's slabs, until it says the
/// run is over. Returns how it ended and the steps done.
pub(crate) fn follow<B: Backend>(
    model: &Model,
    local: B,
    layout: RankLayout,
    world: World,
    stop: Arc<AtomicBool>,
    read: &StateReader<'_, B::Real>,
) -> (Outcome, usize) {
    let mut rank = Rank::new(model, local, layout, world, stop);
    let me = rank.layout.rank;
    let mut values = Vec::new();
    let mut mine = Vec::new();
    loop {
        let mut h = [0u64; HEADER];
        rank.world.broadcast(&mut h);
        match h[0] {
            cmd::FINISH => {
                let outcome = if h[1] == 1 {
                    Outcome::Complete
                } else {
                    Outcome::Stopped
                };
                return (outcome, h[2] as usize);
            }
            cmd::BEGIN => rank.local.begin_half(Half::BOTH[h[1] as usize]),
            cmd::PASS => {
                values.resize(h[3] as usize, 0.0);
                if !values.is_empty() {
                    rank.world.broadcast(&mut values);
                }
                let pass = ALL_PASSES[h[2] as usize];
                rank.local
                    .run_pass(Half::BOTH[h[1] as usize], pass, &values);
            }
            cmd::EXCHANGE => rank.exchange(h[1] as usize),
            cmd::FUSED => {
                let (m, c) = (h[1] as usize, h[2] as usize);
                values.resize(m + c, 0.0);
                if !values.is_empty() {
                    rank.world.broadcast(&mut values);
                }
                let (magnetic, currents) = values.split_at(m);
                rank.fused_step(magnetic, currents);
            }
            cmd::PROBES => {
                rank.own_samples(&mut mine);
                if !mine.is_empty() {
                    rank.world.send(0, &mine);
                }
            }
            cmd::QUEUE_GATHER => {
                let (c, region) = decode_region(&h, 2);
                queue_own(&mut rank, h[1] as usize, c, &region);
            }
            cmd::TAKE_GATHER => {
                let id = h[1] as usize;
                if let Some((t, n)) = rank.tickets[id].take() {
                    match rank.local.take_gather(t) {
                        Some(v) => rank.world.send(0, v),
                        // After a failure the part is zeros (rank 0 learns of the failure from
                        // the status of this step and stops).
                        None => rank.world.send(0, &vec![<B::Real as Real>::ZERO; n]),
                    }
                }
            }
            cmd::FLUX => {
                let world = &rank.world;
                rank.own_flux_planes(model, h[1] as usize, |part| world.send(0, part));
            }
            cmd::STATUS => {
                let failure = rank.own_failure();
                let text = failure.unwrap_or_default();
                let status = [
                    (!text.is_empty()) as u64,
                    rank.stop.load(Ordering::SeqCst) as u64,
                    text.len() as u64,
                ];
                rank.world.send(0, &status);
                if !text.is_empty() {
                    rank.world.send(0, text.as_bytes());
                }
            }
            cmd::FINITE => {
                rank.world.all(rank.local.all_finite());
            }
            cmd::SAMPLE => {
                let index = [h[2], h[3], h[4]].map(|v| v as usize);
                if rank.mine(index[0]) {
                    let v = rank.local.sample(Component::ALL[h[1] as usize], index);
                    rank.world.send(0, &[v]);
                }
            }
            cmd::GATHER => {
                let (c, region) = decode_region(&h, 1);
                if let Some((_, sub)) = rank.layout.part(&region, me) {
                    let mut buf = vec![<B::Real as Real>::ZERO; sub.len()];
                    rank.local.gather(c, &sub, &mut buf);
                    rank.world.send(0, &buf);
                }
            }
            cmd::EXPORT => {
                // A failure shows on rank 0 as no checkpoint and in the next status.
                let _ = export_parts(&mut rank, None);
            }
            cmd::IMPORT => {
                // An error is every rank's: rank 0 reports it and finishes the run.
                let _ = import_parts(&mut rank, read);
            }
            other => unreachable!("rank 0 sent an unknown command {other}"),
        }
    }
}
