"""``CpuStorage``: pages of host memory as NumPy byte arrays.

A new page starts as ``0xFF`` bytes (:data:`UNWRITTEN_BYTE`), not as the zeros a fresh page of
the system's gives: a kernel that reads device memory nothing wrote (an accumulator taken from
``client.empty``) reads NaN in every float type and -1 (or the largest value) in integers, and
shows the mistake, where zeros would make it right by chance. Memory reused from a dropped
handle holds what it held, as on a GPU.
"""

from __future__ import annotations

import numpy as np

from ruda_core.runtime import OutOfMemory, Storage
from ruda_core.runtime.host_memory import physical_nbytes

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

    def alloc(self, nbytes: int) -> object:
        try:
            return np.full(nbytes, UNWRITTEN_BYTE, dtype=np.uint8)
        except MemoryError as exc:
            raise OutOfMemory(f"the host has no room for a {nbytes}-byte page") from exc

    def dealloc(self, resource: object) -> None:
        """Nothing to do: the page is freed when the pool drops its array."""
