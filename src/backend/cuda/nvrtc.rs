//! Run-time compilation of the kernels with NVRTC, loaded dynamically through cudarc.
//!
//! The kernels are compiled to a CUBIN for the GPU's own architecture (`sm_XY`) whenever
//! the NVRTC knows it: a CUBIN is machine code, so the driver loads it without the PTX
//! just-in-time step that rejects PTX from an NVRTC newer than the driver
//! (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). For an architecture newer than the NVRTC, the newest
//! one it knows is compiled to PTX (`compute_XY`) for the driver to finish.
//!
//! Options: `--fmad=false` keeps every multiply and add separately rounded, as on the CPU, so
//! GPU and CPU fields agree to rounding; the update is bound by memory, not arithmetic.

use super::source::{program, FILES};
pub use super::NvrtcError;
use super::NVRTC_NOT_FOUND;
use crate::model::Precision;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};

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
pub fn compile(precision: Precision, cc: i32, cubin: bool) -> Result<Image, NvrtcError> {
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
        "--std=c++17".into(),
    ];
    // Tuning: YEE_CUDA_PIPELINE=0 turns off the two-plane load pipeline of the main updates.
    if std::env::var("YEE_CUDA_PIPELINE").is_ok_and(|v| v.trim() == "0") {
        options.push("-DYEE_PIPELINE=0".into());
    }
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
