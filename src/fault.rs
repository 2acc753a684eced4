//! Test hooks: the failures and delays the test suite injects through the environment
//! (`YEE_CUDA_FAIL_AT_STEP`: a GPU that fails at a step; `YEE_RANK_FAIL_AT=RANK:STEP`: a rank
//! that fails; `YEE_TEST_CHECKPOINT_PAUSE_MS`: a slow disk under a checkpoint;
//! `YEE_LOAD_AVERAGE`: how busy the machine is to be taken as). They are read only with the
//! `fault-injection` feature, which `scripts/test.sh` and `scripts/gpu-check.sh` enable; a
//! build without it (`scripts/run-example.sh`, a user's) reads none of them.

/// The value of test hook `name`, where the `fault-injection` feature is on and it is set.
pub fn hook(name: &str) -> Option<String> {
    #[cfg(feature = "fault-injection")]
    {
        std::env::var(name).ok()
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = name;
        None
    }
}
