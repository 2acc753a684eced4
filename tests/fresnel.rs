//! Flux monitors against Fresnel's equations: a plane wave at normal incidence on a dielectric
//! half-space transmits T = 4 n1 n2 / (n1 + n2)^2 and reflects R = ((n1 - n2) / (n1 + n2))^2.

mod common;

fn scene(with_slab: bool) -> String {
    let slab = if with_slab {
        r#"
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 5.0]
size = [10.0, 10.0, 10.0]
"#
    } else {
        ""
    };
    format!(
        r#"
[simulation]
name = "fresnel"
length_unit = "um"
cell_size = 0.025
size = [0.1, 0.1, 8.0]
steps = 9000
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
z_min = {{ type = "pml", cells = 30 }}
z_max = {{ type = "pml", cells = 30 }}
[materials]
glass = {{ epsilon = 4.0 }}
{slab}
[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ex"
position = -2.5
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 1.5e14 }}
[[monitor]]
type = "flux"
name = "reflected"
plane = {{ z = -1.0 }}
frequencies = {{ min = 1.5e14, max = 2.5e14, count = 11 }}
[[monitor]]
type = "flux"
name = "transmitted"
plane = {{ z = 1.5 }}
frequencies = {{ min = 1.5e14, max = 2.5e14, count = 11 }}
fields = true
"#
    )
}

fn run(name: &str, text: &str) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let run = common::BinaryRun::new(&format!("fresnel-{name}"), text);
    let r = (
        run.read("flux/reflected/frequency"),
        run.read("flux/reflected/power"),
        run.read("flux/transmitted/power"),
    );
    check_dft_fields(&run.file, &r.2);
    r
}

#[test]
fn flux_spectra_match_fresnel_reflection_and_transmission() {
    let (freq, inc_r, inc_t) = run("vacuum", &scene(false));
    let (_, tot_r, trans) = run("glass", &scene(true));
    let (n1, n2) = (1.0f64, 2.0f64);
    let r_exact = ((n1 - n2) / (n1 + n2)).powi(2);
    let t_exact = 4.0 * n1 * n2 / (n1 + n2).powi(2);
    for i in 0..freq.len() {
        // Without the glass both planes see the same incident flux (lossless vacuum).
        assert!(
            (inc_r[i] - inc_t[i]).abs() < 1e-3 * inc_t[i],
            "incident flux differs between planes at {:.3e} Hz",
            freq[i]
        );
        let t = trans[i] / inc_t[i];
        // The plane before the interface sees incident minus reflected flux.
        let r = 1.0 - tot_r[i] / inc_r[i];
        eprintln!("f = {:.3e} Hz: R = {r:.5} (exact {r_exact:.5}), T = {t:.5} (exact {t_exact:.5}), R + T = {:.6}", freq[i], r + t);
        // Energy: R + T = 1 to 1e-3 (lossless; only PML reflections of < -60 dB and f64
        // rounding perturb it).
        assert!((r + t - 1.0).abs() < 1e-3, "R + T = {}", r + t);
        // The interface lies on an E node plane, which smoothing gives the mean permittivity,
        // placing the interface exactly; what remains is the grid's dispersion, which changes
        // the wave impedance in each medium by O((k d)^2 / 24): at >= 24 cells per wavelength
        // in the glass that is < 0.3 %, so R (a small difference of impedances) may move by a
        // few per cent of itself. 5 % of R.
        assert!(
            (r - r_exact).abs() < 0.05 * r_exact,
            "R = {r} vs {r_exact} at {:.3e} Hz",
            freq[i]
        );
        assert!(
            (t - t_exact).abs() < 0.01 * t_exact,
            "T = {t} vs {t_exact} at {:.3e} Hz",
            freq[i]
        );
    }
}

/// The stored DFT fields of the `transmitted` plane give back its stored spectrum, and a plane
/// wave in a periodic cell has the same DFT in every cell of the plane.
fn check_dft_fields(f: &hdf5::File, power: &[f64]) {
    use yee::output::Complex;
    let read = |c: &str| {
        let ds = f.dataset(&format!("flux/transmitted/{c}")).unwrap();
        assert_eq!(
            ds.shape(),
            vec![11, 4, 4],
            "[frequency, nx, ny] for a z plane"
        );
        ds.read_raw::<Complex>().unwrap()
    };
    let (ex, ey, hx, hy) = (read("Ex"), read("Ey"), read("Hx"), read("Hy"));
    let area = 0.025e-6 * 0.025e-6;
    for (q, p) in power.iter().enumerate() {
        let s = q * 16..(q + 1) * 16;
        let mut sum = 0.0;
        for k in s.clone() {
            // Re(E_x conj(H_y) - E_y conj(H_x)).
            sum += ex[k].r * hy[k].r + ex[k].i * hy[k].i - (ey[k].r * hx[k].r + ey[k].i * hx[k].i);
        }
        assert!(
            (sum * area - p).abs() <= 1e-12 * p.abs(),
            "fields give {} vs power {p}",
            sum * area
        );
        for k in s {
            let d = ((ex[k].r - ex[q * 16].r).powi(2) + (ex[k].i - ex[q * 16].i).powi(2)).sqrt();
            assert!(
                d <= 1e-9 * (ex[q * 16].r.hypot(ex[q * 16].i)),
                "plane wave DFT uniform across the plane"
            );
        }
    }
}

/// The flux DFTs sampled every k-th step (the automatic decimation) against every step on the
/// glass half-space: reflected and transmitted spectra within 1e-3 of the largest value (the
/// issue's bound; the decimated sums alias nothing onto the band, see
/// `yee::scene::resolve::flux_decimation`).
#[test]
fn decimated_flux_spectra_match_every_step_sampling() {
    let auto = scene(true);
    let every = auto.replace("type = \"flux\"\n", "type = \"flux\"\ndecimation = 1\n");
    let (a, e) = (
        common::BinaryRun::new("fresnel-decimated", &auto),
        common::BinaryRun::new("fresnel-every-step", &every),
    );
    let k = a.attr_u64("flux/reflected", "decimation");
    assert!(k > 1, "the automatic decimation samples every {k} steps");
    for name in ["flux/reflected/power", "flux/transmitted/power"] {
        let (x, y) = (a.read(name), e.read(name));
        let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = x
            .iter()
            .zip(&y)
            .map(|(x, y)| (x - y).abs() / scale)
            .fold(0.0, f64::max);
        eprintln!("{name}: decimated by {k}, worst {worst:.2e} of the largest value");
        assert!(worst < 1e-3, "{name}: {worst:.2e}");
    }
}

/// A plane wave in glass (n = 1.5) at `theta` degrees from +x in the x-y plane, polarised
/// `pol` (Ez: s, E across the plane of incidence; Ey: p), in a 2-D cell periodic along y
/// (the wave sets its Bloch phase), reaching air at x = 0 when `interface`, else glass all
/// the way. A flux plane with its DFT fields 2 um before the interface.
fn oblique(theta: f64, pol: &str, interface: bool) -> String {
    let (s, c) = theta.to_radians().sin_cos();
    let (centre, size) = if interface { (-5.0, 10.0) } else { (0.0, 20.0) };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.025
size = [10.0, 0.1, 0.025]
steps = 8000
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
x_min = {{ type = "pml", cells = 30 }}
x_max = {{ type = "pml", cells = 30 }}
[materials]
glass = {{ epsilon = 2.25 }}
[[geometry]]
shape = "box"
material = "glass"
center = [{centre}, 0.0, 0.0]
size = [{size}, 10.0, 10.0]
[[source]]
type = "plane_wave"
direction = [{c:.17}, {s:.17}, 0.0]
polarization = "{pol}"
position = -3.0
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 0.3e14 }}
[[monitor]]
type = "flux"
name = "m"
plane = {{ x = -2.0 }}
frequencies = {{ min = 2.0e14, max = 2.0e14, count = 1 }}
fields = true
"#
    )
}

/// The reflection coefficient of the glass-air interface at `theta` for polarisation `pol`,
/// from the tangential field `component` at the band centre: the reflected field (the run
/// with the interface less the run without) over the incident one at the flux plane, carried
/// back to the interface with the grid's own normal wavenumber. In Meep's e^{-i w t}
/// convention (yee's phasors are e^{+i w t}, so this is the conjugate of the ratio).
fn reflection(theta: f64, pol: &str, component: &str) -> (f64, f64) {
    let name = format!("{pol}-{theta:.0}");
    let with = common::BinaryRun::new(&format!("oblique-{name}-air"), &oblique(theta, pol, true));
    let without = common::BinaryRun::new(
        &format!("oblique-{name}-glass"),
        &oblique(theta, pol, false),
    );
    let read = |run: &common::BinaryRun| {
        let v = run
            .file
            .dataset(&format!("flux/m/{component}"))
            .unwrap()
            .read_raw::<yee::output::Complex>()
            .unwrap();
        (v[0].r, v[0].i)
    };
    let (tot, inc) = (read(&with), read(&without));
    let (rr, ri) = (tot.0 - inc.0, tot.1 - inc.1);
    // (rr + i ri) / (inc.0 + i inc.1)
    let m = inc.0 * inc.0 + inc.1 * inc.1;
    let (qr, qi) = ((rr * inc.0 + ri * inc.1) / m, (ri * inc.0 - rr * inc.1) / m);
    // The grid's normal wavenumber in the glass at the centre: (w~/v)^2 = k~x^2 + k~y^2,
    // k~ = (2/d) sin(k d/2), w~ = (2/dt) sin(w dt/2), with k_y = n k0 sin(theta) fixed.
    let dt = with.file.attr("dt").unwrap().read_scalar::<f64>().unwrap();
    let (d, n, c0) = (0.025e-6, 1.5, 299_792_458.0);
    let w = 2.0 * std::f64::consts::PI * 2.0e14;
    let wt = 2.0 / dt * (w * dt / 2.0).sin();
    let ky = n * w / c0 * theta.to_radians().sin();
    let kty = 2.0 / d * (ky * d / 2.0).sin();
    let ktx = ((wt * n / c0).powi(2) - kty * kty).sqrt();
    let kx = 2.0 / d * (d / 2.0 * ktx).asin();
    // e^{+i w t}: the reflected wave e^{+i kx x} over the incident e^{-i kx x}, 2 um before x = 0.
    let (s, c) = (2.0 * kx * 2.0e-6).sin_cos();
    let (r_re, r_im) = (qr * c - qi * s, qr * s + qi * c);
    (r_re, -r_im)
}

#[test]
fn total_internal_reflection_has_the_fresnel_phase() {
    // Meep's tutorial: s-polarised, 54.3 degrees from n = 1.5 into air, r = 0.22587 - 0.97416i
    // (= (a - i b) / (a + i b), a = n cos(theta), b = sqrt(n^2 sin^2(theta) - 1)).
    let (re, im) = reflection(54.3, "Ez", "Ez");
    eprintln!("TIR r = {re:.5} {im:+.5}i");
    // The grid's dispersion at 40 cells per wavelength in the glass moves the phase by
    // O((k d)^2 / 24) ~ 1e-3 rad per radian of path mismatch between the two media, and the
    // pulse's finite run leaves |r| within 1e-3 of 1 (8000 steps): 0.01 is the issue's bound.
    assert!(
        (re - 0.22587).abs() < 0.01 && (im + 0.97416).abs() < 0.01,
        "r = {re} {im}i"
    );
}

#[test]
fn brewster_p_wave_does_not_reflect_and_a_steeper_one_follows_fresnel() {
    // At Brewster's angle from glass to air, atan(1 / 1.5), a p wave (H along z) passes
    // whole: R = |r|^2 < 1e-4 (measured 6e-7).
    let brewster = (1.0f64 / 1.5).atan().to_degrees();
    let (re, im) = reflection(brewster, "Ey", "Hz");
    let r2 = re * re + im * im;
    eprintln!("Brewster R = {r2:.3e}");
    assert!(r2 < 1e-4, "R = {r2} at Brewster's angle");
    // At 20 degrees Fresnel's r_p for H is (n2 cos ti - n1 cos tt) / (n2 cos ti + n1 cos tt)
    // = -0.1562 (measured -0.1553: the grid's dispersion, as above; within 0.01).
    let (ti, n1) = (20f64.to_radians(), 1.5);
    let ct = (1.0 - (n1 * ti.sin()).powi(2)).sqrt();
    let exact = (ti.cos() - n1 * ct) / (ti.cos() + n1 * ct);
    let (re, im) = reflection(20.0, "Ey", "Hz");
    eprintln!("p at 20 degrees: r = {re:.5} {im:+.5}i, Fresnel {exact:.5}");
    assert!(
        (re - exact).abs() < 0.01 && im.abs() < 0.01,
        "r = {re} {im}i vs {exact}"
    );
}

/// A plane wave in glass (n = 1.5) at `theta` degrees from +x, its plane of incidence turned
/// `phi` degrees about x from the x-y plane (conical incidence: the wave tilts towards y and
/// z, both Bloch-periodic, 4 cells each), E along `pol` (a vector, made perpendicular to the
/// wave), reaching air at x = 0 when `interface`, else glass all the way; a flux plane at
/// x = 2 um, and diffraction monitors there (transmitted orders) and at x = -4 um, behind the
/// sheet (reflected orders).
fn conical(theta: f64, phi: f64, pol: [f64; 3], interface: bool) -> String {
    let (st, ct) = theta.to_radians().sin_cos();
    let (sp, cp) = phi.to_radians().sin_cos();
    let (centre, size) = if interface { (-5.0, 10.0) } else { (0.0, 20.0) };
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = 0.025
size = [10.0, 0.1, 0.1]
steps = 8000
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
x_min = {{ type = "pml", cells = 30 }}
x_max = {{ type = "pml", cells = 30 }}
[materials]
glass = {{ epsilon = 2.25 }}
[[geometry]]
shape = "box"
material = "glass"
center = [{centre}, 0.0, 0.0]
size = [{size}, 10.0, 10.0]
[[source]]
type = "plane_wave"
direction = [{ct:.17}, {:.17}, {:.17}]
polarization = [{:.17}, {:.17}, {:.17}]
position = -3.0
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 0.3e14 }}
[[monitor]]
type = "flux"
name = "t"
plane = {{ x = 2.0 }}
frequencies = {{ min = 2.0e14, max = 2.0e14, count = 1 }}
[[monitor]]
type = "diffraction"
name = "dt"
plane = {{ x = 2.0 }}
frequencies = {{ min = 2.0e14, max = 2.0e14, count = 1 }}
[[monitor]]
type = "diffraction"
name = "dr"
plane = {{ x = -4.0 }}
frequencies = {{ min = 2.0e14, max = 2.0e14, count = 1 }}
"#,
        st * cp,
        st * sp,
        pol[0],
        pol[1],
        pol[2]
    )
}

/// The power reflectance of the glass-air interface for a conical wave at the band centre:
/// 1 - transmitted over incident power (the incident from the run in glass alone); and the
/// diffraction monitors' order (0, 0), (reflected s, reflected p, transmitted s, transmitted
/// p), as fractions of the incident power their own incident column measured.
fn conical_reflectance(theta: f64, phi: f64, pol: [f64; 3], name: &str) -> (f64, [f64; 4]) {
    let text = conical(theta, phi, pol, true);
    let with = common::BinaryRun::new(&format!("conical-{name}-air"), &text);
    let text = conical(theta, phi, pol, false);
    let without = common::BinaryRun::new(&format!("conical-{name}-glass"), &text);
    let orders = ["dr/power_s", "dr/power_p", "dt/power_s", "dt/power_p"]
        .map(|d| with.read(&format!("diffraction/{d}"))[0]);
    let r = 1.0 - with.read("flux/t/power")[0] / without.read("flux/t/power")[0];
    (r, orders)
}

#[test]
fn conical_incidence_follows_fresnel_for_s_and_p() {
    // At 30 degrees from glass (n = 1.5) into air, Fresnel's R_s = 0.1059 and R_p = 0.0046
    // depend on the angle from the normal alone, not on the plane of incidence's turn about
    // it: turned 35 degrees, the wave tilts towards y and z at once, and its E (s: across the
    // plane of incidence, p: in it) has components along both. The grid's dispersion moves R
    // by about 1e-3 at 40 cells per wavelength in the glass, and the one-way sheet's leak
    // backwards (balanced at the band centre) is far below that: 0.003 holds both.
    let (theta, phi) = (30.0f64, 35.0f64);
    let (st, ct) = theta.to_radians().sin_cos();
    let (sp, cp) = phi.to_radians().sin_cos();
    let k = [ct, st * cp, st * sp];
    // s: x cross k, across the plane of incidence; p: k cross s.
    let s = [0.0, -k[2], k[1]];
    let p = [
        k[1] * s[2] - k[2] * s[1],
        k[2] * s[0] - k[0] * s[2],
        k[0] * s[1] - k[1] * s[0],
    ];
    let n1 = 1.5;
    let cos_t = (1.0 - (n1 * st).powi(2)).sqrt();
    let rs = (n1 * ct - cos_t) / (n1 * ct + cos_t);
    let rp = (ct - n1 * cos_t) / (ct + n1 * cos_t);
    let (got_s, orders_s) = conical_reflectance(theta, phi, s, "s");
    let (got_p, orders_p) = conical_reflectance(theta, phi, p, "p");
    eprintln!(
        "conical R_s {got_s:.5} (Fresnel {:.5}), R_p {got_p:.5} (Fresnel {:.5}); orders (r s, r p, t s, t p): s wave {orders_s:.5?}, p wave {orders_p:.5?}",
        rs * rs,
        rp * rp
    );
    assert!(
        (got_s - rs * rs).abs() < 0.002,
        "R_s {got_s} vs {}",
        rs * rs
    );
    assert!(
        (got_p - rp * rp).abs() < 0.002,
        "R_p {got_p} vs {}",
        rp * rp
    );
    // The diffraction monitors see the same: order (0, 0) keeps the wave's polarisation (an
    // interface turns s into s and p into p: the other part below 1e-6), reflected within
    // 0.002 of Fresnel's, and reflected plus transmitted within 1e-3 of 1 (their incident
    // column holds both sheets of the conical wave).
    for (orders, r2, want) in [(orders_s, rs * rs, [0, 2]), (orders_p, rp * rp, [1, 3])] {
        let other: f64 = (0..4)
            .filter(|i| !want.contains(i))
            .map(|i| orders[i].abs())
            .sum();
        assert!(other < 1e-6, "{orders:?}");
        assert!((orders[want[0]] - r2).abs() < 0.002, "{orders:?} vs {r2}");
        assert!(
            (orders[want[0]] + orders[want[1]] - 1.0).abs() < 1e-3,
            "{orders:?}"
        );
    }
}
