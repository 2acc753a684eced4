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

use crate::model::{AdeMaterial, AdePole, Axis, BoundaryKind, Model, EPS0, MU0};
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
    /// Per layer index, for E: (b, c, 1/kappa - 1), the factors the CPML pass multiplies by.
    pub e: Vec<[T; 3]>,
    /// The same for H (half a cell away from E, so its own set).
    pub h: Vec<[T; 3]>,
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
/// the poles advance from E^n and E'.
#[derive(Debug, Clone, PartialEq)]
pub struct DispersiveOp<T> {
    /// cb eps0: the memory term's factor (r is in units of eps0).
    pub g: T,
    /// The poles, in the material's order.
    pub poles: Vec<PoleOp<T>>,
}

impl<T> DispersiveOp<T> {
    /// State values per cell, all poles together.
    pub fn state_len(&self) -> usize {
        self.poles.iter().map(|p| p.state_len()).sum()
    }
}

/// Every coefficient table of the update, in the field precision `T`.
#[derive(Debug, Clone)]
pub struct Operator<T> {
    /// Cells along x, y, z.
    pub shape: [usize; 3],
    /// 1/dx, 1/dy, 1/dz.
    pub inv: [T; 3],
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
}

impl<T: Real> Operator<T> {
    /// The tables of `model`.
    pub fn new(model: &Model) -> Self {
        let g = &model.grid;
        let b = &model.boundaries;
        let pml = [0, 1, 2].map(|a| {
            let p = &b.profiles[a];
            // The CPML pass adds (1/kappa - 1) times the curl term to the plain update, so the
            // table holds that difference, not 1/kappa itself.
            let conv = |v: &Vec<[f64; 3]>| {
                v.iter()
                    .map(|c| {
                        [
                            T::from_f64(c[0]),
                            T::from_f64(c[1]),
                            T::from_f64(c[2] - 1.0),
                        ]
                    })
                    .collect()
            };
            CpmlAxis {
                lo: p.lo,
                hi: p.hi,
                n: p.n,
                e: conv(&p.e),
                h: conv(&p.h),
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
                let ade = AdeMaterial::new(m.epsilon, m.conductivity, &m.poles, g.dt);
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
                            mp: f((a - 1.0) / g.dt),
                            a: f(a),
                            b: f(b),
                        },
                    })
                    .collect();
                Some(DispersiveOp {
                    g: f(ade.cb * EPS0),
                    poles,
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
        Operator {
            hcoef,
            dispersive,
            shape: g.shape,
            inv: g.cell.map(|d| T::from_f64(1.0 / d)),
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
