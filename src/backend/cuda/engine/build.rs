//! Building the CUDA engine: each part of [`CudaEngine::for_process`] (its composition) as one
//! named builder, in the order the engine allocates: the coefficient tables of every GPU, the
//! slabs, the pinned planes of the halos to other processes, then the monitors (probe rings,
//! snapshot staging, surface DFT accumulators). Each returns what it allocated in the plan's
//! categories, which the engine adds up and checks against its estimate.

use super::super::args::*;
use super::device::{bytes_of, Device, DeviceError};
use super::monitors::{
    flux_part, region_chunks, Chunk, FluxMonitor, FluxPart, FluxPatch, Probes, RingGpu, Slot,
};
use super::probe_ring_rows;
use super::slab::{self, Slab, SlabSizes, XRun};
use crate::backend::Allocation;
use crate::decomp::SlabRange;
use crate::model::{Component, Model};
use crate::operator::Operator;
use crate::real::Real;

/// The tables every GPU holds: the materials' coefficients in constant memory, the CPML
/// coefficients, the derivatives' steps and the NaN flag in device memory, and the dispersive
/// kernel's arguments per material with poles.
pub(super) struct Tables<T> {
    /// Per GPU, per axis: device tables [E, H] of (b, c, 1/kappa - 1, 1/d).
    pub(super) pml_coef: Vec<[[Ptr; 2]; 3]>,
    /// Per GPU: the derivatives' steps, [primal (H), dual (E)][axis].
    pub(super) inv: Vec<[[Ptr; 3]; 2]>,
    /// Per GPU: the NaN flag.
    pub(super) finite_flag: Vec<Ptr>,
    /// Per material with poles: the dispersive kernel's arguments, without a group's arrays.
    pub(super) poles: Vec<Option<DispersiveArgs<T>>>,
    /// Some material is magnetic: H has material ids and the tables `c_hca`, `c_hcb`.
    pub(super) magnetic: bool,
}

/// Refuse a material with more poles than the dispersive kernel's argument struct holds (or
/// a series mixture with more parts or poles).
pub(super) fn check_poles(model: &Model) -> Result<(), DeviceError> {
    for m in &model.materials.materials {
        if !m.pec && m.poles.len() > MAX_POLES {
            return Err(DeviceError::Failed(format!(
                "material `{}` has {} poles; the CUDA engine takes at most {MAX_POLES} per material (lorentz, drude and debye together); use --backend cpu or fewer poles",
                m.name,
                m.poles.len()
            )));
        }
        let series_poles: usize = m.series.iter().map(|(p, _)| p.poles.len()).sum();
        if m.series.len() > MAX_SERIES_PARTS || series_poles > MAX_GROUP_POLES {
            return Err(DeviceError::Failed(format!(
                "the series mixture `{}` has {} parts and {series_poles} poles; the CUDA engine takes at most {MAX_SERIES_PARTS} and {MAX_GROUP_POLES}; use --backend cpu",
                m.name,
                m.series.len()
            )));
        }
    }
    Ok(())
}

/// Refuse a model holding a cell pass ([`crate::model::CellPass`]) without a device form the
/// engine knows ([`crate::model::CellPass::kernel`]: the lumped element kernel): such a pass
/// runs on the CPU only (the plan runs its model there).
pub(super) fn check_cell_passes(model: &Model) -> Result<(), DeviceError> {
    let cpu_only = model
        .cell_passes
        .iter()
        .find(|p| p.kernel().and_then(|k| k.lumped().copied()).is_none());
    match cpu_only {
        Some(p) => Err(DeviceError::Failed(format!(
            "the cell pass `{}` has no CUDA form; use --backend cpu",
            p.name()
        ))),
        None => Ok(()),
    }
}

/// Upload the coefficient tables of `op` to every GPU of `dev` ([`Tables`]).
pub(super) fn tables<D: Device, T: Real>(
    dev: &D,
    op: &Operator<T>,
) -> Result<Tables<T>, DeviceError> {
    let t = std::mem::size_of::<T>();
    let ngpu = dev.gpus();
    let table = |coef: &[(T, T)]| {
        let mut ca = vec![T::ZERO; crate::model::MAX_MATERIALS];
        let mut cb = vec![T::ZERO; crate::model::MAX_MATERIALS];
        for (i, &(a, b)) in coef.iter().enumerate() {
            ca[i] = a;
            cb[i] = b;
        }
        (ca, cb)
    };
    let (ca, cb) = table(&op.coef);
    let (hca, hcb) = table(op.hcoef.as_deref().unwrap_or(&[]));
    let magnetic_materials = op.hcoef.is_some();
    // The dispersive kernel's arguments per material with poles, pointers left to the groups.
    let poles: Vec<Option<DispersiveArgs<T>>> = op
        .dispersive
        .iter()
        .map(|d| {
            d.as_ref().map(|d| {
                DispersiveArgs::of(d).expect("check_poles refused what the kernel cannot take")
            })
        })
        .collect();
    let mut pml_coef = Vec::with_capacity(ngpu);
    let mut inv = Vec::with_capacity(ngpu);
    let mut finite_flag = Vec::with_capacity(ngpu);
    for gpu in 0..ngpu {
        dev.set_constant(gpu, "c_ca", bytes_of(&ca))?;
        dev.set_constant(gpu, "c_cb", bytes_of(&cb))?;
        dev.set_constant(gpu, "c_hca", bytes_of(&hca))?;
        dev.set_constant(gpu, "c_hcb", bytes_of(&hcb))?;
        let mut axes = [[0; 2]; 3];
        for (a, axis) in axes.iter_mut().enumerate() {
            let p = &op.pml[a];
            for (k, table) in [&p.e, &p.h].into_iter().enumerate() {
                if !table.is_empty() {
                    let ptr = dev.alloc(gpu, table.len() * 4 * t)?;
                    dev.upload(gpu, ptr, bytes_of(table))?;
                    axis[k] = ptr;
                }
            }
        }
        pml_coef.push(axes);
        let mut steps = [[0; 3]; 2];
        for (tables, arrays) in steps.iter_mut().zip([&op.inv_primal, &op.inv_dual]) {
            for (ptr, values) in tables.iter_mut().zip(arrays) {
                *ptr = dev.alloc(gpu, values.len() * t)?;
                dev.upload(gpu, *ptr, bytes_of(values))?;
            }
        }
        inv.push(steps);
        finite_flag.push(dev.alloc(gpu, crate::plan::bytes::FINITE_FLAG_BYTES as usize)?);
    }

    Ok(Tables {
        pml_coef,
        inv,
        finite_flag,
        poles,
        magnetic: magnetic_materials,
    })
}

/// Allocate and fill the slab of `model` over x `range` on GPU `gpu` (fields, material ids,
/// dispersive groups, psi arrays, TF/SF points and grid, conformal cut faces, mode sources'
/// weights) sized by the plan's `layout`, with what it allocated.
pub(super) fn slab<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    (op, layout): (&Operator<T>, &crate::plan::Layout),
    (range, gpu): (SlabRange, usize),
    magnetic_materials: bool,
) -> Result<(Slab, Allocation), DeviceError> {
    let [_, ny, nz] = model.grid.shape;
    let plane = ny * nz;
    let t = std::mem::size_of::<T>();
    let sizes = SlabSizes::of(layout, range);
    let mut f = [0; 6];
    for p in f.iter_mut() {
        *p = dev.alloc(gpu, sizes.field_len * t)?;
    }
    // Material ids of E (and of H when magnetic), as the CPU backend paints them; the
    // dispersive groups come from the E ids.
    let mut mat = [0; 3];
    let mut hmat = [0; 3];
    let mut ids = vec![0u8; sizes.mat_len];
    let mut dispersive = Vec::new();
    let mut dlen = slab::DispersiveLen::default();
    for (c, m) in mat.iter_mut().enumerate() {
        ids.fill(0);
        model.paint_materials(Component::ALL[c], range.x0, range.x1, &mut ids);
        *m = dev.alloc(gpu, ids.len())?;
        dev.upload(gpu, *m, &ids)?;
        for (material, cells) in model.dispersive_cells(Component::ALL[c], range.x0, &ids) {
            let state_len = op.dispersive[material as usize]
                .as_ref()
                .map_or(0, |d| d.state_len());
            let n = cells.len();
            let cells_ptr = dev.alloc(gpu, 4 * n)?;
            dev.upload(gpu, cells_ptr, bytes_of(&cells))?;
            let e_prev = dev.alloc(gpu, n * t)?;
            let state = dev.alloc(gpu, n * state_len * t)?;
            dlen.cells += n as u64;
            dlen.state += (n * state_len) as u64;
            let plane_start = (0..=range.len())
                .map(|i| cells.partition_point(|&q| (q as usize) < i * plane))
                .collect();
            dispersive.push(slab::DispersiveGroup {
                component: c,
                material,
                n,
                cells: cells_ptr,
                e_prev,
                state,
                plane_start,
            });
        }
    }
    if magnetic_materials {
        for (c, m) in hmat.iter_mut().enumerate() {
            ids.fill(0);
            model.paint_materials(Component::ALL[3 + c], range.x0, range.x1, &mut ids);
            *m = dev.alloc(gpu, ids.len())?;
            dev.upload(gpu, *m, &ids)?;
        }
    }
    let mut psi = [[0; 4]; 3];
    for (a, arrays) in psi.iter_mut().enumerate() {
        for p in arrays.iter_mut() {
            if sizes.psi_len[a] > 0 {
                *p = dev.alloc(gpu, sizes.psi_len[a] * t)?;
            }
        }
    }
    // The x-PML planes of this slab as runs of consecutive planes and layers.
    let mut x_runs: Vec<XRun> = Vec::new();
    let mut q = 0;
    for (p, l) in op.x_layer_planes(range.x0, range.x1) {
        match x_runs.last_mut() {
            Some(r) if r.p1 == p && r.l0 + (r.p1 - r.p0) == l => r.p1 += 1,
            _ => x_runs.push(XRun {
                p0: p,
                p1: p + 1,
                l0: l,
                q0: q,
            }),
        }
        q += 1;
    }
    debug_assert_eq!(q, sizes.x_planes);
    let sources = model.sources_in(range.x0, range.x1);
    let magnetic = model.magnetic_sources_in(range.x0, range.x1);
    let (weights, sheet_weights) =
        sheet_weights::<D, T>(dev, model, (range, gpu), [&sources, &magnetic])?;
    // The TF/SF points of this slab and, when it has any, its copy of the 1-D grid.
    let mut tfsf = Vec::new();
    let mut incident = None;
    let mut tfsf_points = 0;
    let top_nodes = op.tfsf.as_ref().map_or(0, |t| t.nodes as u64);
    if let Some(top) = &op.tfsf {
        for grp in top.slab_groups(range.x0, range.x1, ny, nz) {
            if grp.off.is_empty() {
                continue;
            }
            let up = |bytes: &[u8]| -> Result<Ptr, DeviceError> {
                let p = dev.alloc(gpu, bytes.len())?;
                dev.upload(gpu, p, bytes)?;
                Ok(p)
            };
            tfsf_points += grp.off.len() as u64;
            let group = slab::TfsfGroup {
                component: grp.component,
                off: up(bytes_of(&grp.off))?,
                node: up(bytes_of(&grp.node))?,
                w: up(bytes_of(&grp.w))?,
                fac: up(bytes_of(&grp.fac))?,
                plane_start: grp.plane_start.clone(),
            };
            tfsf.push(group);
        }
        if !tfsf.is_empty() {
            incident = Some([
                dev.alloc(gpu, top.nodes * t)?,
                dev.alloc(gpu, top.nodes * t)?,
            ]);
        }
    }
    let (conformal, conformal_faces) = conformal_faces(dev, op, range, gpu, [ny, nz])?;
    let (cells, cell_values) = cell_passes::<D, T>(dev, model, (range, gpu))?;
    let mut bloch_images = [0; 2];
    if sizes.bloch_images > 0 {
        for b in &mut bloch_images {
            *b = dev.alloc(gpu, sizes.bloch_images as usize * t)?;
        }
    }
    // What was allocated: the plan's lengths, with the dispersive groups, TF/SF points and cut
    // faces as built (the estimate, from the plan's per-plane counts, is checked against it
    // in `CudaEngine::for_process`).
    let allocated = SlabSizes {
        hmat_len: if magnetic_materials { sizes.mat_len } else { 0 },
        dispersive: dlen,
        tfsf: (tfsf_points, top_nodes),
        conformal_faces,
        sheet_weights,
        cell_passes: cell_values,
        // The surface ports are built over every slab at once (`ports::build`, which counts
        // them).
        ports: Default::default(),
        port_runs: 0,
        ..sizes
    };
    let slab = Slab {
        range,
        gpu,
        f,
        mat,
        hmat,
        dispersive,
        tfsf,
        incident,
        conformal,
        psi,
        x_runs,
        sources,
        magnetic,
        weights,
        cells,
        bloch_images,
        boundary: [vec![], vec![]],
        interior: [vec![], vec![]],
    };
    Ok((slab, allocated.allocation(plane, t)))
}

/// The conformal PEC pass's cut faces of the slab over x `range` on GPU `gpu`, Hx's, Hy's and
/// Hz's one after the other in one offset table and one weight table (two allocations per
/// slab, none without faces), with the count of faces.
fn conformal_faces<D: Device, T: Real>(
    dev: &D,
    op: &Operator<T>,
    range: SlabRange,
    gpu: usize,
    [ny, nz]: [usize; 2],
) -> Result<(Option<slab::ConformalFaces>, u64), DeviceError> {
    let faces = op.conformal.slab_faces(range.x0, range.x1, ny, nz);
    let n: usize = faces.iter().map(|f| f.off.len()).sum();
    if n == 0 {
        return Ok((None, 0));
    }
    let mut off = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(n);
    let mut base = [0; 3];
    for f in &faces {
        base[f.component] = off.len();
        off.extend_from_slice(&f.off);
        w.extend_from_slice(&f.w);
    }
    let up = |bytes: &[u8]| -> Result<Ptr, DeviceError> {
        let p = dev.alloc(gpu, bytes.len())?;
        dev.upload(gpu, p, bytes)?;
        Ok(p)
    };
    let table = slab::ConformalFaces {
        off: up(bytes_of(&off))?,
        w: up(bytes_of(&w))?,
        base,
        plane_start: [0, 1, 2].map(|c| faces[c].plane_start.clone()),
    };
    Ok((Some(table), n as u64))
}

/// The cell passes of the slab over x `range` on GPU `gpu`, in model order: per pass its
/// state (zeroed, `slots` values per cell, as the CPU backend holds it) and its coefficient rows
/// in the run's precision (each f64 rounded once, as the CPU's update rounds it at each use),
/// over the cells of its box in the slab; with the count of values. Every pass has the lumped
/// element kernel (`check_cell_passes`).
fn cell_passes<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    (range, gpu): (SlabRange, usize),
) -> Result<(Vec<slab::CellGroup>, u64), DeviceError> {
    let t = std::mem::size_of::<T>();
    let mut values = 0;
    let mut groups = Vec::with_capacity(model.cell_passes.len());
    for pass in &model.cell_passes {
        let kernel = pass.kernel().expect("a cell pass with a device form");
        let lumped = *kernel.lumped().expect("the lumped element kernel");
        let b = pass.cells();
        let (n, x) = crate::model::cells_within(b, range.x0, range.x1);
        let slots = pass.slots();
        let (mut state, mut coef) = (0, 0);
        if n > 0 {
            if slots > 0 {
                state = dev.alloc(gpu, n * slots * t)?;
            }
            // The box's rows from the slab's first plane on: C order, x slowest.
            let per_plane = (b[1][1] - b[1][0]) * (b[2][1] - b[2][0]);
            let first = (x[0] - b[0][0]) * per_plane;
            let rows: Vec<T> = lumped.coefficients[first..first + n]
                .iter()
                .flatten()
                .map(|&c| T::from_f64(c))
                .collect();
            coef = dev.alloc(gpu, rows.len() * t)?;
            dev.upload(gpu, coef, bytes_of(&rows))?;
            values += (n * slots + rows.len()) as u64;
        }
        groups.push(slab::CellGroup {
            name: pass.name().to_string(),
            component: pass.component() as usize,
            cells: b,
            x,
            n,
            slots,
            state,
            coef,
            series: lumped.topology == crate::model::Topology::Series,
        });
    }
    Ok((groups, values))
}

/// The mode sources' weights of the slab over x `range` on GPU `gpu`: per sheet of its
/// electric and magnetic lists `sheets`, one table of the sheet's cells there in the run's
/// precision ([`Model::sheet_weights`], the CPU backend's values), 0 for a uniform sheet; with
/// the count of values.
fn sheet_weights<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    (range, gpu): (SlabRange, usize),
    sheets: [&[crate::model::SlabSource]; 2],
) -> Result<([Vec<Ptr>; 2], u64), DeviceError> {
    let mut values = 0;
    let mut tables = [Vec::new(), Vec::new()];
    for (magnetic, (list, ptrs)) in sheets.into_iter().zip(&mut tables).enumerate() {
        for &(k, _, _) in list {
            let ptr = match model.sheet_weights(k, magnetic == 1, range.x0, range.x1) {
                Some(w) => {
                    let w: Vec<T> = w.into_iter().map(T::from_f64).collect();
                    let p = dev.alloc(gpu, w.len() * std::mem::size_of::<T>())?;
                    dev.upload(gpu, p, bytes_of(&w))?;
                    values += w.len() as u64;
                    p
                }
                None => 0,
            };
            ptrs.push(ptr);
        }
    }
    Ok((tables, values))
}

/// The pinned planes of the halos exchanged with other processes (MPI ranks): one the planes
/// sent are read through (0: none is sent), and per half step one per plane received, with
/// their bytes. Such a plane's copy runs at the full PCIe rate and queues on the compute
/// stream behind the kernels that wrote it, without waiting for the other streams.
pub(super) fn process_planes<D: Device>(
    dev: &D,
    sent: &[Vec<(usize, usize)>; 2],
    received: &[usize; 2],
    plane_bytes: u64,
) -> Result<(Ptr, [Vec<Ptr>; 2]), DeviceError> {
    let process_out = if sent.iter().any(|s| !s.is_empty()) {
        dev.alloc_pinned(0, plane_bytes as usize)?
    } else {
        0
    };
    let mut process_in = [Vec::new(), Vec::new()];
    for (planes, &n) in process_in.iter_mut().zip(received) {
        for _ in 0..n {
            planes.push(dev.alloc_pinned(0, plane_bytes as usize)?);
        }
    }
    Ok((process_out, process_in))
}

/// The probe rings: each model sample's address on its slab's GPU, and a ring of rows per
/// GPU with its pinned mirror; with the bytes they take.
pub(super) fn probes<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    slabs: &[Slab],
) -> Result<(Probes, u64), DeviceError> {
    let [_, ny, nz] = model.grid.shape;
    let plane = ny * nz;
    let t = std::mem::size_of::<T>();
    let ngpu = dev.gpus();
    let mut bytes = 0;
    let slab_of = |x: usize| slabs.iter().find(|s| s.range.x0 <= x && x < s.range.x1);
    let rows = probe_ring_rows(model);
    let mut probe_ptrs: Vec<Vec<u64>> = vec![Vec::new(); ngpu];
    let mut column = Vec::new();
    // Every probe's samples, the lumped terminals' after the probes': the row the time loop
    // queues (`Model::every_probe`). Over MPI ranks, the samples on this process's planes,
    // the row its driver queues: a rank's local model has its probes cut to them, but keeps
    // the terminals whole (`RankLayout::local_model`). One process holds every plane.
    for p in model.every_probe() {
        for &(c, idx) in &p.samples {
            let Some(s) = slab_of(idx[0]) else { continue };
            let off = ((idx[0] - s.range.x0 + 1) * plane + idx[1] * nz + idx[2]) * t;
            column.push((s.gpu, probe_ptrs[s.gpu].len()));
            probe_ptrs[s.gpu].push(s.f[c as usize] + off as u64);
        }
    }
    let mut ring = vec![RingGpu::default(); ngpu];
    for (gpu, r) in ring.iter_mut().enumerate() {
        r.n = probe_ptrs[gpu].len();
        if r.n > 0 {
            let ptrs = &probe_ptrs[gpu];
            r.src = dev.alloc(gpu, ptrs.len() * 8)?;
            dev.upload(gpu, r.src, bytes_of(ptrs))?;
            r.ring = dev.alloc(gpu, rows * r.n * t)?;
            r.pinned = dev.alloc_pinned(
                gpu,
                crate::plan::bytes::probe_mirror_bytes(r.n, rows, t) as usize,
            )?;
        }
        bytes += crate::plan::bytes::probe_ring_bytes(r.n, rows, t)
            + crate::plan::bytes::probe_mirror_bytes(r.n, rows, t);
    }
    let probes = Probes {
        gpus: ring,
        column,
        rows,
        ..Default::default()
    };

    Ok((probes, bytes))
}

/// The snapshot slots: each component's region in chunks gathered into device staging per
/// GPU, copied to one pinned buffer; with the staging buffers, the pinned one and their bytes.
pub(super) fn snapshots<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    slabs: &[Slab],
) -> Result<(Vec<Slot>, Vec<Ptr>, Ptr, u64), DeviceError> {
    let [_, ny, nz] = model.grid.shape;
    let plane = ny * nz;
    let t = std::mem::size_of::<T>();
    let ngpu = dev.gpus();
    let mut bytes = 0;
    let mut staging_len = vec![0usize; ngpu];
    let mut slots = Vec::new();
    let mut pinned_len = 0;
    for snap in &model.snapshots {
        for &(c, region) in &snap.regions {
            let chunks: Vec<Chunk> = region_chunks(slabs, plane, nz, c, &region)
                .into_iter()
                .map(|mut ch| {
                    ch.staging = staging_len[ch.gpu];
                    staging_len[ch.gpu] += ch.len;
                    ch
                })
                .collect();
            let mut gpus: Vec<usize> = chunks.iter().map(|ch| ch.gpu).collect();
            gpus.dedup();
            slots.push(Slot {
                component: c,
                region,
                chunks,
                gpus,
                pinned_off: pinned_len,
                len: region.len(),
                queued: false,
            });
            pinned_len += region.len();
        }
    }
    let mut staging = vec![0; ngpu];
    for (gpu, &len) in staging_len.iter().enumerate() {
        if len > 0 {
            staging[gpu] = dev.alloc(gpu, len * t)?;
        }
        bytes += crate::plan::bytes::snapshot_staging_bytes(len, t);
    }
    let pinned = if pinned_len > 0 {
        dev.alloc_pinned(0, pinned_len * t)?
    } else {
        0
    };
    bytes += crate::plan::bytes::snapshot_staging_bytes(pinned_len, t);
    for slot in &mut slots {
        for ch in slot.chunks.iter_mut() {
            ch.args.out = staging[ch.gpu];
            ch.args.out0 = ch.staging as i64;
        }
    }

    Ok((slots, staging, pinned, bytes))
}

/// The surface DFT monitors: per patch, DFT accumulators next to the fields they read, the
/// quadrature weights and row sums of each part; with their bytes.
pub(super) fn fluxes<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    slabs: &[Slab],
) -> Result<(Vec<FluxMonitor>, u64), DeviceError> {
    let [_, ny, nz] = model.grid.shape;
    let plane = ny * nz;
    let t = std::mem::size_of::<T>();
    let mut bytes = 0;
    let mut fluxes = Vec::new();
    for f in &model.fluxes {
        let nf = f.frequencies.len();
        let mut patches = Vec::new();
        for patch in &f.patches {
            let h_weights = crate::flux::h_weights(&model.grid, patch);
            let quadrature = crate::flux::patch_weights(model, patch);
            let mut parts = Vec::new();
            for s in slabs {
                let Some((mut args, cell0, part_cells)) =
                    flux_part(s, patch, nf, plane, [ny, nz], t, h_weights)
                else {
                    continue;
                };
                args.acc = dev.alloc(
                    s.gpu,
                    crate::plan::bytes::flux_accumulator_bytes(nf, part_cells) as usize,
                )?;
                // The part's quadrature weights, [2][cells], and its row sums: a spectrum
                // reads back four values per row and frequency (flux_rows).
                let row = patch.count[1].max(1);
                let rows = part_cells / row;
                let mut w = quadrature[0][cell0..cell0 + part_cells].to_vec();
                w.extend_from_slice(&quadrature[1][cell0..cell0 + part_cells]);
                let wp = dev.alloc(s.gpu, 8 * w.len())?;
                dev.upload(s.gpu, wp, bytes_of(&w))?;
                let out = dev.alloc(s.gpu, 32 * nf * rows)?;
                parts.push(FluxPart {
                    gpu: s.gpu,
                    cell0,
                    cells: part_cells,
                    args,
                    rows: FluxRowsArgs {
                        acc: args.acc,
                        w: wp,
                        out,
                        cells: args.cells,
                        row: row as i32,
                        nf: nf as i32,
                        pad: 0,
                    },
                });
            }
            debug_assert_eq!(parts.iter().map(|p| p.cells).sum::<usize>(), patch.cells());
            bytes += parts
                .iter()
                .map(|p| crate::plan::bytes::flux_part_bytes(nf, p.cells, p.row_count()))
                .sum::<u64>();
            patches.push(FluxPatch {
                patch: *patch,
                area: crate::flux::cell_area(model, patch),
                quadrature,
                parts,
            });
        }
        fluxes.push(FluxMonitor {
            nf,
            frequencies: f.frequencies.clone(),
            decimation: f.decimation.max(1),
            patches,
        });
    }
    Ok((fluxes, bytes))
}
