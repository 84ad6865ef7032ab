"""Definite assignment: a read of a local that some path to it leaves unassigned is a
CompilationError when the kernel is built (naming the kernel, the name and the line of the read),
never a silent 0; what every path assigns runs on every device as Python computes it."""

import re

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    Comptime,
    f32,
    func,
    grid_stride,
    i32,
    kernel,
    u32,
    unroll,
)
from ruda_core.runtime import CompilationError, RudaCount, RudaDim

from .helpers import marked_line

DEVICES = ["cpu", "opencl:0", "webgpu:0", "cuda:0"]
SOME = (1, 2)
OTHER = (3,)


# -- refused: some path to the read leaves the name unassigned ---------------------------------


def k_if_without_else(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        if x[i] > 3.0:
            y = x[i] * 2.0
        out[i] = y  # READ


def k_loop_variable_after_loop(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        for k in range(i32(i)):  # noqa: B007  # read after the loop
            pass
        out[i] = f32(k)  # READ


def k_assigned_in_loop_body(x: Array[f32], out: Array[f32], n: u32):
    for k in range(n):
        last = x[k]
    out[0] = last  # READ


def k_assigned_in_while(x: Array[f32], out: Array[f32]):
    i = u32(0)
    while x[i] > 0.0:
        found = i
        i += 1
    out[0] = f32(found)  # READ


def k_grid_stride_variable(x: Array[f32], out: Array[f32]):
    for k in grid_stride(x.len()):
        x[k] = 0.0
    out[0] = f32(k)  # READ


def k_else_reads_then(x: Array[f32], out: Array[f32]):
    if x[0] > 0.0:
        y = x[0]
    else:
        out[0] = y  # READ


def k_assigned_after_a_break(x: Array[f32], out: Array[f32]):
    while True:
        if x[0] > 0.0:
            break
        y = x[0]
        break
    out[0] = y  # READ


def k_empty_constant_range(out: Array[f32]):
    for k in range(3, 3):
        y = f32(k)
    out[0] = y  # READ


def k_augmented(x: Array[f32], out: Array[f32]):
    if x[0] > 0.0:
        acc = x[0]
    acc += 1.0  # READ
    out[0] = acc


def k_different_compile_time_values(x: Array[f32], out: Array[f32]):
    if x[0] > 0.0:
        for v in SOME:  # noqa: B007  # read after the if
            pass
    else:
        for v in OTHER:  # noqa: B007  # read after the if
            pass
    out[0] = f32(v)  # READ


@func
def maybe_half(v: f32) -> f32:
    if v > 0.0:
        h = v * 0.5
    return h  # READ


def k_calls_maybe_half(x: Array[f32], out: Array[f32]):
    out[0] = maybe_half(x[0])


REFUSED = [
    (k_if_without_else, "y", "is not assigned on every path"),
    (k_loop_variable_after_loop, "k", "is not assigned on every path"),
    (k_assigned_in_loop_body, "last", "is not assigned on every path"),
    (k_assigned_in_while, "found", "is not assigned on every path"),
    (k_grid_stride_variable, "k", "is not assigned on every path"),
    (k_else_reads_then, "y", "is used before it is assigned"),
    (k_assigned_after_a_break, "y", "is not assigned on every path"),
    (k_empty_constant_range, "y", "is not assigned on every path"),
    (k_augmented, "acc", "is not assigned on every path"),
    (k_different_compile_time_values, "v", "holds different compile-time values"),
]


@pytest.mark.parametrize(("fn", "name", "why"), REFUSED, ids=lambda v: getattr(v, "__name__", ""))
def test_a_read_not_assigned_on_every_path_is_refused_when_built(fn, name, why):
    with pytest.raises(CompilationError) as info:
        kernel(fn).definition()
    err, line = info.value, marked_line(fn, "# READ")
    text = str(err)
    assert (err.file, err.line) == (__file__, line), text
    assert f"{__file__}:{line}: in kernel '{fn.__name__}'" in text
    assert f"'{name}' {why}" in text
    if "every path" in why:
        assert "assign it before that `if` or loop" in text


def test_a_read_in_a_func_names_the_func_its_line_and_the_kernel():
    with pytest.raises(CompilationError) as info:
        kernel(k_calls_maybe_half).definition()
    err, line = info.value, marked_line(maybe_half, "# READ")
    assert (err.file, err.line) == (__file__, line), str(err)
    assert "@func 'maybe_half' (inlined into kernel 'k_calls_maybe_half')" in str(err)
    assert "'h' is not assigned on every path" in str(err)


def test_the_error_comes_before_anything_runs(open_device):
    client = open_device("cpu")
    out = np.full(4, -1.0, np.float32)
    with pytest.raises(CompilationError, match=re.escape("'y' is not assigned on every path")):
        kernel(k_if_without_else).launch(client, 1, 4, np.arange(4, dtype=np.float32), out)
    np.testing.assert_array_equal(out, -1.0)


# -- accepted: every path assigns the name --------------------------------------------------


@func
def collatz_len(v: u32) -> u32:
    s = u32(0)
    while True:
        if v == u32(1):
            return s
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        s += 1


@func
def clipped(v: f32) -> f32:
    if v > 1.0:
        return 1.0
    else:
        r = v
    return r


@kernel
def assigned_on_every_path(x: Array[f32], out: Array[f32], MODE: Comptime[int]):
    i = ABSOLUTE_POS
    if i < out.len():
        v = x[i]
        if v > 3.0:
            y = v * 2.0
        elif v > 1.0:
            y = v
        else:
            y = -v
        if MODE == 1:  # built alone: z is assigned
            z = 1.0
        for k in range(3):  # runs: k and w are assigned after it
            w = f32(k) + v
        for t in unroll(range(2)):
            u = f32(t)
        while True:
            if v > 5.0:
                b = 10.0
                break
            b = 20.0
            break
        if v < 0.5:
            out[i] = -1.0
            return  # so c is assigned wherever the kernel goes on
        else:
            c = 100.0
        steps = collatz_len(u32(v) + u32(1))
        out[i] = y + z + f32(k) + w + u + b + c + f32(steps) + clipped(v)


def _expected(x: np.ndarray) -> np.ndarray:
    out = []
    for v in x.tolist():
        if v < 0.5:
            out.append(-1.0)
            continue
        y = v * 2.0 if v > 3.0 else (v if v > 1.0 else -v)
        n, steps = int(v) + 1, 0
        while n != 1:
            n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
        b = 10.0 if v > 5.0 else 20.0
        out.append(y + 1.0 + 2 + (2 + v) + 1.0 + b + 100.0 + steps + min(v, 1.0))
    return np.array(out, np.float32)


@pytest.mark.parametrize("name", DEVICES)
def test_names_assigned_on_every_path_run_as_python(open_device, name):
    client = open_device(name)
    x = np.array([0.0, 0.75, 2.5, 4.0, 6.0, 26.0], np.float32)
    out = np.zeros_like(x)
    assigned_on_every_path.launch(client, RudaCount(1), RudaDim(8), x, out, MODE=1)
    np.testing.assert_allclose(out, _expected(x), rtol=1e-5)


# -- a @func's result: every path that reaches the end of its body returns ------------------


@func
def maybe_returns(v: f32) -> f32:  # DEF
    if v > 0.0:
        return v


def k_calls_maybe_returns(x: Array[f32], out: Array[f32]):
    out[0] = maybe_returns(x[0])


def test_a_func_that_can_end_without_its_result_is_refused_at_its_line():
    with pytest.raises(CompilationError) as info:
        kernel(k_calls_maybe_returns).definition()
    err, line = info.value, marked_line(maybe_returns, "# DEF")
    assert (err.file, err.line) == (__file__, line), str(err)
    assert "@func 'maybe_returns' (inlined into kernel 'k_calls_maybe_returns')" in str(err)
    assert "can end without returning a value" in str(err)
