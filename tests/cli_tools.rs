//! `yee bench` and `yee devices` on a machine without a GPU: they answer, with the figures
//! and explanations their users rely on, and never panic.

use std::process::Command;

fn yee(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cpu_bench_reports_throughput_next_to_the_measured_roofline() {
    let (code, out, err) = yee(&[
        "bench",
        "--backend",
        "cpu",
        "--size",
        "40",
        "--steps",
        "4",
        "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["cells"], 40 * 40 * 40);
    let mcells = v["mcells_per_s"].as_f64().unwrap();
    let bandwidth = v["bandwidth_bytes_per_s"].as_f64().unwrap();
    let roofline = v["roofline_mcells_per_s"].as_f64().unwrap();
    assert!(mcells > 0.0 && bandwidth > 1e8);
    // The roofline is the measured bandwidth over the two-pass bytes per cell-step.
    assert!(
        (roofline - bandwidth / v["bytes_per_cell_step"].as_f64().unwrap() / 1e6).abs()
            < 1e-6 * roofline
    );
    assert!((v["fraction_of_roofline"].as_f64().unwrap() - mcells / roofline).abs() < 1e-9);
}

/// True if this machine can run the CUDA backend, by the library's own check.
fn cuda_usable() -> bool {
    yee::devices::report().1
}

#[test]
fn devices_prints_the_library_report_with_the_reason_cuda_cannot_be_used() {
    let (code, out, err) = yee(&["devices"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The facts are checked against the library, not against one sentence's wording: the
    // binary prints the report `yee::devices::report` builds, which carries the reason the
    // GPU probe failed (the same text the CUDA backend refuses a run with).
    let (report, usable) = yee::devices::report();
    match yee::devices::probe_gpus() {
        Err(why) => {
            assert!(!usable);
            assert_eq!(out, report, "the binary prints the library's report");
            #[cfg(feature = "cuda")]
            assert!(
                out.contains(&why.to_string()),
                "the reason `{why}` is not in:\n{out}"
            );
            let _ = why;
        }
        Ok(gpus) => {
            // Free memory moves between two probes: compare what does not.
            assert_eq!(out.lines().count(), report.lines().count(), "{out}");
            for g in &gpus {
                assert!(
                    out.contains(&g.name),
                    "GPU {} is not listed:\n{out}",
                    g.name
                );
            }
        }
    }
    // NVRTC: its version when it loads, else why not.
    #[cfg(feature = "cuda")]
    match yee::backend::cuda::nvrtc::version() {
        Ok((major, minor)) => assert!(out.contains(&format!("{major}.{minor}")), "{out}"),
        Err(why) => assert!(out.contains(&why.to_string()), "{out}"),
    }
}

#[test]
fn cuda_backend_request_without_a_gpu_fails_cleanly() {
    if cuda_usable() {
        return; // a GPU is usable here: nothing to check
    }
    let dir = std::env::temp_dir().join(format!("yee-cli-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/dipole.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", scene, "--backend", "cuda", "-o", "x.h5", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The run is refused with the reason the library gives, and writes nothing.
    if let Err(why) = yee::devices::probe_gpus() {
        assert!(
            err.contains(&why.to_string()),
            "the reason `{why}` is not in: {err}"
        );
    }
    assert!(!dir.join("x.h5").exists(), "a refused run writes no file");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every example scene in `scenes/` passes `yee check` (exit 0): a scene no other test runs
/// (the filters, antennas and guides are long runs) still has to stay valid as the keys move.
#[test]
fn every_example_scene_passes_yee_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let (code, _, err) = yee(&["check", path.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{}: {err}", path.display());
        checked += 1;
    }
    assert!(
        checked >= 20,
        "only {checked} scenes found in {}",
        dir.display()
    );
}

/// `yee check` on a Bloch cell says the phase the oblique wave set: sin(20 deg) f0 L / c over
/// the 1 um period at 468 THz is 0.533921 (k = 3.3547e6 rad/m).
#[test]
fn check_states_the_bloch_phase_an_oblique_wave_sets() {
    let scene =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/grating_oblique.toml");
    let (code, out, err) = yee(&["check", scene.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let want = 20f64.to_radians().sin() * 4.68e14 * 1e-6 / 299_792_458.0;
    assert!(
        out.contains(&format!("Bloch cell: phase {want:.6} along y")),
        "{out}"
    );
    assert!(out.contains("two field sets"), "{out}");
}
