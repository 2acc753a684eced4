//! Lumped ports (`[[source]] type = "lumped_port"`) and lumped RLC elements (`[[geometry]]`
//! with `element = { ... }`), placed on the built model: each becomes a cell pass over its
//! box's edges ([`LumpedElement`]), a [`Terminal`] that reads its voltage and current every
//! step, and for a port the current sheet that drives it. They come last because their update
//! needs the host material's coefficients at their edges, which the painted model gives.
//!
//! A box maps to edges of the E component along its axis: along the axis, the edges between
//! the nodes nearest its two faces (at least one: a gap of zero cells is refused); across it,
//! every node line within the box (the nearest one where the box is flat there).

use super::placement::num;
use super::sources::waveform;
use super::{text, vec3_plain, Checker};
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// A placed port's or element's cell pass: its name, component and edges (to refuse overlaps).
type Placed = (String, Component, [[usize; 2]; 3]);

/// The default reference impedance of a lumped port (ohm).
pub const DEFAULT_PORT_IMPEDANCE: f64 = 50.0;

/// Place every lumped port and element of `scene` on `model` (lengths in units of `unit_m`
/// metres), each problem reported in `ck` with its key and line.
pub(super) fn attach(scene: &SceneFile, ck: &mut Checker, model: &mut Model, unit_m: f64) {
    let mut taken: Vec<Placed> = Vec::new();
    let mut first_frequencies: Option<Vec<f64>> = None;
    for (n, src) in scene.source.iter() {
        let s = src.get_ref();
        if s.kind.get_ref() != "lumped_port" {
            continue;
        }
        let key = format!("source[{n}]");
        if let Some(placed) = port(s, src, n, &key, ck, model, unit_m, &taken) {
            if first_frequencies.is_none() {
                first_frequencies = Some(placed.1.clone());
            }
            taken.push(placed.0);
        }
    }
    for (n, g) in scene.geometry.iter() {
        let Some(e) = &g.get_ref().element else {
            continue;
        };
        let key = format!("geometry[{n}]");
        let frequencies = match &e.get_ref().frequencies {
            Some(f) => {
                let Some(list) = super::monitors::frequency_list(
                    f,
                    &format!("{key}.element"),
                    ck,
                    Some(&model.grid),
                ) else {
                    continue;
                };
                list
            }
            None => {
                if first_frequencies.is_none() {
                    ck.warn(e, &format!("{key}.element"), "no lumped port gives frequencies, so this element's impedance and dissipated power are not reported (its voltage and current series are): give `frequencies = { min = ..., max = ..., count = ... }` in the element");
                }
                first_frequencies.clone().unwrap_or_default()
            }
        };
        if let Some(placed) = element(g, e, n, &key, ck, model, unit_m, &taken, frequencies) {
            taken.push(placed);
        }
    }
}

/// One lumped port: its element (the internal resistance), terminal and source.
#[allow(clippy::too_many_arguments)] // the entry, its key and what placing it needs
fn port(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    n: usize,
    key: &str,
    ck: &mut Checker,
    model: &mut Model,
    unit_m: f64,
    taken: &[Placed],
) -> Option<(Placed, Vec<f64>)> {
    for (given, name) in [
        (s.component.is_some(), "component"),
        (s.position.is_some(), "position"),
        (s.polarization.is_some(), "polarization"),
        (s.mode.is_some(), "mode"),
        (s.profiles.is_some(), "profiles"),
        (s.two_way.is_some(), "two_way"),
        (s.scan_step.is_some(), "scan_step"),
    ] {
        if given {
            ck.error(
                src,
                &format!("{key}.{name}"),
                "a lumped port takes `name`, `box`, `direction`, `impedance`, `waveform`, `amplitude` and `frequencies`",
            );
        }
    }
    let name = s
        .name
        .as_ref()
        .map_or(format!("port{n}"), |v| v.get_ref().clone());
    let dirs = ["+x", "-x", "+y", "-y", "+z", "-z"];
    let dir = match s.direction.as_ref().map(|d| (d, text(d))) {
        Some((_, Some(d))) => ck.one_of(&d, &format!("{key}.direction"), &dirs),
        Some((d, None)) => {
            ck.error(
                d,
                &format!("{key}.direction"),
                "a lumped port's direction is one of +x, -x, +y, -y, +z, -z",
            );
            None
        }
        None => {
            ck.error(src, key, "a lumped port needs `direction` (+x, -x, +y, -y, +z or -z): the way its current flows across the gap");
            None
        }
    };
    let impedance = port_impedance(s, key, ck);
    let frequencies = match &s.frequencies {
        Some(f) => super::monitors::frequency_list(f, key, ck, Some(&model.grid)),
        None => {
            ck.error(src, key, "a lumped port needs `frequencies = { min = ..., max = ..., count = ... }` (Hz): where its impedance and S11 are reported");
            None
        }
    };
    let Some(region) = &s.region else {
        ck.error(
            src,
            key,
            "a lumped port needs `box = { center = [...], size = [...] }`: its gap",
        );
        return None;
    };
    // The waveform's problems were reported with the other sources'.
    let mut quiet = Checker {
        text: ck.text,
        problems: Vec::new(),
        warnings: Vec::new(),
        file: ck.file,
    };
    let wave = waveform(&s.waveform, &format!("{key}.waveform"), &mut quiet);
    let (dir, impedance, frequencies, wave) = (dir?, impedance?, frequencies?, wave?);
    let u = dir / 2;
    let sign = if dir % 2 == 0 { 1.0 } else { -1.0 };
    let cells = edge_box(region, &format!("{key}.box"), u, ck, model, unit_m)?;
    let component = Component::ALL[u];
    let cb = host(
        model,
        component,
        cells,
        ck,
        region,
        &format!("{key}.box"),
        "port",
    )?;
    overlap(taken, component, cells, ck, region, &format!("{key}.box"))?;
    let edges = EdgeBox::new(&model.grid, &model.boundaries.faces, component, cells);
    let resistance = impedance[0];
    let rlc = Rlc {
        resistance: Some(resistance),
        inductance: None,
        capacitance: None,
        topology: Topology::Parallel,
    };
    let pass_name = format!("port.{name}");
    model
        .cell_passes
        .push(std::sync::Arc::new(LumpedElement::new(
            &pass_name,
            &rlc,
            &edges,
            &cb,
            model.grid.dt,
        )));
    let amplitude = s.amplitude.as_ref().map_or(1.0, |a| *a.get_ref());
    model.sources.push(Source {
        component,
        cells,
        // Norton's current for Thevenin's V_s behind R: J = s V_s / (R A) along the axis.
        amplitude: sign * amplitude / (resistance * edges.area),
        waveform: wave,
        advance: 0.0,
        magnetic: None,
        mode: None,
        filter: Vec::new(),
        transverse_k: None,
        partner: false,
    });
    let kind = TerminalKind::Port {
        impedance,
        source: Some(model.sources.len() - 1),
        amplitude,
    };
    let faces = model.boundaries.faces;
    model.terminals.push(Terminal::new(
        &name,
        kind,
        &model.grid,
        &faces,
        &edges,
        sign,
        frequencies.clone(),
    ));
    Some(((pass_name, component, cells), frequencies))
}

/// A port's `impedance`: a number or `[re, im]` ohm with a positive real part (default 50).
fn port_impedance(s: &SourceSpec, key: &str, ck: &mut Checker) -> Option<[f64; 2]> {
    let Some(z) = &s.impedance else {
        return Some([DEFAULT_PORT_IMPEDANCE, 0.0]);
    };
    let value = match z.get_ref() {
        toml::Value::Array(a) if a.len() == 2 => match (super::as_f64(&a[0]), super::as_f64(&a[1]))
        {
            (Some(r), Some(i)) => Some([r, i]),
            _ => None,
        },
        v => super::as_f64(v).map(|r| [r, 0.0]),
    };
    match value {
        Some([r, i]) if r > 0.0 && r.is_finite() && i.is_finite() => Some([r, i]),
        Some(_) => {
            ck.error(z, &format!("{key}.impedance"), "the real part must be a positive number of ohm: it is the source's internal resistance and the power waves' reference (an impedance of zero would short the port)");
            None
        }
        None => {
            ck.error(
                z,
                &format!("{key}.impedance"),
                "expected ohm as a number (50.0) or `[re, im]` ([50.0, 10.0])",
            );
            None
        }
    }
}

/// One lumped element: its cell pass and terminal (whose spectra are reported at
/// `frequencies`: its own, or the first port's).
#[allow(clippy::too_many_arguments)] // the entry, its key and what placing it needs
fn element(
    g: &Spanned<GeometrySpec>,
    e: &Spanned<ElementSpec>,
    n: usize,
    key: &str,
    ck: &mut Checker,
    model: &mut Model,
    unit_m: f64,
    taken: &[Placed],
    frequencies: Vec<f64>,
) -> Option<Placed> {
    let gs = g.get_ref();
    let es = e.get_ref();
    let ekey = format!("{key}.element");
    if gs.shape.get_ref() != "box" {
        ck.error(
            &gs.shape,
            &format!("{key}.shape"),
            "a lumped element lies across a box: write shape = \"box\" with `center` and `size`",
        );
        return None;
    }
    if let Some(m) = &gs.material {
        ck.error(m, &format!("{key}.material"), "a lumped element paints no material (it sits in whatever is there): remove `material`, or give the material its own geometry entry");
    }
    let axis = ck.one_of(
        &es.direction,
        &format!("{ekey}.direction"),
        &["x", "y", "z"],
    );
    let topology = match &es.topology {
        None => Some(Topology::Series),
        Some(t) => ck
            .one_of(t, &format!("{ekey}.topology"), &["series", "parallel"])
            .map(|k| [Topology::Series, Topology::Parallel][k]),
    };
    let mut value = |v: &Option<Spanned<f64>>, name: &str, unit: &str| -> Option<Option<f64>> {
        match v {
            None => Some(None),
            Some(x) if *x.get_ref() == 0.0 => Some(None),
            Some(x) if x.get_ref().is_finite() && *x.get_ref() > 0.0 => Some(Some(*x.get_ref())),
            Some(x) => {
                ck.error(
                    x,
                    &format!("{ekey}.{name}"),
                    format!(
                        "must be a positive number of {unit} (0 leaves it out), got {}",
                        num(*x.get_ref())
                    ),
                );
                None
            }
        }
    };
    let resistance = value(&es.resistance, "resistance", "ohm");
    let inductance = value(&es.inductance, "inductance", "henry");
    let capacitance = value(&es.capacitance, "capacitance", "farad");
    let (axis, topology) = (axis?, topology?);
    let rlc = Rlc {
        resistance: resistance?,
        inductance: inductance?,
        capacitance: capacitance?,
        topology,
    };
    if rlc.resistance.is_none() && rlc.inductance.is_none() && rlc.capacitance.is_none() {
        ck.error(
            e,
            &ekey,
            "give at least one of `resistance`, `inductance` and `capacitance`",
        );
        return None;
    }
    let (Some(center), Some(size)) = (&gs.center, &gs.size) else {
        ck.error(
            g,
            key,
            "a lumped element needs the box's `center` and `size`",
        );
        return None;
    };
    let region = Spanned::new(
        center.span().start..size.span().end.max(center.span().end),
        BoxSpec {
            center: center.get_ref().clone(),
            size: size.get_ref().clone(),
        },
    );
    let component = Component::ALL[axis];
    let cells = edge_box(&region, key, axis, ck, model, unit_m)?;
    let cb = host(model, component, cells, ck, &region, key, "element")?;
    overlap(taken, component, cells, ck, &region, key)?;
    let name = es
        .name
        .as_ref()
        .map_or(format!("element{n}"), |v| v.get_ref().clone());
    let edges = EdgeBox::new(&model.grid, &model.boundaries.faces, component, cells);
    let pass_name = format!("element.{name}");
    model
        .cell_passes
        .push(std::sync::Arc::new(LumpedElement::new(
            &pass_name,
            &rlc,
            &edges,
            &cb,
            model.grid.dt,
        )));
    let faces = model.boundaries.faces;
    // Along the axis: the voltage is the drop, the current flows along it, V I* the power.
    model.terminals.push(Terminal::new(
        &name,
        TerminalKind::Element,
        &model.grid,
        &faces,
        &edges,
        1.0,
        frequencies,
    ));
    Some((pass_name, component, cells))
}

/// The edges of the E component along axis `u` that box `b` spans (see the module
/// documentation), or None with the problem reported: a gap of no cell, a box outside the
/// domain, in a PML or on a wall that holds the component at zero.
fn edge_box(
    b: &Spanned<BoxSpec>,
    key: &str,
    u: usize,
    ck: &mut Checker,
    model: &Model,
    unit_m: f64,
) -> Option<[[usize; 2]; 3]> {
    let bs = b.get_ref();
    let (Some(center), Some(size)) = (vec3_plain(&bs.center), vec3_plain(&bs.size)) else {
        ck.error(
            b,
            key,
            "expected `{ center = [x, y, z], size = [sx, sy, sz] }`",
        );
        return None;
    };
    if let Some(a) = (0..3).find(|&a| size[a] < 0.0) {
        ck.error(
            b,
            &format!("{key}.size"),
            format!("size along {} is negative", Axis::ALL[a].name()),
        );
        return None;
    }
    let g = &model.grid;
    let faces = &model.boundaries.faces;
    let mut cells = [[0usize; 2]; 3];
    for a in 0..3 {
        let lo = g.fractional_index(a, (center[a] - 0.5 * size[a]) * unit_m);
        let hi = g.fractional_index(a, (center[a] + 0.5 * size[a]) * unit_m);
        let name = Axis::ALL[a].name();
        if lo < -1e-6 || hi > g.shape[a] as f64 + 1e-6 {
            ck.error(b, key, format!(
                "the box reaches outside the domain along {name} ({} to {} {}, the domain {} to {})",
                num(center[a] - 0.5 * size[a]), num(center[a] + 0.5 * size[a]), model.length_unit,
                num(g.coordinate(a, 0.0) / unit_m), num(g.coordinate(a, g.shape[a] as f64) / unit_m)
            ));
            return None;
        }
        cells[a] = if a == u {
            let (first, last) = (lo.round() as usize, hi.round() as usize);
            if last <= first {
                ck.error(b, &format!("{key}.size"), format!(
                    "the gap spans no cell along {name} (its faces snap to the same grid plane): make it at least one cell long along its direction"
                ));
                return None;
            }
            [first, last]
        } else if size[a] == 0.0 {
            let i = lo.round() as usize;
            [i, i + 1]
        } else {
            let first = (lo - 1e-6).ceil().max(0.0) as usize;
            let last = ((hi + 1e-6).floor() as usize + 1).max(first + 1);
            [first, last]
        };
        let wall = faces[a];
        let n = g.shape[a];
        if a != u {
            // Node lines across the axis: 0..n (n only on a periodic axis, where it is 0).
            if cells[a][1] > n {
                cells[a][1] = n;
                if cells[a][0] >= n {
                    ck.error(b, key, format!("the box lies on the {name}_max wall, which holds the current's field at zero: move it inside"));
                    return None;
                }
            }
            if cells[a][0] == 0 && wall[0].zeroes_tangential_e() {
                ck.error(b, key, format!("the box touches the {name}_min wall ({}), which holds the current's field at zero: move it inside", wall[0].name()));
                return None;
            }
        }
        let (plo, phi) = (wall[0].pml_cells(), wall[1].pml_cells());
        if (plo > 0 && cells[a][0] < plo) || (phi > 0 && cells[a][1] > n - phi) {
            ck.error(b, key, format!("the box reaches into the PML along {name}, which absorbs what the port or element would measure: move it into the interior"));
            return None;
        }
    }
    Some(cells)
}

/// The host's E-update gain cb at each edge of `cells` (C order), or None with the problem
/// reported: an edge in PEC (which shorts the port or element) or in a dispersive material
/// (whose poles would update the edge after the element).
fn host(
    model: &Model,
    c: Component,
    cells: [[usize; 2]; 3],
    ck: &mut Checker,
    at: &Spanned<BoxSpec>,
    key: &str,
    what: &str,
) -> Option<Vec<f64>> {
    let [_, ny, nz] = model.grid.shape;
    let [x0, x1] = cells[0];
    let mut ids = vec![0u8; (x1 - x0) * ny * nz];
    model.paint_materials(c, x0, x1, &mut ids);
    let coefficients = model.materials.coefficients(model.grid.dt);
    let mut cb = Vec::new();
    for i in x0..x1 {
        for j in cells[1][0]..cells[1][1] {
            for k in cells[2][0]..cells[2][1] {
                let id = ids[((i - x0) * ny + j) * nz + k] as usize;
                let m = &model.materials.materials[id];
                if m.pec {
                    ck.error(at, key, format!("the {what}'s edges cross PEC `{}`, which shorts it: leave its box free of PEC (the conductors end at its faces)", m.name));
                    return None;
                }
                if m.is_dispersive() {
                    ck.error(at, key, format!("the {what}'s edges lie in dispersive material `{}`: a lumped {what} sits in a non-dispersive host (air or a dielectric)", m.name));
                    return None;
                }
                cb.push(coefficients[id].cb);
            }
        }
    }
    Some(cb)
}

/// None (reported) when `cells` of `c` share an edge with a port or element placed before.
fn overlap(
    taken: &[Placed],
    c: Component,
    cells: [[usize; 2]; 3],
    ck: &mut Checker,
    at: &Spanned<BoxSpec>,
    key: &str,
) -> Option<()> {
    for (name, other, b) in taken {
        let meets = (0..3).all(|a| cells[a][0] < b[a][1] && b[a][0] < cells[a][1]);
        if *other == c && meets {
            ck.error(
                at,
                key,
                format!(
                    "its edges overlap those of `{name}`: two lumped circuits cannot share an edge"
                ),
            );
            return None;
        }
    }
    Some(())
}
