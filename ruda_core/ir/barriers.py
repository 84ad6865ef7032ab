"""Asynchronous barriers and bulk copies (Hopper's ``mbarrier`` and ``cp.async.bulk``): the
limits their operations share. The operations are written in :mod:`~ruda_core.ir.ops`; this
module holds data only.
"""

from __future__ import annotations

from .ops import Op
from .types import Elem

__all__ = [
    "BARRIER_ELEM",
    "BARRIER_OPERANDS",
    "BULK_ALIGN_NBYTES",
    "MAX_ARRIVALS",
    "MAX_BOX_ROWS",
    "TENSOR_ROW_NBYTES",
]

#: The element type of a barrier array: one 8-byte word per barrier in shared memory.
BARRIER_ELEM = Elem.U64
#: The alignment of both runs of a bulk copy and the granule of its size, in bytes.
BULK_ALIGN_NBYTES = 16
#: The largest init count of a barrier (PTX's ``mbarrier`` limit, ``2**20 - 1``).
MAX_ARRIVALS = 2**20 - 1
#: The bytes of one row of a tensor copy's box: the span of the 128-byte swizzle.
TENSOR_ROW_NBYTES = 128
#: The most rows of a tensor copy's box (a tensor map's box dimension).
MAX_BOX_ROWS = 256
#: The operands of each operation of :data:`~ruda_core.ir.ops.BARRIER_OPS` (but ``BULK_WAIT``,
#: whose one operand is a constant ``u32`` count), in order: ``"barriers"`` (a barrier array),
#: ``"shared"`` or ``"global"`` (the arrays of a copy, of one element type: a shared array, a
#: global array parameter), ``"u32"`` (a scalar), ``"dim"`` (a ``u32`` scalar parameter of the
#: kernel) and ``"box"`` (a ``u32`` constant).
BARRIER_OPERANDS: dict[Op, tuple[str, ...]] = {
    Op.MBAR_INIT: ("barriers", "u32", "u32"),
    Op.MBAR_ARRIVE: ("barriers", "u32"),
    Op.MBAR_EXPECT_TX: ("barriers", "u32", "u32"),
    Op.MBAR_WAIT: ("barriers", "u32", "u32"),
    Op.BULK_COPY: ("shared", "u32", "global", "u32", "u32", "barriers", "u32"),
    Op.TENSOR_COPY: (
        *("shared", "u32", "global", "dim", "dim", "u32", "u32"),
        *("box", "box", "barriers", "u32"),
    ),
    Op.BULK_FENCE: (),
    Op.BULK_STORE: ("global", "u32", "shared", "u32", "u32"),
    Op.BULK_COMMIT: (),
}
