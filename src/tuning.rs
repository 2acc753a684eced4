//! The tuning knobs of the engines, read from the environment once into one [`Tuning`], so a
//! run's configuration is visible: `yee devices` lists every knob and its value, and `yee run`
//! notes the ones set. None of them changes a result (the fields are the same bits); they
//! change how fast the engines get there, for benchmarks and comparisons (docs/cli.md).

use std::sync::OnceLock;

/// Every tuning variable, with what it does.
pub const VARIABLES: [(&str, &str); 5] = [
    (
        "YEE_CPU_ISA",
        "the CPU engine's vector loops: baseline (SSE2) or avx2 (default: the widest this CPU has)",
    ),
    (
        "YEE_FUSED_BAND",
        "bytes of field values per row band of the CPU's fused sweep (default: whole planes)",
    ),
    (
        "YEE_CUDA_PIPELINE",
        "0 turns off the two-plane load pipeline of the CUDA main updates (default: on)",
    ),
    (
        "YEE_CUDA_BLOCK",
        "CUDA threads per block, a multiple of 32 up to 1024 (default 256)",
    ),
    (
        "YEE_CUDA_TARGET_THREADS",
        "CUDA threads a column launch aims for, which sets its x chunks (default 16777216)",
    ),
];

/// The tuning knobs in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tuning {
    /// `YEE_CPU_ISA`: the vector ISA asked for (an unknown or unavailable one is ignored).
    pub cpu_isa: Option<String>,
    /// `YEE_FUSED_BAND`: bytes of field values per row band of the fused sweep.
    pub fused_band_bytes: Option<usize>,
    /// `YEE_CUDA_PIPELINE=0`: the load pipeline of the CUDA main updates is off.
    pub cuda_pipeline_off: bool,
    /// `YEE_CUDA_BLOCK`: threads per block, where valid.
    pub cuda_block: Option<u32>,
    /// `YEE_CUDA_TARGET_THREADS`: threads a column launch aims for, where valid.
    pub cuda_target_threads: Option<u64>,
}

impl Tuning {
    /// The knobs `get` gives (the environment's variables, or a test's), each checked: a value
    /// out of range is ignored, as if unset.
    pub fn from(get: impl Fn(&str) -> Option<String>) -> Tuning {
        let number = |k: &str| get(k).and_then(|v| v.trim().parse::<u64>().ok());
        Tuning {
            cpu_isa: get("YEE_CPU_ISA").map(|v| v.trim().to_string()),
            fused_band_bytes: number("YEE_FUSED_BAND").map(|b| b as usize),
            cuda_pipeline_off: get("YEE_CUDA_PIPELINE").is_some_and(|v| v.trim() == "0"),
            cuda_block: number("YEE_CUDA_BLOCK")
                .filter(|b| b % 32 == 0 && (32..=1024).contains(b))
                .map(|b| b as u32),
            cuda_target_threads: number("YEE_CUDA_TARGET_THREADS").filter(|t| *t > 0),
        }
    }

    /// The knobs set, as `NAME=value`, in [`VARIABLES`] order.
    pub fn set(&self) -> Vec<String> {
        let values = [
            self.cpu_isa.clone(),
            self.fused_band_bytes.map(|b| b.to_string()),
            self.cuda_pipeline_off.then(|| "0".to_string()),
            self.cuda_block.map(|b| b.to_string()),
            self.cuda_target_threads.map(|t| t.to_string()),
        ];
        VARIABLES
            .iter()
            .zip(values)
            .filter_map(|((name, _), v)| v.map(|v| format!("{name}={v}")))
            .collect()
    }

    /// Every knob, one line each: its variable, its value here (or "default") and what it does.
    pub fn report(&self) -> String {
        let set = self.set();
        let mut out =
            String::from("tuning (environment variables; the results are the same bits):\n");
        for (name, what) in VARIABLES {
            let value = set
                .iter()
                .find_map(|s| s.strip_prefix(&format!("{name}=")))
                .unwrap_or("default");
            out += &format!("  {name} = {value}: {what}\n");
        }
        out
    }
}

/// The tuning in force in this process: the environment's, read on first use.
pub fn tuning() -> &'static Tuning {
    static T: OnceLock<Tuning> = OnceLock::new();
    T.get_or_init(|| Tuning::from(|k| std::env::var(k).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_out_of_range_are_ignored_and_the_set_ones_listed() {
        let env = |k: &str| match k {
            "YEE_CUDA_BLOCK" => Some("100".into()),
            "YEE_CUDA_TARGET_THREADS" => Some(" 4194304 ".into()),
            "YEE_CUDA_PIPELINE" => Some("0".into()),
            _ => None,
        };
        let t = Tuning::from(env);
        assert_eq!(t.cuda_block, None, "not a multiple of 32");
        assert_eq!(t.cuda_target_threads, Some(4_194_304));
        assert_eq!(
            t.set(),
            ["YEE_CUDA_PIPELINE=0", "YEE_CUDA_TARGET_THREADS=4194304"]
        );
        assert!(t.report().contains("YEE_CPU_ISA = default"));
        assert!(Tuning::from(|_| None).set().is_empty());
    }
}
