"""``OpenCLStorage``: pool pages as ``cl.Buffer`` objects of one context."""

from __future__ import annotations

from typing import Any

import pyopencl as cl

from ruda_core.runtime import OutOfMemory, Storage

from .driver import translate

__all__ = ["OpenCLStorage"]


class OpenCLStorage(Storage):
    """Each page is one read-write ``cl.Buffer``. A page may not exceed the device's
    ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` (the storage's capacity), nor all pages together its
    ``CL_DEVICE_GLOBAL_MEM_SIZE``."""

    alignment_nbytes = 256
    capacity_source = "CL_DEVICE_MAX_MEM_ALLOC_SIZE"
    memory_source = "CL_DEVICE_GLOBAL_MEM_SIZE"

    def __init__(self, context: Any, device: Any) -> None:
        self._context = context
        self.capacity_nbytes = int(device.max_mem_alloc_size)
        self.memory_nbytes = int(device.global_mem_size)

    def alloc(self, nbytes: int) -> object:
        try:
            return cl.Buffer(self._context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.Error as exc:
            raise translate(f"allocating a {nbytes}-byte buffer", exc, OutOfMemory) from exc

    def dealloc(self, resource: object) -> None:
        resource.release()  # type: ignore[attr-defined]  # a cl.Buffer
