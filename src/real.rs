//! The floating-point types a field can be stored in.

use crate::model::Precision;
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
}
