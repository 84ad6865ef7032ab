"""Plane (warp/subgroup) operations over groups of ``plane_dim`` consecutive units of a cube.

The last plane of a cube whose unit count is not a multiple of ``plane_dim`` is partial: its
missing lanes take no part in anything. Reductions and scans combine the active lanes of each
plane (inactive and missing lanes contribute the operation's identity) and give every lane of
the plane the result; arithmetic is in the value's element type (integers wrap), and a ``bf16``
reduction or scan is computed in ``f32`` and rounded once per result. ``ballot`` sets
the bits of the active lanes below 32 whose operand is true; ``elect`` is true on each plane's
lowest active lane. ``broadcast`` and the shuffles read the source lane's current value whether
it is active or not; a source lane that does not exist (outside the plane, or past the cube's
last unit) reads 0 for ``broadcast``/``shuffle`` and the lane's own value for the relative
shuffles (``up``, ``down``, ``xor``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import Batch
from .values import arr, is_float

__all__ = [
    "plane_all",
    "plane_any",
    "plane_ballot",
    "plane_broadcast",
    "plane_elect",
    "plane_exclusive_sum",
    "plane_inclusive_sum",
    "plane_max",
    "plane_min",
    "plane_prod",
    "plane_shuffle",
    "plane_shuffle_down",
    "plane_shuffle_up",
    "plane_shuffle_xor",
    "plane_sum",
]

#: Lanes from this one up have no bit in a ballot (its result is a ``u32``).
_BALLOT_LANES = 32


def _vector(g: Batch, v: Any) -> Any:
    v = arr(v)
    if isinstance(v, np.generic):
        return np.full(g.n, v)
    return v


def plane_grid(g: Batch, v: Any, m: Any, fill: Any) -> Any:
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
    if is_float(dtype):
        return dtype.type("nan")  # ignored by fmin/fmax
    info = np.iinfo(dtype)
    return info.max if kind == "min" else info.min


def _wide(grid: np.ndarray) -> np.ndarray:
    """The grid in the type its sums and products are computed in (f32 for bf16)."""
    return grid.astype(np.float32) if grid.dtype.name == "bfloat16" else grid


def plane_sum(g: Batch, v: Any, m: Any) -> Any:
    grid = plane_grid(g, v, m, 0)
    wide = _wide(grid)
    return _spread(g, wide.sum(axis=1, dtype=wide.dtype).astype(grid.dtype, copy=False))


def plane_prod(g: Batch, v: Any, m: Any) -> Any:
    grid = plane_grid(g, v, m, 1)
    wide = _wide(grid)
    return _spread(g, wide.prod(axis=1, dtype=wide.dtype).astype(grid.dtype, copy=False))


def plane_min(g: Batch, v: Any, m: Any) -> Any:
    dtype = np.result_type(arr(v))
    grid = plane_grid(g, v, m, _identity(dtype, "min"))
    ufunc = np.fmin if is_float(dtype) else np.minimum
    return _spread(g, ufunc.reduce(grid, axis=1))


def plane_max(g: Batch, v: Any, m: Any) -> Any:
    dtype = np.result_type(arr(v))
    grid = plane_grid(g, v, m, _identity(dtype, "max"))
    ufunc = np.fmax if is_float(dtype) else np.maximum
    return _spread(g, ufunc.reduce(grid, axis=1))


def plane_all(g: Batch, v: Any, m: Any) -> Any:
    return _spread(g, plane_grid(g, v, m, True).all(axis=1))


def plane_any(g: Batch, v: Any, m: Any) -> Any:
    return _spread(g, plane_grid(g, v, m, False).any(axis=1))


def plane_inclusive_sum(g: Batch, v: Any, m: Any) -> Any:
    grid = plane_grid(g, v, m, 0)
    wide = _wide(grid)
    return _lanes_of(g, np.cumsum(wide, axis=1, dtype=wide.dtype).astype(grid.dtype, copy=False))


def plane_exclusive_sum(g: Batch, v: Any, m: Any) -> Any:
    grid = plane_grid(g, v, m, 0)
    wide = _wide(grid)
    out = np.zeros_like(wide)
    np.cumsum(wide[:, :-1], axis=1, dtype=wide.dtype, out=out[:, 1:])
    return _lanes_of(g, out.astype(grid.dtype, copy=False))


def plane_ballot(g: Batch, v: Any, m: Any) -> Any:
    """The ``u32`` whose bit ``k`` is set when lane ``k`` (below 32) is active and ``v`` holds."""
    grid = plane_grid(g, v, m, False)[:, :_BALLOT_LANES]
    bits = np.left_shift(np.uint32(1), np.arange(grid.shape[1], dtype=np.uint32))
    return _spread(g, np.where(grid, bits, np.uint32(0)).sum(axis=1, dtype=np.uint32))


def plane_elect(g: Batch, m: Any) -> Any:
    """True on the lowest active lane of each plane."""
    active = plane_grid(g, np.True_, m, False)
    lanes = np.arange(active.shape[1])
    return _lanes_of(g, lanes[None, :] == active.argmax(axis=1)[:, None])


def _read_lanes(g: Batch, v: Any, src: np.ndarray, inside: np.ndarray, outside: Any) -> Any:
    """Each lane's read of ``v`` at lane ``src`` of its own plane where ``inside`` holds, else
    ``outside`` (a scalar or one value per lane)."""
    pd, pos = g.planes()
    grid = plane_grid(g, v, None, 0).reshape(-1)
    where = np.arange(g.n, dtype=np.intp) if pos is None else pos
    index = where - where % pd + np.where(inside, src, 0).astype(np.intp)
    read = grid[index]  # the result keeps v's type (np.where makes bools and 0 integers)
    return np.where(inside, read, outside).astype(read.dtype, copy=False)


def _own_lane(g: Batch) -> np.ndarray:
    """Every lane's position in its plane, as ``uint64``."""
    pd, pos = g.planes()
    where = np.arange(g.n, dtype=np.intp) if pos is None else pos
    return (where % pd).astype(np.uint64)


def _existing(g: Batch) -> Any:
    """The number of lanes of each lane's plane that exist, as ``uint64`` (a scalar where every
    plane is whole)."""
    pd, pos = g.planes()
    if pos is None:
        return np.uint64(pd)
    units = g.shape.units
    first = g.shape.unit_index(g.cubes) // pd * pd
    return np.minimum(units - first, pd).astype(np.uint64)


def plane_shuffle(g: Batch, v: Any, src: Any, m: Any) -> Any:
    """Each lane reads ``v`` of lane ``src`` (per lane) of its own plane."""
    pd, _ = g.planes()
    src_u = _vector(g, src).astype(np.uint64)
    return _read_lanes(g, v, src_u, src_u < pd, 0)


def plane_shuffle_up(g: Batch, v: Any, delta: Any, m: Any) -> Any:
    """Each lane reads ``v`` of lane ``lane - delta``, or keeps its own below ``delta``."""
    lane, d = _own_lane(g), _vector(g, delta).astype(np.uint64)
    return _read_lanes(g, v, lane - d, d <= lane, _vector(g, v))


def plane_shuffle_down(g: Batch, v: Any, delta: Any, m: Any) -> Any:
    """Each lane reads ``v`` of lane ``lane + delta``, or keeps its own past the plane's last
    existing lane."""
    lane, d = _own_lane(g), _vector(g, delta).astype(np.uint64)
    return _read_lanes(g, v, lane + d, d < _existing(g) - lane, _vector(g, v))


def plane_shuffle_xor(g: Batch, v: Any, mask: Any, m: Any) -> Any:
    """Each lane reads ``v`` of lane ``lane ^ mask``, or keeps its own where that lane does not
    exist."""
    src = _own_lane(g) ^ _vector(g, mask).astype(np.uint64)
    return _read_lanes(g, v, src, src < _existing(g), _vector(g, v))


def plane_broadcast(g: Batch, v: Any, lane: Any, m: Any) -> Any:
    """Every lane reads ``v`` of lane ``lane`` (uniform) of its plane."""
    if not isinstance(lane, np.generic):
        return plane_shuffle(g, v, lane, m)
    pd, _ = g.planes()
    i = int(lane)
    vec = _vector(g, v)
    if not 0 <= i < pd:
        return np.zeros_like(vec)
    return _spread(g, plane_grid(g, vec, None, 0)[:, i])
