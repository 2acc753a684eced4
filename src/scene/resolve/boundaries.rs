//! `[boundaries]`: the face kinds and the CPML grading.

use super::Checker;
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// A Bloch phase as `[boundaries]` gave it: the phase and where it was written.
#[derive(Debug, Clone)]
pub(super) struct BlochEntry {
    /// Periods of 2 pi per cell period.
    pub phase: f64,
    /// The key it was written under (`boundaries.x_min`).
    pub key: String,
    /// Where in the file.
    pub at: usize,
}

/// The faces of `[boundaries]`, and per axis the Bloch phase written there (a `bloch` face
/// is periodic; its phase goes to [`Boundaries::bloch`]).
pub(super) fn boundaries(
    scene: &SceneFile,
    ck: &mut Checker,
    shape: Option<[usize; 3]>,
) -> (Option<[[BoundaryKind; 2]; 3]>, [Option<BlochEntry>; 3]) {
    let mut bloch: [Option<BlochEntry>; 3] = Default::default();
    let faces = faces(scene, ck, shape, &mut bloch);
    (faces, bloch)
}

fn faces(
    scene: &SceneFile,
    ck: &mut Checker,
    shape: Option<[usize; 3]>,
    bloch: &mut [Option<BlochEntry>; 3],
) -> Option<[[BoundaryKind; 2]; 3]> {
    let names = ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"];
    let default_pml = BoundaryKind::Pml(PmlParams::with_cells(10));
    let mut faces = [[default_pml; 2]; 3];
    let mut ok = true;
    // Axes with a face that could not be resolved: reported, and not checked further.
    let mut failed = [false; 3];
    // Axes too short for the default PML that nothing in the file set.
    let mut too_thin: Vec<usize> = Vec::new();
    let mut spans: [[Option<usize>; 2]; 3] = Default::default();
    if scene.boundaries_unread {
        // Reported while reading; checking the default faces instead would only mislead.
        return None;
    }
    if let Some(b) = &scene.boundaries {
        let b = b.get_ref();
        let specs = [&b.x_min, &b.x_max, &b.y_min, &b.y_max, &b.z_min, &b.z_max];
        let default = match &b.default {
            Some(d) if is_bloch(d) => {
                ck.error(d, "boundaries.default", "a Bloch phase belongs to the faces of one axis: write it on that axis's faces (e.g. `x_min = { type = \"bloch\", phase = 0.25 }`)");
                None
            }
            Some(d) => boundary_kind(d, "boundaries.default", ck),
            None => Some(default_pml),
        };
        // The axes with a Bloch face, and which of their faces the file set itself.
        for f in 0..6 {
            let (a, key) = (f / 2, format!("boundaries.{}", names[f]));
            let Some(spec) = specs[f].as_ref().filter(|s| is_bloch(s)) else {
                continue;
            };
            let Some(phase) = bloch_phase(spec, &key, ck) else {
                ok = false;
                failed[a] = true;
                continue;
            };
            match &bloch[a] {
                Some(e) if e.phase != phase => {
                    ck.error(spec, &key, format!("the Bloch phase along {} is {} on {}: write one phase (on either face or both)", Axis::ALL[a].name(), e.phase, e.key));
                    ok = false;
                    failed[a] = true;
                }
                Some(_) => {}
                None => {
                    bloch[a] = Some(BlochEntry {
                        phase,
                        key,
                        at: spec.span().start,
                    })
                }
            }
        }
        for f in 0..6 {
            let (a, h) = (f / 2, f % 2);
            let key = format!("boundaries.{}", names[f]);
            let kind = match specs[f] {
                Some(s) if is_bloch(s) => {
                    spans[a][h] = Some(s.span().start);
                    Some(BoundaryKind::Periodic)
                }
                Some(s) => {
                    spans[a][h] = Some(s.span().start);
                    boundary_kind(s, &key, ck)
                }
                // The other face of a Bloch axis follows it.
                None if bloch[a].is_some() => Some(BoundaryKind::Periodic),
                None => {
                    spans[a][h] = b.default.as_ref().map(|d| d.span().start);
                    default
                }
            };
            match kind {
                Some(k) => faces[a][h] = k,
                None => {
                    ok = false;
                    failed[a] = true;
                }
            }
        }
    }
    for a in (0..3).filter(|&a| !failed[a]) {
        let [lo, hi] = faces[a];
        let at = spans[a][0].or(spans[a][1]).unwrap_or(0);
        if let (Some(e), true) = (&bloch[a], lo != hi) {
            ck.error_at(
                e.at,
                &e.key,
                format!(
                    "a Bloch phase along {} needs both {} and {} periodic: leave the other face out (it follows) or make it `type = \"periodic\"` or `\"bloch\"`",
                    Axis::ALL[a].name(),
                    names[2 * a],
                    names[2 * a + 1]
                ),
            );
            ok = false;
        } else if (lo == BoundaryKind::Periodic) != (hi == BoundaryKind::Periodic) {
            ck.error_at(
                at,
                &format!("boundaries.{}", names[2 * a]),
                format!(
                    "periodic along {} needs both {} and {} periodic",
                    Axis::ALL[a].name(),
                    names[2 * a],
                    names[2 * a + 1]
                ),
            );
            ok = false;
        }
        if hi == BoundaryKind::Pmc {
            ck.error_at(spans[a][1].unwrap_or(0), &format!("boundaries.{}", names[2 * a + 1]), "pmc is supported on the minimum faces (x_min, y_min, z_min), where it acts as a symmetry plane; mirror the scene so the PMC wall is on a minimum face");
            ok = false;
        }
        if let (Some(e), Some(n)) = (&bloch[a], shape) {
            if n[a] < 2 && e.phase.fract() != 0.0 {
                ck.error_at(e.at, &e.key, format!(
                    "a Bloch phase needs at least 2 cells along {}, which has 1 (a 2-D grid's flat axis carries no derivative): give the axis 2 or more cells, or use phase = 0",
                    Axis::ALL[a].name()
                ));
                ok = false;
            }
        }
        if let Some(n) = shape {
            let thick = lo.pml_cells() + hi.pml_cells();
            if thick > 0 && thick + 2 > n[a] && spans[a] == [None, None] {
                // Nothing in the file set these faces: said once for all such axes, below.
                too_thin.push(a);
                ok = false;
            } else if thick > 0 && thick + 2 > n[a] {
                let left = match n[a].saturating_sub(thick) {
                    0 => "no interior".to_string(),
                    1 => "only 1 interior cell (at least 2 are needed)".to_string(),
                    k => format!("only {k} interior cells (at least 2 are needed)"),
                };
                ck.error_at(at, &format!("boundaries.{}", names[2 * a]), format!(
                    "the PML layers along {axis} ({} + {} cells) leave {left}: the domain has {} cells along {axis}; enlarge simulation.size or use fewer PML cells",
                    lo.pml_cells(), hi.pml_cells(), n[a], axis = Axis::ALL[a].name()
                ));
                ok = false;
            }
        }
    }
    if let (Some(n), false) = (shape, too_thin.is_empty()) {
        // Point at the domain size, as nothing in the file set these faces.
        let axes: Vec<&str> = too_thin.iter().map(|&a| Axis::ALL[a].name()).collect();
        let cells: Vec<String> = too_thin.iter().map(|&a| n[a].to_string()).collect();
        let (axes, cells) = (and_list(&axes), and_list(&cells));
        ck.error_at(scene.simulation.get_ref().size.span().start, "simulation.size", format!(
            "without a [boundaries] entry for {axes} every face gets the default 10-cell PML, but the domain has only {cells} cells along {axes}; enlarge the domain or set e.g. `[boundaries] default = {{ type = \"pml\", cells = 4 }}`"
        ));
    }
    ok.then_some(faces)
}

/// "a", "a and b", "a, b and c".
fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    let items: Vec<&str> = items.iter().map(|s| s.as_ref()).collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}

/// True for a `type = "bloch"` face.
fn is_bloch(spec: &Spanned<BoundarySpec>) -> bool {
    spec.get_ref().kind.get_ref() == "bloch"
}

/// The `phase` of a Bloch face, reported if missing or not finite; a Bloch face takes no
/// other key.
fn bloch_phase(spec: &Spanned<BoundarySpec>, key: &str, ck: &mut Checker) -> Option<f64> {
    let s = spec.get_ref();
    let extra = s.cells.is_some()
        || s.order.is_some()
        || s.sigma_factor.is_some()
        || s.kappa_max.is_some()
        || s.alpha_frequency.is_some();
    if extra {
        ck.error(spec, key, "a Bloch face takes `phase` only (`cells`, `order`, `sigma_factor`, `kappa_max` and `alpha_frequency` are a PML's)");
        return None;
    }
    match &s.phase {
        Some(p) if p.get_ref().is_finite() => Some(*p.get_ref()),
        Some(p) => {
            ck.error(p, &format!("{key}.phase"), "the Bloch phase is a finite number of periods of 2 pi (k L / 2 pi; 0.25 for a quarter period)");
            None
        }
        None => {
            ck.error(spec, key, "a Bloch face needs `phase`, in periods of 2 pi per cell period (k L / 2 pi), e.g. `{ type = \"bloch\", phase = 0.25 }`; an oblique plane wave sets it itself on `type = \"periodic\"` faces");
            None
        }
    }
}

fn boundary_kind(
    spec: &Spanned<BoundarySpec>,
    key: &str,
    ck: &mut Checker,
) -> Option<BoundaryKind> {
    let s = spec.get_ref();
    let kind = ck.one_of(
        &s.kind,
        &format!("{key}.type"),
        &["pml", "pec", "pmc", "periodic", "bloch"],
    )?;
    if s.phase.is_some() {
        ck.error(
            spec,
            key,
            format!(
                "`phase` applies only to type = \"bloch\", not \"{}\"",
                s.kind.get_ref()
            ),
        );
        return None;
    }
    let has_pml_keys = s.cells.is_some()
        || s.order.is_some()
        || s.sigma_factor.is_some()
        || s.kappa_max.is_some()
        || s.alpha_frequency.is_some();
    if kind != 0 {
        if has_pml_keys {
            ck.error(spec, key, format!("`cells`, `order`, `sigma_factor`, `kappa_max` and `alpha_frequency` apply only to type = \"pml\", not \"{}\"", s.kind.get_ref()));
            return None;
        }
        return Some(
            [
                BoundaryKind::Pml(PmlParams::with_cells(0)),
                BoundaryKind::Pec,
                BoundaryKind::Pmc,
                BoundaryKind::Periodic,
                BoundaryKind::Periodic,
            ][kind],
        );
    }
    let mut p = PmlParams::with_cells(10);
    if let Some(c) = &s.cells {
        if *c.get_ref() < 1 || *c.get_ref() > 1000 {
            ck.error(
                c,
                &format!("{key}.cells"),
                format!(
                    "PML thickness must be 1 to 1000 cells (8 to 20 is typical), got {}",
                    c.get_ref()
                ),
            );
            return None;
        }
        p.cells = *c.get_ref() as usize;
    }
    if let Some(m) = &s.order {
        let v = *m.get_ref();
        if !(1.0..=6.0).contains(&v) {
            ck.error(
                m,
                &format!("{key}.order"),
                format!("grading order must be 1 to 6 (3 or 4 is typical), got {v}"),
            );
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
            ck.error(
                k,
                &format!("{key}.kappa_max"),
                format!("must be >= 1, got {v}"),
            );
            return None;
        }
        p.kappa_max = v;
    }
    if let Some(a) = &s.alpha_frequency {
        let v = *a.get_ref();
        if !(v >= 0.0 && v.is_finite()) {
            ck.error(
                a,
                &format!("{key}.alpha_frequency"),
                format!("must be >= 0 Hz, got {v}"),
            );
            return None;
        }
        p.alpha_max = 2.0 * std::f64::consts::PI * EPS0 * v;
    }
    Some(BoundaryKind::Pml(p))
}
