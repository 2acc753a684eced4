//! The TF/SF pass on the CPU ([`crate::operator::TfsfOp`]): each slab that holds correction
//! points advances its own copy of the 1-D incident grid (identically: the copies never
//! differ), then corrects its faces. The CUDA kernels `kernels/tfsf.cu` do the same arithmetic
//! in the same order.

use super::{Shared, Slab};
use crate::backend::Half;
use crate::operator::TfsfOp;
use crate::real::Real;
use std::ops::Range;

/// The 1-D incident grid: e at the integer nodes, h (eta0 H) between them.
#[derive(Clone)]
pub(super) struct Incident<T> {
    /// E nodes.
    pub e: Vec<T>,
    /// h nodes (h_i between e_i and e_{i+1}).
    pub h: Vec<T>,
}

impl<T: Real> Incident<T> {
    /// A grid at rest.
    pub fn new(op: &TfsfOp<T>) -> Self {
        Incident {
            e: vec![T::ZERO; op.nodes],
            h: vec![T::ZERO; op.nodes],
        }
    }

    /// Bytes of the two arrays.
    pub fn bytes(&self) -> u64 {
        ((self.e.len() + self.h.len()) * std::mem::size_of::<T>()) as u64
    }

    /// Advance the half step's field: H half, e to t = n dt with the drive `values[drive]`
    /// at node 0; E half, h to (n + 1/2) dt. The last e node stays zero.
    pub fn advance(&mut self, op: &TfsfOp<T>, half: Half, values: &[f64]) {
        let s = op.courant;
        let n = op.nodes;
        match half {
            Half::H => {
                for i in 1..n - 1 {
                    self.e[i] -= s * (self.h[i] - self.h[i - 1]);
                }
                self.e[0] = T::from_f64(values[op.drive_index]);
            }
            Half::E => {
                for i in 0..n - 1 {
                    self.h[i] -= s * (self.e[i + 1] - self.e[i]);
                }
            }
        }
    }
}

impl<T: Real> Slab<T> {
    /// The 1-D grid of this slab (if it holds one) after each of `steps` in turn from its
    /// state now (each step's H half with its magnetic values `.0`, then its E half with its
    /// currents `.1`), without changing it: what the TF/SF corrections of each step of a
    /// sweep of several steps read ([`Slab::tfsf`]).
    pub(super) fn incident_ahead(
        &self,
        sh: &Shared<T>,
        steps: &[(&[f64], &[f64])],
    ) -> Vec<Incident<T>> {
        let (Some(op), Some(inc)) = (&sh.tfsf, &self.incident) else {
            return Vec::new();
        };
        let mut now = inc.clone();
        steps
            .iter()
            .map(|&(magnetic, currents)| {
                now.advance(op, Half::H, magnetic);
                now.advance(op, Half::E, currents);
                now.clone()
            })
            .collect()
    }

    /// The first part of the TF/SF pass of `half` on this slab: advance its 1-D grid (a slab
    /// without correction points holds none).
    pub(super) fn advance_incident(&mut self, sh: &Shared<T>, half: Half, values: &[f64]) {
        if let (Some(op), Some(inc)) = (&sh.tfsf, &mut self.incident) {
            inc.advance(op, half, values);
        }
    }

    /// The rest of the TF/SF pass of `half`: the face corrections on the rows `rows` of the
    /// local planes `planes`, group by group in pass order (each group's points lie in x order, so a plane's
    /// points are one run of them, and a cell corrected by several groups gets the groups' terms
    /// in pass order whichever planes are corrected together). They read the 1-D grid
    /// `ahead` where given (a sweep of several steps holds the grid of each of its steps),
    /// else the slab's own.
    pub(super) fn tfsf(
        &mut self,
        sh: &Shared<T>,
        half: Half,
        planes: Range<usize>,
        rows: Range<usize>,
        ahead: Option<&Incident<T>>,
    ) {
        let Some(inc) = ahead.or(self.incident.as_ref()) else {
            return;
        };
        let plane = sh.ny * sh.nz;
        let every_row = rows == (0..sh.ny);
        for g in &self.tfsf {
            let electric = g.component < 3;
            if electric != (half == Half::E) {
                continue;
            }
            let a = if electric { &inc.h } else { &inc.e };
            let c = g.component % 3;
            for q in g.plane_start[planes.start - 1]..g.plane_start[planes.end - 1] {
                let off = g.off[q] as usize;
                if !every_row && !rows.contains(&(off % plane / sh.nz)) {
                    continue;
                }
                let i = g.node[q] as usize;
                let v = a[i] + g.w[q] * (a[i + 1] - a[i]);
                let cb = if electric {
                    sh.coef[self.mat[c][off] as usize].1
                } else {
                    match &sh.hcoef {
                        Some(table) => table[self.hmat[c][off] as usize].1,
                        None => sh.ch,
                    }
                };
                let f = if electric {
                    &mut self.e[c]
                } else {
                    &mut self.h[c]
                };
                f[off + plane] += cb * (g.fac[q] * v);
            }
        }
    }
}

impl<T> Slab<T> {
    /// The TF/SF pass's registered state ([`crate::backend::pass::arrays::tfsf_incident`]):
    /// the slab's copy of the 1-D incident grid, when it holds one.
    pub(super) fn tfsf_arrays(&self) -> Vec<(String, crate::backend::Spread, &Vec<T>)> {
        self.incident
            .iter()
            .flat_map(|inc| {
                [&inc.e, &inc.h].into_iter().enumerate().map(|(k, v)| {
                    let (name, spread) = crate::backend::pass::arrays::tfsf_incident(k);
                    (name, spread, v)
                })
            })
            .collect()
    }
}

/// [`Slab::tfsf_arrays`] to write, by name, from the slab's incident grid.
pub(super) fn incident_arrays_mut<T>(
    incident: &mut Option<Incident<T>>,
) -> Vec<(String, &mut Vec<T>)> {
    incident
        .iter_mut()
        .flat_map(|inc| {
            [&mut inc.e, &mut inc.h]
                .into_iter()
                .enumerate()
                .map(|(k, v)| (crate::backend::pass::arrays::tfsf_incident(k).0, v))
        })
        .collect()
}
