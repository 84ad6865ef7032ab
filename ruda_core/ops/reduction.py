# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Cube-wide reductions of the portable operations, as device functions (kernel language).

``Acc`` is the accumulator element variable; ``cube_sum`` adds one value per unit over a whole
cube and gives the total to every unit, either through planes (``plane_sum`` per plane, then one
more ``plane_sum`` over the planes' partial sums) or through a shared-memory tree. Which path
and cube size a device gets is :mod:`.geometry`'s choice. Nothing here runs on import.
"""

from __future__ import annotations

from ..lang import (
    PLANE_DIM,
    RUDA_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    Comptime,
    ElemVar,
    f32,
    f64,
    func,
    plane_sum,
    sync_units,
)

__all__ = ["Acc", "cube_sum"]

#: The accumulator element of the portable operations: ``f32`` for ``f16``/``bf16``/``f32``
#: data, ``f64`` for ``f64`` data (:func:`.geometry.accumulator` on the host).
Acc = ElemVar("Acc", [f32, f64])


@func
def cube_sum(value: Acc, scratch, PLANES: Comptime[bool]) -> Acc:
    """The sum of ``value`` over the ``RUDA_DIM`` units of the cube, returned to every unit.

    Every unit of the cube must call it (it holds barriers); ``scratch`` is a ``SharedMemory``
    of ``Acc`` with at least ``RUDA_DIM`` elements and may be reused after the call. With
    ``PLANES`` it reduces through planes (``RUDA_DIM`` a multiple of ``PLANE_DIM`` and at most
    ``PLANE_DIM ** 2``), else through a shared-memory tree (``RUDA_DIM`` a power of two).
    """
    if PLANES:
        partial = plane_sum(value)
        if UNIT_POS_PLANE == 0:
            scratch[UNIT_POS // PLANE_DIM] = partial
        sync_units()
        planes = RUDA_DIM // PLANE_DIM
        part = scratch[UNIT_POS_PLANE] if UNIT_POS_PLANE < planes else Acc(0)
        total = plane_sum(part)
        sync_units()
        return total
    scratch[UNIT_POS] = value
    sync_units()
    stride = RUDA_DIM // 2
    while stride > 0:
        if UNIT_POS < stride:
            scratch[UNIT_POS] += scratch[UNIT_POS + stride]
        sync_units()
        stride //= 2
    total = scratch[0]
    sync_units()
    return total
