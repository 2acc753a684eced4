//! [`CudaDevice`]: the engine's [`Device`] on the CUDA driver, through cudarc.
//!
//! One context (the device's primary context) and three non-blocking streams per GPU:
//! compute, halo and monitor. Memory is allocated with plain `cuMemAlloc` (no managed
//! memory), pinned host memory with `cuMemHostAlloc(PORTABLE)` so every context may copy
//! through it, and peer access is enabled between every pair that supports it.

use super::args::{Dims, Kernel, Ptr};
use super::engine::{Device, DeviceError, Event, KernelArgs, Stream, EVENTS, MARKS};
use super::nvrtc::{self, ImageKind};
use super::CudaError;
use crate::model::Precision;
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, DriverError};
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

/// The driver's name for an error, e.g. "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
pub fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name}: {text}")
}

fn failed(doing: &str) -> impl Fn(DriverError) -> DeviceError + '_ {
    move |e| DeviceError::Failed(format!("{doing}: {}", describe(e)))
}

/// The driver's CUDA version as (major, minor), e.g. (13, 0).
pub fn driver_version() -> Result<(i32, i32), String> {
    let mut v = 0;
    // SAFETY: out-parameter; the caller checked that libcuda is present.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .map_err(describe)?;
    Ok((v / 1000, (v % 1000) / 10))
}

/// One GPU in use.
struct Gpu {
    ctx: Arc<CudaContext>,
    streams: [Arc<CudaStream>; 3],
    _module: Arc<CudaModule>,
    functions: Vec<CudaFunction>,
    module: sys::CUmodule,
    events: Vec<CudaEvent>,
    /// The timing marks ([`Device::mark`]), with timing on: made on the first mark, so a
    /// device that records none (benchmarks, `yee devices`) makes none.
    marks: OnceLock<Vec<CudaEvent>>,
}

/// The CUDA driver as an engine [`Device`].
pub struct CudaDevice {
    gpus: Vec<Gpu>,
    ordinals: Vec<usize>,
    images: Vec<String>,
    peer: Vec<Vec<bool>>,
    allocations: Mutex<Vec<(usize, sys::CUdeviceptr)>>,
    pinned: Mutex<Vec<(usize, usize)>>,
}

/// Load the kernels into `ctx`: a CUBIN for the GPU's architecture, else PTX. Returns the
/// module and a description ("sm_90 cubin").
fn load_kernels(
    ctx: &Arc<CudaContext>,
    precision: Precision,
) -> Result<(Arc<CudaModule>, String), CudaError> {
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| CudaError::Other(describe(e)))?;
    let cc = major * 10 + minor;
    let supported = nvrtc::supported_archs().map_err(CudaError::Nvrtc)?;
    let nv = nvrtc::version().map_err(CudaError::Nvrtc)?;
    let Some((arch, cubin)) = nvrtc::target_for(cc, &supported) else {
        return Err(CudaError::Compile(nvrtc::NvrtcError::Unsupported {
            version: nv,
            cc,
            supported: (
                supported.first().copied().unwrap_or(0),
                supported.last().copied().unwrap_or(0),
            ),
        }));
    };
    let image = nvrtc::compile(precision, arch, cubin).map_err(CudaError::Compile)?;
    let what = format!(
        "{} {}",
        image.arch,
        if image.kind == ImageKind::Cubin {
            "cubin"
        } else {
            "ptx"
        }
    );
    let ptx = match image.kind {
        ImageKind::Cubin => cudarc::nvrtc::Ptx::from_binary(image.bytes),
        ImageKind::Ptx => cudarc::nvrtc::Ptx::from_src(
            String::from_utf8_lossy(&image.bytes[..image.bytes.len().saturating_sub(1)])
                .into_owned(),
        ),
    };
    match ctx.load_module(ptx) {
        Ok(m) => Ok((m, what)),
        Err(e) => Err(CudaError::ModuleLoad(module_load_message(e, nv, &what))),
    }
}

/// Explain a module that the driver refused, naming the NVRTC to install when the versions
/// disagree.
pub fn module_load_message(e: DriverError, nvrtc: (i32, i32), what: &str) -> String {
    let driver = driver_version().unwrap_or((0, 0));
    let base = format!(
        "the driver (CUDA {}.{}) refused the kernels NVRTC {}.{} compiled ({what}): {}",
        driver.0,
        driver.1,
        nvrtc.0,
        nvrtc.1,
        describe(e)
    );
    let mismatch = matches!(
        e.0,
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUresult::CUDA_ERROR_INVALID_PTX
            | CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUresult::CUDA_ERROR_INVALID_IMAGE
    );
    if mismatch && nvrtc > driver {
        format!(
            "{base}. This NVRTC is newer than the driver: install the NVRTC of the driver's CUDA version, e.g. `pip install nvidia-cuda-nvrtc-cu{}=={}.{}.*` and put its lib folder first on LD_LIBRARY_PATH, or update the NVIDIA driver",
            driver.0, driver.0, driver.1
        )
    } else {
        base
    }
}

impl CudaDevice {
    /// Open the GPUs with these ordinals, compile the kernels for `precision` with NVRTC for
    /// each architecture, and enable peer access where the pairs support it.
    pub fn new(ordinals: &[usize], precision: Precision) -> Result<CudaDevice, CudaError> {
        Self::open(ordinals, precision, false)
    }

    /// As [`CudaDevice::new`], but an ordinal may repeat: each repetition is one more logical
    /// GPU on the same device (own streams and events, the device's one context), and copies
    /// between logical GPUs of one device take the peer path. This is how the multi-GPU code
    /// paths (cross-GPU events, `cuMemcpyPeerAsync`, staging through pinned memory) are
    /// checked on a machine with one GPU.
    pub fn new_logical(ordinals: &[usize], precision: Precision) -> Result<CudaDevice, CudaError> {
        Self::open(ordinals, precision, true)
    }

    fn open(
        ordinals: &[usize],
        precision: Precision,
        allow_repeat: bool,
    ) -> Result<CudaDevice, CudaError> {
        super::check_libraries()?;
        let count = super::device_count()?;
        if ordinals.is_empty() {
            return Err(CudaError::NoDevice("no GPU was selected".into()));
        }
        for (i, &o) in ordinals.iter().enumerate() {
            if o >= count {
                return Err(CudaError::NoDevice(format!(
                    "GPU {o} does not exist: the driver sees {count} (ordinals 0..{})",
                    count.saturating_sub(1)
                )));
            }
            if !allow_repeat && ordinals[..i].contains(&o) {
                return Err(CudaError::NoDevice(format!("GPU {o} is listed twice in --gpus; use --slabs-per-gpu for several slabs on one GPU")));
            }
        }
        let mut gpus = Vec::new();
        let mut images = Vec::new();
        for &o in ordinals {
            let ctx = CudaContext::new(o)
                .map_err(|e| CudaError::Other(format!("cannot open GPU {o}: {}", describe(e))))?;
            // The engine orders its streams with its own events.
            // SAFETY: no CudaSlice is created by this device; buffers are raw allocations.
            unsafe { ctx.disable_event_tracking() };
            let stream = || ctx.new_stream().map_err(|e| CudaError::Other(describe(e)));
            let streams = [stream()?, stream()?, stream()?];
            let (module, what) = load_kernels(&ctx, precision)?;
            images.push(what);
            let functions = Kernel::ALL
                .iter()
                .map(|k| {
                    module.load_function(k.name()).map_err(|e| {
                        CudaError::ModuleLoad(format!(
                            "kernel {} missing: {}",
                            k.name(),
                            describe(e)
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let events = (0..EVENTS)
                .map(|_| {
                    ctx.new_event(None)
                        .map_err(|e| CudaError::Other(describe(e)))
                })
                .collect::<Result<Vec<_>, _>>()?;
            // The raw module handle, for cuModuleGetGlobal: taken from a loaded function.
            let mut raw_module: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: a valid function handle of a loaded module; out-parameter.
            unsafe { sys::cuFuncGetModule(&mut raw_module, functions[0].cu_function()) }
                .result()
                .map_err(|e| CudaError::Other(describe(e)))?;
            gpus.push(Gpu {
                ctx,
                streams,
                _module: module,
                functions,
                module: raw_module,
                events,
                marks: OnceLock::new(),
            });
        }
        let n = gpus.len();
        let mut peer = vec![vec![false; n]; n];
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                if ordinals[a] == ordinals[b] {
                    // Logical GPUs of one device share its memory.
                    peer[a][b] = true;
                    continue;
                }
                let mut can = 0;
                // SAFETY: device handles of open contexts; out-parameter.
                let ok = unsafe {
                    sys::cuDeviceCanAccessPeer(
                        &mut can,
                        gpus[a].ctx.cu_device(),
                        gpus[b].ctx.cu_device(),
                    )
                }
                .result()
                .is_ok();
                if ok && can == 1 {
                    gpus[a]
                        .ctx
                        .bind_to_thread()
                        .map_err(|e| CudaError::Other(describe(e)))?;
                    // SAFETY: enabling access from the current context (a) to b's context.
                    let r = unsafe { sys::cuCtxEnablePeerAccess(gpus[b].ctx.cu_ctx(), 0) };
                    peer[a][b] = matches!(
                        r,
                        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                    );
                }
            }
        }
        Ok(CudaDevice {
            gpus,
            ordinals: ordinals.to_vec(),
            images,
            peer,
            allocations: Mutex::new(Vec::new()),
            pinned: Mutex::new(Vec::new()),
        })
    }

    /// Driver ordinal of each GPU in use.
    pub fn ordinals(&self) -> &[usize] {
        &self.ordinals
    }

    /// What was loaded on each GPU ("sm_90 cubin").
    pub fn images(&self) -> &[String] {
        &self.images
    }

    /// (free, total) memory of a GPU in bytes.
    pub fn memory(&self, gpu: usize) -> Result<(usize, usize), DeviceError> {
        self.gpus[gpu]
            .ctx
            .mem_get_info()
            .map_err(failed("cuMemGetInfo"))
    }

    fn bind(&self, gpu: usize) -> Result<&Gpu, DeviceError> {
        let g = &self.gpus[gpu];
        g.ctx.bind_to_thread().map_err(failed("cuCtxSetCurrent"))?;
        Ok(g)
    }

    /// The timing marks of `gpu` (made on first use).
    fn marks(&self, gpu: usize) -> Result<&[CudaEvent], DeviceError> {
        let g = &self.gpus[gpu];
        if let Some(marks) = g.marks.get() {
            return Ok(marks);
        }
        let made = (0..MARKS)
            .map(|_| {
                g.ctx
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(failed("cuEventCreate"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(g.marks.get_or_init(|| made))
    }

    /// Wait for every stream of every GPU.
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        for g in &self.gpus {
            for s in &g.streams {
                s.synchronize().map_err(failed("cuStreamSynchronize"))?;
            }
        }
        Ok(())
    }

    /// Device-to-device copy bandwidth of `gpu` in bytes/s, counting bytes read and written
    /// (2 x size / time), over copies of `bytes` bytes timed with events.
    pub fn copy_bandwidth(&self, gpu: usize, bytes: usize) -> Result<f64, DeviceError> {
        let g = self.bind(gpu)?;
        let a = self.alloc(gpu, bytes)?;
        let b = self.alloc(gpu, bytes)?;
        let stream = &g.streams[Stream::Compute as usize];
        let start = g
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(failed("cuEventCreate"))?;
        let end = g
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(failed("cuEventCreate"))?;
        let reps = 10;
        // SAFETY: two live allocations of `bytes` bytes on this GPU.
        let copy = |d: u64, s: u64| {
            unsafe { sys::cuMemcpyDtoDAsync_v2(d, s, bytes, stream.cu_stream()) }
                .result()
                .map_err(failed("cuMemcpyDtoDAsync"))
        };
        copy(b, a)?;
        start.record(stream).map_err(failed("cuEventRecord"))?;
        for i in 0..reps {
            if i % 2 == 0 {
                copy(a, b)?;
            } else {
                copy(b, a)?;
            }
        }
        end.record(stream).map_err(failed("cuEventRecord"))?;
        end.synchronize().map_err(failed("cuEventSynchronize"))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(failed("cuEventElapsedTime"))?;
        self.free(a);
        self.free(b);
        Ok(2.0 * bytes as f64 * reps as f64 / (ms as f64 * 1e-3))
    }

    fn free(&self, ptr: Ptr) {
        let mut list = self.allocations.lock().expect("allocation list");
        if let Some(i) = list.iter().position(|&(_, p)| p == ptr) {
            let (gpu, p) = list.swap_remove(i);
            if self.gpus[gpu].ctx.bind_to_thread().is_ok() {
                // SAFETY: a live allocation of this context, no longer used.
                unsafe { sys::cuMemFree_v2(p) };
            }
        }
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        let _ = self.synchronize();
        for (gpu, p) in self
            .allocations
            .get_mut()
            .map(std::mem::take)
            .unwrap_or_default()
        {
            if self.gpus[gpu].ctx.bind_to_thread().is_ok() {
                // SAFETY: allocated by cuMemAlloc in this context; every stream is idle.
                unsafe { sys::cuMemFree_v2(p) };
            }
        }
        for (gpu, p) in self
            .pinned
            .get_mut()
            .map(std::mem::take)
            .unwrap_or_default()
        {
            if self.gpus[gpu].ctx.bind_to_thread().is_ok() {
                // SAFETY: allocated by cuMemHostAlloc; every stream is idle.
                unsafe { sys::cuMemFreeHost(p as *mut c_void) };
            }
        }
    }
}

impl Device for CudaDevice {
    fn gpus(&self) -> usize {
        self.gpus.len()
    }

    fn alloc(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError> {
        let g = self.bind(gpu)?;
        let mut p = 0;
        // SAFETY: out-parameter; size in bytes.
        match unsafe { sys::cuMemAlloc_v2(&mut p, bytes.max(1)) } {
            CUresult::CUDA_SUCCESS => {}
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                let free = g.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(0);
                return Err(DeviceError::OutOfMemory {
                    gpu,
                    requested: bytes as u64,
                    free,
                });
            }
            e => return Err(failed("cuMemAlloc")(DriverError(e))),
        }
        self.allocations
            .lock()
            .expect("allocation list")
            .push((gpu, p));
        let s = &g.streams[Stream::Compute as usize];
        // SAFETY: the allocation just made, `bytes` long.
        unsafe { sys::cuMemsetD8Async(p, 0, bytes, s.cu_stream()) }
            .result()
            .map_err(failed("cuMemsetD8Async"))?;
        s.synchronize().map_err(failed("cuStreamSynchronize"))?;
        Ok(p)
    }

    fn alloc_pinned(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError> {
        self.bind(gpu)?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-parameter; PORTABLE makes it usable from every context.
        match unsafe { sys::cuMemHostAlloc(&mut p, bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) } {
            CUresult::CUDA_SUCCESS => {}
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                return Err(DeviceError::OutOfMemory {
                    gpu,
                    requested: bytes as u64,
                    free: 0,
                })
            }
            e => return Err(failed("cuMemHostAlloc")(DriverError(e))),
        }
        // SAFETY: `bytes` writable bytes just allocated.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        self.pinned
            .lock()
            .expect("pinned list")
            .push((gpu, p as usize));
        Ok(p as Ptr)
    }

    fn upload(&self, gpu: usize, dst: Ptr, src: &[u8]) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        let s = &g.streams[Stream::Compute as usize];
        // SAFETY: `dst` is an allocation of this GPU at least `src.len()` long (engine contract).
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), src.len(), s.cu_stream()) }
            .result()
            .map_err(failed("cuMemcpyHtoDAsync"))?;
        s.synchronize().map_err(failed("cuStreamSynchronize"))
    }

    fn download(&self, gpu: usize, src: Ptr, dst: &mut [u8]) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        for s in &g.streams {
            s.synchronize().map_err(failed("cuStreamSynchronize"))?;
        }
        // SAFETY: `src` is an allocation of this GPU at least `dst.len()` long; streams idle.
        unsafe { sys::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, dst.len()) }
            .result()
            .map_err(failed("cuMemcpyDtoH"))
    }

    fn set_constant(&self, gpu: usize, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        let cname = CString::new(name).expect("symbol name");
        let (mut p, mut size) = (0, 0);
        // SAFETY: out-parameters; a loaded module.
        unsafe { sys::cuModuleGetGlobal_v2(&mut p, &mut size, g.module, cname.as_ptr()) }
            .result()
            .map_err(failed("cuModuleGetGlobal"))?;
        if size < bytes.len() {
            return Err(DeviceError::Failed(format!(
                "constant {name} holds {size} bytes, {} given",
                bytes.len()
            )));
        }
        self.upload(gpu, p, bytes)
    }

    unsafe fn launch<A: KernelArgs>(
        &self,
        gpu: usize,
        stream: Stream,
        kernel: Kernel,
        dims: Dims,
        args: &A,
    ) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        let f = &g.functions[kernel as usize];
        let mut params = [args as *const A as *mut c_void];
        sys::cuLaunchKernel(
            f.cu_function(),
            dims.grid[0],
            dims.grid[1],
            dims.grid[2],
            dims.block[0],
            dims.block[1],
            dims.block[2],
            0,
            g.streams[stream as usize].cu_stream(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
        .result()
        .map_err(|e| DeviceError::Failed(format!("launching {}: {}", kernel.name(), describe(e))))
    }

    fn copy_dtod(
        &self,
        gpu: usize,
        stream: Stream,
        dst: (usize, Ptr),
        src: (usize, Ptr),
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        let s = g.streams[stream as usize].cu_stream();
        // SAFETY: both are allocations of the named GPUs, `bytes` long (engine contract).
        unsafe {
            if dst.0 == src.0 {
                sys::cuMemcpyDtoDAsync_v2(dst.1, src.1, bytes, s)
                    .result()
                    .map_err(failed("cuMemcpyDtoDAsync"))
            } else {
                sys::cuMemcpyPeerAsync(
                    dst.1,
                    self.gpus[dst.0].ctx.cu_ctx(),
                    src.1,
                    self.gpus[src.0].ctx.cu_ctx(),
                    bytes,
                    s,
                )
                .result()
                .map_err(failed("cuMemcpyPeerAsync"))
            }
        }
    }

    fn copy_dtoh(
        &self,
        gpu: usize,
        stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        // SAFETY: `dst` is pinned memory and `src` device memory, `bytes` long.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                dst as *mut c_void,
                src,
                bytes,
                g.streams[stream as usize].cu_stream(),
            )
        }
        .result()
        .map_err(failed("cuMemcpyDtoHAsync"))
    }

    fn copy_htod(
        &self,
        gpu: usize,
        stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        // SAFETY: `src` is pinned memory and `dst` device memory, `bytes` long.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                dst,
                src as *const c_void,
                bytes,
                g.streams[stream as usize].cu_stream(),
            )
        }
        .result()
        .map_err(failed("cuMemcpyHtoDAsync"))
    }

    fn record(&self, gpu: usize, stream: Stream, event: Event) -> Result<(), DeviceError> {
        let g = &self.gpus[gpu];
        g.events[event as usize]
            .record(&g.streams[stream as usize])
            .map_err(failed("cuEventRecord"))
    }

    fn wait(
        &self,
        gpu: usize,
        stream: Stream,
        event_gpu: usize,
        event: Event,
    ) -> Result<(), DeviceError> {
        self.gpus[gpu].streams[stream as usize]
            .wait(&self.gpus[event_gpu].events[event as usize])
            .map_err(failed("cuStreamWaitEvent"))
    }

    fn sync_event(&self, gpu: usize, event: Event) -> Result<(), DeviceError> {
        self.gpus[gpu].events[event as usize]
            .synchronize()
            .map_err(failed("cuEventSynchronize"))
    }

    fn query(&self, gpu: usize, event: Event) -> Result<bool, DeviceError> {
        self.bind(gpu)?.events[event as usize]
            .try_is_complete()
            .map_err(failed("cuEventQuery"))
    }

    fn peer(&self, a: usize, b: usize) -> bool {
        self.peer[a][b]
    }

    fn has_marks(&self) -> bool {
        true
    }

    fn mark(&self, gpu: usize, slot: usize) -> Result<(), DeviceError> {
        let g = self.bind(gpu)?;
        self.marks(gpu)?[slot]
            .record(&g.streams[Stream::Compute as usize])
            .map_err(failed("cuEventRecord"))
    }

    fn mark_reached(&self, gpu: usize, slot: usize, wait: bool) -> Result<bool, DeviceError> {
        self.bind(gpu)?;
        let event = &self.marks(gpu)?[slot];
        if wait {
            event.synchronize().map_err(failed("cuEventSynchronize"))?;
            return Ok(true);
        }
        event.try_is_complete().map_err(failed("cuEventQuery"))
    }

    fn mark_seconds(&self, gpu: usize, from: usize, to: usize) -> Result<f64, DeviceError> {
        self.bind(gpu)?;
        let marks = self.marks(gpu)?;
        let ms = marks[from]
            .elapsed_ms(&marks[to])
            .map_err(failed("cuEventElapsedTime"))?;
        Ok(ms as f64 * 1e-3)
    }
}
