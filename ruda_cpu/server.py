"""``CpuDriver`` and ``CpuServer``: the NumPy reference device's driver and server.

Each stream slot has a worker thread that runs the stream's commands in order, so launches are
truly asynchronous: errors of a launch surface at the next flush, sync or read, as on a GPU.
A :class:`CpuFence` is a position in a stream's command sequence.
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, cast

import numpy as np

from ruda_core.interop.dlpack import DLDeviceType
from ruda_core.ir import F16_CONFIGS, TF32_CONFIGS, Elem
from ruda_core.runtime import (
    PLANE_DIMS,
    Binding,
    Bytes,
    CompiledKernel,
    CompileOptions,
    ComputeServer,
    DeviceId,
    DeviceProperties,
    Driver,
    Feature,
    Features,
    IoError,
    KernelLaunch,
    LaunchArgs,
    LaunchError,
    LoadedKernel,
    Promise,
    RudaCount,
    RudaDim,
    RudaFuture,
    RudaTask,
    Run,
    ServerError,
    ServerStream,
    Stamp,
    Storage,
    dynamic_count_error,
    plane_dim_setting,
    poisoned_input,
    rewritten,
)

from .compiler import CpuCompiler
from .storage import CpuStorage, host_memory_nbytes

__all__ = [
    "DEFAULT_PLANE_DIM",
    "PLANE_DIMS",
    "PLANE_DIM_VARIABLE",
    "CpuDriver",
    "CpuFence",
    "CpuServer",
    "CpuStream",
    "plane_dim_from_env",
]

#: The setting of the reference device's plane width (one of ``PLANE_DIMS``).
PLANE_DIM_VARIABLE = "RUDA_CPU_PLANE_DIM"
#: The plane width of the reference device when :data:`PLANE_DIM_VARIABLE` is not set.
DEFAULT_PLANE_DIM = 32
MAX_RUDA_COUNT = (2**31 - 1, 65535, 65535)


def plane_dim_from_env() -> int:
    """``RUDA_CPU_PLANE_DIM`` (one of :data:`PLANE_DIMS`), else :data:`DEFAULT_PLANE_DIM`: the
    plane width the reference device runs kernels with and reports, so that a kernel can be
    tested at the widths other devices have (16 or 64 lanes, or 1 where there are no planes).

    :raises ValueError: when the variable is set to anything else; the message names it.
    """
    width = plane_dim_setting(PLANE_DIM_VARIABLE, f"{DEFAULT_PLANE_DIM}")
    return DEFAULT_PLANE_DIM if width is None else width


class CpuStream(ServerStream):
    """A command queue served by one daemon worker thread, in order."""

    def __init__(self, slot: int, name: str) -> None:
        super().__init__(slot)
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self.submitted = 0  #: commands enqueued (under the server lock)
        self.completed = 0  #: commands finished (under ``_cond``)
        #: the name of the kernel the worker is running, else None
        self.running: str | None = None
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def enqueue(self, command: Callable[[], None]) -> None:
        self.submitted += 1
        self._queue.put(command)

    def wait_for(self, seq: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.completed >= seq)

    def _work(self) -> None:
        while True:
            # called, not kept: a finished command and what it holds (a copy's chunk) go at once
            self._queue.get()()  # commands record their own failures on the stream; never raise
            self.running = None
            with self._cond:
                self.completed += 1
                self._cond.notify_all()


class CpuStamp:
    """The worker's clock when it reached this point of its queue."""

    __slots__ = ("_done", "_ns")

    def __init__(self) -> None:
        self._done = threading.Event()
        self._ns = 0

    def mark(self) -> None:
        self._ns = time.perf_counter_ns()
        self._done.set()

    def ns(self) -> int:
        """The worker's clock (``perf_counter_ns``) at the stamp; blocks until it got there."""
        self._done.wait()
        return self._ns


class CpuFence:
    """The point after the ``seq``-th command of a stream."""

    __slots__ = ("seq", "stream")

    def __init__(self, stream: CpuStream, seq: int) -> None:
        self.stream = stream
        self.seq = seq

    def done(self) -> bool:
        return self.stream.completed >= self.seq

    def wait(self) -> None:
        self.stream.wait_for(self.seq)


class _CpuRun:
    """A prepared launch: enqueues its body as one command; a capture runs several bodies in
    one command."""

    __slots__ = ("body",)

    def __init__(self, body: Callable[[ServerStream], None]) -> None:
        self.body = body

    def __call__(self, stream: ServerStream) -> None:
        cast(CpuStream, stream).enqueue(partial(self.body, stream))


def _run_all(bodies: Sequence[Callable[[ServerStream], None]], stream: ServerStream) -> None:
    for body in bodies:
        body(stream)


def _mark(written: np.ndarray | None, source: np.ndarray | None) -> None:
    """Mark the bytes of a ``written`` map (None: not followed) as written, or as ``source``'s
    map says where the bytes were copied from a followed page."""
    if written is not None:
        written[:] = True if source is None else source


def _view(binding: Binding, dtype: np.dtype) -> np.ndarray:
    page: np.ndarray = binding.resource  # type: ignore[assignment]  # CpuStorage pages
    usable = binding.nbytes - binding.nbytes % dtype.itemsize
    return page[binding.offset_bytes : binding.offset_bytes + usable].view(dtype)


class CpuDriver(Driver):
    """The driver of the NumPy reference device: a worker thread per stream slot runs its
    commands in order (see the module docstring). Every write, copy and launch marks what it
    wrote in the :meth:`CpuStorage.written` maps of the pages the sanitizer follows, and memory
    the pool hands to a new handle is unmarked (:meth:`reserved`).

    :param device: the device, as messages name it.
    :param storage: the server's storage (the maps are a :class:`CpuStorage`'s; another
        storage's pages are not followed).
    """

    max_streams = 64
    resolves_dynamic_counts = True  # the stream's worker reads the count when the launch runs

    def __init__(self, device: object, storage: Storage | None = None) -> None:
        self.device = device
        self.compiler = CpuCompiler()
        self._storage = storage if isinstance(storage, CpuStorage) else None

    def written(self, binding: Binding) -> np.ndarray | None:
        """Which bytes of ``binding`` something wrote (a writable view), or None where its page
        is not followed."""
        storage = self._storage
        if storage is None:
            return None
        return storage.written(binding.resource, binding.offset_bytes, binding.nbytes)

    def reserved(
        self, stream: ServerStream, resource: object, offset_bytes: int, nbytes: int
    ) -> None:
        """Where the page is followed, the bytes' marks are cleared when the stream reaches this
        point: the new handle's memory is unwritten, whatever its last owner wrote."""
        storage = self._storage
        marks = None if storage is None else storage.written(resource, offset_bytes, nbytes)
        if marks is not None:
            cast(CpuStream, stream).enqueue(partial(marks.fill, False))

    def dlpack_device(self) -> tuple[int, int]:
        return (DLDeviceType.CPU, 0)

    def address(self, binding: Binding) -> int:
        """The binding's host address. Its memory counts as written once the work queued on it
        has run (which the export waits for before the other library uses it), since what
        holds the address may write it unseen."""
        marks, stream = self.written(binding), binding.slice.stream
        if marks is not None and stream is not None:
            cast(CpuStream, stream).enqueue(partial(marks.fill, True))
        else:
            _mark(marks, None)
        page: np.ndarray = binding.resource  # type: ignore[assignment]  # CpuStorage pages
        return int(page.ctypes.data) + binding.offset_bytes

    def adopt(self, address: int, nbytes: int) -> np.ndarray:
        """A writable ``uint8`` view of host memory another library owns (kept alive by the
        handle's owner, not by this array)."""
        if nbytes == 0:
            return np.empty(0, dtype=np.uint8)
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))

    # -- queues and events, kernels, copies ----------------------------------------------------
    def new_stream(self, slot: int) -> CpuStream:
        return CpuStream(slot, f"ruda-cpu-stream-{slot}")

    def build(self, compiled: CompiledKernel) -> Any:
        from .executor import build

        dtypes = [p.elem.numpy for p in compiled.definition.array_params]
        return build(compiled), dtypes

    def binary(self, built: Any) -> bytes:
        return b""  # the generated source travels in the cached CompiledKernel itself

    def load_binary(self, compiled: CompiledKernel, binary: bytes) -> Any:
        return self.build(compiled)

    def kernel_launch(self, task: RudaTask, kernel: LoadedKernel) -> KernelLaunch:
        def run(
            stream: ServerStream,
            count: RudaCount,
            dim: RudaDim,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic],
            metadata: Sequence[int],
        ) -> None:
            args = LaunchArgs(count, dim, bindings, scalars, metadata)
            body = self._body(task, kernel, args, fixed=False)
            cast(CpuStream, stream).enqueue(partial(body, stream))

        return run

    def prepare(
        self, task: RudaTask, kernel: LoadedKernel, launch: KernelLaunch, args: LaunchArgs
    ) -> Run:
        return _CpuRun(self._body(task, kernel, args, fixed=True))

    def capture(self, runs: Sequence[Run]) -> Run:
        """The whole recording as one worker command: the launches run back to back."""
        bodies = tuple(cast(_CpuRun, run).body for run in runs)

        def run(stream: ServerStream) -> None:
            cast(CpuStream, stream).enqueue(partial(_run_all, bodies, stream))

        return run

    def _body(
        self, task: RudaTask, kernel: LoadedKernel, args: LaunchArgs, fixed: bool
    ) -> Callable[[ServerStream], None]:
        """The launch as a function the stream's worker calls: it checks poison when it runs,
        records its failures on the stream and never raises. ``fixed``: the bindings' views
        and a static count are taken now, once (for a prepared launch)."""
        run, dtypes = kernel.built
        count, dim, queued, scalars, metadata = args
        bindings = list(queued)
        storage = self._storage
        follows = storage is not None and storage.follows()
        written = [self.written(b) for b in bindings] if follows else []
        dims = (dim.x, dim.y, dim.z)
        views = [_view(b, dt) for b, dt in zip(bindings, dtypes, strict=True)] if fixed else None

        def body(stream: ServerStream) -> None:
            poisoned = poisoned_input(task, bindings)
            if poisoned is not None:
                stream.fail(poisoned, bindings, task)
                return
            try:
                if count.binding is None:
                    counts = (count.x, count.y, count.z)
                else:
                    x, y, z = (int(v) for v in _view(count.binding, np.dtype(np.uint32))[:3])
                    counts = (x, y, z)
                    refused = dynamic_count_error(
                        task, count.binding, counts, dim, MAX_RUDA_COUNT, self.device
                    )
                    if refused is not None:
                        stream.fail(refused, bindings, task)
                        return
                    if min(counts) > 0:
                        rewritten(task, bindings)
                if min(counts) > 0:
                    buffers = views
                    if buffers is None:
                        buffers = [_view(b, dt) for b, dt in zip(bindings, dtypes, strict=True)]
                    cast(CpuStream, stream).running = task.name
                    run(counts, dims, buffers, scalars, metadata, written)
            except ServerError as exc:
                stream.fail(exc, bindings, task)
            except Exception as exc:  # a fault of the kernel becomes the stream's error
                error = LaunchError(f"kernel {task.name} failed on {self.device}: {exc!r}")
                error.__cause__ = exc
                stream.fail(error, bindings, task)

        return body

    def prepare_copy(self, source: Binding, destination: Binding) -> Run:
        """One worker command (a capture runs it among the launches' bodies): a source that an
        earlier command poisoned poisons ``destination`` instead of being copied."""
        src = _view(source, np.dtype(np.uint8))
        dst = _view(destination, np.dtype(np.uint8))
        written = self.written(destination)
        source_written = self.written(source)

        def body(stream: ServerStream) -> None:
            poison = source.slice.error
            if poison is not None:
                stream.fail(poison, (destination,))
                return
            dst[:] = src
            _mark(written, source_written)  # what the source's nothing wrote stays unwritten

        return _CpuRun(body)

    def write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        self.write_owned(stream, binding, np.frombuffer(data, dtype=np.uint8).copy().data)

    def write_owned(self, stream: ServerStream, binding: Binding, data: memoryview) -> CpuFence:
        """Writes from ``data`` itself: the worker's command holds it until it has run."""
        host = np.frombuffer(data, dtype=np.uint8)
        target = _view(binding, np.dtype(np.uint8))
        written = self.written(binding)

        def command() -> None:
            target[:] = host
            _mark(written, None)

        cast(CpuStream, stream).enqueue(command)
        return self.fence(stream)

    def write_deferred(
        self, stream: ServerStream, binding: Binding, source: RudaFuture[list[Bytes]]
    ) -> bool:
        """The stream's worker waits for ``source`` (another device's read), so the host does
        not."""
        target = _view(binding, np.dtype(np.uint8))
        written = self.written(binding)

        def command() -> None:
            try:
                data = source.result()[0]
            except ServerError as exc:
                stream.fail(exc, (binding,))
                return
            except Exception as exc:  # the worker must survive whatever the other driver raised
                error = IoError(f"copying {binding.nbytes} B to {self.device} failed: {exc!r}")
                error.__cause__ = exc
                stream.fail(error, (binding,))
                return
            target[:] = np.frombuffer(data, dtype=np.uint8)
            _mark(written, None)

        cast(CpuStream, stream).enqueue(command)
        return True

    def read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        promise: Promise[list[Bytes]] = Promise()
        views = [_view(b, np.dtype(np.uint8)) for b in bindings]

        def command() -> None:
            promise.set_result([v.copy().data.toreadonly() for v in views])

        cast(CpuStream, stream).enqueue(command)
        return promise.future

    def fence(self, stream: ServerStream) -> CpuFence:
        cpu = cast(CpuStream, stream)
        return CpuFence(cpu, cpu.submitted)

    def wait(self, stream: ServerStream, fence: Any) -> None:
        if fence.done():
            return
        cast(CpuStream, stream).enqueue(fence.wait)

    def timestamp(self, stream: ServerStream) -> CpuStamp:
        stamp = CpuStamp()
        cast(CpuStream, stream).enqueue(stamp.mark)
        return stamp

    def elapsed_ns(self, start: Stamp, end: Stamp) -> int:
        return cast(CpuStamp, end).ns() - cast(CpuStamp, start).ns()

    def flush(self, stream: ServerStream) -> None:
        """Nothing to submit: the worker runs commands as they arrive."""

    def busy(self, stream: ServerStream) -> str | None:
        running = cast(CpuStream, stream).running
        return None if running is None else f"kernel {running} is running"

    def sync(self, stream: ServerStream) -> RudaFuture[None]:
        promise: Promise[None] = Promise()
        cast(CpuStream, stream).enqueue(lambda: promise.set_result(None))
        return promise.future


class CpuServer(ComputeServer):
    """The server of the NumPy reference device, built on a :class:`CpuDriver`.

    :param device_id: the device.
    :param storage: the page allocator; its pages must be writable 1-D ``uint8`` ndarrays
        (default: :class:`CpuStorage`; the sanitizer follows what was written only in the
        pages of a ``CpuStorage``).
    :param fingerprint: the driver identity that keys persisted kernels and tuning (default:
        NumPy's version); None keeps them in this process only.
    """

    fork_safe = True  # NumPy and threads it starts itself: a forked child can make a new server
    #: the class of its driver (a backend built on the reference device may subclass it)
    driver_class: type[CpuDriver] = CpuDriver

    def __init__(
        self,
        device_id: DeviceId,
        storage: Storage | None = None,
        fingerprint: str | None = f"numpy {np.__version__}",
    ) -> None:
        storage = storage if storage is not None else CpuStorage()
        plane_dim = plane_dim_from_env()
        properties = DeviceProperties(
            name="NumPy reference device",
            vendor=f"NumPy {np.__version__}",
            memory_nbytes=host_memory_nbytes(),
            max_units_per_ruda=1024,
            max_ruda_dim=(1024, 1024, 64),
            max_ruda_count=MAX_RUDA_COUNT,
            max_shared_memory_nbytes=64 * 1024,
            plane_dim=plane_dim,
            compute_units=os.cpu_count() or 1,
            alignment_nbytes=storage.alignment_nbytes,
        )
        features = Features(
            frozenset(
                {
                    Feature.PLANE,
                    Feature.PLANE_SHUFFLE,
                    Feature.PARTIAL_PLANE,
                    Feature.PLANES_ACROSS_ROWS,
                    Feature.ATOMIC_INT64,
                    Feature.ATOMIC_FLOAT,
                    Feature.DYNAMIC_COUNT,
                    Feature.DEVICE_TIMING,
                    Feature.PRINT,
                    Feature.SANITIZE,
                    Feature.MEMORY_FENCE,  # lockstep accesses are already in program order
                    Feature.UNBOUNDED_LOOPS,
                    Feature.WARPGROUP_MMA,  # the reference model of ruda_cpu.lockstep.warpgroup
                    Feature.ASYNC_BARRIER,  # the reference model of ruda_cpu.lockstep.barrier
                }
            ),
            frozenset(Elem),
            F16_CONFIGS | TF32_CONFIGS,  # bf16 matrices are compared with multiply_accumulate
        )
        options = CompileOptions(plane_dim=plane_dim)
        self._driver = self.driver_class(device_id, storage)
        super().__init__(
            device_id,
            storage,
            self._driver,
            properties,
            features,
            options,
            fingerprint=fingerprint,
        )

    def name_device(self, name: str) -> None:
        """As :meth:`ComputeServer.name_device`; the driver's messages name the device so too."""
        super().name_device(name)
        self._driver.device = name
