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
[[source]]
type = "lumped_port"
name = "feed"
box = { center = [-0.45, 0.3, 0.0], size = [0.0, 0.0, 0.1] }
direction = "+z"
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 5 }
[[geometry]]
shape = "box"
center = [0.45, 0.3, 0.0]
size = [0.0, 0.1, 0.1]
element = { resistance = 100.0, inductance = 1.0e-15, capacitance = 1.0e-18, direction = "z" }
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

/// [`SCENE`] with a gold sphere (radius 5 cells, x planes 16 to 26) whose curved surface
/// carries surface ports (`yee::model::SurfacePorts`): their stencils cross the cut between 2
/// ranks (plane 18) and between 3 (plane 24), and the glass box overlaps it.
fn ports_scene() -> String {
    SCENE.replacen(
        "[[geometry]]",
        r#"gold = { library = "Au" }
[[geometry]]
shape = "sphere"
material = "gold"
center = [0.15, 0.0, 0.0]
radius = 0.25
[[geometry]]"#,
        1,
    )
}

/// One mpirun at a time: two at once on 2 cores run out of Open MPI's slots.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The yee binary the tests run: `YEE_BIN` when set (scripts/gpu-check.sh runs this test
/// from a bundle built elsewhere), else the one cargo built with this test.
fn yee_bin() -> String {
    std::env::var("YEE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_yee").to_string())
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-mpi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("s.toml"), SCENE).unwrap();
    d
}

/// `yee run s.toml -o out.h5 --quiet --backend cpu --threads 1 EXTRA` in `d`, over `ranks`
/// ranks (None: one process without mpirun).
fn yee(d: &Path, ranks: Option<usize>, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run", "s.toml", "-o", "out.h5", "--quiet"];
    args.extend(["--backend", "cpu", "--threads", "1"]);
    args.extend(extra);
    launch(d, ranks, &args, env)
}

/// `yee ARGS` in `d` with `env`, over `ranks` ranks (None: without mpirun).
fn launch(d: &Path, ranks: Option<usize>, args: &[&str], env: &[(&str, &str)]) -> Output {
    command(d, ranks, args, env).output().expect("run")
}

/// [`launch`], but a run that has not ended within `secs` seconds is stopped (SIGTERM to
/// mpirun, which forwards it, then SIGKILL) and the test fails: for a check that every rank
/// stops, where a hang is the bug.
fn launch_within(d: &Path, ranks: Option<usize>, args: &[&str], secs: u64) -> Output {
    let mut child = command(d, ranks, args, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let t0 = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t0.elapsed().as_secs() > secs {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            std::thread::sleep(std::time::Duration::from_secs(5));
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "still running after {secs} s: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.wait_with_output().expect("output")
}

/// The command of [`launch`].
fn command(d: &Path, ranks: Option<usize>, args: &[&str], env: &[(&str, &str)]) -> Command {
    let bin = yee_bin();
    let bin = bin.as_str();
    let mut cmd = match ranks {
        Some(r) => {
            let mut c = Command::new("mpirun");
            c.args([
                "--allow-run-as-root",
                "--oversubscribe",
                "-n",
                &r.to_string(),
                bin,
            ]);
            c.env("OMPI_MCA_rmaps_base_oversubscribe", "1");
            c
        }
        None => Command::new(bin),
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args).current_dir(d);
    cmd
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

/// Open `path` without HDF5's file locking (docs/testing.md: a child another test spawns
/// would inherit the lock).
fn open_h5(path: impl AsRef<Path>) -> hdf5::Result<hdf5::File> {
    hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
}

/// Every dataset of `got` has the name and the bit pattern (NaN-safe) of `want`'s.
fn assert_same_values(got: &[(String, Vec<f64>)], want: &[(String, Vec<f64>)], what: &str) {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for ((name, a), (wname, b)) in got.iter().zip(want) {
        assert_eq!(name, wname, "{what}");
        assert!(bits(a) == bits(b), "{what}: {name} differs");
    }
}

#[test]
fn two_and_three_ranks_write_the_single_process_file_bit_for_bit() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let one = dir("one");
    let o = yee(&one, None, &[], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = datasets(&open_h5(one.join("out.h5")).unwrap());
    assert!(want.len() >= 12, "{} datasets", want.len());
    // The fused sweep (the default) and the two-pass update, each over ranks.
    let cases = [
        (2, vec![]),
        (3, vec![]),
        (3, vec!["--slabs", "5"]),
        (2, vec!["--two-pass"]),
    ];
    for (ranks, extra) in cases {
        let d = dir(&format!("r{ranks}-{}", extra.join("")));
        let o = yee(&d, Some(ranks), &extra, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{ranks} ranks {extra:?}: {err}");
        let f = open_h5(d.join("out.h5")).unwrap();
        assert!(f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
        let got = datasets(&f);
        let names = |v: &[(String, Vec<f64>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&got),
            names(&want),
            "{ranks} ranks: the same datasets"
        );
        assert_same_values(&got, &want, &format!("{ranks} ranks {extra:?}"));
        let _ = std::fs::remove_dir_all(&d);
    }
    let _ = std::fs::remove_dir_all(&one);
}

#[test]
fn surface_ports_over_ranks_write_the_single_process_file_bit_for_bit() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for precision in ["f32", "f64"] {
        let text = ports_scene().replace(
            "precision = \"f32\"",
            &format!("precision = \"{precision}\""),
        );
        let one = dir(&format!("ports-one-{precision}"));
        std::fs::write(one.join("s.toml"), &text).unwrap();
        let o = yee(&one, None, &[], &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let want = datasets(&open_h5(one.join("out.h5")).unwrap());
        // Each rank trades its boundary ports' values with the ranks beside it, in the fused
        // sweep (the default) and the two-pass update; 5 slabs over 3 ranks cut within a
        // rank too.
        let cases: &[(usize, &[&str])] = if precision == "f32" {
            &[(2, &[]), (3, &["--slabs", "5"]), (2, &["--two-pass"])]
        } else {
            &[(3, &[])]
        };
        for (ranks, extra) in cases {
            let d = dir(&format!("ports-{precision}-r{ranks}-{}", extra.join("")));
            std::fs::write(d.join("s.toml"), &text).unwrap();
            // A trade one side waits for in vain hangs every rank: fail instead (the run
            // takes a few seconds).
            let mut args = vec!["run", "s.toml", "-o", "out.h5", "--quiet"];
            args.extend(["--backend", "cpu", "--threads", "1"]);
            args.extend(extra.iter());
            let o = launch_within(&d, Some(*ranks), &args, 120);
            let what = format!("{precision}, {ranks} ranks {extra:?}");
            assert!(
                o.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let got = datasets(&open_h5(d.join("out.h5")).unwrap());
            assert_eq!(got.len(), want.len(), "{what}: the same datasets");
            assert_same_values(&got, &want, &what);
            let _ = std::fs::remove_dir_all(&d);
        }
        let _ = std::fs::remove_dir_all(&one);
    }
}

#[test]
#[cfg_attr(
    not(feature = "fault-injection"),
    ignore = "a test hook: needs --features fault-injection (scripts/test.sh)"
)]
fn a_failing_rank_stops_every_rank_with_exit_1_and_a_valid_file() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("fail");
    let t0 = std::time::Instant::now();
    let o = yee(&d, Some(2), &[], &[("YEE_RANK_FAIL_AT", "1:20")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("rank 1"), "the message names the rank: {err}");
    assert!(t0.elapsed().as_secs() < 30, "stopped within seconds");
    let f = open_h5(d.join("out.h5")).expect("a valid file");
    assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ranks_on_gpus_run_or_every_rank_says_why_its_gpu_cannot() {
    // `--backend cuda` over ranks: each rank builds the CUDA engine of its own slabs on one
    // GPU of its host (a Bloch cell: the pair of engines of its part's two field sets; surface
    // ports: each rank's part of them, trading with the rank beside). Where
    // there is no GPU (CI), every rank must stop at the start, naming itself and CUDA, rather
    // than one rank waiting in a collective call for another that has gone; where there is
    // one, the file must be the single-process CPU run's, bit for bit.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    gpu_ranks_check("cuda", SCENE);
    gpu_ranks_check("cuda-bloch", &BLOCH_SCENE.replace("STEPS", "200"));
    // A gold sphere's surface ports, cut by the ranks' boundary: each rank's GPU trades them.
    gpu_ranks_check("cuda-ports", &ports_scene());
}

/// [`ranks_on_gpus_run_or_every_rank_says_why_its_gpu_cannot`] on the scene `text`.
fn gpu_ranks_check(name: &str, text: &str) {
    let d = dir(name);
    std::fs::write(d.join("s.toml"), text).unwrap();
    let args = [
        "run",
        "s.toml",
        "-o",
        "out.h5",
        "--quiet",
        "--backend",
        "cuda",
    ];
    let o = launch_within(&d, Some(2), &args, 60);
    let err = String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        let one = dir(&format!("{name}-one"));
        std::fs::write(one.join("s.toml"), text).unwrap();
        let single = yee(&one, None, &[], &[]);
        assert!(single.status.success());
        let want = datasets(&open_h5(one.join("out.h5")).unwrap());
        let got = datasets(&open_h5(d.join("out.h5")).unwrap());
        assert_eq!(got.len(), want.len());
        assert_same_values(&got, &want, &format!("{name}: 2 ranks on GPUs"));
        let _ = std::fs::remove_dir_all(&one);
    } else {
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        for rank in 0..2 {
            assert!(
                err.contains(&format!("rank {rank} on ")),
                "{name}: rank {rank} says why: {err}"
            );
        }
        assert!(err.contains("CUDA") || err.contains("GPU"), "{err}");
        assert!(!d.join("out.h5").exists(), "nothing written");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_output_rank_0_refuses_stops_every_rank_with_exit_2_and_leaves_the_file_alone() {
    // Rank 0 alone claims the output; the others must hear its refusal rather than wait for
    // it in the run's first collective call (they did, forever).
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("exists");
    std::fs::write(d.join("out.h5"), b"someone's result").unwrap();
    let args = ["run", "s.toml", "-o", "out.h5", "--quiet", "--threads", "1"];
    let o = launch_within(&d, Some(2), &args, 60);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(err.matches("already exists").count(), 1, "said once: {err}");
    assert_eq!(
        std::fs::read(d.join("out.h5")).unwrap(),
        b"someone's result"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_scene_one_rank_cannot_read_stops_every_rank_with_exit_2_naming_the_rank() {
    // As when one node does not see the file the others do: mpirun's two-program form gives
    // rank 1 a scene that does not exist. Rank 0 must not wait for rank 1 forever.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("missing");
    let bin = yee_bin();
    let bin = bin.as_str();
    let run = |scene: &'static str| {
        [
            "-n",
            "1",
            bin,
            "run",
            scene,
            "-o",
            "out.h5",
            "--quiet",
            "--threads",
            "1",
        ]
    };
    let mut args = vec!["--allow-run-as-root", "--oversubscribe"];
    args.extend(run("s.toml"));
    args.push(":");
    args.extend(run("elsewhere.toml"));
    let t0 = std::time::Instant::now();
    let mut child = Command::new("mpirun")
        .args(&args)
        .current_dir(&d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mpirun");
    while child.try_wait().unwrap().is_none() && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let stuck = child.try_wait().unwrap().is_none();
    if stuck {
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        std::thread::sleep(std::time::Duration::from_secs(5));
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!stuck, "rank 0 waited for rank 1: {err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rank 1 on "),
        "names the rank and its host: {err}"
    );
    assert!(err.contains("elsewhere.toml"), "names the file: {err}");
    assert!(!d.join("out.h5").exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn each_rank_allocates_what_the_plan_of_r_ranks_lists() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("plan");
    // A Bloch cell's ranks each hold both field sets.
    let bloch = BLOCH_SCENE.replace("STEPS", "20");
    // A rank with surface ports also holds its trades with the ranks beside it.
    let ports = ports_scene();
    for (text, ranks, slabs) in [
        (SCENE, 2, None),
        (SCENE, 3, Some("5")),
        (&bloch[..], 2, None),
        (&ports[..], 3, None),
    ] {
        std::fs::write(d.join("s.toml"), text).unwrap();
        let mut run = vec!["run", "s.toml", "-o", "out.h5", "--overwrite"];
        run.extend(["--backend", "cpu", "--threads", "1"]);
        let mut plan_args = vec!["--threads", "1"];
        if let Some(s) = slabs {
            run.extend(["--slabs", s]);
            plan_args.extend(["--slabs", s]);
        }
        // Without --quiet: rank 0 prints each rank's line (host, planes, slabs, bytes).
        let o = launch(&d, Some(ranks), &run, &[]);
        let out =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{out}");
        let r = ranks.to_string();
        let p = Command::new(yee_bin())
            .args(["plan", "s.toml", "--json", "--ranks", &r])
            .args(&plan_args)
            .current_dir(&d)
            .output()
            .unwrap();
        assert!(p.status.success(), "{}", String::from_utf8_lossy(&p.stderr));
        let plan: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
        let parts = plan["ranks"]["parts"].as_array().unwrap();
        assert_eq!(parts.len(), ranks);
        for part in parts {
            let rank = part["rank"].as_u64().unwrap();
            let line = out
                .lines()
                .find(|l| l.contains(&format!("rank {rank} on ")))
                .unwrap_or_else(|| panic!("no line for rank {rank}: {out}"));
            let a = &part["allocation"];
            let total: u64 = [
                "fields",
                "halos",
                "materials",
                "pml",
                "dispersive",
                "monitors",
                "sources",
                "passes",
            ]
            .iter()
            .map(|k| a[*k].as_u64().unwrap())
            .sum();
            let x = &part["x"];
            let slabs = part["slabs"][1].as_u64().unwrap() - part["slabs"][0].as_u64().unwrap();
            let slabs = format!("{slabs} slab{}", if slabs == 1 { "" } else { "s" });
            let want = format!(
                "x planes [{}, {}) in {slabs}, 1 thread, {total} bytes allocated",
                x[0], x[1]
            );
            assert!(
                line.contains(&want),
                "{ranks} ranks: the plan says `{want}`, the run `{line}`"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn devices_under_mpirun_lists_every_rank_with_its_host() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("devices");
    let o = launch(&d, Some(2), &["devices"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Rank 0 alone prints, once for each rank, the rank's host and then its own report.
    let host = yee::ranks::this_host();
    for r in 0..2 {
        let head = format!("rank {r} on {host}:");
        assert_eq!(out.matches(&head).count(), 1, "`{head}` once in:\n{out}");
    }
    let plain = launch(&d, None, &["devices"], &[]);
    let first = String::from_utf8_lossy(&plain.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(!first.trim().is_empty(), "a report");
    assert_eq!(
        out.matches(first.as_str()).count(),
        2,
        "each rank's section holds the single-process report:\n{out}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The pids of the `yee` processes mpirun `parent` started, by rank.
fn ranks_of(parent: u32, ranks: usize) -> Vec<u32> {
    let mut found = vec![0u32; ranks];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which ends at the last ')'): state, ppid, ...
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        let ppid: u32 = after
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if ppid != parent {
            continue;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        for var in env.split(|&b| b == 0) {
            if let Some(r) = var.strip_prefix(b"OMPI_COMM_WORLD_RANK=") {
                let r: usize = String::from_utf8_lossy(r).parse().unwrap();
                if r < ranks {
                    found[r] = pid;
                }
            }
        }
    }
    found
}

/// Start a long run over 2 ranks, wait until it is stepping, signal it with `signal` through
/// `target` (the mpirun pid and the ranks' pids), and return the exit code, the output and the
/// time from the signal to the end.
fn interrupt(
    name: &str,
    target: impl Fn(u32, &[u32]) -> Vec<u32>,
    signal: i32,
) -> (Option<i32>, String, std::time::Duration, PathBuf) {
    let long = SCENE.replace("steps = 120", "steps = 1000000");
    interrupt_scene(name, &long, target, signal, &[], &[])
}

/// [`interrupt`] on the scene `text`.
fn interrupt_scene(
    name: &str,
    text: &str,
    target: impl Fn(u32, &[u32]) -> Vec<u32>,
    signal: i32,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, std::time::Duration, PathBuf) {
    let d = dir(name);
    std::fs::write(d.join("s.toml"), text).unwrap();
    let child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .arg(yee_bin())
        .args([
            "run",
            "s.toml",
            "-o",
            "out.h5",
            "--backend",
            "cpu",
            "--threads",
            "1",
        ])
        .args(extra)
        .envs(env.iter().copied())
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .current_dir(&d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stepping: both ranks are up and the file exists (rank 0 creates it before step 1).
    let t0 = std::time::Instant::now();
    let pids = loop {
        let pids = ranks_of(child.id(), 2);
        if pids.iter().all(|&p| p != 0) && d.join("out.h5").exists() {
            break pids;
        }
        assert!(t0.elapsed().as_secs() < 60, "the run did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let signalled = std::time::Instant::now();
    for pid in target(child.id(), &pids) {
        // SAFETY: kill only sends a signal to a process of this test.
        unsafe { libc::kill(pid as i32, signal) };
    }
    let o = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code(), text, took, d)
}

/// The file of a stopped run: valid, complete = false, the steps written so far.
fn assert_stopped_file(d: &Path, what: &str) {
    let f = open_h5(d.join("out.h5")).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        !f.attr("complete").unwrap().read_scalar::<bool>().unwrap(),
        "{what}: complete = false"
    );
    let near = f
        .dataset("probes/near/Ez")
        .unwrap()
        .read_raw::<f64>()
        .unwrap();
    assert!(
        near.len() > 10,
        "{what}: the probe rows so far ({})",
        near.len()
    );
}

#[test]
fn a_signal_to_one_rank_stops_every_rank_with_exit_130_and_a_valid_file() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // As a batch system's scancel or a kill of one process does: SIGINT reaches rank 1 only;
    // rank 0 hears of it at the next status check, every rank stops and rank 0's 130 is
    // mpirun's exit code.
    let (code, out, took, d) = interrupt("sig-rank", |_, pids| vec![pids[1]], libc::SIGINT);
    assert_eq!(code, Some(130), "{out}");
    assert!(out.contains("interrupted"), "{out}");
    assert!(took.as_secs() < 20, "stopped within seconds: {took:?}");
    assert_stopped_file(&d, "SIGINT to rank 1");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn ctrl_c_to_mpirun_stops_every_rank_and_leaves_a_valid_file() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A terminal's Ctrl-C reaches mpirun alone (Open MPI starts each rank in its own process
    // group); mpirun sends SIGTERM to every rank (after odls_base_sigkill_timeout, 1 s by
    // default, and SIGKILL as long again later), which stop at the next step, and rank 0
    // closes the file. mpirun's own exit code after it was signalled is Open MPI's choice
    // (4.x: 1, whatever the ranks return), so only "not success" is checked here; a signal
    // to the ranks themselves gives 130 (the test above).
    let (code, out, took, d) = interrupt("sig-mpirun", |mpirun, _| vec![mpirun], libc::SIGINT);
    assert!(code.is_some_and(|c| c != 0), "{code:?} {out}");
    assert!(out.contains("interrupted"), "{out}");
    assert!(took.as_secs() < 20, "stopped within seconds: {took:?}");
    assert_stopped_file(&d, "Ctrl-C to mpirun");
    let _ = std::fs::remove_dir_all(&d);
}

/// [`ports_scene`] with `steps` steps and a Drude metal bar across x (cells 8 to 32 of 36),
/// so a checkpoint carries dispersive state in every rank's part and, split into 4 slabs
/// over 2 ranks (cuts at 9, 18 and 27), in every slab: each rank's pieces of it lie at an
/// offset within its part. The gold sphere's surface ports are cut by the ranks too (their
/// state is saved per slab and resumed on other cuts).
fn checkpoint_scene(steps: usize) -> String {
    ports_scene()
        .replace("steps = 120", &format!("steps = {steps}"))
        .replacen(
            "[[geometry]]",
            r#"metal = { conformal = false, epsilon = 1.0, drude = [{ frequency = 1.2e15, damping = 1.0e14 }] }
[[geometry]]
shape = "box"
material = "metal"
center = [0.1, -0.4, 0.0]
size = [1.2, 0.3, 0.3]
[[geometry]]"#,
            1,
        )
}

#[test]
fn a_checkpoint_of_two_ranks_resumes_on_three_ranks_and_on_one_process_bit_for_bit() {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Long enough that the signal (1.5 s after the file appears) lands midway however fast
    // the machine: 2,000 steps ran out before it once the fused sweep ran over ranks.
    let steps = 20_000;
    let text = checkpoint_scene(steps);
    // Every run also carries the test build's toy cell pass (`yee::fault::CounterPass`) on a
    // box of Ez cells across every rank boundary: its state is split over the ranks, written
    // into the checkpoint piece by piece and put back on 3 ranks and on one process, by the
    // code that carries every registered array (without `fault-injection` the hook is off
    // and the runs are plain).
    let toy = [("YEE_TEST_COUNTER_PASS", "Ez:10,28,14,22,14,22")];
    // The uninterrupted run, one process.
    let one = dir("ck-ref");
    std::fs::write(one.join("s.toml"), &text).unwrap();
    let o = yee(&one, None, &[], &toy);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = datasets(&open_h5(one.join("out.h5")).unwrap());
    // Two ranks of two slabs each, stopped by SIGTERM to rank 0 (as a batch system's time
    // limit does): every rank stops, the checkpoint is written piece by piece (each rank's
    // engine hands over its slabs' pieces, placed within its part), exit 143.
    let (code, out, _, d) = interrupt_scene(
        "ck-two",
        &text,
        |_, pids| vec![pids[0]],
        libc::SIGTERM,
        &["--slabs", "4"],
        &toy,
    );
    assert_eq!(code, Some(143), "{out}");
    assert_stopped_file(&d, "SIGTERM to rank 0");
    let ck = d.join("out.checkpoint.h5");
    let step = open_h5(&ck)
        .and_then(|f| f.attr("step")?.read_scalar::<u64>())
        .unwrap_or_else(|e| panic!("a checkpoint: {e}: {out}"));
    assert!(
        step > 0 && step < steps as u64,
        "stopped midway: step {step}"
    );
    if cfg!(feature = "fault-injection") {
        let counter = open_h5(&ck)
            .and_then(|f| f.dataset("state/arrays/counter.state")?.read_raw::<f64>())
            .unwrap_or_else(|e| panic!("the toy pass's state in the checkpoint: {e}"));
        let cells = 18 * 8 * 8;
        assert_eq!(counter.len(), 2 * cells);
        assert!(
            counter[..cells].iter().all(|&n| n == step as f64),
            "every cell counted every step"
        );
    }
    // A copy of the stopped run resumes as one process.
    let copy = dir("ck-copy");
    for f in ["s.toml", "out.h5", "out.checkpoint.h5"] {
        std::fs::copy(d.join(f), copy.join(f)).unwrap();
    }
    let resumed = [
        (
            launch(
                &d,
                Some(3),
                &[
                    "resume",
                    "out.h5",
                    "--quiet",
                    "--backend",
                    "cpu",
                    "--threads",
                    "1",
                    // Two slabs a rank: each rank's pieces lie within its part.
                    "--slabs",
                    "6",
                ],
                &toy,
            ),
            &d,
            "3 ranks",
        ),
        (
            launch(
                &copy,
                None,
                &["resume", "out.h5", "--quiet", "--backend", "cpu"],
                &toy,
            ),
            &copy,
            "1 process",
        ),
    ];
    for (o, dir, how) in resumed {
        assert!(
            o.status.success(),
            "resumed on {how}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let f = open_h5(dir.join("out.h5")).unwrap();
        assert!(
            f.attr("complete").unwrap().read_scalar::<bool>().unwrap(),
            "{how}"
        );
        let got = datasets(&f);
        assert_eq!(got.len(), want.len(), "{how}: the same datasets");
        assert_same_values(&got, &want, &format!("resumed on {how} after step {step}"));
    }
    for p in [one, d, copy] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// A small 2-D scan (40 x 30 x 1 cells, z periodic) over a lossy half-space with a PEC
/// cylinder: the dipole and a two-component probe move, a second probe and a flux plane stay.
const SCAN_SCENE: &str = r#"[simulation]
name = "scan_ranks"
length_unit = "mm"
cell_size = 1.0
size = [40.0, 30.0, 1.0]
steps = STEPS
precision = "f32"
[boundaries]
default = { type = "pml", cells = 6 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
soil = { epsilon = 4.0, conductivity = 0.01 }
[[geometry]]
shape = "box"
material = "soil"
center = [0.0, -10.0, 0.0]
size = [100.0, 20.0, 10.0]
[[geometry]]
shape = "cylinder"
material = "pec"
center = [1.0, -6.0, 0.0]
radius = 2.5
height = 10.0
axis = "z"
[scan]
traces = TRACES
[[source]]
type = "dipole"
component = "Ez"
position = [-8.3, 4.0, 0.0]
waveform = { type = "ricker", frequency = 1.5e10 }
scan_step = [1.7, 0.0, 0.0]
[[monitor]]
type = "probe"
name = "rx"
position = [-4.1, 4.0, 0.0]
components = ["Ez", "Hx"]
scan_step = [1.7, 0.3, 0.0]
[[monitor]]
type = "probe"
name = "fixed"
position = [5.0, 2.0, 0.0]
components = ["Ez"]
[[monitor]]
type = "flux"
name = "down"
plane = { y = -2.0 }
frequencies = { min = 1.0e10, max = 5.0e10, count = 5 }
"#;

/// `args` with `--backend cpu`: a one-process run compared with a scan over ranks, whose
/// traces run on the CPU.
fn args_on_cpu<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--backend", "cpu"]);
    v
}

/// The scan scene with `traces` traces of `steps` steps, written into a fresh folder.
fn scan_dir(name: &str, traces: usize, steps: usize) -> PathBuf {
    let d = dir(name);
    let text = SCAN_SCENE
        .replace("TRACES", &traces.to_string())
        .replace("STEPS", &steps.to_string());
    std::fs::write(d.join("s.toml"), text).unwrap();
    d
}

/// The scan file's datasets and its `traces_done` and `complete` attributes.
fn scan_contents(path: &Path) -> (Vec<(String, Vec<f64>)>, u64, bool) {
    let f = open_h5(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let done: u64 = f.attr("traces_done").unwrap().read_scalar().unwrap();
    let complete: bool = f.attr("complete").unwrap().read_scalar().unwrap();
    (datasets(&f), done, complete)
}

#[test]
fn a_scan_over_two_and_three_ranks_writes_the_single_process_file_bit_for_bit() {
    // The traces are shared out (rank r runs traces r, r + R, ...), each as one process runs
    // it, and rank 0 writes them in trace order: the file is the one-process scan's.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = scan_dir("scan", 7, 150);
    let args = |out: &'static str, threads: &'static str| {
        ["run", "s.toml", "-o", out, "--quiet", "--threads", threads]
    };
    // The one-process reference on the CPU, as the ranks' traces run: where a GPU is present
    // its plan would take it, and a GPU's flux DFT is not the CPU's to the bit.
    let one = launch(&d, None, &args_on_cpu(&args("one.h5", "2")), &[]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let (want, done, complete) = scan_contents(&d.join("one.h5"));
    assert!((done, complete) == (7, true));
    assert!(
        want.iter().any(|(n, _)| n == "/flux/down/power"),
        "a flux spectrum per trace"
    );
    for (ranks, out) in [(2, "two.h5"), (3, "three.h5")] {
        let o = launch_within(&d, Some(ranks), &args(out, "1"), 120);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{ranks} ranks: {err}");
        let (got, done, complete) = scan_contents(&d.join(out));
        assert!((done, complete) == (7, true), "{ranks} ranks: every trace");
        assert_eq!(got.len(), want.len(), "{ranks} ranks: the same datasets");
        assert_same_values(&got, &want, &format!("scan over {ranks} ranks"));
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_signal_to_one_rank_stops_a_scan_over_ranks_and_it_resumes_on_three_bit_for_bit() {
    // SIGINT to rank 1 mid-scan: every rank stops, rank 0 closes the file with the leading
    // finished traces (complete = false) and mpirun exits 130; `yee resume` over 3 ranks
    // finishes it into the uninterrupted one-process file.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let traces = 10;
    let text = SCAN_SCENE
        .replace("TRACES", &traces.to_string())
        .replace("STEPS", "25000");
    let (code, out, took, d) = interrupt_scene(
        "scan-sig",
        &text,
        |_, pids| vec![pids[1]],
        libc::SIGINT,
        &[],
        &[],
    );
    assert_eq!(code, Some(130), "{out}");
    assert!(took.as_secs() < 20, "stopped within seconds: {took:?}");
    let (_, done, complete) = scan_contents(&d.join("out.h5"));
    assert!(
        !complete && done < traces as u64,
        "stopped midway: {done} traces, {out}"
    );
    let o = launch_within(
        &d,
        Some(3),
        &["resume", "out.h5", "--quiet", "--threads", "1"],
        120,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = launch(
        &d,
        None,
        &args_on_cpu(&["run", "s.toml", "-o", "one.h5", "--quiet", "--threads", "2"]),
        &[],
    );
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let (want, _, _) = scan_contents(&d.join("one.h5"));
    let (got, done, complete) = scan_contents(&d.join("out.h5"));
    assert!(
        (done, complete) == (traces as u64, true),
        "resumed to the end"
    );
    assert_same_values(&got, &want, "stopped over 2 ranks, resumed over 3");
    let _ = std::fs::remove_dir_all(&d);
}

/// A Bloch cell (phases along x, across the ranks' cut and the periodic x wrap, and along
/// y; PML along z) with a Drude sphere, a dipole, a probe, a snapshot, a flux plane and a
/// flux box: each rank steps the pair of its part's real and imaginary field sets.
const BLOCH_SCENE: &str = r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.2, 1.0, 1.6]
steps = STEPS
precision = "f32"
[boundaries]
x_min = { type = "bloch", phase = 0.3 }
y_min = { type = "bloch", phase = -0.15 }
z_min = { type = "pml", cells = 5 }
z_max = { type = "pml", cells = 5 }
[materials]
metal = { conformal = false, epsilon = 2.0, drude = [{ frequency = 5.0e14, damping = 2.0e13 }] }
[[geometry]]
shape = "sphere"
material = "metal"
center = [0.3, 0.1, 0.1]
radius = 0.2
[[source]]
type = "dipole"
component = "Ez"
position = [-0.2, -0.1, 0.0]
waveform = { type = "gaussian", frequency = 2.0e14, bandwidth = 2.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [0.45, -0.3, -0.2]
components = ["Ez", "Hx"]
[[monitor]]
type = "snapshot"
name = "xz"
components = ["Ey"]
plane = { y = 0.0 }
every = 50
[[monitor]]
type = "flux"
name = "up"
plane = { z = 0.4 }
frequencies = { min = 1.0e14, max = 3.0e14, count = 5 }
[[monitor]]
type = "flux"
name = "box"
box = { center = [0.2, 0.05, 0.1], size = [0.5, 0.5, 0.6] }
frequencies = { min = 1.0e14, max = 3.0e14, count = 5 }
"#;

#[test]
fn a_bloch_cell_over_two_and_three_ranks_writes_the_single_process_file_bit_for_bit() {
    // Both field sets' halo planes travel between the ranks (the x Bloch images are the
    // halo planes at the periodic x wrap, between the first rank and the last), and rank 0
    // accumulates each set's flux DFTs from every rank's part, so the flux spectra are
    // those of the complex field, as in one process.
    // The metal sphere's curved surface carries surface ports here (x planes 14 to 22, cut
    // by 3 ranks at 16): each set's ports trade with the ranks beside it.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = BLOCH_SCENE
        .replace("STEPS", "600")
        .replace("metal = { conformal = false, ", "metal = { ");
    let one = dir("bloch-one");
    std::fs::write(one.join("s.toml"), &text).unwrap();
    let o = yee(&one, None, &[], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = datasets(&open_h5(one.join("out.h5")).unwrap());
    let power = want.iter().find(|(n, _)| n == "/flux/up/power").unwrap();
    assert!(
        power.1.iter().all(|&p| p != 0.0),
        "the flux plane sees the wave"
    );
    for (ranks, extra) in [(2, vec![]), (3, vec![]), (2, vec!["--two-pass"])] {
        let d = dir(&format!("bloch-r{ranks}-{}", extra.join("")));
        std::fs::write(d.join("s.toml"), &text).unwrap();
        let o = yee(&d, Some(ranks), &extra, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{ranks} ranks {extra:?}: {err}");
        let got = datasets(&open_h5(d.join("out.h5")).unwrap());
        assert_eq!(got.len(), want.len(), "{ranks} ranks: the same datasets");
        assert_same_values(&got, &want, &format!("Bloch, {ranks} ranks {extra:?}"));
        let _ = std::fs::remove_dir_all(&d);
    }
    let _ = std::fs::remove_dir_all(&one);
}

#[test]
fn a_bloch_checkpoint_of_two_ranks_resumes_on_three_ranks_and_on_one_process_bit_for_bit() {
    // Each rank's part of both field sets (the imaginary set's fields and arrays as
    // `bloch.im.*` arrays) and rank 0's two sets of flux DFTs go into the one checkpoint,
    // which resumes on any number of ranks.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Long enough that the signal (1.5 s after the file appears) lands midway.
    let steps = 30_000;
    let text = BLOCH_SCENE.replace("STEPS", &steps.to_string());
    let one = dir("bloch-ck-ref");
    std::fs::write(one.join("s.toml"), &text).unwrap();
    let o = yee(&one, None, &[], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = datasets(&open_h5(one.join("out.h5")).unwrap());
    let stop_rank_0 = |_, pids: &[u32]| vec![pids[0]];
    let slabs = ["--slabs", "4"];
    let (code, out, _, d) =
        interrupt_scene("bloch-ck", &text, stop_rank_0, libc::SIGTERM, &slabs, &[]);
    assert_eq!(code, Some(143), "{out}");
    let ck = d.join("out.checkpoint.h5");
    let step = open_h5(&ck)
        .and_then(|f| f.attr("step")?.read_scalar::<u64>())
        .unwrap_or_else(|e| panic!("a checkpoint: {e}: {out}"));
    assert!(step > 0 && step < steps as u64, "stopped midway: {step}");
    let copy = dir("bloch-ck-copy");
    for f in ["s.toml", "out.h5", "out.checkpoint.h5"] {
        std::fs::copy(d.join(f), copy.join(f)).unwrap();
    }
    let resume = [
        "resume",
        "out.h5",
        "--quiet",
        "--backend",
        "cpu",
        "--threads",
        "1",
    ];
    let on_three = [&resume[..], &["--slabs", "6"]].concat();
    for (dir, ranks, args, how) in [
        (&d, Some(3), &on_three[..], "3 ranks"),
        (&copy, None, &resume[..], "1 process"),
    ] {
        let o = launch(dir, ranks, args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "resumed on {how}: {err}");
        let got = datasets(&open_h5(dir.join("out.h5")).unwrap());
        assert_eq!(got.len(), want.len(), "{how}: the same datasets");
        assert_same_values(&got, &want, &format!("resumed on {how} after step {step}"));
    }
    for p in [one, d, copy] {
        let _ = std::fs::remove_dir_all(p);
    }
}
