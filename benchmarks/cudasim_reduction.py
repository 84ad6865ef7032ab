"""A shared-memory block reduction on the NumPy device next to Numba's CUDA simulator.

The same kernel (256-unit cubes, a tree reduction with a barrier per level, as in DESIGN.md)
written for ruda and for ``numba.cuda`` run under ``NUMBA_ENABLE_CUDASIM=1``, in one process.
The simulator runs a thread per unit, so it gets fewer cubes; both are reported in units per
second and the ratio is ruda / simulator.

Needs numba-cuda: ``pip install -e ".[bench]"``. Run: ``python benchmarks/cudasim_reduction.py``.
"""

from __future__ import annotations

import os
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba.cuda is imported

import numpy as np
from numba import cuda, float32

import ruda_core as ruda
from ruda_core.lang import (
    ArrayArg,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.samples import block_sum

BLOCK = 256
RUDA_CUBES = 16_384  # 4 M units
SIM_CUBES = 4  # 1024 units: the simulator starts a thread per unit


@cuda.jit
def block_sum_numba(x, out):
    smem = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    smem[tid] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            smem[tid] += smem[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = smem[0]


def ruda_units_per_second(x: np.ndarray) -> float:
    client = ruda.client("cpu")
    n = x.size
    xh, out = client.create_from_slice(x), client.empty(4 * RUDA_CUBES)
    args = (ArrayArg(xh, n), ArrayArg(out, RUDA_CUBES))

    def run() -> None:
        block_sum.launch(client, RudaCount(RUDA_CUBES), RudaDim(BLOCK), *args, BLOCK=BLOCK)

    run()
    client.sync().result()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        run()
        client.sync().result()
        best = min(best, time.perf_counter() - start)
    got = np.frombuffer(client.read_one(out), dtype=np.float32)
    want = x.reshape(RUDA_CUBES, BLOCK).sum(axis=1, dtype=np.float64)
    if not np.allclose(got, want, rtol=1e-5):
        raise SystemExit("ruda block_sum disagrees with NumPy")
    return n / best


def simulator_units_per_second(x: np.ndarray) -> float:
    xs = x[: SIM_CUBES * BLOCK]
    out = np.zeros(SIM_CUBES, dtype=np.float32)
    start = time.perf_counter()
    block_sum_numba[SIM_CUBES, BLOCK](xs, out)
    elapsed = time.perf_counter() - start
    want = xs.reshape(SIM_CUBES, BLOCK).sum(axis=1, dtype=np.float64)
    if not np.allclose(out, want, rtol=1e-5):
        raise SystemExit("the simulator's block_sum disagrees with NumPy")
    return xs.size / elapsed


def main() -> None:
    x = np.random.default_rng(0).random(RUDA_CUBES * BLOCK, dtype=np.float32)
    ours = ruda_units_per_second(x)
    theirs = simulator_units_per_second(x)
    print(f"block reduction, {BLOCK}-unit cubes with a barrier per tree level")
    print(f"  ruda NumPy device     {ours:14,.0f} units/s  ({RUDA_CUBES} cubes)")
    print(f"  Numba CUDA simulator  {theirs:14,.0f} units/s  ({SIM_CUBES} cubes)")
    print(f"  ratio                 {ours / theirs:14,.0f}x")


if __name__ == "__main__":
    main()
