"""The bounds pass: its rewrite, its determinism, and its meaning on the test interpreter."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ruda_core.ir import (
    REPORT_PARAM,
    Const,
    Elem,
    If,
    Instr,
    Local,
    Op,
    ParamKind,
    lower_bounds,
    report_names,
    verify,
)
from ruda_core.lang import (
    Array,
    LocalArray,
    SharedMemory,
    atomic_add,
    f32,
    i32,
    i64,
    kernel,
    u8,
    u32,
)
from ruda_core.runtime import ExecutionMode

from .helpers import instrs, walk
from .ir_interp import Interp

CHECKED, VALIDATE, UNCHECKED = (
    ExecutionMode.CHECKED,
    ExecutionMode.VALIDATE,
    ExecutionMode.UNCHECKED,
)


@kernel
def read_one(x: Array[f32], out: Array[f32], i: i32):
    out[0] = x[i]


def test_unchecked_returns_the_definition_itself():
    d = read_one.definition()
    assert lower_bounds(d, UNCHECKED) is d


def test_checked_read_has_the_documented_form():
    d = read_one.definition()
    out = lower_bounds(d, CHECKED)
    verify(out)
    x, dest = d.params[0], d.params[1]
    read = d.body[0]
    assert isinstance(read, Instr) and read.op is Op.INDEX
    b0, b1, b2 = Local("_b0", Elem.U32), Local("_b1", Elem.U32), Local("_b2", Elem.BOOL)
    b3 = Local("_b3", Elem.U32)
    assert out.body[:2] == (Instr(Op.LEN, b0, (x,)), Instr(Op.LEN, b3, (dest,)))  # hoisted
    assert out.body[2:5] == (
        Instr(Op.CAST, b1, (d.params[2],)),
        Instr(Op.LT, b2, (b1, b0)),
        If(b2, (read,), (Instr(Op.ASSIGN, read.out, (Const(0.0, Elem.F32),)),)),
    )
    assert out.body[4].loc == read.loc  # type: ignore[union-attr]
    guard = next(s for s in out.body[5:] if isinstance(s, If))
    assert guard.orelse == ()  # a dropped store has nothing to do out of bounds
    assert out.params == d.params
    assert out.locals[: len(d.locals)] == d.locals
    assert dest.read_only is False


@kernel
def widths(x: Array[f32], out: Array[f32], a: i64, b: u8, c: u32):
    out[0] = x[a] + x[b] + x[c]


def test_indices_compare_unsigned_of_at_least_32_bits():
    out = lower_bounds(widths.definition(), CHECKED)
    verify(out)
    compares = instrs(out, Op.LT)
    assert [c.args[0].elem for c in compares[:3]] == [Elem.U64, Elem.U32, Elem.U32]  # type: ignore[union-attr]
    assert compares[2].args[0] == widths.definition().params[4]  # a u32 index is not cast
    casts = [(i.args[0].elem, i.out.elem) for i in instrs(out, Op.CAST)]  # type: ignore[union-attr]
    assert casts == [(Elem.I64, Elem.U64), (Elem.U32, Elem.U64), (Elem.U8, Elem.U32)]


@kernel
def constant_indices(out: Array[u32]):
    tile = SharedMemory(u32, 4)
    tile[3] = 1
    tile[4] = 2
    out[0] = tile[3]


def test_constant_indices_into_fixed_arrays_are_decided_statically():
    d = constant_indices.definition()
    out = lower_bounds(d, CHECKED)
    stores = [s for s in out.body if isinstance(s, Instr) and s.op is Op.INDEX_ASSIGN]
    assert [s.args[1] for s in stores[:1]] == [Const(3, Elem.U32)]  # in bounds: kept as is
    assert len(instrs(out, Op.INDEX_ASSIGN)) == 2  # tile[4] = 2 is dropped; out[0] is guarded
    validated = lower_bounds(d, VALIDATE)
    (report, *_) = instrs(validated, Op.REPORT_OOB)
    assert report.args == (Const(1, Elem.U32), Const(4, Elem.U64), Const(4, Elem.U64))


@kernel
def access(x: Array[f32], out: Array[f32], counts: Array[u32], i: i32, j: i64):
    tile = SharedMemory(f32, 4)
    priv = LocalArray(u32, 2)
    out[0] = x[i]
    out[i] = 5.0
    tile[j] = 3.0
    out[1] = tile[j]
    priv[i] = 9
    counts[0] = priv[i]
    counts[1] = atomic_add(counts, j, 1)


def test_validate_adds_the_report_parameter_and_numbers_buffers():
    d = access.definition()
    assert report_names(d) == ("x", "out", "counts", "tile", "priv")
    out = lower_bounds(d, VALIDATE)
    verify(out)
    report = out.params[-1]
    assert (report.index, report.name, report.kind, report.elem) == (
        5,
        REPORT_PARAM,
        ParamKind.ARRAY,
        Elem.U32,
    )
    numbers = [i.args[0].value for i in instrs(out, Op.REPORT_OOB)]  # type: ignore[union-attr]
    assert numbers == [0, 1, 1, 3, 3, 1, 4, 4, 2, 2, 2]
    for r in instrs(out, Op.REPORT_OOB):
        assert [a.elem for a in r.args] == [Elem.U32, Elem.U64, Elem.U64]  # type: ignore[union-attr]
    assert out.metadata_layout()[3] == ("len", report, 0)


def test_lowering_is_deterministic_and_avoids_names_in_use():
    @kernel
    def clash(x: Array[f32], i: u32):
        _b0 = x[i]
        _b1 = _b0 + 1.0
        x[0] = _b1

    d = clash.definition()
    first, second = lower_bounds(d, VALIDATE), lower_bounds(d, VALIDATE)
    assert first == second and first.dump(True) == second.dump(True)
    names = [v.name for v in first.locals]
    assert len(names) == len(set(names))
    verify(first)


def _reference(x, out, counts, i, j):
    """``access`` in Python, with Checked semantics; returns the first out-of-bounds access."""
    first: list[tuple[int, int, int]] = []
    tile, priv = np.zeros(4, np.float32), np.zeros(2, np.uint32)

    def ok(no, arr, idx, bits):
        inside = 0 <= idx < arr.size
        if not inside and not first:
            first.append((no, idx % (1 << bits), arr.size))
        return inside

    out[0] = x[i] if ok(0, x, i, 32) else 0
    if ok(1, out, i, 32):
        out[i] = 5
    if ok(3, tile, j, 64):
        tile[j] = 3
    out[1] = tile[j] if ok(3, tile, j, 64) else 0
    if ok(4, priv, i, 32):
        priv[i] = 9
    counts[0] = priv[i] if ok(4, priv, i, 32) else 0
    old = 0
    if ok(2, counts, j, 64):
        old = counts[j]
        counts[j] += 1
    counts[1] = old
    return first


@settings(max_examples=60, deadline=None)
@given(
    i=st.one_of(st.integers(-3, 6), st.integers(-(2**31), 2**31 - 1)),
    j=st.one_of(st.integers(-3, 6), st.integers(-(2**63), 2**63 - 1)),
    mode=st.sampled_from([CHECKED, VALIDATE]),
)
def test_checked_kernels_never_leave_their_arrays(i, j, mode):
    d = lower_bounds(access.definition(), mode)
    x = np.array([1.5, 2.5, 3.5], np.float32)
    arrays = {"x": x, "out": np.zeros(4, np.float32), "counts": np.array([7, 8], np.uint32)}
    expected = {k: v.copy() for k, v in arrays.items()}
    first = _reference(expected["x"], expected["out"], expected["counts"], i, j)
    interp = Interp(d, arrays, {"i": i, "j": j}).run()  # raises OutOfBounds on a real escape
    for name, value in expected.items():
        np.testing.assert_array_equal(arrays[name], value)
    assert interp.reports == (first if mode is VALIDATE else [])


@pytest.mark.parametrize("mode", [CHECKED, VALIDATE])
def test_guards_sit_inside_control_flow_they_came_from(mode):
    @kernel
    def nested(x: Array[u32], n: u32):
        for k in range(n):
            if k > 2:
                x[k] = k
            while x[0] > 0:
                x[0] -= 1

    out = lower_bounds(nested.definition(), mode)
    verify(out)
    guarded = [
        s for s in walk(out.body) if isinstance(s, If) and s.then and isinstance(s.then[0], Instr)
    ]
    ops = [s.then[0].op for s in guarded if s.then[0].op in (Op.INDEX, Op.INDEX_ASSIGN)]  # type: ignore[union-attr]
    assert ops == [Op.INDEX_ASSIGN, Op.INDEX, Op.INDEX, Op.INDEX_ASSIGN]
