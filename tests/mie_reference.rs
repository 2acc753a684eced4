//! The Mie series of `tests/common/mie.rs` against its known limits (Rayleigh scattering and
//! absorption, the extinction paradox, the optical theorem, a PEC sphere's Rayleigh and optical
//! backscatter): the reference the scattering tests compare with must itself be right.

mod common;

#[test]
fn mie_series_meets_its_limits() {
    common::mie::self_check();
}
