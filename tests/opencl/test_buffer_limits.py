"""An OpenCL buffer past ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` is refused with that limit and the
device's whole memory, each named, before any driver call."""

from __future__ import annotations

import pytest

pytest.importorskip("pyopencl")

from ruda_core.runtime import BufferTooBig
from ruda_opencl.driver import all_devices


def test_a_buffer_past_the_largest_single_allocation_names_it_and_the_device_memory(open_device):
    client = open_device("opencl:0")
    device = all_devices()[0]
    largest, memory = int(device.max_mem_alloc_size), int(device.global_mem_size)
    with pytest.raises(BufferTooBig) as refused:
        client.empty(largest + 1)
    assert str(refused.value) == (
        f"a buffer of {largest + 1} bytes can never fit opencl:0: its largest single allocation "
        f"is {largest} bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE) and its device memory {memory} bytes "
        f"(CL_DEVICE_GLOBAL_MEM_SIZE); split the data into buffers of at most {largest} bytes"
    )
