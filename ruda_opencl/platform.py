"""OpenCL discovery: every device of every platform, in a stable order, and their type ids.

``type_id`` follows ``Runtime.enumerate_devices``: 0 lists every type; 1 GPU, 2 CPU,
3 accelerator, 4 anything else. Imports PyOpenCL.
"""

from __future__ import annotations

import functools
from typing import Any

import pyopencl as cl

__all__ = ["TYPE_IDS", "all_devices", "driver_fingerprint", "type_id_of"]

#: OpenCL device type bit -> ruda type id
TYPE_IDS = {
    cl.device_type.GPU: 1,
    cl.device_type.CPU: 2,
    cl.device_type.ACCELERATOR: 3,
}


def type_id_of(device: Any) -> int:
    """The ruda type id of a ``pyopencl.Device``."""
    for bit, type_id in TYPE_IDS.items():
        if device.type & bit:
            return type_id
    return 4


@functools.cache
def all_devices() -> tuple[Any, ...]:
    """Every OpenCL device of every platform, platform by platform. A platform whose query
    fails (a broken ICD) contributes no device."""
    try:
        platforms = cl.get_platforms()
    except cl.LogicError:  # no ICD installed: the loader reports no platform
        return ()
    found: list[Any] = []
    for platform in platforms:
        try:
            found.extend(platform.get_devices())
        except cl.Error:  # a platform without devices raises DEVICE_NOT_FOUND
            continue
    return tuple(found)


def driver_fingerprint(device: Any) -> str:
    """Platform, device and driver versions: what can change a compiled program or a tuning."""
    platform = device.platform
    return (
        f"{platform.name} {platform.version} | {device.name} | {device.version} | "
        f"driver {device.driver_version} | pyopencl {cl.VERSION_TEXT}"
    )
