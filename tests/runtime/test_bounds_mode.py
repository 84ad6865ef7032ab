"""``BoundsCheckMode`` from the environment: ``RUDA_BOUNDS_CHECK`` set but empty means unset,
for ``launch_unchecked`` and for the portable ops that launch through it."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.ops import layer_norm
from ruda_core.runtime import BoundsCheckMode, RudaCount, RudaDim
from ruda_core.runtime.layer_norm_args import TensorBuffer
from ruda_core.testing.runner import TIMEOUT_S, read_array


@kernel
def doubled(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * f32(2)


@pytest.fixture(params=["", "  "], ids=["empty", "blank"])
def unset_env(request, monkeypatch):
    monkeypatch.setenv("RUDA_BOUNDS_CHECK", request.param)
    BoundsCheckMode.configure(None)
    yield
    monkeypatch.undo()
    BoundsCheckMode.configure(None)  # the process's own setting again


def test_the_variable_is_read_once_until_configure(monkeypatch):
    monkeypatch.setenv("RUDA_BOUNDS_CHECK", "validate")
    BoundsCheckMode.configure(None)
    try:
        assert BoundsCheckMode.current() is BoundsCheckMode.VALIDATE
        monkeypatch.setenv("RUDA_BOUNDS_CHECK", "enforce")
        assert BoundsCheckMode.current() is BoundsCheckMode.VALIDATE  # as read
        BoundsCheckMode.configure(None)
        assert BoundsCheckMode.current() is BoundsCheckMode.ENFORCE
        monkeypatch.setenv("RUDA_BOUNDS_CHECK", "sometimes")
        BoundsCheckMode.configure(None)
        with pytest.raises(ValueError, match="'sometimes' is not a mode"):
            BoundsCheckMode.current()
    finally:
        monkeypatch.undo()
        BoundsCheckMode.configure(None)


def test_empty_bounds_check_env_means_auto(unset_env):
    assert BoundsCheckMode.current() is BoundsCheckMode.AUTO


def test_empty_bounds_check_env_runs_launch_unchecked(unset_env, private_client):
    x = private_client.create_from_slice(np.arange(8, dtype=np.float32))
    out = private_client.empty(32)
    doubled.launch_unchecked(
        private_client, RudaCount(1), RudaDim(8), ArrayArg(x, 8), ArrayArg(out, 8)
    )
    np.testing.assert_array_equal(read_array(private_client, out, np.float32), np.arange(8) * 2)


def test_empty_bounds_check_env_runs_layer_norm(unset_env, private_client):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    handle, strides = private_client.create_tensor_from_slice(x, x.shape, 4)
    weight, w_strides = private_client.create_tensor_from_slice(np.ones(4, np.float32), (4,), 4)
    out, _, _ = layer_norm(
        private_client,
        TensorBuffer(handle, x.shape, strides, Elem.F32),
        TensorBuffer(weight, (4,), w_strides, Elem.F32),
    )
    got = read_array(private_client, out.handle, np.float32).reshape(3, 4)
    centred = x - x.mean(axis=1, keepdims=True)
    expected = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    private_client.sync().result(timeout=TIMEOUT_S)
