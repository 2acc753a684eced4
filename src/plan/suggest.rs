//! What would fit when nothing does: more or other GPUs, a host with more memory, f32 instead
//! of f64, a coarser cell.

use super::assign::{choose_gpus, cpu_candidate, cpu_slabs_for, gpu_candidate, Candidate, GpuAsk};
use super::bytes::Layout;
use super::decision::HostFit;
use super::hardware::{Device, Hardware, GPU_MODELS};
use super::report::{bytes_h, duration_h, group};
use super::{BackendChoice, PlanBackend, PlanOptions};
use crate::decomp::SlabRange;
use crate::model::{Model, Precision};

/// The suggestions of a plan that does not fit (`cpu`: the CPU candidate's host figures).
pub(super) fn suggestions(
    model: &Model,
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
    cpu: &HostFit,
) -> Vec<String> {
    let mut out = Vec::new();
    if options.backend != BackendChoice::Cpu {
        out.extend(suggest_gpus(layout, hw, options));
    }
    if options.backend != BackendChoice::Cuda && !cpu.fits {
        out.push(format!(
            "A host with at least {} of available memory runs it on the CPU backend (--host-memory to plan for one).",
            bytes_h(cpu.needs)
        ));
    }
    out.extend(suggest_f32(model, layout, hw, options));
    out.extend(suggest_cell(model, layout, hw, options));
    out
}

/// Where a layout fits under `options`, if anywhere: the backend and the GPU count.
fn fits_anywhere(
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
) -> Option<(PlanBackend, usize)> {
    if options.backend != BackendChoice::Cpu {
        if let Some(c) = choose_gpus(layout, &hw.gpus, &hw.host, &GpuAsk::of(options, hw)) {
            if c.cand.fits {
                return Some((PlanBackend::Cuda, c.cand.gpus()));
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

fn where_text(at: (PlanBackend, usize), hw: &Hardware) -> String {
    match at {
        (PlanBackend::Cuda, _) if hw.gpus.len() == 1 => format!("fits on the {}", hw.gpus[0].name),
        (PlanBackend::Cuda, k) => format!("fits on {k} of the {} GPUs", hw.gpus.len()),
        _ => "fits in host memory (CPU backend)".to_string(),
    }
}

/// The model's layout with every cell `s` times larger (the CPML keeps its cell count).
fn coarser(layout: &Layout, s: f64) -> Layout {
    layout.reshaped(
        layout
            .shape
            .map(|n| ((n as f64 / s).round() as usize).max(1)),
        (layout.steps as f64 / s).ceil() as u64,
    )
}

fn unit_factor(unit: &str) -> f64 {
    crate::model::length_unit_metres(unit).unwrap_or(1e-6)
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
                PlanBackend::Cuda => choose_gpus(&l, &hw.gpus, &hw.host, &GpuAsk::of(options, hw))
                    .map_or(0, |c| c.cand.bytes.total),
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

/// Fewest identical `kind` GPUs that hold the layout, and that plan.
fn gpus_needed(layout: &Layout, kind: &Device, host: &Device, spg: usize) -> Option<Candidate> {
    let usable = kind.usable_bytes().max(1);
    let whole = layout.gpu_slab_bytes_with_monitors(SlabRange {
        x0: 0,
        x1: layout.shape[0],
    });
    let start = (whole.total() - whole.halos).div_ceil(usable).max(1) as usize;
    let nx = layout.shape[0];
    let try_k = |k: usize| {
        let gpus = vec![kind.clone(); k];
        let sel: Vec<usize> = (0..k).collect();
        // GPUs of a kind bought to hold it: assumed to have peer access (NVLink).
        gpu_candidate(layout, &gpus, host, &sel, spg, true)
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
    let Some(c) = gpus_needed(layout, &kind, &hw.host, GpuAsk::of(options, hw).spg) else {
        return Some(format!(
            "No number of {} GPUs holds this grid: every slab needs at least one x plane.",
            kind.name
        ));
    };
    let k = c.gpus();
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
