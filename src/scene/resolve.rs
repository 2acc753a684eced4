//! From the scene as written to the resolved [`Model`]: unit conversion, grid sizing and every
//! semantic check. All problems are collected before reporting.

use super::diagnostics::{closest, line_col, Diagnostic, SceneError};
use super::schema::*;
use crate::model::*;
use std::collections::HashSet;
use toml::Spanned;

/// Grids larger than this are refused: beyond any machine we plan for, and almost always a unit slip.
pub const MAX_CELLS: u64 = 1_000_000_000_000;

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
        self.problems.push(Diagnostic { line, column, key: key.to_string(), message: message.into() });
    }
    fn warn<T>(&mut self, at: &Spanned<T>, key: &str, message: impl Into<String>) {
        let (line, _) = line_col(self.text, at.span().start);
        self.warnings.push(format!("{}:{line}: `{key}`: {}", self.file, message.into()));
    }
    /// A `[x, y, z]` of finite numbers.
    fn vec3(&mut self, v: &Spanned<Vec<f64>>, key: &str) -> Option<[f64; 3]> {
        if v.get_ref().len() != 3 {
            self.error(v, key, format!("expected 3 numbers [x, y, z], got {}", v.get_ref().len()));
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
        let hint = closest(s, allowed).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
        self.error(v, key, format!("unknown component `{s}`: allowed are {}{hint}", list(allowed)));
        None
    }
    fn one_of(&mut self, v: &Spanned<String>, key: &str, allowed: &[&str]) -> Option<usize> {
        let s = v.get_ref().as_str();
        if let Some(i) = allowed.iter().position(|a| *a == s) {
            return Some(i);
        }
        let hint = closest(s, allowed).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
        self.error(v, key, format!("`{s}` is not allowed here: use one of {}{hint}", list(allowed)));
        None
    }
}

fn list(items: &[&str]) -> String {
    items.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
}

const E_COMPONENTS: [&str; 3] = ["Ex", "Ey", "Ez"];
const ALL_COMPONENTS: [&str; 6] = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"];

/// Check a parsed scene and build its model. `text` and `file` are for messages.
pub fn resolve(scene: &SceneFile, text: &str, file: &str) -> Result<(Model, Vec<String>), SceneError> {
    let mut ck = Checker { text, problems: Vec::new(), warnings: Vec::new(), file };
    let model = build(scene, text, &mut ck);
    if ck.problems.is_empty() {
        Ok((model.expect("a model is built whenever no problem was found"), ck.warnings))
    } else {
        ck.problems.sort_by_key(|p| (p.line, p.column));
        Err(SceneError::Invalid { file: file.to_string(), problems: ck.problems })
    }
}

fn build(scene: &SceneFile, text: &str, ck: &mut Checker) -> Option<Model> {
    let sim = scene.simulation.get_ref();

    // Units.
    let unit_name = sim.length_unit.as_ref().map_or("um".to_string(), |u| u.get_ref().clone());
    let unit = match sim.length_unit.as_ref() {
        None => Some(1e-6),
        Some(u) => ck.one_of(u, "simulation.length_unit", &["m", "mm", "um", "nm"]).map(|i| [1.0, 1e-3, 1e-6, 1e-9][i]),
    };
    let unit_m = unit.unwrap_or(1e-6);

    // Cell size: a number or three.
    let cell: Option<[f64; 3]> = match sim.cell_size.get_ref() {
        toml::Value::Float(_) | toml::Value::Integer(_) => as_f64(sim.cell_size.get_ref()).map(|d| [d; 3]),
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
            ck.error(&sim.cell_size, "simulation.cell_size", "cell sizes must be positive numbers");
            None
        }
        None => {
            ck.error(
                &sim.cell_size,
                "simulation.cell_size",
                format!("expected a positive number or [dx, dy, dz], got {}", sim.cell_size.get_ref()),
            );
            None
        }
    };

    let size = ck.vec3(&sim.size, "simulation.size");
    if let Some(s) = size {
        if s.iter().any(|x| *x <= 0.0) {
            ck.error(&sim.size, "simulation.size", format!("every edge must be positive, got {s:?}"));
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
            if x > 0.0 && x <= 1.0 {
                Some(x)
            } else {
                ck.error(c, "simulation.courant", format!("must be in (0, 1] (a fraction of the 3D stability limit), got {x}"));
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
                ck.error(s, "simulation.steps", format!("must be a positive whole number, got {}", s.get_ref()));
                None
            }
        }
        (None, Some(d)) => ck.positive(d, "simulation.duration").and_then(|d| dt.map(|dt| (d / dt).ceil() as usize)),
        (Some(s), Some(_)) => {
            ck.error(s, "simulation.steps", "give either `steps` or `duration`, not both");
            None
        }
        (None, None) => {
            ck.error(&scene.simulation, "simulation", "missing the run length: add `steps = N` or `duration = SECONDS`");
            None
        }
    };
    let precision = match &sim.precision {
        None => Some(Precision::F32),
        Some(p) => ck.one_of(p, "simulation.precision", &["f32", "f64"]).map(|i| [Precision::F32, Precision::F64][i]),
    };
    let name = match &sim.name {
        None => "yee".to_string(),
        Some(n) => {
            let s = n.get_ref();
            if s.is_empty() || s.contains(['/', '\\']) {
                ck.error(n, "simulation.name", "must be a non-empty name without path separators");
            }
            s.clone()
        }
    };

    // Boundaries.
    let faces = boundaries(scene, ck, shape);

    // Materials.
    let mut table = MaterialTable::vacuum();
    table.push(Material { name: "pec".into(), epsilon: 1.0, conductivity: 0.0, pec: true });
    for (key, spec) in &scene.materials {
        let name = key.get_ref();
        let path = format!("materials.{name}");
        if name == "vacuum" || name == "pec" {
            ck.error(key, &path, format!("`{name}` is built in and cannot be redefined; choose another name"));
            continue;
        }
        let m = spec.get_ref();
        let pec = m.pec.as_ref().is_some_and(|p| *p.get_ref());
        if pec && (m.epsilon.is_some() || m.conductivity.is_some()) {
            ck.error(spec, &path, "a PEC material takes no epsilon or conductivity");
        }
        let epsilon = match &m.epsilon {
            Some(e) => ck.positive(e, &format!("{path}.epsilon")).unwrap_or(1.0),
            None => 1.0,
        };
        let conductivity = match &m.conductivity {
            Some(s) if *s.get_ref() >= 0.0 && s.get_ref().is_finite() => *s.get_ref(),
            Some(s) => {
                ck.error(s, &format!("{path}.conductivity"), format!("must be >= 0 S/m, got {}", s.get_ref()));
                0.0
            }
            None => 0.0,
        };
        if !pec && m.epsilon.is_none() && m.conductivity.is_none() {
            ck.error(spec, &path, "a material needs `epsilon`, `conductivity` or `pec = true`");
        }
        if table.materials.len() >= MAX_MATERIALS {
            ck.error(key, &path, format!("too many materials: at most {} (including vacuum and pec)", MAX_MATERIALS));
            continue;
        }
        if let (Some(c), Some(e)) = (courant, &m.epsilon) {
            if epsilon < 1.0 && c > epsilon.sqrt() {
                ck.warn(e, &format!("{path}.epsilon"), format!(
                    "epsilon {epsilon} < 1 makes waves faster than light in vacuum: with courant = {c} the run is unstable; use courant <= {:.3}",
                    epsilon.sqrt()
                ));
            }
        }
        table.push(Material { name: name.clone(), epsilon, conductivity, pec });
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
                let hint = closest(g.material.get_ref(), &names).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
                ck.error(
                    &g.material,
                    &format!("{key}.material"),
                    format!("unknown material `{}`: defined are {}{hint}", g.material.get_ref(), list(&names)),
                );
                None
            }
        };
        let center = ck.vec3(&g.center, &format!("{key}.center")).map(|c| c.map(|x| x * unit_m));
        let shape_kind = ck.one_of(&g.shape, &format!("{key}.shape"), &["box", "sphere", "cylinder"]);
        let shape = match shape_kind {
            Some(0) => match &g.size {
                Some(s) => ck.vec3(s, &format!("{key}.size")).and_then(|s| {
                    if s.iter().all(|x| *x > 0.0) {
                        Some(Shape::Box { size: s.map(|x| x * unit_m) })
                    } else {
                        ck.error(g.size.as_ref().unwrap(), &format!("{key}.size"), "box edges must be positive");
                        None
                    }
                }),
                None => {
                    ck.error(&g.shape, &key, "a box needs `size = [sx, sy, sz]`");
                    None
                }
            },
            Some(1) => match &g.radius {
                Some(r) => ck.positive(r, &format!("{key}.radius")).map(|r| Shape::Sphere { radius: r * unit_m }),
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
                    (Some(r), Some(h), Some(a)) => Some(Shape::Cylinder { radius: r * unit_m, height: h * unit_m, axis: a }),
                    _ => None,
                }
            }
            _ => None,
        };
        if let (Some(material), Some(center), Some(shape)) = (material, center, shape) {
            objects.push(Object { shape, center, material });
        }
    }

    let grid = match (shape, cell, dt, steps) {
        (Some(shape), Some(cell), Some(dt), Some(steps)) => {
            let origin = [0, 1, 2].map(|a| -0.5 * shape[a] as f64 * cell[a]);
            Some(Grid { shape, cell, origin, dt, steps })
        }
        _ => None,
    };

    // Sources and monitors need the grid.
    let sources = sources(scene, ck, grid.as_ref(), unit_m, &table, faces.as_ref());
    let (probes, snapshots, fluxes) = monitors(scene, ck, grid.as_ref(), unit_m);

    let grid = grid?;
    let faces = faces?;
    let precision = precision?;
    let sources = sources?;
    let _ = unit?;
    let boundaries = Boundaries::new(faces, grid.shape, grid.cell, grid.dt);
    Some(Model {
        name,
        scene_text: text.to_string(),
        length_unit: unit_name,
        grid,
        precision,
        materials: table,
        objects,
        boundaries,
        sources,
        probes,
        snapshots,
        fluxes,
    })
}

fn unit_label(unit_m: f64) -> &'static str {
    if unit_m == 1.0 {
        "m"
    } else if unit_m == 1e-3 {
        "mm"
    } else if unit_m == 1e-9 {
        "nm"
    } else {
        "um"
    }
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
            (v.len() == 3 && norm > 0.0 && norm.is_finite()).then(|| [v[0] / norm, v[1] / norm, v[2] / norm])
        }
        _ => None,
    }
}

fn boundaries(scene: &SceneFile, ck: &mut Checker, shape: Option<[usize; 3]>) -> Option<[[BoundaryKind; 2]; 3]> {
    let names = ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"];
    let default_pml = BoundaryKind::Pml(PmlParams::with_cells(10));
    let mut faces = [[default_pml; 2]; 3];
    let mut ok = true;
    let mut spans: [[Option<usize>; 2]; 3] = Default::default();
    if let Some(b) = &scene.boundaries {
        let b = b.get_ref();
        let specs = [&b.x_min, &b.x_max, &b.y_min, &b.y_max, &b.z_min, &b.z_max];
        let default = match &b.default {
            Some(d) => boundary_kind(d, "boundaries.default", ck),
            None => Some(default_pml),
        };
        for f in 0..6 {
            let (a, h) = (f / 2, f % 2);
            let key = format!("boundaries.{}", names[f]);
            let kind = match specs[f] {
                Some(s) => {
                    spans[a][h] = Some(s.span().start);
                    boundary_kind(s, &key, ck)
                }
                None => {
                    spans[a][h] = b.default.as_ref().map(|d| d.span().start);
                    default
                }
            };
            match kind {
                Some(k) => faces[a][h] = k,
                None => ok = false,
            }
        }
    }
    for a in 0..3 {
        let [lo, hi] = faces[a];
        let at = spans[a][0].or(spans[a][1]).unwrap_or(0);
        if (lo == BoundaryKind::Periodic) != (hi == BoundaryKind::Periodic) {
            ck.error_at(at, &format!("boundaries.{}", names[2 * a]), format!(
                "periodic along {} needs both {} and {} periodic",
                Axis::ALL[a].name(), names[2 * a], names[2 * a + 1]
            ));
            ok = false;
        }
        if hi == BoundaryKind::Pmc {
            ck.error_at(spans[a][1].unwrap_or(0), &format!("boundaries.{}", names[2 * a + 1]), "pmc is supported on the minimum faces (x_min, y_min, z_min), where it acts as a symmetry plane; mirror the scene so the PMC wall is on a minimum face");
            ok = false;
        }
        if let Some(n) = shape {
            let thick = lo.pml_cells() + hi.pml_cells();
            if thick > 0 && thick + 2 > n[a] {
                ck.error_at(at, &format!("boundaries.{}", names[2 * a]), format!(
                    "the PML layers along {} ({} + {} cells) leave no interior: the domain has only {} cells along {}; enlarge simulation.size or use fewer PML cells",
                    Axis::ALL[a].name(), lo.pml_cells(), hi.pml_cells(), n[a], Axis::ALL[a].name()
                ));
                ok = false;
            }
        }
    }
    ok.then_some(faces)
}

fn boundary_kind(spec: &Spanned<BoundarySpec>, key: &str, ck: &mut Checker) -> Option<BoundaryKind> {
    let s = spec.get_ref();
    let kind = ck.one_of(&s.kind, &format!("{key}.type"), &["pml", "pec", "pmc", "periodic"])?;
    let has_pml_keys = s.cells.is_some() || s.order.is_some() || s.sigma_factor.is_some() || s.kappa_max.is_some() || s.alpha_frequency.is_some();
    if kind != 0 {
        if has_pml_keys {
            ck.error(spec, key, format!("`cells`, `order`, `sigma_factor`, `kappa_max` and `alpha_frequency` apply only to type = \"pml\", not \"{}\"", s.kind.get_ref()));
            return None;
        }
        return Some([BoundaryKind::Pml(PmlParams::with_cells(0)), BoundaryKind::Pec, BoundaryKind::Pmc, BoundaryKind::Periodic][kind]);
    }
    let mut p = PmlParams::with_cells(10);
    if let Some(c) = &s.cells {
        if *c.get_ref() < 1 || *c.get_ref() > 1000 {
            ck.error(c, &format!("{key}.cells"), format!("PML thickness must be 1 to 1000 cells (8 to 20 is typical), got {}", c.get_ref()));
            return None;
        }
        p.cells = *c.get_ref() as usize;
    }
    if let Some(m) = &s.order {
        let v = *m.get_ref();
        if !(1.0..=6.0).contains(&v) {
            ck.error(m, &format!("{key}.order"), format!("grading order must be 1 to 6 (3 or 4 is typical), got {v}"));
            return None;
        }
        p.order = v;
    }
    if let Some(f) = &s.sigma_factor {
        p.sigma_factor = ck.positive(f, &format!("{key}.sigma_factor"))?;
    }
    if let Some(k) = &s.kappa_max {
        let v = *k.get_ref();
        if !(v >= 1.0 && v.is_finite()) {
            ck.error(k, &format!("{key}.kappa_max"), format!("must be >= 1, got {v}"));
            return None;
        }
        p.kappa_max = v;
    }
    if let Some(a) = &s.alpha_frequency {
        let v = *a.get_ref();
        if !(v >= 0.0 && v.is_finite()) {
            ck.error(a, &format!("{key}.alpha_frequency"), format!("must be >= 0 Hz, got {v}"));
            return None;
        }
        p.alpha_max = 2.0 * std::f64::consts::PI * EPS0 * v;
    }
    Some(BoundaryKind::Pml(p))
}

fn waveform(w: &Spanned<WaveformSpec>, key: &str, ck: &mut Checker) -> Option<Waveform> {
    let s = w.get_ref();
    let kind = ck.one_of(&s.kind, &format!("{key}.type"), &["gaussian", "ricker", "continuous"]);
    let frequency = ck.positive(&s.frequency, &format!("{key}.frequency"));
    let delay = match &s.delay {
        Some(d) if *d.get_ref() >= 0.0 => *d.get_ref(),
        Some(d) => {
            ck.error(d, &format!("{key}.delay"), "must be >= 0 seconds");
            0.0
        }
        None => 0.0,
    };
    if kind != Some(0) {
        if let Some(b) = &s.bandwidth {
            ck.error(b, &format!("{key}.bandwidth"), "only a gaussian waveform takes a bandwidth");
        }
    }
    if kind != Some(2) {
        if let Some(r) = &s.ramp {
            ck.error(r, &format!("{key}.ramp"), "only a continuous waveform takes a ramp");
        }
    }
    let f = frequency?;
    match kind? {
        0 => {
            let bandwidth = match &s.bandwidth {
                Some(b) => ck.positive(b, &format!("{key}.bandwidth"))?,
                None => 0.5 * f,
            };
            Some(Waveform::Gaussian { frequency: f, bandwidth, delay })
        }
        1 => Some(Waveform::Ricker { frequency: f, delay }),
        _ => {
            let ramp = match &s.ramp {
                Some(r) => ck.positive(r, &format!("{key}.ramp"))?,
                None => 3.0 / f,
            };
            Some(Waveform::Continuous { frequency: f, ramp, delay })
        }
    }
}

fn inside(grid: &Grid, p: [f64; 3]) -> bool {
    let size = grid.size();
    (0..3).all(|a| p[a] >= grid.origin[a] - 1e-9 * size[a] && p[a] <= grid.origin[a] + size[a] * (1.0 + 1e-9))
}

fn sources(
    scene: &SceneFile,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    table: &MaterialTable,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Option<Vec<Source>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (n, src) in scene.source.iter().enumerate() {
        let key = format!("source[{n}]");
        let s = src.get_ref();
        let kind = ck.one_of(&s.kind, &format!("{key}.type"), &["dipole", "plane_wave"]);
        let wave = waveform(&s.waveform, &format!("{key}.waveform"), ck);
        let amplitude = match &s.amplitude {
            Some(a) if a.get_ref().is_finite() => *a.get_ref(),
            Some(a) => {
                ck.error(a, &format!("{key}.amplitude"), "must be a finite number");
                ok = false;
                1.0
            }
            None => 1.0,
        };
        if let (Some(w), Some(g)) = (wave, grid) {
            // Resolution: the shortest wavelength in the densest material.
            let lambda = C0 / (w.max_frequency() * table.max_epsilon().sqrt());
            let dmax = g.cell.iter().cloned().fold(0.0, f64::max);
            if lambda / dmax < MIN_CELLS_PER_WAVELENGTH {
                ck.warn(
                    &s.waveform,
                    &format!("{key}.waveform"),
                    format!(
                        "the grid resolves the shortest wavelength ({:.4} {}) with only {:.1} cells (at least 10 is advisable); expect dispersion errors",
                        lambda / unit_m,
                        unit_label(unit_m),
                        lambda / dmax
                    ),
                );
            }
        }
        let cells_and_component = match kind {
            Some(0) => {
                if s.direction.is_some() || s.polarization.is_some() {
                    ck.error(src, &key, "a dipole takes `component` and `position`, not `direction` or `polarization`");
                }
                let comp = match &s.component {
                    Some(c) => ck.component(c, &format!("{key}.component"), &E_COMPONENTS),
                    None => {
                        ck.error(src, &key, "a dipole needs `component` (Ex, Ey or Ez)");
                        None
                    }
                };
                let pos = match &s.position {
                    Some(p) => match position3(p.get_ref()) {
                        Some(v) => Some(v.map(|x| x * unit_m)),
                        None => {
                            ck.error(p, &format!("{key}.position"), format!("expected [x, y, z], got {}", p.get_ref()));
                            None
                        }
                    },
                    None => {
                        ck.error(src, &key, "a dipole needs `position = [x, y, z]`");
                        None
                    }
                };
                match (comp, pos, grid) {
                    (Some(c), Some(p), Some(g)) => {
                        if !inside(g, p) {
                            ck.error(s.position.as_ref().unwrap(), &format!("{key}.position"), outside_message(g, p, unit_m));
                            None
                        } else {
                            let idx = g.nearest_index(c, p);
                            Some((c, [0, 1, 2].map(|a| [idx[a], idx[a] + 1])))
                        }
                    }
                    _ => None,
                }
            }
            Some(1) => plane_wave(s, src, &key, ck, grid, unit_m, faces),
            _ => None,
        };
        match (cells_and_component, wave) {
            (Some((component, cells)), Some(waveform)) => out.push(Source { component, cells, amplitude, waveform }),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

fn plane_wave(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Option<(Component, [[usize; 2]; 3])> {
    let dirs = ["+x", "-x", "+y", "-y", "+z", "-z"];
    let dir = match &s.direction {
        Some(d) => ck.one_of(d, &format!("{key}.direction"), &dirs),
        None => {
            ck.error(src, key, "a plane wave needs `direction` (+x, -x, +y, -y, +z or -z)");
            None
        }
    };
    let axis = dir.map(|d| d / 2);
    let pol = match &s.polarization {
        Some(p) => ck.component(p, &format!("{key}.polarization"), &E_COMPONENTS),
        None => {
            ck.error(src, key, "a plane wave needs `polarization` (an E component transverse to the direction)");
            None
        }
    };
    if let (Some(a), Some(p)) = (axis, pol) {
        if p.axis() as usize == a {
            ck.error(s.polarization.as_ref().unwrap(), &format!("{key}.polarization"), format!("{} is along the direction {}: choose a transverse component", p.name(), dirs[dir.unwrap()]));
            return None;
        }
    }
    let coord = match &s.position {
        Some(p) => match as_f64(p.get_ref()) {
            Some(v) => Some(v * unit_m),
            None => {
                ck.error(p, &format!("{key}.position"), "a plane wave's position is one number: the sheet's coordinate along its direction");
                None
            }
        },
        None => {
            ck.error(src, key, "a plane wave needs `position`, the sheet's coordinate along its direction");
            None
        }
    };
    let (a, comp, c, g) = (axis?, pol?, coord?, grid?);
    let size = g.size();
    if c < g.origin[a] || c > g.origin[a] + size[a] {
        ck.error(s.position.as_ref().unwrap(), &format!("{key}.position"), format!(
            "{} = {} lies outside the domain, which spans [{}, {}]",
            Axis::ALL[a].name(), c / unit_m, g.origin[a] / unit_m, (g.origin[a] + size[a]) / unit_m
        ));
        return None;
    }
    // The sheet spans the whole cross-section; without periodic transverse boundaries it is
    // a finite aperture, which is still useful (and what users of PEC waveguides want).
    let _ = faces;
    let mut p = [0.0; 3];
    p[a] = c;
    let idx = g.nearest_index(comp, p);
    let mut cells = [[0, g.shape[0]], [0, g.shape[1]], [0, g.shape[2]]];
    cells[a] = [idx[a], idx[a] + 1];
    Some((comp, cells))
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
        .map(|a| format!("{} in [{}, {}]", Axis::ALL[a].name(), g.origin[a] / unit_m, (g.origin[a] + size[a]) / unit_m))
        .collect();
    format!(
        "position [{}, {}, {}] lies outside the domain ({})",
        p[0] / unit_m,
        p[1] / unit_m,
        p[2] / unit_m,
        span.join(", ")
    )
}

fn monitors(scene: &SceneFile, ck: &mut Checker, grid: Option<&Grid>, unit_m: f64) -> (Vec<Probe>, Vec<Snapshot>, Vec<Flux>) {
    let mut probes = Vec::new();
    let mut snaps = Vec::new();
    let mut fluxes = Vec::new();
    let mut names = HashSet::new();
    for (n, mon) in scene.monitor.iter().enumerate() {
        let key = format!("monitor[{n}]");
        let m = mon.get_ref();
        let name = m.name.get_ref().clone();
        if name.is_empty() || name.contains('/') || name == "." {
            ck.error(&m.name, &format!("{key}.name"), "must be a non-empty name without `/`");
        } else if !names.insert(name.clone()) {
            ck.error(&m.name, &format!("{key}.name"), format!("duplicate monitor name `{name}`: each monitor needs its own name"));
        }
        let Some(kind) = ck.one_of(&m.kind, &format!("{key}.type"), &["probe", "snapshot", "flux"]) else { continue };
        if kind == 2 {
            if let Some(f) = flux(m, mon, &key, ck, grid, unit_m) {
                fluxes.push(f);
            }
            continue;
        }
        if m.frequencies.is_some() {
            ck.error(mon, &format!("{key}.frequencies"), "`frequencies` belongs to flux monitors");
        }
        let Some(components) = &m.components else {
            ck.error(mon, &key, "a probe or snapshot needs `components`, e.g. [\"Ez\"]");
            continue;
        };
        let comps: Vec<Component> = components
            .get_ref()
            .iter()
            .filter_map(|c| ck.component(c, &format!("{key}.components"), &ALL_COMPONENTS))
            .collect();
        if components.get_ref().is_empty() {
            ck.error(components, &format!("{key}.components"), "list at least one component");
        }
        let mut seen = HashSet::new();
        for c in &comps {
            if !seen.insert(*c) {
                ck.error(components, &format!("{key}.components"), format!("{} is listed twice", c.name()));
            }
        }
        if kind == 0 {
            for (field, present) in [("plane", m.plane.is_some()), ("box", m.region.is_some()), ("every", m.every.is_some()), ("stride", m.stride.is_some())] {
                if present {
                    ck.error(mon, &format!("{key}.{field}"), format!("a probe takes `position` and `components`; `{field}` belongs to snapshots"));
                }
            }
            let Some(pos) = m.position.as_ref() else {
                ck.error(mon, &key, "a probe needs `position = [x, y, z]`");
                continue;
            };
            let Some(p) = ck.vec3(pos, &format!("{key}.position")).map(|p| p.map(|x| x * unit_m)) else { continue };
            let Some(g) = grid else { continue };
            if !inside(g, p) {
                ck.error(pos, &format!("{key}.position"), outside_message(g, p, unit_m));
                continue;
            }
            probes.push(Probe { name, position: p, samples: comps.iter().map(|&c| (c, g.nearest_index(c, p))).collect() });
        } else {
            if m.position.is_some() {
                ck.error(mon, &format!("{key}.position"), "a snapshot takes `plane`, `box` or neither (whole volume), not `position`");
            }
            let every = match &m.every {
                Some(e) if *e.get_ref() >= 1 => *e.get_ref() as usize,
                Some(e) => {
                    ck.error(e, &format!("{key}.every"), format!("must be a whole number of steps >= 1, got {}", e.get_ref()));
                    continue;
                }
                None => {
                    ck.error(mon, &key, "a snapshot needs `every = N` (steps between snapshots)");
                    continue;
                }
            };
            let stride = match &m.stride {
                Some(s) if *s.get_ref() >= 1 => *s.get_ref() as usize,
                Some(s) => {
                    ck.error(s, &format!("{key}.stride"), format!("must be >= 1, got {}", s.get_ref()));
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
                        ck.error(plane, &format!("{key}.plane"), format!("`{axis_name}` is not an axis: use x, y or z"));
                        continue;
                    };
                    let c = value * unit_m;
                    let size = g.size();
                    if c < g.origin[a] || c > g.origin[a] + size[a] {
                        ck.error(plane, &format!("{key}.plane.{axis_name}"), format!(
                            "{axis_name} = {value} lies outside the domain, which spans [{}, {}]",
                            g.origin[a] / unit_m, (g.origin[a] + size[a]) / unit_m
                        ));
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
                            (comp, Region { start, end, stride: [stride; 3] })
                        })
                        .collect::<Vec<_>>()
                }
                (None, Some(b)) => {
                    let bs = b.get_ref();
                    let (Some(center), Some(size)) = (vec3_plain(&bs.center), vec3_plain(&bs.size)) else {
                        ck.error(b, &format!("{key}.box"), "expected `{ center = [x, y, z], size = [sx, sy, sz] }`");
                        continue;
                    };
                    if size.iter().any(|s| *s < 0.0) {
                        ck.error(b, &format!("{key}.box.size"), "sizes must be >= 0");
                        continue;
                    }
                    let lo = [0, 1, 2].map(|a| (center[a] - 0.5 * size[a]) * unit_m);
                    let hi = [0, 1, 2].map(|a| (center[a] + 0.5 * size[a]) * unit_m);
                    if !inside(g, lo) || !inside(g, hi) {
                        ck.error(b, &format!("{key}.box"), "the box reaches outside the domain");
                        continue;
                    }
                    comps
                        .iter()
                        .map(|&comp| {
                            let a = g.nearest_index(comp, lo);
                            let b = g.nearest_index(comp, hi);
                            (comp, Region { start: a, end: [b[0] + 1, b[1] + 1, b[2] + 1], stride: [stride; 3] })
                        })
                        .collect()
                }
                (None, None) => comps
                    .iter()
                    .map(|&comp| (comp, Region { start: [0; 3], end: g.shape, stride: [stride; 3] }))
                    .collect(),
            };
            snaps.push(Snapshot { name, regions, every });
        }
    }
    (probes, snaps, fluxes)
}

/// A flux monitor: a plane with one coordinate and a frequency list.
fn flux(m: &MonitorSpec, mon: &Spanned<MonitorSpec>, key: &str, ck: &mut Checker, grid: Option<&Grid>, unit_m: f64) -> Option<Flux> {
    for (field, present) in [("components", m.components.is_some()), ("box", m.region.is_some()), ("every", m.every.is_some()), ("stride", m.stride.is_some()), ("position", m.position.is_some())] {
        if present {
            ck.error(mon, &format!("{key}.{field}"), format!("a flux monitor takes `plane` and `frequencies`; `{field}` does not apply"));
        }
    }
    let frequencies = match &m.frequencies {
        None => {
            ck.error(mon, key, "a flux monitor needs `frequencies = { min = ..., max = ..., count = ... }` (Hz)");
            None
        }
        Some(f) => {
            let s = f.get_ref();
            if !(s.min > 0.0 && s.max >= s.min && s.max.is_finite()) || s.count < 1 || s.count > 100_000 {
                ck.error(f, &format!("{key}.frequencies"), format!(
                    "need 0 < min <= max and 1 <= count <= 100000, got min = {}, max = {}, count = {}",
                    s.min, s.max, s.count
                ));
                None
            } else {
                let n = s.count as usize;
                Some((0..n).map(|i| if n == 1 { s.min } else { s.min + (s.max - s.min) * i as f64 / (n - 1) as f64 }).collect::<Vec<f64>>())
            }
        }
    };
    let Some(plane) = &m.plane else {
        ck.error(mon, key, "a flux monitor needs `plane = { x = ... }` (or y, z)");
        return None;
    };
    let map = plane.get_ref();
    let (axis_name, value) = match map.iter().next() {
        Some(kv) if map.len() == 1 => kv,
        _ => {
            ck.error(plane, &format!("{key}.plane"), "a plane is one coordinate: `{ x = ... }`, `{ y = ... }` or `{ z = ... }`");
            return None;
        }
    };
    let Some(a) = ["x", "y", "z"].iter().position(|s| s == axis_name) else {
        ck.error(plane, &format!("{key}.plane"), format!("`{axis_name}` is not an axis: use x, y or z"));
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
    Some(Flux { name: m.name.get_ref().clone(), axis: Axis::ALL[a], index: index as usize, frequencies: frequencies? })
}

fn vec3_plain(v: &[f64]) -> Option<[f64; 3]> {
    (v.len() == 3 && v.iter().all(|x| x.is_finite())).then(|| [v[0], v[1], v[2]])
}
