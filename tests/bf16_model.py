"""A model of bf16 rounding in Python integers and fractions, independent of ml_dtypes and of
every device: the bits of f32 values rounded to bf16, and of any int or float rounded once."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ruda_core.ir import Elem

__all__ = ["BF16_SOURCES", "bf16_bits", "bf16_of_exact", "bf16_value"]


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round f32 values to bf16 (nearest even), as their 16-bit patterns."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    """The f32 values of bf16 bit patterns (exact)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def bf16_of_exact(value: int | float) -> int:
    """The bf16 bits nearest ``value`` (an int or a finite float, rounded once, ties to even;
    normal range or infinity)."""
    exact = Fraction(value)
    if exact == 0:
        return 0x8000 if math.copysign(1.0, float(value)) < 0 else 0
    sign, magnitude = (0x8000 if exact < 0 else 0), abs(exact)
    exponent = math.floor(math.log2(magnitude)) - 7  # 8 significant bits
    while magnitude / Fraction(2) ** exponent >= 256:
        exponent += 1
    while magnitude / Fraction(2) ** exponent < 128:
        exponent -= 1
    rounded = round(magnitude / Fraction(2) ** exponent) * Fraction(2) ** exponent  # half even
    if rounded >= 2**128:
        return sign | 0x7F80
    return sign | int(bf16_bits(np.array([float(rounded)], np.float32))[0])


#: Values whose rounding to float first would end on a bf16 tie (double rounding), ties,
#: the ends of each type's range, and f64 beyond f32's range.
BF16_SOURCES = {
    Elem.F64: [1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-40), 1 + 2**-8, 3.4e38, 1e300, -1e-300, 0.1],
    Elem.I32: [
        2**24 + 2**16 + 1,
        -(2**24 + 2**16 + 1),
        2**24 + 2**16,
        257,
        259,
        2**31 - 1,
        -(2**31),
    ],
    Elem.U32: [2**32 - 1, 2**31 + 2**23 + 1, 2**31 + 2**23, 385, 7, 0, 2**24 + 1],
    Elem.I64: [2**62 + 2**54 + 1, -(2**63), 2**63 - 1, 2**40 + 2**32, -3, 2**53 + 1, 1],
    Elem.U64: [2**64 - 1, 2**40 + 2**32 + 1, 2**63, 511, 513, 2**56 + 2**48 + 2**47, 0],
}
