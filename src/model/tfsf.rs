//! The total-field / scattered-field (TF/SF) plane-wave source: its auxiliary 1-D grid and
//! the correction points on the six faces of its box.
//!
//! Inside the box (the total-field region) the grid holds the total field, outside it only the
//! scattered field. Wherever the curl of a field on one side reads a field on the other side,
//! the incident field of the component read is added (total reads scattered) or subtracted
//! (scattered reads total), so an empty box leaks nothing and an object inside it scatters
//! outwards. The incident field comes from a 1-D Yee grid along the direction, stepped with
//! the 3-D grid's dt: E_inc(r) = e_hat e(xi), H_inc(r) = (k_hat x e_hat) h(xi) / eta0, with
//! xi = k_hat . (r - reference) and (e, h) the 1-D fields in units of V/m (h = eta0 H).
//!
//! The 1-D grid: E node i at xi = (i - m) d1 (integer times), h node i at
//! xi = (i + 1/2 - m) d1 (half-integer times); e_i -= S (h_i - h_{i-1}),
//! h_i -= S (e_{i+1} - e_i), S = v1 dt / d1. Node 0 is a hard source, e_0 = drive(t); the last
//! node is held at zero, and the grid is long enough that the reflection from it cannot reach
//! the box during the run: the 1-D Yee stencil carries nothing faster than one node per step,
//! so with the end `(steps + box nodes) / 2` nodes beyond the box no bit of the reflection
//! comes back. That costs a few bytes per step of the run (two values per node), far less than
//! a 1-D CPML would need to be tuned, and is exact.
//!
//! Axial incidence (`direction = "+z"` etc.): d1 is the grid's cell along the axis and
//! S = c dt / d1, so the 1-D dispersion is the 3-D grid's dispersion along the axis for every
//! frequency, and the 1-D nodes fall on the 3-D grid's planes (no interpolation): an empty box
//! leaks only rounding. Oblique incidence: the matched-dispersion scheme of Taflove & Hagness
//! (Computational Electrodynamics, 3rd ed., ch. 5): S is chosen so that the 1-D numerical
//! wavenumber equals the 3-D grid's numerical wavenumber along the direction at the centre
//! frequency, and the 1-D fields are linearly interpolated at each face point's xi. The 1-D
//! cell is d1 = c dt / 0.9, finer than the 3-D cells (the linear interpolation's error goes as
//! (k d1)^2 / 8) while S stays below 1.

use super::grid::{Component, Grid};
use super::sources::Waveform;
use super::space::{C0, ETA0};
use std::f64::consts::PI;

/// One TF/SF correction point: a field cell next to a face of the box and where its incident
/// term lies on the 1-D grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TfsfPoint {
    /// Global grid index of the corrected field cell.
    pub cell: [usize; 3],
    /// The 1-D node below the point: the incident value is `a[node]` + w (`a[node + 1]` - `a[node]`),
    /// a being the 1-D h (for an E point) or e (for an H point).
    pub node: u32,
    /// The interpolation weight in [0, 1) (exactly 0 for axial incidence).
    pub w: f64,
}

/// Where a closed flux or far-field box lies against the TF/SF box ([`Tfsf::relation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxRelation {
    /// Around the TF/SF box: its net outward power is the scattered power.
    Around,
    /// Inside the total-field region: its net inward power is the absorbed power.
    Inside,
}

impl BoxRelation {
    /// The cross-section it gives: "scattering" or "absorption" (the `kind` attribute).
    pub fn kind(self) -> &'static str {
        match self {
            BoxRelation::Around => "scattering",
            BoxRelation::Inside => "absorption",
        }
    }
}

/// The correction points of one field component on the faces normal to one axis (both
/// sides): field += coefficient(cell) * (`factor[side]` * incident), coefficient being the cell's
/// cb (E: the material's cb; H: dt/mu0, or the H material's cb when some material is
/// magnetic). A cell appears at most once in a group; an E cell on an edge of the box is in
/// two groups (one per face it touches), which the passes apply in group order.
#[derive(Debug, Clone, PartialEq)]
pub struct TfsfGroup {
    /// The corrected component.
    pub component: Component,
    /// The axis of the faces.
    pub axis: usize,
    /// The factor of the lower and the upper face: s e_{paq} (k_hat x e_hat)_q / (eta0 d_a)
    /// for E_p reading H_q, -s e_{qap} e_hat_p / d_a for H_q reading E_p (s = -1 lower,
    /// +1 upper; e the Levi-Civita symbol).
    pub factor: [f64; 2],
    /// The points, sorted by x index (lower face first where they share it).
    pub points: Vec<(usize, TfsfPoint)>,
}

/// A resolved TF/SF source.
#[derive(Debug, Clone, PartialEq)]
pub struct Tfsf {
    /// The total-field box in grid node indices: node planes `lo[a]`..=`hi[a]` along each axis
    /// (a field component is in the total-field region when its position, in cells, lies in
    /// [lo, hi] on every axis).
    pub lo: [usize; 3],
    /// See `lo`.
    pub hi: [usize; 3],
    /// Axes whose faces are skipped: periodic axes the box spans whole.
    pub spans: [bool; 3],
    /// Unit propagation direction.
    pub direction: [f64; 3],
    /// Unit E polarization (perpendicular to `direction`).
    pub polarization: [f64; 3],
    /// Axial incidence: the axis and the sign of the direction.
    pub axial: Option<(usize, i32)>,
    /// Peak incident E (V/m).
    pub amplitude: f64,
    /// Time dependence of the incident E at the reference point.
    pub waveform: Waveform,
    /// The point where xi = 0: the box corner the wave reaches first (m).
    pub reference: [f64; 3],
    /// The 1-D cell (m).
    pub d1: f64,
    /// The 1-D Courant number S = v1 dt / d1.
    pub courant: f64,
    /// Nodes of the 1-D grid (e and h have this many values each).
    pub nodes: usize,
    /// The 1-D node at xi = 0.
    pub origin_node: usize,
    /// The drive e_0(t) = amplitude * waveform(t + advance): advance is the 1-D grid's phase
    /// travel time at the centre frequency from node 0 to xi = 0, so that the incident E at
    /// the reference point is amplitude * waveform(t) in phase at the band centre.
    pub advance: f64,
}

/// Levi-Civita symbol of three distinct axes (0 if two are equal).
fn levi(a: usize, b: usize, c: usize) -> f64 {
    if a == b || b == c || a == c {
        0.0
    } else if (a + 1) % 3 == b {
        1.0
    } else {
        -1.0
    }
}

/// k x e.
pub fn cross(k: [f64; 3], e: [f64; 3]) -> [f64; 3] {
    [
        k[1] * e[2] - k[2] * e[1],
        k[2] * e[0] - k[0] * e[2],
        k[0] * e[1] - k[1] * e[0],
    ]
}

/// The 3-D grid's numerical wavenumber along unit direction `k` at angular frequency `w`:
/// the root of sum_a (sin(k k_a d_a / 2) / d_a)^2 = (sin(w dt / 2) / (c dt))^2 (Newton's
/// method from the vacuum k = w / c, which lies below the root; None above the grid's
/// cut-off along `k`).
pub fn numerical_wavenumber(grid: &Grid, k: [f64; 3], w: f64) -> Option<f64> {
    let rhs = ((w * grid.dt / 2.0).sin() / (C0 * grid.dt)).powi(2);
    let f = |x: f64| -> (f64, f64) {
        let mut v = -rhs;
        let mut dv = 0.0;
        for (&ka, &d) in k.iter().zip(&grid.cell) {
            let s = (x * ka * d / 2.0).sin() / d;
            v += s * s;
            dv += 2.0 * s * (x * ka * d / 2.0).cos() * ka / 2.0;
        }
        (v, dv)
    };
    let mut x = w / C0;
    for _ in 0..100 {
        let (v, dv) = f(x);
        if dv <= 0.0 {
            return None;
        }
        let step = v / dv;
        x -= step;
        if step.abs() < 1e-15 * x.abs() {
            return Some(x);
        }
    }
    None
}

impl Tfsf {
    /// The TF/SF source of the box lo..=hi (node indices) on `grid`, or a message saying why
    /// the direction cannot be resolved on this grid (above its cut-off).
    #[allow(clippy::too_many_arguments)] // the box, the wave and its time dependence
    pub fn new(
        grid: &Grid,
        lo: [usize; 3],
        hi: [usize; 3],
        spans: [bool; 3],
        direction: [f64; 3],
        polarization: [f64; 3],
        amplitude: f64,
        waveform: Waveform,
    ) -> Result<Tfsf, String> {
        let axial = (0..3).find_map(|a| {
            let others_zero = (0..3).all(|b| b == a || direction[b] == 0.0);
            (others_zero && direction[a] != 0.0).then(|| (a, direction[a].signum() as i32))
        });
        // Node coordinates through the grid (on a graded axis the box lies in background cells,
        // which the resolver checks, so the cell steps below are the local ones).
        let node_pos = |a: usize, i: usize| grid.coordinate(a, i as f64);
        let reference = [0, 1, 2].map(|a| {
            if direction[a] >= 0.0 {
                node_pos(a, lo[a])
            } else {
                node_pos(a, hi[a])
            }
        });
        let w0 = 2.0 * PI * waveform.centre_frequency();
        let dt = grid.dt;
        let (d1, courant) = match axial {
            Some((a, _)) => (grid.cell[a], C0 * dt / grid.cell[a]),
            None => {
                let d1 = C0 * dt / 0.9;
                let k3 = numerical_wavenumber(grid, direction, w0).ok_or_else(|| {
                    "the waveform's centre frequency is above the grid's cut-off along the direction"
                        .to_string()
                })?;
                if k3 * d1 / 2.0 >= PI / 2.0 {
                    return Err("the grid resolves the centre frequency too coarsely along the direction for the 1-D incident grid".into());
                }
                (d1, (w0 * dt / 2.0).sin() / (k3 * d1 / 2.0).sin())
            }
        };
        // Extent of xi over the box grown by a cell (the H points just outside), in 1-D cells.
        let (mut xmin, mut xmax) = (f64::INFINITY, f64::NEG_INFINITY);
        for corner in 0..8 {
            let xi: f64 = (0..3)
                .map(|a| {
                    let p = if corner >> a & 1 == 0 {
                        node_pos(a, lo[a]) - grid.cell[a]
                    } else {
                        node_pos(a, hi[a]) + grid.cell[a]
                    };
                    direction[a] * (p - reference[a])
                })
                .sum();
            xmin = xmin.min(xi);
            xmax = xmax.max(xi);
        }
        // Node 0 (the hard source) at least three nodes before the first point read.
        let origin_node = (-xmin / d1).ceil().max(0.0) as usize + 3;
        let box_nodes = origin_node + (xmax / d1).ceil().max(0.0) as usize + 2;
        let nodes = box_nodes + (grid.steps + box_nodes) / 2 + 3;
        // The kernels index the 1-D grid with u32 nodes.
        if nodes > u32::MAX as usize {
            return Err(format!(
                "the run's {} steps need a 1-D incident grid of {nodes} nodes, more than the 2^32 it may have: split the run or shorten it",
                grid.steps
            ));
        }
        // The 1-D phase velocity at the band centre: sin(w dt / 2) / (S) = sin(k1 d1 / 2).
        let arg = (w0 * dt / 2.0).sin() / courant;
        let k1 = if arg < 1.0 {
            2.0 * arg.asin() / d1
        } else {
            w0 / C0
        };
        let advance = origin_node as f64 * d1 * k1 / w0;
        Ok(Tfsf {
            lo,
            hi,
            spans,
            direction,
            polarization,
            axial,
            amplitude,
            waveform,
            reference,
            d1,
            courant,
            nodes,
            origin_node,
            advance,
        })
    }

    /// e_0 of the 1-D grid at time `t` (V/m).
    pub fn drive(&self, t: f64) -> f64 {
        self.amplitude * self.waveform.value(t + self.advance)
    }

    /// The unit H direction k_hat x e_hat.
    pub fn h_direction(&self) -> [f64; 3] {
        cross(self.direction, self.polarization)
    }

    /// Where the incident value of the cell at global index `idx` of `component` lies on the
    /// 1-D grid: (node, weight) among the h nodes (`h`) or the e nodes.
    fn locate(&self, grid: &Grid, component: Component, idx: [usize; 3], h: bool) -> (u32, f64) {
        let m = self.origin_node as i64;
        if let Some((a, s)) = self.axial {
            // Exact: positions in half cells along the axis.
            let half = 2 * idx[a] as i64 + (component.offset()[a] > 0.0) as i64;
            let reference = if s > 0 { self.lo[a] } else { self.hi[a] } as i64;
            let h2 = s as i64 * (half - 2 * reference);
            let node = if h {
                (h2 - 1).div_euclid(2)
            } else {
                h2.div_euclid(2)
            } + m;
            debug_assert!(
                h2.rem_euclid(2) == h as i64,
                "an axial point lies on a 1-D node"
            );
            return (node as u32, 0.0);
        }
        let p = grid.position(component, idx.map(|i| i as f64));
        let xi: f64 = (0..3)
            .map(|a| self.direction[a] * (p[a] - self.reference[a]))
            .sum();
        let u = xi / self.d1 + m as f64 - if h { 0.5 } else { 0.0 };
        let node = u.floor();
        (node as u32, u - node)
    }

    /// The correction groups, in the order the passes apply them: face axis x, y, z; for
    /// each, the E groups then the H groups. Groups whose factor is zero (a component the
    /// incident field does not have) are left out.
    pub fn groups(&self, grid: &Grid) -> Vec<TfsfGroup> {
        let e_hat = self.polarization;
        let h_hat = self.h_direction();
        let mut out = Vec::new();
        for a in 0..3 {
            if self.spans[a] {
                continue;
            }
            let d = grid.cell[a];
            let (b, c) = ((a + 1) % 3, (a + 2) % 3);
            // E_p reading H_q across the face, then H_q reading E_p.
            for electric in [true, false] {
                for (p, q) in [(b, c), (c, b)] {
                    let (component, unit) = if electric {
                        (Component::ALL[p], levi(p, a, q) * h_hat[q] / ETA0 / d)
                    } else {
                        (Component::ALL[3 + q], -levi(q, a, p) * e_hat[p] / d)
                    };
                    if unit.abs() < 1e-12 / d {
                        continue;
                    }
                    let factor = [-unit, unit];
                    let mut points = Vec::new();
                    for (side, plane) in [self.lo[a], self.hi[a]].into_iter().enumerate() {
                        // The E point on the face, the H point half a cell outside it: one is
                        // corrected, the incident value is that of the other, the one read.
                        let h_plane = if side == 1 { plane } else { plane - 1 };
                        let (ia, read, ra) = if electric {
                            (plane, Component::ALL[3 + q], h_plane)
                        } else {
                            (h_plane, Component::ALL[p], plane)
                        };
                        for i in self.range(grid, p, true) {
                            for k in self.range(grid, q, false) {
                                let mut cell = [0; 3];
                                cell[p] = i;
                                cell[q] = k;
                                let mut at = cell;
                                cell[a] = ia;
                                at[a] = ra;
                                let (node, w) = self.locate(grid, read, at, electric);
                                points.push((side, TfsfPoint { cell, node, w }));
                            }
                        }
                    }
                    points.sort_by_key(|(_, pt)| pt.cell[0]);
                    out.push(TfsfGroup {
                        component,
                        axis: a,
                        factor,
                        points,
                    });
                }
            }
        }
        out
    }

    /// Grid indices along axis `b` of a face's points: `half` for components half a cell off
    /// the nodes along `b` (index i at i + 1/2, i in lo..hi), else the nodes lo..=hi; a spanned
    /// periodic axis gives every index.
    fn range(&self, grid: &Grid, b: usize, half: bool) -> std::ops::Range<usize> {
        if self.spans[b] {
            0..grid.shape[b]
        } else if half {
            self.lo[b]..self.hi[b]
        } else {
            self.lo[b]..self.hi[b] + 1
        }
    }

    /// The correction groups [`Tfsf::groups`] makes, as (face axis a, electric, p, q): E_p
    /// reading H_q across the faces normal to a, or H_q reading E_p; the components the
    /// incident field has, without building the points.
    fn group_kinds(&self) -> Vec<(usize, bool, usize, usize)> {
        let (e_hat, h_hat) = (self.polarization, self.h_direction());
        let mut out = Vec::new();
        for a in (0..3).filter(|&a| !self.spans[a]) {
            let (b, c) = ((a + 1) % 3, (a + 2) % 3);
            for electric in [true, false] {
                for (p, q) in [(b, c), (c, b)] {
                    let unit = if electric { h_hat[q] } else { e_hat[p] };
                    if unit.abs() >= 1e-12 {
                        out.push((a, electric, p, q));
                    }
                }
            }
        }
        out
    }

    /// The correction groups [`Tfsf::groups`] makes, E and H, counted without building them.
    pub fn group_counts(&self) -> [usize; 2] {
        let kinds = self.group_kinds();
        let electric = kinds.iter().filter(|k| k.1).count();
        [electric, kinds.len() - electric]
    }

    /// Correction points per global x index (what [`Tfsf::groups`] places on each x plane),
    /// counted without building them.
    pub fn plane_counts(&self, grid: &Grid) -> Vec<u64> {
        let mut out = vec![0u64; grid.shape[0]];
        for (a, electric, p, q) in self.group_kinds() {
            let (rp, rq) = (self.range(grid, p, true), self.range(grid, q, false));
            if a == 0 {
                let face = (rp.len() * rq.len()) as u64;
                let lower = if electric { self.lo[0] } else { self.lo[0] - 1 };
                out[lower] += face;
                out[self.hi[0]] += face;
            } else {
                // x is p or q: each x index of that range has 2 (faces) x the other.
                let (rx, other) = if p == 0 {
                    (rp, rq.len())
                } else {
                    (rq, rp.len())
                };
                for x in rx {
                    out[x] += 2 * other as u64;
                }
            }
        }
        out
    }

    /// The analytic incident E vector at point `p` (m) and time `t` (s), the continuum wave
    /// the grid approximates: amplitude * waveform(t - xi / c) e_hat.
    pub fn incident_e(&self, p: [f64; 3], t: f64) -> [f64; 3] {
        let xi: f64 = (0..3)
            .map(|a| self.direction[a] * (p[a] - self.reference[a]))
            .sum();
        let v = self.amplitude * self.waveform.value(t - xi / C0);
        self.polarization.map(|e| e * v)
    }

    /// The incident E at the reference point (V/m) as the DFT the flux monitors use,
    /// E(f) = sum_n E^n exp(-i 2 pi f t_n) dt with t_n = n dt over the run's `steps` steps
    /// (E^n at t = n dt, the sample after step n; see [`crate::flux`]), as (re, im) per
    /// frequency: the spectrum of the grid's own incident wave, not of the continuum one. The
    /// 1-D grid is lossless and nothing comes back from its end, so its wave at the reference
    /// node is the drive's spectrum delayed by the 1-D grid's phase k1(f) over the
    /// `origin_node` nodes from the source: E(f) = D(f) exp(-i k1 m d1), D(f) the DFT of the
    /// drive samples e_0^n (n = 0..=steps), k1 from sin(k1 d1 / 2) = sin(pi f dt) / S. For axial incidence this
    /// is the 3-D grid's incident field exactly; for oblique incidence its magnitude is, and
    /// its phase is matched at the centre frequency. Frequencies above the 1-D grid's cut-off
    /// (where no real k1 exists) give the magnitude with the phase of the continuum.
    pub fn incident_dft(&self, frequencies: &[f64], dt: f64, steps: usize) -> Vec<(f64, f64)> {
        frequencies
            .iter()
            .map(|&f| {
                // From n = 0: the drive's first sample reaches the reference node after the
                // run's first sample time, so it belongs to the node's spectrum.
                let (mut re, mut im) = (0.0, 0.0);
                for n in 0..=steps {
                    let t = n as f64 * dt;
                    let v = self.drive(t) * dt;
                    let ph = -2.0 * PI * f * t;
                    re += v * ph.cos();
                    im += v * ph.sin();
                }
                let arg = (PI * f * dt).sin() / self.courant;
                let k1 = if arg.abs() < 1.0 {
                    2.0 * arg.asin() / self.d1
                } else {
                    2.0 * PI * f / C0
                };
                let (s, c) = (-k1 * self.origin_node as f64 * self.d1).sin_cos();
                (re * c - im * s, re * s + im * c)
            })
            .collect()
    }

    /// The incident intensity |E(f)|^2 / eta0 (W/m^2 in the DFT normalisation of the flux
    /// monitors' `power`, which is Re sum (E(f) x H(f)*) . n dA without a factor 1/2: a plane
    /// wave's flux through an area A is then exactly A |E(f)|^2 / eta0), from
    /// [`Tfsf::incident_dft`]: the divisor of a cross-section.
    pub fn incident_intensity(&self, frequencies: &[f64], dt: f64, steps: usize) -> Vec<f64> {
        self.incident_dft(frequencies, dt, steps)
            .iter()
            .map(|(re, im)| (re * re + im * im) / ETA0)
            .collect()
    }

    /// How a closed box of E-node planes `lo[a]..=hi[a]` sits against the total-field box:
    /// around it (every field its faces read is scattered field), inside it (every one is
    /// total field), or across a face (None: neither cross-section means anything). The box's
    /// faces read E on their planes and H half a cell either side, the TF/SF box holds the
    /// fields whose positions lie in [lo, hi]: so "around" needs a face at least one node
    /// outside, "inside" at least one node inside. Axes the TF/SF box spans whole (periodic)
    /// do not count.
    pub fn relation(&self, lo: [usize; 3], hi: [usize; 3]) -> Option<BoxRelation> {
        let axes = (0..3).filter(|&a| !self.spans[a]);
        if axes
            .clone()
            .all(|a| lo[a] < self.lo[a] && hi[a] > self.hi[a])
        {
            Some(BoxRelation::Around)
        } else if axes
            .clone()
            .all(|a| lo[a] > self.lo[a] && hi[a] < self.hi[a])
        {
            Some(BoxRelation::Inside)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axial_numerical_wavenumber_is_the_1d_one() {
        let grid = Grid::uniform(
            [10, 10, 10],
            [1e-3; 3],
            [0.0; 3],
            0.99 * 1e-3 / (C0 * 3f64.sqrt()),
            10,
        );
        let w = 2.0 * PI * 10e9;
        let k = numerical_wavenumber(&grid, [0.0, 0.0, 1.0], w).unwrap();
        // 1-D Yee: sin(k d / 2) / d = sin(w dt / 2) / (c dt).
        let k1 = 2.0 / 1e-3 * (1e-3 * (w * grid.dt / 2.0).sin() / (C0 * grid.dt)).asin();
        assert!((k - k1).abs() < 1e-9 * k1, "{k} {k1}");
        // The grid is slower than light: k > w / c.
        assert!(k > w / C0);
    }

    #[test]
    fn levi_civita() {
        assert_eq!(levi(0, 1, 2), 1.0);
        assert_eq!(levi(1, 2, 0), 1.0);
        assert_eq!(levi(1, 0, 2), -1.0);
        assert_eq!(levi(0, 0, 2), 0.0);
    }
}
