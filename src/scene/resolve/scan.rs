//! `[scan]` and `scan_step`: a B-scan, the run repeated for N traces with some dipoles and
//! probes moved by their `scan_step` from one trace to the next.
//!
//! Trace k's sources and probes are placed by the same resolver code that places the written
//! ones (`sources::sources`, `monitors::monitors`), given the written position plus
//! `k * scan_step` (in the scene's length unit, then converted to metres as a written position
//! is): trace k is the model of a scene written with those positions, bit for bit. Geometry,
//! materials and boundaries are resolved once and shared by every trace.
//!
//! Checked here, each problem naming its key and line: `[scan]` itself (a table with a whole
//! number `traces >= 1` and no other key), `scan_step` without a `[scan]`, on a source or
//! monitor that cannot move (plane waves, TF/SF, snapshots, fluxes, far fields), a trace that
//! moves a source or probe outside the domain or into the PML (naming the first such trace),
//! and the monitors a scan cannot record per trace (snapshots, far fields, flux DFT fields).

use super::placement::{in_pml, num, Shift};
use super::{inside, monitors, outside_message, position3, sources, Checker};
use crate::model::*;
use crate::scene::diagnostics::{closest, improve_message};
use crate::scene::schema::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::Spanned;

/// The most traces a scan may have: far beyond a B-scan's 60 to a few thousand, and it bounds
/// the placing of every trace's sources and probes before the run (a slip such as `1e9`).
pub const MAX_TRACES: usize = 100_000;

/// The offset of trace `k` for a step `step`: `k * step` per axis (scene units). The one
/// formula for a moved position: what tests and users compute to write trace k as a scene.
fn offset(step: [f64; 3], k: usize) -> [f64; 3] {
    step.map(|s| k as f64 * s)
}

/// `[scan]` as read from the text: (traces, byte offset of the table), or None without one.
/// The reader accepts the top-level key `scan` and leaves its contents to this check, which
/// reports a wrong type, an unknown key and a missing `traces` as the reader does.
fn read_section(ck: &mut Checker, text: &str) -> Option<(Option<usize>, usize)> {
    // A syntax error was reported by the reader, which then stops before resolving.
    let doc = DeTable::parse(text).ok()?;
    let value = doc.get_ref().get("scan")?.clone();
    let at = value.span().start;
    let DeValue::Table(table) = value.get_ref() else {
        ck.error_at(
            at,
            "scan",
            format!(
                "expected a table `[scan]` with `traces = N`, got {}",
                value.get_ref().type_str()
            ),
        );
        return Some((None, at));
    };
    let allowed = ["traces"];
    for (k, _) in table.iter() {
        let name = k.get_ref();
        if !allowed.contains(&name.as_ref()) {
            let hint = closest(name, &allowed)
                .map(|g| format!("; did you mean `{g}`?"))
                .unwrap_or_default();
            ck.error_at(
                k.span().start,
                &format!("scan.{name}"),
                format!("unknown key `{name}` in `scan`: allowed is `traces`{hint}"),
            );
        }
    }
    let Some(traces) = table.get("traces") else {
        ck.error_at(at, "scan.traces", "missing the required key `traces`");
        return Some((None, at));
    };
    let mut only = DeTable::new();
    only.insert(Spanned::new(0..0, "traces".into()), traces.clone());
    let section = Spanned::new(value.span(), DeValue::Table(only));
    match ScanSection::deserialize(ValueDeserializer::from(section)) {
        Ok(s) if *s.traces.get_ref() > MAX_TRACES as i64 => {
            ck.error(
                &s.traces,
                "scan.traces",
                format!(
                    "{} traces is more than the {MAX_TRACES} a scan may have (each trace's sources and probes are placed before the run): split the scan into several",
                    s.traces.get_ref()
                ),
            );
            Some((None, at))
        }
        Ok(s) if *s.traces.get_ref() >= 1 => Some((Some(*s.traces.get_ref() as usize), at)),
        Ok(s) => {
            ck.error(
                &s.traces,
                "scan.traces",
                format!(
                    "must be a whole number of traces >= 1, got {}",
                    s.traces.get_ref()
                ),
            );
            Some((None, at))
        }
        Err(e) => {
            let span = e.span().unwrap_or(traces.span());
            ck.error_at(
                span.start,
                "scan.traces",
                format!(
                    "{}: the number of traces is a whole number >= 1",
                    improve_message(e.message().trim())
                ),
            );
            Some((None, at))
        }
    }
}

/// A moving entry: its kind ("source" or "monitor"), index in the file, written position
/// (scene units), step (scene units) and the span of its `scan_step`.
struct Mover {
    what: &'static str,
    n: usize,
    position: [f64; 3],
    step: [f64; 3],
    at: Spanned<Vec<f64>>,
}

/// Check `[scan]` and every `scan_step`, and place each trace's sources and probes. None
/// without a `[scan]` or when a problem was found (reported in `ck`).
#[allow(clippy::too_many_arguments)] // what the source and monitor resolvers need
pub(super) fn scan(
    scene: &SceneFile,
    text: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    table: &MaterialTable,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    objects: &[Object],
) -> Option<Scan> {
    let before = ck.problems.len();
    let section = read_section(ck, text);
    let in_scan = section.is_some();
    let no_scan = "`scan_step` moves an entry from one trace of a B-scan to the next: add a `[scan]` table with `traces = N`, or remove the key";
    let mut movers = Vec::new();
    for (n, src) in scene.source.iter() {
        let s = src.get_ref();
        let Some(step) = &s.scan_step else { continue };
        let key = format!("source[{n}].scan_step");
        if !in_scan {
            ck.error(step, &key, no_scan);
            continue;
        }
        match s.kind.get_ref().as_str() {
            "dipole" => {}
            // An unknown type is reported by the source resolver.
            kind if kind != "plane_wave" && kind != "tfsf" => continue,
            kind => {
                ck.error(
                    step,
                    &key,
                    format!(
                        "a {kind} source spans the domain (or its box) and cannot move from trace to trace: `scan_step` belongs to dipole sources and probes"
                    ),
                );
                continue;
            }
        }
        let Some(d) = ck.vec3(step, &key) else {
            continue;
        };
        if let Some(p) = s.position.as_ref().and_then(|p| position3(p.get_ref())) {
            movers.push(Mover {
                what: "source",
                n,
                position: p,
                step: d,
                at: step.clone(),
            });
        }
    }
    for (n, mon) in scene.monitor.iter() {
        let m = mon.get_ref();
        let kind = m.kind.get_ref().as_str();
        let key = format!("monitor[{n}]");
        if in_scan {
            let refusal = match kind {
                "snapshot" => Some("snapshots cannot be taken in a [scan] (each trace would need its own frames): remove the snapshot, or run the trace of interest as a scene of its own"),
                "far_field" => Some("far-field monitors cannot be recorded in a [scan]: run the trace of interest as a scene of its own"),
                "flux" if m.fields.as_ref().is_some_and(|f| *f.get_ref()) => Some("a flux monitor in a [scan] records its spectrum per trace, not its DFT fields: remove `fields = true`"),
                _ => None,
            };
            if let Some(why) = refusal {
                ck.error(mon, &format!("{key}.type"), why);
            }
        }
        let Some(step) = &m.scan_step else { continue };
        let key = format!("{key}.scan_step");
        if !in_scan {
            ck.error(step, &key, no_scan);
            continue;
        }
        if kind != "probe" {
            // An unknown type is reported by the monitor resolver.
            if !["snapshot", "flux", "far_field"].contains(&kind) {
                continue;
            }
            ck.error(
                step,
                &key,
                format!("a {kind} monitor cannot move from trace to trace: `scan_step` belongs to probes and dipole sources"),
            );
            continue;
        }
        let Some(d) = ck.vec3(step, &key) else {
            continue;
        };
        if let Some(p) = m
            .position
            .as_ref()
            .and_then(|p| super::vec3_plain(p.get_ref()))
        {
            movers.push(Mover {
                what: "probe",
                n,
                position: p,
                step: d,
                at: step.clone(),
            });
        }
    }
    let (traces, at) = section?;
    let traces = traces?;
    // A scan_step of [0, 0, 0] moves nothing either.
    if movers.iter().all(|m| m.step == [0.0; 3]) && ck.problems.len() == before {
        ck.warn_at(
            at,
            "scan",
            format!("no source or probe has a non-zero `scan_step`: all {traces} traces are the same run"),
        );
    }
    let (g, faces) = (grid?, faces?);
    // Every trace must keep each moving entry inside the domain and out of the PML: report the
    // first trace that does not, for each entry.
    for m in &movers {
        let key = if m.what == "source" {
            format!("source[{}].scan_step", m.n)
        } else {
            format!("monitor[{}].scan_step", m.n)
        };
        for k in 1..traces {
            let p = Shift {
                sources: BTreeMap::from([(m.n, offset(m.step, k))]),
                monitors: BTreeMap::from([(m.n, offset(m.step, k))]),
            };
            let q = if m.what == "source" {
                p.source(m.n, m.position)
            } else {
                p.monitor(m.n, m.position)
            };
            let pm = q.map(|x| x * unit_m);
            let trouble = if !inside(g, pm) {
                Some(outside_message(g, pm, unit_m))
            } else {
                in_pml(g, faces, pm).map(|(face, cells)| {
                    format!(
                        "position [{}, {}, {}] lies inside the {cells}-cell PML of the {face} face, where the fields are being absorbed",
                        num(q[0]),
                        num(q[1]),
                        num(q[2])
                    )
                })
            };
            if let Some(why) = trouble {
                ck.error(
                    &m.at,
                    &key,
                    format!(
                        "trace {k} of {traces} (counting from 0) moves the {}: its {why}; use fewer traces, a smaller step, or another start",
                        m.what
                    ),
                );
                break;
            }
        }
    }
    // With any problem in the scene no model is built: placing the traces would only repeat it.
    if !ck.problems.is_empty() {
        return None;
    }
    // Place every trace with the resolvers themselves, on a checker of its own: its warnings
    // (a moved point, a probe near the PML) repeat the scene's, and a problem is reported with
    // its trace.
    let mut all_sources = Vec::with_capacity(traces);
    let mut all_probes = Vec::with_capacity(traces);
    for k in 0..traces {
        let mut shift = Shift::none();
        for m in &movers {
            let d = offset(m.step, k);
            match m.what {
                "source" => shift.sources.insert(m.n, d),
                _ => shift.monitors.insert(m.n, d),
            };
        }
        let mut tc = Checker {
            text: ck.text,
            problems: Vec::new(),
            warnings: Vec::new(),
            file: ck.file,
        };
        let placed = sources::sources(
            scene,
            &mut tc,
            grid,
            unit_m,
            table,
            Some(faces),
            objects,
            &shift,
        );
        let (probes, _, _) =
            monitors::monitors(scene, &mut tc, grid, unit_m, Some(faces), objects, &shift);
        for mut p in tc.problems {
            p.message = format!("in trace {k} of {traces}: {}", p.message);
            ck.problems.push(p);
        }
        match placed {
            Some((s, _)) => all_sources.push(s),
            None => return None,
        }
        all_probes.push(probes);
    }
    if ck.problems.len() > before {
        return None;
    }
    let metres = |d: [f64; 3]| d.map(|x| x * unit_m);
    let mut source_steps = vec![None; all_sources[0].len()];
    let mut probe_steps = vec![None; all_probes[0].len()];
    // Model order is file order over the entries that were placed.
    let source_order: Vec<usize> = scene
        .source
        .iter()
        .filter(|(_, s)| s.get_ref().kind.get_ref() != "tfsf")
        .map(|(n, _)| n)
        .collect();
    let probe_order: Vec<usize> = scene
        .monitor
        .iter()
        .filter(|(_, m)| m.get_ref().kind.get_ref() == "probe")
        .map(|(n, _)| n)
        .collect();
    for m in &movers {
        let (order, steps) = if m.what == "source" {
            (&source_order, &mut source_steps)
        } else {
            (&probe_order, &mut probe_steps)
        };
        if let Some(i) = order.iter().position(|&n| n == m.n) {
            if let Some(s) = steps.get_mut(i) {
                *s = Some(metres(m.step));
            }
        }
    }
    Some(Scan {
        traces,
        sources: all_sources,
        probes: all_probes,
        source_steps,
        probe_steps,
    })
}
