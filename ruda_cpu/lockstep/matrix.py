"""Cooperative matrices (``cmma``) over the planes of a batch: a fragment is one NumPy array of
shape ``(planes, rows, cols)``, one tile per plane, in the fragment's element type.

Every operation acts on the planes with an active lane and reads a plane's scalar operands
(offset, stride, value) from its lowest lane (they are uniform over the plane by the IR's
rule). Tiles move through memory element by element: an element outside the buffer (or outside
the plane's cube's segment of shared memory) reads 0 and is not written, so no index can fault;
the bounds pass adds the whole-tile rule of :mod:`ruda_core.ir.ops` on top. ``execute`` is
:func:`ruda_core.ir.multiply_accumulate`, the executable definition. Fragments are the only
values here that are updated in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ruda_core.ir import multiply_accumulate, round_tf32

from .batch import Batch, Segmented
from .plane import plane_grid

__all__ = [
    "matrix",
    "matrix_cast",
    "matrix_execute",
    "matrix_fill",
    "matrix_load",
    "matrix_store",
]

_ROW_MAJOR = 0  # MatrixLayout.ROW_MAJOR.value


def matrix(g: Batch, rows: int, cols: int, dtype: type[np.generic]) -> np.ndarray:
    """A zeroed fragment of ``rows x cols`` per plane of the batch."""
    pd, _ = g.planes()
    planes = -(-g.shape.units // pd) * g.cubes
    return np.zeros((planes, rows, cols), dtype=dtype)


def _active(g: Batch, m: Any) -> np.ndarray | slice:
    """The planes with an active lane (a slice of all of them when every lane is active)."""
    if m is None:
        return slice(None)
    if m is False:
        return np.zeros(0, dtype=np.intp)
    planes: np.ndarray = np.flatnonzero(plane_grid(g, m, None, False).any(axis=1))
    return planes


def _per_plane(g: Batch, v: Any, planes: np.ndarray | slice) -> np.ndarray:
    """The value of each selected plane's lowest lane, as ``int64``."""
    values: np.ndarray = plane_grid(g, v, None, 0)[planes, 0].astype(np.int64)
    return values


def _tile_index(
    frag: np.ndarray, offset: np.ndarray, stride: np.ndarray, layout: int
) -> np.ndarray:
    """``(planes, rows, cols)`` element indices of each plane's tile."""
    rows = np.arange(frag.shape[1], dtype=np.int64)[None, :, None]
    cols = np.arange(frag.shape[2], dtype=np.int64)[None, None, :]
    s = stride[:, None, None]
    inner = rows * s + cols if layout == _ROW_MAJOR else cols * s + rows
    index: np.ndarray = offset[:, None, None] + inner
    return index


def _memory(g: Batch, mem: Any, planes: np.ndarray | slice) -> tuple[np.ndarray, Any, int]:
    """``(data, base, length)``: a global buffer, or each plane's cube's shared segment."""
    if not isinstance(mem, Segmented):
        return mem, 0, mem.shape[0]
    pd, _ = g.planes()
    per_cube = -(-g.shape.units // pd)
    plane = np.arange(per_cube * g.cubes, dtype=np.int64)[planes]
    return mem.data, (plane // per_cube * mem.length)[:, None, None], mem.length


def matrix_fill(g: Batch, frag: np.ndarray, value: Any, m: Any, tf32: bool) -> None:
    planes = _active(g, m)
    values = plane_grid(g, value, None, 0)[planes, 0].astype(frag.dtype)
    if tf32:
        values = round_tf32(values)
    frag[planes] = values[:, None, None]


def matrix_load(
    g: Batch,
    frag: np.ndarray,
    mem: Any,
    offset: Any,
    stride: Any,
    layout: int,
    m: Any,
    tf32: bool,
) -> None:
    planes = _active(g, m)
    index = _tile_index(
        frag[planes], _per_plane(g, offset, planes), _per_plane(g, stride, planes), layout
    )
    data, base, length = _memory(g, mem, planes)
    inside = (index >= 0) & (index < length)
    values = np.where(inside, data[np.where(inside, base + index, 0)] if data.size else 0, 0)
    values = values.astype(frag.dtype)
    frag[planes] = round_tf32(values) if tf32 else values


def matrix_store(
    g: Batch, mem: Any, offset: Any, frag: np.ndarray, stride: Any, layout: int, m: Any
) -> None:
    planes = _active(g, m)
    tiles = frag[planes]
    index = _tile_index(tiles, _per_plane(g, offset, planes), _per_plane(g, stride, planes), layout)
    data, base, length = _memory(g, mem, planes)
    inside = (index >= 0) & (index < length)
    data[(base + index)[inside]] = tiles[inside]


def matrix_execute(
    g: Batch, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, m: Any
) -> None:
    planes = _active(g, m)
    d[planes] = multiply_accumulate(a[planes], b[planes], c[planes], d.dtype)


def matrix_cast(g: Batch, dst: np.ndarray, src: np.ndarray, m: Any) -> None:
    planes = _active(g, m)
    dst[planes] = src[planes].astype(dst.dtype)
