# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Collectives of a whole cube, written in the kernel language: ``units_sum``, ``units_min``,
``units_max`` (every unit gets the cube's result) and ``units_inclusive_sum``,
``units_exclusive_sum`` (each unit gets the sum over the units before it in ``UNIT_POS`` order,
itself included or not).

Each combines one plane operation per plane (``plane_sum``, ``plane_min`` …) with a pass over
the planes' partials: the first lane of each plane writes its plane's partial into a
``SharedMemory`` scratch of :data:`SLOTS` elements, a barrier, every unit folds the partials in
plane order, a barrier; cubes of more than :data:`SLOTS` planes take one such round per
:data:`SLOTS` planes. It holds for any cube size and any plane width (a last plane that is only
partly filled, planes of one lane), and every backend runs it through the IR's plane operations
and barriers.

Contract, as for ``sync_units()``: every unit of the cube calls it, in uniform control flow (the
reference device's sanitizer reports a barrier that some unit does not reach). Integer results
wrap as the type's arithmetic does, and are exact, as are ``min`` and ``max``. Float sums add each
plane's values in the plane operation's order, then the planes' partials in plane order: with
``P = PLANE_DIM`` and ``n = RUDA_DIM`` the error is at most about
``(log2(P) + ceil(n / P)) * eps * sum(|v|)`` (``eps`` of the element type); values whose partial
sums are exactly representable (small integers in ``f32``) sum exactly.
"""

from __future__ import annotations

from .builtins import (
    PLANE_DIM,
    RUDA_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    SharedMemory,
    plane_exclusive_sum,
    plane_inclusive_sum,
    plane_max,
    plane_min,
    plane_sum,
    sync_units,
)
from .func import func
from .types import Comptime, ElemVar, Numeric, u32

__all__ = [
    "SLOTS",
    "units_exclusive_sum",
    "units_inclusive_sum",
    "units_max",
    "units_min",
    "units_sum",
]

#: The planes' partials one round of a cube collective holds in shared memory.
SLOTS = 32

#: The element of a cube collective: any number the plane operations take.
Num = ElemVar("Num", Numeric)


@func
def _across_planes(partial: Num, KIND: Comptime[str]) -> Num:
    """Fold every plane's ``partial`` (the same on each lane of a plane) over the cube.

    ``KIND`` is ``"sum"``, ``"min"`` or ``"max"`` (all planes, to every unit) or ``"prefix"``
    (the sum over the planes before the calling unit's). Every unit of the cube calls it.
    """
    scratch = SharedMemory(Num, SLOTS)
    planes = (RUDA_DIM + PLANE_DIM - u32(1)) // PLANE_DIM
    plane = UNIT_POS // PLANE_DIM
    total = Num(0)
    base = u32(0)
    while base < planes:
        if UNIT_POS_PLANE == u32(0) and plane >= base and plane < base + u32(SLOTS):
            scratch[plane - base] = partial
        sync_units()
        count = min(planes - base, u32(SLOTS))
        for j in range(count):
            if KIND == "prefix":
                if base + j < plane:
                    total += scratch[j]
            elif KIND == "sum":
                total += scratch[j]
            elif base + j == u32(0):
                total = scratch[0]
            elif KIND == "min":
                total = min(total, scratch[j])
            else:
                total = max(total, scratch[j])
        sync_units()
        base += u32(SLOTS)
    return total


@func
def units_sum(value: Num) -> Num:
    """The sum of ``value`` over the cube's units, to every unit (a barrier: all units call it)."""
    return _across_planes(plane_sum(value), "sum")


@func
def units_min(value: Num) -> Num:
    """The least ``value`` of the cube's units, to every unit (a barrier: all units call it)."""
    return _across_planes(plane_min(value), "min")


@func
def units_max(value: Num) -> Num:
    """The greatest ``value`` of the cube's units, to every unit (a barrier: all units call it)."""
    return _across_planes(plane_max(value), "max")


@func
def units_inclusive_sum(value: Num) -> Num:
    """The sum of ``value`` over the units up to the caller's ``UNIT_POS``, itself included (a
    barrier: every unit calls it)."""
    return _across_planes(plane_sum(value), "prefix") + plane_inclusive_sum(value)


@func
def units_exclusive_sum(value: Num) -> Num:
    """The sum of ``value`` over the units before the caller's ``UNIT_POS`` (0 for the first; a
    barrier: every unit calls it)."""
    return _across_planes(plane_sum(value), "prefix") + plane_exclusive_sum(value)
