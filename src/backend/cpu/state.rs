//! The CPU backend's side of [`State`]: export and import of the whole run state.
//!
//! Every per-cell array of a slab is stored by owned x plane (or, for a pass's compact cell
//! list, by cell index within the slab), so the global layout is the slabs' arrays
//! concatenated in x order. The arrays besides the fields are the ones the passes register
//! ([`Slab::registered`]); this file names none of them.

use super::{CpuBackend, Slab};
use crate::backend::parts::{
    load_in_parts, mismatch, planes_per_part, Assembler, Loaded, PartReader,
};
use crate::backend::Backend;
use crate::backend::{
    check_len, Spread, State, StateArray, StateError, StatePlace, StateShape, StateSink,
};
use crate::decomp::HaloCopy;
use crate::real::Real;

impl<T: Real> Slab<T> {
    /// Every array the passes register for this slab, by name: (name, spread, values).
    fn registered<'a>(
        &'a self,
        slots: impl Fn(u8) -> usize,
        cell_passes: &[std::sync::Arc<dyn crate::model::CellPass>],
    ) -> Vec<(String, Spread, &'a Vec<T>)> {
        let mut all = self.cpml_arrays();
        all.extend(self.dispersive_arrays(slots));
        all.extend(self.tfsf_arrays());
        all.extend(self.cell_arrays(cell_passes));
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// [`Self::registered`] to write, by name.
    fn registered_mut(
        &mut self,
        cell_passes: &[std::sync::Arc<dyn crate::model::CellPass>],
    ) -> Vec<(String, &mut Vec<T>)> {
        let Slab {
            psi_x,
            psi_y,
            psi_z,
            dispersive,
            incident,
            cell_state,
            ..
        } = self;
        let mut all = super::cpml::psi_arrays_mut([psi_x, psi_y, psi_z]);
        all.extend(super::dispersive::group_arrays_mut(dispersive));
        all.extend(super::tfsf::incident_arrays_mut(incident));
        all.extend(super::cells::cell_arrays_mut(cell_passes, cell_state));
        all
    }
}

impl<T: Real> CpuBackend<T> {
    /// The slabs in x order (the engine builds them from ranges that tile [0, nx), in order;
    /// sorting keeps the layout right whatever order they came in).
    fn slab_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.slabs.len()).collect();
        order.sort_by_key(|&i| self.slabs[i].range.x0);
        order
    }

    /// State values per dispersive cell of material `m`.
    fn state_len(&self, m: u8) -> usize {
        self.shared.dispersive[m as usize]
            .as_ref()
            .map_or(0, |d| d.state_len())
    }

    /// The surface ports' state of slab `s` (an index into `slabs`), by name.
    fn port_arrays(&self, s: usize) -> Vec<(String, Spread, Vec<T>)> {
        self.ports.as_ref().map_or(Vec::new(), |p| p.slab_arrays(s))
    }

    /// Slab `s`'s registered arrays, by name.
    fn slab_arrays<'a>(&self, s: &'a Slab<T>) -> Vec<(String, Spread, &'a Vec<T>)> {
        s.registered(|m| self.state_len(m), &self.shared.cell_passes)
    }

    /// The whole state ([`crate::backend::Backend::export_state`]): [`Self::write_parts`]
    /// put together in memory.
    pub(super) fn export(&mut self) -> State<T> {
        let mut whole = Assembler::new(self.shared.ny * self.shared.nz);
        self.write_parts(0, &mut whole)
            .expect("the engine's own pieces fit its own shape");
        whole.into_state(0)
    }

    /// Hand the whole state after step `step` to `sink` part by part
    /// ([`crate::backend::Backend::write_state`]), slab by slab in x order: the fields in
    /// parts of at most [`planes_per_part`] planes (`checkpoint_part_bytes`), then the slab's
    /// registered arrays, and last the surface DFTs. The file is [`Self::export`]'s, while
    /// host memory holds one part at a time instead of a second copy of the whole state.
    pub(super) fn write_parts(
        &mut self,
        step: usize,
        sink: &mut dyn StateSink<T>,
    ) -> Result<(), String> {
        let (order, shapes) = self.slab_shapes();
        sink.begin(&StateShape::whole(&shapes))?;
        let plane = self.shared.ny * self.shared.nz;
        let per_part = planes_per_part(plane, std::mem::size_of::<T>(), self.checkpoint_part_bytes);
        for (j, &i) in order.iter().enumerate() {
            let s = &self.slabs[i];
            let n = s.range.len();
            for a in (0..n).step_by(per_part) {
                let planes = (a + 1) * plane..(a + 1 + per_part.min(n - a)) * plane;
                let mut part = State::<T> {
                    step,
                    ..Default::default()
                };
                for c in 0..3 {
                    part.fields[c] = s.e[c][planes.clone()].to_vec();
                    part.fields[3 + c] = s.h[c][planes.clone()].to_vec();
                }
                let place = StatePlace {
                    x0: s.range.x0 + a,
                    ..Default::default()
                };
                sink.part(&part, &place)?;
            }
            let mut arrays: Vec<StateArray<T>> = self
                .slab_arrays(s)
                .into_iter()
                .map(|(name, spread, values)| StateArray {
                    name,
                    spread,
                    values: values.clone(),
                })
                .collect();
            arrays.extend(
                self.port_arrays(i)
                    .into_iter()
                    .map(|(name, spread, values)| StateArray {
                        name,
                        spread,
                        values,
                    }),
            );
            arrays.sort_by(|a, b| a.name.cmp(&b.name));
            let part = State::<T> {
                step,
                arrays,
                ..Default::default()
            };
            sink.part(&part, &StateShape::place(&shapes, j, s.range.x0))?;
        }
        if let Some(flux) = &mut self.monitors.flux {
            let part = State::<T> {
                step,
                flux: (0..flux.len()).map(|i| flux.dft(i)).collect(),
                ..Default::default()
            };
            sink.part(&part, &StatePlace::default())?;
        }
        Ok(())
    }

    /// The shape of [`Self::export`]'s state, from the slabs' array lengths.
    pub(super) fn shape(&self) -> StateShape {
        StateShape::whole(&self.slab_shapes().1)
    }

    /// The slabs in x order and the shape of each one's part of the state, in that order.
    fn slab_shapes(&self) -> (Vec<usize>, Vec<StateShape>) {
        let order = self.slab_order();
        let shapes = order
            .iter()
            .map(|&i| {
                let shape = |name: String, spread: Spread, len: usize| crate::backend::ArrayShape {
                    name,
                    spread,
                    cells: len / spread.slots().max(1),
                };
                let mut arrays: Vec<_> = self
                    .slab_arrays(&self.slabs[i])
                    .into_iter()
                    .map(|(name, spread, values)| shape(name, spread, values.len()))
                    .collect();
                arrays.extend(
                    self.port_arrays(i)
                        .into_iter()
                        .map(|(name, spread, values)| shape(name, spread, values.len())),
                );
                arrays.sort_by(|a, b| a.name.cmp(&b.name));
                StateShape { arrays }
            })
            .collect();
        (order, shapes)
    }

    /// Replace the state ([`crate::backend::Backend::import_state`]). Checks every length
    /// before writing anything, so a mismatched state leaves the engine as it was.
    pub(super) fn import(
        &mut self,
        st: &State<T>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), StateError> {
        let plane = self.shared.ny * self.shared.nz;
        let nx: usize = self.slabs.iter().map(|s| s.range.len()).sum();
        for (c, f) in st.fields.iter().enumerate() {
            check_len(
                &format!("field {}", crate::model::Component::ALL[c].name()),
                f.len(),
                nx * plane,
            )?;
        }
        if let Some(why) = mismatch(&StateShape::of(st), &self.shape()) {
            return Err(StateError(why));
        }
        let monitors = self.monitors.flux.as_ref().map_or(0, |f| f.len());
        check_len("surface DFT monitors", st.flux.len(), monitors)?;
        if let Some(flux) = &self.monitors.flux {
            for (i, saved) in st.flux.iter().enumerate() {
                if flux.fits(i, saved).is_err() {
                    return Err(StateError(format!(
                        "surface DFT monitor {i} has other patches or frequencies"
                    )));
                }
            }
        }

        // Every length fits: write, part by part as from a checkpoint.
        let first = self.slabs.iter().map(|s| s.range.x0).min().unwrap_or(0);
        self.import_from(&|request| Ok(st.part(request, first, plane)), halo_copies)
            .map_err(StateError)
    }

    /// Replace the state with what `read` gives part by part
    /// ([`crate::backend::Backend::import_state_from`], [`load_in_parts`]): each slab's
    /// fields in parts of at most `checkpoint_part_bytes`, then its registered arrays, then
    /// the surface DFTs; the halo planes last, from the planes they copy. Host memory holds
    /// one part at a time besides the engine.
    pub(super) fn import_from(
        &mut self,
        read: &PartReader<'_, T>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), String> {
        let plane = self.shared.ny * self.shared.nz;
        let (order, shapes) = self.slab_shapes();
        let slabs: Vec<_> = order
            .iter()
            .zip(shapes)
            .map(|(&i, shape)| (self.slabs[i].range.x0..self.slabs[i].range.x1, shape))
            .collect();
        let per_part = planes_per_part(plane, std::mem::size_of::<T>(), self.checkpoint_part_bytes);
        let engine_slabs = &mut self.slabs;
        let cell_passes = &self.shared.cell_passes;
        let ports = &mut self.ports;
        let last = load_in_parts(&slabs, plane, per_part, read, &mut |j, loaded| {
            let s = &mut engine_slabs[order[j]];
            match loaded {
                Loaded::Fields { planes, fields } => {
                    let at = (planes.start + 1) * plane..(planes.end + 1) * plane;
                    for c in 0..3 {
                        s.e[c][at.clone()].copy_from_slice(&fields[c]);
                        s.h[c][at.clone()].copy_from_slice(&fields[3 + c]);
                    }
                }
                Loaded::Rest(part) => {
                    // The part's arrays are the slab's, name for name (load_in_parts checked).
                    for (name, values) in s.registered_mut(cell_passes) {
                        let saved = part
                            .array(&name)
                            .ok_or_else(|| format!("the saved state lacks `{name}`"))?;
                        values.copy_from_slice(&saved.values);
                    }
                    if let Some(ports) = ports.as_mut() {
                        let read = |name: &str| part.array(name).map(|a| a.values.clone());
                        ports.restore_slab(order[j], &read)?;
                    }
                }
            }
            Ok(())
        })?;
        let flux = last.flux;
        match &mut self.monitors.flux {
            Some(acc) if acc.len() == flux.len() => {
                for (i, dft) in flux.iter().enumerate() {
                    acc.restore(i, dft)?;
                }
            }
            None if flux.is_empty() => {}
            _ => {
                return Err(format!(
                    "the saved state holds {} surface DFT monitors, this run {}",
                    flux.len(),
                    self.monitors.flux.as_ref().map_or(0, |f| f.len())
                ))
            }
        }
        if let Some(ports) = &mut self.ports {
            ports.after_import(&self.slabs);
        }
        // The halo planes, as the last exchange of each half step left them.
        self.exchange(halo_copies);
        Ok(())
    }
}
