//! The memory planner: the published 10 um example, the GPU count, proportional slabs, the
//! suggestions, the CPU fallback, speed on huge grids, and the `yee plan` command line
//! (report, JSON schema, invalid input).

mod common;

use common::model;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use yee::model::Model;
use yee::plan::{self, parse_gpus, Hardware, Plan, PlanBackend, PlanOptions};
use yee::run::BackendChoice;

const GB: u64 = 1_000_000_000;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A cube of `n`^3 cells of 10 nm with a 10-cell PML and one dipole.
fn cube(n: usize, precision: &str) -> Model {
    model(&format!(
        r#"
[simulation]
name = "cube{n}"
length_unit = "nm"
cell_size = 10.0
size = [{s}, {s}, {s}]
steps = 1000
precision = "{precision}"
[boundaries]
default = {{ type = "pml", cells = 10 }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }}
"#,
        s = n * 10
    ))
}

fn on(gpus: &str, host: u64) -> Hardware {
    Hardware::new(parse_gpus(gpus).unwrap(), host, 16)
}

fn auto() -> PlanOptions {
    PlanOptions::default()
}

fn tiles(p: &Plan) {
    let nx = p.grid[0];
    assert_eq!(p.slabs.first().map(|s| s.x_start), Some(0));
    assert_eq!(p.slabs.last().map(|s| s.x_end), Some(nx));
    for w in p.slabs.windows(2) {
        assert_eq!(w[0].x_end, w[1].x_start);
    }
    assert!(p.slabs.iter().all(|s| s.x_end > s.x_start));
}

fn one_sentence(s: &str) {
    assert!(s.ends_with('.'), "{s}");
    assert!(!s[..s.len() - 1].contains(". "), "one sentence: {s}");
}

#[test]
fn the_published_example_needs_several_80_gb_gpus_and_plans_fast() {
    let started = Instant::now();
    let (m, _) = yee::scene::load(&repo("scenes/plan_10um_5nm.toml")).unwrap();
    let loaded = started.elapsed();
    let hw = on("1x80GB", 64 << 30);
    let t = Instant::now();
    let p = plan::plan(&m, &hw, &auto());
    let planned = t.elapsed();
    assert!(
        loaded + planned < Duration::from_millis(500),
        "load {loaded:?} + plan {planned:?}"
    );

    assert_eq!(p.grid, [2000, 2000, 2000]);
    assert_eq!(p.cells, 8_000_000_000);
    assert_eq!(p.precision, "f32");
    // Six f32 components over the owned cells; the halo planes are their own category.
    assert_eq!(p.bytes.fields, 8_000_000_000 * 6 * 4);
    assert_eq!(p.bytes.fields, 192_000_000_000);
    assert_eq!(p.bytes.halos, 12 * 2000 * 2000 * 4);
    assert!(!p.fits);
    assert_eq!(p.backend, PlanBackend::None);
    one_sentence(&p.reason);
    assert!(p.reason.contains("1 GPU holds only"), "{}", p.reason);
    // With the CUDA context reserve, 2 x 80 GB hold 159 GB: 220 GB needs 3.
    let need = p.bytes.fields + p.bytes.materials + p.bytes.pml;
    let usable = 80 * GB - plan::CUDA_CONTEXT_RESERVE;
    assert!(2 * usable < need && need < 3 * usable);
    assert!(
        p.suggestions
            .iter()
            .any(|s| s.starts_with("3 x 80GB GPUs would hold it")),
        "{:?}",
        p.suggestions
    );
    assert!(
        p.suggestions.iter().any(|s| s.contains("cell_size = ")),
        "{:?}",
        p.suggestions
    );
    assert!(
        !p.suggestions.iter().any(|s| s.contains("f32")),
        "already f32: {:?}",
        p.suggestions
    );
    assert_eq!(p.estimate.seconds, None);

    // And on three of them it runs, one slab per GPU, in proportion.
    let p3 = plan::plan(&m, &on("3x80GB", 64 << 30), &auto());
    assert!(p3.fits);
    assert_eq!(p3.backend, PlanBackend::Cuda);
    assert_eq!(p3.slabs.len(), 3);
    tiles(&p3);
    assert!(p3.slabs.iter().all(|s| s.share <= 1.0));
    assert_eq!(p3.bytes.overhead, 3 * plan::CUDA_CONTEXT_RESERVE);
}

#[test]
fn any_size_plans_in_well_under_a_second() {
    // 1e12 cells (the scene limit) on 4096 GPUs, and 1e10 cells on the host.
    let huge = model(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.001
size = [10.0, 10.0, 10.0]
steps = 100000
[boundaries]
default = { type = "pml", cells = 16 }
"#,
    );
    assert_eq!(huge.grid.cells(), 1_000_000_000_000);
    let t = Instant::now();
    let p = plan::plan(&huge, &on("4096x80GB", 64 << 30), &auto());
    let p2 = plan::plan(&huge, &on("8xH200", 64 << 30), &auto());
    let p3 = plan::plan(&cube(2154, "f32"), &on("1xH100", 64 << 30), &auto());
    let elapsed = t.elapsed();
    assert!(elapsed < Duration::from_millis(300), "{elapsed:?}");
    assert!(p.fits && p.slabs.len() > 300, "{} slabs", p.slabs.len());
    tiles(&p);
    assert!(!p2.fits && !p2.suggestions.is_empty());
    assert!(p3.cells > 9_990_000_000 && !p3.fits);
}

#[test]
fn a_small_grid_on_eight_gpus_uses_one() {
    let (m, _) = yee::scene::load(&repo("scenes/dipole.toml")).unwrap();
    let p = plan::plan(&m, &on("8xH100", 64 << 30), &auto());
    assert_eq!(p.backend, PlanBackend::Cuda);
    assert_eq!(p.slabs.len(), 1);
    assert_eq!(p.devices.iter().filter(|d| d.used).count(), 1);
    assert!(
        p.reason
            .starts_with("CUDA on 1 of the 8 GPUs: one GPU holds the grid"),
        "{}",
        p.reason
    );
    one_sentence(&p.reason);
}

#[test]
fn a_medium_grid_uses_as_many_gpus_as_keep_overhead_under_the_limit() {
    let m = cube(800, "f32");
    let p = plan::plan(&m, &on("8xH100", 64 << 30), &auto());
    let k = p.slabs.len();
    assert!(1 < k && k < 8, "{k} GPUs");
    let f = p.estimate.overhead_fraction.unwrap();
    assert!(f <= plan::OVERHEAD_LIMIT, "{f}");
    assert!(
        p.reason.starts_with(&format!("CUDA on {k} of the 8 GPUs")),
        "{}",
        p.reason
    );
    assert!(p.reason.contains("the limit is 5.0%"), "{}", p.reason);
    one_sentence(&p.reason);
    tiles(&p);
    // A large grid takes all of them.
    let big = plan::plan(&cube(2000, "f32"), &on("8xH100", 64 << 30), &auto());
    assert_eq!(big.slabs.len(), 8, "{}", big.reason);
    assert!(
        big.reason.starts_with("CUDA on all 8 GPUs"),
        "{}",
        big.reason
    );
}

#[test]
fn slabs_follow_each_devices_memory() {
    // 1500^3 f32 is about 92 GB: it needs both GPUs.
    let m = cube(1500, "f32");
    let p = plan::plan(&m, &on("1xA100-40GB,1xH100", 64 << 30), &auto());
    assert!(p.fits, "{}", p.reason);
    assert_eq!(p.slabs.len(), 2);
    tiles(&p);
    // The larger GPU (device 1, the H100) comes first and takes about twice the planes.
    assert_eq!((p.slabs[0].device, p.slabs[1].device), (1, 0));
    let usable = |gb: u64| (gb * GB - plan::CUDA_CONTEXT_RESERVE) as f64;
    let want0 = 1500.0 * usable(80) / (usable(80) + usable(40));
    let got0 = (p.slabs[0].x_end - p.slabs[0].x_start) as f64;
    assert!((got0 - want0).abs() <= 1.0, "{got0} planes, want {want0}");
    for s in &p.slabs {
        assert!(s.share <= 1.0 && s.share > 0.7, "{}", s.share);
    }
    // Four unequal devices.
    let p = plan::plan(&cube(2000, "f32"), &on("2x80GB,2x40GB", 64 << 30), &auto());
    let lens: Vec<usize> = p.slabs.iter().map(|s| s.x_end - s.x_start).collect();
    assert_eq!(lens.len(), 4);
    assert!(
        lens[0].abs_diff(lens[1]) <= 1 && lens[2].abs_diff(lens[3]) <= 1,
        "{lens:?}"
    );
    let ratio = usable(80) / usable(40);
    assert!(
        (lens[0] as f64 - ratio * lens[2] as f64).abs() <= 2.0,
        "{lens:?}"
    );
}

#[test]
fn f64_that_fits_in_f32_says_so() {
    // 1300^3 in f64 is about 112 GB; in f32 about 60 GB.
    let p = plan::plan(&cube(1300, "f64"), &on("1x80GB", 16 << 30), &auto());
    assert!(!p.fits);
    let s = p
        .suggestions
        .iter()
        .find(|s| s.contains("precision = \"f32\""))
        .expect("an f32 suggestion");
    assert!(s.contains("fits on the 80GB GPU"), "{s}");
    let f32 = plan::plan(&cube(1300, "f32"), &on("1x80GB", 16 << 30), &auto());
    assert!(f32.fits);
    assert_eq!(f32.bytes.fields * 2, p.bytes.fields);
}

#[test]
fn the_cpu_takes_what_the_gpus_cannot_hold_and_says_why() {
    // 1000^3 f32 is about 27 GB: more than a 24 GB RTX 4090, less than a 64 GiB host.
    let m = cube(1000, "f32");
    let p = plan::plan(&m, &on("1xRTX4090", 64 << 30), &auto());
    assert_eq!(p.backend, PlanBackend::Cpu);
    assert!(p.fits);
    one_sentence(&p.reason);
    assert!(
        p.reason.starts_with("The CPU backend runs it: it needs"),
        "{}",
        p.reason
    );
    assert!(
        p.reason
            .contains("on GPUs but the 1 GPU holds only 23.5 GB"),
        "{}",
        p.reason
    );
    assert!(
        p.reason.contains("of host memory available"),
        "{}",
        p.reason
    );
    assert!(p.devices.last().unwrap().used && !p.devices[0].used);
    assert_eq!(p.bytes.overhead, 0);
    assert!(p.estimate.seconds.unwrap() > 0.0);
    tiles(&p);
    // No GPU at all.
    let mut hw = on("1xH100", 64 << 30);
    hw.gpus.clear();
    hw.gpu_note = "the CUDA driver library is not installed".into();
    let p = plan::plan(&m, &hw, &auto());
    assert_eq!(p.backend, PlanBackend::Cpu);
    assert_eq!(p.reason.split(':').next(), Some("The CPU backend runs it"));
    assert!(
        p.reason
            .contains("no GPU is available (the CUDA driver library is not installed)"),
        "{}",
        p.reason
    );
    one_sentence(&p.reason);
    // Forced backends.
    let p = plan::plan(
        &m,
        &on("1xRTX4090", 64 << 30),
        &PlanOptions {
            backend: BackendChoice::Cuda,
            ..auto()
        },
    );
    assert_eq!(p.backend, PlanBackend::None);
    one_sentence(&p.reason);
    let p = plan::plan(
        &m,
        &on("2xH100", 16 << 30),
        &PlanOptions {
            backend: BackendChoice::Cpu,
            ..auto()
        },
    );
    assert_eq!(p.backend, PlanBackend::None);
    assert!(
        p.suggestions
            .iter()
            .any(|s| s.starts_with("A host with at least")),
        "{:?}",
        p.suggestions
    );
}

#[test]
fn price_gives_a_cost() {
    let m = cube(1500, "f32");
    let p = plan::plan(
        &m,
        &on("4xH100", 64 << 30),
        &PlanOptions {
            price_per_gpu_hour: Some(2.5),
            ..auto()
        },
    );
    let k = p.slabs.len() as f64;
    let want = p.estimate.seconds.unwrap() / 3600.0 * k * 2.5;
    assert!((p.estimate.cost.unwrap() - want).abs() < 1e-9 * want);
}

/// A cache folder of this test process's own, so plans never write the user's cache.
fn cache_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("yee-plan-cache-{}-{name}", std::process::id()))
}

fn yee(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(args)
        .env("XDG_CACHE_HOME", cache_dir("shared"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("yee runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = yee(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn check_schema(v: &serde_json::Value) {
    for key in [
        "grid",
        "cells",
        "steps",
        "dt",
        "bytes",
        "backend",
        "reason",
        "fits",
        "devices",
        "slabs",
        "estimate",
        "suggestions",
    ] {
        assert!(v.get(key).is_some(), "missing `{key}`");
    }
    for key in ["fields", "materials", "pml", "monitors", "halos", "total"] {
        assert!(v["bytes"][key].is_u64(), "bytes.{key}");
    }
    let grid: Vec<u64> = v["grid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(grid.len(), 3);
    assert_eq!(v["cells"].as_u64().unwrap(), grid.iter().product::<u64>());
    assert!(v["steps"].is_u64() && v["dt"].is_f64());
    assert!(["cuda", "cpu", "none"].contains(&v["backend"].as_str().unwrap()));
    assert!(v["reason"].is_string() && v["fits"].is_boolean());
    for d in v["devices"].as_array().unwrap() {
        assert!(
            d["name"].is_string()
                && d["memory_bytes"].is_u64()
                && d["bandwidth_bytes_per_s"].is_number(),
            "{d}"
        );
    }
    let slabs = v["slabs"].as_array().unwrap();
    let mut x = 0;
    for s in slabs {
        assert!(s["device"].as_u64().unwrap() < v["devices"].as_array().unwrap().len() as u64);
        assert_eq!(s["x_start"].as_u64().unwrap(), x);
        x = s["x_end"].as_u64().unwrap();
        assert!(s["bytes"].is_u64());
    }
    assert_eq!(x, grid[0], "slabs tile [0, nx)");
    assert!(v["estimate"]["bytes_per_cell_step"].is_u64());
    assert!(v["estimate"]["seconds"].is_f64() || v["estimate"]["seconds"].is_null());
    assert!(v["suggestions"].is_array());
}

#[test]
fn json_output_follows_the_schema() {
    let v = json(&[
        "plan",
        "scenes/dipole.toml",
        "--json",
        "--host-memory",
        "16GiB",
        "--gpus",
        "2xH100",
    ]);
    check_schema(&v);
    assert_eq!(v["grid"], serde_json::json!([80, 80, 80]));
    assert_eq!(v["backend"], "cuda");
    assert_eq!(v["fits"], true);
    assert_eq!(v["estimate"]["bytes_per_cell_step"], 75);
    assert!(v["estimate"]["seconds"].as_f64().unwrap() > 0.0);

    // The CPU's update: the fused sweep with a slab per thread (51 B per cell-step in f32),
    // the two-pass update with fewer slabs than threads (75 B), which takes longer.
    let cpu = |slabs: &str| {
        json(&[
            "plan",
            "scenes/dipole.toml",
            "--json",
            "--host-memory",
            "16GiB",
            "--backend",
            "cpu",
            "--threads",
            "2",
            "--slabs",
            slabs,
        ])
    };
    let (fused, two_pass) = (cpu("2"), cpu("1"));
    assert_eq!(fused["backend"], "cpu");
    assert_eq!(fused["estimate"]["bytes_per_cell_step"], 51);
    assert_eq!(two_pass["estimate"]["bytes_per_cell_step"], 75);
    let per_step = |v: &serde_json::Value| v["estimate"]["seconds_per_step"].as_f64().unwrap();
    assert!(per_step(&two_pass) > per_step(&fused));

    let v = json(&[
        "plan",
        "scenes/plan_10um_5nm.toml",
        "--json",
        "--gpus",
        "1x80GB",
        "--host-memory",
        "64GiB",
    ]);
    check_schema(&v);
    assert_eq!(v["bytes"]["fields"], 192_000_000_000u64);
    assert_eq!(v["backend"], "none");
    assert_eq!(v["fits"], false);
    assert!(v["estimate"]["seconds"].is_null());
    assert!(!v["suggestions"].as_array().unwrap().is_empty());

    let v = json(&[
        "plan",
        "scenes/plan_10um_5nm.toml",
        "--json",
        "--gpus",
        "4xH100",
        "--price",
        "3",
    ]);
    check_schema(&v);
    assert_eq!(v["backend"], "cuda");
    assert!(v["estimate"]["cost"].as_f64().unwrap() > 0.0);

    let v = json(&[
        "plan",
        "scenes/dipole.toml",
        "--json",
        "--backend",
        "cpu",
        "--host-memory",
        "1GB",
    ]);
    check_schema(&v);
    assert_eq!(v["backend"], "cpu");
}

#[test]
fn the_report_says_what_fits() {
    let out = yee(&[
        "plan",
        "scenes/plan_10um_5nm.toml",
        "--gpus",
        "1x80GB",
        "--host-memory",
        "64GiB",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "2000 x 2000 x 2000 = 8,000,000,000 cells",
        "192,000,000,000",
        "it does not fit",
        "3 x 80GB GPUs would hold it",
        "backend   none",
    ] {
        assert!(text.contains(want), "missing `{want}` in\n{text}");
    }
}

#[test]
fn invalid_flags_exit_2_and_name_the_flag() {
    for (args, flag) in [
        (vec!["--gpus", "4x"], "--gpus"),
        (vec!["--gpus", "2xB9000"], "--gpus"),
        (vec!["--gpus", "2xA100"], "--gpus"),
        (vec!["--host-memory", "80"], "--host-memory"),
        (vec!["--host-memory", "80G"], "--host-memory"),
        (vec!["--price=-1"], "--price"),
        (vec!["--price", "cheap"], "--price"),
        (vec!["--backend", "opencl"], "--backend"),
    ] {
        let mut all = vec!["plan", "scenes/dipole.toml"];
        all.extend(args.iter());
        let out = yee(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    let out = yee(&["plan", "scenes/no_such_scene.toml"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A small scene with every kind of monitor, `steps` steps and `extra` appended.
fn monitored(steps: &str, extra: &str) -> String {
    format!(
        r#"[simulation]
cell_size = 0.05
size = [1.0, 1.0, 1.0]
{steps}
[boundaries]
default = {{ type = "pml", cells = 5 }}
[[source]]
type = "dipole"
component = "Ez"
position = [-0.1, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 1.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [0.1, 0.0, 0.0]
components = ["Ez", "Hy"]
{extra}"#
    )
}

fn write_scene(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("yee-plan-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn absurd_run_lengths_are_refused_and_the_real_limit_is_named() {
    // duration = 1e6 s is 1e22 steps: it used to become u64::MAX steps, 32 kB and "fits".
    let scene = write_scene("long", &monitored("duration = 1e6", ""));
    let out = yee(&["plan", scene.to_str().unwrap(), "--host-memory", "64GiB"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("simulation.duration") && err.contains("limit of 1e12 steps"),
        "{err}"
    );
    // 1e11 steps: an H100 holds the grid, but the probe series (3 values of 8 bytes per step,
    // 2.4 TB) do not fit in the host: the host, not the GPU, is named as the limit.
    let scene = write_scene("probes", &monitored("steps = 100000000000", ""));
    let v = json(&[
        "plan",
        scene.to_str().unwrap(),
        "--json",
        "--gpus",
        "1xH100",
        "--host-memory",
        "64GiB",
    ]);
    assert_eq!(v["fits"], false);
    assert_eq!(v["bytes"]["probe_series"], 2_400_000_000_000u64);
    let reason = v["reason"].as_str().unwrap();
    one_sentence(reason);
    assert!(
        reason.contains("probe series 2.4 TB") && reason.contains("GPUs would hold the grid"),
        "{reason}"
    );
}

#[test]
fn the_plan_estimates_the_result_file() {
    // Snapshots of a plane and of the volume, a probe and a flux plane with DFT fields: the
    // estimate is the data written in whole chunks, so the file is at least that and at most
    // HDF5's metadata (well under 128 kB for these 12 datasets) more.
    let extra = r#"[[monitor]]
type = "snapshot"
name = "s"
plane = { z = 0.0 }
components = ["Ez", "Ex"]
every = 10
[[monitor]]
type = "snapshot"
name = "v"
components = ["Ez"]
every = 50
[[monitor]]
type = "flux"
name = "f"
plane = { z = 0.2 }
fields = true
frequencies = { min = 1.0e14, max = 3.0e14, count = 11 }
"#;
    let scene = write_scene("output", &monitored("steps = 400", extra));
    let v = json(&[
        "plan",
        scene.to_str().unwrap(),
        "--json",
        "--host-memory",
        "8GiB",
    ]);
    let o = &v["output"];
    let part = |k: &str| o[k].as_u64().unwrap();
    assert_eq!(
        part("total"),
        part("snapshots") + part("probes") + part("flux")
    );
    // 40 plane snapshots of 2 x 20 x 20 f32 and 8 volume ones of 20^3, times in 256-chunks.
    assert_eq!(
        part("snapshots"),
        40 * 2 * 400 * 4 + 8 * 8000 * 4 + 2 * 256 * 16
    );
    let dir = scene.parent().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "scene.toml", "-o", "out.h5", "--quiet"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(dir.join("out.h5")).unwrap().len();
    assert!(
        size >= part("total") && size <= part("total") + 128_000,
        "file {size} B, estimate {} B",
        part("total")
    );
    let text =
        String::from_utf8(yee(&["plan", scene.to_str().unwrap(), "--host-memory", "8GiB"]).stdout)
            .unwrap();
    assert!(
        text.contains("in the result file by the end of the run"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// The host bandwidth figure of a plan with the cache in `cache` on a machine whose load
/// average reads `load`, and the plan's note on where it came from.
fn planned_bandwidth(cache: &std::path::Path, load: &str) -> (f64, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["plan", "scenes/dipole.toml", "--json"])
        .env("XDG_CACHE_HOME", cache)
        .env("YEE_LOAD_AVERAGE", load)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let host = v["devices"].as_array().unwrap().last().unwrap().clone();
    let note = v["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .find(|a| a.starts_with("host bandwidth"))
        .unwrap();
    (host["bandwidth_bytes_per_s"].as_f64().unwrap(), note)
}

/// A figure measured while other work runs (a load average of one per core) is used and not
/// cached; once the machine is quiet the next plan measures and caches.
#[test]
#[cfg_attr(
    not(feature = "fault-injection"),
    ignore = "a test hook: needs --features fault-injection (scripts/test.sh)"
)]
fn a_host_bandwidth_measured_on_a_busy_machine_is_not_cached() {
    let cache = cache_dir("bandwidth-busy");
    let _ = std::fs::remove_dir_all(&cache);
    let file = cache.join("yee").join("host-bandwidth.json");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = format!("{}", cores as f64);
    let (b, note) = planned_bandwidth(&cache, &load);
    assert!(b > 0.0);
    assert!(
        note.contains("while the machine was busy") && note.contains("not cached"),
        "{note}"
    );
    assert!(!file.exists());
    let (_, note) = planned_bandwidth(&cache, "0.1");
    assert!(note.contains("cached in"), "{note}");
    assert!(file.exists());
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
#[cfg_attr(
    not(feature = "fault-injection"),
    ignore = "a test hook: needs --features fault-injection (scripts/test.sh)"
)]
fn the_host_bandwidth_is_measured_once_and_then_read_from_the_cache() {
    let cache = cache_dir("bandwidth");
    let _ = std::fs::remove_dir_all(&cache);
    let plan = || planned_bandwidth(&cache, "0.1");
    let (first, note) = plan();
    assert!(
        note.contains("measured just now") && note.contains("cached in"),
        "{note}"
    );
    let file = cache.join("yee").join("host-bandwidth.json");
    assert!(file.exists());
    let (second, note) = plan();
    assert!(note.contains("read from the cache"), "{note}");
    assert_eq!(first, second, "consecutive plans use the same figure");
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn a_price_on_a_cpu_plan_is_noted() {
    let v = json(&[
        "plan",
        "scenes/dipole.toml",
        "--json",
        "--backend",
        "cpu",
        "--host-memory",
        "1GB",
        "--price",
        "3",
    ]);
    assert!(v["estimate"]["cost"].is_null());
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("--price is per GPU-hour"),
        "{v}"
    );
}

#[test]
fn plan_over_ranks_splits_the_slabs_and_counts_the_halo_traffic() {
    // The 10 um cube at 5 nm (2000 x planes, 226 GB) on nodes of 64 GiB: 4 nodes.
    let args = [
        "plan",
        "scenes/plan_10um_5nm.toml",
        "--host-memory",
        "64GiB",
        "--threads",
        "8",
    ];
    let one = yee(&args);
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(
        text.contains("`mpirun -n 4 yee run`"),
        "a grid that does not fit one node suggests the nodes it needs:\n{text}"
    );
    let mut over = args.to_vec();
    over.extend(["--ranks", "4", "--network", "200Gbit/s", "--json"]);
    let v = json(&over);
    let r = &v["ranks"];
    assert_eq!(r["ranks"], 4);
    assert_eq!(r["network_bytes_per_s"].as_f64(), Some(25e9));
    assert_eq!(r["fits"], true, "{r}");
    let parts = r["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 4);
    // Contiguous x ranges tiling [0, 2000), 8 slabs each (8 threads per rank).
    let mut x = 0;
    for p in parts {
        assert_eq!(p["x"][0], x);
        x = p["x"][1].as_u64().unwrap();
        assert_eq!(
            p["slabs"][1].as_u64().unwrap() - p["slabs"][0].as_u64().unwrap(),
            8
        );
    }
    assert_eq!(x, 2000);
    // Halo traffic: each of the 3 rank boundaries moves 4 planes of 2000 x 2000 f32 values
    // a step: the 2 tangential H components one way after the H half step, the 2 tangential
    // E components the other way after the E half step.
    let plane = 2000u64 * 2000 * 4;
    assert_eq!(r["halo_bytes_per_step"].as_u64(), Some(3 * 4 * plane));
    // An inner rank sends and receives at both of its faces, twice what an end rank does.
    assert_eq!(
        parts[1]["halo_bytes_per_step"].as_u64().unwrap(),
        2 * parts[0]["halo_bytes_per_step"].as_u64().unwrap()
    );
    // Too few ranks: the plan says how many nodes it needs.
    let n = over.len();
    over[n - 4] = "2";
    let v = json(&over);
    assert_eq!(v["ranks"]["fits"], false);
    assert_eq!(v["ranks"]["nodes_needed"], 4);
    // The report, and a bad bandwidth (exit 2, naming the flag).
    let text = yee(&over[..over.len() - 1]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("rank 1: slabs"), "{text}");
    assert!(text.contains("needs at least 4 nodes"), "{text}");
    let bad = yee(&[
        "plan",
        "scenes/dipole.toml",
        "--ranks",
        "2",
        "--network",
        "fast",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--network"));
}

#[test]
fn plan_over_ranks_on_gpus_gives_each_rank_one_gpu_and_counts_the_ranks_that_fit() {
    // The 10 um cube at 5 nm with `--backend cuda`, one 80 GB GPU per node: each rank's part
    // on its GPU, `--slabs-per-gpu` slabs each; too few ranks says how many fit, and that
    // count is the smallest that does.
    let plan = |ranks: usize, spg: &str| {
        let r = ranks.to_string();
        json(&[
            "plan",
            "scenes/plan_10um_5nm.toml",
            "--host-memory",
            "64GiB",
            "--backend",
            "cuda",
            "--gpus",
            "1x80GB",
            "--slabs-per-gpu",
            spg,
            "--ranks",
            &r,
            "--json",
        ])["ranks"]
            .clone()
    };
    let two = plan(2, "1");
    assert_eq!(two["fits"], false, "{two}");
    assert_eq!(two["gpu_memory_bytes"], 80_000_000_000u64);
    let n = two["nodes_needed"].as_u64().expect("a count of ranks") as usize;
    assert!(n > 2, "{two}");
    assert_eq!(plan(n - 1, "1")["fits"], false, "{n} is the fewest");
    let fit = plan(n, "2");
    assert_eq!(fit["fits"], true, "{fit}");
    let parts = fit["parts"].as_array().unwrap();
    assert_eq!(parts.len(), n);
    for p in parts {
        assert_eq!(p["gpu"], 0, "{p}");
        assert_eq!(
            p["slabs"][1].as_u64().unwrap() - p["slabs"][0].as_u64().unwrap(),
            2,
            "--slabs-per-gpu 2: two slabs per rank"
        );
        let a = &p["allocation"];
        assert!(a["fields"].as_u64().unwrap() > 0);
        assert!(p["update_s_per_step"].as_f64().unwrap() > 0.0);
    }
    // The same ranks on their CPUs: the GPU's bandwidth makes each rank's step faster.
    let cpu = json(&[
        "plan",
        "scenes/plan_10um_5nm.toml",
        "--host-memory",
        "64GiB",
        "--ranks",
        &n.to_string(),
        "--json",
    ]);
    assert!(
        cpu["ranks"]["update_s_per_step"].as_f64().unwrap()
            > fit["update_s_per_step"].as_f64().unwrap()
    );
    assert!(cpu["ranks"]["parts"][0]["gpu"].is_null());
}

#[test]
fn plan_over_ranks_of_a_scan_shares_out_the_traces() {
    // A B-scan over 3 ranks is a task farm: whole traces per rank (r, r + 3, ...), no slab
    // split and no halo traffic; with one thread per rank each runs one trace at a time.
    let args = [
        "plan",
        "scenes/gpr_bscan.toml",
        "--threads",
        "1",
        "--ranks",
        "3",
        "--json",
    ];
    let v = json(&args);
    let r = &v["ranks"];
    let scan = &r["scan"];
    let traces = scan["traces"].as_u64().unwrap() as usize;
    let per_rank: Vec<usize> = scan["traces_per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(per_rank.len(), 3);
    assert_eq!(per_rank.iter().sum::<usize>(), traces, "every trace once");
    for (rank, n) in per_rank.iter().enumerate() {
        assert_eq!(
            *n,
            (rank..traces).step_by(3).count(),
            "rank {rank}: round robin"
        );
    }
    assert_eq!(scan["at_once_per_rank"], 1);
    assert!(scan["refusal"].is_null(), "{scan}");
    assert_eq!(r["halo_bytes_per_step"], 0);
    assert!(r["parts"].as_array().unwrap().is_empty(), "no slab split");
    let text = String::from_utf8_lossy(&yee(&args[..6]).stdout).into_owned();
    assert!(
        text.contains("a scan of") && text.contains("shared out"),
        "{text}"
    );
    // --slabs splits one trace's grid: a scan over ranks refuses it, and the plan says so.
    let mut slabs = args.to_vec();
    slabs.extend(["--slabs", "2"]);
    let v = json(&slabs);
    assert!(v["ranks"]["scan"]["refusal"]
        .as_str()
        .unwrap()
        .contains("--slabs"));
}

/// A scene with surface ports (the gold nanosphere) is planned on the fewest GPUs that hold
/// it, as any scene; on the two GPUs `--gpus 0,1` names, each GPU's part counts the buffers
/// of its trades with the other (what the CUDA engine allocates for them), the pinned copies
/// they stage through without peer access, and their launches.
#[test]
fn surface_ports_are_planned_over_several_gpus() {
    let (m, _) = yee::scene::load(&repo("scenes/gold_sphere.toml")).unwrap();
    let ports = m.surface_ports();
    assert!(!ports.is_empty());
    let p = plan::plan(&m, &on("1xH100,1xH200", 64 << 30), &auto());
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    assert_eq!(p.slabs.len(), 1);
    assert!(p.assumptions.iter().any(|a| a.starts_with("surface ports")));
    let two = PlanOptions {
        gpus: Some(vec![0, 1]),
        ..auto()
    };
    let mut hw = on("2xH100", 64 << 30);
    let p = plan::plan(&m, &hw, &two);
    assert_eq!(p.backend, PlanBackend::Cuda, "{}", p.reason);
    let ranges = p.ranges();
    let gpu_of: Vec<usize> = p.slabs.iter().map(|s| s.device).collect();
    assert_eq!(gpu_of, [0, 1]);
    let trades = yee::backend::cuda::engine::trade_bytes(&ports, &ranges, &gpu_of, 4);
    assert!(trades > 0);
    let layout = plan::Layout::of(&m);
    let slabs: u64 = ranges
        .iter()
        .map(|r| layout.gpu_slab_bytes(*r).dispersive)
        .sum();
    assert_eq!(
        p.bytes.dispersive,
        slabs + trades,
        "what the engine allocates"
    );
    let by_slab: u64 = p.slabs.iter().map(|s| s.allocation.dispersive).sum();
    assert_eq!(by_slab, p.bytes.dispersive, "each GPU's trades on its slab");
    // Without peer access each GPU's values sent are staged through a pinned copy.
    hw.peer_access = false;
    let staged = plan::plan(&m, &hw, &two);
    let pinned = yee::backend::cuda::engine::staged_trade_bytes(&ports, &ranges, &gpu_of, 4);
    assert!(pinned > 0);
    assert_eq!(
        staged.bytes.staged_halos - layout.staged_halo_total(&gpu_of),
        pinned
    );
}

#[test]
fn surface_ports_trades_are_planned_over_ranks() {
    let path = repo("scenes/gold_sphere.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let staircase = text.replace(
        r#"gold = { library = "Au" }"#,
        r#"gold = { library = "Au", conformal = false }"#,
    );
    let (ports, _) = yee::scene::load_str(&text, "gold_sphere.toml").unwrap();
    let (plain, _) = yee::scene::load_str(&staircase, "gold_sphere.toml").unwrap();
    assert!(!ports.surface_ports().is_empty() && plain.surface_ports().is_empty());
    let hw = on("1xH100", 64 << 30);
    let opts = PlanOptions {
        threads: Some(1),
        ..auto()
    };
    let with = yee::plan::ranks::plan_ranks(&ports, &hw, &opts, 3, None);
    let without = yee::plan::ranks::plan_ranks(&plain, &hw, &opts, 3, None);
    // The ports' values sent between ranks are those received: each rank's trade bytes (sent
    // and received) add up to twice the bytes crossing.
    let crossing = with.halo_bytes_per_step - without.halo_bytes_per_step;
    let per_rank: u64 = with
        .parts
        .iter()
        .zip(&without.parts)
        .map(|(a, b)| a.halo_bytes_per_step - b.halo_bytes_per_step)
        .sum();
    assert!(crossing > 0);
    assert_eq!(per_rank, 2 * crossing);
    // Each rank holds its trade buffers beside its ports (the middle rank trades both ways).
    let trades: Vec<u64> = with
        .parts
        .iter()
        .map(|p| {
            let planes = p.x[0]..p.x[1];
            ports.surface_ports().crossings(planes).bytes(4)
        })
        .collect();
    assert!(trades[1] > trades[0] && trades[1] > trades[2], "{trades:?}");
}
