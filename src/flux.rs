//! Flux monitors at run time: running DFTs of the tangential fields on a plane, and the net
//! Poynting flux spectrum they give.
//!
//! For a plane normal to axis a with tangential axes (b, c) in cyclic order, the flux is
//! P(f) = Re sum over the plane of (E_b H_c* - E_c H_b*) dA, with each field's DFT
//! F(f) = sum_n F^n exp(-i 2 pi f t_n) dt taken at its own sample times (E at whole steps, H at
//! half steps), so E and H are combined at the same instant. Tangential E lies on the E node
//! plane; tangential H, half a cell either side of it, is averaged onto the plane. In-plane the
//! pairs (E_b, H_c) and (E_c, H_b) share their Yee positions, so no in-plane interpolation is
//! needed. The DFTs are kept in f64: on the host here ([`FluxAccumulators`], the CPU
//! backend's path), or on the device by the CUDA backend (`kernels/flux.cu`, same arithmetic in
//! the same order, read back only when a spectrum is written and combined by [`power_from`]).

use crate::model::{Component, Flux, Model, Region};
use crate::real::Real;
use rayon::prelude::*;

struct Monitor {
    /// Gather regions: E_b, E_c, H_b below, H_b above, H_c below, H_c above.
    regions: [(Component, Region); 6],
    frequencies: Vec<f64>,
    /// Cells in the plane.
    cells: usize,
    /// Area of one cell face (m^2).
    area: f64,
    /// DFT accumulators of E_b, E_c, H_b, H_c: real and imaginary parts, [frequency][cell].
    re: [Vec<f64>; 4],
    im: [Vec<f64>; 4],
}

/// The DFT state of every flux monitor of a model.
pub struct FluxAccumulators {
    monitors: Vec<Monitor>,
    values: [Vec<f64>; 4],
    scratch: Vec<f64>,
}

/// Components tangential to a plane normal to axis `a`, in cyclic order (b, c).
pub fn tangential(a: usize) -> (usize, usize) {
    ((a + 1) % 3, (a + 2) % 3)
}

/// The six planes a flux monitor reads each step: E_b, E_c on the E node plane, then H_b
/// below and above it, H_c below and above it (whole planes, stride 1).
pub fn planes(model: &Model, flux: &Flux) -> [(Component, Region); 6] {
    let g = &model.grid;
    let a = flux.axis as usize;
    let (b, c) = tangential(a);
    let plane = |comp: usize, index: usize| {
        let mut start = [0; 3];
        let mut end = g.shape;
        start[a] = index;
        end[a] = index + 1;
        (
            Component::ALL[comp],
            Region {
                start,
                end,
                stride: [1; 3],
            },
        )
    };
    let k = flux.index;
    [
        plane(b, k),
        plane(c, k),
        plane(3 + b, k - 1),
        plane(3 + b, k),
        plane(3 + c, k - 1),
        plane(3 + c, k),
    ]
}

/// Cells in a flux monitor's plane and the area of one cell face (m^2).
pub fn plane_cells(model: &Model, flux: &Flux) -> (usize, f64) {
    let (b, c) = tangential(flux.axis as usize);
    let g = &model.grid;
    (g.shape[b] * g.shape[c], g.cell[b] * g.cell[c])
}

/// The DFTs of one flux monitor's tangential fields so far: E_b, E_c, H_b, H_c (H averaged onto
/// the E plane), real and imaginary parts, each `[frequency][cell]` with the plane's cells in
/// C order of the two in-plane axes.
#[derive(Debug, Clone, PartialEq)]
pub struct FluxDft {
    /// Real parts of E_b, E_c, H_b, H_c.
    pub re: [Vec<f64>; 4],
    /// Imaginary parts.
    pub im: [Vec<f64>; 4],
    /// Cells in the plane.
    pub cells: usize,
    /// Area of one cell face (m^2).
    pub area: f64,
}

impl FluxDft {
    /// The flux spectrum: Re sum (E_b H_c* - E_c H_b*) dA per frequency.
    pub fn power(&self) -> Vec<f64> {
        power_from(&self.re, &self.im, self.cells, self.area)
    }
}

/// The flux spectrum from DFT accumulators of E_b, E_c, H_b, H_c (real parts `re`, imaginary
/// parts `im`, each `[frequency][cell]` over `cells` cells): Re sum (E_b H_c* - E_c H_b*) dA
/// per frequency.
pub fn power_from(re: &[Vec<f64>; 4], im: &[Vec<f64>; 4], cells: usize, area: f64) -> Vec<f64> {
    let n = cells;
    let nf = re[0].len().checked_div(n).unwrap_or(0);
    (0..nf)
        .map(|f| {
            let s = f * n..(f + 1) * n;
            let dot = |p: usize, q: usize| -> f64 {
                re[p][s.clone()]
                    .iter()
                    .zip(&re[q][s.clone()])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
                    + im[p][s.clone()]
                        .iter()
                        .zip(&im[q][s.clone()])
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
            };
            (dot(0, 3) - dot(1, 2)) * area
        })
        .collect()
}

/// Values of host memory the accumulators of `model` hold (f64 each).
pub fn accumulator_values(model: &Model) -> u64 {
    model
        .fluxes
        .iter()
        .map(|f| {
            let (b, c) = tangential(f.axis as usize);
            let cells = (model.grid.shape[b] * model.grid.shape[c]) as u64;
            8 * cells * f.frequencies.len() as u64
        })
        .sum()
}

/// The largest plane a flux monitor gathers (values), for the shared staging buffer.
pub fn largest_plane(model: &Model) -> usize {
    model
        .fluxes
        .iter()
        .map(|f| {
            let (b, c) = tangential(f.axis as usize);
            model.grid.shape[b] * model.grid.shape[c]
        })
        .max()
        .unwrap_or(0)
}

impl FluxAccumulators {
    /// Zeroed accumulators for the flux monitors of `model`.
    pub fn new(model: &Model) -> Self {
        let monitors = model
            .fluxes
            .iter()
            .map(|f| {
                let (cells, area) = plane_cells(model, f);
                let n = cells * f.frequencies.len();
                Monitor {
                    regions: planes(model, f),
                    frequencies: f.frequencies.clone(),
                    cells,
                    area,
                    re: [0; 4].map(|_| vec![0.0; n]),
                    im: [0; 4].map(|_| vec![0.0; n]),
                }
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
    /// reading each plane with `gather` (a backend's [`gather`]: the strided region of a
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
        for m in &mut self.monitors {
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
            let t_e = step as f64 * dt;
            let t_h = t_e - 0.5 * dt;
            for (q, values) in self.values.iter().enumerate() {
                let t = if q < 2 { t_e } else { t_h };
                let v = &values[..n];
                m.re[q]
                    .par_chunks_mut(n)
                    .zip(m.im[q].par_chunks_mut(n))
                    .zip(m.frequencies.par_iter())
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

    /// The flux spectrum of monitor `index` so far: Re sum (E_b H_c* - E_c H_b*) dA per frequency.
    pub fn power(&self, index: usize) -> Vec<f64> {
        let m = &self.monitors[index];
        power_from(&m.re, &m.im, m.cells, m.area)
    }

    /// A copy of monitor `index`'s DFTs so far.
    pub fn dft(&self, index: usize) -> FluxDft {
        let m = &self.monitors[index];
        FluxDft {
            re: m.re.clone(),
            im: m.im.clone(),
            cells: m.cells,
            area: m.area,
        }
    }

    /// Bytes of host memory the accumulators and their gather scratch hold, counted from the
    /// vectors' capacities (what [`crate::plan::bytes::flux_bytes`] must list).
    pub fn bytes(&self) -> u64 {
        let cap = |v: &Vec<f64>| 8 * v.capacity() as u64;
        let dfts: u64 = self
            .monitors
            .iter()
            .map(|m| m.re.iter().chain(&m.im).map(cap).sum::<u64>())
            .sum();
        dfts + self.values.iter().map(cap).sum::<u64>() + cap(&self.scratch)
    }

    /// Number of flux monitors.
    pub fn len(&self) -> usize {
        self.monitors.len()
    }

    /// True without flux monitors.
    pub fn is_empty(&self) -> bool {
        self.monitors.is_empty()
    }
}
