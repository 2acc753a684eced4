"""Checks on rendered images."""

import numpy as np
from PIL import Image


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
