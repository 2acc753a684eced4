//! Scans (B-scans): one run of N traces gives, bit for bit, the probe series and flux spectra
//! of N separate runs with the moved positions, on both schedules (one trace per worker, and
//! traces one after another on slabs); an interrupted scan keeps its finished traces; the plan
//! says how the traces run; bad `[scan]` input is a clear error with its key and line.

//!
//! The tests open result files with HDF5's file locking off (as yee's own writer does): tests
//! run in parallel threads, and a child process one test spawns inherits every HDF5 file
//! descriptor open in the process at that moment, with its lock (HDF5 does not open files
//! close-on-exec), so another test's later read-write open of its own file could fail with
//! "unable to lock file" (docs/testing.md).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use yee::plan::scan::ScanSchedule;
use yee::run::{Observer, Progress, Quiet, RunError, RunOptions};

/// A small 2-D model (40 x 30 x 1 cells, z periodic) over a lossy half-space: a dipole and a
/// two-component probe move (the probe along x and y, so both its stencil and its weights
/// change), a second probe and a flux plane stay. Steps and traces are filled in.
const SCENE: &str = r#"[simulation]
name = "scan_test"
length_unit = "mm"
cell_size = 1.0
size = [40.0, 30.0, 1.0]
steps = STEPS
precision = "f32"
[boundaries]
default = { type = "pml", cells = 6 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
soil = { epsilon = 4.0, conductivity = 0.01 }
[[geometry]]
shape = "box"
material = "soil"
center = [0.0, -10.0, 0.0]
size = [100.0, 20.0, 10.0]
[[geometry]]
shape = "cylinder"
material = "pec"
center = [1.0, -6.0, 0.0]
radius = 2.5
height = 10.0
axis = "z"
SCAN
[[source]]
type = "dipole"
component = "Ez"
position = [SX, 4.0, 0.0]
waveform = { type = "ricker", frequency = 1.5e10 }
SSTEP
[[monitor]]
type = "probe"
name = "rx"
position = [RX, RY, 0.0]
components = ["Ez", "Hx"]
RSTEP
[[monitor]]
type = "probe"
name = "fixed"
position = [5.0, 2.0, 0.0]
components = ["Ez"]
[[monitor]]
type = "flux"
name = "down"
plane = { y = -2.0 }
frequencies = { min = 1.0e10, max = 5.0e10, count = 5 }
"#;

const SOURCE_X: f64 = -8.3;
const SOURCE_STEP: [f64; 3] = [1.7, 0.0, 0.0];
const PROBE: [f64; 2] = [-4.1, 4.0];
const PROBE_STEP: [f64; 3] = [1.7, 0.3, 0.0];

/// The scan scene of `traces` traces and `steps` steps.
fn scan_scene(traces: usize, steps: usize) -> String {
    SCENE
        .replace("STEPS", &steps.to_string())
        .replace("SCAN", &format!("[scan]\ntraces = {traces}"))
        .replace("SX", &format!("{SOURCE_X:?}"))
        .replace("RX", &format!("{:?}", PROBE[0]))
        .replace("RY", &format!("{:?}", PROBE[1]))
        .replace("SSTEP", &format!("scan_step = {SOURCE_STEP:?}"))
        .replace("RSTEP", &format!("scan_step = {PROBE_STEP:?}"))
}

/// Trace `k` of the scan written as a scene of its own: the positions are the written ones
/// plus k * scan_step, computed as the resolver does and written in full (Rust's `{:?}` of an
/// f64 reads back as the same f64).
fn trace_scene(k: usize, steps: usize) -> String {
    let kf = k as f64;
    SCENE
        .replace("STEPS", &steps.to_string())
        .replace("SCAN", "")
        .replace("SX", &format!("{:?}", SOURCE_X + kf * SOURCE_STEP[0]))
        .replace("RX", &format!("{:?}", PROBE[0] + kf * PROBE_STEP[0]))
        .replace("RY", &format!("{:?}", PROBE[1] + kf * PROBE_STEP[1]))
        .replace("SSTEP", "")
        .replace("RSTEP", "")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-scan-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn model(text: &str) -> yee::model::Model {
    yee::scene::load_str(text, "scene.toml").unwrap().0
}

fn options(out: &Path, threads: usize, slabs: Option<usize>) -> RunOptions {
    let mut o = RunOptions::new(out.to_path_buf());
    o.threads = Some(threads);
    o.slabs = slabs;
    o.backend = yee::run::BackendChoice::Cpu;
    o
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn bits64(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The schedule the plan picks for `m` with `threads` workers (and `slabs`).
fn schedule(m: &yee::model::Model, threads: usize) -> ScanSchedule {
    let options = yee::plan::PlanOptions {
        backend: yee::run::BackendChoice::Cpu,
        threads: Some(threads),
        ..Default::default()
    };
    let p = yee::plan::plan(m, &yee::plan::Hardware::detect(None, None), &options);
    p.scan.expect("a scan plan").schedule
}

/// A scan of 3 traces equals 3 separate runs with the moved positions, bit for bit: every
/// probe component (the moving and the fixed probe) and the flux spectrum, on both schedules.
/// The separate runs use the default split (2 slabs on 2 threads) while the per-worker
/// schedule runs each trace on one slab, so this also checks that a trace does not depend on
/// its split.
#[test]
fn a_scan_equals_separate_runs_bit_for_bit() {
    let (traces, steps) = (3, 120);
    let dir = tmp("equal");
    let scan = model(&scan_scene(traces, steps));
    assert_eq!(schedule(&scan, 2), ScanSchedule::TracePerWorker);

    let mut singles = Vec::new();
    for k in 0..traces {
        let m = model(&trace_scene(k, steps));
        assert!(m.scan.is_none());
        let out = dir.join(format!("trace{k}.h5"));
        yee::run::run(&m, &options(&out, 2, None), &mut Quiet).unwrap();
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(&out)
            .unwrap();
        let read = |p: &str| f.dataset(p).unwrap().read_raw::<f32>().unwrap();
        singles.push((
            read("probes/rx/Ez"),
            read("probes/rx/Hx"),
            read("probes/fixed/Ez"),
            f.dataset("flux/down/power")
                .unwrap()
                .read_raw::<f64>()
                .unwrap(),
            f.dataset("probes/rx/time")
                .unwrap()
                .read_raw::<f64>()
                .unwrap(),
        ));
    }
    // The traces differ (the source and the probe moved), so equality below is not trivial.
    assert_ne!(bits(&singles[0].0), bits(&singles[1].0));
    assert_ne!(bits64(&singles[0].3), bits64(&singles[2].3));

    // Per worker (2 threads, 3 traces), then one after another on 2 slabs, then on 1.
    for (name, threads, slabs) in [
        ("workers", 2, None),
        ("slabs", 2, Some(2)),
        ("one", 1, None),
    ] {
        let out = dir.join(format!("scan-{name}.h5"));
        let summary = yee::run::run(&scan, &options(&out, threads, slabs), &mut Quiet).unwrap();
        assert!(summary.complete);
        assert_eq!(summary.steps_done, traces * steps);
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(&out)
            .unwrap();
        assert_eq!(f.attr("traces").unwrap().read_scalar::<u64>().unwrap(), 3);
        assert_eq!(
            f.attr("traces_done").unwrap().read_scalar::<u64>().unwrap(),
            3
        );
        assert!(f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
        let rx_ez = f.dataset("probes/rx/Ez").unwrap().read_2d::<f32>().unwrap();
        let rx_hx = f.dataset("probes/rx/Hx").unwrap().read_2d::<f32>().unwrap();
        let fixed = f
            .dataset("probes/fixed/Ez")
            .unwrap()
            .read_2d::<f32>()
            .unwrap();
        let power = f
            .dataset("flux/down/power")
            .unwrap()
            .read_2d::<f64>()
            .unwrap();
        let time = f
            .dataset("probes/rx/time")
            .unwrap()
            .read_raw::<f64>()
            .unwrap();
        assert_eq!(rx_ez.shape(), [traces, steps]);
        assert_eq!(power.shape(), [traces, 5]);
        assert_eq!(bits64(&time), bits64(&singles[0].4), "{name}: time axis");
        for (k, single) in singles.iter().enumerate() {
            let row = |a: &ndarray::Array2<f32>| a.row(k).to_vec();
            assert_eq!(
                bits(&row(&rx_ez)),
                bits(&single.0),
                "{name}: trace {k} rx Ez"
            );
            assert_eq!(
                bits(&row(&rx_hx)),
                bits(&single.1),
                "{name}: trace {k} rx Hx"
            );
            assert_eq!(
                bits(&row(&fixed)),
                bits(&single.2),
                "{name}: trace {k} fixed Ez"
            );
            assert_eq!(
                bits64(&power.row(k).to_vec()),
                bits64(&single.3),
                "{name}: trace {k} flux"
            );
        }
        // Each trace's requested probe position (m): the written one plus k * step.
        let pos = f
            .dataset("probes/rx/positions")
            .unwrap()
            .read_2d::<f64>()
            .unwrap();
        assert_eq!(pos.shape(), [traces, 3]);
        for k in 0..traces {
            let want = [
                (PROBE[0] + k as f64 * PROBE_STEP[0]) * 1e-3,
                (PROBE[1] + k as f64 * PROBE_STEP[1]) * 1e-3,
                0.0,
            ];
            assert_eq!(
                bits64(&pos.row(k).to_vec()),
                bits64(&want),
                "{name}: position {k}"
            );
        }
        let fixed_pos = f
            .dataset("probes/fixed/positions")
            .unwrap()
            .read_2d::<f64>()
            .unwrap();
        assert_eq!(fixed_pos.row(0), fixed_pos.row(2));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sets the stop flag (as Ctrl-C does) once the first trace is in the file.
struct StopAfterFirst(Arc<AtomicBool>);
impl Observer for StopAfterFirst {
    fn progress(&mut self, p: &Progress) {
        if p.step >= 1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

/// Stopped after its first trace, a scan ends with `Interrupted`; its file keeps the finished
/// leading traces (equal to those of the whole scan), says how many (`traces_done`), has
/// `complete = false`, and its later rows are empty (zero).
#[test]
fn an_interrupted_scan_keeps_its_finished_traces() {
    // With two workers the stop reaches them only after the observer has seen trace 0; with
    // six traces of 300 steps (8 ms each) a loaded machine (the suite's tests run side by side
    // on two cores) once let both workers finish them all first. Ten traces of 1,500 steps
    // (the most whose source and probe stay out of the PML) leave that race far behind.
    let (traces, steps) = (10, 1500);
    let dir = tmp("stop");
    let scan = model(&scan_scene(traces, steps));
    let full_out = dir.join("full.h5");
    yee::run::run(&scan, &options(&full_out, 2, None), &mut Quiet).unwrap();
    let full = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(&full_out)
        .unwrap()
        .dataset("probes/rx/Ez")
        .unwrap()
        .read_2d::<f32>()
        .unwrap();
    for (name, threads) in [("workers", 2), ("one", 1)] {
        let out = dir.join(format!("stopped-{name}.h5"));
        let opts = options(&out, threads, None);
        let mut obs = StopAfterFirst(opts.stop.clone());
        match yee::run::run(&scan, &opts, &mut obs) {
            Err(RunError::Interrupted(s)) => assert!(!s.complete),
            other => panic!("{name}: expected an interrupted run, got {other:?}"),
        }
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(&out)
            .unwrap();
        let done = f.attr("traces_done").unwrap().read_scalar::<u64>().unwrap() as usize;
        assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
        // One worker stops after trace 0. With two, the stop reaches the workers only when
        // the observer has seen trace 0 reported, and on a loaded machine the other worker
        // may finish a trace or two more by then: any number short of the whole scan, as long
        // as the finished traces lead and equal the full scan's (checked below).
        if threads == 1 {
            assert_eq!(done, 1, "{name}: {done} traces done");
        } else {
            assert!((1..traces).contains(&done), "{name}: {done} traces done");
        }
        let ez = f.dataset("probes/rx/Ez").unwrap().read_2d::<f32>().unwrap();
        for k in 0..traces {
            if k < done {
                assert_eq!(
                    bits(&ez.row(k).to_vec()),
                    bits(&full.row(k).to_vec()),
                    "{name} {k}"
                );
            } else {
                assert!(
                    ez.row(k).iter().all(|&v| v == 0.0),
                    "{name}: row {k} is empty"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The plan schedules a small grid one trace per worker and says so with the time per trace
/// and in all; with one thread, or on a grid too large to gain from it, traces run one after
/// another on the slabs. `yee plan --json` carries the same.
#[test]
fn the_plan_decides_how_traces_run() {
    let small = model(&scan_scene(10, 100));
    assert_eq!(schedule(&small, 2), ScanSchedule::TracePerWorker);
    assert_eq!(schedule(&small, 1), ScanSchedule::OneAfterAnother);
    let options = yee::plan::PlanOptions {
        threads: Some(2),
        ..Default::default()
    };
    let p = yee::plan::plan(&small, &yee::plan::Hardware::detect(None, None), &options);
    let s = p.scan.clone().unwrap();
    assert_eq!((s.traces, s.traces_in_parallel), (10, 2));
    let (one, all) = (s.seconds_per_trace.unwrap(), s.seconds.unwrap());
    // 10 traces, 2 at a time: 5 rounds of one trace's time.
    assert!((all / one - 5.0).abs() < 1e-9, "{one} {all}");
    assert!(
        p.render().contains("10 traces, 2 at a time"),
        "{}",
        p.render()
    );
    assert!(p.to_json().contains("\"traces_in_parallel\": 2"));

    // 1,100 x 1,000 cells: above the per-worker limit.
    let large = scan_scene(2, 10)
        .replace("cell_size = 1.0", "cell_size = 0.04")
        .replace("size = [40.0, 30.0, 1.0]", "size = [44.0, 40.0, 0.04]");
    let large = model(&large);
    assert!(large.grid.cells() > yee::plan::scan::TRACE_PER_WORKER_MAX_CELLS);
    assert_eq!(schedule(&large, 2), ScanSchedule::OneAfterAnother);
}

/// The CUDA plan of `m` on `gpus` (a `--gpus` spec) with `threads` host threads, the GPUs
/// changed by `edit` (their memory), under `options`.
fn gpu_scan(
    m: &yee::model::Model,
    gpus: &str,
    threads: usize,
    edit: impl Fn(&mut [yee::plan::Device]),
    options: yee::plan::PlanOptions,
) -> yee::plan::Plan {
    let mut list = yee::plan::parse_gpus(gpus).unwrap();
    edit(&mut list);
    let hardware = yee::plan::Hardware::new(list, 64 << 30, threads);
    let options = yee::plan::PlanOptions {
        backend: yee::run::BackendChoice::Cuda,
        threads: Some(threads),
        ..options
    };
    yee::plan::plan(m, &hardware, &options)
}

/// On GPUs a small grid's step is its kernel launches, so each GPU runs several traces at
/// once (each an engine of its own): as many as hide the launches, at most 8, no more than
/// the GPU's memory holds, the host's threads drive or the traces number, dealt round-robin
/// over every GPU the run may use (`--gpus`, less those that failed). A trace that takes more
/// than one slab keeps the traces one after another.
#[test]
fn the_plan_runs_small_traces_several_at_once_on_each_gpu() {
    use yee::plan::scan::{ScanSchedule::*, TRACES_PER_GPU_MAX};
    let m = model(&scan_scene(10, 100));
    let none = |_: &mut [yee::plan::Device]| {};
    let at = |p: &yee::plan::Plan| {
        let s = p.scan.clone().unwrap();
        (s.schedule, s.traces_in_parallel, s.gpus)
    };

    // One GPU, 16 host threads: launch-bound, so the most it may (8) of the 10 traces.
    let p = gpu_scan(&m, "1x80GiB", 16, none, Default::default());
    assert_eq!(p.backend, yee::plan::PlanBackend::Cuda);
    assert_eq!(at(&p), (TracesPerGpu, TRACES_PER_GPU_MAX, vec![0; 8]));
    let s = p.scan.clone().unwrap();
    // 10 traces, 8 at a time: two rounds, each as long as one launch-bound trace alone.
    let (one, all) = (s.seconds_per_trace.unwrap(), s.seconds.unwrap());
    assert!((all / one - 2.0).abs() < 1e-9, "{one} {all}");
    assert!((one - p.estimate.seconds.unwrap()).abs() < 1e-9 * one);
    assert!(
        p.render().contains("10 traces, 8 at a time"),
        "{}",
        p.render()
    );
    assert!(p.to_json().contains("\"schedule\": \"traces_per_gpu\""));

    // Four GPUs: all 10 traces at once, dealt round-robin.
    let p = gpu_scan(&m, "4x80GiB", 16, none, Default::default());
    assert_eq!(
        at(&p),
        (TracesPerGpu, 10, vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1])
    );
    // Three host threads drive three traces.
    let p = gpu_scan(&m, "4x80GiB", 3, none, Default::default());
    assert_eq!(at(&p), (TracesPerGpu, 3, vec![0, 1, 2]));
    // `--gpus 1,3`, and GPU 0 left out after a failed start.
    let only = yee::plan::PlanOptions {
        gpus: Some(vec![1, 3]),
        ..Default::default()
    };
    let p = gpu_scan(&m, "4x80GiB", 16, none, only);
    assert_eq!(at(&p).2, vec![1, 3, 1, 3, 1, 3, 1, 3, 1, 3]);
    assert!(
        p.notes.iter().any(|n| n.contains("--gpus 1,3")),
        "{:?}",
        p.notes
    );
    let failed = yee::plan::PlanOptions {
        exclude_gpus: vec![0],
        ..Default::default()
    };
    let p = gpu_scan(&m, "4x80GiB", 16, none, failed);
    assert!(!at(&p).2.contains(&0), "{:?}", at(&p).2);

    // A GPU that holds three traces' engines (beside its context) runs three at once.
    let per_trace = gpu_scan(&m, "1x80GiB", 16, none, Default::default()).slabs[0].bytes
        + yee::plan::scan::ENGINE_RESERVE;
    let small = |d: &mut [yee::plan::Device]| {
        d[0].memory_bytes = yee::plan::CUDA_CONTEXT_RESERVE + 3 * per_trace + per_trace / 2
    };
    let p = gpu_scan(&m, "1x80GiB", 16, small, Default::default());
    assert_eq!(at(&p), (TracesPerGpu, 3, vec![0; 3]));
    assert!(p
        .scan
        .unwrap()
        .reason
        .contains("as many as its memory holds"));

    // One host thread drives one trace at a time, and says so.
    let p = gpu_scan(&m, "1x80GiB", 1, none, Default::default());
    assert_eq!(at(&p), (OneAfterAnother, 1, vec![]));
    assert!(p.scan.unwrap().reason.starts_with("one host thread"));

    // Two slabs per GPU split one trace: one after another.
    let split = yee::plan::PlanOptions {
        slabs_per_gpu: Some(2),
        ..Default::default()
    };
    let p = gpu_scan(&m, "1x80GiB", 16, none, split);
    assert_eq!(at(&p), (OneAfterAnother, 1, vec![]));
}

/// Run `yee run` on `text`; (exit code, stderr, whether an output file appeared).
fn run_cli(name: &str, text: &str) -> (Option<i32>, String, bool) {
    let dir = tmp(name);
    std::fs::write(dir.join("scene.toml"), text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "scene.toml", "-o", "out.h5", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let exists = dir.join("out.h5").exists();
    let _ = std::fs::remove_dir_all(&dir);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        exists,
    )
}

/// The 1-based line of the first line of `text` that contains `needle` after line `after`.
fn line_of(text: &str, needle: &str, after: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in the scene"))
}

/// Every bad `[scan]` input exits with 2 before any output, naming the file, the line, the key
/// and what is allowed.
#[test]
fn bad_scan_input_is_a_clear_error() {
    let good = scan_scene(3, 10);
    let probe_line = line_of(&good, "name = \"rx\"", 0);
    let cases: Vec<(&str, String, &str, usize, &str)> = vec![
        (
            "no-scan-table",
            good.replace("[scan]\ntraces = 3", ""),
            "source[0].scan_step",
            // The table's two lines became one empty line.
            line_of(&good, "scan_step", 0) - 1,
            "add a `[scan]` table",
        ),
        (
            "zero-traces",
            good.replace("traces = 3", "traces = 0"),
            "scan.traces",
            line_of(&good, "traces = 3", 0),
            "whole number of traces >= 1, got 0",
        ),
        (
            "too-many-traces",
            good.replace("traces = 3", "traces = 1000000000"),
            "scan.traces",
            line_of(&good, "traces = 3", 0),
            "more than the 100000 a scan may have",
        ),
        (
            "fractional-traces",
            good.replace("traces = 3", "traces = 2.5"),
            "scan.traces",
            line_of(&good, "traces = 3", 0),
            "expected a whole number",
        ),
        (
            "unknown-key",
            good.replace("traces = 3", "traces = 3\ntrace_step = 2"),
            "scan.trace_step",
            line_of(&good, "traces = 3", 0) + 1,
            "allowed is `traces`",
        ),
        // The probe reaches the x_max PML (from x = 14 mm on) at trace 11.
        (
            "into-the-pml",
            good.replace("traces = 3", "traces = 12"),
            "monitor[0].scan_step",
            line_of(&good, "scan_step", probe_line),
            "trace 11 of 12 (counting from 0) moves the probe: its position [14.6, 7.3, 0] lies inside the 6-cell PML of the x_max face",
        ),
        (
            "out-of-the-domain",
            good.replace(
                &format!("scan_step = {SOURCE_STEP:?}"),
                "scan_step = [0.0, 0.0, 5.0]",
            ),
            "source[0].scan_step",
            line_of(&good, "scan_step", 0),
            "trace 1 of 3 (counting from 0) moves the source: its position [-8.3, 4, 5] lies outside the domain",
        ),
        (
            "snapshot",
            format!("{good}[[monitor]]\ntype = \"snapshot\"\nname = \"s\"\ncomponents = [\"Ez\"]\nevery = 5\n"),
            "monitor[3].type",
            good.lines().count() + 1,
            "snapshots cannot be taken in a [scan]",
        ),
        (
            "plane-wave",
            format!("{good}[[source]]\ntype = \"plane_wave\"\ndirection = \"-y\"\npolarization = \"Ez\"\nposition = 10.0\nwaveform = {{ type = \"ricker\", frequency = 1.5e10 }}\nscan_step = [1.0, 0.0, 0.0]\n"),
            "source[1].scan_step",
            good.lines().count() + 7,
            "a plane_wave source spans the domain",
        ),
        (
            "flux-step",
            good.replace(
                "plane = { y = -2.0 }",
                "plane = { y = -2.0 }\nscan_step = [1.0, 0.0, 0.0]",
            ),
            "monitor[2].scan_step",
            line_of(&good, "plane = { y = -2.0 }", 0) + 1,
            "`scan_step` belongs to probes and dipole sources",
        ),
    ];
    for (name, text, key, line, message) in cases {
        let (code, stderr, exists) = run_cli(name, &text);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(!exists, "{name}: no output on invalid input");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        let located = format!("scene.toml:{line}:");
        let hit = stderr.lines().any(|l| {
            l.contains(&located) && l.contains(&format!("`{key}`")) && l.contains(message)
        });
        assert!(
            hit,
            "{name}: want {located} `{key}` ... {message}\n{stderr}"
        );
    }
}

/// With a TF/SF source (which stays) and a moving probe, a flux plane's spectrum and incident
/// intensity are [traces, frequencies], each row that of the separate run of its trace.
#[test]
fn tfsf_spectra_are_per_trace() {
    let scene = |scan: &str, x: f64| {
        format!(
            r#"[simulation]
length_unit = "mm"
cell_size = 1.0
size = [40.0, 40.0, 1.0]
steps = 150
[boundaries]
default = {{ type = "pml", cells = 6 }}
z_min = {{ type = "periodic" }}
z_max = {{ type = "periodic" }}
[[geometry]]
shape = "cylinder"
material = "pec"
center = [0.0, 0.0, 0.0]
radius = 3.0
height = 10.0
axis = "z"
{scan}
[[source]]
type = "tfsf"
box = {{ center = [0.0, 0.0, 0.0], size = [20.0, 20.0, 20.0] }}
direction = "+x"
polarization = "Ez"
waveform = {{ type = "ricker", frequency = 1.5e10 }}
[[monitor]]
type = "probe"
name = "p"
position = [{x:?}, 5.0, 0.0]
components = ["Ez"]
{step}
[[monitor]]
type = "flux"
name = "back"
plane = {{ x = -12.0 }}
frequencies = {{ min = 1.0e10, max = 2.0e10, count = 3 }}
"#,
            step = if scan.is_empty() {
                ""
            } else {
                "scan_step = [2.0, 0.0, 0.0]"
            }
        )
    };
    let dir = tmp("tfsf");
    let scan = model(&scene("[scan]\ntraces = 2", -4.0));
    let out = dir.join("scan.h5");
    yee::run::run(&scan, &options(&out, 2, None), &mut Quiet).unwrap();
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(&out)
        .unwrap();
    let read2 = |p: &str| f.dataset(p).unwrap().read_2d::<f64>().unwrap();
    let (power, incident) = (
        read2("flux/back/power"),
        read2("flux/back/incident_intensity"),
    );
    let probe = f.dataset("probes/p/Ez").unwrap().read_2d::<f32>().unwrap();
    assert_eq!(incident.shape(), [2, 3]);
    for k in 0..2 {
        let single = model(&scene("", -4.0 + k as f64 * 2.0));
        let o = dir.join(format!("single{k}.h5"));
        yee::run::run(&single, &options(&o, 2, None), &mut Quiet).unwrap();
        let g = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(&o)
            .unwrap();
        let read = |p: &str| g.dataset(p).unwrap().read_raw::<f64>().unwrap();
        assert_eq!(
            bits64(&power.row(k).to_vec()),
            bits64(&read("flux/back/power"))
        );
        assert_eq!(
            bits64(&incident.row(k).to_vec()),
            bits64(&read("flux/back/incident_intensity"))
        );
        let ez = g.dataset("probes/p/Ez").unwrap().read_raw::<f32>().unwrap();
        assert_eq!(bits(&probe.row(k).to_vec()), bits(&ez), "trace {k}");
    }
    // Nothing but the probe moves: both traces see the same flux.
    assert_eq!(power.row(0), power.row(1));
    assert_ne!(probe.row(0), probe.row(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every dataset of a scan's result file as bit patterns (values widened to f64, exactly,
/// complex as pairs), with the `traces_done`, `steps_done` and `complete` attributes: equal
/// maps are bit-for-bit equal files.
fn contents(path: &Path) -> std::collections::BTreeMap<String, Vec<u64>> {
    fn walk(g: &hdf5::Group, prefix: &str, out: &mut std::collections::BTreeMap<String, Vec<u64>>) {
        for name in g.member_names().unwrap() {
            let full = format!("{prefix}/{name}");
            if let Ok(sub) = g.group(&name) {
                walk(&sub, &full, out);
                continue;
            }
            let ds = g.dataset(&name).unwrap();
            let bits: Vec<u64> = if ds.size() == 0 {
                Vec::new()
            } else if let Ok(v) = ds.read_raw::<f64>() {
                v.iter().map(|x| x.to_bits()).collect()
            } else {
                let v: Vec<yee::output::Complex> = ds.read_raw().unwrap();
                v.iter()
                    .flat_map(|c| [c.r.to_bits(), c.i.to_bits()])
                    .collect()
            };
            out.insert(full, bits);
        }
    }
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = std::collections::BTreeMap::new();
    walk(&f, "", &mut out);
    for name in ["traces_done", "steps_done"] {
        let v: u64 = f.attr(name).unwrap().read_scalar().unwrap();
        out.insert(format!("@{name}"), vec![v]);
    }
    let complete: bool = f.attr("complete").unwrap().read_scalar().unwrap();
    out.insert("@complete".into(), vec![complete as u64]);
    out
}

/// `got` holds the same datasets as `want`, bit for bit.
fn assert_same_file(got: &Path, want: &Path) {
    let (g, w) = (contents(got), contents(want));
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        w.keys().collect::<Vec<_>>(),
        "the same datasets"
    );
    assert!(w.contains_key("/probes/rx/Ez") && w.contains_key("/flux/down/power"));
    for (k, v) in &w {
        assert!(
            g[k] == *v,
            "{}: {k} differs from the uninterrupted scan's",
            got.display()
        );
    }
}

/// `yee` with `args` in `dir`.
fn yee_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A scan stopped by the stop flag (as Ctrl-C sets it) after its first trace, then resumed
/// with `yee resume` (no checkpoint file: the result is the state), ends with every dataset
/// equal to the uninterrupted scan's, bit for bit, whichever schedule either part ran on:
/// stopped on one thread (traces one after another) and resumed on two (one trace per worker),
/// and the other way round.
#[test]
fn a_stopped_scan_resumes_to_the_uninterrupted_file() {
    // Traces long enough (about 10 ms each) that the stop, set when trace 0 is reported,
    // reaches the workers before they finish the scan even on a loaded machine.
    let (traces, steps) = (8, 1000);
    let dir = tmp("resume");
    let scan = model(&scan_scene(traces, steps));
    let full = dir.join("full.h5");
    yee::run::run(&scan, &options(&full, 2, None), &mut Quiet).unwrap();
    for (name, stop_threads, resume_threads) in [("one-then-two", 1, "2"), ("two-then-one", 2, "1")]
    {
        let out = dir.join(format!("{name}.h5"));
        let opts = options(&out, stop_threads, None);
        let mut obs = StopAfterFirst(opts.stop.clone());
        assert!(matches!(
            yee::run::run(&scan, &opts, &mut obs),
            Err(RunError::Interrupted(_))
        ));
        let done: u64 = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(&out)
            .unwrap()
            .attr("traces_done")
            .unwrap()
            .read_scalar()
            .unwrap();
        assert!((1..traces as u64).contains(&done), "{name}: {done} done");
        assert!(!yee::checkpoint::path_for(&out).exists());
        let o = yee_in(
            &dir,
            &[
                "resume",
                out.to_str().unwrap(),
                "--backend",
                "cpu",
                "--threads",
                resume_threads,
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "resuming the scan `{}` at trace {done} of {traces}",
                out.display()
            )),
            "{name}: {err}"
        );
        // Only the remaining traces ran: the finished ones were kept, not computed again.
        assert!(
            err.contains(&format!("scan: {traces} of {traces} traces")),
            "{err}"
        );
        assert!(
            err.contains(&format!("; {done} were in the file before")),
            "{err}"
        );
        assert_same_file(&out, &full);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `traces_done` of a scan's result being written, when it can be read now.
fn traces_done(path: &Path) -> Option<u64> {
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .ok()?;
    f.attr("traces_done").ok()?.read_scalar::<u64>().ok()
}

/// SIGTERM to `yee run` during a scan keeps the finished traces, exits 143 and says how to
/// resume; `yee resume` on another thread count then finishes the file equal to an
/// uninterrupted scan's. It shows trace progress: a start line naming the traces and the
/// schedule, and plain progress lines that count traces.
#[test]
fn sigterm_during_a_scan_then_resume_equals_an_uninterrupted_scan() {
    // Long enough (8 traces of 15000 steps, a few hundred ms each on one thread) that the
    // signal comes mid-scan.
    let (traces, steps) = (8, 15000);
    let dir = tmp("sigterm");
    let text = scan_scene(traces, steps);
    std::fs::write(dir.join("s.toml"), &text).unwrap();
    let full = dir.join("full.h5");
    yee::run::run(&model(&text), &options(&full, 2, None), &mut Quiet).unwrap();
    let out = dir.join("part.h5");
    let mut child = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args([
            "run",
            "s.toml",
            "-o",
            "part.h5",
            "--backend",
            "cpu",
            "--threads",
            "1",
        ])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while traces_done(&out).is_none_or(|n| n < 2) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the scan ended before the signal"
        );
        assert!(t0.elapsed().as_secs() < 60, "no trace finished");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: sending a signal to a child process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(143), "{err}");
    assert!(err.contains("resume with yee resume part.h5"), "{err}");
    assert!(
        err.contains(&format!(
            "running {traces} traces of 1200 cells x {steps} steps on cpu (one after another, 1 slab, 1 thread)"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("trace 0/{traces}")) || err.contains(&format!("/{traces}  t =")),
        "{err}"
    );
    assert!(!err.contains(&format!("step 1/{traces}")), "{err}");
    assert!(err.contains("checkpoint 0%"), "{err}");
    let done = traces_done(&out).unwrap();
    assert!((2..traces as u64).contains(&done), "{done}");
    assert!(
        !yee::checkpoint::path_for(&out).exists(),
        "a scan writes no checkpoint"
    );
    let o = yee_in(
        &dir,
        &["resume", "part.h5", "--backend", "cpu", "--threads", "2"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "(one trace per worker, 2 at a time), from trace {done}"
        )),
        "{err}"
    );
    assert_same_file(&out, &full);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `yee resume` refuses, with exit 2 and the reason, a finished scan and a scan written by
/// another yee version, and leaves both files as they were; an ordinary result without a
/// checkpoint is refused as before, naming the missing checkpoint.
#[test]
fn resume_refuses_a_finished_or_foreign_scan() {
    let dir = tmp("refuse");
    let text = scan_scene(3, 50);
    let done = dir.join("done.h5");
    yee::run::run(&model(&text), &options(&done, 1, None), &mut Quiet).unwrap();
    let before = contents(&done);
    let o = yee_in(&dir, &["resume", "done.h5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is a finished scan (all 3 traces are in it)"),
        "{err}"
    );
    assert_eq!(contents(&done), before);

    let other = dir.join("other.h5");
    let opts = options(&other, 1, None);
    let mut obs = StopAfterFirst(opts.stop.clone());
    assert!(yee::run::run(&model(&text), &opts, &mut obs).is_err());
    {
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open_rw(&other)
            .unwrap();
        let v: hdf5::types::VarLenUnicode = "0.0.1-other".parse().unwrap();
        f.attr("yee_version").unwrap().write_scalar(&v).unwrap();
    }
    let before = contents(&other);
    let o = yee_in(&dir, &["resume", "other.h5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("it was written by yee 0.0.1-other"), "{err}");
    assert_eq!(contents(&other), before);
    let set = |name: &str, value: &str| {
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open_rw(&other)
            .unwrap();
        let v: hdf5::types::VarLenUnicode = value.parse().unwrap();
        f.attr(name).unwrap().write_scalar(&v).unwrap();
    };
    set("yee_version", env!("CARGO_PKG_VERSION"));
    // Through the library: another scene (more steps) than the file's.
    let mut resume = options(&other, 1, None);
    resume.resume = true;
    match yee::run::run(&model(&scan_scene(3, 60)), &resume, &mut Quiet) {
        Err(RunError::Resume(e)) => assert!(e.contains("another scene"), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Another precision than the scene's.
    set("precision", "f64");
    let o = yee_in(&dir, &["resume", "other.h5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("it holds f64 results; the scene runs in f32"),
        "{err}"
    );
    assert_eq!(contents(&other), before);

    let plain = dir.join("plain.h5");
    let single = model(&trace_scene(0, 20));
    yee::run::run(&single, &options(&plain, 1, None), &mut Quiet).unwrap();
    let o = yee_in(&dir, &["resume", "plain.h5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no checkpoint"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
