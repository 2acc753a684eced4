"""Synthetic ``yee`` output files following the HDF5 contract, for tests that need no binary.

Field values are known functions of the sample's physical position and time, so a test can
check that the coordinates the package builds really belong to the values it returns.
"""

from __future__ import annotations

import numpy as np
import h5py

C0 = 299_792_458.0

STAGGER = {
    "Ex": (0.5, 0.0, 0.0),
    "Ey": (0.0, 0.5, 0.0),
    "Ez": (0.0, 0.0, 0.5),
    "Hx": (0.0, 0.5, 0.5),
    "Hy": (0.5, 0.0, 0.5),
    "Hz": (0.5, 0.5, 0.0),
}

SHAPE = (20, 16, 12)
# Anisotropic cells so that any mix-up between axes shows.
CELL = np.array([0.05e-6, 0.04e-6, 0.06e-6])
ORIGIN = -0.5 * np.array(SHAPE) * CELL
DT = 0.99 / (C0 * np.sqrt(np.sum(1.0 / CELL**2)))
STEPS = 400
EVERY = 20
PROBE_FREQ = 2.0e14


def field_value(component: str, x, y, z, t):
    """The synthetic value of ``component`` at position (metres) and time (seconds)."""
    base = {"Ex": 1.0, "Ey": 2.0, "Ez": 3.0, "Hx": 4.0, "Hy": 5.0, "Hz": 6.0}[component]
    # Linear in the coordinates (in cells-ish units) and in time: easy to invert in tests.
    return base + x * 1e6 + 10.0 * y * 1e6 + 100.0 * z * 1e6 + 1e13 * t


def probe_value(component: str, t):
    """Synthetic probe signal: a decaying sinusoid at PROBE_FREQ (cosine for H, sine for E)."""
    osc = np.cos if component.startswith("H") else np.sin
    return osc(2 * np.pi * PROBE_FREQ * t) * np.exp(-t / (STEPS * DT / 4))


def _position(index, component):
    return ORIGIN + (np.asarray(index) + np.asarray(STAGGER[component])) * CELL


def write_synthetic(path, precision="f64", complete=True, interrupted_at=None, bytes_strings=False):
    """Write a synthetic result file.

    ``interrupted_at`` (a step count) imitates a run stopped early: datasets stop there, some
    one row shorter than others, and ``complete`` is false. ``bytes_strings`` stores string
    attributes as fixed-length bytes, as some HDF5 writers do.
    """
    dtype = np.float32 if precision == "f32" else np.float64
    done = STEPS if interrupted_at is None else interrupted_at
    if interrupted_at is not None:
        complete = False

    def s(text):
        return np.bytes_(text) if bytes_strings else text

    with h5py.File(path, "w") as f:
        f.attrs["yee_version"] = s("0.1.0")
        f.attrs["scene"] = s("[simulation]\nname = \"synthetic\"\n")
        f.attrs["length_unit"] = s("um")
        f.attrs["cell_size"] = CELL
        f.attrs["origin"] = ORIGIN
        f.attrs["shape"] = np.array(SHAPE, dtype=np.uint64)
        f.attrs["dt"] = np.float64(DT)
        f.attrs["steps"] = np.uint64(STEPS)
        f.attrs["precision"] = s(precision)
        f.attrs["backend"] = s("cpu")
        f.attrs["complete"] = np.bool_(complete)

        # Probe: E at (n+1) dt, H half a step earlier.
        g = f.create_group("probes/p")
        g.attrs["position"] = np.array([0.1e-6, -0.05e-6, 0.02e-6])
        time = (np.arange(done) + 1) * DT
        g["time"] = time
        for comp in ("Ez", "Hx"):
            index = np.array([11, 6, 6], dtype=np.int64)
            offset = -DT / 2 if comp.startswith("H") else 0.0
            rows = done if comp == "Ez" or interrupted_at is None else done - 1
            d = g.create_dataset(comp, data=probe_value(comp, time[:rows] + offset).astype(dtype))
            d.attrs["index"] = index
            d.attrs["position"] = _position(index, comp)
            d.attrs["time_offset"] = np.float64(offset)

        # Plane snapshot normal to z, and a strided box snapshot.
        _snapshot(f, "plane_xy", ("Ez", "Hz"), start=(0, 0, 6), count=(20, 16, 1), stride=(1, 1, 1),
                  done=done, dtype=dtype, interrupted=interrupted_at is not None)
        _snapshot(f, "box", ("Ex",), start=(2, 1, 3), count=(5, 4, 3), stride=(2, 3, 2),
                  done=done, dtype=dtype, interrupted=interrupted_at is not None)

        # Frequency-domain groups as they will appear later.
        fl = f.create_group("flux/top")
        fl["frequency"] = np.linspace(1e14, 3e14, 5)
        fl["power"] = np.linspace(1.0, 2.0, 5)
        cplx = np.dtype([("r", "<f8"), ("i", "<f8")])
        dft = f.create_group("dft/d1")
        dft["frequency"] = np.array([2e14])
        arr = np.zeros((1, 3, 2), dtype=cplx)
        arr["r"] = 1.0
        arr["i"] = -2.0
        dft["Ez"] = arr


def _snapshot(f, name, comps, start, count, stride, done, dtype, interrupted):
    g = f.create_group(f"snapshots/{name}")
    g.attrs["every"] = np.int64(EVERY)
    steps = np.arange(EVERY, done + 1, EVERY, dtype=np.uint64)
    g.create_dataset("step", data=steps, maxshape=(None,))
    g.create_dataset("time", data=steps * DT, maxshape=(None,))
    for n, comp in enumerate(comps):
        origin = _position(start, comp)
        spacing = np.asarray(stride) * CELL
        x, y, z = (origin[a] + spacing[a] * np.arange(count[a]) for a in range(3))
        offset = -DT / 2 if comp.startswith("H") else 0.0
        # An interrupted run may stop between writing two components of the same frame.
        rows = len(steps) - (1 if interrupted and n > 0 else 0)
        t = steps[:rows] * DT + offset
        data = field_value(comp, x[None, :, None, None], y[None, None, :, None],
                           z[None, None, None, :], t[:, None, None, None])
        d = g.create_dataset(comp, data=data.astype(dtype), maxshape=(None,) + tuple(count),
                             chunks=(1,) + tuple(count))
        d.attrs["origin"] = origin
        d.attrs["spacing"] = spacing
        d.attrs["index_start"] = np.asarray(start, dtype=np.int64)
        d.attrs["stride"] = np.asarray(stride, dtype=np.int64)
        d.attrs["time_offset"] = np.float64(offset)
