"""Captured launches: ``with client.capture() as graph:`` records the launches and the copies
between handles enqueued on the client's stream instead of running them, and ``graph.replay()``
enqueues the whole recording again.

A :class:`Recording` is a server's state of one open capture: the stream it records, the thread
that opened it, the steps recorded so far and the owners of the memory they use, held so the
memory stays alive as long as the graph does. :class:`Captures` is a server's captures part
(what its ``begin_capture``, ``end_capture`` and ``abort_capture`` do, and the refusals inside
a capture); it turns a finished recording into a replay with the public methods of the server's
launches and transfers and the driver's ``capture`` hook. This module imports no driver.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple

from ..errors import CaptureError
from ..ir import ExecutionMode
from .arguments import LaunchArgs
from .compiler import RudaTask
from .memory.handle import Binding
from .stream import StreamId, thread_stream

if TYPE_CHECKING:
    from .client import ComputeClient
    from .driver import Run
    from .launches import Launches
    from .stream_table import StreamTable
    from .transfers import Transfers

__all__ = ["CapturedCopy", "CapturedLaunch", "Captures", "Graph", "Recording"]


class CapturedLaunch(NamedTuple):
    """One recorded launch: its task, its arguments (sequences frozen as tuples) and its mode."""

    task: RudaTask
    args: LaunchArgs
    mode: ExecutionMode


class CapturedCopy(NamedTuple):
    """One recorded copy of ``source``'s bytes into ``destination`` (equal sizes, non-empty)."""

    source: Binding
    destination: Binding


#: a step of a recording, in the order the stream received it
Captured = CapturedLaunch | CapturedCopy


class Recording:
    """An open capture of one stream of one server (mutated under the server's lock).

    :param stream_value: the stream whose launches and copies are recorded.
    :param thread: the identity of the thread that opened it (``threading.get_ident()``).
    """

    __slots__ = ("keep", "launches", "stream_value", "thread")

    def __init__(self, stream_value: int, thread: int) -> None:
        self.stream_value = stream_value
        self.thread = thread
        #: the launches and copies recorded, in order
        self.launches: list[Captured] = []
        #: the owners of the recorded memory (their collection would free it)
        self.keep: list[object] = []


class Captures:
    """The open captures of one server, by the stream value each records.

    :param streams: the server's streams and lock.
    """

    __slots__ = ("open", "streams")

    def __init__(self, streams: StreamTable) -> None:
        self.streams = streams
        #: open recordings by stream value (read on every launch)
        self.open: dict[int, Recording] = {}

    def begin(self, stream_value: int) -> Recording:
        """See ``ComputeServer.begin_capture``."""
        streams = self.streams
        thread = threading.get_ident()
        with streams.lock:
            for open_ in self.open.values():
                if open_.stream_value == stream_value or open_.thread == thread:
                    raise CaptureError(
                        f"stream {open_.stream_value} of {streams.device} is already being "
                        "captured; captures do not nest: end that `with client.capture()` block "
                        "first (a graph may replay another graph inside its block)"
                    )
            recording = self.open[stream_value] = Recording(stream_value, thread)
            return recording

    def end(
        self, recording: Recording, launches: Launches, transfers: Transfers
    ) -> Callable[[int], None]:
        """See ``ComputeServer.end_capture``: every recorded launch is prepared by
        ``launches`` and every copy by the driver, and the driver's ``capture`` makes them one
        run. Where a recorded launch is validated or has a dynamic count, or while a profile
        runs or a binding is poisoned, a replay enqueues each launch as a prepared launch would
        and each copy as ``transfers.copy`` does."""
        streams = self.streams
        driver = launches.driver
        with streams.lock:
            self._close(recording)
            runs: list[Run | None] = []
            replays: list[Callable[[int], None]] = []
            used: dict[int, Binding] = {}
            for captured in recording.launches:
                if isinstance(captured, CapturedCopy):
                    runs.append(driver.prepare_copy(*captured))
                    replays.append(partial(transfers.copy, *captured))
                    uses: Sequence[Binding] = captured
                else:
                    task, args, mode = captured
                    if args.count.binding is None and not args.count.num_cubes:
                        continue  # empty: runs nothing
                    step = launches.prepare_step(task, args, mode)
                    runs.append(step.fast)
                    replays.append(launches.replayer(step))
                    dynamic = step.args.count.binding
                    uses = step.args.bindings if dynamic is None else (*step.args.bindings, dynamic)
                for b in uses:
                    used[id(b)] = b
            fast = [run for run in runs if run is not None]
            whole = driver.capture(fast) if runs and len(fast) == len(runs) else None
        bindings = tuple(used.values())
        steps = tuple(recording.launches)
        captures = self.open
        profiler = launches.profiler
        by_slot, n_streams = streams.by_slot, streams.size

        def replay(stream_value: int) -> None:
            if captures and self.record(steps, stream_value):
                return
            if whole is not None:
                lock = streams.lock  # read each time: a fork replaces it
                lock.acquire()  # not ``with``: its protocol costs as much again
                try:
                    stream = by_slot.get(stream_value % n_streams) or streams.get(stream_value)
                    if not streams.use(stream, bindings) and not profiler.active:
                        whole(stream)
                        return
                finally:
                    lock.release()
            for each in replays:
                each(stream_value)

        return replay

    def abort(self, recording: Recording) -> None:
        """See ``ComputeServer.abort_capture``."""
        with self.streams.lock:
            self._close(recording)

    def _close(self, recording: Recording) -> None:
        if self.open.get(recording.stream_value) is recording:
            del self.open[recording.stream_value]

    def record(self, launches: Sequence[Captured], stream_value: int) -> bool:
        """Record ``launches`` (launches and copies) when ``stream_value`` is being captured and
        return True; return False when no capture concerns this call.

        :raises CaptureError: for a launch or copy of a capturing thread on another stream.
        :raises InvalidHandle: for a freed or foreign binding, as a launch does.
        """
        streams = self.streams
        with streams.lock:
            recording = self.open.get(stream_value)
            if recording is None:
                first = launches[0]
                call = (
                    "a copy between handles"
                    if isinstance(first, CapturedCopy)
                    else f"a launch of kernel {first.task.name}"
                )
                self.refuse(call, stream_value)
                return False
            owners: list[object] = []
            frozen: list[Captured] = []
            for captured in launches:
                if isinstance(captured, CapturedCopy):
                    used: Sequence[Binding] = captured
                else:
                    task, args, mode = captured
                    count, dim, bindings, scalars, metadata = args
                    used = (*bindings, count.binding) if count.binding is not None else bindings
                    args = LaunchArgs(count, dim, tuple(bindings), tuple(scalars), tuple(metadata))
                    captured = CapturedLaunch(task, args, mode)
                for k, b in enumerate(used):
                    ref = b.slice.owner
                    owner = ref() if ref is not None else None
                    if b.server_id != streams.server_id or b.slice.freed or owner is None:
                        named = None
                        if isinstance(captured, CapturedLaunch):
                            arrays = k < len(args.bindings)
                            named = (task.describe_binding if arrays else task.describe_count)(k)
                        raise streams.bad_binding(b, named)
                    owners.append(owner)
                frozen.append(captured)
            recording.keep += owners
            recording.launches += frozen
            return True

    def refuse(self, call: str, stream_value: int) -> None:
        """:raises CaptureError: naming ``call`` when ``stream_value`` is being captured or the
        calling thread is capturing a stream of this server."""
        thread = threading.get_ident()
        device = self.streams.device
        for recording in list(self.open.values()):  # other threads may open or end one
            if recording.stream_value == stream_value:
                raise CaptureError(
                    f"{call} on stream {stream_value} of {device} while it is being captured: "
                    "a capture records kernel launches and copies between handles only. "
                    "Allocate, transfer, sync and profile before or after the "
                    "`with client.capture()` block"
                )
            if recording.thread == thread:
                raise CaptureError(
                    f"{call} on stream {stream_value} of {device} while this thread captures "
                    f"stream {recording.stream_value}: a capture records the work of one "
                    "stream. Launch and copy through the client that opened the capture, or "
                    "after its `with client.capture()` block"
                )


class Graph:
    """The launches and copies recorded by ``client.capture()``, replayed with :meth:`replay`.

    Use it once as a context manager: inside the block, launches on the client's resolved stream
    (``kernel.launch``, ``launch_unchecked``, a ``PreparedLaunch``, another graph's replay) and
    copies between handles of the device (``client.copy``) are checked as usual and recorded,
    not run; allocations, transfers to or from the host or another device, syncs, profiles and
    work on another stream of the device raise :class:`CaptureError`. A replay runs the recorded
    steps in their order. On leaving the block every recorded kernel is built (a
    ``CompilationError`` raises there) and the backend instantiates the recording once. The
    graph keeps the memory of every recorded step alive. Scalars are the values given at
    capture; capture again to change them. Thread-safe once captured.
    """

    __slots__ = ("_client", "_count", "_keep", "_recording", "_replay")

    def __init__(self, client: ComputeClient) -> None:
        self._client = client
        self._recording: Recording | None = None
        self._replay: Callable[[int], None] | None = None
        self._count = 0
        #: the owners of the recorded memory: the graph keeps it alive
        self._keep: list[object] = []

    def __enter__(self) -> Graph:
        """Start recording on the client's resolved stream.

        :raises CaptureError: when this graph already captured, the stream is being captured,
            or the calling thread is capturing another stream of the device.
        """
        if self._recording is not None or self._replay is not None:
            raise CaptureError("a Graph captures once; call client.capture() for another")
        client = self._client
        self._recording = client.server.begin_capture(client.execution_stream().value)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """End the recording; instantiate it unless the block raised (then it is discarded).

        :raises CompilationError: when a recorded kernel does not build.
        """
        recording, self._recording = self._recording, None
        if recording is None:
            return
        server = self._client.server
        if exc_type is not None:
            server.abort_capture(recording)
            return
        self._replay = server.end_capture(recording)
        self._count = len(recording.launches)
        self._keep = recording.keep

    def __len__(self) -> int:
        """The number of launches and copies recorded."""
        return self._count

    def replay(self, client: ComputeClient | None = None) -> None:
        """Enqueue every recorded launch and copy, in order, on the resolved stream of ``client``
        (default: the client that captured) and return at once. Errors surface as for
        ``launch``: at the next flush, sync or read on that stream. Inside a capture of that
        stream, the recorded steps are recorded again.

        :param client: a client of the same device (a ``fixed_execution_queue`` clone, say).
        :raises CaptureError: at once, before the capture ended or after it failed, and for a
            client of another device.
        """
        replay = self._replay
        if replay is None:
            raise CaptureError(
                "this graph holds no recording: replay it after its `with client.capture()` "
                "block has ended without an error"
            )
        if client is None:  # no check of the device: the graph's own client
            stream = self._client.pinned  # ``execution_stream()``, inlined
            if stream is None:
                stream = getattr(thread_stream, "stream", None) or StreamId.current()
            replay(stream.value)
            return
        if client.server is not self._client.server:
            raise CaptureError(
                f"a graph captured on {self._client.device} cannot be replayed on "
                f"{client.device}: its kernels and memory belong to the device that "
                "captured it. Capture the launches again on that device's client"
            )
        replay(client.execution_stream().value)

    def __repr__(self) -> str:
        state = "capturing" if self._recording is not None else f"{self._count} steps"
        return f"Graph({self._client.device}, {state})"
