"""Control flow with divergent units: if/elif/else, nested loops with break and continue, early
return, while loops with data-dependent trip counts, device functions and conditional
expressions, checked against the same computation in Python."""

from __future__ import annotations

import numpy as np

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    ArrayArg,
    f32,
    f64,
    func,
    grid_stride,
    i32,
    i64,
    kernel,
    u8,
    u32,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.markers import need
from ruda_core.testing.runner import read_array

N = 1000
SENTINEL = 0xFFFFFFFF


@func
def conformance_weight(a: u32, b: u32) -> u32:
    return a * b + u32(1)


@kernel
def conformance_branches(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        r = i % u32(3)
        if r == u32(0):
            out[i] = i * u32(2)
        elif r == u32(1):
            out[i] = i + u32(7) if i > u32(500) else i + u32(11)
        else:
            out[i] = u32(5)


@kernel
def conformance_nested_loops(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        acc = u32(0)
        for a in range(i % u32(6)):
            for b in range(u32(9)):
                if b == a:
                    continue
                if b > a + u32(3):
                    break
                acc += conformance_weight(a, b)
        out[i] = acc


@kernel
def conformance_early_return(out: Array[u32]):
    i = ABSOLUTE_POS
    if i >= out.len():
        return
    if i % u32(4) == u32(0):
        return
    out[i] = i


@kernel
def conformance_collatz(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        x = i + u32(1)
        steps = u32(0)
        while x != u32(1):
            if x % u32(2) == u32(0):  # noqa: SIM108 - the test is about a divergent if/else
                x = x // u32(2)
            else:
                x = u32(3) * x + u32(1)
            steps += u32(1)
        out[i] = steps


@kernel
def conformance_signed_loop(out: Array[i32]):
    i = ABSOLUTE_POS
    if i < out.len():
        total = i32(0)
        for k in range(i32(i) - i32(5), i32(-10), -3):
            total += k
        out[i] = total


@kernel
def conformance_unnamed_loop_variables(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        acc = u32(0)
        for _ in range(i % u32(5)):  # Python's name for a variable no one reads
            for _ in range(u32(3)):
                acc += u32(1)
        out[i] = acc


def _launch(client, kern, n=N, dtype=np.uint32):
    out = client.create_from_slice(np.full(n, SENTINEL, dtype=np.uint32).view(dtype))
    kern.launch(client, RudaCount(-(-n // 128)), RudaDim(128), ArrayArg(out, n))
    return read_array(client, out, dtype)


def test_divergent_if_elif_else(client):
    i = np.arange(N)
    r = i % 3
    expected = np.where(r == 0, i * 2, np.where(r == 1, np.where(i > 500, i + 7, i + 11), 5))
    np.testing.assert_array_equal(_launch(client, conformance_branches), expected)


def test_nested_loops_with_break_and_continue(client):
    expected = []
    for i in range(N):
        acc = 0
        for a in range(i % 6):
            for b in range(9):
                if b == a:
                    continue
                if b > a + 3:
                    break
                acc += a * b + 1
        expected.append(acc)
    np.testing.assert_array_equal(_launch(client, conformance_nested_loops), expected)


def test_loops_over_variables_named_underscore(client):
    expected = np.arange(N) % 5 * 3
    np.testing.assert_array_equal(_launch(client, conformance_unnamed_loop_variables), expected)


def test_early_return_leaves_outputs_untouched(client):
    i = np.arange(N)
    expected = np.where(i % 4 == 0, SENTINEL, i)
    np.testing.assert_array_equal(_launch(client, conformance_early_return), expected)


def test_while_with_data_dependent_trip_counts(client):
    expected = []
    for i in range(N):
        x, steps = i + 1, 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            steps += 1
        expected.append(steps)
    np.testing.assert_array_equal(_launch(client, conformance_collatz), expected)


def test_range_with_negative_step_and_signed_bounds(client):
    n = 64
    expected = [sum(range(i - 5, -10, -3)) for i in range(n)]
    got = _launch(client, conformance_signed_loop, n, np.int32)
    np.testing.assert_array_equal(got, expected)


@kernel
def conformance_grid_stride(out: Array[u32], stride: u32):
    for i in range(ABSOLUTE_POS, out.len(), stride):
        if i % u32(5) == u32(3):
            continue
        out[i] = i * u32(2)


@kernel
def conformance_runtime_step(out: Array[i32], start: i32, stop: i32, step: i32):
    if ABSOLUTE_POS == u32(0):
        n = i32(0)
        for i in range(start, stop, step):
            out[n] = i
            n += 1
        out[out.len() - u32(1)] = n


def test_range_with_a_runtime_step_is_a_grid_stride_loop(client):
    n, cubes, units = N, 3, 32
    out = client.create_from_slice(np.zeros(n, np.uint32))
    stride = cubes * units
    conformance_grid_stride.launch(
        client, RudaCount(cubes), RudaDim(units), ArrayArg(out, n), stride
    )
    i = np.arange(n)
    np.testing.assert_array_equal(
        read_array(client, out, np.uint32), np.where(i % 5 == 3, 0, 2 * i)
    )


def test_range_with_a_runtime_step_follows_python_and_never_wraps(client):
    cases = [(10, -3, -4), (0, 10, 3), (5, 5, 1), (-(2**31), 2**31 - 1, 2**30)]
    cases += [(2**31 - 1, -(2**31), -(2**31)), (2**31 - 5, 2**31 - 1, 3), (0, 10, 0)]
    for start, stop, step in cases:
        out = client.create_from_slice(np.zeros(16, np.int32))
        conformance_runtime_step.launch(
            client, RudaCount(1), RudaDim(1), ArrayArg(out, 16), start, stop, step
        )
        got = read_array(client, out, np.int32)
        want = list(range(start, stop, step)) if step else []  # a zero step runs no iteration
        assert got[15] == len(want) and list(got[: len(want)]) == want, (start, stop, step)


@func
def conformance_scaled(a: u32, b: i64, c: f64) -> f64:
    return f64(a) * f64(b) + c


@kernel
def conformance_widening_calls(x: Array[u8], y: Array[i32], z: Array[f32], out: Array[f64]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = conformance_scaled(x[i], y[i], z[i])  # u8 -> u32, i32 -> i64, f32 -> f64


def test_func_arguments_widen_where_no_value_is_lost(client):
    need(client, Elem.F64)
    n = 16
    x = np.arange(n, dtype=np.uint8) * 16
    y = np.arange(n, dtype=np.int32) - 8
    z = np.linspace(-1, 1, n).astype(np.float32)
    handles = [client.create_from_slice(a) for a in (x, y, z)] + [client.empty(8 * n)]
    conformance_widening_calls.launch(
        client, RudaCount(1), RudaDim(n), *(ArrayArg(h, n) for h in handles)
    )
    want = x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)
    np.testing.assert_array_equal(read_array(client, handles[3], np.float64), want)


@kernel
def conformance_grid_stride_helper(out: Array[u32]):
    for i in grid_stride(out.len()):
        out[i] = out[i] + i + u32(1)  # each element once: a second visit would add again


def test_grid_stride_covers_every_element_once_for_any_launch(client):
    n = 1000
    for cubes, units in [(1, 32), (3, 64), (40, 32)]:
        out = client.create_from_slice(np.zeros(n, np.uint32))
        conformance_grid_stride_helper.launch(
            client, RudaCount(cubes), RudaDim(units), ArrayArg(out, n)
        )
        np.testing.assert_array_equal(read_array(client, out, np.uint32), np.arange(1, n + 1))
