"""Errors of the CUDA driver: without CuPy, opening it is a ``BackendUnavailable`` that names the
extra to install; on a GPU, an allocation larger than the free device memory is an
``OutOfMemory`` after which the client keeps working.

This folder has no ``__init__.py`` on purpose: a package named ``cuda`` here would hide NVIDIA's
``cuda`` package (cuda-bindings, which the NVRTC compile tests import) from every test.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ruda_core.runtime import BackendUnavailable, OutOfMemory
from ruda_cuda import CudaDevice, CudaRuntime


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_cuda_without_cupy_is_backend_unavailable_naming_the_extra():
    with pytest.raises(
        BackendUnavailable, match=r"CudaRuntime.server needs .*'cupy'.*ruda\[cuda\]"
    ):
        CudaRuntime.server  # noqa: B018  # the access is what raises
    with pytest.raises(BackendUnavailable, match=r"ruda\[cuda\]"):
        CudaRuntime.client(CudaDevice(0))


def test_cuda_out_of_memory_is_transient_and_the_client_keeps_working(open_device):
    client = open_device("cuda:0")
    total = client.properties().memory_nbytes
    with pytest.raises(OutOfMemory, match="drop handles, call memory_cleanup"):
        client.empty(total - (64 << 20))  # fits the device, not its free memory
    data = np.arange(1 << 20, dtype=np.float32)
    np.testing.assert_array_equal(
        np.frombuffer(client.read_one(client.create_from_slice(data)), np.float32), data
    )
