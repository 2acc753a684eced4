//! `yee bench`: update throughput on a vacuum cube with a 10-cell CPML on every face, in
//! Mcells/s and as a fraction of the two-pass roofline (design.md section 3) at the memory
//! bandwidth measured in the same run: a large device-to-device copy on a GPU (bandwidth =
//! 2 x bytes / time), a STREAM-like triad on the host (a = b + s c, 3 x 8 bytes per element).
//! The roofline is bandwidth / (18 x value bytes) cell updates per second: 72 bytes per cell
//! and step in f32, 144 in f64.

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::decomp::{split_even, HaloPlan};
use crate::model::{Model, Precision};
use crate::real::Real;
use crate::run::{magnetic_source_values, source_values};
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
}

impl BenchResult {
    /// One line per figure.
    pub fn render(&self) -> String {
        format!(
            "backend      {} ({})\n\
             grid         {}^3 = {} cells, {}, {} slab(s), 10-cell CPML, {} timed steps\n\
             throughput   {:.0} Mcells/s ({:.3} s)\n\
             bandwidth    {:.1} GB/s ({})\n\
             roofline     {:.0} Mcells/s at {} bytes per cell-step\n\
             fraction     {:.1}% of the two-pass roofline\n",
            self.backend,
            self.device,
            self.size,
            self.cells,
            self.precision,
            self.slabs,
            self.steps,
            self.mcells_per_s,
            self.seconds,
            self.bandwidth_bytes_per_s / 1e9,
            self.bandwidth_method,
            self.roofline_mcells_per_s,
            self.bytes_per_cell_step,
            100.0 * self.fraction_of_roofline
        )
    }
}

/// Bytes per cell and step of the two-pass update: 18 field values read or written.
pub fn bytes_per_cell_step(precision: Precision) -> u64 {
    18 * precision.bytes() as u64
}

/// The benchmark scene: a vacuum cube of `size` 1 mm cells, a 10-cell CPML on every face and
/// a z dipole at the centre.
pub fn vacuum_cube(size: usize, precision: Precision, steps: usize) -> Result<Model, String> {
    let text = format!(
        "[simulation]\nname = \"bench\"\nlength_unit = \"mm\"\ncell_size = 1.0\nsize = [{size}.0, {size}.0, {size}.0]\n\
         steps = {steps}\ncourant = 0.99\nprecision = \"{}\"\n\n[boundaries]\ndefault = {{ type = \"pml\", cells = 10 }}\n\n\
         [[source]]\ntype = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]\n\
         waveform = {{ type = \"gaussian\", frequency = 1.5e10, bandwidth = 7.5e9 }}\n",
        precision.name()
    );
    crate::scene::load_str(&text, "bench.toml")
        .map(|(m, _)| m)
        .map_err(|e| e.to_string())
}

/// Step `backend` `steps` times.
fn step<B: Backend>(model: &Model, backend: &mut B, halos: &HaloPlan, first: usize, steps: usize) {
    let mut j = Vec::new();
    let mut m = Vec::new();
    for n in first..first + steps {
        magnetic_source_values(model, n as f64 * model.grid.dt, &mut m);
        backend.update_h(&m);
        backend.exchange(&halos.after_h);
        source_values(model, (n as f64 + 0.5) * model.grid.dt, &mut j);
        backend.update_e(&j);
        backend.exchange(&halos.after_e);
    }
}

/// Run the benchmark.
pub fn run(opts: &BenchOptions) -> Result<BenchResult, String> {
    if opts.size < 24 {
        return Err("--size must be at least 24 (two 10-cell CPML layers and an interior)".into());
    }
    let model = vacuum_cube(opts.size, opts.precision, opts.steps + 2)?;
    match (opts.backend, opts.precision) {
        (BenchBackend::Cpu, Precision::F32) => cpu::<f32>(&model, opts),
        (BenchBackend::Cpu, Precision::F64) => cpu::<f64>(&model, opts),
        (BenchBackend::Cuda, Precision::F32) => cuda::<f32>(&model, opts),
        (BenchBackend::Cuda, Precision::F64) => cuda::<f64>(&model, opts),
    }
}

#[allow(clippy::too_many_arguments)]
fn result(
    opts: &BenchOptions,
    model: &Model,
    backend: &str,
    device: String,
    slabs: usize,
    seconds: f64,
    bandwidth: f64,
    method: String,
) -> BenchResult {
    let cells = model.grid.cells();
    let mcells = cells as f64 * opts.steps as f64 / seconds / 1e6;
    let bpcs = bytes_per_cell_step(opts.precision);
    let roof = bandwidth / bpcs as f64 / 1e6;
    BenchResult {
        backend: backend.into(),
        device,
        size: opts.size,
        cells,
        steps: opts.steps,
        precision: opts.precision.name(),
        slabs,
        seconds,
        mcells_per_s: mcells,
        bandwidth_bytes_per_s: bandwidth,
        bandwidth_method: method,
        bytes_per_cell_step: bpcs,
        roofline_mcells_per_s: roof,
        fraction_of_roofline: mcells / roof,
    }
}

fn cpu<T: Real>(model: &Model, opts: &BenchOptions) -> Result<BenchResult, String> {
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| crate::fpu::flush_subnormals_to_zero())
        .build()
        .map_err(|e| format!("cannot start {threads} threads: {e}"))?;
    let nx = model.grid.shape[0];
    let ranges = split_even(
        nx,
        opts.slabs
            .unwrap_or_else(|| threads.min(nx / 8).max(1))
            .clamp(1, nx),
    );
    pool.install(|| {
        let bandwidth = host_triad_bandwidth();
        let mut b = CpuBackend::<T>::new(model, &ranges);
        let halos = HaloPlan::new(&ranges, &model.boundaries);
        step(model, &mut b, &halos, 0, 2);
        let t = Instant::now();
        step(model, &mut b, &halos, 2, opts.steps);
        let seconds = t.elapsed().as_secs_f64();
        if !b.all_finite() {
            return Err("the benchmark fields became NaN or infinite".to_string());
        }
        Ok(result(
            opts,
            model,
            "cpu",
            format!("{threads} threads"),
            ranges.len(),
            seconds,
            bandwidth,
            "STREAM triad on the host, 3 x 256 MiB".into(),
        ))
    })
}

/// Host memory bandwidth from a STREAM-like triad a = b + s c over three 256 MiB arrays of
/// f64 in the current rayon pool: the best of five passes, counting 24 bytes per element.
pub fn host_triad_bandwidth() -> f64 {
    host_triad(32 << 20, 5)
}

/// The triad over three arrays of `n` f64, best of `passes`, in bytes/s (24 bytes per element).
pub fn host_triad(n: usize, passes: usize) -> f64 {
    use rayon::prelude::*;
    let b = vec![1.0f64; n];
    let c = vec![2.0f64; n];
    let mut a = vec![0.0f64; n];
    let s = 3.0;
    let mut best = f64::INFINITY;
    for _ in 0..passes {
        let t = Instant::now();
        a.par_chunks_mut(1 << 16)
            .zip(b.par_chunks(1 << 16))
            .zip(c.par_chunks(1 << 16))
            .for_each(|((a, b), c)| {
                for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
                    *x = y + s * z;
                }
            });
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&a);
    24.0 * n as f64 / best
}

#[cfg(feature = "cuda")]
fn cuda<T: Real>(model: &Model, opts: &BenchOptions) -> Result<BenchResult, String> {
    use crate::backend::cuda::select::{new_backend, Placement};
    use crate::backend::cuda::EngineOptions;
    let all = crate::backend::cuda::probe_gpus().map_err(|e| e.to_string())?;
    let wanted = opts.gpus.clone().unwrap_or_else(|| vec![0]);
    let gpus: Vec<_> = wanted
        .iter()
        .map(|&o| {
            all.iter()
                .find(|g| g.ordinal == o)
                .cloned()
                .ok_or_else(|| format!("GPU {o} does not exist (the driver sees {})", all.len()))
        })
        .collect::<Result<_, _>>()?;
    let placement = Placement::over(model, &gpus, opts.slabs_per_gpu);
    let mut b =
        new_backend::<T>(model, &placement, EngineOptions::default()).map_err(|e| e.to_string())?;
    let dev = b.device();
    let (free, _) = dev.memory(0).map_err(|e| e.to_string())?;
    let copy_bytes = (free / 4).min(4 << 30) & !((1 << 20) - 1);
    // Every GPU is taken to be as fast as the first.
    let bandwidth = dev
        .copy_bandwidth(0, copy_bytes)
        .map_err(|e| e.to_string())?
        * gpus.len() as f64;
    let halos = HaloPlan::new(&placement.ranges, &model.boundaries);
    step(model, &mut b, &halos, 0, 2);
    b.device().synchronize().map_err(|e| e.to_string())?;
    let t = Instant::now();
    step(model, &mut b, &halos, 2, opts.steps);
    b.device().synchronize().map_err(|e| e.to_string())?;
    let seconds = t.elapsed().as_secs_f64();
    if !b.all_finite() {
        return Err("the benchmark fields became NaN or infinite".to_string());
    }
    let names: Vec<String> = gpus
        .iter()
        .map(|g| format!("{} {}", g.ordinal, g.name))
        .collect();
    let method = format!(
        "device-to-device copy of {} MiB on GPU {}, x {} GPU(s)",
        copy_bytes >> 20,
        gpus[0].ordinal,
        gpus.len()
    );
    Ok(result(
        opts,
        model,
        "cuda",
        names.join(", "),
        placement.ranges.len(),
        seconds,
        bandwidth,
        method,
    ))
}

#[cfg(not(feature = "cuda"))]
#[allow(clippy::extra_unused_type_parameters)]
fn cuda<T: Real>(_: &Model, _: &BenchOptions) -> Result<BenchResult, String> {
    Err(crate::backend::cuda::CudaError::NotBuilt.to_string())
}
