"""yee from Python (the `yee` wheel): scenes as data, the engine's checks and plans, in-process
runs bit-identical to `yee run`, Ctrl-C, sweeps, and the `yee` command from the same wheel.

These import the installed wheel (`pip install ./python`, as scripts/test.sh does)."""

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import yee  # noqa: E402  (the installed wheel)

REPO = Path(__file__).resolve().parents[2]

# A small 3-D dipole in vacuum: 20^3 cells, 240 steps, a probe and a DFT plane.
SMALL = """
[simulation]
name = "small"
length_unit = "mm"
cell_size = 1.0
size = [20.0, 20.0, 20.0]
steps = 240

[boundaries]
default = { type = "pml", cells = 6 }

[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.0e10, bandwidth = 1.0e10 }

[[monitor]]
type = "probe"
name = "p"
position = [3.0, 1.0, 0.0]
components = ["Ez", "Hy"]
"""


def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def datasets(path: Path) -> dict:
    """Every dataset of an HDF5 file, by path."""
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
    return out


def test_scene_round_trips_through_toml_and_reads_like_the_file(tmp_path):
    scene = yee.Scene.from_toml(small(tmp_path))
    assert scene["simulation"]["cell_size"] == 1.0
    assert scene["source"][0]["waveform"]["type"] == "gaussian"
    again = yee.Scene.from_string(scene.to_toml())
    assert again.data == scene.data
    # numpy values are written as numbers and lists.
    scene["monitor"][0]["position"] = np.array([3.0, 1.0, 0.0])
    scene["simulation"]["steps"] = np.int64(240)
    assert yee.Scene.from_string(scene.to_toml()).data == again.data
    lines = scene.check()
    assert lines[0].endswith("20 x 20 x 20 = 8000 cells, 240 steps of 1.9066e-12 s, f32"), lines


def test_scene_error_lists_every_problem_with_its_key_and_line(tmp_path):
    scene = yee.Scene.from_toml(small(tmp_path))
    scene["simulation"]["cell_size"] = -1.0
    scene["source"][0]["component"] = "Eq"
    with pytest.raises(yee.SceneError) as caught:
        scene.check()
    keys = [p.key for p in caught.value.problems]
    assert "simulation.cell_size" in keys and "source[0].component" in keys, keys
    assert all(p.line > 0 for p in caught.value.problems)
    # The same words as `yee check` on the same text.
    bad = tmp_path / "bad.toml"
    bad.write_text(scene.to_toml())
    cli = subprocess.run([sys.executable, "-m", "yee", "check", str(bad)], capture_output=True, text=True)
    assert cli.returncode == 2
    for p in caught.value.problems:
        assert p.message in cli.stderr


def test_plan_has_the_fields_and_text_of_yee_plan(tmp_path):
    plan = yee.Scene.from_toml(small(tmp_path)).plan(gpus="2x80GiB", host_memory="64GiB")
    assert plan["cells"] == 8000
    assert "plan for `small`" in plan.text
    cli = subprocess.run(
        [sys.executable, "-m", "yee", "plan", str(small(tmp_path)), "--gpus", "2x80GiB", "--host-memory", "64GiB"],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and cli.stdout == plan.text
    with pytest.raises(ValueError, match="gpus"):
        yee.Scene.from_toml(small(tmp_path)).plan(gpus="lots")
    with pytest.raises(ValueError, match="backend"):
        yee.Scene.from_toml(small(tmp_path)).plan(backend="abacus")
    over = yee.Scene.from_toml(small(tmp_path)).plan(host_memory="64GiB", backend="cpu", ranks=2, network="100Gbit/s")
    assert "ranks" in over.fields


def test_run_in_process_writes_the_same_datasets_as_yee_run(tmp_path, yee_bin):
    scene = yee.Scene.from_toml(small(tmp_path))
    scene["simulation"]["steps"] = 250  # changed: run from a temporary file beside it
    result = scene.run(tmp_path / "py.h5")
    t, ez = result.probe("p", "Ez")
    assert len(t) == 250 and np.abs(ez).max() > 0
    assert not list(tmp_path.glob("*.python-*")), "the temporary scene file is removed"
    changed = tmp_path / "changed.toml"
    changed.write_text(scene.to_toml())
    subprocess.run([str(yee_bin), "run", str(changed), "-o", str(tmp_path / "cli.h5"), "--quiet"], check=True)
    a, b = datasets(tmp_path / "py.h5"), datasets(tmp_path / "cli.h5")
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    with pytest.raises(yee.SceneError):
        yee.Scene({"simulation": {"cell_size": 1.0}}).run(tmp_path / "never.h5")
    # A run the engine will not start carries the engine's own words (a notebook sees no
    # process stderr): the result exists and overwrite was not asked for.
    with pytest.raises(yee.RunRefused, match="already exists"):
        scene.run(tmp_path / "py.h5")
    assert scene.run(tmp_path / "py.h5", overwrite=True).probe("p", "Ez")[0].shape == (250,)


def test_ctrl_c_stops_an_in_process_run_and_keeps_a_valid_file(tmp_path):
    """SIGINT during scene.run: the run stops as `yee run` does (a valid file, complete =
    false) and Python then raises KeyboardInterrupt; the interpreter's own handler is back."""
    script = tmp_path / "stop.py"
    # The interpreter's own Ctrl-C handler first: a suite started in the background of a
    # non-interactive shell inherits SIGINT ignored, and Python then starts without one.
    script.write_text(
        "import os, signal, threading, yee\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"scene = yee.Scene.from_toml({str(small(tmp_path))!r})\n"
        "scene['simulation']['steps'] = 10_000_000\n"
        "threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        f"    scene.run({str(tmp_path / 'stopped.h5')!r}, quiet=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
        # Python's table says nothing of the handler the system runs: a second Ctrl-C must
        # now reach the interpreter (the run's handler, left in place, would drop it as a
        # duplicate, printing 'missed', or end the process).
        "import time\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(5)\n"
        "    print('missed')\n"
        "except KeyboardInterrupt:\n"
        "    print('python')\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split() == ["interrupted", "True", "python"], done.stdout + done.stderr
    with h5py.File(tmp_path / "stopped.h5", "r") as f:
        assert not f.attrs["complete"]
        assert f["probes/p/time"].shape[0] > 0


def test_sweep_runs_scenes_side_by_side_and_reports_each_failure(tmp_path):
    base = yee.Scene.from_toml(small(tmp_path))
    scenes = []
    for steps in (240, 250):
        s = yee.Scene(base.data, base=tmp_path)
        s["simulation"]["steps"] = steps
        scenes.append(s)
    bad = yee.Scene(base.data, base=tmp_path)
    bad["source"][0]["position"] = [100.0, 0.0, 0.0]
    scenes.append(bad)
    outs = [tmp_path / f"s{i}.h5" for i in range(3)]
    outcomes = yee.sweep(scenes, outs, workers=2)
    assert [o.ok for o in outcomes] == [True, True, False]
    assert outcomes[2].code == 2 and "source[0].position" in outcomes[2].error
    assert len(outcomes[1].result().probe("p", "Ez")[0]) == 250
    with pytest.raises(ValueError, match="one output file per scene"):
        yee.sweep(scenes, outs[:1])


def test_the_wheel_installs_the_yee_command(tmp_path):
    command = Path(sys.executable).parent / "yee"
    assert command.exists(), "pip install puts `yee` beside the interpreter"
    done = subprocess.run([str(command), "check", str(small(tmp_path))], capture_output=True, text=True)
    assert done.returncode == 0 and "8000 cells" in done.stdout
    assert subprocess.run([str(command), "check", str(tmp_path / "missing.toml")], capture_output=True).returncode == 2


def test_geometry_from_numpy_gdstk_and_shapely_and_voxel_arrays(tmp_path):
    gdstk = pytest.importorskip("gdstk")
    shapely = pytest.importorskip("shapely.geometry")
    square = np.array([[-2.0, -2.0], [2.0, -2.0], [2.0, 2.0], [-2.0, 2.0]])
    from_numpy = yee.geometry.polygons(square, material="glass", span=[-1.0, 1.0])
    from_gdstk = yee.geometry.polygons(gdstk.rectangle((-2, -2), (2, 2)), material="glass", span=[-1.0, 1.0])
    from_shapely = yee.geometry.polygons(shapely.box(-2, -2, 2, 2), material="glass", span=[-1.0, 1.0])
    for entries in (from_numpy, from_gdstk, from_shapely):
        assert len(entries) == 1 and entries[0]["shape"] == "polygon"
        assert sorted(map(tuple, entries[0]["vertices"])) == sorted(map(tuple, square.tolist()))
    with pytest.raises(ValueError, match="holes"):
        yee.geometry.polygons(shapely.box(-2, -2, 2, 2).difference(shapely.box(-1, -1, 1, 1)), material="g", span=[0, 1])
    scene = yee.Scene.from_toml(small(tmp_path))
    scene["materials"] = {"glass": {"epsilon": 2.25}, "water": {"epsilon": 80.0}}
    grid = np.zeros((4, 4, 4), dtype=np.uint8)
    grid[2:, :, :] = 1
    scene["geometry"] = from_gdstk + [
        yee.geometry.voxels(grid, materials=["glass", "water"], box={"center": [0.0, 0.0, 0.0], "size": [4.0, 4.0, 4.0]})
    ]
    lines = scene.check()
    assert any("1 polygon, 4 vertices" in line for line in lines), lines
    assert any("voxels" in line for line in lines), lines
    assert not list(tmp_path.glob("*.npy")), "the voxel file written for the check is removed"
    result = scene.run(tmp_path / "voxels.h5")
    assert result.probe("p", "Ez")[1].shape == (240,)
    # Saved for a job elsewhere: the TOML and the grid beside it, and yee run reads them.
    saved = scene.save(tmp_path / "job.toml")
    assert scene.to_toml(tmp_path / "copy.toml") == (tmp_path / "copy.toml").read_text()
    assert np.array_equal(np.load(tmp_path / "job.voxels-1.npy"), grid)
    cli = subprocess.run([sys.executable, "-m", "yee", "check", str(saved)], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr


EXAMPLES = REPO / "python" / "examples"


@pytest.mark.parametrize("name", ["slab_sweep", "gdstk_ring", "bscan", "photonic_bands"])
def test_examples_run_and_make_their_figures(tmp_path, name):
    """Each example script, on its small grid (--quick), runs and writes its figure; the slab
    sweep's T is within 0.005 of the Airy formula (measured within 1.1e-3: the 25 nm grid's
    dispersion over a slab of a few hundred nm)."""
    if name == "gdstk_ring":
        pytest.importorskip("gdstk")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), str(tmp_path), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    if name == "slab_sweep":
        for line in done.stdout.splitlines():
            t = float(line.split("T = ")[1].split()[0])
            airy = float(line.split("Airy ")[1].rstrip(")"))
            assert abs(t - airy) < 0.005, line


def test_modes_from_python_match_yee_modes(tmp_path):
    """scene.modes(): the modes `yee modes` solves (here a 2-D slab guide's TE0), read back as
    a yee_post.Modes, on a plane given or at the scene's own mode source."""
    text = """
[simulation]
length_unit = "um"
cell_size = 0.02
size = [1.0, 4.0, 0.02]
steps = 100
[boundaries]
default = { type = "pml", cells = 10 }
z_min = { type = "periodic" }
z_max = { type = "periodic" }
[materials]
core = { epsilon = 12.0 }
[[geometry]]
shape = "box"
material = "core"
center = [0.0, 0.0, 0.0]
size = [10.0, 0.3, 10.0]
[[source]]
type = "mode"
name = "in"
box = { center = [0.0, 0.0, 0.0], size = [0.0, 4.0, 0.02] }
direction = "+x"
waveform = { type = "gaussian", frequency = 1.934e14, bandwidth = 2.0e13 }
"""
    scene = yee.Scene.from_string(text, base=tmp_path)
    at_source = scene.modes(count=1)
    on_plane = scene.modes(plane="x=0.0", frequency=1.934e14, count=1)
    assert 1.0 < at_source.neff[0] < np.sqrt(12.0)
    assert on_plane.neff[0] == pytest.approx(at_source.neff[0], rel=1e-9)
    assert on_plane.loss[0] == 0.0
    # The in-plane PML on a guided mode: complex, its loss tiny (the mode has decayed long
    # before the PML), its n_eff the walled one's.
    in_pml = scene.modes(plane="x=0.0", frequency=1.934e14, count=1, neff=3.0, pml=True)
    assert in_pml.neff[0] == pytest.approx(on_plane.neff[0], rel=1e-6)
    assert 0.0 <= in_pml.loss[0] < 1e-3
    with pytest.raises(yee.SceneError, match="outside the grid"):
        scene.modes(plane="x=50.0", frequency=1.934e14)
