//! The slab engine's side of [`State`]: the whole run state copied between the devices and
//! the backend-independent layout, through the [`Device`] trait (so the host-compiled engine
//! of the tests does exactly what the CUDA driver does).
//!
//! A slab's device arrays are laid out as the CPU backend's, so the global arrays are the
//! slabs' arrays concatenated in x order. The arrays besides the fields are the ones the
//! passes register ([`CudaEngine::registered`]); this file names none of them. The flux
//! accumulators are `[8][frequency][cell]` per part (a patch's cells that lie in one slab,
//! from cell `cell0` of the patch on).

use super::device::{bytes_of, Device, DeviceError};
use super::passes::DeviceArray;
use super::CudaEngine;
use crate::backend::parts::{
    load_in_parts, mismatch, planes_per_part, Assembler, Loaded, PartReader,
};
use crate::backend::{
    check_len, ArrayShape, State, StateArray, StateError, StatePlace, StateShape, StateSink,
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

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// Slab indices in x order.
    fn slab_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.slabs.len()).collect();
        order.sort_by_key(|&i| self.slabs[i].range.x0);
        order
    }

    /// The whole state, downloaded from every GPU ([`crate::backend::Backend::export_state`]):
    /// [`Self::write_parts`] put together in memory.
    pub(super) fn export(&self) -> Result<State<T>, DeviceError> {
        let mut whole = Assembler::new(self.plane);
        self.write_parts(self.step, &mut whole)?
            .expect("the engine's own pieces fit its own shape");
        Ok(whole.into_state(self.step))
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
        StateShape {
            arrays: self
                .registered(s)
                .into_iter()
                .map(|a| ArrayShape {
                    cells: a.pieces.iter().map(|p| p.1).sum(),
                    name: a.name,
                    spread: a.spread,
                })
                .collect(),
        }
    }

    /// Download one registered array of slab `s` (of `n` planes): its pieces slot by slot.
    fn download_array(
        &self,
        s: &super::slab::Slab,
        a: &DeviceArray,
    ) -> Result<Vec<T>, DeviceError> {
        let slots = a.spread.slots();
        let mut per_slot: Vec<Vec<T>> = vec![Vec::new(); slots];
        for &(ptr, cells) in &a.pieces {
            let values = download::<D, T>(&self.dev, s.gpu, ptr, cells * slots)?;
            for (slot, out) in per_slot.iter_mut().enumerate() {
                out.extend_from_slice(&values[slot * cells..(slot + 1) * cells]);
            }
        }
        let mut values = per_slot.concat();
        if let Some(axis) = a.wall {
            self.zero_wall(axis, &mut values, s.range.len(), s.range.x0 == 0);
        }
        Ok(values)
    }

    /// Upload `values` (as [`Self::download_array`] gives them) into array `a` of slab `s`.
    fn upload_array(
        &self,
        s: &super::slab::Slab,
        a: &DeviceArray,
        values: &[T],
    ) -> Result<(), DeviceError> {
        let slots = a.spread.slots();
        let total: usize = a.pieces.iter().map(|p| p.1).sum();
        let mut at = 0;
        for &(ptr, cells) in &a.pieces {
            let mut piece = Vec::with_capacity(cells * slots);
            for slot in 0..slots {
                piece.extend_from_slice(&values[slot * total + at..][..cells]);
            }
            if !piece.is_empty() {
                self.dev.upload(s.gpu, ptr, bytes_of(&piece))?;
            }
            at += cells;
        }
        Ok(())
    }

    /// Hand the whole state after step `step` to `sink` part by part
    /// ([`crate::backend::Backend::write_state`]), downloaded slab by slab in x order: the
    /// fields in parts of at most [`planes_per_part`] planes (`checkpoint_part_bytes`), then
    /// the slab's registered arrays, and last
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
            for a in self.registered(s) {
                let values = self.download_array(s, &a)?;
                part.arrays.push(StateArray {
                    name: a.name,
                    spread: a.spread,
                    values,
                });
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
        if let Some(why) = mismatch(&StateShape::of(st), &self.shape()) {
            return Err(StateError(why));
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
    /// parts of at most `checkpoint_part_bytes`, then its registered arrays, then the surface
    /// DFTs; the halo planes last, from the planes they copy. Host
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
        self.refresh_ports()?;
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
                // The part's arrays are the slab's, name for name (load_in_parts checked).
                for a in self.registered(s) {
                    let Some(saved) = part.array(&a.name) else {
                        return Ok(Err(format!("the saved state lacks `{}`", a.name)));
                    };
                    self.upload_array(s, &a, &saved.values)?;
                }
            }
        }
        Ok(Ok(()))
    }
}
