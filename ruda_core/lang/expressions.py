"""Expressions of the kernel language: from Python ``ast`` expressions to IR values.

Compile-time operands (literals, ``Comptime`` values, module constants) are computed in Python;
a typed operand turns the expression into IR (see :mod:`.coerce` for the typing rules).
``and``/``or`` and ``a if c else b`` never evaluate the side that is not selected when that side
indexes an array or does an atomic: they become an ``If`` that writes a temporary. Otherwise
they are plain ``AND``/``OR``/``SELECT``. Comparisons chain like Python's (``a < b < c`` is
``a < b and b < c``). Names resolve to the function's variables, then its closure and module
globals (constants, ``@func`` functions, ruda builtins and modules only), then Python builtins
(``range len min max abs round pow int float bool``).
"""

from __future__ import annotations

import ast
import builtins
import enum
import math
import operator
from collections.abc import Callable
from types import BuiltinFunctionType, ModuleType
from typing import Any

import numpy as np

from ..ir import (
    ATOMIC_OPS,
    BARRIER_OPS,
    MATRIX_OPS,
    WARPGROUP_OPS,
    Builtin,
    Const,
    Elem,
    If,
    Instr,
    Local,
    LocalArray,
    Op,
    Operand,
    Param,
    ParamKind,
    SharedArray,
    Stmt,
)
from . import views
from .builtins import MATH_FUNCTIONS, BuiltinVar, Intrinsic
from .coerce import (
    compile_time_number,
    default_elem,
    elem_of,
    explicit_cast,
    implicit,
    literal,
    operand,
    promote,
)
from .comparisons import exact_mixed_sign, mixes_sign
from .func import Func
from .intrinsics import FOLDABLE, HANDLERS
from .lines import array_line_method, lane, line_method
from .printing import build_print
from .scope import (
    BuilderState,
    Fields,
    LiteralPick,
    PyVal,
    Several,
    Value,
    View,
    described,
    is_array,
    is_line,
    width_of,
)
from .types import (
    ArrayType,
    ComptimeType,
    ElemVar,
    LineType,
    ScalarType,
    TensorType,
    annotation_type,
)

__all__ = ["ExprBuilder"]

_BINARY: dict[type[ast.operator], tuple[str, Op, Callable[[Any, Any], Any]]] = {
    ast.Add: ("+", Op.ADD, operator.add),
    ast.Sub: ("-", Op.SUB, operator.sub),
    ast.Mult: ("*", Op.MUL, operator.mul),
    ast.Div: ("/", Op.DIV, operator.truediv),
    ast.FloorDiv: ("//", Op.FLOOR_DIV, operator.floordiv),
    ast.Mod: ("%", Op.MOD, operator.mod),
    ast.Pow: ("**", Op.POW, operator.pow),
    ast.BitAnd: ("&", Op.BIT_AND, operator.and_),
    ast.BitOr: ("|", Op.BIT_OR, operator.or_),
    ast.BitXor: ("^", Op.BIT_XOR, operator.xor),
    ast.LShift: ("<<", Op.SHL, operator.lshift),
    ast.RShift: (">>", Op.SHR, operator.rshift),
}
_BOOL_BITWISE = {Op.BIT_AND: Op.AND, Op.BIT_OR: Op.OR, Op.BIT_XOR: Op.NE}
_COMPARE: dict[type[ast.cmpop], tuple[str, Op | None, Callable[[Any, Any], Any]]] = {
    ast.Eq: ("==", Op.EQ, operator.eq),
    ast.NotEq: ("!=", Op.NE, operator.ne),
    ast.Lt: ("<", Op.LT, operator.lt),
    ast.LtE: ("<=", Op.LE, operator.le),
    ast.Gt: (">", Op.GT, operator.gt),
    ast.GtE: (">=", Op.GE, operator.ge),
    ast.Is: ("is", None, operator.is_),
    ast.IsNot: ("is not", None, operator.is_not),
    ast.In: ("in", None, lambda a, b: a in b),
    ast.NotIn: ("not in", None, lambda a, b: a not in b),
}
_PY_BUILTINS = {
    id(f): (f, f.__name__) for f in (range, len, min, max, abs, round, pow, int, float, bool)
}
_GUARDED = (
    ATOMIC_OPS
    | MATRIX_OPS
    | WARPGROUP_OPS
    | BARRIER_OPS
    | {Op.INDEX, Op.INDEX_ASSIGN, Op.LOAD_LINE, Op.STORE_LINE, Op.PRINT}
)
_CONSTANT_TYPES = (type(None), bool, int, float, str)
_COMPTIME_OBJECTS = (
    ScalarType,
    ElemVar,
    Intrinsic,
    Func,
    ModuleType,
    enum.Enum,
    ArrayType,
    TensorType,
    ComptimeType,
    LineType,
)


def _has_effects(stmts: list[Stmt]) -> bool:
    """True when running ``stmts`` unconditionally could index, store, print or do an atomic."""
    return any(not isinstance(s, Instr) or s.op in _GUARDED for s in stmts)


def _is_constant(obj: object) -> bool:
    if isinstance(obj, tuple):
        return all(_is_constant(o) or isinstance(o, ScalarType) for o in obj)
    return isinstance(obj, _CONSTANT_TYPES)


class ExprBuilder(BuilderState):
    """Evaluates expressions; :class:`~.statements.StmtBuilder` adds statements and inlining."""

    def call_func(
        self, fn: Func, args: list[Value], kwargs: dict[str, Value], node: ast.Call, discard: bool
    ) -> Value | None:
        """Inline a call of a device function; its result (``None`` when there is none)."""
        raise NotImplementedError

    # -- entry points -----------------------------------------------------------------------

    def expr(self, node: ast.expr) -> Value:
        """Evaluate ``node``; compile-time results stay :class:`PyVal`."""
        if isinstance(node, ast.Constant):
            return PyVal(node.value)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, ast.BinOp):
            return self.binary(node.op, self.expr(node.left), self.expr(node.right), node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.Compare):
            return self.compare_chain(node)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)
        if isinstance(node, ast.IfExp):
            return self.if_exp(node)
        if isinstance(node, ast.Tuple):  # a shape: the syntax pass allows no other tuple
            values = [self.expr(e) for e in node.elts]
            if not all(isinstance(v, PyVal) for v in values):
                self.fail("a shape must be a tuple of compile-time ints", node)
            return PyVal(tuple(v.value for v in values if isinstance(v, PyVal)))
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            obj = self.expr(node.value)
            if is_array(obj):
                self.fail(f"'{obj}.{node.attr}' is a method; call it: {obj}.{node.attr}()", node)
            return self.attribute(obj, node.attr, node)
        if isinstance(node, ast.Call):
            result = self.call_value(node)
            if isinstance(result, Several):
                self.fail(
                    f"{ast.unparse(node.func)}() returns {len(result.items)} values; unpack "
                    "them into names: a, b = f(...)",
                    node,
                )
            return result
        self.fail(f"{type(node).__name__} is not supported in kernels", node)

    def expr_or_several(self, node: ast.expr) -> Value:
        """Evaluate the right side of an unpacking assignment or a ``return``: a tuple or a
        ``@func`` returning several values gives :class:`Several`."""
        if isinstance(node, ast.Tuple):
            return Several(tuple(self.expr(e) for e in node.elts))
        if isinstance(node, ast.Call):
            return self.call_value(node)
        return self.expr(node)

    def call_value(self, node: ast.Call) -> Value:
        result = self.call(node)
        if result is None:
            self.fail(f"{ast.unparse(node.func)}() gives no value", node)
        return result

    def boolean(self, value: Value, node: ast.AST, what: str) -> Operand:
        """``value`` as a bool operand; anything else is an error naming ``what``."""
        if isinstance(value, PyVal):
            if isinstance(value.value, bool):
                return Const(value.value, Elem.BOOL)
            self.fail(f"{what} must be bool, got {value.value!r}", node)
        op = operand(self, value, node)
        if isinstance(op, Local) and op.width > 1:
            self.fail(
                f"{what} must be one bool, got the line {op.type_text}; reduce it with .any() "
                "or .all(), or pick per lane with select(c, a, b)",
                node,
            )
        if op.elem is not Elem.BOOL:
            self.fail(f"{what} must be bool, got {op.elem}; compare explicitly, e.g. x != 0", node)
        return op

    def index(self, value: Value, node: ast.AST, what: str = "an index") -> Operand:
        """``value`` as an array index (any integer type; a literal takes u32 if it fits). A
        negative compile-time index is refused: it never counts from the end as Python's does
        (a negative run-time one is outside every array)."""
        if isinstance(value, PyVal):
            v = value.value
            if not isinstance(v, int) or isinstance(v, bool):
                self.fail(f"{what} must be an integer, got {v!r}", node)
            if v < 0:
                self.fail(
                    f"{what} must be an integer that is not negative, got {v}: arrays do not count "
                    f"from their end as Python's lists do; use a.len() - {-v}",
                    node,
                )
            for elem in (Elem.U32, Elem.I32, Elem.I64, Elem.U64):
                info = np.iinfo(elem.numpy)
                if int(info.min) <= v <= int(info.max):
                    return Const(v, elem)
            self.fail(f"the index {v} does not fit 64 bits", node)
        op = operand(self, value, node)
        if isinstance(op, Local) and op.width > 1:
            self.fail(f"an index must be one integer, got the line {op.type_text}", node)
        if not op.elem.is_int:
            self.fail(f"an index must be an integer, got {op.elem}", node)
        return op

    def comptime(self, compute: Callable[[], object], node: ast.AST) -> Value:
        """Run a compile-time computation; a Python error in it becomes a CompilationError."""
        try:
            result = compute()
        except Exception as exc:  # any error of the user's compile-time expression
            self.fail(f"compile-time evaluation failed: {type(exc).__name__}: {exc}", node)
        return self.classify(result, repr(result), node)

    # -- names ------------------------------------------------------------------------------

    def lookup(self, name: str, node: ast.AST) -> Value:
        value = self.frame.scope.get(name)
        if value is not None:
            return value
        parsed = self.frame.parsed
        if name in parsed.assigned:
            why = self.frame.unsure.get(name)
            if why is None:
                self.fail(f"'{name}' is used before it is assigned", node)
            self.fail(f"'{name}' {why}", node)
        fn = parsed.fn
        freevars = fn.__code__.co_freevars
        if name in freevars:
            cell = (fn.__closure__ or ())[freevars.index(name)]
            try:
                contents = cell.cell_contents
            except ValueError:
                self.fail(f"the closure variable '{name}' is not bound yet", node)
            return self.classify(contents, name, node)
        globals_ = fn.__globals__
        if name in globals_:
            return self.classify(globals_[name], name, node)
        if hasattr(builtins, name):
            return self.classify(getattr(builtins, name), name, node)
        self.fail(f"name '{name}' is not defined", node)

    def classify(self, obj: object, name: str, node: ast.AST) -> Value:
        """A Python object named in a kernel, as a value; refuses what kernels cannot use."""
        if isinstance(obj, BuiltinVar):
            return Builtin(obj.kind)
        if isinstance(obj, np.generic):
            obj = obj.item()
        if _is_constant(obj) or isinstance(obj, _COMPTIME_OBJECTS):
            return PyVal(obj)
        entry = _PY_BUILTINS.get(id(obj))
        if entry is not None and entry[0] is obj:
            return PyVal(obj)
        if isinstance(obj, BuiltinFunctionType) and obj.__module__ == "math":
            if obj in MATH_FUNCTIONS:  # math.sqrt is sqrt
                return PyVal(MATH_FUNCTIONS[obj])
            fn = obj.__name__
            if fn in ("floor", "ceil", "trunc"):
                why = (
                    f"it returns an int in Python; ruda_core.lang's {fn} returns a float of its "
                    "argument's type (cast that with i32(...))"
                )
            else:
                names = sorted(i.name.removeprefix("math.") for i in MATH_FUNCTIONS.values())
                why = f"the math functions a kernel can call are {', '.join(names)}"
            self.fail(f"math.{fn} cannot be used in kernels: {why}", node)
        if obj is print:
            return PyVal(obj)
        self.fail(
            f"'{name}' is a {type(obj).__name__}; a kernel can use numbers, bools, strings, tuples "
            "of these, @func functions, ruda builtins and modules",
            node,
        )

    def attribute(self, obj: Value, attr: str, node: ast.AST) -> Value:
        if not isinstance(obj, PyVal):
            self.fail(f"a {elem_of(obj)} value has no attribute '{attr}'", node)
        if isinstance(obj.value, Fields):
            field = obj.value.get(attr)
            if field is None:
                self.fail(f"{obj.value.cls.__name__} has no field '{attr}'", node)
            return field
        try:
            value = getattr(obj.value, attr)
        except AttributeError:
            self.fail(f"{obj.value!r} has no attribute '{attr}'", node)
        return self.classify(value, attr, node)

    # -- operators --------------------------------------------------------------------------

    def common(self, a: Value, b: Value, node: ast.AST, what: str) -> Elem:
        """The type two operands meet at (a compile-time number adopts the other's type)."""
        for v in (a, b):
            if is_array(v):
                self.fail(f"array '{v}' cannot be an operand of {what}; index it", node)
        ea, eb = elem_of(a), elem_of(b)
        if ea is None and eb is None:
            value, other = compile_time_number(a), compile_time_number(b)
            if isinstance(other, float) and not isinstance(value, float):
                value = other
            return default_elem(self, value, node)
        if ea is None or eb is None:
            return eb if ea is None else ea  # type: ignore[return-value]  # one is set
        elem = promote(ea, eb)
        if elem is None:
            self.fail(f"{what} cannot combine {ea} and {eb}; cast one side, e.g. {eb}(...)", node)
        return elem

    def binary(self, op: ast.operator, a: Value, b: Value, node: ast.AST) -> Value:
        entry = _BINARY.get(type(op))
        if entry is None:
            self.fail(f"the operator {type(op).__name__} is not supported in kernels", node)
        symbol, ir_op, py_op = entry
        if isinstance(a, PyVal) and isinstance(b, PyVal):
            return self.comptime(lambda: py_op(a.value, b.value), node)
        table = self.picked_op(py_op, (a, b), node)
        if table is not None:
            return table
        what = f"'{symbol}'"
        if ir_op in (Op.SHL, Op.SHR):
            elem = elem_of(a) or self.common(a, b, node, what)
            if not elem.is_int:
                self.fail(f"{what} needs integers, got {elem}", node)
            return self.emit(
                ir_op, elem, implicit(self, a, elem, node), implicit(self, b, elem, node)
            )
        elem = self.common(a, b, node, what)
        if ir_op in _BOOL_BITWISE and elem is Elem.BOOL:
            ir_op = _BOOL_BITWISE[ir_op]
        elif ir_op in _BOOL_BITWISE and not elem.is_int:
            self.fail(f"{what} needs integers or bools, got {elem}", node)
        elif ir_op is Op.POW and elem.is_int and isinstance(b, PyVal):
            return self.integer_power(implicit(self, a, elem, node), b.value, node)
        elif ir_op in (Op.DIV, Op.POW) and not elem.is_float:
            hint = "use '//' for integer division or " if ir_op is Op.DIV else ""
            hint = "give a constant exponent or " if ir_op is Op.POW and elem.is_int else hint
            self.fail(f"{what} needs floats, got {elem}; {hint}cast with f32(...)", node)
        elif elem is Elem.BOOL and ir_op not in (Op.AND, Op.OR, Op.NE):
            self.fail(f"{what} needs numbers, got bool; cast with i32(...)", node)
        return self.emit(ir_op, elem, implicit(self, a, elem, node), implicit(self, b, elem, node))

    def integer_power(self, base: Operand, exponent: object, node: ast.AST) -> Value:
        """``base ** exponent`` of an integer by a compile-time exponent ``>= 0``: products by
        squaring, each wrapping as ``*`` does (``x ** 0`` is 1)."""
        if not isinstance(exponent, int) or isinstance(exponent, bool) or exponent < 0:
            self.fail(f"'**' of {base.elem} needs an exponent that is an int >= 0", node)
        result: Operand | None = None
        square = base
        while exponent:
            if exponent & 1:
                result = square if result is None else self.emit(Op.MUL, base.elem, result, square)
            exponent >>= 1
            if exponent:
                square = self.emit(Op.MUL, base.elem, square, square)
        return literal(self, 1, base.elem, node) if result is None else result

    def unary(self, node: ast.UnaryOp) -> Value:
        value = self.expr(node.operand)
        op = node.op
        if isinstance(value, PyVal):
            return self.comptime(lambda: _UNARY[type(op)](value.value), node)
        if isinstance(value, LiteralPick) and not isinstance(op, ast.Not):
            table = self.picked_op(_UNARY[type(op)], (value,), node)
            if table is not None:
                return table
        if isinstance(op, ast.Not):
            return self.emit(Op.NOT, Elem.BOOL, self.boolean(value, node, "the operand of 'not'"))
        x = operand(self, value, node)
        if isinstance(op, ast.Invert):
            if not x.elem.is_int:
                self.fail(f"'~' needs an integer, got {x.elem}; use 'not' for bool", node)
            return self.emit(Op.BIT_NOT, x.elem, x)
        if not x.elem.is_numeric:
            self.fail(f"unary '{'-' if isinstance(op, ast.USub) else '+'}' needs a number", node)
        return self.emit(Op.NEG, x.elem, x) if isinstance(op, ast.USub) else x

    def compare(self, op: ast.cmpop, a: Value, b: Value, node: ast.AST) -> Value:
        symbol, ir_op, py_op = _COMPARE[type(op)]
        if isinstance(a, PyVal) and isinstance(b, PyVal):
            return self.comptime(lambda: py_op(a.value, b.value), node)
        if ir_op is None:
            self.fail(f"'{symbol}' works only on compile-time values", node)
        elem = self.common(a, b, node, f"'{symbol}'")
        if elem is Elem.BOOL and ir_op not in (Op.EQ, Op.NE):
            self.fail(f"'{symbol}' needs numbers, got bool", node)
        ea, eb = elem_of(a), elem_of(b)
        if ea is not None and eb is not None and mixes_sign(ea, eb):
            return exact_mixed_sign(self, ir_op, operand(self, a, node), operand(self, b, node))
        x, y = implicit(self, a, elem, node), implicit(self, b, elem, node)
        return self.emit(ir_op, Elem.BOOL, x, y)

    def compare_chain(self, node: ast.Compare) -> Value:
        left = self.expr(node.left)
        right = self.expr(node.comparators[0])
        result = self.compare(node.ops[0], left, right, node)
        for op, comparator in zip(node.ops[1:], node.comparators[1:], strict=True):
            prev = right

            def step(
                op: ast.cmpop = op, prev: Value = prev, comparator: ast.expr = comparator
            ) -> Value:
                nonlocal right
                right = self.expr(comparator)
                return self.compare(op, prev, right, node)

            result = self.logic(True, result, step, node)
        return result

    def bool_op(self, node: ast.BoolOp) -> Value:
        is_and = isinstance(node.op, ast.And)
        result = self.expr(node.values[0])
        for value in node.values[1:]:
            result = self.logic(is_and, result, lambda v=value: self.expr(v), node)  # type: ignore[misc]
        return result

    def logic(self, is_and: bool, left: Value, right: Callable[[], Value], node: ast.AST) -> Value:
        """``left and right()`` / ``left or right()`` with Python's short circuit; ``right`` runs
        under an ``If`` when it indexes or does atomics."""
        name = "and" if is_and else "or"
        if isinstance(left, PyVal):
            return right() if bool(left.value) == is_and else left
        lhs = self.boolean(left, node, f"an operand of '{name}'")
        with self.capture() as stmts:
            rhs = self.boolean(right(), node, f"an operand of '{name}'")
        if not _has_effects(stmts):
            self.blocks[-1].extend(stmts)
            return self.emit(Op.AND if is_and else Op.OR, Elem.BOOL, lhs, rhs)
        result = self.temp(Elem.BOOL)
        self.write(result, lhs)
        test = result if is_and else self.emit(Op.NOT, Elem.BOOL, result)
        with self.into(stmts):
            self.write(result, rhs)
        self.append(If(test, tuple(stmts), (), self.loc))
        return result

    def if_exp(self, node: ast.IfExp) -> Value:
        test = self.expr(node.test)
        if isinstance(test, PyVal):
            return self.expr(node.body if test.value else node.orelse)
        cond = self.boolean(test, node.test, "the condition")
        with self.capture() as then:
            a = self.expr(node.body)
        with self.capture() as orelse:
            b = self.expr(node.orelse)
        if isinstance(a, PyVal) and isinstance(b, PyVal) and _numbers(a.value, b.value):
            return LiteralPick(cond, (a.value, b.value))  # typed by its context, as literals are
        elem = self.common(a, b, node, "a conditional expression")
        if not _has_effects(then) and not _has_effects(orelse):
            self.blocks[-1].extend(then + orelse)
            x, y = implicit(self, a, elem, node), implicit(self, b, elem, node)
            return self.emit(Op.SELECT, elem, cond, x, y)
        result = self.temp(elem, max(width_of(a), width_of(b)))
        for block, value in ((then, a), (orelse, b)):
            with self.into(block):
                self.write(result, implicit(self, value, elem, node))
        self.append(If(cond, tuple(then), tuple(orelse), self.loc))
        return result

    # -- arrays -----------------------------------------------------------------------------

    def subscript(self, node: ast.Subscript) -> Value:
        obj = self.expr(node.value)
        if isinstance(obj, PyVal):
            index = self.expr(node.slice)
            if not isinstance(index, PyVal):
                return self.picked(obj.value, self.index(index, node.slice), node)
            return self.comptime(lambda: obj.value[index.value], node)  # type: ignore[index]
        if isinstance(obj, Local) and is_line(obj):
            return lane(self, obj, self.expr(node.slice), node.slice)
        if isinstance(obj, LiteralPick | Several) or not is_array(obj):
            self.fail(f"'{ast.unparse(node.value)}' is not an array", node)
        if isinstance(node.slice, ast.Slice):
            return views.view(self, obj, node.slice, node)
        index_op = self.index(self.element_index(obj, node.slice), node.slice)
        arr, index_op = views.address(self, obj, index_op)
        return self.emit(Op.INDEX, obj.elem, arr, index_op)  # type: ignore[arg-type]  # an array

    def element_index(self, arr: Value, node: ast.expr) -> Value:
        """The index of ``arr[node]``. For a shaped ``SharedMemory``/``LocalArray``, ``node``
        is one index per axis, flattened row-major; for a ``Tensor``, one index per axis, each
        times its stride (:func:`.views.tensor_index`). An index outside its axis puts the
        whole index out of range, so a checked read gives 0 and a checked write is dropped."""
        if not isinstance(node, ast.Tuple):
            return self.expr(node)
        if isinstance(arr, Param) and arr.kind is ParamKind.TENSOR:
            return views.tensor_index(self, arr, node)
        name = arr.name if isinstance(arr, SharedArray | LocalArray) else None
        shape = self.shapes.get(name) if name is not None else None
        if shape is None:
            self.fail(
                f"'{arr}' takes one index; several (a[y, x]) index a Tensor, or a "
                "SharedMemory or LocalArray declared with a shape, e.g. "
                "SharedMemory(f32, (16, 17))",
                node,
            )
        if len(node.elts) != len(shape):
            self.fail(f"'{arr}' has the shape {shape}: give {len(shape)} indices", node)
        values = [self.expr(e) for e in node.elts]
        if all(isinstance(v, PyVal) for v in values):
            at = tuple(v.value for v in values if isinstance(v, PyVal))
            if not all(isinstance(i, int) and 0 <= i < n for i, n in zip(at, shape, strict=True)):
                self.fail(f"the index {at} is outside the shape {shape} of '{arr}'", node)
            return PyVal(int(np.ravel_multi_index(at, shape)))  # type: ignore[arg-type]
        u32, b = Elem.U32, Elem.BOOL
        axes = [self._axis_index(v, e) for v, e in zip(values, node.elts, strict=True)]
        flat, inside = axes[0], self.emit(Op.LT, b, axes[0], Const(shape[0], u32))
        for axis, extent in zip(axes[1:], shape[1:], strict=True):
            flat = self.emit(Op.ADD, u32, self.emit(Op.MUL, u32, flat, Const(extent, u32)), axis)
            inside = self.emit(Op.AND, b, inside, self.emit(Op.LT, b, axis, Const(extent, u32)))
        return self.emit(Op.SELECT, u32, inside, flat, Const(math.prod(shape), u32))

    def _axis_index(self, value: Value, node: ast.expr) -> Operand:
        """One axis's index as a ``u32`` (a negative signed index wraps, so it is outside)."""
        op = self.index(value, node)
        return op if op.elem is Elem.U32 else self.emit(Op.CAST, Elem.U32, op)

    def picked_op(
        self, py_op: Callable[..., Any], operands: tuple[Value, ...], node: ast.AST
    ) -> LiteralPick | None:
        """``TABLE[i] op c``, ``c op TABLE[i]``, ``T[i] op U[i]`` (one index, tables of one
        length) and ``-TABLE[i]`` of compile-time numbers: the table of the results, computed in
        Python as arithmetic on literals is, and typed by its context as the table itself would
        be (``TABLE[i] + 1.0`` stored into an ``Array[f64]`` is an f64 table). None otherwise."""
        picks = [v for v in operands if isinstance(v, LiteralPick)]
        if not picks or any(p.key is not picks[0].key for p in picks):
            return None
        n = len(picks[0].values)
        if any(len(p.values) != n for p in picks):
            return None
        columns: list[tuple[object, ...]] = []
        for v in operands:
            if isinstance(v, LiteralPick):
                columns.append(v.values)
            elif isinstance(v, PyVal):
                columns.append((v.value,) * n)
            else:
                return None
        rows = list(zip(*columns, strict=True))
        if not all(_number(x) for row in rows for x in row):
            return None  # bools, and picks of anything else, keep their own rules
        results = self.comptime(lambda: tuple(py_op(*row) for row in rows), node)
        values = results.value if isinstance(results, PyVal) else None
        if not isinstance(values, tuple) or not all(_number(v) for v in values):
            return None
        return LiteralPick(picks[0].key, values)

    def picked(self, values: object, index: Operand, node: ast.AST) -> LiteralPick:
        """``TABLE[i]`` of a compile-time tuple of numbers and a run-time ``i``: typed by its
        context like a literal; its values fill a local array once per kernel."""
        if not (isinstance(values, tuple) and values and all(_number(v) for v in values)):
            self.fail(
                f"cannot index the compile-time value {values!r} at run time; a table indexed "
                "at run time is a tuple of numbers",
                node,
            )
        return LiteralPick(index, values)

    def method(self, arr: Value, name: str, node: ast.Call) -> Value | None:
        """``arr.len()``, ``arr.load_line(i, N)``, ``arr.store_line(i, v)``, ``t.shape(d)``,
        ``t.stride(d)``, ``t.rank()``; a line's reductions (:mod:`.lines`)."""
        if node.keywords:
            self.fail(f"{arr}.{name}() takes no keyword arguments", node)
        args = [self.expr(a) for a in node.args]
        if isinstance(arr, Local):
            return line_method(self, arr, name, args, node)
        if name in ("load_line", "store_line"):
            if isinstance(arr, View):
                self.fail(
                    f"{name}() takes the whole array, not a view (a view may start off the "
                    "line's alignment); index lines of the array itself",
                    node,
                )
            if not isinstance(arr, (Param, SharedArray)):
                self.fail(
                    f"{name}() reads and writes global and shared arrays; '{arr}' is neither",
                    node,
                )
            return array_line_method(self, arr, name, args, node)
        if name == "len" and not args:
            return views.length(self, arr)
        if not isinstance(arr, Param) or arr.kind is not ParamKind.TENSOR:
            self.fail(f"'{arr}' has only len(); shape, stride and rank are tensor methods", node)
        if name == "rank" and not args:
            return PyVal(arr.rank)
        if name in ("shape", "stride") and len(args) == 1:
            axis = args[0]
            if not isinstance(axis, PyVal) or not isinstance(axis.value, int):
                self.fail(
                    f"{arr}.{name}(axis) needs a compile-time int axis; iterate axes with "
                    "`for d in unroll(range(t.rank()))`",
                    node,
                )
            if not 0 <= axis.value < arr.rank:
                self.fail(f"axis {axis.value} is out of range for '{arr}' of rank {arr.rank}", node)
            op = Op.SHAPE if name == "shape" else Op.STRIDE
            return self.emit(op, Elem.U32, arr, Const(axis.value, Elem.U32))
        self.fail(f"'{arr}' has no method {name}() with {len(args)} arguments", node)

    # -- calls ------------------------------------------------------------------------------

    def call(self, node: ast.Call, discard: bool = False) -> Value | None:
        """Evaluate a call; ``discard`` says the result is unused (a statement)."""
        if isinstance(node.func, ast.Attribute):
            obj = self.expr(node.func.value)
            if is_array(obj) or is_line(obj):
                return self.method(obj, node.func.attr, node)
            callee = self.attribute(obj, node.func.attr, node.func)
        else:
            callee = self.expr(node.func)
        if not isinstance(callee, PyVal):
            self.fail(f"'{ast.unparse(node.func)}' is not callable", node)
        fn = callee.value
        if fn is print:
            build_print(self, node)
            return None
        if isinstance(fn, Func):
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg is not None}
            return self.call_func(fn, args, kwargs, node, discard)
        name = ast.unparse(node.func)
        if node.keywords:
            self.fail(f"{name}() takes no keyword arguments in kernels", node)
        args = [self.expr(a) for a in node.args]
        if isinstance(fn, ScalarType | ElemVar):
            if len(args) != 1:
                self.fail(f"the cast {name}(x) takes one value", node)
            elem = fn.elem if isinstance(fn, ScalarType) else self.bound(fn, node)
            return explicit_cast(self, args[0], elem, node)
        entry = _PY_BUILTINS.get(id(fn))
        if entry is not None and entry[0] is fn:
            return self.python_builtin(entry[1], fn, args, node)
        if isinstance(fn, Intrinsic):
            if fn.name in FOLDABLE and all(isinstance(a, PyVal) for a in args):
                host = fn.host
                return self.comptime(lambda: host(*(a.value for a in args)), node)  # type: ignore[misc, union-attr]
            return HANDLERS[fn.name](self, args, node, discard)
        self.fail(f"cannot call {fn!r} in a kernel", node)

    def python_builtin(
        self, name: str, fn: Callable[..., object], args: list[Value], node: ast.Call
    ) -> Value | None:
        if all(isinstance(a, PyVal) for a in args) and name != "range":
            return self.comptime(lambda: fn(*(a.value for a in args)), node)  # type: ignore[union-attr]
        if name in FOLDABLE:
            return HANDLERS[name](self, args, node, False)
        if name == "len" and len(args) == 1 and is_line(args[0]):
            return PyVal(width_of(args[0]))
        if name == "len" and len(args) == 1 and is_array(args[0]):
            return views.length(self, args[0])
        if name == "range":
            self.fail("range() is only allowed as the iterable of a for loop", node)
        if name in ("int", "float", "bool"):
            hint = {"int": "i32", "float": "f32", "bool": "bool_"}[name]
            self.fail(f"{name}() of a runtime value; cast with {hint}(...)", node)
        self.fail(f"{name}() is not supported on these arguments", node)

    def bound(self, var: ElemVar, node: ast.AST) -> Elem:
        """The element ``var`` is bound to here."""
        elem = self.frame.bindings.get(var)
        if elem is None:
            self.fail(f"{var} is not bound here: no parameter is declared with it", node)
        return elem

    def elem_arg(self, value: Value, node: ast.AST) -> Elem:
        """A type argument (``f32``, ``Float``, a Comptime type) as an element."""
        given = annotation_type(value.value) if isinstance(value, PyVal) else None
        if isinstance(given, ScalarType):
            return given.elem
        if isinstance(value, PyVal) and isinstance(value.value, ElemVar):
            return self.bound(value.value, node)
        self.fail(f"expected a type such as f32 or Float, got {described(value)}", node)


_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}


def _numbers(a: object, b: object) -> bool:
    """Both bools, or both numbers that are not bools."""
    return (isinstance(a, bool) and isinstance(b, bool)) or (_number(a) and _number(b))


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)
