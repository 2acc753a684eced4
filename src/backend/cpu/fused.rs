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
//! The sweep walks the pass lists ([`crate::backend::pass::H_PASSES`], `E_PASSES`) on each
//! plane, calling each pass's per-plane form ([`Slab::pass_on_plane`], beside its whole-slab
//! form [`Slab::run_pass`]): it restates no order of its own, so a pass added to a list runs in
//! the sweep too once it has a per-plane form. Every pass today is local to the plane: the
//! curl and its CPML correction, the sources, the TF/SF face corrections (each plane's points
//! in group order), the dispersive poles of the plane's cells and the PEC faces; the cell sees
//! exactly the arithmetic of the two-pass step in the same order, so the fields are the same
//! bits. The one pass that is not
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

use super::tfsf::Incident;
use super::{
    bloch, copy_plane_region, cpml, e_curl_cpml, h_curl_cpml, pair, CpuBackend, Shared, Slab,
};
use crate::backend::{Backend, Half, Pass};
use crate::decomp::{HaloCopy, HaloPlan, HaloSide};
use crate::model::{Component, Region};
use crate::real::Real;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::mpsc;

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
        early_part(self.one_sets([magnetic, currents]), &early);
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
        let bands = bands(&self.shared, self.band_values);
        sweep_part(self.one_sets([magnetic, currents]), &early, &bands, planes);
    }

    /// The end of the sweep, once the H halos are in: every E pass on each slab's first plane,
    /// then the surface ports, over every slab once the sweep has left E^{n+1} everywhere (no pass of the step reads
    /// E^{n+1} at their edges; the E halos copy what they leave). A driver over MPI ranks
    /// calls this before its E exchange too ([`Backend::step_fused_first_e`]).
    pub(super) fn fused_first_e(&mut self, currents: &[f64]) {
        first_e_part(self.one_sets([&[], currents]));
        if let Some(ports) = &mut self.ports {
            ports.step(&self.shared, &mut self.slabs);
        }
    }

    /// Each slab with the half steps' source values `values` (H, E).
    fn one_sets<'a>(&'a mut self, values: [&'a [f64]; 2]) -> Vec<OneSet<'a, T>> {
        let sh = &self.shared;
        self.slabs
            .iter_mut()
            .map(|slab| OneSet { sh, slab, values })
            .collect()
    }

    /// A Bloch pair's engines `re` and `im` (the same split) slab by slab, with each set's
    /// half steps' source values `values` ([real, imaginary] of (H, E)).
    fn bloch_sets<'a>(
        re: &'a mut Self,
        im: &'a mut Self,
        values: [[&'a [f64]; 2]; 2],
    ) -> Vec<BlochSets<'a, T>> {
        let sh = [&re.shared, &im.shared];
        re.slabs
            .iter_mut()
            .zip(im.slabs.iter_mut())
            .map(|(re, im)| BlochSets { sh, re, im, values })
            .collect()
    }

    /// [`Self::fused_early`] of a Bloch pair `re`, `im` swept together, with each set's
    /// source values `values` (as [`Self::bloch_sets`] takes them).
    pub(super) fn bloch_early(
        re: &mut Self,
        im: &mut Self,
        h_sources: &[HaloCopy],
        values: [[&[f64]; 2]; 2],
    ) {
        let early = re.early_planes(h_sources);
        early_part(Self::bloch_sets(re, im, values), &early);
    }

    /// [`Self::fused_sweep`] of a Bloch pair swept together.
    pub(super) fn bloch_sweep(
        re: &mut Self,
        im: &mut Self,
        h_sources: &[HaloCopy],
        values: [[&[f64]; 2]; 2],
        planes: Range<usize>,
    ) {
        let early = re.early_planes(h_sources);
        let bands = bands(&re.shared, re.band_values);
        sweep_part(Self::bloch_sets(re, im, values), &early, &bands, planes);
    }

    /// [`Self::fused_first_e`] of a Bloch pair swept together.
    pub(super) fn bloch_first_e(re: &mut Self, im: &mut Self, values: [[&[f64]; 2]; 2]) {
        first_e_part(Self::bloch_sets(re, im, values));
    }
}

impl<T: Real> CpuBackend<T> {
    /// [`Self::fused_steps`] of a Bloch pair `re`, `im` swept together: `steps[k]` holds step
    /// k's source values as [`Self::bloch_sets`] takes them, and the probe rows of `samples`
    /// are the real set's. Only where [`Self::can_sweep_steps`]; a flux sample is read after
    /// the sweep (the caller ends a sweep at one). A Bloch cell holds no TF/SF source (the
    /// scene refuses one), so no 1-D incident grid advances here.
    pub(super) fn bloch_fused_steps<'a>(
        re: &'a mut Self,
        im: &'a mut Self,
        halos: &HaloPlan,
        steps: &[[[&'a [f64]; 2]; 2]],
        samples: &[(Component, [usize; 3])],
    ) {
        let count = re.slabs.len();
        let held: Vec<Vec<PlaneSample>> = re
            .slabs
            .iter()
            .map(|s| PlaneSample::held_by(s, &re.shared, samples))
            .collect();
        let mut links: Vec<[Links<T>; 2]> = links(halos, count)
            .into_iter()
            .zip(links(halos, count))
            .map(|(a, b)| [a, b])
            .collect();
        let flush = crate::fpu::subnormals_flushed();
        let units = Self::bloch_sets(re, im, steps[0]);
        let values: Vec<Vec<f64>> = if count == 1 {
            let l = links.pop().expect("one slab");
            let mut u = units.into_iter().next().expect("one slab");
            vec![u.sweep_steps(steps, true, l, &held[0])]
        } else {
            std::thread::scope(|scope| {
                let sweeps: Vec<_> = units
                    .into_iter()
                    .zip(links)
                    .zip(&held)
                    .enumerate()
                    .map(|(b, ((mut u, l), held))| {
                        scope.spawn(move || {
                            if flush {
                                crate::fpu::flush_subnormals_to_zero();
                            }
                            u.sweep_steps(steps, b % 2 == 0, l, held)
                        })
                    })
                    .collect();
                sweeps
                    .into_iter()
                    .map(|t| t.join().expect("a slab's sweep does not panic"))
                    .collect()
            })
        };
        re.queue_sweep_rows(steps.len(), samples.len(), &held, &values);
    }
}

/// What the fused step updates on one slab's planes, with its half steps' source values:
/// one field set's slab ([`OneSet`]), or the same slab of a Bloch pair's two sets
/// ([`BlochSets`]), swept together because the Bloch pass of each plane reads both.
trait SweepUnit: Send {
    /// Advance the TF/SF 1-D grids for both half steps (before the sweep).
    fn advance(&mut self);
    /// Every H pass on rows `rows` of local plane `p`.
    fn h(&mut self, p: usize, rows: Range<usize>);
    /// Every E pass on rows `rows` of local plane `p`.
    fn e(&mut self, p: usize, rows: Range<usize>);
    /// The slab's owned planes and rows.
    fn size(&self) -> (usize, usize);
}

/// One field set's slab in the fused sweep.
struct OneSet<'a, T> {
    sh: &'a Shared<T>,
    slab: &'a mut Slab<T>,
    /// The source values of the H and the E half step.
    values: [&'a [f64]; 2],
}

impl<T: Real> SweepUnit for OneSet<'_, T> {
    fn advance(&mut self) {
        self.slab.advance_incident(self.sh, Half::H, self.values[0]);
        self.slab.advance_incident(self.sh, Half::E, self.values[1]);
    }

    fn h(&mut self, p: usize, rows: Range<usize>) {
        self.slab.fused_h(self.sh, p, rows, self.values[0], None);
    }

    fn e(&mut self, p: usize, rows: Range<usize>) {
        self.slab.fused_e(self.sh, p, rows, self.values[1], None);
    }

    fn size(&self) -> (usize, usize) {
        (self.slab.range.len(), self.sh.ny)
    }
}

/// The same slab of a Bloch pair's real and imaginary set in the fused sweep: each pass runs
/// on both before the next, and the Bloch pass on a plane corrects both sets from both
/// ([`bloch::correct_plane`]) once the passes before it have run on the plane.
struct BlochSets<'a, T> {
    /// The real and the imaginary engine's tables.
    sh: [&'a Shared<T>; 2],
    re: &'a mut Slab<T>,
    im: &'a mut Slab<T>,
    /// Per set (real, imaginary), the source values of the H and the E half step.
    values: [[&'a [f64]; 2]; 2],
}

impl<T: Real> BlochSets<'_, T> {
    /// Every pass of `half` on rows `rows` of local plane `p`, of both sets.
    fn passes(&mut self, half: Half, p: usize, rows: Range<usize>) {
        let i = half.index();
        for &pass in half.passes() {
            if pass == Pass::Bloch {
                bloch::correct_plane(self.sh[0], self.re, self.im, half, p, &rows);
                continue;
            }
            let (sh, values) = (self.sh[0], self.values[0][i]);
            self.re
                .pass_on_plane(sh, half, pass, p, rows.clone(), values, None);
            let (sh, values) = (self.sh[1], self.values[1][i]);
            self.im
                .pass_on_plane(sh, half, pass, p, rows.clone(), values, None);
        }
    }
}

impl<'a, T: Real> BlochSets<'a, T> {
    /// [`Slab::sweep_steps`] of both sets: step k with the values `steps[k]`, each set's halo
    /// planes through its own `links`, the probe samples `held` read from the real set.
    fn sweep_steps(
        &mut self,
        steps: &[[[&'a [f64]; 2]; 2]],
        forward: bool,
        links: [Links<T>; 2],
        held: &[PlaneSample],
    ) -> Vec<f64> {
        let n = self.re.range.len();
        let ny = self.sh[0].ny;
        let depth = steps.len();
        let mut values = vec![0.0; depth * held.len()];
        wavefront(n, depth, forward, |electric, q, k| {
            self.values = steps[k];
            if !electric {
                if q == n && k > 0 {
                    self.each_link(&links, |s, sh, l| {
                        if let Some(r) = &l.right {
                            s.receive_plane(sh, r, true, n + 1);
                        }
                    });
                }
                self.h(q, 0..ny);
                if q == n {
                    self.each_link(&links, |s, sh, l| {
                        if let Some(r) = &l.right {
                            s.send_plane(sh, r, false, n);
                        }
                    });
                }
                return;
            }
            if q == 1 {
                self.each_link(&links, |s, sh, l| {
                    if let Some(r) = &l.left {
                        s.receive_plane(sh, r, false, 0);
                    }
                });
            }
            self.e(q, 0..ny);
            if q == 1 {
                self.each_link(&links, |s, sh, l| {
                    if let Some(r) = &l.left {
                        s.send_plane(sh, r, true, 1);
                    }
                });
            }
            read_held(self.re, held, q, k, &mut values);
        });
        self.each_link(&links, |s, sh, l| {
            if let Some(r) = &l.right {
                s.receive_plane(sh, r, true, n + 1);
            }
        });
        values
    }

    /// `f` on each set's slab, tables and links (real, then imaginary).
    fn each_link(
        &mut self,
        links: &[Links<T>; 2],
        mut f: impl FnMut(&mut Slab<T>, &Shared<T>, &Links<T>),
    ) {
        f(self.re, self.sh[0], &links[0]);
        f(self.im, self.sh[1], &links[1]);
    }
}

impl<T: Real> SweepUnit for BlochSets<'_, T> {
    fn advance(&mut self) {
        for half in Half::BOTH {
            let i = half.index();
            self.re
                .advance_incident(self.sh[0], half, self.values[0][i]);
            self.im
                .advance_incident(self.sh[1], half, self.values[1][i]);
        }
    }

    fn h(&mut self, p: usize, rows: Range<usize>) {
        self.passes(Half::H, p, rows);
    }

    fn e(&mut self, p: usize, rows: Range<usize>) {
        self.passes(Half::E, p, rows);
    }

    fn size(&self) -> (usize, usize) {
        (self.re.range.len(), self.sh[0].ny)
    }
}

/// The early part of the fused step ([`CpuBackend::fused_early`]) on `units`, slab `b`'s H
/// on its local planes `early[b]`.
fn early_part<U: SweepUnit>(units: Vec<U>, early: &[Vec<usize>]) {
    units
        .into_par_iter()
        .zip(early)
        .for_each(|(mut u, planes)| {
            u.advance();
            let ny = u.size().1;
            for &p in planes {
                u.h(p, 0..ny);
            }
        });
}

/// The interior of the fused sweep ([`CpuBackend::fused_sweep`]) on `units` over the local
/// planes `planes`, band by band, H but on the planes `early` lists.
fn sweep_part<U: SweepUnit>(
    units: Vec<U>,
    early: &[Vec<usize>],
    bands: &[Range<usize>],
    planes: Range<usize>,
) {
    units.into_par_iter().zip(early).for_each(|(mut u, done)| {
        let mine = planes.start.max(2)..planes.end.min(u.size().0 + 1);
        for rows in bands {
            for p in mine.clone() {
                if !done.contains(&p) {
                    u.h(p, rows.clone());
                }
                u.e(p, rows.clone());
            }
        }
    });
}

/// The end of the fused sweep ([`CpuBackend::fused_first_e`]) on `units`.
fn first_e_part<U: SweepUnit>(units: Vec<U>) {
    units.into_par_iter().for_each(|mut u| {
        let ny = u.size().1;
        u.e(1, 0..ny);
    });
}

impl<T: Real> CpuBackend<T> {
    /// True if [`Self::fused_steps`] can sweep several steps at once with the halo copies
    /// `halos`: every copy is the plain one between neighbours (new H of a slab's last plane
    /// into the next slab's left halo, new E of a slab's first plane into the previous one's
    /// right halo: no periodic or PMC x face), and whole planes (no row bands). Each slab sweeps on a
    /// thread of its own (they wait on each other's halo planes), so a caller that keeps to a
    /// number of threads sweeps several steps at once only with as many slabs.
    pub(super) fn can_sweep_steps(&self, halos: &HaloPlan) -> bool {
        let slabs = &self.slabs;
        let h_ok = halos.after_h.iter().all(|c| {
            !c.negate
                && c.dst_slab == c.src_slab + 1
                && c.dst_side == HaloSide::Left
                && c.src_x + 1 == slabs[c.src_slab].range.x1
        });
        let e_ok = halos.after_e.iter().all(|c| {
            !c.negate
                && c.dst_slab + 1 == c.src_slab
                && c.dst_side == HaloSide::Right
                && c.src_x == slabs[c.src_slab].range.x0
        });
        // The surface ports step between whole steps (their stencils cross the slabs'
        // planes), so a sweep holds one step only.
        h_ok && e_ok && bands(&self.shared, self.band_values).len() == 1 && self.ports.is_none()
    }

    /// `steps.len()` whole steps, step k with the magnetic currents `steps[k].0` and the
    /// currents `steps[k].1`, in one sweep along x per slab (temporal blocking, a wavefront;
    /// only where [`Self::can_sweep_steps`]), queueing after each step a row of the probe
    /// samples `samples` as [`Backend::queue_probes`] would. Each cell sees the arithmetic of
    /// the step-by-step sweep in the same order, so the bits are the same, while the field
    /// values travel from memory once per sweep instead of once per step.
    ///
    /// Within a slab ([`Slab::sweep_steps`]) step k runs one plane behind step k - 1. Between
    /// slabs the halo planes travel every step, as messages between the slabs' threads
    /// ([`Links`]): the new H of a slab's last plane to the next slab before that one updates
    /// E on its first plane, and the new E of a slab's first plane back before the previous
    /// one updates H on its last plane in the next step. Were every slab to sweep towards +x,
    /// a slab could only start a step once the slab before had finished it, one slab after
    /// the other; so slabs sweep in turn towards +x and towards -x, and two neighbours reach
    /// their common face together, at the ends of their sweeps or at the starts. The one
    /// thread per slab blocks on its neighbours' messages only for the planes by that face.
    ///
    /// Probes: a plane holds step k's E and H from the moment step k's E update of it ends
    /// until step k + 1 updates its H, so each slab reads its samples there, plane by plane
    /// ([`PlaneSample`]); the rows are put together in sample order after the sweep.
    ///
    /// Flux planes the same way: `flux_read` = (k, regions) reads each region's rows of plane
    /// q right after step k's E update of q ([`PlaneRead`]), while the plane is in cache,
    /// into the monitors' `flux_read` buffer, back to back in the order of `regions`. Read
    /// after the sweep instead, a 200 x 200 plane normal to z (one value per cache line of
    /// each of six components) took 5 ms a sample on a 200^3 grid.
    pub(super) fn fused_steps(
        &mut self,
        halos: &HaloPlan,
        steps: &[(&[f64], &[f64])],
        samples: &[(Component, [usize; 3])],
        flux_read: Option<(usize, &[(Component, Region)])>,
    ) {
        let sh = &self.shared;
        let count = self.slabs.len();
        let mut links = links(halos, count);
        let held: Vec<Vec<PlaneSample>> = self
            .slabs
            .iter()
            .map(|s| PlaneSample::held_by(s, sh, samples))
            .collect();
        let mut read_buffer = std::mem::take(&mut self.monitors.flux_read);
        let read_step = flux_read.map(|(k, _)| k);
        let mut reads = PlaneRead::by_slab(
            &self.slabs,
            flux_read.map_or(&[], |(_, regions)| regions),
            &mut read_buffer,
        );
        // The slabs' threads flush subnormals as the caller does (the run's pool does): the
        // bits of the step-by-step sweep on the pool's threads. Linux copies the floating-point
        // state into a new thread, but not every system does, so it is set explicitly.
        let flush = crate::fpu::subnormals_flushed();
        let values: Vec<Vec<f64>> = if count == 1 {
            let l = links.pop().unwrap_or_default();
            let reads = (read_step, &mut reads[0][..]);
            vec![self.slabs[0].sweep_steps(sh, steps, true, l, &held[0], reads)]
        } else {
            std::thread::scope(|scope| {
                let sweeps: Vec<_> = self
                    .slabs
                    .iter_mut()
                    .zip(links)
                    .zip(&held)
                    .zip(reads.iter_mut())
                    .enumerate()
                    .map(|(b, (((s, l), held), reads))| {
                        scope.spawn(move || {
                            if flush {
                                crate::fpu::flush_subnormals_to_zero();
                            }
                            let reads = (read_step, &mut reads[..]);
                            s.sweep_steps(sh, steps, b % 2 == 0, l, held, reads)
                        })
                    })
                    .collect();
                sweeps
                    .into_iter()
                    .map(|t| t.join().expect("a slab's sweep does not panic"))
                    .collect()
            })
        };
        drop(reads);
        self.monitors.flux_read = read_buffer;
        self.queue_sweep_rows(steps.len(), samples.len(), &held, &values);
    }

    /// Queue the probe rows of a sweep of `steps` steps over `samples` samples: slab b's
    /// values of its samples `held[b]`, a row per step ([`Slab::sweep_steps`]).
    fn queue_sweep_rows(
        &mut self,
        steps: usize,
        samples: usize,
        held: &[Vec<PlaneSample>],
        values: &[Vec<f64>],
    ) {
        if samples == 0 {
            return;
        }
        let rows = &mut self.monitors.probe_rows;
        let first = rows.len();
        rows.resize(first + steps * samples, 0.0);
        for (held, values) in held.iter().zip(values) {
            for (k, row) in values.chunks_exact(held.len().max(1)).enumerate() {
                let out = &mut rows[first + k * samples..];
                for (ps, &v) in held.iter().zip(row) {
                    out[ps.index] = v;
                }
            }
        }
    }
}

/// The message channels of `count` slabs sweeping several steps at once with the halo copies
/// `halos` ([`CpuBackend::fused_steps`]): each pair of neighbours shares an H channel (to the
/// right) and an E channel (to the left).
fn links<T>(halos: &HaloPlan, count: usize) -> Vec<Links<T>> {
    let mut links: Vec<Links<T>> = (0..count).map(|_| Links::default()).collect();
    for b in 1..count {
        let (h_send, h_recv) = mpsc::channel();
        let (e_send, e_recv) = mpsc::channel();
        links[b - 1].right = Some(Neighbour {
            send: h_send,
            recv: e_recv,
            send_components: components(&halos.after_h, |c| c.src_slab == b - 1),
            recv_components: components(&halos.after_e, |c| c.dst_slab == b - 1),
        });
        links[b].left = Some(Neighbour {
            send: e_send,
            recv: h_recv,
            send_components: components(&halos.after_e, |c| c.src_slab == b),
            recv_components: components(&halos.after_h, |c| c.dst_slab == b),
        });
    }
    links
}

/// The wavefront of several steps in one sweep over a slab of `n` planes ([`Slab::sweep_steps`]):
/// `visit(electric, q, k)` updates H (`electric` false) or E of local plane q in step k, in an
/// order where step k runs one plane behind step k - 1; towards +x, or towards -x when not
/// `forward`.
fn wavefront(n: usize, depth: usize, forward: bool, mut visit: impl FnMut(bool, usize, usize)) {
    // Position d of a step's sweep (d = 0 first): towards +x plane d + 1; towards -x the
    // pair at q = n - d. Step k is at position i - k in round i.
    for i in 0..n + depth {
        for k in 0..depth.min(i + 1) {
            let d = i - k;
            if forward && d < n {
                visit(false, d + 1, k);
                visit(true, d + 1, k);
            } else if !forward && d <= n {
                let q = n - d;
                if q >= 1 {
                    visit(false, q, k);
                }
                if q < n {
                    visit(true, q + 1, k);
                }
            }
        }
    }
}

/// Put the values of the samples `held` on local plane `q` of `slab` into step k's row of
/// `values` (a row of `held.len()` per step).
fn read_held<T: Real>(
    slab: &Slab<T>,
    held: &[PlaneSample],
    q: usize,
    k: usize,
    values: &mut [f64],
) {
    let on_q = held.partition_point(|p| p.plane < q)..held.partition_point(|p| p.plane <= q);
    for (i, p) in held[on_q.clone()].iter().enumerate() {
        let f = if p.electric { &slab.e } else { &slab.h };
        values[k * held.len() + on_q.start + i] = f[p.component][p.offset].to_f64();
    }
}

/// A probe sample that a slab holds, as [`Slab::sweep_steps`] reads it.
#[derive(Debug, Clone, Copy)]
struct PlaneSample {
    /// The local plane (1..=n) of its cell.
    plane: usize,
    /// Its index in the list of samples.
    index: usize,
    /// In E (else H).
    electric: bool,
    /// Its component within E or H (0-2).
    component: usize,
    /// Its cell's index in the field arrays.
    offset: usize,
}

impl PlaneSample {
    /// The samples of `samples` in slab `s`'s cells, by plane.
    fn held_by<T>(s: &Slab<T>, sh: &Shared<T>, samples: &[(Component, [usize; 3])]) -> Vec<Self> {
        let mut held: Vec<Self> = samples
            .iter()
            .enumerate()
            .filter(|(_, (_, idx))| s.range.x0 <= idx[0] && idx[0] < s.range.x1)
            .map(|(index, &(c, idx))| {
                let plane = idx[0] - s.range.x0 + 1;
                PlaneSample {
                    plane,
                    index,
                    electric: c.is_electric(),
                    component: c as usize % 3,
                    offset: (plane * sh.ny + idx[1]) * sh.nz + idx[2],
                }
            })
            .collect();
        // Stable: samples of one plane stay in list order.
        held.sort_by_key(|p| p.plane);
        held
    }
}

/// The rows of one x plane of a region that a slab's sweep copies for a flux sample, as
/// [`Slab::sweep_steps`] reads them.
struct PlaneRead<'a, T> {
    /// The slab's local plane (1..=n).
    plane: usize,
    /// In E (else H).
    electric: bool,
    /// Its component within E or H (0-2).
    component: usize,
    /// The region (its y and z ranges are copied).
    region: Region,
    /// Where the plane's rows go: its part of the region's values, C order.
    out: &'a mut [T],
}

impl<'a, T> PlaneRead<'a, T> {
    /// The reads of `regions` (back to back in `buffer`, C order each) by the slab that holds
    /// each x plane, each slab's by plane.
    fn by_slab(
        slabs: &[Slab<T>],
        regions: &[(Component, Region)],
        buffer: &'a mut [T],
    ) -> Vec<Vec<Self>> {
        let mut by_slab: Vec<Vec<Self>> = slabs.iter().map(|_| Vec::new()).collect();
        let mut rest = buffer;
        for &(c, region) in regions {
            let (values, tail) = std::mem::take(&mut rest).split_at_mut(region.len());
            rest = tail;
            let counts = region.counts();
            let per_x = counts[1] * counts[2];
            if per_x == 0 {
                continue;
            }
            for (n, out) in values.chunks_mut(per_x).enumerate() {
                let x = region.start[0] + n * region.stride[0];
                let b = slabs
                    .iter()
                    .position(|s| s.range.x0 <= x && x < s.range.x1)
                    .expect("x index inside the grid");
                by_slab[b].push(PlaneRead {
                    plane: x - slabs[b].range.x0 + 1,
                    electric: c.is_electric(),
                    component: c as usize % 3,
                    region,
                    out,
                });
            }
        }
        for reads in &mut by_slab {
            // Stable: reads of one plane stay in region order.
            reads.sort_by_key(|r| r.plane);
        }
        by_slab
    }
}

/// The components (indices 0-2 within E or H) of the copies in `copies` that `pick` selects,
/// in order: what one halo message between two slabs of [`CpuBackend::fused_steps`] holds.
fn components(copies: &[HaloCopy], pick: impl Fn(&HaloCopy) -> bool) -> Vec<usize> {
    copies
        .iter()
        .filter(|c| pick(c))
        .map(|c| c.component as usize % 3)
        .collect()
}

/// A slab's message channels in [`CpuBackend::fused_steps`], to each neighbour it has.
struct Links<T> {
    /// The slab before (lower x): E of our first plane goes to it, H of its last plane comes.
    left: Option<Neighbour<T>>,
    /// The slab after: H of our last plane goes to it, E of its first plane comes.
    right: Option<Neighbour<T>>,
}

impl<T> Default for Links<T> {
    fn default() -> Self {
        Links {
            left: None,
            right: None,
        }
    }
}

/// One neighbour's channels: a message is the listed components' planes, one after another.
struct Neighbour<T> {
    send: mpsc::Sender<Vec<T>>,
    recv: mpsc::Receiver<Vec<T>>,
    send_components: Vec<usize>,
    recv_components: Vec<usize>,
}

/// The field of a halo message: E for the messages to the left, H for those to the right.
fn field_of<T>(s: &mut Slab<T>, electric: bool) -> &mut [Vec<T>; 3] {
    if electric {
        &mut s.e
    } else {
        &mut s.h
    }
}

impl<T: Real> Slab<T> {
    /// Send local plane `p` of `components` of E or H to a neighbour.
    fn send_plane(&mut self, sh: &Shared<T>, to: &Neighbour<T>, electric: bool, p: usize) {
        let plane = sh.ny * sh.nz;
        let f = field_of(self, electric);
        let mut msg = Vec::with_capacity(plane * to.send_components.len());
        for &c in &to.send_components {
            msg.extend_from_slice(&f[c][p * plane..(p + 1) * plane]);
        }
        // The receiver lives until the end of the block: it receives every message sent.
        to.send.send(msg).expect("the neighbour's sweep is running");
    }

    /// Receive a neighbour's plane into the halo plane `p` of E or H (waiting for it).
    fn receive_plane(&mut self, sh: &Shared<T>, from: &Neighbour<T>, electric: bool, p: usize) {
        let plane = sh.ny * sh.nz;
        let msg = from
            .recv
            .recv()
            .expect("the neighbour's sweep sends every plane");
        let f = field_of(self, electric);
        for (&c, values) in from.recv_components.iter().zip(msg.chunks_exact(plane)) {
            f[c][p * plane..(p + 1) * plane].copy_from_slice(values);
        }
    }

    /// This slab's part of [`CpuBackend::fused_steps`]: every step of `steps` on every local
    /// plane, towards +x (`forward`) or -x, with the halo messages of `links`.
    ///
    /// Towards +x, at each p from 1: step 0 on plane p, step 1 on plane p - 1, ..., each
    /// plane's H then its E. Step k on plane q reads E on planes q and q + 1 after step k - 1
    /// (step k - 1 was just on plane q + 1) and H on plane q - 1 after step k (done at the
    /// previous p); no step k - 1 work left reads plane q (it is on planes q + 2 and up).
    ///
    /// Towards -x the pairs are H on plane q with E on plane q + 1, from q = n (H only) down to
    /// q = 0 (E on plane 1 only): E on q + 1 needs the new H on planes q and q + 1, and H on q
    /// reads E on q + 1 before that E changes. Step k runs one position behind step k - 1 as
    /// towards +x, by the mirrored argument.
    ///
    /// Halos: the H update of the last plane in step k >= 1 first receives the right
    /// neighbour's E of step k - 1 (step 0 reads the halo as the previous step left it), and
    /// then sends its new H; the E update of the first plane first receives the left
    /// neighbour's H of step k and then sends its new E. After the last step the last E from
    /// the right fills the halo, as the E exchange after a step does.
    ///
    /// Probes: plane q holds step k's E and H once step k's E update of q ends, both ways
    /// (towards +x its H was updated just before; towards -x one position before), and until
    /// step k + 1 updates its H, which comes later (towards -x later in the same round). So
    /// the samples `held` of plane q are read right after that E update, and so are the flux
    /// planes' rows `reads` = (k, rows) of step k. Returns the samples' values, a row per step,
    /// in the order of `held`.
    fn sweep_steps(
        &mut self,
        sh: &Shared<T>,
        steps: &[(&[f64], &[f64])],
        forward: bool,
        links: Links<T>,
        held: &[PlaneSample],
        (read_step, reads): (Option<usize>, &mut [PlaneRead<T>]),
    ) -> Vec<f64> {
        let n = self.range.len();
        let depth = steps.len();
        let mut values = vec![0.0; depth * held.len()];
        // The TF/SF 1-D grid of each step (none without correction points in this slab).
        let mut ahead = self.incident_ahead(sh, steps);
        let h = |s: &mut Self, q: usize, k: usize| {
            if q == n {
                if let Some(r) = &links.right {
                    if k > 0 {
                        s.receive_plane(sh, r, true, n + 1);
                    }
                }
            }
            s.fused_h(sh, q, 0..sh.ny, steps[k].0, ahead.get(k));
            if q == n {
                if let Some(r) = &links.right {
                    s.send_plane(sh, r, false, n);
                }
            }
        };
        let mut e = |s: &mut Self, q: usize, k: usize| {
            if q == 1 {
                if let Some(l) = &links.left {
                    s.receive_plane(sh, l, false, 0);
                }
            }
            s.fused_e(sh, q, 0..sh.ny, steps[k].1, ahead.get(k));
            if q == 1 {
                if let Some(l) = &links.left {
                    s.send_plane(sh, l, true, 1);
                }
            }
            read_held(s, held, q, k, &mut values);
            if read_step == Some(k) {
                let on_q =
                    reads.partition_point(|r| r.plane < q)..reads.partition_point(|r| r.plane <= q);
                for r in &mut reads[on_q] {
                    let f = if r.electric { &s.e } else { &s.h };
                    copy_plane_region(&f[r.component], q, [sh.ny, sh.nz], &r.region, r.out);
                }
            }
        };
        wavefront(n, depth, forward, |electric, q, k| {
            if electric {
                e(self, q, k)
            } else {
                h(self, q, k)
            }
        });
        if let Some(r) = &links.right {
            self.receive_plane(sh, r, true, n + 1);
        }
        if let Some(last) = ahead.pop() {
            self.incident = Some(last);
        }
        values
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
    /// Every H pass on local plane `p`, walking [`crate::backend::pass::H_PASSES`] in its
    /// per-plane form ([`Slab::pass_on_plane`]); the TF/SF corrections read the incident grid
    /// `ahead` where given (already advanced), else the slab's own.
    fn fused_h(
        &mut self,
        sh: &Shared<T>,
        p: usize,
        rows: Range<usize>,
        magnetic: &[f64],
        ahead: Option<&Incident<T>>,
    ) {
        for &pass in Half::H.passes() {
            self.pass_on_plane(sh, Half::H, pass, p, rows.clone(), magnetic, ahead);
        }
    }

    /// Every E pass on local plane `p`, walking [`crate::backend::pass::E_PASSES`] as
    /// [`Slab::fused_h`] walks the H passes.
    fn fused_e(
        &mut self,
        sh: &Shared<T>,
        p: usize,
        rows: Range<usize>,
        currents: &[f64],
        ahead: Option<&Incident<T>>,
    ) {
        for &pass in Half::E.passes() {
            self.pass_on_plane(sh, Half::E, pass, p, rows.clone(), currents, ahead);
        }
    }

    /// The per-plane form of `pass` in `half` (what the fused sweeps run, plane by plane, in
    /// the pass list's order; [`Slab::run_pass`] is its whole-slab form): over rows `rows` of
    /// local plane `p`, with the half step's source `values`; the TF/SF corrections read the
    /// incident grid `ahead` where given, else the slab's own, advanced once per half step
    /// before the sweep reaches the plane.
    #[allow(clippy::too_many_arguments)] // the sweep's plane, rows, values and grid
    fn pass_on_plane(
        &mut self,
        sh: &Shared<T>,
        half: Half,
        pass: Pass,
        p: usize,
        rows: Range<usize>,
        values: &[f64],
        ahead: Option<&Incident<T>>,
    ) {
        match (half, pass) {
            (_, Pass::CurlCpml) => self.curl_cpml_plane(sh, half, p, rows),
            (Half::H, Pass::Conformal) => self.conformal(sh, p..p + 1, rows),
            // One set has no Bloch pass; a pair's sweep runs it on both sets (`BlochSets`).
            (_, Pass::Bloch) => {}
            (Half::H, Pass::MagneticSources) => self.inject_magnetic(sh, values, p..p + 1, rows),
            (Half::E, Pass::Sources) => self.inject(sh, values, p..p + 1, rows),
            (_, Pass::Tfsf) => self.tfsf(sh, half, p..p + 1, rows, ahead),
            (_, Pass::Cells) => self.cells_on_plane(sh, half, p, rows),
            (Half::E, Pass::Dispersive) => {
                let o = p * sh.ny * sh.nz;
                let plane = sh.ny * sh.nz;
                let (a, b) = (rows.start * sh.nz, rows.end * sh.nz);
                for g in &mut self.dispersive {
                    let e = &mut self.e[g.component][o + a..o + b];
                    g.step_plane(sh, e, o - plane + a..o - plane + b);
                }
            }
            (Half::E, Pass::PecFaces) => self.zero_pec_faces(sh, p..p + 1, rows),
            (half, pass) => {
                unreachable!("no {} pass in the {} half step", pass.name(), half.name())
            }
        }
    }

    /// The curl of the other field with the CPML correction on rows `rows` of local plane `p`
    /// (the per-plane form of the `curl+cpml` pass).
    fn curl_cpml_plane(&mut self, sh: &Shared<T>, half: Half, p: usize, rows: Range<usize>) {
        let plane = sh.ny * sh.nz;
        let o = p * plane;
        let first = if half == Half::H { 2 } else { 0 };
        let psi = one_plane_psi(
            sh,
            &self.pml_x_planes,
            [&mut self.psi_x, &mut self.psi_y, &mut self.psi_z],
            first,
            p,
        );
        match half {
            Half::H => {
                let [hx, hy, hz] = &mut self.h;
                h_curl_cpml(
                    sh,
                    self.range.x0,
                    p - 1,
                    &self.e,
                    rows,
                    (&self.hmat, &self.hrow_mat),
                    [
                        &mut hx[o..o + plane],
                        &mut hy[o..o + plane],
                        &mut hz[o..o + plane],
                    ],
                    psi,
                );
            }
            Half::E => {
                let [ex, ey, ez] = &mut self.e;
                e_curl_cpml(
                    sh,
                    self.range.x0,
                    p - 1,
                    &self.h,
                    rows,
                    (&self.mat, &self.row_mat),
                    [
                        &mut ex[o..o + plane],
                        &mut ey[o..o + plane],
                        &mut ez[o..o + plane],
                    ],
                    psi,
                );
            }
        }
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
