"""NumPy arrays as launch arguments on every device: the arrays a kernel writes hold its
results when ``launch`` returns, whether the device uses host memory as it is (``cpu``) or
stages copies (OpenCL, CUDA, WebGPU); arrays it only reads are left as they are."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.errors import CaptureError, InteropError, LaunchConfigError
from ruda_core.lang import ABSOLUTE_POS, Array, Comptime, Tensor, f32, i32, kernel
from ruda_core.runtime import RudaCount, RudaDim

DEVICES = ["cpu", "opencl:0", "cuda:0", "webgpu:0"]


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


@kernel
def bump(x: Array[i32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + 1


@kernel
def transpose(src: Tensor[f32], dst: Array[f32], WIDTH: Comptime[int]):
    i = ABSOLUTE_POS
    r = i // WIDTH
    c = i % WIDTH
    if r < src.shape(0) and c < src.shape(1):
        dst[c * src.shape(0) + r] = src[r * src.stride(0) + c * src.stride(1)]


@pytest.mark.parametrize("name", DEVICES)
def test_an_output_array_holds_the_results_when_launch_returns(open_device, name):
    client = open_device(name)
    x = np.arange(1000, dtype=np.float32)
    for step in range(3):  # the first launch builds the kernel; the later ones take its fast path
        out = np.zeros_like(x)
        saxpy.launch(client, RudaCount(4), RudaDim(256), float(step), x, x, out)
        np.testing.assert_array_equal(out, step * x + x)
    np.testing.assert_array_equal(x, np.arange(1000, dtype=np.float32))


@pytest.mark.parametrize("name", DEVICES)
def test_an_array_updated_in_place_is_updated_once_per_launch(open_device, name):
    client = open_device(name)
    x = np.arange(300, dtype=np.int32)
    for _ in range(3):
        bump.launch(client, RudaCount(2), RudaDim(256), x)
    np.testing.assert_array_equal(x, np.arange(300, dtype=np.int32) + 3)


@pytest.mark.parametrize("name", DEVICES)
def test_a_numpy_array_passes_for_a_tensor_parameter(open_device, name):
    client = open_device(name)
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    dst = np.zeros(12, np.float32)
    transpose.launch(client, RudaCount(1), RudaDim(16), src, dst, WIDTH=4)
    np.testing.assert_array_equal(dst, src.T.ravel())


@kernel
def double_and_stride(t: Tensor[f32], strides: Array[i32]):
    if ABSOLUTE_POS == 0:
        strides[0] = i32(t.stride(0))
        strides[1] = i32(t.stride(1))
    i = ABSOLUTE_POS
    r = i // t.shape(1)
    if r < t.shape(0):
        c = i % t.shape(1)
        t[r, c] = t[r, c] * f32(2.0)


@pytest.mark.parametrize("name", DEVICES)
def test_a_strided_array_is_its_own_memory_on_cpu_and_a_contiguous_copy_elsewhere(
    open_device, name
):
    """A kernel indexing one index per axis doubles the same elements of a view on every
    device; only the NumPy device shows it the view's own strides."""
    client = open_device(name)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    strides = np.zeros(2, np.int32)
    double_and_stride.launch(client, RudaCount(1), RudaDim(32), base[:, 1::2], strides)
    expected = np.arange(24, dtype=np.float32).reshape(4, 6)
    expected[:, 1::2] *= 2
    np.testing.assert_array_equal(base, expected)
    np.testing.assert_array_equal(strides, [6, 2] if name == "cpu" else [3, 1])


@kernel
def chain(a: Array[i32], b: Array[i32]):
    i = ABSOLUTE_POS
    if i < a.len():
        b[i] = a[i] + 1
        a[i] = b[i] + 10


@pytest.mark.parametrize("name", DEVICES)
def test_an_array_passed_for_two_parameters_is_one_array_on_every_device(open_device, name):
    """Each write through one parameter is seen through the other, as on the NumPy device
    (a device that copies the array copies it once for both)."""
    client = open_device(name)
    x = np.arange(6, dtype=np.int32)
    chain.launch(client, RudaCount(1), RudaDim(8), x, x)
    np.testing.assert_array_equal(x, np.arange(6) + 11)


@pytest.mark.parametrize("name", DEVICES)
def test_overlapping_arrays_a_kernel_writes_are_refused_where_they_are_copied(open_device, name):
    client = open_device(name)
    x = np.zeros(8, np.int32)
    if name == "cpu":  # the kernel works in the arrays' own memory
        chain.launch(client, RudaCount(1), RudaDim(4), x[0:4], x[2:6])
        np.testing.assert_array_equal(x, [11, 11, 11, 11, 1, 1, 0, 0])
        return
    refused = f"argument 'a' of kernel chain and argument 'b' .* overlapping memory.* {name}"
    with pytest.raises(InteropError, match=refused):
        chain.launch(client, RudaCount(1), RudaDim(4), x[0:4], x[2:6])
    np.testing.assert_array_equal(x, np.zeros(8))  # nothing ran
    out = np.zeros(4, np.float32)
    y = np.arange(8, dtype=np.float32)
    saxpy.launch(client, RudaCount(1), RudaDim(4), 1.0, y[0:4], y[2:6], out)  # only read
    np.testing.assert_array_equal(out, y[0:4] + y[2:6])


@pytest.mark.parametrize("name", DEVICES)
def test_an_array_the_kernel_only_reads_may_be_read_only(open_device, name):
    client = open_device(name)
    x = np.arange(256, dtype=np.float32)
    x.setflags(write=False)
    out = np.zeros_like(x)
    saxpy.launch(client, RudaCount(1), RudaDim(256), 1.0, x, x, out)
    np.testing.assert_array_equal(out, 2 * x)


@pytest.mark.parametrize("name", DEVICES)
def test_a_read_only_array_the_kernel_writes_is_refused_before_it_runs(open_device, name):
    client = open_device(name)
    x = np.arange(256, dtype=np.float32)
    out = ruda.asarray(np.full(256, -1.0, np.float32), client)
    frozen = np.zeros_like(x)
    frozen.setflags(write=False)
    with pytest.raises(InteropError, match=f"read-only.*writes on {name}"):
        saxpy.launch(client, RudaCount(1), RudaDim(256), 1.0, x, x, frozen)
    counts = np.zeros(256, np.int32)
    counts.setflags(write=False)
    with pytest.raises(InteropError, match=f"read-only.*writes on {name}"):  # read and written
        bump.launch(client, RudaCount(1), RudaDim(256), counts)
    saxpy.launch(client, RudaCount(1), RudaDim(256), 1.0, x, x, out)
    np.testing.assert_array_equal(out.numpy(), 2 * x)


@pytest.mark.parametrize("name", DEVICES)
def test_an_array_of_another_element_type_is_refused_by_name(open_device, name):
    client = open_device(name)
    x = np.arange(256, dtype=np.float64)
    out = np.zeros(256, np.float32)
    with pytest.raises(LaunchConfigError, match="'x' has f64 elements; the kernel declares f32"):
        saxpy.launch(client, RudaCount(1), RudaDim(256), 1.0, x, x, out)


@pytest.mark.parametrize("name", DEVICES)
def test_arrays_in_the_other_byte_order_are_converted_both_ways(open_device, name):
    client = open_device(name)
    x = np.arange(256, dtype=">f4")
    out = np.zeros(256, ">f4")
    saxpy.launch(client, RudaCount(1), RudaDim(256), 2.0, x, x, out)
    assert out.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(out, 3 * np.arange(256, dtype=np.float32))


@pytest.mark.parametrize("name", DEVICES)
def test_an_array_of_no_ruda_element_type_is_refused_saying_so(open_device, name):
    client = open_device(name)
    z = np.zeros(256, np.complex64)
    with pytest.raises(InteropError, match="dtype complex64 has no ruda element type"):
        saxpy.launch(client, RudaCount(1), RudaDim(256), 1.0, z, z, np.zeros(256, np.float32))


@pytest.mark.parametrize("name", ["opencl:0", "cuda:0", "webgpu:0"])
def test_an_array_a_device_copies_is_refused_inside_a_capture_naming_the_fix(open_device, name):
    client = open_device(name).fixed_execution_queue()
    x = np.arange(256, dtype=np.float32)
    with client.capture(), pytest.raises(CaptureError, match=r"make it a device tensor before"):
        saxpy.launch(client, RudaCount(1), RudaDim(256), 1.0, x, x, np.zeros_like(x))


@pytest.mark.parametrize("name", DEVICES)
def test_a_field_of_packed_records_is_copied_or_refused_saying_why(open_device, name):
    """A record field strides by the record (5 bytes here), not by whole elements: a device
    that copies arrays copies it; the NumPy device, which uses the memory as it is, refuses
    it naming the stride."""
    client = open_device(name)
    records = np.zeros(256, dtype=[("a", "<f4"), ("b", "u1")])
    records["a"] = np.arange(256)
    out = np.zeros(256, np.float32)
    args = (client, 1, 256, 1.0, records["a"], records["a"], out)
    if name == "cpu":
        with pytest.raises(InteropError, match=r"strides \(5,\) bytes, not whole 4-byte"):
            saxpy.launch(*args)
    else:
        saxpy.launch(*args)
        np.testing.assert_array_equal(out, 2 * np.arange(256, dtype=np.float32))
