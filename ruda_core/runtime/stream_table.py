"""A server's streams: the state of each stream, and the checks that every use of memory on a
stream goes through.

:class:`StreamTable` maps stream values onto the driver's queues and holds the server's lock.
Its :meth:`~StreamTable.use` is the one place a binding is accepted on a stream: it must be the
device's and live, work on another stream that last used it is waited for (an event wait, never
the host), and poison is reported. A failure of enqueued work is recorded on its stream with
:meth:`ServerStream.fail` and raised at the stream's next flush, sync or read; other libraries'
objects that queued work borrows are kept alive, batch by batch, until that work is done
(:meth:`~StreamTable.keep`). The parts of a server that enqueue work (launches, transfers,
sharing, captures) use it through its public methods. It calls only the driver's queue hooks
and imports no driver.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import DeviceTimeout, InvalidHandle, LaunchError, ServerError
from .future import RudaFuture, wait_until
from .memory.handle import Binding, Handle
from .memory.management import Fence, MemoryManagement
from .reports import ReportLog
from .shutdown import keep_forever

if TYPE_CHECKING:
    from .compiler import RudaTask
    from .driver import QueueDriver

__all__ = [
    "KEEP_BATCH",
    "MAX_KEPT_BATCHES",
    "TICKS",
    "ServerStream",
    "StreamTable",
    "poisoned_input",
]

T = TypeVar("T")

#: owners kept per stream before they are fenced as one batch (see :meth:`StreamTable.keep`)
KEEP_BATCH = 64
#: fenced batches of kept owners a stream holds before the host waits for the oldest: the
#: back-pressure that bounds the launches with borrowed arrays queued ahead of a device (and the
#: arrays they keep alive) to about ``KEEP_BATCH * (MAX_KEPT_BATCHES + 1)`` per stream
MAX_KEPT_BATCHES = 16
#: The order of enqueues, syncs and reads, over every stream (:attr:`ServerStream.users`)
TICKS = itertools.count(1)


class ServerStream:
    """Per-stream state of a server. Drivers subclass it to hold their queue, in attributes of
    their own; the kept owners (:attr:`kept`, :attr:`fenced`) are read-only properties, so a
    subclass cannot replace them by accident."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        #: the first failure recorded since errors were last handed out (:meth:`take_error`)
        self.error: ServerError | None = None
        #: the stream values that enqueued work on this slot since their last sync or read
        #: completed, each with the tick (:data:`TICKS`) of its last enqueue, and the errors
        #: owed to stream values: several streams may share a slot
        self.users: dict[int, int] = {}
        self.owed: dict[int | None, ServerError] = {}
        #: errors raised to one stream value and still owed to another (not lost at exit)
        self.raised: list[ServerError] = []
        #: Validate-mode reports since the last sync (made at the first validated launch)
        self.reports: ReportLog | None = None
        self._kept: list[object] = []
        self._fenced: deque[tuple[Fence, list[object]]] = deque()
        #: other libraries' stream handles whose queued work the driver itself orders before
        #: this stream's (the stream's own handle; on CUDA, the legacy stream for a blocking one)
        self.ordered_producers: frozenset[int] = frozenset()

    @property
    def kept(self) -> list[object]:
        """What keeps other libraries' memory alive for work queued since the last fence of
        them: the current batch, which the server extends under its lock (see
        :meth:`StreamTable.keep`) and :meth:`take_kept` hands over when it is fenced."""
        return self._kept

    @property
    def fenced(self) -> deque[tuple[Fence, list[object]]]:
        """Earlier batches of :attr:`kept`, oldest first, each with the fence after the work
        that used it; the server adds and lets go of batches under its lock."""
        return self._fenced

    def take_kept(self) -> list[object]:
        """The current batch of kept owners, leaving an empty one in its place (lock held)."""
        kept, self._kept = self._kept, []
        return kept

    def fail(
        self,
        error: ServerError,
        bindings: Sequence[Binding],
        task: RudaTask | None = None,
        value: int | None = None,
    ) -> None:
        """Record a failure of enqueued work: the stream's first pending error (raised at its
        next flush, sync or read), and poison on every buffer the work could have written (all
        of ``bindings`` without a ``task``). Drivers call it from their queues, when the work
        runs; safe without the lock. The server passes ``value`` for a failure found while
        stream ``value`` enqueued the work (lock held): it is owed to that stream alone."""
        if value is not None:
            self.owed.setdefault(value, error)
        elif self.error is None:
            self.error = error
        for k, b in enumerate(bindings):
            if task is None or task.writes(k):
                b.slice.error = error

    def take_error(
        self,
        value: int | None,
        *,
        done: int | None = None,
        keep: bool = False,
        found: ServerError | None = None,
    ) -> ServerError | None:
        """The error owed to stream ``value`` (lock held), taken unless ``keep``. A failure
        recorded since errors were last handed out, and ``found`` (a sync's Validate reports),
        is owed to every stream value with work enqueued on the slot and not yet known complete
        (the caller where there is none), so that a stream sharing the slot neither takes
        another's error nor hides it. ``done``: the tick of a sync or read of the slot now
        complete: the slot runs its work in order, so the work enqueued before it is complete,
        its failures handed out, and its streams owed nothing more unless they enqueue again.
        ``value`` None (the interpreter's exit) takes an error owed that no stream raised."""
        recorded, self.error = self.error, None  # first: a worker's fail() may come meanwhile
        errors = [error for error in (recorded, found) if error is not None]
        if errors:
            owners: set[int | None] = set(self.users) or {value}
            for error in errors:
                for v in owners:
                    self.owed.setdefault(v, error)
        if value is None:  # what no stream's sync or read raised
            owed, self.owed = self.owed, {}
            lost = (e for e in owed.values() if not any(e is r for r in self.raised))
            return next(lost, None)
        if done is not None:  # the slot runs in order: all work before ``done`` is complete
            self.users = {v: tick for v, tick in self.users.items() if tick > done}
        if keep or value not in self.owed:
            return self.owed.get(value)
        error = self.owed.pop(value)
        still = self.owed.values()
        self.raised = [e for e in (*self.raised, error) if any(e is o for o in still)]
        return error


def poisoned_input(task: RudaTask, bindings: Sequence[Binding]) -> LaunchError | None:
    """The error to record when a read-only input of ``task`` is poisoned, else None."""
    for k, b in enumerate(bindings):
        if b.slice.error is not None and not task.writes(k):
            error = LaunchError(
                f"kernel {task.name} was not run: its input #{k} holds no valid data "
                f"after an earlier failure ({b.slice.error})"
            )
            error.__cause__ = b.slice.error
            return error
    return None


def rewritten(task: RudaTask, bindings: Sequence[Binding]) -> None:
    """Clear the poison of the bindings ``task`` writes: a launch of it runs (with a non-zero
    count), so they hold what it writes from then on."""
    for k, b in enumerate(bindings):
        if task.writes(k):
            b.slice.error = None


class StreamTable:
    """The streams of one server and its lock.

    :param queue: the driver's streams and events.
    :param memory: the server's pools (handles dropped since the last use are fenced first).
    :param server_id: the identity bindings of this server carry.
    :param device: the device, as errors name it.
    """

    __slots__ = ("by_slot", "device", "lock", "memory", "queue", "server_id", "size")

    def __init__(
        self, queue: QueueDriver, memory: MemoryManagement, server_id: int, device: object
    ) -> None:
        #: taken by every public method of the server; never held across a call that takes it
        #: again. In a forked child it is replaced by one that raises (see :mod:`.fork`).
        self.lock: Any = threading.Lock()
        self.queue = queue
        self.memory = memory
        self.server_id = server_id
        self.device = device
        #: the driver's queues, by slot
        self.by_slot: dict[int, ServerStream] = {}
        #: slots: a stream value maps onto slot ``value % size``
        self.size = queue.max_streams

    def get(self, value: int, enqueues: bool = True) -> ServerStream:
        """The stream of a stream value, its queue made at first use (lock held). The value
        is one of its users (:attr:`ServerStream.users`) unless it only waits (``enqueues``
        False: a flush or sync)."""
        slot = value % self.size
        stream = self.by_slot.get(slot)
        if stream is None:
            stream = self.by_slot[slot] = self.queue.new_stream(slot)
        if enqueues:
            stream.users[value] = next(TICKS)
        return stream

    def reserve(self, nbytes: int, stream: ServerStream) -> Handle:
        """A handle of ``nbytes`` new (uninitialised) bytes of the pools, first used on
        ``stream`` (lock held; waits and raises as ``MemoryManagement.reserve``)."""
        memory = self.memory
        s = memory.reserve(nbytes, stream)
        self.queue.reserved(stream, s.page.resource, s.offset_bytes, s.nbytes)
        return Handle._new(s, memory.dropped, self.server_id)

    def use(
        self,
        stream: ServerStream,
        bindings: Sequence[Binding],
        named: Callable[[int], str] | None = None,
    ) -> bool:
        """Accept ``bindings`` for work on ``stream`` (lock held): refuse foreign or freed ones,
        order their use after the stream that used each last, and return whether any is
        poisoned. Handles dropped since the last memory operation are fenced first, before this
        work, so their memory is free as soon as the work queued before the drop is done.

        :raises InvalidHandle: as :meth:`check`.
        """
        memory = self.memory
        if memory.dropped:
            memory.drain()
        server_id = self.server_id
        poisoned = False
        for b in bindings:
            s = b.slice
            if b.server_id != server_id or s.freed:
                self.check(bindings, named)  # raises, naming the first such binding
            if s.stream is not stream:
                if s.stream is not None:
                    self.queue.wait(stream, self.queue.fence(s.stream))
                s.stream = stream
            if s.error is not None:
                poisoned = True
        return poisoned

    def check(self, bindings: Sequence[Binding], named: Callable[[int], str] | None = None) -> None:
        """Refuse a binding of a dropped handle or of another server, the ``k``-th named
        ``named(k)`` where given (a launch's: :meth:`RudaTask.describe_binding`).

        :raises InvalidHandle: for the first such binding.
        """
        server_id = self.server_id
        for k, b in enumerate(bindings):
            if b.server_id != server_id or b.slice.freed:
                raise self.bad_binding(b, None if named is None else named(k))

    def bad_binding(self, binding: Binding, named: str | None = None) -> InvalidHandle:
        """The error for a binding of a dropped handle or of another server (``named``: what
        the binding is, e.g. ``"argument 'x' of kernel scale"``)."""
        what = f"{named}: {binding!r}" if named is not None else repr(binding)
        if binding.slice.freed:
            return InvalidHandle(
                f"{what} belongs to a handle that was dropped; keep the Handle alive"
            )
        return InvalidHandle(
            f"{what} belongs to another device than {self.device}; copy it to "
            f'{self.device} first (ruda_core.asarray(tensor, "{self.device}") or '
            "ComputeClient.to_client)"
        )

    def raise_pending(
        self,
        stream: ServerStream,
        value: int | None,
        *,
        done: int | None = None,
        keep: bool = False,
        found: ServerError | None = None,
    ) -> None:
        """Raise the error owed to stream ``value``, if any (takes the lock; see
        :meth:`ServerStream.take_error`); ``keep`` leaves it pending, for the stream's own next
        flush, sync or read."""
        with self.lock:
            error = stream.take_error(value, done=done, keep=keep, found=found)
        if error is not None:
            raise error

    def keep(self, stream: ServerStream, owners: Sequence[object]) -> Fence | None:
        """Keep ``owners`` alive until a fence recorded on the stream after the work enqueued
        so far is done (lock held): they join the stream's batch, and a full batch is fenced
        first, so the owners added now wait for a later fence. Returns what the caller must
        wait for once the lock is released, as :meth:`fence_kept`."""
        backlog = self.fence_kept(stream) if len(stream.kept) >= KEEP_BATCH else None
        stream.kept.extend(owners)
        return backlog

    def fence_kept(self, stream: ServerStream) -> Fence | None:
        """Fence the stream's kept owners as one batch; let go of batches whose work is done,
        recording the last of their fences again for the new batch (lock held). Returns the
        oldest batch's fence when more than :data:`MAX_KEPT_BATCHES` are still in flight: the
        caller waits for it once the lock is released (never with it: a worker of this device
        may need another server's lock that a thread waiting for this one holds), so a launch
        loop with borrowed arrays cannot run unboundedly ahead of the device."""
        done = self.let_go_kept(stream)
        fenced = stream.fenced
        if stream.kept:
            queue = self.queue
            fence = queue.fence(stream) if done is None else queue.refence(stream, done)
            fenced.append((fence, stream.take_kept()))
        return fenced[0][0] if len(fenced) > MAX_KEPT_BATCHES else None

    def let_go_kept(self, stream: ServerStream) -> Fence | None:
        """Let go of the stream's kept batches whose work is done (lock held); the last of
        their fences, which nobody holds any more, or None."""
        fenced = stream.fenced
        done = None
        while fenced and fenced[0][0].done():
            done = fenced.popleft()[0]
        return done

    # -- what the streams are doing ------------------------------------------------------------
    def busy(self) -> list[str]:
        """What every stream that is not done is doing, as far as the driver can tell
        (``"stream 0 of opencl:0: kernel spin is running"``); never blocks."""
        busy = self.queue.busy
        return [
            f"stream {s.slot} of {self.device}: {doing}"
            for s in list(self.by_slot.values())
            if (doing := busy(s)) is not None
        ]

    def exit_work(
        self,
        deadline: float,
        sync: Callable[[ServerStream], tuple[RudaFuture[None], Callable[[None], None]]],
    ) -> tuple[list[str], list[str]]:
        """Wait until ``deadline`` (a ``time.monotonic()`` time) for the work queued so far on
        every stream (at interpreter exit, see :mod:`.shutdown`); ``sync`` is the server's (lock
        held): a driver's sync and what checks its result. Returns a line for each stream still
        not done then, naming what it is doing where the driver can tell, and one for each
        whose work failed with an error no sync or read raised. The result of each sync that is
        done is taken, so that a driver writes out what the work printed."""
        if not self.lock.acquire(timeout=max(deadline - time.monotonic(), 0)):
            return [f"{self.device}: a thread held its server past the exit's wait"], []
        unfinished: list[str] = []
        failed: list[str] = []
        syncs = []
        try:
            for stream in self.by_slot.values():
                try:
                    syncs.append((stream, *sync(stream)))
                except Exception as exc:  # a lost device: its stream cannot even be synced
                    failed.append(f"stream {stream.slot} of {self.device}: {exc}")
        finally:
            self.lock.release()
        for stream, future, check in syncs:
            if not wait_until(future.done, max(deadline - time.monotonic(), 0)):
                doing = self.queue.busy(stream) or "its queued work has not finished"
                unfinished.append(f"stream {stream.slot} of {self.device}: {doing}")
                keep_forever(future)  # freeing a driver's event may wait for its work
                continue
            try:
                check(future.result())
            except Exception as exc:
                failed.append(f"stream {stream.slot} of {self.device}: {exc}")
        return unfinished, failed

    def explained(self, future: RudaFuture[T], stream: ServerStream, what: str) -> RudaFuture[T]:
        """``future`` whose timed-out ``result`` raises a :class:`DeviceTimeout` naming what
        the device's streams are still doing."""

        def wait(timeout: float | None) -> T:
            try:
                return future.result(timeout)
            except DeviceTimeout:
                raise
            except TimeoutError as exc:
                busy = self.busy()
                raise DeviceTimeout(
                    f"{what} of stream {stream.slot} on {self.device} was not complete "
                    f"within {timeout} s; "
                    + (
                        f"still busy: {'; '.join(busy)}. A kernel that never ends holds up "
                        "the work queued after it, and on a device that runs one kernel at a "
                        "time every other stream's work too: fix its loop's exit condition"
                        if busy
                        else "no kernel of this device is known to be running: wait longer, "
                        "or, if it never completes, the device's driver stopped answering"
                    )
                ) from exc

        return RudaFuture(wait, future.done)
