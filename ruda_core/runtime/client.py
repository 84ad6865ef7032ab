"""``ComputeClient``: the user's one entry point to a device.

Every method of the Runtime API reference is here. Methods that return a Rust ``Result`` there
return a value or raise :class:`ServerError`; its panics raise :class:`RudaPanic` from the
``ServerError``. A client knows the :class:`Runtime` that made it. All methods are thread-safe.
Work is enqueued on the client's resolved stream: the stream pinned by
``set_stream``/``fixed_execution_queue``, else the calling thread's own.
"""

from __future__ import annotations

import math
import operator
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, SupportsIndex, TypeVar, cast

import numpy as np

from ..errors import (
    InvalidHandle,
    LayoutError,
    RudaPanic,
    ServerError,
)
from ..ir import ExecutionMode
from .arguments import LaunchArgs
from .cache import EntryOrigin
from .capture import Graph
from .compiler import WIDE_LIMIT, RudaTask
from .device import DeviceId
from .device_names import device_name
from .dims import (
    BoundsCheckMode,
    CountLike,
    DimLike,
    RudaCount,
    RudaDim,
    integral,
    launch_geometry,
)
from .driver import Bytes
from .future import RudaFuture
from .layout import Strided, contiguous_strides
from .limits import LaunchLimits
from .memory.handle import Binding, Handle
from .memory.usage import MemoryUsage
from .process_bound import ProcessBound
from .profile import ProfileDuration, TimingMethod
from .properties import DeviceProperties, Feature, Features
from .server import ComputeServer
from .stream import StreamId, thread_stream

if TYPE_CHECKING:
    from .backend import Runtime

__all__ = ["ClientLaunch", "ComputeClient", "CopyDescriptor", "PreparedLaunch"]

T = TypeVar("T")
_CHECKED = ExecutionMode.CHECKED
#: ``LaunchArgs`` without the generated ``__new__``'s Python frame (it is built every launch)
_new_args = tuple.__new__


#: What :meth:`ComputeClient.launcher` returns: a launcher's fast method, ``run(count, dim,
#: bindings, scalars, metadata)`` on the client's stream, with ``kept`` and ``producer`` (False:
#: refused while a capture is open, nothing enqueued); see :class:`~.launches.KernelLauncher`.
ClientLaunch = Callable[..., bool | None]


@dataclass(frozen=True, slots=True)
class CopyDescriptor(Strided):
    """What ``read_tensor`` reads: a handle and the layout of its elements.

    :param handle: the tensor's memory.
    :param shape: extents per axis.
    :param strides: strides per axis, in elements.
    :param elem_size: bytes per element.
    """

    handle: Handle
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem_size: int

    def __post_init__(self) -> None:
        self._check_rank()
        if self.elem_size < 1 or min(self.shape, default=1) < 0 or min(self.strides, default=0) < 0:
            raise LayoutError(f"{self}: sizes, extents and strides must be non-negative")


class PreparedLaunch:
    """A launch checked and built once; ``launch()`` enqueues it again on the resolved stream
    of the client that prepared it, with its arguments already packed. Thread-safe.

    ``keep`` holds whatever keeps the bindings' memory alive (the launch's arguments)."""

    __slots__ = ("_client", "_replay", "keep")

    def __init__(self, client: ComputeClient, replay: Callable[[int], None]) -> None:
        self._client = client
        self._replay = replay
        self.keep: object = None

    def launch(self) -> None:
        """Enqueue the launch and return at once; errors surface as for ``launch``."""
        client = self._client
        stream = client.pinned
        self._replay((stream if stream is not None else StreamId.current()).value)


class ComputeClient(ProcessBound):
    """Allocation, kernel submission, readback, synchronisation and capability queries of one
    device. ``Runtime.client(device)`` returns the one client of a device.

    :param device: the backend's device object (the registry key).
    :param server: the device's server.
    :param stream: the stream this client is pinned to; None: the calling thread's.
    :param runtime: the :class:`Runtime` the client answers as ``runtime``. None asks the
        server for a ``runtime`` attribute, which servers written before clients knew their
        runtime define.
    """

    __slots__ = ("_device", "_limits", "_runtime", "_server", "pinned")

    _registry: ClassVar[dict[Hashable, ComputeClient]] = {}
    #: reentrant: a driver's server factory may open another device's client (its reference)
    _registry_lock: ClassVar[threading.RLock] = threading.RLock()

    def __init__(
        self,
        device: Hashable,
        server: ComputeServer,
        stream: StreamId | None = None,
        runtime: type[Runtime] | None = None,
    ) -> None:
        self._device = device
        self._server = server
        #: the stream this client is pinned to (``set_stream``, ``fixed_execution_queue``);
        #: None: the calling thread's
        self.pinned = stream
        self._runtime: type[Runtime] | None = (
            runtime if runtime is not None else getattr(server, "runtime", None)
        )
        server.name_device(str(device))
        if self._runtime is not None:
            server.cache_origin = EntryOrigin(self._runtime.name(self), str(device))
        self._limits = LaunchLimits(str(device), server.properties(), server.features())

    # -- registration --------------------------------------------------------------------------
    @classmethod
    def init(
        cls, device: Hashable, server: ComputeServer, runtime: type[Runtime] | None = None
    ) -> ComputeClient:
        """Register ``server`` as the server of ``device`` and return its client, whose
        ``runtime`` is ``runtime``.

        :raises RudaPanic: when the device already has a registered server (one retired by a
            fork does not count).
        """
        with cls._registry_lock:
            registered = cls._registry.get(device)
            if registered is not None and registered._server.retired is None:
                raise RudaPanic(
                    f"a {type(cls._registry[device]._server).__name__} is already registered "
                    f"for {device}; use ComputeClient.load({device!r}) or Runtime.client()"
                )
            client = cls._registry[device] = cls(device, server, None, runtime)
            return client

    @classmethod
    def load(cls, device: Hashable) -> ComputeClient:
        """The client of an already initialised device.

        :raises RudaPanic: when no server is registered for ``device``.
        """
        with cls._registry_lock:
            client = cls._registry.get(device)
        if client is None:
            raise RudaPanic(f"no server is initialised for {device}; call Runtime.client(device)")
        return client

    @classmethod
    def get_or_init(
        cls,
        device: Hashable,
        make_server: Callable[[], ComputeServer],
        runtime: type[Runtime] | None = None,
    ) -> ComputeClient:
        """The client of ``device``, creating its server with ``make_server`` on first use, and
        again in a forked child whose inherited server is retired (see :mod:`.fork`). Used by
        ``Runtime.client`` implementations, which pass themselves as ``runtime``; thread-safe.

        :raises ServerUnhealthy: in a forked child, for a backend that cannot start again there.
        """
        client = cls._registry.get(device)
        if client is not None and client._server.retired is None:
            return client
        with cls._registry_lock:
            client = cls._registry.get(device)
            if client is None or client._server.retired is not None:
                client = cls._registry[device] = cls(device, make_server(), None, runtime)
            return client

    @classmethod
    def owning(cls, handle: Handle) -> ComputeClient:
        """The registered client whose server holds ``handle``'s memory.

        :raises InvalidHandle: when no registered client does (a server never registered).
        """
        with cls._registry_lock:
            for client in cls._registry.values():
                if client._server.server_id == handle.server_id:
                    return client
        raise InvalidHandle(f"{handle!r} belongs to no registered device's client")

    @classmethod
    def _after_fork_in_child(cls) -> None:
        """A parent's thread may have held the registry lock when it forked."""
        cls._registry_lock = threading.RLock()

    # -- identity and capabilities -------------------------------------------------------------
    @property
    def device(self) -> Hashable:
        """The backend device this client serves."""
        return self._device

    @property
    def server(self) -> ComputeServer:
        return self._server

    @property
    def runtime(self) -> type[Runtime]:
        """The :class:`Runtime` that made this client (``ComputeClient<R>``'s ``R``).

        :raises RudaPanic: for a client made without one, of a server that names none.
        """
        runtime = self._runtime
        if runtime is None:
            raise RudaPanic(
                f"{self!r} was made without a runtime; pass runtime= to ComputeClient, "
                "ComputeClient.init or ComputeClient.get_or_init"
            )
        return runtime

    def name(self) -> str:
        """The runtime's name on this device (``Runtime.name``)."""
        return self.runtime.name(self)

    def device_id(self) -> DeviceId:
        return self._server.device_id

    def properties(self) -> DeviceProperties:
        return self._server.properties()

    def features(self) -> Features:
        return self._server.features()

    def properties_fingerprint(self) -> str:
        """Hardware/capability identity of the device; computed once, no driver probe."""
        return self._server.properties_fingerprint()

    def info(self) -> Any:
        """The server's enumeration info (the ``info`` argument of ``enumerate_devices``)."""
        return self._server.info()

    def enumerate_devices(self, type_id: int = 0) -> list[DeviceId]:
        """Devices of this runtime under ``type_id`` (0: every type)."""
        return self.runtime.enumerate_devices(type_id, self.info())

    def enumerate_all_devices(self) -> list[DeviceId]:
        return self.runtime.enumerate_all_devices(self.info())

    def device_count(self, type_id: int = 0) -> int:
        return len(self.enumerate_devices(type_id))

    def device_count_total(self) -> int:
        return len(self.enumerate_all_devices())

    # -- streams -------------------------------------------------------------------------------
    def execution_stream(self) -> StreamId:
        """The explicitly assigned stream, else the calling thread's current stream."""
        return self.pinned if self.pinned is not None else StreamId.current()

    def set_stream(self, stream: StreamId) -> None:
        """Unsafe: pin this client object to ``stream``. Adds no ordering between work already
        queued on the previous stream and work queued after the call.

        :raises TypeError: ``stream`` is not a :class:`StreamId` (``StreamId.new()`` makes one).
        """
        if not isinstance(stream, StreamId):
            raise TypeError(
                f"set_stream takes a StreamId (StreamId.new() makes one), not {stream!r}"
            )
        self.pinned = stream

    def same_execution_queue(self, other: ComputeClient) -> bool:
        """Same device server and same currently resolved stream. Not a completion check."""
        return self._server is other._server and self.execution_stream() == other.execution_stream()

    def fixed_execution_queue(self) -> ComputeClient:
        """A clone pinned to the currently resolved stream; creates no stream, waits for
        nothing."""
        return ComputeClient(self._device, self._server, self.execution_stream(), self._runtime)

    # -- memory and transfers ------------------------------------------------------------------
    def create_from_slice(self, data: Any) -> Handle:
        """Device memory holding a copy of ``data`` (any C-contiguous buffer)."""
        return self._server.create(_byte_view(data), self.execution_stream().value)

    def empty(self, nbytes: int) -> Handle:
        """Uninitialised device memory of ``nbytes`` bytes (not zeroed).

        :param nbytes: a non-negative integer (``int`` or NumPy integer).
        :raises ValueError: for a negative size, a bool, a float or another non-integer.
        """
        if type(nbytes) is not int or nbytes < 0:
            nbytes = _check_nbytes(nbytes)
        stream = self.pinned  # execution_stream(), inlined: every op result is allocated
        if stream is None:
            stream = getattr(thread_stream, "stream", None) or StreamId.current()
        return self._server.empty(nbytes, stream.value)

    def write(self, handle: Handle, data: Any) -> None:
        """Enqueue a copy of ``data`` into ``handle`` (sizes must match exactly)."""
        (binding,) = _bindings("write", (handle,))
        view = _byte_view(data)
        if view.nbytes != handle.nbytes:
            raise InvalidHandle(
                f"cannot write {view.nbytes} bytes into a {handle.nbytes}-byte handle"
            )
        self._server.write(binding, view, self.execution_stream().value)

    def copy(self, source: Handle, destination: Handle) -> None:
        """Enqueue a copy of ``source``'s bytes into ``destination`` on the resolved stream and
        return at once: two handles of this device, of equal size, not overlapping. The copy
        is ordered as a launch that reads ``source`` and writes ``destination`` (work on other
        streams included). Inside ``client.capture()`` it is recorded and replayed in order
        with the launches. A failure of the work that wrote ``source`` is not copied: it
        poisons ``destination`` and surfaces at the next flush, sync or read on the stream.

        :raises TypeError: at once, when either is not a :class:`Handle`.
        :raises InvalidHandle: at once: a handle of another device or dropped, sizes that
            differ, or overlapping handles.
        :raises CaptureError: inside a capture of another stream by the calling thread.
        """
        source_binding, destination_binding = _bindings("copy", (source, destination))
        self._server.copy(source_binding, destination_binding, self.execution_stream().value)

    def create_tensor_from_slice(
        self, data: Any, shape: Sequence[int], elem_size: int
    ) -> tuple[Handle, tuple[int, ...]]:
        """Device memory for a contiguous tensor holding ``data``; returns it with its strides.

        :raises LayoutError: when ``data`` is not ``prod(shape) * elem_size`` bytes.
        """
        view = _byte_view(data)
        dims, expected = _tensor_layout(shape, elem_size)
        if view.nbytes != expected:
            raise LayoutError(
                f"a tensor of shape {dims} with {elem_size}-byte elements needs "
                f"{expected} bytes; got {view.nbytes}"
            )
        return self.create_from_slice(view), contiguous_strides(dims)

    def empty_tensor(self, shape: Sequence[int], elem_size: int) -> tuple[Handle, tuple[int, ...]]:
        """Uninitialised memory for a contiguous tensor; returns it with its strides."""
        dims, nbytes = _tensor_layout(shape, elem_size)
        return self.empty(nbytes), contiguous_strides(dims)

    def read_one(self, handle: Handle, timeout: float | None = None) -> Bytes:
        """Read one handle, waiting (at most ``timeout`` seconds; None: forever) for the work
        that writes it.

        :raises TimeoutError: when that work is not complete within ``timeout`` seconds (the
            read stays enqueued; reading again waits for it anew).
        :raises ServerError: the stream's pending error or the buffer's poison.
        """
        return self.read_async([handle]).result(timeout)[0]

    def read_one_unchecked(self, handle: Handle) -> Bytes:
        """Like ``read_one`` but panics on failure. (It does not disable bounds checks.)"""
        return _panicking(lambda: self.read_one(handle))

    def read_async(self, handles: Sequence[Handle]) -> RudaFuture[list[Bytes]]:
        """Enqueue reads of ``handles``; never waits.

        :raises TypeError: at once, when an element is not a :class:`Handle` (a ``Binding``,
            say: bindings are what ``launch`` takes).
        """
        return self._server.read(_bindings("read", handles), self.execution_stream().value)

    def read(self, handles: Sequence[Handle]) -> list[Bytes]:
        """Read several handles, waiting; panics on failure."""
        return _panicking(lambda: self.read_async(handles).result())

    def read_tensor_async(self, descriptors: Sequence[CopyDescriptor]) -> RudaFuture[list[Bytes]]:
        """Enqueue reads of tensors, each returned contiguous (row-major).

        :raises LayoutError: at once, for a layout ``Runtime.can_read_tensor`` refuses or one
            that does not fit its handle; nothing is relaid silently.
        """
        for d in descriptors:
            if not self.runtime.can_read_tensor(d.shape, d.strides):
                raise LayoutError(
                    f"{self.runtime.__name__} cannot read a tensor of shape {d.shape} with "
                    f"strides {d.strides} as is; make it contiguous first"
                )
            span = d.span * d.elem_size
            if span > d.handle.nbytes:
                raise LayoutError(
                    f"shape {d.shape} with strides {d.strides} spans {span} bytes; the handle "
                    f"has {d.handle.nbytes}"
                )
        raw = self.read_async([d.handle for d in descriptors])
        return raw.then(
            lambda data: [_gather(d, b) for d, b in zip(descriptors, data, strict=True)]
        )

    def read_tensor(self, descriptors: Sequence[CopyDescriptor]) -> list[Bytes]:
        """Read tensors, waiting; panics on failure."""
        return _panicking(lambda: self.read_tensor_async(descriptors).result())

    def to_client(self, handle: Handle, other: ComputeClient) -> Handle:
        """A handle of ``other``'s device holding a copy of ``handle``'s bytes (CubeCL's
        ``to_client``); any pair of devices. The copy is ordered after the work queued on
        ``handle`` (on any stream of this device) and before the work enqueued later on
        ``other``'s resolved stream (and, as for any handle, on its other streams); later work
        here that overwrites ``handle`` waits for the copy. Never waits for the device, except
        that a copy through the host waits on it for the source's bytes when the destination
        cannot (see ``ComputeServer.copy_to``); a direct copy (CUDA peers) never does.

        A failure of the work that wrote ``handle`` surfaces on the destination: the new handle
        is poisoned and ``other``'s next flush, sync or read on that stream raises it; an error
        pending on this client's stream stays pending there as well.

        :raises TypeError: at once, when ``handle`` is not a :class:`Handle` or ``other`` not a
            :class:`ComputeClient`.
        :raises InvalidHandle: at once, before anything runs: ``handle`` belongs to another
            device than this client's, or ``other`` is a client of this same device.
        :raises CaptureError: inside a capture of either client's stream.
        """
        (binding,) = _bindings("to_client", (handle,))
        if not isinstance(other, ComputeClient):
            raise TypeError(
                f"to_client copies to another device's ComputeClient; got {other!r} "
                f"({type(other).__name__}). Pass ruda_core.client('cuda:1'), say"
            )
        if other._server is self._server:
            raise InvalidHandle(
                f"to_client copies between devices; {other!r} is a client of {self._device} "
                "itself. Use the handle as it is (work on another stream is ordered after its "
                "writer)"
            )
        if binding.server_id != self._server.server_id:
            raise InvalidHandle(
                f"{handle!r} does not belong to {self._device}: call to_client on the client of "
                f'its own device (ruda_core.client("{device_name(binding.server_id)}"), or '
                "ComputeClient.owning(handle))"
            )
        return self._server.copy_to(
            binding, self.execution_stream().value, other._server, other.execution_stream().value
        )

    def memory_usage(self) -> MemoryUsage:
        """The server allocator's accounting (not host RSS or physical GPU memory)."""
        return self._server.memory_usage()

    def memory_cleanup(self) -> None:
        """Give back to the driver every pool page that holds no live handle and no memory whose
        queued work is unfinished. Never waits: memory of a handle dropped while work using it
        is still queued stays reserved until that work is done, then a later call gives it
        back (or the pool reuses it)."""
        self._server.memory_cleanup()

    # -- execution -----------------------------------------------------------------------------
    def launch(
        self,
        task: RudaTask,
        count: CountLike,
        dim: DimLike,
        bindings: Sequence[Binding],
        scalars: Sequence[np.generic] = (),
        metadata: Sequence[int] = (),
    ) -> None:
        """Enqueue ``task`` in Checked mode and return at once. ``count`` and ``dim`` are a
        ``RudaCount`` and a ``RudaDim``, or an ``int`` or a tuple of 1 to 3 ints each (here, in
        ``launcher``'s ``run``, ``launch_unchecked`` and ``prepare``).

        :raises LaunchConfigError: at once, for a count or dim of another kind or out of range,
            or for bindings, scalars or metadata values the task does not take
            (:meth:`~.compiler.RudaTask.check_arity`: their numbers, each scalar's type, each
            binding's alignment and length).
        :raises TooManyResources: at once, when the launch exceeds a device limit.
        :raises InvalidHandle: at once, for a freed binding or one of another device.
        Compilation and execution errors surface at the next flush, sync or read.
        """
        if type(count) is not RudaCount or type(dim) is not RudaDim:
            count, dim = launch_geometry(count, dim)
        self.admit(task, count, dim, scalars)
        task.check_arity(bindings, scalars, metadata)
        args = _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata))
        stream = self.pinned  # execution_stream(), inlined
        if stream is None:
            stream = getattr(thread_stream, "stream", None) or StreamId.current()
        self._server.launch(task, args, _CHECKED, stream.value)

    def launcher(self, task: RudaTask, mode: ExecutionMode = _CHECKED) -> ClientLaunch:
        """``launch(task, ...)`` on this client as one function ``run(count, dim, bindings,
        scalars, metadata)``, with what is fixed per task (the server's lookups, a geometry
        already found within the device's limits) done once: the same checks, raised at once,
        and the same stream resolution at each call: the fast method of the server's
        :class:`~.launches.KernelLauncher`, with this client as its
        :class:`~.launches.LaunchSite`. Meant to be kept by whoever launches ``task`` often.

        :param mode: the execution mode of every launch; ``launch_unchecked``'s is
            ``BoundsCheckMode.current().execution_mode`` (read it when the mode may change).
        """
        return self._server.launcher(task, mode, self).fast

    def admit(
        self, task: RudaTask, count: RudaCount, dim: RudaDim, scalars: Sequence[np.generic]
    ) -> bool:
        """Make the checks of :meth:`~.limits.LaunchLimits.check`, comparing in place and
        calling it only where a launch is near a limit; True when the launch fits whatever the
        scalars (no dynamic shared memory to size, no warpgroups).

        :raises TooManyResources: for a launch over a limit.
        :raises LaunchConfigError: for a cube the task or the device's planes do not allow.
        """
        limits = self._limits
        max_units, (dx, dy, dz), (cx, cy, cz), max_shared, row_planes = limits.sizes
        x, y, z = dim.x, dim.y, dim.z
        units = x * y * z
        if (  # check() only when a limit is passed: this runs on every raw launch()
            units > max_units
            or units > task.max_units
            or units < task.min_units
            or x > dx
            or y > dy
            or z > dz
            or count.x > cx
            or count.y > cy
            or count.z > cz
            or task.shared_bytes > max_shared
            or task.dynamic_shared
            or task.uses_warpgroups
            or (y * z > 1 and x % row_planes and task.uses_planes)
            or (task.wide_positions and count.x * count.y * count.z * units >= WIDE_LIMIT)
        ):
            limits.check(task, count, dim, scalars)  # raises unless only sizes to check
            return False
        return True

    def launch_unchecked(
        self,
        task: RudaTask,
        count: CountLike,
        dim: DimLike,
        bindings: Sequence[Binding],
        scalars: Sequence[np.generic] = (),
        metadata: Sequence[int] = (),
    ) -> None:
        """Unsafe: enqueue ``task`` with the checks ``BoundsCheckMode.current()`` selects. With
        ``auto`` the caller guarantees every access is in bounds and every loop terminates."""
        count, dim = launch_geometry(count, dim)
        self._limits.check(task, count, dim, scalars)
        task.check_arity(bindings, scalars, metadata)
        mode = BoundsCheckMode.current().execution_mode
        args = _new_args(LaunchArgs, (count, dim, bindings, scalars, metadata))
        stream = self.pinned
        value = (stream if stream is not None else StreamId.current()).value
        self._server.launch(task, args, mode, value)

    def prepare(
        self,
        task: RudaTask,
        count: CountLike,
        dim: DimLike,
        bindings: Sequence[Binding],
        scalars: Sequence[np.generic] = (),
        metadata: Sequence[int] = (),
        *,
        unchecked: bool = False,
    ) -> PreparedLaunch:
        """Check and build a launch once, for replaying it many times with ``.launch()``.

        The bindings must stay valid as long as the prepared launch is used (keep their
        handles). ``unchecked`` takes the mode of ``launch_unchecked`` at this moment.

        :raises TooManyResources: at once, as ``launch``.
        :raises CompilationError: at once, when the kernel does not build.
        """
        count, dim = launch_geometry(count, dim)
        self._limits.check(task, count, dim, scalars)
        task.check_arity(bindings, scalars, metadata)
        args = LaunchArgs(count, dim, bindings, scalars, metadata)
        mode = BoundsCheckMode.current().execution_mode if unchecked else _CHECKED
        return PreparedLaunch(self, self._server.prepare(task, args, mode))

    def capture(self) -> Graph:
        """A :class:`Graph` to use as ``with client.capture() as graph:``: the launches enqueued
        on this client's resolved stream inside the block are checked and recorded, not run;
        ``graph.replay()`` enqueues them all again, as asynchronously as ``launch``. Inside the
        block, allocations, transfers, syncs, profiles and launches on another stream raise
        :class:`CaptureError`.
        """
        return Graph(self)

    def flush(self) -> None:
        """Submit queued work. Not a completion fence.

        :raises ServerError: the stream's pending error, if any.
        """
        self._server.flush(self.execution_stream().value)

    def sync(self) -> RudaFuture[None]:
        """A future that completes when the resolved stream's queued work has; creating it does
        not wait. Its result raises the stream's pending error or a Validate report."""
        return self._server.sync(self.execution_stream().value)

    def profile(self, fn: Callable[[], T], name: str | None = None) -> tuple[T, ProfileDuration]:
        """Run ``fn`` and time the device work it enqueues on this device (any stream).

        Returns ``fn``'s result and a :class:`ProfileDuration`: ``submission_ns`` is the host
        time ``fn`` took to enqueue, ``execution_ns`` the device time of its kernels and
        ``transfer_ns`` of its copies, measured with device timestamps (``method``); its
        ``trace`` exports to Chrome/Perfetto. On a device without timestamps ``execution_ns``
        is the wall time from the start of ``fn`` to the completion of a sync, transfers
        included, and the trace is empty. Waits for the profiled work. Profiles do not nest.
        """
        server = self._server
        label = name if name is not None else getattr(fn, "__name__", "profile")
        stamped = self.features().has(Feature.DEVICE_TIMING)
        stream = self.execution_stream().value
        if not stamped:  # timed by the host: what was queued before is not timed
            self.sync().result()
        server.start_profile(stream, stamped)
        start = time.perf_counter_ns()
        try:
            result = fn()
        finally:
            submission = time.perf_counter_ns() - start
            trace = server.end_profile()
        if stamped:
            duration = ProfileDuration.from_trace(label, submission, TimingMethod.DEVICE, trace)
            return result, duration
        # execution: the wall time from the start of fn to the completion of a sync (queueing
        # included); transfers are not told apart
        done = time.perf_counter_ns() - start
        return result, ProfileDuration(label, submission, done, 0, TimingMethod.SYSTEM, trace)

    def __repr__(self) -> str:
        pinned = f", stream={self.pinned.value}" if self.pinned is not None else ""
        return f"ComputeClient({self._device}{pinned})"

    def sent_instead(self) -> str:
        return (
            f"Send the device's name ({str(self._device)!r}) and open it where it is used, with "
            "ruda_core.client(name) (in a Dask task: ruda_core.dask.worker_client())"
        )


if hasattr(os, "register_at_fork"):  # POSIX only
    os.register_at_fork(after_in_child=ComputeClient._after_fork_in_child)


def tensor_shape(shape: SupportsIndex | Iterable[SupportsIndex]) -> tuple[int, ...]:
    """``shape`` as a tuple of Python ints: an integer is a 1-d shape, and NumPy's integers
    count as integers (as ``np.empty`` takes them).

    :raises LayoutError: for an extent that is not a non-negative integer (a float, a bool, a
        negative number).
    """
    if isinstance(shape, np.ndarray):  # an array of extents, or one (0-d)
        shape = cast(SupportsIndex | list[SupportsIndex], shape.tolist())
    extents = (shape,) if isinstance(shape, SupportsIndex) else tuple(shape)
    try:
        if any(isinstance(n, bool | np.bool_) for n in extents):
            raise TypeError("a bool is no extent")
        dims = tuple(operator.index(n) for n in extents)
    except TypeError:
        dims = ()
    if len(dims) != len(extents) or any(n < 0 for n in dims):
        raise LayoutError(f"shape {extents} must hold non-negative integers")
    return dims


def _tensor_layout(shape: Sequence[int], elem_size: int) -> tuple[tuple[int, ...], int]:
    """The extents of ``shape`` (:func:`tensor_shape`) and the bytes of a contiguous tensor of
    them."""
    if elem_size < 1:
        raise LayoutError(f"element size {elem_size} must be a positive int")
    dims = tensor_shape(shape)
    return dims, math.prod(dims) * elem_size


def _gather(d: CopyDescriptor, raw: Bytes) -> Bytes:
    if d.is_contiguous:
        return raw[: d.size * d.elem_size]
    flat = np.frombuffer(raw, dtype=np.uint8)
    view = np.lib.stride_tricks.as_strided(
        flat,
        shape=(*d.shape, d.elem_size),
        strides=(*(s * d.elem_size for s in d.strides), 1),
        writeable=False,
    )
    return np.ascontiguousarray(view).reshape(-1).data.toreadonly()


def _byte_view(data: Any) -> memoryview:
    if isinstance(data, np.ndarray) and data.dtype.kind == "V" and data.dtype.names is None:
        # ml_dtypes' bfloat16 (and other extension types) export no buffer format: as bytes
        if not data.flags.c_contiguous:
            raise ValueError("the data is not C-contiguous; copy it with np.ascontiguousarray")
        data = data.reshape(-1).view(np.uint8)
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(
            f"{type(data).__name__} has no buffer interface; pass bytes, a bytearray, a "
            "memoryview or a NumPy array"
        ) from None
    if view.format == "O":
        raise TypeError("an array of Python objects holds references, not values a device reads")
    if not view.c_contiguous:
        raise ValueError("the data is not C-contiguous; copy it with np.ascontiguousarray first")
    if view.nbytes == 0:
        return memoryview(b"")  # memoryview.cast refuses shapes with a zero extent
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def _check_nbytes(nbytes: object) -> int:
    n = integral(nbytes)
    if n is None or n < 0:
        raise ValueError(
            f"empty() takes a non-negative integer number of bytes (an int or a NumPy integer), "
            f"got {nbytes!r} ({type(nbytes).__name__})"
        )
    return n


def _bindings(what: str, handles: Sequence[Handle]) -> list[Binding]:
    """The bindings of ``handles``.

    :raises TypeError: naming the first element that is not a :class:`Handle`.
    """
    try:
        return [h.binding() for h in handles]
    except AttributeError:
        for k, h in enumerate(handles):  # only on failure: name what was passed
            if not callable(getattr(h, "binding", None)):
                raise TypeError(
                    f"{what} takes Handles; element {k} is {h!r} ({type(h).__name__}). Pass the "
                    "Handle that create_from_slice() or empty() returned (a Binding is what the "
                    "low-level launch takes; a RudaTensor has its Handle as .handle)"
                ) from None
        raise


def _panicking(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except ServerError as exc:
        raise RudaPanic(f"{type(exc).__name__}: {exc}") from exc
