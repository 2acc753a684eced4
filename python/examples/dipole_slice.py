"""Plot the last frame of a dipole's field snapshot as a PNG.

Usage: python dipole_slice.py out.h5 slice.png [snapshot [component]]
(defaults: the first snapshot monitor and its first component).
"""

import sys

import matplotlib

matplotlib.use("Agg")  # files only, no window

from matplotlib.figure import Figure

from yee_post import Result, plot_slice


def main(h5_path, png_path, name=None, component=None):
    """Render the last snapshot frame of ``name``/``component`` to ``png_path``."""
    with Result(h5_path) as r:
        name = name or r.monitors()["snapshots"][0]
        component = component or r.components("snapshots", name)[0]
        fig = Figure(figsize=(6, 4.5), dpi=100)
        plot_slice(r, name, component, index=-1, ax=fig.add_subplot(), unit=r.length_unit)
        fig.savefig(png_path)
    print(f"wrote {png_path}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:5])
