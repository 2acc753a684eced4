//! The surface ports' tables as every backend holds them ([`crate::model::SurfacePorts`]): the
//! ports renumbered as virtual cells, model by model, so that each model's cells are one run
//! a dispersive update steps like a group of real cells; the stencils and gathers in compressed
//! rows over that numbering; each edge's slab and place.
//!
//! The CPU pass (`cpu/ports.rs`) and the CUDA engine's (`cuda/engine/ports.rs`) both step
//! these tables in the same order, so they agree bit for bit: per edge its increment; per
//! virtual cell its drive, summed over its stencil row in order, and its model's update; per
//! edge its E, summed over its gather row in order (the ports that touch it, in port order).

use crate::decomp::SlabRange;
use crate::model::SurfacePorts;
use crate::real::Real;
use std::ops::Range;

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
    /// Per edge: the end of its gather row.
    pub gather_end: Vec<u32>,
    /// The gather rows: the virtual cell and its weight, in port order.
    pub gather_cell: Vec<u32>,
    /// See `gather_cell`.
    pub gather_weight: Vec<T>,
    /// Per edge: its slab (an index into the slab ranges) and its offset into that slab's
    /// array of its component (the left halo plane is plane 0).
    pub edge_place: Vec<(usize, usize)>,
    /// Per slab, per model: the run of the model's cells whose own edge lies in the slab,
    /// counted from the model's first cell (ports are in edge order and edges in x order, so
    /// a slab's cells of a model are one run).
    pub slab_cells: Vec<Vec<Range<usize>>>,
}

impl<T: Real> PortLayout<T> {
    /// The tables of `ports` over slabs `ranges` (tiling the planes the edges lie in) of a
    /// grid `ny` x `nz`; `has_poles` says which materials have poles.
    pub fn new(
        ports: &SurfacePorts,
        ranges: &[SlabRange],
        [ny, nz]: [usize; 2],
        has_poles: impl Fn(u8) -> bool,
    ) -> Self {
        let plane = ny * nz;
        let edge_place: Vec<(usize, usize)> = ports
            .edges
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
        // The models in order of their first port, then those with poles moved first.
        let mut ids: Vec<u8> = Vec::new();
        for port in &ports.ports {
            if !ids.contains(&port.model) {
                ids.push(port.model);
            }
        }
        ids.sort_by_key(|&id| !has_poles(id));
        let mut counts = vec![0usize; ids.len()];
        let model_of: Vec<usize> = ports
            .ports
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
        let (stencil_end, stencil_edge, stencil_weight) = csr(port_at
            .iter()
            .map(|&p| ports.ports[p].stencil.iter().copied()));
        let (gather_end, gather_cell, gather_weight) = csr(ports
            .gather
            .iter()
            .map(|g| g.iter().map(|&(p, w)| (cell_of[p as usize] as u32, w))));
        let mut slab_cells = vec![vec![0..0; models.len()]; ranges.len()];
        for (p, port) in ports.ports.iter().enumerate() {
            let m = model_of[p];
            let k = cell_of[p] - models[m].cells.start;
            let (s, _) = edge_place[port.stencil[0].0 as usize];
            let r: &mut Range<usize> = &mut slab_cells[s][m];
            if r.start == r.end {
                *r = k..k;
            }
            debug_assert_eq!(r.end, k, "a slab's cells of a model are one run");
            r.end = k + 1;
        }
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
