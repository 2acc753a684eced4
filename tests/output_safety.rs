//! A run never destroys a result: an `--overwrite` that fails leaves the old file whole, a
//! reader of the old file keeps it, a second writer is refused, the XDMF sidecar follows the
//! result, a running result can be read, a full disk is reported in one sentence with a valid
//! file left behind, and signals sent through GNU `timeout` stop the run in order.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("yee-safety-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A small dipole scene of `steps` steps with a probe, and a whole-volume snapshot every
/// `every` steps when given.
fn scene(steps: u64, every: Option<u64>) -> String {
    let mut s = format!(
        r#"[simulation]
name = "safe"
length_unit = "um"
cell_size = 0.05
size = [1.0, 1.0, 1.0]
steps = {steps}
[boundaries]
default = {{ type = "pml", cells = 5 }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 1.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [0.1, 0.0, 0.0]
components = ["Ez"]
"#
    );
    if let Some(every) = every {
        s += &format!(
            "[[monitor]]\ntype = \"snapshot\"\nname = \"vol\"\ncomponents = [\"Ez\"]\nevery = {every}\n"
        );
    }
    s
}

fn yee(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_yee"))
        .arg("run")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Hidden files yee leaves in `dir` (partial files, lock files): there must be none.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

fn probe(f: &hdf5::File) -> Vec<f32> {
    f.dataset("probes/p/Ez").unwrap().read_raw::<f32>().unwrap()
}

/// Start a long run writing `out` in `dir` and return once its file exists (the start line).
fn start_long_run(dir: &Path, out: &str) -> Child {
    std::fs::write(dir.join("long.toml"), scene(100_000_000, Some(1_000_000))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_yee"))
        .args([
            "run",
            "long.toml",
            "-o",
            out,
            "--backend",
            "cpu",
            "--threads",
            "1",
        ])
        .current_dir(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // "running ..." comes after the file was created and moved into place.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let l = lines.next().expect("a start line").unwrap();
        if l.starts_with("running ") {
            break;
        }
    }
    // Keep draining stderr so the run never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

fn interrupt(mut child: Child) -> Option<i32> {
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    child.wait().unwrap().code()
}

#[test]
fn an_overwrite_replaces_the_result_whole_while_a_reader_keeps_the_old_one() {
    let dir = tmpdir("reader");
    std::fs::write(dir.join("old.toml"), scene(20, Some(10))).unwrap();
    std::fs::write(dir.join("new.toml"), scene(30, Some(10))).unwrap();
    let o = yee(&dir, &["old.toml", "-o", "r.h5", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A notebook holding the old result open (HDF5 takes a shared lock on it).
    let old = hdf5::File::open(dir.join("r.h5")).unwrap();
    let before = probe(&old);
    assert_eq!(before.len(), 20);
    let o = yee(&dir, &["new.toml", "-o", "r.h5", "--quiet", "--overwrite"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "an --overwrite must not be stopped by a reader of the old file: {}",
        stderr(&o)
    );
    assert_eq!(probe(&old), before, "the reader still sees the old result");
    drop(old);
    let new = hdf5::File::open(dir.join("r.h5")).unwrap();
    assert_eq!(probe(&new).len(), 30, "the path holds the new result");
    assert!(new.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_overwrite_leaves_the_old_result_untouched() {
    let dir = tmpdir("failed");
    std::fs::write(dir.join("s.toml"), scene(20, Some(10))).unwrap();
    let o = yee(&dir, &["s.toml", "-o", "r.h5", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let h5 = std::fs::read(dir.join("r.h5")).unwrap();
    let xmf = std::fs::read(dir.join("r.xmf")).unwrap();
    // A file-size limit of 2 kB (`ulimit -f` counts 512-byte blocks in sh): the new file's
    // header cannot be written, so the run fails before it has a valid file.
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 4 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_yee"))
        .args(["run", "s.toml", "-o", "r.h5", "--quiet", "--overwrite"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        std::fs::read(dir.join("r.h5")).unwrap(),
        h5,
        "old result changed"
    );
    assert_eq!(
        std::fs::read(dir.join("r.xmf")).unwrap(),
        xmf,
        "old sidecar changed"
    );
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    // One sentence: which file, how much was written, how much more is needed; no HDF5 stack.
    // (The scene's own warnings, e.g. that this short run ends before the pulse peaks, come
    // before it.)
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("warning:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    for want in [
        "error: cannot write `r.h5`",
        "written",
        "needs about",
        "more",
    ] {
        assert!(err.contains(want), "`{want}` missing: {err}");
    }
    for raw in ["H5", "errno", "bytes actually written"] {
        assert!(!err.contains(raw), "raw HDF5 text `{raw}`: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_writer_is_refused_even_with_overwrite() {
    let dir = tmpdir("second");
    let child = start_long_run(&dir, "busy.h5");
    std::fs::write(dir.join("s.toml"), scene(10, None)).unwrap();
    // `busy.hdf5` is another file but shares the sidecar `busy.xmf`.
    let pid = format!("another yee run (process {})", child.id());
    for (args, want) in [
        (
            &["s.toml", "-o", "busy.h5", "--overwrite"][..],
            "`busy.h5` is being written by",
        ),
        (
            &["s.toml", "-o", "busy.h5"][..],
            "`busy.h5` is being written by",
        ),
        (
            &["s.toml", "-o", "busy.hdf5", "--overwrite"][..],
            "`busy.hdf5` shares its sidecar `busy.xmf` with `busy.h5`, which is being written by",
        ),
    ] {
        let o = yee(&dir, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && err.contains(&pid), "{args:?}: {err}");
    }
    assert!(!dir.join("busy.hdf5").exists());
    assert_eq!(interrupt(child), Some(130));
    let f = hdf5::File::open(dir.join("busy.h5")).unwrap();
    assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_running_result_can_be_read() {
    let dir = tmpdir("live");
    let child = start_long_run(&dir, "live.h5");
    // HDF5's default open takes a shared lock: the writer must not hold an exclusive one.
    let opened = hdf5::File::open(dir.join("live.h5")).map(|f| {
        (
            f.attr("complete").unwrap().read_scalar::<bool>().unwrap(),
            f.attr("steps").unwrap().read_scalar::<u64>().unwrap(),
        )
    });
    let code = interrupt(child);
    assert_eq!(
        opened.map_err(|e| e.to_string()),
        Ok((false, 100_000_000)),
        "the running result opens with HDF5's default (locking) access"
    );
    assert_eq!(code, Some(130));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_named_like_its_sidecar_is_refused() {
    let dir = tmpdir("xmf");
    std::fs::write(dir.join("s.toml"), scene(10, Some(5))).unwrap();
    for name in ["x.xmf", "X.XMF"] {
        let o = yee(&dir, &["s.toml", "-o", name, "--quiet"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(name) && err.contains("sidecar"), "{err}");
    }
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("s.toml")],
        "nothing is written"
    );
    let o = yee(&dir, &["s.toml", "-o", ".", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "a folder: {}", stderr(&o));
    assert!(stderr(&o).contains("is a folder"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_sidecar_follows_the_result() {
    let dir = tmpdir("sidecar");
    std::fs::write(dir.join("snap.toml"), scene(10, Some(5))).unwrap();
    std::fs::write(dir.join("nosnap.toml"), scene(10, None)).unwrap();
    // A user's own foo.xmf is not replaced without --overwrite.
    std::fs::write(dir.join("foo.xmf"), "my own notes").unwrap();
    let o = yee(&dir, &["snap.toml", "-o", "foo.h5", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`foo.xmf` already exists"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("foo.xmf")).unwrap(),
        "my own notes"
    );
    assert!(!dir.join("foo.h5").exists());
    // Nor with --overwrite, which replaces only an earlier result's sidecar (XDMF).
    let o = yee(
        &dir,
        &["snap.toml", "-o", "foo.h5", "--quiet", "--overwrite"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`foo.xmf`: it is not an XDMF file"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("foo.xmf")).unwrap(),
        "my own notes"
    );
    assert!(!dir.join("foo.h5").exists());
    // An earlier sidecar is rewritten with the result...
    std::fs::write(
        dir.join("foo.xmf"),
        "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"3.0\"/>\n",
    )
    .unwrap();
    let o = yee(
        &dir,
        &["snap.toml", "-o", "foo.h5", "--quiet", "--overwrite"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let xmf = std::fs::read_to_string(dir.join("foo.xmf")).unwrap();
    assert!(
        xmf.contains("<Xdmf") && xmf.contains("foo.h5:/snapshots/vol/Ez"),
        "{xmf}"
    );
    // ...and removed when the new result has no snapshots to describe.
    let o = yee(
        &dir,
        &["nosnap.toml", "-o", "foo.h5", "--quiet", "--overwrite"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.join("foo.xmf").exists(), "a stale sidecar was left");
    // A sidecar that cannot be written is reported, even with --quiet.
    std::fs::create_dir(dir.join("foo.xmf")).unwrap();
    std::fs::write(dir.join("foo.xmf/keep"), "").unwrap();
    let o = yee(
        &dir,
        &["snap.toml", "-o", "foo.h5", "--quiet", "--overwrite"],
    );
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the result itself is complete: {err}"
    );
    assert!(err.contains("warning:") && err.contains("foo.xmf"), "{err}");
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_size_a_finished_file_needs_is_estimated() {
    // The "needs about" of a write error: compare it with a finished file.
    let dir = tmpdir("size");
    let text = scene(400, Some(5));
    std::fs::write(dir.join("s.toml"), &text).unwrap();
    let o = yee(&dir, &["s.toml", "-o", "out.h5", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let actual = std::fs::metadata(dir.join("out.h5")).unwrap().len() as f64;
    let model = common::model(&text);
    let data = yee::plan::output_bytes(&model).total as f64;
    // 80 frames of 20^3 f32 values dominate (2.56 MB); HDF5's metadata (object headers, chunk
    // indexes) is not counted. 10% allows for that and still catches a missing monitor or a
    // wrong bytes-per-value factor (a factor of 2 for f64).
    assert!(
        (data - actual).abs() < 0.1 * actual,
        "estimated {data} B of data, the file has {actual} B"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk(PathBuf);
impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallDisk(dir.to_path_buf()))
    }
}
impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_reported_in_one_sentence_and_leaves_a_valid_file() {
    let dir = tmpdir("full");
    let disk = dir.join("disk");
    std::fs::create_dir(&disk).unwrap();
    // 400 steps with a 20^3 snapshot every 5 steps: about 2.7 MB on a 1 MB disk.
    std::fs::write(dir.join("s.toml"), scene(400, Some(5))).unwrap();
    let Some(mounted) = SmallDisk::mount(&disk, "1m") else {
        eprintln!("skipped: mounting a small tmpfs is not permitted here");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let o = yee(&dir, &["s.toml", "-o", "disk/out.h5", "--backend", "cpu"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    let e = errors[0];
    for want in [
        "`disk/out.h5`",
        "the disk is full after",
        "written",
        "needs about",
        "more",
    ] {
        assert!(e.contains(want), "`{want}` missing: {e}");
    }
    for raw in ["H5", "errno", "18446744073709551615"] {
        assert!(!err.contains(raw), "raw HDF5 text `{raw}`: {err}");
    }
    assert!(
        err.contains("stopped:"),
        "the summary line is printed: {err}"
    );
    assert!(
        err.contains(
            "warning: the result needs about 2.7 MB but the disk holding `disk/out.h5` has"
        ),
        "a warning before the run: {err}"
    );
    // The file holds everything up to the failure, consistently.
    let f = hdf5::File::open(disk.join("out.h5")).unwrap();
    assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
    let done = f.attr("steps_done").unwrap().read_scalar::<u64>().unwrap();
    assert!(done > 0 && done < 400, "{done}");
    assert_eq!(probe(&f).len() as u64, done);
    let frames = f
        .dataset("snapshots/vol/step")
        .unwrap()
        .read_raw::<u64>()
        .unwrap();
    assert_eq!(frames.len() as u64, done / 5);
    drop(f);
    drop(mounted);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn signals_through_timeout_stop_in_order() {
    if Command::new("timeout").arg("--version").output().is_err() {
        eprintln!("skipped: GNU timeout is not installed");
        return;
    }
    let dir = tmpdir("timeout");
    std::fs::write(dir.join("s.toml"), scene(100_000_000, Some(1000))).unwrap();
    // timeout sends the signal to the run and to its process group at once: the duplicate
    // must not cut the orderly stop short. SIGTERM also writes a checkpoint (tests/checkpoint.rs).
    for (signal, code) in [("INT", 130), ("TERM", 143), ("INT", 130), ("TERM", 143)] {
        let _ = std::fs::remove_file(dir.join("out.h5"));
        let _ = std::fs::remove_file(dir.join("out.xmf"));
        let o = Command::new("timeout")
            .args(["--preserve-status", "-s", signal, "1"])
            .arg(env!("CARGO_BIN_EXE_yee"))
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
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "SIG{signal}: {err}");
        assert!(
            err.contains("stopped:"),
            "SIG{signal}: no summary line: {err}"
        );
        assert!(
            dir.join("out.xmf").exists(),
            "SIG{signal}: no sidecar: {err}"
        );
        let f = hdf5::File::open(dir.join("out.h5")).unwrap();
        assert!(!f.attr("complete").unwrap().read_scalar::<bool>().unwrap());
        assert!(f.attr("steps_done").unwrap().read_scalar::<u64>().unwrap() > 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_result_is_written_with_no_metadata_between_flushes() {
    // HDF5 writes dirty metadata out when its cache needs room unless told not to: a chunk
    // index on disk could then name chunks allocated after the last flush, and a run killed
    // then left a result `yee resume` failed to continue ("addr overflow" at its first
    // flush; tests/checkpoint.rs kills runs at random moments). The writers open results
    // through `output::result_access`, which keeps every change in memory until a flush.
    let dir = tmpdir("metadata-cache");
    let path = dir.join("r.h5");
    let file = hdf5::File::with_options()
        .with_fapl(yee::output::result_access)
        .create(&path)
        .unwrap();
    let cache = file.access_plist().unwrap().mdc_config();
    assert!(!cache.evictions_enabled, "{cache:?}");
    drop(file);
    let _ = std::fs::remove_dir_all(&dir);
}
