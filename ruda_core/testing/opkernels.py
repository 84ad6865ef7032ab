"""IR kernels that apply many operations to the same inputs, and the inputs they are run on.

:func:`ops_kernel` builds ``out[k*n + i] = ops[k](a[i], b[i], c[i])`` (and a ``bool`` table for
operations with a ``bool`` result), one launch for a whole operation table. :func:`int_inputs`
and :func:`float_inputs` give every pair of edge values plus seeded random values, avoiding only
what the IR leaves undefined or the targets may legitimately flush (subnormal floats).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import ml_dtypes
import numpy as np

from ..ir import BIT_COUNTS, FLOAT_TESTS, FLOAT_UNARY, INT_UNARY, Elem, KernelDefinition, Op
from .irbuild import KernelBuilder, builtin, const

__all__ = ["BLOCK", "arity", "constant_ops_kernel", "float_inputs", "int_inputs", "ops_kernel"]

#: Units per cube of the operation kernels.
BLOCK = 64


def arity(op: Op) -> int:
    """Operands of a value operation."""
    if op in (Op.CLAMP, Op.FMA, Op.SELECT):
        return 3
    if op in FLOAT_UNARY | FLOAT_TESTS | BIT_COUNTS | INT_UNARY or op in (
        Op.NEG,
        Op.ABS,
        Op.BIT_NOT,
        Op.NOT,
        Op.ASSIGN,
    ):
        return 1
    return 2


def ops_kernel(
    name: str,
    elem: Elem,
    value_ops: list[Op],
    bool_ops: list[Op],
    bool_result: Elem = Elem.BOOL,
) -> KernelDefinition:
    """``out[k*n + i] = value_ops[k](a[i], b[i], c[i])`` and likewise ``flags`` for
    ``bool_ops`` (whose results have the element ``bool_result``: ``u32`` for bit counts);
    ``n`` is ``len(a)``."""
    k = KernelBuilder(name)
    inputs = [k.array(p, elem, read_only=True) for p in "abc"]
    out = k.array("out", elem)
    flags = k.array("flags", bool_result)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    n = k.let(Op.LEN, Elem.U32, inputs[0])
    with k.if_(k.let(Op.LT, Elem.BOOL, i, n)):
        x = [k.load(arr, i) for arr in inputs]
        for target, ops, result in ((out, value_ops, elem), (flags, bool_ops, bool_result)):
            for slot, op in enumerate(ops):
                value = k.let(op, result, *x[: arity(op)])
                at = k.let(Op.ADD, Elem.U32, k.let(Op.MUL, Elem.U32, n, const(slot, Elem.U32)), i)
                k.store(target, at, value)
    return k.build()


def constant_ops_kernel(
    name: str, elem: Elem, cases: Sequence[tuple[Op, tuple[float, ...]]], result: Elem
) -> KernelDefinition:
    """``out[k] = op(*operands)`` for the ``k``-th ``(op, operands)`` of ``cases``, every
    operand a constant of ``elem`` written in the kernel (where a compiler may evaluate the
    operation while it builds it) and every result of the element ``result``; computed by the
    first unit alone."""
    k = KernelBuilder(name)
    out = k.array("out", result)
    first = k.let(Op.EQ, Elem.BOOL, builtin("ABSOLUTE_POS"), const(0, Elem.U32))
    with k.if_(first):
        for slot, (op, operands) in enumerate(cases):
            value = k.let(op, result, *(const(x, elem) for x in operands))
            k.store(out, const(slot, Elem.U32), value)
    return k.build()


def int_edges(elem: Elem) -> list[int]:
    """Edge values of an integer element."""
    lo, hi = (int(v) for v in (np.iinfo(elem.numpy).min, np.iinfo(elem.numpy).max))
    raw = [0, 1, -1, 2, -2, 3, -3, 7, -7, 31, 32, 33, 63, 64, 100, -100, lo, lo + 1, hi, hi - 1]
    return list(dict.fromkeys(v for v in raw if lo <= v <= hi))


def int_inputs(elem: Elem, random: int = 256, seed: int = 0) -> list[np.ndarray]:
    """``[a, b, c]``: every pair of edge values (``c`` a rotation of ``b``), then random ones."""
    edges = int_edges(elem)
    pairs = list(itertools.product(edges, edges))
    info = np.iinfo(elem.numpy)
    rng = np.random.default_rng(seed)
    extra = rng.integers(int(info.min), int(info.max), (3, random), dtype=elem.numpy, endpoint=True)
    a = np.array([p for p, _ in pairs], dtype=elem.numpy)
    b = np.array([q for _, q in pairs], dtype=elem.numpy)
    return [
        np.concatenate([a, extra[0]]),
        np.concatenate([b, extra[1]]),
        np.concatenate([np.roll(b, 7), extra[2]]),
    ]


def float_edges(elem: Elem) -> list[float]:
    """Edge values of a float element: signed zeros, infinities, NaN, halves, large values;
    no subnormals (a target may flush them)."""
    big = 1e4 if elem is Elem.F16 else 1e10
    return [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
        7.25,
        -7.25,
        1e-3,
        big,
        -big,
        math.inf,
        -math.inf,
        math.nan,
    ]


def float_inputs(elem: Elem, random: int = 256, seed: int = 0) -> list[np.ndarray]:
    """``[a, b, c]``: every pair of edge values, then random values in ``[-10, 10]`` and
    ``[-1000, 1000]`` (normal numbers only)."""
    dtype = elem.numpy
    edges = float_edges(elem)
    pairs = list(itertools.product(edges, edges))
    rng = np.random.default_rng(seed)
    scale = np.where(rng.random((3, random)) < 0.7, 10.0, 1000.0)
    extra = (rng.uniform(-1, 1, (3, random)) * scale).astype(dtype)
    tiny = ml_dtypes.finfo(dtype).tiny  # type: ignore[no-untyped-call]  # np.finfo lacks bf16
    extra[np.abs(extra) < tiny] = 1
    a = np.array([p for p, _ in pairs], dtype=dtype)
    b = np.array([q for _, q in pairs], dtype=dtype)
    return [
        np.concatenate([a, extra[0]]),
        np.concatenate([b, extra[1]]),
        np.concatenate([np.roll(b, 5), extra[2]]),
    ]
