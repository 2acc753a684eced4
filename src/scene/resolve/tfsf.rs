//! `type = "tfsf"` sources: the total-field box, the direction and polarization (an axis or a
//! vector), and the checks that the box fits the domain and its boundaries.

use super::placement::num;
use super::text;
use super::Checker;
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// A `[kx, ky, kz]` or a named axis direction (`+x` ...) / component (`Ex` ...) as a unit vector.
fn vector(
    v: &Spanned<toml::Value>,
    key: &str,
    names: &[&str],
    units: &[[f64; 3]],
    ck: &mut Checker,
) -> Option<[f64; 3]> {
    if let Some(t) = text(v) {
        return ck.one_of(&t, key, names).map(|i| units[i]);
    }
    let nums: Option<Vec<f64>> = v.get_ref().as_array().map(|a| {
        a.iter()
            .map(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
            .collect::<Option<Vec<f64>>>()
            .unwrap_or_default()
    });
    match nums {
        Some(n) if n.len() == 3 && n.iter().all(|x| x.is_finite()) => {
            let unit = super::unit_vector([n[0], n[1], n[2]]);
            if unit.is_none() {
                ck.error(v, key, "the vector must not be zero");
            }
            unit
        }
        _ => {
            ck.error(
                v,
                key,
                format!(
                    "expected one of {} or a vector of 3 numbers",
                    names.join(", ")
                ),
            );
            None
        }
    }
}

/// The TF/SF source of scene entry `s` (`key` = "source[n]"), with incident peak E
/// `amplitude` (V/m) and time dependence `waveform`.
#[allow(clippy::too_many_arguments)] // the scene entry, its key and what placing it needs
pub(super) fn tfsf(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    amplitude: f64,
    waveform: Waveform,
    objects: &[Object],
    table: &MaterialTable,
) -> Option<Tfsf> {
    let axes = [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ];
    let dkey = format!("{key}.direction");
    let pkey = format!("{key}.polarization");
    let bkey = format!("{key}.box");
    let k = match &s.direction {
        Some(d) => vector(d, &dkey, &["+x", "-x", "+y", "-y", "+z", "-z"], &axes, ck),
        None => {
            ck.error(
                src,
                key,
                "a tfsf source needs `direction` (+x, -x, +y, -y, +z, -z or [kx, ky, kz])",
            );
            None
        }
    };
    let units = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let e = match &s.polarization {
        Some(p) => vector(p, &pkey, &["Ex", "Ey", "Ez"], &units, ck),
        None => {
            ck.error(
                src,
                key,
                "a tfsf source needs `polarization` (Ex, Ey, Ez or [ex, ey, ez] perpendicular to the direction)",
            );
            None
        }
    };
    if let (Some(k), Some(e)) = (k, e) {
        let dot: f64 = (0..3).map(|a| k[a] * e[a]).sum();
        if dot.abs() > 1e-9 {
            ck.error(
                s.polarization.as_ref().unwrap(),
                &pkey,
                format!(
                    "the polarization must be perpendicular to the direction, but their unit vectors' dot product is {}",
                    num(dot)
                ),
            );
            return None;
        }
    }
    let Some(region) = &s.region else {
        ck.error(
            src,
            key,
            "a tfsf source needs `box = { center = [x, y, z], size = [sx, sy, sz] }`, the total-field region",
        );
        return None;
    };
    let b = region.get_ref();
    if b.center.len() != 3
        || b.size.len() != 3
        || b.center.iter().chain(&b.size).any(|x| !x.is_finite())
    {
        ck.error(region, &bkey, "center and size are 3 finite numbers each");
        return None;
    }
    if b.size.iter().any(|&x| x <= 0.0) {
        ck.error(
            region,
            &bkey,
            "the box's size must be positive along every axis",
        );
        return None;
    }
    let (k, e, g, faces) = (k?, e?, grid?, faces?);
    let axial = k.iter().filter(|x| **x != 0.0).count() == 1;
    let mut lo = [0; 3];
    let mut hi = [0; 3];
    let mut spans = [false; 3];
    let mut ok = true;
    let mut moved = false;
    for a in 0..3 {
        let name = Axis::ALL[a].name();
        let n = g.shape[a];
        let (c, sz) = (b.center[a] * unit_m, b.size[a] * unit_m);
        let node = |x: f64| g.fractional_index(a, x).round();
        let (l, h) = (node(c - sz / 2.0), node(c + sz / 2.0));
        let off = |i: f64, x: f64| (g.coordinate(a, i) - x).abs() > 1e-6 * g.cell[a];
        moved |= off(l, c - sz / 2.0) || off(h, c + sz / 2.0);
        let periodic = faces[a][0] == BoundaryKind::Periodic;
        // An oblique wave with a component along a periodic axis has a phase that changes
        // from one period to the next: that needs Bloch-periodic walls. Along a periodic axis
        // it does not travel along (a 2-D run's one periodic cell), it is periodic as it is.
        if periodic && !axial && k[a] != 0.0 {
            ck.error(
                s.direction.as_ref().unwrap(),
                &dkey,
                format!("oblique incidence with a component along the periodic {name} axis needs Bloch-periodic walls, which a TF/SF source does not support: use a `plane_wave` source with this direction (it sets the Bloch phase of {name} itself), make the direction perpendicular to {name}, or put PML or PEC on {name}"),
            );
            ok = false;
            continue;
        }
        if periodic && l <= 0.0 && h >= n as f64 {
            spans[a] = true;
            if k[a] != 0.0 {
                ck.error(region, &bkey, format!("the box spans the periodic {name} axis along which the wave travels: it would never enter; make the box shorter along {name}"));
                ok = false;
            }
            hi[a] = n;
            continue;
        }
        // The box and the cells just outside it (the scattered-field side of each face) stay
        // off the PML and inside the domain.
        let (plo, phi) = (
            faces[a][0].pml_cells() as f64,
            faces[a][1].pml_cells() as f64,
        );
        let (min, max) = (plo + 1.0, n as f64 - phi - 1.0);
        if h - l < 1.0 || l < min || h > max {
            let at = |i: f64| num(g.coordinate(a, i) / unit_m);
            let what = if plo + phi > 0.0 && !periodic {
                "the PML"
            } else {
                "the domain edge"
            };
            ck.error(
                region,
                &bkey,
                if h - l < 1.0 {
                    format!("the box is thinner than one cell along {name}")
                } else {
                    format!(
                        "the box spans {name} = [{}, {}], which reaches {what}: the total-field box and one cell around it must lie in [{}, {}]",
                        at(l),
                        at(h),
                        at(min),
                        at(max)
                    )
                },
            );
            ok = false;
            continue;
        }
        lo[a] = l as usize;
        hi[a] = h as usize;
    }
    if !ok {
        return None;
    }
    // On a graded axis the box and two cells around it must lie in background cells: the 1-D
    // incident grid steps by the background cell, and its dispersion is the 3-D grid's only
    // where the 3-D cells are those (along a spanned axis, the whole axis).
    for a in (0..3).filter(|&a| g.lines[a].is_some()) {
        let (from, to) = if spans[a] {
            (0, g.shape[a])
        } else {
            (lo[a].saturating_sub(2), (hi[a] + 2).min(g.shape[a]))
        };
        if (from..to).any(|i| (g.primal(a, i as isize) - g.cell[a]).abs() > 1e-9 * g.cell[a]) {
            ck.error(
                region,
                &bkey,
                format!(
                    "a TF/SF box needs cells of exactly simulation.cell_size across it and two cells around it, but the graded mesh has other cells there along {}: move the [[refine]] boxes (or the objects cells_per_wavelength refines) off the TF/SF box and pin background cells around it with a vacuum box two cells larger than the TF/SF box (object faces are mesh nodes, so the grading cannot shrink the cells between them), or use a plane_wave source",
                    Axis::ALL[a].name()
                ),
            );
            return None;
        }
    }
    let at = |a: usize, i: usize| g.coordinate(a, i as f64);
    if moved {
        let faces: Vec<String> = (0..3)
            .filter(|&a| !spans[a])
            .map(|a| {
                format!(
                    "{} = [{}, {}]",
                    Axis::ALL[a].name(),
                    num(at(a, lo[a]) / unit_m),
                    num(at(a, hi[a]) / unit_m)
                )
            })
            .collect();
        ck.warn(
            region,
            &bkey,
            format!(
                "the box's faces lie on the nearest grid planes: {}",
                faces.join(", ")
            ),
        );
    }
    // The incident field is that of vacuum: an object on a face of the box makes the
    // correction there wrong (the total field there is not the vacuum wave plus a scattered
    // part that the face would pass).
    for o in objects {
        let (olo, ohi) = o.bounds();
        let inside = (0..3).all(|a| {
            spans[a] || (olo[a] > at(a, lo[a]) + g.cell[a] && ohi[a] < at(a, hi[a]) - g.cell[a])
        });
        let apart = (0..3).any(|a| {
            !spans[a] && (ohi[a] < at(a, lo[a]) - g.cell[a] || olo[a] > at(a, hi[a]) + g.cell[a])
        });
        if !inside && !apart {
            ck.warn(
                region,
                &bkey,
                format!(
                    "an object of `{}` reaches a face of the box (within a cell): the incident field is that of vacuum, so the scattered field is right only for objects wholly inside or outside the box",
                    table.materials[o.material as usize].name
                ),
            );
        }
    }
    match Tfsf::new(g, lo, hi, spans, k, e, amplitude, waveform) {
        Ok(t) => Some(t),
        Err(why) => {
            ck.error(src, key, why);
            None
        }
    }
}
