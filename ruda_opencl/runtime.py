"""``OpenCLRuntime`` and ``OpenCLDevice``. PyOpenCL is imported only when a device is used.

``RudaCount`` is the OpenCL work-group count and ``RudaDim`` the local (work-group) size.
Devices are numbered across all platforms; ``type_id`` 1 GPU, 2 CPU, 3 accelerator, 4 other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    LazyType,
    Runtime,
    TargetProperties,
    is_contiguous_or_pitched,
)

from .compiler import OpenCLCompiler

__all__ = ["OpenCLDevice", "OpenCLRuntime"]


@dataclass(frozen=True, slots=True)
class OpenCLDevice:
    """An OpenCL device by its index across all platforms."""

    index: int = 0

    def __post_init__(self) -> None:
        if self.index < 0:
            raise ValueError(f"an OpenCL device index is >= 0, not {self.index}")

    def to_id(self) -> DeviceId:
        from .platform import all_devices, type_id_of

        return DeviceId(type_id_of(all_devices()[self.index]), self.index)

    def __str__(self) -> str:
        return f"opencl:{self.index}"


class OpenCLRuntime(Runtime):
    """OpenCL 1.2+ through PyOpenCL."""

    compiler = OpenCLCompiler
    #: imports PyOpenCL when first read
    server = LazyType("ruda_opencl.server:OpenCLServer", "pip install 'ruda[opencl]'")
    device = OpenCLDevice

    @classmethod
    def client(cls, device: Any = None) -> ComputeClient:
        dev = device if device is not None else OpenCLDevice()

        return ComputeClient.get_or_init(dev, lambda: cls.server(dev))

    @classmethod
    def name(cls, client: ComputeClient) -> str:
        return "opencl"

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return (2**31 - 1, 2**31 - 1, 2**31 - 1)

    @classmethod
    def can_read_tensor(cls, shape: Sequence[int], strides: Sequence[int]) -> bool:
        return is_contiguous_or_pitched(shape, strides)

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="opencl", default_plane_dim=1)

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        from .platform import all_devices, type_id_of

        return [
            DeviceId(type_id_of(d), k)
            for k, d in enumerate(all_devices())
            if type_id in (0, type_id_of(d))
        ]
