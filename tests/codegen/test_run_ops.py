"""Run every value operation on every element type on a device and compare with independent
references (Python ints for integers, NumPy for floats): exact for integers, comparisons, casts
and correctly rounded float operations; within a few ulps for transcendental functions."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, KernelDefinition, Op
from ruda_core.testing.conformance.test_ops_int import COMPARES, VALUE_OPS
from ruda_core.testing.irbuild import KernelBuilder, builtin
from ruda_core.testing.opkernels import ops_kernel

from .kernels import FILE
from .references import (
    FLOAT_ELEMS,
    INT_ELEMS,
    cast_reference,
    float_edges,
    float_reference,
    int_edges,
    int_reference,
)

E = Elem
BLOCK = 64
#: The conformance suite's integer operations, less ``ASSIGN`` (no Python-int reference).
INT_VALUE_OPS = [op for op in VALUE_OPS if op is not Op.ASSIGN]
#: Float operations checked bit-exactly (IEEE correctly rounded or exact by definition).
FLOAT_EXACT = [
    Op.ADD,
    Op.SUB,
    Op.MUL,
    Op.DIV,
    Op.FLOOR_DIV,
    Op.MOD,
    Op.MIN,
    Op.MAX,
    Op.NEG,
    Op.ABS,
    Op.CLAMP,
    Op.FLOOR,
    Op.CEIL,
    Op.ROUND,
    Op.TRUNC,
    Op.SQRT,
    Op.RECIP,
]
FLOAT_APPROX = [
    Op.POW,
    Op.FMA,
    Op.EXP,
    Op.EXP2,
    Op.LOG,
    Op.LOG2,
    Op.LOG1P,
    Op.RSQRT,
    Op.SIN,
    Op.COS,
    Op.TAN,
    Op.TANH,
    Op.ERF,
]
SIGNLESS_ZERO = {Op.MIN, Op.MAX, Op.CLAMP}
FLOAT_BOOL = [*COMPARES, Op.ISNAN, Op.ISINF]
RTOL = {E.F16: 2e-3, E.F32: 2e-6, E.F64: 1e-14}


def launch(device, defn: KernelDefinition, arrays: list[np.ndarray]) -> list[np.ndarray]:
    n = len(arrays[0])
    return device.run(defn, arrays, count=(-(-n // BLOCK), 1, 1), dim=(BLOCK, 1, 1))


@pytest.mark.parametrize("elem", INT_ELEMS, ids=str)
def test_integer_ops_match_python(device, elem: Elem) -> None:
    edges = int_edges(elem)
    x = [p for p in edges for _ in edges]
    y = [q for _ in edges for q in edges]
    z = y[7:] + y[:7]
    n = len(x)
    arrays = [np.array(v, dtype=elem.numpy) for v in (x, y, z)]
    out = np.zeros(n * len(INT_VALUE_OPS), elem.numpy)
    flags = np.zeros(n * len(COMPARES), bool)
    defn = ops_kernel(f"ops_{elem}", elem, INT_VALUE_OPS, COMPARES)
    got_out, got_flags = launch(device, defn, [*arrays, out, flags])[3:]
    for slot, op in enumerate(INT_VALUE_OPS):
        expected = int_reference(op, elem, x, y, z)
        got = got_out[slot * n : (slot + 1) * n]
        bad = np.nonzero(got != expected)[0]
        assert not len(bad), f"{op} on {elem}: " + ", ".join(
            f"({x[k]}, {y[k]}, {z[k]}) -> {got[k]}, want {expected[k]}" for k in bad[:5]
        )
    for slot, op in enumerate(COMPARES):
        expected = int_reference(op, elem, x, y, z)
        np.testing.assert_array_equal(got_flags[slot * n : (slot + 1) * n], expected, str(op))


@pytest.mark.parametrize("elem", FLOAT_ELEMS, ids=str)
def test_float_ops_match_numpy(device, elem: Elem) -> None:
    edges = float_edges(elem)
    x = np.repeat(edges, len(edges))
    y = np.tile(edges, len(edges))
    z = np.roll(y, 7)
    n = len(x)
    value_ops = FLOAT_EXACT + FLOAT_APPROX
    out = np.zeros(n * len(value_ops), elem.numpy)
    flags = np.zeros(n * len(FLOAT_BOOL), bool)
    defn = ops_kernel(f"ops_{elem}", elem, value_ops, FLOAT_BOOL)
    got_out, got_flags = launch(device, defn, [x, y, z, out, flags])[3:]
    for slot, op in enumerate(value_ops):
        expected = float_reference(op, elem, x, y, z)
        got = got_out[slot * n : (slot + 1) * n]
        if op in FLOAT_EXACT:
            same = (got == expected) | (np.isnan(got) & np.isnan(expected))
            if op not in SIGNLESS_ZERO:  # fmin/fmax may return either zero of (-0.0, 0.0)
                same &= (np.signbit(got) == np.signbit(expected)) | np.isnan(got)
            bad = np.nonzero(~same)[0]
            assert not len(bad), f"{op} on {elem}: " + ", ".join(
                f"({x[k]}, {y[k]}, {z[k]}) -> {got[k]}, want {expected[k]}" for k in bad[:5]
            )
        else:
            finite = np.isfinite(expected) & (np.abs(expected) < np.finfo(elem.numpy).max / 4)
            np.testing.assert_allclose(
                got[finite], expected[finite], rtol=RTOL[elem], atol=RTOL[elem], err_msg=str(op)
            )
            np.testing.assert_array_equal(np.isnan(got[~finite]), np.isnan(expected[~finite]))
    for slot, op in enumerate(FLOAT_BOOL):
        expected = float_reference(op, elem, x, y, z)
        np.testing.assert_array_equal(got_flags[slot * n : (slot + 1) * n], expected, str(op))


def cast_kernel(source: Elem, targets: list[Elem]) -> KernelDefinition:
    k = KernelBuilder(f"cast_{source}", file=FILE, line=1)
    a = k.array("a", source, read_only=True)
    outs = [k.array(f"out_{t}", t) for t in targets]
    i = k.let(Op.ASSIGN, E.U32, builtin("ABSOLUTE_POS"), name="i")
    with k.if_(k.let(Op.LT, E.BOOL, i, k.let(Op.LEN, E.U32, a))):
        x = k.let(Op.INDEX, source, a, i)
        for t, out in zip(targets, outs, strict=True):
            k.do(Op.INDEX_ASSIGN, None, out, i, k.let(Op.CAST, t, x))
    return k.build()


ALL_ELEMS = [E.BOOL, *INT_ELEMS, *FLOAT_ELEMS]


@pytest.mark.parametrize("source", ALL_ELEMS, ids=str)
def test_casts_follow_the_ir_rules(device, source: Elem) -> None:
    if source is E.BOOL:
        values = np.array([False, True, True, False], bool)
    elif source.is_int:
        values = np.array(int_edges(source), source.numpy)
    else:
        raw = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.9,
            -2.9,
            100.7,
            -100.7,
            255.5,
            65504.0,
            70000.5,
            -3e9,
            4e9,
            1e30,
            np.inf,
            -np.inf,
            np.nan,
        ]
        with np.errstate(all="ignore"):
            values = np.array(raw, np.float64).astype(source.numpy)
    outputs = [np.zeros(len(values), t.numpy) for t in ALL_ELEMS]
    results = launch(device, cast_kernel(source, ALL_ELEMS), [values, *outputs])[1:]
    for target, got in zip(ALL_ELEMS, results, strict=True):
        expected, mask = cast_reference(values, source, target)
        np.testing.assert_array_equal(got[mask], expected[mask], f"{source} -> {target}")
