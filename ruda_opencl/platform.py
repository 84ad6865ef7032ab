"""OpenCL discovery: every device of every platform, in a stable order, and their type ids.

Before the first platform query the ICD loader is shown pip-installed runtimes too
(:mod:`ruda_opencl.icd`).

``type_id`` follows ``Runtime.enumerate_devices``: 0 lists every type; 1 GPU, 2 CPU,
3 accelerator, 4 anything else. Imports PyOpenCL.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any

import pyopencl as cl

from .icd import expose_pip_runtimes

__all__ = [
    "TYPE_IDS",
    "all_devices",
    "build_failure_summary",
    "driver_fingerprint",
    "explain_build_log",
    "platform_runtime",
    "type_id_of",
]

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
    expose_pip_runtimes()
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


def platform_runtime(device: Any) -> str:
    """The OpenCL runtime a device comes from: its platform's name and version."""
    platform = device.platform
    return f"{platform.name.strip()} ({' '.join(platform.version.split())})"


def build_failure_summary(device: Any, log: str) -> str:
    """Why a program did not build on ``device`` (a ``pyopencl.Device``), in one line."""
    return explain_build_log(platform_runtime(device), device.name.strip(), log)


def explain_build_log(runtime: str, device_name: str, log: str) -> str:
    """One line from a driver's build log: a known cause with its remedy, else the log's first
    error line. ``runtime`` is :func:`platform_runtime`'s text, ``device_name`` the device's."""
    unknown_cpu = re.search(r"unknown target CPU '([^']*)'", log)
    if unknown_cpu:
        llvm = re.search(r"LLVM [0-9.]+", runtime)
        return (
            f"{runtime} cannot build for this CPU ({device_name}): its compiler"
            f"{f' ({llvm.group()})' if llvm else ''} reports unknown target CPU "
            f"'{unknown_cpu.group(1)}', this CPU is newer than it. Install Intel's CPU OpenCL "
            "runtime, which builds for every x86-64 CPU: pip install 'ruda[opencl-cpu]'"
        )
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    after_header = [b for a, b in itertools.pairwise(lines) if a.startswith("Build on")]
    return (errors or after_header or lines or ["(empty build log)"])[0]
