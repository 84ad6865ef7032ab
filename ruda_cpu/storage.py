"""``CpuStorage``: pages of host memory as NumPy byte arrays.

A new page starts as ``0xFF`` bytes (:data:`UNWRITTEN_BYTE`), not as the zeros a fresh page of
the system's gives: a kernel that reads device memory nothing wrote (an accumulator taken from
``client.empty``) reads NaN in every float type and -1 (or the largest value) in integers, and
shows the mistake, where zeros would make it right by chance. Memory reused from a dropped
handle holds what it held, as on a GPU.

A page made while the sanitizer is on (:func:`~ruda_cpu.sanitize.is_sanitizing`) is *followed*:
beside it the storage keeps which of its bytes something wrote (:meth:`CpuStorage.written`),
which the driver marks on every write, copy and launch and clears where the pool hands memory
to a new handle, and a sanitized launch checks each read of device memory against. Other pages
(made before the sanitizer was on) count as written.
"""

from __future__ import annotations

import numpy as np

from ruda_core.runtime import OutOfMemory, Storage
from ruda_core.runtime.host_memory import physical_nbytes

from .sanitize import is_sanitizing

__all__ = ["UNWRITTEN_BYTE", "CpuStorage", "host_memory_nbytes"]

#: Every byte of a new page.
UNWRITTEN_BYTE = 0xFF


def host_memory_nbytes() -> int:
    """Physical memory of this machine, in bytes (16 GiB where the system does not say)."""
    return physical_nbytes() or 16 << 30


class CpuStorage(Storage):
    """Each page is a NumPy ``uint8`` array of :data:`UNWRITTEN_BYTE`; the resource is that
    array."""

    alignment_nbytes = 64
    memory_source = "the host's physical memory"  # also the largest single allocation

    def __init__(self) -> None:
        self.capacity_nbytes = self.memory_nbytes = host_memory_nbytes()
        #: per followed page (by ``id``), which of its bytes something wrote
        self._written: dict[int, np.ndarray] = {}

    def alloc(self, nbytes: int) -> object:
        try:
            page = np.full(nbytes, UNWRITTEN_BYTE, dtype=np.uint8)
            if is_sanitizing():
                self._written[id(page)] = np.zeros(nbytes, dtype=bool)
        except MemoryError as exc:
            raise OutOfMemory(f"the host has no room for a {nbytes}-byte page") from exc
        return page

    def dealloc(self, resource: object) -> None:
        """Forget which bytes of the page were written; the page itself is freed when the pool
        drops its array."""
        self._written.pop(id(resource), None)

    def follows(self) -> bool:
        """Whether any page is followed (the sanitizer was on when one was made)."""
        return bool(self._written)

    def written(self, resource: object, offset_bytes: int, nbytes: int) -> np.ndarray | None:
        """Which of ``nbytes`` at ``offset_bytes`` of page ``resource`` something wrote: a
        writable ``bool`` view of the page's map, or None where the page is not followed (every
        byte counts as written)."""
        page = self._written.get(id(resource))
        return None if page is None else page[offset_bytes : offset_bytes + nbytes]
