"""Plots and animations of synthetic files."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from yee_post import Result, animate, plot_slice, plot_spectrum

import synthetic as syn
from helpers import assert_png, gif_frames

SIZE = (4.0, 3.0)
DPI = 100
PIXELS = (400, 300)


def _figure():
    fig = plt.figure(figsize=SIZE, dpi=DPI)
    return fig, fig.add_subplot()


def test_plot_slice_plane(synthetic_file, tmp_path):
    fig, ax = _figure()
    with Result(synthetic_file) as r:
        plot_slice(r, "plane_xy", "Ez", index=-1, ax=ax, unit="um")
        field = r.snapshot("plane_xy", "Ez", -1)
    im = ax.images[0]
    vmin, vmax = im.get_clim()
    assert vmin == -vmax and vmax == pytest.approx(np.abs(field.data).max())
    # Extent: sample centres at the physical coordinates (µm), half a sample of margin.
    x0, x1, y0, y1 = im.get_extent()
    dx, dy = syn.CELL[0] * 1e6, syn.CELL[1] * 1e6
    assert x0 == pytest.approx(field.x[0] * 1e6 - dx / 2)
    assert x1 == pytest.approx(field.x[-1] * 1e6 + dx / 2)
    assert y0 == pytest.approx(field.y[0] * 1e6 - dy / 2)
    assert y1 == pytest.approx(field.y[-1] * 1e6 + dy / 2)
    assert ax.get_xlabel() == "x (µm)" and ax.get_ylabel() == "y (µm)"
    assert "t = " in ax.get_title()
    # Image rows are y, columns x.
    np.testing.assert_allclose(im.get_array(), field.data[:, :, 0].T)
    out = tmp_path / "plane.png"
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    assert_png(out, PIXELS)


def test_plot_slice_box_default_and_chosen_axis(synthetic_file, tmp_path):
    with Result(synthetic_file) as r:
        field = r.snapshot("box", "Ex", 0)
        # Box counts are (5, 4, 3): the thinnest axis is z, cut in the middle.
        fig, ax = _figure()
        plot_slice(r, "box", "Ex", index=0, ax=ax, unit="nm")
        np.testing.assert_allclose(ax.images[0].get_array(), field.data[:, :, 1].T)
        assert ax.get_xlabel() == "x (nm)" and ax.get_ylabel() == "y (nm)"
        plt.close(fig)
        # Cut normal to x at the sample nearest a position given in the plot unit.
        fig, ax = _figure()
        pos = field.x[3] * 1e9 + 1.0
        plot_slice(r, "box", "Ex", index=0, ax=ax, unit="nm", axis="x", position=pos)
        np.testing.assert_allclose(ax.images[0].get_array(), field.data[3, :, :].T)
        assert ax.get_xlabel() == "y (nm)" and ax.get_ylabel() == "z (nm)"
        out = tmp_path / "box.png"
        fig.savefig(out, dpi=DPI)
        plt.close(fig)
        assert_png(out, PIXELS)
        with pytest.raises(ValueError, match="plane normal to z"):
            plot_slice(r, "plane_xy", "Ez", axis="x")


def test_plot_slice_accepts_a_path_and_the_scene_unit(synthetic_file):
    ax = plot_slice(str(synthetic_file), "plane_xy", "Hz", unit=None)
    assert ax.get_xlabel() == "x (µm)"
    plt.close(ax.figure)


def test_plot_slice_fixed_colour_limit(synthetic_file):
    ax = plot_slice(synthetic_file, "plane_xy", "Ez", index=0, vmax=2.5)
    assert ax.images[0].get_clim() == (-2.5, 2.5)
    plt.close(ax.figure)


def test_animate_one_frame_per_snapshot(synthetic_file, tmp_path):
    out = tmp_path / "anim.gif"
    with Result(synthetic_file) as r:
        n = r.snapshot_count("plane_xy", "Ez")
        assert animate(r, "plane_xy", "Ez", out, fps=5, figsize=(4, 3), dpi=50) == str(out)
    frames, size = gif_frames(out)
    assert frames == n
    assert size == (200, 150)


def test_plot_spectrum_marks_and_range(synthetic_file, tmp_path):
    fig, ax = _figure()
    plot_spectrum(synthetic_file, "p", "Ez", ax=ax, fmin=1e14, fmax=3e14, mark=[syn.PROBE_FREQ, 5e14])
    assert ax.get_xlabel() == "frequency (THz)"
    assert ax.get_xlim() == pytest.approx((100, 300))
    # One data line plus the one mark inside the range.
    assert len(ax.lines) == 2
    assert ax.lines[1].get_xdata()[0] == pytest.approx(200)
    out = tmp_path / "spectrum.png"
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    assert_png(out, PIXELS)


def test_plot_spectrum_default_range_zooms_on_content(synthetic_file):
    ax = plot_spectrum(synthetic_file, "p", "Ez")
    lo, hi = ax.get_xlim()
    nyquist_thz = 0.5 / syn.DT / 1e12
    assert lo == 0 and syn.PROBE_FREQ / 1e12 < hi < nyquist_thz
    plt.close(ax.figure)
