"""The C library's standard output, where CUDA and OpenCL runtimes write what kernels print.

Device runtimes format ``printf`` records on the host and write them with the C library, which
buffers them when standard output is not a terminal (a pipe, a file, pytest's ``capfd``).
:func:`flush_c_stdout` writes such buffers out; servers of C targets call it when a sync or
read completes, so a kernel's output is visible by the time the host sees the launch finish.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["flush_c_stdout"]

#: ``fflush`` of the process's C library (POSIX; elsewhere there is none to call).
_FFLUSH = ctypes.CDLL(None).fflush if os.name == "posix" else None


def flush_c_stdout() -> None:
    """``fflush(NULL)``: write out every buffered C output stream of the process."""
    if _FFLUSH is not None:
        _FFLUSH(None)
