"""``WebGpuRuntime`` and ``WebGpuDevice``. wgpu is imported only when a device is used.

``RudaCount`` is the WebGPU workgroup count and ``RudaDim`` the workgroup size. Devices are the
adapters wgpu-native enumerates, in its order (Vulkan first).
"""

from __future__ import annotations

from typing import Any

from ruda_core.runtime import (
    DeviceId,
    IndexedDevice,
    IndexedRuntime,
    LazyType,
    TargetProperties,
)

from .compiler import WebGpuCompiler

__all__ = [
    "INSTALL_HINT",
    "MAX_RUDA_COUNT",
    "PLANE_DIM_VARIABLE",
    "WebGpuDevice",
    "WebGpuRuntime",
]

INSTALL_HINT = "pip install 'ruda[webgpu]'"
#: The setting of the width of the planes kernels are generated for (one of ``PLANE_DIMS``; 1:
#: planes of one lane, without subgroups); unset: the width the driver measures.
PLANE_DIM_VARIABLE = "RUDA_WEBGPU_PLANE_DIM"
#: Cubes per launch along x, y, z. WebGPU dispatches at most 65 535 workgroups per axis; a
#: launch of more cubes along x folds them into z (or is split into several dispatches where it
#: has more than one cube along z).
MAX_RUDA_COUNT = (2**31 - 1, 65535, 65535)


class WebGpuDevice(IndexedDevice):
    """A WebGPU adapter by its index in wgpu-native's enumeration."""

    __slots__ = ()
    backend = "webgpu"


class WebGpuRuntime(IndexedRuntime):
    """WebGPU through wgpu-py."""

    compiler = WebGpuCompiler
    #: imports wgpu when first read
    server = LazyType("ruda_wgpu.server:WebGpuServer", INSTALL_HINT)
    device = WebGpuDevice

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return MAX_RUDA_COUNT

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="wgsl", default_plane_dim=1)

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        from .adapters import all_adapters

        return [DeviceId(0, k) for k in range(len(all_adapters()))] if type_id == 0 else []
