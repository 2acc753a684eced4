//! The HDF5 result file, written as the run goes (layout: docs/output.md).
//!
//! The file is created before the first step with every root attribute and `complete = false`,
//! probe series are appended at each flush, and each snapshot is written (and the file flushed)
//! as soon as it is taken, so memory stays flat and an interrupted run leaves a valid file
//! holding everything up to its last flush.
//!
//! An earlier result at the same path is replaced whole or not at all: the new file is built
//! beside it under a hidden name and renamed into place once it is a valid HDF5 file (its
//! header and empty datasets written and flushed), before the first step. A run that fails
//! before then leaves the old file untouched, and a reader that has the old file open (a
//! notebook) keeps reading it. From then on the file at the path is the running result; it is
//! written without HDF5's own file lock (a lock file taken by [`claim`] keeps other runs
//! out), so `h5py.File(path, "r")` can read it while the run goes, up to its last flush.

pub mod claim;
pub mod diffraction;
pub mod far_field;
pub mod mesh;
pub mod modes;
pub mod ports;
pub mod resume;
pub mod scan;
pub mod sparameters;
pub mod xdmf;

use crate::model::{Component, Model};
use crate::real::Real;
use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, File, Group, H5Type};
use ndarray::{s, ArrayView1, ArrayView4};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How a result file is opened for writing (created, continued, a scan's traces added).
///
/// No HDF5 file lock: it would keep readers out of the running result (HDF5 1.10 locks a file
/// it writes exclusively); other yee runs are kept out by the claim's lock file.
///
/// No metadata written between flushes: HDF5's metadata cache normally writes dirty entries
/// out when it needs room, so a chunk index on disk may name chunks allocated after the last
/// flush, beyond the end of the file's space as its superblock records it. A process killed
/// then (SIGKILL, or killed for memory) left a file that read back but could not be
/// continued: `yee resume` failed at its first flush with "addr overflow" when it freed those
/// chunks. Kept in memory until the next flush (every snapshot, every 10 s, each checkpoint),
/// the metadata on disk is always that of the last flush, which the checkpoint's fingerprint
/// refers to. The cache then keeps every entry it has read or written: about 250 bytes of
/// host memory per chunk (a snapshot frame of one component, or 4096 probe rows), 14 MB more
/// peak memory and 10 % more time for a run writing 60 000 frames (a 3-component snapshot
/// every step for 20 000 steps), nothing to speak of for the usual one frame in tens of steps.
pub fn result_access(
    fapl: &mut hdf5::plist::FileAccessBuilder,
) -> &mut hdf5::plist::FileAccessBuilder {
    use hdf5::plist::file_access::{
        CacheDecreaseMode, CacheIncreaseMode, FlashIncreaseMode, MetadataCacheConfig,
    };
    // HDF5 takes evictions off only with the automatic resizing off too.
    let cache = MetadataCacheConfig {
        evictions_enabled: false,
        incr_mode: CacheIncreaseMode::Off,
        flash_incr_mode: FlashIncreaseMode::Off,
        decr_mode: CacheDecreaseMode::Off,
        ..MetadataCacheConfig::default()
    };
    fapl.file_locking(false).mdc_config(&cache)
}

/// Largest chunk written at once: HDF5 refuses chunks of 4 GiB or more, and big chunks make
/// partial reads slow.
const MAX_CHUNK_BYTES: usize = 64 << 20;

/// Why the output file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write `{}`: {message}", .path.display())]
pub struct OutputError {
    /// The output file.
    pub path: PathBuf,
    /// What went wrong, in one sentence: for a write error, the system's reason, how much the
    /// file holds and how much more the finished file needs.
    pub message: String,
}

/// Decimal units, as `yee plan` prints them.
fn bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// The system error behind an HDF5 error, when a read or write of the file failed: HDF5
/// reports it as `errno = N` in one frame of its error stack.
fn os_error(e: &hdf5::Error) -> Option<std::io::Error> {
    let stack = e.stack()?;
    stack.iter().find_map(|frame| {
        let desc = frame.desc();
        let at = desc.find("errno = ")? + "errno = ".len();
        let digits: String = desc[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok().map(std::io::Error::from_raw_os_error)
    })
}

/// One sentence for an HDF5 error on the file `on_disk`, which the finished run makes about
/// `expected` bytes long: for a failed write, the system's reason, the bytes written so far and
/// those still needed, never HDF5's raw error stack.
fn describe(e: &hdf5::Error, on_disk: &Path, expected: u64) -> String {
    let Some(os) = os_error(e) else {
        return e.to_string();
    };
    let (reason, space) = match os.raw_os_error() {
        Some(libc::ENOSPC) => ("the disk is full".to_string(), true),
        Some(libc::EDQUOT) => ("the disk quota is used up".to_string(), true),
        Some(libc::EFBIG) => (
            "the file reached the largest size this process may write (ulimit -f)".to_string(),
            true,
        ),
        _ => {
            let text = os.to_string();
            let text = text
                .split(" (os error")
                .next()
                .unwrap_or(&text)
                .to_lowercase();
            (text, false)
        }
    };
    let written = std::fs::metadata(on_disk).map_or(0, |m| m.len());
    if space && expected > written {
        format!(
            "{reason} after {} written; the finished file needs about {}, {} more",
            bytes(written),
            bytes(expected),
            bytes(expected - written)
        )
    } else if written > 0 {
        format!("{reason} after {} written", bytes(written))
    } else {
        reason
    }
}

/// Make a result that a failed write left behind open again, if it does not. HDF5 then may
/// have recorded a file longer than what reached the disk, and refuses it as truncated;
/// extending the file to the recorded length, as a hole that takes no disk space, lets it open
/// with everything that was written (the lost tail reads as zeros). True if the file opens.
pub fn reopen_after_failure(path: &Path) -> bool {
    let e = match File::open(path) {
        Ok(_) => return true,
        Err(e) => e,
    };
    let stored = e.stack().and_then(|stack| {
        stack.iter().find_map(|frame| {
            let desc = frame.desc();
            let at = desc.find("stored_eof = ")? + "stored_eof = ".len();
            let digits: String = desc[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            digits.parse::<u64>().ok()
        })
    });
    let Some(stored) = stored else {
        return false;
    };
    let extended = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| {
            if f.metadata()?.len() < stored {
                f.set_len(stored)?;
            }
            Ok(())
        });
    extended.is_ok() && File::open(path).is_ok()
}

/// About how many bytes `model`'s finished result file takes: its datasets, plus the metadata
/// (root attributes with the scene text, groups, object headers).
/// The datasets are the plan's estimate ([`crate::plan::output_bytes`]), which `yee plan` shows.
pub fn file_bytes(model: &Model) -> u64 {
    crate::plan::output_bytes(model)
        .total
        .saturating_add(64 * 1024)
        .saturating_add(model.scene_text.len() as u64)
}

/// A warning when the disk that will hold `output` has less room than `model`'s finished
/// result needs (the run would stop when it is full), else None.
pub fn space_warning(model: &Model, output: &Path) -> Option<String> {
    let need = file_bytes(model);
    let folder = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let free = free_bytes(folder)?;
    (need > free).then(|| {
        format!(
            "the result needs about {} but the disk holding `{}` has {} free: the run will stop when it is full",
            bytes(need),
            output.display(),
            bytes(free)
        )
    })
}

/// Bytes this process may still write on the filesystem holding `folder`.
pub fn free_bytes(folder: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(folder.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct from a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Probe series are chunked (and so grow on disk) by this many values.
const PROBE_CHUNK: usize = 4096;

struct ProbeSet {
    datasets: Vec<Dataset>,
    time: Dataset,
    values: Vec<Vec<f64>>,
    written: usize,
}

/// A complex value as HDF5 stores it: a compound of `r` and `i`, which h5py reads as complex.
#[derive(hdf5::H5Type, Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Complex {
    /// Real part.
    pub r: f64,
    /// Imaginary part.
    pub i: f64,
}

/// One surface DFT monitor's datasets: `/flux/<name>/` or `/far_field/<name>/`. A TF/SF
/// source's normalisations (`incident_intensity` and `cross_section` of a flux box, `rcs` of a
/// far field: design.md section 6) belong in `group` next to `power`, written by
/// [`Hdf5Writer::write_flux`] and [`Hdf5Writer::write_far_field`] from the same spectra.
struct FluxSet {
    group: Group,
    power: Dataset,
    /// Per patch, E_b, E_c, H_b, H_c DFT datasets [frequency, in-plane shape], when the monitor
    /// keeps them (always for a far field; empty otherwise).
    fields: Vec<[Dataset; 4]>,
    /// A far field's pattern datasets.
    far: Option<far_field::FarSet>,
    /// With a TF/SF source: `incident_intensity`, and for a closed box around or inside the
    /// TF/SF box `cross_section` (its `kind` attribute says which).
    cross: Option<(Dataset, Option<(crate::model::BoxRelation, Dataset)>)>,
    /// A mode monitor's `forward` and `backward` amplitudes ([`modes::ModeSet`]).
    modes: Option<modes::ModeSet>,
    /// A diffraction monitor's orders ([`diffraction::DiffractionSet`]).
    diffraction: Option<diffraction::DiffractionSet>,
}

struct SnapshotSet {
    datasets: Vec<Dataset>,
    shapes: Vec<[usize; 3]>,
    time: Dataset,
    step: Dataset,
    count: usize,
}

/// Streams one run's results into an HDF5 file.
pub struct Hdf5Writer {
    file: File,
    path: PathBuf,
    dt: f64,
    probes: Vec<ProbeSet>,
    snapshots: Vec<SnapshotSet>,
    fluxes: Vec<FluxSet>,
    times: Vec<f64>,
    /// About how many bytes the finished file holds (for the message when a write fails).
    expected: u64,
}

fn err(path: &Path, expected: u64) -> impl Fn(hdf5::Error) -> OutputError + '_ {
    move |e| OutputError {
        path: path.to_path_buf(),
        message: describe(&e, path, expected),
    }
}

/// `/materials/<name>`: each material of the scene (and vacuum, pec) with its parameters as
/// attributes (`epsilon`, `conductivity` S/m, `mu`, `magnetic_conductivity` ohm/m, `pec`,
/// `band` Hz for a library fit) and its poles as datasets, one row per pole: `lorentz`
/// [n, 3] = (delta_epsilon, frequency Hz, damping Hz), `drude` [n, 2] = (frequency, damping),
/// `debye` [n, 2] = (delta_epsilon, relaxation_time s). With design.md's formula a reader
/// recomputes eps(f) (`yee_post.Result.epsilon` does).
fn write_materials(file: &hdf5::File, model: &Model) -> hdf5::Result<()> {
    use crate::model::Pole;
    let root = file.create_group("materials")?;
    for m in model.materials.materials.iter().filter(|m| !m.mixture) {
        let g = root.create_group(&m.name)?;
        scalar_attr(&g, "epsilon", m.epsilon)?;
        scalar_attr(&g, "conductivity", m.conductivity)?;
        scalar_attr(&g, "mu", m.mu)?;
        scalar_attr(&g, "magnetic_conductivity", m.magnetic_conductivity)?;
        scalar_attr(&g, "pec", m.pec)?;
        if let Some(band) = m.band {
            arr_attr(&g, "band", &band)?;
        }
        let rows = |kind: &str| -> Vec<Vec<f64>> {
            m.poles
                .iter()
                .filter(|p| p.kind() == kind)
                .map(|p| match *p {
                    Pole::Lorentz {
                        delta_epsilon,
                        frequency,
                        damping,
                    } => vec![delta_epsilon, frequency, damping],
                    Pole::Drude { frequency, damping } => vec![frequency, damping],
                    Pole::Debye {
                        delta_epsilon,
                        relaxation_time,
                    } => vec![delta_epsilon, relaxation_time],
                })
                .collect()
        };
        for (kind, width) in [("lorentz", 3), ("drude", 2), ("debye", 2)] {
            let r = rows(kind);
            if r.is_empty() {
                continue;
            }
            let flat: Vec<f64> = r.concat();
            let a =
                ndarray::Array2::from_shape_vec((r.len(), width), flat).expect("rows of one width");
            g.new_dataset_builder().with_data(&a).create(kind)?;
        }
    }
    Ok(())
}

fn str_attr(loc: &hdf5::Location, name: &str, value: &str) -> hdf5::Result<()> {
    let v = VarLenUnicode::from_str(value).map_err(|e| hdf5::Error::from(e.to_string()))?;
    loc.new_attr::<VarLenUnicode>()
        .shape(())
        .create(name)?
        .write_scalar(&v)
}

fn arr_attr<T: H5Type + Copy>(loc: &hdf5::Location, name: &str, value: &[T]) -> hdf5::Result<()> {
    loc.new_attr::<T>()
        .shape(value.len())
        .create(name)?
        .write_raw(value)
}

fn scalar_attr<T: H5Type>(loc: &hdf5::Location, name: &str, value: T) -> hdf5::Result<()> {
    loc.new_attr::<T>()
        .shape(())
        .create(name)?
        .write_scalar(&value)
}

fn growable<T: H5Type>(g: &Group, name: &str, chunk: usize) -> hdf5::Result<Dataset> {
    g.new_dataset::<T>()
        .chunk(chunk)
        .shape(hdf5::SimpleExtents::resizable([0usize]))
        .create(name)
}

impl Hdf5Writer {
    /// Create `path` with the root attributes and empty monitor datasets for `model`, in
    /// precision `T`, recording `backend` as the engine.
    ///
    /// The file is built at [`claim::partial_path`] and renamed over `path` once it is valid,
    /// so a file already at `path` is replaced whole or, when this fails, left untouched. A
    /// sidecar of the replaced file is removed with it: it described datasets that are gone.
    pub fn create<T: Real>(path: &Path, model: &Model, backend: &str) -> Result<Self, OutputError> {
        if claim::collides_with_sidecar(path) {
            return Err(OutputError {
                path: path.to_path_buf(),
                message: "the XDMF sidecar has this name, so it would be written over the result"
                    .into(),
            });
        }
        let partial = claim::partial_path(path);
        let expected = file_bytes(model);
        let fail = |e: hdf5::Error| {
            let error = OutputError {
                path: path.to_path_buf(),
                message: describe(&e, &partial, expected),
            };
            let _ = std::fs::remove_file(&partial);
            error
        };
        let _ = std::fs::remove_file(&partial);
        let mut writer = Self::create_inner::<T>(&partial, model, backend).map_err(fail)?;
        writer.expected = expected;
        if let Err(e) = std::fs::rename(&partial, path) {
            drop(writer);
            let _ = std::fs::remove_file(&partial);
            return Err(OutputError {
                path: path.to_path_buf(),
                message: format!("cannot move the new file into place: {e}"),
            });
        }
        writer.path = path.to_path_buf();
        // Best effort here: the end of the run writes or removes the sidecar and reports
        // a failure then.
        let _ = std::fs::remove_file(claim::sidecar_path(path));
        Ok(writer)
    }

    fn create_inner<T: Real>(path: &Path, model: &Model, backend: &str) -> hdf5::Result<Self> {
        let g = &model.grid;
        let file = File::with_options().with_fapl(result_access).create(path)?;
        str_attr(&file, "yee_version", env!("CARGO_PKG_VERSION"))?;
        str_attr(&file, "scene", &model.scene_text)?;
        str_attr(&file, "name", &model.name)?;
        str_attr(&file, "length_unit", &model.length_unit)?;
        arr_attr(&file, "cell_size", &g.cell)?;
        arr_attr(&file, "origin", &g.origin)?;
        arr_attr(&file, "shape", &g.shape.map(|n| n as u64))?;
        scalar_attr(&file, "dt", g.dt)?;
        scalar_attr(&file, "steps", g.steps as u64)?;
        scalar_attr(&file, "steps_done", 0u64)?;
        str_attr(&file, "precision", model.precision.name())?;
        str_attr(&file, "backend", backend)?;
        scalar_attr(&file, "complete", false)?;
        mesh::write_grid(&file, g)?;
        write_materials(&file, model)?;

        let chunk = PROBE_CHUNK;
        let mut probes = Vec::new();
        if !model.probes.is_empty() {
            let root = file.create_group("probes")?;
            for p in &model.probes {
                let grp = root.create_group(&p.name)?;
                arr_attr(&grp, "position", &p.position)?;
                let time = growable::<f64>(&grp, "time", chunk)?;
                let mut datasets = Vec::new();
                str_attr(
                    &grp,
                    "interpolation",
                    if p.interpolate {
                        "trilinear"
                    } else {
                        "nearest"
                    },
                )?;
                for pc in &p.components {
                    let c = pc.component;
                    let ds = growable::<T>(&grp, c.name(), chunk)?;
                    // `index` is the nearest grid point; `position` is where the value holds:
                    // the requested point when interpolated, else that grid point.
                    arr_attr(&ds, "index", &pc.nearest.map(|i| i as i64))?;
                    let at = if p.interpolate {
                        p.position
                    } else {
                        g.position(c, pc.nearest.map(|i| i as f64))
                    };
                    arr_attr(&ds, "position", &at)?;
                    scalar_attr(&ds, "time_offset", time_offset(c, g.dt))?;
                    datasets.push(ds);
                }
                probes.push(ProbeSet {
                    datasets,
                    time,
                    values: vec![Vec::new(); p.components.len()],
                    written: 0,
                });
            }
        }
        probes.extend(ports::create::<T>(&file, model, chunk)?);
        let mut snapshots = Vec::new();
        if !model.snapshots.is_empty() {
            let root = file.create_group("snapshots")?;
            for snap in &model.snapshots {
                let grp = root.create_group(&snap.name)?;
                scalar_attr(&grp, "every", snap.every as i64)?;
                let time = growable::<f64>(&grp, "time", 256)?;
                let step = growable::<u64>(&grp, "step", 256)?;
                let mut datasets = Vec::new();
                let mut shapes = Vec::new();
                for &(c, region) in &snap.regions {
                    let n = region.counts();
                    let row_bytes = n[1] * n[2] * std::mem::size_of::<T>();
                    let cx = (MAX_CHUNK_BYTES / row_bytes.max(1)).clamp(1, n[0]);
                    let ds = grp
                        .new_dataset::<T>()
                        .chunk([1, cx, n[1], n[2]])
                        .shape(hdf5::SimpleExtents::new([
                            hdf5::Extent::resizable(0),
                            hdf5::Extent::fixed(n[0]),
                            hdf5::Extent::fixed(n[1]),
                            hdf5::Extent::fixed(n[2]),
                        ]))
                        .create(c.name())?;
                    let start = region.start.map(|i| i as f64);
                    arr_attr(&ds, "origin", &g.position(c, start))?;
                    arr_attr(&ds, "spacing", &mesh::sample_spacing(g, region.stride))?;
                    arr_attr(&ds, "index_start", &region.start.map(|i| i as i64))?;
                    arr_attr(&ds, "stride", &region.stride.map(|i| i as i64))?;
                    scalar_attr(&ds, "time_offset", time_offset(c, g.dt))?;
                    mesh::write_sample_coordinates(&grp, g, c, &region)?;
                    datasets.push(ds);
                    shapes.push(n);
                }
                snapshots.push(SnapshotSet {
                    datasets,
                    shapes,
                    time,
                    step,
                    count: 0,
                });
            }
        }
        let mut fluxes = Vec::new();
        let mut roots: Vec<(&str, hdf5::Group)> = Vec::new();
        for f in &model.fluxes {
            let name = f.group_root();
            if !roots.iter().any(|(n, _)| *n == name) {
                roots.push((name, file.create_group(name)?));
            }
        }
        for f in &model.fluxes {
            let root = &roots
                .iter()
                .find(|(n, _)| *n == f.group_root())
                .expect("the group of each kind was created")
                .1;
            let grp = root.create_group(&f.name)?;
            scalar_attr(&grp, "steps_accumulated", 0u64)?;
            // The DFT's sampling period in steps: the sums run over every `decimation`-th step
            // with weight `decimation dt`.
            scalar_attr(&grp, "decimation", f.decimation as u64)?;
            let patches = &f.patches;
            if let [plane] = &patches[..] {
                // A flux plane: where it lies.
                let a = plane.axis as usize;
                str_attr(&grp, "axis", plane.axis.name())?;
                scalar_attr(&grp, "index", plane.index as i64)?;
                scalar_attr(&grp, "position", g.coordinate(a, plane.index as f64))?;
                str_attr(&grp, "definition", "Re sum over the plane of (E x conj(H)) . n dA, with E(f), H(f) = sum_n F^n exp(-2 pi i f t_n) k dt over the steps n that are multiples of k = decimation; normal n along +axis")?;
            } else {
                far_field::box_attrs(&grp, g, patches)?;
                str_attr(&grp, "definition", "Re sum over the six faces of (E x conj(H)) . n dA (trapezoid rule over each face from E node to E node), with E(f), H(f) = sum_n F^n exp(-2 pi i f t_n) k dt over the steps n that are multiples of k = decimation; n the outward normal: the net outward power")?;
            }
            grp.new_dataset::<f64>()
                .shape(f.frequencies.len())
                .create("frequency")?
                .write_raw(&f.frequencies)?;
            let power = grp
                .new_dataset::<f64>()
                .shape(f.frequencies.len())
                .create(f.total_name())?;
            power.write_raw(&vec![0.0; f.frequencies.len()])?;
            let nf = f.frequencies.len();
            let fields = if f.far_field.is_some() {
                let surface = grp.create_group("surface")?;
                patches
                    .iter()
                    .map(|p| {
                        let face = surface.create_group(&p.face_name())?;
                        mesh::write_patch_coordinates(&face, g, p)?;
                        far_field::face_datasets(&face, g, p, nf, true)
                    })
                    .collect::<hdf5::Result<Vec<_>>>()?
            } else if !f.fields {
                Vec::new()
            } else if patches.len() == 1 {
                mesh::write_patch_coordinates(&grp, g, &patches[0])?;
                vec![far_field::face_datasets(&grp, g, &patches[0], nf, false)?]
            } else {
                patches
                    .iter()
                    .map(|p| {
                        let face = grp.create_group(&p.face_name())?;
                        mesh::write_patch_coordinates(&face, g, p)?;
                        far_field::face_datasets(&face, g, p, nf, true)
                    })
                    .collect::<hdf5::Result<Vec<_>>>()?
            };
            let far = match &f.far_field {
                Some(ff) => Some(far_field::FarSet::create(&grp, &f.frequencies, ff)?),
                None => None,
            };
            let relation = match (&model.tfsf, f.box_planes()) {
                (Some(t), Some((lo, hi))) => t.relation(lo, hi),
                _ => None,
            };
            let cross = match &model.tfsf {
                Some(_) => {
                    let zeros = vec![0.0; nf];
                    let incident = grp
                        .new_dataset::<f64>()
                        .shape(nf)
                        .create("incident_intensity")?;
                    incident.write_raw(&zeros)?;
                    str_attr(
                        &incident,
                        "units",
                        "W/m^2, |E_inc(f)|^2 / eta0 in the DFT normalisation of power",
                    )?;
                    let section = match (relation, f.far_field.is_some()) {
                        (Some(r), false) => {
                            let ds = grp.new_dataset::<f64>().shape(nf).create("cross_section")?;
                            ds.write_raw(&zeros)?;
                            str_attr(&ds, "units", "m^2")?;
                            str_attr(&grp, "kind", r.kind())?;
                            Some((r, ds))
                        }
                        _ => None,
                    };
                    // A far field's RCS needs the scattered field alone on its box.
                    if f.far_field.is_some() && relation != Some(crate::model::BoxRelation::Around)
                    {
                        grp.unlink("incident_intensity")?;
                        None
                    } else {
                        Some((incident, section))
                    }
                }
                None => None,
            };
            let modes = match &f.mode {
                Some(m) => Some(modes::ModeSet::create(&grp, g, f, m)?),
                None => None,
            };
            let diffraction = match &f.diffraction {
                Some(d) => Some(diffraction::DiffractionSet::create(&grp, f, d)?),
                None => None,
            };
            fluxes.push(FluxSet {
                diffraction,
                group: grp,
                power,
                fields,
                far,
                cross,
                modes,
            });
        }
        file.flush()?;
        Ok(Hdf5Writer {
            file,
            path: path.to_path_buf(),
            dt: g.dt,
            probes,
            snapshots,
            fluxes,
            times: Vec::new(),
            expected: 0,
        })
    }

    /// Record the probe values of step `step` (1-based: E at time step * dt), in model order:
    /// for each probe, one value per component.
    pub fn push_probes(&mut self, step: usize, values: &[f64]) {
        let mut it = values.iter();
        for p in &mut self.probes {
            for v in &mut p.values {
                v.push(*it.next().expect("one value per probe component"));
            }
        }
        if !self.probes.is_empty() {
            self.times.push(step as f64 * self.dt);
        }
    }

    /// Start snapshot `index` (model order) taken at `step`; returns the row it occupies.
    pub fn begin_snapshot(&mut self, index: usize, step: usize) -> Result<usize, OutputError> {
        let dt = self.dt;
        let path = self.path.clone();
        let s = &mut self.snapshots[index];
        let row = s.count;
        (|| -> hdf5::Result<()> {
            s.time.resize([row + 1])?;
            s.time.write_slice(&[step as f64 * dt], s![row..row + 1])?;
            s.step.resize([row + 1])?;
            s.step.write_slice(&[step as u64], s![row..row + 1])
        })()
        .map_err(err(&path, self.expected))?;
        s.count += 1;
        Ok(row)
    }

    /// Write x rows `first..` of component `component` (the snapshot's own order) of snapshot
    /// `index` at `row`: `data` holds whole rows of the region, C order. The frame is written
    /// as hyperslabs, part by part (one part in one process; each MPI rank's rows in turn), so
    /// no process holds a whole frame of a volume snapshot.
    pub fn write_snapshot_part<T: Real>(
        &mut self,
        index: usize,
        component: usize,
        row: usize,
        first: usize,
        data: &[T],
    ) -> Result<(), OutputError> {
        let s = &self.snapshots[index];
        let n = s.shapes[component];
        let rows = data.len() / (n[1] * n[2]).max(1);
        let ds = &s.datasets[component];
        let view = ArrayView4::from_shape((1, rows, n[1], n[2]), data)
            .expect("snapshot part is whole x rows of its region");
        (|| -> hdf5::Result<()> {
            if ds.shape()[0] < row + 1 {
                ds.resize([row + 1, n[0], n[1], n[2]])?;
            }
            ds.write_slice(view, s![row..row + 1, first..first + rows, .., ..])
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// Write component `component` (the snapshot's own order) of snapshot `index` at `row`.
    pub fn write_snapshot<T: Real>(
        &mut self,
        index: usize,
        component: usize,
        row: usize,
        data: &[T],
    ) -> Result<(), OutputError> {
        self.write_snapshot_part(index, component, row, 0, data)
    }

    /// Replace the spectrum of flux monitor `index` with `power` after `steps` steps, and its
    /// DFT fields with `dft` when the monitor keeps them (`dft` is then its DFTs; a monitor that
    /// keeps none passes `None`, its spectrum formed without reading them:
    /// [`crate::backend::Backend::flux_power`]).
    pub fn write_flux(
        &mut self,
        index: usize,
        power: &[f64],
        dft: Option<&crate::flux::FluxDft>,
        steps: usize,
    ) -> Result<(), OutputError> {
        let set = &self.fluxes[index];
        debug_assert_eq!(
            set.fields.is_empty(),
            dft.is_none(),
            "DFTs for the monitors that keep them"
        );
        (|| -> hdf5::Result<()> {
            set.power.write_raw(power)?;
            let patches = dft.map_or(&[][..], |d| &d.patches[..]);
            for (fields, patch) in set.fields.iter().zip(patches) {
                for (q, ds) in fields.iter().enumerate() {
                    let values: Vec<Complex> = patch.re[q]
                        .iter()
                        .zip(&patch.im[q])
                        .map(|(&r, &i)| Complex { r, i })
                        .collect();
                    ds.write_raw(&values)?;
                }
            }
            set.group
                .attr("steps_accumulated")?
                .write_scalar(&(steps as u64))
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// Write diffraction monitor `index`'s orders and its incident power.
    pub fn write_diffraction(
        &mut self,
        index: usize,
        orders: &crate::diffraction::Orders,
        incident: &[f64],
    ) -> Result<(), OutputError> {
        let set = self.fluxes[index]
            .diffraction
            .as_ref()
            .expect("a diffraction monitor's datasets");
        set.write(orders, incident)
            .map_err(err(&self.path, self.expected))
    }

    /// Write mode monitor `index`'s amplitudes: per frequency, per mode, forward then backward.
    pub fn write_mode_amplitudes(
        &mut self,
        index: usize,
        amplitudes: &[Vec<(crate::modes::Amplitude, crate::modes::Amplitude)>],
    ) -> Result<(), OutputError> {
        let set = self.fluxes[index]
            .modes
            .as_ref()
            .expect("a mode monitor's datasets");
        set.write(amplitudes)
            .map_err(err(&self.path, self.expected))
    }

    /// Write mode monitor `index`'s characteristic impedances `z` (`[frequency][mode]`, ohm,
    /// [`crate::model::VoltagePath::impedance`]) as `impedance` [frequency, mode].
    pub fn write_mode_impedance(
        &mut self,
        index: usize,
        z: &[Vec<f64>],
    ) -> Result<(), OutputError> {
        let grp = self.fluxes[index].group.clone();
        let modes = z.first().map_or(0, |r| r.len());
        let flat: Vec<f64> = z.iter().flatten().copied().collect();
        (|| -> hdf5::Result<()> {
            if grp.link_exists("impedance") {
                grp.unlink("impedance")?;
            }
            let ds = grp
                .new_dataset::<f64>()
                .shape([z.len(), modes])
                .create("impedance")?;
            ds.write_raw(&flat)?;
            str_attr(&ds, "definition", "|V|^2 / P: V the line integral of the mode's E along the monitor's `voltage` path, P = 1 its power in the flux's units (Re sum E x H* dA); for a TEM line its characteristic impedance")
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// With a TF/SF source: write monitor `index`'s incident intensity (W/m^2, per frequency)
    /// and, for a closed box around the TF/SF box or inside its total-field region, its
    /// scattering (net outward power over the incident intensity) or absorption (net inward
    /// power over it) cross-section from `power`. Nothing for a monitor without them.
    pub fn write_cross_section(
        &mut self,
        index: usize,
        incident: &[f64],
        power: &[f64],
    ) -> Result<(), OutputError> {
        let Some((ds, section)) = &self.fluxes[index].cross else {
            return Ok(());
        };
        (|| -> hdf5::Result<()> {
            ds.write_raw(incident)?;
            if let Some((relation, cs)) = section {
                let sign = match relation {
                    crate::model::BoxRelation::Around => 1.0,
                    crate::model::BoxRelation::Inside => -1.0,
                };
                let v: Vec<f64> = power
                    .iter()
                    .zip(incident)
                    .map(|(p, i)| sign * p / i)
                    .collect();
                cs.write_raw(&v)?;
            }
            Ok(())
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// Write the far-field pattern of monitor `index` (a far-field monitor), projected from its
    /// surface DFTs.
    pub fn write_far_field(
        &mut self,
        index: usize,
        pattern: &crate::far_field::Pattern,
    ) -> Result<(), OutputError> {
        let set = &self.fluxes[index];
        let far = set.far.as_ref().expect("a far-field monitor");
        far.write(pattern).map_err(err(&self.path, self.expected))
    }

    /// Write buffered probe values, update `steps_done` and flush the file to disk.
    pub fn flush<T: Real>(&mut self, steps_done: usize) -> Result<(), OutputError> {
        let path = self.path.clone();
        let times = &self.times;
        (|| -> hdf5::Result<()> {
            for p in &mut self.probes {
                let n = times.len();
                if n > p.written {
                    p.time.resize([n])?;
                    p.time
                        .write_slice(ArrayView1::from(&times[p.written..n]), s![p.written..n])?;
                    for (ds, v) in p.datasets.iter().zip(&p.values) {
                        let conv: Vec<T> =
                            v[p.written..n].iter().map(|&x| T::from_f64(x)).collect();
                        ds.resize([n])?;
                        ds.write_slice(ArrayView1::from(&conv[..]), s![p.written..n])?;
                    }
                    p.written = n;
                }
            }
            self.file
                .attr("steps_done")?
                .write_scalar(&(steps_done as u64))?;
            self.file.flush()
        })()
        .map_err(err(&path, self.expected))
    }

    /// Flush and set the `complete` attribute (true only for a run that reached its last step).
    pub fn finish<T: Real>(
        &mut self,
        steps_done: usize,
        complete: bool,
    ) -> Result<(), OutputError> {
        self.flush::<T>(steps_done)?;
        (|| -> hdf5::Result<()> {
            self.file.attr("complete")?.write_scalar(&complete)?;
            self.file.flush()
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// Probe series recorded so far (for the run summary and tests), per probe and component.
    pub fn probe_values(&self) -> Vec<Vec<Vec<f64>>> {
        self.probes.iter().map(|p| p.values.clone()).collect()
    }

    /// The output path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// H components live half a step before the E sample time.
fn time_offset(c: Component, dt: f64) -> f64 {
    if c.is_electric() {
        0.0
    } else {
        -0.5 * dt
    }
}
