"""``MemoryUsage``: the pool's accounting, not host RSS and not the device's physical usage."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MemoryUsage"]


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """Allocator accounting of one device.

    :param number_allocs: live allocations (handles whose memory is not yet returned).
    :param bytes_in_use: bytes the live allocations asked for.
    :param bytes_padding: bytes lost to alignment and size classes in live allocations.
    :param bytes_reserved: bytes of pages held from the driver (used or not).
    """

    number_allocs: int
    bytes_in_use: int
    bytes_padding: int
    bytes_reserved: int

    def __str__(self) -> str:
        mib = 1 << 20
        return (
            f"{self.number_allocs} allocs, {self.bytes_in_use / mib:.2f} MiB in use, "
            f"{self.bytes_padding / mib:.2f} MiB padding, "
            f"{self.bytes_reserved / mib:.2f} MiB reserved"
        )
