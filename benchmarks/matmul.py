"""``ruda_core.ops.matmul`` against ``torch.matmul`` (cuBLAS on CUDA, its CPU kernels otherwise)
in one run, in TFLOP/s on CUDA and GFLOP/s elsewhere (2*m*n*k per product).

On a CUDA device (default ``cuda:0`` when CuPy is installed): bf16 and f16 at 8192^3 (tensor
cores through ``cmma`` for ruda) and f32 with TF32 off for both sides (ruda's FMA kernel against
cuBLAS's f32 path); ``RUDA_BENCH_N`` changes the size. On ``cpu`` (the NumPy reference device)
and OpenCL devices: f16 and f32 at 64^3, 128^3 and 256^3 (``RUDA_BENCH_SIZES=64,128``). The first
call tunes ruda's candidates (not timed); every result is checked against float64 NumPy before
it is timed. Times are the best of ``ROUNDS`` runs of ``REPS`` back-to-back products between
syncs, with more than ``REPS`` where a round would last under 0.2 s (the GPU's clock rises
over the first milliseconds of work after the tuning has left it idle). Each row also says how
long the first call took (tuning and building included, with an empty tuning cache) and which
candidate the tuner chose. Needs PyTorch for the comparison column (``-`` without it).
Run: ``python benchmarks/matmul.py cuda:0`` or ``python benchmarks/matmul.py cpu``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import timing

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.ops import matmul
from ruda_core.ops.matmul import _TUNER, _candidates
from ruda_core.tensor import RudaTensor

REPS = 5
ROUNDS = 3
MIN_ROUND_S = 0.2  # rounds of at least this long (more than REPS products at small sizes)


def best_seconds(run: Callable[[], object], sync: Callable[[], None]) -> float:
    return timing.best_seconds(run, sync, ROUNDS, REPS, MIN_ROUND_S)


def check(got: np.ndarray, a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Rows 0..7 of the product against float64 (the whole product would take minutes)."""
    a64, b64 = a[:8].astype(np.float64), b.astype(np.float64)
    want, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    err = float(np.max(np.abs(got[:8] - want) / scale))
    if err > 1e-3:
        raise SystemExit(f"{what}: relative error {err:.2e} against float64")


def torch_run(
    device: str, a: np.ndarray, b: np.ndarray
) -> tuple[Callable[[], object], Callable[[], None]] | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32 on both sides
    target = "cuda" if device.startswith("cuda") else "cpu"
    if target == "cpu" and a.dtype.name == "bfloat16":
        return None
    ta = (
        torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
        if a.dtype.name == "bfloat16"
        else torch.from_numpy(a)
    )
    tb = (
        torch.from_numpy(b.view(np.uint16)).view(torch.bfloat16)
        if b.dtype.name == "bfloat16"
        else torch.from_numpy(b)
    )
    ta, tb = ta.to(target), tb.to(target)
    sync = torch.cuda.synchronize if target == "cuda" else (lambda: None)
    return (lambda: torch.matmul(ta, tb)), sync


def measure(client, device: str, dtype: np.dtype, n: int, unit: float) -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32).astype(dtype)
    ta, tb = RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b)
    start = time.perf_counter()
    first = matmul(client, ta, tb)
    client.sync().result()
    tuned = time.perf_counter() - start
    check(first.to_numpy(client), a, b, f"ruda {dtype.name} {n}")
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    flops = 2.0 * n**3
    ruda_s = best_seconds(lambda: matmul(client, ta, tb), sync)
    peer = torch_run(device, a, b)
    torch_col = "-"
    if peer is not None:
        torch_s = best_seconds(*peer)
        torch_col = f"{flops / torch_s / unit:8.2f}"
    winner = _TUNER.tune(client, _candidates(client, Elem.from_dtype(dtype), False), ta, tb).winner
    print(
        f"{dtype.name:>9} {n:>6}^3  ruda {flops / ruda_s / unit:8.2f}  torch {torch_col}"
        f"  (first call, tuning included: {tuned:.1f} s; winner {winner})"
    )


def main() -> None:
    cuda = importlib.util.find_spec("cupy") is not None
    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda:0" if cuda else "cpu")
    client = ruda.client(device)
    unit, name = (1e12, "TFLOP/s") if device.startswith("cuda") else (1e9, "GFLOP/s")
    print(f"matmul on {device} ({client.properties().name}), {name}, best of {ROUNDS}x{REPS}")
    if device.startswith("cuda"):
        sizes = [int(os.environ.get("RUDA_BENCH_N", "8192"))]
        dtypes = [Elem.BF16.numpy, np.dtype(np.float16), np.dtype(np.float32)]
    else:
        sizes = [int(s) for s in os.environ.get("RUDA_BENCH_SIZES", "64,128,256").split(",")]
        dtypes = [np.dtype(np.float16), np.dtype(np.float32)]
    for dtype in dtypes:
        if not client.features().supports(Elem.from_dtype(dtype)):
            print(f"{dtype.name:>9}: not supported on {device}")
            continue
        for n in sizes:
            measure(client, device, dtype, n, unit)


if __name__ == "__main__":
    main()
