"""A parameter sweep from Python: a glass slab's transmission against its thickness.

Builds one scene per thickness from a Python dict, runs them side by side with ``yee.sweep``
(the cores split between the runs), reads each transmitted flux with ``yee_post`` and plots T
at 200 THz against the thickness beside the Airy formula of a lossless slab,
T = 1 / (1 + F sin^2(delta / 2)), F = 4 R / (1 - R)^2, delta = 4 pi n d / lambda.

    python slab_sweep.py [OUT_DIR] [--quick]

``--quick`` runs four thicknesses (the test suite's size); without it, sixteen.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import yee

N_GLASS, F0, C0 = 1.5, 2.0e14, 299_792_458.0


def scene(thickness_um: float) -> yee.Scene:
    """A glass slab (thickness in um; 0: none) in a periodic cell, lit at normal incidence."""
    data = {
        "simulation": {
            "name": "slab",
            "length_unit": "um",
            "cell_size": 0.025,
            "size": [0.1, 0.1, 8.0],
            "steps": 9000,
            "precision": "f64",
        },
        "boundaries": {
            "default": {"type": "periodic"},
            "z_min": {"type": "pml", "cells": 30},
            "z_max": {"type": "pml", "cells": 30},
        },
        "materials": {"glass": {"epsilon": N_GLASS**2}},
        "source": [
            {
                "type": "plane_wave",
                "direction": "+z",
                "polarization": "Ey",
                "position": -2.5,
                "waveform": {"type": "gaussian", "frequency": F0, "bandwidth": 1.5e14},
            }
        ],
        "monitor": [
            {
                "type": "flux",
                "name": "transmitted",
                "plane": {"z": 2.5},
                "frequencies": {"min": F0, "max": F0, "count": 1},
            }
        ],
    }
    if thickness_um > 0:
        data["geometry"] = [
            {"shape": "box", "material": "glass", "center": [0.0, 0.0, 0.0], "size": [10.0, 10.0, thickness_um]}
        ]
    return yee.Scene(data)


def airy(thickness_um: np.ndarray) -> np.ndarray:
    """The transmittance of a lossless slab of index N_GLASS in vacuum at F0."""
    r = ((N_GLASS - 1) / (N_GLASS + 1)) ** 2
    f = 4 * r / (1 - r) ** 2
    delta = 4 * np.pi * N_GLASS * thickness_um * 1e-6 * F0 / C0
    return 1 / (1 + f * np.sin(delta / 2) ** 2)


def main(out_dir: Path, quick: bool) -> np.ndarray:
    out_dir.mkdir(parents=True, exist_ok=True)
    # Thicknesses on the grid (multiples of the 25 nm cell), over one Fabry-Perot period (0.5 um).
    thicknesses = np.round(np.linspace(0.1, 0.6, 4 if quick else 16) / 0.025) * 0.025
    scenes = [scene(0.0)] + [scene(d) for d in thicknesses]
    outs = [out_dir / "slab_ref.h5"] + [out_dir / f"slab_{d:.3f}.h5" for d in thicknesses]
    outcomes = yee.sweep(scenes, outs, workers=2, overwrite=True)
    for o in outcomes:
        if not o.ok:
            raise SystemExit(f"{o.out}: exit {o.code}\n{o.error}")
    power = [o.result().flux("transmitted")["power"][0] for o in outcomes]
    t = np.array(power[1:]) / power[0]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    fine = np.linspace(0.0, 0.65, 300)
    ax.plot(fine, airy(fine), label="Airy formula")
    ax.plot(thicknesses, t, "o", label="yee")
    ax.set(xlabel="slab thickness (um)", ylabel="T at 200 THz", title="Glass slab, n = 1.5")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "slab_sweep.png", dpi=120)
    for d, ti in zip(thicknesses, t):
        print(f"d = {d:.3f} um: T = {ti:.4f} (Airy {airy(d):.4f})")
    return np.column_stack([thicknesses, t, airy(thicknesses)])


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(Path(args[0]) if args else Path("."), "--quick" in sys.argv)
