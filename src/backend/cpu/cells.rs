//! The `cells` pass on the CPU: the model's cell passes ([`crate::model::CellPass`]), each
//! over its box's cells in the slab, one call per x plane. This file knows no cell pass by
//! name; each slab keeps one state array per pass (empty where its box misses the slab).

use super::{Shared, Slab};
use crate::backend::pass::arrays;
use crate::backend::{Half, Spread};
use crate::model::{cells_within, CellPlane, Model};
use crate::real::{written_zeros, Real};
use std::ops::Range;

/// Each cell pass's state for the slab over global x `range`, zeroed: `slots` values per cell
/// of its box within the slab.
pub(super) fn states<T: Real>(model: &Model, range: Range<usize>) -> Vec<Vec<T>> {
    model
        .cell_passes
        .iter()
        .map(|p| written_zeros(cells_within(p.cells(), range.start, range.end).0 * p.slots()))
        .collect()
}

impl<T: Real> Slab<T> {
    /// The cell passes of `half` on rows `rows` of local plane `p`, in model order.
    pub(super) fn cells_on_plane(
        &mut self,
        sh: &Shared<T>,
        half: Half,
        p: usize,
        rows: Range<usize>,
    ) {
        let plane = sh.ny * sh.nz;
        let x = self.range.x0 + p - 1;
        for (i, pass) in sh.cell_passes.iter().enumerate() {
            let c = pass.component();
            if c.is_electric() != (half == Half::E) {
                continue;
            }
            let (cells, [xa, xb]) = cells_within(pass.cells(), self.range.x0, self.range.x1);
            if !(xa..xb).contains(&x) {
                continue;
            }
            let b = pass.cells();
            let y = rows.start.max(b[1][0])..rows.end.min(b[1][1]);
            if y.is_empty() {
                continue;
            }
            let per_plane = (b[1][1] - b[1][0]) * (b[2][1] - b[2][0]);
            let k = c as usize % 3;
            let field = match half {
                Half::E => &mut self.e[k],
                Half::H => &mut self.h[k],
            };
            let view = CellPlane {
                field: &mut field[p * plane..(p + 1) * plane],
                state: &mut self.cell_state[i],
                x,
                rows: y,
                z: b[2][0]..b[2][1],
                nz: sh.nz,
                y0: b[1][0],
                first: (x - xa) * per_plane,
                cells,
            };
            pass.update_plane(T::cell_plane(view));
        }
    }

    /// The cell passes' state arrays of this slab, by name ([`arrays::cell_pass_state`]).
    pub(super) fn cell_arrays(
        &self,
        passes: &[std::sync::Arc<dyn crate::model::CellPass>],
    ) -> Vec<(String, Spread, &Vec<T>)> {
        passes
            .iter()
            .zip(&self.cell_state)
            .map(|(p, v)| {
                let (name, spread) = arrays::cell_pass_state(p.name(), p.slots());
                (name, spread, v)
            })
            .collect()
    }
}

/// [`Slab::cell_arrays`] to write, by name.
pub(super) fn cell_arrays_mut<'a, T>(
    passes: &[std::sync::Arc<dyn crate::model::CellPass>],
    state: &'a mut [Vec<T>],
) -> Vec<(String, &'a mut Vec<T>)> {
    passes
        .iter()
        .zip(state)
        .map(|(p, v)| (arrays::cell_pass_state(p.name(), p.slots()).0, v))
        .collect()
}
