"""Divergent control flow as execution masks, checked lane by lane against plain Python."""

from __future__ import annotations

import numpy as np
from launch_modes import run

from ruda_core.ir import Elem, Op
from ruda_core.runtime import ComputeClient
from ruda_core.testing.irbuild import KernelBuilder, builtin, const

from .kernels import FILE

I32, U32, BOOL = Elem.I32, Elem.U32, Elem.BOOL


def test_divergent_if_elif_else_and_partial_assignment(cpu: ComputeClient) -> None:
    kb = KernelBuilder("branches", file=FILE)
    pa, po, pk = kb.array("a", I32), kb.array("o", I32), kb.array("keep", I32)
    i = builtin("ABSOLUTE_POS")
    x = kb.load(pa, i)
    r, keep = kb.local("r", I32), kb.local("kept", I32)
    kb.assign(keep, const(-1, I32))
    with kb.if_(kb.let(Op.LT, BOOL, x, const(0, I32))):
        kb.assign(r, kb.let(Op.NEG, I32, x))
        kb.assign(keep, const(5, I32))
    with kb.else_():
        with kb.if_(kb.let(Op.EQ, BOOL, x, const(0, I32))):
            kb.assign(r, const(100, I32))
        with kb.else_():
            kb.assign(r, kb.let(Op.MUL, I32, x, const(3, I32)))
    kb.store(po, i, r)
    kb.store(pk, i, keep)
    a = np.random.default_rng(0).integers(-5, 6, 300).astype(np.int32)
    arrays = [a, np.zeros(300, np.int32), np.zeros(300, np.int32)]
    _, o, k = run(cpu, kb.build(), arrays, count=3, dim=100)
    assert o.tolist() == [-v if v < 0 else 100 if v == 0 else 3 * v for v in a]
    assert k.tolist() == [5 if v < 0 else -1 for v in a]


def _nested(a: int, b: int) -> int:
    acc = 0
    for j in range(a % 7):
        if j == 3:
            continue
        for k in range(j, 10, 2):
            if k > b:
                break
            acc += k * j
        if acc > 50:
            break
    return acc


def test_nested_loops_with_per_lane_trips_break_and_continue(cpu: ComputeClient) -> None:
    kb = KernelBuilder("nested", file=FILE)
    pa, pb, po = kb.array("a", I32), kb.array("b", I32), kb.array("o", I32)
    i = builtin("ABSOLUTE_POS")
    x, y = kb.load(pa, i), kb.load(pb, i)
    acc, j, k = kb.local("acc", I32), kb.local("j", I32), kb.local("k", I32)
    kb.assign(acc, const(0, I32))
    with kb.range_(j, const(0, I32), kb.let(Op.MOD, I32, x, const(7, I32))):
        with kb.if_(kb.let(Op.EQ, BOOL, j, const(3, I32))):
            kb.continue_()
        with kb.range_(k, j, const(10, I32), 2):
            with kb.if_(kb.let(Op.GT, BOOL, k, y)):
                kb.break_()
            kb.do(Op.ADD, acc, acc, kb.let(Op.MUL, I32, k, j))
        with kb.if_(kb.let(Op.GT, BOOL, acc, const(50, I32))):
            kb.break_()
    kb.store(po, i, acc)
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 40, 512).astype(np.int32), rng.integers(-2, 12, 512).astype(np.int32)
    _, _, o = run(cpu, kb.build(), [a, b, np.zeros(512, np.int32)], count=4, dim=128)
    assert o.tolist() == [_nested(int(p), int(q)) for p, q in zip(a, b, strict=True)]


def _collatz(n: int) -> int:
    steps = 0
    while n != 1 and steps < 200:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop_with_per_lane_trip_counts(cpu: ComputeClient) -> None:
    kb = KernelBuilder("collatz", file=FILE)
    pa, po = kb.array("a", U32), kb.array("o", U32)
    i = builtin("ABSOLUTE_POS")
    n, steps = kb.local("n", U32), kb.local("steps", U32)
    kb.assign(n, kb.load(pa, i))
    kb.assign(steps, const(0, U32))
    with kb.loop():
        go = kb.let(
            Op.AND,
            BOOL,
            kb.let(Op.NE, BOOL, n, const(1, U32)),
            kb.let(Op.LT, BOOL, steps, const(200, U32)),
        )
        with kb.if_(kb.let(Op.NOT, BOOL, go)):
            kb.break_()
        even = kb.let(Op.EQ, BOOL, kb.let(Op.MOD, U32, n, const(2, U32)), const(0, U32))
        with kb.if_(even):
            kb.do(Op.FLOOR_DIV, n, n, const(2, U32))
        with kb.else_():
            kb.do(Op.ADD, n, kb.let(Op.MUL, U32, n, const(3, U32)), const(1, U32))
        kb.do(Op.ADD, steps, steps, const(1, U32))
    kb.store(po, i, steps)
    a = np.arange(1, 257, dtype=np.uint32)
    _, o = run(cpu, kb.build(), [a, np.zeros(256, np.uint32)], count=8, dim=32)
    assert o.tolist() == [_collatz(int(v)) for v in a]


def test_early_return_at_top_level_and_inside_loops(cpu: ComputeClient) -> None:
    kb = KernelBuilder("early", file=FILE)
    pa, po = kb.array("a", I32), kb.array("o", I32)
    i = builtin("ABSOLUTE_POS")
    x = kb.load(pa, i)
    with kb.if_(kb.let(Op.LT, BOOL, x, const(0, I32))):
        kb.return_()
    kb.store(po, i, const(1, I32))
    j, m = kb.local("j", I32), kb.local("m", I32)
    with kb.loop():
        with kb.range_(j, const(0, I32), const(10, I32)), kb.if_(kb.let(Op.EQ, BOOL, j, x)):
            kb.store(po, i, j)
            kb.return_()
        kb.break_()
    kb.assign(m, kb.let(Op.ADD, I32, x, const(100, I32)))
    kb.store(po, i, m)
    kb.return_()
    kb.store(po, i, const(-99, I32))  # unreachable
    a = np.arange(-20, 20, dtype=np.int32)
    _, o = run(cpu, kb.build(), [a, np.full(40, 7, np.int32)], count=5, dim=8)
    assert o.tolist() == [7 if v < 0 else v if v < 10 else v + 100 for v in a]


def test_range_loops_negative_step_per_lane_bounds_and_empty_ranges(cpu: ComputeClient) -> None:
    kb = KernelBuilder("ranges", file=FILE)
    pa, pb, po, pl = kb.array("a", I32), kb.array("b", I32), kb.array("o", I32), kb.array("l", I32)
    i = builtin("ABSOLUTE_POS")
    x, y = kb.load(pa, i), kb.load(pb, i)
    acc, j = kb.local("acc", I32), kb.local("j", I32)
    kb.assign(acc, const(0, I32))
    kb.assign(j, const(-1000, I32))
    with kb.range_(j, x, y, -3):
        kb.do(Op.ADD, acc, kb.let(Op.MUL, I32, acc, const(3, I32)), j)
    kb.store(po, i, acc)
    kb.store(pl, i, j)  # the last value the loop gave j (or its value before the loop)
    rng = np.random.default_rng(2)
    a, b = rng.integers(-20, 20, 256).astype(np.int32), rng.integers(-20, 20, 256).astype(np.int32)
    arrays = [a, b, np.zeros(256, np.int32), np.zeros(256, np.int32)]
    _, _, o, last = run(cpu, kb.build(), arrays, count=2, dim=128)
    for k in range(256):
        acc_, j_ = 0, -1000
        for j_ in range(int(a[k]), int(b[k]), -3):
            acc_ = acc_ * 3 + j_
        assert (o[k], last[k]) == (np.int32(acc_), j_)


def test_unsigned_range_near_the_top_does_not_wrap(cpu: ComputeClient) -> None:
    kb = KernelBuilder("urange", file=FILE)
    po = kb.array("o", U32)
    j, n = kb.local("j", U32), kb.local("n", U32)
    kb.assign(n, const(0, U32))
    with kb.range_(j, const(2**32 - 5, U32), const(2**32 - 1, U32), 2):
        kb.do(Op.ADD, n, n, const(1, U32))
    kb.store(po, builtin("ABSOLUTE_POS"), n)
    (o,) = run(cpu, kb.build(), [np.zeros(4, np.uint32)], dim=4)
    assert o.tolist() == [2] * 4


def test_uniform_and_lane_vector_conditions_agree(cpu: ComputeClient) -> None:
    """Conditions on ABSOLUTE_POS and UNIT_POS are kept symbolic; mixing them with loaded
    values must give the same masks as plain arrays would."""
    kb = KernelBuilder("symbolic", file=FILE)
    po = kb.array("o", I32)
    i, u = builtin("ABSOLUTE_POS"), builtin("UNIT_POS")
    r = kb.local("r", I32)
    kb.assign(r, const(0, I32))
    j = kb.let(Op.SUB, U32, kb.let(Op.MUL, U32, i, const(3, U32)), const(7, U32))
    with kb.if_(kb.let(Op.GE, BOOL, j, const(50, U32))):
        kb.do(Op.ADD, r, r, const(1, I32))
    with kb.if_(kb.let(Op.LT, BOOL, kb.let(Op.ADD, U32, u, const(5, U32)), const(20, U32))):
        kb.do(Op.ADD, r, r, const(10, I32))
    with kb.if_(kb.let(Op.EQ, BOOL, kb.let(Op.CAST, I32, i), const(33, I32))):
        kb.do(Op.ADD, r, r, const(100, I32))
    kb.store(po, i, r)
    (o,) = run(cpu, kb.build(), [np.zeros(128, np.int32)], count=4, dim=32)
    want = [
        ((3 * p - 7) % 2**32 >= 50) + 10 * (p % 32 + 5 < 20) + 100 * (p == 33) for p in range(128)
    ]
    assert o.tolist() == want
