# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Collectives of a whole cube, written in the kernel language: ``units_sum``, ``units_min``,
``units_max`` (every unit gets the cube's result) and ``units_inclusive_sum``,
``units_exclusive_sum`` (each unit gets the sum over the units before it in ``UNIT_POS`` order,
itself included or not).

Each combines one plane operation per plane (``plane_sum``, ``plane_min`` …) with a pass over
the planes' partials in ``SharedMemory``, in groups of :data:`SLOTS` consecutive planes. Group
by group, the first lane of each of its planes writes the plane's partial into one half of a
scratch of ``2 * SLOTS`` elements (the halves alternate, so one barrier a group suffices) and the
group's own units fold its partials in plane order; with more than one group, the first unit of
each group then writes the group's fold and every unit folds those in group order (``SLOTS`` at
a time), between two barriers. A cube of at most ``SLOTS`` planes (every cube of up to 2,048
units on planes of 32) is one group: two barriers, each unit reading at most ``SLOTS``
partials. It holds for any cube size and any plane width (a last plane that is only partly
filled, planes of one lane), and every backend runs it through the IR's plane operations and
barriers.

Planes of one lane (OpenCL devices without subgroups, the reference device at
``RUDA_CPU_PLANE_DIM=1``) make each unit a plane: 1,024 units are 16 groups, 19 barriers, and
each unit reads at most 64 + 16 partials, where every unit folding every partial would read
1,024 (``docs/architecture.md``, "Planes of one lane", has the times). A shared-memory tree
over the units (``log2(n)`` barriers) would need a slot per unit, fixed when the kernel is
built; these functions take no cube size, and kernels that size their own shared memory to the
device's limit count on the collectives' scratch staying small.

Contract, as for ``sync_units()``: every unit of the cube calls it, in uniform control flow (the
reference device's sanitizer reports a barrier that some unit does not reach). Integer results
wrap as the type's arithmetic does, and are exact, as are ``min`` and ``max``. Float sums add each
plane's values in the plane operation's order, then the planes' partials in plane order (each
group's, then the groups' sums): with ``P = PLANE_DIM`` and ``n = RUDA_DIM`` the error is at
most about ``(log2(P) + ceil(n / P)) * eps * sum(|v|)`` (``eps`` of the element type); values
whose partial sums are exactly representable (small integers in ``f32``) sum exactly.
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
from .types import Array, Comptime, ElemVar, Numeric, u32

__all__ = [
    "SLOTS",
    "units_exclusive_sum",
    "units_inclusive_sum",
    "units_max",
    "units_min",
    "units_sum",
]

#: The planes of a group, whose partials one round of a cube collective folds: its scratch holds
#: two groups' partials (512 bytes of ``f32``, 1 KiB of ``f64``, per call).
SLOTS = 64

#: The element of a cube collective: any number the plane operations take.
Num = ElemVar("Num", Numeric)


@func
def _combine(a: Num, b: Num, KIND: Comptime[str]) -> Num:
    """``a`` and ``b`` combined as ``KIND`` says (``"prefix"`` sums)."""
    if KIND == "min":
        return min(a, b)
    if KIND == "max":
        return max(a, b)
    return a + b


@func
def _fold(
    scratch: Array[Num], first: u32, count: u32, before: u32, KIND: Comptime[str]
) -> tuple[Num, Num]:
    """The ``count`` (>= 1) slots of ``scratch`` from ``first`` folded in order, and for
    ``"prefix"`` the sum of the first ``before`` of them (0 otherwise)."""
    whole = scratch[first]
    head = Num(0)
    if KIND == "prefix" and before > u32(0):
        head = whole
    for j in range(u32(1), count):
        v = scratch[first + j]
        whole = _combine(whole, v, KIND)
        if KIND == "prefix" and j < before:
            head += v
    return whole, head


@func
def _across_planes(partial: Num, KIND: Comptime[str]) -> Num:
    """Fold every plane's ``partial`` (the same on each lane of a plane) over the cube.

    ``KIND`` is ``"sum"``, ``"min"`` or ``"max"`` (all planes, to every unit) or ``"prefix"``
    (the sum over the planes before the calling unit's). Every unit of the cube calls it.
    """
    scratch = SharedMemory(Num, 2 * SLOTS)
    planes = (RUDA_DIM + PLANE_DIM - u32(1)) // PLANE_DIM
    plane = UNIT_POS // PLANE_DIM
    group = plane // u32(SLOTS)
    groups = (planes + u32(SLOTS - 1)) // u32(SLOTS)
    slot = plane - group * u32(SLOTS)
    # each group of SLOTS planes in turn, folded by its own units
    whole = Num(0)
    head = Num(0)
    g = u32(0)
    while g < groups:
        half = (g % u32(2)) * u32(SLOTS)
        if group == g and UNIT_POS_PLANE == u32(0):
            scratch[half + slot] = partial
        sync_units()
        # one group is a branch the whole cube takes, which a compiler that vectorises across
        # units (Intel's CPU OpenCL) keeps whole: 1,024 units on planes of 16, 0.37 to 0.20 ms
        if groups == u32(1):
            whole, head = _fold(scratch, u32(0), planes, slot, KIND)
        elif group == g:
            count = min(planes - g * u32(SLOTS), u32(SLOTS))
            whole, head = _fold(scratch, half, count, slot, KIND)
        g += u32(1)
    sync_units()
    # the groups' folds, SLOTS at a time, by every unit
    if groups > u32(1):
        mine = whole
        base = u32(0)
        while base < groups:
            inside = group >= base and group - base < u32(SLOTS)
            if inside and slot == u32(0) and UNIT_POS_PLANE == u32(0):
                scratch[group - base] = mine
            sync_units()
            before = min(group - base, u32(SLOTS)) if group >= base else u32(0)
            part, earlier = _fold(scratch, u32(0), min(groups - base, u32(SLOTS)), before, KIND)
            whole = part if base == u32(0) else _combine(whole, part, KIND)
            head += earlier
            sync_units()
            base += u32(SLOTS)
    if KIND == "prefix":
        return head
    return whole


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
