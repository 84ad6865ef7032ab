"""Shared memory, local arrays, loads/stores and bounds behaviour in every execution mode."""

from __future__ import annotations

import numpy as np
import pytest
from launch_modes import bounds_mode, run, run_validated

import ruda_cpu.executor as executor
from ruda_core.ir import Elem, ExecutionMode, Op
from ruda_core.runtime import (
    ComputeClient,
    KernelTask,
    OutOfBoundsReport,
    RudaCount,
    RudaDim,
)
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.runner import read_array

from .kernels import FILE

I32, U32, F32, BOOL = Elem.I32, Elem.U32, Elem.F32, Elem.BOOL


def block_sum(block: int) -> KernelBuilder:
    """The tree reduction of DESIGN.md: barriers inside a while loop."""
    kb = KernelBuilder("block_sum", file=FILE)
    x, out = kb.array("x", F32), kb.array("out", F32)
    sm = kb.shared("smem", F32, block)
    i, u = builtin("ABSOLUTE_POS"), builtin("UNIT_POS")
    v, s = kb.local("v", F32), kb.local("s", U32)
    with kb.if_(kb.let(Op.LT, BOOL, i, kb.let(Op.LEN, U32, x))):
        kb.do(Op.INDEX, v, x, i)
    with kb.else_():
        kb.assign(v, const(0.0, F32))
    kb.store(sm, u, v)
    kb.sync_units()
    kb.assign(s, const(block // 2, U32))
    with kb.loop():
        with kb.if_(kb.let(Op.NOT, BOOL, kb.let(Op.GT, BOOL, s, const(0, U32)))):
            kb.break_()
        with kb.if_(kb.let(Op.LT, BOOL, u, s)):
            other = kb.load(sm, kb.let(Op.ADD, U32, u, s))
            kb.store(sm, u, kb.let(Op.ADD, F32, kb.load(sm, u), other))
        kb.sync_units()
        kb.do(Op.FLOOR_DIV, s, s, const(2, U32))
    with kb.if_(kb.let(Op.EQ, BOOL, u, const(0, U32))):
        kb.store(out, builtin("RUDA_POS"), kb.load(sm, const(0, U32)))
    return kb


@pytest.mark.parametrize("mode", list(ExecutionMode), ids=lambda m: m.value)
def test_shared_memory_tree_reduction_over_many_cubes(
    cpu: ComputeClient, mode: ExecutionMode
) -> None:
    cubes, block = 300, 256
    x = np.random.default_rng(0).integers(0, 100, cubes * block - 77).astype(np.float32)
    arrays = [x, np.zeros(cubes, np.float32)]
    # in Validate mode an out-of-bounds access would raise its report
    _, out = run(cpu, block_sum(block).build(), arrays, count=cubes, dim=block, mode=mode)
    padded = np.concatenate([x, np.zeros(77, np.float32)])
    assert (out == padded.reshape(cubes, block).sum(axis=1)).all()


@pytest.mark.usefixtures("unsanitized")  # reads unwritten memory on purpose
def test_cubes_never_see_each_others_shared_memory(cpu: ComputeClient) -> None:
    kb = KernelBuilder("isolation", file=FILE)
    po, pz = kb.array("o", U32), kb.array("z", U32)
    sm = kb.shared("sm", U32, 64)
    u, cube = builtin("UNIT_POS"), builtin("RUDA_POS")
    with kb.if_(kb.let(Op.NE, BOOL, u, const(0, U32))):  # smem[0] is written by cube 0 only
        kb.store(sm, u, kb.let(Op.ADD, U32, cube, const(1, U32)))
    with kb.if_(kb.let(Op.EQ, BOOL, kb.let(Op.ADD, U32, cube, u), const(0, U32))):
        kb.store(sm, const(0, U32), const(999, U32))
    kb.sync_units()
    nxt = kb.let(Op.MOD, U32, kb.let(Op.ADD, U32, u, const(1, U32)), const(64, U32))
    kb.store(po, builtin("ABSOLUTE_POS"), kb.load(sm, nxt))
    kb.store(pz, builtin("ABSOLUTE_POS"), kb.load(sm, const(0, U32)))
    cubes = 50
    arrays = [np.zeros(cubes * 64, np.uint32), np.zeros(cubes * 64, np.uint32)]
    o, z = run(cpu, kb.build(), arrays, count=cubes, dim=64)
    o2, z2 = o.reshape(cubes, 64), z.reshape(cubes, 64)
    ids = np.arange(cubes)[:, None] + 1
    assert (o2[:, :-1] == ids).all()
    # the other cubes' smem[0] is never written: it holds the poison, not cube 0's 999
    assert (o2[1:, -1] == 0xA5A5A5A5).all() and o2[0, -1] == 999
    assert (z2[0] == 999).all() and (z2[1:] == 0xA5A5A5A5).all()


def test_shared_memory_survives_batches(
    cpu: ComputeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor, "LANES_PER_BATCH", 128)  # 2 cubes of 64 per batch
    cubes = 9
    x = np.arange(cubes * 64, dtype=np.float32)
    _, out = run(cpu, block_sum(64).build(), [x, np.zeros(cubes, np.float32)], count=cubes, dim=64)
    assert (out == x.reshape(cubes, 64).sum(axis=1)).all()


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_local_arrays_are_private_per_lane(cpu: ComputeClient) -> None:
    kb = KernelBuilder("local", file=FILE)
    po = kb.array("o", U32)
    la = kb.local_array("la", U32, 8)
    i = builtin("ABSOLUTE_POS")
    j, acc = kb.local("j", U32), kb.local("acc", U32)
    with kb.range_(j, const(0, U32), const(8, U32)):
        kb.store(la, j, kb.let(Op.MUL, U32, i, j))
    kb.store(la, const(9, U32), const(12345, U32))  # out of bounds: dropped (CHECKED: guarded)
    kb.assign(acc, kb.load(la, const(20, U32)))  # out of bounds: 0
    with kb.range_(j, const(0, U32), const(8, U32)):
        kb.do(Op.ADD, acc, acc, kb.load(la, kb.let(Op.SUB, U32, const(7, U32), j)))
    kb.store(po, i, acc)
    for mode in ExecutionMode:
        if mode is ExecutionMode.VALIDATE:  # la[9] and la[20] are out of bounds: reported
            (o,), error = run_validated(cpu, kb.build(), [np.zeros(200, np.uint32)], (), 4, 50)
            assert error is not None and error.count == 1
            assert (error.buffer, error.index, error.length) == ("la", 9, 8)
        else:
            (o,) = run(cpu, kb.build(), [np.zeros(200, np.uint32)], (), 4, 50, mode)
        assert o.tolist() == [p * 28 for p in range(200)]


def oob_kernel() -> KernelBuilder:
    """Reads a[idx[i]] into o[i] and stores 7 to w[idx[i]]: idx may be anything."""
    kb = KernelBuilder("oob", file=FILE)
    pa, pi, po, pw = (kb.array(name, I32) for name in ("a", "idx", "o", "w"))
    sm = kb.shared("sm", I32, 4)
    i = builtin("ABSOLUTE_POS")
    k = kb.load(pi, i)
    kb.store(
        sm,
        kb.let(Op.MOD, I32, kb.let(Op.CAST, I32, builtin("UNIT_POS")), const(4, I32)),
        const(3, I32),
    )
    kb.store(sm, k, const(5, I32))  # may be out of bounds of sm
    kb.sync_units()
    got = kb.load(pa, k)
    kb.store(po, i, kb.let(Op.ADD, I32, got, kb.load(sm, const(0, I32))))
    kb.store(pw, k, const(7, I32))
    return kb


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_unchecked_never_wraps_negative_indices_or_crashes(cpu: ComputeClient) -> None:
    idx = np.array([0, -1, 3, 2**31 - 1, -(2**31), 9, 10, 5], np.int32)
    a = np.arange(10, dtype=np.int32) * 10
    arrays = [a, idx, np.zeros(8, np.int32), np.zeros(10, np.int32)]
    _, _, o, w = run(cpu, oob_kernel().build(), arrays, count=2, dim=4)
    # sm[0] is 5 when some lane of the cube wrote index 0 to sm, else 3
    assert o.tolist() == [5, 5, 35, 5, 3, 93, 3, 53]
    assert w.tolist() == [7, 0, 0, 7, 0, 7, 0, 0, 0, 7]


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_checked_uses_the_metadata_length(cpu: ComputeClient) -> None:
    idx = np.array([0, 1, 5, 6, 7, 9, -1, 3], np.int32)
    a = np.arange(10, dtype=np.int32) * 10
    arrays = (a, idx, np.zeros(8, np.int32), np.zeros(10, np.int32))
    handles = [cpu.create_from_slice(v) for v in arrays]
    bindings = [h.binding() for h in handles]
    lengths = [6, 8, 8, 6]  # a and w: the buffers are longer than the arrays
    cpu.launch(KernelTask(oob_kernel().build()), RudaCount(1), RudaDim(8), bindings, [], lengths)
    o, w = (read_array(cpu, h, np.int32) for h in handles[2:])
    assert o.tolist() == [5, 15, 55, 5, 5, 5, 5, 35]
    assert w.tolist() == [7, 7, 0, 7, 0, 7, 0, 0, 0, 0]


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_validate_reports_the_first_access_of_the_lowest_lane(cpu: ComputeClient) -> None:
    idx = np.array([0, 1, 2, 3, 4, 5, 6, 7], np.int32)
    idx[5] = -2  # lane 5: a[-2] (as u32 4294967294) is the first out-of-bounds access
    idx[6] = 11
    a, o, w = np.zeros(10, np.int32), np.zeros(8, np.int32), np.zeros(10, np.int32)
    _, error = run_validated(cpu, oob_kernel().build(), [a, idx, o, w], dim=8)
    assert error is not None and error.count == 1
    # buffers: a, idx, o, w, then shared sm: the sm store of lane 4 comes first
    assert error.reports == (OutOfBoundsReport("oob", "sm", 4, 4),)


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_validate_reports_u64_index_halves(cpu: ComputeClient) -> None:
    kb = KernelBuilder("big", file=FILE)
    pa, po = kb.array("a", F32), kb.array("o", F32)
    kb.store(po, builtin("ABSOLUTE_POS"), kb.load(pa, const(2**33 + 5, Elem.U64)))
    arrays = [np.ones(3, np.float32), np.ones(2, np.float32)]
    (_, o), error = run_validated(cpu, kb.build(), arrays, dim=2)
    assert error is not None and error.reports == (OutOfBoundsReport("big", "a", 2**33 + 5, 3),)
    assert (o == 0).all()


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_contiguous_and_strided_lane_accesses_near_the_ends(cpu: ComputeClient) -> None:
    """ABSOLUTE_POS * 3 - 4 and 50 - ABSOLUTE_POS are lane vectors: slices, partly out of
    bounds at both ends."""
    kb = KernelBuilder("strided", file=FILE)
    pa, po, pw = kb.array("a", I32), kb.array("o", I32), kb.array("w", I32)
    i = kb.let(Op.CAST, I32, builtin("ABSOLUTE_POS"))
    up = kb.let(Op.SUB, I32, kb.let(Op.MUL, I32, i, const(3, I32)), const(4, I32))
    down = kb.let(Op.SUB, I32, const(50, I32), i)
    kb.store(po, i, kb.let(Op.ADD, I32, kb.load(pa, up), kb.load(pa, down)))
    with kb.if_(kb.let(Op.NE, BOOL, kb.let(Op.MOD, I32, i, const(5, I32)), const(0, I32))):
        kb.store(pw, up, i)
    a = np.arange(40, dtype=np.int32) + 1
    arrays = [a, np.zeros(64, np.int32), np.full(40, -1, np.int32)]
    _, o, w = run(cpu, kb.build(), arrays, count=2, dim=32)

    def get(j: int) -> int:
        return int(a[j]) if 0 <= j < 40 else 0

    assert o.tolist() == [get(3 * p - 4) + get(50 - p) for p in range(64)]
    want = np.full(40, -1)
    for p in range(64):
        if p % 5 and 0 <= 3 * p - 4 < 40:
            want[3 * p - 4] = p
    assert w.tolist() == want.tolist()


def test_loaded_values_do_not_alias_later_stores(cpu: ComputeClient) -> None:
    """t = a[i]; a[i] = 0; b[i] = t — and the same with a and b one buffer."""
    kb = KernelBuilder("alias", file=FILE)
    pa, pb = kb.array("a", F32), kb.array("b", F32)
    i = builtin("ABSOLUTE_POS")
    t = kb.load(pa, i)
    kb.store(pa, i, const(0.0, F32))
    kb.store(pb, i, t)
    a, b = run(cpu, kb.build(), [np.arange(64, dtype=np.float32), np.zeros(64, np.float32)], dim=64)
    assert (b == np.arange(64)).all() and (a == 0).all()
    kb2 = KernelBuilder("alias_ro", file=FILE)  # r is read-only, w aliases it
    pr, pw = kb2.array("r", F32), kb2.array("w", F32)
    t2 = kb2.load(pr, i)
    kb2.store(pw, i, const(-1.0, F32))
    kb2.store(pw, kb2.let(Op.ADD, U32, i, const(64, U32)), t2)
    buf = cpu.create_from_slice(np.arange(128, dtype=np.float32))
    task, both = KernelTask(kb2.build()), [buf.binding(), buf.binding()]  # one buffer, twice
    with bounds_mode(ExecutionMode.UNCHECKED):
        cpu.launch_unchecked(task, RudaCount(1), RudaDim(64), both, [], [128, 128])
    got = read_array(cpu, buf, np.float32)
    assert (got[:64] == -1).all() and (got[64:] == np.arange(64)).all()
