//! The plan's mesh report: cells and cell sizes per axis, what a graded mesh costs against
//! uniform grids at its background and finest cells, and, when a uniform grid does not fit,
//! the refinement boxes around the objects that need the fine cell, with the cells and bytes
//! they give (equal to the plan of a model of that size).

mod common;

use common::model;
use yee::model::mesh::{axis_lines, Zone};
use yee::model::Model;
use yee::plan::{self, parse_gpus, Hardware, PlanBackend, PlanOptions};

fn on(gpus: &str, host: u64) -> Hardware {
    Hardware::new(parse_gpus(gpus).unwrap(), host, 16)
}

/// A vacuum box of `size` um at cell `cell` um with a 10-cell PML, one dipole at 300 THz, and
/// `geometry` (TOML `[[geometry]]` entries and their materials).
fn scene(name: &str, cell: &str, size: [f64; 3], extra: &str) -> String {
    format!(
        r#"
[simulation]
name = "{name}"
length_unit = "um"
cell_size = {cell}
size = [{}, {}, {}]
steps = 1000
precision = "f32"
[boundaries]
default = {{ type = "pml", cells = 10 }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }}
{extra}
"#,
        size[0], size[1], size[2]
    )
}

/// A high-index sphere (eps = 12, radius 0.5 um) at the centre.
const SPHERE: &str = r#"
[materials]
si = { epsilon = 12.0 }
[[geometry]]
shape = "sphere"
material = "si"
center = [0.0, 0.0, 0.0]
radius = 0.5
"#;

/// The highest source frequency of [`scene`]'s dipole: f0 + 3.7 sigma_f with sigma_f the
/// bandwidth / 2.3548 (the waveform's own rule, `Waveform::max_frequency`).
fn f_max() -> f64 {
    3.0e14 + 3.7 * 1.5e14 / 2.3548
}

#[test]
fn a_uniform_grid_reports_one_cell_size_and_no_refinement() {
    let m = model(&scene("u", "[0.02, 0.025, 0.02]", [1.0, 1.0, 1.0], SPHERE));
    let p = plan::plan(&m, &on("1x80GB", 64 << 30), &PlanOptions::default());
    assert!(p.fits);
    let mesh = &p.mesh;
    assert!(mesh.uniform);
    for a in 0..3 {
        assert_eq!(mesh.axes[a].cells, p.grid[a]);
        assert_eq!(mesh.axes[a].min_cell, m.grid.cell[a]);
        assert_eq!(mesh.axes[a].max_cell, m.grid.cell[a]);
        assert!(!mesh.axes[a].graded);
    }
    assert_eq!(mesh.background_cells, p.cells);
    assert_eq!(mesh.refinement_factor, 1.0);
    assert!(mesh.finest_uniform.is_none() && mesh.refinement.is_none());
    // The text report of a uniform grid has no mesh lines; the JSON always has the object.
    assert!(!p.render().contains("mesh      graded"));
    let v: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    assert_eq!(v["mesh"]["uniform"], serde_json::json!(true));
    assert_eq!(v["mesh"]["axes"][1]["cells"], serde_json::json!(40));
    assert!(v["mesh"]["refinement"].is_null());
}

/// The same scene with its x axis graded by hand: a zone of 5 nm cells over the sphere in a
/// 20 nm background. The report gives the cells and the extreme cells per axis, the cost
/// against a uniform grid at the background cell, and a uniform grid at the finest cell with
/// the bytes the plan of such a model gives.
#[test]
fn a_graded_grid_reports_its_cost_against_uniform_grids() {
    let mut m = model(&scene("g", "0.02", [2.0, 1.0, 1.0], SPHERE));
    let g = &m.grid;
    let (x0, x1) = (g.origin[0], g.origin[0] + g.size()[0]);
    let zone = [Zone {
        lo: -0.5e-6,
        hi: 0.5e-6,
        cell: 5e-9,
    }];
    let lines = axis_lines(x0, x1, 20e-9, &zone, 1.25, &[]);
    m.grid.shape[0] = lines.len() - 1;
    m.grid.lines[0] = Some(lines.clone());
    let hw = on("1x80GB", 64 << 30);
    let p = plan::plan(&m, &hw, &PlanOptions::default());
    let mesh = &p.mesh;
    assert!(!mesh.uniform);
    let x = mesh.axes[0];
    assert!(x.graded && !mesh.axes[1].graded);
    assert_eq!(x.cells, lines.len() - 1);
    assert!((x.min_cell - 5e-9).abs() < 1e-18, "{}", x.min_cell);
    // The largest cell is the background cell, or a little under it where a stretch is not
    // a whole number of background cells (the fewest cells of at most 20 nm).
    let largest = lines.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert_eq!(x.max_cell, largest);
    assert!(
        x.max_cell <= 20e-9 * (1.0 + 1e-12) && x.max_cell > 19e-9,
        "{}",
        x.max_cell
    );
    // A uniform grid at the background cell: 100 x 50 x 50.
    assert_eq!(mesh.background_cells, 100 * 50 * 50);
    let factor = p.cells as f64 / (100.0 * 50.0 * 50.0);
    assert_eq!(mesh.refinement_factor, factor);
    // 200 fine cells plus two transitions and the background: between the two uniform grids.
    assert!(factor > 1.5 && factor < 4.0, "{factor}");
    // A uniform grid at the finest cell: 400 x 200 x 200 at 5 nm (y and z are uniform at
    // 20 nm, so their finest cell is 20 nm: 400 x 50 x 50).
    let f = mesh.finest_uniform.as_ref().unwrap();
    assert_eq!(f.shape, [400, 50, 50]);
    assert_eq!(f.cells, 400 * 50 * 50);
    assert!(f.fits);
    let fine = model(&scene("f", "[0.005, 0.02, 0.02]", [2.0, 1.0, 1.0], SPHERE));
    let pf = plan::plan(&fine, &hw, &PlanOptions::default());
    assert_eq!(pf.grid, f.shape);
    assert_eq!(f.bytes, pf.bytes.total, "the plan of a uniform fine model");
    let text = p.render();
    assert!(
        text.contains(&format!(
            "mesh      graded: x {} cells of 5 nm to 19.",
            x.cells
        )) && text.contains(" nm, y 50 cells of 20 nm, z 50 cells of 20 nm\n"),
        "{text}"
    );
    assert!(text.contains("a uniform grid at the finest cell: 400 x 50 x 50 = 1,000,000 cells"));
}

/// A 10 um domain at 5 nm (8e9 cells, 192 GB of fields) does not fit one 80 GB GPU. Only the
/// eps = 12 sphere needs the 5 nm cell: the plan suggests one refinement box around it at
/// 5 nm in a background of 5 nm * sqrt(12) (vacuum then has as many cells per wavelength as
/// the sphere has now), which gives a few percent of the cells and fits.
#[test]
fn a_grid_that_does_not_fit_gets_refinement_boxes_around_the_dense_object() {
    let m = model(&scene("big", "0.005", [10.0, 10.0, 10.0], SPHERE));
    assert_eq!(m.grid.cells(), 8_000_000_000);
    let hw = on("1x80GB", 64 << 30);
    let p = plan::plan(&m, &hw, &PlanOptions::default());
    assert!(!p.fits);
    let r = p.mesh.refinement.as_ref().expect("a refinement suggestion");
    let n = 12f64.sqrt();
    for a in 0..3 {
        assert!((r.background_cell[a] - 5e-9 * n).abs() < 1e-18);
    }
    // 5 nm in a medium of index n at the highest frequency: lambda / (n 5 nm) cells.
    let per = 299_792_458.0 / (f_max() * n * 5e-9);
    assert!((r.cells_per_wavelength - per).abs() < 1e-9 * per);
    assert_eq!(r.boxes.len(), 1);
    let b = &r.boxes[0];
    assert_eq!(b.object, 0);
    for a in 0..3 {
        assert!(b.center[a].abs() < 1e-18 && (b.size[a] - 1e-6).abs() < 1e-18);
        assert!((b.cell_size[a] - 5e-9).abs() < 1e-18);
    }
    // Per axis: 200 cells across the sphere, then on each side the transition 5 nm * 1.25^k
    // up to the background (k = 1..K, K = floor(ln n / ln 1.25) = 5, over
    // 5 nm (1.25^6 - 1.25) / 0.25), then background cells over the rest of the 4.5 um.
    let k = (n.ln() / 1.25f64.ln()).floor();
    let ramp = 5e-9 * (1.25f64.powf(k + 1.0) - 1.25) / 0.25;
    let closed = 200.0 + 2.0 * (k + (4.5e-6 - ramp) / (5e-9 * n));
    for a in 0..3 {
        let cells = r.grid.shape[a] as f64;
        assert!(
            (cells - closed).abs() <= 2.0,
            "axis {a}: {cells} vs {closed}"
        );
    }
    assert_eq!(
        r.grid.cells,
        r.grid.shape.iter().map(|&c| c as u64).product::<u64>()
    );
    assert!(r.grid.cells * 20 < m.grid.cells(), "{}", r.grid.cells);
    assert!(r.grid.fits && r.grid.backend == PlanBackend::Cuda && r.grid.gpus == 1);
    // Its bytes are the plan of a model of that shape (same PML, source and materials).
    let [nx, ny, nz] = r.grid.shape;
    let same = model(&scene(
        "same",
        "0.01",
        [nx as f64 * 0.01, ny as f64 * 0.01, nz as f64 * 0.01],
        SPHERE,
    ));
    assert_eq!(same.grid.shape, r.grid.shape);
    let ps = plan::plan(&same, &hw, &PlanOptions::default());
    assert_eq!(r.grid.bytes, ps.bytes.total);
    // The suggestion says so in one sentence, as a scene snippet.
    let s = p
        .suggestions
        .iter()
        .find(|s| s.starts_with("Local refinement"))
        .unwrap_or_else(|| panic!("{:?}", p.suggestions));
    assert!(s.ends_with('.') && !s[..s.len() - 1].contains(". "), "{s}");
    assert!(
        s.contains("1 [[refine]] box around")
            && s.contains("box = { center = [0, 0, 0], size = [1, 1, 1] }, cell_size = 0.005")
            && s.contains(&format!("{nx} x {ny} x {nz}"))
            && s.contains("fits on the 80GB"),
        "{s}"
    );
    let v: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    let j = &v["mesh"]["refinement"];
    assert_eq!(j["boxes"][0]["object"], serde_json::json!(0));
    assert_eq!(j["grid"]["cells"].as_u64(), Some(r.grid.cells));
    assert_eq!(j["grid"]["fits"], serde_json::json!(true));
}

/// Without a material denser than vacuum nothing needs the fine cell: no refinement
/// suggestion (the published vacuum example keeps its other suggestions).
#[test]
fn vacuum_scenes_get_no_refinement_suggestion() {
    let (m, _): (Model, _) = yee::scene::load(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/plan_10um_5nm.toml"),
    )
    .unwrap();
    let p = plan::plan(&m, &on("1x80GB", 64 << 30), &PlanOptions::default());
    assert!(!p.fits && !p.suggestions.is_empty());
    assert!(p.mesh.refinement.is_none());
    assert!(!p.suggestions.iter().any(|s| s.contains("refine")));
}

/// `yee plan --json` carries the mesh object and the refinement suggestion, and the text
/// report lists the suggestion under "what would fit".
#[test]
fn the_command_line_reports_the_mesh() {
    let dir = std::env::temp_dir().join(format!("yee-mesh-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.toml");
    std::fs::write(&path, scene("big", "0.005", [10.0, 10.0, 10.0], SPHERE)).unwrap();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
            .args([
                "plan",
                path.to_str().unwrap(),
                "--gpus",
                "1x80GB",
                "--host-memory",
                "64GiB",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&run(&["--json"])).unwrap();
    let mesh = &v["mesh"];
    assert_eq!(mesh["uniform"], serde_json::json!(true));
    for a in 0..3 {
        assert_eq!(mesh["axes"][a]["cells"], serde_json::json!(2000));
        assert!(mesh["axes"][a]["min_cell"].is_f64() && mesh["axes"][a]["max_cell"].is_f64());
    }
    assert_eq!(
        mesh["background_cells"],
        serde_json::json!(8_000_000_000u64)
    );
    let r = &mesh["refinement"];
    assert!(r["grid"]["cells"].as_u64().unwrap() < 8_000_000_000 / 20);
    assert_eq!(r["boxes"].as_array().unwrap().len(), 1);
    assert!(r["background_cell"].as_array().unwrap().len() == 3);
    let text = run(&[]);
    let fit = text.split("what would fit").nth(1).expect("suggestions");
    assert!(
        fit.contains("  - Local refinement instead of the uniform grid"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
