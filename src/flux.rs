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
//! plane; tangential H, half a cell either side of it, is averaged onto the plane. In-plane the
//! pairs (E_b, H_c) and (E_c, H_b) share their Yee positions, so no in-plane interpolation is
//! needed. The weights w are 1 on a plane monitor; on a box face they are the trapezoid rule
//! over the face from E node to E node ([`pair_weights`]), so every edge and corner of the box is
//! integrated once by each face that meets there and nothing is counted twice. The DFTs are
//! kept in f64: on the host here ([`FluxAccumulators`], the CPU backend's path), or on the device
//! by the CUDA backend (`kernels/flux.cu`, same arithmetic in the same order, read back only when
//! a spectrum is written and combined by [`PatchDft::power`]).

use crate::model::{Component, Flux, Model, Patch, Region};
use crate::real::Real;
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
    /// DFT accumulators of E_b, E_c, H_b, H_c: real and imaginary parts, [frequency][cell].
    re: [Vec<f64>; 4],
    im: [Vec<f64>; 4],
}

struct Monitor {
    frequencies: Vec<f64>,
    patches: Vec<PatchAcc>,
}

/// The DFT state of every surface DFT monitor of a model.
pub struct FluxAccumulators {
    monitors: Vec<Monitor>,
    values: [Vec<f64>; 4],
    scratch: Vec<f64>,
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

/// The area of one cell face of a patch (m^2).
pub fn cell_area(model: &Model, patch: &Patch) -> f64 {
    let [p, q] = patch.in_plane();
    model.grid.cell[p] * model.grid.cell[q]
}

/// The quadrature weights of a patch's two field pairs, per cell in C order of the in-plane
/// axes (without the cell area): `[w_bc, w_cb]`, for (E_b, H_c), which sits half a cell along b,
/// and (E_c, H_b), half a cell along c.
///
/// On a plane monitor every weight is 1. On a box face the patch runs from E node `start` to E
/// node `start + count - 1` along each in-plane axis: a pair half a cell along an axis covers
/// the `count - 1` cells between the nodes (its last sample lies outside the face, weight 0), and
/// a pair on the nodes of an axis takes the trapezoid rule's half weight at both ends, where the
/// face meets its neighbours. The far-field projection uses the same weights, so its integral of
/// the radiated power matches the box's flux.
pub fn pair_weights(patch: &Patch) -> [Vec<f64>; 2] {
    let a = patch.axis as usize;
    let (b, _) = tangential(a);
    let [p, _] = patch.in_plane();
    let [np, nq] = patch.count;
    let closed = patch.closed;
    let half = |i: usize, n: usize| if closed && i + 1 == n { 0.0 } else { 1.0 };
    let node = |i: usize, n: usize| {
        if closed && (i == 0 || i + 1 == n) {
            0.5
        } else {
            1.0
        }
    };
    // Along p and q: which rule each pair takes (b is p or q).
    let b_is_p = b == p;
    let mut w = [vec![0.0; np * nq], vec![0.0; np * nq]];
    for u in 0..np {
        for v in 0..nq {
            let (wb_half, wc_node, wb_node, wc_half) = if b_is_p {
                (half(u, np), node(v, nq), node(u, np), half(v, nq))
            } else {
                (half(v, nq), node(u, np), node(v, nq), half(u, np))
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
    /// Area of one cell face (m^2).
    pub area: f64,
}

impl PatchDft {
    /// Cells in the patch.
    pub fn cells(&self) -> usize {
        self.patch.cells()
    }

    /// The outward flux through the patch per frequency: sign Re sum (w_bc E_b H_c* - w_cb E_c
    /// H_b*) dA.
    pub fn power(&self) -> Vec<f64> {
        let [w0, w1] = pair_weights(&self.patch);
        let (re, im) = (&self.re, &self.im);
        let n = self.cells();
        let nf = re[0].len().checked_div(n).unwrap_or(0);
        (0..nf)
            .map(|f| {
                let s = f * n..(f + 1) * n;
                let dot = |p: usize, q: usize, w: &[f64]| -> f64 {
                    re[p][s.clone()]
                        .iter()
                        .zip(&re[q][s.clone()])
                        .zip(w)
                        .map(|((a, b), w)| w * (a * b))
                        .sum::<f64>()
                        + im[p][s.clone()]
                            .iter()
                            .zip(&im[q][s.clone()])
                            .zip(w)
                            .map(|((a, b), w)| w * (a * b))
                            .sum::<f64>()
                };
                self.patch.sign * (dot(0, 3, &w0) - dot(1, 2, &w1)) * self.area
            })
            .collect()
    }
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
        let mut total: Vec<f64> = Vec::new();
        for p in &self.patches {
            let pw = p.power();
            if total.is_empty() {
                total = pw;
            } else {
                total.iter_mut().zip(&pw).for_each(|(t, v)| *t += v);
            }
        }
        total
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
                            re: [0; 4].map(|_| vec![0.0; n]),
                            im: [0; 4].map(|_| vec![0.0; n]),
                        }
                    })
                    .collect(),
            })
            .collect();
        let plane = largest_plane(model);
        FluxAccumulators {
            monitors,
            values: [0; 4].map(|_| vec![0.0; plane]),
            scratch: vec![0.0; plane],
        }
    }

    /// Add the fields after step `step` (E at step dt, H at (step - 1/2) dt) to every DFT,
    /// reading each patch with `gather` (a backend's [`gather`]: the strided region of a
    /// component into a buffer, C order) through `staging`.
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
            for m in &mut mon.patches {
                let n = m.cells;
                let read = |r: usize, out: &mut [f64], staging: &mut [T]| {
                    let (c, region) = &m.regions[r];
                    gather(*c, region, &mut staging[..n]);
                    for (o, v) in out.iter_mut().zip(&staging[..n]) {
                        *o = v.to_f64();
                    }
                };
                let [eb, ec, hb, hc] = &mut self.values;
                read(0, &mut eb[..n], staging);
                read(1, &mut ec[..n], staging);
                read(2, &mut hb[..n], staging);
                let tmp = &mut self.scratch[..n];
                read(3, tmp, staging);
                hb[..n]
                    .iter_mut()
                    .zip(tmp.iter())
                    .for_each(|(h, t)| *h = 0.5 * (*h + t));
                read(4, &mut hc[..n], staging);
                read(5, tmp, staging);
                hc[..n]
                    .iter_mut()
                    .zip(tmp.iter())
                    .for_each(|(h, t)| *h = 0.5 * (*h + t));
                for (q, values) in self.values.iter().enumerate() {
                    let t = if q < 2 { t_e } else { t_h };
                    let v = &values[..n];
                    m.re[q]
                        .par_chunks_mut(n)
                        .zip(m.im[q].par_chunks_mut(n))
                        .zip(mon.frequencies.par_iter())
                        .for_each(|((re, im), f)| {
                            let phase = -2.0 * std::f64::consts::PI * f * t;
                            let (s, c) = phase.sin_cos();
                            let (wr, wi) = (c * dt, s * dt);
                            for ((r, i), x) in re.iter_mut().zip(im.iter_mut()).zip(v) {
                                *r += x * wr;
                                *i += x * wi;
                            }
                        });
                }
            }
        }
    }

    /// The flux spectrum of monitor `index` so far (the sum over its patches).
    pub fn power(&self, index: usize) -> Vec<f64> {
        self.dft(index).power()
    }

    /// A copy of monitor `index`'s DFTs so far.
    pub fn dft(&self, index: usize) -> FluxDft {
        FluxDft {
            patches: self.monitors[index]
                .patches
                .iter()
                .map(|m| PatchDft {
                    patch: m.patch,
                    re: m.re.clone(),
                    im: m.im.clone(),
                    area: m.area,
                })
                .collect(),
        }
    }

    /// Replace monitor `index`'s DFTs with `dft` (as [`FluxAccumulators::dft`] gave them, from
    /// any backend): resuming a run from a checkpoint. Err names what does not match.
    pub fn restore(&mut self, index: usize, dft: &FluxDft) -> Result<(), String> {
        let mon = self
            .monitors
            .get_mut(index)
            .ok_or_else(|| format!("no surface DFT monitor {index}"))?;
        if mon.patches.len() != dft.patches.len() {
            return Err(format!(
                "surface DFT monitor {index} has {} patches, the saved state {}",
                mon.patches.len(),
                dft.patches.len()
            ));
        }
        for (m, d) in mon.patches.iter_mut().zip(&dft.patches) {
            let fits = |v: &[Vec<f64>; 4], w: &[Vec<f64>; 4]| {
                v.iter().zip(w).all(|(a, b)| a.len() == b.len())
            };
            if m.patch != d.patch || !fits(&m.re, &d.re) || !fits(&m.im, &d.im) {
                return Err(format!(
                    "surface DFT monitor {index}: a saved patch differs from the model's"
                ));
            }
            m.re.clone_from(&d.re);
            m.im.clone_from(&d.im);
        }
        Ok(())
    }

    /// Bytes of host memory the accumulators and their gather scratch hold, counted from the
    /// vectors' capacities (what [`crate::plan::bytes::flux_bytes`] must list).
    pub fn bytes(&self) -> u64 {
        let cap = |v: &Vec<f64>| 8 * v.capacity() as u64;
        let dfts: u64 = self
            .monitors
            .iter()
            .flat_map(|m| &m.patches)
            .map(|m| m.re.iter().chain(&m.im).map(cap).sum::<u64>())
            .sum();
        dfts + self.values.iter().map(cap).sum::<u64>() + cap(&self.scratch)
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

    #[test]
    fn box_face_weights_are_the_trapezoid_rule_over_the_face() {
        // A face 3 cells by 2 cells (E nodes 0..=3 by 0..=2): each pair's weights sum to the
        // face's area in cells, 6, as the trapezoid rule of a constant must.
        for axis in Axis::ALL {
            let [w0, w1] = pair_weights(&face(axis, [4, 3], true));
            assert_eq!(w0.iter().sum::<f64>(), 6.0, "{axis:?}");
            assert_eq!(w1.iter().sum::<f64>(), 6.0, "{axis:?}");
            assert!(w0.iter().chain(&w1).all(|&w| [0.0, 0.5, 1.0].contains(&w)));
        }
        // z face: b = x (p), c = y (q). (E_x, H_y) is half a cell along x: no weight at the last
        // x; on the y nodes, half weight at both ends.
        let [w0, w1] = pair_weights(&face(Axis::Z, [4, 3], true));
        assert_eq!(&w0[..3], &[0.5, 1.0, 0.5]);
        assert_eq!(&w0[9..], &[0.0, 0.0, 0.0]);
        assert_eq!(&w1[..3], &[0.5, 0.5, 0.0]);
        // A plane monitor weighs every cell once.
        let [w0, w1] = pair_weights(&face(Axis::Y, [4, 3], false));
        assert!(w0.iter().chain(&w1).all(|&w| w == 1.0));
    }
}
