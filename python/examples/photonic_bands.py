"""A photonic crystal's band diagram from Python: a square lattice of dielectric rods (eps 12,
r = 0.2 a), TM polarisation, over the Gamma-X-M-Gamma path.

One Bloch-periodic unit cell per wavevector (``yee.bands.run`` sets the phases and runs the
cells side by side), a dipole off every symmetry point ringing in each, harmonic inversion of
a probe's ringing for the resonance frequencies; the diagram is saved to HDF5 and plotted in
units of c / a, with the band gap MPB finds (0.2826 to 0.4193 c/a) shaded.

    python photonic_bands.py [OUT_DIR] [--quick]

``--quick`` runs 16 cells per period and two wavevectors per segment (the test suite's size);
without it, 32 cells and eight.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import yee
from yee_post import plot_bands

C0 = 299_792_458.0


def cell(res: int) -> yee.Scene:
    """The unit cell, a = 1 um, in 2-D (one cell along z), periodic in x and y."""
    d = 1.0 / res
    return yee.Scene({
        "simulation": {"name": "rods", "length_unit": "um", "cell_size": d,
                       "size": [1.0, 1.0, d], "steps": 12000, "precision": "f64"},
        "boundaries": {"default": {"type": "periodic"}},
        "materials": {"rod": {"epsilon": 12.0}},
        "geometry": [{"shape": "cylinder", "material": "rod", "center": [0.0, 0.0, 0.0],
                      "radius": 0.2, "height": 10.0, "axis": "z"}],
        "source": [{"type": "dipole", "component": "Ez", "position": [0.123, 0.371, 0.0],
                    "waveform": {"type": "gaussian", "frequency": 1.2e14, "bandwidth": 1.2e14}}],
        "monitor": [{"type": "probe", "name": "p", "position": [-0.287, 0.213, 0.0],
                     "components": ["Ez"]}],
    })


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv
    out = Path(args[0]) if args else Path(".")
    out.mkdir(parents=True, exist_ok=True)
    res, per = (16, 2) if quick else (32, 8)
    k = yee.bands.path([[0, 0], [0.5, 0], [0.5, 0.5], [0, 0]], per_segment=per)
    fa = C0 / 1e-6
    diagram = yee.bands.run(cell(res), k, probe="p", component="Ez", fmin=0.1 * fa,
                            fmax=0.8 * fa, after=1.5e-13, workers=2)
    diagram.save(out / "photonic_bands.h5")
    ax = plot_bands(diagram, period=1e-6, labels=["G", "X", "M", "G"])
    ax.axhspan(0.2826, 0.4193, color="0.9", zorder=0, label="MPB's TM gap")
    ax.legend(loc="upper left", fontsize="small")
    ax.figure.savefig(out / "photonic_bands.png", dpi=100)
    for phase, f in zip(diagram.phase, diagram.frequency):
        print(f"k = ({phase[0]:.3f}, {phase[1]:.3f}): " + " ".join(f"{v * 1e-6 / C0:.4f}" for v in f if v == v))
    plt.close("all")


if __name__ == "__main__":
    main()
