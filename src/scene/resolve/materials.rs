//! `[materials]`: the material table (vacuum and pec built in), and the warning for a
//! material faster than light that an object is made of.

use super::{placement, Checker, MAX_COURANT};
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// A material with epsilon mu < 1 that may break the Courant limit: (id, span start of the
/// key that makes it fast, key path, epsilon mu, courant).
pub(super) type Fast = (u8, usize, String, f64, f64);

/// What `[materials]` resolves to.
pub(super) struct Materials {
    /// The table: vacuum, pec, then the scene's materials in order.
    pub table: MaterialTable,
    /// Materials defined but not kept (invalid, or beyond the table): already reported.
    pub dropped: Vec<String>,
    /// Materials faster than light at the run's Courant number.
    pub fast: Vec<Fast>,
}

pub(super) fn materials(
    scene: &SceneFile,
    ck: &mut Checker,
    courant: Option<f64>,
    dt: Option<f64>,
) -> Materials {
    let mut dropped: Vec<String> = Vec::new();
    let mut too_many_said = false;
    let mut fast: Vec<Fast> = Vec::new();
    let mut table = MaterialTable::vacuum();
    table.push(Material {
        pec: true,
        conformal: true,
        ..Material::dielectric("pec", 1.0, 0.0)
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
        let Some(material) = material(ck, spec, &path, name, dt) else {
            // Reported there; the geometry naming it is not then told it is "unknown".
            dropped.push(name.clone());
            continue;
        };
        if let Some(dt) = dt.filter(|&dt| !finite_update(&material, dt)) {
            ck.error(
                key,
                &path,
                format!(
                    "its values overflow the update at the time step dt = {} s (a coefficient is not a finite number): one of them is far outside any material's range",
                    placement::num4(dt)
                ),
            );
            dropped.push(name.clone());
            continue;
        }
        let epsilon = material.epsilon;
        if table.materials.len() >= MAX_MATERIALS {
            // Said once, at the first material that does not fit, with the real count; the
            // geometry that names a material beyond it is not then told it is "unknown".
            if !too_many_said {
                too_many_said = true;
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
        // The wave speed is c / sqrt(epsilon mu), and the stability limit scales with
        // sqrt(epsilon mu): keep the same margin below it. Said at the key that makes it fast.
        let slowness = epsilon * material.mu;
        let key_at = match (&m.epsilon, &m.mu) {
            (Some(e), _) if epsilon < 1.0 => Some((e.span().start, "epsilon")),
            (_, Some(mu)) => Some((mu.span().start, "mu")),
            (Some(e), None) => Some((e.span().start, "epsilon")),
            (None, None) => None,
        };
        if let (Some(c), Some((at, key))) = (courant, key_at) {
            if slowness < 1.0 && c > MAX_COURANT * slowness.sqrt() {
                // Only worth saying when an object is made of it: see after the geometry.
                let id = table.materials.len() as u8;
                fast.push((id, at, format!("{path}.{key}"), slowness, c));
            }
        }
        let _ = pec;
        table.push(material);
    }
    Materials {
        table,
        dropped,
        fast,
    }
}

/// True when every update coefficient of `material` at time step `dt` (E, H and each pole's)
/// is a finite number.
fn finite_update(material: &Material, dt: f64) -> bool {
    let one = MaterialTable {
        materials: vec![material.clone()],
    };
    let coefficients = one.coefficients(dt);
    let magnetic = one.magnetic_coefficients(dt);
    coefficients
        .iter()
        .chain(&magnetic)
        .all(|c| c.ca.is_finite() && c.cb.is_finite())
        && material.poles.iter().all(|p| p.ade(dt).is_finite())
}

/// Warn about each material faster than light that an object is made of.
pub(super) fn fast_material_warnings(ck: &mut Checker, fast: &[Fast], objects: &[Object]) {
    for &(id, at, ref key, slowness, c) in fast {
        if objects.iter().any(|o| o.material == id) {
            // The advice is a courant the run can use, to 3 places; below 0.001 none is.
            let stable = (MAX_COURANT * slowness.sqrt() * 1000.0).floor() / 1000.0;
            let advice = if stable > 0.0 {
                format!("use courant <= {}", placement::num(stable))
            } else {
                "no courant number is small enough for epsilon mu this close to 0: check the values"
                    .to_string()
            };
            ck.warn_at(at, key, format!(
                "epsilon mu = {} < 1 makes waves faster than light in vacuum: with courant = {} the run is unstable; {advice}",
                placement::num(slowness), placement::num(c)
            ));
        }
    }
}

/// One `[materials]` entry, checked: every problem is reported, and None comes back when there
/// was one.
fn material(
    ck: &mut Checker,
    spec: &Spanned<MaterialSpec>,
    path: &str,
    name: &str,
    dt: Option<f64>,
) -> Option<Material> {
    let m = spec.get_ref();
    let before = ck.problems.len();
    let pec = m.pec.as_ref().is_some_and(|p| *p.get_ref());
    let has_poles = m.lorentz.is_some() || m.drude.is_some() || m.debye.is_some();
    if pec {
        let others = [
            ("epsilon", m.epsilon.is_some()),
            ("conductivity", m.conductivity.is_some()),
            ("mu", m.mu.is_some()),
            ("magnetic_conductivity", m.magnetic_conductivity.is_some()),
            ("lorentz", m.lorentz.is_some()),
            ("drude", m.drude.is_some()),
            ("debye", m.debye.is_some()),
            ("library", m.library.is_some()),
        ];
        let given: Vec<&str> = others.iter().filter(|o| o.1).map(|o| o.0).collect();
        if !given.is_empty() {
            ck.error(
                spec,
                path,
                format!(
                    "a PEC material takes no other keys; remove {}",
                    given.join(", ")
                ),
            );
        }
    }
    let mut out = Material::dielectric(name, 1.0, 0.0);
    out.pec = pec;
    // PEC surfaces are conformal (Dey-Mittra), and a metal's with poles have surface ports
    // (`crate::model::SurfacePorts`), unless `conformal = false`.
    out.conformal = m.conformal.as_ref().is_none_or(|c| *c.get_ref());
    // A library fit's own conductivity (the soils'); a scene's `conductivity` adds to it.
    let mut library_conductivity = 0.0;
    if let Some(lib) = &m.library {
        if m.epsilon.is_some() || has_poles {
            ck.error(
                spec,
                path,
                "a library material takes its epsilon and poles from the library: remove `epsilon`, `lorentz`, `drude` and `debye`, or `library`",
            );
        }
        let band = m.band.as_ref().and_then(|b| {
            let v = b.get_ref();
            if v.len() == 2 && v.iter().all(|x| x.is_finite() && *x > 0.0) && v[0] < v[1] {
                Some([v[0], v[1]])
            } else {
                ck.error(
                    b,
                    &format!("{path}.band"),
                    "must be [fmin, fmax] in Hz with 0 < fmin < fmax",
                );
                None
            }
        });
        match library::lookup(lib.get_ref(), band) {
            Ok(fit) => {
                out.epsilon = fit.epsilon;
                out.poles = fit.poles;
                out.band = Some(fit.band);
                library_conductivity = fit.conductivity;
            }
            Err(e) => ck.error(lib, &format!("{path}.library"), e),
        }
    } else if let Some(b) = &m.band {
        ck.error(
            b,
            &format!("{path}.band"),
            "`band` picks a fit of a `library` material; this material has no `library`",
        );
    }
    if let Some(e) = &m.epsilon {
        out.epsilon = ck.positive(e, &format!("{path}.epsilon")).unwrap_or(1.0);
    }
    let non_negative = |ck: &mut Checker, v: &Option<Spanned<f64>>, key: &str, unit: &str| match v {
        Some(s) if *s.get_ref() >= 0.0 && s.get_ref().is_finite() => *s.get_ref(),
        Some(s) => {
            ck.error(
                s,
                &format!("{path}.{key}"),
                format!("must be >= 0 {unit}, got {}", placement::num(*s.get_ref())),
            );
            0.0
        }
        None => 0.0,
    };
    out.conductivity =
        library_conductivity + non_negative(ck, &m.conductivity, "conductivity", "S/m");
    out.magnetic_conductivity = non_negative(
        ck,
        &m.magnetic_conductivity,
        "magnetic_conductivity",
        "ohm/m",
    );
    if let Some(mu) = &m.mu {
        out.mu = ck.positive(mu, &format!("{path}.mu")).unwrap_or(1.0);
    }
    for (k, p) in m.lorentz.iter().flatten().enumerate() {
        let key = format!("{path}.lorentz[{k}]");
        let p = p.get_ref();
        let (d, f) = (
            ck.positive(&p.delta_epsilon, &format!("{key}.delta_epsilon")),
            ck.positive(&p.frequency, &format!("{key}.frequency")),
        );
        let g = non_negative(ck, &p.damping, &format!("lorentz[{k}].damping"), "Hz");
        if let (Some(delta_epsilon), Some(frequency)) = (d, f) {
            let pole = Pole::Lorentz {
                delta_epsilon,
                frequency,
                damping: g,
            };
            check_resolved(
                ck,
                &p.frequency,
                &format!("{key}.frequency"),
                &pole,
                dt,
                1.0,
            );
            out.poles.push(pole);
        }
    }
    for (k, p) in m.drude.iter().flatten().enumerate() {
        let key = format!("{path}.drude[{k}]");
        let p = p.get_ref();
        let f = ck.positive(&p.frequency, &format!("{key}.frequency"));
        let g = non_negative(ck, &p.damping, &format!("drude[{k}].damping"), "Hz");
        if let Some(frequency) = f {
            let pole = Pole::Drude {
                frequency,
                damping: g,
            };
            // The plasma edge, where eps crosses zero, lies at wp / sqrt(eps_inf).
            let eps_inf = out.epsilon.max(f64::MIN_POSITIVE);
            check_resolved(
                ck,
                &p.frequency,
                &format!("{key}.frequency"),
                &pole,
                dt,
                eps_inf.sqrt(),
            );
            out.poles.push(pole);
        }
    }
    for (k, p) in m.debye.iter().flatten().enumerate() {
        let key = format!("{path}.debye[{k}]");
        let p = p.get_ref();
        let (d, t) = (
            ck.positive(&p.delta_epsilon, &format!("{key}.delta_epsilon")),
            ck.positive(&p.relaxation_time, &format!("{key}.relaxation_time")),
        );
        if let (Some(delta_epsilon), Some(relaxation_time)) = (d, t) {
            let pole = Pole::Debye {
                delta_epsilon,
                relaxation_time,
            };
            check_resolved(
                ck,
                &p.relaxation_time,
                &format!("{key}.relaxation_time"),
                &pole,
                dt,
                1.0,
            );
            out.poles.push(pole);
        }
    }
    if out.poles.len() > MAX_POLES {
        ck.error(
            spec,
            path,
            format!(
                "{} poles: a material takes at most {MAX_POLES} (lorentz, drude and debye together)",
                out.poles.len()
            ),
        );
    }
    if let (Some(c), false, true) = (&m.conformal, pec, out.poles.is_empty()) {
        ck.error(
            c,
            &format!("{path}.conformal"),
            "`conformal` applies to PEC materials (`pec = true`) and to materials with poles (a metal's curved surfaces); remove it",
        );
    }
    if !pec
        && m.epsilon.is_none()
        && m.conductivity.is_none()
        && m.library.is_none()
        && !has_poles
        && m.mu.is_none()
        && m.magnetic_conductivity.is_none()
    {
        ck.error(
            spec,
            path,
            "a material needs `epsilon`, `conductivity`, `mu`, `magnetic_conductivity`, poles (`lorentz`, `drude`, `debye`), `library` or `pec = true`",
        );
    }
    (ck.problems.len() == before).then_some(out)
}

/// An error when the time step cannot resolve `pole`: its rate (w0, wp / `scale`, 1/tau) times
/// dt beyond [`MAX_POLE_OMEGA_DT`].
fn check_resolved(
    ck: &mut Checker,
    at: &Spanned<f64>,
    key: &str,
    pole: &Pole,
    dt: Option<f64>,
    scale: f64,
) {
    let Some(dt) = dt else { return };
    let wdt = pole_omega_dt(pole, dt) / scale;
    if wdt > MAX_POLE_OMEGA_DT {
        let what = match pole {
            Pole::Lorentz { .. } => "w0 dt (the resonance)",
            Pole::Drude { .. } => "wp dt / sqrt(epsilon) (the plasma edge)",
            Pole::Debye { .. } => "dt / tau (the relaxation)",
        };
        ck.error(
            at,
            key,
            format!(
                "the time step cannot resolve this pole: {what} = {} at dt = {} s, and the update is accurate only up to {}; make the cells about {}x smaller",
                placement::num(wdt),
                placement::num(dt),
                MAX_POLE_OMEGA_DT,
                placement::num((wdt / MAX_POLE_OMEGA_DT).ceil())
            ),
        );
    }
}
