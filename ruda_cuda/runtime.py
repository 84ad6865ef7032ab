"""``CudaRuntime`` and ``CudaDevice``. CuPy is imported only when a device is first used.

``RudaCount`` is the CUDA grid and ``RudaDim`` the CUDA block.
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

from .compiler import CudaCompiler

__all__ = ["CudaDevice", "CudaRuntime"]


@dataclass(frozen=True, slots=True)
class CudaDevice:
    """A CUDA device by ordinal."""

    index: int = 0

    def __post_init__(self) -> None:
        if self.index < 0:
            raise ValueError(f"a CUDA device ordinal is >= 0, not {self.index}")

    def to_id(self) -> DeviceId:
        return DeviceId(0, self.index)

    def __str__(self) -> str:
        return f"cuda:{self.index}"


class CudaRuntime(Runtime):
    """CUDA through CuPy: NVRTC for compilation, CUDA streams and events for ordering."""

    compiler = CudaCompiler
    #: imports CuPy when first read
    server = LazyType(
        "ruda_cuda.server:CudaServer",
        "pip install 'ruda[cuda]' (CUDA 12) or 'ruda[cuda13]' (CUDA 13)",
    )
    device = CudaDevice

    @classmethod
    def client(cls, device: Any = None) -> ComputeClient:
        dev = device if device is not None else CudaDevice()

        return ComputeClient.get_or_init(dev, lambda: cls.server(dev))

    @classmethod
    def name(cls, client: ComputeClient) -> str:
        return "cuda"

    @classmethod
    def require_array_lengths(cls) -> bool:
        return True

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return (2**31 - 1, 65535, 65535)

    @classmethod
    def can_read_tensor(cls, shape: Sequence[int], strides: Sequence[int]) -> bool:
        return is_contiguous_or_pitched(shape, strides)

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="cuda", default_plane_dim=32)

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        if type_id != 0:
            return []
        import cupy

        return [DeviceId(0, k) for k in range(cupy.cuda.runtime.getDeviceCount())]
