"""Shared fixtures: the yee binary, scene runner, synthetic files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

# Headless: tests render to files only.
matplotlib.use("Agg")

import pytest

REPO = Path(__file__).resolve().parents[2]
# The installed wheel first (`pip install ./python`: the `yee` package needs its compiled
# engine); the working copy's pure-Python yee_post when nothing is installed.
sys.path.append(str(REPO / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import write_synthetic  # noqa: E402


@pytest.fixture(scope="session")
def yee_bin() -> Path:
    """Path of the yee binary: $YEE_BIN, else target/release/yee. Missing binary fails the test."""
    path = Path(os.environ.get("YEE_BIN", REPO / "target" / "release" / "yee"))
    if not path.is_absolute():
        path = REPO / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"yee binary not found at {path}: build it with `cargo build --release` "
            "or point YEE_BIN at it",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def synthetic_file(tmp_path_factory) -> Path:
    """A complete synthetic result file (f64)."""
    path = tmp_path_factory.mktemp("synthetic") / "synthetic.h5"
    write_synthetic(path)
    return path


@pytest.fixture(scope="session")
def partial_file(tmp_path_factory) -> Path:
    """A synthetic file from a run 'interrupted' at step 150 (f32, bytes-typed string attributes)."""
    path = tmp_path_factory.mktemp("partial") / "partial.h5"
    write_synthetic(path, precision="f32", interrupted_at=150, bytes_strings=True)
    return path
