"""Arrays as the currency: ``ruda_core.asarray`` copies any array onto a device, a
``RudaTensor`` knows its device, shape and dtype and reads itself back with ``numpy()``, and the
portable ops take their client from their operands and return tensors, on every device."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.errors import LaunchConfigError, LayoutError
from ruda_core.lang import ABSOLUTE_POS, Array, f32, kernel
from ruda_core.ops import layer_norm, layer_norm_backward, matmul
from ruda_core.runtime import RudaCount, RudaDim

DEVICES = ["cpu", "opencl:0", "cuda:0"]


@kernel
def double(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = 2.0 * x[i]


@pytest.mark.parametrize("name", DEVICES)
def test_asarray_copies_lists_and_arrays_onto_a_device_named_by_its_string(open_device, name):
    open_device(name)
    t = ruda.asarray([[1, 2, 3], [4, 5, 6]], name, dtype=np.float32)
    assert (t.device, t.shape, t.dtype) == (name, (2, 3), np.dtype(np.float32))
    np.testing.assert_array_equal(t.numpy(), [[1, 2, 3], [4, 5, 6]])
    host = np.arange(6, dtype=np.int64)
    u = ruda.asarray(host, name)
    host[0] = 100  # a copy: the tensor keeps what it was given
    assert u.dtype == np.int64 and u.numpy()[0] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_numpy_waits_for_the_kernel_that_writes_the_tensor(open_device, name):
    client = open_device(name)
    x = ruda.asarray(np.arange(1000, dtype=np.float32), client)
    out = ruda.asarray(np.zeros(1000, np.float32), client)
    double.launch(client, RudaCount(4), RudaDim(256), x, out)
    result = out.numpy()
    np.testing.assert_array_equal(result, 2 * np.arange(1000, dtype=np.float32))
    result[0] = -1  # a writable host array of its own
    assert out.numpy()[0] == 0


@pytest.mark.parametrize("name", DEVICES)
def test_tensors_given_for_arrays_bind_as_their_elements_or_are_refused(open_device, name):
    client = open_device(name)
    x = ruda.asarray(np.arange(6, dtype=np.float32).reshape(2, 3), client)
    out = ruda.asarray(np.zeros((2, 3), np.float32), client)
    for _ in range(3):  # the first launch and the ones that reuse what it found
        double.launch(client, 1, 64, x, out)
    np.testing.assert_array_equal(out.numpy(), 2 * x.numpy())
    flipped = ruda.RudaTensor(x.handle, (3, 2), (1, 3), x.elem)  # the transpose: not contiguous
    with pytest.raises(LaunchConfigError, match=r"not contiguous(?s:.*)Tensor\[\.\.\.\]"):
        double.launch(client, 1, 64, flipped, out)
    ints = ruda.asarray(np.zeros(6, np.int32), client)
    with pytest.raises(LaunchConfigError, match="i32"):
        double.launch(client, 1, 64, x, ints)
    past = ruda.RudaTensor(x.handle, (7,), (1,), x.elem)  # one element more than its memory
    with pytest.raises(LaunchConfigError, match="7"):
        double.launch(client, 1, 64, past, out)


@pytest.mark.parametrize("name", ["opencl:0", "cuda:0"])
def test_asarray_copies_a_tensor_between_devices_and_within_one(open_device, name):
    open_device(name)
    here = ruda.asarray(np.arange(8, dtype=np.float32).reshape(2, 4), "cpu")
    there = ruda.asarray(here, name)
    assert there.device == name and there.shape == (2, 4)
    np.testing.assert_array_equal(there.numpy(), here.numpy())
    again = ruda.asarray(there, name, dtype=np.float64)
    assert again.dtype == np.float64 and again.handle is not there.handle
    np.testing.assert_array_equal(ruda.asarray(there, "cpu").numpy(), here.numpy())


def test_asarray_reads_any_dlpack_producer_of_host_memory():
    producer = ruda.from_dlpack(np.arange(4, dtype=np.float32))  # a RudaTensor over host memory
    copied = ruda.asarray(producer, "cpu")
    assert copied.handle is not producer.handle
    np.testing.assert_array_equal(copied.numpy(), np.arange(4, dtype=np.float32))


def test_empty_takes_shapes_as_numpy_does_and_refuses_what_is_no_extent():
    client = ruda.client("cpu")
    n = np.prod(np.array([2, 3]))  # a NumPy integer, as shape arithmetic gives
    for shape, expected in (((n,), (6,)), (np.int32(4), (4,)), (np.array([2, 3]), (2, 3))):
        tensor = ruda.RudaTensor.empty(client, shape, np.float32)
        assert tensor.shape == expected and all(type(d) is int for d in tensor.shape)
        assert tensor.numpy().shape == expected
    for bad in ((-1,), (2.0,), (True,), (2, "3")):
        with pytest.raises(LayoutError, match="non-negative integers"):
            ruda.RudaTensor.empty(client, bad, np.float32)


def test_asarray_takes_values_of_either_byte_order_and_holds_them_in_the_machines():
    client = ruda.client("cpu")
    swapped = np.arange(-3, 3, dtype=np.float32).astype(np.dtype(np.float32).newbyteorder())
    got = ruda.asarray(swapped, client).numpy()
    assert got.dtype == np.float32 and got.dtype.isnative
    np.testing.assert_array_equal(got, np.arange(-3, 3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"byte order(?s:.*)newbyteorder\('='\)"):
        ruda.RudaTensor.empty(client, (3,), swapped.dtype)  # no values to convert


@pytest.mark.parametrize("name", DEVICES)
def test_ops_take_the_client_from_their_operands_and_return_tensors(open_device, name):
    open_device(name)
    rng = np.random.default_rng(3)
    host = rng.standard_normal((4, 16)).astype(np.float32)
    x = ruda.asarray(host, name)
    w, b = ruda.asarray(np.ones(16, np.float32), name), ruda.asarray(np.zeros(16, np.float32), name)
    out, mean, rstd = layer_norm(x, w, b)
    assert all(isinstance(t, ruda.RudaTensor) and t.device == name for t in (out, mean, rstd))
    np.testing.assert_allclose(mean.numpy(), host.mean(axis=1), atol=1e-5)
    expected = (host - host.mean(axis=1, keepdims=True)) / np.sqrt(
        host.var(axis=1, keepdims=True) + 1e-5
    )
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-4)
    grads = layer_norm_backward(x, w, out, mean, rstd)
    assert [g.shape for g in grads] == [(4, 16), (16,), (16,)]
    np.testing.assert_allclose(grads[2].numpy(), out.numpy().sum(axis=0), atol=1e-4)
    product = matmul(x, ruda.asarray(np.eye(16, dtype=np.float32), name))
    assert product.device == name
    np.testing.assert_allclose(product.numpy(), host, atol=1e-6)


def test_an_op_given_host_arrays_says_how_to_make_a_tensor():
    with pytest.raises(TypeError, match=r"RudaTensor \(ruda_core.asarray\(x, device\)"):
        layer_norm(np.ones((2, 4), np.float32), np.ones(4, np.float32))
