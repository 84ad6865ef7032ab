# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The NumPy reference device on kernels a newcomer writes first, against NumPy itself.

Eight kernels in the kernel language and one operation, each launched on ``cpu`` (sanitizer
off) the way users launch them (``launch``, then ``sync``; the result is read back once, to
check it) and timed against the NumPy expression that computes the same result:

* ``hist-global``: a 256-bin histogram of 4 M u32 values, one global ``atomic_add`` per
  element (``np.bincount``);
* ``hist-shared``: the same over 8 M u8 values with per-cube bins in shared memory, shared
  atomics and a grid-stride loop, the bins added to the global ones at the end
  (``np.bincount``);
* ``block-scan``: an inclusive Hillis-Steele scan of each 256-element block of 8 M u32 in shared
  memory, a barrier before and after each step (``np.cumsum`` per block);
* ``transpose``: a 32x32 shared-memory tile transpose of a 1024x1024 f32 matrix
  (``x.T.copy()``);
* ``softmax``: a row softmax over 4096 rows of 1024 f32, one cube per row, shared-memory tree
  reductions for the maximum and the sum (NumPy's ``exp(x - max) / sum``);
* ``jacobi``: one Jacobi step of the 5-point stencil over the interior of a 2048x2048 f32 grid
  (NumPy slicing);
* ``bitonic``: a bitonic sort of each 1024-element block of 8 M u32 in shared memory
  (``np.sort`` per block);
* ``rare-branch``: 4 M f32 where 1% of the elements, flagged at random, take a branch of
  transcendental arithmetic and the others pass through (NumPy's update of the flagged
  elements alone);
* ``ops.sort``: beside it, the whole 8 M u32 sorted by ``ruda_core.ops.sort``, which the
  device runs natively (``np.sort``).

Results must equal NumPy's exactly (the softmax to a relative 1e-5: its sums are added in
another order). Each timing is the best of several runs; the ratio is the device's time
over NumPy's.

Run: ``python benchmarks/cpu_newcomer.py [NAME ...]`` (default: all).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import ruda_core
import ruda_cpu
from ruda_core import ops
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_DIM_X,
    RUDA_DIM_Y,
    RUDA_POS,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    atomic_add,
    exp,
    f32,
    kernel,
    log,
    max,
    min,
    sqrt,
    sync_units,
    u8,
    u32,
)
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim
from ruda_core.testing.runner import TIMEOUT_S, read_array

BINS = 256
SCAN_BLOCK = 256
TILE = 32
TILE_ROWS = 8  # a 32x8 cube moves a 32x32 tile, four rows per unit
SOFTMAX_BLOCK = 256
SORT_BLOCK = 1024


@kernel
def hist_global(x: Array[u32], hist: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        atomic_add(hist, x[i], u32(1))


@kernel
def hist_shared(x: Array[u8], hist: Array[u32], BINS: Comptime[int]):
    bins = SharedMemory(u32, BINS)
    b = UNIT_POS
    while b < u32(BINS):
        bins[b] = u32(0)
        b += RUDA_DIM
    sync_units()
    i = ABSOLUTE_POS
    stride = RUDA_DIM * RUDA_COUNT
    while i < x.len():
        atomic_add(bins, u32(x[i]), u32(1))
        i += stride
    sync_units()
    b = UNIT_POS
    while b < u32(BINS):
        atomic_add(hist, b, bins[b])
        b += RUDA_DIM


@kernel
def block_scan(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    i = ABSOLUTE_POS
    buf[UNIT_POS] = x[i]
    sync_units()
    d = u32(1)
    while d < u32(BLOCK):
        v = buf[UNIT_POS]
        if UNIT_POS >= d:
            v += buf[UNIT_POS - d]
        sync_units()
        buf[UNIT_POS] = v
        sync_units()
        d *= u32(2)
    out[i] = buf[UNIT_POS]


@kernel
def transpose(x: Array[f32], out: Array[f32], n: u32, TILE: Comptime[int], ROWS: Comptime[int]):
    tile = SharedMemory(f32, TILE * TILE)
    col = RUDA_POS_X * u32(TILE) + UNIT_POS_X
    row = RUDA_POS_Y * u32(TILE) + UNIT_POS_Y
    for r in range(0, TILE, ROWS):
        tile[(UNIT_POS_Y + u32(r)) * u32(TILE) + UNIT_POS_X] = x[(row + u32(r)) * n + col]
    sync_units()
    col = RUDA_POS_Y * u32(TILE) + UNIT_POS_X
    row = RUDA_POS_X * u32(TILE) + UNIT_POS_Y
    for r in range(0, TILE, ROWS):
        out[(row + u32(r)) * n + col] = tile[UNIT_POS_X * u32(TILE) + UNIT_POS_Y + u32(r)]


@kernel
def softmax(x: Array[f32], out: Array[f32], cols: u32, BLOCK: Comptime[int]):
    part = SharedMemory(f32, BLOCK)
    base = RUDA_POS * cols
    m = f32(-np.inf)
    c = UNIT_POS
    while c < cols:
        m = max(m, x[base + c])
        c += u32(BLOCK)
    part[UNIT_POS] = m
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if UNIT_POS < s:
            part[UNIT_POS] = max(part[UNIT_POS], part[UNIT_POS + s])
        sync_units()
        s //= 2
    m = part[0]
    sync_units()
    total = f32(0)
    c = UNIT_POS
    while c < cols:
        total += exp(x[base + c] - m)
        c += u32(BLOCK)
    part[UNIT_POS] = total
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if UNIT_POS < s:
            part[UNIT_POS] += part[UNIT_POS + s]
        sync_units()
        s //= 2
    total = part[0]
    c = UNIT_POS
    while c < cols:
        out[base + c] = exp(x[base + c] - m) / total
        c += u32(BLOCK)


@kernel
def jacobi(x: Array[f32], out: Array[f32], n: u32):
    col = RUDA_POS_X * RUDA_DIM_X + UNIT_POS_X
    row = RUDA_POS_Y * RUDA_DIM_Y + UNIT_POS_Y
    if row >= u32(1) and row < n - u32(1) and col >= u32(1) and col < n - u32(1):
        i = row * n + col
        out[i] = f32(0.25) * (x[i - n] + x[i + n] + x[i - u32(1)] + x[i + u32(1)])


@kernel
def bitonic(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    i = ABSOLUTE_POS
    buf[UNIT_POS] = x[i]
    sync_units()
    k = u32(2)
    while k <= u32(BLOCK):
        j = k // u32(2)
        while j > u32(0):
            partner = UNIT_POS ^ j
            a = buf[UNIT_POS]
            b = buf[partner]
            ascending = (UNIT_POS & k) == u32(0)
            keep_min = (UNIT_POS < partner) == ascending
            sync_units()
            buf[UNIT_POS] = min(a, b) if keep_min else max(a, b)
            sync_units()
            j //= u32(2)
        k *= u32(2)
    out[i] = buf[UNIT_POS]


@kernel
def rare_branch(x: Array[f32], flag: Array[u32], out: Array[f32]):
    i = ABSOLUTE_POS
    v = x[i]
    if flag[i] != u32(0):
        a = exp(v) + sqrt(v + f32(1))
        v = log(a + f32(2)) * a
    out[i] = v


def rare_numpy(x: np.ndarray, flag: np.ndarray) -> np.ndarray:
    """``rare_branch`` in NumPy: the flagged elements updated alone."""
    out = x.copy()
    taken = flag != 0
    v = x[taken]
    a = np.exp(v) + np.sqrt(v + np.float32(1))
    out[taken] = np.log(a + np.float32(2)) * a
    return out


@dataclass
class Case:
    """One benchmark: ``run`` launches the kernel and waits for it, ``result`` reads what it
    wrote; ``numpy`` computes the same with NumPy; ``check`` compares them."""

    name: str
    size: str
    run: Callable[[], None]
    result: Callable[[], np.ndarray]
    numpy: Callable[[], np.ndarray]
    check: Callable[[np.ndarray, np.ndarray], bool] = np.array_equal


def cases(client: ComputeClient) -> list[Case]:
    rng = np.random.default_rng(0)
    upload = client.create_from_slice

    def done() -> None:
        client.sync().result(timeout=TIMEOUT_S)

    def reader(handle: Handle, dtype: type, shape: tuple[int, ...]) -> Callable[[], np.ndarray]:
        return lambda: read_array(client, handle, dtype).reshape(shape)

    made: list[Case] = []

    n = 1 << 22
    hx = rng.integers(0, BINS, n, dtype=np.uint32)
    hx_h, hist_h = upload(hx), upload(np.zeros(BINS, np.uint32))

    def run_hist_global() -> None:
        client.write(hist_h, np.zeros(BINS, np.uint32))
        hist_global.launch(
            client, RudaCount(n // 256), RudaDim(256), ArrayArg(hx_h, n), ArrayArg(hist_h, BINS)
        )
        done()

    made.append(
        Case(
            "hist-global",
            "4 M u32",
            run_hist_global,
            reader(hist_h, np.uint32, (BINS,)),
            lambda: np.bincount(hx, minlength=BINS),
        )
    )

    bx = rng.integers(0, 256, 1 << 23, dtype=np.uint8)
    bx_h, bins_h = upload(bx), upload(np.zeros(BINS, np.uint32))

    def run_hist_shared() -> None:
        client.write(bins_h, np.zeros(BINS, np.uint32))
        hist_shared.launch(
            client,
            RudaCount(64),
            RudaDim(256),
            ArrayArg(bx_h, bx.size),
            ArrayArg(bins_h, BINS),
            BINS=BINS,
        )
        done()

    made.append(
        Case(
            "hist-shared",
            "8 M u8",
            run_hist_shared,
            reader(bins_h, np.uint32, (BINS,)),
            lambda: np.bincount(bx, minlength=BINS),
        )
    )

    sn = 1 << 23
    sx = rng.integers(0, 1000, sn, dtype=np.uint32)
    sx_h, sout_h = upload(sx), client.empty(sx.nbytes)

    def run_scan() -> None:
        block_scan.launch(
            client,
            RudaCount(sn // SCAN_BLOCK),
            RudaDim(SCAN_BLOCK),
            ArrayArg(sx_h, sn),
            ArrayArg(sout_h, sn),
            BLOCK=SCAN_BLOCK,
        )
        done()

    made.append(
        Case(
            "block-scan",
            "8 M u32, blocks of 256",
            run_scan,
            reader(sout_h, np.uint32, (sn,)),
            lambda: np.cumsum(sx.reshape(-1, SCAN_BLOCK), axis=1, dtype=np.uint32).ravel(),
        )
    )

    m = 1024
    tx = rng.random((m, m), dtype=np.float32)
    tx_h, tout_h = upload(tx.ravel()), client.empty(tx.nbytes)

    def run_transpose() -> None:
        transpose.launch(
            client,
            RudaCount(m // TILE, m // TILE),
            RudaDim(TILE, TILE_ROWS),
            ArrayArg(tx_h, m * m),
            ArrayArg(tout_h, m * m),
            m,
            TILE=TILE,
            ROWS=TILE_ROWS,
        )
        done()

    made.append(
        Case(
            "transpose",
            "1024x1024 f32",
            run_transpose,
            reader(tout_h, np.float32, (m, m)),
            lambda: tx.T.copy(),
        )
    )

    rows, cols = 4096, 1024
    fx = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    fx_h, fout_h = upload(fx.ravel()), client.empty(fx.nbytes)

    def run_softmax() -> None:
        softmax.launch(
            client,
            RudaCount(rows),
            RudaDim(SOFTMAX_BLOCK),
            ArrayArg(fx_h, fx.size),
            ArrayArg(fout_h, fx.size),
            cols,
            BLOCK=SOFTMAX_BLOCK,
        )
        done()

    def numpy_softmax() -> np.ndarray:
        e = np.exp(fx - fx.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    made.append(
        Case(
            "softmax",
            "4096 rows of 1024 f32",
            run_softmax,
            reader(fout_h, np.float32, (rows, cols)),
            numpy_softmax,
            lambda got, want: np.allclose(got, want, rtol=1e-5, atol=0),
        )
    )

    jn = 2048
    jx = rng.random((jn, jn), dtype=np.float32)
    jx_h, jout_h = upload(jx.ravel()), client.empty(jx.nbytes)

    def run_jacobi() -> None:
        jacobi.launch(
            client,
            RudaCount(jn // 16, jn // 16),
            RudaDim(16, 16),
            ArrayArg(jx_h, jx.size),
            ArrayArg(jout_h, jx.size),
            jn,
        )
        done()

    def numpy_jacobi() -> np.ndarray:
        return np.float32(0.25) * (jx[:-2, 1:-1] + jx[2:, 1:-1] + jx[1:-1, :-2] + jx[1:-1, 2:])

    read_jacobi = reader(jout_h, np.float32, (jn, jn))
    made.append(
        Case(
            "jacobi",
            "2048x2048 f32",
            run_jacobi,
            lambda: read_jacobi()[1:-1, 1:-1],
            numpy_jacobi,
        )
    )

    on = 1 << 23
    ox = rng.integers(0, 1 << 32, on, dtype=np.uint32)
    ox_h, oout_h = upload(ox), client.empty(ox.nbytes)

    def run_bitonic() -> None:
        bitonic.launch(
            client,
            RudaCount(on // SORT_BLOCK),
            RudaDim(SORT_BLOCK),
            ArrayArg(ox_h, on),
            ArrayArg(oout_h, on),
            BLOCK=SORT_BLOCK,
        )
        done()

    made.append(
        Case(
            "bitonic",
            "8 M u32, blocks of 1024",
            run_bitonic,
            reader(oout_h, np.uint32, (on,)),
            lambda: np.sort(ox.reshape(-1, SORT_BLOCK), axis=1).ravel(),
        )
    )

    rn = 1 << 22
    rx = rng.random(rn, dtype=np.float32)
    rflag = (rng.random(rn) < 0.01).astype(np.uint32)
    rx_h, rflag_h, rout_h = upload(rx), upload(rflag), client.empty(rx.nbytes)

    def run_rare() -> None:
        rare_branch.launch(
            client,
            RudaCount(rn // 256),
            RudaDim(256),
            ArrayArg(rx_h, rn),
            ArrayArg(rflag_h, rn),
            ArrayArg(rout_h, rn),
        )
        done()

    made.append(
        Case(
            "rare-branch",
            "4 M f32, 1% taken",
            run_rare,
            reader(rout_h, np.float32, (rn,)),
            lambda: rare_numpy(rx, rflag),
        )
    )

    ox_t = ruda_core.asarray(ox, client)
    sorted_t = []

    def run_sort() -> None:
        sorted_t[:] = [ops.sort(ox_t)]
        done()

    made.append(
        Case(
            "ops.sort",
            "8 M u32",
            run_sort,
            lambda: sorted_t[0].numpy(),
            lambda: np.sort(ox),
        )
    )
    return made


def best(fn: Callable[[], object], repeat: int) -> float:
    """``timing.fastest``, kept here: tests run this script's kernels by path, where
    ``benchmarks`` is not importable."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(names: list[str]) -> None:
    client = ruda_core.client("cpu")
    ruda_cpu.sanitize(False)
    print(f"{'kernel':<12} {'size':<24} {'cpu ms':>9} {'numpy ms':>9} {'ratio':>7}")
    for case in cases(client):
        if names and case.name not in names:
            continue
        case.run()  # compiles the kernel too
        got, want = case.result(), case.numpy()
        if not case.check(got, want):
            raise SystemExit(f"{case.name}: the device's result differs from NumPy's")
        t_numpy = best(case.numpy, 7)
        t_cpu = best(case.run, 3)
        print(
            f"{case.name:<12} {case.size:<24} {t_cpu * 1e3:9.1f} {t_numpy * 1e3:9.2f} "
            f"{t_cpu / t_numpy:6.1f}x"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
