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
#[derive(Debug, Clone)]
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
    bins: Layer,
    bounds: ([f64; 3], [f64; 3]),
    /// Unique to the polygons (copies share it): the key of the per-thread memo of
    /// [`Prism::plane_mask`].
    id: u64,
}

impl PartialEq for Prism {
    fn eq(&self, other: &Self) -> bool {
        (self.axis, self.span, self.taper) == (other.axis, other.span, other.taper)
            && self.polygons == other.polygons
    }
}

/// The polygons of a prism, each with its own [`Bins`], and a grid over the plane listing the
/// polygons whose bounding box meets each cell: a query looks at the few polygons near it.
#[derive(Debug, Clone, PartialEq)]
struct Layer {
    polygons: Vec<Bins>,
    lo: [f64; 2],
    hi: [f64; 2],
    step: [f64; 2],
    n: [usize; 2],
    cells: Vec<Vec<u32>>,
    /// The largest extent of the polygons together (the scale of the tolerance).
    size: f64,
}

impl Layer {
    fn new(polygons: &[Vec<[f64; 2]>]) -> Layer {
        let bins: Vec<Bins> = polygons.iter().map(|p| Bins::new(p)).collect();
        let mut lo = [f64::INFINITY; 2];
        let mut hi = [f64::NEG_INFINITY; 2];
        for b in &bins {
            for d in 0..2 {
                lo[d] = lo[d].min(b.lo[d]);
                hi[d] = hi[d].max(b.hi[d]);
            }
        }
        let size = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f64::MIN_POSITIVE);
        let per_axis = ((bins.len() as f64).sqrt().ceil() as usize).clamp(1, 1024);
        let n = [per_axis; 2];
        let step = [0, 1].map(|d| ((hi[d] - lo[d]) / n[d] as f64).max(size * 1e-6));
        let mut layer = Layer {
            polygons: Vec::new(),
            lo,
            hi,
            step,
            n,
            cells: vec![Vec::new(); n[0] * n[1]],
            size,
        };
        for (k, b) in bins.iter().enumerate() {
            let top = b.hi;
            for j in layer.index(1, b.lo[1])..=layer.index(1, top[1]) {
                for i in layer.index(0, b.lo[0])..=layer.index(0, top[0]) {
                    layer.cells[j * n[0] + i].push(k as u32);
                }
            }
        }
        layer.polygons = bins;
        layer
    }

    fn index(&self, d: usize, x: f64) -> usize {
        let i = ((x - self.lo[d]) / self.step[d]).floor();
        i.clamp(0.0, (self.n[d] - 1) as f64) as usize
    }

    /// Call `f` on each polygon whose bins may hold a point within `reach` of `p`, once
    /// each (a point and its reach almost always fall in one cell, which needs no list).
    fn each_near(&self, p: [f64; 2], reach: f64, mut f: impl FnMut(&Bins)) {
        if (0..2).any(|d| p[d] < self.lo[d] - reach || p[d] > self.hi[d] + reach) {
            return;
        }
        let (i0, i1) = (self.index(0, p[0] - reach), self.index(0, p[0] + reach));
        let (j0, j1) = (self.index(1, p[1] - reach), self.index(1, p[1] + reach));
        if i0 == i1 && j0 == j1 {
            for &k in &self.cells[j0 * self.n[0] + i0] {
                f(&self.polygons[k as usize]);
            }
            return;
        }
        let mut all: Vec<u32> = Vec::new();
        for j in j0..=j1 {
            for i in i0..=i1 {
                all.extend(&self.cells[j * self.n[0] + i]);
            }
        }
        all.sort_unstable();
        all.dedup();
        for k in all {
            f(&self.polygons[k as usize]);
        }
    }

    /// How many polygons hold `p` (each counter-clockwise, so its winding is 0 or 1).
    fn winding(&self, p: [f64; 2]) -> i32 {
        let mut w = 0;
        self.each_near(p, 0.0, |b| w += b.winding(p));
        w
    }

    /// The distance from `p` to the nearest edge of any polygon, if within `reach`.
    fn distance_within(&self, p: [f64; 2], reach: f64) -> Option<f64> {
        let mut best: Option<f64> = None;
        self.each_near(p, reach, |b| {
            if let Some(d) = b.distance_within(p, reach) {
                best = Some(best.map_or(d, |x: f64| x.min(d)));
            }
        });
        best
    }
}

/// One edge of a polygon: its ends.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Edge {
    a: [f64; 2],
    b: [f64; 2],
}

/// One polygon's edges in two grids over its bounding box: square cells listing the edges
/// whose bounding box meets each (for distances), and thin rows along v listing the edges
/// whose v range meets each (for the ray of an inside test, which then meets only the few
/// edges at its height).
#[derive(Debug, Clone, PartialEq)]
struct Bins {
    lo: [f64; 2],
    hi: [f64; 2],
    edges: Vec<Edge>,
    /// Cells per axis (about the square root of the edges).
    n: usize,
    step: [f64; 2],
    /// Per cell (row-major, v outer): edge indices.
    cells: Vec<Vec<u32>>,
    /// Rows along v (about one per edge), and per row its edge indices.
    row_step: f64,
    rows: Vec<Vec<u32>>,
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

/// Whether segments `p1 q1` and `p2 q2` cross properly: each one's ends lie strictly on
/// either side of the other's line. Touching and overlapping along a line are not crossings:
/// a layout's polygon with a hole is drawn as one outline joined to the hole's by a cut whose
/// two edges run along each other ("keyhole"), which is a valid polygon.
fn segments_cross(p1: [f64; 2], q1: [f64; 2], p2: [f64; 2], q2: [f64; 2]) -> bool {
    let orient = |a: [f64; 2], b: [f64; 2], c: [f64; 2]| {
        let v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
        v.partial_cmp(&0.0).map_or(0, |o| o as i32)
    };
    let (o1, o2, o3, o4) = (
        orient(p1, q1, p2),
        orient(p1, q1, q2),
        orient(p2, q2, p1),
        orient(p2, q2, q1),
    );
    o1 * o2 < 0 && o3 * o4 < 0
}

/// Where a polygon crosses itself: the indices of two edges that cross properly (see
/// `segments_cross`), or of two adjacent edges that fold back along each other; None for a
/// valid outline. Edges are compared only with those in the same bins.
pub fn self_intersection(p: &[[f64; 2]]) -> Option<(usize, usize)> {
    let n = p.len();
    for i in 0..n {
        let (a, b, c) = (p[i], p[(i + 1) % n], p[(i + 2) % n]);
        let cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
        let dot = (b[0] - a[0]) * (c[0] - b[0]) + (b[1] - a[1]) * (c[1] - b[1]);
        if n > 3 && cross == 0.0 && dot < 0.0 {
            return Some((i, (i + 1) % n));
        }
    }
    let bins = Bins::new(p);
    for cell in &bins.cells {
        for (x, &i) in cell.iter().enumerate() {
            for &j in &cell[x + 1..] {
                let (i, j) = (i.min(j) as usize, i.max(j) as usize);
                let (ei, ej) = (bins.edges[i], bins.edges[j]);
                if segments_cross(ei.a, ei.b, ej.a, ej.b) {
                    return Some((i, j));
                }
            }
        }
    }
    None
}

impl Bins {
    fn new(polygon: &[[f64; 2]]) -> Bins {
        let edges: Vec<Edge> = (0..polygon.len())
            .map(|i| Edge {
                a: polygon[i],
                b: polygon[(i + 1) % polygon.len()],
            })
            .collect();
        let mut lo = [f64::INFINITY; 2];
        let mut hi = [f64::NEG_INFINITY; 2];
        for q in polygon {
            for d in 0..2 {
                lo[d] = lo[d].min(q[d]);
                hi[d] = hi[d].max(q[d]);
            }
        }
        let size = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(f64::MIN_POSITIVE);
        let n = ((edges.len() as f64).sqrt().ceil() as usize).clamp(1, 1024);
        let step = [0, 1].map(|d| ((hi[d] - lo[d]) / n as f64).max(size * 1e-6));
        let n_rows = edges.len().clamp(1, 1 << 16);
        let row_step = ((hi[1] - lo[1]) / n_rows as f64).max(size * 1e-9);
        let mut bins = Bins {
            lo,
            hi,
            edges,
            n,
            step,
            cells: vec![Vec::new(); n * n],
            row_step,
            rows: vec![Vec::new(); n_rows],
        };
        for (k, e) in bins.edges.iter().enumerate() {
            let (u0, u1) = (e.a[0].min(e.b[0]), e.a[0].max(e.b[0]));
            let (v0, v1) = (e.a[1].min(e.b[1]), e.a[1].max(e.b[1]));
            for j in bins.cell(1, v0)..=bins.cell(1, v1) {
                for i in bins.cell(0, u0)..=bins.cell(0, u1) {
                    bins.cells[j * n + i].push(k as u32);
                }
            }
            for r in bins.row(v0)..=bins.row(v1) {
                bins.rows[r].push(k as u32);
            }
        }
        bins
    }

    /// The cell index along `d` of coordinate `x`, clamped into the grid.
    fn cell(&self, d: usize, x: f64) -> usize {
        let i = ((x - self.lo[d]) / self.step[d]).floor();
        i.clamp(0.0, (self.n - 1) as f64) as usize
    }

    /// The row of v coordinate `v`, clamped into the grid.
    fn row(&self, v: f64) -> usize {
        let r = ((v - self.lo[1]) / self.row_step).floor();
        r.clamp(0.0, (self.rows.len() - 1) as f64) as usize
    }

    /// The winding number of `p` about the polygons: crossings of the ray to +u with the
    /// edges of p's row, upward ones counted +1 and downward -1 (half-open in v, so a ray
    /// through a vertex counts it once).
    fn winding(&self, p: [f64; 2]) -> i32 {
        if p[1] < self.lo[1] || p[1] > self.hi[1] {
            return 0;
        }
        let mut w = 0;
        for &k in &self.rows[self.row(p[1])] {
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
        let (i0, i1) = (self.cell(0, p[0] - reach), self.cell(0, p[0] + reach));
        let (j0, j1) = (self.cell(1, p[1] - reach), self.cell(1, p[1] + reach));
        let mut best = f64::INFINITY;
        for j in j0..=j1 {
            for i in i0..=i1 {
                for &k in &self.cells[j * self.n + i] {
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
        let bins = Layer::new(&polygons);
        let mut p = Prism {
            axis,
            span,
            taper: sidewall_deg.to_radians().tan(),
            polygons,
            bins,
            bounds: ([0.0; 3], [0.0; 3]),
            id: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
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

    /// How many of the points at in-plane place `q` and heights `heights` (along the axis)
    /// are inside: the points [`Prism::contains`] holds, with the in-plane test done once
    /// when the walls are vertical.
    pub fn column_count(&self, q: [f64; 2], heights: &[f64]) -> usize {
        let [s0, s1] = self.span;
        let within = |h: &&f64| self.holds_height(**h);
        if self.taper == 0.0 {
            if !self.in_section(q, 0.0) {
                return 0;
            }
            return heights.iter().filter(within).count();
        }
        heights
            .iter()
            .filter(within)
            .filter(|h| self.in_section(q, self.inset(h.clamp(s0, s1))))
            .count()
    }

    /// Whether the in-plane point `q` lies in the base section (the whole section, with
    /// vertical walls), faces included: with [`Prism::holds_height`], [`Prism::contains`].
    pub fn in_base(&self, q: [f64; 2]) -> bool {
        self.in_section(q, 0.0)
    }

    /// Whether height `h` along the axis lies within the span, faces included.
    pub fn holds_height(&self, h: f64) -> bool {
        let [s0, s1] = self.span;
        let slack = TOLERANCE * (s1 - s0).max(self.bins.size);
        h >= s0 - slack && h <= s1 + slack
    }

    /// Which points of the grid `xs` x `ys` x `zs` (m) are inside: bit `(a * 4 + b) * 4 + d`
    /// for point (`xyz[0][a]`, `xyz[1][b]`, `xyz[2][d]`), each as [`Prism::contains`] finds it, with one in-plane
    /// test per column along the axis when the walls are vertical.
    pub fn sample_mask(&self, xyz: [[f64; 4]; 3]) -> u64 {
        let [u, v] = Self::plane_axes(self.axis);
        let bit = |idx: [usize; 3]| 1u64 << ((idx[0] * 4 + idx[1]) * 4 + idx[2]);
        let heights = &xyz[self.axis];
        let mut mask = 0;
        if self.taper == 0.0 {
            // The in-plane tests, once per column; the cells of a smoothing sweep along the
            // axis share them, so the last set is kept (per thread) and reused.
            let plane = self.plane_mask(xyz[u], xyz[v]);
            for a in 0..4 {
                for b in 0..4 {
                    if plane & (1 << (a * 4 + b)) == 0 {
                        continue;
                    }
                    let mut idx = [0; 3];
                    idx[u] = a;
                    idx[v] = b;
                    for (d, h) in heights.iter().enumerate() {
                        idx[self.axis] = d;
                        if self.holds_height(*h) {
                            mask |= bit(idx);
                        }
                    }
                }
            }
            return mask;
        }
        for a in 0..4 {
            for b in 0..4 {
                for (d, h) in heights.iter().enumerate() {
                    let mut idx = [0; 3];
                    let mut p = [0.0; 3];
                    (idx[u], idx[v], idx[self.axis]) = (a, b, d);
                    (p[u], p[v], p[self.axis]) = (xyz[u][a], xyz[v][b], *h);
                    if self.contains(p) {
                        mask |= bit(idx);
                    }
                }
            }
        }
        mask
    }

    /// Which in-plane points `us` x `vs` lie in the base section: bit `a * 4 + b`.
    fn plane_mask(&self, us: [f64; 4], vs: [f64; 4]) -> u16 {
        /// (prism id, us, vs, mask) of the last call on this thread.
        type Memo = Option<(u64, [f64; 4], [f64; 4], u16)>;
        thread_local! {
            static LAST: std::cell::Cell<Memo> = const { std::cell::Cell::new(None) };
        }
        let me = self.id;
        if let Some((who, lu, lv, m)) = LAST.get() {
            if who == me && lu == us && lv == vs {
                return m;
            }
        }
        let mut m = 0u16;
        for (a, &pu) in us.iter().enumerate() {
            for (b, &pv) in vs.iter().enumerate() {
                if self.in_section([pu, pv], 0.0) {
                    m |= 1 << (a * 4 + b);
                }
            }
        }
        LAST.set(Some((me, us, vs, m)));
        m
    }

    /// Whether point `p` (m) is inside, faces included (to 1e-9 of the prism's size).
    pub fn contains(&self, p: [f64; 3]) -> bool {
        let [s0, s1] = self.span;
        let h = p[self.axis];
        if !self.holds_height(h) {
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
        let (lo, hi) = (b.lo, b.hi);
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
