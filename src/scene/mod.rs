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
/// as 0: `geometry[2] (pec): holds 1240 E components`. An imported shape says what it is
/// (polygons and vertices, triangles, voxels) and its bounding box; a voxel grid counts each of
/// its materials. Counted before later objects paint over it; a sphere, cylinder or voxel
/// material whose bounds span more than 1e8 grid points is not counted (boxes, polygons and
/// meshes are counted a line of points at a time, any size).
pub fn object_lines(model: &Model) -> Vec<String> {
    const COUNT_LIMIT: u64 = 100_000_000;
    let mut out: Vec<String> = Vec::new();
    let mut at = 0;
    while at < model.objects.len() {
        let n = model.objects[at].geometry;
        // A thin slanted wire is several objects from one entry, a voxel grid one per value.
        let pieces: Vec<&crate::model::Object> = model.objects[at..]
            .iter()
            .take_while(|o| o.geometry == n)
            .collect();
        at += pieces.len();
        let what = imported_shape(model, &pieces);
        if matches!(pieces[0].shape, crate::model::Shape::Voxels { .. }) {
            let each: Vec<String> = pieces
                .iter()
                .map(|o| {
                    let name = &model.materials.materials[o.material as usize].name;
                    match crate::model::e_points_inside(&model.grid, &[o], COUNT_LIMIT) {
                        Some(k) => format!("`{name}` paints {k}"),
                        None => format!("`{name}` paints more than {COUNT_LIMIT} (not counted)"),
                    }
                })
                .collect();
            out.push(format!(
                "geometry[{n}] ({what}): E components: {}",
                each.join(", ")
            ));
            continue;
        }
        let material = &model.materials.materials[pieces[0].material as usize];
        let count = crate::model::e_points_inside(&model.grid, &pieces, COUNT_LIMIT);
        let verb = if material.pec { "holds" } else { "paints" };
        let counted = match count {
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
        let what = if what.is_empty() {
            format!("`{}`", material.name)
        } else {
            format!("`{}`, {what}", material.name)
        };
        let staircased = staircased_surface_note(model, &pieces);
        out.push(format!(
            "geometry[{n}] ({what}): {counted}{note}{staircased}"
        ));
    }
    out
}

/// For [`object_lines`]: where an object of a dispersive metal has faces off the grid planes
/// and its averages with some material are cell resonances ([`crate::model::smoothing`]), a
/// note naming those materials: its surface against them is staircased there, placed to
/// within half a cell. Empty otherwise.
fn staircased_surface_note(model: &Model, pieces: &[&crate::model::Object]) -> String {
    let Some(smoothing) = &model.smoothing else {
        return String::new();
    };
    if pieces
        .iter()
        .all(|o| o.faces_along_grid_planes() || !o.has_volume())
    {
        return String::new();
    }
    let m = pieces[0].material;
    let mut partners: Vec<u8> = smoothing
        .dispersive_pairs
        .iter()
        .filter(|(_, resonant)| resonant.iter().any(|&r| r))
        .filter_map(|(&(a, b), _)| match (a == m, b == m) {
            (true, _) => Some(b),
            (_, true) => Some(a),
            _ => None,
        })
        .collect();
    if partners.is_empty() {
        return String::new();
    }
    partners.sort_unstable();
    // A pair of conformal materials (the default) has surface ports at the curved surface
    // instead (`crate::model::SurfacePorts`); only the planar faces the ports do not reach
    // are staircased there, which a box's faces on grid planes never are.
    let table = &model.materials.materials;
    let conformal = |id: u8| table[id as usize].poles.is_empty() || table[id as usize].conformal;
    if conformal(m) {
        partners.retain(|&p| !conformal(p));
    }
    if partners.is_empty() {
        return String::new();
    }
    let names: Vec<String> = partners
        .iter()
        .map(|&p| format!("`{}`", model.materials.materials[p as usize].name))
        .collect();
    format!(
        "; its surface off the grid planes is staircased against {} (averaging a metal with \
         it there makes a cell resonance), placed to within half a cell: refine the cells \
         to converge it (docs/geometry.md)",
        names.join(", ")
    )
}

/// What an imported shape is, for [`object_lines`]: "3 polygons, 14 vertices, x -2 to 2 um,
/// ..."; empty for a box, sphere or cylinder.
fn imported_shape(model: &Model, pieces: &[&crate::model::Object]) -> String {
    use crate::model::Shape;
    let unit = crate::model::length_unit_metres(&model.length_unit).unwrap_or(1.0);
    let (mut lo, mut hi) = pieces[0].bounds();
    for o in &pieces[1..] {
        let (l, h) = o.bounds();
        for a in 0..3 {
            lo[a] = lo[a].min(l[a]);
            hi[a] = hi[a].max(h[a]);
        }
    }
    let bbox = (0..3)
        .map(|a| {
            format!(
                "{} {} to {}",
                ["x", "y", "z"][a],
                shorter(lo[a] / unit),
                shorter(hi[a] / unit)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match &pieces[0].shape {
        Shape::Prism(p) => format!(
            "{}, {}, {bbox} {}",
            plural(p.polygons.len(), "polygon"),
            plural(p.polygons.iter().map(|v| v.len()).sum(), "vertex")
                .replace("vertexs", "vertices"),
            model.length_unit
        ),
        Shape::Mesh(m) => format!(
            "{}, {bbox} {}",
            plural(m.triangles.len(), "triangle"),
            model.length_unit
        ),
        Shape::Voxels { grid, .. } => format!(
            "{} x {} x {} voxels, {bbox} {}",
            grid.shape[0], grid.shape[1], grid.shape[2], model.length_unit
        ),
        _ => String::new(),
    }
}

/// `x` with at most 6 significant digits and no trailing zeros.
fn shorter(x: f64) -> String {
    let s = format!("{:.6}", x);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
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
