//! The result file of a scan (design.md section 6, "With `[scan]`"): the layout of a single
//! run with one more axis, the trace, in front of each probe series and spectrum.
//!
//! - root attributes as for one run (those of trace 0's model), plus `traces` and
//!   `traces_done`: the number of leading traces whose results are in the file (traces are
//!   written in order, so rows `[0, traces_done)` are complete; rows after that are zeros);
//! - `/probes/<name>/<component>`: [traces, steps] in the run's precision, `/probes/<name>/time`
//!   `[steps]` (s), `/probes/<name>/positions` [traces, 3] (m, each trace's requested point);
//!   the group's `position` and the datasets' `index` and `position` attributes are trace 0's;
//! - `/flux/<name>/power` [traces, frequencies] (and with a TF/SF source `incident_intensity`
//!   and `cross_section` the same), `/flux/<name>/frequency` `[frequencies]`.
//!
//! The file is created by [`Hdf5Writer::create`] (so it replaces an earlier result whole or
//! not at all, and carries every root attribute and the materials), then its probe and flux
//! datasets are replaced by their per-trace forms before the first trace runs.
//!
//! The file is also the scan's checkpoint: a scan is not checkpointed mid-trace, and its
//! finished traces (`traces_done`) with the root attributes `scene`, `yee_version` and
//! `precision` are all `yee resume` needs to run the remaining traces into it
//! ([`ScanFileInfo`], [`ScanWriter::reopen`]).

use super::{
    arr_attr, err, scalar_attr, str_attr, time_offset, Hdf5Writer, OutputError, MAX_CHUNK_BYTES,
};
use crate::model::{BoxRelation, Model};
use crate::real::Real;
use hdf5::{Dataset, File, Group};
use ndarray::{s, Array2, ArrayView1};
use std::path::{Path, PathBuf};

/// What one finished trace recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceRecord {
    /// Per probe (model order), per component, one value per step.
    pub probes: Vec<Vec<Vec<f64>>>,
    /// Per flux monitor (model order), its power spectrum.
    pub power: Vec<Vec<f64>>,
    /// Per flux monitor, with a TF/SF source, the incident intensity per frequency.
    pub incident: Vec<Option<Vec<f64>>>,
}

/// One flux monitor's per-trace datasets.
struct ScanFlux {
    group: Group,
    power: Dataset,
    /// With a TF/SF source: `incident_intensity`, and `cross_section` with the box's relation.
    cross: Option<(Dataset, Option<(BoxRelation, Dataset)>)>,
}

/// Writes a scan's result file, trace by trace.
pub struct ScanWriter {
    file: File,
    path: PathBuf,
    expected: u64,
    /// Per probe, per component: the [traces, steps] dataset.
    probes: Vec<Vec<Dataset>>,
    fluxes: Vec<ScanFlux>,
    steps: usize,
}

/// What a scan's result file says about itself: what `yee resume` needs to continue it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanFileInfo {
    /// The scene text (root attribute `scene`).
    pub scene: String,
    /// The yee version that wrote it (`yee_version`).
    pub version: String,
    /// "f32" or "f64" (`precision`).
    pub precision: String,
    /// Traces of the scan (`traces`).
    pub traces: usize,
    /// Leading traces in the file (`traces_done`).
    pub traces_done: usize,
    /// Whether every trace is in (`complete`).
    pub complete: bool,
}

impl ScanFileInfo {
    /// Read `path`'s scan attributes: None when it cannot be opened or is not a scan's result
    /// (no `traces` attribute), so that the caller treats it as an ordinary run's file.
    pub fn read(path: &Path) -> Option<Self> {
        let file = File::with_options()
            .with_fapl(|p| p.file_locking(false))
            .open(path)
            .ok()?;
        Self::of(&file).ok().flatten()
    }

    /// The attributes of the open `file`: Ok(None) when it has no `traces` attribute.
    fn of(file: &File) -> hdf5::Result<Option<Self>> {
        if !file.attr_names()?.iter().any(|n| n == "traces") {
            return Ok(None);
        }
        let text = |name: &str| -> hdf5::Result<String> {
            Ok(file
                .attr(name)?
                .read_scalar::<hdf5::types::VarLenUnicode>()?
                .as_str()
                .to_string())
        };
        let count = |name: &str| -> hdf5::Result<usize> {
            Ok(file.attr(name)?.read_scalar::<u64>()? as usize)
        };
        Ok(Some(ScanFileInfo {
            scene: text("scene")?,
            version: text("yee_version")?,
            precision: text("precision")?,
            traces: count("traces")?,
            traces_done: count("traces_done")?,
            complete: file.attr("complete")?.read_scalar::<bool>()?,
        }))
    }

    /// Why the remaining traces cannot be run into this file for `model` (built from its
    /// scene), if they cannot: another yee version (whose arithmetic may differ, so the traces
    /// would not match the finished ones bit for bit), another precision or scene than the
    /// file's, another number of traces, or a finished scan.
    pub fn refusal(&self, model: &Model) -> Option<String> {
        let version = env!("CARGO_PKG_VERSION");
        if self.version != version {
            return Some(format!(
                "it was written by yee {}, this is yee {version}; resume it with yee {}, or run the scene again",
                self.version, self.version
            ));
        }
        if self.scene != model.scene_text {
            return Some("it holds another scene than the one being resumed".into());
        }
        if self.precision != model.precision.name() {
            return Some(format!(
                "it holds {} results; the scene runs in {}",
                self.precision,
                model.precision.name()
            ));
        }
        let traces = model.scan.as_ref().map_or(0, |s| s.traces);
        if self.traces != traces || self.traces_done > self.traces {
            return Some(format!(
                "it says {} of {} traces are done; its scene has {traces} traces: the file was altered",
                self.traces_done, self.traces
            ));
        }
        if self.complete {
            return Some(format!(
                "it is a finished scan (all {} traces are in it): nothing to resume; `yee run --overwrite` runs it again",
                self.traces
            ));
        }
        None
    }
}

/// A [traces, n] dataset of `T` in `group` named `name`, chunked by trace row.
fn per_trace<T: hdf5::H5Type>(
    group: &Group,
    name: &str,
    traces: usize,
    n: usize,
) -> hdf5::Result<Dataset> {
    let row = (MAX_CHUNK_BYTES / std::mem::size_of::<T>()).clamp(1, n.max(1));
    group
        .new_dataset::<T>()
        .chunk([1, row])
        .shape([traces, n])
        .create(name)
}

impl ScanWriter {
    /// Create `path` for `model`'s scan (which it must have), in precision `T`, recording
    /// `backend` as the engine.
    pub fn create<T: Real>(path: &Path, model: &Model, backend: &str) -> Result<Self, OutputError> {
        let scan = model
            .scan
            .as_ref()
            .expect("a scan writer is created for a model with a [scan]");
        let writer = Hdf5Writer::create::<T>(path, model, backend)?;
        let Hdf5Writer {
            file,
            path,
            expected,
            ..
        } = writer;
        let steps = model.grid.steps;
        let traces = scan.traces;
        let built = (|| -> hdf5::Result<(Vec<Vec<Dataset>>, Vec<ScanFlux>)> {
            scalar_attr(&file, "traces", traces as u64)?;
            scalar_attr(&file, "traces_done", 0u64)?;
            let mut probes = Vec::new();
            for (i, p) in model.probes.iter().enumerate() {
                let grp = file.group(&format!("probes/{}", p.name))?;
                grp.unlink("time")?;
                let times: Vec<f64> = (1..=steps).map(|n| n as f64 * model.grid.dt).collect();
                grp.new_dataset::<f64>()
                    .shape(steps)
                    .create("time")?
                    .write_raw(&times)?;
                let positions = scan.probe_positions(i).concat();
                let positions =
                    Array2::from_shape_vec((traces, 3), positions).expect("three per trace");
                let ds = grp
                    .new_dataset_builder()
                    .with_data(&positions)
                    .create("positions")?;
                str_attr(&ds, "units", "m")?;
                let mut datasets = Vec::new();
                for pc in &p.components {
                    let name = pc.component.name();
                    grp.unlink(name)?;
                    let ds = per_trace::<T>(&grp, name, traces, steps)?;
                    // The one-run dataset's attributes, for trace 0 (`positions` has them all).
                    let c = pc.component;
                    arr_attr(&ds, "index", &pc.nearest.map(|i| i as i64))?;
                    let at = if p.interpolate {
                        p.position
                    } else {
                        model.grid.position(c, pc.nearest.map(|i| i as f64))
                    };
                    arr_attr(&ds, "position", &at)?;
                    scalar_attr(&ds, "time_offset", time_offset(c, model.grid.dt))?;
                    datasets.push(ds);
                }
                probes.push(datasets);
            }
            let mut fluxes = Vec::new();
            for f in &model.fluxes {
                let grp = file.group(&format!("flux/{}", f.name))?;
                let nf = f.frequencies.len();
                grp.unlink("power")?;
                let power = per_trace::<f64>(&grp, "power", traces, nf)?;
                let relation = match (&model.tfsf, f.box_planes()) {
                    (Some(t), Some((lo, hi))) => t.relation(lo, hi),
                    _ => None,
                };
                let cross = if grp.link_exists("incident_intensity") {
                    grp.unlink("incident_intensity")?;
                    let incident = per_trace::<f64>(&grp, "incident_intensity", traces, nf)?;
                    str_attr(
                        &incident,
                        "units",
                        "W/m^2, |E_inc(f)|^2 / eta0 in the DFT normalisation of power",
                    )?;
                    let section = match relation {
                        Some(r) if grp.link_exists("cross_section") => {
                            grp.unlink("cross_section")?;
                            let ds = per_trace::<f64>(&grp, "cross_section", traces, nf)?;
                            str_attr(&ds, "units", "m^2")?;
                            Some((r, ds))
                        }
                        _ => None,
                    };
                    Some((incident, section))
                } else {
                    None
                };
                fluxes.push(ScanFlux {
                    group: grp,
                    power,
                    cross,
                });
            }
            file.flush()?;
            Ok((probes, fluxes))
        })();
        let (probes, fluxes) = built.map_err(err(&path, expected))?;
        Ok(ScanWriter {
            file,
            path,
            expected,
            probes,
            fluxes,
            steps,
        })
    }

    /// Reopen the result `path` of an interrupted scan of `model` to write its remaining
    /// traces: check it with [`ScanFileInfo::refusal`] and the shapes of its per-trace
    /// datasets, and return the writer and the traces already in it (`traces_done`). Rows
    /// after those may hold a trace written just before the run stopped (before
    /// `traces_done` counted it): the resumed run writes them again, identically.
    pub fn reopen(path: &Path, model: &Model) -> Result<(Self, usize), OutputError> {
        let expected = super::file_bytes(model);
        let refuse = |message: String| OutputError {
            path: path.to_path_buf(),
            message: format!("cannot resume the scan: {message}"),
        };
        let file = File::with_options()
            .with_fapl(super::result_access)
            .open_rw(path)
            .map_err(|e| refuse(format!("cannot open it: {e}")))?;
        let info = match ScanFileInfo::of(&file) {
            Ok(Some(info)) => info,
            Ok(None) => return Err(refuse("it is not a scan's result (no `traces`)".into())),
            Err(e) => return Err(refuse(format!("its attributes cannot be read: {e}"))),
        };
        if let Some(why) = info.refusal(model) {
            return Err(refuse(why));
        }
        let (traces, steps) = (info.traces, model.grid.steps);
        let altered = |name: &str| {
            refuse(format!(
                "its dataset `{name}` is missing or has another shape than the scene's: the file was altered"
            ))
        };
        let open = |g: &Group, name: &str, n: usize| -> Result<Dataset, OutputError> {
            match g.dataset(name) {
                Ok(ds) if ds.shape() == [traces, n] => Ok(ds),
                _ => Err(altered(&format!("{}/{name}", g.name()))),
            }
        };
        let group = |name: &str| file.group(name).map_err(|_| altered(name));
        let mut probes = Vec::new();
        for p in &model.probes {
            let grp = group(&format!("probes/{}", p.name))?;
            let datasets = p
                .components
                .iter()
                .map(|pc| open(&grp, pc.component.name(), steps))
                .collect::<Result<Vec<_>, _>>()?;
            probes.push(datasets);
        }
        let mut fluxes = Vec::new();
        for f in &model.fluxes {
            let grp = group(&format!("flux/{}", f.name))?;
            let nf = f.frequencies.len();
            let power = open(&grp, "power", nf)?;
            let relation = match (&model.tfsf, f.box_planes()) {
                (Some(t), Some((lo, hi))) => t.relation(lo, hi),
                _ => None,
            };
            let cross = if grp.link_exists("incident_intensity") {
                let incident = open(&grp, "incident_intensity", nf)?;
                let section = match relation {
                    Some(r) if grp.link_exists("cross_section") => {
                        Some((r, open(&grp, "cross_section", nf)?))
                    }
                    _ => None,
                };
                Some((incident, section))
            } else {
                None
            };
            fluxes.push(ScanFlux {
                group: grp,
                power,
                cross,
            });
        }
        Ok((
            ScanWriter {
                file,
                path: path.to_path_buf(),
                expected,
                probes,
                fluxes,
                steps,
            },
            info.traces_done,
        ))
    }

    /// Write trace `k`'s results into row `k` of every per-trace dataset (probe values in
    /// precision `T`, as a single run stores them).
    pub fn write_trace<T: Real>(
        &mut self,
        k: usize,
        record: &TraceRecord,
    ) -> Result<(), OutputError> {
        let steps = self.steps;
        (|| -> hdf5::Result<()> {
            for (datasets, series) in self.probes.iter().zip(&record.probes) {
                for (ds, values) in datasets.iter().zip(series) {
                    // A finished trace ran every step and no more: a series of another length
                    // is a bug of the stepping, which truncating would hide.
                    assert_eq!(values.len(), steps, "a finished trace has a value per step");
                    let conv: Vec<T> = values.iter().map(|&x| T::from_f64(x)).collect();
                    ds.write_slice(ArrayView1::from(&conv[..]), s![k, 0..conv.len()])?;
                }
            }
            for (i, f) in self.fluxes.iter().enumerate() {
                let power = &record.power[i];
                f.power
                    .write_slice(ArrayView1::from(&power[..]), s![k, ..])?;
                if let (Some((ds, section)), Some(Some(incident))) =
                    (&f.cross, record.incident.get(i))
                {
                    ds.write_slice(ArrayView1::from(&incident[..]), s![k, ..])?;
                    if let Some((relation, cs)) = section {
                        // Scattering: net outward power over the incident intensity; absorption:
                        // net inward power over it (as a single run's file).
                        let sign = match relation {
                            BoxRelation::Around => 1.0,
                            BoxRelation::Inside => -1.0,
                        };
                        let v: Vec<f64> = power
                            .iter()
                            .zip(incident)
                            .map(|(p, i)| sign * p / i)
                            .collect();
                        cs.write_slice(ArrayView1::from(&v[..]), s![k, ..])?;
                    }
                }
            }
            Ok(())
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// Record that the first `done` traces are in the file (`traces_done`, and `steps_done`:
    /// the steps of each of them) and flush it to disk.
    pub fn set_done(&mut self, done: usize) -> Result<(), OutputError> {
        let steps = if done > 0 { self.steps } else { 0 };
        (|| -> hdf5::Result<()> {
            self.file
                .attr("traces_done")?
                .write_scalar(&(done as u64))?;
            self.file
                .attr("steps_done")?
                .write_scalar(&(steps as u64))?;
            for f in &self.fluxes {
                f.group
                    .attr("steps_accumulated")?
                    .write_scalar(&(steps as u64))?;
            }
            self.file.flush()
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// [`ScanWriter::set_done`], then set `complete` (true only when every trace is in).
    pub fn finish(&mut self, done: usize, complete: bool) -> Result<(), OutputError> {
        self.set_done(done)?;
        (|| -> hdf5::Result<()> {
            self.file.attr("complete")?.write_scalar(&complete)?;
            self.file.flush()
        })()
        .map_err(err(&self.path, self.expected))
    }

    /// The output path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
