"""The driver contract: what a backend implements so that a :class:`~.server.ComputeServer` can
run work on its device.

A backend's driver is one object implementing four small interfaces, each a group of hooks,
with a default wherever one makes sense:

* :class:`QueueDriver`, streams and events: ``new_stream``, ``fence``, ``refence``, ``wait``,
  ``flush``, ``sync``, ``timestamp``, ``elapsed_ns``;
* :class:`KernelDriver`, kernel loading and launching: ``build``, ``binary``, ``load_binary``,
  ``kernel_launch`` (the one per-kernel launch hook), ``prepare``, ``capture``;
* :class:`CopyDriver`, copies: ``write``, ``read``, ``prepare_copy``, ``copy_to_peer``,
  ``write_deferred``;
* :class:`SharingDriver`, memory shared with other libraries: ``dlpack_device``, ``address``,
  ``adopt``, ``stream_handle``, ``order_consumer``, ``order_after_producer``.

:class:`Driver` joins them. The server calls every hook with its lock held unless the hook says
otherwise, and after its own checks: bindings are this device's, live, and ordered on the stream
they are used on. No hook may wait for device work unless it says so. A failure of enqueued work
is recorded with :meth:`~.stream_table.ServerStream.fail` when the work runs, never raised into
the caller of a hook. What does not change while a server lives is not a hook: its device
properties, features, compile options and driver fingerprint are given to the server when it is
built. ``docs/driver-api.md`` documents each hook; a test holds that page to these classes.
This module imports no driver.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import UnsupportedFeature
from .arguments import LaunchArgs
from .compiler import CompiledKernel, Compiler, RudaTask
from .dims import RudaCount, RudaDim
from .future import RudaFuture
from .memory.handle import Binding
from .memory.management import Fence
from .profile import Stamp

if TYPE_CHECKING:
    from .kernels import LoadedKernel
    from .stream_table import ServerStream

__all__ = [
    "Bytes",
    "CopyDriver",
    "Driver",
    "KernelDriver",
    "KernelLaunch",
    "QueueDriver",
    "Run",
    "SharingDriver",
]

#: Bytes returned by reads: a read-only ``memoryview`` of format ``"B"`` (``np.frombuffer`` works
#: without a copy; ``bytes(b)`` copies).
Bytes = memoryview
#: What :meth:`KernelDriver.kernel_launch` returns: ``run(stream, count, dim, bindings,
#: scalars, metadata)`` enqueues one launch of a loaded kernel.
KernelLaunch = Callable[
    ["ServerStream", RudaCount, RudaDim, Sequence[Binding], Sequence[np.generic], Sequence[int]],
    None,
]
#: Work fixed once (a prepared launch, a copy, a captured recording) that enqueues itself on a
#: stream when called.
Run = Callable[["ServerStream"], None]


class QueueDriver(ABC):
    """Streams and events: the device's queues and the points in them that work waits for."""

    #: Streams map onto at most this many queues of the device (stream value modulo this).
    max_streams: ClassVar[int] = 32

    @abstractmethod
    def new_stream(self, slot: int) -> ServerStream:
        """Create the queue of stream slot ``slot`` (a :class:`ServerStream` subclass that
        holds it)."""

    @abstractmethod
    def fence(self, stream: ServerStream) -> Fence:
        """A fence after everything enqueued on ``stream`` so far."""

    def refence(self, stream: ServerStream, fence: Fence) -> Fence:
        """A fence after everything enqueued on ``stream`` so far, made from ``fence``: one of
        this driver's that is done and that nobody else holds. Override where a fence can be
        recorded again (a CUDA event): making one per batch of kept arrays costs each launch
        with borrowed arrays more than the rest of keeping them. The default makes a new one."""
        return self.fence(stream)

    @abstractmethod
    def wait(self, stream: ServerStream, fence: Fence) -> None:
        """Make later work on ``stream`` wait for ``fence`` (without blocking the host)."""

    @abstractmethod
    def flush(self, stream: ServerStream) -> None:
        """Submit what is queued on ``stream``."""

    @abstractmethod
    def sync(self, stream: ServerStream) -> RudaFuture[None]:
        """A future that completes when all work enqueued on ``stream`` so far has completed.
        Waiting on it must wake for signals (wait in short slices, never in one driver call
        without a timeout)."""

    def reserved(
        self, stream: ServerStream, resource: object, offset_bytes: int, nbytes: int
    ) -> None:
        """``nbytes`` at ``offset_bytes`` of page ``resource`` now belong to a new handle, first
        used on ``stream``: what they hold is left over from an earlier owner. A driver that
        follows which memory was written (the NumPy device's sanitizer) forgets it here, in the
        stream's order. The default does nothing. Called with the lock held; must not block."""
        return None

    def busy(self, stream: ServerStream) -> str | None:
        """What keeps ``stream`` from being done, for a timed-out wait's message: e.g.
        ``"kernel spin is running"``; None (the default) when its work is done or the driver
        cannot tell. Called without the lock, possibly while another thread enqueues; must not
        block."""
        return None

    def timestamp(self, stream: ServerStream) -> Stamp:
        """Record a device timestamp into ``stream`` (for profiling).

        :raises UnsupportedFeature: by default: the device cannot time its work.
        """
        raise UnsupportedFeature(f"{type(self).__name__} records no device timestamps")

    def elapsed_ns(self, start: Stamp, end: Stamp) -> int:
        """Device nanoseconds from ``start`` to ``end``, two stamps :meth:`timestamp` recorded
        on any streams of this device (negative when ``end`` came first). Blocks until both are
        complete; called without the lock.

        :raises UnsupportedFeature: by default, as :meth:`timestamp`.
        """
        raise UnsupportedFeature(f"{type(self).__name__} records no device timestamps")


class KernelDriver(ABC):
    """Kernel loading and launching."""

    #: The code generator of this backend.
    compiler: Compiler
    #: Whether launches take dynamic counts and read them when the launch executes, off the
    #: host's critical path (the NumPy device's workers do). Such a driver must refuse what
    #: :func:`~.launches.dynamic_count_error` refuses, with ``stream.fail``, when it reads the
    #: count. Otherwise (the default) the server resolves a dynamic count itself and the driver
    #: only ever sees static counts.
    resolves_dynamic_counts: ClassVar[bool] = False

    @abstractmethod
    def build(self, compiled: CompiledKernel) -> Any:
        """Turn generated source into something :meth:`kernel_launch` can launch. What it
        returns must not refer to the task: a kernel outlives no task, but a task may be
        dropped while its kernel is still queued.

        :raises CompilationError: with the driver's log when the source does not build.
        """

    def binary(self, built: Any) -> bytes | None:
        """What to persist of what :meth:`build` returned (a cubin, a program binary …), as
        plain bytes; None (the default): nothing."""
        return None

    def load_binary(self, compiled: CompiledKernel, binary: bytes) -> Any:
        """Rebuild a kernel from what :meth:`binary` returned in an earlier process; the bytes
        come from a cache folder and must only ever be handed to the driver as a binary.

        :raises UnsupportedFeature: by default: the driver persists no binaries.
        """
        raise UnsupportedFeature(f"{type(self).__name__} persists no binaries")

    @abstractmethod
    def kernel_launch(self, task: RudaTask, kernel: LoadedKernel) -> KernelLaunch:
        """The one per-kernel launch hook: ``run(stream, count, dim, bindings, scalars,
        metadata)`` that enqueues a launch of ``kernel`` (``kernel.built`` is what
        :meth:`build` returned). Made once per loaded kernel; look up here what is fixed per
        kernel. The run is called with the lock held, must not wait for the device, and sees
        a static count unless :attr:`resolves_dynamic_counts`."""

    def prepare(
        self, task: RudaTask, kernel: LoadedKernel, launch: KernelLaunch, args: LaunchArgs
    ) -> Run:
        """One launch with fixed arguments (its record, sequences as tuples), as a run that
        enqueues it (lock held, bindings ordered). ``launch`` is what :meth:`kernel_launch`
        made of ``kernel``. The default calls it; a driver overrides this to pack the arguments
        once."""

        def run(stream: ServerStream) -> None:
            launch(stream, *args)

        return run

    def capture(self, runs: Sequence[Run]) -> Run:
        """A capture as one run: ``runs`` are what :meth:`prepare` and
        :meth:`CopyDriver.prepare_copy` returned for each recorded step, in order (at least
        one). Called once per capture, lock held; the result is called with the lock held, the
        bindings ordered, none poisoned and no profile running, and must not wait. The default
        calls each run in turn; a driver overrides it to enqueue the recording as one unit (a
        CUDA graph, one worker command)."""

        def run(stream: ServerStream) -> None:
            for each in runs:
                each(stream)

        return run


class CopyDriver(ABC):
    """Copies between the host and the device, and within or between devices."""

    @abstractmethod
    def write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        """Enqueue a copy of ``data`` (exactly ``binding.nbytes``) into ``binding``. The copy of
        the host data must be taken before returning (the caller may reuse its buffer)."""

    @abstractmethod
    def read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        """Enqueue reads of ``bindings``; the future yields one :data:`Bytes` per binding."""

    def write_owned(self, stream: ServerStream, binding: Binding, data: memoryview) -> Fence | None:
        """Enqueue a copy of ``data`` (exactly ``binding.nbytes``) into ``binding`` from bytes
        ruda gives up to the driver (a chunk another device read, for ``to_client``): nobody
        changes them, so the driver may write from them without a copy of its own, holding them
        until the write is done. Return a fence after the write; once that fence has been
        waited for, the write holds ``data`` no more, and dropping the fence unwaited never
        waits. None (the default): not taken, the server copies them with :meth:`write`."""
        return None

    def prepare_copy(self, source: Binding, destination: Binding) -> Run:
        """A copy of ``source`` into ``destination`` (same size, this device's) as a run that
        enqueues it on a stream, neither waiting. A driver whose streams report failures when
        the work runs records one of the copy's source on ``destination`` with ``stream.fail``.

        :raises UnsupportedFeature: by default.
        """
        raise UnsupportedFeature(f"{type(self).__name__} cannot copy between its buffers")

    def copy_to_peer(
        self,
        stream: ServerStream,
        binding: Binding,
        target: CopyDriver,
        target_stream: ServerStream,
        out: Binding,
    ) -> bool:
        """Enqueue a direct copy of ``binding`` into ``out``, memory of ``target``'s device, and
        return True; or return False (the default) when this pair of devices copies through the
        host. Called with both servers' locks held and both bindings ordered on their streams;
        the copy must come after the work queued on ``stream`` and before the work queued later
        on ``target_stream`` and on ``stream``. Must not wait."""
        return False

    def write_deferred(
        self, stream: ServerStream, binding: Binding, source: RudaFuture[list[Bytes]]
    ) -> bool:
        """Enqueue on ``stream`` a write into ``binding`` of ``source``'s first bytes that waits
        for ``source`` on the device's side, not the host's, and return True; False (the
        default) makes the server wait on the host. The write must record a ``ServerError`` of
        ``source`` with ``stream.fail`` on ``binding`` instead of writing. Must not wait."""
        return False


class SharingDriver:
    """Memory shared by address with other libraries (DLPack, the CUDA array interface). Every
    hook has a default: a device whose memory is not shared by address implements none."""

    def dlpack_device(self) -> tuple[int, int] | None:
        """The DLPack ``(device_type, device_id)`` of this device's memory; None (the default)
        when it cannot be shared by address (OpenCL buffers are not pointers). A driver that
        answers implements :meth:`address` and :meth:`adopt`."""
        return None

    def address(self, binding: Binding) -> int:
        """The address of ``binding``'s first byte, as other libraries on this device use it."""
        raise UnsupportedFeature(f"{type(self).__name__} cannot share memory by address")

    def adopt(self, address: int, nbytes: int) -> object:
        """The page resource (what ``Storage.alloc`` returns) for ``nbytes`` of memory at
        ``address`` that another library allocated."""
        raise UnsupportedFeature(f"{type(self).__name__} cannot use memory by address")

    def stream_handle(self, stream: ServerStream) -> int | None:
        """The driver's handle of ``stream`` for other libraries (a ``cudaStream_t``); None (the
        default) for a device without such streams."""
        return None

    def order_consumer(self, fence: Fence, consumer: int | None) -> None:
        """Make another library's work on stream ``consumer`` (a handle in the DLPack stream
        convention) start after ``fence``. The default, for host memory, waits on the host;
        called without the lock."""
        fence.wait()

    def order_after_producer(self, stream: ServerStream, producer: int) -> None:
        """Make later work on ``stream`` wait for what another library has queued so far on its
        stream ``producer`` (not in ``stream.ordered_producers``). Must not block."""
        raise UnsupportedFeature(f"{type(self).__name__} has no streams to order with")


class Driver(QueueDriver, KernelDriver, CopyDriver, SharingDriver):
    """Everything a backend implements: the four interfaces in one object, handed to the
    :class:`~.server.ComputeServer` of its device."""

    #: Whether unloading the driver waits for work queued on its streams (Intel's OpenCL
    #: runtime finishes every queue; a CUDA context's teardown waits for its kernels): then a
    #: process whose work never ends is ended at once at exit (see :mod:`.shutdown`).
    teardown_waits: ClassVar[bool] = False
