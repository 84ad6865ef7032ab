"""Python's ``math`` functions in kernels: each that returns a float (or a bool) in Python is
ruda's intrinsic of the same name, so ``math.sqrt(x)`` builds what ``sqrt(x)`` builds and runs
alike; ``math.floor``, which returns an int in Python, is refused rather than given a float."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ruda_core.errors import CompilationError
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel, sqrt
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


def test_every_float_function_of_math_is_the_intrinsic_of_its_name():
    assert len(MATH_FUNCTIONS) == 32
    for function, intrinsic in MATH_FUNCTIONS.items():
        assert function is getattr(math, intrinsic.name)
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


def test_a_math_function_returning_an_int_in_python_is_refused():
    with pytest.raises(CompilationError, match=r"math\.floor cannot be used in kernels"):
        with_floor.definition()
