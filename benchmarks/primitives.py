"""The device-wide primitives of ``ruda_core.ops`` next to their peers, in one run.

For one device, at 2**20 elements (and 2**26 with ``--large``): ``sum``, ``min``, ``max`` and
``cumsum`` of f32, ``cumsum`` of i32, ``sort`` of f32, u32, u8 and f16 (the last two as keys
of 8 and 16 bits: one and two passes), ``argsort`` of f32, and ``bincount`` of i32 values
below 1000 and of u8. The peer is NumPy on the host for host devices (``cpu``,
``opencl:N`` on a CPU), and CuPy (``cupy.sum``, ``cupy.min``, ``cupy.max``, ``cupy.cumsum``,
``cupy.sort``, ``cupy.argsort``, ``cupy.bincount``) on ``cuda:N`` where CuPy imports.

Columns, per primitive, in ms per call:

* ``ruda wall``: the best of a few rounds of back-to-back calls between syncs (host time
  included: each call checks its operand, allocates its result and enqueues its launches);
* ``ruda dev``: the device time of one call, from the device's timestamps (``client.profile``,
  the least of seven), so no host gap counts;
* ``peer``: NumPy's wall time on the host, or CuPy's device time between two CUDA events around
  back-to-back calls (per call);
* ``peer wall`` (CuPy only): CuPy's wall time, measured as ruda's (its host work included);
* ``dev/peer`` and ``wall/wall``: ruda's time as a multiple of the peer's, device time against
  device time and wall time against wall time (NumPy's wall time for host devices).

The first call of each primitive tunes it (not counted); on CUDA a second of CuPy sums first
brings the GPU's clocks up. Every result is checked against NumPy.
Run: ``python benchmarks/primitives.py cpu`` (or ``opencl:0``, ``cuda:0 --large``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import timing

import ruda_core as ruda
from ruda_core import ops

ROUNDS = 3
REPS = 3
#: Profiles of one call per device time (the least counts): calls of 0.01-0.1 ms vary by more
#: than the rounds of wall time smooth out.
PROFILES = 7


def _cases(host: dict[str, np.ndarray]) -> list[tuple[str, str, Callable[..., Any], Any]]:
    """``(label, input, ruda op, NumPy op)`` per primitive."""
    return [
        ("sum f32", "f32", ops.sum, np.sum),
        ("min f32", "f32", ops.min, np.min),
        ("max f32", "f32", ops.max, np.max),
        ("cumsum f32", "f32", ops.cumsum, np.cumsum),
        ("cumsum i32", "i32", ops.cumsum, np.cumsum),
        ("sort f32", "f32", ops.sort, lambda x: np.sort(x, kind="stable")),
        ("sort u32", "u32", ops.sort, lambda x: np.sort(x, kind="stable")),
        ("sort u8", "u8", ops.sort, lambda x: np.sort(x, kind="stable")),
        ("sort f16", "f16", ops.sort, lambda x: np.sort(x, kind="stable")),
        ("argsort f32", "f32", ops.argsort, lambda x: np.argsort(x, kind="stable")),
        ("bincount i32", "bins", ops.bincount, np.bincount),
        ("bincount u8", "u8", ops.bincount, np.bincount),
    ]


def _inputs(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "f32": rng.standard_normal(n).astype(np.float32),
        "i32": rng.integers(-1000, 1000, n).astype(np.int32),
        "u32": rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
        "bins": rng.integers(0, 1000, n).astype(np.int32),
        "u8": rng.integers(0, 256, n).astype(np.uint8),
        "f16": rng.standard_normal(n).astype(np.float16),
    }


def _check(label: str, got: np.ndarray, expected: np.ndarray) -> None:
    if label.startswith(("sum", "cumsum f32")):
        scale = np.abs(expected).max() if expected.size else 1.0
        ok = np.allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)
    else:
        ok = np.array_equal(got, expected)
    if not ok:
        raise SystemExit(f"ruda {label} differs from NumPy's")


def _device_seconds(client: Any, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(PROFILES):
        _, duration = client.profile(run, "primitive")
        best = min(best, duration.execution_ns / 1e9)
    return best


def _cupy_seconds(cupy: Any, run: Callable[[], object]) -> float:
    run()
    cupy.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(ROUNDS):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(REPS):
            run()
        end.record()
        end.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, end) / 1e3 / REPS)
    return best


def _numpy_seconds(run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(REPS):
            run()
        best = min(best, (time.perf_counter() - start) / REPS)
    return best


def _peer(device: str) -> Any:
    """CuPy on a CUDA device where it imports, else None (NumPy on the host)."""
    if not device.startswith("cuda"):
        return None
    try:
        import cupy
    except ImportError:
        return None
    cupy.cuda.Device(int(device.split(":")[1])).use()
    return cupy


def _warm_up(cupy: Any) -> None:
    """A second of back-to-back sums on the GPU, so that the first tuning and measurement do
    not meet an idle GPU's lower clocks."""
    x = cupy.ones(1 << 26, cupy.float32)
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:
        for _ in range(20):
            x.sum()
        cupy.cuda.Device().synchronize()


def main(device: str, large: bool) -> None:
    client = ruda.client(device)
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    cupy = _peer(device)
    peer_name = "CuPy (device)" if cupy is not None else "NumPy (host)"
    print(f"{device}: {client.properties().name}; peer {peer_name}")
    if cupy is not None:
        _warm_up(cupy)
    for n in [1 << 20, *([1 << 26] if large else [])]:
        host = _inputs(n)
        print(f"  n = 2**{n.bit_length() - 1}")
        print(
            f"  {'':14} {'ruda wall':>10} {'ruda dev':>10} {'peer':>10} {'peer wall':>10} "
            f"{'dev/peer':>9} {'wall/wall':>9}"
        )
        for label, key, op, numpy_op in _cases(host):
            x = ruda.asarray(host[key], client)
            _check(label, op(x).numpy(), numpy_op(host[key]))  # tunes, then checks
            wall = timing.best_seconds(lambda: op(x), sync, ROUNDS, REPS)  # noqa: B023
            dev = _device_seconds(client, lambda: op(x))  # noqa: B023
            if cupy is not None:
                xc = cupy.asarray(host[key])
                peer_op = getattr(cupy, label.split()[0])
                peer = _cupy_seconds(cupy, lambda: peer_op(xc))  # noqa: B023
                peer_wall = timing.best_seconds(
                    lambda: peer_op(xc),  # noqa: B023
                    cupy.cuda.Device().synchronize,
                    ROUNDS,
                    REPS,
                )
            else:
                peer = peer_wall = _numpy_seconds(lambda: numpy_op(host[key]))  # noqa: B023
            print(
                f"  {label:14} {wall * 1e3:10.3f} {dev * 1e3:10.3f} {peer * 1e3:10.3f} "
                f"{peer_wall * 1e3:10.3f} {dev / peer:9.2f} {wall / peer_wall:9.2f}"
            )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(next((a for a in args if not a.startswith("--")), "cpu"), "--large" in args)
