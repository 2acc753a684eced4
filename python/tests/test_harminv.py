"""Harmonic inversion (yee_post.harminv): exact on a synthetic sum of decaying modes, robust to
noise, and on a real run of a PEC cavity, the grid's own resonances to 1e-7."""

import numpy as np
import pytest

from yee_post import Result, harminv

from helpers import C0, run_scene
from test_binary import CAVITY


def test_two_decaying_modes_are_recovered_exactly_and_through_noise():
    dt = 1e-3
    t = np.arange(3000) * dt
    clean = 2.0 * np.cos(2 * np.pi * 31.3 * t + 0.4) * np.exp(-0.7 * t) + 0.5 * np.cos(2 * np.pi * 47.9 * t) * np.exp(
        -3.0 * t
    )
    r = harminv(clean, dt, 20.0, 60.0)
    # Noise-free, the fit is exact to rounding.
    np.testing.assert_allclose(r.frequency, [31.3, 47.9], rtol=1e-10)
    np.testing.assert_allclose(r.decay, [0.7, 3.0], rtol=1e-8)
    np.testing.assert_allclose(2 * np.abs(r.amplitude), [2.0, 0.5], rtol=1e-8)
    np.testing.assert_allclose(r.Q, np.pi * np.array([31.3, 47.9]) / np.array([0.7, 3.0]), rtol=1e-8)
    # White noise of 1e-3 (60 dB below the strong mode): the two modes alone pass the
    # amplitude filter; frequencies within 1e-5, decays within 1 % (measured 5e-6 and 0.12 %).
    noisy = clean + 1e-3 * np.random.default_rng(1).standard_normal(len(t))
    r = harminv(noisy, dt, 20.0, 60.0)
    assert len(r) == 2, r
    np.testing.assert_allclose(r.frequency, [31.3, 47.9], rtol=1e-5)
    np.testing.assert_allclose(r.decay, [0.7, 3.0], rtol=1e-2)
    with pytest.raises(ValueError, match="Nyquist"):
        harminv(clean, dt, 20.0, 600.0)


def discrete_cavity_frequency(size, cell, dt, indices):
    """A PEC box's resonance on the Yee grid: sin^2(w dt / 2) / (c dt)^2 = sum sin^2(k d / 2)
    / d^2 with k = m pi / L: the grid's exact frequency, which a lossless run rings at."""
    s = sum(np.sin(m * np.pi / length * cell / 2) ** 2 / cell**2 for m, length in zip(indices, size))
    return 2 / dt * np.arcsin(C0 * dt * np.sqrt(s)) / (2 * np.pi)


def test_a_pec_cavity_rings_at_the_grids_own_resonances(yee_bin, tmp_path):
    """The Ez modes (1,1,0), (1,1,1) and (2,1,0) of the 1.0 x 0.8 x 0.6 um PEC box on 40 nm
    cells, from the probe's ringing after the pulse: each within 1e-7 of the grid's own
    frequency (the run is f64 and lossless: measured within 8e-9), and Q above 1e6 (no loss)."""
    path = run_scene(yee_bin, tmp_path, "cavity", CAVITY)
    with Result(path) as r:
        t, ez = r.probe("p", "Ez")
        dt = r.dt
    after = t > 3e-14  # the source pulse is over
    found = harminv(ez[after], dt, 2.2e14, 3.7e14)
    want = sorted(discrete_cavity_frequency([1e-6, 0.8e-6, 0.6e-6], 0.04e-6, dt, m) for m in [(1, 1, 0), (1, 1, 1), (2, 1, 0)])
    assert len(found) == 3, found
    np.testing.assert_allclose(found.frequency, want, rtol=1e-7)
    assert np.all(found.Q > 1e6), found.Q
    with Result(path) as r:
        again = r.resonances("p", "Ez", 2.2e14, 3.7e14, after=3e-14)
    np.testing.assert_array_equal(again.frequency, found.frequency)
