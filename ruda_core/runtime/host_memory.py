"""Freed host memory given back to the operating system.

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
from collections.abc import Callable

__all__ = ["trim"]


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
