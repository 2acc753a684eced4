//! Lumped circuits on the grid: RLC elements across a box of E edges, lumped ports, and the
//! terminals (voltage and current) that measure both.
//!
//! An element spread over a box of edges of one E component: the box holds `n_a` edges in
//! series along the element's axis and its columns side by side. Edge `e` (length `d_e` along
//! the axis, dual area `A_e` across it) carries the element scaled by
//! `s_e = (d_e / D) (A / A_e)`, with `D` a column's length and `A` the box's cross-section:
//! R_e = R s_e, L_e = L s_e, C_e = C / s_e. A uniform field across the box then sees exactly
//! R, L and C between the box's faces (openEMS and Tidy3D spread their lumped elements the
//! same way, as a conductivity and a permittivity).
//!
//! The update is implicit in E^{n+1}, like the dispersive poles: with E* the field after the
//! curl and every additive correction (E* = ca E^n + cb (curl H - J_sources)), the element's
//! current I^{n+1/2} through the edge enters as E^{n+1} = E* - (cb / A_e) I^{n+1/2}, and the
//! element's own law is discretised by the trapezoidal rule (the bilinear transform: jw ->
//! (2 / dt) j tan(w dt / 2), within 1e-5 of exact below a twentieth of the grid's Nyquist
//! frequency), which keeps a passive element passive, so the update is stable at the grid's
//! step for any R, L and C:
//! - parallel: I^{n+1/2} = V^{n+1/2} / R + C (V^{n+1} - V^n) / dt + I_L^{n+1/2}, with
//!   V = E d, V^{n+1/2} = (V^n + V^{n+1}) / 2 and I_L^{n+1} = I_L^n + dt V^{n+1/2} / L
//!   (state: E^n, I_L);
//! - series: V^{n+1/2} = R I^{n+1/2} + L (I^{n+1} - I^n) / dt + q^{n+1/2} / C, with
//!   I^{n+1/2} = (I^n + I^{n+1}) / 2 and q^{n+1} = q^n + dt I^{n+1/2} (state: E^n, I, q).
//!
//! A lumped port is Thevenin's source V_s with internal resistance R across its gap, written as
//! Norton's: a parallel R element plus a uniform current sheet J = s V_s / (R A) (an ordinary
//! [`super::Source`], `s` the sign of the port's direction), the same circuit exactly.

use super::grid::Component;
use super::monitors::{Probe, ProbeComponent};
use super::{BoundaryKind, CellPass, CellPlane, CellPlaneOf, Grid};
use std::ops::{Add, Mul, Sub};

/// The arithmetic the update needs, in the run's precision (f32 or f64): the model sits below
/// `crate::real`, so the update names its own small trait rather than `Real`.
trait Arithmetic: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> {
    /// `x` rounded to this precision (as `Real::from_f64` rounds it).
    fn of(x: f64) -> Self;
}

impl Arithmetic for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
}

impl Arithmetic for f64 {
    fn of(x: f64) -> Self {
        x
    }
}

/// How an element's R, L and C are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// R, L and C in one branch: the current through all three is the same.
    Series,
    /// R, L and C side by side: the voltage across all three is the same.
    Parallel,
}

impl Topology {
    /// "series" or "parallel".
    pub fn name(self) -> &'static str {
        match self {
            Topology::Series => "series",
            Topology::Parallel => "parallel",
        }
    }
}

/// An element's values (ohm, henry, farad); `None` is an element without that part (in series:
/// no resistance, no inductance, no capacitor (a short in its place); in parallel: no branch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rlc {
    /// Resistance (ohm).
    pub resistance: Option<f64>,
    /// Inductance (H).
    pub inductance: Option<f64>,
    /// Capacitance (F).
    pub capacitance: Option<f64>,
    /// How they are joined.
    pub topology: Topology,
}

/// Where an element's edges lie and how they scale it: the edges of one E component in a box.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeBox {
    /// The E component along the element's axis.
    pub component: Component,
    /// Global index box [start, end) of that component's edges.
    pub cells: [[usize; 2]; 3],
    /// Per edge in C order: (length d_e along the axis, dual area A_e across it), m and m^2.
    pub edges: Vec<(f64, f64)>,
    /// A column's length D (m).
    pub length: f64,
    /// The box's cross-section A (m^2).
    pub area: f64,
}

impl EdgeBox {
    /// The edges of `component` in index box `cells` on `grid` with faces `faces`: an edge on a
    /// PMC minimum face (a symmetry plane through the edge) has half its dual area there.
    pub fn new(
        grid: &Grid,
        faces: &[[BoundaryKind; 2]; 3],
        component: Component,
        cells: [[usize; 2]; 3],
    ) -> EdgeBox {
        let u = component.axis() as usize;
        let periodic = |a: usize| faces[a].iter().all(|f| *f == BoundaryKind::Periodic);
        let dual = |a: usize, i: usize| {
            let d = grid.dual(a, i, periodic(a));
            if i == 0 && faces[a][0] == BoundaryKind::Pmc {
                0.5 * d
            } else {
                d
            }
        };
        let mut edges = Vec::new();
        for i in cells[0][0]..cells[0][1] {
            for j in cells[1][0]..cells[1][1] {
                for k in cells[2][0]..cells[2][1] {
                    let idx = [i, j, k];
                    let length = grid.primal(u, idx[u] as isize);
                    let area: f64 = (0..3)
                        .filter(|&a| a != u)
                        .map(|a| dual(a, idx[a]))
                        .product();
                    edges.push((length, area));
                }
            }
        }
        let length = (cells[u][0]..cells[u][1])
            .map(|i| grid.primal(u, i as isize))
            .sum();
        let (v, w) = transverse(u);
        let area = (cells[v][0]..cells[v][1]).map(|i| dual(v, i)).sum::<f64>()
            * (cells[w][0]..cells[w][1]).map(|i| dual(w, i)).sum::<f64>();
        EdgeBox {
            component,
            cells,
            edges,
            length,
            area,
        }
    }

    /// Edge `e`'s share `s_e = (d_e / D) (A / A_e)` of the element.
    fn share(&self, e: usize) -> f64 {
        let (d, a) = self.edges[e];
        (d / self.length) * (self.area / a)
    }
}

/// The two axes across axis `u`, in cyclic order (v, w): curl_u = d_v H_w - d_w H_v.
pub fn transverse(u: usize) -> (usize, usize) {
    ((u + 1) % 3, (u + 2) % 3)
}

/// An RLC element as a cell pass ([`CellPass`]): per edge its update coefficients, in the
/// order of the state (the box's edges in C order).
#[derive(Debug, Clone)]
pub struct LumpedElement {
    name: String,
    component: Component,
    cells: [[usize; 2]; 3],
    topology: Topology,
    /// Per edge: parallel (a, b, k, m), series (p, k/2, d/2, 1/Z+, Z-, 1/C, dt/2, 0); see
    /// [`LumpedElement::update`].
    coefficients: Vec<[f64; 8]>,
}

impl LumpedElement {
    /// Element `name` with values `rlc` over `edges`, in a run of step `dt` whose E update
    /// has gain `cb[e]` at edge `e` (the host's dt / eps, as the curl update applies it).
    pub fn new(name: &str, rlc: &Rlc, edges: &EdgeBox, cb: &[f64], dt: f64) -> LumpedElement {
        let coefficients = (0..edges.edges.len())
            .map(|e| {
                let s = edges.share(e);
                let (d, area) = edges.edges[e];
                let k = cb[e] / area;
                let r = rlc.resistance.map(|r| r * s);
                let l = rlc.inductance.map(|l| l * s);
                let c = rlc.capacitance.map(|c| c / s);
                match rlc.topology {
                    Topology::Parallel => {
                        let g = r.map_or(0.0, |r| d / (2.0 * r));
                        let cap = c.map_or(0.0, |c| c * d / dt);
                        let ind = l.map_or(0.0, |l| dt * d / (4.0 * l));
                        let (gp, gm) = (g + cap + ind, g - cap + ind);
                        let m = l.map_or(0.0, |l| dt * d / (2.0 * l));
                        [1.0 / (1.0 + k * gp), k * gm, k, m, 0.0, 0.0, 0.0, 0.0]
                    }
                    Topology::Series => {
                        let inv_c = c.map_or(0.0, |c| 1.0 / c);
                        let half_r = r.unwrap_or(0.0) / 2.0;
                        let l_dt = l.unwrap_or(0.0) / dt;
                        let zp = half_r + l_dt + dt * inv_c / 4.0;
                        let zm = half_r - l_dt + dt * inv_c / 4.0;
                        let p = 1.0 / (1.0 + k * d / (4.0 * zp));
                        [p, k / 2.0, d / 2.0, 1.0 / zp, zm, inv_c, dt / 2.0, 0.0]
                    }
                }
            })
            .collect();
        LumpedElement {
            name: name.to_string(),
            component: edges.component,
            cells: edges.cells,
            topology: rlc.topology,
            coefficients,
        }
    }

    /// The update of one plane's cells (see the module documentation for the scheme).
    fn update<T: Arithmetic>(&self, p: CellPlane<'_, T>) {
        let b = self.cells;
        let per_plane = (b[1][1] - b[1][0]) * (b[2][1] - b[2][0]);
        let width = b[2][1] - b[2][0];
        let plane0 = (p.x - b[0][0]) * per_plane;
        let t = |x: f64| T::of(x);
        for y in p.rows.clone() {
            for z in p.z.clone() {
                let (f, s) = p.at(y, z);
                let co = &self.coefficients[plane0 + (y - b[1][0]) * width + (z - b[2][0])];
                let e_star = p.field[f];
                let e_old = p.state[s];
                match self.topology {
                    Topology::Parallel => {
                        let i_l = p.state[s + p.cells];
                        let e_new = t(co[0]) * (e_star - t(co[1]) * e_old - t(co[2]) * i_l);
                        p.state[s + p.cells] = i_l + t(co[3]) * (e_new + e_old);
                        p.field[f] = e_new;
                        p.state[s] = e_new;
                    }
                    Topology::Series => {
                        let (i, q) = (p.state[s + p.cells], p.state[s + 2 * p.cells]);
                        let r = t(co[2]) * e_old - q * t(co[5]) - t(co[4]) * i;
                        let e_new = t(co[0]) * (e_star - t(co[1]) * (i + t(co[3]) * r));
                        let i_new = t(co[3]) * (t(co[2]) * e_new + r);
                        p.state[s + p.cells] = i_new;
                        p.state[s + 2 * p.cells] = q + t(co[6]) * (i + i_new);
                        p.field[f] = e_new;
                        p.state[s] = e_new;
                    }
                }
            }
        }
    }
}

impl CellPass for LumpedElement {
    fn name(&self) -> &str {
        &self.name
    }
    fn component(&self) -> Component {
        self.component
    }
    fn cells(&self) -> [[usize; 2]; 3] {
        self.cells
    }
    fn slots(&self) -> usize {
        match self.topology {
            Topology::Parallel => 2,
            Topology::Series => 3,
        }
    }
    fn update_plane(&self, plane: CellPlaneOf<'_>) {
        match plane {
            CellPlaneOf::F32(p) => self.update(p),
            CellPlaneOf::F64(p) => self.update(p),
        }
    }
    /// `kernels/lumped.cu`, which does `LumpedElement::update`'s arithmetic in its order on
    /// these rows (each rounded once to the run's precision, as `update` does at each use).
    fn kernel(&self) -> Option<super::cell_pass::CellKernel<'_>> {
        Some(super::cell_pass::CellKernel::Lumped(
            super::cell_pass::LumpedKernel {
                topology: self.topology,
                coefficients: &self.coefficients,
            },
        ))
    }
}

/// What a lumped terminal is.
#[derive(Debug, Clone, PartialEq)]
pub enum TerminalKind {
    /// A lumped port: its reference impedance (ohm, complex) and its source (model index).
    Port {
        /// The reference impedance of its power waves; its real part is the source's
        /// internal resistance.
        impedance: [f64; 2],
        /// The model source that drives it; None in a run where it only terminates the
        /// device (an S-parameter sweep's run that drives another port).
        source: Option<usize>,
        /// Its open-circuit voltage's peak (V).
        amplitude: f64,
    },
    /// An element: the power it dissipates is reported.
    Element,
}

/// The voltage and current of a port or an element, read every step: `probe.components[0]`
/// is the voltage (E samples at t = n dt), `[1]` the current (H samples at (n - 1/2) dt).
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    /// The port's or element's name: its group under `/ports/` or `/elements/`.
    pub name: String,
    /// Port or element.
    pub kind: TerminalKind,
    /// The samples and their weights.
    pub probe: Probe,
    /// Where the spectra are reported (Hz).
    pub frequencies: Vec<f64>,
}

impl Terminal {
    /// The terminals of the edges `edges`, oriented along the axis with sign `sign`: the
    /// voltage of a port, V = -sign * sum_e E_e d_e A_e / A (the potential of the gap's end in
    /// its direction over its start), of an element the drop sign * sum_e E_e d_e A_e / A;
    /// current I = sign * (the loop integral of H around the box in its middle layer), the
    /// total current through the box along the direction (Ampere's law on the grid: the loop
    /// sums the discrete curl over the box's edges exactly). A loop side on a PMC wall is left
    /// out (tangential H is zero there); on a periodic axis it wraps.
    pub fn new(
        name: &str,
        kind: TerminalKind,
        grid: &Grid,
        faces: &[[BoundaryKind; 2]; 3],
        edges: &EdgeBox,
        sign: f64,
        frequencies: Vec<f64>,
    ) -> Terminal {
        let c = edges.component;
        let u = c.axis() as usize;
        let (v, w) = transverse(u);
        let b = edges.cells;
        let voltage_sign = match kind {
            TerminalKind::Port { .. } => -sign,
            TerminalKind::Element => sign,
        };
        let mut samples = Vec::new();
        let mut weights = Vec::new();
        let mut e = 0;
        for i in b[0][0]..b[0][1] {
            for j in b[1][0]..b[1][1] {
                for k in b[2][0]..b[2][1] {
                    let (d, a) = edges.edges[e];
                    samples.push((c, [i, j, k]));
                    weights.push(voltage_sign * d * a / edges.area);
                    e += 1;
                }
            }
        }
        let voltage = ProbeComponent {
            component: c,
            nearest: [b[0][0], b[1][0], b[2][0]],
            first: 0,
            weights,
        };
        let first = samples.len();
        let mut weights = Vec::new();
        let mid = (b[u][0] + b[u][1] - 1) / 2;
        let h = |axis: usize| Component::ALL[3 + axis];
        let n = grid.shape;
        let periodic = |a: usize| faces[a].iter().all(|f| *f == BoundaryKind::Periodic);
        // Index `i - 1` along axis `a`: the loop side below the box, None on a wall it skips.
        let below = |a: usize, i: usize| -> Option<usize> {
            match i {
                0 if periodic(a) => Some(n[a] - 1),
                0 => None,
                _ => Some(i - 1),
            }
        };
        let mut push = |axis: usize, at_v: usize, at_w: usize, weight: f64| {
            let mut idx = [0; 3];
            idx[u] = mid;
            idx[v] = at_v;
            idx[w] = at_w;
            samples.push((h(axis), idx));
            weights.push(sign * weight);
        };
        for iv in b[v][0]..b[v][1] {
            let dv = grid.dual(v, iv, periodic(v));
            // Along +v below the box (w low side), along -v above it.
            if let Some(lo) = below(w, b[w][0]) {
                push(v, iv, lo, dv);
            }
            push(v, iv, b[w][1] - 1, -dv);
        }
        for iw in b[w][0]..b[w][1] {
            let dw = grid.dual(w, iw, periodic(w));
            push(w, b[v][1] - 1, iw, dw);
            if let Some(lo) = below(v, b[v][0]) {
                push(w, lo, iw, -dw);
            }
        }
        let current = ProbeComponent {
            component: h(v),
            nearest: [b[0][0], b[1][0], b[2][0]],
            first,
            weights,
        };
        let center = grid.position(c, [0, 1, 2].map(|a| 0.5 * (b[a][0] + b[a][1]) as f64 - 0.5));
        Terminal {
            name: name.to_string(),
            kind,
            probe: Probe {
                name: name.to_string(),
                position: center,
                interpolate: false,
                components: vec![voltage, current],
                samples,
            },
            frequencies,
        }
    }
}

/// A terminal's spectra at its frequencies, from the DFTs X(f) = sum_n x_n exp(-i 2 pi f t_n)
/// dt of its series (the engineering convention: an inductor's impedance is +i w L), each
/// sample at its own time (the voltage at n dt, the current at (n - 1/2) dt). Powers are
/// Re(V I*) of those DFTs: the flux monitors' normalisation (Re sum E x H* dA of the same
/// DFTs), so a port's accepted power and a flux box's radiated power compare directly.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectra {
    /// V(f) (V s).
    pub voltage: Vec<num_complex::Complex64>,
    /// I(f) (A s).
    pub current: Vec<num_complex::Complex64>,
    /// V / I (ohm): a port's input impedance, an element's own.
    pub impedance: Vec<num_complex::Complex64>,
    /// A port's reflection b / a by power waves (Kurokawa) against its reference impedance Z:
    /// a = (V + Z I) / (2 sqrt(Re Z)), b = (V - Z* I) / (2 sqrt(Re Z)); empty for an element.
    pub s11: Vec<num_complex::Complex64>,
    /// A port's incident power |a|^2; empty for an element.
    pub incident_power: Vec<f64>,
    /// A port's power waves a (into the device) and b (out of it), sqrt(W) s; empty for an
    /// element.
    pub waves: Vec<[num_complex::Complex64; 2]>,
    /// Re(V I*) = |a|^2 - |b|^2: the power a port delivers to the device, or an element
    /// dissipates.
    pub power: Vec<f64>,
}

/// The DFT of `x` (sample `n` at time (n + 1 + offset) dt, as the probe rows hold it: row `n`
/// is step n + 1) at each of `frequencies`.
fn dft(x: &[f64], offset: f64, dt: f64, frequencies: &[f64]) -> Vec<num_complex::Complex64> {
    use num_complex::Complex64;
    frequencies
        .iter()
        .map(|&f| {
            let w = 2.0 * std::f64::consts::PI * f;
            let step = Complex64::from_polar(1.0, -w * dt);
            let mut phase = Complex64::from_polar(1.0, -w * (1.0 + offset) * dt);
            let mut sum = Complex64::new(0.0, 0.0);
            for (n, &v) in x.iter().enumerate() {
                sum += phase * v;
                phase *= step;
                // The rotation's rounding drifts by about 1e-16 a step: renormalised exactly
                // every 4096 steps.
                if n % 4096 == 4095 {
                    phase = Complex64::from_polar(1.0, -w * (n as f64 + 2.0 + offset) * dt);
                }
            }
            sum * dt
        })
        .collect()
}

impl Terminal {
    /// The spectra of voltage series `v` and current series `i` (one value per step from
    /// step 1, the current half a step earlier) in a run of step `dt`.
    pub fn spectra(&self, v: &[f64], i: &[f64], dt: f64) -> Spectra {
        self.spectra_at(v, i, dt, &self.frequencies)
    }

    /// [`Terminal::spectra`] at `frequencies` instead of the terminal's own.
    pub fn spectra_at(&self, v: &[f64], i: &[f64], dt: f64, frequencies: &[f64]) -> Spectra {
        let voltage = dft(v, 0.0, dt, frequencies);
        let current = dft(i, -0.5, dt, frequencies);
        let impedance: Vec<_> = voltage.iter().zip(&current).map(|(v, i)| v / i).collect();
        let power = voltage
            .iter()
            .zip(&current)
            .map(|(v, i)| (v * i.conj()).re)
            .collect();
        let waves: Vec<[num_complex::Complex64; 2]> = match self.kind {
            TerminalKind::Port { impedance: z, .. } => {
                let z = num_complex::Complex64::new(z[0], z[1]);
                let norm = 2.0 * z.re.sqrt();
                voltage
                    .iter()
                    .zip(&current)
                    .map(|(v, i)| [(v + z * i) / norm, (v - z.conj() * i) / norm])
                    .collect()
            }
            TerminalKind::Element => Vec::new(),
        };
        let s11 = waves.iter().map(|[a, b]| b / a).collect();
        let incident_power = waves.iter().map(|[a, _]| a.norm_sqr()).collect();
        Spectra {
            voltage,
            current,
            impedance,
            s11,
            incident_power,
            waves,
            power,
        }
    }
}
