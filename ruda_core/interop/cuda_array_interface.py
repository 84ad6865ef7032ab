"""The CUDA array interface, version 3: the dictionary a CUDA tensor exports and the one another
library's array is read from (:func:`describe`, :func:`parse`).

Version 3's ``stream`` field names the stream on which the producer's work on the data is
queued; a consumer orders its own work after it. Only the dictionary is handled here: the
ordering and the memory are :mod:`.foreign`'s and the server's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import InteropError
from ..ir import Elem
from ..runtime.layout import contiguous_strides, is_contiguous
from .dlpack import DLDeviceType, ForeignTensor, dtype_of

__all__ = ["describe", "parse"]


def describe(
    address: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    elem: Elem,
    stream: int | None,
) -> dict[str, object]:
    """``__cuda_array_interface__`` of a tensor at ``address`` (strides in elements), whose
    queued work is on ``stream``.

    :raises InteropError: for bf16, which the interface's type strings cannot name.
    """
    if elem is Elem.BF16:
        raise InteropError(
            "bf16 has no type string in the CUDA array interface; share the tensor through "
            "DLPack (torch.from_dlpack, cupy.from_dlpack)"
        )
    typestr = elem.numpy.str
    byte_strides = None
    if not is_contiguous(shape, strides):
        byte_strides = tuple(s * elem.nbytes for s in strides)
    return {
        "shape": shape,
        "typestr": typestr,
        "data": (address, False),
        "version": 3,
        "strides": byte_strides,
        "descr": [("", typestr)],
        "stream": stream,
    }


def parse(interface: Mapping[str, object], device_index: int, keep: object) -> ForeignTensor:
    """What a ``__cuda_array_interface__`` dictionary describes, on CUDA device
    ``device_index``, kept alive by ``keep`` (the exporting object).

    :raises InteropError: for a version below 2, a mask, byte strides that are not whole
        elements, or a type ruda has no element for.
    """
    version = interface.get("version")
    if not isinstance(version, int) or version < 2:
        raise InteropError(f"CUDA array interface version {version!r}; ruda reads 2 and 3")
    if interface.get("mask") is not None:
        raise InteropError("a masked CUDA array; ruda cannot use a mask")
    try:
        elem = Elem.from_dtype(np.dtype(str(interface["typestr"])))
    except TypeError as exc:
        raise InteropError(f"CUDA array interface: {exc}") from None
    shape = tuple(int(n) for n in interface["shape"])  # type: ignore[attr-defined]
    raw = interface.get("strides")
    if raw is None:
        strides = contiguous_strides(shape)
    else:
        byte_strides = tuple(int(s) for s in raw)  # type: ignore[attr-defined]
        if any(s % elem.nbytes for s in byte_strides):
            raise InteropError(
                f"byte strides {byte_strides} are not multiples of the {elem} element size "
                f"{elem.nbytes}"
            )
        strides = tuple(s // elem.nbytes for s in byte_strides)
    data: tuple[int | None, bool] = interface["data"]  # type: ignore[assignment]
    address, read_only = data
    return ForeignTensor(
        address=int(address or 0),
        device=(DLDeviceType.CUDA, device_index),
        shape=shape,
        strides=strides,
        dtype=dtype_of(elem),
        read_only=bool(read_only),
        owner=keep,
    )
