"""Float operations on every float type the device supports, against the reference device within
the tolerance table (``ruda_core.testing.tolerance``): arithmetic, ``FLOOR_DIV``/``MOD``, every
math intrinsic, ``FMA`` (fused or not), ``CLAMP``, ``MIN``/``MAX`` with NaN, comparisons,
``ISNAN``/``ISINF``; plus known answers that do not depend on the reference."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ruda_core.ir import FLOAT_BINARY, FLOAT_TESTS, FLOAT_UNARY, Elem, Op
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_DIM,
    UNIT_POS,
    Array,
    Float,
    copysign,
    floor,
    fma,
    kernel,
    select,
    trunc,
    u32,
)
from ruda_core.testing.markers import need, requires_elem
from ruda_core.testing.opkernels import (
    BLOCK,
    arity,
    constant_ops_kernel,
    float_inputs,
    ops_kernel,
)
from ruda_core.testing.runner import run_definition, run_kernel
from ruda_core.testing.tolerance import OpClass, assert_matches, op_class

FLOAT_ELEMS = [Elem.F16, Elem.BF16, Elem.F32, Elem.F64]
VALUE_OPS = [
    Op.ADD,
    Op.SUB,
    Op.MUL,
    Op.DIV,
    Op.FLOOR_DIV,
    Op.MOD,
    Op.POW,
    Op.MIN,
    Op.MAX,
    Op.NEG,
    Op.ABS,
    Op.FMA,
    Op.CLAMP,
    Op.ASSIGN,
    *sorted(FLOAT_UNARY | FLOAT_BINARY, key=lambda op: op.value),
]
BOOL_OPS = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, *sorted(FLOAT_TESTS, key=lambda op: op.value)]


def _assert_same_values(got: np.ndarray, want: np.ndarray) -> None:
    """``got`` is ``want``: NaN where it has NaN, zeros of its signs."""
    np.testing.assert_array_equal(got, want)
    _assert_same_signs(got, want)


def _assert_same_signs(got: np.ndarray, want: np.ndarray) -> None:
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), (got, want)


def _run_table(client, elem, inputs, value_ops=VALUE_OPS, bool_ops=BOOL_OPS):
    defn = ops_kernel(f"conformance_float_ops_{elem}_{len(value_ops)}", elem, value_ops, bool_ops)
    n = len(inputs[0])
    out = np.zeros(n * len(value_ops), elem.numpy)
    flags = np.zeros(n * len(bool_ops), bool)
    result = run_definition(client, defn, [*inputs, out, flags], count=-(-n // BLOCK), dim=BLOCK)
    return result[3].reshape(len(value_ops), n), result[4].reshape(len(bool_ops), n)


@pytest.mark.parametrize("elem", FLOAT_ELEMS, ids=str)
def test_float_ops_match_the_reference(client, reference, elem, known_cases):
    """Every operation of the table, each checked on its own: a driver may declare some of
    them known failures of its device (``KnownFailure.cases``, by the operation's name), and
    the test still fails where another one fails."""
    need(client, elem, reference=reference)
    inputs = float_inputs(elem)
    got, got_flags = _run_table(client, elem, inputs)
    want, want_flags = _run_table(reference, elem, inputs)
    a, b, c = inputs
    with np.errstate(all="ignore"):
        unfused = a * b + c  # rounded twice, in the element type
    checks = [
        (str(op), got[slot], want[slot], elem, op_class(op), unfused if op is Op.FMA else None)
        for slot, op in enumerate(VALUE_OPS)
    ]
    checks += [
        (str(op), got_flags[k], want_flags[k], Elem.BOOL, OpClass.EXACT, None)
        for k, op in enumerate(BOOL_OPS)
    ]
    failures = {}
    for name, got_op, want_op, checked, cls, also in checks:
        try:
            assert_matches(got_op, want_op, checked, cls, what=name, inputs=inputs, also=also)
        except AssertionError as exc:
            failures[name] = str(exc)
    known_cases.settle(failures)


@pytest.mark.parametrize("elem", FLOAT_ELEMS, ids=str)
def test_known_answers(client, elem):
    need(client, elem)
    nan, inf = math.nan, math.inf
    rows = [  # a, b, c, {op: expected}
        (7.5, 2.0, 0.0, {Op.FLOOR_DIV: 3.0, Op.MOD: 1.5, Op.MIN: 2.0, Op.MAX: 7.5}),
        (-7.5, 2.0, 0.0, {Op.FLOOR_DIV: -4.0, Op.MOD: 0.5, Op.ROUND: -8.0, Op.TRUNC: -7.0}),
        (7.5, -2.0, 0.0, {Op.FLOOR_DIV: -4.0, Op.MOD: -0.5, Op.ROUND: 8.0, Op.FLOOR: 7.0}),
        (2.5, 1.0, 3.0, {Op.ROUND: 2.0, Op.CEIL: 3.0, Op.FMA: 5.5, Op.CLAMP: 2.5}),
        (nan, 1.0, 2.0, {Op.MIN: 1.0, Op.MAX: 1.0, Op.CLAMP: 1.0}),
        (1.0, nan, 2.0, {Op.MIN: 1.0, Op.MAX: 1.0, Op.ADD: nan}),
        (-0.5, 4.0, -1.0, {Op.ABS: 0.5, Op.NEG: 0.5, Op.CLAMP: -1.0, Op.ROUND: -0.0}),
        (4.0, 0.5, 8.0, {Op.MUL: 2.0, Op.SUB: 3.5, Op.FMA: 10.0, Op.MOD: 0.0}),
        (1.0, 0.0, 1.0, {Op.DIV: inf, Op.LOG: 0.0, Op.LOG2: 0.0, Op.FLOOR_DIV: inf}),
        (-inf, 3.0, 1.0, {Op.MAX: 3.0, Op.MIN: -inf, Op.EXP: 0.0, Op.TANH: -1.0}),
    ]
    ops = sorted({op for *_, table in rows for op in table}, key=lambda op: op.value)
    inputs = [np.array([row[k] for row in rows], dtype=elem.numpy) for k in range(3)]
    got, _ = _run_table(client, elem, inputs, ops, [Op.ISNAN])
    for slot, op in enumerate(ops):
        for k, (*args, table) in enumerate(rows):
            if op in table:
                assert got[slot][k] == table[op] or (
                    math.isnan(table[op]) and math.isnan(got[slot][k])
                ), f"{op}{tuple(args)} = {got[slot][k]!r}, want {table[op]!r}"
                if table[op] == 0:
                    assert math.copysign(1, got[slot][k]) == math.copysign(1, table[op]), (
                        f"{op}{tuple(args)} = {got[slot][k]!r}, want {table[op]!r}"
                    )


@pytest.mark.parametrize("elem", FLOAT_ELEMS, ids=str)
def test_nan_and_infinity_predicates(client, elem):
    need(client, elem)
    values = np.array([0.0, -1.0, math.inf, -math.inf, math.nan, 1e-3], dtype=elem.numpy)
    _, flags = _run_table(
        client, elem, [values, values, values], [Op.ASSIGN], [Op.ISNAN, Op.ISINF, Op.EQ]
    )
    np.testing.assert_array_equal(flags[0], np.isnan(values))
    np.testing.assert_array_equal(flags[1], np.isinf(values))
    np.testing.assert_array_equal(flags[2], values == values)  # NaN != NaN


@kernel
def self_comparisons(x: Array[Float], turns: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        for _ in range(turns[i]):  # 0 turns, which a compiler does not know
            v = x[i] + Float(1.0)
        v = trunc(v)  # a value computed, not loaded
        w = floor(v)
        for k in range(9):
            out[9 * i + k] = u32(0)
        t = u32(0)
        while t < turns[i] + u32(2):  # turns a compiler does not know
            t += u32(1)
            if v == v:
                out[9 * i] += u32(1)
            if v != v:
                out[9 * i + 1] += u32(1)
            if v <= v:
                out[9 * i + 2] += u32(1)
            if v >= v:
                out[9 * i + 3] += u32(1)
            if not (v < v):
                out[9 * i + 4] += u32(1)
            if not (v > w):
                out[9 * i + 5] += u32(1)
            if floor(v) == w:  # two computations of one value
                out[9 * i + 6] += u32(1)
            if not (v != v):  # noqa: SIM202 (for a NaN, not v == v)
                out[9 * i + 7] += u32(1)
            if v < Float(math.inf):
                out[9 * i + 8] += u32(1)


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_a_nan_compares_unequal_and_unordered_to_itself(client, elem):
    """A NaN compared with itself (one value, or two computations of it) is unequal and
    unordered: ``==``, ``<=`` and ``>=`` are false, ``!=``, ``not <`` and ``not >`` true, also
    where a shader compiler may assume that no value is a NaN and fold ``x == x`` to true."""
    need(client, elem)
    x = np.array([0.0, -0.0, 1.5, -7.0, math.inf, -math.inf, math.nan], dtype=elem.numpy)
    turns = np.zeros(x.size, np.uint32)
    got = run_kernel(client, self_comparisons, [x, turns], (9 * x.size, np.uint32), dim=x.size)
    v = np.trunc(x)
    w = np.floor(v)
    columns = [v == v, v != v, v <= v, v >= v, ~(v < v), ~(v > w), np.floor(v) == w, ~(v != v)]
    columns.append(v < np.inf)
    want = 2 * np.stack(columns, axis=-1).astype(np.uint32)  # two turns
    np.testing.assert_array_equal(got.reshape(x.size, 9), want)


@kernel
def zero_products(x: Array[Float], out: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        zero = floor(Float(0.25))  # zeros a compiler evaluates while it compiles
        negative_zero = trunc(Float(-0.5))
        out[9 * i] = v - v
        out[9 * i + 1] = Float(0.0) * v
        out[9 * i + 2] = v * Float(-0.0)
        out[9 * i + 3] = v * zero
        out[9 * i + 4] = negative_zero * v
        out[9 * i + 5] = floor(v) - floor(v)  # equal values of two computations
        out[9 * i + 6] = v + -v
        out[9 * i + 7] = select(False, zero, v) - v  # v, chosen by a condition a compiler knows
        before = floor(v)
        v = v + Float(1.0)
        out[9 * i + 8] = before - floor(v)  # one computation of two values: not an identity


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_identities_that_fail_for_an_infinity_or_a_nan_are_not_folded(client, elem):
    """``x - x``, ``floor(x) - floor(x)``, ``x + -x``, ``select(False, 0.0, x) - x``,
    ``0.0 * x`` and ``x * -0.0``, and ``x`` times a zero computed from constants
    (``floor(0.25)``, ``trunc(-0.5)``), are signed zeros for a finite ``x`` and NaN for an
    infinity or a NaN, also where a shader compiler may assume finite values and fold them to a
    zero; ``floor(x) - floor(x + 1)``, one computation of two values, is not folded with them."""
    need(client, elem)
    x = np.array([0.0, -0.0, 1.5, -7.0, math.inf, -math.inf, math.nan, 1e4], dtype=elem.numpy)
    got = run_kernel(client, zero_products, [x], (9 * x.size, elem.numpy), dim=x.size)
    zero, negative_zero = x.dtype.type(0.0), x.dtype.type(-0.0)
    with np.errstate(invalid="ignore"):
        columns = [x - x, zero * x, x * negative_zero, x * zero, negative_zero * x]
        columns += [np.floor(x) - np.floor(x), x + -x, x - x, np.floor(x) - np.floor(x + 1)]
        want = np.stack(columns, axis=-1).ravel()
    _assert_same_values(got, want)


@kernel
def zero_products_in_a_loop(x: Array[Float], out: Array[Float], turns: u32):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        for _ in range(turns):  # turns a compiler does not know
            zero = select(False, Float(-7.0), Float(0.0))  # a zero it knows in each turn
            out[2 * i] = zero * floor(v)
            out[2 * i + 1] = floor(Float(0.25)) * v


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_products_with_a_zero_computed_in_each_turn_of_a_loop_are_not_folded(client, elem):
    """``0.0 * x``, where the zero is computed from constants in the loop's turn, is NaN for an
    infinite ``x`` also inside a loop whose turns a shader compiler does not know."""
    need(client, elem)
    x = np.array([1.5, -0.0, math.inf, -math.inf, math.nan], dtype=elem.numpy)
    got = run_kernel(
        client, zero_products_in_a_loop, [x], (2 * x.size, elem.numpy), [2], dim=x.size
    )
    zero = x.dtype.type(0.0)
    with np.errstate(invalid="ignore"):
        want = np.stack([zero * np.floor(x), zero * x], axis=-1).ravel()
    _assert_same_values(got, want)


@kernel
def half_powers(x: Array[Float], out: Array[Float], e: Float):
    i = ABSOLUTE_POS
    if i < x.len():
        out[3 * i] = x[i] ** Float(0.5)  # an exponent known when the kernel is built
        out[3 * i + 1] = x[i] ** e  # one exponent for every unit
        out[3 * i + 2] = e ** x[i]


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_a_power_by_one_half_is_cs_pow_not_a_square_root(client, elem):
    """``x ** 0.5`` is C's ``pow``: ``+0.0`` for ``-0.0`` and ``+inf`` for ``-inf`` (a square
    root gives ``-0.0`` and NaN), whether the exponent is a constant or one scalar; finite
    powers within ``pow``'s tolerance (CUDA's f64 ``pow(0.5, 4.0)`` is 1 ulp below 0.0625)."""
    need(client, elem)
    x = np.array([-0.0, 0.0, -math.inf, math.inf, 4.0, -4.0, math.nan], dtype=elem.numpy)
    got = run_kernel(client, half_powers, [x], (3 * x.size, elem.numpy), [0.5], dim=x.size)
    nan, inf = math.nan, math.inf
    roots = [0.0, 0.0, inf, inf, 2.0, nan, nan]
    exponentials = [1.0, 1.0, inf, 0.0, 0.0625, 16.0, nan]  # 0.5 ** x
    want = np.array([roots, roots, exponentials], dtype=elem.numpy).T.ravel()
    assert_matches(got, want, elem, op_class(Op.POW), what="x ** 0.5 and 0.5 ** x")
    _assert_same_signs(got, want)


@kernel
def position_sums(out: Array[Float], s: Float):
    zero = Float(UNIT_POS)  # 0 in a cube of one unit, where a compiler may know it
    one = Float(RUDA_DIM)  # the cube's size, which a compiler may know
    out[0] = zero + s
    out[1] = zero - s
    out[2] = zero * s
    out[3] = one * s + Float(0.0)


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_arithmetic_with_positions_a_compiler_knows_keeps_zeros_and_nan(client, elem):
    """In a cube of one unit, ``f(UNIT_POS)`` is a zero and ``f(RUDA_DIM)`` a one that a shader
    compiler may know while it builds the kernel for the launch: with a scalar ``s``,
    ``0.0 + -0.0`` and ``0.0 - 0.0`` are ``0.0``, ``0.0 * inf`` is NaN, and ``1.0 * -0.0 + 0.0``
    is ``0.0``."""
    need(client, elem)
    x = np.array([0.0, -0.0, 1.5, -7.0, math.inf, -math.inf, math.nan], dtype=elem.numpy)
    got = np.stack([run_kernel(client, position_sums, [], (4, elem.numpy), [s]) for s in x])
    zero = x.dtype.type(0.0)
    with np.errstate(invalid="ignore"):
        want = np.stack([zero + x, zero - x, zero * x, x + zero], axis=-1)
    _assert_same_values(got, want)


@kernel
def zero_fmas(x: Array[Float], out: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        zero = floor(Float(0.25))  # a zero a compiler evaluates while it compiles
        out[4 * i] = fma(v, zero, Float(0.0))
        out[4 * i + 1] = fma(Float(0.0), v, Float(-0.0))
        out[4 * i + 2] = fma(v, select(False, Float(-7.0), Float(0.0)), Float(1.5))
        out[4 * i + 3] = fma(v, Float(1.0), Float(0.0))


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_fmas_with_a_zero_a_compiler_knows_are_not_folded(client, elem):
    """``fma(x, 0.0, c)`` is ``0.0 * x + c``: NaN for an infinite ``x`` or a NaN, the sum of
    zeros' sign for a zero ``c``, also where a shader compiler knows the zero and may fold it
    to ``c``; ``fma(x, 1.0, 0.0)`` is ``x + 0.0``, ``0.0`` for ``x = -0.0``."""
    need(client, elem)
    x = np.array([0.0, -0.0, 1.5, -7.0, math.inf, -math.inf, math.nan], dtype=elem.numpy)
    got = run_kernel(client, zero_fmas, [x], (4 * x.size, elem.numpy), dim=x.size)
    zero, negative_zero = x.dtype.type(0.0), x.dtype.type(-0.0)
    with np.errstate(invalid="ignore"):
        columns = [x * zero + zero, zero * x + negative_zero, x * zero + x.dtype.type(1.5)]
        want = np.stack([*columns, x + zero], axis=-1).ravel()
    _assert_same_values(got, want)


@kernel
def chosen_constants(x: Array[Float], out: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        positive = v > Float(0.0)  # known at run time only
        zero = select(positive, Float(0.0), Float(-0.0))  # a zero, whichever is chosen
        divisor = select(positive, Float(-0.5), Float(1.0))
        out[4 * i] = fma(v, zero, Float(0.0))
        out[4 * i + 1] = v * zero
        out[4 * i + 2] = Float(0.0) / divisor
        out[4 * i + 3] = v + zero


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_arithmetic_with_one_of_two_constants_keeps_zeros_and_nan(client, elem):
    """A value chosen at run time between two constants is one a compiler may know things of
    (both are zeros; neither is a zero), and fold by: ``fma(x, z, 0.0)`` and ``x * z`` of a
    zero ``z`` are NaN for an infinite ``x``, ``0.0 / d`` has the sign of ``d``, and
    ``-0.0 + -0.0`` is ``-0.0``."""
    need(client, elem)
    x = np.array([0.0, -0.0, 1.5, -7.0, math.inf, -math.inf, math.nan], dtype=elem.numpy)
    got = run_kernel(client, chosen_constants, [x], (4 * x.size, elem.numpy), dim=x.size)
    zero = np.where(x > 0, x.dtype.type(0.0), x.dtype.type(-0.0))
    divisor = np.where(x > 0, x.dtype.type(-0.5), x.dtype.type(1.0))
    with np.errstate(invalid="ignore"):
        columns = [x * zero + x.dtype.type(0.0), x * zero, x.dtype.type(0.0) / divisor, x + zero]
    _assert_same_values(got, np.stack(columns, axis=-1).ravel())


@kernel
def zero_sums(x: Array[Float], out: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        zero = floor(Float(0.25))  # zeros a compiler evaluates while it compiles
        negative_zero = trunc(Float(-0.5))
        out[9 * i] = v + Float(0.0)
        out[9 * i + 1] = Float(0.0) - v
        out[9 * i + 2] = v + zero
        out[9 * i + 3] = zero - v
        out[9 * i + 4] = v - negative_zero
        out[9 * i + 5] = abs(Float(-0.0))
        out[9 * i + 6] = copysign(v, zero)
        minus, plus = Float(-0.0), Float(0.0)  # two zeros, not one value
        out[9 * i + 7] = minus - plus
        out[9 * i + 8] = minus + -plus


@pytest.mark.parametrize("elem", [Elem.F16, Elem.F32, Elem.F64], ids=str)
def test_the_signs_of_zeros_are_kept_where_a_compiler_knows_a_zero(client, elem):
    """``x + 0.0``, ``0.0 - x`` and ``x - (-0.0)`` are ``0.0`` for a zero ``x`` of either sign
    (``-0.0 + 0.0`` is ``0.0``), ``abs(-0.0)`` is ``0.0``, ``copysign(x, 0.0)`` is ``|x|``, and
    ``-0.0 - 0.0`` and ``-0.0 + -0.0`` are ``-0.0``, also where the zero is computed from
    constants and a shader compiler may ignore the signs of zeros (fold ``x + 0.0`` to ``x``)."""
    need(client, elem)
    x = np.array([0.0, -0.0, 1.5, -7.0, math.inf, -math.inf, 1e4], dtype=elem.numpy)
    got = run_kernel(client, zero_sums, [x], (9 * x.size, elem.numpy), dim=x.size)
    zero, negative_zero = x.dtype.type(0.0), x.dtype.type(-0.0)
    columns = [x + zero, zero - x, x + zero, zero - x, x - negative_zero, np.zeros_like(x), abs(x)]
    columns += [np.full_like(x, negative_zero)] * 2
    want = np.stack(columns, axis=-1).ravel()
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all(), (got, want)


#: Operands written as constants: those a compiler folds wrongly when it assumes finite values
#: and no signed zeros, and a finite one.
CONSTANT_EDGES = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5)
#: Operations a kernel of constant operations holds: a compiler takes longer than in proportion
#: to build a longer one (Intel's CPU OpenCL and lavapipe took twice as long for all of them).
CONSTANT_KERNEL_CASES = 200


def _constant_cases(ops: list[Op]) -> list[tuple[Op, tuple[float, ...]]]:
    """Each operation of ``ops`` on each edge, pair of edges, or pair with a third edge."""
    edges = CONSTANT_EDGES
    pairs = list(itertools.product(edges, edges))
    operands = {
        1: [(x,) for x in edges],
        2: pairs,
        3: [(a, b, edges[(k + 2) % len(edges)]) for k, (a, b) in enumerate(pairs)],
    }
    return [(op, args) for op in ops for args in operands[arity(op)]]


def _run_constant_cases(client, elem, cases, result):
    """The results of ``cases`` (:func:`_constant_cases`) on ``client``, computed by kernels of
    :data:`CONSTANT_KERNEL_CASES` of them."""
    parts = []
    for start in range(0, len(cases), CONSTANT_KERNEL_CASES):
        part = cases[start : start + CONSTANT_KERNEL_CASES]
        name = f"conformance_constant_ops_{elem}_{result}_{start}"
        defn = constant_ops_kernel(name, elem, part, result)
        parts += run_definition(client, defn, [np.zeros(len(part), result.numpy)])
    return np.concatenate(parts)


@pytest.mark.parametrize("elem", FLOAT_ELEMS, ids=str)
def test_every_operation_of_constants_matches_the_reference(client, reference, elem):
    """Every operation of the table on NaN, infinities, signed zeros and a finite value
    written as constants gives what the reference device gives (within the tolerance table),
    also where a compiler evaluates it while it builds the kernel: one that assumes finite
    values and no signed zeros folds ``ceil(NaN)`` to a zero, ``x - x`` to ``0`` or
    ``abs(-0.0)`` to ``-0.0``."""
    need(client, elem, reference=reference)
    failures = []
    for ops, result in ((VALUE_OPS, elem), (BOOL_OPS, Elem.BOOL)):
        cases = _constant_cases(ops)
        got, want = (_run_constant_cases(d, elem, cases, result) for d in (client, reference))
        for op in ops:
            rows = [k for k, (case_op, _) in enumerate(cases) if case_op is op]
            args = list(np.array([cases[k][1] for k in rows], elem.numpy).T)
            cls = op_class(op) if result is elem else OpClass.EXACT
            try:
                assert_matches(got[rows], want[rows], result, cls, what=str(op), inputs=args)
            except AssertionError as exc:
                failures.append(str(exc))
    assert not failures, "\n".join(failures)


@requires_elem(Elem.F64)
def test_f64_keeps_double_precision(client):
    a = np.array([1.0, 3.0, 1e15], dtype=np.float64)
    b = np.array([2.0**-40, 2.0**-30, 1.0], dtype=np.float64)
    got, _ = _run_table(client, Elem.F64, [a, b, b], [Op.ADD, Op.SUB], [])
    np.testing.assert_array_equal(got[0] - a, b, "f64 addition rounded like a narrower type")
