"""The IR verifier: hand-built definitions, and front-end output under random programs."""

import itertools
import linecache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ruda_core.lang as lang
from ruda_core.ir import (
    Break,
    Builtin,
    BuiltinKind,
    Const,
    Continue,
    Conversion,
    Elem,
    If,
    Instr,
    KernelDefinition,
    Local,
    LocalArray,
    Loop,
    Op,
    Param,
    ParamKind,
    PrintFormat,
    RangeLoop,
    Return,
    SharedArray,
    SourceLoc,
    lower_bounds,
    verify,
)
from ruda_core.runtime import CompilationError, ExecutionMode

F32, I32, U32, U64, BOOL = Elem.F32, Elem.I32, Elem.U32, Elem.U64, Elem.BOOL
X = Param(0, "x", ParamKind.ARRAY, F32)
T = Param(1, "t", ParamKind.TENSOR, F32, rank=2)
N = Param(2, "n", ParamKind.SCALAR, U32)
X_I32 = Param(0, "x", ParamKind.ARRAY, I32)
A, IDX, B, K = Local("a", F32), Local("i", U32), Local("b", BOOL), Local("k", I32)
SMEM = SharedArray("smem", F32, 16)
PRIV = LocalArray("priv", U32, 4)
LOC = SourceLoc("kernel.py", 7)


def defn(*body, locals_=(A, IDX, B, K), params=(X, T, N), shared=(SMEM,), local_arrays=(PRIV,)):
    return KernelDefinition("k", params, locals_, shared, local_arrays, tuple(body))


def ins(op, out, *args, loc=None):
    return Instr(op, out, args, loc)


def printing(fmt, *args):
    return Instr(Op.PRINT, None, args, None, fmt)


ONE_VALUE = PrintFormat(("a=", "\n"), (Conversion(),))


VALID = defn(
    ins(Op.ASSIGN, IDX, Builtin(BuiltinKind.ABSOLUTE_POS)),
    ins(Op.INDEX, A, X, IDX),
    ins(Op.LT, B, IDX, N),
    If(B, (ins(Op.INDEX_ASSIGN, None, SMEM, Const(3, U32), A),), (Return(),)),
    ins(Op.SHAPE, IDX, T, Const(1, U32)),
    ins(Op.CAST, K, IDX),
    RangeLoop(K, Const(0, I32), K, Const(-1, I32), (ins(Op.ADD, A, A, A), Continue())),
    Loop((ins(Op.ATOMIC_ADD, None, SMEM, K, A), Break())),
    ins(Op.ATOMIC_CAS, A, X, IDX, A, A),
    ins(Op.PLANE_BROADCAST, A, A, IDX),
    ins(Op.INDEX_ASSIGN, None, PRIV, K, IDX),
    ins(Op.REPORT_OOB, None, Const(1, U32), Const(5, U64), Const(3, U64)),
    ins(Op.ISNAN, B, A),
    ins(Op.SELECT, A, B, A, Const(0.0, F32)),
    ins(Op.SYNC_UNITS, None),
)


def test_a_print_format_has_one_more_piece_of_text_than_values():
    with pytest.raises(ValueError, match="a print of 1 values has 2 pieces of text, not 1"):
        PrintFormat(("x",), (Conversion(),))


def test_a_valid_definition_passes():
    verify(VALID)


INVALID = [
    (defn(locals_=(Local("x", F32),)), "name 'x' is declared twice"),
    (defn(params=(X, Param(5, "t", ParamKind.TENSOR, F32, rank=1))), "has index 5 at position 1"),
    (defn(params=(Param(0, "x", ParamKind.ARRAY, F32, rank=1),)), "only tensors"),
    (defn(shared=(SharedArray("s", F32, 0),)), "length 0"),
    (defn(ins(Op.ASSIGN, Local("z", F32), A)), "local 'z: f32' is not declared"),
    (defn(ins(Op.ADD, A, A, K)), "operands of one type, got f32, i32"),
    (defn(ins(Op.ADD, K, A, A)), "add gives f32, but its result 'k' is i32"),
    (defn(ins(Op.DIV, K, K, K)), "div .* is i32; expected .*f32"),
    (defn(ins(Op.ADD, A, X, A)), "array parameter 'x' used as a scalar"),
    (defn(ins(Op.INDEX, IDX, N, IDX)), "scalar parameter 'n' used as an array"),
    (defn(ins(Op.INDEX, A, X, A)), "an index is f32"),
    (defn(ins(Op.INDEX_ASSIGN, None, X, IDX, K)), "the stored value is i32; expected f32"),
    (defn(ins(Op.INDEX_ASSIGN, A, X, IDX, A)), "has no result, yet writes 'a'"),
    (defn(ins(Op.SHAPE, IDX, T, Const(2, U32))), "axis 2 is out of range for tensor 't' of rank 2"),
    (defn(ins(Op.SHAPE, IDX, X, Const(0, U32))), "needs a tensor parameter"),
    (defn(ins(Op.STRIDE, IDX, T, IDX)), "needs a constant integer axis"),
    (defn(ins(Op.LEN, IDX, SMEM)), "not an array this operation accepts"),
    (defn(Break()), "break outside a loop"),
    (defn(If(B, (Continue(),))), "continue outside a loop"),
    (defn(If(K, ())), "an if condition is i32"),
    (defn(RangeLoop(A, A, A, Const(1.0, F32), ())), "must be an integer"),
    (defn(RangeLoop(K, Const(0, I32), K, Const(0, I32), ())), "non-zero constant"),
    (defn(RangeLoop(K, Const(0, U32), K, Const(1, I32), ())), "the range start is u32"),
    (defn(ins(Op.ATOMIC_ADD, None, PRIV, IDX, IDX)), "not local array 'priv'"),
    (defn(ins(Op.ATOMIC_AND, None, X, IDX, A)), "atomic_and's array is f32"),
    (defn(ins(Op.ASSIGN, IDX, Const(-1, U32))), "constant -1 is not a value of u32"),
    (defn(ins(Op.ASSIGN, A, Const(1, F32))), "constant 1 is not a value of f32"),
    (defn(ins(Op.ASSIGN, B, Const(1, BOOL))), "constant 1 is not a value of bool"),
    (defn(ins(Op.INDEX, A, SharedArray("other", F32, 4), IDX)), "'other' is not declared"),
    (defn(ins(Op.INDEX, IDX, LocalArray("priv", U32, 5), IDX)), "'priv' is not declared"),
    (
        defn(ins(Op.INDEX, A, Param(0, "x", ParamKind.ARRAY, F32, read_only=True), IDX)),
        "as declared",
    ),
    (defn(ins(Op.REPORT_OOB, None, Const(1, U32), IDX, IDX)), "the reported index is u32"),
    (defn(ins(Op.PLANE_SHUFFLE, A, A, K)), "the lane of plane_shuffle is i32"),
    (defn(ins(Op.PLANE_SHUFFLE_XOR, A, A, A)), "the lane of plane_shuffle_xor is f32"),
    (defn(ins(Op.PLANE_BALLOT, IDX, IDX)), "plane_ballot \\(bool\\) is u32"),
    (defn(ins(Op.PLANE_BALLOT, B, B)), "plane_ballot gives u32, but its result 'b' is bool"),
    (defn(ins(Op.PLANE_ELECT, B, B)), "plane_elect takes 0 operands, got 1"),
    (defn(ins(Op.SYNC_UNITS_COUNT, B, B)), "gives u32, but its result 'b' is bool"),
    (defn(ins(Op.SYNC_UNITS_AND, B, IDX)), "sync_units_and \\(bool\\) is u32"),
    (defn(ins(Op.FENCE_DEVICE, B)), "fence_device has no result"),
    (defn(ins(Op.ATOMIC_INC_WRAP, None, X, IDX, A)), "atomic_inc_wrap's array is f32"),
    (
        defn(ins(Op.ATOMIC_DEC_WRAP, None, X_I32, IDX, K), params=(X_I32,)),
        "atomic_dec_wrap's array is i32; expected u32",
    ),
    (defn(ins(Op.ATOMIC_LOAD, A, X, IDX, A)), "takes 2 operands, got 3"),
    (defn(ins(Op.ADD, None, A, A)), "add needs a result local"),
    (defn(ins(Op.EQ, B, B, B), ins(Op.AND, B, B, IDX)), "operands of one type, got bool, u32"),
    (defn(ins(Op.PRINT, None, A)), "print needs a print format"),
    (defn(Instr(Op.ADD, A, (A, A), None, ONE_VALUE)), "add takes no print format"),
    (defn(printing(ONE_VALUE, A, A)), "one conversion per value"),
    (defn(printing(ONE_VALUE, X)), "array parameter 'x' used as a scalar"),
    (defn(printing(PrintFormat(("", ""), (Conversion(kind="x"),)), K)), "cast i32 to an unsigned"),
    (defn(printing(PrintFormat(("", ""), (Conversion(width=3),)), B)), "a bool takes no format"),
    (
        defn(printing(PrintFormat(("", ""), (Conversion(flags="0-"),)), A)),
        "not some of '-\\+ 0' in that order",
    ),
    (
        defn(printing(PrintFormat(("",) * 34, (Conversion(),) * 33), *(A,) * 33)),
        "at most 32 values, got 33",
    ),
]


@pytest.mark.parametrize(("definition", "match"), INVALID)
def test_invalid_definitions_are_refused(definition, match):
    with pytest.raises(CompilationError, match=match):
        verify(definition)


def test_errors_point_at_the_statement():
    bad = defn(ins(Op.ASSIGN, IDX, IDX), Loop((ins(Op.ADD, A, A, K, loc=LOC),)))
    with pytest.raises(CompilationError) as info:
        verify(bad)
    assert (info.value.file, info.value.line) == ("kernel.py", 7)
    assert str(info.value).startswith("kernel.py:7: invalid IR in kernel 'k'")


# -- random front-end programs ---------------------------------------------------------------

_VARS = {"a": "f32", "b": "i32", "c": "u32", "d": "f64", "e": "u8", "g": "i64"}
_counter = itertools.count()


def _num(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.sampled_from(sorted(_VARS)),
        st.sampled_from(["1", "0", "2.5", "x[c]", "x[b]", "N", "x.len()"]),
    )
    if depth == 0:
        return leaf
    sub = _num(depth - 1)
    binary = st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "//", "%"]), sub)
    return st.one_of(
        leaf,
        binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, _bool(depth - 1), sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["f32", "i32", "u32", "f64", "u8"]), sub).map(
            lambda t: f"{t[0]}({t[1]})"
        ),
        sub.map(lambda s: f"(-{s})"),
        st.tuples(sub, sub).map(lambda t: f"max({t[0]}, {t[1]})"),
    )


def _bool(depth: int) -> st.SearchStrategy[str]:
    compare = st.tuples(_num(depth), st.sampled_from(["<", "==", ">="]), _num(depth))
    leaf = st.one_of(st.just("True"), compare.map(lambda t: f"({t[0]} {t[1]} {t[2]})"))
    if depth == 0:
        return leaf
    sub = _bool(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["and", "or", "&"]), sub).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        sub.map(lambda s: f"(not {s})"),
    )


def _compile(statements: list[str]):
    params = ", ".join(f"{k}: {v}" for k, v in _VARS.items())
    body = "\n".join(f"    {s}" for s in statements)
    source = f"def fuzz(x: Array[f32], out: Array[f64], {params}, N: Comptime[int]):\n{body}\n"
    filename = f"<fuzz-{next(_counter)}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    namespace = dict(vars(lang))
    exec(compile(source, filename, "exec"), namespace)
    return lang.kernel(namespace["fuzz"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    exprs=st.lists(_num(3), min_size=1, max_size=3),
    cond=_bool(2),
    mode=st.sampled_from(list(ExecutionMode)),
)
def test_front_end_output_always_verifies(exprs, cond, mode):
    statements = [f"t{k} = {e}" for k, e in enumerate(exprs)]
    statements += [f"if {cond}:", f"    out[c] = f64({exprs[-1]})", "else:", "    out[0] = f64(t0)"]
    k = _compile(statements)
    try:
        definition = k.definition(N=3)  # verify runs inside the front end
    except CompilationError as exc:
        assert exc.file is not None and exc.file.startswith("<fuzz-")
        assert exc.line is not None and 2 <= exc.line <= len(statements) + 1
        return
    verify(lower_bounds(definition, mode))
