"""``OpenCLDriver`` and ``OpenCLServer``: ruda's execution contract on one OpenCL device,
through PyOpenCL.

``RudaCount`` is the work-group count and ``RudaDim`` the local size (global size = count x
dim). Each stream slot is one in-order ``CommandQueue`` with profiling enabled; a fence is a
marker event; cross-stream ordering is a barrier waiting on another queue's marker. Programs
are built and loaded by :mod:`ruda_opencl.driver`, whose ``translate`` turns every PyOpenCL
error into a ruda error.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar, cast

import numpy as np
import pyopencl as cl

from ruda_core.codegen.abi import ArgKind, arg_values, make_arg_reader
from ruda_core.codegen.printf import print_sites, record_format
from ruda_core.runtime import (
    Binding,
    Bytes,
    CompiledKernel,
    ComputeServer,
    DeviceProperties,
    Driver,
    IoError,
    KernelLaunch,
    LaunchArgs,
    LoadedKernel,
    RudaCount,
    RudaDim,
    RudaFuture,
    RudaTask,
    Run,
    ServerStream,
    Stamp,
    TooManyResources,
    wait_until,
)
from ruda_core.runtime.console import flush_c_stdout
from ruda_core.runtime.print_records import PrintTable

from .builds_apart import ApartBuilder
from .capabilities import OpenCLCapabilities, subgroups_from_env
from .compiler import OpenCLCompiler
from .driver import (
    all_devices,
    build_program,
    driver_fingerprint,
    guard,
    load_program,
    platform_runtime,
    translate,
)
from .printing import StreamPrints
from .runtime import OpenCLDevice
from .storage import OpenCLStorage

__all__ = ["OpenCLDriver", "OpenCLServer"]

T = TypeVar("T")
_COMPLETE = cl.command_execution_status.COMPLETE
_RUNNING = cl.command_execution_status.RUNNING
_enqueue_kernel = cl.enqueue_nd_range_kernel


class OpenCLStream(ServerStream):
    """One in-order command queue, and the events of host copies still in flight (PyOpenCL waits
    for such an event when it is dropped, so dropping it at once would make copies blocking)."""

    def __init__(self, slot: int, queue: Any, prints: PrintTable) -> None:
        super().__init__(slot)
        self.queue = queue
        self.in_flight: list[Any] = []
        #: the event and the name of the kernel last enqueued, for :meth:`OpenCLDriver.busy`
        self.kernel_event: Any = None
        self.kernel_name = ""
        #: the record buffer of its printing kernels (see :mod:`ruda_opencl.printing`)
        self.prints = StreamPrints(queue, prints)

    def let_go_done(self) -> None:
        """Let go of the host copies whose transfers have completed."""
        self.in_flight = [e for e in self.in_flight if e.command_execution_status != _COMPLETE]


class _EventFence:
    """An OpenCL event: a fence, and a stamp where it is a marker on a profiling queue."""

    __slots__ = ("event",)

    def __init__(self, event: Any) -> None:
        self.event = event

    def done(self) -> bool:
        return bool(self.event.command_execution_status == _COMPLETE)

    def wait(self) -> None:
        wait_until(self.done)  # a signal ends it, unlike the driver's wait
        guard("waiting for a queue", self.event.wait)


def _event_future(event: Any, value: Callable[[], T], printed: Callable[[], None]) -> RudaFuture[T]:
    """A sync or read: once the event is done, what the kernels before it printed is written
    out (``printed`` writes their records) before ``value()``."""

    def after_printing() -> T:
        flush_c_stdout()
        printed()
        return value()

    return RudaFuture.after(_EventFence(event), after_printing)


def _enqueue_write(stream: OpenCLStream, binding: Binding, host: np.ndarray) -> Any:
    """Enqueue a copy of ``host`` into ``binding`` on the stream's queue; the stream keeps its
    event, which holds ``host`` until the copy is done (after letting go of the host copies of
    the transfers done before it). Returns the event."""
    stream.let_go_done()
    try:
        event = cl.enqueue_copy(
            stream.queue,
            cast(Any, binding.resource),
            host,
            dst_offset=binding.offset_bytes,
            is_blocking=False,
        )
    except cl.Error as exc:
        raise translate(f"writing {binding.nbytes} bytes", exc, IoError) from exc
    stream.in_flight.append(event)
    return event


def _sizes(count: RudaCount, dim: RudaDim) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The global and local sizes of a launch: one axis where the cube and the count are one
    row, which the drivers take faster than three (``get_local_size(1)`` is 1 either way)."""
    if dim.y == dim.z == count.y == count.z == 1:
        return (count.x * dim.x,), (dim.x,)
    return (count.x * dim.x, count.y * dim.y, count.z * dim.z), (dim.x, dim.y, dim.z)


def _same_signs(a: Sequence[Any], b: Sequence[Any] | None, positions: Sequence[int]) -> bool:
    """Whether the floats at ``positions`` of two equal argument tuples have the same signs."""
    assert b is not None  # equal to ``a``
    return all(math.copysign(1.0, a[k]) == math.copysign(1.0, b[k]) for k in positions)


class _Launcher:
    """A built kernel with its argument plan and limits, made once per (kernel, mode)."""

    __slots__ = (
        "arg_dtypes",
        "count",
        "dim",
        "entrypoint",
        "floats",
        "gsize",
        "kernel",
        "lsize",
        "max_units",
        "name",
        "print_arg",
        "program",
        "read_args",
        "run",
        "values",
        "values_source",
    )

    kernel: Any  #: the pyopencl.Kernel every ordinary launch binds

    def __init__(
        self, program: Any, compiled: CompiledKernel, device: Any, prints: PrintTable
    ) -> None:
        args = compiled.args
        self.program = program
        self.name = compiled.definition.name
        self.entrypoint = compiled.entrypoint
        self.arg_dtypes = [
            None if a.kind in (ArgKind.BUFFER, ArgKind.SHARED, ArgKind.PRINT) else a.dtype
            for a in args
        ]
        #: the position of the stream's print-record buffer among the arguments, else None
        self.print_arg = next((k for k, a in enumerate(args) if a.kind is ArgKind.PRINT), None)
        base = 0
        if self.print_arg is not None:
            base = prints.register([record_format(i) for i in print_sites(compiled.definition)])
        self.kernel = cl.Kernel(program, compiled.entrypoint)
        self.kernel.set_scalar_arg_dtypes(self.arg_dtypes)
        #: the argument values last set on ``kernel`` (OpenCL captures them at each enqueue, so
        #: a launch with equal values sets none); launches are serialised by the server's lock
        self.values: tuple[object, ...] | None = None
        #: the positions of float scalars, whose signs are compared apart: ``==`` takes -0.0
        #: for 0.0 (and NaN for unequal to itself, which only sets the arguments again)
        self.floats = tuple(
            k for k, a in enumerate(args) if a.kind is ArgKind.SCALAR and a.dtype.kind == "f"
        )
        scalar_dtypes = [p.elem.numpy for p in compiled.definition.scalar_params]
        #: the argument values as source (:func:`arg_values`), for the generated launch
        printing = ("stream.prints.buffer()", str(base))
        self.values_source = arg_values(
            args, "{b}.resource", scalar_dtypes, cl.LocalMemory, printing
        )
        #: a prepared launch's values: its run sets the print-record buffer of its stream
        self.read_args = make_arg_reader(
            args, "{b}.resource", scalar_dtypes, cl.LocalMemory, ("None", str(base))
        )
        self.max_units = int(
            self.kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)
        )
        #: the count and dim of the last launch, checked, and the sizes enqueued for them:
        #: a launch with the very same objects reuses them
        self.count: RudaCount | None = None
        self.dim: RudaDim | None = None
        self.gsize: tuple[int, ...] = ()
        self.lsize: tuple[int, ...] = ()
        #: the server's launch of this kernel, made at its first launch
        self.run: KernelLaunch | None = None

    def shape(self, count: RudaCount, dim: RudaDim) -> None:
        """Make ``count`` and ``dim``, already checked against the kernel's limits, the ones
        the next launches enqueue while they are passed again."""
        self.gsize, self.lsize = _sizes(count, dim)
        self.count, self.dim = count, dim

    def bound_copy(self, values: Sequence[Any]) -> Any:
        """A kernel object of its own with ``values`` set as its arguments once (for a
        prepared launch; the shared ``kernel`` is re-bound by every ordinary launch)."""
        own = cl.Kernel(self.program, self.entrypoint)
        own.set_scalar_arg_dtypes(self.arg_dtypes)
        own.set_args(*values)
        return own


class OpenCLDriver(Driver):
    """The driver of one OpenCL device: a context, and an in-order profiling queue per stream
    slot (see the module docstring)."""

    #: Intel's CPU runtime finishes every queue when it is unloaded at exit
    teardown_waits = True

    def __init__(self, device: Any, index: int, capabilities: OpenCLCapabilities) -> None:
        """:param device: the ``pyopencl.Device``, ``index`` its place in ``all_devices()``."""
        self._device = device
        self._index = index
        #: builds in a child process, for a compiler that may end the process it builds in
        self._apart = ApartBuilder() if capabilities.builds_apart else None
        self._context = cl.Context([device])
        self.compiler = OpenCLCompiler()
        self._build_options = list(capabilities.build_options)
        #: the pages of its server's pools
        self.storage = OpenCLStorage(self._context, device)
        #: the print sites of its printing kernels (see :mod:`ruda_opencl.printing`)
        self._prints = PrintTable()

    def new_stream(self, slot: int) -> OpenCLStream:
        props = cl.command_queue_properties.PROFILING_ENABLE
        queue = guard("creating a queue", lambda: cl.CommandQueue(self._context, properties=props))
        return OpenCLStream(slot, queue, self._prints)

    def build(self, compiled: CompiledKernel) -> _Launcher:
        loc = compiled.definition.source
        where = (loc.file, loc.line) if loc is not None else (None, None)
        source, options, name = compiled.source, self._build_options, compiled.definition.name
        if self._apart is not None:
            binary = self._apart.build(self._index, source, options, name, where)
            return self.load_binary(compiled, binary)
        program = build_program(self._context, self._device, source, options, name, where)
        return _Launcher(program, compiled, self._device, self._prints)

    def binary(self, built: Any) -> bytes | None:
        binaries = built.program.binaries
        return bytes(binaries[0]) if binaries and binaries[0] else None

    def load_binary(self, compiled: CompiledKernel, binary: bytes) -> _Launcher:
        program = load_program(self._context, self._device, binary, self._build_options)
        return _Launcher(program, compiled, self._device, self._prints)

    def kernel_launch(self, task: RudaTask, kernel: LoadedKernel) -> KernelLaunch:
        """Set the arguments only when they changed, then one ``clEnqueueNDRangeKernel`` of the
        sizes checked for the count and dim last passed; generated once per built kernel, with
        the argument values read inline."""
        launcher: _Launcher = kernel.built
        if launcher.run is not None:
            return launcher.run
        values, env = launcher.values_source
        sign_check = " or not same_signs(values, last, floats)" if launcher.floats else ""
        source = (
            "def run(stream, count, dim, b, s, m):\n"
            "    if dim is not launcher.dim or count is not launcher.count:\n"
            "        check_units(launcher, dim)\n"
            "        launcher.shape(count, dim)\n"
            f"    values = ({values}{',' if values else ''})\n"
            "    try:\n"
            "        last = launcher.values\n"
            f"        if values != last{sign_check}:\n"
            "            kernel.set_args(*values)\n"
            "            launcher.values = values\n"
            "        stream.kernel_event = enqueue(\n"
            "            stream.queue, kernel, launcher.gsize, launcher.lsize\n"
            "        )\n"
            "        stream.kernel_name = name\n"
            "    except Error as exc:\n"
            "        launcher.values = None  # a failed set_args may have set some of them\n"
            "        raise translate(what, exc) from exc\n"
        )
        env = {
            **env,
            "launcher": launcher,
            "check_units": self._check_units,
            "kernel": launcher.kernel,
            "floats": launcher.floats,
            "same_signs": _same_signs,
            "enqueue": _enqueue_kernel,
            "Error": cl.Error,
            "translate": translate,
            "what": f"launching kernel {launcher.name}",
            "name": launcher.name,
        }
        exec(compile(source, f"<ruda OpenCL launch of {launcher.name}>", "exec"), env)
        run: KernelLaunch = env["run"]  # type: ignore[assignment]  # defined above
        launcher.run = run
        return run

    def prepare(
        self, task: RudaTask, kernel: LoadedKernel, launch: KernelLaunch, args: LaunchArgs
    ) -> Run:
        count, dim, bindings, scalars, metadata = args
        launcher: _Launcher = kernel.built
        self._check_units(launcher, dim)
        own = launcher.bound_copy(launcher.read_args(bindings, scalars, metadata))
        print_arg = launcher.print_arg
        gsize, lsize = _sizes(count, dim)
        enqueue = _enqueue_kernel

        def run(stream: ServerStream) -> None:
            ocl: OpenCLStream = stream  # type: ignore[assignment]  # cast() is a call
            try:
                if print_arg is not None:
                    own.set_arg(print_arg, ocl.prints.buffer())
                ocl.kernel_event = enqueue(ocl.queue, own, gsize, lsize)
                ocl.kernel_name = launcher.name
            except cl.Error as exc:
                raise translate(f"launching kernel {launcher.name}", exc) from exc

        return run

    def _check_units(self, launcher: _Launcher, dim: RudaDim) -> None:
        if dim.x * dim.y * dim.z > launcher.max_units:
            raise TooManyResources(
                f"{dim} is {dim.num_units} units; kernel {launcher.name} can run at most "
                f"{launcher.max_units} per cube on {self._device.name}. Shrink RudaDim"
            )

    def prepare_copy(self, source: Binding, destination: Binding) -> Run:
        """One ``clEnqueueCopyBuffer`` on the stream's queue (an event without host memory,
        dropped at once)."""
        src, dst = cast(Any, source.resource), cast(Any, destination.resource)
        src_offset, dst_offset = source.offset_bytes, destination.offset_bytes
        nbytes = source.nbytes

        def run(stream: ServerStream) -> None:
            queue = cast(OpenCLStream, stream).queue
            try:
                cl.enqueue_copy(
                    queue,
                    dst,
                    src,
                    byte_count=nbytes,
                    src_offset=src_offset,
                    dst_offset=dst_offset,
                )
            except cl.Error as exc:
                raise translate(f"copying {nbytes} bytes", exc, IoError) from exc

        return run

    def write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        host = np.frombuffer(data, dtype=np.uint8).copy()  # the caller may reuse its buffer
        _enqueue_write(cast(OpenCLStream, stream), binding, host)

    def write_owned(self, stream: ServerStream, binding: Binding, data: memoryview) -> _EventFence:
        """Writes from ``data`` itself. The fence is the write's event: PyOpenCL's event of a
        host copy holds the host array until it is waited for (the stream keeps it too, so a
        dropped fence does not wait)."""
        ocl = cast(OpenCLStream, stream)
        event = _enqueue_write(ocl, binding, np.frombuffer(data, dtype=np.uint8))
        guard("flushing a queue", ocl.queue.flush)  # the host may wait for the fence
        return _EventFence(event)

    def read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        ocl = cast(OpenCLStream, stream)
        queue = ocl.queue
        ocl.let_go_done()  # before the new host copies: a stream of reads holds one at a time
        hosts = [np.empty(b.nbytes, dtype=np.uint8) for b in bindings]
        try:
            printed = self._take_prints(ocl)
            for host, b in zip(hosts, bindings, strict=True):
                if b.nbytes:
                    ocl.in_flight.append(
                        cl.enqueue_copy(
                            queue,
                            host,
                            cast(Any, b.resource),
                            src_offset=b.offset_bytes,
                            is_blocking=False,
                        )
                    )
            marker = cl.enqueue_marker(queue)
            queue.flush()
        except cl.Error as exc:
            raise translate("reading", exc, IoError) from exc
        return _event_future(marker, lambda: [h.data.toreadonly() for h in hosts], printed)

    def fence(self, stream: ServerStream) -> _EventFence:
        queue = cast(OpenCLStream, stream).queue
        marker = guard("recording a fence", lambda: cl.enqueue_marker(queue))
        queue.flush()  # another queue may wait on it: it must make progress
        return _EventFence(marker)

    def wait(self, stream: ServerStream, fence: Any) -> None:
        if fence.done():
            return
        queue = cast(OpenCLStream, stream).queue
        guard("ordering queues", lambda: cl.enqueue_barrier(queue, wait_for=[fence.event]))

    def timestamp(self, stream: ServerStream) -> _EventFence:
        """A marker on the (profiling) queue: its end time is when the device reached it."""
        queue = cast(OpenCLStream, stream).queue
        return _EventFence(guard("recording a timestamp", lambda: cl.enqueue_marker(queue)))

    def elapsed_ns(self, start: Stamp, end: Stamp) -> int:
        a, b = cast(_EventFence, start), cast(_EventFence, end)
        a.wait()
        b.wait()
        return int(b.event.profile.end) - int(a.event.profile.end)

    def busy(self, stream: ServerStream) -> str | None:
        ocl = cast(OpenCLStream, stream)
        event, name = ocl.kernel_event, ocl.kernel_name
        status = _COMPLETE if event is None else event.command_execution_status
        if status == _COMPLETE:
            return None
        return f"kernel {name} is {'running' if status == _RUNNING else 'queued'}"

    def flush(self, stream: ServerStream) -> None:
        guard("flushing a queue", cast(OpenCLStream, stream).queue.flush)

    def sync(self, stream: ServerStream) -> RudaFuture[None]:
        """The sync point takes over the stream's transfers in flight and lets go of them (and
        of their host copies) once it has completed, so none stays resident after a sync."""
        ocl = cast(OpenCLStream, stream)
        queue = ocl.queue
        printed = guard("reading printed records", lambda: self._take_prints(ocl))
        marker = guard("recording a sync point", lambda: cl.enqueue_marker(queue))
        queue.flush()
        transfers, ocl.in_flight = ocl.in_flight, []
        return _event_future(marker, transfers.clear, printed)

    def _take_prints(self, stream: OpenCLStream) -> Callable[[], None]:
        """What writes out the records the stream's kernels printed before the sync or read
        being enqueued, once it is done (:class:`~ruda_opencl.printing.StreamPrints`); their
        read is enqueued now, and kept with the transfers."""
        read, through = stream.prints.take()
        if read is not None:
            stream.in_flight.append(read)
        return partial(stream.prints.write_out, through)


class OpenCLServer(ComputeServer):
    """The server of one OpenCL device, built on an :class:`OpenCLDriver`."""

    def __init__(self, device: OpenCLDevice) -> None:
        dev = all_devices()[device.index]
        capabilities = OpenCLCapabilities.of(dev, subgroups_from_env())
        for name, value in capabilities.environment:
            os.environ.setdefault(name, value)
        driver = OpenCLDriver(dev, device.index, capabilities)
        properties = DeviceProperties(
            name=dev.name.strip(),
            vendor=dev.platform.name.strip(),
            memory_nbytes=int(dev.global_mem_size),
            max_units_per_ruda=int(dev.max_work_group_size),
            max_ruda_dim=cast(
                tuple[int, int, int], tuple(int(s) for s in dev.max_work_item_sizes[:3])
            ),
            max_ruda_count=(2**31 - 1, 2**31 - 1, 2**31 - 1),
            max_shared_memory_nbytes=int(dev.local_mem_size),
            plane_dim=capabilities.plane_dim,
            compute_units=int(dev.max_compute_units),
            alignment_nbytes=OpenCLStorage.alignment_nbytes,
            extra=(
                ("runtime", platform_runtime(dev)),
                ("opencl_version", dev.version.strip()),
                ("driver", dev.driver_version.strip()),
            ),
        )
        super().__init__(
            device.to_id(),
            driver.storage,
            driver,
            properties,
            capabilities.features(),
            capabilities.compile_options,
            fingerprint=driver_fingerprint(dev),
        )
