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

Then three loads that used to grow the process without bound, per device, each in a fresh
child: kernel churn (``ROUNDS`` rounds of ``SPECIALISATIONS`` ``Comptime`` specialisations of a
small kernel, the kernel object dropped and collected after each; RSS after each round), NumPy-
argument launches beside ``ArrayArg`` launches (RSS after ``LAUNCHES`` launches and after the
sync), and a ``COPY_NBYTES`` ``to_client`` from ``cpu`` to each other device (peak RSS above the
source, the time the caller is blocked in ``to_client``, RSS after both handles are dropped and
both devices synced).

Run: ``python benchmarks/memory_churn.py [device ...]`` (default: ``cpu`` and every OpenCL
device).
"""

from __future__ import annotations

import gc
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time

import numpy as np

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, Kernel, f32, kernel, u32
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

CYCLES = 10_000
LIVE = 64
MAX_NBYTES = 4 << 20
MIB = 1 << 20
ROUNDS = 4
SPECIALISATIONS = 120
LAUNCHES = 200_000
COPY_NBYTES = 1 << 30


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


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def scale_kernel() -> Kernel:
    """A new kernel object each call: its specialisations are its own."""

    @kernel
    def scale(x: Array[f32], K: Comptime[int]):
        i = ABSOLUTE_POS
        if i < x.len():
            x[i] = x[i] * K

    return scale


def kernel_churn(device: str) -> dict[str, list[float]]:
    """RSS after each round of specialisations, the kernel dropped and collected."""
    client = ruda.client(device)
    x = client.empty(256 * 4)
    after = []
    for _ in range(ROUNDS):
        scale = scale_kernel()
        for k in range(SPECIALISATIONS):
            scale.launch(client, RudaCount(1), RudaDim(256), ArrayArg(x, 256), K=k)
        client.sync().result()
        del scale
        gc.collect()
        after.append(rss() / MIB)
    return {"rounds": after}


def launch_load(device: str) -> dict[str, float]:
    """RSS growth over LAUNCHES NumPy-argument launches and over as many ArrayArg launches."""
    client = ruda.client(device)
    host = np.ones(256, np.float32)
    x = client.create_from_slice(host)
    one, cube = RudaCount(1), RudaDim(256)
    facts = {}
    loads = [("numpy", (host,))] if device == "cpu" else []  # only cpu takes host arrays
    for name, args in [*loads, ("array_arg", (ArrayArg(x, 256),))]:
        copy_scale = scale_kernel()
        copy_scale.launch(client, one, cube, *args, K=1)
        client.sync().result()
        base = rss()
        start = time.perf_counter()
        for _ in range(LAUNCHES):
            copy_scale.launch(client, one, cube, *args, K=1)
        facts[f"{name}_after_launches"] = (rss() - base) / MIB
        client.sync().result()
        facts[f"{name}_seconds"] = time.perf_counter() - start
        gc.collect()
        facts[f"{name}_after_sync"] = (rss() - base) / MIB
    return facts


def large_copy(device: str) -> dict[str, float]:
    """A COPY_NBYTES to_client from cpu to ``device``, its peak RSS sampled every 0.5 ms."""
    source, dest = ruda.client("cpu"), ruda.client(device)
    handle = source.create_from_slice(np.ones(COPY_NBYTES, np.uint8))
    source.sync().result()
    gc.collect()
    base, peak, running = rss(), [0], True

    def watch() -> None:
        while running:
            peak[0] = max(peak[0], rss())
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    start = time.perf_counter()
    copy = source.to_client(handle, dest)
    blocked = time.perf_counter() - start
    dest.sync().result()
    seconds = time.perf_counter() - start
    running = False
    watcher.join()
    del copy, handle
    source.sync().result()
    dest.sync().result()
    source.memory_cleanup()
    dest.memory_cleanup()
    return {
        "peak": (peak[0] - base) / MIB,
        "blocked": blocked,
        "seconds": seconds,
        "after": (rss() - base) / MIB,
    }


def child(mode: str, device: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, mode, device], check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def load_reports(device: str) -> list[str]:
    rounds = child("--kernels", device)["rounds"]
    launches = child("--launches", device)
    lines = [
        f"  {device:10s} kernel churn, RSS after each round of {SPECIALISATIONS}: "
        + ", ".join(f"{r:.0f}" for r in rounds)
        + " MiB",
        f"  {device:10s} {LAUNCHES} launches, RSS growth after them / after the sync: "
        + ", ".join(
            f"{name} {launches[f'{name}_after_launches']:+.1f} / "
            f"{launches[f'{name}_after_sync']:+.1f} MiB ({launches[f'{name}_seconds']:.1f} s)"
            for name in ("numpy", "array_arg")
            if f"{name}_seconds" in launches
        ),
    ]
    if device != "cpu":
        c = child("--copy", device)
        lines.append(
            f"  cpu -> {device} to_client of {COPY_NBYTES // MIB} MiB: peak RSS "
            f"{c['peak']:+.0f} MiB above the source, caller blocked {c['blocked']:.2f} s of "
            f"{c['seconds']:.2f} s, after drop and sync {c['after']:+.0f} MiB"
        )
    return lines


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
    for name in names:
        for line in load_reports(name):
            print(line, flush=True)


if __name__ == "__main__":
    loads = {"--kernels": kernel_churn, "--launches": launch_load, "--copy": large_copy}
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
    elif sys.argv[1:2] and sys.argv[1] in loads:
        print(json.dumps(loads[sys.argv[1]](sys.argv[2])))
    else:
        main(sys.argv[1:])
