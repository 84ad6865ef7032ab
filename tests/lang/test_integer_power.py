"""``x ** n`` of integers by a compile-time exponent: the products ``*`` makes, wrapping alike,
on every device, beside NumPy's ``power``; other exponents are refused where the kernel is."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import CompilationError
from ruda_core.lang import ABSOLUTE_POS, Array, Comptime, i32, kernel, u8, u32, unroll
from ruda_core.runtime import RudaCount, RudaDim

DEVICES = ["cpu", "opencl:0", "webgpu:0", "cuda:0"]
EXPONENTS = (0, 1, 2, 3, 7, 13)


@kernel
def powers(x: Array[i32], small: Array[u8], out: Array[i32], out_small: Array[u8]):
    i = ABSOLUTE_POS
    if i < x.len():
        for k in unroll(range(6)):  # each exponent a constant
            e = EXPONENTS[k]
            out[6 * i + k] = x[i] ** e
            out_small[6 * i + k] = small[i] ** e


@kernel
def runtime_exponent(out: Array[u32], n: u32):
    out[0] = n**n


@kernel
def negative_exponent(out: Array[i32], e: Comptime[int]):
    out[0] = i32(3) ** e


@pytest.mark.parametrize("name", DEVICES)
def test_integer_powers_wrap_as_numpys(open_device, name):
    client = open_device(name)
    x = np.array([0, 1, -1, 2, -3, 7, 46341, -(2**31), 2**31 - 1, 5], np.int32)
    small = np.array([0, 1, 255, 2, 3, 7, 16, 128, 127, 5], np.uint8)
    out = np.zeros(6 * x.size, np.int32)
    out_small = np.zeros(6 * x.size, np.uint8)
    powers.launch(client, RudaCount(1), RudaDim(16), x, small, out, out_small)
    for k, e in enumerate(EXPONENTS):
        np.testing.assert_array_equal(out[k::6], np.power(x, e), err_msg=f"i32 ** {e}")
        np.testing.assert_array_equal(out_small[k::6], np.power(small, e), err_msg=f"u8 ** {e}")


def test_an_exponent_not_known_when_the_kernel_is_built_is_refused():
    with pytest.raises(CompilationError, match="give a constant exponent or cast with f32"):
        runtime_exponent.definition()
    with pytest.raises(CompilationError, match="needs an exponent that is an int >= 0"):
        negative_exponent.definition(e=-1)
