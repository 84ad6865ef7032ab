"""Barriers of a cube that reduce a ``bool`` over its units (``sync_units_count/and/or``).

Every lane of a batch reaches a barrier together, so only the reduction needs code: it combines
the active lanes of each cube (an inactive lane counts as false for ``count`` and ``or`` and as
true for ``and``) and gives every lane of the cube the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .batch import Batch
from .values import arr

__all__ = ["sync_units_and", "sync_units_count", "sync_units_or"]


def _per_cube(g: Batch, v: Any, m: Any, inactive: bool) -> np.ndarray:
    """The predicate as a (cubes, units) grid; inactive lanes hold ``inactive``."""
    p = np.broadcast_to(arr(v), (g.n,))
    if m is not None:
        p = np.where(m, p, inactive)
    return p.reshape(g.cubes, g.shape.units)


def _spread(g: Batch, per_cube: Any) -> np.ndarray:
    return np.repeat(per_cube, g.shape.units)


def sync_units_count(g: Batch, v: Any, m: Any) -> Any:
    """The number of active units of each lane's cube where ``v`` holds, as ``u32``."""
    return _spread(g, _per_cube(g, v, m, False).sum(axis=1, dtype=np.uint32))


def sync_units_and(g: Batch, v: Any, m: Any) -> Any:
    """Whether ``v`` holds on every active unit of each lane's cube."""
    return _spread(g, _per_cube(g, v, m, True).all(axis=1))


def sync_units_or(g: Batch, v: Any, m: Any) -> Any:
    """Whether ``v`` holds on any active unit of each lane's cube."""
    return _spread(g, _per_cube(g, v, m, False).any(axis=1))
