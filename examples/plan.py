"""A plan: an object that keeps scratch memory across calls on one fixed execution queue.

Repeated operations (a reduction called every step of a loop, say) should not allocate their
scratch buffers on every call. A plan allocates them once and pins itself to the stream that
was current when it was made, with ``client.fixed_execution_queue()``:

* every call enqueues on that one stream, so the stream itself orders one call's use of the
  scratch after the previous call's — no event waits and no synchronisation between calls;
* the plan creates no stream and waits for nothing when it is made;
* results are read on the same stream, so a read sees the call's writes;
* a plan is not thread-safe by itself: give each thread its own plan (each on its thread's
  stream), or guard one plan with a lock.

Run: ``python examples/plan.py [device]``.
"""

from __future__ import annotations

import sys

import numpy as np

import ruda_core as ruda
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    f32,
    kernel,
    sync_units,
)
from ruda_core.runtime import ComputeClient, Handle, RudaCount, RudaDim


@kernel
def partial_sums(x: Array[f32], partial: Array[f32], BLOCK: Comptime[int]):
    smem = SharedMemory(f32, BLOCK)
    acc = f32(0)
    i = ABSOLUTE_POS
    n = x.len()
    while i < n:
        acc += x[i]
        i += RUDA_COUNT * RUDA_DIM
    smem[UNIT_POS] = acc
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if UNIT_POS < s:
            smem[UNIT_POS] += smem[UNIT_POS + s]
        sync_units()
        s //= 2
    if UNIT_POS == 0:
        partial[RUDA_POS] = smem[0]


class SumPlan:
    """Sums f32 arrays on one device, reusing one scratch buffer of partial sums."""

    BLOCK = 256

    def __init__(self, client: ComputeClient, cubes: int = 64) -> None:
        self.client = client.fixed_execution_queue()  # this thread's stream, pinned
        self.cubes = cubes
        self.scratch = self.client.empty(4 * cubes)  # allocated once, reused by every call

    def __call__(self, x: Handle, n: int) -> float:
        partial_sums.launch(
            self.client,
            RudaCount(self.cubes),
            RudaDim(self.BLOCK),
            ArrayArg(x, n),
            ArrayArg(self.scratch, self.cubes),
            BLOCK=self.BLOCK,
        )
        partial = np.frombuffer(self.client.read_one(self.scratch), dtype=np.float32)
        return float(partial.sum(dtype=np.float64))


def main(device: str = "cpu") -> None:
    client = ruda.client(device)
    plan = SumPlan(client)
    rng = np.random.default_rng(0)
    before = client.memory_usage().number_allocs
    for step in range(5):
        x = rng.random(100_000 + step, dtype=np.float32)
        handle = client.create_from_slice(x)
        total = plan(handle, x.size)
        assert np.isclose(total, x.sum(dtype=np.float64), rtol=1e-5)
        del handle
    # the plan's scratch is its only lasting allocation
    assert client.memory_usage().number_allocs <= before + 1
    print(f"{device}: 5 sums through one plan, one scratch buffer reused")


if __name__ == "__main__":
    main(*sys.argv[1:2])
