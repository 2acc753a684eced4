//! The surface ports' tables as every backend holds them ([`crate::model::SurfacePorts`]): the
//! ports renumbered as virtual cells, model by model, so that each model's cells are one run
//! a dispersive update steps like a group of real cells; the stencils and gathers in compressed
//! rows over that numbering; each edge's slab and place. An engine that holds part of the grid
//! (an MPI rank's planes) holds its own edges and ports, and its rows also index the values it
//! receives from the parts beside it ([`PortCrossings`], traded through [`PortLinks`]).
//!
//! The CPU pass (`cpu/ports.rs`) and the CUDA engine's (`cuda/engine/ports.rs`) both step
//! these tables in the same order, so they agree bit for bit: per edge its increment; per
//! virtual cell its drive, summed over its stencil row in order, and its model's update; per
//! edge its E, summed over its gather row in order (the ports that touch it, in port order).

use crate::decomp::SlabRange;
use crate::model::{Port, PortCrossings, SurfacePorts};
use crate::real::Real;
use std::ops::Range;

/// How an engine that holds part of the grid (an MPI rank's x planes) trades its surface
/// ports' values with the engines of the other parts ([`PortCrossings`]): installed by
/// [`crate::backend::Backend::link_ports`], called by the ports' pass twice a step.
pub trait PortLinks<T>: Send + Sync {
    /// The part that holds x plane `x`.
    fn part_of_x(&self, x: usize) -> usize;

    /// Trade `phase` (0: the edges' increments, 1: the ports' outputs): send each
    /// `(part, values)` of `sends` and fill each `(part, values)` of `receives` with what
    /// that part sends; return once every value has arrived and the sent ones may be reused.
    /// Every part makes its trades in the same order, at the same point of its step.
    fn trade(&mut self, phase: usize, sends: &[(usize, &[T])], receives: &mut [(usize, &mut [T])]);
}

/// One other part a part's trade sends to or receives from ([`trade_peers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The other part.
    pub part: usize,
    /// The run of the values sent to it (of the part's values sent, below then above).
    pub send: Range<usize>,
    /// The run of the values received from it (of the part's values received).
    pub receive: Range<usize>,
}

/// Per trade (0: the increments, 1: the outputs), the other parts the part holding x planes
/// `planes` trades with, in part order (`part_of_x` names the part of a plane): each part's
/// run of the values received (the crossings' lists hold them in global order, so each
/// part's are one run) and of the values sent (to the part below the first plane, then to
/// the part above the last).
pub fn trade_peers(
    crossings: &PortCrossings,
    ports: &SurfacePorts,
    planes: Range<usize>,
    part_of_x: &dyn Fn(usize) -> usize,
) -> [Vec<Peer>; 2] {
    let received = |list: &[u32], x: &dyn Fn(u32) -> usize| {
        let mut out: Vec<(usize, Range<usize>)> = Vec::new();
        for (k, &i) in list.iter().enumerate() {
            let part = part_of_x(x(i));
            match out.last_mut() {
                Some((p, run)) if *p == part => run.end = k + 1,
                _ => out.push((part, k..k + 1)),
            }
        }
        out
    };
    let sent = |sides: &[Vec<u32>; 2]| {
        let below = (sides[0].len(), planes.start.checked_sub(1));
        let above = (sides[1].len(), Some(planes.end));
        let mut out = Vec::new();
        let mut at = 0;
        for (n, x) in [below, above] {
            if n > 0 {
                let x = x.expect("a part below the first plane reads it");
                out.push((part_of_x(x), at..at + n));
            }
            at += n;
        }
        out
    };
    let c = crossings;
    let edge_x = |q: u32| ports.edge_x(q);
    let port_x = |p: u32| ports.port_x(p);
    [
        peers(sent(&c.edges_out), received(&c.edges_in, &edge_x)),
        peers(sent(&c.ports_out), received(&c.ports_in, &port_x)),
    ]
}

/// The peers of the runs `sent` and `received` (each a part and its run), in part order.
fn peers(sent: Vec<(usize, Range<usize>)>, received: Vec<(usize, Range<usize>)>) -> Vec<Peer> {
    let mut parts: Vec<usize> = sent.iter().chain(&received).map(|r| r.0).collect();
    parts.sort_unstable();
    parts.dedup();
    let run = |list: &[(usize, Range<usize>)], part: usize| {
        list.iter()
            .find(|r| r.0 == part)
            .map_or(0..0, |r| r.1.clone())
    };
    parts
        .into_iter()
        .map(|part| Peer {
            part,
            send: run(&sent, part),
            receive: run(&received, part),
        })
        .collect()
}

/// Each peer's run of `sent` (the values sent), for [`PortLinks::trade`].
pub fn send_runs<'a, T>(sent: &'a [T], peers: &[Peer]) -> Vec<(usize, &'a [T])> {
    peers
        .iter()
        .filter(|p| !p.send.is_empty())
        .map(|p| (p.part, &sent[p.send.clone()]))
        .collect()
}

/// Each peer's run of `received` (the room for the values received), for
/// [`PortLinks::trade`]: the runs are disjoint and in part order.
pub fn receive_runs<'a, T>(received: &'a mut [T], peers: &[Peer]) -> Vec<(usize, &'a mut [T])> {
    let mut rest = received;
    let mut at = 0;
    let mut out = Vec::with_capacity(peers.len());
    for p in peers.iter().filter(|p| !p.receive.is_empty()) {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(p.receive.start - at);
        let (run, tail) = tail.split_at_mut(p.receive.len());
        out.push((p.part, run));
        rest = tail;
        at = p.receive.end;
    }
    out
}

/// One model material of the ports: its virtual cells are one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortModel {
    /// The material id.
    pub material: u8,
    /// Its virtual cells.
    pub cells: Range<usize>,
    /// Whether the material has poles (the models with poles come first).
    pub poles: bool,
}

/// The ports' tables over the virtual cells ([`PortLayout::new`]).
#[derive(Debug, Clone)]
pub struct PortLayout<T> {
    /// The models, those with poles first, then in order of their first port.
    pub models: Vec<PortModel>,
    /// Per virtual cell: its model (an index into `models`).
    pub model: Vec<u32>,
    /// Per virtual cell: the end of its stencil row (the start is the previous cell's end).
    pub stencil_end: Vec<u32>,
    /// The stencil rows: the edge and its weight in the run's precision.
    pub stencil_edge: Vec<u32>,
    /// See `stencil_edge`.
    pub stencil_weight: Vec<T>,
    /// Per own edge: the end of its gather row.
    pub gather_end: Vec<u32>,
    /// The gather rows: the virtual cell and its weight, in port order.
    pub gather_cell: Vec<u32>,
    /// See `gather_cell`.
    pub gather_weight: Vec<T>,
    /// Per own edge: its slab (an index into the slab ranges) and its offset into that slab's
    /// array of its component (the left halo plane is plane 0).
    pub edge_place: Vec<(usize, usize)>,
    /// Per slab, per model: the run of the model's cells whose own edge lies in the slab,
    /// counted from the model's first cell (ports are in edge order and edges in x order, so
    /// a slab's cells of a model are one run).
    pub slab_cells: Vec<Vec<Range<usize>>>,
    /// The model's edges the slabs hold (all of them in one process), in order: local edge
    /// `e` is the model's `own_edges.start + e`. The edges, and the ports, are the part's own;
    /// the rows above index the values received from other parts after its own: the k-th
    /// edge of `crossings.edges_in` is local edge `own_edges.len() + k`, the k-th port of
    /// `crossings.ports_in` virtual cell `cells() + k`.
    pub own_edges: Range<usize>,
    /// What the part trades with the other parts of the grid (nothing in one process).
    pub crossings: PortCrossings,
    /// Per edge of `crossings.edges_out` (side 0, then side 1): its local edge.
    pub send_edges: Vec<u32>,
    /// Per port of `crossings.ports_out` (side 0, then side 1): its virtual cell.
    pub send_cells: Vec<u32>,
    /// The x planes the slabs hold.
    pub planes: Range<usize>,
}

impl<T: Real> PortLayout<T> {
    /// The tables of `ports` over slabs `ranges` (contiguous, in x order) of a grid `ny` x
    /// `nz`; `has_poles` says which materials have poles. The slabs may hold only some of the
    /// grid's planes (an MPI rank's): then the part's own edges and ports are those in them,
    /// and the rows read what it receives from the parts beside it ([`PortCrossings`]).
    pub fn new(
        ports: &SurfacePorts,
        ranges: &[SlabRange],
        [ny, nz]: [usize; 2],
        has_poles: impl Fn(u8) -> bool,
    ) -> Self {
        let plane = ny * nz;
        let (x0, x1) = (
            ranges.first().map_or(0, |r| r.x0),
            ranges.last().map_or(0, |r| r.x1),
        );
        let own_edges = ports.edges.partition_point(|e| (e.cell[0] as usize) < x0)
            ..ports.edges.partition_point(|e| (e.cell[0] as usize) < x1);
        // Ports are in edge order, so the part's own are a run too.
        let own_edge = |p: &Port| p.stencil[0].0 as usize;
        let own_ports = ports
            .ports
            .partition_point(|p| own_edge(p) < own_edges.start)
            ..ports.ports.partition_point(|p| own_edge(p) < own_edges.end);
        let crossings = ports.crossings(x0..x1);
        let edge_place: Vec<(usize, usize)> = ports.edges[own_edges.clone()]
            .iter()
            .map(|e| {
                let [i, j, k] = e.cell.map(|v| v as usize);
                let s = ranges
                    .iter()
                    .position(|r| r.x0 <= i && i < r.x1)
                    .expect("a port edge lies in a slab");
                (s, (i - ranges[s].x0 + 1) * plane + j * nz + k)
            })
            .collect();
        let own = &ports.ports[own_ports.clone()];
        let (models, model_of) = models_of(own, &has_poles);
        // Each port's virtual cell: its model's next one, in port order.
        let mut next: Vec<usize> = models.iter().map(|m| m.cells.start).collect();
        let cell_of: Vec<usize> = model_of
            .iter()
            .map(|&m| {
                next[m] += 1;
                next[m] - 1
            })
            .collect();
        let mut port_at = vec![0usize; cell_of.len()];
        for (p, &u) in cell_of.iter().enumerate() {
            port_at[u] = p;
        }
        let model = port_at.iter().map(|&p| model_of[p] as u32).collect();
        let cells = cell_of.len();
        let local_edge = |q: u32| match (q as usize).checked_sub(own_edges.start) {
            Some(e) if e < own_edges.len() => e as u32,
            _ => (own_edges.len() + received(&crossings.edges_in, q)) as u32,
        };
        let local_cell = |p: u32| match (p as usize).checked_sub(own_ports.start) {
            Some(u) if u < own.len() => cell_of[u] as u32,
            _ => (cells + received(&crossings.ports_in, p)) as u32,
        };
        let (stencil_end, stencil_edge, stencil_weight) = csr(port_at
            .iter()
            .map(|&p| own[p].stencil.iter().map(|&(q, w)| (local_edge(q), w))));
        let (gather_end, gather_cell, gather_weight) = csr(ports.gather[own_edges.clone()]
            .iter()
            .map(|g| g.iter().map(|&(p, w)| (local_cell(p), w))));
        let mut slab_cells = vec![vec![0..0; models.len()]; ranges.len()];
        for (p, port) in own.iter().enumerate() {
            let m = model_of[p];
            let k = cell_of[p] - models[m].cells.start;
            let (s, _) = edge_place[own_edge(port) - own_edges.start];
            let r: &mut Range<usize> = &mut slab_cells[s][m];
            if r.start == r.end {
                *r = k..k;
            }
            debug_assert_eq!(r.end, k, "a slab's cells of a model are one run");
            r.end = k + 1;
        }
        let send_edges = crossings
            .edges_out
            .concat()
            .into_iter()
            .map(local_edge)
            .collect();
        let send_cells = crossings
            .ports_out
            .concat()
            .into_iter()
            .map(local_cell)
            .collect();
        PortLayout {
            models,
            model,
            stencil_end,
            stencil_edge,
            stencil_weight,
            gather_end,
            gather_cell,
            gather_weight,
            edge_place,
            slab_cells,
            own_edges,
            crossings,
            send_edges,
            send_cells,
            planes: x0..x1,
        }
    }

    /// The virtual cells.
    pub fn cells(&self) -> usize {
        self.model.len()
    }

    /// What the tables hold for slab `s` (the edges and virtual cells whose own edge lies in
    /// it), counted as [`crate::model::SurfacePorts::plane_counts`] counts them; `state_len`
    /// gives the state values per cell of a material.
    pub fn slab_counts(
        &self,
        s: usize,
        state_len: impl Fn(u8) -> usize,
    ) -> crate::model::PortCounts {
        let mut counts = crate::model::PortCounts::default();
        let mut start = 0;
        for (&(slab, _), &end) in self.edge_place.iter().zip(&self.gather_end) {
            if slab == s {
                counts.edges += 1;
                counts.gather_entries += (end - start) as u64;
            }
            start = end;
        }
        for (m, run) in self.models.iter().zip(&self.slab_cells[s]) {
            let first = m.cells.start + run.start;
            let last = m.cells.start + run.end;
            let row = |u: usize| if u == 0 { 0 } else { self.stencil_end[u - 1] };
            counts.ports += run.len() as u64;
            counts.stencil_entries += (row(last) - row(first)) as u64;
            let state = state_len(m.material) as u64;
            if state > 0 {
                counts.pole_ports += run.len() as u64;
                counts.pole_values += state * run.len() as u64;
            }
        }
        counts
    }
}

/// The models of `ports` (those with poles first, then in order of their first port) and
/// each port's model (an index into them).
fn models_of(ports: &[Port], has_poles: &impl Fn(u8) -> bool) -> (Vec<PortModel>, Vec<usize>) {
    let mut ids: Vec<u8> = Vec::new();
    for port in ports {
        if !ids.contains(&port.model) {
            ids.push(port.model);
        }
    }
    ids.sort_by_key(|&id| !has_poles(id));
    let mut counts = vec![0usize; ids.len()];
    let model_of: Vec<usize> = ports
        .iter()
        .map(|p| {
            let m = ids.iter().position(|&id| id == p.model).expect("listed");
            counts[m] += 1;
            m
        })
        .collect();
    let mut models = Vec::with_capacity(ids.len());
    let mut start = 0;
    for (&material, &n) in ids.iter().zip(&counts) {
        models.push(PortModel {
            material,
            cells: start..start + n,
            poles: has_poles(material),
        });
        start += n;
    }
    (models, model_of)
}

/// The place of `index` among the values received (`list`, sorted): an index the part reads
/// is either its own or one it receives, by construction of [`PortCrossings`].
fn received(list: &[u32], index: u32) -> usize {
    list.binary_search(&index)
        .expect("a value read from another part is received")
}

/// The rows `rows` back to back, in compressed form: (each row's end, the indices, the weights
/// in the run's precision).
fn csr<T: Real>(
    rows: impl Iterator<Item = impl Iterator<Item = (u32, f64)>>,
) -> (Vec<u32>, Vec<u32>, Vec<T>) {
    let (mut ends, mut index, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows {
        for (i, w) in row {
            index.push(i);
            weight.push(T::from_f64(w));
        }
        ends.push(index.len() as u32);
    }
    (ends, index, weight)
}
