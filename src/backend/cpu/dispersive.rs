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
                e_prev: vec![T::ZERO; n],
                state: vec![T::ZERO; n * op.state_len()],
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
    /// owned cell). The order of operations is the one the CUDA kernel
    /// (`kernels/dispersive.cu`) follows, so the two agree bit for bit:
    /// r = sum of each pole's memory term in pole order; E' = E - g r; then each pole advances.
    pub fn step(&mut self, sh: &Shared<T>, e: &mut [T]) {
        let op = sh.dispersive[self.material as usize]
            .as_ref()
            .expect("a dispersive group's material has poles");
        let n = self.cells.len();
        for (q, &cell) in self.cells.iter().enumerate() {
            let at = |slot: usize| slot * n + q;
            let state = &self.state;
            // The memory term: the part of the poles' mean current known before E^{n+1}.
            let mut r = T::ZERO;
            let mut slot = 0;
            for p in &op.poles {
                match *p {
                    PoleOp::Lorentz { mj, mp, .. } => {
                        r += mj * state[at(slot)] + mp * state[at(slot + 1)];
                    }
                    PoleOp::Drude { mj, .. } => r += mj * state[at(slot)],
                    PoleOp::Debye { mp, .. } => r += mp * state[at(slot)],
                }
                slot += p.state_len();
            }
            let cell = cell as usize;
            let e_new = e[cell] - op.g * r;
            e[cell] = e_new;
            let drive = e_new + self.e_prev[q];
            self.e_prev[q] = e_new;
            let state = &mut self.state;
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
                        let (j, pp) = (state[at(slot)], state[at(slot + 1)]);
                        let j_new = alpha * j + beta * pp + kappa * drive;
                        state[at(slot)] = j_new;
                        state[at(slot + 1)] = pp + half_dt * (j + j_new);
                    }
                    PoleOp::Drude { alpha, kappa, .. } => {
                        let j = state[at(slot)];
                        state[at(slot)] = alpha * j + kappa * drive;
                    }
                    PoleOp::Debye { a, b, .. } => {
                        let pp = state[at(slot)];
                        state[at(slot)] = a * pp + b * drive;
                    }
                }
                slot += p.state_len();
            }
        }
    }
}
