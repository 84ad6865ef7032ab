"""``MmapStorage``: device pages as anonymous memory maps, viewed as NumPy byte arrays."""

from __future__ import annotations

import mmap

import numpy as np

from ruda_core.runtime import OutOfMemory, Storage

__all__ = ["MmapStorage"]


class MmapStorage(Storage):
    """Each page is an anonymous ``mmap`` of ``nbytes``, handed out as a writable ``uint8``
    ndarray over it. ``mapped_nbytes`` counts the bytes currently mapped; a page is unmapped
    when the pool gives it back and the last view of it is gone."""

    alignment_nbytes = 256

    def __init__(self, capacity_nbytes: int = 1 << 40) -> None:
        self.capacity_nbytes = capacity_nbytes
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
