# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The reference model of asynchronous barriers and bulk copies (``mbarrier``) catches what the
hardware punishes, often with a hang: a barrier used before its init or initialised by several
units, a wait whose phase lacks arrivals or bytes (an ``arrive_expect_tx`` that announces more
or fewer bytes than its copies bring), more arrivals than a phase counts, a bulk copy that is
misaligned, of a size that is not a multiple of 16 bytes or outside its arrays, a destination
written before the copy's phase completed, a kernel that ends with a copy pending, and a bulk
store's source written before the wait that completes its group or a store never waited for. Each
launch fails naming the kernel and the fault; a destination read too early shows the poison
pattern; the front end refuses what no device can express."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import CompilationError, LaunchError
from ruda_core.ir import Elem
from ruda_core.lang import (
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    SharedMemory,
    f32,
    kernel,
    mbarrier,
    sync_units,
    u32,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.runner import read_array


@kernel
def _misuse(x: Array[f32], out: Array[f32], n: u32, FAULT: Comptime[str]):
    """Unit 0 stages ``n`` elements of ``x`` (64 when correct) by one bulk copy announced as 256
    bytes; every unit waits and copies its element to ``out``; with the fault ``FAULT``."""
    tile = SharedMemory(f32, 64)
    bar = mbarrier.Barriers(1)
    if FAULT == "init by all":
        mbarrier.init(bar, 0, 1)
    if FAULT == "missing arrival" and UNIT_POS == 0:
        mbarrier.init(bar, 0, 2)
    plain_init = FAULT != "no init" and FAULT != "init by all" and FAULT != "missing arrival"
    if plain_init and UNIT_POS == 0:
        mbarrier.init(bar, 0, 1)
    sync_units()
    if UNIT_POS == 0:
        if FAULT == "more bytes announced":
            mbarrier.arrive_expect_tx(bar, 0, u32(272))
        elif FAULT == "fewer bytes announced":
            mbarrier.arrive_expect_tx(bar, 0, u32(240))
        else:
            mbarrier.arrive_expect_tx(bar, 0, u32(256))
        at = u32(1) if FAULT == "misaligned" else u32(0)
        mbarrier.bulk_copy(tile, at, x, u32(0), n, bar, 0)
    if FAULT == "too many arrivals":
        mbarrier.arrive(bar, 0)
    if FAULT == "written early":
        tile[UNIT_POS] = f32(1)
    # one cube: two writing the same poison NaNs to one place race (a NaN equals nothing)
    if FAULT == "read early" and RUDA_POS == u32(0):
        out[UNIT_POS + u32(64)] = tile[UNIT_POS]
    if FAULT != "no wait":
        mbarrier.wait(bar, 0, u32(0))
    out[UNIT_POS] = tile[UNIT_POS]


def _run(cpu, fault: str, n: int = 64) -> np.ndarray:
    x = np.arange(128, dtype=np.float32) + 1
    out = np.zeros(128, np.float32)
    args = [ArrayArg(cpu.create_from_slice(a), a.size, elem=Elem.F32) for a in (x, out)]
    _misuse.launch(cpu, RudaCount(2), RudaDim(64), *args, n, FAULT=fault)
    return read_array(cpu, args[1].handle, np.float32)


def test_a_correct_use_lands_the_copy_at_the_wait(cpu):
    np.testing.assert_array_equal(_run(cpu, "none")[:64], np.arange(64, dtype=np.float32) + 1)


def test_a_destination_read_before_the_wait_shows_the_poison_pattern(cpu):
    got = _run(cpu, "read early")
    assert np.isnan(got[64:]).all()
    np.testing.assert_array_equal(got[:64], np.arange(64, dtype=np.float32) + 1)


@pytest.mark.parametrize(
    ("fault", "n", "message"),
    [
        ("no init", 64, r"mbarrier.arrive_expect_tx uses barrier 0 before mbarrier.init\(\)"),
        ("init by all", 64, r"mbarrier.init\(\) of barrier 0 by 64 units of a cube at once"),
        ("missing arrival", 64, r"can never return: .* lacks 1 arrivals and 0 transaction"),
        ("more bytes announced", 64, r"can never return: .* lacks 0 arrivals and 16 trans"),
        ("fewer bytes announced", 64, r"lacks 0 arrivals and 16 bytes copied beyond those"),
        ("too many arrivals", 64, r"arrives 64 more times on barrier 0 than its count \(1\)"),
        ("written early", 64, r"destination of a bulk copy on barrier 0 was written before"),
        ("no wait", 64, r"the kernel ends with \d+ bulk copies pending \(the first on barrier 0"),
        ("misaligned", 64, r"from element 0 to element 1: both runs must start 16-byte"),
        ("none", 6, r"6 elements \(24 bytes\).* a positive multiple of 16 bytes"),
        ("none", 68, r"68 elements from element 0 .* element 0 of an array of 64: out of bounds"),
    ],
)
def test_each_misuse_fails_the_launch_naming_kernel_and_fault(cpu, fault, n, message):
    with pytest.raises(LaunchError, match=r"kernel _misuse failed .*" + message):
        _run(cpu, fault, n)


@kernel
def _odd_size(x: Array[f32]):
    tile = SharedMemory(f32, 64)
    bar = mbarrier.Barriers(1)
    mbarrier.bulk_copy(tile, u32(0), x, u32(0), 3, bar, 0)


@kernel
def _data_as_barriers(x: Array[f32]):
    tile = SharedMemory(f32, 64)
    mbarrier.init(tile, 0, 1)


@kernel
def _barrier_outside(x: Array[f32]):
    bar = mbarrier.Barriers(2)
    mbarrier.arrive(bar, 2)


@kernel
def _store_to_shared(x: Array[f32]):
    tile = SharedMemory(f32, 64)
    mbarrier.bulk_store(tile, u32(0), x, u32(0), u32(64))


@kernel
def _wait_for_eight(x: Array[f32]):
    mbarrier.bulk_wait(8)


@pytest.mark.parametrize(
    ("kern", "message"),
    [
        (_odd_size, r"a positive multiple of 16 bytes; 3 elements of f32 are 12"),
        (_store_to_shared, r"bulk_store\(\) copies a SharedMemory, not x"),
        (_wait_for_eight, r"bulk_wait\(n\) needs a compile-time int n from 0 to 7, got 8"),
        (_data_as_barriers, r"mbarrier.init\(\) needs the mbarrier.Barriers array, got tile"),
        (_barrier_outside, r"mbarrier.arrive\(\): barrier 2 of 'bar' \(it has 2\)"),
    ],
)
def test_the_front_end_refuses_what_no_device_can_express(cpu, kern, message):
    x = np.zeros(64, np.float32)
    with pytest.raises(CompilationError, match=message):
        kern.launch(cpu, RudaCount(1), RudaDim(32), ArrayArg(cpu.create_from_slice(x), 64))


@kernel
def _store_misuse(out: Array[f32], at: u32, FAULT: Comptime[str]):
    """Every unit writes its element of a tile, fences; unit 0 stores the tile to ``out[at ..]``
    by a bulk store; with the fault ``FAULT``."""
    tile = SharedMemory(f32, 64)
    tile[UNIT_POS] = f32(UNIT_POS)
    mbarrier.fence_shared()
    sync_units()
    if UNIT_POS == 0:
        mbarrier.bulk_store(out, at, tile, u32(0), u32(64))
        mbarrier.bulk_commit()
    if FAULT == "source written":
        tile[UNIT_POS] = f32(0)
    if UNIT_POS == 0 and FAULT != "no wait":
        mbarrier.bulk_wait(0)


def _store(cpu, fault: str, at: int = 0) -> np.ndarray:
    out = ArrayArg(cpu.create_from_slice(np.zeros(128, np.float32)), 128, elem=Elem.F32)
    _store_misuse.launch(cpu, RudaCount(1), RudaDim(64), out, at, FAULT=fault)
    return read_array(cpu, out.handle, np.float32)


def test_a_bulk_store_lands_by_its_wait(cpu):
    got = _store(cpu, "none", at=64)
    np.testing.assert_array_equal(got, np.r_[np.zeros(64), np.arange(64)].astype(np.float32))


@pytest.mark.parametrize(
    ("fault", "at", "message"),
    [
        ("source written", 0, r"the source of a bulk store was written before the mbarrier.bul"),
        ("no wait", 0, r"the kernel ends with 1 bulk stores that no mbarrier.bulk_wait compl"),
        ("none", 2, r"bulk_store\(\) of 64 elements .* to element 2: both runs must start 16-"),
        ("none", 80, r"from element 0 of an array of 64 to element 80 of an array of 128: out"),
    ],
)
def test_each_bulk_store_misuse_fails_the_launch(cpu, fault, at, message):
    with pytest.raises(LaunchError, match=r"kernel _store_misuse failed .*" + message):
        _store(cpu, fault, at)
