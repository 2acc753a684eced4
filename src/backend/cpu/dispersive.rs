//! The dispersive pass: the poles of the materials with Drude, Lorentz or Debye terms, over a
//! compact list of their cells (see [`crate::model::AdeMaterial`] for the scheme).
//!
//! Each (E component, material) pair with cells in the slab is one group: the cells' indices,
//! their E^n, and the poles' state as one array per state value (`[slot][cell]`, so that a GPU
//! warp reads consecutive addresses). A run without dispersive materials has no groups.

use super::Shared;
use crate::decomp::SlabRange;
use crate::model::{Component, Model};
use crate::operator::PoleOp;
use crate::real::Real;

/// The dispersive cells of one E component made of one material, and their state.
pub(super) struct Group<T> {
    /// 0, 1, 2 for Ex, Ey, Ez.
    pub component: usize,
    /// The material id (an index into the operator's `dispersive`).
    pub material: u8,
    /// Indices of the cells into the slab's owned arrays of the component.
    pub cells: Vec<u32>,
    /// E at the previous step, per cell.
    pub e_prev: Vec<T>,
    /// The poles' state, `state_len` arrays of one value per cell, back to back: per pole in
    /// order, J then P (Lorentz), J (Drude), P (Debye). All in units of eps0.
    pub state: Vec<T>,
}

/// The groups of the slab that owns `range`, whose E material ids are `mat`.
pub(super) fn groups<T: Real>(
    model: &Model,
    sh: &Shared<T>,
    range: SlabRange,
    mat: &[Vec<u8>; 3],
) -> Vec<Group<T>> {
    let mut out = Vec::new();
    for (c, ids) in mat.iter().enumerate() {
        for (material, cells) in model.dispersive_cells(Component::ALL[c], range.x0, ids) {
            let op = sh.dispersive[material as usize]
                .as_ref()
                .expect("a dispersive cell's material has poles");
            let n = cells.len();
            out.push(Group {
                component: c,
                material,
                cells,
                e_prev: super::written_zeros(n),
                state: super::written_zeros(n * op.state_len()),
            });
        }
    }
    out
}

impl<T: Real> Group<T> {
    /// Bytes the group holds: a u32 index, E^n and the state per cell.
    pub fn bytes(&self) -> u64 {
        let t = std::mem::size_of::<T>() as u64;
        4 * self.cells.len() as u64 + t * (self.e_prev.len() + self.state.len()) as u64
    }

    /// One step of the group over `e`, the component's owned planes (cell index 0 is the first
    /// owned cell). Per cell the arithmetic is the one the CUDA kernel
    /// (`kernels/dispersive.cu`) does, so the two agree bit for bit:
    /// r = sum of each pole's memory term in pole order; E' = E - g r; drive = E' + E^n; then
    /// each pole advances from drive.
    ///
    /// The cells go in parallel chunks of [`CHUNK`], each in blocks of [`BLOCK`]: per block, one
    /// loop per pole accumulates r, one loop gathers and scatters E, one loop per pole advances
    /// its state. Each loop is a
    /// straight pass over contiguous arrays that the compiler vectorises, and the block's r
    /// and drive stay in L1; one loop over cells with a match on the pole kind inside ran at a
    /// third of the memory bandwidth.
    pub fn step(&mut self, sh: &Shared<T>, e: &mut [T]) {
        let op = sh.dispersive[self.material as usize]
            .as_ref()
            .expect("a dispersive group's material has poles");
        let n = self.cells.len();
        if n == 0 {
            return;
        }
        // Split the group into chunks of cells processed in parallel: the cells are sorted,
        // so each chunk's cells lie in a range of `e` of their own, and the state arrays split
        // at the same places. (One slab may hold all of a scene's metal: the slab split alone
        // would leave the other threads idle.)
        let mut chunks = Vec::with_capacity(n.div_ceil(CHUNK));
        let mut slots: Vec<&mut [T]> = self.state.chunks_mut(n).collect();
        let (mut cells, mut prev) = (&self.cells[..], &mut self.e_prev[..]);
        let mut e_rest = e;
        let mut e_offset = 0usize;
        while !cells.is_empty() {
            let len = CHUNK.min(cells.len());
            let (c, c_rest) = cells.split_at(len);
            let (p, p_rest) = std::mem::take(&mut prev).split_at_mut(len);
            let mut chunk_slots = Vec::with_capacity(slots.len());
            for slot in slots.iter_mut() {
                let (a, b) = std::mem::take(slot).split_at_mut(len);
                chunk_slots.push(a);
                *slot = b;
            }
            // The chunk's E range ends where the next chunk's first cell begins.
            let e_end = c_rest
                .first()
                .map_or(e_offset + e_rest.len(), |&f| f as usize);
            let (e_chunk, e_tail) = std::mem::take(&mut e_rest).split_at_mut(e_end - e_offset);
            chunks.push(Chunk {
                cells: c,
                e_prev: p,
                slots: chunk_slots,
                e: e_chunk,
                e_offset,
            });
            e_offset = e_end;
            e_rest = e_tail;
            cells = c_rest;
            prev = p_rest;
        }
        use rayon::prelude::*;
        chunks
            .into_par_iter()
            .for_each(|mut c| step_cells(op, &mut c));
    }
}

impl<T: Real> Group<T> {
    /// [`Group::step`] over the group's cells on one owned plane only, the cells with indices
    /// in `cells` (the plane's range of cell indices); `e` is that range of the component
    /// (the fused sweep's dispersive pass, plane by plane). Every cell gets the arithmetic of
    /// [`Group::step`], which is per cell, so the bits do not depend on how the cells are
    /// grouped into calls.
    pub fn step_plane(&mut self, sh: &Shared<T>, e: &mut [T], cells: std::ops::Range<usize>) {
        let op = sh.dispersive[self.material as usize]
            .as_ref()
            .expect("a dispersive group's material has poles");
        let n = self.cells.len();
        let a = self.cells.partition_point(|&c| (c as usize) < cells.start);
        let b = self.cells.partition_point(|&c| (c as usize) < cells.end);
        if a == b {
            return;
        }
        let slots = self.state.chunks_mut(n).map(|s| &mut s[a..b]).collect();
        step_cells(
            op,
            &mut Chunk {
                cells: &self.cells[a..b],
                e_prev: &mut self.e_prev[a..b],
                slots,
                e,
                e_offset: cells.start,
            },
        );
    }
}

/// A run of a group's cells with its own slices of E, E^n and the state.
struct Chunk<'a, T> {
    cells: &'a [u32],
    e_prev: &'a mut [T],
    slots: Vec<&'a mut [T]>,
    /// E from cell index `e_offset` on.
    e: &'a mut [T],
    e_offset: usize,
}

/// Cells per parallel chunk (a multiple of [`BLOCK`]).
const CHUNK: usize = 16 * BLOCK;

/// One step of a chunk's cells: a series mixture's ([`step_series`]) or a material's poles.
fn step_cells<T: Real>(op: &crate::operator::DispersiveOp<T>, c: &mut Chunk<'_, T>) {
    if op.series.is_empty() {
        step_chunk(op, c)
    } else {
        step_series(op, c)
    }
}

/// One step of a series mixture's cells (`DispersiveOp::series`), cell by cell: these are
/// only the surface cells of dispersive objects, few beside the cells of the materials
/// themselves. Per cell, in the order `kernels/dispersive.cu` does it: D = E - E^n (what the
/// curl pass added); per part, r its poles' memory term, E_k' = ca E_k + share D - g r, its
/// poles advance from E_k' + E_k; E' = sum of weight E_k' from zero, in part order.
fn step_series<T: Real>(op: &crate::operator::DispersiveOp<T>, c: &mut Chunk<'_, T>) {
    for q in 0..c.cells.len() {
        let cell = c.cells[q] as usize - c.e_offset;
        let increment = c.e[cell] - c.e_prev[q];
        let mut e_new = T::ZERO;
        let mut slot = 0;
        for part in &op.series {
            let (head, poles) = c.slots[slot..].split_at_mut(1);
            let e_part = head[0][q];
            let r = pole_memory(&part.poles, poles, q);
            let e_part_new = part.ca * e_part + part.share * increment - part.g * r;
            head[0][q] = e_part_new;
            advance_poles(&part.poles, poles, q, e_part_new + e_part);
            e_new += part.weight * e_part_new;
            slot += 1 + part.poles.iter().map(|p| p.state_len()).sum::<usize>();
        }
        c.e[cell] = e_new;
        c.e_prev[q] = e_new;
    }
}

/// The memory term of `poles` at cell `q`, whose state starts at `slots[0]`.
fn pole_memory<T: Real>(poles: &[PoleOp<T>], slots: &[&mut [T]], q: usize) -> T {
    let mut r = T::ZERO;
    let mut slot = 0;
    for p in poles {
        r += match *p {
            PoleOp::Lorentz { mj, mp, .. } => mj * slots[slot][q] + mp * slots[slot + 1][q],
            PoleOp::Drude { mj, .. } => mj * slots[slot][q],
            PoleOp::Debye { mp, .. } => mp * slots[slot][q],
        };
        slot += p.state_len();
    }
    r
}

/// Advance `poles` at cell `q` (state from `slots[0]`) from `drive` = E' + E.
fn advance_poles<T: Real>(poles: &[PoleOp<T>], slots: &mut [&mut [T]], q: usize, drive: T) {
    let mut slot = 0;
    for p in poles {
        match *p {
            PoleOp::Lorentz {
                alpha,
                beta,
                kappa,
                half_dt,
                ..
            } => {
                let (j, pp) = (slots[slot][q], slots[slot + 1][q]);
                let (j_new, pp_new) = lorentz_step(alpha, beta, kappa, half_dt, j, pp, drive);
                slots[slot][q] = j_new;
                slots[slot + 1][q] = pp_new;
            }
            PoleOp::Drude { alpha, kappa, .. } => {
                slots[slot][q] = alpha * slots[slot][q] + kappa * drive;
            }
            PoleOp::Debye { a, b, .. } => {
                slots[slot][q] = a * slots[slot][q] + b * drive;
            }
        }
        slot += p.state_len();
    }
}

/// A Lorentz pole's trapezoidal step from (J, P) and `drive` = E' + E^n: (J', P'), in the
/// order `kernels/dispersive.cu` computes them. Both CPU loops (the blocked one and the series
/// mixtures' per cell) take it from here.
#[inline(always)]
fn lorentz_step<T: Real>(alpha: T, beta: T, kappa: T, half_dt: T, j: T, pp: T, drive: T) -> (T, T) {
    let j_new = alpha * j + beta * pp + kappa * drive;
    (j_new, pp + half_dt * (j + j_new))
}

fn step_chunk<T: Real>(op: &crate::operator::DispersiveOp<T>, c: &mut Chunk<'_, T>) {
    let n = c.cells.len();
    let slots = &mut c.slots;
    let e = &mut *c.e;
    let mut r = [T::ZERO; BLOCK];
    let mut drive = [T::ZERO; BLOCK];
    for start in (0..n).step_by(BLOCK) {
        let end = (start + BLOCK).min(n);
        let len = end - start;
        let (r, drive) = (&mut r[..len], &mut drive[..len]);
        r.fill(T::ZERO);
        // The memory term: the part of the poles' mean current known before E^{n+1}.
        let mut slot = 0;
        for p in &op.poles {
            match *p {
                PoleOp::Lorentz { mj, mp, .. } => {
                    let (j, pp) = (&slots[slot][start..end], &slots[slot + 1][start..end]);
                    for ((r, &j), &pp) in r.iter_mut().zip(j).zip(pp) {
                        *r += mj * j + mp * pp;
                    }
                }
                PoleOp::Drude { mj, .. } => {
                    for (r, &j) in r.iter_mut().zip(&slots[slot][start..end]) {
                        *r += mj * j;
                    }
                }
                PoleOp::Debye { mp, .. } => {
                    for (r, &pp) in r.iter_mut().zip(&slots[slot][start..end]) {
                        *r += mp * pp;
                    }
                }
            }
            slot += p.state_len();
        }
        for (((&cell, prev), &r), d) in c.cells[start..end]
            .iter()
            .zip(&mut c.e_prev[start..end])
            .zip(r.iter())
            .zip(drive.iter_mut())
        {
            let cell = cell as usize - c.e_offset;
            let e_new = e[cell] - op.g * r;
            e[cell] = e_new;
            *d = e_new + *prev;
            *prev = e_new;
        }
        let mut slot = 0;
        for p in &op.poles {
            match *p {
                PoleOp::Lorentz {
                    alpha,
                    beta,
                    kappa,
                    half_dt,
                    ..
                } => {
                    let (a, b) = slots.split_at_mut(slot + 1);
                    let (j, pp) = (&mut a[slot][start..end], &mut b[0][start..end]);
                    for ((j, pp), &d) in j.iter_mut().zip(pp.iter_mut()).zip(drive.iter()) {
                        (*j, *pp) = lorentz_step(alpha, beta, kappa, half_dt, *j, *pp, d);
                    }
                }
                PoleOp::Drude { alpha, kappa, .. } => {
                    for (j, &d) in slots[slot][start..end].iter_mut().zip(drive.iter()) {
                        *j = alpha * *j + kappa * d;
                    }
                }
                PoleOp::Debye { a, b, .. } => {
                    for (pp, &d) in slots[slot][start..end].iter_mut().zip(drive.iter()) {
                        *pp = a * *pp + b * d;
                    }
                }
            }
            slot += p.state_len();
        }
    }
}

/// Cells per block of the dispersive pass (its r and drive arrays: 2 x 256 values, in L1).
const BLOCK: usize = 256;

impl<T> super::Slab<T> {
    /// The dispersive pass's registered state ([`crate::backend::pass::arrays`]): per group,
    /// its cells' E^n and its poles' state, `slots(material)` values per cell.
    pub(super) fn dispersive_arrays(
        &self,
        slots: impl Fn(u8) -> usize,
    ) -> Vec<(String, crate::backend::Spread, &Vec<T>)> {
        use crate::backend::pass::arrays::{dispersive_e_prev, dispersive_poles};
        let mut out = Vec::new();
        for g in &self.dispersive {
            let (name, spread) = dispersive_e_prev(g.component, g.material);
            out.push((name, spread, &g.e_prev));
            let (name, spread) = dispersive_poles(g.component, g.material, slots(g.material));
            out.push((name, spread, &g.state));
        }
        out
    }
}

/// [`super::Slab::dispersive_arrays`] to write, by name, from the slab's groups.
pub(super) fn group_arrays_mut<T>(groups: &mut [Group<T>]) -> Vec<(String, &mut Vec<T>)> {
    use crate::backend::pass::arrays::{dispersive_e_prev, dispersive_poles};
    let mut out = Vec::new();
    for g in groups {
        out.push((dispersive_e_prev(g.component, g.material).0, &mut g.e_prev));
        out.push((dispersive_poles(g.component, g.material, 0).0, &mut g.state));
    }
    out
}
