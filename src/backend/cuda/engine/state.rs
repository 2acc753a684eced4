//! The slab engine's side of [`State`]: the whole run state copied between the devices and
//! the backend-independent layout, through the [`Device`] trait (so the host-compiled engine
//! of the tests does exactly what the CUDA driver does).
//!
//! A slab's device arrays are laid out as the CPU backend's (`kernels/cpml.cu` names the psi
//! layouts; the dispersive groups are the CPU's, cells sorted), so the global arrays are the
//! slabs' arrays concatenated in x order. The flux accumulators are `[8][frequency][cell]`
//! per part (a patch's cells that lie in one slab, from cell `cell0` of the patch on).

use super::super::args::POLE_LORENTZ;
use super::device::{bytes_of, Device, DeviceError};
use super::Engine;
use crate::backend::parts::{load_in_parts, planes_per_part, Assembler, Loaded, PartReader};
use crate::backend::{
    check_len, DispersiveState, State, StateError, StatePlace, StateShape, StateSink,
};
use crate::decomp::{HaloCopy, HaloSide};
use crate::real::Real;

/// Download `len` values of `T` from `ptr` on `gpu`.
fn download<D: Device, T: Real>(
    dev: &D,
    gpu: usize,
    ptr: u64,
    len: usize,
) -> Result<Vec<T>, DeviceError> {
    let mut v = vec![T::ZERO; len];
    if len > 0 {
        // SAFETY: plain float values (or f64 accumulators); any bytes are valid.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                v.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(&v[..]),
            )
        };
        dev.download(gpu, ptr, bytes)?;
    }
    Ok(v)
}

impl<D: Device, T: Real> Engine<D, T> {
    /// Slab indices in x order.
    fn slab_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.slabs.len()).collect();
        order.sort_by_key(|&i| self.slabs[i].range.x0);
        order
    }

    /// Values per psi array of slab `s` along each axis (the plan's `psi_len`).
    fn psi_lens(&self, s: &super::slab::Slab) -> [usize; 3] {
        let n = s.range.len();
        let x_planes: usize = s.x_runs.iter().map(|r| r.p1 - r.p0).sum();
        let ly = self.layers[1].0 + self.layers[1].1;
        let lz = self.layers[2].0 + self.layers[2].1;
        [x_planes * self.plane, n * ly * self.nz, n * self.ny * lz]
    }

    /// State values per dispersive cell of material `m` (J and P for a Lorentz pole, one
    /// value for Drude and Debye).
    fn state_len(&self, m: u8) -> usize {
        self.poles[m as usize].as_ref().map_or(0, |a| {
            a.poles[..a.npoles as usize]
                .iter()
                .map(|p| if p.kind == POLE_LORENTZ { 2 } else { 1 })
                .sum()
        })
    }

    /// The whole state, downloaded from every GPU ([`crate::backend::Backend::export_state`]):
    /// [`Self::write_parts`] put together in memory.
    pub(super) fn export(&self) -> Result<State<T>, DeviceError> {
        let mut whole = Assembler::new(self.plane);
        self.write_parts(self.step, &mut whole)?
            .expect("the engine's own pieces fit its own shape");
        Ok(whole.into_state(self.step))
    }

    /// Zero the E psi values of the outer wall cells of the minimum PML layers (x plane 0,
    /// y row 0, z cell 0), as the CPU backend holds them, in the psi arrays `psi` of `nx` x
    /// planes, the first of which is x plane 0 where `from_x0`: the kernels update psi there
    /// too, but E on that PEC-backed wall is zeroed every step, so those values never reach a
    /// field, and the CPU skips them. The exported state is then the same from both engines.
    fn zero_wall_psi(&self, psi: &mut [[Vec<T>; 4]; 3], nx: usize, from_x0: bool) {
        let (ny, nz) = (self.ny, self.nz);
        // The first two arrays of each axis are E's.
        let [x, y, z] = psi;
        if self.layers[0].0 > 0 && from_x0 {
            for e in x.iter_mut().take(2) {
                e[..self.plane].fill(T::ZERO);
            }
        }
        let ly = self.layers[1].0 + self.layers[1].1;
        if self.layers[1].0 > 0 {
            for e in y.iter_mut().take(2) {
                for p in 0..nx {
                    e[p * ly * nz..][..nz].fill(T::ZERO);
                }
            }
        }
        let lz = self.layers[2].0 + self.layers[2].1;
        if self.layers[2].0 > 0 {
            for e in z.iter_mut().take(2) {
                for row in 0..nx * ny {
                    e[row * lz] = T::ZERO;
                }
            }
        }
    }

    /// The shape of [`Self::export`]'s state, from the slabs' sizes (nothing downloaded).
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
    fn slab_shape(&self, s: &super::slab::Slab) -> StateShape {
        let mut shape = StateShape::default();
        for (a, len) in self.psi_lens(s).into_iter().enumerate() {
            shape.psi[a] = [len; 4];
        }
        for g in &s.dispersive {
            let (c, m) = (g.component as u8, g.material);
            match shape.dispersive.iter_mut().find(|d| d.0 == c && d.1 == m) {
                Some(d) => d.2 += g.n,
                None => shape.dispersive.push((c, m, g.n, self.state_len(m))),
            }
        }
        shape.dispersive.sort_unstable_by_key(|d| (d.0, d.1));
        if let (Some(_), Some((nodes, _, _))) = (s.incident, self.tfsf) {
            shape.incident = Some(nodes);
        }
        shape
    }

    /// Hand the whole state after step `step` to `sink` part by part
    /// ([`crate::backend::Backend::write_state`]), downloaded slab by slab in x order: the
    /// fields in parts of at most [`planes_per_part`] planes (`checkpoint_part_bytes`), then
    /// the slab's psi arrays,
    /// dispersive state and (the first slab that holds it) the TF/SF incident grid, and last
    /// the surface DFTs. The file is [`Self::export`]'s, while host memory holds one part at
    /// a time instead of the whole state (which may be larger than the host's memory). The
    /// outer error is the device's, the inner one the sink's.
    pub(super) fn write_parts(
        &self,
        step: usize,
        sink: &mut dyn StateSink<T>,
    ) -> Result<Result<(), String>, DeviceError> {
        let t = std::mem::size_of::<T>();
        let plane = self.plane;
        let per_part = planes_per_part(plane, t, self.checkpoint_part_bytes);
        let (order, shapes) = self.slab_shapes();
        if let Err(e) = sink.begin(&StateShape::whole(&shapes)) {
            return Ok(Err(e));
        }
        let mut incident = true;
        for (j, &i) in order.iter().enumerate() {
            let s = &self.slabs[i];
            let n = s.range.len();
            for a in (0..n).step_by(per_part) {
                let planes = per_part.min(n - a);
                let mut part = State::<T> {
                    step,
                    ..Default::default()
                };
                for (c, f) in part.fields.iter_mut().enumerate() {
                    let at = s.f[c] + ((a + 1) * plane * t) as u64;
                    *f = download::<D, T>(&self.dev, s.gpu, at, planes * plane)?;
                }
                let place = StatePlace {
                    x0: s.range.x0 + a,
                    ..Default::default()
                };
                if let Err(e) = sink.part(&part, &place) {
                    return Ok(Err(e));
                }
            }
            let mut part = State::<T> {
                step,
                ..Default::default()
            };
            for (a, &len) in self.psi_lens(s).iter().enumerate() {
                for k in 0..4 {
                    if len > 0 {
                        part.psi[a][k] = download::<D, T>(&self.dev, s.gpu, s.psi[a][k], len)?;
                    }
                }
            }
            self.zero_wall_psi(&mut part.psi, n, s.range.x0 == 0);
            if let (true, Some([e, h]), Some((nodes, _, _))) = (incident, s.incident, self.tfsf) {
                part.incident = Some([
                    download::<D, T>(&self.dev, s.gpu, e, nodes)?,
                    download::<D, T>(&self.dev, s.gpu, h, nodes)?,
                ]);
                incident = false;
            }
            // One entry per (component, material), in the order of the slab's shape, which
            // its place follows; a slab may hold several groups of one.
            for &(c, m, _, slots) in &shapes[j].dispersive {
                let mut d = DispersiveState {
                    component: c,
                    material: m,
                    ..Default::default()
                };
                let mut per_slot: Vec<Vec<T>> = vec![Vec::new(); slots];
                for g in s
                    .dispersive
                    .iter()
                    .filter(|g| g.component as u8 == c && g.material == m)
                {
                    d.e_prev
                        .extend_from_slice(&download::<D, T>(&self.dev, s.gpu, g.e_prev, g.n)?);
                    let state = download::<D, T>(&self.dev, s.gpu, g.state, g.n * slots)?;
                    for (slot, out) in per_slot.iter_mut().enumerate() {
                        out.extend_from_slice(&state[slot * g.n..(slot + 1) * g.n]);
                    }
                }
                d.state = per_slot.concat();
                part.dispersive.push(d);
            }
            let place = StateShape::place(&shapes, j, s.range.x0);
            if let Err(e) = sink.part(&part, &place) {
                return Ok(Err(e));
            }
        }
        if !self.fluxes.is_empty() {
            let mut part = State::<T> {
                step,
                ..Default::default()
            };
            for i in 0..self.fluxes.len() {
                part.flux.push(self.read_flux(i)?);
            }
            if let Err(e) = sink.part(&part, &StatePlace::default()) {
                return Ok(Err(e));
            }
        }
        Ok(Ok(()))
    }

    /// Check that `st` fits this engine's arrays, without touching the devices.
    fn check(&self, st: &State<T>) -> Result<(), StateError> {
        let nx: usize = self.slabs.iter().map(|s| s.range.len()).sum();
        for (c, f) in st.fields.iter().enumerate() {
            check_len(
                &format!("field {}", crate::model::Component::ALL[c].name()),
                f.len(),
                nx * self.plane,
            )?;
        }
        let mut psi = [0usize; 3];
        for s in &self.slabs {
            for (a, l) in self.psi_lens(s).into_iter().enumerate() {
                psi[a] += l;
            }
        }
        for (a, &len) in psi.iter().enumerate() {
            for k in 0..4 {
                check_len(&format!("psi {a}/{k}"), st.psi[a][k].len(), len)?;
            }
        }
        let mut need: Vec<(usize, u8, usize)> = Vec::new();
        for g in self.slabs.iter().flat_map(|s| &s.dispersive) {
            match need
                .iter_mut()
                .find(|k| k.0 == g.component && k.1 == g.material)
            {
                Some(k) => k.2 += g.n,
                None => need.push((g.component, g.material, g.n)),
            }
        }
        check_len(
            "the dispersive state (groups)",
            st.dispersive.len(),
            need.len(),
        )?;
        for &(c, m, n) in &need {
            let i = st.dispersive_index(c, m).ok_or_else(|| {
                StateError(format!(
                    "no dispersive state for component {c}, material {m}"
                ))
            })?;
            check_len("dispersive E^n", st.dispersive[i].e_prev.len(), n)?;
            check_len(
                "dispersive pole state",
                st.dispersive[i].state.len(),
                n * self.state_len(m),
            )?;
        }
        let any_incident = self.slabs.iter().any(|s| s.incident.is_some());
        match (&st.incident, any_incident, self.tfsf) {
            (Some([e, h]), true, Some((nodes, _, _))) => {
                check_len("TF/SF incident e", e.len(), nodes)?;
                check_len("TF/SF incident h", h.len(), nodes)?;
            }
            (None, false, _) => {}
            _ => {
                return Err(StateError(
                    "the TF/SF incident grid is in one and not the other".into(),
                ))
            }
        }
        self.check_flux(&st.flux)
    }

    /// Check that the surface DFTs `flux` fit this engine's monitors.
    fn check_flux(&self, flux: &[crate::flux::FluxDft]) -> Result<(), StateError> {
        check_len("surface DFT monitors", flux.len(), self.fluxes.len())?;
        for (m, (mon, saved)) in self.fluxes.iter().zip(flux).enumerate() {
            let fits = mon.patches.len() == saved.patches.len()
                && mon.patches.iter().zip(&saved.patches).all(|(p, d)| {
                    let n = mon.nf * p.patch.cells();
                    p.patch == d.patch && d.re.iter().chain(&d.im).all(|v| v.len() == n)
                });
            if !fits {
                return Err(StateError(format!(
                    "surface DFT monitor {m} has other patches or frequencies"
                )));
            }
        }
        Ok(())
    }

    /// Upload `st` to every GPU ([`crate::backend::Backend::import_state`]); `Ok(Err)` when it
    /// does not fit (nothing is uploaded then).
    pub(super) fn import(
        &mut self,
        st: &State<T>,
        halo_copies: &[HaloCopy],
    ) -> Result<Result<(), StateError>, DeviceError> {
        if let Err(e) = self.check(st) {
            return Ok(Err(e));
        }
        let first = self.slabs.iter().map(|s| s.range.x0).min().unwrap_or(0);
        let plane = self.plane;
        let r = self.import_from(&|request| Ok(st.part(request, first, plane)), halo_copies)?;
        Ok(r.map_err(StateError))
    }

    /// Upload the state `read` gives part by part ([`load_in_parts`]): each slab's fields in
    /// parts of at most `checkpoint_part_bytes`, then its psi arrays, pole state and TF/SF
    /// grid, then the surface DFTs; the halo planes last, from the planes they copy. Host
    /// memory holds one part at a time, never the whole state of the GPUs. The outer error is
    /// the device's, the inner one says why the state does not fit.
    pub(super) fn import_from(
        &mut self,
        read: &PartReader<'_, T>,
        halo_copies: &[HaloCopy],
    ) -> Result<Result<(), String>, DeviceError> {
        let t = std::mem::size_of::<T>();
        let plane = self.plane;
        let (order, shapes) = self.slab_shapes();
        let slabs: Vec<_> = order
            .iter()
            .zip(shapes)
            .map(|(&i, shape)| (self.slabs[i].range.x0..self.slabs[i].range.x1, shape))
            .collect();
        let per_part = planes_per_part(plane, t, self.checkpoint_part_bytes);
        let mut device: Option<DeviceError> = None;
        let loaded = load_in_parts(&slabs, plane, per_part, read, &mut |j, loaded| {
            let r = self.upload_part(&self.slabs[order[j]], loaded);
            r.map_err(|e| {
                let text = e.to_string();
                device = Some(e);
                text
            })?
        });
        if let Some(e) = device {
            return Err(e);
        }
        let last = match loaded {
            Ok(last) => last,
            Err(e) => return Ok(Err(e)),
        };
        if let Err(e) = self.check_flux(&last.flux) {
            return Ok(Err(e.to_string()));
        }
        for (mon, dft) in self.fluxes.iter().zip(&last.flux) {
            let nf = mon.nf;
            for (fp, pd) in mon.patches.iter().zip(&dft.patches) {
                let cells = fp.patch.cells();
                for part in &fp.parts {
                    let pc = part.cells;
                    let mut acc = vec![0.0f64; 8 * nf * pc];
                    for q in 0..8 {
                        let src = if q < 4 { &pd.re[q] } else { &pd.im[q - 4] };
                        for f in 0..nf {
                            acc[(q * nf + f) * pc..][..pc]
                                .copy_from_slice(&src[f * cells + part.cell0..][..pc]);
                        }
                    }
                    self.dev.upload(part.gpu, part.args.acc, bytes_of(&acc))?;
                }
            }
        }
        // The halo planes, as the last exchange of each half step left them: each from the
        // plane it copies, now on its GPU.
        for c in halo_copies {
            let src = self
                .slabs
                .iter()
                .find(|s| s.range.x0 <= c.src_x && c.src_x < s.range.x1)
                .expect("a halo copy's source plane lies in a slab");
            let at = (c.src_x - src.range.x0 + 1) * plane * t;
            let f = c.component as usize;
            let mut values = download::<D, T>(&self.dev, src.gpu, src.f[f] + at as u64, plane)?;
            if c.negate {
                values.iter_mut().for_each(|v| *v = -*v);
            }
            let dst = &self.slabs[c.dst_slab];
            let p = match c.dst_side {
                HaloSide::Left => 0,
                HaloSide::Right => dst.range.len() + 1,
            };
            self.dev.upload(
                dst.gpu,
                dst.f[f] + (p * plane * t) as u64,
                bytes_of(&values),
            )?;
        }
        self.step = last.step;
        Ok(Ok(()))
    }

    /// Upload one part of slab `s`'s state ([`load_in_parts`]); `Ok(Err)` when it does not
    /// fit the slab.
    fn upload_part(
        &self,
        s: &super::slab::Slab,
        loaded: Loaded<T>,
    ) -> Result<Result<(), String>, DeviceError> {
        let t = std::mem::size_of::<T>();
        let plane = self.plane;
        match loaded {
            Loaded::Fields { planes, fields } => {
                for (c, f) in fields.iter().enumerate() {
                    let at = s.f[c] + ((planes.start + 1) * plane * t) as u64;
                    self.dev.upload(s.gpu, at, bytes_of(f))?;
                }
            }
            Loaded::Rest(part) => {
                for (a, len) in self.psi_lens(s).into_iter().enumerate() {
                    if len > 0 {
                        for k in 0..4 {
                            self.dev
                                .upload(s.gpu, s.psi[a][k], bytes_of(&part.psi[a][k]))?;
                        }
                    }
                }
                if let (Some([e, h]), Some([pe, ph])) = (&part.incident, s.incident) {
                    self.dev.upload(s.gpu, pe, bytes_of(e))?;
                    self.dev.upload(s.gpu, ph, bytes_of(h))?;
                }
                // A slab may hold several groups of one (component, material): the part
                // holds their cells back to back, slot by slot.
                let mut offsets: Vec<usize> = vec![0; part.dispersive.len()];
                for g in &s.dispersive {
                    let Some(di) = part.dispersive_index(g.component, g.material) else {
                        return Ok(Err("the saved state lacks a dispersive group".into()));
                    };
                    let d = &part.dispersive[di];
                    let (total, off) = (d.e_prev.len(), offsets[di]);
                    self.dev
                        .upload(s.gpu, g.e_prev, bytes_of(&d.e_prev[off..off + g.n]))?;
                    let slots = self.state_len(g.material);
                    let mut state = Vec::with_capacity(g.n * slots);
                    for slot in 0..slots {
                        state.extend_from_slice(&d.state[slot * total + off..][..g.n]);
                    }
                    if !state.is_empty() {
                        self.dev.upload(s.gpu, g.state, bytes_of(&state))?;
                    }
                    offsets[di] += g.n;
                }
            }
        }
        Ok(Ok(()))
    }
}
