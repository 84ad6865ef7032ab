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

from ruda_core.ir import Elem, ExecutionMode
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    ArrayArg,
    Comptime,
    Numeric,
    SharedMemory,
    f32,
    kernel,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim
from ruda_core.testing.runner import read_array

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


@kernel
def grid_copy(x: Array[Numeric], out: Array[Numeric], n: u32):
    col = RUDA_POS_X * u32(TILE) + UNIT_POS_X
    row = RUDA_POS_Y * u32(TILE) + UNIT_POS_Y
    out[row * n + col] = x[(row + u32(1)) * n + col]


@pytest.mark.parametrize("elem", [Elem.U8, Elem.I16, Elem.F32, Elem.F64, Elem.BF16], ids=str)
def test_grid_rows_move_every_bit(cpu: ComputeClient, elem: Elem) -> None:
    n = GRID * TILE
    dtype = np.dtype(elem.numpy)
    bits = np.random.default_rng(7).integers(0, 256, (n + 1) * n * dtype.itemsize, np.uint8)
    x = bits.view(dtype)  # every bit pattern: NaN payloads and -0.0 too
    out = cpu.empty(n * n * dtype.itemsize)
    grid_copy.launch(
        cpu,
        RudaCount(GRID, GRID),
        RudaDim(TILE, TILE),
        ArrayArg(cpu.create_from_slice(x), x.size, elem=elem),
        ArrayArg(out, n * n, elem=elem),
        n,
    )
    got = read_array(cpu, out, dtype).view(np.uint8)
    np.testing.assert_array_equal(got, x[n:].view(np.uint8))


@kernel
def grid_copy_from(x: Array[Numeric], out: Array[Numeric], n: u32, first: u32):
    col = RUDA_POS_X * u32(TILE) + UNIT_POS_X
    row = RUDA_POS_Y * u32(TILE) + UNIT_POS_Y
    if col >= first and row >= first:
        out[row * n + col] = x[row * n + col]


@pytest.mark.parametrize("elem", [Elem.U8, Elem.F32, Elem.F64, Elem.BF16], ids=str)
@pytest.mark.parametrize("first", [0, 5, 16, 37])
def test_a_masked_grid_store_moves_the_active_units_bits_alone(
    cpu: ComputeClient, elem: Elem, first: int
) -> None:
    cubes = 3 * GRID  # few cube rows cut by the condition, most whole
    n = cubes * TILE
    dtype = np.dtype(elem.numpy)
    rng = np.random.default_rng(first)
    x = rng.integers(0, 256, n * n * dtype.itemsize, np.uint8).view(dtype)
    before = rng.integers(0, 256, n * n * dtype.itemsize, np.uint8).view(dtype)
    out = cpu.create_from_slice(before)
    grid_copy_from.launch(
        cpu,
        RudaCount(cubes, cubes),
        RudaDim(TILE, TILE),
        ArrayArg(cpu.create_from_slice(x), x.size, elem=elem),
        ArrayArg(out, before.size, elem=elem),
        n,
        first,
    )
    want = before.copy().reshape(n, n)
    want[first:, first:] = x.reshape(n, n)[first:, first:]
    got = read_array(cpu, out, dtype).view(np.uint8)
    np.testing.assert_array_equal(got, want.reshape(-1).view(np.uint8))


@kernel
def interior_average(x: Array[f32], out: Array[f32], n: u32):
    col = RUDA_POS_X * u32(TILE) + UNIT_POS_X
    row = RUDA_POS_Y * u32(TILE) + UNIT_POS_Y
    if row >= u32(1) and row < n - u32(1) and col >= u32(1) and col < n - u32(1):
        i = row * n + col
        out[i] = f32(0.25) * (x[i - n] + x[i + n] + x[i - u32(1)] + x[i + u32(1)])


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_a_masked_grid_store_writes_only_the_active_units(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    n = GRID * TILE
    x = np.random.default_rng(6).random((n, n)).astype(np.float32)
    before = np.full((n, n), -1.0, np.float32)
    arrays = [x.ravel(), before.ravel()]
    geometry = ((GRID, GRID, 1), (TILE, TILE, 1))
    _, out = run(cpu, interior_average.definition(), arrays, (np.uint32(n),), *geometry, mode)
    want = before.copy()
    want[1:-1, 1:-1] = np.float32(0.25) * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    np.testing.assert_array_equal(out.reshape(n, n), want)


@kernel
def range_masked(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    part = SharedMemory(u32, BLOCK)
    part[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    s = BLOCK // 2
    while s > 0:  # a tree sum: fewer units each step, always the first ones
        if UNIT_POS < s:
            part[UNIT_POS] += part[UNIT_POS + s]
        sync_units()
        s //= 2
    v = x[ABSOLUTE_POS]
    if UNIT_POS < u32(3) or UNIT_POS >= u32(BLOCK - 2):  # two runs of units
        v = part[0] + UNIT_POS
    else:
        v *= u32(2)
    sync_units()
    if UNIT_POS >= u32(5) and UNIT_POS < u32(9):
        part[UNIT_POS] = u32(7)
    sync_units()
    out[ABSOLUTE_POS] = v * u32(1000) + part[UNIT_POS]


def range_expected(x: np.ndarray) -> np.ndarray:
    out = []
    u = np.arange(BLOCK, dtype=np.uint32)
    for cube in x.reshape(CUBES, BLOCK):
        part = cube.copy()
        s = BLOCK // 2
        while s:
            part[:s] += part[s : 2 * s]
            s //= 2
        edge = (u < 3) | (u >= BLOCK - 2)
        v = np.where(edge, part[0] + u, cube * np.uint32(2))
        part[5:9] = 7
        out.append(v * np.uint32(1000) + part)
    return np.concatenate(out)


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_branches_over_ranges_of_units_touch_only_those_units(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(7).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)
    defn = range_masked.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    np.testing.assert_array_equal(out, range_expected(x))


@kernel
def shifted_reads(x: Array[u32], out: Array[u32], k: u32, BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS + k] + u32(1)


@pytest.mark.usefixtures("unsanitized")  # the units past the end read outside the array
@pytest.mark.parametrize("k", [0, 10, BLOCK, BLOCK + 10])
def test_shared_reads_past_the_end_give_zero(cpu: ComputeClient, k: int) -> None:
    x = np.random.default_rng(8).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)
    defn = shifted_reads.definition(BLOCK=BLOCK)
    _, out = run(
        cpu, defn, [x, np.zeros_like(x)], (np.uint32(k),), CUBES, BLOCK, ExecutionMode.CHECKED
    )
    padded = np.concatenate([x.reshape(CUBES, BLOCK), np.zeros((CUBES, 2 * BLOCK), np.uint32)], 1)
    np.testing.assert_array_equal(out, padded[:, k : k + BLOCK].ravel() + np.uint32(1))


@kernel
def ranged_shifted_reads(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    w = u32(1)
    if UNIT_POS >= u32(BLOCK - 8) or UNIT_POS < u32(2):
        w = buf[UNIT_POS + u32(4)] + u32(2)  # the last four units read past the end
    out[ABSOLUTE_POS] = w


@pytest.mark.usefixtures("unsanitized")  # the last units read past the end
@pytest.mark.parametrize("mode", [ExecutionMode.CHECKED, ExecutionMode.UNCHECKED], ids=str)
def test_shared_reads_under_ranges_of_units_give_zero_past_the_end(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(9).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)
    defn = ranged_shifted_reads.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    cubes = np.concatenate([x.reshape(CUBES, BLOCK), np.zeros((CUBES, 4), np.uint32)], 1)
    want = np.ones((CUBES, BLOCK), np.uint32)
    want[:, BLOCK - 8 :] = cubes[:, BLOCK - 4 :] + np.uint32(2)
    want[:, :2] = cubes[:, 4:6] + np.uint32(2)
    np.testing.assert_array_equal(out, want.ravel())


@kernel
def hillis_steele(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    d = u32(1)
    while d < u32(BLOCK):
        v = buf[UNIT_POS]
        if UNIT_POS >= d:  # a local updated in place for the units at or past d
            v += buf[UNIT_POS - d]
        sync_units()
        buf[UNIT_POS] = v
        sync_units()
        d *= u32(2)
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_a_local_updated_under_a_range_of_units_keeps_the_others(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(10).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)
    defn = hillis_steele.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    want = np.cumsum(x.reshape(CUBES, BLOCK), axis=1, dtype=np.uint32).ravel()
    np.testing.assert_array_equal(out, want)
