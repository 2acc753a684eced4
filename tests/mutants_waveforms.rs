//! Waveforms against their closed forms, written out here independently of
//! `src/model/sources.rs`: the pulse's timing with a delay, when it is over, its band, for the
//! Gaussian, Ricker and continuous kinds. The mutation run over `sources.rs` showed that the
//! physics tests, which use no delay and only Gaussians, could not see a wrong peak time or
//! band edge (docs/testing.md).

use std::f64::consts::PI;
use yee::model::Waveform;

/// The Gaussian's time-domain sigma for a spectral FWHM `bandwidth`: the spectrum is
/// exp(-(f - f0)^2 / (2 sf^2)) with FWHM 2 sqrt(2 ln 2) sf, and sigma_t = 1 / (2 pi sf).
fn sigma(bandwidth: f64) -> f64 {
    1.0 / (2.0 * PI * spectral_sigma(bandwidth))
}

/// The Gaussian spectrum's sigma sf for a FWHM `bandwidth`: FWHM = 2 sqrt(2 ln 2) sf.
fn spectral_sigma(bandwidth: f64) -> f64 {
    bandwidth / (2.0 * (2.0 * 2f64.ln()).sqrt())
}

/// The Gaussian's spectrum at `f` relative to its peak at `f0`: exp(-(f - f0)^2 / (2 sf^2)).
fn gaussian_level(f: f64, f0: f64, bandwidth: f64) -> f64 {
    let sf = spectral_sigma(bandwidth);
    (-(f - f0).powi(2) / (2.0 * sf * sf)).exp()
}

/// The Ricker spectrum at x = f / fp relative to its peak at fp: x^2 exp(1 - x^2).
fn ricker_level(x: f64) -> f64 {
    x * x * (1.0 - x * x).exp()
}

#[test]
fn gaussian_and_ricker_peak_where_their_delays_put_them() {
    let (f, bw, d) = (2.0e14, 1.0e14, 3.0e-15);
    let g = Waveform::Gaussian {
        frequency: f,
        bandwidth: bw,
        delay: d,
    };
    let t0 = 5.3 * sigma(bw) + d;
    assert!((g.peak_time() / t0 - 1.0).abs() < 1e-12);
    for k in [-2.0, -0.5, 0.0, 0.3, 1.7] {
        let t = t0 + k * sigma(bw);
        let u = t - t0;
        let want = (2.0 * PI * f * u).sin() * (-(u * u) / (2.0 * sigma(bw).powi(2))).exp();
        assert!((g.value(t) - want).abs() < 1e-12, "t = {t:e}");
    }
    // Off (below 1e-6 of the peak envelope) from twice the delay-free peak time on.
    assert!((g.end_time().unwrap() - (t0 + 5.3 * sigma(bw))).abs() < 1e-12 * t0);
    let (fp, d) = (9.0e8, 2.0e-9);
    let r = Waveform::Ricker {
        frequency: fp,
        delay: d,
    };
    let t0 = 1.3 / fp + d;
    assert!((r.peak_time() / t0 - 1.0).abs() < 1e-12);
    assert!(
        (r.value(t0) - 1.0).abs() < 1e-12,
        "a Ricker peaks at 1 at its peak time"
    );
    for u in [-0.4 / fp, 0.1 / fp, 0.25 / fp, 0.9 / fp] {
        let a = (PI * fp * u).powi(2);
        assert!((r.value(t0 + u) - (1.0 - 2.0 * a) * (-a).exp()).abs() < 1e-12);
    }
    assert!((r.end_time().unwrap() - (t0 + 1.3 / fp)).abs() < 1e-12 * t0);
    let c = Waveform::Continuous {
        frequency: 1e9,
        ramp: 2e-9,
        delay: 1e-9,
    };
    assert_eq!(c.end_time(), None, "a continuous wave never ends");
    assert_eq!(c.peak_time(), 1e-9);
}

/// The band: the centre is the carrier (peak) frequency, and the highest frequency with
/// energy is where the spectrum has fallen to about 1e-3 of its peak: for the Gaussian
/// exp(-(f - f0)^2 / (2 sf^2)) at f0 + 3.7 sf (1.1e-3), for the Ricker (f/fp)^2 exp(1 - (f/fp)^2)
/// at 3 fp (3.0e-3).
#[test]
fn the_band_ends_where_the_spectrum_falls_to_a_thousandth() {
    let (f0, bw) = (2.0e14, 1.0e14);
    let g = Waveform::Gaussian {
        frequency: f0,
        bandwidth: bw,
        delay: 0.0,
    };
    assert_eq!(g.centre_frequency(), f0);
    let fmax = g.max_frequency();
    // The spectrum is symmetric about f0: the level alone cannot tell the upper edge from the
    // lower one.
    assert!(fmax > f0, "the band's top is above its centre");
    let level = gaussian_level(fmax, f0, bw);
    assert!(
        (0.9e-3..1.3e-3).contains(&level),
        "Gaussian at max: {level:e}"
    );
    let fp = 9.0e8;
    let r = Waveform::Ricker {
        frequency: fp,
        delay: 0.0,
    };
    assert_eq!(r.centre_frequency(), fp);
    let level = ricker_level(r.max_frequency() / fp);
    assert!(
        (2.5e-3..3.5e-3).contains(&level),
        "Ricker at max: {level:e}"
    );
    let c = Waveform::Continuous {
        frequency: 3e9,
        ramp: 1e-9,
        delay: 0.0,
    };
    assert_eq!((c.centre_frequency(), c.max_frequency()), (3e9, 3e9));
}

/// The continuous wave: zero before its delay, a raised-cosine envelope over `ramp`, then the
/// plain sine, all against the closed form.
#[test]
fn continuous_wave_ramps_up_with_a_raised_cosine() {
    let (f, ramp, delay) = (1.0e9, 2.0e-9, 1.0e-9);
    let c = Waveform::Continuous {
        frequency: f,
        ramp,
        delay,
    };
    assert_eq!(c.value(0.5e-9), 0.0, "nothing before the delay");
    for u in [0.1e-9, 0.7e-9, 1.3e-9, 1.9e-9, 2.5e-9, 7.25e-9] {
        let envelope = if u >= ramp {
            1.0
        } else {
            0.5 * (1.0 - (PI * u / ramp).cos())
        };
        let want = envelope * (2.0 * PI * f * u).sin();
        assert!((c.value(delay + u) - want).abs() < 1e-12, "u = {u:e}");
    }
}

/// The frequency above which a DFT sampled every k steps may alias nothing (it picks the
/// flux monitors' decimation): for the Gaussian where exp(-(f - f0)^2 / (2 sf^2)) has fallen to
/// exp(-18) = 1.5e-8 (f0 + 6 sf), for the Ricker where (f/fp)^2 exp(1 - (f/fp)^2) has fallen to
/// 25 e^-24 = 9.4e-10 (5 fp); none for a continuous wave, whose switch-on has no such bound.
#[test]
fn the_spectrum_is_negligible_above_the_sampling_bound() {
    let (f0, bw) = (2.0e14, 1.0e14);
    let g = Waveform::Gaussian {
        frequency: f0,
        bandwidth: bw,
        delay: 0.0,
    };
    let top = g.negligible_above().expect("a Gaussian has a bound");
    assert!(top > g.max_frequency(), "above the band's top");
    let level = gaussian_level(top, f0, bw);
    assert!((1.0e-8..2.0e-8).contains(&level), "Gaussian: {level:e}");
    let fp = 9.0e8;
    let r = Waveform::Ricker {
        frequency: fp,
        delay: 0.0,
    };
    let x = r.negligible_above().expect("a Ricker has a bound") / fp;
    let level = ricker_level(x);
    assert!(
        x > 3.0 && (0.5e-9..2.0e-9).contains(&level),
        "Ricker: {level:e}"
    );
    let c = Waveform::Continuous {
        frequency: 3e9,
        ramp: 1e-9,
        delay: 0.0,
    };
    assert_eq!(c.negligible_above(), None);
}
