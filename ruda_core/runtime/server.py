"""``ComputeServer``: the backend execution contract, and the generic half every backend shares.

A backend subclasses :class:`ComputeServer` and fills in the private hooks (``_new_stream``,
``_build``, ``_launch``, ``_write``, ``_read``, ``_fence``, ``_wait``, ``_flush``, ``_sync``)
plus ``properties``/``features``; a launch reaches ``_launch`` (or ``_prepare``) as a
:class:`~.kernels.LoadedKernel` and the client's one :class:`~.arguments.LaunchArgs` record.
The public methods here own everything that does not depend on the driver: argument checks,
memory pools, stream-ordered reuse, cross-stream ordering, error surfacing, Validate-mode
reports and profiling; its compiled kernels (tables, persistent cache, source dumps) are a
:class:`~.kernels.KernelCache`. Public methods take the server's lock; hooks are called with it
held and must not block on device work (except ``_read``'s and ``_sync``'s futures, which block
only when waited on).

Error surfacing: a failure of enqueued work (a kernel that does not build, a kernel that faults
on the NumPy device) is recorded on its stream and raised by the next ``flush``, ``sync`` or
read on that stream, naming the kernel. Buffers such a launch could have written are poisoned:
reading them raises that error instead of returning stale data, and a kernel that takes one as a
read-only input is not run (its outputs are poisoned in turn), until the buffer is written again
by ``write`` or by a launch that may write it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol, Self, TypeVar

import numpy as np

from ..errors import (
    DeviceTimeout,
    InvalidHandle,
    LaunchError,
    ServerError,
    TooManyResources,
    UnsupportedFeature,
)
from ..ir import ExecutionMode
from ..ir.lines import MAX_LINE_ALIGNMENT
from .arguments import LaunchArgs
from .cache import EntryOrigin
from .capture import CapturedCopy, CapturedLaunch, Captures, PreparedStep, Recording
from .compiler import CompiledKernel, CompileOptions, Compiler, RudaTask
from .device import DeviceId
from .dims import RudaCount, RudaDim
from .fork import check_new_server, track
from .future import RudaFuture, wait_until
from .kernels import CompileStats, KernelCache, LoadedKernel
from .memory.handle import Binding, Handle, Page, Slice
from .memory.management import Fence, MemoryConfig, MemoryManagement
from .memory.storage import Storage
from .memory.usage import MemoryUsage
from .nbytes import nbytes_from_env
from .profile import ProfileTrace, Stamp, TraceEvent
from .properties import DeviceProperties, Features
from .reports import REPORT_WORDS, SLAB_NBYTES, ReportLog
from .shutdown import keep_forever, watch
from .stream import StreamId, thread_stream

__all__ = [
    "Bytes",
    "CompileStats",
    "ComputeServer",
    "LaunchSite",
    "ModeLaunch",
    "ServerStream",
]

#: Bytes returned by reads: a read-only ``memoryview`` of format ``"B"`` (``np.frombuffer`` works
#: without a copy; ``bytes(b)`` copies).
Bytes = memoryview

T = TypeVar("T")

_SLAB_ZEROS = memoryview(bytes(SLAB_NBYTES))
#: the chunk of a copy between devices through the host (see ComputeServer.copy_to), unless the
#: environment variable ``RUDA_TRANSFER_CHUNK`` (a size such as ``16MiB``, read at each copy)
#: names another
TRANSFER_CHUNK_NBYTES = 64 << 20
_CHUNK_VARIABLE = "RUDA_TRANSFER_CHUNK"
#: owners kept per stream before they are fenced as one batch (see ComputeServer.keep_alive)
_KEEP_BATCH = 64
#: fenced batches of kept owners a stream holds before the host waits for the oldest: the
#: back-pressure that bounds the launches with borrowed arrays queued ahead of a device (and the
#: arrays they keep alive) to about ``_KEEP_BATCH * (_MAX_KEPT_BATCHES + 1)`` per stream
_MAX_KEPT_BATCHES = 16
_VALIDATE = ExecutionMode.VALIDATE
_CHECKED = ExecutionMode.CHECKED
#: ``LaunchArgs`` without the generated ``__new__``'s Python frame (it is built every launch)
_new_args = tuple.__new__
#: what :meth:`ComputeServer._kernel_launch` returns: ``run(stream, count, dim, bindings,
#: scalars, metadata)``
KernelLaunch = Callable[
    ["ServerStream", RudaCount, RudaDim, Sequence[Binding], Sequence[np.generic], Sequence[int]],
    None,
]


class LaunchSite(Protocol):
    """Where :meth:`ComputeServer.launcher`'s launches come from (a ``ComputeClient``): the
    stream it is pinned to, if any, and its check of a launch's geometry."""

    #: the pinned stream; None: the calling thread's (``StreamId.current()``)
    _stream: StreamId | None

    def _admit(
        self, task: RudaTask, count: RudaCount, dim: RudaDim, scalars: Sequence[np.generic]
    ) -> bool:
        """Check ``count`` and ``dim`` against the device's limits; True when the pair fits
        whatever the scalars (it is then not checked again while it is passed).

        :raises TooManyResources: for a geometry over the limits.
        """
        ...


class ModeLaunch(Protocol):
    """What :meth:`ComputeServer.launcher` returns.

    ``run(count, dim, bindings, scalars, metadata)`` enqueues one launch on its site's stream.
    With ``kept`` (the objects that own memory some bindings borrow, see
    :meth:`~ComputeServer.borrow`) they are kept alive as :meth:`~ComputeServer.keep_alive`
    keeps them, and the stream first waits for another library's stream ``producer``, all under
    the launch's one lock; such a launch is refused while a capture is open (captures keep
    memory through handles only) and then returns False, with nothing enqueued. Otherwise it
    returns None.
    """

    def __call__(
        self,
        count: RudaCount,
        dim: RudaDim,
        bindings: Sequence[Binding],
        scalars: Sequence[np.generic] = (),
        metadata: Sequence[int] = (),
        kept: Sequence[object] | None = None,
        producer: int | None = None,
    ) -> bool | None: ...


class ServerStream:
    """Per-stream state of a server. Backends subclass it to hold their queue."""

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.error: ServerError | None = None
        #: Validate-mode reports since the last sync (made at the first validated launch)
        self.reports: ReportLog | None = None
        #: what keeps other libraries' memory alive for work queued since the last fence of
        #: them (see :meth:`ComputeServer.keep_alive`)
        self.kept: list[object] = []
        #: earlier batches of ``kept``, each with the fence after the work that used it
        self.fenced: deque[tuple[Fence, list[object]]] = deque()
        #: other libraries' stream handles whose queued work the driver itself orders before
        #: this stream's (the stream's own handle; on CUDA, the legacy stream for a blocking one)
        self.ordered_producers: frozenset[int] = frozenset()

    def take_error(self) -> ServerError | None:
        error, self.error = self.error, None
        return error


class _Recording:
    """Operations timed while a profile runs: (kind, name, stream, start, end) stamps."""

    __slots__ = ("base", "ops", "streams")

    def __init__(self, base: Stamp, stream: ServerStream) -> None:
        self.base = base
        self.ops: list[tuple[str, str, ServerStream, Stamp, Stamp]] = []
        self.streams: dict[int, ServerStream] = {stream.slot: stream}


class ComputeServer(ABC):
    """The execution contract of one device (see the module docstring for the split of work).

    :param device_id: the device this server runs on.
    :param storage: the backend's raw page allocator.
    """

    #: The code generator of this backend.
    compiler: Compiler
    #: Streams map onto at most this many backend queues (stream value modulo this).
    max_streams: int = 32
    #: Whether ``_launch`` takes dynamic counts and reads them when the launch executes, off the
    #: host's critical path (the NumPy device's workers do). Such a backend must refuse what
    #: :meth:`dynamic_count_error` refuses, with :meth:`fail`, when it reads the count. Otherwise
    #: (the default) :meth:`launch` resolves a dynamic count itself and ``_launch`` only ever
    #: sees static counts.
    resolves_dynamic_counts: ClassVar[bool] = False
    #: Whether a process forked from one that used this backend may make new servers of it:
    #: True only for a backend that keeps no state a fork breaks (no driver context, no threads
    #: it did not start itself). Servers made before a fork are never usable in the child
    #: (see :mod:`.fork`).
    fork_safe: ClassVar[bool] = False
    #: Whether the driver's own teardown at process exit waits for unfinished work (Intel's
    #: OpenCL runtime finishes every queue when it is unloaded): the exit then ends the process
    #: at once after its bounded wait (see :mod:`.shutdown`) instead of hanging.
    teardown_waits: ClassVar[bool] = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """:raises ServerUnhealthy: in a forked child, for a backend that is not ``fork_safe``
        and had a server in the parent, before the backend touches its driver."""
        check_new_server(cls)
        return super().__new__(cls)

    def __init__(
        self, device_id: DeviceId, storage: Storage, memory_config: MemoryConfig | None = None
    ) -> None:
        self.device_id = device_id
        self.server_id = id(self)
        #: taken by every public method; never held across a call that takes it again. In a
        #: forked child it is replaced by one that raises (see :mod:`.fork`).
        self.lock = threading.Lock()
        #: why this server cannot be used (it was made before a fork), else None
        self.retired: str | None = None
        track(self)
        watch(self)
        self.memory = MemoryManagement(
            storage,
            memory_config or MemoryConfig(),
            self._fence,
            lambda: self.cache_origin.device or str(self.device_id),
        )
        self._streams: dict[int, ServerStream] = {}
        self._fingerprint: str | None = None
        self._profile: _Recording | None = None
        self._capture_state = Captures(self)
        #: open captures by the stream value they record, read on every launch
        self._captures = self._capture_state.open
        #: the driver and device its persisted kernels are listed under (``ruda cache``); set
        #: by each client made of it
        self.cache_origin = EntryOrigin("", "")
        #: built kernels (tables per mode, the persistent cache, source dumps)
        self._kernels = KernelCache(self, self._retire_kernels)
        #: kernels the cache let go, each batch with fences after the work queued before then
        self._retired_kernels: deque[tuple[list[Fence], list[LoadedKernel]]] = deque()
        #: the Checked table of ``_kernels``, read directly by :meth:`launch`
        self._checked_kernels = self._kernels.table(_CHECKED)
        self.compile_stats: CompileStats = self._kernels.stats

    # -- what a backend provides ---------------------------------------------------------------
    @abstractmethod
    def properties(self) -> DeviceProperties:
        """Limits of the device (computed once, never a driver call per query)."""

    @abstractmethod
    def features(self) -> Features:
        """Capabilities of the device (computed once)."""

    @abstractmethod
    def compile_options(self) -> CompileOptions:
        """Options this device compiles with (computed once)."""

    def info(self) -> Any:
        """What ``Runtime.enumerate_devices`` needs besides a type id (None by default)."""
        return None

    def driver_fingerprint(self) -> str | None:
        """Stable identity of the loaded driver stack (versions of driver, runtime, compiler);
        None (the default) keeps compiled kernels and tuning results in this process only."""
        return None

    def _binary(self, built: Any) -> bytes | None:
        """What to persist of what ``_build`` returned (a cubin, a program binary …); None:
        nothing."""
        return None

    def _load_binary(self, compiled: CompiledKernel, binary: bytes) -> Any:
        """Rebuild a kernel from what ``_binary`` returned in an earlier process."""
        raise NotImplementedError(f"{type(self).__name__} persists no binaries")

    def properties_fingerprint(self) -> str:
        """Hardware/capability identity, computed on first call and cached."""
        if self._fingerprint is None:
            self._fingerprint = self.properties().fingerprint(self.features())
        return self._fingerprint

    @abstractmethod
    def _new_stream(self, slot: int) -> ServerStream:
        """Create the backend queue for a stream slot."""

    @abstractmethod
    def _build(self, compiled: CompiledKernel) -> Any:
        """Turn generated source into something ``_launch`` can run.

        :raises CompilationError: with the driver's log when the source does not build.
        """

    @abstractmethod
    def _launch(
        self, stream: ServerStream, task: RudaTask, kernel: LoadedKernel, args: LaunchArgs
    ) -> None:
        """Enqueue one launch of ``kernel`` (``kernel.built`` is what ``_build`` returned) with
        ``args``. Must not wait for the device. ``args.count`` is static unless the backend
        sets :attr:`resolves_dynamic_counts`."""

    @abstractmethod
    def _write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        """Enqueue a copy of ``data`` (exactly ``binding.nbytes``) into ``binding``. The copy
        of the host data must be taken before returning (the caller may reuse its buffer)."""

    def _write_owned(self, stream: ServerStream, binding: Binding, data: memoryview) -> Fence:
        """Enqueue a copy of ``data`` (exactly ``binding.nbytes``) into ``binding``, bytes
        ruda gives up to it (a chunk another device read for :meth:`copy_to`): nobody changes
        them, so a backend may write from them without a copy of its own, holding them until
        the write is done. Returns a fence after the write; once that fence has been waited
        for, the write holds ``data`` no more, and dropping the fence unwaited never waits.
        The default copies them with :meth:`_write`."""
        self._write(stream, binding, data)
        return self._fence(stream)

    @abstractmethod
    def _read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        """Enqueue reads of ``bindings``; the future yields one ``Bytes`` per binding."""

    @abstractmethod
    def _fence(self, stream: ServerStream) -> Fence:
        """A fence after everything enqueued on ``stream`` so far."""

    def _refence(self, stream: ServerStream, fence: Fence) -> Fence:
        """A fence after everything enqueued on ``stream`` so far, made from ``fence``, one of
        this server's that is done and that nobody else holds (a kept batch's, let go). A backend
        whose fences can be recorded again overrides it: making and destroying a CUDA event per
        kept batch costs each launch with borrowed arrays a few tenths of a microsecond on the
        H200 host, more than the rest of keeping them. The default makes a new one."""
        return self._fence(stream)

    @abstractmethod
    def _wait(self, stream: ServerStream, fence: Fence) -> None:
        """Make later work on ``stream`` wait for ``fence`` (without blocking the host)."""

    def _timestamp(self, stream: ServerStream) -> Stamp:
        """Record a device timestamp into ``stream`` (for profiling).

        :raises UnsupportedFeature: by default: the backend cannot time device work.
        """
        raise UnsupportedFeature(f"{type(self).__name__} records no device timestamps")

    def _busy(self, stream: ServerStream) -> str | None:
        """What keeps ``stream`` from being done, for a timed-out wait's message: e.g.
        ``"kernel spin is running"``; None when its work is done or the backend cannot tell
        (the default). Called without the lock, possibly while another thread enqueues; must
        not block."""
        return None

    @abstractmethod
    def _flush(self, stream: ServerStream) -> None:
        """Submit what is queued on ``stream``."""

    @abstractmethod
    def _sync(self, stream: ServerStream) -> RudaFuture[None]:
        """A future that completes when all work enqueued on ``stream`` so far has completed."""

    # -- memory --------------------------------------------------------------------------------
    def empty(self, nbytes: int, stream_value: int) -> Handle:
        """Uninitialised memory of ``nbytes`` bytes, first usable on the given stream. Waits,
        holding the lock, for the oldest releases still queued when the pool would otherwise
        grow past twice the bytes in use (see :class:`MemoryManagement`).

        :raises BufferTooBig: for a request that can never fit.
        :raises OutOfMemory: when the pool is at its ``limit_nbytes`` or the driver is full.
        """
        if self._captures:
            self._capture_state.refuse("empty()", stream_value)
        lock = self.lock
        lock.acquire()  # not ``with``: as in launcher(), for a call made at every allocation
        try:  # _stream(), inlined (_empty is a backend's to override)
            stream = self._streams.get(stream_value % self.max_streams) or self._stream(
                stream_value
            )
            return self._empty(nbytes, stream)
        finally:
            lock.release()

    def create(self, data: memoryview, stream_value: int) -> Handle:
        """Memory holding a copy of ``data`` (a contiguous byte view); waits and raises as
        :meth:`empty`."""
        if self._captures:
            self._capture_state.refuse("create_from_slice()", stream_value)
        with self.lock:
            return self._create(data, self._stream(stream_value))

    def _empty(self, nbytes: int, stream: ServerStream) -> Handle:
        slice_ = self.memory.reserve(nbytes, stream)
        return Handle._new(slice_, self.memory.dropped, self.server_id)

    def _create(self, data: memoryview, stream: ServerStream) -> Handle:
        handle = self._empty(data.nbytes, stream)
        if data.nbytes:
            self._timed_write(stream, handle.binding(), data)
        return handle

    def _timed_write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        if self._profile is None:
            self._write(stream, binding, data)
        else:
            start = self._timestamp(stream)
            self._write(stream, binding, data)
            self._note("transfer", f"write {binding.nbytes} B", stream, start)

    def _note(self, kind: str, name: str, stream: ServerStream, start: Stamp) -> None:
        rec = self._profile
        if rec is not None:
            rec.ops.append((kind, name, stream, start, self._timestamp(stream)))
            rec.streams[stream.slot] = stream

    def write(self, binding: Binding, data: memoryview, stream_value: int) -> None:
        """Enqueue a copy of ``data`` into ``binding``; clears a poisoned buffer."""
        if self._captures:
            self._capture_state.refuse("write()", stream_value)
        with self.lock:
            stream = self._stream(stream_value)
            self._use_bindings(stream, (binding,))
            binding.slice.error = None
            if data.nbytes:
                self._timed_write(stream, binding, data)

    def read(self, bindings: Sequence[Binding], stream_value: int) -> RudaFuture[list[Bytes]]:
        """Enqueue reads; the future yields the bytes or raises the stream's pending error or a
        buffer's poison."""
        if self._captures:
            self._capture_state.refuse("read()", stream_value)
        with self.lock:
            stream = self._stream(stream_value)
            self._use_bindings(stream, bindings)
            if self._profile is None:
                future = self._read(stream, bindings)
            else:
                start = self._timestamp(stream)
                future = self._read(stream, bindings)
                nbytes = sum(b.nbytes for b in bindings)
                self._note("transfer", f"read {nbytes} B", stream, start)

        def check(data: list[Bytes]) -> list[Bytes]:
            self._raise_pending(stream)
            for b in bindings:
                if b.slice.error is not None:
                    raise b.slice.error
            return data

        return self._explained(future.then(check), stream, "read")

    # -- copies within the device ----------------------------------------------------------------
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
        if self._captures and self._capture_state.record(
            (CapturedCopy(source, destination),), stream_value
        ):
            return
        with self.lock:
            stream = self._stream(stream_value)
            self._use_bindings(stream, (source, destination))
            poison = source.slice.error
            if poison is not None:
                self.fail(stream, poison, (destination,))
                return
            destination.slice.error = None
            if not source.nbytes:
                return
            run = self._prepare_copy(source, destination)
            if self._profile is None:
                run(stream)
            else:
                start = self._timestamp(stream)
                run(stream)
                self._note("transfer", f"copy {source.nbytes} B", stream, start)

    def _prepare_copy(
        self, source: Binding, destination: Binding
    ) -> Callable[[ServerStream], None]:
        """A copy of ``source`` into ``destination`` (same size, this server's) as a run that
        enqueues it on a stream (lock held, bindings ordered, neither waiting), as
        :meth:`_prepare` makes for a launch: :meth:`copy` calls it for each copy, a capture
        once and hands it to :meth:`_capture` among the launches' runs. A backend whose
        streams report failures asynchronously records one of the copy's source on
        ``destination`` when the copy runs."""
        raise UnsupportedFeature(f"{type(self).__name__} cannot copy between its buffers")

    # -- copies between devices ----------------------------------------------------------------
    def copy_to(
        self,
        binding: Binding,
        stream_value: int,
        target: ComputeServer,
        target_stream_value: int,
    ) -> Handle:
        """A handle of ``target`` holding a copy of ``binding``'s bytes (``to_client``). The copy
        reads the memory after the work queued on it so far (on any stream of this server) and
        is ordered before the work enqueued later on ``target_stream_value`` (and, through the
        usual cross-stream ordering, on any stream of ``target``).

        A direct device-to-device copy where :meth:`_copy_to_peer` takes the pair; else through
        the host, in chunks of :data:`TRANSFER_CHUNK_NBYTES` (``RUDA_TRANSFER_CHUNK``): per
        chunk a read enqueued here and its write enqueued there by :meth:`write_from` (which
        waits on the host for the read unless ``target`` defers the write to its stream).
        Each chunk is one host copy: the read's bytes, which the write takes over
        (:meth:`_write_owned`) and lets go of once the host has waited for it. Before it reads
        a chunk the host waits for the write of the chunk two before it, so a copy holds at
        most two chunks of host memory besides what the devices hold, and the caller waits
        for all but the last two chunks of a large copy (a copy of one chunk or less waits as
        a single write would). A failure of the source's work (a pending
        error of its stream, a poisoned buffer) poisons the new handle, ends the copy and is
        raised by ``target``'s next flush, sync or read on that stream.

        :raises InvalidHandle: at once, before anything is enqueued: a dropped binding, one of
            another server, or ``target`` being this server.
        :raises ValueError: when ``RUDA_TRANSFER_CHUNK`` is not a size of at least one byte.
        :raises CaptureError: inside a capture of either stream.
        """
        if self._captures:
            self._capture_state.refuse("to_client()", stream_value)
        if target._captures:
            target._capture_state.refuse("to_client()", target_stream_value)
        if target is self:
            raise InvalidHandle(
                f"{binding!r} is already on {self.device_id}: to_client copies between devices. "
                "Use the handle as it is (work on another stream is ordered after its writer)"
            )
        with self.lock:
            if binding.server_id != self.server_id or binding.slice.freed:
                raise self.bad_binding(binding)
        out = target.empty(binding.nbytes, target_stream_value)
        written = out.binding()
        first, second = sorted((self, target), key=id)  # one lock order: no deadlock
        with first.lock, second.lock:
            stream = self._stream(stream_value)
            target_stream = target._stream(target_stream_value)
            poisoned = self._use_bindings(stream, (binding,))
            target._use_bindings(target_stream, (written,))
            if not poisoned and self._copy_to_peer(stream, binding, target, target_stream, written):
                return out
        self._copy_through_host(binding, stream_value, target, target_stream_value, written)
        return out

    def _copy_through_host(
        self,
        binding: Binding,
        stream_value: int,
        target: ComputeServer,
        target_stream_value: int,
        out: Binding,
    ) -> None:
        """:meth:`copy_to`'s copy of ``binding`` into ``out``, a new buffer of ``target``,
        through the host in chunks (see there); no lock held."""
        chunk = nbytes_from_env(_CHUNK_VARIABLE) or TRANSFER_CHUNK_NBYTES
        if chunk < 1:
            raise ValueError(f"{_CHUNK_VARIABLE}=0 is no chunk size; use at least 1 byte")
        nbytes = binding.nbytes
        if nbytes <= chunk:
            target.write_from(out, self.read([binding], stream_value), target_stream_value)
            return
        writes: deque[Fence] = deque()
        for start in range(0, nbytes, chunk):
            if len(writes) == 2:
                writes.popleft().wait()
            if out.slice.error is not None:  # a failed chunk poisoned the copy: no more
                return
            size = min(chunk, nbytes - start)
            read = self.read([_part(binding, start, size)], stream_value)
            writes.append(target._write_part(_part(out, start, size), read, target_stream_value))
            del read  # its bytes go with the write: held here, they would make a third chunk

    def _copy_to_peer(
        self,
        stream: ServerStream,
        binding: Binding,
        target: ComputeServer,
        target_stream: ServerStream,
        out: Binding,
    ) -> bool:
        """Enqueue a direct copy of ``binding`` into ``out``, memory of ``target``, and return
        True; or return False (the default) when this pair of devices copies through the
        host. Called with both servers' locks held and both bindings already ordered on their
        streams; the copy must come after the work queued on ``stream`` and before the work
        queued later on ``target_stream`` and on ``stream`` (which may overwrite the source).
        Must not wait for the device."""
        return False

    def write_from(
        self, binding: Binding, source: RudaFuture[list[Bytes]], stream_value: int
    ) -> None:
        """Enqueue a write into ``binding`` of the first bytes ``source`` (another device's
        read) yields; clears a poisoned buffer. The host waits for ``source`` unless
        :meth:`_write_deferred` hands the wait to the stream. A ``ServerError`` of ``source``
        poisons the buffer and is raised by the stream's next flush, sync or read."""
        if self._captures:
            self._capture_state.refuse("to_client()", stream_value)
        with self.lock:
            self._use_bindings(self._stream(stream_value), (binding,))
            binding.slice.error = None
        self._write_part(binding, source, stream_value)

    def _write_part(
        self, binding: Binding, source: RudaFuture[list[Bytes]], stream_value: int
    ) -> Fence:
        """:meth:`write_from` of a part of a buffer, leaving its poison as it is (an earlier
        part's failure stays); returns a fence after the write (or after the failure). The
        read's bytes go to :meth:`_write_owned`: waiting for the fence lets go of them."""
        with self.lock:
            stream = self._stream(stream_value)
            self._use_bindings(stream, (binding,))
            if self._write_deferred(stream, binding, source):
                return self._fence(stream)
        try:
            data = source.result()[0]
        except ServerError as exc:
            with self.lock:
                self.fail(stream, exc, (binding,))
                return self._fence(stream)
        with self.lock:
            self._use_bindings(stream, (binding,))
            if not data.nbytes:
                return self._fence(stream)
            if self._profile is None:
                return self._write_owned(stream, binding, data)
            start = self._timestamp(stream)
            fence = self._write_owned(stream, binding, data)
            self._note("transfer", f"write {binding.nbytes} B", stream, start)
            return fence

    def _write_deferred(
        self, stream: ServerStream, binding: Binding, source: RudaFuture[list[Bytes]]
    ) -> bool:
        """Enqueue on ``stream`` a write into ``binding`` of ``source``'s first bytes that
        waits for ``source`` on the device's side, not the host's, and return True; False (the
        default) makes :meth:`write_from` wait on the host. The enqueued write must record a
        ``ServerError`` of ``source`` with :meth:`fail` on ``binding`` instead of writing.
        Called with the lock held; must not wait."""
        return False

    def memory_usage(self) -> MemoryUsage:
        with self.lock:
            return self.memory.usage()

    def memory_cleanup(self) -> None:
        """Give back to the driver the pages of dropped handles whose queued work has finished,
        and the compiled kernels whose tasks are gone; never waits (see
        :meth:`MemoryManagement.cleanup` for memory still in flight)."""
        with self.lock:
            self.memory.cleanup()
            self._kernels.collect()
            self._let_go_retired()

    # -- compiled kernels ----------------------------------------------------------------------
    def loaded_kernels(self) -> int:
        """How many compiled kernels this server keeps loaded now (every mode together), after
        letting go of those whose tasks are gone (see :mod:`.kernels`)."""
        with self.lock:
            self._kernels.collect()
            return len(self._kernels)

    @property
    def max_loaded_kernels(self) -> int:
        """The most compiled kernels this server keeps loaded (``RUDA_MAX_LOADED_KERNELS``,
        default 1024); setting it lets the least recently looked-up ones go at once. A kernel
        let go is loaded again when it is next launched.

        :raises ValueError: when set below 1.
        """
        return self._kernels.capacity

    @max_loaded_kernels.setter
    def max_loaded_kernels(self, count: int) -> None:
        with self.lock:
            self._kernels.capacity = count

    def _retire_kernels(self, kernels: list[LoadedKernel]) -> None:
        """Keep ``kernels``, which the kernel cache let go, until the work queued so far on
        every stream is done (lock held): a driver may otherwise free a program that queued
        work still runs."""
        fences = [self._fence(stream) for stream in self._streams.values()]
        self._retired_kernels.append((fences, kernels))
        self._let_go_retired()

    def _let_go_retired(self) -> None:
        """Drop the retired kernels whose work is done (lock held)."""
        retired = self._retired_kernels
        while retired and all(fence.done() for fence in retired[0][0]):
            retired.popleft()

    def _hold_launch(
        self, task: RudaTask, mode: ExecutionMode, hold: Callable[[KernelLaunch | None], None]
    ) -> None:
        """Call ``hold`` with the backend launch of ``task``'s loaded kernel in ``mode``, when
        one is loaded; the kernel cache calls ``hold(None)`` when it lets that kernel go (see
        :meth:`KernelCache.hold`). Takes the lock."""
        with self.lock:
            kernel = self._kernels.hold(task, mode, hold)
            if kernel is not None:
                hold(self._kernel_launch(task, kernel))

    # -- memory shared with other libraries (DLPack, the CUDA array interface) -----------------
    def dlpack_device(self) -> tuple[int, int] | None:
        """The DLPack ``(device_type, device_id)`` of this device's memory; None (the default)
        when its memory cannot be shared by address (OpenCL buffers are not pointers). A backend
        that answers must implement ``_address`` and ``_adopt``."""
        return None

    def _address(self, binding: Binding) -> int:
        """The address of ``binding``'s first byte, as other libraries on this device use it."""
        raise UnsupportedFeature(f"{type(self).__name__} cannot share memory by address")

    def _adopt(self, address: int, nbytes: int) -> object:
        """The page resource (what ``Storage.alloc`` returns) for ``nbytes`` of memory at
        ``address`` that another library allocated."""
        raise UnsupportedFeature(f"{type(self).__name__} cannot use memory by address")

    def _stream_handle(self, stream: ServerStream) -> int | None:
        """The driver's handle of ``stream`` for other libraries (a ``cudaStream_t``); None
        (the default) for a device without such streams."""
        return None

    def _order_consumer(self, fence: Fence, consumer: int | None) -> None:
        """Make another library's work on stream ``consumer`` (a handle in the DLPack stream
        convention) start after ``fence``. The default, for host memory, waits on the host;
        called without the lock."""
        fence.wait()

    def _order_after_producer(self, stream: ServerStream, producer: int) -> None:
        """Make later work on ``stream`` wait for what another library has queued so far on its
        stream ``producer``, one not in ``stream.ordered_producers`` (lock held; must not
        block)."""
        raise UnsupportedFeature(f"{type(self).__name__} has no streams to order with")

    def export(self, binding: Binding, consumer: int | None) -> int:
        """The address of ``binding`` for another library, with that library's stream
        ``consumer`` ordered after every queued use of the memory (``-1``: no ordering).
        Blocks only on a device whose ``_order_consumer`` waits on the host.

        :raises InvalidHandle: for a freed binding or one of another server.
        :raises ServerError: the poison of a buffer a failed kernel left without valid data.
        """
        with self.lock:
            s = binding.slice
            if binding.server_id != self.server_id or s.freed:
                raise self.bad_binding(binding)
            if s.error is not None:
                raise s.error
            address = self._address(binding)
            fence = self._fence(s.stream) if s.stream is not None else None
        if fence is not None and consumer != -1:
            self._order_consumer(fence, consumer)
        return address

    def adopt(
        self,
        address: int,
        nbytes: int,
        owner: object,
        stream_value: int,
        producer: int | None = None,
    ) -> Handle:
        """A handle over ``nbytes`` at ``address`` that another library allocated on this
        device. ``owner`` keeps that memory alive until the handle is dropped and the work
        queued on it is done; the pool never reuses it. With ``producer`` (the other library's
        stream handle), work on ``stream_value`` waits for what that stream has queued.

        :raises UnsupportedFeature: on a device whose memory cannot be used by address.
        """
        with self.lock:
            stream = self._stream(stream_value)
            if producer is not None and producer not in stream.ordered_producers:
                self._order_after_producer(stream, producer)
            resource, lead = self._adopted(address, nbytes)
            slice_ = self.memory.adopt(resource, lead, nbytes, owner, stream)
            return Handle._new(slice_, self.memory.dropped, self.server_id)

    def borrow(self, address: int, nbytes: int) -> Binding:
        """A binding over ``nbytes`` at ``address`` that another library allocated on this
        device, owned by nobody: the caller keeps that memory alive, for each launch that uses
        the binding, with :meth:`keep_alive`. It is refused by captures (which keep memory
        through handles) and never touches the pool; its stream bookkeeping orders ruda's
        streams as a handle's does.

        :raises UnsupportedFeature: on a device whose memory cannot be used by address.
        """
        resource, lead = self._adopted(address, nbytes)
        slice_ = Slice(Page(resource, lead + nbytes, True), lead, nbytes, nbytes)
        return Binding(slice_, lead, nbytes, self.server_id, resource)

    def _adopted(self, address: int, nbytes: int) -> tuple[object, int]:
        """The page resource over memory at ``address`` and the address's offset into it. The
        page starts at the multiple of ``MAX_LINE_ALIGNMENT`` at or below ``address``, so a
        binding's ``offset_bytes`` tells its line alignment as a pool slice's does, and a launch
        that reads such memory in lines refuses a misaligned start before anything runs."""
        lead = address % MAX_LINE_ALIGNMENT if nbytes else 0
        return self._adopt(address - lead, lead + nbytes), lead

    def keep_alive(self, stream_value: int, owners: Sequence[object], producer: int | None) -> None:
        """Keep ``owners`` alive until a fence recorded on the stream after this call is done
        (they are fenced in batches, and at each ``sync``), so until the work already enqueued
        there is done: call it right after enqueueing the work that uses their memory. With
        ``producer`` (another library's stream handle) other than the stream's own, later work
        on the stream first waits for what ``producer`` has queued: for that, call it before.
        A launcher's ``run`` with ``kept`` does both under the launch's one lock."""
        with self.lock:
            stream = self._stream(stream_value)
            if producer is not None and producer not in stream.ordered_producers:
                self._order_after_producer(stream, producer)
            backlog = self._keep(stream, owners)
        if backlog is not None:
            backlog.wait()

    def _keep(self, stream: ServerStream, owners: Sequence[object]) -> Fence | None:
        """Add ``owners`` to the stream's kept batch (lock held). A full batch is fenced first:
        the owners added now wait for a later fence. Returns what the caller must wait for once
        the lock is released, as :meth:`_fence_kept`."""
        backlog = self._fence_kept(stream) if len(stream.kept) >= _KEEP_BATCH else None
        stream.kept += owners
        return backlog

    def _fence_kept(self, stream: ServerStream) -> Fence | None:
        """Fence the stream's kept owners as one batch; let go of batches whose work is done,
        recording the last of their fences again for the new batch (lock held). Returns the
        oldest batch's fence when more than :data:`_MAX_KEPT_BATCHES` are still in flight: the
        caller waits for it once the lock is released (never with it: a worker of this device
        may need another server's lock that a thread waiting for this one holds), so a launch
        loop with borrowed arrays cannot run unboundedly ahead of the device."""
        done = self._let_go_kept(stream)
        fenced = stream.fenced
        if stream.kept:
            fence = self._fence(stream) if done is None else self._refence(stream, done)
            fenced.append((fence, stream.kept))
            stream.kept = []
        return fenced[0][0] if len(fenced) > _MAX_KEPT_BATCHES else None

    def _let_go_kept(self, stream: ServerStream) -> Fence | None:
        """Let go of the stream's kept batches whose work is done (lock held); the last of
        their fences, which nobody holds any more, or None."""
        fenced = stream.fenced
        done = None
        while fenced and fenced[0][0].done():
            done = fenced.popleft()[0]
        return done

    @property
    def capturing(self) -> bool:
        """Whether any stream of this server is being captured now."""
        return bool(self._captures)

    def stream_handle(self, stream_value: int) -> int | None:
        """The driver's handle of a stream for other libraries (what a DLPack producer is asked
        to order its work before), None on a device without such streams."""
        with self.lock:
            return self._stream_handle(self._stream(stream_value))

    def last_stream_handle(self, binding: Binding) -> int | None:
        """The driver's handle of the stream that last used ``binding`` (what the CUDA array
        interface calls the producer's stream), None when none did or the device has no such
        streams."""
        with self.lock:
            stream = binding.slice.stream
            return None if stream is None else self._stream_handle(stream)

    # -- execution -----------------------------------------------------------------------------
    def launch(
        self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode, stream_value: int
    ) -> None:
        """Enqueue ``task`` with ``args``. Build failures, poisoned inputs and dynamic counts beyond
        ``max_ruda_count`` are recorded on the stream and raised at its next flush, sync or
        read; the task then does not run.

        Nothing here waits for the device while holding the lock. Two cases wait without it:
        a dynamic count on a backend that does not resolve it itself (see
        :attr:`resolves_dynamic_counts`) waits for the work before it on the stream and is read
        back; a validated launch waits for the oldest report read while its stream's reads lag
        :data:`~.reports.MAX_FOLDS` slabs behind.
        """
        if self._captures and self._capture_state.record(
            (CapturedLaunch(task, args, mode),), stream_value
        ):
            return
        bindings = args.bindings
        dynamic = args.count.binding
        if dynamic is not None and not self.resolves_dynamic_counts:
            resolved = self._resolve_count(task, dynamic, bindings, stream_value)
            if resolved is None:
                return
            args = LaunchArgs(resolved, args.dim, bindings, args.scalars, args.metadata)
            dynamic = None
        with self.lock:
            # _stream() and KernelCache.get() inlined for the common case: this runs every launch
            stream = self._streams.get(stream_value % self.max_streams)
            if stream is None:
                stream = self._stream(stream_value)
            poisoned = self._use_bindings(stream, bindings)
            if dynamic is not None:
                self._use_bindings(stream, (dynamic,))
            kernel = self._checked_kernels.get(task.key) if mode is _CHECKED else None
            if kernel is None:
                try:
                    kernel = self._kernels.get(task, mode)
                except ServerError as exc:
                    self.fail(stream, exc, bindings, task)
                    return
            count = args[0]
            if (  # the common case, without _enqueue's call: nothing of it applies
                not poisoned
                and mode is _CHECKED
                and dynamic is None
                and self._profile is None
                and count.x
                and count.y
                and count.z
            ):
                self._launch(stream, task, kernel, args)
                return
            backlog = self._enqueue(stream, task, mode, kernel, args)
        if backlog is not None:
            _settle(backlog)

    def launcher(self, task: RudaTask, mode: ExecutionMode, site: LaunchSite) -> ModeLaunch:
        """``launch(task, LaunchArgs(count, dim, bindings, scalars, metadata), mode,
        stream_value)`` on ``site``'s stream, after ``site._admit`` of the geometry, as one
        function ``run(count, dim, bindings, scalars, metadata)``, with what is fixed per
        (task, mode) looked up once: the same checks, bookkeeping, ordering and error surfacing,
        and one lock acquisition (with ``kept``: :meth:`keep_alive`'s too, see
        :class:`ModeLaunch`). A (count, dim) pair admitted as fitting is not checked again while
        it is passed (both are frozen: compared by identity). Anything but the common case
        (Validate, an open capture, a profile, a dynamic or empty count, a poisoned input, a
        kernel not built yet, a new stream) takes :meth:`launch` itself."""
        launch = self.launch
        streams = self._streams
        memory = self.memory
        dropped = memory.dropped
        captures = self._captures
        server_id = self.server_id
        n_streams = self.max_streams
        admit = site._admit
        local = thread_stream
        #: the backend's launch of the loaded kernel, found once; None again when the kernel
        #: cache lets the kernel go (it calls ``hold(None)``, under the lock)
        direct: KernelLaunch | None = None
        #: the (count, dim) last admitted as fitting, with a static, non-empty count
        fits: tuple[RudaCount, RudaDim] | None = None

        def general(
            count: RudaCount,
            dim: RudaDim,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic],
            metadata: Sequence[int],
            stream_value: int,
            kept: Sequence[object] | None,
            producer: int | None,
        ) -> bool | None:
            if kept is not None:
                if captures:
                    return False
                if producer is not None:
                    self.keep_alive(stream_value, (), producer)
            launch(
                task,
                _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata)),
                mode,
                stream_value,
            )
            if kept is not None:  # after the launch: a fence of the batch then covers it
                self.keep_alive(stream_value, kept, None)
            return None

        def validated(
            count: RudaCount,
            dim: RudaDim,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic] = (),
            metadata: Sequence[int] = (),
            kept: Sequence[object] | None = None,
            producer: int | None = None,
        ) -> bool | None:
            admit(task, count, dim, scalars)
            stream = site._stream
            value = (stream if stream is not None else StreamId.current()).value
            return general(count, dim, bindings, scalars, metadata, value, kept, producer)

        if mode is _VALIDATE:  # every Validate launch takes launch(), which reads the flags back
            return validated

        def hold(found: KernelLaunch | None) -> None:
            nonlocal direct
            direct = found

        def run(
            count: RudaCount,
            dim: RudaDim,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic] = (),
            metadata: Sequence[int] = (),
            kept: Sequence[object] | None = None,
            producer: int | None = None,
        ) -> bool | None:
            nonlocal direct, fits
            pinned = site._stream  # the site's execution stream, inlined
            if pinned is None:
                pinned = getattr(local, "stream", None) or StreamId.current()
            stream_value = pinned.value
            last = fits
            if last is None or last[0] is not count or last[1] is not dim:
                fitting = admit(task, count, dim, scalars)  # False: checked for these scalars
                if count.binding is not None or not (count.x and count.y and count.z):
                    return general(  # a dynamic or empty count: launch() handles it
                        count, dim, bindings, scalars, metadata, stream_value, kept, producer
                    )
                if fitting:
                    fits = (count, dim)
            stream = streams.get(stream_value % n_streams)
            if direct is None and stream is not None:
                self._hold_launch(task, mode, hold)  # sets ``direct`` when the kernel is loaded
            enqueue = direct
            if enqueue is None or stream is None or captures or self._profile is not None:
                args = (count, dim, bindings, scalars, metadata)
                return general(*args, stream_value, kept, producer)
            backlog: Fence | None = None  # the oldest kept batch, when too many are in flight
            lock = self.lock  # read each time: a fork replaces it
            lock.acquire()  # not ``with``: its protocol costs as much again, on every launch
            try:
                if dropped:
                    memory.drain()
                poisoned = False
                for b in bindings:  # the common case: ours, live, clean and last used here
                    s = b.slice
                    if (
                        s.stream is not stream
                        or s.error is not None
                        or s.freed
                        or b.server_id != server_id
                    ):  # anything else: the full checks, which raise, order or find poison
                        poisoned = self._use_bindings(stream, bindings)
                        break
                if kept is not None:  # _keep(), inlined; ordered before the launch
                    if producer is not None and producer not in stream.ordered_producers:
                        self._order_after_producer(stream, producer)
                    if len(stream.kept) >= _KEEP_BATCH:
                        backlog = self._fence_kept(stream)
                    stream.kept.extend(kept)
                if poisoned or enqueue is not direct:  # or its kernel was let go since
                    args = _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata))
                    self._enqueue_loaded(stream, task, mode, args)
                else:
                    enqueue(stream, count, dim, bindings, scalars, metadata)
            finally:
                lock.release()
            if backlog is not None:
                backlog.wait()
            return None

        return run

    def _enqueue_loaded(
        self, stream: ServerStream, task: RudaTask, mode: ExecutionMode, args: LaunchArgs
    ) -> None:
        """:meth:`_enqueue` of ``task``'s kernel, loaded again if it was let go; a failed build
        is recorded on ``stream`` (lock held; not for Validate, whose backlog it drops)."""
        try:
            kernel = self._kernels.get(task, mode)
        except ServerError as exc:
            self.fail(stream, exc, args.bindings, task)
            return
        self._enqueue(stream, task, mode, kernel, args)

    def _kernel_launch(self, task: RudaTask, kernel: LoadedKernel) -> KernelLaunch:
        """``_launch`` of one built kernel as one function ``run(stream, count, dim, bindings,
        scalars, metadata)``, made by :meth:`launcher` once per kernel and called under
        the lock. A backend overrides it to look up what is fixed per kernel once; the default
        calls ``_launch``."""
        backend = self._launch

        def run(
            stream: ServerStream,
            count: RudaCount,
            dim: RudaDim,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic],
            metadata: Sequence[int],
        ) -> None:
            backend(
                stream,
                task,
                kernel,
                _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata)),
            )

        return run

    def _enqueue(
        self,
        stream: ServerStream,
        task: RudaTask,
        mode: ExecutionMode,
        kernel: LoadedKernel,
        args: LaunchArgs,
    ) -> RudaFuture[Any] | None:
        """The launch of a loaded kernel whose bindings are ordered on ``stream`` (lock held).
        Returns the report read a validated launch must wait for once the lock is released
        (see :meth:`launch`), else None."""
        count, bindings = args[0], args[2]  # read the cheap way: this runs on every launch
        if not (count.x and count.y and count.z) and count.binding is None:
            return None  # an empty launch: nothing runs, nothing is written
        for b in bindings:
            if b.slice.error is not None:  # rare: resolve poison only when there is some
                poisoned = self.poisoned_input(task, bindings)
                if poisoned is not None:
                    self.fail(stream, poisoned, bindings, task)
                    return None
                for k, written in enumerate(bindings):
                    if task.writes(k):
                        written.slice.error = None
                break
        backlog = None
        if mode is _VALIDATE:
            count, dim, _, scalars, metadata = args
            n = len(bindings)  # the report is the last array: its length the last length
            log = self._report_log(stream)
            report = log.take_slot((task.name, kernel.compiled.report_names))
            metadata = [*metadata[:n], REPORT_WORDS, *metadata[n:]]
            args = LaunchArgs(count, dim, [*bindings, report], scalars, metadata)
            backlog = log.backlog()
        if self._profile is None:
            self._launch(stream, task, kernel, args)
        else:
            start = self._timestamp(stream)
            self._launch(stream, task, kernel, args)
            self._note("kernel", task.name, stream, start)
        return backlog

    def prepare(
        self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode
    ) -> Callable[[int], None]:
        """Build ``task`` now and return ``replay(stream_value)``, which enqueues this exact
        launch again with everything that does not change precomputed by the backend. A replay
        keeps every guarantee of :meth:`launch` (ordering, poisoning, profiling, Validate), and
        inside a capture of its stream it is recorded like a launch.

        :raises CompilationError: at once, when the kernel does not build.
        """
        with self.lock:
            step = self._prepare_step(task, args, mode)
        return self._replayer(step)

    def _prepare_step(self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode) -> PreparedStep:
        """Freeze ``args``, build the kernel and let the backend precompute the launch (lock
        held).

        :raises CompilationError: when the kernel does not build.
        """
        count, dim, bindings, scalars, metadata = args
        args = LaunchArgs(count, dim, tuple(bindings), tuple(scalars), tuple(metadata))
        kernel = self._kernels.get(task, mode)
        fast = None
        if mode is not _VALIDATE and count.binding is None and count.num_cubes:
            fast = self._prepare(task, kernel, args)
        return PreparedStep(task, args, mode, kernel, fast)

    def _replayer(self, step: PreparedStep) -> Callable[[int], None]:
        """``replay(stream_value)`` of one prepared launch (it takes the lock itself)."""
        task, args, mode, kernel, fast = step
        frozen = args.bindings
        dynamic = args.count.binding
        recorded = (CapturedLaunch(task, args, mode),)

        def replay(stream_value: int) -> None:
            if self._captures and self._capture_state.record(recorded, stream_value):
                return
            if dynamic is not None and not self.resolves_dynamic_counts:
                self.launch(task, args, mode, stream_value)
                return
            with self.lock:
                stream = self._streams.get(stream_value % self.max_streams)  # _stream(), inlined
                if stream is None:
                    stream = self._stream(stream_value)
                poisoned = self._use_bindings(stream, frozen)
                if fast is not None and self._profile is None and not poisoned:
                    fast(stream)
                    return
                if dynamic is not None:
                    self._use_bindings(stream, (dynamic,))
                backlog = self._enqueue(stream, task, mode, kernel, args)
            if backlog is not None:
                _settle(backlog)

        return replay

    def _prepare(
        self, task: RudaTask, kernel: LoadedKernel, args: LaunchArgs
    ) -> Callable[[ServerStream], None]:
        """Precompute one launch of ``kernel`` with ``args`` (whose sequences are tuples); the
        result enqueues it on a stream (lock held, bindings ordered). The default precomputes
        nothing; backends override it to pack arguments once."""

        def run(stream: ServerStream) -> None:
            self._launch(stream, task, kernel, args)

        return run

    def _capture(
        self, runs: Sequence[Callable[[ServerStream], None]]
    ) -> Callable[[ServerStream], None]:
        """Turn a capture into one replay: ``runs`` are what :meth:`_prepare` returned for each
        recorded launch, in order (at least one). The result enqueues them all on a stream, with
        the lock held, the bindings ordered, none poisoned and no profile running; it must not
        wait for the device. Called once per capture, lock held. The default calls each run in
        turn; a backend overrides it to enqueue the recording as one unit (a CUDA graph, an
        OpenCL command buffer, one worker command).
        """

        def run(stream: ServerStream) -> None:
            for each in runs:
                each(stream)

        return run

    # -- capture (see :mod:`.capture`) ---------------------------------------------------------
    def begin_capture(self, stream_value: int) -> Recording:
        """Start recording the launches enqueued on ``stream_value`` instead of running them;
        until :meth:`end_capture` or :meth:`abort_capture`, the other enqueueing calls on that
        stream, and every call of the calling thread on another stream of this server, raise
        :class:`CaptureError`.

        :raises CaptureError: when the stream is already being captured or the calling thread is
            capturing another stream of this server (captures do not nest).
        """
        return self._capture_state.begin(stream_value)

    def end_capture(self, recording: Recording) -> Callable[[int], None]:
        """Stop recording, build every recorded kernel and instantiate the recording once with
        :meth:`_capture`; return ``replay(stream_value)``, which enqueues the whole recording
        on that stream with the guarantees of :meth:`launch`. The recorded memory stays alive
        while ``recording.keep`` does (the graph holds it).

        :raises CompilationError: when a recorded kernel does not build (the capture is over).
        """
        return self._capture_state.end(recording)

    def abort_capture(self, recording: Recording) -> None:
        """Stop recording and discard what was recorded (the block raised)."""
        self._capture_state.abort(recording)

    def flush(self, stream_value: int) -> None:
        """Submit queued work and raise the stream's pending error, if any."""
        if self._captures:
            self._capture_state.refuse("flush()", stream_value)
        with self.lock:
            stream = self._stream(stream_value)
            self._flush(stream)
        self._raise_pending(stream)

    def sync(self, stream_value: int) -> RudaFuture[None]:
        """A future for the completion of everything enqueued on the stream so far. Its result
        raises the stream's pending error or a Validate-mode report."""
        if self._captures:
            self._capture_state.refuse("sync()", stream_value)
        with self.lock:
            stream = self._stream(stream_value)
            if self.memory.dropped:  # fenced before the sync: free once it resolves
                self.memory.drain()
            log = stream.reports
            if log is not None and log.owners:
                self._fold(stream, log)
            folds, tally = log.take() if log is not None else ([], None)
            if stream.kept or stream.fenced:
                self._fence_kept(stream)  # a sync never waits for the backlog: it is the wait
            future = self._sync(stream)

        def check(_: None) -> None:
            with self.lock:  # nothing queued before the sync needs its kept owners any more
                done = self._let_go_kept(stream)
                if done is not None:  # kept (with no owners) to be recorded again
                    stream.fenced.appendleft((done, []))
            self._raise_pending(stream)
            if tally is not None:
                for read, owners in folds:  # complete: each was enqueued before the sync
                    tally.add(read.result()[0], owners)
                error = tally.error()
                if error is not None:
                    raise error

        return self._explained(future.then(check), stream, "sync()")

    def start_profile(self, stream_value: int) -> None:
        """Begin timing every kernel and transfer enqueued on this device, on any stream.

        :raises UnsupportedFeature: when the backend records no device timestamps.
        :raises ServerError: when a profile is already running (profiles do not nest).
        :raises CaptureError: inside a capture on the calling thread or the stream.
        """
        if self._captures:
            self._capture_state.refuse("profile()", stream_value)
        with self.lock:
            if self._profile is not None:
                raise ServerError(f"a profile is already running on {self.device_id}")
            stream = self._stream(stream_value)
            self._profile = _Recording(self._timestamp(stream), stream)

    def end_profile(self) -> ProfileTrace:
        """Stop timing, wait for the timed work and return its trace (times relative to the
        start of the profile)."""
        with self.lock:
            rec, self._profile = self._profile, None
            if rec is None:
                raise ServerError(f"no profile is running on {self.device_id}")
            waits = [self._sync(s) for s in rec.streams.values()]
        for w in waits:
            w.result()
        spans = [
            (kind, name, stream.slot, start.ns_since(rec.base), end.ns_since(rec.base))
            for kind, name, stream, start, end in rec.ops
        ]
        # another stream may have started before the base stamp's stream reached it
        shift = min((span[3] for span in spans), default=0)
        shift = min(shift, 0)
        events = tuple(
            TraceEvent(name, kind, slot, start - shift, end - shift)
            for kind, name, slot, start, end in spans
        )
        return ProfileTrace(str(self.device_id), events)

    def busy(self) -> list[str]:
        """What every stream of this server that is not done is doing, as far as the backend
        can tell (``"stream 0 of opencl:0: kernel spin is running"``); never blocks."""
        device = self.cache_origin.device or str(self.device_id)
        return [
            f"stream {s.slot} of {device}: {doing}"
            for s in list(self._streams.values())
            if (doing := self._busy(s)) is not None
        ]

    def unfinished_work(self, deadline: float) -> list[str]:
        """Wait until ``deadline`` (a ``time.monotonic()`` time) for the work queued so far on
        every stream, and return a line for each stream still not done then, naming what it is
        doing when the backend can tell (used at interpreter exit, see :mod:`.shutdown`). A
        server retired by a fork has none. Never raises the work's errors."""
        if self.retired is not None:
            return []
        device = self.cache_origin.device or str(self.device_id)
        if not self.lock.acquire(timeout=max(deadline - time.monotonic(), 0)):
            return [f"{device}: a thread held its server past the exit's wait"]
        try:
            syncs = [(s, self._sync(s)) for s in self._streams.values()]
        finally:
            self.lock.release()
        unfinished = []
        for stream, future in syncs:
            if not wait_until(future.done, max(deadline - time.monotonic(), 0)):
                doing = self._busy(stream) or "its queued work has not finished"
                unfinished.append(f"stream {stream.slot} of {device}: {doing}")
                keep_forever(future)  # freeing a driver's event may wait for its work
        return unfinished

    def _explained(self, future: RudaFuture[T], stream: ServerStream, what: str) -> RudaFuture[T]:
        """``future`` whose timed-out ``result`` raises a :class:`DeviceTimeout` naming what
        the device's streams are still doing."""

        def wait(timeout: float | None) -> T:
            try:
                return future.result(timeout)
            except DeviceTimeout:
                raise
            except TimeoutError as exc:
                busy = self.busy()
                device = self.cache_origin.device or str(self.device_id)
                raise DeviceTimeout(
                    f"{what} of stream {stream.slot} on {device} was not complete "
                    f"within {timeout} s; "
                    + (
                        f"still busy: {'; '.join(busy)}. A kernel that never ends holds up "
                        "the work queued after it, and on a device that runs one kernel at a "
                        "time every other stream's work too: fix its loop's exit condition"
                        if busy
                        else "no kernel of this device is known to be running; wait longer"
                    )
                ) from exc

        return RudaFuture(wait, future.done)

    def fail(
        self,
        stream: ServerStream,
        error: ServerError,
        bindings: Sequence[Binding],
        task: RudaTask | None = None,
    ) -> None:
        """Record a failure of enqueued work: the stream's first pending error, and poison on
        every buffer the work could have written. Backends call this from their queues."""
        if stream.error is None:
            stream.error = error
        for k, b in enumerate(bindings):
            if task is None or task.writes(k):
                b.slice.error = error

    def dynamic_count_error(
        self, task: RudaTask, binding: Binding, counts: tuple[int, int, int]
    ) -> ServerError | None:
        """Why ``task`` must not run with the dynamic count ``counts`` read from ``binding``
        once the work before it is done: a ``LaunchError`` when the binding is poisoned, a
        ``TooManyResources`` when an axis exceeds ``max_ruda_count``; None when it may run."""
        poison = binding.slice.error
        if poison is not None:
            error = LaunchError(
                f"kernel {task.name} was not run: its dynamic RudaCount holds no valid data "
                f"after an earlier failure ({poison})"
            )
            error.__cause__ = poison
            return error
        limit = self.properties().max_ruda_count
        if counts[0] <= limit[0] and counts[1] <= limit[1] and counts[2] <= limit[2]:
            return None
        return TooManyResources(
            f"kernel {task.name} was not run: its dynamic RudaCount{counts} exceeds the "
            f"cube-count limit {limit} of {self.device_id}. Clamp the count the kernel writes, "
            "or loop over cubes in the kernel"
        )

    def poisoned_input(self, task: RudaTask, bindings: Sequence[Binding]) -> LaunchError | None:
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

    def bad_binding(self, binding: Binding) -> InvalidHandle:
        """The error for a binding of a dropped handle or of another server."""
        if binding.slice.freed:
            return InvalidHandle(
                f"{binding!r} belongs to a handle that was dropped; keep the Handle alive"
            )
        return InvalidHandle(
            f"{binding!r} belongs to another device's server, not {self.device_id}; copy the "
            "data to this device first"
        )

    # -- internals -----------------------------------------------------------------------------
    def _stream(self, value: int) -> ServerStream:
        slot = value % self.max_streams
        stream = self._streams.get(slot)
        if stream is None:
            stream = self._streams[slot] = self._new_stream(slot)
        return stream

    def _use_bindings(self, stream: ServerStream, bindings: Sequence[Binding]) -> bool:
        """Refuse foreign or freed bindings; order cross-stream use after the last user; return
        whether any binding is poisoned. Handles dropped since the last memory operation are
        fenced first, before this work, so their memory is free as soon as the work queued
        before the drop is done."""
        if self.memory.dropped:
            self.memory.drain()
        server_id = self.server_id
        poisoned = False
        for b in bindings:
            s = b.slice
            if b.server_id != server_id or s.freed:
                raise self.bad_binding(b)
            if s.stream is not stream:
                if s.stream is not None:
                    self._wait(stream, self._fence(s.stream))
                s.stream = stream
            if s.error is not None:
                poisoned = True
        return poisoned

    def _resolve_count(
        self, task: RudaTask, binding: Binding, bindings: Sequence[Binding], stream_value: int
    ) -> RudaCount | None:
        """The static count a dynamic count holds once the work before it on the stream is
        done: reads it back, waiting without the lock. None when nothing is to run: a zero
        axis, or a count refused (poisoned, or beyond ``max_ruda_count``) and recorded."""
        with self.lock:
            stream = self._stream(stream_value)
            self._use_bindings(stream, bindings)  # refused before anything is poisoned
            self._use_bindings(stream, (binding,))
            read = self._read(stream, [binding])
        words = np.frombuffer(read.result()[0], dtype=np.uint32)
        counts = (int(words[0]), int(words[1]), int(words[2]))
        error = self.dynamic_count_error(task, binding, counts)
        if error is not None:
            with self.lock:
                self.fail(stream, error, bindings, task)
            return None
        return RudaCount(*counts) if min(counts) > 0 else None

    def _report_log(self, stream: ServerStream) -> ReportLog:
        """The stream's report log with a free slot: made at its first validated launch, its
        slab folded when full (lock held)."""
        log = stream.reports
        if log is None:
            log = stream.reports = ReportLog(self._create(_SLAB_ZEROS, stream))
        elif log.full:
            self._fold(stream, log)
        return log

    def _fold(self, stream: ServerStream, log: ReportLog) -> None:
        """Enqueue a read of the slab and then its zeroing; tally the folds already read."""
        slab = log.slab.binding()
        log.fold(self._read(stream, [slab]))
        self._write(stream, slab, _SLAB_ZEROS)
        failed = log.harvest()
        if failed is not None:
            self.fail(stream, failed, ())

    def _raise_pending(self, stream: ServerStream) -> None:
        with self.lock:
            error = stream.take_error()
        if error is not None:
            raise error


def _part(binding: Binding, start: int, nbytes: int) -> Binding:
    """The binding of ``nbytes`` at ``start`` within ``binding`` (same slice, same owner)."""
    return Binding(
        binding.slice, binding.offset_bytes + start, nbytes, binding.server_id, binding.resource
    )


def _settle(future: RudaFuture[Any]) -> None:
    """Wait for ``future`` without raising: its outcome is remembered and raised by whoever
    takes its result (for report reads: the next sync)."""
    with contextlib.suppress(ServerError):
        future.result()
