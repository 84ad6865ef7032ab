"""``CudaStorage``: pool pages from ``cudaMalloc`` (device memory, never managed memory)."""

from __future__ import annotations

from cupy.cuda import runtime

from ruda_core.runtime import Storage

from .driver import activate, guard

__all__ = ["CudaStorage"]


class CudaStorage(Storage):
    """Each page is a raw device pointer (an int) from ``cudaMalloc`` on GPU ``index``, which
    is made current first: the calling thread's current device may be another GPU."""

    alignment_nbytes = 256
    memory_source = "cudaDeviceProp.totalGlobalMem"  # also the largest single allocation

    def __init__(self, total_nbytes: int, index: int) -> None:
        self.capacity_nbytes = self.memory_nbytes = total_nbytes
        self._index = index

    def alloc(self, nbytes: int) -> object:
        activate(self._index)
        return guard(f"allocating {nbytes} bytes of GPU memory", lambda: runtime.malloc(nbytes))

    def dealloc(self, resource: object) -> None:
        activate(self._index)
        guard("freeing GPU memory", lambda: runtime.free(resource))
