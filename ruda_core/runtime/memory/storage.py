"""The backend side of memory: a :class:`Storage` allocates and frees raw pages.

A backend implements only this; pooling, slicing, alignment, stream-ordered reuse and release
policy are generic (``management.py``). Every method is called with the server's lock held.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["Storage"]


class Storage(ABC):
    """Raw device memory of one device.

    ``alignment_nbytes`` is the alignment every page and every slice offset respects (a power of
    two). ``capacity_nbytes`` is the largest page the device can hold; a larger request is a
    ``BufferTooBig`` before any driver call. ``memory_nbytes`` is the device's whole memory: the
    pool never holds more pages than that in all (nor than its ``limit_nbytes``).
    ``capacity_source`` and ``memory_source`` name the driver's properties the two are read from
    (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``), for ``BufferTooBig`` messages; empty when there is none.
    """

    alignment_nbytes: int = 256
    capacity_nbytes: int = 1 << 62
    memory_nbytes: int = 1 << 62
    capacity_source: str = ""
    memory_source: str = ""

    @abstractmethod
    def alloc(self, nbytes: int) -> object:
        """Allocate one page of ``nbytes`` (a multiple of the alignment) and return the backend's
        resource for it (a pointer, a ``cl.Buffer``, an ndarray …).

        :raises OutOfMemory: when the driver has no room now.
        """

    @abstractmethod
    def dealloc(self, resource: object) -> None:
        """Give a page back to the driver. Called only when no queued work uses it."""
