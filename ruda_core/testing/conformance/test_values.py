"""Casts between every pair of supported element types (where the IR defines them), ``SELECT``,
logic on ``bool`` and array metadata (``LEN``, ``SHAPE``, ``STRIDE``, ``RANK``)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from ruda_core.ir import Elem, Op
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.markers import need, requires_elem
from ruda_core.testing.opkernels import BLOCK, arity, float_edges, int_edges, ops_kernel
from ruda_core.testing.runner import run_definition
from ruda_core.testing.tolerance import assert_matches

ELEMS = list(Elem)


def _supported(client, reference):
    have = client.features()
    return [e for e in ELEMS if have.supports(e) and reference.features().supports(e)]


def _cast_kernel(source: Elem, targets: list[Elem]):
    k = KernelBuilder(f"conformance_casts_from_{source}")
    a = k.array("a", source, read_only=True)
    outs = [k.array(f"out_{t}", t) for t in targets]
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    with k.if_(k.let(Op.LT, Elem.BOOL, i, k.let(Op.LEN, Elem.U32, a))):
        x = k.load(a, i)
        for out, t in zip(outs, targets, strict=True):
            k.store(out, i, k.let(Op.CAST, t, x))
    return k.build()


def _cast_inputs(source: Elem, random: int = 64) -> np.ndarray:
    """Edge values of ``source``, then ``random`` seeded random ones."""
    if source is Elem.BOOL:
        return np.array([False, True, True, False], dtype=bool)
    rng = np.random.default_rng(11)
    if source.is_int:
        info = np.iinfo(source.numpy)
        extra = rng.integers(int(info.min), int(info.max), random, source.numpy, endpoint=True)
        return np.concatenate([np.array(int_edges(source), dtype=source.numpy), extra])
    values = [
        *float_edges(source),
        3.7,
        -3.7,
        127.9,
        -128.9,
        255.5,
        65504.0,
        -32768.5,
        1e9,
        -2.1e9,
        4.2e9,
        1.5e19,
        -9e18,
        1e-4,
    ]
    extra = rng.uniform(-300, 300, random)
    with np.errstate(over="ignore"):  # large values become infinities in f16
        return np.concatenate([np.array(values), extra]).astype(source.numpy)


def _defined(values: np.ndarray, source: Elem, target: Elem) -> np.ndarray:
    """Where the IR defines CAST(values) to ``target`` and C can express it."""
    wide = values.astype(np.float64) if source.is_float else values.astype(object)
    mask = np.ones(len(values), dtype=bool)
    for k, v in enumerate(wide):
        if source.is_float and target.is_int:
            info = np.iinfo(target.numpy)
            mask[k] = math.isfinite(v) and int(info.min) <= math.trunc(v) <= int(info.max)
        elif target.is_float and source is not Elem.BOOL:
            limit = float(ml_dtypes.finfo(target.numpy).max)
            mask[k] = not (math.isfinite(float(v)) and abs(float(v)) > limit)
    return mask


@pytest.mark.parametrize("source", ELEMS, ids=str)
def test_casts_match_the_reference(client, reference, source):
    need(client, source, reference=reference)
    targets = _supported(client, reference)
    defn = _cast_kernel(source, targets)
    values = _cast_inputs(source)
    n = len(values)
    arrays = [values, *(np.zeros(n, t.numpy) for t in targets)]
    count = -(-n // BLOCK)
    got = run_definition(client, defn, arrays, count=count, dim=BLOCK)[1:]
    want = run_definition(reference, defn, arrays, count=count, dim=BLOCK)[1:]
    for t, g, w in zip(targets, got, want, strict=True):
        mask = _defined(values, source, t)
        assert_matches(g[mask], w[mask], t, what=f"cast {source} -> {t}", inputs=[values[mask]])


def _constant_cast_kernel(source: Elem, values: np.ndarray, targets: list[Elem]):
    """``out_t[k] = t(values[k])`` for each target ``t``, each value a constant in the kernel."""
    k = KernelBuilder(f"conformance_constant_casts_from_{source}")
    outs = [k.array(f"out_{t}", t) for t in targets]
    with k.if_(k.let(Op.EQ, Elem.BOOL, builtin("ABSOLUTE_POS"), const(0, Elem.U32))):
        for at, value in enumerate(values.tolist()):
            for out, t in zip(outs, targets, strict=True):
                k.store(out, const(at, Elem.U32), k.let(Op.CAST, t, const(value, source)))
    return k.build()


@pytest.mark.parametrize("source", ELEMS, ids=str)
def test_casts_of_constants_match_the_reference(client, reference, source):
    """Casts of edge values written as constants, which a compiler (or ruda, for a target that
    cannot convert a literal out of range) evaluates while it builds the kernel: each builds
    and runs, and gives the reference's value wherever the IR defines one (a NaN, an
    infinity or a float out of the integer's range casts to an unspecified integer)."""
    need(client, source, reference=reference)
    targets = [t for t in _supported(client, reference) if t is not source]
    values = _cast_inputs(source, random=0)
    defn = _constant_cast_kernel(source, values, targets)
    arrays = [np.zeros(len(values), t.numpy) for t in targets]
    got = run_definition(client, defn, arrays)
    want = run_definition(reference, defn, arrays)
    for t, g, w in zip(targets, got, want, strict=True):
        mask = _defined(values, source, t)
        assert_matches(g[mask], w[mask], t, what=f"cast {source} -> {t}", inputs=[values[mask]])


def test_cast_known_answers(client):
    values = np.array([3.7, -3.7, 0.0, -0.5, 255.0, 1e-3], dtype=np.float32)
    defn = _cast_kernel(Elem.F32, [Elem.I32, Elem.U8, Elem.BOOL])
    arrays = [values, np.zeros(6, np.int32), np.zeros(6, np.uint8), np.zeros(6, bool)]
    _, as_i32, as_u8, as_bool = run_definition(client, defn, arrays, dim=8)
    np.testing.assert_array_equal(as_i32, [3, -3, 0, 0, 255, 0])  # truncation toward zero
    np.testing.assert_array_equal(as_u8[[0, 2, 4, 5]], [3, 0, 255, 0])
    np.testing.assert_array_equal(as_bool, [True, True, False, True, True, True])
    ints = np.array([-1, 300, 65536 + 7, 2**31 - 1], dtype=np.int64)
    defn = _cast_kernel(Elem.I64, [Elem.U8, Elem.I16, Elem.F32, Elem.BOOL])
    need(client, Elem.I64, Elem.U8, Elem.I16)
    arrays = [
        ints,
        np.zeros(4, np.uint8),
        np.zeros(4, np.int16),
        np.zeros(4, np.float32),
        np.zeros(4, bool),
    ]
    _, u8, i16, f32, flags = run_definition(client, defn, arrays, dim=4)
    np.testing.assert_array_equal(u8, [255, 44, 7, 255])  # wraps modulo 2**8
    np.testing.assert_array_equal(i16, [-1, 300, 7, -1])
    np.testing.assert_array_equal(f32, np.array([-1, 300, 65543, 2**31], dtype=np.float32))
    np.testing.assert_array_equal(flags, [True, True, True, True])


@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_select_and_comparisons_of_every_type(client, reference, elem):
    need(client, elem, reference=reference)
    if elem is Elem.BOOL:
        a = np.array([False, True, False, True] * 4)
        b, c = np.roll(a, 1), np.roll(a, 2)
    elif elem.is_int:
        a = np.array(int_edges(elem), dtype=elem.numpy)
        b, c = np.roll(a, 3), np.roll(a, 5)
    else:
        a = np.array(float_edges(elem), dtype=elem.numpy)
        b, c = np.roll(a, 3), np.roll(a, 5)
    k = KernelBuilder(f"conformance_select_{elem}")
    xs = [k.array(p, elem, read_only=True) for p in "abc"]
    out = k.array("out", elem)
    flags = k.array("flags", Elem.BOOL)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    with k.if_(k.let(Op.LT, Elem.BOOL, i, k.let(Op.LEN, Elem.U32, xs[0]))):
        x, y, z = (k.load(arr, i) for arr in xs)
        less = k.let(Op.LT, Elem.BOOL, x, y)
        k.store(out, i, k.let(Op.SELECT, elem, less, z, x))
        k.store(flags, i, k.let(Op.NE, Elem.BOOL, y, z))
    defn = k.build()
    arrays = [a, b, c, np.zeros_like(a), np.zeros(len(a), bool)]
    got = run_definition(client, defn, arrays, dim=BLOCK)
    want = run_definition(reference, defn, arrays, dim=BLOCK)
    assert_matches(got[3], want[3], elem, what="select", inputs=[a, b, c])
    assert_matches(got[4], want[4], Elem.BOOL, what="ne", inputs=[b, c])


def test_logic_on_bool(client):
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    ops = [Op.AND, Op.OR, Op.NOT, Op.EQ, Op.NE, Op.ASSIGN]
    defn = ops_kernel("conformance_bool_logic", Elem.BOOL, ops, [])
    out = np.zeros(4 * len(ops), bool)
    got = run_definition(client, defn, [a, b, b, out, np.zeros(0, bool)], dim=4)[3].reshape(
        len(ops), 4
    )
    expected = [a & b, a | b, ~a, a == b, a != b, a]
    for op, g, e in zip(ops, got, expected, strict=True):
        assert arity(op) in (1, 2)
        np.testing.assert_array_equal(g, e, str(op))


def test_array_and_tensor_metadata(client):
    k = KernelBuilder("conformance_metadata")
    arr = k.array("arr", Elem.F32, read_only=True)
    t = k.tensor("t", Elem.I32, 3, read_only=True)
    out = k.array("out", Elem.U32)
    with k.if_(k.let(Op.EQ, Elem.BOOL, builtin("ABSOLUTE_POS"), const(0, Elem.U32))):
        values = [
            k.let(Op.LEN, Elem.U32, arr),
            k.let(Op.LEN, Elem.U32, t),
            k.let(Op.RANK, Elem.U32, t),
        ]
        values += [k.let(Op.SHAPE, Elem.U32, t, const(d, Elem.U32)) for d in range(3)]
        values += [k.let(Op.STRIDE, Elem.U32, t, const(d, Elem.U32)) for d in range(3)]
        for slot, v in enumerate(values):
            k.store(out, const(slot, Elem.U32), v)
    defn = k.build()
    arrays = [np.zeros(37, np.float32), np.zeros((2, 3, 5), np.int32), np.zeros(9, np.uint32)]
    got = run_definition(client, defn, arrays, dim=4)[2]
    np.testing.assert_array_equal(got, [37, 30, 3, 2, 3, 5, 15, 5, 1])


def _narrowed_bits(client, target: Elem, bits: np.ndarray) -> np.ndarray:
    """The 16 bits of ``CAST`` to ``target`` (F16 or BF16) of each f32 of ``bits`` (a multiple
    of 256 of them) on ``client``."""
    k = KernelBuilder(f"conformance_f32_to_{target}")
    a = k.array("a", Elem.F32, read_only=True)
    out = k.array("out", target)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    with k.if_(k.let(Op.LT, Elem.BOOL, i, k.let(Op.LEN, Elem.U32, a))):
        k.store(out, i, k.let(Op.CAST, target, k.load(a, i)))
    n = bits.size
    arrays = [bits.view(np.float32), np.zeros(n, target.numpy)]
    return run_definition(client, k.build(), arrays, count=n // 256, dim=256)[1].view(np.uint16)


@requires_elem(Elem.BF16)
def test_f32_to_bf16_rounds_every_kind_of_bit_pattern_as_the_reference(client):
    """Every high half of an f32 (signs, zeros, subnormals, normals, infinities, NaNs) with the
    low halves that decide its rounding (exact, just above, just below and at a tie, and the
    most): the bits of the reference's round to nearest even; a NaN stays a NaN (its sign and
    payload are the device's: CUDA makes every NaN 0x7FFF)."""
    high = np.arange(1 << 16, dtype=np.uint32) << 16
    low = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)
    bits = (high[:, None] | low[None, :]).reshape(-1)
    got = _narrowed_bits(client, Elem.BF16, bits)
    with np.errstate(invalid="ignore"):
        want = bits.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    np.testing.assert_array_equal(got[~nan], want[~nan], "f32 -> bf16 bits")
    assert np.all((got[nan] & 0x7FFF) > 0x7F80), "a NaN stays a NaN"


@requires_elem(Elem.F16)
def test_f32_to_f16_rounds_every_kind_of_bit_pattern_as_the_reference(client):
    """f32 values of both signs from below half the least f16 subnormal to past the overflow,
    every f16 mantissa with the low bits that decide its rounding (exact, just above, just
    below and at a tie, and the most): the bits of the reference's round to nearest even
    (ties of subnormals, overflow to an infinity from 65520 included)."""
    exponents = np.arange(100, 144, dtype=np.uint32) << 23  # 2**-27 .. 2**16
    high = np.arange(1 << 10, dtype=np.uint32) << 13
    low = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF], np.uint32)
    magnitudes = (exponents[:, None, None] | high[None, :, None] | low[None, None, :]).reshape(-1)
    bits = np.concatenate([magnitudes, magnitudes | np.uint32(0x80000000)])
    got = _narrowed_bits(client, Elem.F16, bits)
    with np.errstate(over="ignore"):
        want = bits.view(np.float32).astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(got, want, "f32 -> f16 bits")


@requires_elem(Elem.F16)
def test_f16_results_are_rounded_before_the_next_operation_reads_them(client):
    """``c + (a + b)`` in f16 rounds ``a + b`` first: ``4 + 10000`` is a tie that rounds to
    10000, so adding 2 leaves 10000 (10008 where the sum was kept in f32), and ``12 + 10000``
    rounds to 10016, so subtracting it from 10 gives -10008 (-10000 unrounded)."""
    k = KernelBuilder("conformance_f16_chain")
    a = k.array("a", Elem.F16, read_only=True)
    b = k.array("b", Elem.F16, read_only=True)
    c = k.array("c", Elem.F16, read_only=True)
    out = k.array("out", Elem.F16)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    with k.if_(k.let(Op.LT, Elem.BOOL, i, k.let(Op.LEN, Elem.U32, a))):
        inner = k.let(Op.ADD, Elem.F16, k.load(a, i), k.load(b, i))
        k.store(out, i, k.let(Op.ADD, Elem.F16, k.load(c, i), inner))
        at = k.let(Op.ADD, Elem.U32, i, k.let(Op.LEN, Elem.U32, a))
        k.store(out, at, k.let(Op.SUB, Elem.F16, k.load(c, i), inner))
    av = np.array([4, 12, 4, 2048, 1], np.float16)
    bv = np.array([10000, 10000, 1e4, 1, 2048], np.float16)
    cv = np.array([2, 10, -2, 1, 1], np.float16)
    got = run_definition(client, k.build(), [av, bv, cv, np.zeros(10, np.float16)], dim=8)[3]
    inner = av + bv  # NumPy rounds each f16 operation
    np.testing.assert_array_equal(got, np.concatenate([cv + inner, cv - inner]))


@requires_elem(Elem.BF16)
def test_bf16_rounding_and_arithmetic(client):
    k = KernelBuilder("conformance_bf16")
    a = k.array("a", Elem.F32, read_only=True)
    b = k.array("b", Elem.F32, read_only=True)
    out = k.array("out", Elem.F32)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    n = k.let(Op.LEN, Elem.U32, a)
    with k.if_(k.let(Op.LT, Elem.BOOL, i, n)):
        x = k.let(Op.CAST, Elem.BF16, k.load(a, i))
        y = k.let(Op.CAST, Elem.BF16, k.load(b, i))
        for slot, value in enumerate(
            [x, k.let(Op.ADD, Elem.BF16, x, y), k.let(Op.MUL, Elem.BF16, x, y)]
        ):
            at = k.let(Op.ADD, Elem.U32, k.let(Op.MUL, Elem.U32, n, const(slot, Elem.U32)), i)
            k.store(out, at, k.let(Op.CAST, Elem.F32, value))
    # 1 + 2**-8 and 1 + 3 * 2**-8 are ties: bf16 rounds them to even (1 and 1 + 2**-6), as it
    # rounds the sum 255.5, which needs 9 significant bits of its 8, to 256
    a_values = np.array([1.5, -2.25, 256.0, 1.00390625, 1.01171875], dtype=np.float32)
    b_values = np.array([2.25, 4.0, -0.5, 1.0, 1.0], dtype=np.float32)
    got = run_definition(client, k.build(), [a_values, b_values, np.zeros(15, np.float32)], dim=8)
    np.testing.assert_array_equal(got[2][:5], [1.5, -2.25, 256.0, 1.0, 1.015625], "f32 -> bf16")
    np.testing.assert_array_equal(got[2][5:10], [3.75, 1.75, 256.0, 2.0, 2.015625], "add")
    np.testing.assert_array_equal(got[2][10:], [3.375, -9.0, -128.0, 1.0, 1.015625], "mul")
