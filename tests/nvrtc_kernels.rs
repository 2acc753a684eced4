//! Every kernel in `kernels/` compiled by NVRTC (design.md section 8, layer 2): f32 and f64,
//! for sm_80 and sm_90, both as machine code (CUBIN, what the backend loads) and as PTX (to
//! check that every kernel the backend launches is in the module).
//!
//! NVRTC needs no GPU: the test command installs the `nvidia-cuda-nvrtc-cu12` wheel and puts
//! its lib folder on LD_LIBRARY_PATH. With CI=true (or YEE_REQUIRE_NVRTC=1) these tests fail
//! when NVRTC cannot be loaded; elsewhere they skip with a notice.
#![cfg(feature = "cuda")]

use yee::backend::cuda::args::Kernel;
use yee::backend::cuda::nvrtc::{self, ImageKind};
use yee::model::{Precision, MAX_MATERIALS};

/// True if the PTX text has instruction `op` (the whole opcode, followed by its operands).
fn has_op(ptx: &str, op: &str) -> bool {
    ptx.match_indices(op).any(|(i, _)| {
        ptx[i + op.len()..].starts_with([' ', '\t']) && ptx[..i].ends_with([' ', '\t', '\n'])
    })
}

/// The PTX of kernel `name`: from its `.entry` to the next one (or the end).
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("kernel {name} missing from the PTX"));
    let rest = &ptx[start + 1..];
    let end = rest.find(".entry ").map_or(rest.len(), |e| e);
    &rest[..end]
}

fn required() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("YEE_REQUIRE_NVRTC")
}

/// True if NVRTC is there; panics when CI requires it, else prints why the test skips.
fn nvrtc_present() -> bool {
    if nvrtc::available() {
        return true;
    }
    if required() {
        panic!(
            "CI requires NVRTC but it cannot be loaded: {}",
            nvrtc::not_found()
        );
    }
    eprintln!("skipping: {}", nvrtc::not_found());
    false
}

fn compiles_everywhere(precision: Precision, cc: i32) {
    if !nvrtc_present() {
        return;
    }
    let cubin = nvrtc::compile(precision, cc, true).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cubin.kind, ImageKind::Cubin);
    assert_eq!(cubin.arch, format!("sm_{cc}"));
    assert_eq!(&cubin.bytes[..4], b"\x7fELF", "a CUBIN is an ELF image");
    let ptx = nvrtc::compile(precision, cc, false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ptx.kind, ImageKind::Ptx);
    let text = String::from_utf8_lossy(&ptx.bytes);
    assert!(
        text.contains(&format!(".target sm_{cc}")),
        "PTX for compute_{cc}"
    );
    for k in Kernel::ALL {
        assert!(
            text.contains(&format!(".entry {}(", k.name())),
            "kernel {} missing from the PTX",
            k.name()
        );
    }
    // The precision shows in the PTX itself: the material tables are MAX_MATERIALS reals of
    // the precision asked for, and the E update's arithmetic is in that precision only (the
    // flux kernels accumulate in f64 in both precisions, so the check is per kernel).
    let (real, other, bytes) = match precision {
        Precision::F32 => ("f32", "f64", 4),
        Precision::F64 => ("f64", "f32", 8),
    };
    // f32 arithmetic flushes subnormals (--ftz=true, `op.ftz.f32`), as the CPU backend's
    // threads do; f64 has no such mode on a GPU.
    let typed = |ty: &str| {
        if ty == "f32" {
            "ftz.f32".to_string()
        } else {
            ty.to_string()
        }
    };
    let (real_op, other_ops) = (typed(real), [typed(other), other.to_string()]);
    for table in ["c_ca", "c_cb", "c_hca", "c_hcb"] {
        let decl = format!(
            ".const .align {bytes} .b8 {table}[{}]",
            MAX_MATERIALS * bytes
        );
        assert!(text.contains(&decl), "{table}: no `{decl}` in the PTX");
    }
    let update_e = entry_body(&text, Kernel::UpdateE.name());
    for op in ["mul.rn", "sub.rn", "add.rn"] {
        assert!(
            has_op(update_e, &format!("{op}.{real_op}")),
            "update_e has no {op}.{real_op}"
        );
        for o in &other_ops {
            assert!(
                !has_op(update_e, &format!("{op}.{o}")),
                "update_e computes in {other}"
            );
        }
    }
    assert!(
        has_op(update_e, &format!("ld.global.nc.{real}"))
            || has_op(update_e, &format!("ld.global.nc.v2.{real}")),
        "update_e reads the fields through read-only {real} loads"
    );
    // --fmad=false: no fused multiply-add anywhere in the field updates.
    assert!(!update_e.contains("fma."), "update_e contracts into FMA");
    // The kernels that carry the magnetic and dispersive materials: the H update (hca H - hcb
    // curl E reads c_hca, c_hcb), the H CPML corrections (c_hcb) and the pole update, all in
    // the precision asked for and without FMA, as the CPU backend rounds them.
    let update_h = entry_body(&text, Kernel::UpdateH.name());
    for table in ["c_hca", "c_hcb"] {
        assert!(update_h.contains(table), "update_h does not read {table}");
    }
    for k in [Kernel::CpmlXH, Kernel::CpmlYH, Kernel::CpmlZH] {
        assert!(
            entry_body(&text, k.name()).contains("c_hcb"),
            "{} does not read c_hcb",
            k.name()
        );
    }
    let dispersive = entry_body(&text, Kernel::Dispersive.name());
    for op in ["mul.rn", "sub.rn", "add.rn"] {
        assert!(
            has_op(dispersive, &format!("{op}.{real_op}")),
            "dispersive has no {op}.{real_op}"
        );
        for o in &other_ops {
            assert!(
                !has_op(dispersive, &format!("{op}.{o}")),
                "dispersive computes in {other}"
            );
        }
    }
    // The cell indices are u32: one 32-bit load per cell.
    assert!(
        has_op(dispersive, "ld.global.u32") || has_op(dispersive, "ld.global.nc.u32"),
        "dispersive reads its u32 cell indices"
    );
    for body in [update_h, dispersive] {
        assert!(
            !body.contains("fma."),
            "a material kernel contracts into FMA"
        );
    }
    // The TF/SF kernels: the 1-D grid and the corrections in the precision asked for, the
    // corrections reading the E and H material tables (c_cb, c_hcb), no FMA (the CPU rounds
    // each product and sum), u32 cell offsets and nodes.
    let incident = entry_body(&text, Kernel::TfsfIncident.name());
    let correct = entry_body(&text, Kernel::TfsfCorrect.name());
    for (name, body, ops) in [
        ("tfsf_incident", incident, &["mul.rn", "sub.rn"][..]),
        ("tfsf_correct", correct, &["mul.rn", "sub.rn", "add.rn"][..]),
    ] {
        for op in ops {
            assert!(
                has_op(body, &format!("{op}.{real_op}")),
                "{name} has no {op}.{real_op}"
            );
            for o in &other_ops {
                assert!(
                    !has_op(body, &format!("{op}.{o}")),
                    "{name} computes in {other}"
                );
            }
        }
        assert!(!body.contains("fma."), "{name} contracts into FMA");
    }
    for table in ["c_cb", "c_hcb"] {
        assert!(
            correct.contains(table),
            "tfsf_correct does not read {table}"
        );
    }
    assert!(
        has_op(correct, "ld.global.u32") || has_op(correct, "ld.global.nc.u32"),
        "tfsf_correct reads u32 offsets and nodes"
    );
    // The conformal PEC pass: its products and sums in the precision asked for, none fused
    // (the CPU rounds each), reading u32 face offsets.
    let conformal = entry_body(&text, Kernel::ConformalH.name());
    for op in ["mul.rn", "add.rn"] {
        assert!(
            has_op(conformal, &format!("{op}.{real_op}")),
            "conformal_h has no {op}.{real_op}"
        );
        for o in &other_ops {
            assert!(
                !has_op(conformal, &format!("{op}.{o}")),
                "conformal_h computes in {other}"
            );
        }
    }
    assert!(
        !conformal.contains("fma."),
        "conformal_h contracts into FMA"
    );
    assert!(
        has_op(conformal, "ld.global.u32") || has_op(conformal, "ld.global.nc.u32"),
        "conformal_h reads u32 face offsets"
    );
    // The lumped elements' kernel (a cell pass's device form): the CPU's products, sums and
    // differences in the precision asked for, none fused (the CPU rounds each).
    let lumped = entry_body(&text, Kernel::Lumped.name());
    for op in ["mul.rn", "sub.rn", "add.rn"] {
        assert!(
            has_op(lumped, &format!("{op}.{real_op}")),
            "lumped has no {op}.{real_op}"
        );
        for o in &other_ops {
            assert!(
                !has_op(lumped, &format!("{op}.{o}")),
                "lumped computes in {other}"
            );
        }
    }
    assert!(!lumped.contains("fma."), "lumped contracts into FMA");
    assert!(
        cubin.log.is_empty() || !cubin.log.contains("error"),
        "compile log: {}",
        cubin.log
    );
}

#[test]
fn nvrtc_compiles_every_kernel_f32_sm80() {
    compiles_everywhere(Precision::F32, 80);
}

#[test]
fn nvrtc_compiles_every_kernel_f32_sm90() {
    compiles_everywhere(Precision::F32, 90);
}

#[test]
fn nvrtc_compiles_every_kernel_f64_sm80() {
    compiles_everywhere(Precision::F64, 80);
}

#[test]
fn nvrtc_compiles_every_kernel_f64_sm90() {
    compiles_everywhere(Precision::F64, 90);
}

/// Engines built at once (a B-scan's traces on one GPU) share one compile: NVRTC runs once
/// per precision and target in a process, and every engine gets the same image.
#[test]
fn nvrtc_compiles_each_image_once_however_many_engines_ask_at_once() {
    if !nvrtc_present() {
        return;
    }
    // sm_86 in f64: a target no other test of this binary compiles, so the count is this
    // test's alone.
    let images: Vec<_> = std::thread::scope(|s| {
        let asks: Vec<_> = (0..4)
            .map(|_| s.spawn(|| nvrtc::compile(Precision::F64, 86, true)))
            .collect();
        asks.into_iter()
            .map(|a| {
                a.join()
                    .expect("no panic")
                    .unwrap_or_else(|e| panic!("{e}"))
            })
            .collect()
    });
    assert_eq!(nvrtc::programs_compiled(Precision::F64, 86, true), 1);
    assert!(images.iter().all(|i| i.bytes == images[0].bytes));
    assert_eq!(&images[0].bytes[..4], b"\x7fELF");
}

#[test]
fn nvrtc_reports_a_compile_error_with_its_log_not_a_panic() {
    if !nvrtc_present() {
        return;
    }
    // An architecture NVRTC does not know is refused with NVRTC's message.
    let err = nvrtc::compile(Precision::F32, 11, true)
        .expect_err("sm_11 is not supported")
        .to_string();
    assert!(
        err.contains("sm_11") || err.contains("architecture") || err.contains("INVALID_OPTION"),
        "{err}"
    );
}

#[test]
fn nvrtc_target_prefers_a_cubin_for_the_gpus_own_architecture() {
    if !nvrtc_present() {
        return;
    }
    let archs = nvrtc::supported_archs().expect("supported architectures");
    assert!(archs.contains(&80) && archs.contains(&90), "{archs:?}");
    assert_eq!(nvrtc::target_for(90, &archs), Some((90, true)));
    // A GPU newer than every architecture NVRTC knows gets PTX of the newest it knows.
    let newest = *archs.iter().max().unwrap();
    assert_eq!(
        nvrtc::target_for(newest + 1000, &archs),
        Some((newest, false))
    );
    let (major, minor) = nvrtc::version().expect("version");
    assert!(major >= 12, "NVRTC {major}.{minor}");
}

/// Every kernel of `precision` for `sm_{cc}` runs from registers: no stack frame and no
/// spills. Local memory per thread is what a struct copied out of the arguments (its address
/// taken), an array indexed at run time or a call the compiler did not inline costs: a memory
/// round trip per access, invisible in the results and found on a GPU only with a profiler.
fn runs_from_registers(precision: Precision, cc: i32) {
    if !nvrtc_present() {
        return;
    }
    let kernels = nvrtc::kernel_resources(precision, cc).unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
    want.sort_unstable();
    assert_eq!(
        names, want,
        "the assembler's report names every kernel once"
    );
    for k in &kernels {
        assert!(
            k.stack == 0 && k.spills == (0, 0),
            "{} ({precision:?}, sm_{cc}) uses local memory: {} bytes of stack, spills {:?}",
            k.name,
            k.stack,
            k.spills
        );
        assert!(
            k.registers > 0,
            "{}: no register count in the report",
            k.name
        );
    }
}

#[test]
fn every_kernel_runs_from_registers_f32_and_f64_sm80_and_sm90() {
    for precision in [Precision::F32, Precision::F64] {
        for cc in [80, 90] {
            runs_from_registers(precision, cc);
        }
    }
}
