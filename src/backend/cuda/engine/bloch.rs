//! The Bloch pass on the CUDA engine ([`crate::backend::Pass::Bloch`], kernels/bloch.cu): each
//! engine of a Bloch pair gathers its images across the Bloch faces on its GPU and hands them
//! to the pair on the host; the pair gives each engine the other set's, which it uploads beside
//! its own, and the correction runs as a pass of the half step, on the boundary planes first
//! and on the interior with the deferred passes, as every other pass does.
//!
//! Both engines of a pair are CUDA engines of one model on one split, so the images' order
//! (per slab, per Bloch axis x, y, z, the axis's two terms after each other; kernels/bloch.cu)
//! is the same in both and need not be the CPU backend's.

use super::super::args::*;
use super::device::{Device, DeviceError, Stream};
use super::slab::Slab;
use super::CudaEngine;
use crate::backend::{Half, Pass, Phase};
use crate::operator::Operator;
use crate::real::Real;

/// One Bloch axis's rotation and the steps across its faces.
#[derive(Debug, Clone, Copy)]
pub(super) struct BlochAxis<T> {
    /// (cos a, sin a) of the phase ([`Operator::bloch`]).
    rotation: (T, T),
    /// 1 / the step across the face: the last cell's primal step (H half step) and the first
    /// node's dual step (E half step), as the curl took them.
    step: [T; 2],
}

/// The Bloch axes of `op`'s model.
pub(super) fn axes<T: Real>(op: &Operator<T>) -> [Option<BlochAxis<T>>; 3] {
    [0, 1, 2].map(|a| {
        op.bloch[a].map(|rotation| BlochAxis {
            rotation,
            step: [op.inv_primal[a][op.shape[a] - 1], op.inv_dual[a][0]],
        })
    })
}

/// One axis's images in a slab's list: its first index and its values per term.
#[derive(Debug, Clone, Copy)]
struct Span {
    axis: usize,
    base: usize,
    len: usize,
}

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// The spans of slab `s`'s images in half step `half`, and their total.
    fn bloch_spans(&self, s: &Slab, half: Half) -> (Vec<Span>, usize) {
        let n = s.range.len();
        let holds = match half {
            Half::H => s.range.x1 == self.nx,
            Half::E => s.range.x0 == 0,
        };
        let mut spans = Vec::new();
        let mut base = 0;
        for axis in (0..3).filter(|&a| self.bloch[a].is_some()) {
            let len = match axis {
                0 if holds => self.plane,
                0 => 0,
                1 => n * self.nz,
                _ => n * self.ny,
            };
            if len > 0 {
                spans.push(Span { axis, base, len });
                base += 2 * len;
            }
        }
        (spans, base)
    }

    /// The kernels' arguments for `span` of slab `s` in half step `half`, on planes [p0, p1),
    /// the rotation's sine signed for the imaginary set or not.
    fn bloch_args(
        &self,
        s: &Slab,
        half: Half,
        span: Span,
        planes: (usize, usize),
        imaginary: bool,
    ) -> BlochArgs<T> {
        let axis = self.bloch[span.axis].expect("a Bloch axis");
        let (c, sin) = axis.rotation;
        // As the CPU: -s beyond a maximum face for the real set, +s for the imaginary one; the
        // other way round below a minimum face.
        let sin = if (half == Half::E) == imaginary {
            -sin
        } else {
            sin
        };
        BlochArgs {
            ex: s.f[0],
            ey: s.f[1],
            ez: s.f[2],
            hx: s.f[3],
            hy: s.f[4],
            hz: s.f[5],
            mx: s.mat[0],
            my: s.mat[1],
            mz: s.mat[2],
            hmx: s.hmat[0],
            hmy: s.hmat[1],
            hmz: s.hmat[2],
            own: s.bloch_images[0],
            other: s.bloch_images[1],
            plane: self.plane as i64,
            base: span.base as i64,
            len: span.len as i64,
            ny: self.ny as i32,
            nz: self.nz as i32,
            n: s.range.len() as i32,
            p0: planes.0 as i32,
            p1: planes.1 as i32,
            axis: span.axis as i32,
            high: (half == Half::H) as i32,
            magnetic: self.magnetic as i32,
            cm1: c - T::ONE,
            s: sin,
            step: axis.step[half.index()],
            ch: self.ch,
        }
    }

    /// [`crate::backend::Backend::bloch_images`]: every slab's images of half step `half`,
    /// gathered on its GPU into its own buffer, appended to `out` in slab order (zeros after
    /// a device failure, so the pair's lists keep their lengths).
    pub(super) fn read_bloch_images(&mut self, half: Half, out: &mut Vec<T>) {
        let start = out.len();
        let total: usize = self.slabs.iter().map(|s| self.bloch_spans(s, half).1).sum();
        out.resize(start + total, T::ZERO);
        if self.failed() {
            return;
        }
        let r = self.gather_bloch_images(half, &mut out[start..]);
        self.ok(r, "reading the Bloch images");
    }

    fn gather_bloch_images(&self, half: Half, out: &mut [T]) -> Result<(), DeviceError> {
        let mut at = 0;
        for s in &self.slabs {
            let (spans, count) = self.bloch_spans(s, half);
            for span in spans {
                let args = self.bloch_args(s, half, span, (1, s.range.len() + 1), false);
                let dims = Dims::elements(2 * span.len as u64, 1);
                self.launch(s.gpu, Stream::Compute, Kernel::BlochGather, dims, &args)?;
            }
            // SAFETY: plain float values viewed as bytes.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    out[at..at + count].as_mut_ptr().cast::<u8>(),
                    count * std::mem::size_of::<T>(),
                )
            };
            // A download waits for the work queued on the GPU, the gather included.
            self.dev.download(s.gpu, s.bloch_images[0], bytes)?;
            at += count;
        }
        Ok(())
    }

    /// [`crate::backend::Backend::bloch_correct`]: the other set's images up beside this
    /// set's own (already on the GPU from [`CudaEngine::read_bloch_images`]), then the
    /// correction as a pass of the half step.
    pub(super) fn correct_bloch(&mut self, half: Half, own: &[T], other: &[T], imaginary: bool) {
        debug_assert_eq!(own.len(), other.len());
        if self.failed() {
            return;
        }
        self.clock_begin(Phase::Pass(half, Pass::Bloch));
        let r = self.upload_other_images(half, other);
        if self.ok(r, "writing the Bloch images").is_some() {
            let r = self.pass(Pass::Bloch, &[imaginary as u8 as f64]);
            self.ok(r, super::doing(half));
        }
        self.clock_end();
    }

    fn upload_other_images(&self, half: Half, other: &[T]) -> Result<(), DeviceError> {
        let mut at = 0;
        for s in &self.slabs {
            let count = self.bloch_spans(s, half).1;
            let values = &other[at..at + count];
            // SAFETY: plain float values viewed as bytes.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    values.as_ptr().cast::<u8>(),
                    std::mem::size_of_val(values),
                )
            };
            self.dev.upload(s.gpu, s.bloch_images[1], bytes)?;
            at += count;
        }
        Ok(())
    }

    /// The correction on planes [p0, p1) of slab `s` (the Bloch arm of
    /// [`CudaEngine::run_planes`]): one launch per Bloch axis, x, y, z, as the CPU orders
    /// them; along x only when the plane next to the face lies in the range.
    pub(super) fn bloch_planes(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
        imaginary: bool,
    ) -> Result<(), DeviceError> {
        let (spans, _) = self.bloch_spans(s, half);
        for span in spans {
            let per = match span.axis {
                0 => {
                    let next = if half == Half::H { s.range.len() } else { 1 };
                    if !(p0..p1).contains(&next) {
                        continue;
                    }
                    self.plane
                }
                1 => (p1 - p0) * self.nz,
                _ => (p1 - p0) * self.ny,
            };
            let args = self.bloch_args(s, half, span, (p0, p1), imaginary);
            let dims = Dims::elements(2 * per as u64, 1);
            self.launch(s.gpu, Stream::Compute, Kernel::BlochCorrect, dims, &args)?;
        }
        Ok(())
    }
}
