//! Device choice, slab split and the time model: the candidates and the [`Decision`] between
//! them. The reason is built from the decision in `reason`, the suggestions in `suggest`.

use super::bytes::{
    bytes_per_cell_step, fused_update_bytes_per_cell_step, update_bytes_per_cell_step, Layout,
};
use super::decision::{Decision, GpuFit, HostFit, NoGpu};
use super::hardware::{Device, Hardware, CUDA_CONTEXT_RESERVE};
use super::report::{bytes_h, duration_h, percent};
use super::*;
use crate::decomp::split_even;

/// One way of placing the grid on devices.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) backend: PlanBackend,
    /// (index into the plan's device list, range, what the slab allocates).
    pub(super) slabs: Vec<(usize, SlabRange, Allocation)>,
    pub(super) fits: bool,
    pub(super) bytes: Bytes,
    /// Bytes on the devices (slabs and context reserves), without host-side buffers.
    pub(super) device_bytes: u64,
    /// Memory of the devices used, less their context reserves.
    pub(super) usable_bytes: u64,
    /// Slowest slab's update per step, seconds.
    pub(super) update_s: f64,
    /// Bytes the update moves per cell and step, the cells' part (the CPU's fused sweep or
    /// the two-pass update; the CPML and the other passes add theirs where they act).
    pub(super) bytes_per_cell_step: u64,
    /// Launches and halo copies per step, seconds.
    pub(super) overhead_s: f64,
    /// True when the host-side buffers (monitor staging, probe series) alone do not fit in
    /// host memory: then that, not the devices, is the limit.
    pub(super) host_side_short: bool,
}

impl Candidate {
    pub(super) fn step_s(&self) -> f64 {
        self.update_s + self.overhead_s
    }
    fn overhead_fraction(&self) -> f64 {
        self.overhead_s / self.update_s.max(1e-30)
    }
    pub(super) fn gpus(&self) -> usize {
        if self.backend == PlanBackend::Cuda {
            let mut d: Vec<usize> = self.slabs.iter().map(|s| s.0).collect();
            d.sort_unstable();
            d.dedup();
            d.len()
        } else {
            0
        }
    }
}

fn add(bytes: &mut Bytes, a: &Allocation) {
    bytes.fields += a.fields;
    bytes.materials += a.materials;
    bytes.pml += a.pml;
    bytes.dispersive += a.dispersive;
    bytes.sources += a.sources;
    bytes.passes += a.passes;
    bytes.monitors += a.monitors;
    bytes.halos += a.halos;
}

fn finish_bytes(bytes: &mut Bytes, layout: &Layout) {
    bytes.probe_series = layout.probe_series_bytes();
    // Saturating: an absurd run must read as "too big", never wrap round to a small number.
    bytes.total = [
        bytes.fields,
        bytes.materials,
        bytes.pml,
        bytes.dispersive,
        bytes.sources,
        bytes.passes,
        bytes.monitors,
        bytes.device_monitors,
        bytes.pinned,
        bytes.staged_halos,
        bytes.probe_series,
        bytes.halos,
        bytes.overhead,
    ]
    .into_iter()
    .fold(0u64, u64::saturating_add);
}

/// Host-side bytes of a plan: host monitor buffers, pinned mirrors, staged halo planes and
/// the probe series.
pub(super) fn host_side_bytes(bytes: &Bytes) -> u64 {
    bytes
        .monitors
        .saturating_add(bytes.pinned)
        .saturating_add(bytes.staged_halos)
        .saturating_add(bytes.probe_series)
}

/// How candidate `c` sits in `available` bytes of host memory.
fn host_fit(c: &Candidate, available: u64) -> HostFit {
    HostFit {
        needs: c.bytes.total,
        available,
        fits: c.fits,
        probe_series: c.bytes.probe_series,
        monitors: c.bytes.monitors.saturating_add(c.bytes.pinned),
        host_side: host_side_bytes(&c.bytes),
        host_side_short: c.host_side_short,
    }
}

/// The GPUs `sel` (indices into `gpus`), `spg` slabs on each, split by [`gpu_split`]. Every
/// slab's monitor buffers are counted on its GPU, their pinned mirrors on the host; without
/// `peer` access between the GPUs, so is a pinned plane for every halo copy between two of
/// them (the CUDA engine stages those copies through host memory).
pub(super) fn gpu_candidate(
    layout: &Layout,
    gpus: &[Device],
    host: &Device,
    sel: &[usize],
    spg: usize,
    peer: bool,
) -> Candidate {
    let nx = layout.shape[0];
    let usable_of: Vec<u64> = sel.iter().map(|&i| gpus[i].usable_bytes()).collect();
    let (ranges, gpu_of) = gpu_split(nx, &usable_of, spg);
    let used = gpu_of.last().map_or(0, |&g| g + 1);
    let sel = &sel[..used];
    let mut bytes = Bytes::default();
    let mut slabs = Vec::with_capacity(ranges.len());
    let mut need = vec![CUDA_CONTEXT_RESERVE; sel.len()];
    // Bytes each GPU moves per step.
    let mut traffic = vec![0f64; sel.len()];
    for (r, &g) in ranges.iter().zip(&gpu_of) {
        let a = layout.gpu_slab_bytes_with_monitors(*r);
        add(&mut bytes, &Allocation { monitors: 0, ..a });
        bytes.device_monitors += a.monitors;
        need[g] = need[g].saturating_add(a.total());
        traffic[g] += layout.traffic_per_step(*r, false);
        slabs.push((sel[g], *r, a));
    }
    // The surface ports' trades between GPUs, on each GPU's first slab.
    let (trades, staged_trades) = layout.gpu_port_trades(&ranges, &gpu_of);
    for (g, &b) in trades.iter().enumerate() {
        if let Some(first) = slabs.iter_mut().find(|s| s.0 == sel[g]) {
            first.2.dispersive += b;
        }
        bytes.dispersive += b;
        need[g] = need[g].saturating_add(b);
    }
    let mut fits = true;
    let mut update_s: f64 = 0.0;
    let mut interconnect = f64::INFINITY;
    let mut usable = 0;
    for (g, &i) in sel.iter().enumerate() {
        let d = &gpus[i];
        fits &= need[g] <= d.memory_bytes;
        // A GPU's slabs are updated one after the other.
        update_s = update_s.max(traffic[g] / (d.bandwidth_bytes_per_s * GPU_ACHIEVED_FRACTION));
        interconnect = interconnect.min(if sel.len() > 1 {
            d.interconnect_bytes_per_s
        } else {
            // Slabs on one GPU copy their halos within its memory.
            d.bandwidth_bytes_per_s
        });
        usable += d.usable_bytes();
    }
    let k = sel.len() as u64;
    bytes.overhead = k * CUDA_CONTEXT_RESERVE;
    bytes.monitors = layout.gpu_host_monitor_bytes();
    bytes.pinned = layout.gpu_pinned_bytes();
    if !peer {
        bytes.staged_halos = layout.staged_halo_total(&gpu_of) + staged_trades;
    }
    let device_bytes = bytes.fields
        + bytes.materials
        + bytes.pml
        + bytes.dispersive
        + bytes.sources
        + bytes.passes
        + bytes.halos
        + bytes.device_monitors
        + bytes.overhead;
    finish_bytes(&mut bytes, layout);
    let host_side_short = host.memory_bytes > 0 && host_side_bytes(&bytes) > host.memory_bytes;
    fits &= !host_side_short;
    // Each GPU launches its slabs' kernels one after the other.
    let mut launches = vec![0u64; sel.len()];
    for (r, &g) in ranges.iter().zip(&gpu_of) {
        launches[g] += layout.gpu_launches_per_step(*r);
    }
    for (g, n) in layout
        .gpu_port_extra_launches(&ranges, &gpu_of)
        .into_iter()
        .enumerate()
    {
        launches[g] += n;
    }
    let mut overhead_s = launches.iter().copied().max().unwrap_or(0) as f64 * LAUNCH_OVERHEAD_S;
    if slabs.len() > 1 {
        overhead_s += HALO_COPIES_PER_STEP as f64
            * (LAUNCH_OVERHEAD_S + layout.plane_bytes() as f64 / interconnect);
    }
    Candidate {
        backend: PlanBackend::Cuda,
        slabs,
        fits,
        bytes,
        device_bytes,
        usable_bytes: usable,
        update_s,
        bytes_per_cell_step: bytes_per_cell_step(layout.precision),
        overhead_s,
        host_side_short,
    }
}

/// The host with `slabs` slabs on `threads` threads (the CPU backend's split).
pub(super) fn cpu_candidate(
    layout: &Layout,
    host: &Device,
    host_index: usize,
    (slabs, threads): (usize, usize),
) -> Candidate {
    let nx = layout.shape[0];
    let ranges = split_even(nx, slabs.clamp(1, nx.max(1)));
    let mut bytes = Bytes::default();
    let mut out = Vec::with_capacity(ranges.len());
    for r in ranges {
        let a = layout.slab_bytes(r);
        add(&mut bytes, &a);
        out.push((host_index, r, a));
    }
    bytes.monitors = bytes.monitors.saturating_add(layout.staging_bytes());
    finish_bytes(&mut bytes, layout);
    let whole = SlabRange {
        x0: 0,
        x1: layout.shape[0],
    };
    // A Bloch cell's pair of engines sweeps its two sets together (`crate::backend::bloch`).
    let fused = super::cpu_update_is_fused(slabs, threads);
    let update_s = layout.traffic_per_step(whole, fused)
        / (host.bandwidth_bytes_per_s * CPU_ACHIEVED_FRACTION);
    Candidate {
        backend: PlanBackend::Cpu,
        slabs: out,
        fits: bytes.total <= host.memory_bytes,
        device_bytes: bytes.total,
        usable_bytes: host.memory_bytes,
        host_side_short: host_side_bytes(&bytes) > host.memory_bytes,
        bytes,
        update_s,
        bytes_per_cell_step: update_bytes_per_cell_step(layout.precision, fused),
        overhead_s: 0.0,
    }
}

/// The GPU count and split the planner picks.
pub(super) struct GpuChoice {
    /// The chosen candidate (all GPUs, not fitting, when no count fits).
    pub(super) cand: Candidate,
    /// Fewest GPUs that hold the grid.
    pub(super) k_min: Option<usize>,
    /// GPUs available.
    pub(super) n: usize,
    /// The overhead fraction with one more GPU, when one more was possible.
    pub(super) next_fraction: Option<f64>,
    /// The GPUs were given (`--gpus 0,2`), not chosen.
    pub(super) given: Option<Vec<usize>>,
}

/// What the user fixed of the GPU placement.
#[derive(Debug, Clone, Default)]
pub(super) struct GpuAsk {
    /// `--gpus 0,2`: exactly these, in this order.
    pub(super) only: Option<Vec<usize>>,
    /// `--slabs-per-gpu`.
    pub(super) spg: usize,
    /// GPUs left out after a failed start.
    pub(super) exclude: Vec<usize>,
    /// The GPUs have peer access to each other ([`Hardware::peer_access`]).
    pub(super) peer: bool,
}

impl GpuAsk {
    pub(super) fn of(options: &PlanOptions, hw: &Hardware) -> GpuAsk {
        GpuAsk {
            only: options.gpus.clone(),
            spg: options.slabs_per_gpu.unwrap_or(1).max(1),
            exclude: options.exclude_gpus.clone(),
            peer: hw.peer_access,
        }
    }
}

/// Why `--gpus` cannot be honoured on `gpus`, if it cannot: an index named twice or one the
/// hardware lacks.
fn bad_ordinals(only: &[usize], gpus: &[Device]) -> Option<NoGpu> {
    for (i, &o) in only.iter().enumerate() {
        if only[..i].contains(&o) {
            return Some(NoGpu::ListedTwice { gpu: o });
        }
        if o >= gpus.len() {
            return Some(NoGpu::Missing {
                gpu: o,
                count: gpus.len(),
            });
        }
    }
    None
}

/// Fewest GPUs (largest first) that hold the grid, then more while halo exchange and launches
/// stay under [`OVERHEAD_LIMIT`] of a step.
pub(super) fn choose_gpus(
    layout: &Layout,
    gpus: &[Device],
    host: &Device,
    ask: &GpuAsk,
) -> Option<GpuChoice> {
    if gpus.is_empty() {
        return None;
    }
    if let Some(only) = &ask.only {
        if bad_ordinals(only, gpus).is_some() {
            return None;
        }
        let only: Vec<usize> = only
            .iter()
            .copied()
            .filter(|i| !ask.exclude.contains(i))
            .collect();
        if only.is_empty() {
            return None;
        }
        let cand = gpu_candidate(layout, gpus, host, &only, ask.spg, ask.peer);
        let k = cand.gpus();
        return Some(GpuChoice {
            k_min: cand.fits.then_some(k),
            n: only.len(),
            next_fraction: None,
            given: Some(only),
            cand,
        });
    }
    let mut order: Vec<usize> = (0..gpus.len())
        .filter(|i| !ask.exclude.contains(i))
        .collect();
    let n = order.len();
    if n == 0 {
        return None;
    }
    order.sort_by_key(|&i| std::cmp::Reverse(gpus[i].usable_bytes()));
    let cand = |k: usize| gpu_candidate(layout, gpus, host, &order[..k], ask.spg, ask.peer);
    // No fewer GPUs than it takes to hold the grid and its monitors without halos.
    let whole = layout.gpu_slab_bytes_with_monitors(SlabRange {
        x0: 0,
        x1: layout.shape[0],
    });
    let core = whole.total() - whole.halos;
    let mut cum = 0;
    let lower = order.iter().position(|&i| {
        cum += gpus[i].usable_bytes();
        cum >= core
    });
    let Some(lower) = lower.map(|p| p + 1) else {
        return Some(GpuChoice {
            cand: cand(n),
            k_min: None,
            n,
            next_fraction: None,
            given: None,
        });
    };
    // Fewest that fit (binary search: more GPUs only shrink every slab).
    let k_min = if cand(lower).fits {
        lower
    } else if !cand(n).fits {
        return Some(GpuChoice {
            cand: cand(n),
            k_min: None,
            n,
            next_fraction: None,
            given: None,
        });
    } else {
        let (mut lo, mut hi) = (lower, n);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if cand(mid).fits {
                hi = mid
            } else {
                lo = mid
            }
        }
        hi
    };
    // Most that keep the overhead under the limit (it grows with k).
    let max_k = n.min(layout.shape[0]);
    let ok = |k: usize| {
        let c = cand(k);
        c.fits && c.overhead_fraction() <= OVERHEAD_LIMIT
    };
    let mut k = k_min;
    if k < max_k && ok(k + 1) {
        let (mut lo, mut hi) = (k + 1, max_k + 1);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if ok(mid) {
                lo = mid
            } else {
                hi = mid
            }
        }
        k = lo;
    }
    let next_fraction = (k < max_k).then(|| cand(k + 1).overhead_fraction());
    Some(GpuChoice {
        cand: cand(k),
        k_min: Some(k_min),
        n,
        next_fraction,
        given: None,
    })
}

/// The CPU backend's (slabs, threads) for `options` on `hw`.
pub(super) fn cpu_split_for(
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
) -> (usize, usize) {
    let threads = options.threads.unwrap_or(hw.cores);
    (cpu_slabs(layout.shape[0], threads, options.slabs), threads)
}

fn assumptions(layout: &Layout, hw: &Hardware) -> Vec<String> {
    let bpcs = bytes_per_cell_step(layout.precision);
    let p = layout.precision.bytes();
    let host_bandwidth = if hw.host.bandwidth_assumed {
        format!(
            "host bandwidth: {}/s assumed ({}/s per core, {} cores, at most {}/s); there is no measurement",
            bytes_h(hw.host.bandwidth_bytes_per_s as u64),
            bytes_h(super::hardware::HOST_BANDWIDTH_PER_CORE as u64),
            hw.cores,
            bytes_h(super::hardware::HOST_BANDWIDTH_MAX as u64)
        )
    } else {
        format!(
            "host bandwidth: {}/s, {}",
            bytes_h(hw.host.bandwidth_bytes_per_s as u64),
            hw.bandwidth_note.as_deref().unwrap_or("measured")
        )
    };
    let fused = fused_update_bytes_per_cell_step(layout.precision);
    let mut out = vec![
        format!(
            "time: on the GPUs the two-pass update, {bpcs} B ({p}-byte values: read E and H, write H; read E and H, write E; plus 3 material index bytes), at {} of each GPU's peak bandwidth; on the CPU the fused H+E sweep, {fused} B (each value read and written once; the two-pass {bpcs} B with fewer slabs than threads), at {} of the host's; plus every CPML psi value read and written, and what the dispersive, TF/SF and surface DFT passes move where they act. Not counted: the CPU's temporal blocking (up to 8 steps per sweep), which runs grids beyond the cache up to 1.6x faster",
            percent(GPU_ACHIEVED_FRACTION),
            percent(CPU_ACHIEVED_FRACTION)
        ),
        host_bandwidth,
        format!(
            "GPUs: {} per GPU held back for the CUDA context; {}; the kernel launches of each pass per slab (the updates, each CPML run, each current sheet, TF/SF group, dispersive group and cell pass, the PEC faces, the probe gather; a pass runs twice on a slab with halo neighbours, its boundary planes first) and, when split, {} halo plane copies, at {} each, the copies over NVLink or PCIe and not overlapped with the update; GPUs are added while that stays under {} of a step",
            crate::plan::report::bytes_bin(CUDA_CONTEXT_RESERVE),
            if hw.peer_access {
                "peer access between GPUs (without it each halo copy between two GPUs is staged through a pinned host plane)"
            } else {
                "no peer access between GPUs: each halo copy between two GPUs is staged through a pinned host plane, counted as staged halo planes"
            },
            HALO_COPIES_PER_STEP,
            duration_h(LAUNCH_OVERHEAD_S),
            percent(OVERHEAD_LIMIT)
        ),
        "host side: the probe series (kept as f64 by the HDF5 writer) and, on the CPU, the snapshot staging and flux DFT accumulators (monitors) live in host memory; on CUDA the monitor buffers are on the GPU of the slab they read, with pinned host mirrors of the probe ring and snapshot staging".to_string(),
    ];
    if layout.surface_ports.is_some() {
        out.push("surface ports: the scene's curved metal surfaces have surface ports, stepped by each GPU over its planes' ports (4 launches a step and one per 32 port models) and, over several GPUs, traded with the GPUs beside twice a step (a pack launch and a copy per neighbour each time, counted as launches); each GPU holds the values it receives and its values sent (with their addresses), and without peer access a pinned copy of what it sends (as staged halo planes)".to_string());
    }
    if hw.gpus.iter().any(|d| d.bandwidth_assumed) {
        out.push(format!(
            "GPUs given by size only: {}/s peak bandwidth assumed (give a model, e.g. 4xH100, for its figure)",
            bytes_h(super::hardware::GENERIC_GPU_BANDWIDTH as u64)
        ));
    }
    out
}

/// The plan without its suggestions, and the CPU candidate's host figures (which the
/// suggestions of a plan that does not fit start from, in `suggest`).
pub(super) fn plan(model: &Model, hw: &Hardware, options: &PlanOptions) -> (Plan, HostFit) {
    let layout = Layout::of(model);
    let host_index = hw.gpus.len();
    let cpu = cpu_candidate(
        &layout,
        &hw.host,
        host_index,
        cpu_split_for(&layout, hw, options),
    );
    // A cell pass without a device form runs on the CPU only, and with it the whole model.
    let cpu_only = layout.cpu_only_cell_passes();
    let gpu = if options.backend == BackendChoice::Cpu || cpu_only {
        None
    } else {
        choose_gpus(&layout, &hw.gpus, &hw.host, &GpuAsk::of(options, hw))
    };
    let why_no_gpu = || {
        if cpu_only {
            return NoGpu::CellPasses;
        }
        // With no GPU at all, why there is none (no driver, ...) says more than which
        // `--gpus` index is missing.
        options
            .gpus
            .as_deref()
            .filter(|_| !hw.gpus.is_empty())
            .and_then(|only| bad_ordinals(only, &hw.gpus))
            .unwrap_or_else(|| {
                let left_out = (0..hw.gpus.len())
                    .filter(|i| options.exclude_gpus.contains(i))
                    .count();
                let asked = options.gpus.as_ref().map_or(hw.gpus.len(), |g| g.len());
                if !hw.gpus.is_empty() && left_out >= asked.min(hw.gpus.len()) {
                    NoGpu::AllFailed { count: left_out }
                } else {
                    NoGpu::NoneFound {
                        note: hw.gpu_note.clone(),
                    }
                }
            })
    };
    let host = |c: &Candidate| host_fit(c, hw.host.memory_bytes);
    let cpu_fit = host(&cpu);
    let gpu_fit = |g: &GpuChoice| GpuFit {
        device_bytes: g.cand.device_bytes,
        usable_bytes: g.cand.usable_bytes,
        considered: g.n,
        used: g.cand.gpus(),
        fewest: g.k_min,
        overhead_fraction: g.cand.overhead_fraction(),
        next_fraction: g.next_fraction,
        given: g.given.clone(),
        host: host(&g.cand),
    };
    let (chosen, decision): (Option<Candidate>, Decision) = match options.backend {
        BackendChoice::Cpu => (Some(cpu.clone()), Decision::CpuRequested { cpu: cpu_fit }),
        BackendChoice::Cuda => match &gpu {
            None => (None, Decision::CudaRequestedNoGpu { why: why_no_gpu() }),
            Some(g) if g.cand.fits => (Some(g.cand.clone()), Decision::Cuda { gpu: gpu_fit(g) }),
            Some(g) => (
                Some(g.cand.clone()),
                Decision::CudaRequestedShort { gpu: gpu_fit(g) },
            ),
        },
        BackendChoice::Auto => match &gpu {
            Some(g) if g.cand.fits => (Some(g.cand.clone()), Decision::Cuda { gpu: gpu_fit(g) }),
            Some(g) if cpu.fits => (
                Some(cpu.clone()),
                Decision::CpuInstead {
                    gpu: gpu_fit(g),
                    cpu: cpu_fit,
                },
            ),
            None if cpu.fits => (
                Some(cpu.clone()),
                Decision::CpuNoGpu {
                    why: why_no_gpu(),
                    cpu: cpu_fit,
                },
            ),
            Some(g) if g.cand.host_side_short && cpu.host_side_short => (
                Some(g.cand.clone()),
                Decision::HostTooSmall {
                    gpu: gpu_fit(g),
                    cpu: cpu_fit,
                },
            ),
            Some(g) => (
                Some(g.cand.clone()),
                Decision::NothingFits {
                    gpu: gpu_fit(g),
                    cpu: cpu_fit,
                },
            ),
            None => (
                Some(cpu.clone()),
                Decision::NothingFitsNoGpu {
                    why: why_no_gpu(),
                    cpu: cpu_fit,
                },
            ),
        },
    };
    let backend = decision.backend();
    let reason = super::reason::sentence(&decision);
    let fits = backend != PlanBackend::None;

    let empty = Candidate {
        backend: PlanBackend::None,
        slabs: Vec::new(),
        fits: false,
        bytes: cpu.bytes,
        device_bytes: 0,
        usable_bytes: 0,
        update_s: 0.0,
        bytes_per_cell_step: cpu.bytes_per_cell_step,
        overhead_s: 0.0,
        host_side_short: cpu.host_side_short,
    };
    let c = chosen.unwrap_or(empty);
    let mut devices: Vec<PlanDevice> = hw
        .gpus
        .iter()
        .chain(std::iter::once(&hw.host))
        .map(|d| PlanDevice {
            name: d.name.clone(),
            kind: d.kind,
            memory_bytes: d.memory_bytes,
            bandwidth_bytes_per_s: d.bandwidth_bytes_per_s,
            bandwidth_assumed: d.bandwidth_assumed,
            used: false,
        })
        .collect();
    let all_devices: Vec<&Device> = hw.gpus.iter().chain(std::iter::once(&hw.host)).collect();
    let plane_cells = (layout.shape[1] * layout.shape[2]) as u64;
    let slabs = c
        .slabs
        .iter()
        .map(|&(d, r, a)| {
            if fits {
                devices[d].used = true;
            }
            let dev = all_devices[d];
            let on_device = a.total()
                + if dev.kind == DeviceKind::Gpu {
                    CUDA_CONTEXT_RESERVE
                } else {
                    0
                };
            SlabPlan {
                device: d,
                x_start: r.x0,
                x_end: r.x1,
                cells: r.len() as u64 * plane_cells,
                bytes: a.total(),
                allocation: a,
                share: if dev.memory_bytes == 0 {
                    f64::INFINITY
                } else {
                    on_device as f64 / dev.memory_bytes as f64
                },
            }
        })
        .collect();
    let seconds_per_step = fits.then(|| c.step_s());
    let gpus_used = c.gpus();
    let estimate = Estimate {
        seconds: seconds_per_step.map(|s| s * model.grid.steps as f64),
        seconds_per_step,
        bytes_per_cell_step: c.bytes_per_cell_step,
        achieved_fraction: if c.backend == PlanBackend::Cuda {
            GPU_ACHIEVED_FRACTION
        } else {
            CPU_ACHIEVED_FRACTION
        },
        overhead_fraction: (fits && gpus_used > 0).then(|| c.overhead_fraction()),
        cost: match (options.price_per_gpu_hour, seconds_per_step) {
            (Some(p), Some(s)) if backend == PlanBackend::Cuda => {
                Some(s * model.grid.steps as f64 / 3600.0 * gpus_used as f64 * p)
            }
            _ => None,
        },
    };
    let mut notes = Vec::new();
    if options.price_per_gpu_hour.is_some() && backend != PlanBackend::Cuda {
        notes.push(if backend == PlanBackend::Cpu {
            "--price is per GPU-hour and this plan runs on the CPU: no cost is given".to_string()
        } else {
            "--price: no cost is given, as nothing here runs the scene".to_string()
        });
    }
    let g = &model.grid;
    let plan = Plan {
        scene: model.name.clone(),
        grid: g.shape,
        cell_size: g.cell,
        cells: g.cells(),
        steps: g.steps,
        dt: g.dt,
        precision: model.precision.name(),
        bytes: c.bytes,
        backend,
        reason,
        decision,
        fits,
        devices,
        slabs,
        estimate,
        output: super::bytes::output_bytes(model),
        notes,
        suggestions: Vec::new(),
        mesh: Default::default(),
        assumptions: assumptions(&layout, hw),
        gpu_note: hw.gpu_note.clone(),
        host_note: hw.host_note.clone(),
        // Filled in by `plan::plan` for a model with a [scan].
        scan: None,
        painting_seconds: None,
        conformal: model.conformal_summary(),
        modes: super::ModesPlan::of(model),
        field_sets: layout.field_sets,
    };
    (plan, cpu_fit)
}
