"""``WebGpuStorage``: pool pages as ``GPUBuffer`` objects of one device."""

from __future__ import annotations

from typing import Any

import wgpu

from ruda_core.runtime import OutOfMemory, Storage

from .adapters import WgpuErrors

__all__ = ["PAGE_USAGE", "WebGpuStorage"]

#: A page is bound as storage and copied to and from.
PAGE_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


class WebGpuStorage(Storage):
    """Each page is one ``GPUBuffer``, bound whole to every kernel that uses it (an offset in
    the launch record says where a binding starts), so a page may not exceed the device's
    ``max-storage-buffer-binding-size`` (the storage's capacity). WebGPU reports no memory size:
    the pages together may hold ``memory_nbytes``, given by the server."""

    alignment_nbytes = 256
    capacity_source = "max-storage-buffer-binding-size"
    memory_source = "the host's memory (WebGPU reports none)"

    def __init__(self, device: Any, memory_nbytes: int) -> None:
        self._device = device
        limits = device.limits
        self.capacity_nbytes = min(
            int(limits["max-storage-buffer-binding-size"]), int(limits["max-buffer-size"])
        )
        self.memory_nbytes = memory_nbytes
        #: bumped when a page is given back: bind groups over the old pages are dropped then
        self.generation = 0

    def alloc(self, nbytes: int) -> object:
        with WgpuErrors(f"allocating a {nbytes}-byte buffer", OutOfMemory):
            return self._device.create_buffer(size=max(nbytes, 4), usage=PAGE_USAGE)

    def dealloc(self, resource: object) -> None:
        self.generation += 1
        resource.destroy()  # type: ignore[attr-defined]  # a GPUBuffer
