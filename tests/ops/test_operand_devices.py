"""Operands on another device than the operation's: a primitive given a client copies a tensor
of another device to it (as ``ruda_core.asarray`` does); ``matmul`` and a primitive given a
``TensorBuffer`` of another device refuse it with ``InvalidHandle`` naming both devices, before
anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core import ops
from ruda_core.ops import matmul
from ruda_core.runtime import ComputeClient, InvalidHandle
from ruda_core.runtime.layer_norm_args import TensorBuffer


@pytest.fixture
def other() -> ComputeClient:
    """The client of a device other than ``cpu``."""
    for device in ruda.enumerate_all_devices():
        if str(device) != "cpu":
            return ruda.client(str(device))
    pytest.skip("needs a device other than cpu: no other driver is usable here")


def test_a_primitive_given_a_client_copies_a_tensor_of_another_device(other):
    cpu = ruda.client("cpu")
    keys = np.array([5, 1, 3, 3, 0], np.int32)
    elsewhere = ruda.asarray(keys, other)
    assert ops.sum(cpu, elsewhere).numpy() == keys.sum()
    np.testing.assert_array_equal(ops.sort(cpu, elsewhere).numpy(), np.sort(keys))
    np.testing.assert_array_equal(ops.cumsum(cpu, elsewhere).numpy(), np.cumsum(keys))
    np.testing.assert_array_equal(ops.bincount(cpu, elsewhere).numpy(), np.bincount(keys))
    np.testing.assert_array_equal(ops.sort(other, ruda.asarray(keys, cpu)).numpy(), np.sort(keys))


def test_operands_of_two_devices_are_refused_naming_both(other):
    cpu, name = ruda.client("cpu"), str(other.device)
    a = ruda.asarray(np.ones((4, 8), np.float32), cpu)
    b = ruda.asarray(np.ones((8, 3), np.float32), other)
    c = ruda.asarray(np.ones((3, 2), np.float32), cpu)
    before = cpu.memory_usage().number_allocs
    with pytest.raises(InvalidHandle, match=f"matmul: b is on {name}, but matmul runs on cpu"):
        matmul(a, b)
    with pytest.raises(InvalidHandle, match=f"matmul: a is on {name}, but matmul runs on cpu"):
        matmul(cpu, b, c)
    buffer = TensorBuffer(b.handle, (24,), (1,), b.elem)
    with pytest.raises(InvalidHandle, match=f"sum: x is on {name}, but sum runs on cpu"):
        ops.sum(cpu, buffer)
    assert cpu.memory_usage().number_allocs == before  # nothing allocated, nothing enqueued
    np.testing.assert_array_equal(matmul(a, ruda.asarray(b, cpu)).numpy(), np.full((4, 3), 8))
