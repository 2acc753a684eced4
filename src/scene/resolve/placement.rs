//! Where a requested position lands on the grid, and the warnings when that is not what the
//! scene asks: a point moved by more than rounding to the nearest grid point, a source that
//! cannot radiate, a monitor inside the PML.

use super::{unit_label, Checker};
use crate::model::*;
use std::collections::BTreeMap;
use toml::Spanned;

/// The grid index of `component` nearest to `p`: wrapped on periodic axes (a point on the
/// maximum face is the same point as on the minimum face there), clamped into the grid on the
/// others.
pub(super) fn nearest(
    g: &Grid,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    component: Component,
    p: [f64; 3],
) -> [usize; 3] {
    let clamped = g.nearest_index(component, p);
    let off = component.offset();
    [0, 1, 2].map(|a| {
        let periodic = faces.is_some_and(|f| f[a][0] == BoundaryKind::Periodic);
        if periodic {
            let f = (g.fractional_index(a, p[a]) - off[a]).round();
            (f as i64).rem_euclid(g.shape[a] as i64) as usize
        } else {
            clamped[a]
        }
    })
}

/// Distance along `a` from `p` to grid point `idx` of `component`, in cells, with periodic
/// axes measured the short way round.
fn offset_cells(
    g: &Grid,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    component: Component,
    p: [f64; 3],
    idx: [usize; 3],
    a: usize,
) -> f64 {
    let q = g.position(component, idx.map(|i| i as f64));
    // In cells: of the uniform cell, or on a graded axis of the local cells (the difference
    // of the two points' fractional indices).
    let d = match g.lines[a] {
        None => (q[a] - p[a]) / g.cell[a],
        Some(_) => g.fractional_index(a, q[a]) - g.fractional_index(a, p[a]),
    };
    let n = g.shape[a] as f64;
    if faces.is_some_and(|f| f[a][0] == BoundaryKind::Periodic) {
        d - n * (d / n).round()
    } else {
        d
    }
}

/// Warn when grid point `idx` of `component` lies more than half a cell from the requested
/// `p` along an axis `axes` lists (rounding to the nearest point moves at most half a cell; more
/// means the point was pushed inside the grid, where the field is stored).
#[allow(clippy::too_many_arguments)]
pub(super) fn warn_moved<T>(
    ck: &mut Checker,
    at: &Spanned<T>,
    key: &str,
    what: &str,
    g: &Grid,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    component: Component,
    p: [f64; 3],
    idx: [usize; 3],
    axes: &[usize],
    unit_m: f64,
) {
    let moved: Vec<usize> = axes
        .iter()
        .copied()
        .filter(|&a| {
            g.shape[a] > 1 && offset_cells(g, faces, component, p, idx, a).abs() > 0.5 + 1e-6
        })
        .collect();
    if moved.is_empty() {
        return;
    }
    let q = g.position(component, idx.map(|i| i as f64));
    let unit = unit_label(unit_m);
    let parts: Vec<String> = moved
        .iter()
        .map(|&a| {
            let d = num4(offset_cells(g, faces, component, p, idx, a).abs());
            let cells = if d == "1" { "cell" } else { "cells" };
            format!(
                "{} from {} to {} {unit} ({d} {cells})",
                Axis::ALL[a].name(),
                num(p[a] / unit_m),
                num(q[a] / unit_m),
            )
        })
        .collect();
    ck.warn(
        at,
        key,
        format!(
            "{what} {} is stored only inside the grid, so it was moved {}",
            component.name(),
            parts.join(", ")
        ),
    );
}

/// Why an electric current at grid point `idx` of `component` cannot radiate, if it cannot:
/// it lies on a face where the tangential E is held at zero, or inside a PEC object.
pub(super) fn dead_source(
    g: &Grid,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    objects: &[Object],
    table: &MaterialTable,
    component: Component,
    idx: [usize; 3],
) -> Option<String> {
    if let Some(f) = faces {
        for a in 0..3 {
            // Tangential components on the minimum node plane: held at zero by a PEC face
            // (and by the PEC behind a PML, where a source would be absorbed anyway).
            if a != component.axis() as usize
                && idx[a] == 0
                && g.shape[a] > 1
                && f[a][0].zeroes_tangential_e()
            {
                return Some(format!(
                    "{} there lies on the {}_min face, where the {} boundary holds the tangential E at zero: the source cannot radiate",
                    component.name(),
                    Axis::ALL[a].name(),
                    f[a][0].name()
                ));
            }
        }
    }
    let p = g.position(component, idx.map(|i| i as f64));
    let id = objects
        .iter()
        .rev()
        .find(|o| o.contains(p))
        .map(|o| o.material)?;
    let m = &table.materials[id as usize];
    m.pec.then(|| {
        format!(
            "{} there lies inside a PEC object (material `{}`), where E is zero: the source cannot radiate",
            component.name(),
            m.name
        )
    })
}

/// The face whose PML `p` lies in, if any: ("x_min", PML cells).
pub(super) fn in_pml(
    g: &Grid,
    faces: &[[BoundaryKind; 2]; 3],
    p: [f64; 3],
) -> Option<(String, usize)> {
    for a in 0..3 {
        let f = g.fractional_index(a, p[a]);
        let (lo, hi) = (faces[a][0].pml_cells(), faces[a][1].pml_cells());
        let axis = Axis::ALL[a].name();
        if lo > 0 && f < lo as f64 - 1e-9 {
            return Some((format!("{axis}_min"), lo));
        }
        if hi > 0 && f > (g.shape[a] - hi) as f64 + 1e-9 {
            return Some((format!("{axis}_max"), hi));
        }
    }
    None
}

/// A number for messages as written in a scene: at most 6 significant digits, no float noise
/// ("0.98", not "0.9800000000000002"), exponent form for very large or small values ("1e13",
/// not "10000000000000").
pub(crate) fn num(v: f64) -> String {
    sig(v, 6)
}

/// A computed number for messages: 4 significant digits, formatted as [`num`].
pub(crate) fn num4(v: f64) -> String {
    sig(v, 4)
}

fn sig(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if !(1e-4..1e6).contains(&a) {
        let s = format!("{v:.*e}", (digits - 1) as usize);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.')
        } else {
            m
        };
        return format!("{m}e{e}");
    }
    let decimals = (digits - 1 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::{num, num4};

    #[test]
    fn numbers_print_without_float_noise() {
        assert_eq!(num(0.9800000000000002), "0.98");
        assert_eq!(num(1e13), "1e13");
        assert_eq!(num(2.5e-7), "2.5e-7");
        assert_eq!(num(-1.5), "-1.5");
        assert_eq!(num(123456.0), "123456");
        assert_eq!(num(0.05), "0.05");
        assert_eq!(num4(9.53287e-16), "9.533e-16");
        assert_eq!(num4(0.437214), "0.4372");
    }
}

/// The offsets one trace of a scan (`scan.rs`) adds to written positions, in the scene's length unit, by index in
/// the file of the `[[source]]` or `[[monitor]]` entry. The resolvers of sources and monitors
/// add them before converting to metres; the default (no entry) changes nothing.
#[derive(Debug, Default)]
pub(super) struct Shift {
    /// Offsets of `[[source]]` entries.
    pub(super) sources: BTreeMap<usize, [f64; 3]>,
    /// Offsets of `[[monitor]]` entries.
    pub(super) monitors: BTreeMap<usize, [f64; 3]>,
}

impl Shift {
    /// No offsets: the scene as written.
    pub(super) fn none() -> Self {
        Shift::default()
    }
    /// Written position `p` of `[[source]]` entry `n`, moved for this trace.
    pub(super) fn source(&self, n: usize, p: [f64; 3]) -> [f64; 3] {
        shifted(p, self.sources.get(&n))
    }
    /// Written position `p` of `[[monitor]]` entry `n`, moved for this trace.
    pub(super) fn monitor(&self, n: usize, p: [f64; 3]) -> [f64; 3] {
        shifted(p, self.monitors.get(&n))
    }
}

fn shifted(p: [f64; 3], d: Option<&[f64; 3]>) -> [f64; 3] {
    match d {
        Some(d) => [p[0] + d[0], p[1] + d[1], p[2] + d[2]],
        None => p,
    }
}
