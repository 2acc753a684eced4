//! Dispersive and magnetic materials against the transfer-matrix method: a plane wave at
//! normal incidence on films, slabs and half-spaces of Drude, Lorentz, Debye and magnetic
//! media, the flux spectra compared with the exact reflectance and transmittance computed from
//! the analytic eps(f) and mu(f).
//!
//! Each case is a 1-D problem: a periodic cross-section of 2 x 2 cells and PML along z. A run
//! without the objects gives the incident flux at both planes; the run with them gives
//! T = P_t / P_inc and R = 1 - P_r / P_inc (the plane before the stack sees incident minus
//! reflected power).

mod common;

use num_complex::Complex64;
use yee::model::{Material, Pole};

/// A layer of the stack: its material and its z range (in the scene's length unit).
struct Layer<'a> {
    material: &'a str,
    z: [f64; 2],
}

/// A 1-D scene: `cell` (um), `length` of the domain along z (um, PML included), the
/// `[materials]` lines, the layers, flux planes at `planes` = [reflected, transmitted] z, the
/// source sheet at `source_z`, the pulse and the band, `steps`.
struct Stack<'a> {
    unit: &'a str,
    cell: f64,
    length: f64,
    pml: usize,
    materials: &'a str,
    layers: Vec<Layer<'a>>,
    planes: [f64; 2],
    source_z: f64,
    pulse: [f64; 2],
    band: [f64; 2],
    count: usize,
    steps: usize,
}

impl Stack<'_> {
    fn scene(&self, with_layers: bool) -> String {
        let mut geometry = String::new();
        if with_layers {
            for l in &self.layers {
                geometry += &format!(
                    "[[geometry]]\nshape = \"box\"\nmaterial = \"{}\"\ncenter = [0.0, 0.0, {}]\nsize = [100.0, 100.0, {}]\n",
                    l.material,
                    (l.z[0] + l.z[1]) / 2.0,
                    l.z[1] - l.z[0]
                );
            }
        }
        format!(
            r#"
[simulation]
length_unit = "{unit}"
cell_size = {cell}
size = [{w}, {w}, {length}]
steps = {steps}
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
z_min = {{ type = "pml", cells = {pml} }}
z_max = {{ type = "pml", cells = {pml} }}
[materials]
{materials}
{geometry}
[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ex"
position = {source_z}
waveform = {{ type = "gaussian", frequency = {f0}, bandwidth = {bw} }}
[[monitor]]
type = "flux"
name = "r"
plane = {{ z = {zr} }}
frequencies = {{ min = {fmin}, max = {fmax}, count = {count} }}
[[monitor]]
type = "flux"
name = "t"
plane = {{ z = {zt} }}
frequencies = {{ min = {fmin}, max = {fmax}, count = {count} }}
"#,
            unit = self.unit,
            cell = self.cell,
            w = 2.0 * self.cell,
            length = self.length,
            steps = self.steps,
            pml = self.pml,
            materials = self.materials,
            source_z = self.source_z,
            f0 = self.pulse[0],
            bw = self.pulse[1],
            zr = self.planes[0],
            zt = self.planes[1],
            fmin = self.band[0],
            fmax = self.band[1],
            count = self.count,
        )
    }

    /// Runs the stack (one slab of `material`, `thickness` m thick) and holds R and T at every
    /// frequency within `tol` of the transfer matrix; prints each and the worst error.
    fn assert_slab_matches(&self, name: &str, material: &Material, thickness: f64, tol: f64) {
        let mut worst = 0.0f64;
        for (f, r, t) in self.measure(name) {
            let layer = (material.epsilon_at(f), material.mu_at(f), thickness);
            let (re, te) = transfer_matrix(&[layer], None, f);
            eprintln!("{name} f = {f:.3e}: R = {r:.5} ({re:.5}), T = {t:.5} ({te:.5})");
            worst = worst.max((t - te).abs()).max((r - re).abs());
            assert!(
                (t - te).abs() < tol && (r - re).abs() < tol,
                "{name}: f = {f:.3e}"
            );
        }
        eprintln!("{name}: worst |error| {worst:.2e}");
    }

    /// (frequency, R, T) from the two runs.
    fn measure(&self, name: &str) -> Vec<(f64, f64, f64)> {
        let full = common::BinaryRun::new(&format!("disp-{name}"), &self.scene(true));
        self.measure_against(name, &full.file)
    }

    /// (frequency, R, T) of the result `full` against a run without the layers.
    fn measure_against(&self, name: &str, full: &hdf5::File) -> Vec<(f64, f64, f64)> {
        let empty = common::BinaryRun::new(&format!("disp-{name}-empty"), &self.scene(false));
        let f = empty.read("flux/t/frequency");
        let (inc_r, inc_t) = (empty.read("flux/r/power"), empty.read("flux/t/power"));
        let read = |path: &str| full.dataset(path).unwrap().read_raw::<f64>().unwrap();
        let (pr, pt) = (read("flux/r/power"), read("flux/t/power"));
        (0..f.len())
            .map(|i| {
                // Lossless vacuum between the planes: both see the same incident power.
                assert!((inc_r[i] - inc_t[i]).abs() < 1e-3 * inc_t[i]);
                (f[i], 1.0 - pr[i] / inc_r[i], pt[i] / inc_t[i])
            })
            .collect()
    }
}

/// Reflectance and transmittance at normal incidence of layers (eps, mu, thickness in m)
/// between vacuum half-spaces; with `substrate`, the last medium (eps, mu) fills the right
/// half-space instead and T is the power carried into it.
///
/// The characteristic matrix of a layer, mapping (E, eta0 H) from one face to the other for
/// e^{-iwt}: [[cos p, i Z sin p], [i sin p / Z, cos p]], p = k0 n d, n = sqrt(eps mu),
/// Z = sqrt(mu / eps) (the root with Re n, Re Z >= 0: a passive medium).
fn transfer_matrix(
    layers: &[(Complex64, Complex64, f64)],
    substrate: Option<(Complex64, Complex64)>,
    f: f64,
) -> (f64, f64) {
    let k0 = 2.0 * std::f64::consts::PI * f / 299_792_458.0;
    let i = Complex64::i();
    let mut m = [[Complex64::new(1.0, 0.0), Complex64::new(0.0, 0.0)]; 2];
    m[1] = [Complex64::new(0.0, 0.0), Complex64::new(1.0, 0.0)];
    for &(eps, mu, d) in layers {
        let n = passive_sqrt(eps * mu);
        let z = passive_sqrt(mu / eps);
        let p = k0 * n * d;
        let l = [[p.cos(), i * z * p.sin()], [i * p.sin() / z, p.cos()]];
        // m = l m (the layer comes after the ones before it).
        let mut out = [[Complex64::new(0.0, 0.0); 2]; 2];
        for r in 0..2 {
            for c in 0..2 {
                out[r][c] = l[r][0] * m[0][c] + l[r][1] * m[1][c];
            }
        }
        m = out;
    }
    // Right medium: eta0 H = E / Zs. Left: E = 1 + r, eta0 H = 1 - r.
    let zs = substrate.map_or(Complex64::new(1.0, 0.0), |(e, u)| passive_sqrt(u / e));
    // t = m00 (1 + r) + m01 (1 - r); t / zs = m10 (1 + r) + m11 (1 - r).
    let a = m[0][0] + m[0][1] - zs * (m[1][0] + m[1][1]);
    let b = m[0][0] - m[0][1] - zs * (m[1][0] - m[1][1]);
    let r = -a / b;
    let t = m[0][0] * (1.0 + r) + m[0][1] * (1.0 - r);
    let transmitted = t.norm_sqr() * (1.0 / zs).re;
    (r.norm_sqr(), transmitted)
}

fn passive_sqrt(x: Complex64) -> Complex64 {
    let s = x.sqrt();
    if s.re < 0.0 {
        -s
    } else {
        s
    }
}

fn material(epsilon: f64, sigma: f64, poles: Vec<Pole>) -> Material {
    Material {
        poles,
        ..Material::dielectric("m", epsilon, sigma)
    }
}

fn silver() -> Material {
    material(
        1.0,
        0.0,
        vec![Pole::Drude {
            frequency: 2.18e15,
            damping: 4.35e12,
        }],
    )
}

/// A 20 nm silver film (the Drude model of design.md) at 2 nm cells over the visible band.
/// Its faces lie halfway between E nodes, where a staircased dispersive material's interface
/// sits exactly (10 Ex nodes inside), so what remains is the grid's dispersion: the skin depth
/// (about 24 nm) spans 12 cells, (k dz)^2 / 24 < 3e-4, and the bilinear warping of eps is
/// (w dt)^2 / 12 < 4e-5; together they move R and T by a few 1e-4 (the run shows 5e-4 at
/// most). R and T within 3e-3, a quarter of what a film one cell thicker or thinner would be
/// off by (about 0.012 in T here), so a misplaced interface fails.
#[test]
fn drude_film_and_half_space_match_the_transfer_matrix() {
    let film = Stack {
        unit: "nm",
        cell: 2.0,
        length: 1600.0,
        pml: 40,
        materials:
            "silver = { epsilon = 1.0, drude = [{ frequency = 2.18e15, damping = 4.35e12 }] }",
        layers: vec![Layer {
            material: "silver",
            z: [1.0, 21.0],
        }],
        planes: [-300.0, 400.0],
        source_z: -600.0,
        pulse: [6.0e14, 5.0e14],
        band: [4.3e14, 7.5e14],
        count: 9,
        steps: 9000,
    };
    let ag = silver();
    film.assert_slab_matches("drude-film", &ag, 20e-9, 3e-3);
    // The half-space: silver from z = 1 nm through the far PML.
    let half = Stack {
        layers: vec![Layer {
            material: "silver",
            z: [1.0, 900.0],
        }],
        ..film
    };
    for (f, r, _) in half.measure("drude-half") {
        let (re, _) = transfer_matrix(&[], Some((ag.epsilon_at(f), ag.mu_at(f))), f);
        eprintln!("half-space f = {f:.3e}: R = {r:.5} ({re:.5})");
        // Fresnel with the Drude eps: the fields decay within a skin depth of 12 cells, and
        // the run matches to 1e-5; 1e-3 leaves room for f32-free rounding of the DFT.
        assert!((r - re).abs() < 1e-3, "f = {f:.3e}");
    }
}

/// A 300 nm slab of a two-pole Lorentz medium (eps_inf 2, lines at 300 and 450 THz) over
/// 200-600 THz, across both absorption lines, at 5 nm cells. The faces lie between E nodes
/// (staircased dispersive interfaces sit there exactly). Inside the lines n reaches about 2.2,
/// so the shortest wavelength is 220 nm = 44 cells and (k dz)^2 / 24 < 1e-3; T within 0.01 (the
/// issue's bound), and the measured error is printed.
#[test]
fn lorentz_slab_across_its_absorption_lines_matches_the_transfer_matrix() {
    lorentz_slab([2.5, 302.5]).assert_slab_matches("lorentz", &lorentz_glass(), 300e-9, 0.01);
}

/// The two-pole Lorentz medium of the Lorentz tests (eps_inf 2, lines at 300 and 450 THz).
fn lorentz_glass() -> Material {
    let poles = vec![
        Pole::Lorentz {
            delta_epsilon: 1.0,
            frequency: 3.0e14,
            damping: 2.0e13,
        },
        Pole::Lorentz {
            delta_epsilon: 0.5,
            frequency: 4.5e14,
            damping: 3.0e13,
        },
    ];
    material(2.0, 0.0, poles)
}

/// A slab of [`lorentz_glass`] over `z` (nm) at 5 nm cells, 200-600 THz.
fn lorentz_slab(z: [f64; 2]) -> Stack<'static> {
    Stack {
        unit: "nm",
        cell: 5.0,
        length: 6000.0,
        pml: 40,
        materials: "glass = { epsilon = 2.0, lorentz = [{ delta_epsilon = 1.0, frequency = 3.0e14, damping = 2.0e13 }, { delta_epsilon = 0.5, frequency = 4.5e14, damping = 3.0e13 }] }",
        layers: vec![Layer {
            material: "glass",
            z,
        }],
        planes: [-1200.0, 1500.0],
        source_z: -2000.0,
        pulse: [4.0e14, 6.0e14],
        band: [2.0e14, 6.0e14],
        count: 21,
        steps: 20000,
    }
}

/// A 4 mm slab of water (one Debye pole, eps_s = 79.9, tau = 9.4 ps) over 1-10 GHz at 0.125 mm
/// cells: at 10 GHz |n| is about 8, 30 cells per wavelength in the water, so the grid's phase
/// error (k dz)^2 / 24 is 2e-3 of the phase (at 0.25 mm cells the run was off by 9e-3 at
/// 10 GHz, four times the error seen here, as the (k dz)^2 law says). R and T within 0.01.
#[test]
fn debye_water_slab_matches_the_transfer_matrix() {
    let m = material(
        4.9,
        0.0,
        vec![Pole::Debye {
            delta_epsilon: 75.0,
            relaxation_time: 9.4e-12,
        }],
    );
    let stack = Stack {
        unit: "mm",
        cell: 0.125,
        length: 300.0,
        pml: 60,
        materials: "water = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }",
        layers: vec![Layer {
            material: "water",
            z: [0.0625, 4.0625],
        }],
        planes: [-60.0, 60.0],
        source_z: -120.0,
        pulse: [5.5e9, 9.0e9],
        band: [1.0e9, 1.0e10],
        count: 10,
        steps: 20000,
    };
    stack.assert_slab_matches("debye", &m, 4e-3, 0.01);
}

/// A magnetic, doubly lossy slab (eps 2, mu 4, sigma 0.5 S/m, sigma_m 2e5 ohm/m: loss tangents
/// of a few tenths) 4 mm thick over 2-12 GHz at 0.1 mm cells, faces on E nodes (smoothing gives
/// those Ex nodes the mean eps; the H nodes, which carry mu, sit half a cell either side, so mu
/// steps exactly at the faces). n = sqrt(8) = 2.8: 100 cells per wavelength at 12 GHz.
/// T and R within 1e-3 of the transfer matrix; then a lossless magnetic slab (mu 4 alone, the
/// H update's mu without any loss term: n = 2, Fabry-Perot fringes of R up to 0.36) within the
/// same 1e-3; then an impedance-matched slab (eps = mu = 3, sigma / eps0 = sigma_m / mu0)
/// reflects below -40 dB. Both slabs come within 1.3e-4 (the Yee dispersion at 88 to 750
/// cells per wavelength in the slab shifts the fringes by about that much); 1e-3 leaves a
/// margin of 7, where a slab whose impedance is off by 1 % moves R by several 1e-3.
#[test]
fn magnetic_slabs_match_the_transfer_matrix_and_a_matched_slab_does_not_reflect() {
    let lossy = Material {
        mu: 4.0,
        magnetic_conductivity: 2.0e5,
        ..Material::dielectric("m", 2.0, 0.5)
    };
    let base = Stack {
        unit: "mm",
        cell: 0.1,
        length: 120.0,
        pml: 40,
        materials: "ferrite = { epsilon = 2.0, conductivity = 0.5, mu = 4.0, magnetic_conductivity = 2.0e5 }\nmatched = { epsilon = 3.0, conductivity = 0.3, mu = 3.0, magnetic_conductivity = 42577.72 }\nmagnet = { epsilon = 1.0, mu = 4.0 }",
        layers: vec![Layer {
            material: "ferrite",
            z: [0.0, 4.0],
        }],
        planes: [-20.0, 25.0],
        source_z: -40.0,
        pulse: [7.0e9, 1.2e10],
        band: [2.0e9, 1.2e10],
        count: 11,
        steps: 12000,
    };
    base.assert_slab_matches("magnetic", &lossy, 4e-3, 1e-3);
    let magnet = Material {
        mu: 4.0,
        ..Material::dielectric("m", 1.0, 0.0)
    };
    assert!(magnet.is_magnetic(), "mu alone makes a material magnetic");
    let lossless = Stack {
        layers: vec![Layer {
            material: "magnet",
            z: [0.0, 4.0],
        }],
        ..base
    };
    lossless.assert_slab_matches("lossless magnetic", &magnet, 4e-3, 1e-3);
    let matched = Stack {
        layers: vec![Layer {
            material: "matched",
            z: [0.0, 4.0],
        }],
        ..base
    };
    for (f, r, t) in matched.measure("matched") {
        let db = 10.0 * r.abs().max(1e-30).log10();
        eprintln!("matched f = {f:.3e}: R = {db:.1} dB, T = {t:.5}");
        assert!(db < -40.0, "f = {f:.3e}: R = {db:.1} dB");
    }
}

/// Dispersive films at their drawn thickness wherever their faces lie: a Drude film 18 nm
/// thick on 1.5 nm cells, a two-pole Lorentz slab 300 nm on 5 nm cells and a Debye soil slab
/// 50 mm on 1 mm cells, each with its faces ON grid lines (an E node on each face) and a
/// quarter of a cell off them. Staircased, both face nodes counted as inside and every film
/// came out one cell too thick: the Drude film transmitted 19 % less than the transfer
/// matrix said, the others 5 and 7 % off (the geometry issue's measurements). Smoothed, the face cells take the poles weighted by
/// their fill fraction (`src/model/smoothing.rs`), and R and T come within 0.005 of the
/// transfer matrix at every frequency, the geometry issue's bound. For the Drude film the
/// transfer matrix itself moves T by up to 0.005 (at 900 THz) for a film a tenth of a cell
/// (0.15 nm) thicker, and by 10 to 17 % for one a whole cell thicker; the runs come within
/// 1e-4 (Drude) to 7e-4 (Lorentz), printed. (The mixtures' fractions are quantised to 1/16
/// of a cell.)
#[test]
fn dispersive_films_keep_their_drawn_thickness_on_and_off_grid_lines() {
    let ag = silver();
    let drude = |z: [f64; 2]| Stack {
        unit: "nm",
        cell: 1.5,
        length: 1800.0,
        pml: 40,
        materials:
            "silver = { epsilon = 1.0, drude = [{ frequency = 2.18e15, damping = 4.35e12 }] }",
        layers: vec![Layer {
            material: "silver",
            z,
        }],
        planes: [-300.0, 400.0],
        source_z: -600.0,
        pulse: [6.0e14, 6.0e14],
        band: [3.0e14, 9.0e14],
        count: 13,
        steps: 12000,
    };
    drude([0.0, 18.0]).assert_slab_matches("drude-on-grid", &ag, 18e-9, 5e-3);
    drude([0.375, 18.375]).assert_slab_matches("drude-quarter-off", &ag, 18e-9, 5e-3);

    let glass = lorentz_glass();
    lorentz_slab([0.0, 300.0]).assert_slab_matches("lorentz-on-grid", &glass, 300e-9, 5e-3);
    lorentz_slab([1.25, 301.25]).assert_slab_matches("lorentz-quarter-off", &glass, 300e-9, 5e-3);

    let soil = material(
        5.0,
        0.01,
        vec![Pole::Debye {
            delta_epsilon: 15.0,
            relaxation_time: 3.0e-10,
        }],
    );
    let ground = |z: [f64; 2]| {
        Stack {
        unit: "mm",
        cell: 1.0,
        length: 2000.0,
        pml: 40,
        materials: "soil = { epsilon = 5.0, conductivity = 0.01, debye = [{ delta_epsilon = 15.0, relaxation_time = 3.0e-10 }] }",
        layers: vec![Layer {
            material: "soil",
            z,
        }],
        planes: [-400.0, 500.0],
        source_z: -700.0,
        pulse: [1.5e9, 2.5e9],
        band: [3.0e8, 2.5e9],
        count: 12,
        steps: 12000,
    }
    };
    ground([0.0, 50.0]).assert_slab_matches("debye-on-grid", &soil, 50e-3, 5e-3);
    ground([0.25, 50.25]).assert_slab_matches("debye-quarter-off", &soil, 50e-3, 5e-3);
}

/// A series mixture, the material subpixel smoothing gives a dispersive surface cell
/// (`Material::series`), realises 1/eps = sum w/eps_part at every frequency. Two 300 nm slabs
/// of series mixtures, each against the transfer matrix of its eps(f) within 0.01 (the Lorentz
/// slab's bound on the same grid and band):
/// - the Lorentz glass and silver, weights 0.6 and 0.4: eps from about -1 to 26 across the
///   glass's lines;
/// - the glass, vacuum and silver, 0.5, 0.3 and 0.2 (a part without poles; three parts, as the
///   anisotropic average makes).
///
/// The slab's faces lie between E nodes, so no cell is a mixture with the scene's material and
/// the replaced entry fills the slab. The measured errors are 1.6e-3 and 6.9e-4; a run with
/// weights 0.55/0.45 is 0.11 off the first transfer matrix, so the bound tells weights 0.05
/// apart.
#[test]
fn slabs_of_series_mixtures_match_the_transfer_matrix_of_their_harmonic_mean() {
    let vacuum = Material::dielectric("vacuum", 1.0, 0.0);
    for (name, parts) in [
        ("series-2", vec![(lorentz_glass(), 0.6), (silver(), 0.4)]),
        (
            "series-3",
            vec![(lorentz_glass(), 0.5), (vacuum, 0.3), (silver(), 0.2)],
        ),
    ] {
        let series = Material {
            series: parts,
            ..Material::dielectric(name, 1.0, 0.0)
        };
        let stack = lorentz_slab([2.5, 302.5]);
        let mut model = common::model(&stack.scene(true));
        let id = model.materials.id("glass").unwrap() as usize;
        model.materials.materials[id] = series.clone();
        let dir = std::env::temp_dir().join(format!("yee-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut opts = yee::run::RunOptions::new(dir.join("series.h5"));
        opts.backend = yee::run::BackendChoice::Cpu;
        yee::run::run(&model, &opts, &mut yee::run::Quiet).unwrap_or_else(|e| panic!("{e}"));
        let full = hdf5::File::open(dir.join("series.h5")).unwrap();
        let mut worst = 0.0f64;
        for (f, r, t) in stack.measure_against(name, &full) {
            let layer = (series.epsilon_at(f), Complex64::new(1.0, 0.0), 300e-9);
            let (re, te) = transfer_matrix(&[layer], None, f);
            eprintln!("{name} f = {f:.3e}: R = {r:.5} ({re:.5}), T = {t:.5} ({te:.5})");
            worst = worst.max((t - te).abs()).max((r - re).abs());
        }
        eprintln!("{name}: worst |error| {worst:.2e}");
        assert!(worst < 0.01, "{name}: worst {worst}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Energy: a lossless Lorentz medium filling a PEC cavity, excited by a short dipole pulse,
/// keeps `W = eps_inf eps0 |E^n|^2 / 2 + mu0 H^{n-1/2} . H^{n+1/2} / 2 +
/// eps0 (|J|^2 + w0^2 |P|^2) / (2 d_eps w0^2)` constant once the pulse is over. The discrete
/// equations conserve this W exactly (see `yee::model` dispersion docs), so in f64 it moves
/// only by rounding, about 1e-15 per step: over 5,000 steps a drift beyond 1e-6 of W means
/// a coefficient of the update is wrong (a first-order error in a pole's coefficients shows as
/// a drift of order w dt = 0.05 per period).
#[test]
fn lossless_lorentz_cavity_conserves_field_plus_polarisation_energy() {
    use yee::backend::cpu::CpuBackend;
    use yee::decomp::split_even;
    use yee::model::{Component, EPS0, MU0};
    use yee::run::Stepper;
    let text = r#"
[simulation]
length_unit = "nm"
cell_size = 10.0
size = [100.0, 120.0, 140.0]
steps = 5600
precision = "f64"
subpixel = false
[boundaries]
default = { type = "pec" }
[materials]
glass = { epsilon = 2.0, lorentz = [{ delta_epsilon = 1.5, frequency = 4.0e14 }] }
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [1000.0, 1000.0, 1000.0]
[[source]]
type = "dipole"
component = "Ez"
position = [3.0, -7.0, 11.0]
waveform = { type = "gaussian", frequency = 4.0e14, bandwidth = 4.0e14 }
"#;
    let model = common::model(text);
    let w0 = 2.0 * std::f64::consts::PI * 4.0e14;
    let weight = 1.5 * w0 * w0;
    let ranges = split_even(model.grid.shape[0], 2);
    let mut b = CpuBackend::<f64>::new(&model, &ranges);
    let mut s = Stepper::new(&model, &mut b, &ranges);
    let fields = |s: &Stepper<CpuBackend<f64>>, first: usize| -> Vec<Vec<f64>> {
        (first..first + 3)
            .map(|c| common::field(&*s.backend, &model, Component::ALL[c]))
            .collect()
    };
    let dot = |a: &[Vec<f64>], b: &[Vec<f64>]| -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum::<f64>())
            .sum()
    };
    let pole_energy = |s: &Stepper<CpuBackend<f64>>| -> f64 {
        s.backend
            .pole_state()
            .iter()
            .map(|(_, _, state)| {
                let n = state.len() / 2;
                let (j, p) = state.split_at(n);
                j.iter()
                    .zip(p)
                    .map(|(j, p)| j * j + w0 * w0 * p * p)
                    .sum::<f64>()
            })
            .sum::<f64>()
            * EPS0
            / (2.0 * weight)
    };
    // The dipole's Gaussian pulse is over (below 1e-30 of its peak) after about 600 steps.
    for _ in 0..600 {
        s.step();
    }
    let mut previous = (fields(&s, 0), fields(&s, 3), pole_energy(&s));
    let mut energies = Vec::new();
    for _ in 600..model.grid.steps {
        s.step();
        let (e, h_old, pole) = &previous;
        let h_new = fields(&s, 3);
        energies.push(EPS0 * 2.0 * dot(e, e) / 2.0 + MU0 * dot(h_old, &h_new) / 2.0 + pole);
        previous = (fields(&s, 0), h_new, pole_energy(&s));
    }
    let w_first = energies[0];
    let drift = energies
        .iter()
        .map(|w| (w / w_first - 1.0).abs())
        .fold(0.0, f64::max);
    // The polarisation holds a real share of the energy (the check is not on the fields alone).
    let share = previous.2 / w_first;
    eprintln!(
        "energy over {} steps: max relative change {drift:.2e}; polarisation share {share:.3}",
        energies.len()
    );
    assert!(w_first > 0.0 && share > 0.05, "share {share}");
    assert!(drift < 1e-6, "energy drifts by {drift:.2e}");
}

/// Decomposition never changes the answer: a scene with Drude-Lorentz, Debye and lossy
/// magnetic objects, a PML and a dipole gives the same bits on 1 and 3 slabs (f32 and f64).
#[test]
fn dispersive_and_magnetic_runs_are_identical_on_one_and_three_slabs() {
    let text = |precision: &str| {
        format!(
            r#"
[simulation]
length_unit = "nm"
cell_size = 10.0
size = [300.0, 200.0, 240.0]
steps = 120
precision = "{precision}"
[boundaries]
default = {{ type = "pml", cells = 6 }}
y_min = {{ type = "periodic" }}
y_max = {{ type = "periodic" }}
[materials]
metal = {{ epsilon = 1.0, drude = [{{ frequency = 2.0e15, damping = 1.0e13 }}], lorentz = [{{ delta_epsilon = 1.0, frequency = 6.0e14, damping = 5.0e13 }}] }}
water = {{ epsilon = 4.9, debye = [{{ delta_epsilon = 5.0, relaxation_time = 1.0e-15 }}] }}
ferrite = {{ epsilon = 2.0, mu = 4.0, magnetic_conductivity = 1.0e4, conductivity = 1.0e3 }}
[[geometry]]
shape = "sphere"
material = "metal"
center = [-40.0, 0.0, 0.0]
radius = 60.0
[[geometry]]
shape = "box"
material = "water"
center = [60.0, 0.0, 30.0]
size = [80.0, 300.0, 60.0]
[[geometry]]
shape = "box"
material = "ferrite"
center = [100.0, 0.0, -60.0]
size = [300.0, 300.0, 60.0]
[[source]]
type = "dipole"
component = "Ez"
position = [20.0, 10.0, -10.0]
waveform = {{ type = "gaussian", frequency = 5.0e14, bandwidth = 4.0e14 }}
"#
        )
    };
    for precision in ["f32", "f64"] {
        let model = common::model(&text(precision));
        let (one, three) = if precision == "f32" {
            (
                common::run_cpu::<f32>(&model, 1).1,
                common::run_cpu::<f32>(&model, 3).1,
            )
        } else {
            (
                common::run_cpu::<f64>(&model, 1).1,
                common::run_cpu::<f64>(&model, 3).1,
            )
        };
        for c in 0..6 {
            assert!(one[c].iter().any(|v| *v != 0.0));
            assert_eq!(one[c], three[c], "{precision} component {c}");
        }
    }
}

/// Stability at the grid's own time step: a lossless Drude plasma whose plasma edge the time
/// step barely resolves (wp dt = 1.05, courant 0.999 of the vacuum limit) fills a periodic box
/// and rings for 20,000 steps without growing. The explicit pole update of Meep's kind needs
/// courant^2 + (wp dt)^2 / 4 <= 1 here, i.e. wp dt <= 0.09, and would grow without bound at
/// these numbers; the trapezoidal update conserves a positive energy whatever wp dt.
#[test]
fn a_barely_resolved_plasma_stays_bounded_at_the_courant_limit() {
    let dt = 0.999 * 1e-8 / (299_792_458.0 * 3f64.sqrt());
    let fp = 1.05 / (2.0 * std::f64::consts::PI * dt);
    let text = format!(
        r#"
[simulation]
length_unit = "nm"
cell_size = 10.0
size = [80.0, 80.0, 80.0]
steps = 20000
courant = 0.999
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
[materials]
plasma = {{ epsilon = 1.0, drude = [{{ frequency = {fp:e} }}] }}
[[geometry]]
shape = "box"
material = "plasma"
center = [0.0, 0.0, 0.0]
size = [1000.0, 1000.0, 1000.0]
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 1.0e15, bandwidth = 2.0e15 }}
[[monitor]]
type = "probe"
name = "p"
position = [20.0, 10.0, 0.0]
components = ["Ez"]
interpolate = false
"#
    );
    let model = common::model(&text);
    assert!((model.grid.dt / dt - 1.0).abs() < 1e-9);
    let (series, fields) = common::run_cpu::<f64>(&model, 2);
    let ez = &series[0];
    let early = common::max_abs(&ez[..2000]);
    let late = common::max_abs(&ez[ez.len() - 2000..]);
    eprintln!("max |Ez|: first 2000 steps {early:.3e}, last 2000 {late:.3e}");
    assert!(early > 0.0 && fields.iter().flatten().all(|v| v.is_finite()));
    // Energy is conserved, so the field at one point can only move energy around: it does
    // not grow beyond a few times its early peak (an instability grows by orders).
    assert!(late < 3.0 * early, "{late:.3e} vs {early:.3e}");
}

/// `yee check` names where a dispersive metal's surface is staircased: with `conformal =
/// false`, a gold sphere and a slanted gold polygon in vacuum have faces off the grid planes,
/// whose averages with vacuum would be cell resonances, so their lines say so; a gold box and
/// an axis-aligned polygon are smoothed on every face (mean for parallel components, harmonic
/// mean for normal ones) and say nothing. By default (conformal) the surface ports place the
/// curved and slanted faces, and nothing is said; with `subpixel = false` every surface is
/// staircased by request and nothing is said.
#[test]
fn check_names_the_staircased_surfaces_of_a_metal() {
    let scene = |subpixel: bool, conformal: bool| {
        format!(
            r#"
[simulation]
length_unit = "um"
cell_size = 0.01
size = [1.0, 1.0, 1.0]
steps = 10
subpixel = {subpixel}
[materials]
gold = {{ library = "Au", conformal = {conformal} }}
[[geometry]]
shape = "sphere"
material = "gold"
center = [0.2, 0.2, 0.2]
radius = 0.1
[[geometry]]
shape = "box"
material = "gold"
center = [-0.2, -0.2, -0.2]
size = [0.1, 0.1, 0.1]
[[geometry]]
shape = "polygon"
material = "gold"
axis = "z"
vertices = [[-0.3, 0.1], [-0.1, 0.1], [-0.1, 0.3], [-0.3, 0.3]]
span = [0.0, 0.1]
[[geometry]]
shape = "polygon"
material = "gold"
axis = "z"
vertices = [[0.1, -0.3], [0.3, -0.3], [0.1, -0.1]]
span = [0.0, 0.1]
"#
        )
    };
    let lines = |subpixel: bool, conformal: bool| {
        let text = scene(subpixel, conformal);
        let (model, _) = yee::scene::load_str(&text, "gold.toml").unwrap();
        yee::scene::object_lines(&model)
    };
    let note = "surface off the grid planes is staircased against `vacuum`";
    let smoothed = lines(true, false);
    let noted: Vec<bool> = smoothed.iter().map(|l| l.contains(note)).collect();
    assert_eq!(noted, [true, false, false, true], "{smoothed:#?}");
    assert!(lines(true, true).iter().all(|l| !l.contains(note)));
    assert!(lines(false, false).iter().all(|l| !l.contains(note)));
}
