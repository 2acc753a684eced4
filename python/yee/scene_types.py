"""The scene's tables as typed dicts, so an editor completes the keys of a scene written in
Python (``data: yee.scene_types.SceneData = {"simulation": {...}}``). The keys are the scene
file's (docs/scene.md); units: lengths in ``simulation.length_unit`` (default metres), times in
seconds, frequencies in hertz, conductivities in S/m, angles in degrees. Every key is optional
here: the engine's check (``Scene.check``) says which a scene needs."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Union

if sys.version_info >= (3, 11):
    from typing import TypedDict
else:  # pragma: no cover - Python 3.9 and 3.10
    from typing_extensions import TypedDict  # type: ignore[assignment]

Vector = List[float]
Box = TypedDict("Box", {"center": Vector, "size": Vector}, total=False)
Frequencies = TypedDict("Frequencies", {"min": float, "max": float, "count": int}, total=False)


class Simulation(TypedDict, total=False):
    """``[simulation]``: the grid and the run's length."""

    name: str
    length_unit: str  # "m", "mm", "um", "nm"
    cell_size: Union[float, Vector]  # in length_unit
    size: Vector  # the domain, PML included, in length_unit
    steps: int
    duration: float  # seconds (instead of steps)
    courant: float
    precision: str  # "f32" or "f64"
    subpixel: bool
    grading: float
    cells_per_wavelength: float


class Boundary(TypedDict, total=False):
    """One face: ``{"type": "pml" | "pec" | "pmc" | "periodic", "cells": N}``."""

    type: str
    cells: int


Boundaries = TypedDict(
    "Boundaries",
    {"default": Boundary, "x_min": Boundary, "x_max": Boundary, "y_min": Boundary,
     "y_max": Boundary, "z_min": Boundary, "z_max": Boundary},
    total=False,
)


class Material(TypedDict, total=False):
    """A ``[materials]`` entry."""

    epsilon: float
    conductivity: float  # S/m
    pec: bool
    conformal: bool
    mu: float
    magnetic_conductivity: float
    lorentz: List[Dict[str, float]]
    drude: List[Dict[str, float]]
    debye: List[Dict[str, float]]
    library: str  # `yee materials` lists the names
    band: Vector  # [fmin, fmax] Hz


class Geometry(TypedDict, total=False):
    """A ``[[geometry]]`` entry (``yee.geometry`` makes polygons and voxel grids)."""

    shape: str  # box | sphere | cylinder | polygon | gds | mesh | voxels
    material: str
    center: Vector
    size: Vector
    radius: float
    height: float
    axis: str
    vertices: List[Vector]
    span: Vector
    sidewall_angle: float  # degrees
    file: Any  # a path, or for voxels a numpy array of integers
    cell: str
    layer: List[int]
    scale: float
    translate: Vector
    dataset: str
    materials: List[str]
    box: Box
    element: Dict[str, Any]  # a lumped R, L, C element


class Waveform(TypedDict, total=False):
    """A source's time signal: ``gaussian`` (frequency, bandwidth), ``ricker``, ``continuous``."""

    type: str
    frequency: float  # Hz
    bandwidth: float  # Hz
    delay: float  # s


class Source(TypedDict, total=False):
    """A ``[[source]]`` entry: dipole, plane_wave, tfsf, mode or lumped_port."""

    type: str
    name: str
    mode: int
    profiles: int
    component: str
    position: Union[float, Vector]
    direction: str
    polarization: str
    box: Box
    waveform: Waveform
    amplitude: float
    two_way: bool
    scan_step: Vector
    impedance: Union[float, Vector]  # ohm, or [re, im]
    frequencies: Frequencies


class Monitor(TypedDict, total=False):
    """A ``[[monitor]]`` entry: probe, snapshot, flux, far_field or mode."""

    type: str
    name: str
    position: Vector
    interpolate: bool
    components: List[str]
    plane: Dict[str, float]  # {"z": 0.0}
    box: Box
    every: int
    stride: int
    frequencies: Frequencies
    fields: bool
    decimation: int
    modes: int
    voltage: Dict[str, Vector]  # {"from": [...], "to": [...]}
    theta: Any
    phi: Any
    scan_step: Vector


class SceneData(TypedDict, total=False):
    """A whole scene."""

    simulation: Simulation
    boundaries: Boundaries
    materials: Dict[str, Material]
    geometry: List[Geometry]
    source: List[Source]
    monitor: List[Monitor]
    refine: List[Dict[str, Any]]
    scan: Dict[str, int]  # {"traces": N}
    sparameters: Dict[str, List[str]]  # {"ports": [...]}
