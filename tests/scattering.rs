//! Scattering against the Mie series (`tests/common/mie.rs`): a TF/SF plane wave on a sphere,
//! cross-sections from closed flux boxes, and the radar cross-section from the far field.
//!
//! The scattering cross-section is the net outward power through a box around the TF/SF box
//! (only scattered field flows there) over the incident intensity; the absorption
//! cross-section the net inward power through a box inside the total-field region, around the
//! sphere. yee writes both as `/flux/<name>/cross_section`, with `incident_intensity` in the
//! same DFT normalisation as `power`.

mod common;

use common::mie::{efficiencies, rcs, Sphere};
use num_complex::Complex64;
use std::f64::consts::PI;

const C0: f64 = 299_792_458.0;

/// A sphere of `radius` um made of `material` (a `[materials]` entry named `sphere`), lit by a
/// +z, Ex plane wave from a TF/SF box, with a scattering box outside the TF/SF box and an
/// absorption box inside it, at `cell` um; `far` adds a far-field box.
fn scene(
    cell: f64,
    radius: f64,
    material: &str,
    band: [f64; 2],
    count: usize,
    far: bool,
) -> String {
    let tfsf = 2.0 * radius + 8.0 * cell;
    let inner = 2.0 * radius + 4.0 * cell;
    let outer = tfsf + 4.0 * cell;
    let far_field = if far {
        format!(
            r#"
[[monitor]]
type = "far_field"
name = "ff"
box = {{ center = [0.0, 0.0, 0.0], size = [{o}, {o}, {o}] }}
frequencies = {{ min = {lo}, max = {hi}, count = {count} }}
theta = {{ min = 0.0, max = 180.0, count = 19 }}
phi = {{ min = 0.0, max = 90.0, count = 2 }}
"#,
            o = outer,
            lo = band[0],
            hi = band[1]
        )
    } else {
        String::new()
    };
    let size = outer + 2.0 * 4.0 * cell + 2.0 * 12.0 * cell;
    let f0 = (band[0] + band[1]) / 2.0;
    let bw = 1.2 * (band[1] - band[0]);
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = {cell}
size = [{size}, {size}, {size}]
duration = {duration:e}
precision = "f32"
[boundaries]
default = {{ type = "pml", cells = 12 }}
[materials]
{material}
[[geometry]]
shape = "sphere"
material = "sphere"
center = [0.0, 0.0, 0.0]
radius = {radius}
[[source]]
type = "tfsf"
box = {{ center = [0.0, 0.0, 0.0], size = [{tfsf}, {tfsf}, {tfsf}] }}
direction = "+z"
polarization = "Ex"
waveform = {{ type = "gaussian", frequency = {f0:e}, bandwidth = {bw:e} }}
amplitude = 1.0
[[monitor]]
type = "flux"
name = "scat"
box = {{ center = [0.0, 0.0, 0.0], size = [{outer}, {outer}, {outer}] }}
frequencies = {{ min = {lo:e}, max = {hi:e}, count = {count} }}
[[monitor]]
type = "flux"
name = "abs"
box = {{ center = [0.0, 0.0, 0.0], size = [{inner}, {inner}, {inner}] }}
frequencies = {{ min = {lo:e}, max = {hi:e}, count = {count} }}
{far_field}
"#,
        // 20 light-crossings of the domain: the sphere's field has rung down (from 20 to 40
        // crossings the efficiencies move by 1e-5 and the RCS by less than 0.01 dB).
        duration = 20.0 * size * 1e-6 / C0,
        lo = band[0],
        hi = band[1],
    )
}

/// A dielectric sphere (eps 2.25, radius 0.4 um) at 20 nm cells, size parameter 1.3 to 4:
/// Q_sca within 3 % of Mie (the issue's bound: smoothing places the surface to second order,
/// and at 23 cells per wavelength in the glass the grid's phase error is 3e-3).
#[test]
fn dielectric_sphere_scattering_matches_mie() {
    let (radius, cell) = (0.4, 0.02);
    let band = [1.5e14, 4.8e14];
    let text = scene(cell, radius, "sphere = { epsilon = 2.25 }", band, 12, false);
    let run = common::BinaryRun::new("mie-dielectric", &text);
    assert_glass_sphere_scatters_as_mie(&run, radius, 0.03, "dielectric sphere");
}

/// Q_sca of `run` (a glass sphere of `radius` um, n = 1.5) within `tol` of Mie at every
/// frequency; prints each and the worst relative error.
fn assert_glass_sphere_scatters_as_mie(run: &common::BinaryRun, radius: f64, tol: f64, what: &str) {
    let f = run.read("flux/scat/frequency");
    let sigma = run.read("flux/scat/cross_section");
    let area = PI * (radius * 1e-6).powi(2);
    let mut worst = 0.0f64;
    for (i, &f) in f.iter().enumerate() {
        let x = 2.0 * PI * f / C0 * radius * 1e-6;
        let (q_sca, _, _) = efficiencies(Sphere::Index(Complex64::new(1.5, 0.0)), x);
        let q = sigma[i] / area;
        eprintln!("f = {f:.3e} (x = {x:.2}): Q_sca {q:.4} vs Mie {q_sca:.4}");
        worst = worst.max((q / q_sca - 1.0).abs());
        assert!(
            (q / q_sca - 1.0).abs() < tol,
            "{what}, x = {x:.2}: {q} vs {q_sca}"
        );
    }
    eprintln!("{what}: worst relative error {worst:.2e}");
}

/// A curved dispersive surface gets the anisotropic average that a dielectric's does, through
/// series mixtures (`src/model/smoothing.rs`; before them it was staircased). A glass sphere
/// (radius 0.4 um, 40 nm cells: 10 per radius, where the staircase shows) with a Lorentz pole
/// far above the band (delta_epsilon 1e-4 at 1.5 PHz: eps within 2e-4 of 2.25 over the band)
/// against the same sphere of eps 2.25 without poles: Q_sca within 2e-4 at every frequency
/// (the pole's own share; measured 4.6e-6). The same dispersive sphere staircased differs from
/// it by up to 1.5e-2, so the bound tells smoothing from staircase; and the smoothed sphere is
/// within 2 % of Mie (measured 5.9e-3: the grid's phase error at 17 cells per wavelength in
/// the glass is about 6e-3).
#[test]
fn a_dispersive_sphere_is_smoothed_as_a_dielectric_one() {
    let (radius, cell) = (0.4, 0.04);
    let band = [1.5e14, 3.0e14];
    let plain = "sphere = { epsilon = 2.25 }";
    let lorentz = "sphere = { epsilon = 2.2499, lorentz = [{ delta_epsilon = 1.0e-4, frequency = 1.5e15, damping = 1.0e12 }] }";
    let q_sca = |material: &str, subpixel: bool, name: &str| {
        let mut text = scene(cell, radius, material, band, 12, false);
        if !subpixel {
            text = text.replace(
                "precision = \"f32\"",
                "precision = \"f32\"\nsubpixel = false",
            );
        }
        let run = common::BinaryRun::new(name, &text);
        let area = PI * (radius * 1e-6).powi(2);
        let f = run.read("flux/scat/frequency");
        let q: Vec<f64> = run
            .read("flux/scat/cross_section")
            .iter()
            .map(|s| s / area)
            .collect();
        (f, q)
    };
    let (f, dielectric) = q_sca(plain, true, "sphere-plain");
    let (_, smoothed) = q_sca(lorentz, true, "sphere-lorentz");
    let (_, staircased) = q_sca(lorentz, false, "sphere-lorentz-staircase");
    let (mut same, mut stair, mut mie) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..f.len() {
        let x = 2.0 * PI * f[i] / C0 * radius * 1e-6;
        let (want, _, _) = efficiencies(Sphere::Index(Complex64::new(1.5, 0.0)), x);
        eprintln!(
            "x = {x:.2}: Q_sca dispersive {:.5}, dielectric {:.5}, staircased {:.5}, Mie {want:.5}",
            smoothed[i], dielectric[i], staircased[i]
        );
        same = same.max((smoothed[i] / dielectric[i] - 1.0).abs());
        stair = stair.max((staircased[i] / dielectric[i] - 1.0).abs());
        mie = mie.max((smoothed[i] / want - 1.0).abs());
    }
    eprintln!("dispersive vs dielectric {same:.2e}; staircased vs dielectric {stair:.2e}; vs Mie {mie:.2e}");
    assert!(
        same < 2e-4,
        "smoothed dispersive sphere {same} from the dielectric one"
    );
    assert!(stair > 10.0 * same, "staircase {stair} should differ");
    assert!(mie < 0.02, "vs Mie {mie}");
}

/// The same glass sphere as an STL mesh: an icosphere of 5,120 triangles (about 5,000 faces,
/// as the geometry issue asks) written as binary STL and read by `shape = "mesh"`. Its facets
/// lie up to 0.3 % of the radius inside the sphere (the vertices are on it), which moves the
/// cross-section by less than a percent; the mesh is painted and smoothed from rays through it
/// (`docs/geometry.md`). Q_sca within 2 % of the Mie series of the sphere over ka 1.3 to 4, the
/// issue's bound; the worst error is printed (0.44 % when this was written, against 0.30 %
/// for the `sphere` shape on the same grid).
#[test]
fn stl_icosphere_scattering_matches_mie() {
    let (radius, cell) = (0.4, 0.02);
    let band = [1.5e14, 4.8e14];
    let dir = std::env::temp_dir().join(format!("yee-stl-mie-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stl = dir.join("ball.stl");
    let (v, f) = yee::model::trimesh::icosphere(radius, 4);
    let triangles: Vec<stl_io::Triangle> = f
        .iter()
        .map(|t| stl_io::Triangle {
            normal: stl_io::Normal::new([0.0; 3]),
            vertices: t.map(|i| stl_io::Vertex::new(v[i].map(|x| x as f32))),
        })
        .collect();
    stl_io::write_stl(&mut std::fs::File::create(&stl).unwrap(), triangles.iter()).unwrap();
    let text = scene(cell, radius, "sphere = { epsilon = 2.25 }", band, 12, false).replace(
        &format!("shape = \"sphere\"\nmaterial = \"sphere\"\ncenter = [0.0, 0.0, 0.0]\nradius = {radius}"),
        &format!("shape = \"mesh\"\nmaterial = \"sphere\"\nfile = \"{}\"", stl.display()),
    );
    assert!(text.contains("shape = \"mesh\""));
    let run = common::BinaryRun::new("mie-stl", &text);
    assert_glass_sphere_scatters_as_mie(&run, radius, 0.02, "STL icosphere");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gold nanosphere (`library = "Au"`, radius 40 nm) at 1.6 nm cells (25 per radius; the
/// issue asks for at most 2 nm), lit over 400-800 nm (`scenes/gold_sphere.toml`): the
/// extinction efficiency (scattering plus absorption boxes) against the Mie series with the
/// same eps(f) (the library's Drude-Lorentz fit, as the model holds it). The plasmon peak's
/// wavelength within 1 % of Mie's, the geometry issue's bound (each from a parabola through
/// its three highest samples, Mie on a grid ten times finer; 502.99 against 503.00 nm when
/// this was written). The curved surface is placed by the surface ports
/// (`src/model/ports.rs`): Q_ext within the issue's 5 %, measured 0.8-1.0 % high over
/// 400-550 nm and rising to 4.3 % at 800 nm (the absorption there, 8 % of a small Q_abs, is
/// what is left). At 2 nm cells the same scene gave 5.9 % at 800 nm, so the error falls as
/// about h^1.4. The staircase the ports replaced was 16 % high at 582 nm at 2 nm cells, and
/// averaging the metal's poles at the surface made Q_ext 2.4 times Mie's at 800 nm, so the
/// bound separates the schemes. The run lasts 60 fs, six decay times of the plasmon (gold's
/// damping is about 1e14 /s), against the 11 fs of the dielectric spheres' runs; run to 150 fs,
/// the ports' spectra moved in the fourth digit only (they are passive, so nothing grows).
#[test]
fn gold_nanosphere_extinction_matches_mie() {
    // The example scene itself, so that what users run is what is checked.
    let radius: f64 = 0.04;
    let count = 41;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/gold_sphere.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let (model, _) = yee::scene::load_str(&text, path).unwrap();
    let au = &model.materials.materials[model.materials.id("gold").unwrap() as usize];
    let run = common::BinaryRun::new("mie-gold", &text);
    let f = run.read("flux/scat/frequency");
    assert_eq!(f.len(), count);
    let band = [f[0], f[count - 1]];
    let sca = run.read("flux/scat/cross_section");
    let abs = run.read("flux/abs/cross_section");
    let area = PI * (radius * 1e-6).powi(2);
    let mie = |f: f64| {
        let m = au.epsilon_at(f).sqrt();
        let m = if m.im < 0.0 { -m } else { m };
        efficiencies(Sphere::Index(m), 2.0 * PI * f / C0 * radius * 1e-6).1
    };
    let mut worst = 0.0f64;
    let mut q_ext = Vec::new();
    for (i, &fi) in f.iter().enumerate() {
        // The absorption box's cross-section is the net power into it: absorption.
        let q = (sca[i] + abs[i]) / area;
        let want = mie(fi);
        let (m_sca, _, m_abs) = {
            let m = au.epsilon_at(fi).sqrt();
            let m = if m.im < 0.0 { -m } else { m };
            efficiencies(Sphere::Index(m), 2.0 * PI * fi / C0 * radius * 1e-6)
        };
        eprintln!(
            "{:.1} nm: Q_ext {q:.4} vs Mie {want:.4} ({:+.1} %); Q_sca {:.4} vs {m_sca:.4}, Q_abs {:.4} vs {m_abs:.4}",
            C0 / fi * 1e9,
            100.0 * (q / want - 1.0),
            sca[i] / area,
            abs[i] / area
        );
        worst = worst.max((q / want - 1.0).abs());
        assert!(
            (q / want - 1.0).abs() < 0.05,
            "{} nm: {q} vs {want}",
            C0 / fi * 1e9
        );
        q_ext.push(q);
    }
    // The peak's wavelength: a parabola through the highest sample and its neighbours.
    let top = |y: &[f64]| {
        let k = (1..y.len() - 1)
            .max_by(|&a, &b| y[a].total_cmp(&y[b]))
            .unwrap();
        let (a, b, c) = (y[k - 1], y[k], y[k + 1]);
        k as f64 + 0.5 * (a - c) / (a - 2.0 * b + c)
    };
    let at = |x: f64, lo: f64, hi: f64, n: usize| lo + (hi - lo) * x / (n - 1) as f64;
    let got = C0 / at(top(&q_ext), f[0], f[f.len() - 1], f.len());
    let fine: Vec<f64> = (0..10 * count)
        .map(|i| mie(at(i as f64, band[0], band[1], 10 * count)))
        .collect();
    let want = C0 / at(top(&fine), band[0], band[1], 10 * count);
    eprintln!(
        "gold sphere: peak at {:.2} nm vs Mie {:.2} nm; worst Q_ext error {worst:.2e}",
        got * 1e9,
        want * 1e9
    );
    assert!((got / want - 1.0).abs() < 0.01, "peak {got} vs {want}");
}

/// An absorbing sphere (eps 2.25 and 5,000 S/m: eps'' = 0.5 to 0.2 over the band, a loss
/// tangent a conductor-free dielectric fit cannot fake) at 20 nm cells: scattering and
/// absorption efficiencies within 5 % of Mie with m(f) = sqrt(2.25 + i sigma / (w eps0)) (the
/// issue's bound; smoothing averages the conductivity by volume at the surface, and the
/// measured worst is printed).
#[test]
fn absorbing_sphere_scattering_and_absorption_match_mie() {
    let (radius, cell) = (0.4, 0.02);
    let band = [1.5e14, 4.5e14];
    let sigma = 5.0e3;
    let text = scene(
        cell,
        radius,
        &format!("sphere = {{ epsilon = 2.25, conductivity = {sigma} }}"),
        band,
        7,
        false,
    );
    let run = common::BinaryRun::new("mie-absorbing", &text);
    let kind = |name: &str| -> String {
        let a = run
            .file
            .group(&format!("flux/{name}"))
            .unwrap()
            .attr("kind")
            .unwrap();
        a.read_scalar::<hdf5::types::VarLenUnicode>()
            .unwrap()
            .as_str()
            .to_string()
    };
    assert_eq!(kind("scat"), "scattering");
    assert_eq!(kind("abs"), "absorption");
    let f = run.read("flux/scat/frequency");
    let (sca, abs) = (
        run.read("flux/scat/cross_section"),
        run.read("flux/abs/cross_section"),
    );
    let area = PI * (radius * 1e-6).powi(2);
    let eps0 = 8.8541878128e-12;
    let mut worst = 0.0f64;
    for (i, &f) in f.iter().enumerate() {
        let w = 2.0 * PI * f;
        let m = Complex64::new(2.25, sigma / (w * eps0)).sqrt();
        let x = w / C0 * radius * 1e-6;
        let (q_sca, _, q_abs) = efficiencies(Sphere::Index(m), x);
        let (qs, qa) = (sca[i] / area, abs[i] / area);
        eprintln!(
            "f = {f:.3e} (x = {x:.2}): Q_sca {qs:.4} vs {q_sca:.4}, Q_abs {qa:.4} vs {q_abs:.4}"
        );
        worst = worst
            .max((qs / q_sca - 1.0).abs())
            .max((qa / q_abs - 1.0).abs());
        assert!(
            (qs / q_sca - 1.0).abs() < 0.05,
            "x = {x:.2}: Q_sca {qs} vs {q_sca}"
        );
        assert!(
            (qa / q_abs - 1.0).abs() < 0.05,
            "x = {x:.2}: Q_abs {qa} vs {q_abs}"
        );
    }
    eprintln!("absorbing sphere: worst relative error {worst:.2e}");
}

/// A PEC sphere (radius 0.4 um) at 12.5 cells per radius over ka = 0.5 to 2.1 (60-250 THz):
/// the monostatic and bistatic RCS from the far field within 1 dB of Mie (the issue's bound),
/// in the E-plane (phi = 0) and the H-plane (phi = 90) at theta = 90 to 180, with the surface
/// conformal (the default; its time step reduced to courant 0.7). Measured worst 0.19 dB
/// (monostatic, ka = 1.6); the staircase (`conformal = false`) on the same grid misses by up to
/// 1.47 dB there. Angles where Mie's RCS lies more than 10 dB below the largest of that
/// frequency's cut are left out: near a null a decibel is no measure of agreement.
#[test]
fn pec_sphere_radar_cross_section_matches_mie() {
    let (radius, cell) = (0.4, 0.032);
    let band = [0.6e14, 2.5e14];
    let text = scene(cell, radius, "sphere = { pec = true }", band, 8, true);
    let run = common::BinaryRun::new("mie-pec", &text);
    let f = run.read("far_field/ff/frequency");
    let theta = run.read("far_field/ff/theta");
    let phi = run.read("far_field/ff/phi");
    let rcs_ds = run.read("far_field/ff/rcs");
    let (nt, np) = (theta.len(), phi.len());
    let mut worst = 0.0f64;
    for (i, &f) in f.iter().enumerate() {
        let k = 2.0 * PI * f / C0;
        for (p, &ph) in phi.iter().enumerate() {
            // theta is measured from +z, the incident direction: the scattering angle.
            let e_plane = ph < 45.0;
            let mie_at = |th: f64| rcs(Sphere::Pec, radius * 1e-6, k, th.to_radians(), e_plane);
            let peak = theta
                .iter()
                .filter(|th| **th >= 90.0)
                .map(|&th| mie_at(th))
                .fold(0.0, f64::max);
            for (t, &th) in theta.iter().enumerate().filter(|(_, th)| **th >= 90.0) {
                let got = rcs_ds[(i * nt + t) * np + p];
                let mie = mie_at(th);
                if mie < 0.1 * peak {
                    continue;
                }
                let db = 10.0 * (got / mie).log10();
                if th == 180.0 || (th - 135.0).abs() < 6.0 {
                    eprintln!(
                        "f = {f:.3e} theta {th:5.1} phi {ph:4.1}: RCS {got:.4e} vs Mie {mie:.4e} ({db:+.2} dB)"
                    );
                }
                worst = worst.max(db.abs());
                assert!(
                    db.abs() < 1.0,
                    "f = {f:.3e}, theta {th}, phi {ph}: {db:+.2} dB"
                );
            }
        }
    }
    eprintln!("PEC sphere: worst |error| {worst:.2} dB");
}

/// The surface DFTs sampled every k-th step (the automatic decimation) against every step, on
/// a coarser copy of the dielectric sphere: scattering and absorption cross-sections within
/// 1e-3 relative (the issue's bound). Sampled at least at the monitors' highest frequency plus
/// the source's (to 1.5e-8 of its spectrum's peak), the decimated sums alias nothing onto the
/// band; what differs is the end of the record (up to k - 1 steps after the last sample), where
/// the sphere's field has rung down to about 1e-5.
#[test]
fn decimated_surface_dfts_match_every_step_sampling_on_a_mie_sphere() {
    let (radius, cell) = (0.4, 0.05);
    let band = [1.5e14, 4.8e14];
    let auto = scene(cell, radius, "sphere = { epsilon = 2.25 }", band, 12, false);
    let every = auto.replace("type = \"flux\"\n", "type = \"flux\"\ndecimation = 1\n");
    let (a, e) = (
        common::BinaryRun::new("mie-decimated", &auto),
        common::BinaryRun::new("mie-every-step", &every),
    );
    let k = a.attr_u64("flux/scat", "decimation");
    assert!(k > 1, "the automatic decimation samples every {k} steps");
    assert_eq!(e.attr_u64("flux/scat", "decimation"), 1);
    let scattered = e.read("flux/scat/power");
    for name in [
        "flux/scat/cross_section",
        "flux/scat/power",
        "flux/abs/power",
    ] {
        let (x, y) = (a.read(name), e.read(name));
        // The lossless sphere absorbs nothing: its absorption box nets round-off, measured
        // against the scattered power.
        let of = if name == "flux/abs/power" {
            &scattered
        } else {
            &y
        };
        let scale = of.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = x
            .iter()
            .zip(&y)
            .map(|(x, y)| (x - y).abs() / scale)
            .fold(0.0, f64::max);
        eprintln!("{name}: decimated by {k}, worst {worst:.2e} of the largest value");
        assert!(worst < 1e-3, "{name}: {worst:.2e}");
    }
}
