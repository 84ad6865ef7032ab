"""Fake ruda drivers for the plugin tests, installed for a subprocess to load.

:func:`driver_source` writes the module of a backend over the NumPy reference device, built on
the public plugin API only, whose driver overrides the hooks a test names;
:func:`fake_distribution` installs modules as a real distribution (dist-info metadata and
``ruda.backends`` entry points) on a path entry, which :func:`path_with` puts on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["driver_source", "fake_distribution", "path_with"]

_DRIVER = '''"""A fake ruda backend over the reference device, for tests: {what}."""

from dataclasses import dataclass

from ruda_core import backends
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, hookimpl
from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    Runtime,
    RudaFuture,
    is_contiguous_or_pitched,
)
{preamble}
NAME = "{name}"


@dataclass(frozen=True)
class Device:
    index: int = 0

    def to_id(self):
        return DeviceId(0, self.index)

    def __str__(self):
        return f"{{NAME}}:{{self.index}}"


def _reference():
    return next(s.runtime for s in backends() if s.name == "cpu")


def _server_class():
    reference = _reference().server

    class FakeDriver(reference.driver_class):
{driver}

    class FakeServer(reference):
        driver_class = FakeDriver
{server}

    return FakeServer


class FakeRuntime(Runtime):
    device = Device

    @classmethod
    def client(cls, device=None):
        dev = device or Device()
        return ComputeClient.get_or_init(dev, lambda: _server_class()(dev.to_id()), runtime=cls)

    @classmethod
    def name(cls, client):
        return NAME

    @classmethod
    def max_ruda_count(cls):
        return _reference().max_ruda_count()

    @classmethod
    def can_read_tensor(cls, shape, strides):
        return is_contiguous_or_pitched(shape, strides)

    @classmethod
    def target_properties(cls):
        return _reference().target_properties()

    @classmethod
    def enumerate_devices(cls, type_id, info):
        return [DeviceId(0, 0)] if type_id == 0 else []


@hookimpl
def ruda_backend_info():
    return BackendInfo(
        NAME, "{version}", PLUGIN_API_VERSION, FakeRuntime, lambda: [Device(0)]{identify}
    )
{hooks}'''

_XFAILS = """

@hookimpl
def ruda_conformance_xfails():
    return {xfails!r}
"""


def driver_source(
    name: str,
    what: str,
    driver: str = "        pass",
    *,
    server: str = "",
    version: str = "0.0",
    preamble: str = "",
    identity: str | None = None,
    xfails: Mapping[str, str] | None = None,
) -> str:
    """The module of backend ``name`` (devices ``name:0``), which ``what`` describes.

    :param driver: the body of its driver class (a subclass of the reference device's, the
        reference server's ``driver_class``), indented by eight spaces.
    :param server: more of the body of its server class (a subclass of the reference device's
        that makes a driver of that class), indented by eight spaces.
    :param preamble: module-level lines its server needs (imports, constants).
    :param identity: the driver identity its ``identify`` hook reports for the probe's stored
        verdict; without it the backend has no ``identify``.
    :param xfails: the conformance overrides its ``ruda_conformance_xfails`` hook declares;
        without it the backend has no such hook.
    """
    return _DRIVER.format(
        name=name,
        what=what,
        driver=driver,
        server=f"\n{server}" if server else "",
        version=version,
        preamble=f"\n{preamble.strip()}\n" if preamble else "",
        identify=f", identify=lambda device: {identity!r}" if identity is not None else "",
        hooks=_XFAILS.format(xfails=dict(xfails)) if xfails is not None else "",
    )


def fake_distribution(
    root: Path, distribution: str, backends: Mapping[str, str], modules: Mapping[str, str]
) -> Path:
    """Install ``modules`` (name -> source) under ``root`` as the distribution ``distribution``
    1.0 whose ``ruda.backends`` entry points are ``backends`` (backend name -> module); returns
    ``root``, the path entry."""
    info = root / f"{distribution.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    lines = ["[ruda.backends]", *(f"{name} = {module}" for name, module in backends.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)
    return root


def path_with(root: Path) -> str:
    """``PYTHONPATH`` with ``root`` in front of what the environment has."""
    return f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
