"""The mesh of a result: grid nodes, per-component snapshot coordinates and flux field axes on
uniform and graded (non-uniform) grids, and the fallbacks for files written before the mesh
datasets existed."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import synthetic as syn
from helpers import assert_png, gif_frames, run_scene
from yee_post import STAGGER, Result, animate, plot_slice

SHAPE = (12, 10, 8)
ORIGIN = np.array([-0.6e-6, -0.5e-6, -0.4e-6])
CELL = np.array([0.1e-6, 0.1e-6, 0.1e-6])


def graded_nodes():
    """x graded (cells from 0.03 to 0.17 um, growing by at most 1.25), y and z uniform."""
    cells = 0.1e-6 * (1 + 0.7 * np.cos(2 * np.pi * (np.arange(SHAPE[0]) + 0.5) / SHAPE[0]))
    cells *= SHAPE[0] * CELL[0] / cells.sum()
    x = ORIGIN[0] + np.concatenate([[0.0], np.cumsum(cells)])
    x[-1] = ORIGIN[0] + SHAPE[0] * CELL[0]
    y = ORIGIN[1] + CELL[1] * np.arange(SHAPE[1] + 1)
    z = ORIGIN[2] + CELL[2] * np.arange(SHAPE[2] + 1)
    return x, y, z


def staggered(nodes, index, half):
    """Sample coordinates from the nodes: the node, or the cell's midpoint."""
    index = np.asarray(index)
    return 0.5 * (nodes[index] + nodes[index + 1]) if half else nodes[index]


def write_graded(path, coordinates=True):
    """A graded result as yee writes it: /grid, ``uniform = false``, a box snapshot of Ex and
    Hy with stride 2 whose values are syn.field_value at each sample, NaN spacing along x, and
    (with ``coordinates``) the per-component coordinate datasets; a flux plane normal to z with
    an Ey DFT field."""
    nodes = graded_nodes()
    start, end, stride = np.array([2, 1, 2]), np.array([11, 9, 7]), np.array([2, 2, 1])
    with h5py.File(path, "w") as f:
        f.attrs["cell_size"] = CELL
        f.attrs["origin"] = ORIGIN
        f.attrs["shape"] = np.array(SHAPE, dtype=np.uint64)
        f.attrs["dt"] = 1e-17
        f.attrs["steps"] = np.uint64(20)
        f.attrs["length_unit"] = "um"
        f.attrs["uniform"] = np.bool_(False)
        for a, axis in enumerate("xyz"):
            f[f"grid/{axis}"] = nodes[a]
        g = f.create_group("snapshots/box")
        g["time"] = np.array([1e-16, 2e-16])
        g["step"] = np.array([10, 20], dtype=np.uint64)
        for comp in ("Ex", "Hy"):
            half = [s > 0 for s in STAGGER[comp]]
            coords = [staggered(nodes[a], np.arange(start[a], end[a], stride[a]), half[a]) for a in range(3)]
            grid = np.meshgrid(*coords, indexing="ij")
            data = np.stack([syn.field_value(comp, *grid, t) for t in (1e-16, 2e-16)])
            d = g.create_dataset(comp, data=data)
            d.attrs["origin"] = np.array([c[0] for c in coords])
            d.attrs["spacing"] = np.array([np.nan, stride[1] * CELL[1], stride[2] * CELL[2]])
            d.attrs["index_start"] = start.astype(np.int64)
            d.attrs["stride"] = stride.astype(np.int64)
            d.attrs["time_offset"] = 0.0
            if coordinates:
                for a, axis in enumerate("xyz"):
                    g[f"coordinates/{comp}/{axis}"] = coords[a]
        fl = f.create_group("flux/top")
        fl["frequency"] = np.array([1e14, 2e14])
        fl["power"] = np.zeros(2)
        fl.attrs["axis"] = "z"
        fl.attrs["index"] = np.int64(6)
        fl.attrs["position"] = nodes[2][6]
        # Ey on the z plane: on x nodes from 1 (7 of them), y cell centres from 2 (5).
        ex = nodes[0][1:8]
        ey = staggered(nodes[1], np.arange(2, 7), True)
        d = fl.create_dataset("Ey", data=np.zeros((2, 7, 5), dtype=np.complex128))
        d.attrs["origin"] = np.array([ex[0], ey[0], nodes[2][6]])
        d.attrs["spacing"] = CELL
        if coordinates:
            fl["coordinates/Ey/x"] = ex
            fl["coordinates/Ey/y"] = ey
    return nodes, (start, end, stride)


@pytest.mark.parametrize("coordinates", [True, False])
def test_graded_snapshot_coordinates_and_values(tmp_path, coordinates):
    path = tmp_path / "graded.h5"
    nodes, (start, end, stride) = write_graded(path, coordinates=coordinates)
    with Result(path) as r:
        assert not r.uniform
        for a in range(3):
            np.testing.assert_array_equal(r.nodes[a], nodes[a])
        np.testing.assert_allclose(r.cell_sizes("x"), np.diff(nodes[0]))
        np.testing.assert_allclose(r.size, SHAPE * CELL, rtol=1e-12)
        for comp in ("Ex", "Hy"):
            field = r.snapshot("box", comp)
            for a in range(3):
                want = staggered(nodes[a], np.arange(start[a], end[a], stride[a]), STAGGER[comp][a] > 0)
                # Read back or recomputed from the nodes: the same doubles, or a rounding apart.
                np.testing.assert_allclose(field.coords[a], want, rtol=0, atol=1e-21)
            # The values are a function of position: the coordinates belong to them.
            expected = syn.field_value(comp, field.x[None, :, None, None], field.y[None, None, :, None],
                                       field.z[None, None, None, :], field.time[:, None, None, None])
            np.testing.assert_allclose(field.data, expected, rtol=1e-12)
            # Not evenly spaced along x.
            dx = np.diff(field.x)
            assert dx.max() / dx.min() > 1.2


@pytest.mark.parametrize("coordinates", [True, False])
def test_graded_flux_field_axes(tmp_path, coordinates):
    path = tmp_path / "graded.h5"
    nodes, _ = write_graded(path, coordinates=coordinates)
    with Result(path) as r:
        ff = r.flux_field("top", "Ey")
        assert ff.axes == ("x", "y")
        np.testing.assert_array_equal(ff.coords[0], nodes[0][1:8])
        np.testing.assert_allclose(ff.coords[1], staggered(nodes[1], np.arange(2, 7), True), atol=1e-21)
        assert ff.position == nodes[2][6]


def test_files_written_before_the_mesh_datasets(synthetic_file):
    """No /grid, no uniform attribute: nodes are origin + i * cell, and the grid is uniform."""
    with Result(synthetic_file) as r:
        assert r.uniform
        for a in range(3):
            n = r.nodes[a]
            assert len(n) == syn.SHAPE[a] + 1
            np.testing.assert_allclose(n, syn.ORIGIN[a] + syn.CELL[a] * np.arange(syn.SHAPE[a] + 1), rtol=0, atol=1e-21)
        np.testing.assert_allclose(r.size, np.array(syn.SHAPE) * syn.CELL)


def test_plots_of_a_graded_snapshot(tmp_path):
    path = tmp_path / "graded.h5"
    write_graded(path)
    with Result(path) as r:
        ax = plot_slice(r, "box", "Ex", axis="z")
        # A mesh over each sample's cell, spanning the samples' cells along x.
        assert len(ax.collections) == 1 and not ax.images
        x0, x1 = ax.get_xlim()
        field = r.snapshot("box", "Ex")
        assert x0 < field.x[0] * 1e6 < field.x[-1] * 1e6 < x1
        ax.figure.savefig(tmp_path / "slice.png")
        gif = animate(r, "box", "Ex", tmp_path / "anim.gif", axis="z")
    assert gif_frames(gif)[0] == 2
    assert_png(tmp_path / "slice.png", ax.figure.canvas.get_width_height())


def test_a_real_uniform_run_lists_its_mesh(yee_bin, tmp_path):
    """A run of the binary: /grid/* and the coordinate datasets agree with origin + i * cell
    and with each component's origin/spacing attributes."""
    toml = """
[simulation]
name = "m"
length_unit = "um"
cell_size = [0.05, 0.04, 0.05]
size = [0.8, 0.8, 0.6]
steps = 6
[boundaries]
default = { type = "pml", cells = 4 }
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }
[[monitor]]
type = "snapshot"
name = "s"
components = ["Ez", "Hx"]
box = { center = [0.0, 0.0, 0.0], size = [0.4, 0.4, 0.4] }
every = 3
stride = 2
[[monitor]]
type = "flux"
name = "f"
plane = { z = 0.1 }
frequencies = { min = 2.0e14, max = 4.0e14, count = 3 }
fields = true
"""
    path = run_scene(yee_bin, tmp_path, "m", toml)
    with Result(path) as r:
        assert r.uniform
        assert "grid/x" in r.file
        for a in range(3):
            np.testing.assert_allclose(r.nodes[a], r.origin[a] + r.cell_size[a] * np.arange(r.shape[a] + 1),
                                       rtol=0, atol=1e-21)
        for comp in ("Ez", "Hx"):
            ds = r.file[f"snapshots/s/{comp}"]
            o, s = ds.attrs["origin"], ds.attrs["spacing"]
            field = r.snapshot("s", comp)
            for a in range(3):
                np.testing.assert_allclose(field.coords[a], o[a] + s[a] * np.arange(ds.shape[a + 1]), rtol=0, atol=1e-21)
        # Flux DFT fields: the stored coordinates equal the origin/spacing ones on a uniform grid.
        for comp in ("Ex", "Ey", "Hx", "Hy"):
            ff = r.flux_field("f", comp)
            ds = r.file[f"flux/f/{comp}"]
            assert f"flux/f/coordinates/{comp}/x" in r.file
            o, s = ds.attrs["origin"], ds.attrs["spacing"]
            for i, a in enumerate((0, 1)):
                np.testing.assert_allclose(ff.coords[i], o[a] + s[a] * np.arange(ds.shape[1 + i]), rtol=0, atol=1e-21)
