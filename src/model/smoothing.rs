//! Subpixel smoothing of material interfaces.
//!
//! A staircased interface moves by up to half a cell and makes the error first order in the
//! cell size. Smoothing gives each E component whose cell straddles an interface an effective
//! permittivity from the fractions of the two materials in its cell and the orientation of the
//! interface (the diagonal of the averaging of Farjadpour et al., Opt. Lett. 31, 2972 (2006),
//! which Meep uses):
//! `1/eps_c = w <1/eps> + (1 - w) / <eps>` with `w = n_c^2`,
//! so a component parallel to the interface sees the mean permittivity and a component normal
//! to it the mean of the inverse. Conductivity is averaged by fraction. PEC is never smoothed.
//!
//! Dispersive materials get the same average at every frequency, where it is safe. A pair with
//! a dispersive side has, per (fraction, orientation), a series mixture
//! ([`Material::series`]): the two materials and their mean by fraction (eps_inf averaged,
//! each material's poles with their strength times its fraction) in series with weights
//! `w f`, `w (1 - f)` and `1 - w`. Every part keeps its own E and poles and is driven by the
//! same curl H, and the cell's E is the weighted mean of the parts', so
//! `1/eps(w) = w <1/eps(w)> + (1 - w) / <eps(w)>` holds at every frequency, pole by pole,
//! with no fit. A component parallel to an interface along a grid plane (a film, a layer, a
//! box's face) gets the mean by fraction itself, the exact average there.
//!
//! A mixture is used only where it is no cell resonance ([`resonates`]): a harmonic mean of a
//! metal (eps near -25) and a dielectric has a pole and a linear mean a zero at some
//! frequency below the metal's plasma frequency, and a surface cell at either absorbs (a
//! tangential field in the pole, a normal one in the zero). Measured on a gold nanosphere at
//! 2 nm cells: with every component mixed by fraction, 2.4 times Mie's extinction at 800 nm;
//! with the parallel ones mixed, 1.4 times; with series mixtures everywhere, the scattering
//! within 2 % of Mie over 400-800 nm but the absorption twice Mie's at 800 nm; staircased,
//! within 16 %. So two dielectrics (a Debye soil, a Lorentz glass, against air) are smoothed
//! on every surface with these mixtures, and a metal's are only at a plane interface along a
//! grid plane: there a component parallel to it gets the mean by fraction and a component
//! normal to it the harmonic mean (the two materials in series), each the exact average for
//! its field (tangential E and normal D are continuous across a plane), so a metal box's
//! faces, a film's and a gap's sit where they are drawn for every component. A gap plasmon
//! between metal faces a quarter cell off the grid has the exact n_eff within the grid's own
//! error (8e-4) where the staircase was 0.025 off (`modes::tests`). A metal's curved surface
//! gets the full averaged tensor instead, as passive surface ports ([`super::ports`], whose
//! models are this table's mean and series entries of the pair: [`Smoothing::port_models`]);
//! its cells keep their centre's material in the table, which only the mode solver reads
//! there. Meep leaves every dispersive interface staircased and Tidy3D staircases metals by
//! default. A pair whose poles together exceed [`super::MAX_POLES`] has no mixtures: its
//! cells keep their centre's material.
//!
//! Mixtures live in the same one-byte material table as the scene's materials: fractions and
//! orientations are quantised, and every (pair, fraction, orientation) gets an entry when the
//! model is resolved, so both backends keep their u8 ids and coefficient tables unchanged.

use super::materials::{Material, MaterialTable, MAX_MATERIALS};
use std::collections::HashMap;

/// How fine the quantisation is, and where each material pair's mixtures start in the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Smoothing {
    /// Fraction levels: a fraction f of the pair's first material is stored as round(f L).
    pub fraction_levels: usize,
    /// Orientation levels: w = n_c^2 is stored as round(w L).
    pub orientation_levels: usize,
    /// First table index of each (lower id, higher id) pair's mixtures.
    pub pairs: HashMap<(u8, u8), usize>,
    /// The pairs of which a material has poles, with one flag per mixture (in table order):
    /// true where the mixture is a cell resonance (its |eps| leaves its materials' range below
    /// the grid's top frequency) and is not used (see the module documentation).
    pub dispersive_pairs: HashMap<(u8, u8), Vec<bool>>,
}

impl Smoothing {
    /// Add mixture entries for every pair of the non-PEC materials in `used` to `table` (but
    /// pairs with more poles together than a material takes), as finely as the one-byte table
    /// allows; None when even the coarsest levels do not fit. `top` (Hz) is the highest
    /// frequency the grid carries, up to which a dispersive pair's mixtures are checked for
    /// cell resonances.
    pub fn build(table: &mut MaterialTable, used: &[u8], top: f64) -> Option<Smoothing> {
        let mut ids: Vec<u8> = used
            .iter()
            .copied()
            .filter(|&m| !table.materials[m as usize].staircased())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let pairs: Vec<(u8, u8)> = ids
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| ids[i + 1..].iter().map(move |&b| (a, b)))
            .filter(|&(a, b)| {
                let poles = |m: u8| table.materials[m as usize].poles.len();
                poles(a) + poles(b) <= super::MAX_POLES
            })
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let room = MAX_MATERIALS - table.materials.len();
        // Finest first: 16 fractions x 5 orientations, then coarser.
        let (lf, lw) = [(16, 4), (8, 4), (8, 2), (4, 2)]
            .into_iter()
            .find(|(lf, lw)| pairs.len() * (lf - 1) * (lw + 1) <= room)?;
        let mut starts = HashMap::new();
        let mut dispersive_pairs = HashMap::new();
        for (a, b) in pairs {
            starts.insert((a, b), table.materials.len());
            let (ma, mb) = (
                table.materials[a as usize].clone(),
                table.materials[b as usize].clone(),
            );
            let dispersive = ma.is_dispersive() || mb.is_dispersive();
            let mut resonant = Vec::new();
            for qf in 1..lf {
                for qw in 0..=lw {
                    let f = qf as f64 / lf as f64;
                    let w = qw as f64 / lw as f64;
                    let m = if dispersive && qw > 0 {
                        series_mixture(&ma, &mb, f, w)
                    } else {
                        mean_mixture(&ma, &mb, f, w)
                    };
                    if dispersive {
                        resonant.push(resonates(&m, &ma, &mb, top));
                    }
                    table.push(m);
                }
            }
            if dispersive {
                dispersive_pairs.insert((a, b), resonant);
            }
        }
        Some(Smoothing {
            fraction_levels: lf,
            orientation_levels: lw,
            pairs: starts,
            dispersive_pairs,
        })
    }

    /// The table id of the mixture of `a` (fraction `fa` of the cell) and `b`, for a component
    /// with `w` = (normal . component axis)^2 at an interface that lies along a grid plane or
    /// not (`planar`); None when the pair has no mixtures (PEC) or, for a pair with a dispersive
    /// side, where the mixture is a cell resonance, unless the interface is planar and the
    /// component parallel or normal to it (see the module documentation).
    pub fn mixture(&self, a: u8, b: u8, fa: f64, w: f64, planar: bool) -> Option<u8> {
        let (lo, hi, f) = if a < b { (a, b, fa) } else { (b, a, 1.0 - fa) };
        let start = *self.pairs.get(&(lo, hi))?;
        let lf = self.fraction_levels;
        let lw = self.orientation_levels;
        let qf = (f * lf as f64).round() as usize;
        if qf == 0 {
            return Some(hi);
        }
        if qf >= lf {
            return Some(lo);
        }
        let qw = (w.clamp(0.0, 1.0) * lw as f64).round() as usize;
        let entry = (qf - 1) * (lw + 1) + qw;
        match self.dispersive_pairs.get(&(lo, hi)) {
            Some(resonant) if resonant[entry] && !(planar && (qw == 0 || qw == lw)) => None,
            _ => Some((start + entry) as u8),
        }
    }
}

impl Smoothing {
    /// For a cell of a pair that has cell resonances (a metal with poles and a dielectric) with
    /// a fraction `fa` of `a` strictly between the table's levels 0 and 1: the two models of
    /// its surface ports ([`super::SurfacePorts`]), (the mean by fraction, the two materials in
    /// series), the pair's entries for orientations 0 and 1 at that fraction. None for every
    /// other pair and fraction.
    pub fn port_models(&self, a: u8, b: u8, fa: f64) -> Option<(u8, u8)> {
        let (lo, hi, f) = if a < b { (a, b, fa) } else { (b, a, 1.0 - fa) };
        let start = *self.pairs.get(&(lo, hi))?;
        if !self.dispersive_pairs.get(&(lo, hi))?.iter().any(|&r| r) {
            return None;
        }
        let (lf, lw) = (self.fraction_levels, self.orientation_levels);
        let qf = (f * lf as f64).round() as usize;
        if qf == 0 || qf >= lf {
            return None;
        }
        let row = start + (qf - 1) * (lw + 1);
        Some((row as u8, (row + lw) as u8))
    }
}

/// The mixture of `ma` (fraction `f`) and `mb` for a component with `w` = n_c^2: eps from the
/// anisotropic average, conductivity by fraction, each material's poles scaled by its
/// fraction.
fn mean_mixture(ma: &Material, mb: &Material, f: f64, w: f64) -> Material {
    let mean = f * ma.epsilon + (1.0 - f) * mb.epsilon;
    let mean_inv = f / ma.epsilon + (1.0 - f) / mb.epsilon;
    // Only E components are ever given a mixture id, so mu does not enter.
    let poles = ma
        .poles
        .iter()
        .map(|p| p.scaled(f))
        .chain(mb.poles.iter().map(|p| p.scaled(1.0 - f)))
        .collect();
    Material {
        mixture: true,
        poles,
        ..Material::dielectric(
            &format!("{}|{} f={f:.3} w={w:.2}", ma.name, mb.name),
            1.0 / (w * mean_inv + (1.0 - w) / mean),
            f * ma.conductivity + (1.0 - f) * mb.conductivity,
        )
    }
}

/// The anisotropic average of `ma` (fraction `f`) and `mb` for a component with `w` = n_c^2,
/// at every frequency: 1/eps = w (f/eps_a + (1-f)/eps_b) + (1 - w)/<eps>, as a series mixture
/// ([`Material::series`]) of the two materials and their mean by fraction.
fn series_mixture(ma: &Material, mb: &Material, f: f64, w: f64) -> Material {
    let mut m = Material::dielectric(
        &format!("{}|{} f={f:.3} w={w:.2} series", ma.name, mb.name),
        1.0,
        0.0,
    );
    m.mixture = true;
    m.series = vec![
        (ma.clone(), w * f),
        (mb.clone(), w * (1.0 - f)),
        (mean_mixture(ma, mb, f, 0.0), 1.0 - w),
    ];
    m.series.retain(|(_, weight)| *weight > 0.0);
    m
}

/// True when the mixture `m` of `a` and `b` is a cell resonance: somewhere from `top` / 10^6 to
/// `top` (Hz) its permittivity is larger in magnitude than both of its materials' (towards a
/// pole of a harmonic mean) or smaller than both (towards a zero of a linear mean). Mixtures
/// of two dielectrics never are; any mixture of a metal and a dielectric but one by fraction
/// for a parallel component is, somewhere below the metal's plasma frequency.
fn resonates(m: &Material, a: &Material, b: &Material, top: f64) -> bool {
    const SAMPLES: usize = 600;
    (0..=SAMPLES).any(|i| {
        let f = top * 10f64.powf(-6.0 * i as f64 / SAMPLES as f64);
        let (ea, eb) = (a.epsilon_at(f).norm(), b.epsilon_at(f).norm());
        let e = m.epsilon_at(f).norm();
        e > ea.max(eb) || e < ea.min(eb)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_components_see_the_mean_and_normal_ones_the_harmonic_mean() {
        let mut t = MaterialTable::vacuum();
        let glass = t.push(Material::dielectric("glass", 4.0, 0.0));
        let s = Smoothing::build(&mut t, &[0, glass], 1e15).unwrap();
        let parallel = s.mixture(glass, 0, 0.5, 0.0, true).unwrap();
        let normal = s.mixture(0, glass, 0.5, 1.0, true).unwrap();
        assert!((t.materials[parallel as usize].epsilon - 2.5).abs() < 1e-12);
        assert!((t.materials[normal as usize].epsilon - 1.6).abs() < 1e-12);
        assert_eq!(s.mixture(glass, 0, 0.99, 0.0, true), Some(glass));
        assert_eq!(s.mixture(glass, 0, 0.01, 0.0, true), Some(0));
    }

    /// A metal against glass: at a plane interface along a grid plane, the parallel component
    /// sees eps_m f + eps_d (1 - f) and the normal one 1 / (f / eps_m + (1 - f) / eps_d) at
    /// every frequency; a component oblique to it, or a component of a curved surface whose
    /// mixture is a cell resonance, keeps the staircase (None: the centre's material).
    #[test]
    fn a_metal_plane_face_is_averaged_for_parallel_and_normal_components_only() {
        let mut t = MaterialTable::vacuum();
        let glass = t.push(Material::dielectric("glass", 2.25, 0.0));
        let mut silver = Material::dielectric("silver", 1.0, 0.0);
        silver.poles.push(crate::model::dispersion::Pole::Drude {
            frequency: 2.18e15,
            damping: 4.35e12,
        });
        let metal = t.push(silver);
        let s = Smoothing::build(&mut t, &[glass, metal], 1e15).unwrap();
        let (f, freq) = (0.25, 1.934e14);
        let (em, ed) = (t.materials[metal as usize].epsilon_at(freq), 2.25);
        let at = |id: Option<u8>| t.materials[id.unwrap() as usize].epsilon_at(freq);
        // Both are the exact averages, so the bounds are round-off: the mean carries the
        // Drude pole rescaled (plasma frequency times sqrt(f)), whose square loses a few
        // digits against eps_m's 123; the harmonic mean holds the materials themselves.
        let parallel = at(s.mixture(metal, glass, f, 0.0, true));
        let normal = at(s.mixture(metal, glass, f, 1.0, true));
        assert!((parallel - (em * f + ed * (1.0 - f))).norm() < 1e-9 * em.norm());
        assert!((normal - 1.0 / (f / em + (1.0 - f) / ed)).norm() < 1e-12 * em.norm());
        // Below the grid's top frequency (1e15 Hz, where eps_m = -3.75) the mean with a
        // quarter of metal has a zero (at eps_m = -6.75) and the harmonic mean with three
        // quarters a pole (at eps_m = -6.75): cell resonances wherever the interface is not
        // a grid plane.
        assert_eq!(s.mixture(metal, glass, 0.25, 0.5, true), None);
        assert_eq!(s.mixture(metal, glass, 0.25, 0.0, false), None);
        assert_eq!(s.mixture(metal, glass, 0.75, 1.0, false), None);
        assert!(s.mixture(metal, glass, 0.75, 1.0, true).is_some());
    }
}
