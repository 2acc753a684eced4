//! `[[monitor]]`: probes, snapshots, flux planes and boxes, far-field boxes.

use super::placement::{in_pml, nearest, num, warn_moved};
use super::{inside, outside_message, vec3_plain, Checker, ALL_COMPONENTS};
use crate::model::*;
use crate::scene::schema::*;
use std::collections::HashSet;
use toml::Spanned;

pub(super) fn monitors(
    scene: &SceneFile,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    objects: &[Object],
    shift: &super::placement::Shift,
) -> (Vec<Probe>, Vec<Snapshot>, Vec<Flux>) {
    let mut probes = Vec::new();
    let mut snaps = Vec::new();
    let mut fluxes = Vec::new();
    let mut names = HashSet::new();
    for (n, mon) in scene.monitor.iter() {
        let key = format!("monitor[{n}]");
        let m = mon.get_ref();
        let name = m.name.get_ref().clone();
        if name.is_empty() || name.contains('/') {
            ck.error(
                &m.name,
                &format!("{key}.name"),
                "must be a non-empty name without `/`",
            );
        } else if name == "." {
            ck.error(
                &m.name,
                &format!("{key}.name"),
                "`.` cannot name a monitor: in HDF5 it means the group itself, so the monitor's group could not be created; choose another name",
            );
        } else if !names.insert(name.clone()) {
            ck.error(
                &m.name,
                &format!("{key}.name"),
                format!("duplicate monitor name `{name}`: each monitor needs its own name"),
            );
        }
        let Some(kind) = ck.one_of(
            &m.kind,
            &format!("{key}.type"),
            &[
                "probe",
                "snapshot",
                "flux",
                "far_field",
                "mode",
                "diffraction",
            ],
        ) else {
            continue;
        };
        if kind != 4 {
            if let Some(c) = &m.modes {
                ck.error(
                    c,
                    &format!("{key}.modes"),
                    "`modes` belongs to mode monitors",
                );
            }
            if let Some(v) = &m.voltage {
                ck.error(
                    v,
                    &format!("{key}.voltage"),
                    "`voltage` belongs to mode monitors",
                );
            }
        }
        if kind == 5 && m.region.is_some() {
            ck.error(
                mon,
                &format!("{key}.box"),
                "a diffraction monitor is a plane across the periodic cell: give `plane = { z = ... }` (or x, y), not `box`",
            );
            continue;
        }
        if kind >= 2 {
            let mut found = flux(m, mon, &key, ck, grid, unit_m, faces, kind == 3, kind == 4);
            if let (Some(f), true) = (&mut found, kind == 5) {
                // Its orders, medium and source are resolved with the Bloch phases
                // (`super::bloch::diffraction`).
                f.diffraction = Some(std::sync::Arc::new(Diffraction {
                    place: key.clone(),
                    orders: Vec::new(),
                    bloch_k: [0.0; 2],
                    material: 0,
                    toward: 1.0,
                    source: 0,
                    incident: Default::default(),
                }));
            }
            if let (Some(f), true) = (&mut found, kind == 4) {
                let patch = f.patches[0];
                f.mode = super::modes::mode_monitor(m, mon, &key, ck, grid, unit_m, &patch);
                if f.mode.is_none() {
                    found = None;
                }
            }
            if let Some(f) = found {
                if let (Some(g), Some(b), true) = (grid, &m.region, f.far_field.is_some()) {
                    vacuum_outside(ck, g, b, &key, &f.patches, objects, unit_m);
                }
                fluxes.push(f);
            }
            continue;
        }
        let surface_key = [
            (m.frequencies.is_some(), "frequencies"),
            (m.fields.is_some(), "fields"),
            (m.decimation.is_some(), "decimation"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name));
        if let Some(name) = surface_key {
            ck.error(
                mon,
                &format!("{key}.{name}"),
                "`frequencies`, `fields` and `decimation` belong to flux and far_field monitors",
            );
        }
        for (field, present) in [("theta", m.theta.is_some()), ("phi", m.phi.is_some())] {
            if present {
                ck.error(
                    mon,
                    &format!("{key}.{field}"),
                    format!("`{field}` belongs to far_field monitors"),
                );
            }
        }
        let Some(components) = &m.components else {
            ck.error(
                mon,
                &key,
                "a probe or snapshot needs `components`, e.g. [\"Ez\"]",
            );
            continue;
        };
        let comps: Vec<Component> = components
            .get_ref()
            .iter()
            .filter_map(|c| ck.component(c, &format!("{key}.components"), &ALL_COMPONENTS))
            .collect();
        if components.get_ref().is_empty() {
            ck.error(
                components,
                &format!("{key}.components"),
                "list at least one component",
            );
        }
        let mut seen = HashSet::new();
        for c in &comps {
            if !seen.insert(*c) {
                ck.error(
                    components,
                    &format!("{key}.components"),
                    format!("{} is listed twice", c.name()),
                );
            }
        }
        if kind == 0 {
            for (field, present) in [
                ("plane", m.plane.is_some()),
                ("box", m.region.is_some()),
                ("every", m.every.is_some()),
                ("stride", m.stride.is_some()),
            ] {
                if present {
                    ck.error(mon, &format!("{key}.{field}"), format!("a probe takes `position` and `components`; `{field}` belongs to snapshots"));
                }
            }
            let Some(pos) = m.position.as_ref() else {
                ck.error(mon, &key, "a probe needs `position = [x, y, z]`");
                continue;
            };
            let Some(p) = ck
                .vec3(pos, &format!("{key}.position"))
                // In a scan, trace k's position: the written one plus k * scan_step.
                .map(|p| shift.monitor(n, p).map(|x| x * unit_m))
            else {
                continue;
            };
            let (Some(g), Some(faces)) = (grid, faces) else {
                continue;
            };
            if !inside(g, p) {
                ck.error(
                    pos,
                    &format!("{key}.position"),
                    outside_message(g, p, unit_m),
                );
                continue;
            }
            if let Some((face, cells)) = in_pml(g, faces, p) {
                ck.warn(pos, &format!("{key}.position"), format!(
                    "the probe lies inside the {cells}-cell PML of the {face} face, where the fields are being absorbed and do not show the scene's fields"
                ));
            }
            let interpolate = m.interpolate.as_ref().is_none_or(|i| *i.get_ref());
            if !interpolate {
                for &c in &comps {
                    let idx = g.nearest_index(c, p);
                    let pkey = format!("{key}.position");
                    warn_moved(
                        ck,
                        pos,
                        &pkey,
                        "the probe's nearest",
                        g,
                        Some(faces),
                        c,
                        p,
                        idx,
                        &[0, 1, 2],
                        unit_m,
                    );
                }
            }
            let mut samples = Vec::new();
            let mut components = Vec::new();
            for &c in &comps {
                let nearest = g.nearest_index(c, p);
                let stencil = if interpolate {
                    g.stencil(c, p, faces)
                } else {
                    vec![(nearest, 1.0)]
                };
                components.push(ProbeComponent {
                    component: c,
                    nearest,
                    first: samples.len(),
                    weights: stencil.iter().map(|s| s.1).collect(),
                });
                samples.extend(stencil.iter().map(|s| (c, s.0)));
            }
            probes.push(Probe {
                name,
                position: p,
                interpolate,
                components,
                samples,
            });
        } else {
            if m.position.is_some() {
                ck.error(
                    mon,
                    &format!("{key}.position"),
                    "a snapshot takes `plane`, `box` or neither (whole volume), not `position`",
                );
            }
            if m.interpolate.is_some() {
                ck.error(
                    mon,
                    &format!("{key}.interpolate"),
                    "`interpolate` belongs to probes",
                );
            }
            let every = match &m.every {
                Some(e) if *e.get_ref() >= 1 => *e.get_ref() as usize,
                Some(e) => {
                    ck.error(
                        e,
                        &format!("{key}.every"),
                        format!("must be a whole number of steps >= 1, got {}", e.get_ref()),
                    );
                    continue;
                }
                None => {
                    ck.error(
                        mon,
                        &key,
                        "a snapshot needs `every = N` (steps between snapshots)",
                    );
                    continue;
                }
            };
            let stride = match &m.stride {
                Some(s) if *s.get_ref() >= 1 => *s.get_ref() as usize,
                Some(s) => {
                    ck.error(
                        s,
                        &format!("{key}.stride"),
                        format!("must be >= 1, got {}", s.get_ref()),
                    );
                    continue;
                }
                None => 1,
            };
            let Some(g) = grid else { continue };
            if every > g.steps {
                ck.warn(
                    m.every.as_ref().unwrap(),
                    &format!("{key}.every"),
                    format!(
                        "every = {every} is more than the run's {} steps: no snapshot is taken and the datasets stay empty",
                        g.steps
                    ),
                );
            }
            let regions = match (&m.plane, &m.region) {
                (Some(_), Some(_)) => {
                    ck.error(mon, &key, "give `plane` or `box`, not both");
                    continue;
                }
                (Some(plane), None) => {
                    let map = plane.get_ref();
                    if map.len() != 1 {
                        ck.error(plane, &format!("{key}.plane"), "a plane is one coordinate: `{ x = ... }`, `{ y = ... }` or `{ z = ... }`");
                        continue;
                    }
                    let (axis_name, value) = map.iter().next().unwrap();
                    let Some(a) = ["x", "y", "z"].iter().position(|s| s == axis_name) else {
                        ck.error(
                            plane,
                            &format!("{key}.plane"),
                            format!("`{axis_name}` is not an axis: use x, y or z"),
                        );
                        continue;
                    };
                    let c = value * unit_m;
                    let size = g.size();
                    if c < g.origin[a] || c > g.origin[a] + size[a] {
                        ck.error(
                            plane,
                            &format!("{key}.plane.{axis_name}"),
                            format!(
                                "{axis_name} = {} lies outside the domain, which spans [{}, {}]",
                                num(*value),
                                num(g.origin[a] / unit_m),
                                num((g.origin[a] + size[a]) / unit_m)
                            ),
                        );
                        continue;
                    }
                    for &comp in &comps {
                        let mut p = [0.0; 3];
                        p[a] = c;
                        let idx = nearest(g, faces, comp, p);
                        let pkey = format!("{key}.plane.{axis_name}");
                        warn_moved(
                            ck,
                            plane,
                            &pkey,
                            "the snapshot plane of",
                            g,
                            faces,
                            comp,
                            p,
                            idx,
                            &[a],
                            unit_m,
                        );
                    }
                    comps
                        .iter()
                        .map(|&comp| {
                            let mut p = [0.0; 3];
                            p[a] = c;
                            let idx = nearest(g, faces, comp, p)[a];
                            let mut start = [0, 0, 0];
                            let mut end = g.shape;
                            start[a] = idx;
                            end[a] = idx + 1;
                            (
                                comp,
                                Region {
                                    start,
                                    end,
                                    stride: [stride; 3],
                                },
                            )
                        })
                        .collect::<Vec<_>>()
                }
                (None, Some(b)) => {
                    let bs = b.get_ref();
                    let (Some(center), Some(size)) = (vec3_plain(&bs.center), vec3_plain(&bs.size))
                    else {
                        ck.error(
                            b,
                            &format!("{key}.box"),
                            "expected `{ center = [x, y, z], size = [sx, sy, sz] }`",
                        );
                        continue;
                    };
                    if size.iter().any(|s| *s < 0.0) {
                        ck.error(b, &format!("{key}.box.size"), "sizes must be >= 0");
                        continue;
                    }
                    let lo = [0, 1, 2].map(|a| (center[a] - 0.5 * size[a]) * unit_m);
                    let hi = [0, 1, 2].map(|a| (center[a] + 0.5 * size[a]) * unit_m);
                    if !inside(g, lo) || !inside(g, hi) {
                        ck.error(
                            b,
                            &format!("{key}.box"),
                            "the box reaches outside the domain",
                        );
                        continue;
                    }
                    comps
                        .iter()
                        .map(|&comp| {
                            let a = g.nearest_index(comp, lo);
                            let b = g.nearest_index(comp, hi);
                            (
                                comp,
                                Region {
                                    start: a,
                                    end: [b[0] + 1, b[1] + 1, b[2] + 1],
                                    stride: [stride; 3],
                                },
                            )
                        })
                        .collect()
                }
                (None, None) => comps
                    .iter()
                    .map(|&comp| {
                        (
                            comp,
                            Region {
                                start: [0; 3],
                                end: g.shape,
                                stride: [stride; 3],
                            },
                        )
                    })
                    .collect(),
            };
            snaps.push(Snapshot {
                name,
                regions,
                every,
            });
        }
    }
    (probes, snaps, fluxes)
}

/// A flux monitor (a plane with one coordinate, or a closed box) or a far-field monitor (a
/// closed box and its angles), with a frequency list.
#[allow(clippy::too_many_arguments)]
fn flux(
    m: &MonitorSpec,
    mon: &Spanned<MonitorSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    far: bool,
    mode: bool,
) -> Option<Flux> {
    let what = if far {
        "a far_field monitor takes `box`, `frequencies`, `theta` and `phi`"
    } else if mode {
        "a mode monitor takes `box` (a plane: one zero extent) or `plane`, `modes`, `frequencies` and `decimation`"
    } else {
        "a flux monitor takes `plane` or `box`, `frequencies` and `fields`"
    };
    for (field, present) in [
        ("components", m.components.is_some()),
        ("every", m.every.is_some()),
        ("stride", m.stride.is_some()),
        ("position", m.position.is_some()),
        ("interpolate", m.interpolate.is_some()),
        ("plane", far && m.plane.is_some()),
        ("fields", (far || mode) && m.fields.is_some()),
        ("theta", !far && m.theta.is_some()),
        ("phi", !far && m.phi.is_some()),
    ] {
        if present {
            let why = match field {
                "plane" => "; the projection needs a closed surface: give `box = { center, size }`",
                "fields" if mode => "",
                "fields" => "; the surface DFTs are always stored, under `surface`",
                "theta" | "phi" => "; angles belong to far_field monitors",
                _ => "",
            };
            ck.error(
                mon,
                &format!("{key}.{field}"),
                format!("{what}; `{field}` does not apply{why}"),
            );
        }
    }
    let kind = match (far, mode) {
        (true, _) => "a far_field",
        (_, true) => "a mode",
        _ => "a flux",
    };
    let far_field = if far {
        let theta = angles(ck, m.theta.as_ref(), mon, key, "theta", Some((0.0, 180.0)));
        let phi = angles(ck, m.phi.as_ref(), mon, key, "phi", None);
        match (theta, phi) {
            (Some(theta), Some(phi)) => Some(FarField { theta, phi }),
            _ => None,
        }
    } else {
        None
    };
    let frequencies = match &m.frequencies {
        None => {
            ck.error(
                mon,
                key,
                format!("{kind} monitor needs `frequencies = {{ min = ..., max = ..., count = ... }}` (Hz)"),
            );
            None
        }
        Some(f) => frequency_list(f, key, ck, grid),
    };
    let fields = m.fields.as_ref().is_some_and(|f| *f.get_ref());
    // 0: chosen by the resolver once the sources are known (super::flux_decimation).
    let decimation = match &m.decimation {
        None => 0,
        Some(d) => match usize::try_from(*d.get_ref()) {
            Ok(k) if (1..=1_000_000).contains(&k) => k,
            _ => {
                ck.error(
                    d,
                    &format!("{key}.decimation"),
                    format!(
                        "decimation = {} is not a sampling period: give a whole number of steps from 1 (every step) to 1000000, or leave it out to have it chosen from the sources' band",
                        d.get_ref()
                    ),
                );
                return None;
            }
        },
    };
    let patches = match (&m.plane, &m.region) {
        (Some(_), Some(_)) => {
            ck.error(
                mon,
                key,
                "give `plane` (a flux plane) or `box` (a closed flux box), not both",
            );
            return None;
        }
        (None, None) => {
            let need = if far {
                "a far_field monitor needs `box = { center = [x, y, z], size = [sx, sy, sz] }`, the closed surface it projects from"
            } else {
                "a flux monitor needs `plane = { x = ... }` (or y, z) or a closed `box = { center = [x, y, z], size = [sx, sy, sz] }`"
            };
            ck.error(mon, key, need);
            return None;
        }
        (None, Some(b)) if mode => {
            vec![super::modes::mode_plane(b, key, ck, grid, unit_m, faces)?.patch()]
        }
        (None, Some(b)) => closed_box(b, key, ck, grid, unit_m, faces)?,
        (Some(plane), None) => vec![flux_plane(plane, key, ck, grid, unit_m, faces)?],
    };
    if far && far_field.is_none() {
        return None;
    }
    let frequencies = frequencies?;
    if let (Some(d), Some(g)) = (&m.decimation, grid) {
        // Sampled every k steps the DFT aliases at 1 / (2 k dt): the monitor's own highest
        // frequency must lie below it (the sources' band is the automatic choice's business).
        let f_max = frequencies.iter().fold(0.0f64, |a, &b| a.max(b));
        let nyquist = 0.5 / (decimation as f64 * g.dt);
        if f_max >= nyquist {
            ck.error(
                d,
                &format!("{key}.decimation"),
                format!(
                    "sampled every {decimation} steps of {} s the DFT aliases above {} Hz, below the monitor's highest frequency {} Hz: give at most {} (or leave it out)",
                    num(g.dt),
                    num(nyquist),
                    num(f_max),
                    ((0.5 / (f_max * g.dt)).ceil() as usize).saturating_sub(1).max(1)
                ),
            );
            return None;
        }
    }
    Some(Flux {
        name: m.name.get_ref().clone(),
        patches,
        frequencies,
        fields,
        far_field,
        decimation,
        mode: None,
        diffraction: None,
    })
}

/// Warn when an object of some material reaches outside a far-field box: the projection
/// radiates the box's surface currents into vacuum, so anything outside the box is ignored.
fn vacuum_outside(
    ck: &mut Checker,
    g: &Grid,
    b: &Spanned<BoxSpec>,
    key: &str,
    patches: &[Patch],
    objects: &[Object],
    unit_m: f64,
) {
    let lo = [0, 1, 2].map(|a| g.coordinate(a, patches[2 * a].index as f64));
    let hi = [0, 1, 2].map(|a| g.coordinate(a, patches[2 * a + 1].index as f64));
    let tol = 1e-9 * g.cell.iter().cloned().fold(0.0, f64::max);
    for o in objects.iter().filter(|o| o.material != 0) {
        let (olo, ohi) = o.bounds();
        if (0..3).any(|a| olo[a] < lo[a] - tol || ohi[a] > hi[a] + tol) {
            let c = o.center.map(|x| num(x / unit_m));
            ck.warn(b, &format!("{key}.box"), format!(
                "the far-field projection radiates the box's surface currents into vacuum, but the object centred at [{}, {}, {}] reaches outside the box: the pattern leaves it out (enclose it, or use a flux box for power only)",
                c[0], c[1], c[2]
            ));
        }
    }
}

/// Evenly spaced angles (degrees) of a far-field monitor's `theta` or `phi`, within `range`.
fn angles(
    ck: &mut Checker,
    spec: Option<&Spanned<AngleSpec>>,
    mon: &Spanned<MonitorSpec>,
    key: &str,
    name: &str,
    range: Option<(f64, f64)>,
) -> Option<Vec<f64>> {
    let Some(a) = spec else {
        let example = if name == "theta" {
            "theta = { min = 0.0, max = 180.0, count = 37 } (degrees from +z)"
        } else {
            "phi = { min = 0.0, max = 360.0, count = 73 } (degrees from +x)"
        };
        ck.error(mon, key, format!("a far_field monitor needs `{example}`"));
        return None;
    };
    let s = a.get_ref();
    let within = range.is_none_or(|(lo, hi)| s.min >= lo && s.max <= hi);
    if !(s.min.is_finite() && s.max.is_finite() && s.min <= s.max && within)
        || s.count < 1
        || s.count > 10_000
    {
        let bounds = match range {
            Some((lo, hi)) => format!("{} <= min <= max <= {}", num(lo), num(hi)),
            None => "min <= max".to_string(),
        };
        ck.error(
            a,
            &format!("{key}.{name}"),
            format!(
                "need {bounds} (degrees) and 1 <= count <= 10000, got min = {}, max = {}, count = {}",
                num(s.min),
                num(s.max),
                s.count
            ),
        );
        return None;
    }
    let n = s.count as usize;
    Some(
        (0..n)
            .map(|i| {
                if n == 1 {
                    s.min
                } else {
                    s.min + (s.max - s.min) * i as f64 / (n - 1) as f64
                }
            })
            .collect(),
    )
}

/// The six faces of a closed box, snapped to E node planes, in the order x_min, x_max, y_min,
/// y_max, z_min, z_max. The box must lie inside the domain with at least one cell between each
/// face and the domain's edge or the PML (the faces' H is averaged from the cells either side,
/// and a face in the PML would not see the scene's fields).
fn closed_box(
    b: &Spanned<BoxSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Option<Vec<Patch>> {
    let bs = b.get_ref();
    let (Some(center), Some(size)) = (vec3_plain(&bs.center), vec3_plain(&bs.size)) else {
        ck.error(
            b,
            &format!("{key}.box"),
            "expected `{ center = [x, y, z], size = [sx, sy, sz] }`",
        );
        return None;
    };
    if let Some(a) = (0..3).find(|&a| size[a] <= 0.0) {
        ck.error(
            b,
            &format!("{key}.box.size"),
            format!(
                "a closed box needs a positive size along every axis; size along {} is {}",
                Axis::ALL[a].name(),
                num(size[a])
            ),
        );
        return None;
    }
    let g = grid?;
    let mut lo = [0usize; 3];
    let mut hi = [0usize; 3];
    for a in 0..3 {
        let axis = Axis::ALL[a].name();
        let node = |x: f64| g.fractional_index(a, x * unit_m).round();
        let (i0, i1) = (
            node(center[a] - 0.5 * size[a]),
            node(center[a] + 0.5 * size[a]),
        );
        if i1 <= i0 {
            ck.error(
                b,
                &format!("{key}.box.size"),
                format!(
                    "the box is degenerate along {axis}: its size {} snaps to no cell of the grid (cell {}); make it at least one cell",
                    num(size[a]),
                    num(g.cell[a] / unit_m)
                ),
            );
            return None;
        }
        let (pl, ph) = faces.map_or((0, 0), |f| (f[a][0].pml_cells(), f[a][1].pml_cells()));
        let (min_node, max_node) = (pl + 1, g.shape[a].saturating_sub(ph + 1));
        if i0 < min_node as f64 || i1 > max_node as f64 {
            let (from, to) = (
                g.coordinate(a, min_node as f64),
                g.coordinate(a, max_node as f64),
            );
            let pml = if pl + ph > 0 {
                format!(" and its {pl} + {ph}-cell PML")
            } else {
                String::new()
            };
            ck.error(
                b,
                &format!("{key}.box"),
                format!(
                    "the box is not closed inside the domain along {axis}: its faces must lie between {} and {} (one cell inside the domain's edge{pml}), but they span [{}, {}]",
                    num(from / unit_m),
                    num(to / unit_m),
                    num(center[a] - 0.5 * size[a]),
                    num(center[a] + 0.5 * size[a])
                ),
            );
            return None;
        }
        lo[a] = i0 as usize;
        hi[a] = i1 as usize;
    }
    let mut patches = Vec::with_capacity(6);
    for a in 0..3 {
        let (b1, c1) = ((a + 1) % 3, (a + 2) % 3);
        let (p, q) = (b1.min(c1), b1.max(c1));
        for (index, sign) in [(lo[a], -1.0), (hi[a], 1.0)] {
            patches.push(Patch {
                axis: Axis::ALL[a],
                index,
                sign,
                start: [lo[p], lo[q]],
                count: [hi[p] - lo[p] + 1, hi[q] - lo[q] + 1],
                closed: true,
            });
        }
    }
    Some(patches)
}

/// A flux plane: one coordinate, snapped to the nearest E node plane, at least one cell inside
/// the domain; the whole plane is one patch.
fn flux_plane(
    plane: &Spanned<std::collections::BTreeMap<String, f64>>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Option<Patch> {
    let map = plane.get_ref();
    let (axis_name, value) = match map.iter().next() {
        Some(kv) if map.len() == 1 => kv,
        _ => {
            ck.error(
                plane,
                &format!("{key}.plane"),
                "a plane is one coordinate: `{ x = ... }`, `{ y = ... }` or `{ z = ... }`",
            );
            return None;
        }
    };
    let Some(a) = ["x", "y", "z"].iter().position(|s| s == axis_name) else {
        ck.error(
            plane,
            &format!("{key}.plane"),
            format!("`{axis_name}` is not an axis: use x, y or z"),
        );
        return None;
    };
    let g = grid?;
    let index = g.fractional_index(a, value * unit_m).round();
    if index < 1.0 || index > (g.shape[a] - 1) as f64 {
        ck.error(
            plane,
            &format!("{key}.plane.{axis_name}"),
            format!(
            "{axis_name} = {} must lie at least one cell inside the domain, which spans [{}, {}]",
            num(*value),
            num(g.origin[a] / unit_m),
            num((g.origin[a] + g.size()[a]) / unit_m)
        ),
        );
        return None;
    }
    if let Some(f) = faces {
        // Only along the plane's own axis: a plane always crosses the transverse PMLs.
        let (lo, hi) = (f[a][0].pml_cells(), f[a][1].pml_cells());
        if (lo > 0 && index < lo as f64) || (hi > 0 && index > (g.shape[a] - hi) as f64) {
            ck.warn(plane, &format!("{key}.plane.{axis_name}"), format!(
                "the flux plane {axis_name} = {} lies inside the PML along {axis_name} ({lo} + {hi} cells), where the fields are being absorbed: the flux there is not the scene's",
                num(*value)
            ));
        }
    }
    let (b, c) = ((a + 1) % 3, (a + 2) % 3);
    let (p, q) = (b.min(c), b.max(c));
    Some(Patch {
        axis: Axis::ALL[a],
        index: index as usize,
        sign: 1.0,
        start: [0, 0],
        count: [g.shape[p], g.shape[q]],
        closed: false,
    })
}

/// The evenly spaced frequencies of `f` (key `KEY.frequencies`), checked: 0 < min <= max,
/// 1 <= count <= 100000 and max below the time step's Nyquist frequency.
pub(super) fn frequency_list(
    f: &Spanned<FrequencySpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
) -> Option<Vec<f64>> {
    let s = f.get_ref();
    if !(s.min > 0.0 && s.max >= s.min && s.max.is_finite()) || s.count < 1 || s.count > 100_000 {
        ck.error(
            f,
            &format!("{key}.frequencies"),
            format!(
                "need 0 < min <= max and 1 <= count <= 100000, got min = {}, max = {}, count = {}",
                num(s.min),
                num(s.max),
                s.count
            ),
        );
        None
    } else if let Some(g) = grid.filter(|g| s.max > 0.5 / g.dt) {
        // Above 1 / (2 dt) the running DFT aliases: the spectrum would be wrong.
        ck.error(f, &format!("{key}.frequencies.max"), format!(
            "max = {} Hz is above the Nyquist frequency of the time step, 1 / (2 dt) = {} Hz: the DFT there aliases a lower frequency; lower max (the grid resolves far less anyway)",
            num(s.max), super::placement::num4(0.5 / g.dt)
        ));
        None
    } else {
        if s.count == 1 && s.max != s.min {
            ck.warn(
                f,
                &format!("{key}.frequencies.count"),
                format!(
                    "count = 1 records min = {} Hz only; max = {} Hz is ignored",
                    num(s.min),
                    num(s.max)
                ),
            );
        }
        let n = s.count as usize;
        Some(
            (0..n)
                .map(|i| {
                    if n == 1 {
                        s.min
                    } else {
                        s.min + (s.max - s.min) * i as f64 / (n - 1) as f64
                    }
                })
                .collect::<Vec<f64>>(),
        )
    }
}
