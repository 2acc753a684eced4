//! Scene files: reading the TOML, checking it, and turning it into a [`crate::model::Model`].
//!
//! Reading is strict (unknown keys are errors) and every problem names the file, the line and
//! column, the key, what was given and what is allowed. Reading (`read`) and the checks after
//! it (`resolve`) both collect every problem before reporting, and the checks run on whatever
//! could be read, so a user fixes all mistakes in one pass.

mod diagnostics;
mod read;
mod resolve;
pub mod schema;

pub use diagnostics::{Diagnostic, SceneError};
pub use resolve::{resolve, MAX_COURANT};

use crate::model::Model;
use std::path::Path;

/// The largest scene file read: far above any scene written by hand or by a script (a
/// B-scan's positions, a material table), and a bound on what a wrong path (a device such as
/// `/dev/zero`) makes yee read. Pipes are read too (`yee run <(make-scene)`), so the bound is
/// on bytes read, not on the kind of file.
pub const MAX_SCENE_BYTES: u64 = 64 << 20;

/// Read, parse and check a scene file; on success return the model and any warnings.
pub fn load(path: &Path) -> Result<(Model, Vec<String>), SceneError> {
    use std::io::Read;
    let file = path.display().to_string();
    let io = |e: std::io::Error| SceneError::Io {
        file: file.clone(),
        message: e.to_string(),
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SCENE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(io)?;
    if bytes.len() as u64 > MAX_SCENE_BYTES {
        return Err(io(std::io::Error::other(format!(
            "it is larger than {} MiB, which no scene is: is this the scene file?",
            MAX_SCENE_BYTES >> 20
        ))));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        SceneError::single(
            &file,
            "",
            0,
            "",
            format!(
                "the file is not valid UTF-8 (invalid byte at offset {}); save it as UTF-8 text",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    load_str(&text, &file)
}

/// Parse and check scene text; `file` is used in messages only.
pub fn load_str(text: &str, file: &str) -> Result<(Model, Vec<String>), SceneError> {
    if text.trim().is_empty() {
        return Err(SceneError::single(
            file,
            text,
            0,
            "",
            "the scene file is empty: it needs at least a [simulation] table with cell_size and size"
                .to_string(),
        ));
    }
    // Every problem in one pass: what reading found, then what the checks after it find in the
    // parts that could be read.
    let (parsed, mut problems) = read::read(text, file);
    let result = match &parsed {
        Some(scene) => resolve(scene, text, file),
        None => Err(SceneError::Invalid {
            file: file.to_string(),
            problems: Vec::new(),
        }),
    };
    match result {
        Ok(ok) if problems.is_empty() => Ok(ok),
        Ok(_) => Err(SceneError::invalid(file, problems)),
        Err(SceneError::Invalid { problems: more, .. }) => {
            problems.extend(more);
            Err(SceneError::invalid(file, problems))
        }
        Err(e) => Err(e),
    }
}

/// One line per material of the scene (not vacuum, pec or smoothing mixtures) saying its
/// permittivity (and permeability, when magnetic) at the centre frequency of each source's
/// waveform, for `yee check`: "glass: eps = 2.2500 at 200 THz".
pub fn material_lines(model: &Model) -> Vec<String> {
    let mut freqs: Vec<f64> = model
        .sources
        .iter()
        .map(|s| s.waveform)
        .chain(model.tfsf.iter().map(|t| t.waveform))
        .map(|w| w.centre_frequency())
        .filter(|f| f.is_finite() && *f > 0.0)
        .collect();
    freqs.sort_by(f64::total_cmp);
    freqs.dedup();
    let complex = |z: num_complex::Complex64| {
        if z.im == 0.0 {
            format!("{:.4}", z.re)
        } else {
            format!(
                "{:.4} {} {:.4}i",
                z.re,
                if z.im < 0.0 { "-" } else { "+" },
                z.im.abs()
            )
        }
    };
    let mut out = Vec::new();
    for m in &model.materials.materials {
        if m.mixture || m.name == "vacuum" || m.name == "pec" {
            continue;
        }
        if m.pec {
            out.push(format!("{}: PEC", m.name));
            continue;
        }
        if freqs.is_empty() {
            out.push(format!(
                "{}: eps_inf = {} (no source to evaluate eps(f) at)",
                m.name, m.epsilon
            ));
            continue;
        }
        for &f in &freqs {
            let mut line = format!(
                "{}: eps = {} at {}",
                m.name,
                complex(m.epsilon_at(f)),
                hz(f)
            );
            if m.is_magnetic() {
                line += &format!(", mu = {}", complex(m.mu_at(f)));
            }
            out.push(line);
        }
    }
    out
}

/// One line per `[[geometry]]` entry saying how many E components it holds (a PEC) or paints
/// (a material), for `yee check`, so that an object too thin or too small for the grid shows
/// as 0: `geometry[2] (pec): holds 1240 E components`. Counted before later objects paint
/// over it; a non-box whose bounds span more than 1e8 grid points is not counted.
pub fn object_lines(model: &Model) -> Vec<String> {
    const COUNT_LIMIT: u64 = 100_000_000;
    let mut out: Vec<String> = Vec::new();
    let mut at = 0;
    while at < model.objects.len() {
        let n = model.objects[at].geometry;
        // A thin slanted wire is several objects from one entry.
        let pieces: Vec<&crate::model::Object> = model.objects[at..]
            .iter()
            .take_while(|o| o.geometry == n)
            .collect();
        at += pieces.len();
        let material = &model.materials.materials[pieces[0].material as usize];
        let count = crate::model::e_points_inside(&model.grid, &pieces, COUNT_LIMIT);
        let verb = if material.pec { "holds" } else { "paints" };
        let what = match count {
            Some(k) => format!("{verb} {k} E component{}", if k == 1 { "" } else { "s" }),
            None => format!(
                "{verb} E components over more than {COUNT_LIMIT} grid points (not counted)"
            ),
        };
        let smoothed = count == Some(0)
            && !material.staircased()
            && model.smoothing.is_some()
            && pieces.iter().any(|o| o.has_volume());
        let note = if smoothed {
            "; smoothing gives it its share of the cells it crosses"
        } else {
            ""
        };
        out.push(format!("geometry[{n}] (`{}`): {what}{note}", material.name));
    }
    out
}

/// A frequency with an SI prefix: "200 THz".
fn hz(f: f64) -> String {
    let (scale, unit) = [
        (1e15, "PHz"),
        (1e12, "THz"),
        (1e9, "GHz"),
        (1e6, "MHz"),
        (1e3, "kHz"),
    ]
    .into_iter()
    .find(|(s, _)| f >= *s)
    .unwrap_or((1.0, "Hz"));
    let v = format!("{:.4}", f / scale);
    let v = v.trim_end_matches('0').trim_end_matches('.');
    format!("{v} {unit}")
}
