//! An S-parameter sweep (`[sparameters]`): one run per port, each exciting that port's mode
//! source alone into its own result file, then the S-matrix from the ports' mode monitors.
//!
//! Each excitation is an ordinary run ([`super::run`]: any backend, MPI ranks, checkpoints),
//! written to `<stem>.port-<name>.h5` beside the sweep's result file. A sweep started again on
//! the same scene reuses every excitation whose file is complete and of that scene, so an
//! interrupted sweep continues where it stopped (an excitation stopped part-way runs again).
//! In the run that excites port k, its monitor reads the incoming amplitude a_k (along the
//! source's direction) and every port j's monitor the outgoing one b_j (against its source's
//! direction): `S[j][k] = b_j / a_k`.

use super::{Observer, RunError, RunOptions, Summary};
use crate::model::Model;
use crate::output::sparameters as out;
use crate::output::{Complex, OutputError};
use std::path::PathBuf;

/// The model of the run that excites port `k`: the sweep's model with only that port's mode
/// source (its two sheets) and no sweep of its own.
pub fn excitation(model: &Model, k: usize) -> Model {
    let sp = model
        .sparameters
        .as_ref()
        .expect("a sweep's model has ports");
    let port = &sp.ports[k];
    Model {
        sources: model
            .sources
            .iter()
            .filter(|s| {
                s.mode
                    .as_ref()
                    .is_some_and(|(sheet, _)| &sheet.name == port)
            })
            .cloned()
            .collect(),
        sparameters: None,
        ..model.clone()
    }
}

/// Run every excitation of `model`'s `[sparameters]` and write the S-matrix to `opts.output`
/// and the Touchstone file beside it.
pub fn run_sweep(
    model: &Model,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, RunError> {
    let sp = model
        .sparameters
        .as_ref()
        .expect("a sweep's model has ports");
    let mut runs = Vec::new();
    let mut last = None;
    for (k, port) in sp.ports.iter().enumerate() {
        let path = out::port_output(&opts.output, port);
        runs.push(path.clone());
        if out::finished_run(&path, model) {
            obs.message(&format!(
                "S-parameters: port `{port}` ({} of {}) is already in `{}` (complete, same scene): reused",
                k + 1,
                sp.ports.len(),
                path.display()
            ));
            continue;
        }
        obs.message(&format!(
            "S-parameters: exciting port `{port}` ({} of {}) into `{}`",
            k + 1,
            sp.ports.len(),
            path.display()
        ));
        let one = RunOptions {
            output: path,
            resume: false,
            ..opts.clone()
        };
        last = Some(super::run(&excitation(model, k), &one, obs)?);
    }
    let mut summary = last.unwrap_or_else(|| reused(model));
    summary.output = opts.output.clone();
    // Over MPI ranks every rank ran the excitations; rank 0 alone writes the sweep's files.
    if !crate::ranks::world().is_root() {
        return Ok(summary);
    }
    let (frequency, s) = matrix(model, &runs).map_err(|e| output_error(opts, e))?;
    out::write(&opts.output, model, &frequency, &s, &runs).map_err(|e| output_error(opts, e))?;
    let text = out::touchstone(&sp.ports, sp.reference_impedance, &frequency, &s);
    let ts = out::touchstone_path(&opts.output, sp.ports.len());
    std::fs::write(&ts, text).map_err(|e| output_error(opts, e))?;
    obs.message(&format!(
        "S-parameters of {} ports at {} frequencies -> {} (/sparameters/) and {}",
        sp.ports.len(),
        frequency.len(),
        opts.output.display(),
        ts.display()
    ));
    Ok(summary)
}

/// An output failure of the sweep's own file.
fn output_error(opts: &RunOptions, e: impl std::fmt::Display) -> RunError {
    RunError::Output {
        error: OutputError {
            path: opts.output.clone(),
            message: format!("could not write the S-parameters: {e}"),
        },
        summary: None,
    }
}

/// A port monitor's frequencies and, per frequency, its (incoming, outgoing) amplitudes.
type Waves = (Vec<f64>, Vec<(Complex, Complex)>);

/// The S-matrix [frequency][out port][in port] from the excitations' files (`runs`, in port
/// order), and its frequencies (the ports' monitors must share them).
fn matrix(model: &Model, runs: &[PathBuf]) -> Result<(Vec<f64>, out::SMatrix), String> {
    let sp = model
        .sparameters
        .as_ref()
        .expect("a sweep's model has ports");
    let n = sp.ports.len();
    let sign = |port: &str| {
        model
            .sources
            .iter()
            .find_map(|s| s.mode.as_ref().filter(|(sheet, _)| sheet.name == port))
            .map_or(1, |(sheet, _)| sheet.sign)
    };
    // (incoming, outgoing) at port j in run k.
    let waves = |k: usize, j: usize| -> Result<Waves, String> {
        let port = &sp.ports[j];
        let (f, amps) = out::port_amplitudes(&runs[k], port)
            .map_err(|e| format!("{}: mode monitor `{port}`: {e}", runs[k].display()))?;
        let inward = sign(port) > 0;
        let pairs = amps
            .into_iter()
            .map(|[a, b]| if inward { (a, b) } else { (b, a) })
            .collect();
        Ok((f, pairs))
    };
    let differ = || "the ports' mode monitors must share their frequencies".to_string();
    let mut frequency: Option<Vec<f64>> = None;
    let mut s: out::SMatrix = Vec::new();
    for k in 0..n {
        let all = (0..n)
            .map(|j| waves(k, j))
            .collect::<Result<Vec<Waves>, String>>()?;
        let (f, own) = &all[k];
        if frequency.as_ref().is_some_and(|g| g != f) || all.iter().any(|(g, _)| g != f) {
            return Err(differ());
        }
        if s.is_empty() {
            s = vec![vec![vec![Complex::default(); n]; n]; f.len()];
        }
        for (j, (_, other)) in all.iter().enumerate() {
            for (row, ((incoming, _), (_, outgoing))) in s.iter_mut().zip(own.iter().zip(other)) {
                row[j][k] = divide(*outgoing, *incoming);
            }
        }
        frequency = Some(f.clone());
    }
    Ok((frequency.unwrap_or_default(), s))
}

/// a / b.
fn divide(a: Complex, b: Complex) -> Complex {
    let d = b.r * b.r + b.i * b.i;
    Complex {
        r: (a.r * b.r + a.i * b.i) / d,
        i: (a.i * b.r - a.r * b.i) / d,
    }
}

/// The summary of a sweep whose every excitation was already done: no step run now.
fn reused(model: &Model) -> Summary {
    let g = &model.grid;
    Summary {
        backend: "none (every excitation reused)".into(),
        cells: g.cells(),
        steps_done: g.steps,
        steps: g.steps,
        wall: std::time::Duration::ZERO,
        mcells_per_s: 0.0,
        phases: Default::default(),
        device: None,
        output: PathBuf::new(),
        complete: true,
        sidecar_warning: None,
        first_step: g.steps,
        checkpoints: 0,
        checkpoint: None,
    }
}
