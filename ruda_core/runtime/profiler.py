"""A server's profiler: the kernels and transfers timed between ``start_profile`` and
``end_profile``, on every stream of the device.

Launches and transfers ask :attr:`Profiler.active` (one attribute read) and, while a profile
runs, bracket their enqueue with :meth:`Profiler.stamp` and :meth:`Profiler.note`. Stamps are
the driver's (:meth:`~.driver.QueueDriver.timestamp`), and so are the intervals between them
(:meth:`~.driver.QueueDriver.elapsed_ns`). Imports no driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ServerError
from .future import RudaFuture
from .profile import ProfileTrace, Stamp, TraceEvent

if TYPE_CHECKING:
    from .driver import QueueDriver
    from .stream_table import ServerStream, StreamTable

__all__ = ["Profiler"]


class _Recording:
    """Operations timed while a profile runs: (kind, name, stream, start, end) stamps."""

    __slots__ = ("base", "ops", "streams")

    def __init__(self, base: Stamp | None, stream: ServerStream) -> None:
        self.base = base  #: None: a profile timed by the host (no stamps)
        self.ops: list[tuple[str, str, ServerStream, Stamp, Stamp]] = []
        self.streams: dict[int, ServerStream] = {stream.slot: stream}


class Profiler:
    """The profile of one server (called with the server's lock held, but :meth:`end`).

    :param queue: the driver's streams, which record the stamps.
    :param streams: the server's streams (whose device name messages use).
    """

    __slots__ = ("_queue", "_recording", "_streams", "active")

    def __init__(self, queue: QueueDriver, streams: StreamTable) -> None:
        self._queue = queue
        self._recording: _Recording | None = None
        self._streams = streams
        #: whether a profile is running (an attribute, not a property: every launch reads it)
        self.active = False

    def start(self, stream: ServerStream, stamped: bool = True) -> None:
        """Begin a profile, timed from a stamp on ``stream`` where ``stamped``; else the host
        times it (a device without timestamps), and the profile only marks that one runs.

        :raises UnsupportedFeature: when stamped and the driver records no device timestamps.
        :raises ServerError: when a profile is already running (profiles do not nest).
        """
        if self._recording is not None:
            raise ServerError(f"a profile is already running on {self._streams.device}")
        self._recording = _Recording(self._queue.timestamp(stream) if stamped else None, stream)
        self.active = stamped

    def stamp(self, stream: ServerStream) -> Stamp:
        """A stamp on ``stream`` before an operation is enqueued."""
        return self._queue.timestamp(stream)

    def note(self, kind: str, name: str, stream: ServerStream, start: Stamp) -> None:
        """Record an operation enqueued on ``stream`` since ``start``."""
        rec = self._recording
        if rec is not None:
            rec.ops.append((kind, name, stream, start, self._queue.timestamp(stream)))
            rec.streams[stream.slot] = stream

    def stop(self) -> tuple[_Recording, list[RudaFuture[None]]]:
        """Stop timing and sync every timed stream (lock held); give the result to :meth:`end`,
        without the lock.

        :raises ServerError: when no profile is running.
        """
        rec, self._recording = self._recording, None
        if rec is None:
            raise ServerError(f"no profile is running on {self._streams.device}")
        self.active = False
        return rec, [self._queue.sync(s) for s in rec.streams.values()]

    def end(self, stopped: tuple[_Recording, list[RudaFuture[None]]]) -> ProfileTrace:
        """Wait for the timed work and return its trace (times relative to the start)."""
        rec, waits = stopped
        for w in waits:
            w.result()
        if rec.base is None:
            return ProfileTrace(str(self._streams.device), ())
        since = self._queue.elapsed_ns
        spans = [
            (kind, name, stream.slot, since(rec.base, start), since(rec.base, end))
            for kind, name, stream, start, end in rec.ops
        ]
        # another stream may have started before the base stamp's stream reached it
        shift = min(0, min((span[3] for span in spans), default=0))
        events = tuple(
            TraceEvent(name, kind, slot, start - shift, end - shift)
            for kind, name, slot, start, end in spans
        )
        return ProfileTrace(str(self._streams.device), events)
