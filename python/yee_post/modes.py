"""Waveguide modes written by ``yee modes SCENE [--plane ...] -o OUT.h5``, and the S-matrix of
an ``[sparameters]`` sweep (:func:`read_sparameters`, :func:`plot_sparameters`,
:meth:`SParameters.to_skrf`).

:func:`read_modes` returns a :class:`Modes` with each mode's effective and group index and its
transverse E profiles on the plane's Yee positions; :func:`plot_mode` draws one profile::

    from yee_post import read_modes, plot_mode
    m = read_modes("modes.h5")
    print(m.neff, m.group_index)
    plot_mode(m, 0).figure.savefig("te0.png")
"""

from dataclasses import dataclass
from typing import Dict, Optional

import h5py
import numpy as np


@dataclass
class Modes:
    """The modes of one plane at one frequency (all lengths in metres)."""

    #: The plane's normal: "x", "y" or "z".
    axis: str
    #: Its position along the normal.
    coordinate: float
    #: The frequency (Hz).
    frequency: float
    #: Effective indices, highest first (as the 3-D grid propagates each mode).
    neff: np.ndarray
    #: Group indices c / v_g.
    group_index: np.ndarray
    #: Per in-plane component name ("Ey", ...): [mode, n_u, n_v], largest value 1.
    profiles: Dict[str, np.ndarray]
    #: Node coordinates of the plane's two axes, keyed by axis name.
    nodes: Dict[str, np.ndarray]
    #: Effective areas (m^2), (sum |E|^2 dA)^2 / sum |E|^4 dA; None in files written before it.
    effective_area: Optional[np.ndarray] = None
    #: Wave impedances (ohm), sum |E_t|^2 dA / sum (E_t x H_t) . n dA: a TE mode's E_t / H_t
    #: (eta0 / n_eff in a hollow metal guide); None in files written before it.
    wave_impedance: Optional[np.ndarray] = None
    #: Power loss along the normal (dB/m), 0 for a lossless plane; None in files written
    #: before it.
    loss: Optional[np.ndarray] = None

    def axes(self):
        """The plane's two axes (u, v) in the order the profiles' last two dimensions use."""
        normal = "xyz".index(self.axis)
        return ("xyz"[(normal + 1) % 3], "xyz"[(normal + 2) % 3])

    def positions(self, component: str):
        """The (u, v) coordinates of ``component``'s Yee positions: E_u at cell centres along
        u and nodes along v, E_v the other way round."""
        u, v = self.axes()
        nu, nv = self.nodes[u], self.nodes[v]
        centre = lambda n: 0.5 * (n[:-1] + n[1:])
        if component == f"E{u}":
            return centre(nu), nv[:-1]
        return nu[:-1], centre(nv)


def read_modes(path, name: str = "plane") -> Modes:
    """The modes stored under ``/modes/<name>/`` of ``path``."""
    with h5py.File(path, "r") as f:
        g = f[f"modes/{name}"]
        axis = g.attrs["axis"]
        axis = axis.decode() if isinstance(axis, bytes) else str(axis)
        return Modes(
            axis=axis,
            coordinate=float(g.attrs["coordinate"]),
            frequency=float(g["frequency"][0]),
            neff=g["neff"][0, :],
            group_index=g["group_index"][0, :],
            effective_area=g["effective_area"][0, :] if "effective_area" in g else None,
            wave_impedance=g["wave_impedance"][0, :] if "wave_impedance" in g else None,
            loss=g["loss"][0, :] if "loss" in g else None,
            profiles={k: g["profile"][k][()] for k in g["profile"]},
            nodes={k: g["grid"][k][()] for k in g["grid"]},
        )


def plot_mode(modes: Modes, index: int = 0, component: Optional[str] = None, ax=None, unit="um"):
    """Draw mode ``index``'s ``component`` (default: its larger transverse E) on the plane,
    lengths in ``unit``; returns the axes."""
    import matplotlib.pyplot as plt

    scale = {"m": 1.0, "mm": 1e3, "um": 1e6, "nm": 1e9}[unit]
    if component is None:
        component = max(modes.profiles, key=lambda c: np.abs(modes.profiles[c][index]).max())
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4))
    cu, cv = modes.positions(component)
    data = modes.profiles[component][index]
    vmax = np.abs(data).max() or 1.0
    mesh = ax.pcolormesh(cu * scale, cv * scale, data.T, cmap="RdBu_r", vmin=-vmax, vmax=vmax, shading="nearest")
    ax.figure.colorbar(mesh, ax=ax, label=component)
    u, v = modes.axes()
    ax.set_xlabel(f"{u} ({unit})")
    ax.set_ylabel(f"{v} ({unit})")
    ax.set_aspect("equal")
    title = f"mode {index}: n_eff {modes.neff[index]:.4f}, n_g {modes.group_index[index]:.3f}"
    if modes.loss is not None and modes.loss[index] != 0.0:
        title += f", loss {modes.loss[index] * 0.01:.3g} dB/cm"
    ax.set_title(title)
    return ax


@dataclass
class SParameters:
    """The S-matrix of an ``[sparameters]`` sweep (``/sparameters/`` of its result file)."""

    #: Frequencies (Hz).
    frequency: np.ndarray
    #: Complex [frequency, out port, in port]: S[f, j, k] = b_j / a_k.
    S: np.ndarray
    #: Port names, in the matrix's order.
    ports: list
    #: The Touchstone reference impedance (ohm).
    reference_impedance: float

    def s(self, out_port: str, in_port: str) -> np.ndarray:
        """S[out, in] over frequency, by port names (``s("out", "in")`` is S21)."""
        return self.S[:, self.ports.index(out_port), self.ports.index(in_port)]

    def to_skrf(self):
        """A ``skrf.Network`` of the matrix (needs scikit-rf)."""
        import skrf  # optional: only this method needs it

        f = skrf.Frequency.from_f(self.frequency, unit="hz")
        return skrf.Network(frequency=f, s=self.S, z0=self.reference_impedance, name="yee")


def read_sparameters(path) -> SParameters:
    """The S-matrix in the result file of an ``[sparameters]`` sweep."""
    with h5py.File(path, "r") as f:
        g = f["sparameters"]
        s = g["S"][()]
        if not np.iscomplexobj(s):
            s = s["r"] + 1j * s["i"]
        ports = [p.decode() if isinstance(p, bytes) else str(p) for p in g["ports"][()]]
        return SParameters(
            frequency=g["frequency"][()],
            S=s,
            ports=ports,
            reference_impedance=float(g.attrs["reference_impedance"]),
        )


def plot_sparameters(sp: SParameters, pairs=None, axes=None):
    """|S| in dB and the phase (degrees) of each (out, in) port pair against frequency (THz
    above 1 THz, else GHz); every pair by default. Returns the two axes."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(2, 1, sharex=True, figsize=(6, 5))
    pairs = pairs or [(j, k) for k in sp.ports for j in sp.ports]
    scale, unit = (1e12, "THz") if sp.frequency.max() > 1e12 else (1e9, "GHz")
    for out_port, in_port in pairs:
        s = sp.s(out_port, in_port)
        j, k = sp.ports.index(out_port) + 1, sp.ports.index(in_port) + 1
        label = f"S{j}{k} ({out_port} <- {in_port})"
        axes[0].plot(sp.frequency / scale, 20 * np.log10(np.maximum(np.abs(s), 1e-30)), label=label)
        axes[1].plot(sp.frequency / scale, np.degrees(np.angle(s)), label=label)
    axes[0].set_ylabel("|S| (dB)")
    axes[1].set_ylabel("phase (degrees)")
    axes[1].set_xlabel(f"frequency ({unit})")
    axes[0].legend(fontsize="small")
    return axes
