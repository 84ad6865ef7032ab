# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""Kernels of tensor copies (``mbarrier.tensor_copy``, the tensor memory accelerator's 2-D
form) that the conformance suite runs on every device that has them and the compile tests
build for CUDA.

:func:`tensor_boxes` walks the boxes of a ``rows x cols`` matrix (``across`` boxes a row of
boxes, those past the matrix's edges included): cube ``c`` copies boxes ``c * BOXES ..`` in turn
through two shared slots, each a ``BOX_ROWS x BOX_COLS`` box in the 128-byte swizzle, and its
units write each box out unswizzled, box after box: ``out`` is every box of the matrix padded
with zeros, in box order.
"""

from __future__ import annotations

from ruda_core.lang import (
    RUDA_POS,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    Numeric,
    SharedMemory,
    kernel,
    mbarrier,
    sync_units,
    u32,
)

__all__ = ["T", "tensor_boxes"]

#: The element of the matrix.
T = ElemVar("T", Numeric)


@kernel
def tensor_boxes(
    src: Array[T],
    out: Array[T],
    rows: u32,
    cols: u32,
    across: u32,
    BOX_ROWS: Comptime[int],
    BOX_COLS: Comptime[int],
    BOXES: Comptime[int],
    SLOTS: Comptime[int],
    UNITS: Comptime[int],
):
    """Every box of ``src`` (``rows x cols``) unswizzled into ``out`` in box order (see the
    module docstring); cubes of ``UNITS`` units; a 16-byte chunk holds ``BOX_COLS // 8``
    elements."""
    BOX = BOX_ROWS * BOX_COLS
    SLOT = (BOX_ROWS + 7) // 8 * 8 * BOX_COLS
    per_chunk = BOX_COLS // 8
    tiles = SharedMemory(T, SLOTS * SLOT)
    full = mbarrier.Barriers(SLOTS)
    if UNIT_POS == 0:
        for k in range(SLOTS):
            mbarrier.init(full, k, 1)
    sync_units()
    for j in range(BOXES):
        slot = u32(j % SLOTS)
        box = RUDA_POS * u32(BOXES) + u32(j)
        if UNIT_POS == 0:
            mbarrier.arrive_expect_tx(full, slot, u32(BOX_ROWS * 128))
            row, col = box // across * u32(BOX_ROWS), box % across * u32(BOX_COLS)
            mbarrier.tensor_copy(
                tiles, slot * u32(SLOT), src, rows, cols, row, col, BOX_ROWS, BOX_COLS, full, slot
            )
        mbarrier.wait(full, slot, u32((j // SLOTS) % 2))
        for e in range(UNIT_POS, u32(BOX), u32(UNITS)):
            r, c = e // u32(BOX_COLS), e % u32(BOX_COLS)
            chunk = (c // u32(per_chunk)) ^ (r % u32(8))
            at = r * u32(BOX_COLS) + chunk * u32(per_chunk) + c % u32(per_chunk)
            out[box * u32(BOX) + e] = tiles[slot * u32(SLOT) + at]
        sync_units()  # every unit has read the slot before it is filled again
