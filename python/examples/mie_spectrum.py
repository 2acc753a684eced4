"""Plot a sphere's scattering and absorption efficiencies from a yee run against the Mie series.

Usage: python mie_spectrum.py mie_sphere.h5 mie.png
(the file of ``yee run scenes/mie_sphere.toml``, or any run with one sphere, a TF/SF source and
closed flux boxes with cross-sections).

The sphere (radius, material) is read from the scene text stored in the file, its index at
each frequency from the file's /materials (so dispersive and conductive spheres work), and
the analytic efficiencies come from ``yee_post.mie`` (Bohren and Huffman's series). Prints the
largest relative deviation of each curve.
"""

import sys
import tomllib

import matplotlib

matplotlib.use("Agg")  # files only, no window

import numpy as np
from matplotlib.figure import Figure

from yee_post import Result
from yee_post.mie import efficiencies

C0 = 299_792_458.0
UNITS = {"m": 1.0, "mm": 1e-3, "um": 1e-6, "nm": 1e-9}


def the_sphere(scene):
    """``(radius in metres, material name)`` of the scene's one sphere."""
    unit = UNITS[scene["simulation"].get("length_unit", "m")]
    spheres = [g for g in scene.get("geometry", []) if g.get("shape") == "sphere"]
    if len(spheres) != 1:
        raise SystemExit(f"expected one sphere in the scene, found {len(spheres)}")
    return spheres[0]["radius"] * unit, spheres[0]["material"]


def main(path, png):
    with Result(path) as r:
        scene = tomllib.loads(r.file.attrs["scene"])
        radius, material = the_sphere(scene)
        boxes = {name: r.cross_sections(name) for name in r.monitors().get("flux", [])
                 if "cross_section" in r.file[f"flux/{name}"]}
        freqs = next(iter(boxes.values()))["frequency"]
        dense = np.linspace(freqs.min(), freqs.max(), 200)

        def index(f):
            if material == "pec":
                return np.full(np.shape(f), 1e3 + 1e3j)  # a perfect conductor, to the series
            return np.sqrt(r.epsilon(material, f))

        n_at, n_dense = index(freqs), index(dense)
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    for name, cs in boxes.items():
        q_yee = cs["cross_section"] / (np.pi * radius**2)
        which = "scattering" if cs["kind"] == "scattering" else "absorption"
        def mie(ns, fs):
            return np.array([efficiencies(m, 2 * np.pi * f * radius / C0)[which]
                             for m, f in zip(ns, fs)])

        q_mie = mie(n_at, cs["frequency"])
        ax.plot(dense / 1e12, mie(n_dense, dense), "-", label=f"Mie {which}")
        ax.plot(cs["frequency"] / 1e12, q_yee, "o", label=f"yee {which} ({name})")
        if np.abs(q_mie).max() > 1e-6:
            dev = np.max(np.abs(q_yee - q_mie)) / np.abs(q_mie).max()
            print(f"{name}: {which} efficiency within {100 * dev:.2f} % of the Mie series")
        else:
            print(f"{name}: {which} efficiency {np.abs(q_yee).max():.2e} (Mie: none)")
    ax.set_xlabel("frequency (THz)")
    ax.set_ylabel("efficiency Q = C / (pi a^2)")
    ax.set_title(f"sphere of radius {radius * 1e6:g} um, {material}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
