//! `[[geometry]]`: boxes, spheres and cylinders of the materials, in paint order.

use super::{as_f64, list, Checker};
use crate::model::*;
use crate::scene::diagnostics::closest;
use crate::scene::schema::*;

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
        let shape = match shape_kind {
            Some(0) => match &g.size {
                Some(s) => ck.vec3(s, &format!("{key}.size")).and_then(|s| {
                    if s.iter().all(|x| *x > 0.0) {
                        Some(Shape::Box {
                            size: s.map(|x| x * unit_m),
                        })
                    } else {
                        ck.error(
                            g.size.as_ref().unwrap(),
                            &format!("{key}.size"),
                            "box edges must be positive",
                        );
                        None
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
                let radius = match &g.radius {
                    Some(r) => ck.positive(r, &format!("{key}.radius")),
                    None => {
                        ck.error(&g.shape, &key, "a cylinder needs `radius`");
                        None
                    }
                };
                let height = match &g.height {
                    Some(h) => ck.positive(h, &format!("{key}.height")),
                    None => {
                        ck.error(&g.shape, &key, "a cylinder needs `height`");
                        None
                    }
                };
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
