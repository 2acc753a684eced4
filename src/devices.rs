//! GPUs seen by the CUDA driver, for the planner, `yee devices` and the CUDA backend.
//!
//! Loading the driver is dynamic: on a machine without CUDA this reports why, never panics.

/// One GPU as the planner needs it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Total device memory in bytes.
    pub memory_total: u64,
    /// Free device memory in bytes when probed.
    pub memory_free: u64,
    /// Peak memory bandwidth in bytes/s (from the device's clock and bus width).
    pub bandwidth_bytes_per_s: f64,
}

/// The GPUs usable now, or the reason none is (no driver library, no device, ...).
pub fn probe_gpus() -> Result<Vec<GpuInfo>, String> {
    Err("this build has no CUDA device probing yet".into())
}
