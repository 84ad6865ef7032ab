"""Python expressions for single IR instructions, over lockstep values.

``expression(ins, ctx)`` returns the right-hand side for ``ins.out`` (or a statement for
instructions without a result). NumPy operators are used where they already have the IR's
meaning in the operand's element type (NEP 50: NumPy scalars never change the type);
operations that need more (lane vectors, masks, memory, atomics, planes) call the lockstep
runtime ``L``. ``bf16`` values are ``ml_dtypes.bfloat16`` (named ``bfloat16`` in the generated
module), whose operators and math functions compute in ``f32`` and round once to nearest even,
as NumPy's do for ``f16``; the composite ``//``, ``%`` and ``rsqrt`` of both are written out in
``f32`` and rounded once. This module only renders text.
"""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from ruda_core.ir import (
    ATOMIC_OPS,
    BARRIER_OPS,
    MATRIX_OPS,
    SYNC_REDUCE_OPS,
    WARPGROUP_OPS,
    Const,
    Elem,
    Fragment,
    Instr,
    Local,
    LocalArray,
    Op,
    Param,
    PrintFormat,
    SharedArray,
)
from ruda_core.runtime import CompilationError

__all__ = ["BARRIERS", "WARPGROUPS", "Context", "dtype", "expression", "is_fresh", "literal"]

#: Floats computed in f32 and rounded once per operation (ops.py).
_NARROW = frozenset({Elem.F16, Elem.BF16})


class Context(Protocol):
    """What rendering needs from the code generator."""

    def ref(self, x: object) -> str:
        """The Python name of a local, parameter, builtin, metadata slot or array."""

    def is_lanes(self, x: object) -> bool:
        """Whether ``x`` may hold a Lanes value at run time."""

    def is_written(self, p: Param) -> bool:
        """Whether the kernel stores to (or atomically updates) array parameter ``p``."""

    def report(self) -> str:
        """The name of the Validate report buffer (the bounds pass's hidden parameter)."""

    def is_transient(self, ins: Instr) -> bool:
        """Whether ``ins`` loads shared memory into a value that nothing observes after the
        memory is next written (a temporary that one NumPy operation consumes, or a local read
        only before that write), so that the load may give a view of it."""


class _WarpgroupState:
    """The key of the generated name of the batch's warpgroup state (``L.warpgroups``)."""

    name = "_warpgroups"


#: ``ctx.ref(WARPGROUPS)`` names the batch's ``Warpgroups`` in a kernel that uses ``wgmma``.
WARPGROUPS = _WarpgroupState()


class _BarrierState:
    """The key of the generated name of the batch's barrier state (``L.barriers``)."""

    name = "_barriers"


#: ``ctx.ref(BARRIERS)`` names the batch's ``Barriers`` in a kernel that uses ``mbarrier``.
BARRIERS = _BarrierState()


def dtype(elem: Elem) -> str:
    """The generated module's name of ``elem``'s scalar type (``np.float32``, ``bfloat16`` …)."""
    return "bfloat16" if elem is Elem.BF16 else f"np.{elem.numpy.name}"


def literal(c: Const) -> str:
    """A NumPy scalar expression of ``c``'s value, rounded once to its element type."""
    if c.elem is Elem.BOOL:
        return "np.True_" if c.value else "np.False_"
    ctor = dtype(c.elem)
    if c.elem.is_float:
        v = float(c.value)
        if c.elem is Elem.BF16:  # the text is then exact, whatever the constructor rounds
            with np.errstate(over="ignore"):
                v = float(np.float64(v).astype(c.elem.numpy))
        text = repr(v) if v == v and v not in (float("inf"), float("-inf")) else f"'{v}'"
        return f"{ctor}({text})"
    return f"{ctor}({int(c.value)})"


_OPERATORS = {
    Op.ADD: "+",
    Op.SUB: "-",
    Op.MUL: "*",
    Op.DIV: "/",
    Op.EQ: "==",
    Op.NE: "!=",
    Op.LT: "<",
    Op.LE: "<=",
    Op.GT: ">",
    Op.GE: ">=",
    Op.AND: "&",
    Op.OR: "|",
    Op.BIT_AND: "&",
    Op.BIT_OR: "|",
    Op.BIT_XOR: "^",
}
#: Binary operations whose lockstep helper keeps lane vectors symbolic (the bitwise ones,
#: integer ``// %`` and ``min max`` keep a vector over one cube's units so).
_LANES_HELPERS = {
    Op.ADD: "add",
    Op.SUB: "sub",
    Op.MUL: "mul",
    Op.BIT_AND: "bit_and",
    Op.BIT_OR: "bit_or",
    Op.BIT_XOR: "bit_xor",
    Op.FLOOR_DIV: "floor_div",
    Op.MOD: "mod",
    Op.MIN: "minimum",
    Op.MAX: "maximum",
    Op.EQ: "eq",
    Op.NE: "ne",
    Op.LT: "lt",
    Op.LE: "le",
    Op.GT: "gt",
    Op.GE: "ge",
}
_UNARY_FUNCS = {
    Op.EXP: "np.exp",
    Op.EXP2: "np.exp2",
    Op.LOG: "np.log",
    Op.LOG2: "np.log2",
    Op.LOG1P: "np.log1p",
    Op.SQRT: "np.sqrt",
    Op.RECIP: "np.reciprocal",
    Op.SIN: "np.sin",
    Op.COS: "np.cos",
    Op.TAN: "np.tan",
    Op.TANH: "np.tanh",
    Op.ERF: "L.erf",
    Op.ERFC: "L.erfc",
    Op.LGAMMA: "L.lgamma",
    Op.EXPM1: "np.expm1",
    Op.LOG10: "np.log10",
    Op.CBRT: "np.cbrt",
    Op.ASIN: "np.arcsin",
    Op.ACOS: "np.arccos",
    Op.ATAN: "np.arctan",
    Op.SINH: "np.sinh",
    Op.COSH: "np.cosh",
    Op.ASINH: "np.arcsinh",
    Op.ACOSH: "np.arccosh",
    Op.ATANH: "np.arctanh",
    Op.FLOOR: "np.floor",
    Op.CEIL: "np.ceil",
    Op.ROUND: "np.rint",
    Op.TRUNC: "np.trunc",
    Op.ISNAN: "np.isnan",
    Op.ISINF: "np.isinf",
    Op.ISFINITE: "np.isfinite",
    Op.POPCOUNT: "L.popcount",
    Op.LEADING_ZEROS: "L.leading_zeros",
    Op.TRAILING_ZEROS: "L.trailing_zeros",
    Op.FIND_FIRST_SET: "L.find_first_set",
    Op.REVERSE_BITS: "L.reverse_bits",
    Op.ABS: "np.abs",
}
_BINARY_FUNCS = {
    Op.POW: "L.power",
    Op.ATAN2: "np.arctan2",
    Op.HYPOT: "np.hypot",
    Op.FMOD: "np.fmod",
    Op.REMAINDER: "L.remainder",
    Op.COPYSIGN: "np.copysign",
    Op.MUL_HI: "L.mul_hi",
    Op.SATURATING_ADD: "L.saturating_add",
    Op.SATURATING_SUB: "L.saturating_sub",
}
_ATOMIC_HELPERS = {
    Op.ATOMIC_SWAP: "atomic_swap",
    Op.ATOMIC_ADD: "atomic_add",
    Op.ATOMIC_SUB: "atomic_sub",
    Op.ATOMIC_MIN: "atomic_min",
    Op.ATOMIC_MAX: "atomic_max",
    Op.ATOMIC_AND: "atomic_and",
    Op.ATOMIC_OR: "atomic_or",
    Op.ATOMIC_XOR: "atomic_xor",
    Op.ATOMIC_CAS: "atomic_cas",
    Op.ATOMIC_INC_WRAP: "atomic_inc_wrap",
    Op.ATOMIC_DEC_WRAP: "atomic_dec_wrap",
}
_PLANE_HELPERS = {
    Op.PLANE_SUM: "plane_sum",
    Op.PLANE_PROD: "plane_prod",
    Op.PLANE_MIN: "plane_min",
    Op.PLANE_MAX: "plane_max",
    Op.PLANE_ALL: "plane_all",
    Op.PLANE_ANY: "plane_any",
    Op.PLANE_BROADCAST: "plane_broadcast",
    Op.PLANE_SHUFFLE: "plane_shuffle",
    Op.PLANE_INCLUSIVE_SUM: "plane_inclusive_sum",
    Op.PLANE_EXCLUSIVE_SUM: "plane_exclusive_sum",
    Op.PLANE_BALLOT: "plane_ballot",
    Op.PLANE_ELECT: "plane_elect",
    Op.PLANE_SHUFFLE_UP: "plane_shuffle_up",
    Op.PLANE_SHUFFLE_DOWN: "plane_shuffle_down",
    Op.PLANE_SHUFFLE_XOR: "plane_shuffle_xor",
}
#: Operations that only order or synchronise: every lane of a batch is already there together
#: and sees every earlier access.
_NO_CODE = {
    Op.SYNC_UNITS: "sync_units(): the lanes of every cube are here together",
    Op.SYNC_PLANE: "sync_plane(): the lanes of every plane are here together",
    Op.FENCE_UNITS: "fence_units(): lockstep accesses are already in program order",
    Op.FENCE_DEVICE: "fence_device(): lockstep accesses are already in program order",
}


def _operand(x: object, ctx: Context, keep_lanes: bool = False) -> str:
    if isinstance(x, Const):
        return literal(x)
    name = ctx.ref(x)
    if not keep_lanes and ctx.is_lanes(x):
        return f"L.arr({name})"
    return name


def _is_memory(x: object) -> bool:
    return isinstance(x, SharedArray | LocalArray)


def _load(ins: Instr, ctx: Context, mask: str) -> str:
    target, idx = ins.args[0], _operand(ins.args[1], ctx, keep_lanes=True)
    if _is_memory(target):
        view = ", True" if ctx.is_transient(ins) else ""
        return f"L.load_seg({ctx.ref(target)}, {idx}, {mask}{view})"
    if ins.op is Op.INDEX and isinstance(target, Param) and not ctx.is_written(target):
        return f"L.load_ro(g, {ctx.ref(target)}, {idx})"
    return f"L.load({ctx.ref(target)}, {idx})"


def _memory(ins: Instr, ctx: Context, mask: str) -> str:
    if ins.op in (Op.INDEX, Op.ATOMIC_LOAD):
        return _load(ins, ctx, mask)
    args = [_operand(a, ctx, keep_lanes=True) for a in ins.args[1:]]
    target = ctx.ref(ins.args[0])
    if ins.op in (Op.INDEX_ASSIGN, Op.ATOMIC_STORE):
        helper = "store_seg" if _is_memory(ins.args[0]) else "store"
        return f"L.{helper}({target}, {', '.join(args)}, {mask})"
    fetch = ins.out is not None
    return f"L.{_ATOMIC_HELPERS[ins.op]}(g, {target}, {', '.join(args)}, {mask}, {fetch})"


def _arith(ins: Instr, ctx: Context) -> str:
    op, elem = ins.op, ins.args[0].elem
    lanes = any(ctx.is_lanes(a) for a in ins.args)
    if lanes and op in _LANES_HELPERS:
        a, b = (_operand(x, ctx, keep_lanes=True) for x in ins.args)
        return f"L.{_LANES_HELPERS[op]}({a}, {b})"
    ops = [_operand(x, ctx) for x in ins.args]
    if op in (Op.AND, Op.OR):
        return f"L.logical_{op.value.lower()}({ops[0]}, {ops[1]})"
    if op in _OPERATORS:
        return f"{ops[0]} {_OPERATORS[op]} {ops[1]}"
    if op in (Op.FLOOR_DIV, Op.MOD) and not elem.is_float:
        return f"{ops[0]} {'//' if op is Op.FLOOR_DIV else '%'} {ops[1]}"
    if op in (Op.FLOOR_DIV, Op.MOD) and elem in _NARROW:  # in f32, rounded once (ops.py)
        a, b = f"np.float32({ops[0]})", f"np.float32({ops[1]})"
        q = f"np.floor({a} / {b})"
        return f"({q if op is Op.FLOOR_DIV else f'{a} - {q} * {b}'}).astype({dtype(elem)})"
    if op is Op.FLOOR_DIV:
        return f"np.floor({ops[0]} / {ops[1]})"
    if op is Op.MOD:
        return f"{ops[0]} - np.floor({ops[0]} / {ops[1]}) * {ops[1]}"
    if op in _BINARY_FUNCS:
        return f"{_BINARY_FUNCS[op]}({ops[0]}, {ops[1]})"
    if op in (Op.MIN, Op.MAX):
        fn = ("fmin" if op is Op.MIN else "fmax") if elem.is_float else op.value + "imum"
        return f"np.{fn}({ops[0]}, {ops[1]})"
    if op in (Op.SHL, Op.SHR):
        bits = literal(Const(elem.bits - 1, elem))
        return f"{ops[0]} {'<<' if op is Op.SHL else '>>'} ({ops[1]} & {bits})"
    raise CompilationError(f"the NumPy device has no rule for {op}")  # unreachable if verified


def is_fresh(ins: Instr, ctx: Context) -> bool:
    """Whether :func:`expression` renders ``ins`` as a NumPy operator or function of its
    operands, whose array result (when it is one) is new and shared with no other value."""
    op = ins.op
    if op in _OPERATORS:
        return not (op in _LANES_HELPERS and any(ctx.is_lanes(a) for a in ins.args))
    if op in _UNARY_FUNCS:
        return _UNARY_FUNCS[op].startswith("np.")
    if op in _BINARY_FUNCS:
        return _BINARY_FUNCS[op].startswith("np.")
    if op in (Op.MIN, Op.MAX):  # np.fmin, np.minimum … unless a lockstep helper keeps lanes
        return not any(ctx.is_lanes(a) for a in ins.args)
    return op in (Op.NEG, Op.NOT, Op.BIT_NOT)


def expression(ins: Instr, ctx: Context, mask: str) -> str:
    """The Python text computing ``ins`` for the lanes of ``mask`` (an expression)."""
    op = ins.op
    args = ins.args
    if op is Op.ASSIGN:
        return _operand(args[0], ctx, keep_lanes=True)
    if op is Op.CAST:
        return _cast(ins, ctx)
    if op is Op.BITCAST:
        return f"L.bitcast({_operand(args[0], ctx)}, {dtype(cast(Local, ins.out).elem)})"
    if op is Op.SELECT:
        c, a, b = (_operand(x, ctx, keep_lanes=True) for x in args)
        return f"L.select({c}, {a}, {b})"
    if op in _UNARY_FUNCS:
        return f"{_UNARY_FUNCS[op]}({_operand(args[0], ctx)})"
    if op is Op.RSQRT and args[0].elem in _NARROW:
        wide = f"np.float32({_operand(args[0], ctx)})"
        return f"(np.float32(1) / np.sqrt({wide})).astype({dtype(args[0].elem)})"
    if op is Op.RSQRT:
        return f"np.reciprocal(np.sqrt({_operand(args[0], ctx)}))"
    if op in (Op.NEG, Op.NOT, Op.BIT_NOT):
        return f"{'-' if op is Op.NEG else '~'}{_operand(args[0], ctx)}"
    if op is Op.FMA:
        return f"L.fma({', '.join(_operand(a, ctx) for a in args)})"
    if op is Op.CLAMP:
        x, lo, hi = (_operand(a, ctx) for a in args)
        lo_fn, hi_fn = ("fmax", "fmin") if args[0].elem.is_float else ("maximum", "minimum")
        return f"np.{hi_fn}(np.{lo_fn}({x}, {lo}), {hi})"
    if op is Op.LEN:
        return ctx.ref(("len", args[0]))
    if op in (Op.SHAPE, Op.STRIDE):
        return ctx.ref((op.value, args[0], int(cast(Const, args[1]).value)))
    if op is Op.RANK:
        return literal(Const(cast(Param, args[0]).rank, Elem.U32))
    if op in (Op.INDEX, Op.INDEX_ASSIGN) or op in ATOMIC_OPS:
        return _memory(ins, ctx, mask)
    if op in _PLANE_HELPERS or op in SYNC_REDUCE_OPS:
        helper = _PLANE_HELPERS.get(op, op.value)
        operands = [_operand(a, ctx, keep_lanes=True) for a in args]
        return f"L.{helper}({', '.join(['g', *operands, mask])})"
    if op in MATRIX_OPS:
        return _matrix(ins, ctx, mask)
    if op in WARPGROUP_OPS:
        return _warpgroup(ins, ctx, mask)
    if op in BARRIER_OPS:  # a call on the batch's barrier state (see ``lockstep.barrier``)
        operands = [_operand(a, ctx, keep_lanes=True) for a in args]
        return f"L.{op.value}(g, {', '.join([ctx.ref(BARRIERS), *operands, mask])})"
    if op in _NO_CODE:
        return f"pass  # {_NO_CODE[op]}"
    if op is Op.REPORT_OOB:
        values = ", ".join(_operand(a, ctx, keep_lanes=True) for a in args)
        return f"L.report_oob({ctx.report()}, {mask}, {values})"
    if op is Op.PRINT:
        fmt = cast(PrintFormat, ins.format).printf([a.elem for a in args], lambda e: "")
        values = "".join(f", {_operand(a, ctx, keep_lanes=True)}" for a in args)
        return f"L.print_lanes(g, {mask}, {fmt!r}{values})"
    return _arith(ins, ctx)


def _matrix(ins: Instr, ctx: Context, mask: str) -> str:
    """A cooperative-matrix operation: a call that updates its fragment in place."""
    args = ins.args
    ref = ctx.ref
    if ins.op is Op.CMMA_FILL:
        frag = cast(Fragment, args[0])
        value = _operand(args[1], ctx, keep_lanes=True)
        return f"L.matrix_fill(g, {ref(frag)}, {value}, {mask}, {frag.tf32})"
    if ins.op is Op.CMMA_LOAD:
        frag = cast(Fragment, args[0])
        offset, stride = (_operand(a, ctx, keep_lanes=True) for a in args[2:4])
        layout = cast(Const, args[4]).value
        return (
            f"L.matrix_load(g, {ref(frag)}, {ref(args[1])}, {offset}, {stride}, {layout}, "
            f"{mask}, {frag.tf32})"
        )
    if ins.op is Op.CMMA_STORE:
        offset, stride = (_operand(args[k], ctx, keep_lanes=True) for k in (1, 3))
        layout = cast(Const, args[4]).value
        return (
            f"L.matrix_store(g, {ref(args[0])}, {offset}, {ref(args[2])}, {stride}, {layout}, "
            f"{mask})"
        )
    frags = ", ".join(ref(a) for a in args)
    helper = "matrix_execute" if ins.op is Op.CMMA_EXECUTE else "matrix_cast"
    return f"L.{helper}(g, {frags}, {mask})"


def _warpgroup(ins: Instr, ctx: Context, mask: str) -> str:
    """A warpgroup matrix operation: a call on the batch's warpgroup state (see
    ``lockstep.warpgroup``)."""
    args = ins.args
    operands = [_operand(a, ctx, keep_lanes=True) for a in args]
    if ins.op in (Op.WGMMA_WAIT, Op.WGMMA_MMA):  # the compile-time count and block stride
        operands[-1] = str(int(cast(Const, args[-1]).value))
    return f"L.{ins.op.value}(g, {', '.join([ctx.ref(WARPGROUPS), *operands, mask])})"


def _cast(ins: Instr, ctx: Context) -> str:
    src, out = ins.args[0], cast(Local, ins.out)  # a verified CAST has a result
    if src.elem is out.elem:
        return _operand(src, ctx, keep_lanes=True)
    if out.elem is Elem.BOOL:
        return f"{_operand(src, ctx)} != 0"
    if ctx.is_lanes(src):
        return f"L.cast({ctx.ref(src)}, {dtype(out.elem)})"
    return f"{_operand(src, ctx)}.astype({dtype(out.elem)})"
