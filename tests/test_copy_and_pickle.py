"""Copying and pickling what stands for device memory, a device or queued work: a deep copy of
a tensor is a new tensor on its device; a client, a server or a future is itself when copied;
and none of them pickles, with an error that says what to send to another process instead,
never one about some lock or driver object inside."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel

DEVICES = ["cpu", "opencl:0", "webgpu:0", "cuda:0"]


@kernel
def bump(x: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + 1.0


@pytest.mark.parametrize("name", DEVICES)
def test_a_deep_copy_of_a_tensor_is_a_new_tensor_on_its_device(open_device, name):
    client = open_device(name)
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    original = ruda.asarray(values, client)
    bump.launch(client, 1, 32, original)  # the copy is ordered after this write
    held = {"tensor": original, "client": client}
    copied = copy.deepcopy(held)
    twin = copied["tensor"]
    assert copied["client"] is client and twin.handle is not original.handle
    assert (twin.shape, twin.strides, twin.dtype) == (original.shape, original.strides, np.float32)
    bump.launch(client, 1, 32, twin)
    np.testing.assert_array_equal(original.numpy(), values + 1)
    np.testing.assert_array_equal(twin.numpy(), values + 2)
    assert copy.copy(original) is original


@pytest.mark.parametrize("name", DEVICES)
def test_device_objects_do_not_pickle_and_say_what_to_send_instead(open_device, name):
    client = open_device(name)
    tensor = ruda.asarray(np.ones(4, np.float32), client)
    future = client.sync()
    refusals = {
        tensor: r"tensor\.numpy\(\)(?s:.*)ruda_core\.dask\.keep",
        tensor.handle: r"client\.read_one\(handle\)",
        client: rf"device's name \('{name}'\)(?s:.*)ruda_core\.client\(name\)",
        client.server: rf"'{name}'",
        future: r"future\.result\(\)",
    }
    for value, advice in refusals.items():
        with pytest.raises(TypeError, match=advice):
            pickle.dumps(value)
    for value in (client, client.server, future):
        assert copy.copy(value) is value and copy.deepcopy(value) is value
    with pytest.raises(TypeError, match=r"client\.copy\(handle, client\.empty"):
        copy.deepcopy(tensor.handle)  # a copy of bytes is device work
    assert copy.copy(tensor.handle) is tensor.handle
