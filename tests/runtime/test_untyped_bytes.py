"""Handles are untyped bytes: an ``ArrayArg`` without ``elem=`` reads them as the parameter's
element type (a bit cast, documented), while ``elem=`` and ``RudaTensor`` carry the data's type
and are checked against the parameter before anything is enqueued."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, f64, kernel
from ruda_core.runtime import LaunchConfigError, RudaCount, RudaDim
from ruda_core.tensor import RudaTensor
from ruda_core.testing.runner import read_array

DATA = np.array([1.5, -2.25, 3.0, 1e300], dtype=np.float64)


@kernel
def copy_f32(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i]


def _copy(client, arg, n):
    out = client.create_from_slice(np.zeros(n, dtype=np.float32))
    copy_f32.launch(client, RudaCount(1), RudaDim(n), arg, ArrayArg(out, n))
    return read_array(client, out, np.float32)


def test_untyped_bytes_are_read_as_the_parameter_type(private_client):
    handle = private_client.create_from_slice(DATA)  # 32 bytes, no element type kept
    got = _copy(private_client, ArrayArg(handle, 8), 8)
    np.testing.assert_array_equal(got.view(np.uint32), DATA.view(np.uint32))  # the same bits


@pytest.mark.parametrize("elem", [f64, np.float64, "f64"], ids=["f64", "np.float64", "str"])
def test_untyped_bytes_with_elem_are_checked_against_the_parameter(private_client, elem):
    handle = private_client.create_from_slice(DATA)
    with pytest.raises(
        LaunchConfigError, match="argument 'x' has f64 elements; the kernel declares f32"
    ):
        _copy(private_client, ArrayArg(handle, 4, elem=elem), 4)
    private_client.sync().result(timeout=60)  # nothing was enqueued, nothing failed


def test_untyped_bytes_in_a_ruda_tensor_carry_their_type(private_client):
    tensor = RudaTensor.from_numpy(private_client, DATA)
    with pytest.raises(LaunchConfigError, match="has f64 elements; the kernel declares f32"):
        _copy(private_client, tensor, 4)
    values = np.array([1.5, -2.25, 3.0, 7.0], dtype=np.float32)
    f32_tensor = RudaTensor.from_numpy(private_client, values)
    np.testing.assert_array_equal(_copy(private_client, f32_tensor, 4), values)
