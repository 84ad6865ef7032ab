"""The ``cpu`` driver plugin: the NumPy reference device, always available."""

from __future__ import annotations

from collections.abc import Mapping

from ruda_core import __version__
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, hookimpl

from .runtime import CpuDevice, CpuRuntime
from .server import PLANE_DIM_VARIABLE


def _probe() -> list[CpuDevice]:
    return [CpuDevice(0)]


def _identify(device: object) -> str:
    import numpy

    return f"numpy {numpy.__version__}"


@hookimpl
def ruda_backend_info() -> BackendInfo:
    return BackendInfo(
        "cpu",
        __version__,
        PLUGIN_API_VERSION,
        CpuRuntime,
        _probe,
        identify=_identify,
        dlpack_device_type=1,  # kDLCPU: a page is host memory, shared by address
        settings=(PLANE_DIM_VARIABLE,),
    )


@hookimpl
def ruda_native_ops() -> Mapping[str, object]:
    """``sort`` and ``argsort`` computed by NumPy (:mod:`ruda_cpu.sorting`)."""
    from . import sorting

    return {"sort": sorting.sort, "argsort": sorting.argsort}
