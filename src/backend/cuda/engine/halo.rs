//! Halo copy routes and the overlap of copies with the interior update.
//!
//! Each halo copy of the plan is a route: within one GPU, between GPUs with peer access,
//! through pinned host memory, or (PMC mirror) a negating kernel. A half step runs each pass on
//! the boundary planes first; once the last pass is queued, the copies start and the passes
//! run on the interior planes, so the copies overlap them.

use super::super::args::*;
use super::device::{Device, DeviceError, Event, Stream};
use super::slab::Slab;
use super::{CudaEngine, EngineOptions};
use crate::backend::{Half, Pass, Phase};
use crate::decomp::{HaloPlan, HaloSide};
use crate::real::Real;

/// How a halo copy travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RouteKind {
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
pub(super) struct Route {
    pub(super) kind: RouteKind,
    pub(super) src_gpu: usize,
    pub(super) dst_gpu: usize,
    pub(super) src: Ptr,
    pub(super) dst: Ptr,
    /// Pinned plane for staged copies.
    pub(super) pinned: Ptr,
}

/// The routes of every copy of `plan`, per phase (after H, after E), allocating the pinned
/// planes of staged copies.
pub(super) fn routes<D: Device>(
    dev: &D,
    slabs: &[Slab],
    plan: &HaloPlan,
    plane: usize,
    t: usize,
    opts: EngineOptions,
) -> Result<[Vec<Route>; 2], DeviceError> {
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
                dev.alloc_pinned(
                    src_gpu,
                    crate::plan::bytes::staged_halo_bytes(plane, t) as usize,
                )?
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
    Ok(routes)
}

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// Start half step `half`. With halo copies to make, mark the point the copies of this
    /// half step wait for (every earlier read of a halo plane is queued before it).
    pub(super) fn begin(&mut self, half: Half) -> Result<(), DeviceError> {
        // A caller that skipped the last half step's exchange still gets its interior planes
        // (and copies) before this half step reads them.
        if self.deferred_len > 0 {
            self.issue_exchange()?;
            self.finish_copies()?;
        }
        self.half = half;
        self.deferred_len = 0;
        if !self.routes[half.index()].is_empty() {
            for gpu in 0..self.dev.gpus() {
                self.dev.record(gpu, Stream::Compute, Event::PhaseStart)?;
            }
        }
        Ok(())
    }

    /// Pass `pass` of the half step under way. With halo copies to make, it runs now on the
    /// boundary planes (those a copy reads) and waits in `deferred` for the interior ones,
    /// which [`CudaEngine::issue_exchange`] launches after the copies so they overlap; without,
    /// it runs on every plane now.
    pub(super) fn pass(&mut self, pass: Pass, values: &[f64]) -> Result<(), DeviceError> {
        let (half, pi) = (self.half, self.half.index());
        if pass == Pass::Tfsf {
            // The 1-D grid advances once per half step, before any plane's corrections.
            self.tfsf_incident(half, values)?;
        }
        if !self.defers[pi] {
            for s in &self.slabs {
                self.run_planes(s, half, pass, 1, s.range.len() + 1, values)?;
            }
            // The surface ports are dispersive cells too, stepped over every slab at once.
            if (half, pass) == (Half::E, Pass::Dispersive) {
                self.step_ports()?;
            }
            return Ok(());
        }
        for s in &self.slabs {
            for &(p0, p1) in &s.boundary[pi] {
                self.run_planes(s, half, pass, p0, p1, values)?;
            }
        }
        // Reuse the slots of earlier half steps: no allocation per step.
        if self.deferred_len == self.deferred.len() {
            self.deferred.push((pass, Vec::new()));
        }
        let slot = &mut self.deferred[self.deferred_len];
        slot.0 = pass;
        slot.1.clear();
        slot.1.extend_from_slice(values);
        self.deferred_len += 1;
        Ok(())
    }

    /// After the last pass: start the halo copies as soon as the boundary planes are done,
    /// then launch the deferred passes on the interior planes, overlapping the copies (and,
    /// over MPI ranks, the messages of the planes read before this call).
    pub(super) fn issue_exchange(&mut self) -> Result<(), DeviceError> {
        let (half, pi) = (self.half, self.half.index());
        // Whatever happens below, the deferred passes are consumed (after a failure the
        // engine skips everything anyway). A phase that does not defer (no copies, or
        // surface ports, which keep the E half step whole) has none: every pass ran on every
        // plane, and only its copies are left.
        let pending = std::mem::take(&mut self.deferred_len);
        if self.routes[pi].is_empty() {
            // No copies here to wait for (at most planes for other processes).
            self.in_flight = None;
            if !self.defers[pi] {
                return Ok(());
            }
        } else {
            for gpu in 0..self.dev.gpus() {
                self.dev.record(gpu, Stream::Compute, Event::Boundary)?;
            }
            self.issue_copies(pi)?;
            self.in_flight = Some(half);
        }
        for (pass, values) in &self.deferred[..pending] {
            self.clock_switch(Phase::Pass(half, *pass));
            for s in &self.slabs {
                for &(p0, p1) in &s.interior[pi] {
                    self.run_planes(s, half, *pass, p0, p1, values)?;
                }
            }
        }
        // What follows on the compute stream is the wait for the copies.
        self.clock_switch(Phase::Exchange);
        Ok(())
    }

    /// Queue the halo copies of phase `pi` on the halo streams.
    pub(super) fn issue_copies(&mut self, pi: usize) -> Result<(), DeviceError> {
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
    pub(super) fn finish_copies(&mut self) -> Result<(), DeviceError> {
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
}
