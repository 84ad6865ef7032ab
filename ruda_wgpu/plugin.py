"""The ``webgpu`` driver plugin. Imports wgpu only when probed."""

from __future__ import annotations

from ruda_core import __version__
from ruda_core.plugins import PLUGIN_API_VERSION, BackendInfo, NoDevice, hookimpl

from .runtime import INSTALL_HINT, PLANE_DIM_VARIABLE, WebGpuDevice, WebGpuRuntime


def _probe() -> list[WebGpuDevice]:
    from .adapters import all_adapters

    adapters = all_adapters()
    if not adapters:
        raise NoDevice(
            "wgpu found no adapter that computes; install a Vulkan driver (on a machine "
            "without a GPU: apt install mesa-vulkan-drivers, a CPU one)"
        )
    return [WebGpuDevice(k) for k in range(len(adapters))]


def _identify(device: object) -> str:
    from .adapters import all_adapters, describe

    if not isinstance(device, WebGpuDevice):
        raise TypeError(f"{device!r} is not a WebGpuDevice")
    return describe(all_adapters()[device.index])


@hookimpl
def ruda_backend_info() -> BackendInfo:
    return BackendInfo(
        "webgpu",
        __version__,
        PLUGIN_API_VERSION,
        WebGpuRuntime,
        _probe,
        install_hint=INSTALL_HINT,
        identify=_identify,
        dlpack_device_type=None,  # GPUBuffer objects: not shared with other libraries by address
        settings=(PLANE_DIM_VARIABLE,),
    )
