//! The mesh in the result file: node coordinates of the primal grid and the coordinates of
//! every stored sample, for uniform and graded (non-uniform) grids alike.
//!
//! Layout (design.md section 6):
//! - `/grid/x`, `/grid/y`, `/grid/z`: the node coordinates (m) of the primal grid along each
//!   axis, `nx + 1`, `ny + 1`, `nz + 1` increasing values, the first equal to the root
//!   `origin`. Written for every run; on a uniform axis they are `origin + i * cell_size`.
//! - Root attribute `uniform`: true when every axis is uniform (then `origin` and `cell_size`
//!   describe the grid completely, as in files written before the mesh datasets existed).
//! - `/snapshots/<name>/coordinates/<component>/x`, `.../y`, `.../z`: the coordinates (m) of the
//!   stored samples of that component along each axis: its own Yee-staggered positions at the
//!   monitor's index range after the stride, one value per sample (`nx'`, `ny'`, `nz'`). Written
//!   for every run. The dataset's `origin` attribute is the first sample on every grid; its
//!   `spacing` is the sample spacing on a uniform axis and NaN on a graded one, where there is
//!   no single spacing, so that a reader that only knows `origin`/`spacing` fails visibly
//!   instead of placing the samples wrongly.
//! - Flux and far-field DFT fields (`fields = true`, far-field surfaces): the group holding
//!   them has `coordinates/<component>/<axis>` for the patch's two in-plane axes, each field at
//!   its in-plane Yee position on the E node plane (H averaged onto it: H_b where E_c is, H_c
//!   where E_b is).
//!
//! A sample of component `c` at index `i` along axis `a` sits at node coordinate
//! `Grid::coordinate(a, i + offset)`, where the offset is 1/2 for the axes the component is
//! staggered along (the centre of primal cell `i`: halfway between nodes `i` and `i + 1`), else 0.

use super::{scalar_attr, str_attr};
use crate::model::{Component, Grid, Region};
use hdf5::{File, Group};

/// The axis names of the coordinate datasets.
const AXES: [&str; 3] = ["x", "y", "z"];

/// Write `/grid/x`, `/grid/y`, `/grid/z` (the node coordinates of `g`) and the root attribute
/// `uniform`.
pub(super) fn write_grid(file: &File, g: &Grid) -> hdf5::Result<()> {
    scalar_attr(file, "uniform", g.is_uniform())?;
    let grp = file.create_group("grid")?;
    str_attr(
        &grp,
        "definition",
        "node coordinates (m) of the primal grid along x, y, z: nx+1, ny+1, nz+1 values",
    )?;
    for (a, name) in AXES.iter().enumerate() {
        grp.new_dataset_builder()
            .with_data(&g.nodes(a))
            .create(*name)?;
    }
    Ok(())
}

/// The coordinates (m) along `axis` of the samples of component `c` that `region` keeps (its
/// index range after the stride), with the component's own staggering.
pub fn sample_coordinates(g: &Grid, c: Component, region: &Region, axis: usize) -> Vec<f64> {
    let off = c.offset()[axis];
    let n = region.counts()[axis];
    (0..n)
        .map(|j| {
            let i = region.start[axis] + j * region.stride[axis];
            g.coordinate(axis, i as f64 + off)
        })
        .collect()
}

/// The sample spacing (m) a region with `stride` has along each axis: `stride * cell` on a
/// uniform axis, NaN on a graded one (no single spacing; the coordinate datasets hold the
/// positions).
pub fn sample_spacing(g: &Grid, stride: [usize; 3]) -> [f64; 3] {
    [0, 1, 2].map(|a| match g.lines[a] {
        None => stride[a] as f64 * g.cell[a],
        Some(_) => f64::NAN,
    })
}

/// Write the sample coordinates of component `c` over `region` as
/// `<group>/coordinates/<c>/x|y|z`.
pub(super) fn write_sample_coordinates(
    group: &Group,
    g: &Grid,
    c: Component,
    region: &Region,
) -> hdf5::Result<()> {
    let coords = if group.link_exists("coordinates") {
        group.group("coordinates")?
    } else {
        let grp = group.create_group("coordinates")?;
        str_attr(
            &grp,
            "definition",
            "per component, the coordinates (m) of its stored samples along each axis (Yee-staggered, after the stride)",
        )?;
        grp
    };
    let grp = coords.create_group(c.name())?;
    for (a, name) in AXES.iter().enumerate() {
        grp.new_dataset_builder()
            .with_data(&sample_coordinates(g, c, region, a))
            .create(*name)?;
    }
    Ok(())
}

/// The coordinates of the DFT fields of one flux or far-field patch, written into the group
/// that holds them: `coordinates/<component>/<axis>` for the patch's two in-plane axes, each
/// field at its in-plane Yee position on the E node plane (H is averaged onto that plane, so
/// H_b sits where E_c does and H_c where E_b does), one value per stored sample.
pub(super) fn write_patch_coordinates(
    group: &Group,
    g: &Grid,
    patch: &crate::model::Patch,
) -> hdf5::Result<()> {
    let a = patch.axis as usize;
    let (b, c) = crate::flux::tangential(a);
    let [p, q] = patch.in_plane();
    let mut region = Region {
        start: [0; 3],
        end: [0; 3],
        stride: [1; 3],
    };
    region.start[a] = patch.index;
    region.end[a] = patch.index + 1;
    for (k, axis) in [p, q].into_iter().enumerate() {
        region.start[axis] = patch.start[k];
        region.end[axis] = patch.start[k] + patch.count[k];
    }
    let coords = group.create_group("coordinates")?;
    str_attr(
        &coords,
        "definition",
        "per DFT field, the coordinates (m) of its samples along the two in-plane axes",
    )?;
    for (comp, twin) in [(b, b), (c, c), (3 + b, c), (3 + c, b)] {
        let comp = Component::ALL[comp];
        let twin = Component::ALL[twin];
        let grp = coords.create_group(comp.name())?;
        for axis in [p, q] {
            grp.new_dataset_builder()
                .with_data(&sample_coordinates(g, twin, &region, axis))
                .create(AXES[axis])?;
        }
    }
    Ok(())
}
