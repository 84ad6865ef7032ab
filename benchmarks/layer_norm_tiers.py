"""Device time of ruda's native LayerNorm per row-tier choice, against torch eager, in one run
on ``cuda:0``: how the tiers of ``ruda_cuda/ops/layer_norm_plan.py`` were chosen.

Each configuration replaces the forward's and the backward's ``_Tiers`` and the backward's
threads per multiprocessor (which set its block count), drops the kept plans, and times both
directions of the benchmark's nine shapes, ruda's calls and torch eager's alike queued behind a
sleeping kernel (:func:`timing.queued_seconds`: device time without host gaps). Prints µs and,
in brackets, the ratio to torch.

Run: ``python benchmarks/layer_norm_tiers.py``.
"""

from __future__ import annotations

import sys

import layer_norm as bench
import torch
from timing import queued_seconds

import ruda_core as ruda
import ruda_cuda.ops.layer_norm as native
import ruda_cuda.ops.layer_norm_plan as plan
from ruda_core.ops import layer_norm, layer_norm_backward

#: name: (forward target elements per thread, backward target vectors per thread, backward
#: threads per multiprocessor)
CONFIGS = {
    "in use": (32, 2, 1024),
    "backward 1 vector per thread": (32, 1, 1024),
    "backward 4 vectors per thread": (32, 4, 1024),
    "backward 2048 threads per multiprocessor": (32, 2, 2048),
    "backward 512 threads per multiprocessor": (32, 2, 512),
    "forward 16 per thread": (16, 2, 1024),
}


def configure(forward_elements: int, backward_vectors: int, threads_per_unit: int) -> None:
    plan._FORWARD = plan._Tiers(32, forward_elements, 0, 64, {})
    plan._BACKWARD = plan._Tiers(16, 0, backward_vectors, 128, plan._MAX_BACKWARD_ELEMENTS)
    plan.BACKWARD_THREADS_PER_UNIT = threads_per_unit
    for table in (native._forward_plans, native._backward_plans):
        table.clear()
    core = sys.modules["ruda_core.ops.layer_norm"]
    for table in (core._forward_plans, core._backward_plans):
        table.clear()


def main() -> None:
    client = ruda.client("cuda:0")
    ruda_stream = torch.cuda.ExternalStream(
        client.server.sharing.stream_handle(client.execution_stream().value)
    )
    torch_stream = torch.cuda.current_stream()
    cases = []
    for elem in bench.ELEMS:
        for shape in bench.GPU_SHAPES:
            ops = bench.operands(client, torch, shape, elem)
            forward, backward = bench.torch_calls(torch, shape[1], ops.torch, False)
            cases.append(
                (
                    f"{elem.value} {shape[0]}x{shape[1]}",
                    ops,
                    queued_seconds(torch, torch_stream, forward) * 1e6,
                    queued_seconds(torch, torch_stream, backward) * 1e6,
                )
            )
    for name, config in CONFIGS.items():
        configure(*config)
        print(name)
        for label, ops, torch_fwd, torch_bwd in cases:
            f = 1e6 * queued_seconds(
                torch,
                ruda_stream,
                lambda ops=ops: layer_norm(client, ops.x, ops.w, ops.b, bench.EPS),
            )
            b = 1e6 * queued_seconds(
                torch,
                ruda_stream,
                lambda ops=ops: layer_norm_backward(
                    client, ops.x, ops.w, ops.dy, ops.mean, ops.rstd
                ),
            )
            print(
                f"  {label:16} forward {f:7.1f} ({f / torch_fwd:.2f})"
                f"  backward {b:7.1f} ({b / torch_bwd:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
