//! Closed flux boxes and far-field boxes against a small dipole's analytic radiation: the
//! pattern sin^2(theta), the Larmor power, the box's flux equal to the far field's integral and
//! independent of the box's size, zero net power through a box around no source, and 1 vs 3
//! slabs bit for bit.

mod common;

use common::*;
use std::f64::consts::PI;
use yee::backend::cpu::CpuBackend;
use yee::backend::Backend;
use yee::decomp::split_even;
use yee::far_field::{project, Geometry, Pattern};
use yee::flux::FluxDft;
use yee::model::{Model, C0, ETA0};
use yee::run::Stepper;

const F0: f64 = 3.0e14;

/// A z dipole at the origin (an Ez edge centred at z = 0.025 um, so the Ez node straddles the
/// origin) in a 48^3 f64 grid with a 10-cell CPML, 20 cells per wavelength at F0; `monitors`
/// appended.
fn dipole_scene(monitors: &str) -> String {
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.05
size = [2.4, 2.4, 2.4]
duration = 6.0e-14
precision = "f64"
[boundaries]
default = {{ type = "pml", cells = 10 }}
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.025]
amplitude = 1.0e12
waveform = {{ type = "gaussian", frequency = {F0}, bandwidth = {F0} }}
{monitors}
"#
    )
}

fn flux_box(name: &str, center: [f64; 3], side: f64) -> String {
    format!(
        r#"
[[monitor]]
type = "flux"
name = "{name}"
box = {{ center = {center:?}, size = [{side}, {side}, {side}] }}
frequencies = {{ min = 2.0e14, max = 4.0e14, count = 3 }}
"#
    )
}

const FAR: &str = r#"
[[monitor]]
type = "far_field"
name = "ff"
box = { center = [0.0, 0.0, 0.0], size = [0.7, 0.7, 0.7] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
theta = { min = 0.0, max = 180.0, count = 37 }
phi = { min = 0.0, max = 360.0, count = 73 }
"#;

/// Run `model` on `slabs` CPU slabs, accumulating the surface DFTs every step as the time loop
/// does; returns every monitor's DFTs.
fn run(model: &Model, slabs: usize) -> Vec<FluxDft> {
    let ranges = split_even(model.grid.shape[0], slabs);
    let mut b = CpuBackend::<f64>::new(model, &ranges);
    {
        let mut s = Stepper::new(model, &mut b, &ranges);
        for n in 0..model.grid.steps {
            s.step();
            s.backend.accumulate_flux(n + 1, model.grid.dt);
        }
    }
    (0..model.fluxes.len())
        .map(|i| b.flux_dft(i).expect("DFTs"))
        .collect()
}

/// The DFT of the dipole's current moment J dV (A m), J^(n+1/2) at (n + 1/2) dt.
fn moment(model: &Model, f: f64) -> f64 {
    let src = &model.sources[0];
    let dt = model.grid.dt;
    let (mut re, mut im) = (0.0, 0.0);
    for n in 0..model.grid.steps {
        let t = (n as f64 + 0.5) * dt;
        let j = src.amplitude * src.waveform.value(t);
        re += j * (2.0 * PI * f * t).cos() * dt;
        im -= j * (2.0 * PI * f * t).sin() * dt;
    }
    // dV: the source cell's volume (on the graded test's mesh the dipole sits in the refined
    // cubes, the smallest cells).
    re.hypot(im) * model.grid.min_cell().iter().product::<f64>()
}

fn pattern(model: &Model, dft: &FluxDft) -> Pattern {
    let ff = model
        .fluxes
        .iter()
        .find_map(|f| f.far_field.clone())
        .unwrap();
    project(
        &Geometry::of(&model.grid),
        &dft.patches,
        &model.fluxes[1].frequencies,
        &ff.theta,
        &ff.phi,
    )
}

#[test]
fn dipole_pattern_is_sin_squared_and_its_integral_is_the_box_flux_and_the_larmor_power() {
    let m = model(&dipole_scene(&format!(
        "{}{FAR}",
        flux_box("box", [0.0, 0.0, 0.0], 0.8)
    )));
    let dfts = run(&m, 2);
    let flux = dfts[0].power();
    let t0 = std::time::Instant::now();
    let p = pattern(&m, &dfts[1]);
    eprintln!(
        "projection of 37 x 73 angles x 3 frequencies: {:?}",
        t0.elapsed()
    );
    let sphere = p.total_power();
    let far_flux = dfts[1].power();
    let (nt, np) = (p.theta.len(), p.phi.len());
    for (q, &f) in p.frequency.iter().enumerate() {
        let k = 2.0 * PI * f / C0;
        let larmor = ETA0 * k * k * moment(&m, f).powi(2) / (6.0 * PI);
        let peak = (0..nt * np)
            .map(|i| p.intensity[q * nt * np + i])
            .fold(0.0, f64::max);
        // The pattern against sin^2(theta) at the same peak: a current element a twentieth of
        // a wavelength long radiates sin^2(theta) up to (k dz)^2 / 40 (0.2 %: the pattern of a
        // uniform element of length dz); what remains is the lattice's anisotropic dispersion
        // across the 0.35 um from the dipole to the faces (phase errors of (k dx)^2 / 24 ~ 2 %
        // of k r ~ 2, so ~0.05 rad, entering |E|^2 at second order) and the CPML's reflections
        // (1e-3). 2 % of the peak bounds them and fails a pattern with the wrong shape or the
        // Yee offsets of the samples ignored (the half-cell shift moves the pattern by k dx / 2
        // rad in phase across the box, several percent in the cross terms).
        let mut worst: f64 = 0.0;
        let mut cross: f64 = 0.0;
        for t in 0..nt {
            let s2 = (p.theta[t] * PI / 180.0).sin().powi(2);
            for ph in 0..np {
                let i = (q * nt + t) * np + ph;
                worst = worst.max((p.intensity[i] / peak - s2).abs());
                cross = cross.max(p.e_phi[i].norm_sqr() / ETA0 / peak);
            }
        }
        let ratio_flux = sphere[q] / flux[q];
        let ratio_own = sphere[q] / far_flux[q];
        let ratio_larmor = sphere[q] / larmor;
        let ratio_box = flux[q] / larmor;
        eprintln!(
            "f = {f:.2e}: pattern vs sin^2 {worst:.2e} of the peak, E_phi^2 {cross:.1e}; sphere / flux box {ratio_flux:.5}, / far-field box flux {ratio_own:.5}, / Larmor {ratio_larmor:.5}; flux box / Larmor {ratio_box:.5}"
        );
        assert!(
            worst < 0.02,
            "pattern off sin^2 by {worst:.3e} at {f:.2e} Hz"
        );
        // A z dipole radiates no E_phi; 1e-3 of the peak is the lattice's fourfold anisotropy
        // at most.
        assert!(cross < 1e-3, "E_phi^2 / peak = {cross:.2e}");
        // The sphere integral (trapezoid over 5 degree steps: the integrand is a smooth
        // trigonometric polynomial, integrated to 1e-4) against the flux through the boxes:
        // both are quadratures of the same radiated power, the far field's taking it through
        // free space from the box's surface currents (measured within 0.5 %). Against Larmor,
        // the lattice radiates more than the continuum by an O((k dx)^2) share
        // (tests/references.rs: 0.058 (k dx)^2, 1 % at 4e14 Hz) and the CPML's reflections
        // change the dipole's work a little: measured 0.3, 1.4 and 1.6 % at 2, 3 and 4e14 Hz.
        // 2 % is the issue's tolerance; a missing factor (2, pi, eta0, the area) or a lost
        // face is off at order 1 or by a sixth.
        for (what, r) in [
            ("flux box", ratio_flux),
            ("far-field box flux", ratio_own),
            ("Larmor", ratio_larmor),
        ] {
            assert!(
                (r - 1.0).abs() < 0.02,
                "sphere integral / {what} = {r:.5} at {f:.2e} Hz"
            );
        }
    }
}

#[test]
fn a_closed_box_has_zero_net_power_around_no_source_and_the_same_power_at_any_size() {
    let monitors = [
        flux_box("small", [0.0, 0.0, 0.0], 0.4),
        flux_box("large", [0.0, 0.0, 0.0], 1.0),
        // Beside the dipole, not around it: what flows in flows out.
        flux_box("empty", [0.3, 0.2, 0.0], 0.3),
    ]
    .concat();
    let m = model(&dipole_scene(&monitors));
    let dfts = run(&m, 1);
    let [small, large, empty] = [0, 1, 2].map(|i| dfts[i].power());
    for q in 0..3 {
        // What crosses the empty box's faces one way: the sum of the faces' magnitudes.
        let gross: f64 = dfts[2].patches.iter().map(|p| p.power()[q].abs()).sum();
        let r = large[q] / small[q];
        eprintln!(
            "f {q}: small {:.6e}, large {:.6e} (ratio {r:.6}); empty box net {:.3e} of gross {:.3e}",
            small[q], large[q], empty[q], gross
        );
        // Vacuum between the boxes and no loss, so the same power crosses both. E and H are
        // combined at the same instant and each face is integrated by the trapezoid rule
        // between E nodes, which makes the box's flux a sum of the lattice's own Poynting
        // divergence over the cells inside: it telescopes, and the two boxes differ only by
        // the time discretisation's residue between them, measured 1e-6. 1e-4 leaves room and
        // fails a box that counts an edge twice or misses one (an edge strip carries 1/8 to
        // 1/20 of a face's power here, percent of the total).
        assert!((r - 1.0).abs() < 1e-4, "large / small box = {r:.7}");
        // A box around no source: what flows in flows out (measured 1e-8 of what crosses the
        // faces); a wrong sign or weight on any face leaves percent.
        assert!(
            empty[q].abs() < 1e-5 * gross,
            "empty box nets {:.3e} of {gross:.3e}",
            empty[q]
        );
        assert!(gross > 0.0);
    }
}

#[test]
fn flux_and_far_field_boxes_are_identical_on_one_and_three_slabs() {
    let m = model(&dipole_scene(&format!(
        "{}{FAR}",
        flux_box("box", [0.05, -0.1, 0.0], 0.8)
    )));
    assert_eq!(run(&m, 1), run(&m, 3), "every surface DFT, bit for bit");
}

#[test]
fn an_object_reaching_outside_a_far_field_box_is_warned_about() {
    let glass = |center: &str| {
        format!(
            r#"
[materials]
glass = {{ epsilon = 2.25 }}
[[geometry]]
shape = "sphere"
material = "glass"
center = {center}
radius = 0.1
"#
        )
    };
    let warnings = |text: String| {
        let (_, w) = yee::scene::load_str(&text, "s.toml").expect("a valid scene");
        w.into_iter()
            .filter(|w| w.contains("monitor[0].box"))
            .collect::<Vec<_>>()
    };
    // The scene's tables come before its [[source]]: put the materials ahead of it.
    let scene = |extra: String| {
        let base = dipole_scene(FAR);
        let at = base.find("[[source]]").unwrap();
        format!("{}{extra}\n{}", &base[..at], &base[at..])
    };
    let inside = warnings(scene(glass("[0.2, 0.0, 0.0]")));
    assert!(inside.is_empty(), "{inside:?}");
    let outside = warnings(scene(glass("[0.4, 0.0, 0.0]")));
    assert_eq!(outside.len(), 1, "{outside:?}");
    assert!(outside[0].contains("vacuum") && outside[0].contains("[0.4, 0, 0]"));
}

/// Cells of 0.025 um within 0.15 um of the dipole, graded (ratio 1.25) out to the 0.05 um
/// background: every face of a box around it has graded in-plane axes.
const REFINE: &str = r#"
[[refine]]
box = { center = [0.0, 0.0, 0.0], size = [0.3, 0.3, 0.3] }
cell_size = 0.025
"#;

#[test]
fn on_a_graded_mesh_boxes_and_far_fields_weigh_each_cell_by_its_size() {
    let monitors = [
        flux_box("small", [0.0, 0.0, 0.0], 0.5),
        flux_box("large", [0.0, 0.0, 0.0], 1.0),
        flux_box("empty", [0.45, 0.3, 0.0], 0.3),
    ]
    .concat();
    let m = model(&dipole_scene(&format!("{monitors}{FAR}{REFINE}")));
    assert!(
        m.grid.lines.iter().all(|l| l.is_some()),
        "every axis graded"
    );
    let dfts = run(&m, 1);
    let [small, large, empty] = [0, 1, 2].map(|i| dfts[i].power());
    let p = pattern(&m, &dfts[3]);
    let sphere = p.total_power();
    let (nt, np) = (p.theta.len(), p.phi.len());
    for (q, &f) in p.frequency.iter().enumerate() {
        let k = 2.0 * PI * f / C0;
        let larmor = ETA0 * k * k * moment(&m, f).powi(2) / (6.0 * PI);
        let gross: f64 = dfts[2].patches.iter().map(|p| p.power()[q].abs()).sum();
        let peak = (0..nt * np)
            .map(|i| p.intensity[q * nt * np + i])
            .fold(0.0, f64::max);
        let worst = (0..nt)
            .flat_map(|t| (0..np).map(move |ph| (t, ph)))
            .map(|(t, ph)| {
                let s2 = (p.theta[t] * PI / 180.0).sin().powi(2);
                (p.intensity[(q * nt + t) * np + ph] / peak - s2).abs()
            })
            .fold(0.0, f64::max);
        eprintln!(
            "f = {f:.2e}: large / small {:.6}, empty net {:.2e} of gross {gross:.2e}, small / Larmor {:.5}, sphere / far-field box flux {:.5}, sphere / Larmor {:.5}, pattern vs sin^2 {worst:.2e}",
            large[q] / small[q],
            empty[q],
            small[q] / larmor,
            sphere[q] / dfts[3].power()[q],
            sphere[q] / larmor
        );
        // The bounds of the uniform test above, for the same reasons; a box whose faces took
        // one background cell per sample (the weights of a uniform grid) would count the
        // refined strips twice to four times over and miss by tens of percent, and samples at
        // uniform positions would shift the pattern's phase across the box. The pattern's
        // shape: measured 0.26 %, 0.49 % and 2.6 % of the peak at 2, 3 and 4e14 Hz, the last a
        // fourfold ripple (low along the axes at theta = 90, exact on the diagonals): the
        // lattice's own field, since the same projection on uniform values reproduces the
        // uniform pattern to 1e-14 (the test below); at 4e14 Hz the background has 15 cells
        // per wavelength and the refined cube's faces and gradings are seen along the axes
        // only. 3 % at the top frequency, 1 % below it; sin^2 itself against a wrong
        // quadrature or phase is off by far more.
        let bound = if f > 3.5e14 { 0.03 } else { 0.01 };
        assert!(worst < bound, "pattern off sin^2 by {worst:.3e}");
        for (what, r) in [
            ("small box / Larmor", small[q] / larmor),
            (
                "sphere / far-field box flux",
                sphere[q] / dfts[3].power()[q],
            ),
            ("sphere / Larmor", sphere[q] / larmor),
        ] {
            assert!((r - 1.0).abs() < 0.02, "{what} = {r:.5} at {f:.2e} Hz");
        }
        // Size independence and the empty box: each cell weighed by its own face area keeps
        // the lattice's Poynting balance, so what held to 1e-6 and 1e-8 on the uniform grid
        // holds to the same bounds here.
        let r = large[q] / small[q];
        assert!((r - 1.0).abs() < 1e-4, "large / small box = {r:.7}");
        assert!(
            empty[q].abs() < 1e-5 * gross,
            "empty box nets {:.3e} of {gross:.3e}",
            empty[q]
        );
    }
}

#[test]
fn graded_quadrature_on_uniform_lines_reproduces_the_uniform_box_and_pattern() {
    // The same grid given as explicit node lines origin + i cell: every graded path of the
    // monitors (per-cell weights, the interpolation of H, sample coordinates, the far field's
    // per-sample phases instead of Horner's rule) runs on uniform values. The fields agree to
    // rounding (the graded update takes 1/delta from the lines, equal to the cell to 1 ulp),
    // so spectra and patterns must agree to 1e-9: a weight or coordinate of the graded
    // formulas off by a cell or a half cell would be off by percent.
    let uniform = model(&dipole_scene(&format!(
        "{}{FAR}",
        flux_box("box", [0.05, -0.1, 0.0], 0.8)
    )));
    let mut graded = uniform.clone();
    for a in 0..3 {
        let g = &graded.grid;
        let l: Vec<f64> = (0..=g.shape[a])
            .map(|i| g.origin[a] + i as f64 * g.cell[a])
            .collect();
        graded.grid.lines[a] = Some(l);
    }
    graded.boundaries = yee::model::Boundaries::on_grid(graded.boundaries.faces, &graded.grid);
    let (du, dg) = (run(&uniform, 1), run(&graded, 1));
    for i in 0..2 {
        let (pu, pg) = (du[i].power(), dg[i].power());
        for (a, b) in pu.iter().zip(&pg) {
            assert!(
                (a - b).abs() < 1e-9 * a.abs(),
                "monitor {i}: {a:e} vs {b:e}"
            );
        }
    }
    let (fu, fg) = (pattern(&uniform, &du[1]), pattern(&graded, &dg[1]));
    let peak = fu.intensity.iter().fold(0.0, |m: f64, &v| m.max(v));
    let worst = fu
        .intensity
        .iter()
        .zip(&fg.intensity)
        .map(|(a, b)| (a - b).abs() / peak)
        .fold(0.0, f64::max);
    eprintln!("pattern on uniform lines vs uniform: {worst:.2e} of the peak");
    assert!(worst < 1e-9, "pattern differs by {worst:.2e} of the peak");
}
