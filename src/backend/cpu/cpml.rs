//! CPML corrections, applied to one x-plane right after its main update (still in cache).
//!
//! The main update uses plain derivatives. Inside a PML layer along axis a, each derivative
//! D = dF/da in the curl of a component is replaced by D / kappa + psi, with
//! psi <- b psi + c D (Roden and Gedney's recursive convolution). So the correction adds
//! sign * coef * ((1/kappa - 1) D + psi), where sign is the derivative's sign in the curl
//! and coef is cb for E (per material) or dt/mu for H (per material when some is magnetic). Cells on a PML's outer wall whose E is
//! zeroed afterwards (the backing PEC) are skipped.

use super::update::{row, RowCoef};
use super::Shared;
use crate::real::Real;
use std::ops::Range;

/// An x-layer plane's layer index and its two psi arrays, if the plane lies in an x layer.
pub(super) type XLayerPsi<'a, T> = Option<(usize, [&'a mut [T]; 2])>;

/// The psi arrays one plane's correction updates (for E: Ey/Ez along x, Ex/Ez along y, Ex/Ey
/// along z; for H: Hy/Hz, Hx/Hz, Hx/Hy).
pub(super) struct PlanePsi<'a, T> {
    /// The x layer index and the plane's psi, if the plane lies in an x layer.
    pub x: XLayerPsi<'a, T>,
    /// [y layer][z] for this plane.
    pub y: [&'a mut [T]; 2],
    /// [y][z layer] for this plane.
    pub z: [&'a mut [T]; 2],
}

/// The layer factors (b, c, 1/kappa - 1, inv) of a run's elements: one set for the whole run
/// (a run inside an x or y layer, where every element shares the layer index), or one per
/// element (a run along z through a z layer).
#[derive(Clone, Copy)]
enum Steps<'a, T> {
    /// Every element of the run in the same layer.
    One([T; 4]),
    /// Element i in the layer of `[i]`.
    Each(&'a [[T; 4]]),
}

/// One correction over a contiguous run: D = (a1 - a0) inv; psi = b psi + c D;
/// out += (or -= when NEG) coef (k1 D + psi). `steps` gives (b, c, 1/kappa - 1, inv) of each
/// element (inv the local 1/dual for E, 1/primal for H, along the layer's axis), `coef` the
/// run's row of coefficients (cb: dt/eps for E, dt/mu for H), `coef_offset` the run's first
/// index within that row. The choice between a uniform and a per-cell coefficient and between
/// one and per-element layer factors is made once per run, outside the loop, so that the
/// loop over a row of an x or y layer vectorises (the arithmetic per element is the same
/// either way, so the choice does not change the bits).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn term<T: Real, const NEG: bool>(
    out: &mut [T],
    coef: RowCoef<T>,
    coef_offset: usize,
    a1: &[T],
    a0: &[T],
    psi: &mut [T],
    steps: Steps<T>,
) {
    let n = out.len();
    match (coef, steps) {
        (RowCoef::Uniform(_, cb), Steps::One(f)) => {
            term_on::<T, NEG>(out, a1, a0, psi, |_| cb, |_| f)
        }
        (RowCoef::Uniform(_, cb), Steps::Each(fs)) => {
            term_on::<T, NEG>(out, a1, a0, psi, |_| cb, |i| fs[i])
        }
        (RowCoef::PerCell(ids, table), Steps::One(f)) => {
            let ids = &ids[coef_offset..coef_offset + n];
            term_on::<T, NEG>(out, a1, a0, psi, |i| table[ids[i] as usize].1, |_| f)
        }
        (RowCoef::PerCell(ids, table), Steps::Each(fs)) => {
            let ids = &ids[coef_offset..coef_offset + n];
            term_on::<T, NEG>(out, a1, a0, psi, |i| table[ids[i] as usize].1, |i| fs[i])
        }
    }
}

/// The loop of [`term`], with the element's coefficient `coef(i)` and factors `steps(i)`.
#[inline(always)]
fn term_on<T: Real, const NEG: bool>(
    out: &mut [T],
    a1: &[T],
    a0: &[T],
    psi: &mut [T],
    coef: impl Fn(usize) -> T,
    steps: impl Fn(usize) -> [T; 4],
) {
    let n = out.len();
    // Every caller differences two runs of exactly the output's length: a longer one would
    // mean a wrong offset that slicing to n would hide.
    assert!(
        a1.len() == n && a0.len() == n && psi.len() == n,
        "CPML runs of unequal length"
    );
    let (a1, a0, psi) = (&a1[..n], &a0[..n], &mut psi[..n]);
    for i in 0..n {
        let [b, c, k1, inv] = steps(i);
        let d = (a1[i] - a0[i]) * inv;
        let p = b * psi[i] + c * d;
        psi[i] = p;
        let v = coef(i) * (k1 * d + p);
        if NEG {
            out[i] -= v;
        } else {
            out[i] += v;
        }
    }
}

/// CPML correction of the rows `rows` of the E plane at global x index `i` (local plane `p`).
#[allow(clippy::too_many_arguments)] // the plane, its rows, the fields, coefficients and psi
#[inline(always)] // into the ISA variants of the caller (`isa`)
pub(super) fn e_plane<'a, T: Real>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    h: &[Vec<T>; 3],
    rows: Range<usize>,
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    e: [&mut [T]; 3],
    psi: PlanePsi<T>,
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let o = p * plane;
    let [ex, ey, ez] = e;
    // x layers: Ey -= cb (..dHz/dx), Ez += cb (..dHy/dx). Skip the outer wall plane i = 0.
    if let Some((l, [psi_ey, psi_ez])) = psi.x {
        if i > 0 {
            let bck = sh.pml[0].e[l];
            for j in rows.clone() {
                let r = j * nz;
                let s = r..r + nz;
                term::<T, true>(
                    &mut ey[s.clone()],
                    coef(1, j),
                    0,
                    row(&h[2], o + r, nz),
                    row(&h[2], o - plane + r, nz),
                    &mut psi_ey[s.clone()],
                    Steps::One(bck),
                );
                term::<T, false>(
                    &mut ez[s.clone()],
                    coef(2, j),
                    0,
                    row(&h[1], o + r, nz),
                    row(&h[1], o - plane + r, nz),
                    &mut psi_ez[s],
                    Steps::One(bck),
                );
            }
        }
    }
    // y layers: Ex += cb (..dHz/dy), Ez -= cb (..dHx/dy). Skip the outer wall row j = 0.
    let py = &sh.pml[1];
    let [psi_ex, psi_ez] = psi.y;
    for l in 0..py.layers() {
        let j = py.global(l);
        if j == 0 || !rows.contains(&j) {
            continue;
        }
        let bck = py.e[l];
        let r = j * nz;
        let s = l * nz..(l + 1) * nz;
        term::<T, false>(
            &mut ex[r..r + nz],
            coef(0, j),
            0,
            row(&h[2], o + r, nz),
            row(&h[2], o + r - nz, nz),
            &mut psi_ex[s.clone()],
            Steps::One(bck),
        );
        term::<T, true>(
            &mut ez[r..r + nz],
            coef(2, j),
            0,
            row(&h[0], o + r, nz),
            row(&h[0], o + r - nz, nz),
            &mut psi_ez[s],
            Steps::One(bck),
        );
    }
    // z layers: Ex -= cb (..dHy/dz), Ey += cb (..dHx/dz). Skip the outer wall cell k = 0.
    let pz = &sh.pml[2];
    let lz = pz.layers();
    if lz == 0 {
        return;
    }
    let [psi_ex, psi_ey] = psi.z;
    let segments = [(1.min(pz.lo), pz.lo), (nz - pz.hi, nz)];
    for j in rows.clone() {
        let r = j * nz;
        let (hx, hy) = (row(&h[0], o + r, nz), row(&h[1], o + r, nz));
        for (k0, k1) in segments {
            if k0 >= k1 {
                continue;
            }
            let l0 = pz.layer_of(k0);
            let ps = j * lz + l0..j * lz + l0 + (k1 - k0);
            let bck = Steps::Each(&pz.e[l0..l0 + (k1 - k0)]);
            term::<T, true>(
                &mut ex[r + k0..r + k1],
                coef(0, j),
                k0,
                &hy[k0..k1],
                &hy[k0 - 1..k1 - 1],
                &mut psi_ex[ps.clone()],
                bck,
            );
            term::<T, false>(
                &mut ey[r + k0..r + k1],
                coef(1, j),
                k0,
                &hx[k0..k1],
                &hx[k0 - 1..k1 - 1],
                &mut psi_ey[ps],
                bck,
            );
        }
    }
}

/// CPML correction of the rows `rows` of the H plane at local plane `p`; `coef(c, j)` gives
/// the coefficients of row j of H component c (its cb is the correction's factor: dt/mu).
/// Unlike [`e_plane`] it needs no global x index: no H plane lies on an outer wall.
#[allow(clippy::too_many_arguments)] // the plane, its rows, the fields, coefficients and psi
#[inline(always)] // into the ISA variants of the caller (`isa`)
pub(super) fn h_plane<'a, T: Real>(
    sh: &Shared<T>,
    p: usize,
    e: &[Vec<T>; 3],
    rows: Range<usize>,
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    h: [&mut [T]; 3],
    psi: PlanePsi<T>,
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let o = p * plane;
    let [hx, hy, hz] = h;
    // x layers: Hy += cb (..dEz/dx), Hz -= cb (..dEy/dx). E beyond the last plane is the halo.
    if let Some((l, [psi_hy, psi_hz])) = psi.x {
        let bck = sh.pml[0].h[l];
        for j in rows.clone() {
            let s = j * nz..(j + 1) * nz;
            let (r1, r0) = (o + plane + j * nz, o + j * nz);
            term::<T, false>(
                &mut hy[s.clone()],
                coef(1, j),
                0,
                row(&e[2], r1, nz),
                row(&e[2], r0, nz),
                &mut psi_hy[s.clone()],
                Steps::One(bck),
            );
            term::<T, true>(
                &mut hz[s.clone()],
                coef(2, j),
                0,
                row(&e[1], r1, nz),
                row(&e[1], r0, nz),
                &mut psi_hz[s],
                Steps::One(bck),
            );
        }
    }
    // y layers: Hx -= ch (..dEz/dy), Hz += ch (..dEx/dy). E beyond the last row is the PEC wall.
    let py = &sh.pml[1];
    let [psi_hx, psi_hz] = psi.y;
    for l in 0..py.layers() {
        let j = py.global(l);
        if !rows.contains(&j) {
            continue;
        }
        let bck = py.h[l];
        let r = j * nz;
        let s = l * nz..(l + 1) * nz;
        let (ez_n, ex_n) = if j + 1 < ny {
            (row(&e[2], o + r + nz, nz), row(&e[0], o + r + nz, nz))
        } else {
            (&sh.zeros[..nz], &sh.zeros[..nz])
        };
        term::<T, true>(
            &mut hx[r..r + nz],
            coef(0, j),
            0,
            ez_n,
            row(&e[2], o + r, nz),
            &mut psi_hx[s.clone()],
            Steps::One(bck),
        );
        term::<T, false>(
            &mut hz[r..r + nz],
            coef(2, j),
            0,
            ex_n,
            row(&e[0], o + r, nz),
            &mut psi_hz[s],
            Steps::One(bck),
        );
    }
    // z layers: Hx += ch (..dEy/dz), Hy -= ch (..dEx/dz). E beyond the last cell is the PEC wall.
    let pz = &sh.pml[2];
    let lz = pz.layers();
    if lz == 0 {
        return;
    }
    let [psi_hx, psi_hy] = psi.z;
    for j in rows.clone() {
        let r = j * nz;
        let (ex, ey) = (row(&e[0], o + r, nz), row(&e[1], o + r, nz));
        for (k0, k1) in [(0, pz.lo), (nz - pz.hi, nz)] {
            if k0 >= k1 {
                continue;
            }
            let l0 = pz.layer_of(k0);
            // The last cell of the grid reads E beyond the wall (zero): handle it apart.
            let k1v = if k1 == nz { nz - 1 } else { k1 };
            let ps = j * lz + l0..j * lz + l0 + (k1v - k0);
            let bck = Steps::Each(&pz.h[l0..l0 + (k1v - k0)]);
            term::<T, false>(
                &mut hx[r + k0..r + k1v],
                coef(0, j),
                k0,
                &ey[k0 + 1..k1v + 1],
                &ey[k0..k1v],
                &mut psi_hx[ps.clone()],
                bck,
            );
            term::<T, true>(
                &mut hy[r + k0..r + k1v],
                coef(1, j),
                k0,
                &ex[k0 + 1..k1v + 1],
                &ex[k0..k1v],
                &mut psi_hy[ps],
                bck,
            );
            if k1 == nz {
                let l = pz.layer_of(nz - 1);
                let q = j * lz + l;
                let zero = [T::ZERO];
                let bck = Steps::One(pz.h[l]);
                term::<T, false>(
                    &mut hx[r + nz - 1..r + nz],
                    coef(0, j),
                    nz - 1,
                    &zero,
                    &ey[nz - 1..nz],
                    &mut psi_hx[q..q + 1],
                    bck,
                );
                term::<T, true>(
                    &mut hy[r + nz - 1..r + nz],
                    coef(1, j),
                    nz - 1,
                    &zero,
                    &ex[nz - 1..nz],
                    &mut psi_hy[q..q + 1],
                    bck,
                );
            }
        }
    }
}

impl<T> super::Slab<T> {
    /// The CPML's registered state ([`crate::backend::pass::arrays::cpml_psi`]): the slab's
    /// psi arrays, every axis's four.
    pub(super) fn cpml_arrays(&self) -> Vec<(String, crate::backend::Spread, &Vec<T>)> {
        let axes = [&self.psi_x, &self.psi_y, &self.psi_z];
        (0..3)
            .flat_map(|a| (0..4).map(move |k| (a, k)))
            .map(|(a, k)| {
                let (name, spread) = crate::backend::pass::arrays::cpml_psi(a, k);
                (name, spread, &axes[a][k])
            })
            .collect()
    }
}

/// [`super::Slab::cpml_arrays`] to write, by name, from the slab's psi arrays (x, y, z).
pub(super) fn psi_arrays_mut<T>(axes: [&mut [Vec<T>; 4]; 3]) -> Vec<(String, &mut Vec<T>)> {
    let mut out = Vec::new();
    for (a, arrays) in axes.into_iter().enumerate() {
        for (k, v) in arrays.iter_mut().enumerate() {
            out.push((crate::backend::pass::arrays::cpml_psi(a, k).0, v));
        }
    }
    out
}
