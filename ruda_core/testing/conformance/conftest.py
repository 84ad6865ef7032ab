"""Fixtures shared by the conformance modules (the device fixtures come from the plugin)."""

from __future__ import annotations

import pytest

from ruda_core.runtime import ComputeClient
from ruda_core.testing.workloads import Spin


@pytest.fixture(scope="session")
def spin(client: ComputeClient) -> Spin:
    """The spin kernel calibrated on the device under test (about 0.3 s per launch)."""
    return Spin(client)
