//! `[[source]]`: dipoles, plane-wave sheets and their waveforms.
//!
//! What `amplitude` means:
//! - dipole: the peak current density J (A/m^2) on one E cell;
//! - one-way plane wave (the default): the peak incident E (V/m) of the launched wave at the
//!   sheet, the convention of total-field / scattered-field sources and of Tidy3D's plane
//!   waves;
//! - two-way plane wave (`two_way = true`): the peak current density J (A/m^2) of a plain
//!   electric sheet one cell thick, which radiates E = eta J d / 2 each way.
//!
//! A one-way plane wave is a Huygens sheet: the electric current J on the E plane of the sheet
//! and a magnetic current M on the H plane half a cell behind it, the discrete form of the
//! total-field / scattered-field correction. With the incident E at the sheet f(t) and the
//! 1-D Yee dispersion along the axis (the exact dispersion of a normally incident plane wave on
//! the grid), J(t) = -f(t + tau) / (eta d) at t = (n + 1/2) dt and
//! M(t) = -e_apq s f(t) / d at t = n dt, with tau the grid's travel time over half a cell at
//! the band centre, s = +1 for a positive direction and e_apq the sign of the (direction axis,
//! E component, H component) permutation. The two backward waves then cancel exactly at the
//! band centre in a uniform lossless medium (and to second order in the frequency offset
//! elsewhere), and the forward wave has amplitude f.

use super::placement::{dead_source, nearest, warn_moved};
use super::{as_f64, inside, outside_message, position3, text, Checker, E_COMPONENTS};
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

/// The waveform `w` (named `key` in messages) as a model waveform, its problems reported.
pub(super) fn waveform(w: &Spanned<WaveformSpec>, key: &str, ck: &mut Checker) -> Option<Waveform> {
    let s = w.get_ref();
    let kind = ck.one_of(
        &s.kind,
        &format!("{key}.type"),
        &["gaussian", "ricker", "continuous"],
    );
    let frequency = ck.positive(&s.frequency, &format!("{key}.frequency"));
    let delay = match &s.delay {
        Some(d) if *d.get_ref() >= 0.0 => *d.get_ref(),
        Some(d) => {
            ck.error(d, &format!("{key}.delay"), "must be >= 0 seconds");
            0.0
        }
        None => 0.0,
    };
    if kind != Some(0) {
        if let Some(b) = &s.bandwidth {
            ck.error(
                b,
                &format!("{key}.bandwidth"),
                "only a gaussian waveform takes a bandwidth",
            );
        }
    }
    if kind != Some(2) {
        if let Some(r) = &s.ramp {
            ck.error(
                r,
                &format!("{key}.ramp"),
                "only a continuous waveform takes a ramp",
            );
        }
    }
    let f = frequency?;
    match kind? {
        0 => {
            let bandwidth = match &s.bandwidth {
                Some(b) => ck.positive(b, &format!("{key}.bandwidth"))?,
                None => 0.5 * f,
            };
            Some(Waveform::Gaussian {
                frequency: f,
                bandwidth,
                delay,
            })
        }
        1 => Some(Waveform::Ricker {
            frequency: f,
            delay,
        }),
        _ => {
            let ramp = match &s.ramp {
                Some(r) => ck.positive(r, &format!("{key}.ramp"))?,
                None => 3.0 / f,
            };
            Some(Waveform::Continuous {
                frequency: f,
                ramp,
                delay,
            })
        }
    }
}

#[allow(clippy::too_many_arguments)] // the scene, what placing a source needs, and a scan's shift
pub(super) fn sources(
    scene: &SceneFile,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    table: &MaterialTable,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    objects: &[Object],
    shift: &super::placement::Shift,
) -> Option<(Vec<Source>, Option<Tfsf>)> {
    let mut out = Vec::new();
    let mut tfsf_out: Option<Tfsf> = None;
    let mut ok = true;
    for (n, src) in scene.source.iter() {
        let key = format!("source[{n}]");
        let s = src.get_ref();
        let kind = ck.one_of(
            &s.kind,
            &format!("{key}.type"),
            &["dipole", "plane_wave", "tfsf", "mode", "lumped_port"],
        );
        let wave = waveform(&s.waveform, &format!("{key}.waveform"), ck);
        let amplitude = match &s.amplitude {
            Some(a) if *a.get_ref() == 0.0 => {
                ck.warn(
                    a,
                    &format!("{key}.amplitude"),
                    "amplitude 0: this source adds nothing to the fields",
                );
                0.0
            }
            Some(a) if a.get_ref().is_finite() => *a.get_ref(),
            Some(a) => {
                ck.error(a, &format!("{key}.amplitude"), "must be a finite number");
                ok = false;
                1.0
            }
            None => 1.0,
        };
        let cells_and_component = match kind {
            Some(0) => {
                if s.direction.is_some() || s.polarization.is_some() {
                    ck.error(src, &key, "a dipole takes `component` and `position`, not `direction` or `polarization`");
                }
                let comp = match &s.component {
                    Some(c) => ck.component(c, &format!("{key}.component"), &E_COMPONENTS),
                    None => {
                        ck.error(src, &key, "a dipole needs `component` (Ex, Ey or Ez)");
                        None
                    }
                };
                let pos = match &s.position {
                    Some(p) => match position3(p.get_ref()) {
                        // In a scan, trace k's position: the written one plus k * scan_step.
                        Some(v) => Some(shift.source(n, v).map(|x| x * unit_m)),
                        None => {
                            ck.error(
                                p,
                                &format!("{key}.position"),
                                format!("expected [x, y, z], got {}", p.get_ref()),
                            );
                            None
                        }
                    },
                    None => {
                        ck.error(src, &key, "a dipole needs `position = [x, y, z]`");
                        None
                    }
                };
                match (comp, pos, grid) {
                    (Some(c), Some(p), Some(g)) => {
                        if !inside(g, p) {
                            ck.error(
                                s.position.as_ref().unwrap(),
                                &format!("{key}.position"),
                                outside_message(g, p, unit_m),
                            );
                            None
                        } else {
                            let idx = nearest(g, faces, c, p);
                            let at = s.position.as_ref().unwrap();
                            let pkey = format!("{key}.position");
                            let warned = ck.warnings.len();
                            warn_moved(
                                ck,
                                at,
                                &pkey,
                                "the dipole's",
                                g,
                                faces,
                                c,
                                p,
                                idx,
                                &[0, 1, 2],
                                unit_m,
                            );
                            if let Some(why) = dead_source(g, faces, objects, table, c, idx) {
                                ck.warn(at, &pkey, why);
                            } else if let Some((face, cells)) = faces
                                .filter(|_| ck.warnings.len() == warned)
                                .and_then(|f| super::placement::in_pml(g, f, p))
                            {
                                // One warning for the dipole's place: a move to the grid says
                                // the more specific thing.
                                ck.warn(at, &pkey, format!(
                                    "the dipole lies inside the {cells}-cell PML of the {face} face, which absorbs what it radiates there: move it into the interior"
                                ));
                            }
                            Some((c, [0, 1, 2].map(|a| [idx[a], idx[a] + 1])))
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        if kind == Some(1) {
            if let Some(c) = &s.component {
                ck.error(
                    c,
                    &format!("{key}.component"),
                    "a plane wave takes `polarization` (the E component it drives), not `component`",
                );
            }
        }
        if kind == Some(0) {
            if let Some(t) = &s.two_way {
                ck.error(
                    t,
                    &format!("{key}.two_way"),
                    "`two_way` belongs to plane waves",
                );
            }
        }
        let two_way = s.two_way.as_ref().is_some_and(|t| *t.get_ref());
        if kind == Some(3) {
            match super::modes::mode_source(
                s, src, n, &key, ck, grid, unit_m, faces, amplitude, wave,
            ) {
                Some(pair) => out.extend(pair),
                None => ok = false,
            }
            continue;
        }
        if kind == Some(4) {
            // Placed on the built model by `super::lumped`, which reads the host materials.
            continue;
        }
        for (given, name) in [
            (s.impedance.is_some(), "impedance"),
            (s.frequencies.is_some(), "frequencies"),
        ] {
            if given {
                ck.error(
                    src,
                    &format!("{key}.{name}"),
                    format!("`{name}` belongs to lumped ports"),
                );
            }
        }
        for (given, name) in [
            (s.name.is_some(), "name"),
            (s.mode.is_some(), "mode"),
            (s.profiles.is_some(), "profiles"),
        ] {
            if given {
                ck.error(
                    src,
                    &format!("{key}.{name}"),
                    format!("`{name}` belongs to mode sources"),
                );
            }
        }
        if kind != Some(2) {
            if let Some(b) = &s.region {
                ck.error(
                    b,
                    &format!("{key}.box"),
                    "`box` belongs to tfsf and mode sources",
                );
            }
        }
        if kind == Some(2) {
            for (given, name) in [
                (s.component.is_some(), "component"),
                (s.position.is_some(), "position"),
                (s.two_way.is_some(), "two_way"),
            ] {
                if given {
                    ck.error(
                        src,
                        &format!("{key}.{name}"),
                        "a tfsf source takes `box`, `direction`, `polarization`, `waveform` and `amplitude`",
                    );
                }
            }
            let t = wave.and_then(|w| {
                super::tfsf::tfsf(
                    s, src, &key, ck, grid, unit_m, faces, amplitude, w, objects, table,
                )
            });
            match (t, &tfsf_out) {
                (Some(_), Some(_)) => {
                    ck.error(src, &key, "at most one tfsf source per scene");
                    ok = false;
                }
                (Some(t), None) => tfsf_out = Some(t),
                (None, _) => ok = false,
            }
            continue;
        }
        let sheet = match kind {
            Some(1) => plane_wave(s, src, &key, ck, grid, unit_m, faces, two_way),
            _ => None,
        };
        match (cells_and_component, sheet, wave) {
            (Some((component, cells)), _, Some(waveform)) => out.push(Source {
                component,
                cells,
                amplitude,
                waveform,
                advance: 0.0,
                magnetic: None,
                mode: None,
                filter: Vec::new(),
                transverse_k: None,
                partner: false,
            }),
            (None, Some(sheet), Some(waveform)) if two_way => out.push(Source {
                component: sheet.component,
                cells: sheet.cells,
                amplitude,
                waveform,
                advance: 0.0,
                magnetic: None,
                mode: None,
                filter: Vec::new(),
                transverse_k: None,
                partner: false,
            }),
            (None, Some(sheet), Some(waveform)) => {
                let g = grid.expect("a sheet is placed only on a grid");
                out.extend(one_way(
                    &sheet, amplitude, waveform, g, table, objects, src, &key, ck,
                ));
            }
            _ => ok = false,
        }
    }
    ok.then_some((out, tfsf_out))
}

/// Where a plane wave's sheet lies.
struct Sheet {
    /// The E component of the sheet (the polarization).
    component: Component,
    /// Its E cells.
    cells: [[usize; 2]; 3],
    /// The direction axis.
    axis: usize,
    /// +1 for a positive direction, -1 for a negative one.
    sign: i32,
    /// For a one-way sheet, the index along the axis of the H plane half a cell behind it.
    behind: usize,
    /// An oblique wave's unit direction (None: along the axis).
    tilt: Option<[f64; 3]>,
    /// The wave's E direction when its tangential E lies along both in-plane axes (conical
    /// incidence with a component named, or a vector polarisation), made perpendicular to the
    /// wave in [`one_way`]; None for a wave whose E sheet is `component` alone.
    e_direction: Option<[f64; 3]>,
}

/// The sheet's direction (an index into +x, -x, ..., -z) and, unless it lies along an axis,
/// the unit direction of an oblique wave `v` (tilted towards one in-plane axis, or towards
/// both: conical incidence); or why not. The sheet's normal is the one axis
/// of the direction that is not periodic (a wave tilts towards periodic axes only), or, where
/// every axis it has is periodic (or the faces are unknown), its largest component.
fn oblique_direction(
    v: [f64; 3],
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Result<(usize, Option<[f64; 3]>), String> {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm == 0.0 {
        return Err("the direction vector is zero".into());
    }
    let u = v.map(|x| x / norm);
    let open: Vec<usize> = (0..3)
        .filter(|&a| u[a] != 0.0 && faces.is_some_and(|f| f[a][0] != BoundaryKind::Periodic))
        .collect();
    let a = match open.as_slice() {
        [a] => *a,
        [] => (0..3)
            .max_by(|&i, &j| u[i].abs().total_cmp(&u[j].abs()))
            .expect("three axes"),
        _ => {
            return Err(format!(
                "the direction {v:?} has components along {a} and {b}, neither of them periodic: an oblique plane wave travels along one axis with absorbing or closed faces and tilts towards periodic ones, whose Bloch phase it sets itself; make the axis it tilts towards periodic, e.g. `[boundaries] {b}_min = {{ type = \"periodic\" }}` and `{b}_max = {{ type = \"periodic\" }}`",
                a = Axis::ALL[open[0]].name(),
                b = Axis::ALL[open[1]].name()
            ))
        }
    };
    let dir = 2 * a + (u[a] < 0.0) as usize;
    let tilted = (0..3).any(|t| t != a && u[t] != 0.0);
    Ok((dir, tilted.then_some(u)))
}

#[allow(clippy::too_many_arguments)] // the scene entry, its key and what placing it needs
fn plane_wave(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    two_way: bool,
) -> Option<Sheet> {
    let (dir, tilt) = wave_direction(s, src, key, ck, faces);
    let axis = dir.map(|d| d / 2);
    let (pol, e_vector) = wave_polarization(s, src, key, ck, dir, two_way)?;
    let coord = match &s.position {
        Some(p) => match as_f64(p.get_ref()) {
            Some(v) => Some(v * unit_m),
            None => {
                ck.error(p, &format!("{key}.position"), "a plane wave's position is one number: the sheet's coordinate along its direction");
                None
            }
        },
        None => {
            ck.error(
                src,
                key,
                "a plane wave needs `position`, the sheet's coordinate along its direction",
            );
            None
        }
    };
    let (a, comp, c, g) = (axis?, pol?, coord?, grid?);
    let size = g.size();
    if c < g.origin[a] || c > g.origin[a] + size[a] {
        ck.error(
            s.position.as_ref().unwrap(),
            &format!("{key}.position"),
            format!(
                "{} = {} lies outside the domain, which spans [{}, {}]",
                Axis::ALL[a].name(),
                super::placement::num(c / unit_m),
                super::placement::num(g.origin[a] / unit_m),
                super::placement::num((g.origin[a] + size[a]) / unit_m)
            ),
        );
        return None;
    }
    // The sheet spans the whole cross-section; without periodic transverse boundaries it is
    // a finite aperture, which is still useful (and what users of PEC waveguides want).
    let mut p = [0.0; 3];
    p[a] = c;
    let idx = nearest(g, faces, comp, p);
    let at = s.position.as_ref().unwrap();
    let pkey = format!("{key}.position");
    warn_moved(
        ck,
        at,
        &pkey,
        "the sheet's",
        g,
        faces,
        comp,
        p,
        idx,
        &[a],
        unit_m,
    );
    if let Some(why) = dead_source(g, faces, &[], &MaterialTable::vacuum(), comp, idx) {
        ck.warn(at, &pkey, why);
    }
    let mut cells = [[0, g.shape[0]], [0, g.shape[1]], [0, g.shape[2]]];
    cells[a] = [idx[a], idx[a] + 1];
    let sign = if dir? % 2 == 0 { 1 } else { -1 };
    let n = g.shape[a];
    // The magnetic sheet sits half a cell upstream: H plane i - 1 (at i - 1/2) for a positive
    // direction, H plane i (at i + 1/2) for a negative one.
    let periodic = faces.is_some_and(|f| f[a][0] == BoundaryKind::Periodic);
    let behind = if sign > 0 {
        if idx[a] > 0 {
            Some(idx[a] - 1)
        } else if periodic {
            Some(n - 1)
        } else {
            None
        }
    } else {
        Some(idx[a])
    };
    let Some(behind) = behind.or(two_way.then_some(0)) else {
        ck.error(
            s.position.as_ref().unwrap(),
            &format!("{key}.position"),
            format!(
                "a one-way plane wave needs half a cell behind its sheet, but {} = {} is on the {} minimum face: move the sheet at least one cell ({}) inside, or set `two_way = true`",
                Axis::ALL[a].name(),
                c / unit_m,
                Axis::ALL[a].name(),
                g.primal(a, 0) / unit_m
            ),
        );
        return None;
    };
    if !oblique_fits(s, src, key, ck, (a, tilt), faces, two_way, e_vector) {
        return None;
    }
    // Conical incidence (the wave tilts towards both in-plane axes) carries E along both
    // whichever component is named; so does a vector polarisation.
    let conical = tilt.is_some_and(|u| (0..3).filter(|&t| t != a && u[t] != 0.0).count() == 2);
    let e_direction = e_vector.or_else(|| {
        conical.then(|| {
            let mut e = [0.0; 3];
            e[comp.axis() as usize] = 1.0;
            e
        })
    });
    Some(Sheet {
        component: comp,
        cells,
        axis: a,
        sign,
        behind,
        tilt,
        e_direction,
    })
}

/// The six axis directions a plane wave's `direction` may name.
const WAVE_DIRECTIONS: [&str; 6] = ["+x", "-x", "+y", "-y", "+z", "-z"];

/// A plane wave's direction (an index into [`WAVE_DIRECTIONS`]) and, for an oblique one, its
/// unit vector ([`oblique_direction`]); what is wrong is reported.
fn wave_direction(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> (Option<usize>, Option<[f64; 3]>) {
    match &s.direction {
        Some(d) => match (text(d), super::position3(d.get_ref())) {
            (Some(t), _) => (
                ck.one_of(&t, &format!("{key}.direction"), &WAVE_DIRECTIONS),
                None,
            ),
            (None, Some(v)) => match oblique_direction(v, faces) {
                Ok((dir, tilt)) => (Some(dir), tilt),
                Err(why) => {
                    ck.error(d, &format!("{key}.direction"), why);
                    (None, None)
                }
            },
            (None, None) => {
                ck.error(
                    d,
                    &format!("{key}.direction"),
                    "a plane wave's direction is one of +x, -x, +y, -y, +z, -z, or a vector [dx, dy, dz] for an oblique wave in a periodic cell",
                );
                (None, None)
            }
        },
        None => {
            ck.error(
                src,
                key,
                "a plane wave needs `direction` (+x, -x, +y, -y, +z or -z)",
            );
            (None, None)
        }
    }
}

/// A plane wave's polarization: the E component of its (first) sheet and, for a vector, the E
/// direction; None (after reporting why) for a component along the direction, which refuses
/// the wave. A missing or malformed polarization is reported and leaves the component None.
fn wave_polarization(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    dir: Option<usize>,
    two_way: bool,
) -> Option<(Option<Component>, Option<[f64; 3]>)> {
    let axis = dir.map(|d| d / 2);
    // A vector polarisation: the E direction, made perpendicular to the wave.
    let mut e_vector = None;
    let pol = match &s.polarization {
        Some(p) => match (text(p), super::position3(p.get_ref()), axis) {
            (Some(p), _, _) => ck.component(&p, &format!("{key}.polarization"), &E_COMPONENTS),
            (None, Some(v), Some(a)) if v != [0.0; 3] && !two_way => {
                e_vector = Some(v);
                // The first sheet's component: the first in-plane axis.
                Some(Component::ALL[(a + 1) % 3])
            }
            (None, _, _) => {
                ck.error(
                    p,
                    &format!("{key}.polarization"),
                    if two_way {
                        "a two-way plane wave's polarization is an E component: Ex, Ey or Ez"
                    } else {
                        "a plane wave's polarization is an E component (Ex, Ey or Ez) or a non-zero vector [ex, ey, ez] perpendicular to its direction"
                    },
                );
                None
            }
        },
        None => {
            ck.error(
                src,
                key,
                "a plane wave needs `polarization` (an E component transverse to the direction)",
            );
            None
        }
    };
    if let (Some(a), Some(p), None) = (axis, pol, e_vector) {
        if p.axis() as usize == a {
            ck.error(
                s.polarization.as_ref().unwrap(),
                &format!("{key}.polarization"),
                format!(
                    "{} is along the direction {}: choose a transverse component",
                    p.name(),
                    WAVE_DIRECTIONS[dir.unwrap()]
                ),
            );
            return None;
        }
    }
    Some((pol, e_vector))
}

/// Whether an oblique or vector-polarised one-way wave along `a` (unit direction `tilt` when
/// oblique) fits its cell: one-way, periodic on every axis it tilts towards, `bloch` "auto"
/// only when oblique, and a vector polarization not along the direction. What does not is
/// reported.
#[allow(clippy::too_many_arguments)] // the scene entry, its key and the wave's geometry
fn oblique_fits(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    (a, tilt): (usize, Option<[f64; 3]>),
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    two_way: bool,
    e_vector: Option<[f64; 3]>,
) -> bool {
    if let Some(u) = tilt {
        if two_way {
            ck.error(
                src,
                key,
                "an oblique plane wave is one-way: leave out `two_way`",
            );
            return false;
        }
        let closed = (0..3).find(|&t| {
            t != a && u[t] != 0.0 && faces.is_some_and(|f| f[t][0] != BoundaryKind::Periodic)
        });
        if let Some(t) = closed {
            ck.error(
                s.direction.as_ref().unwrap(),
                &format!("{key}.direction"),
                format!(
                    "an oblique plane wave needs periodic walls on the axis it tilts towards, {t_name}, so that its wave fronts continue across the cell: set `[boundaries] {t_name}_min = {{ type = \"periodic\" }}` and `{t_name}_max` likewise (the wave sets their Bloch phase itself), or give the wave a direction along {a_name}",
                    t_name = Axis::ALL[t].name(),
                    a_name = Axis::ALL[a].name()
                ),
            );
            return false;
        }
    }
    if let Some(b) = &s.bloch {
        if b.get_ref() != "auto" {
            ck.error(b, &format!("{key}.bloch"), "`bloch` is \"auto\": an oblique plane wave sets the Bloch phase of the axis it tilts towards from its direction at the waveform's centre frequency");
            return false;
        }
        if tilt.is_none() {
            ck.error(b, &format!("{key}.bloch"), "`bloch = \"auto\"` belongs to an oblique plane wave (a direction vector with a component along a periodic axis)");
            return false;
        }
    }
    if let Some(e) = e_vector {
        // The wave's direction: the tilt, or the normal.
        let u = tilt.unwrap_or_else(|| {
            let mut n = [0.0; 3];
            n[a] = 1.0;
            n
        });
        if perpendicular_part(e, u).is_none() {
            ck.error(
                s.polarization.as_ref().unwrap(),
                &format!("{key}.polarization"),
                "the polarization lies along the wave's direction: give an E direction perpendicular to it",
            );
            return false;
        }
    }
    true
}

/// The one-way (Huygens) source of `sheet` with incident peak E `amplitude` (V/m).
#[allow(clippy::too_many_arguments)] // the sheet, what it launches and where to report
fn one_way(
    sheet: &Sheet,
    amplitude: f64,
    waveform: Waveform,
    g: &Grid,
    table: &MaterialTable,
    objects: &[Object],
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
) -> Vec<Source> {
    let a = sheet.axis;
    let p = sheet.component.axis() as usize;
    let q = 3 - a - p;
    // The medium at the centre of the sheet sets the impedance and speed it launches into.
    let centre = sheet.cells.map(|r| ((r[0] + r[1] - 1) / 2) as f64);
    let at = g.position(sheet.component, centre);
    let id = objects
        .iter()
        .rev()
        .find(|o| o.contains(at))
        .map_or(0, |o| o.material);
    let m = &table.materials[id as usize];
    if m.pec || m.conductivity > 0.0 {
        ck.warn(
            src,
            key,
            format!(
                "the plane wave's sheet lies in `{}`, {}: a one-way sheet needs a lossless medium, so expect part of the wave to leak backwards",
                m.name,
                if m.pec { "a perfect conductor" } else { "a lossy material" }
            ),
        );
    }
    let eps_r = if m.pec { 1.0 } else { m.epsilon };
    let eta = ETA0 / eps_r.sqrt();
    let v = C0 / eps_r.sqrt();
    // The sheets' cells along the axis: the E sheet's current J_s / d_e is spread over the dual
    // cell of its node (the step of the E update there), the H sheet's M_s / d over the primal
    // cell it sits in, and the two sheets lie half that primal cell apart. On a uniform axis
    // all three are the one cell.
    let idx = sheet.cells[a][0];
    // The H sheet behind node 0 is the last cell only when the axis wraps round.
    let wraps = idx == 0 && sheet.behind + 1 == g.shape[a] && g.shape[a] > 1;
    let d_e = match g.lines[a] {
        None => g.cell[a],
        Some(_) => g.dual(a, idx, wraps),
    };
    let d = g.primal(a, sheet.behind as isize);
    // An oblique wave's wavevector along the sheet (k_t = n k0 sin(theta) along the tilt,
    // fixed: the Bloch phase) and the grid's cos(theta) at the band centre, from the 3-D Yee
    // dispersion (w~/v)^2 = k~_n^2 + k~_t^2 with k~ = (2/d) sin(k d/2) and
    // w~ = (2/dt) sin(w dt/2): cos(theta) = k~_n v / w~.
    let w = 2.0 * std::f64::consts::PI * waveform.centre_frequency();
    let w_grid = 2.0 / g.dt * (w * g.dt / 2.0).sin();
    let transverse_k = sheet
        .tilt
        .map(|u| [0, 1, 2].map(|t| if t == a { 0.0 } else { w / v * u[t] }));
    let kt_grid2: f64 = transverse_k.map_or(0.0, |k| {
        (0..3)
            .filter(|&t| k[t] != 0.0)
            .map(|t| {
                let d = g.primal(t, sheet.cells[t][0] as isize);
                (2.0 / d * (k[t] * d / 2.0).sin()).powi(2)
            })
            .sum()
    });
    let kn_grid2 = (w_grid / v).powi(2) - kt_grid2;
    if kn_grid2 <= 0.0 {
        ck.error(
            src,
            &format!("{key}.direction"),
            "the oblique wave does not propagate on the grid at its centre frequency (its angle is too close to grazing): tilt it less",
        );
    }
    let cos_theta = if kn_grid2 > 0.0 {
        kn_grid2.sqrt() * v / w_grid
    } else {
        1.0
    };
    // Half-cell travel time of the grid's own wave along the normal at the band centre: the
    // Yee dispersion sin(k_n d / 2) = d k~_n / 2 gives tau = k_n d / (2 w). Above the grid's
    // cut-off along the axis there is no real k; use the continuum d / (2 v cos(theta)).
    let arg = match sheet.tilt {
        // The normal wave's k~_n = w~ / v, as the bits of every earlier run had it.
        None => d / (v * g.dt) * (w * g.dt / 2.0).sin(),
        Some(_) => d / 2.0 * kn_grid2.max(0.0).sqrt(),
    };
    let tau = if arg < 1.0 && kn_grid2 > 0.0 {
        arg.asin() / w
    } else {
        d / (2.0 * v * cos_theta)
    };
    // The sheets carry the tangential H and E of the incident wave: for s polarisation (E
    // across the plane of incidence) E is all tangential and H's tangential part is
    // cos(theta) E / eta; for p (E in the plane, along the tilt) H is all tangential and E's
    // tangential part cos(theta) E. `amplitude` is the wave's whole E.
    let p_polarized = sheet.tilt.is_some_and(|u| u[p] != 0.0);
    let (j_scale, m_scale) = match (sheet.tilt, p_polarized) {
        (None, _) => (1.0, 1.0),
        (Some(_), false) => (cos_theta, 1.0),
        (Some(_), true) => (1.0, cos_theta),
    };
    // e_apq: +1 for an even permutation of (x, y, z).
    let levi = if (a + 1) % 3 == p { 1.0 } else { -1.0 };
    let mut h_cells = sheet.cells;
    h_cells[a] = [sheet.behind, sheet.behind + 1];
    if let Some(pol) = sheet.e_direction {
        let wave = SheetWave {
            axis: a,
            sign: sheet.sign as f64,
            kn_grid: kn_grid2.max(0.0).sqrt(),
            speed: v,
            w_grid,
            eta,
            d_e,
            d,
        };
        let Some(parts) = wave.two_sheets(pol, transverse_k, g, sheet.cells) else {
            ck.error(
                src,
                &format!("{key}.polarization"),
                "the polarization lies along the wave's direction: give an E direction perpendicular to it",
            );
            return Vec::new();
        };
        return parts
            .into_iter()
            .enumerate()
            .map(|(i, (e, h, j, m))| Source {
                component: Component::ALL[e],
                cells: sheet.cells,
                amplitude: j * amplitude,
                waveform,
                advance: tau,
                magnetic: Some(MagneticSheet {
                    component: Component::ALL[3 + h],
                    cells: h_cells,
                    amplitude: m * amplitude,
                }),
                mode: None,
                filter: Vec::new(),
                transverse_k,
                partner: i > 0,
            })
            .collect();
    }
    vec![Source {
        component: sheet.component,
        cells: sheet.cells,
        amplitude: -j_scale * amplitude / (eta * d_e),
        waveform,
        advance: tau,
        magnetic: Some(MagneticSheet {
            component: Component::ALL[3 + q],
            cells: h_cells,
            amplitude: -m_scale * levi * sheet.sign as f64 * amplitude / d,
        }),
        mode: None,
        filter: Vec::new(),
        transverse_k,
        partner: false,
    }]
}

/// The part of `v` perpendicular to the unit vector `u`, at unit length; None when `v` lies
/// along `u` (what is left is under 1e-6 of its length: rounding of a parallel vector).
fn perpendicular_part(v: [f64; 3], u: [f64; 3]) -> Option<[f64; 3]> {
    let dot = |x: [f64; 3], y: [f64; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    let along = dot(v, u);
    let p = [0, 1, 2].map(|i| v[i] - along * u[i]);
    let len = dot(p, p).sqrt();
    (len > 1e-6 * dot(v, v).sqrt()).then(|| p.map(|x| x / len))
}

/// What a one-way sheet launches, for a wave whose tangential E lies along both in-plane axes.
struct SheetWave {
    /// The sheet's normal axis, and +1 or -1 along it.
    axis: usize,
    sign: f64,
    /// The grid's normal wavenumber k~_n at the band centre (1/m), the grid's w~ there (rad/s),
    /// and the medium's speed (m/s) and impedance (ohm).
    kn_grid: f64,
    w_grid: f64,
    speed: f64,
    eta: f64,
    /// The E sheet's dual cell and the H sheet's primal cell along the normal (m).
    d_e: f64,
    d: f64,
}

impl SheetWave {
    /// The Huygens sheets of a plane wave with E along `pol` (made perpendicular to the wave)
    /// and transverse wavevector `k_t`: per in-plane E component that carries any field,
    /// (E component, H component, J and M per volt of E): J = n x H over the E sheet's cell
    /// and M = -n x E over the H sheet's, H = u x E / eta, with u the grid's own unit wavevector
    /// at the band centre, k~ v / w~ (k~_t = (2/d) sin(k_t d / 2), |k~| = w~ / v), as the
    /// single sheet of a wave in one plane takes its cos(theta). None when `pol` lies along the
    /// wave.
    fn two_sheets(
        &self,
        pol: [f64; 3],
        k_t: Option<[f64; 3]>,
        g: &Grid,
        cells: [[usize; 2]; 3],
    ) -> Option<Vec<(usize, usize, f64, f64)>> {
        let a = self.axis;
        let mut u = [0.0; 3];
        u[a] = self.sign * self.kn_grid * self.speed / self.w_grid;
        if let Some(k) = k_t {
            for t in (0..3).filter(|&t| t != a) {
                let d = g.primal(t, cells[t][0] as isize);
                u[t] = 2.0 / d * (k[t] * d / 2.0).sin() * self.speed / self.w_grid;
            }
        }
        let e = perpendicular_part(pol, u)?;
        let h = cross(u, e);
        let mut n = [0.0; 3];
        n[a] = self.sign;
        let j = cross(n, h);
        let m = cross(n, e).map(|x| -x);
        let (p, q) = ((a + 1) % 3, (a + 2) % 3);
        Some(
            [(p, q), (q, p)]
                .into_iter()
                .filter(|&(ep, hq)| j[ep] != 0.0 || m[hq] != 0.0)
                .map(|(ep, hq)| (ep, hq, j[ep] / (self.eta * self.d_e), m[hq] / self.d))
                .collect(),
        )
    }
}
