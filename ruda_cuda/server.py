"""``CudaDriver`` and ``CudaServer``: ruda's execution contract on one CUDA device, through
CuPy.

``RudaCount`` is the CUDA grid and ``RudaDim`` the CUDA block. Each stream slot is one
blocking CUDA stream (ordered by CUDA with the legacy default stream, as CuPy's streams are);
fences are CUDA events, cross-stream ordering is
``cudaStreamWaitEvent``. Kernels are compiled by NVRTC to a cubin for the device's own
architecture and launched with ``cuLaunchKernel`` from a parameter block packed in place. A
cube may use the device's opt-in shared memory (``sharedMemPerBlockOptin``, 227 KiB on sm_90):
the properties report it, a function with dynamic shared memory opts in once when it is loaded,
and a kernel with more than 48 KiB of static shared arrays gets them in its dynamic buffer
(:meth:`~ruda_core.codegen.Dialect.buffered_shared_nbytes`), their bytes added to every launch.
Reads land in pinned host memory, so ``read_async`` overlaps with other work.
"""

from __future__ import annotations

import contextlib
import ctypes
import struct
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar, cast

import cupy
import numpy as np
from cupy.cuda import driver, runtime

from ruda_core.codegen.abi import ArgKind, arg_values, make_arg_reader
from ruda_core.interop.dlpack import DLDeviceType
from ruda_core.ir import WARPGROUP_OPS, Elem, Instr, walk
from ruda_core.ir.kernel import dynamic_shared_bytes
from ruda_core.runtime import (
    Binding,
    Bytes,
    CompiledKernel,
    CompileOptions,
    ComputeServer,
    CopyDriver,
    DeviceProperties,
    Driver,
    Feature,
    Features,
    KernelLaunch,
    LaunchArgs,
    LoadedKernel,
    RudaFuture,
    RudaTask,
    Run,
    ServerStream,
    Stamp,
    wait_until,
)
from ruda_core.runtime.console import flush_c_stdout

from .compiler import CudaCompiler
from .dialect import CudaDialect, CudaTarget, wmma_configs
from .driver import (
    activate,
    build_cubin,
    driver_fingerprint,
    guard,
    load_module,
    peer_access,
    translate,
    wmma_headers,
)
from .runtime import CudaDevice
from .storage import CudaStorage
from .tensor_map import tensor_map_maker

__all__ = ["CudaDriver", "CudaServer"]

T = TypeVar("T")
_HOST_TO_DEVICE = 1
#: ``cudaStreamLegacy``: the stream the DLPack convention means by None
_LEGACY_STREAM = 1
#: handles of the legacy default stream (0 in the runtime API, as torch's default stream is)
_LEGACY_HANDLES = frozenset((0, _LEGACY_STREAM))
_DEVICE_TO_HOST = 2
_DEVICE_TO_DEVICE = 3
#: The packed form of the arguments whose dtype does not say it: pointers and tensor maps.
_ARG_CODE = {ArgKind.BUFFER: "Q", ArgKind.TENSOR_MAP: "128s"}
#: A tensor map's alignment (``CUtensorMap`` is 64-byte aligned); other arguments align to size.
_TENSOR_MAP_ALIGN = 64
_STRUCT_CODE = {
    "b": "b",
    "B": "B",
    "h": "h",
    "H": "H",
    "i": "i",
    "I": "I",
    "l": "q",
    "L": "Q",
    "q": "q",
    "Q": "Q",
    "e": "e",
    "f": "f",
    "d": "d",
    "?": "?",
}
#: ``CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`` and ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``
_FUNC_SHARED_SIZE_BYTES = 1
_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
#: The dialect rule of where static shared arrays go (it does not depend on the arch).
_DIALECT = CudaDialect()
#: What a failed launch adds: the usual cause is an earlier kernel's fault, reported late.
_FAULT_HINT = ". If an earlier kernel faulted, sync after each launch to find it"


class CudaStream(ServerStream):
    """One CUDA stream and the pinned buffers of reads still in flight. ``blocking``: CUDA
    orders it with the legacy default stream, so that stream's work needs no event."""

    def __init__(self, slot: int, stream: Any, blocking: bool) -> None:
        super().__init__(slot)
        self.stream = stream
        self.ptr: int = stream.ptr
        self.ordered_producers = frozenset((self.ptr, *(_LEGACY_HANDLES if blocking else ())))
        self.in_flight: list[tuple[Any, list[np.ndarray]]] = []
        #: the event recorded on another library's stream for this one to wait on (reused:
        #: ``cudaStreamWaitEvent`` waits for the record made before it, whatever comes later)
        self.producer_event: Any = None
        #: the name of the kernel last enqueued, for :meth:`CudaDriver.busy`
        self.kernel_name = ""

    def prune(self) -> None:
        self.in_flight = [(e, hosts) for e, hosts in self.in_flight if not e.done]


class _EventFence:
    """A recorded CUDA event: a fence, and a stamp where timing is enabled."""

    __slots__ = ("event",)

    def __init__(self, event: Any) -> None:
        self.event = event

    def done(self) -> bool:
        return bool(self.event.done)

    def wait(self) -> None:
        wait_until(self.done)  # a signal ends it, unlike the driver's wait
        guard("waiting for a CUDA event", self.event.synchronize)


def _event_future(event: Any, value: Callable[[], T]) -> RudaFuture[T]:
    """A sync or read: the fence's wait (``cudaEventSynchronize``) makes CUDA hand over the
    printf buffer, and what the kernels before the event printed is written out before
    ``value()``."""

    def printed() -> T:
        flush_c_stdout()
        return value()

    return RudaFuture.after(_EventFence(event), printed)


class _ParamBlock:
    """Kernel parameters packed in place, and the array of pointers ``cuLaunchKernel`` reads."""

    __slots__ = ("block", "params", "pointers")

    def __init__(self, size: int, offsets: Sequence[int]) -> None:
        self.block = ctypes.create_string_buffer(max(size, 1))
        base = ctypes.addressof(self.block)
        self.pointers = (ctypes.c_void_p * max(len(offsets), 1))(*[base + o for o in offsets])
        self.params = ctypes.addressof(self.pointers)


class _Launcher:
    """A loaded kernel with a parameter block packed in place: built once per (kernel, mode).

    ``cuLaunchKernel`` copies the parameters when it is called, so the block is reused by
    every launch (launches of one server are serialised by its lock)."""

    __slots__ = (
        "buffered",
        "cubin",
        "dynamic",
        "function",
        "module",
        "name",
        "offsets",
        "params",
        "read_args",
        "run",
        "struct",
        "values_source",
    )

    def __init__(self, cubin: bytes, compiled: CompiledKernel, shared_optin: int) -> None:
        args = compiled.args
        self.cubin = cubin
        self.name = compiled.definition.name
        self.module = load_module(cubin)
        self.function = self.module.get_function(compiled.entrypoint)
        #: the static shared bytes the kernel keeps in its dynamic buffer, added to every launch
        self.buffered = _DIALECT.buffered_shared_nbytes(compiled.definition)
        #: the dynamic shared arrays, sized by a launch's scalars (``dynamic_shared_bytes``)
        self.dynamic = compiled.definition.dynamic_shared
        if self.buffered or self.dynamic:
            # past 48 KiB of dynamic shared memory a function must opt in, once: allow all
            # that the device gives a cube beside the function's static shared memory
            ptr = self.function.ptr
            try:
                static = driver.funcGetAttribute(_FUNC_SHARED_SIZE_BYTES, ptr)
                driver.funcSetAttribute(
                    ptr, _FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_optin - static
                )
            except driver.CUDADriverError as exc:
                raise translate(
                    f"opting kernel {self.name} into {shared_optin} bytes of shared memory", exc
                ) from exc
        fmt, offsets, size = ["<"], [], 0
        for a in args:
            code = _ARG_CODE.get(a.kind) or _STRUCT_CODE[a.dtype.char]
            width = struct.calcsize(code)
            pad = -size % min(width, _TENSOR_MAP_ALIGN)
            fmt.append(f"{pad}x{code}" if pad else code)
            offsets.append(size + pad)
            size += pad + width
        self.struct = struct.Struct("".join(fmt))
        self.offsets = offsets
        self.params = self.new_block()
        #: the argument values as source (:func:`arg_values`), for the generated launch
        pointer = "{b}.resource + {b}.offset_bytes"
        own = [p.elem.numpy for p in compiled.definition.scalar_params]  # bf16 passes its bits
        self.values_source = arg_values(args, pointer, own, tensor_map=tensor_map_maker)
        self.read_args = make_arg_reader(args, pointer, own, tensor_map=tensor_map_maker)
        #: the server's launch function of this kernel, made at the first launch
        self.run: KernelLaunch | None = None

    def new_block(self) -> _ParamBlock:
        return _ParamBlock(self.struct.size, self.offsets)


class _GraphReplay:
    """A capture instantiated as one CUDA graph: a replay is one ``cudaGraphLaunch`` on the
    stream. Holds the stream it was captured and uploaded on, which must outlive the upload."""

    __slots__ = ("activate", "alone", "device", "launch", "side")

    def __init__(self, server: CudaDriver, graph: Any, side: Any) -> None:
        self.launch = graph.launch  # found once: a replay costs about a microsecond of host time
        self.alone = server._alone
        self.activate = server._activate
        self.device = server.device
        self.side = side

    def __call__(self, stream: ServerStream) -> None:
        if not self.alone:
            self.activate()
        try:
            self.launch(stream.stream)  # type: ignore[attr-defined]  # a CudaStream
        except runtime.CUDARuntimeError as exc:
            raise translate(
                f"launching a captured CUDA graph on {self.device}", exc, _FAULT_HINT
            ) from exc


class CudaDriver(Driver):
    """The driver of one CUDA device (see the module docstring).

    :param index: the device's CUDA ordinal.
    :param device: the device, as messages name it.
    :param arch: its architecture (``sm_90``).
    :param shared_optin: the shared memory a cube may use once its function opts in.
    """

    #: CuPy frees its memory pools at exit, and ``cudaFree`` waits for the device
    teardown_waits = True

    def __init__(self, index: int, device: object, arch: str, shared_optin: int) -> None:
        self._index = index
        self.device = device
        self._arch = arch
        self._shared_optin = shared_optin
        #: with one visible GPU it is every thread's current device: launches and replays do
        #: not ask which device is current
        self._alone = runtime.getDeviceCount() == 1
        self.compiler = CudaCompiler()

    def _activate(self) -> None:
        """Make this device current on the calling thread (see :func:`.driver.activate`)."""
        activate(self._index)

    def dlpack_device(self) -> tuple[int, int]:
        return (DLDeviceType.CUDA, self._index)

    def address(self, binding: Binding) -> int:
        return cast(int, binding.resource) + binding.offset_bytes

    def adopt(self, address: int, nbytes: int) -> int:
        return address  # a device pointer, like the pool's pages

    def stream_handle(self, stream: ServerStream) -> int:
        return cast(CudaStream, stream).ptr

    def order_consumer(self, fence: Any, consumer: int | None) -> None:
        """``consumer`` is a ``cudaStream_t``, 1 (``cudaStreamLegacy``, also for None) or 2
        (``cudaStreamPerThread``): it waits for the fence's event on the device."""
        if fence.done():
            return
        handle = _LEGACY_STREAM if consumer is None else consumer
        self._activate()
        guard(
            "ordering another library's stream after ruda's work",
            lambda: runtime.streamWaitEvent(handle, fence.event.ptr, 0),
        )

    def order_after_producer(self, stream: ServerStream, producer: int) -> None:
        cuda = cast(CudaStream, stream)
        self._activate()
        event = cuda.producer_event
        if event is None:  # one per stream: a wait takes the record made just before it
            event = cuda.producer_event = cupy.cuda.Event(block=False, disable_timing=True)

        def wait() -> None:
            runtime.eventRecord(event.ptr, producer)
            runtime.streamWaitEvent(cuda.ptr, event.ptr, 0)

        guard("ordering ruda's stream after another library's work", wait)

    # -- queues and events, kernels, copies ----------------------------------------------------
    def new_stream(self, slot: int) -> CudaStream:
        self._activate()
        # blocking, as CuPy's streams are: CUDA orders them with the legacy default stream, where
        # PyTorch and CuPy run by default, so an array of that stream needs no event
        stream = guard("creating a stream", lambda: cupy.cuda.Stream(non_blocking=False))
        return CudaStream(slot, stream, blocking=True)

    def build(self, compiled: CompiledKernel) -> _Launcher:
        self._activate()
        loc = compiled.definition.source
        where = (loc.file, loc.line) if loc is not None else (None, None)
        # wgmma is an arch-specific feature of sm_90: such a kernel builds for sm_90a alone
        wgmma = any(
            isinstance(s, Instr) and s.op in WARPGROUP_OPS for s in walk(compiled.definition.body)
        )
        arch = f"{self._arch}a" if wgmma else self._arch
        cubin = build_cubin(compiled.source, compiled.entrypoint, arch, where)
        return _Launcher(cubin, compiled, self._shared_optin)

    def binary(self, built: Any) -> bytes:
        return cast(_Launcher, built).cubin

    def load_binary(self, compiled: CompiledKernel, binary: bytes) -> _Launcher:
        self._activate()
        return _Launcher(binary, compiled, self._shared_optin)

    def kernel_launch(self, task: RudaTask, kernel: LoadedKernel) -> KernelLaunch:
        """``cuLaunchKernel`` of the kernel's parameter block, packed in place at each call,
        with the function, the block and the packer looked up once; made once per built
        kernel."""
        launcher: _Launcher = kernel.built
        if launcher.run is not None:
            return launcher.run
        values, env = launcher.values_source
        # sized from the launcher's own arrays, not by the task: its kernel is let go when it dies
        dynamic = partial(dynamic_shared_bytes, launcher.dynamic) if launcher.dynamic else None
        source = (
            "def run(stream, count, dim, b, s, m):\n"
            "    if not alone and get_device() != index:  # _activate(), inlined\n"
            "        activate()\n"
            f"    pack(block, 0, {values})\n"
            "    try:\n"
            "        launch(function, count.x, count.y, count.z, dim.x, dim.y, dim.z,\n"
            f"               {'buffered + dynamic(s)' if dynamic else 'buffered'},\n"
            "               stream.ptr, params, 0)\n"
            "        stream.kernel_name = name\n"
            "    except DriverError as exc:\n"
            "        raise translate(what, exc, hint) from exc\n"
        )
        env = {
            **env,
            "alone": self._alone,
            "get_device": runtime.getDevice,
            "index": self._index,
            "activate": self._activate,
            "pack": launcher.struct.pack_into,
            "block": launcher.params.block,
            "launch": driver.launchKernel,
            "function": launcher.function.ptr,
            "buffered": launcher.buffered,
            "dynamic": dynamic,
            "params": launcher.params.params,
            "DriverError": driver.CUDADriverError,
            "translate": translate,
            "what": f"launching kernel {launcher.name} on {self.device}",
            "hint": _FAULT_HINT,
            "name": launcher.name,
        }
        exec(compile(source, f"<ruda CUDA launch of {launcher.name}>", "exec"), env)
        run: KernelLaunch = env["run"]  # type: ignore[assignment]  # defined above
        launcher.run = run
        return run

    def prepare(
        self, task: RudaTask, kernel: LoadedKernel, launch: KernelLaunch, args: LaunchArgs
    ) -> Run:
        count, dim, bindings, scalars, metadata = args
        launcher: _Launcher = kernel.built
        params = launcher.new_block()  # this launch's own, packed once
        launcher.struct.pack_into(params.block, 0, *launcher.read_args(bindings, scalars, metadata))
        func, grid, block = (
            launcher.function.ptr,
            (count.x, count.y, count.z),
            (dim.x, dim.y, dim.z),
        )
        dynamic = launcher.buffered + task.dynamic_shared_bytes(scalars)

        def run(stream: ServerStream) -> None:
            self._activate()
            try:
                driver.launchKernel(
                    func,
                    *grid,
                    *block,
                    dynamic,
                    stream.ptr,  # type: ignore[attr-defined]  # a CudaStream; cast() is a call
                    params.params,
                    0,
                )
                stream.kernel_name = launcher.name  # type: ignore[attr-defined]  # a CudaStream
            except driver.CUDADriverError as exc:
                raise translate(
                    f"launching kernel {launcher.name} on {self.device}", exc, _FAULT_HINT
                ) from exc

        return run

    def capture(self, runs: Sequence[Run]) -> Run:
        """The recording as one CUDA graph: the prepared launches are captured once on a stream
        of its own (CuPy's relaxed capture mode), then the graph is instantiated and uploaded
        there; nothing waits for the device."""
        self._activate()
        side = guard("creating a capture stream", lambda: cupy.cuda.Stream(non_blocking=True))
        capturing = CudaStream(-1, side, blocking=False)
        guard("beginning a CUDA graph capture", side.begin_capture)
        try:
            for run in runs:
                run(capturing)
        except BaseException:
            with contextlib.suppress(runtime.CUDARuntimeError):  # the launch error says why
                side.end_capture()
            raise
        graph = guard("ending a CUDA graph capture", side.end_capture)
        guard("instantiating a CUDA graph", lambda: graph.upload(side))
        return _GraphReplay(self, graph, side)

    def prepare_copy(self, source: Binding, destination: Binding) -> Run:
        """One ``cudaMemcpyAsync`` on the stream; on a capturing stream it becomes a node of
        the graph, between the launches recorded around it."""
        src = cast(int, source.resource) + source.offset_bytes
        dst = cast(int, destination.resource) + destination.offset_bytes
        nbytes = source.nbytes

        def run(stream: ServerStream) -> None:
            self._activate()
            ptr = cast(CudaStream, stream).ptr
            guard(
                f"copying {nbytes} bytes on the GPU",
                lambda: runtime.memcpyAsync(dst, src, nbytes, _DEVICE_TO_DEVICE, ptr),
            )

        return run

    def write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        self._activate()
        host = np.frombuffer(data, dtype=np.uint8)
        dst = cast(int, binding.resource) + binding.offset_bytes
        ptr = cast(CudaStream, stream).ptr
        # from pageable memory the copy is staged before the call returns: `data` may be reused
        guard(
            f"copying {binding.nbytes} bytes to the GPU",
            lambda: runtime.memcpyAsync(dst, host.ctypes.data, host.nbytes, _HOST_TO_DEVICE, ptr),
        )

    def copy_to_peer(
        self,
        stream: ServerStream,
        binding: Binding,
        target: CopyDriver,
        target_stream: ServerStream,
        out: Binding,
    ) -> bool:
        """To another GPU that can reach this one (:func:`.driver.peer_access`): one
        ``cudaMemcpyPeerAsync`` on the target's stream, which first waits for this stream's
        work on the source (an event), and which this stream then waits for before it may
        overwrite or reuse the source. GPUs without peer access copy through the host."""
        if not isinstance(target, CudaDriver) or not peer_access(self._index, target._index):
            return False
        target.wait(target_stream, self.fence(stream))
        if binding.nbytes:
            src = cast(int, binding.resource) + binding.offset_bytes
            dst = cast(int, out.resource) + out.offset_bytes
            ptr = cast(CudaStream, target_stream).ptr
            target._activate()
            guard(
                f"copying {binding.nbytes} bytes from {self.device} to {target.device}",
                lambda: runtime.memcpyPeerAsync(
                    dst, target._index, src, self._index, binding.nbytes, ptr
                ),
            )
        self.wait(stream, target.fence(target_stream))
        return True

    def read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        self._activate()
        cuda = cast(CudaStream, stream)
        cuda.prune()
        hosts = []
        for b in bindings:
            pinned = cupy.cuda.alloc_pinned_memory(max(b.nbytes, 1))
            host = np.frombuffer(pinned, dtype=np.uint8, count=b.nbytes)
            hosts.append(host)
            if b.nbytes:
                self._copy_to_host(cuda, host, b)
        event = self._record(cuda)
        cuda.in_flight.append((event, hosts))  # keeps the pinned buffers alive until copied
        return _event_future(event, lambda: [h.data.toreadonly() for h in hosts])

    def _copy_to_host(self, stream: CudaStream, host: np.ndarray, binding: Binding) -> None:
        src = cast(int, binding.resource) + binding.offset_bytes
        guard(
            f"copying {binding.nbytes} bytes from the GPU",
            lambda: runtime.memcpyAsync(
                host.ctypes.data, src, binding.nbytes, _DEVICE_TO_HOST, stream.ptr
            ),
        )

    def _record(self, stream: CudaStream, event: Any = None) -> Any:
        """``event`` (a new one by default) recorded on ``stream``: a done event may be recorded
        again, and CUDA then tracks the new record only."""
        if event is None:
            event = cupy.cuda.Event(block=False, disable_timing=True)
        guard("recording an event", lambda: event.record(stream.stream))
        return event

    def fence(self, stream: ServerStream) -> _EventFence:
        self._activate()
        return _EventFence(self._record(cast(CudaStream, stream)))

    def refence(self, stream: ServerStream, fence: Any) -> _EventFence:
        self._activate()
        self._record(cast(CudaStream, stream), fence.event)
        return cast(_EventFence, fence)

    def wait(self, stream: ServerStream, fence: Any) -> None:
        if fence.done():
            return
        cuda = cast(CudaStream, stream)
        guard("ordering streams", lambda: cuda.stream.wait_event(fence.event))

    def timestamp(self, stream: ServerStream) -> _EventFence:
        """A timing-enabled event."""
        self._activate()
        event = cupy.cuda.Event(block=False, disable_timing=False)
        guard("recording a timing event", lambda: event.record(cast(CudaStream, stream).stream))
        return _EventFence(event)

    def elapsed_ns(self, start: Stamp, end: Stamp) -> int:
        a, b = cast(_EventFence, start), cast(_EventFence, end)
        a.wait()
        b.wait()
        ms = guard("timing CUDA events", lambda: cupy.cuda.get_elapsed_time(a.event, b.event))
        return int(ms * 1e6)

    def flush(self, stream: ServerStream) -> None:
        """Nothing to submit: CUDA starts work as it is enqueued."""

    def busy(self, stream: ServerStream) -> str | None:
        cuda = cast(CudaStream, stream)
        if not cuda.kernel_name or cuda.stream.done:  # cudaStreamQuery: never blocks
            return None
        return f"kernel {cuda.kernel_name}, the last one enqueued on it, has not finished"

    def sync(self, stream: ServerStream) -> RudaFuture[None]:
        self._activate()
        cuda = cast(CudaStream, stream)
        cuda.prune()
        return _event_future(self._record(cuda), lambda: None)


class CudaServer(ComputeServer):
    """The server of one CUDA device, built on a :class:`CudaDriver`."""

    def __init__(self, device: CudaDevice) -> None:
        activate(device.index)
        props = guard("querying the device", lambda: runtime.getDeviceProperties(device.index))
        arch = f"sm_{props['major']}{props['minor']}"
        #: what a cube may use once its function opts in (227 KiB on sm_90), see _Launcher
        shared_optin = int(props.get("sharedMemPerBlockOptin", props["sharedMemPerBlock"]))
        driver = CudaDriver(device.index, device.to_id(), arch, shared_optin)
        properties = DeviceProperties(
            name=props["name"].decode(),
            vendor="NVIDIA",
            memory_nbytes=int(props["totalGlobalMem"]),
            max_units_per_ruda=int(props["maxThreadsPerBlock"]),
            max_ruda_dim=cast(tuple[int, int, int], tuple(props["maxThreadsDim"])),
            max_ruda_count=cast(tuple[int, int, int], tuple(props["maxGridSize"])),
            max_shared_memory_nbytes=shared_optin,
            plane_dim=int(props["warpSize"]),
            compute_units=int(props["multiProcessorCount"]),
            alignment_nbytes=CudaStorage.alignment_nbytes,
            extra=(
                ("arch", arch),
                ("compute_capability", f"{props['major']}.{props['minor']}"),
            ),
        )
        features = {
            Feature.PLANE,
            Feature.PLANE_SHUFFLE,
            Feature.PARTIAL_PLANE,
            Feature.PLANES_ACROSS_ROWS,
            Feature.ATOMIC_INT64,
            Feature.ATOMIC_FLOAT,
            Feature.DYNAMIC_COUNT,
            Feature.DEVICE_TIMING,
            Feature.PRINT,
            Feature.MEMORY_FENCE,  # __threadfence_block, __threadfence
            Feature.UNBOUNDED_LOOPS,
        }
        if (props["major"], props["minor"]) == (9, 0):  # sm_90a's wgmma; 10.x and later lack it
            features.add(Feature.WARPGROUP_MMA)
        if props["major"] >= 9:  # mbarrier's expect_tx and cp.async.bulk: sm_90 and later
            features.add(Feature.ASYNC_BARRIER)
        # WMMA's mma.h includes crt/mma.h, which only a CUDA toolkit (or its header wheel) has
        matrices = (
            wmma_configs(props["major"] * 10 + props["minor"]) if wmma_headers() else frozenset()
        )
        super().__init__(
            device.to_id(),
            CudaStorage(int(props["totalGlobalMem"]), device.index),
            driver,
            properties,
            Features(frozenset(features), frozenset(Elem), matrices),
            CompileOptions(
                plane_dim=int(props["warpSize"]),
                target=CudaTarget(props["major"] * 10 + props["minor"]),
            ),
            fingerprint=driver_fingerprint(),
        )
