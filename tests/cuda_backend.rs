//! The CUDA backend on a real GPU, against the CPU backend. Ignored by default (CI has no GPU);
//! `scripts/gpu-check.sh` runs them with `--ignored`.
//!
//! - the scenes of the host-kernel tests (PML, dielectrics, conductors, dipole and plane-wave
//!   sources, periodic / PMC / PEC faces, Drude, Lorentz, Debye and magnetic materials) in f32
//!   and f64, within 1e-6 / 1e-12 of each
//!   quantity's largest magnitude; mode sources (weighted sheets) and lumped ports and RLC
//!   elements (a cell pass's device form) in f32 bit for bit;
//! - 1, 2 and 4 slabs on one GPU giving the same fields bit for bit (a race in the halo
//!   exchange or its overlap with the interior update would show here);
//! - the multi-GPU paths on one card: two logical GPUs on one device (cross-GPU events and
//!   `cuMemcpyPeerAsync`), and every halo forced through pinned host memory; on a machine with
//!   two or more GPUs, the real thing too;
//! - monitors read as the time loop reads them (probe ring, snapshots queued and taken a step
//!   later, flux DFTs accumulated on the device) and also at once;
//! - out of memory at allocation reported as an error with the memory given back;
//! - `run` with `--backend cuda` end to end: the CPU's HDF5 file bit for bit (probe series,
//!   snapshot rows, flux spectra); and a GPU failure mid-run (the engine's test hook) exiting
//!   with code 1 and a valid file with `complete = false`.
#![cfg(feature = "cuda")]

mod cuda_support;

use cuda_support::*;
use yee::backend::cuda::placement::{new_backend, Placement};
use yee::backend::cuda::{CudaDevice, CudaEngine, CudaError, EngineOptions};
use yee::decomp::split_even;
use yee::model::Model;
use yee::real::Real;

fn cuda_trace<T: Real>(model: &Model, slabs: usize, logical_gpus: usize, staged: bool) -> Trace {
    cuda_trace_with::<T>(model, slabs, logical_gpus, staged, Reads::Queued)
}

fn cuda_trace_with<T: Real>(
    model: &Model,
    slabs: usize,
    logical_gpus: usize,
    staged: bool,
    reads: Reads,
) -> Trace {
    let ranges = split_even(model.grid.shape[0], slabs);
    let gpu_of: Vec<usize> = (0..ranges.len())
        .map(|s| s * logical_gpus / ranges.len())
        .collect();
    let dev = CudaDevice::new_logical(&vec![0; logical_gpus], T::PRECISION)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut b = CudaEngine::<CudaDevice, T>::new(
        dev,
        model,
        &ranges,
        &gpu_of,
        EngineOptions {
            staged_halos: staged,
        },
        "cuda",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drive_with(model, &mut b, &ranges, reads)
}

fn against_cpu<T: Real>(
    scene: &str,
    steps: usize,
    slabs: usize,
    logical_gpus: usize,
    staged: bool,
) {
    let model = model(scene, T::PRECISION.name(), steps);
    let want = cpu_trace::<T>(&model);
    let got = cuda_trace::<T>(&model, slabs, logical_gpus, staged);
    let what = format!(
        "{} {} on {slabs} slab(s), {logical_gpus} logical GPU(s), staged {staged}",
        model.name,
        T::PRECISION.name()
    );
    let worst = assert_close(&got, &want, tolerance::<T>(), &what);
    eprintln!("{what}: largest relative difference from the CPU {worst:e}");
}

fn identical(a: &Trace, b: &Trace, what: &str) {
    assert_eq!(a.fields, b.fields, "{what}: fields differ");
    assert_eq!(a.probes, b.probes, "{what}: probes differ");
    assert_eq!(a.snapshots, b.snapshots, "{what}: snapshots differ");
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_pml_dielectric_conductor_dipole_f32() {
    against_cpu::<f32>(PML_SCENE, 60, 1, 1, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_pml_dielectric_conductor_dipole_f64() {
    against_cpu::<f64>(PML_SCENE, 60, 1, 1, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_dispersive_and_magnetic_materials_f32_and_f64() {
    against_cpu::<f32>(MATERIALS_SCENE, 60, 3, 1, false);
    against_cpu::<f64>(MATERIALS_SCENE, 60, 3, 1, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_a_tfsf_box_axial_and_oblique_f32_and_f64() {
    for (dir, pol) in [
        ("\"+x\"", "\"Ez\""),
        ("[1.0, 2.0, 3.0]", "[-2.0, 1.0, 0.0]"),
    ] {
        let scene = TFSF_SCENE
            .replace("DIRECTION", dir)
            .replace("POLARIZATION", pol);
        against_cpu::<f32>(&scene, 60, 3, 1, false);
        against_cpu::<f64>(&scene, 60, 3, 1, false);
        against_cpu::<f64>(&scene, 60, 1, 1, false);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_conformal_pec_cut_faces_f32_and_f64() {
    against_cpu::<f32>(CONFORMAL_SCENE, 60, 3, 1, false);
    against_cpu::<f64>(CONFORMAL_SCENE, 60, 1, 1, false);
}

/// Mode sources on a 2-D grid, the scene of `tests/host_kernels.rs`'s mode-source tests: the
/// fundamental +x mode of a silicon guide along x (sheets inside the first of three slabs) and
/// the second -y mode of a guide along y (sheets normal to y across every slab).
const MODE_SCENE: &str = r#"
[simulation]
name = "mode_src"
length_unit = "um"
cell_size = 0.05
size = [2.0, 1.5, 0.05]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 8 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
si = { epsilon = 12.0 }
[[geometry]]
shape = "box"
material = "si"
center = [0.0, 0.0, 0.0]
size = [20.0, 0.3, 20.0]
[[geometry]]
shape = "box"
material = "si"
center = [0.3, 0.0, 0.0]
size = [0.3, 20.0, 20.0]
[[source]]
type = "mode"
box = { center = [-0.5, 0.0, 0.0], size = [0.0, 1.5, 0.05] }
direction = "+x"
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 4.0e13 }
[[source]]
type = "mode"
box = { center = [0.0, 0.35, 0.0], size = [1.9, 0.0, 0.05] }
direction = "-y"
mode = 1
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 4.0e13 }
[[monitor]]
type = "probe"
name = "p"
position = [0.4, -0.1, 0.0]
components = ["Ex", "Ey", "Ez", "Hz"]
"#;

/// Mode sources (`inject_source` with a weight per cell) on the GPU against the CPU on 1 and 3
/// slabs: f32 bit for bit (the GPU flushes f32 subnormals as the CPU's threads do), f64 within
/// the tolerance (subnormals may differ there).
#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_mode_sources_f32_bit_for_bit_and_f64() {
    let m32 = model(MODE_SCENE, "f32", 60);
    yee::modes::prepare(&m32).unwrap();
    let m64 = model(MODE_SCENE, "f64", 60);
    yee::modes::prepare(&m64).unwrap();
    let (want32, want64) = (cpu_trace::<f32>(&m32), cpu_trace::<f64>(&m64));
    for slabs in [1, 3] {
        let what = format!("mode sources on {slabs} slab(s)");
        assert_identical(
            &cuda_trace::<f32>(&m32, slabs, 1, false),
            &want32,
            &format!("{what}, f32"),
        );
        let got64 = cuda_trace::<f64>(&m64, slabs, 1, false);
        let worst = assert_close(&got64, &want64, tolerance::<f64>(), &format!("{what}, f64"));
        eprintln!("{what}, f64: largest relative difference from the CPU {worst:e}");
    }
}

/// The CUDA engine's trace of `model` on slabs cut at x planes `cuts`, one GPU.
fn cuda_trace_cut<T: Real>(model: &Model, cuts: &[usize]) -> Trace {
    let mut at = vec![0];
    at.extend_from_slice(cuts);
    at.push(model.grid.shape[0]);
    let ranges: Vec<_> = at
        .windows(2)
        .map(|w| yee::decomp::SlabRange { x0: w[0], x1: w[1] })
        .collect();
    let dev = CudaDevice::new_logical(&[0], T::PRECISION).unwrap_or_else(|e| panic!("{e}"));
    let mut b = CudaEngine::<CudaDevice, T>::new(
        dev,
        model,
        &ranges,
        &vec![0; ranges.len()],
        EngineOptions::default(),
        "cuda",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drive_with(model, &mut b, &ranges, Reads::Queued)
}

/// The surface ports of a metal sphere (`kernels/ports.cu`) over 3 slabs on 3 logical GPUs of
/// one device, each GPU trading its boundary ports' values with the GPUs beside it peer to peer
/// and through pinned memory: f32 bit for bit (fields, probes, snapshots), f64 within the
/// tolerance.
#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_surface_ports_over_logical_gpus() {
    let scene = MATERIALS_SCENE.replace("metal = { conformal = false, ", "metal = { ");
    let m = model(&scene, "f32", 60);
    assert!(!m.surface_ports().is_empty());
    let want = cpu_trace::<f32>(&m);
    for staged in [false, true] {
        let got = cuda_trace::<f32>(&m, 3, 3, staged);
        identical(&got, &want, &format!("ports over 3 GPUs, staged {staged}"));
    }
    against_cpu::<f64>(&scene, 60, 3, 3, false);
}

/// Lumped ports and elements (`kernels/lumped.cu`) on the GPU against the CPU on one slab and
/// on three cut through the elements' planes (the port's and the series element's first in its
/// slab, the shunt's box split between two): f32 bit for bit (fields, probes with the
/// terminals' samples, snapshots), f64 within the tolerance (subnormals may differ there);
/// then `run --backend cuda` end to end in f32, whose file (probes, snapshots, and the ports'
/// and elements' series) is the CPU run's bit for bit, the plan having put it on the GPU.
#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_lumped_ports_and_elements_f32_bit_for_bit_and_f64() {
    let (m32, m64) = (lumped_model("f32", 300), lumped_model("f64", 300));
    let (want32, want64) = (cpu_trace::<f32>(&m32), cpu_trace::<f64>(&m64));
    for cuts in [vec![], vec![10, 14], vec![11, 15]] {
        let what = format!("lumped circuits cut at {cuts:?}");
        assert_identical(
            &cuda_trace_cut::<f32>(&m32, &cuts),
            &want32,
            &format!("{what}, f32"),
        );
        let got64 = cuda_trace_cut::<f64>(&m64, &cuts);
        let worst = assert_close(&got64, &want64, tolerance::<f64>(), &format!("{what}, f64"));
        eprintln!("{what}, f64: largest relative difference from the CPU {worst:e}");
    }
    use yee::run::{run, BackendChoice, Quiet, RunOptions};
    let dir = std::env::temp_dir().join(format!("yee-cuda-lumped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = model(LUMPED_SCENE, "f32", 300);
    let mut files = Vec::new();
    for (backend, name) in [(BackendChoice::Cuda, "cuda"), (BackendChoice::Cpu, "cpu")] {
        let path = dir.join(format!("lumped-{name}.h5"));
        let mut opts = RunOptions::new(path.clone());
        opts.backend = backend;
        opts.slabs_per_gpu = Some(3);
        let s = run(&model, &opts, &mut Quiet).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.backend, name);
        assert!(s.complete);
        let mut contents = h5_contents(&path);
        let f = hdf5::File::open(&path).unwrap();
        for series in [
            "ports/feed/voltage",
            "ports/feed/current",
            "elements/rlc/voltage",
            "elements/rlc/current",
            "elements/shunt/voltage",
            "elements/shunt/current",
        ] {
            let values: Vec<f64> = f.dataset(series).unwrap().read_raw().unwrap();
            contents.insert(series.to_string(), values);
        }
        files.push(contents);
    }
    assert_same_contents(&files[0], &files[1], "lumped f32, CUDA against CPU");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_periodic_pmc_plane_wave_f32_and_f64() {
    against_cpu::<f32>(PERIODIC_SCENE, 40, 3, 1, false);
    against_cpu::<f64>(PERIODIC_SCENE, 40, 3, 1, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_matches_cpu_with_pmc_mirror_halo_f32_and_f64() {
    against_cpu::<f32>(PMC_SCENE, 50, 3, 1, false);
    against_cpu::<f64>(PMC_SCENE, 50, 3, 1, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_one_two_and_four_slabs_on_one_gpu_give_identical_fields_f32_and_f64() {
    for precision in ["f32", "f64"] {
        let model = model(PML_SCENE, precision, 60);
        let run = |slabs| match precision {
            "f32" => cuda_trace::<f32>(&model, slabs, 1, false),
            _ => cuda_trace::<f64>(&model, slabs, 1, false),
        };
        let one = run(1);
        identical(&run(2), &one, &format!("{precision}: 2 slabs vs 1"));
        identical(&run(4), &one, &format!("{precision}: 4 slabs vs 1"));
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_face_patch_dfts_of_flux_and_far_field_boxes_match_cpu_f32_and_f64() {
    // A flux box with its x_min face on a slab boundary and a far-field box across every slab.
    against_cpu::<f32>(BOX_SCENE, 40, 1, 1, false);
    against_cpu::<f32>(BOX_SCENE, 40, 3, 1, false);
    against_cpu::<f64>(BOX_SCENE, 40, 3, 2, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_queued_probes_snapshots_and_device_flux_dft_match_cpu_f32_and_f64() {
    // Flux planes on a slab boundary, inside a slab and across slabs; the probe ring, and
    // snapshots taken after the next step has overwritten the fields.
    against_cpu::<f32>(FLUX_SCENE, 60, 1, 1, false);
    against_cpu::<f32>(FLUX_SCENE, 60, 3, 1, false);
    against_cpu::<f64>(FLUX_SCENE, 60, 3, 2, false);
    // Read at once (sample / gather) as well: the same values.
    let model = model(FLUX_SCENE, "f32", 40);
    let queued = cuda_trace_with::<f32>(&model, 3, 1, false, Reads::Queued);
    let at_once = cuda_trace_with::<f32>(&model, 3, 1, false, Reads::Immediate);
    identical(&queued, &at_once, "queued vs immediate reads");
    assert_eq!(queued.flux, at_once.flux);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_peer_path_between_two_logical_gpus_matches_cpu_f32_and_f64() {
    against_cpu::<f32>(PML_SCENE, 60, 4, 2, false);
    against_cpu::<f64>(PERIODIC_SCENE, 40, 3, 2, false);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_halos_staged_through_pinned_host_memory_match_cpu_f32_and_f64() {
    against_cpu::<f32>(PML_SCENE, 60, 4, 2, true);
    against_cpu::<f64>(PMC_SCENE, 50, 3, 1, true);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_real_multi_gpu_matches_cpu_when_the_machine_has_two_gpus() {
    let gpus = yee::backend::cuda::probe_gpus().expect("GPUs");
    if gpus.len() < 2 {
        eprintln!(
            "skipping the real multi-GPU check: this machine has {} GPU",
            gpus.len()
        );
        return;
    }
    let model = model(PML_SCENE, "f32", 60);
    let want = cpu_trace::<f32>(&model);
    let placement = Placement::over(&model, &gpus[..2], 2);
    let mut b = new_backend::<f32>(&model, &placement, EngineOptions::default()).expect("backend");
    let got = drive(&model, &mut b, &placement.ranges);
    assert_close(&got, &want, 1e-6, "two GPUs");
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_out_of_memory_at_allocation_is_an_error_and_frees_what_it_took() {
    let g = yee::backend::cuda::probe_gpus().expect("GPUs");
    // A cube whose six fields alone are twice the card's memory.
    let n = ((g[0].memory_total as f64 * 2.0 / 24.0).cbrt()) as usize;
    let text = format!(
        "[simulation]\nlength_unit = \"mm\"\ncell_size = 1.0\nsize = [{n}.0, {n}.0, {n}.0]\nsteps = 1\n[boundaries]\ndefault = {{ type = \"pec\" }}\n"
    );
    let (model, _) = yee::scene::load_str(&text, "huge.toml").expect("scene");
    let placement = Placement {
        ranges: split_even(n, 1),
        ordinals: vec![0],
    };
    let before = yee::backend::cuda::probe_gpus().unwrap()[0].memory_free;
    match new_backend::<f32>(&model, &placement, EngineOptions::default()) {
        Err(CudaError::OutOfMemory(m)) => eprintln!("as expected: {m}"),
        Err(e) => panic!("expected out of memory, got {e}"),
        Ok(_) => panic!("a {n}^3 grid cannot fit"),
    }
    let after = yee::backend::cuda::probe_gpus().unwrap()[0].memory_free;
    assert!(
        after + (256 << 20) >= before,
        "memory given back: {before} free before, {after} after"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_run_writes_the_same_file_as_the_cpu_run() {
    use yee::run::{run, BackendChoice, Quiet, RunOptions};
    let dir = std::env::temp_dir().join(format!("yee-cuda-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (scene, precision) in [(PML_SCENE, "f32"), (FLUX_SCENE, "f32"), (FLUX_SCENE, "f64")] {
        let model = model(scene, precision, 60);
        let mut files = Vec::new();
        for (backend, name) in [(BackendChoice::Cuda, "cuda"), (BackendChoice::Cpu, "cpu")] {
            let path = dir.join(format!("{}-{precision}-{name}.h5", model.name));
            let mut opts = RunOptions::new(path.clone());
            opts.backend = backend;
            opts.slabs_per_gpu = Some(2);
            let s = run(&model, &opts, &mut Quiet).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.backend, name);
            assert!(s.complete);
            files.push(h5_contents(&path));
        }
        let (got, want) = (&files[0], &files[1]);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        );
        // No kernel calls a transcendental function (the DFT weights come from the host,
        // crate::flux::phasor) and f32 subnormals are flushed as on the CPU (--ftz=true), so
        // the GPU's file is the CPU's bit for bit. An f64 run could differ once values go
        // subnormal (a GPU cannot flush doubles); these 60 steps stay far above 1e-308.
        assert_same_contents(
            got,
            want,
            &format!("{} {precision}, CUDA against CPU", model.name),
        );
        eprintln!(
            "{} {precision}: the CUDA run's file matches the CPU run's",
            model.name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
fn cuda_failure_mid_run_exits_1_with_a_valid_incomplete_file() {
    let dir = std::env::temp_dir().join(format!("yee-cuda-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("flux.toml");
    std::fs::write(
        &scene,
        FLUX_SCENE
            .replace("PRECISION", "f32")
            .replace("STEPS", "80"),
    )
    .unwrap();
    let out = dir.join("flux.h5");
    // YEE_BIN: the binary next to the test binaries in scripts/gpu-check.sh's bundle.
    let bin = std::env::var("YEE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_yee").to_string());
    let r = std::process::Command::new(bin)
        .args(["run", "--backend", "cuda", "--quiet", "--overwrite", "-o"])
        .arg(&out)
        .arg(&scene)
        .env("YEE_CUDA_FAIL_AT_STEP", "41")
        .output()
        .expect("run yee");
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the GPU failed while") && stderr.contains("detected in step 41"),
        "{stderr}"
    );
    assert!(stderr.contains("results up to step 40"), "{stderr}");
    let got = h5_contents(&out);
    assert_eq!(got["@complete"], vec![0.0]);
    assert_eq!(got["@steps_done"], vec![40.0]);
    assert!(
        !got["snapshots/ez/Ez"].is_empty(),
        "snapshots written before the failure"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
