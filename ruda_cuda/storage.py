"""``CudaStorage``: pool pages from ``cudaMalloc`` (device memory, never managed memory)."""

from __future__ import annotations

from cupy.cuda import runtime

from ruda_core.runtime import Storage

from .driver import guard

__all__ = ["CudaStorage"]


class CudaStorage(Storage):
    """Each page is a raw device pointer (an int) from ``cudaMalloc``."""

    alignment_nbytes = 256

    def __init__(self, total_nbytes: int) -> None:
        self.capacity_nbytes = self.memory_nbytes = total_nbytes

    def alloc(self, nbytes: int) -> object:
        return guard(f"allocating {nbytes} bytes of GPU memory", lambda: runtime.malloc(nbytes))

    def dealloc(self, resource: object) -> None:
        guard("freeing GPU memory", lambda: runtime.free(resource))
