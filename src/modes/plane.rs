//! A model's cross-section as the mode solver sees it: the painted (and smoothed) permittivity
//! at the Yee positions of a grid plane, its cells, its walls, and the grid's own time and
//! space steps, so that a mode's n_eff is the one it has in the 3-D run.

use super::{solve_near, CrossSection, Mode, ModeError, Plane, Wall};
use crate::model::{BoundaryKind, Component, Model, C0};

/// Why a model's plane cannot be solved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlaneError {
    /// The plane lies outside the grid.
    #[error("the plane {axis} = {at} m lies outside the grid ({lo} to {hi} m)")]
    Outside {
        /// x, y or z.
        axis: &'static str,
        /// Where it was asked for (m).
        at: f64,
        /// The grid's extent along the axis (m).
        lo: f64,
        /// The grid's extent along the axis (m).
        hi: f64,
    },
    /// The solve failed.
    #[error(transparent)]
    Solve(#[from] ModeError),
}

/// The modes of a plane: each with its n_eff in the 3-D grid.
#[derive(Debug, Clone)]
pub struct PlaneModes {
    /// The frequency (Hz).
    pub frequency: f64,
    /// The modes, highest n_eff first.
    pub modes: Vec<Mode>,
    /// Their effective indices in the 3-D grid: beta (from the discrete eigenvalue through
    /// the grid's difference along the axis) over w / c.
    pub neff: Vec<f64>,
    /// Their power loss along the normal (dB/m), from the imaginary part of beta in the 3-D
    /// grid: 0 for a lossless cross-section.
    pub loss: Vec<f64>,
    /// Their group indices c / v_g = c d(beta)/dw in the 3-D grid: from the mode's energy
    /// over its power (exact first-order perturbation, one solve) on a real cross-section
    /// without cut faces; otherwise n_eff + f dn_eff/df from solves at f (1 +- 1e-3) (central
    /// difference), NaN for a mode whose neighbours did not pair up (two modes crossing within
    /// 1e-3 of f).
    pub group_index: Vec<f64>,
    /// Their effective areas (m^2): (sum |E_t|^2 dA)^2 / sum |E_t|^4 dA over the plane, with
    /// each cell's E_u and E_v (the transverse field; a mode's longitudinal E is left out).
    pub effective_area: Vec<f64>,
    /// Their wave impedances (ohm): sum |E_t|^2 dA / sum (E_t x H_t) . n dA with the grid's
    /// transverse H ([`CrossSection::magnetic`]). A TE mode's E_t / H_t, eta0 / n_eff for a
    /// hollow metal guide's (464 ohm for WR-42's TE10 at 24 GHz); a TM mode's; eta / sqrt(eps_r)
    /// for a TEM mode; for a hybrid mode, its transverse fields' power-weighted ratio.
    pub wave_impedance: Vec<f64>,
}

/// How a plane's modes are looked for beyond the default (the most guided, PEC walls at the
/// plane's edges).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Search {
    /// The modes whose n_eff is nearest this instead of the most guided (leaky modes, or
    /// modes below a high-index substrate's).
    pub neff: Option<f64>,
    /// Stretch the plane's cells inside the domain's PML layers into an in-plane PML
    /// ([`Plane::pml_stretch`]), so that a leaky mode radiates out of the plane instead of
    /// reflecting off its walls: its beta is complex.
    pub pml: bool,
}

impl CrossSection {
    /// The cross-section of `plane` with the Dey-Mittra weights of the faces the model's
    /// conformal PEC surfaces cut ([`CrossSection::cut_curl`], [`CrossSection::cut_long`]):
    /// the faces normal to the plane in its node plane, and the longitudinal faces from it one
    /// cell downstream (a guide uniform along the normal cuts both neighbours alike). Each
    /// weight divides by the face's used area, as the run's update does (enlarged where its
    /// stability rule enlarged it), so the solve is the 3-D grid's.
    fn cut_by(mut self, model: &Model, plane: &Plane) -> CrossSection {
        let conformal = model.conformal();
        if conformal.faces.iter().all(|f| f.is_empty()) {
            return self;
        }
        let [u, v] = plane.in_plane();
        let [ru, rv] = plane.ranges;
        let nv = self.n[1];
        let n = self.n[0] * nv;
        // The plane's (j, k) of a face's cell, if the face lies in the plane's node plane.
        let local = |cell: [usize; 3]| -> Option<usize> {
            let (j, k) = (cell[u].checked_sub(ru[0])?, cell[v].checked_sub(rv[0])?);
            (cell[plane.axis] == plane.index && j < ru[1] - ru[0] && k < rv[1] - rv[0])
                .then_some(j * nv + k)
        };
        let mut curl = vec![[1.0; 4]; n];
        for face in &conformal.faces[plane.axis] {
            if let Some(at) = local(face.cell) {
                curl[at] = face.free.map(|f| f / face.used);
            }
        }
        // The face normal to v bounds E_u; the one normal to u bounds E_v.
        let mut long = [vec![1.0; n], vec![1.0; n]];
        for (q, component) in [(0, v), (1, u)] {
            for face in &conformal.faces[component] {
                if let Some(at) = local(face.cell) {
                    long[q][at] = 1.0 / face.used;
                }
            }
        }
        self.cut_curl = curl;
        self.cut_long = long;
        self
    }
}

/// The in-plane PML's strength: a wave normal to it is down by e^-16 over the layer and back
/// (kappa rising as the cube of the depth, as the 3-D CPML's sigma, to 32 / (k0 L)).
const PML_ATTENUATION: f64 = 16.0;

impl Plane {
    /// The node plane nearest coordinate `at` (m) along `axis`.
    pub fn nearest(model: &Model, axis: usize, at: f64) -> Result<Plane, PlaneError> {
        let g = &model.grid;
        let n = g.shape[axis];
        let (lo, hi) = (g.coordinate(axis, 0.0), g.coordinate(axis, n as f64));
        if !(lo..=hi).contains(&at) {
            return Err(PlaneError::Outside {
                axis: ["x", "y", "z"][axis],
                at,
                lo,
                hi,
            });
        }
        let index = (g.fractional_index(axis, at).round() as usize).min(n - 1);
        let [u, v] = [(axis + 1) % 3, (axis + 2) % 3];
        Ok(Plane {
            axis,
            index,
            ranges: [[0, g.shape[u]], [0, g.shape[v]]],
        })
    }

    /// The model's cross-section at frequency `f` (Hz): each Yee position's material, painted
    /// and smoothed as the run paints it, its permittivity's real part at `f`. The plane's
    /// walls: periodic where the plane spans a periodic axis of the domain, else PEC (a guided
    /// mode has decayed at a PML, whose inner face the plane's edge stands for, and at the edge
    /// of a mode plane drawn smaller than the domain).
    pub fn cross_section(&self, model: &Model, f: f64) -> Result<CrossSection, PlaneError> {
        let g = &model.grid;
        let [u, v] = self.in_plane();
        let [ru, rv] = self.ranges;
        let n = [ru[1] - ru[0], rv[1] - rv[0]];
        let table = &model.materials.materials;
        // Ids of E component `c` over the plane, painted over the x planes it spans.
        let ids = |c: usize| -> Vec<u8> {
            let [nx, ny, nz] = g.shape;
            let (x0, x1) = if self.axis == 0 {
                (self.index, self.index + 1)
            } else {
                (0, nx)
            };
            let mut all = vec![0u8; (x1 - x0) * ny * nz];
            model.paint_materials(Component::ALL[c], x0, x1, &mut all);
            let mut out = Vec::with_capacity(n[0] * n[1]);
            for j in ru[0]..ru[1] {
                for k in rv[0]..rv[1] {
                    let mut cell = [0; 3];
                    (cell[self.axis], cell[u], cell[v]) = (self.index, j, k);
                    out.push(all[((cell[0] - x0) * ny + cell[1]) * nz + cell[2]]);
                }
            }
            out
        };
        let eps = [self.axis, u, v].map(ids);
        // A PEC's positions are held at zero (their permittivity is never read: 1).
        let permittivity = |m: u8| {
            let mat = &table[m as usize];
            if mat.pec {
                num_complex::Complex64::new(1.0, 0.0)
            } else {
                mat.epsilon_at(f)
            }
        };
        let values = eps.each_ref().map(|list| {
            list.iter()
                .map(|&m| permittivity(m).re)
                .collect::<Vec<f64>>()
        });
        let eps_imag = eps.each_ref().map(|list| {
            let imag: Vec<f64> = list.iter().map(|&m| permittivity(m).im).collect();
            if imag.iter().any(|&x| x != 0.0) {
                imag
            } else {
                Vec::new()
            }
        });
        let pec = eps.each_ref().map(|list| {
            if list.iter().any(|&m| table[m as usize].pec) {
                list.iter().map(|&m| table[m as usize].pec).collect()
            } else {
                Vec::new()
            }
        });
        let wall = |a: usize, r: [usize; 2]| {
            let whole = r == [0, g.shape[a]];
            if whole
                && model.boundaries.faces[a]
                    .iter()
                    .all(|f| *f == BoundaryKind::Periodic)
            {
                Wall::Periodic
            } else {
                Wall::Pec
            }
        };
        Ok(CrossSection {
            n,
            cells: [(u, ru), (v, rv)]
                .map(|(a, r)| (r[0]..r[1]).map(|i| g.primal(a, i as isize)).collect()),
            eps: values,
            eps_imag,
            stretch: [Vec::new(), Vec::new()],
            target_neff: None,
            cut_curl: Vec::new(),
            cut_long: [Vec::new(), Vec::new()],
            walls: [wall(u, ru), wall(v, rv)],
            pec,
        }
        .closed()
        .cut_by(model, self))
    }

    /// The `count` modes of the plane at `f` (Hz), with the 3-D grid's wavenumbers: the
    /// eigenproblem at the discrete-time k0 = (2 / (c dt)) sin(w dt / 2), and beta from its
    /// eigenvalue through the grid's difference along the axis, beta = (2 / d) asin(b d / 2)
    /// with b^2 the eigenvalue and d the cell there. n_eff = beta / (w / c). In a lossy
    /// cross-section beta is complex: n_eff is its real part over w / c, and the loss its
    /// imaginary part; the group index, effective area and wave impedance are those of the
    /// mode's real profile ([`Mode::e`]).
    pub fn modes(&self, model: &Model, f: f64, count: usize) -> Result<PlaneModes, PlaneError> {
        self.searched(model, f, count, Search::default())
    }

    /// [`Plane::modes`], looked for as `search` says.
    pub fn searched(
        &self,
        model: &Model,
        f: f64,
        count: usize,
        search: Search,
    ) -> Result<PlaneModes, PlaneError> {
        let Solved {
            modes,
            neff,
            loss,
            cs,
            k0,
            ..
        } = self.solved_searching(model, f, count, &[], search)?;
        let group_index = if cs.has_energy_slope() {
            self.energy_group_index(model, f, &cs, &modes, k0)
        } else {
            self.neighbour_group_index(model, f, count, &modes, &neff, search)?
        };
        let effective_area = modes.iter().map(|m| effective_area(&cs, m)).collect();
        let wave_impedance = modes.iter().map(|m| wave_impedance(&cs, m, k0)).collect();
        Ok(PlaneModes {
            frequency: f,
            modes,
            neff,
            loss,
            group_index,
            effective_area,
            wave_impedance,
        })
    }

    /// The group indices c / v_g = c d(beta)/dw of `modes` (solved on `cs` at `f`, at the
    /// discrete-time wavenumber `k0`) from each one's d(b^2)/dk0
    /// ([`CrossSection::dispersion_slope`], the permittivity's own slope from the plane
    /// painted at f (1 +- 1e-3)), through the grid's differences: beta = (2/d) asin(b d/2)
    /// along the normal and k0 = (2/(c dt)) sin(w dt/2) in time.
    pub(super) fn energy_group_index(
        &self,
        model: &Model,
        f: f64,
        cs: &CrossSection,
        modes: &[Mode],
        k0: f64,
    ) -> Vec<f64> {
        const STEP: f64 = 1e-3;
        let dt = model.grid.dt;
        let k0_at = |f: f64| discrete_k0(f, dt);
        let eps_slope = match (
            self.cross_section(model, f * (1.0 + STEP)),
            self.cross_section(model, f * (1.0 - STEP)),
        ) {
            (Ok(above), Ok(below)) if above.eps != below.eps => {
                let scale = k0 / (k0_at(f * (1.0 + STEP)) - k0_at(f * (1.0 - STEP)));
                [0, 1, 2].map(|q| {
                    (above.eps[q].iter().zip(&below.eps[q]))
                        .map(|(a, b)| (a - b) * scale)
                        .collect()
                })
            }
            _ => [Vec::new(), Vec::new(), Vec::new()],
        };
        let d = self.step(model);
        let turn = (std::f64::consts::PI * f * dt).cos();
        modes
            .iter()
            .map(|m| {
                let b = m.beta2.max(0.0).sqrt();
                let db_dk0 = cs.dispersion_slope(m, k0, &eps_slope) / (2.0 * b);
                let dbeta_db = 1.0 / (1.0 - (b * d / 2.0).powi(2)).max(0.0).sqrt();
                dbeta_db * db_dk0 * turn
            })
            .collect()
    }

    /// The group indices of `modes` (n_eff `neff` at `f`) from the plane's modes at
    /// f (1 +- 1e-3) (central difference of n_eff: n_g = n_eff + f dn_eff/df), each solve
    /// started from `modes`; NaN for a mode whose neighbours do not pair up (two modes crossing
    /// within 1e-3 of f). For the cross-sections [`CrossSection::dispersion_slope`] does not
    /// cover (lossy, in-plane PML, cut faces).
    fn neighbour_group_index(
        &self,
        model: &Model,
        f: f64,
        count: usize,
        modes: &[Mode],
        neff: &[f64],
        search: Search,
    ) -> Result<Vec<f64>, PlaneError> {
        const STEP: f64 = 1e-3;
        // The neighbours start from these modes: about one Arnoldi cycle each, the two side by
        // side (each solve's triangular sweeps run on one core).
        let (above, below) = rayon::join(
            || self.solved_searching(model, f * (1.0 + STEP), count, modes, search),
            || self.solved_searching(model, f * (1.0 - STEP), count, modes, search),
        );
        let (above, below) = (above?.neff, below?.neff);
        Ok((0..neff.len())
            .map(|i| match (above.get(i), below.get(i)) {
                // Over +-0.1 % of f a mode's n_eff moves by (n_g - n_eff) 2e-3, under 0.01
                // for any group index within 5 of n_eff: a larger jump is two modes
                // swapping order, not one mode's dispersion.
                (Some(a), Some(b)) if (a - b).abs() < 0.01 => neff[i] + (a - b) / (2.0 * STEP),
                _ => f64::NAN,
            })
            .collect())
    }

    /// The cross-section at `f`, its modes, the discrete k0 they were solved at and their
    /// n_eff in the 3-D grid.
    pub(super) fn solved(&self, model: &Model, f: f64, count: usize) -> Result<Solved, PlaneError> {
        self.solved_near(model, f, count, &[])
    }

    /// [`Plane::solved`] started from `warm`, the plane's modes at a nearby frequency
    /// ([`super::solve_near`]).
    pub(super) fn solved_near(
        &self,
        model: &Model,
        f: f64,
        count: usize,
        warm: &[Mode],
    ) -> Result<Solved, PlaneError> {
        self.solved_searching(model, f, count, warm, Search::default())
    }

    /// [`Plane::solved_near`], looked for as `search` says.
    fn solved_searching(
        &self,
        model: &Model,
        f: f64,
        count: usize,
        warm: &[Mode],
        search: Search,
    ) -> Result<Solved, PlaneError> {
        let g = &model.grid;
        let w = 2.0 * std::f64::consts::PI * f;
        let k0 = discrete_k0(f, g.dt);
        let mut cs = self.cross_section(model, f)?;
        cs.target_neff = search.neff;
        if search.pml {
            cs.stretch = self.pml_stretch(model, k0);
        }
        let modes = solve_near(&cs, k0, count, warm)?;
        let d = self.step(model);
        let (beta, attenuation): (Vec<f64>, Vec<f64>) = modes
            .iter()
            .map(|m| {
                if m.beta2_imag == 0.0 {
                    let b = m.beta2.max(0.0).sqrt();
                    (2.0 / d * (b * d / 2.0).min(1.0).asin(), 0.0)
                } else {
                    // The complex beta of a lossy mode, through the same difference.
                    let b = num_complex::Complex64::new(m.beta2, m.beta2_imag).sqrt();
                    let beta = (b * (d / 2.0)).asin() * (2.0 / d);
                    (beta.re, beta.im)
                }
            })
            .unzip();
        let neff = beta.iter().map(|b| b / (w / C0)).collect();
        // Power falls as exp(-2 Im(beta) x): 20 / ln(10) Im(beta) dB per metre.
        let loss = attenuation
            .iter()
            .map(|a| 20.0 / std::f64::consts::LN_10 * a)
            .collect();
        Ok(Solved {
            cs,
            k0,
            modes,
            beta,
            neff,
            loss,
        })
    }

    /// The in-plane PML at free-space wavenumber `k0` (1/m): per in-plane axis, the stretch's
    /// kappa at half-cell resolution ([`super::CrossSection::stretch`]) over the cells of the
    /// plane that lie in the domain's PML layers, kappa_max (d / L)^3 at depth d into a layer
    /// of thickness L, kappa_max = (m + 1) 16 / (2 k0 L) with m = 3 (e^-16 over the layer and
    /// back for a wave normal to it); empty for an axis
    /// without a PML layer in the plane.
    pub fn pml_stretch(&self, model: &Model, k0: f64) -> [Vec<f64>; 2] {
        let g = &model.grid;
        let [u, v] = self.in_plane();
        [(u, self.ranges[0]), (v, self.ranges[1])].map(|(a, r)| {
            let n = g.shape[a];
            let cells = model.boundaries.faces[a].map(|f| f.pml_cells());
            if cells == [0, 0] {
                return Vec::new();
            }
            let nodes = g.nodes(a);
            // The layers' inner faces (m) and thicknesses.
            let low = (nodes[cells[0]], nodes[cells[0]] - nodes[0]);
            let high = (nodes[n - cells[1]], nodes[n] - nodes[n - cells[1]]);
            let kappa = |x: f64| {
                let depth_of = |d: f64, thick: f64| {
                    if thick > 0.0 && d > 0.0 {
                        let kappa_max = 4.0 * PML_ATTENUATION / (2.0 * k0 * thick);
                        kappa_max * (d / thick).min(1.0).powi(3)
                    } else {
                        0.0
                    }
                };
                depth_of(low.0 - x, low.1) + depth_of(x - high.0, high.1)
            };
            (2 * r[0]..2 * r[1])
                .map(|h| {
                    let i = h / 2;
                    let x = if h % 2 == 0 {
                        nodes[i]
                    } else {
                        0.5 * (nodes[i] + nodes[i + 1])
                    };
                    kappa(x)
                })
                .collect()
        })
    }

    /// The cell along the normal whose difference turns the eigenvalue into beta.
    pub(super) fn step(&self, model: &Model) -> f64 {
        model.grid.primal(self.axis, self.index as isize)
    }
}

/// One solve of a plane ([`Plane::solved`]).
pub(super) struct Solved {
    /// The cross-section solved.
    pub cs: CrossSection,
    /// The discrete-time free-space wavenumber (1/m).
    pub k0: f64,
    /// The modes, highest n_eff first.
    pub modes: Vec<Mode>,
    /// Their wavenumbers along the normal in the 3-D grid (1/m).
    pub beta: Vec<f64>,
    /// Their effective indices in the 3-D grid.
    pub neff: Vec<f64>,
    /// Their power loss along the normal (dB/m): 0 in a lossless cross-section.
    pub loss: Vec<f64>,
}

/// A mode's wave impedance (ohm) on its cross-section at the discrete-time wavenumber `k0` it
/// was solved at: sum (E_u^2 + E_v^2) dA / sum (E_u H_v - E_v H_u) dA, each E with the H that
/// shares its position (the pairs a flux monitor multiplies).
fn wave_impedance(cs: &CrossSection, mode: &Mode, k0: f64) -> f64 {
    let h = cs.magnetic(mode, k0);
    let [nu, nv] = cs.n;
    let (mut energy, mut power) = (0.0, 0.0);
    for j in 0..nu {
        for k in 0..nv {
            let at = j * nv + k;
            let da = cs.cells[0][j] * cs.cells[1][k];
            let (eu, ev) = (mode.e[0][at], mode.e[1][at]);
            energy += (eu * eu + ev * ev) * da;
            power += (eu * h[1][at] - ev * h[0][at]) * da;
        }
    }
    energy / power
}

/// A mode's effective area (m^2) on its cross-section: (sum |E|^2 dA)^2 / sum |E|^4 dA, with
/// |E|^2 = E_u^2 + E_v^2 of each cell (the two components half a cell apart, as the Yee plane
/// holds them) and dA the cell's area.
fn effective_area(cs: &CrossSection, mode: &Mode) -> f64 {
    let [nu, nv] = cs.n;
    let (mut second, mut fourth) = (0.0, 0.0);
    for j in 0..nu {
        for k in 0..nv {
            let at = j * nv + k;
            let e2 = mode.e[0][at].powi(2) + mode.e[1][at].powi(2);
            let da = cs.cells[0][j] * cs.cells[1][k];
            second += e2 * da;
            fourth += e2 * e2 * da;
        }
    }
    if fourth > 0.0 {
        second * second / fourth
    } else {
        0.0
    }
}

/// The discrete-time free-space wavenumber at `f` (Hz) on a grid stepping `dt` (s):
/// (2 / (c dt)) sin(w dt / 2), what the 3-D update propagates in place of w / c.
fn discrete_k0(f: f64, dt: f64) -> f64 {
    2.0 / (C0 * dt) * (std::f64::consts::PI * f * dt).sin()
}
