//! XDMF 3 sidecar describing the snapshots of a yee HDF5 file, so ParaView and VisIt can open
//! them as time series without converting any data.
//!
//! Layout written by [`write_xdmf`]:
//! - one temporal collection (`GridType="Collection" CollectionType="Temporal"`) per snapshot
//!   monitor, with one entry per stored frame whose `Time` comes from `/snapshots/<name>/time`;
//! - each entry is a `3DCoRectMesh` grid whose points are the samples (`Dimensions` = the
//!   dataset's `nx' ny' nz'`, `ORIGIN_DXDYDZ` from the dataset's `origin`/`spacing` attributes),
//!   carrying one node-centred attribute per component that selects row `t` of the
//!   `[n, nx', ny', nz']` dataset through a `HyperSlab` data item;
//! - components of one monitor sit at different points (Yee staggering), so when their
//!   geometries differ each frame is a spatial collection holding one grid per geometry;
//! - on a graded (non-uniform) grid, recognised by a `spacing` that is not finite on some axis,
//!   each grid is a `3DRectMesh` with `VXVYVZ` geometry instead, whose three coordinate arrays
//!   are the component's own `/snapshots/<name>/coordinates/<component>/x|y|z` datasets
//!   (module `output::mesh`), referenced in the HDF5 file.
//!
//! XDMF lists structured dimensions slowest-varying first, and ParaView/VisIt read
//! `ORIGIN_DXDYDZ` in that same order. The datasets are C-order `[x][y][z]`, so everything is
//! written in `x y z` order and the geometry is exact, but the viewers' own first axis is the
//! fastest-varying one: ParaView's "X" shows the physical z axis and its "Z" the physical x axis.
//! `VXVYVZ` lists the fastest-varying axis's coordinates first, so the rectilinear geometry
//! lists the z, y, x coordinate datasets in that order: the same picture as the uniform case.
//!
//! A file from an interrupted run is described up to the last frame that every component of
//! the monitor and its `time` dataset hold; a monitor without any frame yet is left out.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// Field components in the order they are listed.
const COMPONENTS: [&str; 6] = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"];

/// Why an XDMF sidecar could not be written.
#[derive(Debug, thiserror::Error)]
pub enum XdmfError {
    /// The HDF5 file could not be opened or read.
    #[error("reading {path}: {source}")]
    Hdf5 {
        /// The HDF5 file.
        path: PathBuf,
        /// What HDF5 said.
        #[source]
        source: hdf5::Error,
    },
    /// A snapshot dataset does not follow the output layout.
    #[error("{path}: {object}: {message}")]
    Layout {
        /// The HDF5 file.
        path: PathBuf,
        /// The offending group or dataset.
        object: String,
        /// What is wrong with it.
        message: String,
    },
    /// The XDMF file could not be written.
    #[error("writing {path}: {source}")]
    Io {
        /// The XDMF file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A sidecar left from an earlier result could not be removed.
    #[error("{path} describes an earlier result but cannot be removed: {source}")]
    Stale {
        /// The old XDMF file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

/// One component dataset of a snapshot monitor.
struct Component3 {
    name: &'static str,
    /// Rows stored (frames), then sample counts per axis.
    rows: usize,
    dims: [usize; 3],
    origin: [f64; 3],
    spacing: [f64; 3],
    /// On a graded grid, the sample coordinates along x, y, z (from the coordinate datasets).
    coords: Option<[Vec<f64>; 3]>,
    number_type: &'static str,
    precision: usize,
}

/// A snapshot monitor: its components and frame times.
struct Snapshot {
    name: String,
    components: Vec<Component3>,
    times: Vec<f64>,
}

impl Snapshot {
    /// Frames that every component and the time axis hold (a partial file may be ragged).
    fn frames(&self) -> usize {
        self.components
            .iter()
            .map(|c| c.rows)
            .chain(std::iter::once(self.times.len()))
            .min()
            .unwrap_or(0)
    }
}

/// Write an XDMF 3 file at `xdmf_path` describing every snapshot in the HDF5 file `h5_path`.
///
/// The HDF5 file is referenced by its path relative to the XDMF file's folder, so the two can
/// be moved together. The XDMF file is written to a temporary name first and renamed, so a
/// reader never sees half a file.
pub fn write_xdmf(h5_path: &Path, xdmf_path: &Path) -> Result<(), XdmfError> {
    let snapshots = read_snapshots(h5_path)?;
    let xdmf_dir = match xdmf_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let h5_ref = relative_path(h5_path, &xdmf_dir);
    let xml = render(&snapshots, &h5_ref);

    let io_err = |source| XdmfError::Io {
        path: xdmf_path.to_path_buf(),
        source,
    };
    let tmp = super::claim::partial_path(xdmf_path);
    std::fs::write(&tmp, xml).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(e)
    })?;
    std::fs::rename(&tmp, xdmf_path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(e)
    })
}

/// Bring the sidecar of the result `h5_path` in step with it: written when the result has
/// snapshots, removed otherwise (a sidecar left from an earlier result would describe datasets
/// that are gone). Returns the sidecar when one was written.
pub fn update_sidecar(h5_path: &Path, snapshots: bool) -> Result<Option<PathBuf>, XdmfError> {
    let sidecar = super::claim::sidecar_path(h5_path);
    if snapshots {
        write_xdmf(h5_path, &sidecar)?;
        return Ok(Some(sidecar));
    }
    match std::fs::remove_file(&sidecar) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(XdmfError::Stale {
            path: sidecar,
            source,
        }),
    }
}

fn read_snapshots(h5_path: &Path) -> Result<Vec<Snapshot>, XdmfError> {
    let h5 = |source| XdmfError::Hdf5 {
        path: h5_path.to_path_buf(),
        source,
    };
    let layout = |object: &str, message: String| XdmfError::Layout {
        path: h5_path.to_path_buf(),
        object: object.to_string(),
        message,
    };

    let file = hdf5::File::open(h5_path).map_err(h5)?;
    if !file.link_exists("snapshots") {
        return Ok(Vec::new());
    }
    let root = file.group("snapshots").map_err(h5)?;
    let mut snapshots = Vec::new();
    for name in root.member_names().map_err(h5)? {
        let Ok(group) = root.group(&name) else {
            continue;
        };
        let times: Vec<f64> = if group.link_exists("time") {
            group
                .dataset("time")
                .and_then(|d| d.read_raw::<f64>())
                .map_err(h5)?
        } else {
            // Without a time axis, number the frames so viewers can still step through them.
            let rows = COMPONENTS
                .iter()
                .filter(|c| group.link_exists(c))
                .filter_map(|c| {
                    group
                        .dataset(c)
                        .ok()
                        .map(|d| d.shape().first().copied().unwrap_or(0))
                })
                .min()
                .unwrap_or(0);
            (0..rows).map(|i| i as f64).collect()
        };

        let mut components = Vec::new();
        for comp in COMPONENTS {
            if !group.link_exists(comp) {
                continue;
            }
            let object = format!("/snapshots/{name}/{comp}");
            let ds = group.dataset(comp).map_err(h5)?;
            let shape = ds.shape();
            if shape.len() != 4 {
                return Err(layout(
                    &object,
                    format!("expected 4 dimensions [n, nx, ny, nz], found {shape:?}"),
                ));
            }
            let vec3 = |attr: &str| -> Result<[f64; 3], XdmfError> {
                let v = ds
                    .attr(attr)
                    .and_then(|a| a.read_raw::<f64>())
                    .map_err(h5)?;
                <[f64; 3]>::try_from(v.as_slice()).map_err(|_| {
                    layout(
                        &object,
                        format!("attribute {attr} has {} values, expected 3", v.len()),
                    )
                })
            };
            let dtype = ds.dtype().map_err(h5)?;
            let number_type = match dtype.to_descriptor().map_err(h5)? {
                hdf5::types::TypeDescriptor::Float(_) => "Float",
                hdf5::types::TypeDescriptor::Integer(_) => "Int",
                hdf5::types::TypeDescriptor::Unsigned(_) => "UInt",
                other => {
                    return Err(layout(
                        &object,
                        format!("unsupported element type {other:?}"),
                    ))
                }
            };
            let dims = [shape[1], shape[2], shape[3]];
            let spacing = vec3("spacing")?;
            let coords = if spacing.iter().all(|v| v.is_finite()) {
                None
            } else {
                Some(read_coordinates(h5_path, &group, &object, comp, dims)?)
            };
            components.push(Component3 {
                name: comp,
                rows: shape[0],
                dims,
                origin: vec3("origin")?,
                spacing,
                coords,
                number_type,
                precision: dtype.size(),
            });
        }
        if !components.is_empty() {
            snapshots.push(Snapshot {
                name,
                components,
                times,
            });
        }
    }
    Ok(snapshots)
}

/// The coordinate datasets `coordinates/<comp>/x|y|z` of a snapshot component with `dims`
/// samples on a graded grid (`object` names the component dataset in errors).
fn read_coordinates(
    h5_path: &Path,
    group: &hdf5::Group,
    object: &str,
    comp: &str,
    dims: [usize; 3],
) -> Result<[Vec<f64>; 3], XdmfError> {
    let layout = |message: String| XdmfError::Layout {
        path: h5_path.to_path_buf(),
        object: object.to_string(),
        message,
    };
    let mut out: [Vec<f64>; 3] = Default::default();
    for (a, axis) in ["x", "y", "z"].iter().enumerate() {
        let path = format!("coordinates/{comp}/{axis}");
        if !group.link_exists("coordinates") || !group.link_exists(&path) {
            return Err(layout(format!(
                "its spacing is not uniform but `{path}` (the sample coordinates) is missing"
            )));
        }
        let v = group
            .dataset(&path)
            .and_then(|d| d.read_raw::<f64>())
            .map_err(|source| XdmfError::Hdf5 {
                path: h5_path.to_path_buf(),
                source,
            })?;
        if v.len() != dims[a] {
            return Err(layout(format!(
                "`{path}` has {} values for {} samples along {axis}",
                v.len(),
                dims[a]
            )));
        }
        out[a] = v;
    }
    Ok(out)
}

/// Render the whole XDMF document.
fn render(snapshots: &[Snapshot], h5_ref: &str) -> String {
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    x.push_str("<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n");
    x.push_str("<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n");
    x.push_str("  <Domain>\n");
    for snap in snapshots {
        render_snapshot(&mut x, snap, h5_ref);
    }
    x.push_str("  </Domain>\n");
    x.push_str("</Xdmf>\n");
    x
}

fn render_snapshot(x: &mut String, snap: &Snapshot, h5_ref: &str) {
    // An empty temporal collection confuses some readers; the monitor appears once it has a frame.
    if snap.frames() == 0 {
        return;
    }
    let name = escape(&snap.name);
    // Components sharing a geometry go into one grid; staggered ones get their own.
    let mut geometries: Vec<Vec<&Component3>> = Vec::new();
    for c in &snap.components {
        match geometries.iter_mut().find(|g| same_geometry(g[0], c)) {
            Some(g) => g.push(c),
            None => geometries.push(vec![c]),
        }
    }
    let _ = writeln!(
        x,
        "    <Grid Name=\"{name}\" GridType=\"Collection\" CollectionType=\"Temporal\">"
    );
    for t in 0..snap.frames() {
        let time = num(snap.times[t]);
        if geometries.len() == 1 {
            let label = format!("{name} {t}");
            render_grid(
                x,
                "      ",
                &label,
                &time,
                &geometries[0],
                t,
                &snap.name,
                h5_ref,
            );
        } else {
            let _ = writeln!(x, "      <Grid Name=\"{name} {t}\" GridType=\"Collection\" CollectionType=\"Spatial\">");
            let _ = writeln!(x, "        <Time Value=\"{time}\"/>");
            for g in &geometries {
                let comps: Vec<&str> = g.iter().map(|c| c.name).collect();
                let label = format!("{name} {} {t}", comps.join(" "));
                render_grid(x, "        ", &label, &time, g, t, &snap.name, h5_ref);
            }
            x.push_str("      </Grid>\n");
        }
    }
    x.push_str("    </Grid>\n");
}

/// One uniform grid: frame `t` of the components in `comps` (which share one geometry).
#[allow(clippy::too_many_arguments)]
fn render_grid(
    x: &mut String,
    ind: &str,
    label: &str,
    time: &str,
    comps: &[&Component3],
    t: usize,
    monitor: &str,
    h5_ref: &str,
) {
    let g = comps[0];
    let [nx, ny, nz] = g.dims;
    let _ = writeln!(x, "{ind}<Grid Name=\"{label}\" GridType=\"Uniform\">");
    let _ = writeln!(x, "{ind}  <Time Value=\"{time}\"/>");
    if g.coords.is_some() {
        render_rectilinear(x, ind, g, monitor, h5_ref);
    } else {
        let _ = writeln!(
            x,
            "{ind}  <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"{nx} {ny} {nz}\"/>"
        );
        let _ = writeln!(x, "{ind}  <Geometry GeometryType=\"ORIGIN_DXDYDZ\">");
        for (what, v) in [("Origin", g.origin), ("Spacing", g.spacing)] {
            let _ = writeln!(
                x,
                "{ind}    <DataItem Name=\"{what}\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">{} {} {}</DataItem>",
                num(v[0]),
                num(v[1]),
                num(v[2])
            );
        }
        let _ = writeln!(x, "{ind}  </Geometry>");
    }
    for c in comps {
        let path = escape(&format!("{h5_ref}:/snapshots/{monitor}/{}", c.name));
        let _ = writeln!(
            x,
            "{ind}  <Attribute Name=\"{}\" AttributeType=\"Scalar\" Center=\"Node\">",
            c.name
        );
        let _ = writeln!(x, "{ind}    <DataItem ItemType=\"HyperSlab\" Dimensions=\"{nx} {ny} {nz}\" Type=\"HyperSlab\">");
        // Start, stride and count per axis of the [n, nx, ny, nz] dataset: row t, everything else.
        let _ = writeln!(
            x,
            "{ind}      <DataItem Dimensions=\"3 4\" NumberType=\"UInt\" Format=\"XML\">{t} 0 0 0 1 1 1 1 1 {nx} {ny} {nz}</DataItem>"
        );
        let _ = writeln!(
            x,
            "{ind}      <DataItem Dimensions=\"{} {nx} {ny} {nz}\" NumberType=\"{}\" Precision=\"{}\" Format=\"HDF\">{path}</DataItem>",
            c.rows, c.number_type, c.precision
        );
        let _ = writeln!(x, "{ind}    </DataItem>");
        let _ = writeln!(x, "{ind}  </Attribute>");
    }
    let _ = writeln!(x, "{ind}</Grid>");
}

/// The topology and geometry of a graded grid: a `3DRectMesh` whose `VXVYVZ` arrays are the
/// component's coordinate datasets, fastest-varying axis (z) first (see the module doc).
fn render_rectilinear(x: &mut String, ind: &str, g: &Component3, monitor: &str, h5_ref: &str) {
    let [nx, ny, nz] = g.dims;
    let _ = writeln!(
        x,
        "{ind}  <Topology TopologyType=\"3DRectMesh\" Dimensions=\"{nx} {ny} {nz}\"/>"
    );
    let _ = writeln!(x, "{ind}  <Geometry GeometryType=\"VXVYVZ\">");
    for (axis, n) in [("z", nz), ("y", ny), ("x", nx)] {
        let path = escape(&format!(
            "{h5_ref}:/snapshots/{monitor}/coordinates/{}/{axis}",
            g.name
        ));
        let _ = writeln!(
            x,
            "{ind}    <DataItem Name=\"{axis}\" Dimensions=\"{n}\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">{path}</DataItem>"
        );
    }
    let _ = writeln!(x, "{ind}  </Geometry>");
}

fn same_geometry(a: &Component3, b: &Component3) -> bool {
    // NaN spacings (graded axes) compare by their coordinates instead.
    let spacing = a
        .spacing
        .iter()
        .zip(&b.spacing)
        .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()));
    a.dims == b.dims && a.origin == b.origin && spacing && a.coords == b.coords
}

/// Shortest text that reads back as the same f64.
fn num(v: f64) -> String {
    format!("{v:e}")
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// `target` as seen from the folder `base`, with `/` separators; absolute if no relative path
/// exists (e.g. another drive).
fn relative_path(target: &Path, base: &Path) -> String {
    let resolve = |p: &Path| {
        p.canonicalize()
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    let target = resolve(target);
    let base = resolve(base);
    let t: Vec<Component> = target.components().collect();
    let b: Vec<Component> = base.components().collect();
    if t.first() != b.first() {
        return target.to_string_lossy().into_owned();
    }
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); b.len() - common];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array4;

    /// A fresh folder for one test.
    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("yee-xdmf-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Add `/snapshots/<monitor>/<comp>` with `rows` frames of `dims` samples, plus its attributes.
    fn add_component<T: hdf5::H5Type + Clone + Default>(
        group: &hdf5::Group,
        comp: &str,
        rows: usize,
        dims: [usize; 3],
        origin: [f64; 3],
        spacing: [f64; 3],
    ) {
        let data = Array4::<T>::default((rows, dims[0], dims[1], dims[2]));
        let ds = group
            .new_dataset_builder()
            .with_data(&data)
            .create(comp)
            .unwrap();
        ds.new_attr::<f64>()
            .shape(3)
            .create("origin")
            .unwrap()
            .write_raw(&origin)
            .unwrap();
        ds.new_attr::<f64>()
            .shape(3)
            .create("spacing")
            .unwrap()
            .write_raw(&spacing)
            .unwrap();
        ds.new_attr::<i64>()
            .shape(3)
            .create("index_start")
            .unwrap()
            .write_raw(&[0i64, 0, 0])
            .unwrap();
        ds.new_attr::<i64>()
            .shape(3)
            .create("stride")
            .unwrap()
            .write_raw(&[1i64, 1, 1])
            .unwrap();
        let offset = if comp.starts_with('H') { -0.5e-16 } else { 0.0 };
        ds.new_attr::<f64>()
            .create("time_offset")
            .unwrap()
            .write_scalar(&offset)
            .unwrap();
    }

    fn add_snapshot(file: &hdf5::File, name: &str, times: &[f64]) -> hdf5::Group {
        let root = if file.link_exists("snapshots") {
            file.group("snapshots").unwrap()
        } else {
            file.create_group("snapshots").unwrap()
        };
        let g = root.create_group(name).unwrap();
        g.new_attr::<i64>()
            .create("every")
            .unwrap()
            .write_scalar(&20i64)
            .unwrap();
        g.new_dataset_builder()
            .with_data(times)
            .create("time")
            .unwrap();
        let steps: Vec<u64> = (1..=times.len() as u64).map(|i| 20 * i).collect();
        g.new_dataset_builder()
            .with_data(&steps)
            .create("step")
            .unwrap();
        g
    }

    fn new_file(path: &Path) -> hdf5::File {
        let file = hdf5::File::create(path).unwrap();
        file.new_attr::<u64>()
            .shape(3)
            .create("shape")
            .unwrap()
            .write_raw(&[8u64, 6, 4])
            .unwrap();
        file.new_attr::<f64>()
            .shape(3)
            .create("cell_size")
            .unwrap()
            .write_raw(&[1e-8, 1e-8, 1e-8])
            .unwrap();
        file
    }

    /// Tags open and close in a proper nesting (a minimal well-formedness check).
    fn assert_balanced(xml: &str) {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = xml;
        while let Some(start) = rest.find('<') {
            let end = start + rest[start..].find('>').expect("unterminated tag");
            let tag = &rest[start + 1..end];
            rest = &rest[end + 1..];
            if tag.starts_with('?') || tag.starts_with('!') {
                continue;
            }
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(
                    stack.pop().as_deref(),
                    Some(name.trim()),
                    "mismatched </{name}>"
                );
            } else if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().unwrap().to_string());
            }
        }
        assert!(stack.is_empty(), "unclosed tags: {stack:?}");
    }

    #[test]
    fn plane_snapshot_one_grid_per_frame() {
        let dir = temp_dir("plane");
        let h5 = dir.join("run.h5");
        {
            let file = new_file(&h5);
            let g = add_snapshot(&file, "ez_xy", &[1e-15, 2e-15, 3e-15]);
            add_component::<f32>(
                &g,
                "Ez",
                3,
                [8, 6, 1],
                [-4e-8, -3e-8, 5e-9],
                [1e-8, 1e-8, 1e-8],
            );
        }
        let xmf = dir.join("run.xmf");
        write_xdmf(&h5, &xmf).unwrap();
        let xml = std::fs::read_to_string(&xmf).unwrap();
        assert_balanced(&xml);

        assert!(xml.contains("<Xdmf Version=\"3.0\""));
        assert!(xml
            .contains("<Grid Name=\"ez_xy\" GridType=\"Collection\" CollectionType=\"Temporal\">"));
        assert_eq!(xml.matches("GridType=\"Uniform\"").count(), 3);
        assert!(!xml.contains("CollectionType=\"Spatial\""));
        for t in ["1e-15", "2e-15", "3e-15"] {
            assert!(
                xml.contains(&format!("<Time Value=\"{t}\"/>")),
                "missing time {t}"
            );
        }
        assert_eq!(
            xml.matches("<Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"8 6 1\"/>")
                .count(),
            3
        );
        assert!(xml.contains("<Geometry GeometryType=\"ORIGIN_DXDYDZ\">"));
        assert!(xml.contains(">-4e-8 -3e-8 5e-9</DataItem>"));
        assert!(xml.contains(">1e-8 1e-8 1e-8</DataItem>"));
        assert_eq!(
            xml.matches("<Attribute Name=\"Ez\" AttributeType=\"Scalar\" Center=\"Node\">")
                .count(),
            3
        );
        for t in 0..3 {
            assert!(
                xml.contains(&format!(">{t} 0 0 0 1 1 1 1 1 8 6 1</DataItem>")),
                "missing slab of row {t}"
            );
        }
        assert_eq!(
            xml.matches("Dimensions=\"3 8 6 1\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">run.h5:/snapshots/ez_xy/Ez</DataItem>").count(),
            3
        );
        assert!(!dir.join("run.xmf.tmp").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn staggered_components_get_their_own_geometry() {
        let dir = temp_dir("staggered");
        let h5 = dir.join("run.h5");
        {
            let file = new_file(&h5);
            let g = add_snapshot(&file, "vol", &[1e-15, 2e-15]);
            let s = [2e-8, 2e-8, 2e-8];
            add_component::<f64>(&g, "Ex", 2, [4, 3, 2], [0.5e-8, 0.0, 0.0], s);
            add_component::<f64>(&g, "Hy", 2, [4, 3, 2], [0.5e-8, 0.0, 0.5e-8], s);
            // Same geometry as Ex: shares its grid.
            add_component::<f64>(&g, "Ey", 2, [4, 3, 2], [0.5e-8, 0.0, 0.0], s);
        }
        let xmf = dir.join("run.xmf");
        write_xdmf(&h5, &xmf).unwrap();
        let xml = std::fs::read_to_string(&xmf).unwrap();
        assert_balanced(&xml);

        assert_eq!(xml.matches("CollectionType=\"Temporal\"").count(), 1);
        assert_eq!(xml.matches("CollectionType=\"Spatial\"").count(), 2);
        // Two geometries per frame, two frames.
        assert_eq!(xml.matches("GridType=\"Uniform\"").count(), 4);
        assert_eq!(
            xml.matches("<Grid Name=\"vol Ex Ey 1\" GridType=\"Uniform\">")
                .count(),
            1
        );
        assert_eq!(
            xml.matches("<Grid Name=\"vol Hy 0\" GridType=\"Uniform\">")
                .count(),
            1
        );
        assert_eq!(xml.matches(">5e-9 0e0 0e0</DataItem>").count(), 2);
        assert_eq!(xml.matches(">5e-9 0e0 5e-9</DataItem>").count(), 2);
        assert_eq!(
            xml.matches("Precision=\"8\" Format=\"HDF\">run.h5:/snapshots/vol/")
                .count(),
            6
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn partial_file_stops_at_the_shortest_dataset() {
        let dir = temp_dir("partial");
        let h5 = dir.join("run.h5");
        {
            let file = new_file(&h5);
            // The run stopped after writing frame 3 of Ez but before Hz and the time.
            let g = add_snapshot(&file, "p", &[1e-15, 2e-15, 3e-15]);
            add_component::<f32>(&g, "Ez", 4, [3, 3, 1], [0.0; 3], [1e-8; 3]);
            add_component::<f32>(&g, "Hz", 2, [3, 3, 1], [0.0; 3], [1e-8; 3]);
            // A monitor with no frames yet is left out.
            let e = add_snapshot(&file, "empty", &[]);
            add_component::<f32>(&e, "Ex", 0, [2, 2, 2], [0.0; 3], [1e-8; 3]);
        }
        let xmf = dir.join("run.xmf");
        write_xdmf(&h5, &xmf).unwrap();
        let xml = std::fs::read_to_string(&xmf).unwrap();
        assert_balanced(&xml);
        assert_eq!(xml.matches("<Time Value=").count(), 2);
        assert!(!xml.contains("<Time Value=\"3e-15\"/>"));
        assert!(!xml.contains("Name=\"empty"));
        // Each HDF reference names the dataset's real row count.
        assert!(xml.contains("Dimensions=\"4 3 3 1\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">run.h5:/snapshots/p/Ez<"));
        assert!(xml.contains("Dimensions=\"2 3 3 1\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">run.h5:/snapshots/p/Hz<"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hdf5_path_is_relative_to_the_xdmf_folder_and_names_are_escaped() {
        let dir = temp_dir("relative");
        let h5 = dir.join("data").join("run.h5");
        std::fs::create_dir_all(h5.parent().unwrap()).unwrap();
        {
            let file = new_file(&h5);
            let g = add_snapshot(&file, "a&b<c>", &[1e-15]);
            add_component::<f32>(&g, "Ez", 1, [2, 2, 1], [0.0; 3], [1e-8; 3]);
        }
        std::fs::create_dir_all(dir.join("views")).unwrap();
        let xmf = dir.join("views").join("run.xmf");
        write_xdmf(&h5, &xmf).unwrap();
        let xml = std::fs::read_to_string(&xmf).unwrap();
        assert_balanced(&xml);
        assert!(
            xml.contains("Format=\"HDF\">../data/run.h5:/snapshots/a&amp;b&lt;c&gt;/Ez</DataItem>")
        );
        assert!(xml.contains("<Grid Name=\"a&amp;b&lt;c&gt;\" GridType=\"Collection\""));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn file_without_snapshots_gives_an_empty_domain() {
        let dir = temp_dir("none");
        let h5 = dir.join("run.h5");
        drop(new_file(&h5));
        let xmf = dir.join("run.xmf");
        write_xdmf(&h5, &xmf).unwrap();
        let xml = std::fs::read_to_string(&xmf).unwrap();
        assert_balanced(&xml);
        assert!(xml.contains("<Domain>\n  </Domain>"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_file_is_an_hdf5_error() {
        let dir = temp_dir("missing");
        let err = write_xdmf(&dir.join("nope.h5"), &dir.join("nope.xmf")).unwrap_err();
        assert!(matches!(err, XdmfError::Hdf5 { .. }), "{err}");
        assert!(err.to_string().contains("nope.h5"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Add `coordinates/<comp>/x|y|z` to a snapshot group.
    fn add_coordinates(group: &hdf5::Group, comp: &str, coords: [&[f64]; 3]) {
        let root = if group.link_exists("coordinates") {
            group.group("coordinates").unwrap()
        } else {
            group.create_group("coordinates").unwrap()
        };
        let g = root.create_group(comp).unwrap();
        for (axis, v) in ["x", "y", "z"].iter().zip(coords) {
            g.new_dataset_builder().with_data(v).create(*axis).unwrap();
        }
    }

    /// A NaN spacing (a graded axis) gives a rectilinear mesh over the coordinate datasets,
    /// z first; components with different coordinates get their own grids; a graded dataset
    /// without its coordinates is a layout error naming it.
    #[test]
    fn graded_snapshots_get_a_rectilinear_mesh() {
        let dir = temp_dir("graded");
        let h5 = dir.join("run.h5");
        let nan = f64::NAN;
        {
            let file = new_file(&h5);
            let g = add_snapshot(&file, "vol", &[1e-15, 2e-15]);
            let s = [nan, 1e-8, 1e-8];
            add_component::<f32>(&g, "Ex", 2, [3, 2, 2], [0.5e-8, 0.0, 0.0], s);
            add_component::<f32>(&g, "Ey", 2, [3, 2, 2], [0.0, 0.5e-8, 0.0], s);
            add_coordinates(
                &g,
                "Ex",
                [&[0.5e-8, 2e-8, 4.5e-8], &[0.0, 1e-8], &[0.0, 1e-8]],
            );
            add_coordinates(
                &g,
                "Ey",
                [&[0.0, 1e-8, 3e-8], &[0.5e-8, 1.5e-8], &[0.0, 1e-8]],
            );
        }
        let xmf = dir.join("run.xmf");
        write_xdmf(&h5, &xmf).unwrap();
        let xml = std::fs::read_to_string(&xmf).unwrap();
        assert_balanced(&xml);
        assert!(!xml.contains("3DCoRectMesh") && !xml.contains("ORIGIN_DXDYDZ"));
        assert_eq!(
            xml.matches("<Topology TopologyType=\"3DRectMesh\" Dimensions=\"3 2 2\"/>")
                .count(),
            4
        );
        assert_eq!(xml.matches("<Geometry GeometryType=\"VXVYVZ\">").count(), 4);
        let z = xml
            .find("<DataItem Name=\"z\" Dimensions=\"2\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">run.h5:/snapshots/vol/coordinates/Ex/z</DataItem>")
            .expect("z coordinates of Ex");
        let x = xml
            .find("<DataItem Name=\"x\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">run.h5:/snapshots/vol/coordinates/Ex/x</DataItem>")
            .expect("x coordinates of Ex");
        assert!(z < x);
        assert!(xml.contains("run.h5:/snapshots/vol/coordinates/Ey/y</DataItem>"));

        let bad = dir.join("bad.h5");
        {
            let file = new_file(&bad);
            let g = add_snapshot(&file, "vol", &[1e-15]);
            add_component::<f32>(&g, "Ez", 1, [3, 2, 2], [0.0; 3], [nan, 1e-8, 1e-8]);
        }
        let err = write_xdmf(&bad, &dir.join("bad.xmf")).unwrap_err();
        assert!(matches!(err, XdmfError::Layout { .. }), "{err}");
        assert!(
            err.to_string().contains("/snapshots/vol/Ez")
                && err.to_string().contains("coordinates/Ez/x"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_paths() {
        let dir = temp_dir("relpaths");
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/f.h5"), b"").unwrap();
        assert_eq!(relative_path(&dir.join("a/f.h5"), &dir.join("a")), "f.h5");
        assert_eq!(
            relative_path(&dir.join("a/f.h5"), &dir.join("a/b")),
            "../f.h5"
        );
        assert_eq!(relative_path(&dir.join("a/f.h5"), &dir), "a/f.h5");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
