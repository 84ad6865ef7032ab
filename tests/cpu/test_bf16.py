"""bf16 on the NumPy device, exactly: ml_dtypes' conversion rounds to nearest even (checked
against an integer model on the host), kernels round every result once (ties, NaN, infinities,
overflow, subnormals, literals, conversions from every type), and shared and local arrays,
atomics and plane operations keep the IR's meaning. The arithmetic and math of every float type,
bf16 included, are in ``test_ops``; bitcasts, lines, print and comparisons with other devices
are in the conformance suite."""

from __future__ import annotations

import numpy as np
import pytest
from bf16_model import BF16_SOURCES, bf16_bits, bf16_of_exact, bf16_value
from launch_modes import run

from ruda_core.ir import Elem, Op
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, bf16, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.runner import read_array

from .kernels import FILE

BF16, F32, U32 = Elem.BF16, Elem.F32, Elem.U32
#: Low halves of f32 bit patterns around bf16's rounding point: exact, below, at and above the
#: tie, and just below the next value.
LOW_HALVES = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)


def every_rounding_case() -> np.ndarray:
    """f32 bit patterns: every high half with each of :data:`LOW_HALVES` (both signs, zeros,
    subnormals, normals, the overflow to infinity, infinities and NaNs)."""
    high = np.arange(1 << 16, dtype=np.uint32) << 16
    return (high[:, None] | LOW_HALVES[None, :]).reshape(-1)


def rounded(patterns: np.ndarray) -> np.ndarray:
    """The model's bf16 bits of f32 bit patterns; a NaN gives a NaN of its sign."""
    values = patterns.view(np.float32)
    nan = np.isnan(values)
    return np.where(nan, (patterns >> 16) | 0x7FC0, bf16_bits(np.where(nan, 0, values)))


def bits_of(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).view(np.uint16)


def assert_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bf16 patterns; a NaN matches any NaN of the same sign."""
    got, want = bits_of(got), np.asarray(want, np.uint16)
    nan = (want & 0x7FFF) > 0x7F80
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert ((got[nan] & 0x7FFF) > 0x7F80).all() and ((got[nan] ^ want[nan]) >> 15 == 0).all()


def test_ml_dtypes_rounds_f32_and_every_source_once_to_nearest_even() -> None:
    patterns = every_rounding_case()
    with np.errstate(invalid="ignore"):
        assert_bits(patterns.view(np.float32).astype(BF16.numpy), rounded(patterns))
    for source, values in BF16_SOURCES.items():
        host = np.array(values, source.numpy)
        with np.errstate(over="ignore"):
            got = host.astype(BF16.numpy)
        want = [bf16_of_exact(int(v) if source.is_int else float(v)) for v in host]
        assert_bits(got, want)


def _cast_kernel(source: Elem) -> KernelBuilder:
    k = KernelBuilder(f"to_bf16_{source}", file=FILE)
    x = k.array("x", source, read_only=True)
    out = k.array("out", BF16)
    i = builtin("ABSOLUTE_POS")
    k.store(out, i, k.let(Op.CAST, BF16, k.load(x, i)))
    return k


def test_casts_from_f32_round_to_nearest_even(cpu: ComputeClient) -> None:
    patterns = every_rounding_case()
    n = patterns.size
    defn = _cast_kernel(F32).build()
    out = run(cpu, defn, [patterns.view(np.float32), np.zeros(n, BF16.numpy)], (), n // 256, 256)
    assert_bits(out[1], rounded(patterns))


@pytest.mark.parametrize(
    ("value", "bits"),
    [
        (1 + 2**-8, 0x3F80),  # a tie: to the even 1.0
        (1 + 3 * 2**-8, 0x3F82),  # a tie: to the even 1 + 2**-6
        (-(1 + 2**-8 + 2**-20), 0xBF81),  # past the tie
        (3.3895313892515355e38, 0x7F7F),  # bf16's largest value
        (3.396177326406364e38, 0x7F7F),  # just below the tie with 2**128
        (3.39617752923046e38, 0x7F80),  # the tie with 2**128 (even): infinity
        (-3.4028234663852886e38, 0xFF80),  # f32's largest value overflows bf16
        (float("inf"), 0x7F80),
        (float("-inf"), 0xFF80),
        (-0.0, 0x8000),
        (2.0**-133, 0x0001),  # bf16's smallest subnormal
        (2.0**-134, 0x0000),  # half of it: a tie, to the even 0
        (3 * 2.0**-134, 0x0002),  # a tie between subnormals: to the even 2**-132
        (-(2.0**-126) * (1 - 2**-9), 0x8080),  # a subnormal rounding up to the smallest normal
    ],
)
def test_rounding_known_answers(cpu: ComputeClient, value: float, bits: int) -> None:
    x = np.full(4, value, np.float32)
    out = run(cpu, _cast_kernel(F32).build(), [x, np.zeros(4, BF16.numpy)], (), 1, 4)[1]
    np.testing.assert_array_equal(bits_of(out), np.full(4, bits, np.uint16), hex(bits))


def test_nan_stays_nan_with_its_sign(cpu: ComputeClient) -> None:
    x = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF810000], np.uint32).view(np.float32)
    out = bits_of(run(cpu, _cast_kernel(F32).build(), [x, np.zeros(4, BF16.numpy)], (), 1, 4)[1])
    assert ((out & 0x7FFF) > 0x7F80).all(), [hex(b) for b in out]
    np.testing.assert_array_equal(out >> 15, [0, 1, 0, 1])


@pytest.mark.parametrize("source", list(BF16_SOURCES), ids=str)
def test_casts_from_wide_types_round_once(cpu: ComputeClient, source: Elem) -> None:
    values = np.array(BF16_SOURCES[source], source.numpy)
    n = values.size
    out = run(cpu, _cast_kernel(source).build(), [values, np.zeros(n, BF16.numpy)], (), 1, n)[1]
    assert_bits(out, [bf16_of_exact(int(v) if source.is_int else float(v)) for v in values])


def test_arithmetic_is_rounded_once_from_the_exact_result(cpu: ComputeClient) -> None:
    """+ - * / and sqrt against the exact float64 result rounded once by the integer model."""
    rng = np.random.default_rng(5)
    n = 4096
    a_bits = bf16_bits(rng.normal(size=n).astype(np.float32) * rng.choice([1e-3, 1, 300], n))
    b_bits = bf16_bits(rng.normal(size=n).astype(np.float32) * rng.choice([1e-3, 1, 300], n))
    b_bits[:4] = bf16_bits(np.array([1.0, 2.0**-8, 2.0**-9, 256.0], np.float32))  # ties
    a_bits[:4] = bf16_bits(np.array([2.0**-8, 1.0, 1.0 + 2**-7, 1.0], np.float32))
    ops = [Op.ADD, Op.SUB, Op.MUL, Op.DIV]
    k = KernelBuilder("bf16_arith", file=FILE)
    pa, pb = k.array("a", BF16, read_only=True), k.array("b", BF16, read_only=True)
    out = k.array("out", BF16)
    i = builtin("ABSOLUTE_POS")
    x, y = k.load(pa, i), k.load(pb, i)
    results = [k.let(op, BF16, x, y) for op in ops] + [k.let(Op.SQRT, BF16, k.let(Op.ABS, BF16, x))]
    for slot, value in enumerate(results):
        k.store(out, k.let(Op.ADD, U32, const(slot * n, U32), i), value)
    arrays = [a_bits.view(BF16.numpy), b_bits.view(BF16.numpy), np.zeros(5 * n, BF16.numpy)]
    got = bits_of(run(cpu, k.build(), arrays, (), n // 256, 256)[2]).reshape(5, n)
    xs, ys = bf16_value(a_bits).astype(np.float64), bf16_value(b_bits).astype(np.float64)
    exact = [xs + ys, xs - ys, xs * ys, xs / ys, np.sqrt(np.abs(xs))]  # exact or f64-rounded
    for op, g, e in zip([*ops, Op.SQRT], got, exact, strict=True):
        np.testing.assert_array_equal(g, [bf16_of_exact(float(v)) for v in e], str(op))


def test_literals_are_rounded_once(cpu: ComputeClient) -> None:
    k = KernelBuilder("bf16_literals", file=FILE)
    out = k.array("out", BF16)
    values = [1 + 2**-8 + 2**-30, 0.1, 1e300, -(2.0**-134) * 3]
    for slot, v in enumerate(values):
        k.store(out, const(slot, U32), const(v, BF16))
    got = run(cpu, k.build(), [np.zeros(4, BF16.numpy)], (), 1, 1)[0]
    np.testing.assert_array_equal(bits_of(got), [0x3F81, 0x3DCD, 0x7F80, 0x8002])


@kernel
def bf16_literal_in_the_language(out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = f32(bf16(1.00390625 + 2**-30)) + f32(bf16(0.1))


def test_language_literals_are_rounded_once_from_the_double(cpu: ComputeClient) -> None:
    out = cpu.empty(4 * 4)
    bf16_literal_in_the_language.launch(cpu, RudaCount(1), RudaDim(4), ArrayArg(out, 4))
    want = np.float32(1.0078125) + np.float32(0.10009765625)
    np.testing.assert_array_equal(read_array(cpu, out, np.float32), np.full(4, want))


def test_shared_and_local_arrays_keep_bf16(cpu: ComputeClient) -> None:
    """out[u] = shared[(u + 1) % n] + local[0], each stored as bf16 and added once rounded."""
    n = 64
    k = KernelBuilder("bf16_memory", file=FILE)
    x = k.array("x", F32, read_only=True)
    out = k.array("out", BF16)
    smem = k.shared("tile", BF16, n)
    lmem = k.local_array("scratch", BF16, 2)
    u = builtin("UNIT_POS")
    k.store(smem, u, k.let(Op.CAST, BF16, k.load(x, u)))
    k.store(lmem, const(0, U32), const(2.0**-8, BF16))
    k.sync_units()
    nxt = k.let(Op.MOD, U32, k.let(Op.ADD, U32, u, const(1, U32)), const(n, U32))
    k.store(out, u, k.let(Op.ADD, BF16, k.load(smem, nxt), k.load(lmem, const(0, U32))))
    values = np.linspace(-3, 3, n).astype(np.float32)
    got = run(cpu, k.build(), [values, np.zeros(n, BF16.numpy)], (), 1, n)[1]
    stored = bf16_value(bf16_bits(np.roll(values, -1))).astype(np.float64)
    assert_bits(got, [bf16_of_exact(float(v) + 2.0**-8) for v in stored])


def test_atomics_round_every_update(cpu: ComputeClient) -> None:
    """64 lanes add 1 to 256: each update rounds (256 + 1 is a tie, to 256), so the sum stays
    256; each fetched old value is 256; min and max see every lane; CAS succeeds once."""
    k = KernelBuilder("bf16_atomics", file=FILE)
    acc = k.array("acc", BF16)
    old = k.array("old", BF16)
    x = k.array("x", BF16, read_only=True)
    u = builtin("UNIT_POS")
    v = k.load(x, u)
    k.store(old, u, k.let(Op.ATOMIC_ADD, BF16, acc, const(0, U32), const(1.0, BF16)))
    k.do(Op.ATOMIC_MIN, None, acc, const(1, U32), v)
    k.do(Op.ATOMIC_MAX, None, acc, const(2, U32), v)
    k.do(Op.ATOMIC_CAS, None, acc, const(3, U32), const(0.5, BF16), v)
    values = np.linspace(-2, 2, 64).astype(BF16.numpy)
    start = np.array([256.0, 0.0, 0.0, 0.5], BF16.numpy)
    acc_out, old_out = run(cpu, k.build(), [start, np.zeros(64, BF16.numpy), values], (), 1, 64)[:2]
    np.testing.assert_array_equal(acc_out[:3].astype(np.float32), [256.0, -2.0, 2.0])
    assert acc_out[3] in values
    np.testing.assert_array_equal(old_out.astype(np.float32), np.full(64, 256.0))


def test_plane_sum_is_computed_in_f32_and_rounded_once(cpu: ComputeClient) -> None:
    """256 and 31 ones: rounding after every addition would stay at 256 (each 256 + 1 is a tie
    to even); the f32 sum 287 rounds once, to 288. Scans round each prefix once too."""
    k = KernelBuilder("bf16_plane", file=FILE)
    x = k.array("x", BF16, read_only=True)
    out = k.array("out", BF16)
    u = builtin("UNIT_POS")
    v = k.load(x, u)
    k.store(out, u, k.let(Op.PLANE_SUM, BF16, v))
    k.store(out, k.let(Op.ADD, U32, u, const(32, U32)), k.let(Op.PLANE_INCLUSIVE_SUM, BF16, v))
    values = np.ones(32, BF16.numpy)
    values[0] = 256
    got = run(cpu, k.build(), [values, np.zeros(64, BF16.numpy)], (), 1, 32)[1].astype(np.float64)
    np.testing.assert_array_equal(got[:32], np.full(32, 288.0))
    prefixes = 256.0 + np.arange(32)
    np.testing.assert_array_equal(
        got[32:], [float(bf16_value(np.uint16(bf16_of_exact(p)))) for p in prefixes]
    )
