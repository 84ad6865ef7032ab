"""The launch path of a server: one :class:`KernelLauncher` per (kernel, mode, site).

Every launch goes through a launcher. ``kernel.launch`` keeps one per client (the site) and calls
its :attr:`~KernelLauncher.fast` method, made once per launcher with what is fixed per (task,
mode) looked up once: the site's geometry check (skipped for a (count, dim) pair it already
admitted), one lock, the bindings' common case (this device's, live, clean, last used on this
stream), kept owners and producer ordering, and the driver's launch of the loaded kernel
(:meth:`~.driver.KernelDriver.kernel_launch`). Everything else (Validate, an open capture, a
profile, a dynamic or empty count, a poisoned input, a kernel not loaded yet, a new stream)
takes its :meth:`~KernelLauncher.slow` method, which ``ComputeClient.launch`` and
``launch_unchecked`` use directly, through a launcher made for the call. ``prepare`` freezes one
launch into a replay of the same launcher, and a capture's recorded launches replay through
prepared steps. Imports no driver.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from ..errors import LaunchError, ServerError, TooManyResources
from ..ir import ExecutionMode
from .arguments import LaunchArgs
from .capture import CapturedLaunch
from .compiler import RudaTask
from .dims import CountLike, DimLike, RudaCount, RudaDim, launch_geometry
from .future import RudaFuture
from .host_memory import trim
from .kernels import KernelCache, LoadedKernel
from .limits import wide_launch_error
from .memory.handle import Binding
from .memory.management import Fence
from .reports import REPORT_WORDS, SLAB_NBYTES, ReportLog
from .stream import StreamId, thread_stream
from .stream_table import (
    KEEP_BATCH,
    TICKS,
    ServerStream,
    StreamTable,
    poisoned_input,
    rewritten,
)

if TYPE_CHECKING:
    from .capture import Captures
    from .driver import Driver, KernelLaunch, Run
    from .profiler import Profiler
    from .sharing import Sharing

__all__ = [
    "KernelLauncher",
    "LaunchSite",
    "Launches",
    "PreparedStep",
    "dynamic_count_error",
]

_VALIDATE = ExecutionMode.VALIDATE
_CHECKED = ExecutionMode.CHECKED
#: ``LaunchArgs`` without the generated ``__new__``'s Python frame (it is built every launch)
_new_args = tuple.__new__
_SLAB_ZEROS = memoryview(bytes(SLAB_NBYTES))
#: kernels dropped between two trims of the host's free memory (a trim takes milliseconds; a
#: process that churns kernels keeps at most this many kernels' freed build memory)
TRIM_EVERY = 64


class LaunchSite(Protocol):
    """Where a launcher's launches come from (a ``ComputeClient``): the stream it is pinned
    to, if any, and its check of a launch's geometry."""

    #: the pinned stream; None: the calling thread's (``StreamId.current()``)
    pinned: StreamId | None

    def admit(
        self, task: RudaTask, count: RudaCount, dim: RudaDim, scalars: Sequence[np.generic]
    ) -> bool:
        """Check ``count`` and ``dim`` against the device's limits; True when the pair fits
        whatever the scalars (it is then not checked again while it is passed).

        :raises TooManyResources: for a geometry over the limits.
        """
        ...


class PreparedStep(NamedTuple):
    """A launch checked and built once (for ``prepare`` and captures): its arguments with tuples
    for sequences, its loaded kernel, and what the driver's ``prepare`` made of it (None where
    the general path must run each time: Validate, a dynamic or an empty count)."""

    task: RudaTask
    args: LaunchArgs
    mode: ExecutionMode
    kernel: LoadedKernel
    fast: Run | None


def dynamic_count_error(
    task: RudaTask,
    binding: Binding,
    counts: tuple[int, int, int],
    dim: RudaDim,
    limit: tuple[int, int, int],
    device: object,
) -> ServerError | None:
    """Why ``task`` must not run with the dynamic count ``counts`` of cubes of ``dim``, read
    from ``binding`` once the work before it is done: a ``LaunchError`` when the binding is
    poisoned, a ``TooManyResources`` when an axis exceeds ``limit`` (the device's
    ``max_ruda_count``) or the launch holds too many units for the positions the task reads
    (:func:`~.limits.wide_launch_error`); None when it may run. A driver that resolves dynamic
    counts itself calls it when it reads one."""
    poison = binding.slice.error
    if poison is not None:
        error = LaunchError(
            f"kernel {task.name} was not run: its dynamic RudaCount holds no valid data "
            f"after an earlier failure ({poison})"
        )
        error.__cause__ = poison
        return error
    if counts[0] > limit[0] or counts[1] > limit[1] or counts[2] > limit[2]:
        return TooManyResources(
            f"kernel {task.name} was not run: its dynamic RudaCount{counts} exceeds the "
            f"cube-count limit {limit} of {device}. Clamp the count the kernel writes, "
            "or loop over cubes in the kernel"
        )
    return wide_launch_error(task, RudaCount(*counts), dim)


class KernelLauncher:
    """The launches of one task in one mode on one server, from one site (None: a launcher
    made for one general launch, whose caller gives the stream).

    :attr:`fast` is ``run(count, dim, bindings, scalars=(), metadata=(), kept=None, producer=None)``
    on the site's stream: with ``kept`` (the objects that own memory some bindings borrow, see
    :meth:`~ruda_core.runtime.sharing.Sharing.borrow`) they are kept alive until the launch's work
    is done, and the stream first waits for another library's stream ``producer``, all under the
    launch's one lock; such a launch is refused while a capture is open (captures keep memory
    through handles only) and then returns False, with nothing enqueued. Otherwise it returns None.
    Errors of the enqueued work surface at the stream's next flush, sync or read. ``count`` and
    ``dim`` may be ints or tuples, as :func:`~.dims.launch_geometry` takes them.
    """

    __slots__ = ("_launches", "fast", "mode", "site", "task")

    def __init__(
        self, launches: Launches, task: RudaTask, mode: ExecutionMode, site: LaunchSite | None
    ) -> None:
        self._launches = launches
        self.task = task
        self.mode = mode
        self.site = site
        #: the launch from the site, made once (see the class docstring)
        self.fast: Callable[..., bool | None] = (
            self._validated if site is None or mode is _VALIDATE else self._make_fast(site)
        )

    def slow(
        self,
        count: RudaCount,
        dim: RudaDim,
        bindings: Sequence[Binding],
        scalars: Sequence[np.generic],
        metadata: Sequence[int],
        stream_value: int,
        kept: Sequence[object] | None = None,
        producer: int | None = None,
    ) -> bool | None:
        """Enqueue one launch on ``stream_value`` through every check: the general path.
        Build failures, poisoned inputs and dynamic counts beyond ``max_ruda_count`` are
        recorded on the stream and raised at its next flush, sync or read; the task then does
        not run. Inside a capture of the stream the launch is recorded, not run. ``kept`` and
        ``producer`` as :attr:`fast` (False: refused while a capture is open)."""
        launches = self._launches
        if kept is not None:
            if launches.captures.open:
                return False
            if producer is not None:
                launches.sharing.keep_alive(stream_value, (), producer)
        args = _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata))
        launches.enqueue_general(self.task, args, self.mode, stream_value)
        if kept is not None:  # after the launch: a fence of the batch then covers it
            launches.sharing.keep_alive(stream_value, kept, None)
        return None

    def prepare(self, args: LaunchArgs) -> Callable[[int], None]:
        """Build the kernel now and return ``replay(stream_value)``, which enqueues this exact
        launch again with what does not change precomputed by the driver, keeping every
        guarantee of :meth:`slow` (inside a capture of its stream it is recorded).

        :raises CompilationError: at once, when the kernel does not build.
        """
        launches = self._launches
        with launches.streams.lock:
            step = launches.prepare_step(self.task, args, self.mode)
        return launches.replayer(step)

    def _validated(
        self,
        count: CountLike,
        dim: DimLike,
        bindings: Sequence[Binding],
        scalars: Sequence[np.generic] = (),
        metadata: Sequence[int] = (),
        kept: Sequence[object] | None = None,
        producer: int | None = None,
    ) -> bool | None:
        """:attr:`fast` where every launch takes :meth:`slow`: Validate (which reads the flags
        back) and a launcher without a site (which has no stream of its own)."""
        site = self.site
        if site is None:
            raise TypeError("a launcher made for one launch has no site: call slow()")
        count, dim = launch_geometry(count, dim)
        site.admit(self.task, count, dim, scalars)
        stream = site.pinned
        value = (stream if stream is not None else StreamId.current()).value
        return self.slow(count, dim, bindings, scalars, metadata, value, kept, producer)

    def _make_fast(self, site: LaunchSite) -> Callable[..., bool | None]:
        """The fast method, as one closure over what is fixed per launcher: its locals are the
        cheapest lookups Python has, and this runs on every launch."""
        launches = self._launches
        slow = self.slow
        task, mode = self.task, self.mode
        table = launches.streams
        streams = table.by_slot
        n_streams = table.size
        memory = table.memory
        dropped = memory.dropped
        captures = launches.captures.open
        profiler = launches.profiler
        server_id = table.server_id
        use = table.use
        describe = task.describe_binding
        keep_batch = table.fence_kept
        order_after_producer = launches.driver.order_after_producer
        admit = site.admit
        local = thread_stream
        ticks = TICKS
        #: the driver's launch of the loaded kernel, found once; None again when the kernel
        #: cache lets the kernel go (it calls ``hold(None)``, under the lock)
        direct: KernelLaunch | None = None
        #: the (count, dim) last admitted as fitting, with a static, non-empty count
        fits: tuple[RudaCount, RudaDim] | None = None

        def hold(found: KernelLaunch | None) -> None:
            nonlocal direct
            direct = found

        def fast(
            count: CountLike,
            dim: DimLike,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic] = (),
            metadata: Sequence[int] = (),
            kept: Sequence[object] | None = None,
            producer: int | None = None,
        ) -> bool | None:
            nonlocal fits
            pinned = site.pinned  # the site's execution stream, inlined
            if pinned is None:
                pinned = getattr(local, "stream", None) or StreamId.current()
            stream_value = pinned.value
            last = fits
            if last is None or last[0] is not count or last[1] is not dim:
                if type(count) is not RudaCount or type(dim) is not RudaDim:
                    count, dim = launch_geometry(count, dim)  # the same int, the same object
                if last is None or last[0] is not count or last[1] is not dim:
                    fitting = admit(task, count, dim, scalars)  # False: checked for these
                    if count.binding is not None or not (count.x and count.y and count.z):
                        return slow(  # a dynamic or empty count: the general path handles it
                            count, dim, bindings, scalars, metadata, stream_value, kept, producer
                        )
                    if fitting:
                        fits = (count, dim)
            stream = streams.get(stream_value % n_streams)
            if direct is None and stream is not None:
                launches.hold_launch(task, mode, hold)  # sets ``direct`` when it is loaded
            enqueue = direct
            if enqueue is None or stream is None or captures or profiler.active:
                return slow(count, dim, bindings, scalars, metadata, stream_value, kept, producer)
            backlog: Fence | None = None  # the oldest kept batch, when too many are in flight
            lock = table.lock  # read each time: a fork replaces it
            lock.acquire()  # not ``with``: its protocol costs as much again, on every launch
            try:
                stream.users[stream_value] = next(ticks)  # as StreamTable.get() records
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
                        poisoned = use(stream, bindings, describe)
                        break
                if kept is not None:  # StreamTable.keep(), inlined; ordered before the launch
                    if producer is not None and producer not in stream.ordered_producers:
                        order_after_producer(stream, producer)
                    if len(stream.kept) >= KEEP_BATCH:
                        backlog = keep_batch(stream)
                    stream.kept.extend(kept)
                if poisoned or enqueue is not direct:  # or its kernel was let go since
                    args = _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata))
                    launches.enqueue_loaded(stream, task, mode, args, stream_value)
                else:
                    enqueue(stream, count, dim, bindings, scalars, metadata)
            finally:
                lock.release()
            if backlog is not None:
                backlog.wait()
            return None

        return fast


class Launches:
    """The launch part of one server: launchers, the general path, prepared launches and the
    kernels they load.

    :param streams: the server's streams and lock.
    :param kernels: its loaded kernels.
    :param driver: the driver's kernel hooks (and its ordering of other libraries' streams).
    :param profiler: its profiler.
    :param captures: its open captures.
    :param sharing: its sharing part (which keeps borrowed memory alive).
    :param max_count: the device's ``max_ruda_count``.
    """

    __slots__ = (
        "_dropped",
        "_retired",
        "captures",
        "driver",
        "kernels",
        "max_count",
        "profiler",
        "sharing",
        "streams",
    )

    def __init__(
        self,
        streams: StreamTable,
        kernels: KernelCache,
        driver: Driver,
        profiler: Profiler,
        captures: Captures,
        sharing: Sharing,
        max_count: tuple[int, int, int],
    ) -> None:
        self.streams = streams
        self.kernels = kernels
        self.driver = driver
        self.profiler = profiler
        self.captures = captures
        self.sharing = sharing
        self.max_count = max_count
        #: kernels the cache let go, each batch with fences after the work queued before then
        self._retired: deque[tuple[list[Fence], list[LoadedKernel]]] = deque()
        #: kernels dropped since the host memory was last trimmed
        self._dropped = 0

    # -- launchers -----------------------------------------------------------------------------
    def launcher(self, task: RudaTask, mode: ExecutionMode, site: LaunchSite) -> KernelLauncher:
        """The launcher of ``task`` in ``mode`` from ``site`` (keep it: it is made anew per
        call)."""
        return KernelLauncher(self, task, mode, site)

    def launch(self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode, value: int) -> None:
        """One launch on stream ``value`` through a launcher made for it (its slow method)."""
        KernelLauncher(self, task, mode, None).slow(*args, value)

    def hold_launch(
        self, task: RudaTask, mode: ExecutionMode, hold: Callable[[KernelLaunch | None], None]
    ) -> None:
        """Call ``hold`` with the driver's launch of ``task``'s loaded kernel in ``mode``, when
        one is loaded; the kernel cache calls ``hold(None)`` when it lets that kernel go (see
        :meth:`KernelCache.hold`). Takes the lock."""
        with self.streams.lock:
            kernel = self.kernels.hold(task, mode, hold)
            if kernel is not None:
                hold(self.driver.kernel_launch(task, kernel))

    # -- the general path ----------------------------------------------------------------------
    def enqueue_general(
        self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode, stream_value: int
    ) -> None:
        """:meth:`KernelLauncher.slow` without the kept owners. Nothing waits for the device
        while the lock is held. Two cases wait without it: a dynamic count on a driver that
        does not resolve it itself waits for the work before it on the stream and is read
        back; a validated launch waits for the oldest report read while its stream's reads lag
        :data:`~.reports.MAX_FOLDS` slabs behind."""
        if self.captures.open and self.captures.record(
            (CapturedLaunch(task, args, mode),), stream_value
        ):
            return
        bindings = args.bindings
        dynamic = args.count.binding
        if dynamic is not None and not self.driver.resolves_dynamic_counts:
            resolved = self._resolve_count(task, dynamic, args.dim, bindings, stream_value)
            if resolved is None:
                return
            args = LaunchArgs(resolved, args.dim, bindings, args.scalars, args.metadata)
            dynamic = None
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value)
            streams.use(stream, bindings, task.describe_binding)
            if dynamic is not None:
                streams.use(stream, (dynamic,), task.describe_count)
            try:
                kernel = self.kernels.get(task, mode)
            except ServerError as exc:
                stream.fail(exc, bindings, task, stream_value)
                return
            backlog = self.enqueue(stream, task, mode, kernel, args, stream_value)
        if backlog is not None:
            _settle(backlog)

    def enqueue_loaded(
        self,
        stream: ServerStream,
        task: RudaTask,
        mode: ExecutionMode,
        args: LaunchArgs,
        stream_value: int,
    ) -> None:
        """:meth:`enqueue` of ``task``'s kernel, loaded again if it was let go; a failed build
        is recorded on ``stream`` (lock held; not for Validate, whose backlog it drops)."""
        try:
            kernel = self.kernels.get(task, mode)
        except ServerError as exc:
            stream.fail(exc, args.bindings, task, stream_value)
            return
        self.enqueue(stream, task, mode, kernel, args, stream_value)

    def enqueue(
        self,
        stream: ServerStream,
        task: RudaTask,
        mode: ExecutionMode,
        kernel: LoadedKernel,
        args: LaunchArgs,
        stream_value: int,
    ) -> RudaFuture[Any] | None:
        """The launch of a loaded kernel whose bindings are ordered on ``stream`` by stream
        ``stream_value`` (lock held). Returns the report read a validated launch must wait for
        once the lock is released, else None."""
        count, bindings = args[0], args[2]  # read the cheap way: this runs on every launch
        if not (count.x and count.y and count.z) and count.binding is None:
            return None  # an empty launch: nothing runs, nothing is written
        for b in bindings:
            if b.slice.error is not None:  # rare: resolve poison only when there is some
                poisoned = poisoned_input(task, bindings)
                if poisoned is not None:
                    stream.fail(poisoned, bindings, task, stream_value)
                    return None
                if count.binding is None:  # a static count: the launch runs (a dynamic one
                    rewritten(task, bindings)  # may be zero: its driver clears when it reads it)
                break
        backlog = None
        if mode is _VALIDATE:
            count, dim, _, scalars, metadata = args
            n = len(bindings)  # the report is the last array: its length the last length
            log = self.report_log(stream)
            report = log.take_slot((task.name, kernel.compiled.report_names))
            metadata = [*metadata[:n], REPORT_WORDS, *metadata[n:]]
            args = LaunchArgs(count, dim, [*bindings, report], scalars, metadata)
            backlog = log.backlog()
        run = self.driver.kernel_launch(task, kernel)
        profiler = self.profiler
        if not profiler.active:
            run(stream, *args)
        else:
            start = profiler.stamp(stream)
            run(stream, *args)
            profiler.note("kernel", task.name, stream, start)
        return backlog

    def _resolve_count(
        self,
        task: RudaTask,
        binding: Binding,
        dim: RudaDim,
        bindings: Sequence[Binding],
        stream_value: int,
    ) -> RudaCount | None:
        """The static count a dynamic count holds once the work before it on the stream is
        done: reads it back, waiting without the lock. None when nothing is to run: a zero
        axis, or a count refused (poisoned, or beyond ``max_ruda_count``) and recorded."""
        streams = self.streams
        with streams.lock:
            stream = streams.get(stream_value)
            streams.use(stream, bindings, task.describe_binding)  # refused before any poison
            streams.use(stream, (binding,), task.describe_count)
            read = self.driver.read(stream, [binding])
        words = np.frombuffer(read.result()[0], dtype=np.uint32)
        counts = (int(words[0]), int(words[1]), int(words[2]))
        error = dynamic_count_error(task, binding, counts, dim, self.max_count, streams.device)
        if error is not None:
            with streams.lock:
                stream.fail(error, bindings, task, stream_value)
            return None
        return RudaCount(*counts) if min(counts) > 0 else None

    # -- Validate reports ----------------------------------------------------------------------
    def report_log(self, stream: ServerStream) -> ReportLog:
        """The stream's report log with a free slot: made at its first validated launch, its
        slab folded when full (lock held)."""
        log = stream.reports
        if log is None:
            slab = self.streams.reserve(_SLAB_ZEROS.nbytes, stream)
            self.driver.write(stream, slab.binding(), _SLAB_ZEROS)
            log = stream.reports = ReportLog(slab)
        elif log.full:
            self.fold(stream, log)
        return log

    def fold(self, stream: ServerStream, log: ReportLog) -> None:
        """Enqueue a read of the slab and then its zeroing; tally the folds already read (lock
        held)."""
        slab = log.slab.binding()
        log.fold(self.driver.read(stream, [slab]))
        self.driver.write(stream, slab, _SLAB_ZEROS)
        failed = log.harvest()
        if failed is not None:
            stream.fail(failed, ())

    # -- prepared launches ---------------------------------------------------------------------
    def prepare_step(self, task: RudaTask, args: LaunchArgs, mode: ExecutionMode) -> PreparedStep:
        """Freeze ``args``, build the kernel and let the driver precompute the launch (lock
        held).

        :raises InvalidHandle: for a binding of a dropped handle or of another server.
        :raises CompilationError: when the kernel does not build.
        """
        count, dim, bindings, scalars, metadata = args
        self.streams.check(bindings, task.describe_binding)
        if count.binding is not None:
            self.streams.check((count.binding,), task.describe_count)
        args = LaunchArgs(count, dim, tuple(bindings), tuple(scalars), tuple(metadata))
        kernel = self.kernels.get(task, mode)
        fast = None
        if mode is not _VALIDATE and count.binding is None and count.num_cubes:
            driver = self.driver
            fast = driver.prepare(task, kernel, driver.kernel_launch(task, kernel), args)
        return PreparedStep(task, args, mode, kernel, fast)

    def replayer(self, step: PreparedStep) -> Callable[[int], None]:
        """``replay(stream_value)`` of one prepared launch (it takes the lock itself)."""
        task, args, mode, kernel, fast = step
        frozen = args.bindings
        dynamic = args.count.binding
        captures = self.captures
        recorded = (CapturedLaunch(task, args, mode),)
        streams = self.streams
        profiler = self.profiler

        def replay(stream_value: int) -> None:
            if captures.open and captures.record(recorded, stream_value):
                return
            if dynamic is not None and not self.driver.resolves_dynamic_counts:
                self.enqueue_general(task, args, mode, stream_value)
                return
            with streams.lock:
                stream = streams.get(stream_value)
                poisoned = streams.use(stream, frozen, task.describe_binding)
                if fast is not None and not profiler.active and not poisoned:
                    fast(stream)
                    return
                if dynamic is not None:
                    streams.use(stream, (dynamic,), task.describe_count)
                backlog = self.enqueue(stream, task, mode, kernel, args, stream_value)
            if backlog is not None:
                _settle(backlog)

        return replay

    # -- loaded kernels ------------------------------------------------------------------------
    def retire_kernels(self, kernels: list[LoadedKernel]) -> None:
        """Keep ``kernels``, which the kernel cache let go, until the work queued so far on
        every stream is done (lock held): a driver may otherwise free a program that queued
        work still runs."""
        fence = self.streams.queue.fence
        fences = [fence(stream) for stream in self.streams.by_slot.values()]
        self._retired.append((fences, kernels))
        self.let_go_retired()

    def let_go_retired(self) -> None:
        """Drop the retired kernels whose work is done (lock held); after every
        :data:`TRIM_EVERY` kernels dropped, give the host memory the C allocator holds free
        back to the system (a driver's compiler leaves much of it)."""
        retired = self._retired
        while retired and all(fence.done() for fence in retired[0][0]):
            self._dropped += len(retired.popleft()[1])
        if self._dropped >= TRIM_EVERY:
            self._dropped = 0
            trim()


def _settle(future: RudaFuture[Any]) -> None:
    """Wait for ``future`` without raising: its outcome is remembered and raised by whoever
    takes its result (for report reads: the next sync)."""
    with contextlib.suppress(ServerError):
        future.result()
