"""Memory churn soak: uploads, launches and frees from 1 and 4 threads sharing one client.

Each thread (its own stream) runs ``CYCLES`` cycles; a cycle drops a random live handle (when
the thread holds its share of ``LIVE`` handles, or by a coin toss) or allocates 1 B - 4 MiB:
every 4th allocation is an upload (``create_from_slice``), the others ``empty``, and every 8th
also launches a copy from the previous live handle into the new one. Uploads and launches run
ahead of the streams, which is what makes pools balloon without back-pressure.

Reported per device and thread count: the peak of ``bytes_in_use`` and of ``bytes_reserved``
(read after every allocation), their ratio (the pool promises at most 2x plus one page),
``bytes_reserved`` after a final sync and ``memory_cleanup()``, the peak RSS of the process and
the wall time. Each measurement runs in a fresh child process, so its RSS is its own.

Run: ``python benchmarks/memory_churn.py [device ...]`` (default: ``cpu`` and every OpenCL
device).
"""

from __future__ import annotations

import gc
import json
import random
import resource
import subprocess
import sys
import threading
import time

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

CYCLES = 10_000
LIVE = 64
MAX_NBYTES = 4 << 20
MIB = 1 << 20


@kernel
def copy_u32(src: Array[u32], dst: Array[u32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i]


class Peaks:
    """The highest ``bytes_in_use`` and ``bytes_reserved`` any thread read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_use = 0
        self.reserved = 0

    def note(self, client: ComputeClient) -> None:
        usage = client.memory_usage()
        with self.lock:
            self.in_use = max(self.in_use, usage.bytes_in_use)
            self.reserved = max(self.reserved, usage.bytes_reserved)


def churn(client: ComputeClient, seed: int, live_max: int, peaks: Peaks) -> None:
    rng = random.Random(seed)
    data = np.random.default_rng(seed).integers(0, 256, MAX_NBYTES, dtype=np.uint8)
    live = []
    allocations = 0
    for _ in range(CYCLES):
        if len(live) >= live_max or (live and rng.random() < 0.5):
            live.pop(rng.randrange(len(live)))
            continue
        n = rng.randrange(1, MAX_NBYTES)
        upload = allocations % 4 == 0
        live.append(client.create_from_slice(data[:n]) if upload else client.empty(n))
        if allocations % 8 == 1 and len(live) > 1:
            elems = min(live[-2].nbytes, n) // 4
            count = RudaCount(max(-(-elems // 256), 1))
            copy_u32.launch(
                client, count, RudaDim(256), ArrayArg(live[-2], elems), ArrayArg(live[-1], elems)
            )
        allocations += 1
        peaks.note(client)
    client.sync().result()


def measure(device: str, threads: int) -> dict[str, float]:
    """One soak in this process (the child's side)."""
    client = ruda.client(device)
    warm = client.empty(4)
    copy_u32.launch(client, RudaCount(1), RudaDim(1), ArrayArg(warm, 1), ArrayArg(warm, 1))
    client.sync().result()  # compiled before the clock starts
    del warm
    peaks = Peaks()
    pool = [
        threading.Thread(target=churn, args=(client, seed, LIVE // threads, peaks))
        for seed in range(threads)
    ]
    start = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - start
    gc.collect()
    client.sync().result()
    client.memory_cleanup()
    return {
        "in_use": peaks.in_use,
        "reserved": peaks.reserved,
        "after_cleanup": client.memory_usage().bytes_reserved,
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # KiB on Linux
        "seconds": seconds,
    }


def report(device: str, threads: int) -> str:
    out = subprocess.run(
        [sys.executable, __file__, "--child", device, str(threads)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    m = json.loads(out.strip().splitlines()[-1])
    return (
        f"  {device:10s} {threads} thread{'s' if threads > 1 else ' '}  "
        f"peak in use {m['in_use'] / MIB:7.1f} MiB  peak reserved {m['reserved'] / MIB:7.1f} MiB "
        f"({m['reserved'] / max(m['in_use'], 1):.2f}x)  after cleanup "
        f"{m['after_cleanup'] / MIB:5.1f} MiB  peak RSS {m['rss'] / MIB:6.0f} MiB  "
        f"{m['seconds']:5.1f} s"
    )


def default_devices() -> list[str]:
    names = [str(d) for d in ruda.enumerate_all_devices()]
    return [n for n in names if n == "cpu" or n.startswith("opencl:")]


def main(devices: list[str]) -> None:
    names = devices or default_devices()
    print(
        f"memory churn, {CYCLES} cycles per thread of 1 B - {MAX_NBYTES // MIB} MiB, every 4th "
        f"allocation an upload, every 8th a launch, at most {LIVE} live handles in all"
    )
    for name in names:
        for threads in (1, 4):
            print(report(name, threads), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
    else:
        main(sys.argv[1:])
