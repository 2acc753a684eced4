"""Flux monitors from a real run: read with yee_post, checked against Fresnel, and plotted."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from yee_post import Result, plot_flux

from helpers import assert_png, run_scene


def scene(glass: bool) -> str:
    slab = """
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 5.0]
size = [10.0, 10.0, 10.0]
""" if glass else ""
    return f"""
[simulation]
name = "flux"
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
glass = {{ epsilon = 2.25 }}
{slab}
[[source]]
type = "plane_wave"
direction = "+z"
polarization = "Ey"
position = -2.5
waveform = {{ type = "gaussian", frequency = 2.0e14, bandwidth = 1.5e14 }}
[[monitor]]
type = "flux"
name = "transmitted"
plane = {{ z = 1.5 }}
frequencies = {{ min = 1.5e14, max = 2.5e14, count = 6 }}
fields = true
"""


def test_flux_spectra_read_back_and_give_the_fresnel_transmission(yee_bin, tmp_path):
    vacuum = run_scene(yee_bin, tmp_path, "vacuum", scene(False))
    glass = run_scene(yee_bin, tmp_path, "glass", scene(True))
    with Result(vacuum) as v, Result(glass) as g:
        assert v.monitors()["flux"] == ["transmitted"]
        ref = v.flux("transmitted")
        out = g.flux("transmitted")
        np.testing.assert_allclose(ref["frequency"], np.linspace(1.5e14, 2.5e14, 6))
        assert np.all(ref["power"] > 0)
        # n = 1.5 at normal incidence: T = 4 n / (1 + n)^2 = 0.96. 1 % covers the grid's
        # dispersion at >= 40 cells per wavelength in the glass (see tests/fresnel.rs).
        np.testing.assert_allclose(out["power"] / ref["power"], 0.96, rtol=0.01)
        group = g.file["flux/transmitted"]
        assert group.attrs["axis"] == "z"
        assert group.attrs["steps_accumulated"] == 9000
        ax = plot_flux(g, "transmitted", reference="transmitted", reference_result=v)
        png = tmp_path / "t.png"
        ax.figure.set_size_inches(6, 4)
        ax.figure.savefig(png, dpi=100)
        assert_png(png, (600, 400))


def test_flux_dft_fields_come_with_their_axes_and_give_the_power(yee_bin, tmp_path):
    out = run_scene(yee_bin, tmp_path, "fields", scene(True))
    with Result(out) as r:
        ex = r.flux_field("transmitted", "Ex")
        ey = r.flux_field("transmitted", "Ey")
        hx = r.flux_field("transmitted", "Hx")
        hy = r.flux_field("transmitted", "Hy")
        assert ex.axes == ("x", "y") and ex.data.shape == (6, 4, 4) and np.iscomplexobj(ex.data)
        dx = r.cell_size[0]
        # Ex sits half a cell along x; Hy, averaged onto the plane, sits where Ex does.
        np.testing.assert_allclose(ex.coords[0], r.origin[0] + (np.arange(4) + 0.5) * dx)
        np.testing.assert_allclose(hy.coords[0], ex.coords[0])
        np.testing.assert_allclose(ex.position, r.origin[2] + round((1.5e-6 - r.origin[2]) / r.cell_size[2]) * r.cell_size[2])
        # Re sum (Ex Hy* - Ey Hx*) dA is the stored power.
        area = r.cell_size[0] * r.cell_size[1]
        power = np.real(ex.data * np.conj(hy.data) - ey.data * np.conj(hx.data)).sum(axis=(1, 2)) * area
        np.testing.assert_allclose(power, r.flux("transmitted")["power"], rtol=1e-12)
        with pytest.raises(KeyError, match="no DFT field"):
            r.flux_field("transmitted", "Ez")
