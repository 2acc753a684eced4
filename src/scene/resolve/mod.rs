//! From the scene as written to the resolved [`Model`]: unit conversion, grid sizing and every
//! semantic check. All problems are collected before reporting.

mod boundaries;
mod monitors;
mod sources;

use super::diagnostics::{closest, line_col, Diagnostic, SceneError};
use super::schema::*;
use crate::model::*;
use toml::Spanned;

/// Grids larger than this are refused: beyond any machine we plan for, and almost always a unit slip.
pub const MAX_CELLS: u64 = 1_000_000_000_000;

/// The largest `simulation.courant` (a fraction of the 3D stability limit) a scene may ask for.
///
/// At exactly 1 the scheme is only marginally stable: the highest mode (the checkerboard of an
/// even grid) has a double eigenvalue -1, so in f64 it grows linearly, and in f32 the rounding
/// of dt, 1/d and the update coefficients (relative 1e-7) can put the effective Courant number
/// above 1, where it grows exponentially (an all-periodic f32 box went from 4e-3 to 1e14 in
/// 150,000 steps). 0.999 leaves a margin of 1e-3, four orders of magnitude above that rounding,
/// for a time step only 0.1 % shorter; tests/stability.rs runs 150,000 steps there.
pub const MAX_COURANT: f64 = 0.999;

/// Fewer cells than this per shortest wavelength gives large dispersion errors: warn.
const MIN_CELLS_PER_WAVELENGTH: f64 = 10.0;

struct Checker<'a> {
    text: &'a str,
    problems: Vec<Diagnostic>,
    warnings: Vec<String>,
    file: &'a str,
}

impl<'a> Checker<'a> {
    fn error<T>(&mut self, at: &Spanned<T>, key: &str, message: impl Into<String>) {
        self.error_at(at.span().start, key, message);
    }
    fn error_at(&mut self, offset: usize, key: &str, message: impl Into<String>) {
        let (line, column) = line_col(self.text, offset);
        self.problems.push(Diagnostic {
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        });
    }
    fn warn<T>(&mut self, at: &Spanned<T>, key: &str, message: impl Into<String>) {
        let (line, _) = line_col(self.text, at.span().start);
        self.warnings
            .push(format!("{}:{line}: `{key}`: {}", self.file, message.into()));
    }
    /// A `[x, y, z]` of finite numbers.
    fn vec3(&mut self, v: &Spanned<Vec<f64>>, key: &str) -> Option<[f64; 3]> {
        if v.get_ref().len() != 3 {
            self.error(
                v,
                key,
                format!("expected 3 numbers [x, y, z], got {}", v.get_ref().len()),
            );
            return None;
        }
        if v.get_ref().iter().any(|x| !x.is_finite()) {
            self.error(v, key, "values must be finite numbers");
            return None;
        }
        Some([v.get_ref()[0], v.get_ref()[1], v.get_ref()[2]])
    }
    fn positive(&mut self, v: &Spanned<f64>, key: &str) -> Option<f64> {
        let x = *v.get_ref();
        if x.is_finite() && x > 0.0 {
            Some(x)
        } else {
            self.error(v, key, format!("must be a positive number, got {x}"));
            None
        }
    }
    fn component(&mut self, v: &Spanned<String>, key: &str, allowed: &[&str]) -> Option<Component> {
        let s = v.get_ref().as_str();
        if allowed.contains(&s) {
            return Component::parse(s);
        }
        let hint = closest(s, allowed)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        self.error(
            v,
            key,
            format!(
                "unknown component `{s}`: allowed are {}{hint}",
                list(allowed)
            ),
        );
        None
    }
    fn one_of(&mut self, v: &Spanned<String>, key: &str, allowed: &[&str]) -> Option<usize> {
        let s = v.get_ref().as_str();
        if let Some(i) = allowed.iter().position(|a| *a == s) {
            return Some(i);
        }
        let hint = closest(s, allowed)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        self.error(
            v,
            key,
            format!(
                "`{s}` is not allowed here: use one of {}{hint}",
                list(allowed)
            ),
        );
        None
    }
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

const E_COMPONENTS: [&str; 3] = ["Ex", "Ey", "Ez"];
const ALL_COMPONENTS: [&str; 6] = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"];

/// Check a parsed scene and build its model. `text` and `file` are for messages.
pub fn resolve(
    scene: &SceneFile,
    text: &str,
    file: &str,
) -> Result<(Model, Vec<String>), SceneError> {
    let mut ck = Checker {
        text,
        problems: Vec::new(),
        warnings: Vec::new(),
        file,
    };
    let model = build(scene, text, &mut ck);
    if ck.problems.is_empty() {
        Ok((
            model.expect("a model is built whenever no problem was found"),
            ck.warnings,
        ))
    } else {
        ck.problems.sort_by_key(|p| (p.line, p.column));
        Err(SceneError::Invalid {
            file: file.to_string(),
            problems: ck.problems,
        })
    }
}

fn build(scene: &SceneFile, text: &str, ck: &mut Checker) -> Option<Model> {
    let sim = scene.simulation.get_ref();

    // Units.
    let unit_name = sim
        .length_unit
        .as_ref()
        .map_or("um".to_string(), |u| u.get_ref().clone());
    let unit = match sim.length_unit.as_ref() {
        None => Some(1e-6),
        Some(u) => ck
            .one_of(u, "simulation.length_unit", &UNITS.map(|u| u.0))
            .map(|i| UNITS[i].1),
    };
    let unit_m = unit.unwrap_or(1e-6);

    // Cell size: a number or three.
    let cell: Option<[f64; 3]> = match sim.cell_size.get_ref() {
        toml::Value::Float(_) | toml::Value::Integer(_) => {
            as_f64(sim.cell_size.get_ref()).map(|d| [d; 3])
        }
        toml::Value::Array(a) if a.len() == 3 => {
            let v: Vec<Option<f64>> = a.iter().map(as_f64).collect();
            if v.iter().all(Option::is_some) {
                Some([v[0].unwrap(), v[1].unwrap(), v[2].unwrap()])
            } else {
                None
            }
        }
        _ => None,
    };
    let cell = match cell {
        Some(c) if c.iter().all(|d| d.is_finite() && *d > 0.0) => Some(c.map(|d| d * unit_m)),
        Some(_) => {
            ck.error(
                &sim.cell_size,
                "simulation.cell_size",
                "cell sizes must be positive numbers",
            );
            None
        }
        None => {
            ck.error(
                &sim.cell_size,
                "simulation.cell_size",
                format!(
                    "expected a positive number or [dx, dy, dz], got {}",
                    sim.cell_size.get_ref()
                ),
            );
            None
        }
    };

    let size = ck.vec3(&sim.size, "simulation.size");
    if let Some(s) = size {
        if s.iter().any(|x| *x <= 0.0) {
            ck.error(
                &sim.size,
                "simulation.size",
                format!("every edge must be positive, got {s:?}"),
            );
        }
    }

    // Grid shape: round the size to whole cells, warn when that changes it.
    let mut shape = None;
    if let (Some(cell), Some(size)) = (cell, size) {
        if size.iter().all(|x| *x > 0.0) {
            let s_m = size.map(|x| x * unit_m);
            let n = [0, 1, 2].map(|a| (s_m[a] / cell[a]).round().max(1.0));
            let cells: f64 = n.iter().product();
            if cells > MAX_CELLS as f64 {
                ck.error(
                    &sim.size,
                    "simulation.size",
                    format!(
                        "the grid would have {cells:.3e} cells ({} x {} x {}), more than the limit of 1e12: check length_unit and cell_size",
                        n[0], n[1], n[2]
                    ),
                );
            } else {
                for a in 0..3 {
                    let rel = (n[a] * cell[a] - s_m[a]).abs() / s_m[a];
                    if rel > 1e-6 {
                        ck.warn(
                            &sim.size,
                            "simulation.size",
                            format!(
                                "{} size {} is not a whole number of cells; rounded to {} cells = {}",
                                Axis::ALL[a].name(),
                                size[a],
                                n[a],
                                n[a] * cell[a] / unit_m
                            ),
                        );
                    }
                }
                shape = Some(n.map(|x| x as usize));
            }
        }
    }

    // Time step.
    let courant = match &sim.courant {
        None => Some(0.99),
        Some(c) => {
            let x = *c.get_ref();
            if x > 0.0 && x <= MAX_COURANT {
                Some(x)
            } else {
                let why = if (MAX_COURANT..=1.0).contains(&x) {
                    "; at 1 the scheme is only marginally stable and rounding makes long runs grow without bound"
                } else {
                    ""
                };
                ck.error(
                    c,
                    "simulation.courant",
                    format!("must be in (0, {MAX_COURANT}] (a fraction of the 3D stability limit), got {x}{why}"),
                );
                None
            }
        }
    };
    let dt = match (cell, courant) {
        (Some(c), Some(f)) => Some(f * Grid::courant_limit(c)),
        _ => None,
    };
    let steps = match (&sim.steps, &sim.duration) {
        (Some(s), None) => {
            if *s.get_ref() > 0 {
                Some(*s.get_ref() as usize)
            } else {
                ck.error(
                    s,
                    "simulation.steps",
                    format!("must be a positive whole number, got {}", s.get_ref()),
                );
                None
            }
        }
        (None, Some(d)) => ck
            .positive(d, "simulation.duration")
            .and_then(|d| dt.map(|dt| (d / dt).ceil() as usize)),
        (Some(s), Some(_)) => {
            ck.error(
                s,
                "simulation.steps",
                "give either `steps` or `duration`, not both",
            );
            None
        }
        (None, None) => {
            ck.error(
                &scene.simulation,
                "simulation",
                "missing the run length: add `steps = N` or `duration = SECONDS`",
            );
            None
        }
    };
    let precision = match &sim.precision {
        None => Some(Precision::F32),
        Some(p) => ck
            .one_of(p, "simulation.precision", &["f32", "f64"])
            .map(|i| [Precision::F32, Precision::F64][i]),
    };
    let name = match &sim.name {
        None => "yee".to_string(),
        Some(n) => {
            let s = n.get_ref();
            if s.is_empty() || s.contains(['/', '\\']) {
                ck.error(
                    n,
                    "simulation.name",
                    "must be a non-empty name without path separators",
                );
            }
            s.clone()
        }
    };

    // Boundaries.
    let faces = boundaries::boundaries(scene, ck, shape);

    // Materials.
    let mut table = MaterialTable::vacuum();
    table.push(Material {
        name: "pec".into(),
        epsilon: 1.0,
        conductivity: 0.0,
        pec: true,
    });
    for (key, spec) in &scene.materials {
        let name = key.get_ref();
        let path = format!("materials.{name}");
        if name == "vacuum" || name == "pec" {
            ck.error(
                key,
                &path,
                format!("`{name}` is built in and cannot be redefined; choose another name"),
            );
            continue;
        }
        let m = spec.get_ref();
        let pec = m.pec.as_ref().is_some_and(|p| *p.get_ref());
        if pec && (m.epsilon.is_some() || m.conductivity.is_some()) {
            ck.error(
                spec,
                &path,
                "a PEC material takes no epsilon or conductivity",
            );
        }
        let epsilon = match &m.epsilon {
            Some(e) => ck.positive(e, &format!("{path}.epsilon")).unwrap_or(1.0),
            None => 1.0,
        };
        let conductivity = match &m.conductivity {
            Some(s) if *s.get_ref() >= 0.0 && s.get_ref().is_finite() => *s.get_ref(),
            Some(s) => {
                ck.error(
                    s,
                    &format!("{path}.conductivity"),
                    format!("must be >= 0 S/m, got {}", s.get_ref()),
                );
                0.0
            }
            None => 0.0,
        };
        if !pec && m.epsilon.is_none() && m.conductivity.is_none() {
            ck.error(
                spec,
                &path,
                "a material needs `epsilon`, `conductivity` or `pec = true`",
            );
        }
        if table.materials.len() >= MAX_MATERIALS {
            ck.error(
                key,
                &path,
                format!(
                    "too many materials: at most {} (including vacuum and pec)",
                    MAX_MATERIALS
                ),
            );
            continue;
        }
        if let (Some(c), Some(e)) = (courant, &m.epsilon) {
            // The stability limit scales with sqrt(epsilon): keep the same margin below it.
            let limit = MAX_COURANT * epsilon.sqrt();
            if epsilon < 1.0 && c > limit {
                ck.warn(e, &format!("{path}.epsilon"), format!(
                    "epsilon {epsilon} < 1 makes waves faster than light in vacuum: with courant = {c} the run is unstable; use courant <= {}",
                    (limit * 1000.0).floor() / 1000.0
                ));
            }
        }
        table.push(Material {
            name: name.clone(),
            epsilon,
            conductivity,
            pec,
        });
    }

    // Geometry.
    let mut objects = Vec::new();
    for (n, g) in scene.geometry.iter().enumerate() {
        let key = format!("geometry[{n}]");
        let g = g.get_ref();
        let material = match table.id(g.material.get_ref()) {
            Some(id) => Some(id),
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
            objects.push(Object {
                shape,
                center,
                material,
            });
        }
    }

    let grid = match (shape, cell, dt, steps) {
        (Some(shape), Some(cell), Some(dt), Some(steps)) => {
            let origin = [0, 1, 2].map(|a| -0.5 * shape[a] as f64 * cell[a]);
            Some(Grid {
                shape,
                cell,
                origin,
                dt,
                steps,
            })
        }
        _ => None,
    };

    // Sources and monitors need the grid.
    let sources = sources::sources(
        scene,
        ck,
        grid.as_ref(),
        unit_m,
        &table,
        faces.as_ref(),
        &objects,
    );
    let (probes, snapshots, fluxes) =
        monitors::monitors(scene, ck, grid.as_ref(), unit_m, faces.as_ref());

    let grid = grid?;
    let faces = faces?;
    let precision = precision?;
    let sources = sources?;
    let _ = unit?;
    let boundaries = Boundaries::new(faces, grid.shape, grid.cell, grid.dt);
    let subpixel = sim.subpixel.as_ref().is_none_or(|s| *s.get_ref());
    let smoothing = if subpixel && !objects.is_empty() {
        let used: Vec<u8> = std::iter::once(0)
            .chain(objects.iter().map(|o| o.material))
            .collect();
        let s = Smoothing::build(&mut table, &used);
        if s.is_none()
            && used
                .iter()
                .any(|&m| m != 0 && !table.materials[m as usize].pec)
        {
            ck.warnings.push(format!(
                "{}: too many materials for subpixel smoothing in the 256-entry material table; interfaces are staircased",
                ck.file
            ));
        }
        s
    } else {
        None
    };
    Some(Model {
        name,
        scene_text: text.to_string(),
        length_unit: unit_name,
        grid,
        precision,
        materials: table,
        objects,
        smoothing,
        boundaries,
        sources,
        probes,
        snapshots,
        fluxes,
    })
}

/// The length units a scene may use, with their size in metres.
const UNITS: [(&str, f64); 4] = [("m", 1.0), ("mm", 1e-3), ("um", 1e-6), ("nm", 1e-9)];

/// The name of the length unit of `unit_m` metres.
fn unit_label(unit_m: f64) -> &'static str {
    UNITS.iter().find(|u| u.1 == unit_m).map_or("um", |u| u.0)
}

fn as_f64(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Float(f) => Some(*f),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
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
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            (v.len() == 3 && norm > 0.0 && norm.is_finite())
                .then(|| [v[0] / norm, v[1] / norm, v[2] / norm])
        }
        _ => None,
    }
}

fn inside(grid: &Grid, p: [f64; 3]) -> bool {
    let size = grid.size();
    (0..3).all(|a| {
        p[a] >= grid.origin[a] - 1e-9 * size[a] && p[a] <= grid.origin[a] + size[a] * (1.0 + 1e-9)
    })
}

fn position3(v: &toml::Value) -> Option<[f64; 3]> {
    match v {
        toml::Value::Array(a) if a.len() == 3 => {
            let v: Vec<f64> = a.iter().filter_map(as_f64).collect();
            (v.len() == 3 && v.iter().all(|x| x.is_finite())).then(|| [v[0], v[1], v[2]])
        }
        _ => None,
    }
}

fn outside_message(g: &Grid, p: [f64; 3], unit_m: f64) -> String {
    let size = g.size();
    let span: Vec<String> = (0..3)
        .map(|a| {
            format!(
                "{} in [{}, {}]",
                Axis::ALL[a].name(),
                g.origin[a] / unit_m,
                (g.origin[a] + size[a]) / unit_m
            )
        })
        .collect();
    format!(
        "position [{}, {}, {}] lies outside the domain ({})",
        p[0] / unit_m,
        p[1] / unit_m,
        p[2] / unit_m,
        span.join(", ")
    )
}

fn vec3_plain(v: &[f64]) -> Option<[f64; 3]> {
    (v.len() == 3 && v.iter().all(|x| x.is_finite())).then(|| [v[0], v[1], v[2]])
}
