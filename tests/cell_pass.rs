//! The recipe for a pass, proven on a toy: a stateful pass the engine does not know
//! (`yee::fault::CounterPass`, a per-cell step counter, a running sum of the field's square
//! and a small damping of the field, built only in the test build) is given to a model and
//! is then stepped by every way of stepping (two-pass and fused, 1 and 3 slabs, bit for bit),
//! allocated as the plan counts it, carried by checkpoints across slab counts, and planned on
//! the CPU with the reason (it has no device form), where a lumped element, which has one, is
//! planned on the GPU; `tests/mpi.rs` runs it over ranks through a checkpoint. Nothing
//! outside `src/fault.rs` names it.
#![cfg(feature = "fault-injection")]

use std::sync::Arc;
use yee::backend::cpu::CpuBackend;
use yee::backend::{Allocation, Backend, State, StepMode};
use yee::decomp::{split_even, HaloCopy, HaloPlan, SlabRange};
use yee::fault::CounterPass;
use yee::model::{Component, Model};
use yee::run::Stepper;

/// A dielectric block, CPML and a dipole inside the counter's box on 24 x 20 x 18 cells.
const SCENE: &str = r#"
[simulation]
length_unit = "mm"
cell_size = 1.0
size = [24.0, 20.0, 18.0]
steps = 40
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 4 }
[materials]
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "glass"
center = [3.0, 0.0, 0.0]
size = [6.0, 8.0, 6.0]
[[source]]
type = "dipole"
component = "Ez"
position = [-1.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 3.0e10 }
"#;

/// The counter's box of Ez cells: across the 3-slab split (x planes 8 and 16).
const CELLS: [[usize; 2]; 3] = [[5, 19], [7, 13], [6, 12]];

fn model(precision: &str) -> Model {
    let text = SCENE.replace("PRECISION", precision);
    let (mut model, _) = yee::scene::load_str(&text, "toy.toml").unwrap_or_else(|e| panic!("{e}"));
    model.cell_passes.push(Arc::new(CounterPass {
        component: Component::Ez,
        cells: CELLS,
    }));
    model
}

fn copies(model: &Model, ranges: &[SlabRange]) -> Vec<HaloCopy> {
    let h = HaloPlan::new(ranges, &model.boundaries);
    h.after_h.iter().chain(&h.after_e).cloned().collect()
}

/// The state after `steps` steps from `start` (None: at rest) on `slabs` slabs.
fn run<T: yee::real::Real>(
    model: &Model,
    slabs: usize,
    mode: StepMode,
    start: Option<(&State<T>, usize)>,
    steps: usize,
) -> State<T> {
    let ranges = split_even(model.grid.shape[0], slabs);
    let mut cpu = CpuBackend::<T>::new(model, &ranges);
    if let Some((state, _)) = start {
        cpu.import_state(state, &copies(model, &ranges)).unwrap();
    }
    let mut s = Stepper::new(model, &mut cpu, &ranges).with_mode(mode);
    if let Some((_, done)) = start {
        s.resume_after(done);
    }
    for _ in 0..steps {
        s.step();
    }
    cpu.export_state().unwrap()
}

fn bits<T: yee::real::Real>(st: &State<T>) -> Vec<u64> {
    st.fields
        .iter()
        .flatten()
        .chain(st.arrays.iter().flat_map(|a| &a.values))
        .map(|v| v.to_f64().to_bits())
        .collect()
}

fn every_way_of_stepping<T: yee::real::Real>(precision: &str) {
    let model = model(precision);
    let steps = model.grid.steps;
    let want = run::<T>(&model, 1, StepMode::TwoPass, None, steps);

    // The state holds the counter's array, `[slot][cell]`: slot 0 counts every step on every
    // cell of the box, slot 1 sums the field's square (the dipole sits inside the box).
    let counter = want
        .arrays
        .iter()
        .find(|a| a.name == "counter.state")
        .expect("the counter's state is registered");
    let cells: usize = CELLS.iter().map(|[a, b]| b - a).product();
    assert_eq!(counter.values.len(), 2 * cells);
    assert!(counter.values[..cells]
        .iter()
        .all(|&n| n.to_f64() == steps as f64));
    assert!(counter.values[cells..].iter().any(|&v| v.to_f64() > 0.0));

    // The damping changes the fields: the pass ran on them, not beside them.
    let mut plain = model.clone();
    plain.cell_passes.clear();
    let undamped = run::<T>(&plain, 1, StepMode::TwoPass, None, steps);
    assert!(
        undamped.fields[2] != want.fields[2],
        "the counter left Ez alone"
    );

    for (slabs, mode) in [
        (1, StepMode::Fused),
        (3, StepMode::TwoPass),
        (3, StepMode::Fused),
    ] {
        let got = run::<T>(&model, slabs, mode, None, steps);
        assert!(
            bits(&got) == bits(&want),
            "{precision}: {slabs} slabs {} differ from 1 slab two-pass",
            mode.name()
        );
    }

    // Through a checkpoint file after 15 steps, resumed on 2 slabs: the same end state.
    let dir =
        std::env::temp_dir().join(format!("yee-cell-pass-{}-{precision}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("toy.checkpoint.h5");
    let mut at = run::<T>(&model, 3, StepMode::Fused, None, 15);
    at.step = 15;
    yee::checkpoint::write(&path, &model, &at, &Default::default(), "cpu").unwrap();
    let loaded: State<T> = yee::checkpoint::read_state(&path, &model).unwrap();
    assert!(loaded.arrays.iter().any(|a| a.name == "counter.state"));
    let resumed = run::<T>(&model, 2, StepMode::Fused, Some((&loaded, 15)), steps - 15);
    assert!(
        bits(&resumed) == bits(&want),
        "{precision}: resumed on 2 slabs after a checkpoint differs"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_toy_pass_steps_the_same_bits_every_way_and_through_a_checkpoint() {
    every_way_of_stepping::<f32>("f32");
    every_way_of_stepping::<f64>("f64");
}

#[test]
fn the_backend_allocates_the_toy_pass_state_the_plan_counts() {
    for precision in ["f32", "f64"] {
        let model = model(precision);
        let p = model.precision.bytes() as u64;
        for slabs in [1, 3] {
            let ranges = split_even(model.grid.shape[0], slabs);
            let cpu = CpuBackend::<f32>::new(&model, &ranges);
            let cpu64 = CpuBackend::<f64>::new(&model, &ranges);
            let got = if p == 4 {
                cpu.allocation()
            } else {
                cpu64.allocation()
            };
            let mut planned = Allocation::default();
            for r in &ranges {
                planned.add(&yee::plan::bytes::slab_bytes(&model, *r, model.precision));
            }
            assert_eq!(got, planned, "{precision}, {slabs} slabs");
            let cells: u64 = CELLS.iter().map(|[a, b]| (b - a) as u64).product();
            assert_eq!(planned.passes, 2 * cells * p, "two slots per cell");
        }
    }
}

#[test]
fn the_plan_runs_a_scene_with_a_toy_pass_on_the_cpu_and_says_why() {
    let dir = std::env::temp_dir().join(format!("yee-cell-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.toml"), SCENE.replace("PRECISION", "f32")).unwrap();
    let spec = "Ez:5,19,7,13,6,12";
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["plan", "s.toml", "--gpus", "1x80GiB", "--json"])
        .env("YEE_TEST_COUNTER_PASS", spec)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["backend"], "cpu", "{plan}");
    let reason = plan["reason"].as_str().unwrap();
    assert!(reason.contains("cell passes"), "{reason}");
    let cells: u64 = CELLS.iter().map(|[a, b]| (b - a) as u64).product();
    assert_eq!(plan["bytes"]["passes"], 2 * cells * 4);
    // The same scene without the pass plans on the given GPU.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["plan", "s.toml", "--gpus", "1x80GiB", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["backend"], "cuda", "{plan}");
    assert_eq!(plan["bytes"]["passes"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cell pass with a device form (a lumped element: `CellPass::kernel`) no longer keeps its
/// scene on the CPU: the plan puts it on the GPU, counting there the pass's state and a row of
/// eight coefficients per cell (a real each), where the CPU holds the state alone. With the
/// toy pass beside it, which has no device form, the scene goes back to the CPU, saying why.
#[test]
fn the_plan_runs_lumped_elements_on_the_gpu_and_a_pass_without_a_kernel_on_the_cpu() {
    let dir = std::env::temp_dir().join(format!("yee-cell-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Two edges of Ez (a 2 mm gap of 1 mm cells) outside the counter's box.
    let text = SCENE.replace("PRECISION", "f32")
        + "[[geometry]]\nshape = \"box\"\ncenter = [-6.0, 3.0, 0.0]\nsize = [0.0, 0.0, 2.0]\n\
           element = { resistance = 50.0, direction = \"z\", name = \"r\" }\n";
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let plan = |backend: &str, counter: bool| -> serde_json::Value {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_yee"));
        cmd.args([
            "plan",
            "s.toml",
            "--gpus",
            "1x80GiB",
            "--json",
            "--backend",
            backend,
        ])
        .current_dir(&dir);
        if counter {
            cmd.env("YEE_TEST_COUNTER_PASS", "Ez:5,19,7,13,6,12");
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let gpu = plan("auto", false);
    assert_eq!(gpu["backend"], "cuda", "{gpu}");
    let cpu = plan("cpu", false);
    assert_eq!(cpu["backend"], "cpu", "{cpu}");
    let state = cpu["bytes"]["passes"].as_u64().unwrap();
    assert!(state > 0);
    assert_eq!(gpu["bytes"]["passes"].as_u64().unwrap(), state + 2 * 8 * 4);
    let both = plan("auto", true);
    assert_eq!(both["backend"], "cpu", "{both}");
    let reason = both["reason"].as_str().unwrap();
    assert!(reason.contains("cell passes have no CUDA form"), "{reason}");
    let _ = std::fs::remove_dir_all(&dir);
}
