"""Accesses through indices computed from unit and cube positions.

An index computed from the unit position alone is the same in every cube, so the reference
device computes it over one cube's units and turns a shared-memory access into a slice (an index
that steps evenly, also one that wrapped below zero) or a gather along the units (a permutation,
a partner). One that adds a cube position keeps a value per cube and one per unit, and a global
access through it copies rows of consecutive elements when it is wholly in bounds. Whichever way
it runs, the result must be what each unit would read and write on its own, in every execution
mode.
"""

from __future__ import annotations

import numpy as np
import pytest
from launch_modes import run

from ruda_core.ir import ExecutionMode
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    SharedMemory,
    f32,
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


ROW = 40  # elements per row: each cube of BLOCK units reads a row from its offset


@kernel
def rows_per_cube(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    base = RUDA_POS * u32(ROW)
    v = x[base + UNIT_POS] + x[base + UNIT_POS + u32(5)] * u32(3)  # rows; the last past the end
    if RUDA_POS > u32(0):
        v += x[base - u32(ROW) + UNIT_POS]  # the row before, a wrapped index in cube 0
    out[RUDA_POS * u32(BLOCK) + UNIT_POS] = v


def rows_expected(x: np.ndarray) -> np.ndarray:
    padded = np.r_[x, np.zeros(BLOCK + 5, np.uint32)]
    out = np.zeros(CUBES * BLOCK, np.uint32)
    for cube in range(CUBES):
        base = cube * ROW
        v = padded[base : base + BLOCK] + padded[base + 5 : base + 5 + BLOCK] * 3
        if cube:
            v += padded[base - ROW : base - ROW + BLOCK]
        out[cube * BLOCK : (cube + 1) * BLOCK] = v
    return out


@pytest.mark.usefixtures("unsanitized")  # the last cube's row ends past the input
@pytest.mark.parametrize("mode", [ExecutionMode.CHECKED, ExecutionMode.UNCHECKED], ids=str)
def test_rows_at_cube_offsets_read_and_write_what_each_unit_would(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(4).integers(0, 1000, CUBES * ROW + 30).astype(np.uint32)
    defn = rows_per_cube.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros(CUBES * BLOCK, np.uint32)], (), CUBES, BLOCK, mode)
    np.testing.assert_array_equal(out, rows_expected(x))


GRID = 8  # cubes along each axis of a 2-D launch of TILE x TILE cubes
TILE = 16


@kernel
def grid_neighbours(x: Array[f32], out: Array[f32], n: u32):
    col = RUDA_POS_X * u32(TILE) + UNIT_POS_X
    row = RUDA_POS_Y * u32(TILE) + UNIT_POS_Y
    i = row * n + col
    out[i] = x[i] + x[i + u32(1)] * f32(2) + x[i - n] * f32(4)  # past either end at the edges


@pytest.mark.usefixtures("unsanitized")  # the edges read past either end
def test_grid_positions_read_and_write_what_each_unit_would(cpu: ComputeClient) -> None:
    n = GRID * TILE
    x = np.random.default_rng(5).random(n * n).astype(np.float32)
    defn = grid_neighbours.definition()
    arrays = [x, np.zeros(n * n, np.float32)]
    geometry = ((GRID, GRID, 1), (TILE, TILE, 1))
    _, out = run(cpu, defn, arrays, (np.uint32(n),), *geometry, ExecutionMode.CHECKED)
    padded = np.r_[np.zeros(n, np.float32), x, np.zeros(1, np.float32)]
    want = x + padded[n + 1 :] * np.float32(2) + padded[: n * n] * np.float32(4)
    np.testing.assert_array_equal(out, want)
