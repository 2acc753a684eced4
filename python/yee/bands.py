"""Band structures of periodic cells: one Bloch-periodic run per wavevector, its resonances by
harmonic inversion, and the band diagram as an HDF5 file.

A band diagram is the resonance frequencies of the unit cell at each Bloch wavevector along a
path through the Brillouin zone (Meep's ``run_k_points``, MPB's band diagrams). Here each
wavevector is a run of the scene with the Bloch phases set on its periodic axes (``phase`` =
k L / 2 pi per axis, as ``[boundaries]`` takes it), a probe's ringing after the source is
harmonic-inverted (:func:`yee_post.harminv`, filter diagonalization), and the frequencies are
collected per wavevector::

    import yee

    cell = yee.Scene.from_toml("rods.toml")          # periodic x and y, a dipole and a probe
    k = yee.bands.path([[0, 0], [0.5, 0], [0.5, 0.5], [0, 0]], per_segment=8)
    diagram = yee.bands.run(cell, k, probe="p", component="Ez", fmin=1e13, fmax=2.4e14,
                            after=1.5e-13, workers=2)
    diagram.save("bands.h5")                           # yee_post.plot_bands("bands.h5")

The source should be broadband and off every symmetry point of the cell, the probe elsewhere
off them too, so that every band couples to both.
"""

from __future__ import annotations

import copy
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

AXES = ("x", "y", "z")

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Bands:
    """A band diagram: ``phase`` [k, 3] (the Bloch phase k L / 2 pi along x, y, z of each
    wavevector), ``frequency`` and ``q`` [k, band] (Hz and quality factor of each resonance
    found, in increasing frequency, NaN where a wavevector has fewer), ``distance`` [k] (the
    path's length up to each wavevector, in phase units, for the horizontal axis)."""

    phase: np.ndarray
    frequency: np.ndarray
    q: np.ndarray
    distance: np.ndarray

    def band(self, n: int) -> np.ndarray:
        """Band ``n`` (0: the lowest found at each wavevector) along the path."""
        return self.frequency[:, n]

    def save(self, path: PathLike) -> Path:
        """Write the diagram to ``path`` as ``/bands/phase``, ``/bands/frequency``, ``/bands/Q``
        and ``/bands/distance`` (what :func:`yee_post.plot_bands` reads)."""
        import h5py

        path = Path(path)
        with h5py.File(path, "w") as f:
            g = f.create_group("bands")
            g["phase"] = self.phase
            g["frequency"] = self.frequency
            g["Q"] = self.q
            g["distance"] = self.distance
            g.attrs["definition"] = (
                "frequency [k, band] (Hz) and Q of the resonances of the cell at each Bloch "
                "phase [k, axis] (k L / 2 pi), by harmonic inversion of a probe's ringing"
            )
        return path


def path(corners: Sequence[Sequence[float]], per_segment: int = 8) -> np.ndarray:
    """Bloch phases along straight segments between ``corners`` (each 1 to 3 phases, x then y
    then z; e.g. Gamma, X, M, Gamma of a square lattice: ``[[0, 0], [0.5, 0], [0.5, 0.5],
    [0, 0]]``), ``per_segment`` steps each, corners included once: [k, 3]."""
    pts = np.array([list(c) + [0.0] * (3 - len(c)) for c in corners], dtype=float)
    if len(pts) < 2:
        return pts
    out = [pts[0]]
    for a, b in zip(pts[:-1], pts[1:]):
        for s in range(1, per_segment + 1):
            out.append(a + (b - a) * s / per_segment)
    return np.array(out)


def _with_phase(scene, phase: Sequence[float]):
    """The scene with Bloch phase ``phase[a]`` on each periodic axis a: ``{axis}_min =
    { type = "bloch", phase }`` (the max face follows); an axis whose phase is 0 keeps its
    plain periodic faces (no imaginary field set there)."""
    from . import Scene

    data = copy.deepcopy(scene.data)
    b = data.setdefault("boundaries", {})
    default = (b.get("default") or {}).get("type")
    for a, p in enumerate(phase):
        lo, hi = f"{AXES[a]}_min", f"{AXES[a]}_max"
        kinds = {(b.get(face) or {}).get("type", default) for face in (lo, hi)}
        if p == 0:
            continue
        if not kinds <= {"periodic", "bloch"}:
            raise ValueError(
                f"a Bloch phase along {AXES[a]} needs that axis periodic in the scene "
                f"([boundaries] {lo} and {hi} type = \"periodic\")"
            )
        b[lo] = {"type": "bloch", "phase": float(p)}
        b.pop(hi, None)
    return Scene(data, base=scene._base)


def run(
    scene,
    phases: Sequence[Sequence[float]],
    *,
    probe: str,
    component: str,
    fmin: float,
    fmax: float,
    after: float = 0.0,
    workers: int = 1,
    threads: Optional[int] = None,
    workdir: Optional[PathLike] = None,
    max_bands: Optional[int] = None,
) -> Bands:
    """The band diagram of the periodic cell ``scene`` at the Bloch ``phases`` ([k, up to 3],
    e.g. from :func:`path`): one run per wavevector (``workers`` at once, each its own process,
    ``threads`` each), then the resonances in [``fmin``, ``fmax``] Hz of probe ``probe``'s
    ``component`` after time ``after`` (s). ``workdir`` keeps the runs' files (default: a
    temporary folder, removed). ``max_bands`` caps the bands kept per wavevector. A run that
    fails raises ``RuntimeError`` with its message."""
    from . import sweep
    from yee_post import Result, harminv

    phases = np.array([list(p) + [0.0] * (3 - len(p)) for p in phases], dtype=float)
    scenes = [_with_phase(scene, p) for p in phases]
    with tempfile.TemporaryDirectory(prefix="yee-bands-") as tmp:
        folder = Path(workdir) if workdir is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        outs = [folder / f"k{i:03d}.h5" for i in range(len(scenes))]
        done = sweep(scenes, outs, workers=workers, threads=threads, overwrite=True)
        found = []
        for i, outcome in enumerate(done):
            if not outcome.ok:
                raise RuntimeError(f"the run at Bloch phase {phases[i].tolist()} failed: {outcome.error}")
            with Result(outcome.out) as r:
                t, values = r.probe(probe, component)
                dt = r.dt
            res = harminv(values[t >= after], dt, fmin, fmax)
            order = np.argsort(res.frequency)
            found.append((res.frequency[order], res.Q[order]))
    width = max((len(f) for f, _ in found), default=0)
    if max_bands is not None:
        width = min(width, max_bands)
    freq = np.full((len(found), width), np.nan)
    q = np.full((len(found), width), np.nan)
    for i, (f, qq) in enumerate(found):
        n = min(width, len(f))
        freq[i, :n] = f[:n]
        q[i, :n] = qq[:n]
    steps = np.linalg.norm(np.diff(phases, axis=0), axis=1) if len(phases) > 1 else np.zeros(0)
    distance = np.concatenate([[0.0], np.cumsum(steps)])
    return Bands(phase=phases, frequency=freq, q=q, distance=distance)
