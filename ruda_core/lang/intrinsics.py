"""Calls of the language's builtins (:mod:`.builtins`): each handler turns one call into IR.

A handler receives the builder, the evaluated arguments, the call node and whether the result is
unused; it returns the call's value (``None`` for calls without one). Math on compile-time
numbers only (``min(BLOCK, 32)``) is computed in Python for ``min max abs round pow``
(:data:`FOLDABLE`); other intrinsics give a compile-time number its default type.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..ir import (
    BIT_COUNTS,
    FLOAT_BINARY,
    INT_BINARY,
    INT_UNARY,
    LINE_WIDTHS,
    Elem,
    LocalArray,
    Op,
    Operand,
    Param,
    SharedArray,
)
from . import views
from .barriers import BARRIER_HANDLERS
from .coerce import convert, default_elem, elem_of, implicit, operand, promote
from .copies import COPY_HANDLERS
from .lines import line_width
from .matrix import MATRIX_HANDLERS
from .scope import PyVal, Value, View, described, is_array, is_line
from .warpgroup import WARPGROUP_HANDLERS

if TYPE_CHECKING:
    from .expressions import ExprBuilder

__all__ = ["FOLDABLE", "HANDLERS", "Handler"]

Handler = Callable[["ExprBuilder", list[Value], ast.Call, bool], Value | None]

#: Intrinsics computed in Python when every argument is a compile-time value.
FOLDABLE = frozenset({"min", "max", "abs", "round", "pow"})


def _arity(b: ExprBuilder, name: str, args: list[Value], n: int, node: ast.AST) -> None:
    if len(args) != n:
        b.fail(f"{name}() takes {n} argument{'s' if n != 1 else ''}, got {len(args)}", node)


def _common(b: ExprBuilder, name: str, args: list[Value], node: ast.AST) -> Elem:
    """The type the arguments meet at (like a binary operation's operands)."""
    elem: Elem | None = None
    for arg in args:
        if is_array(arg):
            b.fail(f"{name}() takes scalars; index the array '{arg}'", node)
        e = elem_of(arg)
        if e is None:
            continue
        joined = e if elem is None else promote(elem, e)
        if joined is None:
            b.fail(f"{name}() cannot combine {elem} and {e}; cast one of them", node)
        elem = joined
    if elem is None:
        values = [a.value for a in args if isinstance(a, PyVal)]
        floats = [v for v in values if isinstance(v, float)]
        elem = default_elem(b, floats[0] if floats else values[0], node)
    return elem


def _operands(
    b: ExprBuilder, name: str, args: list[Value], node: ast.AST, floats: bool, ints: bool
) -> tuple[Elem, list[Operand]]:
    """The arguments of the intrinsic ``name`` in their common type (floats only, or integers
    only, when asked; compile-time numbers alone take ``f32`` where floats are needed)."""
    elem = _common(b, name, args, node)
    if floats and not elem.is_float:
        elem = Elem.F32 if all(isinstance(a, PyVal) for a in args) else elem
    if floats and not elem.is_float:
        b.fail(f"{name}() needs floats, got {elem}; cast with f32(...)", node)
    if not elem.is_numeric:
        b.fail(f"{name}() needs numbers, got bool", node)
    if ints and not elem.is_int:
        b.fail(f"{name}() needs integers, got {elem}", node)
    return elem, [implicit(b, a, elem, node) for a in args]


def _math(
    op: Op,
    n: int | None,
    floats: bool = False,
    result: Elem | None = None,
    ints: bool = False,
    name: str | None = None,
) -> Handler:
    """A math intrinsic over ``n`` arguments (``None``: two or more, folded pairwise), called
    ``name`` in messages (by default the operation's name)."""
    shown = name or op.value

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
        if n is None:
            if len(args) < 2:
                b.fail(f"{shown}() takes at least 2 arguments", node)
        else:
            _arity(b, shown, args, n, node)
        elem, ops = _operands(b, shown, args, node, floats, ints)
        value: Operand = ops[0]
        if n is None:
            for other in ops[1:]:
                value = b.emit(op, elem, value, other)
            return value
        return b.emit(op, result or elem, *ops)

    return handler


def _bitcast(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _arity(b, "bitcast", args, 2, node)
    target = b.elem_arg(args[0], node)
    value = operand(b, args[1], node)
    if Elem.BOOL in (target, value.elem) or target.nbytes != value.elem.nbytes:
        b.fail(
            f"bitcast() reinterprets a number as another of its width: {value.elem} "
            f"({value.elem.nbytes} bytes) cannot become {target} ({target.nbytes} bytes)",
            node,
        )
    return value if target is value.elem else b.emit(Op.BITCAST, target, value)


def _pow(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _arity(b, "pow", args, 2, node)
    return b.binary(ast.Pow(), args[0], args[1], node)


def _math_log(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    """Python's ``math.log(x)``, and ``math.log(x, base)`` as ``log(x) / log(base)``, in the
    arguments' common float type."""
    if len(args) not in (1, 2):
        b.fail(f"math.log() takes 1 or 2 arguments, got {len(args)}", node)
    elem, ops = _operands(b, "math.log", args, node, floats=True, ints=False)
    logs = [b.emit(Op.LOG, elem, op) for op in ops]
    return logs[0] if len(logs) == 1 else b.emit(Op.DIV, elem, *logs)


def _array_decl(shared: bool) -> Handler:
    what = "SharedMemory" if shared else "LocalArray"

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
        _arity(b, what, args, 2, node)
        elem = b.elem_arg(args[0], node)
        if shared and isinstance(args[1], Param) and not args[1].is_array:
            return _dynamic_shared(b, elem, args[1], node)
        size = args[1].value if isinstance(args[1], PyVal) else None
        shape = size if isinstance(size, tuple) else (size,)
        if not shape or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape
        ):
            b.fail(
                f"{what}(T, n) needs a compile-time int n >= 1 or a tuple of them (a shape)"
                + (", or a u32 kernel parameter n" if shared else "")
                + f", got {described(args[1])}",
                node,
            )
        length = math.prod(shape)
        name = b.unique(b.name_hint or ("_shared" if shared else "_local"))
        b.name_hint = None
        arr: SharedArray | LocalArray
        if shared:
            arr = SharedArray(name, elem, length)
            b.shared.append(arr)
        else:
            arr = LocalArray(name, elem, length)
            b.local_arrays.append(arr)
        if isinstance(size, tuple):
            b.shapes[arr.name] = shape
        return arr

    return handler


def _dynamic_shared(b: ExprBuilder, elem: Elem, size: Param, node: ast.Call) -> SharedArray:
    """``SharedMemory(T, n)`` of a ``u32`` kernel parameter ``n``: sized at each launch."""
    if size.elem is not Elem.U32:
        b.fail(
            f"SharedMemory(T, {size}) sized at launch needs a u32 parameter, not {size.elem}", node
        )
    arr = SharedArray(b.unique(b.name_hint or "_shared"), elem, 0, size)
    b.name_hint = None
    b.shared.append(arr)
    return arr


def _statement(op: Op) -> Handler:
    """A call without arguments or result: a barrier or a fence."""
    name = op.value

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
        _arity(b, name, args, 0, node)
        b.emit_to(None, op)

    return handler


def _cube_bound(exact: bool) -> Handler:
    """``launch_bounds(n)``: the kernel's cubes have at most ``n`` units (``launch_bounds(n,
    cubes)``: and ``cubes`` of them should fit one multiprocessor at once); ``cube_units(n)``:
    exactly ``n`` (compile-time ints >= 1), stated once, at the top level of the kernel's
    body."""
    name = "cube_units" if exact else "launch_bounds"
    what = "the units of every cube" if exact else "the most units of a cube"

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
        _arity(b, name, args, 1 if exact or len(args) < 2 else 2, node)
        value = _positive(b, f"{name}(n)", "n", args[0], what, node)
        cubes = [_positive(b, f"{name}(n, cubes)", "cubes", arg, _CUBES, node) for arg in args[1:]]
        if b.frame.parsed.kind != "kernel" or len(b.blocks) > 1 or b.frame.loops:
            b.fail(
                f"{name}({value}) belongs at the top level of the kernel's body, outside "
                "loops, runtime ifs and @func bodies",
                node,
            )
        if b.max_units is not None:
            stated = "cube_units" if b.exact_units else "launch_bounds"
            b.fail(
                f"{name}({value}) states the kernel's cube a second time; it already states "
                f"{stated}({b.max_units}). Keep one",
                node,
            )
        b.max_units = value
        b.exact_units = exact
        b.min_cubes = cubes[0] if cubes else None

    return handler


#: What the second argument of ``launch_bounds`` means.
_CUBES = "the cubes one multiprocessor should hold at once"


def _positive(b: ExprBuilder, call: str, n: str, arg: Value, what: str, node: ast.AST) -> int:
    """``arg``, the argument ``n`` of ``call``, as a compile-time int >= 1."""
    value = arg.value if isinstance(arg, PyVal) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        got = repr(value) if isinstance(arg, PyVal) else f"the runtime value {arg}"
        b.fail(
            f"{call} needs a compile-time int {n} >= 1 ({what}), got {got}; pass a literal or "
            "a Comptime[int] parameter",
            node,
        )
    return value


def _predicate(op: Op, result: Elem) -> Handler:
    """A call of one ``bool`` whose result is ``result``: a vote or a reducing barrier."""
    name = op.value

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
        _arity(b, name, args, 1, node)
        return b.emit(op, result, b.boolean(args[0], node, f"the value of {name}()"))

    return handler


def _plane_elect(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _arity(b, "plane_elect", args, 0, node)
    return b.emit(Op.PLANE_ELECT, Elem.BOOL)


def _atomic(op: Op, name: str, values: int) -> Handler:
    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value | None:
        _arity(b, name, args, 2 + values, node)
        arr = args[0]
        base = arr.base if isinstance(arr, View) else arr
        if not is_array(arr) or isinstance(base, LocalArray):
            b.fail(f"{name}() needs a global array or SharedMemory, got {arr}", node)
        elem: Elem = arr.elem  # type: ignore[union-attr]  # an array, checked above
        if op in (Op.ATOMIC_INC_WRAP, Op.ATOMIC_DEC_WRAP) and elem is not Elem.U32:
            b.fail(f"{name}() applies to u32 elements only, not {elem}", node)
        if elem is Elem.BOOL or (
            op in (Op.ATOMIC_AND, Op.ATOMIC_OR, Op.ATOMIC_XOR) and elem.is_float
        ):
            b.fail(f"{name}() does not apply to {elem} elements", node)
        ops = [convert(b, v, elem, node, f"an element of '{arr}'") for v in args[2:]]
        arr, index = views.address(b, arr, b.index(args[1], node))
        if discard or op is Op.ATOMIC_STORE:
            b.emit_to(None, op, arr, index, *ops)  # type: ignore[arg-type]  # an array
            return None
        return b.emit(op, elem, arr, index, *ops)  # type: ignore[arg-type]  # an array

    return handler


def _plane(op: Op) -> Handler:
    """A plane reduction or scan of a number."""
    name = op.value

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
        _arity(b, name, args, 1, node)
        value = operand(b, args[0], node)
        if not value.elem.is_numeric:
            b.fail(f"{name}() needs a number, got bool", node)
        return b.emit(op, value.elem, value)

    return handler


def _plane_lane(op: Op, what: str = "lane") -> Handler:
    """A plane read of another lane's value; ``what`` names the second argument."""
    name = op.value

    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
        _arity(b, name, args, 2, node)
        value = operand(b, args[0], node)
        lane = args[1]
        lane_elem = elem_of(lane)
        if lane_elem is not None and not lane_elem.is_int:
            b.fail(f"the {what} of {name}() must be an integer, got {lane_elem}", node)
        return b.emit(op, value.elem, value, implicit(b, lane, Elem.U32, node))

    return handler


def _lanes(b: ExprBuilder, name: str, args: list[Value], node: ast.Call) -> list[Operand]:
    """Scalar arguments meeting at their common type, for the lanes of a line."""
    for arg in args:
        if is_line(arg):
            b.fail(f"{name}() takes scalar lanes; '{arg}' is already a line", node)
    elem = _common(b, name, args, node)
    return [implicit(b, a, elem, node) for a in args]


def _line(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    if len(args) not in LINE_WIDTHS:
        b.fail(f"Line(...) takes {LINE_WIDTHS} lanes, got {len(args)}", node)
    lanes = _lanes(b, "Line", args, node)
    return b.emit(Op.LINE_BUILD, lanes[0].elem, *lanes, width=len(lanes))


def _line_splat(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _arity(b, "Line.splat", args, 2, node)
    width = line_width(b, args[1], "Line.splat(v, N)", node)
    (lane,) = _lanes(b, "Line.splat", args[:1], node)
    return b.emit(Op.LINE_BUILD, lane.elem, *([lane] * width), width=width)


def _select(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _arity(b, "select", args, 3, node)
    cond = args[0]
    if is_line(cond) and elem_of(cond) is Elem.BOOL:
        c: Operand = cond  # type: ignore[assignment]  # a bool line Local, checked above
    else:
        c = b.boolean(cond, node, "the condition of select()")
    elem = _common(b, "select", args[1:], node)
    return b.emit(Op.SELECT, elem, c, *(implicit(b, a, elem, node) for a in args[1:]))


def _loop_only(name: str) -> Handler:
    def handler(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
        b.fail(f"{name}(...) is only allowed as the iterable of a for loop", node)

    return handler


_FLOAT_UNARY = {
    "exp": Op.EXP,
    "exp2": Op.EXP2,
    "log": Op.LOG,
    "log2": Op.LOG2,
    "log1p": Op.LOG1P,
    "sqrt": Op.SQRT,
    "rsqrt": Op.RSQRT,
    "recip": Op.RECIP,
    "sin": Op.SIN,
    "cos": Op.COS,
    "tan": Op.TAN,
    "tanh": Op.TANH,
    "erf": Op.ERF,
    "erfc": Op.ERFC,
    "lgamma": Op.LGAMMA,
    "expm1": Op.EXPM1,
    "log10": Op.LOG10,
    "cbrt": Op.CBRT,
    "asin": Op.ASIN,
    "acos": Op.ACOS,
    "atan": Op.ATAN,
    "sinh": Op.SINH,
    "cosh": Op.COSH,
    "asinh": Op.ASINH,
    "acosh": Op.ACOSH,
    "atanh": Op.ATANH,
    "floor": Op.FLOOR,
    "ceil": Op.CEIL,
    "round": Op.ROUND,
    "trunc": Op.TRUNC,
}
_ATOMICS = {
    "atomic_load": (Op.ATOMIC_LOAD, 0),
    "atomic_store": (Op.ATOMIC_STORE, 1),
    "atomic_swap": (Op.ATOMIC_SWAP, 1),
    "atomic_add": (Op.ATOMIC_ADD, 1),
    "atomic_sub": (Op.ATOMIC_SUB, 1),
    "atomic_min": (Op.ATOMIC_MIN, 1),
    "atomic_max": (Op.ATOMIC_MAX, 1),
    "atomic_and": (Op.ATOMIC_AND, 1),
    "atomic_or": (Op.ATOMIC_OR, 1),
    "atomic_xor": (Op.ATOMIC_XOR, 1),
    "atomic_compare_and_swap": (Op.ATOMIC_CAS, 2),
    "atomic_inc_wrap": (Op.ATOMIC_INC_WRAP, 1),
    "atomic_dec_wrap": (Op.ATOMIC_DEC_WRAP, 1),
}

#: Handlers by intrinsic name.
HANDLERS: dict[str, Handler] = {
    **{name: _math(op, 1, floats=True) for name, op in _FLOAT_UNARY.items()},
    **{name: _atomic(op, name, n) for name, (op, n) in _ATOMICS.items()},
    "isnan": _math(Op.ISNAN, 1, floats=True, result=Elem.BOOL),
    "isinf": _math(Op.ISINF, 1, floats=True, result=Elem.BOOL),
    "isfinite": _math(Op.ISFINITE, 1, floats=True, result=Elem.BOOL),
    **{op.value: _math(op, 2, floats=True) for op in FLOAT_BINARY},
    **{op.value: _math(op, 1, ints=True, result=Elem.U32) for op in BIT_COUNTS},
    **{op.value: _math(op, 1, ints=True) for op in INT_UNARY},
    **{op.value: _math(op, 2, ints=True) for op in INT_BINARY},
    "abs": _math(Op.ABS, 1),
    "min": _math(Op.MIN, None),
    "max": _math(Op.MAX, None),
    "clamp": _math(Op.CLAMP, 3),
    "fma": _math(Op.FMA, 3, floats=True),
    "pow": _pow,
    "math.pow": _math(Op.POW, 2, floats=True, name="math.pow"),
    "math.fabs": _math(Op.ABS, 1, floats=True, name="math.fabs"),
    "math.log": _math_log,
    "bitcast": _bitcast,
    "SharedMemory": _array_decl(shared=True),
    "LocalArray": _array_decl(shared=False),
    "launch_bounds": _cube_bound(exact=False),
    "cube_units": _cube_bound(exact=True),
    "sync_units": _statement(Op.SYNC_UNITS),
    "sync_plane": _statement(Op.SYNC_PLANE),
    "fence_units": _statement(Op.FENCE_UNITS),
    "fence_device": _statement(Op.FENCE_DEVICE),
    "sync_units_count": _predicate(Op.SYNC_UNITS_COUNT, Elem.U32),
    "sync_units_and": _predicate(Op.SYNC_UNITS_AND, Elem.BOOL),
    "sync_units_or": _predicate(Op.SYNC_UNITS_OR, Elem.BOOL),
    "unroll": _loop_only("unroll"),
    "grid_stride": _loop_only("grid_stride"),
    "Line": _line,
    "Line.splat": _line_splat,
    "select": _select,
    "plane_sum": _plane(Op.PLANE_SUM),
    "plane_prod": _plane(Op.PLANE_PROD),
    "plane_min": _plane(Op.PLANE_MIN),
    "plane_max": _plane(Op.PLANE_MAX),
    "plane_inclusive_sum": _plane(Op.PLANE_INCLUSIVE_SUM),
    "plane_exclusive_sum": _plane(Op.PLANE_EXCLUSIVE_SUM),
    "plane_all": _predicate(Op.PLANE_ALL, Elem.BOOL),
    "plane_any": _predicate(Op.PLANE_ANY, Elem.BOOL),
    "plane_ballot": _predicate(Op.PLANE_BALLOT, Elem.U32),
    "plane_elect": _plane_elect,
    "plane_broadcast": _plane_lane(Op.PLANE_BROADCAST),
    "plane_shuffle": _plane_lane(Op.PLANE_SHUFFLE),
    "plane_shuffle_up": _plane_lane(Op.PLANE_SHUFFLE_UP, "delta"),
    "plane_shuffle_down": _plane_lane(Op.PLANE_SHUFFLE_DOWN, "delta"),
    "plane_shuffle_xor": _plane_lane(Op.PLANE_SHUFFLE_XOR, "mask"),
    **MATRIX_HANDLERS,
    **COPY_HANDLERS,
    **BARRIER_HANDLERS,
    **WARPGROUP_HANDLERS,
}
