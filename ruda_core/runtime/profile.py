"""Profiling: :class:`ProfileDuration` separates submission, execution and transfer, and
:class:`ProfileTrace` holds every timed operation for export as a Chrome/Perfetto trace.

Device-side times come from :class:`Stamp` objects a backend records into its queues (CUDA
events, OpenCL profiling markers, the NumPy device worker's clock): they measure when the device
reached a point of the queue, not when the host enqueued it. The backend that recorded two
stamps says how far apart they are.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = ["ProfileDuration", "ProfileTrace", "Stamp", "TimingMethod", "TraceEvent"]


class Stamp(Protocol):
    """A point in a stream's queue whose device time is known once the queue has passed it.
    Opaque: only the driver that recorded it reads it, in
    :meth:`~.driver.QueueDriver.elapsed_ns`."""


class TimingMethod(enum.Enum):
    """How the execution time was measured."""

    DEVICE = "device"  #: device events/timestamps bracketing the work
    SYSTEM = "system"  #: host wall clock around a full sync (includes queueing)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One timed operation: a kernel or a transfer, on one stream, relative to the profile's
    start."""

    name: str
    kind: str  #: ``"kernel"`` or ``"transfer"``
    stream: int
    start_ns: int
    end_ns: int

    @property
    def duration_ns(self) -> int:
        return max(self.end_ns - self.start_ns, 0)


@dataclass(frozen=True, slots=True)
class ProfileTrace:
    """Every operation of a profiled region, with one track per stream."""

    device: str
    events: tuple[TraceEvent, ...]

    def streams(self) -> list[int]:
        return sorted({e.stream for e in self.events})

    def to_chrome(self) -> dict[str, Any]:
        """The trace in Chrome's trace-event format (``chrome://tracing``, Perfetto): one
        process for the device, one thread track per stream, times in microseconds."""
        rows: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": self.device}}
        ]
        rows += [
            {"ph": "M", "name": "thread_name", "pid": 0, "tid": s, "args": {"name": f"stream {s}"}}
            for s in self.streams()
        ]
        rows += [
            {
                "ph": "X",
                "name": e.name,
                "cat": e.kind,
                "pid": 0,
                "tid": e.stream,
                "ts": e.start_ns / 1000,
                "dur": e.duration_ns / 1000,
            }
            for e in self.events
        ]
        return {"traceEvents": rows, "displayTimeUnit": "ns"}

    def save_chrome(self, path: str | Path) -> None:
        """Write :meth:`to_chrome` as JSON to ``path``."""
        Path(path).write_text(json.dumps(self.to_chrome()))


def _union_ns(events: list[TraceEvent]) -> int:
    """Length of the union of the events' intervals (overlapping streams count once)."""
    total, end = 0, None
    for e in sorted(events, key=lambda e: e.start_ns):
        if end is None or e.start_ns > end:
            total += e.duration_ns
            end = e.end_ns
        elif e.end_ns > end:
            total += e.end_ns - end
            end = e.end_ns
    return total


@dataclass(frozen=True, slots=True)
class ProfileDuration:
    """Times of one profiled region, in nanoseconds.

    :param submission_ns: host time spent enqueueing (the profiled function's own run time).
    :param execution_ns: time the device spent running the region's kernels (overlapping streams
        count once).
    :param transfer_ns: time the device spent on the region's host<->device copies.
    :param method: how ``execution_ns`` and ``transfer_ns`` were measured.
    :param trace: every operation, for :meth:`ProfileTrace.save_chrome`.
    """

    name: str
    submission_ns: int
    execution_ns: int
    transfer_ns: int
    method: TimingMethod
    trace: ProfileTrace = field(compare=False, repr=False)

    @classmethod
    def from_trace(
        cls, name: str, submission_ns: int, method: TimingMethod, trace: ProfileTrace
    ) -> ProfileDuration:
        kernels = [e for e in trace.events if e.kind == "kernel"]
        transfers = [e for e in trace.events if e.kind == "transfer"]
        return cls(name, submission_ns, _union_ns(kernels), _union_ns(transfers), method, trace)

    @property
    def total_ns(self) -> int:
        return self.execution_ns + self.transfer_ns
