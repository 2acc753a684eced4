//! The Mie series for a sphere (Bohren & Huffman, Absorption and Scattering of Light by Small
//! Particles, 1983, ch. 4), written from the formulas: the reference for the scattering tests.
//!
//! A sphere of radius a in vacuum, relative refractive index m = sqrt(eps mu) (e^{-iwt}: a
//! lossy medium has Im m > 0), size parameter x = k a. With the Riccati-Bessel functions
//! psi_n(z) = z j_n(z) and xi_n(z) = z h1_n(z), the coefficients are
//! a_n = (m psi_n(mx) psi_n'(x) - psi_n(x) psi_n'(mx)) / (m psi_n(mx) xi_n'(x) - xi_n(x) psi_n'(mx)),
//! b_n = (psi_n(mx) psi_n'(x) - m psi_n(x) psi_n'(mx)) / (psi_n(mx) xi_n'(x) - m xi_n(x) psi_n'(mx)),
//! evaluated with the logarithmic derivative D_n(z) = psi_n'(z) / psi_n(z) by downward
//! recurrence (stable for absorbing spheres), and for a perfect conductor (m -> infinity)
//! a_n = psi_n'(x) / xi_n'(x), b_n = psi_n(x) / xi_n(x).

use num_complex::Complex64;

/// The sphere's material.
#[derive(Clone, Copy, Debug)]
pub enum Sphere {
    /// Relative refractive index m.
    Index(Complex64),
    /// A perfect electric conductor.
    Pec,
}

/// Terms of the series: Wiscombe's criterion x + 4 x^(1/3) + 2.
fn terms(x: f64) -> usize {
    (x + 4.0 * x.cbrt() + 2.0).ceil() as usize
}

/// The coefficients (a_n, b_n), n = 1..N.
pub fn coefficients(sphere: Sphere, x: f64) -> Vec<(Complex64, Complex64)> {
    let n_max = terms(x);
    // psi_n(x) and chi_n(x) (xi = psi - i chi, i.e. h1 = j + i y with chi_n = -x y_n) by
    // upward recurrence, which is stable for the real argument x.
    let mut psi = vec![0.0; n_max + 1];
    let mut chi = vec![0.0; n_max + 1];
    psi[0] = x.sin();
    chi[0] = x.cos();
    // psi_{-1} = cos x, chi_{-1} = -sin x.
    let mut prev = (x.cos(), -x.sin());
    for n in 1..=n_max {
        let f = (2 * n - 1) as f64 / x;
        let p = f * psi[n - 1] - prev.0;
        let c = f * chi[n - 1] - prev.1;
        prev = (psi[n - 1], chi[n - 1]);
        psi[n] = p;
        chi[n] = c;
    }
    let xi = |n: usize| Complex64::new(psi[n], -chi[n]);
    let mut out = Vec::with_capacity(n_max);
    match sphere {
        Sphere::Pec => {
            for n in 1..=n_max {
                let nf = n as f64;
                // psi_n' = psi_{n-1} - n psi_n / x; likewise xi.
                let dpsi = psi[n - 1] - nf * psi[n] / x;
                let dxi = xi(n - 1) - nf * xi(n) / x;
                out.push((dpsi / dxi, psi[n] / xi(n)));
            }
        }
        Sphere::Index(m) => {
            let mx = m * x;
            // Downward recurrence of D_n(mx) from well above N.
            let n_start = n_max.max(mx.norm().ceil() as usize) + 16;
            let mut d = vec![Complex64::new(0.0, 0.0); n_start + 1];
            for n in (1..=n_start).rev() {
                let nf = n as f64;
                d[n - 1] = nf / mx - 1.0 / (d[n] + nf / mx);
            }
            for n in 1..=n_max {
                let nf = n as f64;
                let da = d[n] / m + nf / x;
                let db = d[n] * m + nf / x;
                let a = (da * psi[n] - psi[n - 1]) / (da * xi(n) - xi(n - 1));
                let b = (db * psi[n] - psi[n - 1]) / (db * xi(n) - xi(n - 1));
                out.push((a, b));
            }
        }
    }
    out
}

/// Scattering, extinction and absorption efficiencies (cross-section over pi a^2).
pub fn efficiencies(sphere: Sphere, x: f64) -> (f64, f64, f64) {
    let mut sca = 0.0;
    let mut ext = 0.0;
    for (n, (a, b)) in coefficients(sphere, x).iter().enumerate() {
        let w = (2 * (n + 1) + 1) as f64;
        sca += w * (a.norm_sqr() + b.norm_sqr());
        ext += w * (a + b).re;
    }
    let k = 2.0 / (x * x);
    (k * sca, k * ext, k * (ext - sca))
}

/// The scattering amplitudes S1 (perpendicular) and S2 (parallel) at scattering angle
/// `theta` (radians from the forward direction).
pub fn amplitudes(sphere: Sphere, x: f64, theta: f64) -> (Complex64, Complex64) {
    let mu = theta.cos();
    let (mut pi_prev, mut pi) = (0.0, 1.0);
    let mut s1 = Complex64::new(0.0, 0.0);
    let mut s2 = Complex64::new(0.0, 0.0);
    for (k, (a, b)) in coefficients(sphere, x).iter().enumerate() {
        let n = (k + 1) as f64;
        let tau = n * mu * pi - (n + 1.0) * pi_prev;
        let f = (2.0 * n + 1.0) / (n * (n + 1.0));
        s1 += f * (a * pi + b * tau);
        s2 += f * (a * tau + b * pi);
        let next = ((2.0 * n + 1.0) * mu * pi - (n + 1.0) * pi_prev) / n;
        pi_prev = pi;
        pi = next;
    }
    (s1, s2)
}

/// The bistatic radar cross-section (m^2) at scattering angle `theta` for radius `a` (m) and
/// wavenumber `k`: 4 pi |S|^2 / k^2 with S = S2 in the plane of the incident E (E-plane) and S1
/// in the plane of H (H-plane); backscatter (theta = pi) is the monostatic RCS.
pub fn rcs(sphere: Sphere, a: f64, k: f64, theta: f64, e_plane: bool) -> f64 {
    let (s1, s2) = amplitudes(sphere, k * a, theta);
    let s = if e_plane { s2 } else { s1 };
    4.0 * std::f64::consts::PI * s.norm_sqr() / (k * k)
}

/// Checks of the series against its limits, run by `tests/mie_reference.rs`.
pub fn self_check() {
    use std::f64::consts::PI;
    // Rayleigh: Q_sca = (8/3) x^4 |(m^2 - 1)/(m^2 + 2)|^2 for x << 1.
    let m = Complex64::new(1.5, 0.0);
    let x = 0.01;
    let (q_sca, q_ext, q_abs) = efficiencies(Sphere::Index(m), x);
    let l = ((m * m - 1.0) / (m * m + 2.0)).norm_sqr();
    let rayleigh = 8.0 / 3.0 * x.powi(4) * l;
    assert!(
        (q_sca / rayleigh - 1.0).abs() < 1e-3,
        "{q_sca} vs {rayleigh}"
    );
    assert!(
        q_abs.abs() < 1e-9 * q_ext.max(1e-30) + 1e-20,
        "lossless: no absorption"
    );
    // Absorbing Rayleigh sphere: Q_abs = 4 x Im((m^2 - 1)/(m^2 + 2)).
    let m = Complex64::new(1.5, 0.1);
    let (_, _, q_abs) = efficiencies(Sphere::Index(m), x);
    let want = 4.0 * x * ((m * m - 1.0) / (m * m + 2.0)).im;
    assert!((q_abs / want - 1.0).abs() < 1e-3, "{q_abs} vs {want}");
    // Large spheres: extinction paradox, Q_ext -> 2.
    let (_, q_ext, _) = efficiencies(Sphere::Index(Complex64::new(1.5, 0.0)), 400.0);
    assert!((q_ext - 2.0).abs() < 0.05, "{q_ext}");
    // Optical theorem: Q_ext = (4 / x^2) Re S(0).
    for x in [0.7, 3.0, 9.0] {
        let sphere = Sphere::Index(Complex64::new(1.33, 0.02));
        let (_, q_ext, _) = efficiencies(sphere, x);
        let (s1, s2) = amplitudes(sphere, x, 0.0);
        assert!((s1 - s2).norm() < 1e-9 * s1.norm());
        assert!((4.0 / (x * x) * s1.re / q_ext - 1.0).abs() < 1e-9);
    }
    // PEC Rayleigh backscatter: sigma = 9 pi a^2 (ka)^4; and Q_sca = (10/3) x^4.
    let (a, k) = (1.0, 0.01);
    let back = rcs(Sphere::Pec, a, k, PI, true);
    assert!(
        (back / (9.0 * PI * (k * a).powi(4)) - 1.0).abs() < 1e-3,
        "{back}"
    );
    let (q_sca, _, q_abs) = efficiencies(Sphere::Pec, k * a);
    assert!((q_sca / (10.0 / 3.0 * (k * a).powi(4)) - 1.0).abs() < 1e-3);
    assert!(q_abs.abs() < 1e-9 * q_sca);
    // A large PEC sphere's backscatter tends to its optical value pi a^2.
    let back = rcs(Sphere::Pec, 1.0, 200.0, PI, true);
    assert!((back / PI - 1.0).abs() < 0.05, "{back}");
    // Backscatter is the same in both planes.
    let e = rcs(Sphere::Index(Complex64::new(2.0, 0.0)), 1.0, 3.0, PI, true);
    let h = rcs(Sphere::Index(Complex64::new(2.0, 0.0)), 1.0, 3.0, PI, false);
    assert!((e / h - 1.0).abs() < 1e-9);
}
