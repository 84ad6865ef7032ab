"""Device identity: :class:`DeviceId`, the :class:`Device` protocol backends implement, and
:class:`IndexedDevice`, the device class of a backend that numbers its devices.

A ``DeviceId`` is ``(type_id, index_id)`` as in CubeCL. ``type_id`` 0 means "any type" when
enumerating; backends with several device types (OpenCL: GPU, CPU, accelerator) give each a
non-zero ``type_id`` and list them all under 0. Nothing here opens a device or imports a driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

__all__ = ["Device", "DeviceId", "IndexedDevice"]


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


@dataclass(frozen=True, slots=True)
class IndexedDevice:
    """A device by its index among the devices of its backend, as the driver numbers them.

    A backend subclasses it with ``__slots__ = ()``, sets :attr:`backend` (and
    :attr:`max_index` when it has a fixed number of devices) and overrides :meth:`to_id` when
    its devices have several types. Equal only to a device of the same class and index, so it
    serves as the key of the device's one client.

    :param index: the device's index, 0 for the first.
    :raises ValueError: for an index below 0 or above :attr:`max_index`.
    """

    #: The backend id: ``str(device)`` is ``"<backend>:<index>"``, what ``ruda_core.client()``
    #: accepts.
    backend: ClassVar[str] = ""
    #: The largest index a device of this backend can have; None: no fixed bound.
    max_index: ClassVar[int | None] = None

    index: int = 0

    def __post_init__(self) -> None:
        top = self.max_index
        if self.index < 0 or (top is not None and self.index > top):
            allowed = f"0..{top}" if top is not None else ">= 0"
            raise ValueError(
                f"{type(self).__name__}({self.index}): a {self.backend} device index is {allowed}"
            )

    def to_id(self) -> DeviceId:
        """``DeviceId(0, index)``: type 0, for a backend whose devices are all of one type."""
        return DeviceId(0, self.index)

    def __str__(self) -> str:
        return f"{self.backend}:{self.index}"
