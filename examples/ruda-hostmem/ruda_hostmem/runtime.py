"""``HostMemRuntime`` and ``HostMemDevice``.

The server class is made on first use from the reference backend's server (found through
``ruda_core.backends()``, never imported by name): the reference device's compiler and command
queues over :class:`~ruda_hostmem.storage.MmapStorage` pages.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np

import ruda_core
from ruda_core.runtime import (
    BackendUnavailable,
    ComputeClient,
    ComputeServer,
    DeviceId,
    DeviceProperties,
    IndexedDevice,
    IndexedRuntime,
    Runtime,
    TargetProperties,
)

from .storage import MmapStorage

__all__ = ["HostMemDevice", "HostMemRuntime"]

REFERENCE_BACKEND = "cpu"
_lock = threading.Lock()
_server_class: type[ComputeServer] | None = None


class HostMemDevice(IndexedDevice):
    """The host-memory device; there is one, index 0."""

    __slots__ = ()
    backend = "hostmem"
    max_index = 0


def _reference_runtime() -> type[Runtime]:
    for status in ruda_core.backends():
        if status.name == REFERENCE_BACKEND and status.runtime is not None:
            return status.runtime
    raise BackendUnavailable("hostmem needs ruda's reference backend 'cpu', which is not loaded")


def server_class() -> type[ComputeServer]:
    """The hostmem server: the reference server class over mmap pages (made once)."""
    global _server_class
    with _lock:
        if _server_class is None:
            reference = _reference_runtime()
            _server_class = _make_server_class(reference.server)
            HostMemRuntime.server = _server_class
            HostMemRuntime.compiler = reference.compiler
        return _server_class


def _make_server_class(base: type[ComputeServer]) -> type[ComputeServer]:
    class HostMemServer(base):  # type: ignore[valid-type,misc]  # a class chosen at run time
        """The reference server's driver (compiler and queues) over :class:`MmapStorage`
        pages, with a driver identity of its own."""

        def __init__(self, device_id: DeviceId) -> None:
            storage = MmapStorage()
            fingerprint = f"ruda-hostmem 0.1.0 over numpy {np.__version__}"
            super().__init__(device_id, storage=storage, fingerprint=fingerprint)
            self._hostmem_properties: DeviceProperties = dataclasses.replace(
                super().properties(),
                name="hostmem (mmap pages)",
                vendor="ruda-hostmem",
                memory_nbytes=storage.memory_nbytes,
            )

        def properties(self) -> DeviceProperties:
            return self._hostmem_properties

    return HostMemServer


class HostMemRuntime(IndexedRuntime):
    """Kernels of the reference compiler over mmap-backed host memory. ``server`` and
    ``compiler`` are set when the first client is made (they come from the reference backend).
    """

    device = HostMemDevice

    @classmethod
    def new_server(cls, device: Any) -> ComputeServer:
        make = server_class()
        return make(device.to_id())  # type: ignore[call-arg]  # the reference's takes a DeviceId

    @classmethod
    def name(cls, client: ComputeClient) -> str:
        return "hostmem"

    @classmethod
    def max_ruda_count(cls) -> tuple[int, int, int]:
        return _reference_runtime().max_ruda_count()

    @classmethod
    def target_properties(cls) -> TargetProperties:
        return _reference_runtime().target_properties()

    @classmethod
    def enumerate_devices(cls, type_id: int, info: Any) -> list[DeviceId]:
        return [DeviceId(0, 0)] if type_id == 0 else []
