"""Tensor creation and readback: layouts, strides and the errors for refused layouts."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.runtime import CopyDescriptor, LayoutError, RudaPanic, contiguous_strides
from ruda_core.tensor import RudaTensor
from ruda_cpu import CpuRuntime


@pytest.fixture(scope="module")
def client():
    return ruda.client("cpu")


def test_create_tensor_returns_contiguous_strides(client):
    data = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    handle, strides = client.create_tensor_from_slice(data, data.shape, 4)
    assert strides == (12, 4, 1)
    out = client.read_tensor([CopyDescriptor(handle, (2, 3, 4), strides, 4)])[0]
    np.testing.assert_array_equal(np.frombuffer(out, np.int32).reshape(2, 3, 4), data)


def test_empty_tensor(client):
    handle, strides = client.empty_tensor((5, 7), 8)
    assert handle.nbytes == 5 * 7 * 8
    assert strides == (7, 1)


def test_wrong_buffer_size_is_refused_before_anything_runs(client):
    before = client.memory_usage().number_allocs
    with pytest.raises(LayoutError, match="needs 24 bytes; got 20"):
        client.create_tensor_from_slice(bytes(20), (2, 3), 4)
    assert client.memory_usage().number_allocs == before


def test_pitched_rows_read_as_contiguous(client):
    # 3 rows of 4 floats, each row padded to 6 floats
    padded = np.arange(18, dtype=np.float32).reshape(3, 6)
    handle = client.create_from_slice(padded)
    out = client.read_tensor([CopyDescriptor(handle, (3, 4), (6, 1), 4)])[0]
    np.testing.assert_array_equal(np.frombuffer(out, np.float32).reshape(3, 4), padded[:, :4])


@pytest.mark.parametrize(
    ("shape", "strides"),
    [((3, 4), (1, 3)), ((4, 4), (0, 1)), ((2, 3), (3, 2))],
    ids=["transposed", "broadcast", "inner-stride-2"],
)
def test_refused_layouts_raise_clear_error(client, shape, strides):
    assert not CpuRuntime.can_read_tensor(shape, strides)
    handle = client.empty(256)
    desc = CopyDescriptor(handle, shape, strides, 4)
    with pytest.raises(LayoutError, match="make it contiguous"):
        client.read_tensor_async([desc])
    with pytest.raises(RudaPanic, match="make it contiguous") as info:
        client.read_tensor([desc])  # the panicking form
    assert isinstance(info.value.__cause__, LayoutError)


def test_layout_larger_than_handle_is_refused(client):
    handle = client.empty(40)
    with pytest.raises(LayoutError, match="spans 48 bytes"):
        client.read_tensor_async([CopyDescriptor(handle, (3, 4), (4, 1), 4)])


def test_descriptor_validates_rank():
    with pytest.raises(LayoutError, match="differ in rank"):
        CopyDescriptor(None, (2, 3), (1,), 4)  # type: ignore[arg-type]


def test_contiguous_strides_and_can_read():
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()
    assert CpuRuntime.can_read_tensor((2, 3, 4), (12, 4, 1))
    assert CpuRuntime.can_read_tensor((2, 1, 4), (4, 99, 1))  # extent-1 axes do not matter


def test_ruda_tensor_round_trip(client):
    data = np.random.default_rng(3).random((4, 5)).astype(np.float64)
    tensor = RudaTensor.from_numpy(client, data)
    assert tensor.shape == (4, 5) and tensor.is_contiguous
    np.testing.assert_array_equal(tensor.to_numpy(client), data)


def test_read_tensor_panic_is_a_runtime_error(client):
    handle = client.empty(64)
    with pytest.raises(RuntimeError):
        client.read_tensor([CopyDescriptor(handle, (4, 4), (1, 4), 4)])
