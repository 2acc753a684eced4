//! Helpers shared by the integration tests: build models from TOML text, step them on the
//! CPU backend, read fields back, and find spectral peaks.
#![allow(dead_code)]

pub mod mie;

use yee::backend::cpu::CpuBackend;
use yee::backend::{Backend, StepMode};
use yee::decomp::{split_even, SlabRange};
use yee::model::{Component, Model, Region};
use yee::real::Real;
use yee::run::Stepper;

/// Parse and resolve scene text, panicking with the scene error on failure.
pub fn model(text: &str) -> Model {
    match yee::scene::load_str(text, "test.toml") {
        Ok((m, _)) => m,
        Err(e) => panic!("{e}"),
    }
}

/// A whole-grid region of `model`.
pub fn whole(model: &Model) -> Region {
    Region {
        start: [0; 3],
        end: model.grid.shape,
        stride: [1; 3],
    }
}

/// Read a whole component as f64.
pub fn field<B: Backend>(b: &B, model: &Model, c: Component) -> Vec<f64> {
    let r = whole(model);
    let mut out = vec![B::Real::ZERO; r.len()];
    b.gather(c, &r, &mut out);
    out.iter().map(|v| v.to_f64()).collect()
}

/// Run `model` on `slabs` even slabs for all its steps, recording every probe sample each
/// step; returns (probe series per sample, final fields of all six components).
pub fn run_cpu<T: Real>(model: &Model, slabs: usize) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let ranges = split_even(model.grid.shape[0], slabs);
    run_ranges::<T>(model, &ranges)
}

/// As [`run_cpu`] with explicit slab ranges.
pub fn run_ranges<T: Real>(model: &Model, ranges: &[SlabRange]) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    run_ranges_mode::<T>(model, ranges, StepMode::default())
}

/// As [`run_ranges`], stepping in `mode` (fused sweep or two-pass).
pub fn run_ranges_mode<T: Real>(
    model: &Model,
    ranges: &[SlabRange],
    mode: StepMode,
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let mut b = CpuBackend::<T>::new(model, ranges);
    // One series per probe component, each combined from its stencil as the run loop does.
    let components: usize = model.probes.iter().map(|p| p.components.len()).sum();
    let mut series = vec![Vec::with_capacity(model.grid.steps); components];
    let mut raw = Vec::new();
    let mut values = Vec::new();
    {
        let mut s = Stepper::new(model, &mut b, ranges).with_mode(mode);
        for _ in 0..model.grid.steps {
            s.step();
            values.clear();
            for p in &model.probes {
                raw.clear();
                raw.extend(p.samples.iter().map(|&(c, idx)| s.backend.sample(c, idx)));
                p.combine(&raw, &mut values);
            }
            for (k, v) in values.iter().enumerate() {
                series[k].push(*v);
            }
        }
    }
    let fields = Component::ALL
        .iter()
        .map(|&c| field(&b, model, c))
        .collect();
    (series, fields)
}

/// |DFT| of `x` (sampled every `dt`) at frequency `f`, with a Hann window.
pub fn hann_dft(x: &[f64], dt: f64, f: f64) -> f64 {
    let n = x.len() as f64;
    let (mut re, mut im) = (0.0, 0.0);
    for (i, v) in x.iter().enumerate() {
        let w = 0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / n).cos();
        let ph = 2.0 * std::f64::consts::PI * f * i as f64 * dt;
        re += w * v * ph.cos();
        im -= w * v * ph.sin();
    }
    (re * re + im * im).sqrt()
}

/// The frequency of the spectral peak of `x` within [lo, hi]: a coarse scan, then golden-section
/// refinement of |DFT|.
pub fn peak_frequency(x: &[f64], dt: f64, lo: f64, hi: f64) -> f64 {
    let n = 400;
    let mut best = (lo, 0.0);
    for i in 0..=n {
        let f = lo + (hi - lo) * i as f64 / n as f64;
        let a = hann_dft(x, dt, f);
        if a > best.1 {
            best = (f, a);
        }
    }
    let step = (hi - lo) / n as f64;
    let (mut a, mut b) = (best.0 - step, best.0 + step);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        if hann_dft(x, dt, c) > hann_dft(x, dt, d) {
            b = d;
        } else {
            a = c;
        }
    }
    0.5 * (a + b)
}

/// Largest absolute value.
pub fn max_abs(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// A finished `yee run` of some scene text: its HDF5 file, open, in a temporary folder that is
/// removed when this is dropped.
pub struct BinaryRun {
    dir: std::path::PathBuf,
    /// The result file.
    pub file: hdf5::File,
}

impl BinaryRun {
    /// Run the built binary on `text` (CPU backend) in a fresh folder named after `name`.
    pub fn new(name: &str, text: &str) -> BinaryRun {
        let dir = std::env::temp_dir().join(format!("yee-run-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("s.toml"), text).unwrap();
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
            .args([
                "run",
                "s.toml",
                "-o",
                "out.h5",
                "--quiet",
                "--backend",
                "cpu",
            ])
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(st.success(), "yee run {name} failed");
        let file = hdf5::File::open(dir.join("out.h5")).unwrap();
        BinaryRun { dir, file }
    }

    /// A copy of the result file, named `name` beside it (for a command that rewrites a
    /// file this run holds open).
    #[allow(dead_code)] // not every test binary rewrites results
    pub fn copy(&self, name: &str) -> std::path::PathBuf {
        let to = self.dir.join(name);
        std::fs::copy(self.dir.join("out.h5"), &to).unwrap();
        to
    }

    /// A whole f64 dataset.
    pub fn read(&self, path: &str) -> Vec<f64> {
        self.file.dataset(path).unwrap().read_raw::<f64>().unwrap()
    }

    /// An unsigned integer attribute `name` of the group at `path`.
    #[allow(dead_code)] // not every test binary reads attributes
    pub fn attr_u64(&self, path: &str, name: &str) -> u64 {
        self.file
            .group(path)
            .unwrap()
            .attr(name)
            .unwrap()
            .read_scalar::<u64>()
            .unwrap()
    }
}

impl Drop for BinaryRun {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
