"""Far-field monitors from a real run (scenes/dipole_pattern.toml): read with yee_post, checked
against a small dipole's pattern and the box's flux, re-projected by ``yee farfield``, plotted."""

import subprocess

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from conftest import REPO
from helpers import assert_png, run_scene
from yee_post import FarField, Result, plot_pattern


@pytest.fixture(scope="module")
def dipole_run(yee_bin, tmp_path_factory):
    text = (REPO / "scenes" / "dipole_pattern.toml").read_text()
    return run_scene(yee_bin, tmp_path_factory.mktemp("far_field"), "dipole_pattern", text)


def test_far_field_reads_back_as_a_small_dipole_pattern(dipole_run):
    with Result(dipole_run) as r:
        assert r.monitors()["far_field"] == ["pattern"]
        ff = r.far_field("pattern")
        box = r.flux("box")
    assert isinstance(ff, FarField)
    np.testing.assert_allclose(ff.frequency, np.linspace(2e14, 4e14, 21))
    np.testing.assert_allclose(ff.theta, np.linspace(0, 180, 37))
    np.testing.assert_allclose(ff.phi, np.linspace(0, 360, 73))
    assert ff.e_theta.shape == ff.e_phi.shape == ff.intensity.shape == (21, 37, 73)
    assert np.iscomplexobj(ff.e_theta)
    np.testing.assert_allclose(ff.intensity, (abs(ff.e_theta) ** 2 + abs(ff.e_phi) ** 2) / 376.730313412, rtol=1e-9)
    # The sphere integral is the flux through the far-field box and through the flux box (the
    # Rust suite bounds both at 2 %; tests/far_field.rs explains why).
    np.testing.assert_allclose(ff.total_power(), ff.power, rtol=0.02)
    np.testing.assert_allclose(ff.total_power(), box["power"], rtol=0.02)
    # A small dipole: sin^2(theta) with directivity 1.5 at the equator, to 2 % of the peak.
    d = ff.directivity()
    sin2 = np.sin(np.radians(ff.theta))[None, :, None] ** 2
    assert np.abs(d / 1.5 - sin2).max() < 0.03
    assert ff.frequency_index(3.05e14) == 10


def test_yee_farfield_reprojects_the_stored_surface_at_other_angles(yee_bin, dipole_run, tmp_path):
    copy = tmp_path / "copy.h5"
    copy.write_bytes(dipole_run.read_bytes())
    proc = subprocess.run([str(yee_bin), "farfield", str(copy), "--theta", "0:180:19", "--phi", "0:360:37"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "pattern: 19 x 37 angles" in proc.stdout
    with Result(dipole_run) as r0, Result(copy) as r1:
        old, new = r0.far_field("pattern"), r1.far_field("pattern")
    assert new.intensity.shape == (21, 19, 37)
    # Every other angle of the run's own grid: the same projection, to rounding.
    np.testing.assert_allclose(new.e_theta, old.e_theta[:, ::2, ::2], rtol=1e-9, atol=1e-12 * abs(old.e_theta).max())
    np.testing.assert_allclose(new.total_power(), old.total_power(), rtol=0.01)
    bad = subprocess.run([str(yee_bin), "farfield", str(copy), "--theta", "0:200:5"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "MIN:MAX:COUNT" in bad.stderr


def test_plot_pattern_draws_the_cut_and_the_maps(dipole_run, tmp_path):
    fig = plt.figure(figsize=(9, 3), dpi=100)
    plot_pattern(dipole_run, "pattern", frequency=3e14, fig=fig)
    polar, upper, lower = fig.axes[:3]
    with Result(dipole_run) as r:
        ff = r.far_field("pattern")
    line = polar.lines[0]
    np.testing.assert_allclose(line.get_ydata(), ff.directivity()[10][:, 0])
    assert upper.collections and lower.collections
    path = tmp_path / "pattern.png"
    fig.savefig(path)
    assert_png(path, (900, 300))
    plt.close(fig)
    fig = plot_pattern(dipole_run, "pattern", db=True)
    assert max(fig.axes[0].lines[0].get_ydata()) == pytest.approx(10 * np.log10(1.5), abs=0.15)
    plt.close(fig)


BOX_FIELDS = """
[simulation]
length_unit = "um"
cell_size = 0.05
size = [1.4, 1.4, 1.4]
steps = 200
precision = "f64"
[boundaries]
default = { type = "pml", cells = 6 }
[[source]]
type = "dipole"
component = "Ex"
position = [0.025, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }
[[monitor]]
type = "flux"
name = "box"
box = { center = [0.0, 0.0, 0.0], size = [0.6, 0.5, 0.4] }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
fields = true
"""


def test_box_face_fields_sum_to_the_box_power_with_the_trapezoid_rule(yee_bin, tmp_path):
    out = run_scene(yee_bin, tmp_path, "box_fields", BOX_FIELDS)
    total = 0.0
    with Result(out) as r:
        power = r.flux("box")["power"]
        cell = r.cell_size
        for face in ("x_min", "x_max", "y_min", "y_max", "z_min", "z_max"):
            a = "xyz".index(face[0])
            b, c = (a + 1) % 3, (a + 2) % 3
            names = [f"E{'xyz'[b]}", f"E{'xyz'[c]}", f"H{'xyz'[b]}", f"H{'xyz'[c]}"]
            eb, ec, hb, hc = (r.flux_field("box", f"{face}/{n}") for n in names)
            assert eb.axes == tuple("xyz"[k] for k in sorted((b, c)))
            sign = float(r.file[f"flux/box/{face}"].attrs["sign"])
            assert sign == (-1.0 if face.endswith("min") else 1.0)
            n1, n2 = eb.data.shape[1:]
            # Trapezoid weights from E node to E node: the pair half a cell along an axis
            # covers the cells between the nodes, the pair on an axis's nodes halves its ends.
            half = lambda n: np.r_[np.ones(n - 1), 0.0]  # noqa: E731
            node = lambda n: np.r_[0.5, np.ones(n - 2), 0.5]  # noqa: E731
            p, q = sorted((b, c))
            w = {p: (half(n1), node(n1)), q: (half(n2), node(n2))}
            w_bc = np.outer(w[p][0] if b == p else w[p][1], w[q][1] if b == p else w[q][0])
            w_cb = np.outer(w[p][1] if b == p else w[p][0], w[q][0] if b == p else w[q][1])
            area = cell[p] * cell[q]
            face_power = sign * area * (
                (w_bc * (eb.data * hc.data.conj()).real).sum(axis=(1, 2))
                - (w_cb * (ec.data * hb.data.conj()).real).sum(axis=(1, 2))
            )
            total = total + face_power
    np.testing.assert_allclose(total, power, rtol=1e-9)
    assert (power > 0).all()
