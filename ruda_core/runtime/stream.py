"""Stream identity: every thread gets its own :class:`StreamId`, so each thread has its own queue.

``StreamId.current()`` is the calling thread's stream; a client pinned with ``set_stream`` or
``fixed_execution_queue`` uses its pinned stream instead (resolved in ``ComputeClient``).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

__all__ = ["StreamId", "thread_stream"]

_next_id = itertools.count()
#: ``thread_stream.stream`` is the calling thread's :class:`StreamId` once it has one (read
#: directly by the launch path; ``StreamId.current()`` makes it on first use)
thread_stream = threading.local()
_local = thread_stream


@dataclass(frozen=True, slots=True, order=True)
class StreamId:
    """A logical stream. Values are unique per process and never reused."""

    value: int

    @classmethod
    def current(cls) -> StreamId:
        """The calling thread's stream, created on first use. Never blocks."""
        try:
            return _local.stream  # type: ignore[no-any-return]  # set below, always a StreamId
        except AttributeError:
            stream = cls(next(_next_id))
            _local.stream = stream
            return stream

    @classmethod
    def new(cls) -> StreamId:
        """A fresh stream no thread uses yet (for ``set_stream``)."""
        return cls(next(_next_id))
