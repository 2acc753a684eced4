//! Claiming an output path before a run: the checks that keep earlier results safe, and the
//! advisory lock that stops two runs from writing the same result.
//!
//! A result is a pair: the HDF5 file and its XDMF sidecar (`<stem>.xmf`). Both follow one rule:
//! an existing file is replaced only with `--overwrite`. The lock is a small file beside them,
//! `.<stem>.yee-lock`, held with `flock` for the whole run. It is separate from the result, so
//! HDF5 readers, which take their own shared lock on the result itself, are never in its way;
//! and it is keyed by the stem, so `a.h5` and `a.hdf5`, which share `a.xmf`, exclude each other.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The XDMF sidecar written next to `output`.
pub fn sidecar_path(output: &Path) -> PathBuf {
    output.with_extension("xmf")
}

/// The file beside `path` that a new version of it is written to before it is renamed into
/// place: `.<name>.partial-<pid>`, hidden and unique to this process.
pub fn partial_path(path: &Path) -> PathBuf {
    beside(path, &format!(".partial-{}", std::process::id()))
}

/// `.<file name><suffix>` in the folder of `path`.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}{suffix}"))
}

/// The lock file of `output`: keyed by the sidecar's stem.
fn lock_path(output: &Path) -> PathBuf {
    beside(&output.with_extension(""), ".yee-lock")
}

/// True when `output` names the sidecar itself (`-o name.xmf`): the sidecar would be written
/// over the result.
pub fn collides_with_sidecar(output: &Path) -> bool {
    output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xmf"))
}

/// Why an output path cannot be used (invalid input: exit code 2, nothing written).
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// `-o name.xmf`: the sidecar has that name.
    #[error("cannot write `{0}`: yee writes the XDMF sidecar of a result to `<name>.xmf`, so this name would put the sidecar over the result; choose a name such as `{1}`")]
    SidecarCollision(PathBuf, PathBuf),
    /// The folder of the output does not exist.
    #[error("cannot write `{}`: the folder `{}` does not exist", .output.display(), .folder.display())]
    NoFolder {
        /// The output file.
        output: PathBuf,
        /// Its missing folder.
        folder: PathBuf,
    },
    /// The output names a folder.
    #[error("cannot write `{}`: it is a folder; give a file name, e.g. -o {}", .0.display(), .0.join("result.h5").display())]
    IsFolder(PathBuf),
    /// Another run holds the lock.
    #[error("`{}` {what} another yee run{pid}; wait for it to finish, or choose another file with -o", .output.display())]
    Busy {
        /// The output file.
        output: PathBuf,
        /// "is being written by", or which file of the other run shares the sidecar.
        what: String,
        /// " (process N)" when the other run said who it is, else empty.
        pid: String,
    },
    /// The result or its sidecar exists and `--overwrite` was not given.
    #[error("`{}` already exists{what}; pass --overwrite to replace it, or choose another file with -o", .path.display())]
    Exists {
        /// The existing file.
        path: PathBuf,
        /// What it is, when it is the sidecar.
        what: String,
    },
    /// The lock file could not be created or locked.
    #[error("cannot write `{}`: its lock file `{}` cannot be used: {source}", .output.display(), .lock.display())]
    Lock {
        /// The output file.
        output: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// The right to write one output, held until dropped: the lock is released and its file
/// removed.
#[derive(Debug)]
pub struct OutputClaim {
    /// Holds the lock: closing it (when the claim is dropped) releases it.
    _file: File,
    lock: PathBuf,
}

impl OutputClaim {
    /// Check that `output` can be written and lock it against other yee runs. Refused: the
    /// name is the sidecar's, the folder is missing, it is a folder, another run is writing
    /// it, or (without `overwrite`) it or its sidecar exists.
    pub fn claim(output: &Path, overwrite: bool) -> Result<Self, ClaimError> {
        if collides_with_sidecar(output) {
            return Err(ClaimError::SidecarCollision(
                output.to_path_buf(),
                output.with_extension("h5"),
            ));
        }
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(ClaimError::NoFolder {
                    output: output.to_path_buf(),
                    folder: parent.to_path_buf(),
                });
            }
        }
        if output.is_dir() {
            return Err(ClaimError::IsFolder(output.to_path_buf()));
        }
        let claim = Self::lock(output)?;
        // Checked under the lock: no other run can create either file between check and run.
        let sidecar = sidecar_path(output);
        for (path, what) in [
            (output.to_path_buf(), String::new()),
            (
                sidecar,
                format!(" (the XDMF sidecar that goes with `{}`)", output.display()),
            ),
        ] {
            if !overwrite && std::fs::symlink_metadata(&path).is_ok() {
                return Err(ClaimError::Exists { path, what });
            }
        }
        Ok(claim)
    }

    /// Take the lock file's exclusive lock without waiting.
    fn lock(output: &Path) -> Result<Self, ClaimError> {
        let lock = lock_path(output);
        let fail = |source| ClaimError::Lock {
            output: output.to_path_buf(),
            lock: lock.clone(),
            source,
        };
        // A run that finishes removes its lock file while holding the lock, so a run that
        // opened the old file just before may lock a file no longer there: check that the
        // locked file is still the one at the path, else try again.
        for _ in 0..20 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&lock)
                .map_err(fail)?;
            // SAFETY: flock on a file descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    // The holder wrote "<pid>\n<its output's file name>".
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let mut lines = text.lines();
                    let pid = match lines.next().map(|l| l.trim().parse::<u32>()) {
                        Some(Ok(p)) => format!(" (process {p})"),
                        _ => String::new(),
                    };
                    let mine = output.file_name().map(|n| n.to_string_lossy().into_owned());
                    let what = match lines.next() {
                        Some(other) if Some(other) != mine.as_deref() => format!(
                            "shares its sidecar `{}` with `{other}`, which is being written by",
                            sidecar_path(output).display()
                        ),
                        _ => "is being written by".to_string(),
                    };
                    return Err(ClaimError::Busy {
                        output: output.to_path_buf(),
                        what,
                        pid,
                    });
                }
                return Err(fail(e));
            }
            let held = file.metadata().map_err(fail)?;
            match std::fs::metadata(&lock) {
                Ok(m) if m.dev() == held.dev() && m.ino() == held.ino() => {
                    // Who holds it, for the message another run prints.
                    file.set_len(0).map_err(fail)?;
                    file.rewind().map_err(fail)?;
                    let name = output.file_name().unwrap_or_default().to_string_lossy();
                    write!(file, "{}\n{name}", std::process::id()).map_err(fail)?;
                    return Ok(OutputClaim { _file: file, lock });
                }
                _ => continue,
            }
        }
        Err(fail(std::io::Error::other(
            "it keeps being replaced by other runs",
        )))
    }
}

impl Drop for OutputClaim {
    fn drop(&mut self) {
        // Removed while still locked (the file closes after this), so no run can be holding a
        // lock on it that a later run would not see.
        let _ = std::fs::remove_file(&self.lock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_beside_the_output() {
        let o = Path::new("runs/a.h5");
        assert_eq!(sidecar_path(o), Path::new("runs/a.xmf"));
        assert_eq!(lock_path(o), Path::new("runs/.a.yee-lock"));
        assert_eq!(lock_path(Path::new("a.hdf5")), lock_path(Path::new("a.h5")));
        let p = partial_path(o);
        assert!(p.starts_with("runs"));
        assert!(p
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".a.h5.partial-"));
        assert!(collides_with_sidecar(Path::new("x.XMF")));
        assert!(!collides_with_sidecar(Path::new("x.h5")));
    }

    #[test]
    fn a_second_claim_is_refused_until_the_first_ends() {
        let dir = std::env::temp_dir().join(format!("yee-claim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.h5");
        let first = OutputClaim::claim(&out, false).unwrap();
        // flock locks belong to the open file, so a second open in this process is refused
        // exactly as another process would be.
        match OutputClaim::claim(&out, true) {
            Err(ClaimError::Busy { pid, .. }) => {
                assert!(pid.contains(&std::process::id().to_string()), "{pid}")
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        drop(first);
        assert!(!lock_path(&out).exists(), "the lock file is removed");
        let again = OutputClaim::claim(&out, false).unwrap();
        drop(again);
        std::fs::write(sidecar_path(&out), "user's own").unwrap();
        assert!(matches!(
            OutputClaim::claim(&out, false),
            Err(ClaimError::Exists { .. })
        ));
        assert!(OutputClaim::claim(&out, true).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
