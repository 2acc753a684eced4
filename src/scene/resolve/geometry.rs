//! `[[geometry]]`: boxes, spheres and cylinders of the materials, in paint order.

use super::placement::{num, num4};
use super::shape_context::{material_id, Ctx};
use super::{as_f64, list, Checker};
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// The shapes a `[[geometry]]` entry may take, in the order of [`KEYS`].
const SHAPES: [&str; 7] = [
    "box", "sphere", "cylinder", "polygon", "gds", "mesh", "voxels",
];

/// The keys each shape takes besides `shape` (and `material`, which every shape but voxels
/// needs, and `center`, which the first three need).
const KEYS: [&[&str]; 7] = [
    &["size"],
    &["radius"],
    &["radius", "height", "axis"],
    &["vertices", "axis", "span", "sidewall_angle"],
    &[
        "file",
        "cell",
        "layer",
        "axis",
        "span",
        "sidewall_angle",
        "scale",
    ],
    &["file", "scale", "translate"],
    &["file", "dataset", "materials", "box"],
];

/// Where each optional key of entry `g` was written (its byte offset), by name.
fn given_keys(g: &GeometrySpec) -> Vec<(&'static str, usize)> {
    fn at<T>(v: &Option<Spanned<T>>) -> Option<usize> {
        v.as_ref().map(|v| v.span().start)
    }
    [
        ("material", at(&g.material)),
        ("center", at(&g.center)),
        ("size", at(&g.size)),
        ("radius", at(&g.radius)),
        ("height", at(&g.height)),
        ("axis", at(&g.axis)),
        ("vertices", at(&g.vertices)),
        ("span", at(&g.span)),
        ("sidewall_angle", at(&g.sidewall_angle)),
        ("file", at(&g.file)),
        ("cell", at(&g.cell)),
        ("layer", at(&g.layer)),
        ("scale", at(&g.scale)),
        ("translate", at(&g.translate)),
        ("dataset", at(&g.dataset)),
        ("materials", at(&g.materials)),
        ("box", at(&g.region)),
    ]
    .into_iter()
    .filter_map(|(k, a)| a.map(|a| (k, a)))
    .collect()
}

pub(super) fn geometry(
    scene: &SceneFile,
    ck: &mut Checker,
    table: &MaterialTable,
    dropped: &[String],
    unit_m: f64,
) -> Vec<Object> {
    let cx = Ctx {
        scene,
        table,
        dropped,
        unit_m,
    };
    let mut objects = Vec::new();
    // Half the domain's size along each axis (m), where it can be read: the domain is centred
    // on the origin.
    let size = scene.simulation.get_ref().size.get_ref();
    let half_domain = (size.len() == 3 && size.iter().all(|x| x.is_finite() && *x > 0.0))
        .then(|| [0, 1, 2].map(|a| 0.5 * size[a] * unit_m));
    for (n, g) in scene.geometry.iter() {
        let key = format!("geometry[{n}]");
        let g = g.get_ref();
        if g.element.is_some() {
            // A lumped element paints nothing: `super::lumped` places it on the grid.
            continue;
        }
        let Some(kind) = ck.one_of(&g.shape, &format!("{key}.shape"), &SHAPES) else {
            continue;
        };
        // A key of another shape is a mistake (a box given a radius is not a sphere): said,
        // as for sources, rather than ignored.
        for (name, at) in given_keys(g) {
            let takes = KEYS[kind].contains(&name)
                || (name == "material" && kind != 6)
                || (name == "center" && kind <= 2);
            if !takes {
                let center = if kind <= 2 { "`center` and " } else { "" };
                ck.error_at(
                    at,
                    &format!("{key}.{name}"),
                    format!(
                        "a {} takes {center}{}, not `{name}`",
                        SHAPES[kind],
                        list(KEYS[kind])
                    ),
                );
            }
        }
        let material = if kind == 6 {
            None
        } else {
            match &g.material {
                Some(m) => material_id(scene, ck, table, dropped, m, &format!("{key}.material")),
                None => {
                    ck.error(&g.shape, &key, "missing the required key `material`");
                    None
                }
            }
        };
        let made: Vec<Object> = match kind {
            0..=2 => primitive(ck, g, &key, kind, material, &cx)
                .map(|o| Object { geometry: n, ..o })
                .into_iter()
                .collect(),
            3 => super::import::polygon(ck, g, &key, &cx)
                .zip(material)
                .map(|(shape, material)| Object::at_bounds(shape, material, n))
                .into_iter()
                .collect(),
            4 => super::import::gds(ck, g, &key, &cx)
                .zip(material)
                .map(|(shape, material)| Object::at_bounds(shape, material, n))
                .into_iter()
                .collect(),
            5 => super::import::mesh(ck, g, &key, &cx)
                .zip(material)
                .map(|(shape, material)| Object::at_bounds(shape, material, n))
                .into_iter()
                .collect(),
            _ => super::import::voxels(ck, g, &key, &cx)
                .into_iter()
                .map(|(shape, material)| Object::at_bounds(shape, material, n))
                .collect(),
        };
        // An object wholly outside the domain changes nothing: most likely a position in the
        // wrong unit or a sign slip, so said rather than silently dropped.
        if let (Some(half), Some(first)) = (half_domain, made.first()) {
            let (mut lo, mut hi) = first.bounds();
            for o in &made[1..] {
                let (l, h) = o.bounds();
                for a in 0..3 {
                    lo[a] = lo[a].min(l[a]);
                    hi[a] = hi[a].max(h[a]);
                }
            }
            if let Some(a) = (0..3).find(|&a| hi[a] <= -half[a] || lo[a] >= half[a]) {
                let what = if kind <= 2 {
                    "center, size"
                } else {
                    "coordinates"
                };
                let (at, which) = match &g.center {
                    Some(c) => (c.span().start, "center"),
                    None => (g.shape.span().start, "shape"),
                };
                ck.warn_at(
                    at,
                    &format!("{key}.{which}"),
                    format!(
                        "the {} lies wholly outside the domain along {} ({} to {}, the domain {} to {}): it changes nothing; check its {what} and simulation.length_unit",
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
        objects.extend(made);
    }
    objects
}

/// A box, sphere or cylinder (`kind` 0, 1, 2) of `material`.
fn primitive(
    ck: &mut Checker,
    g: &GeometrySpec,
    key: &str,
    kind: usize,
    material: Option<u8>,
    cx: &Ctx,
) -> Option<Object> {
    let unit_m = cx.unit_m;
    let center = match &g.center {
        Some(c) => ck
            .vec3(c, &format!("{key}.center"))
            .map(|c| c.map(|x| x * unit_m)),
        None => {
            ck.error(&g.shape, key, "missing the required key `center`");
            None
        }
    };
    // A PEC may be drawn with no thickness: a sheet (one zero extent) or a line (two).
    let pec = material.is_some_and(|m| cx.table.materials[m as usize].pec);
    let shape = match kind {
        0 => match &g.size {
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
                ck.error(&g.shape, key, "a box needs `size = [sx, sy, sz]`");
                None
            }
        },
        1 => match &g.radius {
            Some(r) => ck
                .positive(r, &format!("{key}.radius"))
                .map(|r| Shape::Sphere { radius: r * unit_m }),
            None => {
                ck.error(&g.shape, key, "a sphere needs `radius`");
                None
            }
        },
        _ => {
            // A PEC cylinder of zero radius is a wire, of zero height a disc.
            let mut extent = |v: &Option<Spanned<f64>>, name: &str| match v {
                Some(v) if pec && *v.get_ref() == 0.0 => Some(0.0),
                Some(v) => ck.positive(v, &format!("{key}.{name}")),
                None => {
                    ck.error(&g.shape, key, format!("a cylinder needs `{name}`"));
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
    };
    Some(Object {
        shape: shape?,
        center: center?,
        material: material?,
        geometry: 0,
    })
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
        // Where the warnings point: the centre, or for shapes without one, the span or shape.
        let (where_at, where_key) = match (&entry.center, &entry.span) {
            (Some(c), _) => (c.span().start, "center"),
            (None, Some(s)) => (s.span().start, "span"),
            _ => (entry.shape.span().start, "shape"),
        };
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
                ck.warn_at(
                    where_at,
                    &format!("{key}.{where_key}"),
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
                ck.warn_at(
                    where_at,
                    &format!("{key}.{where_key}"),
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
        Shape::Box { .. } | Shape::Prism(_) | Shape::Mesh(_) | Shape::Voxels { .. } => false,
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
