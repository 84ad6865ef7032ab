"""What the front end builds: names, locations, typing, control flow and specialisation."""

import inspect
import math

import numpy as np
import pytest

from ruda_core.ir import (
    Builtin,
    BuiltinKind,
    Const,
    Conversion,
    Elem,
    If,
    Instr,
    Local,
    Loop,
    Op,
    ParamKind,
    PrintFormat,
    RangeLoop,
    verify,
)
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    Comptime,
    ElemVar,
    Float,
    LocalArray,
    SharedMemory,
    Tensor,
    atomic_add,
    bool_,
    clamp,
    exp,
    f16,
    f32,
    f64,
    fma,
    i8,
    i32,
    i64,
    isinf,
    isnan,
    kernel,
    max,
    plane_all,
    plane_broadcast,
    plane_shuffle,
    plane_sum,
    round,
    rsqrt,
    u8,
    u32,
    u64,
    unroll,
)
from ruda_core.testing import samples
from ruda_core.testing.samples import block_sum

from .helpers import instrs, run, walk


def _line_of(fn: object, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_keeps_names_locations_and_declarations():
    d = block_sum.definition(BLOCK=256)
    assert [p.name for p in d.params] == ["x", "out"]
    assert [(p.read_only, p.kind) for p in d.params] == [
        (True, ParamKind.ARRAY),
        (False, ParamKind.ARRAY),
    ]
    assert [(s.name, s.elem, s.length) for s in d.shared] == [("smem", Elem.F32, 256)]
    names = {v.name for v in d.locals}
    assert {"i", "s"} <= names
    assert all(n in ("i", "s") or n.startswith("_") for n in names)
    first = d.body[0]
    assert isinstance(first, Instr) and first.out == Local("i", Elem.U32)
    assert first.loc is not None and first.loc.file == samples.__file__
    assert first.loc.line == _line_of(block_sum.fn, "i = ABSOLUTE_POS")
    assert all(s.loc is not None for s in walk(d.body))
    assert d.source is not None and d.source.line == _line_of(block_sum.fn, "def block_sum")
    verify(d)


def test_comptime_values_fold_and_specialisations_are_cached():
    d = block_sum.definition(BLOCK=64)
    init = next(i for i in instrs(d, Op.ASSIGN) if i.out is not None and i.out.name == "s")
    assert init.args == (Const(32, Elem.I32),)
    assert block_sum.definition(BLOCK=64) is d
    assert block_sum.definition(BLOCK=128) is not d
    assert d.fingerprint() != block_sum.definition(BLOCK=128).fingerprint()


def test_block_sum_runs_on_the_interpreter():
    d = block_sum.definition(BLOCK=1)
    out = np.zeros(1, np.float32)
    run(d, x=np.array([5.0], np.float32), out=out)
    assert out[0] == 5.0


@kernel
def guarded(x: Array[f32], out: Array[f32], i: u32):
    out[0] = x[i] if i < x.len() else f32(-1)
    out[1] = 1.0 if i < x.len() and x[i] > 0 else 2.0
    out[2] = 1.0 if i >= x.len() or x[i] > 0 else 2.0
    out[3] = 1.0 if i < x.len() else 2.0


def test_lazy_forms_never_index_the_unselected_side():
    d = guarded.definition()
    for i in (0, 1, 5, 2**32 - 1):
        out = np.zeros(4, np.float32)
        run(d, x=np.array([3.0, -1.0], np.float32), out=out, i=i)  # OutOfBounds would raise
        inside = i < 2
        value = [3.0, -1.0][i] if inside else None
        assert out[0] == (value if inside else -1.0)
        assert out[1] == (1.0 if inside and value > 0 else 2.0)
        assert out[2] == (1.0 if not inside or value > 0 else 2.0)
        assert out[3] == (1.0 if inside else 2.0)


def test_pure_conditional_expressions_stay_select_and_logic():
    d = guarded.definition()
    assert len(instrs(d, Op.SELECT)) == 3  # out[1], out[2] and out[3]; out[0] is an If
    assert len(instrs(d, Op.AND)) == 0 and len(instrs(d, Op.OR)) == 0


@kernel
def eager(a: u32, b: u32, c: u32, out: Array[u32]):
    out[0] = a if a < b and b < c else c


def test_and_of_pure_operands_is_an_and():
    d = eager.definition()
    assert len(instrs(d, Op.AND)) == 1
    assert not [s for s in walk(d.body) if isinstance(s, If)]


def _binop_kernel(ta: object, tb: object):
    @kernel
    def binop(a: ta, b: tb, out: Array[f32]):  # type: ignore[valid-type]
        r = a + b
        out[0] = f32(r)

    return binop.definition()


@pytest.mark.parametrize(
    ("ta", "tb", "result"),
    [
        (u32, i32, Elem.U32),
        (i32, u32, Elem.U32),
        (i64, u32, Elem.I64),
        (u64, i32, Elem.U64),
        (u8, i32, Elem.I32),
        (i8, u8, Elem.U8),
        (f16, f32, Elem.F32),
        (f64, f32, Elem.F64),
        (i64, f16, Elem.F16),
        (u32, f32, Elem.F32),
    ],
)
def test_binary_operands_meet_by_c_rules_with_explicit_casts(ta, tb, result):
    d = _binop_kernel(ta, tb)
    (add,) = instrs(d, Op.ADD)
    assert add.out is not None and add.out.elem is result
    assert all(a.elem is result for a in add.args)  # type: ignore[union-attr]
    casts = [i for i in instrs(d, Op.CAST) if i.out is not None and i.out.elem is result]
    assert len(casts) == (ta.elem is not result) + (tb.elem is not result)


@kernel
def literal_types(x: Array[f32], n: u32, out: Array[f32], k: Array[i32]):
    a = 0
    a = 1
    b = 0.5
    b = 1.5
    c = True
    c = False
    acc: f64 = 0
    acc += 1
    out[0] = x[0] * 2 + b
    k[0] = a if c else -1
    m = n - 1 if n > 0 else 7
    k[1] = i32(m)


def test_literal_typing():
    d = literal_types.definition()
    elems = {v.name: v.elem for v in d.locals}
    assert (elems["a"], elems["b"], elems["c"], elems["acc"], elems["m"]) == (
        Elem.I32,
        Elem.F32,
        Elem.BOOL,
        Elem.F64,
        Elem.U32,
    )
    (mul,) = instrs(d, Op.MUL)
    assert mul.args[1] == Const(2.0, Elem.F32)
    sub = instrs(d, Op.SUB)[0]
    assert sub.args[1] == Const(1, Elem.U32)


@kernel
def generic_axpy(x: Array[Float], y: Array[Float], alpha: Float):
    i = ABSOLUTE_POS
    if i < x.len():
        y[i] = alpha * x[i] + Float(1) + y[i]


def test_element_variables_specialise_per_binding():
    d32 = generic_axpy.definition(Float=f32)
    d64 = generic_axpy.definition(Float="f64")
    assert d32.params[2].elem is Elem.F32 and d64.params[2].elem is Elem.F64
    assert Const(1.0, Elem.F64) in instrs(d64, Op.ADD)[0].args
    assert generic_axpy.definition(Float=np.float32) is d32


F2 = ElemVar("F2", bound=Float)


@kernel
def two_vars(x: Array[Float], y: Array[F2]):
    y[0] = F2(x[0])


def test_declared_element_variables_bind_independently():
    d = two_vars.definition(Float=f16, F2=f64)
    (cast,) = instrs(d, Op.CAST)
    assert cast.out is not None and cast.out.elem is Elem.F64


@kernel
def loops(x: Array[f32], out: Array[f32], n: u32, t: Tensor[f32], STEP: Comptime[int]):
    for i in range(n):
        out[i] = x[i]
    for j in range(10, 0, -STEP):
        out[j] = 0.0
    offset = u32(0)
    for d in unroll(range(t.rank())):
        offset += t.stride(d) * t.shape(d)
    out[0] = t[offset]


def test_loops_unroll_and_tensor_metadata():
    d = loops.definition(STEP=2, t=3)
    ranges = [s for s in walk(d.body) if isinstance(s, RangeLoop)]
    assert [(r.var.name, r.var.elem, r.step) for r in ranges] == [
        ("i", Elem.U32, Const(1, Elem.U32)),
        ("j", Elem.I32, Const(-2, Elem.I32)),
    ]
    assert [i.args[1] for i in instrs(d, Op.STRIDE)] == [Const(k, Elem.U32) for k in range(3)]
    assert d.params[3].rank == 3
    assert d.metadata_layout()[3:] == tuple(
        (what, d.params[3], k) for what in ("shape", "stride") for k in range(3)
    )


@kernel
def control(out: Array[i32], n: i32):
    c = 0
    total = 0
    while c < n:
        c += 1
        if c % 3 == 0:
            continue
        if c > 10:
            break
        total += c
    out[0] = total
    for k in range(5):
        if k == 4:
            return
        out[1] = k


@pytest.mark.parametrize("n", [0, 1, 5, 20])
def test_while_break_continue_return(n):
    out = np.zeros(2, np.int32)
    run(control.definition(), out=out, n=n)
    assert out[0] == sum(c for c in range(1, min(n, 10) + 1) if c % 3)
    assert out[1] == 3


@kernel
def shared_local_atomics_plane(x: Array[f32], counts: Array[u32]):
    tile = SharedMemory(u32, 8)
    priv = LocalArray(f32, 4)
    priv[0] = x[0]
    old = atomic_add(tile, 1, 2)
    atomic_add(counts, 0, old)
    total = plane_sum(priv[0])
    x[1] = exp(total)


def test_arrays_atomics_and_plane_ops():
    d = shared_local_atomics_plane.definition()
    assert [(a.name, a.length) for a in d.shared] == [("tile", 8)]
    assert [(a.name, a.elem, a.length) for a in d.local_arrays] == [("priv", Elem.F32, 4)]
    first, second = instrs(d, Op.ATOMIC_ADD)
    assert first.out == Local("old", Elem.U32) and first.args[2] == Const(2, Elem.U32)
    assert second.out is None  # the result is unused
    assert [p.read_only for p in d.params] == [False, False]
    assert instrs(d, Op.PLANE_SUM)[0].out == Local("total", Elem.F32)


@kernel
def folded(out: Array[u32], BLOCK: Comptime[int], MODE: Comptime[str] = "sum"):
    if MODE == "sum":
        out[0] = min(BLOCK, 32) * 2
    else:
        out[0] = 0
    smem = SharedMemory(u32, max(BLOCK // 4, 1))
    smem[0] = 1


def test_comptime_if_and_builtins_fold():
    d = folded.definition(BLOCK=256)
    (store, _) = instrs(d, Op.INDEX_ASSIGN)
    assert store.args[2] == Const(64, Elem.U32)
    assert d.shared[0].length == 64
    other = folded.definition(BLOCK=256, MODE="other")
    assert instrs(other, Op.INDEX_ASSIGN)[0].args[2] == Const(0, Elem.U32)
    assert folded.definition(BLOCK=True) is not folded.definition(BLOCK=1)


@kernel
def retarget(x: Array[f32], out: Array[f32]):
    y = x[0] + x[1]
    out[0] = y


def test_results_are_written_directly_into_named_locals():
    d = retarget.definition()
    (add,) = instrs(d, Op.ADD)
    assert add.out == Local("y", Elem.F32)
    assert not instrs(d, Op.ASSIGN)
    assert "y" in {v.name for v in d.locals}


@kernel
def builtins_and_casts(out: Array[u32], f: Array[f32]):
    out[0] = u32(-1)
    out[1] = u32(f[0])
    out[2] = ABSOLUTE_POS
    f[1] = f32(3)


def test_explicit_casts_convert_like_cast():
    d = builtins_and_casts.definition()
    stores = instrs(d, Op.INDEX_ASSIGN)
    assert stores[0].args[2] == Const(2**32 - 1, Elem.U32)
    assert stores[2].args[2] == Builtin(BuiltinKind.ABSOLUTE_POS)
    assert stores[3].args[2] == Const(3.0, Elem.F32)
    assert len(instrs(d, Op.CAST)) == 1


def test_every_loop_is_structured():
    d = block_sum.definition(BLOCK=8)
    loops_ = [s for s in walk(d.body) if isinstance(s, Loop)]
    assert len(loops_) == 1
    head = loops_[0].body[:3]
    assert [type(s) for s in head] == [Instr, Instr, If]  # test, negate, leave


SCALES = (1, 2, 4)


def _with_closure(offset: int):
    @kernel
    def closure(out: Array[f32]):
        a = b = out[0] + offset
        for s in SCALES:
            out[s] = a * s + math.pi + b

    return closure


def test_closures_module_constants_tuples_and_chained_targets():
    d = _with_closure(3).definition()
    (add, *_) = instrs(d, Op.ADD)
    assert add.args[1] == Const(3.0, Elem.F32)
    copies = instrs(d, Op.ASSIGN)  # both targets read the one result
    assert [(c.out.name, c.args) for c in copies] == [("a", (add.out,)), ("b", (add.out,))]  # type: ignore[union-attr]
    stores = instrs(d, Op.INDEX_ASSIGN)
    assert [s.args[1] for s in stores] == [Const(k, Elem.U32) for k in SCALES]
    assert Const(float(np.float32(math.pi)), Elem.F32) in instrs(d, Op.ADD)[1].args


@kernel
def intrinsics(x: Array[f32], out: Array[f32], flags: Array[bool_], n: u32):
    v = x[0]
    out[0] = clamp(fma(v, v, 1.0), 0.0, 10.0)
    out[1] = round(v) + abs(v) + max(v, 2.0, x[1]) + rsqrt(v) + v**2
    flags[0] = isnan(v) or isinf(v)
    out[2] = plane_broadcast(v, 3) + plane_shuffle(v, n)
    flags[1] = plane_all(v > 0.0)


def test_intrinsics_map_to_their_operations():
    d = intrinsics.definition()
    ops = [i.op for i in instrs(d) if i.op not in (Op.INDEX, Op.INDEX_ASSIGN, Op.ADD)]
    assert ops == [
        Op.FMA,
        Op.CLAMP,
        Op.ROUND,
        Op.ABS,
        Op.MAX,
        Op.MAX,
        Op.RSQRT,
        Op.POW,
        Op.ISNAN,
        Op.ISINF,
        Op.OR,
        Op.PLANE_BROADCAST,
        Op.PLANE_SHUFFLE,
        Op.GT,
        Op.PLANE_ALL,
    ]
    (broadcast,) = instrs(d, Op.PLANE_BROADCAST)
    assert broadcast.args[1] == Const(3, Elem.U32)


@kernel
def prints(x: Array[f32], n: i32, WIDTH: Comptime[int]):
    print("n", n, f"x[0]={x[0]:8.3f} {n:<5d}!", WIDTH, sep=", ", end=".")
    if n > 0:
        print(f"{WIDTH:03d} {n + 1}")


def test_print_folds_compile_time_text_and_keeps_one_conversion_per_value():
    d = prints.definition(WIDTH=7)
    first, second = instrs(d, Op.PRINT)
    assert first.format == PrintFormat(
        ("n, ", ", x[0]=", " ", "!, 7."),
        (Conversion(), Conversion(width=8, precision=3, kind="f"), Conversion("-", 5, None, "d")),
    )
    assert first.args[0] == d.params[1] and first.args[2] == d.params[1]
    assert second.format == PrintFormat(("007 ", "\n"), (Conversion(),))
    assert "print('007 {}\\n', " in d.dump()
