//! Which process holds which slabs in a run over several ranks, and what follows for each: its
//! halo copies (within the process, sent to another, received from another), its part of each
//! monitor region, and the model its own backend is built from ([`RankLayout::local_model`]).
//!
//! Plain data and no MPI: the MPI driver (`crate::ranks`) runs it, the plan sizes each rank's
//! backend from it, and the tests drive the backends of several ranks in one process with it
//! (so the CUDA engine's part of a run over ranks is checked where no MPI and no GPU exist).

use super::{HaloCopy, HaloPlan, HaloSide, ProcessHalos, SlabRange};
use crate::model::{Boundaries, Component, Model, Region};
use std::ops::Range;

/// Split `slabs` slabs (in x order) over `ranks` processes: rank r runs the contiguous range
/// `rank_slabs(slabs, ranks)[r]`, whose sizes differ by at most one (the first ranks take the
/// extra slabs). Needs `1 <= ranks <= slabs`.
pub fn rank_slabs(slabs: usize, ranks: usize) -> Vec<Range<usize>> {
    super::split_even(slabs, ranks)
        .into_iter()
        .map(|r| r.x0..r.x1)
        .collect()
}

/// Which slabs and planes each rank holds.
#[derive(Debug, Clone)]
pub struct RankLayout {
    /// Every slab of the run, in x order (tiling [0, nx)).
    pub slabs: Vec<SlabRange>,
    /// Each rank's slab indices (contiguous ranges in rank order).
    pub ranks: Vec<Range<usize>>,
    /// This rank.
    pub rank: usize,
}

impl RankLayout {
    /// The x planes rank `r` holds.
    pub fn planes(&self, r: usize) -> Range<usize> {
        let s = &self.ranks[r];
        self.slabs[s.start].x0..self.slabs[s.end - 1].x1
    }

    /// This rank's slabs.
    pub fn local_ranges(&self) -> Vec<SlabRange> {
        self.slabs[self.ranks[self.rank].clone()].to_vec()
    }

    /// The rank that holds slab `s`.
    pub fn owner_of_slab(&self, s: usize) -> usize {
        self.ranks
            .iter()
            .position(|r| r.contains(&s))
            .expect("every slab has a rank")
    }

    /// The rank that holds x plane `x`.
    pub fn owner_of_x(&self, x: usize) -> usize {
        (0..self.ranks.len())
            .find(|&r| self.planes(r).contains(&x))
            .expect("every plane has a rank")
    }

    /// The part of `region` rank `r` holds: the index of its first x row within the region
    /// and the sub-region (same stride), or None when it holds none of the region's rows.
    pub fn part(&self, region: &Region, r: usize) -> Option<(usize, Region)> {
        let p = self.planes(r);
        let (start, end, stride) = (region.start[0], region.end[0], region.stride[0]);
        let k0 = p.start.saturating_sub(start).div_ceil(stride);
        let hi = end.min(p.end);
        let k1 = if hi <= start {
            0
        } else {
            (hi - start).div_ceil(stride)
        };
        if k0 >= k1 {
            return None;
        }
        let mut sub = *region;
        sub.start[0] = start + k0 * stride;
        sub.end[0] = start + (k1 - 1) * stride + 1;
        Some((k0, sub))
    }

    /// Values of one x row of `region` (C order: the rows of a part are contiguous).
    pub fn row_len(region: &Region) -> usize {
        let c = region.counts();
        c[1] * c[2]
    }

    /// This rank's exchanges after H and after E, from the run's halo plan over every slab.
    pub fn exchanges(&self, boundaries: &Boundaries) -> [Exchange; 2] {
        let halos = HaloPlan::new(&self.slabs, boundaries);
        [
            Exchange::new(self, &halos.after_h),
            Exchange::new(self, &halos.after_e),
        ]
    }

    /// The model this rank's backend is built from: the whole model (its grid, materials and
    /// sources, which each backend places by global x), with the monitors cut to what the rank
    /// reads itself. Probes keep their samples in this rank's planes (a backend reads only
    /// the samples; the probes' components, which index the whole list, are dropped);
    /// snapshot regions become this rank's parts ([`Self::part`]), which the driver queues;
    /// the flux monitors go, as rank 0 keeps their DFTs over whole planes read part by part.
    pub fn local_model(&self, model: &Model) -> Model {
        let mine = self.planes(self.rank);
        let mut local = model.clone();
        local.fluxes.clear();
        for p in &mut local.probes {
            p.samples.retain(|(_, idx)| mine.contains(&idx[0]));
            p.components.clear();
        }
        local.probes.retain(|p| !p.samples.is_empty());
        // The lumped terminals' samples likewise (their cell passes and sources stay whole:
        // each slab runs its own part of them); rank 0 writes their series from the whole model.
        for t in &mut local.terminals {
            t.probe.samples.retain(|(_, idx)| mine.contains(&idx[0]));
            t.probe.components.clear();
        }
        local.terminals.retain(|t| !t.probe.samples.is_empty());
        for s in &mut local.snapshots {
            s.regions = s
                .regions
                .iter()
                .filter_map(|&(c, r)| self.part(&r, self.rank).map(|(_, sub)| (c, sub)))
                .collect();
        }
        local.snapshots.retain(|s| !s.regions.is_empty());
        local
    }
}

/// One halo copy that crosses ranks, seen from one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossing {
    /// The copy's index in its half step's list of the run's halo plan (the two ends agree on
    /// it: the MPI tag is made from it).
    pub index: usize,
    /// The other rank.
    pub peer: usize,
    /// The field component.
    pub component: Component,
    /// The local slab (the source plane's, or the receiving halo's).
    pub slab: usize,
    /// The source plane (global x).
    pub x: usize,
    /// Receiving: which halo.
    pub side: HaloSide,
    /// Receiving: flip the sign (a PMC mirror).
    pub negate: bool,
}

/// One half step's exchange on one rank: the copies within it (local slab indices), the
/// planes it sends and those it receives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exchange {
    /// Copies between this rank's own slabs, local slab indices.
    pub local: Vec<HaloCopy>,
    /// Planes this rank sends.
    pub sends: Vec<Crossing>,
    /// Halos this rank receives.
    pub receives: Vec<Crossing>,
}

impl Exchange {
    fn new(layout: &RankLayout, copies: &[HaloCopy]) -> Self {
        let me = layout.rank;
        let first = layout.ranks[me].start;
        let mut ex = Exchange::default();
        for (index, c) in copies.iter().enumerate() {
            let (from, to) = (
                layout.owner_of_slab(c.src_slab),
                layout.owner_of_slab(c.dst_slab),
            );
            let crossing = |peer: usize, slab: usize| Crossing {
                index,
                peer,
                component: c.component,
                slab: slab - first,
                x: c.src_x,
                side: c.dst_side,
                negate: c.negate,
            };
            if from == me && to == me {
                let mut local = *c;
                local.src_slab -= first;
                local.dst_slab -= first;
                ex.local.push(local);
            } else if from == me {
                ex.sends.push(crossing(to, c.src_slab));
            } else if to == me {
                ex.receives.push(crossing(from, c.dst_slab));
            }
        }
        ex
    }

    /// What a backend of this rank's slabs needs of both exchanges: the copies within the
    /// rank, and the planes it sends, which must be up to date when the half step's passes
    /// return (an engine that defers its interior planes computes them with the boundary).
    pub fn process_halos(exchanges: &[Exchange; 2]) -> ProcessHalos {
        ProcessHalos {
            plan: HaloPlan {
                after_h: exchanges[0].local.clone(),
                after_e: exchanges[1].local.clone(),
            },
            sent: exchanges
                .each_ref()
                .map(|ex| ex.sends.iter().map(|s| (s.slab, s.x)).collect()),
            received: exchanges.each_ref().map(|ex| ex.receives.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(rank: usize) -> RankLayout {
        RankLayout {
            // Slabs [0,2) [2,5) [5,7) [7,10), written out: the tests' expectations follow them.
            slabs: [(0, 2), (2, 5), (5, 7), (7, 10)]
                .map(|(x0, x1)| SlabRange { x0, x1 })
                .to_vec(),
            ranks: vec![0..1, 1..4],
            rank,
        }
    }

    #[test]
    fn parts_of_a_strided_region_tile_it_in_rank_order() {
        let region = Region {
            start: [1, 0, 0],
            end: [10, 2, 3],
            stride: [2, 1, 1],
        };
        // Rank 0 holds x 0..2 (row x = 1), rank 1 the rest.
        let (k0, a) = layout(0).part(&region, 0).unwrap();
        let (k1, b) = layout(0).part(&region, 1).unwrap();
        assert_eq!((k0, a.start[0], a.end[0]), (0, 1, 2));
        assert_eq!((k1, b.start[0], b.end[0]), (1, 3, 10));
        assert_eq!(a.len() + b.len(), region.len());
    }

    #[test]
    fn a_rank_sends_what_the_other_receives_and_keeps_its_own_copies() {
        let pec = crate::model::BoundaryKind::Pec;
        let b = Boundaries::new([[pec; 2]; 3], [10, 4, 4], [1e-3; 3], 1e-12);
        let [h0, e0] = layout(0).exchanges(&b);
        let [h1, e1] = layout(1).exchanges(&b);
        // Hy and Hz of rank 0's last plane go right; Ey and Ez of rank 1's first come left.
        assert_eq!(h0.sends.len(), 2);
        assert_eq!(h1.receives.len(), 2);
        assert_eq!(e1.sends.len(), 2);
        assert_eq!(e0.receives.len(), 2);
        assert!(h0
            .sends
            .iter()
            .zip(&h1.receives)
            .all(|(s, r)| s.index == r.index
                && s.x == 1
                && r.slab == 0
                && r.side == HaloSide::Left));
        // Rank 1's three slabs copy between themselves with local indices.
        assert_eq!(h1.local.len(), 4);
        assert!(h1.local.iter().all(|c| c.src_slab < 3 && c.dst_slab < 3));
        let halos = Exchange::process_halos(&[h0, e0]);
        assert_eq!(halos.sent[0], vec![(0, 1), (0, 1)]);
        assert_eq!(halos.received, [0, 2]);
        assert!(halos.sent[1].is_empty() && halos.plan.after_h.is_empty());
    }
}
