# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The kernels of :mod:`.bincount`, in the kernel language.

:func:`bincount_shared` counts in shared memory first: each cube zeroes ``nbins`` counters of
its own (a ``SharedMemory`` sized at launch), counts its share of ``x`` into them with shared
atomics, and adds each non-zero counter to the global ``bins`` with one atomic, so global memory
sees one update per cube and bin instead of one per element. :func:`bincount_global` adds every
element straight into ``bins``, for bins that do not fit shared memory. Both count into ``u32``
(fewer than ``2**32`` elements: the operand checks hold that) the values of an integer or
``bool`` ``x`` (a ``bool`` is 0 or 1), and stride over ``x`` with ``ITEMS`` unrolled reads per
unit; :func:`converted` then writes the counts as the result's type.
Every value must be in ``0 .. nbins - 1``: :mod:`.bincount` checks that before launching.
"""

from __future__ import annotations

from ..lang import (
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    SharedMemory,
    atomic_add,
    bool_,
    grid_stride,
    i8,
    i16,
    i32,
    i64,
    kernel,
    sync_units,
    u8,
    u16,
    u32,
    unroll,
)

__all__ = ["bincount_global", "bincount_shared", "converted"]

#: The element types of the values counted (:data:`~.bincount.BIN_INPUTS`).
Counted = ElemVar("Counted", [bool_, i8, u8, i16, u16, i32, u32, i64])
#: The element of the result, the counts written as :func:`converted` converts them.
Target = ElemVar("Target")


@kernel
def bincount_shared(x: Array[Counted], bins: Array[u32], n: u32, nbins: u32, ITEMS: Comptime[int]):
    local = SharedMemory(u32, nbins)
    for k in range(UNIT_POS, nbins, RUDA_DIM):
        local[k] = u32(0)
    sync_units()
    step = RUDA_COUNT * RUDA_DIM * u32(ITEMS)
    base = RUDA_POS * RUDA_DIM * u32(ITEMS) + UNIT_POS
    while base < n:
        for j in unroll(range(ITEMS)):
            i = base + u32(j) * RUDA_DIM
            if i < n:
                atomic_add(local, u32(x[i]), u32(1))
        base += step
    sync_units()
    for k in range(UNIT_POS, nbins, RUDA_DIM):
        c = local[k]
        if c != u32(0):
            atomic_add(bins, k, c)


@kernel
def bincount_global(x: Array[Counted], bins: Array[u32], n: u32, ITEMS: Comptime[int]):
    step = RUDA_COUNT * RUDA_DIM * u32(ITEMS)
    base = RUDA_POS * RUDA_DIM * u32(ITEMS) + UNIT_POS
    while base < n:
        for j in unroll(range(ITEMS)):
            i = base + u32(j) * RUDA_DIM
            if i < n:
                atomic_add(bins, u32(x[i]), u32(1))
        base += step


@kernel
def converted(counts: Array[u32], out: Array[Target], n: u32):
    """``out[i] = counts[i]`` in ``out``'s type."""
    for i in grid_stride(n):
        out[i] = Target(counts[i])
