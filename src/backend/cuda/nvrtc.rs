//! Run-time compilation of the kernels with NVRTC, loaded dynamically through cudarc.
//!
//! The kernels are compiled to a CUBIN for the GPU's own architecture (`sm_XY`) whenever
//! the NVRTC knows it: a CUBIN is machine code, so the driver loads it without the PTX
//! just-in-time step that rejects PTX from an NVRTC newer than the driver
//! (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). For an architecture newer than the NVRTC, the newest
//! one it knows is compiled to PTX (`compute_XY`) for the driver to finish.
//!
//! Options: `--fmad=false` keeps every multiply and add separately rounded, as on the CPU; the
//! update is bound by memory, not arithmetic. `--ftz=true` flushes f32 subnormals to zero, as
//! the CPU backend's threads do (`crate::fpu`). With the DFT weights computed on the host
//! (`crate::flux::phasor`), no kernel calls a transcendental function, so an f32 run on a GPU
//! gives the CPU's bits; in f64 they differ only once values go subnormal, which a GPU cannot
//! flush in double precision.

use super::source::{program, FILES};
pub use super::NvrtcError;
use super::NVRTC_NOT_FOUND;
use crate::model::Precision;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};
use std::sync::Mutex;

/// What NVRTC produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// Machine code for one architecture.
    Cubin,
    /// PTX for the driver to compile.
    Ptx,
}

/// A compiled kernel module.
#[derive(Debug, Clone)]
pub struct Image {
    /// CUBIN bytes, or PTX text with a trailing NUL.
    pub bytes: Vec<u8>,
    /// CUBIN or PTX.
    pub kind: ImageKind,
    /// The architecture, e.g. "sm_90" or "compute_90".
    pub arch: String,
    /// NVRTC's log (warnings), if any.
    pub log: String,
}

/// True if a libnvrtc can be loaded (never panics).
pub fn available() -> bool {
    // SAFETY: dlopen of candidate names only; nothing is called.
    unsafe { sys::is_culib_present() }
}

/// NVRTC's description of a result code.
fn describe(r: sys::nvrtcResult) -> String {
    // SAFETY: nvrtcGetErrorString returns a static C string for any result code.
    unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(r)) }
        .to_string_lossy()
        .into_owned()
}

fn check(r: sys::nvrtcResult, call: &'static str) -> Result<(), NvrtcError> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    Err(NvrtcError::Call {
        call,
        message: describe(r),
    })
}

/// NVRTC's version (major, minor).
pub fn version() -> Result<(i32, i32), NvrtcError> {
    if !available() {
        return Err(NvrtcError::NotFound);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-parameters.
    check(
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) },
        "nvrtcVersion",
    )?;
    Ok((major, minor))
}

/// The SM architectures this NVRTC can compile for, e.g. [75, 80, 86, 89, 90, 100, 120].
pub fn supported_archs() -> Result<Vec<i32>, NvrtcError> {
    if !available() {
        return Err(NvrtcError::NotFound);
    }
    let mut n = 0;
    // SAFETY: out-parameter, then a buffer of the size NVRTC gave.
    unsafe {
        check(
            sys::nvrtcGetNumSupportedArchs(&mut n),
            "nvrtcGetNumSupportedArchs",
        )?;
        let mut v = vec![0; n.max(0) as usize];
        check(
            sys::nvrtcGetSupportedArchs(v.as_mut_ptr()),
            "nvrtcGetSupportedArchs",
        )?;
        Ok(v)
    }
}

/// The message when no libnvrtc can be loaded.
pub fn not_found() -> String {
    NVRTC_NOT_FOUND.into()
}

/// The file a loaded library was mapped from, by name fragment (e.g. "libnvrtc.so").
pub fn loaded_library(fragment: &str) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with(fragment))
        })
        .map(str::to_string)
}

/// Compile every kernel for `precision`: a CUBIN for `sm_{cc}` when `cubin`, else PTX for
/// `compute_{cc}` (cc = 10 major + minor, e.g. 90).
///
/// Each image is compiled once per process and kept: a B-scan builds an engine per trace
/// (several at once on a GPU), and NVRTC takes about half a second for the whole program,
/// longer than a small trace's steps. A failed compile is not kept (the next call tries
/// again and reports the same log).
pub fn compile(precision: Precision, cc: i32, cubin: bool) -> Result<Image, NvrtcError> {
    let key = (precision, cc, cubin);
    // The lock is held through the compile: engines built at once wait for one compile
    // instead of each running NVRTC.
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(k) = kept.iter().find(|k| k.key == key) {
        return Ok(k.image.clone());
    }
    let image = compile_with(precision, cc, cubin, &[])?;
    kept.push(Kept {
        key,
        image: image.clone(),
    });
    Ok(image)
}

/// How many times this process ran NVRTC through [`compile`] for `precision`, `cc` and
/// `cubin` (each compile's image is kept): once at most, however many engines were built (a
/// check that they share it).
pub fn programs_compiled(precision: Precision, cc: i32, cubin: bool) -> usize {
    let kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    kept.iter()
        .filter(|k| k.key == (precision, cc, cubin))
        .count()
}

/// A compiled image kept for the rest of the process, by precision, architecture and kind.
struct Kept {
    key: (Precision, i32, bool),
    image: Image,
}

static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// What the assembler gave one kernel of a CUBIN (`ptxas -v`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel's `extern "C"` name.
    pub name: String,
    /// Registers per thread: with the block size, what limits how many threads an SM holds.
    pub registers: u32,
    /// Bytes of per-thread stack (local memory): a struct copied out of the arguments, an
    /// array indexed at run time, or a call that was not inlined.
    pub stack: u32,
    /// Bytes of registers spilled to local memory (stored, loaded).
    pub spills: (u32, u32),
    /// Bytes of static shared memory per block.
    pub shared: u32,
}

/// Every kernel's registers, local memory and shared memory in a CUBIN for `sm_{cc}` of
/// `precision`, as the assembler reports them: a check, with no GPU, that no kernel runs from
/// local memory, and a clue to a kernel's occupancy.
pub fn kernel_resources(precision: Precision, cc: i32) -> Result<Vec<KernelResources>, NvrtcError> {
    let image = compile_with(precision, cc, true, &["--ptxas-options=-v"])?;
    Ok(parse_resources(&image.log))
}

/// The kernels of a `ptxas -v` log: each "Compiling entry function 'NAME'" line, then its
/// "N bytes stack frame, N bytes spill stores, N bytes spill loads" and "Used N registers,
/// ... N bytes smem" lines.
fn parse_resources(log: &str) -> Vec<KernelResources> {
    // The number just before `unit` in `line` ("Used 64 registers" -> 64), 0 if absent.
    fn before(line: &str, unit: &str) -> u32 {
        line.find(unit)
            .and_then(|i| line[..i].split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
    let mut out: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            out.push(KernelResources {
                name,
                ..Default::default()
            });
        } else if let Some(k) = out.last_mut() {
            if line.contains("bytes stack frame") {
                k.stack = before(line, "bytes stack frame");
                k.spills = (
                    before(line, "bytes spill stores"),
                    before(line, "bytes spill loads"),
                );
            } else if line.contains("registers") {
                k.registers = before(line, "registers");
                k.shared = before(line, "bytes smem");
            }
        }
    }
    out
}

/// [`compile`] with `extra` NVRTC options.
fn compile_with(
    precision: Precision,
    cc: i32,
    cubin: bool,
    extra: &[&str],
) -> Result<Image, NvrtcError> {
    if !available() {
        return Err(NvrtcError::NotFound);
    }
    let arch = if cubin {
        format!("sm_{cc}")
    } else {
        format!("compute_{cc}")
    };
    let src = CString::new(program(precision)).expect("no NUL in the kernel sources");
    let names: Vec<CString> = FILES
        .iter()
        .map(|(n, _)| CString::new(*n).expect("file name"))
        .collect();
    let texts: Vec<CString> = FILES
        .iter()
        .map(|(_, t)| CString::new(*t).expect("no NUL in the kernel sources"))
        .collect();
    let name_ptrs: Vec<*const c_char> = names.iter().map(|c| c.as_ptr()).collect();
    let text_ptrs: Vec<*const c_char> = texts.iter().map(|c| c.as_ptr()).collect();
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--fmad=false".into(),
        "--ftz=true".into(),
        "--std=c++17".into(),
    ];
    // Tuning: YEE_CUDA_PIPELINE=0 turns off the two-plane load pipeline of the main updates.
    if crate::tuning::tuning().cuda_pipeline_off {
        options.push("-DYEE_PIPELINE=0".into());
    }
    options.extend(extra.iter().map(|o| o.to_string()));
    let options: Vec<CString> = options
        .into_iter()
        .map(|o| CString::new(o).expect("option"))
        .collect();
    let option_ptrs: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer handed to NVRTC points into a CString alive until the end of this
    // function; the program is destroyed before returning.
    unsafe {
        check(
            sys::nvrtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                c"yee.cu".as_ptr(),
                FILES.len() as i32,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            ),
            "nvrtcCreateProgram",
        )?;
        let compiled =
            sys::nvrtcCompileProgram(prog, option_ptrs.len() as i32, option_ptrs.as_ptr());
        let log = program_log(prog);
        let out = if compiled != sys::nvrtcResult::NVRTC_SUCCESS {
            Err(NvrtcError::Compile {
                arch: arch.clone(),
                precision: precision.name(),
                message: describe(compiled),
                log: log.clone(),
            })
        } else {
            Ok(())
        };
        let image = out.and_then(|()| extract(prog, cubin, arch, log));
        sys::nvrtcDestroyProgram(&mut prog);
        image
    }
}

/// The CUBIN or PTX of a compiled program.
///
/// # Safety
/// `prog` must be a live, successfully compiled program.
unsafe fn extract(
    prog: sys::nvrtcProgram,
    cubin: bool,
    arch: String,
    log: String,
) -> Result<Image, NvrtcError> {
    let mut size = 0;
    let mut bytes;
    if cubin {
        check(sys::nvrtcGetCUBINSize(prog, &mut size), "nvrtcGetCUBINSize")?;
        bytes = vec![0u8; size];
        check(
            sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr().cast()),
            "nvrtcGetCUBIN",
        )?;
    } else {
        check(sys::nvrtcGetPTXSize(prog, &mut size), "nvrtcGetPTXSize")?;
        bytes = vec![0u8; size];
        check(
            sys::nvrtcGetPTX(prog, bytes.as_mut_ptr().cast()),
            "nvrtcGetPTX",
        )?;
    }
    let kind = if cubin {
        ImageKind::Cubin
    } else {
        ImageKind::Ptx
    };
    Ok(Image {
        bytes,
        kind,
        arch,
        log,
    })
}

/// # Safety
/// `prog` must be a live program.
unsafe fn program_log(prog: sys::nvrtcProgram) -> String {
    let mut size = 0;
    if sys::nvrtcGetProgramLogSize(prog, &mut size) != sys::nvrtcResult::NVRTC_SUCCESS || size <= 1
    {
        return String::new();
    }
    let mut buf = vec![0u8; size];
    if sys::nvrtcGetProgramLog(prog, buf.as_mut_ptr().cast()) != sys::nvrtcResult::NVRTC_SUCCESS {
        return String::new();
    }
    CStr::from_bytes_until_nul(&buf)
        .map(|c| c.to_string_lossy().trim().to_string())
        .unwrap_or_default()
}

/// The architecture to compile for on a GPU of compute capability `cc` (10 major + minor):
/// (cc, true) for a CUBIN when NVRTC supports it, else the newest supported one not above
/// `cc`, as PTX.
pub fn target_for(cc: i32, supported: &[i32]) -> Option<(i32, bool)> {
    if supported.contains(&cc) {
        return Some((cc, true));
    }
    supported
        .iter()
        .copied()
        .filter(|&a| a <= cc)
        .max()
        .map(|a| (a, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ptxas_log_gives_each_kernels_registers_stack_spills_and_shared_memory() {
        let log = "ptxas info    : 272 bytes gmem
ptxas info    : Compiling entry function 'update_fused_tiled' for 'sm_90'
ptxas info    : Function properties for update_fused_tiled
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 13068 bytes smem
ptxas info    : Compile time = 64.446 ms
ptxas info    : Compiling entry function 'dispersive' for 'sm_90'
ptxas info    : Function properties for dispersive
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers";
        assert_eq!(
            parse_resources(log),
            vec![
                KernelResources {
                    name: "update_fused_tiled".into(),
                    registers: 128,
                    stack: 0,
                    spills: (0, 0),
                    shared: 13068,
                },
                KernelResources {
                    name: "dispersive".into(),
                    registers: 32,
                    stack: 16,
                    spills: (8, 4),
                    shared: 0,
                },
            ]
        );
    }
}
