//! The non-uniform (graded) mesh: `[[refine]]`, the per-index 1/delta arrays of the update,
//! the CPML on graded axes and the resolver's checks, against uniform-grid identities and
//! analytic results.

mod common;

use common::*;
use std::f64::consts::PI;
use yee::backend::cpu::CpuBackend;
use yee::decomp::split_even;
use yee::model::{Boundaries, Component, Model, C0, EPS0, MU0};
use yee::run::Stepper;

/// The model of `text` with every axis given as explicit node lines `origin + i * cell`:
/// graded axes in form, uniform in value.
fn as_lines(text: &str) -> (Model, Model) {
    let uniform = model(text);
    let mut graded = uniform.clone();
    let g = &mut graded.grid;
    for a in 0..3 {
        let l: Vec<f64> = (0..=g.shape[a])
            .map(|i| g.origin[a] + i as f64 * g.cell[a])
            .collect();
        // Every node is exact (dyadic cells and origin), so each cell is exactly `cell`.
        assert!(l.windows(2).all(|w| w[1] - w[0] == g.cell[a]));
        g.lines[a] = Some(l);
    }
    graded.boundaries = Boundaries::on_grid(graded.boundaries.faces, &graded.grid);
    assert!(!graded.grid.is_uniform());
    (uniform, graded)
}

/// A scene in metres on cells of 1/64 m with a dyadic origin, so every node coordinate is an
/// exact binary fraction: a PML, a dielectric box (smoothed), a Drude sphere, a dipole and a
/// probe between grid points.
fn dyadic_scene(flat: bool) -> String {
    let (size, faces) = if flat {
        (
            "[0.5, 0.375, 0.015625]",
            "default = { type = \"pml\", cells = 6 }\nz_min = { type = \"periodic\" }\nz_max = { type = \"periodic\" }",
        )
    } else {
        (
            "[0.5, 0.375, 0.25]",
            "default = { type = \"pml\", cells = 6 }",
        )
    };
    format!(
        r#"
[simulation]
length_unit = "m"
cell_size = 0.015625
size = {size}
steps = 60
precision = "f32"
[boundaries]
{faces}
[materials]
glass = {{ epsilon = 3.0 }}
metal = {{ epsilon = 1.0, drude = [{{ frequency = 2.0e9, damping = 1.0e8 }}] }}
[[geometry]]
shape = "box"
material = "glass"
center = [0.03, -0.02, 0.0]
size = [0.13, 0.09, 0.11]
[[geometry]]
shape = "sphere"
material = "metal"
center = [-0.06, 0.04, 0.0]
radius = 0.04
[[source]]
type = "dipole"
component = "Ey"
position = [0.1, 0.05, 0.0]
waveform = {{ type = "gaussian", frequency = 1.0e9, bandwidth = 1.0e9 }}
[[monitor]]
type = "probe"
name = "p"
position = [-0.011, 0.023, 0.0]
components = ["Ex", "Ey", "Hz"]
"#
    )
}

/// (a) Node lines that are in fact uniform give the uniform grid's fields bit for bit: the
/// per-index 1/primal and 1/dual arrays then hold exactly 1/cell, the graded CPML profile
/// equals the uniform one (same correctly rounded quotients), painting and smoothing sample
/// the same points. On a 3-D grid (the row update) and a flat one (the y loops of the 2-D
/// path), 1 and 3 slabs.
#[test]
fn uniform_lines_give_the_uniform_fields_bit_for_bit() {
    for flat in [false, true] {
        let (u, g) = as_lines(&dyadic_scene(flat));
        assert_eq!(u.boundaries.profiles, g.boundaries.profiles, "flat {flat}");
        for slabs in [1, 3] {
            let (pu, fu) = run_cpu::<f32>(&u, slabs);
            let (pg, fg) = run_cpu::<f32>(&g, slabs);
            assert!(max_abs(&fu[1]) > 0.0);
            assert_eq!(pu, pg, "probes, flat {flat}, {slabs} slabs");
            assert_eq!(fu, fg, "fields, flat {flat}, {slabs} slabs");
        }
    }
}

/// A PEC box of 1.0 x 0.8 x 0.6 um on background cells `cell`, refined to `cell / 2` but for
/// a margin of 0.1 um along the walls, excited off its symmetry planes.
fn cavity(cell: f64, steps: usize, refine: bool) -> String {
    let r = if refine {
        format!(
            r#"
[[refine]]
box = {{ center = [0.0, 0.0, 0.0], size = [0.8, 0.6, 0.4] }}
cell_size = {}
"#,
            cell / 2.0
        )
    } else {
        String::new()
    };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = {cell}
size = [1.0, 0.8, 0.6]
steps = {steps}
precision = "f64"
[boundaries]
default = {{ type = "pec" }}
{r}
[[source]]
type = "dipole"
component = "Ez"
position = [0.13, 0.11, 0.07]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[source]]
type = "dipole"
component = "Ex"
position = [-0.21, 0.17, 0.09]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[source]]
type = "dipole"
component = "Ey"
position = [0.27, -0.13, -0.11]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [-0.31, -0.17, 0.12]
components = ["Ez", "Ex", "Ey", "Hy"]
"#
    )
}

/// The modes the probe sees well in a record of ~50 periods ((1, 1, 1) is too weak there to
/// stand out from (2, 1, 0) 2 % away).
const MODES: [[f64; 3]; 3] = [[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]];

fn analytic_resonance(mode: [f64; 3], size: [f64; 3]) -> f64 {
    C0 / 2.0
        * (0..3)
            .map(|a| (mode[a] / size[a]).powi(2))
            .sum::<f64>()
            .sqrt()
}

/// Resonance of a PEC-box mode on a uniform Yee grid (the discrete dispersion relation).
fn yee_resonance(mode: [f64; 3], size: [f64; 3], cell: f64, dt: f64) -> f64 {
    let s: f64 = (0..3)
        .map(|a| ((mode[a] * PI / size[a]) * cell / 2.0).sin().powi(2) / (cell * cell))
        .sum();
    2.0 * ((C0 * dt) * s.sqrt()).asin() / dt / (2.0 * PI)
}

/// The measured resonances of `m` near the analytic modes, searched +-1 %: wider than the
/// grid's error (< 0.3 % here), narrower than the spacing to any other mode (> 5 %).
fn resonances(m: &Model) -> Vec<f64> {
    let (series, _) = run_cpu::<f64>(m, 2);
    let g = &m.grid;
    let start = (2.0 * 5.3 / (2.0 * PI * 3.0e14 / 2.3548) / g.dt) as usize;
    MODES
        .iter()
        .map(|&mode| {
            let f0 = analytic_resonance(mode, g.size());
            let mut best = (0.0, 0.0);
            for s in &series {
                let x = &s[start..];
                let f = peak_frequency(x, g.dt, f0 * 0.99, f0 * 1.01);
                let a = hann_dft(x, g.dt, f);
                if a > best.1 {
                    best = (f, a);
                }
            }
            best.0
        })
        .collect()
}

/// `cavity(cell, steps, true)` with `simulation.grading = 2`: the refine box's faces are then
/// single jumps from `cell` to `cell / 2` (no graded transition), so the mesh at `cell / 2`
/// is exactly the mesh at `cell` with every cell halved (the 0.1 um wall margin is 2 and then
/// 4 background cells, both exact), the self-similar family a convergence order needs.
fn jump_cavity(cell: f64, steps: usize) -> String {
    cavity(cell, steps, true).replace("precision = \"f64\"", "precision = \"f64\"\ngrading = 2.0")
}

/// (b) A PEC cavity refined but for a margin along its walls: every resonance within 0.2 % of
/// the analytic mode (the issue's bound) on the 25 nm / 12.5 nm mesh, both with the default
/// graded transition (ratio 1.25) and with single jumps (grading 2); the error shrinking at
/// second order when background and refinement are both halved (ratio > 3; first order would
/// give 2), and on the 50 nm / 25 nm jump mesh no worse than the coarse uniform grid at the
/// same time step, within 15 %.
///
/// Why the order is measured on the jump meshes: with the default grading the 0.1 um margin
/// must hold the transition 31, 39, 49 nm (119 nm, so squeezed) on the 50 nm mesh, but the
/// transition 16, 20, 24 nm plus 1.6 background cells on the 25 nm mesh: the two meshes are
/// not one halved into the other, and their error ratio (2.2 - 2.3 measured) mixes the
/// change of mesh shape with the convergence. With grading 2 the mesh
/// family is exactly self-similar, so the ratio measures the order alone.
///
/// Why only "no worse": where neighbouring cells jump by a factor 2 the dual step
/// (h_{i-1} + h_i) / 2 centres the E update's difference half a cell-size jump off the node,
/// a first-order local error. The eigenvalues still converge at second order (the ratio
/// asserted here), but for the lowest modes that error costs about what the refinement gains:
/// a 1-D model of this scheme gives -8.5e-4 for the fundamental mode with 80 % of the line
/// refined against -1.03e-3 uniform, and the 3-D (1, 0, 1) mode measures 2.26e-3 against
/// 2.05e-3. The graded transition (ratio 1.25) removes the jumps: on its coarse mesh the
/// error is well below the coarse uniform grid's.
#[test]
fn refined_pec_cavity_converges_at_second_order_to_the_analytic_modes() {
    let coarse = model(&jump_cavity(0.05, 3000));
    assert!(coarse.grid.lines.iter().all(|l| l.is_some()));
    // The time step is set by the smallest cell (0.025 um).
    let fine_dt = 0.99 * yee::model::Grid::courant_limit([0.025e-6; 3]);
    assert!((coarse.grid.dt - fine_dt).abs() < 1e-9 * fine_dt);
    let size = coarse.grid.size();
    assert!((size[0] - 1.0e-6).abs() < 1e-18 && (size[2] - 0.6e-6).abs() < 1e-18);
    let fine = model(&jump_cavity(0.025, 6000));
    // The family is self-similar: every fine cell is half a coarse cell, in order (1e-9 of a
    // cell: the nodes are running sums of non-dyadic sizes).
    for a in 0..3 {
        let (c, f) = (coarse.grid.nodes(a), fine.grid.nodes(a));
        assert_eq!(f.len(), 2 * c.len() - 1, "axis {a}");
        for (i, w) in c.windows(2).enumerate() {
            let h = w[1] - w[0];
            for k in 0..2 {
                let hf = f[2 * i + k + 1] - f[2 * i + k];
                assert!((hf - h / 2.0).abs() < 1e-9 * h, "axis {a}, cell {i}");
            }
        }
    }
    let got = resonances(&coarse);
    let got_fine = resonances(&fine);
    // The default grading: the generator's transitions, checked for accuracy only.
    let graded = model(&cavity(0.05, 3000, true));
    let graded_fine = model(&cavity(0.025, 6000, true));
    let got_graded = resonances(&graded);
    let got_graded_fine = resonances(&graded_fine);
    for (k, &mode) in MODES.iter().enumerate() {
        let exact = analytic_resonance(mode, size);
        let rel = |f: f64| (f - exact).abs() / exact;
        let (err, err_fine) = (rel(got[k]), rel(got_fine[k]));
        let (err_graded, err_graded_fine) = (rel(got_graded[k]), rel(got_graded_fine[k]));
        // The coarse uniform grid at the graded run's time step: on a graded mesh the fine
        // cells set dt, so the coarse cells run at half the Courant number, where the time
        // error no longer offsets the space error as it does at 0.99.
        let err_uniform =
            (yee_resonance(mode, size, 0.05e-6, coarse.grid.dt) - exact).abs() / exact;
        eprintln!(
            "mode {mode:?}: jumps {err:.2e}, x2 finer {err_fine:.2e} (ratio {:.2}); graded 1.25 {err_graded:.2e}, x2 finer {err_graded_fine:.2e}; coarse uniform at that dt {err_uniform:.2e}",
            err / err_fine
        );
        assert!(err_fine < 2e-3, "mode {mode:?}: error {err_fine:.2e}");
        assert!(
            err_graded_fine < 2e-3,
            "mode {mode:?}: graded error {err_graded_fine:.2e}"
        );
        // The graded transition removes the jumps' first-order error, so on the coarse mesh
        // the refinement gains what halving 80 % of each axis can (measured 0.32 - 0.40 of the
        // uniform error; 0.6 still fails a mesh that gains nothing over its background).
        assert!(
            err_graded < 0.6 * err_uniform,
            "mode {mode:?}: graded {err_graded:.2e} against coarse uniform {err_uniform:.2e}"
        );
        assert!(
            err < 1.15 * err_uniform,
            "mode {mode:?}: jumps {err:.2e} against coarse uniform {err_uniform:.2e}"
        );
        assert!(
            err / err_fine > 3.0,
            "mode {mode:?}: error ratio {:.2} on halving the mesh",
            err / err_fine
        );
    }
}

/// The discrete energy of a graded grid: each component's values weighted by the volume of
/// its own cell (primal size along the component's half-integer axes, dual along its node
/// axes), the inner product in which the graded curl operators are adjoint, so the scheme
/// conserves it exactly in exact arithmetic.
#[test]
fn lossless_graded_cavity_conserves_energy_to_1e6() {
    let m = model(&cavity(0.05, 2000 + 5000, true));
    let g = m.grid.clone();
    let ranges = split_even(g.shape[0], 2);
    let mut b = CpuBackend::<f64>::new(&m, &ranges);
    let volume = |c: Component| -> Vec<f64> {
        let off = c.offset();
        let len = |a: usize, i: usize| {
            if off[a] > 0.0 {
                g.primal(a, i as isize)
            } else {
                g.dual(a, i, false)
            }
        };
        let [nx, ny, nz] = g.shape;
        let mut v = Vec::with_capacity(nx * ny * nz);
        for i in 0..nx {
            for j in 0..ny {
                for k in 0..nz {
                    v.push(len(0, i) * len(1, j) * len(2, k));
                }
            }
        }
        v
    };
    let dv: Vec<Vec<f64>> = Component::ALL.iter().map(|&c| volume(c)).collect();
    let end_of_source = m
        .sources
        .iter()
        .map(|s| s.waveform.end_time().unwrap())
        .fold(0.0, f64::max);
    let quiet_from = (end_of_source / g.dt).ceil() as usize + 1;
    assert!(quiet_from + 5000 < g.steps);
    let mut s = Stepper::new(&m, &mut b, &ranges);
    for _ in 0..quiet_from {
        s.step();
    }
    let energy = |s: &mut Stepper<CpuBackend<f64>>| {
        let e: Vec<Vec<f64>> = (0..3)
            .map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        let h0: Vec<Vec<f64>> = (3..6)
            .map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        s.step();
        let h1: Vec<Vec<f64>> = (3..6)
            .map(|c| field(&*s.backend, &m, Component::ALL[c]))
            .collect();
        let we: f64 = (0..3)
            .map(|c| e[c].iter().zip(&dv[c]).map(|(v, w)| v * v * w).sum::<f64>())
            .sum::<f64>()
            * EPS0
            * 0.5;
        let wh: f64 = (0..3)
            .map(|c| {
                h0[c]
                    .iter()
                    .zip(&h1[c])
                    .zip(&dv[3 + c])
                    .map(|((a, b), w)| a * b * w)
                    .sum::<f64>()
            })
            .sum::<f64>()
            * MU0
            * 0.5;
        we + wh
    };
    let w0 = energy(&mut s);
    assert!(w0 > 0.0);
    for _ in 0..5000 {
        s.step();
    }
    let w1 = energy(&mut s);
    let rel = (w1 - w0).abs() / w0;
    eprintln!("graded energy drift over 5000 steps: {rel:.2e}");
    // 1e-6 is the issue's bound; the invariant is exact for these weights, so f64 rounding
    // (~1e-13 per step) is all that remains. Weighting by the background cell instead misses
    // by ~1e-2 (the refined half of the cavity counts 8 times too much).
    assert!(rel < 1e-6, "energy drifted by {rel:.3e}");
}

/// A 1-D line along z (one periodic cell across x and y) at `cell` um, with a film of
/// epsilon 12 and 110 nm centred on z = 0.0137 um, refined to `fine` over the film when
/// given; a one-way plane wave from z = -2 and probes of Ex at z = -1 and z = 1.5.
fn film_scene(cell: f64, fine: Option<f64>, film: bool) -> String {
    let r = fine.map_or(String::new(), |f| {
        format!(
            r#"
[[refine]]
box = {{ center = [0.0, 0.0, 0.0137], size = [{cell}, {cell}, 0.2] }}
cell_size = [{cell}, {cell}, {f}]
"#
        )
    });
    // The incident run keeps the film as a vacuum object, so that both runs snap the mesh
    // to the same faces and share every node.
    let g = format!(
        r#"
[[geometry]]
shape = "box"
material = "{}"
center = [0.0, 0.0, 0.0137]
size = [10.0, 10.0, 0.11]
"#,
        if film { "film" } else { "vacuum" }
    );
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = {cell}
size = [{cell}, {cell}, 6.0]
duration = 6.0e-14
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
z_min = {{ type = "pml", cells = 20 }}
z_max = {{ type = "pml", cells = 20 }}
[materials]
film = {{ epsilon = 12.0 }}
{g}
{r}
[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ex"
position = -2.0
waveform = {{ type = "gaussian", frequency = 2.2e14, bandwidth = 2.0e14 }}
[[monitor]]
type = "probe"
name = "before"
position = [0.0, 0.0, -1.0]
components = ["Ex"]
[[monitor]]
type = "probe"
name = "after"
position = [0.0, 0.0, 1.5]
components = ["Ex"]
"#
    )
}

/// |DFT|^2 of a record at `f` (no window: the pulses start and end at zero).
fn power(x: &[f64], dt: f64, f: f64) -> f64 {
    let (mut re, mut im) = (0.0, 0.0);
    for (i, v) in x.iter().enumerate() {
        let ph = 2.0 * PI * f * i as f64 * dt;
        re += v * ph.cos();
        im -= v * ph.sin();
    }
    re * re + im * im
}

/// The Airy (transfer-matrix) reflectance and transmittance of a film of index `n`, thickness
/// `d` (m), in vacuum at normal incidence.
fn airy(n: f64, d: f64, f: f64) -> (f64, f64) {
    use num_complex::Complex64 as C;
    let r12 = (1.0 - n) / (1.0 + n);
    let delta = 2.0 * PI * n * d * f / C0;
    let ph = C::from_polar(1.0, 2.0 * delta);
    let r = r12 * (1.0 - ph) / (1.0 - r12 * r12 * ph);
    let t = (1.0 - r12 * r12) * C::from_polar(1.0, delta) / (1.0 - r12 * r12 * ph);
    (r.norm_sqr(), t.norm_sqr())
}

/// (R, T) spectra of the film on the mesh of `cell` / `fine`, from the probes of a run with
/// and without the film on the same mesh (so the mesh's own transitions cancel).
fn film_rt(cell: f64, fine: Option<f64>, freqs: &[f64]) -> (Vec<f64>, Vec<f64>, usize) {
    let inc = model(&film_scene(cell, fine, false));
    let tot = model(&film_scene(cell, fine, true));
    assert_eq!(inc.grid, tot.grid);
    let cells = tot.grid.shape[2];
    let (pi, _) = run_cpu::<f64>(&inc, 1);
    let (pt, _) = run_cpu::<f64>(&tot, 1);
    let dt = tot.grid.dt;
    let refl: Vec<f64> = pt[0].iter().zip(&pi[0]).map(|(t, i)| t - i).collect();
    let r = freqs
        .iter()
        .map(|&f| power(&refl, dt, f) / power(&pi[0], dt, f))
        .collect();
    let t = freqs
        .iter()
        .map(|&f| power(&pt[1], dt, f) / power(&pi[1], dt, f))
        .collect();
    (r, t, cells)
}

/// (c) A high-index film (epsilon 12, 110 nm) refined at 5 nm on a 25 nm background: R and T
/// within 0.01 of the Airy formula (the issue's bound) with at most 40 % of the cells of a
/// uniform 5 nm grid, within 0.005 of that uniform fine grid's own result, and closer to Airy
/// than the coarse uniform 25 nm grid.
#[test]
fn refined_film_matches_airy_with_a_fraction_of_the_cells() {
    let freqs: Vec<f64> = (0..7).map(|i| 1.6e14 + 0.2e14 * i as f64).collect();
    let (rg, tg, cells_g) = film_rt(0.025, Some(0.005), &freqs);
    let (rf, tf, cells_f) = film_rt(0.005, None, &freqs);
    let (rc, tc, _) = film_rt(0.025, None, &freqs);
    eprintln!("cells: graded {cells_g}, uniform 5 nm {cells_f}");
    // Along the line: 40 % of the fine grid's cells (the transverse axes have one cell each
    // in all three runs).
    assert!(cells_g as f64 <= 0.4 * cells_f as f64);
    let (mut worst_g, mut worst_c) = (0.0f64, 0.0f64);
    for (k, &f) in freqs.iter().enumerate() {
        let (r, t) = airy(12f64.sqrt(), 0.11e-6, f);
        eprintln!(
            "f = {f:.2e}: Airy R {r:.4} T {t:.4}; graded R {:.4} T {:.4}; uniform 5 nm R {:.4} T {:.4}; uniform 25 nm R {:.4} T {:.4}",
            rg[k], tg[k], rf[k], tf[k], rc[k], tc[k]
        );
        // 0.01: the issue's bound for the refined film. The fine cells resolve the film's
        // wavelength (0.39 um at the top frequency) with 78 cells, so the grid's dispersion
        // moves R and T by ~1e-3; the remainder is the one-way source's and the PML's few
        // 1e-4 and the smoothing of the film faces, which lie off the nodes by 0.3 cell.
        assert!(
            (tg[k] - t).abs() < 0.01 && (rg[k] - r).abs() < 0.01,
            "f = {f:.2e}"
        );
        // 0.005 of the uniform fine grid: both resolve the film alike; what differs is the
        // coarse cells outside it, where vacuum at 25 nm has > 50 cells per wavelength.
        assert!((tg[k] - tf[k]).abs() < 0.005, "f = {f:.2e}: T vs fine");
        worst_g = worst_g.max((tg[k] - t).abs().max((rg[k] - r).abs()));
        worst_c = worst_c.max((tc[k] - t).abs().max((rc[k] - r).abs()));
    }
    eprintln!("worst |error|: graded {worst_g:.2e}, coarse uniform {worst_c:.2e}");
    assert!(
        worst_g < worst_c,
        "graded {worst_g:.2e} not better than coarse uniform {worst_c:.2e}"
    );
}

/// A plane wave crossing from coarse to fine cells in vacuum (the refinement of the film
/// scene, without the film): what the mesh reflects, seen before it, against a run on the
/// uniform coarse grid. Below -40 dB of the incident pulse (the issue's bound for grading
/// 1.25; the refine box's faces are ratio-5 steps at most).
#[test]
fn a_grading_transition_in_vacuum_reflects_below_minus_40_db() {
    let graded = model(&film_scene(0.025, Some(0.005), false));
    let uniform = model(&film_scene(0.025, None, false));
    assert!(graded.grid.lines[2].is_some() && uniform.grid.is_uniform());
    let (pg, _) = run_cpu::<f64>(&graded, 1);
    let (pu, _) = run_cpu::<f64>(&uniform, 1);
    // The runs have different time steps: compare spectra at the band's frequencies.
    let freqs: Vec<f64> = (0..7).map(|i| 1.6e14 + 0.2e14 * i as f64).collect();
    for &f in &freqs {
        let a = power(&pg[0], graded.grid.dt, f) * graded.grid.dt.powi(2);
        let b = power(&pu[0], uniform.grid.dt, f) * uniform.grid.dt.powi(2);
        // |A - B| over |B| in amplitude bounds the reflected amplitude relative to the incident
        // one at that frequency (the spectra of the total field before the transition).
        let db = 20.0 * ((a.sqrt() - b.sqrt()).abs() / b.sqrt()).log10();
        eprintln!("f = {f:.2e}: transition {db:.1} dB");
        assert!(db < -40.0, "f = {f:.2e}: {db:.1} dB");
    }
}

/// (e) 1 and 3 slabs give the same fields bit for bit on a graded mesh with a PML, a
/// dielectric and a Drude material: the per-plane 1/dx comes from the global x index.
#[test]
fn graded_mesh_is_identical_on_one_and_three_slabs() {
    let text = graded_scene();
    let m = model(&text);
    assert!(m.grid.lines.iter().all(|l| l.is_some()));
    let (p1, f1) = run_cpu::<f32>(&m, 1);
    let (p3, f3) = run_cpu::<f32>(&m, 3);
    assert!(max_abs(&f1[0]) > 0.0);
    assert_eq!(p1, p3);
    assert_eq!(f1, f3);
}

/// A graded 3-D scene: PML, glass, a Drude sphere, a refine box, a dipole and a probe.
fn graded_scene() -> String {
    r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.6, 1.4, 1.2]
steps = 80
precision = "f32"
[boundaries]
default = { type = "pml", cells = 6 }
[materials]
glass = { epsilon = 2.25 }
metal = { epsilon = 1.0, drude = [{ frequency = 1.0e15, damping = 1.0e14 }] }
[[geometry]]
shape = "box"
material = "glass"
center = [0.05, 0.0, 0.0]
size = [0.3, 0.25, 0.2]
[[geometry]]
shape = "sphere"
material = "metal"
center = [-0.2, 0.1, 0.0]
radius = 0.08
[[refine]]
box = { center = [0.0, 0.0, 0.0], size = [0.5, 0.4, 0.3] }
cell_size = 0.025
[[source]]
type = "dipole"
component = "Ez"
position = [0.21, -0.13, 0.05]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 3.0e14 }
[[monitor]]
type = "probe"
name = "p"
position = [-0.05, 0.07, 0.03]
components = ["Ex", "Ez", "Hy"]
"#
    .to_string()
}

/// (d) The CPML on a graded mesh: the records of a refined square (2-D: one periodic cell
/// along z, PML on the x and y faces) inside a 10-cell PML against a domain large enough that
/// nothing reflected reaches a probe within the record, on the same interior mesh. Below
/// -60 dB on every component.
///
/// The graded fill of an interval depends on its length (a plateau lowered to fit it), so the
/// interval from the refinement to the PML must be the same in both domains: the reference
/// holds a vacuum box whose faces lie on the small domain's inner PML faces (+-0.5 um), whose
/// extents are snap points of the mesh. Between the refinement and those faces the two
/// domains then fill the same interval with the same limits, and beyond them the reference
/// has a whole number of background cells where the small domain has its PML. Vacuum in
/// vacuum paints and smooths to exactly 1, so the box changes nothing else.
#[test]
fn cpml_reflection_on_a_graded_mesh_is_below_minus_60_db() {
    let scene = |size: f64, extra: &str| {
        format!(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [{size}, {size}, 0.05]
duration = 1.66e-14
precision = "f64"
[boundaries]
default = {{ type = "pml", cells = 10 }}
z_min = {{ type = "periodic" }}
z_max = {{ type = "periodic" }}
[[refine]]
box = {{ center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.05] }}
cell_size = [0.025, 0.025, 0.05]
[[source]]
type = "dipole"
component = "Ez"
position = [0.05, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 2.3e14, bandwidth = 2.3e14 }}
[[source]]
type = "dipole"
component = "Ex"
position = [-0.1, 0.05, 0.0]
waveform = {{ type = "gaussian", frequency = 2.3e14, bandwidth = 2.3e14 }}
[[monitor]]
type = "probe"
name = "p0"
position = [0.35, 0.2, 0.0]
components = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"]
[[monitor]]
type = "probe"
name = "p1"
position = [-0.3, -0.35, 0.0]
components = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"]
{extra}
"#
        )
    };
    let small = model(&scene(2.0, ""));
    // The reference's own PML must be farther than the record's travel from every
    // source-face-probe path: mirrored across the inner face, |s + p| <= 0.45 um, plus 6
    // cells. A whole even number of background cells, so both grids share their nodes.
    let travel = C0 * small.grid.steps as f64 * small.grid.dt * 1e6;
    let inner = (travel + 0.3 + 0.45) / 2.0;
    let half_cells = ((inner + 0.5) / 0.05).ceil();
    let pin = "[[geometry]]\nshape = \"box\"\nmaterial = \"vacuum\"\ncenter = [0.0, 0.0, 0.0]\nsize = [1.0, 1.0, 0.05]";
    let big = model(&scene(2.0 * half_cells * 0.05, pin));
    assert_eq!(small.grid.dt, big.grid.dt);
    assert_eq!(small.grid.steps, big.grid.steps);
    // Both interiors are one mesh: the small grid's nodes are a run of the big grid's.
    for a in 0..2 {
        let s = small.grid.nodes(a);
        let b = big.grid.nodes(a);
        let first = b
            .iter()
            .position(|&x| (x - s[0]).abs() < 1e-15)
            .expect("the small domain's first node is a node of the big one");
        for (i, &x) in s.iter().enumerate() {
            assert!(
                (b[first + i] - x).abs() < 1e-15,
                "axis {a}: node {i} differs: {x} vs {}",
                b[first + i]
            );
        }
    }
    let (a, _) = run_cpu::<f64>(&small, 2);
    let (r, _) = run_cpu::<f64>(&big, 2);
    let mut worst = f64::MIN;
    for (k, (x, y)) in a.iter().zip(&r).enumerate() {
        let peak = max_abs(y);
        if peak == 0.0 {
            // Hx, Hy and Ez of the Ex source's TE field, and so on, vanish identically in
            // 2-D only for one polarisation; both are excited here, so nothing is zero.
            panic!("series {k} never excited");
        }
        let err = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max);
        worst = worst.max(20.0 * (err / peak).log10());
    }
    eprintln!("graded CPML reflection: {worst:.1} dB");
    // -60 dB: the uniform 10-cell CPML reaches -80 dB (tests/physics.rs); here the PML keeps
    // background cells and the wave leaving the refinement crosses the same mesh in both
    // domains, so only the PML's own reflection differs.
    assert!(worst < -60.0, "{worst:.1} dB");
}

/// Bad mesh input: each a clear error naming the key.
#[test]
fn bad_mesh_input_is_an_error_naming_the_key() {
    let base = |extra: &str, sim: &str| {
        format!(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.0, 1.0, 1.0]
steps = 10
{sim}
[boundaries]
default = {{ type = "pml", cells = 4 }}
{extra}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14 }}
"#
        )
    };
    let err = |text: String| match yee::scene::load_str(&text, "t.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    };
    let refine = |b: &str, c: &str| format!("[[refine]]\nbox = {b}\ncell_size = {c}\n");
    let inside = "{ center = [0.0, 0.0, 0.0], size = [0.2, 0.2, 0.2] }";
    let e = err(base(&refine(inside, "0.1"), ""));
    assert!(
        e.contains("refine[0].cell_size") && e.contains("larger than the background"),
        "{e}"
    );
    let e = err(base(&refine(inside, "-0.01"), ""));
    assert!(
        e.contains("refine[0].cell_size") && e.contains("positive"),
        "{e}"
    );
    // A box reaching past the domain is clipped, as geometry is (the geometry issue asked for
    // this: a box drawn wide for a layer was refused); one wholly outside is an error.
    let e = err(base(
        &refine(
            "{ center = [3.0, 0.0, 0.0], size = [0.2, 0.2, 0.2] }",
            "0.01",
        ),
        "",
    ));
    assert!(
        e.contains("refine[0].box") && e.contains("wholly outside the domain"),
        "{e}"
    );
    let past = refine(
        "{ center = [0.35, 0.0, 0.0], size = [0.6, 0.2, 0.2] }",
        "0.01",
    );
    if let Err(e) = yee::scene::load_str(&base(&past, ""), "t.toml") {
        panic!("a box reaching past the domain is clipped, not refused: {e}");
    }
    for g in ["1.0", "0.9", "2.5"] {
        let e = err(base(&refine(inside, "0.01"), &format!("grading = {g}")));
        assert!(
            e.contains("simulation.grading") && e.contains("(1, 2]"),
            "{e}"
        );
    }
    let e = err(base(&refine(inside, "0.01"), "cells_per_wavelength = 0"));
    assert!(e.contains("simulation.cells_per_wavelength"), "{e}");
    let e = err(base(
        &format!(
            "{}\n[[refine]]\nbox = {inside}\ncell_size = 0.01\nsize = 3",
            ""
        ),
        "",
    ));
    assert!(e.contains("size") && e.contains("unknown"), "{e}");
    // A box inside the PML along x only.
    let e = err(base(
        &refine(
            "{ center = [0.45, 0.0, 0.0], size = [0.08, 0.2, 0.2] }",
            "0.01",
        ),
        "",
    ));
    assert!(e.contains("refine[0].box") && e.contains("PML"), "{e}");
}

/// A scene without any mesh key resolves to a uniform grid, and `cells_per_wavelength` refines
/// only around objects that need it: a glass box at 10 cells per wavelength in the glass.
#[test]
fn cells_per_wavelength_refines_around_dense_objects_only() {
    let text = |extra: &str| {
        format!(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [2.0, 2.0, 2.0]
steps = 10
{extra}
[boundaries]
default = {{ type = "pml", cells = 6 }}
[materials]
glass = {{ epsilon = 9.0 }}
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [0.4, 0.4, 0.4]
[[source]]
type = "dipole"
component = "Ez"
position = [0.5, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 1.0e14 }}
"#
        )
    };
    assert!(model(&text("")).grid.is_uniform());
    let m = model(&text("cells_per_wavelength = 20"));
    let g = &m.grid;
    // f_max = 2e14 + 3.7 x 1e14 / 2.3548 = 3.57e14 Hz; in glass (n = 3) lambda = 0.28 um,
    // so 20 cells per wavelength ask for 14 nm cells inside the box.
    let f_max = 2.0e14 + 3.7 * 1.0e14 / 2.3548;
    let want = C0 / (f_max * 3.0 * 20.0);
    for a in 0..3 {
        assert!(g.lines[a].is_some());
        let mid = g.fractional_index(a, 0.0) as isize;
        assert!(g.primal(a, mid) <= want * (1.0 + 1e-9), "axis {a}");
        // The PML keeps its background cells.
        assert!((g.primal(a, 0) - 0.05e-6).abs() < 1e-15);
        assert!((g.primal(a, g.shape[a] as isize - 1) - 0.05e-6).abs() < 1e-15);
        // The box faces are nodes.
        for x in [-0.2e-6, 0.2e-6] {
            let f = g.fractional_index(a, x);
            assert!((f - f.round()).abs() < 1e-6, "axis {a}: face at index {f}");
        }
    }
    let dt = 0.99 * yee::model::Grid::courant_limit(g.min_cell());
    assert!((g.dt - dt).abs() < 1e-12 * dt);
}

/// The materials' pole checks use the refined mesh's time step: a Drude pole too fast for the
/// background cells' step (wp dt = 1.2 there, above the 1.1 the update resolves) is accepted
/// when refine boxes halve the cells, and refused on the uniform grid.
#[test]
fn pole_checks_use_the_refined_time_step() {
    let fast = graded_scene().replace("frequency = 1.0e15", "frequency = 2.0e15");
    let m = model(&fast);
    assert!(m.materials.any_dispersive());
    let uniform = fast.replace("[[refine]]", "[[ignored]]");
    let uniform = &uniform[..uniform.find("[[ignored]]").unwrap()];
    let uniform = format!("{uniform}{}", &fast[fast.find("[[source]]").unwrap()..]);
    match yee::scene::load_str(&uniform, "t.toml") {
        Ok(_) => panic!("the uniform grid accepted a pole it cannot resolve"),
        Err(e) => assert!(e.to_string().contains("drude[0].frequency"), "{e}"),
    }
}

/// A one-way plane-wave sheet on a node where the cell size changes (the far face of the film
/// scene's refinement, cells of 5 nm behind the sheet and larger in front): its backward
/// leakage at the band centre stays below -30 dB, the bound tests/plane_wave.rs holds uniform
/// sheets to. The electric sheet spreads over its node's dual cell and the magnetic one over
/// the primal cell behind it; the background cell for both would make the two currents
/// disagree by the cell ratio and leak far above that.
#[test]
fn a_one_way_sheet_on_graded_cells_stays_one_way() {
    let text = film_scene(0.025, Some(0.005), false)
        .replace("position = -2.0", "position = 0.3137")
        .replace(
            "size = [0.025, 0.025, 0.2] }",
            "size = [0.025, 0.025, 0.6] }",
        );
    let m = model(&text);
    let g = &m.grid;
    let s = &m.sources[0];
    let k = s.cells[2][0];
    // The sheet sits where the cells change: fine behind it, coarser in front.
    let (behind, front) = (g.primal(2, k as isize - 1), g.primal(2, k as isize));
    assert!(
        behind < 0.0051e-6 && front > 1.2 * behind,
        "{behind:e} {front:e}"
    );
    let (p, _) = run_cpu::<f64>(&m, 1);
    let f = 2.2e14;
    let back = power(&p[0], g.dt, f);
    let front = power(&p[1], g.dt, f);
    let db = 10.0 * (back / front).log10();
    eprintln!("graded sheet: backward leakage {db:.1} dB");
    assert!(db < -30.0, "backward leakage {db:.1} dB");
}

/// The cost of the graded update itself, not a check (run with `--ignored --nocapture`): the
/// same 128^3 (or `YEE_GRADED_BENCH_CELLS`^3) vacuum grid with a 10-cell PML stepped through the uniform path (scalar steps)
/// and through the graded one (node lines uniform in value, so per-cell steps of equal
/// value), alternately, f32 on the threads rayon has. Prints Mcells/s of each.
#[test]
#[ignore]
fn graded_update_speed_against_uniform() {
    // YEE_GRADED_BENCH_CELLS=256 for the issue's 256^3 (a power of two keeps the lines exact).
    let n: usize = std::env::var("YEE_GRADED_BENCH_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    let text = r#"
[simulation]
length_unit = "m"
cell_size = CELL
size = [2.0, 2.0, 2.0]
steps = 30
precision = "f32"
[boundaries]
default = { type = "pml", cells = 10 }
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.0e9, bandwidth = 1.0e9 }
"#
    .replace("CELL", &(2.0 / n as f64).to_string());
    let (u, g) = as_lines(&text);
    let threads = rayon::current_num_threads();
    let time = |m: &Model| {
        let ranges = split_even(m.grid.shape[0], threads);
        let mut b = CpuBackend::<f32>::new(m, &ranges);
        let mut s = Stepper::new(m, &mut b, &ranges);
        s.step();
        let t = std::time::Instant::now();
        for _ in 1..m.grid.steps {
            s.step();
        }
        m.grid.cells() as f64 * (m.grid.steps - 1) as f64 / t.elapsed().as_secs_f64() / 1e6
    };
    for round in 0..4 {
        let (a, b) = (time(&u), time(&g));
        eprintln!(
            "round {round}: uniform {a:.1} Mcells/s, graded {b:.1} Mcells/s ({:+.1} %)",
            100.0 * (b / a - 1.0)
        );
    }
}

/// A TF/SF box in background cells of a graded mesh (a refine box off it along every axis, as
/// a tensor-product mesh refines a coordinate range across the whole domain, its faces on
/// background planes): in vacuum the scattered-field region stays dark at round-off, below
/// -250 dB of the incident peak inside, as on a uniform grid; and a refine box over the TF/SF
/// box is refused naming the source's box. In vacuum the 3-D update cancels the incident
/// field exactly wherever the 1-D incident grid has the 3-D grid's cells, so nothing but
/// rounding reaches the scattered-field region, refinement or not (measured -313 to -315 dB,
/// f64; -250 dB leaves 60 dB for the rounding's growth over other step counts and orders of
/// summation, and is still far below any leak of a discretisation mismatch, which scales with
/// the mismatch rather than with the machine epsilon).
///
/// Keeping the refine box off the TF/SF box is not enough by itself: the graded fill spreads
/// the remainder of each interval between fixed nodes over its plateau, so every cell from
/// the PML to the refinement's face would be a little under the background cell. A vacuum
/// box around the TF/SF box and its two-cell margin (faces on background planes) adds fixed
/// nodes there: the interval it spans is a whole number of background cells, and the
/// transition to the refinement fits in the 0.2 um between its faces and the refine box's.
#[test]
fn tfsf_in_background_cells_of_a_graded_mesh() {
    let text = |refine_center: &str| {
        format!(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [2.0, 2.6, 2.6]
duration = 2.5e-14
precision = "f64"
[boundaries]
default = {{ type = "pml", cells = 8 }}
[[refine]]
box = {{ center = {refine_center}, size = [0.2, 0.2, 0.2] }}
cell_size = 0.025
[[geometry]]
shape = "box"
material = "vacuum"
center = [-0.225, 0.0, 0.0]
size = [0.75, 0.8, 0.8]
[[source]]
type = "tfsf"
box = {{ center = [-0.25, 0.0, 0.0], size = [0.6, 0.6, 0.6] }}
direction = "+x"
polarization = "Ez"
waveform = {{ type = "gaussian", frequency = 2.5e14, bandwidth = 2.0e14 }}
[[monitor]]
type = "probe"
name = "inside"
position = [-0.25, 0.05, 0.05]
components = ["Ez"]
[[monitor]]
type = "probe"
name = "outside"
position = [0.45, 0.7, 0.7]
components = ["Ez"]
[[monitor]]
type = "probe"
name = "behind"
position = [-0.8, 0.1, 0.0]
components = ["Ez"]
"#
        )
    };
    let m = model(&text("[0.45, 0.7, 0.7]"));
    assert!(m.grid.lines.iter().all(|l| l.is_some()) && m.tfsf.is_some());
    // The outside probe is in the refinement: the mesh there is fine.
    for a in 0..3 {
        let x = [0.45e-6, 0.7e-6, 0.7e-6][a];
        let i = m.grid.fractional_index(a, x) as isize;
        assert!(m.grid.primal(a, i) < 0.026e-6, "axis {a}");
    }
    let (p, _) = run_cpu::<f64>(&m, 2);
    let peak = max_abs(&p[0]);
    assert!(
        peak > 0.5,
        "the incident wave reaches the probe inside: {peak}"
    );
    for (name, s) in [("outside (in the refinement)", &p[1]), ("behind", &p[2])] {
        let db = 20.0 * (max_abs(s) / peak).log10();
        eprintln!("TF/SF on a graded mesh: {name} {db:.1} dB");
        assert!(db < -250.0, "{name}: {db:.1} dB");
    }
    match yee::scene::load_str(&text("[-0.25, 0.0, 0.0]"), "t.toml") {
        Ok(_) => panic!("a refine box over the TF/SF box was accepted"),
        Err(e) => assert!(e.to_string().contains("source[0].box"), "{e}"),
    }
}

/// A plane wave along z in a cell periodic along x and y, with a flux plane across it; with
/// `refine`, the x and y axes are graded (0.0125 um cells in a 0.1 um strip, the 0.05 um
/// background elsewhere), z stays uniform.
fn plane_wave_flux_scene(refine: bool) -> String {
    let refine = if refine {
        r#"
[[refine]]
box = { center = [0.0, 0.0, 0.0], size = [0.1, 0.1, 4.0] }
cell_size = [0.0125, 0.0125, 0.05]
"#
    } else {
        ""
    };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [0.6, 0.6, 4.0]
steps = 1500
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
z_min = {{ type = "pml", cells = 10 }}
z_max = {{ type = "pml", cells = 10 }}
[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ex"
position = -1.0
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 1.5e14 }}
[[monitor]]
type = "flux"
name = "through"
plane = {{ z = 1.0 }}
frequencies = {{ min = 1.5e14, max = 2.5e14, count = 5 }}
{refine}
"#
    )
}

#[test]
fn a_flux_plane_across_graded_axes_weighs_each_cell_by_its_area() {
    let power = |refine: bool| {
        let m = model(&plane_wave_flux_scene(refine));
        assert_eq!(
            [0, 1, 2].map(|a| m.grid.lines[a].is_some()),
            [refine, refine, false]
        );
        let ranges = split_even(m.grid.shape[0], 1);
        let mut b = CpuBackend::<f64>::new(&m, &ranges);
        {
            let mut s = Stepper::new(&m, &mut b, &ranges);
            for n in 0..m.grid.steps {
                s.step();
                s.backend.accumulate_flux(n + 1, m.grid.dt);
            }
        }
        use yee::backend::Backend;
        (b.flux_dft(0).expect("DFTs").power(), m.grid.dt)
    };
    let (uniform, _) = power(false);
    let (graded, dt) = power(true);
    for (u, g) in uniform.iter().zip(&graded) {
        let r = g / u;
        eprintln!("graded / uniform flux {r:.7} (dt {dt:.3e})");
        // The wave stays uniform across x and y on either mesh (the transverse curls of a
        // field constant across the cell vanish whatever the cell sizes), and z is the same
        // uniform axis: the two spectra differ only by the time steps (the graded mesh's is
        // 4x smaller, which changes the z dispersion a little: measured 1e-5. Weighing every
        // sample by the background cell instead of its own would count each fine cell as 4 to
        // 16 times its area: off by tens of percent.
        assert!((r - 1.0).abs() < 1e-4, "graded / uniform = {r:.6}");
    }
}
