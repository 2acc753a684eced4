//! Boundary conditions checked against symmetry and translation, where the exact answer is
//! another run of the engine: a PMC wall equals a mirror-symmetric full domain, and a periodic
//! axis is translation invariant.

mod common;

use common::*;
use yee::model::Component;

fn scene(size: [f64; 3], faces: &str, sources: &[([f64; 3], &str)]) -> String {
    let mut s = format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [{}, {}, {}]
steps = 150
precision = "f64"
[boundaries]
default = {{ type = "pml", cells = 6 }}
{faces}
[materials]
glass = {{ epsilon = 3.0 }}
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [0.2, 0.2, 10.0]
"#,
        size[0], size[1], size[2]
    );
    for (p, c) in sources {
        s.push_str(&format!(
            r#"
[[source]]
type = "dipole"
component = "{c}"
position = [{}, {}, {}]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }}
"#,
            p[0], p[1], p[2]
        ));
    }
    s
}

/// Index of component `c` at (i, j, k) in a field gathered from a grid of `shape`.
fn at(shape: [usize; 3], i: usize, j: usize, k: usize) -> usize {
    (i * shape[1] + j) * shape[2] + k
}

/// A PMC wall on the minimum face of `axis` equals the mirror-symmetric full domain: two
/// dipoles tangential to the plane at +-0.25 um (same sign) make tangential H vanish on the
/// symmetry plane, so the half domain with one dipole must reproduce the full domain's half.
fn check_pmc_symmetry(axis: usize) {
    let names = ["x", "y", "z"];
    let component = if axis == 2 { "Ex" } else { "Ez" };
    let mut size_full = [1.2; 3];
    size_full[axis] = 1.8;
    let mut size_half = [1.2; 3];
    size_half[axis] = 0.9;
    let base = [0.1, 0.15, 0.05];
    let with = |d: f64| {
        let mut p = base;
        p[axis] = d;
        p
    };
    // No geometry here: the rod is along z and would break the symmetry for axis z.
    let strip = |t: String| t.replace("size = [0.2, 0.2, 10.0]", "size = [0.0001, 0.0001, 0.0001]");
    let full = model(&strip(scene(
        size_full,
        "",
        &[(with(0.25), component), (with(-0.25), component)],
    )));
    let face = format!("{}_min = {{ type = \"pmc\" }}", names[axis]);
    let half = model(&strip(scene(
        size_half,
        &face,
        &[(with(0.25 - 0.45), component)],
    )));
    assert_eq!(half.sources[0].cells[axis][0], 5);
    let (_, f) = run_cpu::<f64>(&full, 1);
    let (_, h) = run_cpu::<f64>(&half, 2);
    let (sf, sh) = (full.grid.shape, half.grid.shape);
    let mut off = [0; 3];
    off[axis] = sf[axis] / 2;
    for c in Component::ALL {
        let (ff, hh) = (&f[c as usize], &h[c as usize]);
        let peak = max_abs(ff);
        let mut worst: f64 = 0.0;
        for i in 0..sh[0] {
            for j in 0..sh[1] {
                for k in 0..sh[2] {
                    worst = worst.max(
                        (ff[at(sf, i + off[0], j + off[1], k + off[2])] - hh[at(sh, i, j, k)])
                            .abs(),
                    );
                }
            }
        }
        // Only rounding differs (the mirror is applied exactly); 1e-9 of the peak is ~1e6 ulps
        // of headroom and still catches a wrong sign or a half-cell shift (errors of order 1).
        assert!(
            worst <= 1e-9 * peak.max(1e-30),
            "PMC on {}: {}: max difference {worst:.3e} of peak {peak:.3e}",
            names[axis],
            c.name()
        );
    }
}

#[test]
fn pmc_wall_on_x_min_equals_the_mirror_symmetric_full_domain() {
    check_pmc_symmetry(0);
}

#[test]
fn pmc_wall_on_y_min_equals_the_mirror_symmetric_full_domain() {
    check_pmc_symmetry(1);
}

#[test]
fn pmc_wall_on_z_min_equals_the_mirror_symmetric_full_domain() {
    check_pmc_symmetry(2);
}

#[test]
fn periodic_axes_are_translation_invariant() {
    let faces = r#"x_min = { type = "periodic" }
x_max = { type = "periodic" }
y_min = { type = "periodic" }
y_max = { type = "periodic" }"#;
    let a = model(
        &scene([1.0, 0.8, 1.0], faces, &[([0.1, 0.05, 0.0], "Ey")])
            .replace("size = [0.2, 0.2, 10.0]", "size = [10.0, 10.0, 10.0]"),
    );
    let b = model(
        &scene(
            [1.0, 0.8, 1.0],
            faces,
            &[([0.1 + 0.35, 0.05 + 0.3, 0.0], "Ey")],
        )
        .replace("size = [0.2, 0.2, 10.0]", "size = [10.0, 10.0, 10.0]"),
    );
    let (sx, sy) = (7, 6);
    assert_eq!(b.sources[0].cells[0][0], a.sources[0].cells[0][0] + sx);
    assert_eq!(b.sources[0].cells[1][0], a.sources[0].cells[1][0] + sy);
    let (_, fa) = run_cpu::<f64>(&a, 3);
    let (_, fb) = run_cpu::<f64>(&b, 2);
    let s = a.grid.shape;
    for c in Component::ALL {
        let (x, y) = (&fa[c as usize], &fb[c as usize]);
        let peak = max_abs(x);
        assert!(peak > 0.0);
        let mut worst: f64 = 0.0;
        for i in 0..s[0] {
            for j in 0..s[1] {
                for k in 0..s[2] {
                    let d = x[at(s, i, j, k)] - y[at(s, (i + sx) % s[0], (j + sy) % s[1], k)];
                    worst = worst.max(d.abs());
                }
            }
        }
        // Translation on a uniform periodic grid is exact: the same operations on the same values.
        assert!(
            worst == 0.0,
            "{}: translated fields differ by {worst:.3e} (peak {peak:.3e})",
            c.name()
        );
    }
}
