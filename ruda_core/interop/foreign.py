"""Another library's array as ruda memory, without a copy: the checks and the stream ordering
shared by :func:`ruda_core.from_dlpack`, :func:`ruda_core.from_cuda_array_interface` and foreign
kernel arguments.

Every import is given the client whose device holds the memory; which device a foreign array
names (:func:`device_of`) is a DLPack ``(device type, index)``, and the client of that device
is the plugin registry's answer (:func:`ruda_core.plugins.client_for_dlpack`), never this
package's.

A foreign array becomes a :class:`~ruda_core.runtime.Handle` whose memory the pool never
reuses; the handle keeps the producer's memory alive (through the DLPack deleter, or a
reference to the exporting object) until it is dropped and the work queued on it is done.
Anything ruda cannot use as is raises :class:`~ruda_core.errors.InteropError` before any
handle exists: nothing is ever copied instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from ..errors import InteropError
from ..ir import Elem
from ..runtime.client import ComputeClient
from ..runtime.layout import span
from ..runtime.memory.handle import Handle
from . import cuda_array_interface
from .dlpack import VERSION, DLDeviceType, ForeignTensor, describe_device, take_capsule

__all__ = [
    "CUDA_ARRAY_INTERFACE_DEVICE",
    "DLPackExporter",
    "Imported",
    "check_usable",
    "device_of",
    "import_cuda_array_interface",
    "import_dlpack",
]


class DLPackExporter(Protocol):
    """What :func:`import_dlpack` accepts: the array API's producer side."""

    def __dlpack__(self, **kwargs: Any) -> object: ...

    def __dlpack_device__(self) -> tuple[int, int]: ...


class Imported(NamedTuple):
    """A foreign array as ruda memory: its handle and layout (strides in elements)."""

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem


#: The device a ``__cuda_array_interface__`` is taken to live on: the interface does not say
CUDA_ARRAY_INTERFACE_DEVICE = (int(DLDeviceType.CUDA), 0)


def device_of(obj: object) -> tuple[int, int]:
    """The DLPack ``(device type, index)`` of the memory ``obj`` exports: what
    ``__dlpack_device__`` says, or :data:`CUDA_ARRAY_INTERFACE_DEVICE` for an object that
    speaks only the CUDA array interface.

    :raises TypeError: for an object that speaks neither protocol.
    """
    exporter = type(obj)
    if hasattr(exporter, "__dlpack__"):
        producer: DLPackExporter = obj  # type: ignore[assignment]  # checked above
        kind, index = producer.__dlpack_device__()
        return int(kind), int(index)
    if hasattr(exporter, "__cuda_array_interface__"):
        return CUDA_ARRAY_INTERFACE_DEVICE
    raise TypeError(
        f"{exporter.__name__} supports neither DLPack (__dlpack__) nor the CUDA array interface"
    )


def _check_device(client: ComputeClient, device: tuple[int, int], what: str) -> None:
    mine = client.server.dlpack_device()
    if mine is None:
        raise InteropError(
            f"{client.device} cannot use memory of other libraries (its buffers are not shared "
            f'by address); copy it there with ruda_core.asarray(array, "{client.device}")'
        )
    if (int(device[0]), int(device[1])) != mine:
        raise InteropError(
            f"{what} lives on {describe_device(device)}; {client.device} uses "
            f"{describe_device(mine)}. Pass the client of the array's device, or move the "
            "array there first"
        )


def _adopt(
    client: ComputeClient, foreign: ForeignTensor, what: str, producer: int | None
) -> Imported:
    elem, nbytes = check_usable(client, foreign, what)
    stream = client.execution_stream().value
    handle = client.server.sharing.adopt(foreign.address, nbytes, foreign.owner, stream, producer)
    return Imported(handle, foreign.shape, foreign.strides, elem)


def check_usable(client: ComputeClient, foreign: ForeignTensor, what: str) -> tuple[Elem, int]:
    """The element type of ``foreign`` and the bytes it spans, once it is known that
    ``client`` can use its memory as is.

    :raises InteropError: for another device, an element type ruda lacks, negative strides, a
        misaligned address or a read-only array.
    """
    _check_device(client, foreign.device, what)
    elem = foreign.elem
    if foreign.read_only:
        raise InteropError(
            f"{what} is read-only; ruda kernels may write any buffer they are given. Pass a "
            "writable array (for NumPy: a copy, np.array(x))"
        )
    if any(s < 0 for s in foreign.strides):
        raise InteropError(
            f"{what} has negative strides {foreign.strides}; ruda addresses memory with "
            "non-negative strides only. Make it contiguous first (np.ascontiguousarray, "
            ".contiguous())"
        )
    if foreign.address % elem.nbytes:
        raise InteropError(
            f"{what} starts at address {foreign.address:#x}, not aligned to its {elem} "
            f"elements ({elem.nbytes} B); pass an aligned array"
        )
    return elem, span(foreign.shape, foreign.strides) * elem.nbytes


def import_dlpack(obj: object, client: ComputeClient) -> Imported:
    """``obj``'s memory as a handle of ``client``, without a copy. The producer is asked for a
    capsule ordered before the client's current stream (on CUDA: its stream waits for the
    producer's stream with an event) and, where it speaks DLPack 1.x, for a versioned one.
    An object without
    ``__dlpack__`` but with ``__cuda_array_interface__`` is read through that.

    :raises InteropError: for another device, an element type ruda lacks, negative strides, a
        misaligned address, a read-only array, or a producer that refuses to export.
    :raises TypeError: for an object that speaks neither protocol.
    """
    exporter = type(obj)
    if not hasattr(exporter, "__dlpack__"):
        if hasattr(exporter, "__cuda_array_interface__"):
            return import_cuda_array_interface(obj, client)
        raise TypeError(
            f"{exporter.__name__} supports neither DLPack (__dlpack__) nor the CUDA array interface"
        )
    what = f"a {exporter.__name__}"
    producer: DLPackExporter = obj  # type: ignore[assignment]  # checked above
    if hasattr(exporter, "__dlpack_device__"):
        _check_device(client, producer.__dlpack_device__(), what)
    consumer = client.server.sharing.stream_handle(client.execution_stream().value)
    try:
        try:
            capsule = producer.__dlpack__(stream=consumer, max_version=VERSION, copy=False)
        except TypeError:  # a producer of DLPack 0.x: no max_version, no copy
            capsule = producer.__dlpack__(stream=consumer)
    except InteropError:
        raise
    except BufferError as exc:
        raise InteropError(f"{what} refused to export through DLPack: {exc}") from exc
    return _adopt(client, take_capsule(capsule), what, None)


def import_cuda_array_interface(obj: object, client: ComputeClient) -> Imported:
    """``obj``'s ``__cuda_array_interface__`` memory as a handle of ``client``, without a copy,
    keeping ``obj`` alive. The client's current stream waits for the interface's ``stream``.

    :raises InteropError: as :func:`import_dlpack`, and for a masked array or version below 2.
    """
    interface: Mapping[str, object] = obj.__cuda_array_interface__  # type: ignore[attr-defined]
    device = client.server.dlpack_device()
    index = device[1] if device is not None and device[0] == DLDeviceType.CUDA else 0
    foreign = cuda_array_interface.parse(interface, index, obj)
    stream = interface.get("stream")
    producer = int(stream) if isinstance(stream, int) else None  # version 2: no stream
    if producer == 0:
        raise InteropError("CUDA array interface stream 0 is ambiguous; the producer must name it")
    return _adopt(client, foreign, f"a {type(obj).__name__}", producer)
