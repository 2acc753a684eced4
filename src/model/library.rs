//! The material library: published dispersion fits that a scene names with
//! `{ library = "Au" }`, listed by `yee materials`.

use super::dispersion::Pole;

/// One published fit of a material's permittivity.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryFit {
    /// The name a scene writes (`library = "Au"`).
    pub name: &'static str,
    /// What the material is, in a few words.
    pub description: &'static str,
    /// The band (Hz) where the fit holds.
    pub band: [f64; 2],
    /// The publication the parameters come from.
    pub source: &'static str,
    /// eps_inf.
    pub epsilon: f64,
    /// The poles, in the units of [`Pole`] (Hz, s).
    pub poles: Vec<Pole>,
}

/// Every fit of the library, in the order `yee materials` lists them.
pub fn fits() -> Vec<LibraryFit> {
    vec![LibraryFit {
        name: "water",
        description: "liquid water at 20-25 C, single Debye relaxation",
        band: [1e8, 1e11],
        source: "Kaatze, J. Chem. Eng. Data 34, 371 (1989)",
        epsilon: 4.9,
        poles: vec![Pole::Debye {
            delta_epsilon: 75.0,
            relaxation_time: 9.4e-12,
        }],
    }]
}

/// The fit named `name`; with `band`, the one whose band covers it best. The error says what
/// the library holds and the closest name.
pub fn lookup(name: &str, band: Option<[f64; 2]>) -> Result<LibraryFit, String> {
    let all = fits();
    let mut named: Vec<LibraryFit> = all.iter().filter(|f| f.name == name).cloned().collect();
    if named.is_empty() {
        let names: Vec<&str> = all.iter().map(|f| f.name).collect();
        let hint = names
            .iter()
            .map(|n| {
                (
                    strsim::jaro_winkler(&n.to_lowercase(), &name.to_lowercase()),
                    *n,
                )
            })
            .filter(|(s, _)| *s > 0.7)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        return Err(format!(
            "no material `{name}` in the library (it has {}; `yee materials` lists them){hint}",
            names.join(", ")
        ));
    }
    let Some([lo, hi]) = band else {
        return Ok(named.remove(0));
    };
    // The fit covering most of the requested band.
    let overlap = |f: &LibraryFit| (f.band[1].min(hi) - f.band[0].max(lo)).max(0.0);
    named.sort_by(|a, b| overlap(b).total_cmp(&overlap(a)));
    Ok(named.remove(0))
}
