"""Throughput of small launches from 1, 2, 4 and 8 threads sharing one client.

Every thread has its own stream; each enqueues ``LAUNCHES`` launches of a one-cube kernel and
syncs. Reported: launches per second over all threads (wall time from the first launch to the
last sync), which shows how the launch path scales under the server lock and the GIL.

Run: ``python benchmarks/stream_stress.py [device ...]`` (default: every device).
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

LAUNCHES = 2000


@kernel
def bump(x: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        x[i] = x[i] + f32(1)


def run(client: ComputeClient, threads: int) -> float:
    handles = [client.create_from_slice(np.zeros(32, np.float32)) for _ in range(threads)]
    barrier = threading.Barrier(threads + 1)

    def worker(k: int) -> None:
        arg = ArrayArg(handles[k], 32)
        count, dim = RudaCount(1), RudaDim(32)
        bump.launch(client, count, dim, arg)
        client.sync().result()
        barrier.wait()
        for _ in range(LAUNCHES):
            bump.launch(client, count, dim, arg)
        client.sync().result()

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - start
    for h in handles:
        got = np.frombuffer(client.read_one(h), np.float32)
        if not np.all(got == LAUNCHES + 1):
            raise SystemExit(f"lost updates: {got[:4]}")
    return threads * LAUNCHES / elapsed


def main(devices: list[str]) -> None:
    names = devices or [str(d) for d in ruda.enumerate_all_devices()]
    print(f"small-launch throughput, {LAUNCHES} launches per thread, one stream per thread")
    for name in names:
        client = ruda.client(name)
        rates = [f"{t} threads {run(client, t):9,.0f}/s" for t in (1, 2, 4, 8)]
        print(f"  {name:10s} " + "  ".join(rates), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
