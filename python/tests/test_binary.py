"""End-to-end: run small scenes with the yee binary and read them back with yee_post.

The binary comes from $YEE_BIN or target/release/yee; without it these tests fail.
"""

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import h5py
import matplotlib.pyplot as plt
import numpy as np
import pytest

from yee_post import STAGGER, Result, animate, plot_slice, plot_spectrum

from helpers import C0, assert_png, gif_frames, pec_box_modes, run_scene

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# Anisotropic cells and a non-cubic grid (32 x 35 x 24), so a swapped axis shows up.
DIPOLE_STEPS = 240
DIPOLE = f"""
[simulation]
name = "dipole"
length_unit = "um"
cell_size = [0.05, 0.04, 0.05]
size = [1.6, 1.4, 1.2]
steps = {DIPOLE_STEPS}
courant = 0.99
precision = "f32"

[boundaries]
default = {{ type = "pml", cells = 8 }}

[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 1.5e14 }}
amplitude = 1.0

[[monitor]]
type = "probe"
name = "p"
position = [-0.2, -0.1, 0.1]
components = ["Ez", "Hx"]

[[monitor]]
type = "snapshot"
name = "ez_xy"
components = ["Ez", "Hz"]
plane = {{ z = 0.0 }}
every = 20

[[monitor]]
type = "snapshot"
name = "ey_yz"
components = ["Ey"]
plane = {{ x = 0.1 }}
every = 40

[[monitor]]
type = "snapshot"
name = "vol"
components = ["Ex", "Hy"]
box = {{ center = [0.1, 0.0, 0.0], size = [0.6, 0.5, 0.4] }}
every = 60
stride = 2
"""

# Requested snapshot planes and boxes, in metres, for the checks below.
PLANES = {"ez_xy": (2, 0.0), "ey_yz": (0, 0.1e-6)}
BOX = {"center": np.array([0.1, 0.0, 0.0]) * 1e-6, "size": np.array([0.6, 0.5, 0.4]) * 1e-6}
EVERY = {"ez_xy": 20, "ey_yz": 40, "vol": 60}

# PEC box 1.0 x 0.8 x 0.6 um at 0.04 um cells (25 x 20 x 15). Lowest mode TM110 at
# c/2 sqrt(1/a^2 + 1/b^2) = 239.9 THz, wavelength 1.25 um = 31 cells; the next mode with Ez at
# the probe is far enough (291 THz and up) not to disturb the peak.
CAVITY_STEPS = 6000
CAVITY = f"""
[simulation]
name = "cavity"
length_unit = "um"
cell_size = 0.04
size = [1.0, 0.8, 0.6]
steps = {CAVITY_STEPS}
courant = 0.99
precision = "f64"

[boundaries]
default = {{ type = "pec" }}

# Source and probe off every symmetry plane, so the lowest modes are excited and seen.
[[source]]
type = "dipole"
component = "Ez"
position = [0.13, 0.09, 0.05]
waveform = {{ type = "gaussian", frequency = 2.6e14, bandwidth = 1.5e14 }}
amplitude = 1.0

[[monitor]]
type = "probe"
name = "p"
position = [-0.27, -0.17, 0.11]
components = ["Ez"]
"""

FIGSIZE, DPI, PIXELS = (4.0, 3.0), 100, (400, 300)


@pytest.fixture(scope="module")
def dipole(yee_bin, tmp_path_factory):
    """Output of the dipole scene (HDF5 path)."""
    return run_scene(yee_bin, tmp_path_factory.mktemp("dipole"), "dipole", DIPOLE)


@pytest.fixture(scope="module")
def cavity(yee_bin, tmp_path_factory):
    """Output of the PEC cavity scene (HDF5 path)."""
    return run_scene(yee_bin, tmp_path_factory.mktemp("cavity"), "cavity", CAVITY)


# -- layout and coordinates -------------------------------------------------------------------


def test_root_attributes(dipole):
    with Result(dipole) as r:
        np.testing.assert_allclose(r.cell_size, [0.05e-6, 0.04e-6, 0.05e-6])
        assert r.shape == (32, 35, 24)
        # The domain is centred on the origin: node (0,0,0) is its minimum corner.
        np.testing.assert_allclose(r.origin, -0.5 * np.array([1.6, 1.4, 1.2]) * 1e-6)
        np.testing.assert_allclose(r.size, [1.6e-6, 1.4e-6, 1.2e-6])
        limit = 1.0 / (C0 * np.sqrt(np.sum(1.0 / r.cell_size**2)))
        assert r.dt == pytest.approx(0.99 * limit, rel=1e-9)
        assert r.steps == DIPOLE_STEPS
        assert r.complete is True
        assert r.length_unit == "um"
        assert r.attrs["precision"] == "f32"
        assert isinstance(r.attrs["yee_version"], str) and r.attrs["yee_version"]
        assert isinstance(r.attrs["backend"], str)
        assert 'name = "dipole"' in r.attrs["scene"]
        assert r.monitors()["probes"] == ["p"]
        assert r.monitors()["snapshots"] == ["ey_yz", "ez_xy", "vol"]


def test_probe_times_and_positions(dipole):
    with Result(dipole) as r:
        requested = r.probe_position("p")
        np.testing.assert_allclose(requested, [-0.2e-6, -0.1e-6, 0.1e-6])
        n = np.arange(DIPOLE_STEPS)
        for comp in ("Ez", "Hx"):
            t, v = r.probe("p", comp)
            assert v.dtype == np.float32 and len(v) == DIPOLE_STEPS
            # E at (n+1) dt, H half a step earlier.
            expected = (n + 1) * r.dt - (0.5 * r.dt if comp.startswith("H") else 0.0)
            np.testing.assert_allclose(t, expected, rtol=1e-12)
            # Probes interpolate by default: the value holds at the requested point, and
            # `index` names the nearest grid point of the component (within half a cell).
            assert r.file["probes/p"].attrs["interpolation"] == "trilinear"
            np.testing.assert_allclose(r.probe_position("p", comp), requested, atol=1e-15)
            index = r.file[f"probes/p/{comp}"].attrs["index"]
            nearest = r.origin + (index + np.array(STAGGER[comp])) * r.cell_size
            assert np.all(np.abs(nearest - requested) <= 0.5 * r.cell_size * (1 + 1e-9))
        _, ez = r.probe("p", "Ez")
        assert np.abs(ez).max() > 0, "the dipole's field never reached the probe"


@pytest.mark.parametrize("name", ["ez_xy", "ey_yz", "vol"])
def test_snapshot_coordinates_against_root_attributes(dipole, name):
    with Result(dipole) as r:
        assert r.file[f"snapshots/{name}"].attrs["every"] == EVERY[name]
        frames = DIPOLE_STEPS // EVERY[name]
        assert r.snapshot_count(name) == frames
        for comp in r.components("snapshots", name):
            ds = r.file[f"snapshots/{name}/{comp}"]
            start, stride = ds.attrs["index_start"], ds.attrs["stride"]
            stagger = np.array(STAGGER[comp])
            # The dataset's own origin and spacing agree with the root grid and staggering.
            np.testing.assert_allclose(ds.attrs["origin"], r.origin + (start + stagger) * r.cell_size, atol=1e-15)
            np.testing.assert_allclose(ds.attrs["spacing"], stride * r.cell_size)
            field = r.snapshot(name, comp)
            assert field.data.shape == (frames,) + ds.shape[1:]
            assert field.data.dtype == np.float32
            for a, coord in enumerate(field.coords):
                expected = r.origin[a] + (start[a] + stride[a] * np.arange(ds.shape[1 + a]) + stagger[a]) * r.cell_size[a]
                np.testing.assert_allclose(coord, expected, atol=1e-15)
            # Frames every `every` steps; the time is the E time of that step, H half a step earlier.
            np.testing.assert_array_equal(field.steps, EVERY[name] * np.arange(1, frames + 1))
            offset = -0.5 * r.dt if comp.startswith("H") else 0.0
            np.testing.assert_allclose(field.time, field.steps * r.dt + offset, rtol=1e-12)
            if name in PLANES:
                axis, at = PLANES[name]
                assert ds.shape[1 + axis] == 1, f"{name} should be one sample thick along axis {axis}"
                # A plane without bounds spans the whole grid in the other two directions.
                assert all(ds.shape[1 + a] == r.shape[a] for a in range(3) if a != axis)
                assert abs(field.coords[axis][0] - at) <= r.cell_size[axis] * (1 + 1e-9)
            else:
                np.testing.assert_array_equal(stride, [2, 2, 2])
                lo, hi = BOX["center"] - BOX["size"] / 2, BOX["center"] + BOX["size"] / 2
                for a, coord in enumerate(field.coords):
                    # Samples cover the requested box to within one stride at each end.
                    step = stride[a] * r.cell_size[a]
                    assert coord[0] >= lo[a] - step and coord[0] <= lo[a] + step
                    assert coord[-1] <= hi[a] + step and coord[-1] >= hi[a] - step


def test_snapshot_data_is_a_radiating_field(dipole):
    with Result(dipole) as r:
        field = r.snapshot("ez_xy", "Ez")
    peak = np.abs(field.data).max(axis=(1, 2, 3))
    assert peak.max() > 0
    # A z dipole at the origin: Ez in the z = 0 plane is symmetric under x -> -x around the
    # source's grid column, to single-precision rounding.
    frame = field.data[int(np.argmax(peak)), :, :, 0]
    i0 = int(np.argmin(np.abs(field.x)))
    k = min(i0, len(field.x) - 1 - i0)
    np.testing.assert_allclose(frame[i0 - k : i0][::-1], frame[i0 + 1 : i0 + 1 + k], atol=1e-3 * np.abs(frame).max())


# -- physics --------------------------------------------------------------------------------


def test_cavity_lowest_resonance(cavity):
    with Result(cavity) as r:
        assert r.complete
        size = r.size  # the PEC walls bound the whole grid: box = shape * cell_size
        np.testing.assert_allclose(size, [1.0e-6, 0.8e-6, 0.6e-6])
        f0, f1 = pec_box_modes(size, 2)
        freqs, spec = r.spectrum("p", "Ez", window="hann", pad=4)
        record = CAVITY_STEPS * r.dt
    mag = np.abs(spec)
    # Look between well below f0 and halfway to the next mode: the peak found there must be f0.
    window = np.flatnonzero((freqs > 0.85 * f0) & (freqs < 0.5 * (f0 + f1)))
    i = window[np.argmax(mag[window])]
    assert window[0] < i < window[-1], "the spectrum has no peak near the lowest resonance"
    # Parabolic interpolation of the log magnitude refines the peak between bins.
    a, b, c = np.log(mag[i - 1 : i + 2])
    peak = freqs[i] + 0.5 * (a - c) / (a - 2 * b + c) * (freqs[1] - freqs[0])
    # It is a real resonance, not leakage: comparable to the strongest peak up to 2 f0.
    band = (freqs > 0.5 * f0) & (freqs < 2 * f0)
    assert mag[i] > 0.1 * mag[band].max()
    # Tolerance 1%: the FDTD dispersion error at 31 cells per wavelength and Courant 0.99 is
    # about 0.1% (k d/2 = 0.06-0.08 rad, error ~ (k d)^2/24 partly cancelled by the time step);
    # the record (6000 steps, 0.46 ps) has 1/T = 0.9% of f0 and the Hann peak, 4x padded and
    # interpolated, is located to a few hundredths of that. 1% leaves a fivefold margin yet
    # fails for a wrong box size, a wrong time axis or a half-cell wall error (>= 2%).
    assert 1.0 / record < 0.01 * f0
    assert abs(peak - f0) / f0 < 0.01, f"lowest resonance at {peak / 1e12:.2f} THz, analytic {f0 / 1e12:.2f} THz"


# -- plots ----------------------------------------------------------------------------------


def _figure():
    fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
    return fig, fig.add_subplot()


def test_plot_slice_of_run(dipole, tmp_path):
    with Result(dipole) as r:
        field = r.snapshot("ez_xy", "Ez")
        frame = int(np.argmax(np.abs(field.data).max(axis=(1, 2, 3))))
        fig, ax = _figure()
        plot_slice(r, "ez_xy", "Ez", index=frame, ax=ax, unit="um")
        x0, x1, y0, y1 = ax.images[0].get_extent()
        # Axes in µm, centred on the samples.
        assert x0 == pytest.approx(field.x[0] * 1e6 - 0.025) and x1 == pytest.approx(field.x[-1] * 1e6 + 0.025)
        assert y0 == pytest.approx(field.y[0] * 1e6 - 0.02) and y1 == pytest.approx(field.y[-1] * 1e6 + 0.02)
        vmin, vmax = ax.images[0].get_clim()
        assert vmin == -vmax > -np.inf and vmax > 0
        out = tmp_path / "slice.png"
        fig.savefig(out, dpi=DPI)
        plt.close(fig)
        assert_png(out, PIXELS)

        # Box snapshot: default cut along the thinnest axis (z here).
        fig, ax = _figure()
        plot_slice(r, "vol", "Hy", index=-1, ax=ax, unit="nm")
        assert ax.get_xlabel() == "x (nm)" and ax.get_ylabel() == "y (nm)"
        out = tmp_path / "box.png"
        fig.savefig(out, dpi=DPI)
        plt.close(fig)
        assert_png(out, PIXELS)


def test_animation_of_run(dipole, tmp_path):
    out = tmp_path / "ez.gif"
    with Result(dipole) as r:
        n = r.snapshot_count("ez_xy", "Ez")
        animate(r, "ez_xy", "Ez", out, fps=10, figsize=(4, 3), dpi=50)
    frames, size = gif_frames(out)
    assert frames == n == DIPOLE_STEPS // 20
    assert size == (200, 150)


def test_plot_spectrum_of_run(cavity, tmp_path):
    with Result(cavity) as r:
        modes = pec_box_modes(r.size, 3)
        fig, ax = _figure()
        plot_spectrum(r, "p", "Ez", ax=ax, fmin=0.5 * modes[0], fmax=2 * modes[0], mark=modes)
    assert len(ax.lines) == 1 + 3
    out = tmp_path / "spectrum.png"
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    assert_png(out, PIXELS)


# -- XDMF sidecar -----------------------------------------------------------------------------


def test_xdmf_sidecar(dipole):
    xmf = dipole.with_suffix(".xmf")
    assert xmf.is_file(), f"yee run did not write the XDMF sidecar {xmf.name} next to {dipole.name}"
    root = ET.parse(xmf).getroot()
    assert root.tag == "Xdmf" and root.get("Version") == "3.0"
    domain = root.find("Domain")
    temporal = {g.get("Name"): g for g in domain.findall("Grid") if g.get("CollectionType") == "Temporal"}
    with h5py.File(dipole, "r") as f, Result(dipole) as r:
        assert sorted(temporal) == sorted(f["snapshots"])
        for name, collection in temporal.items():
            steps = list(collection.findall("Grid"))
            times = f[f"snapshots/{name}/time"][()]
            assert len(steps) == len(times)
            for t, step in enumerate(steps):
                assert float(step.find("Time").get("Value")) == pytest.approx(times[t], rel=1e-12)
                # A frame is one uniform grid, or a spatial collection of them (staggering).
                grids = [step] if step.get("GridType") == "Uniform" else step.findall("Grid")
                seen = set()
                for grid in grids:
                    topo = grid.find("Topology")
                    assert topo.get("TopologyType") == "3DCoRectMesh"
                    dims = tuple(int(d) for d in topo.get("Dimensions").split())
                    geo = grid.find("Geometry")
                    assert geo.get("GeometryType") == "ORIGIN_DXDYDZ"
                    origin, spacing = ([float(v) for v in item.text.split()] for item in geo.findall("DataItem"))
                    for attr in grid.findall("Attribute"):
                        comp = attr.get("Name")
                        seen.add(comp)
                        assert attr.get("Center") == "Node"
                        slab = attr.find("DataItem")
                        assert slab.get("ItemType") == "HyperSlab"
                        select, source = slab.findall("DataItem")
                        start, stride, count = np.array(select.text.split(), dtype=int).reshape(3, 4)
                        filename, path = source.text.strip().split(":", 1)
                        # Every dataset named exists, in the HDF5 file next to the sidecar.
                        assert (xmf.parent / filename).resolve() == dipole.resolve()
                        assert path in f, f"{path} named in {xmf.name} is not in the HDF5 file"
                        ds = f[path]
                        assert tuple(int(d) for d in source.get("Dimensions").split()) == ds.shape
                        assert list(start) == [t, 0, 0, 0] and list(stride) == [1, 1, 1, 1]
                        assert tuple(count) == (1,) + dims == (1,) + ds.shape[1:]
                        # The geometry is this component's own (staggered) sample grid.
                        np.testing.assert_allclose(origin, ds.attrs["origin"], rtol=1e-12, atol=1e-20)
                        np.testing.assert_allclose(spacing, ds.attrs["spacing"], rtol=1e-12)
                assert seen == set(r.components("snapshots", name))


# -- interrupted run --------------------------------------------------------------------------


def test_interrupted_run_is_readable(yee_bin, tmp_path):
    # Long enough that it is still running when interrupted (~1e9 cell-steps).
    scene = DIPOLE.replace(f"steps = {DIPOLE_STEPS}", "steps = 1000000").replace('name = "dipole"', 'name = "stopped"')
    (tmp_path / "stopped.toml").write_text(scene)
    out = tmp_path / "stopped.h5"
    proc = subprocess.Popen(
        [str(yee_bin), "run", "--quiet", str(tmp_path / "stopped.toml"), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(1.0)  # let it store some frames
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, "the run finished before it could be interrupted"
    with Result(out) as r:
        assert r.complete is False
        t, ez = r.probe("p", "Ez")
        assert 0 < len(ez) < 1000000 and len(t) == len(ez)
        n = r.snapshot_count("ez_xy")
        assert n >= 1, f"no frames stored before the interrupt ({len(ez)} steps run)\n{stderr}"
        field = r.snapshot("ez_xy", "Ez")
        assert field.data.shape[0] == len(field.time) >= n


def test_running_result_opens_in_h5py(yee_bin, tmp_path):
    # h5py's default open takes a shared HDF5 lock, so the writer must not hold an exclusive one.
    scene = DIPOLE.replace(f"steps = {DIPOLE_STEPS}", "steps = 1000000").replace('name = "dipole"', 'name = "live"')
    (tmp_path / "live.toml").write_text(scene)
    out = tmp_path / "live.h5"
    proc = subprocess.Popen(
        [str(yee_bin), "run", "--quiet", str(tmp_path / "live.toml"), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The file appears at its path only once it is a valid HDF5 file.
        deadline = time.monotonic() + 30
        while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        with h5py.File(out, "r") as f:
            assert not f.attrs["complete"]
            assert f.attrs["steps"] == 1000000
            assert "probes/p/Ez" in f
        assert proc.poll() is None, "the run ended before the file was read"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr


def test_overwrite_leaves_a_reader_of_the_old_result_alone(yee_bin, tmp_path):
    # A notebook keeps the old result open while the scene is run again with --overwrite.
    short = DIPOLE.replace(f"steps = {DIPOLE_STEPS}", "steps = 40")
    old = run_scene(yee_bin, tmp_path, "again", short)
    with h5py.File(old, "r") as f:
        before = f["probes/p/Ez"][:]
        new = run_scene(yee_bin, tmp_path, "again", short.replace("steps = 40", "steps = 60"))
        assert np.array_equal(f["probes/p/Ez"][:], before), "the open old result changed"
    with h5py.File(new, "r") as g:
        assert g["probes/p/Ez"].shape == (60,) and g.attrs["complete"]


# -- examples -----------------------------------------------------------------------------------


def _example(script, *args):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_examples(dipole, cavity, tmp_path):
    _example("dipole_slice.py", dipole, tmp_path / "slice.png", "ez_xy", "Ez")
    assert_png(tmp_path / "slice.png", (600, 450))
    out = _example("cavity_spectrum.py", cavity, tmp_path / "spectrum.png")
    assert_png(tmp_path / "spectrum.png", (600, 400))
    assert "239.95" in out  # the TM110 line is among those marked
    _example("dipole_animation.py", dipole, tmp_path / "movie.gif", "ez_xy", "Ez", 5)
    assert gif_frames(tmp_path / "movie.gif")[0] == DIPOLE_STEPS // 20


def test_example_scenes(yee_bin, tmp_path):
    # The scenes shipped with the examples stay valid and feed the overview figure.
    dipole = run_scene(yee_bin, tmp_path, "dipole", (EXAMPLES / "dipole.toml").read_text())
    cavity = run_scene(yee_bin, tmp_path, "cavity", (EXAMPLES / "cavity.toml").read_text())
    _example("overview_figure.py", dipole, cavity, tmp_path / "overview.png")
    assert_png(tmp_path / "overview.png", (1100, 420))


MATERIALS = """
[simulation]
length_unit = "nm"
cell_size = 10.0
size = [100.0, 100.0, 100.0]
steps = 5
[boundaries]
default = { type = "pec" }
[materials]
metal = { epsilon = 1.5, conductivity = 2.0e5, drude = [{ frequency = 2.0e15, damping = 1.0e13 }], lorentz = [{ delta_epsilon = 1.0, frequency = 6.0e14, damping = 5.0e13 }] }
water = { epsilon = 4.9, debye = [{ delta_epsilon = 75.0, relaxation_time = 9.4e-12 }] }
ferrite = { epsilon = 2.0, mu = 4.0, magnetic_conductivity = 1.0e3 }
[[geometry]]
shape = "box"
material = "metal"
center = [0.0, 0.0, 0.0]
size = [20.0, 20.0, 20.0]
[[source]]
type = "dipole"
component = "Ez"
position = [30.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 5.0e14, bandwidth = 2.0e14 }
"""


def test_materials_are_stored_so_a_reader_recomputes_epsilon(yee_bin, tmp_path):
    out = run_scene(yee_bin, tmp_path, "materials", MATERIALS)
    with Result(out) as r:
        m = r.materials()
        assert {"vacuum", "pec", "metal", "water", "ferrite"} <= set(m)
        assert not any("|" in name for name in m), "smoothing mixtures are not materials"
        assert m["ferrite"]["mu"] == 4.0 and m["ferrite"]["magnetic_conductivity"] == 1.0e3
        assert m["metal"]["lorentz"].shape == (1, 3) and m["metal"]["drude"].shape == (1, 2)
        f = np.array([3e14, 5e14])
        w = 2 * np.pi * f
        eps0 = 8.8541878128e-12
        wp, g = 2 * np.pi * 2.0e15, 2 * np.pi * 1.0e13
        w0, g0 = 2 * np.pi * 6.0e14, 2 * np.pi * 5.0e13
        expected = (
            1.5
            + 1j * 2.0e5 / (w * eps0)
            - wp**2 / (w**2 + 1j * w * g)
            + w0**2 / (w0**2 - w**2 - 1j * w * g0)
        )
        np.testing.assert_allclose(r.epsilon("metal", f), expected, rtol=1e-12)
        water = r.epsilon("water", 1e9)
        np.testing.assert_allclose(water, 4.9 + 75 / (1 - 1j * 2 * np.pi * 1e9 * 9.4e-12), rtol=1e-12)


STRIP = """
[simulation]
length_unit = "um"
cell_size = 0.04
size = [0.8, 2.5, 2.0]
steps = 10
precision = "f64"
[boundaries]
default = { type = "pml", cells = 8 }
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
size = [10.0, 0.5, 0.22]
[[source]]
type = "dipole"
component = "Ey"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
"""


def test_yee_modes_file_reads_back_and_plots(yee_bin, tmp_path):
    """``yee modes -o``'s file: two modes of a Si strip, TE0 first (its E along the width,
    y), profiles on the plane's Yee positions, drawn by plot_mode."""
    from yee_post import plot_mode, read_modes

    scene = tmp_path / "strip.toml"
    scene.write_text(STRIP)
    out = tmp_path / "modes.h5"
    proc = subprocess.run(
        [str(yee_bin), "modes", str(scene), "--plane", "x=0", "--frequency", "1.934e14", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    m = read_modes(out)
    assert m.axis == "x" and m.axes() == ("y", "z")
    assert m.neff.shape == (2,) and m.neff[0] > m.neff[1] > 1.444
    assert 2.3 < m.neff[0] < 2.6 and m.group_index[0] > m.neff[0]
    # A lossless strip: no loss.
    assert m.loss is not None and np.all(m.loss == 0.0)
    # TE0 confined to about the strip's 0.11 um^2 and its evanescent skirt: well under 1 um^2.
    assert 0.05e-12 < m.effective_area[0] < 0.5e-12
    # A dielectric guide's mode is no plane wave: its wave impedance lies between the
    # silicon's eta0 / 3.48 (108 ohm) and the oxide's eta0 / 1.444 (261 ohm).
    assert 108 < m.wave_impedance[0] < 261
    ey, ez = m.profiles["Ey"], m.profiles["Ez"]
    assert ey.shape == ez.shape == (2, 62, 50)
    # TE0: E along the width dominates, peaked at the strip's centre.
    assert np.abs(ey[0]).max() == pytest.approx(1.0) and np.abs(ez[0]).max() < 0.5
    cu, cv = m.positions("Ey")
    j, k = np.unravel_index(np.abs(ey[0]).argmax(), ey[0].shape)
    assert abs(cu[j]) < 0.1e-6 and abs(cv[k]) < 0.1e-6
    ax = plot_mode(m, 0)
    path = tmp_path / "te0.png"
    ax.figure.savefig(path, dpi=50)
    plt.close(ax.figure)
    assert path.stat().st_size > 1000


def test_mode_monitors_read_a_mode_source(yee_bin, tmp_path):
    """scenes/slab_waveguide_2d.toml: TE0 launched one way; Result.mode_amplitudes reads the
    monitors. |S21|^2 between the two downstream monitors is 1 within 0.005 (a lossless straight
    guide; the Rust test bounds the rest), the leak behind the source below -40 dB, and the
    mode power equals the plane's flux to 1e-3 (one mode carries it all)."""
    scene = Path(__file__).resolve().parents[2] / "scenes" / "slab_waveguide_2d.toml"
    out = run_scene(yee_bin, tmp_path, "slab", scene.read_text())
    with Result(out) as r:
        a, b, back = (r.mode_amplitudes(n) for n in ("a", "b", "back"))
    assert a["forward"].dtype == complex and a["forward"].shape == (18, 2)
    s21 = np.abs(b["forward"][:, 0] / a["forward"][:, 0]) ** 2
    assert np.all(np.abs(s21 - 1) < 0.005), s21
    leak = np.abs(back["backward"][:, 0]) ** 2 / np.abs(a["forward"][:, 0]) ** 2
    assert np.all(10 * np.log10(leak) < -40), leak
    assert np.allclose(np.abs(a["forward"][:, 0]) ** 2, a["power"], rtol=1e-3)
    assert np.all(np.diff(a["neff"][:, 0]) > 0)  # normal dispersion across the band
    assert np.all(a["loss"] == 0.0)  # a lossless guide


TWO_PORT = """
[simulation]
length_unit = "um"
cell_size = 0.025
size = [6.0, 3.0, 0.025]
duration = 7.0e-13
[boundaries]
default = { type = "pml", cells = 12 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
si = { epsilon = 12.082576 }
oxide = { epsilon = 2.085136 }
[[geometry]]
shape = "box"
material = "oxide"
center = [0.0, 0.0, 0.0]
size = [20.0, 20.0, 20.0]
[[geometry]]
shape = "box"
material = "si"
center = [-5.0, 0.0, 0.0]
size = [10.0, 0.22, 20.0]
[[geometry]]
shape = "box"
material = "si"
center = [5.0, 0.1, 0.0]
size = [10.0, 0.5, 20.0]
[[source]]
type = "mode"
name = "in"
box = { center = [-2.2, 0.0, 0.0], size = [0.0, 3.0, 0.025] }
direction = "+x"
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
[[monitor]]
type = "mode"
name = "in"
box = { center = [-1.8, 0.0, 0.0], size = [0.0, 3.0, 0.025] }
frequencies = { min = 1.85e14, max = 2.02e14, count = 5 }
[[source]]
type = "mode"
name = "out"
box = { center = [2.2, 0.0, 0.0], size = [0.0, 3.0, 0.025] }
direction = "-x"
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
[[monitor]]
type = "mode"
name = "out"
box = { center = [1.8, 0.0, 0.0], size = [0.0, 3.0, 0.025] }
frequencies = { min = 1.85e14, max = 2.02e14, count = 5 }
[sparameters]
ports = ["in", "out"]
"""


def test_sparameters_read_plot_and_touchstone(yee_bin, tmp_path):
    """A width step's S-matrix: read_sparameters matches the Touchstone file yee writes beside
    the result, plot_sparameters draws it, and scikit-rf (where installed) reads both the same."""
    from yee_post import plot_sparameters, read_sparameters

    out = run_scene(yee_bin, tmp_path, "step", TWO_PORT)
    sp = read_sparameters(out)
    assert sp.ports == ["in", "out"] and sp.S.shape == (5, 2, 2)
    assert sp.reference_impedance == 50.0
    # Reciprocal (the Rust test bounds it); passive.
    assert np.all(np.abs(sp.s("out", "in") - sp.s("in", "out")) < 5e-4)
    assert np.all(np.abs(sp.S[:, 0, 0]) ** 2 + np.abs(sp.S[:, 1, 0]) ** 2 <= 1)
    touchstone = out.with_suffix(".s2p")
    rows = np.array(
        [[float(x) for x in line.split()] for line in touchstone.read_text().splitlines() if line[0] not in "!#"]
    )
    assert np.allclose(rows[:, 0], sp.frequency)
    s21 = rows[:, 3] * np.exp(1j * np.radians(rows[:, 4]))
    assert np.allclose(s21, sp.s("out", "in"), rtol=1e-7, atol=1e-9)
    axes = plot_sparameters(sp)
    path = tmp_path / "s.png"
    axes[0].figure.savefig(path, dpi=50)
    plt.close(axes[0].figure)
    assert path.stat().st_size > 1000
    skrf = pytest.importorskip("skrf")
    net = skrf.Network(str(touchstone))
    assert np.allclose(net.s, sp.S, rtol=1e-6, atol=1e-9)
    assert np.allclose(sp.to_skrf().s, sp.S)
