"""Independent references for the op run-tests: Python ints for integers, NumPy for floats.

Written from the semantics in ``ruda_core.ir.ops`` without looking at generated code: integer
results wrap to the element's width, Python floor division and modulo (division by zero gives 0,
the value the C emitter chooses), shifts modulo the bit width. Narrow floats (f16) are computed
in f32 and rounded once per operation, as the C targets do.
"""

from __future__ import annotations

import math

import numpy as np

from ruda_core.ir import Elem, Op
from ruda_core.testing.opkernels import float_edges as conformance_float_edges

E = Elem
INT_ELEMS = [E.I8, E.I16, E.I32, E.I64, E.U8, E.U16, E.U32, E.U64]
FLOAT_ELEMS = [E.F16, E.F32, E.F64]


def wrap(value: int, elem: Elem) -> int:
    """``value`` reduced to ``elem``'s two's complement range."""
    bits = elem.bits
    value &= (1 << bits) - 1
    if elem.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def int_edges(elem: Elem) -> list[int]:
    """Edge values of an integer element (wrapped into range)."""
    lo, hi = -(1 << (elem.bits - 1)), (1 << (elem.bits - 1)) - 1
    raw = [0, 1, -1, 2, -2, 3, -3, 7, -7, 31, 33, 64, 100, -100, lo, lo + 1, hi, hi - 1]
    return list(dict.fromkeys(wrap(v, elem) for v in raw))


def _py_int(op: Op, x: int, y: int, z: int, elem: Elem) -> int:
    bits = elem.bits
    if op is Op.ADD:
        return x + y
    if op is Op.SUB:
        return x - y
    if op is Op.MUL:
        return x * y
    if op is Op.FLOOR_DIV:
        return 0 if y == 0 else x // y
    if op is Op.MOD:
        return 0 if y == 0 else x % y
    if op is Op.MIN:
        return min(x, y)
    if op is Op.MAX:
        return max(x, y)
    if op is Op.BIT_AND:
        return x & y
    if op is Op.BIT_OR:
        return x | y
    if op is Op.BIT_XOR:
        return x ^ y
    if op is Op.SHL:
        return x << (y % bits)
    if op is Op.SHR:
        return x >> (y % bits)
    if op is Op.NEG:
        return -x
    if op is Op.ABS:
        return abs(x)
    if op is Op.BIT_NOT:
        return ~x
    if op is Op.CLAMP:
        return min(max(x, y), z)
    if op is Op.MUL_HI:  # the high half of the double-width product
        return (x * y) >> bits
    if op in (Op.SATURATING_ADD, Op.SATURATING_SUB):
        info = np.iinfo(elem.numpy)
        exact = x + y if op is Op.SATURATING_ADD else x - y
        return min(max(exact, int(info.min)), int(info.max))
    if op is Op.REVERSE_BITS:
        return int(f"{x & ((1 << bits) - 1):0{bits}b}"[::-1], 2)
    raise KeyError(op)


_COMPARE = {
    Op.EQ: lambda x, y: x == y,
    Op.NE: lambda x, y: x != y,
    Op.LT: lambda x, y: x < y,
    Op.LE: lambda x, y: x <= y,
    Op.GT: lambda x, y: x > y,
    Op.GE: lambda x, y: x >= y,
}


def int_reference(op: Op, elem: Elem, x: list[int], y: list[int], z: list[int]) -> np.ndarray:
    if op in _COMPARE:
        return np.array([_COMPARE[op](a, b) for a, b in zip(x, y, strict=True)])
    values = [wrap(_py_int(op, a, b, c, elem), elem) for a, b, c in zip(x, y, z, strict=True)]
    return np.array(values, dtype=elem.numpy)


def float_edges(elem: Elem) -> np.ndarray:
    """The conformance suite's edge values, then the smallest subnormal (flushed or not)."""
    tiny = float(np.finfo(elem.numpy).smallest_subnormal)
    return np.array([*conformance_float_edges(elem), tiny], dtype=elem.numpy)


def float_reference(op: Op, elem: Elem, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``op`` computed in ``elem`` (f16 through f32, rounded once)."""
    wide = np.float32 if elem is E.F16 else elem.numpy.type
    a, b, c = (v.astype(wide) for v in (x, y, z))
    with np.errstate(all="ignore"):
        if op in _COMPARE:
            return np.asarray(_COMPARE[op](a, b))
        if op is Op.ISNAN:
            return np.isnan(a)
        if op is Op.ISINF:
            return np.isinf(a)
        return np.asarray(_float_value(op, a, b, c)).astype(elem.numpy)


def _float_value(op: Op, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    simple = {
        Op.ADD: np.add,
        Op.SUB: np.subtract,
        Op.MUL: np.multiply,
        Op.DIV: np.divide,
        Op.MIN: np.fmin,
        Op.MAX: np.fmax,
        Op.POW: np.power,
    }
    if op in simple:
        return simple[op](a, b)
    if op is Op.FLOOR_DIV:
        return np.floor(a / b)
    if op is Op.MOD:
        return a - np.floor(a / b) * b
    if op is Op.CLAMP:
        return np.fmin(np.fmax(a, b), c)
    if op is Op.FMA:
        wide = np.longdouble if a.dtype == np.float64 else np.float64
        return (a.astype(wide) * b.astype(wide) + c.astype(wide)).astype(a.dtype)
    unary = {
        Op.NEG: np.negative,
        Op.ABS: np.abs,
        Op.EXP: np.exp,
        Op.EXP2: np.exp2,
        Op.LOG: np.log,
        Op.LOG2: np.log2,
        Op.LOG1P: np.log1p,
        Op.SQRT: np.sqrt,
        Op.SIN: np.sin,
        Op.COS: np.cos,
        Op.TAN: np.tan,
        Op.TANH: np.tanh,
        Op.FLOOR: np.floor,
        Op.CEIL: np.ceil,
        Op.ROUND: np.rint,
        Op.TRUNC: np.trunc,
    }
    if op in unary:
        return unary[op](a)
    if op is Op.RSQRT:
        return 1 / np.sqrt(a)
    if op is Op.RECIP:
        return 1 / a
    if op is Op.ERF:
        return np.array([math.erf(v) for v in a.astype(np.float64)]).astype(a.dtype)
    raise KeyError(op)


def cast_reference(values: np.ndarray, source: Elem, target: Elem) -> tuple[np.ndarray, np.ndarray]:
    """``(expected, mask)``: the CAST of ``values`` to ``target`` where the IR defines it."""
    n = len(values)
    mask = np.ones(n, dtype=bool)
    if target is E.BOOL:
        return values != 0, mask
    if source.is_float and target.is_int:
        expected = np.zeros(n, dtype=target.numpy)
        info = np.iinfo(target.numpy)
        for k, v in enumerate(values.astype(np.float64)):
            if math.isfinite(v) and info.min <= math.trunc(v) <= info.max:
                expected[k] = math.trunc(v)
            else:
                mask[k] = False
        return expected, mask
    if not source.is_float and target.is_int:
        ints = [wrap(int(v), target) for v in values]
        return np.array(ints, dtype=target.numpy), mask
    with np.errstate(all="ignore"):
        return values.astype(target.numpy), mask
