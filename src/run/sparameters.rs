//! An S-parameter sweep (`[sparameters]`): one run per port, each exciting that port's mode
//! source alone into its own result file, then the S-matrix from the ports' mode monitors.
//!
//! Each excitation is an ordinary run ([`super::run`]: any backend, MPI ranks, checkpoints),
//! written to `<stem>.port-<name>.h5` beside the sweep's result file. A sweep started again on
//! the same scene reuses every excitation whose file is complete and of that scene, and
//! resumes one stopped part-way from the checkpoint beside its file (as `yee resume` would),
//! so an interrupted sweep continues where it stopped, to the same bits.
//! In the run that excites port k, every port j reads the wave going into the device there,
//! a_j (a mode monitor: along its source's direction; a lumped port: its power wave
//! (V + Z I) / (2 sqrt(Re Z))), and the one coming out, b_j. With A and B the matrices whose
//! column k holds those waves of run k, `S = B A^-1`: exact however well the other ports
//! absorb (a lumped port terminates the device with its internal resistance, a mode port with
//! the PML behind it, neither perfectly), and `S[j][k] = b_j / a_k` where they do.

use super::{Observer, RunError, RunOptions, Summary};
use crate::model::{Model, TerminalKind};
use crate::output::sparameters as out;
use crate::output::{Complex, OutputError};
use num_complex::Complex64;
use std::path::PathBuf;

/// The model of the run that excites port `k`: the sweep's model with only that port's
/// sources (a mode source's two sheets, or a lumped port's current sheet; the other lumped
/// ports stay as their internal resistances) and no sweep of its own.
pub fn excitation(model: &Model, k: usize) -> Model {
    let sp = model
        .sparameters
        .as_ref()
        .expect("a sweep's model has ports");
    let port = &sp.ports[k];
    let driven = lumped_source(model, port);
    let keep: Vec<usize> = (0..model.sources.len())
        .filter(|&i| {
            Some(i) == driven
                || model.sources[i]
                    .mode
                    .as_ref()
                    .is_some_and(|(sheet, _)| &sheet.name == port)
        })
        .collect();
    let mut terminals = model.terminals.clone();
    for t in &mut terminals {
        if let TerminalKind::Port { source, .. } = &mut t.kind {
            *source = source.and_then(|s| keep.iter().position(|&i| i == s));
        }
    }
    Model {
        sources: keep.iter().map(|&i| model.sources[i].clone()).collect(),
        terminals,
        sparameters: None,
        ..model.clone()
    }
}

/// The step an excitation's stopped run can resume from: its result file at `path` exists
/// with a checkpoint beside it that `model` (the excitation's) accepts, as `yee resume` would.
/// None to run it from the start (no checkpoint, or one of another scene, version or
/// precision, or one that cannot be read).
fn resumable(path: &std::path::Path, model: &Model) -> Option<usize> {
    let checkpoint = crate::checkpoint::path_for(path);
    if !path.is_file() {
        return None;
    }
    let header = crate::checkpoint::read_header(&checkpoint).ok()?;
    header.check(&checkpoint, model).ok()?;
    Some(header.step)
}

/// The source of lumped port `port` in `model`, if it is one.
fn lumped_source(model: &Model, port: &str) -> Option<usize> {
    model.terminals.iter().find_map(|t| match t.kind {
        TerminalKind::Port { source, .. } if t.name == port => source,
        _ => None,
    })
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
        let driven = excitation(model, k);
        let resume = resumable(&path, &driven);
        match resume {
            Some(step) => obs.message(&format!(
                "S-parameters: port `{port}` ({} of {}) stopped at step {step} of {}: resuming `{}` from its checkpoint",
                k + 1,
                sp.ports.len(),
                driven.grid.steps,
                path.display()
            )),
            None => obs.message(&format!(
                "S-parameters: exciting port `{port}` ({} of {}) into `{}`",
                k + 1,
                sp.ports.len(),
                path.display()
            )),
        }
        let one = RunOptions {
            output: path,
            resume: resume.is_some(),
            ..opts.clone()
        };
        last = Some(super::run(&driven, &one, obs)?);
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

/// A port's frequencies and, per frequency, its (into the device, out of it) waves.
type Waves = (Vec<f64>, Vec<(Complex, Complex)>);

/// The waves at port `port` in the run written to `run`.
fn waves(model: &Model, run: &std::path::Path, port: &str) -> Result<Waves, String> {
    if lumped_source(model, port).is_some() {
        let (f, w) = crate::output::ports::port_waves(run, port)
            .map_err(|e| format!("{}: lumped port `{port}`: {e}", run.display()))?;
        return Ok((f, w.into_iter().map(|[a, b]| (a, b)).collect()));
    }
    let inward = model
        .sources
        .iter()
        .find_map(|s| s.mode.as_ref().filter(|(sheet, _)| sheet.name == port))
        .is_none_or(|(sheet, _)| sheet.sign > 0);
    let (f, amps) = out::port_amplitudes(run, port)
        .map_err(|e| format!("{}: mode monitor `{port}`: {e}", run.display()))?;
    let pairs = amps
        .into_iter()
        .map(|[a, b]| if inward { (a, b) } else { (b, a) })
        .collect();
    Ok((f, pairs))
}

/// The S-matrix [frequency][out port][in port] from the excitations' files (`runs`, in port
/// order), and its frequencies (the ports must share them): S = B A^-1 per frequency.
fn matrix(model: &Model, runs: &[PathBuf]) -> Result<(Vec<f64>, out::SMatrix), String> {
    let sp = model
        .sparameters
        .as_ref()
        .expect("a sweep's model has ports");
    let n = sp.ports.len();
    // all[k][j]: the waves at port j in run k.
    let all = runs
        .iter()
        .map(|run| {
            sp.ports
                .iter()
                .map(|p| waves(model, run, p))
                .collect::<Result<Vec<Waves>, String>>()
        })
        .collect::<Result<Vec<_>, String>>()?;
    let frequency = all[0][0].0.clone();
    if all.iter().flatten().any(|(f, _)| *f != frequency) {
        return Err("the ports must share their frequencies (each mode monitor's and lumped port's `frequencies`)".into());
    }
    let c = |z: Complex| Complex64::new(z.r, z.i);
    let s = (0..frequency.len())
        .map(|fi| {
            let a: Vec<Vec<Complex64>> = (0..n)
                .map(|j| (0..n).map(|k| c(all[k][j].1[fi].0)).collect())
                .collect();
            let b: Vec<Vec<Complex64>> = (0..n)
                .map(|j| (0..n).map(|k| c(all[k][j].1[fi].1)).collect())
                .collect();
            let s = times_inverse(&b, &a);
            s.iter()
                .map(|row| row.iter().map(|z| Complex { r: z.re, i: z.im }).collect())
                .collect()
        })
        .collect();
    Ok((frequency, s))
}

/// B A^-1 for square complex matrices (rows of columns), by Gauss-Jordan elimination of
/// A^T X = B^T with partial pivoting (X = (B A^-1)^T); a singular A (a port never excited)
/// gives non-finite entries.
fn times_inverse(b: &[Vec<Complex64>], a: &[Vec<Complex64>]) -> Vec<Vec<Complex64>> {
    let n = a.len();
    // Augmented [A^T | B^T].
    let mut m: Vec<Vec<Complex64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| a[j][i])
                .chain((0..n).map(|j| b[j][i]))
                .collect()
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&p, &q| m[p][col].norm().total_cmp(&m[q][col].norm()))
            .unwrap_or(col);
        m.swap(col, pivot);
        let d = m[col][col];
        for v in &mut m[col] {
            *v /= d;
        }
        for r in 0..n {
            if r != col {
                let factor = m[r][col];
                let pivot_row = m[col].clone();
                for (v, p) in m[r].iter_mut().zip(&pivot_row) {
                    *v -= factor * p;
                }
            }
        }
    }
    // X = (B A^-1)^T sits in the right half: transpose it back.
    (0..n)
        .map(|j| (0..n).map(|k| m[k][n + j]).collect())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b_times_a_inverse_recovers_a_known_matrix() {
        let z = |r: f64, i: f64| Complex64::new(r, i);
        let s = [[z(0.1, 0.2), z(0.9, -0.1)], [z(0.8, 0.05), z(-0.2, 0.3)]];
        let a = vec![
            vec![z(1.0, 0.5), z(0.02, 0.01)],
            vec![z(-0.03, 0.0), z(0.7, -0.4)],
        ];
        let b: Vec<Vec<Complex64>> = (0..2)
            .map(|j| {
                (0..2)
                    .map(|k| (0..2).map(|m| s[j][m] * a[m][k]).sum())
                    .collect()
            })
            .collect();
        let got = times_inverse(&b, &a);
        for j in 0..2 {
            for k in 0..2 {
                assert!(
                    (got[j][k] - s[j][k]).norm() < 1e-14,
                    "{j}{k}: {}",
                    got[j][k]
                );
            }
        }
    }
}
