"""The WebGPU tests' device: ``webgpu:0``, skipped (or failed under ``RUDA_REQUIRE``) with the
reason where this machine cannot open it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client(open_device):
    return open_device("webgpu:0")
