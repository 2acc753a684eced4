//! Device choice, slab split, the time model and the suggestions when nothing fits.

use super::bytes::{bytes_per_cell_step, Layout};
use super::hardware::{Device, Hardware, CUDA_CONTEXT_RESERVE, GPU_MODELS};
use super::report::{bytes_h, duration_h, percent};
use super::*;
use crate::decomp::{split_even, split_weighted};
use crate::model::Precision;

/// One way of placing the grid on devices.
#[derive(Debug, Clone)]
struct Candidate {
    backend: PlanBackend,
    /// (index into the plan's device list, range, what the slab allocates).
    slabs: Vec<(usize, SlabRange, Allocation)>,
    fits: bool,
    bytes: Bytes,
    /// Bytes on the devices (slabs and context reserves), without host-side buffers.
    device_bytes: u64,
    /// Memory of the devices used, less their context reserves.
    usable_bytes: u64,
    /// Slowest slab's update per step, seconds.
    update_s: f64,
    /// Launches and halo copies per step, seconds.
    overhead_s: f64,
    /// True when the host-side buffers (monitor staging, probe series) alone do not fit in
    /// host memory: then that, not the devices, is the limit.
    host_side_short: bool,
}

impl Candidate {
    fn step_s(&self) -> f64 {
        self.update_s + self.overhead_s
    }
    fn overhead_fraction(&self) -> f64 {
        self.overhead_s / self.update_s.max(1e-30)
    }
    fn gpus(&self) -> usize {
        if self.backend == PlanBackend::Cuda {
            self.slabs.len()
        } else {
            0
        }
    }
}

fn add(bytes: &mut Bytes, a: &Allocation) {
    bytes.fields += a.fields;
    bytes.materials += a.materials;
    bytes.pml += a.pml;
    bytes.monitors += a.monitors;
    bytes.halos += a.halos;
}

fn finish_bytes(bytes: &mut Bytes, layout: &Layout) {
    bytes.monitors = bytes.monitors.saturating_add(layout.staging_bytes());
    bytes.probe_series = layout.probe_series_bytes();
    // Saturating: an absurd run must read as "too big", never wrap round to a small number.
    bytes.total = [
        bytes.fields,
        bytes.materials,
        bytes.pml,
        bytes.monitors,
        bytes.probe_series,
        bytes.halos,
        bytes.overhead,
    ]
    .into_iter()
    .fold(0u64, u64::saturating_add);
}

/// The GPUs `sel` (indices into `gpus`), slabs in proportion to their usable memory.
fn gpu_candidate(layout: &Layout, gpus: &[Device], host: &Device, sel: &[usize]) -> Candidate {
    let [nx, ny, nz] = layout.shape;
    let weights: Vec<f64> = sel
        .iter()
        .map(|&i| gpus[i].usable_bytes().max(1) as f64)
        .collect();
    let ranges = split_weighted(nx, &weights);
    let sel = &sel[..ranges.len()];
    let bpcs = bytes_per_cell_step(layout.precision) as f64;
    let mut bytes = Bytes::default();
    let mut fits = true;
    let mut update_s: f64 = 0.0;
    let mut slabs = Vec::with_capacity(sel.len());
    let mut interconnect = f64::INFINITY;
    let mut usable = 0;
    for (&i, r) in sel.iter().zip(&ranges) {
        let d = &gpus[i];
        let a = layout.gpu_slab_bytes(*r);
        add(&mut bytes, &a);
        fits &= a.total() + CUDA_CONTEXT_RESERVE <= d.memory_bytes;
        let cells = (r.len() * ny * nz) as f64;
        update_s = update_s.max(cells * bpcs / (d.bandwidth_bytes_per_s * GPU_ACHIEVED_FRACTION));
        interconnect = interconnect.min(d.interconnect_bytes_per_s);
        usable += d.usable_bytes();
        slabs.push((i, *r, a));
    }
    let k = slabs.len() as u64;
    bytes.overhead = k * CUDA_CONTEXT_RESERVE;
    let device_bytes = bytes.fields + bytes.materials + bytes.pml + bytes.halos + bytes.overhead;
    finish_bytes(&mut bytes, layout);
    let host_side = bytes.monitors.saturating_add(bytes.probe_series);
    let host_side_short = host.memory_bytes > 0 && host_side > host.memory_bytes;
    fits &= !host_side_short;
    let mut overhead_s = KERNELS_PER_STEP as f64 * LAUNCH_OVERHEAD_S;
    if k > 1 {
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
        overhead_s,
        host_side_short,
    }
}

/// The host with `slabs` slabs (the CPU backend's split).
fn cpu_candidate(layout: &Layout, host: &Device, host_index: usize, slabs: usize) -> Candidate {
    let nx = layout.shape[0];
    let ranges = split_even(nx, slabs.clamp(1, nx.max(1)));
    let mut bytes = Bytes::default();
    let mut out = Vec::with_capacity(ranges.len());
    for r in ranges {
        let a = layout.slab_bytes(r);
        add(&mut bytes, &a);
        out.push((host_index, r, a));
    }
    finish_bytes(&mut bytes, layout);
    let update_s = layout.cells() as f64 * bytes_per_cell_step(layout.precision) as f64
        / (host.bandwidth_bytes_per_s * CPU_ACHIEVED_FRACTION);
    Candidate {
        backend: PlanBackend::Cpu,
        slabs: out,
        fits: bytes.total <= host.memory_bytes,
        device_bytes: bytes.total,
        usable_bytes: host.memory_bytes,
        host_side_short: bytes.monitors.saturating_add(bytes.probe_series) > host.memory_bytes,
        bytes,
        update_s,
        overhead_s: 0.0,
    }
}

/// The GPU count and split the planner picks.
struct GpuChoice {
    /// The chosen candidate (all GPUs, not fitting, when no count fits).
    cand: Candidate,
    /// Fewest GPUs that hold the grid.
    k_min: Option<usize>,
    /// GPUs available.
    n: usize,
    /// The overhead fraction with one more GPU, when one more was possible.
    next_fraction: Option<f64>,
}

/// Fewest GPUs (largest first) that hold the grid, then more while halo exchange and launches
/// stay under [`OVERHEAD_LIMIT`] of a step.
fn choose_gpus(layout: &Layout, gpus: &[Device], host: &Device) -> Option<GpuChoice> {
    if gpus.is_empty() {
        return None;
    }
    let n = gpus.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(gpus[i].usable_bytes()));
    let cand = |k: usize| gpu_candidate(layout, gpus, host, &order[..k]);
    // No fewer GPUs than it takes to hold the grid without halos.
    let whole = layout.slab_bytes(SlabRange {
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
    })
}

fn gpu_reason(c: &GpuChoice) -> String {
    let k = c.cand.slabs.len();
    let k_min = c.k_min.unwrap_or(k);
    let n = c.n;
    let need = bytes_h(c.cand.device_bytes);
    let limit = percent(OVERHEAD_LIMIT);
    let fewest = if k_min == 1 {
        "one GPU holds the grid".to_string()
    } else {
        format!("{k_min} is the fewest that hold the grid's {need}")
    };
    let next = |f: Option<f64>| {
        match f {
        Some(f) => format!("a further GPU would spend {} of each step on halo exchange and kernel launches (the limit is {limit})", percent(f)),
        None => "the grid has no x planes to spare for a further GPU".to_string(),
    }
    };
    if n == 1 {
        format!(
            "CUDA on the GPU: the grid needs {need} and the GPU has {} after the context reserve.",
            bytes_h(c.cand.usable_bytes)
        )
    } else if k == n && k_min == n {
        format!(
            "CUDA on all {n} GPUs: the grid needs {need}, more than {} of them hold.",
            n - 1
        )
    } else if k == n {
        format!(
            "CUDA on all {n} GPUs: {fewest}, and with all {n} halo exchange and kernel launches cost {} of a step (under {limit}).",
            percent(c.cand.overhead_fraction())
        )
    } else if k == k_min {
        format!(
            "CUDA on {k} of the {n} GPUs: {fewest}, and {}.",
            next(c.next_fraction)
        )
    } else {
        format!(
            "CUDA on {k} of the {n} GPUs: {fewest}, more share the work while halo exchange and kernel launches stay under {limit} of a step, and {}.",
            next(c.next_fraction)
        )
    }
}

/// Where a layout fits under `options`, if anywhere: the backend and the GPU count.
fn fits_anywhere(
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
) -> Option<(PlanBackend, usize)> {
    if options.backend != BackendChoice::Cpu {
        if let Some(c) = choose_gpus(layout, &hw.gpus, &hw.host) {
            if c.cand.fits {
                return Some((PlanBackend::Cuda, c.cand.slabs.len()));
            }
        }
    }
    if options.backend != BackendChoice::Cuda {
        let c = cpu_candidate(
            layout,
            &hw.host,
            hw.gpus.len(),
            cpu_slabs_for(layout, hw, options),
        );
        if c.fits {
            return Some((PlanBackend::Cpu, 0));
        }
    }
    None
}

fn cpu_slabs_for(layout: &Layout, hw: &Hardware, options: &PlanOptions) -> usize {
    cpu_slabs(
        layout.shape[0],
        options.threads.unwrap_or(hw.cores),
        options.slabs,
    )
}

fn where_text(at: (PlanBackend, usize), hw: &Hardware) -> String {
    match at {
        (PlanBackend::Cuda, _) if hw.gpus.len() == 1 => format!("fits on the {}", hw.gpus[0].name),
        (PlanBackend::Cuda, k) => format!("fits on {k} of the {} GPUs", hw.gpus.len()),
        _ => "fits in host memory (CPU backend)".to_string(),
    }
}

/// The model's layout with every cell `s` times larger (the CPML keeps its cell count).
fn coarser(layout: &Layout, s: f64) -> Layout {
    Layout {
        shape: layout
            .shape
            .map(|n| ((n as f64 / s).round() as usize).max(1)),
        steps: (layout.steps as f64 / s).ceil() as u64,
        ..*layout
    }
}

fn unit_factor(unit: &str) -> f64 {
    match unit {
        "m" => 1.0,
        "mm" => 1e-3,
        "nm" => 1e-9,
        _ => 1e-6,
    }
}

/// `v` rounded up to two significant digits, and the decimals that print it.
fn round_up_2(v: f64) -> (f64, usize) {
    let e = v.log10().floor() as i32 - 1;
    let m = 10f64.powi(e);
    ((v / m).ceil() * m, (-e).max(0) as usize)
}

fn suggest_cell(
    model: &Model,
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
) -> Option<String> {
    // Coarsen until the grid is nearly all PML, no further.
    let s_max = (0..3)
        .map(|a| layout.shape[a] as f64 / (layout.pml[a].0 + layout.pml[a].1 + 2) as f64)
        .fold(64.0f64, f64::min);
    if s_max <= 1.0 || fits_anywhere(&coarser(layout, s_max), hw, options).is_none() {
        return None;
    }
    let (mut lo, mut hi) = (1.0, s_max);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if fits_anywhere(&coarser(layout, mid), hw, options).is_some() {
            hi = mid
        } else {
            lo = mid
        }
    }
    let unit = unit_factor(&model.length_unit);
    let cell = model.grid.cell;
    let base = cell[0] / unit;
    let (mut v, decimals) = round_up_2(base * hi);
    let step = 10f64.powi(-(decimals as i32));
    for _ in 0..20 {
        let s = v / base;
        let l = coarser(layout, s);
        if let Some(at) = fits_anywhere(&l, hw, options) {
            let isotropic = cell.iter().all(|&c| (c - cell[0]).abs() <= 1e-12 * cell[0]);
            let size = if isotropic {
                format!(
                    "cell_size = {v:.decimals$} instead of {} ({})",
                    trim(base),
                    model.length_unit
                )
            } else {
                let new = cell.map(|c| c / unit * s);
                format!(
                    "cell sizes {s:.2} times larger ([{}, {}, {}] {})",
                    trim(new[0]),
                    trim(new[1]),
                    trim(new[2]),
                    model.length_unit
                )
            };
            let [nx, ny, nz] = l.shape;
            let total = match at.0 {
                PlanBackend::Cuda => {
                    choose_gpus(&l, &hw.gpus, &hw.host).map_or(0, |c| c.cand.bytes.total)
                }
                _ => {
                    cpu_candidate(&l, &hw.host, hw.gpus.len(), cpu_slabs_for(&l, hw, options))
                        .bytes
                        .total
                }
            };
            return Some(format!(
                "A coarser grid: {size} gives {nx} x {ny} x {nz} = {} cells and {} in all, which {}; check that it still resolves the shortest wavelength (about 20 cells per wavelength).",
                group(l.cells()),
                bytes_h(total),
                where_text(at, hw)
            ));
        }
        v += step;
    }
    None
}

fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Digits grouped by thousands: 8,000,000,000.
pub(super) fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Fewest identical `kind` GPUs that hold the layout, and that plan.
fn gpus_needed(layout: &Layout, kind: &Device, host: &Device) -> Option<Candidate> {
    let usable = kind.usable_bytes().max(1);
    let whole = layout.slab_bytes(SlabRange {
        x0: 0,
        x1: layout.shape[0],
    });
    let start = (whole.total() - whole.halos).div_ceil(usable).max(1) as usize;
    let nx = layout.shape[0];
    let try_k = |k: usize| {
        let gpus = vec![kind.clone(); k];
        let sel: Vec<usize> = (0..k).collect();
        gpu_candidate(layout, &gpus, host, &sel)
    };
    for k in start..=(start + 64).min(nx) {
        let c = try_k(k);
        if c.fits {
            return Some(c);
        }
    }
    None
}

fn suggest_gpus(layout: &Layout, hw: &Hardware, options: &PlanOptions) -> Option<String> {
    let kind = match hw.gpus.iter().max_by_key(|d| d.usable_bytes()) {
        Some(d) => d.clone(),
        None => Device::from_model(&GPU_MODELS[1]),
    };
    let Some(c) = gpus_needed(layout, &kind, &hw.host) else {
        return Some(format!(
            "No number of {} GPUs holds this grid: every slab needs at least one x plane.",
            kind.name
        ));
    };
    let k = c.slabs.len();
    let have = if hw.gpus.is_empty() {
        String::new()
    } else {
        format!(
            " (there {} {})",
            if hw.gpus.len() == 1 { "is" } else { "are" },
            hw.gpus.len()
        )
    };
    let seconds = c.step_s() * layout.steps as f64;
    let cost = options.price_per_gpu_hour.map_or(String::new(), |p| {
        format!(
            ", about {:.2} at {p} per GPU-hour",
            seconds / 3600.0 * k as f64 * p
        )
    });
    let name = if kind.name.ends_with("GPU") {
        kind.name.clone()
    } else {
        format!("{} GPU", kind.name)
    };
    Some(format!(
        "{k} x {name}{} would hold it{have}: {} in all, about {} per run{cost}.",
        if k == 1 { "" } else { "s" },
        bytes_h(c.bytes.total),
        duration_h(seconds)
    ))
}

fn suggest_f32(
    model: &Model,
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
) -> Option<String> {
    if model.precision != Precision::F64 {
        return None;
    }
    let l = layout.with_precision(Precision::F32);
    let at = fits_anywhere(&l, hw, options)?;
    let fields = l
        .slab_bytes(SlabRange {
            x0: 0,
            x1: l.shape[0],
        })
        .fields;
    Some(format!(
        "precision = \"f32\" halves the field memory to {}, and the grid then {}.",
        bytes_h(fields),
        where_text(at, hw)
    ))
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
    let mut out = vec![
        format!(
            "time: {bpcs} B per cell-step ({p}-byte values: read E and H, write H; read E and H, write E; plus 3 material index bytes) at {} of each GPU's peak bandwidth, {} of the host's",
            percent(GPU_ACHIEVED_FRACTION),
            percent(CPU_ACHIEVED_FRACTION)
        ),
        host_bandwidth,
        format!(
            "GPUs: {} per GPU held back for the CUDA context; {} kernel launches per step and, when split, {} halo plane copies at {} each, the copies over NVLink or PCIe and not overlapped with the update; GPUs are added while that stays under {} of a step",
            crate::plan::report::bytes_bin(CUDA_CONTEXT_RESERVE),
            KERNELS_PER_STEP,
            HALO_COPIES_PER_STEP,
            duration_h(LAUNCH_OVERHEAD_S),
            percent(OVERHEAD_LIMIT)
        ),
        "host side: the snapshot staging buffer (monitors) and the probe series (kept as f64 by the HDF5 writer) live in host memory".to_string(),
    ];
    if hw.gpus.iter().any(|d| d.bandwidth_assumed) {
        out.push(format!(
            "GPUs given by size only: {}/s peak bandwidth assumed (give a model, e.g. 4xH100, for its figure)",
            bytes_h(super::hardware::GENERIC_GPU_BANDWIDTH as u64)
        ));
    }
    out
}

pub(super) fn plan(model: &Model, hw: &Hardware, options: &PlanOptions) -> Plan {
    let layout = Layout::of(model);
    let host_index = hw.gpus.len();
    let cpu = cpu_candidate(
        &layout,
        &hw.host,
        host_index,
        cpu_slabs_for(&layout, hw, options),
    );
    let gpu = if options.backend == BackendChoice::Cpu {
        None
    } else {
        choose_gpus(&layout, &hw.gpus, &hw.host)
    };
    // When the host-side buffers are the limit, say which ones.
    let host_side = |c: &Candidate| {
        format!(
            "the host-side buffers alone (probe series {}, monitor staging {}) need {} where the host has {} available",
            bytes_h(c.bytes.probe_series),
            bytes_h(c.bytes.monitors),
            bytes_h(c.bytes.probe_series.saturating_add(c.bytes.monitors)),
            bytes_h(hw.host.memory_bytes)
        )
    };
    let host_text = |c: &Candidate| {
        if !c.fits && c.host_side_short {
            format!(
                "{} of host memory: {}",
                bytes_h(c.bytes.total),
                host_side(c)
            )
        } else if c.fits {
            format!(
                "{} of the {} of host memory available",
                bytes_h(c.bytes.total),
                bytes_h(hw.host.memory_bytes)
            )
        } else {
            format!(
                "{} of host memory where {} is available",
                bytes_h(c.bytes.total),
                bytes_h(hw.host.memory_bytes)
            )
        }
    };
    let gpu_short = |c: &GpuChoice| {
        if c.cand.host_side_short {
            return format!(
                "the GPUs would hold the grid's {}, but {}",
                bytes_h(c.cand.device_bytes),
                host_side(&c.cand)
            );
        }
        format!(
            "it needs {} on GPUs but the {} GPU{} hold{} only {}",
            bytes_h(c.cand.device_bytes),
            c.n,
            if c.n == 1 { "" } else { "s" },
            if c.n == 1 { "s" } else { "" },
            bytes_h(c.cand.usable_bytes)
        )
    };
    // The first clause of why there is no GPU; the devices line keeps the whole note.
    let no_gpu = || {
        let why = hw.gpu_note.trim_start_matches("no GPU found: ");
        why.split([':', ';'])
            .next()
            .unwrap_or(why)
            .trim()
            .to_string()
    };
    let (chosen, backend, reason): (Option<Candidate>, PlanBackend, String) = match options.backend
    {
        BackendChoice::Cpu => {
            if cpu.fits {
                let r = format!(
                    "The CPU backend was requested (--backend cpu); it needs {}.",
                    host_text(&cpu)
                );
                (Some(cpu.clone()), PlanBackend::Cpu, r)
            } else {
                let r = format!(
                    "The CPU backend was requested (--backend cpu) but it needs {}.",
                    host_text(&cpu)
                );
                (Some(cpu.clone()), PlanBackend::None, r)
            }
        }
        BackendChoice::Cuda => match &gpu {
            None => (
                None,
                PlanBackend::None,
                format!(
                    "CUDA was requested (--backend cuda) but no GPU is available ({}).",
                    no_gpu()
                ),
            ),
            Some(g) if g.cand.fits => (Some(g.cand.clone()), PlanBackend::Cuda, gpu_reason(g)),
            Some(g) => (
                Some(g.cand.clone()),
                PlanBackend::None,
                format!("CUDA was requested (--backend cuda) but {}.", gpu_short(g)),
            ),
        },
        BackendChoice::Auto => match &gpu {
            Some(g) if g.cand.fits => (Some(g.cand.clone()), PlanBackend::Cuda, gpu_reason(g)),
            Some(g) if cpu.fits => {
                let r = format!(
                    "The CPU backend runs it: {}, and on the host it needs {}.",
                    gpu_short(g),
                    host_text(&cpu)
                );
                (Some(cpu.clone()), PlanBackend::Cpu, r)
            }
            None if cpu.fits => {
                let r = format!(
                    "The CPU backend runs it: no GPU is available ({}), and it needs {}.",
                    no_gpu(),
                    host_text(&cpu)
                );
                (Some(cpu.clone()), PlanBackend::Cpu, r)
            }
            Some(g) if g.cand.host_side_short && cpu.host_side_short => {
                // The host is the limit for both engines: say that once.
                let r = format!(
                    "Nothing here can run it: {} (the GPUs would hold the grid's {}).",
                    host_side(&cpu),
                    bytes_h(g.cand.device_bytes)
                );
                (Some(g.cand.clone()), PlanBackend::None, r)
            }
            Some(g) => {
                let r = format!(
                    "Nothing here holds the grid: {}, and the CPU backend would need {}.",
                    gpu_short(g),
                    host_text(&cpu)
                );
                (Some(g.cand.clone()), PlanBackend::None, r)
            }
            None => {
                let r = format!("Nothing here holds the grid: no GPU is available ({}), and the CPU backend would need {}.", no_gpu(), host_text(&cpu));
                (Some(cpu.clone()), PlanBackend::None, r)
            }
        },
    };
    let fits = backend != PlanBackend::None;

    let mut suggestions = Vec::new();
    if !fits {
        if options.backend != BackendChoice::Cpu {
            suggestions.extend(suggest_gpus(&layout, hw, options));
        }
        if options.backend != BackendChoice::Cuda && !cpu.fits {
            suggestions.push(format!(
                "A host with at least {} of available memory runs it on the CPU backend (--host-memory to plan for one).",
                bytes_h(cpu.bytes.total)
            ));
        }
        suggestions.extend(suggest_f32(model, &layout, hw, options));
        suggestions.extend(suggest_cell(model, &layout, hw, options));
    }

    let empty = Candidate {
        backend: PlanBackend::None,
        slabs: Vec::new(),
        fits: false,
        bytes: cpu.bytes,
        device_bytes: 0,
        usable_bytes: 0,
        update_s: 0.0,
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
        bytes_per_cell_step: bytes_per_cell_step(model.precision),
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
    Plan {
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
        fits,
        devices,
        slabs,
        estimate,
        output: super::bytes::output_bytes(model),
        notes,
        suggestions,
        assumptions: assumptions(&layout, hw),
        gpu_note: hw.gpu_note.clone(),
        host_note: hw.host_note.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_and_rounding() {
        assert_eq!(group(8_000_000_000), "8,000,000,000");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        let (v, d) = round_up_2(7.0312);
        assert!((v - 7.1).abs() < 1e-12 && d == 1);
        let (v, d) = round_up_2(0.007031);
        assert!((v - 0.0071).abs() < 1e-15 && d == 4);
    }
}
