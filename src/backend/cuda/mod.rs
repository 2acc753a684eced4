//! The CUDA backend: the Yee grid in x slabs across GPUs, kernels compiled at run time by NVRTC.
//!
//! - `args`: the kernels and their `#[repr(C)]` argument structs (mirrors of
//!   `kernels/common.cuh`) and launch geometry.
//! - `source`: the kernel sources embedded in the binary.
//! - `engine`: the slab engine over a `engine::Device`: buffers, the launches of each pass,
//!   halo copy routes and events, monitor staging. It implements [`crate::backend::Backend`]
//!   and is the same code whether the device is CUDA or the host-compiled kernels of the tests.
//! - `nvrtc`, `driver` (feature `cuda`): NVRTC compilation and `CudaDevice`, the engine's
//!   device on the CUDA driver through cudarc.
//! - `placement`: the plan's GPU placement (`placement::Placement::of`) and building the engine
//!   on it; the plan alone decides which GPUs a run uses.
//!
//! cudarc loads libcuda and libnvrtc at run time and panics when one is missing, so every
//! entry point checks for them first (`check_libraries`): a machine without a GPU gets a
//! message, never a panic. Without the `cuda` feature only the device-independent parts are
//! built.

// The argument structs mirror kernels/common.cuh field for field; their fields are
// documented there, next to the kernels that read them.
#[allow(missing_docs)]
pub mod args;
pub mod engine;
pub mod placement;
pub mod source;

#[cfg(feature = "cuda")]
mod driver;
#[cfg(feature = "cuda")]
pub mod nvrtc;

#[cfg(feature = "cuda")]
pub use driver::{driver_version, CudaDevice};
pub use engine::{CudaEngine, Device, DeviceError, EngineOptions};

/// The CUDA backend: the slab engine on the CUDA driver.
#[cfg(feature = "cuda")]
pub type CudaBackend<T> = CudaEngine<CudaDevice, T>;

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

/// What to do when no libnvrtc can be loaded (also without the `cuda` feature, for messages).
pub const NVRTC_NOT_FOUND: &str = "NVRTC (libnvrtc.so, the CUDA run-time compiler) was not found on the library path: install it \
     (pip install nvidia-cuda-nvrtc-cu12, matching the driver's CUDA version, then add its \
     nvidia/cuda_nvrtc/lib folder to LD_LIBRARY_PATH; or the CUDA toolkit's lib64)";

/// Why NVRTC could not be used, or could not compile the kernels.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvrtcError {
    /// No libnvrtc can be loaded.
    #[error("{}", NVRTC_NOT_FOUND)]
    NotFound,
    /// An NVRTC call failed.
    #[error("{call}: {message}")]
    Call {
        /// The NVRTC function.
        call: &'static str,
        /// NVRTC's description of the result code.
        message: String,
    },
    /// The kernels did not compile.
    #[error("compiling the kernels for {arch} ({precision}): {message}\n{log}")]
    Compile {
        /// The architecture asked for, e.g. "sm_90".
        arch: String,
        /// "f32" or "f64".
        precision: &'static str,
        /// NVRTC's description of the result code.
        message: String,
        /// The compiler's log.
        log: String,
    },
    /// This NVRTC knows no architecture the GPU can run.
    #[error("NVRTC {}.{} cannot compile for compute capability {}.{} (it supports sm_{}..sm_{}): install an NVRTC that does", .version.0, .version.1, .cc / 10, .cc % 10, .supported.0, .supported.1)]
    Unsupported {
        /// NVRTC's version (major, minor).
        version: (i32, i32),
        /// The GPU's compute capability, 10 major + minor.
        cc: i32,
        /// The oldest and newest architectures it compiles for.
        supported: (i32, i32),
    },
}

/// Why CUDA cannot be used, each with what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CudaError {
    /// This binary was built without the `cuda` feature.
    #[error("this yee was built without CUDA support (the `cuda` feature); rebuild with default features, or use --backend cpu")]
    NotBuilt,
    /// libcuda could not be loaded.
    #[error("the NVIDIA driver library (libcuda.so) was not found: this machine has no NVIDIA driver, or its library folder is not on the loader path; install the driver (or run in a container with GPU support), or use --backend cpu")]
    NoDriver,
    /// The driver loaded but no usable device.
    #[error("no usable GPU: {0}; check `nvidia-smi`, or use --backend cpu")]
    NoDevice(String),
    /// libnvrtc missing or broken.
    #[error("{0}")]
    Nvrtc(NvrtcError),
    /// NVRTC failed to compile the kernels.
    #[error("NVRTC could not compile the kernels: {0}")]
    Compile(NvrtcError),
    /// The driver refused the compiled kernels.
    #[error("{0}")]
    ModuleLoad(String),
    /// An allocation did not fit on one of the GPUs used.
    #[error("{0}")]
    OutOfMemory(GpuOutOfMemory),
    /// Any other driver failure.
    #[error("CUDA failed: {0}")]
    Other(String),
}

/// Which GPU ran out of memory, so that the run can re-plan without it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("out of memory on GPU {gpu} allocating {requested} bytes ({free} bytes free)")]
pub struct GpuOutOfMemory {
    /// Index of the GPU among those the engine was built on (the order of first use in the
    /// slab placement) as the engine reports it; the run renames it to the driver ordinal
    /// ([`GpuOutOfMemory::on`]) before it says it.
    pub gpu: usize,
    /// Bytes asked for.
    pub requested: u64,
    /// Bytes free on the device when it failed (0 when pinned host memory ran out).
    pub free: u64,
}

impl GpuOutOfMemory {
    /// The same failure, naming the GPU `gpu` (the placement's ordinal of the engine's index).
    pub fn on(self, gpu: usize) -> GpuOutOfMemory {
        GpuOutOfMemory { gpu, ..self }
    }
}

impl From<DeviceError> for CudaError {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::OutOfMemory {
                gpu,
                requested,
                free,
            } => CudaError::OutOfMemory(GpuOutOfMemory {
                gpu,
                requested,
                free,
            }),
            DeviceError::Failed(s) => CudaError::Other(s),
        }
    }
}

/// Check that libcuda and libnvrtc can be loaded and the driver initialises (no panics).
#[cfg(feature = "cuda")]
pub fn check_libraries() -> Result<(), CudaError> {
    // SAFETY: dlopen of candidate library names only.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(CudaError::NoDriver);
    }
    cudarc::driver::result::init().map_err(|e| {
        let why = driver::describe(e);
        match e.0 {
            cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => CudaError::NoDevice(format!("the driver found no CUDA device ({why})")),
            cudarc::driver::sys::CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => {
                CudaError::NoDevice(format!("the user-space driver library does not match the kernel driver ({why}); update the driver"))
            }
            _ => CudaError::NoDevice(format!("the driver failed to initialise ({why})")),
        }
    })?;
    if !nvrtc::available() {
        return Err(CudaError::Nvrtc(NvrtcError::NotFound));
    }
    Ok(())
}

/// Without the `cuda` feature CUDA is never usable.
#[cfg(not(feature = "cuda"))]
pub fn check_libraries() -> Result<(), CudaError> {
    Err(CudaError::NotBuilt)
}

/// Number of CUDA devices the driver sees (after [`check_libraries`]).
#[cfg(feature = "cuda")]
pub fn device_count() -> Result<usize, CudaError> {
    let n = cudarc::driver::CudaContext::device_count()
        .map_err(|e| CudaError::NoDevice(driver::describe(e)))?;
    if n <= 0 {
        return Err(CudaError::NoDevice(
            "the driver found no CUDA device".into(),
        ));
    }
    Ok(n as usize)
}

/// The GPUs the driver sees, with free memory and peak bandwidth, or why none can be used.
#[cfg(feature = "cuda")]
pub fn probe_gpus() -> Result<Vec<GpuInfo>, CudaError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    check_libraries()?;
    let n = device_count()?;
    let mut out = Vec::with_capacity(n);
    for ordinal in 0..n {
        let ctx = cudarc::driver::CudaContext::new(ordinal).map_err(|e| {
            CudaError::Other(format!(
                "cannot open GPU {ordinal}: {}",
                driver::describe(e)
            ))
        })?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| CudaError::Other(driver::describe(e)))?;
        let (free, total) = ctx
            .mem_get_info()
            .map_err(|e| CudaError::Other(driver::describe(e)))?;
        let clock_khz = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
            .unwrap_or(0) as f64;
        let bus_bits = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .unwrap_or(0) as f64;
        out.push(GpuInfo {
            ordinal,
            name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            compute_capability: (major as u32, minor as u32),
            memory_total: total as u64,
            memory_free: free as u64,
            bandwidth_bytes_per_s: 2.0 * clock_khz * 1e3 * bus_bits / 8.0,
        });
    }
    Ok(out)
}

/// Without the `cuda` feature there are no GPUs.
#[cfg(not(feature = "cuda"))]
pub fn probe_gpus() -> Result<Vec<GpuInfo>, CudaError> {
    Err(CudaError::NotBuilt)
}

/// Whether GPU `a` can access GPU `b`'s memory directly, for every pair of the driver's GPUs.
#[cfg(feature = "cuda")]
pub fn peer_matrix() -> Result<Vec<Vec<bool>>, CudaError> {
    check_libraries()?;
    let n = device_count()?;
    let dev = |o: usize| {
        cudarc::driver::result::device::get(o as i32)
            .map_err(|e| CudaError::Other(driver::describe(e)))
    };
    let mut m = vec![vec![false; n]; n];
    for (a, row) in m.iter_mut().enumerate() {
        for (b, cell) in row.iter_mut().enumerate() {
            if a != b {
                let mut can = 0;
                // SAFETY: device handles from the driver; out-parameter.
                unsafe { cudarc::driver::sys::cuDeviceCanAccessPeer(&mut can, dev(a)?, dev(b)?) }
                    .result()
                    .map_err(|e| CudaError::Other(driver::describe(e)))?;
                *cell = can == 1;
            }
        }
    }
    Ok(m)
}
