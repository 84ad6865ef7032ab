"""Cooperative matrices (CubeCL's ``cmma``, CUDA's WMMA): fragments, their configurations and the
executable form of the matrix operations' arithmetic.

A :class:`Fragment` is a tile of a matrix held by one plane as a whole: an opaque per-plane
value whose elements are spread over the plane's units in a way no kernel can observe. Its
``role`` says which operand of ``D = A*B + C`` it can be: ``A`` is ``m x k``, ``B`` is
``k x n``, an ``ACCUMULATOR`` (``C`` or ``D``) is ``m x n``. ``elem`` is the element type it is
loaded from and stored to; a ``tf32`` fragment is an ``f32`` one whose elements are rounded to
TensorFloat-32 (:func:`round_tf32`) when they enter it.

A :class:`MatrixConfig` is one ``(a, b, c, m, n, k)`` combination a device can multiply; the sets
below are the ones ruda's CUDA lowering knows (WMMA's shapes). The operations themselves are
written in :mod:`~ruda_core.ir.ops`. This module holds data and NumPy arithmetic only; it must not
know about any backend.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from .types import Elem

__all__ = [
    "BF16_CONFIGS",
    "F16_CONFIGS",
    "TF32_CONFIGS",
    "Fragment",
    "MatrixConfig",
    "MatrixElem",
    "MatrixLayout",
    "MatrixRole",
    "multiply_accumulate",
    "round_tf32",
]


class MatrixRole(enum.Enum):
    """Which operand of ``D = A*B + C`` a fragment is."""

    A = "a"  #: m x k
    B = "b"  #: k x n
    ACCUMULATOR = "accumulator"  #: m x n: C or D
    #: a warpgroup's 64 x n f32 accumulator of ``WGMMA_*`` (see :mod:`~ruda_core.ir.warpgroup`)
    WARPGROUP = "warpgroup"


class MatrixLayout(enum.Enum):
    """How a tile lies in memory: rows of ``stride`` elements, or columns of ``stride``.
    ``value`` is the constant that encodes it in ``CMMA_LOAD``/``CMMA_STORE``."""

    ROW_MAJOR = 0
    COL_MAJOR = 1

    def __str__(self) -> str:
        return self.name.lower()


class MatrixElem(enum.Enum):
    """An element type of a fragment: a memory element, or ``tf32`` (``f32`` in memory)."""

    F16 = "f16"
    BF16 = "bf16"
    TF32 = "tf32"
    F32 = "f32"

    @property
    def memory(self) -> Elem:
        """The element type the fragment is loaded from and stored to."""
        return Elem.F32 if self is MatrixElem.TF32 else Elem(self.value)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class MatrixConfig:
    """``D[mxn] (c) = A[mxk] (a) * B[kxn] (b) + C[mxn] (c)``: one matrix multiply a device
    supports, by its element types and tile shape."""

    a: MatrixElem
    b: MatrixElem
    c: MatrixElem
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"{self.a} x {self.b} -> {self.c} at {self.m}x{self.n}x{self.k}"


@dataclass(frozen=True, slots=True)
class Fragment:
    """A plane's tile of a matrix (see the module docstring). Names are unique within a kernel.

    ``layout`` is the memory layout of an ``A`` or ``B`` fragment (part of its type, as in
    WMMA); an accumulator's is the layout the front end gives its loads, or None.
    """

    name: str
    role: MatrixRole
    m: int
    n: int
    k: int
    elem: Elem
    layout: MatrixLayout | None = None
    tf32: bool = False

    @property
    def matrix_elem(self) -> MatrixElem:
        return MatrixElem.TF32 if self.tf32 else MatrixElem(self.elem.value)

    @property
    def rows(self) -> int:
        return self.k if self.role is MatrixRole.B else self.m

    @property
    def cols(self) -> int:
        return self.k if self.role is MatrixRole.A else self.n

    @property
    def type_text(self) -> str:
        """``a 16x16x16 f16 row_major`` (IR dumps and messages)."""
        layout = f" {self.layout}" if self.layout is not None else ""
        return f"{self.role.value} {self.m}x{self.n}x{self.k} {self.matrix_elem}{layout}"

    def __str__(self) -> str:
        return self.name


def _configs(
    a: MatrixElem, accumulators: tuple[MatrixElem, ...], shapes: tuple[tuple[int, int, int], ...]
) -> frozenset[MatrixConfig]:
    return frozenset(MatrixConfig(a, a, c, m, n, k) for c in accumulators for m, n, k in shapes)


_HALF_SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
#: f16 x f16 -> f16 or f32 at 16x16x16, 32x8x16 and 8x32x16 (WMMA from sm_70).
F16_CONFIGS = _configs(MatrixElem.F16, (MatrixElem.F16, MatrixElem.F32), _HALF_SHAPES)
#: bf16 x bf16 -> f32 at the same shapes (WMMA from sm_80).
BF16_CONFIGS = _configs(MatrixElem.BF16, (MatrixElem.F32,), _HALF_SHAPES)
#: tf32 x tf32 -> f32 at 16x16x8, f32 in memory (WMMA from sm_80).
TF32_CONFIGS = _configs(MatrixElem.TF32, (MatrixElem.F32,), ((16, 16, 8),))


def round_tf32(x: np.ndarray) -> np.ndarray:
    """``f32`` values rounded to TensorFloat-32 (8 exponent bits, 10 fraction bits): to nearest,
    ties away from zero, as CUDA's ``__float_to_tf32`` (``cvt.rna.tf32.f32``); the 13 low
    fraction bits of the result are zero. Infinities and NaNs are kept."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), rounded, x).astype(np.float32)


def multiply_accumulate(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, accumulator: np.dtype
) -> np.ndarray:
    """``D = A*B + C`` for stacks of tiles ``a (…, m, k)``, ``b (…, k, n)``, ``c (…, m, n)``, with
    the meaning of ``CMMA_EXECUTE``: ``acc = c``, then for ``k`` in order
    ``acc = round(acc + a[:, k] * b[k, :])``, each product exact and each sum rounded once to
    ``accumulator``. Products are exact in ``f64`` for every input type; the ``f64`` sum rounded to
    ``accumulator`` is the correctly rounded one, since neither operand has more than 24
    significant bits."""
    acc = c.astype(accumulator)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for kk in range(a.shape[-1]):
        products = a64[..., :, kk, None] * b64[..., None, kk, :]
        acc = (acc.astype(np.float64) + products).astype(accumulator)
    return acc
