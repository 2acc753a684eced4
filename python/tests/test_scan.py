"""B-scans: reading a scan's traces with their axes, the processing before display, the
radargram and A-scan plots; and a real scan run by the yee binary."""

import h5py
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from yee_post import (
    Result,
    apply_gain,
    first_break,
    plot_ascan,
    plot_bscan,
    remove_background,
    time_zero,
)

from helpers import run_scene

TRACES, STEPS, DT = 5, 200, 1e-11
X0, STEP = -0.04, 0.002


def _pulse(t, t0):
    """A Ricker-like pulse arriving at t0."""
    a = (np.pi * 2e9 * (t - t0)) ** 2
    return (1 - 2 * a) * np.exp(-a)


def _write_scan(path, done=TRACES):
    """A file with the layout of a scan result: /probes/rx/Ez [traces, steps] holding a direct
    wave common to all traces (at 0.6 ns) and an echo whose delay grows with the trace (the
    flank of a hyperbola), positions moving along x."""
    t = (np.arange(STEPS) + 1) * DT
    with h5py.File(path, "w") as f:
        for k, v in [("dt", DT), ("steps", STEPS), ("traces", TRACES), ("traces_done", done)]:
            f.attrs[k] = v
        f.attrs["shape"] = [10, 10, 1]
        f.attrs["cell_size"] = [0.002, 0.002, 0.002]
        f.attrs["origin"] = [-0.01, -0.01, -0.001]
        f.attrs["complete"] = done == TRACES
        f.attrs["length_unit"] = "m"
        g = f.create_group("probes/rx")
        g["time"] = t
        data = np.zeros((TRACES, STEPS))
        for k in range(done):
            data[k] = _pulse(t, 0.6e-9) + 0.5 * _pulse(t, 1.3e-9 + 0.1e-9 * k)
        g["Ez"] = data.astype(np.float32)
        g["Ez"].attrs["time_offset"] = 0.0
        g["Hx"] = data.astype(np.float32)
        g["Hx"].attrs["time_offset"] = -0.5 * DT
        pos = np.zeros((TRACES, 3))
        pos[:, 0] = X0 + STEP * np.arange(TRACES)
        pos[:, 1] = 0.065
        g["positions"] = pos
    return t, data


def test_bscan_array_and_axes(tmp_path):
    path = tmp_path / "scan.h5"
    t, data = _write_scan(path)
    with Result(path) as r:
        assert (r.traces, r.traces_done) == (TRACES, TRACES)
        b = r.bscan("rx", "Ez")
        h = r.bscan("rx", "Hx")
        time, trace2 = r.probe("rx", "Ez", trace=2)
        with pytest.raises(ValueError, match="trace=k"):
            r.probe("rx", "Ez")
        with pytest.raises(IndexError):
            r.probe("rx", "Ez", trace=TRACES)
    assert b.data.shape == (TRACES, STEPS)
    np.testing.assert_array_equal(b.data, data.astype(np.float32))
    np.testing.assert_array_equal(b.time, t)
    # H sits half a step before E.
    np.testing.assert_allclose(h.time, t - 0.5 * DT, rtol=0, atol=1e-24)
    assert b.scan_axis == 0
    np.testing.assert_allclose(b.distance, X0 + STEP * np.arange(TRACES))
    np.testing.assert_array_equal(trace2, b.data[2])
    np.testing.assert_array_equal(time, t)


def test_an_interrupted_scan_gives_its_finished_traces(tmp_path):
    path = tmp_path / "partial.h5"
    _write_scan(path, done=2)
    with Result(path) as r:
        assert not r.complete
        b = r.bscan("rx", "Ez")
    assert b.data.shape == (2, STEPS) and b.positions.shape == (2, 3)


def test_a_single_run_is_not_a_bscan(tmp_path):
    path = tmp_path / "single.h5"
    with h5py.File(path, "w") as f:
        f.attrs["dt"] = DT
        f.create_group("probes/rx")["Ez"] = np.zeros(STEPS, dtype=np.float32)
    with Result(path) as r:
        assert r.traces is None
        with pytest.raises(ValueError, match="single run"):
            r.bscan("rx", "Ez")


def test_time_zero_background_and_gain(tmp_path):
    path = tmp_path / "scan.h5"
    t, _ = _write_scan(path)
    with Result(path) as r:
        b = r.bscan("rx", "Ez")
    # The first break is where the mean |trace| first reaches 10% of its peak: on the leading
    # side lobe of the direct wave (peak 1 at 0.6 ns), which reaches 0.1 0.33 ns before it: the
    # side lobe (2a - 1) exp(-a) is 0.1 at a = 4.33, a = (pi f (t - t0))^2, f = 2 GHz. Sampled
    # every 10 ps, the first sample at or above it is 0.27 ns.
    t0 = first_break(b)
    assert 0.26e-9 < t0 < 0.28e-9
    z = time_zero(b, "auto")
    assert z.time[0] == 0.0 and z.data.shape[1] == int(np.sum(t >= t0))
    np.testing.assert_array_equal(z.data, b.data[:, t >= t0])
    fixed = time_zero(b, 0.5e-9)
    assert fixed.time[0] == pytest.approx(0.0, abs=1e-20) or fixed.time[0] > 0
    # Background removal leaves the mean trace zero (the common direct wave is gone) while the
    # moving echo stays.
    bg = remove_background(b)
    np.testing.assert_allclose(bg.data.mean(axis=0), 0.0, atol=1e-6)
    # Around the direct wave (amplitude 1) only the far tail of the moving echo is left (below
    # 1e-4 there), so the direct wave is gone to 1e-3 of itself.
    direct = (b.time > 0.45e-9) & (b.time < 0.75e-9)
    assert np.abs(bg.data[:, direct]).max() < 1e-3
    assert np.abs(bg.data).max() > 0.1
    # Power gain (t / t_end)^p and exponential gain exp(a t), sample by sample.
    g = apply_gain(b, "power", 2.0)
    np.testing.assert_allclose(g.data, b.data * (b.time / b.time[-1]) ** 2)
    e = apply_gain(b, "exp", 1e9)
    np.testing.assert_allclose(e.data, b.data * np.exp(1e9 * b.time))
    with pytest.raises(ValueError):
        apply_gain(b, "log")


def test_plot_bscan_is_a_radargram(tmp_path):
    path = tmp_path / "scan.h5"
    t, data = _write_scan(path)
    fig = plt.figure(figsize=(4, 3), dpi=100)
    ax = fig.add_subplot()
    plot_bscan(path, "rx", "Ez", ax=ax, unit="mm", clip=0.5)
    im = ax.images[0]
    shown = np.asarray(im.get_array())
    # Time down the vertical axis (rows), traces across (columns).
    assert shown.shape == (STEPS, TRACES)
    np.testing.assert_array_equal(shown, data.astype(np.float32).T)
    x0, x1, y_bottom, y_top = im.get_extent()
    assert y_bottom > y_top  # time grows downwards
    dx = STEP * 1e3
    assert x0 == pytest.approx(X0 * 1e3 - dx / 2) and x1 == pytest.approx(
        (X0 + STEP * (TRACES - 1)) * 1e3 + dx / 2
    )
    vmin, vmax = im.get_clim()
    assert vmin == -vmax and vmax == pytest.approx(0.5 * np.abs(data).max(), rel=1e-6)
    assert ax.get_xlabel() == "x (mm)" and ax.get_ylabel() == "time (ns)"
    out = tmp_path / "b.png"
    fig.savefig(out)
    assert out.stat().st_size > 0
    plt.close(fig)
    # With processing: the image is the processed array.
    fig, ax = plt.subplots()
    plot_bscan(path, "rx", "Ez", ax=ax, time_zero="auto", background=True, gain="power")
    with Result(path) as r:
        b = apply_gain(remove_background(time_zero(r.bscan("rx", "Ez"), "auto")), "power", 1.0)
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), b.data.T)
    plt.close(fig)


def test_plot_ascan(tmp_path):
    path = tmp_path / "scan.h5"
    t, data = _write_scan(path)
    fig, ax = plt.subplots()
    plot_ascan(path, "rx", "Ez", trace=3, ax=ax)
    x, y = ax.lines[0].get_data()
    np.testing.assert_allclose(x, t * 1e9)
    np.testing.assert_array_equal(y, data[3].astype(np.float32))
    assert "trace 3" in ax.get_title()
    with pytest.raises(ValueError, match="trace=k"):
        plot_ascan(path, "rx", "Ez")
    plt.close(fig)


SCENE = """[simulation]
name = "NAME"
length_unit = "mm"
cell_size = 1.0
size = [40.0, 30.0, 1.0]
steps = 150
[boundaries]
default = { type = "pml", cells = 6 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
soil = { epsilon = 4.0 }
[[geometry]]
shape = "box"
material = "soil"
center = [0.0, -10.0, 0.0]
size = [100.0, 20.0, 10.0]
SCAN
[[source]]
type = "dipole"
component = "Ez"
position = [SX, 4.0, 0.0]
waveform = { type = "ricker", frequency = 1.5e10 }
SSTEP
[[monitor]]
type = "probe"
name = "rx"
position = [RX, 4.0, 0.0]
components = ["Ez"]
SSTEP
"""


def test_a_scan_run_by_yee(yee_bin, tmp_path):
    """A 4-trace scan from the binary: [traces, steps] with each trace's positions, and trace
    k equal to a separate run of the scene with the moved positions (the Rust tests check this
    bit for bit on both schedules; here it checks the reader end to end)."""
    step = 1.5
    scene = (SCENE.replace("NAME", "scan").replace("SCAN", "[scan]\ntraces = 4")
             .replace("SX", "-8.0").replace("RX", "-4.0")
             .replace("SSTEP", f"scan_step = [{step}, 0.0, 0.0]"))
    out = run_scene(yee_bin, tmp_path, "scan", scene)
    with Result(out) as r:
        assert r.complete and (r.traces, r.traces_done) == (4, 4)
        b = r.bscan("rx", "Ez")
    assert b.data.shape == (4, 150)
    np.testing.assert_allclose(b.positions[:, 0], (-4.0 + step * np.arange(4)) * 1e-3)
    k = 2
    single = (SCENE.replace("NAME", "single").replace("SCAN", "")
              .replace("SX", repr(-8.0 + k * step)).replace("RX", repr(-4.0 + k * step))
              .replace("SSTEP", ""))
    out1 = run_scene(yee_bin, tmp_path, "single", single)
    with Result(out1) as r:
        _, ez = r.probe("rx", "Ez")
    np.testing.assert_array_equal(b.data[k], ez)
    assert not np.array_equal(b.data[0], b.data[k])
