"""Warpgroup matrices (Hopper's ``wgmma``): the shape rules, the 128-byte swizzle of their shared
operands and the executable form of their arithmetic. The operations are written in
:mod:`~ruda_core.ir.ops`; this module holds data and NumPy arithmetic only.

A warpgroup is :data:`WARPGROUP_UNITS` consecutive units of a cube. Its accumulator is a
:class:`~ruda_core.ir.matrix.Fragment` of role ``WARPGROUP``: ``m = 64`` rows, ``n`` columns
(:data:`WARPGROUP_NS`), ``k = 16`` (the depth of one ``WGMMA_MMA``), ``f32`` elements.
"""

from __future__ import annotations

import numpy as np

from .matrix import multiply_accumulate
from .types import Elem

__all__ = [
    "SWIZZLE_ALIGN_NBYTES",
    "SWIZZLE_ATOM",
    "SWIZZLE_ROW",
    "WARPGROUP_ELEMS",
    "WARPGROUP_K",
    "WARPGROUP_M",
    "WARPGROUP_NS",
    "WARPGROUP_UNITS",
    "operand_indices",
    "swizzle",
    "warpgroup_product",
]

#: Units of one warpgroup (four planes of 32).
WARPGROUP_UNITS = 128
#: Rows of a warpgroup accumulator and of the ``A`` operand.
WARPGROUP_M = 64
#: The depth of one ``WGMMA_MMA``: columns of ``A``, rows of ``B``.
WARPGROUP_K = 16
#: The column counts an accumulator may have (PTX's ``m64nNk16``).
WARPGROUP_NS = tuple(range(8, 257, 8))
#: The element types of the operands; the accumulator is ``f32``.
WARPGROUP_ELEMS = frozenset({Elem.BF16, Elem.F16})
#: Elements of one swizzled row (128 bytes of a 16-bit type).
SWIZZLE_ROW = 64
#: Elements of one swizzle atom: 8 rows, 1024 bytes, the alignment of every operand block.
SWIZZLE_ATOM = 512
#: The alignment of a shared array that holds swizzled operands.
SWIZZLE_ALIGN_NBYTES = 1024


def swizzle(e: np.ndarray) -> np.ndarray:
    """The stored element index of the logical index ``e`` (16-bit elements) under the
    128-byte swizzle: 16-byte chunk ``c`` of 128-byte row ``r`` lives at chunk ``c ^ (r % 8)``,
    that is ``e ^ (((e >> 6) & 7) << 3)``."""
    e = np.asarray(e, dtype=np.int64)
    stored: np.ndarray = e ^ (((e >> 6) & 7) << 3)
    return stored


def operand_indices(
    a_at: np.ndarray, b_at: np.ndarray, block: int, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The logical element indices (before :func:`swizzle`) of ``A`` (``(…, 64, 16)``) and
    ``B`` (``(…, 16, n)``) of ``WGMMA_MMA`` operands at ``a_at`` and ``b_at`` (arrays of one
    shape ``…``)."""
    a_at = np.asarray(a_at, dtype=np.int64)[..., None, None]
    b_at = np.asarray(b_at, dtype=np.int64)[..., None, None]
    i = np.arange(WARPGROUP_M, dtype=np.int64)[:, None]
    kk = np.arange(WARPGROUP_K, dtype=np.int64)
    a: np.ndarray = a_at + SWIZZLE_ROW * i + kk[None, :]
    j = np.arange(n, dtype=np.int64)[None, :]
    b: np.ndarray = b_at + block * (j // SWIZZLE_ROW) + SWIZZLE_ROW * kk[:, None] + j % SWIZZLE_ROW
    return a, b


def warpgroup_product(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """``acc + a @ b`` for stacks of ``a (…, 64, 16)``, ``b (…, 16, n)`` and ``f32`` ``acc``,
    with ``CMMA_EXECUTE``'s meaning (:func:`~ruda_core.ir.matrix.multiply_accumulate`):
    products exact, each of the 16 sums rounded to ``f32`` in order."""
    return multiply_accumulate(a, b, acc, np.dtype(np.float32))
