# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Cube-wide sums, minima, maxima and exclusive sums for the device-wide primitives, on devices
with planes and without (kernel language).

With ``PLANES`` these are the language's ``units_sum`` / ``units_min`` / ``units_max`` /
``units_exclusive_sum``; without (a device that offers no plane operations, such as WebGPU
adapters without subgroups or PoCL) they go through a ``SharedMemory`` of ``UNITS`` elements: a
tree for the reductions and a Hillis-Steele scan for the exclusive sum, ``log2(UNITS)`` steps
each. ``UNITS`` is the cube's unit count (``RUDA_DIM``) and a power of two. Every unit of the cube
calls them, in control flow the whole cube takes alike (they hold barriers). Integer results and
``min``/``max`` are exact; a float sum's error is at most about ``log2(UNITS) * eps * sum(|v|)``
on the shared path (the planes' bound otherwise, :mod:`ruda_core.lang.collectives`).
"""

from __future__ import annotations

from ..lang import (
    UNIT_POS,
    Comptime,
    ElemVar,
    Numeric,
    SharedMemory,
    func,
    sync_units,
    u32,
    units_exclusive_sum,
    units_max,
    units_min,
    units_sum,
)

__all__ = ["cube_exclusive_sum", "cube_reduce"]

#: The element of a cube fold.
Num = ElemVar("Num", Numeric)


@func
def _pair(a: Num, b: Num, KIND: Comptime[str]) -> Num:
    if KIND == "sum":
        return a + b
    if KIND == "min":
        return min(a, b)
    return max(a, b)


@func
def cube_reduce(value: Num, KIND: Comptime[str], PLANES: Comptime[bool], UNITS: Comptime[int]):
    """The ``KIND`` (``"sum"``, ``"min"``, ``"max"``) of ``value`` over the cube, to every unit."""
    if PLANES:
        if KIND == "sum":
            return units_sum(value)
        if KIND == "min":
            return units_min(value)
        return units_max(value)
    scratch = SharedMemory(Num, UNITS)
    scratch[UNIT_POS] = value
    sync_units()
    step = u32(UNITS // 2)
    while step > u32(0):
        if UNIT_POS < step:
            scratch[UNIT_POS] = _pair(scratch[UNIT_POS], scratch[UNIT_POS + step], KIND)
        sync_units()
        step = step // u32(2)
    total = scratch[0]
    sync_units()
    return total


@func
def cube_exclusive_sum(value: Num, PLANES: Comptime[bool], UNITS: Comptime[int]):
    """The sum of ``value`` over the units before the caller's ``UNIT_POS`` (0 for the first)."""
    if PLANES:
        return units_exclusive_sum(value)
    scratch = SharedMemory(Num, UNITS)
    scratch[UNIT_POS] = value
    sync_units()
    step = u32(1)
    while step < u32(UNITS):
        add = scratch[UNIT_POS - step] if UNIT_POS >= step else Num(0)
        sync_units()
        scratch[UNIT_POS] += add
        sync_units()
        step = step * u32(2)
    before = scratch[UNIT_POS - u32(1)] if UNIT_POS > u32(0) else Num(0)
    sync_units()
    return before
