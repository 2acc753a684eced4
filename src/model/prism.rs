//! Prisms: polygons in the plane normal to an axis, extruded over a span, with an optional
//! sidewall angle. One prism may hold many polygons (a GDS layer), their union; a bin grid over
//! the plane keeps each query to the edges near the point.
//!
//! In-plane coordinates are (u, v) = (x, y) for a prism along z, (y, z) along x, (z, x) along
//! y. Polygons are stored counter-clockwise, so that the winding number of a point is the
//! number of polygons holding it and "inside" is a winding above zero (overlapping polygons
//! of one layer add up to their union).
//!
//! The sidewall: the cross-section at height h is the base polygon (the one at `span[0]`)
//! eroded by `(h - span[0]) tan(angle)` (dilated for a negative angle): the points at least that
//! far inside it (at most that far outside). Corners come out as an etch leaves them: a concave
//! corner of an eroded polygon and a convex corner of a dilated one are rounded.

/// Relative tolerance of the inside tests, as for the other shapes: points within 1e-9 of the
/// prism's size of a face are inside, so that grid points exactly on a face are.
const TOLERANCE: f64 = 1e-9;

/// A polygon prism (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Prism {
    /// The axis the polygons are extruded along (0, 1, 2).
    pub axis: usize,
    /// Extent along the axis (m): base and top. Equal for a PEC sheet.
    pub span: [f64; 2],
    /// tan of the sidewall angle: the inset per unit of height (negative: an outset).
    pub taper: f64,
    /// The polygons' vertices (u, v) in metres, counter-clockwise, not closed (the last vertex
    /// joins the first).
    pub polygons: Vec<Vec<[f64; 2]>>,
    bins: Bins,
    bounds: ([f64; 3], [f64; 3]),
}

/// One edge of a polygon: its ends.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Edge {
    a: [f64; 2],
    b: [f64; 2],
}

/// A uniform grid of bins over the base polygons' bounding box, each listing the edges whose
/// bounding box meets it, and per row of bins the edges whose v range meets the row.
#[derive(Debug, Clone, PartialEq)]
struct Bins {
    lo: [f64; 2],
    step: [f64; 2],
    n: [usize; 2],
    edges: Vec<Edge>,
    /// Per bin (row-major, v outer): edge indices.
    cells: Vec<Vec<u32>>,
    /// Per row of bins: edge indices whose v range meets the row.
    rows: Vec<Vec<u32>>,
    /// The largest extent of the base polygons (the scale of the tolerance).
    size: f64,
}

/// Twice the signed area of a polygon (positive counter-clockwise).
pub fn signed_area2(p: &[[f64; 2]]) -> f64 {
    (0..p.len())
        .map(|i| {
            let (a, b) = (p[i], p[(i + 1) % p.len()]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum()
}

/// Whether segments `p1 q1` and `p2 q2` cross or touch (a proper or improper intersection).
fn segments_meet(p1: [f64; 2], q1: [f64; 2], p2: [f64; 2], q2: [f64; 2]) -> bool {
    let orient = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| {
        let v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
        if v > 0.0 {
            1
        } else if v < 0.0 {
            -1
        } else {
            0
        }
    };
    let on = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| {
        c[0] >= a[0].min(b[0])
            && c[0] <= a[0].max(b[0])
            && c[1] >= a[1].min(b[1])
            && c[1] <= a[1].max(b[1])
    };
    let (o1, o2, o3, o4) = (
        orient(p1, q1, p2),
        orient(p1, q1, q2),
        orient(p2, q2, p1),
        orient(p2, q2, q1),
    );
    if o1 != o2 && o3 != o4 {
        return true;
    }
    (o1 == 0 && on(p1, q1, p2))
        || (o2 == 0 && on(p1, q1, q2))
        || (o3 == 0 && on(p2, q2, p1))
        || (o4 == 0 && on(p2, q2, q1))
}

/// Where a polygon crosses itself: the indices of two edges that meet other than at their
/// shared vertex, or None for a simple polygon. Quadratic: polygons from scenes and layouts
/// have few vertices each.
pub fn self_intersection(p: &[[f64; 2]]) -> Option<(usize, usize)> {
    let n = p.len();
    for i in 0..n {
        for j in i + 1..n {
            let adjacent = j == i + 1 || (i == 0 && j == n - 1);
            if adjacent {
                // Adjacent edges meet at their shared vertex; they overlap only when they
                // fold back along each other.
                let (a, b, c) = if j == i + 1 {
                    (p[i], p[j], p[(j + 1) % n])
                } else {
                    (p[j], p[0], p[1])
                };
                let cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
                let dot = (b[0] - a[0]) * (c[0] - b[0]) + (b[1] - a[1]) * (c[1] - b[1]);
                if cross == 0.0 && dot < 0.0 && n > 3 {
                    return Some((i, j));
                }
                continue;
            }
            if segments_meet(p[i], p[(i + 1) % n], p[j], p[(j + 1) % n]) {
                return Some((i, j));
            }
        }
    }
    None
}

impl Bins {
    fn new(polygons: &[Vec<[f64; 2]>]) -> Bins {
        let edges: Vec<Edge> = polygons
            .iter()
            .flat_map(|p| {
                (0..p.len()).map(move |i| Edge {
                    a: p[i],
                    b: p[(i + 1) % p.len()],
                })
            })
            .collect();
        let mut lo = [f64::INFINITY; 2];
        let mut hi = [f64::NEG_INFINITY; 2];
        for e in &edges {
            for q in [e.a, e.b] {
                for d in 0..2 {
                    lo[d] = lo[d].min(q[d]);
                    hi[d] = hi[d].max(q[d]);
                }
            }
        }
        let size = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f64::MIN_POSITIVE);
        // About one edge per bin along each axis: sqrt(edges) bins per axis.
        let per_axis = ((edges.len() as f64).sqrt().ceil() as usize).clamp(1, 1024);
        let n = [per_axis; 2];
        let step = [0, 1].map(|d| ((hi[d] - lo[d]) / n[d] as f64).max(size * 1e-6));
        let mut bins = Bins {
            lo,
            step,
            n,
            edges,
            cells: vec![Vec::new(); n[0] * n[1]],
            rows: vec![Vec::new(); n[1]],
            size,
        };
        for (k, e) in bins.edges.iter().enumerate() {
            let (u0, u1) = (e.a[0].min(e.b[0]), e.a[0].max(e.b[0]));
            let (v0, v1) = (e.a[1].min(e.b[1]), e.a[1].max(e.b[1]));
            let (i0, i1) = (bins.index(0, u0), bins.index(0, u1));
            let (j0, j1) = (bins.index(1, v0), bins.index(1, v1));
            for j in j0..=j1 {
                bins.rows[j].push(k as u32);
                for i in i0..=i1 {
                    bins.cells[j * n[0] + i].push(k as u32);
                }
            }
        }
        bins
    }

    /// The bin index along `d` of coordinate `x`, clamped into the grid.
    fn index(&self, d: usize, x: f64) -> usize {
        let i = ((x - self.lo[d]) / self.step[d]).floor();
        i.clamp(0.0, (self.n[d] - 1) as f64) as usize
    }

    /// The winding number of `p` about the polygons: crossings of the ray to +u with the
    /// edges of p's row, upward ones counted +1 and downward -1 (half-open in v, so a ray
    /// through a vertex counts it once).
    fn winding(&self, p: [f64; 2]) -> i32 {
        if p[1] < self.lo[1] || p[1] > self.lo[1] + self.step[1] * self.n[1] as f64 {
            return 0;
        }
        let mut w = 0;
        for &k in &self.rows[self.index(1, p[1])] {
            let e = self.edges[k as usize];
            let up = e.a[1] <= p[1] && e.b[1] > p[1];
            let down = e.b[1] <= p[1] && e.a[1] > p[1];
            if !(up || down) {
                continue;
            }
            let t = (p[1] - e.a[1]) / (e.b[1] - e.a[1]);
            let u = e.a[0] + t * (e.b[0] - e.a[0]);
            if u > p[0] {
                w += if up { 1 } else { -1 };
            }
        }
        w
    }

    /// The distance from `p` to the nearest edge, if one lies within `reach`; the bins within
    /// `reach` of p are searched.
    fn distance_within(&self, p: [f64; 2], reach: f64) -> Option<f64> {
        let (i0, i1) = (self.index(0, p[0] - reach), self.index(0, p[0] + reach));
        let (j0, j1) = (self.index(1, p[1] - reach), self.index(1, p[1] + reach));
        let mut best = f64::INFINITY;
        for j in j0..=j1 {
            for i in i0..=i1 {
                for &k in &self.cells[j * self.n[0] + i] {
                    best = best.min(point_segment_distance(p, self.edges[k as usize]));
                }
            }
        }
        (best <= reach).then_some(best)
    }
}

/// The distance from `p` to segment `e`.
fn point_segment_distance(p: [f64; 2], e: Edge) -> f64 {
    let d = [e.b[0] - e.a[0], e.b[1] - e.a[1]];
    let len2 = d[0] * d[0] + d[1] * d[1];
    let t = if len2 > 0.0 {
        (((p[0] - e.a[0]) * d[0] + (p[1] - e.a[1]) * d[1]) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let q = [e.a[0] + t * d[0] - p[0], e.a[1] + t * d[1] - p[1]];
    (q[0] * q[0] + q[1] * q[1]).sqrt()
}

impl Prism {
    /// A prism of `polygons` (each at least three vertices, simple; either orientation)
    /// along `axis` over `span`, its walls at `sidewall_deg` from the axis.
    pub fn new(
        axis: usize,
        span: [f64; 2],
        sidewall_deg: f64,
        polygons: Vec<Vec<[f64; 2]>>,
    ) -> Prism {
        let polygons: Vec<Vec<[f64; 2]>> = polygons
            .into_iter()
            .map(|mut p| {
                if signed_area2(&p) < 0.0 {
                    p.reverse();
                }
                p
            })
            .collect();
        let bins = Bins::new(&polygons);
        let mut p = Prism {
            axis,
            span,
            taper: sidewall_deg.to_radians().tan(),
            polygons,
            bins,
            bounds: ([0.0; 3], [0.0; 3]),
        };
        p.bounds = p.compute_bounds();
        p
    }

    /// The in-plane axes (u, v) of a prism along `axis`.
    pub fn plane_axes(axis: usize) -> [usize; 2] {
        [(axis + 1) % 3, (axis + 2) % 3]
    }

    /// The inset (m) of the cross-section at height `h` (negative: an outset).
    fn inset(&self, h: f64) -> f64 {
        (h - self.span[0]) * self.taper
    }

    /// The largest inset the prism reaches (at its top), at least 0.
    fn reach(&self) -> f64 {
        self.inset(self.span[1]).abs()
    }

    /// Whether the in-plane point `q` lies in the cross-section with inset `inset`.
    fn in_section(&self, q: [f64; 2], inset: f64) -> bool {
        let eps = TOLERANCE * self.bins.size;
        let inside = self.bins.winding(q) > 0;
        if inset > 0.0 {
            inside && self.bins.distance_within(q, inset - eps).is_none()
        } else if inset < 0.0 {
            inside || self.bins.distance_within(q, -inset + eps).is_some()
        } else {
            inside || self.bins.distance_within(q, eps).is_some()
        }
    }

    /// Whether point `p` (m) is inside, faces included (see [`TOLERANCE`]).
    pub fn contains(&self, p: [f64; 3]) -> bool {
        let [s0, s1] = self.span;
        let h = p[self.axis];
        let slack = TOLERANCE * (s1 - s0).max(self.bins.size);
        if h < s0 - slack || h > s1 + slack {
            return false;
        }
        let [u, v] = Self::plane_axes(self.axis);
        self.in_section([p[u], p[v]], self.inset(h.clamp(s0, s1)))
    }

    /// The bounding box (min, max), m.
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        self.bounds
    }

    /// The same prism over another span (a thin PEC prism put on a node plane).
    pub fn with_span(&self, span: [f64; 2]) -> Prism {
        let mut p = Prism {
            span,
            ..self.clone()
        };
        p.bounds = p.compute_bounds();
        p
    }

    fn compute_bounds(&self) -> ([f64; 3], [f64; 3]) {
        let grow = (-self.taper * (self.span[1] - self.span[0])).max(0.0);
        let [u, v] = Self::plane_axes(self.axis);
        let mut lo = [0.0; 3];
        let mut hi = [0.0; 3];
        lo[self.axis] = self.span[0];
        hi[self.axis] = self.span[1];
        for (d, a) in [u, v].into_iter().enumerate() {
            let (mn, mx) = self
                .polygons
                .iter()
                .flatten()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(mn, mx), q| {
                    (mn.min(q[d]), mx.max(q[d]))
                });
            lo[a] = mn - grow;
            hi[a] = mx + grow;
        }
        (lo, hi)
    }

    /// Whether it encloses a volume: a span and a polygon of some area.
    pub fn has_volume(&self) -> bool {
        self.span[1] > self.span[0] && self.polygons.iter().any(|p| signed_area2(p) > 0.0)
    }

    /// The union of the base polygons' areas, approximately (the sum: overlaps counted twice).
    pub fn area(&self) -> f64 {
        0.5 * self.polygons.iter().map(|p| signed_area2(p)).sum::<f64>()
    }

    /// The inset at which the cross-section closes: about the radius of the largest circle
    /// inside the base polygons (a search over a 64 x 64 grid of the bounding box, refined
    /// around the best point). A sidewall that insets more than this by the top closes the
    /// prism.
    pub fn closing_inset(&self) -> f64 {
        let b = &self.bins;
        let (lo, hi) = (b.lo, [0, 1].map(|d| b.lo[d] + b.step[d] * b.n[d] as f64));
        let depth = |q: [f64; 2]| {
            if b.winding(q) > 0 {
                b.distance_within(q, b.size).unwrap_or(b.size)
            } else {
                0.0
            }
        };
        let (mut best, mut at) = (0.0, [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1])]);
        let mut span = [hi[0] - lo[0], hi[1] - lo[1]];
        let mut centre = at;
        for _ in 0..4 {
            const N: usize = 64;
            for i in 0..=N {
                for j in 0..=N {
                    let q = [
                        centre[0] + span[0] * (i as f64 / N as f64 - 0.5),
                        centre[1] + span[1] * (j as f64 / N as f64 - 0.5),
                    ];
                    let d = depth(q);
                    if d > best {
                        best = d;
                        at = q;
                    }
                }
            }
            centre = at;
            span = span.map(|s| s / 8.0);
        }
        best
    }

    /// Where the line `p + t e_axis` runs inside, for `t` in `[t0, t1]`: the intervals of t,
    /// in order. Along the prism's axis they follow from the in-plane point's depth; across
    /// it, from the line's crossings of the polygons' edges (exact without a sidewall; with
    /// one, each end found by bisection on the inside test).
    pub fn chords(&self, p: [f64; 3], axis: usize, t0: f64, t1: f64) -> Vec<(f64, f64)> {
        let [s0, s1] = self.span;
        let [u, v] = Self::plane_axes(self.axis);
        let clip = |a: f64, b: f64| {
            let (a, b) = (a.max(t0), b.min(t1));
            (b > a).then_some((a, b))
        };
        if axis == self.axis {
            let q = [p[u], p[v]];
            let b = &self.bins;
            let inside = b.winding(q) > 0;
            let interval = if self.taper == 0.0 {
                inside.then_some((s0, s1))
            } else if self.taper > 0.0 {
                let depth = if inside {
                    b.distance_within(q, b.size).unwrap_or(b.size)
                } else {
                    0.0
                };
                inside.then(|| (s0, s1.min(s0 + depth / self.taper)))
            } else if inside {
                Some((s0, s1))
            } else {
                let gap = b.distance_within(q, self.reach()).unwrap_or(f64::INFINITY);
                Some((s0 + gap / -self.taper, s1))
            };
            return interval.and_then(|(a, b)| clip(a, b)).into_iter().collect();
        }
        let h = p[self.axis];
        if h < s0 || h > s1 {
            return Vec::new();
        }
        // Sample the inside test along the line and bisect each change: exact to rounding
        // for straight edges, which change it once between samples.
        const N: usize = 64;
        let at = |t: f64| {
            let mut q = p;
            q[axis] = t;
            self.contains(q)
        };
        let mut out = Vec::new();
        let mut start: Option<f64> = None;
        let mut prev_t = t0;
        let mut prev = at(t0);
        if prev {
            start = Some(t0);
        }
        for i in 1..=N {
            let t = t0 + (t1 - t0) * i as f64 / N as f64;
            let now = at(t);
            if now != prev {
                let (mut a, mut b) = (prev_t, t);
                for _ in 0..60 {
                    let m = 0.5 * (a + b);
                    if at(m) == prev {
                        a = m;
                    } else {
                        b = m;
                    }
                }
                if now {
                    start = Some(b);
                } else if let Some(s) = start.take() {
                    out.push((s, a));
                }
            }
            prev = now;
            prev_t = t;
        }
        if let Some(s) = start {
            out.push((s, t1));
        }
        out.retain(|(a, b)| b > a);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(h: f64) -> Vec<[f64; 2]> {
        vec![[-h, -h], [h, -h], [h, h], [-h, h]]
    }

    #[test]
    fn a_square_prism_holds_what_a_box_holds() {
        let p = Prism::new(2, [0.0, 1.0], 0.0, vec![square(1.0)]);
        assert!(p.contains([0.0, 0.0, 0.5]));
        assert!(p.contains([1.0, 1.0, 1.0]), "corners and faces are inside");
        assert!(!p.contains([1.0 + 1e-6, 0.0, 0.5]));
        assert!(!p.contains([0.0, 0.0, 1.0 + 1e-6]));
        // Clockwise vertices are the same prism.
        let mut cw = square(1.0);
        cw.reverse();
        assert_eq!(Prism::new(2, [0.0, 1.0], 0.0, vec![cw]), p);
    }

    #[test]
    fn overlapping_polygons_are_their_union_and_a_concave_one_is_itself() {
        let a = vec![[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0]];
        let b = vec![[1.0, 0.0], [3.0, 0.0], [3.0, 1.0], [1.0, 1.0]];
        let p = Prism::new(2, [0.0, 1.0], 0.0, vec![a, b]);
        for x in [0.5, 1.5, 2.5] {
            assert!(p.contains([x, 0.5, 0.5]), "{x}");
        }
        // An L: the notch is outside.
        let l = vec![
            [0.0, 0.0],
            [2.0, 0.0],
            [2.0, 1.0],
            [1.0, 1.0],
            [1.0, 2.0],
            [0.0, 2.0],
        ];
        let p = Prism::new(0, [-1.0, 1.0], 0.0, vec![l]);
        // Along x the plane is (y, z).
        assert!(p.contains([0.0, 0.5, 1.5]));
        assert!(!p.contains([0.0, 1.5, 1.5]));
    }

    #[test]
    fn a_sidewall_insets_the_section_with_height() {
        // 45 degrees: at height 0.25 the square of half-width 1 is 0.75 wide each side.
        let p = Prism::new(2, [0.0, 0.5], 45.0, vec![square(1.0)]);
        assert!(p.contains([0.74, 0.0, 0.25]));
        assert!(!p.contains([0.76, 0.0, 0.25]));
        assert!(p.contains([0.99, 0.0, 0.0]));
        assert!(
            (p.closing_inset() - 1.0).abs() < 1e-3,
            "{}",
            p.closing_inset()
        );
        // The chord along the axis at u = 0.8 ends where the inset reaches 0.2.
        let c = p.chords([0.8, 0.0, 0.0], 2, -1.0, 1.0);
        assert_eq!(c.len(), 1);
        assert!(
            (c[0].0 - 0.0).abs() < 1e-12 && (c[0].1 - 0.2).abs() < 1e-12,
            "{c:?}"
        );
        // Across it at height 0.25: from -0.75 to 0.75 (to the faces' tolerance, 1e-9 of the
        // prism's size).
        let c = p.chords([0.0, 0.0, 0.25], 0, -2.0, 2.0);
        assert_eq!(c.len(), 1);
        assert!(
            (c[0].0 + 0.75).abs() < 1e-8 && (c[0].1 - 0.75).abs() < 1e-8,
            "{c:?}"
        );
        // An outset grows the bounds.
        let p = Prism::new(2, [0.0, 0.5], -45.0, vec![square(1.0)]);
        assert!((p.bounds().1[0] - 1.5).abs() < 1e-12);
        assert!(p.contains([1.4, 0.0, 0.45]));
    }

    #[test]
    fn self_intersections_are_found() {
        let bowtie = vec![[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]];
        assert!(self_intersection(&bowtie).is_some());
        assert!(self_intersection(&square(1.0)).is_none());
        let l = vec![
            [0.0, 0.0],
            [2.0, 0.0],
            [2.0, 1.0],
            [1.0, 1.0],
            [1.0, 2.0],
            [0.0, 2.0],
        ];
        assert!(self_intersection(&l).is_none());
    }
}
