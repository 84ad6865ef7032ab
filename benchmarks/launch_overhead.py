"""Launch overhead of a cached trivial kernel: ruda next to the backend's own peer, in one run.

* ``cuda:*``: a CuPy ``RawKernel`` call of the same one-store kernel on the same stream;
* ``opencl:*``: a raw PyOpenCL kernel call on the same queue;
* ``cpu``: ruda alone (the NumPy device has no lower-level peer).

Two ruda forms are timed: ``kernel.launch(...)`` (arguments checked and packed each time) and
``kernel.prepare(...).launch()`` (checked and packed once, replayed). Each side enqueues ``N``
launches and syncs once; the best of several rounds (interleaved) is reported in microseconds
per launch, with the ratio ruda / peer.

Run: ``python benchmarks/launch_overhead.py [device ...]`` (default: every device).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

N = 5000
ROUNDS = 7


@kernel
def touch(x: Array[f32]):
    if ABSOLUTE_POS == 0:
        x[0] = f32(1)


def per_launch_us(enqueue: Callable[[], None], sync: Callable[[], None]) -> float:
    enqueue()
    sync()
    start = time.perf_counter()
    for _ in range(N):
        enqueue()
    sync()
    return (time.perf_counter() - start) / N * 1e6


def ruda_side(client: ComputeClient) -> tuple[Callable[[], None], Callable[[], None], object]:
    handle = client.empty(4)
    arg = ArrayArg(handle, 1)
    count, dim = RudaCount(1), RudaDim(1)

    def enqueue() -> None:
        touch.launch(client, count, dim, arg)

    return enqueue, lambda: client.sync().result(), handle


def prepared_side(client: ComputeClient) -> tuple[Callable[[], None], Callable[[], None], object]:
    prepared = touch.prepare(client, RudaCount(1), RudaDim(1), ArrayArg(client.empty(4), 1))
    return prepared.launch, lambda: client.sync().result(), prepared


def cupy_side() -> tuple[Callable[[], None], Callable[[], None], object]:
    import cupy

    raw = cupy.RawKernel(
        'extern "C" __global__ void touch(float* x, unsigned int n) '
        "{ if (blockIdx.x * blockDim.x + threadIdx.x == 0 && n > 0) x[0] = 1.0f; }",
        "touch",
    )
    x = cupy.zeros(1, dtype=cupy.float32)
    n = np.uint32(1)
    stream = cupy.cuda.Stream(non_blocking=True)

    def enqueue() -> None:
        raw((1,), (1,), (x, n), stream=stream)

    return enqueue, stream.synchronize, x


def pyopencl_side(client: ComputeClient) -> tuple[Callable[[], None], Callable[[], None], object]:
    import pyopencl as cl

    server = client.server
    queue = server._stream(client.execution_stream().value).queue  # the same queue ruda uses
    program = cl.Program(
        queue.context,
        "__kernel void touch(__global float* x, ulong offset, uint n) "
        "{ if (get_global_id(0) == 0 && n > 0) x[offset / 4] = 1.0f; }",
    ).build()
    knl = program.touch
    knl.set_scalar_arg_dtypes([None, np.uint64, np.uint32])
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4)

    def enqueue() -> None:
        knl(queue, (1,), (1,), buf, 0, 1)

    return enqueue, queue.finish, buf


def measure(device: str) -> str:
    client = ruda.client(device)
    backend = device.split(":")[0]
    sides = {"ruda launch": ruda_side(client), "ruda prepared": prepared_side(client)}
    peer = {"cuda": cupy_side, "opencl": lambda: pyopencl_side(client)}.get(backend)
    name = "CuPy RawKernel" if backend == "cuda" else "raw PyOpenCL"
    if peer is not None:
        sides[name] = peer()
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(ROUNDS):
        for label, (enqueue, sync, _) in sides.items():
            best[label] = min(best[label], per_launch_us(enqueue, sync))
    parts = [f"{label} {us:6.2f} us" for label, us in best.items()]
    if peer is not None:
        parts.append(
            f"ratio launch {best['ruda launch'] / best[name]:.2f}x, "
            f"prepared {best['ruda prepared'] / best[name]:.2f}x"
        )
    return f"{device:10s} " + "  ".join(parts)


def main(devices: list[str]) -> None:
    names = devices or [str(d) for d in ruda.enumerate_all_devices()]
    print(f"launch overhead, {N} launches per round, best of {ROUNDS} rounds")
    for name in names:
        print(measure(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
