//! Reopening a result file to continue a run from a checkpoint (`yee resume`), and the
//! fingerprint that tells whether the file is still the one the checkpoint was taken with.
//!
//! A checkpoint records, per probe, how many rows the file held and a checksum of its last
//! rows, and per snapshot, how many frames it held and a checksum of their steps and of the
//! start of its last frame ([`Fingerprint`]). The run may have gone on writing after the
//! checkpoint (it was killed later), so on resume the file may hold more rows: they are cut
//! back to the checkpoint's, and the run writes them again, identically. A file with fewer
//! rows, or other values in the rows the checkpoint saw, was changed since and is refused.

use super::{err, file_bytes, Hdf5Writer, ProbeSet, SnapshotSet};
use crate::model::Model;
use hdf5::{Dataset, File};
use ndarray::s;
use std::path::Path;

/// Probe rows (from the end) the fingerprint reads.
const PROBE_TAIL_ROWS: usize = 256;
/// Values of a snapshot's last frame (from its start, per component) the fingerprint reads:
/// enough to tell another run's frame, without reading a large frame whole each checkpoint.
const SNAPSHOT_HEAD_VALUES: usize = 1 << 16;

/// What a result file holds at a checkpoint: per probe (model order) its rows and a checksum
/// of the last of them (values and times), per snapshot its frames and a checksum of their
/// steps and of the first values of the last frame of each component.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fingerprint {
    /// Rows of each probe.
    pub probe_rows: Vec<u64>,
    /// Checksum of each probe's last rows.
    pub probe_hash: Vec<u64>,
    /// Frames of each snapshot.
    pub snapshot_rows: Vec<u64>,
    /// Checksum of each snapshot's steps and last frame's start.
    pub snapshot_hash: Vec<u64>,
}

/// FNV-1a over 64-bit words: a checksum to notice a changed file, not a defence against
/// someone forging one.
pub fn fnv1a(words: impl IntoIterator<Item = u64>, mut h: u64) -> u64 {
    for w in words {
        for b in w.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// The FNV-1a offset basis.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

fn read_f64(ds: &Dataset, a: usize, b: usize) -> hdf5::Result<Vec<f64>> {
    if b <= a {
        return Ok(Vec::new());
    }
    Ok(ds.read_slice_1d::<f64, _>(s![a..b])?.to_vec())
}

fn probe_hash(p: &ProbeSet, rows: usize) -> hdf5::Result<u64> {
    let a = rows.saturating_sub(PROBE_TAIL_ROWS);
    let mut h = fnv1a([rows as u64], FNV_START);
    for ds in std::iter::once(&p.time).chain(&p.datasets) {
        h = fnv1a(read_f64(ds, a, rows)?.iter().map(|v| v.to_bits()), h);
    }
    Ok(h)
}

fn snapshot_hash(s: &SnapshotSet, rows: usize) -> hdf5::Result<u64> {
    let steps: Vec<u64> = if rows > 0 {
        s.step.read_slice_1d::<u64, _>(s![0..rows])?.to_vec()
    } else {
        Vec::new()
    };
    let mut h = fnv1a(steps.iter().copied().chain([rows as u64]), FNV_START);
    if rows > 0 {
        for (ds, n) in s.datasets.iter().zip(&s.shapes) {
            // The first whole x planes of the last frame within SNAPSHOT_HEAD_VALUES.
            let per = (n[1] * n[2]).max(1);
            let planes = (SNAPSHOT_HEAD_VALUES / per).clamp(1, n[0].max(1));
            let v = ds.read_slice::<f64, _, ndarray::Ix3>(s![rows - 1, 0..planes, .., ..])?;
            h = fnv1a(v.iter().map(|x| x.to_bits()), h);
        }
    }
    Ok(h)
}

impl Hdf5Writer {
    /// The fingerprint of what the file holds now (call after [`Hdf5Writer::flush`], so no
    /// probe row is pending).
    pub fn fingerprint(&self) -> Result<Fingerprint, super::OutputError> {
        let probe_rows: Vec<u64> = self.probes.iter().map(|p| p.written as u64).collect();
        let snapshot_rows: Vec<u64> = self.snapshots.iter().map(|s| s.count as u64).collect();
        self.fingerprint_at(&probe_rows, &snapshot_rows)
            .map_err(err(&self.path, self.expected))
    }

    fn fingerprint_at(
        &self,
        probe_rows: &[u64],
        snapshot_rows: &[u64],
    ) -> hdf5::Result<Fingerprint> {
        let mut f = Fingerprint {
            probe_rows: probe_rows.to_vec(),
            snapshot_rows: snapshot_rows.to_vec(),
            ..Default::default()
        };
        for (p, &n) in self.probes.iter().zip(probe_rows) {
            f.probe_hash.push(probe_hash(p, n as usize)?);
        }
        for (s, &n) in self.snapshots.iter().zip(snapshot_rows) {
            f.snapshot_hash.push(snapshot_hash(s, n as usize)?);
        }
        Ok(f)
    }

    /// Open the result `path` of an interrupted run of `model` to continue it from a
    /// checkpoint taken after `step` steps, when the file held `mark`: check that it is that
    /// run's file
    /// (same scene, precision, not complete, `mark`'s rows and checksums), cut every probe
    /// and snapshot back to `mark`'s rows, and load the probe rows into memory as
    /// [`Hdf5Writer::create`]'s writer holds them by then. The surface DFT datasets are
    /// rewritten whole at the next flush and at the end, as in any run.
    pub fn reopen(
        path: &Path,
        model: &Model,
        step: usize,
        mark: &Fingerprint,
    ) -> Result<Self, super::OutputError> {
        let expected = file_bytes(model);
        let refuse = |message: String| super::OutputError {
            path: path.to_path_buf(),
            message,
        };
        let file = File::with_options()
            .with_fapl(super::result_access)
            .open_rw(path)
            .map_err(|e| refuse(format!("cannot open it to continue the run: {e}")))?;
        let text = |name: &str| -> Option<String> {
            file.attr(name)
                .and_then(|a| a.read_scalar::<hdf5::types::VarLenUnicode>())
                .ok()
                .map(|v| v.as_str().to_string())
        };
        if text("scene").as_deref() != Some(model.scene_text.as_str()) {
            return Err(refuse(
                "it holds another scene than the checkpoint: it was replaced since".into(),
            ));
        }
        if text("precision").as_deref() != Some(model.precision.name()) {
            return Err(refuse(format!(
                "it was written in another precision than the checkpoint's {}",
                model.precision.name()
            )));
        }
        let mut writer = Self::open_sets(file, path, model).map_err(err(path, expected))?;
        writer.expected = expected;
        let changed = || {
            refuse(
                "it changed since the checkpoint was written (other rows than those the checkpoint saw); run the scene again with `yee run`".into(),
            )
        };
        if mark.probe_rows.len() != writer.probes.len()
            || mark.snapshot_rows.len() != writer.snapshots.len()
        {
            return Err(changed());
        }
        for (p, &n) in writer.probes.iter().zip(&mark.probe_rows) {
            if p.time.size() < n as usize {
                return Err(changed());
            }
        }
        for (s, &n) in writer.snapshots.iter().zip(&mark.snapshot_rows) {
            if s.step.size() < n as usize || s.datasets.iter().any(|d| d.shape()[0] < n as usize) {
                return Err(changed());
            }
        }
        let now = writer
            .fingerprint_at(&mark.probe_rows, &mark.snapshot_rows)
            .map_err(err(path, expected))?;
        if now != *mark {
            return Err(changed());
        }
        writer.cut_back(step, mark).map_err(err(path, expected))?;
        Ok(writer)
    }

    /// The writer over the datasets [`Hdf5Writer::create`] made in `file` for `model`.
    fn open_sets(file: File, path: &Path, model: &Model) -> hdf5::Result<Self> {
        let mut probes = Vec::new();
        for p in &model.probes {
            let grp = file.group(&format!("probes/{}", p.name))?;
            let datasets = p
                .components
                .iter()
                .map(|pc| grp.dataset(pc.component.name()))
                .collect::<hdf5::Result<Vec<_>>>()?;
            probes.push(ProbeSet {
                datasets,
                time: grp.dataset("time")?,
                values: vec![Vec::new(); p.components.len()],
                written: 0,
            });
        }
        probes.extend(super::ports::open(&file, model)?);
        let mut snapshots = Vec::new();
        for snap in &model.snapshots {
            let grp = file.group(&format!("snapshots/{}", snap.name))?;
            let datasets = snap
                .regions
                .iter()
                .map(|(c, _)| grp.dataset(c.name()))
                .collect::<hdf5::Result<Vec<_>>>()?;
            snapshots.push(SnapshotSet {
                datasets,
                shapes: snap.regions.iter().map(|(_, r)| r.counts()).collect(),
                time: grp.dataset("time")?,
                step: grp.dataset("step")?,
                count: 0,
            });
        }
        let mut fluxes = Vec::new();
        for f in &model.fluxes {
            let root = f.group_root();
            let grp = file.group(&format!("{root}/{}", f.name))?;
            let open4 =
                |g: &hdf5::Group, patch: &crate::model::Patch| -> hdf5::Result<[Dataset; 4]> {
                    let (b, c) = crate::flux::tangential(patch.axis as usize);
                    let [d0, d1, d2, d3] = [b, c, 3 + b, 3 + c]
                        .map(|k| g.dataset(crate::model::Component::ALL[k].name()));
                    Ok([d0?, d1?, d2?, d3?])
                };
            let fields = if f.far_field.is_some() {
                let surface = grp.group("surface")?;
                f.patches
                    .iter()
                    .map(|p| open4(&surface.group(&p.face_name())?, p))
                    .collect::<hdf5::Result<Vec<_>>>()?
            } else if !f.fields {
                Vec::new()
            } else if f.patches.len() == 1 {
                vec![open4(&grp, &f.patches[0])?]
            } else {
                f.patches
                    .iter()
                    .map(|p| open4(&grp.group(&p.face_name())?, p))
                    .collect::<hdf5::Result<Vec<_>>>()?
            };
            let far = f
                .far_field
                .as_ref()
                .map(|ff| super::far_field::FarSet::create(&grp, &f.frequencies, ff))
                .transpose()?;
            let relation = match (&model.tfsf, f.box_planes()) {
                (Some(t), Some((lo, hi))) => t.relation(lo, hi),
                _ => None,
            };
            let cross = if grp.link_exists("incident_intensity") {
                let section = match relation {
                    Some(r) if grp.link_exists("cross_section") => {
                        Some((r, grp.dataset("cross_section")?))
                    }
                    _ => None,
                };
                Some((grp.dataset("incident_intensity")?, section))
            } else {
                None
            };
            let modes = match &f.mode {
                Some(m) => Some(super::modes::ModeSet::open(&grp, m.count)?),
                None => None,
            };
            let diffraction = match &f.diffraction {
                Some(_) => Some(super::diffraction::DiffractionSet::open(&grp)?),
                None => None,
            };
            fluxes.push(super::FluxSet {
                power: grp.dataset(f.total_name())?,
                diffraction,
                group: grp,
                fields,
                far,
                cross,
                modes,
            });
        }
        Ok(Hdf5Writer {
            file,
            path: path.to_path_buf(),
            dt: model.grid.dt,
            probes,
            snapshots,
            fluxes,
            times: Vec::new(),
            expected: 0,
        })
    }

    /// Cut every probe and snapshot back to `mark`'s rows and load the probe rows kept (the
    /// writer holds every row of the run in memory, as f64: the stored precision widened,
    /// exactly, which rounds back to the same stored value).
    fn cut_back(&mut self, step: usize, mark: &Fingerprint) -> hdf5::Result<()> {
        for (p, &n) in self.probes.iter_mut().zip(&mark.probe_rows) {
            let n = n as usize;
            for (ds, v) in p.datasets.iter().zip(p.values.iter_mut()) {
                *v = read_f64(ds, 0, n)?;
                ds.resize([n])?;
            }
            p.time.resize([n])?;
            p.written = n;
        }
        // Every probe has a row per step: the times are the first probe's.
        if let Some(p) = self.probes.first() {
            self.times = read_f64(&p.time, 0, p.written)?;
        }
        for (s, &n) in self.snapshots.iter_mut().zip(&mark.snapshot_rows) {
            let n = n as usize;
            for (ds, shape) in s.datasets.iter().zip(&s.shapes) {
                ds.resize([n, shape[0], shape[1], shape[2]])?;
            }
            s.time.resize([n])?;
            s.step.resize([n])?;
            s.count = n;
        }
        // Until the next flush the file says what it holds: the checkpoint's steps.
        self.file.attr("steps_done")?.write_scalar(&(step as u64))?;
        self.file.attr("complete")?.write_scalar(&false)?;
        self.file.flush()
    }
}
