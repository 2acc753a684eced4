"""Reading the HDF5 files written by ``yee run``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

import h5py
import numpy as np

from .scan import BScan, read_bscan

# Offset of each field component from its grid node, in cells (Yee staggering).
STAGGER: Dict[str, Tuple[float, float, float]] = {
    "Ex": (0.5, 0.0, 0.0),
    "Ey": (0.0, 0.5, 0.0),
    "Ez": (0.0, 0.0, 0.5),
    "Hx": (0.0, 0.5, 0.5),
    "Hy": (0.5, 0.0, 0.5),
    "Hz": (0.5, 0.5, 0.0),
}

COMPONENTS = tuple(STAGGER)

# Monitor kinds that monitors() always reports, even when the file has none of them.
_MONITOR_GROUPS = {"probes": "probes", "snapshots": "snapshots", "flux": "flux"}

_WINDOWS = {
    "hann": np.hanning,
    "hanning": np.hanning,
    "hamming": np.hamming,
    "blackman": np.blackman,
}


def _plain(value):
    """Convert an attribute value read by h5py to a plain Python/numpy value."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SO":
            return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value.tolist()]
        return value
    if isinstance(value, np.generic):
        return value.item()
    return value


def _to_complex(array: np.ndarray) -> np.ndarray:
    """Turn a compound array with fields ``r`` and ``i`` into a complex array; others pass through."""
    names = array.dtype.names
    if names and set(names) == {"r", "i"}:
        out = np.empty(array.shape, dtype=np.result_type(array["r"].dtype, np.complex64))
        out.real = array["r"]
        out.imag = array["i"]
        return out
    return array


@dataclass
class Field:
    """Snapshot samples with their physical coordinates.

    ``data`` is ``[n, nx', ny', nz']`` for all frames or ``[nx', ny', nz']`` for one frame.
    ``x``, ``y``, ``z`` are the sample coordinates in metres (staggering and stride included;
    on a graded grid not evenly spaced, and ``spacing`` is NaN along the graded axes),
    ``time`` the sample time(s) in seconds (half a step earlier for H components) and
    ``steps`` the step number(s) of the frame(s).
    """

    name: str
    component: str
    data: np.ndarray
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    time: Union[float, np.ndarray]
    steps: Union[int, np.ndarray]
    origin: np.ndarray
    spacing: np.ndarray

    @property
    def coords(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``(x, y, z)`` coordinate arrays in metres."""
        return self.x, self.y, self.z


@dataclass
class FluxField:
    """One DFT field of a flux monitor's plane.

    ``data`` is complex ``[frequency, n1, n2]``; ``axes`` names the two in-plane axes and
    ``coords`` their coordinates in metres; ``position`` is the plane's coordinate along its
    normal (metres).
    """

    name: str
    component: str
    data: np.ndarray
    frequency: np.ndarray
    axes: Tuple[str, str]
    coords: Tuple[np.ndarray, np.ndarray]
    position: float


@dataclass
class FarField:
    """A far-field monitor's pattern (``/far_field/<name>/``).

    ``e_theta``, ``e_phi`` are complex ``[frequency, theta, phi]``: r E with the e^{ikr} phase
    removed (V, e^{-i w t}), r measured from the scene's origin; ``intensity`` is
    r^2 |E|^2 / eta0 (W/sr in the DFT normalisation of the flux power, so that its integral over
    the sphere is the box's radiated power: compare :meth:`total_power` with ``power``, the
    net outward flux through the same box). ``theta`` (from +z) and ``phi`` (from +x towards +y)
    are in degrees; ``frequency`` in Hz.

    With one lumped port driving the run, the antenna figures (None otherwise):
    ``gain`` 4 pi U / P_accepted and ``realized_gain`` 4 pi U / P_incident
    ``[frequency, theta, phi]`` (linear; ``10 * np.log10(gain)`` is dBi), and
    ``radiation_efficiency`` P_radiated / P_accepted ``[frequency]``, from the port's powers at
    the monitor's frequencies (``accepted_power``, ``incident_power``) and ``power``.
    """

    name: str
    frequency: np.ndarray
    theta: np.ndarray
    phi: np.ndarray
    e_theta: np.ndarray
    e_phi: np.ndarray
    intensity: np.ndarray
    power: np.ndarray
    gain: Optional[np.ndarray] = None
    realized_gain: Optional[np.ndarray] = None
    radiation_efficiency: Optional[np.ndarray] = None
    accepted_power: Optional[np.ndarray] = None
    incident_power: Optional[np.ndarray] = None

    def total_power(self) -> np.ndarray:
        """The intensity integrated over the angles (trapezoid rule in theta and phi), per
        frequency: the radiated power when theta spans [0, 180] and phi a full turn."""
        th = np.radians(self.theta)
        ph = np.radians(self.phi)
        integrand = self.intensity * np.sin(th)[None, :, None]
        if len(ph) > 1:
            over_phi = np.trapezoid(integrand, ph, axis=2)
        else:
            over_phi = integrand[:, :, 0] * 2 * np.pi
        return np.trapezoid(over_phi, th, axis=1) if len(th) > 1 else over_phi[:, 0]

    def directivity(self) -> np.ndarray:
        """4 pi intensity / radiated power ([frequency, theta, phi]; 1.5 at the equator of a
        small dipole)."""
        return 4 * np.pi * self.intensity / self.total_power()[:, None, None]

    def frequency_index(self, frequency: Optional[float] = None) -> int:
        """Index of the stored frequency nearest ``frequency`` (Hz); the middle one by default."""
        if frequency is None:
            return len(self.frequency) // 2
        return int(np.argmin(np.abs(self.frequency - frequency)))


class Result:
    """An open ``yee`` output file.

    Use as a context manager (``with Result("out.h5") as r: ...``) or call :meth:`close`.
    The file is opened read-only; a file from an interrupted run (``complete == False``)
    is read up to the last row written.
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        self._file = h5py.File(self.path, "r")
        self.attrs: Dict[str, object] = {k: _plain(v) for k, v in self._file.attrs.items()}
        self._nodes: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close the underlying HDF5 file."""
        self._file.close()

    def __enter__(self) -> "Result":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Result({self.path!r}, shape={tuple(self.shape)}, complete={self.complete})"

    @property
    def file(self) -> h5py.File:
        """The underlying :class:`h5py.File`, for anything this class does not cover."""
        return self._file

    # -- root attributes ----------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, int, int]:
        """Grid size ``(nx, ny, nz)`` in cells."""
        return tuple(int(n) for n in self.attrs["shape"])

    @property
    def cell_size(self) -> np.ndarray:
        """Cell size ``[dx, dy, dz]`` in metres."""
        return np.asarray(self.attrs["cell_size"], dtype=float)

    @property
    def origin(self) -> np.ndarray:
        """Coordinates of grid node (0, 0, 0) in metres: the minimum corner of the domain."""
        return np.asarray(self.attrs["origin"], dtype=float)

    @property
    def size(self) -> np.ndarray:
        """Domain extent in metres along x, y, z (last node minus first; ``shape * cell_size``
        on a uniform grid)."""
        return np.array([n[-1] - n[0] for n in self.nodes])

    @property
    def uniform(self) -> bool:
        """Whether every axis is uniform (root attribute ``uniform``; files written before it
        existed are uniform)."""
        if "uniform" in self.attrs:
            return bool(self.attrs["uniform"])
        return True

    @property
    def nodes(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Node coordinates ``(x, y, z)`` of the primal grid in metres (``nx + 1``, ``ny + 1``,
        ``nz + 1`` values): ``/grid/x|y|z``, or ``origin + i * cell_size`` for files written
        before those datasets existed."""
        if self._nodes is None:
            out = []
            for a, axis in enumerate("xyz"):
                path = f"grid/{axis}"
                if path in self._file:
                    out.append(np.asarray(self._file[path][()], dtype=float))
                else:
                    out.append(self.origin[a] + self.cell_size[a] * np.arange(self.shape[a] + 1))
            self._nodes = tuple(out)
        return self._nodes

    def cell_sizes(self, axis) -> np.ndarray:
        """The size (m) of every primal cell along ``axis`` (``"x"``, ``"y"``, ``"z"`` or 0-2)."""
        a = "xyz".index(axis) if isinstance(axis, str) else int(axis)
        return np.diff(self.nodes[a])

    def _staggered(self, a: int, index: np.ndarray, half: bool) -> np.ndarray:
        """Coordinates (m) along axis ``a`` of node indices ``index``, or of the centres of
        cells ``index`` when ``half`` (a component staggered along ``a``)."""
        n = self.nodes[a]
        index = np.asarray(index, dtype=int)
        return 0.5 * (n[index] + n[index + 1]) if half else n[index]

    @property
    def dt(self) -> float:
        """Time step in seconds."""
        return float(self.attrs["dt"])

    @property
    def steps(self) -> int:
        """Number of steps the run was asked for (an interrupted run may have stored fewer)."""
        return int(self.attrs["steps"])

    @property
    def complete(self) -> bool:
        """Whether the run finished (False after an interrupt or failure)."""
        return bool(self.attrs.get("complete", False))

    @property
    def length_unit(self) -> str:
        """The scene's length unit (``m``, ``mm``, ``um`` or ``nm``); file values are in metres."""
        return str(self.attrs.get("length_unit", "m"))

    # -- listing ----------------------------------------------------------------------------
    def monitors(self) -> Dict[str, List[str]]:
        """Monitor names by kind: always ``probes``, ``snapshots`` and ``flux``, plus any other
        top-level groups (e.g. DFT monitors) present in the file."""
        out: Dict[str, List[str]] = {key: [] for key in _MONITOR_GROUPS}
        for key, obj in self._file.items():
            if isinstance(obj, h5py.Group):
                out[key] = sorted(obj.keys())
        return out

    def components(self, kind: str, name: str) -> List[str]:
        """Field components stored for monitor ``name`` of ``kind`` (``probes`` or ``snapshots``)."""
        group = self._group(kind, name)
        return [c for c in COMPONENTS if c in group]

    def _group(self, kind: str, name: str) -> h5py.Group:
        path = f"{kind}/{name}"
        if path not in self._file:
            have = self.monitors().get(kind, [])
            raise KeyError(f"no {kind} monitor {name!r} in {self.path} (have: {have})")
        return self._file[path]

    def _dataset(self, kind: str, name: str, component: str) -> h5py.Dataset:
        group = self._group(kind, name)
        if component not in group:
            raise KeyError(
                f"{kind} monitor {name!r} has no component {component!r} "
                f"(have: {self.components(kind, name)})"
            )
        return group[component]

    def read(self, path: str) -> np.ndarray:
        """Read any dataset by its path in the file; complex compounds (``r``, ``i``) become complex."""
        return _to_complex(self._file[path][()])

    # -- materials --------------------------------------------------------------------------
    def materials(self) -> Dict[str, Dict[str, object]]:
        """Each material's parameters from ``/materials``: ``epsilon``, ``conductivity``
        (S/m), ``mu``, ``magnetic_conductivity`` (ohm/m), ``pec``, optionally ``band`` (Hz),
        and the poles as arrays ``lorentz`` [n, 3] (delta_epsilon, frequency, damping),
        ``drude`` [n, 2] (frequency, damping), ``debye`` [n, 2] (delta_epsilon,
        relaxation_time), empty when the material has none."""
        out: Dict[str, Dict[str, object]] = {}
        if "materials" not in self._file:
            return out
        for name, g in self._file["materials"].items():
            m: Dict[str, object] = {k: _plain(v) for k, v in g.attrs.items()}
            for kind, width in (("lorentz", 3), ("drude", 2), ("debye", 2)):
                m[kind] = g[kind][()] if kind in g else np.zeros((0, width))
            out[name] = m
        return out

    def epsilon(self, material: str, frequency) -> np.ndarray:
        """The relative permittivity of ``material`` at ``frequency`` (Hz, scalar or array),
        e^{-iwt} convention, from its stored parameters (design.md's formula)."""
        m = self.materials()[material]
        f = np.asarray(frequency, dtype=float)
        w = 2 * np.pi * f
        eps0 = 8.8541878128e-12
        eps = m["epsilon"] + 1j * m["conductivity"] / (w * eps0)
        for d, f0, g in m["lorentz"]:
            w0, gg = 2 * np.pi * f0, 2 * np.pi * g
            eps = eps + d * w0**2 / (w0**2 - w**2 - 1j * w * gg)
        for fp, g in m["drude"]:
            wp, gg = 2 * np.pi * fp, 2 * np.pi * g
            eps = eps - wp**2 / (w**2 + 1j * w * gg)
        for d, tau in m["debye"]:
            eps = eps + d / (1 - 1j * w * tau)
        return eps

    # -- scans ------------------------------------------------------------------------------
    @property
    def traces(self) -> Optional[int]:
        """Number of traces of a ``[scan]`` run, or None for a single run."""
        return int(self.attrs["traces"]) if "traces" in self.attrs else None

    @property
    def traces_done(self) -> Optional[int]:
        """Leading traces stored (all of them unless the scan was interrupted), or None for a
        single run."""
        return int(self.attrs["traces_done"]) if "traces_done" in self.attrs else None

    def bscan(self, name: str, component: str) -> BScan:
        """Probe ``name``'s ``component`` over the traces of a scan: a :class:`BScan` with
        ``data`` [traces, steps], ``time`` [steps] (s) and ``positions`` [traces, 3] (m) of
        every finished trace."""
        if self.traces is None:
            raise ValueError(f"{self.path} is a single run, not a [scan]: use probe()")
        return read_bscan(self._group("probes", name), component, self.dt, self.traces_done)

    # -- probes ----------------------------------------------------------------------------
    def probe(
        self, name: str, component: str, trace: Optional[int] = None
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Time series of a probe component: ``(time, values)``; in a scan, of trace
        ``trace`` (0-based; required there).

        Times are in seconds with the component's ``time_offset`` applied, so H samples sit
        half a step before E samples.
        """
        if self.traces is not None:
            if trace is None:
                raise ValueError(
                    f"{self.path} is a scan of {self.traces} traces: give trace=k, or read them "
                    "all with bscan()"
                )
            b = self.bscan(name, component)
            if not 0 <= trace < b.traces:
                raise IndexError(f"trace {trace} is not among the {b.traces} finished traces")
            return b.time, b.data[trace]
        if trace is not None:
            raise ValueError(f"{self.path} is a single run: it has no trace {trace}")
        dset = self._dataset("probes", name, component)
        values = dset[()]
        group = self._group("probes", name)
        if "time" in group:
            time = group["time"][()]
        else:
            time = (np.arange(len(values)) + 1) * self.dt
        n = min(len(values), len(time))  # a partial file may have one more row in either
        offset = float(dset.attrs.get("time_offset", 0.0))
        return time[:n] + offset, values[:n]

    def probe_position(self, name: str, component: Optional[str] = None) -> np.ndarray:
        """Requested probe position (metres), or the actual sample position of ``component``."""
        if component is None:
            return np.asarray(self._group("probes", name).attrs["position"], dtype=float)
        return np.asarray(self._dataset("probes", name, component).attrs["position"], dtype=float)

    def spectrum(
        self, name: str, component: str, window: Optional[str] = "hann", pad: int = 4
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Spectrum of a probe component: ``(freqs in Hz, complex amplitude)``.

        The record is multiplied by ``window`` (``hann``, ``hamming``, ``blackman`` or None),
        zero-padded to ``pad`` times its length for a finer frequency grid, and transformed
        with ``rfft``. Amplitudes are scaled by ``dt`` (an approximation of the continuous
        Fourier transform) and referred to t = 0.
        """
        time, values = self.probe(name, component)
        return spectrum(time, values, window=window, pad=pad)

    # -- snapshots --------------------------------------------------------------------------
    def snapshot_count(self, name: str, component: Optional[str] = None) -> int:
        """Number of complete frames of a snapshot monitor (per component, or the minimum)."""
        group = self._group("snapshots", name)
        comps = [component] if component else self.components("snapshots", name)
        lengths = [group[c].shape[0] for c in comps]
        for extra in ("time", "step"):
            if extra in group:
                lengths.append(group[extra].shape[0])
        return int(min(lengths)) if lengths else 0

    def snapshot_coords(self, name: str, component: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Physical sample coordinates ``(x, y, z)`` in metres of a snapshot component, with its
        own Yee staggering and the monitor's stride, on uniform and graded grids.

        Read from ``/snapshots/<name>/coordinates/<component>/x|y|z`` when the file has them;
        else computed from the grid nodes and the dataset's ``index_start`` and ``stride``
        (graded files), or from its ``origin`` and ``spacing`` attributes (uniform files
        written before the coordinate datasets existed).
        """
        dset = self._dataset("snapshots", name, component)
        group = self._group("snapshots", name)
        key = f"coordinates/{component}"
        if key in group and all(axis in group[key] for axis in "xyz"):
            return tuple(np.asarray(group[key][axis][()], dtype=float) for axis in "xyz")
        origin = np.asarray(dset.attrs["origin"], dtype=float)
        spacing = np.asarray(dset.attrs["spacing"], dtype=float)
        if np.all(np.isfinite(spacing)) or "index_start" not in dset.attrs:
            return tuple(origin[a] + spacing[a] * np.arange(dset.shape[a + 1]) for a in range(3))
        start = np.asarray(dset.attrs["index_start"], dtype=int)
        stride = np.asarray(dset.attrs.get("stride", [1, 1, 1]), dtype=int)
        return tuple(
            self._staggered(a, start[a] + stride[a] * np.arange(dset.shape[a + 1]), STAGGER[component][a] > 0)
            for a in range(3)
        )

    def snapshot_times(self, name: str, component: str) -> Tuple[np.ndarray, np.ndarray]:
        """``(time, step)`` arrays of a snapshot component's frames, its time offset applied."""
        group = self._group("snapshots", name)
        dset = self._dataset("snapshots", name, component)
        n = self.snapshot_count(name, component)
        steps = group["step"][:n] if "step" in group else np.arange(n)
        time = group["time"][:n] if "time" in group else steps * self.dt
        return time + float(dset.attrs.get("time_offset", 0.0)), steps

    def snapshot(self, name: str, component: str, index: Optional[int] = None) -> Field:
        """Snapshot data with coordinates.

        ``index=None`` reads every frame (``data`` is ``[n, nx', ny', nz']``); an integer
        (negative counts from the end) reads one frame (``data`` is ``[nx', ny', nz']``).
        """
        dset = self._dataset("snapshots", name, component)
        n = self.snapshot_count(name, component)
        time, steps = self.snapshot_times(name, component)
        if index is None:
            data = dset[:n]
        else:
            i = _frame_index(index, n, name)
            data = dset[i]
            time, steps = float(time[i]), int(steps[i])
        x, y, z = self.snapshot_coords(name, component)
        return Field(
            name=name,
            component=component,
            data=data,
            x=x,
            y=y,
            z=z,
            time=time,
            steps=steps,
            origin=np.asarray(dset.attrs["origin"], dtype=float),
            spacing=np.asarray(dset.attrs["spacing"], dtype=float),
        )

    # -- flux and other frequency-domain monitors ---------------------------------------------
    def flux(self, name: str) -> Dict[str, np.ndarray]:
        """All datasets of flux monitor ``name`` as arrays (``frequency`` in Hz, ``power``, ...)."""
        group = self._group("flux", name)
        return {k: _to_complex(v[()]) for k, v in group.items() if isinstance(v, h5py.Dataset)}

    def resonances(self, name: str, component: str, fmin: float, fmax: float, after: float = 0.0, **options):
        """The resonances of probe ``name``'s ``component`` with frequencies in [``fmin``,
        ``fmax``] Hz, from its samples after time ``after`` (s; start after the source has
        ended): :func:`yee_post.harminv` (filter diagonalization, as Meep's harminv), a
        :class:`yee_post.Resonances` with frequency, decay, Q, amplitude and error per mode.
        ``options`` go to :func:`harminv`."""
        from .harminv import harminv

        t, values = self.probe(name, component)
        return harminv(values[t >= after], self.dt, fmin, fmax, **options)

    def diffraction(self, name: str) -> Dict[str, object]:
        """Diffraction monitor ``name``: ``frequency`` (Hz), ``orders`` [order, 2] (m, n along the
        plane's in-plane ``axes``), ``power``, ``power_s``, ``power_p`` [frequency, order] (each
        order's power over the incident plane wave's, counted along ``direction``, away from the
        source: transmitted ahead of it, reflected behind it), ``angle`` and ``azimuth``
        [frequency, order] (degrees; NaN where the order does not propagate), ``incident``
        [frequency] (the source's power through the cell) and ``flux`` (the plane's total flux
        along +axis); ``axes`` (e.g. ``"yz"``) and ``direction`` (e.g. ``"+x"``)."""
        group = self._group("diffraction", name)
        out: Dict[str, object] = {
            k: v[()] for k, v in group.items() if isinstance(v, h5py.Dataset)
        }
        for key in ("axes", "direction"):
            out[key] = _plain(group.attrs[key])
        return out

    def mode_amplitudes(self, name: str) -> Dict[str, np.ndarray]:
        """Mode monitor ``name``'s decomposition: ``frequency`` (Hz), ``power`` (the plane's
        flux), ``neff`` and ``loss`` (dB/m; files written before it have none) [frequency,
        mode], and the complex amplitudes ``forward`` and
        ``backward`` [frequency, mode], in the square root of the flux unit: ``abs(forward)**2``
        is the power a mode carries along +axis, in the units of ``power``. Ratios of amplitudes
        between monitors are S-parameters, e.g. ``out["forward"][:, 0] / inp["forward"][:, 0]``."""
        group = self._group("modes", name)
        return {
            k: _to_complex(group[k][()])
            for k in ("frequency", "power", "neff", "loss", "forward", "backward")
            if k in group
        }

    def port(self, name: str) -> Dict[str, np.ndarray]:
        """Lumped port ``name``: ``time`` (s), ``voltage`` (V, at ``time``) and ``current`` (A,
        half a step earlier: ``time - dt / 2``) per step, and at its ``frequency`` (Hz) the input
        ``impedance`` (ohm, complex, engineering convention: an inductor is ``+1j w L``),
        ``S11`` by power waves against the port's ``impedance`` attribute, the power waves ``a``
        (into the device) and ``b``, ``incident_power`` abs(a)**2 and ``accepted_power``
        Re(V I*) of the DFTs (the flux monitors' normalisation; their ratio is
        1 - abs(S11)**2)."""
        return self._circuit("ports", name)

    def element(self, name: str) -> Dict[str, np.ndarray]:
        """Lumped element ``name``: ``time``, ``voltage`` (the drop along its axis) and
        ``current`` per step, and, when the scene has a lumped port, at that port's
        ``frequency`` its ``impedance`` V / I and the ``power`` it dissipates."""
        return self._circuit("elements", name)

    def _circuit(self, kind: str, name: str) -> Dict[str, np.ndarray]:
        group = self._group(kind, name)
        return {k: _to_complex(v[()]) for k, v in group.items() if isinstance(v, h5py.Dataset)}

    def cross_sections(self, name: str) -> Dict[str, object]:
        """The cross-section of closed flux box ``name`` in a run with a TF/SF source:
        ``frequency`` (Hz), ``cross_section`` (m^2), ``incident_intensity`` (W/m^2, the DFT
        normalisation of ``power``), ``power`` and ``kind`` (``"scattering"`` for a box around
        the TF/SF box, ``"absorption"`` for one inside its total-field region)."""
        group = self._group("flux", name)
        if "cross_section" not in group:
            raise KeyError(
                f"flux monitor {name!r} has no cross_section: it needs a TF/SF source and a "
                "closed box around the TF/SF box or inside its total-field region"
            )
        out: Dict[str, object] = {
            k: group[k][()] for k in ("frequency", "cross_section", "incident_intensity", "power")
        }
        out["kind"] = _plain(group.attrs["kind"])
        return out

    def flux_field(self, name: str, component: str) -> "FluxField":
        """A flux monitor's DFT field (stored with ``fields = true``) with its axes.

        ``data`` is complex ``[frequency, n1, n2]`` over the plane's two in-plane axes in x, y, z
        order (for a closed flux box, name the face: ``"x_min/Ey"``); ``axes`` names them (e.g. ``("x", "y")`` for a z plane) and ``coords`` holds
        their sample coordinates in metres: the stored ``coordinates/<component>/<axis>`` next to
        the dataset, else (older files) from its Yee-staggered ``origin`` and ``spacing``, or on
        a graded grid from the grid nodes.
        """
        group = self._group("flux", name)
        if component not in group:
            stored = sorted(k for k in group if k not in ("frequency", "power"))
            raise KeyError(
                f"flux monitor {name!r} has no DFT field {component!r}"
                + (f"; stored: {stored}" if stored else "; run it with fields = true")
            )
        dset = group[component]
        # A box's faces are groups of their own (``x_min/Ey``) carrying their axis.
        owner = dset.parent if "/" in component else group
        normal = "xyz".index(_plain(owner.attrs["axis"]))
        axes = tuple(a for a in range(3) if a != normal)
        origin = np.asarray(dset.attrs["origin"], dtype=float)
        spacing = np.asarray(dset.attrs["spacing"], dtype=float)
        data = _to_complex(dset[()])
        own = dset.name.rsplit("/", 1)[-1]
        stored = f"coordinates/{own}"
        if stored in dset.parent and all("xyz"[a] in dset.parent[stored] for a in axes):
            # Written by the run: each field's own in-plane positions.
            coords = tuple(np.asarray(dset.parent[stored]["xyz"[a]][()], dtype=float) for a in axes)
        elif not self.uniform:
            # On a graded grid the samples sit on the grid's own (staggered) positions: find
            # the first one from the dataset's origin and take consecutive samples from it.
            coords = tuple(self._graded_samples(a, origin[a], data.shape[1 + i]) for i, a in enumerate(axes))
        else:
            coords = tuple(origin[a] + spacing[a] * np.arange(data.shape[1 + i]) for i, a in enumerate(axes))
        position = float(origin[normal])
        if not self.uniform and "index" in owner.attrs:
            position = float(self.nodes[normal][int(owner.attrs["index"])])
        return FluxField(
            name=name,
            component=component,
            data=data,
            frequency=np.asarray(group["frequency"][()], dtype=float),
            axes=tuple("xyz"[a] for a in axes),
            coords=coords,
            position=position,
        )

    def _graded_samples(self, a: int, first: float, count: int) -> np.ndarray:
        """``count`` consecutive sample coordinates along axis ``a`` starting at the grid
        position nearest ``first``: nodes, or cell centres when the sample at ``first`` lies
        half-way between nodes (whichever of the two sits closer to it)."""
        n = self.nodes[a]
        centres = 0.5 * (n[:-1] + n[1:])
        i_node = int(np.argmin(np.abs(n - first)))
        i_centre = int(np.argmin(np.abs(centres - first)))
        if abs(centres[i_centre] - first) < abs(n[i_node] - first):
            return centres[i_centre : i_centre + count]
        return n[i_node : i_node + count]

    def far_field(self, name: str) -> FarField:
        """Far-field monitor ``name``: its angles and pattern (see :class:`FarField`)."""
        group = self._group("far_field", name)
        read = lambda key: _to_complex(group[key][()])  # noqa: E731
        return FarField(
            name=name,
            frequency=np.asarray(read("frequency"), dtype=float),
            theta=np.asarray(read("theta"), dtype=float),
            phi=np.asarray(read("phi"), dtype=float),
            e_theta=read("E_theta"),
            e_phi=read("E_phi"),
            intensity=np.asarray(read("intensity"), dtype=float),
            power=np.asarray(read("power"), dtype=float),
            **{
                key: np.asarray(read(key), dtype=float)
                for key in (
                    "gain",
                    "realized_gain",
                    "radiation_efficiency",
                    "accepted_power",
                    "incident_power",
                )
                if key in group
            },
        )

    def monitor_data(self, kind: str, name: str) -> Dict[str, np.ndarray]:
        """All datasets of any monitor group (e.g. DFT fields) as arrays, complex where stored
        as ``r``/``i`` compounds."""
        group = self._group(kind, name)
        return {k: _to_complex(v[()]) for k, v in group.items() if isinstance(v, h5py.Dataset)}


def _frame_index(index: int, n: int, name: str) -> int:
    i = index + n if index < 0 else index
    if not 0 <= i < n:
        raise IndexError(f"snapshot {name!r} has {n} frames; index {index} is out of range")
    return i


def spectrum(
    time: np.ndarray, values: np.ndarray, window: Optional[str] = "hann", pad: int = 4
) -> Tuple[np.ndarray, np.ndarray]:
    """Windowed, zero-padded ``rfft`` of a uniformly sampled record: ``(freqs Hz, spectrum)``.

    See :meth:`Result.spectrum`.
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n < 2:
        raise ValueError("need at least two samples for a spectrum")
    dt = float(time[1] - time[0])
    if window is None or window in ("none", "rect", "boxcar"):
        w = np.ones(n)
    else:
        try:
            w = _WINDOWS[window](n)
        except KeyError:
            raise ValueError(f"unknown window {window!r}; use one of {sorted(_WINDOWS)} or None") from None
    nfft = max(int(pad), 1) * n
    freqs = np.fft.rfftfreq(nfft, dt)
    spec = np.fft.rfft(values * w, nfft) * dt
    # rfft assumes the record starts at t = 0; shift the phase so it refers to absolute time.
    spec *= np.exp(-2j * np.pi * freqs * float(time[0]))
    return freqs, spec
