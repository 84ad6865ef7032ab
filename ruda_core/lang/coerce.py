"""The typing rules of the kernel language: promotion, literals and conversions.

* Two typed operands of a binary operation meet at :func:`promote`'s type, with explicit ``CAST``
  instructions: integers follow C's usual arithmetic conversions without integer promotion (the
  wider type wins; at one width signed + unsigned gives unsigned), floats take the wider float
  (``f16`` with ``bf16`` gives ``f32``), an integer with a float gives the float. ``bool`` mixes
  with nothing.
* A compile-time number (a literal, a ``Comptime`` value) adopts the other operand's type and
  must fit it: ``-1`` cannot be ``u32``, a float never becomes an integer, an int or a float
  never becomes ``bool``. Alone it takes ``i32`` (int), ``f32`` (float) or ``bool``. Compile-time
  numbers picked at run time (``30 if flag else 50``, ``TABLE[i]`` of a tuple) adopt a type the
  same way, all of them together.
* Assignment and stores never convert a typed value (:func:`convert`); an explicit cast does
  (:func:`explicit_cast`, with ``CAST`` semantics: integers wrap, floats truncate toward zero).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ..ir import Builtin, Const, Elem, Fragment, Local, Op, Operand, Param
from .scope import BuilderState, LiteralPick, PyVal, Value, is_array, width_of

__all__ = [
    "compile_time_number",
    "convert",
    "default_elem",
    "elem_of",
    "explicit_cast",
    "implicit",
    "literal",
    "lossless",
    "operand",
    "promote",
    "round_float",
]


def elem_of(value: Value) -> Elem | None:
    """The element of a typed scalar; ``None`` for compile-time values and arrays."""
    if isinstance(value, Const | Local | Builtin):
        return value.elem
    if isinstance(value, Param) and not value.is_array:
        return value.elem
    return None


def promote(a: Elem, b: Elem) -> Elem | None:
    """The common type of two typed operands, or ``None`` when they do not mix."""
    if a is b:
        return a
    if a is Elem.BOOL or b is Elem.BOOL:
        return None
    if a.is_float and b.is_float:
        if a.bits == b.bits:
            return Elem.F32  # f16 with bf16
        return a if a.bits > b.bits else b
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return b if a.is_signed else a


def round_float(value: float, elem: Elem) -> float:
    """``value`` rounded to the nearest value of the float element ``elem``."""
    if elem is Elem.F64:
        return float(value)
    with np.errstate(over="ignore"):
        if elem is Elem.F16:
            return float(np.float16(value))
        if elem is Elem.BF16:  # once, from the double: never through f32 first
            return float(np.float64(value).astype(elem.numpy))
        return float(np.float32(value))


def _int_fits(value: int, elem: Elem) -> bool:
    info = np.iinfo(elem.numpy)
    return int(info.min) <= value <= int(info.max)


def literal(b: BuilderState, value: object, elem: Elem, node: ast.AST | None) -> Const:
    """The compile-time ``value`` as a constant of ``elem`` (implicit adoption).

    :raises CompilationError: when it is not a number of that kind or does not fit.
    """
    if isinstance(value, bool):
        if elem is Elem.BOOL:
            return Const(value, elem)
    elif isinstance(value, int):
        if elem.is_int and _int_fits(value, elem):
            return Const(value, elem)
        if elem.is_float:
            result = round_float(float(value), elem) if abs(value) < 2**1024 else math.inf
            if math.isfinite(result):
                return Const(result, elem)
        if elem.is_int:
            b.fail(f"{value} does not fit {elem}; cast explicitly with {elem}(...)", node)
    elif isinstance(value, float):
        if elem.is_float:
            result = round_float(value, elem)
            if math.isfinite(result) or not math.isfinite(value):
                return Const(result, elem)
            b.fail(f"{value!r} overflows {elem}", node)
        if elem.is_int:
            b.fail(
                f"the float {value!r} cannot take the integer type {elem}; cast the integer "
                f"operand to a float, e.g. f32(...)",
                node,
            )
    else:
        b.fail(f"{value!r} is not a number and cannot be used as {elem}", node)
    b.fail(f"{value!r} cannot be used as {elem}", node)


def compile_time_number(value: Value) -> object:
    """The compile-time number that types ``value`` when it stands alone (a literal's value, a
    pick's typical value), else None."""
    if isinstance(value, PyVal):
        return value.value
    return value.typical if isinstance(value, LiteralPick) else None


def default_elem(b: BuilderState, value: object, node: ast.AST | None) -> Elem:
    """The type a compile-time value takes alone: int -> i32, float -> f32, bool -> bool."""
    if isinstance(value, bool):
        return Elem.BOOL
    if isinstance(value, int):
        if not _int_fits(value, Elem.I32):
            b.fail(f"{value} does not fit i32; give it a type, e.g. i64({value})", node)
        return Elem.I32
    if isinstance(value, float):
        return Elem.F32
    b.fail(f"{value!r} is not a number, so it cannot be a runtime value", node)


def _pick(b: BuilderState, pick: LiteralPick, consts: list[Const], elem: Elem) -> Operand:
    if pick.key.elem is Elem.BOOL:
        return b.emit(Op.SELECT, elem, pick.key, *consts)
    return b.emit(Op.INDEX, elem, b.constant_table(tuple(consts)), pick.key)


def _adopt(b: BuilderState, pick: LiteralPick, elem: Elem, node: ast.AST | None) -> Operand:
    return _pick(b, pick, [literal(b, v, elem, node) for v in pick.values], elem)


def operand(b: BuilderState, value: Value, node: ast.AST | None) -> Operand:
    """``value`` as a typed scalar operand (a compile-time number takes its default type)."""
    if isinstance(value, PyVal):
        return literal(b, value.value, default_elem(b, value.value, node), node)
    if isinstance(value, LiteralPick):
        return _adopt(b, value, default_elem(b, value.typical, node), node)
    if is_array(value):
        b.fail(f"array '{value}' cannot be used as a scalar value; index it", node)
    if isinstance(value, Fragment):
        b.fail(f"the cmma.Matrix '{value}' is used only by cmma operations", node)
    return value  # type: ignore[return-value]  # a scalar Param, checked by is_array


def implicit(b: BuilderState, value: Value, elem: Elem, node: ast.AST | None) -> Operand:
    """``value`` as ``elem`` for an operation: adopt a literal, or CAST a typed value."""
    if isinstance(value, PyVal):
        return literal(b, value.value, elem, node)
    if isinstance(value, LiteralPick):
        return _adopt(b, value, elem, node)
    op = operand(b, value, node)
    if op.elem is elem:
        return op
    return b.emit(Op.CAST, elem, op)


def convert(
    b: BuilderState, value: Value, elem: Elem, node: ast.AST | None, target: str, width: int = 1
) -> Operand:
    """``value`` for a write to ``target`` of type ``elem`` (a line of ``width`` lanes when it
    is above 1): a literal adopts ``elem`` (every lane of a line); a typed value must already
    have that type and width.

    :raises CompilationError: "cannot assign f64 to local 'acc' of type f32; cast …".
    """
    if isinstance(value, PyVal):
        return literal(b, value.value, elem, node)
    if isinstance(value, LiteralPick):
        return _adopt(b, value, elem, node)
    op = operand(b, value, node)
    given = width_of(op)
    if op.elem is not elem or given != width:
        have = op.type_text if isinstance(op, Local) else str(op.elem)
        want = f"{elem}x{width}" if width > 1 else str(elem)
        if given == width:
            hint = f"cast with {elem}(...)"
        elif width == 1:
            hint = "pick a lane (v[0]) or store the line with store_line(i, v)"
        else:
            hint = f"build a line, e.g. Line.splat(v, {width})"
        b.fail(f"cannot assign {have} to {target} of type {want}; {hint}", node)
    return op


def lossless(source: Elem, target: Elem) -> bool:
    """Whether every value of ``source`` is exactly a value of ``target``: a wider integer of a
    signedness that holds it, an integer with fewer bits than a float's significand, a wider
    float. ``bool`` widens to nothing."""
    if Elem.BOOL in (source, target) or source is target:
        return False
    if source.is_int and target.is_int:
        if source.is_signed and not target.is_signed:
            return False
        return target.bits > source.bits or (
            source.is_signed == target.is_signed and target.bits == source.bits
        )
    if source.is_int:
        significand = {Elem.F16: 11, Elem.BF16: 8, Elem.F32: 24, Elem.F64: 53}[target]
        return source.bits - int(source.is_signed) <= significand
    if target.is_int:
        return False
    return target.bits > source.bits


def explicit_cast(b: BuilderState, value: Value, elem: Elem, node: ast.AST | None) -> Operand:
    """``elem(value)``: a typed value is CAST; a compile-time number converts like CAST does."""
    if isinstance(value, LiteralPick):
        consts = [explicit_cast(b, PyVal(v), elem, node) for v in value.values]
        return _pick(b, value, [c for c in consts if isinstance(c, Const)], elem)
    if not isinstance(value, PyVal):
        op = operand(b, value, node)
        return op if op.elem is elem else b.emit(Op.CAST, elem, op)
    v = value.value
    if not isinstance(v, bool | int | float):
        b.fail(f"cannot convert {v!r} to {elem}", node)
    if elem is Elem.BOOL:
        return Const(bool(v), elem)
    if elem.is_float:
        return literal(b, float(v), elem, node)
    if isinstance(v, float):
        if not math.isfinite(v):
            b.fail(f"cannot convert {v!r} to {elem}", node)
        v = math.trunc(v)
    wrapped = int(v) % (1 << elem.bits)
    if elem.is_signed and wrapped >= 1 << (elem.bits - 1):
        wrapped -= 1 << elem.bits
    return Const(wrapped, elem)
