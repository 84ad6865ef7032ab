"""Conditions computed from unit positions alone (``(UNIT_POS & k) == 0``, ``UNIT_POS < partner``)
are the same in every cube, so the reference device combines them (``==``, ``!=``, ``not``) and
selects under them over one cube's units. Whichever way it runs, each unit must get what it
would on its own, bit for bit, in every execution mode."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest
from launch_modes import run

from ruda_core.ir import Elem, ExecutionMode
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
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
CUBES = 40
#: the bitonic sort in shared memory as a newcomer writes it, from the NumPy device's benchmark
bitonic = runpy.run_path(
    str(Path(__file__).resolve().parents[2] / "benchmarks" / "cpu_newcomer.py")
)["bitonic"]


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_a_bitonic_sort_in_shared_memory_sorts_every_cube(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(11).integers(0, 1 << 32, CUBES * BLOCK, dtype=np.uint32)
    defn = bitonic.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    np.testing.assert_array_equal(out, np.sort(x.reshape(CUBES, BLOCK), axis=1).ravel())


@kernel
def patterned_selects(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    odd = (UNIT_POS & u32(1)) == u32(1)
    low = UNIT_POS < u32(24)
    fourth = (UNIT_POS & u32(4)) != u32(0)
    v = x[i] if odd != low else f32(0) - x[i]
    same = fourth == odd
    if not same:
        v = x[i + u32(1)] if i + u32(1) < x.len() else x[i]
    out[i] = v


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_selects_under_combined_unit_conditions_keep_every_bit(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    specials = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan, 1.5, -2.5], np.float32)
    x = np.resize(specials, CUBES * BLOCK)
    x[::7] = np.random.default_rng(12).standard_normal(x[::7].shape[0]).astype(np.float32)
    _, out = run(cpu, patterned_selects.definition(), [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    u = np.tile(np.arange(BLOCK), CUBES)
    odd, low, fourth = (u & 1) == 1, u < 24, (u & 4) != 0
    want = np.where(odd != low, x, np.float32(0) - x)
    following = np.r_[x[1:], x[-1:]]
    want = np.where(fourth != odd, following, want)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


@kernel
def shared_stencil(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    own = buf[UNIT_POS]
    v = u32(1)
    if UNIT_POS >= u32(1) and UNIT_POS < u32(BLOCK - 1):
        v = buf[UNIT_POS - u32(1)] * u32(3) + buf[UNIT_POS + u32(1)]
    sync_units()
    buf[UNIT_POS] = u32(7)  # read once below, after this store: the old value is wanted
    out[ABSOLUTE_POS] = v + own * u32(1000)


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_shared_reads_used_once_see_the_memory_as_it_was_read(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    x = np.random.default_rng(13).integers(0, 1000, CUBES * BLOCK).astype(np.uint32)
    defn = shared_stencil.definition(BLOCK=BLOCK)
    _, out = run(cpu, defn, [x, np.zeros_like(x)], (), CUBES, BLOCK, mode)
    cubes = x.reshape(CUBES, BLOCK)
    v = np.ones_like(cubes)
    v[:, 1:-1] = cubes[:, :-2] * np.uint32(3) + cubes[:, 2:]
    np.testing.assert_array_equal(out, (v + cubes * np.uint32(1000)).ravel())


@kernel
def butterfly(x: Array[Numeric], out: Array[Numeric], J: Comptime[int]):
    buf = SharedMemory(Numeric, 64)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS ^ u32(J)]


@pytest.mark.parametrize("elem", [Elem.U8, Elem.I16, Elem.F32, Elem.F64, Elem.BF16], ids=str)
@pytest.mark.parametrize("j", [1, 2, 4, 8, 16, 32])
def test_a_butterfly_partner_reads_the_neighbouring_block_bit_for_bit(
    cpu: ComputeClient, elem: Elem, j: int
) -> None:
    dtype = np.dtype(elem.numpy)
    bits = np.random.default_rng(j).integers(0, 256, CUBES * BLOCK * dtype.itemsize, np.uint8)
    x = bits.view(dtype)  # every bit pattern: NaN payloads and -0.0 too
    out = cpu.empty(x.nbytes)
    butterfly.launch(
        cpu,
        RudaCount(CUBES),
        RudaDim(BLOCK),
        ArrayArg(cpu.create_from_slice(x), x.size, elem=elem),
        ArrayArg(out, x.size, elem=elem),
        J=j,
    )
    partner = np.arange(BLOCK) ^ j
    want = x.reshape(CUBES, BLOCK)[:, partner].ravel()
    np.testing.assert_array_equal(read_array(cpu, out, dtype).view(bits.dtype), want.view(np.uint8))
