//! The surface ports on the GPUs ([`crate::model::SurfacePorts`]): the tables of
//! [`PortLayout`] on each GPU for the slabs it holds, stepped by `kernels/ports.cu` and the
//! dispersive kernel in the CPU pass's order (`src/backend/cpu/ports.rs`), so the fields are
//! the CPU backend's bit for bit.
//!
//! One step, after the dispersive pass of the E half step has run on every plane of every
//! slab: on each GPU `port_increment` over its edges; the trade of the increments the GPUs
//! beside read; `port_drive` over its virtual cells (one launch per [`MAX_PORT_MODELS`]
//! models), `port_poles` over every virtual cell with poles (the dispersive kernel's
//! arithmetic, each cell in its run: a model's cells whose own edge lies in one slab, so that
//! each slab's pole state is one array of the state it registers); the trade of the outputs
//! the GPUs beside gather; `port_gather` over its edges. A GPU's part of the grid is a run of
//! x planes, so as over MPI ranks ([`crate::model::PortCrossings`]) it trades with the GPUs
//! beside it only: each packs what they read into a send buffer (`probe_gather`, through
//! each value's address), and each receiver copies its runs of the senders' buffers after
//! its own values, peer to peer or through pinned memory. One GPU trades nothing; an MPI
//! rank's GPU trades with the ranks beside it through the host (`link_process_ports`). The ports'
//! stencils cross the slabs' boundary planes, so the E half step of a model with ports is not
//! split into boundary and interior planes (`CudaEngine::for_process`).

use super::super::args::*;
use super::device::{bytes_of, bytes_of_mut, Device, DeviceError, Event};
use super::passes::DeviceArray;
use super::slab::Slab;
use super::{CudaEngine, Stream};
use crate::backend::ports::{
    receive_runs, send_runs, trade_peers, Peer, PortLayout, PortLinks, PortModel,
};
use crate::decomp::SlabRange;
use crate::model::{Model, PortCrossings, SurfacePorts};
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

/// The surface ports' arrays of one GPU's slabs, on that GPU.
pub(super) struct DevicePorts<T> {
    gpu: usize,
    /// Its slabs (indices into the engine's slabs, consecutive).
    slabs: std::ops::Range<usize>,
    /// The x planes its slabs hold.
    planes: std::ops::Range<usize>,
    /// What it trades with the GPUs beside (nothing on one GPU).
    crossings: PortCrossings,
    /// The model's ports (the global numbering its crossings index).
    all: std::sync::Arc<SurfacePorts>,
    /// Its trades: 0, the increments; 1, the outputs.
    trades: [Trade; 2],
    /// Its trades with the parts of other processes (an MPI rank's neighbours), once linked
    /// ([`CudaEngine::link_process_ports`]).
    process: std::cell::RefCell<Option<ProcessTrades<T>>>,
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
    /// Bytes allocated, counted as [`crate::model::PortCounts::bytes`] counts them, with its
    /// trades' ([`PortCrossings::gpu_bytes`]).
    bytes: u64,
}

/// One of a GPU's two trades a step with the GPUs beside it.
#[derive(Default)]
struct Trade {
    /// Its values the GPUs beside read, packed into the send buffer (below, then above):
    /// `probe_gather` through each value's address. `n` = 0 when it sends nothing.
    pack: ProbeArgs,
    /// A pinned copy of the send buffer, for a receiver without peer access (0: none).
    pinned: Ptr,
    /// Where its first received value goes (after its own values).
    receive_at: Ptr,
    /// Its runs of received values, by sender.
    from: Vec<Incoming>,
    /// The GPUs (indices into the parts) that receive from it.
    to: Vec<usize>,
}

/// A GPU part's trades with the parts of other processes: what it sends is packed on the GPU
/// and downloaded, traded on the host through `links` (MPI between ranks), and what it
/// receives uploaded after its own values.
pub(super) struct ProcessTrades<T> {
    links: Box<dyn PortLinks<T>>,
    /// Per trade, each other part it trades with.
    peers: [Vec<Peer>; 2],
    /// Per trade, the values sent (downloaded from the send buffer).
    sent: [Vec<T>; 2],
    /// Per trade, the values received.
    received: [Vec<T>; 2],
}

/// A run of the values a GPU receives in a trade.
struct Incoming {
    /// The sender (an index into the parts).
    sender: usize,
    /// The run of the sender's send buffer.
    send: std::ops::Range<usize>,
    /// The run of the receiver's received values.
    receive: std::ops::Range<usize>,
    /// Through the sender's pinned copy (no peer access between the two).
    staged: bool,
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

/// Bytes the GPUs' trades of `ports` take on the GPUs for slabs `ranges` placed as `gpu_of`
/// ([`SurfacePorts::gpu_trade_bytes`] of each GPU's planes), in precision `real`: 0 on one
/// GPU.
pub fn trade_bytes(
    ports: &SurfacePorts,
    ranges: &[SlabRange],
    gpu_of: &[usize],
    real: usize,
) -> u64 {
    crate::decomp::gpu_planes(ranges, gpu_of).map_or(0, |p| ports.gpu_trade_bytes(&p, real))
}

/// Pinned host bytes the GPUs' trades of `ports` stage through when the GPUs have no peer
/// access ([`SurfacePorts::staged_trade_bytes`]).
pub fn staged_trade_bytes(
    ports: &SurfacePorts,
    ranges: &[SlabRange],
    gpu_of: &[usize],
    real: usize,
) -> u64 {
    crate::decomp::gpu_planes(ranges, gpu_of).map_or(0, |p| ports.staged_trade_bytes(&p, real))
}

/// The model's surface ports on the GPUs of `slabs` (whose field arrays are allocated), one
/// [`DevicePorts`] per GPU, linked to trade with each other; empty without ports. `staged`:
/// trade through pinned memory even between GPUs with peer access (the halo copies' option).
pub(super) fn build<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    op: &Operator<T>,
    slabs: &[Slab],
    staged: bool,
) -> Result<Vec<DevicePorts<T>>, DeviceError> {
    let ports = model.surface_ports();
    if ports.is_empty() {
        return Ok(Vec::new());
    }
    let gpu_of: Vec<usize> = slabs.iter().map(|s| s.gpu).collect();
    let parts = crate::decomp::gpu_runs(&gpu_of).ok_or_else(|| {
        DeviceError::Failed(
            "the surface ports need each GPU's slabs side by side, and a GPU holds slabs apart"
                .into(),
        )
    })?;
    let whole = slabs[0].range.x0 == 0 && slabs[slabs.len() - 1].range.x1 == model.grid.shape[0];
    if parts.len() > 1 && !whole {
        return Err(DeviceError::Failed(
            "the surface ports of a process's part of the grid run on one GPU: give each rank one GPU"
                .into(),
        ));
    }
    let mut out = parts
        .into_iter()
        .map(|part| build_part(dev, model, op, &ports, slabs, part))
        .collect::<Result<Vec<_>, _>>()?;
    if out.len() > 1 {
        link(dev, &ports, &mut out, staged)?;
    }
    Ok(out)
}

/// The surface ports of the slabs `part` (consecutive, on one GPU) of `slabs`.
fn build_part<D: Device, T: Real>(
    dev: &D,
    model: &Model,
    op: &Operator<T>,
    ports: &std::sync::Arc<SurfacePorts>,
    slabs: &[Slab],
    part: std::ops::Range<usize>,
) -> Result<DevicePorts<T>, DeviceError> {
    let mine = &slabs[part.clone()];
    let gpu = mine[0].gpu;
    let [_, ny, nz] = model.grid.shape;
    let ranges: Vec<_> = mine.iter().map(|s| s.range).collect();
    let layout = PortLayout::<T>::new(ports, &ranges, [ny, nz], |m| {
        op.dispersive[m as usize].is_some()
    });
    let t = std::mem::size_of::<T>();
    let place: Vec<u64> = ports.edges[layout.own_edges.clone()]
        .iter()
        .zip(&layout.edge_place)
        .map(|(e, &(s, i))| mine[s].f[e.component as usize] + (i * t) as u64)
        .collect();
    let edge_coef: Vec<T> = ports.painted[layout.own_edges.clone()]
        .iter()
        .flat_map(|&m| {
            let (ca, cb) = op.coef[m as usize];
            [ca, T::from_f64(1.0 / cb.to_f64())]
        })
        .collect();
    let edges = layout.own_edges.len();
    let cells = layout.cells();
    let c = &layout.crossings;
    let npole: usize = layout
        .models
        .iter()
        .filter(|m| m.poles)
        .map(|m| m.cells.len())
        .sum();
    let pole_runs = pole_runs(dev, gpu, op, &layout)?;
    // Received values after the own ones: outputs after the virtual cells, increments after
    // the edges.
    let v = dev.alloc(gpu, (cells + c.ports_in.len()) * t)?;
    let curl = dev.alloc(gpu, (edges + c.edges_in.len()) * t)?;
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
    for s in 0..mine.len() {
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
    // Each trade's packing: the addresses of the values sent, into a send buffer.
    let mut trades: [Trade; 2] = Default::default();
    for (phase, (sent, base)) in [(&layout.send_edges, curl), (&layout.send_cells, v)]
        .into_iter()
        .enumerate()
    {
        let own = if phase == 0 { edges } else { cells };
        trades[phase].receive_at = base + (own * t) as u64;
        if sent.is_empty() {
            continue;
        }
        let src: Vec<u64> = sent
            .iter()
            .map(|&i| base + (i as usize * t) as u64)
            .collect();
        trades[phase].pack = ProbeArgs {
            src: up(dev, gpu, &src)?,
            out: dev.alloc(gpu, sent.len() * t)?,
            n: sent.len() as i32,
            pad: 0,
        };
    }
    bytes += c.gpu_bytes(t);
    Ok(DevicePorts {
        gpu,
        slabs: part,
        planes: layout.planes.clone(),
        crossings: layout.crossings.clone(),
        all: std::sync::Arc::clone(ports),
        trades,
        process: std::cell::RefCell::new(None),
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
    })
}

/// Pair each GPU's received runs with the senders' send buffers (a part sends to the part
/// below its first plane, then to the part above its last, each list in global order, which
/// is the order the receiver holds them in), and give each sender whose receiver has no peer
/// access (or every sender, `staged`) a pinned copy of its send buffer.
fn link<D: Device, T: Real>(
    dev: &D,
    ports: &SurfacePorts,
    parts: &mut [DevicePorts<T>],
    staged: bool,
) -> Result<(), DeviceError> {
    let t = std::mem::size_of::<T>();
    let planes: Vec<_> = parts.iter().map(|p| p.planes.clone()).collect();
    let part_of_x = |x: usize| {
        planes
            .iter()
            .position(|p| p.contains(&x))
            .expect("every plane is some GPU's")
    };
    let peers: Vec<[Vec<Peer>; 2]> = parts
        .iter()
        .map(|p| trade_peers(&p.crossings, ports, p.planes.clone(), &part_of_x))
        .collect();
    for (r, mine) in peers.iter().enumerate() {
        for (phase, list) in mine.iter().enumerate() {
            for peer in list.iter().filter(|p| !p.receive.is_empty()) {
                let (q, receive) = (peer.part, peer.receive.clone());
                let send = peers[q][phase]
                    .iter()
                    .find(|p| p.part == r)
                    .map_or(0..0, |p| p.send.clone());
                assert_eq!(
                    send.len(),
                    receive.len(),
                    "a GPU sends a neighbour what it reads from it"
                );
                let through_host = staged || !dev.peer(parts[q].gpu, parts[r].gpu);
                parts[r].trades[phase].from.push(Incoming {
                    sender: q,
                    send,
                    receive,
                    staged: through_host,
                });
                parts[q].trades[phase].to.push(r);
                if through_host && parts[q].trades[phase].pinned == 0 {
                    let n = parts[q].trades[phase].pack.n as usize;
                    parts[q].trades[phase].pinned = dev.alloc_pinned(parts[q].gpu, n * t)?;
                }
            }
        }
    }
    Ok(())
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
    /// One step of the surface ports (after the dispersive pass on every plane), every GPU's
    /// part in turn at each stage, with the two trades between.
    pub(super) fn step_ports(&self) -> Result<(), DeviceError> {
        for p in &self.ports {
            let edges = Dims::elements(p.edges as u64, 1);
            self.launch(
                p.gpu,
                Stream::Compute,
                Kernel::PortIncrement,
                edges,
                &p.edge_args,
            )?;
        }
        self.trade_ports(0)?;
        self.trade_process_ports(0)?;
        for p in &self.ports {
            self.drive_ports(p)?;
        }
        self.trade_ports(1)?;
        self.trade_process_ports(1)?;
        for p in &self.ports {
            let edges = Dims::elements(p.edges as u64, 1);
            self.launch(
                p.gpu,
                Stream::Compute,
                Kernel::PortGather,
                edges,
                &p.edge_args,
            )?;
        }
        Ok(())
    }

    /// The drives and poles of the virtual cells of `p`.
    fn drive_ports(&self, p: &DevicePorts<T>) -> Result<(), DeviceError> {
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
        Ok(())
    }

    /// Trade `phase` (0: the increments, 1: the outputs) between the GPUs: each sender packs
    /// what the GPUs beside read (once they have copied its last trade out of the buffer) and
    /// records `PortsPacked`; each receiver waits for its senders, copies its runs after its
    /// own values and records `PortsReceived`. Nothing on one GPU.
    fn trade_ports(&self, phase: usize) -> Result<(), DeviceError> {
        if self.ports.len() < 2 {
            return Ok(());
        }
        let t = std::mem::size_of::<T>();
        for p in &self.ports {
            let trade = &p.trades[phase];
            if trade.pack.n == 0 {
                continue;
            }
            for &r in &trade.to {
                let receiver = self.ports[r].gpu;
                self.dev
                    .wait(p.gpu, Stream::Compute, receiver, Event::PortsReceived)?;
            }
            self.pack_ports(p, phase)?;
            if trade.pinned != 0 {
                let bytes = trade.pack.n as usize * t;
                self.dev
                    .copy_dtoh(p.gpu, Stream::Compute, trade.pinned, trade.pack.out, bytes)?;
            }
            self.dev
                .record(p.gpu, Stream::Compute, Event::PortsPacked)?;
        }
        for p in &self.ports {
            let trade = &p.trades[phase];
            if trade.from.is_empty() {
                continue;
            }
            for inc in &trade.from {
                let sender = &self.ports[inc.sender];
                let sent = &sender.trades[phase];
                self.dev
                    .wait(p.gpu, Stream::Compute, sender.gpu, Event::PortsPacked)?;
                let dst = trade.receive_at + (inc.receive.start * t) as u64;
                let offset = (inc.send.start * t) as u64;
                let bytes = inc.send.len() * t;
                if inc.staged {
                    self.dev
                        .copy_htod(p.gpu, Stream::Compute, dst, sent.pinned + offset, bytes)?;
                } else {
                    self.dev.copy_dtod(
                        p.gpu,
                        Stream::Compute,
                        (p.gpu, dst),
                        (sender.gpu, sent.pack.out + offset),
                        bytes,
                    )?;
                }
            }
            self.dev
                .record(p.gpu, Stream::Compute, Event::PortsReceived)?;
        }
        Ok(())
    }

    /// Pack trade `phase`'s values sent of `p` into its send buffer (nothing when it sends
    /// none).
    fn pack_ports(&self, p: &DevicePorts<T>, phase: usize) -> Result<(), DeviceError> {
        let pack = &p.trades[phase].pack;
        if pack.n == 0 {
            return Ok(());
        }
        let dims = Dims::elements(pack.n as u64, 1);
        self.launch(p.gpu, Stream::Compute, Kernel::ProbeGather, dims, pack)
    }

    /// Link the ports to trade with the parts of other processes through `links` (one per
    /// GPU part; an MPI rank's engine has one): each part's runs of the values it receives
    /// (those a part holds, in order) and of those it sends (to the part below its first
    /// plane, then to the part above its last), as the CPU pass links them.
    pub(super) fn link_process_ports(&mut self, links: &dyn Fn() -> Box<dyn PortLinks<T>>) {
        for p in &mut self.ports {
            let links = links();
            let c = &p.crossings;
            let part_of_x = |x: usize| links.part_of_x(x);
            let peers = trade_peers(c, &p.all, p.planes.clone(), &part_of_x);
            let sent_len = [c.sent_edges(), c.sent_ports()];
            let received_len = [c.edges_in.len(), c.ports_in.len()];
            *p.process.get_mut() = Some(ProcessTrades {
                links,
                peers,
                sent: sent_len.map(|n| vec![T::ZERO; n]),
                received: received_len.map(|n| vec![T::ZERO; n]),
            });
        }
    }

    /// Trade `phase` with the parts of other processes, once linked: wait for the GPU's work
    /// queued so far, pack and download what the neighbours read, trade through the links,
    /// upload what arrived after the part's own values. A part that trades with another
    /// process and is not linked is an error (its received values would be missing).
    fn trade_process_ports(&self, phase: usize) -> Result<(), DeviceError> {
        for p in &self.ports {
            let mut process = p.process.borrow_mut();
            let Some(pt) = process.as_mut() else {
                if self.ports.len() == 1 && !p.crossings.is_empty() {
                    return Err(DeviceError::Failed(
                        "the surface ports of a part of the grid trade with the parts beside it: link them first (Backend::link_ports)"
                            .into(),
                    ));
                }
                continue;
            };
            let trade = &p.trades[phase];
            self.pack_ports(p, phase)?;
            // The received values overwrite what the last step's kernels read: let them finish.
            self.dev
                .record(p.gpu, Stream::Compute, Event::PortsPacked)?;
            self.dev.sync_event(p.gpu, Event::PortsPacked)?;
            let ProcessTrades {
                links,
                peers,
                sent,
                received,
            } = pt;
            if trade.pack.n > 0 {
                self.dev
                    .download(p.gpu, trade.pack.out, bytes_of_mut(&mut sent[phase]))?;
            }
            let sends = send_runs(&sent[phase], &peers[phase]);
            let mut receives = receive_runs(&mut received[phase], &peers[phase]);
            links.trade(phase, &sends, &mut receives);
            if !received[phase].is_empty() {
                self.dev
                    .upload(p.gpu, trade.receive_at, bytes_of(&received[phase]))?;
            }
        }
        Ok(())
    }

    /// After the fields were replaced: each edge's E at the last step is its field now (the
    /// CPU pass's `after_import`).
    pub(super) fn refresh_ports(&self) -> Result<(), DeviceError> {
        for p in &self.ports {
            let args = PortEdgesArgs {
                refresh: 1,
                ..p.edge_args
            };
            let dims = Dims::elements(p.edges as u64, 1);
            self.launch(p.gpu, Stream::Compute, Kernel::PortIncrement, dims, &args)?;
        }
        Ok(())
    }

    /// The ports' state arrays of slab `s` (an index into the slabs), as the CPU pass
    /// registers them (`PortPass::slab_arrays`): per model, the ports' output E (their E at
    /// the last step for a model with poles) and their poles' state, over the ports whose
    /// own edge lies in the slab.
    pub(super) fn port_arrays(&self, s: usize) -> Vec<DeviceArray> {
        use crate::backend::pass::arrays::{port_poles, port_values};
        let Some(p) = self.ports.iter().find(|p| p.slabs.contains(&s)) else {
            return Vec::new();
        };
        let local = s - p.slabs.start;
        let t = std::mem::size_of::<T>() as u64;
        let mut out = Vec::new();
        for (m, (model, run)) in p.models.iter().zip(&p.slab_cells[local]).enumerate() {
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
                    .find(|r| r.model == m && r.slab == local)
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
