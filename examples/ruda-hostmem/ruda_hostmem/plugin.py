"""The ``hostmem`` driver plugin: light, opens nothing until probed or used."""

from __future__ import annotations

from collections.abc import Mapping

from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, hookimpl

from .runtime import HostMemDevice, HostMemRuntime

__version__ = "0.1.0"


def _probe() -> list[HostMemDevice]:
    return [HostMemDevice(0)]


@hookimpl
def ruda_backend_info() -> BackendInfo:
    return BackendInfo(
        "hostmem",
        __version__,
        PLUGIN_API_VERSION,
        HostMemRuntime,
        _probe,
        install_hint="pip install ruda-hostmem",
        dlpack_device_type=1,  # kDLCPU: mmap pages are host memory, shared by address
    )


@hookimpl
def ruda_conformance_xfails() -> Mapping[str, str]:
    """No known failures: the backend must pass the whole conformance suite."""
    return {}
