//! The main Yee update of one x-plane, row by row, written so the z loop vectorises.
//!
//! Each row function is one line of the curl equations over a contiguous z row; values
//! beyond a y or z face come from the boundary (zero, wrapped or mirrored).

use super::Shared;
use crate::operator::Beyond;
use crate::real::Real;
use std::ops::Range;

/// The `nz` values of `field` from `start`: one z row.
pub(super) fn row<T: Real>(field: &[T], start: usize, nz: usize) -> &[T] {
    &field[start..start + nz]
}

/// `out[k] = ca out[k] - cb ((a1[k] - a0[k]) sa + (b[k+1] - b[k]) sb[k])`, with `b_end` standing
/// for b[nz] (the value beyond the z maximum face) and sb[k] = `inv[k]`, negated when `NEG`
/// (the z step of cell k: 1/primal along z, one value per cell on a graded axis and the same
/// 1/dz everywhere on a uniform one; negation is exact, so `x * (-s)` is the value the scalar
/// `-1/dz` gave). A row with ca = 1 (no magnetic loss, every row of a non-magnetic run) takes
/// `out[k] -= cb (...)`, which is the same value: 1 x = x.
#[allow(clippy::too_many_arguments)] // one argument per operand of the curl equation
#[inline(always)]
fn h_row_shift<T: Real, const NEG: bool, const GRADED: bool>(
    out: &mut [T],
    rc: RowCoef<T>,
    a1: &[T],
    a0: &[T],
    sa: T,
    b: &[T],
    inv: &[T],
    b_end: T,
) {
    let m = out.len() - 1;
    let sgn = |v: T| if NEG { -v } else { v };
    let (main, last) = out.split_at_mut(m);
    // The loops over the row's first m cells, with the z steps from the iterator `$z`.
    macro_rules! rows {
        ($z:expr) => {{
            let rows = main
                .iter_mut()
                .zip(&a1[..m])
                .zip(&a0[..m])
                .zip(&b[1..])
                .zip(&b[..m])
                .zip($z);
            match rc {
                RowCoef::Uniform(ca, cb) if ca == T::ONE => {
                    for (((((o, &x1), &x0), &y1), &y0), s) in rows {
                        *o -= cb * ((x1 - x0) * sa + (y1 - y0) * s);
                    }
                }
                RowCoef::Uniform(ca, cb) => {
                    for (((((o, &x1), &x0), &y1), &y0), s) in rows {
                        *o = ca * *o - cb * ((x1 - x0) * sa + (y1 - y0) * s);
                    }
                }
                RowCoef::PerCell(ids, table) => {
                    for ((((((o, &x1), &x0), &y1), &y0), s), &id) in rows.zip(ids) {
                        let (ca, cb) = table[id as usize];
                        *o = ca * *o - cb * ((x1 - x0) * sa + (y1 - y0) * s);
                    }
                }
            }
        }};
    }
    // A uniform z axis repeats its one step (no load in the loop, the loop the scalar 1/dz
    // gave); a graded one reads the step of each cell. The values are the same on a uniform
    // axis, so both give the same bits.
    if GRADED {
        rows!(inv[..m].iter().map(|&v| sgn(v)))
    } else {
        rows!(std::iter::repeat(sgn(inv[0])))
    }
    let (ca, cb) = rc.at(m);
    let s_last = sgn(inv[if GRADED { m } else { 0 }]);
    last[0] = ca * last[0] - cb * ((a1[m] - a0[m]) * sa + (b_end - b[m]) * s_last);
}

/// `out[k] = ca out[k] - cb ((a1[k] - a0[k]) sa + (b1[k] - b0[k]) sb)` (see [`h_row_shift`]).
#[allow(clippy::too_many_arguments)] // one argument per operand of the curl equation
#[inline(always)]
fn h_row<T: Real>(
    out: &mut [T],
    rc: RowCoef<T>,
    a1: &[T],
    a0: &[T],
    sa: T,
    b1: &[T],
    b0: &[T],
    sb: T,
) {
    let rows = out.iter_mut().zip(a1).zip(a0).zip(b1).zip(b0);
    match rc {
        RowCoef::Uniform(ca, cb) if ca == T::ONE => {
            for ((((o, &x1), &x0), &y1), &y0) in rows {
                *o -= cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
        RowCoef::Uniform(ca, cb) => {
            for ((((o, &x1), &x0), &y1), &y0) in rows {
                *o = ca * *o - cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
        RowCoef::PerCell(ids, table) => {
            for (((((o, &x1), &x0), &y1), &y0), &id) in rows.zip(ids) {
                let (ca, cb) = table[id as usize];
                *o = ca * *o - cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
    }
}

pub(super) fn z_end<T: Real>(kind: Beyond, row: &[T]) -> T {
    match kind {
        Beyond::Wrap => row[0],
        _ => T::ZERO,
    }
}

/// H update of the rows `rows` of one owned plane `p` (global x index `i`); `coef(c, j)` gives
/// the coefficients of row j of H component c. The steps are the primal cells: 1/dx of cell i, 1/dy of cell j,
/// 1/dz per cell of the row.
#[allow(clippy::too_many_arguments)] // the plane, its three fields and the coefficients
#[inline(always)] // into the ISA variants of the caller (`isa`)
pub(super) fn h_plane<'a, T: Real>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    e: &[Vec<T>; 3],
    rows: Range<usize>,
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    hx: &mut [T],
    hy: &mut [T],
    hz: &mut [T],
) {
    if sh.graded[2] {
        h_plane_on::<T, true>(sh, i, p, e, rows, coef, hx, hy, hz)
    } else {
        h_plane_on::<T, false>(sh, i, p, e, rows, coef, hx, hy, hz)
    }
}

/// [`h_plane`] with the z steps read per cell (`GZ`, a graded z axis) or as one scalar.
#[allow(clippy::too_many_arguments)] // the plane, its three fields and the coefficients
#[inline(always)] // into the ISA variants of the caller (`isa`)
fn h_plane_on<'a, T: Real, const GZ: bool>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    e: &[Vec<T>; 3],
    rows: Range<usize>,
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    hx: &mut [T],
    hy: &mut [T],
    hz: &mut [T],
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let idx = sh.inv_primal[0][i];
    let idz = &sh.inv_primal[2][..nz];
    let o = p * plane;
    let on = o + plane;
    for j in rows {
        let idy = sh.inv_primal[1][j];
        let r = j * nz;
        let ex = row(&e[0], o + r, nz);
        let ey = row(&e[1], o + r, nz);
        let ez = row(&e[2], o + r, nz);
        let ey_xn = row(&e[1], on + r, nz);
        let ez_xn = row(&e[2], on + r, nz);
        let (ex_yn, ez_yn) = if j + 1 < ny {
            (row(&e[0], o + r + nz, nz), row(&e[2], o + r + nz, nz))
        } else if sh.faces.y_hi == Beyond::Wrap {
            (row(&e[0], o, nz), row(&e[2], o, nz))
        } else {
            (&sh.zeros[..nz], &sh.zeros[..nz])
        };
        // Hx -= ch (dEz/dy - dEy/dz)
        h_row_shift::<T, true, GZ>(
            &mut hx[r..r + nz],
            coef(0, j),
            ez_yn,
            ez,
            idy,
            ey,
            idz,
            z_end(sh.faces.z_hi, ey),
        );
        // Hy -= ch (dEx/dz - dEz/dx)
        h_row_shift::<T, false, GZ>(
            &mut hy[r..r + nz],
            coef(1, j),
            ez_xn,
            ez,
            -idx,
            ex,
            idz,
            z_end(sh.faces.z_hi, ex),
        );
        // Hz -= ch (dEy/dx - dEx/dy)
        h_row(
            &mut hz[r..r + nz],
            coef(2, j),
            ey_xn,
            ey,
            idx,
            ex_yn,
            ex,
            -idy,
        );
    }
}

/// Coefficients of one row: one material for the whole row, or a lookup per cell.
#[derive(Clone, Copy)]
pub(super) enum RowCoef<'a, T> {
    /// One (ca, cb) for the whole row.
    Uniform(T, T),
    /// Material ids of the row's cells and the coefficient table.
    PerCell(&'a [u8], &'a [(T, T)]),
}

impl<T: Copy> RowCoef<'_, T> {
    /// (ca, cb) of cell k of the row.
    #[inline(always)]
    pub fn at(&self, k: usize) -> (T, T) {
        match *self {
            RowCoef::Uniform(ca, cb) => (ca, cb),
            RowCoef::PerCell(ids, table) => table[ids[k] as usize],
        }
    }
}

/// `out[k] = ca out[k] + cb ((a1[k] - a0[k]) sa + (b[k] - b[k-1]) sb[k])`, `b_start` standing
/// for b[-1], sb[k] = `inv[k]` (1/dual along z at node k), negated when `NEG` (see
/// [`h_row_shift`]).
#[allow(clippy::too_many_arguments)] // one argument per operand of the curl equation
#[inline(always)]
fn e_row_shift<T: Real, const NEG: bool, const GRADED: bool>(
    out: &mut [T],
    rc: RowCoef<T>,
    a1: &[T],
    a0: &[T],
    sa: T,
    b: &[T],
    inv: &[T],
    b_start: T,
) {
    let sgn = |v: T| if NEG { -v } else { v };
    let curl0 = (a1[0] - a0[0]) * sa + (b[0] - b_start) * sgn(inv[0]);
    let n = out.len();
    // The loops over cells 1.. of the row, with the z steps from the iterator `$z`.
    macro_rules! rows {
        ($z:expr) => {{
            match rc {
                RowCoef::Uniform(ca, cb) => {
                    out[0] = ca * out[0] + cb * curl0;
                    for (((((o, &x1), &x0), &y1), &y0), s) in out[1..]
                        .iter_mut()
                        .zip(&a1[1..])
                        .zip(&a0[1..])
                        .zip(&b[1..])
                        .zip(&b[..n - 1])
                        .zip($z)
                    {
                        *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * s);
                    }
                }
                RowCoef::PerCell(ids, table) => {
                    let (ca, cb) = table[ids[0] as usize];
                    out[0] = ca * out[0] + cb * curl0;
                    for ((((((o, &x1), &x0), &y1), &y0), s), &id) in out[1..]
                        .iter_mut()
                        .zip(&a1[1..])
                        .zip(&a0[1..])
                        .zip(&b[1..])
                        .zip(&b[..n - 1])
                        .zip($z)
                        .zip(&ids[1..])
                    {
                        let (ca, cb) = table[id as usize];
                        *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * s);
                    }
                }
            }
        }};
    }
    // A uniform z axis repeats its one step, a graded one reads each node's (see
    // h_row_shift).
    if GRADED {
        rows!(inv[1..n].iter().map(|&v| sgn(v)))
    } else {
        rows!(std::iter::repeat(sgn(inv[0])))
    }
}

/// `out[k] = ca out[k] + cb ((a1[k] - a0[k]) sa + (b1[k] - b0[k]) sb)`.
#[allow(clippy::too_many_arguments)] // one argument per operand of the curl equation
#[inline(always)]
fn e_row<T: Real>(
    out: &mut [T],
    rc: RowCoef<T>,
    a1: &[T],
    a0: &[T],
    sa: T,
    b1: &[T],
    b0: &[T],
    sb: T,
) {
    match rc {
        RowCoef::Uniform(ca, cb) => {
            for ((((o, &x1), &x0), &y1), &y0) in out.iter_mut().zip(a1).zip(a0).zip(b1).zip(b0) {
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
        RowCoef::PerCell(ids, table) => {
            for (((((o, &x1), &x0), &y1), &y0), &id) in
                out.iter_mut().zip(a1).zip(a0).zip(b1).zip(b0).zip(ids)
            {
                let (ca, cb) = table[id as usize];
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
    }
}

pub(super) fn z_start<T: Real>(kind: Beyond, row: &[T]) -> T {
    match kind {
        Beyond::Wrap => row[row.len() - 1],
        Beyond::Mirror => -row[0],
        Beyond::Zero => T::ZERO,
    }
}

/// E update of the rows `rows` of one owned plane `p` (global x index `i`); `coef(c, j)` gives
/// the coefficients of row j of component c. The steps are the dual cells: 1/dual x at node i, y at node j,
/// z per node of the row.
#[allow(clippy::too_many_arguments)] // the plane, its three fields and the coefficients
#[inline(always)] // into the ISA variants of the caller (`isa`)
pub(super) fn e_plane<'a, T: Real>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    h: &[Vec<T>; 3],
    rows: Range<usize>,
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    ex: &mut [T],
    ey: &mut [T],
    ez: &mut [T],
) {
    if sh.graded[2] {
        e_plane_on::<T, true>(sh, i, p, h, rows, coef, ex, ey, ez)
    } else {
        e_plane_on::<T, false>(sh, i, p, h, rows, coef, ex, ey, ez)
    }
}

/// [`e_plane`] with the z steps read per cell (`GZ`, a graded z axis) or as one scalar.
#[allow(clippy::too_many_arguments)] // the plane, its three fields and the coefficients
#[inline(always)] // into the ISA variants of the caller (`isa`)
fn e_plane_on<'a, T: Real, const GZ: bool>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    h: &[Vec<T>; 3],
    rows: Range<usize>,
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    ex: &mut [T],
    ey: &mut [T],
    ez: &mut [T],
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let idx = sh.inv_dual[0][i];
    let idz = &sh.inv_dual[2][..nz];
    let o = p * plane;
    let ob = o - plane;
    // Rows below y = 0 for the Mirror case: the negated first rows.
    let mirror = |f: &Vec<T>| -> Vec<T> { f[o..o + nz].iter().map(|&v| -v).collect() };
    let (hx_m, hz_m) = if sh.faces.y_lo == Beyond::Mirror {
        (mirror(&h[0]), mirror(&h[2]))
    } else {
        (Vec::new(), Vec::new())
    };
    for j in rows {
        let idy = sh.inv_dual[1][j];
        let r = j * nz;
        let hx = row(&h[0], o + r, nz);
        let hy = row(&h[1], o + r, nz);
        let hz = row(&h[2], o + r, nz);
        let hy_xb = row(&h[1], ob + r, nz);
        let hz_xb = row(&h[2], ob + r, nz);
        let (hx_yb, hz_yb): (&[T], &[T]) = if j > 0 {
            (row(&h[0], o + r - nz, nz), row(&h[2], o + r - nz, nz))
        } else {
            match sh.faces.y_lo {
                Beyond::Wrap => (
                    row(&h[0], o + (ny - 1) * nz, nz),
                    row(&h[2], o + (ny - 1) * nz, nz),
                ),
                Beyond::Mirror => (&hx_m, &hz_m),
                Beyond::Zero => (&sh.zeros[..nz], &sh.zeros[..nz]),
            }
        };
        // Ex = ca Ex + cb (dHz/dy - dHy/dz)
        e_row_shift::<T, true, GZ>(
            &mut ex[r..r + nz],
            coef(0, j),
            hz,
            hz_yb,
            idy,
            hy,
            idz,
            z_start(sh.faces.z_lo, hy),
        );
        // Ey = ca Ey + cb (dHx/dz - dHz/dx)
        e_row_shift::<T, false, GZ>(
            &mut ey[r..r + nz],
            coef(1, j),
            hz,
            hz_xb,
            -idx,
            hx,
            idz,
            z_start(sh.faces.z_lo, hx),
        );
        // Ez = ca Ez + cb (dHy/dx - dHx/dy)
        e_row(
            &mut ez[r..r + nz],
            coef(2, j),
            hy,
            hy_xb,
            idx,
            hx,
            hx_yb,
            -idy,
        );
    }
}

/// Per-cell coefficients of one plane of a flat grid: the plane's material ids of the three
/// components and the table, or one (1, ch) for all (H without magnetic materials).
pub(super) type FlatCoef<'a, T> = Option<([&'a [u8]; 3], &'a [(T, T)])>;

/// [`h_plane`] for a grid with one cell along z (a 2-D grid in x-y, or 1-D). Each z row is
/// one value there, so the row-by-row loop would spend its time on per-row overhead; here the
/// plane's ny values are contiguous and the loops run along y instead (the last y cell apart,
/// so that the main loop has no branch and vectorises), with exactly the arithmetic of the row
/// functions for a row of one cell, the z differences included (the value beyond the z face
/// is the cell itself when z is periodic, zero otherwise): the fields are bit for bit those of
/// the general path. `ids` gives the H material ids (None: no magnetic material, every cell
/// (1, ch)).
#[inline(always)] // into the ISA variants of the caller (`isa`)
pub(super) fn h_plane_flat<T: Real>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    e: &[Vec<T>; 3],
    ids: FlatCoef<T>,
    h: [&mut [T]; 3],
) {
    match (sh.faces.z_hi == Beyond::Wrap, sh.graded[1]) {
        (true, true) => h_flat::<T, true, true>(sh, i, p, e, ids, h),
        (true, false) => h_flat::<T, true, false>(sh, i, p, e, ids, h),
        (false, true) => h_flat::<T, false, true>(sh, i, p, e, ids, h),
        (false, false) => h_flat::<T, false, false>(sh, i, p, e, ids, h),
    }
}

/// On a graded y axis (`GY`) the y steps are loaded alongside the fields (1/primal of cell
/// j), so the loops stay branch-free and vectorise; a uniform one takes its one step as a
/// scalar (the same value, so the same bits).
#[inline(always)] // into the ISA variants of the caller (`isa`)
fn h_flat<T: Real, const WRAP_Z: bool, const GY: bool>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    e: &[Vec<T>; 3],
    ids: FlatCoef<T>,
    h: [&mut [T]; 3],
) {
    let ny = sh.ny;
    let idx = sh.inv_primal[0][i];
    let sy = &sh.inv_primal[1][..ny];
    // The uniform step as a local scalar, captured by value, so the loops keep it in a
    // register as they did the scalar 1/dy.
    let y0 = sy[0];
    let idy = move |j: usize| if GY { sy[j] } else { y0 };
    let idz = sh.inv_primal[2][0];
    let o = p * ny;
    let on = o + ny;
    let (ex, ey, ez) = (&e[0][o..o + ny], &e[1][o..o + ny], &e[2][o..o + ny]);
    let (ey_xn, ez_xn) = (&e[1][on..on + ny], &e[2][on..on + ny]);
    let [hx, hy, hz] = h;
    // E beyond the z face: the cell itself (periodic) or zero.
    let zb = |v: T| if WRAP_Z { v } else { T::ZERO };
    // E beyond the y face, read by the last cell.
    let (ez_end, ex_end) = match sh.faces.y_hi {
        Beyond::Wrap => (ez[0], ex[0]),
        _ => (T::ZERO, T::ZERO),
    };
    let m = ny - 1;
    // Hx -= cb (dEz/dy - dEy/dz); Hy -= cb (dEx/dz - dEz/dx); Hz -= cb (dEy/dx - dEx/dy)
    let cx = |j: usize, ez_n: T| (ez_n - ez[j]) * idy(j) + (zb(ey[j]) - ey[j]) * (-idz);
    let cy = |j: usize| (ez_xn[j] - ez[j]) * (-idx) + (zb(ex[j]) - ex[j]) * idz;
    let cz = |j: usize, ex_n: T| (ey_xn[j] - ey[j]) * idx + (ex_n - ex[j]) * (-idy(j));
    match ids {
        None => {
            let ch = sh.ch;
            for j in 0..m {
                hx[j] -= ch * cx(j, ez[j + 1]);
                hy[j] -= ch * cy(j);
                hz[j] -= ch * cz(j, ex[j + 1]);
            }
            hx[m] -= ch * cx(m, ez_end);
            hy[m] -= ch * cy(m);
            hz[m] -= ch * cz(m, ex_end);
        }
        Some(([ix, iy, iz], table)) => {
            for j in 0..ny {
                let (ez_n, ex_n) = if j < m {
                    (ez[j + 1], ex[j + 1])
                } else {
                    (ez_end, ex_end)
                };
                let (ca, cb) = table[ix[j] as usize];
                hx[j] = ca * hx[j] - cb * cx(j, ez_n);
                let (ca, cb) = table[iy[j] as usize];
                hy[j] = ca * hy[j] - cb * cy(j);
                let (ca, cb) = table[iz[j] as usize];
                hz[j] = ca * hz[j] - cb * cz(j, ex_n);
            }
        }
    }
}

/// [`e_plane`] for a grid with one cell along z (see [`h_plane_flat`]): H below the z face is
/// the cell itself (periodic), its negation (PMC mirror) or zero; below the y face the wrapped,
/// mirrored or zero value, as in the general path. `ids` are the plane's E material ids.
#[allow(clippy::too_many_arguments)] // the plane, its three fields and the coefficients
#[inline(always)] // into the ISA variants of the caller (`isa`)
pub(super) fn e_plane_flat<T: Real>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    h: &[Vec<T>; 3],
    ids: [&[u8]; 3],
    table: &[(T, T)],
    e: [&mut [T]; 3],
) {
    match (sh.faces.z_lo, sh.graded[1]) {
        (Beyond::Wrap, true) => e_flat::<T, 0, true>(sh, i, p, h, ids, table, e),
        (Beyond::Mirror, true) => e_flat::<T, 1, true>(sh, i, p, h, ids, table, e),
        (Beyond::Zero, true) => e_flat::<T, 2, true>(sh, i, p, h, ids, table, e),
        (Beyond::Wrap, false) => e_flat::<T, 0, false>(sh, i, p, h, ids, table, e),
        (Beyond::Mirror, false) => e_flat::<T, 1, false>(sh, i, p, h, ids, table, e),
        (Beyond::Zero, false) => e_flat::<T, 2, false>(sh, i, p, h, ids, table, e),
    }
}

/// `Z_LO`: 0 wrap, 1 mirror, 2 zero (what lies below the z face). On a graded y axis (`GY`)
/// the y steps (1/dual of node j) are loaded alongside the fields, as in [`h_flat`].
#[allow(clippy::too_many_arguments)] // the plane, its three fields and the coefficients
#[inline(always)] // into the ISA variants of the caller (`isa`)
fn e_flat<T: Real, const Z_LO: u8, const GY: bool>(
    sh: &Shared<T>,
    i: usize,
    p: usize,
    h: &[Vec<T>; 3],
    [ix, iy, iz]: [&[u8]; 3],
    table: &[(T, T)],
    e: [&mut [T]; 3],
) {
    let ny = sh.ny;
    let idx = sh.inv_dual[0][i];
    let sy = &sh.inv_dual[1][..ny];
    // The uniform step as a local scalar, captured by value, so the loops keep it in a
    // register as they did the scalar 1/dy.
    let y0 = sy[0];
    let idy = move |j: usize| if GY { sy[j] } else { y0 };
    let idz = sh.inv_dual[2][0];
    let o = p * ny;
    let ob = o - ny;
    let (hx, hy, hz) = (&h[0][o..o + ny], &h[1][o..o + ny], &h[2][o..o + ny]);
    let (hy_xb, hz_xb) = (&h[1][ob..ob + ny], &h[2][ob..ob + ny]);
    let [ex, ey, ez] = e;
    let zb = |v: T| match Z_LO {
        0 => v,
        1 => -v,
        _ => T::ZERO,
    };
    // H below the y face, read by the first cell.
    let (hz_start, hx_start) = match sh.faces.y_lo {
        Beyond::Wrap => (hz[ny - 1], hx[ny - 1]),
        Beyond::Mirror => (-hz[0], -hx[0]),
        Beyond::Zero => (T::ZERO, T::ZERO),
    };
    // Ex = ca Ex + cb (dHz/dy - dHy/dz); Ey = ca Ey + cb (dHx/dz - dHz/dx);
    // Ez = ca Ez + cb (dHy/dx - dHx/dy)
    let (hy_xb, hz_xb) = (&hy_xb[..ny], &hz_xb[..ny]);
    // The first cell reads H below the y face; the others their y - 1 neighbour.
    let (ca, cb) = table[ix[0] as usize];
    ex[0] = ca * ex[0] + cb * ((hz[0] - hz_start) * idy(0) + (hy[0] - zb(hy[0])) * (-idz));
    let (ca, cb) = table[iz[0] as usize];
    ez[0] = ca * ez[0] + cb * ((hy[0] - hy_xb[0]) * idx + (hx[0] - hx_start) * (-idy(0)));
    // Runs of cells sharing a material take one (ca, cb): the loops over them vectorise.
    runs(&ix[..ny], 1, table, |r, ca, cb| {
        for j in r {
            ex[j] = ca * ex[j] + cb * ((hz[j] - hz[j - 1]) * idy(j) + (hy[j] - zb(hy[j])) * (-idz));
        }
    });
    runs(&iy[..ny], 0, table, |r, ca, cb| {
        for j in r {
            ey[j] = ca * ey[j] + cb * ((hz[j] - hz_xb[j]) * (-idx) + (hx[j] - zb(hx[j])) * idz);
        }
    });
    runs(&iz[..ny], 1, table, |r, ca, cb| {
        for j in r {
            ez[j] = ca * ez[j] + cb * ((hy[j] - hy_xb[j]) * idx + (hx[j] - hx[j - 1]) * (-idy(j)));
        }
    });
}

/// Call `f(range, ca, cb)` for each run of equal ids in `ids[start..]`, with the run's
/// coefficients from `table`.
#[inline(always)]
fn runs<T: Copy>(
    ids: &[u8],
    start: usize,
    table: &[(T, T)],
    mut f: impl FnMut(std::ops::Range<usize>, T, T),
) {
    let mut j = start;
    while j < ids.len() {
        let id = ids[j];
        // Whole chunks of 32 equal ids are checked without an early exit (a vector compare);
        // the chunk where the run ends is searched.
        let mut end = j;
        for chunk in ids[j..].chunks(32) {
            if chunk.iter().fold(true, |all, &v| all & (v == id)) {
                end += chunk.len();
            } else {
                end += chunk.iter().position(|&v| v != id).unwrap_or(chunk.len());
                break;
            }
        }
        let (ca, cb) = table[id as usize];
        f(j..end, ca, cb);
        j = end;
    }
}
