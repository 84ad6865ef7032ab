"""What the client accepts: any integral size and launch geometry (NumPy integers included, bools
and floats refused clearly), Handles where Handles are read or written (a clear ``TypeError``
otherwise), and a timeout on ``read_one``."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import LaunchConfigError, RudaCount, RudaDim
from ruda_core.testing.runner import TIMEOUT_S, read_array
from ruda_core.testing.workloads import Spin


@kernel
def numbered(out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = i


@pytest.mark.parametrize("integer", [np.int64, np.uint32, np.int8, np.uint64])
def test_numpy_integer_sizes_and_geometry_are_accepted(private_client, integer):
    out = private_client.empty(integer(64))
    assert out.nbytes == 64 and type(out.nbytes) is int
    dim, count = RudaDim(integer(4), integer(1)), RudaCount(integer(2), z=integer(2))
    assert (dim.x, dim.y, count.x, count.z) == (4, 1, 2, 2)
    assert all(type(v) is int for v in (dim.x, dim.y, dim.z, count.x, count.y, count.z))
    assert dim == RudaDim(4) and hash(count) == hash(RudaCount(2, 1, 2))
    numbered.launch(private_client, count, dim, ArrayArg(out, 16))
    np.testing.assert_array_equal(read_array(private_client, out, np.uint32), np.arange(16))


@pytest.mark.parametrize("value", [True, 2.0, np.float32(2), "2", None], ids=repr)
def test_numpy_integer_support_still_refuses_bools_floats_and_others(private_client, value):
    kind = type(value).__name__
    with pytest.raises(ValueError, match=f"integer.*{kind}"):
        private_client.empty(value)
    with pytest.raises(LaunchConfigError, match=f"must be an integer.*{kind}"):
        RudaDim(value)
    with pytest.raises(LaunchConfigError, match=f"must be an integer.*{kind}"):
        RudaCount(1, value)


def test_read_async_type_error_names_a_binding_passed_for_a_handle(private_client):
    handle = private_client.create_from_slice(b"12345678")
    with pytest.raises(TypeError, match=r"read takes Handles; element 1 is Binding\(8 B"):
        private_client.read_async([handle, handle.binding()])
    with pytest.raises(TypeError, match=r"element 0 is Binding.*\(Binding\)"):
        private_client.read_one(handle.binding())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"write takes Handles; element 0 is b'ab' \(bytes\)"):
        private_client.write(b"ab", b"cd")  # type: ignore[arg-type]
    assert bytes(private_client.read_one(handle)) == b"12345678"


def test_read_one_timeout(private_client):
    spin = Spin(private_client, target_s=0.5)
    handle = private_client.empty(4 * spin.units)
    spin.launch(handle)
    with pytest.raises(TimeoutError):
        private_client.read_one(handle, timeout=0.001)
    got = np.frombuffer(private_client.read_one(handle, timeout=TIMEOUT_S), np.uint32)
    np.testing.assert_array_equal(got, spin.expected())


@pytest.mark.parametrize("data", [np.array([object()] * 4), np.array([[1, 2]], dtype=object)])
def test_arrays_of_python_objects_are_refused_not_copied_as_pointers(private_client, data):
    with pytest.raises(TypeError, match="Python objects"):
        private_client.create_from_slice(data)
    with pytest.raises(TypeError, match="Python objects"):
        private_client.write(private_client.empty(data.nbytes), data)
