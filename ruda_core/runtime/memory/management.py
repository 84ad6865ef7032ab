"""Generic memory management over a backend :class:`Storage`.

Small allocations are slices of shared pages (first fit, coalesced on release); large ones get an
exclusive page each, kept for reuse by a request of similar size. Every size is rounded up to the
storage alignment; the difference is accounted as padding.

Reuse is stream-ordered. When a slice's last handle is dropped, the server records a fence on the
stream that last used it; the slice returns to its pool only when that fence has completed. A
request on that same stream may take a pending slice of the same size at once, since the stream
orders the new work after the old.

Reserved memory stays bounded under churn: whenever idle pages (wholly free) exceed
``max(config.idle_nbytes, bytes in use)`` they are given back to the driver. ``cleanup()`` gives
back every idle page. All methods must be called with the server's lock held.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import BufferTooBig, OutOfMemory
from .handle import Page, Slice
from .storage import Storage
from .usage import MemoryUsage

__all__ = ["Fence", "MemoryConfig", "MemoryManagement"]


class Fence(Protocol):
    """A point in a stream's queue. ``done()`` never blocks; ``wait()`` blocks until it is."""

    def done(self) -> bool: ...

    def wait(self) -> None: ...


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Pool sizes. ``slice_max_nbytes`` is the largest request served from shared pages of
    ``page_nbytes``; larger ones get exclusive pages rounded to ``exclusive_granularity``."""

    page_nbytes: int = 8 << 20
    slice_max_nbytes: int = 1 << 20
    exclusive_granularity: int = 2 << 20
    idle_nbytes: int = 64 << 20


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class MemoryManagement:
    """Pools, accounting and release policy of one device's memory."""

    def __init__(
        self, storage: Storage, config: MemoryConfig, fence_of: Callable[[Any], Fence]
    ) -> None:
        self.storage = storage
        self.config = config
        self._fence_of = fence_of
        self._align = storage.alignment_nbytes
        self.dropped: deque[Slice] = deque()  #: filled by handle finalisers, drained here
        self._sliced: list[Page] = []
        self._exclusive_free: list[Page] = []
        self._pending: list[Slice] = []
        self._allocs = 0
        self._in_use = 0
        self._padding = 0
        self._reserved = 0

    # -- allocation ----------------------------------------------------------------------------
    def reserve(self, nbytes: int, stream: object) -> Slice:
        """A slice of at least ``nbytes`` for use on ``stream``.

        :raises BufferTooBig: when ``nbytes`` exceeds the device's capacity.
        :raises OutOfMemory: when the device has no room even after releasing idle pages.
        """
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if nbytes > self.storage.capacity_nbytes:
            raise BufferTooBig(
                f"{nbytes} bytes can never fit this device ({self.storage.capacity_nbytes} bytes "
                "of memory); split the data"
            )
        self.drain()
        rounded = _round_up(max(nbytes, 1), self._align)
        slice_ = self._take_pending(rounded, stream) or self._place(rounded, nbytes)
        slice_.requested = nbytes
        slice_.stream = stream
        self._allocs += 1
        self._in_use += nbytes
        self._padding += slice_.nbytes - nbytes
        return slice_

    def _take_pending(self, rounded: int, stream: object) -> Slice | None:
        """The memory of a pending slice of this size, as a new ``Slice``: the dropped one stays
        freed, so bindings of its handle are refused whatever reuses the memory."""
        for k, s in enumerate(self._pending):
            if s.nbytes == rounded and (s.stream is stream or s.fence is None or s.fence.done()):
                del self._pending[k]
                return Slice(s.page, s.offset_bytes, s.nbytes, 0)
        return None

    def _place(self, rounded: int, requested: int) -> Slice:
        self._reclaim()
        if rounded <= self.config.slice_max_nbytes:
            return self._place_sliced(rounded)
        return self._place_exclusive(rounded)

    def _place_sliced(self, rounded: int) -> Slice:
        for page in self._sliced:
            for k, (off, size) in enumerate(page.free_ranges):
                if size >= rounded:
                    if size == rounded:
                        del page.free_ranges[k]
                    else:
                        page.free_ranges[k] = (off + rounded, size - rounded)
                    return self._use(page, off, rounded)
        page = self._new_page(self.config.page_nbytes, exclusive=False)
        self._sliced.append(page)
        page.free_ranges = [(rounded, page.nbytes - rounded)]
        return self._use(page, 0, rounded)

    def _place_exclusive(self, rounded: int) -> Slice:
        fits = [p for p in self._exclusive_free if rounded <= p.nbytes <= 2 * rounded]
        if fits:
            page = min(fits, key=lambda p: p.nbytes)
            self._exclusive_free.remove(page)
        else:
            page = self._new_page(_round_up(rounded, self.config.exclusive_granularity), True)
        return self._use(page, 0, page.nbytes)

    def _use(self, page: Page, offset: int, nbytes: int) -> Slice:
        page.live += 1
        return Slice(page, offset, nbytes, 0)

    def _new_page(self, nbytes: int, exclusive: bool) -> Page:
        try:
            resource = self.storage.alloc(nbytes)
        except OutOfMemory:
            self._wait_pending()
            self.cleanup()
            try:
                resource = self.storage.alloc(nbytes)
            except OutOfMemory as exc:
                usage = self.usage()
                raise OutOfMemory(
                    f"the device has no room for {nbytes} more bytes ({usage}); drop handles "
                    "or call memory_cleanup() and retry"
                ) from exc
        self._reserved += nbytes
        return Page(resource, nbytes, exclusive)

    # -- release -------------------------------------------------------------------------------
    def drain(self) -> None:
        """Move slices whose handles were dropped to the pending list, fenced on their stream."""
        if not self.dropped:
            return
        fences: dict[int, Fence] = {}
        while self.dropped:
            s = self.dropped.popleft()
            self._allocs -= 1
            self._in_use -= s.requested
            self._padding -= s.nbytes - s.requested
            if s.stream is not None:
                key = id(s.stream)
                if key not in fences:
                    fences[key] = self._fence_of(s.stream)
                s.fence = fences[key]
            self._pending.append(s)
        self._reclaim()
        self._apply_release_policy()

    def _reclaim(self) -> None:
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
            self.storage.dealloc(page.resource)
            self._reserved -= page.nbytes
            idle -= page.nbytes

    def _wait_pending(self) -> None:
        for s in self._pending:
            if s.fence is not None:
                s.fence.wait()
        self._reclaim()

    def cleanup(self) -> None:
        """Give every idle page back to the driver (pages of slices still fenced stay)."""
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
