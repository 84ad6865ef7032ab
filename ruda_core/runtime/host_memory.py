"""The host's memory: its size, and freed memory given back to the operating system.

:func:`physical_nbytes` is the machine's physical memory, which devices without a size of their
own (the NumPy device, WebGPU) are sized from.

A driver that builds and frees many kernels (Intel's CPU OpenCL compiler, say) leaves the C
allocator holding their freed pages: glibc keeps freed memory below its top in each arena for
reuse, so a process that compiled and dropped thousands of kernels keeps their peak in RSS.
:func:`trim` asks glibc to return what it holds free (``malloc_trim``); elsewhere it does
nothing. Imports no driver.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable

__all__ = ["physical_nbytes", "trim"]


def physical_nbytes() -> int | None:
    """Physical memory of this machine, in bytes; None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # sysconf names differ off Linux
        return None


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None
    return function


def trim() -> None:
    """Give the memory the C allocator holds free back to the operating system (a few
    milliseconds; call it after freeing much, not per allocation)."""
    function = _malloc_trim()
    if function is not None:
        function(0)
