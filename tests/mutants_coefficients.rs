//! The update coefficients against their definitions, written to catch the mutants of
//! `scripts/mutants.sh` the physics tests let through (docs/testing.md): a wrong factor in a
//! lossy material's (ca, cb) or in a CPML layer's (b, c, 1/kappa) can leave a cavity, a Fresnel
//! interface and a -40 dB reflection bound intact (vacuum has no loss; a slightly wrong
//! profile still absorbs), so each coefficient is checked here against what it must be.
//!
//! - Materials: the E update `E <- ca E + cb (curl H - J)` must be the exact step of
//!   eps dE/dt = -sigma E + curl H - J with curl H - J held over the step (the exponential
//!   update): E decays as exp(-sigma t / eps), the curl enters through the Duhamel integral,
//!   and a steady current J settles at Ohm's law, E = -J / sigma.
//! - CPML (Roden and Gedney 2000): psi^n = b psi^{n-1} + c dE, with b the decay of the
//!   convolution kernel zeta(t) = -sigma / (eps0 kappa^2) exp(-(sigma / kappa + alpha) t / eps0)
//!   over one step and c its integral over the step; sigma, kappa and alpha graded over the
//!   layer as the design says, sampled at the E (integer) and H (half-integer) positions.

use yee::model::{
    Axis, Boundaries, BoundaryKind, Material, MaterialTable, PmlParams, EPS0, ETA0, MU0,
};

fn table(materials: &[(f64, f64, bool)]) -> MaterialTable {
    let mut t = MaterialTable::vacuum();
    for (i, &(epsilon, conductivity, pec)) in materials.iter().enumerate() {
        t.push(Material {
            pec,
            ..Material::dielectric(&format!("m{i}"), epsilon, conductivity)
        });
    }
    t
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}

/// A time step typical of the solver: Courant 0.99 on a 3-D grid of 1 mm cells.
const DT: f64 = 0.99 * 1e-3 / (299_792_458.0 * 1.732_050_807_568_877_2);

#[test]
fn lossless_and_pec_coefficients() {
    let t = table(&[(4.0, 0.0, false), (2.25, 0.0, false), (1.0, 0.0, true)]);
    let c = t.coefficients(DT);
    assert_eq!(c.len(), 4, "one pair per material, vacuum first");
    // No loss: E keeps its value (ca = 1 exactly) and gains dt / eps per unit curl H.
    for (k, eps) in [(0, 1.0), (1, 4.0), (2, 2.25)] {
        assert_eq!(c[k].ca, 1.0, "material {k}");
        // Rounding of one quotient: 1e-15.
        assert!(rel(c[k].cb, DT / (EPS0 * eps)) < 1e-15, "material {k}");
    }
    // PEC holds E at zero whatever curl H is.
    assert_eq!((c[3].ca, c[3].cb), (0.0, 0.0));
    // H: no material is magnetic, so every H coefficient is exactly the vacuum one.
    assert!(!t.any_magnetic() && !t.any_dispersive());
    for h in t.magnetic_coefficients(DT) {
        assert_eq!((h.ca, h.cb), (1.0, DT / MU0));
    }
    // A lossy magnetic material: H = ca H - cb curl E with ca = exp(-x), x = sigma_m dt / mu,
    // cb the exact integral of exp(-sigma_m s / mu) / mu over the step (Gauss quadrature).
    let mut m = t.clone();
    let (mu, sm) = (4.0, 3.0e5);
    m.push(Material {
        mu,
        magnetic_conductivity: sm,
        ..Material::dielectric("ferrite", 2.0, 0.0)
    });
    assert!(m.any_magnetic());
    let h = m.magnetic_coefficients(DT)[4];
    let rate = sm / (MU0 * mu);
    assert!(rel(h.ca, (-rate * DT).exp()) < 1e-15);
    let cb = gauss(|s| (-rate * s).exp() / (MU0 * mu), DT);
    assert!(rel(h.cb, cb) < 1e-13, "{} vs {cb}", h.cb);
}

/// 16-point Gauss-Legendre quadrature of `f` over [0, h] (positive half of the nodes and
/// weights on [-1, 1]); exact to rounding for the single smooth exponentials integrated here.
fn gauss(f: impl Fn(f64) -> f64, h: f64) -> f64 {
    const X: [f64; 8] = [
        0.095_012_509_837_637_44,
        0.281_603_550_779_258_9,
        0.458_016_777_657_227_4,
        0.617_876_244_402_643_7,
        0.755_404_408_355_003,
        0.865_631_202_387_831_8,
        0.944_575_023_073_232_6,
        0.989_400_934_991_649_9,
    ];
    const W: [f64; 8] = [
        0.189_450_610_455_068_5,
        0.182_603_415_044_923_6,
        0.169_156_519_395_002_5,
        0.149_595_988_816_576_7,
        0.124_628_971_255_533_9,
        0.095_158_511_682_492_78,
        0.062_253_523_938_647_89,
        0.027_152_459_411_754_095,
    ];
    let m = h / 2.0;
    X.iter()
        .zip(W)
        .map(|(x, w)| w * m * (f(m - m * x) + f(m + m * x)))
        .sum()
}

#[test]
fn lossy_coefficients_are_the_exact_step_of_the_conductor_ode() {
    // x = sigma dt / eps from 1e-6 (a weak loss) to 50 (a good conductor on this grid).
    let cases: Vec<(f64, f64)> = [1e-6, 1e-2, 0.6, 3.0, 50.0]
        .iter()
        .flat_map(|&x| [1.0, 6.0].map(|eps: f64| (eps, x * EPS0 * eps / DT)))
        .collect();
    let t = table(
        &cases
            .iter()
            .map(|&(e, s)| (e, s, false))
            .collect::<Vec<_>>(),
    );
    let coef = t.coefficients(DT);
    for (k, &(eps, sigma)) in cases.iter().enumerate() {
        let c = coef[k + 1];
        let e = EPS0 * eps;
        let x = sigma * DT / e;
        // With curl H held at its mid-step value C over the step, eps dE/dt = -sigma E + C has
        // the solution E(dt) = E0 exp(-sigma dt / eps) + (C / eps) int_0^dt exp(-sigma (dt -
        // tau) / eps) dtau. So ca is the decay over one step (0 < ca < 1: monotonic for any
        // sigma) and cb the integral, here by quadrature. Rounding of exp and of the
        // quadrature: 1e-14; a semi-implicit ca (1 - x/2)/(1 + x/2) is off by x^3/12 relative
        // (1e-7 at x = 0.01) and a dropped factor by far more.
        assert!(c.ca > 0.0 && c.ca < 1.0, "case {k}: ca {}", c.ca);
        assert!(
            rel(c.ca, (-x).exp()) < 1e-15,
            "case {k}: ca {} vs exp(-x)",
            c.ca
        );
        let duhamel = gauss(|tau| (-sigma * (DT - tau) / e).exp(), DT) / e;
        if x <= 3.0 {
            assert!(
                rel(c.cb, duhamel) < 1e-14,
                "case {k}: cb {:e}, the ODE gives {duhamel:e}",
                c.cb
            );
        }
        // Any x: cb is (1 - ca) / sigma (the integral in closed form), which also makes the
        // steady state of a constant current J with no curl, E = ca E - cb J, Ohm's law
        // E = -J / sigma. 1 - ca loses digits for small x: 1e-16 / x relative.
        let j = 2.5;
        let steady = -c.cb * j / (1.0 - c.ca);
        assert!(
            rel(steady, -j / sigma) < 1e-14 + 2e-16 / x,
            "case {k}: {steady} vs {}",
            -j / sigma
        );
        // A weak loss tends to the lossless coefficients: cb = (dt / eps)(1 - x/2 + ...).
        if x < 1e-3 {
            assert!(rel(c.cb, DT / e * (1.0 - x / 2.0)) < x * x, "case {k}");
        }
    }
}

/// The CPML kernel's parameters at normalised depth `d` (0 at the inner face, 1 at the wall):
/// sigma graded as d^m up to the optimum's multiple, kappa from 1 to kappa_max the same way,
/// alpha linear from alpha_max at the inner face to 0 at the wall.
fn stretch(p: &PmlParams, d: f64, cell: f64) -> (f64, f64, f64) {
    let sigma_max = p.sigma_factor * 0.8 * (p.order + 1.0) / (ETA0 * cell);
    let g = d.powf(p.order);
    (
        sigma_max * g,
        1.0 + (p.kappa_max - 1.0) * g,
        p.alpha_max * (1.0 - d),
    )
}

/// (b, c, 1/kappa) from the kernel: b its decay over one step, c its integral over the step by
/// quadrature.
fn from_kernel(sigma: f64, kappa: f64, alpha: f64, dt: f64) -> [f64; 3] {
    let rate = (sigma / kappa + alpha) / EPS0;
    let zeta = |t: f64| -sigma / (EPS0 * kappa * kappa) * (-rate * t).exp();
    let b = zeta(dt) / zeta(0.0);
    let b = if b.is_nan() { (-rate * dt).exp() } else { b };
    let c = gauss(zeta, dt);
    [b, c, 1.0 / kappa]
}

fn check_profile(p: PmlParams, hi: PmlParams, what: &str) {
    let (n, cell) = (40, 1e-3);
    let faces = [
        [BoundaryKind::Pml(p), BoundaryKind::Pml(hi)],
        [BoundaryKind::Pec, BoundaryKind::Pec],
        [BoundaryKind::Periodic, BoundaryKind::Periodic],
    ];
    let b = Boundaries::new(faces, [n, 10, 12], [cell, 2e-3, 1.5e-3], DT);
    let x = &b.profiles[Axis::X as usize];
    assert_eq!((x.lo, x.hi, x.n), (p.cells, hi.cells, n), "{what}");
    assert_eq!(
        (x.e.len(), x.h.len()),
        (p.cells + hi.cells, p.cells + hi.cells)
    );
    assert_eq!(b.profiles[1].layers() + b.profiles[2].layers(), 0, "{what}");
    // The loop below checks every layer only if `layers` counts them all.
    assert_eq!(x.layers(), p.cells + hi.cells, "{what}");
    for l in 0..x.layers() {
        let i = x.global_index(l);
        assert_eq!(x.layer_of(i), Some(l), "{what}: layer {l}");
        // E at x = i, H at x = i + 1/2 (in cells); depth measured from the inner face.
        let (params, de, dh) = if l < p.cells {
            let t = p.cells as f64;
            assert_eq!(i, l);
            (p, (t - i as f64) / t, (t - i as f64 - 0.5) / t)
        } else {
            let t = hi.cells as f64;
            let start = (n - hi.cells) as f64;
            assert_eq!(i, n - hi.cells + (l - p.cells));
            (hi, (i as f64 - start) / t, (i as f64 + 0.5 - start) / t)
        };
        for (got, depth, node) in [(x.e[l], de, "E"), (x.h[l], dh, "H")] {
            let (sigma, kappa, alpha) = stretch(&params, depth.clamp(0.0, 1.0), cell);
            let want = from_kernel(sigma, kappa, alpha, DT);
            for (k, name) in ["b", "c", "1/kappa"].iter().enumerate() {
                // Closed forms against the kernel: rounding (1e-13); c by quadrature, 1e-12
                // of b - 1 (c is 0 where sigma is 0, at the inner face without alpha).
                let scale = if k == 1 {
                    (1.0 - want[0]).abs() / kappa
                } else {
                    want[k].abs()
                };
                assert!(
                    (got[k] - want[k]).abs() <= 1e-12 * scale + 1e-300,
                    "{what}: {node} node of layer {l} (depth {depth}): {name} = {:e}, the \
                     kernel gives {:e}",
                    got[k],
                    want[k]
                );
            }
        }
    }
    assert_eq!(
        x.layer_of(p.cells),
        None,
        "{what}: the interior has no layer"
    );
    assert_eq!(x.layer_of(n - hi.cells - 1), None, "{what}");
}

#[test]
fn cpml_coefficients_are_the_cfs_kernel_graded_over_the_layer() {
    // The default (polynomial order 3, the optimal sigma, kappa 1, no alpha) on both faces,
    // of different thicknesses.
    check_profile(
        PmlParams::with_cells(8),
        PmlParams::with_cells(5),
        "default",
    );
    // A CFS profile: kappa and alpha on, another order and sigma.
    let cfs = PmlParams {
        cells: 10,
        order: 4.0,
        sigma_factor: 1.3,
        kappa_max: 7.0,
        alpha_max: 0.05,
    };
    let other = PmlParams {
        cells: 6,
        order: 2.0,
        sigma_factor: 0.7,
        kappa_max: 3.0,
        alpha_max: 0.2,
    };
    check_profile(cfs, other, "cfs");
    // The optimum sigma is that of the design, 0.8 (m + 1) / (eta0 d) at the wall: check the
    // wall's E node (depth 1) against the kernel with that sigma spelled out.
    let b = Boundaries::new(
        [
            [BoundaryKind::Pml(cfs), BoundaryKind::Pec],
            [BoundaryKind::Pec; 2],
            [BoundaryKind::Pec; 2],
        ],
        [30, 4, 4],
        [1e-3; 3],
        DT,
    );
    let sigma = 1.3 * 0.8 * 5.0 / (MU0 * 299_792_458.0 * 1e-3);
    let want = from_kernel(sigma, 7.0, 0.0, DT);
    let got = b.profiles[0].e[0];
    assert!(rel(got[0], want[0]) < 1e-12 && rel(got[1], want[1]) < 1e-12);
    assert!(rel(got[2], 1.0 / 7.0) < 1e-15);
}
