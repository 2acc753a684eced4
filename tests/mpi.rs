//! One domain over MPI ranks (`--features mpi`): `mpirun -n R yee run` writes the same file as
//! one process, dataset for dataset, bit for bit; a failing rank stops every rank with exit 1
//! and a valid, incomplete file. Needs Open MPI's `mpirun` (scripts/deps.sh installs it).
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// PML, a lossy dielectric (a conductor), a dipole, two probes, a plane and a volume snapshot
/// and a flux plane and box, on 36 x 36 x 36 cells.
const SCENE: &str = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.8, 1.8, 1.8]
steps = 120
precision = "f32"
[boundaries]
default = { type = "pml", cells = 6 }
[materials]
glass = { epsilon = 2.25, conductivity = 2.0e4 }
[[geometry]]
shape = "box"
material = "glass"
center = [0.3, 0.2, 0.0]
size = [0.4, 0.4, 0.4]
[[source]]
type = "dipole"
component = "Ez"
position = [-0.2, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }
[[monitor]]
type = "probe"
name = "near"
position = [0.05, 0.0, 0.0]
components = ["Ez", "Hy"]
[[monitor]]
type = "probe"
name = "far"
position = [0.55, -0.3, 0.1]
components = ["Ex"]
[[monitor]]
type = "snapshot"
name = "xy"
components = ["Ez"]
plane = { z = 0.0 }
every = 20
[[monitor]]
type = "snapshot"
name = "vol"
components = ["Ex", "Hz"]
every = 40
[[monitor]]
type = "flux"
name = "px"
plane = { x = 0.5 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 5 }
[[monitor]]
type = "flux"
name = "box"
box = { center = [0.0, 0.0, 0.0], size = [1.0, 1.0, 1.0] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 5 }
"#;

/// One mpirun at a time: two at once on 2 cores run out of Open MPI's slots.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-mpi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("s.toml"), SCENE).unwrap();
    d
}

fn yee(d: &Path, ranks: Option<usize>, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let bin = env!("CARGO_BIN_EXE_yee");
    let mut args: Vec<String> = Vec::new();
    let mut cmd = match ranks {
        Some(r) => {
            let mut c = Command::new("mpirun");
            args.extend(
                [
                    "--allow-run-as-root",
                    "--oversubscribe",
                    "-n",
                    &r.to_string(),
                    bin,
                ]
                .map(String::from),
            );
            c.env("OMPI_MCA_rmaps_base_oversubscribe", "1");
            c
        }
        None => Command::new(bin),
    };
    args.extend(
        [
            "run",
            "s.toml",
            "-o",
            "out.h5",
            "--quiet",
            "--backend",
            "cpu",
            "--threads",
            "1",
        ]
        .map(String::from),
    );
    args.extend(extra.iter().map(|s| s.to_string()));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(&args).current_dir(d).output().expect("run")
}

/// Every dataset of `file` (path -> values as f64, in storage order).
fn datasets(file: &hdf5::File) -> Vec<(String, Vec<f64>)> {
    fn walk(g: &hdf5::Group, prefix: &str, out: &mut Vec<(String, Vec<f64>)>) {
        let mut names = g.member_names().unwrap();
        names.sort();
        for n in names {
            let path = format!("{prefix}/{n}");
            if let Ok(sub) = g.group(&n) {
                walk(&sub, &path, out);
            } else if let Ok(ds) = g.dataset(&n) {
                if let Ok(v) = ds.read_raw::<f64>() {
                    out.push((path, v));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(file, "", &mut out);
    out
}

#[test]
fn two_and_three_ranks_write_the_single_process_file_bit_for_bit() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let one = dir("one");
    let o = yee(&one, None, &[], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = datasets(&hdf5::File::open(one.join("out.h5")).unwrap());
    assert!(want.len() >= 12, "{} datasets", want.len());
    for (ranks, extra) in [(2, vec![]), (3, vec![]), (3, vec!["--slabs", "5"])] {
        let d = dir(&format!("r{ranks}-{}", extra.len()));
        let o = yee(&d, Some(ranks), &extra, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{ranks} ranks {extra:?}: {err}");
        let f = hdf5::File::open(d.join("out.h5")).unwrap();
        assert!(f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
        let got = datasets(&f);
        let names = |v: &[(String, Vec<f64>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&got),
            names(&want),
            "{ranks} ranks: the same datasets"
        );
        for ((name, a), (_, b)) in got.iter().zip(&want) {
            // Bit for bit: compare the bit patterns (NaN-safe).
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(a) == bits(b),
                "{ranks} ranks {extra:?}: {name} differs"
            );
        }
        let _ = std::fs::remove_dir_all(&d);
    }
    let _ = std::fs::remove_dir_all(&one);
}

#[test]
fn a_failing_rank_stops_every_rank_with_exit_1_and_a_valid_file() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("fail");
    let t0 = std::time::Instant::now();
    let o = yee(&d, Some(2), &[], &[("YEE_RANK_FAIL_AT", "1:20")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("rank 1"), "the message names the rank: {err}");
    assert!(t0.elapsed().as_secs() < 30, "stopped within seconds");
    let f = hdf5::File::open(d.join("out.h5")).expect("a valid file");
    assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    let _ = std::fs::remove_dir_all(&d);
}
