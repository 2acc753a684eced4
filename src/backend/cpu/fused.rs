//! The fused step: H and E in one sweep along x per slab, so each field value crosses the
//! memory bus about once per step instead of twice (48 bytes per cell-step in f32, not 72).
//!
//! The two-pass step updates H on every plane, then E on every plane, and a grid larger than
//! the cache is read twice. The E update of plane p needs H on planes p - 1 and p only, and
//! the H update of plane p needs E on planes p and p + 1 as they were before the step. So a
//! sweep that, at each plane p in increasing x, runs every H pass on p and then every E pass
//! on p reads each value while the planes around p are still in cache; E on p is written only
//! after the last H update that reads it (H on p itself).
//!
//! Every pass the sweep applies is local to the plane: the curl and its CPML correction, the
//! sources, the TF/SF face corrections (each plane's points in group order), the dispersive
//! poles of the plane's cells and the PEC faces; the cell sees exactly the arithmetic of the
//! two-pass step in the same order, so the fields are the same bits. The one pass that is not
//! plane-local, the TF/SF source's 1-D incident grid, advances for both half steps before the
//! sweep: the H corrections read its E nodes, which the E half's advance does not touch.
//!
//! Halos: the E update of a slab's first plane needs the left neighbour's new H on its last
//! plane, and nothing else in the sweep needs a halo. Each slab first runs the H passes of its
//! first plane and of the planes that the H halo copies read (its last plane; the first plane
//! of slab 0 for a PMC x face); then the H halo copies start, every slab sweeps planes 2..n
//! (skipping those planes' H) while they travel, and once they are in, E on every slab's
//! first plane. So a driver whose halos cross processes ([`crate::ranks`]) overlaps the H
//! exchange with the whole interior sweep, and a single process runs the same three parts in
//! the same order (one code path, the same bits). E on plane 1 after plane 2 is still the
//! arithmetic of the two-pass step: it reads H on planes 0 and 1 only, both final by then, and
//! no H update of the step reads E on plane 1 after the early H of plane 1. The E halo copies
//! run after the sweep, as after the two-pass E half step. Threads work on whole slabs (the
//! run's default is one slab per thread).

use super::{cpml, e_curl_cpml, h_curl_cpml, pair, CpuBackend, Shared, Slab};
use crate::backend::{Backend, Half};
use crate::decomp::{HaloCopy, HaloPlan};
use crate::real::Real;
use rayon::prelude::*;
use std::ops::Range;

/// The row bands the sweep runs one after the other, each over every plane of the slab: the
/// H update of row j reads E on row j + 1 as it was before the step, and the E update of row j
/// reads the new H on row j - 1, so bands in increasing y keep the order of the whole-plane
/// sweep. A band of few rows keeps the planes it reuses along x in L2 rather than L3 (the
/// plane of a 256^2 grid is 256 KiB per component); measured at 256^3 on 2 cores it gained
/// nothing (`docs/performance.md`), so the default is whole planes, and `YEE_FUSED_BAND`
/// (bytes of one field per band) is there for tuning on other machines. One band when y is
/// periodic (row ny - 1 reads row 0 before the step, and row 0 the new row ny - 1) and on a
/// flat grid (whose planes are a few rows of one value).
fn bands<T>(sh: &Shared<T>, band_values: usize) -> Vec<Range<usize>> {
    let periodic = sh.faces.y_lo == crate::operator::Beyond::Wrap;
    let rows = (band_values / sh.nz).max(1);
    if periodic || sh.nz == 1 || rows >= sh.ny {
        return std::iter::once(0..sh.ny).collect();
    }
    (0..sh.ny)
        .step_by(rows)
        .map(|j| j..(j + rows).min(sh.ny))
        .collect()
}

impl<T: Real> CpuBackend<T> {
    /// One whole step as the fused sweep ([`Backend::step_fused`]): H with the magnetic
    /// currents `magnetic`, the H halo copies, E with the currents `currents`, the E halo
    /// copies. The same parts, in the same order, as a driver that overlaps the H exchange
    /// with the sweep runs them.
    pub(super) fn fused_step(&mut self, halos: &HaloPlan, magnetic: &[f64], currents: &[f64]) {
        self.fused_early(&halos.after_h, magnetic, currents);
        self.exchange(&halos.after_h);
        self.fused_sweep(
            &halos.after_h,
            magnetic,
            currents,
            2..self.fused_planes_end(),
        );
        self.fused_first_e(currents);
        self.exchange(&halos.after_e);
    }

    /// One past the last local plane of the longest slab: the end of the sweep's plane range.
    pub(super) fn fused_planes_end(&self) -> usize {
        self.slabs.iter().map(|s| s.range.len()).max().unwrap_or(0) + 1
    }

    /// The local planes of each slab whose H the early part of the step updates: the first
    /// plane (so that the sweep can leave E on it for last) and those whose new H the copies
    /// `h_sources` read.
    fn early_planes(&self, h_sources: &[HaloCopy]) -> Vec<Vec<usize>> {
        let mut early: Vec<Vec<usize>> = vec![vec![1]; self.slabs.len()];
        for c in h_sources {
            let p = c.src_x - self.slabs[c.src_slab].range.x0 + 1;
            if !early[c.src_slab].contains(&p) {
                early[c.src_slab].push(p);
            }
        }
        early
    }

    /// The fused step up to the H exchange: the TF/SF 1-D grid of each slab advanced, then
    /// every H pass on each slab's first plane and on the planes the H halo copies
    /// `h_sources` read.
    pub(super) fn fused_early(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic: &[f64],
        currents: &[f64],
    ) {
        let early = self.early_planes(h_sources);
        let sh = &self.shared;
        self.slabs
            .par_iter_mut()
            .zip(&early)
            .for_each(|(s, planes)| {
                s.advance_incident(sh, Half::H, magnetic);
                s.advance_incident(sh, Half::E, currents);
                for &p in planes {
                    s.fused_h(sh, p, 0..sh.ny, magnetic);
                }
            });
    }

    /// The part of the sweep that needs no H halo, on the local planes `planes` (clipped to
    /// 2..=n of each slab): plane by plane, every H pass (but on the planes
    /// [`Self::fused_early`] did) and every E pass. Called on consecutive ranges from 2 up, it
    /// is the whole sweep but E on the first planes; a driver calls it in pieces to see to its
    /// messages between them.
    pub(super) fn fused_sweep(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic: &[f64],
        currents: &[f64],
        planes: Range<usize>,
    ) {
        let early = self.early_planes(h_sources);
        let sh = &self.shared;
        let bands = bands(sh, self.band_values);
        self.slabs.par_iter_mut().zip(&early).for_each(|(s, done)| {
            let mine = planes.start.max(2)..planes.end.min(s.range.len() + 1);
            for rows in &bands {
                for p in mine.clone() {
                    if !done.contains(&p) {
                        s.fused_h(sh, p, rows.clone(), magnetic);
                    }
                    s.fused_e(sh, p, rows.clone(), currents);
                }
            }
        });
    }

    /// The end of the sweep, once the H halos are in: every E pass on each slab's first plane.
    pub(super) fn fused_first_e(&mut self, currents: &[f64]) {
        let sh = &self.shared;
        self.slabs.par_iter_mut().for_each(|s| {
            s.fused_e(sh, 1, 0..sh.ny, currents);
        });
    }
}

impl<T: Real> CpuBackend<T> {
    /// Field values per row band of the fused sweep (default: whole planes, or
    /// `YEE_FUSED_BAND` bytes): whole rows, at least one; a plane or more sweeps whole planes.
    /// The bits do not depend on it (the tests sweep one-row bands); it is there for tests and
    /// tuning.
    pub fn set_fused_band_values(&mut self, values: usize) {
        self.band_values = values;
    }

    /// The row bands the fused sweep runs, in order (tests and tuning).
    pub fn fused_bands(&self) -> Vec<Range<usize>> {
        bands(&self.shared, self.band_values)
    }
}

impl<T: Real> Slab<T> {
    /// Every H pass on local plane `p`: the curl of E with the CPML correction, the magnetic
    /// sheets, the TF/SF H corrections (the incident grid already advanced).
    fn fused_h(&mut self, sh: &Shared<T>, p: usize, rows: Range<usize>, magnetic: &[f64]) {
        let plane = sh.ny * sh.nz;
        let o = p * plane;
        let psi = one_plane_psi(
            sh,
            &self.pml_x_planes,
            [&mut self.psi_x, &mut self.psi_y, &mut self.psi_z],
            2,
            p,
        );
        let [hx, hy, hz] = &mut self.h;
        h_curl_cpml(
            sh,
            self.range.x0,
            p - 1,
            &self.e,
            rows.clone(),
            (&self.hmat, &self.hrow_mat),
            [
                &mut hx[o..o + plane],
                &mut hy[o..o + plane],
                &mut hz[o..o + plane],
            ],
            psi,
        );
        self.inject_magnetic(sh, magnetic, p..p + 1, rows.clone());
        self.tfsf(sh, Half::H, p..p + 1, rows);
    }

    /// Every E pass on local plane `p`, in the order of [`crate::backend::pass::E_PASSES`]:
    /// the curl of H with the CPML correction, the sources, the TF/SF E corrections, the
    /// dispersive poles of the plane's cells, the PEC faces.
    fn fused_e(&mut self, sh: &Shared<T>, p: usize, rows: Range<usize>, currents: &[f64]) {
        let plane = sh.ny * sh.nz;
        let o = p * plane;
        let psi = one_plane_psi(
            sh,
            &self.pml_x_planes,
            [&mut self.psi_x, &mut self.psi_y, &mut self.psi_z],
            0,
            p,
        );
        let [ex, ey, ez] = &mut self.e;
        e_curl_cpml(
            sh,
            self.range.x0,
            p - 1,
            &self.h,
            rows.clone(),
            (&self.mat, &self.row_mat),
            [
                &mut ex[o..o + plane],
                &mut ey[o..o + plane],
                &mut ez[o..o + plane],
            ],
            psi,
        );
        self.inject(sh, currents, p..p + 1, rows.clone());
        self.tfsf(sh, Half::E, p..p + 1, rows.clone());
        let (a, b) = (rows.start * sh.nz, rows.end * sh.nz);
        for g in &mut self.dispersive {
            let e = &mut self.e[g.component][o + a..o + b];
            g.step_plane(sh, e, o - plane + a..o - plane + b);
        }
        self.zero_pec_faces(sh, p..p + 1, rows);
    }
}

/// The psi arrays of local plane `p` for one field (E: `first` = 0, H: `first` = 2), as
/// [`super::plane_psi`] splits them for every plane.
/// `psi` are the slab's x, y and z psi arrays, `x_planes` its x-layer planes.
fn one_plane_psi<'a, T: Real>(
    sh: &Shared<T>,
    x_planes: &[(usize, usize)],
    [psi_x, psi_y, psi_z]: [&'a mut [Vec<T>; 4]; 3],
    first: usize,
    p: usize,
) -> cpml::PlanePsi<'a, T> {
    let plane = sh.ny * sh.nz;
    let q = p - 1;
    let x = x_planes.iter().position(|&(xp, _)| xp == p).map(|k| {
        let l = x_planes[k].1;
        let [a, b] = pair(psi_x, first);
        (
            l,
            [
                &mut a[k * plane..(k + 1) * plane],
                &mut b[k * plane..(k + 1) * plane],
            ],
        )
    });
    let y_per = sh.pml[1].layers() * sh.nz;
    let z_per = sh.ny * sh.pml[2].layers();
    let [ya, yb] = pair(psi_y, first);
    let [za, zb] = pair(psi_z, first);
    cpml::PlanePsi {
        x,
        y: [
            &mut ya[q * y_per..(q + 1) * y_per],
            &mut yb[q * y_per..(q + 1) * y_per],
        ],
        z: [
            &mut za[q * z_per..(q + 1) * z_per],
            &mut zb[q * z_per..(q + 1) * z_per],
        ],
    }
}
