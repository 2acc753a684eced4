//! `yee bench`: update throughput on a vacuum cube with a 10-cell CPML (or PEC walls) on every
//! face, in Mcells/s and as a fraction of the two-pass and fused rooflines (design.md section
//! 3) at the memory bandwidth measured in the same run: a large device-to-device copy on a GPU
//! (bandwidth = 2 x bytes / time), a STREAM-like triad on the host (a = b + s c, 3 x 8 bytes per
//! element). The two-pass roofline is bandwidth / (18 x value bytes) cell updates per second
//! (72 bytes per cell and step in f32, 144 in f64), the fused one bandwidth / (12 x value
//! bytes) (48 in f32, 96 in f64). Both step modes are timed side by side in one run, in
//! alternating rounds, so that a machine whose speed drifts affects both alike.

use crate::backend::cpu::CpuBackend;
use crate::backend::StepMode;
use crate::backend::{Backend, Engine};
use crate::decomp::SlabRange;
use crate::model::{Model, Precision};
use crate::plan::{BackendChoice, Hardware, PlanOptions};
use crate::real::Real;
use crate::run::{StartError, Stepper};
use std::time::Instant;

/// Which engine to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchBackend {
    /// The rayon CPU engine.
    Cpu,
    /// The CUDA engine.
    Cuda,
}

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// Engine.
    pub backend: BenchBackend,
    /// Cells along each edge of the cube.
    pub size: usize,
    /// Field precision.
    pub precision: Precision,
    /// Timed steps (after two warm-up steps).
    pub steps: usize,
    /// CPU worker threads (None: all cores).
    pub threads: Option<usize>,
    /// CPU slabs (None: one per thread).
    pub slabs: Option<usize>,
    /// CUDA GPU ordinals (None: GPU 0).
    pub gpus: Option<Vec<usize>>,
    /// CUDA slabs per GPU.
    pub slabs_per_gpu: usize,
    /// Fill the half x < 0 of the cube with a two-pole Drude-Lorentz metal (the dispersive
    /// pass's cost next to the vacuum cube's).
    pub metal: bool,
    /// PEC walls instead of the 10-cell CPML (the update without the CPML's extra traffic).
    pub pec: bool,
    /// The step modes to time, side by side (a mode the engine lacks is left out and said).
    pub modes: Vec<StepMode>,
    /// Steps the fused mode sweeps at once where the engine can (as `yee run
    /// --steps-per-sweep`; 1: one step per sweep).
    pub steps_per_sweep: usize,
}

/// A measurement.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchResult {
    /// "cpu" or "cuda".
    pub backend: String,
    /// What ran it ("2 threads", "NVIDIA H200").
    pub device: String,
    /// Cube edge in cells.
    pub size: usize,
    /// What fills the cube: "vacuum" or "half Drude-Lorentz metal".
    pub medium: &'static str,
    /// Cells.
    pub cells: u64,
    /// Timed steps.
    pub steps: usize,
    /// "f32" or "f64".
    pub precision: &'static str,
    /// Slabs.
    pub slabs: usize,
    /// Wall time of the timed steps, s.
    pub seconds: f64,
    /// Million cell updates per second.
    pub mcells_per_s: f64,
    /// Measured memory bandwidth, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// How the bandwidth was measured.
    pub bandwidth_method: String,
    /// Bytes per cell and step of the two-pass update (72 in f32, 144 in f64).
    pub bytes_per_cell_step: u64,
    /// bandwidth / bytes_per_cell_step, in Mcells/s.
    pub roofline_mcells_per_s: f64,
    /// mcells_per_s / roofline_mcells_per_s.
    pub fraction_of_roofline: f64,
    /// "10-cell CPML" or "PEC walls".
    pub walls: &'static str,
    /// Each mode timed, in the order asked for; the figures above are the first one's.
    pub modes: Vec<ModeResult>,
    /// Modes asked for that this engine does not have.
    pub modes_left_out: Vec<&'static str>,
}

/// The throughput of one step mode in a [`BenchResult`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModeResult {
    /// "fused" or "two-pass".
    pub mode: &'static str,
    /// Steps per sweep this mode took (the fused mode's where the engine sweeps several
    /// steps at once, else 1).
    pub steps_per_sweep: usize,
    /// Wall time of the mode's timed steps (the median round's rate over all its steps), s.
    pub seconds: f64,
    /// Million cell updates per second (the median of the rounds).
    pub mcells_per_s: f64,
    /// Each round's rate, Mcells/s.
    pub rounds_mcells_per_s: Vec<f64>,
    /// Bytes per cell and step this mode moves at best (two-pass 72, fused 48 in f32, plus
    /// the dispersive pass's traffic).
    pub bytes_per_cell_step: u64,
    /// mcells_per_s over the two-pass roofline.
    pub fraction_of_two_pass_roofline: f64,
    /// mcells_per_s over the fused roofline.
    pub fraction_of_fused_roofline: f64,
}

impl BenchResult {
    /// One line per figure, one per mode.
    pub fn render(&self) -> String {
        let fused_roof = self.bandwidth_bytes_per_s / self.fused_bytes() as f64 / 1e6;
        let mut out = format!(
            "backend      {} ({})\n\
             grid         {}^3 = {} cells ({}), {}, {} slab(s), {}, {} timed steps per mode\n",
            self.backend,
            self.device,
            self.size,
            self.cells,
            self.medium,
            self.precision,
            self.slabs,
            self.walls,
            self.steps,
        );
        for m in &self.modes {
            let label = if m.steps_per_sweep > 1 {
                format!("{} x{}", m.mode, m.steps_per_sweep)
            } else {
                m.mode.to_string()
            };
            out += &format!(
                "{:<13}{:.0} Mcells/s ({:.3} s; rounds {}), {} B per cell-step: {:.1}% of the two-pass roofline, {:.1}% of the fused\n",
                label,
                m.mcells_per_s,
                m.seconds,
                m.rounds_mcells_per_s
                    .iter()
                    .map(|r| format!("{r:.0}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                m.bytes_per_cell_step,
                100.0 * m.fraction_of_two_pass_roofline,
                100.0 * m.fraction_of_fused_roofline,
            );
        }
        for m in &self.modes_left_out {
            out += &format!("{m:<13}not on this engine\n");
        }
        out += &format!(
            "bandwidth    {:.1} GB/s ({})\n\
             roofline     two-pass {:.0} Mcells/s at {} bytes per cell-step, fused {:.0} Mcells/s at {} (the update's and the dispersive pass's)\n",
            self.bandwidth_bytes_per_s / 1e9,
            self.bandwidth_method,
            self.roofline_mcells_per_s,
            self.bytes_per_cell_step,
            fused_roof,
            self.fused_bytes(),
        );
        out
    }

    /// The fused mode's bytes per cell-step: the two-pass figure less 6 field values.
    fn fused_bytes(&self) -> u64 {
        let value = if self.precision == "f64" { 8 } else { 4 };
        self.bytes_per_cell_step - 6 * value
    }
}

/// Bytes per cell and step of the two-pass update: 18 field values read or written.
pub fn bytes_per_cell_step(precision: Precision) -> u64 {
    18 * precision.bytes() as u64
}

/// Bytes per cell and step of the fused update: each of the 6 field values read and written
/// once, 12 values.
pub fn fused_bytes_per_cell_step(precision: Precision) -> u64 {
    12 * precision.bytes() as u64
}

/// Bytes per cell and step that the update of `model` moves, for its roofline: the two-pass
/// update's [`bytes_per_cell_step`] plus, averaged over the cells, the H material ids of a
/// magnetic material and what the other passes move (the dispersive pass's traffic:
/// [`crate::plan::Layout::pass_traffic_per_step`]). The CPML's psi arrays are left out: the
/// rooflines are those of the field update.
pub fn model_bytes_per_cell_step(model: &Model) -> u64 {
    let cells = model.grid.cells() as f64;
    let layout = crate::plan::Layout::of(model);
    let whole = SlabRange {
        x0: 0,
        x1: model.grid.shape[0],
    };
    let extra = layout.pass_traffic_per_step(whole) + 3.0 * layout.magnetic as u8 as f64 * cells;
    bytes_per_cell_step(model.precision) + (extra / cells).round() as u64
}

/// The smallest cube edge the benchmark accepts: two 10-cell CPML layers and an interior.
pub const MIN_SIZE: usize = 24;

/// The largest cube edge the benchmark accepts: 1e12 cells, a scene's limit.
pub const MAX_SIZE: usize = 10_000;

/// Why the counts `yee bench` was given cannot be used, if so: steps, slabs, threads and
/// slabs per GPU at least 1, threads at most [`crate::run::MAX_THREADS`], the cube's edge
/// from [`MIN_SIZE`] to [`MAX_SIZE`].
pub fn refused(
    size: Option<usize>,
    steps: Option<usize>,
    (threads, slabs, slabs_per_gpu): (Option<usize>, Option<usize>, usize),
) -> Option<String> {
    if steps == Some(0) || slabs == Some(0) || threads == Some(0) || slabs_per_gpu == 0 {
        return Some("--steps, --slabs, --threads and --slabs-per-gpu must be at least 1".into());
    }
    if let Some(message) = crate::run::threads_refused(threads) {
        return Some(message);
    }
    if let Some(n) = size.filter(|&n| n < MIN_SIZE) {
        return Some(format!(
            "--size {n} is too small: the cube needs at least {MIN_SIZE} cells along each edge (two 10-cell CPML layers and an interior)"
        ));
    }
    size.filter(|&n| n > MAX_SIZE).map(|n| {
        format!("--size {n} is too large: at most {MAX_SIZE} ({MAX_SIZE}^3 = 1e12 cells, the most a scene may have)")
    })
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The cube is too small for its CPML layers.
    #[error("--size must be at least {MIN_SIZE} (two 10-cell CPML layers and an interior)")]
    TooSmall,
    /// The cube does not fit where it would run.
    #[error("--size {size}: the {size}^3 cube needs {needs} and {place} has {available}; the largest cube that fits there is about --size {largest}")]
    TooLarge {
        /// The cube edge asked for.
        size: usize,
        /// What it needs, in words.
        needs: String,
        /// "this host" or "GPU 0".
        place: String,
        /// The memory there, in words.
        available: String,
        /// The largest edge that fits, estimated from the bytes per cell.
        largest: usize,
    },
    /// The benchmark scene did not load (a bug: it is built here).
    #[error("{0}")]
    Scene(#[from] crate::scene::SceneError),
    /// The plan placed nothing, the engine did not start (the plan's or the driver's words), or
    /// the CPU worker pool could not be created.
    #[error("{0}")]
    Start(#[from] StartError),
    /// A GPU failed while the bandwidth was measured or the steps were timed.
    #[error("{0}")]
    Device(#[from] crate::backend::cuda::DeviceError),
    /// The fields blew up.
    #[error("the benchmark fields became NaN or infinite")]
    NonFinite,
}

/// The benchmark scene: a vacuum cube of `size` 1 mm cells, a 10-cell CPML on every face and
/// a z dipole at the centre.
pub fn vacuum_cube(
    size: usize,
    precision: Precision,
    steps: usize,
) -> Result<Model, crate::scene::SceneError> {
    cube(size, precision, steps, false)
}

/// The benchmark scene, with the half x < 0 filled with a two-pole (Drude + Lorentz) metal
/// when `metal` (every cell there holds three state values per E component: the Drude J and
/// the Lorentz J and P). The poles are resolved at the 1 mm cells (wp dt = 0.24).
pub fn cube(
    size: usize,
    precision: Precision,
    steps: usize,
    metal: bool,
) -> Result<Model, crate::scene::SceneError> {
    cube_with(size, precision, steps, metal, false)
}

/// [`cube`] with PEC walls instead of the CPML when `pec`.
pub fn cube_with(
    size: usize,
    precision: Precision,
    steps: usize,
    metal: bool,
    pec: bool,
) -> Result<Model, crate::scene::SceneError> {
    let walls = if pec {
        "{ type = \"pec\" }"
    } else {
        "{ type = \"pml\", cells = 10 }"
    };
    let mut text = format!(
        "[simulation]\nname = \"bench\"\nlength_unit = \"mm\"\ncell_size = 1.0\nsize = [{size}.0, {size}.0, {size}.0]\n\
         steps = {steps}\ncourant = 0.99\nprecision = \"{}\"\n\n[boundaries]\ndefault = {walls}\n\n\
         [[source]]\ntype = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]\n\
         waveform = {{ type = \"gaussian\", frequency = 1.5e10, bandwidth = 7.5e9 }}\n",
        precision.name()
    );
    if metal {
        text += &format!(
            "\n[materials]\nmetal = {{ epsilon = 1.0, drude = [{{ frequency = 2.0e10, damping = 1.0e9 }}], \
             lorentz = [{{ delta_epsilon = 1.0, frequency = 1.5e10, damping = 1.0e9 }}] }}\n\
             [[geometry]]\nshape = \"box\"\nmaterial = \"metal\"\ncenter = [{}, 0.0, 0.0]\nsize = [{}, {}, {}]\n",
            -(size as f64) / 4.0,
            size as f64 / 2.0,
            2.0 * size as f64,
            2.0 * size as f64
        );
    }
    crate::scene::load_str(&text, "bench.toml").map(|(m, _)| m)
}

/// Rounds each mode is timed in, alternately.
const ROUNDS: usize = 3;

/// The round times of each mode, the steps per round, and each mode's steps per sweep.
type ModeTimes = (Vec<Vec<f64>>, usize, Vec<usize>);

/// Time `modes` on `backend` (holding `model` split as `ranges`, stepped in sweeps of up to
/// `per_sweep` steps where it can): a warm-up step in each, then [`ROUNDS`] rounds in turn of
/// `steps / ROUNDS` steps each (at least one), `sync` waiting for the engine before each clock
/// read. The round times per mode, the steps per round, and each mode's steps per sweep.
fn time_modes<B: Backend>(
    model: &Model,
    backend: &mut B,
    ranges: &[SlabRange],
    (modes, per_sweep): (&[StepMode], usize),
    steps: usize,
    sync: &dyn Fn(&B) -> Result<(), BenchError>,
) -> Result<ModeTimes, BenchError> {
    let per_round = (steps / ROUNDS).max(1);
    let mut s = Stepper::new(model, backend, ranges).with_steps_per_sweep(per_sweep);
    let swept: Vec<usize> = modes
        .iter()
        .map(|&m| {
            s.set_mode(m);
            s.steps_per_sweep()
        })
        .collect();
    for &m in modes {
        s.set_mode(m);
        s.step();
    }
    let mut times = vec![Vec::new(); modes.len()];
    for _ in 0..ROUNDS {
        for (i, &m) in modes.iter().enumerate() {
            s.set_mode(m);
            sync(s.backend)?;
            let t = Instant::now();
            s.step_many(per_round, &[], &mut Default::default());
            sync(s.backend)?;
            times[i].push(t.elapsed().as_secs_f64());
        }
    }
    Ok((times, per_round, swept))
}

/// The modes of `opts` this engine has, and those it lacks.
fn modes_on(
    opts: &BenchOptions,
    fused: bool,
    default: &[StepMode],
) -> (Vec<StepMode>, Vec<&'static str>) {
    let mut modes = opts.modes.clone();
    if modes.is_empty() {
        modes = default.to_vec();
    }
    let lacks = |m: &StepMode| *m == StepMode::Fused && !fused;
    let left_out = modes
        .iter()
        .filter(|m| lacks(m))
        .map(|m| m.name())
        .collect();
    modes.retain(|m| !lacks(m));
    (modes, left_out)
}

/// Run the benchmark: the plan places the cube (on the CPU with the run's slab split, or on
/// the GPUs given, GPU 0 if none, with `--slabs-per-gpu`), the engine is built from the plan
/// as `yee run` builds it, and the steps are timed on it.
pub fn run(opts: &BenchOptions) -> Result<BenchResult, BenchError> {
    if opts.size < MIN_SIZE {
        return Err(BenchError::TooSmall);
    }
    let model = cube_with(
        opts.size,
        opts.precision,
        2 * (opts.steps + ROUNDS + 1),
        opts.metal,
        opts.pec,
    )?;
    let threads = opts.threads.unwrap_or_else(crate::run::all_cores);
    let pool = crate::run::worker_pool(threads)?;
    let cuda = opts.backend == BenchBackend::Cuda;
    let options = PlanOptions {
        backend: if cuda {
            BackendChoice::Cuda
        } else {
            BackendChoice::Cpu
        },
        slabs: opts.slabs,
        threads: Some(threads),
        gpus: cuda.then(|| opts.gpus.clone().unwrap_or_else(|| vec![0])),
        slabs_per_gpu: Some(opts.slabs_per_gpu),
        ..Default::default()
    };
    // The CPU benchmark needs no GPU probe: plan it on the host alone.
    let hardware = Hardware::detect((!cuda).then(Vec::new), None);
    let plan = crate::plan::plan(&model, &hardware, &options);
    if !plan.fits {
        // Said in the benchmark's terms: the plan's advice (a coarser cell_size, MPI ranks)
        // is for scenes, not for a cube whose size is the benchmark's one knob.
        let (place, memory) = match hardware.gpus.first().filter(|_| cuda) {
            Some(g) => ("GPU 0".to_string(), g.memory_bytes),
            None => ("this host".to_string(), hardware.host.memory_bytes),
        };
        let total = plan.bytes.total.max(1);
        let per_cell = total as f64 / plan.cells.max(1) as f64;
        // From the bytes per cell, then down by 2 % until the plan (with its headroom) agrees.
        let fits = |n: usize| {
            cube_with(n, opts.precision, 2, opts.metal, opts.pec)
                .is_ok_and(|m| crate::plan::plan(&m, &hardware, &options).fits)
        };
        let mut largest = ((memory as f64 / per_cell).cbrt().floor() as usize).max(MIN_SIZE);
        while largest > MIN_SIZE && !fits(largest) {
            largest = (largest * 49 / 50).max(MIN_SIZE);
        }
        return Err(BenchError::TooLarge {
            size: opts.size,
            needs: crate::plan::bytes_h(total),
            place,
            available: crate::plan::bytes_h(memory),
            largest,
        });
    }
    let (engine, ranges) = crate::run::start_engine(
        &model,
        &hardware,
        &options,
        &plan,
        &pool,
        &mut crate::run::Quiet,
    )?;
    let m = &model;
    let r = &ranges;
    match engine {
        Engine::CpuF32(mut b) => pool.install(|| cpu(m, &mut b, r, threads, opts)),
        Engine::CpuF64(mut b) => pool.install(|| cpu(m, &mut b, r, threads, opts)),
        Engine::BlochCpuF32(_) | Engine::BlochCpuF64(_) => {
            unreachable!("the benchmark's scenes have no Bloch phase")
        }
        #[cfg(feature = "cuda")]
        Engine::BlochCudaF32(_) | Engine::BlochCudaF64(_) => {
            unreachable!("the benchmark's scenes have no Bloch phase")
        }
        #[cfg(feature = "cuda")]
        Engine::CudaF32(mut b) => gpu(m, &mut b, r, &plan, opts),
        #[cfg(feature = "cuda")]
        Engine::CudaF64(mut b) => gpu(m, &mut b, r, &plan, opts),
    }
}

/// The result of `times` (per mode of `modes`, the round times of `per_round` steps).
#[allow(clippy::too_many_arguments)]
fn result(
    opts: &BenchOptions,
    model: &Model,
    backend: &str,
    device: String,
    slabs: usize,
    (modes, left_out): (Vec<StepMode>, Vec<&'static str>),
    (times, per_round, per_sweep): ModeTimes,
    bandwidth: f64,
    method: String,
) -> BenchResult {
    let cells = model.grid.cells();
    let bpcs = model_bytes_per_cell_step(model);
    let fused_bpcs =
        bpcs - bytes_per_cell_step(model.precision) + fused_bytes_per_cell_step(model.precision);
    let roof = bandwidth / bpcs as f64 / 1e6;
    let fused_roof = bandwidth / fused_bpcs as f64 / 1e6;
    let modes: Vec<ModeResult> = modes
        .iter()
        .zip(&times)
        .zip(per_sweep)
        .map(|((&m, t), steps_per_sweep)| {
            let rounds: Vec<f64> = t
                .iter()
                .map(|s| cells as f64 * per_round as f64 / s / 1e6)
                .collect();
            let mut sorted = rounds.clone();
            sorted.sort_by(f64::total_cmp);
            let mcells = sorted[sorted.len() / 2];
            ModeResult {
                mode: m.name(),
                steps_per_sweep,
                seconds: cells as f64 * (per_round * t.len()) as f64 / mcells / 1e6,
                mcells_per_s: mcells,
                rounds_mcells_per_s: rounds,
                bytes_per_cell_step: match m {
                    StepMode::Fused => fused_bpcs,
                    StepMode::TwoPass => bpcs,
                },
                fraction_of_two_pass_roofline: mcells / roof,
                fraction_of_fused_roofline: mcells / fused_roof,
            }
        })
        .collect();
    let first = &modes[0];
    BenchResult {
        backend: backend.into(),
        device,
        size: opts.size,
        medium: if opts.metal {
            "half Drude-Lorentz metal"
        } else {
            "vacuum"
        },
        cells,
        steps: per_round * ROUNDS,
        precision: opts.precision.name(),
        slabs,
        seconds: first.seconds,
        mcells_per_s: first.mcells_per_s,
        bandwidth_bytes_per_s: bandwidth,
        bandwidth_method: method,
        bytes_per_cell_step: bpcs,
        roofline_mcells_per_s: roof,
        fraction_of_roofline: first.mcells_per_s / roof,
        walls: if opts.pec {
            "PEC walls"
        } else {
            "10-cell CPML"
        },
        modes,
        modes_left_out: left_out,
    }
}

/// Time the CPU engine `b` (holding `model` split as `ranges`), in the run's pool.
fn cpu<T: Real>(
    model: &Model,
    b: &mut CpuBackend<T>,
    ranges: &[SlabRange],
    threads: usize,
    opts: &BenchOptions,
) -> Result<BenchResult, BenchError> {
    let bandwidth = host_triad_bandwidth();
    // The CPU's own update first: its figures head the result.
    let modes = modes_on(
        opts,
        b.has_fused_step(),
        &[StepMode::Fused, StepMode::TwoPass],
    );
    let per_sweep = crate::run::steps_per_sweep_for(opts.steps_per_sweep, ranges.len(), threads);
    let times = time_modes(model, b, ranges, (&modes.0, per_sweep), opts.steps, &|_| {
        Ok(())
    })?;
    if !b.all_finite() {
        return Err(BenchError::NonFinite);
    }
    Ok(result(
        opts,
        model,
        "cpu",
        format!("{threads} threads, {} vectors", b.isa()),
        ranges.len(),
        modes,
        times,
        bandwidth,
        "STREAM triad on the host, 3 x 256 MiB".into(),
    ))
}

/// Host memory bandwidth from a STREAM-like triad a = b + s c over three 256 MiB arrays of
/// f64 in the current rayon pool: the best of five passes, counting 24 bytes per element.
pub fn host_triad_bandwidth() -> f64 {
    crate::devices::host_triad(32 << 20, 5)
}

/// Time the CUDA engine `b` (holding `model` split as `ranges`, as `plan` placed it).
#[cfg(feature = "cuda")]
fn gpu<T: Real>(
    model: &Model,
    b: &mut crate::backend::cuda::CudaBackend<T>,
    ranges: &[SlabRange],
    plan: &crate::plan::Plan,
    opts: &BenchOptions,
) -> Result<BenchResult, BenchError> {
    // The engine's GPUs by driver ordinal, named as the plan lists them (by ordinal).
    let gpus: Vec<(usize, &str)> = b
        .device()
        .ordinals()
        .iter()
        .map(|&o| (o, plan.devices.get(o).map_or("GPU", |d| d.name.as_str())))
        .collect();
    let dev = b.device();
    let (free, _) = dev.memory(0)?;
    let copy_bytes = (free / 4).min(4 << 30) & !((1 << 20) - 1);
    // Every GPU is taken to be as fast as the first.
    let bandwidth = dev.copy_bandwidth(0, copy_bytes)? * gpus.len() as f64;
    // The GPUs step two-pass: a fused kernel (measured at 0.47x the two-pass rate on an
    // H200, docs/performance.md) left the product.
    let modes = modes_on(opts, b.has_fused_step(), &[StepMode::TwoPass]);
    let sync = |b: &crate::backend::cuda::CudaBackend<T>| -> Result<(), BenchError> {
        Ok(b.device().synchronize()?)
    };
    let times = time_modes(
        model,
        b,
        ranges,
        (&modes.0, opts.steps_per_sweep),
        opts.steps,
        &sync,
    )?;
    if !b.all_finite() {
        return Err(BenchError::NonFinite);
    }
    let names: Vec<String> = gpus
        .iter()
        .map(|(ordinal, name)| format!("{ordinal} {name}"))
        .collect();
    let method = format!(
        "device-to-device copy of {} MiB on GPU {}, x {} GPU(s)",
        copy_bytes >> 20,
        gpus[0].0,
        gpus.len()
    );
    Ok(result(
        opts,
        model,
        "cuda",
        names.join(", "),
        ranges.len(),
        modes,
        times,
        bandwidth,
        method,
    ))
}
