"""Launch overhead of a cached trivial kernel: ruda next to the backend's own peer, in one run.

* ``cuda:*``: a CuPy ``RawKernel`` call of the same one-store kernel on a blocking stream of its
  own (as ruda's are);
* ``opencl:*``: a raw PyOpenCL kernel call on the same queue;
* ``cpu``: ruda alone (the NumPy device has no lower-level peer).

Two ruda forms are timed: ``kernel.launch(...)`` (arguments checked and packed each time) and
``kernel.prepare(...).launch()`` (checked and packed once, replayed). Each side enqueues ``N``
launches and syncs once; the best of ``ROUNDS`` rounds is reported in microseconds per launch,
with the ratio ruda / peer of the bests and the median of the rounds' own ratios. The sides
take turns within a round, each round starting with the next side: on a small host the
OpenCL runtime's worker threads share the cores with the launching thread, so one side's
lucky or unlucky round would otherwise decide the ratio of bests alone.

The replay line times a chain of ``CHAIN`` launches of the same kernel captured once
(``client.capture()``) and replayed ``REPLAYS`` times: host microseconds per kernel of the
enqueue loop (the sync after it is not counted), next to the same chain as plain calls of the
peer (CuPy ``RawKernel``, raw PyOpenCL; ruda's own ``launch`` on the NumPy device) and, on CUDA,
a CuPy graph of the chain and ``torch.cuda.CUDAGraph.replay()`` of a chain of ``fill_``
kernels. Peers that are not installed are left out.

Run: ``python benchmarks/launch_overhead.py [device ...]`` (default: every device).
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

N = 5000
ROUNDS = 15
CHAIN = 10
REPLAYS = 1000

#: a side of a comparison: its launch (or replay), its sync, and what must stay alive
Side = tuple[Callable[[], None], Callable[[], None], object]


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


def ruda_side(client: ComputeClient) -> Side:
    handle = client.empty(4)
    arg = ArrayArg(handle, 1)
    count, dim = RudaCount(1), RudaDim(1)

    def enqueue() -> None:
        touch.launch(client, count, dim, arg)

    return enqueue, lambda: client.sync().result(), handle


def prepared_side(client: ComputeClient) -> Side:
    prepared = touch.prepare(client, RudaCount(1), RudaDim(1), ArrayArg(client.empty(4), 1))
    return prepared.launch, lambda: client.sync().result(), prepared


def cupy_side() -> Side:
    import cupy

    raw = cupy.RawKernel(
        'extern "C" __global__ void touch(float* x, unsigned int n) '
        "{ if (blockIdx.x * blockDim.x + threadIdx.x == 0 && n > 0) x[0] = 1.0f; }",
        "touch",
    )
    x = cupy.zeros(1, dtype=cupy.float32)
    n = np.uint32(1)
    stream = cupy.cuda.Stream()  # blocking, as ruda's streams are

    def enqueue() -> None:
        raw((1,), (1,), (x, n), stream=stream)

    return enqueue, stream.synchronize, (x, stream)


def pyopencl_side(client: ComputeClient) -> Side:
    import pyopencl as cl

    server = client.server
    queue = server.streams.get(client.execution_stream().value).queue  # the same queue ruda uses
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


def rounds(
    sides: dict[str, Side], timer: Callable[[Callable[[], None], Callable[[], None]], float]
) -> dict[str, list[float]]:
    """``ROUNDS`` timings of each side by ``timer(run, sync)``, in turns; round ``r`` starts with
    side ``r`` (modulo their number), so no side always follows the same one."""
    labels = list(sides)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(ROUNDS):
        start = r % len(labels)
        for label in labels[start:] + labels[:start]:
            run, sync, _ = sides[label]
            times[label].append(timer(run, sync))
    return times


def ratio(times: dict[str, list[float]], label: str, peer: str) -> str:
    """``label`` / ``peer``: the ratio of their bests, and the median of the rounds' ratios."""
    per_round = statistics.median(a / b for a, b in zip(times[label], times[peer], strict=True))
    return f"{min(times[label]) / min(times[peer]):.2f}x (median {per_round:.2f}x)"


def per_kernel_us(replay: Callable[[], None], sync: Callable[[], None]) -> float:
    replay()
    sync()
    start = time.perf_counter()
    for _ in range(REPLAYS):
        replay()
    host = time.perf_counter() - start
    sync()
    return host / (REPLAYS * CHAIN) * 1e6


def chain_of(enqueue: Callable[[], None]) -> Callable[[], None]:
    def chain() -> None:
        for _ in range(CHAIN):
            enqueue()

    return chain


def graph_side(client: ComputeClient) -> Side:
    arg = ArrayArg(client.empty(4), 1)
    count, dim = RudaCount(1), RudaDim(1)
    with client.capture() as graph:
        for _ in range(CHAIN):
            touch.launch(client, count, dim, arg)
    return graph.replay, lambda: client.sync().result(), graph


def cupy_graph_side() -> Side:
    raw_call, sync, x = cupy_side()
    stream = x[1]
    stream.begin_capture()
    chain_of(raw_call)()
    graph = stream.end_capture()
    graph.upload(stream)
    return lambda: graph.launch(stream), sync, (graph, x)


def torch_graph_side() -> Side:
    import torch

    x = torch.zeros(1, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # warm up off the default stream, as torch asks
        x.fill_(1.0)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CHAIN):
            x.fill_(1.0)
    return graph.replay, torch.cuda.synchronize, (graph, x)


def replay_line(device: str, client: ComputeClient, backend: str) -> str:
    sides = {"ruda graph replay": graph_side(client)}
    if backend == "cuda":
        enqueue, sync, keep = cupy_side()
        sides[f"CuPy RawKernel x{CHAIN}"] = (chain_of(enqueue), sync, keep)
        sides["CuPy graph"] = cupy_graph_side()
        if importlib.util.find_spec("torch") is not None:
            sides["torch CUDAGraph"] = torch_graph_side()
    elif backend == "opencl":
        enqueue, sync, keep = pyopencl_side(client)
        sides[f"raw PyOpenCL x{CHAIN}"] = (chain_of(enqueue), sync, keep)
    enqueue, sync, keep = ruda_side(client)
    sides[f"ruda launch x{CHAIN}"] = (chain_of(enqueue), sync, keep)
    times = rounds(sides, per_kernel_us)
    parts = [f"{label} {min(us):5.2f}" for label, us in times.items()]
    return f"{device:10s} replay of {CHAIN}, host us per kernel: " + "  ".join(parts)


def measure(device: str) -> str:
    client = ruda.client(device)
    backend = device.split(":")[0]
    sides = {"ruda launch": ruda_side(client), "ruda prepared": prepared_side(client)}
    peer = {"cuda": cupy_side, "opencl": lambda: pyopencl_side(client)}.get(backend)
    name = "CuPy RawKernel" if backend == "cuda" else "raw PyOpenCL"
    if peer is not None:
        sides[name] = peer()
    times = rounds(sides, per_launch_us)
    parts = [f"{label} {min(us):6.2f} us" for label, us in times.items()]
    if peer is not None:
        parts.append(
            f"ratio launch {ratio(times, 'ruda launch', name)}, "
            f"prepared {ratio(times, 'ruda prepared', name)}"
        )
    return f"{device:10s} " + "  ".join(parts) + "\n" + replay_line(device, client, backend)


def main(devices: list[str]) -> None:
    names = devices or [str(d) for d in ruda.enumerate_all_devices()]
    print(
        f"launch overhead, {N} launches per round, best of {ROUNDS} rounds in turns (ratios: of "
        f"the bests, and the median of the rounds' own); replays: a chain of {CHAIN} captured "
        f"once, {REPLAYS} replays per round"
    )
    for name in names:
        print(measure(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
