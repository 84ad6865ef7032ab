"""The pattern that fills shared memory and local arrays when a cube starts.

GPUs start shared memory with whatever an earlier cube left there, so a kernel that reads an
element before writing it is wrong on them even when zero would have been the right start. The
reference device makes such a read visible instead of lucky: every byte of a new shared or
local array is ``0xA5``, and a float element is that pattern made a negative quiet NaN (sign,
exponent and quiet bit set, the rest ``0xA5…``), so it propagates through arithmetic as NaN and
NumPy handles it without a warning. The element values:

=========  ==================================  ===========================
type       bits                                value
=========  ==================================  ===========================
``u8``     ``0xA5``                            165
``i8``     ``0xA5``                            -91
``u16``    ``0xA5A5``                          42405
``i16``    ``0xA5A5``                          -23131
``u32``    ``0xA5A5A5A5``                      2779096485
``i32``    ``0xA5A5A5A5``                      -1515870811
``u64``    ``0xA5A5A5A5A5A5A5A5``              11936128518282651045
``i64``    ``0xA5A5A5A5A5A5A5A5``              -6510615555426900571
``f16``    ``0xFFA5``                          NaN
``bf16``   ``0xFFE5``                          NaN
``f32``    ``0xFFE5A5A5``                      NaN
``f64``    ``0xFFFDA5A5A5A5A5A5``              NaN
``bool``   ``0x01``                            True
=========  ==================================  ===========================
"""

from __future__ import annotations

import numpy as np

from .values import is_float

__all__ = ["POISON_BYTE", "pattern_bits", "poisoned"]

#: Every byte of a new shared or local integer array.
POISON_BYTE = 0xA5

#: The bits a float pattern sets over the ``0xA5`` bytes (sign, exponent, quiet bit), by size.
_NAN_BITS = {2: 0xFE00, 4: 0xFFC00000, 8: 0xFFF8000000000000}
#: ``bfloat16`` is the top half of an ``f32``: its exponent and quiet bit sit higher than f16's.
_BF16_NAN_BITS = 0xFFC0


def pattern_bits(dtype: np.dtype) -> int:
    """The poison of ``dtype`` as an unsigned integer of its size."""
    size = dtype.itemsize
    bits = int.from_bytes(bytes([POISON_BYTE]) * size, "little")
    if dtype.name == "bfloat16":
        return bits | _BF16_NAN_BITS
    if is_float(dtype):
        return bits | _NAN_BITS[size]
    return bits


def poisoned(dtype: np.dtype, n: int) -> np.ndarray:
    """A new array of ``n`` poisoned elements of ``dtype``."""
    if dtype.kind == "b":
        return np.ones(n, dtype=dtype)
    return np.full(n, pattern_bits(dtype), dtype=f"u{dtype.itemsize}").view(dtype)
