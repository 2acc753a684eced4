//! The Bloch phases of the periodic axes: those `[boundaries]` writes, and those an oblique
//! plane wave sets itself (`bloch = "auto"`).

use super::boundaries::BlochEntry;
use super::Checker;
use crate::model::*;
use crate::scene::schema::*;

/// Phases that differ by less than this many periods are one phase (a wave's phase is
/// computed from its direction, a written one parsed from decimal).
const SAME_PHASE: f64 = 1e-9;

/// The Bloch phase of each axis ([`Boundaries::bloch`]): the written ones, and on each axis
/// an oblique plane wave tilts towards, k_t L / (2 pi) with the wave's k_t at its centre
/// frequency. A wave's phase that contradicts a written one or another wave's, and a TF/SF
/// source in a cell with a phase, are reported.
pub(super) fn phases(
    scene: &SceneFile,
    ck: &mut Checker,
    written: &[Option<BlochEntry>; 3],
    sources: &[Source],
    tfsf: Option<&Tfsf>,
    grid: &Grid,
) -> Option<[f64; 3]> {
    let mut phase = [0, 1, 2].map(|a| written[a].as_ref().map_or(0.0, |e| e.phase));
    // Which wave set each axis (its index among the oblique waves).
    let mut set_by: [Option<usize>; 3] = [None; 3];
    let size = grid.size();
    // The oblique waves' entries in the file, in the order their sources were made.
    let mut entries = scene.source.entries.iter().filter(|(_, s)| {
        let s = s.get_ref();
        s.kind.get_ref() == "plane_wave"
            && s.direction
                .as_ref()
                .is_some_and(|d| matches!(d.get_ref(), toml::Value::Array(_)))
    });
    let mut ok = true;
    // A wave's second sheet (`partner`) is the same wave: one entry, one phase.
    let waves = sources.iter().filter(|s| !s.partner);
    for (w, k) in waves.filter_map(|s| s.transverse_k).enumerate() {
        let entry = entries.next();
        for t in (0..3).filter(|&t| k[t] != 0.0) {
            let p = k[t] * size[t] / (2.0 * std::f64::consts::PI);
            let (key, at) = entry.map_or_else(
                || ("source".to_string(), 0),
                |(n, s)| {
                    let d = s.get_ref().direction.as_ref();
                    let at = d.map_or(s.span().start, |d| d.span().start);
                    (format!("source[{n}].direction"), at)
                },
            );
            let axis = Axis::ALL[t].name();
            if let Some(e) = &written[t] {
                if (e.phase - p).abs() > SAME_PHASE {
                    ck.error_at(at, &key, format!(
                        "the oblique wave sets the Bloch phase along {axis} to {p:.6} (k_t L / 2 pi at its centre frequency), but {} writes {}: leave the phase out (`type = \"periodic\"`) and the wave sets it",
                        e.key, e.phase
                    ));
                    ok = false;
                }
            }
            match set_by[t] {
                Some(_) if (phase[t] - p).abs() > SAME_PHASE => {
                    ck.error_at(at, &key, format!(
                        "two oblique waves set different Bloch phases along {axis} ({} and {p:.6}): a Bloch cell has one phase per axis, so its waves share their transverse wavevector; run one wave per scene",
                        phase[t]
                    ));
                    ok = false;
                }
                _ => {
                    phase[t] = p;
                    set_by[t] = Some(w);
                }
            }
        }
    }
    let bloch = (0..3).any(|a| phase[a].fract() != 0.0);
    if let (true, Some(t)) = (bloch, tfsf) {
        let _ = t;
        let at = scene
            .source
            .entries
            .iter()
            .find(|(_, s)| s.get_ref().kind.get_ref() == "tfsf");
        let (key, offset) = at.map_or(("source".to_string(), 0), |(n, s)| {
            (format!("source[{n}]"), s.span().start)
        });
        ck.error_at(offset, &key, "a TF/SF source in a Bloch cell (a periodic axis with a phase): its incident wave would not repeat with the cell's phase; use a plane_wave source (oblique or along an axis) instead");
        ok = false;
    }
    ok.then_some(phase)
}

/// Complete each diffraction monitor of `fluxes` ([`Diffraction`]) once the Bloch `phases`
/// are known: its plane must span the periodic cell on a uniform grid, its source is the
/// one-way plane wave whose sheet is parallel to it, its medium is the material at its
/// centre, and its orders are those that propagate there at some of its frequencies.
#[allow(clippy::too_many_arguments)] // the monitors and everything that places them
pub(super) fn diffraction(
    scene: &SceneFile,
    ck: &mut Checker,
    fluxes: &mut [Flux],
    sources: &[Source],
    phases: [f64; 3],
    grid: &Grid,
    faces: &[[BoundaryKind; 2]; 3],
    (objects, table): (&[Object], &MaterialTable),
) -> bool {
    let mut ok = true;
    for f in fluxes.iter_mut() {
        let Some(pending) = &f.diffraction else {
            continue;
        };
        let key = pending.place.clone();
        let at = monitor_offset(scene, &f.name);
        let patch = f.patches[0];
        let a = patch.axis as usize;
        let in_plane = patch.in_plane();
        if let Some(&t) = in_plane
            .iter()
            .find(|&&t| faces[t][0] != BoundaryKind::Periodic || grid.lines[t].is_some())
        {
            let why = if faces[t][0] != BoundaryKind::Periodic {
                "is not periodic"
            } else {
                "is graded (its orders need equal cells)"
            };
            ck.error_at(at, &format!("{key}.plane"), format!(
                "a diffraction plane spans the periodic cell, but its in-plane axis {} {why}: make {} periodic (or Bloch) with uniform cells, or use a flux monitor",
                Axis::ALL[t].name(), Axis::ALL[t].name()
            ));
            ok = false;
            continue;
        }
        // The incident wave: a one-way sheet parallel to the plane.
        let source = sources.iter().position(|s| {
            s.magnetic.as_ref().is_some_and(|m| {
                3 - s.component.axis() as usize - (m.component.axis() as usize) == a
            }) && s.mode.is_none()
        });
        let Some(source) = source else {
            ck.error_at(at, &key, format!(
                "a diffraction monitor's orders are fractions of the incident power: the scene needs a one-way plane_wave travelling along {} (its sheet parallel to the plane)",
                Axis::ALL[a].name()
            ));
            ok = false;
            continue;
        };
        let s = &sources[source];
        let sign = s.travel_sign(a).expect("a one-way sheet");
        let ahead = (patch.index as f64 - s.cells[a][0] as f64) * sign > 0.0;
        let toward = if ahead { sign } else { -sign };
        let centre = [0, 1, 2].map(|t| {
            if t == a {
                patch.index as f64
            } else {
                grid.shape[t] as f64 / 2.0
            }
        });
        let point = grid.position(Component::ALL[in_plane[0]], centre);
        let material = objects
            .iter()
            .rev()
            .find(|o| o.contains(point))
            .map_or(0, |o| o.material);
        let size = grid.size();
        let two_pi = 2.0 * std::f64::consts::PI;
        // Order (0, 0) is the specular one: the incident wave's own transverse wavevector
        // where it has one, else the reduced phase's (the order nearest the normal).
        let bloch_k = match sources[source].transverse_k {
            Some(k) => in_plane.map(|t| k[t]),
            None => in_plane.map(|t| two_pi * (phases[t] - phases[t].round()) / size[t]),
        };
        let medium = &table.materials[material as usize];
        let counts = patch.count;
        let range = |n: usize| -((n as i64 - 1) / 2)..=(n as i64 / 2);
        let mut orders = Vec::new();
        for mo in range(counts[0]) {
            for no in range(counts[1]) {
                let k = [
                    bloch_k[0] + two_pi * mo as f64 / size[in_plane[0]],
                    bloch_k[1] + two_pi * no as f64 / size[in_plane[1]],
                ];
                let kt = k[0].hypot(k[1]);
                let propagates = f
                    .frequencies
                    .iter()
                    .any(|&fr| kt < two_pi * fr / C0 * medium.index_at(fr));
                if propagates {
                    orders.push([mo, no]);
                }
            }
        }
        f.diffraction = Some(std::sync::Arc::new(Diffraction {
            place: key,
            orders,
            bloch_k,
            material,
            toward,
            source,
            incident: Default::default(),
        }));
    }
    ok
}

/// Where the monitor named `name` gives its plane in the file (its entry's start without
/// one, 0 if it is not found).
fn monitor_offset(scene: &SceneFile, name: &str) -> usize {
    scene
        .monitor
        .entries
        .iter()
        .find(|(_, m)| m.get_ref().name.get_ref() == name)
        .map_or(0, |(_, m)| {
            m.get_ref()
                .plane
                .as_ref()
                .map_or(m.span().start, |p| p.span().start)
        })
}
