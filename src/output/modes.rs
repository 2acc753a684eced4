//! `yee modes -o OUT.h5`: a plane's modes as `/modes/<name>/` (design.md section 11):
//! `frequency` (one value), `neff` and `group_index` (`[1, modes]`), `profile/<E_u>` and
//! `profile/<E_v>` (`[modes, n_u, n_v]`: E_u at (j + 1/2, k), E_v at (j, k + 1/2) of the
//! plane's nodes, the largest value 1), `grid/<u>` and `grid/<v>` (the plane's node
//! coordinates, m); attributes `axis` (the normal), `coordinate` (its position, m).

use super::{scalar_attr, str_attr};
use crate::model::Model;
use crate::modes::{Plane, PlaneModes};
use std::path::Path;

/// Write `found` (the modes of `plane` of `model`) to a new file `path` as `/modes/<name>/`.
pub fn write_plane_modes(
    path: &Path,
    name: &str,
    model: &Model,
    plane: Plane,
    found: &PlaneModes,
) -> hdf5::Result<()> {
    let file = hdf5::File::create(path)?;
    let g = file.create_group("modes")?.create_group(name)?;
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
        .with_data(&row(&found.group_index))
        .create("group_index")?;
    let (nu, nv) = (grid.shape[u], grid.shape[v]);
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
    for axis in [u, v] {
        coords
            .new_dataset_builder()
            .with_data(&grid.nodes(axis))
            .create(names[axis])?;
    }
    Ok(())
}
