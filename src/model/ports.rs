//! Surface ports: the averaged permittivity tensor at a dispersive metal's curved surface, as a
//! sum of passive ports.
//!
//! At a curved interface between a metal with poles and a dielectric, every diagonal mixture
//! is a cell resonance at some frequency (`super::smoothing`), so the smoothing refuses them
//! and such a cell keeps its centre's material. The averaged tensor
//! `<eps>^-1 (1 - n n^T) + <1/eps> n n^T` is placed there instead, as two passive parts per E
//! component (`docs/geometry.md`, "The averaged tensor as a sum of passive ports"):
//!
//! - the tangential port: drive `D_c - n_c (n . D)`, model `1/<eps>` (the mean by fraction),
//!   its output added back to E along the same weights: `1 - n_c^2` to E_c and
//!   `-n_c n_d / 4` to each of the four nearest E_d;
//! - the normal port: drive `s (n . D)` with `s^2 = 1/3`, model `f/eps_m + (1 - f)/eps_d` (the
//!   two materials in series), back with weights `s n_c` and `s n_d / 4`.
//!
//! In `n . D` the other two components of D are the means of their four nearest. Each port is
//! a term `b k(b . D)`, passive whatever the sign of the metal's eps, so their sum cannot grow.
//! For one material and smooth fields the ports sum to `E = D / eps` only where every edge a
//! port's stencil reaches is a port too: so the edges the surface ports reach get ports of
//! their own material (the ring, with the normal of the surface ports that reach them), and
//! the edges the ring reaches get a plain port (`E = D / eps` alone).
//!
//! A port is a virtual cell of its model's material, stepped by the dispersive update of that
//! material from its drive; an edge's E is the weighted sum of the outputs of the ports that
//! touch it, gathered in port order (so every backend and decomposition adds them in the same
//! order). The edges are the ports' only E: the curl pass's increment there is a drive.

use super::{CellShares, Component, Model};
use std::collections::HashMap;

/// One E edge the ports touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortEdge {
    /// Global x, y, z index of the component's cell (x first: edges sort by plane).
    pub cell: [u32; 3],
    /// 0, 1, 2 for Ex, Ey, Ez.
    pub component: u8,
}

/// What kind of port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// The tangential part of a surface or ring edge.
    Tangential,
    /// The normal part of a surface or ring edge.
    Normal,
    /// An edge the ring reaches: its own material alone.
    Plain,
}

/// One port: a scalar model driven by a weighted sum of the D increments of its stencil's
/// edges and added back to the same edges with the same weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    /// The model's material id (an entry of the material table: a mixture for a surface edge,
    /// the edge's own material otherwise).
    pub model: u8,
    /// Which part.
    pub kind: PortKind,
    /// (edge index, weight) of its stencil: the edge first, then its neighbours.
    pub stencil: Vec<(u32, f64)>,
}

/// The surface ports of a model ([`Model::surface_ports`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SurfacePorts {
    /// Every edge a port touches, sorted (by x plane first).
    pub edges: Vec<PortEdge>,
    /// Per edge, the material its cell is painted with (the curl pass's coefficients there).
    pub painted: Vec<u8>,
    /// The ports, in edge order (per edge: tangential then normal, or plain).
    pub ports: Vec<Port>,
    /// Per edge, the (port index, weight) of every port that touches it, in port order.
    pub gather: Vec<Vec<(u32, f64)>>,
    /// Edges with surface ports (the others are ring or plain edges).
    pub surface_edges: usize,
}

/// What the surface ports hold in one x plane ([`SurfacePorts::plane_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounts {
    /// Edges.
    pub edges: u64,
    /// Ports.
    pub ports: u64,
    /// (edge, weight) entries of the ports' stencils.
    pub stencil_entries: u64,
    /// (port, weight) entries of the edges' gathers.
    pub gather_entries: u64,
    /// Ports whose model has poles.
    pub pole_ports: u64,
    /// Their poles' state values.
    pub pole_values: u64,
}

impl PortCounts {
    /// Bytes a backend holds for these in precision `real` (bytes per value), as
    /// `crate::backend::ports::PortLayout` lays them out: per edge its place (one u64), its
    /// material's ca and 1/cb, E at the last step, the increment, and the end of its gather
    /// (u32); per stencil or gather entry a u32 index and a weight; per port (a virtual cell)
    /// its model and the end of its stencil (two u32) and its value; per port with poles a
    /// u32 cell, E at the last step and the state.
    pub fn bytes(&self, real: usize) -> u64 {
        let r = real as u64;
        self.edges * (8 + 4 * r + 4)
            + (self.stencil_entries + self.gather_entries) * (4 + r)
            + self.ports * (8 + r)
            + self.pole_ports * (4 + r)
            + self.pole_values * r
    }

    /// The sum of two counts.
    pub fn add(&mut self, other: &PortCounts) {
        self.edges += other.edges;
        self.ports += other.ports;
        self.stencil_entries += other.stencil_entries;
        self.gather_entries += other.gather_entries;
        self.pole_ports += other.pole_ports;
        self.pole_values += other.pole_values;
    }
}

/// What the ports of a part of the grid (an MPI rank's x planes) trade with the other parts
/// ([`SurfacePorts::crossings`]), each list of global indices sorted. A port belongs to the
/// part that holds its own edge (its stencil's first); its stencil and the ports an edge
/// gathers reach one plane across, so a part trades with the parts beside it only: it
/// receives from the part that holds a value and sends to the part below its first plane
/// (side 0) or above its last (side 1). What one part sends another is what the other
/// receives from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortCrossings {
    /// Other parts' edges whose increments the part's ports read (it receives them).
    pub edges_in: Vec<u32>,
    /// The part's edges whose increments the ports of the part on each side read.
    pub edges_out: [Vec<u32>; 2],
    /// Other parts' ports whose outputs the part's edges gather (it receives them).
    pub ports_in: Vec<u32>,
    /// The part's ports whose outputs the edges of the part on each side gather.
    pub ports_out: [Vec<u32>; 2],
}

impl PortCrossings {
    /// Bytes a backend holds for these in precision `real` (bytes per value): per value
    /// received its place beside the part's own values (twice for an increment: the edges'
    /// increments and their E at the last step share two buffers that trade roles every
    /// step); per value sent its local index (a u32) and its place in the send buffer.
    pub fn bytes(&self, real: usize) -> u64 {
        let r = real as u64;
        let received = (2 * self.edges_in.len() + self.ports_in.len()) as u64;
        received * r + self.sent() as u64 * (4 + r)
    }

    /// Bytes the CUDA engine holds for these on a part's GPU in precision `real`: per value
    /// received its place beside the part's own values, per value sent its address (the pack
    /// kernel reads through a pointer) and its place in the send buffer.
    pub fn gpu_bytes(&self, real: usize) -> u64 {
        let r = real as u64;
        let received = (self.edges_in.len() + self.ports_in.len()) as u64;
        received * r + self.sent() as u64 * (8 + r)
    }

    /// Edges' increments sent, both sides.
    pub fn sent_edges(&self) -> usize {
        self.edges_out.iter().map(Vec::len).sum()
    }

    /// Ports' outputs sent, both sides.
    pub fn sent_ports(&self) -> usize {
        self.ports_out.iter().map(Vec::len).sum()
    }

    /// Values sent, both trades and both sides.
    pub fn sent(&self) -> usize {
        self.edges_out
            .iter()
            .chain(&self.ports_out)
            .map(Vec::len)
            .sum()
    }

    /// True when the part trades nothing (one process, or ports far from its planes' ends).
    pub fn is_empty(&self) -> bool {
        self.edges_in.is_empty() && self.ports_in.is_empty() && self.sent() == 0
    }
}

impl SurfacePorts {
    /// Bytes the CUDA engine holds on the GPUs for the trades of the ports over GPUs whose
    /// parts of the grid are the x plane runs `parts` (in x order), in precision `real`
    /// ([`PortCrossings::gpu_bytes`] of each part, which trades with the parts beside it in
    /// this process or in others): nothing on one GPU that holds the whole grid.
    pub fn gpu_trade_bytes(&self, parts: &[std::ops::Range<usize>], real: usize) -> u64 {
        parts
            .iter()
            .map(|p| self.crossings(p.clone()).gpu_bytes(real))
            .sum()
    }

    /// Pinned host bytes those trades stage through between GPUs without peer access: each
    /// part's values sent, once.
    pub fn staged_trade_bytes(&self, parts: &[std::ops::Range<usize>], real: usize) -> u64 {
        if parts.len() < 2 {
            return 0;
        }
        parts
            .iter()
            .map(|p| (self.crossings(p.clone()).sent() * real) as u64)
            .sum()
    }
}

/// Models whose coefficients one GPU launch of the ports' drives takes in its arguments
/// (`MAX_PORT_MODELS` of `kernels/common.cuh`): a model with more takes more launches.
pub const PORT_MODELS_PER_LAUNCH: usize = 32;

/// The weight of each component's normal port: the normal part is shared equally.
const NORMAL_SHARE: f64 = 1.0 / 3.0;

impl SurfacePorts {
    /// The ports of `model`: empty unless it has a dispersive pair whose curved surface the
    /// smoothing refuses.
    pub fn of(model: &Model) -> SurfacePorts {
        let surface = surface_edges(model);
        if surface.is_empty() {
            return SurfacePorts::default();
        }
        let shape = model.grid.shape;
        let normals: HashMap<PortEdge, [f64; 3]> =
            surface.iter().map(|(e, s)| (*e, s.normal)).collect();
        // The ring: edges the surface ports reach that have no port, with the normals of the
        // surface ports that reach them (aligned to the first).
        let mut ring: HashMap<PortEdge, [f64; 3]> = HashMap::new();
        for (edge, _) in &surface {
            let n = normals[edge];
            for next in neighbours(*edge, shape).into_iter().flatten() {
                if normals.contains_key(&next) {
                    continue;
                }
                let sum = ring.entry(next).or_insert([0.0; 3]);
                let sign = if dot(*sum, n) < 0.0 { -1.0 } else { 1.0 };
                (0..3).for_each(|a| sum[a] += sign * n[a]);
            }
        }
        let ring: HashMap<PortEdge, [f64; 3]> = ring
            .into_iter()
            .map(|(e, n)| (e, unit(n).unwrap_or([0.0, 0.0, 1.0])))
            .collect();
        let mut plain = Vec::new();
        for edge in ring.keys() {
            for next in neighbours(*edge, shape).into_iter().flatten() {
                if !normals.contains_key(&next) && !ring.contains_key(&next) {
                    plain.push(next);
                }
            }
        }
        let models: HashMap<PortEdge, (u8, u8)> =
            surface.iter().map(|(e, m)| (*e, m.models)).collect();
        let mut edges: Vec<PortEdge> = normals.keys().chain(ring.keys()).copied().collect();
        edges.extend(plain);
        edges.sort_unstable();
        edges.dedup();
        let index: HashMap<PortEdge, u32> = edges
            .iter()
            .enumerate()
            .map(|(i, e)| (*e, i as u32))
            .collect();
        let painted = painted_ids(model, &edges);
        let mut ports = Vec::new();
        for (q, edge) in edges.iter().enumerate() {
            let own = painted[q];
            let (normal, (tangential_model, normal_model)) =
                match (normals.get(edge), ring.get(edge)) {
                    (Some(n), _) => (*n, models[edge]),
                    (None, Some(n)) => (*n, (own, own)),
                    (None, None) => {
                        ports.push(Port {
                            model: own,
                            kind: PortKind::Plain,
                            stencil: vec![(q as u32, 1.0)],
                        });
                        continue;
                    }
                };
            let [t, s] = stencil_weights(*edge, normal, shape);
            let resolve = |w: Vec<(PortEdge, f64)>| {
                w.into_iter()
                    .map(|(e, w)| (index[&e], w))
                    .collect::<Vec<_>>()
            };
            ports.push(Port {
                model: tangential_model,
                kind: PortKind::Tangential,
                stencil: resolve(t),
            });
            ports.push(Port {
                model: normal_model,
                kind: PortKind::Normal,
                stencil: resolve(s),
            });
        }
        let mut gather = vec![Vec::new(); edges.len()];
        for (p, port) in ports.iter().enumerate() {
            for &(e, w) in &port.stencil {
                gather[e as usize].push((p as u32, w));
            }
        }
        SurfacePorts {
            surface_edges: surface.len(),
            edges,
            painted,
            ports,
            gather,
        }
    }

    /// What the ports hold per global x plane (`nx` planes): each edge, port, stencil and
    /// gather entry counted in the plane of its own edge (a port's own edge is its stencil's
    /// first), as a backend that holds a slab's planes keeps them. `state_len` gives the poles'
    /// state values per cell of a material (0 without poles).
    pub fn plane_counts(&self, nx: usize, state_len: impl Fn(u8) -> usize) -> Vec<PortCounts> {
        let mut out = vec![PortCounts::default(); nx];
        for (edge, gather) in self.edges.iter().zip(&self.gather) {
            let c = &mut out[edge.cell[0] as usize];
            c.edges += 1;
            c.gather_entries += gather.len() as u64;
        }
        for port in &self.ports {
            let own = self.edges[port.stencil[0].0 as usize];
            let c = &mut out[own.cell[0] as usize];
            c.ports += 1;
            c.stencil_entries += port.stencil.len() as u64;
            let state = state_len(port.model) as u64;
            if state > 0 {
                c.pole_ports += 1;
                c.pole_values += state;
            }
        }
        out
    }

    /// The distinct models of the ports, in order of their first port, each with the sorted
    /// global x planes of its ports' own edges.
    pub fn model_planes(&self) -> Vec<(u8, Vec<usize>)> {
        let mut out: Vec<(u8, Vec<usize>)> = Vec::new();
        for port in &self.ports {
            let x = self.edges[port.stencil[0].0 as usize].cell[0] as usize;
            match out.iter_mut().find(|(m, _)| *m == port.model) {
                Some((_, planes)) => planes.push(x),
                None => out.push((port.model, vec![x])),
            }
        }
        for (_, planes) in &mut out {
            planes.sort_unstable();
            planes.dedup();
        }
        out
    }

    /// The global x plane of edge `q`.
    pub fn edge_x(&self, q: u32) -> usize {
        self.edges[q as usize].cell[0] as usize
    }

    /// The global x plane of port `p`'s own edge (its stencil's first).
    pub fn port_x(&self, p: u32) -> usize {
        self.edge_x(self.ports[p as usize].stencil[0].0)
    }

    /// What the part of the grid holding x planes `planes` trades with the other parts
    /// ([`PortCrossings`]); nothing when it holds every plane the ports touch.
    pub fn crossings(&self, planes: std::ops::Range<usize>) -> PortCrossings {
        let mine = |x: usize| planes.contains(&x);
        // The side of a reader outside the part (one plane away: see `neighbours`).
        let side = |x: usize| {
            debug_assert!(x + 1 == planes.start || x == planes.end, "one plane across");
            usize::from(x >= planes.end)
        };
        let mut c = PortCrossings::default();
        for port in &self.ports {
            let x = self.edge_x(port.stencil[0].0);
            for &(q, _) in &port.stencil {
                match (mine(x), mine(self.edge_x(q))) {
                    (true, false) => c.edges_in.push(q),
                    (false, true) => c.edges_out[side(x)].push(q),
                    _ => {}
                }
            }
        }
        for (q, gather) in self.gather.iter().enumerate() {
            let x = self.edge_x(q as u32);
            for &(p, _) in gather {
                match (mine(x), mine(self.port_x(p))) {
                    (true, false) => c.ports_in.push(p),
                    (false, true) => c.ports_out[side(x)].push(p),
                    _ => {}
                }
            }
        }
        let [a, b] = &mut c.edges_out;
        let [d, e] = &mut c.ports_out;
        for list in [&mut c.edges_in, a, b, &mut c.ports_in, d, e] {
            list.sort_unstable();
            list.dedup();
        }
        c
    }

    /// True when the model has no surface ports.
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// The index of `edge`, if a port touches it.
    pub fn find(&self, edge: PortEdge) -> Option<usize> {
        self.edges.binary_search(&edge).ok()
    }
}

/// The painted material of each edge ([`Model::paint_materials`]: the ids the backends
/// hold), painting each plane that holds edges once.
fn painted_ids(model: &Model, edges: &[PortEdge]) -> Vec<u8> {
    let [_, ny, nz] = model.grid.shape;
    let mut planes: HashMap<(u8, u32), Vec<u8>> = HashMap::new();
    edges
        .iter()
        .map(|e| {
            let [i, j, k] = e.cell.map(|v| v as usize);
            let ids = planes.entry((e.component, e.cell[0])).or_insert_with(|| {
                let mut ids = vec![0u8; ny * nz];
                model.paint_materials(Component::ALL[e.component as usize], i, i + 1, &mut ids);
                ids
            });
            ids[j * nz + k]
        })
        .collect()
}

/// A surface edge's fraction, sampled normal and its two ports' models.
#[derive(Debug, Clone, Copy)]
struct SurfaceCell {
    normal: [f64; 3],
    models: (u8, u8),
    /// The interface is a plane along a grid plane here (where the smoothing's diagonal
    /// mixtures are exact).
    planar: bool,
}

/// The edges whose mixture the smoothing refuses as a cell resonance, with what the samples
/// found there. Only the planes of objects made of a material with poles are looked at.
fn surface_edges(model: &Model) -> Vec<(PortEdge, SurfaceCell)> {
    let Some(smoothing) = &model.smoothing else {
        return Vec::new();
    };
    if !smoothing
        .dispersive_pairs
        .values()
        .any(|r| r.iter().any(|&x| x))
    {
        return Vec::new();
    }
    let table = &model.materials.materials;
    let [nx, ny, nz] = model.grid.shape;
    let (mut lo, mut hi) = (nx, 0);
    for (i, o) in model.objects.iter().enumerate() {
        if table[o.material as usize].is_dispersive() {
            let (first, last) = model.object_x_planes(i);
            lo = lo.min(first);
            hi = hi.max(last);
        }
    }
    if lo >= hi {
        return Vec::new();
    }
    use rayon::prelude::*;
    let mut out: Vec<(PortEdge, SurfaceCell)> = (0..3)
        .flat_map(|c| (lo..hi).map(move |i| (c, i)))
        .collect::<Vec<_>>()
        .into_par_iter()
        .flat_map_iter(|(c, i)| {
            let comp = Component::ALL[c];
            let mut found = Vec::new();
            // The plane and its two neighbours, painted as the objects lie (no smoothing).
            let (x0, x1) = (i.saturating_sub(1), (i + 2).min(nx));
            let mut ids = vec![0u8; (x1 - x0) * ny * nz];
            model.paint_objects(comp, x0, x1, &mut ids);
            let id = |x: usize, j: usize, k: usize| ids[((x - x0) * ny + j) * nz + k];
            for j in 0..ny {
                for k in 0..nz {
                    let m = id(i, j, k);
                    let differs = (i > x0 && id(i - 1, j, k) != m)
                        || (i + 1 < x1 && id(i + 1, j, k) != m)
                        || (j > 0 && id(i, j - 1, k) != m)
                        || (j + 1 < ny && id(i, j + 1, k) != m)
                        || (k > 0 && id(i, j, k - 1) != m)
                        || (k + 1 < nz && id(i, j, k + 1) != m);
                    if !differs {
                        continue;
                    }
                    let Some(CellShares::Two {
                        a,
                        b,
                        fa,
                        planar,
                        normal: Some(_),
                        ..
                    }) = model.shares_at(comp, [i, j, k], None)
                    else {
                        continue;
                    };
                    let conformal = |m: u8| {
                        let m = &table[m as usize];
                        m.poles.is_empty() || m.conformal
                    };
                    if !(conformal(a) && conformal(b)) {
                        continue;
                    }
                    if let Some(models) = smoothing.port_models(a, b, fa) {
                        let normal = block_normal(model, comp, [i, j, k], a);
                        let edge = PortEdge {
                            cell: [i as u32, j as u32, k as u32],
                            component: c as u8,
                        };
                        found.push((
                            edge,
                            SurfaceCell {
                                normal,
                                models,
                                planar,
                            },
                        ));
                    }
                }
            }
            found
        })
        .collect();
    // A surface edge keeps its centre's material where its stencil or its ring's leaves the
    // grid or meets a PEC (an edge held at zero, which no port can drive).
    let shape = model.grid.shape;
    let free = |e: PortEdge| {
        let comp = Component::ALL[e.component as usize];
        let [i, j, k] = e.cell.map(|v| v as usize);
        let pec_face = (0..3).any(|a| {
            a != e.component as usize
                && e.cell[a] == 0
                && model.boundaries.faces[a][0].zeroes_tangential_e()
        });
        !pec_face && !table[model.material_at(comp, i, j, k) as usize].pec
    };
    out.retain(|(e, _)| {
        free(*e)
            && neighbours(*e, shape).iter().all(|n| {
                n.is_some_and(|n| {
                    free(n) && neighbours(n, shape).iter().all(|m| m.is_some_and(&free))
                })
            })
    });
    curved_surfaces(out, shape)
}

/// The surface edges of curved surfaces: every edge that is not planar, and the planar ones
/// joined to them through the ports' stencils. A box's faces along grid planes keep the
/// smoothing's diagonal mixtures, exact there; where a curved surface flattens along a grid
/// plane (a sphere's poles), its edges stay ports, so that no port's stencil meets a
/// diagonal mixture.
fn curved_surfaces(
    cells: Vec<(PortEdge, SurfaceCell)>,
    shape: [usize; 3],
) -> Vec<(PortEdge, SurfaceCell)> {
    let index: HashMap<PortEdge, usize> = cells
        .iter()
        .enumerate()
        .map(|(i, (e, _))| (*e, i))
        .collect();
    let mut keep: Vec<bool> = cells.iter().map(|(_, s)| !s.planar).collect();
    let mut frontier: Vec<usize> = (0..cells.len()).filter(|&i| keep[i]).collect();
    while let Some(i) = frontier.pop() {
        for next in neighbours(cells[i].0, shape).into_iter().flatten() {
            if let Some(&j) = index.get(&next) {
                if !keep[j] {
                    keep[j] = true;
                    frontier.push(j);
                }
            }
        }
    }
    cells
        .into_iter()
        .zip(keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect()
}

/// The normal of the interface at the point of component `c`'s cell `cell`, pointing into
/// material `a`: the first moment of the samples of `a` within a ball of 1.5 cells around the
/// point (4 x 4 x 4 samples in each of the 27 cells around it). For a plane the moment of
/// a ball's cap lies along the normal wherever the plane cuts the ball; the samples of the
/// cell alone (a cube, with one sample of the metal when the fraction is 1/64) give a
/// normal some 20 degrees off on a sphere of 10 cells' radius.
fn block_normal(model: &Model, c: Component, cell: [usize; 3], a: u8) -> [f64; 3] {
    let g = &model.grid;
    let index = cell.map(|i| i as f64);
    let p = g.position(c, index);
    let shift = c.offset();
    let coordinate = |x: usize, u: f64| match g.lines[x] {
        None => p[x] + u * g.cell[x],
        Some(_) => g.coordinate(x, index[x] + shift[x] + u),
    };
    let radius2 = 2.25;
    let mut moment = [0.0; 3];
    for block in 0..27 {
        let o = [block / 9, (block / 3) % 3, block % 3].map(|v| v as f64 - 1.0);
        let u = |x: usize, s: usize| o[x] + (s as f64 + 0.5) / 4.0 - 0.5;
        let xyz = [0, 1, 2].map(|x| [0, 1, 2, 3].map(|s| coordinate(x, u(x, s))));
        for (bit, &m) in model.sample_owners(xyz).iter().enumerate() {
            let at = [bit / 16, (bit / 4) % 4, bit % 4];
            let d = [0, 1, 2].map(|x| u(x, at[x]));
            if m == a && d.iter().map(|v| v * v).sum::<f64>() <= radius2 {
                (0..3).for_each(|x| moment[x] += xyz[x][at[x]] - p[x]);
            }
        }
    }
    unit(moment).unwrap_or([0.0, 0.0, 1.0])
}

/// The edges in `edge`'s stencil besides itself: for each other component d, the four d edges
/// nearest the edge (its cell plus 0 or one step along its own axis, minus 0 or one step along
/// d's), in a fixed order; None where one leaves the grid.
fn neighbours(edge: PortEdge, shape: [usize; 3]) -> [Option<PortEdge>; 8] {
    let c = edge.component as usize;
    let mut out = [None; 8];
    let mut slot = 0;
    for d in (0..3).filter(|&d| d != c) {
        for a in 0..2i64 {
            for b in 0..2i64 {
                let mut at = edge.cell.map(|v| v as i64);
                at[c] += a;
                at[d] -= b;
                out[slot] = (0..3)
                    .all(|x| at[x] >= 0 && (at[x] as usize) < shape[x])
                    .then(|| PortEdge {
                        cell: at.map(|v| v as u32),
                        component: d as u8,
                    });
                slot += 1;
            }
        }
    }
    out
}

/// The stencils of a surface or ring edge's two ports with normal `n`: [tangential, normal],
/// each (edge, weight) with the edge first.
fn stencil_weights(edge: PortEdge, n: [f64; 3], shape: [usize; 3]) -> [Vec<(PortEdge, f64)>; 2] {
    let c = edge.component as usize;
    let s = NORMAL_SHARE.sqrt();
    let mut t = vec![(edge, 1.0 - n[c] * n[c])];
    let mut m = vec![(edge, s * n[c])];
    for next in neighbours(edge, shape).into_iter().flatten() {
        let d = next.component as usize;
        t.push((next, -0.25 * n[c] * n[d]));
        m.push((next, 0.25 * s * n[d]));
    }
    [t, m]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn unit(v: [f64; 3]) -> Option<[f64; 3]> {
    let len = dot(v, v).sqrt();
    (len > 1e-12).then(|| v.map(|x| x / len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gold sphere of radius 40 nm on 4 nm cells (10 per radius) in vacuum.
    fn gold_sphere(center: [f64; 3]) -> Model {
        let text = format!(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.004
size = [0.14, 0.14, 0.14]
duration = 1e-15
[boundaries]
default = {{ type = "pml", cells = 6 }}
[materials]
gold = {{ library = "Au" }}
[[geometry]]
shape = "sphere"
material = "gold"
center = [{}, {}, {}]
radius = 0.04
"#,
            center[0], center[1], center[2]
        );
        crate::scene::load_str(&text, "gold.toml").unwrap().0
    }

    #[test]
    fn a_gold_sphere_has_surface_ports_with_radial_normals() {
        let centre = [0.0021, -0.0013, 0.0007];
        let model = gold_sphere(centre);
        let ports = model.surface_ports();
        assert!(ports.surface_edges > 1000, "{}", ports.surface_edges);
        let g = &model.grid;
        let mut worst = 0.0f64;
        let (mut sum, mut count) = (0.0, 0);
        for port in &ports.ports {
            let q = port.stencil[0].0 as usize;
            let e = ports.edges[q];
            let surface = model.materials.materials[port.model as usize].mixture;
            if port.kind != PortKind::Tangential || !surface {
                continue;
            }
            // The normal from the tangential port's weights: 1 - n_c^2 on its own edge.
            let c = e.component as usize;
            let nc2 = 1.0 - port.stencil[0].1;
            let p = g.position(Component::ALL[c], e.cell.map(|v| v as f64));
            let r: Vec<f64> = (0..3).map(|a| p[a] - centre[a] * 1e-6).collect();
            let len = r.iter().map(|v| v * v).sum::<f64>().sqrt();
            let err = (nc2.sqrt() - (r[c] / len).abs()).abs();
            worst = worst.max(err);
            sum += err;
            count += 1;
        }
        // The first moment over a ball of 1.5 cells: measured 0.006 on average and 0.084 at
        // worst in a direction cosine on this 10-cell radius (the cell's own 64 samples gave
        // 0.034 and 0.35); the bounds leave room for the sphere's offset from the grid.
        let mean = sum / count as f64;
        assert!(
            count > 1000 && mean < 0.01,
            "mean direction cosine error {mean}"
        );
        assert!(worst < 0.12, "worst direction cosine error {worst}");
    }

    #[test]
    fn every_edge_a_surface_or_ring_port_reaches_is_a_port() {
        let model = gold_sphere([0.0, 0.0, 0.0]);
        let ports = model.surface_ports();
        let shape = model.grid.shape;
        let table = &model.materials.materials;
        // Each edge's own ports' kind (the ports are in edge order, each edge's first).
        let mut own = vec![None; ports.edges.len()];
        for port in &ports.ports {
            own[port.stencil[0].0 as usize].get_or_insert(port.kind);
        }
        assert!(own.iter().all(Option::is_some));
        for port in &ports.ports {
            if port.kind == PortKind::Plain {
                assert_eq!(port.stencil.len(), 1);
                continue;
            }
            assert_eq!(port.stencil.len(), 9);
            let edge = ports.edges[port.stencil[0].0 as usize];
            for (next, &(e, _)) in neighbours(edge, shape).iter().zip(&port.stencil[1..]) {
                assert_eq!(Some(ports.edges[e as usize]), *next);
                // A surface port's stencil meets surface or ring edges only.
                if table[port.model as usize].mixture {
                    assert_ne!(own[e as usize], Some(PortKind::Plain));
                }
            }
        }
        assert!(own.contains(&Some(PortKind::Plain)));
        // Each gather entry is the stencil weight of that port at that edge.
        for (q, list) in ports.gather.iter().enumerate() {
            for &(p, w) in list {
                let port = &ports.ports[p as usize];
                assert!(port.stencil.iter().any(|&(e, v)| e as usize == q && v == w));
            }
            assert!(
                list.windows(2).all(|x| x[0].0 < x[1].0),
                "gather in port order"
            );
        }
        // The normal ports of surface edges are the series of gold and vacuum.
        assert!(ports
            .ports
            .iter()
            .any(|p| p.kind == PortKind::Normal && table[p.model as usize].series.len() == 2));
    }

    #[test]
    fn parts_trade_with_their_neighbours_what_the_neighbours_read() {
        let model = gold_sphere([0.0, 0.0, 0.0]);
        let ports = model.surface_ports();
        let nx = model.grid.shape[0];
        // Three parts cutting the sphere, the middle one a single plane.
        let mid = nx / 2;
        let parts = [0..mid, mid..mid + 1, mid + 1..nx];
        assert!(ports.crossings(0..nx).is_empty(), "one part trades nothing");
        let cs: Vec<PortCrossings> = parts.iter().map(|p| ports.crossings(p.clone())).collect();
        let part_of = |x: usize| parts.iter().position(|p| p.contains(&x)).unwrap();
        let edge_x = |q: u32| ports.edge_x(q);
        let port_x = |p: u32| ports.port_x(p);
        for (a, ca) in cs.iter().enumerate() {
            assert!(!ca.edges_in.is_empty() && !ca.ports_in.is_empty());
            // Only neighbours trade.
            for x in ca.edges_in.iter().map(|&q| edge_x(q)) {
                let p = &parts[a];
                assert!(x + 1 == p.start || x == p.end, "edge at {x} for {p:?}");
            }
            for b in [a.wrapping_sub(1), a + 1]
                .into_iter()
                .filter(|&b| b < parts.len())
            {
                let from_b = |list: &[u32], x: &dyn Fn(u32) -> usize| -> Vec<u32> {
                    list.iter()
                        .copied()
                        .filter(|&i| part_of(x(i)) == b)
                        .collect()
                };
                // What b sends to its side where a lies.
                let side = usize::from(a > b);
                assert_eq!(from_b(&ca.edges_in, &edge_x), cs[b].edges_out[side]);
                assert_eq!(from_b(&ca.ports_in, &port_x), cs[b].ports_out[side]);
                // Each is read there: an edge of b by a port of a, a port of b by an edge
                // of a.
                for &q in &cs[b].edges_out[side] {
                    assert!(ports.ports.iter().enumerate().any(|(p, port)| {
                        part_of(port_x(p as u32)) == a && port.stencil.iter().any(|e| e.0 == q)
                    }));
                }
                for &p in &cs[b].ports_out[side] {
                    assert!(ports.gather.iter().enumerate().any(|(q, g)| {
                        part_of(edge_x(q as u32)) == a && g.iter().any(|e| e.0 == p)
                    }));
                }
            }
        }
        // The one-plane part sends both ways.
        assert!(cs[1].edges_out.iter().all(|side| !side.is_empty()));
        assert!(cs[1].ports_out.iter().all(|side| !side.is_empty()));
    }
}
