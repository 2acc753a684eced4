//! yee against gprMax, the reference code of the ground-penetrating-radar community: its own
//! example `cylinder_Ascan_2D` (a Hertzian dipole above a dielectric half-space with a buried
//! PEC cylinder), translated to `scenes/gpr_ascan_2d.toml`, against the receiver trace gprMax
//! 4.0.1 wrote for it (`tests/data/gprmax_cylinder_ascan_2d.csv`, with the command that
//! produced it).

mod common;

use common::BinaryRun;

/// The stored gprMax trace: one Ez value (V/m) per iteration.
fn gprmax_trace() -> Vec<f64> {
    include_str!("data/gprmax_cylinder_ascan_2d.csv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma) * (x - ma)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb) * (y - mb)).sum();
    cov / (va * vb).sqrt()
}

/// The A-scan correlates with gprMax's above 0.99 and has its amplitude.
///
/// Both codes run the same Yee grid, the same material and the same Ricker pulse (yee's delay
/// set so both peak at sqrt(2)/f); what differs is the PML (gprMax's CFS-PML parameters and
/// its PML formulation against yee's default CPML, both 10 cells) and the time step (gprMax
/// steps at the 2-D limit itself, yee at 0.999 of it), so the traces cannot agree to rounding.
/// Measured: correlation 0.9973 at zero lag (the bound: 0.99), peak amplitude 0.36%
/// apart with the dipole's current density set to gprMax's I dl / (dx dy). Checked by hand
/// that both bounds bite: a permittivity of 5.5 instead of 6 drops the correlation to 0.979;
/// the transmitter one cell further from the receiver keeps it at 0.993 but changes the peak
/// (the direct wave) by 5%, past the 2% bound, which also catches a wrong source
/// normalisation (a factor of dx or dz).
#[test]
fn the_cylinder_a_scan_matches_gprmax() {
    let reference = gprmax_trace();
    let run = BinaryRun::new("gprmax-ascan", include_str!("../scenes/gpr_ascan_2d.toml"));
    let trace = run.read("probes/rx1/Ez");
    assert_eq!(
        trace.len(),
        reference.len(),
        "one sample per gprMax iteration"
    );
    let r = correlation(&trace, &reference);
    assert!(r > 0.99, "correlation with gprMax {r:.5}");
    let peak = |x: &[f64]| x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let ratio = peak(&trace) / peak(&reference);
    assert!(
        (ratio - 1.0).abs() < 0.02,
        "peak |Ez| yee / gprMax = {ratio:.4}"
    );
}
