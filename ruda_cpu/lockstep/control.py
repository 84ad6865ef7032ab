"""Execution masks and range loops of the lockstep runtime.

A *mask* is ``None`` (every lane active), ``False`` (no lane active) or a boolean array with at
least one true and one false element: masks are normalised so that generated code can test
``m is not False`` before running a block. This module holds no state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .values import (
    Lanes,
    Split,
    UnitMask,
    Units,
    Value,
    add,
    arr,
    blend,
    unit_runs,
    unit_spans,
    units_of,
    wrap,
)

__all__ = [
    "iter_mask",
    "mask_and",
    "mask_andnot",
    "merge",
    "merge_fresh",
    "most",
    "range_value",
    "trip_count",
]

Mask = Any  # None | False | np.ndarray of bool


def _normalise(m: np.ndarray) -> Mask:
    one = m.one if type(m) is UnitMask else None
    count = (
        np.count_nonzero(m) if one is None else np.count_nonzero(one) * (m.shape[0] // one.shape[0])
    )
    if count == m.shape[0]:
        return None
    if count == 0:
        return False
    return m


def mask_and(m: Mask, c: Value) -> Mask:
    """The lanes of mask ``m`` where ``c`` (a mask or a bool value) holds."""
    if m is False or c is None:
        return m
    if c is False:
        return False
    if isinstance(c, np.generic):
        return m if c else False
    if m is None:
        return _normalise(c)
    both = units_of(m, c)
    if both is not None:
        if m.memo is None:
            return _and_units(m, c, both)
        return m.memo.get((m, c), mask_and, lambda: _and_units(m, c, both))
    return _normalise(m & c)


def _and_units(m: Mask, c: Mask, both: tuple[np.ndarray, np.ndarray]) -> Mask:
    """:func:`mask_and` of two masks that keep their units ``both``, over one cube's units."""
    one = both[0] & both[1]
    for whole in (m, c):  # a bounds test that the branch's own condition implies
        if np.array_equal(one, whole.one):
            return _normalise(whole)
    return _normalise(UnitMask.tiled(one, m.shape[0] // one.shape[0], m.memo))


def mask_andnot(m: Mask, c: Value) -> Mask:
    """The lanes of mask ``m`` where ``c`` (a mask or a bool value) does not hold."""
    if m is False or c is False:
        return m
    if c is None:
        return False
    if isinstance(c, np.generic):
        return False if c else m
    if m is None:
        if type(c) is UnitMask and c.one is not None:
            return _normalise(UnitMask.tiled(~c.one, c.shape[0] // c.one.shape[0], c.memo))
        return _normalise(~c)
    both = units_of(m, c)
    if both is not None:
        cubes = m.shape[0] // both[0].shape[0]
        return _normalise(UnitMask.tiled(both[0] & ~both[1], cubes, m.memo))
    return _normalise(m & ~c)


def merge(m: Mask, new: Value, old: Value) -> Value:
    """The value of a variable assigned ``new`` under mask ``m`` that held ``old`` before."""
    if m is None:
        return new
    if m is False:
        return old
    return blend(m, new, old)


def merge_fresh(m: Mask, new: Value, old: Value) -> Value:
    """:func:`merge` where ``new`` was just computed by a NumPy operator or function, so that
    an array it is is shared with no other value: under a mask covering ranges of units (see
    ``unit_runs``), ``old``'s other units are written into it, and it is returned."""
    if m is None:
        return new
    if m is False:
        return old
    runs = unit_runs(m)
    if (
        runs is None
        or type(new) is not np.ndarray
        or new.base is not None
        or new.shape != m.shape
        or new.dtype != np.result_type(old)
    ):
        return blend(m, new, old)
    units = runs[0]
    rows = new.reshape(-1, units)
    source = old.reshape(-1, units) if isinstance(old, np.ndarray) else None
    for j0, j1, inside in unit_spans(units, runs[1]):
        if not inside:
            rows[:, j0:j1] = old if source is None else source[:, j0:j1]
    return new


# --- range loops ----------------------------------------------------------------------------------


def trip_count(start: Value, end: Value, step: int) -> Any:
    """Iterations of ``range(start, end, step)`` per lane: a Python int when uniform, else an
    array of ``uint64``. Exact for every integer type (no wrap-around)."""
    if isinstance(start, np.generic) and isinstance(end, np.generic):
        return len(range(int(start), int(end), step))
    s, e = arr(start), arr(end)
    dtype = np.result_type(s, e)
    unsigned = np.dtype(f"u{dtype.itemsize}")
    if step > 0:
        going, span = e > s, np.asarray(e).astype(unsigned) - np.asarray(s).astype(unsigned)
    else:
        going, span = s > e, np.asarray(s).astype(unsigned) - np.asarray(e).astype(unsigned)
    size = abs(step)
    trips = span.astype(np.uint64) // np.uint64(size)
    trips += (span.astype(np.uint64) % np.uint64(size)) != 0
    return np.where(going, trips, np.uint64(0))


def most(trips: Any) -> int:
    """The largest trip count of :func:`trip_count`'s result."""
    if type(trips) is int:
        return trips
    return int(trips.max()) if trips.shape[0] else 0


def iter_mask(loop_mask: Mask, j: int, trips: Any) -> Mask:
    """The lanes of ``loop_mask`` that run iteration ``j`` of a range loop."""
    if type(trips) is int:
        return loop_mask if j < trips else False
    return mask_and(loop_mask, trips > np.uint64(j))


def range_value(start: Value, j: int, step: int) -> Value:
    """``start + j * step`` in ``start``'s type, wrapping."""
    if type(start) is Lanes or type(start) is Units or type(start) is Split:
        return add(start, wrap(j * step, start.dtype))
    dtype = np.result_type(start)
    return start + wrap(j * step, dtype)
