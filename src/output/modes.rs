//! `yee modes -o OUT.h5`: a plane's modes as `/modes/<name>/` (design.md section 11):
//! `frequency` (one value), `neff`, `loss` (dB/m, 0 in a lossless plane), `group_index`,
//! `effective_area` (m^2) and `wave_impedance` (ohm) (`[1, modes]`), `profile/<E_u>` and
//! `profile/<E_v>` (`[modes, n_u, n_v]`: E_u at (j + 1/2, k), E_v at (j, k + 1/2) of the
//! plane's nodes, the largest value 1), `grid/<u>` and `grid/<v>` (the plane's node
//! coordinates, m); attributes `axis` (the normal), `coordinate` (its position, m).

use super::{scalar_attr, str_attr};
use crate::model::Model;
use crate::modes::{Plane, PlaneModes};

/// Write `found` (the modes of `plane` of `model`) to `file` as `/modes/<name>/`.
pub fn write_plane_modes(
    file: &hdf5::File,
    name: &str,
    model: &Model,
    plane: Plane,
    found: &PlaneModes,
) -> hdf5::Result<()> {
    let root = match file.group("modes") {
        Ok(g) => g,
        Err(_) => file.create_group("modes")?,
    };
    let g = root.create_group(name)?;
    let names = ["x", "y", "z"];
    let [u, v] = plane.in_plane();
    let grid = &model.grid;
    str_attr(&g, "axis", names[plane.axis])?;
    scalar_attr(
        &g,
        "coordinate",
        grid.coordinate(plane.axis, plane.index as f64),
    )?;
    g.new_dataset_builder()
        .with_data(&[found.frequency])
        .create("frequency")?;
    let m = found.modes.len();
    let row = |v: &[f64]| ndarray::Array2::from_shape_vec((1, m), v.to_vec()).expect("one row");
    g.new_dataset_builder()
        .with_data(&row(&found.neff))
        .create("neff")?;
    g.new_dataset_builder()
        .with_data(&row(&found.loss))
        .create("loss")?;
    g.new_dataset_builder()
        .with_data(&row(&found.group_index))
        .create("group_index")?;
    g.new_dataset_builder()
        .with_data(&row(&found.effective_area))
        .create("effective_area")?;
    g.new_dataset_builder()
        .with_data(&row(&found.wave_impedance))
        .create("wave_impedance")?;
    let [ru, rv] = plane.ranges;
    let (nu, nv) = (ru[1] - ru[0], rv[1] - rv[0]);
    let profiles = g.create_group("profile")?;
    for (which, axis) in [u, v].into_iter().enumerate() {
        let flat: Vec<f64> = found
            .modes
            .iter()
            .flat_map(|mode| mode.e[which].iter().copied())
            .collect();
        let a = ndarray::Array3::from_shape_vec((m, nu, nv), flat).expect("one plane per mode");
        profiles
            .new_dataset_builder()
            .with_data(&a)
            .create(format!("E{}", names[axis]).as_str())?;
    }
    let coords = g.create_group("grid")?;
    for (axis, r) in [(u, ru), (v, rv)] {
        coords
            .new_dataset_builder()
            .with_data(&grid.nodes(axis)[r[0]..=r[1]])
            .create(names[axis])?;
    }
    Ok(())
}

/// A mode monitor's datasets in `/modes/<name>/` of a run (design.md section 6): `neff` and
/// `loss` (dB/m, 0 in a lossless plane) [frequency, mode], `forward` and `backward` (complex [frequency, mode], in the square root
/// of the flux unit, so that |forward|^2 is the power the mode carries along +axis in the units
/// of `power`, the plane's total flux), and `profile/` with the unit-power modes at the middle
/// frequency (`E<u>`, `E<v>`, `H<u>`, `H<v>`, [mode, n_p, n_q] over the plane's cells in x, y, z
/// order of its in-plane axes; H as the monitor interpolates it onto the E plane).
pub struct ModeSet {
    forward: hdf5::Dataset,
    backward: hdf5::Dataset,
    modes: usize,
}

impl ModeSet {
    /// The datasets of mode monitor `flux` (its decomposition `monitor`) in its group `grp`.
    pub fn create(
        grp: &hdf5::Group,
        grid: &crate::model::Grid,
        flux: &crate::model::Flux,
        monitor: &crate::model::ModeMonitor,
    ) -> hdf5::Result<ModeSet> {
        let nf = flux.frequencies.len();
        let m = monitor.count;
        str_attr(grp, "modes_definition", "forward, backward: a_m, b_m with the field on the plane sum_m a_m (E_m, H_m) + b_m (E_m, -H_m), the modes (profile/) at unit power in the flux's units: Re sum (E_m x H_m) . n dA = 1 with the monitor's quadrature; |a_m|^2 is the power mode m carries along +axis")?;
        scalar_attr(grp, "modes", m as u64)?;
        let basis = monitor.basis.get();
        // Per frequency and mode, a value of each solved mode (NaN where none was found).
        let table = |value: fn(&crate::model::BasisMode) -> f64| -> Vec<f64> {
            (0..nf)
                .flat_map(|f| {
                    (0..m).map(move |k| {
                        basis
                            .and_then(|b| b[f].modes.get(k))
                            .map_or(f64::NAN, value)
                    })
                })
                .collect()
        };
        grp.new_dataset::<f64>()
            .shape((nf, m))
            .create("neff")?
            .write_raw(&table(|mode| mode.neff))?;
        grp.new_dataset::<f64>()
            .shape((nf, m))
            .create("loss")?
            .write_raw(&table(|mode| mode.loss))?;
        let zeros = vec![super::Complex::default(); nf * m];
        let forward = grp
            .new_dataset::<super::Complex>()
            .shape((nf, m))
            .create("forward")?;
        forward.write_raw(&zeros)?;
        let backward = grp
            .new_dataset::<super::Complex>()
            .shape((nf, m))
            .create("backward")?;
        backward.write_raw(&zeros)?;
        if let Some(b) = basis.and_then(|b| b.get(nf / 2)) {
            let patch = &flux.patches[0];
            let [np, nq] = patch.count;
            let names = ["x", "y", "z"];
            let a = patch.axis as usize;
            let (u, v) = ((a + 1) % 3, (a + 2) % 3);
            let profile = grp.create_group("profile")?;
            scalar_attr(&profile, "frequency", b.frequency)?;
            for (name, pick) in [
                (format!("E{}", names[u]), 0),
                (format!("E{}", names[v]), 1),
                (format!("H{}", names[u]), 2),
                (format!("H{}", names[v]), 3),
            ] {
                let flat: Vec<f64> = b
                    .modes
                    .iter()
                    .flat_map(|mode| {
                        let values = if pick < 2 {
                            &mode.e[pick]
                        } else {
                            &mode.h[pick - 2]
                        };
                        values.iter().copied()
                    })
                    .collect();
                profile
                    .new_dataset::<f64>()
                    .shape((b.modes.len(), np, nq))
                    .create(name.as_str())?
                    .write_raw(&flat)?;
            }
            super::mesh::write_patch_coordinates(grp, grid, patch)?;
        }
        Ok(ModeSet {
            forward,
            backward,
            modes: m,
        })
    }

    /// The datasets of a mode monitor of `modes` modes in an existing result's group `grp`
    /// (a resumed run).
    pub fn open(grp: &hdf5::Group, modes: usize) -> hdf5::Result<ModeSet> {
        Ok(ModeSet {
            forward: grp.dataset("forward")?,
            backward: grp.dataset("backward")?,
            modes,
        })
    }

    /// Write the amplitudes: per frequency, per mode, (forward, backward).
    pub fn write(
        &self,
        amplitudes: &[Vec<(crate::modes::Amplitude, crate::modes::Amplitude)>],
    ) -> hdf5::Result<()> {
        let pick = |which: usize| -> Vec<super::Complex> {
            amplitudes
                .iter()
                .flat_map(|row| {
                    (0..self.modes).map(move |k| {
                        row.get(k).map_or(super::Complex::default(), |pair| {
                            let (r, i) = if which == 0 { pair.0 } else { pair.1 };
                            super::Complex { r, i }
                        })
                    })
                })
                .collect()
        };
        self.forward.write_raw(&pick(0))?;
        self.backward.write_raw(&pick(1))
    }
}
