"""Two GPUs of one host: copies between them, and one elementwise kernel spread over both.

In one run, on ``cuda:0`` and ``cuda:1``:

* ``to_client`` of a 256 MiB handle (``RUDA_BENCH_NBYTES`` overrides) from GPU 0 to GPU 1 and
  back, in GB/s, next to PyTorch's ``tensor.to("cuda:1")`` (and back) of the same bytes, when
  PyTorch is installed; whether the pair has peer access (``cudaDeviceCanAccessPeer``) is
  printed, since without it ``to_client`` goes through host memory;
* ``out = a * x + y`` over N = 256 M f32 (``RUDA_BENCH_N``): on GPU 0 alone, then half on each
  GPU, launched from one thread (both GPUs' launches interleaved) and from one thread per GPU;
  the speed-up is GPU 0's time over the two GPUs' time.

Times are the best of ``ROUNDS`` runs of ``REPS`` back-to-back operations between syncs.
Exits with a message, doing nothing, on a machine with fewer than 2 CUDA devices.
Run: ``python benchmarks/multi_gpu.py``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import timing

import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, f32, kernel
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim

NBYTES = int(os.environ.get("RUDA_BENCH_NBYTES", 256 << 20))
N = int(os.environ.get("RUDA_BENCH_N", 256 << 20))
REPS = 10
ROUNDS = 5
BLOCK = 256


@kernel
def saxpy(a: f32, x: Array[f32], y: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = a * x[i] + y[i]


def best_seconds(run: Callable[[], object], sync: Callable[[], None]) -> float:
    return timing.best_seconds(run, sync, ROUNDS, REPS)


def cuda_clients() -> list[ComputeClient]:
    """The clients of every CUDA device; exits when there are fewer than 2."""
    names = [str(d) for d in ruda.enumerate_all_devices() if str(d).startswith("cuda:")]
    if len(names) < 2:
        sys.exit(
            f"multi_gpu.py needs 2 CUDA devices; this machine has {len(names)} "
            f"(ruda devices: {', '.join(str(d) for d in ruda.enumerate_all_devices())})"
        )
    return [ruda.client(name) for name in names[:2]]


def sync_all(*clients: ComputeClient) -> None:
    for c in clients:
        c.sync().result()


def copies(g0: ComputeClient, g1: ComputeClient) -> None:
    from cupy.cuda import runtime

    peer = bool(runtime.deviceCanAccessPeer(0, 1)) and bool(runtime.deviceCanAccessPeer(1, 0))
    route = "direct (peer access)" if peer else "through host memory (no peer access)"
    print(f"copies of {NBYTES / 2**20:.0f} MiB, to_client {route}:")
    data = np.random.default_rng(0).integers(0, 256, NBYTES, dtype=np.uint8)
    ends = {"cuda:0 -> cuda:1": (g0, g1), "cuda:1 -> cuda:0": (g1, g0)}
    for label, (src, dst) in ends.items():
        handle = src.create_from_slice(data)
        if not np.array_equal(
            np.frombuffer(dst.read_one(src.to_client(handle, dst)), np.uint8), data
        ):
            raise SystemExit(f"to_client {label} copied wrong bytes")
        seconds = best_seconds(
            lambda s=src, h=handle, d=dst: s.to_client(h, d), lambda: sync_all(g0, g1)
        )
        print(f"  ruda to_client {label}       {NBYTES / seconds / 1e9:8.1f} GB/s")
    try:
        import torch
    except ImportError:
        print("  torch is not installed: no tensor.to() comparison")
        return
    for label, (src_name, dst_name) in {
        "cuda:0 -> cuda:1": ("cuda:0", "cuda:1"),
        "cuda:1 -> cuda:0": ("cuda:1", "cuda:0"),
    }.items():
        t = torch.from_numpy(data).to(src_name)
        if not torch.equal(t.to(dst_name).cpu(), torch.from_numpy(data)):
            raise SystemExit(f"torch .to() {label} copied wrong bytes")

        def sync_torch() -> None:
            torch.cuda.synchronize("cuda:0")
            torch.cuda.synchronize("cuda:1")

        seconds = best_seconds(lambda t=t, d=dst_name: t.to(d), sync_torch)
        print(f"  torch tensor.to() {label}    {NBYTES / seconds / 1e9:8.1f} GB/s")


def data_parallel(g0: ComputeClient, g1: ComputeClient) -> None:
    rng = np.random.default_rng(1)
    hx, hy = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    half = N // 2
    parts = [(hx[:half], hy[:half]), (hx[half:], hy[half:])]

    def buffers(client: ComputeClient, x: np.ndarray, y: np.ndarray) -> tuple[Handle, ...]:
        return client.create_from_slice(x), client.create_from_slice(y), client.empty(x.nbytes)

    def launcher(client: ComputeClient, bufs: tuple[Handle, ...], n: int) -> Callable[[], None]:
        args = [ArrayArg(b, n) for b in bufs]
        count = RudaCount((n + BLOCK - 1) // BLOCK)
        return lambda: saxpy.launch(client, count, RudaDim(BLOCK), 2.0, *args)

    whole = buffers(g0, hx, hy)
    alone = best_seconds(launcher(g0, whole, N), lambda: sync_all(g0))
    want = 2.0 * hx + hy
    if not np.array_equal(np.frombuffer(g0.read_one(whole[2]), np.float32), want):
        raise SystemExit("saxpy on cuda:0 returned a wrong result")
    del whole
    split = [buffers(c, x, y) for c, (x, y) in zip((g0, g1), parts, strict=True)]
    runs = [launcher(c, b, half) for c, b in zip((g0, g1), split, strict=True)]

    def both() -> None:
        runs[0]()
        runs[1]()

    one_thread = best_seconds(both, lambda: sync_all(g0, g1))
    got = np.concatenate(
        [np.frombuffer(c.read_one(b[2]), np.float32) for c, b in zip((g0, g1), split, strict=True)]
    )
    if not np.array_equal(got, want):
        raise SystemExit("saxpy over both GPUs returned a wrong result")
    per_thread = threads_seconds([(c, run) for c, run in zip((g0, g1), runs, strict=True)])
    print(f"saxpy over {N} f32 ({3 * 4 * N / 2**30:.1f} GiB moved per run):")
    rows = {
        "cuda:0 alone": alone,
        "both GPUs, launched from one thread": one_thread,
        "both GPUs, one thread per GPU": per_thread,
    }
    for label, seconds in rows.items():
        print(f"  {label:36s} {seconds * 1e3:8.3f} ms  {alone / seconds:5.2f}x")


def threads_seconds(work: list[tuple[ComputeClient, Callable[[], None]]]) -> float:
    """Seconds per round when each (client, launch) runs ``REPS`` launches and a sync on a
    thread of its own, all started together: the best of ``ROUNDS``."""
    best = float("inf")
    for round_ in range(ROUNDS + 1):  # the first round warms each thread's stream up
        start_line = threading.Barrier(len(work) + 1)
        done: list[float] = []
        threads = [
            threading.Thread(target=_launch_reps, args=(client, run, start_line, done))
            for client, run in work
        ]
        for t in threads:
            t.start()
        start_line.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        if round_:
            best = min(best, (max(done) - start) / REPS)
    return best


def _launch_reps(
    client: ComputeClient, run: Callable[[], None], start_line: threading.Barrier, done: list[float]
) -> None:
    """One thread's round: wait for the others, ``REPS`` launches, a sync, the finish time."""
    start_line.wait()
    for _ in range(REPS):
        run()
    client.sync().result()
    done.append(time.perf_counter())


def main() -> None:
    g0, g1 = cuda_clients()
    print(f"cuda:0 {g0.properties().name}, cuda:1 {g1.properties().name}")
    copies(g0, g1)
    data_parallel(g0, g1)


if __name__ == "__main__":
    main()
