//! The mode solver against exact slab modes.

use super::*;

const LAMBDA: f64 = 1.55e-6;
const N_SI: f64 = 3.476;
const N_OX: f64 = 1.444;
const THICK: f64 = 220e-9;

/// The fundamental even mode of the symmetric slab (core `n1`, cladding `n2`, thickness `d`)
/// at `k0`: kappa tan(kappa d / 2) = r gamma, with r = 1 (TE) or n1^2 / n2^2 (TM), solved by
/// bisection over n_eff in (n2, n1) on the first branch (kappa d / 2 < pi / 2).
fn slab_neff(k0: f64, n1: f64, n2: f64, d: f64, tm: bool) -> f64 {
    let r = if tm { (n1 / n2).powi(2) } else { 1.0 };
    let f = |n: f64| {
        let kappa = k0 * (n1 * n1 - n * n).sqrt();
        let gamma = k0 * (n * n - n2 * n2).sqrt();
        kappa * (kappa * d / 2.0).tan() - r * gamma
    };
    // kappa d / 2 < pi / 2: n above this, where tan is finite and f rises from below zero.
    let lo_branch = (n1 * n1 - (std::f64::consts::PI / (k0 * d)).powi(2))
        .max(n2 * n2)
        .sqrt();
    let (mut lo, mut hi) = (lo_branch + 1e-12, n1 - 1e-12);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// A 1-D cross-section: the slab across u (faces on nodes, 2 um of oxide around it), one
/// periodic cell along v, cells of `h`.
fn slab(h: f64) -> CrossSection {
    let width = 2.2e-6;
    let nu = (width / h).round() as usize;
    let eps_at = |y: f64| {
        let inside = (y - width / 2.0).abs();
        if (inside - THICK / 2.0).abs() < 1e-6 * h {
            0.5 * (N_SI * N_SI + N_OX * N_OX)
        } else if inside < THICK / 2.0 {
            N_SI * N_SI
        } else {
            N_OX * N_OX
        }
    };
    let node: Vec<f64> = (0..nu).map(|j| eps_at(j as f64 * h)).collect();
    let centre: Vec<f64> = (0..nu).map(|j| eps_at((j as f64 + 0.5) * h)).collect();
    one_d(h, node, centre)
}

/// A 1-D cross-section of cells `h` across u (PEC walls) and one periodic cell along v, with
/// eps `node` at the nodes (the normal component and E_v) and `centre` at the cell centres
/// (E_u), lossless, no PML.
fn one_d(h: f64, node: Vec<f64>, centre: Vec<f64>) -> CrossSection {
    let nu = node.len();
    CrossSection {
        n: [nu, 1],
        cells: [vec![h; nu], vec![h]],
        eps: [node.clone(), centre, node],
        eps_imag: [Vec::new(), Vec::new(), Vec::new()],
        stretch: [Vec::new(), Vec::new()],
        target_neff: None,
        cut_curl: Vec::new(),
        cut_long: [Vec::new(), Vec::new()],
        walls: [Wall::Pec, Wall::Periodic],
        pec: Default::default(),
    }
}

/// The 220 nm Si slab in SiO2 at 1550 nm (the issue's case): TE0 and TM0 from the dispersion
/// relation solved here (2.84778 and 2.05332 for n = 3.476 and 1.444; the issue quotes 2.8475
/// and 2.0531, within 3e-4 of them), the solver's within 1e-3 at 5 nm cells (the issue's
/// bound), and the error falling at second order (ratio above 3 on halving; 4 is second order).
#[test]
fn a_silicon_slab_has_the_exact_te0_and_tm0_at_second_order() {
    let k0 = 2.0 * std::f64::consts::PI / LAMBDA;
    let te = slab_neff(k0, N_SI, N_OX, THICK, false);
    let tm = slab_neff(k0, N_SI, N_OX, THICK, true);
    assert!(
        (te - 2.8475).abs() < 5e-4 && (tm - 2.0531).abs() < 5e-4,
        "{te} {tm}"
    );
    let errors = |h: f64| {
        let modes = solve(&slab(h), k0, 2).expect("modes");
        let (a, b) = (&modes[0], &modes[1]);
        // TE0 (E along the slab, E_v) first, then TM0 (E across it, E_u).
        assert!(a.v_fraction() > 0.999 && b.v_fraction() < 1e-3);
        (a.neff(k0) - te, b.neff(k0) - tm)
    };
    let (te5, tm5) = errors(5e-9);
    let (te25, tm25) = errors(2.5e-9);
    eprintln!("5 nm: TE0 {te5:+.2e} TM0 {tm5:+.2e}; 2.5 nm: TE0 {te25:+.2e} TM0 {tm25:+.2e}");
    assert!(te5.abs() < 1e-3 && tm5.abs() < 1e-3);
    assert!(
        te5 / te25 > 3.0 && tm5 / tm25 > 3.0,
        "orders {} {}",
        te5 / te25,
        tm5 / tm25
    );
}

/// A rectangular core (`w` x `t`, index `n1`) centred in a cladding `n2` of `size`, on cells
/// of `h`; each Yee position's permittivity the mean over 8 x 8 samples of its own cell
/// (the node's cell runs from centre to centre).
fn strip(h: f64, w: f64, t: f64, size: [f64; 2]) -> CrossSection {
    let n = size.map(|s| (s / h).round() as usize);
    let eps_at = |y: f64, z: f64| {
        let inside = (y - size[0] / 2.0).abs() < w / 2.0 && (z - size[1] / 2.0).abs() < t / 2.0;
        if inside {
            N_SI * N_SI
        } else {
            N_OX * N_OX
        }
    };
    let mean = |y0: f64, z0: f64| {
        let mut sum = 0.0;
        for a in 0..8 {
            for b in 0..8 {
                let (dy, dz) = ((a as f64 + 0.5) / 8.0 - 0.5, (b as f64 + 0.5) / 8.0 - 0.5);
                sum += eps_at(y0 + dy * h, z0 + dz * h);
            }
        }
        sum / 64.0
    };
    let grid = |oy: f64, oz: f64| -> Vec<f64> {
        (0..n[0])
            .flat_map(|j| (0..n[1]).map(move |k| (j, k)))
            .map(|(j, k)| mean((j as f64 + oy) * h, (k as f64 + oz) * h))
            .collect()
    };
    CrossSection {
        n,
        cells: [vec![h; n[0]], vec![h; n[1]]],
        eps: [grid(0.0, 0.0), grid(0.5, 0.0), grid(0.0, 0.5)],
        eps_imag: [Vec::new(), Vec::new(), Vec::new()],
        stretch: [Vec::new(), Vec::new()],
        target_neff: None,
        cut_curl: Vec::new(),
        cut_long: [Vec::new(), Vec::new()],
        walls: [Wall::Pec, Wall::Pec],
        pec: Default::default(),
    }
}

/// A 500 x 220 nm Si strip in SiO2 at 1550 nm: TE0 (E along the width) n_eff within 0.01 of
/// 2.443 (Chrostowski and Hochberg, Silicon Photonics Design, 2015) at 20 nm cells (the
/// issue's bound), and moving towards it at 10 nm. The 8 x 8 mean is a crude smoothing; the
/// bound covers it and the reference's own rounding.
#[test]
fn a_silicon_strip_has_the_published_te0() {
    let k0 = 2.0 * std::f64::consts::PI / LAMBDA;
    let te0 = |h: f64| {
        let modes = solve(&strip(h, 500e-9, THICK, [2.5e-6, 2.0e-6]), k0, 2).expect("modes");
        let te = modes
            .iter()
            .find(|m| m.v_fraction() < 0.5)
            .expect("a TE mode");
        te.neff(k0)
    };
    let (coarse, fine) = (te0(20e-9), te0(10e-9));
    eprintln!("strip TE0: 20 nm {coarse:.5}, 10 nm {fine:.5} (published 2.443)");
    assert!((coarse - 2.443).abs() < 0.01, "{coarse}");
    assert!(
        (fine - 2.443).abs() <= (coarse - 2.443).abs() + 1e-3,
        "{fine} {coarse}"
    );
}

/// Through a model's plane (a 2-D scene: the slab across y, one periodic cell along z, 5 nm
/// cells): TE0's n_eff and group index against the dispersion relation's, n_g = n + f dn/df
/// by the same central difference of the exact n_eff. Bounds: 1e-3 for n_eff (as the
/// cross-section alone, the grid's dispersion along x adding 1e-5 at 5 nm), 3e-3 for n_g (the
/// cross-section's error in n_eff, 1.6e-4, varies by about a percent over the band, and the
/// difference magnifies that by 1 / (2e-3)).
#[test]
fn a_slab_plane_has_the_exact_group_index() {
    let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.005
size = [0.1, 2.2, 0.005]
steps = 10
precision = "f64"
[boundaries]
default = { type = "pml", cells = 8 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
si = { epsilon = 12.082576 }
oxide = { epsilon = 2.085136 }
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "box"
material = "si"
center = [0.0, 0.0, 0.0]
size = [10.0, 0.22, 10.0]
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
"#;
    let (model, _) = crate::scene::load_str(text, "slab.toml").expect("a valid scene");
    let f = crate::model::C0 / LAMBDA;
    let plane = Plane::nearest(&model, 0, 0.0).expect("in the grid");
    let found = plane.modes(&model, f, 1).expect("modes");
    let k0 = 2.0 * std::f64::consts::PI / LAMBDA;
    let n = slab_neff(k0, N_SI, N_OX, THICK, false);
    let step = 1e-3;
    let ng = n
        + (slab_neff(k0 * (1.0 + step), N_SI, N_OX, THICK, false)
            - slab_neff(k0 * (1.0 - step), N_SI, N_OX, THICK, false))
            / (2.0 * step);
    eprintln!(
        "slab TE0: n_eff {:.5} vs {n:.5}, n_g {:.4} vs {ng:.4}",
        found.neff[0], found.group_index[0]
    );
    assert!(found.modes[0].v_fraction() > 0.999);
    assert!((found.neff[0] - n).abs() < 1e-3);
    assert!((found.group_index[0] - ng).abs() < 3e-3);
}

/// An n x n cross-section of vacuum cells of 0.1 mm inside PEC walls, with `pec` held, and
/// the free-space wavenumber at 20 GHz: the coax tests' plane.
fn vacuum_square(n: usize, pec: [Vec<bool>; 3]) -> (CrossSection, f64) {
    let (len, h) = (n * n, 1e-4);
    let cs = CrossSection {
        n: [n, n],
        cells: [vec![h; n], vec![h; n]],
        eps: [vec![1.0; len], vec![1.0; len], vec![1.0; len]],
        eps_imag: [Vec::new(), Vec::new(), Vec::new()],
        stretch: [Vec::new(), Vec::new()],
        target_neff: None,
        cut_curl: Vec::new(),
        cut_long: [Vec::new(), Vec::new()],
        walls: [Wall::Pec, Wall::Pec],
        pec,
    };
    (cs, 2.0 * std::f64::consts::PI * 20e9 / 299_792_458.0)
}

/// A square coax (outer walls PEC, a PEC inner conductor in the plane): its TEM mode, n_eff 1.
#[test]
fn a_square_coax_carries_its_tem_mode() {
    let n = 20usize;
    // The inner conductor, and the outer one as a PEC material 3 nodes deep inside the walls.
    let inner = |j: usize, k: usize| {
        ((8..=12).contains(&j) && (8..=12).contains(&k)) || j <= 3 || k <= 3 || j >= 16 || k >= 16
    };
    let len = n * n;
    let mut pec = [vec![false; len], vec![false; len], vec![false; len]];
    for j in 0..n {
        for k in 0..n {
            let at = j * n + k;
            pec[0][at] = inner(j, k);
            // E_u from node (j, k) to (j + 1, k): inside when both ends are.
            pec[1][at] = inner(j, k) && inner(j + 1, k);
            pec[2][at] = inner(j, k) && inner(j, k + 1);
        }
    }
    let (cs, k0) = vacuum_square(n, pec);
    let modes = solve(&cs, k0, 2).expect("solves");
    let neff: Vec<f64> = modes.iter().map(|m| m.neff(k0)).collect();
    assert!((neff[0] - 1.0).abs() < 1e-6, "{neff:?}");
}

/// A round coax painted as a run paints it, each Yee position tested on its own (nodes and
/// edge midpoints inside r < 4 or r > 9 cells from the centre): some held edges end on nodes
/// that are not. Closed ([`CrossSection::closed`]), the plane carries the TEM mode (n_eff 1);
/// as painted, the discrete TEM does not exist (every mode found is below cutoff).
#[test]
fn a_round_coax_painted_point_by_point_carries_its_tem_mode_once_closed() {
    let n = 20usize;
    let conductor = |y: f64, z: f64| {
        let r = ((y - 10.0).powi(2) + (z - 10.0).powi(2)).sqrt();
        !(4.0..=9.0).contains(&r)
    };
    let len = n * n;
    let mut pec = [vec![false; len], vec![false; len], vec![false; len]];
    for j in 0..n {
        for k in 0..n {
            let (y, z) = (j as f64, k as f64);
            pec[0][j * n + k] = conductor(y, z);
            pec[1][j * n + k] = conductor(y + 0.5, z);
            pec[2][j * n + k] = conductor(y, z + 0.5);
        }
    }
    let (painted, k0) = vacuum_square(n, pec);
    let open = solve(&painted, k0, 1).expect("solves");
    assert!(open[0].neff(k0) < 0.5, "{}", open[0].neff(k0));
    let closed = solve(&painted.closed(), k0, 1).expect("solves");
    assert!(
        (closed[0].neff(k0) - 1.0).abs() < 1e-6,
        "{}",
        closed[0].neff(k0)
    );
}

/// The symmetric slab's fundamental even mode (as [`slab_neff`]) for a complex core
/// permittivity `eps1`: complex n_eff, by Newton's method on kappa tan(kappa d / 2) = r gamma
/// in beta^2, from the lossless mode of the real part.
fn lossy_slab_neff(k0: f64, eps1: c64, n2: f64, d: f64, tm: bool) -> c64 {
    let eps2 = c64::new(n2 * n2, 0.0);
    let r = if tm { eps1 / eps2 } else { c64::new(1.0, 0.0) };
    let f = |b2: c64| {
        let kappa = (eps1 * k0 * k0 - b2).sqrt();
        let gamma = (b2 - eps2 * k0 * k0).sqrt();
        kappa * (kappa * d / 2.0).tan() - r * gamma
    };
    let n = slab_neff(k0, eps1.re.sqrt(), n2, d, tm);
    let mut b2 = c64::new((k0 * n).powi(2), 0.0);
    for _ in 0..50 {
        let h = b2 * 1e-7;
        let step = f(b2) * h / (f(b2 + h) - f(b2));
        b2 -= step;
        if step.norm() < 1e-15 * b2.norm() {
            break;
        }
    }
    b2.sqrt() / k0
}

/// [`slab`] with an absorbing core: eps_imag `loss` inside (half of it on the faces' nodes,
/// the same mean as the real part's).
fn lossy_slab(h: f64, loss: f64) -> CrossSection {
    let mut cs = slab(h);
    let imag = |eps: &[f64]| -> Vec<f64> {
        eps.iter()
            .map(|&e| loss * (e - N_OX * N_OX) / (N_SI * N_SI - N_OX * N_OX))
            .collect()
    };
    cs.eps_imag = [imag(&cs.eps[0]), imag(&cs.eps[1]), imag(&cs.eps[2])];
    cs
}

/// The 220 nm slab with an absorbing core (eps 12.0826 + 0.2i, n = 3.476 + 0.0288i, a heavily
/// doped or a poly silicon): the complex solve's TE0 and TM0 against the complex dispersion
/// relation. Re(n_eff) within 1e-3 at 5 nm cells, as the lossless test (the same stencil and
/// smoothing); Im(n_eff) (the loss, about 0.02) within 0.2 % of the exact value (measured
/// 0.011 % for TE0, 0.066 % for TM0), and both errors falling at second order on halving
/// (ratio above 3). The lossless path keeps real modes:
/// beta2_imag is 0 there.
#[test]
fn an_absorbing_slab_has_the_exact_complex_te0_and_tm0() {
    let k0 = 2.0 * std::f64::consts::PI / LAMBDA;
    let eps1 = c64::new(N_SI * N_SI, 0.2);
    let te = lossy_slab_neff(k0, eps1, N_OX, THICK, false);
    let tm = lossy_slab_neff(k0, eps1, N_OX, THICK, true);
    let complex_neff = |m: &Mode| c64::new(m.beta2, m.beta2_imag).sqrt() / k0;
    let errors = |h: f64| {
        let modes = solve(&lossy_slab(h, 0.2), k0, 2).expect("modes");
        let (a, b) = (&modes[0], &modes[1]);
        assert!(a.v_fraction() > 0.999 && b.v_fraction() < 1e-3);
        (complex_neff(a) - te, complex_neff(b) - tm)
    };
    let (te5, tm5) = errors(5e-9);
    let (te25, tm25) = errors(2.5e-9);
    eprintln!(
        "exact TE0 {te:.6}, TM0 {tm:.6}; 5 nm: TE0 {te5:.2e} TM0 {tm5:.2e}; 2.5 nm: TE0 {te25:.2e} TM0 {tm25:.2e}"
    );
    for (e5, e25, exact) in [(te5, te25, te), (tm5, tm25, tm)] {
        assert!(e5.re.abs() < 1e-3, "Re error {e5}");
        assert!(e5.im.abs() < 2e-3 * exact.im, "Im error {e5} of {exact}");
        assert!(
            e5.norm() / e25.norm() > 3.0,
            "order {}",
            e5.norm() / e25.norm()
        );
    }
    let lossless = solve(&slab(5e-9), k0, 1).expect("modes");
    assert_eq!(lossless[0].beta2_imag, 0.0);
}

/// A surface plasmon on a metal (eps -20 + 1.5i, near silver's at 1550 nm) against glass
/// (2.25): the exact planar n_eff = sqrt(eps_m eps_d / (eps_m + eps_d)) = 1.59162 + 0.00752i
/// lies above the glass's index, where the shift must sit for the solver to find it
/// ([`CrossSection::shift`]). 0.5 um of metal (some 20 skin depths of 25 nm) and 4 um of
/// glass (about 9 of the plasmon's decay lengths there) between PEC walls, the interface on a
/// node, 2 nm cells: the TM mode (E across the interface, E_u) within 2e-4 in Re and 1 % in
/// Im of the planar value (measured 3.3e-5 and 0.013 %: the skin depth is 12 cells).
#[test]
fn a_metal_glass_interface_carries_its_surface_plasmon() {
    let k0 = 2.0 * std::f64::consts::PI / LAMBDA;
    let (metal, glass) = (c64::new(-20.0, 1.5), 2.25);
    let exact = (metal * glass / (metal + glass)).sqrt();
    let h = 2e-9;
    let (m_len, d_len) = (0.5e-6f64, 4e-6f64);
    let nu = ((m_len + d_len) / h).round() as usize;
    let eps_at = |y: f64| -> c64 {
        if (y - m_len).abs() < 1e-6 * h {
            (metal + glass) * 0.5
        } else if y < m_len {
            metal
        } else {
            c64::new(glass, 0.0)
        }
    };
    let node: Vec<c64> = (0..nu).map(|j| eps_at(j as f64 * h)).collect();
    let centre: Vec<c64> = (0..nu).map(|j| eps_at((j as f64 + 0.5) * h)).collect();
    let re = |v: &[c64]| v.iter().map(|z| z.re).collect::<Vec<f64>>();
    let im = |v: &[c64]| v.iter().map(|z| z.im).collect::<Vec<f64>>();
    let cs = CrossSection {
        eps_imag: [im(&node), im(&centre), im(&node)],
        ..one_d(h, re(&node), re(&centre))
    };
    let modes = solve(&cs, k0, 1).expect("the plasmon");
    let got = c64::new(modes[0].beta2, modes[0].beta2_imag).sqrt() / k0;
    eprintln!("plasmon n_eff {got:.6} against the planar {exact:.6}");
    assert!(modes[0].v_fraction() < 1e-3, "a TM mode");
    assert!((got.re - exact.re).abs() < 2e-4, "{got} vs {exact}");
    assert!((got.im / exact.im - 1.0).abs() < 0.01, "{got} vs {exact}");
}

/// The TE field's residual at the substrate for a guide of `layers` (index, thickness) from
/// the top down between an evanescent cover `cover` and an outgoing substrate `substrate`, at
/// complex beta^2 `b2`: the cover's decaying wave carried down by each layer's transfer
/// matrix, then E' + i k_s E at the substrate's face (zero for a wave leaving downwards).
fn leaky_residual(k0: f64, cover: f64, layers: &[(f64, f64)], substrate: f64, b2: c64) -> c64 {
    let gamma = (b2 - k0 * k0 * cover * cover).sqrt();
    let (mut e, mut de) = (c64::new(1.0, 0.0), -gamma);
    for &(n, t) in layers {
        let k = (c64::new(k0 * k0 * n * n, 0.0) - b2).sqrt();
        let (c, s) = ((k * t).cos(), (k * t).sin());
        (e, de) = (e * c - de / k * s, e * k * s + de * c);
    }
    let ks = (c64::new(k0 * k0 * substrate * substrate, 0.0) - b2).sqrt();
    let ks = if ks.re < 0.0 { -ks } else { ks };
    (de + c64::new(0.0, 1.0) * ks * e) / k0
}

/// A leaky guide: a 0.4 um core (n 2.0) on 0.3 um of oxide (1.444) over a silicon substrate
/// (3.476), air above, at 1550 nm. Its TE0 (n_eff 1.6989) lies below the substrate's index,
/// so it leaks through the oxide: beta is complex (Im n_eff 0.0122) with no lossy material.
/// The exact beta from the layers' transfer matrices with an outgoing wave in the substrate
/// (damped Newton from the guide without the substrate). The solve: 5 nm cells, 1 um of
/// substrate whose lower 0.5 um is an in-plane PML (kappa rising as the cube of depth to
/// 32 / (k0 L): a normally incident wave is down by e^-16 there and back), the target n_eff
/// 1.8 (the most guided modes of this cross-section are the substrate's). Re(n_eff) within
/// 2e-4 and Im(n_eff) within 0.5 % of the exact (measured 1.7e-5 and 0.06 %: the lossless
/// slab's second-order accuracy), and the PML's own reflection not setting it: a PML twice as
/// thick moves Im(n_eff) by less than 0.1 %.
#[test]
fn a_guide_over_a_high_index_substrate_leaks_at_the_exact_rate() {
    let k0 = 2.0 * std::f64::consts::PI / LAMBDA;
    let (cover, core, buffer, substrate) = (1.0, 2.0, N_OX, N_SI);
    let layers = [(core, 0.4e-6), (buffer, 0.3e-6)];
    let guided = slab_neff(k0, core, buffer, 0.4e-6, false);
    let mut b2 = c64::new((k0 * guided).powi(2), 0.0);
    for _ in 0..100 {
        let r = leaky_residual(k0, cover, &layers, substrate, b2);
        let h = b2 * 1e-8;
        let slope = (leaky_residual(k0, cover, &layers, substrate, b2 + h) - r) / h;
        // Damped: at most 1 % of beta^2 a step, so the iteration stays on this mode's root.
        let step = r / slope;
        let step = step * (0.01 * b2.norm() / step.norm()).min(1.0);
        b2 -= step;
        if step.norm() < 1e-14 * b2.norm() {
            break;
        }
    }
    let exact = b2.sqrt() / k0;
    let solved = |pml: f64| {
        let h = 5e-9;
        // From the bottom: substrate (PML in its lowest `pml`), oxide, core, 1 um of air.
        let bounds = [1e-6 + pml, 0.3e-6, 0.4e-6, 1e-6];
        let total: f64 = bounds.iter().sum();
        let nu = (total / h).round() as usize;
        let index = |y: f64| {
            let mut top = 0.0;
            for (n, t) in [substrate, buffer, core, cover].iter().zip(bounds) {
                top += t;
                if y < top - 1e-6 * h {
                    return *n;
                }
            }
            cover
        };
        // Faces on nodes: a node on a face takes the mean of the two sides' eps.
        let eps = |y: f64| 0.5 * (index(y - 1e-3 * h).powi(2) + index(y + 1e-3 * h).powi(2));
        let node: Vec<f64> = (0..nu).map(|j| eps(j as f64 * h)).collect();
        let centre: Vec<f64> = (0..nu).map(|j| eps((j as f64 + 0.5) * h)).collect();
        let depth = pml.max(0.5e-6);
        let kappa_max = 32.0 / (k0 * depth);
        let kappa = |y: f64| kappa_max * ((depth - y) / depth).max(0.0).powi(3);
        let stretch: Vec<f64> = (0..2 * nu).map(|i| kappa(i as f64 * h / 2.0)).collect();
        let cs = CrossSection {
            stretch: [stretch, Vec::new()],
            target_neff: Some(1.8),
            ..one_d(h, node, centre)
        };
        let modes = solve(&cs, k0, 1).expect("the leaky mode");
        c64::new(modes[0].beta2, modes[0].beta2_imag).sqrt() / k0
    };
    let (thin, thick) = (solved(0.5e-6), solved(1e-6));
    eprintln!("leaky TE0 {thin:.6} (PML 1 um: {thick:.6}) against the exact {exact:.6}");
    assert!(exact.im > 1e-5, "the guide leaks: {exact}");
    assert!((thin.re - exact.re).abs() < 2e-4, "{thin} vs {exact}");
    assert!((thin.im / exact.im - 1.0).abs() < 5e-3, "{thin} vs {exact}");
    assert!((thin.im / thick.im - 1.0).abs() < 1e-3, "{thin} vs {thick}");
}

/// A model and one plane normal to x through its centre, for the group-index tests.
fn model_plane(text: &str) -> (crate::model::Model, Plane) {
    let (model, _) = crate::scene::load_str(text, "plane.toml").expect("a valid scene");
    let plane = Plane::nearest(&model, 0, 0.0).expect("in the grid");
    (model, plane)
}

/// The group index from one solve (the energy over the power,
/// [`CrossSection::dispersion_slope`]) equals the central difference of n_eff over solves at
/// f (1 +- 3e-4), mode by mode: a Si-like strip in SiO2 whose core is a lossless Lorentz
/// medium (so the permittivity's own slope counts), and a staircased coax (PEC painted in
/// the plane) with its TEM and first higher modes. The bound, 5e-6, holds the difference's
/// own errors: its truncation, measured 1e-5 at 1e-3 and falling as the step squared (under
/// 1e-6 at 3e-4), and the eigenvalues' (residuals below 1e-8 of the value, n_eff to about
/// 1e-9) magnified by 1 / 6e-4 to 2e-6.
#[test]
fn one_solve_gives_the_group_index_of_three() {
    let strip = r#"
[simulation]
length_unit = "um"
cell_size = 0.04
size = [0.8, 2.4, 2.0]
steps = 10
precision = "f64"
[boundaries]
default = { type = "pml", cells = 8 }
[materials]
si = { epsilon = 10.0, lorentz = [{ delta_epsilon = 1.5, frequency = 4.0e14, damping = 0.0 }] }
oxide = { epsilon = 2.085136 }
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "box"
material = "si"
center = [0.0, 0.0, 0.0]
size = [10.0, 0.5, 0.22]
"#;
    let coax = r#"
[simulation]
length_unit = "mm"
cell_size = 0.1
size = [1.0, 2.6, 2.6]
steps = 10
precision = "f64"
[boundaries]
default = { type = "pec" }
[materials]
fill = { epsilon = 2.25 }
metal = { pec = true, conformal = false }
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "cylinder"
material = "fill"
center = [0.0, 0.0, 0.0]
radius = 1.15
height = 10.0
axis = "x"
[[geometry]]
shape = "cylinder"
material = "metal"
center = [0.0, 0.0, 0.0]
radius = 0.5
height = 10.0
axis = "x"
"#;
    for (text, f, count) in [(strip, crate::model::C0 / LAMBDA, 3), (coax, 6.0e10, 2)] {
        let (model, plane) = model_plane(text);
        let solved = plane.solved(&model, f, count).expect("modes");
        assert!(solved.cs.has_energy_slope());
        let one = plane.energy_group_index(&model, f, &solved.cs, &solved.modes, solved.k0);
        const STEP: f64 = 3e-4;
        let neff_at = |s: f64| {
            let near = plane.solved_near(&model, f * (1.0 + s), count, &solved.modes);
            near.expect("neighbour modes").neff
        };
        let (above, below) = (neff_at(STEP), neff_at(-STEP));
        let three: Vec<f64> = (0..count)
            .map(|i| solved.neff[i] + (above[i] - below[i]) / (2.0 * STEP))
            .collect();
        eprintln!(
            "n_eff {:?}: one solve {one:?}, three {three:?}",
            solved.neff
        );
        for (a, b) in one.iter().zip(&three) {
            assert!((a - b).abs() < 5e-6, "{one:?} against {three:?}");
        }
    }
}

/// The fundamental TM mode of a metal-insulator-metal gap (`eps_d` of width `d` between
/// half-spaces of `eps_m`) at `k0`: tanh(k_d d / 2) = -eps_d k_m / (eps_m k_d), with k_i =
/// sqrt(beta^2 - eps_i k0^2), by Newton's method on beta^2 from the single interface's
/// plasmon (which the gap's mode lies above). Returns n_eff.
fn mim_neff(k0: f64, eps_m: c64, eps_d: f64, d: f64) -> c64 {
    let residual = |b2: c64| {
        let km = (b2 - eps_m * k0 * k0).sqrt();
        let kd = (b2 - eps_d * k0 * k0).sqrt();
        (kd * d / 2.0).tanh() * eps_m * kd + eps_d * km
    };
    let mut b2 = eps_m * eps_d / (eps_m + eps_d) * k0 * k0 * 1.2;
    for _ in 0..100 {
        let step = b2 * 1e-7;
        let slope = (residual(b2 + step) - residual(b2 - step)) / (step * 2.0);
        b2 -= residual(b2) / slope;
    }
    assert!(residual(b2).norm() < 1e-9 * (eps_d * k0 * k0), "converged");
    b2.sqrt() / k0
}

/// A gap plasmon: 97.5 nm of glass between two half-spaces of a Drude metal (silver-like,
/// eps -123 + 0.5i at 1550 nm), each face a quarter of a 5 nm cell from the nearest E across
/// the gap. Its field is E across the gap (normal to both faces), and its n_eff is steep in
/// the gap's width, so a staircase that moves each face by a quarter cell makes the gap 2.5
/// nm wider and n_eff 0.025 low (measured when the metal's faces were staircased: 1.7895
/// against 1.8142). The smoothing gives the component normal to each face the harmonic mean
/// of metal and glass (the exact average for a field normal to a plane interface) and the
/// tangential one their mean: n_eff within 2e-3 of the exact relation, measured 8.4e-4, the
/// grid's own error here (8.5e-4 for a 100 nm gap whose staircase has the drawn width; the
/// metal's field decays over 4.4 cells).
#[test]
fn a_metal_gap_off_the_grid_carries_its_exact_gap_plasmon() {
    let text = r#"
[simulation]
length_unit = "um"
cell_size = 0.005
size = [0.01, 0.005, 1.0]
steps = 10
precision = "f64"
[boundaries]
x_min = { type = "periodic" }
x_max = { type = "periodic" }
y_min = { type = "periodic" }
y_max = { type = "periodic" }
z_min = { type = "pec" }
z_max = { type = "pec" }
[materials]
metal = { epsilon = 1.0, drude = [{ frequency = 2.18e15, damping = 4.35e12 }] }
glass = { epsilon = 2.25 }
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 10.0]
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.0]
size = [10.0, 10.0, 0.0975]
"#;
    let (model, plane) = model_plane(text);
    let f = crate::model::C0 / LAMBDA;
    let solved = plane.solved(&model, f, 2).expect("modes");
    let metal = &model.materials.materials[model.materials.id("metal").unwrap() as usize];
    let exact = mim_neff(solved.k0, metal.epsilon_at(f), 2.25, 0.0975e-6);
    let best = &solved.modes[0];
    let got = c64::new(best.beta2, best.beta2_imag).sqrt() / solved.k0;
    eprintln!("gap plasmon n_eff {got:.6} against the exact {exact:.6}");
    assert!(best.v_fraction() > 0.999, "a TM mode: E across the gap");
    assert!((got.re - exact.re).abs() < 2e-3, "{got} vs {exact}");
}
