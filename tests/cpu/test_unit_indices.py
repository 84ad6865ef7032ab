"""Shared-memory accesses through indices computed from the unit position alone.

Such an index is the same in every cube, so the reference device computes it over one cube's
units and turns the access into a slice (an index that steps evenly, also one that wrapped
below zero) or a gather along the units (a permutation, a partner). Whichever way it runs, the
result must be what each unit would read and write on its own, in every execution mode.
"""

from __future__ import annotations

import numpy as np
import pytest
from launch_modes import run

from ruda_core.ir import ExecutionMode
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    Comptime,
    SharedMemory,
    kernel,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient

BLOCK = 64
CUBES = 50


@kernel
def unit_indexed_shared(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[(UNIT_POS * u32(5)) % u32(BLOCK)] = x[ABSOLUTE_POS]  # a permutation of the units
    sync_units()
    v = buf[UNIT_POS ^ u32(1)] * u32(1000)  # a partner
    v += buf[u32(BLOCK - 1) - UNIT_POS] * u32(100)  # reversed
    if UNIT_POS >= u32(3):
        v += buf[UNIT_POS - u32(3)] * u32(10)  # below zero for the units the branch skips
    v += buf[(UNIT_POS + u32(7)) % u32(BLOCK)]  # shifted, wrapping within the cube
    sync_units()
    buf[UNIT_POS ^ u32(2)] = v
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS]


def expected(x: np.ndarray) -> np.ndarray:
    u = np.arange(BLOCK)
    out = []
    for cube in x.reshape(CUBES, BLOCK):
        buf = np.zeros(BLOCK, np.uint32)
        buf[(u * 5) % BLOCK] = cube
        v = buf[u ^ 1] * 1000 + buf[BLOCK - 1 - u] * 100 + buf[(u + 7) % BLOCK]
        v[3:] += buf[: BLOCK - 3] * 10
        after = np.empty_like(buf)
        after[u ^ 2] = v
        out.append(after)
    return np.concatenate(out)


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_unit_position_indices_read_and_write_what_each_unit_would(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(3).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)
    defn = unit_indexed_shared.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    np.testing.assert_array_equal(out, expected(x))
