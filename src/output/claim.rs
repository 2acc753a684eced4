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
    /// The output ends with `/`: a folder's name, not a file's.
    #[error("cannot write `{}`: a file name cannot end with `/`; give a file name, e.g. -o {}", .0.display(), .0.join("result.h5").display())]
    TrailingSlash(PathBuf),
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
    /// `--overwrite` would replace something that is not an earlier result or its sidecar: a
    /// device, a pipe, or a file of other contents (the scene itself, given as the output).
    #[error("cannot write `{}`: it {what}; --overwrite replaces only an earlier result {kind}; choose another file with -o, or remove it yourself if it is meant to go", .path.display())]
    NotAResult {
        /// The existing file.
        path: PathBuf,
        /// What it is ("is a character device", "is not an HDF5 file").
        what: String,
        /// What it would have to be: "(an HDF5 file)" or "and its XDMF sidecar".
        kind: &'static str,
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
    /// it, or it or its sidecar exists and, without `overwrite`, at all, with it, as anything
    /// but an earlier result (an HDF5 file; an XDMF file; an empty file).
    pub fn claim(output: &Path, overwrite: bool) -> Result<Self, ClaimError> {
        if collides_with_sidecar(output) {
            return Err(ClaimError::SidecarCollision(
                output.to_path_buf(),
                output.with_extension("h5"),
            ));
        }
        if output.as_os_str().as_encoded_bytes().ends_with(b"/") && !output.is_dir() {
            return Err(ClaimError::TrailingSlash(output.to_path_buf()));
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
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !overwrite {
                return Err(ClaimError::Exists { path, what });
            }
            let sidecar = !what.is_empty();
            if let Err(what) = earlier_result(&path, &meta, sidecar) {
                let kind = if sidecar {
                    "and its XDMF sidecar"
                } else {
                    "(an HDF5 file)"
                };
                return Err(ClaimError::NotAResult { path, what, kind });
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

/// The signature an HDF5 file starts with, at offset 0 or at 512, 1024, 2048, ... after a
/// user block.
const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Ok if the existing `path` (`meta` its own metadata, not a link's target's) may be replaced
/// as an earlier result: a symbolic link (the link is replaced, not its target), an empty file,
/// or an HDF5 file (XDMF for the `sidecar`); else what it is.
fn earlier_result(path: &Path, meta: &std::fs::Metadata, sidecar: bool) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    // A folder where the sidecar goes cannot be written over (a rename onto it fails): the
    // run writes its result and warns that the sidecar could not be written.
    if t.is_symlink() || (t.is_file() && meta.len() == 0) || (sidecar && t.is_dir()) {
        return Ok(());
    }
    if !t.is_file() {
        let what = if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_fifo() {
            "a named pipe"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(format!("is {what}"));
    }
    let unreadable = |e: std::io::Error| format!("cannot be read to check that it is one ({e})");
    let mut file = File::open(path).map_err(unreadable)?;
    if sidecar {
        let mut head = Vec::with_capacity(1024);
        file.take(1024).read_to_end(&mut head).map_err(unreadable)?;
        let text = String::from_utf8_lossy(&head);
        if text.contains("<?xml") || text.contains("<Xdmf") {
            return Ok(());
        }
        return Err("is not an XDMF file".into());
    }
    match has_hdf5_signature(&mut file, meta.len()).map_err(unreadable)? {
        true => Ok(()),
        false => Err("is not an HDF5 file".into()),
    }
}

/// True if `path` is an HDF5 file by its signature (not whether the library can open it).
pub fn is_hdf5(path: &Path) -> std::io::Result<bool> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    has_hdf5_signature(&mut file, len)
}

/// True if `file`, `len` bytes long, holds the HDF5 signature where HDF5 looks for it: at 0,
/// or at 512, 1024, 2048, ... after a user block.
fn has_hdf5_signature(file: &mut File, len: u64) -> std::io::Result<bool> {
    let mut offset = 0u64;
    while offset + 8 <= len {
        let mut head = [0u8; 8];
        file.seek(std::io::SeekFrom::Start(offset))?;
        file.read_exact(&mut head)?;
        if &head == HDF5_SIGNATURE {
            return Ok(true);
        }
        offset = if offset == 0 { 512 } else { 2 * offset };
    }
    Ok(false)
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
        assert!(matches!(
            OutputClaim::claim(Path::new("no-such-folder-here/"), true),
            Err(ClaimError::TrailingSlash(_))
        ));
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
        std::fs::write(sidecar_path(&out), "<?xml version=\"1.0\" ?>\n<Xdmf/>").unwrap();
        assert!(matches!(
            OutputClaim::claim(&out, false),
            Err(ClaimError::Exists { .. })
        ));
        assert!(OutputClaim::claim(&out, true).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn overwrite_replaces_an_earlier_result_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("yee-claim-what-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("r.h5");
        let refused = |out: &Path, what: &str| match OutputClaim::claim(out, true) {
            Err(e @ ClaimError::NotAResult { .. }) => {
                assert!(e.to_string().contains(what), "{e}")
            }
            other => panic!("{}: expected NotAResult, got {other:?}", out.display()),
        };
        // The scene given as its own output, and any other file of the user's.
        std::fs::write(&out, "[simulation]\nsteps = 10\n").unwrap();
        refused(&out, "is not an HDF5 file");
        // HDF5, at the start or after a user block; an empty file.
        let mut hdf5 = HDF5_SIGNATURE.to_vec();
        hdf5.resize(4096, 0);
        std::fs::write(&out, &hdf5).unwrap();
        assert!(OutputClaim::claim(&out, true).is_ok());
        let mut blocked = vec![b' '; 1024];
        blocked.extend_from_slice(HDF5_SIGNATURE);
        std::fs::write(&out, &blocked).unwrap();
        assert!(OutputClaim::claim(&out, true).is_ok());
        std::fs::write(&out, "").unwrap();
        assert!(OutputClaim::claim(&out, true).is_ok());
        // A sidecar that is not one.
        std::fs::write(sidecar_path(&out), "user's own notes").unwrap();
        refused(&out, "is not an XDMF file");
        std::fs::remove_file(sidecar_path(&out)).unwrap();
        // A named pipe (a device node needs privileges to make).
        let pipe = dir.join("p.h5");
        let name = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        refused(&pipe, "is a named pipe");
        // A link is replaced, not followed.
        let link = dir.join("l.h5");
        std::os::unix::fs::symlink(&pipe, &link).unwrap();
        assert!(OutputClaim::claim(&link, true).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
