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

/// Replace the first occurrence of `from` in the good scene.
fn edit(from: &str, to: &str) -> String {
    assert!(
        GOOD.contains(from),
        "test setup: `{from}` not in the good scene"
    );
    GOOD.replacen(from, to, 1)
}

#[test]
fn the_good_scene_runs() {
    let (code, err, exists) = run_scene("good", GOOD.as_bytes());
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
        ("negative conductivity", edit("glass = { epsilon = 2.25 }", "glass = { epsilon = 2.25, conductivity = -1.0 }"), vec!["scene.toml:9:", "materials.glass.conductivity", ">= 0"]),
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
