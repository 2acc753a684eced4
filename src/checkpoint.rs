//! Checkpoints: the whole state of a run in `<output stem>.checkpoint.h5` next to the result,
//! so that `yee resume` continues it, on any backend and slab split, to the file an
//! uninterrupted run writes (docs/checkpoint.md has the layout).
//!
//! A checkpoint is written to a hidden temporary name, closed, synced to disk and renamed over
//! the previous one, so a crash or a kill while it is written leaves the previous checkpoint
//! whole. It holds the state ([`crate::backend::State`], by global x plane), the step, the
//! scene text and its hash, yee's version, the precision, and the result file's
//! [`Fingerprint`] when the checkpoint was taken (the result is flushed first, so no probe row
//! is pending). The snapshot schedule is a function of the step (`step % every`), so no
//! monitor schedule state is stored.

use crate::backend::{Spread, State, StateArray, StatePlace, StateRequest, StateShape, StateSink};
use crate::model::{Component, Model};
use crate::output::resume::{Fingerprint, FNV_START};
use crate::output::OutputError;
use crate::real::Real;
use hdf5::types::VarLenUnicode;
use hdf5::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The layout version of the checkpoint file (`format` attribute): 2 since the passes'
/// arrays are stored by name under `state/arrays` (1 stored psi, dispersive and incident
/// groups by physics).
pub const FORMAT: u64 = 2;

/// The checkpoint of the result `output`: `<stem>.checkpoint.h5` in the same folder.
pub fn path_for(output: &Path) -> PathBuf {
    let stem = output
        .file_stem()
        .map_or_else(|| "yee".into(), |s| s.to_string_lossy().into_owned());
    output.with_file_name(format!("{stem}.checkpoint.h5"))
}

/// The temporary name a checkpoint is written under before the rename: hidden, next to it.
pub fn partial_path(checkpoint: &Path) -> PathBuf {
    let name = checkpoint
        .file_name()
        .map_or_else(|| "checkpoint".into(), |s| s.to_string_lossy().into_owned());
    checkpoint.with_file_name(format!(".{name}.partial"))
}

/// The hash of a scene's text a checkpoint records: FNV-1a 64 over its bytes, as 16 hex
/// digits (to notice a changed text, not to resist forgery).
pub fn scene_hash(text: &str) -> String {
    let mut h = FNV_START;
    for &b in text.as_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What a checkpoint says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Steps done.
    pub step: usize,
    /// The scene's text.
    pub scene: String,
    /// [`scene_hash`] of it, as written.
    pub scene_hash: String,
    /// The yee version that wrote it.
    pub version: String,
    /// "f32" or "f64".
    pub precision: String,
    /// The backend that wrote it (for messages).
    pub backend: String,
    /// What the result file held.
    pub result: Fingerprint,
}

/// Why a checkpoint cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// No checkpoint at the path.
    #[error("no checkpoint `{}`: `yee resume` continues a run stopped after a checkpoint (yee run --checkpoint-every, or SIGTERM)", .0.display())]
    Missing(PathBuf),
    /// It cannot be read, or is not a yee checkpoint.
    #[error("cannot read the checkpoint `{}`: {message}", .path.display())]
    Unreadable {
        /// The checkpoint.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// It belongs to another scene, version or precision than what would run.
    #[error("refusing the checkpoint `{}`: {message}", .path.display())]
    Mismatch {
        /// The checkpoint.
        path: PathBuf,
        /// What differs.
        message: String,
    },
}

fn str_attr(loc: &hdf5::Location, name: &str, value: &str) -> hdf5::Result<()> {
    let v = VarLenUnicode::from_str(value).map_err(|e| hdf5::Error::from(e.to_string()))?;
    loc.new_attr::<VarLenUnicode>()
        .shape(())
        .create(name)?
        .write_scalar(&v)
}

fn read_str(loc: &hdf5::Location, name: &str) -> hdf5::Result<String> {
    Ok(loc
        .attr(name)?
        .read_scalar::<VarLenUnicode>()?
        .as_str()
        .to_string())
}

/// A 1-D dataset of `values` (an empty array is stored with shape [0]).
fn put<T: hdf5::H5Type>(g: &hdf5::Group, name: &str, values: &[T]) -> hdf5::Result<()> {
    let ds = g.new_dataset::<T>().shape([values.len()]).create(name)?;
    if !values.is_empty() {
        ds.write_raw(values)?;
    }
    Ok(())
}

fn get<T: hdf5::H5Type>(g: &hdf5::Group, name: &str) -> hdf5::Result<Vec<T>> {
    let ds = g.dataset(name)?;
    if ds.size() == 0 {
        return Ok(Vec::new());
    }
    ds.read_raw::<T>()
}

/// Write `state` of `model` (taken after `state.step` steps, on `backend`, with the result
/// file holding `result`) to `path`: under [`partial_path`], closed, synced, renamed over
/// `path`. Returns the bytes written. A failure (a full disk) names the checkpoint and the
/// bytes it needs, and leaves the previous checkpoint in place.
pub fn write<T: Real>(
    path: &Path,
    model: &Model,
    state: &State<T>,
    result: &Fingerprint,
    backend: &str,
) -> Result<u64, OutputError> {
    let written = write_with::<T>(path, model, state.step, result, backend, &mut |sink| {
        sink.begin(&StateShape::of(state))?;
        sink.part(state, &StatePlace::whole(state))?;
        Ok(true)
    })?;
    Ok(written.unwrap_or(0))
}

/// Write the checkpoint of `model` after `step` steps as [`write()`] does, with the state
/// handed to the writer by `fill` part by part ([`crate::backend::Backend::write_state`]): no
/// process needs the whole state in memory. `None` (and the previous checkpoint kept) when
/// `fill` hands over nothing (a device failure).
pub fn write_with<T: Real>(
    path: &Path,
    model: &Model,
    step: usize,
    result: &Fingerprint,
    backend: &str,
    fill: &mut dyn FnMut(&mut dyn StateSink<T>) -> Result<bool, String>,
) -> Result<Option<u64>, OutputError> {
    let partial = partial_path(path);
    let _ = std::fs::remove_file(&partial);
    let fail = |message: String| {
        let _ = std::fs::remove_file(&partial);
        OutputError {
            path: path.to_path_buf(),
            message,
        }
    };
    let mut writer = match Writer::<T>::create(&partial, model, step, result, backend) {
        Ok(w) => w,
        Err(e) => return Err(fail(write_failure(&hdf5_text(&e), &partial, 0))),
    };
    let filled = fill(&mut writer);
    let need = writer.need;
    let closed = writer.close();
    let filled = match (filled, closed) {
        (Ok(f), Ok(())) => f,
        (Err(e), _) => return Err(fail(write_failure(&e, &partial, need))),
        (_, Err(e)) => return Err(fail(write_failure(&hdf5_text(&e), &partial, need))),
    };
    if !filled {
        let _ = std::fs::remove_file(&partial);
        return Ok(None);
    }
    let synced = std::fs::File::open(&partial).and_then(|f| f.sync_all());
    if let Err(e) = synced {
        return Err(fail(write_failure(&e.to_string(), &partial, need)));
    }
    let bytes = std::fs::metadata(&partial).map_or(0, |m| m.len());
    if let Err(e) = std::fs::rename(&partial, path) {
        return Err(fail(format!(
            "cannot move the new checkpoint into place: {e}"
        )));
    }
    // The rename is durable once the folder is synced (best effort: not every file system
    // lets a folder be opened for it).
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(Some(bytes))
}

/// HDF5's error with the frames of its stack, where the system's error (`errno = N`) is named.
fn hdf5_text(e: &hdf5::Error) -> String {
    let mut text = e.to_string();
    if let Some(stack) = e.stack() {
        for frame in stack.iter() {
            text.push_str("; ");
            text.push_str(frame.desc());
        }
    }
    text
}

/// One sentence for a failed checkpoint write: the reason and, on a full disk or a size limit,
/// the bytes the checkpoint needs.
fn write_failure(error: &str, partial: &Path, need: u64) -> String {
    let written = std::fs::metadata(partial).map_or(0, |m| m.len());
    let lower = error.to_lowercase();
    let reason = if lower.contains("no space") || lower.contains("errno = 28") {
        "the disk is full"
    } else if lower.contains("file too large") || lower.contains("errno = 27") {
        "the file reached the largest size this process may write (ulimit -f)"
    } else if lower.contains("quota") || lower.contains("errno = 122") {
        "the disk quota is used up"
    } else {
        return format!(
            "writing the checkpoint failed: {}",
            error.split("; ").next().unwrap_or(error)
        );
    };
    format!(
        "{reason} after {written} bytes of the checkpoint; it needs about {need} bytes, {} more",
        need.saturating_sub(written)
    )
}

/// A checkpoint file being written ([`write_with`]): the header at creation, then the state's
/// datasets at their whole sizes ([`StateSink::begin`]), filled part by part.
struct Writer<T> {
    file: File,
    model_shape: [usize; 3],
    /// The whole state's shape, from `begin`.
    whole: StateShape,
    /// Bytes the checkpoint needs, for the message of a failed write.
    need: u64,
    /// Per array of `whole`: whether a shared one was written already.
    written: Vec<bool>,
    fields_paused: bool,
    _values: std::marker::PhantomData<T>,
}

impl<T: Real> Writer<T> {
    fn create(
        path: &Path,
        model: &Model,
        step: usize,
        result: &Fingerprint,
        backend: &str,
    ) -> hdf5::Result<Self> {
        let file = File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .create(path)?;
        file.new_attr::<u64>()
            .shape(())
            .create("format")?
            .write_scalar(&FORMAT)?;
        str_attr(&file, "yee_version", env!("CARGO_PKG_VERSION"))?;
        str_attr(&file, "precision", T::PRECISION.name())?;
        str_attr(&file, "scene", &model.scene_text)?;
        str_attr(&file, "scene_hash", &scene_hash(&model.scene_text))?;
        str_attr(&file, "backend", backend)?;
        file.new_attr::<u64>()
            .shape(())
            .create("step")?
            .write_scalar(&(step as u64))?;
        let r = file.create_group("result")?;
        put(&r, "probe_rows", &result.probe_rows)?;
        put(&r, "probe_hash", &result.probe_hash)?;
        put(&r, "snapshot_rows", &result.snapshot_rows)?;
        put(&r, "snapshot_hash", &result.snapshot_hash)?;
        Ok(Writer {
            file,
            model_shape: model.grid.shape,
            whole: StateShape::default(),
            need: 64 * 1024 + model.scene_text.len() as u64,
            written: Vec::new(),
            fields_paused: false,
            _values: std::marker::PhantomData,
        })
    }

    fn close(self) -> hdf5::Result<()> {
        self.file.flush()?;
        self.file.close()
    }

    fn begin_datasets(&mut self, whole: &StateShape) -> hdf5::Result<()> {
        let [nx, ny, nz] = self.model_shape;
        let t = std::mem::size_of::<T>() as u64;
        let s = self.file.create_group("state")?;
        let fields = s.create_group("fields")?;
        for c in Component::ALL {
            fields
                .new_dataset::<T>()
                .shape([nx, ny, nz])
                .create(c.name())?;
        }
        self.need += 6 * (nx * ny * nz) as u64 * t;
        // Each registered array whole, `[slot][cell]`, its slots in an attribute (0: shared).
        let arrays = s.create_group("arrays")?;
        for a in &whole.arrays {
            let n = a.cells * a.spread.slots();
            let ds = arrays
                .new_dataset::<T>()
                .shape([n])
                .create(a.name.as_str())?;
            let slots = match a.spread {
                Spread::Cells { slots } => slots as u64,
                Spread::Shared => 0,
            };
            ds.new_attr::<u64>()
                .shape(())
                .create("slots")?
                .write_scalar(&slots)?;
            self.need += n as u64 * t;
        }
        self.written = vec![false; whole.arrays.len()];
        s.create_group("flux")?;
        self.whole = whole.clone();
        Ok(())
    }

    fn write_part(&mut self, st: &State<T>, place: &StatePlace) -> hdf5::Result<()> {
        use ndarray::{s, ArrayView1, ArrayView3};
        let [_, ny, nz] = self.model_shape;
        let s = self.file.group("state")?;
        let fields = s.group("fields")?;
        let planes = st.fields[0].len() / (ny * nz).max(1);
        let x0 = place.x0;
        for (c, f) in st.fields.iter().enumerate() {
            if planes == 0 {
                break;
            }
            let view = ArrayView3::from_shape((planes, ny, nz), &f[..])
                .map_err(|e| hdf5::Error::from(e.to_string()))?;
            fields
                .dataset(Component::ALL[c].name())?
                .write_slice(view, s![x0..x0 + planes, .., ..])?;
        }
        if !self.fields_paused {
            self.fields_paused = true;
            pause_for_tests();
        }
        let arrays = s.group("arrays")?;
        for (a, &at) in st.arrays.iter().zip(&place.offsets) {
            let i = self
                .whole
                .arrays
                .iter()
                .position(|w| w.name == a.name)
                .ok_or_else(|| {
                    hdf5::Error::from(format!(
                        "a part of `{}`, which the whole state lacks",
                        a.name
                    ))
                })?;
            let ds = arrays.dataset(&a.name)?;
            match a.spread {
                Spread::Cells { slots } => {
                    let (n, total) = (a.cells(), self.whole.arrays[i].cells);
                    if n == 0 {
                        continue;
                    }
                    for slot in 0..slots {
                        let from = slot * total + at;
                        let run = &a.values[slot * n..(slot + 1) * n];
                        ds.write_slice(ArrayView1::from(run), s![from..from + n])?;
                    }
                }
                Spread::Shared if !self.written[i] => {
                    if !a.values.is_empty() {
                        ds.write_raw(&a.values)?;
                    }
                    self.written[i] = true;
                }
                Spread::Shared => {}
            }
        }
        let flux = s.group("flux")?;
        for (i, dft) in st.flux.iter().enumerate() {
            let m = flux.create_group(&i.to_string())?;
            for (j, p) in dft.patches.iter().enumerate() {
                let g = m.create_group(&j.to_string())?;
                put(&g, "re", &p.re.concat())?;
                put(&g, "im", &p.im.concat())?;
            }
        }
        Ok(())
    }
}

impl<T: Real> StateSink<T> for Writer<T> {
    fn begin(&mut self, whole: &StateShape) -> Result<(), String> {
        self.begin_datasets(whole).map_err(|e| hdf5_text(&e))
    }

    fn part(&mut self, part: &State<T>, place: &StatePlace) -> Result<(), String> {
        self.write_part(part, place).map_err(|e| hdf5_text(&e))
    }
}

/// Test hook: `YEE_TEST_CHECKPOINT_PAUSE_MS` makes each checkpoint write pause that long after
/// its fields, as a slow disk would, so a test can kill the process in the middle of one.
fn pause_for_tests() {
    if let Some(ms) =
        crate::fault::hook("YEE_TEST_CHECKPOINT_PAUSE_MS").and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// The error of an unreadable checkpoint at `path`, from HDF5's.
fn unreadable_at(path: &Path) -> impl Fn(hdf5::Error) -> CheckpointError + '_ {
    move |e| CheckpointError::Unreadable {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Open the checkpoint at `path` for reading, without HDF5's file locking (as every file yee
/// opens).
fn open_checkpoint(path: &Path) -> Result<File, CheckpointError> {
    File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(path)
        .map_err(unreadable_at(path))
}

/// Read the header of the checkpoint at `path`.
pub fn read_header(path: &Path) -> Result<Header, CheckpointError> {
    if !path.exists() {
        return Err(CheckpointError::Missing(path.to_path_buf()));
    }
    let unreadable = unreadable_at(path);
    let file = open_checkpoint(path)?;
    let format = file
        .attr("format")
        .and_then(|a| a.read_scalar::<u64>())
        .map_err(|_| CheckpointError::Unreadable {
            path: path.to_path_buf(),
            message: "it is not a yee checkpoint (no `format` attribute)".into(),
        })?;
    if format != FORMAT {
        return Err(CheckpointError::Mismatch {
            path: path.to_path_buf(),
            message: format!("it has layout {format}; this yee reads layout {FORMAT}"),
        });
    }
    let h = (|| -> hdf5::Result<Header> {
        let r = file.group("result")?;
        Ok(Header {
            step: file.attr("step")?.read_scalar::<u64>()? as usize,
            scene: read_str(&file, "scene")?,
            scene_hash: read_str(&file, "scene_hash")?,
            version: read_str(&file, "yee_version")?,
            precision: read_str(&file, "precision")?,
            backend: read_str(&file, "backend")?,
            result: Fingerprint {
                probe_rows: get(&r, "probe_rows")?,
                probe_hash: get(&r, "probe_hash")?,
                snapshot_rows: get(&r, "snapshot_rows")?,
                snapshot_hash: get(&r, "snapshot_hash")?,
            },
        })
    })()
    .map_err(unreadable)?;
    Ok(h)
}

impl Header {
    /// Refuse the checkpoint unless it is this yee's, its scene text has the hash it records,
    /// and `model` (built from that text) runs in its precision for its step count.
    pub fn check(&self, path: &Path, model: &Model) -> Result<(), CheckpointError> {
        let mismatch = |message: String| CheckpointError::Mismatch {
            path: path.to_path_buf(),
            message,
        };
        let version = env!("CARGO_PKG_VERSION");
        if self.version != version {
            return Err(mismatch(format!(
                "it was written by yee {}, this is yee {version}; resume it with yee {}, or run the scene again",
                self.version, self.version
            )));
        }
        if scene_hash(&self.scene) != self.scene_hash || model.scene_text != self.scene {
            return Err(mismatch(format!(
                "its scene hash {} does not match its scene text (hash {}): the file was altered",
                self.scene_hash,
                scene_hash(&self.scene)
            )));
        }
        if self.precision != model.precision.name() {
            return Err(mismatch(format!(
                "it holds {} fields; the scene runs in {}",
                self.precision,
                model.precision.name()
            )));
        }
        if self.step > model.grid.steps {
            return Err(mismatch(format!(
                "it is at step {} of a scene of {} steps",
                self.step, model.grid.steps
            )));
        }
        Ok(())
    }
}

/// Read the state of the checkpoint at `path` for `model` (whose header was checked with
/// [`Header::check`]), in precision `T`.
pub fn read_state<T: Real>(path: &Path, model: &Model) -> Result<State<T>, CheckpointError> {
    let unreadable = unreadable_at(path);
    let file = open_checkpoint(path)?;
    (|| -> hdf5::Result<State<T>> {
        let mut st = State::<T> {
            step: file.attr("step")?.read_scalar::<u64>()? as usize,
            ..Default::default()
        };
        let s = file.group("state")?;
        let fields = s.group("fields")?;
        for (c, f) in st.fields.iter_mut().enumerate() {
            *f = fields.dataset(Component::ALL[c].name())?.read_raw::<T>()?;
        }
        let arrays = s.group("arrays")?;
        let mut names = arrays.member_names()?;
        names.sort();
        for name in names {
            let ds = arrays.dataset(&name)?;
            let values = if ds.size() == 0 {
                Vec::new()
            } else {
                ds.read_raw::<T>()?
            };
            st.arrays.push(StateArray {
                spread: spread_of(&ds)?,
                name,
                values,
            });
        }
        st.flux = read_flux(&s, model)?;
        Ok(st)
    })()
    .map_err(unreadable)
}

/// The spread of a stored array, from its `slots` attribute (0: shared).
fn spread_of(ds: &hdf5::Dataset) -> hdf5::Result<Spread> {
    Ok(match ds.attr("slots")?.read_scalar::<u64>()? {
        0 => Spread::Shared,
        slots => Spread::Cells {
            slots: slots as usize,
        },
    })
}

/// The surface DFTs of every flux monitor of `model` in the checkpoint's `state` group: per
/// field set (a Bloch cell's real and imaginary sets, [`crate::backend::bloch`]), every
/// monitor in model order.
fn read_flux(s: &hdf5::Group, model: &Model) -> hdf5::Result<Vec<crate::flux::FluxDft>> {
    let sets = 1 + model.boundaries.has_bloch() as usize;
    let mut out = Vec::with_capacity(sets * model.fluxes.len());
    let flux = s.group("flux")?;
    let monitors = (0..sets).flat_map(|_| model.fluxes.iter());
    for (i, f) in monitors.enumerate() {
        let m = flux.group(&i.to_string())?;
        let nf = f.frequencies.len();
        let mut patches = Vec::with_capacity(f.patches.len());
        for (j, patch) in f.patches.iter().enumerate() {
            let g = m.group(&j.to_string())?;
            let n = nf * patch.cells();
            let split = |v: Vec<f64>| -> hdf5::Result<[Vec<f64>; 4]> {
                if v.len() != 4 * n {
                    return Err(hdf5::Error::from(format!(
                        "surface DFT monitor `{}` holds {} values, the scene needs {}",
                        f.name,
                        v.len(),
                        4 * n
                    )));
                }
                Ok([0, 1, 2, 3].map(|q| v[q * n..(q + 1) * n].to_vec()))
            };
            patches.push(crate::flux::PatchDft::of(
                model,
                patch,
                split(get(&g, "re")?)?,
                split(get(&g, "im")?)?,
            ));
        }
        out.push(crate::flux::FluxDft { patches });
    }
    Ok(out)
}

/// Read the state of the checkpoint at `path` for `model`: the whole ([`read_state`]) or, with
/// a request, the part of one process (its x planes of the fields, its runs of the
/// registered arrays and the surface DFTs if it holds them), so no process
/// reads more than its own.
pub fn read_part<T: Real>(
    path: &Path,
    model: &Model,
    request: Option<&StateRequest>,
) -> Result<State<T>, CheckpointError> {
    let Some(req) = request else {
        return read_state(path, model);
    };
    let unreadable = unreadable_at(path);
    let file = open_checkpoint(path)?;
    (|| -> hdf5::Result<State<T>> {
        use ndarray::s;
        let slice = |ds: &hdf5::Dataset, r: &std::ops::Range<usize>| -> hdf5::Result<Vec<T>> {
            if r.is_empty() {
                return Ok(Vec::new());
            }
            Ok(ds.read_slice_1d::<T, _>(s![r.start..r.end])?.to_vec())
        };
        let mut st = State::<T> {
            step: file.attr("step")?.read_scalar::<u64>()? as usize,
            ..Default::default()
        };
        let g = file.group("state")?;
        let fields = g.group("fields")?;
        for (c, f) in st.fields.iter_mut().enumerate() {
            let ds = fields.dataset(Component::ALL[c].name())?;
            if !req.x.is_empty() {
                *f = ds
                    .read_slice::<T, _, ndarray::Ix3>(s![req.x.start..req.x.end, .., ..])?
                    .iter()
                    .copied()
                    .collect();
            }
        }
        let arrays = g.group("arrays")?;
        for r in &req.arrays {
            let ds = arrays.dataset(&r.name)?;
            let mut values = Vec::new();
            for run in r.runs() {
                values.extend(slice(&ds, &run)?);
            }
            st.arrays.push(StateArray {
                name: r.name.clone(),
                spread: spread_of(&ds)?,
                values,
            });
        }
        if req.flux {
            st.flux = read_flux(&g, model)?;
        }
        Ok(st)
    })()
    .map_err(unreadable)
}

/// Write speed the plan's checkpoint time assumes (bytes/s): a local SSD or a share of a
/// parallel file system; the real figure is in the run's checkpoint message.
pub const ASSUMED_WRITE_BYTES_PER_S: f64 = 500e6;

/// About how many bytes a checkpoint of `model` takes: the state ([`State`]: the owned fields,
/// psi arrays, dispersive, TF/SF and cell-pass state, as the plan sizes them for one slab over the
/// whole grid, and the surface DFTs: 8 f64 per cell and frequency), plus its metadata (the
/// scene text and the HDF5 headers).
pub fn estimate_bytes(model: &Model) -> u64 {
    let (a, flux) = state_bytes(model);
    a.fields
        + a.pml
        + a.dispersive
        + a.sources
        + a.passes
        + flux
        + 64 * 1024
        + model.scene_text.len() as u64
}

/// The plan's bytes of `model`'s state on one slab over the whole grid, and of its surface
/// DFTs (8 f64 per cell and frequency).
fn state_bytes(model: &Model) -> (crate::plan::Allocation, u64) {
    let layout = crate::plan::Layout::of(model);
    let whole = crate::decomp::SlabRange {
        x0: 0,
        x1: model.grid.shape[0],
    };
    let flux: u64 = model
        .fluxes
        .iter()
        .map(|f| 64 * f.frequencies.len() as u64 * crate::flux::flux_cells(f) as u64)
        .sum();
    (layout.slab_bytes(whole), flux * layout.field_sets)
}

/// Warnings before a run into `output`: the disk holding it has less room than the finished
/// result needs ([`crate::output::space_warning`]) or, when `checkpointing`, than the result
/// and two checkpoints (the new one is written before the old one is replaced).
pub fn space_warnings(model: &Model, output: &Path, checkpointing: bool) -> Vec<String> {
    let mut out: Vec<String> = crate::output::space_warning(model, output)
        .into_iter()
        .collect();
    if checkpointing && out.is_empty() {
        let folder = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let result = crate::output::file_bytes(model);
        let ckpt = estimate_bytes(model);
        let need = result.saturating_add(ckpt.saturating_mul(2));
        if let Some(free) = crate::output::free_bytes(folder) {
            if need > free {
                out.push(format!(
                    "the result (about {}) and its checkpoints (about {} each, two while one replaces the other) need about {}, but the disk holding `{}` has {} free: the run will stop when it is full",
                    crate::plan::bytes_h(result),
                    crate::plan::bytes_h(ckpt),
                    crate::plan::bytes_h(need),
                    output.display(),
                    crate::plan::bytes_h(free)
                ));
            }
        }
    }
    out
}

/// The line `yee plan` adds about checkpoints: the size of one ([`estimate_bytes`]) and its
/// write time at [`ASSUMED_WRITE_BYTES_PER_S`].
pub fn plan_line(model: &Model) -> String {
    let b = estimate_bytes(model);
    format!(
        "checkpoint {} each (yee run --checkpoint-every, or on SIGTERM), about {:.1} s to write at an assumed {}/s; the disk needs room for two while one replaces the other; written and read in parts, with at most {} of host memory besides the run\n",
        crate::plan::bytes_h(b),
        b as f64 / ASSUMED_WRITE_BYTES_PER_S,
        crate::plan::bytes_h(ASSUMED_WRITE_BYTES_PER_S as u64),
        crate::plan::bytes_h(host_bytes(model))
    )
}

/// At most the host memory that writing or reading a checkpoint of `model` takes besides the
/// run: one part of fields ([`crate::backend::parts::FIELD_PART_BYTES`]), one slab's CPML psi
/// arrays, pole state and TF/SF grid (counted as if one slab held the whole grid) and a copy
/// of the surface DFTs (8 f64 per cell and frequency).
pub fn host_bytes(model: &Model) -> u64 {
    let (a, flux) = state_bytes(model);
    let part = crate::backend::parts::FIELD_PART_BYTES as u64;
    a.fields.min(part) + a.pml + a.dispersive + a.sources + a.passes + flux
}
