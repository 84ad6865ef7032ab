"""``ComputeServer``: the execution contract of one device, a facade over the parts that do the
work.

A server is built from a backend's :class:`~.driver.Driver` (the four small interfaces a driver
implements: queues and events, kernels, copies, sharing) and what does not change while it
lives: the device's properties, features, compile options and driver fingerprint. It is
composed of parts, each with public methods, each handed what it needs:

* :class:`~.stream_table.StreamTable`: the streams, the lock, the checks every use of memory on
  a stream goes through, failures recorded on streams, kept owners;
* :class:`~.launches.Launches`: launchers, the general launch path, prepared launches, Validate
  reports and the loaded kernels (:class:`~.kernels.KernelCache`);
* :class:`~.transfers.Transfers`: memory from the host, reads, copies within and between devices;
* :class:`~.sharing.Sharing`: memory shared with other libraries;
* :class:`~.capture.Captures` and :class:`~.profiler.Profiler`.

Every public method takes the lock (through its part); driver hooks are called with it held and
must not block on device work. Error surfacing: a failure of enqueued work (a kernel that does
not build, a kernel that faults on the NumPy device) is recorded on its stream and raised by the
next ``flush``, ``sync`` or read on that stream, naming the kernel. Buffers such a launch could
have written are poisoned: reading them raises that error instead of returning stale data, and a
kernel that takes one as a read-only input is not run (its outputs are poisoned in turn), until
the buffer is written again by ``write`` or by a launch that may write it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Self

from ..ir import ExecutionMode
from .arguments import LaunchArgs
from .cache import EntryOrigin
from .capture import Captures, Recording
from .compiler import CompileOptions, Compiler, RudaTask
from .device import DeviceId
from .device_names import device_name, name_server
from .driver import Bytes, Driver
from .fork import check_new_server, track
from .future import RudaFuture
from .kernels import BuildTarget, KernelCache
from .launches import KernelLauncher, Launches, LaunchSite
from .memory.handle import Binding, Handle
from .memory.management import MemoryConfig, MemoryManagement
from .memory.storage import Storage
from .memory.usage import MemoryUsage
from .process_bound import ProcessBound
from .profile import ProfileTrace
from .profiler import Profiler
from .properties import DeviceProperties, Features
from .sharing import Sharing
from .shutdown import watch
from .stream_table import TICKS, ServerStream, StreamTable
from .transfers import Transfers

__all__ = ["ComputeServer"]


class ComputeServer(ProcessBound):
    """The execution contract of one device (see the module docstring for its parts).

    A backend builds one per device, usually through a subclass whose ``__init__`` makes its
    driver and passes it on, so that :attr:`fork_safe` is checked before the driver is touched.

    :param device_id: the device this server runs on.
    :param storage: the backend's raw page allocator.
    :param driver: the backend's driver.
    :param properties: the device's limits.
    :param features: the device's capabilities.
    :param options: what the device compiles with.
    :param fingerprint: the loaded driver stack's identity (versions of driver, runtime,
        compiler); None keeps compiled kernels and tuning results in this process only.
    :param info: what ``Runtime.enumerate_devices`` needs besides a type id.
    :param memory_config: the pools' configuration.
    """

    #: Whether a process forked from one that used this backend may make new servers of it:
    #: True only for a backend that keeps no state a fork breaks (no driver context, no threads
    #: it did not start itself). Servers made before a fork are never usable in the child
    #: (see :mod:`.fork`).
    fork_safe: ClassVar[bool] = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """:raises ServerUnhealthy: in a forked child, for a backend that is not ``fork_safe``
        and had a server in the parent, before the backend touches its driver."""
        check_new_server(cls)
        return super().__new__(cls)

    def __init__(
        self,
        device_id: DeviceId,
        storage: Storage,
        driver: Driver,
        properties: DeviceProperties,
        features: Features,
        options: CompileOptions,
        *,
        fingerprint: str | None = None,
        info: Any = None,
        memory_config: MemoryConfig | None = None,
    ) -> None:
        self.device_id = device_id
        self.server_id = id(self)
        self.driver = driver
        #: the code generator of this backend
        self.compiler: Compiler = driver.compiler
        self._properties = properties
        self._features = features
        self._options = options
        self._fingerprint = fingerprint
        self._info = info
        #: why this server cannot be used (it was made before a fork), else None
        self.retired: str | None = None
        self.memory = MemoryManagement(
            storage, memory_config or MemoryConfig(), driver.fence, lambda: str(streams.device)
        )
        streams = self.streams = StreamTable(driver, self.memory, self.server_id, device_id)
        self.profiler = Profiler(driver, streams)
        self.captures = Captures(streams)
        self.sharing = Sharing(streams, driver)
        self.transfers = Transfers(streams, driver, self.profiler, self.captures)
        target = BuildTarget(
            options,
            features,
            properties,
            properties.fingerprint(features),
            fingerprint,
            device_id,
        )
        self.launches = Launches(
            streams,
            KernelCache(driver, target, self._retire),
            driver,
            self.profiler,
            self.captures,
            self.sharing,
            properties.max_ruda_count,
        )
        self.compile_stats = self.launches.kernels.stats
        self._properties_fingerprint = target.properties_fingerprint
        track(self)
        watch(self)

    def _retire(self, kernels: list[Any]) -> None:
        self.launches.retire_kernels(kernels)

    # -- what the device is --------------------------------------------------------------------
    @property
    def lock(self) -> Any:
        """Taken by every public method; never held across a call that takes it again. In a
        forked child it is replaced by one that raises (see :mod:`.fork`)."""
        return self.streams.lock

    @lock.setter
    def lock(self, lock: Any) -> None:
        self.streams.lock = lock

    def properties(self) -> DeviceProperties:
        """Limits of the device (computed once, never a driver call per query)."""
        return self._properties

    def features(self) -> Features:
        """Capabilities of the device (computed once)."""
        return self._features

    def compile_options(self) -> CompileOptions:
        """Options this device compiles with (computed once)."""
        return self._options

    def driver_fingerprint(self) -> str | None:
        """Stable identity of the loaded driver stack; None keeps compiled kernels and tuning
        results in this process only."""
        return self._fingerprint

    def properties_fingerprint(self) -> str:
        """Hardware/capability identity, computed once."""
        return self._properties_fingerprint

    def info(self) -> Any:
        """What ``Runtime.enumerate_devices`` needs besides a type id (None by default)."""
        return self._info

    @property
    def cache_origin(self) -> EntryOrigin:
        """The driver and device its persisted kernels are listed under (``ruda cache``); set
        by each client made of it, whose device name errors then use."""
        return self.launches.kernels.origin

    @cache_origin.setter
    def cache_origin(self, origin: EntryOrigin) -> None:
        self.launches.kernels.origin = origin

    def name_device(self, name: str) -> None:
        """Name this server's device as users name it (``"cpu"``, ``"opencl:0"``) in every
        message about it or its memory; each client made of it does, before it enqueues."""
        self.streams.device = name
        name_server(self.server_id, name)

    # -- memory --------------------------------------------------------------------------------
    def sent_instead(self) -> str:
        return f"Send its device's name ({device_name(self.server_id)!r}); see ComputeClient"

    def empty(self, nbytes: int, stream_value: int) -> Handle:
        """See :meth:`Transfers.empty`."""
        return self.transfers.empty(nbytes, stream_value)

    def create(self, data: memoryview, stream_value: int) -> Handle:
        """See :meth:`Transfers.create`."""
        return self.transfers.create(data, stream_value)

    def write(self, binding: Binding, data: memoryview, stream_value: int) -> None:
        """See :meth:`Transfers.write`."""
        self.transfers.write(binding, data, stream_value)

    def read(self, bindings: Sequence[Binding], stream_value: int) -> RudaFuture[list[Bytes]]:
        """See :meth:`Transfers.read`."""
        return self.transfers.read(bindings, stream_value)

    def copy(self, source: Binding, destination: Binding, stream_value: int) -> None:
        """See :meth:`Transfers.copy`."""
        self.transfers.copy(source, destination, stream_value)

    def copy_to(
        self, binding: Binding, stream_value: int, target: ComputeServer, target_stream_value: int
    ) -> Handle:
        """See :meth:`Transfers.copy_to` (``target``: the other device's server)."""
        return self.transfers.copy_to(binding, stream_value, target.transfers, target_stream_value)

    def memory_usage(self) -> MemoryUsage:
        """The pools' accounting."""
        with self.lock:
            return self.memory.usage()

    def memory_cleanup(self) -> None:
        """Give back to the driver the pages of dropped handles whose queued work has finished,
        and the compiled kernels whose tasks are gone; never waits (see
        :meth:`MemoryManagement.cleanup` for memory still in flight)."""
        with self.lock:
            self.memory.cleanup()
            self.launches.kernels.collect()
            self.launches.let_go_retired()

    def loaded_kernels(self) -> int:
        """How many compiled kernels this server keeps loaded now (every mode together), after
        letting go of those whose tasks are gone (see :mod:`.kernels`)."""
        with self.lock:
            kernels = self.launches.kernels
            kernels.collect()
            return len(kernels)

    @property
    def max_loaded_kernels(self) -> int:
        """The most compiled kernels this server keeps loaded (``RUDA_MAX_LOADED_KERNELS``,
        default 1024); setting it lets the least recently looked-up ones go at once. A kernel
        let go is loaded again when it is next launched.

        :raises ValueError: when set below 1.
        """
        return self.launches.kernels.capacity

    @max_loaded_kernels.setter
    def max_loaded_kernels(self, count: int) -> None:
        with self.lock:
            self.launches.kernels.capacity = count

    # -- memory shared with other libraries ----------------------------------------------------
    def dlpack_device(self) -> tuple[int, int] | None:
        """The DLPack ``(device_type, device_id)`` of this device's memory; None when it cannot
        be shared by address."""
        return self.driver.dlpack_device()

    # -- execution -----------------------------------------------------------------------------
    @property
    def capturing(self) -> bool:
        """Whether any stream of this server is being captured now."""
        return bool(self.captures.open)

    def launch(
        self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode, stream_value: int
    ) -> None:
        """Enqueue ``task`` with ``args`` on the stream (see :meth:`KernelLauncher.slow`)."""
        self.launches.launch(task, args, mode, stream_value)

    def launcher(self, task: RudaTask, mode: ExecutionMode, site: LaunchSite) -> KernelLauncher:
        """The launcher of ``task`` in ``mode`` from ``site`` (see :class:`KernelLauncher`);
        keep it, and call its ``fast`` method."""
        return self.launches.launcher(task, mode, site)

    def prepare(
        self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode
    ) -> Callable[[int], None]:
        """Build ``task`` now and return ``replay(stream_value)`` (see
        :meth:`KernelLauncher.prepare`).

        :raises CompilationError: at once, when the kernel does not build.
        """
        return KernelLauncher(self.launches, task, mode, None).prepare(args)

    def begin_capture(self, stream_value: int) -> Recording:
        """Start recording the launches enqueued on ``stream_value`` instead of running them;
        until :meth:`end_capture` or :meth:`abort_capture`, the other enqueueing calls on that
        stream, and every call of the calling thread on another stream of this server, raise
        :class:`CaptureError`.

        :raises CaptureError: when the stream is already being captured or the calling thread is
            capturing another stream of this server (captures do not nest).
        """
        return self.captures.begin(stream_value)

    def end_capture(self, recording: Recording) -> Callable[[int], None]:
        """Stop recording, build every recorded kernel and instantiate the recording once;
        return ``replay(stream_value)``, which enqueues the whole recording on that stream with
        the guarantees of :meth:`launch`. The recorded memory stays alive while
        ``recording.keep`` does (the graph holds it).

        :raises CompilationError: when a recorded kernel does not build (the capture is over).
        """
        return self.captures.end(recording, self.launches, self.transfers)

    def abort_capture(self, recording: Recording) -> None:
        """Stop recording and discard what was recorded (the block raised)."""
        self.captures.abort(recording)

    def flush(self, stream_value: int) -> None:
        """Submit queued work and raise the stream's pending error, if any."""
        if self.captures.open:
            self.captures.refuse("flush()", stream_value)
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value, enqueues=False)
            self.driver.flush(stream)
        streams.raise_pending(stream, stream_value)

    def sync(self, stream_value: int) -> RudaFuture[None]:
        """A future for the completion of everything enqueued on the stream so far. Its result
        raises the stream's pending error or the Validate-mode reports of the launches before
        it not yet raised (an earlier sync's, where its result was never taken); a timed-out
        result names what the device is busy with."""
        if self.captures.open:
            self.captures.refuse("sync()", stream_value)
        with self.streams.lock:
            stream = self.streams.get(stream_value, enqueues=False)
            future, check = self._sync(stream, stream_value)
        return self.streams.explained(future.then(check), stream, "sync()")

    def _sync(
        self, stream: ServerStream, value: int | None = None
    ) -> tuple[RudaFuture[None], Callable[[None], None]]:
        """The driver's sync of the work enqueued on ``stream`` so far, and what its result is
        passed to once done: it lets go of what that work kept alive and raises the error or
        reports owed to stream ``value`` (None: any owed; lock held)."""
        streams = self.streams
        if self.memory.dropped:  # fenced before the sync: free once it resolves
            self.memory.drain()
        log = stream.reports
        if log is not None and log.owners:
            self.launches.fold(stream, log)
        mark = log.mark() if log is not None else 0
        if stream.kept or stream.fenced:
            streams.fence_kept(stream)  # a sync never waits for the backlog: it is the wait
        future = self.driver.sync(stream)
        tick = next(TICKS)

        def check(_: None) -> None:
            with streams.lock:  # nothing queued before the sync needs its kept owners any more
                done = streams.let_go_kept(stream)
                if done is not None:  # kept (with no owners) to be recorded again
                    stream.fenced.appendleft((done, []))
                found = log.settle(mark) if log is not None else None
            streams.raise_pending(stream, value, done=tick, found=found)

        return future, check

    def exit_work(self, deadline: float) -> tuple[list[str], list[str]]:
        """:meth:`~.stream_table.StreamTable.exit_work` with this server's syncs."""
        return self.streams.exit_work(deadline, self._sync)

    def start_profile(self, stream_value: int, stamped: bool = True) -> None:
        """Begin timing every kernel and transfer enqueued on this device, on any stream (with
        ``stamped=False``, on a device without timestamps: the caller times the profile, which
        ends, as the other, by syncing the stream).

        :raises UnsupportedFeature: when stamped and the driver records no device timestamps.
        :raises ServerError: when a profile is already running (profiles do not nest).
        :raises CaptureError: inside a capture on the calling thread or the stream.
        """
        if self.captures.open:
            self.captures.refuse("profile()", stream_value)
        with self.lock:
            self.profiler.start(self.streams.get(stream_value, enqueues=False), stamped)

    def end_profile(self) -> ProfileTrace:
        """Stop timing, wait for the timed work and return its trace (times relative to the
        start of the profile)."""
        with self.lock:
            stopped = self.profiler.stop()
        return self.profiler.end(stopped)
