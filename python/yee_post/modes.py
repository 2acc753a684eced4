"""Waveguide modes written by ``yee modes SCENE --plane ... -o OUT.h5``.

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
    ax.set_title(f"mode {index}: n_eff {modes.neff[index]:.4f}, n_g {modes.group_index[index]:.3f}")
    return ax
