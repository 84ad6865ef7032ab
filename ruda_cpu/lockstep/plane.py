"""Plane (warp/subgroup) operations over groups of ``plane_dim`` consecutive units of a cube.

Reductions and scans combine the active lanes of each plane (inactive lanes contribute the
operation's identity) and give every lane of the plane the result; arithmetic is in the value's
element type (integers wrap). ``broadcast`` and ``shuffle`` read the source lane's current value
whether it is active or not; a source lane outside the plane reads 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import Batch
from .values import arr

__all__ = [
    "plane_all",
    "plane_any",
    "plane_broadcast",
    "plane_exclusive_sum",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_sum",
]


def _vector(g: Batch, v: Any) -> Any:
    v = arr(v)
    if isinstance(v, np.generic):
        return np.full(g.n, v)
    return v


def _grid(g: Batch, v: Any, m: Any, fill: Any) -> Any:
    """The lanes' values as a (planes, plane_dim) grid; inactive and missing lanes = ``fill``."""
    v = _vector(g, v)
    if m is not None:
        v = np.where(m, v, fill)
    pd, pos = g.planes()
    if pos is None:
        return v.reshape(-1, pd)
    grid = np.full(-(-g.shape.units // pd) * pd * g.cubes, fill, dtype=v.dtype)
    grid[pos] = v
    return grid.reshape(-1, pd)


def _lanes_of(g: Batch, grid: np.ndarray) -> np.ndarray:
    """Per-lane values from a (planes, plane_dim) grid."""
    _, pos = g.planes()
    flat = grid.reshape(-1)
    return flat if pos is None else flat[pos]


def _spread(g: Batch, per_plane: Any) -> Any:
    pd, _ = g.planes()
    return _lanes_of(g, np.repeat(per_plane, pd).reshape(-1, pd))


def _identity(dtype: np.dtype, kind: str) -> Any:
    if dtype.kind == "f":
        return dtype.type("nan")  # ignored by fmin/fmax
    info = np.iinfo(dtype)
    return info.max if kind == "min" else info.min


def plane_sum(g: Batch, v: Any, m: Any) -> Any:
    grid = _grid(g, v, m, 0)
    return _spread(g, grid.sum(axis=1, dtype=grid.dtype))


def plane_prod(g: Batch, v: Any, m: Any) -> Any:
    grid = _grid(g, v, m, 1)
    return _spread(g, grid.prod(axis=1, dtype=grid.dtype))


def plane_min(g: Batch, v: Any, m: Any) -> Any:
    dtype = np.result_type(arr(v))
    grid = _grid(g, v, m, _identity(dtype, "min"))
    ufunc = np.fmin if dtype.kind == "f" else np.minimum
    return _spread(g, ufunc.reduce(grid, axis=1))


def plane_max(g: Batch, v: Any, m: Any) -> Any:
    dtype = np.result_type(arr(v))
    grid = _grid(g, v, m, _identity(dtype, "max"))
    ufunc = np.fmax if dtype.kind == "f" else np.maximum
    return _spread(g, ufunc.reduce(grid, axis=1))


def plane_all(g: Batch, v: Any, m: Any) -> Any:
    return _spread(g, _grid(g, v, m, True).all(axis=1))


def plane_any(g: Batch, v: Any, m: Any) -> Any:
    return _spread(g, _grid(g, v, m, False).any(axis=1))


def plane_inclusive_sum(g: Batch, v: Any, m: Any) -> Any:
    grid = _grid(g, v, m, 0)
    return _lanes_of(g, np.cumsum(grid, axis=1, dtype=grid.dtype))


def plane_exclusive_sum(g: Batch, v: Any, m: Any) -> Any:
    grid = _grid(g, v, m, 0)
    out = np.zeros_like(grid)
    np.cumsum(grid[:, :-1], axis=1, dtype=grid.dtype, out=out[:, 1:])
    return _lanes_of(g, out)


def plane_shuffle(g: Batch, v: Any, src: Any, m: Any) -> Any:
    """Each lane reads ``v`` of lane ``src`` (per lane) of its own plane."""
    pd, pos = g.planes()
    grid = _grid(g, v, None, 0).reshape(-1)
    where = np.arange(g.n, dtype=np.intp) if pos is None else pos
    src_u = _vector(g, src).astype(np.uint64)
    inside = src_u < pd
    index = where - where % pd + np.where(inside, src_u, 0).astype(np.intp)
    out = grid[index]
    out[~inside] = 0
    return out


def plane_broadcast(g: Batch, v: Any, lane: Any, m: Any) -> Any:
    """Every lane reads ``v`` of lane ``lane`` (uniform) of its plane."""
    if not isinstance(lane, np.generic):
        return plane_shuffle(g, v, lane, m)
    pd, _ = g.planes()
    i = int(lane)
    vec = _vector(g, v)
    if not 0 <= i < pd:
        return np.zeros_like(vec)
    return _spread(g, _grid(g, vec, None, 0)[:, i])
