//! Conformal PEC (Dey-Mittra cut faces, `src/model/conformal.rs`): a cylindrical cavity's
//! TM010 resonance against the analytic value (the staircase for contrast), long runs that
//! stay bounded at the default and the largest time steps, the default time step's reduction
//! and its report, and the pass's bit-identity over slabs and sweeps.

mod common;

use common::{max_abs, model, peak_frequency, run_cpu, run_ranges_mode};
use yee::backend::StepMode;
use yee::decomp::split_even;
use yee::model::C0;

/// The first zero of J0: TM010 of a cylinder of radius a resonates at c j01 / (2 pi a).
const J01: f64 = 2.404_825_557_695_773;

/// A PEC cylinder cavity, radius 10 mm on 1 mm cells (10 cells per radius), axis along z,
/// its caps the domain's PEC faces 10 mm apart, drawn as a vacuum cylinder cut out of a PEC
/// block (`metal`, conformal unless `conformal` is false) with its axis at `center`, rung by
/// a short Ez pulse off the axis. `courant` None leaves the default.
fn cavity(conformal: bool, steps: usize, courant: Option<f64>, center: [f64; 2]) -> String {
    let courant = courant.map_or(String::new(), |c| format!("courant = {c}"));
    format!(
        r#"
[simulation]
length_unit = "mm"
cell_size = 1.0
size = [24.0, 24.0, 10.0]
steps = {steps}
precision = "f64"
{courant}
[boundaries]
default = {{ type = "pec" }}
[materials]
metal = {{ pec = true, conformal = {conformal} }}
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [30.0, 30.0, 30.0]
[[geometry]]
shape = "cylinder"
material = "vacuum"
center = [{cx}, {cy}, 0.0]
radius = 10.0
height = 20.0
axis = [0.0, 0.0, 1.0]
[[source]]
type = "dipole"
component = "Ez"
position = [{sx}, {sy}, 0.3]
waveform = {{ type = "gaussian", frequency = 1.15e10, bandwidth = 1.0e10 }}
[[monitor]]
type = "probe"
name = "p"
position = [{px}, {py}, -0.2]
components = ["Ez", "Ex"]
"#,
        cx = center[0],
        cy = center[1],
        sx = center[0] + 1.3,
        sy = center[1] + 0.7,
        px = center[0] - 0.6,
        py = center[1] + 0.4,
    )
}

/// The TM010 frequency `cavity` rings at, from the probe's Ez after the pulse, relative to
/// the analytic value: f / f0 - 1.
fn tm010_error(text: &str) -> f64 {
    let f0 = C0 * J01 / (2.0 * std::f64::consts::PI * 10e-3);
    let m = model(text);
    let (series, _) = run_cpu::<f64>(&m, 2);
    let f = peak_frequency(&series[0][500..], m.grid.dt, f0 * 0.9, f0 * 1.1);
    f / f0 - 1.0
}

/// TM010 within 0.2 % of the analytic value at 10 cells per radius (the issue's bound), with
/// the axis off the grid and on a grid node (where 12 nodes a plane lie exactly on the
/// surface: their E is held, as a conductor's surface holds it). The grid's own dispersion
/// at this resolution is -0.11 % (a rectangular cavity with walls off the grid, and this one
/// at courant 0.15 where no face needs the stability rule, both measure it), so the bound
/// leaves the surface about 0.1 %. The staircase (`conformal = false`) puts the surface up to
/// half a cell out: measured -3.8 %; asserted beyond 3 %.
#[test]
fn a_cylinder_cavity_resonates_within_0_2_percent_of_tm010() {
    for center in [[0.37, 0.21], [0.0, 0.0]] {
        let err = tm010_error(&cavity(true, 6000, None, center));
        eprintln!("conformal, axis at {center:?}: TM010 {:+.4} %", 100.0 * err);
        assert!(
            err.abs() < 2e-3,
            "axis at {center:?}: {:+.4} %",
            100.0 * err
        );
    }
    let err = tm010_error(&cavity(false, 6000, None, [0.37, 0.21]));
    eprintln!("staircase: TM010 {:+.4} %", 100.0 * err);
    assert!(err.abs() > 0.03, "staircase {:+.4} %", 100.0 * err);
}

/// The default time step is reduced to courant 0.7 for the surfaces (the scene gives none) and
/// the check says so; a scene that gives `courant` keeps it; the staircase and a PEC box on
/// grid planes (no cut face) keep 0.99.
#[test]
fn the_default_time_step_is_reduced_only_for_cut_surfaces() {
    let courant = |m: &yee::model::Model| {
        m.grid.dt / yee::model::Grid::courant_limit_of(m.grid.min_cell(), m.flat_axes())
    };
    let reduced = model(&cavity(true, 10, None, [0.37, 0.21]));
    assert!(reduced.conformal_reduced);
    assert!((courant(&reduced) - 0.7).abs() < 1e-12);
    let summary = reduced.conformal_summary().expect("cut faces");
    assert!(summary.reduced && summary.cut_faces > 500, "{summary:?}");
    assert!(
        summary.line().contains("reduced from courant 0.99"),
        "{}",
        summary.line()
    );
    // The second build reuses the first's cuts: the same faces as cutting afresh at 0.7.
    let fresh = model(&cavity(true, 10, Some(0.7), [0.37, 0.21]));
    assert_eq!(*reduced.conformal(), *fresh.conformal());
    let given = model(&cavity(true, 10, Some(0.9), [0.37, 0.21]));
    assert!(!given.conformal_reduced);
    assert!((courant(&given) - 0.9).abs() < 1e-12);
    assert!(given.conformal_summary().is_some_and(|s| !s.reduced));
    let staircase = model(&cavity(false, 10, None, [0.37, 0.21]));
    assert!(staircase.conformal_summary().is_none());
    assert!((courant(&staircase) - 0.99).abs() < 1e-12);
    let on_grid = cavity(true, 10, None, [0.0, 0.0]).replace(
        "shape = \"cylinder\"\nmaterial = \"vacuum\"",
        "shape = \"box\"\nsize = [16.0, 12.0, 20.0]\nmaterial = \"vacuum\"",
    );
    let on_grid =
        model(&on_grid.replace("radius = 10.0\nheight = 20.0\naxis = [0.0, 0.0, 1.0]\n", ""));
    assert!(
        on_grid.conformal_summary().is_none(),
        "a box on grid planes cuts no face"
    );
    assert!((courant(&on_grid) - 0.99).abs() < 1e-12);
}

/// A vacuum sphere of radius 8 mm cut from PEC on 1 mm cells, its centre at `center`.
fn sphere_cavity(steps: usize, courant: Option<f64>, center: [f64; 3]) -> String {
    let courant = courant.map_or(String::new(), |c| format!("courant = {c}"));
    format!(
        r#"
[simulation]
length_unit = "mm"
cell_size = 1.0
size = [20.0, 20.0, 20.0]
steps = {steps}
precision = "f64"
{courant}
[boundaries]
default = {{ type = "pec" }}
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, 0.0]
size = [30.0, 30.0, 30.0]
[[geometry]]
shape = "sphere"
material = "vacuum"
center = [{cx}, {cy}, {cz}]
radius = 8.0
[[source]]
type = "dipole"
component = "Ez"
position = [{sx}, {sy}, {sz}]
waveform = {{ type = "gaussian", frequency = 1.6e10, bandwidth = 1.5e10 }}
[[monitor]]
type = "probe"
name = "p"
position = [{px}, {py}, {pz}]
components = ["Ez", "Ex"]
"#,
        cx = center[0],
        cy = center[1],
        cz = center[2],
        sx = center[0] + 1.3,
        sy = center[1] + 0.7,
        sz = center[2] + 2.1,
        px = center[0] - 3.6,
        py = center[1] + 2.4,
        pz = center[2] - 1.2,
    )
}

/// The stability rule holds: a lossless sphere cavity (every cut-face shape a sphere makes)
/// rung once and run for 20,000 steps keeps its amplitude, at the default time step and at
/// courant 0.99 (where the rule closes and enlarges the most), with its centre on a node and
/// off it. An unstable face grows exponentially (by orders of magnitude within a few
/// thousand steps); the modes' beating moves the late window's peak by tens of percent, so
/// the bound is a factor 2.
#[test]
fn sphere_cavities_stay_bounded_over_long_runs() {
    for courant in [None, Some(0.99)] {
        for center in [[0.0, 0.0, 0.0], [0.37, 0.21, 0.13]] {
            let m = model(&sphere_cavity(20_000, courant, center));
            let c = m.conformal();
            assert!(c.face_count() > 1000);
            let (series, _) = run_cpu::<f64>(&m, 2);
            let n = series[0].len();
            let window =
                |a: usize, b: usize| max_abs(&series[0][a..b]).max(max_abs(&series[1][a..b]));
            let (early, late) = (window(2000, 4000), window(n - 2000, n));
            eprintln!(
                "courant {courant:?}, centre {center:?}: {} faces, {} closed, {} enlarged: late / early {:.3}",
                c.face_count(),
                c.closed_count(),
                c.enlarged_count(),
                late / early
            );
            assert!(
                late.is_finite() && late < 2.0 * early,
                "late {late:e} early {early:e}"
            );
        }
    }
}

/// The conformal pass gives the same bits on 1 and 3 slabs and in the fused and two-pass
/// sweeps (each face reads only E and writes only its H), in f32.
#[test]
fn cut_faces_are_bit_identical_over_slabs_and_sweeps() {
    let text = cavity(true, 300, None, [0.37, 0.21]).replace("\"f64\"", "\"f32\"");
    let m = model(&text);
    assert!(m.conformal().face_count() > 0);
    let nx = m.grid.shape[0];
    let (one, fields_one) = run_ranges_mode::<f32>(&m, &split_even(nx, 1), StepMode::TwoPass);
    for (slabs, mode) in [
        (3, StepMode::TwoPass),
        (1, StepMode::Fused),
        (3, StepMode::Fused),
    ] {
        let (series, fields) = run_ranges_mode::<f32>(&m, &split_even(nx, slabs), mode);
        assert_eq!(series, one, "{slabs} slabs, {mode:?}");
        assert_eq!(fields, fields_one, "{slabs} slabs, {mode:?}");
    }
}

/// `conformal` on a material that is neither a PEC nor has poles is refused with its key.
#[test]
fn conformal_on_a_dielectric_is_refused() {
    let text = cavity(true, 10, None, [0.0, 0.0]).replace(
        "metal = { pec = true, conformal = true }",
        "metal = { epsilon = 2.0, conformal = false }",
    );
    let e = yee::scene::load_str(&text, "c.toml").expect_err("refused");
    let said = e.to_string();
    assert!(
        said.contains("materials.metal.conformal")
            && said.contains("applies to PEC materials (`pec = true`) and to materials with poles"),
        "{said}"
    );
}

/// `yee check` and `yee plan` (text and JSON) say what the surfaces did to the time step.
#[test]
fn check_and_plan_report_the_surfaces() {
    let dir = std::env::temp_dir().join(format!("yee-conformal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("cavity.toml");
    std::fs::write(&scene, cavity(true, 100, None, [0.37, 0.21])).unwrap();
    let yee = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let s = scene.to_str().unwrap();
    let check = yee(&["check", s]);
    assert!(
        check.contains("conformal PEC:") && check.contains("reduced from courant 0.99"),
        "{check}"
    );
    let plan = yee(&["plan", s]);
    assert!(plan.contains("surfaces  conformal PEC:"), "{plan}");
    let json: serde_json::Value = serde_json::from_str(yee(&["plan", s, "--json"]).trim()).unwrap();
    let c = &json["conformal"];
    assert_eq!(c["reduced"], true);
    assert!((c["courant"].as_f64().unwrap() - 0.7).abs() < 1e-12);
    assert!(c["cut_faces"].as_u64().unwrap() > 500 && c["stiff"] == true && c["exact"] == true);
    assert!(c["closed_edges"].as_u64().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}
