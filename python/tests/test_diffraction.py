"""Diffraction orders of a periodic cell against rigorous coupled-wave analysis (grcwa).

A lossless lamellar grating (period 1 um, eps 4 ridges of fill 0.5 and height 0.5 um, air on
both sides), lit by a one-way plane wave at normal incidence and at 20 degrees (a Bloch cell
whose phase the wave sets), s (E along the ridges) and p: each order's efficiency on both sides
against grcwa's, converged in its Fourier orders, and the efficiencies' sum against 1.

The oblique wave keeps its transverse wavevector at every frequency (the Bloch phase is one
number), so its angle is 20 degrees at the centre frequency and asin(sin 20 f0 / f) at f: the
reference is solved at that angle, as a Meep or Tidy3D user compares a broadband fixed-k run.
"""

import numpy as np
import pytest

from yee_post import Result, plot_diffraction

from helpers import C0, assert_png, run_scene

grcwa = pytest.importorskip("grcwa")

PERIOD, HEIGHT, EPS, FILL = 1.0, 0.5, 4.0, 0.5


def scene(theta: float, pol: str, f0: float, steps: int, freqs) -> str:
    if theta == 0:
        direction = '"+x"'
    else:
        t = np.radians(theta)
        direction = f"[{np.cos(t):.17f}, {np.sin(t):.17f}, 0.0]"
    return f"""
[simulation]
name = "grating"
length_unit = "um"
cell_size = 0.0125
size = [5.0, {PERIOD}, 0.0125]
steps = {steps}
precision = "f64"
[boundaries]
default = {{ type = "periodic" }}
x_min = {{ type = "pml", cells = 30 }}
x_max = {{ type = "pml", cells = 30 }}
[materials]
ridge = {{ epsilon = {EPS} }}
[[geometry]]
shape = "box"
material = "ridge"
center = [0.0, 0.0, 0.0]
size = [{HEIGHT}, {FILL * PERIOD}, 10.0]
[[source]]
type = "plane_wave"
direction = {direction}
polarization = "{pol}"
position = -1.2
waveform = {{ type = "gaussian", frequency = {f0:e}, bandwidth = 1.5e14 }}
[[monitor]]
type = "diffraction"
name = "r"
plane = {{ x = -1.6 }}
frequencies = {{ min = {freqs[0]:e}, max = {freqs[1]:e}, count = {freqs[2]} }}
[[monitor]]
type = "diffraction"
name = "t"
plane = {{ x = 1.0 }}
frequencies = {{ min = {freqs[0]:e}, max = {freqs[1]:e}, count = {freqs[2]} }}
"""


def rcwa(wavelength_um: float, theta_deg: float, pol: str) -> dict:
    """grcwa's (R, T) per order m of the grating at one wavelength and angle: 161 Fourier
    orders along the period (the efficiencies move by < 2e-4 from 81 to 321 orders), a second
    lattice vector so short that its orders never enter the truncation."""
    nx = 2000
    obj = grcwa.obj(161, [PERIOD, 0], [0, 0.005], 1.0 / wavelength_um, np.radians(theta_deg), 0.0, verbose=0)
    obj.Add_LayerUniform(1.0, 1.0)
    obj.Add_LayerGrid(HEIGHT, nx, 1)
    obj.Add_LayerUniform(1.0, 1.0)
    obj.Init_Setup(Gmethod=0)
    assert (obj.G[:, 1] == 0).all()
    x = (np.arange(nx) + 0.5) / nx * PERIOD
    obj.GridLayer_geteps(np.where(np.abs(x - PERIOD / 2) < FILL * PERIOD / 2, EPS, 1.0))
    if pol == "p":
        obj.MakeExcitationPlanewave(1, 0, 0, 0, order=0)
    else:
        obj.MakeExcitationPlanewave(0, 0, 1, 0, order=0)
    r, t = obj.RT_Solve(normalize=1, byorder=1)
    return {int(obj.G[i][0]): (r[i].real, t[i].real) for i in range(len(r))}


CASES = [
    # (theta, yee polarisation, grcwa's, centre frequency, steps, frequencies): normal incidence
    # at 0.77-0.86 um (orders 0 and +-1 propagate); 20 degrees at 0.61-0.64 um (orders -2..+1).
    (0.0, "Ez", "s", 3.7e14, 12000, (3.5e14, 3.9e14, 5)),
    (0.0, "Ey", "p", 3.7e14, 12000, (3.5e14, 3.9e14, 5)),
    (20.0, "Ez", "s", 4.68e14, 24000, (4.68e14, 4.88e14, 3)),
    (20.0, "Ey", "p", 4.68e14, 24000, (4.68e14, 4.88e14, 3)),
]


@pytest.mark.parametrize("theta, pol, ref_pol, f0, steps, freqs", CASES)
def test_grating_orders_match_rcwa(yee_bin, tmp_path, theta, pol, ref_pol, f0, steps, freqs):
    path = run_scene(yee_bin, tmp_path, "grating", scene(theta, pol, f0, steps, freqs), timeout=300)
    with Result(path) as res:
        r, t = res.diffraction("r"), res.diffraction("t")
    assert r["direction"] == "-x" and t["direction"] == "+x"
    orders = t["orders"][:, 0]
    for i, f in enumerate(t["frequency"]):
        angle = np.degrees(np.arcsin(np.sin(np.radians(theta)) * f0 / f))
        ref = rcwa(C0 / f * 1e6, angle, ref_pol)
        # Energy: a lossless grating sends all the incident power into its orders. The
        # orders' powers add up to each plane's flux exactly (Parseval), so what is left is
        # the run's truncation of the slowest orders' ringing and the PML: measured < 7e-4.
        total = np.nansum(r["power"][i]) + np.nansum(t["power"][i])
        assert abs(total - 1) < 1e-3, (f, total)
        # The order (0, 0) of an oblique wave is its specular direction.
        k = int(np.flatnonzero(orders == 0)[0])
        assert abs(t["angle"][i][k] - angle) < 1e-9
        for k, m in enumerate(orders):
            want_r, want_t = ref.get(int(m), (0.0, 0.0))
            # 25 cells per wavelength in the ridges, with the interfaces smoothed: the grid's
            # dispersion and the smoothing's first-order error leave each efficiency within
            # about 0.006 of the converged RCWA (measured); 0.01 is the bound.
            assert abs(r["power"][i][k] - want_r) < 0.01, (f, m, "R", r["power"][i][k], want_r)
            assert abs(t["power"][i][k] - want_t) < 0.01, (f, m, "T", t["power"][i][k], want_t)
        # s and p parts add up to each order's power; the s wave has no p part (the grating's
        # ridges run along z, so an Ez wave keeps E along z in every order).
        np.testing.assert_allclose(t["power_s"][i] + t["power_p"][i], t["power"][i], atol=1e-12)
        pure = t["power_s"][i] if ref_pol == "s" else t["power_p"][i]
        np.testing.assert_allclose(pure, t["power"][i], atol=1e-6)
    if theta == 0 and pol == "Ez":
        png = tmp_path / "orders.png"
        plot_diffraction(path, ["r", "t"]).figure.savefig(png, dpi=50)
        assert_png(png, (320, 240))
