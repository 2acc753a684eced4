//! Mesh lines: the node coordinates of one graded axis from the refinement it must honour.
//!
//! A non-uniform mesh is a tensor product of three such axes ([`crate::model::Grid::lines`]).
//! [`axis_lines`] is the one place that turns "at most this cell size between these
//! coordinates" into nodes; the scene resolver calls it once per axis.
//!
//! # How an axis is meshed
//!
//! 1. **Fixed points.** The ends of the axis, every zone face and every snap point become
//!    fixed nodes, in that priority: ends first, then zone faces from the finest zone to the
//!    coarsest, then snap points. A candidate closer than [`MERGE_FRACTION`] of the local cell
//!    limit (the finest cell asked for at that coordinate) to a node already kept is merged
//!    into that node: a zone face then moves onto it (by less than half of the zone's own
//!    cell), a snap point is dropped. This is what keeps sliver cells out: two requested
//!    coordinates a hair apart would otherwise force a cell of that hair's width.
//!    What remains are cells forced by the requests themselves: an interval just over one
//!    cell long needs two, and a tight grading next to much larger cells can push one lower;
//!    on random axes (tests) no cell came out below a fifth of the finest limit, and 98% of
//!    axes had none below half.
//! 2. **Intervals.** Between two neighbouring fixed points the cell limit is one number: the
//!    background cell, or the finest zone covering the interval.
//! 3. **Graded fill.** Each interval of length `L` is filled with the fewest cells `n` whose
//!    largest admissible sequence `m_k = min(s_a g^(k-1), s_b g^(n-k), c)` reaches `L`, where
//!    `c` is its limit, `g` the grading and `s_a`, `s_b` the largest cells allowed at its two
//!    ends; the sequence is then brought down to exactly `L` by lowering its ceiling (the
//!    plateau) rather than by scaling every cell, so the end cells keep their sizes whenever
//!    the interval is long enough. Cells grow geometrically away from fine regions, like the
//!    smoothing of openEMS's mesh lines and Tidy3D's automatic grid, and never exceed `c`.
//! 4. **Junctions.** At first each end allows `min(own limit, g * neighbour's limit)`. Where
//!    the two cells meeting at a fixed point still differ by more than `g` (a short interval
//!    had to shrink its end cells), the smaller side is filled again with its reduction in a
//!    way that raises that end cell to what the grading needs (flat elsewhere, descending
//!    from it at the grading; for very short intervals a valley `t g^|k - centre|` away from
//!    it); if that is not enough, the larger side's end allowance is lowered to
//!    `g` times the smaller cell and that interval is filled again. Allowances only decrease
//!    (and the end sizes asked for only grow), so this settles after a few rounds.
//!
//! A single fine zone of cell `h` in a background `H` therefore costs, on each side, the
//! geometric transition `h g, h g^2, ...` up to `H` (about `ln(H/h) / ln g` cells over a
//! length of about `H g / (g - 1)`), then background cells: the count the tests compare with.

use super::{MaterialTable, Object, C0};

/// One refinement request along an axis: cells of at most `cell` (m) between `lo` and `hi` (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zone {
    /// Lower coordinate (m).
    pub lo: f64,
    /// Upper coordinate (m).
    pub hi: f64,
    /// The largest cell allowed inside (m).
    pub cell: f64,
}

/// Fraction of the local cell limit within which a requested coordinate (zone face or snap
/// point) merges into a node already placed (see the module documentation). Half a cell: two
/// fixed nodes are never closer than half the local limit, so no interval forces a sliver.
pub const MERGE_FRACTION: f64 = 0.5;

/// The node coordinates (m) of an axis from `lo` to `hi`: cells of at most `background`, at
/// most each zone's cell inside that zone, neighbouring cells differing by at most the ratio
/// `grading` (> 1), and a node on every coordinate of `snaps` inside the axis (zone faces and
/// material interfaces) where the cell sizes allow.
///
/// The first value is `lo`, the last `hi`, and the values increase. A zone face or snap point
/// closer than [`MERGE_FRACTION`] of the local cell limit to another requested node is merged
/// into it (module documentation); everything else is a node exactly. The result depends only
/// on the arguments (no randomness, no dependence on the order of `zones` or `snaps`).
pub fn axis_lines(
    lo: f64,
    hi: f64,
    background: f64,
    zones: &[Zone],
    grading: f64,
    snaps: &[f64],
) -> Vec<f64> {
    if hi <= lo || background <= 0.0 {
        return vec![lo, hi.max(lo)];
    }
    // A grading at or below 1 leaves no room to grow: treat it as the smallest useful ratio
    // (the scene rejects such values before calling this).
    let g = grading.max(1.0 + 1e-6);
    // Zones clipped to the axis, finest first (their faces win merges), ties by position so
    // the input order does not matter.
    let mut zones: Vec<Zone> = zones
        .iter()
        .filter(|z| z.cell > 0.0 && z.hi > lo && z.lo < hi && z.hi > z.lo)
        .map(|z| Zone {
            lo: z.lo.max(lo),
            hi: z.hi.min(hi),
            cell: z.cell.min(background),
        })
        .collect();
    zones.sort_by(|a, b| {
        a.cell
            .total_cmp(&b.cell)
            .then(a.lo.total_cmp(&b.lo))
            .then(a.hi.total_cmp(&b.hi))
    });
    let limit_at = |x: f64| {
        zones
            .iter()
            .filter(|z| z.lo <= x && x <= z.hi)
            .map(|z| z.cell)
            .fold(background, f64::min)
    };
    // 1. Fixed points, with merging.
    let mut kept: Vec<f64> = vec![lo, hi];
    let place = |x: f64, kept: &mut Vec<f64>| -> f64 {
        let tol = MERGE_FRACTION * limit_at(x);
        match kept
            .iter()
            .copied()
            .filter(|&k| (k - x).abs() < tol)
            .min_by(|a, b| (a - x).abs().total_cmp(&(b - x).abs()))
        {
            Some(k) => k,
            None => {
                kept.push(x);
                x
            }
        }
    };
    let mut effective = Vec::with_capacity(zones.len());
    for z in &zones {
        let a = place(z.lo, &mut kept);
        let b = place(z.hi, &mut kept);
        if b > a {
            effective.push(Zone {
                lo: a,
                hi: b,
                cell: z.cell,
            });
        }
    }
    let mut sorted_snaps: Vec<f64> = snaps
        .iter()
        .copied()
        .filter(|&x| x.is_finite() && x > lo && x < hi)
        .collect();
    sorted_snaps.sort_by(f64::total_cmp);
    for s in sorted_snaps {
        place(s, &mut kept);
    }
    kept.sort_by(f64::total_cmp);
    kept.dedup();
    // 2. One limit per interval: faces are fixed points, so a zone covers an interval whole
    // or not at all; the midpoint decides.
    let caps: Vec<f64> = kept
        .windows(2)
        .map(|w| {
            let mid = 0.5 * (w[0] + w[1]);
            effective
                .iter()
                .filter(|z| z.lo <= mid && mid <= z.hi)
                .map(|z| z.cell)
                .fold(background, f64::min)
        })
        .collect();
    let m = caps.len();
    // 3. End allowances: an end may be at most g times the neighbouring interval's limit.
    let mut start: Vec<f64> = (0..m)
        .map(|i| {
            if i == 0 {
                caps[0]
            } else {
                caps[i].min(g * caps[i - 1])
            }
        })
        .collect();
    let mut end: Vec<f64> = (0..m)
        .map(|i| {
            if i + 1 == m {
                caps[i]
            } else {
                caps[i].min(g * caps[i + 1])
            }
        })
        .collect();
    let mut cells: Vec<Vec<f64>> = (0..m)
        .map(|i| {
            fill(
                kept[i + 1] - kept[i],
                start[i],
                end[i],
                caps[i],
                g,
                [0.0; 2],
            )
        })
        .collect();
    // 4. Junctions: until the two cells at each fixed point are within the grading, the
    // smaller side is first filled again with its end cell at the junction raised to what
    // the grading needs (the larger cell over g); only if that is not enough is the larger
    // side's allowance lowered. Needs only grow and allowances only shrink: a few rounds
    // settle any realistic axis, and the bound keeps a pathological one from looping.
    let mut need = vec![[0.0f64; 2]; m];
    for _ in 0..10 * m + 100 {
        let mut changed = vec![false; m];
        for i in 0..m.saturating_sub(1) {
            let left = *cells[i].last().expect("an interval has a cell");
            let right = cells[i + 1][0];
            // The smaller side and which of its ends meets the junction (0 = its start).
            let (small, side, big) = if left > g * right * (1.0 + 1e-12) {
                (i + 1, 0, i)
            } else if right > g * left * (1.0 + 1e-12) {
                (i, 1, i + 1)
            } else {
                continue;
            };
            let needed = left.max(right) / g;
            if need[small][side] < needed * (1.0 - 1e-12) {
                need[small][side] = needed;
                changed[small] = true;
            } else if big == i {
                end[i] = g * right;
                changed[i] = true;
            } else {
                start[i + 1] = g * left;
                changed[i + 1] = true;
            }
        }
        if !changed.iter().any(|&c| c) {
            break;
        }
        for i in (0..m).filter(|&i| changed[i]) {
            cells[i] = fill(kept[i + 1] - kept[i], start[i], end[i], caps[i], g, need[i]);
        }
    }
    let mut nodes = Vec::with_capacity(cells.iter().map(Vec::len).sum::<usize>() + 1);
    nodes.push(lo);
    for (i, c) in cells.iter().enumerate() {
        let mut x = kept[i];
        for (k, h) in c.iter().enumerate() {
            x += h;
            // The interval's far end exactly (rounding of the running sum stays inside).
            nodes.push(if k + 1 == c.len() { kept[i + 1] } else { x });
        }
    }
    nodes
}

/// The cells of one interval of `length`: the fewest cells whose largest admissible sequence
/// `min(sa g^(k-1), sb g^(n-k), cap)` (k = 1..n) reaches `length`, then lowered in the
/// plateau (flat, but at least `need` at the start and end where that is not 0, or failing
/// that a valley away from those ends) so the cells sum to `length`. Every cell is at most
/// `cap`, the first at most `sa`, the last at most `sb`, and neighbours differ by at most `g`:
/// each term of the minimum has that property, so the minimum has it too.
fn fill(length: f64, sa: f64, sb: f64, cap: f64, g: f64, need: [f64; 2]) -> Vec<f64> {
    let sa = sa.min(cap);
    let sb = sb.min(cap);
    // min(sa g^k, sb g^(n-1-k), cap), the two ramps built by repeated multiplication
    // (saturating at the cap, so no overflow on long intervals).
    let admissible = |n: usize| -> Vec<f64> {
        let mut v = vec![cap; n];
        let mut up = sa;
        for x in v.iter_mut() {
            if up >= cap {
                break;
            }
            *x = up;
            up *= g;
        }
        let mut down = sb;
        for x in v.iter_mut().rev() {
            if down >= cap {
                break;
            }
            *x = x.min(down);
            down *= g;
        }
        v
    };
    let total = |n: usize| -> f64 { admissible(n).iter().sum() };
    // Every admissible cell is at least min(sa, sb), so this many always reach the length.
    let most = (length / sa.min(sb)).ceil() as usize + 1;
    // The admissible sum grows with n (each term does): bisect for the fewest cells.
    let (mut a, mut b) = (1usize, most.max(1));
    if total(a) >= length * (1.0 - 1e-12) {
        b = a;
    }
    while b - a > 1 {
        let mid = a + (b - a) / 2;
        if total(mid) >= length * (1.0 - 1e-12) {
            b = mid;
        } else {
            a = mid;
        }
    }
    let n = b;
    let m = admissible(n);
    // Bring the sum down to the length under a ceiling t: flat (the plateau cells equal, the
    // fewest distinct sizes) except where `need` asks for an end cell of at least that size
    // (a junction with a much larger neighbour). Every profile below is a max or min of
    // sequences that change by at most g per cell, so the grading holds. The sum is
    // continuous and increasing in t, so bisection finds it.
    // The shoulders: q_k = max over the needy ends e of need_e g^-|k - e|, descending from
    // each at the grading. Cells min(m_k, max(t, q_k)) hold those ends at what they need and
    // are flat (t) elsewhere; when even t = 0 leaves too much, the valley t g^|k - centre|
    // (centre at the far end or the middle) takes over, keeping those ends as large as it can.
    let last = n - 1;
    let q: Vec<f64> = (0..n)
        .map(|k| {
            let from_start = need[0] / g.powi(k as i32);
            let from_end = need[1] / g.powi((last - k) as i32);
            from_start.max(from_end)
        })
        .collect();
    let shoulders = m.iter().zip(&q).map(|(v, w)| v.min(*w)).sum::<f64>() <= length;
    let keep = need.map(|v| v > 0.0);
    let centre = match keep {
        [true, true] => 0.5 * (n as f64 - 1.0),
        [false, true] => 0.0,
        _ => last as f64,
    };
    let cell = |k: usize, t: f64| -> f64 {
        if shoulders || keep == [false; 2] {
            m[k].min(t.max(q[k]))
        } else {
            m[k].min(t * g.powf((k as f64 - centre).abs()))
        }
    };
    if keep == [false; 2] {
        // Flat: sum(min(m_k, t)) is piecewise linear in t; walk the sorted values (those
        // below t keep their size, the rest become t) instead of bisecting.
        let mut sorted = m.clone();
        sorted.sort_by(f64::total_cmp);
        let mut below = 0.0;
        let mut t = cap;
        for (j, &v) in sorted.iter().enumerate() {
            let level = (length - below) / (n - j) as f64;
            if level <= v {
                t = level;
                break;
            }
            below += v;
        }
        return m.iter().map(|&v| v.min(t)).collect();
    }
    let sum = |t: f64| -> f64 { (0..n).map(|k| cell(k, t)).sum() };
    let (mut t_lo, mut t_hi) = (0.0, cap);
    if sum(t_hi) > length {
        for _ in 0..200 {
            let mid = 0.5 * (t_lo + t_hi);
            if sum(mid) > length {
                t_hi = mid;
            } else {
                t_lo = mid;
            }
            if t_hi - t_lo <= 1e-15 * cap {
                break;
            }
        }
    }
    (0..n).map(|k| cell(k, t_hi)).collect()
}

/// The refinement `simulation.cells_per_wavelength = per_wavelength` asks for, per axis: over
/// each object's bounding box, cells of at most the shortest wavelength in its material at
/// `f_max` (the highest source frequency) over `per_wavelength`, and at most a third of the
/// object's extent along the axis, so a thin layer gets at least three cells across. Zones no
/// finer than `background` are left out. PEC objects have no wavelength inside and get only
/// the thickness rule.
pub fn wavelength_zones(
    objects: &[Object],
    table: &MaterialTable,
    f_max: f64,
    per_wavelength: f64,
    background: [f64; 3],
) -> [Vec<Zone>; 3] {
    let mut zones: [Vec<Zone>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for o in objects {
        let m = &table.materials[o.material as usize];
        let by_wavelength = if m.pec || f_max <= 0.0 {
            f64::INFINITY
        } else {
            let n = (m.epsilon_at(f_max) * m.mu_at(f_max))
                .norm()
                .sqrt()
                .max(1.0);
            C0 / (f_max * n * per_wavelength)
        };
        let (lo, hi) = o.bounds();
        for a in 0..3 {
            let extent = hi[a] - lo[a];
            let by_thickness = if extent > 0.0 {
                extent / 3.0
            } else {
                f64::INFINITY
            };
            let cell = by_wavelength.min(by_thickness);
            if cell < background[a] * (1.0 - 1e-9) {
                zones[a].push(Zone {
                    lo: lo[a],
                    hi: hi[a],
                    cell,
                });
            }
        }
    }
    zones
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells of a node list.
    fn cells(l: &[f64]) -> Vec<f64> {
        l.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Neighbouring cells differ by at most `g` (up to rounding of the node sums, 1e-9).
    fn assert_graded(l: &[f64], g: f64) {
        for w in cells(l).windows(2) {
            let r = (w[1] / w[0]).max(w[0] / w[1]);
            assert!(r <= g * (1.0 + 1e-9), "ratio {r} > {g}: {w:?}");
        }
    }

    /// A small deterministic generator (a linear congruential one) for the random axes.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Cells respect every limit, and zone faces and snap points are nodes.
    #[test]
    fn lines_honour_the_limits() {
        let zones = [Zone {
            lo: -0.1,
            hi: 0.1,
            cell: 0.01,
        }];
        let l = axis_lines(-1.0, 1.0, 0.1, &zones, 1.25, &[0.35]);
        assert_eq!(l[0], -1.0);
        assert_eq!(*l.last().unwrap(), 1.0);
        for w in l.windows(2) {
            let h = w[1] - w[0];
            let mid = 0.5 * (w[0] + w[1]);
            let limit = if mid.abs() < 0.1 { 0.01 } else { 0.1 };
            assert!(h > 0.0 && h <= limit * (1.0 + 1e-9), "{w:?}");
        }
        for x in [-0.1, 0.1, 0.35] {
            assert!(l.contains(&x), "{x}");
        }
        assert_graded(&l, 1.25);
    }

    /// Without zones or snaps the axis is uniform: the fewest equal cells of at most the
    /// background.
    #[test]
    fn no_refinement_gives_equal_cells() {
        let l = axis_lines(0.0, 1.0, 0.3, &[], 1.25, &[]);
        assert_eq!(l.len(), 5);
        for h in cells(&l) {
            assert!((h - 0.25).abs() < 1e-15, "{h}");
        }
        // An exact multiple gives exactly that many.
        assert_eq!(axis_lines(0.0, 1.0, 0.1, &[], 1.25, &[]).len(), 11);
    }

    /// One zone of cell h in a background H: the cell count is the least any mesh obeying the
    /// limits and the grading can have, and within a cell per side of the closed form (zone
    /// cells + on each side the geometric transition h g, h g^2, ... up to H, then the rest of
    /// the side in background cells).
    #[test]
    fn one_zone_costs_the_geometric_transition_and_no_more() {
        for (h, big, g) in [(0.01, 0.1, 1.25), (0.005, 0.1, 1.1), (0.02, 0.1, 1.5)] {
            let zone = [Zone {
                lo: -0.1,
                hi: 0.1,
                cell: h,
            }];
            let l = axis_lines(-1.0, 1.0, big, &zone, g, &[]);
            let n = l.len() - 1;
            let side = 0.9;
            let inside = (0.2 / h - 1e-9).ceil() as usize;
            // Least per side: the k-th cell from the zone is at most min(h g^k, H), so the
            // fewest cells covering the side is the first j with sum_k<=j min(h g^k, H) >= side.
            let mut covered = 0.0;
            let mut j = 0;
            while covered < side * (1.0 - 1e-12) {
                j += 1;
                covered += (h * g.powi(j as i32)).min(big);
            }
            let least = inside + 2 * j;
            assert!(n >= least, "{n} cells < the least possible {least}");
            assert!(n <= least + 2, "{n} cells, least {least}");
            // Closed form: K = floor(ln(H/h)/ln g) growing cells over h (g^(K+1) - g)/(g - 1).
            let k = ((big / h).ln() / g.ln()).floor();
            let ramp = h * (g.powf(k + 1.0) - g) / (g - 1.0);
            let closed = inside as f64 + 2.0 * (k + (side - ramp) / big);
            assert!(
                (n as f64 - closed).abs() <= 2.0,
                "{n} cells vs the closed form {closed}"
            );
            assert_graded(&l, g);
            // And far fewer than a uniform fine axis.
            assert!(n < (2.0 / h) as usize / 3, "{n}");
        }
    }

    /// Random axes: several zones (overlapping, touching, near each other), snap points, and
    /// gradings from 1.1 to 2: every cell at most its limit (zones shrunk by the merge
    /// distance at their faces, the documented allowance), neighbours within the grading,
    /// every snap and face a node or within the merge distance of one, no sliver below half
    /// the finest limit, and the same lines whatever the order of the inputs.
    #[test]
    fn random_axes_keep_every_promise() {
        let mut r = Lcg(12345);
        for case in 0..2000 {
            let big = 0.05 + 0.1 * r.next();
            let g = 1.1 + 0.9 * r.next();
            let nz = (r.next() * 4.0) as usize;
            let zones: Vec<Zone> = (0..nz)
                .map(|_| {
                    let c = -1.2 + 2.4 * r.next();
                    let w = 0.5 * r.next();
                    Zone {
                        lo: c - w,
                        hi: c + w,
                        cell: big * (0.02 + 0.9 * r.next()),
                    }
                })
                .collect();
            // Odd cases add snap points (material interfaces) anywhere.
            let ns = if case % 2 == 1 {
                1 + (r.next() * 5.0) as usize
            } else {
                0
            };
            let snaps: Vec<f64> = (0..ns).map(|_| -1.1 + 2.2 * r.next()).collect();
            let l = axis_lines(-1.0, 1.0, big, &zones, g, &snaps);
            assert_eq!((l[0], *l.last().unwrap()), (-1.0, 1.0), "case {case}");
            assert_graded(&l, g);
            let finest = zones.iter().map(|z| z.cell).fold(big, f64::min);
            let limit_at = |x: f64| {
                zones
                    .iter()
                    .filter(|z| z.lo <= x && x <= z.hi)
                    .map(|z| z.cell)
                    .fold(big, f64::min)
            };
            for w in l.windows(2) {
                let h = w[1] - w[0];
                // Merging keeps fixed points at least half a local limit apart, but an
                // interval just over one limit long needs two cells (about half each), and
                // the grading against a much larger neighbour (small g, dense snaps, a zone
                // face a cell from the domain end) can push cells lower still: over 20,000
                // such random axes the smallest cell was 0.20 of the finest limit (0.24 over
                // these 2,000; 98% of axes stay above 0.5). The slivers this guards against
                // (two requests a hair apart) are orders of magnitude thinner.
                assert!(
                    h >= 0.2 * finest,
                    "case {case}: sliver {h} (finest {finest})"
                );
                assert!(h <= big * (1.0 + 1e-9), "case {case}: {h} > background");
                for z in &zones {
                    let margin = MERGE_FRACTION * z.cell;
                    if w[0] >= z.lo + margin && w[1] <= z.hi - margin {
                        assert!(h <= z.cell * (1.0 + 1e-9), "case {case}: {w:?} in {z:?}");
                    }
                }
            }
            let near = |x: f64| {
                l.iter()
                    .map(|&v| (v - x).abs())
                    .fold(f64::INFINITY, f64::min)
            };
            for z in &zones {
                for x in [z.lo, z.hi].into_iter().filter(|x| x.abs() < 1.0) {
                    assert!(
                        near(x) < MERGE_FRACTION * limit_at(x) + 1e-12,
                        "case {case}: face {x}"
                    );
                }
            }
            for &x in snaps.iter().filter(|x| x.abs() < 1.0) {
                assert!(
                    near(x) < MERGE_FRACTION * limit_at(x) + 1e-12,
                    "case {case}: snap {x}"
                );
            }
            let mut zr = zones.clone();
            zr.reverse();
            let mut sr = snaps.clone();
            sr.reverse();
            assert_eq!(axis_lines(-1.0, 1.0, big, &zr, g, &sr), l, "case {case}");
        }
    }

    /// Requests a hair apart (zone faces, a snap next to a face, a face next to the domain
    /// end) merge: no cell below half the finest limit.
    #[test]
    fn near_coincident_requests_leave_no_sliver() {
        let zones = [
            Zone {
                lo: -0.3,
                hi: 0.2,
                cell: 0.02,
            },
            Zone {
                lo: 0.2 + 1e-7,
                hi: 0.4,
                cell: 0.01,
            },
            Zone {
                lo: 0.4,
                hi: 1.0 - 1e-9,
                cell: 0.05,
            },
        ];
        let l = axis_lines(-1.0, 1.0, 0.1, &zones, 1.3, &[-0.3 + 1e-6, 0.0, 0.003]);
        assert_graded(&l, 1.3);
        let min = cells(&l).into_iter().fold(f64::INFINITY, f64::min);
        assert!(min >= 0.5 * 0.01, "{min}: {l:?}");
        // The finer zone's face wins: 0.2 + 1e-7 is a node, 0.2 moved onto it.
        assert!(l.contains(&(0.2 + 1e-7)) && !l.contains(&0.2));
        assert!(l.contains(&0.0) && !l.contains(&0.003));
    }

    /// Well-separated snap points are nodes exactly; two closer than half a cell are one.
    #[test]
    fn snaps_are_nodes_and_close_ones_merge() {
        let l = axis_lines(0.0, 1.0, 0.1, &[], 1.25, &[0.123, 0.5, 0.77]);
        for x in [0.123, 0.5, 0.77] {
            assert!(l.contains(&x), "{x}: {l:?}");
        }
        assert_graded(&l, 1.25);
        let l = axis_lines(0.0, 1.0, 0.1, &[], 1.25, &[0.5, 0.51]);
        assert!(l.contains(&0.5) && !l.contains(&0.51), "{l:?}");
        assert!(cells(&l).iter().all(|&h| h >= 0.05), "{l:?}");
    }

    /// A thin zone far finer than the background (a 110 nm film at 5 nm on 25 nm): its cells
    /// are the zone's, the transition grows out at the grading, and the count is about the
    /// zone's plus two transitions, far below the uniform fine count.
    #[test]
    fn a_thin_film_is_cheap() {
        let zone = [Zone {
            lo: -55e-9,
            hi: 55e-9,
            cell: 5e-9,
        }];
        let l = axis_lines(-1e-6, 1e-6, 25e-9, &zone, 1.25, &[]);
        assert_graded(&l, 1.25);
        let inside = l.iter().filter(|&&x| x.abs() <= 55e-9 + 1e-18).count() - 1;
        assert_eq!(inside, 22);
        let n = l.len() - 1;
        // Uniform 5 nm: 400 cells; uniform 25 nm: 80. Transition: 5 nm grows to 25 nm in 7
        // cells per side (5 * 1.25^7 = 23.8 nm), about 3 background cells' length.
        assert!(n <= 80 + 22 + 2 * 7, "{n}");
        assert!(n < 400 * 2 / 5, "{n}");
    }

    /// `cells_per_wavelength`: a glass film (eps = 2.25, 90 nm) gets lambda / (1.5 N) across
    /// its lateral extent and a third of its thickness along z; a PEC block only the
    /// thickness rule; vacuum-like objects that need nothing finer than the background none.
    #[test]
    fn wavelength_zones_follow_the_material_and_the_thickness() {
        let (m, _) = crate::scene::load_str(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [2.0, 2.0, 2.0]
steps = 10
[materials]
glass = { epsilon = 2.25 }
air = { epsilon = 1.0 }
metal = { pec = true }
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [1.0, 1.0, 0.09]
[[geometry]]
shape = "box"
material = "metal"
center = [0.5, 0.5, 0.5]
size = [0.3, 0.06, 0.6]
[[geometry]]
shape = "box"
material = "air"
center = [-0.5, -0.5, -0.5]
size = [0.6, 0.6, 0.6]
"#,
            "zones.toml",
        )
        .unwrap();
        let f = 3e14;
        let per = 19.0;
        let z = wavelength_zones(&m.objects, &m.materials, f, per, [50e-9; 3]);
        // lambda0 = 999.3 nm; in glass 666.2 nm; / 19 = 35.1 nm < 50 nm.
        let glass = C0 / (f * 1.5 * per);
        assert!((glass - 35.06e-9).abs() < 0.01e-9);
        assert_eq!(z[0].len(), 1, "{:?}", z[0]);
        assert!((z[0][0].cell - glass).abs() < 1e-18);
        assert!((z[0][0].lo + 0.5e-6).abs() < 1e-18 && (z[0][0].hi - 0.5e-6).abs() < 1e-18);
        // Along y the PEC block is 60 nm thick: 20 nm cells; the glass as along x.
        assert_eq!(z[1].len(), 2, "{:?}", z[1]);
        assert!((z[1][1].cell - 20e-9).abs() < 1e-18);
        // Along z the film's third, 30 nm, is finer than its wavelength rule.
        assert!((z[2][0].cell - 30e-9).abs() < 1e-18, "{:?}", z[2]);
        // The air box: lambda0 / 19 = 52.6 nm, no finer than the background: no zone; the PEC
        // block is 300 nm and 600 nm along x and z: a third is above 50 nm there.
        assert!(z.iter().all(|axis| axis.len() <= 2));
        assert_eq!(z[2].len(), 1);
    }
}
