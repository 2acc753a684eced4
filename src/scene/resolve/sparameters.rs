//! `[sparameters]`: the S-matrix of a device over its ports, one run per port.
//!
//! A port is a mode source and a mode monitor sharing its name (design.md section 11): the
//! source excites the port (its `direction` points into the device), the monitor reads what
//! goes in and what comes out there, so it must lie downstream of the source, on the same axis.
//! Or it is a lumped port, which drives and reads itself; the lumped ports of one sweep share
//! one real impedance, the Touchstone file's reference (S is formed against each port's own).
//! Every source of the scene must be a port's (a run drives one port at a time).
//! Checked here, each problem naming its key and line: the table's keys, port names (given,
//! unique, each with its source and monitor), and where the monitors lie.

use super::placement::num;
use super::Checker;
use crate::model::*;
use crate::scene::diagnostics::improve_message;
use crate::scene::schema::SParametersSection;
use serde::Deserialize;
use toml::de::{DeTable, ValueDeserializer};

/// The Touchstone reference impedance of mode ports when the scene gives none (ohm).
pub const DEFAULT_REFERENCE_IMPEDANCE: f64 = 50.0;

/// `[sparameters]` of `text`, checked against `model`'s sources, monitors and lumped ports;
/// None without the table or when a problem was found (reported in `ck`).
pub(super) fn sparameters(ck: &mut Checker, text: &str, model: &Model) -> Option<SParameters> {
    let (sources, fluxes) = (&model.sources[..], &model.fluxes[..]);
    let doc = DeTable::parse(text).ok()?;
    let value = doc.get_ref().get("sparameters")?.clone();
    let at = value.span().start;
    let section = match SParametersSection::deserialize(ValueDeserializer::from(value)) {
        Ok(s) => s,
        Err(e) => {
            ck.error_at(
                e.span().map_or(at, |s| s.start),
                "sparameters",
                format!(
                    "{}: write `[sparameters]` with `ports = [\"in\", \"out\"]` and optionally `reference_impedance = 50.0` (ohm)",
                    improve_message(e.message().trim())
                ),
            );
            return None;
        }
    };
    let before = ck.problems.len();
    let lumped = |name: &str| {
        model.terminals.iter().find_map(|t| match t.kind {
            TerminalKind::Port {
                impedance, source, ..
            } if t.name == name => Some((impedance, source)),
            _ => None,
        })
    };
    let impedance = match &section.reference_impedance {
        None => DEFAULT_REFERENCE_IMPEDANCE,
        Some(z) if z.get_ref().is_finite() && *z.get_ref() > 0.0 => *z.get_ref(),
        Some(z) => {
            ck.error(
                z,
                "sparameters.reference_impedance",
                "the Touchstone reference impedance is a positive number of ohm",
            );
            DEFAULT_REFERENCE_IMPEDANCE
        }
    };
    let key = "sparameters.ports";
    if section.ports.get_ref().is_empty() {
        ck.error(&section.ports, key, "list at least one port");
    }
    let mut ports: Vec<String> = Vec::new();
    for item in section.ports.get_ref() {
        let name = item.get_ref().clone();
        if ports.contains(&name) {
            ck.error(
                item,
                key,
                format!("port `{name}` is listed twice: each port once"),
            );
            continue;
        }
        if lumped(&name).is_none() {
            check_port(ck, item.span().start, &name, sources, fluxes);
        }
        ports.push(name);
    }
    let lumped_sources: Vec<Option<usize>> = ports
        .iter()
        .map(|p| lumped(p).and_then(|(_, source)| source))
        .collect();
    let stray = sources.iter().enumerate().find(|(k, s)| {
        !lumped_sources.contains(&Some(*k))
            && !s
                .mode
                .as_ref()
                .is_some_and(|(sheet, _)| ports.contains(&sheet.name))
    });
    if let Some((k, stray)) = stray {
        let port = model
            .terminals
            .iter()
            .find(|t| matches!(t.kind, TerminalKind::Port { source: Some(s), .. } if s == k));
        let what = match (stray.mode.as_ref(), port) {
            (Some((sheet, _)), _) => format!("mode source `{}`", sheet.name),
            (None, Some(t)) => format!("lumped port `{}`", t.name),
            (None, None) => "a source that is not a port".to_string(),
        };
        ck.error_at(
            at,
            "sparameters",
            format!("with `[sparameters]` every source is a port's (each run drives one port): {what} is not; remove it or name it in `ports`"),
        );
    }
    let impedance = match lumped_reference(ck, at, &section, &ports, &lumped) {
        Some(z) => z,
        None => impedance,
    };
    (ck.problems.len() == before).then_some(SParameters {
        ports,
        reference_impedance: impedance,
    })
}

/// A lumped port's impedance ([re, im] ohm) and source (model index, if driven).
type LumpedPort = ([f64; 2], Option<usize>);

/// The reference impedance the lumped ports among `ports` share (the Touchstone file's), or
/// None without lumped ports; a problem reported when they differ, are complex or differ from
/// a given `reference_impedance`.
fn lumped_reference(
    ck: &mut Checker,
    at: usize,
    section: &SParametersSection,
    ports: &[String],
    lumped: &dyn Fn(&str) -> Option<LumpedPort>,
) -> Option<f64> {
    let zs: Vec<(&String, [f64; 2])> = ports
        .iter()
        .filter_map(|p| lumped(p).map(|(z, _)| (p, z)))
        .collect();
    let (_, first) = *zs.first()?;
    let touchstone = "a Touchstone file has one real reference impedance";
    if let Some((p, z)) = zs.iter().find(|(_, z)| *z != first || z[1] != 0.0) {
        ck.error_at(at, "sparameters.ports", format!(
            "lumped port `{p}` has impedance {} + {}i ohm, another {} + {}i: the lumped ports of a sweep share one real impedance ({touchstone}); a complex one belongs to a single port's S11",
            num(z[0]), num(z[1]), num(first[0]), num(first[1])
        ));
    }
    if let Some(z) = &section.reference_impedance {
        if *z.get_ref() != first[0] {
            ck.error(z, "sparameters.reference_impedance", format!(
                "the lumped ports' impedance is {} ohm, the reference of their S-parameters: leave `reference_impedance` out, or make it the same ({touchstone})",
                num(first[0])
            ));
        }
    }
    Some(first[0])
}

/// Port `name` needs a mode source and a mode monitor of that name, the monitor downstream of
/// the source on the same axis.
fn check_port(ck: &mut Checker, at: usize, name: &str, sources: &[Source], fluxes: &[Flux]) {
    let key = "sparameters.ports";
    let sheet = sources
        .iter()
        .filter_map(|s| s.mode.as_ref().map(|(sheet, _)| sheet))
        .find(|sheet| sheet.name == name);
    let monitor = fluxes.iter().find(|f| f.mode.is_some() && f.name == name);
    let (Some(sheet), Some(monitor)) = (sheet, monitor) else {
        let missing = match (sheet.is_some(), monitor.is_some()) {
            (false, false) => "a mode source and a mode monitor",
            (false, true) => "a mode source",
            _ => "a mode monitor",
        };
        ck.error_at(
            at,
            key,
            format!("port `{name}` needs {missing} named `{name}` (the source excites the port, the monitor reads it)"),
        );
        return;
    };
    let patch = &monitor.patches[0];
    let downstream = (patch.index as i64 - sheet.plane.index as i64) * sheet.sign as i64;
    if patch.axis as usize != sheet.plane.axis || downstream < 1 {
        ck.error_at(
            at,
            key,
            format!(
                "port `{name}`: its monitor must lie on a plane parallel to its source's and at least one cell downstream of it (along the source's direction, towards the device), where it sees the wave going in and the one coming out"
            ),
        );
    }
}
