//! Near-to-far-field projection of a closed box's surface DFTs (surface equivalence).
//!
//! The box's six faces hold running DFTs of the tangential E and H ([`crate::flux`]). By the
//! equivalence principle the fields outside the box are those radiated into free space by the
//! surface currents J = n x H and M = -n x E on it (n the outward normal). Far away, with the
//! time dependence e^{-i w t}, an outgoing wave goes as e^{ikr} / r, k = w / c0, and
//!
//!   N = sum J e^{-ik r^.r'} dA,   L = sum M e^{-ik r^.r'} dA,
//!   r E_theta = (ik / 4 pi) (L_phi + eta0 N_theta),
//!   r E_phi   = -(ik / 4 pi) (L_theta - eta0 N_phi),
//!
//! with the e^{ikr} phase removed, r measured from the scene's origin (the domain's centre).
//! Each current sample sits at its Yee position on the face: (J_b, M_c) where E_b and H_c are,
//! half a cell along b; (J_c, M_b) where E_c and H_b are, half a cell along c; each weighted by
//! the face's trapezoid rule ([`crate::flux::pair_weights`]), the same quadrature as the flux.
//!
//! The DFTs are sums of F^n e^{-i w t_n} dt, which are the phasors of the e^{+i w t}
//! convention; the projection takes their complex conjugates, the e^{-i w t} phasors of the
//! same real fields, so E_theta and E_phi are in the e^{-i w t} convention the design uses.
//!
//! The intensity r^2 |E|^2 / eta0 (W/sr in the DFT normalisation: per Hz^2, like the flux
//! power, which is Re sum E x H* dA without a factor 1/2) integrates over the sphere to the
//! power the box's flux gives.
//!
//! Cost: the phase e^{-ik r^.r'} factors along the two in-plane axes of a face, so a face's sum
//! is a product of two small exponential tables and one complex multiply-add per sample; on the
//! x and y faces the inner axis is z, whose factor depends on theta alone, so the inner sums are
//! formed once per theta and reused for every phi; on the z faces the inner axis is y, whose
//! factor depends on sin(theta) sin(phi) alone, so they are formed once per distinct pair (theta
//! and 180 - theta, phi and 180 - phi share them). Frequencies and groups of thetas run in
//! parallel.

use crate::flux::{tangential, PatchDft};
use crate::model::Grid;
use crate::model::{C0, ETA0};
use num_complex::Complex64;
use rayon::prelude::*;

/// A far-field pattern: `[frequency][theta][phi]` arrays, C order.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// Frequencies (Hz).
    pub frequency: Vec<f64>,
    /// Polar angles (degrees from +z).
    pub theta: Vec<f64>,
    /// Azimuths (degrees from +x towards +y).
    pub phi: Vec<f64>,
    /// r E_theta with e^{ikr} removed (V; e^{-i w t}).
    pub e_theta: Vec<Complex64>,
    /// r E_phi with e^{ikr} removed (V).
    pub e_phi: Vec<Complex64>,
    /// r^2 |E|^2 / eta0 (W/sr in the flux power's DFT normalisation).
    pub intensity: Vec<f64>,
}

impl Pattern {
    /// The pattern's power per frequency: the intensity integrated over the sphere by the
    /// trapezoid rule in theta and phi (the angles must span [0, 180] and a full turn of phi,
    /// its last value repeating the first).
    pub fn total_power(&self) -> Vec<f64> {
        let (nt, np) = (self.theta.len(), self.phi.len());
        let rad = std::f64::consts::PI / 180.0;
        let trap = |x: &[f64], i: usize| -> f64 {
            let n = x.len();
            if n < 2 {
                return 0.0;
            }
            let lo = if i == 0 {
                x[0]
            } else {
                0.5 * (x[i - 1] + x[i])
            };
            let hi = if i + 1 == n {
                x[n - 1]
            } else {
                0.5 * (x[i] + x[i + 1])
            };
            (hi - lo) * rad
        };
        (0..self.frequency.len())
            .map(|f| {
                let mut sum = 0.0;
                for t in 0..nt {
                    let st = (self.theta[t] * rad).sin();
                    for p in 0..np {
                        sum += self.intensity[(f * nt + t) * np + p]
                            * st
                            * trap(&self.theta, t)
                            * trap(&self.phi, p);
                    }
                }
                sum
            })
            .collect()
    }
}

/// One face's current samples at one frequency: for each pair, the cell positions along the
/// two in-plane axes and the (J, M) tangential components there, already weighted by dA.
struct Face {
    /// Normal axis and its coordinate (m).
    axis: usize,
    x_a: f64,
    /// In-plane axes (x, y, z order) and the cell counts along them.
    pq: [usize; 2],
    count: [usize; 2],
    /// Per pair: the coordinates (m) of its samples along p and q.
    coords: [[Vec<f64>; 2]; 2],
    /// The outer axis p is uniform: its samples are equally spaced, so its phases are powers
    /// of one factor.
    outer_uniform: bool,
    /// Per pair: the axis its J component points along and its M component points along.
    dirs: [[usize; 2]; 2],
    /// Per pair: J and M values per cell (C order of p, q).
    values: [[Vec<Complex64>; 2]; 2],
}

/// Geometry of the grid the faces lie on: node (0, 0, 0) at `origin`, cells `cell` (m) along a
/// uniform axis, the listed node coordinates along a graded one.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    /// Coordinates (m) of grid node (0, 0, 0).
    pub origin: [f64; 3],
    /// Cell size (m) of a uniform axis.
    pub cell: [f64; 3],
    /// Per axis: `None` when uniform, else the node coordinates (m), as [`Grid::lines`].
    pub lines: [Option<Vec<f64>>; 3],
}

impl Geometry {
    /// The geometry of `grid`.
    pub fn of(grid: &Grid) -> Geometry {
        Geometry {
            origin: grid.origin,
            cell: grid.cell,
            lines: grid.lines.clone(),
        }
    }

    /// The geometry of a result file's grid: its `origin` and `cell_size` attributes and its
    /// `/grid` node coordinates. An axis whose nodes are exactly `origin + i * cell` (what a
    /// uniform axis writes) is uniform.
    pub fn from_nodes(origin: [f64; 3], cell: [f64; 3], nodes: [Vec<f64>; 3]) -> Geometry {
        let lines = [0, 1, 2].map(|a| {
            let uniform = nodes[a]
                .iter()
                .enumerate()
                .all(|(i, &x)| x == origin[a] + i as f64 * cell[a]);
            (!uniform).then(|| nodes[a].clone())
        });
        Geometry {
            origin,
            cell,
            lines,
        }
    }

    /// The coordinate (m) along `axis` of node `i`, or with `half` of the centre of primal
    /// cell `i`: on a uniform axis `origin + i cell (+ cell / 2)`, the formulas of a uniform
    /// grid, bit for bit.
    fn position(&self, axis: usize, i: usize, half: bool) -> f64 {
        match &self.lines[axis] {
            None => {
                let off = if half { 0.5 } else { 0.0 };
                self.origin[axis] + i as f64 * self.cell[axis] + off * self.cell[axis]
            }
            Some(l) if half => 0.5 * (l[i] + l[i + 1]),
            Some(l) => l[i],
        }
    }
}

fn faces_at(geometry: &Geometry, patches: &[PatchDft], f: usize) -> Vec<Face> {
    patches
        .iter()
        .map(|d| {
            let patch = &d.patch;
            let a = patch.axis as usize;
            let (b, c) = tangential(a);
            let pq = patch.in_plane();
            let n = d.cells();
            let s = patch.sign;
            let weights = &d.weights;
            let at = |q: usize, cell: usize| {
                // e^{-i w t} phasor: the conjugate of the DFT.
                Complex64::new(d.re[q][f * n + cell], -d.im[q][f * n + cell])
            };
            // Pair 0: (E_b, H_c), half a cell along b: J_b = -s H_c, M_c = -s E_b.
            // Pair 1: (E_c, H_b), half a cell along c: J_c = s H_b, M_b = s E_c.
            let mut values: [[Vec<Complex64>; 2]; 2] = Default::default();
            for (cell, (w0, w1)) in weights[0].iter().zip(&weights[1]).enumerate().take(n) {
                let (w0, w1) = (w0 * d.area * s, w1 * d.area * s);
                values[0][0].push(-w0 * at(3, cell));
                values[0][1].push(-w0 * at(0, cell));
                values[1][0].push(w1 * at(2, cell));
                values[1][1].push(w1 * at(1, cell));
            }
            let half = [b, c];
            let coords = [0, 1].map(|pair| {
                [0, 1].map(|k| {
                    let axis = pq[k];
                    (0..patch.count[k])
                        .map(|i| geometry.position(axis, patch.start[k] + i, axis == half[pair]))
                        .collect()
                })
            });
            Face {
                axis: a,
                x_a: geometry.position(a, patch.index, false),
                pq,
                count: patch.count,
                coords,
                outer_uniform: geometry.lines[pq[0]].is_none(),
                dirs: [[b, c], [c, b]],
                values,
            }
        })
        .collect()
}

/// Indices of `values` grouped by equal value (to 1e-12): the groups and, per value, its
/// group.
fn groups(values: &[f64]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut of = vec![0; values.len()];
    for (i, &v) in values.iter().enumerate() {
        match out.iter().position(|g| (values[g[0]] - v).abs() < 1e-12) {
            Some(g) => {
                out[g].push(i);
                of[i] = g;
            }
            None => {
                of[i] = out.len();
                out.push(vec![i]);
            }
        }
    }
    (out, of)
}

/// Project the surface DFTs `patches` (a closed box, at `frequencies`) onto the far field at
/// the angles `theta` and `phi` (degrees).
///
/// The z faces' sums depend on theta and phi only through sin(theta) and sin(theta) sin(phi)
/// along y (x enters by the outer table), so thetas sharing sin(theta) (theta and 180 - theta)
/// are projected together and the inner sums are formed once per distinct sin(phi) (phi and
/// 180 - phi): a symmetric angle grid costs a quarter of the direct sum on those faces.
pub fn project(
    geometry: &Geometry,
    patches: &[PatchDft],
    frequencies: &[f64],
    theta: &[f64],
    phi: &[f64],
) -> Pattern {
    let (nt, np) = (theta.len(), phi.len());
    let rad = std::f64::consts::PI / 180.0;
    let (sin_p, cos_p): (Vec<f64>, Vec<f64>) = phi.iter().map(|p| (p * rad).sin_cos()).unzip();
    let sin_t: Vec<f64> = theta.iter().map(|t| (t * rad).sin()).collect();
    let (theta_groups, _) = groups(&sin_t);
    let (sin_groups, sin_of) = groups(&sin_p);
    let sin_unique: Vec<f64> = sin_groups.iter().map(|g| sin_p[g[0]]).collect();
    let angles = Angles {
        sin_p: &sin_p,
        cos_p: &cos_p,
        sin_unique: &sin_unique,
        sin_of: &sin_of,
    };
    // One task per (frequency, group of thetas): each fills its rows of phis.
    let ng = theta_groups.len();
    let done: Vec<Vec<Row>> = (0..frequencies.len() * ng)
        .into_par_iter()
        .map_init(
            || (usize::MAX, Vec::new()),
            |(cached, faces), job| {
                let (fi, gi) = (job / ng, job % ng);
                if *cached != fi {
                    *faces = faces_at(geometry, patches, fi);
                    *cached = fi;
                }
                let k = 2.0 * std::f64::consts::PI * frequencies[fi] / C0;
                let rows: Vec<(usize, f64)> = theta_groups[gi]
                    .iter()
                    .map(|&ti| (ti, (theta[ti] * rad).cos()))
                    .collect();
                rows_of(faces, k, sin_t[theta_groups[gi][0]], &rows, &angles)
                    .into_iter()
                    .map(|(ti, t, p)| (fi * nt + ti, t, p))
                    .collect()
            },
        )
        .collect();
    let mut e_theta = vec![Complex64::default(); frequencies.len() * nt * np];
    let mut e_phi = e_theta.clone();
    for (row, t, p) in done.into_iter().flatten() {
        e_theta[row * np..(row + 1) * np].copy_from_slice(&t);
        e_phi[row * np..(row + 1) * np].copy_from_slice(&p);
    }
    let intensity = e_theta
        .iter()
        .zip(&e_phi)
        .map(|(t, p)| (t.norm_sqr() + p.norm_sqr()) / ETA0)
        .collect();
    Pattern {
        frequency: frequencies.to_vec(),
        theta: theta.to_vec(),
        phi: phi.to_vec(),
        e_theta,
        e_phi,
        intensity,
    }
}

/// One theta's row: (theta index, r E_theta and r E_phi for every phi).
type Row = (usize, Vec<Complex64>, Vec<Complex64>);

/// A face's inner sums: [pair][J or M][u].
type Inner = [[Vec<Complex64>; 2]; 2];

/// The azimuths' sines and cosines, and the distinct sines.
struct Angles<'a> {
    sin_p: &'a [f64],
    cos_p: &'a [f64],
    sin_unique: &'a [f64],
    /// Per phi, its index in `sin_unique`.
    sin_of: &'a [usize],
}

/// e^{-i k x u} for each coordinate x.
fn phases(k: f64, u: f64, xs: &[f64]) -> Vec<Complex64> {
    xs.iter()
        .map(|x| {
            let (s, c) = (-k * u * x).sin_cos();
            Complex64::new(c, s)
        })
        .collect()
}

/// Per pair and (J, M), the sums over the inner axis v of a face's values with the phases `e`
/// (one table per pair): [pair][J or M][u].
fn inner_sums(face: &Face, e: [&[Complex64]; 2]) -> Inner {
    let nq = face.count[1];
    [0, 1].map(|pair| {
        [0, 1].map(|jm| {
            face.values[pair][jm]
                .chunks(nq)
                .map(|r| r.iter().zip(e[pair]).map(|(v, e)| v * e).sum())
                .collect()
        })
    })
}

/// (theta index, r E_theta, r E_phi for every phi) at one frequency (wavenumber `k`) for the
/// thetas `rows` (index, cos theta) that share `st` = sin theta.
fn rows_of(faces: &[Face], k: f64, st: f64, rows: &[(usize, f64)], angles: &Angles) -> Vec<Row> {
    let np = angles.sin_p.len();
    // The z faces (inner axis y): per distinct sin(phi), their inner sums, the same for every
    // theta of the group.
    let by_sin: Vec<Option<Vec<Inner>>> = faces
        .iter()
        .map(|face| {
            (face.pq[1] != 2).then(|| {
                angles
                    .sin_unique
                    .iter()
                    .map(|&sp| {
                        let e = [0, 1].map(|pair| phases(k, st * sp, &face.coords[pair][1]));
                        inner_sums(face, [&e[0], &e[1]])
                    })
                    .collect()
            })
        })
        .collect();
    let mut out = Vec::with_capacity(rows.len());
    for &(ti, ct) in rows {
        // The x and y faces (inner axis z): their inner sums depend on theta only.
        let by_theta: Vec<Option<Inner>> = faces
            .iter()
            .map(|face| {
                (face.pq[1] == 2).then(|| {
                    let e = [0, 1].map(|pair| phases(k, ct, &face.coords[pair][1]));
                    inner_sums(face, [&e[0], &e[1]])
                })
            })
            .collect();
        let mut out_t = Vec::with_capacity(np);
        let mut out_p = Vec::with_capacity(np);
        for pi in 0..np {
            let (sp, cp) = (angles.sin_p[pi], angles.cos_p[pi]);
            let dir = [st * cp, st * sp, ct];
            let mut n = [Complex64::default(); 3];
            let mut l = [Complex64::default(); 3];
            for (fi, face) in faces.iter().enumerate() {
                let inner = match (&by_theta[fi], &by_sin[fi]) {
                    (Some(inner), _) => inner,
                    (None, Some(per_sin)) => &per_sin[angles.sin_of[pi]],
                    (None, None) => unreachable!("every face has one kind of inner sum"),
                };
                let (s, c) = (-k * dir[face.axis] * face.x_a).sin_cos();
                let normal = Complex64::new(c, s);
                for pair in 0..2 {
                    let xs = &face.coords[pair][0];
                    let u = dir[face.pq[0]];
                    let (sj, sm) = if face.outer_uniform {
                        // sum_u a_u e^{-ik d x_u} with x_u = x_0 + u h: e^{-ik d x_0} times the
                        // polynomial in w = e^{-ik d h}, by Horner's rule (two sin_cos, not one
                        // per sample).
                        let h = if xs.len() > 1 { xs[1] - xs[0] } else { 0.0 };
                        let (s0, c0) = (-k * u * xs[0]).sin_cos();
                        let (sw, cw) = (-k * u * h).sin_cos();
                        let (first, w) = (Complex64::new(c0, s0), Complex64::new(cw, sw));
                        let (mut sj, mut sm) = (Complex64::default(), Complex64::default());
                        for (aj, am) in inner[pair][0].iter().zip(&inner[pair][1]).rev() {
                            sj = sj * w + aj;
                            sm = sm * w + am;
                        }
                        (sj * first, sm * first)
                    } else {
                        // Graded samples: one phase per sample.
                        let e = phases(k, u, xs);
                        let sj: Complex64 = inner[pair][0].iter().zip(&e).map(|(a, e)| a * e).sum();
                        let sm: Complex64 = inner[pair][1].iter().zip(&e).map(|(a, e)| a * e).sum();
                        (sj, sm)
                    };
                    n[face.dirs[pair][0]] += sj * normal;
                    l[face.dirs[pair][1]] += sm * normal;
                }
            }
            let theta_of = |v: &[Complex64; 3]| v[0] * (ct * cp) + v[1] * (ct * sp) - v[2] * st;
            let phi_of = |v: &[Complex64; 3]| -v[0] * sp + v[1] * cp;
            let ik4 = Complex64::new(0.0, k / (4.0 * std::f64::consts::PI));
            out_t.push(ik4 * (phi_of(&l) + ETA0 * theta_of(&n)));
            out_p.push(-ik4 * (theta_of(&l) - ETA0 * phi_of(&n)));
        }
        out.push((ti, out_t, out_p));
    }
    out
}
