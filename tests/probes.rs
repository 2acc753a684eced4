//! Trilinear probes next to faces against an independent interpolation of the gathered fields.
//!
//! In the last half cell next to a face the stencil needs the value beyond the stored planes.
//! The reference here pads each gathered component with one ghost plane per face, filled from
//! the physics of the wall (periodic: the other end; PEC: tangential E and normal H vanish on the
//! wall, normal E and tangential H are even about it; PMC: the dual), then interpolates
//! trilinearly on the padded array. The probes the scene resolves must give the same values.

mod common;

use yee::model::{BoundaryKind, Component, Model};

/// x periodic, y PEC on both faces, z PMC (minimum) and PEC (maximum); a dipole off-centre.
const CLOSED: &str = r#"
[simulation]
length_unit = "mm"
cell_size = 1.0
size = [10.0, 8.0, 12.0]
steps = 60
precision = "f64"
[boundaries]
x_min = { type = "periodic" }
x_max = { type = "periodic" }
y_min = { type = "pec" }
y_max = { type = "pec" }
z_min = { type = "pmc" }
z_max = { type = "pec" }
[[source]]
type = "dipole"
component = "Ez"
position = [3.2, -1.7, 3.6]
waveform = { type = "ricker", frequency = 6.0e10 }
[[source]]
type = "dipole"
component = "Ex"
position = [-4.1, 2.4, -4.7]
waveform = { type = "ricker", frequency = 5.0e10 }
"#;

/// x PMC (minimum) and PEC (maximum), y and z periodic.
const OPEN: &str = r#"
[simulation]
length_unit = "mm"
cell_size = [1.0, 0.8, 1.2]
size = [10.0, 8.0, 12.0]
steps = 60
precision = "f64"
[boundaries]
default = { type = "periodic" }
x_min = { type = "pmc" }
x_max = { type = "pec" }
[[source]]
type = "dipole"
component = "Ey"
position = [-3.2, 2.7, 5.6]
waveform = { type = "ricker", frequency = 6.0e10 }
[[source]]
type = "dipole"
component = "Ez"
position = [4.1, -3.6, -5.4]
waveform = { type = "ricker", frequency = 5.0e10 }
"#;

/// Does `c` vanish on a PEC wall normal to `a` (tangential E, normal H)? On a PMC wall the
/// others vanish. The vanishing ones are odd about the wall, the others even.
fn vanishes_on_pec(c: Component, a: usize) -> bool {
    (c.axis() as usize == a) != c.is_electric()
}

/// The field `f` of `c` (C order over the grid) padded by one ghost plane at each end of
/// each axis: shape n + 2, index i + 1 holding grid index i.
fn padded(m: &Model, c: Component, f: &[f64]) -> (Vec<f64>, [usize; 3]) {
    let n = m.grid.shape;
    let mut shape = n;
    let mut cur = f.to_vec();
    for a in 0..3 {
        let mut next_shape = shape;
        next_shape[a] += 2;
        let idx = |s: [usize; 3], i: [usize; 3]| (i[0] * s[1] + i[1]) * s[2] + i[2];
        let mut next = vec![0.0; next_shape.iter().product()];
        for i in 0..next_shape[0] {
            for j in 0..next_shape[1] {
                for k in 0..next_shape[2] {
                    let mut at = [i, j, k];
                    let g = at[a] as i64 - 1;
                    let na = n[a] as i64;
                    let kind = m.boundaries.faces[a][(g >= na) as usize];
                    let value = |at: [usize; 3]| cur[idx(shape, at)];
                    let v = if (0..na).contains(&g) {
                        at[a] = g as usize;
                        value(at)
                    } else {
                        let odd = match kind {
                            BoundaryKind::Periodic => {
                                at[a] = if g < 0 { n[a] - 1 } else { 0 };
                                next[idx(next_shape, [i, j, k])] = value(at);
                                continue;
                            }
                            BoundaryKind::Pmc => !vanishes_on_pec(c, a),
                            _ => vanishes_on_pec(c, a),
                        };
                        let on_wall = c.offset()[a] == 0.0;
                        // Ghost below: a mirror about the wall through node 0 (integer-aligned
                        // components) or half a cell below plane 0; ghost above likewise at
                        // node n (a value on the wall) or half a cell above plane n - 1.
                        let (src, sign) = match (g < 0, on_wall) {
                            (true, true) => (1, if odd { -1.0 } else { 1.0 }),
                            (true, false) => (0, if odd { -1.0 } else { 1.0 }),
                            (false, true) => (n[a] - 1, if odd { 0.0 } else { f64::NAN }),
                            (false, false) => (n[a] - 1, if odd { -1.0 } else { 1.0 }),
                        };
                        at[a] = src.min(n[a] - 1);
                        sign * value(at)
                    };
                    next[idx(next_shape, [i, j, k])] = v;
                }
            }
        }
        cur = next;
        shape = next_shape;
    }
    (cur, shape)
}

/// Trilinear interpolation of the padded field at physical point `p`; with `clamp`, the
/// stencil the probes used before (second neighbour clamped into the stored planes).
fn trilinear(
    m: &Model,
    c: Component,
    f: &[f64],
    pad: &(Vec<f64>, [usize; 3]),
    p: [f64; 3],
    clamp: bool,
) -> f64 {
    let g = &m.grid;
    let off = c.offset();
    let mut lo = [0usize; 3];
    let mut t = [0.0; 3];
    for a in 0..3 {
        let u = (p[a] - g.origin[a]) / g.cell[a] - off[a];
        if clamp {
            let n = g.shape[a];
            let i0 = (u.floor().max(0.0) as usize).min(n.saturating_sub(2));
            lo[a] = i0;
            t[a] = if n == 1 {
                0.0
            } else {
                (u - i0 as f64).clamp(0.0, 1.0)
            };
        } else {
            let i0 = u.floor().clamp(-1.0, g.shape[a] as f64 - 1.0);
            lo[a] = (i0 + 1.0) as usize;
            t[a] = u - i0;
        }
    }
    let (arr, s) = if clamp {
        (f, g.shape)
    } else {
        (pad.0.as_slice(), pad.1)
    };
    let mut v = 0.0;
    for d in 0..8 {
        let bit = |a: usize| (d >> (2 - a)) & 1;
        let mut w = 1.0;
        let mut at = [0; 3];
        for a in 0..3 {
            let b = bit(a);
            w *= if b == 1 { t[a] } else { 1.0 - t[a] };
            at[a] = lo[a] + b;
        }
        if w != 0.0 {
            v += w * arr[(at[0] * s[1] + at[1]) * s[2] + at[2]];
        }
    }
    v
}

/// Points in the last half cell next to every face and corner, and a few inside.
fn points(m: &Model) -> Vec<[f64; 3]> {
    let g = &m.grid;
    let near = |a: usize, high: bool, frac: f64| {
        if high {
            g.origin[a] + g.size()[a] - frac * g.cell[a]
        } else {
            g.origin[a] + frac * g.cell[a]
        }
    };
    let mut out = Vec::new();
    for corner in 0..8 {
        for frac in [0.1, 0.3, 0.45] {
            out.push([0, 1, 2].map(|a| near(a, (corner >> a) & 1 == 1, frac)));
        }
    }
    for a in 0..3 {
        for high in [false, true] {
            let mut p = [0.37e-3, -0.61e-3, 1.13e-3];
            p[a] = near(a, high, 0.2);
            out.push(p);
        }
    }
    out.push([0.37e-3, -0.61e-3, 1.13e-3]);
    out
}

fn probe_scene(text: &str, m: &Model) -> String {
    let mut s = text.to_string();
    for (i, p) in points(m).iter().enumerate() {
        s += &format!(
            "[[monitor]]\ntype = \"probe\"\nname = \"p{i}\"\nposition = [{}, {}, {}]\ncomponents = [\"Ex\", \"Ey\", \"Ez\", \"Hx\", \"Hy\", \"Hz\"]\n",
            p[0] * 1e3,
            p[1] * 1e3,
            p[2] * 1e3
        );
    }
    s
}

fn check(name: &str, text: &str) {
    let bare = common::model(text);
    let m = common::model(&probe_scene(text, &bare));
    let (series, fields) = common::run_cpu::<f64>(&m, 2);
    let pts = points(&m);
    let mut worst_new = 0.0f64;
    let mut worst_old = 0.0f64;
    for (ci, c) in Component::ALL.iter().enumerate() {
        let f = &fields[ci];
        let peak = common::max_abs(f);
        assert!(peak > 0.0);
        let pad = padded(&m, *c, f);
        for (pi, p) in pts.iter().enumerate() {
            let got = *series[pi * 6 + ci].last().unwrap();
            let want = trilinear(&m, *c, f, &pad, *p, false);
            let old = trilinear(&m, *c, f, &pad, *p, true);
            // The stencil and the reference are the same sums of the same f64 values in
            // another order: equal to rounding (1e-12 of the peak); a wrong image (wrap,
            // zero or mirror) is an error of order the field itself.
            assert!(
                (got - want).abs() <= 1e-12 * peak,
                "{name}: {c:?} at {p:?}: probe {got} vs reference {want} (peak {peak})"
            );
            worst_new = worst_new.max((got - want).abs() / peak);
            worst_old = worst_old.max((old - want).abs() / peak);
        }
    }
    eprintln!(
        "{name}: largest probe error next to faces, relative to the component's peak: {worst_new:.1e} now, {worst_old:.2} with the clamped stencil"
    );
    // The reference discriminates: the old clamped stencil is off by far more than rounding.
    assert!(worst_old > 0.05, "{name}: {worst_old}");
}

#[test]
fn probes_next_to_periodic_pec_and_pmc_faces_match_an_independent_interpolation() {
    check("periodic x, pec y, pmc/pec z", CLOSED);
    check("pmc/pec x, periodic y and z", OPEN);
}

/// On a PEC wall tangential E is zero: a probe exactly on the wall reads 0, one a quarter cell
/// inside reads a quarter of the first interior node's value.
#[test]
fn probe_on_a_pec_wall_reads_zero_tangential_e() {
    let m = common::model(CLOSED);
    let g = &m.grid;
    // Ex at y_max (PEC): Ex sits on integer y nodes, node ny is the wall.
    let top = g.origin[1] + g.size()[1];
    let p = [0.5e-3, top, 0.5e-3];
    let s = g.stencil(Component::Ex, p, &m.boundaries.faces);
    assert!(s.is_empty(), "{s:?}");
    let p = [0.5e-3, top - 0.25 * g.cell[1], 0.5e-3];
    let s = g.stencil(Component::Ex, p, &m.boundaries.faces);
    let total: f64 = s.iter().map(|x| x.1).sum();
    assert!((total - 0.25).abs() < 1e-12, "{s:?}");
    assert!(s.iter().all(|x| x.0[1] == g.shape[1] - 1));
}
