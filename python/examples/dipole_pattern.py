"""Plot a dipole's far-field pattern from a yee run and compare it with sin^2(theta).

Usage: python dipole_pattern.py dipole_pattern.h5 pattern.png [monitor]
(the file of ``yee run scenes/dipole_pattern.toml``; default: the first far-field monitor).

A short z dipole radiates the directivity D = 1.5 sin^2(theta), the same in every azimuth;
the script plots the pattern (``yee_post.plot_pattern``) and prints, per frequency, the
largest deviation of the computed directivity from it and the radiated power.
"""

import sys

import matplotlib

matplotlib.use("Agg")  # files only, no window

import numpy as np

from yee_post import Result, plot_pattern


def main(path, png, name=None):
    with Result(path) as r:
        name = name or r.monitors()["far_field"][0]
        ff = r.far_field(name)
        fig = plot_pattern(r, name)
    ideal = 1.5 * np.sin(np.radians(ff.theta))[:, None] ** 2
    for k, f in enumerate(ff.frequency):
        dev = np.max(np.abs(ff.directivity()[k] - ideal)) / 1.5
        print(f"{f / 1e12:8.3f} THz: directivity within {100 * dev:.2f} % of 1.5 sin^2(theta), "
              f"radiated {ff.total_power()[k]:.4e} (the DFT normalisation of flux power)")
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
