"""Atomics on global and shared memory: contended updates, and fetched old values consistent
with the lanes applying one after another."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from launch_modes import run

import ruda_core as ruda
from ruda_core.ir import Elem, Op
from ruda_core.lang import ABSOLUTE_POS, Array, atomic_add, kernel, u32
from ruda_core.runtime import ComputeClient
from ruda_core.testing.irbuild import KernelBuilder, builtin, const

from .kernels import FILE

U32, I32, I64, F32, F64, BOOL = Elem.U32, Elem.I32, Elem.I64, Elem.F32, Elem.F64, Elem.BOOL

FETCHING = [
    Op.ATOMIC_ADD,
    Op.ATOMIC_SUB,
    Op.ATOMIC_MIN,
    Op.ATOMIC_MAX,
    Op.ATOMIC_AND,
    Op.ATOMIC_OR,
    Op.ATOMIC_XOR,
    Op.ATOMIC_SWAP,
]
PY = {
    Op.ATOMIC_ADD: lambda a, b: a + b,
    Op.ATOMIC_SUB: lambda a, b: a - b,
    Op.ATOMIC_MIN: min,
    Op.ATOMIC_MAX: max,
    Op.ATOMIC_AND: lambda a, b: a & b,
    Op.ATOMIC_OR: lambda a, b: a | b,
    Op.ATOMIC_XOR: lambda a, b: a ^ b,
    Op.ATOMIC_SWAP: lambda a, b: b,
}


def histogram(fetch: bool) -> KernelBuilder:
    kb = KernelBuilder("histogram", file=FILE)
    px, ph, po = kb.array("x", U32), kb.array("h", U32), kb.array("old", U32)
    i = builtin("ABSOLUTE_POS")
    with kb.if_(kb.let(Op.LT, BOOL, i, kb.let(Op.LEN, U32, px))):
        out = kb.local("o", U32) if fetch else None
        kb.do(Op.ATOMIC_ADD, out, ph, kb.load(px, i), const(1, U32))
        if out is not None:
            kb.store(po, i, out)
    return kb


def test_contended_histogram_is_exact_and_fast(cpu: ComputeClient) -> None:
    n = 1 << 21
    x = np.random.default_rng(0).integers(0, 256, n).astype(np.uint32)
    arrays = [x, np.zeros(256, np.uint32), np.zeros(1, np.uint32)]
    run(cpu, histogram(False).build(), [x[:256], *arrays[1:]], dim=256)  # compiled before timing
    start = time.perf_counter()
    _, h, _ = run(cpu, histogram(False).build(), arrays, count=n // 256, dim=256)
    elapsed = time.perf_counter() - start
    assert (h == np.bincount(x, minlength=256)).all()
    assert elapsed < 2.0, f"{n} contended atomic adds took {elapsed:.2f} s"


def test_fetched_add_gives_every_lane_a_distinct_old_value(cpu: ComputeClient) -> None:
    n = 100_000
    x = np.random.default_rng(1).integers(0, 7, n).astype(np.uint32)
    arrays = [x, np.full(7, 1000, np.uint32), np.zeros(n, np.uint32)]
    _, h, old = run(cpu, histogram(True).build(), arrays, count=-(-n // 128), dim=128)
    counts = np.bincount(x, minlength=7)
    assert (h == 1000 + counts).all()
    for b in range(7):
        assert sorted(old[x == b].tolist()) == list(range(1000, 1000 + counts[b]))


def fetch_kernel(op: Op, elem: Elem, shared: bool) -> KernelBuilder:
    """old[i] = op(target[idx[i]], v[i]) for lanes with v[i] != 0 (others inactive)."""
    kb = KernelBuilder(f"{op.value}_{elem.value}", file=FILE)
    pt, pi, pv, po = (
        kb.array("t", elem),
        kb.array("idx", U32),
        kb.array("v", elem),
        kb.array("old", elem),
    )
    i = builtin("ABSOLUTE_POS")
    k, v = kb.load(pi, i), kb.load(pv, i)
    target = pt
    if shared:  # the cube's copy of t in shared memory, written back by unit 0
        target = kb.shared("st", elem, 16)
        j = kb.local("j", U32)
        with (
            kb.if_(kb.let(Op.EQ, BOOL, builtin("UNIT_POS"), const(0, U32))),
            kb.range_(j, const(0, U32), const(16, U32)),
        ):
            kb.store(target, j, kb.load(pt, j))
        kb.sync_units()
    with kb.if_(kb.let(Op.NE, BOOL, v, const(0.0 if elem.is_float else 0, elem))):
        kb.store(po, i, kb.let(op, elem, target, k, v))
    if shared:
        kb.sync_units()
        with (
            kb.if_(kb.let(Op.EQ, BOOL, builtin("UNIT_POS"), const(0, U32))),
            kb.range_(j, const(0, U32), const(16, U32)),
        ):
            kb.store(pt, j, kb.load(target, j))
    return kb


def check_sequential(
    op: Op,
    elem: Elem,
    t0: np.ndarray,
    idx: np.ndarray,
    v: np.ndarray,
    t: np.ndarray,
    old: np.ndarray,
) -> None:
    """There is an order of the active lanes, per address, whose sequential application gives
    ``old`` and ``t``: replay the lanes of each address from the last lane to the first (the
    order this device uses, the reverse of the units' own) and compare."""
    wrap = (
        (lambda z: elem.numpy.type(z))
        if elem.is_float
        else (lambda z: np.array(z % (1 << elem.bits)).astype(np.uint64).astype(elem.numpy)[()])
    )
    state = {a: t0[a].item() for a in range(t0.size)}
    for lane in reversed(range(idx.size)):
        if v[lane] == 0 or idx[lane] >= t0.size:
            continue
        a = int(idx[lane])
        assert old[lane] == state[a], (op, lane, a, old[lane], state[a])
        state[a] = wrap(PY[op](state[a], v[lane].item())).item()
    assert t.tolist() == [state[a] for a in range(t0.size)]


CASES = [
    (op, elem)
    for op in FETCHING
    for elem in (U32, I64, Elem.U8, F32, F64)
    if not (elem.is_float and op in (Op.ATOMIC_AND, Op.ATOMIC_OR, Op.ATOMIC_XOR))
]


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
@pytest.mark.parametrize("shared", [False, True], ids=["global", "shared"])
@pytest.mark.parametrize(("op", "elem"), CASES, ids=str)
def test_fetching_atomics_replay_sequentially(
    cpu: ComputeClient, op: Op, elem: Elem, shared: bool
) -> None:
    rng = np.random.default_rng(2)
    n = 64  # one cube, so shared memory holds every update
    idx = rng.integers(0, 18, n).astype(np.uint32)  # 16 and 17 are out of bounds
    if elem.is_float:
        v = rng.integers(-8, 9, n).astype(elem.numpy) / elem.numpy.type(4)
        t0 = rng.integers(-50, 50, 16).astype(elem.numpy)
    else:
        v = rng.integers(0, 256, n).astype(elem.numpy)
        t0 = rng.integers(0, 256, 16).astype(elem.numpy)
    arrays = [t0, idx, v, np.zeros(n, elem.numpy)]
    t, _, _, old = run(cpu, fetch_kernel(op, elem, shared).build(), arrays, dim=n)
    check_sequential(op, elem, t0, idx, v, t, old)


@pytest.mark.usefixtures("unsanitized")  # a plain launch's order: a sanitized one runs two batches
@settings(max_examples=25, deadline=None)
@given(
    op=st.sampled_from([Op.ATOMIC_ADD, Op.ATOMIC_MAX, Op.ATOMIC_XOR, Op.ATOMIC_SWAP]),
    seed=st.integers(0, 2**32 - 1),
    spread=st.sampled_from([1, 2, 5, 16]),
    n=st.integers(1, 300),
)
def test_fetching_atomics_random_contention(
    cpu: ComputeClient, op: Op, seed: int, spread: int, n: int
) -> None:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, spread, n).astype(np.uint32)
    v = rng.integers(0, 2**31, n).astype(np.uint32)
    t0 = rng.integers(0, 2**31, 16).astype(np.uint32)
    arrays = [t0, idx, v, np.zeros(n, np.uint32)]
    t, _, _, old = run(cpu, fetch_kernel(op, U32, False).build(), arrays, count=n)
    check_sequential(op, U32, t0, idx, v, t, old)


def test_float_add_old_values_are_true_intermediate_sums(cpu: ComputeClient) -> None:
    """Heavy contention of a float fetch-add: old values are the running sums of one order."""
    n = 5000
    idx = np.zeros(n, np.uint32)
    idx[::2] = 1
    v = np.random.default_rng(3).random(n).astype(np.float32) + np.float32(0.5)
    arrays = [np.zeros(16, np.float32), idx, v, np.zeros(n, np.float32)]
    defn = fetch_kernel(Op.ATOMIC_ADD, F32, False).build()
    t, _, _, old = run(cpu, defn, arrays, count=n // 100, dim=100)
    for a in (0, 1):
        lanes = np.flatnonzero(idx == a)
        order = lanes[np.argsort(old[lanes], kind="stable")]
        running = np.float32(0)
        for lane in order:
            assert old[lane] == running
            running = np.float32(running + v[lane])
        assert t[a] == running


def cas_kernel() -> KernelBuilder:
    kb = KernelBuilder("cas", file=FILE)
    pt, pi, pc, pv, po = (kb.array(n, U32) for n in ("t", "idx", "cmp", "v", "old"))
    i = builtin("ABSOLUTE_POS")
    k = kb.load(pi, i)
    kb.store(po, i, kb.let(Op.ATOMIC_CAS, U32, pt, k, kb.load(pc, i), kb.load(pv, i)))
    return kb


@pytest.mark.usefixtures("unsanitized")  # a plain launch's order: a sanitized one runs two batches
@pytest.mark.parametrize("uniform_cmp", [True, False])
def test_compare_and_swap_replays_sequentially(cpu: ComputeClient, uniform_cmp: bool) -> None:
    rng = np.random.default_rng(4)
    n = 256
    idx = rng.integers(0, 4, n).astype(np.uint32)
    cmp = np.zeros(n, np.uint32) if uniform_cmp else rng.integers(0, 3, n).astype(np.uint32)
    v = rng.integers(0, 3, n).astype(np.uint32)
    t0 = np.array([0, 1, 2, 0], np.uint32)
    arrays = [t0, idx, cmp, v, np.zeros(n, np.uint32)]
    t, _, _, _, old = run(cpu, cas_kernel().build(), arrays, count=4, dim=64)
    state = t0.tolist()
    for lane in reversed(range(n)):  # the order this device uses
        a = idx[lane]
        assert old[lane] == state[a]
        if state[a] == cmp[lane]:
            state[a] = int(v[lane])
    assert t.tolist() == state


def test_cas_spin_lock_pattern_elects_one_lane_per_address(cpu: ComputeClient) -> None:
    n = 50_000
    idx = (np.arange(n) % 3).astype(np.uint32)
    lanes = np.arange(n, dtype=np.uint32) + 1
    arrays = [np.zeros(4, np.uint32), idx, np.zeros(n, np.uint32), lanes, np.zeros(n, np.uint32)]
    t, _, _, _, old = run(cpu, cas_kernel().build(), arrays, count=n // 100, dim=100)
    for a in range(3):
        winners = np.flatnonzero((idx == a) & (old == 0))
        assert winners.size == 1 and t[a] == winners[0] + 1
        assert (old[(idx == a) & (old != 0)] == t[a]).all()


def test_non_fetching_atomics_and_load_store(cpu: ComputeClient) -> None:
    kb = KernelBuilder("mixed", file=FILE)
    pt, pi, po = kb.array("t", I32), kb.array("idx", U32), kb.array("o", I32)
    i = builtin("ABSOLUTE_POS")
    k = kb.load(pi, i)
    v = kb.let(Op.CAST, I32, i)
    for op in (Op.ATOMIC_MIN, Op.ATOMIC_MAX, Op.ATOMIC_SUB, Op.ATOMIC_OR):
        kb.do(
            op,
            None,
            pt,
            kb.let(
                Op.ADD,
                U32,
                k,
                const(
                    {Op.ATOMIC_MIN: 0, Op.ATOMIC_MAX: 4, Op.ATOMIC_SUB: 8, Op.ATOMIC_OR: 12}[op],
                    U32,
                ),
            ),
            v,
        )
    kb.do(Op.ATOMIC_STORE, None, pt, const(16, U32), const(5, I32))
    kb.store(po, i, kb.let(Op.ATOMIC_LOAD, I32, pt, const(16, U32)))
    idx = (np.arange(200) % 4).astype(np.uint32)
    arrays = [np.full(17, 100, np.int32), idx, np.zeros(200, np.int32)]
    t, _, o = run(cpu, kb.build(), arrays, count=2, dim=100)
    lanes = np.arange(200)
    for b in range(4):
        mine = lanes[idx == b]
        assert t[b] == min(100, mine.min()) and t[4 + b] == max(100, mine.max())
        assert t[8 + b] == 100 - mine.sum()
        assert t[12 + b] == 100 | np.bitwise_or.reduce(mine)
    assert t[16] == 5 and (o == 5).all()


@kernel
def take_slots(counter: Array[u32], out: Array[u32]):
    out[atomic_add(counter, 0, u32(1))] = ABSOLUTE_POS


def test_slots_taken_with_atomics_are_not_handed_out_in_unit_order(cpu: ComputeClient) -> None:
    """A kernel that expects unit ``k`` to take slot ``k`` is wrong on the reference device, as
    on a GPU: every slot is taken once, but not in the units' order."""
    counter = ruda.asarray(np.zeros(1, np.uint32), cpu)
    out = ruda.asarray(np.zeros(256, np.uint32), cpu)
    take_slots.launch(cpu, 4, 64, counter, out)
    got = out.numpy()
    assert sorted(got.tolist()) == list(range(256)) and (got != np.arange(256)).any()
