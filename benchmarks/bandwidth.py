"""Memory-bound kernels on a GPU, next to the device's copy bandwidth measured in the same run.

For one device (``cuda:0``, ``opencl:N`` or ``webgpu:N``), over N = 256 M f32 (``RUDA_BENCH_N``
overrides):

* device-to-device copy of 1 GiB (``cudaMemcpyAsync`` / ``clEnqueueCopyBuffer``; for another
  API, CUDA's copy on the same GPU through CuPy, in the same process): the roof, in GB/s moved
  (read + write);
* ruda ``c = a + b``: one element per unit, a grid-stride loop unrolled x4, and one line of 4
  per unit (16-byte loads and stores: ``float4`` in CUDA and OpenCL, ``vec4<f32>`` in WGSL),
  with ``launch`` (Checked) and ``launch_unchecked`` (BoundsCheckMode auto = Unchecked); GB/s
  moved (3 x 1 GiB per run) and the fraction of the copy's;
* ruda sums of the 1 GiB array: a shared-memory tree, and (where the device has planes)
  ``plane_sum`` after an x8-unrolled grid-stride loop; each cube writes its partial sum and a
  second launch on one cube folds the partials, by the tree or by ``plane_sum`` as the first,
  eight loads a unit in flight (no float atomic: WGSL has none, and thousands of cubes
  contending on its compare-exchange loop held WebGPU on an H200 under a tenth of the copy's
  bandwidth). GB/s counts the 1 GiB read, the time both launches. The ``plane_sum`` sums also
  in one launch: each cube stores its partial's bits by an atomic store into a slot holding
  :data:`EMPTY` and takes a ticket; the cube that takes the last one reads every slot by
  atomic loads until it holds a partial (each location's atomics are coherent, and WGSL has no
  fence wider than a cube that would order the store before the ticket), empties the slots
  again and folds them;
* on CUDA, CuPy's ``cupy.add(a, b, out=c)`` and ``cupy.sum`` on the same data, with each ruda
  kernel's time as a multiple of CuPy's.

Times are the best of several runs of ``REPS`` back-to-back launches between syncs (percentages
of the copy's wall time); where the device times its kernels, also their device time alone (no
host time between launches), against CUDA's copy between CUDA events.
Run: ``python benchmarks/bandwidth.py cuda:0``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np
import timing

import ruda_core as ruda
from ruda_core.lang import (
    ABSOLUTE_POS,
    PLANE_DIM,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    ArrayArg,
    Comptime,
    Line,
    SharedMemory,
    atomic_add,
    atomic_load,
    atomic_store,
    bitcast,
    f32,
    func,
    kernel,
    plane_sum,
    sync_units,
    u32,
    unroll,
)
from ruda_core.runtime import Feature, RudaCount, RudaDim

N = int(os.environ.get("RUDA_BENCH_N", 256 * 1024 * 1024))
REPS = 10
ROUNDS = 5
BLOCK = 256
#: A partial's slot before its cube stores it: a NaN (a cube whose sum is that NaN stores
#: ``NAN``, another NaN, instead).
EMPTY = 0x7FC0DEAD
NAN = 0x7FC00000
#: Loads in flight per unit in the fold of the partials: its cube reads them all, so one load
#: at a time would make the fold a chain of memory latencies.
FOLD_UNROLL = 8


@kernel
def add(a: Array[f32], b: Array[f32], c: Array[f32]):
    i = ABSOLUTE_POS
    if i < c.len():
        c[i] = a[i] + b[i]


@kernel
def add_lines(a: Array[f32], b: Array[f32], c: Array[f32], WIDTH: Comptime[int]):
    i = ABSOLUTE_POS
    if i < c.len() // WIDTH:  # N is a multiple of WIDTH: no tail
        c.store_line(i, a.load_line(i, WIDTH) + b.load_line(i, WIDTH))


@kernel
def add_strided(a: Array[f32], b: Array[f32], c: Array[f32], UNROLL: Comptime[int]):
    n = c.len()
    stride = RUDA_COUNT * RUDA_DIM
    i = ABSOLUTE_POS
    while i + (UNROLL - 1) * stride < n:
        for k in unroll(range(UNROLL)):
            j = i + k * stride
            c[j] = a[j] + b[j]
        i += UNROLL * stride
    while i < n:
        c[i] = a[i] + b[i]
        i += stride


@kernel
def add_lines_strided(a: Array[f32], b: Array[f32], c: Array[f32], WIDTH: Comptime[int]):
    """Two lines per unit and turn of a grid-stride loop, both loaded before either is stored."""
    n = c.len() // WIDTH  # N is a multiple of WIDTH: no tail
    stride = RUDA_COUNT * RUDA_DIM
    i = ABSOLUTE_POS
    while i + stride < n:
        x = a.load_line(i, WIDTH) + b.load_line(i, WIDTH)
        y = a.load_line(i + stride, WIDTH) + b.load_line(i + stride, WIDTH)
        c.store_line(i, x)
        c.store_line(i + stride, y)
        i += 2 * stride
    if i < n:
        c.store_line(i, a.load_line(i, WIDTH) + b.load_line(i, WIDTH))


@func
def _unit_sum(x: Array[f32], UNROLL: Comptime[int], WIDTH: Comptime[int]) -> f32:
    """The unit's sum of its elements of ``x`` in a grid-stride loop (of lines of ``WIDTH``,
    one running sum per lane, where ``WIDTH > 1``: ``N`` is then a multiple of it)."""
    n = x.len()
    stride = RUDA_COUNT * RUDA_DIM
    acc = f32(0)
    i = ABSOLUTE_POS
    if WIDTH == 1:
        while i + (UNROLL - 1) * stride < n:
            for k in unroll(range(UNROLL)):
                acc += x[i + k * stride]
            i += UNROLL * stride
        while i < n:
            acc += x[i]
            i += stride
    else:
        lanes = Line.splat(f32(0), WIDTH)
        while i + (UNROLL - 1) * stride < n // WIDTH:
            for k in unroll(range(UNROLL)):
                lanes = lanes + x.load_line(i + k * stride, WIDTH)
            i += UNROLL * stride
        while i < n // WIDTH:
            lanes = lanes + x.load_line(i, WIDTH)
            i += stride
        acc = lanes.sum()
    return acc


@func
def _cube_sum(acc: f32, BLOCK: Comptime[int], PLANE: Comptime[int]) -> f32:
    """``acc`` summed over the cube by ``plane_sum``: each plane's sum, then the first plane's
    over those; the cube's sum in unit 0 (every unit calls it)."""
    partial = SharedMemory(f32, BLOCK // PLANE)  # one partial sum per plane
    acc = plane_sum(acc)
    if UNIT_POS_PLANE == 0:
        partial[UNIT_POS // PLANE_DIM] = acc
    sync_units()
    total = f32(0)
    if UNIT_POS < PLANE_DIM:  # the first plane folds the planes' partials
        for j in range(UNIT_POS, u32(BLOCK // PLANE), u32(PLANE)):
            total += partial[j]
        total = plane_sum(total)
    sync_units()
    return total


@kernel
def reduce_plane(
    x: Array[f32],
    out: Array[f32],
    BLOCK: Comptime[int],
    UNROLL: Comptime[int],
    PLANE: Comptime[int],
    WIDTH: Comptime[int],
):
    total = _cube_sum(_unit_sum(x, UNROLL, WIDTH), BLOCK, PLANE)
    if UNIT_POS == 0:
        out[RUDA_POS] = total  # the cube's partial sum


@kernel
def reduce_plane_once(
    x: Array[f32],
    partials: Array[u32],
    tickets: Array[u32],
    out: Array[f32],
    BLOCK: Comptime[int],
    UNROLL: Comptime[int],
    PLANE: Comptime[int],
    WIDTH: Comptime[int],
):
    last = SharedMemory(u32, 1)
    total = _cube_sum(_unit_sum(x, UNROLL, WIDTH), BLOCK, PLANE)
    if UNIT_POS == 0:
        bits = bitcast(u32, total)
        atomic_store(partials, RUDA_POS, u32(NAN) if bits == u32(EMPTY) else bits)
        last[0] = atomic_add(tickets, 0, u32(1))
    sync_units()
    if last[0] == RUDA_COUNT - u32(1):  # every other cube has stored its partial
        acc = f32(0)
        for j in range(UNIT_POS, RUDA_COUNT, u32(BLOCK)):
            seen = atomic_load(partials, j)
            while seen == u32(EMPTY):  # stored, not visible here yet
                seen = atomic_load(partials, j)
            atomic_store(partials, j, u32(EMPTY))  # for the next launch
            acc += bitcast(f32, seen)
        total = _cube_sum(acc, BLOCK, PLANE)
        if UNIT_POS == 0:
            out[0] = total
            atomic_store(tickets, 0, u32(0))


@kernel
def reduce_sum(x: Array[f32], out: Array[f32], BLOCK: Comptime[int]):
    smem = SharedMemory(f32, BLOCK)
    acc = f32(0)
    i = ABSOLUTE_POS
    stride = RUDA_COUNT * RUDA_DIM
    n = x.len()
    while i < n:
        acc += x[i]
        i += stride
    smem[UNIT_POS] = acc
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if UNIT_POS < s:
            smem[UNIT_POS] += smem[UNIT_POS + s]
        sync_units()
        s //= 2
    if UNIT_POS == 0:
        out[RUDA_POS] = smem[0]  # the cube's partial sum


def best_seconds(run: Callable[[], object], sync: Callable[[], None]) -> float:
    return timing.best_seconds(run, sync, ROUNDS, REPS)


def copy_roof(client: ruda.runtime.ComputeClient, src: object, dst: object, nbytes: int) -> float:
    """Seconds for one device-to-device copy of ``nbytes`` on the client's own queue."""
    server = client.server
    stream = server.streams.get(client.execution_stream().value)
    sb, db = src.binding(), dst.binding()  # type: ignore[attr-defined]
    if client.name() == "cuda":
        from cupy.cuda import runtime

        def copy() -> None:
            runtime.memcpyAsync(
                db.resource + db.offset_bytes, sb.resource + sb.offset_bytes, nbytes, 3, stream.ptr
            )
    elif client.name() != "opencl":  # another API on an NVIDIA GPU: CUDA's copy is the roof
        import cupy

        cs, cd = cupy.empty(nbytes, cupy.uint8), cupy.empty(nbytes, cupy.uint8)
        return best_seconds(
            lambda: cupy.cuda.runtime.memcpyAsync(cd.data.ptr, cs.data.ptr, nbytes, 3, 0),
            cupy.cuda.Device().synchronize,
        )
    else:
        import pyopencl as cl

        def copy() -> None:
            cl.enqueue_copy(
                stream.queue,
                db.resource,
                sb.resource,
                byte_count=nbytes,
                src_offset=sb.offset_bytes,
                dst_offset=db.offset_bytes,
            )

    return best_seconds(copy, lambda: client.sync().result())


def device_seconds(client: ruda.runtime.ComputeClient, run: Callable[[], object]) -> float | None:
    """Device seconds per ``run()`` from the device's timestamps (the best of ``ROUNDS`` rounds
    of ``REPS`` runs), or None where the device has none: no host time between launches."""
    if not client.features().has(Feature.DEVICE_TIMING):
        return None
    run()
    rounds = [client.profile(lambda: [run() for _ in range(REPS)])[1] for _ in range(ROUNDS)]
    return min(p.execution_ns for p in rounds) / REPS / 1e9


def event_roof(nbytes: int) -> float | None:
    """GB/s (read + write) of CUDA's device-to-device copy of ``nbytes`` between CUDA events, or
    None without CuPy."""
    try:
        import cupy
    except ImportError:
        return None
    src, dst = cupy.empty(nbytes, cupy.uint8), cupy.empty(nbytes, cupy.uint8)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    best = float("inf")
    for _ in range(ROUNDS + 1):
        start.record()
        for _ in range(REPS):
            cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, 3, 0)
        end.record()
        end.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, end) / 1e3 / REPS)
    return 2 * nbytes / best / 1e9


def report(
    label: str, nbytes: int, wall_s: float, dev_s: float | None, roofs: tuple[float, float | None]
) -> None:
    """One kernel's line: GB/s by wall time against the wall-time roof and, where the device
    times its kernels, by device time against the copy's between CUDA events."""
    gbs = nbytes / wall_s / 1e9
    line = f"  ruda {label:42s} {gbs:8.1f} GB/s = {gbs / roofs[0]:6.1%}"
    if dev_s is not None and roofs[1] is not None:
        dev = nbytes / dev_s / 1e9
        line += f"   device time {dev:8.1f} GB/s = {dev / roofs[1]:6.1%}"
    print(line)


def main(device: str) -> None:
    client = ruda.client(device)
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    rng = np.random.default_rng(0)
    host_a = rng.random(N, dtype=np.float32)
    host_b = rng.random(N, dtype=np.float32)
    a, b = client.create_from_slice(host_a), client.create_from_slice(host_b)
    c = client.empty(4 * N)
    gib = 4 * N / 1e9

    copy_s = copy_roof(client, a, c, 4 * N)
    roof = 2 * gib / copy_s
    print(f"{device}: {client.properties().name}, N = {N} f32")
    what = "device-to-device copy" if client.name() in ("cuda", "opencl") else "CUDA's copy"
    print(f"  {what:27s} {roof:8.1f} GB/s (read + write)")
    timed = client.features().has(Feature.DEVICE_TIMING)
    roofs = (roof, event_roof(4 * N) if timed else None)
    if roofs[1] is not None:
        print(f"  CUDA's copy between CUDA events {roofs[1]:8.1f} GB/s: the device-time roof")

    args = (ArrayArg(a, N), ArrayArg(b, N), ArrayArg(c, N))
    cubes = (N + BLOCK - 1) // BLOCK
    line_cubes = (N // 4 + BLOCK - 1) // BLOCK
    wide = 4 * client.properties().compute_units * 8  # cubes of a grid-stride launch
    expected = host_a + host_b
    adds = {
        "add, one element per unit": lambda: add.launch(
            client, RudaCount(cubes), RudaDim(BLOCK), *args
        ),
        "add, grid-stride x4": lambda: add_strided.launch(
            client, RudaCount(wide), RudaDim(BLOCK), *args, UNROLL=4
        ),
        "add, grid-stride x4 unchecked": lambda: add_strided.launch_unchecked(
            client, RudaCount(wide), RudaDim(BLOCK), *args, UNROLL=4
        ),
        "add, lines of 4": lambda: add_lines.launch(
            client, RudaCount(line_cubes), RudaDim(BLOCK), *args, WIDTH=4
        ),
        "add, lines of 4 unchecked": lambda: add_lines.launch_unchecked(
            client, RudaCount(line_cubes), RudaDim(BLOCK), *args, WIDTH=4
        ),
        "add, lines of 4, grid-stride x2": lambda: add_lines_strided.launch(
            client, RudaCount(wide), RudaDim(BLOCK), *args, WIDTH=4
        ),
        "add, lines of 4, grid-stride x2 unchecked": lambda: add_lines_strided.launch_unchecked(
            client, RudaCount(wide), RudaDim(BLOCK), *args, WIDTH=4
        ),
    }
    add_s = {}
    for label, run in adds.items():
        client.write(c, np.zeros(N, np.float32))
        add_s[label] = best_seconds(run, sync)
        if not np.array_equal(np.frombuffer(client.read_one(c), dtype=np.float32), expected):
            raise SystemExit(f"ruda {label} returned a wrong result")
        report(label, 12 * N, add_s[label], device_seconds(client, run), roofs)

    out = client.create_from_slice(np.zeros(1, np.float32))
    tickets = client.create_from_slice(np.zeros(1, np.uint32))
    partials = ArrayArg(client.empty(4 * wide), wide)  # one per cube
    red = (ArrayArg(a, N), partials)
    want = float(host_a.sum(dtype=np.float64))

    def folded(sum_cubes: Callable[[], object], plane: int = 0) -> Callable[[], None]:
        """``sum_cubes``, then the fold of its partials into ``out`` on one cube: by the tree, or
        by ``plane_sum`` on planes of ``plane`` lanes (a plane sum folds with plane sums)."""
        folds = (ArrayArg(partials.handle, wide), ArrayArg(out, 1))

        def run() -> None:
            sum_cubes()
            if plane:
                reduce_plane.launch(
                    client, 1, BLOCK, *folds, BLOCK=BLOCK, UNROLL=FOLD_UNROLL, PLANE=plane, WIDTH=1
                )
            else:
                reduce_sum.launch(client, RudaCount(1), RudaDim(BLOCK), *folds, BLOCK=BLOCK)

        return run

    reductions = {
        "sum, shared-memory tree": folded(
            lambda: reduce_sum.launch(client, RudaCount(wide), RudaDim(BLOCK), *red, BLOCK=BLOCK)
        ),
    }
    if client.features().has(Feature.PLANE):
        plane = client.properties().plane_dim
        for label, unroll_, width in (("x8", 8, 1), ("lines of 4 x4", 4, 4)):
            for checked in (True, False):
                launch = reduce_plane.launch if checked else reduce_plane.launch_unchecked
                spec = {"BLOCK": BLOCK, "UNROLL": unroll_, "PLANE": plane, "WIDTH": width}
                name = f"sum, plane_sum {label}{'' if checked else ' unchecked'}"
                reductions[name] = folded(
                    lambda launch=launch, spec=spec: launch(
                        client, RudaCount(wide), RudaDim(BLOCK), *red, **spec
                    ),
                    plane,
                )
        # one launch: the cube that takes the last ticket folds the partials, reading each by
        # atomic loads until its cube's store shows (WGSL has no fence wider than a cube)
        slots = client.create_from_slice(np.full(wide, EMPTY, np.uint32))
        once = (ArrayArg(a, N), ArrayArg(slots, wide), ArrayArg(tickets, 1), ArrayArg(out, 1))
        for label, unroll_, width in (("x8", 8, 1), ("lines of 4 x4", 4, 4)):
            spec = {"BLOCK": BLOCK, "UNROLL": unroll_, "PLANE": plane, "WIDTH": width}
            reductions[f"sum, plane_sum {label} unchecked, one launch"] = lambda spec=spec: (
                reduce_plane_once.launch_unchecked(
                    client, RudaCount(wide), RudaDim(BLOCK), *once, **spec
                )
            )
    red_s = {}
    for label, run in reductions.items():
        client.write(out, np.zeros(1, np.float32))
        run()
        got = float(np.frombuffer(client.read_one(out), dtype=np.float32)[0])
        if abs(got - want) > 1e-3 * abs(want):
            raise SystemExit(f"ruda {label} returned {got}, want {want}")
        red_s[label] = best_seconds(run, sync)
        report(label, 4 * N, red_s[label], device_seconds(client, run), roofs)

    if client.name() == "cuda":
        import cupy

        ca, cb = cupy.asarray(host_a), cupy.asarray(host_b)
        cc = cupy.empty_like(ca)
        cupy_add_s = best_seconds(lambda: cupy.add(ca, cb, out=cc), cupy.cuda.Device().synchronize)
        gbs = 3 * gib / cupy_add_s
        print(f"  cupy.add                            {gbs:8.1f} GB/s  = {gbs / roof:5.1%} of copy")
        for label, t in add_s.items():
            print(f"    ruda {label}: {t / cupy_add_s:.2f}x cupy.add's time")
        cupy_sum_s = best_seconds(lambda: ca.sum(), cupy.cuda.Device().synchronize)
        gbs = gib / cupy_sum_s
        print(f"  cupy.sum                            {gbs:8.1f} GB/s  = {gbs / roof:5.1%} of copy")
        for label, t in red_s.items():
            print(f"    ruda {label}: {t / cupy_sum_s:.2f}x cupy.sum's time")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
