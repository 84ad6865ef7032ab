"""Arrays as the currency between the host, other libraries and ruda's devices:
:func:`asarray`, re-exported by ``ruda_core``.

``asarray(obj, device)`` copies any array onto a device and returns a
:class:`~ruda_core.tensor.RudaTensor`, which kernels take wherever they take an ``Array`` or a
``Tensor``; ``tensor.numpy()`` reads it back. Host arrays (NumPy's, lists, any DLPack producer
of host memory) are copied from the host; a ``RudaTensor`` or another library's device array
(DLPack or the CUDA array interface) is copied from its device, by
:meth:`~ruda_core.runtime.ComputeClient.to_client` between devices.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from .interop.dlpack import DLDeviceType
from .plugins import client as client_of_name
from .runtime.client import ComputeClient
from .sharing import from_cuda_array_interface, from_dlpack
from .tensor import RudaTensor

__all__ = ["asarray"]


def asarray(
    obj: object, device: ComputeClient | str | Hashable, dtype: object = None
) -> RudaTensor:
    """A new contiguous tensor on ``device`` holding a copy of ``obj``.

    :param obj: a NumPy array, anything ``np.asarray`` takes (lists, tuples, numbers), a
        ``RudaTensor`` of any device, or another library's array (PyTorch, CuPy, JAX … through
        DLPack or the CUDA array interface).
    :param device: a client, or a device as ``ruda_core.client`` takes it (``"cpu"``,
        ``"opencl:0"``, ``"cuda:0"``).
    :param dtype: the element type to convert to (NumPy's casting, on the host); None keeps
        ``obj``'s.
    :returns: a tensor whose copy is enqueued on ``device``'s stream (a host copy is made
        before this returns; a device one is ordered after the work that writes ``obj``).
    :raises BackendUnavailable: for a device that is missing or unusable.
    :raises ValueError: for a malformed device string.
    :raises TypeError: for an element type ruda lacks (complex, object, strings …).
    :raises InteropError: for another library's array ruda cannot read.
    """
    client = device if isinstance(device, ComputeClient) else client_of_name(device)
    wanted = None if dtype is None else np.dtype(dtype)  # type: ignore[call-overload]
    source = _device_tensor(obj)
    if source is None:
        return RudaTensor.from_numpy(client, np.asarray(_host_array(obj), dtype=wanted))
    if wanted is not None and wanted != source.dtype:
        return RudaTensor.from_numpy(client, source.numpy().astype(wanted))
    if not source.is_contiguous:
        return RudaTensor.from_numpy(client, source.numpy())
    return _copied(source, client)


def _device_tensor(obj: object) -> RudaTensor | None:
    """``obj`` as a tensor of its own device's memory (no copy), or None for host data."""
    if isinstance(obj, RudaTensor):
        return obj
    kind = type(obj)
    if isinstance(obj, np.ndarray) or not (
        hasattr(kind, "__dlpack__") or hasattr(kind, "__cuda_array_interface__")
    ):
        return None
    if hasattr(kind, "__dlpack_device__"):
        device_type = int(obj.__dlpack_device__()[0])  # type: ignore[attr-defined]
        if device_type in (DLDeviceType.CPU, DLDeviceType.CUDA_HOST):
            return None
    if hasattr(kind, "__dlpack__"):
        return from_dlpack(obj)
    return from_cuda_array_interface(obj)


def _host_array(obj: object) -> object:
    """``obj`` as NumPy reads it: a DLPack producer of host memory through ``np.from_dlpack``
    (no copy), anything else as it is."""
    if not isinstance(obj, np.ndarray) and hasattr(type(obj), "__dlpack__"):
        return np.from_dlpack(obj)  # type: ignore[arg-type]
    return obj


def _copied(source: RudaTensor, client: ComputeClient) -> RudaTensor:
    """A copy of contiguous ``source`` on ``client``'s device, ordered after its writers."""
    owner = ComputeClient.owning(source.handle)
    if owner.server is client.server:
        handle = client.empty(source.handle.nbytes)
        client.copy(source.handle, handle)
    else:
        handle = owner.to_client(source.handle, client)
    return RudaTensor(handle, source.shape, source.strides, source.elem)
