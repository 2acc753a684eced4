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
    for (w, k) in sources.iter().filter_map(|s| s.transverse_k).enumerate() {
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
