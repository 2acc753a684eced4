//! The surface ports on the GPU ([`crate::model::SurfacePorts`]): the tables of
//! [`PortLayout`] on the one GPU that holds every slab, stepped by `kernels/ports.cu` and the
//! dispersive kernel in the CPU pass's order (`src/backend/cpu/ports.rs`), so the fields are
//! the CPU backend's bit for bit.
//!
//! One step, after the dispersive pass of the E half step has run on every plane of every
//! slab: `port_increment` over the edges, `port_drive` over the virtual cells (one launch per
//! [`MAX_PORT_MODELS`] models), `port_poles` over every virtual cell with poles (the
//! dispersive kernel's arithmetic, each cell in its run: a model's cells whose own edge lies
//! in one slab, so that each slab's pole state is one array of the state it registers), and
//! `port_gather` over the edges: four launches. The ports' stencils cross the slabs' boundary planes, so the
//! E half step of a model with ports is not split into boundary and interior planes
//! (`CudaEngine::for_process`).

use super::super::args::*;
use super::device::{bytes_of, Device, DeviceError};
use super::passes::DeviceArray;
use super::slab::Slab;
use super::{CudaEngine, Stream};
use crate::backend::ports::{PortLayout, PortModel};
use crate::model::Model;
use crate::operator::Operator;
use crate::real::Real;

/// One run of a model's virtual cells with poles whose own edge lies in one slab.
#[derive(Debug, Clone)]
pub(super) struct PoleRun {
    /// The model (an index into the models).
    model: usize,
    /// The slab (an index into the engine's slabs).
    slab: usize,
    /// Its first virtual cell and its length.
    first: usize,
    len: usize,
    /// Its pole state, `[slot][cell]` over its `len` cells.
    state: Ptr,
}

/// The surface ports' arrays on their GPU.
pub(super) struct DevicePorts<T> {
    gpu: usize,
    edges: usize,
    models: Vec<PortModel>,
    /// Per model: (ca, cb) of its material.
    coef: Vec<(T, T)>,
    /// Per slab, per model: the run of its cells whose own edge lies in the slab, counted
    /// from the model's first cell.
    slab_cells: Vec<Vec<std::ops::Range<usize>>>,
    pole_runs: Vec<PoleRun>,
    /// The edges' arguments (`port_increment`, `port_gather`).
    edge_args: PortEdgesArgs,
    /// The virtual cells' arguments without the launch's models (`port_drive`).
    drive_args: PortDriveArgs<T>,
    /// The runs' group arguments (`port_poles`), in device memory.
    run_args: Ptr,
    /// Per virtual cell with poles: its run.
    run_of: Ptr,
    /// Virtual cells with poles.
    npole: usize,
    /// Per virtual cell with poles: E at the last step.
    pole_e_prev: Ptr,
    /// Bytes allocated, counted as [`crate::model::PortCounts::bytes`] counts them.
    bytes: u64,
}

impl<T> DevicePorts<T> {
    /// Bytes allocated (the dispersive pass's, as the plan counts them).
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Upload `values` to a new array on `gpu`.
fn up<D: Device, V: Copy>(dev: &D, gpu: usize, values: &[V]) -> Result<Ptr, DeviceError> {
    let p = dev.alloc(gpu, std::mem::size_of_val(values))?;
    if !values.is_empty() {
        dev.upload(gpu, p, bytes_of(values))?;
    }
    Ok(p)
}

/// The model's surface ports on the GPU of `slabs` (all on one), whose field arrays are
/// allocated; None without ports.
pub(super) fn build<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    op: &Operator<T>,
    slabs: &[Slab],
) -> Result<Option<Box<DevicePorts<T>>>, DeviceError> {
    let ports = model.surface_ports();
    if ports.is_empty() {
        return Ok(None);
    }
    let gpu = slabs[0].gpu;
    let [_, ny, nz] = model.grid.shape;
    let ranges: Vec<_> = slabs.iter().map(|s| s.range).collect();
    let layout = PortLayout::<T>::new(&ports, &ranges, [ny, nz], |m| {
        op.dispersive[m as usize].is_some()
    });
    let t = std::mem::size_of::<T>();
    let place: Vec<u64> = ports
        .edges
        .iter()
        .zip(&layout.edge_place)
        .map(|(e, &(s, i))| slabs[s].f[e.component as usize] + (i * t) as u64)
        .collect();
    let edge_coef: Vec<T> = ports
        .painted
        .iter()
        .flat_map(|&m| {
            let (ca, cb) = op.coef[m as usize];
            [ca, T::from_f64(1.0 / cb.to_f64())]
        })
        .collect();
    let edges = ports.edges.len();
    let cells = layout.cells();
    let npole: usize = layout
        .models
        .iter()
        .filter(|m| m.poles)
        .map(|m| m.cells.len())
        .sum();
    let pole_runs = pole_runs(dev, gpu, op, &layout)?;
    let v = dev.alloc(gpu, cells * t)?;
    let curl = dev.alloc(gpu, edges * t)?;
    let edge_args = PortEdgesArgs {
        place: up(dev, gpu, &place)?,
        coef: up(dev, gpu, &edge_coef)?,
        e_prev: dev.alloc(gpu, edges * t)?,
        curl,
        end: up(dev, gpu, &layout.gather_end)?,
        cell: up(dev, gpu, &layout.gather_cell)?,
        weight: up(dev, gpu, &layout.gather_weight)?,
        v,
        n: edges as i64,
        refresh: 0,
        pad_: 0,
    };
    let pole_e_prev = dev.alloc(gpu, npole * t)?;
    let (run_args, run_of) = run_arguments(dev, gpu, op, &layout, &pole_runs, [v, pole_e_prev])?;
    let drive_args = PortDriveArgs {
        v,
        e_prev: pole_e_prev,
        curl,
        model: up(dev, gpu, &layout.model)?,
        end: up(dev, gpu, &layout.stencil_end)?,
        edge: up(dev, gpu, &layout.stencil_edge)?,
        weight: up(dev, gpu, &layout.stencil_weight)?,
        u0: 0,
        u1: 0,
        npole: npole as i64,
        m0: 0,
        pad_: 0,
        ca: [T::ZERO; MAX_PORT_MODELS],
        cb: [T::ZERO; MAX_PORT_MODELS],
    };
    // The ports' arrays as the plan counts them, and the runs' arguments.
    let mut bytes = (pole_runs.len() * std::mem::size_of::<DispersiveArgs<T>>()) as u64;
    for s in 0..slabs.len() {
        bytes += layout
            .slab_counts(s, |m| {
                op.dispersive[m as usize]
                    .as_ref()
                    .map_or(0, |d| d.state_len())
            })
            .bytes(t);
    }
    let coef = layout
        .models
        .iter()
        .map(|m| op.coef[m.material as usize])
        .collect();
    Ok(Some(Box::new(DevicePorts {
        gpu,
        edges,
        coef,
        slab_cells: layout.slab_cells,
        models: layout.models,
        pole_runs,
        edge_args,
        drive_args,
        run_args,
        run_of,
        npole,
        pole_e_prev,
        bytes,
    })))
}

/// Each model with poles' runs of virtual cells, one per slab its ports' own edges lie in, with
/// their pole state allocated on `gpu`.
fn pole_runs<D: Device, T: Real>(
    dev: &D,
    gpu: usize,
    op: &Operator<T>,
    layout: &PortLayout<T>,
) -> Result<Vec<PoleRun>, DeviceError> {
    let t = std::mem::size_of::<T>();
    let state_len = |m: &PortModel| {
        op.dispersive[m.material as usize]
            .as_ref()
            .map_or(0, |d| d.state_len())
    };
    let mut out = Vec::new();
    for (s, runs) in layout.slab_cells.iter().enumerate() {
        for (m, (model, run)) in layout.models.iter().zip(runs).enumerate() {
            if model.poles && !run.is_empty() {
                let len = run.len();
                out.push(PoleRun {
                    model: m,
                    slab: s,
                    first: model.cells.start + run.start,
                    len,
                    state: dev.alloc(gpu, len * state_len(model) * t)?,
                });
            }
        }
    }
    Ok(out)
}

/// Each run's group arguments as the dispersive kernel takes them (its cells of `v`, the
/// ports' values, and of `pole_e_prev`) and each virtual cell with poles' run, uploaded to
/// `gpu` for `port_poles`: (the arguments, the runs).
fn run_arguments<D: Device, T: Real>(
    dev: &D,
    gpu: usize,
    op: &Operator<T>,
    layout: &PortLayout<T>,
    runs: &[PoleRun],
    [v, pole_e_prev]: [Ptr; 2],
) -> Result<(Ptr, Ptr), DeviceError> {
    let t = std::mem::size_of::<T>();
    let npole = runs.iter().map(|r| r.len).sum();
    let mut args = Vec::with_capacity(runs.len());
    let mut run_of = vec![0u32; npole];
    for (k, r) in runs.iter().enumerate() {
        let material = layout.models[r.model].material as usize;
        let template = DispersiveArgs::of(op.dispersive[material].as_ref().expect("poles"))
            .expect("check_poles refused what the kernel cannot take");
        args.push(DispersiveArgs {
            e: v + (r.first * t) as u64,
            cells: 0,
            e_prev: pole_e_prev + (r.first * t) as u64,
            state: r.state,
            n: r.len as i64,
            q0: r.first as i64,
            q1: (r.first + r.len) as i64,
            ..template
        });
        run_of[r.first..r.first + r.len].fill(k as u32);
    }
    Ok((up(dev, gpu, &args)?, up(dev, gpu, &run_of)?))
}

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// One step of the surface ports (after the dispersive pass on every plane).
    pub(super) fn step_ports(&self) -> Result<(), DeviceError> {
        let Some(p) = &self.ports else {
            return Ok(());
        };
        let edges = Dims::elements(p.edges as u64, 1);
        self.launch(
            p.gpu,
            Stream::Compute,
            Kernel::PortIncrement,
            edges,
            &p.edge_args,
        )?;
        for (w, window) in p.models.chunks(MAX_PORT_MODELS).enumerate() {
            let m0 = w * MAX_PORT_MODELS;
            let mut args = p.drive_args;
            args.m0 = m0 as i32;
            args.u0 = window[0].cells.start as i64;
            args.u1 = window[window.len() - 1].cells.end as i64;
            for (k, &(ca, cb)) in p.coef[m0..m0 + window.len()].iter().enumerate() {
                args.ca[k] = ca;
                args.cb[k] = cb;
            }
            let dims = Dims::elements((args.u1 - args.u0) as u64, 1);
            self.launch(p.gpu, Stream::Compute, Kernel::PortDrive, dims, &args)?;
        }
        if p.npole > 0 {
            let args = PortPolesArgs {
                runs: p.run_args,
                run: p.run_of,
                n: p.npole as i64,
            };
            let dims = Dims::elements(p.npole as u64, 1);
            self.launch(p.gpu, Stream::Compute, Kernel::PortPoles, dims, &args)?;
        }
        self.launch(
            p.gpu,
            Stream::Compute,
            Kernel::PortGather,
            edges,
            &p.edge_args,
        )
    }

    /// After the fields were replaced: each edge's E at the last step is its field now (the
    /// CPU pass's `after_import`).
    pub(super) fn refresh_ports(&self) -> Result<(), DeviceError> {
        let Some(p) = &self.ports else {
            return Ok(());
        };
        let args = PortEdgesArgs {
            refresh: 1,
            ..p.edge_args
        };
        let dims = Dims::elements(p.edges as u64, 1);
        self.launch(p.gpu, Stream::Compute, Kernel::PortIncrement, dims, &args)
    }

    /// The ports' state arrays of slab `s` (an index into the slabs), as the CPU pass
    /// registers them (`PortPass::slab_arrays`): per model, the ports' output E (their E at
    /// the last step for a model with poles) and their poles' state, over the ports whose
    /// own edge lies in the slab.
    pub(super) fn port_arrays(&self, s: usize) -> Vec<DeviceArray> {
        use crate::backend::pass::arrays::{port_poles, port_values};
        let Some(p) = &self.ports else {
            return Vec::new();
        };
        let t = std::mem::size_of::<T>() as u64;
        let mut out = Vec::new();
        for (m, (model, run)) in p.models.iter().zip(&p.slab_cells[s]).enumerate() {
            if run.is_empty() {
                continue;
            }
            let first = (model.cells.start + run.start) as u64;
            let (name, spread) = port_values(model.material);
            let values = if model.poles {
                p.pole_e_prev
            } else {
                p.edge_args.v
            };
            out.push(DeviceArray {
                name,
                spread,
                pieces: vec![(values + first * t, run.len())],
                wall: None,
            });
            if model.poles {
                let r = p
                    .pole_runs
                    .iter()
                    .find(|r| r.model == m && r.slab == s)
                    .expect("a run per slab and model with poles");
                let (name, spread) = port_poles(model.material, self.state_len(model.material));
                out.push(DeviceArray {
                    name,
                    spread,
                    pieces: vec![(r.state, r.len)],
                    wall: None,
                });
            }
        }
        out
    }
}
