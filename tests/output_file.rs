//! The HDF5 result read back: layout, attributes, staggered origins and values; and a run
//! interrupted with SIGINT leaves a valid file holding everything up to the interrupt.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use yee::model::Component;
use yee::real::Real;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-output-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scene(steps: usize, n: usize) -> String {
    format!(
        r#"
[simulation]
name = "roundtrip"
length_unit = "um"
cell_size = [0.05, 0.04, 0.05]
size = [{x}, 1.2, 1.0]
steps = {steps}
precision = "f32"
[boundaries]
default = {{ type = "pml", cells = 5 }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [0.2, 0.1, 0.0]
components = ["Ez", "Hy"]
[[monitor]]
type = "probe"
name = "q"
position = [0.21, 0.13, 0.02]
components = ["Ex"]
interpolate = false
[[monitor]]
type = "snapshot"
name = "plane"
components = ["Ez", "Hx"]
plane = {{ z = 0.0 }}
every = 10
[[monitor]]
type = "snapshot"
name = "box"
components = ["Ex"]
box = {{ center = [0.0, 0.0, 0.0], size = [0.4, 0.4, 0.4] }}
every = 25
stride = 2
"#,
        x = n as f64 * 0.05
    )
}

fn attr_f64s(loc: &hdf5::Location, name: &str) -> Vec<f64> {
    loc.attr(name).unwrap().read_raw::<f64>().unwrap()
}

#[test]
fn hdf5_layout_attributes_staggering_and_values() {
    let dir = tmpdir("roundtrip");
    let text = scene(60, 24);
    std::fs::write(dir.join("s.toml"), &text).unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args([
            "run",
            "s.toml",
            "--quiet",
            "--slabs",
            "3",
            "--backend",
            "cpu",
        ])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(st.success());
    let path = dir.join("roundtrip.h5");
    assert!(
        dir.join("roundtrip.xmf").exists(),
        "the XDMF sidecar is written next to the file"
    );
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(&path)
        .unwrap();
    let shape = f.attr("shape").unwrap().read_raw::<u64>().unwrap();
    assert_eq!(shape, vec![24, 30, 20]);
    let cell = attr_f64s(&f, "cell_size");
    assert!((cell[1] - 0.04e-6).abs() < 1e-18);
    let origin = attr_f64s(&f, "origin");
    assert!((origin[0] + 0.6e-6).abs() < 1e-18 && (origin[1] + 0.6e-6).abs() < 1e-18);
    assert!(f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    assert_eq!(f.attr("steps").unwrap().read_scalar::<u64>().unwrap(), 60);
    let precision: hdf5::types::VarLenUnicode = f.attr("precision").unwrap().read_scalar().unwrap();
    assert_eq!(precision.as_str(), "f32");
    let dt = f.attr("dt").unwrap().read_scalar::<f64>().unwrap();

    // Probes: one value per step; time = (n + 1) dt; H half a step earlier.
    let ez = f.dataset("probes/p/Ez").unwrap().read_raw::<f32>().unwrap();
    assert_eq!(ez.len(), 60);
    let t = f
        .dataset("probes/p/time")
        .unwrap()
        .read_raw::<f64>()
        .unwrap();
    assert!((t[0] - dt).abs() < 1e-30 && (t[59] - 60.0 * dt).abs() < 1e-25);
    // An interpolating probe's value holds at the requested point; a nearest-point probe's
    // at its grid point, with the component's staggering.
    let p_ez = f.dataset("probes/p/Ez").unwrap();
    assert_eq!(attr_f64s(&p_ez, "position"), vec![0.2e-6, 0.1e-6, 0.0]);
    let q = f.dataset("probes/q/Ex").unwrap();
    let qi = q.attr("index").unwrap().read_raw::<i64>().unwrap();
    let qp = attr_f64s(&q, "position");
    for a in 0..3 {
        let stagger = if a == 0 { 0.5 } else { 0.0 };
        assert!((qp[a] - (origin[a] + (qi[a] as f64 + stagger) * cell[a])).abs() < 1e-18);
    }
    let interp: hdf5::types::VarLenUnicode = f
        .group("probes/q")
        .unwrap()
        .attr("interpolation")
        .unwrap()
        .read_scalar()
        .unwrap();
    assert_eq!(interp.as_str(), "nearest");
    let hy = f.dataset("probes/p/Hy").unwrap();
    assert_eq!(
        hy.attr("time_offset")
            .unwrap()
            .read_scalar::<f64>()
            .unwrap(),
        -0.5 * dt
    );

    // Plane snapshot: [6, nx, ny, 1]; each component's origin carries its own staggering.
    let snap = f.dataset("snapshots/plane/Ez").unwrap();
    assert_eq!(snap.shape(), vec![6, 24, 30, 1]);
    let o_ez = attr_f64s(&snap, "origin");
    let k_ez = snap.attr("index_start").unwrap().read_raw::<i64>().unwrap()[2] as f64;
    assert!(
        (o_ez[2] - (origin[2] + (k_ez + 0.5) * cell[2])).abs() < 1e-18,
        "Ez sits half a cell up in z"
    );
    assert!(
        (o_ez[0] - origin[0]).abs() < 1e-18,
        "Ez is on whole x nodes"
    );
    let hx = f.dataset("snapshots/plane/Hx").unwrap();
    let o_hx = attr_f64s(&hx, "origin");
    assert!(
        (o_hx[1] - (origin[1] + 0.5 * cell[1])).abs() < 1e-18,
        "Hx sits half a cell up in y"
    );
    let steps = f
        .dataset("snapshots/plane/step")
        .unwrap()
        .read_raw::<u64>()
        .unwrap();
    assert_eq!(steps, vec![10, 20, 30, 40, 50, 60]);

    // Strided box snapshot.
    let b = f.dataset("snapshots/box/Ex").unwrap();
    assert_eq!(b.shape()[0], 2);
    assert_eq!(
        attr_f64s(&b, "spacing"),
        vec![2.0 * cell[0], 2.0 * cell[1], 2.0 * cell[2]]
    );

    // A value at a known cell equals the library's own run of the same model.
    let model = common::model(&text);
    let (series, fields) = common::run_cpu::<f32>(&model, 1);
    assert_eq!(
        series[0].iter().map(|&v| v as f32).collect::<Vec<_>>(),
        ez,
        "probe series match the library run"
    );
    let data = snap.read_raw::<f32>().unwrap();
    let per = 24 * 30;
    let last = &data[5 * per..6 * per];
    let k = k_ez as usize;
    let (i, j) = (13, 17);
    let expected = fields[Component::Ez as usize][(i * 30 + j) * 20 + k];
    assert_eq!(last[i * 30 + j].to_f64(), expected);
    let _ = std::fs::remove_dir_all(&dir);
}

fn read_complete(path: &Path) -> (bool, u64, usize, usize) {
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .unwrap();
    let complete = f.attr("complete").unwrap().read_scalar::<bool>().unwrap();
    let done = f.attr("steps_done").unwrap().read_scalar::<u64>().unwrap();
    let snaps = f.dataset("snapshots/plane/Ez").unwrap().shape()[0];
    let probe = f.dataset("probes/p/Ez").unwrap().shape()[0];
    (complete, done, snaps, probe)
}

#[test]
fn sigint_leaves_a_valid_incomplete_file() {
    let dir = tmpdir("sigint");
    // Long enough that the interrupt lands mid-run on any machine.
    std::fs::write(dir.join("s.toml"), scene(200_000, 40)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "out.h5", "--backend", "cpu"])
        .current_dir(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first progress line: the loop is running and snapshots are being written.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let l = lines.next().expect("progress output").unwrap();
        if l.starts_with("step ") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "exit code 130 after SIGINT; stderr: {rest:?}"
    );
    assert!(rest.iter().any(|l| l.contains("interrupted")), "{rest:?}");
    let (complete, done, snaps, probe) = read_complete(&dir.join("out.h5"));
    assert!(!complete);
    assert!(done > 0 && done < 200_000);
    assert_eq!(
        probe as u64, done,
        "probe series hold every step up to the interrupt"
    );
    assert_eq!(
        snaps as u64,
        done / 10,
        "every snapshot up to the interrupt is in the file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
