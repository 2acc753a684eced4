//! `[materials]`: the material table (vacuum and pec built in), and the warning for a
//! material faster than light that an object is made of.

use super::{placement, Checker, MAX_COURANT};
use crate::model::*;
use crate::scene::schema::*;

/// A material with epsilon < 1 that may break the Courant limit: (id, span start, key path,
/// epsilon, courant).
pub(super) type Fast = (u8, usize, String, f64, f64);

/// What `[materials]` resolves to.
pub(super) struct Materials {
    /// The table: vacuum, pec, then the scene's materials in order.
    pub table: MaterialTable,
    /// Materials defined but not kept (beyond the table): already reported.
    pub dropped: Vec<String>,
    /// Materials faster than light at the run's Courant number.
    pub fast: Vec<Fast>,
}

pub(super) fn materials(scene: &SceneFile, ck: &mut Checker, courant: Option<f64>) -> Materials {
    let mut dropped: Vec<String> = Vec::new();
    let mut fast: Vec<Fast> = Vec::new();
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
            // Said once, at the first material that does not fit, with the real count; the
            // geometry that names a material beyond it is not then told it is "unknown".
            if dropped.is_empty() {
                ck.error(
                    key,
                    &path,
                    format!(
                        "too many materials: the scene defines {} and the material table holds at most {} besides vacuum and pec; `{name}` and the ones after it (in alphabetical order) do not fit",
                        scene.materials.len(),
                        MAX_MATERIALS - 2
                    ),
                );
            }
            dropped.push(name.clone());
            continue;
        }
        if let (Some(c), Some(e)) = (courant, &m.epsilon) {
            // The stability limit scales with sqrt(epsilon): keep the same margin below it.
            if epsilon < 1.0 && c > MAX_COURANT * epsilon.sqrt() {
                // Only worth saying when an object is made of it: see after the geometry.
                fast.push((
                    table.materials.len() as u8,
                    e.span().start,
                    path.clone(),
                    epsilon,
                    c,
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
    Materials {
        table,
        dropped,
        fast,
    }
}

/// Warn about each material faster than light that an object is made of.
pub(super) fn fast_material_warnings(ck: &mut Checker, fast: &[Fast], objects: &[Object]) {
    for &(id, at, ref path, epsilon, c) in fast {
        if objects.iter().any(|o| o.material == id) {
            ck.warn_at(at, &format!("{path}.epsilon"), format!(
                "epsilon {} < 1 makes waves faster than light in vacuum: with courant = {} the run is unstable; use courant <= {}",
                placement::num(epsilon), placement::num(c), placement::num((MAX_COURANT * epsilon.sqrt() * 1000.0).floor() / 1000.0)
            ));
        }
    }
}
