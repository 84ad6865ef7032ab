"""Fixtures shared by the conformance modules (the device fixtures come from the plugin)."""

from __future__ import annotations

import pytest

from ruda_core.runtime import ComputeClient
from ruda_core.testing.workloads import Spin


@pytest.fixture(scope="session")
def spin(client: ComputeClient) -> Spin:
    """The spin kernel calibrated on the device under test (about 0.3 s per launch)."""
    return Spin(client)


@pytest.fixture
def unsanitized(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test's launches without the reference device's sanitizer (``RUDA_SANITIZE=0``):
    for tests whose kernels go out of bounds on purpose, to show what a checked launch does."""
    monkeypatch.setenv("RUDA_SANITIZE", "0")
