"""Animate a dipole's field snapshots as a GIF, one frame per stored snapshot.

Usage: python dipole_animation.py out.h5 movie.gif [snapshot [component [fps]]]
(defaults: the first snapshot monitor, its first component, 10 frames per second).

One colour scale serves every frame; it is clipped to the radiated field so the wave shows
next to the much stronger near field of the source cell (see dipole_slice.py).
"""

import sys

from dipole_slice import radiation_view
from yee_post import Result, animate


def main(h5_path, gif_path, name=None, component=None, fps=10):
    """Write the GIF of ``name``/``component`` to ``gif_path``."""
    with Result(h5_path) as r:
        name = name or r.monitors()["snapshots"][0]
        component = component or r.components("snapshots", name)[0]
        _, _, vmax = radiation_view(r, name, component)
        animate(r, name, component, gif_path, fps=int(fps), unit=r.length_unit, vmax=vmax)
        print(f"wrote {gif_path}: {r.snapshot_count(name, component)} frames")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:6])
