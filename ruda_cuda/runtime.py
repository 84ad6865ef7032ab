"""``CudaRuntime`` and ``CudaDevice``. CuPy is imported only when a device is first used.

``RudaCount`` is the CUDA grid and ``RudaDim`` the CUDA block.
"""

from __future__ import annotations

import functools
from typing import Any

from ruda_core.runtime import (
    ComputeClient,
    DeviceId,
    IndexedDevice,
    IndexedRuntime,
    LazyType,
    TargetProperties,
)
from ruda_core.runtime.layer_norm_args import TensorBuffer

from .compiler import CudaCompiler

__all__ = ["CudaDevice", "CudaRuntime"]

Outputs = tuple[TensorBuffer, TensorBuffer, TensorBuffer]


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
    def has_native_layer_norm(cls) -> bool:
        """True: LayerNorm and its gradients run ruda_cuda's CUDA C++ kernels
        (:mod:`ruda_cuda.ops.layer_norm`, which the plugin also registers with
        ``ruda_core.ops``, replays included)."""
        return True

    @classmethod
    def layer_norm(
        cls,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        bias: TensorBuffer | None,
        epsilon: float,
    ) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer]:
        outputs: Outputs = _native().layer_norm(client, input, weight, bias, epsilon)
        return outputs

    @classmethod
    def layer_norm_backward(
        cls,
        client: ComputeClient,
        input: TensorBuffer,
        weight: TensorBuffer,
        grad: TensorBuffer,
        mean: TensorBuffer,
        rstd: TensorBuffer,
    ) -> tuple[TensorBuffer, TensorBuffer, TensorBuffer]:
        grads: Outputs = _native().layer_norm_backward(client, input, weight, grad, mean, rstd)
        return grads

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


@functools.cache
def _native() -> Any:
    """:mod:`.ops.layer_norm`, imported at the first LayerNorm call (it imports ruda_core.ops'
    kernels) and then kept: an import statement in each call would cost half a microsecond."""
    from .ops import layer_norm

    return layer_norm
