//! What would fit when nothing does: more or other GPUs, a host with more memory, f32 instead
//! of f64, a coarser cell, local refinement; and the mesh report (what a graded mesh costs
//! against uniform ones).

use super::assign::{choose_gpus, cpu_candidate, cpu_split_for, gpu_candidate, Candidate, GpuAsk};
use super::bytes::Layout;
use super::decision::HostFit;
use super::hardware::{Device, Hardware, GPU_MODELS};
use super::report::{bytes_h, duration_h, group};
use super::{
    AxisMesh, BackendChoice, MeshAlternative, MeshReport, PlanBackend, PlanOptions, RefineBox,
    RefinementSuggestion,
};
use crate::decomp::SlabRange;
use crate::model::mesh::{axis_lines, wavelength_zones, Zone};
use crate::model::{Model, Precision, C0};

/// The grading the refinement suggestion assumes: the scene's default `simulation.grading`.
pub const SUGGESTED_GRADING: f64 = 1.25;

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
        // Spread over nodes like this one (MPI ranks), when one plane per rank fits a node.
        let staging = super::monitor_staging_bytes(model, model.precision);
        if let Some(n) = super::ranks::nodes_for(layout, hw.host.memory_bytes, staging) {
            if n > 1 {
                out.push(format!(
                    "Over MPI ranks on {n} nodes with {} each it runs on the CPU backend: `mpirun -n {n} yee run` (the mpi build; `yee plan --ranks {n}` shows the split).",
                    bytes_h(hw.host.memory_bytes)
                ));
            }
        }
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
            cpu_split_for(layout, hw, options),
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
            let total = total_bytes(&l, Some(at), hw, options);
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

/// Bytes in all of `layout` where it fits (`at`): on those GPUs, else (also when it fits
/// nowhere) on the host with the CPU backend.
fn total_bytes(
    layout: &Layout,
    at: Option<(PlanBackend, usize)>,
    hw: &Hardware,
    options: &PlanOptions,
) -> u64 {
    match at {
        Some((PlanBackend::Cuda, _)) => {
            choose_gpus(layout, &hw.gpus, &hw.host, &GpuAsk::of(options, hw))
                .map_or(0, |c| c.cand.bytes.total)
        }
        _ => {
            cpu_candidate(
                layout,
                &hw.host,
                hw.gpus.len(),
                cpu_split_for(layout, hw, options),
            )
            .bytes
            .total
        }
    }
}

/// `layout` sized as the plan would: its cells, bytes and where it fits.
fn sized(layout: &Layout, hw: &Hardware, options: &PlanOptions) -> MeshAlternative {
    let at = fits_anywhere(layout, hw, options);
    MeshAlternative {
        shape: layout.shape,
        cells: layout.cells(),
        bytes: total_bytes(layout, at, hw, options),
        fits: at.is_some(),
        backend: at.map_or(PlanBackend::None, |a| a.0),
        gpus: at.map_or(0, |a| if a.0 == PlanBackend::Cuda { a.1 } else { 0 }),
    }
}

/// Cells of at most `cell` covering `length`: the uniform count (an exact multiple stays
/// exact: a uniform axis gives back its own count).
fn cells_over(length: f64, cell: f64) -> usize {
    ((length / cell) * (1.0 - 1e-9)).ceil().max(1.0) as usize
}

/// The mesh report of `model` (`fits`: whether the plan found room for it): per axis the
/// cells and the smallest and largest cell, the cells of a uniform grid at the background
/// cell, on a graded grid a uniform grid at the finest cell, and when a uniform grid does not
/// fit, the refinement that would replace it ([`refinement`]).
pub(super) fn mesh_report(
    model: &Model,
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
    fits: bool,
) -> MeshReport {
    let g = &model.grid;
    let min = g.min_cell();
    let size = g.size();
    let axes = [0, 1, 2].map(|a| AxisMesh {
        cells: g.shape[a],
        min_cell: min[a],
        max_cell: match &g.lines[a] {
            None => g.cell[a],
            Some(l) => l.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max),
        },
        graded: g.lines[a].is_some(),
    });
    // On a graded axis `cell` is the background cell.
    let background: u64 = (0..3)
        .map(|a| cells_over(size[a], g.cell[a]) as u64)
        .product();
    let finest_uniform = (!g.is_uniform()).then(|| {
        let shape = [0, 1, 2].map(|a| cells_over(size[a], min[a]));
        // The time step is the finest cell's either way: the same steps.
        sized(&layout.reshaped(shape, layout.steps), hw, options)
    });
    MeshReport {
        uniform: g.is_uniform(),
        axes,
        background_cells: background,
        refinement_factor: g.cells() as f64 / background.max(1) as f64,
        finest_uniform,
        refinement: if !fits && g.is_uniform() {
            refinement(model, layout, hw, options)
        } else {
            None
        },
    }
}

/// The highest source frequency of `model` (Hz), 0 without sources.
fn highest_frequency(model: &Model) -> f64 {
    model
        .sources
        .iter()
        .map(|s| s.waveform.max_frequency())
        .chain(model.tfsf.iter().map(|t| t.waveform.max_frequency()))
        .fold(0.0, f64::max)
}

/// Refinement for a uniform `model` that does not fit: its cell is the fine cell the densest
/// material needs (N cells per shortest wavelength there, at the highest source frequency), so
/// a background of that cell times the densest refractive index resolves vacuum with the same
/// N; each object then gets, per axis, the cell of the `cells_per_wavelength` rule in its own
/// material ([`wavelength_zones`]: N per wavelength, three across a thin object), never finer
/// than the uniform cell. None when no object needs a cell finer than that background (no
/// material denser than vacuum by 5% or more, or no source frequency).
fn refinement(
    model: &Model,
    layout: &Layout,
    hw: &Hardware,
    options: &PlanOptions,
) -> Option<RefinementSuggestion> {
    let g = &model.grid;
    let f_max = highest_frequency(model);
    if f_max <= 0.0 || model.objects.is_empty() {
        return None;
    }
    let table = &model.materials;
    let n_max = model
        .objects
        .iter()
        .map(|o| &table.materials[o.material as usize])
        .filter(|m| !m.pec)
        .map(|m| (m.epsilon_at(f_max) * m.mu_at(f_max)).norm().sqrt())
        .fold(1.0, f64::max);
    // Less than 5% coarser is not worth a graded mesh.
    if n_max < 1.05 {
        return None;
    }
    let fine = g.cell;
    let background = fine.map(|c| c * n_max);
    let lo = g.origin;
    let hi = [0, 1, 2].map(|a| g.origin[a] + g.size()[a]);
    let mut zones: [Vec<Zone>; 3] = Default::default();
    let mut boxes = Vec::new();
    for (i, o) in model.objects.iter().enumerate() {
        let mut cell = background;
        let mut bounds = ([0.0; 3], [0.0; 3]);
        let mut refined = false;
        for a in 0..3 {
            // Cells per wavelength the uniform cell gives along this axis in the densest
            // material.
            let per = C0 / (f_max * n_max * fine[a]);
            let z = &wavelength_zones(std::slice::from_ref(o), table, f_max, per, background)[a];
            let (olo, ohi) = o.bounds();
            bounds.0[a] = olo[a].max(lo[a]);
            bounds.1[a] = ohi[a].min(hi[a]);
            if let Some(z) = z.first() {
                let c = z.cell.max(fine[a]);
                if c < background[a] * (1.0 - 1e-9) && bounds.1[a] > bounds.0[a] {
                    cell[a] = c;
                    refined = true;
                    zones[a].push(Zone {
                        lo: bounds.0[a],
                        hi: bounds.1[a],
                        cell: c,
                    });
                }
            }
        }
        if refined {
            boxes.push(RefineBox {
                object: i,
                center: [0, 1, 2].map(|a| 0.5 * (bounds.0[a] + bounds.1[a])),
                size: [0, 1, 2].map(|a| bounds.1[a] - bounds.0[a]),
                cell_size: cell,
            });
        }
    }
    if boxes.is_empty() {
        return None;
    }
    let shape = [0, 1, 2].map(|a| {
        axis_lines(
            lo[a],
            hi[a],
            background[a],
            &zones[a],
            SUGGESTED_GRADING,
            &[],
        )
        .len()
            - 1
    });
    let grid = sized(&layout.reshaped(shape, layout.steps), hw, options);
    Some(RefinementSuggestion {
        background_cell: background,
        grading: SUGGESTED_GRADING,
        cells_per_wavelength: C0 / (f_max * n_max * fine.iter().fold(0.0f64, |m, &c| m.max(c))),
        boxes,
        grid,
    })
}

/// The suggestion sentence for the refinement of `mesh`, if it has one.
pub(super) fn refinement_text(model: &Model, mesh: &MeshReport, hw: &Hardware) -> Option<String> {
    let r = mesh.refinement.as_ref()?;
    let unit = unit_factor(&model.length_unit);
    let u = &model.length_unit;
    let len3 = |v: [f64; 3]| {
        if v.iter().all(|&x| (x - v[0]).abs() <= 1e-9 * v[0].abs()) {
            trim(v[0] / unit)
        } else {
            format!(
                "[{}, {}, {}]",
                trim(v[0] / unit),
                trim(v[1] / unit),
                trim(v[2] / unit)
            )
        }
    };
    let vec3 = |v: [f64; 3]| {
        format!(
            "[{}, {}, {}]",
            trim(v[0] / unit),
            trim(v[1] / unit),
            trim(v[2] / unit)
        )
    };
    const LISTED: usize = 3;
    let mut listed: Vec<String> = r
        .boxes
        .iter()
        .take(LISTED)
        .map(|b| {
            format!(
                "box = {{ center = {}, size = {} }}, cell_size = {}",
                vec3(b.center),
                vec3(b.size),
                len3(b.cell_size)
            )
        })
        .collect();
    if r.boxes.len() > LISTED {
        listed.push(format!("{} more", r.boxes.len() - LISTED));
    }
    let [nx, ny, nz] = r.grid.shape;
    let whole: u64 = model.grid.cells();
    let fit = match (r.grid.fits, r.grid.backend) {
        (true, b) => where_text((b, r.grid.gpus), hw),
        (false, _) => "still does not fit here".to_string(),
    };
    Some(format!(
        "Local refinement instead of the uniform grid: cell_size = {} ({u}) as the background, which resolves vacuum as the uniform cell resolves the densest material (about {:.0} cells per wavelength), with {} [[refine]] box{} around the objects that need the fine cell ({}; grading {}) gives {nx} x {ny} x {nz} = {} cells ({} of the uniform grid) and {} in all, which {fit}.",
        len3(r.background_cell),
        r.cells_per_wavelength,
        r.boxes.len(),
        if r.boxes.len() == 1 { "" } else { "es" },
        listed.join("; "),
        r.grading,
        group(r.grid.cells),
        super::report::percent(r.grid.cells as f64 / whole as f64),
        bytes_h(r.grid.bytes),
    ))
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
