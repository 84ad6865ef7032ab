"""Device identity: :class:`DeviceId` and the :class:`Device` protocol backends implement.

A ``DeviceId`` is ``(type_id, index_id)`` as in CubeCL. ``type_id`` 0 means "any type" when
enumerating; backends with several device types (OpenCL: GPU, CPU, accelerator) give each a
non-zero ``type_id`` and list them all under 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Device", "DeviceId"]


@dataclass(frozen=True, slots=True, order=True)
class DeviceId:
    """The runtime identity of one device: its type and its index among devices of the backend."""

    type_id: int
    index_id: int

    def __post_init__(self) -> None:
        if self.type_id < 0 or self.index_id < 0:
            raise ValueError(f"{self!r}: type_id and index_id must be >= 0")


@runtime_checkable
class Device(Protocol):
    """What a backend's device class provides: a hashable value naming one device.

    ``str(device)`` is the string ``ruda_core.client()`` accepts (``"cuda:0"``).
    """

    def to_id(self) -> DeviceId: ...

    def __hash__(self) -> int: ...
