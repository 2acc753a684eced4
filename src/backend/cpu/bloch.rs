//! The Bloch pass on the CPU ([`crate::backend::Pass::Bloch`]): the images across the
//! Bloch-periodic faces that the curl read, and the correction their phase makes.
//!
//! The curl reads the neighbour beyond a periodic face as the value at the other end of its
//! own field set (the plain periodic image, `Beyond::Wrap` and the periodic x halo copy). A
//! Bloch image is that value rotated by the phase, which mixes the real and imaginary sets:
//! with (c, s) the rotation of [`crate::operator::Operator::bloch`], the real set's image is
//! c F_re - s F_im and the imaginary set's is s F_re + c F_im beyond a maximum face (s
//! negated below a minimum face). The curl is linear in the image, so adding
//! `cb (image - plain image) step` to each cell next to the face gives the update with the
//! Bloch image, while the curl kernels stay those of a periodic cell.
//!
//! The images are listed in one order, which [`walk`] follows for reading and correcting
//! alike: per slab, per Bloch axis x, y, z, per image component of [`TERMS`]; for x the one
//! halo plane of a slab at the face; for y and z the slab's owned planes in order, the row (y)
//! or the column of cells (z) next to the face. Each block is a run of values: a whole plane,
//! a z row, or one cell per row. The slabs' runs are independent, so both parts run one slab
//! per thread.

use super::{CpuBackend, Shared, Slab};
use crate::backend::Half;
use crate::decomp::SlabRange;
use crate::real::Real;
use rayon::prelude::*;
use std::ops::Range;

/// Per axis, (image component, corrected component, sign): the component the curl read
/// across the face, the one whose curl reads it, and the sign with which
/// `cb (image - plain) step` is added (from the curl equations in `update.rs`). For H,
/// beyond the maximum face: x: Hy += (Ez), Hz -= (Ey); y: Hx -= (Ez), Hz += (Ex); z: Hx +=
/// (Ey), Hy -= (Ex). For E, below the minimum face, the same pattern with H: x: Ey += (Hz),
/// Ez -= (Hy); y: Ex -= (Hz), Ez += (Hx); z: Ex += (Hy), Ey -= (Hx).
const TERMS: [[(usize, usize, bool); 2]; 3] = [
    [(2, 1, true), (1, 2, false)],
    [(2, 0, false), (0, 2, true)],
    [(1, 0, true), (0, 1, false)],
];

/// One block of images of a slab: `len` values of image component `source` from offset `at`
/// with stride `stride`, correcting component `target` from offset `cell` with the same
/// stride (offsets in the slab's arrays, halos included).
struct Block {
    source: usize,
    target: usize,
    at: usize,
    cell: usize,
    len: usize,
    stride: usize,
    add: bool,
    axis: usize,
}

/// The block of image term `(source, target, add)` of Bloch axis `axis` on local plane `p`
/// (1..=n) of the slab that owns `range`, over rows `rows`, if that plane has one: for x
/// the plane next to the face (the halo plane beyond it is the image), for y the row next to
/// the face, for z the cell next to it in each row.
#[allow(clippy::too_many_arguments)] // the term, the plane and its rows
fn plane_block<T>(
    sh: &Shared<T>,
    range: SlabRange,
    half: Half,
    axis: usize,
    (source, target, add): (usize, usize, bool),
    p: usize,
    rows: &Range<usize>,
) -> Option<Block> {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let high = half == Half::H;
    let n = range.len();
    let o = p * plane;
    let block = |at: usize, cell: usize, len: usize, stride: usize| Block {
        source,
        target,
        at,
        cell,
        len,
        stride,
        add,
        axis,
    };
    let first = rows.start * nz;
    match axis {
        0 => {
            // The halo plane beyond the face and the owned plane next to it.
            let (holds, halo, next) = if high {
                (range.x1 == sh.shape[0], n + 1, n)
            } else {
                (range.x0 == 0, 0, 1)
            };
            (holds && p == next).then(|| block(halo * plane + first, o + first, rows.len() * nz, 1))
        }
        1 => {
            let (image_row, row) = if high { (0, ny - 1) } else { (ny - 1, 0) };
            rows.contains(&row)
                .then(|| block(o + image_row * nz, o + row * nz, nz, 1))
        }
        _ => {
            let (image_k, k) = if high { (0, nz - 1) } else { (nz - 1, 0) };
            Some(block(o + first + image_k, o + first + k, rows.len(), nz))
        }
    }
}

/// Visit every block of images of half step `half` in the slab that owns `range`, in the
/// module's order.
fn walk<T: Real>(sh: &Shared<T>, range: SlabRange, half: Half, mut visit: impl FnMut(Block)) {
    let all_rows = 0..sh.ny;
    for axis in (0..3).filter(|&a| sh.bloch[a].is_some()) {
        for &term in &TERMS[axis] {
            for p in 1..=range.len() {
                if let Some(b) = plane_block(sh, range, half, axis, term, p, &all_rows) {
                    visit(b);
                }
            }
        }
    }
}

/// Visit the blocks of half step `half` on rows `rows` of local plane `p` of the slab that
/// owns `range`, axis by axis (x, y, z), as [`walk`] orders the corrections of one cell.
fn walk_plane<T: Real>(
    sh: &Shared<T>,
    range: SlabRange,
    half: Half,
    p: usize,
    rows: &Range<usize>,
    mut visit: impl FnMut(Block),
) {
    for axis in (0..3).filter(|&a| sh.bloch[a].is_some()) {
        for &term in &TERMS[axis] {
            if let Some(b) = plane_block(sh, range, half, axis, term, p, rows) {
                visit(b);
            }
        }
    }
}

/// The images of half step `half` in the slab that owns `range`.
fn slab_images<T: Real>(sh: &Shared<T>, range: SlabRange, half: Half) -> usize {
    let mut n = 0;
    walk(sh, range, half, |b| n += b.len);
    n
}

/// Append slab `s`'s images of half step `half` to `out`.
fn read_slab<T: Real>(sh: &Shared<T>, s: &Slab<T>, half: Half, out: &mut Vec<T>) {
    let field = if half == Half::H { &s.e } else { &s.h };
    walk(sh, s.range, half, |b| {
        let values = &field[b.source][b.at..];
        out.extend(values.iter().step_by(b.stride).take(b.len));
    });
}

impl<T: Real> CpuBackend<T> {
    /// [`crate::backend::Backend::bloch_images`] on the CPU.
    pub(super) fn read_bloch_images(&self, half: Half, out: &mut Vec<T>) {
        let sh = &self.shared;
        if let [s] = &self.slabs[..] {
            // One slab (a small cell): no threads to share it with.
            return read_slab(sh, s, half, out);
        }
        let parts: Vec<Vec<T>> = self
            .slabs
            .par_iter()
            .map(|s| {
                let mut out = Vec::with_capacity(slab_images(sh, s.range, half));
                read_slab(sh, s, half, &mut out);
                out
            })
            .collect();
        for p in parts {
            out.extend_from_slice(&p);
        }
    }

    /// [`crate::backend::Backend::bloch_correct`] on the CPU: each cell next to a Bloch face
    /// gets `cb (image - plain image) step` with the sign its curl term gives the image.
    pub(super) fn correct_bloch(&mut self, half: Half, own: &[T], other: &[T], imaginary: bool) {
        let sh = &self.shared;
        // Each slab's share of the images, in slab order.
        let mut shares = Vec::with_capacity(self.slabs.len());
        let mut start = 0;
        for s in &self.slabs {
            let n = slab_images(sh, s.range, half);
            shares.push((&own[start..start + n], &other[start..start + n]));
            start += n;
        }
        if let [slab] = &mut self.slabs[..] {
            let (own, other) = shares[0];
            return correct_slab(sh, slab, half, own, other, imaginary);
        }
        self.slabs
            .par_iter_mut()
            .zip(shares)
            .for_each(|(slab, (own, other))| correct_slab(sh, slab, half, own, other, imaginary));
    }
}

/// [`CpuBackend::correct_bloch`] on one slab, with its images `own` and `other`.
fn correct_slab<T: Real>(
    sh: &Shared<T>,
    slab: &mut Slab<T>,
    half: Half,
    own: &[T],
    other: &[T],
    imaginary: bool,
) {
    let mut next = 0;
    walk(sh, slab.range, half, |b| {
        let images = (&own[next..next + b.len], &other[next..next + b.len], 1);
        next += b.len;
        let target = Target::of(slab, half, b.target);
        Rotation::new(sh, &b, half, imaginary).apply(sh, half, target, images);
    });
}

/// The Bloch pass on rows `rows` of local plane `p` of a Bloch pair's two slabs `re` and `im`
/// (the same planes of the real and the imaginary set), as the fused sweep of a pair runs it
/// between the passes before and after it ([`crate::backend::pass`]). The images are read in
/// place, so this is [`CpuBackend::correct_bloch`] on that plane's cells, the same bits: in
/// the H half step the images are E values and in the E half step H values, which the half
/// step does not change, and each cell takes its axes' corrections in the same order.
pub(super) fn correct_plane<T: Real>(
    sh: &Shared<T>,
    re: &mut Slab<T>,
    im: &mut Slab<T>,
    half: Half,
    p: usize,
    rows: &Range<usize>,
) {
    walk_plane(sh, re.range, half, p, rows, |b| {
        correct_in_place(sh, re, im, half, &b, false);
        correct_in_place(sh, im, re, half, &b, true);
    });
}

/// One block's correction of `slab`, its own images read from its own field and the other
/// set's from `other`'s.
fn correct_in_place<T: Real>(
    sh: &Shared<T>,
    slab: &mut Slab<T>,
    other: &Slab<T>,
    half: Half,
    b: &Block,
    imaginary: bool,
) {
    let rotate = Rotation::new(sh, b, half, imaginary);
    let Slab {
        e, h, mat, hmat, ..
    } = slab;
    let (field, ids, own, theirs) = match half {
        Half::H => (
            &mut h[b.target],
            &hmat[b.target],
            &e[b.source],
            &other.e[b.source],
        ),
        Half::E => (
            &mut e[b.target],
            &mat[b.target],
            &h[b.source],
            &other.h[b.source],
        ),
    };
    let images = (&own[b.at..], &theirs[b.at..], b.stride);
    rotate.apply(sh, half, Target { field, ids }, images);
}

/// The cells a correction adds to: a field component and its material ids.
struct Target<'a, T> {
    field: &'a mut [T],
    ids: &'a [u8],
}

impl<'a, T> Target<'a, T> {
    /// Component `c` of the field that half step `half` updates in `slab`.
    fn of(slab: &'a mut Slab<T>, half: Half, c: usize) -> Self {
        match half {
            Half::H => Target {
                field: &mut slab.h[c],
                ids: &slab.hmat[c],
            },
            Half::E => Target {
                field: &mut slab.e[c],
                ids: &slab.mat[c],
            },
        }
    }
}

/// One block's correction: `cb (cm1 own + s other) step`, times `sign`, added to the cells
/// from `cell` every `stride` (offsets with the left halo `halo` values ahead of the owned
/// cells, whose material ids `cb` reads).
struct Rotation<T> {
    cm1: T,
    s: T,
    step: T,
    sign: T,
    cell: usize,
    len: usize,
    stride: usize,
    halo: usize,
}

impl<T: Real> Rotation<T> {
    /// The rotation of block `b` in half step `half` of the real set or the `imaginary` one.
    fn new(sh: &Shared<T>, b: &Block, half: Half, imaginary: bool) -> Self {
        let (c, s) = sh.bloch[b.axis].expect("a Bloch axis");
        // The image's rotation: -s beyond a maximum face for the real set, +s for the
        // imaginary one; the other way round below a minimum face.
        let s = if (half == Half::E) == imaginary {
            -s
        } else {
            s
        };
        // The step across the face: the primal step of the last cell (H) or the dual step of
        // the first node, which wraps on a periodic axis (E).
        let step = match half {
            Half::H => sh.inv_primal[b.axis][sh.shape[b.axis] - 1],
            Half::E => sh.inv_dual[b.axis][0],
        };
        Rotation {
            cm1: c - T::ONE,
            s,
            step,
            // x - t is x + (-t) exactly, so the sign is a factor.
            sign: if b.add { T::ONE } else { -T::ONE },
            cell: b.cell,
            len: b.len,
            stride: b.stride,
            halo: sh.ny * sh.nz,
        }
    }

    /// Add the correction to `target` from the images `(own, other, every)`: the block's
    /// i-th image is value `i * every` of each.
    fn apply(&self, sh: &Shared<T>, half: Half, target: Target<T>, images: (&[T], &[T], usize)) {
        let Target { field, ids } = target;
        match (half, &sh.hcoef) {
            (Half::H, None) => self.add(field, images, |_| sh.ch),
            (Half::H, Some(table)) => self.add(field, images, |o| table[ids[o] as usize].1),
            (Half::E, _) => self.add(field, images, |o| sh.coef[ids[o] as usize].1),
        }
    }

    #[inline(always)]
    fn add(
        &self,
        field: &mut [T],
        (own, other, every): (&[T], &[T], usize),
        cb: impl Fn(usize) -> T,
    ) {
        if every == 1 && self.stride == 1 {
            // A run of cells (x and y faces): slices the compiler vectorises.
            let n = self.len;
            let cells = &mut field[self.cell..self.cell + n];
            let first = self.cell - self.halo;
            for (i, (f, (&m, &t))) in cells
                .iter_mut()
                .zip(own[..n].iter().zip(&other[..n]))
                .enumerate()
            {
                let term = cb(first + i) * (self.cm1 * m + self.s * t) * self.step;
                *f += self.sign * term;
            }
            return;
        }
        for i in 0..self.len {
            let (m, t) = (own[i * every], other[i * every]);
            let cell = self.cell + i * self.stride;
            let term = cb(cell - self.halo) * (self.cm1 * m + self.s * t) * self.step;
            field[cell] += self.sign * term;
        }
    }
}
