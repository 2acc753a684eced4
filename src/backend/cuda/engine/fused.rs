//! The fused update on the device ([`EngineOptions::fused`](super::EngineOptions::fused)):
//! one step as one sweep of `update_fused` (kernels/fused.cu), which reads the old fields and
//! H psi arrays and writes new ones into the slab's other set of buffers. Every step swaps the
//! two sets, so `Slab::f` and `Slab::psi` always hold the latest values and everything else in
//! the engine (the other passes, monitors, state, the two-pass step) reads them unchanged; the
//! addresses cached at construction (halo routes, snapshot gathers, flux parts) are moved to
//! the other set with them, and the probe ring keeps an address array for each.
//!
//! A step: the H half step advances the TF/SF 1-D grid's e, launches the kernel with
//! `e_too = 0` on the planes the H halo copies read (their new H), then exchanges those
//! halos; the E half step is the E pass list with the curl pass replaced by the fused kernel
//! (H and E of every plane, then the E CPML corrections as in the two-pass step), boundary
//! planes first and the interior overlapping the E copies, as every pass does. The H passes
//! after the curl, magnetic sheets and TF/SF corrections, are applied by the kernel to every
//! new H it computes (`update_fused_sources`, on the slabs that have any), since a thread
//! computes its neighbours' new H too; the E passes after the curl run as in the two-pass
//! step, on the new E.

use super::super::args::*;
use super::device::{Device, DeviceError, Stream};
use super::slab::Slab;
use super::slab::TfsfGroup;
use super::Engine;
use crate::backend::{Backend, Half};
use crate::decomp::HaloPlan;
use crate::operator::PointBox;
use crate::real::Real;

/// The fused kernel's description of one face of a TF/SF H group (`group`, with points in
/// the box `b`): local planes from the box's owned plane indices (plane 0 is the halo).
pub(super) fn tfsf_face(group: &TfsfGroup, b: &PointBox) -> FusedTfsf {
    let i = |v: usize| i32::try_from(v).expect("a slab holds fewer than 2^31 TF/SF points");
    FusedTfsf {
        node: group.node,
        w: group.w,
        fac: group.fac,
        c: i(group.component % 3),
        p0: i(b.lo[0] + 1),
        p1: i(b.hi[0] + 1),
        y0: i(b.lo[1]),
        y1: i(b.hi[1]),
        z0: i(b.lo[2]),
        z1: i(b.hi[2]),
        sp: i(b.stride[0]),
        sj: i(b.stride[1]),
        sk: i(b.stride[2]),
        first: i(b.first),
        pad_: 0,
    }
}

/// A map from any address inside one set of a slab's field buffers to the same place in the
/// other set (and back); addresses outside every field buffer are kept. `plane_bytes`: one
/// x plane of one component (a slab's component is its planes and two halos).
pub(super) fn other_buffer(slabs: &[Slab], plane_bytes: usize) -> impl Fn(Ptr) -> Ptr + '_ {
    move |p: Ptr| {
        for s in slabs {
            let bytes = ((s.range.len() + 2) * plane_bytes) as u64;
            for c in 0..6 {
                let (a, b) = (s.f[c], s.spare[c]);
                if (a..a + bytes).contains(&p) {
                    return b + (p - a);
                }
                if (b..b + bytes).contains(&p) {
                    return a + (p - b);
                }
            }
        }
        p
    }
}

impl<D: Device, T: Real> Engine<D, T> {
    /// Make the other set of buffers the current one: the slabs' fields and H psi arrays, and
    /// every cached address into them.
    fn swap_buffers(&mut self) {
        let other = other_buffer(&self.slabs, self.plane * std::mem::size_of::<T>());
        let mut routes = std::mem::take(&mut self.routes);
        for r in routes.iter_mut().flatten() {
            r.src = other(r.src);
            r.dst = other(r.dst);
        }
        let mut slots = std::mem::take(&mut self.slots);
        for ch in slots.iter_mut().flat_map(|s| s.chunks.iter_mut()) {
            ch.args.f = other(ch.args.f);
        }
        let mut fluxes = std::mem::take(&mut self.fluxes);
        for a in fluxes
            .iter_mut()
            .flat_map(|f| f.patches.iter_mut())
            .flat_map(|p| p.parts.iter_mut())
            .map(|p| &mut p.args)
        {
            for f in [
                &mut a.eb, &mut a.ec, &mut a.hb0, &mut a.hb1, &mut a.hc0, &mut a.hc1,
            ] {
                *f = other(*f);
            }
        }
        drop(other);
        self.routes = routes;
        self.slots = slots;
        self.fluxes = fluxes;
        for s in &mut self.slabs {
            std::mem::swap(&mut s.f, &mut s.spare);
            for a in 0..3 {
                let [p2, p3] = &mut s.psi[a][2..4] else {
                    unreachable!()
                };
                std::mem::swap(p2, &mut s.psi_spare[a][0]);
                std::mem::swap(p3, &mut s.psi_spare[a][1]);
            }
        }
        self.parity ^= 1;
    }

    /// The fused kernel's arguments on planes [p0, p1) of slab `s`, after the swap: new
    /// fields in `f`, old ones in `spare`.
    fn fused_args(&self, s: &Slab, p0: usize, p1: usize, chunk: u32, e_too: bool) -> FusedArgs<T> {
        let t = std::mem::size_of::<T>() as u64;
        let shift = |p: Ptr| p.wrapping_add(s.range.x0 as u64 * t).wrapping_sub(t);
        let [[hx, hy, hz], [ex, ey, ez]] = self.inv[s.gpu];
        let [(xlo, xhi, _), (ylo, yhi, _), (zlo, zhi, _)] = self.layers;
        let coef = &self.pml_coef[s.gpu];
        FusedArgs {
            new: s.f,
            old: s.spare,
            mat: s.mat,
            hmat: s.hmat,
            psi_old: [
                s.psi_spare[0][0],
                s.psi_spare[0][1],
                s.psi_spare[1][0],
                s.psi_spare[1][1],
                s.psi_spare[2][0],
                s.psi_spare[2][1],
            ],
            psi_new: [
                s.psi[0][2],
                s.psi[0][3],
                s.psi[1][2],
                s.psi[1][3],
                s.psi[2][2],
                s.psi[2][3],
            ],
            coef: [coef[0][1], coef[1][1], coef[2][1]],
            steps: [shift(hx), hy, hz, shift(ex), ey, ez],
            plane: self.plane as i64,
            ny: self.ny as i32,
            nz: self.nz as i32,
            p0: p0 as i32,
            p1: p1 as i32,
            chunk: chunk as i32,
            y_lo: self.faces[0],
            y_hi: self.faces[1],
            z_lo: self.faces[2],
            z_hi: self.faces[3],
            magnetic: self.magnetic as i32,
            e_too: e_too as i32,
            x0: s.range.x0 as i32,
            n: s.range.len() as i32,
            nx: self.nx as i32,
            layers: [xlo, xhi, ylo, yhi, zlo, zhi].map(|l| l as i32),
            tiles_z: 0,
            pad_: 0,
            ch: self.ch,
            pad: T::ZERO,
            ..Default::default()
        }
    }

    /// True if slab `s` has H passes the fused kernel applies after the curl (magnetic
    /// sheets, TF/SF faces): it then takes `update_fused_sources`.
    fn has_h_sources(s: &Slab) -> bool {
        !s.magnetic.is_empty() || !s.fused_tfsf.is_empty()
    }

    /// `args` with slab `s`'s magnetic sheets (this step's values) and TF/SF faces.
    fn with_h_sources(&self, s: &Slab, mut args: FusedArgs<T>) -> FusedArgs<T> {
        let i = |v: usize| v as i32;
        for (slot, &(k, c, cells)) in args.sheet.iter_mut().zip(&s.magnetic) {
            *slot = FusedSheet {
                c: i(c as usize % 3),
                p0: i(cells[0][0]),
                p1: i(cells[0][1]),
                y0: i(cells[1][0]),
                y1: i(cells[1][1]),
                z0: i(cells[2][0]),
                z1: i(cells[2][1]),
                pad_: 0,
                m: T::from_f64(self.fused_magnetic[k]),
                pad: T::ZERO,
            };
        }
        args.sheets = i(s.magnetic.len().min(MAX_FUSED_SHEETS));
        for (slot, face) in args.tfsf_face.iter_mut().zip(&s.fused_tfsf) {
            *slot = *face;
        }
        args.tfsf = i(s.fused_tfsf.len().min(MAX_FUSED_TFSF));
        args.inc_e = s.incident.map_or(0, |[e, _]| e);
        args
    }

    /// The fused kernel on planes [p0, p1) of slab `s` (H only, or H and E).
    pub(super) fn launch_fused(
        &self,
        s: &Slab,
        p0: usize,
        p1: usize,
        e_too: bool,
    ) -> Result<(), DeviceError> {
        if p1 == p0 {
            return Ok(());
        }
        let planes = (p1 - p0) as u32;
        if Self::has_h_sources(s) || self.fused_sources_always {
            // One thread per column, applying the sheets and TF/SF faces (whatever the tuning).
            let (dims, chunk) = Dims::columns(self.plane as u64, planes);
            let args = self.with_h_sources(s, self.fused_args(s, p0, p1, chunk, e_too));
            return self.launch(
                s.gpu,
                Stream::Compute,
                Kernel::UpdateFusedSources,
                dims,
                &args,
            );
        }
        let ty = self.fused_tile;
        // The H-only planes (a few per step) take the column kernel.
        if ty > 1 && e_too {
            let (dims, chunk, tiles_z) = Dims::tiles(self.ny, self.nz, ty, planes);
            let mut args = self.fused_args(s, p0, p1, chunk, e_too);
            args.tiles_z = tiles_z as i32;
            self.launch(
                s.gpu,
                Stream::Compute,
                Kernel::UpdateFusedTiled,
                dims,
                &args,
            )
        } else {
            // Strips of rows per thread for the H and E launches (the H-only ones stay one
            // thread per column: their planes are few).
            let (rows, kernel) = if e_too {
                strip_for(self.fused_strip, self.ny)
            } else {
                (1, Kernel::UpdateFused)
            };
            let (dims, chunk) = Dims::columns((self.plane / rows as usize) as u64, planes);
            let args = self.fused_args(s, p0, p1, chunk, e_too);
            self.launch(s.gpu, Stream::Compute, kernel, dims, &args)
        }
    }

    /// The fused step ([`Backend::step_fused`] of an engine with spare buffers).
    pub(super) fn fused_step(
        &mut self,
        halos: &HaloPlan,
        magnetic_values: &[f64],
        source_values: &[f64],
    ) {
        self.begin_half(Half::H);
        if !self.failed() {
            self.swap_buffers();
            self.fused_magnetic.clear();
            self.fused_magnetic.extend_from_slice(magnetic_values);
            // The 1-D grid's e at this step, which the TF/SF H corrections read (the E half
            // step's Tfsf pass advances its h, as in the two-pass step).
            let mut r = self.tfsf_incident(Half::H, magnetic_values);
            for s in &self.slabs {
                for &(p0, p1) in &s.boundary[0] {
                    r = r.and_then(|_| self.launch_fused(s, p0, p1, false));
                }
            }
            self.ok(r, "updating H");
        }
        self.exchange(&halos.after_h);
        self.begin_half(Half::E);
        self.fusing = true;
        for &p in Half::E.passes() {
            self.run_pass(Half::E, p, source_values);
        }
        self.exchange(&halos.after_e);
        self.fusing = false;
    }
}
