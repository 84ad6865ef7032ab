"""Cooperative matrices in kernels, after CubeCL's ``cmma`` (CUDA's WMMA): a plane multiplies
tiles held as opaque per-plane fragments.

::

    from ruda_core.lang import cmma, f16, f32

    a = cmma.Matrix(cmma.A, 16, 16, 16, f16, cmma.ROW_MAJOR)
    b = cmma.Matrix(cmma.B, 16, 16, 16, f16, cmma.COL_MAJOR)
    acc = cmma.Matrix(cmma.ACCUMULATOR, 16, 16, 16, f32)
    cmma.fill(acc, 0.0)
    cmma.load(a, x, offset, stride)          # a global array, SharedMemory or a view of either
    cmma.load(b, y, offset, stride)
    cmma.execute(a, b, acc, acc)             # acc = a*b + acc
    cmma.store(out, offset, acc, stride, cmma.ROW_MAJOR)
    half = cmma.cast(acc, f16)               # a new accumulator of f16

``cmma.Matrix(role, m, n, k, elem, layout)`` declares a fragment of role ``A`` (``m x k``), ``B``
(``k x n``) or ``ACCUMULATOR`` (``m x n``); every argument is a compile-time value. ``elem`` is
``f16``, ``bf16``, ``f32`` or ``cmma.tf32`` (``f32`` in memory, rounded to TensorFloat-32 on
entry); accumulators hold ``f16`` or ``f32``. ``layout`` is required for ``A`` and ``B`` (it is
the fragment's type) and, for an accumulator, is the layout its loads read (optional otherwise).
A fragment is bound to a name assigned once.

Every call is a plane operation: each unit of the plane must reach it (uniform control flow),
with the same ``offset``, ``stride`` and ``value``, in a cube of whole planes. ``offset`` and
``stride`` are element counts (``u32``); a view's start is added to ``offset``. Only
accumulators can be stored. The device must support the ``(a, b, c, m, n, k)`` of every
``execute`` (``client.features().matrices``), else the kernel's compilation raises
``UnsupportedFeature``. The exact meaning of each operation is in :mod:`ruda_core.ir.ops`.
This module builds no IR; its names are markers the front end recognises.
"""

from __future__ import annotations

from ..ir import MatrixConfig, MatrixElem, MatrixLayout, MatrixRole
from .builtins import Intrinsic

__all__ = [
    "ACCUMULATOR",
    "COL_MAJOR",
    "ROW_MAJOR",
    "A",
    "B",
    "Matrix",
    "MatrixConfig",
    "MatrixElem",
    "MatrixLayout",
    "MatrixRole",
    "cast",
    "execute",
    "fill",
    "load",
    "store",
    "tf32",
]

A = MatrixRole.A
B = MatrixRole.B
ACCUMULATOR = MatrixRole.ACCUMULATOR
ROW_MAJOR = MatrixLayout.ROW_MAJOR
COL_MAJOR = MatrixLayout.COL_MAJOR
#: TensorFloat-32: ``f32`` in memory, 10 fraction bits in the fragment.
tf32 = MatrixElem.TF32

Matrix = Intrinsic("cmma.Matrix")
fill = Intrinsic("cmma.fill")
load = Intrinsic("cmma.load")
execute = Intrinsic("cmma.execute")
store = Intrinsic("cmma.store")
cast = Intrinsic("cmma.cast")
