"""Python's ``math`` functions in kernels: each that returns a float (or a bool) in Python is
ruda's intrinsic of the same name, so ``math.sqrt(x)`` builds what ``sqrt(x)`` builds and runs
alike, and ``math.pow``, ``math.fabs`` and ``math.log(x, base)`` mean what Python's do;
``math.floor``, which returns an int in Python, is refused rather than given a float."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ruda_core.errors import CompilationError
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel, sqrt, u32
from ruda_core.lang.builtins import MATH_FUNCTIONS
from ruda_core.runtime import RudaCount, RudaDim

from .helpers import instrs


@kernel
def with_math(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = math.sqrt(x[i]) + math.hypot(x[i], f32(1)) + f32(math.isnan(x[i]))


@kernel
def with_ruda(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = sqrt(x[i]) + math.hypot(x[i], f32(1)) + f32(math.isnan(x[i]))


@kernel
def with_floor(x: Array[f32], out: Array[f32]):
    out[0] = math.floor(x[0])


@kernel
def with_python_meanings(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[4 * i] = math.pow(x[i], 2)  # a float power, the literal an f32
        out[4 * i + 1] = math.fabs(x[i])
        out[4 * i + 2] = math.log(math.fabs(x[i]), 2.0)
        out[4 * i + 3] = math.log(math.fabs(x[i]))


@kernel
def with_int_pow(x: Array[u32], out: Array[u32]):
    out[0] = math.pow(x[0], 2)


@kernel
def with_gamma(x: Array[f32], out: Array[f32]):
    out[0] = math.gamma(x[0])


@kernel
def with_log_of_three(x: Array[f32], out: Array[f32]):
    out[0] = math.log(x[0], 2.0, 3.0)


def test_every_float_function_of_math_is_the_intrinsic_of_its_name():
    assert len(MATH_FUNCTIONS) == 34
    for function, intrinsic in MATH_FUNCTIONS.items():
        assert function is getattr(math, intrinsic.name.removeprefix("math."))
    ops = [[i.op for i in instrs(k.definition())] for k in (with_math, with_ruda)]
    assert ops[0] == ops[1]


@pytest.mark.parametrize("name", ["cpu", "opencl:0", "webgpu:0", "cuda:0"])
def test_math_functions_run_on_the_device(open_device, name):
    client = open_device(name)
    x = np.array([0, 1, 4, 2.25, np.nan, np.inf], np.float32)
    out = np.zeros_like(x)
    with_math.launch(client, RudaCount(1), RudaDim(8), x, out)
    expected = np.sqrt(x) + np.hypot(x, np.float32(1)) + np.isnan(x)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("name", ["cpu", "opencl:0", "webgpu:0", "cuda:0"])
def test_pow_fabs_and_log_with_a_base_mean_what_python_s_do(open_device, name):
    client = open_device(name)
    x = np.array([-3.0, 0.5, 2.0, 10.0, 1.0], np.float32)
    out = np.zeros(4 * x.size, np.float32)
    with_python_meanings.launch(client, RudaCount(1), RudaDim(8), x, out)
    expected = [[math.pow(v, 2), math.fabs(v), math.log(abs(v), 2.0), math.log(abs(v))] for v in x]
    np.testing.assert_allclose(out, np.array(expected, np.float32).ravel(), rtol=1e-5, atol=1e-7)


def test_a_math_function_returning_an_int_in_python_is_refused():
    with pytest.raises(CompilationError, match=r"math\.floor cannot be used in kernels"):
        with_floor.definition()


def test_math_refusals_say_what_a_kernel_can_call():
    with pytest.raises(CompilationError, match=r"math\.pow\(\) needs floats, got u32"):
        with_int_pow.definition()
    with pytest.raises(CompilationError, match=r"math\.log\(\) takes 1 or 2 arguments, got 3"):
        with_log_of_three.definition()
    with pytest.raises(CompilationError) as info:
        with_gamma.definition()
    text = str(info.value)
    assert "math.gamma cannot be used in kernels: the math functions a kernel can call" in text
    assert "fabs, " in text and "lgamma, " in text and "return floats" not in text
