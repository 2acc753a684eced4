//! Solving a model's mode sources and mode monitors at run start, once: the sources' sheet
//! weights and the monitors' unit-power bases, into the model's `OnceLock`s.
//!
//! A mode source is a one-way Huygens pair, the plane wave's ([`crate::scene`]'s `one_way`)
//! with a profile: with the mode's transverse E and H (H from [`CrossSection::magnetic`]), the
//! electric sheet on the E plane carries J_u = -H_v / d_e and J_v = H_u / d_e, the magnetic sheet
//! half a cell upstream M_v = -s E_u / d and M_u = s E_v / d (s = +1 along +axis), J leading M
//! by the mode's travel time over that half cell, beta d / (2 w). On the grid these are the
//! discrete TF/SF corrections of the mode itself, so the backward waves of the two sheets cancel
//! exactly at the centre frequency, for any cross-section (the cell's own cb scales J).

use super::basis::box_order;
use super::{Plane, PlaneError};
use crate::model::{ModeChoice, ModeMonitor, ModeSheet, Model, PlaneBasis, SolvedSheet};
use rayon::prelude::*;

/// Frequencies a mode monitor solves one after another, each from the last one's modes
/// ([`solve_monitor`]).
const FREQUENCIES_PER_RUN: usize = 8;

/// Solve every mode source and mode monitor of `model` that is not solved yet. The error
/// lists every problem, each naming the scene key it comes from.
pub fn prepare(model: &Model) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut seen: Vec<*const ModeSheet> = Vec::new();
    for s in &model.sources {
        let Some((sheet, _)) = &s.mode else { continue };
        if seen.contains(&std::sync::Arc::as_ptr(sheet)) || sheet.solved.get().is_some() {
            continue;
        }
        seen.push(std::sync::Arc::as_ptr(sheet));
        match solve_sheet(model, sheet) {
            Ok(solved) => {
                let _ = sheet.solved.set(solved);
            }
            Err(e) => problems.push(format!("{}: {e}", sheet.place)),
        }
    }
    for f in &model.fluxes {
        let Some(monitor) = &f.mode else { continue };
        if monitor.basis.get().is_some() {
            continue;
        }
        let plane = Plane::of_patch(&f.patches[0]);
        match solve_monitor(model, plane, monitor, &f.frequencies) {
            Ok(basis) => {
                let _ = monitor.basis.set(basis);
            }
            Err(e) => problems.push(format!("{}: {e}", monitor.place)),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// A mode monitor's basis at each of its frequencies: in runs of [`FREQUENCIES_PER_RUN`]
/// neighbouring frequencies (in parallel), each frequency of a run started from the previous
/// one's modes (about one Arnoldi cycle each instead of several). The runs are fixed by the
/// frequencies alone, not the threads, so every thread count gives the same bits.
fn solve_monitor(
    model: &Model,
    plane: Plane,
    monitor: &ModeMonitor,
    frequencies: &[f64],
) -> Result<Vec<PlaneBasis>, PlaneError> {
    let parts: Vec<Vec<PlaneBasis>> = frequencies
        .par_chunks(FREQUENCIES_PER_RUN)
        .map(|chunk| {
            let mut warm: Vec<crate::modes::Mode> = Vec::new();
            chunk
                .iter()
                .map(|&f| {
                    let (basis, modes) = plane.basis_near(model, f, monitor.count, &warm)?;
                    warm = modes;
                    Ok(basis)
                })
                .collect::<Result<Vec<_>, PlaneError>>()
        })
        .collect::<Result<_, _>>()?;
    Ok(parts.into_iter().flatten().collect())
}

/// The index of the mode `choice` asks for among modes of effective indices `neff`.
fn chosen(choice: ModeChoice, neff: &[f64]) -> usize {
    match choice {
        ModeChoice::Index(i) => i,
        ModeChoice::Neff(target) => (0..neff.len())
            .min_by(|&a, &b| {
                (neff[a] - target)
                    .abs()
                    .total_cmp(&(neff[b] - target).abs())
            })
            .unwrap_or(0),
    }
}

/// The n_eff of the modes that carry power (beta^2 > 0), for messages.
fn listed(neff: &[f64], beta2: impl Iterator<Item = f64>) -> String {
    let list: Vec<String> = neff
        .iter()
        .zip(beta2)
        .filter(|(_, b)| *b > 0.0)
        .map(|(n, _)| format!("{n:.4}"))
        .collect();
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

/// A mode source's weights: the chosen mode at the centre frequency, checked to carry power
/// down to the lowest frequency of the source's band.
fn solve_sheet(model: &Model, sheet: &ModeSheet) -> Result<SolvedSheet, String> {
    let plane = sheet.plane;
    let f = sheet.frequency;
    let count = match sheet.choice {
        ModeChoice::Index(i) => i + 1,
        ModeChoice::Neff(_) => 6,
    };
    let s = plane.solved(model, f, count).map_err(|e| e.to_string())?;
    let index = chosen(sheet.choice, &s.neff);
    let carrying = s.modes.iter().filter(|m| m.beta2 > 0.0).count();
    if index >= s.modes.len() || s.modes[index].beta2 <= 0.0 {
        return Err(format!(
            "mode {index} does not propagate at {f:.6e} Hz: the plane carries {carrying} mode(s) there (n_eff {}); choose a lower index or a wider plane",
            listed(&s.neff, s.modes.iter().map(|m| m.beta2))
        ));
    }
    // The band's low edge: the mode must still carry real power there (not just have an n_eff).
    let low = plane
        .solved(model, sheet.band_low, index + 1)
        .map_err(|e| e.to_string())?;
    if low.modes.get(index).is_none_or(|m| m.beta2 <= 0.0) {
        return Err(format!(
            "mode {index} is cut off at {:.6e} Hz, the low edge of the source's band (it carries no power there; modes that do: n_eff {}): raise the band or narrow it",
            sheet.band_low,
            listed(&low.neff, low.modes.iter().map(|m| m.beta2))
        ));
    }
    let mode = &s.modes[index];
    let h = s.cs.magnetic(mode, s.k0);
    let g = &model.grid;
    let a = plane.axis;
    let d_e = g.dual(a, plane.index, false);
    let d = g.primal(a, sheet.behind as isize);
    let sign = sheet.sign as f64;
    let w = 2.0 * std::f64::consts::PI * f;
    // A broadband source's node takes the sign that couples it positively to the centre's mode.
    let flip = if sheet.frequency != sheet.centre {
        // The node's basis from this solve; the centre's needs its own.
        let node = plane.basis_of(model, f, &s);
        let centre = plane
            .basis(model, sheet.centre, count)
            .map_err(|e| e.to_string())?;
        let neff: Vec<f64> = centre.modes.iter().map(|m| m.neff).collect();
        let (a, b) = (
            &centre.modes[chosen(sheet.choice, &neff)],
            &node.modes[index],
        );
        if super::basis::coupling(model, &plane, a, b) < 0.0 {
            -1.0
        } else {
            1.0
        }
    } else {
        1.0
    };
    let order = |values: &[f64], scale: f64| box_order(&plane, &s.cs, values, flip * scale);
    Ok(SolvedSheet {
        index,
        neff: s.neff[index],
        advance: s.beta[index] * d / (2.0 * w),
        weights: [
            [order(&h[1], -1.0 / d_e), order(&mode.e[0], -sign / d)],
            [order(&h[0], 1.0 / d_e), order(&mode.e[1], sign / d)],
        ],
    })
}

/// How well a mode source's one profile (solved at its centre frequency) launches its mode
/// across its band ([`purity`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Purity {
    /// The mode's index and n_eff at the centre frequency.
    pub index: usize,
    /// Its n_eff there.
    pub neff: f64,
    /// At the band's low and high edge (Hz): the fraction of the launched power that goes
    /// into the mode there (1 at the centre frequency; the rest goes into other modes and
    /// radiation, and leaks backwards).
    pub edges: [(f64, f64); 2],
}

impl Purity {
    /// `yee check`'s line for source `name`.
    pub fn line(&self, name: &str) -> String {
        format!(
            "mode source `{name}`: mode {} (n_eff {:.4}); its centre-frequency profile puts {:.3} % of the power into the mode at {:.4e} Hz and {:.3} % at {:.4e} Hz, the band's edges",
            self.index,
            self.neff,
            100.0 * self.edges[0].1,
            self.edges[0].0,
            100.0 * self.edges[1].1,
            self.edges[1].0
        )
    }
}

/// The purity of mode source `sheet` of `model` over its band: the centre frequency's mode
/// projected on the mode at each edge of the band (the error a single profile implies).
pub fn purity(model: &Model, sheet: &ModeSheet) -> Result<Purity, String> {
    let solved = match sheet.solved.get() {
        Some(s) => s.clone(),
        None => solve_sheet(model, sheet)?,
    };
    let count = solved.index + 1;
    let plane = sheet.plane;
    let basis = |f: f64| plane.basis(model, f, count).map_err(|e| e.to_string());
    let centre = basis(sheet.frequency)?;
    let own = &centre.modes[solved.index];
    let high = 2.0 * sheet.frequency - sheet.band_low;
    let mut edges = [(sheet.band_low, 0.0), (high, 0.0)];
    for edge in &mut edges {
        let b = basis(edge.0)?;
        // The same mode at the edge: the one the centre's couples to most.
        edge.1 = b
            .modes
            .iter()
            .map(|m| super::basis::coupling(model, &plane, own, m).powi(2))
            .fold(0.0, f64::max);
    }
    Ok(Purity {
        index: solved.index,
        neff: solved.neff,
        edges,
    })
}
