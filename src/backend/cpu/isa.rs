//! The vector instruction set the CPU update's loops run with, chosen at run time.
//!
//! The binary is built for baseline x86-64, whose SSE2 vectors hold 4 f32 values, so that it
//! runs on any x86-64 CPU. The curl of each plane and its CPML correction, the loops that hold
//! nearly all of a step's arithmetic, are compiled a second time for AVX2 (8 f32 lanes), and
//! each engine runs that variant when the CPU has AVX2 ([`Isa::detect`]). On a 2-core
//! development machine the fused sweep of a 256^3 cube ran 1.33 times as fast with AVX2 as
//! with SSE2 with PEC walls and 1.17 times with a CPML (`docs/performance.md`): at two
//! threads the update is as much bound by its instructions as by memory. An AVX-512 variant
//! was tried and dropped: on that machine (an AMD EPYC) it ran 0.93 times as fast as AVX2.
//!
//! Both variants perform the same IEEE operations in the same order on each value (Rust never
//! contracts `a * b + c` into a fused multiply-add, and neither variant enables FMA),
//! and the flush of subnormals is the same MXCSR setting for SSE and AVX, so both give the
//! same bits; `tests/fused.rs` runs scenes with AVX2, where the CPU has it, against SSE2.

use std::fmt;

/// A vector instruction set for the CPU update's loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// What every x86-64 CPU (or any other target) has: SSE2 on x86-64.
    Baseline,
    /// AVX2: 256-bit vectors.
    Avx2,
}

impl Isa {
    /// Every ISA, narrowest first.
    pub const ALL: [Isa; 2] = [Isa::Baseline, Isa::Avx2];

    /// The widest ISA this CPU has, unless the environment variable `YEE_CPU_ISA` names
    /// another one that it has (`baseline` or `avx2`: for tuning and comparisons; an unknown
    /// or unavailable name is ignored).
    pub fn detect() -> Isa {
        Isa::choose(crate::tuning::tuning().cpu_isa.as_deref(), Isa::available)
    }

    /// The ISA named `asked` (by [`Isa::name`], spaces around it ignored) if `available`
    /// says it can run, else the widest one that can.
    fn choose(asked: Option<&str>, available: impl Fn(Isa) -> bool) -> Isa {
        let asked = asked.and_then(|v| Isa::ALL.into_iter().find(|i| i.name() == v.trim()));
        match asked {
            Some(isa) if available(isa) => isa,
            _ => Isa::ALL
                .into_iter()
                .rev()
                .find(|&i| available(i))
                .unwrap_or(Isa::Baseline),
        }
    }

    /// Whether this CPU can run code compiled for the ISA.
    pub fn available(self) -> bool {
        match self {
            Isa::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The ISA's name, as `YEE_CPU_ISA` takes it and the run line prints it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Baseline => "baseline",
            Isa::Avx2 => "avx2",
        }
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Calls the `#[inline(always)]` function `$body` with the arguments `$a` (of types `$t`,
/// generic over `$T: Real`), compiled for the ISA `$isa`: the body is inlined into a wrapper
/// with that ISA's target feature, so its loops are vectorised for it. `$isa` must be
/// [`Isa::available`] (the engine checks it when the ISA is set).
macro_rules! with_isa {
    ($isa:expr, $body:ident, <$T:ident>, ($($a:ident: $t:ty),* $(,)?)) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        #[allow(clippy::too_many_arguments)]
        fn avx2<$T: Real>($($a: $t),*) {
            $body($($a),*)
        }
        match $isa {
            // SAFETY: the engine sets only an ISA that the CPU has (`Isa::available`).
            #[cfg(target_arch = "x86_64")]
            $crate::backend::cpu::Isa::Avx2 => unsafe { avx2($($a),*) },
            _ => $body($($a),*),
        }
    }};
}
pub(super) use with_isa;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_picks_an_available_isa_and_names_round_trip() {
        assert!(Isa::detect().available());
        assert!(Isa::Baseline.available());
        for isa in Isa::ALL {
            assert_eq!(isa.to_string(), isa.name());
        }
        assert_ne!(Isa::Baseline.name(), Isa::Avx2.name());
    }

    #[test]
    fn an_asked_isa_is_taken_only_when_available() {
        let all = |_: Isa| true;
        let baseline_only = |i: Isa| i == Isa::Baseline;
        // Nothing asked, or a name that is no ISA: the widest available.
        assert_eq!(Isa::choose(None, all), Isa::Avx2);
        assert_eq!(Isa::choose(Some("sse9"), all), Isa::Avx2);
        assert_eq!(Isa::choose(None, baseline_only), Isa::Baseline);
        // A name: that ISA, if it can run.
        assert_eq!(Isa::choose(Some("baseline"), all), Isa::Baseline);
        assert_eq!(Isa::choose(Some(" avx2\n"), all), Isa::Avx2);
        assert_eq!(Isa::choose(Some("avx2"), baseline_only), Isa::Baseline);
    }
}
