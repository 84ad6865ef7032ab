"""A runtime's lazily imported server type: a driver package that is not installed is a
``BackendUnavailable`` saying what to install, never a raw ``ModuleNotFoundError``. (CUDA's own
case, without CuPy, is in tests/cuda.)"""

from __future__ import annotations

import sys

import pytest

from ruda_core.runtime import BackendUnavailable, LazyType


@pytest.fixture
def driver_module(tmp_path, monkeypatch):
    """A module ``lazy_backend_server`` that imports a package nobody installed."""
    (tmp_path / "lazy_backend_server.py").write_text("import ruda_no_such_driver\nServer = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazy_backend_server"
    sys.modules.pop("lazy_backend_server", None)


def test_lazy_server_without_its_driver_is_backend_unavailable(driver_module):
    class Holder:
        server = LazyType(f"{driver_module}:Server", "pip install no-such-driver")

    with pytest.raises(BackendUnavailable) as info:
        Holder.server  # noqa: B018  # the access is what raises
    assert str(info.value) == (
        "Holder.server needs the package 'ruda_no_such_driver', which is not installed; install "
        "it with pip install no-such-driver"
    )
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_lazy_server_of_a_missing_backend_module_stays_a_module_error():
    class Holder:
        server = LazyType("ruda_no_such_backend.server:Server")

    with pytest.raises(ModuleNotFoundError, match="ruda_no_such_backend"):
        Holder.server  # noqa: B018  # the access is what raises
