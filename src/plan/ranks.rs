//! The plan of one domain over several processes (MPI ranks, `yee plan --ranks R`, and what
//! `mpirun -n R yee run` allocates): the slab split, each rank's contiguous range of slabs and
//! its bytes, the halo traffic between ranks per step and its time over the network, and, for
//! a grid that does not fit one node, how many nodes would hold it.
//!
//! The slabs tile [0, nx) as for one process ([`crate::decomp::split_even`] of the slab count)
//! and rank r takes the contiguous range [`crate::decomp::ranks::rank_slabs`]`(S, R)[r]`: every rank
//! allocates exactly the [`Layout::slab_bytes`] of its slabs (the CPU backend checks its own
//! count against the same formula), so the plan of R ranks is what each rank allocates.

use super::bytes::{Allocation, Layout};
use super::{
    cpu_slabs, BackendChoice, Hardware, PlanOptions, CPU_ACHIEVED_FRACTION, GPU_ACHIEVED_FRACTION,
};
use crate::decomp::{split_even, HaloPlan, SlabRange};
use crate::model::Model;
use serde::Serialize;

/// The interconnect assumed when `--network` is not given: 100 Gbit/s (InfiniBand EDR, or
/// 100 GbE), in bytes per second.
pub const DEFAULT_NETWORK_BYTES_PER_S: f64 = 100e9 / 8.0;

/// Latency of one message over the interconnect, assumed (InfiniBand: a few microseconds).
pub const MESSAGE_LATENCY_S: f64 = 5e-6;

/// One rank's share of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankPart {
    /// The rank.
    pub rank: usize,
    /// Its slabs: indices [first, end) into [`RankPlan::slabs`].
    pub slabs: [usize; 2],
    /// Its x planes [start, end).
    pub x: [usize; 2],
    /// The GPU its slabs run on (an index into the hardware's GPUs, as one rank per node
    /// takes the first: `--gpus` or the first found), None on the CPU.
    pub gpu: Option<usize>,
    /// What its backend allocates for its slabs, by category (on a GPU: the CUDA engine's
    /// estimate of its part, the pinned host mirrors of its monitors within `monitors`).
    pub allocation: Allocation,
    /// Host monitor buffers it holds besides (rank 0: the flux DFTs and the snapshot gather
    /// buffer, which the others fill part by part; the others: their part of the largest
    /// snapshot region).
    pub monitors: u64,
    /// `allocation` plus `monitors`.
    pub bytes: u64,
    /// Bytes it sends plus bytes it receives through halo planes (and the surface ports'
    /// trades) in one step.
    pub halo_bytes_per_step: u64,
    /// Estimated update time of one step on its slabs (s), from the bandwidth model.
    pub update_s_per_step: f64,
    /// True when `bytes` fits the node's memory (on a GPU: the engine's device bytes and the
    /// CUDA context fit the GPU, and its host bytes the node).
    pub fits: bool,
}

/// The plan of a run over several ranks ([`plan_ranks`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankPlan {
    /// Ranks.
    pub ranks: usize,
    /// Worker threads per rank the slab count was chosen for.
    pub threads_per_rank: usize,
    /// Every slab of the run, x ranges [start, end), in x order.
    pub slabs: Vec<[usize; 2]>,
    /// Each rank's share.
    pub parts: Vec<RankPart>,
    /// Halo bytes crossing between ranks in one step (each plane counted once), with the
    /// surface ports' trades.
    pub halo_bytes_per_step: u64,
    /// Time of the busiest rank's halo traffic in one step over the network (s).
    pub halo_s_per_step: f64,
    /// Time of the slowest rank's update in one step (s).
    pub update_s_per_step: f64,
    /// The interconnect's bandwidth (bytes/s).
    pub network_bytes_per_s: f64,
    /// True when the bandwidth is the default, not given.
    pub network_assumed: bool,
    /// Memory of one node (bytes): the host's available memory or `--host-memory`.
    pub node_memory_bytes: u64,
    /// On GPUs (`--backend cuda`): the memory of the GPU each rank runs on (bytes), if known.
    pub gpu_memory_bytes: Option<u64>,
    /// True when every rank fits its node.
    pub fits: bool,
    /// Fewest ranks (one per node) whose largest share fits a node, when that is not `ranks`
    /// already; None if even one plane per rank does not fit.
    pub nodes_needed: Option<usize>,
    /// What the numbers assume, and options that were adjusted.
    pub notes: Vec<String>,
    /// For a model with a `[scan]`: the traces shared out to the ranks (the grid is then not
    /// split over them: `slabs` and `parts` are empty and no halo crosses).
    pub scan: Option<RankScan>,
}

/// A scan over ranks: each rank runs whole traces, one per worker thread, as one process
/// does ([`crate::plan::scan`]); rank r takes traces r, r + R, ...
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankScan {
    /// Traces in all.
    pub traces: usize,
    /// Traces of each rank.
    pub traces_per_rank: Vec<usize>,
    /// Traces each rank runs at once (its worker threads, as its host's plan allows).
    pub at_once_per_rank: usize,
    /// Host memory of one rank's traces at once (bytes).
    pub bytes_per_rank: u64,
    /// Wall time of one trace on one worker (s), if the plan could tell.
    pub seconds_per_trace: Option<f64>,
    /// Wall time of the whole scan (s): the busiest rank's rounds of traces.
    pub seconds: Option<f64>,
    /// Why the scan cannot run over these ranks, if so (`mpirun` would refuse it).
    pub refusal: Option<String>,
}

/// The slabs of a run of `model` over `ranks` ranks with `threads` worker threads each and
/// `slabs` (the `--slabs` of the whole run) if given: each rank's planes split as one process
/// with that many threads would split them, unless `slabs` fixes the total; at least one slab
/// per rank. Returns every slab and each rank's slab indices.
pub fn rank_split(
    nx: usize,
    ranks: usize,
    threads: usize,
    slabs: Option<usize>,
) -> (Vec<SlabRange>, Vec<std::ops::Range<usize>>) {
    let ranks = ranks.clamp(1, nx.max(1));
    let total = slabs.unwrap_or_else(|| {
        split_even(nx, ranks)
            .iter()
            .map(|r| cpu_slabs(r.len(), threads, None))
            .sum()
    });
    let total = total.clamp(ranks, nx.max(1));
    let all = split_even(nx, total);
    (all, crate::decomp::ranks::rank_slabs(total, ranks))
}

/// Parse a network bandwidth: a number and a unit, `200Gbit/s`, `100Gb/s`, `25GB/s`,
/// `400 Gbps`; bytes per second.
pub fn parse_network(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}`: expected a bandwidth such as 200Gbit/s or 25GB/s"))?;
    let unit = unit.trim();
    let (scale, bits) = match unit {
        "Gbit/s" | "Gb/s" | "Gbps" => (1e9, true),
        "Mbit/s" | "Mb/s" | "Mbps" => (1e6, true),
        "Tbit/s" | "Tb/s" | "Tbps" => (1e12, true),
        "GB/s" => (1e9, false),
        "MB/s" => (1e6, false),
        "TB/s" => (1e12, false),
        _ => {
            return Err(format!(
                "`{text}`: unknown unit `{unit}`; use Gbit/s, Mbit/s, Tbit/s, GB/s, MB/s or TB/s"
            ))
        }
    };
    if value.is_finite() && value > 0.0 {
        Ok(value * scale / if bits { 8.0 } else { 1.0 })
    } else {
        Err(format!("`{text}`: the bandwidth must be above 0"))
    }
}

/// The surface ports' trades of the rank holding `planes` in one step, at `value` bytes a
/// value: (bytes it sends and receives, bytes it sends, messages it sends and receives).
fn port_trades(
    ports: &crate::model::SurfacePorts,
    planes: std::ops::Range<usize>,
    value: u64,
) -> (u64, u64, usize) {
    let c = ports.crossings(planes.clone());
    let received = (c.edges_in.len() + c.ports_in.len()) as u64;
    let sent = c.sent() as u64;
    // A message per non-empty list and side, each way.
    let sides = |list: &[u32], x: &dyn Fn(u32) -> usize| {
        usize::from(list.iter().any(|&i| x(i) < planes.start))
            + usize::from(list.iter().any(|&i| x(i) >= planes.end))
    };
    let messages = sides(&c.edges_in, &|q| ports.edge_x(q))
        + sides(&c.ports_in, &|p| ports.port_x(p))
        + c.edges_out
            .iter()
            .chain(&c.ports_out)
            .filter(|l| !l.is_empty())
            .count();
    ((sent + received) * value, sent * value, messages)
}

/// Plan `model` over `ranks` ranks, one per node of `hardware`'s host (its memory and
/// bandwidth), with `options.threads` threads per rank (default: the host's cores) and
/// `options.slabs` slabs in all if given, over an interconnect of `network` bytes/s (None: the
/// default, [`DEFAULT_NETWORK_BYTES_PER_S`]).
pub fn plan_ranks(
    model: &Model,
    hardware: &Hardware,
    options: &PlanOptions,
    ranks: usize,
    network: Option<f64>,
) -> RankPlan {
    let layout = Layout::of(model);
    let nx = layout.shape[0];
    let threads = options.threads.unwrap_or(hardware.cores).max(1);
    if let Some(scan) = &model.scan {
        return plan_scan_ranks(
            model,
            hardware,
            options,
            ranks,
            threads,
            scan.traces,
            network,
        );
    }
    let mut notes = Vec::new();
    if ranks > nx {
        notes.push(format!(
            "{ranks} ranks for {nx} x planes: at most {nx} ranks (one plane each) are planned"
        ));
    }
    // With `--backend cuda` every rank runs its slabs (`--slabs-per-gpu`, one by default) on
    // one GPU of its node, as `mpirun ... yee run --backend cuda` does; else on its CPU.
    let cuda = options.backend == BackendChoice::Cuda;
    let gpu = cuda
        .then(|| match &options.gpus {
            Some(list) => list.first().copied(),
            None => (!hardware.gpus.is_empty()).then_some(0),
        })
        .flatten()
        .filter(|&g| g < hardware.gpus.len());
    let (slabs, groups) = if cuda {
        let per_rank = options.slabs_per_gpu.unwrap_or(1).max(1);
        rank_split(nx, ranks, 1, Some(per_rank * ranks))
    } else {
        rank_split(nx, ranks, threads, options.slabs)
    };
    let ranks = groups.len();
    if cuda && options.slabs.is_some() {
        notes.push(
            "--slabs splits the CPU's share and is left out: over ranks on GPUs use --slabs-per-gpu (mpirun refuses --slabs with --backend cuda)"
                .into(),
        );
    }
    if cuda && !model.surface_ports().is_empty() {
        notes.push(
            "the scene's curved metal surfaces have surface ports: each rank's GPU packs the values its neighbours' ports read, and they travel through the host twice a step (each trade waits for the rank's GPU)"
                .into(),
        );
    }
    if cuda && gpu.is_none() {
        notes.push(
            "no GPU known to size each rank's GPU: give --gpus (e.g. --gpus 1x80GiB, the GPUs of one node)"
                .into(),
        );
    }
    if let Some(s) = options.slabs.filter(|_| !cuda) {
        if s < ranks {
            notes.push(format!(
                "--slabs {s} is fewer than the {ranks} ranks: one slab per rank instead"
            ));
        }
    }
    let halos = HaloPlan::new(&slabs, &model.boundaries);
    let owner = |s: usize| groups.iter().position(|g| g.contains(&s)).unwrap_or(0);
    // A halo plane of each field set (a Bloch cell's two travel in one message).
    let plane = (layout.shape[1] * layout.shape[2]) as u64
        * layout.precision.bytes() as u64
        * layout.field_sets;
    let mut traffic = vec![0u64; ranks];
    let mut messages = vec![0usize; ranks];
    let mut crossing = 0u64;
    for c in halos.after_h.iter().chain(&halos.after_e) {
        let (a, b) = (owner(c.src_slab), owner(c.dst_slab));
        if a != b {
            crossing += plane;
            traffic[a] += plane;
            traffic[b] += plane;
            messages[a] += 1;
            messages[b] += 1;
        }
    }
    // The surface ports' two trades per step with the ranks beside.
    let ports = model.surface_ports();
    if !ports.is_empty() {
        let value = layout.precision.bytes() as u64 * layout.field_sets;
        for (r, g) in groups.iter().enumerate() {
            let planes = slabs[g.start].x0..slabs[g.end - 1].x1;
            let (bytes, sent, count) = port_trades(&ports, planes, value);
            crossing += sent;
            traffic[r] += bytes;
            messages[r] += count;
        }
    }
    let net = network.unwrap_or(DEFAULT_NETWORK_BYTES_PER_S);
    let node_memory = hardware.host.memory_bytes;
    // Rank 0's monitor buffers (a Bloch cell's flux DFTs once per field set).
    let staging = layout.staging_bytes();
    let largest_region = largest_snapshot_values(model) * layout.precision.bytes() as u64;
    let parts: Vec<RankPart> = groups
        .iter()
        .enumerate()
        .map(|(r, g)| {
            let x = [slabs[g.start].x0, slabs[g.end - 1].x1];
            let monitors = if r == 0 {
                staging
            } else {
                largest_region.div_ceil(nx as u64) * (x[1] - x[0]) as u64
            };
            let range = SlabRange { x0: x[0], x1: x[1] };
            let (allocation, bytes, fits, update_s_per_step) = if cuda {
                let rank = crate::decomp::ranks::RankLayout {
                    slabs: slabs.clone(),
                    ranks: groups.clone(),
                    rank: r,
                };
                let (a, pinned) = rank_gpu_allocation(model, &rank);
                let on_device = a.total() - pinned;
                let (fits_gpu, update) = match gpu.map(|i| &hardware.gpus[i]) {
                    Some(d) => (
                        on_device <= d.usable_bytes(),
                        layout.traffic_per_step(range, false)
                            / (d.bandwidth_bytes_per_s * GPU_ACHIEVED_FRACTION),
                    ),
                    None => (false, f64::NAN),
                };
                let host = pinned + monitors;
                (
                    a,
                    a.total() + monitors,
                    fits_gpu && host <= node_memory,
                    update,
                )
            } else {
                let mut a = Allocation::default();
                for s in &slabs[g.clone()] {
                    a.add(&layout.slab_bytes(*s));
                }
                // The surface ports' trades with the ranks beside it, per field set.
                let ports = model.surface_ports();
                if !ports.is_empty() {
                    a.dispersive += ports.crossings(x[0]..x[1]).bytes(layout.precision.bytes())
                        * layout.field_sets;
                }
                let bytes = a.total() + monitors;
                // The rank's CPU engine sweeps fused with a slab per thread (as one process).
                let fused = super::cpu_update_is_fused(g.len(), threads);
                let update = layout.traffic_per_step(range, fused)
                    / (hardware.host.bandwidth_bytes_per_s * CPU_ACHIEVED_FRACTION);
                (a, bytes, bytes <= node_memory, update)
            };
            RankPart {
                rank: r,
                slabs: [g.start, g.end],
                x,
                gpu,
                allocation,
                monitors,
                bytes,
                halo_bytes_per_step: traffic[r],
                update_s_per_step,
                fits,
            }
        })
        .collect();
    // On GPUs every plane a rank sends or receives also crosses PCIe (read to host memory
    // before the send, written to the GPU after the receive).
    let staging_bytes_per_s = if cuda {
        super::PCIE_BANDWIDTH
    } else {
        f64::INFINITY
    };
    let halo_s = (0..ranks)
        .map(|r| {
            traffic[r] as f64 / net
                + traffic[r] as f64 / staging_bytes_per_s
                + messages[r] as f64 * MESSAGE_LATENCY_S
        })
        .fold(0.0, f64::max);
    let update_s = parts
        .iter()
        .map(|p| p.update_s_per_step)
        .fold(0.0, f64::max);
    let fits = parts.iter().all(|p| p.fits);
    let nodes_needed = match (fits, gpu) {
        (true, _) => None,
        (false, Some(i)) if cuda => {
            // One rank per node on one GPU: the fewest whose largest part fits that GPU.
            let usable = hardware.gpus[i].usable_bytes();
            fewest_ranks(nx, |planes| {
                layout
                    .gpu_slab_bytes_with_monitors(SlabRange { x0: 0, x1: planes })
                    .total()
                    <= usable
            })
        }
        (false, _) if cuda => None,
        (false, _) => nodes_for(&layout, node_memory, staging),
    };
    if network.is_none() {
        notes.push("network bandwidth assumed 100 Gbit/s (give --network)".into());
    }
    notes.push(format!(
        "halo planes cross ranks as non-blocking messages; the H planes travel while the interior planes of the fused sweep update (the E planes, and both in --two-pass, only while the copies within a rank run); latency assumed {} us per message",
        MESSAGE_LATENCY_S * 1e6
    ));
    if cuda {
        notes.push(format!(
            "on GPUs the planes are staged through host memory, counted at {:.0} GB/s (PCIe) each way",
            super::PCIE_BANDWIDTH / 1e9
        ));
    }
    if !cuda && !hardware.gpus.is_empty() {
        notes.push(
            "each rank runs its slabs on the CPU: with --backend cuda each rank runs them on one GPU of its node"
                .into(),
        );
    }
    RankPlan {
        ranks,
        threads_per_rank: threads,
        slabs: slabs.iter().map(|s| [s.x0, s.x1]).collect(),
        parts,
        halo_bytes_per_step: crossing,
        halo_s_per_step: halo_s,
        update_s_per_step: update_s,
        network_bytes_per_s: net,
        network_assumed: network.is_none(),
        node_memory_bytes: node_memory,
        gpu_memory_bytes: gpu.map(|i| hardware.gpus[i].memory_bytes),
        fits,
        nodes_needed,
        notes,
        scan: None,
    }
}

/// [`plan_ranks`] for a model with a `[scan]` of `traces` traces: the traces are shared out,
/// each rank running them one per worker on `threads` threads as its host's plan schedules
/// them.
fn plan_scan_ranks(
    model: &Model,
    hardware: &Hardware,
    options: &PlanOptions,
    ranks: usize,
    threads: usize,
    traces: usize,
    network: Option<f64>,
) -> RankPlan {
    let ranks = ranks.max(1);
    let mut per_rank = PlanOptions {
        backend: super::BackendChoice::Cpu,
        threads: Some(threads),
        slabs: None,
        gpus: None,
        slabs_per_gpu: None,
        ..options.clone()
    };
    per_rank.exclude_gpus.clear();
    let plan = super::plan(model, hardware, &per_rank);
    let schedule = plan.scan.clone();
    let one_per_worker = schedule.as_ref().is_some_and(|s| {
        s.schedule == super::scan::ScanSchedule::TracePerWorker
            || (threads == 1 && plan.backend == super::PlanBackend::Cpu)
    });
    let at_once = schedule.as_ref().map_or(1, |s| s.traces_in_parallel.max(1));
    let traces_per_rank: Vec<usize> = (0..ranks)
        .map(|r| (r..traces).step_by(ranks).count())
        .collect();
    let per_trace = schedule.as_ref().and_then(|s| s.seconds_per_trace);
    let busiest = traces_per_rank.iter().copied().max().unwrap_or(0);
    let seconds = per_trace.map(|t| busiest.div_ceil(at_once) as f64 * t);
    let bytes_per_rank = plan.bytes.total * at_once as u64;
    let node_memory = hardware.host.memory_bytes;
    let mut refusal = None;
    if !one_per_worker {
        refusal = Some(format!(
            "a scan over ranks runs one trace per worker thread on every rank, and this host's plan does not: {}",
            schedule.as_ref().map_or("no schedule", |s| s.reason.as_str())
        ));
    }
    if options.slabs.is_some() {
        refusal = Some("--slabs splits one trace's grid, which a scan over ranks does not".into());
    }
    let mut notes = vec![
        "a scan's traces are shared out to the ranks (rank r runs traces r, r + R, ...); each trace runs whole on one worker, so no halo crosses a network".to_string(),
    ];
    if network.is_some() {
        notes.push(
            "--network does not matter to a scan: only finished traces travel, to rank 0".into(),
        );
    }
    let fits = bytes_per_rank <= node_memory;
    RankPlan {
        ranks,
        threads_per_rank: threads,
        slabs: Vec::new(),
        parts: Vec::new(),
        halo_bytes_per_step: 0,
        halo_s_per_step: 0.0,
        update_s_per_step: 0.0,
        network_bytes_per_s: network.unwrap_or(DEFAULT_NETWORK_BYTES_PER_S),
        network_assumed: network.is_none(),
        node_memory_bytes: node_memory,
        gpu_memory_bytes: None,
        fits,
        nodes_needed: None,
        notes,
        scan: Some(RankScan {
            traces,
            traces_per_rank,
            at_once_per_rank: at_once,
            bytes_per_rank,
            seconds_per_trace: per_trace,
            seconds,
            refusal,
        }),
    }
}

/// Values of the largest snapshot region of `model`.
fn largest_snapshot_values(model: &Model) -> u64 {
    model
        .snapshots
        .iter()
        .flat_map(|s| s.regions.iter().map(|(_, r)| r.len() as u64))
        .max()
        .unwrap_or(0)
}

/// Fewest ranks, one per node of `memory` bytes, whose largest share (rank 0's, which also
/// holds `staging`) fits; None if one plane per rank does not.
pub(super) fn nodes_for(layout: &Layout, memory: u64, staging: u64) -> Option<usize> {
    fewest_ranks(layout.shape[0], |planes| {
        layout.slab_bytes(SlabRange { x0: 0, x1: planes }).total() + staging <= memory
    })
}

/// Fewest ranks R of a grid of `nx` planes for which `fits(ceil(nx / R))` (the largest
/// share of an even split: rank 0's) holds; None if one plane per rank does not fit.
fn fewest_ranks(nx: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
    let fits_ranks = |r: usize| fits(nx.div_ceil(r));
    if !fits_ranks(nx) {
        return None;
    }
    // The share shrinks as ranks grow: the smallest count that fits, by bisection.
    let (mut lo, mut hi) = (1, nx);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits_ranks(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// What rank `layout.rank`'s CUDA engine allocates for its slabs, and the pinned host bytes
/// within it: the GPU bytes of each slab of its local model
/// ([`crate::decomp::ranks::RankLayout::local_model`]: the probe samples and snapshot parts it
/// reads itself), with the pinned host mirrors of its monitors in `monitors` and the pinned
/// planes of its exchanges with the other ranks
/// ([`crate::decomp::ProcessHalos::staging_planes`]) in `halos`, as the engine's own estimate
/// counts them (the plan checks the GPU's fit without the pinned bytes).
pub fn rank_gpu_allocation(
    model: &Model,
    layout: &crate::decomp::ranks::RankLayout,
) -> (Allocation, u64) {
    let local = Layout::of(&layout.local_model(model));
    let mut a = Allocation::default();
    for s in &layout.local_ranges() {
        a.add(&local.gpu_slab_bytes_with_monitors(*s));
    }
    let halos = crate::decomp::ranks::Exchange::process_halos(&layout.exchanges(&model.boundaries));
    let [_, ny, nz] = model.grid.shape;
    // Each engine of a Bloch cell's pair stages its own planes.
    let staging = halos.staging_planes() as u64
        * super::bytes::staged_halo_bytes(ny * nz, model.precision.bytes())
        * local.field_sets;
    let mirrors = local.gpu_pinned_bytes();
    a.monitors += mirrors;
    a.halos += staging;
    // The surface ports' trades with the ranks beside, on the rank's GPU (each engine of a
    // pair its own).
    let ports = model.surface_ports();
    if !ports.is_empty() {
        let planes = layout.planes(layout.rank);
        a.dispersive +=
            ports.crossings(planes).gpu_bytes(model.precision.bytes()) * local.field_sets;
    }
    (a, mirrors + staging)
}

impl RankPlan {
    /// The text report `yee plan --ranks R` adds after the plan of one process.
    pub fn render(&self) -> String {
        let b = super::bytes_h;
        if let Some(scan) = &self.scan {
            return self.render_scan(scan);
        }
        let on_gpus = self.parts.first().is_some_and(|p| p.gpu.is_some());
        let mut s = if on_gpus {
            format!(
                "ranks: {} (one GPU each), {} slabs in all\n",
                self.ranks,
                self.slabs.len()
            )
        } else {
            format!(
                "ranks: {} ({} threads each), {} slabs in all\n",
                self.ranks,
                self.threads_per_rank,
                self.slabs.len()
            )
        };
        for p in &self.parts {
            let device = match p.gpu {
                Some(g) => format!(" on GPU {g}"),
                None => String::new(),
            };
            s.push_str(&format!(
                "  rank {}: slabs {}..{} ({}){device}, x [{}, {}), {} ({} slabs + {} monitors){}, halo {} per step, update {}\n",
                p.rank,
                p.slabs[0],
                p.slabs[1],
                p.slabs[1] - p.slabs[0],
                p.x[0],
                p.x[1],
                b(p.bytes),
                b(p.allocation.total()),
                b(p.monitors),
                match (p.fits, p.gpu) {
                    (true, _) => "",
                    (false, Some(_)) => ", does not fit its GPU or node",
                    (false, None) => ", does not fit a node",
                },
                b(p.halo_bytes_per_step),
                if p.update_s_per_step.is_finite() {
                    format!("~{:.3} ms per step", p.update_s_per_step * 1e3)
                } else {
                    "time unknown (no GPU given)".into()
                }
            ));
        }
        let gbit = self.network_bytes_per_s * 8.0 / 1e9;
        s.push_str(&format!(
            "halo traffic: {} per step between ranks, {:.3} ms per step over {gbit:.0} Gbit/s{} ({:.0}% of the update time)\n",
            b(self.halo_bytes_per_step),
            self.halo_s_per_step * 1e3,
            if self.network_assumed { " (assumed)" } else { "" },
            100.0 * self.halo_s_per_step / self.update_s_per_step.max(1e-12)
        ));
        if let Some(gpu) = self.gpu_memory_bytes {
            match (self.fits, self.nodes_needed) {
                (true, _) => s.push_str(&format!("every rank fits its GPU of {}\n", b(gpu))),
                (false, Some(n)) => s.push_str(&format!(
                    "does not fit: with one GPU of {} per rank the grid needs at least {n} ranks (mpirun -n {n} ... --backend cuda)\n",
                    b(gpu)
                )),
                (false, None) => s.push_str(&format!(
                    "does not fit: even one x plane per rank exceeds a GPU of {} (or a rank's host part its node of {})\n",
                    b(gpu),
                    b(self.node_memory_bytes)
                )),
            }
            for n in &self.notes {
                s.push_str(&format!("  note: {n}\n"));
            }
            return s;
        }
        match (self.fits, self.nodes_needed) {
            (true, _) => s.push_str(&format!(
                "every rank fits a node of {}\n",
                b(self.node_memory_bytes)
            )),
            (false, Some(n)) => s.push_str(&format!(
                "does not fit: with nodes of {} the grid needs at least {n} nodes (mpirun -n {n}, one rank per node)\n",
                b(self.node_memory_bytes)
            )),
            (false, None) => s.push_str(&format!(
                "does not fit: even one x plane per rank exceeds a node of {}; use a coarser cell size\n",
                b(self.node_memory_bytes)
            )),
        }
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        s
    }
}

impl RankPlan {
    /// The report of a scan over ranks ([`RankScan`]).
    fn render_scan(&self, scan: &RankScan) -> String {
        let b = super::bytes_h;
        let mut s = format!(
            "ranks: {} ({} threads each), a scan of {} traces shared out, {} at a time on each rank\n",
            self.ranks, self.threads_per_rank, scan.traces, scan.at_once_per_rank
        );
        for (r, n) in scan.traces_per_rank.iter().enumerate() {
            s.push_str(&format!(
                "  rank {r}: {n} trace{}, {} for {} at once{}\n",
                if *n == 1 { "" } else { "s" },
                b(scan.bytes_per_rank),
                scan.at_once_per_rank,
                if self.fits {
                    ""
                } else {
                    ", does not fit a node"
                }
            ));
        }
        if let (Some(t), Some(all)) = (scan.seconds_per_trace, scan.seconds) {
            s.push_str(&format!(
                "estimate: {:.1} s per trace, {:.1} s for the scan (the busiest rank's traces)\n",
                t, all
            ));
        }
        if let Some(why) = &scan.refusal {
            s.push_str(&format!(
                "cannot run over ranks: {why}; run it as one process\n"
            ));
        }
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_bandwidths_parse_in_bits_and_bytes() {
        assert_eq!(parse_network("200Gbit/s").unwrap(), 25e9);
        assert_eq!(parse_network("25GB/s").unwrap(), 25e9);
        assert_eq!(parse_network("400 Gbps").unwrap(), 50e9);
        assert!(parse_network("fast").is_err());
        assert!(parse_network("10 furlongs")
            .unwrap_err()
            .contains("unknown unit"));
    }

    #[test]
    fn the_rank_split_tiles_the_grid_with_contiguous_slab_ranges() {
        // Five slabs over three ranks: 2, 1 and 2 (the even split of the slab list).
        let (slabs, ranks) = rank_split(40, 3, 1, Some(5));
        assert_eq!(slabs.len(), 5);
        assert_eq!(ranks, vec![0..2, 2..3, 3..5]);
        // Without --slabs, each rank splits its planes as one process with its threads would.
        let (slabs, ranks) = rank_split(64, 2, 2, None);
        assert_eq!(slabs.len(), 4);
        assert_eq!(ranks, vec![0..2, 2..4]);
        // Never fewer slabs than ranks.
        let (slabs, _) = rank_split(64, 4, 1, Some(2));
        assert_eq!(slabs.len(), 4);
    }
}
