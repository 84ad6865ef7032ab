"""Scalar accesses against lines: copy and saxpy with one element per unit, then one line per unit.

For any device (``cpu``, ``cuda:0``, ``opencl:N``), over N elements (``RUDA_BENCH_N``; default
64 M, 4 M on ``cpu``):

* f32: ``y = x`` and ``y = a * x + y``, scalar and with lines of 4 (``x.load_line(i, 4)``);
* f16 (where the device has it): the same, scalar and with lines of 8 (16 bytes per access);

each in GB/s moved (copy: read + write; saxpy: two reads and a write) and the line kernel's
bandwidth as a multiple of the scalar one's. Every kernel's result is checked against NumPy.
Times are the best of several runs of ``REPS`` back-to-back launches between syncs.
Run: ``python benchmarks/line_copy.py opencl:0``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np
import timing

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Comptime, Float, kernel
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim

REPS = 10
ROUNDS = 5
BLOCK = 256


@kernel
def copy(x: Array[Float], y: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        y[i] = x[i]


@kernel
def copy_lines(x: Array[Float], y: Array[Float], N: Comptime[int]):
    i = ABSOLUTE_POS
    if i < x.len() // N:
        y.store_line(i, x.load_line(i, N))


@kernel
def saxpy(x: Array[Float], y: Array[Float], a: Float):
    i = ABSOLUTE_POS
    if i < x.len():
        y[i] = a * x[i] + y[i]


@kernel
def saxpy_lines(x: Array[Float], y: Array[Float], a: Float, N: Comptime[int]):
    i = ABSOLUTE_POS
    if i < x.len() // N:
        y.store_line(i, a * x.load_line(i, N) + y.load_line(i, N))


def best_seconds(run: Callable[[], object], sync: Callable[[], None]) -> float:
    return timing.best_seconds(run, sync, ROUNDS, REPS)


def measure(client: ComputeClient, dtype: type[np.generic], width: int, n: int) -> None:
    """Print the four kernels for ``dtype`` (scalar, then lines of ``width``)."""
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    rng = np.random.default_rng(0)
    host_x = rng.random(n, dtype=np.float32).astype(dtype)
    host_y = rng.random(n, dtype=np.float32).astype(dtype)
    alpha = dtype(0.5)
    x, y = client.create_from_slice(host_x), client.create_from_slice(host_y)
    args = (ArrayArg(x, n, elem=dtype), ArrayArg(y, n, elem=dtype))
    cubes, line_cubes = -(-n // BLOCK), -(-(n // width) // BLOCK)
    nbytes = n * np.dtype(dtype).itemsize / 1e9
    name = np.dtype(dtype).name
    runs: dict[str, tuple[Callable[[], None], float, np.ndarray]] = {
        "copy, scalar": (
            lambda: copy.launch(client, RudaCount(cubes), RudaDim(BLOCK), *args),
            2 * nbytes,
            host_x,
        ),
        f"copy, lines of {width}": (
            lambda: copy_lines.launch(
                client, RudaCount(line_cubes), RudaDim(BLOCK), *args, N=width
            ),
            2 * nbytes,
            host_x,
        ),
        "saxpy, scalar": (
            lambda: saxpy.launch(client, RudaCount(cubes), RudaDim(BLOCK), *args, alpha),
            3 * nbytes,
            alpha * host_x + host_y,
        ),
        f"saxpy, lines of {width}": (
            lambda: saxpy_lines.launch(
                client, RudaCount(line_cubes), RudaDim(BLOCK), *args, alpha, N=width
            ),
            3 * nbytes,
            alpha * host_x + host_y,
        ),
    }
    gbs: dict[str, float] = {}
    for label, (run, moved, expected) in runs.items():
        client.write(y, host_y)
        run()
        if not np.array_equal(np.frombuffer(client.read_one(y), dtype=dtype), expected):
            raise SystemExit(f"{name} {label} returned a wrong result")
        client.write(y, host_y)  # saxpy accumulates into y; its bandwidth does not care
        gbs[label] = moved / best_seconds(run, sync)
        kind = label.split(",")[0]
        ratio = gbs[label] / gbs[f"{kind}, scalar"]
        print(f"  {name:8s} {label:22s} {gbs[label]:8.2f} GB/s  {ratio:5.2f}x scalar")


def main(device: str) -> None:
    client = ruda.client(device)
    default = 4 * 1024 * 1024 if client.name() == "cpu" else 64 * 1024 * 1024
    n = int(os.environ.get("RUDA_BENCH_N", default))
    print(f"{device}: {client.properties().name}, N = {n}")
    measure(client, np.float32, 4, n)
    if client.features().supports(Elem.F16):
        measure(client, np.float16, 8, n)
    else:
        print(f"  {device} has no f16: the f16 lines are not measured")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
