//! `[[monitor]]`: probes, snapshots and flux planes.

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
) -> (Vec<Probe>, Vec<Snapshot>, Vec<Flux>) {
    let mut probes = Vec::new();
    let mut snaps = Vec::new();
    let mut fluxes = Vec::new();
    let mut names = HashSet::new();
    for (n, mon) in scene.monitor.iter().enumerate() {
        let key = format!("monitor[{n}]");
        let m = mon.get_ref();
        let name = m.name.get_ref().clone();
        if name.is_empty() || name.contains('/') || name == "." {
            ck.error(
                &m.name,
                &format!("{key}.name"),
                "must be a non-empty name without `/`",
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
            &["probe", "snapshot", "flux"],
        ) else {
            continue;
        };
        if kind == 2 {
            if let Some(f) = flux(m, mon, &key, ck, grid, unit_m) {
                fluxes.push(f);
            }
            continue;
        }
        if m.frequencies.is_some() || m.fields.is_some() {
            ck.error(
                mon,
                &format!("{key}.frequencies"),
                "`frequencies` and `fields` belong to flux monitors",
            );
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
                .map(|p| p.map(|x| x * unit_m))
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
            let interpolate = m.interpolate.as_ref().is_none_or(|i| *i.get_ref());
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
                            "{axis_name} = {value} lies outside the domain, which spans [{}, {}]",
                            g.origin[a] / unit_m, (g.origin[a] + size[a]) / unit_m
                        ),
                        );
                        continue;
                    }
                    comps
                        .iter()
                        .map(|&comp| {
                            let mut p = [0.0; 3];
                            p[a] = c;
                            let idx = g.nearest_index(comp, p)[a];
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

/// A flux monitor: a plane with one coordinate and a frequency list.
fn flux(
    m: &MonitorSpec,
    mon: &Spanned<MonitorSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
) -> Option<Flux> {
    for (field, present) in [
        ("components", m.components.is_some()),
        ("box", m.region.is_some()),
        ("every", m.every.is_some()),
        ("stride", m.stride.is_some()),
        ("position", m.position.is_some()),
        ("interpolate", m.interpolate.is_some()),
    ] {
        if present {
            ck.error(
                mon,
                &format!("{key}.{field}"),
                format!("a flux monitor takes `plane` and `frequencies`; `{field}` does not apply"),
            );
        }
    }
    let frequencies = match &m.frequencies {
        None => {
            ck.error(
                mon,
                key,
                "a flux monitor needs `frequencies = { min = ..., max = ..., count = ... }` (Hz)",
            );
            None
        }
        Some(f) => {
            let s = f.get_ref();
            if !(s.min > 0.0 && s.max >= s.min && s.max.is_finite())
                || s.count < 1
                || s.count > 100_000
            {
                ck.error(f, &format!("{key}.frequencies"), format!(
                    "need 0 < min <= max and 1 <= count <= 100000, got min = {}, max = {}, count = {}",
                    s.min, s.max, s.count
                ));
                None
            } else {
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
    };
    let Some(plane) = &m.plane else {
        ck.error(
            mon,
            key,
            "a flux monitor needs `plane = { x = ... }` (or y, z)",
        );
        return None;
    };
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
    let index = ((value * unit_m - g.origin[a]) / g.cell[a]).round();
    if index < 1.0 || index > (g.shape[a] - 1) as f64 {
        ck.error(plane, &format!("{key}.plane.{axis_name}"), format!(
            "{axis_name} = {value} must lie at least one cell inside the domain, which spans [{}, {}]",
            g.origin[a] / unit_m,
            (g.origin[a] + g.size()[a]) / unit_m
        ));
        return None;
    }
    Some(Flux {
        name: m.name.get_ref().clone(),
        axis: Axis::ALL[a],
        index: index as usize,
        frequencies: frequencies?,
        fields: m.fields.as_ref().is_some_and(|f| *f.get_ref()),
    })
}
