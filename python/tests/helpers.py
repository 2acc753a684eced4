"""Helpers shared by the tests: running scenes, checking images, PEC box resonances."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

C0 = 299_792_458.0


def run_scene(yee_bin: Path, directory: Path, name: str, toml: str, timeout: float = 120) -> Path:
    """Write ``toml`` to ``directory/name.toml``, run it with ``yee run``, return the HDF5 path."""
    scene = directory / f"{name}.toml"
    scene.write_text(toml)
    out = directory / f"{name}.h5"
    proc = subprocess.run(
        [str(yee_bin), "run", "--quiet", "--overwrite", str(scene), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"yee run {scene.name} exited with {proc.returncode}\n"
            f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}",
            pytrace=False,
        )
    assert out.is_file(), f"yee run did not write {out}"
    return out


def assert_png(path, size):
    """``path`` is a PNG of ``size`` (width, height) pixels with visible content (not blank)."""
    with Image.open(path) as im:
        assert im.format == "PNG"
        assert im.size == tuple(size), f"{path} is {im.size}, expected {tuple(size)}"
        pixels = np.asarray(im.convert("L"), dtype=float)
    # A blank (single-colour) figure has zero variance; axes, labels and data give plenty.
    assert pixels.var() > 100.0, f"{path} looks blank (pixel variance {pixels.var():.1f})"
    return pixels


def gif_frames(path):
    """Number of frames and (width, height) of a GIF."""
    with Image.open(path) as im:
        assert im.format == "GIF"
        return im.n_frames, im.size


def pec_box_modes(size, count=3):
    """The ``count`` lowest distinct resonance frequencies (Hz) of a PEC box of ``size`` (m):
    f = c/2 sqrt((m/a)^2 + (n/b)^2 + (p/c)^2), at least two indices non-zero."""
    freqs = set()
    for idx in itertools.product(range(6), repeat=3):
        if sum(i > 0 for i in idx) >= 2:
            f = 0.5 * C0 * np.sqrt(sum((i / L) ** 2 for i, L in zip(idx, size)))
            freqs.add(round(f, -6))  # merge degenerate modes
    return sorted(freqs)[:count]
