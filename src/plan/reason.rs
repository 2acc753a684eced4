//! The plan's one-sentence reason, built from its [`Decision`].

use super::decision::{Decision, GpuFit, HostFit, NoGpu};
use super::report::{bytes_h, percent};
use super::OVERHEAD_LIMIT;

/// Why there is no GPU, in a clause: the first clause of the hardware's note (the devices line
/// of the report keeps the whole note).
fn no_gpu(why: &NoGpu) -> String {
    match why {
        NoGpu::ListedTwice { gpu } => format!(
            "GPU {gpu} is listed twice in --gpus; use --slabs-per-gpu for several slabs on one GPU"
        ),
        NoGpu::Missing { gpu, count: 0 } => format!("--gpus names GPU {gpu}, but there is no GPU"),
        NoGpu::Missing { gpu, count } => {
            format!("--gpus names GPU {gpu}, but the GPUs are 0..{}", count - 1)
        }
        NoGpu::AllFailed { count: 1 } => "the GPU failed to start".to_string(),
        NoGpu::AllFailed { count } => format!("all {count} GPUs failed to start"),
        NoGpu::CellPasses => {
            "some of the scene's cell passes have no CUDA form and run on the CPU only".to_string()
        }
        NoGpu::NoneFound { note } => {
            let why = note.trim_start_matches("no GPU found: ");
            why.split([':', ';'])
                .next()
                .unwrap_or(why)
                .trim()
                .to_string()
        }
    }
}

/// When the host-side buffers are the limit, which ones.
fn host_side(h: &HostFit) -> String {
    format!(
        "the host-side buffers alone (probe series {}, monitor staging {}) need {} where the host has {} available",
        bytes_h(h.probe_series),
        bytes_h(h.monitors),
        bytes_h(h.host_side),
        bytes_h(h.available)
    )
}

fn host_text(h: &HostFit) -> String {
    if !h.fits && h.host_side_short {
        format!("{} of host memory: {}", bytes_h(h.needs), host_side(h))
    } else if h.fits {
        format!(
            "{} of the {} of host memory available",
            bytes_h(h.needs),
            bytes_h(h.available)
        )
    } else {
        format!(
            "{} of host memory where {} is available",
            bytes_h(h.needs),
            bytes_h(h.available)
        )
    }
}

fn gpu_short(g: &GpuFit) -> String {
    if g.host.host_side_short {
        return format!(
            "the GPUs would hold the grid's {}, but {}",
            bytes_h(g.device_bytes),
            host_side(&g.host)
        );
    }
    let n = g.considered;
    format!(
        "it needs {} on GPUs but the {} GPU{} hold{} only {}",
        bytes_h(g.device_bytes),
        n,
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" },
        bytes_h(g.usable_bytes)
    )
}

fn gpu_reason(c: &GpuFit) -> String {
    let k = c.used;
    let k_min = c.fewest.unwrap_or(k);
    let n = c.considered;
    let need = bytes_h(c.device_bytes);
    let limit = percent(OVERHEAD_LIMIT);
    if let Some(only) = &c.given {
        let list: Vec<String> = only.iter().map(|o| o.to_string()).collect();
        return format!(
            "CUDA on GPU{} {} as given with --gpus: the grid needs {need} and they have {} after the context reserve.",
            if only.len() == 1 { "" } else { "s" },
            list.join(", "),
            bytes_h(c.usable_bytes)
        );
    }
    let fewest = if k_min == 1 {
        "one GPU holds the grid".to_string()
    } else {
        format!("{k_min} is the fewest that hold the grid's {need}")
    };
    let next = |f: Option<f64>| {
        match f {
        Some(f) => format!(
            "a further GPU would spend {} of each step on halo exchange and kernel launches (the limit is {limit})",
            percent(f)
        ),
        None => "the grid has no x planes to spare for a further GPU".to_string(),
    }
    };
    if n == 1 {
        format!(
            "CUDA on the GPU: the grid needs {need} and the GPU has {} after the context reserve.",
            bytes_h(c.usable_bytes)
        )
    } else if k == n && k_min == n {
        format!(
            "CUDA on all {n} GPUs: the grid needs {need}, more than {} of them hold.",
            n - 1
        )
    } else if k == n {
        format!(
            "CUDA on all {n} GPUs: {fewest}, and with all {n} halo exchange and kernel launches cost {} of a step (under {limit}).",
            percent(c.overhead_fraction)
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

/// The reason of `d`, in one sentence.
pub(super) fn sentence(d: &Decision) -> String {
    match d {
        Decision::CpuRequested { cpu } if cpu.fits => format!(
            "The CPU backend was requested (--backend cpu); it needs {}.",
            host_text(cpu)
        ),
        Decision::CpuRequested { cpu } => format!(
            "The CPU backend was requested (--backend cpu) but it needs {}.",
            host_text(cpu)
        ),
        Decision::CudaRequestedNoGpu { why } => format!(
            "CUDA was requested (--backend cuda) but no GPU is available ({}).",
            no_gpu(why)
        ),
        Decision::Cuda { gpu } => gpu_reason(gpu),
        Decision::CudaRequestedShort { gpu } => {
            format!("CUDA was requested (--backend cuda) but {}.", gpu_short(gpu))
        }
        Decision::CpuInstead { gpu, cpu } => format!(
            "The CPU backend runs it: {}, and on the host it needs {}.",
            gpu_short(gpu),
            host_text(cpu)
        ),
        Decision::CpuNoGpu { why, cpu } => format!(
            "The CPU backend runs it: no GPU is available ({}), and it needs {}.",
            no_gpu(why),
            host_text(cpu)
        ),
        // The host is the limit for both engines: say that once.
        Decision::HostTooSmall { gpu, cpu } => format!(
            "Nothing here can run it: {} (the GPUs would hold the grid's {}).",
            host_side(cpu),
            bytes_h(gpu.device_bytes)
        ),
        Decision::NothingFits { gpu, cpu } => format!(
            "Nothing here holds the grid: {}, and the CPU backend would need {}.",
            gpu_short(gpu),
            host_text(cpu)
        ),
        Decision::NothingFitsNoGpu { why, cpu } => format!(
            "Nothing here holds the grid: no GPU is available ({}), and the CPU backend would need {}.",
            no_gpu(why),
            host_text(cpu)
        ),
    }
}
