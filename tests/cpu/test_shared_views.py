"""A value loaded from shared memory into a local may stay a view of that memory on the reference
device, as long as nothing writes the memory before the local's last read; and what a launch
derives from unit positions (``UNIT_POS >= d``, ``UNIT_POS - d``) is computed once and reused by
its later batches. Either way each unit must get exactly what it would on its own: a local keeps
the value it loaded, whatever is stored after, in every batch and every execution mode."""

from __future__ import annotations

import runpy
from pathlib import Path

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
from ruda_cpu.executor import LANES_PER_BATCH
from ruda_cpu.lockstep.derived import DERIVED_BYTES, Derived

BLOCK = 64
#: two whole batches of cubes and a shorter third one
CUBES = 2 * (LANES_PER_BATCH // BLOCK) + 9
MODES = pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
#: the Hillis-Steele scan in shared memory as a newcomer writes it, from the NumPy device's
#: benchmark
block_scan = runpy.run_path(
    str(Path(__file__).resolve().parents[2] / "benchmarks" / "cpu_newcomer.py")
)["block_scan"]


def data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)


@MODES
def test_a_scan_in_shared_memory_over_several_batches(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = data(21)
    defn = block_scan.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    want = np.cumsum(x.reshape(CUBES, BLOCK), axis=1, dtype=np.uint32).ravel()
    np.testing.assert_array_equal(out, want)


@kernel
def rotate(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    v = buf[UNIT_POS]
    sync_units()
    buf[(UNIT_POS + u32(1)) % u32(BLOCK)] = v  # stores the loaded value over the memory it read
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@MODES
def test_a_store_of_a_loaded_value_over_the_memory_it_came_from(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = data(22)
    _, out = run(cpu, rotate.definition(BLOCK=BLOCK), [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    np.testing.assert_array_equal(out, np.roll(x.reshape(CUBES, BLOCK), 1, axis=1).ravel())


@kernel
def shift_odd(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    v = buf[UNIT_POS]
    sync_units()
    if (v & u32(1)) == u32(1) and UNIT_POS < u32(BLOCK - 1):
        buf[UNIT_POS + u32(1)] = v  # over the next unit's element, which its own v still holds
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@MODES
def test_a_masked_store_of_a_loaded_value_one_unit_further(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = data(24)
    defn = shift_odd.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    cubes = x.reshape(CUBES, BLOCK)
    want = cubes.copy()
    odd = (cubes[:, :-1] & 1) == 1
    want[:, 1:] = np.where(odd, cubes[:, :-1], cubes[:, 1:])
    np.testing.assert_array_equal(out, want.ravel())


@kernel
def steps(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    v = u32(0)
    d = u32(1)
    while d < u32(BLOCK):
        v = buf[UNIT_POS]
        sync_units()
        if UNIT_POS >= d:
            buf[UNIT_POS] = v + d
        sync_units()
        d *= u32(2)
    out[ABSOLUTE_POS] = v * u32(1000) + buf[UNIT_POS]  # v as loaded before the last store


@MODES
def test_a_local_read_after_the_loop_keeps_its_last_loaded_value(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = data(23)
    _, out = run(cpu, steps.definition(BLOCK=BLOCK), [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    mem = x.reshape(CUBES, BLOCK).copy()
    unit = np.arange(BLOCK, dtype=np.uint32)
    d = 1
    while d < BLOCK:
        v = mem.copy()
        mem = np.where(unit >= d, v + np.uint32(d), mem)
        d *= 2
    np.testing.assert_array_equal(out, (v * np.uint32(1000) + mem).ravel())


def test_derived_values_are_computed_once_within_their_budget() -> None:
    memo, source = Derived(), object()
    made: list[int] = []

    def make(size: int) -> np.ndarray:
        made.append(size)
        return np.zeros(size, np.uint8)

    first = memo.get((source,), "a", lambda: make(8))
    assert memo.get((source,), "a", lambda: make(8)) is first
    assert memo.get((source,), "b", lambda: make(8)) is not first
    big = DERIVED_BYTES  # more than is left: returned, not kept
    assert memo.get((source,), "c", lambda: make(big)).nbytes == big
    memo.get((source,), "c", lambda: make(big))
    assert made == [8, 8, big, big]
