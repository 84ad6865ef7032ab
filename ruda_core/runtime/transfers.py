"""A server's transfers: memory made, written and read from the host, copies within the device,
and copies to another device (``to_client``).

Every transfer takes the server's lock, accepts its bindings through
:meth:`~.stream_table.StreamTable.use` (ownership, liveness, cross-stream ordering) and enqueues
through the driver's copy hooks; a transfer refused inside a capture raises ``CaptureError``
before anything is enqueued. A copy between devices that the drivers cannot make directly goes
through the host in chunks of :data:`TRANSFER_CHUNK_NBYTES`. Imports no driver.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidHandle, ServerError, SettingError
from .capture import CapturedCopy
from .future import RudaFuture
from .memory.handle import Binding, Handle
from .memory.management import Fence
from .nbytes import nbytes_from_env
from .stream_table import ServerStream, StreamTable

if TYPE_CHECKING:
    from .capture import Captures
    from .driver import Bytes, Driver
    from .profiler import Profiler

__all__ = ["TRANSFER_CHUNK_NBYTES", "Transfers"]

#: the chunk of a copy between devices through the host (see :meth:`Transfers.copy_to`), unless
#: the environment variable ``RUDA_TRANSFER_CHUNK`` (a size such as ``16MiB``, read at each
#: copy) names another
TRANSFER_CHUNK_NBYTES = 64 << 20
_CHUNK_VARIABLE = "RUDA_TRANSFER_CHUNK"


def _chunk_nbytes() -> int:
    """The chunk of a copy through the host: ``RUDA_TRANSFER_CHUNK``, else
    :data:`TRANSFER_CHUNK_NBYTES`.

    :raises SettingError: it is set to 0 or to what is not a size.
    """
    chunk = nbytes_from_env(_CHUNK_VARIABLE)
    if chunk is None:
        return TRANSFER_CHUNK_NBYTES
    if chunk < 1:
        raise SettingError(f"{_CHUNK_VARIABLE}=0 is no chunk size; use at least 1 byte")
    return chunk


class Transfers:
    """The transfers of one server.

    :param streams: the server's streams, memory and lock.
    :param driver: the driver (its copy and queue hooks).
    :param profiler: the server's profiler (transfers are timed while it runs).
    :param captures: the server's open captures (which refuse transfers but copies between
        handles, which they record).
    """

    __slots__ = ("captures", "driver", "profiler", "streams")

    def __init__(
        self, streams: StreamTable, driver: Driver, profiler: Profiler, captures: Captures
    ) -> None:
        self.streams = streams
        self.driver = driver
        self.profiler = profiler
        self.captures = captures

    # -- memory from the host ------------------------------------------------------------------
    def empty(self, nbytes: int, stream_value: int) -> Handle:
        """Uninitialised memory of ``nbytes`` bytes, first usable on the given stream. Waits,
        holding the lock, for the oldest releases still queued when the pool would otherwise
        grow past twice the bytes in use (see :class:`~.memory.management.MemoryManagement`).

        :raises BufferTooBig: for a request that can never fit.
        :raises OutOfMemory: when the pool is at its ``limit_nbytes`` or the driver is full.
        """
        if self.captures.open:
            self.captures.refuse("empty()", stream_value)
        streams = self.streams
        lock = streams.lock
        lock.acquire()  # not ``with``: a call made at every allocation
        try:
            return streams.reserve(nbytes, streams.get(stream_value))
        finally:
            lock.release()

    def create(self, data: memoryview, stream_value: int) -> Handle:
        """Memory holding a copy of ``data`` (a contiguous byte view); waits and raises as
        :meth:`empty`."""
        if self.captures.open:
            self.captures.refuse("create_from_slice()", stream_value)
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value)
            handle = streams.reserve(data.nbytes, stream)
            if data.nbytes:
                self._write(stream, handle.binding(), data)
            return handle

    def write(self, binding: Binding, data: memoryview, stream_value: int) -> None:
        """Enqueue a copy of ``data`` into ``binding``; clears a poisoned buffer."""
        if self.captures.open:
            self.captures.refuse("write()", stream_value)
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value)
            streams.use(stream, (binding,))
            binding.slice.error = None
            if data.nbytes:
                self._write(stream, binding, data)

    def read(
        self, bindings: Sequence[Binding], stream_value: int, copy: bool = False
    ) -> RudaFuture[list[Bytes]]:
        """Enqueue reads; the future yields the bytes or raises the stream's pending error or a
        buffer's poison (a timed-out result names what the device is busy with). The read of a
        ``copy`` to another device leaves the pending error to the stream as well, whenever
        the copy's read completes."""
        if self.captures.open:
            self.captures.refuse("read()", stream_value)
        streams = self.streams
        profiler = self.profiler
        with streams.lock:
            stream = streams.get(stream_value)
            done = stream.users[stream_value]  # the read completes what came before it
            streams.use(stream, bindings)
            if not profiler.active:
                future = self.driver.read(stream, bindings)
            else:
                start = profiler.stamp(stream)
                future = self.driver.read(stream, bindings)
                nbytes = sum(b.nbytes for b in bindings)
                profiler.note("transfer", f"read {nbytes} B", stream, start)

        def check(data: list[Bytes]) -> list[Bytes]:
            streams.raise_pending(stream, stream_value, done=None if copy else done, keep=copy)
            for b in bindings:
                if b.slice.error is not None:
                    raise b.slice.error
            return data

        return streams.explained(future.then(check), stream, "read")

    def _write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        """The driver's write, timed while a profile runs (lock held)."""
        profiler = self.profiler
        if not profiler.active:
            self.driver.write(stream, binding, data)
        else:
            start = profiler.stamp(stream)
            self.driver.write(stream, binding, data)
            profiler.note("transfer", f"write {binding.nbytes} B", stream, start)

    # -- copies within the device --------------------------------------------------------------
    def copy(self, source: Binding, destination: Binding, stream_value: int) -> None:
        """Enqueue a copy of ``source``'s bytes into ``destination`` (bindings of this server of
        equal size) on the stream, ordered as a launch that reads ``source`` and writes
        ``destination``; never waits. A poisoned ``source`` poisons ``destination`` instead
        (raised at the next flush, sync or read); an unpoisoned copy clears its poison. Inside a
        capture of the stream the copy is recorded, not run.

        :raises InvalidHandle: at once: a dropped binding, one of another server, sizes that
            differ, or overlapping bindings.
        :raises CaptureError: inside a capture of another stream by the calling thread.
        """
        if source.nbytes != destination.nbytes:
            raise InvalidHandle(
                f"cannot copy the {source.nbytes} bytes of {source!r} into the "
                f"{destination.nbytes}-byte {destination!r}: copy between views of equal size"
            )
        if (
            source.slice.page is destination.slice.page
            and source.offset_bytes < destination.offset_bytes + destination.nbytes
            and destination.offset_bytes < source.offset_bytes + source.nbytes
        ):
            raise InvalidHandle(
                f"{source!r} and {destination!r} overlap: a copy reads and writes distinct "
                "memory. Copy through a scratch handle"
            )
        captures = self.captures
        if captures.open and captures.record((CapturedCopy(source, destination),), stream_value):
            return
        streams = self.streams
        profiler = self.profiler
        with streams.lock:
            stream = streams.get(stream_value)
            streams.use(stream, (source, destination))
            poison = source.slice.error
            if poison is not None:
                stream.fail(poison, (destination,), value=stream_value)
                return
            destination.slice.error = None
            if not source.nbytes:
                return
            run = self.driver.prepare_copy(source, destination)
            if not profiler.active:
                run(stream)
            else:
                start = profiler.stamp(stream)
                run(stream)
                profiler.note("transfer", f"copy {source.nbytes} B", stream, start)

    # -- copies between devices ----------------------------------------------------------------
    def copy_to(
        self, binding: Binding, stream_value: int, target: Transfers, target_stream_value: int
    ) -> Handle:
        """A handle of ``target``'s device holding a copy of ``binding``'s bytes
        (``to_client``). The copy reads the memory after the work queued on it so far (on any
        stream of this server) and is ordered before the work enqueued later on
        ``target_stream_value`` (and, through the usual cross-stream ordering, on any stream of
        ``target``).

        A direct device-to-device copy where the driver's ``copy_to_peer`` takes the pair;
        else through the host, in chunks of :data:`TRANSFER_CHUNK_NBYTES`
        (``RUDA_TRANSFER_CHUNK``): per chunk a read enqueued here and its write enqueued there
        by :meth:`write_from` (which waits on the host for the read unless ``target``'s driver
        defers the write to its stream). Before it reads a chunk the host waits for the write
        of the chunk two before it, so at most two chunks are in flight (each a read and a
        write, with the host copies the two drivers make of it), and the caller waits for all
        but the last two chunks of a large copy (a copy of one chunk or less waits as a single
        write would). A failure of the source's work (a pending error of its stream, a
        poisoned buffer) poisons the new handle, ends the copy and is raised by ``target``'s
        next flush, sync or read on that stream; the source stream's pending error stays
        pending.

        :raises InvalidHandle: at once, before anything is enqueued: a dropped binding, one of
            another server, or ``target`` being this server.
        :raises SettingError: at once: ``RUDA_TRANSFER_CHUNK`` is not a size of at least one
            byte.
        :raises CaptureError: inside a capture of either stream.
        """
        if self.captures.open:
            self.captures.refuse("to_client()", stream_value)
        if target.captures.open:
            target.captures.refuse("to_client()", target_stream_value)
        chunk = _chunk_nbytes()
        streams, there = self.streams, target.streams
        if target is self:
            raise InvalidHandle(
                f"{binding!r} is already on {streams.device}: to_client copies between devices. "
                "Use the handle as it is (work on another stream is ordered after its writer)"
            )
        with streams.lock:
            if binding.server_id != streams.server_id or binding.slice.freed:
                raise streams.bad_binding(binding)
        out = target.empty(binding.nbytes, target_stream_value)
        written = out.binding()
        first, second = sorted((streams, there), key=id)  # one lock order: no deadlock
        with first.lock, second.lock:
            stream = streams.get(stream_value)
            target_stream = there.get(target_stream_value)
            poisoned = streams.use(stream, (binding,))
            there.use(target_stream, (written,))
            if not poisoned and self.driver.copy_to_peer(
                stream, binding, target.driver, target_stream, written
            ):
                return out
        self._copy_through_host(binding, stream_value, target, target_stream_value, written, chunk)
        return out

    def _copy_through_host(
        self,
        binding: Binding,
        stream_value: int,
        target: Transfers,
        target_stream_value: int,
        out: Binding,
        chunk: int,
    ) -> None:
        """:meth:`copy_to`'s copy of ``binding`` into ``out``, a new buffer of ``target``,
        through the host in chunks of ``chunk`` bytes (see there); no lock held."""
        nbytes = binding.nbytes
        if nbytes <= chunk:
            read = self.read([binding], stream_value, copy=True)
            target.write_from(out, read, target_stream_value)
            return
        writes: deque[Fence] = deque()
        for start in range(0, nbytes, chunk):
            if len(writes) == 2:
                writes.popleft().wait()
            if out.slice.error is not None:  # a failed chunk poisoned the copy: no more
                return
            size = min(chunk, nbytes - start)
            read = self.read([_part(binding, start, size)], stream_value, copy=True)
            writes.append(target.write_part(_part(out, start, size), read, target_stream_value))
            del read  # its bytes go with the write: held here, they would make a third chunk

    def write_from(
        self, binding: Binding, source: RudaFuture[list[Bytes]], stream_value: int
    ) -> None:
        """Enqueue a write into ``binding`` of the first bytes ``source`` (another device's
        read) yields; clears a poisoned buffer. The host waits for ``source`` unless the
        driver's ``write_deferred`` hands the wait to the stream. A ``ServerError`` of
        ``source`` poisons the buffer and is raised by the stream's next flush, sync or read."""
        if self.captures.open:
            self.captures.refuse("to_client()", stream_value)
        streams = self.streams
        with streams.lock:
            streams.use(streams.get(stream_value), (binding,))
            binding.slice.error = None
        self.write_part(binding, source, stream_value)

    def write_part(
        self, binding: Binding, source: RudaFuture[list[Bytes]], stream_value: int
    ) -> Fence:
        """:meth:`write_from` of a part of a buffer, leaving its poison as it is (an earlier
        part's failure stays); returns a fence after the write (or after the failure)."""
        streams = self.streams
        driver = self.driver
        profiler = self.profiler
        with streams.lock:
            stream = streams.get(stream_value)
            streams.use(stream, (binding,))
            start = profiler.stamp(stream) if profiler.active else None
            if driver.write_deferred(stream, binding, source):
                if start is not None:
                    profiler.note("transfer", f"write {binding.nbytes} B", stream, start)
                return driver.fence(stream)
        try:
            data = source.result()[0]
        except ServerError as exc:
            with streams.lock:
                stream.fail(exc, (binding,), value=stream_value)
                return driver.fence(stream)
        with streams.lock:
            streams.use(stream, (binding,))
            if not data.nbytes:
                return driver.fence(stream)
            start = profiler.stamp(stream) if profiler.active else None  # after the host's wait
            fence = driver.write_owned(stream, binding, data)
            if fence is None:
                driver.write(stream, binding, data)
                fence = driver.fence(stream)
            if start is not None:
                profiler.note("transfer", f"write {binding.nbytes} B", stream, start)
            return fence


def _part(binding: Binding, start: int, nbytes: int) -> Binding:
    """The binding of ``nbytes`` at ``start`` within ``binding`` (same slice, same owner)."""
    return Binding(
        binding.slice, binding.offset_bytes + start, nbytes, binding.server_id, binding.resource
    )
