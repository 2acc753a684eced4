//! The device abstraction: what the engine needs from the hardware (allocate, copy, launch,
//! record and wait on events). The CUDA driver implements it in production
//! ([`crate::backend::cuda::CudaDevice`]), the host-compiled kernels in the tests.

use super::super::args::*;

/// A stream of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Field updates, sources, monitors' gathers.
    Compute = 0,
    /// Halo plane copies.
    Halo = 1,
    /// Monitor staging to pinned host memory.
    Monitor = 2,
}

/// The events each GPU records (one of each, re-recorded every half step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Start of a half step on the compute stream.
    PhaseStart = 0,
    /// Boundary planes updated (compute stream).
    Boundary = 1,
    /// Staged halo planes are in pinned memory (halo stream of the source GPU).
    Staged = 2,
    /// Every halo copy this GPU's halo stream issued has landed.
    Copied = 3,
    /// Monitor values gathered into device staging (compute stream).
    Gathered = 4,
    /// Monitor staging copied to pinned host memory (monitor stream).
    MonitorsDone = 5,
    /// A gather outside the monitor schedule has reached pinned memory (compute stream).
    Fallback = 6,
    /// Probe rows queued so far are in the device ring (compute stream).
    ProbesQueued = 7,
    /// Probe rows requested so far are in the pinned ring (monitor stream).
    ProbesCopied = 8,
    /// A plane for another process has reached pinned memory (compute stream).
    PlaneRead = 9,
    /// The halo planes from other processes written so far have left pinned memory (compute
    /// stream).
    HaloWritten = 10,
    /// The surface ports' values for the GPUs beside are packed (and, for one without peer
    /// access, in pinned memory) (compute stream).
    PortsPacked = 11,
    /// The surface ports' values from the GPUs beside have landed (compute stream).
    PortsReceived = 12,
}

/// Number of [`Event`] kinds.
pub const EVENTS: usize = 13;

/// Timing marks each GPU holds ([`Device::mark`]): the engine's clock records into them in
/// turn and reads each pair back once the GPU has passed it, so the host may run this many
/// marks ahead of the GPU before the clock skips a sample. A run records about 7 a step on
/// average (a sampled step a few tens), so this is over 100 steps, more than the driver's
/// launch queue lets the host run ahead; and making them (each engine of a B-scan's traces
/// makes its own) costs about a millisecond.
pub const MARKS: usize = 1024;

/// Why a device operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeviceError {
    /// An allocation did not fit.
    #[error("out of memory on GPU {gpu} allocating {requested} bytes ({free} bytes free)")]
    OutOfMemory {
        /// Index of the GPU among those used.
        gpu: usize,
        /// Bytes asked for.
        requested: u64,
        /// Bytes free on the device when it failed.
        free: u64,
    },
    /// Anything else, with the driver's words.
    #[error("{0}")]
    Failed(String),
}

/// Argument structs a kernel may be launched with (`#[repr(C)]` mirrors of `common.cuh`).
///
/// # Safety
/// Implement only for plain `#[repr(C)]` structs whose layout matches a kernel argument.
pub unsafe trait KernelArgs: Copy {}
unsafe impl<T: Copy> KernelArgs for UpdateArgs<T> {}
unsafe impl<T: Copy> KernelArgs for CpmlArgs<T> {}
unsafe impl<T: Copy> KernelArgs for SourceArgs<T> {}
unsafe impl KernelArgs for PecArgs {}
unsafe impl KernelArgs for ProbeArgs {}
unsafe impl KernelArgs for GatherArgs {}
unsafe impl KernelArgs for FiniteArgs {}
unsafe impl KernelArgs for NegateArgs {}
unsafe impl KernelArgs for FluxArgs {}
unsafe impl KernelArgs for FluxRowsArgs {}
// SAFETY: as above, `#[repr(C)]` plain data matching kernels/common.cuh.
// SAFETY: as above.
unsafe impl<T: Copy> KernelArgs for DispersiveArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelArgs for TfsfIncidentArgs<T> {}
// SAFETY: as above.
unsafe impl<T: Copy> KernelArgs for TfsfArgs<T> {}
// SAFETY: as above.
unsafe impl KernelArgs for ConformalArgs {}
// SAFETY: mirrors `LumpedArgs` of kernels/common.cuh field for field (`arg_sizes`).
unsafe impl KernelArgs for LumpedArgs {}
// SAFETY: mirrors `BlochArgs` of kernels/common.cuh field for field (`arg_sizes`).
unsafe impl<T: Copy> KernelArgs for BlochArgs<T> {}
// SAFETY: mirrors `PortEdgesArgs` of kernels/common.cuh field for field (`arg_sizes`).
unsafe impl KernelArgs for PortEdgesArgs {}
// SAFETY: mirrors `PortDriveArgs` of kernels/common.cuh field for field (`arg_sizes`).
unsafe impl<T: Copy> KernelArgs for PortDriveArgs<T> {}
// SAFETY: mirrors `PortPolesArgs` of kernels/common.cuh field for field (`arg_sizes`).
unsafe impl KernelArgs for PortPolesArgs {}

/// What the engine needs from the hardware. GPUs are numbered 0.. among those used.
///
/// Operations on a stream are asynchronous and ordered within the stream; `record` / `wait`
/// order streams against each other (across GPUs too). A device that runs everything at once
/// in call order (the host test device) satisfies this trivially.
pub trait Device {
    /// Number of GPUs.
    fn gpus(&self) -> usize;
    /// Zero-filled device memory, freed when the device is dropped.
    fn alloc(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError>;
    /// Zero-filled page-locked host memory usable by every GPU, freed when the device is dropped.
    fn alloc_pinned(&self, gpu: usize, bytes: usize) -> Result<Ptr, DeviceError>;
    /// Copy host bytes to the device, synchronously.
    fn upload(&self, gpu: usize, dst: Ptr, src: &[u8]) -> Result<(), DeviceError>;
    /// Copy device bytes to the host after all queued work on the GPU, synchronously.
    fn download(&self, gpu: usize, src: Ptr, dst: &mut [u8]) -> Result<(), DeviceError>;
    /// Set a `__constant__` symbol of the kernel module.
    fn set_constant(&self, gpu: usize, name: &str, bytes: &[u8]) -> Result<(), DeviceError>;
    /// Queue a kernel.
    ///
    /// # Safety
    /// `args` must be the argument struct of `kernel` for the module's precision, and every
    /// pointer in it valid for what the kernel touches under `dims`.
    unsafe fn launch<A: KernelArgs>(
        &self,
        gpu: usize,
        stream: Stream,
        kernel: Kernel,
        dims: Dims,
        args: &A,
    ) -> Result<(), DeviceError>;
    /// Queue a device-to-device copy on `gpu`'s `stream` (same GPU, or peer).
    fn copy_dtod(
        &self,
        gpu: usize,
        stream: Stream,
        dst: (usize, Ptr),
        src: (usize, Ptr),
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// Queue a device-to-pinned-host copy.
    fn copy_dtoh(
        &self,
        gpu: usize,
        stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// Queue a pinned-host-to-device copy.
    fn copy_htod(
        &self,
        gpu: usize,
        stream: Stream,
        dst: Ptr,
        src: Ptr,
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// Record `event` of `gpu` on `stream` of `gpu`.
    fn record(&self, gpu: usize, stream: Stream, event: Event) -> Result<(), DeviceError>;
    /// Make `stream` of `gpu` wait for `event` of `event_gpu`.
    fn wait(
        &self,
        gpu: usize,
        stream: Stream,
        event_gpu: usize,
        event: Event,
    ) -> Result<(), DeviceError>;
    /// Block the host until `event` of `gpu` has happened.
    fn sync_event(&self, gpu: usize, event: Event) -> Result<(), DeviceError>;
    /// True if `event` of `gpu` has happened (or was never recorded); never waits.
    fn query(&self, gpu: usize, event: Event) -> Result<bool, DeviceError>;
    /// True if `a` can read and write `b`'s memory directly (peer access enabled).
    fn peer(&self, a: usize, b: usize) -> bool;
    /// True if the device records timing marks ([`Device::mark`]); without them the engine
    /// reports no device times.
    fn has_marks(&self) -> bool {
        false
    }
    /// Record timing mark `slot` (below [`MARKS`]) of `gpu` on its compute stream: the moment
    /// the stream reaches it.
    fn mark(&self, _gpu: usize, _slot: usize) -> Result<(), DeviceError> {
        Err(DeviceError::Failed(
            "this device records no timing marks".into(),
        ))
    }
    /// True if the compute stream of `gpu` has passed mark `slot`; with `wait`, block the host
    /// until it has.
    fn mark_reached(&self, _gpu: usize, _slot: usize, _wait: bool) -> Result<bool, DeviceError> {
        Err(DeviceError::Failed(
            "this device records no timing marks".into(),
        ))
    }
    /// Seconds from mark `from` to mark `to` of `gpu`, both reached.
    fn mark_seconds(&self, _gpu: usize, _from: usize, _to: usize) -> Result<f64, DeviceError> {
        Err(DeviceError::Failed(
            "this device records no timing marks".into(),
        ))
    }
}

pub(super) fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: any initialised memory may be read as bytes; the length is the slice's size.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The bytes of `v`, writable: for plain numbers (f32, f64 and integers), which take any bits.
pub(super) fn bytes_of_mut<T: Copy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: the slice's own memory, its size in bytes; the callers' element types accept
    // any bit pattern.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}
