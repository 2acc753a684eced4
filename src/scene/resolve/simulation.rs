//! `[simulation]`: the length unit, the cell size and grid shape, the time step and run
//! length, the precision and the run name.

use super::{as_f64, placement, Checker, MAX_CELLS, MAX_COURANT, MAX_STEPS};
use crate::model::*;
use crate::scene::schema::*;

/// What `[simulation]` resolves to; `None` where a value could not be read (reported).
pub(super) struct Simulation {
    /// The unit as written (default "um").
    pub unit_name: String,
    /// The unit in metres, when it is a known unit.
    pub unit: Option<f64>,
    /// The unit in metres, micrometres when unknown (to go on checking the rest).
    pub unit_m: f64,
    /// Cell size, metres.
    pub cell: Option<[f64; 3]>,
    /// Grid shape.
    pub shape: Option<[usize; 3]>,
    /// Courant fraction of the stability limit (3-D, or 2-D / 1-D on a flat grid).
    pub courant: Option<f64>,
    /// Time step, seconds.
    pub dt: Option<f64>,
    /// Time steps.
    pub steps: Option<usize>,
    /// Field precision.
    pub precision: Option<Precision>,
    /// Run name.
    pub name: String,
}

/// The axes of one cell whose two faces are periodic (as `[boundaries]` writes them: the face's
/// own entry, else `default`): the derivatives along them vanish.
pub(super) fn flat_axes(scene: &SceneFile, shape: Option<[usize; 3]>) -> [bool; 3] {
    let Some(shape) = shape else {
        return [false; 3];
    };
    let b = scene.boundaries.as_ref().map(|b| b.get_ref());
    let kind = |face: Option<&toml::Spanned<BoundarySpec>>| -> Option<String> {
        face.or(b.and_then(|b| b.default.as_ref()))
            .map(|f| f.get_ref().kind.get_ref().clone())
    };
    let faces = |a: usize| {
        let b = b?;
        Some(match a {
            0 => [kind(b.x_min.as_ref()), kind(b.x_max.as_ref())],
            1 => [kind(b.y_min.as_ref()), kind(b.y_max.as_ref())],
            _ => [kind(b.z_min.as_ref()), kind(b.z_max.as_ref())],
        })
    };
    let periodic = [0, 1, 2].map(|a| {
        faces(a).is_some_and(|f| {
            f.iter()
                .all(|k| matches!(k.as_deref(), Some("periodic" | "bloch")))
        })
    });
    Grid::flat_axes_of(shape, periodic)
}

/// `[simulation]`, with `default_courant` where the scene gives no `courant`.
pub(super) fn simulation(scene: &SceneFile, ck: &mut Checker, default_courant: f64) -> Simulation {
    let sim = scene.simulation.get_ref();

    // Units.
    let unit_name = sim
        .length_unit
        .as_ref()
        .map_or("um".to_string(), |u| u.get_ref().clone());
    let unit = match sim.length_unit.as_ref() {
        None => Some(1e-6),
        Some(u) => ck
            .one_of(u, "simulation.length_unit", &LENGTH_UNITS.map(|u| u.0))
            .map(|i| LENGTH_UNITS[i].1),
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
                                placement::num(size[a]),
                                n[a],
                                placement::num(n[a] * cell[a] / unit_m)
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
        None => Some(default_courant),
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
                    format!(
                        "must be in (0, {MAX_COURANT}] (a fraction of the stability limit: 3D, or 2D/1D on a flat grid), got {}{why}",
                        placement::num(x)
                    ),
                );
                None
            }
        }
    };
    // An axis of one cell between periodic faces carries no derivative (the neighbour is the
    // cell itself), so the grid is 2-D (or 1-D) and its stability limit is the 2-D (1-D) one.
    let flat = flat_axes(scene, shape);
    let dt = match (cell, courant) {
        (Some(c), Some(f)) => Some(f * Grid::courant_limit_of(c, flat)),
        _ => None,
    };
    let steps = match (&sim.steps, &sim.duration) {
        (None, Some(d))
            if dt.is_some_and(|dt| {
                d.get_ref().is_finite() && *d.get_ref() / dt > MAX_STEPS as f64
            }) =>
        {
            let dt = dt.unwrap();
            ck.error(
                d,
                "simulation.duration",
                format!(
                    "duration = {} s takes {} steps of dt = {} s, more than the limit of 1e12 steps: the duration is in seconds (a period of light is about 1e-15 s)",
                    placement::num(*d.get_ref()),
                    placement::num4((*d.get_ref() / dt).ceil()),
                    placement::num4(dt)
                ),
            );
            None
        }
        (Some(s), None) => {
            // A float is accepted when it is a whole number: `steps = 1e5` is natural to write.
            let v = *s.get_ref();
            if !(v >= 1.0 && v.is_finite() && v.fract() == 0.0) {
                ck.error(
                    s,
                    "simulation.steps",
                    format!("must be a positive whole number, got {}", placement::num(v)),
                );
                None
            } else if v > MAX_STEPS as f64 {
                ck.error(
                    s,
                    "simulation.steps",
                    format!(
                        "{} steps is more than the limit of 1e12 steps",
                        placement::num(v)
                    ),
                );
                None
            } else {
                Some(v as usize)
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

    Simulation {
        unit_name,
        unit,
        unit_m,
        cell,
        shape,
        courant,
        dt,
        steps,
        precision,
        name,
    }
}
