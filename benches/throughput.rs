//! CPU throughput: Mcells/s on vacuum cubes with PEC walls and with a 10-cell CPML, in f32
//! and f64, with 1 and 2 threads, next to a STREAM-like triad measured in the same run.
//!
//! A third case fills the half x < 0 of the CPML cube with a two-pole Drude-Lorentz metal
//! (`yee::bench::cube`): the dispersive pass's cost, its roofline counting the pass's traffic.
//!
//! `cargo bench --bench throughput` (all cases) or `cargo bench --bench throughput -- 128 f32`
//! (filters: sizes, precisions, "pec"/"pml"/"metal", thread counts like "t2").

use std::time::Instant;
use yee::backend::cpu::CpuBackend;
use yee::decomp::split_even;
use yee::model::{Model, Precision};
use yee::real::Real;
use yee::run::Stepper;

fn cube(n: usize, walls: &str, precision: &str) -> Model {
    let text = format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [{s}, {s}, {s}]
steps = 1000000
precision = "{precision}"
[boundaries]
default = {walls}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "continuous", frequency = 1.5e14 }}
"#,
        s = n as f64 * 0.05
    );
    yee::scene::load_str(&text, "bench")
        .expect("bench scene is valid")
        .0
}

/// The host triad (yee bench's own) with `threads` workers, in bytes/s.
fn triad(threads: usize) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(yee::bench::host_triad_bandwidth)
}

fn measure<T: Real>(model: &Model, threads: usize, seconds: f64) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| yee::fpu::flush_subnormals_to_zero())
        .build()
        .unwrap();
    pool.install(|| {
        let ranges = split_even(model.grid.shape[0], threads);
        let mut b = CpuBackend::<T>::new(model, &ranges);
        let mut s = Stepper::new(model, &mut b, &ranges);
        for _ in 0..3 {
            s.step();
        }
        let t = Instant::now();
        let mut steps = 0;
        while t.elapsed().as_secs_f64() < seconds {
            for _ in 0..5 {
                s.step();
            }
            steps += 5;
        }
        model.grid.cells() as f64 * steps as f64 / t.elapsed().as_secs_f64() / 1e6
    })
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let want = |tags: &[String]| filters.iter().all(|f| tags.iter().any(|t| t == f));
    println!("| case | threads | Mcells/s | triad GB/s | roofline Mcells/s | fraction |");
    println!("|---|---|---|---|---|---|");
    let mut triads = std::collections::HashMap::new();
    for n in [128usize, 256] {
        for (walls_tag, walls) in [
            ("pec", r#"{ type = "pec" }"#),
            ("pml", r#"{ type = "pml", cells = 10 }"#),
            ("metal", ""),
        ] {
            for precision in ["f32", "f64"] {
                for threads in [1usize, 2] {
                    let tags = [
                        n.to_string(),
                        walls_tag.to_string(),
                        precision.to_string(),
                        format!("t{threads}"),
                    ];
                    if !want(&tags) {
                        continue;
                    }
                    let model = if walls_tag == "metal" {
                        let p = if precision == "f32" {
                            Precision::F32
                        } else {
                            Precision::F64
                        };
                        yee::bench::cube(n, p, 1_000_000, true).expect("bench scene is valid")
                    } else {
                        cube(n, walls, precision)
                    };
                    let mcells = match model.precision {
                        Precision::F32 => measure::<f32>(&model, threads, 3.0),
                        Precision::F64 => measure::<f64>(&model, threads, 3.0),
                    };
                    let bw = *triads.entry(threads).or_insert_with(|| triad(threads));
                    let bpcs = yee::bench::model_bytes_per_cell_step(&model);
                    let roof = bw / bpcs as f64 / 1e6;
                    let case = if walls_tag == "metal" {
                        format!("{n}^3 half Drude-Lorentz metal ({bpcs} B/cell-step), pml walls")
                    } else {
                        format!("{n}^3 vacuum, {walls_tag} walls")
                    };
                    println!(
                        "| {case}, {precision} | {threads} | {mcells:.0} | {:.1} | {roof:.0} | {:.0}% |",
                        bw / 1e9,
                        100.0 * mcells / roof
                    );
                }
            }
        }
    }
}
