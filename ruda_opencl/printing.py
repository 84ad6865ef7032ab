"""Kernel ``print`` on OpenCL: records in a buffer per stream, formatted on the host.

OpenCL's ``printf`` is slow where it matters most, on Intel's CPU runtime, which writes each
character with ``fputc`` under a lock its threads share (a million lines took 40 s; 1.8 s on the
NumPy device). The OpenCL dialect therefore records prints (:mod:`ruda_core.codegen.printf`):
a printing kernel takes its stream's record buffer, made at the stream's first printing launch,
and the numbers of its print sites in the server's :class:`~ruda_core.runtime.print_records.
PrintTable`. A sync or read of a stream that printed since its last one enqueues a read of the
buffer and then the reset of its count, in stream order; when it completes, the text is written
to ``sys.stdout``. Records beyond :data:`RECORD_BUFFER_NBYTES` are dropped with a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

from ruda_core.runtime.print_records import PrintTable

__all__ = ["RECORD_BUFFER_NBYTES", "StreamPrints"]

#: Bytes of a stream's record buffer (two words of count and capacity, then records).
RECORD_BUFFER_NBYTES = 64 << 20
_CAPACITY_WORDS = RECORD_BUFFER_NBYTES // 4 - 2
#: the fill patterns of the count (reset) and of the capacity word
_ZERO = np.zeros(1, dtype=np.uint32)
_CAPACITY = np.array([_CAPACITY_WORDS], dtype=np.uint32)


class StreamPrints:
    """The record buffer of one stream (its in-order ``queue``); used under the server's lock."""

    __slots__ = ("_buffer", "_queue", "printed")

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        self._buffer: Any = None
        #: whether a printing kernel was enqueued since the last :meth:`take`
        self.printed = False

    def buffer(self) -> Any:
        """The buffer a printing launch passes, made (count 0) at the first one."""
        if self._buffer is None:
            flags = cl.mem_flags.READ_WRITE
            self._buffer = cl.Buffer(self._queue.context, flags, RECORD_BUFFER_NBYTES)
            self._reset()
            cl.enqueue_fill_buffer(self._queue, self._buffer, _CAPACITY, 4, 4)
        self.printed = True
        return self._buffer

    def _reset(self) -> None:
        cl.enqueue_fill_buffer(self._queue, self._buffer, _ZERO, 0, 4)

    def take(self, table: PrintTable) -> tuple[Any, Callable[[], None]] | None:
        """When a printing kernel ran since the last call: enqueue a read of the records and
        the reset of the count, and return the read's event (PyOpenCL waits for it when it is
        dropped: the stream keeps it) and what writes the text out once the read is complete;
        else None. Raises ``pyopencl.Error`` (the caller translates it)."""
        if not self.printed:
            return None
        self.printed = False
        host = np.empty(RECORD_BUFFER_NBYTES // 4, dtype=np.uint32)
        read = cl.enqueue_copy(self._queue, host, self._buffer, is_blocking=False)
        self._reset()
        return read, lambda: table.write_out(host)
