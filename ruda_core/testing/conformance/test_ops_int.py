"""Integer operations on every integer type the device supports: arithmetic (wrapping),
``FLOOR_DIV``/``MOD`` with Python's sign rules, bitwise operations, shifts modulo the width,
``MIN``/``MAX``/``ABS``/``NEG``/``CLAMP``, comparisons, and the bit operations (``popcount``,
``leading_zeros``, ``trailing_zeros``, ``find_first_set``, ``reverse_bits``, ``mul_hi``,
saturating ``+ -``), exactly as the reference computes them. Division by zero gives an
unspecified value but must not crash."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import BIT_COUNTS, INT_BINARY, INT_UNARY, Elem, Op
from ruda_core.lang import ABSOLUTE_POS, UNIT_POS, UNIT_POS_X, UNIT_POS_Y, Array, Int, clamp, kernel
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.markers import need
from ruda_core.testing.opkernels import BLOCK, int_inputs, ops_kernel
from ruda_core.testing.runner import run_definition, run_kernel
from ruda_core.testing.tolerance import assert_matches

INT_ELEMS = [Elem.I8, Elem.I16, Elem.I32, Elem.I64, Elem.U8, Elem.U16, Elem.U32, Elem.U64]
VALUE_OPS = [
    Op.ADD,
    Op.SUB,
    Op.MUL,
    Op.FLOOR_DIV,
    Op.MOD,
    Op.MIN,
    Op.MAX,
    Op.BIT_AND,
    Op.BIT_OR,
    Op.BIT_XOR,
    Op.SHL,
    Op.SHR,
    Op.NEG,
    Op.ABS,
    Op.BIT_NOT,
    Op.CLAMP,
    Op.ASSIGN,
    *sorted(INT_UNARY | INT_BINARY, key=lambda op: op.value),
]
COUNTS = sorted(BIT_COUNTS, key=lambda op: op.value)
COMPARES = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE]
#: (a, b) -> (a // b, a % b) with Python's rules, for every signed type.
SIGN_RULES = [
    (7, 2, 3, 1),
    (-7, 2, -4, 1),
    (7, -2, -4, -1),
    (-7, -2, 3, -1),
    (6, 3, 2, 0),
    (-6, 3, -2, 0),
    (0, -5, 0, 0),
    (1, 100, 0, 1),
    (-1, 100, -1, 99),
]


def _run_table(client, elem, inputs):
    defn = ops_kernel(f"conformance_int_ops_{elem}", elem, VALUE_OPS, COMPARES)
    n = len(inputs[0])
    out = np.zeros(n * len(VALUE_OPS), elem.numpy)
    flags = np.zeros(n * len(COMPARES), bool)
    result = run_definition(client, defn, [*inputs, out, flags], count=-(-n // BLOCK), dim=BLOCK)
    return result[3].reshape(len(VALUE_OPS), n), result[4].reshape(len(COMPARES), n)


@pytest.mark.parametrize("elem", INT_ELEMS, ids=str)
def test_integer_ops_match_the_reference(client, reference, elem):
    need(client, elem, reference=reference)
    inputs = int_inputs(elem)
    got, got_flags = _run_table(client, elem, inputs)
    want, want_flags = _run_table(reference, elem, inputs)
    defined = inputs[1] != 0
    for slot, op in enumerate(VALUE_OPS):
        mask = defined if op in (Op.FLOOR_DIV, Op.MOD) else np.ones_like(defined)
        assert_matches(
            got[slot][mask], want[slot][mask], elem, what=str(op), inputs=[x[mask] for x in inputs]
        )
    for slot, op in enumerate(COMPARES):
        assert_matches(got_flags[slot], want_flags[slot], Elem.BOOL, what=str(op), inputs=inputs)


@pytest.mark.parametrize("elem", [Elem.I8, Elem.I16, Elem.I32, Elem.I64], ids=str)
def test_floor_div_and_mod_follow_python_sign_rules(client, elem):
    need(client, elem)
    a, b, q, r = (np.array(col, dtype=elem.numpy) for col in zip(*SIGN_RULES, strict=True))
    got, _ = _run_table(client, elem, [a, b, b])
    np.testing.assert_array_equal(got[VALUE_OPS.index(Op.FLOOR_DIV)], q, "floor_div")
    np.testing.assert_array_equal(got[VALUE_OPS.index(Op.MOD)], r, "mod")


@pytest.mark.parametrize("elem", [Elem.I32, Elem.U32, Elem.I64, Elem.U64], ids=str)
def test_wrapping_and_shift_amounts_modulo_the_width(client, elem):
    need(client, elem)
    bits = elem.bits
    info = np.iinfo(elem.numpy)
    a = np.array([info.max, info.min, 1, 1, -1 if elem.is_signed else info.max], dtype=elem.numpy)
    b = np.array([1, 1, bits, bits + 3, 1], dtype=elem.numpy)
    got, _ = _run_table(client, elem, [a, b, b])
    add = got[VALUE_OPS.index(Op.ADD)]
    assert add[0] == info.min and add[1] == info.min + 1  # max + 1 wraps to min
    shl = got[VALUE_OPS.index(Op.SHL)]
    assert shl[2] == 1 and shl[3] == 8  # shift by bits is shift by 0; by bits + 3 is by 3
    shr = got[VALUE_OPS.index(Op.SHR)]
    expected_shr = -1 if elem.is_signed else info.max >> 1  # arithmetic vs logical
    assert shr[4] == expected_shr


def test_division_by_zero_does_not_crash(client):
    elem = Elem.I32
    a = np.array([5, -5, 0, np.iinfo(np.int32).min], dtype=np.int32)
    b = np.zeros(4, dtype=np.int32)
    got, _ = _run_table(client, elem, [a, b, b])  # any value, but the launch completes
    assert got.shape == (len(VALUE_OPS), 4)
    np.testing.assert_array_equal(got[VALUE_OPS.index(Op.ADD)], a)


@pytest.mark.parametrize("elem", INT_ELEMS, ids=str)
def test_bit_counts_match_the_reference(client, reference, elem):
    need(client, elem, reference=reference)
    inputs = int_inputs(elem)
    defn = ops_kernel(f"conformance_bit_counts_{elem}", elem, [], COUNTS, bool_result=Elem.U32)
    n = len(inputs[0])
    arrays = [*inputs, np.zeros(0, elem.numpy), np.zeros(n * len(COUNTS), np.uint32)]
    got, want = (
        run_definition(c, defn, arrays, count=-(-n // BLOCK), dim=BLOCK)[4].reshape(-1, n)
        for c in (client, reference)
    )
    for slot, op in enumerate(COUNTS):
        assert_matches(got[slot], want[slot], Elem.U32, what=str(op), inputs=inputs[:1])


def _values_per_unit(client, reference, elem: Elem, name: str, make, expected) -> None:
    """Check a kernel of one unit per value of ``x`` and ``y`` (8 units, one cube) storing the
    values ``make(k, x[i], y[i])`` builds at ``out[n*i .. n*i+n-1]``: the reference must give
    ``expected(x, y)`` (a list of ``n`` arrays) and the device what the reference gives."""
    need(client, elem, reference=reference)
    info = np.iinfo(elem.numpy)
    x = np.array([0, 1, 5, 100, info.max, info.min, info.max // 3, info.min + 7], elem.numpy)
    y = np.array([3, 0, info.max, 99, info.min, info.max // 5, 1, info.min + 9], elem.numpy)
    k = KernelBuilder(f"conformance_{name}_{elem}")
    arrays = [k.array(a, elem, read_only=True) for a in "xy"]
    out = k.array("out", elem)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    results = make(k, *(k.let(Op.INDEX, elem, a, i) for a in arrays))
    first = k.let(Op.MUL, Elem.U32, i, const(len(results), Elem.U32))
    for slot, value in enumerate(results):
        at = k.let(Op.ADD, Elem.U32, first, const(slot, Elem.U32))
        k.do(Op.INDEX_ASSIGN, None, out, at, value)
    defn, n = k.build(), len(results)
    got, want = (
        run_definition(c, defn, [x, y, np.zeros(n * x.size, elem.numpy)], dim=x.size)[2]
        for c in (client, reference)
    )
    np.testing.assert_array_equal(want, np.stack(expected(x, y), axis=1).ravel())
    inputs = [np.repeat(x, n), np.repeat(y, n)]
    assert_matches(got, want, elem, what=name.replace("_", " "), inputs=inputs)


@pytest.mark.parametrize("elem", INT_ELEMS, ids=str)
def test_complements_of_min_and_max(client, reference, elem):
    """``min(x >> 1, ~x)``, ``max(x >> 1, ~x)``, ``~min(x, y)`` and ``~max(x, y)``, on cubes of
    8 units: Intel's CPU OpenCL compiler (2026.2), where a work-group's items run one at a
    time, gets each wrong on 32- and 64-bit integers however min, max and the complement are
    written, unless it cannot see through the complement (the OpenCL dialect's form)."""

    def make(k, v, w):
        shifted = k.let(Op.SHR, elem, v, const(1, elem))
        n = k.let(Op.BIT_NOT, elem, v)
        results = [k.let(Op.MIN, elem, shifted, n), k.let(Op.MAX, elem, shifted, n)]
        ops = (Op.MIN, Op.MAX)
        return results + [k.let(Op.BIT_NOT, elem, k.let(op, elem, v, w)) for op in ops]

    def expected(x, y):
        extremes = [np.minimum(x >> 1, ~x), np.maximum(x >> 1, ~x)]
        return [*extremes, ~np.minimum(x, y), ~np.maximum(x, y)]

    _values_per_unit(client, reference, elem, "complements_of_extremes", make, expected)


@pytest.mark.parametrize("elem", [Elem.I8, Elem.I16, Elem.I32], ids=str)
def test_a_narrower_signed_value_widened_to_64_bits_keeps_its_sign(client, reference, elem):
    """``abs(i64(x))``, ``i64(x) < 0`` and the high word ``i64(x) >> 32`` of a signed ``x``
    narrower than 64 bits (lavapipe's ``i64(x)`` of a negative 32-bit value held the right bits
    but compared as not negative), each cast back to ``x``'s type."""
    need(client, Elem.I64, reference=reference)

    def make(k, v, _):
        wide = k.let(Op.CAST, Elem.I64, v)
        negative = k.let(Op.LT, Elem.BOOL, wide, const(0, Elem.I64))
        return [
            k.let(Op.CAST, elem, k.let(Op.ABS, Elem.I64, wide)),
            k.let(Op.SELECT, elem, negative, const(1, elem), const(0, elem)),
            k.let(Op.CAST, elem, k.let(Op.SHR, Elem.I64, wide, const(32, Elem.I64))),
        ]

    def expected(x, _):
        w = x.astype(np.int64)
        return [np.abs(w).astype(elem.numpy), (w < 0).astype(elem.numpy), (w >> 32).astype(x.dtype)]

    _values_per_unit(client, reference, elem, "widened_signs", make, expected)


@pytest.mark.parametrize("elem", INT_ELEMS, ids=str)
def test_min_and_max_of_a_value_and_its_complement(client, reference, elem):
    """Intel's CPU OpenCL compiler once folded ``min(x, ~x)`` and ``max(x, ~x)`` to ``x``; the
    literal operands check that the OpenCL form of min and max names one overload per type:
    ``min(~x, x), max(~x, x), clamp(~x, x, ~x), min(x, 1), max(1, x)``."""

    def make(k, v, _):
        n = k.let(Op.BIT_NOT, elem, v)
        results = [k.let(Op.MIN, elem, n, v), k.let(Op.MAX, elem, n, v)]
        results.append(k.let(Op.CLAMP, elem, n, v, n))
        results.append(k.let(Op.MIN, elem, v, const(1, elem)))
        return [*results, k.let(Op.MAX, elem, const(1, elem), v)]

    def expected(x, _):
        complement = ~x  # clamp(~x, x, ~x) is ~x: hi where lo > hi, else min(max(~x, x), ~x)
        lo, hi = np.minimum(complement, x), np.maximum(complement, x)
        one = np.ones_like(x)
        return [lo, hi, complement, np.minimum(x, one), np.maximum(one, x)]

    _values_per_unit(client, reference, elem, "extremes_of_complements", make, expected)


@kernel
def nested_extrema(x: Array[Int], out: Array[Int]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = -(x[i] + Int(UNIT_POS))
        a, b = Int(UNIT_POS_Y), Int(UNIT_POS_X)
        out[4 * i] = max(max(a, v), b)
        out[4 * i + 1] = min(min(a, v), b)
        out[4 * i + 2] = -clamp(max(a, v), b, Int(UNIT_POS))
        out[4 * i + 3] = max(max(x[i] & Int(7), -x[i]), (x[i] >> Int(8)) & Int(31))


@pytest.mark.parametrize("elem", [Elem.I32, Elem.I64], ids=str)
def test_nested_extrema_of_a_negated_value(client, elem):
    """``max(max(a, -t), b)``, ``min(min(a, -t), b)`` and a clamp of such a ``max``, of values
    known at run time only: NVIDIA's PTX assembler (CUDA 13, and the driver's for OpenCL) fuses
    the two into one operation and drops the negation at its default optimisation level, so the
    CUDA and OpenCL code keeps an integer ``min`` or ``max`` from merging with another."""
    need(client, elem)
    dtype = elem.numpy
    x = np.random.default_rng(1).integers(-(2**31), 2**31, 64).astype(dtype)
    got = run_kernel(client, nested_extrema, [x], (4 * x.size, dtype), dim=(32, 2))
    units = np.arange(x.size, dtype=dtype)
    with np.errstate(over="ignore"):
        v = -(x + units)
        a, b = units // 32, units % 32
        columns = [
            np.maximum(np.maximum(a, v), b),
            np.minimum(np.minimum(a, v), b),
            -np.minimum(np.maximum(np.maximum(a, v), b), units),
            np.maximum(np.maximum(x & 7, -x), (x >> 8) & 31),
        ]
    np.testing.assert_array_equal(got, np.stack(columns, axis=-1).ravel())
