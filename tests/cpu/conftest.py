"""Fixtures of the NumPy driver's tests."""

from __future__ import annotations

import pytest

import ruda_core
from ruda_core.runtime import ComputeClient


@pytest.fixture(scope="session")
def cpu() -> ComputeClient:
    """The NumPy device's client: kernels run through its driver, as users launch them."""
    return ruda_core.client("cpu")
