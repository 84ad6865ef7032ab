"""The geometry of one lockstep batch: builtin position values and per-cube/per-lane memory.

A launch runs as successive batches of whole cubes. In a batch, lane ``k`` is unit
``k % units`` of cube ``first + k // units`` (cubes and units linearised x fastest, as
``BuiltinKind`` fixes). A :class:`Batch` belongs to one call on one thread; it caches what it
computes and is discarded after the batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .derived import Derived
from .poison import poisoned
from .values import Lanes, Split, Units, lanes, wrap

__all__ = ["Batch", "LaunchShape", "SegmentLanes", "Segmented"]

_U32 = np.dtype(np.uint32)
_INTP = np.dtype(np.intp)


class LaunchShape:
    """The geometry of one launch: ``count`` cubes of ``dim`` units, ``plane_dim`` lanes per
    plane. Caches the unit-level vectors that every batch of the same size shares, and keeps
    in ``derived`` what operations derive from them (see
    :class:`~ruda_cpu.lockstep.derived.Derived`)."""

    __slots__ = ("_cache", "count", "cubes", "derived", "dim", "one_d", "plane_dim", "units")

    def __init__(
        self, count: tuple[int, int, int], dim: tuple[int, int, int], plane_dim: int
    ) -> None:
        self.count = count
        self.dim = dim
        self.plane_dim = plane_dim
        self.units = dim[0] * dim[1] * dim[2]
        self.cubes = count[0] * count[1] * count[2]
        #: ABSOLUTE_POS is the lane's position in the whole launch (a contiguous range).
        self.one_d = (count[1] == count[2] == 1 and dim[1] == dim[2] == 1) or self.cubes == 1
        self._cache: dict[tuple[str, int], Any] = {}
        self.derived = Derived()

    def unit_index(self, cubes: int) -> Any:
        """``int64`` unit position of every lane of a batch of ``cubes`` cubes."""
        key = ("unit", cubes)
        if key not in self._cache:
            self._cache[key] = np.tile(np.arange(self.units, dtype=np.int64), cubes)
        return self._cache[key]

    def unit_vector(self, name: str, cubes: int) -> Any:
        """A ``u32`` per-lane vector derived from the unit position: ``x``, ``y``, ``z`` or
        ``plane`` (``UNIT_POS_PLANE``)."""
        key = (name, cubes)
        if key not in self._cache:
            u = self.unit_index(cubes)
            dx, dy, _ = self.dim
            value = {
                "x": lambda: u % dx,
                "y": lambda: (u // dx) % dy,
                "z": lambda: u // (dx * dy),
                "plane": lambda: u % self.plane_dim,
            }[name]()
            self._cache[key] = value.astype(_U32)
        return self._cache[key]

    def unit_value(self, name: str, cubes: int) -> Any:
        """A unit position over a batch of ``cubes`` cubes: ``linear`` (``UNIT_POS``) or a
        name of :meth:`unit_vector`. A :class:`Lanes` or an array over a batch of one cube,
        else a :class:`Units` carrying ``derived``: one object for every batch of that size."""
        key = (f"value {name}", cubes)
        if key not in self._cache:
            one: Any = (
                Lanes(0, 1, self.units, _U32) if name == "linear" else self.unit_vector(name, 1)
            )
            self._cache[key] = one if cubes == 1 else Units(one, cubes, self.derived)
        return self._cache[key]


class Segmented:
    """Shared memory (one segment per cube) or a local array (one segment per lane) of a
    batch: ``data`` holds the segments back to back, ``length`` elements each; lane ``k``
    uses segment ``k // per``. ``padded`` is ``data`` with one segment's worth of elements
    before and after it, so that a view of ``data`` shifted by less than a segment exists.
    Starts poisoned (see ``poison``): a read before a write shows."""

    __slots__ = ("_base", "data", "length", "n", "padded", "per")

    def __init__(self, dtype: np.dtype, length: int, segments: int, per: int) -> None:
        self.padded = poisoned(dtype, (segments + 2) * length)
        self.data = self.padded[length : length + segments * length]
        self.length = length
        self.per = per
        self.n = segments * per
        self._base: np.ndarray | None = None

    @property
    def base(self) -> np.ndarray:
        """``intp`` offset of each lane's segment in ``data``."""
        if self._base is None:
            starts = np.arange(self.n // self.per, dtype=_INTP) * self.length
            self._base = np.repeat(starts, self.per) if self.per > 1 else starts
        return self._base

    def segment_column(self, i: int) -> np.ndarray:
        """Element ``i`` of every lane's segment, one per lane (a new array)."""
        col = self.data.reshape(-1, self.length)[:, i]
        return np.repeat(col, self.per) if self.per > 1 else col.copy()

    def lanes(self, picked: np.ndarray) -> SegmentLanes:
        """The segments of the lanes ``picked`` (``intp`` lane positions), in that order."""
        return SegmentLanes(self, picked)


class SegmentLanes(Segmented):
    """The segments of some lanes of a :class:`Segmented` (lane ``k`` here is lane
    ``picked[k]`` there), sharing its memory: what a branch run over its active lanes alone
    (see ``subsets``) accesses. ``per`` is 0: no unit layout, so accesses take the per-lane
    paths."""

    __slots__ = ()

    def __init__(self, whole: Segmented, picked: np.ndarray) -> None:
        self.padded = whole.padded
        self.data = whole.data
        self.length = whole.length
        self.per = 0
        self.n = picked.shape[0]
        self._base = whole.base[picked]

    def segment_column(self, i: int) -> np.ndarray:
        col: np.ndarray = self.data[self.base + i]
        return col


class Batch:
    """Cubes ``first .. first + cubes - 1`` of a launch. ``views`` says whether loads from
    read-only buffers may return views (no written buffer overlaps them); ``printed`` collects
    the ``(lanes, texts)`` records of its prints (see ``printing``)."""

    __slots__ = ("_cache", "cubes", "first", "n", "printed", "shape", "views")

    def __init__(self, shape: LaunchShape, first: int, cubes: int, views: bool) -> None:
        self.shape = shape
        self.first = first
        self.cubes = cubes
        self.n = cubes * shape.units
        self.views = views
        self._cache: dict[str, Any] = {}
        self.printed: list[tuple[np.ndarray, list[str]]] = []

    # --- memory -------------------------------------------------------------------------------

    def shared(self, dtype: type[np.generic], length: int) -> Segmented:
        """A poisoned shared array: one segment per cube of this batch."""
        return Segmented(np.dtype(dtype), length, self.cubes, self.shape.units)

    def local_array(self, dtype: type[np.generic], length: int) -> Segmented:
        """A poisoned local array: one segment per lane of this batch."""
        return Segmented(np.dtype(dtype), length, self.n, 1)

    # --- unit positions -----------------------------------------------------------------------

    def _unit(self, name: str) -> Any:
        """A unit position over one cube (a Lanes for the linear one), repeated per cube."""
        return self.shape.unit_value(name, self.cubes)

    def unit_pos(self) -> Any:
        return self._unit("linear")

    def unit_pos_x(self) -> Any:
        _dx, dy, dz = self.shape.dim
        return self._unit("linear" if dy * dz == 1 else "x")

    def unit_pos_y(self) -> Any:
        dx, dy, dz = self.shape.dim
        if dy == 1:
            return _U32.type(0)
        return self._unit("linear" if dx == dz == 1 else "y")

    def unit_pos_z(self) -> Any:
        dx, dy, dz = self.shape.dim
        if dz == 1:
            return _U32.type(0)
        return self._unit("linear" if dx * dy == 1 else "z")

    def unit_pos_plane(self) -> Any:
        if self.shape.units <= self.shape.plane_dim:
            return self.unit_pos()
        return self._unit("plane")

    # --- cube positions -----------------------------------------------------------------------

    def _cube_axis(self, axis: int) -> Any:
        """The cube coordinate along ``axis`` (0..2, or 3 for the linear index) of every cube
        of the batch (``int64``); a Python int when the batch is one cube."""
        cx, cy, _ = self.shape.count
        if self.cubes == 1:
            cube: Any = self.first
        else:
            cube = np.arange(self.first, self.first + self.cubes, dtype=np.int64)
        if axis == 0:
            cube = cube % cx
        elif axis == 1:
            cube = (cube // cx) % cy
        elif axis == 2:
            cube = cube // (cx * cy)
        return cube

    def _cube_coord(self, axis: int, lanes_dtype: np.dtype) -> Any:
        """The cube coordinate along ``axis`` of every lane, in ``lanes_dtype``; a Python int
        when the batch is one cube."""
        cube = self._cube_axis(axis)
        if self.cubes == 1:
            return cube
        return np.repeat(cube.astype(lanes_dtype), self.shape.units)

    def _cube_value(self, axis: int) -> Any:
        """A cube position: uniform in a batch of one cube, a lane vector over cubes of one
        unit, else a :class:`Split` (one value per cube, none per unit)."""
        _cx, cy, cz = self.shape.count
        linear = axis == 3 or (axis == 0 and cy == cz == 1)
        if self.shape.units == 1 and self.cubes > 1 and linear:
            return lanes(self.first, 1, self.n, _U32)
        cube = self._cube_axis(axis)
        if isinstance(cube, int):
            return wrap(cube, _U32)
        return Split(cube.astype(_U32), _U32.type(0), self.shape.units)

    def ruda_pos(self) -> Any:
        return self._cube_value(3)

    def ruda_pos_x(self) -> Any:
        return self._cube_value(0)

    def ruda_pos_y(self) -> Any:
        return self._cube_value(1)

    def ruda_pos_z(self) -> Any:
        return self._cube_value(2)

    # --- absolute positions -------------------------------------------------------------------

    def _absolute(self, axis: int) -> Any:
        """int64 absolute position along ``axis`` (0..2) of every lane."""
        unit = self.shape.unit_index(self.cubes)
        dx, dy, _ = self.shape.dim
        if axis == 0:
            unit_axis = unit % dx
        elif axis == 1:
            unit_axis = (unit // dx) % dy
        else:
            unit_axis = unit // (dx * dy)
        return self._cube_coord(axis, np.dtype(np.int64)) * self.shape.dim[axis] + unit_axis

    def absolute_pos(self) -> Any:
        shape = self.shape
        if shape.one_d:
            return lanes(self.first * shape.units, 1, self.n, _U32)
        cx, cy, _ = shape.count
        dx, dy, _ = shape.dim
        width, height = cx * dx, cy * dy
        lin = (self._absolute(2) * height + self._absolute(1)) * width + self._absolute(0)
        return lin.astype(_U32)

    def absolute_pos_x(self) -> Any:
        if self.shape.one_d and self.shape.dim[1] == self.shape.dim[2] == 1:
            return lanes(self.first * self.shape.units, 1, self.n, _U32)
        return self._absolute(0).astype(_U32)

    def absolute_pos_y(self) -> Any:
        return self._absolute(1).astype(_U32)

    def absolute_pos_z(self) -> Any:
        return self._absolute(2).astype(_U32)

    # --- launch sizes -------------------------------------------------------------------------

    def ruda_dim(self) -> Any:
        return wrap(self.shape.units, _U32)

    def ruda_dim_x(self) -> Any:
        return wrap(self.shape.dim[0], _U32)

    def ruda_dim_y(self) -> Any:
        return wrap(self.shape.dim[1], _U32)

    def ruda_dim_z(self) -> Any:
        return wrap(self.shape.dim[2], _U32)

    def ruda_count(self) -> Any:
        return wrap(self.shape.cubes, _U32)

    def ruda_count_x(self) -> Any:
        return wrap(self.shape.count[0], _U32)

    def ruda_count_y(self) -> Any:
        return wrap(self.shape.count[1], _U32)

    def ruda_count_z(self) -> Any:
        return wrap(self.shape.count[2], _U32)

    # --- planes -------------------------------------------------------------------------------

    def planes(self) -> tuple[int, np.ndarray | None]:
        """``(plane_dim, pos)``: lane ``k`` sits at ``pos[k]`` of a (planes, plane_dim) grid
        (``pos`` is None when that is ``k`` itself: the cube size is a multiple of plane_dim).
        """
        units, pd = self.shape.units, self.shape.plane_dim
        if units % pd == 0:
            return pd, None
        if "planes" not in self._cache:
            per_cube = -(-units // pd) * pd
            starts = np.arange(self.cubes, dtype=_INTP) * per_cube
            unit = np.arange(units, dtype=_INTP)
            self._cache["planes"] = (starts[:, None] + unit[None, :]).reshape(-1)
        return pd, self._cache["planes"]
