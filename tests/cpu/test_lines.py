"""Lines on the NumPy reference device: the scalar lowering keeps lane order and element
semantics, runs whole lines of a contiguous launch as strided slices, and stays safe
without bounds checks."""

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, Line, f16, f32, kernel, u8
from ruda_core.runtime import BoundsCheckMode, RudaCount, RudaDim


@kernel
def half_axpy(x: Array[f16], y: Array[f16], a: f16, N: Comptime[int]):
    i = ABSOLUTE_POS
    if i < x.len() // N:
        y.store_line(i, x.load_line(i, N) * a + y.load_line(i, N))


@kernel
def widen(x: Array[u8], out: Array[f32]):
    i = ABSOLUTE_POS
    v = f32(x.load_line(i, 8)) / 255.0
    out.store_line(i * 2, Line(v[0], v[1], v[2], v[3]))
    out.store_line(i * 2 + 1, Line(v[4], v[5], v[6], v[7]))


@kernel
def copy_lines(x: Array[f16], y: Array[f16]):
    y.store_line(ABSOLUTE_POS, x.load_line(ABSOLUTE_POS, 4) * f16(2))


def test_f16_lines_round_every_lane_operation_once(cpu):
    n = 8 * 4096
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    xh, yh = cpu.create_from_slice(x), cpu.create_from_slice(y)
    half_axpy.launch(
        cpu,
        RudaCount(n // 8 // 256),
        RudaDim(256),
        ArrayArg(xh, n),
        ArrayArg(yh, n),
        np.float16(0.75),
        N=8,
    )
    got = np.frombuffer(cpu.read_one(yh), np.float16)
    np.testing.assert_array_equal(got, x * np.float16(0.75) + y)  # NumPy rounds each op too


def test_casts_and_lane_order_of_a_line_of_bytes(cpu):
    x = np.arange(64, dtype=np.uint8) * 3
    xh, oh = cpu.create_from_slice(x), cpu.empty(4 * 64)
    widen.launch(cpu, RudaCount(1), RudaDim(8), ArrayArg(xh, 64), ArrayArg(oh, 64))
    got = np.frombuffer(cpu.read_one(oh), np.float32)
    np.testing.assert_array_equal(got, x.astype(np.float32) / np.float32(255))


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_unchecked_lines_past_the_end_never_crash_the_reference(cpu):
    BoundsCheckMode.configure(BoundsCheckMode.AUTO)
    try:
        x = np.ones(10, np.float16)
        xh, yh = cpu.create_from_slice(x), cpu.create_from_slice(np.zeros(10, np.float16))
        copy_lines.launch_unchecked(  # 8 lines of 4 over 10 elements, unguarded
            cpu, RudaCount(1), RudaDim(8), ArrayArg(xh, 10), ArrayArg(yh, 10)
        )
        got = np.frombuffer(cpu.read_one(yh), np.float16)
    finally:
        BoundsCheckMode.configure(None)
    np.testing.assert_array_equal(got, np.full(10, 2, np.float16))
