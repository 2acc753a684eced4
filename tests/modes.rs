//! `yee modes` and the mode solver on a model's plane (`src/modes/plane.rs`): a silicon strip
//! waveguide's modes as the 3-D grid propagates them, and bad planes refused.

mod common;

use std::process::Command;

/// A 500 x 220 nm Si strip along x in SiO2, cells of `cell` um (the strip's sides on grid
/// nodes, its top and bottom mid-cell, smoothed as a run smooths them).
fn strip(cell: f64) -> String {
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = {cell}
size = [{x}, 2.5, 2.0]
steps = 100
precision = "f64"
[boundaries]
default = {{ type = "pml", cells = 8 }}
[materials]
si = {{ epsilon = 12.082576 }}
oxide = {{ epsilon = 2.085136 }}
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "box"
material = "si"
center = [0.0, 0.0, 0.0]
size = [10.0, 0.5, 0.22]
[[source]]
type = "dipole"
component = "Ey"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }}
"#,
        x = 20.0 * cell
    )
}

/// TE0 of the strip at 1550 nm through the model's plane, with the grid's own time step and
/// difference along x: 2.4541 at 20 nm cells, against the published 2.443 (Chrostowski and
/// Hochberg) for the continuum. The cross-section alone gives 2.451 (`src/modes/tests.rs`);
/// the rest is the 3-D grid's dispersion along x at 20 nm, which this n_eff includes on
/// purpose (a mode launched with it propagates in the grid without a phase error). Bound:
/// 0.015, the issue's 0.01 for the cross-section plus that dispersion. TM0 next, E mostly
/// along z.
#[test]
fn a_strip_waveguide_plane_has_te0_and_tm0() {
    let m = common::model(&strip(0.02));
    let f = 299_792_458.0 / 1.55e-6;
    let plane = yee::modes::Plane::nearest(&m, 0, 0.0).expect("in the grid");
    let found = plane.modes(&m, f, 2).expect("modes");
    let (te, tm) = (&found.modes[0], &found.modes[1]);
    eprintln!("TE0 {:.5}, TM0 {:.5}", found.neff[0], found.neff[1]);
    assert!((found.neff[0] - 2.443).abs() < 0.015, "{}", found.neff[0]);
    assert!(te.v_fraction() < 0.05 && tm.v_fraction() > 0.9);
    assert!(found.neff[1] > 1.444 && found.neff[1] < found.neff[0]);
}

fn yee(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `yee modes` prints each mode's n_eff and field split; a plane that is not AXIS=NUMBER, or
/// lies outside the grid, exits 2 saying what to write.
#[test]
fn yee_modes_prints_the_modes_and_refuses_bad_planes() {
    let dir = std::env::temp_dir().join(format!("yee-modes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("strip.toml");
    std::fs::write(&scene, strip(0.04)).unwrap();
    let s = scene.to_str().unwrap();
    let (code, out, err) = yee(&["modes", s, "--plane", "x=0.1", "--frequency", "1.934e14"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("mode 0: n_eff 2.") && out.contains("mode 1: n_eff"),
        "{out}"
    );
    for (plane, says) in [
        ("q=1", "the axis is x, y or z"),
        ("x1", "write AXIS=COORDINATE"),
        ("x=abc", "the coordinate is a number"),
        ("x=7", "lies outside the grid"),
    ] {
        let (code, _, err) = yee(&["modes", s, "--plane", plane, "--frequency", "1.934e14"]);
        assert_eq!(code, Some(2), "{plane}: {err}");
        assert!(err.contains(says), "{plane}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
