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
    assert!(!out.contains("loss"), "a lossless strip: {out}");
    // An absorbing core (eps'' = sigma / (w eps0) = 0.19): the complex solve reports the loss.
    let lossy = dir.join("lossy.toml");
    let text = strip(0.04).replace(
        "si = { epsilon = 12.082576 }",
        "si = { epsilon = 12.082576, conductivity = 2000.0 }",
    );
    std::fs::write(&lossy, text).unwrap();
    let args = [
        "modes",
        lossy.to_str().unwrap(),
        "--plane",
        "x=0.1",
        "--frequency",
        "1.934e14",
    ];
    let (code, out, err) = yee(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("mode 0: n_eff 2.") && out.contains("dB/um (") && out.contains("dB/cm)"),
        "{out}"
    );
    // A 1 x 0.4 um strip (n 2) on 0.3 um of oxide over silicon: its TE0 (n_eff about 1.55)
    // lies below the substrate's index. Looked for near n_eff 1.7 with the PML layers as an
    // in-plane PML, it leaks (about 0.6 dB/um at 50 nm cells; src/modes/tests.rs has the
    // exact leaky slab); with PEC walls instead, the plane's nearest mode is a lossless
    // substrate mode.
    let leaky = dir.join("leaky.toml");
    std::fs::write(&leaky, LEAKY_STRIP).unwrap();
    let leaky = leaky.to_str().unwrap();
    let args = [
        "modes",
        leaky,
        "--plane",
        "x=0.2",
        "--frequency",
        "1.934e14",
        "--modes",
        "1",
    ];
    let (code, out, err) = yee(&[&args[..], &["--neff", "1.7", "--pml"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("mode 0: n_eff 1.5") && out.contains("dB/um ("),
        "{out}"
    );
    let (code, out, err) = yee(&[&args[..], &["--neff", "1.7"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("loss"), "{out}");
    let (code, _, err) = yee(&[&args[..], &["--neff", "0"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--neff"), "{err}");
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

/// A strip (n 2, 1 x 0.4 um) on 0.3 um of oxide over a silicon substrate, air above, 50 nm
/// cells with 8-cell PML layers: a guide that leaks into its substrate.
const LEAKY_STRIP: &str = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.0, 3.0, 3.0]
steps = 100
precision = "f64"
[boundaries]
default = { type = "pml", cells = 8 }
[materials]
core = { epsilon = 4.0 }
oxide = { epsilon = 2.085136 }
si = { epsilon = 12.082576 }
[[geometry]]
shape = "box"
material = "si"
center = [0.0, 0.0, -1.0]
size = [10.0, 10.0, 1.0]
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, -0.35]
size = [10.0, 10.0, 0.3]
[[geometry]]
shape = "box"
material = "core"
center = [0.0, 0.0, 0.0]
size = [10.0, 1.0, 0.4]
[[source]]
type = "dipole"
component = "Ey"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
"#;

/// A 2-D (one periodic cell along z) silicon slab waveguide in SiO2, 0.4 um thick, running along
/// `axis` ("x" or "y"), fed by a TE0 mode source travelling `sign` (+1 or -1) along it from
/// 2 um upstream of the centre, with mode monitors (three modes each) 0.5 um behind the
/// source (`back`), at the centre (`a`) and 2 um downstream (`b`). The slab's centre sits off
/// the grid's symmetry (0.013 um), so its smoothed profile is not mirror symmetric and the
/// odd modes are not zero by symmetry alone. Cells 25 nm, f32.
fn slab_guide(axis: &str, sign: f64) -> String {
    let along = if axis == "x" { 0 } else { 1 };
    let at = |s: f64| {
        let mut c = [0.0, 0.0, 0.0];
        c[along] = s;
        format!("[{}, {}, {}]", c[0], c[1], c[2])
    };
    let plane = |s: f64| {
        let mut size = [3.0, 3.0, 0.025];
        size[along] = 0.0;
        format!(
            "{{ center = {}, size = [{}, {}, {}] }}",
            at(s),
            size[0],
            size[1],
            size[2]
        )
    };
    let (size, slab) = if along == 0 {
        (
            "[6.0, 3.0, 0.025]",
            "center = [0.0, 0.013, 0.0]\nsize = [20.0, 0.4, 20.0]",
        )
    } else {
        (
            "[3.0, 6.0, 0.025]",
            "center = [0.013, 0.0, 0.0]\nsize = [0.4, 20.0, 20.0]",
        )
    };
    let dir = format!("{}{axis}", if sign > 0.0 { "+" } else { "-" });
    let monitor = |name: &str, s: f64| {
        format!(
            "[[monitor]]\ntype = \"mode\"\nname = \"{name}\"\nbox = {}\nmodes = 3\nfrequencies = {{ min = 1.85e14, max = 2.02e14, count = 5 }}\n",
            plane(s)
        )
    };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.025
size = {size}
duration = 6.0e-13
[boundaries]
default = {{ type = "pml", cells = 12 }}
z_min = {{ type = "periodic" }}
z_max = {{ type = "periodic" }}
[materials]
si = {{ epsilon = 12.082576 }}
oxide = {{ epsilon = 2.085136 }}
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, 0.0]
size = [20.0, 20.0, 20.0]
[[geometry]]
shape = "box"
material = "si"
{slab}
[[source]]
type = "mode"
name = "in"
box = {src}
direction = "{dir}"
waveform = {{ type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }}
{back}{a}{b}"#,
        src = plane(-2.0 * sign),
        back = monitor("back", -2.5 * sign),
        a = monitor("a", 0.0),
        b = monitor("b", 2.0 * sign),
    )
}

/// The 2-D slab guide ([`slab_guide`]) with an absorbing core (sigma 1000 S/m: eps'' = 0.093
/// at 193 THz, about 0.5 dB/um): its mode monitors solve the lossy plane in complex arithmetic
/// and write each mode's `loss`; the TE0 amplitude the run carries from monitor `a` to `b`, 2 um
/// on, falls by that loss: |b / a|^2 in dB within 0.3 % of -loss L (measured 0.05 %; the
/// solve's complex beta is the 3-D grid's, through its own difference along the guide, and
/// the update's conductivity is sigma / (w eps0) to order (w dt)^2, 1e-3 here), and its phase
/// gives the solved n_eff within 1e-4 as in the lossless guide.
#[test]
fn a_lossy_guide_loses_what_its_modes_loss_says() {
    let text = slab_guide("x", 1.0).replace(
        "si = { epsilon = 12.082576 }",
        "si = { epsilon = 12.082576, conductivity = 1000.0 }",
    );
    assert!(text.contains("conductivity"));
    let run = common::BinaryRun::new("mode-lossy", &text);
    let (a, b) = (
        amplitudes(&run, "a", "forward"),
        amplitudes(&run, "b", "forward"),
    );
    let (neff, loss) = (run.read("modes/a/neff"), run.read("modes/a/loss"));
    for (k, &f) in run.read("modes/a/frequency").iter().enumerate() {
        let (n, db_per_m) = (neff[3 * k], loss[3 * k]);
        let (ratio, measured) = phase_neff(a[k][0], b[k][0], f, 2.0e-6, n);
        let got = 10.0 * power(ratio).log10();
        let want = -db_per_m * 2.0e-6;
        eprintln!("{f:.4e} Hz: {got:.5} dB over 2 um, the solve's loss {want:.5} dB");
        assert!(want < -0.5 && want > -2.0, "{want} dB");
        assert!((got / want - 1.0).abs() < 3e-3, "{got} dB vs {want} dB");
        assert!((measured - n).abs() < 1e-4, "n_eff {measured} vs {n}");
    }
}

/// A mode monitor's amplitudes (`forward` or `backward`), [frequency][mode].
fn amplitudes(run: &common::BinaryRun, monitor: &str, which: &str) -> Vec<Vec<(f64, f64)>> {
    let ds = run
        .file
        .dataset(&format!("modes/{monitor}/{which}"))
        .unwrap();
    let m = ds.shape()[1];
    let flat = ds.read_raw::<yee::output::Complex>().unwrap();
    flat.chunks(m)
        .map(|row| row.iter().map(|c| (c.r, c.i)).collect())
        .collect()
}

/// Between a mode's amplitudes `a` and `b` at frequency `f` (Hz), `b` a distance `length` (m)
/// downstream: the ratio b / a = exp(-i beta L) and the n_eff its phase gives, on the branch
/// (whole turns of 2 pi) nearest `near`, the solver's.
fn phase_neff(a: (f64, f64), b: (f64, f64), f: f64, length: f64, near: f64) -> ((f64, f64), f64) {
    use std::f64::consts::PI;
    let ((ar, ai), (br, bi)) = (a, b);
    let d = ar * ar + ai * ai;
    let ratio = ((br * ar + bi * ai) / d, (bi * ar - br * ai) / d);
    let k0 = 2.0 * PI * f / 299_792_458.0;
    let phase = -ratio.1.atan2(ratio.0);
    let turns = ((near * k0 * length - phase) / (2.0 * PI)).round();
    (ratio, (phase + 2.0 * PI * turns) / (k0 * length))
}

fn power((r, i): (f64, f64)) -> f64 {
    r * r + i * i
}

/// A TE0 mode source in a straight guide launches the mode the solver found, one way, and the
/// mode monitors read it (the issue's 3-D test, here on a 2-D guide; each run ~1 s). Along +x,
/// -x and -y (where the plane's in-plane axes (z, x) run against the monitor's (x, z) order):
/// - the phase advance of TE0 between monitors 2 um apart gives the solver's n_eff within 1e-4
///   at every frequency (both are the 3-D grid's: the solve uses the grid's discrete k0 and
///   difference along the guide; measured agreement ~1e-8);
/// - the power leaking backwards (at `back`, behind the source) is below -40 dB of the
///   forward power (measured -50 to -96 dB over the band: the two sheets' backward waves
///   cancel exactly at the centre frequency only), and with `profiles = 3` (the profile solved
///   at three frequencies and interpolated) below -70 dB (measured -73 to -88 dB);
/// - the power in the other modes is below -30 dB of TE0's (measured far below: they are
///   excited only by the profile's mismatch with the grid, and both come from one solve);
/// - |S21|^2 = |a_b / a_a|^2 is within 0.005 of 1 (lossless straight guide; measured 1e-7).
#[test]
fn a_mode_source_launches_its_mode_one_way_and_monitors_read_it() {
    for (axis, sign, profiles) in [("x", 1.0, 1), ("x", -1.0, 1), ("y", -1.0, 1), ("x", 1.0, 3)] {
        let text = slab_guide(axis, sign).replace(
            "name = \"in\"\n",
            &format!("name = \"in\"\nprofiles = {profiles}\n"),
        );
        let run = common::BinaryRun::new(&format!("mode-{axis}{sign}-{profiles}"), &text);
        let (fwd, bwd) = if sign > 0.0 {
            ("forward", "backward")
        } else {
            ("backward", "forward")
        };
        let a = amplitudes(&run, "a", fwd);
        let b = amplitudes(&run, "b", fwd);
        let leak = amplitudes(&run, "back", bwd);
        let neff = run.read("modes/a/neff");
        let freq = run.read("modes/a/frequency");
        for (k, &f) in freq.iter().enumerate() {
            let case = format!("{sign:+}{axis} at {f:.4e} Hz");
            let n = neff[3 * k];
            let (ratio, measured) = phase_neff(a[k][0], b[k][0], f, 2.0e-6, n);
            assert!(
                (measured - n).abs() < 1e-4,
                "{case}: n_eff {measured} vs {n}"
            );
            let forward = power(a[k][0]);
            let s21 = power(ratio);
            assert!((s21 - 1.0).abs() < 0.005, "{case}: |S21|^2 {s21}");
            let back_db = 10.0 * (power(leak[k][0]) / forward).log10();
            let bound = if profiles == 1 { -40.0 } else { -70.0 };
            assert!(
                back_db < bound,
                "{case}, {profiles} profiles: backward {back_db:.1} dB"
            );
            for (m, &amplitude) in b[k].iter().enumerate().skip(1) {
                let other = 10.0 * (power(amplitude) / forward).log10();
                assert!(other < -30.0, "{case}: mode {m} at {other:.1} dB");
            }
        }
    }
}

/// A mode source's sheets (electric and magnetic, spanning every slab when normal to y) give
/// the same fields to the bit on 1 and 3 slabs.
#[test]
fn mode_sources_give_bit_identical_fields_on_one_and_three_slabs() {
    for (axis, sign) in [("x", 1.0), ("y", -1.0)] {
        let text = slab_guide(axis, sign).replace("duration = 6.0e-13", "steps = 300");
        let model = common::model(&text);
        yee::modes::prepare(&model).expect("the modes solve");
        let one = common::run_cpu::<f32>(&model, 1);
        let three = common::run_cpu::<f32>(&model, 3);
        assert!(one == three, "{axis}: 1 and 3 slabs differ");
        let peak = one.1.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(peak > 0.0, "{axis}: the source drove nothing");
    }
}

/// Bad mode sources and monitors: exit 2 naming the key (and, for a mode the plane does not
/// carry, how many it does and their n_eff).
#[test]
fn bad_mode_sources_and_monitors_are_refused() {
    let dir = std::env::temp_dir().join(format!("yee-mode-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = slab_guide("x", 1.0).replace("duration = 6.0e-13", "steps = 10");
    let cases = [
        (
            good.replace("direction = \"+x\"", "direction = \"+y\""),
            "does not cross the plane",
        ),
        (
            good.replace(
                "size = [0, 3, 0.025] }\ndirection",
                "size = [0, 0, 0.025] }\ndirection",
            ),
            "exactly one zero extent",
        ),
        (
            good.replace("center = [-2, 0, 0]", "center = [-2.9, 0, 0]"),
            "inside the PML",
        ),
        (
            good.replace("direction = \"+x\"\n", "direction = \"+x\"\nmode = 40\n"),
            "mode 40 does not propagate",
        ),
        (
            good.replace("modes = 3", "modes = 0"),
            "decompose onto 1 to 100 modes",
        ),
    ];
    assert_refused(
        &dir,
        &good,
        &cases,
        &["run", "SCENE", "-o", "OUT", "--quiet"],
    );
}

/// Each of `cases` (a variant of the scene `good` and what its error must say), written into
/// `dir`, makes the command `args` (SCENE and OUT standing for its scene and result file) exit 2
/// with that message; `dir` is removed after.
fn assert_refused(dir: &std::path::Path, good: &str, cases: &[(String, &str)], args: &[&str]) {
    for (i, (text, says)) in cases.iter().enumerate() {
        assert_ne!(text, good, "case {i} changed nothing");
        let scene = dir.join(format!("bad{i}.toml"));
        std::fs::write(&scene, text).unwrap();
        let out = dir.join(format!("bad{i}.h5"));
        let args: Vec<&str> = args
            .iter()
            .map(|a| match *a {
                "SCENE" => scene.to_str().unwrap(),
                "OUT" => out.to_str().unwrap(),
                other => other,
            })
            .collect();
        let (code, _, err) = yee(&args);
        assert_eq!(code, Some(2), "case {i}: {err}");
        assert!(err.contains(says), "case {i}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A 2-D two-port: a 220 nm silicon slab (x < 0) meeting a 500 nm one offset by 100 nm (x > 0),
/// or with `straight` the 220 nm slab throughout; ports `in` (source at x = -2.2 along +x,
/// monitor at -1.8) and `out` (source at 2.2 along -x, monitor at 1.8). Cells 25 nm, f32.
fn two_port(straight: bool) -> String {
    let right = if straight {
        "center = [5.0, 0.0, 0.0]\nsize = [10.0, 0.22, 20.0]"
    } else {
        "center = [5.0, 0.1, 0.0]\nsize = [10.0, 0.5, 20.0]"
    };
    let port = |name: &str, at: f64, dir: &str| {
        format!(
            "[[source]]\ntype = \"mode\"\nname = \"{name}\"\nprofiles = 3\nbox = {{ center = [{at}, 0.0, 0.0], size = [0.0, 3.0, 0.025] }}\ndirection = \"{dir}\"\nwaveform = {{ type = \"gaussian\", frequency = 1.934e14, bandwidth = 2.0e13 }}\n\
             [[monitor]]\ntype = \"mode\"\nname = \"{name}\"\nbox = {{ center = [{}, 0.0, 0.0], size = [0.0, 3.0, 0.025] }}\nfrequencies = {{ min = 1.85e14, max = 2.02e14, count = 5 }}\n",
            at * 1.8 / 2.2
        )
    };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.025
size = [6.0, 3.0, 0.025]
duration = 7.0e-13
[boundaries]
default = {{ type = "pml", cells = 12 }}
z_min = {{ type = "periodic" }}
z_max = {{ type = "periodic" }}
[materials]
si = {{ epsilon = 12.082576 }}
oxide = {{ epsilon = 2.085136 }}
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, 0.0]
size = [20.0, 20.0, 20.0]
[[geometry]]
shape = "box"
material = "si"
center = [-5.0, 0.0, 0.0]
size = [10.0, 0.22, 20.0]
[[geometry]]
shape = "box"
material = "si"
{right}
{}{}
[sparameters]
ports = ["in", "out"]
"#,
        port("in", -2.2, "+x"),
        port("out", 2.2, "-x")
    )
}

/// The S-matrix of a sweep's result file: [frequency][j][k] as (re, im).
fn s_matrix(path: &std::path::Path) -> Vec<[[(f64, f64); 2]; 2]> {
    let f = hdf5::File::open(path).unwrap();
    let s = f
        .dataset("sparameters/S")
        .unwrap()
        .read_raw::<yee::output::Complex>()
        .unwrap();
    s.chunks(4)
        .map(|c| {
            [
                [(c[0].r, c[0].i), (c[1].r, c[1].i)],
                [(c[2].r, c[2].i), (c[3].r, c[3].i)],
            ]
        })
        .collect()
}

/// `[sparameters]` runs one excitation per port and writes S and a Touchstone file:
/// - a straight guide: |S21|^2 within 0.005 of 1 and |S11|^2 below -40 dB over the band (the
///   issue's bounds; measured |S21|^2 - 1 ~ 1e-7, S11 at the mode source's backward leak);
/// - a width step (asymmetric): reciprocal, |S21 - S12| below 1e-4 over the +-4.4 % band (the
///   issue's bound; measured 7e-6 to 1.9e-5 with the sources' profiles solved at three
///   frequencies; with the centre frequency's alone it grows to 2.6e-4 at the band's edge,
///   what the profile's mismatch there launches besides the mode), and passive (|S11|^2 +
///   |S21|^2 <= 1; the abrupt step radiates about 23 %);
/// - the Touchstone file holds the same numbers (S11 S21 S12 S22 per line);
/// - a sweep run again reuses the finished excitations, and one whose excitation file is gone
///   (as after an interruption) runs it again and gets the same S to the bit.
#[test]
fn sparameters_of_a_straight_guide_and_a_reciprocal_width_step() {
    let dir = std::env::temp_dir().join(format!("yee-sparam-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sweep = |name: &str, text: &str| {
        let scene = dir.join(format!("{name}.toml"));
        std::fs::write(&scene, text).unwrap();
        let out = dir.join(format!("{name}.h5"));
        let (code, stdout, err) = yee(&[
            "run",
            scene.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--overwrite",
        ]);
        assert_eq!(code, Some(0), "{name}: {err}");
        (out, format!("{stdout}{err}"))
    };
    let db = |(r, i): (f64, f64)| 10.0 * (r * r + i * i).log10();
    let (straight, _) = sweep("straight", &two_port(true));
    for s in s_matrix(&straight) {
        let t = power(s[1][0]);
        assert!((t - 1.0).abs() < 0.005, "straight |S21|^2 {t}");
        assert!(db(s[0][0]) < -40.0, "straight S11 {:.1} dB", db(s[0][0]));
    }
    let (step, _) = sweep("step", &two_port(false));
    let s = s_matrix(&step);
    for (k, m) in s.iter().enumerate() {
        let gap = (m[1][0].0 - m[0][1].0).hypot(m[1][0].1 - m[0][1].1);
        assert!(gap < 1e-4, "frequency {k}: |S21 - S12| = {gap:e}");
        let passive = power(m[0][0]) + power(m[1][0]);
        assert!(passive <= 1.0 && passive > 0.5, "frequency {k}: {passive}");
    }
    // The Touchstone file: frequency, then S11 S21 S12 S22 as magnitude and angle.
    let touchstone = std::fs::read_to_string(dir.join("step.s2p")).unwrap();
    assert!(touchstone.contains("# Hz S MA R 50"), "{touchstone}");
    let rows: Vec<Vec<f64>> = touchstone
        .lines()
        .filter(|l| !l.starts_with(['!', '#']))
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), s.len());
    for (row, m) in rows.iter().zip(&s) {
        let mag = power(m[1][0]).sqrt();
        assert!((row[3] - mag).abs() < 1e-8 * mag.max(1.0), "{row:?}");
    }
    // Again: both excitations reused. Without the second's file: it runs again, same bits.
    let (_, said) = sweep("step", &two_port(false));
    assert_eq!(said.matches("reused").count(), 2, "{said}");
    std::fs::remove_file(dir.join("step.port-out.h5")).unwrap();
    let (again, said) = sweep("step", &two_port(false));
    assert_eq!(said.matches("reused").count(), 1, "{said}");
    assert!(s_matrix(&again) == s, "a rerun excitation changed S");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad `[sparameters]`: exit 2 naming the key.
#[test]
fn bad_sparameters_are_refused() {
    let dir = std::env::temp_dir().join(format!("yee-sparam-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = two_port(true);
    let cases = [
        (
            good.replace(
                "ports = [\"in\", \"out\"]",
                "ports = [\"in\", \"out\", \"in\"]",
            ),
            "listed twice",
        ),
        (
            good.replace("ports = [\"in\", \"out\"]", "ports = [\"in\", \"drop\"]"),
            "port `drop` needs a mode source and a mode monitor",
        ),
        (
            good.replace("ports = [\"in\", \"out\"]", "ports = [\"in\"]"),
            "every source is a port's",
        ),
        (
            good.replace("ports = [\"in\", \"out\"]", "ports = []"),
            "list at least one port",
        ),
        (
            good.replace("ports = [\"in\", \"out\"]", "port = [\"in\"]"),
            "sparameters",
        ),
    ];
    assert_refused(&dir, &good, &cases, &["check", "SCENE"]);
}

/// `yee check` reports how purely a mode source's one (centre-frequency) profile launches its
/// mode at the band's edges: a unit-power mode couples to itself with 1 (to 1e-12: the
/// normalisation and the coupling use the same quadrature), and the centre's profile puts
/// between 98 % and 100 % of its power into the guide's TE0 at the Gaussian band's edges
/// (+-16 %; measured 99.1 % and 99.5 %: the mode narrows as the frequency rises).
#[test]
fn yee_check_reports_a_mode_sources_purity_over_its_band() {
    let text = slab_guide("x", 1.0).replace("duration = 6.0e-13", "steps = 10");
    let model = common::model(&text);
    let sheet = model
        .sources
        .iter()
        .find_map(|s| s.mode.as_ref().map(|(sheet, _)| sheet.clone()))
        .expect("a mode source");
    let basis = sheet
        .plane
        .basis(&model, sheet.frequency, 1)
        .expect("solves");
    let own = &basis.modes[0];
    let one = yee::modes::coupling(&model, &sheet.plane, own, own);
    assert!((one - 1.0).abs() < 1e-12, "{one}");
    let purity = yee::modes::purity(&model, &sheet).expect("solves");
    for (f, fraction) in purity.edges {
        assert!(
            fraction > 0.98 && fraction <= 1.0 + 1e-12,
            "{f:e} Hz: {fraction}"
        );
    }
    let dir = std::env::temp_dir().join(format!("yee-mode-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("guide.toml");
    std::fs::write(&scene, &text).unwrap();
    let (code, out, err) = yee(&["check", scene.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("mode source `in`: mode 0 (n_eff")
            && out.contains("% of the power into the mode"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Meep's mode-decomposition tutorial (2-D): a linear taper of length `length` um from a 1 um
/// to a 2 um wide guide of eps 12 in air, at lambda = 6.67 um, 0.05 um cells (about 38 per
/// wavelength in the core), f32. A TE0 mode source 2 um behind the taper's input guide's
/// monitor plane; `refl` behind the source sees only what comes back (the source is
/// transparent, and at the one frequency it leaks nothing backwards), `inc` before the taper
/// the incident wave.
fn taper(length: f64) -> String {
    let lx = length + 10.0;
    let f0 = 299_792_458.0 / 6.67e-6;
    let x0 = -length / 2.0;
    let duration = 8e-13 + 2.0 * length * 1e-6 / (299_792_458.0 / 3.5);
    let plane = |x: f64| format!("{{ center = [{x}, 0.0, 0.0], size = [0.0, 7.0, 0.05] }}");
    let monitor = |name: &str, x: f64| {
        format!(
            "[[monitor]]\ntype = \"mode\"\nname = \"{name}\"\nbox = {}\nfrequencies = {{ min = {f0:e}, max = {f0:e}, count = 1 }}\n",
            plane(x)
        )
    };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [{lx}, 8.0, 0.05]
duration = {duration:e}
[boundaries]
default = {{ type = "pml", cells = 20 }}
z_min = {{ type = "periodic" }}
z_max = {{ type = "periodic" }}
[materials]
si = {{ epsilon = 12.0 }}
[[geometry]]
shape = "polygon"
material = "si"
axis = "z"
vertices = [[{a}, -0.5], [{x0}, -0.5], [{x1}, -1.0], [{lx}, -1.0], [{lx}, 1.0], [{x1}, 1.0], [{x0}, 0.5], [{a}, 0.5]]
span = [-10.0, 10.0]
[[source]]
type = "mode"
box = {src}
direction = "+x"
waveform = {{ type = "gaussian", frequency = {f0:e}, bandwidth = {bw:e} }}
{refl}{inc}"#,
        a = -lx,
        x1 = x0 + length,
        src = plane(-lx / 2.0 + 2.0),
        bw = 0.2 * f0,
        refl = monitor("refl", -lx / 2.0 + 1.5),
        inc = monitor("inc", x0 - 1.0),
    )
}

/// The taper of Meep's mode-decomposition tutorial: its reflectance falls as 1/L^2 once the
/// taper is long (L = 8 to 16 um: R(8) / R(16) = 4.56 measured; bound 3 to 6, the envelope's 4
/// with the oscillation the two ends' interfering reflections put on it), and the reflectance
/// from the mode coefficient, |b_0|^2 / |a_inc|^2, equals the flux reflectance (the backward
/// flux through `refl` over the incident mode power) within 2 % (measured 0.7 % and 1.4 %;
/// the rest is radiation the taper sends back, which the flux counts and TE0 does not).
/// Offline at L = 1, 2, 4 um (same scene): R = 3.4e-4, 7.8e-5, 3.9e-5, and the two
/// reflectances differ by 10 %, 7 %, 3.5 % as the short taper's corners radiate more.
#[test]
fn taper_reflectance_falls_as_one_over_length_squared_and_modes_match_flux() {
    let mut reflectance = Vec::new();
    for length in [8.0, 16.0] {
        let run = common::BinaryRun::new(&format!("taper-{length}"), &taper(length));
        let incident = power(amplitudes(&run, "inc", "forward")[0][0]);
        let by_mode = power(amplitudes(&run, "refl", "backward")[0][0]) / incident;
        let by_flux = -run.read("modes/refl/power")[0] / incident;
        eprintln!("L = {length}: R mode {by_mode:e}, flux {by_flux:e}");
        assert!(
            (by_mode / by_flux - 1.0).abs() < 0.02,
            "L = {length}: {by_mode:e} vs {by_flux:e}"
        );
        reflectance.push(by_mode);
    }
    let ratio = reflectance[0] / reflectance[1];
    assert!((3.0..6.0).contains(&ratio), "R(8) / R(16) = {ratio}");
}

/// The issue's 3-D test: a 500 x 220 nm Si strip in SiO2 (coarse 50 nm cells, so about 3.5 s on
/// 2 cores; the check is the source's and monitors' consistency with the solver, not the
/// strip's published n_eff) fed by its TE0 mode (`profiles = 3`), a hybrid mode with both
/// transverse E components. At 1.85, 1.935 and 2.02e14 Hz: the phase advance over 1.5 um
/// gives the solver's n_eff within 1e-4 (measured 3e-6), |S21|^2 is 1 within 0.005 (5e-6),
/// the backward leak below -40 dB (-61 to -71), TM0 below -30 dB (-167).
#[test]
fn a_3d_strip_fed_by_its_te0_mode_carries_it_alone() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/strip_3d_mode.toml"),
    )
    .unwrap();
    let run = common::BinaryRun::new("strip-3d", &text);
    let (a, b) = (
        amplitudes(&run, "a", "forward"),
        amplitudes(&run, "b", "forward"),
    );
    let back = amplitudes(&run, "back", "backward");
    let neff = run.read("modes/a/neff");
    let freq = run.read("modes/a/frequency");
    for (k, &f) in freq.iter().enumerate() {
        let n = neff[2 * k];
        let (ratio, measured) = phase_neff(a[k][0], b[k][0], f, 1.5e-6, n);
        assert!(
            (measured - n).abs() < 1e-4,
            "{f:e}: n_eff {measured} vs {n}"
        );
        assert!(
            (power(ratio) - 1.0).abs() < 0.005,
            "{f:e}: |S21|^2 {}",
            power(ratio)
        );
        let forward = power(a[k][0]);
        let leak = 10.0 * (power(back[k][0]) / forward).log10();
        assert!(leak < -40.0, "{f:e}: backward {leak:.1} dB");
        let other = 10.0 * (power(b[k][1]) / power(b[k][0])).log10();
        assert!(other < -30.0, "{f:e}: TM0 {other:.1} dB");
    }
}

/// A mode plane across PEC: a hollow rectangular waveguide (a = 1.0 mm, b = 0.5 mm, 20 x 10
/// cells) cut in a PEC block, fed by its TE10 mode. The solver holds every E position the PEC
/// covers at zero, as the update does: n_eff at 250 GHz within 2e-3 of the continuum's
/// sqrt(1 - (c / 2a f)^2) = 0.80031 (the grid's dispersion at 20 cells across a; measured
/// 0.8004), and in the run the phase advance gives it within 1e-4 and |S21|^2 is 1 within
/// 0.005 over 230-270 GHz.
#[test]
fn a_metal_waveguide_plane_crosses_pec_and_carries_te10() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/rect_waveguide_mode.toml"),
    )
    .unwrap();
    let model = common::model(&text);
    let plane = yee::modes::Plane::nearest(&model, 0, -1.0e-3).expect("in the grid");
    let found = plane.modes(&model, 2.5e11, 1).expect("modes");
    let cutoff = 299_792_458.0 / 2.0e-3;
    let exact = (1.0 - (cutoff / 2.5e11f64).powi(2)).sqrt();
    assert!(
        (found.neff[0] - exact).abs() < 2e-3,
        "{} vs {exact}",
        found.neff[0]
    );
    let run = common::BinaryRun::new("metal-guide", &text);
    let (a, b) = (
        amplitudes(&run, "a", "forward"),
        amplitudes(&run, "b", "forward"),
    );
    let neff = run.read("modes/a/neff");
    for (k, &f) in run.read("modes/a/frequency").iter().enumerate() {
        let n = neff[2 * k];
        let (ratio, measured) = phase_neff(a[k][0], b[k][0], f, 1.25e-3, n);
        assert!(
            (measured - n).abs() < 1e-4,
            "{f:e}: n_eff {measured} vs {n}"
        );
        assert!(
            (power(ratio) - 1.0).abs() < 0.005,
            "{f:e}: |S21|^2 {}",
            power(ratio)
        );
    }
}

/// The effective area (sum |E|^2 dA)^2 / sum |E|^4 dA: a periodic cross-section of uniform glass
/// carries the plane wave as its first mode, uniform, so its area is the whole plane's (1 x 0.8
/// um, to rounding); the Si strip's TE0 is far more confined (`yee modes` prints 0.149 um^2 at
/// 50 nm cells).
#[test]
fn effective_area_of_a_plane_wave_is_the_whole_plane() {
    let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [0.5, 1.0, 0.8]
steps = 10
[boundaries]
default = { type = "pec" }
y_min = { type = "periodic" }
y_max = { type = "periodic" }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [5.0, 5.0, 5.0]
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
"#;
    let model = common::model(text);
    let plane = yee::modes::Plane::nearest(&model, 0, 0.0).expect("in the grid");
    let found = plane.modes(&model, 1.934e14, 1).expect("modes");
    let area = found.effective_area[0];
    assert!((area / 0.8e-12 - 1.0).abs() < 1e-9, "{area:e}");
    assert!((found.neff[0] - 1.5).abs() < 0.01, "{}", found.neff[0]);
}

/// WR-42 (`scenes/waveguide_wr42.toml`: a = 10.7 mm, cells of a / 40): the TE10 mode the
/// solver finds at 24 GHz has the cutoff f sqrt(1 - n_eff^2) within 0.2 % of c / (2a) =
/// 14.01 GHz (the cross-section's difference operator puts k_c (pi/a)^2 / 24 (pi/40)^2, 2.6e-4,
/// low, and the grid's dispersion along the guide moves n_eff by about as much) and a wave
/// impedance within 1 % of eta0 / sqrt(1 - (fc/f)^2) = 464 ohm; the scene's straight section
/// between two TE10 ports passes it whole: S21 within 0.05 dB of 0 dB and S11 below -30 dB
/// over 20-27 GHz (measured: within 1e-4 dB, S11 below -97 dB).
#[test]
fn wr42_has_its_cutoff_and_wave_impedance_and_a_straight_section_passes_te10() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/waveguide_wr42.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let model = common::model(&text);
    let plane = yee::modes::Plane::nearest(&model, 0, -10.0e-3).expect("in the grid");
    let f = 24.0e9;
    let found = plane.modes(&model, f, 1).expect("modes");
    let cutoff = 299_792_458.0 / (2.0 * 10.7e-3);
    let measured = f * (1.0 - found.neff[0].powi(2)).sqrt();
    assert!(
        (measured / cutoff - 1.0).abs() < 2e-3,
        "cutoff {measured} Hz, want {cutoff}"
    );
    let impedance = yee::model::ETA0 / (1.0 - (cutoff / f).powi(2)).sqrt();
    assert!(
        (found.wave_impedance[0] / impedance - 1.0).abs() < 0.01,
        "wave impedance {} ohm, want {impedance}",
        found.wave_impedance[0]
    );
    let run = common::BinaryRun::new("wr42", &text);
    let s = run
        .file
        .dataset("sparameters/S")
        .unwrap()
        .read_raw::<yee::output::Complex>()
        .unwrap();
    let db = |c: &yee::output::Complex| 10.0 * (c.r * c.r + c.i * c.i).log10();
    for m in s.chunks(4) {
        assert!(db(&m[2]).abs() < 0.05, "S21 {} dB", db(&m[2]));
        assert!(db(&m[0]) < -30.0, "S11 {} dB", db(&m[0]));
    }
}

/// A parallel-plate line (plates 3 mm apart, periodic 4 mm wide, filled with eps_r 2.25): its
/// TEM mode's characteristic impedance from a mode monitor's `voltage` path across the gap,
/// V^2 / P, is eta0 / sqrt(eps_r) h / w = 188.37 ohm to 1e-6 (measured to 1e-9: the line
/// integral and the power are both exact for a uniform field); a path that is not along one of
/// the plane's axes is refused.
#[test]
fn a_voltage_path_gives_a_tem_lines_characteristic_impedance() {
    let text = r#"
[simulation]
length_unit = "mm"
cell_size = 0.5
size = [20.0, 4.0, 3.0]
steps = 20

[boundaries]
x_min = { type = "pml", cells = 8 }
x_max = { type = "pml", cells = 8 }
y_min = { type = "periodic" }
y_max = { type = "periodic" }
z_min = { type = "pec" }
z_max = { type = "pec" }

[materials]
fill = { epsilon = 2.25 }

[[geometry]]
shape = "box"
material = "fill"
center = [0.0, 0.0, 0.0]
size = [30.0, 10.0, 10.0]

[[source]]
type = "mode"
name = "in"
box = { center = [-3.0, 0.0, 0.0], size = [0.0, 4.0, 3.0] }
direction = "+x"
waveform = { type = "gaussian", frequency = 2.0e10, bandwidth = 1.0e10 }

[[monitor]]
type = "mode"
name = "in"
box = { center = [0.0, 0.0, 0.0], size = [0.0, 4.0, 3.0] }
frequencies = { min = 1.0e10, max = 3.0e10, count = 3 }
voltage = { from = [0.0, 1.0, -1.5], to = [0.0, 1.0, 1.5] }
"#;
    let run = common::BinaryRun::new("tem-impedance", text);
    let want = yee::model::ETA0 / 1.5 * 3.0 / 4.0;
    for z in run.read("modes/in/impedance") {
        assert!((z / want - 1.0).abs() < 1e-6, "Z0 {z} ohm, want {want}");
    }
    let dir = std::env::temp_dir().join(format!("yee-voltage-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [(
        text.replace("to = [0.0, 1.0, 1.5]", "to = [0.0, 2.0, 1.5]"),
        "monitor[0].voltage",
    )];
    assert_refused(&dir, text, &cases, &["check", "SCENE"]);
}

/// A coaxial line along x (inner radius 0.5 mm, outer 1.15 mm, eps_r 2.25), both conductors
/// drawn as PEC and staircased on cells of `cell` mm; the mode source at x = -2 mm, a mode
/// monitor `near` at -1 mm with a voltage path from the inner conductor to the outer, and
/// the line's far end `end`: "matched" (the line runs into the PML, with a second monitor
/// at +1.5 mm), "short" (a PEC wall from x = 0) or "open" (the inner conductor stops at 0,
/// the outer goes on: a circular guide whose TE11 cutoff, 51 GHz, is far above the band).
fn coax(cell: f64, end: &str) -> String {
    let inner_end = if end == "open" { 0.0 } else { 5.0 };
    let mut text = format!(
        r#"
[simulation]
length_unit = "mm"
cell_size = {cell}
size = [6.0, 2.6, 2.6]
duration = 4.0e-10
[boundaries]
default = {{ type = "pec" }}
x_min = {{ type = "pml", cells = 10 }}
x_max = {{ type = "pml", cells = 10 }}
[materials]
fill = {{ epsilon = 2.25 }}
metal = {{ pec = true, conformal = false }}
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "cylinder"
material = "fill"
center = [0.0, 0.0, 0.0]
radius = 1.15
height = 10.0
axis = "x"
[[geometry]]
shape = "cylinder"
material = "metal"
center = [{centre}, 0.0, 0.0]
radius = 0.5
height = 10.0
axis = "x"
[[source]]
type = "mode"
name = "in"
box = {{ center = [-2.0, 0.0, 0.0], size = [0.0, 2.6, 2.6] }}
direction = "+x"
waveform = {{ type = "gaussian", frequency = 2.0e10, bandwidth = 2.0e10 }}
[[monitor]]
type = "mode"
name = "near"
box = {{ center = [-1.0, 0.0, 0.0], size = [0.0, 2.6, 2.6] }}
frequencies = {{ min = 1.0e10, max = 3.0e10, count = 5 }}
voltage = {{ from = [0.0, 0.0, 0.5], to = [0.0, 0.0, 1.15] }}
"#,
        centre = inner_end - 5.0
    );
    match end {
        "short" => text.push_str(
            "[[geometry]]\nshape = \"box\"\nmaterial = \"metal\"\ncenter = [2.0, 0.0, 0.0]\n\
             size = [4.0, 10.0, 10.0]\n",
        ),
        "matched" => text.push_str(
            "[[monitor]]\ntype = \"mode\"\nname = \"far\"\n\
             box = { center = [1.5, 0.0, 0.0], size = [0.0, 2.6, 2.6] }\n\
             frequencies = { min = 1.0e10, max = 3.0e10, count = 5 }\n",
        ),
        _ => {}
    }
    text
}

/// The coax's TEM mode, though both conductors are staircased circles (painting tests each
/// Yee position on its own, so an edge can be held by a conductor while an end node is not:
/// the cross-section holds every node a held edge touches, `CrossSection::closed`, without
/// which the mode does not exist on the grid):
/// - its characteristic impedance V^2 / P from the voltage path within 2 % of
///   (60 / sqrt(eps_r)) ln(b / a) = 33.32 ohm on cells of a / 20 (measured 33.05, -0.8 %;
///   -2.3 % on a / 10 and -0.5 % on a / 40: the staircase's radii converge at first order);
/// - its n_eff sqrt(eps_r) within 1e-4 (the 3-D grid's dispersion along x: 1.5000x);
/// - along a matched line (into the PML) the amplitude at two monitors 2.5 mm apart within
///   1e-3 of each other and the backward amplitude below -30 dB (measured -35 dB: the
///   staircased conductors' surface nodes carry a small axial E in the 3-D grid that the
///   cross-section's closed nodes hold at zero, so the grid's wave is the mode to 1.7 %);
/// - a short and an open end (the inner conductor stopping inside the outer, below the
///   guide's cutoff) reflect it whole: |S11| = |b / a| within 0.01 of 1 (measured within 1e-8
///   and 5e-3).
#[test]
fn a_staircased_coax_carries_its_tem_mode_with_its_impedance() {
    let z0 = 60.0 / 1.5 * (1.15f64 / 0.5).ln();
    let solve = coax(0.025, "matched").replace("duration = 4.0e-10", "steps = 2");
    let run = common::BinaryRun::new("coax-z0", &solve);
    for z in run.read("modes/near/impedance") {
        assert!((z / z0 - 1.0).abs() < 0.02, "Z0 {z} ohm, want {z0}");
    }
    for n in run.read("modes/near/neff") {
        assert!((n - 1.5).abs() < 1e-4, "n_eff {n}");
    }
    let run = common::BinaryRun::new("coax-matched", &coax(0.05, "matched"));
    let (near, far) = (
        amplitudes(&run, "near", "forward"),
        amplitudes(&run, "far", "forward"),
    );
    let back = amplitudes(&run, "near", "backward");
    for f in 0..near.len() {
        let (a, b) = (power(near[f][0]), power(far[f][0]));
        assert!((b / a).sqrt() - 1.0 < 1e-3 && 1.0 - (b / a).sqrt() < 1e-3);
        let reflected = 10.0 * (power(back[f][0]) / a).log10();
        assert!(reflected < -30.0, "backward {reflected:.1} dB");
    }
    for end in ["short", "open"] {
        let run = common::BinaryRun::new(&format!("coax-{end}"), &coax(0.05, end));
        let (a, b) = (
            amplitudes(&run, "near", "forward"),
            amplitudes(&run, "near", "backward"),
        );
        for f in 0..a.len() {
            let s11 = (power(b[f][0]) / power(a[f][0])).sqrt();
            assert!((s11 - 1.0).abs() < 0.01, "{end}: |S11| {s11}");
        }
    }
}

/// The coax ([`coax`], cells of a / 10) ended by a lumped load of its characteristic
/// impedance Z0 = (60 / sqrt(eps_r)) ln(b / a) = 33.32 ohm: the inner conductor stops at x = 0
/// and eight resistors of 8 Z0 each (in parallel: Z0) run radially from it to the outer
/// conductor, along +-y and +-z in the planes x = 0 and x = -0.05 mm, the element boxes of
/// `src/model/lumped.rs`. S11 = b / a at the monitor 1 mm before the end below -30 dB over
/// 2-12 GHz (measured -38 dB at 2 GHz rising to -32 dB at 12 GHz: the rods' inductance,
/// which grows with frequency; four rods of 4 Z0 in one plane have twice it, -26.5 dB at
/// 10 GHz). A load is lumped where it is small against the wavelength: 0.65 mm is 1/25 of the
/// guided wavelength at 12 GHz.
#[test]
fn a_coax_ended_by_a_lumped_load_of_its_impedance_reflects_below_minus_30_db() {
    let z0 = 60.0 / 1.5 * (1.15f64 / 0.5).ln();
    let middle = (0.5 + 1.15) / 2.0;
    let mut rods = String::new();
    for x in [0.0, -0.05] {
        for (centre, size, axis) in [
            ([x, middle, 0.0], [0.0, 0.65, 0.0], "y"),
            ([x, -middle, 0.0], [0.0, 0.65, 0.0], "y"),
            ([x, 0.0, middle], [0.0, 0.0, 0.65], "z"),
            ([x, 0.0, -middle], [0.0, 0.0, 0.65], "z"),
        ] {
            rods.push_str(&format!(
                "[[geometry]]\nshape = \"box\"\ncenter = {centre:?}\nsize = {size:?}\n\
                 element = {{ resistance = {}, direction = \"{axis}\" }}\n",
                8.0 * z0
            ));
        }
    }
    let open = coax(0.05, "open");
    let text = open
        .replace("duration = 4.0e-10", "duration = 1.2e-9")
        .replace(
            "frequency = 2.0e10, bandwidth = 2.0e10",
            "frequency = 7.0e9, bandwidth = 1.0e10",
        )
        .replace(
            "frequencies = { min = 1.0e10, max = 3.0e10, count = 5 }",
            "frequencies = { min = 2.0e9, max = 1.2e10, count = 6 }",
        )
        .replace("[[source]]", &format!("{rods}[[source]]"));
    assert!(text.contains("min = 2.0e9") && text.contains("frequency = 7.0e9"));
    let run = common::BinaryRun::new("coax-load", &text);
    let (a, b) = (
        amplitudes(&run, "near", "forward"),
        amplitudes(&run, "near", "backward"),
    );
    for (k, f) in run.read("modes/near/frequency").iter().enumerate() {
        let s11 = 10.0 * (power(b[k][0]) / power(a[k][0])).log10();
        eprintln!("{:.0} GHz: S11 {s11:.1} dB", f / 1e9);
        assert!(s11 < -30.0, "{f:e} Hz: S11 {s11:.1} dB");
    }
}

/// A microstrip along x (a 0.6 mm zero-thickness PEC strip on 0.254 mm of eps_r 3.66 over the
/// ground wall, open above and to the sides into the PML) on cells of 0.3 mm along it and `cy`,
/// `cz` mm across, with a mode source at x = 0.
fn microstrip(cy: f64, cz: f64) -> String {
    r#"
[simulation]
length_unit = "mm"
cell_size = [0.3, CY, CZ]
size = [6.0, 12.0, 4.0]
steps = 2
[boundaries]
default = { type = "pml", cells = 8 }
z_min = { type = "pec" }
[materials]
substrate = { epsilon = 3.66 }
[[geometry]]
shape = "box"
material = "substrate"
center = [0.0, 0.0, -2.0]
size = [100.0, 100.0, 0.508]
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, -1.746]
size = [100.0, 0.6, 0.0]
[[source]]
type = "mode"
name = "line"
box = { center = [0.0, 0.0, -1.0], size = [0.0, 8.0, 2.0] }
direction = "+x"
waveform = { type = "gaussian", frequency = 4.0e9, bandwidth = 3.0e9 }
"#
    .replace("CY", &cy.to_string())
    .replace("CZ", &cz.to_string())
}

/// The microstrip's characteristic impedance (the line of
/// `a_microstrip_plane_has_its_quasi_tem_mode`, a mode monitor with a voltage path from the
/// ground to the strip's centre: Z0 = V^2 / P of the quasi-TEM mode at 1 GHz) on cells across
/// the strip of w / 4, w / 8 and w / 16 (and the substrate h / 4 to h / 16): 43.0, 45.0 and
/// 46.1 ohm. The zero-thickness strip's edge field converges at first order (the successive
/// differences halve: ratio within 1.5-2.5, measured 1.97), and the Richardson limit
/// 2 Z(w / 16) - Z(w / 8) lies within 2 % of Hammerstad and Jensen's 47.86 ohm for w / h = 2.36,
/// eps_r 3.66 (measured 47.1 ohm, -1.6 %; the formula's own accuracy is about 1 %).
#[test]
fn a_microstrip_has_hammerstad_and_jensens_impedance_in_the_limit() {
    let impedance = |cy: f64, cz: f64| {
        let text = microstrip(cy, cz)
            .replace("size = [6.0, 12.0, 4.0]", "size = [8.0, 12.0, 4.0]")
            .replace("center = [0.0, 0.0, -1.0]", "center = [-1.0, 0.0, -1.0]")
            + r#"
[[monitor]]
type = "mode"
name = "line"
box = { center = [0.0, 0.0, -1.0], size = [0.0, 8.0, 2.0] }
frequencies = { min = 1.0e9, max = 1.0e9, count = 1 }
voltage = { from = [0.0, 0.0, -2.0], to = [0.0, 0.0, -1.746] }
"#;
        assert!(text.contains("center = [-1.0, 0.0, -1.0]"));
        let run = common::BinaryRun::new(&format!("msl-z0-{cy}"), &text);
        run.read("modes/line/impedance")[0]
    };
    let z: Vec<f64> = [(0.15, 0.0635), (0.075, 0.03175), (0.0375, 0.015875)]
        .iter()
        .map(|&(cy, cz)| impedance(cy, cz))
        .collect();
    let ratio = (z[1] - z[0]) / (z[2] - z[1]);
    let limit = 2.0 * z[2] - z[1];
    let want = 47.86;
    eprintln!("microstrip Z0 {z:?} ohm: ratio {ratio:.2}, limit {limit:.2} ohm");
    assert!((1.5..2.5).contains(&ratio), "order: ratio {ratio}");
    assert!(
        (limit / want - 1.0).abs() < 0.02,
        "Z0 limit {limit}, want {want}"
    );
}

/// A microstrip (a 0.6 mm zero-thickness PEC strip on 0.254 mm of eps_r 3.66 over the ground
/// wall, open above and to the sides into the PML): the cross-section has its quasi-TEM mode
/// with n_eff within 1 % of Hammerstad and Jensen's
/// sqrt(eps_eff) = 1.694 for w/h = 2.36 (the formula's own accuracy is about 1 %; measured
/// 1.7047 at 1 GHz on this plane, the whole domain's with its PML cells and closed walls, and
/// 1.6950 on an 8 x 2 mm port plane of the same line in a 3-D run). Its impedance converges
/// to the formula's at first order in the cell
/// (`a_microstrip_has_hammerstad_and_jensens_impedance_in_the_limit`).
#[test]
fn a_microstrip_plane_has_its_quasi_tem_mode() {
    let text = &microstrip(0.15, 0.0635);
    let model = common::model(text);
    let plane = yee::modes::Plane::nearest(&model, 0, 0.0).expect("in the grid");
    let (w, h, eps) = (0.6f64, 0.254f64, 3.66f64);
    let eps_eff = (eps + 1.0) / 2.0 + (eps - 1.0) / 2.0 / (1.0 + 12.0 * h / w).sqrt();
    let want = eps_eff.sqrt();
    let found = plane.modes(&model, 1.0e9, 1).expect("modes");
    let neff = found.neff[0];
    assert!(
        (neff / want - 1.0).abs() < 0.01,
        "n_eff {neff}, want {want}"
    );
    // Mostly E_z: the field between strip and ground.
    assert!(
        found.modes[0].v_fraction() > 0.6,
        "{}",
        found.modes[0].v_fraction()
    );
}

/// A stripline: a 1 mm strip of no thickness midway between ground planes 2 mm apart, filled
/// with eps_r 2.2 (the plane's side walls 2.5 mm beyond the strip's edges, where the field has
/// fallen to exp(-pi 2.5 / 2) = 2 % of the strip's). Its TEM mode: n_eff sqrt(eps_r) within
/// 1e-5 (homogeneous fill: only the grid's dispersion along x, 1e-6 here) and the impedance
/// V^2 / P from the voltage path within 2 % of Cohn's exact zero-thickness formula
/// (30 pi / sqrt(eps_r)) K(k) / K(k'), k = sech(pi w / 2b): 67.76 ohm (measured 67.05, -1.05 %:
/// 40 cells across the strip, whose edge singularity the grid rounds off).
#[test]
fn a_stripline_has_cohns_impedance() {
    let text = r#"
[simulation]
length_unit = "mm"
cell_size = 0.025
size = [0.5, 6.0, 2.0]
steps = 2
[boundaries]
default = { type = "pec" }
x_min = { type = "periodic" }
x_max = { type = "periodic" }
[materials]
fill = { epsilon = 2.2 }
[[geometry]]
shape = "box"
material = "fill"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, 0.0]
size = [10.0, 1.0, 0.0]
[[source]]
type = "mode"
name = "in"
box = { center = [0.0, 0.0, 0.0], size = [0.0, 6.0, 2.0] }
direction = "+x"
waveform = { type = "gaussian", frequency = 1.0e10, bandwidth = 5.0e9 }
[[monitor]]
type = "mode"
name = "line"
box = { center = [0.1, 0.0, 0.0], size = [0.0, 6.0, 2.0] }
frequencies = { min = 5.0e9, max = 1.5e10, count = 3 }
voltage = { from = [0.0, 0.0, -1.0], to = [0.0, 0.0, 0.0] }
"#;
    // The complete elliptic integral of the first kind by the arithmetic-geometric mean.
    let ellip_k = |k: f64| {
        let (mut a, mut g) = (1.0f64, (1.0 - k * k).sqrt());
        while (a - g).abs() > 1e-15 {
            (a, g) = (0.5 * (a + g), (a * g).sqrt());
        }
        std::f64::consts::PI / (2.0 * a)
    };
    let (w, b, eps) = (1.0f64, 2.0f64, 2.2f64);
    let k = 1.0 / (std::f64::consts::PI * w / (2.0 * b)).cosh();
    let kp = (1.0 - k * k).sqrt();
    let z0 = 30.0 * std::f64::consts::PI / eps.sqrt() * ellip_k(k) / ellip_k(kp);
    let run = common::BinaryRun::new("stripline", text);
    for z in run.read("modes/line/impedance") {
        assert!((z / z0 - 1.0).abs() < 0.02, "Z0 {z} ohm, Cohn's {z0}");
    }
    for n in run.read("modes/line/neff") {
        assert!((n / eps.sqrt() - 1.0).abs() < 1e-5, "n_eff {n}");
    }
}

/// A round metal waveguide (radius 5 mm in a PEC block, 0.25 mm cells: 20 per radius) along x,
/// fed by its TE11 mode, with mode monitors 5 mm apart; `conformal` false staircases its
/// wall.
fn round_guide(conformal: bool) -> String {
    format!(
        r#"
[simulation]
length_unit = "mm"
cell_size = 0.25
size = [16.0, 11.0, 11.0]
duration = 2.5e-9
[boundaries]
default = {{ type = "pec" }}
x_min = {{ type = "pml", cells = 10 }}
x_max = {{ type = "pml", cells = 10 }}
[materials]
metal = {{ pec = true, conformal = {conformal} }}
air = {{ epsilon = 1.0 }}
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [20.0, 20.0, 20.0]
[[geometry]]
shape = "cylinder"
material = "air"
center = [0.0, 0.0, 0.0]
radius = 5.0
height = 20.0
axis = "x"
[[source]]
type = "mode"
name = "in"
box = {{ center = [-4.0, 0.0, 0.0], size = [0.0, 11.0, 11.0] }}
direction = "+x"
waveform = {{ type = "gaussian", frequency = 2.15e10, bandwidth = 2.0e9 }}
[[monitor]]
type = "mode"
name = "a"
box = {{ center = [-2.0, 0.0, 0.0], size = [0.0, 11.0, 11.0] }}
frequencies = {{ min = 2.0e10, max = 2.2e10, count = 3 }}
[[monitor]]
type = "mode"
name = "b"
box = {{ center = [3.0, 0.0, 0.0], size = [0.0, 11.0, 11.0] }}
frequencies = {{ min = 2.0e10, max = 2.2e10, count = 3 }}
"#
    )
}

/// The mode solver sees a conformal PEC wall as the run does (the Dey-Mittra weights of the
/// cut faces, `CrossSection::cut_by`). A round guide of radius 5 mm at 20 cells per radius:
/// - its TE11 cutoff f sqrt(1 - n_eff^2) at 21 GHz within 0.2 % of 1.8412 c / (2 pi a) =
///   17.570 GHz with the conformal wall (measured 0.06 % low; the geometry issue's bound for a
///   conformal cavity), where the staircased wall puts it more than 2 % low (measured 2.8 %);
/// - in the 3-D run, the phase of the TE11 amplitude between monitors 5 mm apart gives the
///   solver's n_eff within 3e-4 (measured 1.1e-4 to 1.4e-4; with the staircased wall the
///   solve and the 3-D grid disagree by 5e-3, the staircase's axial surface field), and
///   |b / a|^2 within 1e-3 of 1 (measured 2e-5).
#[test]
fn a_round_guide_with_a_conformal_wall_has_its_te11_cutoff_in_the_solve_and_the_run() {
    let f = 21.0e9;
    let cutoff = 1.8412 * 299_792_458.0 / (2.0 * std::f64::consts::PI * 5.0e-3);
    let solved = |conformal: bool| {
        let model = common::model(&round_guide(conformal));
        let plane = yee::modes::Plane::nearest(&model, 0, 0.0).expect("in the grid");
        let found = plane.modes(&model, f, 1).expect("modes");
        f * (1.0 - found.neff[0].powi(2)).sqrt() / cutoff - 1.0
    };
    let (conformal, staircase) = (solved(true), solved(false));
    eprintln!("TE11 cutoff: conformal {conformal:+.2e}, staircase {staircase:+.2e}");
    assert!(
        conformal.abs() < 2e-3,
        "conformal cutoff off by {conformal:e}"
    );
    assert!(staircase < -0.02, "staircased cutoff off by {staircase:e}");
    let run = common::BinaryRun::new("round-guide", &round_guide(true));
    let (a, b) = (
        amplitudes(&run, "a", "forward"),
        amplitudes(&run, "b", "forward"),
    );
    let neff = run.read("modes/a/neff");
    for (k, &f) in run.read("modes/a/frequency").iter().enumerate() {
        let (ratio, measured) = phase_neff(a[k][0], b[k][0], f, 5.0e-3, neff[k]);
        assert!(
            (measured - neff[k]).abs() < 3e-4,
            "{f:e}: n_eff {measured} in the run, {} solved",
            neff[k]
        );
        assert!(
            (power(ratio) - 1.0).abs() < 1e-3,
            "|b/a|^2 {}",
            power(ratio)
        );
    }
}

/// A 2-D gap plasmon guide along x: 97.5 nm of glass between two half-spaces of a Drude
/// metal (silver-like, eps -123 + 0.5i at 1550 nm), its faces a quarter of a 5 nm cell off the
/// grid's nodes, fed by a mode source. The E field is across the gap, normal to both faces,
/// where the smoothing gives each face's cells the harmonic mean of metal and glass (series
/// mixtures; `modes::tests` checks the plane's n_eff against the exact relation). The run
/// must carry the solved mode as the solver says: between monitors 1 um apart, the phase
/// advance gives the solved n_eff within 1e-4 and |b / a|^2 the solved loss within 1 %
/// (measured 6e-6 and 0.003 %: the update's Drude term equals the solve's eps(w) to order
/// (w dt)^2, 1e-4 here).
#[test]
fn a_gap_plasmon_between_smoothed_metal_faces_runs_as_solved() {
    let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.005
size = [2.0, 0.6, 0.005]
duration = 2.0e-13
[boundaries]
default = { type = "pml", cells = 12 }
y_min = { type = "pec" }
y_max = { type = "pec" }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
metal = { epsilon = 1.0, drude = [{ frequency = 2.18e15, damping = 4.35e12 }] }
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [20.0, 20.0, 20.0]
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [20.0, 0.0975, 20.0]
[[source]]
type = "mode"
name = "in"
box = { center = [-0.8, 0.0, 0.0], size = [0.0, 0.6, 0.005] }
direction = "+x"
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
[[monitor]]
type = "mode"
name = "a"
box = { center = [-0.5, 0.0, 0.0], size = [0.0, 0.6, 0.005] }
modes = 1
frequencies = { min = 1.85e14, max = 2.02e14, count = 3 }
[[monitor]]
type = "mode"
name = "b"
box = { center = [0.5, 0.0, 0.0], size = [0.0, 0.6, 0.005] }
modes = 1
frequencies = { min = 1.85e14, max = 2.02e14, count = 3 }
"#;
    let run = common::BinaryRun::new("mode-gap-plasmon", text);
    let (a, b) = (
        amplitudes(&run, "a", "forward"),
        amplitudes(&run, "b", "forward"),
    );
    let (neff, loss) = (run.read("modes/a/neff"), run.read("modes/a/loss"));
    for (k, &f) in run.read("modes/a/frequency").iter().enumerate() {
        let (n, db_per_m) = (neff[k], loss[k]);
        let (ratio, measured) = phase_neff(a[k][0], b[k][0], f, 1.0e-6, n);
        let got = 10.0 * power(ratio).log10();
        let want = -db_per_m * 1.0e-6;
        eprintln!("{f:.4e} Hz: n_eff {measured:.6} vs solved {n:.6}; {got:.5} dB over 1 um vs {want:.5} dB");
        assert!(n > 1.75 && n < 1.9, "the gap plasmon: {n}");
        assert!((measured - n).abs() < 1e-4, "n_eff {measured} vs {n}");
        assert!((got / want - 1.0).abs() < 1e-2, "{got} dB vs {want} dB");
    }
}
