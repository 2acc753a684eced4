//! The mesh in the result file: `/grid/x|y|z` and `uniform` on every run, each snapshot
//! component's own staggered sample coordinates (after the stride), the NaN spacing of a graded
//! axis, and the XDMF sidecar's rectilinear geometry on a graded grid.
//!
//! The graded model is a uniform scene whose x axis is given graded node lines by hand (the
//! same cell count), so these tests check the file layout and coordinates, not the physics of
//! a graded update.

mod common;

use std::path::{Path, PathBuf};
use yee::model::{Component, Model};
use yee::run::{BackendChoice, Quiet, RunOptions};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-mesh-output-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small vacuum scene: 24 x 20 x 16 cells of 50 nm, a dipole, a plane snapshot of Ez and Hx,
/// a strided box snapshot of Ex and Hy, and a flux plane and box keeping their DFT fields.
const SCENE: &str = r#"
[simulation]
name = "mesh"
length_unit = "um"
cell_size = 0.05
size = [1.2, 1.0, 0.8]
steps = 12
precision = "f32"
[boundaries]
default = { type = "pml", cells = 4 }
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }
[[monitor]]
type = "snapshot"
name = "plane"
components = ["Ez", "Hx"]
plane = { z = 0.0 }
every = 4
[[monitor]]
type = "snapshot"
name = "box"
components = ["Ex", "Hy"]
box = { center = [0.0, 0.0, 0.0], size = [0.6, 0.4, 0.4] }
every = 6
stride = 2
[[monitor]]
type = "flux"
name = "fx"
plane = { x = 0.2 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
fields = true
[[monitor]]
type = "flux"
name = "fbox"
box = { center = [0.0, 0.0, 0.0], size = [0.5, 0.5, 0.2] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
fields = true
"#;

/// Run `model` on the CPU into `dir/mesh.h5`.
fn run(model: &Model, dir: &Path) -> PathBuf {
    let path = dir.join("mesh.h5");
    let mut opts = RunOptions::new(path.clone());
    opts.backend = BackendChoice::Cpu;
    opts.threads = Some(1);
    yee::run::run(model, &opts, &mut Quiet).unwrap_or_else(|e| panic!("{e}"));
    path
}

fn attr_f64s(loc: &hdf5::Location, name: &str) -> Vec<f64> {
    loc.attr(name).unwrap().read_raw::<f64>().unwrap()
}

fn read(f: &hdf5::File, path: &str) -> Vec<f64> {
    f.dataset(path).unwrap().read_raw::<f64>().unwrap()
}

/// Graded node lines over `n` cells from `x0` to `x0 + length`: cells in proportion to
/// 1 + 0.6 cos(2 pi i / n), so the finest is a quarter of the coarsest and neighbours differ by
/// a few percent.
fn graded(x0: f64, length: f64, n: usize) -> Vec<f64> {
    let w: Vec<f64> = (0..n)
        .map(|i| 1.0 + 0.6 * (2.0 * std::f64::consts::PI * (i as f64 + 0.5) / n as f64).cos())
        .collect();
    let total: f64 = w.iter().sum();
    let mut lines = vec![x0];
    let mut x = x0;
    for (i, wi) in w.iter().enumerate() {
        x += length * wi / total;
        lines.push(if i + 1 == n { x0 + length } else { x });
    }
    lines
}

/// The coordinate along an axis with `nodes` of sample index `i` of a component staggered
/// (`half`) or not along it, computed here from the nodes alone: the node, or the midpoint of
/// the cell.
fn expected(nodes: &[f64], i: usize, half: bool) -> f64 {
    if half {
        0.5 * (nodes[i] + nodes[i + 1])
    } else {
        nodes[i]
    }
}

/// On a uniform grid: `/grid/*` are `origin + i * cell` (nx+1, ny+1, nz+1 values),
/// `uniform` is true, and each snapshot component's coordinates equal its `origin` and
/// `spacing` attributes; the sidecar keeps the uniform geometry.
#[test]
fn uniform_files_list_their_nodes_and_sample_coordinates() {
    let dir = tmpdir("uniform");
    let model = common::model(SCENE);
    let path = run(&model, &dir);
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(&path)
        .unwrap();
    assert!(f.attr("uniform").unwrap().read_scalar::<bool>().unwrap());
    let origin = attr_f64s(&f, "origin");
    let cell = attr_f64s(&f, "cell_size");
    let shape = f.attr("shape").unwrap().read_raw::<u64>().unwrap();
    assert_eq!(shape, vec![24, 20, 16]);
    for (a, name) in ["x", "y", "z"].iter().enumerate() {
        let nodes = read(&f, &format!("grid/{name}"));
        assert_eq!(nodes.len() as u64, shape[a] + 1);
        for (i, &v) in nodes.iter().enumerate() {
            // The uniform formula exactly: the grid's own positions are computed this way.
            assert_eq!(v, origin[a] + i as f64 * cell[a], "{name}[{i}]");
        }
    }
    for (snap, comps) in [("plane", ["Ez", "Hx"]), ("box", ["Ex", "Hy"])] {
        for c in comps {
            let ds = f.dataset(&format!("snapshots/{snap}/{c}")).unwrap();
            let o = attr_f64s(&ds, "origin");
            let s = attr_f64s(&ds, "spacing");
            for (a, name) in ["x", "y", "z"].iter().enumerate() {
                let xs = read(&f, &format!("snapshots/{snap}/coordinates/{c}/{name}"));
                assert_eq!(xs.len(), ds.shape()[a + 1], "{snap}/{c} {name}");
                for (j, &v) in xs.iter().enumerate() {
                    // Two roundings apart at most (origin + i cell vs o + j s): 1e-15 of
                    // the micrometre domain.
                    assert!(
                        (v - (o[a] + j as f64 * s[a])).abs() < 1e-21,
                        "{snap}/{c} {name}[{j}]: {v}"
                    );
                }
            }
        }
    }
    let xml = std::fs::read_to_string(dir.join("mesh.xmf")).unwrap();
    assert!(xml.contains("3DCoRectMesh") && !xml.contains("3DRectMesh"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a graded x axis: `/grid/x` is the lines, y and z stay uniform, `uniform` is false, every
/// snapshot component's coordinates are its own staggered positions after the stride (computed
/// here from the nodes), `spacing` is NaN along x only, `origin` is the first sample, and the
/// sidecar describes each geometry as a rectilinear mesh over those coordinate datasets.
#[test]
fn graded_files_carry_each_components_coordinates() {
    let dir = tmpdir("graded");
    let mut model = common::model(SCENE);
    let g = &model.grid;
    let lines = graded(g.origin[0], g.shape[0] as f64 * g.cell[0], g.shape[0]);
    model.grid.lines[0] = Some(lines.clone());
    let path = run(&model, &dir);
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(&path)
        .unwrap();
    assert!(!f.attr("uniform").unwrap().read_scalar::<bool>().unwrap());
    assert_eq!(read(&f, "grid/x"), lines);
    let origin = attr_f64s(&f, "origin");
    let cell = attr_f64s(&f, "cell_size");
    let ys = read(&f, "grid/y");
    assert_eq!(ys.len(), 21);
    assert_eq!(ys[20], origin[1] + 20.0 * cell[1]);
    let nodes = [lines.clone(), ys, read(&f, "grid/z")];

    for (snap, comps) in [("plane", ["Ez", "Hx"]), ("box", ["Ex", "Hy"])] {
        for c in comps {
            let comp = Component::parse(c).unwrap();
            let ds = f.dataset(&format!("snapshots/{snap}/{c}")).unwrap();
            let start = ds.attr("index_start").unwrap().read_raw::<i64>().unwrap();
            let stride = ds.attr("stride").unwrap().read_raw::<i64>().unwrap();
            let spacing = attr_f64s(&ds, "spacing");
            assert!(spacing[0].is_nan(), "{snap}/{c}: no single spacing along x");
            assert!(spacing[1].is_finite() && spacing[2].is_finite());
            let o = attr_f64s(&ds, "origin");
            for (a, name) in ["x", "y", "z"].iter().enumerate() {
                let xs = read(&f, &format!("snapshots/{snap}/coordinates/{c}/{name}"));
                assert_eq!(xs.len(), ds.shape()[a + 1]);
                let half = comp.offset()[a] > 0.0;
                for (j, &v) in xs.iter().enumerate() {
                    let i = (start[a] + j as i64 * stride[a]) as usize;
                    let want = expected(&nodes[a], i, half);
                    // Interpolation within a cell vs the midpoint: a rounding or two of 1e-6 m.
                    assert!(
                        (v - want).abs() < 1e-20,
                        "{snap}/{c} {name}[{j}]: {v} vs {want}"
                    );
                }
                assert_eq!(o[a], xs[0], "{snap}/{c}: origin is the first sample");
            }
        }
    }
    // The box is strided: its x samples are every other node line, not evenly spaced.
    let bx = read(&f, "snapshots/box/coordinates/Ex/x");
    let steps: Vec<f64> = bx.windows(2).map(|w| w[1] - w[0]).collect();
    let spread =
        steps.iter().cloned().fold(0.0, f64::max) / steps.iter().cloned().fold(1.0, f64::min);
    assert!(spread > 1.05, "graded samples: {steps:?}");

    // Flux DFT fields: a plane normal to x (fields E_y, E_z, H_y, H_z) and the box faces,
    // each field at its in-plane Yee position (H_b where E_c is), and the plane's position on
    // its node line.
    let plane = f.group("flux/fx").unwrap();
    let index = plane.attr("index").unwrap().read_scalar::<i64>().unwrap() as usize;
    let at = plane
        .attr("position")
        .unwrap()
        .read_scalar::<f64>()
        .unwrap();
    assert_eq!(at, lines[index], "the plane lies on its graded node line");
    for (group, normal) in [
        ("flux/fx", 0),
        ("flux/fbox/z_max", 2),
        ("flux/fbox/x_min", 0),
    ] {
        let grp = f.group(group).unwrap();
        let (b, c) = ((normal + 1) % 3, (normal + 2) % 3);
        let (p, q) = (b.min(c), b.max(c));
        let start = if grp.attr_names().unwrap().contains(&"start".to_string()) {
            let s = grp.attr("start").unwrap().read_raw::<i64>().unwrap();
            [s[0] as usize, s[1] as usize]
        } else {
            [0, 0]
        };
        for (k, twin) in [(b, b), (c, c), (3 + b, c), (3 + c, b)] {
            let comp = Component::ALL[k];
            let twin = Component::ALL[twin];
            let ds = grp.dataset(comp.name()).unwrap();
            for (i, axis) in [p, q].into_iter().enumerate() {
                let name = ["x", "y", "z"][axis];
                let xs = read(&f, &format!("{group}/coordinates/{}/{name}", comp.name()));
                assert_eq!(xs.len(), ds.shape()[1 + i], "{group} {comp:?} {name}");
                let half = twin.offset()[axis] > 0.0;
                for (j, &v) in xs.iter().enumerate() {
                    let want = expected(&nodes[axis], start[i] + j, half);
                    assert!((v - want).abs() < 1e-20, "{group} {comp:?} {name}[{j}]");
                }
            }
        }
    }

    let xml = std::fs::read_to_string(dir.join("mesh.xmf")).unwrap();
    assert!(!xml.contains("3DCoRectMesh") && !xml.contains("ORIGIN_DXDYDZ"));
    // Frames: plane 3 (steps 4, 8, 12) with two geometries (Ez, Hx), box 2 with two (Ex, Hy).
    assert_eq!(
        xml.matches("GeometryType=\"VXVYVZ\"").count(),
        3 * 2 + 2 * 2
    );
    let plane = f.dataset("snapshots/plane/Ez").unwrap().shape();
    let (nx, ny, nz) = (plane[1], plane[2], plane[3]);
    assert!(xml.contains(&format!(
        "<Topology TopologyType=\"3DRectMesh\" Dimensions=\"{nx} {ny} {nz}\"/>"
    )));
    // VXVYVZ lists the fastest-varying axis first: z, then y, then x, each its dataset.
    let vz = format!(
        "<DataItem Name=\"z\" Dimensions=\"{nz}\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">mesh.h5:/snapshots/plane/coordinates/Ez/z</DataItem>"
    );
    let vx = format!(
        "<DataItem Name=\"x\" Dimensions=\"{nx}\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">mesh.h5:/snapshots/plane/coordinates/Ez/x</DataItem>"
    );
    assert_eq!(xml.matches(&vz).count(), 3);
    let (iz, ix) = (xml.find(&vz).unwrap(), xml.find(&vx).unwrap());
    assert!(iz < ix, "z before x");
    assert!(xml.contains("mesh.h5:/snapshots/box/coordinates/Hy/y</DataItem>"));
    let _ = std::fs::remove_dir_all(&dir);
}
