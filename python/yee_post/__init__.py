"""Post-processing for ``yee`` FDTD results.

Open a file written by ``yee run scene.toml -o out.h5`` with :class:`Result`, read probes,
spectra and snapshots with physical coordinates, and plot them::

    from yee_post import Result, plot_slice

    with Result("out.h5") as r:
        print(r.monitors())
        t, ez = r.probe("p", "Ez")
        plot_slice(r, "ez_xy", "Ez").figure.savefig("ez.png")

All lengths in the file and in this package are metres, times seconds and frequencies hertz;
plots label lengths in a chosen unit (``unit="um"``).
"""

from .plot import (
    animate,
    plot_ascan,
    plot_bands,
    plot_bscan,
    plot_diffraction,
    plot_flux,
    plot_pattern,
    plot_port,
    plot_slice,
    plot_spectrum,
)
from .modes import Modes, SParameters, plot_mode, plot_sparameters, read_modes, read_sparameters
from .result import COMPONENTS, STAGGER, FarField, Field, FluxField, Result, spectrum
from .scan import BScan, apply_gain, first_break, remove_background, time_zero
from .harminv import Resonances, harminv

__version__ = "0.1.0"

__all__ = [
    "harminv",
    "plot_bands",
    "plot_diffraction",
    "Resonances",
    "Modes",
    "read_modes",
    "plot_mode",
    "SParameters",
    "read_sparameters",
    "plot_sparameters",
    "Result",
    "plot_port",
    "Field",
    "FluxField",
    "FarField",
    "STAGGER",
    "COMPONENTS",
    "spectrum",
    "plot_slice",
    "plot_flux",
    "plot_pattern",
    "plot_spectrum",
    "animate",
    "BScan",
    "plot_ascan",
    "plot_bscan",
    "time_zero",
    "first_break",
    "remove_background",
    "apply_gain",
]
