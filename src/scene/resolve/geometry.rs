//! `[[geometry]]`: boxes, spheres and cylinders of the materials, in paint order.

use super::placement::{num, num4};
use super::{as_f64, list, Checker};
use crate::model::*;
use crate::scene::diagnostics::closest;
use crate::scene::schema::*;
use toml::Spanned;

pub(super) fn geometry(
    scene: &SceneFile,
    ck: &mut Checker,
    table: &MaterialTable,
    dropped: &[String],
    unit_m: f64,
) -> Vec<Object> {
    let mut objects = Vec::new();
    // Half the domain's size along each axis (m), where it can be read: the domain is centred
    // on the origin.
    let size = scene.simulation.get_ref().size.get_ref();
    let half_domain = (size.len() == 3 && size.iter().all(|x| x.is_finite() && *x > 0.0))
        .then(|| [0, 1, 2].map(|a| 0.5 * size[a] * unit_m));
    for (n, g) in scene.geometry.iter() {
        let key = format!("geometry[{n}]");
        let g = g.get_ref();
        let material = match table.id(g.material.get_ref()) {
            Some(id) => Some(id),
            // Defined, but not readable or not kept: reported there.
            None if scene.unread_materials.contains(g.material.get_ref())
                || dropped.contains(g.material.get_ref()) =>
            {
                None
            }
            None => {
                let names: Vec<&str> = table.materials.iter().map(|m| m.name.as_str()).collect();
                let hint = closest(g.material.get_ref(), &names)
                    .map(|c| format!("; did you mean `{c}`?"))
                    .unwrap_or_default();
                ck.error(
                    &g.material,
                    &format!("{key}.material"),
                    format!(
                        "unknown material `{}`: defined are {}{hint}",
                        g.material.get_ref(),
                        list(&names)
                    ),
                );
                None
            }
        };
        let center = ck
            .vec3(&g.center, &format!("{key}.center"))
            .map(|c| c.map(|x| x * unit_m));
        let shape_kind = ck.one_of(
            &g.shape,
            &format!("{key}.shape"),
            &["box", "sphere", "cylinder"],
        );
        // A key of another shape is a mistake (a box given a radius is not a sphere): said,
        // as for sources, rather than ignored.
        if let Some(kind) = shape_kind {
            let takes: [&[&str]; 3] = [&["size"], &["radius"], &["radius", "height", "axis"]];
            let given = [
                ("size", g.size.as_ref().map(|v| v.span().start)),
                ("radius", g.radius.as_ref().map(|v| v.span().start)),
                ("height", g.height.as_ref().map(|v| v.span().start)),
                ("axis", g.axis.as_ref().map(|v| v.span().start)),
            ];
            for (name, at) in given {
                if let Some(at) = at.filter(|_| !takes[kind].contains(&name)) {
                    ck.error_at(
                        at,
                        &format!("{key}.{name}"),
                        format!(
                            "a {} takes `center` and {}, not `{name}`",
                            ["box", "sphere", "cylinder"][kind],
                            list(takes[kind])
                        ),
                    );
                }
            }
        }
        // A PEC may be drawn with no thickness: a sheet (one zero extent) or a line (two).
        let pec = material.is_some_and(|m| table.materials[m as usize].pec);
        let shape = match shape_kind {
            Some(0) => match &g.size {
                Some(s) => ck.vec3(s, &format!("{key}.size")).and_then(|s| {
                    let zero = s.iter().filter(|x| **x == 0.0).count();
                    let problem = if s.iter().any(|x| *x < 0.0) {
                        Some("box edges must be positive (zero is allowed for a PEC sheet or line)")
                    } else if zero == 3 {
                        Some("a box needs at least one edge longer than zero")
                    } else if zero > 0 && !pec && material.is_some() {
                        Some("a box with a zero edge is a sheet or a line, and only a PEC material (`pec = true`) can be one: give it a thickness")
                    } else {
                        None
                    };
                    match problem {
                        None => Some(Shape::Box {
                            size: s.map(|x| x * unit_m),
                        }),
                        Some(message) => {
                            ck.error(g.size.as_ref().unwrap(), &format!("{key}.size"), message);
                            None
                        }
                    }
                }),
                None => {
                    ck.error(&g.shape, &key, "a box needs `size = [sx, sy, sz]`");
                    None
                }
            },
            Some(1) => match &g.radius {
                Some(r) => ck
                    .positive(r, &format!("{key}.radius"))
                    .map(|r| Shape::Sphere { radius: r * unit_m }),
                None => {
                    ck.error(&g.shape, &key, "a sphere needs `radius`");
                    None
                }
            },
            Some(2) => {
                // A PEC cylinder of zero radius is a wire, of zero height a disc.
                let mut extent = |v: &Option<Spanned<f64>>, name: &str| match v {
                    Some(v) if pec && *v.get_ref() == 0.0 => Some(0.0),
                    Some(v) => ck.positive(v, &format!("{key}.{name}")),
                    None => {
                        ck.error(&g.shape, &key, format!("a cylinder needs `{name}`"));
                        None
                    }
                };
                let radius = extent(&g.radius, "radius");
                let height = extent(&g.height, "height");
                if radius == Some(0.0) && height == Some(0.0) {
                    ck.error(
                        g.radius.as_ref().unwrap(),
                        &format!("{key}.radius"),
                        "a cylinder needs a radius or a height longer than zero",
                    );
                }
                let axis = match &g.axis {
                    None => Some([0.0, 0.0, 1.0]),
                    Some(a) => cylinder_axis(a.get_ref()).or_else(|| {
                        ck.error(a, &format!("{key}.axis"), format!("expected \"x\", \"y\", \"z\" or a non-zero vector [ax, ay, az], got {}", a.get_ref()));
                        None
                    }),
                };
                match (radius, height, axis) {
                    (Some(r), Some(h), Some(a)) => Some(Shape::Cylinder {
                        radius: r * unit_m,
                        height: h * unit_m,
                        axis: a,
                    }),
                    _ => None,
                }
            }
            _ => None,
        };
        if let (Some(material), Some(center), Some(shape)) = (material, center, shape) {
            let object = Object {
                shape,
                center,
                material,
                geometry: n,
            };
            // An object wholly outside the domain changes nothing: most likely a position in
            // the wrong unit or a sign slip, so said rather than silently dropped.
            if let Some(half) = half_domain {
                let (lo, hi) = object.bounds();
                if let Some(a) = (0..3).find(|&a| hi[a] <= -half[a] || lo[a] >= half[a]) {
                    ck.warn(
                        &g.center,
                        &format!("{key}.center"),
                        format!(
                            "the {} lies wholly outside the domain along {} ({} to {}, the domain {} to {}): it changes nothing; check its center, size and simulation.length_unit",
                            g.shape.get_ref(),
                            crate::model::Axis::ALL[a].name(),
                            super::placement::num(lo[a] / unit_m),
                            super::placement::num(hi[a] / unit_m),
                            super::placement::num(-half[a] / unit_m),
                            super::placement::num(half[a] / unit_m)
                        ),
                    );
                }
            }
            objects.push(object);
        }
    }
    objects
}

/// The objects as the grid holds them: each PEC object thinner than a cell put on the grid
/// ([`place_pec`]), with a warning where it moved by more than rounding or became a staircase;
/// and a warning for every object that holds or paints no E component, so that nothing
/// vanishes silently.
pub(super) fn on_grid(
    scene: &SceneFile,
    ck: &mut Checker,
    g: &Grid,
    faces: &[[BoundaryKind; 2]; 3],
    objects: Vec<Object>,
    table: &MaterialTable,
    (unit_m, subpixel): (f64, bool),
) -> Vec<Object> {
    let periodic = [0, 1, 2].map(|a| faces[a][0] == BoundaryKind::Periodic);
    let unit = super::unit_label(unit_m);
    let length = |x: f64| format!("{} {unit}", num(x / unit_m));
    let mut placed = Vec::with_capacity(objects.len());
    for object in objects {
        let n = object.geometry;
        let Some((_, entry)) = scene.geometry.iter().find(|(i, _)| *i == n) else {
            placed.push(object);
            continue;
        };
        let entry = entry.get_ref();
        let key = format!("geometry[{n}]");
        let material = &table.materials[object.material as usize];
        let what = format!("the PEC {}", entry.shape.get_ref());
        let (pieces, how) = if material.pec {
            place_pec(g, &object, periodic)
        } else {
            (vec![object.clone()], Placed::AsDrawn)
        };
        match how {
            Placed::OnGrid { thin, moves } if !moves.is_empty() => {
                let axes: Vec<&str> = thin.iter().map(|&a| Axis::ALL[a].name()).collect();
                let held = if thin.len() == 1 {
                    format!(
                        "a sheet on the grid plane {} = {}",
                        axes[0],
                        length(moves[0].to)
                    )
                } else {
                    "a line on the grid edge nearest to it".to_string()
                };
                let moved: Vec<String> = moves
                    .iter()
                    .map(|m| {
                        format!(
                            "{} from {} to {} ({} cells)",
                            Axis::ALL[m.axis].name(),
                            num(m.from / unit_m),
                            length(m.to),
                            num4(m.cells)
                        )
                    })
                    .collect();
                ck.warn(
                    &entry.center,
                    &format!("{key}.center"),
                    format!(
                        "{what} is thinner than a cell along {}, so it is held as {held}: moved {}",
                        axes.join(" and "),
                        moved.join(", ")
                    ),
                );
            }
            Placed::Wire { edges, ends } => {
                let point = |p: [f64; 3]| {
                    format!(
                        "({}, {}, {})",
                        num(p[0] / unit_m),
                        num(p[1] / unit_m),
                        num(p[2] / unit_m)
                    )
                };
                ck.warn(
                    &entry.center,
                    &format!("{key}.center"),
                    format!(
                        "{what} is thinner than a cell and slanted, so it is held on the {edges} grid edges nearest to its axis, a staircase from {} to {} {unit}",
                        point(ends[0]),
                        point(ends[1])
                    ),
                );
            }
            _ => {}
        }
        if let Some(why) = holds_nothing(g, &pieces, material, (entry.shape.get_ref(), subpixel)) {
            ck.warn(&entry.shape, &key, why);
        }
        placed.extend(pieces);
    }
    placed
}

/// Why an object (as placed: one or more pieces) has no effect on the grid, if it has none:
/// it holds (PEC) or paints no E component, and no smoothing gives it a share of a cell.
fn holds_nothing(
    g: &Grid,
    pieces: &[Object],
    material: &Material,
    (shape, subpixel): (&str, bool),
) -> Option<String> {
    const COUNT_LIMIT: u64 = 50_000_000;
    // A sphere or cylinder at least two of the largest cells across every way holds a cube of
    // a cell or more, and so a Yee point of every component: it cannot vanish, and is not
    // counted (a plan answers in well under a second); a box is counted axis by axis at once.
    if pieces.iter().any(|o| too_big_to_vanish(g, o)) {
        return None;
    }
    let held = e_points_inside(g, &pieces.iter().collect::<Vec<_>>(), COUNT_LIMIT);
    // Uncounted (a large object) or holding some: it is there.
    if held != Some(0) {
        return None;
    }
    // Wholly outside the domain: said already.
    let size = g.size();
    let outside = pieces.iter().all(|o| {
        let (lo, hi) = o.bounds();
        (0..3).any(|a| hi[a] <= g.origin[a] || lo[a] >= g.origin[a] + size[a])
    });
    if outside {
        return None;
    }
    let refine =
        "or refine the grid around it (a [[refine]] box with cells smaller than the object)";
    if material.pec {
        Some(format!(
            "the PEC {} holds no E component: it is smaller than a cell along every axis and contains no grid edge's midpoint, so it has no effect on this grid; make it larger, {refine}",
            shape
        ))
    } else if material.is_dispersive() {
        Some(format!(
            "the {} of dispersive material `{}` paints no E component: it is thinner than a cell and lies between grid planes, and dispersive materials are not smoothed, so it has no effect on this grid; move it onto a grid plane, {refine}",
            shape,
            material.name
        ))
    } else if !subpixel {
        Some(format!(
            "the {} of `{}` paints no E component: it is thinner than a cell and lies between grid planes, and smoothing is off (simulation.subpixel = false), so it has no effect; turn smoothing on, {refine}",
            shape,
            material.name
        ))
    } else {
        None
    }
}

/// Whether round object `o` is at least two of the grid's largest cells across in every
/// direction (diameter and, for a cylinder, height), so that it contains a Yee point of each
/// E component whatever its position.
fn too_big_to_vanish(g: &Grid, o: &Object) -> bool {
    let largest = g.cell.iter().copied().fold(0.0, f64::max);
    match o.shape {
        Shape::Box { .. } => false,
        Shape::Sphere { radius } => radius >= largest,
        Shape::Cylinder { radius, height, .. } => radius >= largest && height >= 2.0 * largest,
    }
}

fn cylinder_axis(v: &toml::Value) -> Option<[f64; 3]> {
    match v {
        toml::Value::String(s) => match s.as_str() {
            "x" => Some([1.0, 0.0, 0.0]),
            "y" => Some([0.0, 1.0, 0.0]),
            "z" => Some([0.0, 0.0, 1.0]),
            _ => None,
        },
        toml::Value::Array(a) if a.len() == 3 => {
            let v: Vec<f64> = a.iter().filter_map(as_f64).collect();
            (v.len() == 3)
                .then(|| super::unit_vector([v[0], v[1], v[2]]))
                .flatten()
        }
        _ => None,
    }
}
