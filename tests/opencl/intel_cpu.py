"""The device of Intel's CPU runtime that OpenCL tests about its compiler run on."""

from __future__ import annotations

import pytest

from ruda_opencl.capabilities import OpenCLCapabilities
from ruda_opencl.driver import all_devices


def intel_cpu_index() -> int:
    """The index among :func:`~ruda_opencl.driver.all_devices` of a device of Intel's CPU
    runtime (whose builds run in a child process); skips the test where there is none."""
    for index, device in enumerate(all_devices()):
        if OpenCLCapabilities.of(device).builds_apart:
            return index
    pytest.skip("opencl: no device of Intel's CPU runtime here (pip: intel-opencl-rt)")
