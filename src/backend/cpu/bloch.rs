//! The Bloch pass on the CPU ([`crate::backend::Pass::Bloch`]): the images across the
//! Bloch-periodic faces that the curl read, and the correction their phase makes.
//!
//! The curl reads the neighbour beyond a periodic face as the value at the other end of its
//! own field set (the plain periodic image, `Beyond::Wrap` and the periodic x halo copy). A
//! Bloch image is that value rotated by the phase, which mixes the real and imaginary sets:
//! with (c, s) the rotation of [`crate::operator::Operator::bloch`], the real set's image is
//! c F_re - s F_im and the imaginary set's is s F_re + c F_im beyond a maximum face (s
//! negated below a minimum face). The curl is linear in the image, so adding
//! `coefficient * (image - plain image) / step` to each cell next to the face gives the
//! update with the Bloch image, while the curl kernels stay those of a periodic cell.
//!
//! The images are listed in one order, which [`Images`] walks for reading and correcting
//! alike: per Bloch axis x, y, z; for x the one halo plane of the first or last slab
//! (two components); for y and z every slab's owned planes in order, two components each,
//! the row (y) or the column of cells (z) next to the face.

use super::{CpuBackend, Shared, Slab};
use crate::backend::Half;
use crate::real::Real;

/// One image: where the curl read it and which cell it corrects, in one slab.
#[derive(Clone, Copy)]
struct Image {
    /// The slab.
    slab: usize,
    /// Component index (0..3) of the other field (the image's field).
    source: usize,
    /// Offset of the image value in that field's slab array (halos included).
    at: usize,
    /// Component index (0..3) of the corrected cell in this half step's field.
    target: usize,
    /// Offset of the corrected cell in its field's slab array (halos included).
    cell: usize,
    /// +1 where the correction is added to the cell, -1 where it is subtracted.
    sign: f64,
    /// Axis of the face.
    axis: usize,
}

/// The images of one half step, in the order of the module doc.
fn images<T: Real>(sh: &Shared<T>, slabs: &[Slab<T>], half: Half) -> Vec<Image> {
    let (ny, nz) = (sh.ny, sh.nz);
    let plane = ny * nz;
    let nx = sh.shape[0];
    let mut out = Vec::new();
    // (image component, corrected component, sign) per axis: the image's component, the
    // component whose curl reads it, and the sign with which `cb (image - plain) step` is
    // added (from the curl equations in `update.rs`). For H, beyond the maximum face:
    // x: Hy += (Ez), Hz -= (Ey); y: Hx -= (Ez), Hz += (Ex); z: Hx += (Ey), Hy -= (Ex).
    // For E, below the minimum face, the same pattern with H:
    // x: Ey += (Hz), Ez -= (Hy); y: Ex -= (Hz), Ez += (Hx); z: Ex += (Hy), Ey -= (Hx).
    let terms: [[(usize, usize, f64); 2]; 3] = [
        [(2, 1, 1.0), (1, 2, -1.0)],
        [(2, 0, -1.0), (0, 2, 1.0)],
        [(1, 0, 1.0), (0, 1, -1.0)],
    ];
    let high = half == Half::H;
    for axis in (0..3).filter(|&a| sh.bloch[a].is_some()) {
        for (slab, s) in slabs.iter().enumerate() {
            let n = s.range.len();
            let mut push = |source: usize, at: usize, target: usize, cell: usize, sign: f64| {
                out.push(Image {
                    slab,
                    source,
                    at,
                    target,
                    cell,
                    sign,
                    axis,
                })
            };
            match axis {
                0 => {
                    // The halo plane beyond the face and the owned plane next to it.
                    let (holds, halo, next) = if high {
                        (s.range.x1 == nx, n + 1, n)
                    } else {
                        (s.range.x0 == 0, 0, 1)
                    };
                    if !holds {
                        continue;
                    }
                    for &(src, tgt, sign) in &terms[0] {
                        for v in 0..plane {
                            push(src, halo * plane + v, tgt, next * plane + v, sign);
                        }
                    }
                }
                1 => {
                    let (image_row, row) = if high { (0, ny - 1) } else { (ny - 1, 0) };
                    for p in 1..=n {
                        for &(src, tgt, sign) in &terms[1] {
                            for k in 0..nz {
                                let at = p * plane + image_row * nz + k;
                                push(src, at, tgt, p * plane + row * nz + k, sign);
                            }
                        }
                    }
                }
                _ => {
                    let (image_k, k) = if high { (0, nz - 1) } else { (nz - 1, 0) };
                    for p in 1..=n {
                        for &(src, tgt, sign) in &terms[2] {
                            for j in 0..ny {
                                let row = p * plane + j * nz;
                                push(src, row + image_k, tgt, row + k, sign);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

impl<T: Real> CpuBackend<T> {
    /// [`crate::backend::Backend::bloch_images`] on the CPU.
    pub(super) fn read_bloch_images(&self, half: Half, out: &mut Vec<T>) {
        out.extend(images(&self.shared, &self.slabs, half).iter().map(|im| {
            let s = &self.slabs[im.slab];
            let other = if half == Half::H { &s.e } else { &s.h };
            other[im.source][im.at]
        }));
    }

    /// [`crate::backend::Backend::bloch_correct`] on the CPU: each cell next to a Bloch face
    /// gets `cb (image - plain image) step` with the sign its curl term gives the image.
    pub(super) fn correct_bloch(&mut self, half: Half, own: &[T], other: &[T], imaginary: bool) {
        let sh = &self.shared;
        let list = images(sh, &self.slabs, half);
        debug_assert_eq!(list.len(), own.len());
        let plane = sh.ny * sh.nz;
        for ((im, &mine), &theirs) in list.iter().zip(own).zip(other) {
            let (c, s) = sh.bloch[im.axis].expect("a Bloch axis");
            // The image's rotation: +s beyond a maximum face for the imaginary set, -s for the
            // real one; the other way round below a minimum face.
            let flip = (half == Half::E) == imaginary;
            let s = if flip { -s } else { s };
            let delta = (c - T::ONE) * mine + s * theirs;
            let slab = &mut self.slabs[im.slab];
            let owned = im.cell - plane;
            let (cb, step) = match half {
                Half::H => {
                    let cb = match &sh.hcoef {
                        None => sh.ch,
                        Some(table) => table[slab.hmat[im.target][owned] as usize].1,
                    };
                    // The primal step of the last cell.
                    (cb, sh.inv_primal[im.axis][sh.shape[im.axis] - 1])
                }
                // The dual step of the first node, which wraps on a periodic axis.
                Half::E => (
                    sh.coef[slab.mat[im.target][owned] as usize].1,
                    sh.inv_dual[im.axis][0],
                ),
            };
            let term = cb * delta * step;
            let field = if half == Half::H {
                &mut slab.h
            } else {
                &mut slab.e
            };
            let v = &mut field[im.target][im.cell];
            if im.sign > 0.0 {
                *v += term;
            } else {
                *v -= term;
            }
        }
    }
}
