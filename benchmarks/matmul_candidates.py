"""Each ``ruda_core.ops.matmul`` candidate on its own (no autotuner), in TFLOP/s on CUDA and
GFLOP/s elsewhere, beside ``torch.matmul`` where PyTorch is installed: which tile, pipeline and
instruction family wins, and by how much.

Every candidate's product is first compared with float64 on a sample of rows and columns (the
first 8, every 61st and the last, so every warpgroup's rows and every block's columns are in
it); a wrong one is reported and not timed. Times are the best of ``ROUNDS`` runs of ``REPS``
products between syncs. ``RUDA_BENCH_N`` sets the size (default 8192 on CUDA, 256
elsewhere), ``RUDA_BENCH_DTYPES`` the input types (default ``bfloat16,float16``) and
``RUDA_BENCH_ONLY`` a prefix of the candidates' names (``wgmma``, ``pipe``, ``cmma``, ``fma``).
Run: ``python benchmarks/matmul_candidates.py cuda:0``.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import timing
from matmul import torch_run

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.ops.matmul import _candidates
from ruda_core.tensor import RudaTensor

REPS = 5
ROUNDS = 3


def sample_error(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The largest error relative to ``|a| @ |b|`` over rows and columns 0..7 and every 61st."""
    n, m = a.shape[0], b.shape[1]
    rows = np.unique(np.r_[np.arange(min(8, n)), np.arange(0, n, 61), n - 1])
    cols = np.unique(np.r_[np.arange(min(8, m)), np.arange(0, m, 61), m - 1])
    a64, b64 = a[rows].astype(np.float64), b[:, cols].astype(np.float64)
    want, scale = a64 @ b64, np.abs(a64) @ np.abs(b64) + 1e-30
    return float(np.max(np.abs(got[np.ix_(rows, cols)] - want) / scale))


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda:0"
    client = ruda.client(device)
    cuda = device.startswith("cuda")
    n = int(os.environ.get("RUDA_BENCH_N", "8192" if cuda else "256"))
    names = os.environ.get("RUDA_BENCH_DTYPES", "bfloat16,float16").split(",")
    only = os.environ.get("RUDA_BENCH_ONLY", "")
    unit, label = (1e12, "TFLOP/s") if cuda else (1e9, "GFLOP/s")
    print(f"matmul candidates on {device} ({client.properties().name}) at {n}^3, {label}")
    flops = 2.0 * n**3
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    for name in names:
        dtype = Elem.BF16.numpy if name == "bfloat16" else np.dtype(name)
        rng = np.random.default_rng(0)
        a = rng.uniform(-1, 1, (n, n)).astype(np.float32).astype(dtype)
        b = rng.uniform(-1, 1, (n, n)).astype(np.float32).astype(dtype)
        ta, tb = RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b)
        peer = torch_run(device, a, b)
        if peer is not None:
            torch_s = timing.best_seconds(*peer, ROUNDS, REPS)
            print(f"{name:>9}  torch.matmul {flops / torch_s / unit:8.2f}")
        for tunable in _candidates(client, Elem.from_dtype(dtype), False).tunables:
            if not tunable.name.startswith(only):
                continue
            err = sample_error(tunable.fn(client, ta, tb).to_numpy(client), a, b)
            if err > 1e-3:
                print(f"{name:>9}  {tunable.name:<32} WRONG: relative error {err:.2e}")
                continue
            run = functools.partial(tunable.fn, client, ta, tb)
            seconds = timing.best_seconds(run, sync, ROUNDS, REPS)
            print(f"{name:>9}  {tunable.name:<32} {flops / seconds / unit:8.2f}")


if __name__ == "__main__":
    main()
