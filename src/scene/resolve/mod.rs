//! From the scene as written to the resolved [`Model`]: unit conversion, grid sizing and every
//! semantic check. All problems are collected before reporting.

mod bloch;
mod boundaries;
mod geometry;
mod import;
mod lumped;
mod materials;
mod modes;
mod monitors;
mod placement;
mod refine;
mod scan;
mod shape_context;
mod simulation;
mod sources;
mod sparameters;
mod tfsf;

use simulation::Simulation;

use super::diagnostics::{closest, line_col, Diagnostic, SceneError};
use super::schema::*;
use crate::model::*;
use toml::Spanned;

/// Grids larger than this are refused: beyond any machine we plan for, and almost always a unit slip.
pub const MAX_CELLS: u64 = 1_000_000_000_000;

/// Cells along one refined axis above which a mesh is refused before its node lines are made
/// (8 bytes each): even a 1-D run of this many cells is beyond what the mesh is for, and the
/// lines of a mistyped cell size would not fit in memory.
const MAX_REFINED_AXIS_CELLS: f64 = 1e8;

/// The largest `simulation.courant` (a fraction of the 3D stability limit) a scene may ask for.
///
/// At exactly 1 the scheme is only marginally stable: the highest mode (the checkerboard of an
/// even grid) has a double eigenvalue -1, so in f64 it grows linearly, and in f32 the rounding
/// of dt, 1/d and the update coefficients (relative 1e-7) can put the effective Courant number
/// above 1, where it grows exponentially (an all-periodic f32 box went from 4e-3 to 1e14 in
/// 150,000 steps). 0.999 leaves a margin of 1e-3, four orders of magnitude above that rounding,
/// for a time step only 0.1 % shorter; tests/stability.rs runs 150,000 steps there.
pub const MAX_COURANT: f64 = 0.999;

/// Runs longer than this are refused: like [`MAX_CELLS`], beyond any run we plan for and almost
/// always a slip (a duration in the wrong unit), and it keeps every step count and byte count
/// derived from it far from overflow.
pub const MAX_STEPS: u64 = 1_000_000_000_000;

/// Fewer cells than this per shortest wavelength gives large dispersion errors: warn.
const MIN_CELLS_PER_WAVELENGTH: f64 = 10.0;

struct Checker<'a> {
    text: &'a str,
    problems: Vec<Diagnostic>,
    warnings: Vec<String>,
    file: &'a str,
}

impl<'a> Checker<'a> {
    fn error<T>(&mut self, at: &Spanned<T>, key: &str, message: impl Into<String>) {
        self.error_at(at.span().start, key, message);
    }
    fn error_at(&mut self, offset: usize, key: &str, message: impl Into<String>) {
        let (line, column) = line_col(self.text, offset);
        self.problems.push(Diagnostic {
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        });
    }
    fn warn<T>(&mut self, at: &Spanned<T>, key: &str, message: impl Into<String>) {
        self.warn_at(at.span().start, key, message);
    }
    /// A warning at byte offset `at`; a warning already given is not repeated.
    fn warn_at(&mut self, at: usize, key: &str, message: impl Into<String>) {
        let (line, _) = line_col(self.text, at);
        let w = format!("{}:{line}: `{key}`: {}", self.file, message.into());
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }
    /// A `[x, y, z]` of finite numbers.
    fn vec3(&mut self, v: &Spanned<Vec<f64>>, key: &str) -> Option<[f64; 3]> {
        if v.get_ref().len() != 3 {
            self.error(
                v,
                key,
                format!("expected 3 numbers [x, y, z], got {}", v.get_ref().len()),
            );
            return None;
        }
        if v.get_ref().iter().any(|x| !x.is_finite()) {
            self.error(v, key, "values must be finite numbers");
            return None;
        }
        Some([v.get_ref()[0], v.get_ref()[1], v.get_ref()[2]])
    }
    fn positive(&mut self, v: &Spanned<f64>, key: &str) -> Option<f64> {
        let x = *v.get_ref();
        if x.is_finite() && x > 0.0 {
            Some(x)
        } else {
            self.error(
                v,
                key,
                format!("must be a positive number, got {}", placement::num(x)),
            );
            None
        }
    }
    fn component(&mut self, v: &Spanned<String>, key: &str, allowed: &[&str]) -> Option<Component> {
        let s = v.get_ref().as_str();
        if allowed.contains(&s) {
            return Component::parse(s);
        }
        let hint = closest(s, allowed)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        self.error(
            v,
            key,
            format!(
                "unknown component `{s}`: allowed are {}{hint}",
                list(allowed)
            ),
        );
        None
    }
    fn one_of(&mut self, v: &Spanned<String>, key: &str, allowed: &[&str]) -> Option<usize> {
        let s = v.get_ref().as_str();
        if let Some(i) = allowed.iter().position(|a| *a == s) {
            return Some(i);
        }
        let hint = closest(s, allowed)
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        self.error(
            v,
            key,
            format!(
                "`{s}` is not allowed here: use one of {}{hint}",
                list(allowed)
            ),
        );
        None
    }
}

/// `v` scaled to length 1, or None if it is zero or not finite. Scaled by its largest
/// component first, so neither a tiny vector (1e-320) nor a huge one (1e300) is lost to the
/// squares under- or overflowing.
fn unit_vector(v: [f64; 3]) -> Option<[f64; 3]> {
    let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if !(scale > 0.0 && v.iter().all(|x| x.is_finite())) {
        return None;
    }
    let w = v.map(|x| x / scale);
    let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
    Some(w.map(|x| x / norm))
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

const E_COMPONENTS: [&str; 3] = ["Ex", "Ey", "Ez"];
const ALL_COMPONENTS: [&str; 6] = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"];

/// Check a parsed scene and build its model. `text` and `file` are for messages.
pub fn resolve(
    scene: &SceneFile,
    text: &str,
    file: &str,
) -> Result<(Model, Vec<String>), SceneError> {
    let mut ck = Checker {
        text,
        problems: Vec::new(),
        warnings: Vec::new(),
        file,
    };
    let mut model = build(scene, text, &mut ck, crate::model::DEFAULT_COURANT);
    // Conformal PEC surfaces the default time step cannot keep exact: the scene again at the
    // shorter default (a scene that gives `courant` keeps it, and the check says what it costs).
    let given = scene.simulation.get_ref().courant.is_some();
    if ck.problems.is_empty()
        && !given
        && model.as_ref().is_some_and(|m| m.conformal_estimate().stiff)
    {
        let mut again = Checker {
            text,
            problems: Vec::new(),
            warnings: Vec::new(),
            file,
        };
        let first = model.take();
        model = build(scene, text, &mut again, crate::model::CONFORMAL_COURANT);
        if let (Some(m), Some(first)) = (&mut model, &first) {
            m.conformal_reduced = true;
            m.reuse_conformal_cuts(first);
        }
        ck = again;
    }
    match model {
        // A model is built only when every part it needs was read and checked: the reader
        // reports any part it could not read.
        Some(model) if ck.problems.is_empty() => Ok((model, ck.warnings)),
        _ => Err(SceneError::invalid(file, ck.problems)),
    }
}

fn build(scene: &SceneFile, text: &str, ck: &mut Checker, default_courant: f64) -> Option<Model> {
    let sim = scene.simulation.get_ref();

    let Simulation {
        unit_name,
        unit,
        unit_m,
        cell,
        shape,
        courant,
        dt,
        steps,
        precision,
        name,
    } = simulation::simulation(scene, ck, default_courant);

    // Boundaries.
    let (faces, bloch) = boundaries::boundaries(scene, ck, shape);

    let materials::Materials {
        mut table,
        dropped,
        fast,
    } = materials::materials(
        scene,
        ck,
        courant,
        material_dt(scene, text, cell, shape, courant, dt),
    );

    let objects = geometry::geometry(scene, ck, &table, &dropped, unit_m);

    materials::fast_material_warnings(ck, &fast, &objects);

    let grid = match (shape, cell, dt, steps) {
        (Some(shape), Some(cell), Some(dt), Some(steps)) => {
            let origin = [0, 1, 2].map(|a| -0.5 * shape[a] as f64 * cell[a]);
            let uniform = Grid::uniform(shape, cell, origin, dt, steps);
            match (&faces, courant) {
                (Some(faces), Some(courant)) => mesh(
                    scene, text, ck, uniform, faces, courant, unit_m, &objects, &table,
                ),
                _ => Some(uniform),
            }
        }
        _ => None,
    };

    // Thin PEC put on the grid, before the sources and monitors that look inside objects.
    let subpixel = sim.subpixel.as_ref().is_none_or(|s| *s.get_ref());
    let objects = match (&grid, &faces) {
        (Some(g), Some(f)) => {
            geometry::on_grid(scene, ck, g, f, objects, &table, (unit_m, subpixel))
        }
        _ => objects,
    };

    // Sources and monitors need the grid.
    let sources = sources::sources(
        scene,
        ck,
        grid.as_ref(),
        unit_m,
        &table,
        faces.as_ref(),
        &objects,
        &placement::Shift::none(),
    );
    let (probes, snapshots, fluxes) = monitors::monitors(
        scene,
        ck,
        grid.as_ref(),
        unit_m,
        faces.as_ref(),
        &objects,
        &placement::Shift::none(),
    );
    // A [scan]: every trace's sources and probes, placed as the written ones are.
    let scan = scan::scan(
        scene,
        text,
        ck,
        grid.as_ref(),
        unit_m,
        &table,
        faces.as_ref(),
        &objects,
    );
    if let Some(g) = &grid {
        sources_above_nyquist(scene, ck, g);
    }
    if let (Some(g), Some((sources, tfsf))) = (&grid, &sources) {
        // Every source's time dependence, the TF/SF source's too.
        let waveforms: Vec<Waveform> = sources
            .iter()
            .map(|s| s.waveform)
            .chain(tfsf.iter().map(|t| t.waveform))
            .collect();
        run_warnings(scene, ck, g, &waveforms, &table, &objects, unit_m);
    }
    // A closed box that cuts a face of the TF/SF box measures neither cross-section.
    if let Some((_, Some(t))) = &sources {
        for f in &fluxes {
            let Some((lo, hi)) = f.box_planes() else {
                continue;
            };
            if t.relation(lo, hi).is_some() {
                continue;
            }
            let at = scene
                .monitor
                .iter()
                .find(|(_, m)| m.get_ref().name.get_ref() == &f.name)
                .map(|(n, m)| {
                    let span = m
                        .get_ref()
                        .region
                        .as_ref()
                        .map_or(m.span().start, |r| r.span().start);
                    (n, span)
                });
            if let Some((n, span)) = at {
                ck.error_at(
                    span,
                    &format!("monitor[{n}].box"),
                    "the box cuts a face of the TF/SF box: it must lie around the whole TF/SF box (scattered power, scattering cross-section) or inside its total-field region (absorbed power, absorption cross-section), at least one cell from its faces",
                );
            }
        }
    }

    let grid = grid?;
    let faces = faces?;
    let precision = precision?;
    let (sources, tfsf) = sources?;
    let _ = unit?;
    let mut boundaries = Boundaries::on_grid(faces, &grid);
    boundaries.bloch = bloch::phases(scene, ck, &bloch, &sources, tfsf.as_ref(), &grid)?;
    let mut fluxes = fluxes;
    if !bloch::diffraction(
        scene,
        ck,
        &mut fluxes,
        &sources,
        boundaries.bloch,
        &grid,
        &faces,
        (&objects, &table),
    ) {
        return None;
    }
    let smoothing = if subpixel && !objects.is_empty() {
        let used: Vec<u8> = std::iter::once(0)
            .chain(objects.iter().map(|o| o.material))
            .collect();
        // The grid carries frequencies up to about two cells per wavelength.
        let top = C0 / (2.0 * grid.min_cell().into_iter().fold(f64::INFINITY, f64::min));
        let s = Smoothing::build(&mut table, &used, top);
        if s.is_none()
            && used
                .iter()
                .any(|&m| m != 0 && !table.materials[m as usize].staircased())
        {
            ck.warnings.push(format!(
                "{}: too many materials for subpixel smoothing in the 256-entry material table; interfaces are staircased",
                ck.file
            ));
        }
        s
    } else {
        None
    };
    let mut model = Model {
        name,
        scene_text: text.to_string(),
        length_unit: unit_name,
        grid,
        precision,
        materials: table,
        objects,
        smoothing,
        boundaries,
        sources,
        tfsf,
        probes,
        snapshots,
        fluxes,
        dispersive_counts: Default::default(),
        conformal: Default::default(),
        conformal_estimate: Default::default(),
        surface_ports: Default::default(),
        conformal_reduced: false,
        scan: scan.map(std::sync::Arc::new),
        sparameters: None,
        terminals: Vec::new(),
        cell_passes: crate::fault::cell_passes(),
        imaginary: false,
    };
    lumped::attach(scene, ck, &mut model, unit_m);
    // The surface monitors' automatic DFT sampling, from every source's band (the lumped
    // ports' sources exist only now).
    let waveforms: Vec<Waveform> = model
        .sources
        .iter()
        .map(|s| s.waveform)
        .chain(model.tfsf.iter().map(|t| t.waveform))
        .collect();
    for f in model.fluxes.iter_mut().filter(|f| f.decimation == 0) {
        f.decimation = flux_decimation(model.grid.dt, &waveforms, &f.frequencies);
    }
    // The ports may be lumped ones, which exist only now.
    model.sparameters = sparameters::sparameters(ck, text, &model);
    if model.sparameters.is_some() && model.scan.is_some() {
        ck.error_at(0, "sparameters", "`[sparameters]` and `[scan]` cannot be combined: an S-parameter sweep already runs once per port");
    }
    Some(model)
}

/// The automatic DFT sampling period (steps) of a surface monitor at `frequencies` in a run of
/// step `dt` driven by `waveforms`: the largest k with 1 / (k dt) at least the monitor's
/// highest frequency plus the highest frequency any source puts out
/// ([`Waveform::negligible_above`]), so that nothing aliases onto the monitor's band (Meep's
/// `decimation_factor` does the same from the sources' bandwidth). A linear, time-invariant
/// scene radiates no frequency its sources do not hold. 1 (every step) with a continuous wave
/// or without sources.
pub fn flux_decimation(dt: f64, waveforms: &[Waveform], frequencies: &[f64]) -> usize {
    let f_max = frequencies.iter().fold(0.0f64, |a, &b| a.max(b));
    let mut band = 0.0f64;
    for w in waveforms {
        match w.negligible_above() {
            Some(f) => band = band.max(f),
            None => return 1,
        }
    }
    if waveforms.is_empty() {
        return 1;
    }
    ((1.0 / (dt * (f_max + band))).floor() as usize).max(1)
}

/// The time step the materials' pole checks use: on a mesh with `[[refine]]` boxes, the step
/// of their smallest cells (the resolved mesh's step is that or, with
/// `cells_per_wavelength`, smaller still, which only makes the poles better resolved);
/// otherwise the uniform grid's `dt`. The refine entries are read here without reporting
/// (they are checked with the mesh).
fn material_dt(
    scene: &SceneFile,
    text: &str,
    cell: Option<[f64; 3]>,
    shape: Option<[usize; 3]>,
    courant: Option<f64>,
    dt: Option<f64>,
) -> Option<f64> {
    let (Some(cell), Some(courant)) = (cell, courant) else {
        return dt;
    };
    let unit_m = scene
        .simulation
        .get_ref()
        .length_unit
        .as_ref()
        .and_then(|u| LENGTH_UNITS.iter().find(|l| l.0 == u.get_ref()))
        .map_or(1e-6, |l| l.1);
    let finest = refine::finest_cells(text, cell, unit_m);
    if finest == cell {
        return dt;
    }
    let flat = simulation::flat_axes(scene, shape);
    Some(courant * Grid::courant_limit_of(finest, flat))
}

/// Each source's waveform that can be read, with the source's index and the written spec:
/// read again on a scratch checker, since its problems are reported once, with the sources.
fn source_waveforms<'s>(
    scene: &'s SceneFile,
    ck: &Checker,
) -> Vec<(usize, &'s Spanned<WaveformSpec>, Waveform)> {
    let mut scratch = Checker {
        text: ck.text,
        problems: Vec::new(),
        warnings: Vec::new(),
        file: ck.file,
    };
    scene
        .source
        .iter()
        .filter_map(|(n, s)| {
            let spec = &s.get_ref().waveform;
            sources::waveform(spec, &format!("source[{n}]"), &mut scratch).map(|w| (n, spec, w))
        })
        .collect()
}

/// Refuse a source whose centre frequency is above the Nyquist frequency of the time step,
/// 1 / (2 dt): sampled every dt, its waveform is another, lower frequency's, and the grid
/// cannot carry it anyway (it is far past the few cells per wavelength the warnings ask for).
/// The likely cause is a unit: `length_unit = "m"` for a scene in micrometres.
fn sources_above_nyquist(scene: &SceneFile, ck: &mut Checker, g: &Grid) {
    let nyquist = 0.5 / g.dt;
    for (n, spec, w) in source_waveforms(scene, ck) {
        let f = w.centre_frequency();
        if f > nyquist {
            ck.error(
                spec,
                &format!("source[{n}].waveform"),
                format!(
                    "its frequency {} Hz is above the Nyquist frequency of the time step, 1 / (2 dt) = {} Hz: sampled every dt it would be another, lower frequency, and the grid cannot carry it; check simulation.length_unit and cell_size, or the frequency",
                    placement::num4(f),
                    placement::num4(nyquist)
                ),
            );
        }
    }
}

/// The grid `uniform` with the refinement the scene asks for (`[[refine]]`,
/// `simulation.cells_per_wavelength`): graded lines on the refined axes, the time step from
/// the smallest cells and the step count again from `simulation.duration`. `uniform` itself
/// when nothing is refined; None when a mesh key is wrong (reported).
#[allow(clippy::too_many_arguments)] // the facts the mesh depends on, each from its own key
fn mesh(
    scene: &SceneFile,
    text: &str,
    ck: &mut Checker,
    uniform: Grid,
    faces: &[[BoundaryKind; 2]; 3],
    courant: f64,
    unit_m: f64,
    objects: &[Object],
    table: &MaterialTable,
) -> Option<Grid> {
    // The highest source frequency, for cells_per_wavelength.
    let f_max = source_waveforms(scene, ck)
        .iter()
        .map(|(_, _, w)| w.max_frequency())
        .fold(0.0f64, f64::max);
    let pml = faces.map(|f| f.map(|k| k.pml_cells()));
    // A PML thicker than its axis is reported with the boundaries; there is no interior to
    // mesh then.
    if (0..3).any(|a| pml[a][0] + pml[a][1] >= uniform.shape[a] && pml[a][0] + pml[a][1] > 0) {
        return Some(uniform);
    }
    let req = refine::request(
        scene,
        text,
        ck,
        uniform.cell,
        uniform.shape,
        pml,
        unit_m,
        objects,
        table,
        f_max,
    )?;
    let sim = scene.simulation.get_ref();
    let what_to_check = if sim.cells_per_wavelength.is_some() {
        "check simulation.cells_per_wavelength and the [[refine]] cell sizes"
    } else {
        "check the [[refine]] cell sizes"
    };
    // Where a mesh too large is reported: the automatic refinement's key where there is one
    // (its cells are the likely culprit), else the domain's size.
    let (limit_at, limit_key) = match &sim.cells_per_wavelength {
        Some(n) => (n.span().start, "simulation.cells_per_wavelength"),
        None => (sim.size.span().start, "simulation.size"),
    };
    let fewest = refine::fewest_cells(&req, uniform.shape, pml);
    let at_least: f64 = fewest.iter().product();
    let too_large = |ck: &mut Checker, cells: String| {
        ck.error_at(
            limit_at,
            limit_key,
            format!("the refined grid would have {cells}: {what_to_check}"),
        );
    };
    if let Some(a) =
        (0..3).find(|&a| !req.zones[a].is_empty() && fewest[a] > MAX_REFINED_AXIS_CELLS)
    {
        let cells = format!(
            "at least {:.3e} cells along {}, more than the limit of 1e8 along a refined axis",
            fewest[a],
            Axis::ALL[a].name()
        );
        too_large(ck, cells);
        return None;
    }
    if at_least > MAX_CELLS as f64 {
        let cells = format!(
            "at least {at_least:.3e} cells ({:.3e} x {:.3e} x {:.3e}), more than the limit of 1e12",
            fewest[0], fewest[1], fewest[2]
        );
        too_large(ck, cells);
        return None;
    }
    let lines = refine::lines(&req, uniform.cell, uniform.shape, pml, objects);
    if lines.iter().all(|l| l.is_none()) {
        return Some(uniform);
    }
    for (a, l) in lines.iter().enumerate() {
        let Some(l) = l else { continue };
        let r = refine::max_ratio(l);
        if r > req.grading * (1.0 + 1e-6) {
            let at = sim
                .grading
                .as_ref()
                .map_or(scene.simulation.span().start, |g| g.span().start);
            ck.warn_at(
                at,
                "simulation.grading",
                format!(
                    "the mesh along {} has neighbouring cells differing by a factor {:.3}, more than grading = {}: a refinement lies too close to another one, a PML or an object face for the cells to grow smoothly",
                    Axis::ALL[a].name(),
                    r,
                    placement::num(req.grading)
                ),
            );
        }
    }
    let shape = [0, 1, 2].map(|a| lines[a].as_ref().map_or(uniform.shape[a], |l| l.len() - 1));
    let cells: f64 = shape.iter().map(|&n| n as f64).product();
    if cells > MAX_CELLS as f64 {
        let cells = format!(
            "{cells:.3e} cells ({} x {} x {}), more than the limit of 1e12",
            shape[0], shape[1], shape[2]
        );
        too_large(ck, cells);
        return None;
    }
    let mut grid = Grid {
        shape,
        lines,
        ..uniform
    };
    let flat = simulation::flat_axes(scene, Some(shape));
    grid.dt = courant * Grid::courant_limit_of(grid.min_cell(), flat);
    if let Some(d) = &sim.duration {
        let steps = (*d.get_ref() / grid.dt).ceil();
        if steps > MAX_STEPS as f64 {
            ck.error(
                d,
                "simulation.duration",
                format!(
                    "duration = {} s takes {} steps of dt = {} s on the refined mesh, more than the limit of 1e12 steps",
                    placement::num(*d.get_ref()),
                    placement::num4(steps),
                    placement::num4(grid.dt)
                ),
            );
            return None;
        }
        grid.steps = steps as usize;
    }
    Some(grid)
}

/// On a graded grid, the (wavelength, cell) pair with the fewest cells per wavelength: vacuum
/// on the background cell, and each object's material on the largest cell that overlaps the
/// object's bounds (refinement puts the fine cells where the dense materials are, so the one
/// densest material over the largest cell, the uniform rule, would warn wrongly).
fn coarsest_resolution(
    g: &Grid,
    f_max: f64,
    table: &MaterialTable,
    objects: &[Object],
) -> (f64, f64) {
    let background = g.cell.iter().cloned().fold(0.0, f64::max);
    let mut worst = (C0 / f_max, background);
    for o in objects {
        let m = &table.materials[o.material as usize];
        if m.pec {
            continue;
        }
        let n = (m.epsilon_at(f_max) * m.mu_at(f_max))
            .sqrt()
            .re
            .abs()
            .max(1.0);
        let (lo, hi) = o.bounds();
        let cell = (0..3)
            .map(|a| {
                let n = g.shape[a];
                let first = g
                    .fractional_index(a, lo[a])
                    .floor()
                    .clamp(0.0, (n - 1) as f64) as usize;
                let last = g.fractional_index(a, hi[a]).ceil().clamp(1.0, n as f64) as usize;
                (first..last.max(first + 1))
                    .map(|i| g.primal(a, i as isize))
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);
        let lambda = C0 / (f_max * n);
        if lambda / cell < worst.0 / worst.1 {
            worst = (lambda, cell);
        }
    }
    worst
}

/// Warnings about the sources as a whole, each said once: none at all, a grid too coarse for
/// the shortest wavelength, a run that ends before a pulse peaks.
fn run_warnings(
    scene: &SceneFile,
    ck: &mut Checker,
    g: &Grid,
    waveforms: &[Waveform],
    table: &MaterialTable,
    objects: &[Object],
    unit_m: f64,
) {
    let sim = &scene.simulation;
    if scene.source.is_empty() {
        ck.warn(
            sim,
            "source",
            "the scene has no [[source]]: every field stays zero",
        );
        return;
    }
    let f_max = waveforms
        .iter()
        .map(|s| s.max_frequency())
        .fold(0.0f64, f64::max);
    // Resolution: the shortest wavelength in the densest material an object is made of, from
    // the real part of its refractive index sqrt(eps mu) at the highest source frequency (for
    // a dispersive or magnetic material eps alone says little).
    let eps = objects
        .iter()
        .map(|o| &table.materials[o.material as usize])
        .filter(|m| !m.pec && f_max > 0.0)
        .map(|m| {
            (m.epsilon_at(f_max) * m.mu_at(f_max))
                .sqrt()
                .re
                .abs()
                .powi(2)
        })
        .fold(1.0f64, f64::max);
    // A library fit used outside the band where it holds.
    let mut warned: Vec<u8> = Vec::new();
    for o in objects {
        let m = &table.materials[o.material as usize];
        let Some([lo, hi]) = m.band else { continue };
        if warned.contains(&o.material) {
            continue;
        }
        let outside: Vec<f64> = waveforms
            .iter()
            .flat_map(|s| [s.centre_frequency(), s.max_frequency()])
            .filter(|f| *f > 0.0 && (*f < lo || *f > hi))
            .collect();
        if let Some(f) = outside.first() {
            warned.push(o.material);
            let at = scene
                .materials
                .iter()
                .find(|(k, _)| k.get_ref() == &m.name)
                .and_then(|(_, v)| v.get_ref().library.as_ref().map(|l| l.span().start))
                .unwrap_or(0);
            ck.warn_at(
                at,
                &format!("materials.{}.library", m.name),
                format!(
                    "the library fit of `{}` holds over {} - {} Hz, but the sources reach {} Hz; eps(f) outside that band is an extrapolation",
                    m.name,
                    placement::num4(lo),
                    placement::num4(hi),
                    placement::num4(*f)
                ),
            );
        }
    }
    if f_max > 0.0 {
        let (lambda, dmax) = if g.is_uniform() {
            (
                C0 / (f_max * eps.sqrt()),
                g.cell.iter().cloned().fold(0.0, f64::max),
            )
        } else {
            coarsest_resolution(g, f_max, table, objects)
        };
        if lambda / dmax < MIN_CELLS_PER_WAVELENGTH {
            let at = scene
                .source
                .iter()
                .next()
                .map_or(sim.span().start, |(_, s)| s.get_ref().waveform.span().start);
            ck.warn_at(
                at,
                "source.waveform",
                format!(
                    "the grid resolves the shortest wavelength of the sources ({} {}) with only {:.1} cells (at least 10 is advisable); expect dispersion errors",
                    placement::num4(lambda / unit_m),
                    unit_label(unit_m),
                    lambda / dmax
                ),
            );
        }
    }
    // A pulse that has not peaked by the end of the run: most of it is never seen.
    let end = g.steps as f64 * g.dt;
    let late: Vec<f64> = waveforms
        .iter()
        .map(|s| s.peak_time())
        .filter(|&t| t > end)
        .collect();
    if let Some(first) = late.iter().cloned().reduce(f64::min) {
        let s = sim.get_ref();
        // At the key that sets the run's length (the table's line if neither is written).
        let (key, at) = match (&s.duration, &s.steps) {
            (Some(d), _) => ("simulation.duration", d.span().start),
            (None, Some(n)) => ("simulation.steps", n.span().start),
            (None, None) => ("simulation.steps", sim.span().start),
        };
        ck.warn_at(
            at,
            key,
            format!(
                "the run ends at t = {} s ({} steps), before the source pulse peaks at t = {} s; raise the run length to at least twice that to see the pulse",
                placement::num4(end),
                g.steps,
                placement::num4(first)
            ),
        );
    }
}

/// The name of the length unit of `unit_m` metres.
fn unit_label(unit_m: f64) -> &'static str {
    LENGTH_UNITS
        .iter()
        .find(|u| u.1 == unit_m)
        .map_or("um", |u| u.0)
}

fn as_f64(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Float(f) => Some(*f),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

fn inside(grid: &Grid, p: [f64; 3]) -> bool {
    let size = grid.size();
    (0..3).all(|a| {
        p[a] >= grid.origin[a] - 1e-9 * size[a] && p[a] <= grid.origin[a] + size[a] * (1.0 + 1e-9)
    })
}

fn position3(v: &toml::Value) -> Option<[f64; 3]> {
    match v {
        toml::Value::Array(a) if a.len() == 3 => {
            let v: Vec<f64> = a.iter().filter_map(as_f64).collect();
            (v.len() == 3 && v.iter().all(|x| x.is_finite())).then(|| [v[0], v[1], v[2]])
        }
        _ => None,
    }
}

fn outside_message(g: &Grid, p: [f64; 3], unit_m: f64) -> String {
    let size = g.size();
    let span: Vec<String> = (0..3)
        .map(|a| {
            format!(
                "{} in [{}, {}]",
                Axis::ALL[a].name(),
                placement::num(g.origin[a] / unit_m),
                placement::num((g.origin[a] + size[a]) / unit_m)
            )
        })
        .collect();
    format!(
        "position [{}, {}, {}] lies outside the domain ({})",
        placement::num(p[0] / unit_m),
        placement::num(p[1] / unit_m),
        placement::num(p[2] / unit_m),
        span.join(", ")
    )
}

fn vec3_plain(v: &[f64]) -> Option<[f64; 3]> {
    (v.len() == 3 && v.iter().all(|x| x.is_finite())).then(|| [v[0], v[1], v[2]])
}

/// A string value with its span, or None for another type.
fn text(v: &toml::Spanned<toml::Value>) -> Option<toml::Spanned<String>> {
    v.get_ref()
        .as_str()
        .map(|t| toml::Spanned::new(v.span(), t.to_string()))
}

#[cfg(test)]
mod unit_vector_tests {
    use super::unit_vector;

    #[test]
    fn tiny_and_huge_vectors_keep_their_direction() {
        let s = 0.5f64.sqrt();
        for v in [[1e-320, 0.0, 1e-320], [1e300, 0.0, 1e300], [3.0, 0.0, 3.0]] {
            let u = unit_vector(v).expect("non-zero");
            // 1/sqrt(2) from a scale, a square root and a division: a few ulps (1.1e-16
            // each at 0.7); 1e-15 allows 9. Lost to underflow or overflow it would be 0.
            assert!(
                (u[0] - s).abs() < 1e-15 && u[1] == 0.0 && (u[2] - s).abs() < 1e-15,
                "{u:?}"
            );
        }
        assert_eq!(unit_vector([0.0; 3]), None);
        assert_eq!(unit_vector([f64::NAN, 1.0, 0.0]), None);
    }
}
