"""Tensor maps of the tensor copies (``TENSOR_COPY``): the 128 bytes ``cuTensorMapEncodeTiled``
writes for a row-major ``rows x cols`` matrix at a device address, read in boxes in the
128-byte swizzle, out-of-bounds elements filled with zeros. A launch passes one per matrix its
kernel's copies read (``ArgKind.TENSOR_MAP``), made by :func:`tensor_map_maker`; the last few
made for each argument are kept, since a kernel is launched on the same arrays again and again.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from typing import Any

from ruda_core.codegen.abi import KernelArg
from ruda_core.errors import LaunchConfigError
from ruda_core.ir import BULK_ALIGN_NBYTES

__all__ = ["tensor_map_maker"]

#: ``CUtensorMapDataType`` by element size: the copy moves bits, so unsigned integers do.
_DATA_TYPE = {1: 0, 2: 1, 4: 2, 8: 4}
_SWIZZLE_128B = 3
_L2_PROMOTION_128B = 2
#: Tensor maps kept per argument.
_KEPT = 16


@cache
def _encoder() -> Any:
    encode = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    encode.argtypes = [
        *(ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p),
        *(u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int),
    ]
    encode.restype = ctypes.c_int
    return encode


def _encode(address: int, rows: int, cols: int, box: tuple[int, int], nbytes: int) -> bytes:
    """The tensor map of the ``rows x cols`` matrix of ``nbytes`` elements at ``address``."""
    if address % BULK_ALIGN_NBYTES or (cols * nbytes) % BULK_ALIGN_NBYTES or not rows or not cols:
        raise LaunchConfigError(
            f"a tensor copy reads a {rows} x {cols} matrix of {nbytes}-byte elements: it must "
            f"start {BULK_ALIGN_NBYTES}-byte aligned and a row must be a multiple of "
            f"{BULK_ALIGN_NBYTES} bytes ({cols * nbytes} here), and it must not be empty"
        )
    out = (ctypes.c_uint64 * 16)()
    dims = (ctypes.c_uint64 * 2)(cols, rows)
    strides = (ctypes.c_uint64 * 1)(cols * nbytes)
    boxes = (ctypes.c_uint32 * 2)(box[1], box[0])
    ones = (ctypes.c_uint32 * 2)(1, 1)
    status = _encoder()(
        out, _DATA_TYPE[nbytes], 2, address, dims, strides, boxes, ones,
        0, _SWIZZLE_128B, _L2_PROMOTION_128B, 0,
    )  # fmt: skip
    if status:
        raise LaunchConfigError(
            f"cuTensorMapEncodeTiled refused a {rows} x {cols} matrix of {nbytes}-byte elements "
            f"at {address:#x} in boxes of {box[0]} x {box[1]} (CUresult {status})"
        )
    return bytes(out)


def tensor_map_maker(arg: KernelArg) -> Callable[[Any, int, int], bytes]:
    """The function of (binding, rows, cols) that gives ``arg``'s tensor map."""
    _, box = arg.parts
    nbytes = arg.dtype.itemsize
    kept: OrderedDict[tuple[int, int, int], bytes] = OrderedDict()

    def make(binding: Any, rows: int, cols: int) -> bytes:
        key = (binding.resource + binding.offset_bytes, int(rows), int(cols))
        value = kept.get(key)
        if value is None:
            value = kept[key] = _encode(*key, (box[0], box[1]), nbytes)
            if len(kept) > _KEPT:
                kept.popitem(last=False)
        return value

    return make
