//! Slab decomposition along x and the halo exchange plan shared by every backend.
//!
//! Slab `s` owns global x planes `[x0, x1)` and stores one halo plane on each side. The E
//! update at plane i reads H at i - 1 (the left halo for the first owned plane); the H update
//! at plane i reads E at i + 1 (the right halo for the last). So after the H update each slab
//! receives Hy and Hz into its left halo from the left neighbour, and after the E update Ey and
//! Ez into its right halo from the right neighbour. The x faces of the domain are handled in
//! the same list: a periodic face copies from the other end, a PMC face mirrors with a sign
//! flip, and PEC or PML faces leave the halo at zero.
//!
//! Over several processes (MPI ranks) the slabs are shared out in contiguous ranges, and each
//! process's part of the plan follows from it ([`ranks`]).

pub mod ranks;

use crate::model::{Axis, Boundaries, BoundaryKind, Component};

/// The global x range one slab owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlabRange {
    /// First owned plane.
    pub x0: usize,
    /// One past the last owned plane.
    pub x1: usize,
}

impl SlabRange {
    /// Owned planes.
    pub fn len(&self) -> usize {
        self.x1 - self.x0
    }
    /// True if the slab owns nothing.
    pub fn is_empty(&self) -> bool {
        self.x1 == self.x0
    }
}

/// The runs of slabs each GPU holds: per GPU in x order, the slabs (indices into `gpu_of`,
/// each slab's GPU) that lie side by side on it; None when a GPU's slabs are apart (a
/// placement the plan never makes).
pub fn gpu_runs(gpu_of: &[usize]) -> Option<Vec<std::ops::Range<usize>>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (s, &g) in gpu_of.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if gpu_of[r.start] == g => r.end = s + 1,
            _ => {
                if runs.iter().any(|r| gpu_of[r.start] == g) {
                    return None;
                }
                runs.push(s..s + 1);
            }
        }
    }
    Some(runs)
}

/// The x planes each GPU holds, from [`gpu_runs`] of the slabs `ranges` placed as `gpu_of`.
pub fn gpu_planes(ranges: &[SlabRange], gpu_of: &[usize]) -> Option<Vec<std::ops::Range<usize>>> {
    Some(
        gpu_runs(gpu_of)?
            .iter()
            .map(|r| ranges[r.start].x0..ranges[r.end - 1].x1)
            .collect(),
    )
}

/// Split `nx` planes into `n` slabs whose sizes differ by at most one.
pub fn split_even(nx: usize, n: usize) -> Vec<SlabRange> {
    split_weighted(nx, &vec![1.0; n.max(1)])
}

/// Split `nx` planes into slabs in proportion to `weights` (e.g. each device's free memory);
/// every slab gets at least one plane.
pub fn split_weighted(nx: usize, weights: &[f64]) -> Vec<SlabRange> {
    let n = weights.len().min(nx).max(1);
    let weights = &weights[..n];
    let total: f64 = weights.iter().sum();
    let mut out = Vec::with_capacity(n);
    let mut x0 = 0;
    let mut acc = 0.0;
    for (s, w) in weights.iter().enumerate() {
        acc += w;
        let remaining_slabs = n - s - 1;
        let ideal = (acc / total * nx as f64).round() as usize;
        let x1 = if s + 1 == n {
            nx
        } else {
            ideal.clamp(x0 + 1, nx - remaining_slabs)
        };
        out.push(SlabRange { x0, x1 });
        x0 = x1;
    }
    out
}

/// Which halo plane of the destination slab receives a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloSide {
    /// The plane just below x0 (local plane 0).
    Left,
    /// The plane at x1 (local plane len + 1).
    Right,
}

/// One plane copy between slabs (or within one, for the PMC mirror).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaloCopy {
    /// The field component copied.
    pub component: Component,
    /// Slab that owns the source plane.
    pub src_slab: usize,
    /// Global x index of the source plane (owned by `src_slab`).
    pub src_x: usize,
    /// Slab whose halo receives it.
    pub dst_slab: usize,
    /// Which halo.
    pub dst_side: HaloSide,
    /// Copy with the sign flipped (the PMC mirror of tangential H).
    pub negate: bool,
}

/// The halo copies replayed every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaloPlan {
    /// After the H update: Hy, Hz into left halos.
    pub after_h: Vec<HaloCopy>,
    /// After the E update: Ey, Ez into right halos.
    pub after_e: Vec<HaloCopy>,
}

impl HaloPlan {
    /// Build the copy lists for `slabs` (tiling [0, nx)) and the x faces of `boundaries`.
    pub fn new(slabs: &[SlabRange], boundaries: &Boundaries) -> Self {
        let last = slabs.len() - 1;
        let nx = slabs[last].x1;
        let mut after_h = Vec::new();
        let mut after_e = Vec::new();
        for component in [Component::Hy, Component::Hz] {
            for (s, slab) in slabs.iter().enumerate().skip(1) {
                after_h.push(HaloCopy {
                    component,
                    src_slab: s - 1,
                    src_x: slab.x0 - 1,
                    dst_slab: s,
                    dst_side: HaloSide::Left,
                    negate: false,
                });
            }
            match boundaries.face(Axis::X, false) {
                BoundaryKind::Periodic => after_h.push(HaloCopy {
                    component,
                    src_slab: last,
                    src_x: nx - 1,
                    dst_slab: 0,
                    dst_side: HaloSide::Left,
                    negate: false,
                }),
                BoundaryKind::Pmc => after_h.push(HaloCopy {
                    component,
                    src_slab: 0,
                    src_x: 0,
                    dst_slab: 0,
                    dst_side: HaloSide::Left,
                    negate: true,
                }),
                _ => {}
            }
        }
        for component in [Component::Ey, Component::Ez] {
            for (s, slab) in slabs.iter().enumerate().take(last) {
                after_e.push(HaloCopy {
                    component,
                    src_slab: s + 1,
                    src_x: slab.x1,
                    dst_slab: s,
                    dst_side: HaloSide::Right,
                    negate: false,
                });
            }
            if boundaries.face(Axis::X, true) == BoundaryKind::Periodic {
                after_e.push(HaloCopy {
                    component,
                    src_slab: 0,
                    src_x: 0,
                    dst_slab: last,
                    dst_side: HaloSide::Right,
                    negate: false,
                });
            }
        }
        HaloPlan { after_h, after_e }
    }
}

/// The halo copies of one process's slabs when the run's slabs are spread over several
/// processes (MPI ranks): the copies between its own slabs (local slab indices), and the planes
/// it hands to other processes after each half step (local slab, global x), which a backend
/// that updates its interior planes late must update first, with the planes the copies read.
/// One process of the whole grid has [`ProcessHalos::own`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessHalos {
    /// Copies between this process's slabs.
    pub plan: HaloPlan,
    /// Planes sent after H and after E: (local slab, global x).
    pub sent: [Vec<(usize, usize)>; 2],
    /// How many halo planes it receives from other processes after H and after E.
    pub received: [usize; 2],
}

impl ProcessHalos {
    /// Every slab of the run in one process: the whole halo plan, nothing sent or received.
    pub fn own(slabs: &[SlabRange], boundaries: &Boundaries) -> Self {
        ProcessHalos {
            plan: HaloPlan::new(slabs, boundaries),
            sent: [Vec::new(), Vec::new()],
            received: [0, 0],
        }
    }

    /// The pinned host planes a GPU engine passes these exchanges with other processes
    /// through: one the planes it sends are read through (when it sends any; each read waits
    /// for its copy), and one per plane it receives in each half step (their uploads queue
    /// without a wait).
    pub fn staging_planes(&self) -> usize {
        let sends = self.sent.iter().any(|s| !s.is_empty()) as usize;
        sends + self.received.iter().sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_tiles_the_range() {
        let s = split_even(10, 3);
        assert_eq!(s.iter().map(|r| r.len()).collect::<Vec<_>>(), vec![3, 4, 3]);
        assert_eq!(s[0].x0, 0);
        assert_eq!(s[2].x1, 10);
        // Every slab of a split owns planes; an empty range says so.
        assert!(s.iter().all(|r| !r.is_empty()));
        assert!(SlabRange { x0: 4, x1: 4 }.is_empty());
    }

    #[test]
    fn weighted_split_follows_weights_and_keeps_every_slab() {
        let s = split_weighted(100, &[3.0, 1.0]);
        assert_eq!((s[0].len(), s[1].len()), (75, 25));
        let s = split_weighted(3, &[1.0, 1000.0, 1.0]);
        assert!(s.iter().all(|r| !r.is_empty()));
        assert_eq!(s.last().unwrap().x1, 3);
    }
}
