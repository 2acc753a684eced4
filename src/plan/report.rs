//! The text report of `yee plan`, and the number formats it uses.

use super::{Plan, PlanBackend};
use std::fmt::Write;

/// Bytes in decimal units, as GPU memory is sold: "192.0 GB" (every report of bytes uses it).
/// `u64::MAX` is a count that saturated (the planner's sums saturate rather than wrap): shown
/// as what it is, more than 18 EB, not as a figure.
pub fn bytes_h(n: u64) -> String {
    if n == u64::MAX {
        return "more than 18 EB (beyond any storage)".into();
    }
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Bytes in binary units: "500 MiB".
pub(super) fn bytes_bin(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{} {}", trim_float(v), units[u])
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").unwrap_or(&s).to_string()
}

/// A duration for people: "10 us", "3.2 ms", "4.1 s", "26 min", "3.4 h", "2.1 days".
pub(super) fn duration_h(s: f64) -> String {
    if !s.is_finite() {
        "unknown".into()
    } else if s < 1e-3 {
        format!("{} us", trim_float(s * 1e6))
    } else if s < 1.0 {
        format!("{} ms", trim_float(s * 1e3))
    } else if s < 120.0 {
        format!("{} s", trim_float(s))
    } else if s < 7200.0 {
        format!("{} min", trim_float(s / 60.0))
    } else if s < 3.0 * 86400.0 {
        format!("{} h", trim_float(s / 3600.0))
    } else {
        format!("{} days", trim_float(s / 86400.0))
    }
}

/// A fraction as a percentage: "0.3%", "12%", "276%".
pub(super) fn percent(f: f64) -> String {
    let p = f * 100.0;
    if !p.is_finite() {
        "n/a".into()
    } else if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A length in metres with a fitting unit: "5 nm", "0.05 um".
fn length_h(m: f64) -> String {
    let (v, u) = if m >= 1e-3 {
        (m * 1e3, "mm")
    } else if m >= 1e-6 {
        (m * 1e6, "um")
    } else {
        (m * 1e9, "nm")
    };
    let s = format!("{v:.4}");
    format!("{} {u}", s.trim_end_matches('0').trim_end_matches('.'))
}

fn bandwidth_h(b: f64) -> String {
    if b >= 1e12 {
        format!("{:.2} TB/s", b / 1e12)
    } else {
        format!("{:.0} GB/s", b / 1e9)
    }
}

pub(super) fn render(p: &Plan) -> String {
    let mut o = String::new();
    let [nx, ny, nz] = p.grid;
    let cell = if p.cell_size.iter().all(|&c| c == p.cell_size[0]) {
        format!("cells of {}", length_h(p.cell_size[0]))
    } else {
        format!(
            "cells of {} x {} x {}",
            length_h(p.cell_size[0]),
            length_h(p.cell_size[1]),
            length_h(p.cell_size[2])
        )
    };
    let _ = writeln!(o, "plan for `{}` ({})", p.scene, p.precision);
    let _ = writeln!(
        o,
        "grid      {nx} x {ny} x {nz} = {} {cell}",
        group(p.cells)
    );
    render_mesh(&mut o, p);
    let _ = writeln!(
        o,
        "steps     {} of dt = {:.4e} s ({:.4e} s simulated)",
        group(p.steps as u64),
        p.dt,
        p.steps as f64 * p.dt
    );
    if p.field_sets > 1 {
        let _ = writeln!(
            o,
            "fields    {} sets: a Bloch cell's real and imaginary parts, each stepped like a periodic cell (memory and time twice one set's)",
            p.field_sets
        );
    }

    let _ = writeln!(o, "\nmemory by category");
    let b = &p.bytes;
    let gpus_used = p
        .slabs
        .iter()
        .filter(|s| p.devices[s.device].kind == super::DeviceKind::Gpu)
        .count();
    let overhead_note = if gpus_used > 0 {
        format!(
            "CUDA context reserve ({} x {}, assumed)",
            gpus_used,
            bytes_bin(super::CUDA_CONTEXT_RESERVE)
        )
    } else {
        "per-device overhead".to_string()
    };
    let mut rows = vec![
        ("E and H fields".to_string(), b.fields),
        ("material indices".to_string(), b.materials),
        ("CPML auxiliaries".to_string(), b.pml),
        (
            "dispersive (pole state of dispersive cells)".to_string(),
            b.dispersive,
        ),
        (
            "sources (TF/SF points and 1-D incident grid)".to_string(),
            b.sources,
        ),
        ("monitors (host)".to_string(), b.monitors),
        (
            "GPU monitors (probe ring, staging, flux DFT)".to_string(),
            b.device_monitors,
        ),
        ("pinned host mirrors of GPU monitors".to_string(), b.pinned),
        ("probe series (host, f64)".to_string(), b.probe_series),
        ("halo planes".to_string(), b.halos),
        (overhead_note, b.overhead),
        ("total".to_string(), b.total),
    ];
    if b.staged_halos > 0 {
        rows.insert(
            8,
            (
                "staged halo planes (pinned, no peer access)".to_string(),
                b.staged_halos,
            ),
        );
    }
    if b.passes > 0 {
        rows.insert(5, ("cell passes' state".to_string(), b.passes));
    }
    for (name, v) in rows {
        let _ = writeln!(o, "  {name:<44} {:>21}  {:>9}", group(v), bytes_h(v));
    }

    let out = &p.output;
    let _ = writeln!(
        o,
        "\noutput    {} in the result file by the end of the run (snapshots {}, probes {}, flux {})",
        bytes_h(out.total),
        bytes_h(out.snapshots),
        bytes_h(out.probes),
        bytes_h(out.flux)
    );

    let _ = writeln!(o, "\ndevices   GPUs: {}", p.gpu_note);
    let _ = writeln!(o, "          host: {}", p.host_note);
    let _ = writeln!(
        o,
        "  {:<3} {:<24} {:>10}  {:<22} used",
        "#", "device", "memory", "bandwidth"
    );
    for (i, d) in p.devices.iter().enumerate() {
        let bw = format!(
            "{}{}",
            bandwidth_h(d.bandwidth_bytes_per_s),
            if d.bandwidth_assumed {
                " (assumed)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            o,
            "  {i:<3} {:<24} {:>10}  {bw:<22} {}",
            d.name,
            bytes_h(d.memory_bytes),
            if d.used { "yes" } else { "-" }
        );
    }

    let title = if p.fits {
        "slabs"
    } else {
        "slabs     (the closest attempt: it does not fit)"
    };
    let _ = writeln!(o, "\n{title}");
    if p.slabs.is_empty() {
        let _ = writeln!(o, "  none");
    } else {
        let _ = writeln!(
            o,
            "  {:<28} {:<18} {:>17} {:>21} {:>8}",
            "device", "x range", "cells", "bytes", "share"
        );
        for s in &p.slabs {
            let _ = writeln!(
                o,
                "  {:<28} {:<18} {:>17} {:>21} {:>8}",
                format!("{} {}", s.device, p.devices[s.device].name),
                format!("[{}, {})", s.x_start, s.x_end),
                group(s.cells),
                group(s.bytes),
                percent(s.share)
            );
        }
    }

    let _ = writeln!(o, "\nbackend   {}: {}", p.backend.name(), p.reason);
    if p.backend == PlanBackend::Cuda {
        let _ = writeln!(o, "update    two-pass (H, then E), one set of fields");
    }
    let e = &p.estimate;
    match (e.seconds, e.seconds_per_step) {
        (Some(total), Some(step)) => {
            let device = if p.backend == PlanBackend::Cuda {
                "GPU"
            } else {
                "host"
            };
            let _ = write!(
                o,
                "estimate  {} per step, {} in all ({} B per cell-step at {} of the {device}'s bandwidth",
                duration_h(step),
                duration_h(total),
                e.bytes_per_cell_step,
                percent(e.achieved_fraction)
            );
            if let Some(f) = e.overhead_fraction {
                let _ = write!(
                    o,
                    "; halo exchange and launches {} of the update",
                    percent(f)
                );
            }
            let _ = writeln!(o, ")");
            if let Some(cost) = e.cost {
                let _ = writeln!(o, "cost      {cost:.2} at the given price per GPU-hour");
            }
            for n in &p.notes {
                let _ = writeln!(o, "note      {n}");
            }
        }
        _ => {
            let _ = writeln!(o, "estimate  none: nothing fits");
            for n in &p.notes {
                let _ = writeln!(o, "note      {n}");
            }
        }
    }
    if let Some(t) = p.painting_seconds.filter(|&t| t >= 0.05) {
        let _ = writeln!(
            o,
            "painting  about {} to paint the geometry when the run starts",
            duration_h(t)
        );
    }
    if let Some(c) = &p.conformal {
        let _ = writeln!(o, "surfaces  {}", c.line());
    }
    if let Some(m) = &p.modes {
        let _ = writeln!(
            o,
            "modes     {} plane{} solved at run start: {} solve{} of up to {} unknowns, about {}",
            m.planes,
            if m.planes == 1 { "" } else { "s" },
            m.solves,
            if m.solves == 1 { "" } else { "s" },
            group(m.largest_unknowns),
            duration_h(m.seconds)
        );
        if !m.ports.is_empty() {
            let each = p.estimate.seconds.map(|s| s + m.seconds);
            let _ = writeln!(
                o,
                "sweep     S-parameters of {} port{} ({}): one run each{}",
                m.ports.len(),
                if m.ports.len() == 1 { "" } else { "s" },
                m.ports.join(", "),
                each.map_or(String::new(), |s| format!(
                    ", about {} in all",
                    duration_h(s * m.ports.len() as f64)
                ))
            );
        }
    }
    if let Some(s) = &p.scan {
        let _ = writeln!(
            o,
            "\nscan      {} traces, {} at a time: {}",
            group(s.traces as u64),
            s.traces_in_parallel,
            s.reason
        );
        if let (Some(one), Some(all)) = (s.seconds_per_trace, s.seconds) {
            let _ = writeln!(
                o,
                "estimate  {} per trace, {} for all {} traces",
                duration_h(one),
                duration_h(all),
                group(s.traces as u64)
            );
        }
    }
    if !p.suggestions.is_empty() {
        let _ = writeln!(o, "\nwhat would fit");
        for s in &p.suggestions {
            let _ = writeln!(o, "  - {s}");
        }
    }
    let _ = writeln!(o, "\nassumptions");
    for a in &p.assumptions {
        let _ = writeln!(o, "  - {a}");
    }
    o
}

/// The mesh lines of the report, for a graded grid only (a uniform grid's cells are on the
/// grid line already): per axis the cells and the smallest and largest cell, what the
/// refinement costs against a uniform grid at the background cell, and what a uniform grid at
/// the finest cell would take.
fn render_mesh(o: &mut String, p: &Plan) {
    let m = &p.mesh;
    if m.uniform {
        return;
    }
    let axes: Vec<String> = m
        .axes
        .iter()
        .zip(["x", "y", "z"])
        .map(|(a, name)| {
            if a.graded {
                format!(
                    "{name} {} cells of {} to {}",
                    group(a.cells as u64),
                    length_h(a.min_cell),
                    length_h(a.max_cell)
                )
            } else {
                format!(
                    "{name} {} cells of {}",
                    group(a.cells as u64),
                    length_h(a.min_cell)
                )
            }
        })
        .collect();
    let _ = writeln!(o, "mesh      graded: {}", axes.join(", "));
    let _ = writeln!(
        o,
        "          the refinement costs {:.2} times the {} cells of a uniform grid at the background cell",
        m.refinement_factor,
        group(m.background_cells)
    );
    if let Some(f) = &m.finest_uniform {
        let [nx, ny, nz] = f.shape;
        let _ = writeln!(
            o,
            "          a uniform grid at the finest cell: {nx} x {ny} x {nz} = {} cells, {} ({} the cells of this mesh){}",
            group(f.cells),
            bytes_h(f.bytes),
            ratio_h(f.cells as f64 / p.cells.max(1) as f64),
            if f.fits { "" } else { ", which does not fit here" }
        );
    }
}

/// A ratio for people: "3.4 times", "12 times".
fn ratio_h(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.1} times")
    } else {
        format!("{r:.0} times")
    }
}

/// Digits grouped by thousands: 8,000,000,000.
pub(super) fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_numbers() {
        assert_eq!(bytes_h(192_000_000_000), "192.0 GB");
        assert_eq!(bytes_h(512), "512 B");
        assert!(bytes_h(u64::MAX).starts_with("more than 18 EB"));
        assert_eq!(bytes_bin(500 << 20), "500 MiB");
        assert_eq!(duration_h(10e-6), "10 us");
        assert_eq!(duration_h(1560.0), "26 min");
        assert_eq!(percent(0.05), "5.0%");
        assert_eq!(percent(2.756), "276%");
        assert_eq!(length_h(5e-9), "5 nm");
        assert_eq!(length_h(5e-8), "50 nm");
        assert_eq!(length_h(1e-6), "1 um");
    }
}
