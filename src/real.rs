//! The floating-point types a field can be stored in.

use crate::model::{CellPlane, CellPlaneOf, Precision};
use std::fmt::Debug;
use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// f32 or f64: what the backends are generic over.
pub trait Real:
    Copy
    + Send
    + Sync
    + Default
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + hdf5::H5Type
    + 'static
{
    /// The precision this type implements.
    const PRECISION: Precision;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// Round an f64 to this type.
    fn from_f64(x: f64) -> Self;
    /// Widen to f64.
    fn to_f64(self) -> f64;
    /// True unless NaN or infinite.
    fn is_finite(self) -> bool;
    /// A cell pass's plane in this precision, as the pass takes it
    /// ([`crate::model::CellPass::update_plane`]).
    fn cell_plane(plane: CellPlane<'_, Self>) -> CellPlaneOf<'_>;
}

impl Real for f32 {
    const PRECISION: Precision = Precision::F32;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    fn cell_plane(plane: CellPlane<'_, Self>) -> CellPlaneOf<'_> {
        CellPlaneOf::F32(plane)
    }
}

impl Real for f64 {
    const PRECISION: Precision = Precision::F64;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn cell_plane(plane: CellPlane<'_, Self>) -> CellPlaneOf<'_> {
        CellPlaneOf::F64(plane)
    }
}

/// `n` zeros whose memory pages have been written once, by the calling thread (the one that
/// builds the slab or the monitor, so its pages also sit near the core that first uses them).
///
/// `vec![0.0; n]` gets fresh pages from the kernel that are not mapped until touched. The
/// step reads a field before it writes it (`h -= ...`), so the first read of each page maps
/// the kernel's shared zero page, and the first write must replace that mapping: a
/// copy-on-write fault that, once the process runs on several cores, interrupts every other
/// core to flush its TLB. On a 2-core virtual machine those faults took about as long as the
/// arithmetic in the profile of a 256^3 run's first steps (`docs/performance.md`). A write
/// to each page here faults it in once, for writing, with no mapping to replace.
pub fn written_zeros<T: Real>(n: usize) -> Vec<T> {
    let mut v = vec![T::ZERO; n];
    // Through `black_box`, so that the compiler, which knows the memory is zero, cannot drop
    // the stores of zero as redundant.
    let values = std::hint::black_box(&mut v[..]);
    let per_page = (4096 / std::mem::size_of::<T>()).max(1);
    for i in (0..values.len()).step_by(per_page) {
        values[i] = T::ZERO;
    }
    v
}
