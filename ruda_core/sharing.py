"""Another library's array as a :class:`~ruda_core.tensor.RudaTensor` on the device that holds
it: :func:`from_dlpack` and :func:`from_cuda_array_interface`, re-exported by ``ruda_core``.

The array names its memory as a DLPack ``(device type, index)``; the plugin registry answers
which ruda device that is (:func:`ruda_core.plugins.client_for_dlpack`: the backend declaring
that DLPack device type). This module sits above both the registry and :mod:`ruda_core.tensor`,
so neither the tensor nor :mod:`ruda_core.interop` depends on which backends are installed.
"""

from __future__ import annotations

from .interop.foreign import CUDA_ARRAY_INTERFACE_DEVICE, device_of
from .plugins import client_for_dlpack
from .runtime.client import ComputeClient
from .tensor import RudaTensor

__all__ = ["from_cuda_array_interface", "from_dlpack"]


def from_dlpack(obj: object, client: ComputeClient | None = None) -> RudaTensor:
    """A tensor over ``obj``'s memory, without a copy: :meth:`RudaTensor.from_dlpack` on
    ``client``, by default the client of the device the producer names
    (``__dlpack_device__``).

    :raises InteropError: as :meth:`RudaTensor.from_dlpack`, and when no available backend
        uses memory of the producer's device.
    :raises TypeError: for an object that speaks neither DLPack nor the CUDA array interface.
    """
    chosen = client if client is not None else client_for_dlpack(device_of(obj))
    return RudaTensor.from_dlpack(obj, chosen)


def from_cuda_array_interface(obj: object, client: ComputeClient | None = None) -> RudaTensor:
    """A tensor over the memory ``obj.__cuda_array_interface__`` describes, without a copy:
    :meth:`RudaTensor.from_cuda_array_interface` on ``client``, by default the client of CUDA
    device 0 (the interface does not say which device holds the memory).

    :raises InteropError: as :meth:`RudaTensor.from_cuda_array_interface`, and when no
        available backend uses CUDA memory.
    """
    chosen = client if client is not None else client_for_dlpack(CUDA_ARRAY_INTERFACE_DEVICE)
    return RudaTensor.from_cuda_array_interface(obj, chosen)
