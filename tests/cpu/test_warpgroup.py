# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The reference model of warpgroup matrices (``wgmma``) catches what the hardware punishes: a
kernel that touches an accumulator or writes an operand tile while a product is pending (also
one a wait did not complete because its group was never closed), ends with products pending,
issues a product after writing its accumulator with no fence, reads a misaligned operand, runs
only part of a warpgroup through an operation, or runs in cubes that are not whole warpgroups.
Each launch fails naming the kernel and the fault; the front end refuses what no device can
express."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import CompilationError, LaunchConfigError, LaunchError
from ruda_core.ir import Elem, swizzle
from ruda_core.lang import (
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    bf16,
    f32,
    kernel,
    sync_units,
    u32,
    wgmma,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.runner import read_array


@kernel
def _misuse(out: Array[f32], FAULT: Comptime[str]):
    """One product of ones into ``acc``, with the fault ``FAULT`` (or none: "none")."""
    sa = SharedMemory(bf16, 4096)
    sb = SharedMemory(bf16, 4096)
    for i in range(32):
        sa[UNIT_POS * u32(32) + u32(i)] = bf16(1)
        sb[UNIT_POS * u32(32) + u32(i)] = bf16(1)
    acc = wgmma.Accumulator(64)
    wgmma.fill(acc, 0.0)
    if FAULT != "no fence":
        wgmma.fence()
    sync_units()
    a_at = u32(8) if FAULT == "misaligned" else u32(0)
    wgmma.mma_async(acc, sa, a_at, sb, u32(0), 4096)
    if FAULT != "no commit":  # a wait completes closed groups only
        wgmma.commit()
    if FAULT == "store pending":
        wgmma.store(out, u32(0), acc, u32(64), u32(64), u32(64))
    if FAULT == "operand written":
        sb[UNIT_POS] = bf16(2)
    if FAULT == "partial warpgroup" and UNIT_POS < 64:
        wgmma.wait(0)
    if FAULT != "no wait" and FAULT != "partial warpgroup":
        wgmma.wait(0)
        wgmma.store(out, u32(0), acc, u32(64), u32(64), u32(64))


def _run(cpu, fault: str, units: int = 128) -> np.ndarray:
    out = np.zeros(64 * 64, np.float32)
    handle = cpu.create_from_slice(out)
    arg = ArrayArg(handle, out.size, elem=Elem.F32)
    _misuse.launch(cpu, RudaCount(1), RudaDim(units), arg, FAULT=fault)
    return read_array(cpu, handle, np.float32)


def test_a_correct_use_gives_the_product(cpu):
    np.testing.assert_array_equal(_run(cpu, "none"), np.full(64 * 64, 16.0, np.float32))


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("store pending", r"wgmma.store of accumulator 'acc' while 1 of its products are pending"),
        ("operand written", r"operand tile .* was written before the wgmma.wait"),
        ("no wait", r"the kernel ends with 1 products pending on accumulator 'acc'"),
        ("no commit", r"wgmma.store of accumulator 'acc' while 1 of its products are pending"),
        ("no fence", r"after units wrote or read it .* with no wgmma.fence\(\) between"),
        ("misaligned", r"a_at % 16 == 0.*got a_at 8"),
        ("partial warpgroup", r"wgmma.wait was reached by 64 of the 128 units"),
    ],
)
def test_each_misuse_fails_the_launch_naming_kernel_and_fault(cpu, fault, message):
    with pytest.raises(LaunchError, match=r"kernel _misuse failed .*" + message):
        _run(cpu, fault)


def test_cubes_that_are_not_whole_warpgroups_are_refused_before_running(cpu):
    with pytest.raises(LaunchConfigError, match=r"whole warpgroups of 128 units; .* 96 units"):
        _run(cpu, "none", units=96)


@kernel
def _odd_width(out: Array[f32]):
    acc = wgmma.Accumulator(12)
    wgmma.fill(acc, 0.0)


@kernel
def _f32_operands(out: Array[f32]):
    s = SharedMemory(f32, 4096)
    acc = wgmma.Accumulator(64)
    wgmma.mma_async(acc, s, u32(0), s, u32(0), 4096)


@kernel
def _block_not_of_atoms(x: Array[bf16]):
    s = SharedMemory(bf16, 4096)
    acc = wgmma.Accumulator(64)
    wgmma.mma_async(acc, s, u32(0), s, u32(0), 100)


@kernel
def _wait_at_run_time(out: Array[f32], n: u32):
    wgmma.wait(n)


@pytest.mark.parametrize(
    ("k", "message"),
    [
        (_odd_width, "a multiple of 8 from 8 to 256, got 12"),
        (_f32_operands, "bf16 or f16 operands"),
        (_block_not_of_atoms, "multiple of 512, got 100"),
        (_wait_at_run_time, "compile-time int"),
    ],
)
def test_the_front_end_refuses_what_no_device_expresses(k, message):
    with pytest.raises(CompilationError, match=message):
        k.definition()


@kernel
def _swizzled(out: Array[u32]):
    out[UNIT_POS] = wgmma.swizzle_line(UNIT_POS)


def test_swizzle_line_is_the_layout_the_model_reads(cpu):
    """Line ``i`` of 16 bytes is stored at ``i ^ ((i >> 3) & 7)``: chunk ``c`` of 128-byte row
    ``r`` at chunk ``c ^ (r % 8)``, where the model's element swizzle puts its elements."""
    out = np.zeros(1024, np.uint32)
    handle = cpu.create_from_slice(out)
    _swizzled.launch(cpu, RudaCount(1), RudaDim(1024), ArrayArg(handle, 1024, elem=Elem.U32))
    got = read_array(cpu, handle, np.uint32)
    lines = np.arange(1024)
    rows, chunks = lines // 8, lines % 8
    np.testing.assert_array_equal(got, rows * 8 + (chunks ^ (rows % 8)))
    np.testing.assert_array_equal(got, swizzle(lines * 8) // 8)
