"""Kernel time of ruda's native LayerNorm per row-tier choice, against torch eager, in one run
on ``cuda:0``: how the tiers of ``ruda_cuda/layer_norm_plan.py`` were chosen.

Each configuration replaces the forward's and the backward's ``_Tiers`` (warp-tier elements per
lane, block-tier elements per thread), drops the kept plans, and times both directions of the
benchmark's nine shapes: ruda from ``client.profile`` (best of 3 x ``REPS`` calls), torch
eager from CUDA events. Prints µs and, in brackets, the ratio to torch.

Run: ``python benchmarks/layer_norm_tiers.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import layer_norm as bench
import torch

import ruda_core as ruda
import ruda_cuda.layer_norm as native
import ruda_cuda.layer_norm_plan as plan
from ruda_core.ops import layer_norm, layer_norm_backward

REPS = 20
#: name: (forward warp and target elements, backward warp and target elements)
CONFIGS = {
    "in use": ((32, 32), (16, 8)),
    "16 per thread both ways": ((32, 16), (32, 16)),
    "32 forward, 16 backward": ((32, 32), (32, 16)),
}


def ruda_us(client: ruda.runtime.ComputeClient, run: Callable[[], object]) -> float:
    run()
    client.sync().result()
    best = float("inf")
    for _ in range(3):
        _, profile = client.profile(lambda: [run() for _ in range(REPS)])
        best = min(best, profile.execution_ns / REPS / 1e3)
    return best


def torch_us(run: Callable[[], object]) -> float:
    run()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPS):
            run()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / REPS)
    return best


def main() -> None:
    client = ruda.client("cuda:0")
    core = sys.modules["ruda_core.ops.layer_norm"]
    cases = []
    for elem in bench.ELEMS:
        for shape in bench.GPU_SHAPES:
            ops = bench.operands(client, torch, shape, elem)
            forward, backward = bench.torch_calls(torch, shape[1], ops.torch, False)
            cases.append(
                (f"{elem.value} {shape[0]}x{shape[1]}", ops, torch_us(forward), torch_us(backward))
            )
    for name, (fwd, bwd) in CONFIGS.items():
        plan._FORWARD = plan._Tiers(*fwd, {})
        plan._BACKWARD = plan._Tiers(*bwd, plan._MAX_BACKWARD_ELEMENTS)
        for table in (native._forward_plans, native._backward_plans):
            table.clear()
        for table in (core._forward_plans, core._backward_plans):
            table.clear()
        print(name)
        for label, ops, torch_fwd, torch_bwd in cases:
            f = ruda_us(client, lambda ops=ops: layer_norm(client, ops.x, ops.w, ops.b, bench.EPS))
            b = ruda_us(
                client,
                lambda ops=ops: layer_norm_backward(
                    client, ops.x, ops.w, ops.dy, ops.mean, ops.rstd
                ),
            )
            print(
                f"  {label:16} forward {f:7.1f} ({f / torch_fwd:.2f})"
                f"  backward {b:7.1f} ({b / torch_bwd:.2f})"
            )


if __name__ == "__main__":
    main()
