"""A host model of plane operations, for any plane width and cube size, that device results are
compared with.

It follows the semantics of :mod:`ruda_core.ir.ops`: a plane is ``plane`` consecutive units of
one cube, the last plane of a cube whose unit count is not a multiple of ``plane`` has only the
lanes that exist, and every operation acts over those. It is written plane by plane, apart from
the NumPy reference device's vectorised implementation, so that each checks the other. Every
unit takes part (the uniform rule); integer arithmetic wraps in the values' type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["PlaneModel"]

#: Lanes from this one up have no bit in a ballot.
_BALLOT_LANES = 32


class PlaneModel:
    """The planes of ``cubes`` cubes of ``units`` units each (units numbered as ``ABSOLUTE_POS``
    of a one-dimensional launch), in planes of ``plane`` lanes.

    Each method takes one value per unit and returns each unit's result.
    """

    __slots__ = ("_slices", "first", "lane", "lanes", "plane")

    def __init__(self, cubes: int, units: int, plane: int) -> None:
        if min(cubes, units, plane) < 1:
            raise ValueError(
                f"a plane model needs cubes, units and plane >= 1, not {cubes, units, plane}"
            )
        self.plane = plane
        unit = np.tile(np.arange(units), cubes)
        start = np.repeat(np.arange(cubes) * units, units)
        #: Each unit's lane (``UNIT_POS_PLANE``), its plane's first unit and its plane's lanes.
        self.lane = unit % plane
        self.first = start + unit - self.lane
        self.lanes = np.minimum(units - (unit - self.lane), plane)
        self._slices = [
            slice(c * units + s, c * units + min(s + plane, units))
            for c in range(cubes)
            for s in range(0, units, plane)
        ]

    def _per_plane(self, x: np.ndarray, fn: Callable[[np.ndarray], object]) -> np.ndarray:
        out = np.empty_like(x)
        for s in self._slices:
            out[s] = fn(x[s])
        return out

    def sum(self, x: np.ndarray) -> np.ndarray:
        return self._per_plane(x, lambda p: p.sum(dtype=x.dtype))

    def prod(self, x: np.ndarray) -> np.ndarray:
        return self._per_plane(x, lambda p: p.prod(dtype=x.dtype))

    def min(self, x: np.ndarray) -> np.ndarray:
        return self._per_plane(x, np.min)

    def max(self, x: np.ndarray) -> np.ndarray:
        return self._per_plane(x, np.max)

    def all(self, p: np.ndarray) -> np.ndarray:
        return self._per_plane(p, np.all)

    def any(self, p: np.ndarray) -> np.ndarray:
        return self._per_plane(p, np.any)

    def inclusive_sum(self, x: np.ndarray) -> np.ndarray:
        return self._per_plane(x, lambda p: np.cumsum(p, dtype=x.dtype))

    def exclusive_sum(self, x: np.ndarray) -> np.ndarray:
        return self._per_plane(x, lambda p: np.cumsum(p, dtype=x.dtype) - p)

    def ballot(self, p: np.ndarray) -> np.ndarray:
        """``u32``: bit ``k`` set when lane ``k`` (below 32) exists and its ``p`` holds."""
        bits = np.where(p & (self.lane < _BALLOT_LANES), 1 << np.minimum(self.lane, 31), 0)
        return self._per_plane(bits.astype(np.uint64), np.sum).astype(np.uint32)

    def elect(self) -> np.ndarray:
        return np.asarray(self.lane == 0)

    def _read(self, x: np.ndarray, src: np.ndarray, outside: np.ndarray | int) -> np.ndarray:
        """``x`` of lane ``src`` of each unit's plane where that lane exists, else ``outside``."""
        inside = (src >= 0) & (src < self.lanes)
        return np.where(inside, x[self.first + np.where(inside, src, 0)], outside)

    def broadcast(self, x: np.ndarray, lane: int) -> np.ndarray:
        return self._read(x, np.full(x.size, lane, np.int64), 0).astype(x.dtype)

    def shuffle(self, x: np.ndarray, src: np.ndarray) -> np.ndarray:
        return self._read(x, src.astype(np.int64), 0).astype(x.dtype)

    def shuffle_up(self, x: np.ndarray, delta: np.ndarray) -> np.ndarray:
        return self._read(x, self.lane - delta.astype(np.int64), x)

    def shuffle_down(self, x: np.ndarray, delta: np.ndarray) -> np.ndarray:
        return self._read(x, self.lane + delta.astype(np.int64), x)

    def shuffle_xor(self, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._read(x, self.lane ^ mask.astype(np.int64), x)
