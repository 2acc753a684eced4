//! What the scene asks must be what happens, or yee says why: each way a scene can ask for
//! something the grid cannot give (a point moved into the grid, a source that cannot radiate,
//! a monitor inside the PML, a run too short for its pulse, ...) gives exactly one warning, a
//! scene without such a thing gives none, and a flux spectrum above the Nyquist frequency of the
//! time step is refused.

/// A scene with nothing to warn about: the pulse peaks (at about 2e-14 s) well before the end,
/// the shortest wavelength in glass gets 11 cells, every monitor is outside the 5-cell PML.
const QUIET: &str = r#"[simulation]
cell_size = 0.05
size = [1.0, 1.0, 1.0]
duration = 5e-14
[boundaries]
default = { type = "pml", cells = 5 }
[materials]
glass = { epsilon = 2.25 }
fast = { epsilon = 0.5 }
metal = { pec = true }
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [0.2, 0.2, 0.2]
[[geometry]]
shape = "box"
material = "metal"
center = [0.2, 0.2, 0.2]
size = [0.1, 0.1, 0.1]
[[source]]
type = "dipole"
component = "Ez"
position = [-0.1, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 2.0e14, bandwidth = 1.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [0.1, 0.0, 0.0]
components = ["Ez"]
[[monitor]]
type = "snapshot"
name = "s"
plane = { z = 0.0 }
components = ["Ez"]
every = 50
[[monitor]]
type = "flux"
name = "f"
plane = { z = 0.2 }
frequencies = { min = 1.0e14, max = 3.0e14, count = 11 }
"#;

fn warnings(text: &str) -> Vec<String> {
    match yee::scene::load_str(text, "w.toml") {
        Ok((_, w)) => w,
        Err(e) => panic!("the scene should load:\n{e}\n{text}"),
    }
}

fn edit(from: &str, to: &str) -> String {
    assert!(
        QUIET.contains(from),
        "test setup: `{from}` not in the scene"
    );
    QUIET.replacen(from, to, 1)
}

/// The scene gives exactly one warning, and it contains every piece of `wants`.
fn one_warning(case: &str, text: &str, wants: &[&str]) {
    let w = warnings(text);
    assert_eq!(w.len(), 1, "{case}: expected one warning, got {w:#?}");
    for want in wants {
        assert!(w[0].contains(want), "{case}: `{want}` missing from {w:#?}");
    }
}

#[test]
fn a_plain_scene_gives_no_warning() {
    let w = warnings(QUIET);
    assert!(w.is_empty(), "{w:#?}");
}

#[test]
fn each_thing_the_grid_cannot_honour_is_one_warning() {
    let dipole_at = |p: &str| edit("position = [-0.1, 0.0, 0.0]", p);
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "dipole on a maximum face",
            dipole_at("position = [-0.1, 0.5, 0.0]"),
            vec!["w.toml:24:", "source[0].position", "moved y from 0.5 to 0.45 um (1 cell)"],
        ),
        (
            "dipole on a PEC minimum face",
            dipole_at("position = [-0.5, 0.0, 0.0]")
                .replace("default = { type = \"pml\", cells = 5 }", "default = { type = \"pml\", cells = 5 }\nx_min = { type = \"pec\" }"),
            vec!["source[0].position", "x_min face", "pec", "cannot radiate"],
        ),
        (
            "dipole inside a PEC object",
            dipole_at("position = [0.2, 0.2, 0.2]"),
            vec!["source[0].position", "inside a PEC object (material `metal`)", "cannot radiate"],
        ),
        (
            "zero amplitude",
            edit("component = \"Ez\"", "component = \"Ez\"\namplitude = 0.0"),
            vec!["source[0].amplitude", "adds nothing"],
        ),
        (
            "no source",
            QUIET.replace("[[source]]\ntype = \"dipole\"\ncomponent = \"Ez\"\nposition = [-0.1, 0.0, 0.0]\nwaveform = { type = \"gaussian\", frequency = 2.0e14, bandwidth = 1.0e14 }\n", ""),
            vec!["w.toml:1:", "no [[source]]"],
        ),
        (
            "probe in the PML",
            edit("position = [0.1, 0.0, 0.0]", "position = [0.1, 0.0, -0.48]"),
            vec!["monitor[0].position", "inside the 5-cell PML of the z_min face"],
        ),
        (
            "flux plane in the PML",
            edit("plane = { z = 0.2 }", "plane = { z = 0.4 }"),
            vec!["monitor[2].plane.z", "z = 0.4 lies inside the PML"],
        ),
        (
            "snapshot plane on a maximum face",
            edit("plane = { z = 0.0 }", "plane = { z = 0.5 }").replace("components = [\"Ez\"]\nevery", "components = [\"Ex\"]\nevery"),
            vec!["monitor[1].plane.z", "Ex", "moved z from 0.5 to 0.45 um"],
        ),
        (
            "snapshot period longer than the run",
            edit("every = 50", "every = 5000"),
            vec!["monitor[1].every", "more than the run's 525 steps", "empty"],
        ),
        (
            "count = 1 with a max",
            edit("count = 11", "count = 1"),
            vec!["monitor[2].frequencies.count", "min = 1e14 Hz only; max = 3e14 Hz is ignored"],
        ),
        (
            "run ends before the pulse peaks",
            edit("duration = 5e-14", "duration = 1e-14"),
            vec!["w.toml:4:", "simulation.duration", "before the source pulse peaks at t = 1.986e-14 s"],
        ),
        (
            "an object wholly outside the domain",
            edit("center = [0.2, 0.2, 0.2]", "center = [0.2, 0.2, 2.0]"),
            vec!["geometry[1].center", "the box lies wholly outside the domain along z (1.95 to 2.05, the domain -0.5 to 0.5)"],
        ),
        (
            "dipole inside the PML",
            edit("position = [-0.1, 0.0, 0.0]", "position = [-0.45, 0.0, 0.0]"),
            vec!["source[0].position", "inside the 5-cell PML of the x_min face"],
        ),
        (
            "a scan that moves nothing",
            format!(
                "{}[scan]\ntraces = 3\n",
                edit(
                    "position = [-0.1, 0.0, 0.0]",
                    "position = [-0.1, 0.0, 0.0]\nscan_step = [0.0, 0.0, 0.0]"
                )
                // A scan keeps no snapshots.
                .replace(
                    "[[monitor]]\ntype = \"snapshot\"\nname = \"s\"\nplane = { z = 0.0 }\ncomponents = [\"Ez\"]\nevery = 50\n",
                    ""
                )
            ),
            vec!["`scan`", "no source or probe has a non-zero `scan_step`: all 3 traces are the same run"],
        ),
        (
            "material faster than light, used",
            edit("material = \"glass\"", "material = \"fast\""),
            vec!["materials.fast.epsilon", "epsilon mu = 0.5 < 1", "courant = 0.99"],
        ),
    ];
    for (case, text, wants) in cases {
        one_warning(case, &text, &wants);
    }
}

#[test]
fn warnings_come_once_and_not_for_what_no_object_uses() {
    // Three sources that all under-resolve the grid: one warning, not three.
    let coarse = QUIET.replace(
        "frequency = 2.0e14, bandwidth = 1.0e14",
        "frequency = 4.0e14, bandwidth = 1.0e14",
    );
    let source = "[[source]]\ntype = \"dipole\"\ncomponent = \"Ex\"\nposition = [0.0, 0.1, 0.0]\nwaveform = { type = \"gaussian\", frequency = 4.0e14, bandwidth = 1.0e14 }\n";
    let text = format!("{coarse}{source}{source}");
    one_warning(
        "three coarse sources",
        &text,
        &["shortest wavelength", "cells"],
    );
    // `fast` (epsilon 0.5) is defined but no object is made of it: QUIET warns about nothing,
    // and the densest material for the resolution check is the glass that is used.
    assert!(warnings(QUIET).is_empty());
    let unused_dense = edit("fast = { epsilon = 0.5 }", "dense = { epsilon = 100.0 }");
    assert!(warnings(&unused_dense).is_empty());
}

#[test]
fn a_point_on_a_periodic_maximum_face_is_not_moved() {
    // On a periodic axis x = 0.5 is x = -0.5: the dipole goes to plane 0, without a warning.
    let text = edit(
        "default = { type = \"pml\", cells = 5 }",
        "default = { type = \"pml\", cells = 5 }\nx_min = { type = \"periodic\" }\nx_max = { type = \"periodic\" }",
    )
    .replace("position = [-0.1, 0.0, 0.0]", "position = [0.5, 0.0, 0.0]");
    let (model, w) = yee::scene::load_str(&text, "w.toml").unwrap();
    assert!(w.is_empty(), "{w:#?}");
    assert_eq!(model.sources[0].cells[0], [0, 1]);
}

#[test]
fn a_spectrum_above_the_nyquist_frequency_is_refused() {
    // dt = 0.99 * 0.05 um / (c sqrt 3) = 9.5e-17 s: Nyquist 1 / (2 dt) = 5.2e15 Hz.
    let text = edit("max = 3.0e14", "max = 6.0e15");
    let e = yee::scene::load_str(&text, "w.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("monitor[2].frequencies.max") && e.contains("Nyquist") && e.contains("6e15"),
        "{e}"
    );
}

#[test]
fn numbers_in_messages_are_as_written() {
    // 0.98 / 0.05 is 19.6 cells: rounded to 20 = 1 um; the message quotes 0.98, not
    // 0.9800000000000002.
    let w = warnings(&edit("size = [1.0, 1.0, 1.0]", "size = [0.98, 1.0, 1.0]"));
    assert!(
        w.iter()
            .any(|w| w
                .contains("x size 0.98 is not a whole number of cells; rounded to 20 cells = 1")),
        "{w:#?}"
    );
    let text = edit("min = 1.0e14", "min = 1.0e13").replace("count = 11", "count = 0");
    let e = yee::scene::load_str(&text, "w.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("min = 1e13,"), "{e}");
}

#[test]
fn steps_may_be_written_as_a_whole_float() {
    let text = edit("duration = 5e-14", "steps = 1e3");
    let (model, _) = yee::scene::load_str(&text, "w.toml").unwrap();
    assert_eq!(model.grid.steps, 1000);
}
