//! The non-uniform mesh: `[[refine]]` boxes, `simulation.grading` and
//! `simulation.cells_per_wavelength`, turned into the node lines of each graded axis.
//!
//! `simulation.cell_size` is the background (largest) cell and `simulation.size` the domain,
//! as on a uniform grid. An axis that no refinement touches stays uniform (`None`), so a scene
//! without refinement resolves to exactly the grid it always did. On a refined axis the PML
//! layers keep `cells` background cells at each face (refinement stays out of them), and
//! [`crate::model::mesh::axis_lines`] fills the interior between them, with a node on every
//! refine box face and every object's extent along the axis (box faces, sphere extremes).

use super::{as_f64, placement, Checker};
use crate::model::mesh::{axis_lines, wavelength_zones, Zone};
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// The default `simulation.grading`: neighbouring cells differ by at most 25 % (the value
/// openEMS and Tidy3D recommend; a grading transition then reflects below -40 dB).
pub const DEFAULT_GRADING: f64 = 1.25;

/// The largest `simulation.grading` accepted: beyond a factor of 2 between neighbouring cells
/// the local error of the non-uniform difference (first order in the size jump) dominates.
pub const MAX_GRADING: f64 = 2.0;

/// What the mesh keys ask for, read and checked.
pub(super) struct MeshRequest {
    /// The ratio bound of neighbouring cells.
    pub grading: f64,
    /// Per axis, the refinement zones (m), from `[[refine]]` and `cells_per_wavelength`.
    pub zones: [Vec<Zone>; 3],
}

/// Read `simulation.grading`, `simulation.cells_per_wavelength` and the `[[refine]]` entries
/// of `text`, checked against the domain of `shape` background cells `cell` (m) with `pml`
/// cells (low, high) along each axis. `f_max` is the highest source frequency (0 without
/// sources). None when something could not be read (reported).
#[allow(clippy::too_many_arguments)] // the facts the mesh depends on, each from its own key
pub(super) fn request(
    scene: &SceneFile,
    text: &str,
    ck: &mut Checker,
    cell: [f64; 3],
    shape: [usize; 3],
    pml: [[usize; 2]; 3],
    unit_m: f64,
    objects: &[Object],
    table: &MaterialTable,
    f_max: f64,
) -> Option<MeshRequest> {
    let sim = scene.simulation.get_ref();
    let mut ok = true;
    let grading = match &sim.grading {
        None => DEFAULT_GRADING,
        Some(g) => {
            let v = *g.get_ref();
            if v.is_finite() && v > 1.0 && v <= MAX_GRADING {
                v
            } else {
                ck.error(
                    g,
                    "simulation.grading",
                    format!(
                        "must be in (1, {MAX_GRADING}] (the largest ratio of neighbouring cells on a non-uniform mesh), got {}",
                        placement::num(v)
                    ),
                );
                ok = false;
                DEFAULT_GRADING
            }
        }
    };
    let origin = [0, 1, 2].map(|a| -0.5 * shape[a] as f64 * cell[a]);
    // The interior of each axis: the domain less its PML layers, where refinement may go.
    let inner = [0, 1, 2].map(|a| {
        [
            origin[a] + pml[a][0] as f64 * cell[a],
            origin[a] + (shape[a] - pml[a][1]) as f64 * cell[a],
        ]
    });
    let mut zones: [Vec<Zone>; 3] = Default::default();
    let entries = match toml::from_str::<RefineEntries>(text) {
        Ok(e) => e.refine,
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            ck.error_at(
                at,
                "refine",
                format!("could not read [[refine]]: {}", e.message()),
            );
            return None;
        }
    };
    for (n, entry) in entries.iter().enumerate() {
        let key = format!("refine[{n}]");
        let r = entry.get_ref();
        let Some(fine) = refine_cell(&r.cell_size, &format!("{key}.cell_size"), ck, cell, unit_m)
        else {
            ok = false;
            continue;
        };
        let b = r.region.get_ref();
        let (Some(c), Some(s)) = (three(&b.center), three(&b.size)) else {
            ck.error(
                &r.region,
                &format!("{key}.box"),
                "expected `{ center = [x, y, z], size = [sx, sy, sz] }` with finite numbers",
            );
            ok = false;
            continue;
        };
        if s.iter().any(|&v| v <= 0.0) {
            ck.error(
                &r.region,
                &format!("{key}.box.size"),
                "box edges must be positive",
            );
            ok = false;
            continue;
        }
        let lo = [0, 1, 2].map(|a| (c[a] - 0.5 * s[a]) * unit_m);
        let hi = [0, 1, 2].map(|a| (c[a] + 0.5 * s[a]) * unit_m);
        // A box may reach past the domain, as geometry may: it is clipped. Wholly outside,
        // it refines nothing, which is a mistake.
        let domain = |a: usize| (origin[a], origin[a] + shape[a] as f64 * cell[a]);
        if let Some(a) = (0..3).find(|&a| hi[a] <= domain(a).0 || lo[a] >= domain(a).1) {
            let (dlo, dhi) = domain(a);
            ck.error(
                &r.region,
                &format!("{key}.box"),
                format!(
                    "the box lies wholly outside the domain along {}: it spans {} to {}, the domain {} to {}",
                    Axis::ALL[a].name(),
                    placement::num(lo[a] / unit_m),
                    placement::num(hi[a] / unit_m),
                    placement::num(dlo / unit_m),
                    placement::num(dhi / unit_m)
                ),
            );
            ok = false;
            continue;
        }
        for a in 0..3 {
            if fine[a] >= cell[a] * (1.0 - 1e-9) {
                continue;
            }
            let [ilo, ihi] = inner[a];
            let (zlo, zhi) = (lo[a].max(ilo), hi[a].min(ihi));
            if zlo >= zhi {
                ck.error(
                    &r.region,
                    &format!("{key}.box"),
                    format!(
                        "the box lies inside the PML along {}: the PML keeps background cells; refine the interior, {} to {}",
                        Axis::ALL[a].name(),
                        placement::num(ilo / unit_m),
                        placement::num(ihi / unit_m)
                    ),
                );
                ok = false;
                continue;
            }
            // Into the PML (not merely past a domain face without one): said.
            let (dlo, dhi) = domain(a);
            let tol = 1e-9 * cell[a];
            if zlo > lo[a].max(dlo) + tol || zhi < hi[a].min(dhi) - tol {
                ck.warn(
                    &r.region,
                    &format!("{key}.box"),
                    format!(
                        "the box reaches into the PML along {}; it is clipped to the interior ({} to {}): the PML keeps background cells",
                        Axis::ALL[a].name(),
                        placement::num(ilo / unit_m),
                        placement::num(ihi / unit_m)
                    ),
                );
            }
            zones[a].push(Zone {
                lo: zlo,
                hi: zhi,
                cell: fine[a],
            });
        }
    }
    if let Some(n) = &sim.cells_per_wavelength {
        match ck.positive(n, "simulation.cells_per_wavelength") {
            Some(per) => {
                let auto = wavelength_zones(objects, table, f_max, per, cell);
                for (a, list) in auto.into_iter().enumerate() {
                    let [ilo, ihi] = inner[a];
                    zones[a].extend(list.into_iter().filter_map(|z| {
                        let (lo, hi) = (z.lo.max(ilo), z.hi.min(ihi));
                        (lo < hi).then_some(Zone { lo, hi, ..z })
                    }));
                }
            }
            None => ok = false,
        }
    }
    ok.then_some(MeshRequest { grading, zones })
}

/// The node lines of each axis for `request` on the domain of `shape` cells `cell` (m) with
/// `pml` cells at each face: `None` on an axis without zones (uniform), else the PML's
/// background cells at both ends around [`axis_lines`] over the interior, which snaps to
/// the zone faces and to `objects`' extents.
pub(super) fn lines(
    request: &MeshRequest,
    cell: [f64; 3],
    shape: [usize; 3],
    pml: [[usize; 2]; 3],
    objects: &[Object],
) -> [Option<Vec<f64>>; 3] {
    [0, 1, 2].map(|a| {
        let zones = &request.zones[a];
        if zones.is_empty() {
            return None;
        }
        let origin = -0.5 * shape[a] as f64 * cell[a];
        let node = |i: usize| origin + i as f64 * cell[a];
        let (lo, hi) = (node(pml[a][0]), node(shape[a] - pml[a][1]));
        let mut snaps: Vec<f64> = Vec::new();
        for z in zones {
            snaps.extend([z.lo, z.hi]);
        }
        for o in objects {
            let (blo, bhi) = o.bounds();
            snaps.extend([blo[a], bhi[a]]);
        }
        let inner = axis_lines(lo, hi, cell[a], zones, request.grading, &snaps);
        let mut l: Vec<f64> = (0..pml[a][0]).map(node).collect();
        l.extend_from_slice(&inner);
        l.extend((shape[a] - pml[a][1] + 1..=shape[a]).map(node));
        Some(l)
    })
}

/// Cells the mesh of `request` has at least along each axis, without building it: the most
/// any one zone needs (its length over its cell) plus the PML's background cells, or the
/// background `shape` on an axis without zones. A mesh asked for with absurdly small cells is
/// refused from this before its node lines, which would not fit in memory, are made.
pub(super) fn fewest_cells(
    request: &MeshRequest,
    shape: [usize; 3],
    pml: [[usize; 2]; 3],
) -> [f64; 3] {
    [0, 1, 2].map(|a| {
        let zones = &request.zones[a];
        if zones.is_empty() {
            return shape[a] as f64;
        }
        let inner = zones
            .iter()
            .map(|z| ((z.hi - z.lo) / z.cell).floor())
            .fold(1.0f64, f64::max);
        inner + (pml[a][0] + pml[a][1]) as f64
    })
}

/// The smallest cell along each axis the `[[refine]]` entries of `text` ask for, no larger
/// than `background` (m), entries that cannot be read left out (they are reported by
/// [`request`]).
pub(super) fn finest_cells(text: &str, background: [f64; 3], unit_m: f64) -> [f64; 3] {
    let entries = toml::from_str::<RefineEntries>(text).map_or(Vec::new(), |e| e.refine);
    let mut finest = background;
    for e in &entries {
        let v = e.get_ref().cell_size.get_ref();
        let c = match v {
            toml::Value::Array(a) if a.len() == 3 => {
                let x: Vec<f64> = a.iter().filter_map(as_f64).collect();
                (x.len() == 3).then(|| [x[0], x[1], x[2]])
            }
            other => as_f64(other).map(|d| [d; 3]),
        };
        if let Some(c) = c {
            for a in 0..3 {
                let d = c[a] * unit_m;
                if d.is_finite() && d > 0.0 && d < finest[a] {
                    finest[a] = d;
                }
            }
        }
    }
    finest
}

/// A refine entry's `cell_size`: one number or three, positive and at most the background.
fn refine_cell(
    v: &Spanned<toml::Value>,
    key: &str,
    ck: &mut Checker,
    background: [f64; 3],
    unit_m: f64,
) -> Option<[f64; 3]> {
    let c = match v.get_ref() {
        toml::Value::Array(a) if a.len() == 3 => {
            let x: Vec<f64> = a.iter().filter_map(as_f64).collect();
            (x.len() == 3).then(|| [x[0], x[1], x[2]])
        }
        other => as_f64(other).map(|d| [d; 3]),
    };
    let Some(c) = c else {
        ck.error(
            v,
            key,
            format!(
                "expected a positive number or [dx, dy, dz], got {}",
                v.get_ref()
            ),
        );
        return None;
    };
    if c.iter().any(|d| !(d.is_finite() && *d > 0.0)) {
        ck.error(v, key, "cell sizes must be positive numbers");
        return None;
    }
    let c = c.map(|d| d * unit_m);
    for a in 0..3 {
        if c[a] > background[a] * (1.0 + 1e-9) {
            ck.error(
                v,
                key,
                format!(
                    "the refined cell along {} ({}) is larger than the background cell simulation.cell_size ({}): a refine box can only ask for smaller cells",
                    Axis::ALL[a].name(),
                    placement::num(c[a] / unit_m),
                    placement::num(background[a] / unit_m)
                ),
            );
            return None;
        }
    }
    Some(c)
}

/// Three finite numbers.
fn three(v: &[f64]) -> Option<[f64; 3]> {
    (v.len() == 3 && v.iter().all(|x| x.is_finite())).then(|| [v[0], v[1], v[2]])
}

/// The largest ratio of neighbouring cells of `lines`.
pub(super) fn max_ratio(lines: &[f64]) -> f64 {
    lines
        .windows(3)
        .map(|w| {
            let (a, b) = (w[1] - w[0], w[2] - w[1]);
            a.max(b) / a.min(b)
        })
        .fold(1.0, f64::max)
}
