//! `[[geometry]]` shapes drawn elsewhere: polygons (`polygon`), GDSII layers (`gds`), STL
//! meshes (`mesh`) and material grids (`voxels`). Files are read relative to the scene file;
//! every problem names the key, and for a file what in it is wrong.

use super::shape_context::{material_id, Ctx};
use super::Checker;
use crate::model::prism::{self_intersection, signed_area2, Prism};
use crate::model::trimesh::{closed_problem, TriMesh};
use crate::model::voxels::VoxelGrid;
use crate::model::Shape;
use crate::scene::schema::GeometrySpec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use toml::Spanned;

/// The path of `file` relative to the scene file `scene`.
fn beside(scene: &str, file: &str) -> PathBuf {
    let p = std::path::Path::new(file);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::path::Path::new(scene)
        .parent()
        .map_or_else(|| p.to_path_buf(), |d| d.join(p))
}

/// The file of entry `g`, read whole; None with the problem reported.
fn read_file(ck: &mut Checker, g: &GeometrySpec, key: &str) -> Option<(Vec<u8>, String)> {
    let Some(file) = &g.file else {
        ck.error(&g.shape, key, "missing the required key `file`");
        return None;
    };
    let path = beside(ck.file, file.get_ref());
    match std::fs::read(&path) {
        Ok(bytes) => Some((bytes, path.display().to_string())),
        Err(e) => {
            ck.error(
                file,
                &format!("{key}.file"),
                format!("cannot read {}: {e}", path.display()),
            );
            None
        }
    }
}

/// The extrusion of entry `g`: (axis, span in m, sidewall angle in degrees).
fn extrusion(
    ck: &mut Checker,
    g: &GeometrySpec,
    key: &str,
    unit_m: f64,
) -> Option<(usize, [f64; 2], f64)> {
    let axis = match &g.axis {
        None => Some(2),
        Some(a) => match a.get_ref().as_str() {
            Some("x") => Some(0),
            Some("y") => Some(1),
            Some("z") => Some(2),
            _ => {
                ck.error(
                    a,
                    &format!("{key}.axis"),
                    format!("expected \"x\", \"y\" or \"z\", got {}", a.get_ref()),
                );
                None
            }
        },
    };
    let span = match &g.span {
        None => {
            ck.error(
                &g.shape,
                key,
                "missing the required key `span` ([from, to] along the axis)",
            );
            None
        }
        Some(s) => {
            let v = s.get_ref();
            if v.len() != 2 || v.iter().any(|x| !x.is_finite()) {
                ck.error(s, &format!("{key}.span"), "expected two numbers [from, to]");
                None
            } else if v[1] < v[0] {
                ck.error(
                    s,
                    &format!("{key}.span"),
                    format!(
                        "span [{}, {}] runs backwards: give [from, to] with from <= to",
                        v[0], v[1]
                    ),
                );
                None
            } else {
                Some([v[0] * unit_m, v[1] * unit_m])
            }
        }
    };
    let angle = match &g.sidewall_angle {
        None => Some(0.0),
        Some(a) if a.get_ref().is_finite() && a.get_ref().abs() < 90.0 => Some(*a.get_ref()),
        Some(a) => {
            ck.error(
                a,
                &format!("{key}.sidewall_angle"),
                format!(
                    "{} degrees: a sidewall angle lies strictly between -90 and 90",
                    a.get_ref()
                ),
            );
            None
        }
    };
    Some((axis?, span?, angle?))
}

/// A prism of `polygons` (m) along the extrusion of `g`, its sidewall checked not to close it.
fn prism(
    ck: &mut Checker,
    g: &GeometrySpec,
    key: &str,
    (axis, span, angle): (usize, [f64; 2], f64),
    polygons: Vec<Vec<[f64; 2]>>,
    unit_m: f64,
) -> Option<Shape> {
    let p = Prism::new(axis, span, angle, polygons);
    if angle > 0.0 && span[1] > span[0] {
        let inset = (span[1] - span[0]) * angle.to_radians().tan();
        let closes = p.closing_inset();
        if inset >= closes {
            let at = g.sidewall_angle.as_ref().unwrap();
            let largest = (closes / (span[1] - span[0])).atan().to_degrees();
            ck.error(
                at,
                &format!("{key}.sidewall_angle"),
                format!(
                    "at {angle} degrees the walls meet {} {} above span[0], below the top at {}: the prism closes; this shape takes at most about {:.1} degrees over its span",
                    super::placement::num(closes / angle.to_radians().tan() / unit_m),
                    super::unit_label(unit_m),
                    super::placement::num(span[1] / unit_m),
                    largest
                ),
            );
            return None;
        }
    }
    Some(Shape::Prism(Arc::new(p)))
}

/// `shape = "polygon"`: the vertices as a prism.
pub(super) fn polygon(ck: &mut Checker, g: &GeometrySpec, key: &str, cx: &Ctx) -> Option<Shape> {
    let ext = extrusion(ck, g, key, cx.unit_m);
    let Some(vertices) = &g.vertices else {
        ck.error(
            &g.shape,
            key,
            "missing the required key `vertices` ([[u, v], ...], at least three)",
        );
        return None;
    };
    let vkey = format!("{key}.vertices");
    let v = vertices.get_ref();
    if let Some(i) = v
        .iter()
        .position(|p| p.len() != 2 || p.iter().any(|x| !x.is_finite()))
    {
        ck.error(
            vertices,
            &vkey,
            format!("vertex {i} is not two finite numbers [u, v]"),
        );
        return None;
    }
    let mut poly: Vec<[f64; 2]> = v
        .iter()
        .map(|p| [p[0] * cx.unit_m, p[1] * cx.unit_m])
        .collect();
    // A closing vertex equal to the first is allowed, as GDS and shapely write them.
    if poly.len() > 3 && poly.first() == poly.last() {
        poly.pop();
    }
    if poly.len() < 3 {
        ck.error(
            vertices,
            &vkey,
            format!(
                "a polygon needs at least three vertices, got {}",
                poly.len()
            ),
        );
        return None;
    }
    if let Some((i, j)) = self_intersection(&poly) {
        ck.error(
            vertices,
            &vkey,
            format!("the polygon crosses itself: its edge from vertex {i} meets the edge from vertex {j}; give the outline in order, without crossings"),
        );
        return None;
    }
    if signed_area2(&poly) == 0.0 {
        ck.error(
            vertices,
            &vkey,
            "the polygon has no area: its vertices lie on one line",
        );
        return None;
    }
    prism(ck, g, key, ext?, vec![poly], cx.unit_m)
}

/// One structure of a GDS library, as far as painting goes.
#[derive(Default)]
struct Structure {
    /// (layer, datatype, vertices in database units).
    polygons: Vec<(i16, i16, Vec<[f64; 2]>)>,
    /// (referenced structure, transform, origins).
    references: Vec<(String, Transform, Vec<[f64; 2]>)>,
}

/// A GDS placement: reflect about x, magnify, rotate (degrees, counter-clockwise), translate.
#[derive(Clone, Copy)]
struct Transform {
    reflect: bool,
    mag: f64,
    angle: f64,
}

impl Transform {
    fn apply(&self, p: [f64; 2], origin: [f64; 2]) -> [f64; 2] {
        let y = if self.reflect { -p[1] } else { p[1] };
        let (s, c) = self.angle.to_radians().sin_cos();
        let (x, y) = (self.mag * p[0], self.mag * y);
        [origin[0] + c * x - s * y, origin[1] + s * x + c * y]
    }
}

/// A path's outline: each segment a rectangle of its width, extended by half the width at
/// joints and, for path types 1 and 2, at the path's ends; their union is the path.
fn path_polygons(xy: &[[f64; 2]], width: f64, extend: bool) -> Vec<Vec<[f64; 2]>> {
    let h = 0.5 * width.abs();
    let mut out = Vec::new();
    for k in 0..xy.len().saturating_sub(1) {
        let (a, b) = (xy[k], xy[k + 1]);
        let d = [b[0] - a[0], b[1] - a[1]];
        let len = (d[0] * d[0] + d[1] * d[1]).sqrt();
        if len == 0.0 || h == 0.0 {
            continue;
        }
        let t = [d[0] / len, d[1] / len];
        let n = [-t[1] * h, t[0] * h];
        // Each end reaches half the width on: at a joint (so that the rectangles of two
        // segments cover the corner between them), and at the path's ends for types 1 and 2.
        let ea = if extend || k > 0 { h } else { 0.0 };
        let eb = if extend || k + 2 < xy.len() { h } else { 0.0 };
        let a = [a[0] - t[0] * ea, a[1] - t[1] * ea];
        let b = [b[0] + t[0] * eb, b[1] + t[1] * eb];
        out.push(vec![
            [a[0] + n[0], a[1] + n[1]],
            [a[0] - n[0], a[1] - n[1]],
            [b[0] - n[0], b[1] - n[1]],
            [b[0] + n[0], b[1] + n[1]],
        ]);
    }
    out
}

/// The structures of a GDS library and its size of a database unit (in user units, in m).
fn parse_gds(bytes: &[u8]) -> Result<(BTreeMap<String, Structure>, f64, f64), String> {
    use gdsii::parser::{Element, GdsEvent, GdsParser};
    let pairs = |xy: &[gdsii::I32]| -> Vec<[f64; 2]> {
        xy.chunks_exact(2)
            .map(|c| [c[0].get() as f64, c[1].get() as f64])
            .collect()
    };
    let transform = |s: &Option<gdsii::parser::Strans>| match s {
        None => Transform {
            reflect: false,
            mag: 1.0,
            angle: 0.0,
        },
        Some(s) => Transform {
            reflect: s.reflection,
            mag: s.mag.map_or(1.0, f64::from),
            angle: s.angle.map_or(0.0, f64::from),
        },
    };
    let mut structures = BTreeMap::new();
    let mut units = (1e-3, 1e-9);
    let mut current: Option<(String, Structure)> = None;
    for event in GdsParser::new(bytes) {
        match event.map_err(|e| e.to_string())? {
            GdsEvent::LibraryBegin(l) => units = (l.db_in_user, l.db_in_meters),
            GdsEvent::StructureBegin(s) => {
                current = Some((s.name.to_string(), Structure::default()))
            }
            GdsEvent::StructureEnd => {
                if let Some((name, s)) = current.take() {
                    structures.insert(name, s);
                }
            }
            GdsEvent::Element(e) => {
                let Some((_, s)) = current.as_mut() else {
                    continue;
                };
                match e {
                    Element::Boundary(b) => {
                        let mut v = pairs(&b.xy);
                        if v.len() > 1 && v.first() == v.last() {
                            v.pop();
                        }
                        s.polygons.push((b.layer, b.datatype, v));
                    }
                    Element::Path(p) => {
                        let v = pairs(&p.xy);
                        let extend = matches!(p.pathtype, Some(1) | Some(2));
                        for poly in path_polygons(&v, p.width.unwrap_or(0) as f64, extend) {
                            s.polygons.push((p.layer, p.datatype, poly));
                        }
                    }
                    Element::Sref(r) => {
                        s.references.push((
                            r.sname.to_string(),
                            transform(&r.strans),
                            pairs(&r.xy),
                        ));
                    }
                    Element::Aref(r) => {
                        let p = pairs(&r.xy);
                        if p.len() == 3 {
                            let (cols, rows) =
                                (r.colrow.0.max(1) as usize, r.colrow.1.max(1) as usize);
                            let dc = [
                                (p[1][0] - p[0][0]) / cols as f64,
                                (p[1][1] - p[0][1]) / cols as f64,
                            ];
                            let dr = [
                                (p[2][0] - p[0][0]) / rows as f64,
                                (p[2][1] - p[0][1]) / rows as f64,
                            ];
                            let origins = (0..rows)
                                .flat_map(|j| (0..cols).map(move |i| (i, j)))
                                .map(|(i, j)| {
                                    [
                                        p[0][0] + i as f64 * dc[0] + j as f64 * dr[0],
                                        p[0][1] + i as f64 * dc[1] + j as f64 * dr[1],
                                    ]
                                })
                                .collect();
                            s.references
                                .push((r.sname.to_string(), transform(&r.strans), origins));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok((structures, units.0, units.1))
}

/// Every polygon of structure `name` and the structures it places, flattened, in database
/// units, with its layer and datatype: at most `depth` levels of references (a loop is an
/// error).
fn flatten(
    all: &BTreeMap<String, Structure>,
    name: &str,
    place: &dyn Fn([f64; 2]) -> [f64; 2],
    depth: usize,
    out: &mut Vec<(i16, i16, Vec<[f64; 2]>)>,
) -> Result<(), String> {
    if depth == 0 {
        return Err(format!(
            "the cell `{name}` places itself (a reference loop)"
        ));
    }
    let Some(s) = all.get(name) else {
        return Err(format!(
            "a reference to the cell `{name}`, which the file does not define"
        ));
    };
    for (layer, datatype, v) in &s.polygons {
        out.push((*layer, *datatype, v.iter().map(|&p| place(p)).collect()));
    }
    for (child, t, origins) in &s.references {
        for &o in origins {
            let t = *t;
            let inner = move |p: [f64; 2]| place(t.apply(p, o));
            flatten(all, child, &inner, depth - 1, out)?;
        }
    }
    Ok(())
}

/// `shape = "gds"`: every polygon of `layer` in `cell` (flattened) as one prism.
pub(super) fn gds(ck: &mut Checker, g: &GeometrySpec, key: &str, cx: &Ctx) -> Option<Shape> {
    let ext = extrusion(ck, g, key, cx.unit_m);
    let layer = match &g.layer {
        Some(l)
            if l.get_ref().len() == 2 && l.get_ref().iter().all(|&x| (0..=32767).contains(&x)) =>
        {
            Some((l.get_ref()[0] as i16, l.get_ref()[1] as i16))
        }
        Some(l) => {
            ck.error(
                l,
                &format!("{key}.layer"),
                "expected [layer, datatype], two integers from 0",
            );
            None
        }
        None => {
            ck.error(
                &g.shape,
                key,
                "missing the required key `layer` ([layer, datatype])",
            );
            None
        }
    };
    let scale = match &g.scale {
        Some(s) => Some(Some(ck.positive(s, &format!("{key}.scale"))?)),
        None => Some(None),
    };
    let (bytes, path) = read_file(ck, g, key)?;
    let file = g.file.as_ref().unwrap();
    let (structures, db_in_user, db_in_m) = match parse_gds(&bytes) {
        Ok(x) => x,
        Err(e) => {
            ck.error(
                file,
                &format!("{key}.file"),
                format!("{path} is not a GDSII file yee can read: {e}"),
            );
            return None;
        }
    };
    // The cell: as named, or the one top cell (placed by no other).
    let placed: Vec<&str> = structures
        .values()
        .flat_map(|s| s.references.iter().map(|r| r.0.as_str()))
        .collect();
    let tops: Vec<&str> = structures
        .keys()
        .map(|k| k.as_str())
        .filter(|k| !placed.contains(k))
        .collect();
    let cell = match &g.cell {
        Some(c) if structures.contains_key(c.get_ref()) => c.get_ref().clone(),
        Some(c) => {
            let names: Vec<&str> = structures.keys().map(|k| k.as_str()).collect();
            ck.error(
                c,
                &format!("{key}.cell"),
                format!(
                    "{path} has no cell `{}`: it has {}",
                    c.get_ref(),
                    super::list(&names)
                ),
            );
            return None;
        }
        None if tops.len() == 1 => tops[0].to_string(),
        None => {
            ck.error(
                &g.shape,
                key,
                format!(
                    "{path} has {} top cells ({}): name one with `cell`",
                    tops.len(),
                    super::list(&tops)
                ),
            );
            return None;
        }
    };
    let mut flat = Vec::new();
    if let Err(e) = flatten(&structures, &cell, &|p| p, 64, &mut flat) {
        ck.error(file, &format!("{key}.file"), format!("{path}: {e}"));
        return None;
    }
    let (layer, (scale, ext)) = (layer?, (scale?, ext?));
    // Database units to metres: by the file's own unit, or by `scale` user units.
    let to_m = match scale {
        None => db_in_m,
        Some(s) => db_in_user * s * cx.unit_m,
    };
    let polygons: Vec<Vec<[f64; 2]>> = flat
        .iter()
        .filter(|(l, d, v)| (*l, *d) == layer && v.len() >= 3)
        .map(|(_, _, v)| {
            v.iter()
                .map(|p| [p[0] * to_m, p[1] * to_m])
                .collect::<Vec<_>>()
        })
        .filter(|v: &Vec<[f64; 2]>| signed_area2(v) != 0.0)
        .collect();
    if polygons.is_empty() {
        let mut there: Vec<(i16, i16)> = flat.iter().map(|(l, d, _)| (*l, *d)).collect();
        there.sort_unstable();
        there.dedup();
        let names: Vec<String> = there.iter().map(|(l, d)| format!("[{l}, {d}]")).collect();
        let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
        ck.error(
            g.layer.as_ref().unwrap(),
            &format!("{key}.layer"),
            format!(
                "the cell `{cell}` of {path} has no polygon on layer [{}, {}]: it has {}",
                layer.0,
                layer.1,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    super::list(&names)
                }
            ),
        );
        return None;
    }
    if let Some(i) = polygons.iter().position(|p| self_intersection(p).is_some()) {
        ck.error(
            file,
            &format!("{key}.file"),
            format!(
                "polygon {i} of layer [{}, {}] in the cell `{cell}` of {path} crosses itself",
                layer.0, layer.1
            ),
        );
        return None;
    }
    prism(ck, g, key, ext, polygons, cx.unit_m)
}

/// `shape = "mesh"`: a closed STL solid, scaled and translated.
pub(super) fn mesh(ck: &mut Checker, g: &GeometrySpec, key: &str, cx: &Ctx) -> Option<Shape> {
    let scale = match &g.scale {
        Some(s) => ck.positive(s, &format!("{key}.scale"))?,
        None => 1.0,
    };
    let translate = match &g.translate {
        Some(t) => ck.vec3(t, &format!("{key}.translate"))?,
        None => [0.0; 3],
    };
    let (bytes, path) = read_file(ck, g, key)?;
    let file = g.file.as_ref().unwrap();
    let mesh = match stl_io::read_stl(&mut std::io::Cursor::new(&bytes)) {
        Ok(m) => m,
        Err(e) => {
            ck.error(
                file,
                &format!("{key}.file"),
                format!("{path} is not an STL file yee can read: {e}"),
            );
            return None;
        }
    };
    let to_m =
        |v: &stl_io::Vertex| [0, 1, 2].map(|a| (v.0[a] as f64 * scale + translate[a]) * cx.unit_m);
    let vertices: Vec<[f64; 3]> = mesh.vertices.iter().map(to_m).collect();
    let faces: Vec<[usize; 3]> = mesh.faces.iter().map(|f| f.vertices).collect();
    if faces.is_empty() {
        ck.error(
            file,
            &format!("{key}.file"),
            format!("{path} holds no triangles"),
        );
        return None;
    }
    if let Some(why) = closed_problem(&vertices, &faces) {
        ck.error(
            file,
            &format!("{key}.file"),
            format!("{path} is not a closed solid: {why}"),
        );
        return None;
    }
    let triangles = faces.iter().map(|f| f.map(|i| vertices[i])).collect();
    Some(Shape::Mesh(Arc::new(TriMesh::new(triangles))))
}

/// An array of small integers from an `.npy` file: (shape, values in C order).
fn read_npy(bytes: &[u8]) -> Result<(Vec<usize>, Vec<i64>), String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("no .npy magic at its start".into());
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        _ => return Err("a truncated header".into()),
    };
    let header = std::str::from_utf8(bytes.get(start..start + len).ok_or("a truncated header")?)
        .map_err(|_| "a header that is not text")?;
    let field = |name: &str| -> Option<&str> {
        let at = header.find(&format!("'{name}'"))? + name.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.strip_prefix('\''))
        .and_then(|r| r.split('\'').next())
        .ok_or("no descr")?;
    let fortran = field("fortran_order").is_some_and(|r| r.starts_with("True"));
    let shape_text = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or("no shape")?;
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| format!("a shape of `{s}`")))
        .collect::<Result<_, _>>()?;
    let (big, kind, size) = {
        let mut c = descr.chars();
        let order = c.next().ok_or("an empty descr")?;
        let kind = c.next().ok_or("a short descr")?;
        let size: usize = c
            .as_str()
            .parse()
            .map_err(|_| format!("the dtype `{descr}`"))?;
        (order == '>', kind, size)
    };
    if !matches!((kind, size), ('i' | 'u', 1 | 2 | 4 | 8) | ('b', 1)) {
        return Err(format!(
            "the dtype `{descr}`: a material grid holds integers"
        ));
    }
    let count: usize = shape.iter().product();
    let data = &bytes[start + len..];
    if data.len() < count * size {
        return Err(format!(
            "{} bytes of data for {count} values of {size} bytes",
            data.len()
        ));
    }
    let mut values: Vec<i64> = data[..count * size]
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            if big {
                let mut r = c.to_vec();
                r.reverse();
                b[..size].copy_from_slice(&r);
            } else {
                b[..size].copy_from_slice(c);
            }
            let u = u64::from_le_bytes(b);
            if kind == 'i' && size < 8 && (u >> (8 * size - 1)) & 1 == 1 {
                (u | (!0u64 << (8 * size))) as i64
            } else {
                u as i64
            }
        })
        .collect();
    if fortran && shape.len() > 1 {
        // Column-major: reorder into C order.
        let mut c = vec![0; count];
        let n = shape.len();
        let mut idx = vec![0usize; n];
        for (f, v) in values.iter().enumerate() {
            let mut rest = f;
            for a in 0..n {
                idx[a] = rest % shape[a];
                rest /= shape[a];
            }
            let mut at = 0;
            for a in 0..n {
                at = at * shape[a] + idx[a];
            }
            c[at] = *v;
        }
        values = c;
    }
    Ok((shape, values))
}

/// `shape = "voxels"`: one object per value of the grid that some voxel holds, each of its
/// material.
pub(super) fn voxels(ck: &mut Checker, g: &GeometrySpec, key: &str, cx: &Ctx) -> Vec<(Shape, u8)> {
    let region = match &g.region {
        Some(b) => {
            let bs = b.get_ref();
            let spanned = |v: &Vec<f64>| Spanned::new(b.span(), v.clone());
            let c = ck.vec3(&spanned(&bs.center), &format!("{key}.box.center"));
            let s = ck.vec3(&spanned(&bs.size), &format!("{key}.box.size"));
            match (c, s) {
                (Some(c), Some(s)) if s.iter().all(|&x| x > 0.0) => Some((c, s)),
                (Some(_), Some(_)) => {
                    ck.error(
                        b,
                        &format!("{key}.box.size"),
                        "the box of a material grid needs every edge longer than zero",
                    );
                    None
                }
                _ => None,
            }
        }
        None => {
            ck.error(
                &g.shape,
                key,
                "missing the required key `box` ({ center = [...], size = [...] })",
            );
            None
        }
    };
    let materials: Option<Vec<u8>> = match &g.materials {
        Some(m) => {
            let ids: Vec<Option<u8>> = m
                .get_ref()
                .iter()
                .map(|name| {
                    material_id(
                        cx.scene,
                        ck,
                        cx.table,
                        cx.dropped,
                        &Spanned::new(m.span(), name.clone()),
                        &format!("{key}.materials"),
                    )
                })
                .collect();
            if m.get_ref().is_empty() {
                ck.error(
                    m,
                    &format!("{key}.materials"),
                    "a material grid needs at least one material",
                );
                None
            } else {
                ids.into_iter().collect()
            }
        }
        None => {
            ck.error(
                &g.shape,
                key,
                "missing the required key `materials` (the material of each value)",
            );
            None
        }
    };
    let Some((bytes, path)) = read_file(ck, g, key) else {
        return Vec::new();
    };
    let file = g.file.as_ref().unwrap();
    let read = if path.ends_with(".npy") {
        read_npy(&bytes)
    } else {
        match &g.dataset {
            Some(d) => read_h5(&path, d.get_ref()),
            None => {
                ck.error(&g.shape, key, format!("missing the required key `dataset`: the dataset of {path} that holds the grid"));
                return Vec::new();
            }
        }
    };
    let (shape, values) = match read {
        Ok(x) => x,
        Err(e) => {
            ck.error(file, &format!("{key}.file"), format!("{path}: {e}"));
            return Vec::new();
        }
    };
    if shape.len() != 3 || shape.contains(&0) {
        ck.error(file, &format!("{key}.file"), format!("{path}: a material grid is a 3-D array with every dimension at least 1, got shape {shape:?}"));
        return Vec::new();
    }
    let (Some((center, size)), Some(materials)) = (region, materials) else {
        return Vec::new();
    };
    if let Some(bad) = values
        .iter()
        .find(|&&v| v < 0 || v >= materials.len() as i64)
    {
        ck.error(
            file,
            &format!("{key}.file"),
            format!(
                "{path} holds the value {bad}, but `materials` names {} (values 0 to {})",
                materials.len(),
                materials.len() - 1
            ),
        );
        return Vec::new();
    }
    let grid = Arc::new(VoxelGrid {
        lo: [0, 1, 2].map(|a| (center[a] - 0.5 * size[a]) * cx.unit_m),
        hi: [0, 1, 2].map(|a| (center[a] + 0.5 * size[a]) * cx.unit_m),
        shape: [shape[0], shape[1], shape[2]],
        values: values.iter().map(|&v| v as u16).collect(),
    });
    grid.bounds_by_value(materials.len())
        .into_iter()
        .enumerate()
        .filter_map(|(value, bounds)| {
            bounds.map(|bounds| {
                (
                    Shape::Voxels {
                        grid: grid.clone(),
                        value: value as u16,
                        bounds,
                    },
                    materials[value],
                )
            })
        })
        .collect()
}

/// A 3-D integer dataset of an HDF5 file: (shape, values in C order).
fn read_h5(path: &str, dataset: &str) -> Result<(Vec<usize>, Vec<i64>), String> {
    let f = hdf5::File::open(path).map_err(|e| format!("not an HDF5 file yee can read: {e}"))?;
    let ds = f.dataset(dataset).map_err(|_| {
        let names = f.member_names().unwrap_or_default();
        format!(
            "no dataset `{dataset}` (at the top it has {})",
            if names.is_empty() {
                "nothing".to_string()
            } else {
                names.join(", ")
            }
        )
    })?;
    let values: Vec<i64> = ds
        .read_raw::<i64>()
        .map_err(|e| format!("the dataset `{dataset}` is not integers: {e}"))?;
    Ok((ds.shape(), values))
}
