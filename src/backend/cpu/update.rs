//! The main Yee update of one x-plane, row by row, written so the z loop vectorises.
//!
//! Each row function is one line of the curl equations over a contiguous z row; values
//! beyond a y or z face come from the boundary (zero, wrapped or mirrored).

use super::Shared;
use crate::operator::Beyond;
use crate::real::Real;

/// The `nz` values of `field` from `start`: one z row.
pub(super) fn row<T: Real>(field: &[T], start: usize, nz: usize) -> &[T] {
    &field[start..start + nz]
}

/// `out[k] = ca out[k] - cb ((a1[k] - a0[k]) sa + (b[k+1] - b[k]) sb)`, with `b_end` standing
/// for b[nz] (the value beyond the z maximum face). A row with ca = 1 (no magnetic loss, every
/// row of a non-magnetic run) takes `out[k] -= cb (...)`, which is the same value: 1 x = x.
#[allow(clippy::too_many_arguments)] // one argument per operand of the curl equation
#[inline(always)]
fn h_row_shift<T: Real>(
    out: &mut [T],
    rc: RowCoef<T>,
    a1: &[T],
    a0: &[T],
    sa: T,
    b: &[T],
    sb: T,
    b_end: T,
) {
    let m = out.len() - 1;
    let (main, last) = out.split_at_mut(m);
    let rows = main
        .iter_mut()
        .zip(&a1[..m])
        .zip(&a0[..m])
        .zip(&b[1..])
        .zip(&b[..m]);
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
    let (ca, cb) = rc.at(m);
    last[0] = ca * last[0] - cb * ((a1[m] - a0[m]) * sa + (b_end - b[m]) * sb);
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

/// H update of one owned plane `p`; `coef(c, j)` gives the coefficients of row j of H
/// component c.
pub(super) fn h_plane<'a, T: Real>(
    sh: &Shared<T>,
    p: usize,
    e: &[Vec<T>; 3],
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    hx: &mut [T],
    hy: &mut [T],
    hz: &mut [T],
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let [idx, idy, idz] = sh.inv;
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
        } else if sh.faces.y_hi == Beyond::Wrap {
            (row(&e[0], o, nz), row(&e[2], o, nz))
        } else {
            (&sh.zeros[..nz], &sh.zeros[..nz])
        };
        // Hx -= ch (dEz/dy - dEy/dz)
        h_row_shift(
            &mut hx[r..r + nz],
            coef(0, j),
            ez_yn,
            ez,
            idy,
            ey,
            -idz,
            z_end(sh.faces.z_hi, ey),
        );
        // Hy -= ch (dEx/dz - dEz/dx)
        h_row_shift(
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

/// `out[k] = ca out[k] + cb ((a1[k] - a0[k]) sa + (b[k] - b[k-1]) sb)`, `b_start` standing for b[-1].
#[allow(clippy::too_many_arguments)] // one argument per operand of the curl equation
#[inline(always)]
fn e_row_shift<T: Real>(
    out: &mut [T],
    rc: RowCoef<T>,
    a1: &[T],
    a0: &[T],
    sa: T,
    b: &[T],
    sb: T,
    b_start: T,
) {
    let curl0 = (a1[0] - a0[0]) * sa + (b[0] - b_start) * sb;
    let n = out.len();
    match rc {
        RowCoef::Uniform(ca, cb) => {
            out[0] = ca * out[0] + cb * curl0;
            for ((((o, &x1), &x0), &y1), &y0) in out[1..]
                .iter_mut()
                .zip(&a1[1..])
                .zip(&a0[1..])
                .zip(&b[1..])
                .zip(&b[..n - 1])
            {
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
        RowCoef::PerCell(ids, table) => {
            let (ca, cb) = table[ids[0] as usize];
            out[0] = ca * out[0] + cb * curl0;
            for (((((o, &x1), &x0), &y1), &y0), &id) in out[1..]
                .iter_mut()
                .zip(&a1[1..])
                .zip(&a0[1..])
                .zip(&b[1..])
                .zip(&b[..n - 1])
                .zip(&ids[1..])
            {
                let (ca, cb) = table[id as usize];
                *o = ca * *o + cb * ((x1 - x0) * sa + (y1 - y0) * sb);
            }
        }
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

/// E update of one owned plane `p`; `coef(c, j)` gives the coefficients of row j of component c.
pub(super) fn e_plane<'a, T: Real>(
    sh: &Shared<T>,
    p: usize,
    h: &[Vec<T>; 3],
    coef: &impl Fn(usize, usize) -> RowCoef<'a, T>,
    ex: &mut [T],
    ey: &mut [T],
    ez: &mut [T],
) {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let [idx, idy, idz] = sh.inv;
    let o = p * plane;
    let ob = o - plane;
    // Rows below y = 0 for the Mirror case: the negated first rows.
    let mirror = |f: &Vec<T>| -> Vec<T> { f[o..o + nz].iter().map(|&v| -v).collect() };
    let (hx_m, hz_m) = if sh.faces.y_lo == Beyond::Mirror {
        (mirror(&h[0]), mirror(&h[2]))
    } else {
        (Vec::new(), Vec::new())
    };
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
        e_row_shift(
            &mut ex[r..r + nz],
            coef(0, j),
            hz,
            hz_yb,
            idy,
            hy,
            -idz,
            z_start(sh.faces.z_lo, hy),
        );
        // Ey = ca Ey + cb (dHx/dz - dHz/dx)
        e_row_shift(
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
