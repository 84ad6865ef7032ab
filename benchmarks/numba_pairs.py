"""The same SIMT kernels written the same way in ruda and in Numba-CUDA, timed in one process on
one CUDA device: device time per launch of each, and the ratio ruda / Numba.

* ``transpose``: an 8192² f32 transpose through a 32x33 shared tile, cubes of 32x8 units;
* ``jacobi``: one 5-point Jacobi step over an 8192² f32 grid (borders copied), cubes of 32x8;
* ``histogram``: 256 bins of 256 MB of ``u8`` data, per-cube bins in shared memory with shared
  atomics, a grid-stride loop, then one global atomic per bin and cube.

Both sides index flat arrays with the same arithmetic; ruda's launches are the checked ones
(bounds checked as the contract says), Numba's have no bounds checks. Every result is compared
with NumPy's before anything is timed. Device time is measured between two CUDA events with the
launches queued behind a sleeping kernel (:func:`timing.queued_seconds`), on each side's own
stream. Needs torch (for the events), numba-cuda and a NumPy it supports (2.4 or older in 2026).

Run: ``python benchmarks/numba_pairs.py [cuda:N]``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import numpy as np
import torch
from numba import cuda
from numba import float32 as nb_f32
from numba import uint32 as nb_u32
from timing import queued_seconds

import ruda_core as ruda
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    SharedMemory,
    atomic_add,
    f32,
    kernel,
    sync_units,
    u8,
    u32,
)

N = 8192
TILE, ROWS = 32, 8
#: a tile's elements, one column of padding against bank conflicts
CELLS = TILE * (TILE + 1)
HIST_BYTES = 256 << 20
#: cubes of the histogram: 8 per SM of an H200, and 64 per SM (fewer rounds of the loop each)
HIST_CUBES = (132 * 8, 132 * 64)


@kernel
def transpose_ruda(a: Array[f32], out: Array[f32], n: u32):
    tile = SharedMemory(f32, CELLS)
    x = RUDA_POS_X * TILE + UNIT_POS_X
    y = RUDA_POS_Y * TILE + UNIT_POS_Y
    for j in range(0, TILE, ROWS):
        tile[(UNIT_POS_Y + j) * (TILE + 1) + UNIT_POS_X] = a[(y + j) * n + x]
    sync_units()
    x = RUDA_POS_Y * TILE + UNIT_POS_X
    y = RUDA_POS_X * TILE + UNIT_POS_Y
    for j in range(0, TILE, ROWS):
        out[(y + j) * n + x] = tile[UNIT_POS_X * (TILE + 1) + UNIT_POS_Y + j]


@cuda.jit
def transpose_numba(a, out, n):
    tile = cuda.shared.array(CELLS, nb_f32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        tile[(ty + j) * (TILE + 1) + tx] = a[(y + j) * n + x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        out[(y + j) * n + x] = tile[tx * (TILE + 1) + ty + j]


@kernel
def jacobi_ruda(a: Array[f32], out: Array[f32], n: u32):
    x = RUDA_POS_X * TILE + UNIT_POS_X
    y = RUDA_POS_Y * ROWS + UNIT_POS_Y
    i = y * n + x
    if x == 0 or y == 0 or x == n - 1 or y == n - 1:
        out[i] = a[i]
    else:
        out[i] = f32(0.25) * (a[i - 1] + a[i + 1] + a[i - n] + a[i + n])


@cuda.jit
def jacobi_numba(a, out, n):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * ROWS + cuda.threadIdx.y
    i = y * n + x
    if x == 0 or y == 0 or x == n - 1 or y == n - 1:
        out[i] = a[i]
    else:
        out[i] = nb_f32(0.25) * (a[i - 1] + a[i + 1] + a[i - n] + a[i + n])


@kernel
def histogram_ruda(data: Array[u8], bins: Array[u32]):
    local = SharedMemory(u32, 256)
    local[UNIT_POS] = u32(0)
    sync_units()
    i = ABSOLUTE_POS
    stride = RUDA_COUNT * RUDA_DIM
    while i < data.len():
        atomic_add(local, u32(data[i]), u32(1))
        i += stride
    sync_units()
    atomic_add(bins, UNIT_POS, local[UNIT_POS])


@cuda.jit
def histogram_numba(data, bins):
    local = cuda.shared.array(256, nb_u32)
    t = cuda.threadIdx.x
    local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < data.size:
        cuda.atomic.add(local, data[i], 1)
        i += stride
    cuda.syncthreads()
    cuda.atomic.add(bins, t, local[t])


def jacobi_numpy(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    out[1:-1, 1:-1] = np.float32(0.25) * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
    return out


#: per kernel: ruda's launch, ruda's unchecked launch, Numba's launch, and a check of the
#: results after one launch of each
Pair = tuple[Callable[[], object], Callable[[], object], Callable[[], object], Callable[[], None]]


def pairs(device: str) -> tuple[ruda.runtime.ComputeClient, object, dict[str, Pair]]:
    """ruda's client, Numba's stream and the pairs, over the same data on both sides."""
    client = ruda.client(device)
    cuda.select_device(int(device.split(":")[1]))
    rng = np.random.default_rng(0)
    grid = rng.random((N, N), dtype=np.float32)
    data = rng.integers(0, 256, HIST_BYTES, dtype=np.uint8)
    stream = cuda.stream()
    a_r = ruda.asarray(grid.ravel(), client)
    out_r = ruda.asarray(np.zeros(N * N, np.float32), client)
    d_r = ruda.asarray(data, client)
    a_n, out_n = cuda.to_device(grid.ravel(), stream=stream), cuda.device_array(N * N, np.float32)
    d_n = cuda.to_device(data, stream=stream)
    n = np.uint32(N)
    tiles, rows, dim = (N // TILE, N // TILE), (N // TILE, N // ROWS), (TILE, ROWS)

    def same(expected: np.ndarray, r: object, m: object, runs: int = 1) -> Callable[[], None]:
        """A check of ruda's result (``runs`` times ``expected``: a histogram adds up, the
        checked and the unchecked launch each once) and Numba's."""

        def check() -> None:
            stream.synchronize()
            np.testing.assert_array_equal(r.numpy(), runs * expected)  # type: ignore[attr-defined]
            np.testing.assert_array_equal(m.copy_to_host(), expected)  # type: ignore[attr-defined]

        return check

    found: dict[str, Pair] = {
        "transpose 8192² f32": (
            lambda: transpose_ruda.launch(client, tiles, dim, a_r, out_r, n),
            lambda: transpose_ruda.launch_unchecked(client, tiles, dim, a_r, out_r, n),
            lambda: transpose_numba[tiles, dim, stream](a_n, out_n, n),
            same(grid.T.ravel(), out_r, out_n),
        ),
        "jacobi step 8192² f32": (
            lambda: jacobi_ruda.launch(client, rows, dim, a_r, out_r, n),
            lambda: jacobi_ruda.launch_unchecked(client, rows, dim, a_r, out_r, n),
            lambda: jacobi_numba[rows, dim, stream](a_n, out_n, n),
            same(jacobi_numpy(grid).ravel(), out_r, out_n),
        ),
    }
    bins = np.bincount(data, minlength=256).astype(np.uint32)
    for cubes in HIST_CUBES:  # bins of their own: each check sees one launch of each side
        bins_r = ruda.asarray(np.zeros(256, np.uint32), client)
        bins_n = cuda.to_device(np.zeros(256, np.uint32))
        found[f"histogram 256 MB u8 x{cubes}"] = (
            functools.partial(histogram_ruda.launch, client, cubes, 256, d_r, bins_r),
            functools.partial(histogram_ruda.launch_unchecked, client, cubes, 256, d_r, bins_r),
            functools.partial(histogram_numba[cubes, 256, stream], d_n, bins_n),
            same(bins, bins_r, bins_n, runs=2),
        )
    return client, stream, found


def main(device: str) -> None:
    client, stream, found = pairs(device)
    handle = client.server.sharing.stream_handle(client.execution_stream().value)
    ruda_stream = torch.cuda.ExternalStream(handle)
    raw = stream.handle  # type: ignore[attr-defined]  # a ctypes pointer or a CUstream by version
    numba_stream = torch.cuda.ExternalStream(int(getattr(raw, "value", None) or int(raw)))
    print(f"{device}: device us per launch, best of 5 rounds of 20 queued launches")
    print(f"{'kernel':28s} {'ruda':>9s} {'unchecked':>9s} {'Numba':>9s} {'ruda / Numba':>12s}")
    for label, (run_ruda, run_unchecked, run_numba, check) in found.items():
        run_ruda()
        run_unchecked()
        run_numba()
        check()
        r = queued_seconds(torch, ruda_stream, run_ruda) * 1e6
        u = queued_seconds(torch, ruda_stream, run_unchecked) * 1e6
        m = queued_seconds(torch, numba_stream, run_numba) * 1e6
        print(f"{label:28s} {r:9.1f} {u:9.1f} {m:9.1f} {r / m:11.2f}x", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
