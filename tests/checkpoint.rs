//! Checkpoint and resume: a run stopped by SIGTERM (exit 143) and resumed with `yee resume`
//! on another slab count finishes with every dataset equal, bit for bit, to an uninterrupted
//! run's (f32 and f64); the whole state goes CPU -> host-compiled CUDA engine -> CPU at the
//! library level without changing a bit; a kill while a checkpoint is written keeps the
//! previous one usable; SIGKILL at random moments leaves a result file HDF5 opens with probe
//! series no longer than `steps_done`; a file-size limit stops the run with exit 1 and a valid
//! file; a mismatched checkpoint or a changed result file is refused (exit 2).
//!
//! The scene has a CPML, a dielectric, a lossy conductor, a PEC box, a Drude metal, a probe,
//! snapshots, a flux plane keeping its DFT fields and a far-field box (and, in the SIGTERM
//! test, a mode monitor, whose amplitudes are reopened and rewritten on resume): every kind of
//! state a checkpoint carries except the TF/SF grid, which the library-level round trip covers.

mod cuda_support;

use cuda_support::host::{serial, HostDevice};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SCENE: &str = r#"[simulation]
name = "ck"
length_unit = "nm"
cell_size = 10.0
size = [240.0, 200.0, 200.0]
steps = STEPS
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 5 }
[materials]
glass = { epsilon = 2.25 }
metal = { epsilon = 1.0, drude = [{ frequency = 2.0e15, damping = 1.0e13 }] }
lossy = { epsilon = 3.0, conductivity = 1.0e5 }
[[geometry]]
shape = "sphere"
material = "metal"
center = [-30.0, 0.0, 0.0]
radius = 30.0
[[geometry]]
shape = "box"
material = "glass"
center = [30.0, 0.0, 20.0]
size = [30.0, 100.0, 30.0]
[[geometry]]
shape = "box"
material = "lossy"
center = [30.0, 0.0, -30.0]
size = [30.0, 60.0, 20.0]
[[geometry]]
shape = "box"
material = "pec"
center = [-30.0, 40.0, 40.0]
size = [20.0, 20.0, 20.0]
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 10.0, -10.0]
waveform = { type = "gaussian", frequency = 5.0e14, bandwidth = 4.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [20.0, 0.0, 0.0]
components = ["Ez", "Hy"]
[[monitor]]
type = "snapshot"
name = "vol"
components = ["Ez", "Hx"]
every = 25
[[monitor]]
type = "flux"
name = "f"
plane = { x = 50.0 }
frequencies = { min = 3.0e14, max = 7.0e14, count = 5 }
fields = true
[[monitor]]
type = "far_field"
name = "far"
box = { center = [0.0, 0.0, 0.0], size = [90.0, 80.0, 80.0] }
frequencies = { min = 4.0e14, max = 6.0e14, count = 2 }
theta = { min = 0.0, max = 180.0, count = 3 }
phi = { min = 0.0, max = 90.0, count = 2 }
"#;

fn scene(precision: &str, steps: usize) -> String {
    SCENE
        .replace("PRECISION", precision)
        .replace("STEPS", &steps.to_string())
}

fn tmpdir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("checkpoint-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn yee_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yee"));
    c.args(args).current_dir(dir);
    c
}

fn yee(dir: &Path, args: &[&str]) -> Output {
    yee_cmd(dir, args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run in the background, one thread on one slab, quiet.
fn spawn_run(dir: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> Child {
    let mut c = yee_cmd(
        dir,
        &[
            &[
                "run",
                "s.toml",
                "-o",
                out,
                "--backend",
                "cpu",
                "--slabs",
                "1",
            ],
            &["--threads", "1", "--quiet", "--overwrite"][..],
            extra,
        ]
        .concat(),
    );
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to a child process this test started.
    let r = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(r, 0, "kill failed");
}

/// `steps_done` of a result file being written, when it can be read now.
fn steps_done(path: &Path) -> Option<u64> {
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .ok()?;
    f.attr("steps_done").ok()?.read_scalar::<u64>().ok()
}

/// Wait until the result `path` reports at least `min` steps done (the run flushes at each
/// snapshot), or the child ends.
fn wait_for_steps(child: &mut Child, path: &Path, min: u64) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        if steps_done(path).is_some_and(|n| n >= min) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the run did not reach step {min}");
}

/// Every dataset of a result file as bit patterns (f64 widened, complex as pairs), with the
/// `steps_done` and `complete` attributes: equal maps are bit-for-bit equal results.
fn contents(path: &Path) -> BTreeMap<String, Vec<u64>> {
    fn walk(g: &hdf5::Group, prefix: &str, out: &mut BTreeMap<String, Vec<u64>>) {
        for name in g.member_names().unwrap() {
            let full = format!("{prefix}/{name}");
            if let Ok(sub) = g.group(&name) {
                walk(&sub, &full, out);
                continue;
            }
            let ds = g.dataset(&name).unwrap();
            let bits: Vec<u64> = if ds.size() == 0 {
                Vec::new()
            } else if let Ok(v) = ds.read_raw::<f64>() {
                v.iter().map(|x| x.to_bits()).collect()
            } else {
                let v: Vec<yee::output::Complex> = ds.read_raw().unwrap();
                v.iter()
                    .flat_map(|c| [c.r.to_bits(), c.i.to_bits()])
                    .collect()
            };
            out.insert(full, bits);
        }
    }
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = BTreeMap::new();
    walk(&f, "", &mut out);
    let done: u64 = f.attr("steps_done").unwrap().read_scalar().unwrap();
    let complete: bool = f.attr("complete").unwrap().read_scalar().unwrap();
    out.insert("@steps_done".into(), vec![done]);
    out.insert("@complete".into(), vec![complete as u64]);
    out
}

fn assert_same(got: &Path, want: &Path) {
    let (g, w) = (contents(got), contents(want));
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        w.keys().collect::<Vec<_>>(),
        "the same datasets"
    );
    for (k, v) in &w {
        assert!(
            g[k] == *v,
            "dataset {k} differs from the uninterrupted run's"
        );
    }
}

/// The uninterrupted run of `text` into `dir/out`.
fn reference(dir: &Path, text: &str, out: &str) {
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let o = yee(
        dir,
        &["run", "s.toml", "-o", out, "--backend", "cpu", "--quiet"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.join(out.replace(".h5", ".checkpoint.h5")).exists());
}

#[test]
fn sigterm_midway_then_resume_on_three_slabs_then_two_equals_an_uninterrupted_run() {
    for precision in ["f32", "f64"] {
        let dir = tmpdir(&format!("term-{precision}"));
        let steps = 3000;
        let text = scene(precision, steps).replace(
            "[[monitor]]\ntype = \"far_field\"",
            "[[monitor]]\ntype = \"mode\"\nname = \"m\"\nplane = { x = 60.0 }\nmodes = 2\n\
             frequencies = { min = 8.0e14, max = 9.0e14, count = 3 }\n[[monitor]]\ntype = \"far_field\"",
        );
        assert!(text.contains("type = \"mode\""));
        // A lumped port and a series RLC: their cell passes' state and their series resume.
        let text = text.replace(
            "[[source]]",
            "[[geometry]]\nshape = \"box\"\ncenter = [-60.0, -40.0, 0.0]\nsize = [0.0, 0.0, 20.0]\n\
             element = { resistance = 100.0, inductance = 1.0e-15, capacitance = 1.0e-18, direction = \"z\" }\n\
             [[source]]\ntype = \"lumped_port\"\nname = \"feed\"\n\
             box = { center = [55.0, -40.0, 0.0], size = [0.0, 0.0, 20.0] }\ndirection = \"+z\"\n\
             waveform = { type = \"gaussian\", frequency = 5.0e14, bandwidth = 4.0e14 }\n\
             frequencies = { min = 4.0e14, max = 6.0e14, count = 3 }\n[[source]]",
        );
        reference(&dir, &text, "full.h5");
        let mut child = spawn_run(&dir, "part.h5", &[], &[]);
        wait_for_steps(&mut child, &dir.join("part.h5"), 200);
        signal(&child, libc::SIGTERM);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
        let done = steps_done(&dir.join("part.h5")).unwrap();
        assert!(done > 0 && (done as usize) < steps, "stopped at {done}");
        let ckpt = dir.join("part.checkpoint.h5");
        assert!(ckpt.exists(), "SIGTERM leaves a checkpoint");
        // The resumed run on 3 slabs is stopped too, and resumed again on 2.
        let mut child = yee_cmd(
            &dir,
            &["resume", "part.h5", "--backend", "cpu", "--slabs", "3"],
        )
        .args(["--threads", "1", "--quiet"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        wait_for_steps(&mut child, &dir.join("part.h5"), done + 200);
        signal(&child, libc::SIGTERM);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
        let again = steps_done(&dir.join("part.h5")).unwrap();
        assert!(
            again > done && (again as usize) < steps,
            "{done} then {again}"
        );
        let o = yee(
            &dir,
            &[
                "resume",
                "part.h5",
                "--backend",
                "cpu",
                "--slabs",
                "2",
                "--quiet",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(!ckpt.exists(), "a finished run removes its checkpoint");
        assert_same(&dir.join("part.h5"), &dir.join("full.h5"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// An S-parameter sweep (two lumped ports) stopped by SIGTERM in its second excitation and
/// started again: the first excitation is reused, the second resumes from the checkpoint
/// beside its file (not from step 0), and the excitation's file and the sweep's S-matrix are
/// those of an uninterrupted sweep to the bit.
#[test]
fn a_sweep_stopped_in_an_excitation_resumes_it_to_the_same_s_matrix() {
    let dir = tmpdir("sweep");
    let ports = "[[source]]\ntype = \"lumped_port\"\nname = \"a\"\n\
        box = { center = [-60.0, -40.0, 0.0], size = [0.0, 0.0, 20.0] }\ndirection = \"+z\"\n\
        waveform = { type = \"gaussian\", frequency = 5.0e14, bandwidth = 4.0e14 }\n\
        frequencies = { min = 4.0e14, max = 6.0e14, count = 3 }\n\
        [[source]]\ntype = \"lumped_port\"\nname = \"b\"\n\
        box = { center = [55.0, -40.0, 0.0], size = [0.0, 0.0, 20.0] }\ndirection = \"+z\"\n\
        waveform = { type = \"gaussian\", frequency = 5.0e14, bandwidth = 4.0e14 }\n\
        frequencies = { min = 4.0e14, max = 6.0e14, count = 3 }\n";
    // Every source of a sweep is a port's: the ports replace the dipole.
    let dipole =
        "[[source]]\ntype = \"dipole\"\ncomponent = \"Ez\"\nposition = [0.0, 10.0, -10.0]\n\
        waveform = { type = \"gaussian\", frequency = 5.0e14, bandwidth = 4.0e14 }\n";
    let base = scene("f64", 3000);
    assert!(base.contains(dipole));
    let text = base.replace(dipole, ports) + "\n[sparameters]\nports = [\"a\", \"b\"]\n";
    reference(&dir, &text, "full.h5");
    let mut child = spawn_run(&dir, "part.h5", &[], &[]);
    wait_for_steps(&mut child, &dir.join("part.port-b.h5"), 200);
    signal(&child, libc::SIGTERM);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(dir.join("part.port-b.checkpoint.h5").exists());
    let o = yee(
        &dir,
        &[
            "run",
            "s.toml",
            "-o",
            "part.h5",
            "--backend",
            "cpu",
            "--overwrite",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.contains("port `a` (1 of 2) is already in") && said.contains("resuming"),
        "{said}"
    );
    assert_same(&dir.join("part.port-b.h5"), &dir.join("full.port-b.h5"));
    let s = |name: &str| -> Vec<u64> {
        let f = hdf5::File::open(dir.join(name)).unwrap();
        let v: Vec<yee::output::Complex> = f.dataset("sparameters/S").unwrap().read_raw().unwrap();
        v.iter()
            .flat_map(|c| [c.r.to_bits(), c.i.to_bits()])
            .collect()
    };
    assert!(
        s("part.h5") == s("full.h5"),
        "the resumed sweep's S differs"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(
    not(feature = "fault-injection"),
    ignore = "a test hook: needs --features fault-injection (scripts/test.sh)"
)]
fn a_kill_while_a_checkpoint_is_written_keeps_the_previous_one() {
    let dir = tmpdir("kill-writing");
    reference(&dir, &scene("f32", 2500), "full.h5");
    // Each checkpoint pauses 300 ms after its fields (a slow disk): kill in the second one.
    let mut child = spawn_run(
        &dir,
        "part.h5",
        &["--checkpoint-every", "0.1s"],
        &[("YEE_TEST_CHECKPOINT_PAUSE_MS", "300")],
    );
    let ckpt = dir.join("part.checkpoint.h5");
    let partial = dir.join(".part.checkpoint.h5.partial");
    let t0 = Instant::now();
    while !(ckpt.exists() && partial.exists()) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(t0.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    let header = yee::checkpoint::read_header(&ckpt).expect("the previous checkpoint reads");
    assert!(header.step > 0);
    let o = yee(&dir, &["resume", "part.h5", "--backend", "cpu", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_same(&dir.join("part.h5"), &dir.join("full.h5"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_at_random_moments_leaves_a_readable_file_and_a_checkpoint_that_resumes() {
    let dir = tmpdir("sigkill");
    let steps = 2500;
    reference(&dir, &scene("f32", steps), "full.h5");
    // A fixed pseudo-random sequence of kill times (a linear congruential generator), so a
    // failure can be reproduced.
    let mut seed: u64 = 0x5eed_1234;
    let mut resumed = 0;
    for round in 0..5 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let after = Duration::from_millis(20 + (seed >> 33) % 400);
        let out = format!("k{round}.h5");
        let mut child = spawn_run(&dir, &out, &["--checkpoint-every", "0.05s"], &[]);
        std::thread::sleep(after);
        let finished = child.try_wait().unwrap().is_some();
        if !finished {
            signal(&child, libc::SIGKILL);
        }
        let _ = child.wait();
        let path = dir.join(&out);
        if !path.exists() {
            continue; // killed before the file was moved into place: nothing to check
        }
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(&path)
            .unwrap_or_else(|e| panic!("round {round}, killed after {after:?}: {e}"));
        let done = f.attr("steps_done").unwrap().read_scalar::<u64>().unwrap();
        for name in ["Ez", "Hy", "time"] {
            let n = f.dataset(&format!("probes/p/{name}")).unwrap().size() as u64;
            assert!(
                n <= done,
                "round {round}: {name} has {n} rows, steps_done {done}"
            );
        }
        drop(f);
        // The last checkpoint resumes to the uninterrupted result.
        if !finished && dir.join(out.replace(".h5", ".checkpoint.h5")).exists() {
            let o = yee(&dir, &["resume", &out, "--backend", "cpu", "--quiet"]);
            assert_eq!(o.status.code(), Some(0), "round {round}: {}", stderr(&o));
            assert_same(&path, &dir.join("full.h5"));
            resumed += 1;
        }
    }
    assert!(resumed > 0, "no round was killed after a checkpoint");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `yee run` with RLIMIT_FSIZE at `limit` bytes.
fn run_limited(dir: &Path, limit: u64, extra: &[&str]) -> Output {
    let mut c = yee_cmd(
        dir,
        &[
            &[
                "run",
                "s.toml",
                "-o",
                "out.h5",
                "--backend",
                "cpu",
                "--overwrite",
            ][..],
            extra,
        ]
        .concat(),
    );
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        c.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().unwrap()
}

#[test]
fn a_file_size_limit_stops_the_run_with_exit_1_and_a_valid_file() {
    let dir = tmpdir("fsize");
    // The result grows to about 6 MB with its snapshots: a 1 MB limit stops it mid-run.
    std::fs::write(dir.join("s.toml"), scene("f32", 2000)).unwrap();
    let o = run_limited(&dir, 1_000_000, &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`out.h5`") && err.contains("ulimit -f"),
        "{err}"
    );
    assert!(err.contains("needs about"), "{err}");
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(dir.join("out.h5"))
        .expect("the result stays valid");
    assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    let done = f.attr("steps_done").unwrap().read_scalar::<u64>().unwrap();
    assert!(done > 0);
    drop(f);

    // Without snapshots the result stays small but the checkpoint (about 650 kB of state)
    // does not fit under 500 kB: the checkpoint is named, the result is kept.
    let text = scene("f32", 2000).replace(
        "[[monitor]]\ntype = \"snapshot\"\nname = \"vol\"\ncomponents = [\"Ez\", \"Hx\"]\nevery = 25\n",
        "",
    );
    std::fs::write(dir.join("s.toml"), text).unwrap();
    let o = run_limited(
        &dir,
        500_000,
        &["--checkpoint-every", "0.01s", "--threads", "1"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`out.checkpoint.h5`") && err.contains("needs about"),
        "{err}"
    );
    assert!(
        !dir.join(".out.checkpoint.h5.partial").exists(),
        "no partial checkpoint left"
    );
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(dir.join("out.h5"))
        .expect("the result stays valid");
    assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stopped run in `dir` (result `part.h5` and its checkpoint) of a short scene.
fn stopped_run(dir: &Path, precision: &str) {
    std::fs::write(dir.join("s.toml"), scene(precision, 3000)).unwrap();
    let mut child = spawn_run(dir, "part.h5", &[], &[]);
    wait_for_steps(&mut child, &dir.join("part.h5"), 100);
    signal(&child, libc::SIGTERM);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
}

fn set_str_attr(path: &Path, name: &str, value: &str) {
    let f = hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open_rw(path)
        .unwrap();
    let v: hdf5::types::VarLenUnicode = value.parse().unwrap();
    f.attr(name).unwrap().write_scalar(&v).unwrap();
}

#[test]
fn a_mismatched_checkpoint_or_changed_result_is_refused() {
    let dir = tmpdir("refuse");
    let resume = |dir: &Path| yee(dir, &["resume", "part.h5", "--backend", "cpu", "--quiet"]);
    // No checkpoint at all.
    std::fs::write(dir.join("part.h5"), b"").unwrap();
    let o = resume(&dir);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no checkpoint `part.checkpoint.h5`"),
        "{}",
        stderr(&o)
    );

    stopped_run(&dir, "f32");
    let ckpt = dir.join("part.checkpoint.h5");
    let good = std::fs::read(&ckpt).unwrap();
    let cases: [(&str, &str, &str); 3] = [
        ("yee_version", "0.0.1", "written by yee 0.0.1"),
        (
            "scene_hash",
            "0123456789abcdef",
            "scene hash 0123456789abcdef",
        ),
        ("precision", "f64", "holds f64 fields"),
    ];
    for (attr, value, want) in cases {
        std::fs::write(&ckpt, &good).unwrap();
        set_str_attr(&ckpt, attr, value);
        let o = resume(&dir);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{attr}: {err}");
        assert!(
            err.contains("refusing the checkpoint") && err.contains(want),
            "{attr}: {err}"
        );
    }
    // The result file changed since: a probe value rewritten.
    std::fs::write(&ckpt, &good).unwrap();
    {
        let f = hdf5::File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open_rw(dir.join("part.h5"))
            .unwrap();
        let ds = f.dataset("probes/p/Ez").unwrap();
        ds.write_slice(&[1.0f32], ndarray::s![0..1]).unwrap();
        let n = ds.size();
        ds.write_slice(&[1.0f32], ndarray::s![n - 1..n]).unwrap();
    }
    let o = resume(&dir);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("changed since the checkpoint"), "{err}");
    // ...or replaced by a run of another scene.
    std::fs::write(
        dir.join("other.toml"),
        scene("f32", 20).replace("2.25", "4.0"),
    )
    .unwrap();
    let o = yee(&dir, &["run", "other.toml", "-o", "other.h5", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::rename(dir.join("other.h5"), dir.join("part.h5")).unwrap();
    let o = resume(&dir);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("another scene"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_checkpoint_interval_is_refused_naming_the_flag_and_plan_shows_the_checkpoint() {
    let dir = tmpdir("flag");
    std::fs::write(dir.join("s.toml"), scene("f32", 10)).unwrap();
    for bad in ["30", "0s", "-5m", "1d", "m", "1e99h"] {
        let flag = format!("--checkpoint-every={bad}");
        let o = yee(&dir, &["run", "s.toml", &flag]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--checkpoint-every"), "{bad}: {err}");
        assert!(err.contains("e.g. 90s, 30m or 2h"), "{bad}: {err}");
    }
    let o = yee(&dir, &["plan", "s.toml"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("checkpoint ") && out.contains("s to write"),
        "{out}"
    );
    let o = yee(&dir, &["plan", "s.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The state: 6 f32 fields over 24 x 20 x 20 cells at least (the psi arrays add to it).
    let bytes = v["checkpoint_bytes"].as_u64().unwrap();
    assert!(bytes > 6 * 4 * 24 * 20 * 20, "{bytes}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TF/SF plane wave on a Drude box and a dielectric box, CPML around, a PEC z minimum, a
/// flux plane and a closed far-field box: the TF/SF 1-D grid, the dispersive state, the CPML
/// psi arrays and both kinds of surface DFT in one state. (The metal is a box, not a sphere:
/// a metal's curved surface has surface ports, which run on one GPU, and this state also moves
/// between engines over several.)
const ROUND_TRIP: &str = r#"
[simulation]
name = "rt"
length_unit = "mm"
cell_size = 1.0
size = [24.0, 20.0, 18.0]
steps = 90
courant = 0.99
precision = "PRECISION"
[boundaries]
default = { type = "pml", cells = 4 }
z_min = { type = "pec" }
[materials]
metal = { epsilon = 1.0, drude = [{ frequency = 3.0e10, damping = 1.0e9 }] }
glass = { epsilon = 3.0, conductivity = 0.2 }
[[geometry]]
shape = "box"
material = "metal"
center = [1.0, 1.0, 0.0]
size = [3.0, 3.0, 3.0]
[[geometry]]
shape = "box"
material = "glass"
center = [-2.5, -1.5, 0.0]
size = [2.0, 2.0, 2.0]
[[source]]
type = "tfsf"
box = { center = [0.0, 0.0, 0.0], size = [8.0, 6.0, 4.0] }
direction = [1.0, 2.0, 3.0]
polarization = [-2.0, 1.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e10, bandwidth = 2.0e10 }
[[monitor]]
type = "flux"
name = "plane"
plane = { x = 4.0 }
frequencies = { min = 2.0e10, max = 4.0e10, count = 3 }
[[monitor]]
type = "far_field"
name = "far"
box = { center = [0.0, 0.0, 0.0], size = [13.0, 9.0, 7.0] }
frequencies = { min = 2.0e10, max = 4.0e10, count = 2 }
theta = { min = 0.0, max = 180.0, count = 3 }
phi = { min = 0.0, max = 90.0, count = 2 }
"#;

fn round_trip<T: yee::real::Real>(precision: &str) {
    use yee::backend::cpu::CpuBackend;
    use yee::backend::cuda::{CudaEngine, EngineOptions};
    use yee::backend::{Backend, State};
    use yee::decomp::split_even;
    use yee::run::Stepper;
    // The host kernels' constant tables are globals of the shared object.
    let _one_at_a_time = serial();
    let text = ROUND_TRIP.replace("PRECISION", precision);
    let (model, _) = yee::scene::load_str(&text, "rt.toml").unwrap_or_else(|e| panic!("{e}"));
    let nx = model.grid.shape[0];
    let copies = |ranges: &[yee::decomp::SlabRange]| {
        let h = yee::decomp::HaloPlan::new(ranges, &model.boundaries);
        h.after_h
            .iter()
            .chain(&h.after_e)
            .cloned()
            .collect::<Vec<_>>()
    };
    // Steps with the flux DFTs accumulated, as the time loop does.
    fn steps<B: Backend>(s: &mut Stepper<'_, B>, n: usize, dt: f64) {
        for _ in 0..n {
            s.step();
            let k = s.steps_done();
            s.backend.accumulate_flux(k, dt);
        }
    }
    let dt = model.grid.dt;
    let (a, b, c) = (30, 35, 25);

    // The reference: the CPU on one slab, all the way.
    let one = split_even(nx, 1);
    let mut cpu = CpuBackend::<T>::new(&model, &one);
    let mut s = Stepper::new(&model, &mut cpu, &one);
    steps(&mut s, a, dt);
    let at_a = s.backend.export_state().unwrap();
    steps(&mut s, b, dt);
    let at_ab = s.backend.export_state().unwrap();
    steps(&mut s, c, dt);
    let want = s.backend.export_state().unwrap();
    // The TF/SF grid, the poles and both kinds of surface DFT are in the state.
    let has = |prefix: &str| at_a.arrays.iter().any(|a| a.name.starts_with(prefix));
    assert!(has("tfsf.") && has("dispersive.") && at_a.flux.len() == 2);

    // The checkpoint file carries the state unchanged.
    let dir = tmpdir(&format!("round-trip-{precision}"));
    let path = dir.join("rt.checkpoint.h5");
    let mut saved = at_a.clone();
    saved.step = a;
    yee::checkpoint::write(&path, &model, &saved, &Default::default(), "cpu").unwrap();
    let loaded: State<T> = yee::checkpoint::read_state(&path, &model).unwrap();
    assert!(loaded == saved, "the checkpoint file changes the state");

    // The host-compiled CUDA engine, 3 slabs on 2 emulated GPUs, from step a to a + b.
    let three = split_even(nx, 3);
    let dev = HostDevice::new(model.precision, 2, true);
    let mut gpu = CudaEngine::<HostDevice, T>::new(
        dev,
        &model,
        &three,
        &[0, 0, 1],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    gpu.import_state(&loaded, &copies(&three)).unwrap();
    let back = gpu.export_state().unwrap();
    assert_state_eq(&back, &loaded, "the host engine's import then export");
    // Written part by part (two planes of fields a part here), the checkpoint holds the
    // exported state.
    let plane = model.grid.shape[1] * model.grid.shape[2];
    let two_planes = 2 * 6 * plane * std::mem::size_of::<T>();
    gpu.set_checkpoint_part_bytes(two_planes + 1);
    let mut s = Stepper::new(&model, &mut gpu, &three);
    s.resume_after(a);
    steps(&mut s, b, dt);
    let mid = s.backend.export_state().unwrap();
    assert_state_eq(&mid, &at_ab, "host engine after the CPU");
    let (parts, written) = write_in_parts(s.backend, &model, &dir.join("gpu.h5"), a + b);
    assert_state_eq(
        &written,
        &at_ab,
        "the host engine's checkpoint, part by part",
    );
    let field_parts: usize = three.iter().map(|r| r.len().div_ceil(2)).sum();
    assert_eq!(
        parts,
        (field_parts + 3 + 1, 2 * plane),
        "parts and the largest"
    );

    // Back on the CPU, 2 slabs, to the end.
    let two = split_even(nx, 2);
    let mut cpu2 = CpuBackend::<T>::new(&model, &two);
    // Loaded a plane of fields at a time.
    cpu2.set_checkpoint_part_bytes(1);
    cpu2.import_state(&mid, &copies(&two)).unwrap();
    let (parts, written) = write_in_parts(&mut cpu2, &model, &dir.join("cpu.h5"), a + b);
    assert_state_eq(&written, &mid, "the CPU's checkpoint, part by part");
    assert_eq!(
        parts,
        (nx + 2 + 1, plane),
        "a plane a part, then a part per slab and the DFTs"
    );
    // Read back from the file part by part, into either engine.
    let from_file = |path: PathBuf| {
        let model = model.clone();
        move |request: Option<&yee::backend::StateRequest>| {
            yee::checkpoint::read_part::<T>(&path, &model, request).map_err(|e| e.to_string())
        }
    };
    let mut cpu3 = CpuBackend::<T>::new(&model, &three);
    cpu3.set_checkpoint_part_bytes(two_planes + 1);
    cpu3.import_state_from(&from_file(dir.join("cpu.h5")), &copies(&three))
        .unwrap();
    assert_state_eq(
        &cpu3.export_state().unwrap(),
        &mid,
        "the CPU, loaded part by part",
    );
    let dev = HostDevice::new(model.precision, 2, true);
    let mut gpu2 = CudaEngine::<HostDevice, T>::new(
        dev,
        &model,
        &two,
        &[0, 1],
        EngineOptions::default(),
        "host",
    )
    .unwrap();
    gpu2.set_checkpoint_part_bytes(1);
    gpu2.import_state_from(&from_file(dir.join("cpu.h5")), &copies(&two))
        .unwrap();
    assert_state_eq(
        &gpu2.export_state().unwrap(),
        &mid,
        "the host engine, loaded part by part",
    );
    // Its halo planes too: a step from there is the CPU's step.
    let mut s = Stepper::new(&model, &mut gpu2, &two);
    s.resume_after(a + b);
    steps(&mut s, 1, dt);
    let gpu_next = s.backend.export_state().unwrap();
    let mut s = Stepper::new(&model, &mut cpu3, &three);
    s.resume_after(a + b);
    steps(&mut s, 1, dt);
    assert_state_eq(
        &s.backend.export_state().unwrap(),
        &gpu_next,
        "a step after loading",
    );
    let mut s = Stepper::new(&model, &mut cpu2, &two);
    s.resume_after(a + b);
    steps(&mut s, c, dt);
    let got = s.backend.export_state().unwrap();
    assert_state_eq(&got, &want, "CPU after the host engine");

    // A state of another model does not fit, and says why.
    let mut wrong = want.clone();
    wrong.fields[0].pop();
    let err = cpu2.import_state(&wrong, &copies(&two)).unwrap_err();
    assert!(err.to_string().contains("field Ex"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Write `backend`'s state after `step` steps of `model` into a checkpoint at `path` part by
/// part ([`yee::backend::Backend::write_state`]) and read it back: (the number of parts, the
/// most field values of one component in a part), and the state read.
fn write_in_parts<B: yee::backend::Backend>(
    backend: &mut B,
    model: &yee::model::Model,
    path: &Path,
    step: usize,
) -> ((usize, usize), yee::backend::State<B::Real>) {
    use yee::backend::{State, StatePlace, StateShape, StateSink};
    struct Counting<'a, T> {
        inner: &'a mut dyn StateSink<T>,
        parts: usize,
        largest: usize,
    }
    impl<T> StateSink<T> for Counting<'_, T> {
        fn begin(&mut self, whole: &StateShape) -> Result<(), String> {
            self.inner.begin(whole)
        }
        fn part(&mut self, part: &State<T>, place: &StatePlace) -> Result<(), String> {
            self.parts += 1;
            self.largest = self.largest.max(part.fields[0].len());
            self.inner.part(part, place)
        }
    }
    let mut counted = (0, 0);
    let written = yee::checkpoint::write_with::<B::Real>(
        path,
        model,
        step,
        &Default::default(),
        "test",
        &mut |sink| {
            let mut counting = Counting {
                inner: sink,
                parts: 0,
                largest: 0,
            };
            let r = backend.write_state(step, &mut counting);
            counted = (counting.parts, counting.largest);
            r
        },
    )
    .unwrap();
    assert!(written.is_some(), "a checkpoint was written");
    let mut state: State<B::Real> = yee::checkpoint::read_state(path, model).unwrap();
    assert_eq!(state.step, step);
    state.step = 0;
    (counted, state)
}

fn assert_state_eq<T: yee::real::Real>(
    got: &yee::backend::State<T>,
    want: &yee::backend::State<T>,
    what: &str,
) {
    let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
    for c in 0..6 {
        assert!(
            bits(&got.fields[c]) == bits(&want.fields[c]),
            "{what}: field {c}"
        );
    }
    let names =
        |st: &yee::backend::State<T>| st.arrays.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(got), names(want), "{what}: the registered arrays");
    for (ga, wa) in got.arrays.iter().zip(&want.arrays) {
        let (g, w) = (bits(&ga.values), bits(&wa.values));
        assert_eq!(g.len(), w.len(), "{what}: {} length", wa.name);
        let diff: Vec<usize> = (0..g.len()).filter(|&i| g[i] != w[i]).collect();
        assert!(
            diff.is_empty(),
            "{what}: {}: {} of {} values differ, first at {:?}: {:?} vs {:?}",
            wa.name,
            diff.len(),
            g.len(),
            &diff[..diff.len().min(8)],
            diff.first().map(|&i| ga.values[i]),
            diff.first().map(|&i| wa.values[i]),
        );
    }
    assert!(got.flux == want.flux, "{what}: surface DFTs");
}

#[test]
fn the_state_goes_cpu_to_host_cuda_engine_to_cpu_bit_for_bit() {
    round_trip::<f32>("f32");
    round_trip::<f64>("f64");
}

#[test]
fn sigint_writes_a_checkpoint_only_with_checkpoint_every() {
    let dir = tmpdir("sigint");
    std::fs::write(dir.join("s.toml"), scene("f32", 3000)).unwrap();
    for (extra, want) in [(&["--checkpoint-every", "1h"][..], true), (&[][..], false)] {
        let mut child = spawn_run(&dir, "i.h5", extra, &[]);
        wait_for_steps(&mut child, &dir.join("i.h5"), 100);
        signal(&child, libc::SIGINT);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
        assert_eq!(
            dir.join("i.checkpoint.h5").exists(),
            want,
            "{extra:?}: {}",
            stderr(&o)
        );
        let _ = std::fs::remove_file(dir.join("i.checkpoint.h5"));
        // The next run's wait must see its own file.
        let _ = std::fs::remove_file(dir.join("i.h5"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_blown_up_state_never_replaces_a_checkpoint() {
    // An f32 source of amplitude 1e37 overflows the fields within a few steps.
    let dir = tmpdir("nan");
    let text = scene("f32", 3000).replace(
        "waveform = { type = \"gaussian\", frequency = 5.0e14, bandwidth = 4.0e14 }",
        "waveform = { type = \"gaussian\", frequency = 5.0e14, bandwidth = 4.0e14 }\namplitude = 1.0e37",
    );
    std::fs::write(dir.join("s.toml"), &text).unwrap();
    let o = yee(
        &dir,
        &[
            "run",
            "s.toml",
            "-o",
            "out.h5",
            "--backend",
            "cpu",
            "--quiet",
            "--checkpoint-every",
            "0.001s",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("NaN or infinite"), "{err}");
    let ckpt = dir.join("out.checkpoint.h5");
    if ckpt.exists() {
        let (model, _) = yee::scene::load_str(&text, "s.toml").unwrap();
        let st: yee::backend::State<f32> = yee::checkpoint::read_state(&ckpt, &model).unwrap();
        assert!(
            st.fields.iter().flatten().all(|v| v.is_finite()),
            "a checkpoint holds a blown-up state"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a real GPU (`scripts/gpu-check.sh` runs it with `--ignored`): a CPU state imported into
/// the CUDA engine (2 slabs on 2 logical GPUs of one card) comes back bit for bit, and after
/// more steps on the GPU it carries on as the CPU does. A GPU cannot flush f64 subnormals as
/// the CPU's threads do, so the stepped state is compared within 1e-5 (f32) / 1e-11 (f64) of
/// each array's largest magnitude, the bounds of `tests/cuda_backend.rs` scaled to these 30
/// steps.
#[cfg(feature = "cuda")]
#[test]
#[ignore]
fn the_state_goes_cpu_to_a_real_gpu_and_back_f32_and_f64() {
    fn on_gpu<T: yee::real::Real>(precision: &str) {
        use yee::backend::cpu::CpuBackend;
        use yee::backend::cuda::{CudaDevice, CudaEngine, EngineOptions};
        use yee::backend::Backend;
        use yee::decomp::split_even;
        use yee::run::Stepper;
        let text = ROUND_TRIP.replace("PRECISION", precision);
        let (model, _) = yee::scene::load_str(&text, "rt.toml").unwrap_or_else(|e| panic!("{e}"));
        let nx = model.grid.shape[0];
        let dt = model.grid.dt;
        let (a, b) = (30, 30);
        let one = split_even(nx, 1);
        let mut cpu = CpuBackend::<T>::new(&model, &one);
        let mut s = Stepper::new(&model, &mut cpu, &one);
        for _ in 0..a {
            s.step();
            let k = s.steps_done();
            s.backend.accumulate_flux(k, dt);
        }
        let at_a = s.backend.export_state().unwrap();
        for _ in 0..b {
            s.step();
            let k = s.steps_done();
            s.backend.accumulate_flux(k, dt);
        }
        let want = s.backend.export_state().unwrap();

        let two = split_even(nx, 2);
        let h = yee::decomp::HaloPlan::new(&two, &model.boundaries);
        let copies: Vec<_> = h.after_h.iter().chain(&h.after_e).cloned().collect();
        let dev =
            CudaDevice::new_logical(&[0, 0], model.precision).unwrap_or_else(|e| panic!("{e}"));
        let mut gpu = CudaEngine::<CudaDevice, T>::new(
            dev,
            &model,
            &two,
            &[0, 1],
            EngineOptions::default(),
            "cuda",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        gpu.import_state(&at_a, &copies).unwrap();
        assert_state_eq(
            &gpu.export_state().unwrap(),
            &at_a,
            "GPU import then export",
        );
        let mut s = Stepper::new(&model, &mut gpu, &two);
        s.resume_after(a);
        for _ in 0..b {
            s.step();
            let k = s.steps_done();
            s.backend.accumulate_flux(k, dt);
        }
        let got = s.backend.export_state().unwrap();
        // Written part by part from the GPUs, the checkpoint holds their exported state.
        let dir = tmpdir(&format!("gpu-parts-{precision}"));
        let (_, written) = write_in_parts(s.backend, &model, &dir.join("gpu.h5"), a + b);
        assert_state_eq(&written, &got, "the GPUs' checkpoint, part by part");
        let _ = std::fs::remove_dir_all(&dir);
        let tol = if precision == "f32" { 1e-5 } else { 1e-11 };
        let close = |g: &[T], w: &[T], what: &str| {
            assert_eq!(g.len(), w.len(), "{what}");
            let scale = w
                .iter()
                .fold(0.0f64, |m, v| m.max(v.to_f64().abs()))
                .max(1e-300);
            let worst = g
                .iter()
                .zip(w)
                .fold(0.0f64, |m, (x, y)| m.max((x.to_f64() - y.to_f64()).abs()));
            assert!(
                worst <= tol * scale,
                "{precision} {what}: {worst:e} of {scale:e}"
            );
        };
        for c in 0..6 {
            close(&got.fields[c], &want.fields[c], &format!("field {c}"));
        }
        for (g, w) in got.arrays.iter().zip(&want.arrays) {
            if g.name.starts_with("dispersive.") {
                close(&g.values, &w.values, &g.name);
            }
        }
    }
    on_gpu::<f32>("f32");
    on_gpu::<f64>("f64");
}

/// A Bloch cell: an oblique wave on a Drude slab in a cell periodic along y and z, with a
/// probe, a snapshot and a flux plane with its DFT fields (both field sets' state, the
/// imaginary set's among the checkpoint's `bloch.im.*` arrays).
const BLOCH: &str = r#"
[simulation]
length_unit = "um"
cell_size = 0.025
size = [6.0, 0.5, 0.1]
steps = 4000
precision = "f64"
[boundaries]
default = { type = "periodic" }
x_min = { type = "pml", cells = 20 }
x_max = { type = "pml", cells = 20 }
[materials]
metal = { epsilon = 2.0, drude = [{ frequency = 4.0e14, damping = 3.0e13 }] }
[[geometry]]
shape = "box"
material = "metal"
center = [1.0, 0.0, 0.0]
size = [0.3, 10.0, 10.0]
[[source]]
type = "plane_wave"
direction = [0.9, 0.4, 0.0]
polarization = "Ez"
position = -1.5
waveform = { type = "gaussian", frequency = 2.0e14, bandwidth = 1.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [0.5, 0.1, 0.0]
components = ["Ez", "Hy"]
[[monitor]]
type = "snapshot"
name = "s"
components = ["Ez"]
plane = { z = 0.0 }
every = 100
[[monitor]]
type = "flux"
name = "t"
plane = { x = 2.0 }
frequencies = { min = 1.5e14, max = 2.5e14, count = 3 }
fields = true
"#;

#[test]
fn a_bloch_cell_stopped_and_resumed_on_three_slabs_equals_an_uninterrupted_run() {
    let dir = tmpdir("bloch");
    reference(&dir, BLOCH, "full.h5");
    let mut child = spawn_run(&dir, "part.h5", &[], &[]);
    wait_for_steps(&mut child, &dir.join("part.h5"), 300);
    signal(&child, libc::SIGTERM);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    let done = steps_done(&dir.join("part.h5")).unwrap();
    assert!(done > 0 && done < 4000, "stopped at {done}");
    let o = yee(
        &dir,
        &[
            "resume",
            "part.h5",
            "--backend",
            "cpu",
            "--slabs",
            "3",
            "--quiet",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_same(&dir.join("part.h5"), &dir.join("full.h5"));
    let _ = std::fs::remove_dir_all(&dir);
}
