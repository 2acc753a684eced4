//! The `/far_field/<name>/` group, the faces of closed boxes, and `yee farfield`: projecting a
//! finished (or interrupted) run's stored surface DFTs again at other angles.
//!
//! A far-field group holds `frequency`, `theta`, `phi` (degrees), `E_theta`, `E_phi` (complex
//! `[frequency, theta, phi]`, r E with the e^{ikr} phase removed, V, e^{-i w t}), `intensity`
//! (W/sr in the flux power's DFT normalisation), `power` (the box's net outward flux from the
//! same DFTs), and `surface/<face>/<component>`: each face's DFTs of its tangential E and H (H
//! averaged onto the face), complex `[frequency, n_p, n_q]` over the face's in-plane axes in x,
//! y, z order, as the flux DFT fields are stored. Each face group carries `axis`, `sign` (the
//! outward normal along the axis), `index` (the E node plane), `start` and `count` (its cells
//! along the two in-plane axes), from which the projection is formed again.

use super::{arr_attr, scalar_attr, str_attr, Complex};
use crate::far_field::{project, Geometry, Pattern};
use crate::flux::{pair_weights, relative_cells_of, tangential, PatchDft};
use crate::model::{Axis, Component, FarField, Grid, Patch};
use hdf5::{Dataset, File, Group};

/// The box of a flux or far-field monitor as attributes: its node index range and its corners
/// (m).
pub(super) fn box_attrs(grp: &Group, g: &Grid, patches: &[Patch]) -> hdf5::Result<()> {
    let lo = [0, 1, 2].map(|a| patches[2 * a].index);
    let hi = [0, 1, 2].map(|a| patches[2 * a + 1].index);
    arr_attr(grp, "box_start", &lo.map(|i| i as i64))?;
    arr_attr(grp, "box_end", &hi.map(|i| i as i64))?;
    arr_attr(
        grp,
        "box_min",
        &[0, 1, 2].map(|a| g.coordinate(a, lo[a] as f64)),
    )?;
    arr_attr(
        grp,
        "box_max",
        &[0, 1, 2].map(|a| g.coordinate(a, hi[a] as f64)),
    )
}

/// The four DFT datasets E_b, E_c, H_b, H_c of one patch in `grp`, `[frequency, n_p, n_q]`,
/// each with its in-plane Yee position (`origin`), `spacing` (the cell size; on a graded axis
/// the background cell) and, along each graded in-plane axis, its samples' coordinates
/// (`coordinates_x`, `coordinates_y` or `coordinates_z`, m); with
/// `face`, the patch's geometry as attributes of `grp`.
pub(super) fn face_datasets(
    grp: &Group,
    g: &Grid,
    patch: &Patch,
    nf: usize,
    face: bool,
) -> hdf5::Result<[Dataset; 4]> {
    let a = patch.axis as usize;
    let (b, c) = tangential(a);
    let [p, q] = patch.in_plane();
    if face {
        str_attr(grp, "axis", patch.axis.name())?;
        scalar_attr(grp, "sign", patch.sign)?;
        scalar_attr(grp, "index", patch.index as i64)?;
        arr_attr(grp, "start", &patch.start.map(|i| i as i64))?;
        arr_attr(grp, "count", &patch.count.map(|i| i as i64))?;
    }
    let shape = [nf, patch.count[0], patch.count[1]];
    let mut index = [0usize; 3];
    index[a] = patch.index;
    index[p] = patch.start[0];
    index[q] = patch.start[1];
    let mut made = Vec::with_capacity(4);
    for comp in [b, c, 3 + b, 3 + c].map(|k| Component::ALL[k]) {
        let ds = grp
            .new_dataset::<Complex>()
            .shape(shape)
            .create(comp.name())?;
        // H is averaged onto the E plane, so H_b sits where E_c does and H_c where E_b does:
        // give each its in-plane Yee position on the plane.
        let twin = match comp as usize {
            k if k == 3 + b => Component::ALL[c],
            k if k == 3 + c => Component::ALL[b],
            _ => comp,
        };
        let mut origin = g.position(twin, index.map(|i| i as f64));
        origin[a] = g.coordinate(a, patch.index as f64);
        arr_attr(&ds, "origin", &origin)?;
        arr_attr(&ds, "spacing", &g.cell)?;
        let offset = twin.offset();
        // Along a graded in-plane axis, the samples' own coordinates (a uniform axis has them
        // from `origin` and `spacing`).
        for (k, &axis) in [p, q].iter().enumerate() {
            if g.lines[axis].is_none() {
                continue;
            }
            let coords: Vec<f64> = (0..patch.count[k])
                .map(|i| g.coordinate(axis, (patch.start[k] + i) as f64 + offset[axis]))
                .collect();
            let name = format!("coordinates_{}", Axis::ALL[axis].name());
            arr_attr(&ds, &name, &coords)?;
        }
        made.push(ds);
    }
    Ok(made.try_into().expect("four datasets"))
}

/// The pattern datasets of one far-field monitor.
pub(super) struct FarSet {
    group: Group,
}

impl FarSet {
    /// Create `theta`, `phi` and the (zeroed) pattern datasets in `grp`.
    pub(super) fn create(grp: &Group, frequencies: &[f64], ff: &FarField) -> hdf5::Result<Self> {
        let set = FarSet { group: grp.clone() };
        set.write(&Pattern {
            frequency: frequencies.to_vec(),
            theta: ff.theta.clone(),
            phi: ff.phi.clone(),
            e_theta: vec![Default::default(); frequencies.len() * ff.theta.len() * ff.phi.len()],
            e_phi: vec![Default::default(); frequencies.len() * ff.theta.len() * ff.phi.len()],
            intensity: vec![0.0; frequencies.len() * ff.theta.len() * ff.phi.len()],
        })?;
        Ok(set)
    }

    /// Replace the angles and the pattern (the shapes may change: `yee farfield`).
    pub(super) fn write(&self, pattern: &Pattern) -> hdf5::Result<()> {
        let g = &self.group;
        let shape = [
            pattern.frequency.len(),
            pattern.theta.len(),
            pattern.phi.len(),
        ];
        // The antenna figures belong to the pattern they were formed with: a new projection
        // (`yee farfield`) drops them, and the run writes them again after its own.
        let names = ["theta", "phi", "E_theta", "E_phi", "intensity", "rcs"];
        let figures = super::ports::ANTENNA_PATTERNS.map(|(name, _)| name);
        for name in names.iter().chain(&figures) {
            if g.link_exists(name) {
                g.unlink(name)?;
            }
        }
        let theta = g
            .new_dataset::<f64>()
            .shape(pattern.theta.len())
            .create("theta")?;
        theta.write_raw(&pattern.theta)?;
        str_attr(&theta, "units", "degrees from +z")?;
        let phi = g
            .new_dataset::<f64>()
            .shape(pattern.phi.len())
            .create("phi")?;
        phi.write_raw(&pattern.phi)?;
        str_attr(&phi, "units", "degrees from +x towards +y")?;
        for (name, values) in [("E_theta", &pattern.e_theta), ("E_phi", &pattern.e_phi)] {
            let ds = g.new_dataset::<Complex>().shape(shape).create(name)?;
            let v: Vec<Complex> = values
                .iter()
                .map(|c| Complex { r: c.re, i: c.im })
                .collect();
            ds.write_raw(&v)?;
            str_attr(&ds, "units", "V (r E with exp(ikr) removed, exp(-i w t))")?;
        }
        let ds = g.new_dataset::<f64>().shape(shape).create("intensity")?;
        ds.write_raw(&pattern.intensity)?;
        str_attr(
            &ds,
            "units",
            "W/sr in the DFT normalisation of flux power: r^2 |E|^2 / eta0",
        )?;
        // With a TF/SF source around which the box lies, the incident intensity is stored
        // beside the pattern (the run writes it; `yee farfield` finds it there): the bistatic
        // radar cross-section 4 pi r^2 |E_s|^2 / |E_inc|^2 = 4 pi intensity / I_inc.
        if g.link_exists("incident_intensity") {
            let incident = g.dataset("incident_intensity")?.read_raw::<f64>()?;
            let per = shape[1] * shape[2];
            let rcs: Vec<f64> = pattern
                .intensity
                .iter()
                .enumerate()
                .map(|(k, &u)| 4.0 * std::f64::consts::PI * u / incident[k / per.max(1)])
                .collect();
            let ds = g.new_dataset::<f64>().shape(shape).create("rcs")?;
            ds.write_raw(&rcs)?;
            str_attr(&ds, "units", "m^2, bistatic: 4 pi r^2 |E_s|^2 / |E_inc|^2")?;
        }
        // With a driven lumped port the run stores its powers beside the pattern: the antenna
        // figures follow the pattern to the new angles (the run writes them again after this).
        for (name, power) in super::ports::ANTENNA_PATTERNS {
            if !g.link_exists(power) || !g.link_exists("accepted_power") {
                continue;
            }
            let power = g.dataset(power)?.read_raw::<f64>()?;
            let per = (shape[1] * shape[2]).max(1);
            let figure: Vec<f64> = pattern
                .intensity
                .iter()
                .enumerate()
                .map(|(k, &u)| 4.0 * std::f64::consts::PI * u / power[k / per])
                .collect();
            g.new_dataset::<f64>()
                .shape(shape)
                .create(name)?
                .write_raw(&figure)?;
        }
        Ok(())
    }
}

/// Why `yee farfield` could not re-project a file.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FarFieldError {
    /// What went wrong, naming the file.
    pub message: String,
    /// True when the file given is not one to re-project (missing, not HDF5, no far-field
    /// monitor): the user's input, exit code 2; false when re-projecting it failed.
    pub input: bool,
}

impl FarFieldError {
    fn failed(message: String) -> Self {
        FarFieldError {
            message,
            input: false,
        }
    }

    fn input(message: String) -> Self {
        FarFieldError {
            message,
            input: true,
        }
    }
}

/// One far-field monitor re-projected by [`reproject`].
#[derive(Debug, Clone)]
pub struct Reprojected {
    /// The monitor's name.
    pub name: String,
    /// The projection's wall time.
    pub seconds: f64,
    /// The sphere integral of the new intensity per frequency (W in the DFT normalisation),
    /// when the angles cover the whole sphere.
    pub power: Vec<f64>,
    /// The box's net outward flux per frequency (`power` in the file), to compare with.
    pub flux_power: Vec<f64>,
}

/// Read the stored surface DFTs of the far-field monitor group `grp` on a grid of `geometry`
/// and `shape` cells.
fn read_surface(
    grp: &Group,
    geometry: &Geometry,
    shape: [usize; 3],
) -> hdf5::Result<Vec<PatchDft>> {
    let relative = [0, 1, 2]
        .map(|a| relative_cells_of(geometry.lines[a].as_deref(), geometry.cell[a], shape[a]));
    let surface = grp.group("surface")?;
    let mut out = Vec::new();
    for name in ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"] {
        let face = surface.group(name)?;
        let axis_name: hdf5::types::VarLenUnicode = face.attr("axis")?.read_scalar()?;
        let a = ["x", "y", "z"]
            .iter()
            .position(|s| *s == axis_name.as_str())
            .ok_or_else(|| hdf5::Error::from(format!("face {name}: bad axis")))?;
        let start: Vec<i64> = face.attr("start")?.read_raw()?;
        let count: Vec<i64> = face.attr("count")?.read_raw()?;
        let patch = Patch {
            axis: Axis::ALL[a],
            index: face.attr("index")?.read_scalar::<i64>()? as usize,
            sign: face.attr("sign")?.read_scalar()?,
            start: [start[0] as usize, start[1] as usize],
            count: [count[0] as usize, count[1] as usize],
            closed: true,
        };
        let (b, c) = tangential(a);
        let mut re: [Vec<f64>; 4] = Default::default();
        let mut im: [Vec<f64>; 4] = Default::default();
        for (q, k) in [b, c, 3 + b, 3 + c].into_iter().enumerate() {
            let v: Vec<Complex> = face.dataset(Component::ALL[k].name())?.read_raw()?;
            re[q] = v.iter().map(|z| z.r).collect();
            im[q] = v.iter().map(|z| z.i).collect();
        }
        let [p, qq] = patch.in_plane();
        // A far-field box is closed: the periodic flags do not enter its weights.
        let weights = pair_weights(&patch, [&relative[p], &relative[qq]], [false; 2]);
        out.push(PatchDft {
            patch,
            re,
            im,
            area: geometry.cell[p] * geometry.cell[qq],
            weights,
        });
    }
    Ok(out)
}

/// Project every far-field monitor of the result file at `path` again at the angles `theta` and
/// `phi` (degrees), replacing its `theta`, `phi`, `E_theta`, `E_phi` and `intensity`.
pub fn reproject(
    path: &std::path::Path,
    theta: &[f64],
    phi: &[f64],
) -> Result<Vec<Reprojected>, FarFieldError> {
    let shown = path.display();
    // What the user gave is checked first, so a wrong path gets words, not the library's.
    match super::claim::is_hdf5(path) {
        Err(e) => return Err(FarFieldError::input(format!("cannot read `{shown}`: {e}"))),
        Ok(false) => {
            return Err(FarFieldError::input(format!(
            "`{shown}` is not an HDF5 file: give the result file of a run with a far_field monitor"
        )))
        }
        Ok(true) => {}
    }
    let file = File::open_rw(path)
        .map_err(|e| FarFieldError::failed(format!("cannot open `{shown}` for writing: {e}")))?;
    let fail = |e: hdf5::Error| FarFieldError::failed(format!("cannot re-project `{shown}`: {e}"));
    let root = file.group("far_field").map_err(|_| {
        FarFieldError::input(format!(
            "`{shown}` has no /far_field group: the scene had no `type = \"far_field\"` monitor"
        ))
    })?;
    let cell: Vec<f64> = file
        .attr("cell_size")
        .and_then(|a| a.read_raw())
        .map_err(fail)?;
    let origin: Vec<f64> = file
        .attr("origin")
        .and_then(|a| a.read_raw())
        .map_err(fail)?;
    let nodes = |axis: &str| -> Result<Vec<f64>, FarFieldError> {
        file.dataset(&format!("grid/{axis}"))
            .and_then(|d| d.read_raw())
            .map_err(fail)
    };
    let nodes = [nodes("x")?, nodes("y")?, nodes("z")?];
    let shape = [0, 1, 2].map(|a| nodes[a].len().saturating_sub(1));
    let geometry = Geometry::from_nodes(
        [origin[0], origin[1], origin[2]],
        [cell[0], cell[1], cell[2]],
        nodes,
    );
    let mut done = Vec::new();
    for name in root.member_names().map_err(fail)? {
        let grp = root.group(&name).map_err(fail)?;
        let frequencies: Vec<f64> = grp
            .dataset("frequency")
            .and_then(|d| d.read_raw())
            .map_err(fail)?;
        let patches = read_surface(&grp, &geometry, shape).map_err(fail)?;
        let flux_power: Vec<f64> = grp
            .dataset("power")
            .and_then(|d| d.read_raw())
            .map_err(fail)?;
        let t0 = std::time::Instant::now();
        let pattern = project(&geometry, &patches, &frequencies, theta, phi);
        let seconds = t0.elapsed().as_secs_f64();
        FarSet { group: grp }.write(&pattern).map_err(fail)?;
        let sphere = theta.first() == Some(&0.0)
            && theta.last() == Some(&180.0)
            && phi.len() > 1
            && (phi[phi.len() - 1] - phi[0] - 360.0).abs() < 1e-9;
        done.push(Reprojected {
            name,
            seconds,
            power: if sphere {
                pattern.total_power()
            } else {
                Vec::new()
            },
            flux_power,
        });
    }
    file.flush().map_err(fail)?;
    Ok(done)
}
