//! The time loop's side of the queued monitors: probe rows, snapshot frames and flux spectra,
//! handed to the writer once their data has reached the host.

use crate::backend::{Backend, GatherTicket};
use crate::model::{Component, Model, Region};
use crate::output::{Hdf5Writer, OutputError};
use std::collections::VecDeque;

/// Store every flux spectrum and surface DFT accumulated so far (after a device failure, the
/// file keeps the spectra last written); with `project` (the end of the run), also project the
/// far-field monitors' surface DFTs onto their angles ([`crate::far_field::project`]).
pub(super) fn write_fluxes<B: Backend>(
    writer: &mut Hdf5Writer,
    backend: &mut B,
    model: &Model,
    steps_done: usize,
    project: bool,
) -> Result<(), OutputError> {
    for (i, f) in model.fluxes.iter().enumerate() {
        // A monitor whose DFTs the file keeps reads them back; the others only their spectrum,
        // formed where the DFTs are (on a GPU, a few values per row read back).
        if let Some(mode) = &f.mode {
            // A mode monitor reads its DFTs back and splits them into the plane's modes.
            let Some(dft) = backend.flux_dft(i) else {
                continue;
            };
            writer.write_flux(i, &dft.power(), None, steps_done)?;
            if let Some(basis) = mode.basis.get() {
                let amplitudes: Vec<_> = basis
                    .iter()
                    .enumerate()
                    .map(|(k, b)| crate::modes::decompose(b, &dft.patches[0], k))
                    .collect();
                writer.write_mode_amplitudes(i, &amplitudes)?;
                if let Some(path) = &mode.voltage {
                    let z: Vec<Vec<f64>> = basis.iter().map(|b| path.impedance(b)).collect();
                    writer.write_mode_impedance(i, &z)?;
                }
            }
            continue;
        }
        if let Some(d) = &f.diffraction {
            // A diffraction monitor reads its DFTs back and splits them into orders.
            let Some(dft) = backend.flux_dft(i) else {
                continue;
            };
            let power = dft.power();
            writer.write_flux(i, &power, f.fields.then_some(&dft), steps_done)?;
            let orders = crate::diffraction::decompose(model, f, d, &dft.patches[0]);
            let incident = d.incident.get().map_or(&[][..], |v| &v.power[..]);
            writer.write_diffraction(i, &orders, incident)?;
            continue;
        }
        let (power, dft) = if f.fields || f.far_field.is_some() {
            let Some(dft) = backend.flux_dft(i) else {
                continue;
            };
            (dft.power(), Some(dft))
        } else {
            let Some(power) = backend.flux_power(i) else {
                continue;
            };
            (power, None)
        };
        writer.write_flux(i, &power, dft.as_ref(), steps_done)?;
        if let Some(t) = &model.tfsf {
            let incident = t.incident_intensity(&f.frequencies, model.grid.dt, steps_done);
            writer.write_cross_section(i, &incident, &power)?;
        }
        if let (true, Some(ff), Some(dft)) = (project, &f.far_field, &dft) {
            let pattern = crate::far_field::project(
                &crate::far_field::Geometry::of(&model.grid),
                &dft.patches,
                &f.frequencies,
                &ff.theta,
                &ff.phi,
            );
            writer.write_far_field(i, &pattern)?;
            writer.write_antenna::<B::Real>(i, model, &pattern, &power)?;
        }
    }
    Ok(())
}

/// The time loop's side of the queued monitors: what is queued and how far the file has got.
pub(super) struct Monitors {
    /// Every probe sample in model order: one row of values per step.
    pub(super) samples: Vec<(Component, [usize; 3])>,
    /// Each snapshot's components and regions.
    snapshots: Vec<Vec<(Component, Region)>>,
    /// Queued snapshot components, oldest first: (snapshot, step, component, ticket).
    pending: VecDeque<(usize, usize, usize, GatherTicket)>,
    /// The file row of the frame each snapshot is writing.
    rows: Vec<usize>,
    /// Probe rows written (row r holds step r + 1).
    probe_rows: usize,
    values: Vec<f64>,
    /// One row of probe values, one per probe component (see `Probe::combine`).
    combined: Vec<f64>,
}

impl Monitors {
    pub(super) fn new(model: &Model) -> Self {
        Monitors {
            samples: model
                .every_probe()
                .flat_map(|p| p.samples.iter().copied())
                .collect(),
            snapshots: model.snapshots.iter().map(|s| s.regions.clone()).collect(),
            pending: VecDeque::new(),
            rows: vec![0; model.snapshots.len()],
            probe_rows: 0,
            values: Vec::new(),
            combined: Vec::new(),
        }
    }

    /// Continue a run resumed after `steps_done` steps: the file holds a probe row for each
    /// of them (nothing is queued: a checkpoint is taken with every monitor drained).
    pub(super) fn resume_after(&mut self, steps_done: usize) {
        self.probe_rows = steps_done;
    }

    /// Write the oldest queued snapshot component, waiting for its data if needed. True if
    /// it was written (false after a device failure: the frame is lost).
    fn write_oldest<B: Backend>(
        &mut self,
        writer: &mut Hdf5Writer,
        backend: &mut B,
    ) -> Result<bool, OutputError> {
        let Some((s, step, ci, ticket)) = self.pending.pop_front() else {
            return Ok(false);
        };
        // In parts along x (one part in one process; over MPI ranks, each rank's rows as they
        // arrive), each written as its hyperslab of the frame.
        let rows = &mut self.rows;
        let mut begun = false;
        backend.take_gather_parts(ticket, |first, values| {
            if ci == 0 && !begun {
                rows[s] = writer.begin_snapshot(s, step)?;
            }
            begun = true;
            writer.write_snapshot_part(s, ci, rows[s], first, values)
        })
    }

    /// Write queued snapshot components in order while their data is in host memory (with
    /// `wait`, all of them). True if any was written.
    pub(super) fn write_snapshots<B: Backend>(
        &mut self,
        writer: &mut Hdf5Writer,
        backend: &mut B,
        wait: bool,
    ) -> Result<bool, OutputError> {
        let mut wrote = false;
        while let Some((_, _, _, ticket)) = self.pending.front() {
            if !wait && !backend.gather_ready(ticket) {
                break;
            }
            wrote |= self.write_oldest(writer, backend)?;
        }
        Ok(wrote)
    }

    /// Queue snapshot `s` taken at `step`, component by component, writing each as soon as
    /// its data is here (at once on the CPU, so one gather buffer serves every component). A
    /// frame of `s` still queued from its last turn is written first (waiting for it): the
    /// backend reuses its buffers. True if anything was written.
    pub(super) fn queue_snapshot<B: Backend>(
        &mut self,
        writer: &mut Hdf5Writer,
        backend: &mut B,
        s: usize,
        step: usize,
    ) -> Result<bool, OutputError> {
        let mut wrote = false;
        while self.pending.iter().any(|p| p.0 == s) {
            wrote |= self.write_oldest(writer, backend)?;
        }
        for ci in 0..self.snapshots[s].len() {
            let (c, region) = self.snapshots[s][ci];
            let ticket = backend.queue_gather(c, &region);
            self.pending.push_back((s, step, ci, ticket));
            wrote |= self.write_snapshots(writer, backend, false)?;
        }
        Ok(wrote)
    }

    /// Hand the probe rows that reached the host to the writer (with `wait`, every row queued).
    /// Drain the queued probe rows (waiting for the rest when `wait`), combine each row into
    /// one value per component of `probes` and hand it to the writer.
    pub(super) fn write_probes<B: Backend>(
        &mut self,
        model: &Model,
        writer: &mut Hdf5Writer,
        backend: &mut B,
        wait: bool,
    ) {
        if self.samples.is_empty() {
            return;
        }
        self.values.clear();
        backend.drain_probes(&mut self.values, wait);
        for row in self.values.chunks_exact(self.samples.len()) {
            self.probe_rows += 1;
            // Each probe's stencil values, in order, become one value per component.
            self.combined.clear();
            let mut first = 0;
            for p in model.every_probe() {
                p.combine(&row[first..first + p.samples.len()], &mut self.combined);
                first += p.samples.len();
            }
            writer.push_probes(self.probe_rows, &self.combined);
        }
    }
}
