//! Mode sources and mode monitors (`type = "mode"`): their plane (a box with one zero extent),
//! direction and mode choice. The modes themselves are solved at run start
//! ([`crate::modes::prepare`]); here only what can be checked without solving.

use super::placement::num;
use super::{line_col, text, vec3_plain, Checker};
use crate::model::*;
use crate::scene::schema::*;
use std::sync::{Arc, OnceLock};
use toml::Spanned;

/// `file:line: `key`` of a scene entry, for messages given when its mode is solved.
fn place<T>(ck: &Checker, at: &Spanned<T>, key: &str) -> String {
    let (line, _) = line_col(ck.text, at.span().start);
    format!("{}:{line}: `{key}`", ck.file)
}

/// The plane of a mode source or monitor: `box` with exactly one zero extent, its normal's
/// node plane at least one cell inside the domain and outside the PML along the normal, its
/// in-plane cells the box's (snapped to nodes; the whole axis where the box reaches both ends
/// of the domain).
pub(super) fn mode_plane(
    b: &Spanned<BoxSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Option<ModePlane> {
    let bs = b.get_ref();
    let bkey = format!("{key}.box");
    let (Some(center), Some(size)) = (vec3_plain(&bs.center), vec3_plain(&bs.size)) else {
        ck.error(
            b,
            &bkey,
            "expected `{ center = [x, y, z], size = [sx, sy, sz] }`",
        );
        return None;
    };
    let zero: Vec<usize> = (0..3).filter(|&a| size[a] == 0.0).collect();
    let [axis] = zero[..] else {
        ck.error(
            b,
            &format!("{bkey}.size"),
            format!(
                "a mode plane is a box with exactly one zero extent (its normal, the direction of propagation); size = [{}, {}, {}] has {}",
                num(size[0]), num(size[1]), num(size[2]), zero.len()
            ),
        );
        return None;
    };
    if let Some(a) = (0..3).find(|&a| size[a] < 0.0) {
        ck.error(
            b,
            &format!("{bkey}.size"),
            format!("size along {} is negative", Axis::ALL[a].name()),
        );
        return None;
    }
    let g = grid?;
    let name = Axis::ALL[axis].name();
    let index = g.fractional_index(axis, center[axis] * unit_m).round();
    let n = g.shape[axis];
    if index < 1.0 || index > (n - 1) as f64 {
        ck.error(
            b,
            &format!("{bkey}.center"),
            format!(
                "the mode plane {name} = {} must lie at least one cell inside the domain, which spans [{}, {}]",
                num(center[axis]),
                num(g.origin[axis] / unit_m),
                num((g.origin[axis] + g.size()[axis]) / unit_m)
            ),
        );
        return None;
    }
    let index = index as usize;
    if let Some(f) = faces {
        let (lo, hi) = (f[axis][0].pml_cells(), f[axis][1].pml_cells());
        if (lo > 0 && index < lo) || (hi > 0 && index > n - hi) {
            ck.error(
                b,
                &format!("{bkey}.center"),
                format!(
                    "the mode plane {name} = {} lies inside the PML along {name} ({lo} + {hi} cells), where the fields are absorbed: move it into the interior",
                    num(center[axis])
                ),
            );
            return None;
        }
    }
    let [u, v] = [(axis + 1) % 3, (axis + 2) % 3];
    let range = |a: usize| -> Option<[usize; 2]> {
        let node = |x: f64| {
            g.fractional_index(a, x * unit_m)
                .round()
                .clamp(0.0, g.shape[a] as f64)
        };
        let r = [
            node(center[a] - 0.5 * size[a]) as usize,
            node(center[a] + 0.5 * size[a]) as usize,
        ];
        (r[1] >= r[0] + 2 || r == [0, g.shape[a]]).then_some(r)
    };
    match (range(u), range(v)) {
        (Some(ru), Some(rv)) => Some(ModePlane {
            axis,
            index,
            ranges: [ru, rv],
        }),
        _ => {
            ck.error(
                b,
                &format!("{bkey}.size"),
                "the mode plane must span at least two cells along each of its in-plane axes inside the domain",
            );
            None
        }
    }
}

/// The mode choice `mode`: an index (default 0) or `{ neff = ... }`.
fn choice(s: &SourceSpec, key: &str, ck: &mut Checker) -> Option<ModeChoice> {
    let Some(m) = &s.mode else {
        return Some(ModeChoice::Index(0));
    };
    let bad = "is a mode index from 0 (by decreasing n_eff) or `{ neff = 2.4 }`";
    match m.get_ref() {
        toml::Value::Integer(i) if *i >= 0 => Some(ModeChoice::Index(*i as usize)),
        toml::Value::Table(t) if t.len() == 1 => {
            match t
                .get("neff")
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
            {
                Some(n) if n.is_finite() && n > 0.0 => Some(ModeChoice::Neff(n)),
                _ => {
                    ck.error(m, &format!("{key}.mode"), format!("`mode` {bad}"));
                    None
                }
            }
        }
        _ => {
            ck.error(m, &format!("{key}.mode"), format!("`mode` {bad}"));
            None
        }
    }
}

/// A mode source: two sheets (J on E_u with M on H_v, J on E_v with M on H_u) sharing one
/// [`ModeSheet`], whose weights are solved at run start.
#[allow(clippy::too_many_arguments)] // the scene entry, its key, what placing it needs
pub(super) fn mode_source(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    n: usize,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    amplitude: f64,
    waveform: Option<Waveform>,
) -> Option<Vec<Source>> {
    for (given, name) in [
        (s.component.is_some(), "component"),
        (s.position.is_some(), "position"),
        (s.polarization.is_some(), "polarization"),
        (s.two_way.is_some(), "two_way"),
        (s.scan_step.is_some(), "scan_step"),
    ] {
        if given {
            ck.error(
                src,
                &format!("{key}.{name}"),
                "a mode source takes `name`, `box`, `direction`, `mode`, `profiles`, `waveform` and `amplitude`",
            );
        }
    }
    let choice = choice(s, key, ck);
    let Some(b) = &s.region else {
        ck.error(
            src,
            key,
            "a mode source needs `box = { center = [x, y, z], size = [sx, sy, sz] }` with one zero extent: its plane",
        );
        return None;
    };
    let plane = mode_plane(b, key, ck, grid, unit_m, faces);
    let dirs = ["+x", "-x", "+y", "-y", "+z", "-z"];
    let dir = match s.direction.as_ref() {
        Some(d) => match text(d) {
            Some(t) => ck.one_of(&t, &format!("{key}.direction"), &dirs),
            None => {
                ck.error(
                    d,
                    &format!("{key}.direction"),
                    "one of +x, -x, +y, -y, +z, -z",
                );
                None
            }
        },
        None => {
            ck.error(
                src,
                key,
                "a mode source needs `direction`, along its plane's normal (e.g. \"+x\")",
            );
            None
        }
    };
    let (plane, dir, choice, waveform) = (plane?, dir?, choice?, waveform?);
    if dir / 2 != plane.axis {
        ck.error(
            s.direction.as_ref().expect("given"),
            &format!("{key}.direction"),
            format!(
                "{} does not cross the plane, whose normal is {}: give +{1} or -{1}",
                dirs[dir],
                Axis::ALL[plane.axis].name()
            ),
        );
        return None;
    }
    let sign = if dir % 2 == 0 { 1 } else { -1 };
    let behind = if sign > 0 {
        plane.index - 1
    } else {
        plane.index
    };
    let name = match &s.name {
        Some(nm) if nm.get_ref().is_empty() || nm.get_ref().contains('/') => {
            ck.error(
                nm,
                &format!("{key}.name"),
                "must be a non-empty name without `/`",
            );
            return None;
        }
        Some(nm) => nm.get_ref().clone(),
        None => format!("source{n}"),
    };
    let f0 = waveform.centre_frequency();
    // The band's low edge, as far below the centre as its highest significant frequency is above.
    let band_low = (2.0 * f0 - waveform.max_frequency()).max(0.05 * f0);
    let nodes = profile_nodes(s, key, ck, &waveform, band_low)?;
    let place = match &s.mode {
        Some(m) => place(ck, m, &format!("{key}.mode")),
        None => place(ck, src, key),
    };
    let filters = if nodes.len() > 1 {
        lagrange_filters(&nodes)
    } else {
        vec![Vec::new()]
    };
    let [u, v] = plane.in_plane();
    let cells_at = |along: usize| {
        let mut c = [[0, 0]; 3];
        c[plane.axis] = [along, along + 1];
        c[u] = plane.ranges[0];
        c[v] = plane.ranges[1];
        c
    };
    // Per node, two sheets: role 0 drives J on E_u and M on H_v, role 1 J on E_v and M on H_u.
    let mut out = Vec::with_capacity(2 * nodes.len());
    for (&frequency, filter) in nodes.iter().zip(filters) {
        let sheet = Arc::new(ModeSheet {
            name: name.clone(),
            place: place.clone(),
            plane,
            sign,
            behind,
            choice,
            frequency,
            centre: f0,
            band_low,
            solved: OnceLock::new(),
        });
        for (role, (e, h)) in [(u, v), (v, u)].into_iter().enumerate() {
            out.push(Source {
                component: Component::ALL[e],
                cells: cells_at(plane.index),
                amplitude,
                waveform,
                advance: 0.0,
                magnetic: Some(MagneticSheet {
                    component: Component::ALL[3 + h],
                    cells: cells_at(behind),
                    amplitude,
                }),
                mode: Some((sheet.clone(), role)),
                filter: filter.clone(),
                transverse_k: None,
                partner: false,
            });
        }
    }
    Some(out)
}

/// The frequencies a mode source solves its profile at: the centre alone, or with `profiles =
/// K` the K Chebyshev nodes of its band (from `band_low` to as far above the centre), which
/// keep the interpolation between them close to the best polynomial's.
fn profile_nodes(
    s: &SourceSpec,
    key: &str,
    ck: &mut Checker,
    waveform: &Waveform,
    band_low: f64,
) -> Option<Vec<f64>> {
    let f0 = waveform.centre_frequency();
    let k = match &s.profiles {
        None => return Some(vec![f0]),
        Some(p) if (1..=9).contains(p.get_ref()) => *p.get_ref() as usize,
        Some(p) => {
            ck.error(
                p,
                &format!("{key}.profiles"),
                format!(
                    "solve the profile at 1 to 9 frequencies across the band, got {}",
                    p.get_ref()
                ),
            );
            return None;
        }
    };
    if k > 1 && waveform.derivative(0, 0.0).is_none() {
        ck.error(
            s.profiles.as_ref().expect("given"),
            &format!("{key}.profiles"),
            "a continuous wave has one frequency: its profile is solved there (leave `profiles` out)",
        );
        return None;
    }
    if k == 1 {
        return Some(vec![f0]);
    }
    let half = f0 - band_low;
    Some(
        (0..k)
            .map(|i| {
                let x = ((2 * i + 1) as f64 * std::f64::consts::PI / (2 * k) as f64).cos();
                f0 + half * x
            })
            .collect(),
    )
}

/// A mode monitor's decomposition: `modes` (default 1, at most 100).
pub(super) fn mode_monitor(
    m: &MonitorSpec,
    mon: &Spanned<MonitorSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    patch: &Patch,
) -> Option<Arc<ModeMonitor>> {
    let count = match &m.modes {
        None => 1,
        Some(c) if (1..=100).contains(c.get_ref()) => *c.get_ref() as usize,
        Some(c) => {
            ck.error(
                c,
                &format!("{key}.modes"),
                format!("decompose onto 1 to 100 modes, got {}", c.get_ref()),
            );
            return None;
        }
    };
    let voltage = match (&m.voltage, grid) {
        (Some(v), Some(g)) => Some(voltage_path(
            v,
            &format!("{key}.voltage"),
            ck,
            g,
            unit_m,
            patch,
        )?),
        _ => None,
    };
    Some(Arc::new(ModeMonitor {
        place: place(ck, mon, key),
        count,
        basis: OnceLock::new(),
        voltage,
    }))
}

/// A mode monitor's `voltage` path on `patch`: straight along one of the plane's axes, its
/// ends snapped to the nearest nodes, within the plane.
fn voltage_path(
    v: &Spanned<VoltageSpec>,
    key: &str,
    ck: &mut Checker,
    g: &Grid,
    unit_m: f64,
    patch: &Patch,
) -> Option<VoltagePath> {
    let vs = v.get_ref();
    let (Some(from), Some(to)) = (vec3_plain(&vs.from), vec3_plain(&vs.to)) else {
        ck.error(v, key, "expected `{ from = [x, y, z], to = [x, y, z] }`");
        return None;
    };
    let [p, q] = patch.in_plane();
    let index = |a: usize, x: f64| g.fractional_index(a, x * unit_m).round() as i64;
    let moves: Vec<usize> = [p, q]
        .into_iter()
        .filter(|&a| index(a, from[a]) != index(a, to[a]))
        .collect();
    let [along] = moves[..] else {
        ck.error(v, key, format!(
            "the path runs along one of the plane's axes ({} or {}) from one conductor to the other: `from` and `to` differ along {} of them on the grid",
            Axis::ALL[p].name(), Axis::ALL[q].name(), moves.len()
        ));
        return None;
    };
    let across = if along == p { q } else { p };
    let slot = |a: usize, i: i64| -> Option<usize> {
        let k = if a == p { 0 } else { 1 };
        let j = i - patch.start[k] as i64;
        (0..patch.count[k] as i64)
            .contains(&j)
            .then_some(j as usize)
    };
    let (a0, a1) = (index(along, from[along]), index(along, to[along]));
    let sign = if a1 > a0 { 1.0 } else { -1.0 };
    let Some(fixed) = slot(across, index(across, from[across])) else {
        ck.error(v, key, "the path lies outside the monitor's plane");
        return None;
    };
    let which = if crate::flux::tangential(patch.axis as usize).0 == along {
        0
    } else {
        1
    };
    let mut cells = Vec::new();
    for i in a0.min(a1)..a0.max(a1) {
        let Some(j) = slot(along, i) else {
            ck.error(v, key, "the path reaches outside the monitor's plane");
            return None;
        };
        let cell = if along == p {
            j * patch.count[1] + fixed
        } else {
            fixed * patch.count[1] + j
        };
        cells.push((which, cell, sign * g.primal(along, i as isize)));
    }
    Some(VoltagePath {
        cells,
        step: g.primal(patch.axis as usize, patch.index as isize),
    })
}
