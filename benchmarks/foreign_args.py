"""Host cost of a saxpy launch with ruda's own arguments, with three foreign arrays, and with
Triton, in one run.

* ``ruda ArrayArg``: ``saxpy.launch`` with three ``ArrayArg`` (the plain path);
* ``ruda foreign``: the same launch with three arrays of another library, borrowed at every
  launch (read through their own accessors, bound through a cached entry, kept alive by the
  stream): NumPy arrays and, with torch installed, torch CPU tensors on ``cpu``; PyTorch
  tensors and CuPy arrays on ``cuda:*`` (ordered after the library's current stream). The
  NumPy output holds the results when ``launch`` returns, so each NumPy launch waits for its
  kernel: that side's figure is a launch, a run and a sync, not the host cost alone;
* ``Triton``: on ``cuda:*``, Triton's launch of an equivalent saxpy kernel with the same torch
  tensors.

Each side enqueues ``N`` launches; the time until the last one is enqueued, divided by ``N``,
is the host cost in microseconds per launch (every round ends with a sync outside the timing).
The sides take turns for ``ROUNDS`` rounds: each side's figure is its best round, and its cost
above the plain launch is the median, over the rounds, of its round minus the plain side's
round just before it (so a host that changes speed during the run moves both alike). Parts
whose library is missing are skipped.

Run: ``python benchmarks/foreign_args.py [device ...]`` (default: every cpu and cuda device).
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

N = 2000
ROUNDS = 15
ELEMENTS = 1024
BLOCK = 256
PLAIN = "ruda ArrayArg"

Side = tuple[Callable[[], None], Callable[[], None]]


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


if importlib.util.find_spec("triton") is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def triton_saxpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, a * x + y, mask=mask)


def host_us(enqueue: Callable[[], None], sync: Callable[[], None]) -> float:
    enqueue()
    sync()
    start = time.perf_counter()
    for _ in range(N):
        enqueue()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / N * 1e6


def geometry() -> tuple[RudaCount, RudaDim]:
    return RudaCount((ELEMENTS + BLOCK - 1) // BLOCK), RudaDim(BLOCK)


def plain_side(client: ComputeClient) -> Side:
    count, dim = geometry()
    host = np.arange(ELEMENTS, dtype=np.float32)
    x = ArrayArg(client.create_from_slice(host), ELEMENTS)
    y = ArrayArg(client.create_from_slice(host), ELEMENTS)
    out = ArrayArg(client.empty(host.nbytes), ELEMENTS)

    def enqueue() -> None:
        saxpy.launch(client, count, dim, 2.0, x, y, out)

    return enqueue, lambda: client.sync().result()


def numpy_side(client: ComputeClient) -> Side:
    count, dim = geometry()
    x, y = np.arange(ELEMENTS, dtype=np.float32), np.ones(ELEMENTS, np.float32)
    out = np.empty_like(x)

    def enqueue() -> None:
        saxpy.launch(client, count, dim, 2.0, x, y, out)

    return enqueue, lambda: client.sync().result()


def torch_tensors(device: str) -> tuple[object, object, object]:
    import torch

    x = torch.arange(ELEMENTS, dtype=torch.float32, device=device)
    return x, torch.ones_like(x), torch.empty_like(x)


def torch_side(client: ComputeClient, device: str) -> Side:
    import torch

    count, dim = geometry()
    x, y, out = torch_tensors(device)

    def enqueue() -> None:
        saxpy.launch(client, count, dim, 2.0, x, y, out)

    def sync() -> None:
        client.sync().result()
        if device != "cpu":
            torch.cuda.synchronize()

    return enqueue, sync


def cupy_side(client: ComputeClient, device: str) -> Side:
    import cupy

    count, dim = geometry()
    with cupy.cuda.Device(int(device.split(":")[1])):
        x = cupy.arange(ELEMENTS, dtype=cupy.float32)
        y, out = cupy.ones_like(x), cupy.empty_like(x)

    def enqueue() -> None:
        saxpy.launch(client, count, dim, 2.0, x, y, out)

    def sync() -> None:
        client.sync().result()
        cupy.cuda.Device().synchronize()

    return enqueue, sync


def triton_side(device: str) -> Side:
    import torch

    x, y, out = torch_tensors(device)
    grid = (triton.cdiv(ELEMENTS, BLOCK),)

    def enqueue() -> None:
        triton_saxpy[grid](x, y, out, 2.0, ELEMENTS, BLOCK_SIZE=BLOCK)

    return enqueue, torch.cuda.synchronize


def sides(device: str) -> dict[str, Side]:
    client = ruda.client(device)
    found = {PLAIN: plain_side(client)}
    if device == "cpu":
        found["ruda NumPy arrays"] = numpy_side(client)
        if importlib.util.find_spec("torch") is not None:
            found["ruda torch-CPU tensors"] = torch_side(client, device)
    elif device.startswith("cuda") and importlib.util.find_spec("torch") is not None:
        found["ruda torch tensors"] = torch_side(client, device)  # torch names it the same
        if importlib.util.find_spec("triton") is not None:
            found["Triton torch tensors"] = triton_side(device)
    if device.startswith("cuda") and importlib.util.find_spec("cupy") is not None:
        found["ruda CuPy arrays"] = cupy_side(client, device)
    return found


def measure(device: str) -> str:
    timed = sides(device)
    rounds: dict[str, list[float]] = {label: [] for label in timed}
    for _ in range(ROUNDS):
        for label, (enqueue, sync) in timed.items():
            rounds[label].append(host_us(enqueue, sync))
    plain = rounds[PLAIN]
    lines = [f"{device:8s} {PLAIN:24s} {min(plain):7.2f} us"]
    for label, times in rounds.items():
        if label != PLAIN:
            above = statistics.median(t - p for t, p in zip(times, plain, strict=True))
            lines.append(f"{'':8s} {label:24s} {min(times):7.2f} us  above plain {above:+6.2f} us")
    return "\n".join(lines)


def main(devices: list[str]) -> None:
    names = devices or [
        str(d) for d in ruda.enumerate_all_devices() if str(d).split(":")[0] in ("cpu", "cuda")
    ]
    print(
        f"saxpy of {ELEMENTS} f32, host us per launch, {N} launches: best of {ROUNDS} rounds, "
        "and the median of the per-round differences from the plain launch"
    )
    for name in names:
        print(measure(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
