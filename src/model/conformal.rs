//! Conformal PEC surfaces: the cut faces of the H update (Dey and Mittra, 1997).
//!
//! A staircased PEC holds every E component whose Yee point lies inside it at zero, so a curved
//! or slanted surface moves by up to half a cell and a cavity or a scatterer is not its drawn
//! size. The Dey-Mittra scheme keeps the surface where it is drawn by changing only the H
//! update of the faces the surface cuts: Faraday's law over the part of the face outside the
//! conductor,
//!
//! ```text
//!     mu A_f dH/dt = - sum over the face's edges of (+-) E_e l_e,
//! ```
//!
//! with `l_e` the length of each edge outside the conductor and `A_f` the free area of the
//! face. An E edge partly outside the conductor is updated as usual (it carries the field on
//! its free part); only an edge wholly inside is held at zero. The E update does not change.
//!
//! **Stability** ([`stabilize`]). A face with a small free area but a long free edge has a
//! large coefficient (`l_e / A_f`): the E next to it would need a shorter time step. The rule
//! bounds each E edge's diagonal in the update (the sum over its four faces of
//! `r_e / (A_f d^2)`) by its plain value over `courant^2`; around an edge beyond that it either
//! raises the faces' areas just enough or holds the edge at zero, whichever moves the surface
//! less. It is derived from the diagonal, not proven for every geometry, and checked by long
//! runs of lossless cavities (`tests/conformal.rs`). At the default courant 0.99 it would move
//! much of a curved surface, so a scene that gives no `courant` runs at [`CONFORMAL_COURANT`]
//! when its surfaces need it (the resolver decides from [`Conformal::stiff`]); `yee check`
//! and `yee plan` say so.
//!
//! Faces are cut only by PEC objects with volume whose material is conformal (`pec = true`,
//! not `conformal = false`); sheets and wires thinner than a cell stay on grid planes and
//! edges ([`super::place_pec`]). Faces inside a CPML layer, and faces whose edges lie on a
//! non-PEC maximum face of the domain, keep the staircase (their update has terms this
//! correction does not carry). Fractions come from the objects' exact chords along the edges;
//! a face's area from 32 chords across it (midpoint rule: error below 1e-3 of a face for a
//! smooth surface). The painter's E ids follow the fractions ([`Conformal::opened`],
//! [`Conformal::closed`]).

use super::{Component, Model};
use rayon::prelude::*;

/// Free fractions below this are zero, above `1 - FRACTION_TOLERANCE` one: a Yee point on a
/// drawn surface is inside it, as the painter decides.
const FRACTION_TOLERANCE: f64 = 1e-9;

/// The `courant` a scene that gives none runs at.
pub const DEFAULT_COURANT: f64 = 0.99;

/// The `courant` a scene that gives none runs at when its conformal PEC surfaces need a
/// shorter time step to stay exact ([`Conformal::stiff`]): 0.7, where a cylinder
/// cavity's TM010 and a sphere's TM101 agree with the analytic values to the grid's own
/// dispersion (`tests/conformal.rs`); at 0.99 the stability rule moves enough of the surface
/// to cost up to 1.6 %. Tidy3D reduces its conformal PEC's time step by 0.3 likewise.
pub const CONFORMAL_COURANT: f64 = 0.7;

/// An E point the painter reopens: its cell and the material of its free part.
pub type Reopened = ([usize; 3], u8);

/// A fraction with rounding noise at its ends snapped to 0 or 1.
fn snap(r: f64) -> f64 {
    if r < FRACTION_TOLERANCE {
        0.0
    } else if r > 1.0 - FRACTION_TOLERANCE {
        1.0
    } else {
        r
    }
}

/// What one plane of one H component's normal holds: its cut faces, and the E_a points of the
/// plane the painter reopens and closes ([`Conformal::opened`], [`Conformal::closed`]).
struct PlaneCuts {
    faces: Vec<CutFace>,
    opened: Vec<Reopened>,
    closed: Vec<[usize; 3]>,
}

/// The edge fractions of one node plane (normal `c`, node `k`) over the conformal box.
struct PlaneEdges {
    c: usize,
    k: usize,
    a: usize,
    b: usize,
    /// The box's cells along a and b.
    box_a: [usize; 2],
    box_b: [usize; 2],
    /// Per b node from `box_b[0]` (up to the last node the arrays hold): the E_a edges' free
    /// fractions and free materials, per a cell from `box_a[0]`.
    ea: Vec<(Vec<f64>, Vec<Option<u8>>)>,
    /// Per a node from `box_a[0]`: the E_b edges' free fractions, per b cell from `box_b[0]`.
    eb: Vec<Vec<f64>>,
}

impl PlaneEdges {
    /// E_a's free fraction at a-cell `i`, b-node `j` (1 outside the box: nothing there).
    fn r_a(&self, i: usize, j: usize) -> f64 {
        self.ea
            .get(j - self.box_b[0])
            .map_or(1.0, |row| row.0[i - self.box_a[0]])
    }

    /// E_b's free fraction at a-node `i`, b-cell `j` (1 outside the box).
    fn r_b(&self, i: usize, j: usize) -> f64 {
        self.eb
            .get(i - self.box_a[0])
            .map_or(1.0, |col| col[j - self.box_b[0]])
    }

    /// The grid cell of in-plane indices (i, j).
    fn cell(&self, i: usize, j: usize) -> [usize; 3] {
        let mut cell = [0; 3];
        (cell[self.a], cell[self.b], cell[self.c]) = (i, j, self.k);
        cell
    }
}

/// Chords across a face for its free area.
const AREA_LINES: usize = 32;

/// A face of an H component that a conformal PEC surface cuts, with its update's fractions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CutFace {
    /// The H component's cell.
    pub cell: [usize; 3],
    /// Free fractions of the face's four edges. With `c` the H component's axis and
    /// `(a, b) = (c + 1, c + 2) mod 3`: E_b at the cell, E_b one cell along a, E_a at the cell,
    /// E_a one cell along b.
    pub free: [f64; 4],
    /// The free fraction of the face's area.
    pub area: f64,
    /// The area fraction the update divides by: `area`, or enlarged for stability.
    pub used: f64,
}

impl CutFace {
    /// True when the stability rule enlarged the face's area.
    pub fn enlarged(&self) -> bool {
        self.used > self.area
    }
}

/// Every cut face of the model and the E points its conformal surfaces reopen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conformal {
    /// By H component (Hx, Hy, Hz), the cut faces in (x, y, z) order.
    pub faces: [Vec<CutFace>; 3],
    /// By E component, the cells whose Yee point lies inside a conformal PEC but whose edge
    /// is partly free, with the material of its free part, in (x, y, z) order: the painter
    /// gives them that material instead of the PEC.
    pub opened: [Vec<Reopened>; 3],
    /// By E component, the cells the stability rule closes: held at zero like the conductor
    /// (the painter gives them `pec_id`), in (x, y, z) order.
    pub closed: [Vec<[usize; 3]>; 3],
    /// The id of a conformal PEC material (what closed cells are painted with).
    pub pec_id: u8,
    /// The run's `courant`: time step over the stability limit.
    pub courant: f64,
    /// E edges whose faces the time step made the stability rule close or enlarge (surface
    /// lines, closed at any time step, not counted): none means the surfaces are exact.
    pub stiff: usize,
    /// What the surfaces cut before the stability rule, which does not depend on the time
    /// step: a model rebuilt at another time step on the same grid reuses it
    /// ([`Model::reuse_conformal_cuts`]).
    cuts: std::sync::Arc<Cuts>,
}

/// The cut faces and the E points the painter must reopen or close to agree with the
/// fractions, before the stability rule: a pure function of the geometry and the grid lines.
#[derive(Debug, Clone, Default, PartialEq)]
struct Cuts {
    faces: [Vec<CutFace>; 3],
    opened: [Vec<Reopened>; 3],
    closed: [Vec<[usize; 3]>; 3],
}

impl Conformal {
    /// Cut faces in all.
    pub fn face_count(&self) -> usize {
        self.faces.iter().map(Vec::len).sum()
    }

    /// Cut faces whose area the stability rule enlarged at the run's time step.
    pub fn enlarged_count(&self) -> usize {
        self.faces.iter().flatten().filter(|f| f.enlarged()).count()
    }

    /// E edges the stability rule closed.
    pub fn closed_count(&self) -> usize {
        self.closed.iter().map(Vec::len).sum()
    }
}

/// What `yee check` and `yee plan` say about the conformal PEC surfaces.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ConformalSummary {
    /// Cut faces the pass corrects (an estimate when `exact` is false).
    pub cut_faces: u64,
    /// False when the surfaces span more than [`EXACT_CONFORMAL_CELLS`]: the faces were cut on
    /// sampled planes only, and what the stability rule does is not counted.
    pub exact: bool,
    /// E edges the stability rule held at zero (surface lines included); None when not exact.
    pub closed_edges: Option<usize>,
    /// Faces whose area the stability rule enlarged; None when not exact.
    pub enlarged_faces: Option<usize>,
    /// The run's courant.
    pub courant: f64,
    /// True when the default time step was reduced for the surfaces (the scene gave none).
    pub reduced: bool,
    /// True when the default courant would make the stability rule move much of the surface
    /// ([`ConformalEstimate::stiff`]).
    pub stiff: bool,
}

impl ConformalSummary {
    /// One line for `yee check` and `yee plan`.
    pub fn line(&self) -> String {
        let step = if self.reduced {
            format!(
                " (the default time step, reduced from courant {DEFAULT_COURANT} so that the surfaces stay where they are drawn; `courant` in [simulation] chooses another)"
            )
        } else if self.stiff && self.courant > CONFORMAL_COURANT {
            format!(
                " (the scene's: at {CONFORMAL_COURANT}, the default for such surfaces, fewer faces would need the rule)"
            )
        } else {
            String::new()
        };
        let rule = match (self.closed_edges, self.enlarged_faces) {
            (Some(c), Some(e)) => {
                format!("; for stability {c} E edges are held at zero and {e} faces enlarged")
            }
            _ => String::new(),
        };
        format!(
            "conformal PEC: {}{} cut faces at courant {}{step}{rule}",
            if self.exact { "" } else { "about " },
            self.cut_faces,
            (self.courant * 1e4).round() / 1e4,
        )
    }
}

/// Above this many cells in the conformal surfaces' box, [`Model::conformal_estimate`] cuts
/// sampled planes only, so that `yee plan` answers in well under a second on any grid.
pub const EXACT_CONFORMAL_CELLS: u64 = 1_000_000;

/// The conformal surfaces as quick decisions need them: the resolver's time step and the
/// plan's bytes. Exact while the surfaces' box holds at most [`EXACT_CONFORMAL_CELLS`]; beyond,
/// every k-th plane of each normal is cut and stands for the k planes from it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConformalEstimate {
    /// Cut faces per global x plane (all three H components).
    pub x_planes: Vec<u64>,
    /// Cut faces in all.
    pub faces: u64,
    /// Whether the default courant would make the stability rule act on much of the surface:
    /// some face's area, not zero, below 0.9 of its longest free edge's fraction (next to
    /// plain faces, an edge is beyond the rule's bound at courant 0.99 below 0.93; a face of
    /// no area lies along the surface, whose edges are held at any time step).
    pub stiff: bool,
    /// Whether every plane was cut.
    pub exact: bool,
    /// One plane in this many was cut (1 when exact).
    pub sampling: usize,
    /// How long making the estimate took (s).
    pub seconds: f64,
}

impl Model {
    /// The conformal PEC summary; None without cut faces.
    pub fn conformal_summary(&self) -> Option<ConformalSummary> {
        let est = self.conformal_estimate();
        if est.faces == 0 {
            return None;
        }
        let g = &self.grid;
        let courant = g.dt / super::Grid::courant_limit_of(g.min_cell(), self.flat_axes());
        let full = est.exact.then(|| self.conformal());
        Some(ConformalSummary {
            cut_faces: est.faces,
            exact: est.exact,
            closed_edges: full.as_ref().map(|c| c.closed_count()),
            enlarged_faces: full.as_ref().map(|c| c.enlarged_count()),
            courant,
            reduced: self.conformal_reduced,
            stiff: est.stiff,
        })
    }

    /// The conformal surfaces' estimate ([`ConformalEstimate`]), made once per model.
    pub fn conformal_estimate(&self) -> std::sync::Arc<ConformalEstimate> {
        self.conformal_estimate
            .get_or_init(|| {
                let started = std::time::Instant::now();
                let mut e = self.estimate_conformal();
                e.seconds = started.elapsed().as_secs_f64();
                std::sync::Arc::new(e)
            })
            .clone()
    }

    /// [`Model::conformal_estimate`], made.
    fn estimate_conformal(&self) -> ConformalEstimate {
        let mut out = ConformalEstimate {
            x_planes: vec![0; self.grid.shape[0]],
            exact: true,
            sampling: 1,
            ..Default::default()
        };
        let Some(bx) = self.conformal_box() else {
            return ConformalEstimate {
                exact: true,
                sampling: 1,
                ..Default::default()
            };
        };
        let volume: u64 = bx.iter().map(|r| (r[1] - r[0]) as u64).product();
        let stride = (volume as f64 / EXACT_CONFORMAL_CELLS as f64)
            .ceil()
            .max(1.0) as usize;
        // A face of no area has its free edges on the surface: held at any time step.
        let stiff =
            |f: &CutFace| f.area > 0.0 && f.area < 0.9 * f.free.iter().copied().fold(0.0, f64::max);
        if stride == 1 {
            // Small enough to cut whole: the faces the pass will have (after the rule).
            let full = self.conformal();
            out.stiff = full.cuts.faces.iter().flatten().any(stiff);
            for f in full.faces.iter().flatten() {
                out.x_planes[f.cell[0]] += 1;
            }
            out.faces = out.x_planes.iter().sum();
            if out.faces == 0 {
                out.x_planes.clear();
            }
            return out;
        }
        out.exact = false;
        out.sampling = stride;
        for c in 0..3 {
            let ks: Vec<usize> = (bx[c][0]..bx[c][1]).step_by(stride).collect();
            let planes: Vec<(usize, Vec<CutFace>)> = ks
                .par_iter()
                .map(|&k| (k, self.cut_faces_of_plane(c, k, bx).faces))
                .collect();
            for (k, faces) in planes {
                let weight = stride.min(bx[c][1] - k);
                for f in &faces {
                    out.stiff |= stiff(f);
                    // A sampled plane stands for the `weight` planes from it: along x, those
                    // planes; across, the same x.
                    let xs = if c == 0 {
                        k..k + weight
                    } else {
                        f.cell[0]..f.cell[0] + 1
                    };
                    let each = if c == 0 { 1 } else { weight as u64 };
                    for x in xs {
                        out.x_planes[x] += each;
                    }
                }
            }
        }
        out.faces = out.x_planes.iter().sum();
        if out.faces == 0 {
            out.x_planes.clear();
        }
        out
    }

    /// The conformal PEC surfaces' cut faces (computed once per model; empty without a
    /// conformal PEC object).
    pub fn conformal(&self) -> std::sync::Arc<Conformal> {
        self.conformal
            .get_or_init(|| std::sync::Arc::new(self.cut_faces()))
            .clone()
    }

    /// The index box (node indices `[lo, hi]` per axis, within the grid) around every
    /// conformal PEC object, a cell wider each way; None when there is none.
    fn conformal_box(&self) -> Option<[[usize; 2]; 3]> {
        let g = &self.grid;
        let table = &self.materials.materials;
        let mut out: Option<[[usize; 2]; 3]> = None;
        for o in &self.objects {
            let m = &table[o.material as usize];
            if !(m.pec && m.conformal && o.has_volume()) {
                continue;
            }
            let (lo, hi) = o.bounds();
            let b = [0, 1, 2].map(|a| {
                let first = g.fractional_index(a, lo[a]).floor() - 1.0;
                let last = g.fractional_index(a, hi[a]).ceil() + 1.0;
                let n = g.shape[a] as f64;
                [first.clamp(0.0, n) as usize, last.clamp(0.0, n) as usize]
            });
            out = Some(match out {
                None => b,
                Some(o) => [0, 1, 2].map(|a| [o[a][0].min(b[a][0]), o[a][1].max(b[a][1])]),
            });
        }
        out
    }

    /// Every cut face and reopened E point, plane by plane of each H component's normal.
    fn cut_faces(&self) -> Conformal {
        self.stabilized(std::sync::Arc::new(self.cuts()))
    }

    /// What the conformal surfaces cut, plane by plane of each H component's normal.
    fn cuts(&self) -> Cuts {
        let mut out = Cuts::default();
        let Some(bx) = self.conformal_box() else {
            return out;
        };
        for c in 0..3 {
            let planes: Vec<PlaneCuts> = (bx[c][0]..bx[c][1])
                .into_par_iter()
                .map(|k| self.cut_faces_of_plane(c, k, bx))
                .collect();
            for p in planes {
                out.faces[c].extend(p.faces);
                out.opened[(c + 1) % 3].extend(p.opened);
                out.closed[(c + 1) % 3].extend(p.closed);
            }
        }
        for list in &mut out.faces {
            list.sort_by_key(|f| f.cell);
        }
        out
    }

    /// `cuts` made stable at this model's time step ([`stabilize`]), with the painter's lists
    /// in (x, y, z) order.
    fn stabilized(&self, cuts: std::sync::Arc<Cuts>) -> Conformal {
        let g = &self.grid;
        let flat = self.flat_axes();
        let courant = g.dt / super::Grid::courant_limit_of(g.min_cell(), flat);
        let primal = |axis: usize, i: usize| g.primal(axis, i as isize);
        let across = Across {
            primal: &primal,
            flat,
        };
        let mut faces = cuts.faces.clone();
        let (shut, stiff) = stabilize(&mut faces, courant, &across);
        // Faces whose every edge the conductor holds change nothing.
        for list in &mut faces {
            list.retain(|f| f.free.iter().any(|&r| r > 0.0));
        }
        let mut opened = cuts.opened.clone();
        let mut closed = cuts.closed.clone();
        for (e, list) in opened.iter_mut().enumerate() {
            list.retain(|o| !shut.contains(&(e, o.0)));
            list.sort_by_key(|o| o.0);
        }
        for (e, cell) in shut {
            closed[e].push(cell);
        }
        for list in &mut closed {
            list.sort();
            list.dedup();
        }
        let pec = self
            .materials
            .materials
            .iter()
            .position(|m| m.pec && m.conformal);
        Conformal {
            faces,
            opened,
            closed,
            pec_id: pec.map_or(0, |p| p as u8),
            courant,
            stiff,
            cuts,
        }
    }

    /// Take `old`'s cuts, stabilized at this model's time step, when `old` is this model at
    /// another time step (the same grid lines and objects) and has made them: the resolver's
    /// second build at the shorter default time step need not cut the surfaces again.
    pub fn reuse_conformal_cuts(&mut self, old: &Model) {
        let (a, b) = (&self.grid, &old.grid);
        let same = (a.shape, a.cell, a.origin, &a.lines) == (b.shape, b.cell, b.origin, &b.lines)
            && self.objects == old.objects
            && self.materials == old.materials
            && self.boundaries.faces == old.boundaries.faces
            && [0, 1, 2].map(|i| {
                (
                    self.boundaries.profiles[i].lo,
                    self.boundaries.profiles[i].hi,
                )
            }) == [0, 1, 2]
                .map(|i| (old.boundaries.profiles[i].lo, old.boundaries.profiles[i].hi));
        // Only cuts already made: a large model's are made when the run first needs them.
        if let (true, Some(done)) = (same, old.conformal.get()) {
            let conformal = self.stabilized(done.cuts.clone());
            self.conformal = std::sync::OnceLock::from(std::sync::Arc::new(conformal));
        }
    }

    /// The cut faces of H component `c` in node plane `k` of axis `c`, and the E_a points of
    /// that plane the painter reopens or closes (`a = c + 1`; each E point is reported from
    /// one plane).
    fn cut_faces_of_plane(&self, c: usize, k: usize, bx: [[usize; 2]; 3]) -> PlaneCuts {
        let edges = self.plane_edges(c, k, bx);
        let (opened, closed) = self.painter_agreement(&edges);
        PlaneCuts {
            faces: self.plane_faces(&edges),
            opened,
            closed,
        }
    }

    /// The point of plane `e` at fractional node indices `ia` along a, `ib` along b.
    fn plane_point(&self, e: &PlaneEdges, ia: f64, ib: f64) -> [f64; 3] {
        let g = &self.grid;
        let mut p = [0.0; 3];
        p[e.a] = g.coordinate(e.a, ia);
        p[e.b] = g.coordinate(e.b, ib);
        p[e.c] = g.coordinate(e.c, e.k as f64);
        p
    }

    /// The free fractions (and free materials) of the E_a edges along a at each b node, and
    /// of the E_b edges along b at each a node, of node plane `k` of axis `c` over the box:
    /// one line of chords each.
    fn plane_edges(&self, c: usize, k: usize, bx: [[usize; 2]; 3]) -> PlaneEdges {
        let g = &self.grid;
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let mut e = PlaneEdges {
            c,
            k,
            a,
            b,
            box_a: bx[a],
            box_b: bx[b],
            ea: Vec::new(),
            eb: Vec::new(),
        };
        let rows = bx[b][1].min(g.shape[b] - 1) + 1 - bx[b][0];
        e.ea = (bx[b][0]..bx[b][0] + rows)
            .map(|j| {
                self.line_fractions(self.plane_point(&e, 0.0, j as f64), a, bx[a][0], bx[a][1])
            })
            .collect();
        let cols = bx[a][1].min(g.shape[a] - 1) + 1 - bx[a][0];
        e.eb = (bx[a][0]..bx[a][0] + cols)
            .map(|i| {
                let q = self.plane_point(&e, i as f64, 0.0);
                self.line_fractions(q, b, bx[b][0], bx[b][1]).0
            })
            .collect();
        e
    }

    /// The E_a points of plane `e` the painter must change to agree with the fractions: near
    /// the surface (a fraction strictly between 0 and 1, or unlike an in-plane neighbour's)
    /// a point painted conformal PEC with a free part is reopened (with its free material),
    /// and one painted free with none is closed (a line on the surface, as a tangent point
    /// gives).
    fn painter_agreement(&self, e: &PlaneEdges) -> (Vec<Reopened>, Vec<[usize; 3]>) {
        let pec_at = |p: [f64; 3]| {
            self.objects
                .iter()
                .rev()
                .find(|o| o.contains(p))
                .is_some_and(|o| {
                    let m = &self.materials.materials[o.material as usize];
                    m.pec && m.conformal && o.has_volume()
                })
        };
        let (mut opened, mut closed) = (Vec::new(), Vec::new());
        let rows = e.box_b[0]..e.box_b[0] + e.ea.len();
        for j in rows.clone() {
            for i in e.box_a[0]..e.box_a[1] {
                let r = e.r_a(i, j);
                let unlike = |jj: usize| rows.contains(&jj) && e.r_a(i, jj) != r;
                let near = (r > 0.0 && r < 1.0) || unlike(j + 1) || (j > 0 && unlike(j - 1));
                if !near {
                    continue;
                }
                let pec = pec_at(self.plane_point(e, i as f64 + 0.5, j as f64));
                let cell = e.cell(i, j);
                if r > 0.0 && pec {
                    let free = e.ea[j - e.box_b[0]].1[i - e.box_a[0]];
                    opened.push((cell, free.unwrap_or(0)));
                } else if r == 0.0 && !pec {
                    closed.push(cell);
                }
            }
        }
        (opened, closed)
    }

    /// The cut faces of plane `e`: every face with a free edge and an edge not wholly free
    /// whose update differs from the plain one, with its free area.
    fn plane_faces(&self, e: &PlaneEdges) -> Vec<CutFace> {
        let g = &self.grid;
        let layers = |axis: usize, i: usize| {
            let p = &self.boundaries.profiles[axis];
            i < p.lo || i + p.hi >= p.n
        };
        // A face in the last cell along a or b has an edge on the domain's maximum face, which
        // the arrays do not hold: a PEC face there holds its E at zero (a free fraction of 0);
        // on a flat axis (one periodic cell: a 2-D grid) that edge is the first one again,
        // and the derivative across the axis vanishes (the weights across it are zero,
        // [`crate::operator::ConformalOp`]); beyond any other kind the face keeps the
        // staircase.
        let flat = self.flat_axes();
        let last = |axis: usize, hi: usize| {
            let n = g.shape[axis];
            let open = self.boundaries.faces[axis][1].zeroes_tangential_e() || flat[axis];
            hi.min(if open { n } else { n - 1 })
        };
        // Edge `node` along `axis`: past the last node, the first again on a flat axis, else
        // held at zero.
        let wrap = |axis: usize, node: usize| {
            if node < g.shape[axis] {
                Some(node)
            } else {
                flat[axis].then_some(0)
            }
        };
        let mut faces = Vec::new();
        for i in e.box_a[0]..last(e.a, e.box_a[1]) {
            for j in e.box_b[0]..last(e.b, e.box_b[1]) {
                if layers(e.a, i) || layers(e.b, j) || layers(e.c, e.k) {
                    continue;
                }
                let free = [
                    e.r_b(i, j),
                    wrap(e.a, i + 1).map_or(0.0, |n| e.r_b(n, j)),
                    e.r_a(i, j),
                    wrap(e.b, j + 1).map_or(0.0, |n| e.r_a(i, n)),
                ];
                if let Some(face) = self.cut_face(e, i, j, free) {
                    faces.push(face);
                }
            }
        }
        faces
    }

    /// The face at a-cell `i`, b-cell `j` of plane `e` with edge fractions `free`, if the
    /// surface cuts it.
    fn cut_face(&self, e: &PlaneEdges, i: usize, j: usize, free: [f64; 4]) -> Option<CutFace> {
        let longest = free.iter().copied().fold(0.0, f64::max);
        // Wholly inside, or every edge free (a surface that cuts a face's inside without
        // crossing an edge is a feature smaller than the cell: not seen).
        if longest == 0.0 || free.iter().all(|&r| r == 1.0) {
            return None;
        }
        // Edges wholly in or out next to a surface on a grid plane: a face wholly free to a
        // coarse look keeps the plain update (its free edges weigh 1). One that looks wholly
        // inside has its free edges on the surface: it is cut (area 0), and the stability
        // rule closes those edges, as a conductor's surface holds its tangential E.
        let whole = free.iter().all(|&r| r == 0.0 || r == 1.0);
        if whole && self.free_area_of(e.c, e.k, i, j, 4) == 1.0 {
            return None;
        }
        let area = self.free_area_of(e.c, e.k, i, j, AREA_LINES);
        // Nothing to correct when every free edge's weight is the plain one.
        if free.iter().all(|&r| r == 0.0 || r == area) {
            return None;
        }
        Some(CutFace {
            cell: e.cell(i, j),
            free,
            area,
            used: area,
        })
    }

    /// The free fractions of the edges `[i0, i1)` along `axis` of the grid line through `q`
    /// (its coordinate along `axis` unused), and each edge's free material (that of its
    /// longest free piece; None when none is free), from one line of chords.
    fn line_fractions(
        &self,
        q: [f64; 3],
        axis: usize,
        i0: usize,
        i1: usize,
    ) -> (Vec<f64>, Vec<Option<u8>>) {
        let g = &self.grid;
        let table = &self.materials.materials;
        let node = |i: usize| g.coordinate(axis, i as f64);
        let pieces = self.chords(q, axis, node(i0), node(i1));
        let mut fractions = Vec::with_capacity(i1 - i0);
        let mut materials = Vec::with_capacity(i1 - i0);
        let mut first = 0;
        for i in i0..i1 {
            let (t0, t1) = (node(i), node(i + 1));
            while first < pieces.len() && pieces[first].2 <= t0 {
                first += 1;
            }
            let mut free = 0.0;
            let mut longest: Option<(f64, u8)> = None;
            for &(m, pa, pb) in pieces[first..].iter().take_while(|p| p.1 < t1) {
                let mat = &table[m as usize];
                let len = pb.min(t1) - pa.max(t0);
                if len <= 0.0 || (mat.pec && mat.conformal) {
                    continue;
                }
                free += len;
                if longest.is_none_or(|(l, _)| len > l) {
                    longest = Some((len, m));
                }
            }
            fractions.push(snap(free / (t1 - t0)));
            materials.push(longest.map(|l| l.1));
        }
        (fractions, materials)
    }

    /// The free fraction of the face of H component `c` at a-cell `i`, b-cell `j` in node
    /// plane `k`: the mean free fraction of `lines` chords along a across it.
    fn free_area_of(&self, c: usize, k: usize, i: usize, j: usize, lines: usize) -> f64 {
        let g = &self.grid;
        let (a, b) = ((c + 1) % 3, (c + 2) % 3);
        let sum: f64 = (0..lines)
            .map(|s| {
                let mut q = [0.0; 3];
                q[b] = g.coordinate(b, j as f64 + (s as f64 + 0.5) / lines as f64);
                q[c] = g.coordinate(c, k as f64);
                self.line_fractions(q, a, i, i + 1).0[0]
            })
            .sum();
        let r = sum / lines as f64;
        if r < FRACTION_TOLERANCE {
            0.0
        } else if r > 1.0 - FRACTION_TOLERANCE {
            1.0
        } else {
            r
        }
    }

    /// Give the reopened E points of component `c` in global x planes `[x0, x1)` the material
    /// of their free part (`ids` as [`Model::paint_materials`] writes them).
    pub(super) fn reopen_conformal(&self, c: Component, x0: usize, x1: usize, ids: &mut [u8]) {
        let conformal = self.conformal();
        let [_, ny, nz] = self.grid.shape;
        let list = &conformal.opened[c as usize];
        let first = list.partition_point(|e| e.0[0] < x0);
        for &(cell, m) in list[first..].iter().take_while(|e| e.0[0] < x1) {
            ids[((cell[0] - x0) * ny + cell[1]) * nz + cell[2]] = m;
        }
        let list = &conformal.closed[c as usize];
        let first = list.partition_point(|cell| cell[0] < x0);
        for cell in list[first..].iter().take_while(|cell| cell[0] < x1) {
            ids[((cell[0] - x0) * ny + cell[1]) * nz + cell[2]] = conformal.pec_id;
        }
    }
}

/// The E edges of a cut face of H component `c` at `cell`, in [`CutFace::free`] order: (E
/// component, its cell, the axis across the face from it).
fn face_edges(c: usize, cell: [usize; 3]) -> [(usize, [usize; 3], usize); 4] {
    let (a, b) = ((c + 1) % 3, (c + 2) % 3);
    let step = |axis: usize| {
        let mut q = cell;
        q[axis] += 1;
        q
    };
    [(b, cell, a), (b, step(a), a), (a, cell, b), (a, step(b), b)]
}

/// The grid as the stability rule sees it: cell sizes and flat axes (one periodic cell),
/// across which no derivative is taken.
struct Across<'a> {
    primal: &'a dyn Fn(usize, usize) -> f64,
    flat: [bool; 3],
}

/// Per E edge touched by a cut face: `(r_e, A_used, d)` of each of its cut faces (d the cell
/// size across the face) and how many of its faces of each normal are cut.
type EdgeFaces = std::collections::HashMap<(usize, [usize; 3]), (Vec<(f64, f64, f64)>, [u8; 3])>;

/// The cut faces around each E edge ([`EdgeFaces`]).
fn edge_faces(faces: &[Vec<CutFace>; 3], grid: &Across) -> EdgeFaces {
    let mut out = EdgeFaces::new();
    for (c, list) in faces.iter().enumerate() {
        for f in list {
            for (k, (e, cell, across)) in face_edges(c, f.cell).into_iter().enumerate() {
                let r = f.free[k];
                if r > 0.0 && !grid.flat[across] {
                    let entry = out.entry((e, cell)).or_default();
                    entry
                        .0
                        .push((r, f.used, (grid.primal)(across, f.cell[across])));
                    entry.1[c] += 1;
                }
            }
        }
    }
    out
}

/// The smallest `x` in (0, 1] such that edge `(e, cell)`'s diagonal, with each cut face's
/// area raised to at least `r_e x`, is within its plain value over `bound = courant^2`; None
/// when the exact areas already are. The diagonal is the cut faces' `r_e / (A d^2)` plus
/// `1/d^2` for each plain face (two faces of each normal n around an edge along e, across axis
/// 3 - e - n); its plain value is `sum 1/d^2` over all four.
fn needed(
    around: &(Vec<(f64, f64, f64)>, [u8; 3]),
    e: usize,
    cell: [usize; 3],
    bound: f64,
    grid: &Across,
) -> Option<f64> {
    let (cut, counts) = around;
    let (mut rest, mut plain) = (0.0, 0.0);
    for n in (0..3).filter(|&n| n != e && !grid.flat[3 - e - n]) {
        let d = (grid.primal)(3 - e - n, cell[3 - e - n]);
        rest += f64::from(2 - counts[n].min(2)) / (d * d);
        plain += 2.0 / (d * d);
    }
    let diagonal = |x: f64| {
        rest + cut
            .iter()
            .map(|&(r, a, d)| r / (a.max(r * x) * d * d))
            .sum::<f64>()
    };
    if diagonal(0.0) * bound <= plain {
        return None;
    }
    // At x = 1 every term is at most its plain value: always within the bound.
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if diagonal(mid) * bound <= plain {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Make the faces stable at `courant` (the module's stability rule), returning the E edges it
/// closes and how many edges the time step limited (beyond the bound with no face of zero
/// area). An E edge's diagonal (see [`needed`]) may be at most its plain value over
/// `courant^2`. Around an edge beyond that, the cheaper of two remedies, as a 1-D cavity shows
/// (a wall `delta` of a cell past the last E node, whose face has area `delta`): the cut faces'
/// areas are raised to at least `r_e x`, the least `x` that brings the edge within the bound
/// (the surface moves out by the area added), or, when its smallest face's `A / r_e` is below
/// `x / 2`, the edge is closed, held at zero like the conductor (the surface moves in by that
/// smaller amount). Faces next to no such edge keep their exact area. `primal(axis, i)` is the
/// grid's cell size; flat axes take no part.
fn stabilize(
    faces: &mut [Vec<CutFace>; 3],
    courant: f64,
    grid: &Across,
) -> (std::collections::BTreeSet<(usize, [usize; 3])>, usize) {
    let bound = courant * courant;
    let around = edge_faces(faces, grid);
    // Edges the time step limits: beyond the bound, with no face of zero area (a line on the
    // surface is closed at any time step).
    let stiff = around
        .iter()
        .filter(|&(&(e, cell), faces)| {
            faces.0.iter().all(|&(_, a, _)| a > 0.0)
                && needed(faces, e, cell, bound, grid).is_some()
        })
        .count();
    let closed: std::collections::BTreeSet<(usize, [usize; 3])> = around
        .iter()
        .filter(|&(&(e, cell), faces)| {
            needed(faces, e, cell, bound, grid).is_some_and(|x| {
                let smallest = faces
                    .0
                    .iter()
                    .map(|&(r, a, _)| a / r)
                    .fold(f64::INFINITY, f64::min);
                smallest < 0.5 * x
            })
        })
        .map(|(&key, _)| key)
        .collect();
    for (c, list) in faces.iter_mut().enumerate() {
        for f in list.iter_mut() {
            for (k, key) in face_edges(c, f.cell).into_iter().enumerate() {
                if closed.contains(&(key.0, key.1)) {
                    f.free[k] = 0.0;
                }
            }
        }
    }
    // Closing only lowers the other edges' diagonals; raise what is still beyond the bound.
    let around = edge_faces(faces, grid);
    let raise: std::collections::HashMap<(usize, [usize; 3]), f64> = around
        .iter()
        .filter_map(|(&(e, cell), faces)| {
            needed(faces, e, cell, bound, grid).map(|x| ((e, cell), x))
        })
        .collect();
    for (c, list) in faces.iter_mut().enumerate() {
        for f in list.iter_mut() {
            for (k, (e, cell, _)) in face_edges(c, f.cell).into_iter().enumerate() {
                if let (true, Some(x)) = (f.free[k] > 0.0, raise.get(&(e, cell))) {
                    f.used = f.used.max(f.free[k] * x);
                }
            }
        }
    }
    (closed, stiff)
}
