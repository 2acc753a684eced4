//! The surface ports on the CPU ([`crate::model::SurfacePorts`]): after the curl pass and the
//! additive corrections, each edge the ports touch gives up its D increment, each port steps
//! its model from the weighted sum of its stencil's increments, and each edge's E becomes the
//! weighted sum of the outputs of the ports that touch it, in port order.
//!
//! The ports are one list for all the engine's slabs, not one per slab: a port's stencil
//! reaches the planes on either side of its own, and one list stepped in one order gives the
//! same bits however the grid is split into slabs. An engine that holds part of the grid (an
//! MPI rank's planes) steps its own edges' ports and trades the values across its ends with
//! the parts beside it ([`PortLinks`]), twice a step. The ports are few (the surface cells),
//! so the pass is cheap beside the update of the volume. The tables are [`PortLayout`]'s,
//! which the CUDA engine steps in the same order (`kernels/ports.cu`).

use super::{dispersive::Group, Shared, Slab};
use crate::backend::ports::{receive_runs, send_runs, trade_peers, Peer, PortLayout, PortLinks};
use crate::backend::Spread;
use crate::model::SurfacePorts;
use crate::real::{written_zeros, Real};
use std::sync::Arc;

/// Bits of an edge's packed place that hold the offset into its slab's array (the slab index
/// is above them).
const PLACE_BITS: u32 = 48;

/// The port pass's state and tables.
pub(super) struct PortPass<T> {
    ports: Arc<SurfacePorts>,
    /// The tables: models, stencil and gather rows over the virtual cells.
    layout: PortLayout<T>,
    /// Per own edge: its slab and offset into the slab's array of its component, packed as
    /// `slab << PLACE_BITS | offset`.
    place: Vec<u64>,
    /// Per own edge: (ca, 1 / cb) of its painted material (what the curl pass used there).
    edge_coef: Vec<(T, T)>,
    /// Per own edge: its E at the end of the last step; then room for the increments
    /// received from other parts (this buffer and `curl` trade roles every step).
    e_prev: Vec<T>,
    /// Per own edge: this step's D increment over the painted material's cb, then its new
    /// E (scratch); then the increments received from other parts.
    curl: Vec<T>,
    /// Per virtual cell: the model's E before its update (its output a step ago), then its
    /// output; then the outputs received from other parts.
    v: Vec<T>,
    /// Per model of the layout: its material's coefficients and poles.
    models: Vec<ModelPorts<T>>,
    /// The values sent to other parts, packed (increments, outputs): empty in one process.
    send: [Vec<T>; 2],
    /// The trades with the other parts, once linked ([`PortPass::link`]).
    links: Option<Linked<T>>,
}

/// The trades of a part's ports with the other parts ([`PortPass::link`]).
struct Linked<T> {
    links: Box<dyn PortLinks<T>>,
    /// Per trade (increments, outputs): each other part it trades with, with its run of the
    /// values sent and of those received (counted from the first received).
    peers: [Vec<Peer>; 2],
}

/// One model of the ports on the CPU.
struct ModelPorts<T> {
    /// (ca, cb) of its material.
    coef: (T, T),
    /// Its material's poles over its virtual cells (None for a material without).
    poles: Option<Group<T>>,
}

impl<T: Real> PortPass<T> {
    /// The pass for `ports` over `slabs`; None when there are no ports.
    pub fn new(ports: Arc<SurfacePorts>, sh: &Shared<T>, slabs: &[Slab<T>]) -> Option<Self> {
        if ports.is_empty() {
            return None;
        }
        let ranges: Vec<_> = slabs.iter().map(|s| s.range).collect();
        let layout = PortLayout::new(&ports, &ranges, [sh.ny, sh.nz], |m| {
            sh.dispersive[m as usize].is_some()
        });
        let models = layout
            .models
            .iter()
            .map(|m| {
                let n = m.cells.len();
                let poles = sh.dispersive[m.material as usize].as_ref().map(|op| Group {
                    component: 0,
                    material: m.material,
                    cells: (0..n as u32).collect(),
                    e_prev: written_zeros(n),
                    state: written_zeros(n * op.state_len()),
                });
                ModelPorts {
                    coef: sh.coef[m.material as usize],
                    poles,
                }
            })
            .collect();
        let own = layout.own_edges.clone();
        let c = &layout.crossings;
        let (edges, received) = (own.len(), c.edges_in.len());
        let send = [
            written_zeros(layout.send_edges.len()),
            written_zeros(layout.send_cells.len()),
        ];
        let v = written_zeros(layout.cells() + c.ports_in.len());
        let place = layout
            .edge_place
            .iter()
            .map(|&(s, i)| ((s as u64) << PLACE_BITS) | i as u64)
            .collect();
        Some(PortPass {
            edge_coef: ports.painted[own]
                .iter()
                .map(|&m| {
                    let (ca, cb) = sh.coef[m as usize];
                    (ca, T::from_f64(1.0 / cb.to_f64()))
                })
                .collect(),
            place,
            e_prev: written_zeros(edges + received),
            curl: written_zeros(edges + received),
            v,
            models,
            send,
            links: None,
            layout,
            ports,
        })
    }

    /// The slab and offset of edge `q`.
    fn place(&self, q: usize) -> (usize, usize) {
        let p = self.place[q];
        (
            (p >> PLACE_BITS) as usize,
            (p & ((1 << PLACE_BITS) - 1)) as usize,
        )
    }

    /// One step of the ports over `slabs`' E (after the curl pass and the additive
    /// corrections of the E half step). A part of the grid trades with the parts beside it
    /// twice: the increments its neighbours' ports read, then the outputs their edges
    /// gather; every value is still computed once, by the part that owns it, in the order
    /// one process computes it.
    pub fn step(&mut self, sh: &Shared<T>, slabs: &mut [Slab<T>]) {
        use rayon::prelude::*;
        let all_ports = Arc::clone(&self.ports);
        let edges = &all_ports.edges[self.layout.own_edges.clone()];
        let own = edges.len();
        // Each edge's increment, in units of its painted material's cb. (Every value below
        // is computed by one thread in a fixed order, so the bits do not depend on threads.)
        {
            let fields: &[Slab<T>] = slabs;
            let mut curl = std::mem::take(&mut self.curl);
            let this = &*self;
            curl[..own]
                .par_iter_mut()
                .enumerate()
                .for_each(|(q, curl)| {
                    let (s, i) = this.place(q);
                    let (ca, inv_cb) = this.edge_coef[q];
                    let e = fields[s].e[edges[q].component as usize][i];
                    *curl = (e - ca * this.e_prev[q]) * inv_cb;
                });
            self.curl = curl;
        }
        self.trade(0);
        let cells = self.layout.cells();
        // Each virtual cell's drive, the weighted sum of its stencil's increments, into its
        // model's update: its E before the poles (then the poles step it).
        {
            let (l, curl, models) = (&self.layout, &self.curl, &self.models);
            self.v[..cells]
                .par_iter_mut()
                .enumerate()
                .for_each(|(u, v)| {
                    let drive =
                        row_sum(u, &l.stencil_end, &l.stencil_edge, &l.stencil_weight, curl);
                    let m = l.model[u] as usize;
                    let ModelPorts {
                        coef: (ca, cb),
                        poles,
                    } = &models[m];
                    let before = match poles {
                        Some(g) => g.e_prev[u - l.models[m].cells.start],
                        None => *v,
                    };
                    *v = *ca * before + *cb * drive;
                });
        }
        // The models' poles, the models in parallel (each is a few thousand cells, less than
        // one of the dispersive pass's parallel chunks): their cells are consecutive runs.
        {
            let mut rest = &mut self.v[..cells];
            let mut groups = Vec::with_capacity(self.models.len());
            for (m, model) in self.layout.models.iter().zip(&mut self.models) {
                let (cells, tail) = std::mem::take(&mut rest).split_at_mut(m.cells.len());
                rest = tail;
                if let Some(g) = &mut model.poles {
                    groups.push((g, cells));
                }
            }
            groups
                .into_par_iter()
                .for_each(|(g, cells)| g.step(sh, cells));
        }
        self.trade(1);
        // Each edge's E: the outputs of the ports that touch it, in port order (into `curl`,
        // which is free now, then into the slabs).
        {
            let (l, v) = (&self.layout, &self.v);
            self.curl[..own]
                .par_iter_mut()
                .enumerate()
                .for_each(|(q, out)| {
                    *out = row_sum(q, &l.gather_end, &l.gather_cell, &l.gather_weight, v);
                });
        }
        // The new E is next step's E at the last step; the old one's buffer is the next
        // increments' scratch.
        std::mem::swap(&mut self.e_prev, &mut self.curl);
        for (q, edge) in edges.iter().enumerate() {
            let (s, i) = self.place(q);
            slabs[s].e[edge.component as usize][i] = self.e_prev[q];
        }
    }

    /// Trade `phase` with the other parts (0: the increments into `curl` after the own
    /// edges', 1: the outputs into `v` after the own cells'); nothing in one process.
    fn trade(&mut self, phase: usize) {
        let Some(linked) = &mut self.links else {
            assert!(
                self.layout.crossings.is_empty(),
                "a part of the grid whose ports trade with others is linked first"
            );
            return;
        };
        let (sent, values, start) = if phase == 0 {
            let own = self.layout.own_edges.len();
            (&self.layout.send_edges, &mut self.curl, own)
        } else {
            (&self.layout.send_cells, &mut self.v, self.layout.cells())
        };
        let send = &mut self.send[phase];
        for (out, &i) in send.iter_mut().zip(sent) {
            *out = values[i as usize];
        }
        let peers = &linked.peers[phase];
        let sends = send_runs(send, peers);
        let mut receives = receive_runs(&mut values[start..], peers);
        linked.links.trade(phase, &sends, &mut receives);
    }

    /// Trade with the other parts of the grid through `links` (an MPI rank's neighbours):
    /// each part's run of the values received (those it holds, in order), and of the values
    /// sent (to the part below the first plane, then to the part above the last).
    pub fn link(&mut self, links: Box<dyn PortLinks<T>>) {
        let l = &self.layout;
        let part_of_x = |x: usize| links.part_of_x(x);
        let peers = trade_peers(&l.crossings, &self.ports, l.planes.clone(), &part_of_x);
        self.links = Some(Linked { links, peers });
    }

    /// Bytes the pass holds for slab `s` (an index into the slabs it was made for): the
    /// edges, ports and entries whose own edge lies in the slab, counted from its arrays as
    /// [`crate::model::PortCounts::bytes`] counts them from the model's ports.
    pub fn slab_bytes(&self, s: usize) -> u64 {
        let t = std::mem::size_of::<T>();
        let state_len = |material: u8| {
            let m = self
                .layout
                .models
                .iter()
                .position(|m| m.material == material);
            m.and_then(|m| self.models[m].poles.as_ref())
                .map_or(0, |g| g.state.len() / g.e_prev.len().max(1))
        };
        self.layout.slab_counts(s, state_len).bytes(t)
    }

    /// Bytes the pass holds for its trades with other parts (nothing in one process), counted
    /// from its arrays as [`crate::model::PortCrossings::bytes`] counts them: the room for
    /// the values received, the packed values sent and their indices.
    pub fn crossing_bytes(&self) -> u64 {
        let t = std::mem::size_of::<T>();
        let own = self.layout.own_edges.len();
        let received = (self.e_prev.len() - own)
            + (self.curl.len() - own)
            + (self.v.len() - self.layout.cells());
        let sent = self.send[0].len() + self.send[1].len();
        let indices = self.layout.send_edges.len() + self.layout.send_cells.len();
        ((received + sent) * t + indices * 4) as u64
    }
}

/// The other parts of a trade, in part order, from the runs of the values sent to each and
/// of those received from each.
/// Row `r` of compressed rows (`ends`, `index`, `weight`) applied to `values`: the sum, from
/// zero in the row's order, of each weight times the value it indexes (the order
/// `kernels/ports.cu` sums in).
fn row_sum<T: Real>(r: usize, ends: &[u32], index: &[u32], weight: &[T], values: &[T]) -> T {
    let start = if r == 0 { 0 } else { ends[r - 1] as usize };
    let row = start..ends[r] as usize;
    let mut sum = T::ZERO;
    for (w, &i) in weight[row.clone()].iter().zip(&index[row]) {
        sum += *w * values[i as usize];
    }
    sum
}

impl<T: Real> PortPass<T> {
    /// The state of slab `s`'s ports, by name ([`crate::backend::pass::arrays`]): per model,
    /// the ports' output E and their poles' state, over the ports whose own edge lies in the
    /// slab. (The edges' E at the last step is the field itself between steps, so it is not
    /// saved: [`PortPass::after_import`] takes it from the fields.)
    pub fn slab_arrays(&self, s: usize) -> Vec<(String, Spread, Vec<T>)> {
        use crate::backend::pass::arrays::{port_poles, port_values};
        let mut out = Vec::new();
        for (m, (model, ports)) in self.layout.models.iter().zip(&self.models).enumerate() {
            let poles = &ports.poles;
            let r = self.layout.slab_cells[s][m].clone();
            if r.is_empty() {
                continue;
            }
            let (name, spread) = port_values(model.material);
            let values = match poles {
                Some(g) => g.e_prev[r.clone()].to_vec(),
                None => self.v[model.cells.start + r.start..model.cells.start + r.end].to_vec(),
            };
            out.push((name, spread, values));
            if let Some(g) = poles {
                let n = g.e_prev.len();
                let slots = g.state.len() / n;
                let (name, spread) = port_poles(model.material, slots);
                let values = (0..slots)
                    .flat_map(|k| g.state[k * n + r.start..k * n + r.end].iter().copied())
                    .collect();
                out.push((name, spread, values));
            }
        }
        out
    }

    /// Write slab `s`'s ports' state from `read` (the saved array of each name
    /// [`PortPass::slab_arrays`] gives).
    pub fn restore_slab(
        &mut self,
        s: usize,
        read: &dyn Fn(&str) -> Option<Vec<T>>,
    ) -> Result<(), String> {
        use crate::backend::pass::arrays::{port_poles, port_values};
        for (m, (model, ports)) in self.layout.models.iter().zip(&mut self.models).enumerate() {
            let poles = &mut ports.poles;
            let r = self.layout.slab_cells[s][m].clone();
            if r.is_empty() {
                continue;
            }
            let name = port_values(model.material).0;
            let saved = read(&name).ok_or_else(|| format!("the saved state lacks `{name}`"))?;
            match poles {
                Some(g) => g.e_prev[r.clone()].copy_from_slice(&saved),
                None => self.v[model.cells.start + r.start..model.cells.start + r.end]
                    .copy_from_slice(&saved),
            }
            if let Some(g) = poles {
                let n = g.e_prev.len();
                let slots = g.state.len() / n;
                let name = port_poles(model.material, slots).0;
                let saved = read(&name).ok_or_else(|| format!("the saved state lacks `{name}`"))?;
                let len = r.len();
                for k in 0..slots {
                    g.state[k * n + r.start..k * n + r.end]
                        .copy_from_slice(&saved[k * len..(k + 1) * len]);
                }
            }
        }
        Ok(())
    }

    /// After the fields were replaced: each edge's E at the last step is its field now.
    pub fn after_import(&mut self, slabs: &[Slab<T>]) {
        let own = self.layout.own_edges.clone();
        for (q, e) in self.ports.edges[own].iter().enumerate() {
            let (s, i) = self.place(q);
            self.e_prev[q] = slabs[s].e[e.component as usize][i];
        }
    }
}
