"""``CpuStorage``: pages of host memory as NumPy byte arrays."""

from __future__ import annotations

import numpy as np

from ruda_core.runtime import OutOfMemory, Storage
from ruda_core.runtime.host_memory import physical_nbytes

__all__ = ["CpuStorage", "host_memory_nbytes"]


def host_memory_nbytes() -> int:
    """Physical memory of this machine, in bytes (16 GiB where the system does not say)."""
    return physical_nbytes() or 16 << 30


class CpuStorage(Storage):
    """Each page is a ``np.empty(nbytes, uint8)``; the resource is that array."""

    alignment_nbytes = 64
    memory_source = "the host's physical memory"  # also the largest single allocation

    def __init__(self) -> None:
        self.capacity_nbytes = self.memory_nbytes = host_memory_nbytes()

    def alloc(self, nbytes: int) -> object:
        try:
            return np.empty(nbytes, dtype=np.uint8)
        except MemoryError as exc:
            raise OutOfMemory(f"the host has no room for a {nbytes}-byte page") from exc

    def dealloc(self, resource: object) -> None:
        """Nothing to do: the page is freed when the pool drops its array."""
