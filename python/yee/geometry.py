"""Geometry from Python objects, as ``[[geometry]]`` entries (dicts) to put in a scene's
``geometry`` list: polygons from numpy arrays, gdstk or shapely, and voxel grids from numpy
arrays.

    import gdstk, yee
    ring = gdstk.ellipse((0, 0), 5.0, inner_radius=4.5)
    scene["geometry"] += yee.geometry.polygons(ring, material="si", span=[0.0, 0.22])

Lengths are in the scene's ``simulation.length_unit``.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

import numpy as np

__all__ = ["polygons", "voxels"]


def polygons(
    shapes: Any,
    *,
    material: str,
    span: Sequence[float],
    axis: str = "z",
    sidewall_angle: Optional[float] = None,
) -> list[dict]:
    """One ``shape = "polygon"`` entry per polygon in ``shapes``: an (N, 2) array of vertices,
    a gdstk ``Polygon``, ``FlexPath``/``RobustPath`` (their polygons) or ``Cell`` (every polygon,
    references flattened), a shapely ``Polygon`` or ``MultiPolygon``, or a list of any of
    these. Each is extruded over ``span`` along ``axis`` (vertices in the plane normal to it, as
    the scene key says), with ``sidewall_angle`` in degrees.

    A polygon with holes (shapely interiors) is refused: a scene's polygon has none. Paint the
    hole as a later polygon of the surrounding material instead (later objects paint over
    earlier ones)."""
    out = []
    for vertices in _vertex_lists(shapes):
        entry = {
            "shape": "polygon",
            "material": material,
            "axis": axis,
            "vertices": vertices,
            "span": [float(s) for s in span],
        }
        if sidewall_angle is not None:
            entry["sidewall_angle"] = float(sidewall_angle)
        out.append(entry)
    if not out:
        raise ValueError("no polygons found in the shapes given")
    return out


def voxels(grid: Any, *, materials: Sequence[str], box: dict) -> dict:
    """A ``shape = "voxels"`` entry painting the integer array ``grid`` [nx, ny, nz] over
    ``box`` (``{"center": [...], "size": [...]}``): value i is ``materials[i]``. The array is
    written to a ``.npy`` file beside the scene when it is checked or run."""
    grid = np.asarray(grid)
    if grid.ndim != 3 or not np.issubdtype(grid.dtype, np.integer):
        raise ValueError(f"a voxel grid is a 3-D array of integers; got {grid.ndim}-D {grid.dtype}")
    return {"shape": "voxels", "file": grid, "materials": list(materials), "box": dict(box)}


def _vertex_lists(shapes: Any) -> Iterable[list]:
    """Each polygon's vertices as a list of [u, v] pairs."""
    if isinstance(shapes, np.ndarray) and shapes.ndim == 2:
        yield _pairs(shapes)
        return
    if hasattr(shapes, "get_polygons"):  # gdstk Cell
        for p in shapes.get_polygons():
            yield _pairs(p.points)
        return
    if hasattr(shapes, "to_polygons"):  # gdstk FlexPath / RobustPath
        for p in shapes.to_polygons():
            yield _pairs(p.points)
        return
    if hasattr(shapes, "points"):  # gdstk Polygon
        yield _pairs(shapes.points)
        return
    if hasattr(shapes, "geoms"):  # shapely MultiPolygon
        for g in shapes.geoms:
            yield from _vertex_lists(g)
        return
    if hasattr(shapes, "exterior"):  # shapely Polygon
        if len(shapes.interiors):
            raise ValueError(
                "a polygon with holes cannot be drawn as one scene polygon: draw the outline, "
                "then the hole as a later polygon of the surrounding material"
            )
        coords = np.asarray(shapes.exterior.coords)[:-1]  # shapely repeats the first vertex
        yield _pairs(coords)
        return
    if isinstance(shapes, (list, tuple)):
        if shapes and all(isinstance(v, (int, float)) for v in np.ravel(shapes[0])) and np.ndim(shapes) == 2:
            yield _pairs(np.asarray(shapes))
            return
        for s in shapes:
            yield from _vertex_lists(s)
        return
    raise TypeError(
        f"cannot read polygons from {type(shapes).__name__}: give an (N, 2) array, a gdstk "
        "Polygon, path or Cell, a shapely Polygon or MultiPolygon, or a list of them"
    )


def _pairs(points: Any) -> list:
    a = np.asarray(points, dtype=float)
    if a.ndim != 2 or a.shape[1] != 2 or len(a) < 3:
        raise ValueError(f"a polygon needs three or more (u, v) vertices; got an array of shape {a.shape}")
    return a.tolist()
