"""``RudaTensor``: device storage plus tensor metadata (shape, strides in elements, element).

It knows its device: ``device`` names it as users do (``"cpu"``, ``"opencl:0"``), ``numpy()``
reads it back and ``dtype`` is its NumPy dtype. ``ruda_core.asarray`` makes one from any array.

It speaks the ecosystem's protocols without copying: DLPack both ways (``__dlpack__``,
``__dlpack_device__``, :meth:`RudaTensor.from_dlpack`), the CUDA array interface on CUDA, and
``__array__`` (a read from the device, hence always a copy).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn, SupportsIndex

import numpy as np

from .errors import InteropError, LayoutError
from .interop import cuda_array_interface, dlpack
from .interop.foreign import import_cuda_array_interface, import_dlpack
from .ir import Elem
from .runtime.client import ComputeClient, CopyDescriptor, tensor_shape
from .runtime.layout import Strided
from .runtime.memory import Binding
from .runtime.memory.handle import Handle

__all__ = ["RudaTensor"]


@dataclass(frozen=True, slots=True)
class RudaTensor(Strided):
    """A tensor on a device. Owns its memory through ``handle``; ``size``, ``span`` and
    ``is_contiguous`` follow the rules of :mod:`ruda_core.runtime.layout`."""

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem: Elem
    #: the tensor as a flat ``Array`` argument, ``(handle.binding(), size, elem)``, read once
    #: here for the launches that bind it; None unless it is contiguous, fits its handle, has
    #: no negative extent and fewer than 2**32 elements (such a tensor takes a launch's general
    #: path, and an operation's full checks)
    flat: tuple[Binding, int, Elem] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_rank()
        size = self.size
        fits = (
            size * self.elem.nbytes <= self.handle.nbytes
            and size < 2**32
            and min(self.shape, default=0) >= 0
        )
        flat = (self.handle.binding(), size, self.elem) if fits and self.is_contiguous else None
        object.__setattr__(self, "flat", flat)

    @classmethod
    def from_numpy(cls, client: ComputeClient, array: np.ndarray) -> RudaTensor:
        """A contiguous device copy of ``array`` (its values, in this machine's byte order)."""
        native = array.dtype.newbyteorder("=")
        host = np.ascontiguousarray(array, native).reshape(np.shape(array))  # 0-d stays 0-d
        elem = Elem.from_dtype(host.dtype)
        handle, strides = client.create_tensor_from_slice(host, host.shape, host.itemsize)
        return cls(handle, tuple(host.shape), strides, elem)

    @classmethod
    def empty(
        cls, client: ComputeClient, shape: SupportsIndex | Iterable[SupportsIndex], dtype: Any
    ) -> RudaTensor:
        """An uninitialised contiguous tensor of ``shape`` (integers, NumPy's included, or one
        integer), as ``np.empty`` takes it.

        :raises LayoutError: for an extent that is not a non-negative integer.
        :raises TypeError: for a dtype ruda has no element type of.
        """
        elem = Elem.from_dtype(dtype)
        dims = tensor_shape(shape)
        handle, strides = client.empty_tensor(dims, elem.nbytes)
        return cls(handle, dims, strides, elem)

    def descriptor(self) -> CopyDescriptor:
        return CopyDescriptor(self.handle, self.shape, self.strides, self.elem.nbytes)

    @property
    def device(self) -> str:
        """The device holding the memory, named as ``ruda_core.client`` takes it (``"cpu"``,
        ``"opencl:0"``, ``"cuda:1"``).

        :raises InvalidHandle: for memory of a server no registered client serves.
        """
        return str(self._client().device)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the elements (``ml_dtypes.bfloat16`` for bf16)."""
        return self.elem.numpy

    def numpy(self) -> np.ndarray:
        """A new, writable host array of ``shape`` holding the tensor, read after the work
        queued on it (waits; on the calling thread's stream, like any read).

        :raises ServerError: the stream's pending error or the memory's poison.
        :raises LayoutError: before anything is read, for a layout that addresses memory
            outside the handle (a negative stride, a span past its bytes).
        """
        host = self.to_numpy()
        return host.copy() if not host.flags.writeable else host

    def to_numpy(self, client: ComputeClient | None = None) -> np.ndarray:
        """Read the tensor back (waits) through ``client`` (default: its device's); contiguous
        result of ``shape``, read-only when it views the read's bytes (:meth:`numpy` is always
        writable). A layout the runtime does not read as is (``Runtime.can_read_tensor``: a
        column of a matrix, a broadcast) is read as its handle's bytes and gathered here.

        :raises RudaPanic: when the read fails (the error is its ``__cause__``).
        :raises LayoutError: before anything is read, for a layout outside the handle.
        """
        reader = client if client is not None else self._client()
        if reader.runtime.can_read_tensor(self.shape, self.strides):
            raw = reader.read_tensor([self.descriptor()])[0]
            return np.frombuffer(raw, dtype=self.elem.numpy).reshape(self.shape)
        unfit = self._unfit()
        if unfit is not None:
            raise LayoutError(f"cannot read the tensor: {unfit}")
        items = np.frombuffer(reader.read([self.handle])[0], dtype=self.elem.numpy)
        steps = [stride * self.elem.nbytes for stride in self.strides]
        return np.ascontiguousarray(np.lib.stride_tricks.as_strided(items, self.shape, steps))

    def _unfit(self) -> str | None:
        """Why the layout addresses memory outside its handle (a negative stride or extent,
        a span past the handle's bytes), or None when it fits."""
        if min(self.strides, default=0) < 0 or min(self.shape, default=0) < 0:
            return f"shape {self.shape} with strides {self.strides} has a negative extent or stride"
        nbytes = self.span * self.elem.nbytes
        if nbytes > self.handle.nbytes:
            return (
                f"shape {self.shape} with strides {self.strides} spans {nbytes} bytes; the "
                f"handle has {self.handle.nbytes}"
            )
        return None

    def to_client(self, other: ComputeClient, client: ComputeClient | None = None) -> RudaTensor:
        """This tensor on ``other``'s device, copied by :meth:`ComputeClient.to_client` from
        ``client`` (default: the client of the handle's device, on the calling thread's stream).
        Shape, strides and element are kept: the whole handle is copied as it is, the gaps of a
        strided layout included, so nothing is relaid; ordering and errors as ``to_client``."""
        source = client if client is not None else self._client()
        return RudaTensor(source.to_client(self.handle, other), self.shape, self.strides, self.elem)

    # -- sharing with other libraries ----------------------------------------------------------
    @classmethod
    def from_dlpack(cls, obj: object, client: ComputeClient) -> RudaTensor:
        """A tensor over ``obj``'s memory on ``client``'s device, without a copy
        (:func:`ruda_core.from_dlpack` finds that client for you).

        ``obj`` is any DLPack producer (NumPy, PyTorch, CuPy, JAX …) or, failing that, an
        object with ``__cuda_array_interface__``. The producer's work is ordered before the
        client's current stream. The tensor keeps the producer's memory alive while it (or work
        queued on it) uses it; writes through either side are seen by the other.

        :raises InteropError: for memory of another device, an element type ruda lacks,
            negative strides, a misaligned address or a read-only array; nothing is copied.
        :raises TypeError: for an object that speaks neither protocol.
        """
        return cls(*import_dlpack(obj, client))

    @classmethod
    def from_cuda_array_interface(cls, obj: object, client: ComputeClient) -> RudaTensor:
        """A tensor over the memory ``obj.__cuda_array_interface__`` (version 2 or 3)
        describes, on ``client``'s device, without a copy, keeping ``obj`` alive
        (:func:`ruda_core.from_cuda_array_interface` finds the client for you). The client's
        current stream waits for the interface's ``stream``.

        :raises InteropError: as :meth:`from_dlpack`.
        """
        return cls(*import_cuda_array_interface(obj, client))

    def _client(self) -> ComputeClient:
        return ComputeClient.owning(self.handle)

    def __copy__(self) -> RudaTensor:
        """The tensor itself: it is immutable, and a copy would share its memory."""
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> RudaTensor:
        """A new tensor on the same device holding a copy of this one's memory (the whole
        handle, as :meth:`to_client` copies it), enqueued on the calling thread's stream after
        the work that writes it.

        :raises InvalidHandle: for memory that was dropped, or of no registered client.
        """
        client = self._client()
        handle = client.empty(self.handle.nbytes)
        client.copy(self.handle, handle)
        return RudaTensor(handle, self.shape, self.strides, self.elem)

    def __reduce__(self) -> NoReturn:
        """Refused: the memory belongs to a device of this process.

        :raises TypeError: always, saying what travels instead.
        """
        raise TypeError(
            f"a RudaTensor of shape {self.shape} on {self.handle!r} does not pickle: its memory "
            "belongs to a device of this process. Send its values (tensor.numpy()), or keep it "
            "on a Dask worker's device with ruda_core.dask.keep"
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device_type, device_id)`` of the memory.

        :raises InteropError: on a device whose memory cannot be shared (OpenCL).
        """
        client = self._client()
        device = client.server.dlpack_device()
        if device is None:
            raise InteropError(
                f"{client.device} memory cannot be shared through DLPack (its buffers are not "
                "shared by address); read it with to_numpy(client)"
            )
        return device

    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> object:
        """A DLPack capsule of this tensor's memory, without a copy (array API semantics).

        :param stream: the consumer's stream, which is made to wait for ruda's queued work on
            the memory: on CUDA a ``cudaStream_t``, 1 (legacy default, also for None) or 2
            (per-thread default), -1 for no ordering; on the CPU None, and the call waits on
            the host for that work.
        :param max_version: the highest DLPack version the consumer reads; (1, 0) or later
            gives a ``dltensor_versioned`` capsule, None or older a legacy ``dltensor`` one.
        :param dl_device: the device the consumer wants; only this tensor's own is possible.
        :param copy: False or None; True raises, since ruda exports only its own memory.
        :raises InteropError: (a ``BufferError``) for anything that would need a copy, a
            stream the device does not have, or memory of a device that cannot share it.
        """
        device = self.__dlpack_device__()
        if copy:
            raise InteropError(
                "ruda exports its memory without copying; copy on the consumer's side (for "
                "NumPy: np.array(np.from_dlpack(t)))"
            )
        if dl_device is not None and tuple(dl_device) != device:
            raise InteropError(
                f"the tensor lives on DLPack device {device}, not {tuple(dl_device)}; ruda "
                "does not copy between devices here"
            )
        if device[0] == dlpack.DLDeviceType.CPU:
            if stream not in (None, -1):
                raise InteropError(f"stream {stream!r} for host memory; pass None")
        elif stream == 0:
            raise InteropError("stream 0 is ambiguous in DLPack; pass 1 for the legacy default")
        unfit = self._unfit()
        if unfit is not None:
            raise InteropError(f"cannot export the tensor: {unfit}")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        client = self._client()
        address = client.server.sharing.export(self.handle.binding(), stream)
        return dlpack.export_capsule(
            address, device, self.shape, self.strides, self.elem, self.handle, versioned
        )

    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        """Version 3 of the CUDA array interface, for a tensor on a CUDA device; its
        ``stream`` is the ruda stream that last used the memory, which a consumer waits for.

        :raises AttributeError: on other devices (so ``hasattr`` answers False).
        :raises InteropError: for bf16, which the interface cannot name.
        """
        client = self._client()
        device = client.server.dlpack_device()
        if device is None or device[0] != dlpack.DLDeviceType.CUDA:
            raise AttributeError(f"{client.device} memory has no __cuda_array_interface__")
        unfit = self._unfit()
        if unfit is not None:
            raise InteropError(f"cannot export the tensor: {unfit}")
        binding = self.handle.binding()
        return cuda_array_interface.describe(
            client.server.sharing.export(binding, -1),
            self.shape,
            self.strides,
            self.elem,
            client.server.sharing.last_stream_handle(binding),
        )

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The tensor read from its device (waits): always a new, writable array, so ``copy=False``
        raises ``ValueError`` as NumPy 2 asks. ``np.asarray(t)`` and ``np.array(t)`` use it.

        :raises RudaPanic: when the read fails.
        """
        if copy is False:
            raise ValueError(
                "a RudaTensor lives in device memory: reading it is a copy. Use np.asarray(t) "
                "(or np.from_dlpack(t) on the NumPy device, which shares the memory)"
            )
        host = self.to_numpy()  # read-only: it views the read's bytes
        return host.astype(host.dtype if dtype is None else dtype)  # a writable array
