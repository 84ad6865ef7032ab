"""Integer bit operations of the reference device, vectorised: ``popcount``,
``leading_zeros``, ``trailing_zeros``, ``find_first_set``, ``reverse_bits``, ``mul_hi`` and
saturating ``+ -``, exactly as :mod:`ruda_core.ir.ops` defines them, on scalars and lane arrays
of any integer type. Counts are ``uint32``; the others keep the operands' type. The same SWAR
steps as the C helpers (``ruda_core.codegen.bits``), on the unsigned view of the values."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "bitcast",
    "find_first_set",
    "leading_zeros",
    "mul_hi",
    "popcount",
    "reverse_bits",
    "saturating_add",
    "saturating_sub",
    "trailing_zeros",
]

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_M = [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF]
_M += [0x0000FFFF0000FFFF, 0x00000000FFFFFFFF]


def _word(x: Any) -> tuple[np.ndarray, int]:
    """``x`` as uint64 words holding its unsigned bits, and its width in bits."""
    arr = np.asarray(x)
    size = arr.dtype.itemsize
    return arr.view(_UNSIGNED[size]).astype(np.uint64), 8 * size


def _like(x: Any, value: np.ndarray, dtype: Any) -> Any:
    out = np.asarray(value).astype(dtype)
    return out[()] if isinstance(x, np.generic) else out


def _popcount64(v: np.ndarray) -> np.ndarray:
    v = v - ((v >> np.uint64(1)) & np.uint64(_M[0]))
    v = (v & np.uint64(_M[1])) + ((v >> np.uint64(2)) & np.uint64(_M[1]))
    v = (v + (v >> np.uint64(4))) & np.uint64(_M[2])
    with np.errstate(over="ignore"):
        return (v * np.uint64(0x0101010101010101)) >> np.uint64(56)


def popcount(x: Any) -> Any:
    v, _ = _word(x)
    return _like(x, _popcount64(v), np.uint32)


def leading_zeros(x: Any) -> Any:
    v, bits = _word(x)
    for s in (1, 2, 4, 8, 16, 32):
        v = v | (v >> np.uint64(s))
    return _like(x, np.uint64(bits) - _popcount64(v), np.uint32)


def trailing_zeros(x: Any) -> Any:
    v, bits = _word(x)
    with np.errstate(over="ignore"):
        low = _popcount64((v & (np.uint64(0) - v)) - np.uint64(1))
    return _like(x, np.where(v == 0, np.uint64(bits), low), np.uint32)


def find_first_set(x: Any) -> Any:
    v, _ = _word(x)
    first = np.asarray(trailing_zeros(np.asarray(x))).astype(np.uint64) + np.uint64(1)
    return _like(x, np.where(v == 0, np.uint64(0), first), np.uint32)


def reverse_bits(x: Any) -> Any:
    v, bits = _word(x)
    for k, s in enumerate((1, 2, 4, 8, 16, 32)):
        m = np.uint64(_M[k])
        v = ((v >> np.uint64(s)) & m) | ((v & m) << np.uint64(s))
    v = v >> np.uint64(64 - bits)
    return _like(x, v.astype(_UNSIGNED[bits // 8]).view(np.asarray(x).dtype), np.asarray(x).dtype)


def mul_hi(a: Any, b: Any) -> Any:
    dtype = np.result_type(a, b)
    bits = 8 * dtype.itemsize
    if bits <= 32:
        wide = np.int64 if dtype.kind == "i" else np.uint64
        product = np.asarray(a).astype(wide) * np.asarray(b).astype(wide)
        return _like(a, product >> wide(bits), dtype)
    x, y = (np.asarray(v).view(np.uint64) for v in (a, b))
    low, half = np.uint64(0xFFFFFFFF), np.uint64(32)
    x0, x1, y0, y1 = x & low, x >> half, y & low, y >> half
    with np.errstate(over="ignore"):
        p0, p1, p2, p3 = x0 * y0, x0 * y1, x1 * y0, x1 * y1
        mid = (p0 >> half) + (p1 & low) + (p2 & low)
        hi = p3 + (p1 >> half) + (p2 >> half) + (mid >> half)
        if dtype.kind == "i":
            zero = np.uint64(0)
            hi = hi - np.where(np.asarray(a) < 0, y, zero) - np.where(np.asarray(b) < 0, x, zero)
    return _like(a, np.asarray(hi).view(dtype), dtype)


def _saturating(a: Any, b: Any, sign: int) -> Any:
    dtype = np.result_type(a, b)
    info = np.iinfo(dtype)
    x, y = np.asarray(a), np.asarray(b)
    if dtype.itemsize < 8:  # int64 holds every sum and difference exactly
        exact = x.astype(np.int64) + sign * y.astype(np.int64)
        return _like(a, np.clip(exact, int(info.min), int(info.max)), dtype)
    xs, ys = x.view(np.uint64), y.view(np.uint64)
    with np.errstate(over="ignore"):
        r = (xs + ys) if sign > 0 else (xs - ys)
    if dtype.kind == "u":
        out = np.where(r < xs, info.max, r) if sign > 0 else np.where(xs < ys, 0, r)
        return _like(a, out, dtype)
    s = r.view(dtype)
    overflow = ((x ^ s) & (y ^ s)) < 0 if sign > 0 else ((x ^ y) & (x ^ s)) < 0
    bound = np.where(x < 0, info.min, info.max).astype(dtype)
    return _like(a, np.where(overflow, bound, s), dtype)


def saturating_add(a: Any, b: Any) -> Any:
    return _saturating(a, b, 1)


def saturating_sub(a: Any, b: Any) -> Any:
    return _saturating(a, b, -1)


def bitcast(x: Any, dtype: Any) -> Any:
    """``x``'s bits as ``dtype``, a type of the same width."""
    return _like(x, np.asarray(x).view(dtype), dtype)
