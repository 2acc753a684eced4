//! Monitors on the device: the probe ring, snapshot staging and its pinned mirror, the flux
//! DFT accumulators, and the scratch path for regions read outside the schedule.

use super::super::args::*;
use super::device::{Device, DeviceError, Event, Stream};
use super::slab::Slab;
use super::CudaEngine;
use crate::model::{Component, Model, Region};
use crate::real::Real;

/// Rows (steps) of probe samples the device ring holds before it must be read (the plan's
/// figure: it counts the ring's bytes).
pub use crate::plan::bytes::PROBE_RING_ROWS;

/// Rows of the probe ring: [`PROBE_RING_ROWS`], or the step count when smaller.
pub fn probe_ring_rows(model: &Model) -> usize {
    crate::plan::bytes::probe_ring_rows(model.grid.steps)
}

/// Monitor bytes for the whole model, on the GPUs and in pinned host memory, as the plan
/// counts them ([`crate::plan::bytes::MonitorLayout`]): probe sample addresses and the probe
/// ring on the device and its pinned mirror; device staging plus pinned memory for every
/// snapshot value; and the flux monitors' DFT accumulators and tables on the device.
pub fn monitor_bytes(model: &Model, real: usize) -> u64 {
    let m = crate::plan::bytes::MonitorLayout::of(model);
    let whole = crate::decomp::SlabRange {
        x0: 0,
        x1: model.grid.shape[0],
    };
    m.device_bytes(whole, real) + m.pinned_bytes(real)
}

/// Part of a snapshot region inside one slab: output values [out0, out0 + len) of the
/// region, gathered into the slab's GPU staging at `staging`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    pub(super) gpu: usize,
    pub(super) out0: usize,
    pub(super) len: usize,
    pub(super) staging: usize,
    pub(super) args: GatherArgs,
}

/// The staging of one snapshot component of the model: its chunks are gathered into their
/// GPUs' device staging and copied to `[pinned_off, pinned_off + len)` of the shared pinned
/// buffer, so the region's values end up contiguous in C order.
#[derive(Debug, Clone)]
pub(super) struct Slot {
    pub(super) component: Component,
    pub(super) region: Region,
    pub(super) chunks: Vec<Chunk>,
    /// The GPUs the chunks are on.
    pub(super) gpus: Vec<usize>,
    pub(super) pinned_off: usize,
    pub(super) len: usize,
    /// Queued and not yet taken.
    pub(super) queued: bool,
}

/// A queued gather: a planned slot, or a region outside the plan read at once.
#[derive(Debug)]
pub(super) enum Ticket<T> {
    Slot(usize),
    Host(Vec<T>),
}

/// One GPU's share of the probe ring.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RingGpu {
    /// Device array of sample addresses; device ring and its pinned mirror, `rows` rows of `n`
    /// values each.
    pub(super) src: Ptr,
    pub(super) ring: Ptr,
    pub(super) pinned: Ptr,
    pub(super) n: usize,
}

/// Probe rows on their way to the host. Row r (the r-th queued step) sits in ring row
/// r % rows; rows [collected, requested) are being copied to (or are in) the pinned mirror,
/// rows [requested, queued) only on the device. At most `rows` rows are not yet collected.
#[derive(Debug, Clone, Default)]
pub(super) struct Probes {
    pub(super) gpus: Vec<RingGpu>,
    /// Model sample k (model order) -> (GPU, column in its ring rows).
    pub(super) column: Vec<(usize, usize)>,
    pub(super) rows: usize,
    pub(super) queued: usize,
    pub(super) requested: usize,
    pub(super) collected: usize,
    /// Rows collected when the ring filled, not yet drained (model order).
    pub(super) host: Vec<f64>,
}

/// One patch's part in one slab: accumulators `[8][nf][cells]` on the slab's GPU, covering
/// cells `[cell0, cell0 + cells)` of the patch (C order of its in-plane axes).
#[derive(Debug, Clone, Copy)]
pub(super) struct FluxPart {
    pub(super) gpu: usize,
    pub(super) cell0: usize,
    pub(super) cells: usize,
    /// The launch arguments, less the frequencies and weights of each launch.
    pub(super) args: FluxArgs,
    /// The arguments of its spectrum's row sums (`flux_rows`).
    pub(super) rows: FluxRowsArgs,
}

impl FluxPart {
    /// Rows of the patch in this part.
    pub(super) fn row_count(&self) -> usize {
        (self.rows.cells / self.rows.row) as usize
    }
}

/// One patch of a surface DFT monitor and its parts, slab by slab.
#[derive(Debug, Clone)]
pub(super) struct FluxPatch {
    pub(super) patch: crate::model::Patch,
    pub(super) area: f64,
    /// The pairs' quadrature weights on the host ([`crate::flux::patch_weights`]), for the
    /// spectrum formed from the DFTs read back.
    pub(super) quadrature: [Vec<f64>; 2],
    pub(super) parts: Vec<FluxPart>,
}

/// A surface DFT monitor on the device: its patches (one plane, or a box's six faces).
#[derive(Debug, Clone)]
pub(super) struct FluxMonitor {
    pub(super) nf: usize,
    /// The monitor's frequencies (Hz), for each sample's weights.
    pub(super) frequencies: Vec<f64>,
    /// Sampled every `decimation` steps ([`crate::model::Flux::decimation`]).
    pub(super) decimation: usize,
    pub(super) patches: Vec<FluxPatch>,
}

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// Write this step's probe samples into the next ring row (reading the ring first if it
    /// is full of rows not yet read).
    pub(super) fn queue_probe_row(&mut self) -> Result<(), DeviceError> {
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
    pub(super) fn request_probe_rows(&mut self) -> Result<(), DeviceError> {
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
    pub(super) fn read_probe_rows(
        &mut self,
        out: &mut Vec<f64>,
        wait: bool,
    ) -> Result<(), DeviceError> {
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
    pub(super) fn queue_slot(&mut self, i: usize) -> Result<(), DeviceError> {
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

    /// Read surface DFT monitor `index`'s accumulators back, patch by patch.
    pub(super) fn read_flux(&self, index: usize) -> Result<crate::flux::FluxDft, DeviceError> {
        let m = &self.fluxes[index];
        let mut patches = Vec::with_capacity(m.patches.len());
        for fp in &m.patches {
            let cells = fp.patch.cells();
            let n = m.nf * cells;
            let mut re: [Vec<f64>; 4] = [0; 4].map(|_| vec![0.0; n]);
            let mut im: [Vec<f64>; 4] = [0; 4].map(|_| vec![0.0; n]);
            for part in &fp.parts {
                // Each (component, frequency) row of the part straight into its place: no
                // second host copy of the accumulators.
                let pc = part.cells;
                for q in 0..8 {
                    let dst = if q < 4 { &mut re[q] } else { &mut im[q - 4] };
                    for f in 0..m.nf {
                        let into = &mut dst[f * cells + part.cell0..][..pc];
                        // SAFETY: plain f64 values; any bytes are valid.
                        let bytes = unsafe {
                            std::slice::from_raw_parts_mut(into.as_mut_ptr().cast::<u8>(), pc * 8)
                        };
                        let src = part.args.acc + (8 * (q * m.nf + f) * pc) as u64;
                        self.dev.download(part.gpu, src, bytes)?;
                    }
                }
            }
            patches.push(crate::flux::PatchDft {
                patch: fp.patch,
                re,
                im,
                area: fp.area,
                weights: fp.quadrature.clone(),
            });
        }
        Ok(crate::flux::FluxDft { patches })
    }

    /// Monitor `index`'s spectrum, as [`crate::flux::FluxDft::power`] forms it from the DFTs:
    /// each part's row sums formed on its GPU (`flux_rows`) and read back, then added over the
    /// rows in patch order and over the patches on the host ([`crate::flux::patch_power`]).
    pub(super) fn read_flux_power(&self, index: usize) -> Result<Vec<f64>, DeviceError> {
        let m = &self.fluxes[index];
        let mut total: Vec<f64> = Vec::new();
        for fp in &m.patches {
            debug_assert!(fp.parts.windows(2).all(|w| w[0].cell0 < w[1].cell0));
            for part in &fp.parts {
                let dims = Dims::elements((part.row_count() * m.nf) as u64, 1);
                self.launch(
                    part.gpu,
                    Stream::Compute,
                    Kernel::FluxRows,
                    dims,
                    &part.rows,
                )?;
            }
            let mut sums = Vec::with_capacity(fp.parts.len());
            for part in &fp.parts {
                let mut out = vec![0.0f64; 4 * part.row_count() * m.nf];
                // SAFETY: plain f64 values; any bytes are valid.
                let bytes = unsafe {
                    std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), out.len() * 8)
                };
                self.dev.download(part.gpu, part.rows.out, bytes)?;
                sums.push(out);
            }
            let power = (0..m.nf).map(|f| {
                let rows = fp.parts.iter().zip(&sums).flat_map(|(part, out)| {
                    let n = part.row_count();
                    out[4 * f * n..4 * (f + 1) * n]
                        .chunks_exact(4)
                        .map(|r| [r[0], r[1], r[2], r[3]])
                });
                crate::flux::patch_power(rows, fp.patch.sign, fp.area)
            });
            // Patches added as FluxDft::power adds them.
            if total.is_empty() {
                total = power.collect();
            } else {
                total.iter_mut().zip(power).for_each(|(t, v)| *t += v);
            }
        }
        Ok(total)
    }

    /// Gather a region outside the monitor schedule: on the device into the scratch buffers,
    /// one copy to pinned memory per GPU, then wait.
    pub(super) fn gather_now(
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
pub(super) fn region_chunks(
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

/// The part of patch `f` (of a monitor with `nf` frequencies) inside slab `s`: its kernel
/// arguments (without `acc`, `freq` and the times), its first cell in the patch and its cell
/// count; `None` if the patch does not cross the slab. Offsets in values: the E plane's first
/// cell of the part at `base`, the H plane below it `below` earlier (for an x plane at the slab's
/// first plane, the left halo, which holds the neighbour's tangential H after the H exchange).
/// Cell (u, v) of the part (C order of the patch's in-plane axes, v fastest) is at
/// `base + u su + v sv`.
pub(super) fn flux_part(
    s: &Slab,
    f: &crate::model::Patch,
    nf: usize,
    plane: usize,
    [_ny, nz]: [usize; 2],
    t: usize,
    [below_weight, above_weight]: [f64; 2],
) -> Option<(FluxArgs, usize, usize)> {
    let a = f.axis as usize;
    let (b, c) = crate::flux::tangential(a);
    let (k, x0) = (f.index, s.range.x0);
    let [s0, s1] = f.start;
    let [n0, n1] = f.count;
    // The part's x range: the patch's own along x for y and z normals, one plane for x.
    let (xs, xe) = if a == 0 {
        (k, k + 1)
    } else {
        (s0.max(x0), (s0 + n0).min(s.range.x1))
    };
    if xs >= xe || !(x0..s.range.x1).contains(&xs) {
        return None;
    }
    let p = xs - x0 + 1;
    // (base, below, su, sv, cells, cell0).
    let (base, below, su, sv, cells, cell0) = match a {
        0 => (p * plane + s0 * nz + s1, plane, nz, 1, n0 * n1, 0),
        1 => (
            p * plane + k * nz + s1,
            nz,
            plane,
            1,
            (xe - xs) * n1,
            (xs - s0) * n1,
        ),
        _ => (
            p * plane + s1 * nz + k,
            1,
            plane,
            nz,
            (xe - xs) * n1,
            (xs - s0) * n1,
        ),
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
        su: su as i64,
        sv: sv as i64,
        // A part of 2^31 cells would need 128 GiB of accumulators per frequency: no GPU
        // holds its slab, so the plan never places one.
        cells: i32::try_from(cells).expect("a flux part's cells fit 32 bits"),
        nv: n1 as i32,
        nf: nf as i32,
        below: below_weight,
        above: above_weight,
        ..Default::default()
    };
    Some((args, cell0, cells))
}
