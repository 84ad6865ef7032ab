"""``CudaRuntime`` and ``CudaDevice``. CuPy is imported only when a device is first used.

``RudaCount`` is the CUDA grid and ``RudaDim`` the CUDA block.
"""

from __future__ import annotations

from typing import Any

from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    IndexedDevice,
    IndexedRuntime,
    LazyType,
    TargetProperties,
)

from .compiler import CudaCompiler

__all__ = ["CudaDevice", "CudaRuntime"]


class CudaDevice(IndexedDevice):
    """A CUDA device by ordinal."""

    __slots__ = ()
    backend = "cuda"


class CudaRuntime(IndexedRuntime):
    """CUDA through CuPy: NVRTC for compilation, CUDA streams and events for ordering."""

    compiler = CudaCompiler
    #: imports CuPy when first read
    server = LazyType(
        "ruda_cuda.server:CudaServer",
        "pip install 'ruda[cuda]' (CUDA 12) or 'ruda[cuda13]' (CUDA 13)",
    )
    device = CudaDevice

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
    def target_properties(cls) -> TargetProperties:
        return TargetProperties(language="cuda", default_plane_dim=32)

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        if type_id != 0:
            return []
        import cupy

        return [DeviceId(0, k) for k in range(cupy.cuda.runtime.getDeviceCount())]
