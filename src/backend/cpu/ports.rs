//! The surface ports on the CPU ([`crate::model::SurfacePorts`]): after the curl pass and the
//! additive corrections, each edge the ports touch gives up its D increment, each port steps
//! its model from the weighted sum of its stencil's increments, and each edge's E becomes the
//! weighted sum of the outputs of the ports that touch it, in port order.
//!
//! The ports are one list for the whole grid, not one per slab: a port's stencil reaches the
//! planes on either side of its own, and one list stepped in one order gives the same bits
//! however the grid is split into slabs. They are few (the surface cells), so the pass is
//! cheap beside the update of the volume.

use super::{dispersive::Group, Shared, Slab};
use crate::backend::Spread;
use crate::model::SurfacePorts;
use crate::real::{written_zeros, Real};
use std::sync::Arc;

/// The ports of one model material: their virtual cells, stepped as that material's cells.
struct ModelPorts<T> {
    /// The material id.
    material: u8,
    /// (ca, cb) of the material.
    coef: (T, T),
    /// The ports' values: the drive's E before the material's update, then its output.
    v: Vec<T>,
    /// The material's poles over the ports' virtual cells (None for a material without).
    poles: Option<Group<T>>,
}

/// The port pass's state and tables.
pub(super) struct PortPass<T> {
    ports: Arc<SurfacePorts>,
    /// Per edge: (slab, index into the slab's array of its component, halo plane included).
    at: Vec<(usize, usize)>,
    /// Per edge: (ca, 1 / cb) of its painted material (what the curl pass used there).
    edge_coef: Vec<(T, T)>,
    /// Per edge: its E at the end of the last step.
    e_prev: Vec<T>,
    /// Per edge: this step's D increment over the painted material's cb, then its new E
    /// (scratch).
    curl: Vec<T>,
    /// Per port: this step's drive (scratch).
    drive: Vec<T>,
    /// Per port: (index into `models`, index of its virtual cell).
    slot: Vec<(u32, u32)>,
    /// Per port: the end of its entries in `stencil_edge` and `stencil_weight` (the start is
    /// the previous port's end).
    stencil_end: Vec<u32>,
    /// The ports' stencils, port after port: the edge and its weight in the run's precision.
    stencil_edge: Vec<u32>,
    stencil_weight: Vec<T>,
    /// Per edge: the end of its entries in `gather_port` and `gather_weight`.
    gather_end: Vec<u32>,
    /// The edges' gathers, edge after edge: the port and its weight, in port order.
    gather_port: Vec<u32>,
    gather_weight: Vec<T>,
    models: Vec<ModelPorts<T>>,
    /// Per slab, per model: the range of its virtual cells whose own edge lies in the slab
    /// (ports are in edge order, edges in x order, so each slab's are one run).
    slab_ports: Vec<Vec<std::ops::Range<usize>>>,
}

impl<T: Real> PortPass<T> {
    /// The pass for `ports` over `slabs`; None when there are no ports.
    pub fn new(ports: Arc<SurfacePorts>, sh: &Shared<T>, slabs: &[Slab<T>]) -> Option<Self> {
        if ports.is_empty() {
            return None;
        }
        let plane = sh.ny * sh.nz;
        let at: Vec<(usize, usize)> = ports
            .edges
            .iter()
            .map(|e| {
                let [i, j, k] = e.cell.map(|v| v as usize);
                let s = slabs
                    .iter()
                    .position(|s| s.range.x0 <= i && i < s.range.x1)
                    .expect("a port edge lies in a slab");
                (s, (i - slabs[s].range.x0 + 1) * plane + j * sh.nz + k)
            })
            .collect();
        let mut models: Vec<ModelPorts<T>> = Vec::new();
        let mut ids: Vec<u8> = Vec::new();
        let mut slot = Vec::with_capacity(ports.ports.len());
        for port in &ports.ports {
            let m = match ids.iter().position(|&id| id == port.model) {
                Some(m) => m,
                None => {
                    ids.push(port.model);
                    models.push(ModelPorts {
                        material: port.model,
                        coef: sh.coef[port.model as usize],
                        v: Vec::new(),
                        poles: None,
                    });
                    models.len() - 1
                }
            };
            slot.push((m as u32, models[m].v.len() as u32));
            models[m].v.push(T::ZERO);
        }
        for (m, &id) in models.iter_mut().zip(&ids) {
            if let Some(op) = &sh.dispersive[id as usize] {
                let n = m.v.len();
                m.poles = Some(Group {
                    component: 0,
                    material: id,
                    cells: (0..n as u32).collect(),
                    e_prev: written_zeros(n),
                    state: written_zeros(n * op.state_len()),
                });
            }
        }
        let mut slab_ports = vec![vec![0..0; models.len()]; slabs.len()];
        for (port, &(m, k)) in ports.ports.iter().zip(&slot) {
            let (m, k) = (m as usize, k as usize);
            let (s, _) = at[port.stencil[0].0 as usize];
            let r: &mut std::ops::Range<usize> = &mut slab_ports[s][m];
            if r.start == r.end {
                *r = k..k;
            }
            debug_assert_eq!(r.end, k, "a slab's ports of a model are one run");
            r.end = k + 1;
        }
        let (stencil_end, stencil_edge, stencil_weight) =
            csr(ports.ports.iter().map(|p| &p.stencil[..]));
        let (gather_end, gather_port, gather_weight) = csr(ports.gather.iter().map(|g| &g[..]));
        Some(PortPass {
            at,
            edge_coef: ports
                .painted
                .iter()
                .map(|&m| {
                    let (ca, cb) = sh.coef[m as usize];
                    (ca, T::from_f64(1.0 / cb.to_f64()))
                })
                .collect(),
            e_prev: written_zeros(ports.edges.len()),
            curl: written_zeros(ports.edges.len()),
            drive: written_zeros(ports.ports.len()),
            slot,
            stencil_end,
            stencil_edge,
            stencil_weight,
            gather_end,
            gather_port,
            gather_weight,
            models,
            slab_ports,
            ports,
        })
    }

    /// One step of the ports over `slabs`' E (after the curl pass and the additive
    /// corrections of the E half step).
    pub fn step(&mut self, sh: &Shared<T>, slabs: &mut [Slab<T>]) {
        use rayon::prelude::*;
        let edges = &self.ports.edges;
        // Each edge's increment, in units of its painted material's cb. (Every value below
        // is computed by one thread in a fixed order, so the bits do not depend on threads.)
        {
            let (at, coef, e_prev) = (&self.at, &self.edge_coef, &self.e_prev);
            let fields: &[Slab<T>] = slabs;
            self.curl.par_iter_mut().enumerate().for_each(|(q, curl)| {
                let (s, i) = at[q];
                let (ca, inv_cb) = coef[q];
                let e = fields[s].e[edges[q].component as usize][i];
                *curl = (e - ca * e_prev[q]) * inv_cb;
            });
        }
        // Each port's drive: the weighted sum of its stencil's increments.
        {
            let (ends, index, weight, curl) = (
                &self.stencil_end,
                &self.stencil_edge,
                &self.stencil_weight,
                &self.curl,
            );
            self.drive
                .par_iter_mut()
                .enumerate()
                .for_each(|(p, drive)| {
                    let start = if p == 0 { 0 } else { ends[p - 1] as usize };
                    let mut sum = T::ZERO;
                    for q in start..ends[p] as usize {
                        sum += weight[q] * curl[index[q] as usize];
                    }
                    *drive = sum;
                });
        }
        // Into each model's update: its E before the poles, then the poles.
        for (p, &(m, k)) in self.slot.iter().enumerate() {
            let model = &mut self.models[m as usize];
            let k = k as usize;
            let (ca, cb) = model.coef;
            let before = match &model.poles {
                Some(g) => g.e_prev[k],
                None => model.v[k],
            };
            model.v[k] = ca * before + cb * self.drive[p];
        }
        for model in &mut self.models {
            if let Some(g) = &mut model.poles {
                g.step(sh, &mut model.v);
            }
        }
        // Each edge's E: the outputs of the ports that touch it, in port order (into `curl`,
        // which is free now, then into the slabs).
        {
            let (ends, index, weight, slot, models) = (
                &self.gather_end,
                &self.gather_port,
                &self.gather_weight,
                &self.slot,
                &self.models,
            );
            self.curl.par_iter_mut().enumerate().for_each(|(q, out)| {
                let start = if q == 0 { 0 } else { ends[q - 1] as usize };
                let mut e = T::ZERO;
                for g in start..ends[q] as usize {
                    let (m, k) = slot[index[g] as usize];
                    e += weight[g] * models[m as usize].v[k as usize];
                }
                *out = e;
            });
        }
        for (q, edge) in edges.iter().enumerate() {
            let (s, i) = self.at[q];
            slabs[s].e[edge.component as usize][i] = self.curl[q];
            self.e_prev[q] = self.curl[q];
        }
    }

    /// Bytes the pass holds for slab `s` (an index into the slabs it was made for): the
    /// edges, ports and entries whose own edge lies in the slab, counted from its arrays as
    /// [`crate::model::PortCounts::bytes`] counts them from the model's ports.
    pub fn slab_bytes(&self, s: usize) -> u64 {
        let t = std::mem::size_of::<T>() as u64;
        let mut counts = crate::model::PortCounts::default();
        let mut start = 0;
        for (q, &(slab, _)) in self.at.iter().enumerate() {
            let end = self.gather_end[q] as usize;
            if slab == s {
                counts.edges += 1;
                counts.gather_entries += (end - start) as u64;
            }
            start = end;
        }
        let mut start = 0;
        for (p, &end) in self.stencil_end.iter().enumerate() {
            let end = end as usize;
            if self.at[self.stencil_edge[start] as usize].0 == s {
                counts.ports += 1;
                counts.stencil_entries += (end - start) as u64;
                let (m, _) = self.slot[p];
                if let Some(g) = &self.models[m as usize].poles {
                    counts.pole_ports += 1;
                    counts.pole_values += (g.state.len() / g.e_prev.len()) as u64;
                }
            }
            start = end;
        }
        counts.bytes(t as usize)
    }
}

/// The lists `lists` back to back, in compressed rows: (each list's end, the indices, the
/// weights in the run's precision).
fn csr<'a, T: Real>(lists: impl Iterator<Item = &'a [(u32, f64)]>) -> (Vec<u32>, Vec<u32>, Vec<T>) {
    let (mut ends, mut index, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    for list in lists {
        for &(i, w) in list {
            index.push(i);
            weight.push(T::from_f64(w));
        }
        ends.push(index.len() as u32);
    }
    (ends, index, weight)
}

impl<T: Real> PortPass<T> {
    /// The state of slab `s`'s ports, by name ([`crate::backend::pass::arrays`]): per model,
    /// the ports' output E and their poles' state, over the ports whose own edge lies in the
    /// slab. (The edges' E at the last step is the field itself between steps, so it is not
    /// saved: [`PortPass::after_import`] takes it from the fields.)
    pub fn slab_arrays(&self, s: usize) -> Vec<(String, Spread, Vec<T>)> {
        use crate::backend::pass::arrays::{port_poles, port_values};
        let mut out = Vec::new();
        for (m, model) in self.models.iter().enumerate() {
            let r = self.slab_ports[s][m].clone();
            if r.is_empty() {
                continue;
            }
            let (name, spread) = port_values(model.material);
            let values = match &model.poles {
                Some(g) => g.e_prev[r.clone()].to_vec(),
                None => model.v[r.clone()].to_vec(),
            };
            out.push((name, spread, values));
            if let Some(g) = &model.poles {
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
        for (m, model) in self.models.iter_mut().enumerate() {
            let r = self.slab_ports[s][m].clone();
            if r.is_empty() {
                continue;
            }
            let name = port_values(model.material).0;
            let saved = read(&name).ok_or_else(|| format!("the saved state lacks `{name}`"))?;
            match &mut model.poles {
                Some(g) => g.e_prev[r.clone()].copy_from_slice(&saved),
                None => model.v[r.clone()].copy_from_slice(&saved),
            }
            if let Some(g) = &mut model.poles {
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
            let (s, i) = self.at[q];
            self.e_prev[q] = slabs[s].e[e.component as usize][i];
        }
    }
}
