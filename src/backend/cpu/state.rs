//! The CPU backend's side of [`State`]: export and import of the whole run state.
//!
//! Every per-cell array of a slab is stored by owned x plane, so the global layout is the
//! slabs' arrays concatenated in x order: fields (without halos), the y and z psi arrays
//! ([owned plane][...]), the x psi arrays (the slab's x-layer planes in layer order, and the
//! layers lie in increasing x). A dispersive group holds its cells sorted by index within the
//! slab, so the cells of one (component, material) over the grid are the slabs' groups
//! concatenated, slot by slot.

use super::{CpuBackend, Slab};
use crate::backend::parts::{load_in_parts, planes_per_part, Assembler, Loaded, PartReader};
use crate::backend::Backend;
use crate::backend::{
    check_len, DispersiveState, State, StateError, StatePlace, StateShape, StateSink,
};
use crate::decomp::HaloCopy;
use crate::real::Real;

impl<T: Real> CpuBackend<T> {
    /// The slabs in x order (the engine builds them from ranges that tile [0, nx), in order;
    /// sorting keeps the layout right whatever order they came in).
    fn slab_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.slabs.len()).collect();
        order.sort_by_key(|&i| self.slabs[i].range.x0);
        order
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
    /// psi arrays, dispersive
    /// state and (the first slab that holds it) the TF/SF incident grid, and last the surface
    /// DFTs. The file is [`Self::export`]'s, while host memory holds one part at a time
    /// instead of a second copy of the whole state.
    pub(super) fn write_parts(
        &mut self,
        step: usize,
        sink: &mut dyn StateSink<T>,
    ) -> Result<(), String> {
        let (order, shapes) = self.slab_shapes();
        sink.begin(&StateShape::whole(&shapes))?;
        let plane = self.shared.ny * self.shared.nz;
        let per_part = planes_per_part(plane, std::mem::size_of::<T>(), self.checkpoint_part_bytes);
        let mut incident = true;
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
            let mut part = State::<T> {
                step,
                ..Default::default()
            };
            for k in 0..4 {
                part.psi[0][k] = s.psi_x[k].clone();
                part.psi[1][k] = s.psi_y[k].clone();
                part.psi[2][k] = s.psi_z[k].clone();
            }
            if incident {
                if let Some(inc) = &s.incident {
                    part.incident = Some([inc.e.clone(), inc.h.clone()]);
                    incident = false;
                }
            }
            // In the order of the slab's shape, which its place follows.
            part.dispersive = shapes[j]
                .dispersive
                .iter()
                .map(|&(c, m, _, _)| {
                    let g = s
                        .dispersive
                        .iter()
                        .find(|g| g.component as u8 == c && g.material == m)
                        .expect("a slab's shape lists its own groups");
                    DispersiveState {
                        component: c,
                        material: m,
                        e_prev: g.e_prev.clone(),
                        state: g.state.clone(),
                    }
                })
                .collect();
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
            .map(|&i| self.slab_shape(&self.slabs[i]))
            .collect();
        (order, shapes)
    }

    /// The shape of slab `s`'s part of the state.
    fn slab_shape(&self, s: &Slab<T>) -> StateShape {
        let mut shape = StateShape::default();
        for k in 0..4 {
            shape.psi[0][k] = s.psi_x[k].len();
            shape.psi[1][k] = s.psi_y[k].len();
            shape.psi[2][k] = s.psi_z[k].len();
        }
        shape.dispersive = s
            .dispersive
            .iter()
            .map(|g| {
                let m = g.material;
                (g.component as u8, m, g.cells.len(), self.state_len(m))
            })
            .collect();
        shape.dispersive.sort_unstable_by_key(|d| (d.0, d.1));
        shape.incident = s.incident.as_ref().map(|inc| inc.e.len());
        shape
    }

    /// State values per dispersive cell of material `m`.
    fn state_len(&self, m: u8) -> usize {
        self.shared.dispersive[m as usize]
            .as_ref()
            .map_or(0, |d| d.state_len())
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
        let total = |f: &dyn Fn(&Slab<T>) -> usize| self.slabs.iter().map(f).sum::<usize>();
        for (c, f) in st.fields.iter().enumerate() {
            check_len(
                &format!("field {}", crate::model::Component::ALL[c].name()),
                f.len(),
                nx * plane,
            )?;
        }
        for k in 0..4 {
            check_len("x psi", st.psi[0][k].len(), total(&|s| s.psi_x[k].len()))?;
            check_len("y psi", st.psi[1][k].len(), total(&|s| s.psi_y[k].len()))?;
            check_len("z psi", st.psi[2][k].len(), total(&|s| s.psi_z[k].len()))?;
        }
        // Dispersive: every key of the slabs is in the state with the cells of all slabs.
        let mut need: Vec<(usize, u8, usize)> = Vec::new();
        for s in &self.slabs {
            for g in &s.dispersive {
                match need
                    .iter_mut()
                    .find(|k| k.0 == g.component && k.1 == g.material)
                {
                    Some(k) => k.2 += g.cells.len(),
                    None => need.push((g.component, g.material, g.cells.len())),
                }
            }
        }
        check_len(
            "the dispersive state (groups)",
            st.dispersive.len(),
            need.len(),
        )?;
        for &(c, m, n) in &need {
            let Some(i) = st.dispersive_index(c, m) else {
                return Err(StateError(format!(
                    "no dispersive state for component {c}, material {m}"
                )));
            };
            let d = &st.dispersive[i];
            check_len("dispersive E^n", d.e_prev.len(), n)?;
            check_len(
                "dispersive pole state",
                d.state.len(),
                n * self.state_len(m),
            )?;
        }
        let nodes = self.shared.tfsf.as_ref().map(|t| t.nodes);
        let any_incident = self.slabs.iter().any(|s| s.incident.is_some());
        match (&st.incident, any_incident) {
            (Some([e, h]), true) => {
                let n = nodes.unwrap_or(0);
                check_len("TF/SF incident e", e.len(), n)?;
                check_len("TF/SF incident h", h.len(), n)?;
            }
            (None, false) => {}
            (Some(_), false) | (None, true) => {
                return Err(StateError(
                    "the TF/SF incident grid is in one and not the other".into(),
                ))
            }
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
    /// fields in parts of at most `checkpoint_part_bytes`, then its psi arrays, pole state
    /// and TF/SF grid, then the surface DFTs; the halo planes last, from the planes they copy.
    /// Host memory holds one part at a time besides the engine.
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
                    for k in 0..4 {
                        s.psi_x[k].copy_from_slice(&part.psi[0][k]);
                        s.psi_y[k].copy_from_slice(&part.psi[1][k]);
                        s.psi_z[k].copy_from_slice(&part.psi[2][k]);
                    }
                    if let (Some(inc), Some([e, h])) = (&mut s.incident, &part.incident) {
                        inc.e.copy_from_slice(e);
                        inc.h.copy_from_slice(h);
                    }
                    for g in &mut s.dispersive {
                        let d = part
                            .dispersive
                            .iter()
                            .find(|d| {
                                d.component as usize == g.component && d.material == g.material
                            })
                            .ok_or("the saved state lacks a dispersive group")?;
                        g.e_prev.copy_from_slice(&d.e_prev);
                        g.state.copy_from_slice(&d.state);
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
        // The halo planes, as the last exchange of each half step left them.
        self.exchange(halo_copies);
        Ok(())
    }
}
