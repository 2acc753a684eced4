"""Plot a dipole's radiated field from a plane snapshot as a PNG.

Usage: python dipole_slice.py out.h5 slice.png [snapshot [component]]
(defaults: the first snapshot monitor and its first component).

The near field of the source cell is orders of magnitude stronger than the radiated wave, so
the frame shown is the one where the field away from the source is strongest, and the colour
scale is clipped to that far field (the source region saturates).
"""

import sys

import matplotlib

matplotlib.use("Agg")  # files only, no window

import numpy as np
from matplotlib.figure import Figure

from yee_post import Result, plot_slice


def radiation_view(result, name, component):
    """``(frame index, colour limit, all-frame colour limit)`` showing the radiated field:
    samples farther than 15% of the plane's width from the source are 'far'."""
    field = result.snapshot(name, component)
    data = np.abs(field.data)
    # The source sits where the field is largest over the whole run.
    src = np.unravel_index(np.argmax(data), data.shape)[1:]
    coords = np.meshgrid(field.x - field.x[src[0]], field.y - field.y[src[1]],
                         field.z - field.z[src[2]], indexing="ij")
    width = min(np.ptp(c) for c in (field.x, field.y, field.z) if len(c) > 1)
    far = np.sqrt(sum(c**2 for c in coords)) > 0.15 * width
    far_data = data[:, far]
    index = int(np.argmax(far_data.max(axis=1)))
    return index, float(np.percentile(far_data[index], 99.5)), float(np.percentile(far_data, 99.9))


def main(h5_path, png_path, name=None, component=None):
    """Render the frame of ``name``/``component`` with the strongest radiated field."""
    with Result(h5_path) as r:
        name = name or r.monitors()["snapshots"][0]
        component = component or r.components("snapshots", name)[0]
        index, vmax, _ = radiation_view(r, name, component)
        fig = Figure(figsize=(6, 4.5), dpi=100)
        plot_slice(r, name, component, index=index, ax=fig.add_subplot(), unit=r.length_unit, vmax=vmax)
        fig.savefig(png_path)
    print(f"wrote {png_path} (frame {index})")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:5])
