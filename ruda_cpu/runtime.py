"""``CpuRuntime`` and ``CpuDevice``: the NumPy reference device as a ruda runtime."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    Runtime,
    TargetProperties,
    is_contiguous_or_pitched,
)

from .compiler import CpuCompiler
from .server import PLANE_DIM, CpuServer

__all__ = ["CpuDevice", "CpuRuntime"]


@dataclass(frozen=True, slots=True)
class CpuDevice:
    """The NumPy reference device. There is one: index 0."""

    index: int = 0

    def __post_init__(self) -> None:
        if self.index != 0:
            raise ValueError(f"the NumPy device has index 0 only, not {self.index}")

    def to_id(self) -> DeviceId:
        return DeviceId(0, self.index)

    def __str__(self) -> str:
        return "cpu"


class CpuRuntime(Runtime):
    """The NumPy reference runtime: exact, deterministic, always available."""

    compiler = CpuCompiler
    server = CpuServer
    device = CpuDevice

    @classmethod
    def client(cls, device: Any = None) -> ComputeClient:
        dev = device if device is not None else CpuDevice()
        return ComputeClient.get_or_init(dev, lambda: CpuServer(dev.to_id()))

    @classmethod
    def name(cls, client: ComputeClient) -> str:
        return "cpu"

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return (2**31 - 1, 65535, 65535)

    @classmethod
    def can_read_tensor(cls, shape: Sequence[int], strides: Sequence[int]) -> bool:
        return is_contiguous_or_pitched(shape, strides)

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="numpy", default_plane_dim=PLANE_DIM)

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        return [DeviceId(0, 0)] if type_id == 0 else []
