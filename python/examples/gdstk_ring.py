"""A device drawn with gdstk: a silicon ring beside a bus waveguide, run in 2-D from Python.

The ring and the bus are drawn with gdstk (any layout tool's polygons work the same way:
shapely, numpy arrays) and become ``polygon`` objects through ``yee.geometry.polygons``; the
ring's hole is a later polygon of the cladding (later objects paint over earlier ones). A
dipole in the bus launches light; a snapshot of Ez at the end is plotted over the outlines.

    python gdstk_ring.py [OUT_DIR] [--quick]

Needs gdstk (``pip install gdstk``). ``--quick`` runs a coarser grid for fewer steps.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import gdstk
import matplotlib.pyplot as plt

import yee
from yee_post import plot_slice

RADIUS, WIDTH, GAP = 2.0, 0.4, 0.15  # um


def layout():
    """The ring's outer disc, its hole and the bus, as gdstk polygons."""
    outer = gdstk.ellipse((0, 0), RADIUS + WIDTH / 2, tolerance=1e-3)
    hole = gdstk.ellipse((0, 0), RADIUS - WIDTH / 2, tolerance=1e-3)
    y_bus = -(RADIUS + WIDTH + GAP)
    bus = gdstk.rectangle((-6, y_bus - WIDTH / 2), (6, y_bus + WIDTH / 2))
    return outer, hole, bus


def scene(quick: bool) -> yee.Scene:
    outer, hole, bus = layout()
    cell = 0.04 if quick else 0.02
    span = [-0.5, 0.5]  # one cell with periodic z faces: a 2-D model
    geometry = (
        yee.geometry.polygons(outer, material="si", span=span)
        + yee.geometry.polygons(hole, material="oxide", span=span)
        + yee.geometry.polygons(bus, material="si", span=span)
    )
    return yee.Scene(
        {
            "simulation": {
                "name": "ring",
                "length_unit": "um",
                "cell_size": cell,
                "size": [10.0, 8.0, cell],
                "steps": 1500 if quick else 6000,
            },
            "boundaries": {
                "default": {"type": "pml", "cells": 12},
                "z_min": {"type": "periodic"},
                "z_max": {"type": "periodic"},
            },
            "materials": {"si": {"epsilon": 12.0}, "oxide": {"epsilon": 2.1}},
            "geometry": [
                {"shape": "box", "material": "oxide", "center": [0, 0, 0], "size": [20, 20, 20]},
                *geometry,
            ],
            "source": [
                {
                    "type": "dipole",
                    "component": "Ez",
                    "position": [-4.0, -(RADIUS + WIDTH + GAP), 0.0],
                    "waveform": {"type": "gaussian", "frequency": 1.934e14, "bandwidth": 5e13},
                }
            ],
            "monitor": [
                {"type": "snapshot", "name": "ez", "components": ["Ez"], "plane": {"z": 0.0}, "every": 500},
            ],
        }
    )


def main(out_dir: Path, quick: bool):
    out_dir.mkdir(parents=True, exist_ok=True)
    s = scene(quick)
    print("\n".join(s.check()))
    result = s.run(out_dir / "ring.h5", overwrite=True)
    ax = plot_slice(result, "ez", "Ez", unit="um")
    for poly in layout():
        xy = poly.points
        ax.plot(list(xy[:, 0]) + [xy[0, 0]], list(xy[:, 1]) + [xy[0, 1]], "k-", lw=0.6)
    ax.figure.savefig(out_dir / "gdstk_ring.png", dpi=120)
    return result


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(Path(args[0]) if args else Path("."), "--quick" in sys.argv)
