"""LayerNorm forward and backward: ruda native, ruda portable, PyTorch eager and torch.compile,
next to the device's copy bandwidth measured in the same run.

For one device (default ``cuda:0``; ``cpu`` runs small shapes), per shape and element type:

* ``native``: ``ruda_core.ops.layer_norm`` / ``layer_norm_backward``, which take the runtime's
  native kernels where it has them (on CUDA, ``ruda_cuda/ops/layer_norm.cu``);
* ``portable``: ``portable_layer_norm`` / ``portable_layer_norm_backward``, ruda's kernels
  written in the kernel language, on every device;
* ``torch``: ``aten.native_layer_norm`` / ``native_layer_norm_backward`` (the same results:
  output, mean and rstd; the three gradients), eager, and through ``torch.compile`` (on CUDA
  only), on the same device; skipped when torch is absent or lacks the device.

Each column gives the wall µs per call (the best of several runs of ``REPS`` back-to-back calls
between syncs, so host time where the host is slower than the device) and, on CUDA with torch,
the device µs per call: ``REPS`` calls enqueued behind a sleeping kernel between two CUDA
events on the stream the column runs on (:func:`timing.queued_seconds`), so that no host gap
is counted, for ruda and torch alike. Then the GB/s that call must move at least (inputs read
once, outputs written once) and that as a share of a device-to-device copy's GB/s (read +
write) measured in the same run, both from the device µs, and the ratios of the device µs to
torch's. ``host`` is the host time to enqueue one ruda call.
Run: ``python benchmarks/layer_norm.py cuda:0`` (or ``cpu``).

``--host`` prints only the host µs of one call of a small shape (64x256, f32 and bf16 or f16),
for ``layer_norm`` and ``portable_layer_norm`` and their backwards (and, on CUDA with torch,
torch's eager ``native_layer_norm`` and its backward, for reference), three ways: *alone*, the
median of ``CALLS`` calls each timed after the device drained (no queue to hide behind);
*pipelined*, bursts of ``BURST`` calls back to back, the sync after each not counted (best of
``ROUNDS``; a burst is short enough that the device's queue never fills, so this is the host's
cost alone; on a CPU device it competes with the device's own work for the cores); and
*throughput*, ``CALLS`` calls and the sync after them, per call: the larger of the host's and
the device's time per call.
Run: ``python benchmarks/layer_norm.py opencl:0 --host``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from bandwidth import best_seconds, copy_roof
from timing import queued_seconds

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.ops import (
    layer_norm,
    layer_norm_backward,
    portable_layer_norm,
    portable_layer_norm_backward,
)
from ruda_core.runtime import ComputeClient
from ruda_core.tensor import RudaTensor

GPU_SHAPES = [(8192, 1024), (8192, 4096), (4096, 16384)]
CPU_SHAPES = [(64, 1024), (16, 4096)]
ELEMS = [Elem.F32, Elem.BF16, Elem.F16]
REPS = 20
COPY_NBYTES = 1 << 30
EPS = 1e-5
HOST_SHAPE = (64, 256)
CALLS = 2000
BURST = 256
ROUNDS = 20


@dataclass
class Operands:
    """One shape's inputs on ruda's device (``x`` … ``rstd``) and, where present, torch's."""

    x: RudaTensor
    w: RudaTensor
    b: RudaTensor
    dy: RudaTensor
    mean: Any
    rstd: Any
    torch: tuple[Any, ...] | None


def bytes_moved(rows: int, features: int, nbytes: int, backward: bool) -> int:
    """Least bytes a call reads and writes: rows of x (and grad, grad_input) or of the output,
    the per-feature vectors, and the f32 mean and rstd."""
    row = rows * features * nbytes
    vector = features * nbytes
    stats = 2 * rows * 4
    return 3 * row + 3 * vector + stats if backward else 2 * row + 2 * vector + stats


def copy_seconds(client: ComputeClient) -> tuple[float, int]:
    """Seconds of one device-to-device copy and its size (NumPy's copy on the cpu device)."""
    if client.name() in ("cuda", "opencl"):
        src, dst = client.empty(COPY_NBYTES), client.empty(COPY_NBYTES)
        return copy_roof(client, src, dst, COPY_NBYTES), COPY_NBYTES
    nbytes = COPY_NBYTES // 8
    a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    return best_seconds(lambda: np.copyto(b, a), lambda: None), nbytes


def torch_module(client: ComputeClient) -> Any | None:
    try:
        import torch
    except ImportError:
        return None
    if client.name() == "cuda" and not torch.cuda.is_available():
        return None
    return torch if client.name() in ("cuda", "cpu") else None


def operands(client: ComputeClient, torch: Any, shape: tuple[int, int], elem: Elem) -> Operands:
    rng = np.random.default_rng(0)
    features = shape[1]
    host = {
        "x": rng.normal(3.0, 2.0, shape),
        "w": rng.normal(1.0, 0.5, features),
        "b": rng.normal(0.0, 1.0, features),
        "dy": rng.normal(0.0, 1.0, shape),
    }
    t = {k: RudaTensor.from_numpy(client, v.astype(elem.numpy)) for k, v in host.items()}
    _, mean, rstd = layer_norm(client, t["x"], t["w"], t["b"], EPS)
    pair = None
    if torch is not None:
        device = "cuda" if client.name() == "cuda" else "cpu"
        dtype = {Elem.F32: torch.float32, Elem.F16: torch.float16, Elem.BF16: torch.bfloat16}
        tt = {k: torch.tensor(v, device=device).to(dtype[elem]) for k, v in host.items()}
        _, tmean, trstd = torch.ops.aten.native_layer_norm(
            tt["x"], [features], tt["w"], tt["b"], EPS
        )
        pair = (tt["x"], tt["w"], tt["b"], tt["dy"], tmean, trstd)
    return Operands(t["x"], t["w"], t["b"], t["dy"], mean, rstd, pair)


def ruda_calls(client: ComputeClient, ops: Operands) -> dict[str, dict[str, Callable[[], object]]]:
    """The ruda columns of each direction."""
    return {
        "forward": {
            "ruda native": lambda: layer_norm(client, ops.x, ops.w, ops.b, EPS),
            "ruda portable": lambda: portable_layer_norm(client, ops.x, ops.w, ops.b, EPS),
        },
        "backward": {
            "ruda native": lambda: layer_norm_backward(
                client, ops.x, ops.w, ops.dy, ops.mean, ops.rstd
            ),
            "ruda portable": lambda: portable_layer_norm_backward(
                client, ops.x, ops.w, ops.dy, ops.mean, ops.rstd
            ),
        },
    }


def torch_calls(
    torch: Any, features: int, args: tuple[Any, ...], compiled: bool
) -> tuple[Callable[[], object], Callable[[], object]]:
    x, w, b, dy, mean, rstd = args

    def forward(x: Any, w: Any, b: Any) -> object:
        return torch.ops.aten.native_layer_norm(x, [features], w, b, EPS)

    def backward(dy: Any, x: Any, mean: Any, rstd: Any, w: Any, b: Any) -> object:
        return torch.ops.aten.native_layer_norm_backward(
            dy, x, [features], mean, rstd, w, b, [True, True, True]
        )

    if compiled:  # each shape compiles afresh: dynamo's recompile limit would fall back to eager
        torch.compiler.reset()
        forward = torch.compile(forward, dynamic=False)
        backward = torch.compile(backward, dynamic=False)
    return (lambda: forward(x, w, b)), (lambda: backward(dy, x, mean, rstd, w, b))


def host_us(run: Callable[[], object], sync: Callable[[], None]) -> float:
    """Host µs to enqueue one call (the device is drained before and after)."""
    sync()
    start = time.perf_counter()
    for _ in range(REPS):
        run()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / REPS * 1e6


def main(device: str) -> None:
    client = ruda.client(device)
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    torch = torch_module(client)
    copy_s, copy_nbytes = copy_seconds(client)
    roof = 2 * copy_nbytes / copy_s / 1e9
    shapes = GPU_SHAPES if client.name() == "cuda" else CPU_SHAPES
    print(
        f"{device}: {client.properties().name}; native LayerNorm: "
        f"{client.runtime.has_native_layer_norm()}"
    )
    print(f"  device-to-device copy {roof:8.1f} GB/s (read + write)")
    if torch is None:
        print("  torch: not installed or without this device; its columns are skipped")
    torch_sync = None
    if torch is not None:
        torch_sync = torch.cuda.synchronize if client.name() == "cuda" else (lambda: None)
    queue = None
    if torch is not None and client.name() == "cuda":
        handle = client.server.sharing.stream_handle(client.execution_stream().value)
        queue = {"ruda": torch.cuda.ExternalStream(handle), "torch": torch.cuda.current_stream()}
    header = f"  {'':26} {'wall µs':>9} {'device µs':>10} {'GB/s':>8} {'copy%':>6}"
    for elem in ELEMS:
        if not client.features().supports(elem):
            print(f"  {elem}: {device} does not support it; skipped")
            continue
        for shape in shapes:
            rows, features = shape
            ops = operands(client, torch, shape, elem)
            calls = ruda_calls(client, ops)
            torch_runs: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {}
            if torch is not None and ops.torch is not None:
                torch_runs["torch eager"] = torch_calls(torch, features, ops.torch, False)
                if client.name() == "cuda":
                    torch_runs["torch.compile"] = torch_calls(torch, features, ops.torch, True)
            for k, direction in enumerate(("forward", "backward")):
                nbytes = bytes_moved(rows, features, elem.nbytes, direction == "backward")
                print(f"{elem} {rows}x{features} {direction}")
                print(header)
                times: dict[str, float] = {}
                runs = [(name, run, sync, "ruda") for name, run in calls[direction].items()]
                runs += [(name, pair[k], torch_sync, "torch") for name, pair in torch_runs.items()]
                for name, run, done, side in runs:
                    wall = best_seconds(run, done)
                    seconds = wall if queue is None else queued_seconds(torch, queue[side], run)
                    times[name] = seconds
                    gbs = nbytes / seconds / 1e9
                    print(
                        f"  {name:26} {wall * 1e6:9.1f} {seconds * 1e6:10.1f} {gbs:8.1f} "
                        f"{100 * gbs / roof:5.1f}%"
                    )
                for name, run in calls[direction].items():
                    print(f"  {name}: host {host_us(run, sync):.1f} µs per call")
                    for peer in ("torch eager", "torch.compile"):
                        if peer in times:
                            ratio = times[name] / times[peer]
                            print(f"  {name} / {peer}: {ratio:.2f}x")


def call_us(run: Callable[[], object], sync: Callable[[], None]) -> tuple[float, float, float]:
    """(alone, pipelined, throughput) µs of one call, as the module docstring defines them."""
    for _ in range(20):
        run()
    sync()
    times = []
    for _ in range(CALLS):
        sync()
        start = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - start)
    sync()
    pipelined = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter_ns()
        for _ in range(BURST):
            run()
        pipelined = min(pipelined, (time.perf_counter_ns() - start) / BURST / 1e3)
        sync()
    start = time.perf_counter_ns()
    for _ in range(CALLS):
        run()
    sync()
    throughput = (time.perf_counter_ns() - start) / CALLS / 1e3
    return statistics.median(times) / 1e3, pipelined, throughput


def host_table(device: str) -> None:
    client = ruda.client(device)
    sync = lambda: client.sync().result()  # noqa: E731  # a one-line callback
    torch = torch_module(client) if client.name() == "cuda" else None
    print(
        f"{device}: host µs per call, {HOST_SHAPE[0]}x{HOST_SHAPE[1]} "
        "(alone / pipelined / throughput)"
    )
    half = Elem.BF16 if client.features().supports(Elem.BF16) else Elem.F16
    for elem in (Elem.F32, half):
        if not client.features().supports(elem):
            continue
        ops = operands(client, torch, HOST_SHAPE, elem)
        calls = ruda_calls(client, ops)
        syncs = dict.fromkeys(calls["forward"], sync)
        if ops.torch is not None:
            forward, backward = torch_calls(torch, HOST_SHAPE[1], ops.torch, compiled=False)
            calls["forward"]["torch eager"], calls["backward"]["torch eager"] = forward, backward
            syncs["torch eager"] = torch.cuda.synchronize
        for direction, columns in calls.items():
            for name, run in columns.items():
                alone, pipelined, throughput = call_us(run, syncs[name])
                print(
                    f"  {elem} {direction:8} {name:14} {alone:7.1f} / {pipelined:7.1f} / "
                    f"{throughput:7.1f} µs"
                )


if __name__ == "__main__":
    target = next((a for a in sys.argv[1:] if not a.startswith("--")), "cuda:0")
    if "--host" in sys.argv:
        host_table(target)
    else:
        main(target)
