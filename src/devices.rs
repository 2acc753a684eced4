//! The hardware here, for the planner and `yee devices`: the GPUs the CUDA driver sees and
//! the host's memory bandwidth.
//!
//! Loading the driver is dynamic: on a machine without CUDA this reports why, never panics.

pub use crate::backend::cuda::GpuInfo;

/// The GPUs usable now, or the reason none is (no driver library, no device, ...).
pub fn probe_gpus() -> Result<Vec<GpuInfo>, crate::backend::cuda::CudaError> {
    crate::backend::cuda::probe_gpus()
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// The `yee devices` report: the driver, NVRTC and GPUs (or why CUDA cannot be used), then
/// the tuning knobs in force ([`crate::tuning`]); and whether CUDA can be used.
pub fn report() -> (String, bool) {
    let (gpus, usable) = gpu_report();
    (gpus + &crate::tuning::tuning().report(), usable)
}

/// The driver, NVRTC and GPUs part of [`report`], and whether CUDA can be used.
#[cfg(feature = "cuda")]
fn gpu_report() -> (String, bool) {
    use crate::backend::cuda::{self, nvrtc, CudaError};
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    // The driver.
    // SAFETY: dlopen of candidate names only.
    let driver = if !unsafe { cudarc::driver::sys::is_culib_present() } {
        line("CUDA driver: not found (no libcuda.so on the loader path)".into());
        None
    } else if let Err(e) = cudarc::driver::result::init() {
        line(format!(
            "CUDA driver: found, but it did not initialise: {e:?}"
        ));
        None
    } else {
        let v = cuda::driver_version().ok();
        let display = std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|t| {
                // "NVRM version: NVIDIA UNIX [Open] Kernel Module [for x86_64]  580.95.05  ..."
                t.split_whitespace()
                    .skip_while(|w| *w != "Module")
                    .find(|w| w.contains('.') && w.starts_with(|c: char| c.is_ascii_digit()))
                    .map(str::to_string)
            });
        let lib = nvrtc::loaded_library("libcuda.so").unwrap_or_else(|| "libcuda".into());
        line(format!(
            "CUDA driver: {}, supports CUDA {} ({lib})",
            display.map_or("version unknown".into(), |d| format!("version {d}")),
            v.map_or("?".into(), |(a, b)| format!("{a}.{b}"))
        ));
        v
    };
    // NVRTC.
    let nv = nvrtc::version();
    match &nv {
        Ok((a, b)) => {
            let lib = nvrtc::loaded_library("libnvrtc.so").unwrap_or_else(|| "libnvrtc".into());
            let archs = nvrtc::supported_archs().unwrap_or_default();
            line(format!(
                "NVRTC: {a}.{b} ({lib}), compiles for sm_{}..sm_{}",
                archs.first().copied().unwrap_or(0),
                archs.last().copied().unwrap_or(0)
            ));
            if let Some(d) = driver {
                if (*a, *b) > d {
                    line(format!(
                        "  warning: NVRTC {a}.{b} is newer than the driver's CUDA {}.{}: PTX it emits is rejected (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). yee loads machine code (CUBIN) for GPUs this NVRTC knows, which avoids that; to be safe install the matching NVRTC: pip install nvidia-cuda-nvrtc-cu{}=={}.{}.* and put its nvidia/cuda_nvrtc/lib first on LD_LIBRARY_PATH",
                        d.0, d.1, d.0, d.0, d.1
                    ));
                }
            }
        }
        Err(e) => line(format!("NVRTC: not found: {e}")),
    }
    // GPUs.
    let gpus = match cuda::probe_gpus() {
        Ok(g) => g,
        Err(e) => {
            line(format!("GPUs: none usable\nCUDA cannot be used: {e}"));
            return (out, false);
        }
    };
    line(format!("GPUs: {}", gpus.len()));
    let mut usable = 0;
    let mut first_error: Option<CudaError> = None;
    for g in &gpus {
        let kernels = match cuda::CudaDevice::new(&[g.ordinal], crate::model::Precision::F32) {
            Ok(d) => {
                usable += 1;
                format!("kernels compiled and loaded ({})", d.images()[0])
            }
            Err(e) => {
                let s = format!("kernels NOT usable: {e}");
                first_error.get_or_insert(e);
                s
            }
        };
        line(format!(
            "  {}: {}, compute capability {}.{}, {} free of {}, {:.2} TB/s peak; {kernels}",
            g.ordinal,
            g.name,
            g.compute_capability.0,
            g.compute_capability.1,
            gib(g.memory_free),
            gib(g.memory_total),
            g.bandwidth_bytes_per_s / 1e12
        ));
    }
    if gpus.len() > 1 {
        match cuda::peer_matrix() {
            Ok(m) => {
                for (a, row) in m.iter().enumerate() {
                    let peers: Vec<String> = row
                        .iter()
                        .enumerate()
                        .filter(|(b, &p)| *b != a && p)
                        .map(|(b, _)| b.to_string())
                        .collect();
                    line(format!(
                        "  peer access from {a}: {}",
                        if peers.is_empty() {
                            "none (halos go through pinned host memory)".into()
                        } else {
                            peers.join(", ")
                        }
                    ));
                }
            }
            Err(e) => line(format!("  peer access: unknown ({e})")),
        }
    } else {
        line("  peer access: not applicable (one GPU); several slabs on one GPU copy halos within it".into());
    }
    if usable > 0 {
        line(format!(
            "CUDA: usable on {usable} GPU(s) (yee run --backend cuda, or auto)"
        ));
        (out, true)
    } else {
        let why = first_error.map_or("no GPU could load the kernels".to_string(), |e| {
            e.to_string()
        });
        line(format!("CUDA cannot be used: {why}"));
        (out, false)
    }
}

/// Without the `cuda` feature: say so.
#[cfg(not(feature = "cuda"))]
fn gpu_report() -> (String, bool) {
    let _ = gib;
    ("CUDA cannot be used: this yee was built without CUDA support (the `cuda` feature); rebuild with default features\n".into(), false)
}

/// The host triad lives with the hardware model it measures (the plan's).
pub use crate::plan::hardware::{host_triad, host_triad_passes};

/// Finding this machine's devices for the plan: the plan's types stay free of the driver.
mod for_plan {
    use super::GpuInfo;
    use crate::plan::hardware::{host_memory_available, GENERIC_GPU_BANDWIDTH};
    use crate::plan::{Device, DeviceKind, Hardware, NVLINK3_BANDWIDTH, PCIE_BANDWIDTH};

    impl Device {
        /// A GPU found by the driver: its free memory and bandwidth; NVLink assumed on data-centre
        /// SXM parts (H100, H200, A100 not PCIe), PCIe otherwise.
        pub fn from_probe(g: &GpuInfo) -> Device {
            let n = crate::plan::hardware::normalise(&g.name);
            let nvlink =
                ["H100", "H200", "A100"].iter().any(|k| n.contains(k)) && !n.contains("PCIE");
            let known = g.bandwidth_bytes_per_s.is_finite() && g.bandwidth_bytes_per_s > 0.0;
            Device {
                name: g.name.clone(),
                kind: DeviceKind::Gpu,
                memory_bytes: g.memory_free,
                bandwidth_bytes_per_s: if known {
                    g.bandwidth_bytes_per_s
                } else {
                    GENERIC_GPU_BANDWIDTH
                },
                bandwidth_assumed: !known,
                interconnect_bytes_per_s: if nvlink {
                    NVLINK3_BANDWIDTH
                } else {
                    PCIE_BANDWIDTH
                },
            }
        }
    }

    /// Whether every pair of the driver's GPUs has peer access (false when that cannot be read:
    /// then the staged halo planes are counted, the safe side).
    #[cfg(feature = "cuda")]
    fn all_peers() -> bool {
        crate::backend::cuda::peer_matrix().is_ok_and(|m| {
            m.iter()
                .enumerate()
                .all(|(a, row)| row.iter().enumerate().all(|(b, &p)| a == b || p))
        })
    }

    /// Without the `cuda` feature no GPU is probed.
    #[cfg(not(feature = "cuda"))]
    fn all_peers() -> bool {
        false
    }

    impl Hardware {
        /// GPUs and host as given (`gpus`, `host_memory`) or found on this machine: the driver's
        /// GPUs with their free memory, MemAvailable of the host.
        pub fn detect(gpus: Option<Vec<Device>>, host_memory: Option<u64>) -> Hardware {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let probed = gpus.is_none();
            let (gpus, gpu_note) = match gpus {
                Some(g) => (g, "given with --gpus".to_string()),
                None => match super::probe_gpus() {
                    Ok(list) if !list.is_empty() => (
                        list.iter().map(Device::from_probe).collect(),
                        "found by the CUDA driver (free memory)".to_string(),
                    ),
                    Ok(_) => (Vec::new(), "no GPU found".to_string()),
                    Err(why) => (Vec::new(), format!("no GPU found: {why}")),
                },
            };
            let (host_bytes, host_note) = match host_memory {
                Some(b) => (b, "given with --host-memory".to_string()),
                None => match host_memory_available() {
                    Some(b) => (
                        b,
                        "MemAvailable of this machine (--host-memory to override)".to_string(),
                    ),
                    None => (
                        0,
                        "unknown: /proc/meminfo could not be read (give --host-memory)".to_string(),
                    ),
                },
            };
            // Peer access as the driver reports it for every pair of the GPUs found; GPUs
            // given by model or size are assumed to have it.
            let peer_access = !probed || gpus.len() < 2 || all_peers();
            Hardware {
                peer_access,
                gpus,
                gpu_note,
                host: Device::host(host_bytes, cores),
                host_note,
                cores,
                bandwidth_note: None,
            }
        }
    }
}
