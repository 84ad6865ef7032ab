"""``CpuRuntime`` and ``CpuDevice``: the NumPy reference device as a ruda runtime."""

from __future__ import annotations

from typing import Any

from ruda_core.runtime import (
    DeviceId,
    IndexedDevice,
    IndexedRuntime,
    TargetProperties,
)

from .compiler import CpuCompiler
from .server import CpuServer, plane_dim_from_env

__all__ = ["CpuDevice", "CpuRuntime"]


class CpuDevice(IndexedDevice):
    """The NumPy reference device. There is one: index 0, named ``"cpu"``."""

    __slots__ = ()
    backend = "cpu"
    max_index = 0

    def __str__(self) -> str:
        return self.backend


class CpuRuntime(IndexedRuntime):
    """The NumPy reference runtime: exact, deterministic, always available."""

    compiler = CpuCompiler
    server = CpuServer
    device = CpuDevice

    @classmethod
    def new_server(cls, device: Any) -> CpuServer:
        return CpuServer(device.to_id())

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return (2**31 - 1, 65535, 65535)

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="numpy", default_plane_dim=plane_dim_from_env())

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        return [DeviceId(0, 0)] if type_id == 0 else []
