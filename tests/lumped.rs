//! Lumped ports and RLC elements (`src/model/lumped.rs`): an element's impedance against its
//! circuit, a series RLC's resonance and the power balance between a port and the resistor it
//! feeds in a closed box, a port on a parallel-plate line against the line's impedance, the
//! same bits on any slab split, and bad ports and elements refused.

mod common;

use num_complex::Complex64;
use std::f64::consts::PI;
use yee::backend::StepMode;
use yee::decomp::SlabRange;

/// A closed PEC box (10 mm, 0.5 mm cells) with a PEC wire up its axis between two one-cell
/// gaps: a 50 ohm port `feed` in the lower one, the element `rlc` (`element`) in the upper.
/// The box's first resonance is near 21 GHz, so below 1 GHz it is a circuit: the port, the
/// wire's few nH, the element.
fn closed_loop(element: &str) -> String {
    format!(
        r#"
[simulation]
name = "rlc"
length_unit = "mm"
cell_size = 0.5
size = [10.0, 10.0, 10.0]
duration = 3.0e-8
precision = "f64"

[boundaries]
default = {{ type = "pec" }}

[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, 0.0]
size = [0.0, 0.0, 9.0]

[[geometry]]
shape = "box"
center = [0.0, 0.0, 4.75]
size = [0.0, 0.0, 0.5]
element = {{ {element}, direction = "z", name = "rlc" }}

[[source]]
type = "lumped_port"
name = "feed"
box = {{ center = [0.0, 0.0, -4.75], size = [0.0, 0.0, 0.5] }}
direction = "+z"
impedance = 50.0
waveform = {{ type = "gaussian", frequency = 5.0e8, bandwidth = 8.0e8 }}
frequencies = {{ min = 3.0e8, max = 8.0e8, count = 51 }}
"#
    )
}

const R: f64 = 50.0;
const L: f64 = 1.0e-7;
const C: f64 = 1.0e-12;

fn complex(run: &common::BinaryRun, path: &str) -> Vec<Complex64> {
    let ds = run.file.dataset(path).unwrap();
    ds.read_raw::<yee::output::Complex>()
        .unwrap()
        .iter()
        .map(|c| Complex64::new(c.r, c.i))
        .collect()
}

/// A series RLC across the upper gap: its impedance V / I (its own terminals) is
/// R + i (w L - 1 / (w C)) within 1 % over 0.3-0.8 GHz (the gap cell's own capacitance,
/// eps0 A / d = 4.4 fF, shunts the element: 0.3 % at the band's edges; the trapezoidal update
/// warps w by (w dt)^2 / 12 < 1e-5); the zero of its reactance, interpolated between
/// frequencies 10 MHz apart, within 0.5 % of 1 / (2 pi sqrt(L C)) = 503.3 MHz; and the power
/// the port delivers equals the power the resistor takes within 1e-4 wherever the port
/// delivers a tenth of its peak (the box is lossless and closed: energy goes nowhere else;
/// both powers are Re(V I*) of DFTs with the current half a step off, each at its time;
/// measured 1.8e-6, what the 30 ns run leaves ringing; a wrong half step or area is 1e-2).
#[test]
fn a_series_rlc_resonates_at_its_frequency_and_takes_the_ports_power() {
    let run = common::BinaryRun::new(
        "lumped-series",
        &closed_loop(&format!(
            "resistance = {R}, inductance = {L}, capacitance = {C}, topology = \"series\""
        )),
    );
    let f = run.read("elements/rlc/frequency");
    let z = complex(&run, "elements/rlc/impedance");
    for (f, z) in f.iter().zip(&z) {
        let w = 2.0 * PI * f;
        let want = Complex64::new(R, w * L - 1.0 / (w * C));
        assert!(
            (z - want).norm() < 0.01 * want.norm(),
            "{f} Hz: Z = {z}, the circuit's {want}"
        );
    }
    let k = (1..f.len()).find(|&k| z[k].im > 0.0).unwrap();
    let t = -z[k - 1].im / (z[k].im - z[k - 1].im);
    let f0 = f[k - 1] + t * (f[k] - f[k - 1]);
    let want = 1.0 / (2.0 * PI * (L * C).sqrt());
    assert!(
        (f0 / want - 1.0).abs() < 5e-3,
        "resonance at {f0} Hz, want {want}"
    );
    let accepted = run.read("ports/feed/accepted_power");
    let dissipated = run.read("elements/rlc/power");
    let peak = accepted.iter().fold(0.0f64, |m, &p| m.max(p));
    for k in (0..f.len()).filter(|&k| accepted[k] > 0.1 * peak) {
        assert!(
            (dissipated[k] / accepted[k] - 1.0).abs() < 1e-4,
            "{} Hz: the resistor takes {}, the port delivers {}",
            f[k],
            dissipated[k],
            accepted[k]
        );
    }
}

/// A parallel RLC: V / I is 1 / (1/R + i w C + 1 / (i w L)) within 1 % (the gap cell's
/// 4.4 fF joins the 1 pF: 0.4 %), at the element's own frequencies (not the port's).
#[test]
fn a_parallel_rlc_has_its_circuits_impedance() {
    let run = common::BinaryRun::new(
        "lumped-parallel",
        &closed_loop(&format!(
            "resistance = {R}, inductance = {L}, capacitance = {C}, topology = \"parallel\", \
             frequencies = {{ min = 4.0e8, max = 6.0e8, count = 21 }}"
        )),
    );
    let f = run.read("elements/rlc/frequency");
    assert_eq!(f.len(), 21);
    assert!((f[0] - 4.0e8).abs() < 1.0 && (f[20] - 6.0e8).abs() < 1.0);
    assert_eq!(run.read("ports/feed/frequency").len(), 51);
    let z = complex(&run, "elements/rlc/impedance");
    for (f, z) in f.iter().zip(&z) {
        let w = 2.0 * PI * f;
        let want = 1.0 / Complex64::new(1.0 / R, w * C - 1.0 / (w * L));
        assert!(
            (z - want).norm() < 0.01 * want.norm(),
            "{f} Hz: Z = {z}, the circuit's {want}"
        );
    }
}

/// A parallel-plate line (plates 4 mm apart, periodic 4 mm wide, PML at both ends: a TEM line
/// of Z0 = eta0 h / w) fed in the middle by a port across its whole section: the port sees
/// both halves, Z0 / 2. The real part within 0.2 % of it to 4 GHz (37 cells a wavelength)
/// and S11 against a Z0 / 2 reference below -30 dB there. What is left is the loop's half
/// cell: the current is read on H half a cell each side of the port's plane, which adds
/// i Z k dx / 2 to the impedance (1 % at 1 GHz, 4 % at 4 GHz of Z0 / 2, hence the bound on
/// the real part only).
#[test]
fn a_port_across_a_parallel_plate_line_sees_the_lines_impedance() {
    let z0 = yee::model::ETA0 * 4.0 / 4.0;
    let text = format!(
        r#"
[simulation]
name = "line"
length_unit = "mm"
cell_size = 1.0
size = [80.0, 4.0, 4.0]
duration = 3.0e-9
precision = "f64"

[boundaries]
x_min = {{ type = "pml", cells = 10 }}
x_max = {{ type = "pml", cells = 10 }}
y_min = {{ type = "periodic" }}
y_max = {{ type = "periodic" }}
z_min = {{ type = "pec" }}
z_max = {{ type = "pec" }}

[[source]]
type = "lumped_port"
name = "p1"
box = {{ center = [0.0, 0.0, 0.0], size = [0.0, 4.0, 4.0] }}
direction = "+z"
impedance = {}
waveform = {{ type = "gaussian", frequency = 5.0e9, bandwidth = 8.0e9 }}
frequencies = {{ min = 1.0e9, max = 4.0e9, count = 4 }}
"#,
        z0 / 2.0
    );
    let run = common::BinaryRun::new("lumped-line", &text);
    let z = complex(&run, "ports/p1/impedance");
    let s11 = complex(&run, "ports/p1/S11");
    for (z, s) in z.iter().zip(&s11) {
        assert!(
            (z.re / (z0 / 2.0) - 1.0).abs() < 2e-3,
            "Z = {z}, Z0 / 2 = {}",
            z0 / 2.0
        );
        assert!(20.0 * s.norm().log10() < -30.0, "S11 = {s}");
    }
}

/// A port and elements of both topologies give the same fields to the bit on 1 to 3 slabs, cut
/// through their planes or not, fused or two-pass.
#[test]
fn lumped_circuits_give_the_same_bits_on_any_split() {
    let text = closed_loop("resistance = 50.0, inductance = 1.0e-7, capacitance = 1.0e-12")
        .replace("duration = 3.0e-8", "steps = 300")
        .replace(
            "[[source]]",
            "[[geometry]]\nshape = \"box\"\ncenter = [2.0, 0.0, 0.0]\nsize = [0.0, 1.0, 1.0]\nelement = { resistance = 20.0, capacitance = 1.0e-12, topology = \"parallel\", direction = \"z\", name = \"shunt\" }\n\n[[source]]",
        );
    let model = common::model(&text);
    let nx = model.grid.shape[0];
    let ranges = |cuts: &[usize]| -> Vec<SlabRange> {
        let mut all = vec![0];
        all.extend_from_slice(cuts);
        all.push(nx);
        all.windows(2)
            .map(|w| SlabRange { x0: w[0], x1: w[1] })
            .collect()
    };
    let one = common::run_ranges_mode::<f64>(&model, &ranges(&[]), StepMode::TwoPass);
    assert!(common::max_abs(&one.1[2]) > 0.0, "the port drove nothing");
    for cuts in [vec![10], vec![6, 14], vec![10, 11]] {
        for mode in [StepMode::TwoPass, StepMode::Fused] {
            let many = common::run_ranges_mode::<f64>(&model, &ranges(&cuts), mode);
            assert!(
                one.1 == many.1,
                "fields differ cut at {cuts:?}, {}",
                mode.name()
            );
        }
    }
}

/// Bad ports and elements exit 2 naming the key and saying what is allowed.
#[test]
fn bad_ports_and_elements_are_refused() {
    let good = closed_loop("resistance = 50.0").replace("duration = 3.0e-8", "steps = 10");
    let cases = [
        (
            good.replace("resistance = 50.0,", "resistance = -50.0,"),
            "geometry[1].element.resistance",
        ),
        (
            good.replace("impedance = 50.0", "impedance = 0.0"),
            "an impedance of zero would short the port",
        ),
        (
            good.replace(
                "[0.0, 0.0, -4.75], size = [0.0, 0.0, 0.5]",
                "[0.0, 0.0, -4.5], size = [0.0, 0.0, 0.2]",
            ),
            "the gap spans no cell",
        ),
        (
            good.replace(
                "[0.0, 0.0, -4.75], size = [0.0, 0.0, 0.5]",
                "[0.0, 0.0, -4.0], size = [0.0, 0.0, 1.0]",
            ),
            "shorts it",
        ),
        (
            good.replace(
                "[0.0, 0.0, -4.75], size = [0.0, 0.0, 0.5]",
                "[0.0, 0.0, -5.0], size = [0.0, 0.0, 1.0]",
            ),
            "outside the domain",
        ),
        (
            good.replace(
                "[0.0, 0.0, -4.75], size = [0.0, 0.0, 0.5]",
                "[-5.0, 0.0, -4.75], size = [0.0, 0.0, 0.5]",
            ),
            "x_min wall",
        ),
        (
            good.replace("resistance = 50.0,", "resistance = 0.0,"),
            "give at least one of",
        ),
        (
            good.replace(
                "resistance = 50.0,",
                "resistance = 50.0, frequencies = { min = 2.0e9, max = 1.0e9, count = 3 },",
            ),
            "geometry[1].element.frequencies",
        ),
        (
            good.replace("direction = \"+z\"", "direction = \"+q\""),
            "source[0].direction",
        ),
        (
            good.replace(
                "material = \"pec\"\ncenter = [0.0, 0.0, 0.0]",
                "material = \"pec\"\ncenter = [0.0, 0.0, 0.25]",
            )
            .replace(
                "size = [0.0, 0.0, 0.5]\nelement",
                "size = [0.0, 0.0, 0.5]\nmaterial = \"pec\"\nelement",
            ),
            "paints no material",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("yee-lumped-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (text, says)) in cases.iter().enumerate() {
        assert_ne!(text, &good, "case {i} changed nothing");
        let scene = dir.join(format!("bad{i}.toml"));
        std::fs::write(&scene, text).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
            .args(["check", scene.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(says), "case {i}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two lumped ports at the ends of the wire in the closed box (`[sparameters]`, one run per
/// port): the box is lossless, so S is unitary and reciprocal. Both hold to rounding
/// (measured: |S11|^2 + |S21|^2 - 1 within 8e-13, S12 - S21 within 5e-16 of |S21|, f64):
/// the leapfrog update conserves a discrete energy exactly, and the ports' power waves, each
/// from V and I at their own times, account for it; 1e-9 leaves room for other platforms'
/// rounding while any error of the ports' definitions (a half step, a sign, an area) shows.
#[test]
fn two_lumped_ports_give_a_unitary_reciprocal_s_matrix() {
    let element = "[[geometry]]\nshape = \"box\"\ncenter = [0.0, 0.0, 4.75]\nsize = [0.0, 0.0, 0.5]\nelement = { resistance = 50.0, direction = \"z\", name = \"rlc\" }";
    let port = "[[source]]\ntype = \"lumped_port\"\nname = \"top\"\nbox = { center = [0.0, 0.0, 4.75], size = [0.0, 0.0, 0.5] }\ndirection = \"-z\"\nwaveform = { type = \"gaussian\", frequency = 5.0e8, bandwidth = 8.0e8 }\nfrequencies = { min = 3.0e8, max = 8.0e8, count = 51 }";
    let one_port = closed_loop("resistance = 50.0");
    assert!(one_port.contains(element));
    let text = one_port.replace(element, port) + "\n[sparameters]\nports = [\"feed\", \"top\"]\n";
    let run = common::BinaryRun::new("lumped-two-port", &text);
    let flat = complex(&run, "sparameters/S");
    assert_eq!(flat.len(), 51 * 4);
    for s in flat.chunks(4) {
        let (s11, s12, s21, s22) = (s[0], s[1], s[2], s[3]);
        for (a, b) in [(s11, s21), (s12, s22)] {
            let total = a.norm_sqr() + b.norm_sqr();
            assert!(
                (total - 1.0).abs() < 1e-9,
                "|S11|^2 + |S21|^2 = {total}: {s:?}"
            );
        }
        assert!(
            (s12 - s21).norm() < 1e-9 * s21.norm(),
            "S12 {s12} != S21 {s21}"
        );
    }
}

/// A dipole of two PEC wires 47.5 mm long across a one-cell port gap (100 mm tip to tip, 2.5
/// mm cells) in free space, with a far-field box around it: the antenna figures.
/// - The radiation efficiency P_rad / P_acc is 1 within 1e-3 (measured 1.6e-4): the dipole is
///   lossless, so the port's accepted power and the box's flux, both DFTs in one normalisation,
///   must agree; a factor 1/2 or a half step between them would be plain.
/// - The directivity broadside is the sinusoidal-current dipole's, 4 pi U(90) / P with
///   U = ((cos(k l/2 cos t) - cos(k l/2)) / sin t)^2, within 2 % from 1.0 to 1.5 GHz
///   (measured 0.5 to 1.4 % above: a wire's current reaches a little past its last node,
///   which lengthens it, and the sinusoid is the thin-wire limit).
/// - At resonance (the reactance's zero, interpolated), the input resistance is the
///   half-wave dipole's 73 ohm within 5 % (the resonant dipole is a little shorter than half
///   a wavelength, about 70 ohm for these wires).
/// - The realized gain is the gain times 1 - |S11|^2 (the port's own S11, at 73 ohm).
#[test]
fn a_dipole_fed_by_a_port_radiates_what_it_accepts() {
    let text = r#"
[simulation]
name = "dipole"
length_unit = "mm"
cell_size = 2.5
size = [140.0, 140.0, 180.0]
duration = 8.0e-9
precision = "f64"

[boundaries]
default = { type = "pml", cells = 8 }

[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, 26.25]
size = [0.0, 0.0, 47.5]

[[geometry]]
shape = "box"
material = "pec"
center = [0.0, 0.0, -26.25]
size = [0.0, 0.0, 47.5]

[[source]]
type = "lumped_port"
name = "feed"
box = { center = [0.0, 0.0, 0.0], size = [0.0, 0.0, 5.0] }
direction = "+z"
impedance = 73.0
waveform = { type = "gaussian", frequency = 1.5e9, bandwidth = 1.5e9 }
frequencies = { min = 1.0e9, max = 2.0e9, count = 11 }

[[monitor]]
type = "far_field"
name = "pattern"
box = { center = [0.0, 0.0, 0.0], size = [80.0, 80.0, 130.0] }
frequencies = { min = 1.0e9, max = 2.0e9, count = 11 }
theta = { min = 0.0, max = 180.0, count = 37 }
phi = { min = 0.0, max = 360.0, count = 13 }
"#;
    let run = common::BinaryRun::new("lumped-dipole", text);
    let f = run.read("far_field/pattern/frequency");
    let efficiency = run.read("far_field/pattern/radiation_efficiency");
    for (f, e) in f.iter().zip(&efficiency) {
        assert!((e - 1.0).abs() < 1e-3, "{f} Hz: radiation efficiency {e}");
    }
    // [frequency, theta (37), phi (13)]: theta = 90 degrees is index 18.
    let at90 = |name: &str| -> Vec<f64> {
        let all = run.read(&format!("far_field/pattern/{name}"));
        (0..f.len()).map(|k| all[(k * 37 + 18) * 13]).collect()
    };
    let (directivity, gain, realized) = (at90("directivity"), at90("gain"), at90("realized_gain"));
    let s11 = complex(&run, "ports/feed/S11");
    for k in 0..f.len() {
        let kl = 2.0 * PI * f[k] / yee::model::C0 * 0.1;
        let n = 20_000;
        let total: f64 = (1..n)
            .map(|i| {
                let t = PI * i as f64 / n as f64;
                let u = ((0.5 * kl * t.cos()).cos() - (0.5 * kl).cos()) / t.sin();
                u * u * t.sin() * PI / n as f64
            })
            .sum::<f64>()
            * 2.0
            * PI;
        let want = 4.0 * PI * (1.0 - (0.5 * kl).cos()).powi(2) / total;
        if f[k] <= 1.5e9 {
            assert!(
                (directivity[k] / want - 1.0).abs() < 0.02,
                "{} Hz: directivity {} at 90 degrees, the sinusoidal dipole's {want}",
                f[k],
                directivity[k]
            );
        }
        let want = gain[k] * (1.0 - s11[k].norm_sqr());
        assert!(
            (realized[k] / want - 1.0).abs() < 1e-9,
            "{} Hz: realized gain {}, gain (1 - |S11|^2) {want}",
            f[k],
            realized[k]
        );
    }
    // `yee farfield` re-projects the pattern and the antenna figures follow it: at the run's
    // own angles they come back as the run wrote them (to rounding: the same projection).
    let copy = run.copy("again.h5");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_yee"))
        .args([
            "farfield",
            copy.to_str().unwrap(),
            "--theta",
            "0:180:37",
            "--phi",
            "0:360:13",
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let again = hdf5::File::open(&copy).unwrap();
    for name in [
        "directivity",
        "gain",
        "realized_gain",
        "radiation_efficiency",
    ] {
        let path = format!("far_field/pattern/{name}");
        let new = again.dataset(&path).unwrap().read_raw::<f64>().unwrap();
        let old = run.read(&path);
        assert_eq!(new.len(), old.len(), "{name}");
        for (a, b) in new.iter().zip(&old) {
            assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1e-30),
                "{name}: {a} after yee farfield, {b} before"
            );
        }
    }
    let z = complex(&run, "ports/feed/impedance");
    let k = (1..z.len()).find(|&k| z[k].im > 0.0).unwrap();
    let t = -z[k - 1].im / (z[k].im - z[k - 1].im);
    let r = z[k - 1].re + t * (z[k].re - z[k - 1].re);
    assert!(
        (r / 73.0 - 1.0).abs() < 0.05,
        "resistance at resonance {r} ohm"
    );
}

/// The null of S11 near `f[k]` (the smallest sample): a complex straight line fitted to S11 over
/// the five samples around it by least squares, and its closest approach to 0: (frequency,
/// |S11| in dB). A 5 MHz grid misses a sharp null's depth by several dB; the line does not.
fn null(f: &[f64], s: &[Complex64]) -> (f64, f64) {
    let k = (0..s.len())
        .min_by(|&a, &b| s[a].norm().total_cmp(&s[b].norm()))
        .unwrap();
    let around = k.saturating_sub(2)..(k + 3).min(s.len());
    let n = around.len() as f64;
    let x: Vec<f64> = around.clone().map(|i| f[i] - f[k]).collect();
    let (mx, ms) = (
        x.iter().sum::<f64>() / n,
        around.clone().map(|i| s[i]).sum::<Complex64>() / n,
    );
    let sxx: f64 = x.iter().map(|x| (x - mx) * (x - mx)).sum();
    let sxs: Complex64 = around.zip(&x).map(|(i, x)| (s[i] - ms) * (x - mx)).sum();
    let slope = sxs / sxx;
    let at0 = ms - slope * mx;
    let t = -(at0 * slope.conj()).re / slope.norm_sqr();
    (f[k] + t, 20.0 * (at0 + slope * t).norm().log10())
}

/// `scenes/patch_antenna.toml` (openEMS's simple patch tutorial rebuilt) against openEMS
/// 0.0.35 run on yee's own mesh (`tests/data/openems_patch_antenna_yee_mesh.json`, made by
/// `scripts/openems/patch_antenna.py`, the command in its header) and on openEMS's tutorial
/// mesh (`tests/data/openems_patch_antenna.json`). On the same mesh the two are two
/// discretisations of one grid, so the bounds are tight: S11's null within 0.3 % in
/// frequency and 1 dB in depth (measured 0.08 % and 0.13 dB), broadside directivity within 0.05
/// dB at 2.3-2.5 GHz (measured 0.004 dB), realized gain within 0.5 dB at 2.40 GHz (0.06 dB;
/// the issue's bound) and radiation efficiency within 0.01 (0.003). On openEMS's own mesh
/// (thirds rule at the patch's edges, 4.8 mm cells in air) the null is 1.04 % higher: within
/// 1.5 % here, the difference the meshes make, which the same-mesh run takes out.
#[test]
fn the_patch_antenna_matches_openems() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("scenes/patch_antenna.toml")).unwrap();
    let run = common::BinaryRun::new("patch", &text);
    let f = run.read("ports/feed/frequency");
    let (f0, depth) = null(&f, &complex(&run, "ports/feed/S11"));
    let reference = |name: &str| -> serde_json::Value {
        let path = root.join(format!("tests/data/{name}.json"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let list = |v: &serde_json::Value, key: &str| -> Vec<f64> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let s11 = |v: &serde_json::Value| -> Vec<Complex64> {
        list(v, "s11_re")
            .iter()
            .zip(list(v, "s11_im"))
            .map(|(&r, i)| Complex64::new(r, i))
            .collect()
    };
    let same = reference("openems_patch_antenna_yee_mesh");
    let (g0, depth_openems) = null(&list(&same, "frequency"), &s11(&same));
    assert!(
        (f0 / g0 - 1.0).abs() < 3e-3,
        "S11 null at {f0} Hz, openEMS {g0}"
    );
    assert!(
        (depth - depth_openems).abs() < 1.0,
        "null {depth} dB, openEMS {depth_openems}"
    );
    let tutorial = reference("openems_patch_antenna");
    let (t0, _) = null(&list(&tutorial, "frequency"), &s11(&tutorial));
    assert!(
        (f0 / t0 - 1.0).abs() < 0.015,
        "S11 null at {f0} Hz, openEMS's mesh {t0}"
    );
    // yee's far field: [frequency (2.30-2.50 GHz, 5), theta (37), phi (2)], broadside theta 0.
    let broadside = |name: &str| -> Vec<f64> {
        let all = run.read(&format!("far_field/pattern/{name}"));
        (0..5).map(|k| all[k * 37 * 2]).collect()
    };
    let db = |x: f64| 10.0 * x.log10();
    let (d, g) = (broadside("directivity"), broadside("realized_gain"));
    let efficiency = run.read("far_field/pattern/radiation_efficiency");
    let ff = list(&same, "ff_frequency");
    let (od, og, oe) = (
        list(&same, "directivity_dbi"),
        list(&same, "realized_gain_dbi"),
        list(&same, "radiation_efficiency"),
    );
    for k in 0..5 {
        let fk = 2.30e9 + 0.05e9 * k as f64;
        let j = ff
            .iter()
            .position(|&x| (x - fk).abs() < 1e6)
            .expect("openEMS has the frequency");
        assert!(
            (db(d[k]) - od[j]).abs() < 0.05,
            "{fk} Hz: directivity {} dBi, openEMS {}",
            db(d[k]),
            od[j]
        );
        assert!(
            (efficiency[k] - oe[j]).abs() < 0.01,
            "{fk} Hz: efficiency {}, openEMS {}",
            efficiency[k],
            oe[j]
        );
        if k == 2 {
            assert!(
                (db(g[k]) - og[j]).abs() < 0.5,
                "{fk} Hz: realized gain {} dBi, openEMS {}",
                db(g[k]),
                og[j]
            );
        }
    }
}
