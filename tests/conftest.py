"""Fixtures shared by the tests: clients of servers no other test shares."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from ruda_core.runtime import ComputeClient, DeviceId
from ruda_cpu import CpuRuntime
from ruda_cpu.server import CpuServer

_ids = itertools.count(100)


@pytest.fixture
def new_private_client() -> Callable[[], ComputeClient]:
    """Makes clients of fresh NumPy-device servers that no other test shares (exact
    accounting; the server reads the environment when it is made)."""

    def make() -> ComputeClient:
        index = next(_ids)
        return ComputeClient(
            ("private-cpu", index), CpuServer(DeviceId(0, index)), None, CpuRuntime
        )

    return make


@pytest.fixture
def private_client(new_private_client: Callable[[], ComputeClient]) -> ComputeClient:
    """A client of a fresh NumPy-device server that no other test shares."""
    return new_private_client()
