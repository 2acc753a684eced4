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
use crate::operator::CpmlAxis;
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
    /// Element i of the z run in the layer of its `steps[i]`.
    Each(&'a ZRun<T>),
}

/// Elements per block of a z run: one AVX2 vector of f32 (two of f64).
const BLOCK: usize = 8;

/// The z-layer run at one end of a row: the same cells and factors in every row, so they are
/// laid out once per engine. A run is short (9 or 10 cells for the usual 10-cell layer), and
/// as a plain loop it cost more in set-up (overlap checks, a vector prologue, a scalar
/// remainder, the factors gathered from (b, c, 1/kappa - 1, inv) records) than in arithmetic:
/// with AVX2 the z layers took 85% of the CPML's instructions on a 128^3 cube. So a run of at
/// least [`BLOCK`] cells goes in fixed blocks whose factors are stored here lane by lane, and
/// its last block is aligned to the run's end (overlapping the one before it when the length
/// is not a multiple of the block; see [`run_blocks`]).
pub(super) struct ZRun<T> {
    /// First cell along z.
    k0: usize,
    /// One past the last cell computed as a run.
    k1: usize,
    /// Layer index of `k0` (the run's psi start within a row's layers).
    l0: usize,
    /// (b, c, 1/kappa - 1, inv) of each cell, for a run shorter than a block.
    steps: Vec<[T; 4]>,
    /// Each block's first cell (from `k0`) and its factors, one array per factor, one lane per
    /// cell; empty for a run shorter than a block.
    blocks: Vec<(usize, [[T; BLOCK]; 4])>,
}

impl<T: Real> ZRun<T> {
    /// The run of cells [k0, k1) of a z layer whose factors per layer index are `factors`.
    fn new(axis: &CpmlAxis<T>, factors: &[[T; 4]], k0: usize, k1: usize) -> Self {
        let l0 = axis.layer_of(k0);
        let steps = factors[l0..l0 + (k1 - k0)].to_vec();
        let n = steps.len();
        let mut starts = Vec::new();
        if n >= BLOCK {
            starts.extend((0..n - BLOCK).step_by(BLOCK));
            starts.push(n - BLOCK);
        }
        let blocks = starts
            .into_iter()
            .map(|s| {
                let lanes = |f: usize| std::array::from_fn(|lane| steps[s + lane][f]);
                (s, [lanes(0), lanes(1), lanes(2), lanes(3)])
            })
            .collect();
        ZRun {
            k0,
            k1,
            l0,
            steps,
            blocks,
        }
    }
}

/// The z-layer runs of every row, for E and for H.
pub(super) struct ZRuns<T> {
    /// E: Ex and Ey at the two ends of a row; cell 0 (the outer wall, zeroed) left out.
    e: Vec<ZRun<T>>,
    /// H: Hx and Hy likewise; the last cell of a row, whose E beyond is the wall, left out
    /// ([`h_plane`] does it apart).
    h: Vec<ZRun<T>>,
    /// Whether the last cell of a row lies in a z layer (H's cell left out of `h`).
    h_wall: bool,
}

impl<T: Real> ZRuns<T> {
    /// The runs of the z axis `pz` of a grid with `nz` cells along z.
    pub(super) fn new(pz: &CpmlAxis<T>, nz: usize) -> Self {
        let mut runs = ZRuns {
            e: Vec::new(),
            h: Vec::new(),
            h_wall: false,
        };
        if pz.layers() == 0 {
            return runs;
        }
        for (k0, k1) in [(1.min(pz.lo), pz.lo), (nz - pz.hi, nz)] {
            if k0 < k1 {
                runs.e.push(ZRun::new(pz, &pz.e, k0, k1));
            }
        }
        for (k0, k1) in [(0, pz.lo), (nz - pz.hi, nz)] {
            if k0 >= k1 {
                continue;
            }
            runs.h_wall |= k1 == nz;
            let k1 = if k1 == nz { nz - 1 } else { k1 };
            if k0 < k1 {
                runs.h.push(ZRun::new(pz, &pz.h, k0, k1));
            }
        }
        runs
    }
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
        (RowCoef::Uniform(_, cb), Steps::Each(run)) => {
            term_run::<T, NEG>(out, a1, a0, psi, |_| cb, run)
        }
        (RowCoef::PerCell(ids, table), Steps::One(f)) => {
            let ids = &ids[coef_offset..coef_offset + n];
            term_on::<T, NEG>(out, a1, a0, psi, |i| table[ids[i] as usize].1, |_| f)
        }
        (RowCoef::PerCell(ids, table), Steps::Each(run)) => {
            let ids = &ids[coef_offset..coef_offset + n];
            term_run::<T, NEG>(out, a1, a0, psi, |i| table[ids[i] as usize].1, run)
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

/// [`term_on`] over a z run: in its blocks when it has them, else element by element.
#[inline(always)]
fn term_run<T: Real, const NEG: bool>(
    out: &mut [T],
    a1: &[T],
    a0: &[T],
    psi: &mut [T],
    coef: impl Fn(usize) -> T,
    run: &ZRun<T>,
) {
    if run.blocks.is_empty() {
        term_on::<T, NEG>(out, a1, a0, psi, coef, |i| run.steps[i])
    } else {
        run_blocks::<T, NEG>(out, a1, a0, psi, coef, &run.blocks)
    }
}

/// [`term_on`] over a z run in its `blocks`. The last block ends the run and may overlap the
/// one before it, so it is computed first, from the run's old values, and stored last: an
/// element in the overlap gets the same value from both blocks. Each element sees the same
/// operations in the same order as in [`term_on`], so the bits are the same.
#[inline(always)]
fn run_blocks<T: Real, const NEG: bool>(
    out: &mut [T],
    a1: &[T],
    a0: &[T],
    psi: &mut [T],
    coef: impl Fn(usize) -> T,
    blocks: &[(usize, [[T; BLOCK]; 4])],
) {
    let n = out.len();
    assert!(
        a1.len() == n && a0.len() == n && psi.len() == n,
        "CPML runs of unequal length"
    );
    let store = |out: &mut [T], psi: &mut [T], s: usize, (o, p): ([T; BLOCK], [T; BLOCK])| {
        out[s..s + BLOCK].copy_from_slice(&o);
        psi[s..s + BLOCK].copy_from_slice(&p);
    };
    match blocks {
        // The usual layer of 9 to 16 cells: both blocks computed, then both stored.
        [(s0, f0), (s1, f1)] => {
            let first = block::<T, NEG>(*s0, out, a1, a0, psi, &coef, f0);
            let second = block::<T, NEG>(*s1, out, a1, a0, psi, &coef, f1);
            store(out, psi, *s0, first);
            store(out, psi, *s1, second);
        }
        _ => {
            let Some(((last, last_steps), rest)) = blocks.split_last() else {
                return;
            };
            let tail = block::<T, NEG>(*last, out, a1, a0, psi, &coef, last_steps);
            for (s, steps) in rest {
                let b = block::<T, NEG>(*s, out, a1, a0, psi, &coef, steps);
                store(out, psi, *s, b);
            }
            store(out, psi, *last, tail);
        }
    }
}

/// The new (out, psi) of the [`BLOCK`] elements from `s` of a run, with the block's factors
/// `[b, c, 1/kappa - 1, inv]` lane by lane.
#[inline(always)]
fn block<T: Real, const NEG: bool>(
    s: usize,
    out: &[T],
    a1: &[T],
    a0: &[T],
    psi: &[T],
    coef: &impl Fn(usize) -> T,
    [b, c, k1, inv]: &[[T; BLOCK]; 4],
) -> ([T; BLOCK], [T; BLOCK]) {
    let at = |v: &[T]| -> [T; BLOCK] { v[s..s + BLOCK].try_into().expect("a whole block") };
    let (out, a1, a0, psi) = (at(out), at(a1), at(a0), at(psi));
    let coef: [T; BLOCK] = std::array::from_fn(|l| coef(s + l));
    let (mut o, mut p) = ([T::ZERO; BLOCK], [T::ZERO; BLOCK]);
    for l in 0..BLOCK {
        let d = (a1[l] - a0[l]) * inv[l];
        let q = b[l] * psi[l] + c[l] * d;
        p[l] = q;
        let v = coef[l] * (k1[l] * d + q);
        o[l] = if NEG { out[l] - v } else { out[l] + v };
    }
    (o, p)
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
    for j in rows.clone() {
        let r = j * nz;
        let (hx, hy) = (row(&h[0], o + r, nz), row(&h[1], o + r, nz));
        for run in &sh.zruns.e {
            let (k0, k1) = (run.k0, run.k1);
            let ps = j * lz + run.l0..j * lz + run.l0 + (k1 - k0);
            let bck = Steps::Each(run);
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
        for run in &sh.zruns.h {
            // The runs stop before the last cell of the grid, which reads E beyond the wall
            // (zero): it is handled apart below.
            let (k0, k1v) = (run.k0, run.k1);
            let ps = j * lz + run.l0..j * lz + run.l0 + (k1v - k0);
            let bck = Steps::Each(run);
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
        }
        if sh.zruns.h_wall {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A z axis of `nz` cells with `lo` and `hi` layer cells, whose factors record their own
    /// layer index (so a block's lanes show which cells they were taken from).
    fn axis(nz: usize, lo: usize, hi: usize) -> CpmlAxis<f64> {
        let f = |l: usize| [l as f64, 0.5, 0.25, 1.0];
        CpmlAxis {
            lo,
            hi,
            n: nz,
            e: (0..lo + hi).map(f).collect(),
            h: (0..lo + hi).map(|l| f(l + 100)).collect(),
        }
    }

    #[test]
    fn z_runs_cover_each_layer_once_in_blocks_within_the_run() {
        for (lo, hi) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (5, 5),
            (8, 9),
            (10, 10),
            (10, 17),
            (33, 2),
        ] {
            let nz = lo + hi + 12;
            let runs = ZRuns::new(&axis(nz, lo, hi), nz);
            // E skips the wall cell 0; H skips the last cell, done apart when it is in a layer.
            let want_e: Vec<usize> = (1..lo).chain(nz - hi..nz).collect();
            let want_h: Vec<usize> = (0..lo).chain(nz - hi..nz.saturating_sub(1)).collect();
            assert_eq!(runs.h_wall, hi > 0, "lo {lo} hi {hi}");
            for (runs, want, base) in [(&runs.e, want_e, 0.0), (&runs.h, want_h, 100.0)] {
                let cells: Vec<usize> = runs.iter().flat_map(|r| r.k0..r.k1).collect();
                assert_eq!(cells, want, "lo {lo} hi {hi}");
                for r in runs {
                    let n = r.k1 - r.k0;
                    assert_eq!(
                        r.l0,
                        if r.k0 < lo {
                            r.k0
                        } else {
                            lo + r.k0 - (nz - hi)
                        }
                    );
                    assert_eq!(r.steps.len(), n);
                    // Blocks only for a run of a whole block or more; together they cover it,
                    // each inside it, the last ending at its end.
                    assert_eq!(r.blocks.is_empty(), n < BLOCK);
                    let mut covered = vec![false; n];
                    for (s, [b, c, k1, inv]) in &r.blocks {
                        assert!(s + BLOCK <= n);
                        for lane in 0..BLOCK {
                            covered[s + lane] = true;
                            let l = r.l0 + s + lane;
                            assert_eq!(b[lane], base + l as f64);
                            assert_eq!([c[lane], k1[lane], inv[lane]], [0.5, 0.25, 1.0]);
                        }
                    }
                    if let Some((s, _)) = r.blocks.last() {
                        assert_eq!(s + BLOCK, n);
                        assert!(covered.iter().all(|&c| c));
                        // Blocks overlap only when the length is not a multiple of a block.
                        assert_eq!(r.blocks.len(), n.div_ceil(BLOCK));
                    }
                }
            }
        }
    }
}
