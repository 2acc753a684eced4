"""B-scans: the traces of a ``[scan]`` run as one array with its axes, and the usual GPR
processing before display (time-zero correction, background removal, gain).

A scan file stores each probe component as ``/probes/<name>/<component>`` [traces, steps],
with ``/probes/<name>/positions`` [traces, 3] (m) and ``/probes/<name>/time`` [steps] (s); the
root attribute ``traces_done`` says how many leading traces are in the file (all of them unless
the run was interrupted).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Union

import numpy as np


@dataclass
class BScan:
    """A probe component over every finished trace of a scan.

    ``data`` is ``[traces, samples]``, ``time`` the sample times in seconds (the component's
    half-step offset applied, and shifted by any time-zero correction), ``positions`` each
    trace's probe position ``[traces, 3]`` in metres.
    """

    name: str
    component: str
    data: np.ndarray
    time: np.ndarray
    positions: np.ndarray

    @property
    def traces(self) -> int:
        """Number of traces held."""
        return int(self.data.shape[0])

    @property
    def scan_axis(self) -> Optional[int]:
        """The one axis (0, 1, 2 for x, y, z) along which the probe moves, or None when it
        moves along several (or not at all)."""
        moving = [a for a in range(3) if np.ptp(self.positions[:, a]) > 0]
        return moving[0] if len(moving) == 1 else None

    @property
    def distance(self) -> np.ndarray:
        """Each trace's place along the scan (m): the probe's coordinate along its scan axis,
        or, when it moves along several axes, the distance travelled from trace 0."""
        a = self.scan_axis
        if a is not None:
            return self.positions[:, a].copy()
        steps = np.linalg.norm(np.diff(self.positions, axis=0), axis=1)
        return np.concatenate([[0.0], np.cumsum(steps)])


def first_break(scan: BScan, threshold: float = 0.1) -> float:
    """The time (s) at which the mean absolute trace first reaches ``threshold`` times its
    maximum: the arrival of the direct wave, a common time zero."""
    envelope = np.abs(scan.data).mean(axis=0)
    if envelope.max() == 0:
        return float(scan.time[0])
    first = int(np.argmax(envelope >= threshold * envelope.max()))
    return float(scan.time[first])


def time_zero(scan: BScan, t0: Union[float, str]) -> BScan:
    """Time-zero correction: drop the samples before ``t0`` (s) and shift the time axis so that
    ``t0`` reads 0. ``t0="auto"`` takes the first break (:func:`first_break`)."""
    t = first_break(scan) if t0 == "auto" else float(t0)
    keep = scan.time >= t
    return replace(scan, data=scan.data[:, keep], time=scan.time[keep] - t)


def remove_background(scan: BScan) -> BScan:
    """Subtract the mean trace from every trace: removes what all traces share (the direct
    wave, flat layers) and leaves what changes from trace to trace (a buried object's
    hyperbola)."""
    return replace(scan, data=scan.data - scan.data.mean(axis=0, keepdims=True))


def apply_gain(scan: BScan, kind: str = "power", factor: float = 1.0) -> BScan:
    """Gain that grows with time, to bring up late (deep, attenuated) echoes.

    ``kind="power"``: multiply by ``(t / t_end) ** factor`` (``factor = 1`` undoes the 1/r
    spreading of a 3-D wave, 0.5 that of a 2-D one); ``kind="exp"``: multiply by
    ``exp(factor * t)`` with ``factor`` in 1/s (undoes an attenuation of ``factor`` nepers per
    second). Times before zero get no gain."""
    t = np.clip(scan.time, 0.0, None)
    if kind == "power":
        end = t.max() if t.max() > 0 else 1.0
        g = (t / end) ** float(factor)
    elif kind == "exp":
        g = np.exp(float(factor) * t)
    else:
        raise ValueError(f"gain must be 'power' or 'exp', not {kind!r}")
    return replace(scan, data=scan.data * g[None, :])


def read_bscan(group, component: str, dt: float, traces_done: int) -> BScan:
    """The :class:`BScan` of ``component`` in the probe group ``group`` of a scan file (h5py),
    keeping the first ``traces_done`` traces. Used by :meth:`yee_post.Result.bscan`."""
    if component not in group:
        have = [k for k in group if k not in ("time", "positions")]
        raise KeyError(f"probe {group.name!r} has no component {component!r} (have: {have})")
    dset = group[component]
    if dset.ndim != 2 or "positions" not in group:
        raise ValueError(
            f"probe {group.name!r} is not from a [scan] run (its {component} is "
            f"{dset.ndim}-D); read it with Result.probe"
        )
    data = np.asarray(dset[:traces_done], dtype=float)
    steps = data.shape[1]
    time = group["time"][()] if "time" in group else (np.arange(steps) + 1) * dt
    time = np.asarray(time[:steps], dtype=float) + float(dset.attrs.get("time_offset", 0.0))
    positions = np.asarray(group["positions"][:traces_done], dtype=float)
    return BScan(
        name=group.name.rsplit("/", 1)[-1],
        component=component,
        data=data,
        time=time,
        positions=positions,
    )
