//! The CPU backend: slabs stepped with rayon, generic over f32 and f64.
//!
//! Each slab stores the six components as x-planes of `ny * nz` values (z contiguous) with one
//! halo plane on each side, so local plane `p` is global plane `x0 + p - 1`. The update is
//! the plain two-pass Yee scheme; the CPML adds a correction pass over its layers only, and
//! sources and PEC faces are applied last. Every cell is computed by the same arithmetic in
//! the same order whatever the slab count, so decomposition does not change a single bit.

use super::{Allocation, Backend};
use crate::decomp::{HaloCopy, HaloSide, SlabRange};
use crate::model::{Axis, BoundaryKind, Component, Model, Region};
use crate::real::Real;
use rayon::prelude::*;

/// Marks a row whose cells do not all share one material.
const MIXED_ROW: u16 = u16::MAX;

/// How the neighbour beyond a face is obtained along y or z.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Beyond {
    /// Zero (PEC, or the PEC behind a PML).
    Zero,
    /// The opposite end of the axis.
    Wrap,
    /// The mirror image with the sign flipped (PMC: tangential H is odd about the wall).
    Mirror,
}

fn beyond(kind: BoundaryKind) -> Beyond {
    match kind {
        BoundaryKind::Periodic => Beyond::Wrap,
        BoundaryKind::Pmc => Beyond::Mirror,
        BoundaryKind::Pec | BoundaryKind::Pml(_) => Beyond::Zero,
    }
}

/// Read-only data every slab uses.
struct Shared<T> {
    ny: usize,
    nz: usize,
    /// 1/dx, 1/dy, 1/dz.
    inv: [T; 3],
    /// dt / mu0.
    ch: T,
    /// (ca, cb) per material.
    coef: Vec<(T, T)>,
    /// What lies below the minimum face (for E reading H) and beyond the maximum face (for H
    /// reading E), along y and z.
    y_lo: Beyond,
    y_hi: Beyond,
    z_lo: Beyond,
    z_hi: Beyond,
    /// Tangential E is zeroed on the minimum faces of these axes.
    zero_min_face: [bool; 3],
    /// CPML (b, c, 1/kappa - 1) per layer index, E and H, per axis.
    pml: [PmlAxis<T>; 3],
    zeros: Vec<T>,
}

#[derive(Default)]
struct PmlAxis<T> {
    lo: usize,
    hi: usize,
    n: usize,
    e: Vec<[T; 3]>,
    h: Vec<[T; 3]>,
}

impl<T> PmlAxis<T> {
    fn layers(&self) -> usize {
        self.lo + self.hi
    }
    fn global(&self, l: usize) -> usize {
        if l < self.lo {
            l
        } else {
            self.n - self.hi + (l - self.lo)
        }
    }
}

/// One slab's arrays.
struct Slab<T> {
    range: SlabRange,
    /// Ex, Ey, Ez with halos: (len + 2) planes.
    e: [Vec<T>; 3],
    /// Hx, Hy, Hz with halos.
    h: [Vec<T>; 3],
    /// Material id per owned cell, per E component.
    mat: [Vec<u8>; 3],
    /// Per owned (plane, row): the row's material if uniform, else MIXED_ROW.
    row_mat: [Vec<u16>; 3],
    /// x-PML: (local plane, layer index) of the owned planes in a layer; psi for Ey, Ez, Hy, Hz.
    pml_x_planes: Vec<(usize, usize)>,
    psi_x: [Vec<T>; 4],
    /// y-PML psi for Ex, Ez, Hx, Hz: [owned plane][y layer][z].
    psi_y: [Vec<T>; 4],
    /// z-PML psi for Ex, Ey, Hx, Hy: [owned plane][y][z layer].
    psi_z: [Vec<T>; 4],
    /// Sources that touch this slab: (model source index, component, local cell ranges).
    sources: Vec<(usize, Component, [[usize; 2]; 3])>,
}

/// The rayon engine over all slabs.
pub struct CpuBackend<T> {
    shared: Shared<T>,
    slabs: Vec<Slab<T>>,
    allocation: Allocation,
}

impl<T: Real> CpuBackend<T> {
    /// Allocate and initialise the slabs for `model` split as `ranges` (tiling [0, nx)).
    pub fn new(model: &Model, ranges: &[SlabRange]) -> Self {
        let g = &model.grid;
        let [_, ny, nz] = g.shape;
        let b = &model.boundaries;
        let pml = [0, 1, 2].map(|a| {
            let p = &b.profiles[a];
            let conv = |v: &Vec<[f64; 3]>| v.iter().map(|c| [T::from_f64(c[0]), T::from_f64(c[1]), T::from_f64(c[2] - 1.0)]).collect();
            PmlAxis { lo: p.lo, hi: p.hi, n: p.n, e: conv(&p.e), h: conv(&p.h) }
        });
        let shared = Shared {
            ny,
            nz,
            inv: g.cell.map(|d| T::from_f64(1.0 / d)),
            ch: T::from_f64(g.dt / crate::model::MU0),
            coef: model.materials.coefficients(g.dt).iter().map(|c| (T::from_f64(c.ca), T::from_f64(c.cb))).collect(),
            y_lo: beyond(b.face(Axis::Y, false)),
            y_hi: beyond(b.face(Axis::Y, true)),
            z_lo: beyond(b.face(Axis::Z, false)),
            z_hi: beyond(b.face(Axis::Z, true)),
            zero_min_face: [0, 1, 2].map(|a| b.faces[a][0].zeroes_tangential_e()),
            pml,
            zeros: vec![T::ZERO; nz.max(ny)],
        };
        let slabs: Vec<Slab<T>> = ranges.par_iter().map(|r| Slab::new(model, &shared, *r)).collect();
        let mut allocation = Allocation::default();
        for s in &slabs {
            allocation.add(&s.allocation(&shared));
        }
        CpuBackend { shared, slabs, allocation }
    }

    fn slab_of(&self, x: usize) -> &Slab<T> {
        self.slabs.iter().find(|s| s.range.x0 <= x && x < s.range.x1).expect("x index inside the grid")
    }
}

impl<T: Real> Slab<T> {
    fn new(model: &Model, sh: &Shared<T>, range: SlabRange) -> Self {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = range.len();
        let field = || vec![T::ZERO; (n + 2) * plane];
        let mut mat = [vec![0u8; n * plane], vec![0u8; n * plane], vec![0u8; n * plane]];
        for (c, m) in mat.iter_mut().enumerate() {
            paint_materials(model, Component::ALL[c], range, m);
        }
        let row_mat = [0, 1, 2].map(|c| {
            mat[c]
                .chunks(nz)
                .map(|row| if row.iter().all(|&v| v == row[0]) { row[0] as u16 } else { MIXED_ROW })
                .collect::<Vec<u16>>()
        });
        let px = &sh.pml[0];
        let pml_x_planes: Vec<(usize, usize)> = (0..px.layers())
            .map(|l| (px.global(l), l))
            .filter(|(i, _)| range.x0 <= *i && *i < range.x1)
            .map(|(i, l)| (i - range.x0 + 1, l))
            .collect();
        let nxp = pml_x_planes.len();
        let ly = sh.pml[1].layers();
        let lz = sh.pml[2].layers();
        let sources = model
            .sources
            .iter()
            .enumerate()
            .filter_map(|(s, src)| {
                let x0 = src.cells[0][0].max(range.x0);
                let x1 = src.cells[0][1].min(range.x1);
                (x0 < x1).then(|| (s, src.component, [[x0 - range.x0 + 1, x1 - range.x0 + 1], src.cells[1], src.cells[2]]))
            })
            .collect();
        Slab {
            range,
            e: [field(), field(), field()],
            h: [field(), field(), field()],
            mat,
            row_mat,
            pml_x_planes,
            psi_x: [0; 4].map(|_| vec![T::ZERO; nxp * plane]),
            psi_y: [0; 4].map(|_| vec![T::ZERO; n * ly * nz]),
            psi_z: [0; 4].map(|_| vec![T::ZERO; n * ny * lz]),
            sources,
        }
    }

    fn allocation(&self, _sh: &Shared<T>) -> Allocation {
        let t = std::mem::size_of::<T>() as u64;
        let len = |v: &Vec<T>| v.len() as u64 * t;
        let plane = (self.e[0].len() / (self.range.len() + 2)) as u64 * t;
        let with_halos: u64 = self.e.iter().chain(self.h.iter()).map(len).sum();
        let halos = 6 * 2 * plane;
        Allocation {
            fields: with_halos - halos,
            halos,
            materials: self.mat.iter().map(|m| m.len() as u64).sum::<u64>()
                + self.row_mat.iter().map(|m| 2 * m.len() as u64).sum::<u64>(),
            pml: self.psi_x.iter().chain(&self.psi_y).chain(&self.psi_z).map(len).sum(),
            monitors: 0,
        }
    }

    /// H^{n-1/2} -> H^{n+1/2}: the curl of E, then the CPML correction.
    fn update_h(&mut self, sh: &Shared<T>) {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = self.range.len();
        let e = &self.e;
        let [hx, hy, hz] = &mut self.h;
        let owned = plane..(n + 1) * plane;
        hx[owned.clone()]
            .par_chunks_mut(plane)
            .zip(hy[owned.clone()].par_chunks_mut(plane))
            .zip(hz[owned].par_chunks_mut(plane))
            .enumerate()
            .for_each(|(q, ((hx, hy), hz))| h_plane(sh, q + 1, e, hx, hy, hz));
        self.pml_h(sh);
    }

    /// E^n -> E^{n+1}: the curl of H, the CPML correction, sources, PEC faces.
    fn update_e(&mut self, sh: &Shared<T>, source_values: &[f64]) {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = self.range.len();
        let h = &self.h;
        let mat = &self.mat;
        let row_mat = &self.row_mat;
        let [ex, ey, ez] = &mut self.e;
        let owned = plane..(n + 1) * plane;
        ex[owned.clone()]
            .par_chunks_mut(plane)
            .zip(ey[owned.clone()].par_chunks_mut(plane))
            .zip(ez[owned].par_chunks_mut(plane))
            .enumerate()
            .for_each(|(q, ((ex, ey), ez))| e_plane(sh, q + 1, h, mat, row_mat, ex, ey, ez));
        self.pml_e(sh);
        self.inject(sh, source_values);
        self.zero_pec_faces(sh);
    }

    fn inject(&mut self, sh: &Shared<T>, source_values: &[f64]) {
        let plane = sh.ny * sh.nz;
        for &(s, c, cells) in &self.sources {
            let j = source_values[s];
            let ci = c as usize;
            for p in cells[0][0]..cells[0][1] {
                for y in cells[1][0]..cells[1][1] {
                    for z in cells[2][0]..cells[2][1] {
                        let local = (p - 1) * plane + y * sh.nz + z;
                        let cb = sh.coef[self.mat[ci][local] as usize].1;
                        self.e[ci][p * plane + y * sh.nz + z] -= cb * T::from_f64(j);
                    }
                }
            }
        }
    }

    fn zero_pec_faces(&mut self, sh: &Shared<T>) {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = self.range.len();
        if sh.zero_min_face[0] && self.range.x0 == 0 {
            for c in [1, 2] {
                self.e[c][plane..2 * plane].fill(T::ZERO);
            }
        }
        for p in 1..=n {
            if sh.zero_min_face[1] {
                for c in [0, 2] {
                    self.e[c][p * plane..p * plane + nz].fill(T::ZERO);
                }
            }
            if sh.zero_min_face[2] {
                for c in [0, 1] {
                    for j in 0..ny {
                        self.e[c][p * plane + j * nz] = T::ZERO;
                    }
                }
            }
        }
    }

    /// CPML correction of H: psi = b psi + c dE; H += sign * ch * ((1/kappa - 1) dE + psi).
    fn pml_h(&mut self, sh: &Shared<T>) {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = self.range.len();
        let ch = sh.ch;
        let [_, hy, hz] = &mut self.h;
        let [ex, ey, ez] = &self.e;
        // x layers: Hy += ch (..dEz/dx), Hz -= ch (..dEy/dx).
        let idx = sh.inv[0];
        for (q, &(p, l)) in self.pml_x_planes.iter().enumerate() {
            let [b, c, k1] = sh.pml[0].h[l];
            for m in 0..plane {
                let o = p * plane + m;
                let d_ez = (ez[o + plane] - ez[o]) * idx;
                let psi = &mut self.psi_x[2][q * plane + m];
                *psi = b * *psi + c * d_ez;
                hy[o] += ch * (k1 * d_ez + *psi);
                let d_ey = (ey[o + plane] - ey[o]) * idx;
                let psi = &mut self.psi_x[3][q * plane + m];
                *psi = b * *psi + c * d_ey;
                hz[o] -= ch * (k1 * d_ey + *psi);
            }
        }
        let [hx, hy, hz] = &mut self.h;
        // y layers: Hx -= ch (..dEz/dy), Hz += ch (..dEx/dy).
        let py = &sh.pml[1];
        let idy = sh.inv[1];
        for p in 1..=n {
            for l in 0..py.layers() {
                let j = py.global(l);
                let [b, c, k1] = py.h[l];
                for k in 0..nz {
                    let o = p * plane + j * nz + k;
                    let (ez_n, ex_n) = if j + 1 < ny { (ez[o + nz], ex[o + nz]) } else { (T::ZERO, T::ZERO) };
                    let s = ((p - 1) * py.layers() + l) * nz + k;
                    let d_ez = (ez_n - ez[o]) * idy;
                    let psi = &mut self.psi_y[2][s];
                    *psi = b * *psi + c * d_ez;
                    hx[o] -= ch * (k1 * d_ez + *psi);
                    let d_ex = (ex_n - ex[o]) * idy;
                    let psi = &mut self.psi_y[3][s];
                    *psi = b * *psi + c * d_ex;
                    hz[o] += ch * (k1 * d_ex + *psi);
                }
            }
        }
        // z layers: Hx += ch (..dEy/dz), Hy -= ch (..dEx/dz).
        let pz = &sh.pml[2];
        let idz = sh.inv[2];
        for p in 1..=n {
            for j in 0..ny {
                for l in 0..pz.layers() {
                    let k = pz.global(l);
                    let [b, c, k1] = pz.h[l];
                    let o = p * plane + j * nz + k;
                    let (ey_n, ex_n) = if k + 1 < nz { (ey[o + 1], ex[o + 1]) } else { (T::ZERO, T::ZERO) };
                    let s = ((p - 1) * ny + j) * pz.layers() + l;
                    let d_ey = (ey_n - ey[o]) * idz;
                    let psi = &mut self.psi_z[2][s];
                    *psi = b * *psi + c * d_ey;
                    hx[o] += ch * (k1 * d_ey + *psi);
                    let d_ex = (ex_n - ex[o]) * idz;
                    let psi = &mut self.psi_z[3][s];
                    *psi = b * *psi + c * d_ex;
                    hy[o] -= ch * (k1 * d_ex + *psi);
                }
            }
        }
    }

    /// CPML correction of E: psi = b psi + c dH; E += sign * cb * ((1/kappa - 1) dH + psi).
    fn pml_e(&mut self, sh: &Shared<T>) {
        let (ny, nz) = (sh.ny, sh.nz);
        let plane = ny * nz;
        let n = self.range.len();
        let [hx, hy, hz] = &self.h;
        let cb = |c: usize, local: usize| sh.coef[self.mat[c][local] as usize].1;
        // x layers: Ey -= cb (..dHz/dx), Ez += cb (..dHy/dx).
        let idx = sh.inv[0];
        {
            let [_, ey, ez] = &mut self.e;
            for (q, &(p, l)) in self.pml_x_planes.iter().enumerate() {
                let [b, c, k1] = sh.pml[0].e[l];
                for m in 0..plane {
                    let o = p * plane + m;
                    let local = (p - 1) * plane + m;
                    let d_hz = (hz[o] - hz[o - plane]) * idx;
                    let psi = &mut self.psi_x[0][q * plane + m];
                    *psi = b * *psi + c * d_hz;
                    ey[o] -= cb(1, local) * (k1 * d_hz + *psi);
                    let d_hy = (hy[o] - hy[o - plane]) * idx;
                    let psi = &mut self.psi_x[1][q * plane + m];
                    *psi = b * *psi + c * d_hy;
                    ez[o] += cb(2, local) * (k1 * d_hy + *psi);
                }
            }
        }
        // y layers: Ex += cb (..dHz/dy), Ez -= cb (..dHx/dy).
        let py = &sh.pml[1];
        let idy = sh.inv[1];
        {
            let [ex, _, ez] = &mut self.e;
            for p in 1..=n {
                for l in 0..py.layers() {
                    let j = py.global(l);
                    let [b, c, k1] = py.e[l];
                    for k in 0..nz {
                        let o = p * plane + j * nz + k;
                        let local = o - plane;
                        let (hz_p, hx_p) = if j > 0 { (hz[o - nz], hx[o - nz]) } else { (T::ZERO, T::ZERO) };
                        let s = ((p - 1) * py.layers() + l) * nz + k;
                        let d_hz = (hz[o] - hz_p) * idy;
                        let psi = &mut self.psi_y[0][s];
                        *psi = b * *psi + c * d_hz;
                        ex[o] += cb(0, local) * (k1 * d_hz + *psi);
                        let d_hx = (hx[o] - hx_p) * idy;
                        let psi = &mut self.psi_y[1][s];
                        *psi = b * *psi + c * d_hx;
                        ez[o] -= cb(2, local) * (k1 * d_hx + *psi);
                    }
                }
            }
        }
        // z layers: Ex -= cb (..dHy/dz), Ey += cb (..dHx/dz).
        let pz = &sh.pml[2];
        let idz = sh.inv[2];
        let [ex, ey, _] = &mut self.e;
        for p in 1..=n {
            for j in 0..ny {
                for l in 0..pz.layers() {
                    let k = pz.global(l);
                    let [b, c, k1] = pz.e[l];
                    let o = p * plane + j * nz + k;
                    let local = o - plane;
                    let (hy_p, hx_p) = if k > 0 { (hy[o - 1], hx[o - 1]) } else { (T::ZERO, T::ZERO) };
                    let s = ((p - 1) * ny + j) * pz.layers() + l;
                    let d_hy = (hy[o] - hy_p) * idz;
                    let psi = &mut self.psi_z[0][s];
                    *psi = b * *psi + c * d_hy;
                    ex[o] -= cb(0, local) * (k1 * d_hy + *psi);
                    let d_hx = (hx[o] - hx_p) * idz;
                    let psi = &mut self.psi_z[1][s];
                    *psi = b * *psi + c * d_hx;
                    ey[o] += cb(1, local) * (k1 * d_hx + *psi);
                }
            }
        }
    }
}

/// Paint the material ids of one E component over the slab's owned cells: objects in order,
/// each only over the index box its bounds cover.
fn paint_materials(model: &Model, c: Component, range: SlabRange, out: &mut [u8]) {
    let g = &model.grid;
    let [_, ny, nz] = g.shape;
    let off = c.offset();
    for obj in &model.objects {
        let (lo, hi) = obj.bounds();
        let idx = |a: usize, x: f64| (x - g.origin[a]) / g.cell[a] - off[a];
        let first = |a: usize| (idx(a, lo[a]) - 1e-6).ceil().max(0.0) as usize;
        let last = |a: usize, n: usize| ((idx(a, hi[a]) + 1e-6).floor() + 1.0).clamp(0.0, n as f64) as usize;
        let (i0, i1) = (first(0).max(range.x0), last(0, g.shape[0]).min(range.x1));
        let (j0, j1) = (first(1), last(1, ny));
        let (k0, k1) = (first(2), last(2, nz));
        for i in i0..i1 {
            for j in j0..j1 {
                for k in k0..k1 {
                    let p = g.position(c, [i as f64, j as f64, k as f64]);
                    if obj.contains(p) {
                        out[((i - range.x0) * ny + j) * nz + k] = obj.material;
                    }
                }
            }
        }
    }
}

/// The row beyond a face: zeros, the wrapped row, or (for Mirror) None: the caller negates.
fn row<'a, T: Real>(field: &'a [T], start: usize, nz: usize) -> &'a [T] {
    &field[start..start + nz]
}

/// `out[k] -= coef * ((a1[k] - a0[k]) * sa + (b[k+1] - b[k]) * sb)`, with `b_end` standing for
/// b[nz] (the value beyond the z maximum face).
#[inline(always)]
fn h_row_shift<T: Real>(out: &mut [T], coef: T, a1: &[T], a0: &[T], sa: T, b: &[T], sb: T, b_end: T) {
    let m = out.len() - 1;
    let (main, last) = out.split_at_mut(m);
    for ((((o, &x1), &x0), &y1), &y0) in main.iter_mut().zip(&a1[..m]).zip(&a0[..m]).zip(&b[1..]).zip(&b[..m]) {
        *o -= coef * ((x1 - x0) * sa + (y1 - y0) * sb);
    }
    last[0] -= coef * ((a1[m] - a0[m]) * sa + (b_end - b[m]) * sb);
}

/// `out[k] -= coef * ((a1[k] - a0[k]) * sa + (b1[k] - b0[k]) * sb)`.
#[inline(always)]
fn h_row<T: Real>(out: &mut [T], coef: T, a1: &[T], a0: &[T], sa: T, b1: &[T], b0: &[T], sb: T) {
    for ((((o, &x1), &x0), &y1), &y0) in out.iter_mut().zip(a1).zip(a0).zip(b1).zip(b0) {
        *o -= coef * ((x1 - x0) * sa + (y1 - y0) * sb);
    }
}

fn z_end<T: Real>(kind: Beyond, row: &[T]) -> T {
    match kind {
        Beyond::Wrap => row[0],
        _ => T::ZERO,
    }
}

/// H update of one owned plane `p`.
fn h_plane<T: Real>(sh: &Shared<T>, p: usize, e: &[Vec<T>; 3], hx: &mut [T], hy: &mut [T], hz: &mut [T]) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let [idx, idy, idz] = sh.inv;
    let ch = sh.ch;
    let o = p * plane;
    let on = o + plane;
    for j in 0..ny {
        let r = j * nz;
        let ex = row(&e[0], o + r, nz);
        let ey = row(&e[1], o + r, nz);
        let ez = row(&e[2], o + r, nz);
        let ey_xn = row(&e[1], on + r, nz);
        let ez_xn = row(&e[2], on + r, nz);
        let (ex_yn, ez_yn) = if j + 1 < ny {
            (row(&e[0], o + r + nz, nz), row(&e[2], o + r + nz, nz))
        } else if sh.y_hi == Beyond::Wrap {
            (row(&e[0], o, nz), row(&e[2], o, nz))
        } else {
            (&sh.zeros[..nz], &sh.zeros[..nz])
        };
        // Hx -= ch (dEz/dy - dEy/dz)
        h_row_shift(&mut hx[r..r + nz], ch, ez_yn, ez, idy, ey, -idz, z_end(sh.z_hi, ey));
        // Hy -= ch (dEx/dz - dEz/dx)
        h_row_shift(&mut hy[r..r + nz], ch, ez_xn, ez, -idx, ex, idz, z_end(sh.z_hi, ex));
        // Hz -= ch (dEy/dx - dEx/dy)
        h_row(&mut hz[r..r + nz], ch, ey_xn, ey, idx, ex_yn, ex, -idy);
    }
}

/// Coefficients of one E row: one material for the whole row, or a lookup per cell.
#[derive(Clone, Copy)]
enum RowCoef<'a, T> {
    Uniform(T, T),
    PerCell(&'a [u8], &'a [(T, T)]),
}

/// `out[k] = ca out[k] + cb ((a1[k] - a0[k]) sa + (b[k] - b[k-1]) sb)`, `b_start` standing for b[-1].
#[inline(always)]
fn e_row_shift<T: Real>(out: &mut [T], rc: RowCoef<T>, a1: &[T], a0: &[T], sa: T, b: &[T], sb: T, b_start: T) {
    let curl0 = (a1[0] - a0[0]) * sa + (b[0] - b_start) * sb;
    let n = out.len();
    match rc {
        RowCoef::Uniform(ca, cb) => {
            out[0] = ca * out[0] + cb * curl0;
            for ((((o, &x1), &x0), &y1), &y0) in out[1..].iter_mut().zip(&a1[1..]).zip(&a0[1..]).zip(&b[1..]).zip(&b[..n - 1]) {
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
        RowCoef::PerCell(ids, table) => {
            let (ca, cb) = table[ids[0] as usize];
            out[0] = ca * out[0] + cb * curl0;
            for (((((o, &x1), &x0), &y1), &y0), &id) in
                out[1..].iter_mut().zip(&a1[1..]).zip(&a0[1..]).zip(&b[1..]).zip(&b[..n - 1]).zip(&ids[1..])
            {
                let (ca, cb) = table[id as usize];
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
    }
}

/// `out[k] = ca out[k] + cb ((a1[k] - a0[k]) sa + (b1[k] - b0[k]) sb)`.
#[inline(always)]
fn e_row<T: Real>(out: &mut [T], rc: RowCoef<T>, a1: &[T], a0: &[T], sa: T, b1: &[T], b0: &[T], sb: T) {
    match rc {
        RowCoef::Uniform(ca, cb) => {
            for ((((o, &x1), &x0), &y1), &y0) in out.iter_mut().zip(a1).zip(a0).zip(b1).zip(b0) {
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
        RowCoef::PerCell(ids, table) => {
            for (((((o, &x1), &x0), &y1), &y0), &id) in out.iter_mut().zip(a1).zip(a0).zip(b1).zip(b0).zip(ids) {
                let (ca, cb) = table[id as usize];
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
    }
}

fn z_start<T: Real>(kind: Beyond, row: &[T]) -> T {
    match kind {
        Beyond::Wrap => row[row.len() - 1],
        Beyond::Mirror => -row[0],
        Beyond::Zero => T::ZERO,
    }
}

/// E update of one owned plane `p`.
#[allow(clippy::too_many_arguments)]
fn e_plane<T: Real>(
    sh: &Shared<T>,
    p: usize,
    h: &[Vec<T>; 3],
    mat: &[Vec<u8>; 3],
    row_mat: &[Vec<u16>; 3],
    ex: &mut [T],
    ey: &mut [T],
    ez: &mut [T],
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let [idx, idy, idz] = sh.inv;
    let o = p * plane;
    let ob = o - plane;
    let local_plane = (p - 1) * plane;
    // Rows below y = 0 for the Mirror case: the negated first rows.
    let mirror = |f: &Vec<T>| -> Vec<T> { f[o..o + nz].iter().map(|&v| -v).collect() };
    let (hx_m, hz_m) = if sh.y_lo == Beyond::Mirror { (mirror(&h[0]), mirror(&h[2])) } else { (Vec::new(), Vec::new()) };
    for j in 0..ny {
        let r = j * nz;
        let hx = row(&h[0], o + r, nz);
        let hy = row(&h[1], o + r, nz);
        let hz = row(&h[2], o + r, nz);
        let hy_xb = row(&h[1], ob + r, nz);
        let hz_xb = row(&h[2], ob + r, nz);
        let (hx_yb, hz_yb): (&[T], &[T]) = if j > 0 {
            (row(&h[0], o + r - nz, nz), row(&h[2], o + r - nz, nz))
        } else {
            match sh.y_lo {
                Beyond::Wrap => (row(&h[0], o + (ny - 1) * nz, nz), row(&h[2], o + (ny - 1) * nz, nz)),
                Beyond::Mirror => (&hx_m, &hz_m),
                Beyond::Zero => (&sh.zeros[..nz], &sh.zeros[..nz]),
            }
        };
        let coef = |c: usize| {
            let rm = row_mat[c][(p - 1) * ny + j];
            if rm == MIXED_ROW {
                RowCoef::PerCell(&mat[c][local_plane + r..local_plane + r + nz], &sh.coef)
            } else {
                let (ca, cb) = sh.coef[rm as usize];
                RowCoef::Uniform(ca, cb)
            }
        };
        // Ex = ca Ex + cb (dHz/dy - dHy/dz)
        e_row_shift(&mut ex[r..r + nz], coef(0), hz, hz_yb, idy, hy, -idz, z_start(sh.z_lo, hy));
        // Ey = ca Ey + cb (dHx/dz - dHz/dx)
        e_row_shift(&mut ey[r..r + nz], coef(1), hz, hz_xb, -idx, hx, idz, z_start(sh.z_lo, hx));
        // Ez = ca Ez + cb (dHy/dx - dHx/dy)
        e_row(&mut ez[r..r + nz], coef(2), hy, hy_xb, idx, hx, hx_yb, -idy);
    }
}

impl<T: Real> Backend for CpuBackend<T> {
    type Real = T;

    fn update_h(&mut self) {
        let sh = &self.shared;
        self.slabs.par_iter_mut().for_each(|s| s.update_h(sh));
    }

    fn update_e(&mut self, source_values: &[f64]) {
        let sh = &self.shared;
        self.slabs.par_iter_mut().for_each(|s| s.update_e(sh, source_values));
    }

    fn exchange(&mut self, copies: &[HaloCopy]) {
        let plane = self.shared.ny * self.shared.nz;
        let mut buf = vec![T::ZERO; plane];
        for c in copies {
            let ci = c.component as usize % 3;
            let src = &self.slabs[c.src_slab];
            let sp = c.src_x - src.range.x0 + 1;
            let field = if c.component.is_electric() { &src.e[ci] } else { &src.h[ci] };
            buf.copy_from_slice(&field[sp * plane..(sp + 1) * plane]);
            if c.negate {
                buf.iter_mut().for_each(|v| *v = -*v);
            }
            let dst = &mut self.slabs[c.dst_slab];
            let dp = match c.dst_side {
                HaloSide::Left => 0,
                HaloSide::Right => dst.range.len() + 1,
            };
            let f = if c.component.is_electric() { &mut dst.e[ci] } else { &mut dst.h[ci] };
            f[dp * plane..(dp + 1) * plane].copy_from_slice(&buf);
        }
    }

    fn sample(&self, component: Component, index: [usize; 3]) -> f64 {
        let s = self.slab_of(index[0]);
        let ci = component as usize % 3;
        let f = if component.is_electric() { &s.e[ci] } else { &s.h[ci] };
        let p = index[0] - s.range.x0 + 1;
        f[(p * self.shared.ny + index[1]) * self.shared.nz + index[2]].to_f64()
    }

    fn gather(&self, component: Component, region: &Region, out: &mut [T]) {
        let (ny, nz) = (self.shared.ny, self.shared.nz);
        let ci = component as usize % 3;
        let counts = region.counts();
        let mut o = 0;
        for i in (region.start[0]..region.end[0]).step_by(region.stride[0]) {
            let s = self.slab_of(i);
            let f = if component.is_electric() { &s.e[ci] } else { &s.h[ci] };
            let p = i - s.range.x0 + 1;
            for j in (region.start[1]..region.end[1]).step_by(region.stride[1]) {
                let base = (p * ny + j) * nz;
                let rowv = &f[base + region.start[2]..base + region.end[2]];
                for v in rowv.iter().step_by(region.stride[2]) {
                    out[o] = *v;
                    o += 1;
                }
            }
        }
        debug_assert_eq!(o, counts.iter().product::<usize>());
    }

    fn all_finite(&self) -> bool {
        let plane = self.shared.ny * self.shared.nz;
        self.slabs.par_iter().all(|s| {
            let n = s.range.len();
            s.e.iter().chain(s.h.iter()).all(|f| f[plane..(n + 1) * plane].par_iter().all(|v| v.is_finite()))
        })
    }

    fn allocation(&self) -> Allocation {
        self.allocation
    }

    fn name(&self) -> String {
        "cpu".into()
    }
}
