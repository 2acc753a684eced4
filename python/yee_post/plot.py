"""Plots and animations of ``yee`` results (matplotlib)."""

from __future__ import annotations

import contextlib
import os
from typing import Iterable, Optional, Sequence, Union

import numpy as np

from . import scan as _scan
from .result import Result, _frame_index

_LENGTH_UNITS = {"m": 1.0, "mm": 1e3, "um": 1e6, "nm": 1e9}
_LENGTH_LABELS = {"m": "m", "mm": "mm", "um": "µm", "nm": "nm"}
_AXIS_NAMES = ("x", "y", "z")
# Diverging map: fields are signed and the colour scale is symmetric about zero.
_CMAP = "RdBu_r"

ResultLike = Union[Result, str, os.PathLike]


@contextlib.contextmanager
def _opened(result: ResultLike):
    """Yield a Result, opening (and closing) it when given a path."""
    if isinstance(result, Result):
        yield result
    else:
        with Result(result) as r:
            yield r


def _length_scale(unit: Optional[str], result: Result):
    unit = unit or result.length_unit
    if unit not in _LENGTH_UNITS:
        raise ValueError(f"unknown length unit {unit!r}; use one of {list(_LENGTH_UNITS)}")
    return _LENGTH_UNITS[unit], _LENGTH_LABELS[unit]


def _si_prefix(value: float, unit: str):
    """Scale and label putting ``value`` in a readable SI range (time in fs, frequency in THz...)."""
    prefixes = [(1e-18, "a"), (1e-15, "f"), (1e-12, "p"), (1e-9, "n"), (1e-6, "µ"), (1e-3, "m"),
                (1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P")]
    value = abs(value)
    scale, prefix = prefixes[0]
    for s, p in prefixes:
        if value >= s:
            scale, prefix = s, p
    return 1.0 / scale, prefix + unit


def _format_time(t: float) -> str:
    scale, label = _si_prefix(t if t != 0 else 1e-15, "s")
    return f"{t * scale:.5g} {label}"


def _axis_number(axis) -> int:
    if isinstance(axis, str):
        if axis.lower() not in _AXIS_NAMES:
            raise ValueError(f"axis must be x, y, z or 0, 1, 2, not {axis!r}")
        return _AXIS_NAMES.index(axis.lower())
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be x, y, z or 0, 1, 2, not {axis!r}")
    return int(axis)


class _Plane:
    """Which 2-D cut of a snapshot dataset to show, and how to read it frame by frame."""

    def __init__(self, result: Result, name: str, component: str, axis=None, position=None,
                 scale: float = 1.0):
        self.dset = result._dataset("snapshots", name, component)
        self.coords = result.snapshot_coords(name, component)
        counts = self.dset.shape[1:]
        thick = [a for a in range(3) if counts[a] > 1]
        if len(thick) == 3:
            # Default: the thinnest axis; on a tie prefer z, then y (the usual xy view).
            cut = _axis_number(axis) if axis is not None else min(range(3), key=lambda a: (counts[a], -a))
        elif len(thick) == 2:
            cut = next(a for a in range(3) if a not in thick)
            if axis is not None and _axis_number(axis) != cut:
                raise ValueError(
                    f"snapshot {name!r} is a plane normal to {_AXIS_NAMES[cut]}; "
                    f"cutting it along {_AXIS_NAMES[_axis_number(axis)]} would leave a line"
                )
        else:
            raise ValueError(f"snapshot {name!r} of shape {counts} has no 2-D plane to show")
        self.cut = cut
        self.axes = [a for a in range(3) if a != cut]
        if position is not None:
            # position is given in the plot's length unit, like the axis labels.
            self.cut_index = int(np.argmin(np.abs(self.coords[cut] * scale - position)))
        else:
            self.cut_index = counts[cut] // 2
        self.cut_coord = float(self.coords[cut][self.cut_index])

    def read(self, frame: int) -> np.ndarray:
        """Frame ``frame`` as a 2-D array indexed [horizontal, vertical]."""
        sel = [frame, slice(None), slice(None), slice(None)]
        sel[1 + self.cut] = self.cut_index
        return np.asarray(self.dset[tuple(sel)], dtype=float)

    def extent(self, scale: float):
        """imshow extent: sample centres at the physical coordinates, each pixel one sample wide."""
        ext = []
        for a in self.axes:
            c = self.coords[a] * scale
            half = 0.5 * (c[1] - c[0]) if len(c) > 1 else 0.5
            ext += [c[0] - half, c[-1] + half]
        return ext


    def uniform(self) -> bool:
        """Whether the samples are evenly spaced along both shown axes (an image shows them
        exactly); a graded grid's are not."""
        for a in self.axes:
            d = np.diff(self.coords[a])
            if len(d) and not np.allclose(d, d[0], rtol=1e-9, atol=0):
                return False
        return True

    def edges(self, scale: float):
        """Cell edges of each shown axis for ``pcolormesh``: half-way between neighbouring
        samples, and half a spacing beyond the first and last."""
        out = []
        for a in self.axes:
            c = self.coords[a] * scale
            if len(c) == 1:
                out.append(np.array([c[0] - 0.5, c[0] + 0.5]))
                continue
            mid = 0.5 * (c[1:] + c[:-1])
            out.append(np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]]))
        return out


class _Mesh:
    """A ``pcolormesh`` for samples on a graded grid, with the ``set_data`` of an image so that
    animations update either the same way."""

    def __init__(self, mesh):
        self.mesh = mesh

    def set_data(self, data_t: np.ndarray) -> None:
        self.mesh.set_array(np.asarray(data_t).ravel())


def _draw_plane(ax, plane: _Plane, data: np.ndarray, vmax: float, scale: float, label: str):
    """Draw one frame: an image on evenly spaced samples, else a mesh over each sample's cell.
    Returns what the colour bar and the animation update (``set_data(data.T)``)."""
    h, v = (_AXIS_NAMES[a] for a in plane.axes)
    if not plane.uniform():
        eh, ev = plane.edges(scale)
        mesh = ax.pcolormesh(eh, ev, data.T, cmap=_CMAP, vmin=-vmax, vmax=vmax, shading="flat")
        ax.set_aspect("equal")
        ax.set_xlabel(f"{h} ({label})")
        ax.set_ylabel(f"{v} ({label})")
        return mesh
    im = ax.imshow(
        data.T,  # imshow wants [row = vertical, column = horizontal]
        origin="lower",
        extent=plane.extent(scale),
        cmap=_CMAP,
        vmin=-vmax,
        vmax=vmax,
        interpolation="nearest",
        aspect="equal",
    )
    ax.set_xlabel(f"{h} ({label})")
    ax.set_ylabel(f"{v} ({label})")
    return im


def _title(name, component, plane: _Plane, t: float, step: int, scale: float, label: str) -> str:
    cut = f"{_AXIS_NAMES[plane.cut]} = {plane.cut_coord * scale:.4g} {label}"
    return f"{name}: {component} at {cut}, t = {_format_time(t)} (step {step})"


def _symmetric_limit(values: Iterable[np.ndarray]) -> float:
    vmax = max((float(np.nanmax(np.abs(v))) if v.size else 0.0) for v in values)
    # An all-zero field (before the source turns on) still needs a valid colour range.
    return vmax if vmax > 0 and np.isfinite(vmax) else 1.0


def plot_slice(result: ResultLike, name: str, component: str, index: int = -1, ax=None,
               unit: Optional[str] = "um", axis=None, position: Optional[float] = None,
               vmax: Optional[float] = None):
    """Image of one snapshot frame on physical axes, with a colour scale symmetric about zero.

    A plane snapshot shows its two non-singleton axes. A box snapshot is cut along ``axis``
    (``"x"``, ``"y"``, ``"z"`` or 0-2; default: the thinnest axis) at ``position`` (in
    ``unit``; default: the middle sample). ``unit`` is the length unit of the axes (``m``,
    ``mm``, ``um``, ``nm``; None: the scene's unit). The colour scale runs from ``-vmax`` to
    ``vmax`` (default: the largest magnitude in the frame). Returns the Axes.
    """
    import matplotlib.pyplot as plt

    with _opened(result) as r:
        scale, label = _length_scale(unit, r)
        plane = _Plane(r, name, component, axis=axis, position=position, scale=scale)
        n = r.snapshot_count(name, component)
        frame = _frame_index(index, n, name)
        data = plane.read(frame)
        times, steps = r.snapshot_times(name, component)
        if ax is None:
            _, ax = plt.subplots()
        limit = float(vmax) if vmax else _symmetric_limit([data])
        im = _draw_plane(ax, plane, data, limit, scale, label)
        ax.figure.colorbar(im, ax=ax, label=component)
        title = _title(name, component, plane, float(times[frame]), int(steps[frame]), scale, label)
        ax.set_title(title, fontsize="medium")
    return ax


def animate(result: ResultLike, name: str, component: str, path: Union[str, os.PathLike],
            fps: int = 10, unit: Optional[str] = "um", axis=None, position: Optional[float] = None,
            figsize: Sequence[float] = (5.0, 4.0), dpi: int = 100,
            vmax: Optional[float] = None) -> str:
    """Write a GIF with one frame per stored snapshot frame, using one colour scale symmetric
    about zero throughout (``-vmax`` to ``vmax``; default: the largest magnitude over all
    frames). Slicing arguments as in :func:`plot_slice`. Returns the path written."""
    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.figure import Figure

    path = os.fspath(path)
    with _opened(result) as r:
        scale, label = _length_scale(unit, r)
        plane = _Plane(r, name, component, axis=axis, position=position, scale=scale)
        n = r.snapshot_count(name, component)
        if n == 0:
            raise ValueError(f"snapshot {name!r} has no frames")
        frames = [plane.read(i) for i in range(n)]  # 2-D cuts only, so small
        times, steps = r.snapshot_times(name, component)

    vmax = float(vmax) if vmax else _symmetric_limit(frames)
    # A bare Figure (no pyplot) so animating works under any backend and leaks no windows.
    fig = Figure(figsize=tuple(figsize), dpi=dpi)
    ax = fig.add_subplot()
    im = _draw_plane(ax, plane, frames[0], vmax, scale, label)
    fig.colorbar(im, ax=ax, label=component)
    title = ax.set_title(_title(name, component, plane, float(times[0]), int(steps[0]), scale, label),
                         fontsize="medium")
    fig.tight_layout()  # keep the axis labels inside the small frame

    image = im if hasattr(im, "set_data") else _Mesh(im)

    def update(i):
        image.set_data(frames[i].T)
        # The step in the title also keeps Pillow from merging identical (e.g. all-zero) frames,
        # which would make the GIF shorter than the snapshot.
        title.set_text(_title(name, component, plane, float(times[i]), int(steps[i]), scale, label))
        return im, title

    anim = FuncAnimation(fig, update, frames=n, blit=False)
    anim.save(path, writer=PillowWriter(fps=fps), dpi=dpi)
    return path


def plot_spectrum(result: ResultLike, name: str, component: str, ax=None,
                  fmin: Optional[float] = None, fmax: Optional[float] = None,
                  mark: Optional[Iterable[float]] = None, window: Optional[str] = "hann",
                  pad: int = 4):
    """Magnitude spectrum of a probe component between ``fmin`` and ``fmax`` (Hz), with dashed
    vertical lines at the frequencies in ``mark`` (Hz). Without ``fmax`` the plot stops a
    little above the highest frequency holding at least 0.1% of the peak (or the highest mark).
    Returns the Axes."""
    import matplotlib.pyplot as plt

    with _opened(result) as r:
        freqs, spec = r.spectrum(name, component, window=window, pad=pad)
    mag = np.abs(spec)
    marks = [float(m) for m in (mark if mark is not None else [])]
    if fmax is None:
        # FDTD's Nyquist frequency is far above any physics of interest: zoom on the content.
        significant = freqs[mag >= 1e-3 * mag.max()] if mag.max() > 0 else freqs[-1:]
        fmax = 1.1 * max([float(significant.max())] + marks)
        fmax = min(fmax, float(freqs[-1]))
    fmin = 0.0 if fmin is None else fmin
    keep = (freqs >= fmin) & (freqs <= fmax)
    scale, label = _si_prefix(fmax, "Hz")
    if ax is None:
        _, ax = plt.subplots()
    ax.plot(freqs[keep] * scale, mag[keep], lw=1.2)
    for m in marks:
        if fmin <= m <= fmax:
            ax.axvline(m * scale, color="k", ls="--", lw=0.8)
    ax.set_xlim(fmin * scale, fmax * scale)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"frequency ({label})")
    ax.set_ylabel(f"|{component}(f)|")
    ax.set_title(f"{name}: spectrum of {component}", fontsize="medium")
    return ax


def plot_flux(result: ResultLike, names: Union[str, Sequence[str]], ax=None,
              reference: Optional[str] = None, reference_result: Optional[ResultLike] = None):
    """Flux spectra of one or more flux monitors against frequency.

    With ``reference`` (a flux monitor name, read from ``reference_result`` when given, e.g. a
    vacuum run, else from ``result``), each spectrum is divided by the reference spectrum, which
    turns a transmitted flux into a transmission. Returns the Axes.
    """
    import matplotlib.pyplot as plt

    names = [names] if isinstance(names, str) else list(names)
    with _opened(result) as r:
        spectra = {n: r.flux(n) for n in names}
    ref = None
    if reference is not None:
        with _opened(reference_result if reference_result is not None else result) as r:
            ref = r.flux(reference)["power"]
    if ax is None:
        _, ax = plt.subplots()
    fmax = max(float(s["frequency"].max()) for s in spectra.values())
    scale, label = _si_prefix(fmax, "Hz")
    for n, s in spectra.items():
        power = s["power"] / ref if ref is not None else s["power"]
        ax.plot(s["frequency"] * scale, power, lw=1.2, marker=".", label=n)
    ax.set_xlabel(f"frequency ({label})")
    ax.set_ylabel(f"flux / {reference}" if reference else "flux (Re sum E x H*  dA)")
    if len(names) > 1:
        ax.legend()
    ax.set_title("flux spectra" if reference is None else f"flux relative to {reference}", fontsize="medium")
    return ax


def plot_diffraction(result: ResultLike, names: Union[str, Sequence[str]], ax=None,
                     against: str = "wavelength", unit: str = "um", total: bool = True):
    """Diffraction efficiencies of one or more diffraction monitors (e.g. the reflected and the
    transmitted side) against ``against``: ``"wavelength"`` (in ``unit``), ``"frequency"`` or
    ``"angle"`` (each order against its own angle, degrees). One line per order that carries
    power, labelled by monitor and order; with ``total``, their sum (1 for a lossless
    structure). Returns the Axes."""
    import matplotlib.pyplot as plt

    names = [names] if isinstance(names, str) else list(names)
    with _opened(result) as r:
        data = {n: r.diffraction(n) for n in names}
    if ax is None:
        _, ax = plt.subplots()
    first = next(iter(data.values()))
    f = np.asarray(first["frequency"])
    if against == "wavelength":
        scale = {"m": 1.0, "mm": 1e3, "um": 1e6, "nm": 1e9}[unit]
        x_all, xlabel = 299_792_458.0 / f * scale, f"wavelength ({unit})"
    elif against == "frequency":
        scale, label = _si_prefix(float(f.max()), "Hz")
        x_all, xlabel = f * scale, f"frequency ({label})"
    elif against == "angle":
        x_all, xlabel = None, "angle from the normal (degrees)"
    else:
        raise ValueError(f"against is 'wavelength', 'frequency' or 'angle', not {against!r}")
    summed = np.zeros_like(f)
    for n, d in data.items():
        power = np.asarray(d["power"])
        for k, order in enumerate(np.asarray(d["orders"])):
            eta = power[:, k]
            if np.nanmax(np.abs(eta)) < 1e-4:
                continue
            summed += np.nan_to_num(eta)
            x = np.asarray(d["angle"])[:, k] if x_all is None else x_all
            ax.plot(x, eta, marker=".", lw=1.2, label=f"{n} ({order[0]:+d}, {order[1]:+d})")
    if total and x_all is not None:
        ax.plot(x_all, summed, "k--", lw=1, label="sum")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("efficiency (power / incident)")
    ax.legend(fontsize="small")
    ax.set_title("diffraction orders", fontsize="medium")
    return ax


def plot_bands(bands, ax=None, period: Optional[float] = None, labels: Optional[Sequence[str]] = None):
    """A band diagram (a ``yee.bands.Bands``, or the path of the file its ``save`` wrote):
    each resonance against the distance along the wavevector path. With ``period`` (m), the
    frequency in units of c / period (the normalised frequency of photonic crystals), else in
    Hz. ``labels`` names the path's corners (e.g. ``["G", "X", "M", "G"]``), placed where the
    path turns. Returns the Axes."""
    import matplotlib.pyplot as plt

    if isinstance(bands, (str, os.PathLike)):
        import h5py

        with h5py.File(bands, "r") as f:
            g = f["bands"]
            phase, freq, dist = g["phase"][()], g["frequency"][()], g["distance"][()]
    else:
        phase, freq, dist = bands.phase, bands.frequency, bands.distance
    if ax is None:
        _, ax = plt.subplots()
    if period is not None:
        y, ylabel = freq * period / 299_792_458.0, "frequency (c / a)"
    else:
        scale, unit = _si_prefix(float(np.nanmax(freq)), "Hz")
        y, ylabel = freq * scale, f"frequency ({unit})"
    for n in range(y.shape[1]):
        ax.plot(dist, y[:, n], "o", ms=3, color="C0")
    if labels:
        d = np.diff(phase, axis=0)
        turns = [0] + [i + 1 for i in range(len(d) - 1) if not np.allclose(d[i], d[i + 1])] + [len(dist) - 1]
        ticks = [dist[i] for i in turns][: len(labels)]
        ax.set_xticks(ticks, labels[: len(ticks)])
        for t in ticks:
            ax.axvline(t, color="0.8", lw=0.8)
    ax.set_xlabel("wavevector")
    ax.set_ylabel(ylabel)
    ax.set_title("band diagram", fontsize="medium")
    return ax


def plot_pattern(result: ResultLike, name: str, frequency: Optional[float] = None,
                 phi: float = 0.0, db: bool = False, fig=None):
    """A far-field monitor's radiation pattern at one frequency (the stored one nearest
    ``frequency`` in Hz; the middle one by default): a polar cut of the directivity in the plane
    of azimuth ``phi`` (degrees; the half-plane at ``phi + 180`` drawn on the other side), and a
    u-v map of the upper (theta <= 90) and lower hemispheres, u = sin(theta) cos(phi),
    v = sin(theta) sin(phi). With ``db``, directivity in dBi (floored 40 dB below the peak).
    Returns the Figure (its axes: the polar cut, then the two maps)."""
    import matplotlib.pyplot as plt
    from matplotlib.tri import Triangulation

    with _opened(result) as r:
        ff = r.far_field(name)
    k = ff.frequency_index(frequency)
    d = ff.directivity()[k]
    if db:
        d = 10 * np.log10(np.maximum(d, d.max() * 1e-4))
    if fig is None:
        fig = plt.figure(figsize=(11, 3.8))
    polar = fig.add_subplot(1, 3, 1, projection="polar")
    polar.set_theta_zero_location("N")
    polar.set_theta_direction(-1)
    th = np.radians(ff.theta)
    wrap = (ff.phi - phi) % 360.0

    def cut(target):
        i = int(np.argmin(np.minimum(np.abs(wrap - target), 360.0 - np.abs(wrap - target))))
        return i, ff.phi[i]

    i0, p0 = cut(0.0)
    polar.plot(th, d[:, i0], lw=1.4, label=f"phi = {p0:g}°")
    if ff.theta.max() - ff.theta.min() > 0:
        i1, p1 = cut(180.0)
        polar.plot(-th, d[:, i1], lw=1.4, ls="--", label=f"phi = {p1:g}°")
    polar.set_title(f"{name}: {'dBi' if db else 'directivity'} at "
                    f"{ff.frequency[k] * _si_prefix(ff.frequency[k], 'Hz')[0]:.4g} "
                    f"{_si_prefix(ff.frequency[k], 'Hz')[1]}", fontsize="medium")
    polar.legend(fontsize="small", loc="lower left")
    tt, pp = np.meshgrid(np.radians(ff.theta), np.radians(ff.phi), indexing="ij")
    for j, (label, keep) in enumerate([("theta <= 90°", tt <= np.pi / 2 + 1e-9),
                                        ("theta >= 90°", tt >= np.pi / 2 - 1e-9)]):
        ax = fig.add_subplot(1, 3, 2 + j)
        u = (np.sin(tt) * np.cos(pp))[keep]
        v = (np.sin(tt) * np.sin(pp))[keep]
        values = d[keep]
        if len(values) >= 3 and np.ptp(u) > 0 and np.ptp(v) > 0:
            # Points repeated at the poles and phi = 0 / 360 are harmless to the triangulation
            # once duplicates are dropped.
            _, unique = np.unique(np.round(np.stack([u, v]), 12), axis=1, return_index=True)
            tri = Triangulation(u[unique], v[unique])
            mesh = ax.tripcolor(tri, values[unique], shading="gouraud", cmap="viridis")
            fig.colorbar(mesh, ax=ax, shrink=0.8, label="dBi" if db else "directivity")
        ax.set_aspect("equal")
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-1.05, 1.05)
        ax.set_xlabel("u = sin θ cos φ")
        ax.set_ylabel("v = sin θ sin φ")
        ax.set_title(label, fontsize="medium")
    fig.tight_layout()
    return fig


def plot_ascan(result: ResultLike, name: str, component: str, trace: Optional[int] = None,
               ax=None, time_zero: Optional[Union[float, str]] = None):
    """One trace (A-scan) of a probe component against time: the probe's series in a single
    run, trace ``trace`` of a scan. ``time_zero`` (s, or ``"auto"`` for the first break of the
    scan's mean trace) shifts the time axis as :func:`plot_bscan` does. Returns the Axes."""
    import matplotlib.pyplot as plt

    with _opened(result) as r:
        is_scan = r.traces is not None
        if not is_scan:
            time, values = r.probe(name, component)
            b = _scan.BScan(name, component, np.asarray(values, float)[None, :],
                            np.asarray(time, float), np.zeros((1, 3)))
            trace = 0
        else:
            if trace is None:
                raise ValueError(f"{r.path} is a scan: give trace=k (0 to {r.traces_done - 1})")
            b = r.bscan(name, component)
    if time_zero is not None:
        b = _scan.time_zero(b, time_zero)
    scale, label = _si_prefix(float(np.abs(b.time).max()) or 1e-9, "s")
    if ax is None:
        _, ax = plt.subplots()
    ax.plot(b.time * scale, b.data[trace], lw=1.0)
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlim(b.time[0] * scale, b.time[-1] * scale)
    ax.set_xlabel(f"time ({label})")
    ax.set_ylabel(component)
    title = f"{name}: {component}"
    if is_scan:
        title += f", trace {trace}"
    ax.set_title(title, fontsize="medium")
    return ax


def plot_bscan(result: ResultLike, name: str, component: str, ax=None,
               time_zero: Optional[Union[float, str]] = None, background: bool = False,
               gain: Optional[str] = None, gain_factor: float = 1.0, unit: Optional[str] = None,
               cmap: str = "seismic", clip: float = 1.0):
    """A radargram of a scan: time down the vertical axis, the traces' position along the
    scan across, the amplitude in a symmetric diverging colour scale (as gprMax's plotting
    tool draws a B-scan).

    Processing before display, in this order: ``time_zero`` (s, or ``"auto"``: the first
    break of the mean trace) drops the samples before it and reads it as t = 0;
    ``background=True`` subtracts the mean trace; ``gain`` (``"power"``: (t / t_end) **
    gain_factor, ``"exp"``: exp(gain_factor t)) brings up late echoes. ``clip`` (0 to 1] sets
    the colour limit to that fraction of the largest amplitude. Returns the Axes; its image is
    ``ax.images[0]`` with the data [time, trace]."""
    import matplotlib.pyplot as plt

    if not 0 < clip <= 1:
        raise ValueError(f"clip must be in (0, 1], not {clip}")
    with _opened(result) as r:
        b = r.bscan(name, component)
        length, length_label = _length_scale(unit, r)
    if time_zero is not None:
        b = _scan.time_zero(b, time_zero)
    if background:
        b = _scan.remove_background(b)
    if gain is not None:
        b = _scan.apply_gain(b, gain, gain_factor)
    x = b.distance * length
    t_scale, t_label = _si_prefix(float(np.abs(b.time).max()) or 1e-9, "s")
    t = b.time * t_scale
    # Pixel edges half a sample beyond the first and last trace and time.
    dx = (x[-1] - x[0]) / max(len(x) - 1, 1) if len(x) > 1 else 1.0
    dt = (t[-1] - t[0]) / max(len(t) - 1, 1) if len(t) > 1 else 1.0
    vmax = clip * float(np.abs(b.data).max()) or 1.0
    if ax is None:
        _, ax = plt.subplots()
    im = ax.imshow(b.data.T, aspect="auto", cmap=cmap, vmin=-vmax, vmax=vmax,
                   extent=(x[0] - dx / 2, x[-1] + dx / 2, t[-1] + dt / 2, t[0] - dt / 2),
                   interpolation="nearest")
    axis = b.scan_axis
    ax.set_xlabel(f"{'xyz'[axis] if axis is not None else 'distance'} ({length_label})")
    ax.set_ylabel(f"time ({t_label})")
    ax.set_title(f"{name}: {component}, {b.traces} traces", fontsize="medium")
    ax.figure.colorbar(im, ax=ax, label=component)
    return ax


def plot_port(result, name: str, axes=None):
    """Lumped port ``name`` of ``result`` (a :class:`~yee_post.Result`) in three panels: abs(S11)
    in dB, S11 on a Smith chart (circles of constant normalised resistance 0, 0.5, 1, 2 and
    reactance arcs +-0.5, 1, 2) and the input impedance's real and imaginary parts (ohm), all
    against frequency (GHz). Returns the three axes."""
    import matplotlib.pyplot as plt

    port = result.port(name)
    f = port["frequency"] / 1e9
    s11 = port["S11"]
    z = port["impedance"]
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(13, 4))
    ax_db, ax_smith, ax_z = axes
    ax_db.plot(f, 20 * np.log10(np.maximum(np.abs(s11), 1e-30)))
    ax_db.set_xlabel("frequency (GHz)")
    ax_db.set_ylabel("|S11| (dB)")
    t = np.linspace(0, 2 * np.pi, 361)
    for r in (0.0, 0.5, 1.0, 2.0):
        c, rad = r / (1 + r), 1 / (1 + r)
        ax_smith.plot(c + rad * np.cos(t), rad * np.sin(t), color="0.8", lw=0.7)
    for x in (0.5, 1.0, 2.0):
        for sign in (1, -1):
            arc = 1 + 1j * sign / x + (1 / x) * np.exp(1j * t)
            arc = arc[np.abs(arc) <= 1.0]
            ax_smith.plot(arc.real, arc.imag, ".", color="0.8", ms=0.8)
    ax_smith.plot(s11.real, s11.imag)
    ax_smith.set_aspect("equal")
    ax_smith.set_xlim(-1.05, 1.05)
    ax_smith.set_ylim(-1.05, 1.05)
    ax_smith.set_title("S11")
    ax_z.plot(f, z.real, label="Re Z")
    ax_z.plot(f, z.imag, label="Im Z")
    ax_z.set_xlabel("frequency (GHz)")
    ax_z.set_ylabel("input impedance (ohm)")
    ax_z.legend(fontsize="small")
    return axes
