"""Memory-bound kernels on a GPU, next to the device's copy bandwidth measured in the same run.

For one device (``cuda:0`` or ``opencl:N``):

* device-to-device copy of 1 GiB (``cudaMemcpyAsync`` / ``clEnqueueCopyBuffer``): the roof;
* ruda ``c[i] = a[i] + b[i]`` over 256 M f32 (Checked, what ``launch`` runs), in GB/s moved
  (3 x 1 GiB per run) and as a fraction of the copy bandwidth;
* on CUDA, CuPy's ``cupy.add(a, b, out=c)`` on the same data;
* ruda block-reduction sum (grid-stride loop, shared-memory tree, one atomic per cube) over
  256 M f32, next to ``cupy.sum`` on CUDA.

Times are the best of several runs of ``REPS`` back-to-back launches between syncs.
Run: ``python benchmarks/bandwidth.py cuda:0``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import ruda_core as ruda
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_COUNT,
    RUDA_DIM,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    atomic_add,
    f32,
    kernel,
    sync_units,
)
from ruda_core.runtime import RudaCount, RudaDim

N = 256 * 1024 * 1024
REPS = 10
ROUNDS = 5
BLOCK = 256


@kernel
def add(a: Array[f32], b: Array[f32], c: Array[f32]):
    i = ABSOLUTE_POS
    if i < c.len():
        c[i] = a[i] + b[i]


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
        atomic_add(out, 0, smem[0])


def best_seconds(run: Callable[[], None], sync: Callable[[], None]) -> float:
    run()
    sync()
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(REPS):
            run()
        sync()
        best = min(best, (time.perf_counter() - start) / REPS)
    return best


def copy_roof(client: ruda.runtime.ComputeClient, src: object, dst: object, nbytes: int) -> float:
    """Seconds for one device-to-device copy of ``nbytes`` on the client's own queue."""
    server = client.server
    stream = server._stream(client.execution_stream().value)
    sb, db = src.binding(), dst.binding()  # type: ignore[attr-defined]
    if client.name() == "cuda":
        from cupy.cuda import runtime

        def copy() -> None:
            runtime.memcpyAsync(
                db.resource + db.offset_bytes, sb.resource + sb.offset_bytes, nbytes, 3, stream.ptr
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
    print(f"  device-to-device copy       {roof:8.1f} GB/s (read + write)")

    args = (ArrayArg(a, N), ArrayArg(b, N), ArrayArg(c, N))
    cubes = (N + BLOCK - 1) // BLOCK
    add_s = best_seconds(lambda: add.launch(client, RudaCount(cubes), RudaDim(BLOCK), *args), sync)
    got = np.frombuffer(client.read_one(c), dtype=np.float32)
    if not np.array_equal(got, host_a + host_b):
        raise SystemExit("ruda add returned a wrong result")
    ours = 3 * gib / add_s
    print(f"  ruda add                    {ours:8.1f} GB/s  = {ours / roof:5.1%} of copy")

    out = client.create_from_slice(np.zeros(1, np.float32))
    red_cubes = 4 * client.properties().compute_units * 8
    red = (ArrayArg(a, N), ArrayArg(out, 1))

    def reduce() -> None:
        reduce_sum.launch(client, RudaCount(red_cubes), RudaDim(BLOCK), *red, BLOCK=BLOCK)

    red_s = best_seconds(reduce, sync)
    red_gbs = gib / red_s
    share = red_gbs / roof * 2  # a reduction only reads: its roof is twice the copy's
    print(f"  ruda block-reduction sum    {red_gbs:8.1f} GB/s  = {share:5.1%} of read roof")

    if client.name() == "cuda":
        import cupy

        ca, cb = cupy.asarray(host_a), cupy.asarray(host_b)
        cc = cupy.empty_like(ca)
        cupy_add_s = best_seconds(lambda: cupy.add(ca, cb, out=cc), cupy.cuda.Device().synchronize)
        cupy_add = 3 * gib / cupy_add_s
        print(
            f"  cupy.add                    {cupy_add:8.1f} GB/s  = {cupy_add / roof:5.1%} of copy"
            f"  (ruda/cupy time {add_s / cupy_add_s:.2f}x)"
        )
        cupy_sum_s = best_seconds(lambda: ca.sum(), cupy.cuda.Device().synchronize)
        print(
            f"  cupy.sum                    {gib / cupy_sum_s:8.1f} GB/s"
            f"  (ruda/cupy time {red_s / cupy_sum_s:.2f}x)"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
