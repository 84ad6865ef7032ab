"""How close a device's float results must be to the reference device's: the one tolerance table.

Integer, boolean and exactly defined float results must match bit for bit (``±0`` are equal,
and any NaN equals any NaN). Other float operations are compared in ulps (units in the last
place) of their element type, by operation class:

========================  =====  =====  =====  =====  ============================================
class                     f16    bf16   f32    f64    operations
========================  =====  =====  =====  =====  ============================================
``EXACT``                 0      0      0      0      ``+ - *``, comparisons, casts, ``min max abs
                                                      neg clamp select floor ceil round trunc
                                                      copysign fmod remainder``, float ``// %``
                                                      (IEEE or defined exactly)
``DIVISION``              1      1      3      2      ``/``, ``recip``, ``sqrt``, ``rsqrt``
``TRANSCENDENTAL``        2      2      16     16     ``exp exp2 expm1 log log2 log10 log1p cbrt
                                                      sin cos tan asin acos atan atan2 sinh cosh
                                                      tanh asinh acosh atanh hypot erf erfc
                                                      lgamma pow``
``FUSED``                 1      1      1      1      ``fma``: against the fused *or* the unfused
                                                      result
========================  =====  =====  =====  =====  ============================================

The f32 and f64 bounds are those OpenCL 1.2 allows its built-ins (the loosest target ruda
supports: 2.5 ulp division, 3 ulp sqrt, up to 16 ulp for ``pow`` and ``erf``); f16 and bf16
are computed through f32 on every target and rounded once. ``TRANSCENDENTAL`` results smaller
than 1 in magnitude may instead be within ``ulps * eps`` absolutely (``eps`` of the element at
1.0): their ulps shrink with the value, while a function's error is relative to its argument.
NaN and infinities must match in kind and sign in every class. This module is pure NumPy.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ir import Elem, Op

__all__ = [
    "OP_CLASSES",
    "ULPS",
    "OpClass",
    "assert_matches",
    "mismatches",
    "op_class",
    "ulp_distance",
]


class OpClass(enum.Enum):
    """How precisely an operation's float result is defined (see the module table)."""

    EXACT = "exact"
    DIVISION = "division"
    TRANSCENDENTAL = "transcendental"
    FUSED = "fused"


#: Allowed distance in ulps, per class and float element.
ULPS: dict[OpClass, dict[Elem, int]] = {
    OpClass.EXACT: {Elem.F16: 0, Elem.BF16: 0, Elem.F32: 0, Elem.F64: 0},
    OpClass.DIVISION: {Elem.F16: 1, Elem.BF16: 1, Elem.F32: 3, Elem.F64: 2},
    OpClass.TRANSCENDENTAL: {Elem.F16: 2, Elem.BF16: 2, Elem.F32: 16, Elem.F64: 16},
    OpClass.FUSED: {Elem.F16: 1, Elem.BF16: 1, Elem.F32: 1, Elem.F64: 1},
}

#: The class of every float operation that is not ``EXACT``.
OP_CLASSES: dict[Op, OpClass] = {
    Op.DIV: OpClass.DIVISION,
    Op.RECIP: OpClass.DIVISION,
    Op.SQRT: OpClass.DIVISION,
    Op.RSQRT: OpClass.DIVISION,
    Op.FMA: OpClass.FUSED,
    **{
        op: OpClass.TRANSCENDENTAL
        for op in (
            Op.EXP,
            Op.EXP2,
            Op.LOG,
            Op.LOG2,
            Op.LOG1P,
            Op.SIN,
            Op.COS,
            Op.TAN,
            Op.TANH,
            Op.ERF,
            Op.ERFC,
            Op.LGAMMA,
            Op.EXPM1,
            Op.LOG10,
            Op.CBRT,
            Op.ASIN,
            Op.ACOS,
            Op.ATAN,
            Op.ATAN2,
            Op.SINH,
            Op.COSH,
            Op.ASINH,
            Op.ACOSH,
            Op.ATANH,
            Op.HYPOT,
            Op.POW,
        )
    },
}


def op_class(op: Op) -> OpClass:
    """The tolerance class of ``op`` (``EXACT`` unless listed in :data:`OP_CLASSES`)."""
    return OP_CLASSES.get(op, OpClass.EXACT)


@dataclass(frozen=True, slots=True)
class _Layout:
    bits: type[np.signedinteger]
    exponent: int
    mantissa: int


_LAYOUT = {
    Elem.F16: _Layout(np.int16, 5, 10),
    Elem.BF16: _Layout(np.int16, 8, 7),
    Elem.F32: _Layout(np.int32, 8, 23),
    Elem.F64: _Layout(np.int64, 11, 52),
}


def _bits(values: np.ndarray, elem: Elem) -> np.ndarray:
    """The raw bits of float ``values`` (bf16 is given as its 16-bit pattern)."""
    layout = _LAYOUT[elem]
    arr = np.ascontiguousarray(values)
    if arr.dtype.itemsize != np.dtype(layout.bits).itemsize:
        raise TypeError(f"{arr.dtype} values are not {elem} values")
    return arr.view(layout.bits).astype(np.int64)


def _classify(bits: np.ndarray, elem: Elem) -> tuple[np.ndarray, np.ndarray]:
    """``(nan, inf)`` masks of raw bits."""
    layout = _LAYOUT[elem]
    magnitude = bits & ((1 << (layout.exponent + layout.mantissa)) - 1)
    exp_all = ((1 << layout.exponent) - 1) << layout.mantissa
    return magnitude > exp_all, magnitude == exp_all


def ulp_distance(a: np.ndarray, b: np.ndarray, elem: Elem) -> np.ndarray:
    """Ulps between float arrays ``a`` and ``b`` of ``elem`` (``uint64``; ±0 are 0 apart).
    Meaningless where either is NaN."""
    layout = _LAYOUT[elem]
    magnitude_mask = (1 << (layout.exponent + layout.mantissa)) - 1
    ordered = []
    for values in (a, b):
        bits = _bits(values, elem)  # signed: negative exactly when the sign bit is set
        magnitude = bits & magnitude_mask
        ordered.append(np.where(bits < 0, -magnitude, magnitude))
    oa, ob = ordered
    same_sign = (oa >= 0) == (ob >= 0)
    near = np.abs(oa - np.where(same_sign, ob, 0)).astype(np.uint64)
    far = np.abs(oa).astype(np.uint64) + np.abs(ob).astype(np.uint64)
    return np.where(same_sign, near, far)


def _as_float64(values: np.ndarray, elem: Elem) -> np.ndarray:
    if elem is Elem.BF16:
        return (
            (np.ascontiguousarray(values).view(np.uint16).astype(np.uint32) << 16)
            .view(np.float32)
            .astype(np.float64)
        )
    return np.asarray(values).astype(np.float64)


def mismatches(
    got: np.ndarray,
    want: np.ndarray,
    elem: Elem,
    cls: OpClass = OpClass.EXACT,
    also: np.ndarray | None = None,
) -> np.ndarray:
    """A mask of the elements of ``got`` outside the tolerance around ``want``.

    :param elem: the element type of both arrays (bf16 arrays hold 16-bit patterns).
    :param cls: the operation class; ignored for non-float elements, which must be equal.
    :param also: a second acceptable result (e.g. the unfused ``a * b + c`` of ``FUSED``).
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise ValueError(f"shapes differ: got {got.shape}, want {want.shape}")
    if not elem.is_float:
        return np.asarray(got != want)
    bad = _float_mismatch(got, want, elem, cls)
    if also is not None:
        bad &= _float_mismatch(got, np.asarray(also), elem, cls)
    return bad


def _float_mismatch(got: np.ndarray, want: np.ndarray, elem: Elem, cls: OpClass) -> np.ndarray:
    gbits, wbits = _bits(got, elem), _bits(want, elem)
    gnan, ginf = _classify(gbits, elem)
    wnan, winf = _classify(wbits, elem)
    special = gnan | wnan | ginf | winf
    same_special = (gnan & wnan) | (ginf & winf & ((gbits < 0) == (wbits < 0)))
    ulps = ULPS[cls][elem]
    close = ulp_distance(got, want, elem) <= np.uint64(ulps)
    if cls is OpClass.TRANSCENDENTAL:
        eps = _EPS[elem] * ulps
        g, w = _as_float64(got, elem), _as_float64(want, elem)
        with np.errstate(invalid="ignore"):
            close |= (np.abs(w) < 1.0) & (np.abs(g - w) <= eps)
    return np.where(special, ~same_special, ~close)


_EPS = {Elem.F16: 2.0**-10, Elem.BF16: 2.0**-7, Elem.F32: 2.0**-23, Elem.F64: 2.0**-52}


def assert_matches(
    got: np.ndarray,
    want: np.ndarray,
    elem: Elem,
    cls: OpClass = OpClass.EXACT,
    *,
    what: str = "",
    inputs: Sequence[np.ndarray] = (),
    also: np.ndarray | None = None,
    limit: int = 8,
) -> None:
    """Fail (``AssertionError``) when ``got`` is outside the tolerance around ``want``, listing
    up to ``limit`` offending elements with their ``inputs``."""
    bad = np.nonzero(mismatches(got, want, elem, cls, also))[0]
    if not len(bad):
        return
    rows = []
    for k in bad[:limit]:
        args = ", ".join(repr(x[k].item()) for x in inputs)
        head = f"[{k}]({args})" if inputs else f"[{k}]"
        rows.append(f"  {head}: got {got[k].item()!r}, want {want[k].item()!r}")
    tol = f"{ULPS[cls][elem]} ulp ({cls.value})" if elem.is_float else "exact"
    raise AssertionError(
        f"{what or 'result'} on {elem}: {len(bad)} of {len(got)} values outside {tol}:\n"
        + "\n".join(rows)
    )
