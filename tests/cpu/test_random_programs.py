"""Random structured programs: the lockstep device against a lane-by-lane interpreter.

Each lane runs the program independently in the interpreter (plain Python ints, wrapping), so
any mistake in the masks of divergent control flow, in merges or in symbolic lane vectors shows
up as a difference. Programs use i32 arithmetic, ``if``/``else``, range loops with per-lane
bounds, ``while``-style loops, ``break``/``continue``/``return`` and out-of-bounds accesses.
Under the sanitizer, at planes of 32 and of 16 lanes, the same programs must show exactly the
out-of-bounds loads the interpreter counts, and nothing else: their lanes write only their own
slots, so any race or uninitialised read reported would be a false one.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from launch_modes import run, run_validated

import ruda_cpu
from ruda_core.errors import SanitizerError
from ruda_core.ir import (
    Break,
    Const,
    Continue,
    Elem,
    ExecutionMode,
    If,
    Instr,
    KernelDefinition,
    Local,
    Loop,
    Op,
    Param,
    ParamKind,
    RangeLoop,
    Return,
)
from ruda_core.ir.verify import verify
from ruda_core.runtime import ComputeClient
from ruda_core.testing.irbuild import builtin

I32, BOOL = Elem.I32, Elem.BOOL
VARS = [Local(f"v{k}", I32) for k in range(4)]
CONDS = [Local(f"c{k}", BOOL) for k in range(8)]
LOOP_VARS = [Local(f"j{k}", I32) for k in range(4)]
COUNTERS = [Local(f"n{k}", I32) for k in range(4)]
BOUNDS = [Local(f"b{k}", I32) for k in range(2 * len(LOOP_VARS))]
A = Param(0, "a", ParamKind.ARRAY, I32)
OUT = Param(1, "out", ParamKind.ARRAY, I32)
BINARY = [
    Op.ADD,
    Op.SUB,
    Op.MUL,
    Op.MIN,
    Op.MAX,
    Op.BIT_AND,
    Op.BIT_XOR,
    Op.SHR,
    Op.FLOOR_DIV,
    Op.MOD,
]
COMPARE = [Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE]
N_LANES, SLOTS = 96, 4


def wrap(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


@st.composite
def operands(draw: st.DrawFn, loop_vars: list[Local]) -> Any:
    pool = VARS + loop_vars
    if draw(st.booleans()):
        return draw(st.sampled_from(pool))
    return Const(draw(st.integers(-9, 9)), I32)


@st.composite
def blocks(draw: st.DrawFn, depth: int, loops: int, loop_vars: list[Local]) -> tuple:
    stmts: list[Any] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["op", "op", "load", "store", "if", "range", "loop", "exit"]))
        if kind in ("if", "range", "loop") and depth == 0:
            kind = "op"
        if kind == "op":
            op = draw(st.sampled_from(BINARY))
            a, b = draw(operands(loop_vars)), draw(operands(loop_vars))
            if op in (Op.FLOOR_DIV, Op.MOD):  # keep divisors non-zero: 0 gives no fixed value
                b = Const(draw(st.sampled_from([-7, -3, -1, 2, 5])), I32)
            if op is Op.SHR:
                b = Const(draw(st.integers(0, 31)), I32)
            stmts.append(Instr(op, draw(st.sampled_from(VARS)), (a, b)))
        elif kind == "load":  # may be out of bounds, negative included
            idx = draw(operands(loop_vars))
            stmts.append(Instr(Op.INDEX, draw(st.sampled_from(VARS)), (A, idx)))
        elif kind == "store":
            slot = draw(st.integers(0, SLOTS - 1))
            stmts.append(("store", slot, draw(st.sampled_from(VARS))))
        elif kind == "if":
            cond = draw(st.sampled_from(CONDS))
            cmp = Instr(
                draw(st.sampled_from(COMPARE)),
                cond,
                (draw(operands(loop_vars)), draw(operands(loop_vars))),
            )
            then = draw(blocks(depth - 1, loops, loop_vars))
            orelse = draw(blocks(depth - 1, loops, loop_vars)) if draw(st.booleans()) else ()
            stmts += [cmp, If(cond, then, orelse)]
        elif kind == "range" and len(loop_vars) < len(LOOP_VARS):
            var = LOOP_VARS[len(loop_vars)]
            start = draw(st.sampled_from([Const(0, I32), Const(5, I32), *VARS[:2]]))
            end = draw(st.sampled_from([Const(4, I32), Const(-2, I32), *VARS[1:3]]))
            step = Const(draw(st.sampled_from([1, 2, -1, -3])), I32)
            # variable bounds are clamped, so a loop runs at most a few dozen times: the
            # variables may hold any i32, and a body that moves them could grow trips
            # exponentially over enclosing loops
            bounds = BOUNDS[2 * len(loop_vars) : 2 * len(loop_vars) + 2]
            for k, bound in enumerate((start, end)):
                if isinstance(bound, Local):
                    stmts += [
                        Instr(Op.MAX, bounds[k], (bound, Const(-8, I32))),
                        Instr(Op.MIN, bounds[k], (bounds[k], Const(12, I32))),
                    ]
            start, end = (
                bounds[k] if isinstance(b, Local) else b for k, b in enumerate((start, end))
            )
            body = draw(blocks(depth - 1, loops + 1, [*loop_vars, var]))
            stmts.append(RangeLoop(var, start, end, step, body))
        elif kind == "loop" and loops < len(COUNTERS):
            n = COUNTERS[loops]
            limit = Const(draw(st.integers(0, 6)), I32)
            cond = CONDS[-1 - loops]
            body = draw(blocks(depth - 1, loops + 1, loop_vars))
            stmts += [
                Instr(Op.ASSIGN, n, (Const(0, I32),)),
                Loop(
                    (
                        Instr(Op.GE, cond, (n, limit)),
                        If(cond, (Break(),)),
                        Instr(Op.ADD, n, (n, Const(1, I32))),
                        *body,
                    )
                ),
            ]
        elif kind == "exit":
            cond = draw(st.sampled_from(CONDS))
            cmp = Instr(
                draw(st.sampled_from(COMPARE)),
                cond,
                (draw(st.sampled_from(VARS)), Const(draw(st.integers(-5, 5)), I32)),
            )
            options = [Return()] + ([Break(), Continue()] if loops else [])
            stmts += [cmp, If(cond, (draw(st.sampled_from(options)),))]
    return tuple(stmts)


def lower_stores(block: tuple, lane_slot: Local, tmp: Local) -> tuple:
    """Replace ("store", slot, var) with out[lane * SLOTS + slot] = var."""
    out: list[Any] = []
    for s in block:
        if isinstance(s, tuple):
            _, slot, var = s
            out += [
                Instr(Op.ADD, tmp, (lane_slot, Const(slot, I32))),
                Instr(Op.INDEX_ASSIGN, None, (OUT, tmp, var)),
            ]
        elif isinstance(s, If):
            then = lower_stores(s.then, lane_slot, tmp)
            out.append(replace(s, then=then, orelse=lower_stores(s.orelse, lane_slot, tmp)))
        elif isinstance(s, RangeLoop | Loop):
            out.append(replace(s, body=lower_stores(s.body, lane_slot, tmp)))
        else:
            out.append(s)
    return tuple(out)


def program(body: tuple) -> KernelDefinition:
    lane, lane_slot, tmp = Local("lane", I32), Local("lane_slot", I32), Local("tmp", I32)
    prologue = [
        Instr(Op.CAST, lane, (builtin("ABSOLUTE_POS"),)),
        Instr(Op.MUL, lane_slot, (lane, Const(SLOTS, I32))),
    ]
    for k, v in enumerate(VARS):
        prologue.append(Instr(Op.ADD, tmp, (lane, Const(k * 7, I32))))
        prologue.append(Instr(Op.INDEX, v, (A, tmp)))
    defn = KernelDefinition(
        "random",
        (A, OUT),
        (*VARS, *CONDS, *LOOP_VARS, *COUNTERS, *BOUNDS, lane, lane_slot, tmp),
        (),
        (),
        (*prologue, *lower_stores(body, lane_slot, tmp)),
    )
    verify(defn)
    return defn


class _Exit(Exception):
    def __init__(self, kind: str) -> None:
        self.kind = kind


def interpret(defn: KernelDefinition, lane: int, a: list[int], out: list[int]) -> int:
    """Run ``defn`` for ``lane`` over ``a``, storing into ``out``; returns how many of the lane's
    loads fell outside ``a`` (they read 0)."""
    env: dict[Local, Any] = {}
    outside = 0

    def val(x: Any) -> Any:
        if isinstance(x, Const):
            return x.value
        if isinstance(x, Local):
            return env.get(x, 0)
        return lane  # ABSOLUTE_POS

    def run(block: tuple) -> None:
        for s in block:
            if isinstance(s, Instr):
                step(s)
            elif isinstance(s, If):
                run(s.then if val(s.cond) else s.orelse)
            elif isinstance(s, RangeLoop):
                for j in range(val(s.start), val(s.end), s.step.value):
                    env[s.var] = j
                    try:
                        run(s.body)
                    except _Exit as e:
                        if e.kind == "break":
                            break
                        if e.kind != "continue":
                            raise
            elif isinstance(s, Loop):
                while True:
                    try:
                        run(s.body)
                    except _Exit as e:
                        if e.kind == "break":
                            break
                        if e.kind != "continue":
                            raise
            else:
                raise _Exit(type(s).__name__.lower())

    def step(s: Instr) -> None:
        x = (
            [val(v) for v in s.args[1:]]
            if s.op in (Op.INDEX, Op.INDEX_ASSIGN)
            else [val(v) for v in s.args]
        )
        nonlocal outside
        if s.op is Op.INDEX:
            inside = 0 <= x[0] < len(a)
            env[s.out] = a[x[0]] if inside else 0
            outside += not inside
            return
        if s.op is Op.INDEX_ASSIGN:
            if 0 <= x[0] < len(out):
                out[x[0]] = x[1]
            return
        p, q = [*x, 0][:2]
        r = {
            Op.ASSIGN: lambda: p,
            Op.CAST: lambda: p,
            Op.ADD: lambda: p + q,
            Op.SUB: lambda: p - q,
            Op.MUL: lambda: p * q,
            Op.MIN: lambda: min(p, q),
            Op.MAX: lambda: max(p, q),
            Op.BIT_AND: lambda: p & q,
            Op.BIT_XOR: lambda: p ^ q,
            Op.SHR: lambda: p >> (q % 32),
            Op.FLOOR_DIV: lambda: p // q,
            Op.MOD: lambda: p % q,
            Op.LT: lambda: p < q,
            Op.LE: lambda: p <= q,
            Op.GT: lambda: p > q,
            Op.GE: lambda: p >= q,
            Op.EQ: lambda: p == q,
            Op.NE: lambda: p != q,
        }[s.op]()
        env[s.out] = r if isinstance(r, bool) else wrap(r)

    with contextlib.suppress(_Exit):  # a return
        run(defn.body)
    return outside


@pytest.mark.usefixtures("unsanitized")  # random indices go out of bounds
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=blocks(3, 0, []), seed=st.integers(0, 2**32 - 1), mode=st.sampled_from(list(ExecutionMode))
)
def test_random_program_matches_lane_by_lane_interpreter(
    cpu: ComputeClient, body: tuple, seed: int, mode: ExecutionMode
) -> None:
    defn = program(body)
    a = np.random.default_rng(seed).integers(-12, 40, N_LANES + 30).astype(np.int32)
    arrays = [a, np.full(N_LANES * SLOTS, -1, np.int32)]
    if mode is ExecutionMode.VALIDATE:  # loads may be out of bounds: the values are compared
        (_, out), _ = run_validated(cpu, defn, arrays, (), 3, 32)
    else:
        _, out = run(cpu, defn, arrays, (), 3, 32, mode)
    want = [-1] * (N_LANES * SLOTS)
    for lane in range(N_LANES):
        interpret(defn, lane, a.tolist(), want)
    assert out.tolist() == want


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=blocks(3, 0, []),
    seed=st.integers(0, 2**32 - 1),
    mode=st.sampled_from([ExecutionMode.CHECKED, ExecutionMode.UNCHECKED]),
)
def test_sanitizer_reports_exactly_the_out_of_bounds_loads_at_two_widths(
    width_clients: dict[int, ComputeClient], body: tuple, seed: int, mode: ExecutionMode
) -> None:
    defn = program(body)
    a = np.random.default_rng(seed).integers(-12, 40, N_LANES + 30).astype(np.int32)
    outside = sum(
        interpret(defn, lane, a.tolist(), [-1] * (N_LANES * SLOTS)) for lane in range(N_LANES)
    )
    for width in (32, 16):
        kinds: dict[str, int] = {}
        with ruda_cpu.sanitizing():
            try:
                run(
                    width_clients[width],
                    defn,
                    [a, np.full(N_LANES * SLOTS, -1, np.int32)],
                    (),
                    3,
                    32,
                    mode,
                )
            except SanitizerError as err:
                kinds = err.kinds
        want = {"out-of-bounds": outside} if outside else {}
        assert kinds == want, f"{mode.value} launch, planes of {width}"
