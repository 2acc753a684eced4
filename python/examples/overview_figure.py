"""The two-panel overview figure of the docs: a dipole's radiated field and a cavity spectrum.

Usage: python overview_figure.py dipole.h5 cavity.h5 figure.png
(outputs of dipole.toml and cavity.toml in this folder).
"""

import sys

import matplotlib

matplotlib.use("Agg")  # files only, no window

from matplotlib.figure import Figure

from cavity_spectrum import C0, pec_box_resonances
from dipole_slice import radiation_view
from yee_post import Result, plot_slice, plot_spectrum


def main(dipole_h5, cavity_h5, png_path):
    """Render the overview figure to ``png_path``."""
    fig = Figure(figsize=(11, 4.2), dpi=100)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})
    with Result(dipole_h5) as r:
        name = r.monitors()["snapshots"][0]
        index, vmax, _ = radiation_view(r, name, "Ez")
        plot_slice(r, name, "Ez", index=index, ax=left, unit=r.length_unit, vmax=vmax)
        t = r.snapshot_times(name, "Ez")[0][index]
        left.set_title(f"z dipole: Ez at t = {t * 1e15:.1f} fs", fontsize="medium")
    with Result(cavity_h5) as r:
        lowest = pec_box_resonances(r.size, 10 * C0 / min(r.size))[0]
        modes = pec_box_resonances(r.size, 2 * lowest)
        probe = r.monitors()["probes"][0]
        plot_spectrum(r, probe, "Ez", ax=right, fmin=0.5 * lowest, fmax=2 * lowest, mark=modes)
        right.set_title("PEC cavity: probe spectrum, dashed = analytic resonances", fontsize="medium")
    fig.tight_layout()
    fig.savefig(png_path)
    print(f"wrote {png_path}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:4])
