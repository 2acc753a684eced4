//! The CUDA slab engine's device on the host, shared by the host-kernel tests and the
//! checkpoint tests: `kernels/*.cu` built as a shared object with the host C++ compiler (no
//! floating-point contraction, so every operation rounds as the CPU backend's), and
//! [`HostDevice`], the engine's `Device` over plain memory that calls into it.
#![allow(dead_code)]

use libloading::Library;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};
use yee::backend::cuda::args::{Dims, Kernel, Ptr};
use yee::backend::cuda::engine::{Device, DeviceError, Event, KernelArgs, Stream, EVENTS, MARKS};
use yee::backend::cuda::source::{host_program, FILES, HOST_FILES};
use yee::model::Precision;

pub type Launcher = unsafe extern "C" fn(*const c_void, *const u32, *const u32);

/// The kernels of one precision, compiled for the host and loaded.
pub struct HostKernels {
    pub lib: Library,
    pub launchers: Vec<Launcher>,
}

/// Build (once per test process and precision) and load the host kernels.
pub fn host_kernels(precision: Precision) -> &'static HostKernels {
    host_kernels_variant(precision, true)
}

/// As [`host_kernels`], with the two-plane load pipeline of the main updates on or off
/// (`YEE_PIPELINE`, which only reorders loads: the results must not change).
pub fn host_kernels_variant(precision: Precision, pipeline: bool) -> &'static HostKernels {
    static CELLS: [OnceLock<HostKernels>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let cell = &CELLS[(precision == Precision::F64) as usize * 2 + pipeline as usize];
    let define = if pipeline {
        "-DYEE_PIPELINE=1"
    } else {
        "-DYEE_PIPELINE=0"
    };
    cell.get_or_init(|| build(precision, &[define], if pipeline { "" } else { "-nopipe" }))
}

/// As [`host_kernels`], with every launch running its blocks and threads in reverse order
/// (`YEE_HOST_REVERSE` in host_launch.h): a kernel whose threads read what others write in
/// the same launch gives other results in the two orders; a GPU runs them in any order.
pub fn host_kernels_reversed(precision: Precision) -> &'static HostKernels {
    static CELLS: [OnceLock<HostKernels>; 2] = [OnceLock::new(), OnceLock::new()];
    CELLS[(precision == Precision::F64) as usize]
        .get_or_init(|| build(precision, &["-DYEE_HOST_REVERSE=1"], "-reversed"))
}

/// Build the host kernels of `precision` with the extra `defines` into a folder named with
/// `tag`, and load them.
fn build(precision: Precision, defines: &[&str], tag: &str) -> HostKernels {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "host-kernels-{}-{}{tag}",
        std::process::id(),
        precision.name()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, text) in FILES.iter().chain(HOST_FILES.iter()) {
        std::fs::write(dir.join(name), text).expect("write kernel source");
    }
    let main = dir.join("host.cpp");
    std::fs::write(&main, host_program(precision)).expect("write host program");
    let so = dir.join("libyee_host_kernels.so");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    // -ffp-contract=off: no fused multiply-add, so every product and sum is rounded as in
    // the Rust CPU backend.
    let out = Command::new(&cxx)
        .arg("-std=c++17")
        .args(defines)
        .args([
            "-O2",
            "-fPIC",
            "-shared",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-Wall",
            "-Wno-unused-function",
            "-o",
        ])
        .arg(&so)
        .arg(&main)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C++ compiler `{cxx}` (set CXX): {e}"));
    assert!(
        out.status.success(),
        "host build of kernels/*.cu failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: loading a library this test just built; its initialisers do nothing.
    let lib = unsafe { Library::new(&so) }.expect("load host kernels");
    let launchers = Kernel::ALL
        .iter()
        .map(|k| {
            let name = format!("yee_host_{}", k.name());
            // SAFETY: the launcher signature of host_launch.h.
            *unsafe { lib.get::<Launcher>(name.as_bytes()) }
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect();
    HostKernels { lib, launchers }
}

/// The constant tables are globals of the shared object: one test at a time sets them.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the engine asked the device to do.
#[derive(Debug, Default, Clone)]
pub struct Log {
    pub launches: HashMap<&'static str, usize>,
    pub local_copies: usize,
    pub peer_copies: usize,
    pub to_pinned: usize,
    pub from_pinned: usize,
    pub waits: usize,
    pub records: usize,
    /// Bytes the engine asked for with `alloc` (device) and `alloc_pinned` (host).
    pub device_bytes: usize,
    pub pinned_bytes: usize,
    /// Bytes read back with the synchronous `download`.
    pub downloaded: usize,
    /// Timing marks recorded.
    pub marks: usize,
}

/// The engine's device on the host: memory is the heap, a launch runs the kernel over its
/// whole grid at once, events are complete when recorded; but `query` may report an event
/// as not yet happened `lag` times after each record (as a GPU that is behind the host
/// would), and a launch may be made to fail, after which every call fails (as CUDA errors are
/// sticky).
pub struct HostDevice {
    pub kernels: &'static HostKernels,
    pub gpus: usize,
    pub peer: bool,
    pub memory: RefCell<Vec<Box<[u64]>>>,
    pub log: RefCell<Log>,
    pub lag: usize,
    pub lagging: RefCell<HashMap<(usize, usize), usize>>,
    /// When each timing mark (GPU, slot) was last recorded.
    pub marks: RefCell<HashMap<(usize, usize), std::time::Instant>>,
    pub launches_before_failure: Cell<Option<usize>>,
    pub failed: Cell<bool>,
}

impl HostDevice {
    pub fn new(precision: Precision, gpus: usize, peer: bool) -> Self {
        Self::with_kernels(host_kernels(precision), gpus, peer)
    }

    pub fn with_kernels(kernels: &'static HostKernels, gpus: usize, peer: bool) -> Self {
        HostDevice {
            kernels,
            gpus,
            peer,
            memory: RefCell::new(Vec::new()),
            log: RefCell::new(Log::default()),
            lag: 0,
            lagging: RefCell::new(HashMap::new()),
            marks: RefCell::new(HashMap::new()),
            launches_before_failure: Cell::new(None),
            failed: Cell::new(false),
        }
    }

    pub fn lagging(mut self, lag: usize) -> Self {
        self.lag = lag;
        self
    }

    pub fn sticky(&self) -> Result<(), DeviceError> {
        if self.failed.get() {
            Err(DeviceError::Failed(
                "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".into(),
            ))
        } else {
            Ok(())
        }
    }

    pub fn zeroed(&self, bytes: usize) -> Ptr {
        let mut b = vec![0u64; bytes.div_ceil(8).max(1)].into_boxed_slice();
        let p = b.as_mut_ptr() as Ptr;
        self.memory.borrow_mut().push(b);
        p
    }
}

fn copy(dst: Ptr, src: Ptr, bytes: usize) {
    // SAFETY: both are allocations of this device (or host slices) at least `bytes` long.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) }
}

impl Device for HostDevice {
    fn gpus(&self) -> usize {
        self.gpus
    }
    fn alloc(&self, _gpu: usize, bytes: usize) -> Result<Ptr, DeviceError> {
        self.log.borrow_mut().device_bytes += bytes;
        Ok(self.zeroed(bytes))
    }
    fn alloc_pinned(&self, _gpu: usize, bytes: usize) -> Result<Ptr, DeviceError> {
        self.log.borrow_mut().pinned_bytes += bytes;
        Ok(self.zeroed(bytes))
    }
    fn upload(&self, _gpu: usize, dst: Ptr, src: &[u8]) -> Result<(), DeviceError> {
        copy(dst, src.as_ptr() as Ptr, src.len());
        Ok(())
    }
    fn download(&self, _gpu: usize, src: Ptr, dst: &mut [u8]) -> Result<(), DeviceError> {
        self.sticky()?;
        copy(dst.as_mut_ptr() as Ptr, src, dst.len());
        self.log.borrow_mut().downloaded += dst.len();
        Ok(())
    }
    fn set_constant(&self, _gpu: usize, name: &str, bytes: &[u8]) -> Result<(), DeviceError> {
        // SAFETY: c_ca / c_cb are arrays of MAX_MATERIALS reals in the shared object.
        let sym = unsafe { self.kernels.lib.get::<*mut u8>(name.as_bytes()) }
            .map_err(|e| DeviceError::Failed(e.to_string()))?;
        copy(*sym as Ptr, bytes.as_ptr() as Ptr, bytes.len());
        Ok(())
    }
    unsafe fn launch<A: KernelArgs>(
        &self,
        _gpu: usize,
        stream: Stream,
        kernel: Kernel,
        dims: Dims,
        args: &A,
    ) -> Result<(), DeviceError> {
        assert!(
            stream != Stream::Monitor,
            "kernels run on the compute or halo stream"
        );
        if let Some(left) = self.launches_before_failure.get() {
            if left == 0 {
                self.failed.set(true);
            }
            self.launches_before_failure.set(left.checked_sub(1));
        }
        self.sticky()?;
        *self
            .log
            .borrow_mut()
            .launches
            .entry(kernel.name())
            .or_default() += 1;
        (self.kernels.launchers[kernel as usize])(
            args as *const A as *const c_void,
            dims.grid.as_ptr(),
            dims.block.as_ptr(),
        );
        Ok(())
    }
    fn copy_dtod(
        &self,
        _gpu: usize,
        _stream: Stream,
        dst: (usize, Ptr),
        src: (usize, Ptr),
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let mut log = self.log.borrow_mut();
        if dst.0 == src.0 {
            log.local_copies += 1;
        } else {
            assert!(self.peer, "a peer copy between GPUs without peer access");
            log.peer_copies += 1;
        }
        copy(dst.1, src.1, bytes);
        Ok(())
    }
    fn copy_dtoh(
        &self,
        _gpu: usize,
        _stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.log.borrow_mut().to_pinned += 1;
        copy(dst, src, bytes);
        Ok(())
    }
    fn copy_htod(
        &self,
        _gpu: usize,
        _stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        self.log.borrow_mut().from_pinned += 1;
        copy(dst, src, bytes);
        Ok(())
    }
    fn record(&self, gpu: usize, _stream: Stream, event: Event) -> Result<(), DeviceError> {
        self.sticky()?;
        self.log.borrow_mut().records += 1;
        self.lagging
            .borrow_mut()
            .insert((gpu, event as usize), self.lag);
        Ok(())
    }
    fn wait(
        &self,
        _gpu: usize,
        _stream: Stream,
        _event_gpu: usize,
        _event: Event,
    ) -> Result<(), DeviceError> {
        self.log.borrow_mut().waits += 1;
        Ok(())
    }
    fn sync_event(&self, gpu: usize, event: Event) -> Result<(), DeviceError> {
        self.sticky()?;
        self.lagging.borrow_mut().remove(&(gpu, event as usize));
        Ok(())
    }
    fn query(&self, gpu: usize, event: Event) -> Result<bool, DeviceError> {
        self.sticky()?;
        match self.lagging.borrow_mut().get_mut(&(gpu, event as usize)) {
            Some(left) if *left > 0 => {
                *left -= 1;
                Ok(false)
            }
            _ => Ok(true),
        }
    }
    fn peer(&self, _a: usize, _b: usize) -> bool {
        self.peer
    }
    fn has_marks(&self) -> bool {
        true
    }
    fn mark(&self, gpu: usize, slot: usize) -> Result<(), DeviceError> {
        assert!(slot < MARKS, "mark {slot} of {MARKS}");
        self.sticky()?;
        self.log.borrow_mut().marks += 1;
        // Everything queued before ran at its call: the mark is the moment of recording.
        self.marks
            .borrow_mut()
            .insert((gpu, slot), std::time::Instant::now());
        self.lagging
            .borrow_mut()
            .insert((gpu, EVENTS + slot), self.lag);
        Ok(())
    }
    fn mark_reached(&self, gpu: usize, slot: usize, wait: bool) -> Result<bool, DeviceError> {
        self.sticky()?;
        assert!(
            self.marks.borrow().contains_key(&(gpu, slot)),
            "mark {slot} of GPU {gpu} read before it was recorded"
        );
        let mut lagging = self.lagging.borrow_mut();
        match lagging.get_mut(&(gpu, EVENTS + slot)) {
            Some(left) if *left > 0 && !wait => {
                *left -= 1;
                Ok(false)
            }
            _ => {
                lagging.remove(&(gpu, EVENTS + slot));
                Ok(true)
            }
        }
    }
    fn mark_seconds(&self, gpu: usize, from: usize, to: usize) -> Result<f64, DeviceError> {
        self.sticky()?;
        let marks = self.marks.borrow();
        let (a, b) = (marks[&(gpu, from)], marks[&(gpu, to)]);
        assert!(
            self.lagging.borrow().get(&(gpu, EVENTS + to)).is_none(),
            "the time to mark {to} of GPU {gpu} read before it was reached"
        );
        Ok(b.duration_since(a).as_secs_f64())
    }
}
