"""``CpuServer``: the NumPy reference device's server.

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
    Binding,
    Bytes,
    CompiledKernel,
    CompileOptions,
    ComputeServer,
    DeviceId,
    DeviceProperties,
    Feature,
    Features,
    IoError,
    LaunchArgs,
    LaunchError,
    LoadedKernel,
    Promise,
    RudaFuture,
    RudaTask,
    ServerError,
    ServerStream,
    Storage,
)

from .compiler import CpuCompiler
from .storage import CpuStorage, host_memory_nbytes

__all__ = ["CpuFence", "CpuServer", "CpuStream"]

PLANE_DIM = 32


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

    __slots__ = ("_done", "ns")

    def __init__(self) -> None:
        self._done = threading.Event()
        self.ns = 0

    def mark(self) -> None:
        self.ns = time.perf_counter_ns()
        self._done.set()

    def ns_since(self, base: Any) -> int:
        self._done.wait()
        base._done.wait()
        return self.ns - int(base.ns)


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


def _view(binding: Binding, dtype: np.dtype) -> np.ndarray:
    page: np.ndarray = binding.resource  # type: ignore[assignment]  # CpuStorage pages
    usable = binding.nbytes - binding.nbytes % dtype.itemsize
    return page[binding.offset_bytes : binding.offset_bytes + usable].view(dtype)


class CpuServer(ComputeServer):
    """The server of the NumPy reference device."""

    max_streams = 64
    resolves_dynamic_counts = True  # the stream's worker reads the count when the launch runs
    fork_safe = True  # NumPy and threads it starts itself: a forked child can make a new server

    def __init__(self, device_id: DeviceId, storage: Storage | None = None) -> None:
        """:param storage: the page allocator; its pages must be writable 1-D ``uint8``
        ndarrays (default: :class:`CpuStorage`)."""
        storage = storage if storage is not None else CpuStorage()
        super().__init__(device_id, storage)
        self.compiler = CpuCompiler()
        self._options = CompileOptions(plane_dim=PLANE_DIM)
        self._properties = DeviceProperties(
            name="NumPy reference device",
            vendor=f"NumPy {np.__version__}",
            memory_nbytes=host_memory_nbytes(),
            max_units_per_ruda=1024,
            max_ruda_dim=(1024, 1024, 64),
            max_ruda_count=(2**31 - 1, 65535, 65535),
            max_shared_memory_nbytes=64 * 1024,
            plane_dim=PLANE_DIM,
            compute_units=os.cpu_count() or 1,
            alignment_nbytes=storage.alignment_nbytes,
        )
        self._features = Features(
            frozenset(
                {
                    Feature.PLANE,
                    Feature.PLANE_SHUFFLE,
                    Feature.PARTIAL_PLANE,
                    Feature.ATOMIC_INT64,
                    Feature.ATOMIC_FLOAT,
                    Feature.DYNAMIC_COUNT,
                    Feature.DEVICE_TIMING,
                    Feature.PRINT,
                }
            ),
            frozenset(Elem),
            F16_CONFIGS | TF32_CONFIGS,  # bf16 matrices are compared with multiply_accumulate
        )

    def properties(self) -> DeviceProperties:
        return self._properties

    def features(self) -> Features:
        return self._features

    def compile_options(self) -> CompileOptions:
        return self._options

    def driver_fingerprint(self) -> str:
        return f"numpy {np.__version__}"

    def dlpack_device(self) -> tuple[int, int]:
        return (DLDeviceType.CPU, 0)

    def _address(self, binding: Binding) -> int:
        page: np.ndarray = binding.resource  # type: ignore[assignment]  # CpuStorage pages
        return int(page.ctypes.data) + binding.offset_bytes

    def _adopt(self, address: int, nbytes: int) -> np.ndarray:
        """A writable ``uint8`` view of host memory another library owns (kept alive by the
        handle's owner, not by this array)."""
        if nbytes == 0:
            return np.empty(0, dtype=np.uint8)
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))

    # -- hooks ---------------------------------------------------------------------------------
    def _new_stream(self, slot: int) -> CpuStream:
        return CpuStream(slot, f"ruda-cpu-stream-{slot}")

    def _build(self, compiled: CompiledKernel) -> Any:
        from .executor import build

        dtypes = [p.elem.numpy for p in compiled.definition.array_params]
        return build(compiled), dtypes

    def _binary(self, built: Any) -> bytes:
        return b""  # the generated source travels in the cached CompiledKernel itself

    def _load_binary(self, compiled: CompiledKernel, binary: bytes) -> Any:
        return self._build(compiled)

    def _launch(
        self, stream: ServerStream, task: RudaTask, kernel: LoadedKernel, args: LaunchArgs
    ) -> None:
        body = self._body(task, kernel, args, fixed=False)
        stream.enqueue(partial(body, stream))  # type: ignore[attr-defined]  # a CpuStream

    def _prepare(
        self, task: RudaTask, kernel: LoadedKernel, args: LaunchArgs
    ) -> Callable[[ServerStream], None]:
        return _CpuRun(self._body(task, kernel, args, fixed=True))

    def _capture(
        self, runs: Sequence[Callable[[ServerStream], None]]
    ) -> Callable[[ServerStream], None]:
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
        dims = (dim.x, dim.y, dim.z)
        views = [_view(b, dt) for b, dt in zip(bindings, dtypes, strict=True)] if fixed else None

        def body(stream: ServerStream) -> None:
            poisoned = self.poisoned_input(task, bindings)
            if poisoned is not None:
                self.fail(stream, poisoned, bindings, task)
                return
            try:
                if count.binding is None:
                    counts = (count.x, count.y, count.z)
                else:
                    x, y, z = (int(v) for v in _view(count.binding, np.dtype(np.uint32))[:3])
                    counts = (x, y, z)
                    refused = self.dynamic_count_error(task, count.binding, counts)
                    if refused is not None:
                        self.fail(stream, refused, bindings, task)
                        return
                if min(counts) > 0:
                    buffers = views
                    if buffers is None:
                        buffers = [_view(b, dt) for b, dt in zip(bindings, dtypes, strict=True)]
                    cast(CpuStream, stream).running = task.name
                    run(counts, dims, buffers, scalars, metadata)
            except ServerError as exc:
                self.fail(stream, exc, bindings, task)
            except Exception as exc:  # a fault of the kernel becomes the stream's error
                error = LaunchError(f"kernel {task.name} failed on {self.device_id}: {exc!r}")
                error.__cause__ = exc
                self.fail(stream, error, bindings, task)

        return body

    def _prepare_copy(
        self, source: Binding, destination: Binding
    ) -> Callable[[ServerStream], None]:
        """One worker command (a capture runs it among the launches' bodies): a source that an
        earlier command poisoned poisons ``destination`` instead of being copied."""
        src = _view(source, np.dtype(np.uint8))
        dst = _view(destination, np.dtype(np.uint8))

        def body(stream: ServerStream) -> None:
            poison = source.slice.error
            if poison is not None:
                self.fail(stream, poison, (destination,))
                return
            dst[:] = src

        return _CpuRun(body)

    def _write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        self._write_owned(stream, binding, np.frombuffer(data, dtype=np.uint8).copy().data)

    def _write_owned(self, stream: ServerStream, binding: Binding, data: memoryview) -> CpuFence:
        """Writes from ``data`` itself: the worker's command holds it until it has run."""
        host = np.frombuffer(data, dtype=np.uint8)
        target = _view(binding, np.dtype(np.uint8))

        def command() -> None:
            target[:] = host

        cast(CpuStream, stream).enqueue(command)
        return self._fence(stream)

    def _write_deferred(
        self, stream: ServerStream, binding: Binding, source: RudaFuture[list[Bytes]]
    ) -> bool:
        """The stream's worker waits for ``source`` (another device's read), so the host does
        not."""
        target = _view(binding, np.dtype(np.uint8))

        def command() -> None:
            try:
                data = source.result()[0]
            except ServerError as exc:
                self.fail(stream, exc, (binding,))
                return
            except Exception as exc:  # the worker must survive whatever the other driver raised
                error = IoError(f"copying {binding.nbytes} B to {self.device_id} failed: {exc!r}")
                error.__cause__ = exc
                self.fail(stream, error, (binding,))
                return
            target[:] = np.frombuffer(data, dtype=np.uint8)

        cast(CpuStream, stream).enqueue(command)
        return True

    def _read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        promise: Promise[list[Bytes]] = Promise()
        views = [_view(b, np.dtype(np.uint8)) for b in bindings]

        def command() -> None:
            promise.set_result([v.copy().data.toreadonly() for v in views])

        cast(CpuStream, stream).enqueue(command)
        return promise.future

    def _fence(self, stream: ServerStream) -> CpuFence:
        cpu = cast(CpuStream, stream)
        return CpuFence(cpu, cpu.submitted)

    def _wait(self, stream: ServerStream, fence: Any) -> None:
        if fence.done():
            return
        cast(CpuStream, stream).enqueue(fence.wait)

    def _timestamp(self, stream: ServerStream) -> CpuStamp:
        stamp = CpuStamp()
        cast(CpuStream, stream).enqueue(stamp.mark)
        return stamp

    def _flush(self, stream: ServerStream) -> None:
        """Nothing to submit: the worker runs commands as they arrive."""

    def _busy(self, stream: ServerStream) -> str | None:
        running = cast(CpuStream, stream).running
        return None if running is None else f"kernel {running} is running"

    def _sync(self, stream: ServerStream) -> RudaFuture[None]:
        promise: Promise[None] = Promise()
        cast(CpuStream, stream).enqueue(lambda: promise.set_result(None))
        return promise.future
