"""Fixtures of the NumPy driver's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import ruda_core
from ruda_core.runtime import ComputeClient, DeviceId
from ruda_cpu.runtime import CpuRuntime
from ruda_cpu.server import PLANE_DIMS, CpuServer


@pytest.fixture(scope="session")
def cpu() -> ComputeClient:
    """The NumPy device's client: kernels run through its driver, as users launch them."""
    return ruda_core.client("cpu")


@pytest.fixture(scope="session")
def width_clients() -> Iterator[dict[int, ComputeClient]]:
    """A reference-device client per plane width (``PLANE_DIMS``), each with a server of its own,
    made with ``RUDA_CPU_PLANE_DIM`` set to that width."""
    made: dict[int, ComputeClient] = {}
    with pytest.MonkeyPatch.context() as patch:
        for width in PLANE_DIMS:
            patch.setenv("RUDA_CPU_PLANE_DIM", str(width))
            server = CpuServer(DeviceId(0, 0))
            made[width] = ComputeClient(f"cpu (planes of {width})", server, runtime=CpuRuntime)
    yield made
