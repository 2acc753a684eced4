"""Plot a PEC cavity's probe spectrum with the analytic box resonances marked.

Usage: python cavity_spectrum.py out.h5 spectrum.png [probe [component]]
(defaults: the first probe monitor and its first component).

The box is the whole domain, shape * cell_size from the file; its resonances are
f = c/2 sqrt((m/a)^2 + (n/b)^2 + (p/c)^2) for mode indices with at least two non-zero.
"""

import itertools
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no window

import numpy as np
from matplotlib.figure import Figure

from yee_post import Result, plot_spectrum

C0 = 299_792_458.0


def pec_box_resonances(size, fmax):
    """Distinct resonance frequencies (Hz) up to ``fmax`` of a PEC box of ``size`` (metres)."""
    a, b, c = size
    top = [int(np.ceil(2 * fmax * L / C0)) + 1 for L in size]
    freqs = set()
    for m, n, p in itertools.product(*(range(t + 1) for t in top)):
        # A PEC box mode (TE or TM) needs at least two non-zero indices.
        if (m > 0) + (n > 0) + (p > 0) < 2:
            continue
        f = 0.5 * C0 * np.sqrt((m / a) ** 2 + (n / b) ** 2 + (p / c) ** 2)
        if f <= fmax:
            freqs.add(round(f, -3))  # merge degenerate modes
    return sorted(freqs)


def main(h5_path, png_path, name=None, component=None):
    """Render the spectrum of probe ``name``/``component`` with resonances marked."""
    with Result(h5_path) as r:
        name = name or r.monitors()["probes"][0]
        component = component or r.components("probes", name)[0]
        size = r.size
        lowest = pec_box_resonances(size, 10 * C0 / min(size))[0]
        fmax = 2.0 * lowest
        modes = pec_box_resonances(size, fmax)
        fig = Figure(figsize=(6, 4), dpi=100)
        ax = plot_spectrum(r, name, component, ax=fig.add_subplot(), fmin=0, fmax=fmax, mark=modes)
        scale = {"m": 1.0, "mm": 1e3, "um": 1e6, "nm": 1e9}.get(r.length_unit, 1.0)
        unit = {"um": "µm"}.get(r.length_unit, r.length_unit) if scale != 1.0 else "m"
        box = " x ".join(f"{L * scale:.3g}" for L in size)
        ax.set_title(f"{name}: {component} in a PEC box {box} {unit}; dashed: analytic modes", fontsize="medium")
        fig.savefig(png_path)
    print(f"wrote {png_path}; analytic resonances (THz): "
          + ", ".join(f"{f / 1e12:.2f}" for f in modes))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:5])
