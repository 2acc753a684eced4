//! Metal thinner than a cell is never lost: a PEC foil, a zero-thickness sheet, a strip and a
//! wire hold their E components on the grid with subpixel smoothing on (the default) as with
//! it off, wherever they are drawn.

mod common;

use common::*;

/// A plane wave at normal incidence on a PEC sheet across a periodic cell, inside a substrate
/// (so that smoothing is at work around the sheet): 0.5 mm cells, a pulse around 10 GHz.
fn sheet_scene(sheet: Option<(f64, f64)>, subpixel: bool) -> String {
    let sheet = sheet.map_or(String::new(), |(z, thickness)| {
        format!(
            r#"
[[geometry]]
shape = "box"
material = "copper"
center = [0.0, 0.0, {z}]
size = [10.0, 10.0, {thickness}]
"#
        )
    });
    format!(
        r#"
[simulation]
length_unit = "mm"
cell_size = 0.5
size = [2.0, 2.0, 40.0]
steps = 1500
precision = "f64"
subpixel = {subpixel}
[boundaries]
default = {{ type = "periodic" }}
z_min = {{ type = "pml", cells = 12 }}
z_max = {{ type = "pml", cells = 12 }}
[materials]
substrate = {{ epsilon = 3.38 }}
copper = {{ pec = true }}
[[geometry]]
shape = "box"
material = "substrate"
center = [0.0, 0.0, 5.0]
size = [10.0, 10.0, 20.0]
{sheet}
[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ex"
position = -10.0
waveform = {{ type = "gaussian", frequency = 1.0e10, bandwidth = 1.0e10 }}
[[monitor]]
type = "flux"
name = "t"
plane = {{ z = 12.0 }}
frequencies = {{ min = 5.0e9, max = 1.5e10, count = 11 }}
"#
    )
}

#[test]
fn a_pec_sheet_of_any_thickness_blocks_a_plane_wave_with_and_without_smoothing() {
    let incident = BinaryRun::new("sheet-none", &sheet_scene(None, true)).read("flux/t/power");
    assert!(incident.iter().all(|p| *p > 0.0));
    // Node planes are at multiples of 0.5 mm: z = 0 is one; z = 0.13 mm is 0.26 cells off.
    // 0.035 mm is PCB copper, 0.2 mm more than the smoothing's sub-sample spacing (0.125
    // mm), 0.6 mm more than a cell.
    for z in [0.0, 0.13] {
        for thickness in [0.0, 0.035, 0.2, 0.6] {
            for subpixel in [true, false] {
                let name = format!("sheet-{z}-{thickness}-{subpixel}");
                let run = BinaryRun::new(&name, &sheet_scene(Some((z, thickness)), subpixel));
                let t = run.read("flux/t/power");
                let worst = t
                    .iter()
                    .zip(&incident)
                    .map(|(t, i)| t.abs() / i)
                    .fold(0.0, f64::max);
                // A sheet holds the tangential E of a whole node plane across the periodic
                // cell: nothing crosses it but rounding.
                assert!(
                    worst < 1e-10,
                    "{name}: transmits {worst:.3e} of the incident power"
                );
            }
        }
    }
}

/// `yee check` on scene `text`: its exit code and what it printed (stdout, then stderr).
fn yee_check(name: &str, text: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("yee-thin-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["check", "s.toml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// The warnings `yee check` prints for a scene it accepts.
fn check_warnings(name: &str, text: &str) -> String {
    let (code, out) = yee_check(name, text);
    assert_eq!(code, Some(0), "yee check {name} failed: {out}");
    out
}

#[test]
fn a_sheet_moved_to_a_node_plane_is_said_and_counted() {
    let out = check_warnings("moved", &sheet_scene(Some((0.13, 0.035)), true));
    assert!(
        out.contains("thinner than a cell along z, so it is held as a sheet on the grid plane z = 0 mm: moved z from 0.13 to 0 mm (0.26 cells)"),
        "{out}"
    );
    // 4 x 4 Ex and 4 x 4 Ey on the plane (the periodic cell's 4 x 4 nodes).
    assert!(
        out.contains("geometry[1] (`copper`): holds 32 E components"),
        "{out}"
    );
    let on_plane = check_warnings("on-plane", &sheet_scene(Some((0.0, 0.0)), true));
    assert!(!on_plane.contains("moved"), "{on_plane}");
}

/// Hammerstad and Jensen's effective permittivity of a microstrip of zero thickness, width
/// `w` over a substrate of height `h` and permittivity `er` (IEEE MTT-S 1980; 0.2 % for
/// 0.01 <= w/h <= 100, er <= 128).
fn hammerstad_jensen(w: f64, h: f64, er: f64) -> f64 {
    let u = w / h;
    let a = 1.0
        + ((u.powi(4) + (u / 52.0).powi(2)) / (u.powi(4) + 0.432)).ln() / 49.0
        + (1.0 + (u / 18.1).powi(3)).ln() / 18.7;
    let b = 0.564 * ((er - 0.9) / (er + 3.0)).powf(0.053);
    (er + 1.0) / 2.0 + (er - 1.0) / 2.0 * (1.0 + 10.0 / u).powf(-a * b)
}

#[test]
fn a_zero_thickness_microstrip_carries_its_quasi_tem_wave_at_the_hammerstad_jensen_speed() {
    // Half a microstrip (a PMC wall at y_min is its symmetry plane): a strip 1 mm wide of zero
    // thickness on a 0.5 mm substrate of eps 3.38 over a PEC ground (z_min), running through
    // the x PMLs. An Ez dipole under the strip launches the wave; two probes 8 mm apart under
    // the strip give its phase constant at 2 GHz.
    let text = r#"
[simulation]
name = "microstrip"
length_unit = "mm"
cell_size = [0.2, 0.1, 0.1]
size = [24.0, 4.5, 4.5]
duration = 1.0e-9
precision = "f32"
[boundaries]
default = { type = "pml", cells = 10 }
y_min = { type = "pmc" }
z_min = { type = "pec" }
[materials]
substrate = { epsilon = 3.38 }
[[geometry]]
shape = "box"
material = "substrate"
center = [0.0, 0.0, -2.0]
size = [40.0, 10.0, 0.5]
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, -2.25, -1.75]
size = [40.0, 1.0, 0.0]
[[source]]
type = "dipole"
component = "Ez"
position = [-8.0, -2.25, -2.0]
waveform = { type = "gaussian", frequency = 3.0e9, bandwidth = 4.0e9 }
[[monitor]]
type = "probe"
name = "a"
position = [-4.0, -2.25, -2.0]
components = ["Ez"]
[[monitor]]
type = "probe"
name = "b"
position = [4.0, -2.25, -2.0]
components = ["Ez"]
"#;
    let run = BinaryRun::new("microstrip", text);
    let t = run.read("probes/a/time");
    let (a, b) = (run.read("probes/a/Ez"), run.read("probes/b/Ez"));
    let f = 2.0e9;
    let dft = |x: &[f64]| {
        x.iter().zip(&t).fold((0.0, 0.0), |(re, im), (v, t)| {
            let w = 2.0 * std::f64::consts::PI * f * t;
            (re + v * w.cos(), im - v * w.sin())
        })
    };
    let ((ar, ai), (br, bi)) = (dft(&a), dft(&b));
    // Phase of b / a: the wave's delay over 8 mm (about 0.55 rad, no wrap).
    let lag = -((bi * ar - br * ai).atan2(br * ar + bi * ai));
    let beta = lag / 8.0e-3;
    let eps_eff = (beta * yee::model::C0 / (2.0 * std::f64::consts::PI * f)).powi(2);
    let want = hammerstad_jensen(1.0, 0.5, 3.38);
    let error = eps_eff / want - 1.0;
    eprintln!("microstrip: eps_eff {eps_eff:.4}, Hammerstad-Jensen {want:.4} ({error:+.4})");
    // Measured +1.4 %: the strip's edge singularity, resolved by 5 cells of substrate, makes
    // the zero-thickness strip look a little wider (+1.05 % with cells of half the size), and
    // the line's dispersion at 2 GHz (f h = 1 GHz mm) adds about 0.25 % to the quasi-static
    // value. 2 % bounds both; a strip that had vanished would read the substrate's
    // grounded-slab wave, not a quasi-TEM one, and a staircased strip one cell thick
    // would read about 4 % low.
    assert!(error.abs() < 0.02, "eps_eff {eps_eff:.4} vs {want:.4}");
}

/// Two PEC plates 4 mm apart in a dielectric, an Ez dipole between them, and optionally a PEC
/// wire of radius 0.05 cells from plate to plate, along the grid edge x = y = 0 or drawn 0.3
/// and 0.2 cells off it.
fn wire_scene(wire: Option<[f64; 2]>, subpixel: bool) -> String {
    let wire = wire.map_or(String::new(), |[x, y]| {
        format!(
            r#"
[[geometry]]
shape = "cylinder"
material = "pec"
center = [{x}, {y}, 0.0]
radius = 0.05
height = 4.0
axis = "z"
"#
        )
    });
    format!(
        r#"
[simulation]
length_unit = "mm"
cell_size = 1.0
size = [24.0, 24.0, 14.0]
steps = 300
precision = "f64"
subpixel = {subpixel}
[boundaries]
default = {{ type = "pml", cells = 5 }}
[materials]
fill = {{ epsilon = 2.2 }}
[[geometry]]
shape = "box"
material = "fill"
center = [0.0, 0.0, 0.0]
size = [12.0, 12.0, 4.0]
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, -2.0]
size = [12.0, 12.0, 0.0]
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, 2.0]
size = [12.0, 12.0, 0.0]
{wire}
[[source]]
type = "dipole"
component = "Ez"
position = [3.0, 1.0, 0.5]
waveform = {{ type = "gaussian", frequency = 5.0e9, bandwidth = 5.0e9 }}
[[monitor]]
type = "probe"
name = "gap"
position = [0.0, 0.0, -1.5]
components = ["Ez"]
[[monitor]]
type = "probe"
name = "gap2"
position = [0.0, 0.0, 0.5]
components = ["Ez"]
"#
    )
}

#[test]
fn a_wire_a_twentieth_of_a_cell_thick_shorts_two_plates() {
    let open = BinaryRun::new("wire-open", &wire_scene(None, true));
    let across = |run: &BinaryRun| {
        max_abs(&run.read("probes/gap/Ez")).max(max_abs(&run.read("probes/gap2/Ez")))
    };
    let unshorted = across(&open);
    assert!(unshorted > 0.0);
    for (at, subpixel) in [([0.0, 0.0], true), ([0.0, 0.0], false), ([0.3, -0.2], true)] {
        let name = format!("wire-{}-{}-{subpixel}", at[0], at[1]);
        let shorted = across(&BinaryRun::new(&name, &wire_scene(Some(at), subpixel)));
        // The wire holds Ez along its grid edge at zero: the field across the gap there is
        // rounding, against the open gap's field.
        assert!(
            shorted < 1e-6 * unshorted,
            "{name}: {shorted:.3e} across the gap against {unshorted:.3e} open"
        );
    }
    let out = check_warnings("wire-off", &wire_scene(Some([0.3, -0.2]), true));
    assert!(
        out.contains("held as a line on the grid edge nearest to it: moved x from 0.3 to 0 mm (0.3 cells), y from -0.2 to 0 mm (0.2 cells)"),
        "{out}"
    );
    assert!(
        out.contains("geometry[3] (`pec`): holds 4 E components"),
        "{out}"
    );
}

#[test]
fn thin_objects_that_would_vanish_are_refused_or_named() {
    let base = sheet_scene(None, true);
    // A sheet of a material that is not PEC.
    let dielectric_sheet = base.clone()
        + r#"
[[geometry]]
shape = "box"
material = "substrate"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 0.0]
"#;
    let (code, err) = yee_check("refused", &dielectric_sheet);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("geometry[1].size") && err.contains("only a PEC material"),
        "{err}"
    );
    // A dispersive film between node planes (z = 0.05 to 0.15 mm; E components at z = 0,
    // 0.25 and 0.5 mm) paints no Yee point. Since dispersive materials are smoothed (the
    // geometry issue), the smoothing gives it its share of the cells it crosses: no warning,
    // and `yee check` says so. With smoothing off it has no effect: said, with what to do.
    let film = base.replace(
        "copper = { pec = true }",
        "copper = { pec = true }\nwater = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }",
    ) + r#"
[[geometry]]
shape = "box"
material = "water"
center = [0.0, 0.0, 0.1]
size = [10.0, 10.0, 0.1]
"#;
    let out = check_warnings("dispersive-film", &film);
    assert!(
        !out.contains("paints no E component")
            && out.contains(
                "geometry[1] (`water`): paints 0 E components; smoothing gives it its share"
            ),
        "{out}"
    );
    let unsmoothed = sheet_scene(None, false).replace(
        "copper = { pec = true }",
        "copper = { pec = true }\nwater = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }",
    ) + r#"
[[geometry]]
shape = "box"
material = "water"
center = [0.0, 0.0, 0.1]
size = [10.0, 10.0, 0.1]
"#;
    let out = check_warnings("dispersive-film-staircased", &unsmoothed);
    assert!(
        out.contains("`water` paints no E component")
            && out.contains("smoothing is off")
            && out.contains("[[refine]]"),
        "{out}"
    );
}
