//! The vocabulary every other model file uses: the physical constants and the Cartesian axes.

/// Speed of light in vacuum, m/s.
pub const C0: f64 = 299_792_458.0;
/// Vacuum permeability, H/m (CODATA 2018).
pub const MU0: f64 = 1.256_637_062_12e-6;
/// Vacuum permittivity, F/m, consistent with C0 and MU0.
pub const EPS0: f64 = 1.0 / (MU0 * C0 * C0);
/// Impedance of free space, ohm.
pub const ETA0: f64 = MU0 * C0;

/// A Cartesian axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// x (the slab axis).
    X = 0,
    /// y.
    Y = 1,
    /// z (contiguous in memory).
    Z = 2,
}

impl Axis {
    /// All three axes in order.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];
    /// "x", "y" or "z".
    pub fn name(self) -> &'static str {
        ["x", "y", "z"][self as usize]
    }
}
