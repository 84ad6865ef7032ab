"""``OpenCLRuntime`` and ``OpenCLDevice``. PyOpenCL is imported only when a device is used.

``RudaCount`` is the OpenCL work-group count and ``RudaDim`` the local (work-group) size.
Devices are numbered across all platforms; ``type_id`` 1 GPU, 2 CPU, 3 accelerator, 4 other.
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

from .compiler import OpenCLCompiler

__all__ = ["PLANE_DIM_VARIABLE", "SUBGROUPS_VARIABLE", "OpenCLDevice", "OpenCLRuntime"]

#: The environment variable that turns subgroups off: ``0`` runs every OpenCL device with planes
#: of one lane, as a device without subgroups; ``1`` or unset uses them where it can.
SUBGROUPS_VARIABLE = "RUDA_OPENCL_SUBGROUPS"
#: The environment variable that sets the subgroup width asked of a driver that lets ruda require
#: one (Intel's): one of the widths the device offers, or 1 for planes of one lane; unset, a CPU's
#: float vector width, else 16. Devices whose width is their own (NVIDIA's warp) or that have no
#: fixed width do not read it.
PLANE_DIM_VARIABLE = "RUDA_OPENCL_PLANE_DIM"


class OpenCLDevice(IndexedDevice):
    """An OpenCL device by its index across all platforms."""

    __slots__ = ()
    backend = "opencl"

    def to_id(self) -> DeviceId:
        """The device's type id (its driver's device type) and index; queries the driver."""
        from .driver import all_devices, type_id_of

        return DeviceId(type_id_of(all_devices()[self.index]), self.index)


class OpenCLRuntime(IndexedRuntime):
    """OpenCL 1.2+ through PyOpenCL."""

    compiler = OpenCLCompiler
    #: imports PyOpenCL when first read
    server = LazyType("ruda_opencl.server:OpenCLServer", "pip install 'ruda[opencl]'")
    device = OpenCLDevice

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return (2**31 - 1, 2**31 - 1, 2**31 - 1)

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="opencl", default_plane_dim=1)

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        from .driver import all_devices, type_id_of

        return [
            DeviceId(type_id_of(d), k)
            for k, d in enumerate(all_devices())
            if type_id in (0, type_id_of(d))
        ]
