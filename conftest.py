"""Project-wide pytest setup: the conformance suite's plugin (its modules run on every local
device, see ``testpaths``) and an isolated cache folder for every test session."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["ruda_core.testing.plugin"]


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compiled kernels and tuning results go to a fresh folder, not the user's cache."""
    os.environ["RUDA_CACHE_DIR"] = str(tmp_path_factory.mktemp("ruda-cache"))
