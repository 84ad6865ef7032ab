"""DLPack capsules, both ways, with ``ctypes``: ruda's structs of DLPack 1.x and the legacy 0.x
ABI, the export of a tensor's memory as a capsule and the import of another library's capsule.

Export (:func:`export_capsule`) builds a ``DLManagedTensorVersioned`` (capsule name
``dltensor_versioned``) or a legacy ``DLManagedTensor`` (``dltensor``) over memory the caller
keeps alive through ``owner``: the struct, its shape and strides and ``owner`` stay referenced
by this module until the consumer calls the struct's deleter, or, when no consumer ever took
the capsule (its name was never changed to ``used_dltensor…``), until the capsule is collected.

Import (:func:`take_capsule`) renames the capsule to ``used_dltensor…`` (so the producer's
capsule destructor leaves it alone), reads the struct and returns a :class:`ForeignTensor`
whose ``owner`` calls the producer's deleter exactly once, when it is collected. Nothing here
touches a device or checks that ruda can use the memory: see :mod:`.foreign`.
"""

from __future__ import annotations

import ctypes
import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InteropError
from ..ir import Elem
from ..runtime.layout import contiguous_strides

__all__ = [
    "DLDeviceType",
    "ForeignTensor",
    "describe_device",
    "dtype_of",
    "export_capsule",
    "take_capsule",
]

#: The DLPack version ruda writes (and the highest major version it reads).
VERSION = (1, 0)
#: ``DLManagedTensorVersioned.flags``: the consumer must not write the memory.
FLAG_READ_ONLY = 1 << 0
#: ``DLManagedTensorVersioned.flags``: the producer copied the data for this export.
FLAG_IS_COPIED = 1 << 1


class DLDeviceType(enum.IntEnum):
    """``DLDeviceType`` values ruda meets."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    OPENCL = 4
    CUDA_MANAGED = 13


def describe_device(device: tuple[int, int]) -> str:
    """A DLPack ``(device type, index)`` for messages: ``"DLPack device CUDA:1"``."""
    kind, index = device
    try:
        name = DLDeviceType(kind).name
    except ValueError:
        name = f"type {kind}"
    return f"DLPack device {name}:{index}"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


#: ``void (*deleter)(DLManagedTensor*)``, either struct: the argument is taken as an address.
_Deleter_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter_t),
    ]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", _Deleter_t),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


# DLDataTypeCode
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6
_CODES: dict[Elem, tuple[int, int]] = {
    Elem.BOOL: (_BOOL, 8),
    Elem.I8: (_INT, 8),
    Elem.I16: (_INT, 16),
    Elem.I32: (_INT, 32),
    Elem.I64: (_INT, 64),
    Elem.U8: (_UINT, 8),
    Elem.U16: (_UINT, 16),
    Elem.U32: (_UINT, 32),
    Elem.U64: (_UINT, 64),
    Elem.F16: (_FLOAT, 16),
    Elem.BF16: (_BFLOAT, 16),
    Elem.F32: (_FLOAT, 32),
    Elem.F64: (_FLOAT, 64),
}
_ELEMS = {code: elem for elem, code in _CODES.items()}
_CODE_NAMES = {
    _INT: "int",
    _UINT: "uint",
    _FLOAT: "float",
    3: "opaque",
    _BFLOAT: "bfloat",
    5: "complex",
}

# Capsule names live as long as the module: a capsule keeps a pointer to its name.
_VERSIONED = b"dltensor_versioned"
_USED_VERSIONED = b"used_dltensor_versioned"
_LEGACY = b"dltensor"
_USED_LEGACY = b"used_dltensor"

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The destructor sees a capsule whose reference count is already zero: it must take no
# reference to it, so these two take the object's address.
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api)
)
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api)
)


def dtype_of(elem: Elem) -> tuple[int, int, int]:
    """The DLPack ``(code, bits, lanes)`` of an element type."""
    code, bits = _CODES[elem]
    return code, bits, 1


# -- export ----------------------------------------------------------------------------------

#: Exported structs not yet deleted, by address: each with its shape/strides arrays and owner.
_exports: dict[int, tuple[object, ...]] = {}
_exports_lock = threading.Lock()


#: Raised and caught at once where C code calls a deleter or a capsule destructor, to clear
#: the exception that may be pending there: a consumer that refuses a capsule (NumPy refusing
#: bf16) drops it with its exception set, and an array freed while an exception propagates
#: (``np.add(np.from_dlpack(t), "x")``) calls the deleter so. No call returns a value while one
#: is pending (not even of a helper, where a frame-evaluation hook is set), so each callback
#: raises and catches this first, in bytecode alone, and then releases the export. The pending
#: exception is lost (a callback cannot set one again: ctypes reports what a callback raises,
#: and clears it), and the caller reports a ``SystemError`` instead.
_CLEAR = RuntimeError("an exception pending in a DLPack callback, cleared")


def _release(address: int) -> None:
    with _exports_lock:
        _exports.pop(address, None)


def _delete_export(address: int) -> None:
    try:
        raise _CLEAR  # see _CLEAR
    except RuntimeError:
        _CLEAR.__traceback__ = _CLEAR.__context__ = None  # keeps no frame or exception alive
    _release(address)


_delete = _Deleter_t(_delete_export)


def _destroy_capsule(capsule: int) -> None:
    """Delete a struct no consumer took (its capsule still has the unused name)."""
    try:
        raise _CLEAR  # see _CLEAR
    except RuntimeError:
        _CLEAR.__traceback__ = _CLEAR.__context__ = None
    for name in (_VERSIONED, _LEGACY):
        if _is_valid(capsule, name):
            _release(_get_pointer(capsule, name))


_capsule_destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_destroy_capsule)


def export_capsule(
    address: int,
    device: tuple[int, int],
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    elem: Elem,
    owner: object,
    versioned: bool,
) -> object:
    """A DLPack capsule of the memory at ``address`` (strides in elements), which stays valid
    while ``owner`` is referenced; ``owner`` is released when the consumer deletes the tensor,
    or when the capsule is collected unconsumed. Thread-safe."""
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides)
    managed: _DLManagedTensor | _DLManagedTensorVersioned
    if versioned:
        managed = _DLManagedTensorVersioned()
        managed.version = _DLPackVersion(*VERSION)
        managed.deleter = _delete
        managed.flags = 0
        name = _VERSIONED
    else:
        managed = _DLManagedTensor()
        managed.deleter = _delete
        name = _LEGACY
    t = managed.dl_tensor
    t.data = address or None
    t.device = _DLDevice(*device)
    t.ndim = ndim
    t.dtype = _DLDataType(*dtype_of(elem))
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    key = ctypes.addressof(managed)
    with _exports_lock:
        _exports[key] = (managed, shape_arr, strides_arr, owner)
    destructor = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value
    return _api.PyCapsule_New(key, name, destructor)


# -- import ----------------------------------------------------------------------------------


class _Deleter:
    """Calls the producer's deleter of the managed tensor at ``address`` once, when collected."""

    __slots__ = ("_address", "_call")

    def __init__(self, call: Callable[[int], None], address: int) -> None:
        self._call: Callable[[int], None] | None = call
        self._address = address

    def __del__(self) -> None:
        call, self._call = self._call, None
        if call:
            call(self._address)


@dataclass(frozen=True, slots=True)
class ForeignTensor:
    """What a producer's capsule describes. ``address`` includes the byte offset; ``strides``
    are in elements (contiguous row-major ones when the producer gave none); ``owner`` keeps the
    memory alive and releases it, through the producer's deleter, when collected."""

    address: int
    device: tuple[int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: tuple[int, int, int]
    read_only: bool
    owner: object

    @property
    def elem(self) -> Elem:
        """:raises InteropError: for a type ruda has no element for."""
        code, bits, lanes = self.dtype
        elem = _ELEMS.get((code, bits)) if lanes == 1 else None
        if elem is None:
            kind = _CODE_NAMES.get(code, f"code {code}, bits ")
            vector = f" x{lanes}" if lanes != 1 else ""
            raise InteropError(
                f"DLPack type {kind}{bits}{vector} has no ruda element type; use one of "
                f"{', '.join(str(e) for e in _CODES)}"
            )
        return elem


def take_capsule(capsule: object) -> ForeignTensor:
    """Take ownership of a producer's DLPack capsule (versioned or legacy).

    :raises InteropError: for a capsule that is not an unused DLPack tensor, or of a major
        version ruda cannot read.
    """
    if _api.PyCapsule_IsValid(capsule, _VERSIONED):
        address = _api.PyCapsule_GetPointer(capsule, _VERSIONED)
        versioned = _DLManagedTensorVersioned.from_address(address)
        _api.PyCapsule_SetName(capsule, _USED_VERSIONED)
        owner = _Deleter(versioned.deleter, address)
        if versioned.version.major != VERSION[0]:
            major = versioned.version.major
            raise InteropError(f"a DLPack {major}.x tensor; ruda reads DLPack 1.x and 0.x")
        tensor, flags = versioned.dl_tensor, versioned.flags
    elif _api.PyCapsule_IsValid(capsule, _LEGACY):
        address = _api.PyCapsule_GetPointer(capsule, _LEGACY)
        legacy = _DLManagedTensor.from_address(address)
        _api.PyCapsule_SetName(capsule, _USED_LEGACY)
        owner = _Deleter(legacy.deleter, address)
        tensor, flags = legacy.dl_tensor, 0
    else:
        raise InteropError(
            f"{capsule!r} is not an unused DLPack capsule (named 'dltensor_versioned' or "
            "'dltensor'); a capsule can be consumed only once"
        )
    ndim = tensor.ndim
    shape = tuple(tensor.shape[:ndim])
    strides = tuple(tensor.strides[:ndim]) if tensor.strides else contiguous_strides(shape)
    dtype = tensor.dtype
    device = tensor.device
    return ForeignTensor(
        address=(tensor.data or 0) + tensor.byte_offset,
        device=(device.device_type, device.device_id),
        shape=shape,
        strides=strides,
        dtype=(dtype.code, dtype.bits, dtype.lanes),
        read_only=bool(flags & FLAG_READ_ONLY),
        owner=owner,
    )
