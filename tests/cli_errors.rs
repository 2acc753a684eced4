//! Bad input: every malformed scene exits with code 2 and a message naming the file, the line
//! and the key, without a panic and without creating an output file.

use std::path::PathBuf;
use std::process::Command;

const GOOD: &str = r#"[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.0, 1.0, 1.0]
steps = 10
[boundaries]
default = { type = "pml", cells = 5 }
[materials]
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [0.2, 0.2, 0.2]
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 1.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [0.1, 0.0, 0.0]
components = ["Ez"]
"#;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-cli-errors-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `yee run` on `bytes`; return (exit code, stderr, whether an output file appeared).
fn run_scene(name: &str, bytes: &[u8]) -> (Option<i32>, String, bool) {
    let dir = tmpdir(name);
    let scene = dir.join("scene.toml");
    std::fs::write(&scene, bytes).unwrap();
    let out = dir.join("out.h5");
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "scene.toml", "-o", "out.h5", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let exists = out.exists();
    let _ = std::fs::remove_dir_all(&dir);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        exists,
    )
}

/// A closed flux box appended to the good scene (lines 25 to 29).
const FLUX_BOX: &str = r#"[[monitor]]
type = "flux"
name = "b"
box = { center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.3] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
"#;

/// A far-field box appended to the good scene (lines 25 to 31).
const FAR_FIELD: &str = r#"[[monitor]]
type = "far_field"
name = "ff"
box = { center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.3] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
theta = { min = 0.0, max = 180.0, count = 5 }
phi = { min = 0.0, max = 360.0, count = 9 }
"#;

/// The good scene with `extra` appended, its first occurrence of `from` replaced by `to`.
fn with(extra: &str, from: &str, to: &str) -> String {
    assert!(
        extra.contains(from),
        "test setup: `{from}` not in the monitor"
    );
    format!("{GOOD}{}", extra.replacen(from, to, 1))
}

/// Replace the first occurrence of `from` in the good scene.
fn edit(from: &str, to: &str) -> String {
    assert!(
        GOOD.contains(from),
        "test setup: `{from}` not in the good scene"
    );
    GOOD.replacen(from, to, 1)
}

/// `scene` (the good scene or a variant of its boundaries) with its dipole made a TF/SF
/// source with this box size, direction and polarization: `box` on the line of `type` + 1.
fn tfsf(scene: &str, size: &str, direction: &str, polarization: &str) -> String {
    let dipole = "type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]";
    assert!(scene.contains(dipole), "test setup: no dipole in the scene");
    scene.replacen(
        dipole,
        &format!(
            "type = \"tfsf\"\nbox = {{ center = [0.0, 0.0, 0.0], size = {size} }}\ndirection = {direction}\npolarization = {polarization}"
        ),
        1,
    )
}

#[test]
fn the_good_scene_runs() {
    let (code, err, exists) = run_scene("good", GOOD.as_bytes());
    assert_eq!(code, Some(0), "{err}");
    assert!(exists);
    // And with the flux and far-field boxes the error rows break.
    let text = format!("{GOOD}{FLUX_BOX}{FAR_FIELD}");
    let (code, err, exists) = run_scene("good_boxes", text.as_bytes());
    assert_eq!(code, Some(0), "{err}");
    assert!(exists);
}

#[test]
fn malformed_scenes_exit_2_with_file_line_and_key() {
    // (case, scene text, text the message must contain: the location and the key or value)
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("empty file", String::new(), vec!["scene.toml", "empty"]),
        ("unknown key with suggestion", edit("cell_size = 0.05", "cel_size = 0.05"), vec!["scene.toml:3:", "cel_size", "did you mean `cell_size`"]),
        ("wrong type", edit("cell_size = 0.05", "cell_size = \"big\""), vec!["scene.toml:3:", "simulation.cell_size", "positive number"]),
        ("non-positive size", edit("size = [1.0, 1.0, 1.0]", "size = [1.0, -1.0, 1.0]"), vec!["scene.toml:4:", "simulation.size", "positive"]),
        ("unknown material", edit("material = \"glass\"", "material = \"glas\""), vec!["scene.toml:12:", "geometry[0].material", "did you mean `glass`"]),
        ("unknown shape", edit("shape = \"box\"", "shape = \"cube\""), vec!["scene.toml:11:", "geometry[0].shape", "`box`, `sphere`, `cylinder`"]),
        ("source outside", edit("position = [0.0, 0.0, 0.0]", "position = [0.0, 0.0, 3.0]"), vec!["scene.toml:18:", "source[0].position", "outside the domain"]),
        ("probe outside", edit("position = [0.1, 0.0, 0.0]", "position = [0.1, -2.0, 0.0]"), vec!["scene.toml:23:", "monitor[0].position", "outside the domain"]),
        ("PML too thick", edit("cells = 5 }", "cells = 12 }"), vec!["scene.toml:7:", "boundaries.x_min", "no interior"]),
        ("courant above 1", edit("steps = 10", "steps = 10\ncourant = 1.5"), vec!["scene.toml:6:", "simulation.courant", "(0, 0.999]"]),
        ("too many cells", edit("cell_size = 0.05", "cell_size = 0.00005"), vec!["scene.toml:4:", "simulation.size", "1e12"]),
        ("duplicate monitor", format!("{GOOD}[[monitor]]\ntype = \"probe\"\nname = \"p\"\nposition = [0.0, 0.0, 0.0]\ncomponents = [\"Ex\"]\n"), vec!["scene.toml:27:", "monitor[1].name", "duplicate monitor name `p`"]),
        ("unknown component", edit("components = [\"Ez\"]", "components = [\"Ew\"]"), vec!["scene.toml:24:", "monitor[0].components", "did you mean `Ex`"]),
        ("unknown boundary type", edit("type = \"pml\", cells = 5", "type = \"absorbing\""), vec!["scene.toml:7:", "boundaries.default.type", "`pml`, `pec`, `pmc`, `periodic`"]),
        ("TOML syntax error", edit("[materials]", "[materials"), vec!["scene.toml:8:"]),
        ("unknown precision", edit("steps = 10", "steps = 10\nprecision = \"f16\""), vec!["scene.toml:6:", "simulation.precision", "`f32`, `f64`"]),
        ("misspelt table", edit("[boundaries]", "[boundary]"), vec!["scene.toml:6:", "boundary", "did you mean `boundaries`"]),
        ("bandwidth on a ricker", edit("type = \"gaussian\", frequency = 3.0e14, bandwidth = 1.0e14", "type = \"ricker\", frequency = 3.0e14, bandwidth = 1.0e14"), vec!["scene.toml:19:", "source[0].waveform.bandwidth", "only a gaussian"]),
        ("missing run length", edit("steps = 10", ""), vec!["scene.toml:1:", "simulation", "steps = N"]),
        ("negative steps", edit("steps = 10", "steps = -5"), vec!["scene.toml:5:", "simulation.steps", "positive whole number, got -5"]),
        ("fractional steps", edit("steps = 10", "steps = 2.5"), vec!["scene.toml:5:", "simulation.steps", "positive whole number, got 2.5"]),
        ("monitor named dot", edit("name = \"p\"", "name = \".\""), vec!["scene.toml:22:", "monitor[0].name", "`.` cannot name a monitor", "HDF5"]),
        ("array of simulation tables", edit("[simulation]", "[[simulation]]"), vec!["scene.toml:1:", "`simulation`: expected a table, got an array"]),
        ("negative conductivity", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, conductivity = -1.0 }"), vec!["scene.toml:9:", "materials.glass.conductivity", ">= 0"]),
        ("negative pole strength", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, lorentz = [{ delta_epsilon = -1.0, frequency = 3.0e14 }] }"), vec!["scene.toml:9:", "materials.glass.lorentz[0].delta_epsilon", "positive number, got -1"]),
        ("negative damping", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, drude = [{ frequency = 1.0e15, damping = -1.0e13 }] }"), vec!["scene.toml:9:", "materials.glass.drude[0].damping", ">= 0 Hz"]),
        ("non-finite pole", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, debye = [{ delta_epsilon = 5.0, relaxation_time = nan }] }"), vec!["scene.toml:9:", "materials.glass.debye[0].relaxation_time", "`nan` is not a finite number"]),
        // Anywhere: a NaN plane coordinate passes every range check, so no key may take one.
        ("nan snapshot plane", format!("{GOOD}\n[[monitor]]\ntype = \"snapshot\"\nname = \"s\"\ncomponents = [\"Ez\"]\nplane = {{ z = nan }}\nevery = 2\n"), vec!["monitor[1].plane.z", "`nan` is not a finite number"]),
        ("infinite flux plane", format!("{GOOD}\n[[monitor]]\ntype = \"flux\"\nname = \"f\"\nplane = {{ x = -inf }}\nfrequencies = {{ min = 2.0e14, max = 4.0e14, count = 3 }}\n"), vec!["monitor[1].plane.x", "`-inf` is not a finite number"]),
        ("nul in a name", edit("[simulation]", "[simulation]\nname = \"a\\u0000b\""), vec!["simulation.name", "NUL character"]),
        ("unnamed material", edit("glass = { epsilon = 2.25 }", "\"\" = { epsilon = 2.25 }").replace("material = \"glass\"", "material = \"\""), vec!["`materials`", "a material needs a name"]),
        // A source the time step cannot sample (here a scene in micrometres written in metres).
        ("source above nyquist", edit("length_unit = \"um\"", "length_unit = \"m\""), vec!["source[0].waveform", "above the Nyquist frequency of the time step", "length_unit"]),
        ("unresolved plasma frequency", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 1.0, drude = [{ frequency = 1.0e17, damping = 1.0e13 }] }"), vec!["scene.toml:9:", "materials.glass.drude[0].frequency", "cannot resolve", "plasma edge"]),
        // A resonance or a relaxation faster than the time step resolves (w0 dt = 2 pi 1e17
        // dt and dt / tau = dt / 1e-20 s, both far above 1.1 at this scene's dt of about
        // 1e-16 s).
        ("unresolved lorentz resonance", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, lorentz = [{ delta_epsilon = 1.0, frequency = 1.0e17 }] }"), vec!["scene.toml:9:", "materials.glass.lorentz[0].frequency", "cannot resolve", "w0 dt (the resonance)"]),
        ("unresolved debye relaxation", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, debye = [{ delta_epsilon = 1.0, relaxation_time = 1.0e-20 }] }"), vec!["scene.toml:9:", "materials.glass.debye[0].relaxation_time", "cannot resolve", "dt / tau (the relaxation)"]),
        ("unknown library material", edit("glass = { epsilon = 2.25 }", "glass = { library = \"unobtainium\" }"), vec!["scene.toml:9:", "materials.glass.library", "no material `unobtainium` in the library", "yee materials"]),
        ("library name close to one", edit("glass = { epsilon = 2.25 }", "glass = { library = \"Gold\" }"), vec!["scene.toml:9:", "materials.glass.library", "did you mean `Au`"]),
        ("library with poles", edit("glass = { epsilon = 2.25 }", "glass = { library = \"water\", debye = [{ delta_epsilon = 5.0, relaxation_time = 1.0e-12 }] }"), vec!["scene.toml:9:", "materials.glass", "from the library"]),
        ("band without library", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, band = [1.0e14, 2.0e14] }"), vec!["scene.toml:9:", "materials.glass.band", "no `library`"]),
        ("zero permeability", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, mu = 0.0 }"), vec!["scene.toml:9:", "materials.glass.mu", "positive number, got 0"]),
        ("negative magnetic conductivity", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, magnetic_conductivity = -3.0 }"), vec!["scene.toml:9:", "materials.glass.magnetic_conductivity", ">= 0 ohm/m"]),
        ("misspelt pole key", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, lorentz = [{ delta_eps = 1.0, frequency = 3.0e14 }] }"), vec!["scene.toml:9:", "delta_eps", "did you mean `delta_epsilon`"]),
        ("too many poles", edit("glass = { epsilon = 2.25 }", &format!("glass = {{ epsilon = 2.25, debye = [{}] }}", ["{ delta_epsilon = 1.0, relaxation_time = 1.0e-12 }"; 9].join(", "))), vec!["scene.toml:9:", "materials.glass", "9 poles", "at most 8"]),
        ("pec with mu", edit("glass = { epsilon = 2.25 }", "glass = { pec = true, mu = 2.0 }"), vec!["scene.toml:9:", "materials.glass", "PEC material takes no other keys", "mu"]),
        ("flux box in the pml", with(FLUX_BOX, "size = [0.3, 0.3, 0.3]", "size = [0.6, 0.3, 0.3]"), vec!["scene.toml:28:", "monitor[1].box", "not closed inside the domain along x", "PML"]),
        ("flux box across the domain edge", with(FLUX_BOX, "center = [0.0, 0.0, 0.0]", "center = [0.0, 0.0, 0.5]"), vec!["scene.toml:28:", "monitor[1].box", "not closed inside the domain along z"]),
        ("flux box of zero size", with(FLUX_BOX, "size = [0.3, 0.3, 0.3]", "size = [0.3, 0.0, 0.3]"), vec!["scene.toml:28:", "monitor[1].box.size", "positive size along every axis", "along y is 0"]),
        ("flux box thinner than a cell", with(FLUX_BOX, "size = [0.3, 0.3, 0.3]", "size = [0.3, 0.02, 0.3]"), vec!["scene.toml:28:", "monitor[1].box.size", "degenerate along y"]),
        ("flux plane and box", with(FLUX_BOX, "name = \"b\"", "name = \"b\"\nplane = { z = 0.0 }"), vec!["scene.toml:", "monitor[1]", "not both"]),
        ("flux without plane or box", with(FLUX_BOX, "box = { center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.3] }\n", ""), vec!["scene.toml:", "monitor[1]", "needs `plane", "closed `box"]),
        ("flux with angles", with(FLUX_BOX, "name = \"b\"", "name = \"b\"\ntheta = { min = 0.0, max = 90.0, count = 3 }"), vec!["scene.toml:", "monitor[1].theta", "far_field"]),
        ("far field with a plane", with(FAR_FIELD, "box = { center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.3] }", "plane = { z = 0.0 }"), vec!["scene.toml:", "monitor[1].plane", "closed surface"]),
        ("far field in the pml", with(FAR_FIELD, "size = [0.3, 0.3, 0.3]", "size = [0.3, 0.3, 0.9]"), vec!["scene.toml:28:", "monitor[1].box", "not closed inside the domain along z"]),
        ("far field theta past 180", with(FAR_FIELD, "max = 180.0", "max = 200.0"), vec!["scene.toml:30:", "monitor[1].theta", "0 <= min <= max <= 180"]),
        ("far field without phi", with(FAR_FIELD, "phi = { min = 0.0, max = 360.0, count = 9 }\n", ""), vec!["scene.toml:", "monitor[1]", "needs `phi"]),
        ("far field zero angles", with(FAR_FIELD, "count = 9", "count = 0"), vec!["scene.toml:31:", "monitor[1].phi", "1 <= count"]),
        ("flux decimation zero", with(FLUX_BOX, "name = \"b\"", "name = \"b\"\ndecimation = 0"), vec!["scene.toml:", "monitor[1].decimation", "whole number of steps from 1"]),
        ("flux decimation past nyquist", with(FLUX_BOX, "name = \"b\"", "name = \"b\"\ndecimation = 50"), vec!["scene.toml:", "monitor[1].decimation", "aliases above", "give at most"]),
        ("pole overflowing the update", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, lorentz = [{ delta_epsilon = 1.0e300, frequency = 3.0e14, damping = 1.0e13 }] }"), vec!["scene.toml:9:", "materials.glass", "overflow the update"]),
        ("a plane wave with a component", edit("type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]", "type = \"plane_wave\"\ndirection = \"+z\"\npolarization = \"Ex\"\ncomponent = \"Ey\"\nposition = -0.2"), vec!["source[0].component", "a plane wave takes `polarization`"]),
        ("a box with a radius", edit("size = [0.2, 0.2, 0.2]", "size = [0.2, 0.2, 0.2]\nradius = 0.1"), vec!["geometry[0].radius", "a box takes `center` and `size`, not `radius`"]),
        // An invalid material is reported once: not again as "unknown" where it is used.
        ("no follow-on after a bad material", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = -2.0 }"), vec!["materials.glass.epsilon"]),
        ("decimation on a probe", edit("components = [\"Ez\"]", "components = [\"Ez\"]\ndecimation = 2"), vec!["scene.toml:", "monitor[0].decimation", "`decimation` belong to flux and far_field monitors"]),
        ("tfsf box in the PML", tfsf(GOOD, "[0.9, 0.4, 0.4]", "\"+z\"", "\"Ex\""), vec!["scene.toml:17:", "source[0].box", "x = [-0.45, 0.45]", "reaches the PML"]),
        ("tfsf box at the domain edge", tfsf(&GOOD.replace("default = { type = \"pml\", cells = 5 }", "default = { type = \"pec\" }"), "[0.4, 1.0, 0.4]", "\"+z\"", "\"Ex\""), vec!["scene.toml:17:", "source[0].box", "y = [-0.5, 0.5]", "domain edge"]),
        ("tfsf polarization along the direction", tfsf(GOOD, "[0.4, 0.4, 0.4]", "\"+z\"", "\"Ez\""), vec!["scene.toml:19:", "source[0].polarization", "perpendicular to the direction"]),
        ("tfsf polarization vector not perpendicular", tfsf(GOOD, "[0.4, 0.4, 0.4]", "[1.0, 0.0, 1.0]", "[1.0, 1.0, 0.0]"), vec!["scene.toml:19:", "source[0].polarization", "perpendicular", "0.5"]),
        ("tfsf oblique with a periodic axis", tfsf(&GOOD.replace("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\ny_min = { type = \"periodic\" }\ny_max = { type = \"periodic\" }"), "[0.4, 2.0, 0.4]", "[1.0, 1.0, 0.0]", "\"Ez\""), vec!["scene.toml:20:", "source[0].direction", "periodic y axis", "Bloch-periodic", "does not support", "plane_wave"]),
        ("bloch face against a pml face", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\nx_min = { type = \"bloch\", phase = 0.25 }\nx_max = { type = \"pml\", cells = 5 }"), vec!["scene.toml:8:", "boundaries.x_min", "needs both x_min and x_max periodic"]),
        ("bloch face without a phase", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\nx_min = { type = \"bloch\" }"), vec!["scene.toml:8:", "boundaries.x_min", "needs `phase`"]),
        ("phase on a periodic face", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"periodic\", phase = 0.2 }"), vec!["scene.toml:7:", "boundaries.default", "`phase` applies only to type = \"bloch\""]),
        ("bloch default", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"bloch\", phase = 0.2 }"), vec!["scene.toml:7:", "boundaries.default", "faces of one axis"]),
        ("two bloch phases on one axis", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\ny_min = { type = \"bloch\", phase = 0.1 }\ny_max = { type = \"bloch\", phase = 0.2 }"), vec!["scene.toml:9:", "boundaries.y_max", "write one phase"]),
        ("bloch phase on a flat axis", edit("size = [1.0, 1.0, 1.0]", "size = [1.0, 1.0, 0.05]").replace("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\nz_min = { type = \"bloch\", phase = 0.25 }"), vec!["scene.toml:8:", "boundaries.z_min", "at least 2 cells along z"]),
        ("oblique plane wave without periodic walls", edit("type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]", "type = \"plane_wave\"\ndirection = [1.0, 0.0, 0.3]\npolarization = \"Ey\"\nposition = -0.2"), vec!["scene.toml:17:", "source[0].direction", "neither of them periodic", "z_min = { type = \"periodic\" }"]),
        ("oblique plane wave against a written phase", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\ny_min = { type = \"bloch\", phase = 0.1 }").replace("type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]", "type = \"plane_wave\"\ndirection = [1.0, 0.3, 0.0]\npolarization = \"Ez\"\nposition = -0.2"), vec!["scene.toml:18:", "source[0].direction", "sets the Bloch phase along y", "boundaries.y_min writes 0.1"]),
        ("oblique plane wave bloch manual", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\ny_min = { type = \"periodic\" }\ny_max = { type = \"periodic\" }").replace("type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]", "type = \"plane_wave\"\ndirection = [1.0, 0.3, 0.0]\npolarization = \"Ez\"\nposition = -0.2\nbloch = \"manual\""), vec!["source[0].bloch", "\"auto\""]),
        ("plane wave polarized along its direction", edit("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\ny_min = { type = \"periodic\" }\ny_max = { type = \"periodic\" }\nz_min = { type = \"periodic\" }\nz_max = { type = \"periodic\" }").replace("type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]", "type = \"plane_wave\"\ndirection = [1.0, 0.3, 0.2]\npolarization = [2.0, 0.6, 0.4]\nposition = -0.2"), vec!["source[0].polarization", "along the wave's direction"]),
        ("two-way plane wave with a vector polarization", edit("type = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 0.0, 0.0]", "type = \"plane_wave\"\ndirection = \"+x\"\npolarization = [0.0, 1.0, 1.0]\nposition = -0.2\ntwo_way = true"), vec!["source[0].polarization", "two-way plane wave's polarization is an E component"]),
        ("tfsf in a bloch cell", tfsf(&GOOD.replace("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\ny_min = { type = \"bloch\", phase = 0.2 }"), "[0.4, 2.0, 0.4]", "\"+z\"", "\"Ex\""), vec!["source[0]", "TF/SF source in a Bloch cell", "plane_wave"]),
        ("diffraction plane across a pml axis", format!("{GOOD}\n[[monitor]]\ntype = \"diffraction\"\nname = \"d\"\nplane = {{ z = 0.2 }}\nfrequencies = {{ min = 2.0e14, max = 4.0e14, count = 3 }}\n"), vec!["scene.toml:29:", "monitor[1].plane", "in-plane axis x is not periodic"]),
        ("diffraction without a plane wave", format!("{}\n[[monitor]]\ntype = \"diffraction\"\nname = \"d\"\nplane = {{ z = 0.2 }}\nfrequencies = {{ min = 2.0e14, max = 4.0e14, count = 3 }}\n", GOOD.replace("default = { type = \"pml\", cells = 5 }", "default = { type = \"periodic\" }\nz_min = { type = \"pml\", cells = 5 }\nz_max = { type = \"pml\", cells = 5 }")), vec!["monitor[1]", "one-way plane_wave travelling along z"]),
        ("diffraction box", format!("{GOOD}\n[[monitor]]\ntype = \"diffraction\"\nname = \"d\"\nbox = {{ center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.3] }}\nfrequencies = {{ min = 2.0e14, max = 4.0e14, count = 3 }}\n"), vec!["monitor[1].box", "plane across the periodic cell"]),
        ("tfsf direction word", tfsf(GOOD, "[0.4, 0.4, 0.4]", "\"up\"", "\"Ex\""), vec!["scene.toml:18:", "source[0].direction", "`+x`"]),
        ("tfsf with a position", tfsf(GOOD, "[0.4, 0.4, 0.4]", "\"+z\"", "\"Ex\"\nposition = [0.0, 0.0, 0.0]"), vec!["source[0].position", "a tfsf source takes `box`"]),
    ];
    assert!(cases.len() >= 15);
    for (case, text, wants) in cases {
        let (code, err, exists) = run_scene(&case.replace(' ', "_"), text.as_bytes());
        assert_eq!(
            code,
            Some(2),
            "{case}: expected exit code 2, stderr:\n{err}"
        );
        assert!(!err.contains("panicked"), "{case}: panicked:\n{err}");
        assert!(!exists, "{case}: an output file was created");
        assert!(
            case == "unknown material" || !err.contains("unknown material"),
            "{case}: a follow-on error:\n{err}"
        );
        for w in wants {
            assert!(err.contains(w), "{case}: message lacks `{w}`:\n{err}");
        }
    }
}

#[test]
fn non_utf8_scene_is_refused_cleanly() {
    let mut bytes = GOOD.as_bytes().to_vec();
    bytes.splice(0..0, [0xff, 0xfe, 0x00]);
    let (code, err, exists) = run_scene("nonutf8", &bytes);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("scene.toml") && err.contains("UTF-8"), "{err}");
    assert!(!exists);
}

#[test]
fn every_problem_is_reported_in_one_pass() {
    let text = edit("material = \"glass\"", "material = \"stone\"")
        .replace("component = \"Ez\"", "component = \"Hz\"");
    let (code, err, _) = run_scene("several", text.as_bytes());
    assert_eq!(code, Some(2));
    assert!(err.contains("2 problems"), "{err}");
    assert!(
        err.contains("geometry[0].material") && err.contains("source[0].component"),
        "{err}"
    );
}

#[test]
fn a_missing_file_is_named() {
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "no/such/scene.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no/such/scene.toml"));
}

#[test]
fn an_under_resolved_waveform_is_a_warning() {
    let text = edit("cell_size = 0.05", "cell_size = 0.1").replace("cells = 5", "cells = 2");
    let dir = tmpdir("warn");
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["check", "s.toml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("warning:") && err.contains("cells"), "{err}");
}

#[test]
fn a_blow_up_stops_the_run_with_the_step_and_the_likely_cause() {
    // epsilon < 1 makes waves faster than c, so Courant 0.99 of the vacuum limit is unstable.
    let text = GOOD
        .replace("glass = { epsilon = 2.25 }", "fast = { epsilon = 0.2 }")
        .replace("material = \"glass\"", "material = \"fast\"")
        .replace("size = [0.2, 0.2, 0.2]", "size = [2.0, 2.0, 2.0]")
        .replace("steps = 10", "steps = 3000");
    let dir = tmpdir("blowup");
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "out.h5", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("NaN or infinite between steps"), "{err}");
    assert!(err.contains("`fast` has epsilon 0.2"), "{err}");
    assert!(
        dir.join("out.h5").exists(),
        "the results up to the blow-up are kept"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_existing_result_is_not_overwritten_without_overwrite() {
    let dir = tmpdir("overwrite");
    std::fs::write(dir.join("s.toml"), GOOD).unwrap();
    std::fs::write(dir.join("out.h5"), b"earlier results").unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_yee"))
            .args(["run", "s.toml", "-o", "out.h5", "--quiet"])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--overwrite"));
    assert_eq!(
        std::fs::read(dir.join("out.h5")).unwrap(),
        b"earlier results"
    );
    // --overwrite replaces only an earlier result (an HDF5 file), never a file of other
    // contents: here, say, the scene given as its own output.
    let o = run(&["--overwrite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("it is not an HDF5 file"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read(dir.join("out.h5")).unwrap(),
        b"earlier results"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "s.toml", "--overwrite", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(dir.join("s.toml")).unwrap(), GOOD);
    std::fs::write(dir.join("out.h5"), b"\x89HDF\r\n\x1a\nan earlier result").unwrap();
    assert_eq!(run(&["--overwrite"]).status.code(), Some(0));
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "missing/out.h5", "--quiet"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the folder `missing` does not exist"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_unknown_key_and_the_checks_after_them_come_in_one_run() {
    // Five misspelt keys at different depths, a wrongly typed value and a semantic error in
    // another entry (an unknown material): all seven in one run, each with its line and column,
    // the misspelt keys with a suggestion.
    let text = GOOD
        .replace("[simulation]", "[simulaton]")
        .replace("cell_size = 0.05", "cellsize = 0.05")
        .replace("steps = 10", "steps = 10\nprecison = \"f64\"")
        .replace("cells = 5 }", "cels = 5 }")
        .replace("bandwidth = 1.0e14", "bandwith = 1.0e14")
        .replace("components = [\"Ez\"]", "components = \"Ez\"")
        .replace("material = \"glass\"", "material = \"glas\"");
    let (code, err, exists) = run_scene("five_typos", text.as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(!exists);
    assert!(err.contains("7 problems"), "{err}");
    for want in [
        "scene.toml:1:2: `simulaton`: unknown key `simulaton` at the top level",
        "did you mean `simulation`?",
        "scene.toml:3:1: `simulation.cellsize`",
        "did you mean `cell_size`?",
        "scene.toml:6:1: `simulation.precison`",
        "did you mean `precision`?",
        "scene.toml:8:27: `boundaries.default.cels`",
        "did you mean `cells`?",
        "`source[0].waveform.bandwith`",
        "did you mean `bandwidth`?",
        "scene.toml:25:14: `monitor[0].components`: invalid type",
        "scene.toml:13:12: `geometry[0].material`: unknown material `glas`",
    ] {
        assert!(err.contains(want), "lacks `{want}`:\n{err}");
    }
}

#[test]
fn a_bad_value_brings_no_follow_on_errors() {
    // An invalid PML thickness used to add three "no interior" errors for the default PML.
    let (code, err, _) = run_scene("pml0", edit("cells = 5 }", "cells = 0 }").as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1 problem\n"), "{err}");
    assert!(err.contains("boundaries.default.cells"), "{err}");
    // A wrongly typed required value is one problem, not also a "missing field".
    let (code, err, _) = run_scene(
        "freq",
        edit("frequency = 3.0e14", "frequency = \"high\"").as_bytes(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1 problem\n"), "{err}");
    assert!(
        err.contains("source[0].waveform.frequency") && !err.contains("missing"),
        "{err}"
    );
    // A material that cannot be read is not then "unknown" to the geometry that uses it.
    let (code, err, _) = run_scene(
        "mat",
        edit(
            "glass = { epsilon = 2.25 }",
            "glass = { epsilon = \"high\" }",
        )
        .as_bytes(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("1 problem\n") && err.contains("materials.glass.epsilon"),
        "{err}"
    );
}

#[test]
fn a_pml_that_leaves_one_cell_says_so() {
    // 20 cells, 2 x 9 PML cells would leave 2; 2 x 9.5 is impossible, so use x_max = 10.
    let text = edit(
        "default = { type = \"pml\", cells = 5 }",
        "default = { type = \"pml\", cells = 9 }\nx_max = { type = \"pml\", cells = 10 }",
    );
    let (code, err, _) = run_scene("one_cell", text.as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("only 1 interior cell"), "{err}");
}

#[test]
fn a_blow_up_names_the_scenes_materials_not_the_smoothing_blends() {
    // A fast box with faces inside the domain: subpixel smoothing adds blended materials
    // (`fast|vacuum ...`), which used to be listed as causes alongside `fast`.
    let text = GOOD
        .replace("glass = { epsilon = 2.25 }", "fast = { epsilon = 0.2 }")
        .replace("material = \"glass\"", "material = \"fast\"")
        .replace("size = [0.2, 0.2, 0.2]", "size = [0.42, 0.42, 0.42]")
        .replace("steps = 10", "steps = 3000");
    let (code, err, _) = run_scene("blend_blowup", text.as_bytes());
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("has epsilon").count(), 1, "{err}");
    assert!(
        err.contains("`fast` has epsilon 0.2") && !err.contains('|'),
        "{err}"
    );
}

/// `yee ARGS` in `dir` with the good scene as `s.toml`: (exit code, stderr).
fn yee_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn an_output_that_is_a_folder_is_refused() {
    let dir = tmpdir("folder");
    std::fs::write(dir.join("s.toml"), GOOD).unwrap();
    std::fs::create_dir(dir.join("results")).unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        let mut args = vec!["run", "s.toml", "-o", "results", "--quiet"];
        args.extend(extra);
        let (code, err) = yee_in(&dir, &args);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains("`results` is a folder") && err.contains("results/yee.h5"),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_that_cannot_be_honoured_are_stated() {
    // The good scene has 20 x planes; this machine has far fewer than 1000 cores.
    let dir = tmpdir("options");
    std::fs::write(dir.join("s.toml"), GOOD).unwrap();
    let (code, err) = yee_in(
        &dir,
        &[
            "run",
            "s.toml",
            "-o",
            "a.h5",
            "--backend",
            "cpu",
            "--slabs",
            "100",
            "--threads",
            "1000",
            "--gpus",
            "0",
            "--slabs-per-gpu",
            "2",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    for want in [
        "note: --gpus and --slabs-per-gpu apply to the CUDA backend only: ignored with --backend cpu",
        "note: --slabs 100 is more than the grid's 20 x planes",
        "the CPU backend uses 20 slabs",
        "note: --threads 1000 is more than this machine's",
        "so at most 20 of the 1000 threads work at once",
    ] {
        assert!(err.contains(want), "lacks `{want}`:\n{err}");
    }
    // One step: "1 step", not "1 steps".
    std::fs::write(
        dir.join("one.toml"),
        GOOD.replace("steps = 10", "steps = 1"),
    )
    .unwrap();
    let (code, err) = yee_in(&dir, &["run", "one.toml", "-o", "b.h5", "--backend", "cpu"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("for 1 step on") && err.contains("x 1 step in"),
        "{err}"
    );
    assert!(!err.contains("note:"), "nothing to note:\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bench_size_below_the_minimum_is_invalid_input() {
    // Refused before anything is measured: exit 2, like every other invalid input.
    let dir = tmpdir("bench");
    let (code, err) = yee_in(&dir, &["bench", "--size", "0", "--backend", "cpu"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--size 0") && err.contains("at least 24"),
        "{err}"
    );
    // Above a scene's 1e12 cells, and a cube that does not fit here (a 10 PB cube): said in
    // the benchmark's terms, with the largest size that fits, not a scene file's.
    let (code, err) = yee_in(&dir, &["bench", "--size", "100000", "--backend", "cpu"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--size 100000 is too large: at most 10000"),
        "{err}"
    );
    let (code, err) = yee_in(&dir, &["bench", "--size", "10000", "--backend", "cpu"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--size 10000: the 10000^3 cube needs")
            && err.contains("the largest cube that fits there is about --size")
            && !err.contains("bench.toml"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn more_materials_than_the_table_holds_is_one_error_with_the_count() {
    // 300 materials, the geometry using one beyond the 254 that fit: one error with the
    // count, not a false "unknown material" for the geometry.
    let mut text = GOOD.replace("glass = { epsilon = 2.25 }\n", "");
    let defs: String = (0..300)
        .map(|i| format!("m{i:03} = {{ epsilon = {} }}\n", 1.0 + i as f64 / 100.0))
        .collect();
    text = text.replace("[materials]\n", &format!("[materials]\n{defs}"));
    text = text.replace("material = \"glass\"", "material = \"m299\"");
    let (code, err, _) = run_scene("materials", text.as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1 problem\n"), "{err}");
    assert!(
        err.contains("the scene defines 300") && err.contains("at most 254"),
        "{err}"
    );
    assert!(!err.contains("unknown material"), "{err}");
}

#[test]
fn a_domain_too_small_for_the_default_pml_is_one_problem() {
    // No [boundaries]: each of the three axes (20 cells) is too short for 2 x 10 PML cells,
    // said once for all three rather than three times.
    let text = edit(
        "[boundaries]\ndefault = { type = \"pml\", cells = 5 }\n",
        "",
    );
    let (code, err, _) = run_scene("default_pml", text.as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("1 problem\n"), "{err}");
    assert!(
        err.contains("scene.toml:4:")
            && err.contains("for x, y and z every face gets the default 10-cell PML"),
        "{err}"
    );
}

/// A build without the `mpi` feature started by mpirun as several processes refuses to run
/// (each would run the whole grid and race for the file), before it reads the scene. The
/// launcher's environment is enough to tell: set here without mpirun.
#[cfg(not(feature = "mpi"))]
#[test]
fn several_processes_of_a_build_without_mpi_refuse_to_run() {
    let d = tmpdir("no-mpi");
    std::fs::write(d.join("s.toml"), GOOD).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "out.h5"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .current_dir(&d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--features mpi"), "{err}");
    assert!(!d.join("out.h5").exists(), "nothing written");
    // One process under a launcher (mpirun -n 1) runs as usual.
    let o = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "out.h5", "--quiet"])
        .env("OMPI_COMM_WORLD_SIZE", "1")
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn absurd_inputs_are_refused_before_they_cost_time_or_memory() {
    let dir = tmpdir("absurd");
    // A device given as the scene: read up to a bound, not until memory runs out.
    let (code, err) = yee_in(&dir, &["check", "/dev/zero"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("larger than 64 MiB"), "{err}");
    // A mesh of absurdly small cells (a slip of the exponent): refused from its cell count,
    // before node lines that would not fit in memory are made (this took gigabytes before).
    let auto = edit("steps = 10", "steps = 10\ncells_per_wavelength = 1.0e9");
    let refine = format!(
        "{GOOD}\n[[refine]]\nbox = {{ center = [0.0, 0.0, 0.0], size = [0.2, 0.2, 0.2] }}\ncell_size = 1.0e-9\n"
    );
    for (name, scene, key) in [
        ("auto.toml", auto, "simulation.cells_per_wavelength"),
        ("refine.toml", refine, "simulation.size"),
    ] {
        std::fs::write(dir.join(name), scene).unwrap();
        let started = std::time::Instant::now();
        let (code, err) = yee_in(&dir, &["check", name]);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(
            err.contains(key) && err.contains("more than the limit"),
            "{name}: {err}"
        );
        // Generous for a loaded machine; making the lines took tens of seconds.
        assert!(
            started.elapsed().as_secs() < 10,
            "{name}: {:?}",
            started.elapsed()
        );
    }
    // Thousands of threads on a few cores spend the run waking each other.
    std::fs::write(dir.join("s.toml"), GOOD).unwrap();
    let (code, err) = yee_in(&dir, &["run", "s.toml", "-o", "t.h5", "--threads", "5000"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--threads 5000 is too many: at most 1024"),
        "{err}"
    );
    assert!(!dir.join("t.h5").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn farfield_given_a_file_it_cannot_reproject_is_invalid_input() {
    let dir = tmpdir("farfield");
    std::fs::write(dir.join("s.toml"), GOOD).unwrap();
    let (code, err) = yee_in(&dir, &["run", "s.toml", "-o", "r.h5", "--quiet"]);
    assert_eq!(code, Some(0), "{err}");
    for (file, want) in [
        ("missing.h5", "cannot read `missing.h5`"),
        ("s.toml", "`s.toml` is not an HDF5 file"),
        ("r.h5", "`r.h5` has no /far_field group"),
    ] {
        let (code, err) = yee_in(&dir, &["farfield", file, "--theta", "0:90:3"]);
        assert_eq!(code, Some(2), "{file}: {err}");
        assert!(err.contains(want), "{file}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
