"""What a round of launches and a sync costs beyond the kernels, on each device named.

For each device in turn (default ``cuda:0 webgpu:0``), with ``bandwidth.py``'s ``c = a + b`` in
lines of 4 (``launch_unchecked``):

* one launch over 1 M f32 and its sync, alone: the fixed latency of a round (the kernel takes a
  few microseconds on a GPU);
* rounds of 10 and of 100 launches over ``RUDA_BENCH_N`` f32 (256 M) and one sync, as GB/s
  moved (read + write): a round of 10 is ``bandwidth.py``'s;
* rounds of 10 with ``flush()`` after the first launch and after each: whether submitting
  earlier lets the GPU start sooner than at the sync;
* the host time of a launch recorded without a flush, and of a launch followed by a flush.

Times are the best of 7 rounds after one warm-up round. Where two devices are named, the last
lines give the second device's times as multiples of the first's. Name the CUDA device first:
on an H100, WebGPU's rounds of 10 measured first in the process took 19.7 ms where they took
11.9 ms after CUDA's (``docs/benchmarks.md``).
Run: ``python benchmarks/sync_latency.py cuda:0 webgpu:0``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np
from bandwidth import add_lines
from timing import fastest

import ruda_core as ruda
from ruda_core.lang import ArrayArg
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

N = int(os.environ.get("RUDA_BENCH_N", 256 * 1024 * 1024))
SMALL = 1024 * 1024


def rounds(client: ComputeClient, n: int) -> dict[str, float]:
    """Seconds of each kind of round over ``n`` f32, on ``client``."""
    a = client.create_from_slice(np.ones(n, np.float32))
    b = client.create_from_slice(np.ones(n, np.float32))
    c = client.empty(4 * n)
    args = (ArrayArg(a, n), ArrayArg(b, n), ArrayArg(c, n))
    count = RudaCount((n // 4 + 255) // 256)

    def launch() -> None:
        add_lines.launch_unchecked(client, count, RudaDim(256), *args, WIDTH=4)

    def round_of(launches: int, flush: Callable[[int], bool] = lambda k: False) -> float:
        def run() -> None:
            for k in range(launches):
                launch()
                if flush(k):
                    client.flush()
            client.sync().result()

        run()  # warm-up
        return fastest(run, 7)

    if n == SMALL:
        return {"1 launch over 1 M, sync": round_of(1)}
    out = {
        "10 launches, sync": round_of(10),
        "100 launches, sync": round_of(100),
        "10 launches, flush after the first": round_of(10, lambda k: k == 0),
        "10 launches, flush after each": round_of(10, lambda k: True),
    }
    for label, flush in (("launch", False), ("launch and flush", True)):
        start = time.perf_counter()
        for _ in range(20):
            launch()
            if flush:
                client.flush()
        out[f"host time of a {label}"] = (time.perf_counter() - start) / 20
        client.sync().result()
    return out


def main(devices: list[str]) -> None:
    results = {}
    for device in devices:
        client = ruda.client(device)
        times = rounds(client, SMALL) | rounds(client, N)
        results[device] = times
        print(f"{device}: {client.properties().name}, N = {N} f32")
        for label, s in times.items():
            launches = 100 if label.startswith("100") else 10 if label.startswith("10 ") else 0
            moved = f"  {launches * 12 * N / s / 1e9:8.1f} GB/s" if launches else ""
            print(f"  {label:38s} {s * 1e3:8.3f} ms{moved}")
    if len(devices) == 2:
        first, second = (results[d] for d in devices)
        for label in first:
            print(f"  {label}: {devices[1]} {second[label] / first[label]:.2f}x {devices[0]}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["cuda:0", "webgpu:0"])
