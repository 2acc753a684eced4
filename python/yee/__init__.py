"""yee from Python: scenes, checks, plans, runs and sweeps, with the engine in this wheel.

A scene is the TOML scene file as Python data (the same keys, docs/scene.md), checked by the
engine's own code with the messages ``yee check`` gives::

    import yee

    scene = yee.Scene.from_toml("scenes/dipole.toml")
    scene["simulation"]["cell_size"] = 0.04
    scene.check()                      # raises yee.SceneError listing every problem
    print(scene.plan(gpus="1x80GiB"))  # the plan `yee plan` prints
    result = scene.run("dipole.h5")    # a yee_post.Result on the file

Lengths are in the scene's ``simulation.length_unit`` (default metres), times in seconds and
frequencies in hertz, as in the scene file. ``yee.sweep`` runs many scenes side by side;
``yee.bands.run`` sweeps a periodic cell's Bloch phases into a band diagram.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native, geometry, scene_types
from ._toml import dumps as _dumps, loads as _loads

__version__ = _native.version()

__all__ = ["Scene", "SceneError", "RunRefused", "Problem", "Plan", "SweepOutcome", "sweep", "bands", "geometry", "scene_types", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scene: where (``key`` as a dotted path such as
    ``source[0].position``, ``line`` and ``column`` in the scene's TOML text, 0 when it has no
    single place) and what is wrong and what is allowed (``message``)."""

    key: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}: " if self.line else ""
        key = f"`{self.key}`: " if self.key else ""
        return f"{where}{key}{self.message}"


class SceneError(ValueError):
    """A scene the engine refuses, with every problem found at once (``problems``), as
    ``yee check`` lists them."""

    def __init__(self, message: str, problems: Sequence[Problem]):
        super().__init__(message)
        #: Every problem, in the order of the scene's text.
        self.problems: list[Problem] = list(problems)


@dataclass
class Plan:
    """A scene's plan, as ``yee plan`` gives it: ``text`` is its report and ``fields`` its JSON
    object (grid, backend, bytes per allocation, time and cost estimates); ``plan["key"]`` reads
    a field."""

    text: str
    fields: dict = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def __str__(self) -> str:
        return self.text


class Scene:
    """A scene: the TOML scene file's tables as nested dicts and lists (``scene["simulation"]``,
    ``scene["geometry"][0]``), editable in place. numpy arrays are accepted wherever the file
    takes a list (vertices, positions) and written as lists.

    ``Scene(dict)`` takes the data; ``Scene.from_toml(path)`` reads a file, whose directory is
    then where the scene's relative paths (STL, GDS, voxel files) are read from; ``base``
    sets that directory for a scene built in Python (default: the current directory).
    """

    def __init__(
        self,
        data: Optional[Union[scene_types.SceneData, Mapping[str, Any]]] = None,
        *,
        base: Optional[PathLike] = None,
    ):
        self.data: dict = copy.deepcopy(dict(data or {}))
        self._path: Optional[Path] = None
        self._base = Path(base) if base is not None else Path.cwd()

    @classmethod
    def from_toml(cls, path: PathLike) -> "Scene":
        """The scene in the TOML file at ``path``."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            data = _loads(text)
        except ValueError as e:
            # The engine says the same with the line and what to write.
            report = _native.check(text, str(path))
            raise _scene_error(report) from e
        scene = cls(data, base=path.parent)
        scene._path = path
        return scene

    @classmethod
    def from_string(cls, text: str, *, base: Optional[PathLike] = None) -> "Scene":
        """The scene in TOML ``text``."""
        return cls(_loads(text), base=base)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __repr__(self) -> str:
        name = self.data.get("simulation", {}).get("name", "")
        return f"Scene({name!r}, tables={list(self.data)})"

    def to_toml(self, path: Optional[PathLike] = None) -> str:
        """The scene as TOML text, the scene file format ``yee run`` reads; with ``path``,
        also written there (as :meth:`save`, numpy voxel grids beside it as ``.npy`` files)."""
        if path is not None:
            return self.save(path).read_text(encoding="utf-8")
        return _dumps(self.data)

    def save(self, path: PathLike) -> Path:
        """Write the scene to the TOML file ``path`` (for ``yee run`` on another machine or as
        a cluster job), numpy voxel grids beside it as ``<stem>.voxels-<i>.npy``; relative
        paths in the scene are kept, so save it in the directory they are relative to."""
        path = Path(path)
        data, _ = _voxels_to_files(self.data, lambda i: path.parent / f"{path.stem}.voxels-{i}.npy", relative=True)
        path.write_text(_dumps(data), encoding="utf-8")
        return path

    def _file(self) -> str:
        """The name the engine gives the scene in messages, in the directory its relative
        paths are read from."""
        if self._path is not None:
            return str(self._path)
        return str(self._base / f"{self._stem()}.toml")

    def _stem(self) -> str:
        """The scene's name for the files made for it: its file's stem, else its
        ``simulation.name``, else ``scene``."""
        if self._path is not None:
            return self._path.stem
        name = self.data.get("simulation", {}).get("name")
        return name if isinstance(name, str) and name else "scene"

    def check(self) -> list[str]:
        """Check the scene with the engine (the same code and messages as ``yee check``) and
        return what ``yee check`` says of it, warnings first; raise :class:`SceneError` with
        every problem when it is not valid."""
        with _Materialized(self) as data:
            report = _native.check(_dumps(data), self._file())
        if not report["ok"]:
            raise _scene_error(report)
        return [f"warning: {w}" for w in report["warnings"]] + list(report["lines"])

    def plan(
        self,
        gpus: Optional[str] = None,
        host_memory: Optional[str] = None,
        *,
        backend: Optional[str] = None,
        price: Optional[float] = None,
        ranks: Optional[int] = None,
        network: Optional[str] = None,
    ) -> Plan:
        """The dry-run plan (``yee plan``): ``gpus`` as ``--gpus`` (``"4x80GiB"``, ``"2xH100"``;
        None: the GPUs found here), ``host_memory`` as ``--host-memory`` (``"256GiB"``),
        ``backend`` ``"auto"``, ``"cpu"`` or ``"cuda"``, ``price`` per GPU-hour (a cost
        estimate), ``ranks`` MPI ranks (one per node) over ``network`` (``"100Gbit/s"``)."""
        self.check()
        with _Materialized(self) as data:
            text, report = _native.plan(
                _dumps(data), self._file(), gpus, host_memory, backend, price, ranks, network
            )
        return Plan(text=report, fields=json.loads(text))

    def run(
        self,
        out: PathLike,
        *,
        overwrite: bool = False,
        quiet: Optional[bool] = None,
        backend: Optional[str] = None,
        threads: Optional[int] = None,
        args: Sequence[str] = (),
    ):
        """Run the scene in this process, writing ``out`` (HDF5), and return a
        ``yee_post.Result`` on it. The same engine and datasets as ``yee run`` (bit for bit);
        the GIL is released while it steps. Ctrl-C stops it as in the command line: the file
        stays valid with ``complete = false``, then ``KeyboardInterrupt`` is raised.

        ``quiet``: no progress (default: quiet unless stderr is a terminal, so notebooks stay
        clean); ``backend`` ``"cpu"``, ``"cuda"`` or ``"auto"``; ``threads``, the CPU's worker
        threads; ``args``, more ``yee run`` options. When quiet, the engine's warnings and
        errors are passed on through ``sys.stderr`` (where a notebook shows them). Raises
        :class:`SceneError` for a scene the engine refuses, :class:`RunRefused` for a run it
        will not start (an output file that exists, without ``overwrite``) and
        ``RuntimeError`` for a run that fails, each with the engine's message.
        """
        self.check()
        if quiet is None:
            quiet = not sys.stderr.isatty()
        argv = ["yee", "run", "", "-o", os.fspath(out), *_engine_args(overwrite, quiet, backend, threads), *args]
        with self._scene_file() as scene_file:
            argv[2] = scene_file
            code, said = _engine(argv, capture=quiet)
        return _outcome(code, out, said)

    def modes(
        self,
        plane: Optional[str] = None,
        frequency: Optional[float] = None,
        count: int = 2,
        *,
        name: Optional[str] = None,
        neff: Optional[float] = None,
        pml: bool = False,
    ):
        """Solve waveguide modes without running FDTD (``yee modes``), on the grid's own
        cross-section and time step, and return them as a ``yee_post.Modes`` (``neff``,
        ``loss`` (dB/m), ``group_index``, ``effective_area``, ``wave_impedance``, E
        ``profiles``).

        ``plane`` ``"x=-3.0"`` (in the scene's length unit) with ``frequency`` (Hz) solves that
        node plane; without it, the scene's mode source or monitor ``name`` (default: the first)
        at its own frequency. ``count``: modes, highest n_eff first. ``neff``: the modes nearest
        this effective index instead of the most guided; ``pml``: the plane's cells in the
        domain's PML layers become an in-plane PML (leaky modes, whose ``loss`` is then their
        leakage). Raises :class:`SceneError` for a scene or plane the engine refuses."""
        import tempfile

        from yee_post import read_modes

        self.check()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "modes.h5"
            argv = ["yee", "modes", "", "--modes", str(int(count)), "-o", str(out)]
            if plane is not None:
                argv += ["--plane", plane]
            if frequency is not None:
                argv += ["--frequency", repr(float(frequency))]
            if neff is not None:
                argv += ["--neff", repr(float(neff))]
            if pml:
                argv += ["--pml"]
            with self._scene_file() as scene_file:
                argv[2] = scene_file
                code, said = _engine(argv, capture=True)
            if code != 0:
                raise SceneError(_errors(said) or f"yee modes failed (exit {code})", [])
            import h5py

            with h5py.File(out, "r") as f:
                names = list(f["modes"])
            if plane is None and name is None:
                name = names[0]
            return read_modes(out, "plane" if plane is not None else name)

    def _scene_file(self):
        """A context giving the path of the scene as a file: the file it was read from when
        unchanged, else a temporary file in its directory (relative paths stay right)."""
        return _SceneFile(self)


# Numbers the temporary files of this process: scenes of one name may run at once (a sweep).
_SERIAL = itertools.count()


class _Materialized:
    """The scene's data for the engine for the length of a ``with`` block: numpy voxel grids
    (``geometry.voxels``) written to ``.npy`` files beside the scene, their paths in their
    place; the files are removed afterwards."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.files: list[Path] = []

    def __enter__(self) -> dict:
        s = self.scene
        directory = s._path.parent if s._path is not None else s._base

        def name(i: int) -> Path:
            return directory / f"{s._stem()}.voxels-{i}.python-{os.getpid()}-{next(_SERIAL)}.npy"

        data, self.files = _voxels_to_files(s.data, name, relative=False)
        return data

    def __exit__(self, *exc) -> None:
        for path in self.files:
            path.unlink(missing_ok=True)


def _voxels_to_files(data: Mapping[str, Any], path_of, relative: bool) -> tuple:
    """``data`` with each geometry entry whose ``file`` is a numpy array (``geometry.voxels``)
    saved to ``path_of(index)`` as ``.npy`` and named there (by file name when ``relative``,
    else by full path), and the paths written. ``data`` itself is not changed."""
    data = dict(data)
    geometry = data.get("geometry")
    written: list = []
    if not isinstance(geometry, list):
        return data, written
    data["geometry"] = [dict(g) if isinstance(g, dict) else g for g in geometry]
    for i, g in enumerate(data["geometry"]):
        if isinstance(g, dict) and _is_array(g.get("file")):
            import numpy as np

            path = Path(path_of(i))
            np.save(path, g["file"])
            written.append(path)
            g["file"] = path.name if relative else str(path)
    return data, written


def _is_array(value: Any) -> bool:
    return hasattr(value, "ndim") and hasattr(value, "dtype")


class _SceneFile:
    """The scene as a file for the length of a ``with`` block (see :meth:`Scene._scene_file`)."""

    def __init__(self, scene: Scene):
        self.scene = scene
        self.materialized = _Materialized(scene)
        self.temporary: Optional[Path] = None

    def __enter__(self) -> str:
        s = self.scene
        data = self.materialized.__enter__()
        if not self.materialized.files and s._path is not None:
            if _loads(s._path.read_text(encoding="utf-8")) == data:
                return str(s._path)
        directory = s._path.parent if s._path is not None else s._base
        # Named after the scene: the engine's messages and warnings quote this file's name.
        self.temporary = directory / f"{s._stem()}.python-{os.getpid()}-{next(_SERIAL)}.toml"
        self.temporary.write_text(_dumps(data), encoding="utf-8")
        return str(self.temporary)

    def __exit__(self, *exc) -> None:
        if self.temporary is not None:
            self.temporary.unlink(missing_ok=True)
        self.materialized.__exit__(*exc)


def _scene_error(report: Mapping[str, Any]) -> SceneError:
    problems = [Problem(*p) for p in report["problems"]]
    return SceneError(report["message"], problems)


def _engine_args(overwrite: bool, quiet: Optional[bool], backend: Optional[str], threads: Optional[int]) -> list[str]:
    if quiet is None:
        quiet = not sys.stderr.isatty()
    argv = []
    if overwrite:
        argv.append("--overwrite")
    if quiet:
        argv.append("--quiet")
    if backend is not None:
        argv += ["--backend", backend]
    if threads is not None:
        argv += ["--threads", str(int(threads))]
    return argv


class RunRefused(ValueError):
    """A run the engine would not start (exit 2) though its scene is valid: an output file
    that exists without ``overwrite``, an engine that cannot hold the grid, a bad option. The
    message is the engine's."""


def _engine(argv: list, capture: bool) -> tuple:
    """Run the command line in-process: (its exit status, what it wrote to stderr when
    ``capture``, else ""). Captured text is written on to ``sys.stderr``, where a notebook
    shows it (the engine writes to the process's stderr, which a notebook does not)."""
    if not capture:
        return _native.main(argv), ""
    import tempfile

    with tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            code = _native.main(argv)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        said = sink.read().decode("utf-8", errors="replace")
    if said:
        sys.stderr.write(said)
    return code, said


def _errors(said: str) -> str:
    """The engine's ``error:`` lines from its stderr text, prefix removed."""
    return "\n".join(line[len("error: "):] for line in said.splitlines() if line.startswith("error: "))


def _outcome(code: int, out: PathLike, said: str = ""):
    """The result of a run that exited with ``code`` (``said``: its captured stderr), or the
    error it stands for."""
    from yee_post import Result

    why = _errors(said)
    if code == 0:
        return Result(out)
    if code == 2:
        raise RunRefused(why or "yee refused the run (exit 2): see its message above")
    if code in (129, 130, 143):
        raise KeyboardInterrupt(f"the run was stopped (exit {code}); {os.fspath(out)} holds what was written")
    detail = f": {why}" if why else ""
    raise RuntimeError(f"the run failed (exit {code}){detail}; {os.fspath(out)} holds what was written")


@dataclass
class SweepOutcome:
    """One scene of a sweep: its output file, its exit status (0: done) and, when it failed,
    the end of what it printed (``error``)."""

    out: Path
    code: int
    error: str = ""

    @property
    def ok(self) -> bool:
        """True when the run finished."""
        return self.code == 0

    def result(self):
        """The ``yee_post.Result`` on the output file."""
        from yee_post import Result

        return Result(self.out)


def sweep(
    scenes: Iterable[Scene],
    outputs: Iterable[PathLike],
    *,
    workers: int = 1,
    threads: Optional[int] = None,
    overwrite: bool = False,
    backend: Optional[str] = None,
) -> list[SweepOutcome]:
    """Run many scenes, ``workers`` at once, each into its own file of ``outputs``, and return
    one :class:`SweepOutcome` per scene in order. The machine's cores are split between the
    workers (``threads`` each; default: cores // workers). Each run is its own ``yee run``
    process, so a scene that fails (a refused scene, an engine error) is reported in its
    outcome and the others go on. On a cluster, run one scene per job instead: write each with
    ``scene.save("scene_i.toml")`` and submit ``yee run scene_i.toml -o out_i.h5``; nothing
    yee-specific is needed.
    """
    scenes = list(scenes)
    outputs = [Path(o) for o in outputs]
    if len(scenes) != len(outputs):
        raise ValueError(f"{len(scenes)} scenes but {len(outputs)} outputs: give one output file per scene")
    workers = max(1, int(workers))
    if threads is None:
        threads = max(1, (os.cpu_count() or 1) // workers)

    def one(pair) -> SweepOutcome:
        scene, out = pair
        with scene._scene_file() as path:
            argv = [sys.executable, "-m", "yee", "run", path, "-o", str(out)]
            argv += _engine_args(overwrite, True, backend, threads)
            done = subprocess.run(argv, capture_output=True, text=True)
        error = "" if done.returncode == 0 else done.stderr.strip()[-4000:]
        return SweepOutcome(out=out, code=done.returncode, error=error)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, zip(scenes, outputs)))


from . import bands  # noqa: E402  (uses Scene and sweep above)
