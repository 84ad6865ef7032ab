"""Divergent control flow as execution masks, checked lane by lane against plain Python."""

from __future__ import annotations

import numpy as np

from ruda_core.ir import Elem, Op

from .kernels import KB, B, c, launch

I32, U32, BOOL = Elem.I32, Elem.U32, Elem.BOOL


def test_divergent_if_elif_else_and_partial_assignment() -> None:
    kb = KB("branches")
    pa, po, pk = kb.array("a", I32), kb.array("o", I32), kb.array("keep", I32)
    i = B("ABSOLUTE_POS")
    x = kb.load(pa, i)
    r, keep = kb.var("r", I32), kb.var("kept", I32)
    kb.set(keep, c(-1, I32))
    with kb.if_(kb.op(Op.LT, BOOL, x, c(0, I32))) as els:
        kb.set(r, kb.op(Op.NEG, I32, x))
        kb.set(keep, c(5, I32))
    with kb.else_(els), kb.if_(kb.op(Op.EQ, BOOL, x, c(0, I32))) as els2:
        kb.set(r, c(100, I32))
    with kb.else_(els2):
        kb.set(r, kb.op(Op.MUL, I32, x, c(3, I32)))
    kb.store(po, i, r)
    kb.store(pk, i, keep)
    a = np.random.default_rng(0).integers(-5, 6, 300).astype(np.int32)
    o, k = np.zeros(300, np.int32), np.zeros(300, np.int32)
    launch(kb.build(), 3, 100, [a, o, k])
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


def test_nested_loops_with_per_lane_trips_break_and_continue() -> None:
    kb = KB("nested")
    pa, pb, po = kb.array("a", I32), kb.array("b", I32), kb.array("o", I32)
    i = B("ABSOLUTE_POS")
    x, y = kb.load(pa, i), kb.load(pb, i)
    acc, j, k = kb.var("acc", I32), kb.var("j", I32), kb.var("k", I32)
    kb.set(acc, c(0, I32))
    with kb.range_(j, c(0, I32), kb.op(Op.MOD, I32, x, c(7, I32))):
        with kb.if_(kb.op(Op.EQ, BOOL, j, c(3, I32))):
            kb.cont()
        with kb.range_(k, j, c(10, I32), 2):
            with kb.if_(kb.op(Op.GT, BOOL, k, y)):
                kb.brk()
            kb.op(Op.ADD, acc, acc, kb.op(Op.MUL, I32, k, j))
        with kb.if_(kb.op(Op.GT, BOOL, acc, c(50, I32))):
            kb.brk()
    kb.store(po, i, acc)
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 40, 512).astype(np.int32), rng.integers(-2, 12, 512).astype(np.int32)
    o = np.zeros(512, np.int32)
    launch(kb.build(), 4, 128, [a, b, o])
    assert o.tolist() == [_nested(int(p), int(q)) for p, q in zip(a, b, strict=True)]


def _collatz(n: int) -> int:
    steps = 0
    while n != 1 and steps < 200:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop_with_per_lane_trip_counts() -> None:
    kb = KB("collatz")
    pa, po = kb.array("a", U32), kb.array("o", U32)
    i = B("ABSOLUTE_POS")
    n, steps = kb.var("n", U32), kb.var("steps", U32)
    kb.set(n, kb.load(pa, i))
    kb.set(steps, c(0, U32))
    with kb.loop():
        go = kb.op(
            Op.AND, BOOL, kb.op(Op.NE, BOOL, n, c(1, U32)), kb.op(Op.LT, BOOL, steps, c(200, U32))
        )
        with kb.if_(kb.op(Op.NOT, BOOL, go)):
            kb.brk()
        even = kb.op(Op.EQ, BOOL, kb.op(Op.MOD, U32, n, c(2, U32)), c(0, U32))
        with kb.if_(even) as els:
            kb.op(Op.FLOOR_DIV, n, n, c(2, U32))
        with kb.else_(els):
            kb.op(Op.ADD, n, kb.op(Op.MUL, U32, n, c(3, U32)), c(1, U32))
        kb.op(Op.ADD, steps, steps, c(1, U32))
    kb.store(po, i, steps)
    a = np.arange(1, 257, dtype=np.uint32)
    o = np.zeros(256, np.uint32)
    launch(kb.build(), 8, 32, [a, o])
    assert o.tolist() == [_collatz(int(v)) for v in a]


def test_early_return_at_top_level_and_inside_loops() -> None:
    kb = KB("early")
    pa, po = kb.array("a", I32), kb.array("o", I32)
    i = B("ABSOLUTE_POS")
    x = kb.load(pa, i)
    with kb.if_(kb.op(Op.LT, BOOL, x, c(0, I32))):
        kb.ret()
    kb.store(po, i, c(1, I32))
    j, m = kb.var("j", I32), kb.var("m", I32)
    with kb.loop():
        with kb.range_(j, c(0, I32), c(10, I32)), kb.if_(kb.op(Op.EQ, BOOL, j, x)):
            kb.store(po, i, j)
            kb.ret()
        kb.brk()
    kb.set(m, kb.op(Op.ADD, I32, x, c(100, I32)))
    kb.store(po, i, m)
    kb.ret()
    kb.store(po, i, c(-99, I32))  # unreachable
    a = np.arange(-20, 20, dtype=np.int32)
    o = np.full(40, 7, np.int32)
    launch(kb.build(), 5, 8, [a, o])
    assert o.tolist() == [7 if v < 0 else v if v < 10 else v + 100 for v in a]


def test_range_loops_negative_step_per_lane_bounds_and_empty_ranges() -> None:
    kb = KB("ranges")
    pa, pb, po, pl = kb.array("a", I32), kb.array("b", I32), kb.array("o", I32), kb.array("l", I32)
    i = B("ABSOLUTE_POS")
    x, y = kb.load(pa, i), kb.load(pb, i)
    acc, j = kb.var("acc", I32), kb.var("j", I32)
    kb.set(acc, c(0, I32))
    kb.set(j, c(-1000, I32))
    with kb.range_(j, x, y, -3):
        kb.op(Op.ADD, acc, kb.op(Op.MUL, I32, acc, c(3, I32)), j)
    kb.store(po, i, acc)
    kb.store(pl, i, j)  # the last value the loop gave j (or its value before the loop)
    rng = np.random.default_rng(2)
    a, b = rng.integers(-20, 20, 256).astype(np.int32), rng.integers(-20, 20, 256).astype(np.int32)
    o, last = np.zeros(256, np.int32), np.zeros(256, np.int32)
    launch(kb.build(), 2, 128, [a, b, o, last])
    for k in range(256):
        acc_, j_ = 0, -1000
        for j_ in range(int(a[k]), int(b[k]), -3):
            acc_ = acc_ * 3 + j_
        assert (o[k], last[k]) == (np.int32(acc_), j_)


def test_unsigned_range_near_the_top_does_not_wrap() -> None:
    kb = KB("urange")
    po = kb.array("o", U32)
    j, n = kb.var("j", U32), kb.var("n", U32)
    kb.set(n, c(0, U32))
    with kb.range_(j, c(2**32 - 5, U32), c(2**32 - 1, U32), 2):
        kb.op(Op.ADD, n, n, c(1, U32))
    kb.store(po, B("ABSOLUTE_POS"), n)
    o = np.zeros(4, np.uint32)
    launch(kb.build(), 1, 4, [o])
    assert o.tolist() == [2] * 4


def test_uniform_and_lane_vector_conditions_agree() -> None:
    """Conditions on ABSOLUTE_POS and UNIT_POS are kept symbolic; mixing them with loaded
    values must give the same masks as plain arrays would."""
    kb = KB("symbolic")
    po = kb.array("o", I32)
    i, u = B("ABSOLUTE_POS"), B("UNIT_POS")
    r = kb.var("r", I32)
    kb.set(r, c(0, I32))
    j = kb.op(Op.SUB, U32, kb.op(Op.MUL, U32, i, c(3, U32)), c(7, U32))
    with kb.if_(kb.op(Op.GE, BOOL, j, c(50, U32))):
        kb.op(Op.ADD, r, r, c(1, I32))
    with kb.if_(kb.op(Op.LT, BOOL, kb.op(Op.ADD, U32, u, c(5, U32)), c(20, U32))):
        kb.op(Op.ADD, r, r, c(10, I32))
    with kb.if_(kb.op(Op.EQ, BOOL, kb.op(Op.CAST, I32, i), c(33, I32))):
        kb.op(Op.ADD, r, r, c(100, I32))
    kb.store(po, i, r)
    o = np.zeros(128, np.int32)
    launch(kb.build(), 4, 32, [o])
    want = [
        ((3 * p - 7) % 2**32 >= 50) + 10 * (p % 32 + 5 < 20) + 100 * (p == 33) for p in range(128)
    ]
    assert o.tolist() == want
