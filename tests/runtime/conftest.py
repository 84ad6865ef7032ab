"""Fixtures of the runtime tests."""

from __future__ import annotations

import itertools

import pytest

from ruda_core.runtime import ComputeClient, DeviceId
from ruda_cpu.server import CpuServer

_ids = itertools.count(100)


@pytest.fixture
def private_client() -> ComputeClient:
    """A client of a fresh NumPy-device server that no other test shares (exact accounting)."""
    index = next(_ids)
    return ComputeClient(("private-cpu", index), CpuServer(DeviceId(0, index)), None)
