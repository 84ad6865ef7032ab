"""``WebGpuDriver`` and ``WebGpuServer``: ruda's execution contract on one WebGPU device, through
wgpu-py.

``RudaCount`` is the workgroup count of a dispatch and ``RudaDim`` the workgroup size. A device
has one queue; each stream slot records its launches and copies into a command encoder of its
own, launches sharing one compute pass, and ``flush`` submits the encoder in one
``queue.submit`` (as do a read, a fence and a sync, which must reach the queue). The queue runs
submissions in order, so work a fence stands after is already submitted: waiting on another
stream's fence needs no command. Each launch writes its record (see
:mod:`ruda_wgpu.wgsl.layout`) into the stream's record arena, written to the device once per
submission and bound at the launch's dynamic offset. Completion is observed through the
mapping of a small buffer the submission copied into (wgpu-native's work-done callback is
unusable from wgpu-py 0.32): a waiter thread waits for each mapping in turn and completes the
futures. Shaders and pipelines are built by :class:`~ruda_wgpu.pipelines.KernelPipelines`.
WebGPU copies and writes whole 4-byte words: a range that does not start and end on words is
copied by a compute dispatch (:class:`~ruda_wgpu.byte_copies.ByteCopies`), so that no byte
beside it changes.

wgpu-py raises a wgpu error from the call that made it (wgpu-native reports it during the
call), and ``translate`` makes it a ruda error there. A command that a compute pass or an
encoder refuses (a dispatch over the limits, a usage conflict) is reported by ``finish``, at
the stream's submission, and none of the encoder's work runs: the stream then fails, the
bindings its recorded work would have written are poisoned, and the completion mark alone is
submitted, so that the next sync raises and a read of those bindings raises instead of
returning what they held. wgpu-py 0.32 has no handler of uncaptured errors nor a device-lost
promise (it logs those); a lost device fails the submissions' mappings, hence the stream.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import wgpu
from wgpu.backends.wgpu_native import extras

from ruda_core.ir import Elem
from ruda_core.runtime import (
    Binding,
    Bytes,
    CompiledKernel,
    CompileOptions,
    ComputeServer,
    DeviceProperties,
    Driver,
    Feature,
    Features,
    IoError,
    KernelLaunch,
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
)
from ruda_core.runtime.host_memory import physical_nbytes

from .adapters import (
    WgpuErrors,
    all_adapters,
    describe,
    open_device,
    plane_width,
    read_back,
    translate,
)
from .byte_copies import ByteCopies
from .compiler import CORE_ELEMS, WebGpuCompiler, WgslTarget
from .pipelines import RECORD_WINDOW_NBYTES, KernelPipelines
from .runtime import MAX_RUDA_COUNT, PLANE_DIM_VARIABLE, WebGpuDevice
from .storage import WebGpuStorage
from .submission import Submitter
from .wgsl import FAULT_WIDTH_SHIFT, PLANE_FAULT, RecordLayout

__all__ = ["WebGpuDriver", "WebGpuServer"]

_U = wgpu.BufferUsage
#: Bytes of launch records a stream gathers before it must submit.
ARENA_NBYTES = 1 << 20
#: Workgroups of one dispatch along an axis (WebGPU's limit everywhere).
MAX_DISPATCH = 65535
#: Bytes of a stream's print-record buffer (a count and a capacity word, then records).
PRINT_NBYTES = 16 << 20
#: Mesa's llvmpipe (lavapipe) stops a subgroup's loops after this many turns in all (the turns
#: any of its lanes takes; without subgroups, a unit's).
LAVAPIPE_LOOP_LIMIT = 65535
#: The longest local array, in 4-byte words, a kernel may have on lavapipe: its compile time
#: grows faster than the square of the length (a kernel with a local array of 512 f32 took 8 s
#: to build, of 2 048 two minutes, and longer ones as good as never end).
LAVAPIPE_LOCAL_WORDS = 1024
#: The compute units reported for a GPU adapter (a CPU one, lavapipe, reports its cores):
#: WebGPU does not tell, and launches sized from the count (grid-stride loops over
#: ``compute_units * k`` cubes) starve a large GPU when it is low (32 cubes ran ``c = a + b`` on
#: an H200 at a fifteenth of the bandwidth of enough cubes), while too many cubes cost little.
GPU_UNITS = 128


class WebGpuStream(ServerStream):
    """A command encoder being recorded (with its open compute pass) and the launch records it
    binds; its flush hands them to the device's :class:`~ruda_wgpu.submission.Submitter`."""

    def __init__(self, slot: int, device: Any, submitter: Submitter, marker: Any) -> None:
        super().__init__(slot)
        self.device = device
        self.submitter = submitter
        self.marker = marker
        self.encoder: Any = None
        self.compute: Any = None
        self.arena = bytearray(ARENA_NBYTES)
        self.arena_used = 0
        self.records = _buffer(
            device, ARENA_NBYTES + RECORD_WINDOW_NBYTES, _U.UNIFORM | _U.COPY_DST, "launch records"
        )
        #: host writes (page, byte offset, bytes) the next submission makes first
        self.writes: list[tuple[Any, int, bytes]] = []
        #: the bindings the recorded work may write, and those of the host writes: poisoned
        #: when wgpu refuses the work (or the queue the submission), so that none of them is
        #: read as if it had run
        self.written: list[Binding] = []
        self.uploaded: list[Binding] = []
        #: what wgpu refused when a compute pass ended: the submission of its encoder fails
        self.refused: ServerError | None = None
        #: the buffer the stream's printing kernels append records to, made at the first one
        self.prints: Any = None
        #: whether a printing kernel was launched since the last sync or read
        self.printed = False

    def record(self, stride: int, packer: struct.Struct, *values: Any) -> int:
        """The offset in :attr:`records` of a new launch record of ``values`` packed by
        ``packer``, taking ``stride`` bytes (:meth:`WebGpuDriver.record_stride`); the arena is
        submitted first where it is full."""
        if self.arena_used + stride > ARENA_NBYTES:
            self.submit()
        at = self.arena_used
        packer.pack_into(self.arena, at, *values)
        self.arena_used = at + stride
        return at

    def print_buffer(self) -> Any:
        """The print-record buffer (made, with a count of 0 and its capacity, at the first
        call); marks the stream as having printed."""
        if self.prints is None:
            usage = _U.STORAGE | _U.COPY_SRC | _U.COPY_DST
            self.prints = _buffer(self.device, PRINT_NBYTES, usage, "kernel print records")
            self.writes.append((self.prints, 0, struct.pack("<II", 0, PRINT_NBYTES // 4 - 2)))
        self.printed = True
        return self.prints

    def recording(self) -> Any:
        """The encoder, outside any compute pass (for copies)."""
        if self.compute is not None:
            compute, self.compute = self.compute, None
            try:
                compute.end()
            except Exception as exc:  # wgpu raises plain Exceptions: the encoder is refused
                self.refused = self.refused or translate("ending a compute pass", exc)
        if self.encoder is None:
            self.encoder = self.device.create_command_encoder()
        return self.encoder

    def pass_(self) -> Any:
        """The open compute pass (begun where there is none)."""
        if self.compute is None:
            self.compute = self.recording().begin_compute_pass()
        return self.compute

    def staged(self, what: str, source: Any, start: int, size: int, kind: Any = LaunchError) -> Any:
        """A new mappable buffer that the encoder copies ``size`` bytes of ``source`` from
        byte ``start`` into; what wgpu raises, as a ``kind`` error about ``what``."""
        encoder = self.recording()
        with WgpuErrors(what, kind):
            staging = self.device.create_buffer(size=max(size, 4), usage=_U.MAP_READ | _U.COPY_DST)
            if size:
                encoder.copy_buffer_to_buffer(source, start, staging, 0, size)
        return staging

    def submit(self, then: Callable[[], None] | None = None) -> RudaFuture[None]:
        """Hand what is recorded to the submitter (with a copy into a buffer of its own last,
        whose mapping marks it done); the device's last submission's future when nothing is
        recorded and nothing waits for it."""
        if self.encoder is None and then is None and not self.writes:
            return self.submitter.last
        encoder = self.recording()
        self.encoder = None
        arena = bytes(memoryview(self.arena)[: self.arena_used])
        self.arena_used = 0
        mark = _buffer(self.device, 4, _U.MAP_READ | _U.COPY_DST, "the completion mark")
        written, self.written = self.written, []
        uploaded, self.uploaded = self.uploaded, []
        refused, self.refused = self.refused, None
        try:
            commands = self._marked(encoder, mark)
        except Exception as exc:  # wgpu raises plain Exceptions: a command it refuses
            refused = refused or translate("submitting queued work", exc)
        if refused is not None:  # (a validation error recorded in the encoder): none of the
            # encoder's work runs; its failure is the stream's, and what waits for it completes
            self.fail(refused, written)
            commands = self._marked(self.device.create_command_encoder(), mark)
        writes, self.writes = self.writes, []
        writes += [(self.records, 0, arena)] if arena else []
        return self.submitter.submit(self, commands, writes, mark, then, written, uploaded)

    def _marked(self, encoder: Any, mark: Any) -> Any:
        """The command buffer of ``encoder`` ending with the copy of the kernel-fault word
        into ``mark`` (whose mapping marks the submission done) and its zeroing."""
        encoder.copy_buffer_to_buffer(self.marker, 0, mark, 0, 4)
        encoder.clear_buffer(self.marker, 0, 4)
        return encoder.finish()


class _Timestamp:
    """A device timestamp written into a stream's encoder, read once it is needed (after the
    profile's sync: its submission is done)."""

    __slots__ = ("_held", "_ns", "_readback")

    def __init__(self, stream: WebGpuStream) -> None:
        queries = stream.device.create_query_set(type="timestamp", count=1)
        usage = _U.QUERY_RESOLVE | _U.COPY_SRC
        resolved = _buffer(stream.device, 256, usage, "a timestamp")
        with WgpuErrors("recording a timestamp"):
            extras.write_timestamp(stream.recording(), queries, 0)
            stream.recording().resolve_query_set(queries, 0, 1, resolved, 0)
        self._readback = stream.staged("recording a timestamp", resolved, 0, 8)
        self._held = (queries, resolved)  # until the stamp is read
        self._ns: int | None = None

    def ns(self) -> int:
        """The device's timestamp, in nanoseconds; blocks until it is read back."""
        if self._ns is None:
            self._ns = int(np.frombuffer(read_back(self._readback), np.uint64)[0])
        return self._ns


class WebGpuDriver(Driver):
    """The driver of one WebGPU device (see the module docstring)."""

    max_streams = 8

    def __init__(self, adapter: Any, label: str) -> None:
        """:param label: the device's name in messages, as users name it (``webgpu:0``)."""
        self.device = open_device(adapter)
        self.name = f"{label} ({adapter.info['device']})"
        self.compiler = WebGpuCompiler()
        # half the host's memory (8 GiB where the system does not say)
        self.storage = WebGpuStorage(self.device, (physical_nbytes() or 8 << 30) // 2)
        #: the turns after which the driver stops a unit's loops (lavapipe's), else 0
        lavapipe = "llvmpipe" in self.name
        self.loop_limit = LAVAPIPE_LOOP_LIMIT if lavapipe else 0
        #: the width of the planes kernels are generated for (1: planes of one lane)
        self.plane_dim = plane_width(self.device)
        #: the kernel-fault word (see :data:`~ruda_wgpu.wgsl.PLANE_FAULT`); each submission
        #: copies it into the buffer whose mapping marks it done, then zeroes it
        usage = _U.STORAGE | _U.COPY_SRC | _U.COPY_DST
        self._marker = _buffer(self.device, 4, usage, "the kernel-fault word")
        local_words = LAVAPIPE_LOCAL_WORDS if lavapipe else 0
        self.pipelines = KernelPipelines(
            self.device, self.storage, self._marker, self.loop_limit, local_words
        )
        #: a record's offset is a multiple of this: a uniform binding's offset must be
        self._record_align = int(self.device.limits["min-uniform-buffer-offset-alignment"])
        self.byte_copies = ByteCopies(self.device, self.record_stride(ByteCopies.RECORD))
        self._submitter = Submitter(self.device.queue, f"ruda {self.name}", self._fault)

    def record_stride(self, packer: struct.Struct) -> int:
        """The bytes of a stream's record arena that a record ``packer`` packs takes."""
        return -(-packer.size // self._record_align) * self._record_align

    def _fault(self, word: bytes) -> ServerError | None:
        """The error a submission's copy of the kernel-fault word reports, if any."""
        fault = int.from_bytes(word[:4], "little")
        if fault == 0:
            return None
        name = self.pipelines.names[(fault & ((1 << FAULT_WIDTH_SHIFT) - 1)) - 1]
        if fault & PLANE_FAULT:
            width = 1 << ((fault & ~PLANE_FAULT) >> FAULT_WIDTH_SHIFT)
            ran = f"subgroups of {width} units" if width != self.plane_dim else "subgroups"
            return LaunchError(
                f"kernel {name} ran on {self.name} in {ran}, not the planes of "
                f"{self.plane_dim} consecutive units it was generated for (WebGPU lets a driver "
                "pick each pipeline's subgroup width), so the results of its plane operations "
                f"are wrong. Set {PLANE_DIM_VARIABLE}={width} for planes of that width (or 1 "
                "for planes of one lane, without subgroups), or run it on another device"
            )
        return LaunchError(
            f"kernel {name} may have been cut short on {self.name}: lavapipe stops a plane's "
            f"loops after {self.loop_limit} turns in all (a turn of any of its units counts) "
            "without an error, and a plane of this kernel reached that, so its results may be "
            "wrong. Give each unit less to loop over (more units), or run it on another device"
        )

    def new_stream(self, slot: int) -> WebGpuStream:
        return WebGpuStream(slot, self.device, self._submitter, self._marker)

    # -- kernels ----------------------------------------------------------------------------

    def build(self, compiled: CompiledKernel) -> Any:
        return self.pipelines.build(compiled)

    def kernel_launch(self, task: RudaTask, kernel: LoadedKernel) -> KernelLaunch:
        """Write the launch's record into the stream's arena, then its dispatches
        (:func:`dispatches`) in the stream's open compute pass."""
        built, pipelines = kernel.built, self.pipelines
        definition = built.compiled.definition
        packer = RecordLayout.of(definition).packer
        stride = self.record_stride(packer)
        elem_nbytes = [p.elem.nbytes for p in definition.array_params]
        #: the positions among the scalars of the dynamic shared arrays' lengths
        dynamic = [k for _, k in definition.dynamic_shared]
        writes = [k for k in range(len(elem_nbytes)) if task.writes(k)]
        errors = WgpuErrors(f"launching kernel {built.name}")

        def run(
            stream: ServerStream,
            count: RudaCount,
            dim: RudaDim,
            bindings: Sequence[Binding],
            scalars: Sequence[np.generic],
            metadata: Sequence[int],
        ) -> None:
            s = cast(WebGpuStream, stream)
            shared = tuple(int(scalars[k]) for k in dynamic)
            bound = pipelines.variant(built, bindings)
            pipeline = pipelines.pipeline(bound, dim, shared)
            prints = None if built.print_base is None else s.print_buffer()
            group = pipelines.group(bound, s.records, bindings, prints)
            offsets = [b.offset_bytes // n for b, n in zip(bindings, elem_nbytes, strict=True)]
            cx, cy, cz = count.x, count.y, count.z
            for first, grid in dispatches(cx, cy, cz):
                at = s.record(stride, packer, first, cx, cy, cz, *offsets, *metadata, *scalars)
                # after the record, which may submit the full arena: the dispatch's submission
                s.written.extend(bindings[k] for k in writes)
                compute = s.pass_()
                with errors:
                    compute.set_pipeline(pipeline)
                    compute.set_bind_group(0, group, [at])
                    compute.dispatch_workgroups(*grid)

        return run

    # -- copies -----------------------------------------------------------------------------

    def write(self, stream: ServerStream, binding: Binding, data: memoryview) -> None:
        """A copy of ``data`` the submitter writes into the binding just before the stream's
        next submission (what is recorded before it is handed over first, so the write comes
        after it); where the binding does not start and end on words (WebGPU writes words), a
        copy into a buffer of its own that a byte copy recorded in the stream copies from. The
        last word is written whole where the bytes past the binding are spare."""
        s = cast(WebGpuStream, stream)
        n = binding.nbytes
        if n == 0:
            return
        s.uploaded.append(binding)
        words = bytes(data) + bytes(-n % 4)
        if binding.offset_bytes & 3 or -n % 4 > binding.spare_nbytes:
            usage = _U.STORAGE | _U.COPY_DST
            staged = _buffer(self.device, len(words), usage, "a write off 4-byte words")
            s.writes.append((staged, 0, words))
            with WgpuErrors(f"writing {n} bytes", IoError):
                self.byte_copies.record(s, staged, 0, binding.resource, binding.offset_bytes, n)
            return
        if s.encoder is not None:
            s.submit()
        s.writes.append((binding.resource, binding.offset_bytes, words))

    def read(self, stream: ServerStream, bindings: Sequence[Binding]) -> RudaFuture[list[Bytes]]:
        s = cast(WebGpuStream, stream)
        stagings = [(s.staged("reading", b.resource, *_words(b), IoError), b) for b in bindings]
        promise: Promise[list[Bytes]] = Promise()

        def complete() -> None:  # on the submitter's waiting thread, once the copies are done
            try:
                out = []
                for staging, b in stagings:
                    skip = b.offset_bytes & 3
                    out.append(read_back(staging)[skip : skip + b.nbytes].toreadonly())
                promise.set_result(out)
            except Exception as exc:
                promise.set_error(translate("reading", exc, IoError))

        s.submit(self._with_prints(s, complete))
        return promise.future

    def prepare_copy(self, source: Binding, destination: Binding) -> Run:
        """A buffer copy of whole words where both bindings start on words and the
        destination's last word is its own or spare, else a byte copy
        (:class:`~ruda_wgpu.byte_copies.ByteCopies`). WebGPU copies not within one buffer:
        a copy inside a page copies the source's words into a buffer first."""
        src, dst, n = source.resource, destination.resource, source.nbytes
        src_start, size = _words(source)
        at = destination.offset_bytes
        bytewise = bool((source.offset_bytes | at) & 3) or -n % 4 > destination.spare_nbytes
        via, errors = None, WgpuErrors(f"copying {n} bytes", IoError)
        if src is dst and n:
            usage = _U.COPY_SRC | _U.COPY_DST | _U.STORAGE
            via = _buffer(self.device, size, usage, "a copy within a page")

        def run(stream: ServerStream) -> None:
            s = cast(WebGpuStream, stream)
            s.written.append(destination)
            if n == 0:
                return
            with errors:
                start, origin = src_start, src
                if via is not None:
                    s.recording().copy_buffer_to_buffer(src, src_start, via, 0, size)
                    start, origin = 0, via
                if bytewise:
                    first = start + (source.offset_bytes & 3)
                    self.byte_copies.record(s, origin, first, dst, at, n)
                else:
                    s.recording().copy_buffer_to_buffer(origin, start, dst, at, size)

        return run

    # -- queue ------------------------------------------------------------------------------

    def fence(self, stream: ServerStream) -> RudaFuture[None]:
        """The submission's future: the mapping of a buffer it copied into."""
        return cast(WebGpuStream, stream).submit()

    def timestamp(self, stream: ServerStream) -> _Timestamp:
        return _Timestamp(cast(WebGpuStream, stream))

    def elapsed_ns(self, start: Stamp, end: Stamp) -> int:
        return cast(_Timestamp, end).ns() - cast(_Timestamp, start).ns()

    def wait(self, stream: ServerStream, fence: Any) -> None:
        """Nothing to record: the fence's work is submitted, and the queue runs in order."""

    def flush(self, stream: ServerStream) -> None:
        cast(WebGpuStream, stream).submit()

    def sync(self, stream: ServerStream) -> RudaFuture[None]:
        s = cast(WebGpuStream, stream)
        return s.submit(self._with_prints(s, None))

    def _with_prints(
        self, stream: WebGpuStream, then: Callable[[], None] | None
    ) -> Callable[[], None] | None:
        """``then``, after the stream's print records since its last sync or read are written
        to ``sys.stdout``: their copy (and the reset of the count) is recorded now."""
        if not stream.printed:
            return then
        stream.printed = False
        staging = stream.staged("reading kernel print records", stream.prints, 0, PRINT_NBYTES)
        stream.recording().clear_buffer(stream.prints, 0, 4)
        table = self.pipelines.prints

        def write_out() -> None:  # on the submitter's waiting thread, once the copy is done
            try:
                table.write_out(np.frombuffer(read_back(staging), dtype=np.uint32))
            finally:  # what waits after the records runs even where they cannot be read
                if then is not None:
                    then()

        return write_out


def dispatches(cx: int, cy: int, cz: int) -> list[tuple[int, tuple[int, int, int]]]:
    """The dispatches of a launch of ``(cx, cy, cz)`` cubes, each as its first cube along x and
    its workgroup grid. More cubes along x than a dispatch takes fold into z where the launch
    has one cube along z (one dispatch: the kernel's ``FOLDED`` position builtins unfold them
    and the spare cubes of the last row return at once), else split into dispatches of
    ``MAX_DISPATCH`` each (in one compute pass, where a dispatch that writes a buffer waits for
    the one before it to finish)."""
    if cx <= MAX_DISPATCH:
        return [(0, (cx, cy, cz))]
    if cz == 1:
        rows = -(-cx // MAX_DISPATCH)
        return [(0, (-(-cx // rows), cy, rows))]
    return [(x, (min(cx - x, MAX_DISPATCH), cy, cz)) for x in range(0, cx, MAX_DISPATCH)]


def _buffer(device: Any, size: int, usage: int, what: str) -> Any:
    """A new buffer of ``size`` bytes for ``what``; what wgpu raises (out of memory, a lost
    device) as the ruda error :func:`~ruda_wgpu.adapters.translate` gives."""
    with WgpuErrors(f"allocating {size} bytes for {what}"):
        return device.create_buffer(size=size, usage=usage)


def _words(binding: Binding) -> tuple[int, int]:
    """The start and size of the whole 4-byte words that hold ``binding`` (WebGPU copies
    words)."""
    start = binding.offset_bytes & ~3
    end = -(-(binding.offset_bytes + binding.nbytes) // 4) * 4
    return start, end - start


def _features(adapter: Any) -> Features:
    """What the adapter's WGSL holds and what ruda runs on it: planes everywhere (of one lane
    where the adapter has no subgroups, as on OpenCL without them). ``f64`` is left out even where
    the adapter offers ``shader-f64``: Vulkan's extended instructions (``exp``, ``log``,
    ``sin`` …) are defined on 16- and 32-bit floats only, and lavapipe returns wrong values for
    them on doubles. ``MEMORY_FENCE`` is left out everywhere (WGSL fences memory only inside
    its barriers, which the whole cube must reach), and so is ``UNBOUNDED_LOOPS``: WebGPU does
    not promise that a dispatch may run for ever (lavapipe stops a unit's loops after
    ``loop_limit`` turns, browsers end long dispatches) and offers no way to cancel one, so a
    kernel that never ends could hold the device until the process ends."""
    elems = set(CORE_ELEMS) | {Elem.I8, Elem.I16, Elem.U8, Elem.U16}
    offered = adapter.features
    if "shader-f16" in offered:
        elems.add(Elem.F16)
    if "shader-int64" in offered:
        elems |= {Elem.I64, Elem.U64}
    features = {Feature.ATOMIC_FLOAT, Feature.DYNAMIC_COUNT, Feature.PRINT, Feature.PLANE}
    features |= {Feature.PLANE_SHUFFLE, Feature.PARTIAL_PLANE}
    if {"timestamp-query", "timestamp-query-inside-encoders"} <= set(offered):
        features.add(Feature.DEVICE_TIMING)
    return Features(frozenset(features), frozenset(elems))


class WebGpuServer(ComputeServer):
    """The server of one WebGPU device, built on a :class:`WebGpuDriver`."""

    def __init__(self, device: WebGpuDevice) -> None:
        adapter = all_adapters()[device.index]
        driver = WebGpuDriver(adapter, str(device))
        plane_dim = driver.plane_dim
        features = _features(adapter)
        limits = driver.device.limits
        info = adapter.info
        properties = DeviceProperties(
            name=info["device"],
            vendor=f"{info['backend_type']} {info['description']}".strip(),
            memory_nbytes=driver.storage.memory_nbytes,
            max_units_per_ruda=int(limits["max-compute-invocations-per-workgroup"]),
            max_ruda_dim=(
                int(limits["max-compute-workgroup-size-x"]),
                int(limits["max-compute-workgroup-size-y"]),
                int(limits["max-compute-workgroup-size-z"]),
            ),
            max_ruda_count=MAX_RUDA_COUNT,
            max_shared_memory_nbytes=int(limits["max-compute-workgroup-storage-size"]),
            plane_dim=plane_dim,
            compute_units=(os.cpu_count() or 1) if info["adapter_type"] == "CPU" else GPU_UNITS,
            alignment_nbytes=WebGpuStorage.alignment_nbytes,
            extra=(("backend", info["backend_type"]), ("wgpu", wgpu.__version__)),
        )
        target = WgslTarget(tuple(features.elems), driver.loop_limit)
        super().__init__(
            device.to_id(),
            driver.storage,
            driver,
            properties,
            features,
            CompileOptions(plane_dim=plane_dim, target=target),
            fingerprint=describe(adapter),
        )
