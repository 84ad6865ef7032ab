"""Kernel ``print`` on OpenCL: records in a buffer per stream, formatted on the host.

OpenCL's ``printf`` is slow where it matters most, on Intel's CPU runtime, which writes each
character with ``fputc`` under a lock its threads share (a million lines took 40 s; 1.8 s on the
NumPy device). The OpenCL dialect therefore records prints (:mod:`ruda_core.codegen.printf`):
a printing kernel takes its stream's record buffer, made at the stream's first printing launch,
and the numbers of its print sites in the server's :class:`~ruda_core.runtime.print_records.
PrintTable`. A sync or read of a stream that printed since its last one enqueues a read of the
buffer and then the reset of its count, in stream order. The text is written to ``sys.stdout``
when the result of that sync or read, or of a later one of the stream, is taken, or when a later
sync or read is made once the read has completed: a sync whose future is dropped loses nothing,
and the interpreter's exit takes the results of the syncs it waits for. Records beyond
:data:`RECORD_BUFFER_NBYTES` are dropped with a warning.
"""

from __future__ import annotations

import threading
from collections import deque
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
_COMPLETE = cl.command_execution_status.COMPLETE


class StreamPrints:
    """The record buffer of one stream (its in-order ``queue``) and the reads of it not yet
    written out; :meth:`buffer` and :meth:`take` are used under the server's lock,
    :meth:`write_out` from any thread."""

    __slots__ = ("_buffer", "_count", "_lock", "_queue", "_table", "_taken", "printed")

    def __init__(self, queue: Any, table: PrintTable) -> None:
        self._queue = queue
        self._table = table
        self._buffer: Any = None
        #: the reads :meth:`take` enqueued, with their host copies, in stream order
        self._taken: deque[tuple[int, Any, np.ndarray]] = deque()
        self._count = 0  #: the reads taken so far
        self._lock = threading.Lock()
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

    def take(self) -> tuple[Any | None, int]:
        """When a printing kernel ran since the last call, enqueue a read of the records and
        the reset of the count. Returns the read's event (PyOpenCL waits for it when it is
        dropped: the stream keeps it), else None, and the reads taken so far, for the
        :meth:`write_out` of work enqueued after it. The records of the reads already complete
        are written out first, so that the reads of syncs nobody waited for do not pile up.
        Raises ``pyopencl.Error`` (the caller translates it)."""
        self.write_out()
        with self._lock:
            if not self.printed:
                return None, self._count
            self.printed = False
            host = np.empty(RECORD_BUFFER_NBYTES // 4, dtype=np.uint32)
            read = cl.enqueue_copy(self._queue, host, self._buffer, is_blocking=False)
            self._reset()
            self._count += 1
            self._taken.append((self._count, read, host))
            return read, self._count

    def write_out(self, through: int = 0) -> None:
        """Write to ``sys.stdout``, in stream order, the text of the first ``through`` reads
        taken (complete: the caller's work, enqueued after them, is) and of every later read
        already complete. A read that failed is dropped (the sync or read after it fails)."""
        if not self._taken:  # a stream that never printed, or whose records are all out
            return
        with self._lock:  # held while writing, so that two threads keep the records' order
            while self._taken:
                number, read, host = self._taken[0]
                if number > through and read.command_execution_status > _COMPLETE:
                    return  # queued or running: so is every later read
                self._taken.popleft()
                try:
                    read.wait()  # complete, or about to be where its number says so
                except cl.Error:
                    continue
                self._table.write_out(host)
