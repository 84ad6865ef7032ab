"""``Handle`` (owns memory), ``Binding`` (a non-owning view) and the pool's ``Slice``.

Dropping the last Python reference to a handle (and to every handle viewing the same slice)
returns its slice to the pool: the release is queued without taking any lock (so it is safe from
any thread and from the garbage collector) and processed by the server at its next memory
operation, stream-ordered: the slice is reused only when no queued work still uses it.
"""

from __future__ import annotations

import weakref
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ..device_names import device_name

if TYPE_CHECKING:
    from ...errors import ServerError

__all__ = ["Binding", "Handle", "Page", "Slice"]


class Page:
    """One allocation from the backend's :class:`Storage`, or memory of another library that
    a handle wraps (``foreign``)."""

    __slots__ = ("exclusive", "foreign", "free_ranges", "live", "nbytes", "resource")

    def __init__(
        self, resource: object, nbytes: int, exclusive: bool, foreign: object = None
    ) -> None:
        self.resource = resource  #: the backend's object for this page
        self.nbytes = nbytes
        self.exclusive = exclusive
        #: for memory another library allocated: what keeps it alive until the page's slice is
        #: dropped and its queued work done; None for the pool's own pages
        self.foreign = foreign
        #: free (offset, nbytes) ranges, sorted by offset (sliced pages only)
        self.free_ranges: list[tuple[int, int]] = [] if exclusive else [(0, nbytes)]
        #: slices on this page that are live or waiting for their fence
        self.live = 0


class Slice:
    """A piece of a page that backs one allocation. Owned by the memory management.

    ``stream`` is the server stream that last used the slice (for cross-stream ordering and
    stream-ordered reuse); ``error`` poisons it after a failed write by a kernel; ``freed`` is
    set the moment its last handle is dropped and never cleared: memory that is reused gets a
    new ``Slice``, so a ``Binding`` of a dropped handle stays refused. ``owner`` reaches, while a
    handle is alive, the object whose collection releases the slice: whatever holds it keeps the
    memory alive (a captured graph does), as a handle would.
    """

    __slots__ = (
        "error",
        "fence",
        "freed",
        "nbytes",
        "offset_bytes",
        "owner",
        "page",
        "requested",
        "stream",
    )

    def __init__(self, page: Page, offset_bytes: int, nbytes: int, requested: int) -> None:
        self.page = page
        self.offset_bytes = offset_bytes
        self.nbytes = nbytes  #: rounded size held in the page
        self.requested = requested  #: size the user asked for
        self.stream: Any = None
        self.error: ServerError | None = None
        self.freed = False
        self.fence: Any = None
        self.owner: weakref.ref[object] | None = None


class _SliceOwner:
    """Releases its slice when the last handle referencing it is collected."""

    __slots__ = ("__weakref__", "dropped", "slice")
    slice: Slice
    dropped: deque[Slice]

    def __del__(self) -> None:
        self.slice.freed = True
        self.dropped.append(self.slice)  # deque.append is atomic: safe from any thread / the GC


@dataclass(slots=True, eq=False)
class Binding:
    """A non-owning view of ``nbytes`` at ``offset_bytes`` of a page, on the server ``server_id``;
    never changed once made (not a frozen dataclass only because one is made for every handle
    and view, and a frozen one takes four times as long to build).

    Only bindings cross into ``ComputeServer.launch``. Valid while the handle it came from is
    alive; using one after that is refused with ``InvalidHandle``. A backend reads ``resource``,
    ``offset_bytes``, ``nbytes`` and ``spare_nbytes``; ``slice`` is the pool's.
    """

    slice: Slice
    offset_bytes: int
    nbytes: int
    server_id: int
    #: the backend's object for the page (what its ``Storage.alloc`` returned); ``offset_bytes``
    #: is relative to it. A field, not a property: argument packers read it on every launch.
    resource: object

    @property
    def spare_nbytes(self) -> int:
        """The bytes after this binding that no handle views and nothing reads, which a
        backend that writes whole words may overwrite: where the binding ends where the
        memory asked for ends, the rest of the pool's rounded slice; else 0 (and always 0 in
        another library's memory)."""
        s, end = self.slice, self.offset_bytes + self.nbytes
        if s.page.foreign is not None or end != s.offset_bytes + s.requested:
            return 0
        return s.offset_bytes + s.nbytes - end

    def __repr__(self) -> str:
        return f"Binding({self.nbytes} B at +{self.offset_bytes} on {device_name(self.server_id)})"


class Handle:
    """Owned device memory of ``nbytes`` bytes. Keep it alive as long as you use the memory.

    ``offset(start, end)`` makes a handle viewing a byte range of the same memory; the memory is
    released when every such handle is gone. Handles are made by the server (``client.empty``
    and the like) and by ``offset``, never directly.
    """

    __slots__ = ("__weakref__", "_binding", "_owner", "nbytes", "offset_bytes", "server_id")
    _binding: Binding
    _owner: _SliceOwner
    nbytes: int
    offset_bytes: int  #: offset of this view within its slice
    server_id: int

    @classmethod
    def _new(cls, slice_: Slice, dropped: deque[Slice], server_id: int) -> Handle:
        owner = _SliceOwner()
        owner.slice = slice_
        owner.dropped = dropped
        slice_.owner = weakref.ref(owner)
        return _view(owner, 0, slice_.requested, server_id)

    def binding(self) -> Binding:
        """The binding of this handle (the same object every call)."""
        return self._binding

    def offset(self, start: int, end: int | None = None) -> Handle:
        """A handle for bytes ``[start, end)`` of this one, sharing its memory.

        :raises ValueError: when the range is not inside this handle.
        """
        stop = self.nbytes if end is None else end
        if not 0 <= start <= stop <= self.nbytes:
            raise ValueError(f"byte range [{start}, {stop}) is outside a {self.nbytes}-byte handle")
        return _view(self._owner, self.offset_bytes + start, stop - start, self.server_id)

    def __repr__(self) -> str:
        return f"Handle({self.nbytes} B on {device_name(self.server_id)})"

    def __copy__(self) -> Handle:
        """The handle itself: a copy would share the memory anyway."""
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> NoReturn:
        """Refused: a copy of the bytes is device work, which a client enqueues.

        :raises TypeError: always, saying how to copy the memory.
        """
        raise TypeError(
            f"{self!r} is not deep-copied: it is memory on a device. Copy its bytes with "
            "client.copy(handle, client.empty(handle.nbytes)), or deep-copy a RudaTensor, "
            "which does that"
        )

    def __reduce__(self) -> NoReturn:
        """Refused: the memory belongs to a device of this process.

        :raises TypeError: always, saying what travels instead.
        """
        raise TypeError(
            f"{self!r} does not pickle: it is memory on a device of this process. Send its "
            "bytes (client.read_one(handle)), or keep it on a Dask worker's device with "
            "ruda_core.dask.keep"
        )

    def __array__(self, dtype: object = None, copy: bool | None = None) -> NoReturn:
        """Refused: a handle is untyped device memory, and NumPy would otherwise wrap the
        handle object itself in a 0-d object array without a word.

        :raises TypeError: always, saying how to read the memory.
        """
        raise TypeError(
            f"NumPy cannot convert {self!r}: a handle is untyped bytes on the device. Read "
            "it with np.frombuffer(client.read_one(handle), dtype), or keep a RudaTensor, "
            "which knows its type and shape, and call tensor.numpy()"
        )


_new = object.__new__


def _view(owner: _SliceOwner, offset_bytes: int, nbytes: int, server_id: int) -> Handle:
    """The handle of ``nbytes`` at ``offset_bytes`` of ``owner``'s slice, with its binding, built
    through their slots: every allocation makes one or more, and ``Binding``'s ``__init__``
    and one of Handle's would cost a third as much again."""
    slice_ = owner.slice
    binding = _new(Binding)  # not Binding(): its dataclass __init__ sets each field in Python
    binding.slice = slice_
    binding.offset_bytes = slice_.offset_bytes + offset_bytes
    binding.nbytes = nbytes
    binding.server_id = server_id
    binding.resource = slice_.page.resource
    handle = Handle()
    handle._owner = owner
    handle.offset_bytes = offset_bytes
    handle.nbytes = nbytes
    handle.server_id = server_id
    handle._binding = binding
    return handle
