"""Generic memory management over a backend :class:`Storage`.

Small allocations are slices of shared pages (first fit, coalesced on release); large ones get an
exclusive page each, kept for reuse by a request of similar size. Every size is rounded up to the
storage alignment; the difference is accounted as padding.

Reuse is stream-ordered. When a slice's last handle is dropped, the server records a fence on the
stream that last used it; the slice returns to its pool only when that fence has completed. A
request on that same stream may take a pending slice that fits at once, since the stream orders
the new work after the old; the slice dropped last is taken so before it is even fenced. Reused
memory always gets a new :class:`Slice`: the dropped one stays freed, so references to it are
refused.

Reserved memory stays bounded. A new page is taken only while the pages held stay within twice
the bytes in use plus one page; past that, idle pages are given back first, then the host waits
for the oldest in-flight release (back-pressure on a stream that fell behind). After a drain,
idle pages beyond ``max(config.idle_nbytes, bytes in use)`` are given back; ``cleanup()`` gives
back every idle page. The pages held never pass ``limit_nbytes``. All methods must be called with
the server's lock held.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...errors import BufferTooBig, OutOfMemory
from ..nbytes import nbytes_from_env
from .handle import Page, Slice
from .storage import Storage
from .usage import MemoryUsage

__all__ = ["LIMIT_VARIABLE", "Fence", "MemoryConfig", "MemoryManagement"]

#: The setting of the most bytes a server may hold (a size, read when a server is made).
LIMIT_VARIABLE = "RUDA_MEMORY_LIMIT"


class Fence(Protocol):
    """A point in a stream's queue. ``done()`` never blocks; ``wait()`` blocks until it is
    (waking for signals). A :class:`~ruda_core.runtime.RudaFuture` is one."""

    def done(self) -> bool: ...

    def wait(self) -> None: ...


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Pool sizes. ``slice_max_nbytes`` is the largest request served from shared pages of
    ``page_nbytes``; larger ones get exclusive pages rounded to ``exclusive_granularity``.
    ``limit_nbytes`` caps the pages held in all (None: ``RUDA_MEMORY_LIMIT``, else the
    storage's ``memory_nbytes``)."""

    page_nbytes: int = 8 << 20
    slice_max_nbytes: int = 1 << 20
    exclusive_granularity: int = 2 << 20
    idle_nbytes: int = 64 << 20
    limit_nbytes: int | None = None


def _named(source: str) -> str:
    """`` (source)`` for a property's name in a message, or nothing."""
    return f" ({source})" if source else ""


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class MemoryManagement:
    """Pools, accounting and release policy of one device's memory.

    ``limit_nbytes`` is the most the pool holds in pages; a request that would pass it, after
    waiting for in-flight releases and giving back idle pages, is ``OutOfMemory``. It starts as
    ``config.limit_nbytes``, else ``RUDA_MEMORY_LIMIT`` (read once, here), else the storage's
    ``memory_nbytes``, never above the latter; it may be changed at any time and applies from
    the next request. ``device_name`` names the device in messages as users name it
    (``opencl:0``).

    :raises ValueError: when ``RUDA_MEMORY_LIMIT`` is malformed.
    """

    def __init__(
        self,
        storage: Storage,
        config: MemoryConfig,
        fence_of: Callable[[Any], Fence],
        device_name: Callable[[], str],
    ) -> None:
        self.storage = storage
        self.config = config
        self._fence_of = fence_of
        self._device_name = device_name
        self._align = storage.alignment_nbytes
        limit = config.limit_nbytes
        if limit is None:
            limit = nbytes_from_env(LIMIT_VARIABLE)
        device = storage.memory_nbytes
        self.limit_nbytes = device if limit is None else min(limit, device)  #: see above
        self.dropped: deque[Slice] = deque()  #: filled by handle finalisers, drained here
        self._sliced: list[Page] = []
        #: every page held, so that each is reachable from here until it is given back: the
        #: cyclic collector finalises together all that a garbage cycle alone reaches, and a
        #: page reached only through a dropped handle's slice would be among it, its driver
        #: object released (wgpu's buffers release themselves when finalised) while the
        #: handle's finaliser returns the page to the pool
        self._pages: set[Page] = set()
        self._exclusive_free: list[Page] = []
        self._pending: list[Slice] = []
        #: dropped slices of foreign memory, in drop order, until their fence is done
        self._foreign_pending: deque[Slice] = deque()
        self._allocs = 0
        self._in_use = 0
        self._padding = 0
        self._reserved = 0

    # -- allocation ----------------------------------------------------------------------------
    def reserve(self, nbytes: int, stream: object) -> Slice:
        """A slice of at least ``nbytes`` for use on ``stream``. May wait for queued device work
        (back-pressure, see the module docstring), never for work queued after this call.

        :raises BufferTooBig: when ``nbytes`` exceeds the device's capacity or the limit.
        :raises OutOfMemory: when the pages held would pass the limit, or the driver has no
            room, even after waiting for in-flight releases and giving back idle pages.
        """
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if nbytes > self.storage.capacity_nbytes or nbytes > self.limit_nbytes:
            raise BufferTooBig(self._too_big(nbytes))
        align = self._align
        # _round_up(max(nbytes, 1), align) without its two calls: every allocation runs this
        rounded = ((nbytes or 1) + align - 1) // align * align
        dropped = self.dropped
        if dropped:  # the memory of the slice dropped last, when it fits: no fence, no search
            s = dropped.pop()  # atomic: a finaliser may append meanwhile
            if self._fits_pending(s, rounded, stream):
                slice_ = Slice(s.page, s.offset_bytes, s.nbytes, nbytes)
                slice_.stream = stream
                change = nbytes - s.requested  # the counts of usage(): s's out, slice_'s in
                self._in_use += change
                self._padding -= change
                if dropped:
                    self.drain()
                return slice_
            dropped.append(s)
        self.drain()
        slice_ = self._take_pending(rounded, stream) or self._place(rounded, nbytes)
        slice_.requested = nbytes
        slice_.stream = stream
        self._allocs += 1
        self._in_use += nbytes
        self._padding += slice_.nbytes - nbytes
        return slice_

    def adopt(
        self, resource: object, offset_bytes: int, nbytes: int, owner: object, stream: object
    ) -> Slice:
        """A slice of ``nbytes`` at ``offset_bytes`` of memory another library allocated
        (``resource`` is what the backend's pages are), first used on ``stream``. ``owner``
        keeps the memory alive: it is released once the slice is dropped and the work queued on
        it is done; the pool never reuses the memory and does not count it in :meth:`usage`."""
        page = Page(resource, offset_bytes + nbytes, True, owner)
        page.live = 1
        slice_ = Slice(page, offset_bytes, nbytes, nbytes)
        slice_.stream = stream
        return slice_

    def _is_exclusive(self, rounded: int) -> bool:
        return rounded > self.config.slice_max_nbytes

    def _too_big(self, nbytes: int) -> str:
        """Why a request of ``nbytes`` can never be served, and what to do instead."""
        storage, device = self.storage, self._device_name()
        capacity, memory = storage.capacity_nbytes, storage.memory_nbytes
        if nbytes > capacity:
            return (
                f"a buffer of {nbytes} bytes can never fit {device}: its largest single "
                f"allocation is {capacity} bytes{_named(storage.capacity_source)} and its device "
                f"memory {memory} bytes{_named(storage.memory_source)}; split the data into "
                f"buffers of at most {capacity} bytes"
            )
        return (
            f"a buffer of {nbytes} bytes can never fit {device}'s memory limit of "
            f"{self.limit_nbytes} bytes (its device memory is {memory} bytes); split the data "
            f"or raise {LIMIT_VARIABLE}"
        )

    def _fits_pending(self, s: Slice, rounded: int, stream: object) -> bool:
        """Whether the dropped slice ``s`` may serve a request of ``rounded`` bytes on
        ``stream`` at once: last used on that stream, the pool's own memory, and of the size
        the request would get (exactly it on a shared page; up to twice it on an exclusive
        page)."""
        if s.stream is not stream or s.page.foreign is not None:
            return False
        if s.nbytes == rounded:  # fits either kind of page: asked first, as the likeliest
            return True
        return self._is_exclusive(rounded) and rounded < s.nbytes <= 2 * rounded

    def _release_counts(self, s: Slice) -> None:
        """Take the dropped slice ``s`` out of the allocation counts of :meth:`usage`."""
        self._allocs -= 1
        self._in_use -= s.requested
        self._padding -= s.nbytes - s.requested

    def _take_pending(self, rounded: int, stream: object) -> Slice | None:
        """The memory of a slice dropped on ``stream`` that fits, as a new ``Slice``: the
        dropped one stays freed, so bindings of its handle are refused whatever reuses it."""
        for k, s in enumerate(self._pending):
            if self._fits_pending(s, rounded, stream):
                del self._pending[k]
                return Slice(s.page, s.offset_bytes, s.nbytes, 0)
        return None

    def _place(self, rounded: int, requested: int) -> Slice:
        """Free space that fits, else a new page within the budget and the limit."""
        exclusive = self._is_exclusive(rounded)
        if exclusive:
            nbytes = _round_up(rounded, self.config.exclusive_granularity)
        else:
            nbytes = self.config.page_nbytes
        self._reclaim()
        while True:
            slice_ = self._fit_exclusive(rounded) if exclusive else self._fit_sliced(rounded)
            if slice_ is not None:
                return slice_
            if self._make_room(nbytes, requested):
                continue
            failure: OutOfMemory | None = None
            size = self._within_limit(nbytes, rounded)
            if size is not None:
                try:
                    return self._use_new_page(size, exclusive, rounded)
                except OutOfMemory as exc:
                    failure = exc
            if not self._free_everything():
                usage = self.usage()
                raise OutOfMemory(
                    f"{self._device_name()} has no room for a page of {nbytes} more bytes "
                    f"({usage}; limit {self.limit_nbytes} bytes); drop handles, call "
                    f"memory_cleanup or raise {LIMIT_VARIABLE}"
                ) from failure

    def _within_limit(self, nbytes: int, rounded: int) -> int | None:
        """The size of a new page: ``nbytes``, or the room the limit leaves where it is smaller
        but still holds the ``rounded`` bytes asked (a limit below a page); None: no room."""
        room = (self.limit_nbytes - self._reserved) // self._align * self._align
        if nbytes <= room:
            return nbytes
        return room if room >= rounded else None

    def _fit_sliced(self, rounded: int) -> Slice | None:
        for page in self._sliced:
            for k, (off, size) in enumerate(page.free_ranges):
                if size >= rounded:
                    if size == rounded:
                        del page.free_ranges[k]
                    else:
                        page.free_ranges[k] = (off + rounded, size - rounded)
                    return self._use(page, off, rounded)
        return None

    def _fit_exclusive(self, rounded: int) -> Slice | None:
        fits = [p for p in self._exclusive_free if rounded <= p.nbytes <= 2 * rounded]
        if not fits:
            return None
        page = min(fits, key=lambda p: p.nbytes)
        self._exclusive_free.remove(page)
        return self._use(page, 0, page.nbytes)

    def _make_room(self, nbytes: int, requested: int) -> bool:
        """Before taking a page of ``nbytes``: while the pages held would pass twice the bytes
        in use plus one page, give back idle pages, then wait for the oldest in-flight release.
        True when it waited (free space may fit the request now)."""
        budget = 2 * (self._in_use + requested) + self.config.page_nbytes
        over = self._reserved + nbytes - budget
        if over <= 0:
            return False
        idle = sum(p.nbytes for p in self._idle_pages())
        if idle:
            self._release_idle(max(idle - over, 0))
        if self._reserved + nbytes <= budget or not self._pending:
            return False
        self._pending[0].fence.wait()
        self._reclaim()
        return True

    def _free_everything(self) -> bool:
        """Wait for every in-flight release, else give back every idle page. False when there
        was nothing to do."""
        if self._pending:
            self._wait_pending()
            return True
        if self._idle_pages():
            self._release_idle(0)
            return True
        return False

    def _use(self, page: Page, offset: int, nbytes: int) -> Slice:
        page.live += 1
        return Slice(page, offset, nbytes, 0)

    def _use_new_page(self, nbytes: int, exclusive: bool, rounded: int) -> Slice:
        """A slice of ``rounded`` bytes at the start of a new page of ``nbytes``.

        :raises OutOfMemory: when the driver has no room.
        """
        page = Page(self.storage.alloc(nbytes), nbytes, exclusive)
        self._pages.add(page)
        self._reserved += nbytes
        if exclusive:
            return self._use(page, 0, nbytes)
        self._sliced.append(page)
        page.free_ranges = [(rounded, nbytes - rounded)]
        return self._use(page, 0, rounded)

    # -- release -------------------------------------------------------------------------------
    def drain(self) -> None:
        """Move slices whose handles were dropped to the pending list, fenced on their stream."""
        if not self.dropped:
            return
        fences: dict[int, Fence] = {}
        while self.dropped:
            s = self.dropped.popleft()
            if s.stream is not None:
                key = id(s.stream)
                if key not in fences:
                    fences[key] = self._fence_of(s.stream)
                s.fence = fences[key]
            if s.page.foreign is not None:
                self._foreign_pending.append(s)
                continue
            self._release_counts(s)
            self._pending.append(s)
        self._reclaim()
        self._apply_release_policy()

    def _reclaim(self) -> None:
        foreign = self._foreign_pending
        while foreign and (foreign[0].fence is None or foreign[0].fence.done()):
            self._return(foreign.popleft())  # in drop order: a fence not done stops the scan
        keep: list[Slice] = []
        for s in self._pending:
            if s.fence is None or s.fence.done():
                self._return(s)
            else:
                keep.append(s)
        self._pending = keep

    def _return(self, s: Slice) -> None:
        page = s.page
        page.live -= 1
        if page.foreign is not None:  # the other library's memory: let it go
            page.foreign = page.resource = None
            return
        if page.exclusive:
            self._exclusive_free.append(page)
        else:
            _insert_range(page.free_ranges, s.offset_bytes, s.nbytes)

    def _idle_pages(self) -> list[Page]:
        """Pages with no live or pending slice (a sliced page is then wholly free)."""
        return self._exclusive_free + [p for p in self._sliced if p.live == 0]

    def _apply_release_policy(self) -> None:
        limit = max(self.config.idle_nbytes, self._in_use)
        if sum(p.nbytes for p in self._idle_pages()) > limit:
            self._release_idle(limit)

    def _release_idle(self, keep_nbytes: int) -> None:
        pages = sorted(self._idle_pages(), key=lambda p: -p.nbytes)
        idle = sum(p.nbytes for p in pages)
        for page in pages:
            if idle <= keep_nbytes:
                break
            if page.exclusive:
                self._exclusive_free.remove(page)
            else:
                self._sliced.remove(page)
            self._pages.remove(page)
            self.storage.dealloc(page.resource)
            self._reserved -= page.nbytes
            idle -= page.nbytes

    def _wait_pending(self) -> None:
        for s in [*self._pending, *self._foreign_pending]:
            if s.fence is not None:
                s.fence.wait()
        self._reclaim()

    def cleanup(self) -> None:
        """Give back to the driver every page whose slices are all dropped and whose queued work
        has finished. Never waits: memory of dropped handles whose work is still queued stays
        reserved, returns to the pool when that work is done, and a later call gives it back."""
        self.drain()
        self._reclaim()
        self._release_idle(0)

    def usage(self) -> MemoryUsage:
        """The current accounting (drains dropped handles first)."""
        self.drain()
        return MemoryUsage(self._allocs, self._in_use, self._padding, self._reserved)


def _insert_range(ranges: list[tuple[int, int]], offset: int, nbytes: int) -> None:
    """Insert a free range, merging it with adjacent ones."""
    k = bisect.bisect_left(ranges, (offset, 0))
    end = offset + nbytes
    if k < len(ranges) and ranges[k][0] == end:
        end += ranges[k][1]
        del ranges[k]
    if k > 0 and ranges[k - 1][0] + ranges[k - 1][1] == offset:
        offset = ranges[k - 1][0]
        del ranges[k - 1]
        k -= 1
    ranges.insert(k, (offset, end - offset))
