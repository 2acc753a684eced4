//! The conformal PEC pass on the CPU ([`crate::operator::ConformalOp`]): after the H curl, each
//! cut face's H gets the Dey-Mittra update's difference from the plain one, from the four E
//! edges around the face. The CUDA kernel `conformal_h` (`kernels/conformal.cu`) does the same
//! arithmetic in the same order.

use super::{Shared, Slab};
use crate::real::Real;
use std::ops::Range;

impl<T: Real> Slab<T> {
    /// The cut faces of rows `rows` of the local planes `planes` (H half step, after the curl).
    /// Each face reads only E, which the H half step does not change, and writes only its own
    /// H: any split of planes and rows gives the same bits.
    pub(super) fn conformal(&mut self, sh: &Shared<T>, planes: Range<usize>, rows: Range<usize>) {
        let plane = sh.ny * sh.nz;
        let stride = [plane, sh.nz, 1];
        let every_row = rows == (0..sh.ny);
        for faces in &self.conformal {
            let c = faces.component;
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let (ea, eb) = (&self.e[a], &self.e[b]);
            let h = &mut self.h[c];
            for q in faces.plane_start[planes.start - 1]..faces.plane_start[planes.end - 1] {
                let off = faces.off[q] as usize;
                if !every_row && !rows.contains(&(off % plane / sh.nz)) {
                    continue;
                }
                let o = off + plane;
                let w = faces.w[q];
                h[o] += w[0] * eb[o]
                    + w[1] * eb[o + stride[a]]
                    + w[2] * ea[o]
                    + w[3] * ea[o + stride[b]];
            }
        }
    }
}
