//! Surface DFT monitors at run time: running DFTs of the tangential fields on rectangular
//! patches of E-node planes, and the net Poynting flux spectrum they give.
//!
//! A monitor is a list of patches ([`Patch`]): one whole plane (`type = "flux"` with
//! `plane`), or the six faces of a closed box (`type = "flux"` with `box`, and `type =
//! "far_field"`, which projects the same DFTs to the far field: [`crate::far_field`]).
//!
//! For a patch normal to axis a with tangential axes (b, c) in cyclic order, the flux is
//! P(f) = sign Re sum over the patch of (w_bc E_b H_c* - w_cb E_c H_b*) dA, with each field's
//! DFT F(f) = sum_n F^n exp(-i 2 pi f t_n) dt taken at its own sample times (E at whole steps, H
//! at half steps), so E and H are combined at the same instant. Tangential E lies on the E node
//! plane; tangential H, half a cell either side of it, is interpolated onto the plane (the mean on
//! a uniform axis, [`h_weights`]). In-plane the
//! pairs (E_b, H_c) and (E_c, H_b) share their Yee positions, so no in-plane interpolation is
//! needed. The weights w are each cell's size (1 on a uniform plane monitor); on a box face the trapezoid rule
//! over the face from E node to E node ([`pair_weights`]), so every edge and corner of the box is
//! integrated once by each face that meets there and nothing is counted twice. The DFTs are
//! kept in f64: on the host here ([`FluxAccumulators`], the CPU backend's path), or on the device
//! by the CUDA backend (`kernels/flux.cu`, same arithmetic in the same order, read back only when
//! a spectrum is written and combined by [`PatchDft::power`]).

use crate::model::{Component, Flux, Grid, Model, Patch, Region};
use crate::real::{written_zeros, Real};
use rayon::prelude::*;

/// One patch's accumulators.
struct PatchAcc {
    /// Gather regions: E_b, E_c, H_b below, H_b above, H_c below, H_c above.
    regions: [(Component, Region); 6],
    patch: Patch,
    /// Cells in the patch.
    cells: usize,
    /// Area of one cell face (m^2).
    area: f64,
    /// Quadrature weights of the two pairs relative to `area` ([`patch_weights`]).
    weights: [Vec<f64>; 2],
    /// H's interpolation weights onto the E plane ([`h_weights`]).
    h_weights: [f64; 2],
    /// DFT accumulators of E_b, E_c, H_b, H_c: real and imaginary parts, [frequency][cell].
    re: [Vec<f64>; 4],
    im: [Vec<f64>; 4],
    /// The tangential values (E_b, E_c, H_b, H_c, H on the E plane) of the samples gathered
    /// but not yet added to the accumulators: [sample][component][cell], room for the
    /// monitor's [`samples_per_pass`].
    samples: Vec<f64>,
}

struct Monitor {
    frequencies: Vec<f64>,
    /// Sampled every `decimation` steps ([`crate::model::Flux::decimation`]).
    decimation: usize,
    /// The weights ([`sample_weights`]) of the samples waiting in the patches' `samples`, in
    /// the order they were taken.
    pending: Vec<Vec<[f64; 4]>>,
    patches: Vec<PatchAcc>,
}

/// The DFT state of every surface DFT monitor of a model.
pub struct FluxAccumulators {
    monitors: Vec<Monitor>,
    scratch: Vec<f64>,
}

/// Samples the CPU adds to a monitor's accumulators in one pass over them: up to 8, and no
/// more than its `nf` frequencies, so that the samples' buffer (4 f64 per cell and sample)
/// holds at most half the accumulators' bytes (8 f64 per cell and frequency).
///
/// The accumulators are read and written once per pass instead of once per sample: a
/// 21-frequency plane moves 21 x 8 x 16 bytes per cell and sample when added one sample at a
/// time, which made it 12 % of a 200^3 run. Each accumulator still takes its samples one by
/// one in time order (`acc += x w`), so the sums are the same bits as a pass per sample, and
/// the same as the CUDA engine's.
pub fn samples_per_pass(nf: usize) -> usize {
    nf.clamp(1, 8)
}

/// Cells the pass over a monitor's accumulators takes at a time: each frequency's block of
/// accumulators (16 bytes a cell) stays in the L1 cache while a batch's samples stream past.
const CELLS_PER_BLOCK: usize = 512;

/// The DFT weight of frequency `f` (Hz) for a field sampled at time `t` (s) that stands for
/// `weight` seconds of the run: exp(-2 pi i f t) weight, as (re, im).
///
/// Both backends take their weights from here (the CUDA engine hands them to its kernel in
/// the launch arguments, [`sample_weights`]), so a GPU's `sin` and `cos`, which are not the
/// host's to the bit, never enter a DFT.
pub fn phasor(f: f64, t: f64, weight: f64) -> (f64, f64) {
    let phase = -2.0 * std::f64::consts::PI * f * t;
    let (s, c) = phase.sin_cos();
    (c * weight, s * weight)
}

/// One sample's weights at each of `frequencies`: [re, im] of [`phasor`] at the E sample time
/// `t_e`, then at the H sample time `t_h`, each standing for `weight` seconds.
pub fn sample_weights(frequencies: &[f64], t_e: f64, t_h: f64, weight: f64) -> Vec<[f64; 4]> {
    frequencies
        .iter()
        .map(|&f| {
            let (er, ei) = phasor(f, t_e, weight);
            let (hr, hi) = phasor(f, t_h, weight);
            [er, ei, hr, hi]
        })
        .collect()
}

/// Components tangential to a plane normal to axis `a`, in cyclic order (b, c).
pub fn tangential(a: usize) -> (usize, usize) {
    ((a + 1) % 3, (a + 2) % 3)
}

/// The six regions a patch reads each step: E_b, E_c on the E node plane, then H_b below and
/// above it, H_c below and above it (stride 1, the patch's cells).
pub fn planes(patch: &Patch) -> [(Component, Region); 6] {
    let a = patch.axis as usize;
    let (b, c) = tangential(a);
    let [p, q] = patch.in_plane();
    let plane = |comp: usize, index: usize| {
        let mut start = [0; 3];
        let mut end = [0; 3];
        start[a] = index;
        end[a] = index + 1;
        start[p] = patch.start[0];
        end[p] = patch.start[0] + patch.count[0];
        start[q] = patch.start[1];
        end[q] = patch.start[1] + patch.count[1];
        (
            Component::ALL[comp],
            Region {
                start,
                end,
                stride: [1; 3],
            },
        )
    };
    let k = patch.index;
    [
        plane(b, k),
        plane(c, k),
        plane(3 + b, k - 1),
        plane(3 + b, k),
        plane(3 + c, k - 1),
        plane(3 + c, k),
    ]
}

/// The area of one reference cell face of a patch (m^2): the product of the grid's cell sizes
/// along its in-plane axes (on a graded axis the background cell, which the weights of
/// [`pair_weights`] scale to each cell's own size).
pub fn cell_area(model: &Model, patch: &Patch) -> f64 {
    let [p, q] = patch.in_plane();
    model.grid.cell[p] * model.grid.cell[q]
}

/// The weights (below, above) that interpolate the tangential H of the cells either side of a
/// patch's E node plane onto it: linear interpolation, (d_above, d_below) / (d_below +
/// d_above) with d the two cells' sizes along the normal; exactly (1/2, 1/2) on a uniform axis.
///
/// Linear, not the plain mean, because it is what makes a closed box's flux the lattice's own
/// energy balance on a graded axis: the E node on the face counts only its inside half cell
/// in the box's energy, and the E update of that node, weighed by half a cell over its dual
/// cell, leaves H_below and H_above with exactly these weights (the uniform case's 1/2, 1/2).
pub fn h_weights(grid: &Grid, patch: &Patch) -> [f64; 2] {
    let a = patch.axis as usize;
    if grid.lines[a].is_none() {
        return [0.5, 0.5];
    }
    let k = patch.index as isize;
    let (below, above) = (grid.primal(a, k - 1), grid.primal(a, k));
    [above / (below + above), below / (below + above)]
}

/// The sizes of the primal cells along `axis` of `grid` relative to its reference cell
/// `grid.cell[axis]`: every value exactly 1.0 on a uniform axis, so a uniform grid's quadrature
/// weights are the plain trapezoid rule's 0, 0.5 and 1 and its flux does not change by a bit.
pub fn relative_cells(grid: &Grid, axis: usize) -> Vec<f64> {
    relative_cells_of(
        grid.lines[axis].as_deref(),
        grid.cell[axis],
        grid.shape[axis],
    )
}

/// [`relative_cells`] from an axis' node lines (`None` on a uniform axis of `n` cells `cell`
/// wide): what a result file's `/grid` datasets give back.
pub fn relative_cells_of(lines: Option<&[f64]>, cell: f64, n: usize) -> Vec<f64> {
    match lines {
        None => vec![1.0; n],
        Some(l) => l.windows(2).map(|w| (w[1] - w[0]) / cell).collect(),
    }
}

/// The quadrature weights of a patch's two field pairs in `model`, per cell in C order of the
/// in-plane axes (relative to [`cell_area`]): [`pair_weights`] with the model's cell sizes and
/// periodic axes.
pub fn patch_weights(model: &Model, patch: &Patch) -> [Vec<f64>; 2] {
    let [p, q] = patch.in_plane();
    let periodic = |a: usize| {
        model.boundaries.faces[a]
            .iter()
            .all(|f| *f == crate::model::BoundaryKind::Periodic)
    };
    pair_weights(
        patch,
        [
            &relative_cells(&model.grid, p),
            &relative_cells(&model.grid, q),
        ],
        [periodic(p), periodic(q)],
    )
}

/// The quadrature weights of a patch's two field pairs, per cell in C order of the in-plane
/// axes (without the cell area): `[w_bc, w_cb]`, for (E_b, H_c), which sits half a cell along b,
/// and (E_c, H_b), half a cell along c. `relative[k]` gives the size of every primal cell
/// along in-plane axis k relative to the reference cell of [`cell_area`] ([`relative_cells`]),
/// `periodic[k]` whether that axis wraps.
///
/// Along each in-plane axis a pair half a cell along it stands for its primal cell (weight: the
/// cell's relative size) and a pair on its nodes for the dual cell around the node (half the two
/// cells either side; at node 0 of a plane the wall's image cell, or the last cell on a periodic
/// axis, as the E update takes it, [`Grid::dual`]). On a uniform axis these are all 1.
///
/// On a box face the patch runs from E node `start` to E node `start + count - 1` along each
/// in-plane axis: a pair half a cell along an axis covers the `count - 1` cells between the nodes
/// (its last sample lies outside the face, weight 0), and a pair on the nodes of an axis takes
/// the trapezoid rule's half cell at both ends, where the face meets its neighbours (0.5 on a
/// uniform axis). The far-field projection uses the same weights, so its integral of the
/// radiated power matches the box's flux.
pub fn pair_weights(patch: &Patch, relative: [&[f64]; 2], periodic: [bool; 2]) -> [Vec<f64>; 2] {
    let a = patch.axis as usize;
    let (b, _) = tangential(a);
    let [p, _] = patch.in_plane();
    let [np, nq] = patch.count;
    let closed = patch.closed;
    // Per in-plane axis k: the weight of the pair half a cell along it, and of the pair on its
    // nodes, at in-plane index i.
    let half = |k: usize, i: usize| -> f64 {
        if closed && i + 1 == patch.count[k] {
            0.0
        } else {
            relative[k][patch.start[k] + i]
        }
    };
    let node = |k: usize, i: usize| -> f64 {
        let r = relative[k];
        let j = patch.start[k] + i;
        let n = patch.count[k];
        if closed {
            if i == 0 {
                0.5 * r[j]
            } else if i + 1 == n {
                0.5 * r[j - 1]
            } else {
                0.5 * (r[j - 1] + r[j])
            }
        } else {
            let below = match j {
                0 if periodic[k] => r[r.len() - 1],
                0 => r[0],
                _ => r[j - 1],
            };
            0.5 * (below + r[j])
        }
    };
    // Along p and q: which rule each pair takes (b is p or q).
    let b_is_p = b == p;
    let mut w = [vec![0.0; np * nq], vec![0.0; np * nq]];
    for u in 0..np {
        for v in 0..nq {
            let (wb_half, wc_node, wb_node, wc_half) = if b_is_p {
                (half(0, u), node(1, v), node(0, u), half(1, v))
            } else {
                (half(1, v), node(0, u), node(1, v), half(0, u))
            };
            w[0][u * nq + v] = wb_half * wc_node;
            w[1][u * nq + v] = wb_node * wc_half;
        }
    }
    w
}

/// The DFTs of one patch's tangential fields so far: E_b, E_c, H_b, H_c (H averaged onto the E
/// plane), real and imaginary parts, each `[frequency][cell]` with the patch's cells in C order
/// of the two in-plane axes.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchDft {
    /// Where the patch lies.
    pub patch: Patch,
    /// Real parts of E_b, E_c, H_b, H_c.
    pub re: [Vec<f64>; 4],
    /// Imaginary parts.
    pub im: [Vec<f64>; 4],
    /// Area of one reference cell face (m^2, [`cell_area`]).
    pub area: f64,
    /// The quadrature weights of the pairs (E_b, H_c) and (E_c, H_b) per cell, relative to
    /// `area` ([`pair_weights`], [`patch_weights`]).
    pub weights: [Vec<f64>; 2],
}

impl PatchDft {
    /// The DFTs `re`, `im` of `patch` in `model`, with the patch's cell area and quadrature
    /// weights.
    pub fn of(model: &Model, patch: &Patch, re: [Vec<f64>; 4], im: [Vec<f64>; 4]) -> PatchDft {
        PatchDft {
            patch: *patch,
            re,
            im,
            area: cell_area(model, patch),
            weights: patch_weights(model, patch),
        }
    }

    /// Cells in the patch.
    pub fn cells(&self) -> usize {
        self.patch.cells()
    }

    /// The outward flux through the patch per frequency: sign Re sum (w_bc E_b H_c* - w_cb E_c
    /// H_b*) dA, summed row by row ([`row_sums`], [`patch_power`]).
    pub fn power(&self) -> Vec<f64> {
        patch_spectrum(&self.patch, &self.re, &self.im, &self.weights, self.area)
    }
}

/// [`PatchDft::power`] of a patch's DFTs `re`, `im` (`[frequency][cell]`), quadrature
/// `weights` and cell `area`.
fn patch_spectrum(
    patch: &Patch,
    re: &[Vec<f64>; 4],
    im: &[Vec<f64>; 4],
    weights: &[Vec<f64>; 2],
    area: f64,
) -> Vec<f64> {
    let n = patch.cells();
    let nf = re[0].len().checked_div(n).unwrap_or(0);
    let row = patch.count[1].max(1);
    let [w0, w1] = weights;
    (0..nf)
        .map(|f| {
            let rows = (0..n / row).map(|u| {
                let (a, b) = (f * n + u * row, f * n + (u + 1) * row);
                row_sums(
                    [&re[0][a..b], &re[1][a..b], &re[2][a..b], &re[3][a..b]],
                    [&im[0][a..b], &im[1][a..b], &im[2][a..b], &im[3][a..b]],
                    [&w0[u * row..(u + 1) * row], &w1[u * row..(u + 1) * row]],
                )
            });
            patch_power(rows, patch.sign, area)
        })
        .collect()
}

/// The sum of the patches' spectra, frequency by frequency in patch order (a monitor's
/// spectrum: [`FluxDft::power`]).
fn sum_spectra(patches: impl Iterator<Item = Vec<f64>>) -> Vec<f64> {
    let mut total: Vec<f64> = Vec::new();
    for pw in patches {
        if total.is_empty() {
            total = pw;
        } else {
            total.iter_mut().zip(&pw).for_each(|(t, v)| *t += v);
        }
    }
    total
}

/// One row of a patch at one frequency (the cells of one index along the first in-plane axis,
/// in order): the sums w_bc Re E_b Re H_c, w_bc Im E_b Im H_c, w_cb Re E_c Re H_b and w_cb Im
/// E_c Im H_b over the row, each added cell by cell from 0.
///
/// A spectrum is summed by rows, then over the rows ([`patch_power`]), because a slab
/// boundary never cuts a row (the first in-plane axis of a y or z plane is x; an x plane is
/// one slab's): so the CUDA engine forms each row's sums on the device where its part of the
/// patch lies (`kernels/flux.cu`, `flux_rows`), reads back four values per row and frequency,
/// and gets the CPU's spectrum bit for bit, whatever the split.
pub fn row_sums(re: [&[f64]; 4], im: [&[f64]; 4], w: [&[f64]; 2]) -> [f64; 4] {
    let dot = |a: &[f64], b: &[f64], w: &[f64]| {
        a.iter()
            .zip(b)
            .zip(w)
            .fold(0.0, |s, ((a, b), w)| s + w * (a * b))
    };
    [
        dot(re[0], re[3], w[0]),
        dot(im[0], im[3], w[0]),
        dot(re[1], re[2], w[1]),
        dot(im[1], im[2], w[1]),
    ]
}

/// A patch's outward flux at one frequency from its rows' sums ([`row_sums`]) in row order:
/// sign (Re E_b H_c* w_bc - Re E_c H_b* w_cb) area, each of the four sums added over the rows
/// from 0.
pub fn patch_power(rows: impl Iterator<Item = [f64; 4]>, sign: f64, area: f64) -> f64 {
    let t = rows.fold([0.0; 4], |t, r| {
        [t[0] + r[0], t[1] + r[1], t[2] + r[2], t[3] + r[3]]
    });
    sign * ((t[0] + t[1]) - (t[2] + t[3])) * area
}

/// The DFTs of one surface DFT monitor so far, patch by patch (model order).
#[derive(Debug, Clone, PartialEq)]
pub struct FluxDft {
    /// One per patch of the monitor.
    pub patches: Vec<PatchDft>,
}

impl FluxDft {
    /// The flux spectrum: the sum of every patch's outward flux per frequency (for a plane,
    /// along +axis; for a box, the net outward power).
    pub fn power(&self) -> Vec<f64> {
        sum_spectra(self.patches.iter().map(PatchDft::power))
    }
}

impl Monitor {
    /// Add the waiting samples to the accumulators, in one pass over them: each accumulator
    /// takes the samples in the order they were taken, one `acc += x w` each, as if they had
    /// been added one at a time.
    fn add_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            return;
        }
        for m in &mut self.patches {
            let n = m.cells;
            let samples = &m.samples;
            for q in 0..4 {
                // E_b, E_c at the E sample time, H_b, H_c at the H one.
                let at = if q < 2 { 0 } else { 2 };
                m.re[q]
                    .par_chunks_mut(n)
                    .zip(m.im[q].par_chunks_mut(n))
                    .enumerate()
                    .for_each(|(f, (re, im))| {
                        let mut start = 0;
                        for (re, im) in re
                            .chunks_mut(CELLS_PER_BLOCK)
                            .zip(im.chunks_mut(CELLS_PER_BLOCK))
                        {
                            for (k, w) in pending.iter().enumerate() {
                                let (wr, wi) = (w[f][at], w[f][at + 1]);
                                let v = &samples[(4 * k + q) * n + start..][..re.len()];
                                for ((r, i), x) in re.iter_mut().zip(im.iter_mut()).zip(v) {
                                    *r += x * wr;
                                    *i += x * wi;
                                }
                            }
                            start += re.len();
                        }
                    });
            }
        }
        // Keep the allocation for the next batch.
        self.pending = pending;
        self.pending.clear();
    }
}

/// Values of host memory the accumulators of `model` hold (f64 each).
pub fn accumulator_values(model: &Model) -> u64 {
    model
        .fluxes
        .iter()
        .map(|f| {
            let cells: u64 = f.patches.iter().map(|p| p.cells() as u64).sum();
            8 * cells * f.frequencies.len() as u64
        })
        .sum()
}

/// Values of host memory the CPU's buffers of samples waiting to be added hold (f64 each: four
/// per cell and sample, [`samples_per_pass`] samples per monitor).
pub fn sample_values(model: &Model) -> u64 {
    model
        .fluxes
        .iter()
        .map(|f| 4 * (flux_cells(f) * samples_per_pass(f.frequencies.len())) as u64)
        .sum()
}

/// Field values (in the run's precision) of the CPU's copy of one flux sample's planes read
/// within a sweep: six regions per cell of every patch of every monitor, the most one step's
/// sample gathers ([`FluxAccumulators::regions_at`]); 0 without flux monitors.
pub fn sweep_read_len(model: &Model) -> usize {
    6 * model.fluxes.iter().map(flux_cells).sum::<usize>()
}

/// Values of host memory the quadrature weights of every patch hold (f64 each, two per cell:
/// [`PatchDft::weights`]), kept by the CPU accumulators and by the CUDA engine for the spectra.
pub fn weight_values(model: &Model) -> u64 {
    2 * model
        .fluxes
        .iter()
        .map(|f| flux_cells(f) as u64)
        .sum::<u64>()
}

/// The largest patch a surface DFT monitor gathers (values), for the shared staging buffer.
pub fn largest_plane(model: &Model) -> usize {
    model
        .fluxes
        .iter()
        .flat_map(|f| f.patches.iter().map(|p| p.cells()))
        .max()
        .unwrap_or(0)
}

/// Cells of every patch of `flux`.
pub fn flux_cells(flux: &Flux) -> usize {
    flux.patches.iter().map(|p| p.cells()).sum()
}

impl FluxAccumulators {
    /// Zeroed accumulators for the surface DFT monitors of `model`.
    pub fn new(model: &Model) -> Self {
        let monitors = model
            .fluxes
            .iter()
            .map(|f| Monitor {
                frequencies: f.frequencies.clone(),
                decimation: f.decimation.max(1),
                pending: Vec::new(),
                patches: f
                    .patches
                    .iter()
                    .map(|p| {
                        let cells = p.cells();
                        let n = cells * f.frequencies.len();
                        PatchAcc {
                            regions: planes(p),
                            patch: *p,
                            cells,
                            area: cell_area(model, p),
                            weights: patch_weights(model, p),
                            h_weights: h_weights(&model.grid, p),
                            // Written now: the first sample's copy-on-write faults cost
                            // 7 % of a 200^3 run with a 21-frequency plane.
                            re: [0; 4].map(|_| written_zeros(n)),
                            im: [0; 4].map(|_| written_zeros(n)),
                            samples: written_zeros(
                                4 * cells * samples_per_pass(f.frequencies.len()),
                            ),
                        }
                    })
                    .collect(),
            })
            .collect();
        let plane = largest_plane(model);
        FluxAccumulators {
            monitors,
            scratch: written_zeros(plane),
        }
    }

    /// Add the fields after step `step` (E at step dt, H at (step - 1/2) dt) to every DFT,
    /// reading each patch with `gather` (a backend's [`gather`]: the strided region of a
    /// component into a buffer, C order) through `staging`.
    ///
    /// A sample waits in the monitor's buffer until it holds [`samples_per_pass`] of them, or
    /// until the DFTs are read ([`Self::dft`], [`Self::power`]), which add what waits first.
    ///
    /// [`gather`]: crate::backend::Backend::gather
    pub fn accumulate<T: Real>(
        &mut self,
        gather: impl Fn(Component, &Region, &mut [T]),
        step: usize,
        dt: f64,
        staging: &mut [T],
    ) {
        let t_e = step as f64 * dt;
        let t_h = t_e - 0.5 * dt;
        for mon in &mut self.monitors {
            if step % mon.decimation != 0 {
                continue;
            }
            // Each sample stands for `decimation` steps (1: the plain dt, bit for bit). The
            // weights are the ones the CUDA engine hands its kernel.
            let weight = dt * mon.decimation as f64;
            let slot = mon.pending.len();
            mon.pending
                .push(sample_weights(&mon.frequencies, t_e, t_h, weight));
            for m in &mut mon.patches {
                let n = m.cells;
                let read = |r: usize, out: &mut [f64], staging: &mut [T]| {
                    let (c, region) = &m.regions[r];
                    gather(*c, region, &mut staging[..n]);
                    for (o, v) in out.iter_mut().zip(&staging[..n]) {
                        *o = v.to_f64();
                    }
                };
                let values = &mut m.samples[4 * n * slot..4 * n * (slot + 1)];
                let (eb, rest) = values.split_at_mut(n);
                let (ec, rest) = rest.split_at_mut(n);
                let (hb, hc) = rest.split_at_mut(n);
                read(0, eb, staging);
                read(1, ec, staging);
                read(2, hb, staging);
                let tmp = &mut self.scratch[..n];
                let [below, above] = m.h_weights;
                read(3, tmp, staging);
                hb.iter_mut()
                    .zip(tmp.iter())
                    .for_each(|(h, t)| *h = below * *h + above * t);
                read(4, hc, staging);
                read(5, tmp, staging);
                hc.iter_mut()
                    .zip(tmp.iter())
                    .for_each(|(h, t)| *h = below * *h + above * t);
            }
            if mon.pending.len() == samples_per_pass(mon.frequencies.len()) {
                mon.add_pending();
            }
        }
    }

    /// The regions [`Self::accumulate`] gathers at `step`, in the order it gathers them (six
    /// per patch of every monitor that samples at `step`; none if none does): an engine that
    /// reads them earlier, as its sweep passes them, hands them back in this order.
    pub fn regions_at(&self, step: usize) -> Vec<(Component, Region)> {
        self.monitors
            .iter()
            .filter(|mon| step % mon.decimation == 0)
            .flat_map(|mon| &mon.patches)
            .flat_map(|m| m.regions)
            .collect()
    }

    /// A copy of monitor `index`'s DFTs so far (every sample taken, waiting ones added first).
    pub fn dft(&mut self, index: usize) -> FluxDft {
        let mon = &mut self.monitors[index];
        mon.add_pending();
        FluxDft {
            patches: mon
                .patches
                .iter()
                .map(|m| PatchDft {
                    patch: m.patch,
                    re: m.re.clone(),
                    im: m.im.clone(),
                    area: m.area,
                    weights: m.weights.clone(),
                })
                .collect(),
        }
    }

    /// Monitor `index`'s flux spectrum so far: [`FluxDft::power`] of [`Self::dft`], without
    /// copying the DFTs.
    pub fn power(&mut self, index: usize) -> Vec<f64> {
        let mon = &mut self.monitors[index];
        mon.add_pending();
        sum_spectra(
            mon.patches
                .iter()
                .map(|m| patch_spectrum(&m.patch, &m.re, &m.im, &m.weights, m.area)),
        )
    }

    /// Ok when `dft` (as [`FluxAccumulators::dft`] gave it, from any backend) has monitor
    /// `index`'s patches and frequencies; Err names what does not match.
    pub fn fits(&self, index: usize, dft: &FluxDft) -> Result<(), String> {
        let mon = self
            .monitors
            .get(index)
            .ok_or_else(|| format!("no surface DFT monitor {index}"))?;
        if mon.patches.len() != dft.patches.len() {
            return Err(format!(
                "surface DFT monitor {index} has {} patches, the saved state {}",
                mon.patches.len(),
                dft.patches.len()
            ));
        }
        for (m, d) in mon.patches.iter().zip(&dft.patches) {
            let fits = |v: &[Vec<f64>; 4], w: &[Vec<f64>; 4]| {
                v.iter().zip(w).all(|(a, b)| a.len() == b.len())
            };
            if m.patch != d.patch || !fits(&m.re, &d.re) || !fits(&m.im, &d.im) {
                return Err(format!(
                    "surface DFT monitor {index}: a saved patch differs from the model's"
                ));
            }
        }
        Ok(())
    }

    /// Replace monitor `index`'s DFTs with `dft` (as [`FluxAccumulators::dft`] gave them, from
    /// any backend): resuming a run from a checkpoint. Samples taken but not yet added are
    /// dropped with the DFTs they belonged to. Err names what does not match ([`Self::fits`]).
    pub fn restore(&mut self, index: usize, dft: &FluxDft) -> Result<(), String> {
        self.fits(index, dft)?;
        let mon = &mut self.monitors[index];
        mon.pending.clear();
        for (m, d) in mon.patches.iter_mut().zip(&dft.patches) {
            m.re.clone_from(&d.re);
            m.im.clone_from(&d.im);
        }
        Ok(())
    }

    /// Bytes of host memory the accumulators, their samples' buffers and the gather scratch
    /// hold, counted from the vectors' capacities (what [`crate::plan::bytes::flux_bytes`]
    /// must list).
    pub fn bytes(&self) -> u64 {
        let cap = |v: &Vec<f64>| 8 * v.capacity() as u64;
        let dfts: u64 = self
            .monitors
            .iter()
            .flat_map(|m| &m.patches)
            .map(|m| {
                m.re.iter()
                    .chain(&m.im)
                    .chain(&m.weights)
                    .chain([&m.samples])
                    .map(cap)
                    .sum::<u64>()
            })
            .sum();
        dfts + cap(&self.scratch)
    }

    /// Number of surface DFT monitors.
    pub fn len(&self) -> usize {
        self.monitors.len()
    }

    /// True without surface DFT monitors.
    pub fn is_empty(&self) -> bool {
        self.monitors.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Axis;

    fn face(axis: Axis, count: [usize; 2], closed: bool) -> Patch {
        Patch {
            axis,
            index: 3,
            sign: 1.0,
            start: [2, 2],
            count,
            closed,
        }
    }

    fn uniform(patch: &Patch) -> [Vec<f64>; 2] {
        let ones = vec![1.0; 16];
        pair_weights(patch, [&ones, &ones], [false; 2])
    }

    #[test]
    fn box_face_weights_are_the_trapezoid_rule_over_the_face() {
        // A face 3 cells by 2 cells (E nodes 0..=3 by 0..=2): each pair's weights sum to the
        // face's area in cells, 6, as the trapezoid rule of a constant must.
        for axis in Axis::ALL {
            let [w0, w1] = uniform(&face(axis, [4, 3], true));
            assert_eq!(w0.iter().sum::<f64>(), 6.0, "{axis:?}");
            assert_eq!(w1.iter().sum::<f64>(), 6.0, "{axis:?}");
            assert!(w0.iter().chain(&w1).all(|&w| [0.0, 0.5, 1.0].contains(&w)));
        }
        // z face: b = x (p), c = y (q). (E_x, H_y) is half a cell along x: no weight at the last
        // x; on the y nodes, half weight at both ends.
        let [w0, w1] = uniform(&face(Axis::Z, [4, 3], true));
        assert_eq!(&w0[..3], &[0.5, 1.0, 0.5]);
        assert_eq!(&w0[9..], &[0.0, 0.0, 0.0]);
        assert_eq!(&w1[..3], &[0.5, 0.5, 0.0]);
        // A plane monitor weighs every cell once.
        let [w0, w1] = uniform(&face(Axis::Y, [4, 3], false));
        assert!(w0.iter().chain(&w1).all(|&w| w == 1.0));
    }

    #[test]
    fn graded_face_weights_integrate_each_cell_by_its_own_size() {
        // A z face from x node 2 to 5 (cells 2, 3, 4) and y node 2 to 4 (cells 2, 3) over graded
        // cells: each pair's weights must sum to the face's true area in reference cells, the
        // sum of the x sizes times the sum of the y sizes, as the trapezoid rule of a constant.
        let rx = [1.0, 0.8, 0.64, 0.5, 0.4, 0.5, 0.64];
        let ry = [1.0, 1.0, 0.8, 0.64, 0.8];
        let patch = face(Axis::Z, [4, 3], true);
        let [w0, w1] = pair_weights(&patch, [&rx, &ry], [false; 2]);
        let area = (0.64 + 0.5 + 0.4) * (0.8 + 0.64);
        assert!((w0.iter().sum::<f64>() - area).abs() < 1e-12);
        assert!((w1.iter().sum::<f64>() - area).abs() < 1e-12);
        // (E_x, H_y) at x cell 2 (size 0.64), y node 2 (the face's edge: half of cell 2, 0.4).
        assert_eq!(w0[0], 0.64 * 0.4);
        // (E_y, H_x) at x node 3 (half of cells 2 and 3), y cell 3 (0.64).
        assert_eq!(w1[3 + 1], 0.5 * (0.64 + 0.5) * 0.64);
        // A plane across a periodic axis: node 0's dual cell wraps to the last cell.
        let plane = Patch {
            start: [0, 0],
            ..face(Axis::Z, [7, 5], false)
        };
        let [_, w1] = pair_weights(&plane, [&rx, &ry], [true, false]);
        assert_eq!(w1[0], 0.5 * (0.64 + 1.0) * 1.0);
        let [_, w1] = pair_weights(&plane, [&rx, &ry], [false, false]);
        assert_eq!(w1[0], 1.0, "a wall's image cell is the first cell");
        // Past node 0 a plane's node takes half the two cells either side of it: x node 3
        // between cells 2 (0.64) and 3 (0.5), at y cell 0 (1.0); index x * 5 + y.
        assert_eq!(w1[3 * 5], 0.5 * (0.64 + 0.5) * 1.0);
        assert_eq!(w1[6 * 5 + 4], 0.5 * (0.5 + 0.64) * 0.8);
    }

    #[test]
    fn restore_takes_a_saved_dft_of_the_same_patches_and_refuses_any_other() {
        let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.1
size = [1.0, 1.0, 1.0]
steps = 1
[boundaries]
default = { type = "pec" }
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }
[[monitor]]
type = "flux"
name = "plane"
plane = { z = 0.1 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
[[monitor]]
type = "flux"
name = "box"
box = { center = [0.0, 0.0, 0.0], size = [0.4, 0.4, 0.4] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
"#;
        let (model, _) = crate::scene::load_str(text, "test.toml").unwrap();
        let mut acc = FluxAccumulators::new(&model);
        assert_eq!((acc.len(), acc.is_empty()), (2, false));
        let mut bare = model.clone();
        bare.fluxes.clear();
        assert!(FluxAccumulators::new(&bare).is_empty());
        // A saved state: every value distinct, so a restore that kept the old ones shows.
        let mut saved = acc.dft(1);
        for (k, p) in saved.patches.iter_mut().enumerate() {
            for (c, v) in p.re.iter_mut().chain(p.im.iter_mut()).enumerate() {
                v.iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x = (k * 1000 + c * 100 + i) as f64);
            }
        }
        acc.restore(1, &saved).expect("the same patches");
        assert_eq!(acc.dft(1).patches, saved.patches, "every value restored");
        assert!(acc
            .dft(0)
            .patches
            .iter()
            .all(|p| p.re.iter().all(|v| v.iter().all(|x| *x == 0.0))));
        // Another monitor's, fewer patches, a moved patch, a DFT of another length: refused.
        assert!(acc.restore(0, &saved).unwrap_err().contains("patches"));
        assert!(acc
            .restore(2, &saved)
            .unwrap_err()
            .contains("no surface DFT monitor 2"));
        let mut fewer = saved.clone();
        fewer.patches.pop();
        assert!(acc.restore(1, &fewer).is_err());
        let mut moved = saved.clone();
        moved.patches[2].patch.index += 1;
        assert!(acc.restore(1, &moved).is_err());
        for part in 0..2 {
            let mut short = saved.clone();
            let p = &mut short.patches[3];
            if part == 0 {
                p.re[1].pop();
            } else {
                p.im[3].pop();
            }
            assert!(
                acc.restore(1, &short).is_err(),
                "a shorter {}",
                ["re", "im"][part]
            );
        }
        // A refused state leaves the last good one.
        assert_eq!(acc.dft(1).patches, saved.patches);
    }

    #[test]
    fn a_plane_across_a_periodic_graded_axis_wraps_node_0_to_the_last_cell() {
        // y is refined at y_min only (cells 0.05 um below y = -0.3 um, graded up to 0.1 um
        // above): across a periodic y, node 0's dual cell is half the last cell and half the
        // first; across a PEC y, the first cell and its image. x is PEC (refined end to end).
        let scene = |y: &str| {
            format!(
                r#"
[simulation]
length_unit = "um"
cell_size = 0.1
size = [1.0, 1.0, 1.0]
steps = 1
[boundaries]
default = {{ type = "pec" }}
y_min = {{ type = "{y}" }}
y_max = {{ type = "{y}" }}
[[refine]]
box = {{ center = [0.0, -0.4, 0.0], size = [1.0, 0.2, 1.0] }}
cell_size = 0.05
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[monitor]]
type = "flux"
name = "f"
plane = {{ z = 0.0 }}
frequencies = {{ min = 2.0e14, max = 4.0e14, count = 2 }}
"#
            )
        };
        for y in ["periodic", "pec"] {
            let (model, _) = crate::scene::load_str(&scene(y), "test.toml").unwrap();
            let ry = relative_cells(&model.grid, 1);
            let last = ry[ry.len() - 1];
            assert!(ry[0] == 0.5 && last > 0.9, "{y}: the grading {ry:?}");
            let node_0 = if y == "periodic" {
                0.5 * (last + ry[0])
            } else {
                ry[0]
            };
            let patch = model.fluxes[0].patches[0];
            assert_eq!((patch.axis, patch.start), (Axis::Z, [0, 0]), "{y}");
            // (E_x, H_y) on a z plane: half a cell along x (x cell 0), on the y nodes.
            let rx = relative_cells(&model.grid, 0);
            let [w0, _] = patch_weights(&model, &patch);
            assert_eq!(w0[0], rx[0] * node_0, "{y}: y node 0");
        }
    }
}
