"""Foreign arrays of the common producers, bound to a launch without importing them.

A NumPy array, a PyTorch tensor or a CuPy array passed where a kernel takes ``Array[T]`` or
``Tensor[T]`` is read through cheap accessors (the buffer protocol or ``__array_interface__``;
``data_ptr()``, ``dtype``, ``shape``, ``stride()``, ``get_device()``; ``data.ptr``, ``dtype``,
``shape``, ``strides``, ``device.id``), not through a DLPack capsule. Its memory becomes a
:meth:`~ruda_core.runtime.sharing.Sharing.borrow` binding, made once per (server, address, type,
layout) and kept in a bounded table: no pool page, handle or capsule per launch. The launch keeps
the array itself alive until its work is done (its ``kept``, under the launch's own lock; see
:class:`~ruda_core.runtime.server.ModeLaunch`), and on CUDA waits for the array's library's
current stream (its *origin*) when it is not ruda's. Arrays of two libraries in one launch are
left to the import, which orders each. The checks are those of
:func:`~ruda_core.interop.foreign.check_usable`, made when an entry is first built; anything
this module does not recognise (other producers, sparse layouts, element types ruda lacks) is
left to the DLPack import of :mod:`.foreign`. A CuPy array lent before is found again by its
identity (:data:`known_cupy`), a torch tensor by five accessors (:data:`TORCH_KEY`).

A launch whose ``Array`` arguments are all exactly ``torch.Tensor`` (no subclass: one may
override its accessors) is checked in one C++ call instead of five accessors per tensor (with
the ``data_ptr()`` it still reads, about half their time). Its launch site keeps, per client, a
bounded table from the tensors' ``data_ptr()`` values to the bindings, lengths and origin that
lending them one by one gave (so every check made when an entry is built still holds), each with
a guard of the tensors' layouts: torch's ``TensorGuards`` (``torch._C._dynamo.guards``, the
check behind ``torch.compile``'s guards), which compares type, dispatch keys, dtype, device
index, ``requires_grad``, sizes and strides with those of the tensors it was made from, so
``t.data = other``, a resize or another view at the same address misses. A guard per entry lets
tensors of several layouts take turns at one launch site (an optimizer's step over parameters of
many shapes) without making guards again, and a few layouts at the same addresses (views of one
buffer) stay remembered behind each other. A tensor passed twice (an in-place launch) is checked
once and the repeat by identity, as the guard refuses a repeated tensor. A miss takes the
per-tensor path, which then remembers the tensors (at their second miss, so layouts that never
come back make no guard each); an entry is one tuple set in one assignment, so a launch on
another thread sees the old entry or the new one, with no lock. The guard is a private torch
API: it is used only where it is found, once, to accept the tensors it was made from and to
refuse tensors of another size, stride or dtype (:func:`_tensor_guards`); elsewhere every launch
takes the per-tensor path.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import weakref
from collections.abc import Callable, Sequence
from math import prod
from typing import Any, cast

import numpy as np

from ..errors import CaptureError, InteropError
from ..interop.dlpack import DLDeviceType, ForeignTensor, dtype_of
from ..interop.foreign import check_usable
from ..ir import Elem
from ..runtime.client import ComputeClient
from ..runtime.compiler import RudaTask
from ..runtime.layout import is_contiguous
from ..runtime.memory import Binding, Handle
from .args import ArrayArg, TensorArg
from .foreign import OWN_TYPES, is_foreign

__all__ = [
    "TORCH_KEY",
    "Borrowed",
    "GuardedTensors",
    "Origin",
    "Staged",
    "borrow_arguments",
    "check_staged",
    "guarded_types",
    "known_cupy",
    "lend",
    "lend_cupy",
    "lend_torch",
    "lenders",
    "lent_tables",
    "settle",
    "shares_host",
]

#: what a reader returns: the table key's layout part (address, type, shape, strides, device,
#: read-only), or None for "not recognised"
Reading = tuple[Any, ...] | None
#: a CUDA array's library's current stream of its device: the raw ``cudaStream_t`` a launch
#: with such arrays is ordered after (one object per library and device, compared by identity)
Origin = Callable[[], int]
#: what :func:`lend` returns: the binding over the array's memory, its length and element type
#: (already checked against each other) and its origin (None: host memory, nothing to order)
Lent = tuple[Binding, int, Elem, Origin | None]
#: entries of the table before it is cleared (arrays come and go; the table must not grow)
_MAX_ENTRIES = 1024
#: clients with a table of lent entries before they are all cleared
_MAX_CLIENTS = 16
_entries: dict[tuple[object, ...], object] = {}
#: per client, the contiguous entries as :func:`lend` returns them, by layout (a torch tensor's by
#: :data:`TORCH_KEY`; bounded as above)
lent_tables: dict[object, dict[tuple[Any, ...], Lent]] = {}
_readers: dict[type, Callable[[Any], Reading] | None] = {}
#: the types a launch may check with a guard (see :class:`GuardedTensors`), with the guard's
#: type: ``torch.Tensor`` once a tensor has been seen and torch's guards work as this module
#: expects; no subclass, as a subclass may override what its accessors return
guarded_types: dict[type, Any] = {}
#: a guarded launch's remembered tensors: a guard over their layouts, the tuple of their
#: bindings and that of their lengths (one per ``Array`` argument, as the launch passes them),
#: the launch's origin, then the entry of another layout at the same addresses (or None)
Guarded = tuple[Any, ...]
#: layouts remembered at the same addresses (entries behind each other; the newest first)
_MAX_LAYOUTS = 4
#: misses a launch site keeps in mind to tell the layouts that come back
_MAX_SEEN = 64
_MISSING: Any = object()
#: ruda's own argument types, which a launch binds without borrowing
_OWN = frozenset(OWN_TYPES)


class Borrowed:
    """Memory of another library as a launch argument's handle: ``nbytes`` and ``binding()``
    as a :class:`~ruda_core.runtime.Handle` has them, owning nothing."""

    __slots__ = ("_binding", "nbytes")

    def __init__(self, client: ComputeClient, address: int, nbytes: int) -> None:
        self.nbytes = nbytes
        self._binding = client.server.sharing.borrow(address, nbytes)

    def binding(self) -> Any:
        return self._binding


class Staged:
    """A NumPy array bound to one launch, with what makes its results visible when the launch
    returns (:func:`settle`): ``handle``, the device copy it was staged into on a device that
    cannot use host memory (None: the kernel uses the array's own memory), with ``strides``,
    the copy's; and ``bindings``, the indices of its parameters among the kernel's bindings
    (``task.writes(binding)``): an array passed for several parameters is staged once, so that
    they share its copy as they share its memory on the NumPy device. It keeps the array alive
    as a launch's ``kept``."""

    __slots__ = ("array", "bindings", "elem", "handle", "strides")

    def __init__(
        self,
        array: np.ndarray,
        handle: Handle | None,
        binding: int,
        elem: Elem | None = None,
        strides: tuple[int, ...] = (),
    ) -> None:
        self.array = array
        self.handle = handle
        self.bindings = [binding]
        self.elem = elem
        self.strides = strides

    def written(self, task: RudaTask) -> bool:
        """Whether ``task`` writes the array through any of its parameters."""
        bindings = self.bindings
        if len(bindings) == 1:  # the common case, on every launch: no generator
            return task.writes(bindings[0])
        return any(task.writes(b) for b in bindings)

    def argument(self, kind: str) -> object:
        """The launch argument of the device copy for a parameter of ``kind``."""
        handle = cast(Handle, self.handle)
        if kind == "array":
            return ArrayArg(handle, self.array.size, self.elem)
        return TensorArg(handle, tuple(self.array.shape), self.strides, self.elem)

    def check_writable(self, client: ComputeClient) -> None:
        """:raises InteropError: for a read-only array (the kernel writes it)."""
        array = self.array
        if not array.flags.writeable:
            raise InteropError(
                f"a read-only {array.dtype} array of shape {array.shape} was passed for an "
                f"argument the kernel writes on {client.device}; it cannot hold the results. "
                "Pass a writable array (np.array(x)) or a device tensor (ruda_core.asarray)"
            )

    def copy_back(self, client: ComputeClient) -> None:
        """Copy the device copy into the array, waiting for the work that writes it.

        :raises InteropError: for a read-only array (the kernel wrote its copy).
        :raises ServerError: the stream's pending error or the copy's poison.
        """
        array, handle, elem = self.array, cast(Handle, self.handle), cast(Elem, self.elem)
        self.check_writable(client)
        raw = client.read_one(handle)
        array[...] = np.frombuffer(raw, elem.numpy, array.size).reshape(array.shape)


def check_staged(client: ComputeClient, task: RudaTask, kept: Sequence[object]) -> None:
    """Refuse, before a launch with ``kept`` is enqueued, a staged read-only NumPy array that
    ``task`` writes, and NumPy arrays over overlapping memory, one of them staged, that
    ``task`` writes: their copies would not see each other's writes, as the arrays do on the
    NumPy device, and the copy copied back last would win.

    :raises InteropError: naming the arrays and the device.
    """
    arrays = [owner for owner in kept if type(owner) is Staged]
    if all(owner.handle is None for owner in arrays):
        return  # the NumPy device's own memory: nothing copied
    written = [owner.written(task) for owner in arrays]
    for k, owner in enumerate(arrays):
        if owner.handle is not None and written[k]:
            owner.check_writable(client)
        for j in range(k + 1, len(arrays)):
            other = arrays[j]
            if (owner.handle is None and other.handle is None) or not (written[k] or written[j]):
                continue
            if np.may_share_memory(owner.array, other.array):  # their byte ranges overlap
                first = task.describe_binding(owner.bindings[0])
                second = task.describe_binding(other.bindings[0]).removesuffix(
                    f" of kernel {task.name}"
                )
                raise InteropError(
                    f"{first} and {second} are NumPy arrays over overlapping memory, which "
                    f"{client.device} copies apart, and the kernel writes one of them: the "
                    "copies would not see each other's writes. Pass one array for both, or "
                    "device tensors (ruda_core.asarray)"
                )


def shares_host(client: ComputeClient) -> bool:
    """Whether ``client``'s kernels use host memory as it is (the NumPy device); elsewhere a
    NumPy argument is staged through a device copy, as a read-only one is everywhere."""
    return client.server.dlpack_device() == _HOST


_HOST = (int(DLDeviceType.CPU), 0)


def settle(client: ComputeClient, task: RudaTask, kept: Sequence[object]) -> None:
    """Make the results of a launch just enqueued with ``kept`` visible in the NumPy arrays
    among them that ``task`` writes: a staged array is copied back, and on a device that uses
    host memory the stream is waited for. Arrays the kernel only reads are left as they are.

    The staged device copies are let go here.

    :raises InteropError: for a read-only array the kernel writes.
    :raises ServerError: the stream's pending error.
    """
    wait = False
    for owner in kept:
        if type(owner) is not Staged:
            continue
        if owner.handle is None:
            wait = wait or owner.written(task)
            continue
        if owner.written(task):
            owner.copy_back(client)
        # the device copy goes back to the pool now (stream-ordered), not when the stream
        # lets the launch's kept arrays go: the next launch's copy takes the same memory
        owner.handle = None
    if wait:
        client.sync().result()


def _stage(client: ComputeClient, arr: np.ndarray, binding: int) -> Staged:
    """A device copy of ``arr`` for the parameter ``binding``, as the :class:`Staged` that
    copies the results back.

    :raises TypeError: for an element type ruda lacks.
    """
    host = np.ascontiguousarray(arr, arr.dtype.newbyteorder("="))  # the device's byte order
    elem = Elem.from_dtype(host.dtype)
    handle, strides = client.create_tensor_from_slice(host, host.shape, host.itemsize)
    return Staged(arr, handle, binding, elem, tuple(strides))


def _read_numpy(arr: np.ndarray) -> tuple[Any, ...]:
    """A writable C-contiguous array's address through the buffer protocol (a quarter of the
    time ``__array_interface__`` takes to build its dict); any other through the interface."""
    try:
        address, read_only = _addressof(_char_view(arr)), False
    except (TypeError, ValueError):  # read-only, not C-contiguous, or empty
        address, read_only = arr.__array_interface__["data"]
    return address, arr.dtype, arr.shape, arr.strides, -1, read_only


#: a one-byte ctypes view at a writable contiguous buffer's start (an ndarray is one)
_char_view: Callable[[Any], ctypes.c_char] = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _read_torch(t: Any) -> Reading:
    """A strided tensor's layout through its C accessors; None for one without storage (a
    sparse tensor's accessors raise; a meta tensor's say address 0 on the host), which the
    DLPack import refuses with torch's message. A tensor that requires grad is borrowed as is:
    a kernel reads and writes its memory as Triton's launch does, outside autograd."""
    try:
        if t.is_meta:
            return None
        return t.data_ptr(), t.dtype, t.shape, t.stride(), t.get_device(), False
    except RuntimeError:
        return None


def _read_cupy(a: Any) -> tuple[Any, ...]:
    """A CuPy array's layout through its attributes (strides in bytes, as NumPy's)."""
    return a.data.ptr, a.dtype, a.shape, a.strides, a.device.id, False


@functools.cache
def _origin(reader: Callable[[Any], Reading], device: int) -> Origin | None:
    """The origin of arrays read by ``reader`` on CUDA device ``device`` (None for -1, the
    host): torch's or CuPy's current stream of that device."""
    if device < 0:
        return None
    if reader is _read_cupy:
        current = sys.modules["cupy"].cuda.get_current_stream
        return lambda: current(device).ptr
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return functools.partial(raw, device)
    return lambda: torch.cuda.current_stream(device).cuda_stream


def _reader(kind: type) -> Callable[[Any], Reading] | None:
    """The reader of arrays of type ``kind``; None for a type this module leaves to DLPack."""
    known = _readers.get(kind, _MISSING)
    if known is not _MISSING:
        return known  # type: ignore[no-any-return]  # a reader or None
    torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
    reader: Callable[[Any], Reading] | None = None
    if kind is np.ndarray:
        reader = _read_numpy
    elif torch is not None and issubclass(kind, torch.Tensor):
        reader = _read_torch
        guards = _tensor_guards(torch)
        if guards is not None:
            guarded_types[torch.Tensor] = guards
    elif cupy is not None and issubclass(kind, cupy.ndarray):
        reader = _read_cupy
    _readers[kind] = reader  # an array of a library exists only once the library is imported
    return reader


def _elem_of(dtype: object) -> Elem:
    """The element of a NumPy or torch dtype.

    :raises TypeError: for a type ruda has no element for.
    """
    if isinstance(dtype, np.dtype):
        return Elem.from_dtype(dtype)
    name = str(dtype).removeprefix("torch.")
    return Elem.BF16 if name == "bfloat16" else Elem.from_dtype(np.dtype(name))


def _entry(client: ComputeClient, layout: tuple[Any, ...], array: bool, arg: object) -> object:
    """The launch argument for a table miss, checked as an import is.

    :raises InteropError: as :func:`~ruda_core.interop.foreign.check_usable`.
    """
    address, dtype, shape, strides, device, read_only = layout
    elem = _elem_of(dtype)
    shape = tuple(shape)
    if isinstance(dtype, np.dtype):  # NumPy strides are in bytes
        if any(s % dtype.itemsize for s in strides):
            raise InteropError(
                f"a {type(arg).__name__} has strides {tuple(strides)} bytes, not whole "
                f"{dtype.itemsize}-byte elements (a field of a packed record, say); ruda "
                "addresses memory by elements. Copy it first (np.ascontiguousarray)"
            )
        strides = tuple(s // dtype.itemsize for s in strides)
    where = (int(DLDeviceType.CUDA), device) if device >= 0 else (int(DLDeviceType.CPU), 0)
    foreign = ForeignTensor(address, where, shape, strides, dtype_of(elem), read_only, None)
    elem, nbytes = check_usable(client, foreign, f"a {type(arg).__name__}")
    handle = Borrowed(client, address, nbytes)
    if array and is_contiguous(shape, strides):
        return ArrayArg(handle, prod(shape), elem)
    return TensorArg(handle, shape, strides, elem)


def _lookup(client: ComputeClient, kind: str, layout: tuple[Any, ...], arg: object) -> object:
    """The table's launch argument for ``arg`` read as ``layout``, made and checked on a miss.

    :raises InteropError: as :func:`~ruda_core.interop.foreign.check_usable`.
    :raises TypeError: for an element type ruda lacks.
    """
    key = (client, kind, layout)
    entry = _entries.get(key)
    if entry is None:
        if len(_entries) >= _MAX_ENTRIES:
            _entries.clear()
        entry = _entries[key] = _entry(client, layout, kind == "array", arg)
    return entry


def lend(client: object, arg: object) -> Lent | None:
    """A NumPy array's, torch tensor's or CuPy array's memory as an ``Array`` argument: its
    binding, length, element type and origin, made and checked once per client and layout.
    None for any other argument, a non-contiguous array, another client type or an element
    type ruda lacks (the caller then takes its general path, which says why). Pass the lent
    arrays as the launch's ``kept``, with their origin's stream as its ``producer``.

    ``lenders.get(type(arg), lend)(client, arg)`` is the same call with one Python frame fewer
    for a type already seen.

    :raises InteropError: for an array ruda cannot use as is; nothing has been enqueued.
    """
    kind = type(arg)
    lender = lenders.get(kind)
    if lender is None:
        reader = _reader(kind)
        if reader is None:
            return None
        keyed = {_read_torch: lend_torch, _read_cupy: lend_cupy}.get(reader)
        lender = keyed if keyed is not None else _lender(cast(Any, reader))
        lenders[kind] = lender
    return lender(client, arg)


def _lender(reader: Callable[[Any], tuple[Any, ...]]) -> Callable[[object, Any], Lent | None]:
    """:func:`lend` of the arrays ``reader`` reads (NumPy's, CuPy's): the table key is the
    full reading."""

    def lend_read(client: object, arr: Any) -> Lent | None:
        layout = reader(arr)
        table = lent_tables.get(client)
        lent = None if table is None else table.get(layout)
        return lent if lent is not None else _lend_new(client, layout, arr)

    return lend_read


#: The table key of a torch tensor ``{t}``, read through five cheap accessors (no
#: ``torch.Size`` or stride tuple is built); they raise RuntimeError for a tensor without
#: storage. A launch path may inline it: a key found in ``lent_tables[client]`` is the tensor's
#: :func:`lend`, and on a miss ``lend_torch(client, t)`` makes it.
TORCH_KEY = "({t}.data_ptr(), {t}.dtype, {t}.numel(), {t}.get_device(), {t}.is_contiguous())"
_torch_key: Callable[[Any], tuple[Any, ...]] = eval(f"lambda t: {TORCH_KEY.format(t='t')}")


def lend_torch(client: object, t: Any) -> Lent | None:
    """:func:`lend` of a torch tensor, keyed by :data:`TORCH_KEY`; a tensor without storage is
    not lent."""
    try:
        key = _torch_key(t)
    except RuntimeError:
        return None
    table = lent_tables.get(client)
    lent = None if table is None else table.get(key)
    return lent if lent is not None else _lend_new(client, key, t)


#: The table key of a CuPy array ``{a}``, read through four cheap attributes: its address names
#: its device too (CUDA gives every device's memory its own addresses in a process), and its
#: shape and strides say whether it is contiguous.
CUPY_KEY = "({a}.data.ptr, {a}.dtype, {a}.shape, {a}.strides)"
_cupy_key: Callable[[Any], tuple[Any, ...]] = eval(f"lambda a: {CUPY_KEY.format(a='a')}")
#: per client, the CuPy arrays lent to it by identity: ``id(array)`` → (a weak reference to the
#: array, its :data:`Lent`). A live CuPy array keeps its address, element type and size (its
#: ``data``, ``dtype`` and ``size`` are read-only, and the ``shape`` setter keeps a contiguous
#: array contiguous), so the same object lends the same; the weak reference tells a new array
#: at a dead one's id. A launch path may inline the lookup; on a miss ``lend_cupy(client, a)``.
known_cupy: dict[object, dict[int, tuple[Callable[[], object], Lent]]] = {}


def lend_cupy(client: object, a: Any) -> Lent | None:
    """:func:`lend` of a CuPy array, found by :data:`CUPY_KEY` and then remembered by identity
    in :data:`known_cupy`."""
    key = _cupy_key(a)
    table = lent_tables.get(client)
    lent = None if table is None else table.get(key)
    if lent is None:
        lent = _lend_new(client, key, a)
        if lent is None:
            return None
    known = known_cupy.get(client)
    if known is None or len(known) >= _MAX_ENTRIES:
        if len(known_cupy) >= _MAX_CLIENTS:
            known_cupy.clear()
        known = known_cupy[client] = {}
    known[id(a)] = (weakref.ref(a), lent)
    return lent


#: per array type seen, its :func:`lend` (only types that :func:`_reader` knows)
lenders: dict[type, Callable[[object, Any], Lent | None]] = {}


def _lend_new(client: object, key: Any, arg: object) -> Lent | None:
    """:func:`lend` for a key not lent yet to ``client``: the table entry of the array's full
    reading, remembered under ``key`` when it is a contiguous array's."""
    if not isinstance(client, ComputeClient):
        return None
    reader = cast(Callable[[Any], Reading], _reader(type(arg)))  # lend() found one
    layout = reader(arg)
    if layout is None or (reader is _read_numpy and (layout[5] or not shares_host(client))):
        return None  # staged by borrow_arguments
    try:
        entry = _lookup(client, "array", layout, arg)
    except TypeError:
        return None
    if type(entry) is not ArrayArg:
        return None
    table = lent_tables.get(client)
    if table is None or len(table) >= _MAX_ENTRIES:
        if len(lent_tables) >= _MAX_CLIENTS:
            lent_tables.clear()
        table = lent_tables[client] = {}
    elem = cast(Elem, entry.elem)  # an entry always names its element type
    origin = _origin(reader, int(layout[4]))
    lent = table[key] = (entry.handle.binding(), entry.length, elem, origin)
    return lent


def borrow_arguments(
    client: ComputeClient, kinds: Sequence[str | None], args: Sequence[object]
) -> tuple[tuple[object, ...], list[object], Origin | None] | None:
    """``args`` with every NumPy array, torch tensor and CuPy array bound to an ``Array`` or
    ``Tensor`` parameter (``kinds[k]`` is ``"array"`` or ``"tensor"``, else None) replaced by a
    launch argument over its memory, the arrays to keep alive (the launch's ``kept``) and their
    origin; None when there is no such array, when another foreign array or arrays of two
    origins are among them (the DLPack import handles all of them), or while the server
    captures (a capture keeps memory through handles). A NumPy array is kept as a
    :class:`Staged`; on a device that cannot use host memory, and for a read-only array, its
    argument is a device copy (made here, enqueued on the client's stream). Pass the kept list
    to :func:`check_staged` before the launch and to :func:`settle` once it is enqueued.

    :raises InteropError: for an array ruda cannot use as is; nothing has been enqueued.
    """
    if len(args) != len(kinds) or not isinstance(client, ComputeClient):
        return None
    capturing = client.server.capturing
    converted: list[object] | None = None
    owners: list[object] = []
    #: the NumPy arrays staged so far, by address: one passed again shares its copy
    staged: dict[int, Staged] = {}
    origin: Origin | None = None
    ordered = False  # whether origin is that of a borrowed array
    binding = -1
    for k, (kind, arg) in enumerate(zip(kinds, args, strict=True)):
        cls = type(arg)
        binding += kind is not None
        if kind is None or cls in _OWN:
            continue
        reader = _reader(cls)
        if reader is None:
            if is_foreign(arg):
                return None
            continue
        layout = reader(arg)
        if layout is None:
            return None
        owner: object = arg
        try:
            if reader is _read_numpy and (
                layout[5] or not layout[1].isnative or not shares_host(client)
            ):
                twin = staged.get(layout[0])
                if twin is not None and _read_numpy(twin.array)[:4] == layout[:4]:
                    twin.bindings.append(binding)
                    owner = None  # kept once
                else:
                    twin = owner = staged[layout[0]] = _stage(
                        client, cast(np.ndarray, arg), binding
                    )
                entry = twin.argument(kind)
            elif capturing:  # a capture keeps memory through handles: the import makes them
                return None
            else:
                entry = _lookup(client, kind, layout, arg)
                this = _origin(reader, int(layout[4]))  # checked to be the client's device
                if ordered and this is not origin:
                    return None
                origin, ordered = this, True
                if reader is _read_numpy:
                    owner = Staged(cast(np.ndarray, arg), None, binding)
        except TypeError as exc:  # an element type ruda lacks
            raise InteropError(f"argument {k} of the launch: {exc}") from exc
        except CaptureError as exc:
            raise CaptureError(
                f"argument {k} of the launch is a NumPy array that {client.device} copies to "
                "and from the device at each launch, which a capture cannot record: make it "
                "a device tensor before the `with client.capture()` block "
                f"(ruda_core.asarray(array, client))"
            ) from exc
        if converted is None:
            converted = list(args)
        converted[k] = entry
        if owner is not None:
            owners.append(owner)
    if converted is None:
        return None
    return tuple(converted), owners, origin


@functools.cache
def _tensor_guards(torch: Any) -> Any:
    """torch's ``TensorGuards``, or None where it is missing or behaves otherwise than
    :meth:`GuardedTensors.remember` needs. Made with ``dynamic_dims_sizes=None`` and
    ``dynamic_dims_strides=None`` it takes the sizes and strides of the tensors it is made from
    (an entry of None in a list would accept any size: never used here)."""
    try:
        guards = torch._C._dynamo.guards.TensorGuards
        a, b = torch.zeros(4), torch.zeros(2, 3)
        guard = guards(a, b, dynamic_dims_sizes=None, dynamic_dims_strides=None)
        others = ((torch.zeros(5), b), (a, torch.zeros(3, 2).t()), (a.double(), b))
        works = guard.check(a, b) is True and not any(guard.check(*o) for o in others)
    except Exception:  # a private API: any failure means "do not use it"
        return None
    return guards if works else None


class GuardedTensors:
    """The exact torch tensors remembered at one launch site: :attr:`tables`, which the
    generated launch reads, and :meth:`remember`, which it calls after a miss (see the module
    docstring)."""

    __slots__ = ("_seen", "tables")

    def __init__(self) -> None:
        #: per client, the remembered tensors by their ``data_ptr()`` values
        self.tables: dict[object, dict[tuple[int, ...], Guarded]] = {}
        #: misses seen once, as (client, addresses, lengths): tensors are remembered at their
        #: second miss among the last :data:`_MAX_SEEN`, so layouts that do not come back (a
        #: buffer's views of ever new lengths) cost no guard each
        self._seen: set[tuple[Any, ...]] = set()

    def remember(
        self, client: object, key: tuple[int, ...], tensors: tuple[Any, ...], lent: tuple[Any, ...]
    ) -> None:
        """Remember what lending ``tensors`` (of :data:`guarded_types`, one per ``Array``
        argument) one by one gave for a launch on ``client``: ``lent``, the tuple of their
        bindings, that of their lengths and the origin, under ``key``, the tensors'
        ``data_ptr()`` values, behind a guard of their layouts. A later launch here with tensors
        at the same addresses that the guard accepts may use ``lent`` as it is. The entries of
        other layouts at these addresses (views of the same memory taking turns) stay behind the
        new one, up to :data:`_MAX_LAYOUTS` in all; one more takes the place of the newest, so
        that the others still hit. An entry is one tuple set in one assignment: a launch on
        another thread sees the old entry or the new one."""
        seen = (client, key, lent[1])
        if seen not in self._seen:
            if len(self._seen) >= _MAX_SEEN:
                self._seen.clear()
            self._seen.add(seen)
            return
        make = guarded_types[type(tensors[0])]
        if len({*map(id, tensors)}) == len(tensors):
            guard = make(*tensors, dynamic_dims_sizes=None, dynamic_dims_strides=None)
            check = guard.check
        else:  # a tensor passed twice: the guard takes each once
            ids = list(map(id, tensors))
            firsts = tuple(map(ids.index, ids))
            distinct = [t for k, t in enumerate(tensors) if firsts[k] == k]
            guard = make(*distinct, dynamic_dims_sizes=None, dynamic_dims_strides=None)
            check = _repeats(firsts)(guard.check)
        table = self.tables.get(client)
        if table is None or len(table) >= _MAX_ENTRIES:
            if len(self.tables) >= _MAX_CLIENTS:
                self.tables.clear()
            table = self.tables[client] = {}
        before = behind = table.get(key)
        layouts = 1
        while behind is not None:
            behind, layouts = behind[-1], layouts + 1
        if before is not None and layouts > _MAX_LAYOUTS:  # the newest makes way for this one
            before = before[-1]
        table[key] = (check, *lent, before)


@functools.cache
def _repeats(firsts: tuple[int, ...]) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """A guard's check wrapped for a launch whose tensor ``k`` is its tensor ``firsts[k]``:
    the repeats are compared by identity and the guard checks each tensor once (it refuses a
    tensor passed twice)."""
    params = ", ".join(f"t{k}" for k in range(len(firsts)))
    same = "".join(f"t{k} is t{j} and " for k, j in enumerate(firsts) if j != k)
    once = ", ".join(f"t{k}" for k, j in enumerate(firsts) if j == k)
    wrap: Callable[[Callable[..., bool]], Callable[..., bool]] = eval(
        f"lambda check: lambda {params}: {same}check({once})"
    )
    return wrap
