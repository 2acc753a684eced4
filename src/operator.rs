//! The operator: the coefficient tables of the update, built once from the model in the run's
//! precision and consumed by every backend.
//!
//! The model is in SI units and f64; the update needs the numbers the curl and CPML equations
//! multiply by, in the precision the fields are stored in. Converting them in one place keeps
//! the backends from drifting apart (two conversions of one coefficient that differ in their
//! last bit would break the bit-identity of the CPU and CUDA backends), and it is where a new
//! physics pass adds its coefficients (see `docs/architecture.md`). A backend reads these
//! tables and lays them out for its hardware (the CUDA backend copies them to constant and
//! device memory); it never computes a coefficient from the model itself.
//!
//! The operator holds coefficients, never state: the fields, psi arrays and monitor buffers
//! that change as the run steps belong to the backend's slabs (the Operator/Engine split of
//! openEMS, the structure/fields split of Meep).

use crate::model::{AdeMaterial, AdePole, Axis, BoundaryKind, Component, Model, EPS0, MU0};
use crate::real::Real;

/// What a y or z neighbour beyond the grid's end reads as. The discriminants are the face
/// codes the CUDA kernels take (`y_lo`, ... in `kernels/common.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Beyond {
    /// Zero (PEC, or the PEC behind a PML).
    Zero = 0,
    /// The opposite end of the axis (periodic).
    Wrap = 1,
    /// The mirror image with the sign flipped (PMC: tangential H is odd about the wall).
    Mirror = 2,
}

impl Beyond {
    /// What lies beyond a face of kind `kind`.
    pub fn of(kind: BoundaryKind) -> Beyond {
        match kind {
            BoundaryKind::Periodic => Beyond::Wrap,
            BoundaryKind::Pmc => Beyond::Mirror,
            BoundaryKind::Pec | BoundaryKind::Pml(_) => Beyond::Zero,
        }
    }

    /// The face code of the CUDA kernels.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// What lies beyond each face, as the update reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Faces {
    /// Below the minimum y face (E reading H there).
    pub y_lo: Beyond,
    /// Beyond the maximum y face (H reading E there).
    pub y_hi: Beyond,
    /// Below the minimum z face.
    pub z_lo: Beyond,
    /// Beyond the maximum z face.
    pub z_hi: Beyond,
    /// Tangential E is zeroed on the minimum face of these axes (the PEC-faces pass).
    pub zero_min_face: [bool; 3],
}

/// The CPML layers along one axis: where they are and their coefficients.
#[derive(Debug, Clone, Default)]
pub struct CpmlAxis<T> {
    /// Cells in the minimum-side layer.
    pub lo: usize,
    /// Cells in the maximum-side layer.
    pub hi: usize,
    /// Cells along the axis.
    pub n: usize,
    /// Per layer index, for E: (b, c, 1/kappa - 1, 1/dual), the factors the CPML pass
    /// multiplies by, the last the derivative's step at the layer's node (the layer index is
    /// the index along the PML's own axis, so one value per layer is the local cell).
    pub e: Vec<[T; 4]>,
    /// The same for H (half a cell away from E, so its own set), the last 1/primal.
    pub h: Vec<[T; 4]>,
}

impl<T> CpmlAxis<T> {
    /// Layer indices along this axis (both sides).
    pub fn layers(&self) -> usize {
        self.lo + self.hi
    }

    /// Global grid index of layer index `l`.
    pub fn global(&self, l: usize) -> usize {
        if l < self.lo {
            l
        } else {
            self.n - self.hi + (l - self.lo)
        }
    }

    /// Layer index of global grid index `i`, which must lie in a layer.
    pub fn layer_of(&self, i: usize) -> usize {
        if i < self.lo {
            i
        } else {
            self.lo + i - (self.n - self.hi)
        }
    }
}

/// One pole of the dispersive pass, in the field precision, with P and J in units of eps0
/// (see [`crate::model::AdePole`]). `mj`, `mp` give the pole's memory term r of the E update,
/// the part of its mean current that does not depend on E^{n+1}.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PoleOp<T> {
    /// r = mj J + mp P; J' = alpha J + beta P + kappa (E' + E); P' = P + half_dt (J + J').
    Lorentz {
        /// (1 + alpha) / 2.
        mj: T,
        /// beta / 2.
        mp: T,
        /// J's own factor.
        alpha: T,
        /// P's factor in J'.
        beta: T,
        /// E's factor in J'.
        kappa: T,
        /// dt / 2.
        half_dt: T,
    },
    /// r = mj J; J' = alpha J + kappa (E' + E).
    Drude {
        /// (1 + alpha) / 2.
        mj: T,
        /// J's own factor.
        alpha: T,
        /// E's factor in J'.
        kappa: T,
    },
    /// r = mp P; P' = a P + b (E' + E).
    Debye {
        /// (a - 1) / dt.
        mp: T,
        /// P's own factor.
        a: T,
        /// E's factor.
        b: T,
    },
}

impl<T> PoleOp<T> {
    /// State values per cell: J and P (Lorentz), J (Drude), P (Debye).
    pub fn state_len(&self) -> usize {
        match self {
            PoleOp::Lorentz { .. } => 2,
            PoleOp::Drude { .. } | PoleOp::Debye { .. } => 1,
        }
    }
}

/// The dispersive pass's coefficients of one material: E' = E - g sum r over its poles, then
/// the poles advance from E^n and E'. A series mixture ([`crate::model::Material::series`])
/// has no poles of its own but parts, each with its own E and poles.
#[derive(Debug, Clone, PartialEq)]
pub struct DispersiveOp<T> {
    /// cb eps0: the memory term's factor (r is in units of eps0).
    pub g: T,
    /// The poles, in the material's order.
    pub poles: Vec<PoleOp<T>>,
    /// A series mixture's parts, in order (empty otherwise). With D the curl pass's increment
    /// E - E^n, each part's E_k' = ca_k E_k + share_k D - g_k r_k, its poles advance from
    /// E_k' + E_k, and the cell's E' = sum weight_k E_k'.
    pub series: Vec<SeriesPartOp<T>>,
}

/// One part of a series mixture in the dispersive pass (see [`DispersiveOp::series`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPartOp<T> {
    /// The part's weight in the cell's E.
    pub weight: T,
    /// Its own update's E factor.
    pub ca: T,
    /// Its cb over the mixture's: the share of the curl pass's increment it takes.
    pub share: T,
    /// Its cb eps0: its memory term's factor.
    pub g: T,
    /// Its poles.
    pub poles: Vec<PoleOp<T>>,
}

impl<T> DispersiveOp<T> {
    /// State values per cell, all poles together; for a series mixture, per part its E and
    /// then its poles' state.
    pub fn state_len(&self) -> usize {
        let poles = |poles: &[PoleOp<T>]| poles.iter().map(|p| p.state_len()).sum::<usize>();
        poles(&self.poles)
            + self
                .series
                .iter()
                .map(|s| 1 + poles(&s.poles))
                .sum::<usize>()
    }
}

/// The memory factor (cb eps0) and the poles' coefficients of a material's update `ade`, in
/// precision `T`.
fn pole_ops<T: Real>(ade: &AdeMaterial, dt: f64) -> (T, Vec<PoleOp<T>>) {
    let f = T::from_f64;
    let poles = ade
        .poles
        .iter()
        .map(|p| match *p {
            AdePole::Lorentz {
                alpha,
                beta,
                kappa,
                half_dt,
            } => PoleOp::Lorentz {
                mj: f((1.0 + alpha) / 2.0),
                mp: f(beta / 2.0),
                alpha: f(alpha),
                beta: f(beta),
                kappa: f(kappa),
                half_dt: f(half_dt),
            },
            AdePole::Drude { alpha, kappa } => PoleOp::Drude {
                mj: f((1.0 + alpha) / 2.0),
                alpha: f(alpha),
                kappa: f(kappa),
            },
            AdePole::Debye { a, b } => PoleOp::Debye {
                mp: f((a - 1.0) / dt),
                a: f(a),
                b: f(b),
            },
        })
        .collect();
    (f(ade.cb * EPS0), poles)
}

/// The dispersive pass of a series mixture: its parts' own updates, with the share of the
/// curl pass's increment (made with [`crate::model::series_cb`]) that each takes.
fn series_op<T: Real>(m: &crate::model::Material, dt: f64) -> DispersiveOp<T> {
    let f = T::from_f64;
    let cb = crate::model::series_cb(m, dt);
    let series = m
        .series
        .iter()
        .map(|(part, weight)| {
            let ade = AdeMaterial::new(part.epsilon, part.conductivity, &part.poles, dt);
            let (g, poles) = pole_ops(&ade, dt);
            SeriesPartOp {
                weight: f(*weight),
                ca: f(ade.ca),
                share: f(ade.cb / cb),
                g,
                poles,
            }
        })
        .collect();
    DispersiveOp {
        g: T::ZERO,
        poles: Vec::new(),
        series,
    }
}

/// Every coefficient table of the update, in the field precision `T`.
#[derive(Debug, Clone)]
pub struct Operator<T> {
    /// Cells along x, y, z.
    pub shape: [usize; 3],
    /// Per axis, per cell index i (0..n): 1 / [`crate::model::Grid::primal`], the step of the
    /// H update's derivatives (E(i + 1) - E(i)) along that axis. On a uniform axis every value
    /// is 1/d, the one number the update multiplied by before graded meshes, so a uniform
    /// grid's fields do not change by a bit.
    pub inv_primal: [Vec<T>; 3],
    /// Per axis, per node index i (0..n): 1 / [`crate::model::Grid::dual`], the step of the E
    /// update's derivatives (H(i) - H(i - 1)); node 0 wraps on a periodic axis and mirrors
    /// the first cell otherwise.
    pub inv_dual: [Vec<T>; 3],
    /// Per axis: graded (node lines given), so its steps differ from index to index. A backend
    /// may read a uniform axis's one step as a scalar (every entry of its arrays is that value).
    pub graded: [bool; 3],
    /// dt / mu0: the H update's coefficient (H is in vacuum permeability everywhere), also
    /// that of the magnetic sources.
    pub ch: T,
    /// (ca, cb) per material, in material-table order: E = ca E + cb (curl H - J).
    pub coef: Vec<(T, T)>,
    /// (ca, cb) per material for H when some material is magnetic (H = ca H - cb curl E),
    /// else None: then H has no material ids and every H cell uses (1, `ch`).
    pub hcoef: Option<Vec<(T, T)>>,
    /// Per material: the dispersive pass's coefficients, for the materials with poles.
    pub dispersive: Vec<Option<DispersiveOp<T>>>,
    /// The CPML layers along x, y, z.
    pub pml: [CpmlAxis<T>; 3],
    /// What lies beyond each face.
    pub faces: Faces,
    /// The TF/SF source's tables, if the model has one.
    pub tfsf: Option<TfsfOp<T>>,
    /// The conformal PEC pass's cut faces (empty without a conformal PEC object).
    pub conformal: ConformalOp<T>,
    /// Per axis with a Bloch phase ([`crate::model::Boundaries::bloch_phase`]), the rotation
    /// (cos a, sin a), a = -2 pi phase, that takes a field at the minimum face to its image
    /// beyond the maximum face: F(n) = F(0) e^{i a}, and F(-1) = F(n - 1) e^{-i a}. None on
    /// every other axis. The Bloch pass ([`crate::backend::Pass::Bloch`]) reads it.
    pub bloch: [Option<(T, T)>; 3],
}

/// The conformal PEC pass's tables ([`crate::model::Conformal`]): per H component `c`, the
/// cut faces' cells in (x, y, z) order and their four weights. With `(a, b) = (c + 1, c + 2)
/// mod 3`, the pass adds to the face's H, after the curl,
///
/// ```text
///     H += ((w0 E_b[cell] + w1 E_b[cell + e_a]) + w2 E_a[cell]) + w3 E_a[cell + e_b]
/// ```
///
/// (in that order, each product and sum rounded), the Dey-Mittra update's difference from the
/// plain one: with free edge fractions `r`, the area fraction `A` the update uses, cell sizes
/// `L_a`, `L_b` and the face's curl coefficient `k` (dt/mu0, or the H material's when some
/// material is magnetic), `w0 = k (r0/A - 1)/L_a`, `w1 = -k (r1/A - 1)/L_a`,
/// `w2 = -k (r2/A - 1)/L_b`, `w3 = k (r3/A - 1)/L_b` (0 for an edge wholly inside).
#[derive(Debug, Clone, Default)]
pub struct ConformalOp<T> {
    /// Per H component, the faces' cells.
    pub cells: [Vec<[usize; 3]>; 3],
    /// Per H component, the faces' weights.
    pub w: [Vec<[T; 4]>; 3],
}

/// One H component's cut faces within one slab.
#[derive(Debug, Clone, Default)]
pub struct ConformalSlabFaces<T> {
    /// The H component (0..3 for Hx, Hy, Hz).
    pub component: usize,
    /// Per local plane p (1..=n), `plane_start[p - 1]..plane_start[p]` indexes its faces.
    pub plane_start: Vec<usize>,
    /// Each face's offset within the slab's owned planes (`((x - x0) ny + y) nz + z`).
    pub off: Vec<u32>,
    /// Each face's weights ([`ConformalOp`]).
    pub w: Vec<[T; 4]>,
}

impl<T: Copy> ConformalSlabFaces<T> {
    /// Bytes of the per-face arrays (what the plan counts; `plane_start` is host bookkeeping).
    pub fn bytes(&self) -> u64 {
        (self.off.len() * (4 + 4 * std::mem::size_of::<T>())) as u64
    }
}

impl<T: Real> ConformalOp<T> {
    /// The tables of `model` ([`crate::model::Model::conformal`]) in precision `T`.
    pub fn new(model: &Model) -> Self {
        let conformal = model.conformal();
        let g = &model.grid;
        let table = &model.materials;
        let magnetic = table
            .any_magnetic()
            .then(|| table.magnetic_coefficients(g.dt));
        let flat = model.flat_axes();
        let mut out = ConformalOp::default();
        for c in 0..3 {
            let (a, b) = ((c + 1) % 3, (c + 2) % 3);
            let component = Component::ALL[3 + c];
            for f in &conformal.faces[c] {
                let k = match &magnetic {
                    Some(m) => {
                        m[model.material_at(component, f.cell[0], f.cell[1], f.cell[2]) as usize].cb
                    }
                    None => g.dt / MU0,
                };
                let la = g.primal(a, f.cell[a] as isize);
                let lb = g.primal(b, f.cell[b] as isize);
                let term = |r: f64, l: f64, sign: f64| {
                    if r == 0.0 {
                        0.0
                    } else {
                        sign * k * (r / f.used - 1.0) / l
                    }
                };
                // Across a flat axis (one periodic cell) the plain update's difference is
                // zero and so is the conformal one (the two edges are one): no weights, and the
                // pass reads nothing across it.
                let (wa, wb) = (f64::from(!flat[a] as u8), f64::from(!flat[b] as u8));
                out.cells[c].push(f.cell);
                out.w[c].push(
                    [
                        wa * term(f.free[0], la, 1.0),
                        wa * term(f.free[1], la, -1.0),
                        wb * term(f.free[2], lb, -1.0),
                        wb * term(f.free[3], lb, 1.0),
                    ]
                    .map(T::from_f64),
                );
            }
        }
        out
    }

    /// The faces in global x planes [x0, x1) of a grid of ny x nz, as one slab holds them: one
    /// entry per H component (possibly empty).
    pub fn slab_faces(
        &self,
        x0: usize,
        x1: usize,
        ny: usize,
        nz: usize,
    ) -> Vec<ConformalSlabFaces<T>> {
        (0..3)
            .map(|c| {
                let cells = &self.cells[c];
                let first = cells.partition_point(|q| q[0] < x0);
                let last = cells.partition_point(|q| q[0] < x1);
                ConformalSlabFaces {
                    component: c,
                    plane_start: (x0..=x1)
                        .map(|x| cells.partition_point(|q| q[0] < x) - first)
                        .collect(),
                    off: cells[first..last]
                        .iter()
                        .map(|q| {
                            u32::try_from(((q[0] - x0) * ny + q[1]) * nz + q[2])
                                .expect("a slab with cut faces holds fewer than 2^32 cells")
                        })
                        .collect(),
                    w: self.w[c][first..last].to_vec(),
                }
            })
            .collect()
    }
}

/// The TF/SF pass's tables ([`crate::model::Tfsf`]): the 1-D incident grid's constants and
/// the correction points of each group, in pass order.
///
/// Each half step the pass first advances the 1-D grid (H half: e_i -= S (h_i - h_{i-1}) for
/// 0 < i < nodes - 1, then e_0 = drive; E half: h_i -= S (e_{i+1} - e_i) for i < nodes - 1),
/// then, group by group, adds to each point's field cb * (fac * v) with
/// v = `a[node]` + w (`a[node + 1]` - `a[node]`) (a = h for E points, e for H points) and cb the
/// cell's coefficient: the E material's cb, or for H the H material's cb when some material
/// is magnetic, else dt/mu0.
#[derive(Debug, Clone)]
pub struct TfsfOp<T> {
    /// Values of each 1-D array.
    pub nodes: usize,
    /// The 1-D Courant number S.
    pub courant: T,
    /// Where the drive e_0 lies in the H half step's source values (after the model's
    /// sources' magnetic currents; see [`crate::run::magnetic_source_values`]).
    pub drive_index: usize,
    /// The correction groups in pass order.
    pub groups: Vec<TfsfGroupOp<T>>,
}

/// One correction group of [`TfsfOp`]: one component, points sorted by x index.
#[derive(Debug, Clone)]
pub struct TfsfGroupOp<T> {
    /// The corrected component (0..3 E, 3..6 H).
    pub component: usize,
    /// The axis its faces are normal to: each face's points share their index along it.
    pub axis: usize,
    /// Global index of each point's cell.
    pub cells: Vec<[usize; 3]>,
    /// The 1-D node below each point.
    pub node: Vec<u32>,
    /// The interpolation weight of each point.
    pub w: Vec<T>,
    /// The factor of each point (its face's factor).
    pub fac: Vec<T>,
}

/// The points of one [`TfsfGroupOp`] inside one slab, with cells as offsets into the slab's
/// owned cells ((local plane - 1) * ny * nz + y * nz + z, the index of the material ids; the
/// field value is one halo plane further).
#[derive(Debug, Clone, Default)]
pub struct TfsfSlabGroup<T> {
    /// The corrected component (0..3 E, 3..6 H).
    pub component: usize,
    /// The axis its faces are normal to ([`TfsfGroupOp::axis`]).
    pub axis: usize,
    /// For local plane p in 1..=len + 1: the first point on plane p or later.
    pub plane_start: Vec<usize>,
    /// Cell offsets.
    pub off: Vec<u32>,
    /// 1-D nodes.
    pub node: Vec<u32>,
    /// Interpolation weights.
    pub w: Vec<T>,
    /// Factors.
    pub fac: Vec<T>,
}

impl<T: Copy> TfsfSlabGroup<T> {
    /// Bytes of the per-point arrays (what the plan counts; `plane_start` is host
    /// bookkeeping of a few values per plane and not counted).
    pub fn bytes(&self) -> u64 {
        let t = std::mem::size_of::<T>();
        (self.off.len() * (8 + 2 * t)) as u64
    }
}

impl<T: Copy> TfsfOp<T> {
    /// The groups' points in global x planes [x0, x1) of a grid of ny x nz, as one slab holds
    /// them: one entry per group (possibly empty), in pass order.
    pub fn slab_groups(&self, x0: usize, x1: usize, ny: usize, nz: usize) -> Vec<TfsfSlabGroup<T>> {
        self.groups
            .iter()
            .map(|g| {
                let first = g.cells.partition_point(|c| c[0] < x0);
                let last = g.cells.partition_point(|c| c[0] < x1);
                let range = first..last;
                let plane_start = (x0..=x1)
                    .map(|x| g.cells.partition_point(|c| c[0] < x) - first)
                    .collect();
                TfsfSlabGroup {
                    component: g.component,
                    axis: g.axis,
                    plane_start,
                    off: g.cells[range.clone()]
                        .iter()
                        .map(|c| {
                            u32::try_from(((c[0] - x0) * ny + c[1]) * nz + c[2])
                                .expect("a slab with TF/SF points holds fewer than 2^32 cells")
                        })
                        .collect(),
                    node: g.node[range.clone()].to_vec(),
                    w: g.w[range.clone()].to_vec(),
                    fac: g.fac[range].to_vec(),
                }
            })
            .collect()
    }
}

impl<T: Real> Operator<T> {
    /// The tables of `model`.
    pub fn new(model: &Model) -> Self {
        let g = &model.grid;
        let b = &model.boundaries;
        let periodic = [0, 1, 2].map(|a| b.faces[a][0] == BoundaryKind::Periodic);
        let inv_primal: [Vec<T>; 3] = [0, 1, 2].map(|a| {
            (0..g.shape[a])
                .map(|i| T::from_f64(1.0 / g.primal(a, i as isize)))
                .collect()
        });
        let inv_dual: [Vec<T>; 3] = [0, 1, 2].map(|a| {
            (0..g.shape[a])
                .map(|i| T::from_f64(1.0 / g.dual(a, i, periodic[a])))
                .collect()
        });
        let pml = [0, 1, 2].map(|a| {
            let p = &b.profiles[a];
            // The CPML pass adds (1/kappa - 1) times the curl term to the plain update, so the
            // table holds that difference, not 1/kappa itself.
            let conv = |v: &Vec<[f64; 3]>, inv: &[T]| {
                v.iter()
                    .enumerate()
                    .map(|(l, c)| {
                        let i = if l < p.lo { l } else { p.n - p.hi + (l - p.lo) };
                        [
                            T::from_f64(c[0]),
                            T::from_f64(c[1]),
                            T::from_f64(c[2] - 1.0),
                            inv[i],
                        ]
                    })
                    .collect()
            };
            CpmlAxis {
                lo: p.lo,
                hi: p.hi,
                n: p.n,
                e: conv(&p.e, &inv_dual[a]),
                h: conv(&p.h, &inv_primal[a]),
            }
        });
        let table = &model.materials;
        let f = T::from_f64;
        let dispersive = table
            .materials
            .iter()
            .map(|m| {
                if m.pec || !m.is_dispersive() {
                    return None;
                }
                if !m.series.is_empty() {
                    return Some(series_op(m, g.dt));
                }
                let ade = AdeMaterial::new(m.epsilon, m.conductivity, &m.poles, g.dt);
                let (g_memory, poles) = pole_ops(&ade, g.dt);
                Some(DispersiveOp {
                    g: g_memory,
                    poles,
                    series: Vec::new(),
                })
            })
            .collect();
        let hcoef = table.any_magnetic().then(|| {
            table
                .magnetic_coefficients(g.dt)
                .iter()
                .map(|c| (f(c.ca), f(c.cb)))
                .collect()
        });
        let tfsf = model.tfsf.as_ref().map(|t| TfsfOp {
            nodes: t.nodes,
            courant: f(t.courant),
            drive_index: model.sources.len(),
            groups: t
                .groups(g)
                .into_iter()
                .map(|grp| TfsfGroupOp {
                    component: grp.component as usize,
                    axis: grp.axis,
                    cells: grp.points.iter().map(|(_, p)| p.cell).collect(),
                    node: grp.points.iter().map(|(_, p)| p.node).collect(),
                    w: grp.points.iter().map(|(_, p)| f(p.w)).collect(),
                    fac: grp.points.iter().map(|(s, _)| f(grp.factor[*s])).collect(),
                })
                .collect(),
        });
        let bloch = [0, 1, 2].map(|a| {
            model.boundaries.bloch_phase(a).map(|p| {
                let (s, c) = (-2.0 * std::f64::consts::PI * p).sin_cos();
                (f(c), f(s))
            })
        });
        Operator {
            tfsf,
            bloch,
            conformal: ConformalOp::new(model),
            hcoef,
            dispersive,
            shape: g.shape,
            inv_primal,
            inv_dual,
            graded: [0, 1, 2].map(|a| g.lines[a].is_some()),
            ch: T::from_f64(g.dt / MU0),
            coef: model
                .materials
                .coefficients(g.dt)
                .iter()
                .map(|c| (T::from_f64(c.ca), T::from_f64(c.cb)))
                .collect(),
            pml,
            faces: Faces {
                y_lo: Beyond::of(b.face(Axis::Y, false)),
                y_hi: Beyond::of(b.face(Axis::Y, true)),
                z_lo: Beyond::of(b.face(Axis::Z, false)),
                z_hi: Beyond::of(b.face(Axis::Z, true)),
                zero_min_face: [0, 1, 2].map(|a| b.faces[a][0].zeroes_tangential_e()),
            },
        }
    }

    /// The owned planes of the x range [x0, x1) that lie in an x-CPML layer, as (local plane,
    /// layer index), local plane `p` being global plane `x0 + p - 1` (one halo plane first).
    pub fn x_layer_planes(&self, x0: usize, x1: usize) -> Vec<(usize, usize)> {
        let px = &self.pml[0];
        (0..px.layers())
            .map(|l| (px.global(l), l))
            .filter(|(i, _)| x0 <= *i && *i < x1)
            .map(|(i, l)| (i - x0 + 1, l))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_maps_are_inverse() {
        let a = CpmlAxis::<f64> {
            lo: 3,
            hi: 2,
            n: 10,
            ..Default::default()
        };
        let globals: Vec<usize> = (0..a.layers()).map(|l| a.global(l)).collect();
        assert_eq!(globals, [0, 1, 2, 8, 9]);
        for l in 0..a.layers() {
            assert_eq!(a.layer_of(a.global(l)), l);
        }
    }
}
