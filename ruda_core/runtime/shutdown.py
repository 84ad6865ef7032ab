"""Interpreter exit: ruda waits a bounded time for queued device work, then lets the process end.

At exit (``atexit``), every server made in this process is given until
``RUDA_EXIT_TIMEOUT_S`` seconds (default :data:`DEFAULT_EXIT_TIMEOUT_S`, counted once for all
of them) to finish the work queued on its streams. Work still unfinished then, such as a kernel
that never ends and the copies queued behind it, is abandoned with an
:class:`~ruda_core.errors.ExitTimeoutWarning` naming each stream and its kernel. Where the
driver's own teardown would wait for that work forever (a driver whose class sets
``Driver.teardown_waits``: Intel's OpenCL runtime finishes every queue when it is unloaded,
CuPy frees its memory pools and ``cudaFree`` waits for the device), the process then ends at
once with :data:`ABANDONED_EXIT_STATUS`, after writing out Python's and the C library's
buffered output; the atexit handlers registered before ruda's first server do not run.
Otherwise the exit goes on as usual. Work that finished with an error that no sync or read
raised (a launch that failed to build, a Validate-mode report) is named in a
:class:`~ruda_core.errors.RudaWarning`, so that a program that never synchronises still hears of
it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import warnings
import weakref
from typing import TYPE_CHECKING

from ..errors import ExitTimeoutWarning, RudaWarning
from .console import flush_c_stdout

if TYPE_CHECKING:
    from .server import ComputeServer

__all__ = [
    "ABANDONED_EXIT_STATUS",
    "DEFAULT_EXIT_TIMEOUT_S",
    "exit_timeout_s",
    "keep_forever",
    "watch",
]

#: Seconds the exit waits for queued work when ``RUDA_EXIT_TIMEOUT_S`` is not set.
DEFAULT_EXIT_TIMEOUT_S = 5.0
#: The status of a process ended at once because the driver would wait for abandoned work.
ABANDONED_EXIT_STATUS = 1

_servers: weakref.WeakSet[ComputeServer] = weakref.WeakSet()
#: what the exit abandoned and must never free: freeing a driver's event of unfinished work may
#: wait for that work (PyOpenCL's events of host copies do)
_abandoned: list[object] = []
_registered = threading.Lock()
_handler_added = False


def watch(server: ComputeServer) -> None:
    """Have the exit wait for ``server``'s queued work (see the module docstring). Thread-safe."""
    global _handler_added
    with _registered:
        _servers.add(server)
        if not _handler_added:
            atexit.register(_at_exit)
            _handler_added = True


def keep_forever(obj: object) -> None:
    """Keep ``obj``, part of work the exit abandons, alive for as long as the process lives."""
    _abandoned.append(obj)


def exit_timeout_s() -> float:
    """``RUDA_EXIT_TIMEOUT_S`` as seconds (a number >= 0), else :data:`DEFAULT_EXIT_TIMEOUT_S`.
    A value that is not such a number is warned about and the default is used: the exit is no
    place to raise."""
    text = os.environ.get("RUDA_EXIT_TIMEOUT_S")
    if text is None:
        return DEFAULT_EXIT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        warnings.warn(
            f"RUDA_EXIT_TIMEOUT_S={text!r} is not a number of seconds >= 0; waiting the default "
            f"{DEFAULT_EXIT_TIMEOUT_S} s for queued device work at exit",
            ExitTimeoutWarning,
            stacklevel=2,
        )
        return DEFAULT_EXIT_TIMEOUT_S
    return value


def _at_exit() -> None:
    timeout = exit_timeout_s()
    deadline = time.monotonic() + timeout
    abandoned: list[str] = []
    failed: list[str] = []
    driver_waits = False
    for server in list(_servers):
        if server.retired is not None:  # a fork's child: its parent's work is not its own
            continue
        unfinished, errors = server.exit_work(deadline)
        abandoned += unfinished
        failed += errors
        driver_waits |= bool(unfinished) and server.driver.teardown_waits
    if failed:
        warnings.warn(
            "device work queued before the interpreter exited failed, and no sync() or read "
            f"raised the error: {'; '.join(failed)}",
            RudaWarning,
            stacklevel=1,
        )
    if not abandoned:
        return
    try:
        warnings.warn(
            f"device work still unfinished {timeout} s after the interpreter began to exit was "
            f"abandoned: {'; '.join(abandoned)}. Set RUDA_EXIT_TIMEOUT_S to wait longer, or "
            "sync() before exiting to see the work's errors"
            + (
                f"; the driver would wait for it, so the process ends now with status "
                f"{ABANDONED_EXIT_STATUS}"
                if driver_waits
                else ""
            ),
            ExitTimeoutWarning,
            stacklevel=1,
        )
    finally:
        if driver_waits:
            sys.stdout.flush()
            sys.stderr.flush()
            flush_c_stdout()
            os._exit(ABANDONED_EXIT_STATUS)
