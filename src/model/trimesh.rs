//! Closed triangle meshes (an STL solid): inside tests and chords by ray crossings.
//!
//! A point is inside when the crossings of a ray from it along an axis add up to a non-zero
//! winding: each triangle the ray passes counts +1 or -1 by the side its normal faces. The
//! crossing test is exact about edges: a point whose projection lies on an edge shared by two
//! triangles is counted for exactly one of them (the top-left rule of rasterisers, applied to
//! each triangle's projection taken counter-clockwise), so a ray through an edge or a vertex
//! neither doubles nor drops a crossing. Bins over each projection plane keep a ray to the
//! triangles near it; the grid paints whole columns at once from one ray's crossings
//! ([`TriMesh::spans`]).

use std::sync::OnceLock;

/// A closed, consistently oriented triangle mesh in metres.
#[derive(Debug)]
pub struct TriMesh {
    /// The triangles' corners.
    pub triangles: Vec<[[f64; 3]; 3]>,
    lo: [f64; 3],
    hi: [f64; 3],
    /// Per ray axis, the bins over the other two axes (built on first use).
    bins: [OnceLock<Bins>; 3],
    /// Unique to this mesh (a clone gets its own): the key of the per-thread memo of
    /// [`TriMesh::spans`].
    id: u64,
}

impl Clone for TriMesh {
    fn clone(&self) -> Self {
        TriMesh::new(self.triangles.clone())
    }
}

impl PartialEq for TriMesh {
    fn eq(&self, other: &Self) -> bool {
        self.triangles == other.triangles
    }
}

/// How many lines' spans each thread remembers (see [`TriMesh::spans`]): the 4 x 4 lines of
/// one cell's smoothing, twice over.
const SPAN_MEMO: usize = 32;

/// Triangle ids by bin of one projection plane.
#[derive(Debug)]
struct Bins {
    /// The plane's axes (the two other than the ray's).
    axes: [usize; 2],
    lo: [f64; 2],
    step: [f64; 2],
    n: [usize; 2],
    cells: Vec<Vec<u32>>,
}

/// Twice the signed area of triangle (a, b, p) in a plane: > 0 when p is left of a -> b.
fn orient(a: [f64; 2], b: [f64; 2], p: [f64; 2]) -> f64 {
    (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
}

/// Whether edge a -> b of a counter-clockwise triangle is a top or a left edge: the edges
/// that keep the points on them (so that two triangles sharing an edge, which run it in
/// opposite directions, do not both keep them).
fn top_left(a: [f64; 2], b: [f64; 2]) -> bool {
    let d = [b[0] - a[0], b[1] - a[1]];
    (d[1] == 0.0 && d[0] < 0.0) || d[1] > 0.0
}

impl TriMesh {
    /// A mesh of `triangles` (already checked closed and consistently oriented).
    pub fn new(triangles: Vec<[[f64; 3]; 3]>) -> TriMesh {
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        for t in &triangles {
            for q in t {
                for a in 0..3 {
                    lo[a] = lo[a].min(q[a]);
                    hi[a] = hi[a].max(q[a]);
                }
            }
        }
        TriMesh {
            triangles,
            lo,
            hi,
            bins: Default::default(),
            id: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    /// The bounding box (min, max).
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        (self.lo, self.hi)
    }

    /// The enclosed volume (the divergence theorem over the triangles; positive for outward
    /// normals).
    pub fn volume(&self) -> f64 {
        self.triangles
            .iter()
            .map(|[a, b, c]| {
                let cross = [
                    b[1] * c[2] - b[2] * c[1],
                    b[2] * c[0] - b[0] * c[2],
                    b[0] * c[1] - b[1] * c[0],
                ];
                (a[0] * cross[0] + a[1] * cross[1] + a[2] * cross[2]) / 6.0
            })
            .sum()
    }

    fn bins(&self, axis: usize) -> &Bins {
        self.bins[axis].get_or_init(|| {
            let axes = [(axis + 1) % 3, (axis + 2) % 3];
            let lo = axes.map(|a| self.lo[a]);
            let size = axes.map(|a| (self.hi[a] - self.lo[a]).max(f64::MIN_POSITIVE));
            let per_axis = ((self.triangles.len() as f64).sqrt().ceil() as usize).clamp(1, 2048);
            let n = [per_axis; 2];
            let step = [0, 1].map(|d| size[d] / n[d] as f64);
            let index = |d: usize, x: f64| {
                (((x - lo[d]) / step[d]).floor()).clamp(0.0, (n[d] - 1) as f64) as usize
            };
            let mut cells = vec![Vec::new(); n[0] * n[1]];
            for (k, t) in self.triangles.iter().enumerate() {
                let (mut a0, mut a1, mut b0, mut b1) = (
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                );
                for q in t {
                    a0 = a0.min(q[axes[0]]);
                    a1 = a1.max(q[axes[0]]);
                    b0 = b0.min(q[axes[1]]);
                    b1 = b1.max(q[axes[1]]);
                }
                for j in index(1, b0)..=index(1, b1) {
                    for i in index(0, a0)..=index(0, a1) {
                        cells[j * n[0] + i].push(k as u32);
                    }
                }
            }
            Bins {
                axes,
                lo,
                step,
                n,
                cells,
            }
        })
    }

    /// The crossings of the line through `p` along `axis` with the surface, in order along
    /// it: (coordinate along the axis, +1 where the line leaves through the surface, -1 where
    /// it enters).
    pub fn crossings(&self, p: [f64; 3], axis: usize) -> Vec<(f64, i32)> {
        let b = self.bins(axis);
        let q = b.axes.map(|a| p[a]);
        let mut out = Vec::new();
        if (0..2).any(|d| q[d] < b.lo[d] || q[d] > b.lo[d] + b.step[d] * b.n[d] as f64) {
            return out;
        }
        let cell = |d: usize| {
            (((q[d] - b.lo[d]) / b.step[d]).floor()).clamp(0.0, (b.n[d] - 1) as f64) as usize
        };
        for &k in &b.cells[cell(1) * b.n[0] + cell(0)] {
            let t = &self.triangles[k as usize];
            let mut v = t.map(|c| [c[b.axes[0]], c[b.axes[1]]]);
            let area = orient(v[0], v[1], v[2]);
            if area == 0.0 {
                continue; // edge-on to the line: the neighbours carry the crossing
            }
            // The sign: a triangle counter-clockwise in the projection faces +axis.
            let sign = if area > 0.0 { 1 } else { -1 };
            if area < 0.0 {
                v.swap(1, 2);
            }
            let inside = (0..3).all(|e| {
                let (a, c) = (v[e], v[(e + 1) % 3]);
                let w = orient(a, c, q);
                w > 0.0 || (w == 0.0 && top_left(a, c))
            });
            if !inside {
                continue;
            }
            // Where the line meets the triangle's plane.
            let [a, bb, c] = *t;
            let n = [
                (bb[1] - a[1]) * (c[2] - a[2]) - (bb[2] - a[2]) * (c[1] - a[1]),
                (bb[2] - a[2]) * (c[0] - a[0]) - (bb[0] - a[0]) * (c[2] - a[2]),
                (bb[0] - a[0]) * (c[1] - a[1]) - (bb[1] - a[1]) * (c[0] - a[0]),
            ];
            let known: f64 = b.axes.iter().map(|&x| n[x] * (p[x] - a[x])).sum::<f64>();
            let s = a[axis] - known / n[axis];
            out.push((s, sign));
        }
        out.sort_by(|x, y| x.0.total_cmp(&y.0));
        out
    }

    /// The intervals along `axis` of the line through `p` that lie inside, in order: where
    /// the running sum of [`Self::crossings`] (entering -1, leaving +1, taken as the count of
    /// the crossings still ahead) is non-zero.
    ///
    /// The last 32 lines asked for on each thread are remembered: the smoothing
    /// asks the same 16 lines along z for every cell of a column that meets the surface.
    pub fn spans(&self, p: [f64; 3], axis: usize) -> Vec<(f64, f64)> {
        /// (mesh id, axis, the line's two other coordinates' bits, its spans), newest last.
        type Memo = Vec<(u64, usize, [u64; 2], Vec<(f64, f64)>)>;
        thread_local! {
            static LAST: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let line = [(axis + 1) % 3, (axis + 2) % 3].map(|a| p[a].to_bits());
        let key = (self.id, axis, line);
        let hit = LAST.with_borrow(|memo| {
            memo.iter()
                .rev()
                .find(|e| (e.0, e.1, e.2) == key)
                .map(|e| e.3.clone())
        });
        if let Some(spans) = hit {
            return spans;
        }
        let spans = self.line_spans(p, axis);
        LAST.with_borrow_mut(|memo| {
            if memo.len() == SPAN_MEMO {
                memo.remove(0);
            }
            memo.push((key.0, key.1, key.2, spans.clone()));
        });
        spans
    }

    /// [`TriMesh::spans`] without the memo.
    fn line_spans(&self, p: [f64; 3], axis: usize) -> Vec<(f64, f64)> {
        let c = self.crossings(p, axis);
        let mut ahead: i32 = c.iter().map(|x| x.1).sum();
        let mut out = Vec::new();
        let mut start: Option<f64> = None;
        // Before the first crossing the sum of all crossings ahead is the winding there (0
        // outside a closed surface).
        if ahead != 0 {
            start = Some(f64::NEG_INFINITY);
        }
        for (s, sign) in c {
            ahead -= sign;
            match (start, ahead != 0) {
                (None, true) => start = Some(s),
                (Some(a), false) => {
                    out.push((a, s));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(a) = start {
            out.push((a, f64::INFINITY));
        }
        out.retain(|(a, b)| b > a);
        out
    }

    /// Whether `p` is inside: its winding along z (crossings at or above it) is non-zero.
    pub fn contains(&self, p: [f64; 3]) -> bool {
        if (0..3).any(|a| p[a] < self.lo[a] || p[a] > self.hi[a]) {
            return false;
        }
        let w: i32 = self
            .crossings(p, 2)
            .iter()
            .filter(|c| c.0 >= p[2])
            .map(|c| c.1)
            .sum();
        w != 0
    }
}

/// What is wrong with a triangle soup as a closed solid: triangles given by vertex indices
/// (equal positions, one index). None when every edge is shared by exactly two triangles
/// that run it in opposite directions; else a message saying where.
pub fn closed_problem(vertices: &[[f64; 3]], faces: &[[usize; 3]]) -> Option<String> {
    use std::collections::HashMap;
    let mut directed: HashMap<(usize, usize), usize> = HashMap::new();
    for (f, t) in faces.iter().enumerate() {
        for e in 0..3 {
            let (a, b) = (t[e], t[(e + 1) % 3]);
            if a == b {
                continue;
            }
            if let Some(other) = directed.insert((a, b), f) {
                let [x, y] = [vertices[a], vertices[b]];
                return Some(format!(
                    "inconsistent orientation: triangles {other} and {f} run the edge from ({}, {}, {}) to ({}, {}, {}) the same way (flip one of them)",
                    x[0], x[1], x[2], y[0], y[1], y[2]
                ));
            }
        }
    }
    let open: Vec<&(usize, usize)> = directed
        .keys()
        .filter(|(a, b)| !directed.contains_key(&(*b, *a)))
        .collect();
    if let Some(&&(a, b)) = open.iter().min() {
        let [x, y] = [vertices[a], vertices[b]];
        return Some(format!(
            "not closed: {} edge{} belong to one triangle only, e.g. the edge from ({}, {}, {}) to ({}, {}, {}) of triangle {}",
            open.len(),
            if open.len() == 1 { "" } else { "s" },
            x[0],
            x[1],
            x[2],
            y[0],
            y[1],
            y[2],
            directed[&(a, b)]
        ));
    }
    None
}

/// A closed, outward-oriented triangle mesh of a sphere of `radius` at the origin: an
/// icosahedron subdivided `levels` times, its vertices pushed onto the sphere (20 * 4^levels
/// triangles). For tests and scenes.
pub fn icosphere(radius: f64, levels: usize) -> (Vec<[f64; 3]>, Vec<[usize; 3]>) {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut v: Vec<[f64; 3]> = vec![
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ];
    let mut f: Vec<[usize; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    let unit = |p: [f64; 3]| {
        let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        p.map(|x| x / n)
    };
    for q in &mut v {
        *q = unit(*q);
    }
    for _ in 0..levels {
        let mut mid = std::collections::HashMap::new();
        let mut next = Vec::with_capacity(f.len() * 4);
        let mut middle = |a: usize, b: usize, v: &mut Vec<[f64; 3]>| {
            *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                let m = [0, 1, 2].map(|k| 0.5 * (v[a][k] + v[b][k]));
                v.push(unit(m));
                v.len() - 1
            })
        };
        for [a, b, c] in f {
            let ab = middle(a, b, &mut v);
            let bc = middle(b, c, &mut v);
            let ca = middle(c, a, &mut v);
            next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        f = next;
    }
    (v.into_iter().map(|p| p.map(|x| x * radius)).collect(), f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sphere(levels: usize) -> TriMesh {
        let (v, f) = icosphere(1.0, levels);
        assert!(closed_problem(&v, &f).is_none());
        TriMesh::new(f.iter().map(|t| t.map(|i| v[i])).collect())
    }

    #[test]
    fn an_icosphere_is_closed_outward_and_holds_its_inside() {
        let m = sphere(3);
        assert_eq!(m.triangles.len(), 1280);
        let exact = 4.0 / 3.0 * std::f64::consts::PI;
        assert!(m.volume() > 0.97 * exact && m.volume() < exact);
        assert!(m.contains([0.0, 0.0, 0.0]));
        assert!(m.contains([0.5, 0.3, -0.2]));
        assert!(!m.contains([0.9, 0.5, 0.0]));
        // Through the centre along each axis: one span, across the diameter.
        for axis in 0..3 {
            let s = m.spans([0.0; 3], axis);
            assert_eq!(s.len(), 1, "{s:?}");
            // The axes pass through vertices (midpoints of subdivided edges lie on them).
            let (a, b) = s[0];
            assert!((-1.0 - 1e-12..-0.98).contains(&a), "{s:?}");
            assert!((0.98..=1.0 + 1e-12).contains(&b), "{s:?}");
        }
    }

    #[test]
    fn rays_through_vertices_and_edges_count_once() {
        // An icosahedron on a grid of rays along z, among them rays through its vertices on
        // the plane x = 0 and through edges' projections: a convex solid holds one span per
        // ray, never two (a doubled crossing) or a lone half.
        let (v, f) = icosphere(1.0, 0);
        let m = TriMesh::new(f.iter().map(|t| t.map(|i| v[i])).collect());
        let mut inside = 0;
        let n = 41;
        for i in 0..n {
            for j in 0..n {
                let x = -1.0 + 2.0 * i as f64 / (n - 1) as f64;
                let y = -1.0 + 2.0 * j as f64 / (n - 1) as f64;
                let s = m.spans([x, y, 0.0], 2);
                assert!(s.len() <= 1, "{x} {y}: {s:?}");
                inside += s.len();
            }
        }
        assert!(inside > 0);
    }

    #[test]
    fn open_and_misoriented_meshes_are_named() {
        let (v, mut f) = icosphere(1.0, 1);
        f.pop();
        let why = closed_problem(&v, &f).unwrap();
        assert!(why.starts_with("not closed: 3 edges"), "{why}");
        let (v, mut f) = icosphere(1.0, 1);
        f[0].swap(1, 2);
        let why = closed_problem(&v, &f).unwrap();
        assert!(why.starts_with("inconsistent orientation"), "{why}");
    }
}
