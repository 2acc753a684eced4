//! `[[source]]`: dipoles, plane-wave sheets and their waveforms.

use super::placement::{dead_source, nearest, warn_moved};
use super::{as_f64, inside, outside_message, position3, Checker, E_COMPONENTS};
use crate::model::*;
use crate::scene::schema::*;
use toml::Spanned;

fn waveform(w: &Spanned<WaveformSpec>, key: &str, ck: &mut Checker) -> Option<Waveform> {
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

pub(super) fn sources(
    scene: &SceneFile,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    table: &MaterialTable,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
    objects: &[Object],
) -> Option<Vec<Source>> {
    let mut out = Vec::new();
    let mut ok = true;
    for (n, src) in scene.source.iter() {
        let key = format!("source[{n}]");
        let s = src.get_ref();
        let kind = ck.one_of(&s.kind, &format!("{key}.type"), &["dipole", "plane_wave"]);
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
                        Some(v) => Some(v.map(|x| x * unit_m)),
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
                            }
                            Some((c, [0, 1, 2].map(|a| [idx[a], idx[a] + 1])))
                        }
                    }
                    _ => None,
                }
            }
            Some(1) => plane_wave(s, src, &key, ck, grid, unit_m, faces),
            _ => None,
        };
        match (cells_and_component, wave) {
            (Some((component, cells)), Some(waveform)) => out.push(Source {
                component,
                cells,
                amplitude,
                waveform,
            }),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

fn plane_wave(
    s: &SourceSpec,
    src: &Spanned<SourceSpec>,
    key: &str,
    ck: &mut Checker,
    grid: Option<&Grid>,
    unit_m: f64,
    faces: Option<&[[BoundaryKind; 2]; 3]>,
) -> Option<(Component, [[usize; 2]; 3])> {
    let dirs = ["+x", "-x", "+y", "-y", "+z", "-z"];
    let dir = match &s.direction {
        Some(d) => ck.one_of(d, &format!("{key}.direction"), &dirs),
        None => {
            ck.error(
                src,
                key,
                "a plane wave needs `direction` (+x, -x, +y, -y, +z or -z)",
            );
            None
        }
    };
    let axis = dir.map(|d| d / 2);
    let pol = match &s.polarization {
        Some(p) => ck.component(p, &format!("{key}.polarization"), &E_COMPONENTS),
        None => {
            ck.error(
                src,
                key,
                "a plane wave needs `polarization` (an E component transverse to the direction)",
            );
            None
        }
    };
    if let (Some(a), Some(p)) = (axis, pol) {
        if p.axis() as usize == a {
            ck.error(
                s.polarization.as_ref().unwrap(),
                &format!("{key}.polarization"),
                format!(
                    "{} is along the direction {}: choose a transverse component",
                    p.name(),
                    dirs[dir.unwrap()]
                ),
            );
            return None;
        }
    }
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
    Some((comp, cells))
}
