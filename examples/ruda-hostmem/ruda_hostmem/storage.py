"""``MmapStorage``: device pages as anonymous memory maps, viewed as NumPy byte arrays."""

from __future__ import annotations

import mmap
import os

import numpy as np

from ruda_core.runtime import OutOfMemory, Storage

__all__ = ["MmapStorage", "host_memory_nbytes"]


def host_memory_nbytes() -> int:
    """Physical memory of this machine, in bytes: what the pages can hold in all."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # sysconf names differ off Linux
        return 16 << 30


class MmapStorage(Storage):
    """Each page is an anonymous ``mmap`` of ``nbytes``, handed out as a writable ``uint8``
    ndarray over it. ``mapped_nbytes`` counts the bytes currently mapped; a page is unmapped
    when the pool gives it back and the last view of it is gone.

    The device memory, and the largest single page, is the host's physical memory (or
    ``memory_nbytes`` when given), so the pool refuses a larger request with ``BufferTooBig``
    before any page is mapped."""

    alignment_nbytes = 256
    memory_source = "the host's physical memory"  # also the largest single page

    def __init__(self, memory_nbytes: int | None = None) -> None:
        size = host_memory_nbytes() if memory_nbytes is None else memory_nbytes
        self.capacity_nbytes = self.memory_nbytes = size
        self.mapped_nbytes = 0
        self._sizes: dict[int, int] = {}

    def alloc(self, nbytes: int) -> object:
        try:
            pages = mmap.mmap(-1, max(nbytes, 1))
        except (OSError, MemoryError) as exc:
            raise OutOfMemory(f"mmap of {nbytes} bytes failed: {exc}") from exc
        array = np.frombuffer(pages, dtype=np.uint8, count=nbytes)
        self._sizes[id(array)] = nbytes
        self.mapped_nbytes += nbytes
        return array

    def dealloc(self, resource: object) -> None:
        """Forget the page; the map is closed once no array views it any more."""
        self.mapped_nbytes -= self._sizes.pop(id(resource))
