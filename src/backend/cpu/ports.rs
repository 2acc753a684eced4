//! The surface ports on the CPU ([`crate::model::SurfacePorts`]): after the curl pass and the
//! additive corrections, each edge the ports touch gives up its D increment, each port steps
//! its model from the weighted sum of its stencil's increments, and each edge's E becomes the
//! weighted sum of the outputs of the ports that touch it, in port order.
//!
//! The ports are one list for the whole grid, not one per slab: a port's stencil reaches the
//! planes on either side of its own, and one list stepped in one order gives the same bits
//! however the grid is split into slabs. They are few (the surface cells), so the pass is
//! cheap beside the update of the volume. The tables are [`PortLayout`]'s, which the CUDA
//! engine steps in the same order (`kernels/ports.cu`).

use super::{dispersive::Group, Shared, Slab};
use crate::backend::ports::PortLayout;
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
    /// Per edge: its slab and offset into the slab's array of its component, packed as
    /// `slab << PLACE_BITS | offset`.
    place: Vec<u64>,
    /// Per edge: (ca, 1 / cb) of its painted material (what the curl pass used there).
    edge_coef: Vec<(T, T)>,
    /// Per edge: its E at the end of the last step.
    e_prev: Vec<T>,
    /// Per edge: this step's D increment over the painted material's cb, then its new E
    /// (scratch).
    curl: Vec<T>,
    /// Per virtual cell: the model's E before its update (its output a step ago), then its
    /// output.
    v: Vec<T>,
    /// Per model of the layout: its material's coefficients and poles.
    models: Vec<ModelPorts<T>>,
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
        let place = layout
            .edge_place
            .iter()
            .map(|&(s, i)| ((s as u64) << PLACE_BITS) | i as u64)
            .collect();
        let edges = ports.edges.len();
        Some(PortPass {
            edge_coef: ports
                .painted
                .iter()
                .map(|&m| {
                    let (ca, cb) = sh.coef[m as usize];
                    (ca, T::from_f64(1.0 / cb.to_f64()))
                })
                .collect(),
            place,
            e_prev: written_zeros(edges),
            curl: written_zeros(edges),
            v: written_zeros(layout.cells()),
            models,
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
    /// corrections of the E half step).
    pub fn step(&mut self, sh: &Shared<T>, slabs: &mut [Slab<T>]) {
        use rayon::prelude::*;
        let edges = &self.ports.edges;
        // Each edge's increment, in units of its painted material's cb. (Every value below
        // is computed by one thread in a fixed order, so the bits do not depend on threads.)
        {
            let fields: &[Slab<T>] = slabs;
            let mut curl = std::mem::take(&mut self.curl);
            let this = &*self;
            curl.par_iter_mut().enumerate().for_each(|(q, curl)| {
                let (s, i) = this.place(q);
                let (ca, inv_cb) = this.edge_coef[q];
                let e = fields[s].e[edges[q].component as usize][i];
                *curl = (e - ca * this.e_prev[q]) * inv_cb;
            });
            self.curl = curl;
        }
        // Each virtual cell's drive, the weighted sum of its stencil's increments, into its
        // model's update: its E before the poles (then the poles step it).
        {
            let (l, curl, models) = (&self.layout, &self.curl, &self.models);
            self.v.par_iter_mut().enumerate().for_each(|(u, v)| {
                let drive = row_sum(u, &l.stencil_end, &l.stencil_edge, &l.stencil_weight, curl);
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
            let mut rest = &mut self.v[..];
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
        // Each edge's E: the outputs of the ports that touch it, in port order (into `curl`,
        // which is free now, then into the slabs).
        {
            let (l, v) = (&self.layout, &self.v);
            self.curl.par_iter_mut().enumerate().for_each(|(q, out)| {
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
}

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
        for (q, e) in self.ports.edges.iter().enumerate() {
            let (s, i) = self.place(q);
            self.e_prev[q] = slabs[s].e[e.component as usize][i];
        }
    }
}
