"""Calls of :mod:`.cmma` in kernels: each handler turns one call into ``CMMA_*`` IR (see
:mod:`ruda_core.ir.ops` for their meaning). Registered in :data:`.intrinsics.HANDLERS`."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, TypeVar, cast

from ..ir import (
    Const,
    Elem,
    Fragment,
    Instr,
    LocalArray,
    MatrixElem,
    MatrixLayout,
    MatrixRole,
    Op,
    Operand,
    Param,
    SharedArray,
)
from .coerce import convert, implicit
from .scope import PyVal, Value, View, is_array

if TYPE_CHECKING:
    from .expressions import ExprBuilder
    from .intrinsics import Handler

__all__ = ["MATRIX_HANDLERS"]

_T = TypeVar("_T")


def _count(
    b: ExprBuilder, name: str, args: list[Value], counts: tuple[int, ...], node: ast.AST
) -> None:
    if len(args) not in counts:
        wanted = " or ".join(map(str, counts))
        b.fail(f"cmma.{name}() takes {wanted} arguments, got {len(args)}", node)


def _static(b: ExprBuilder, value: Value, kind: type[_T], what: str, node: ast.AST) -> _T:
    if not isinstance(value, PyVal) or not isinstance(value.value, kind):
        b.fail(f"{what} must be a compile-time {kind.__name__}, got {value}", node)
    return value.value


def fragment(b: ExprBuilder, value: Value, name: str, node: ast.AST) -> Fragment:
    """``value`` as a fragment operand of ``cmma.<name>``."""
    if not isinstance(value, Fragment):
        b.fail(f"cmma.{name}() needs a cmma.Matrix, got {value}", node)
    return value


def _declare(
    b: ExprBuilder,
    role: MatrixRole,
    shape: tuple[int, int, int],
    elem: Elem,
    layout: MatrixLayout | None,
    tf32: bool,
) -> Fragment:
    frag = Fragment(b.unique(b.name_hint or "_matrix"), role, *shape, elem, layout, tf32)
    b.name_hint = None
    b.fragments.append(frag)
    return frag


def _matrix(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _count(b, "Matrix", args, (5, 6), node)
    role = _static(b, args[0], MatrixRole, "the role (cmma.A, cmma.B, cmma.ACCUMULATOR)", node)
    m, n, k = (_static(b, a, int, "m, n and k", node) for a in args[1:4])
    shape = (m, n, k)
    if min(shape) < 1:
        b.fail(f"cmma.Matrix shape {shape} needs m, n, k >= 1", node)
    tf32 = isinstance(args[4], PyVal) and args[4].value is MatrixElem.TF32
    elem = Elem.F32 if tf32 else b.elem_arg(args[4], node)
    layout = None
    if len(args) == 6:
        layout = _static(
            b, args[5], MatrixLayout, "the layout (cmma.ROW_MAJOR, cmma.COL_MAJOR)", node
        )
    allowed = (
        {Elem.F16, Elem.F32} if role is MatrixRole.ACCUMULATOR else {Elem.F16, Elem.BF16, Elem.F32}
    )
    if elem not in allowed or (tf32 and role is MatrixRole.ACCUMULATOR):
        b.fail(
            f"a cmma.Matrix of role {role.value} holds f16, bf16, f32 or cmma.tf32 (A, B) or "
            f"f16, f32 (accumulators), not {args[4]}",
            node,
        )
    if layout is None and role is not MatrixRole.ACCUMULATOR:
        b.fail(
            f"a cmma.Matrix of role {role.value} needs a layout: cmma.ROW_MAJOR or cmma.COL_MAJOR",
            node,
        )
    return _declare(b, role, shape, elem, layout, tf32)


def _tile(
    b: ExprBuilder,
    name: str,
    arr: Value,
    offset: Value,
    stride: Value,
    frag: Fragment,
    node: ast.AST,
) -> tuple[Param | SharedArray, Operand, Operand]:
    """The array, ``u32`` offset and ``u32`` stride of a tile of ``frag``."""
    if not is_array(arr) or isinstance(arr.base if isinstance(arr, View) else arr, LocalArray):
        b.fail(f"cmma.{name}() moves tiles of global arrays and SharedMemory, got {arr}", node)
    base = cast(Param | SharedArray, arr.base if isinstance(arr, View) else arr)
    if base.elem is not frag.elem:
        b.fail(
            f"cmma.{name}() of '{frag.name}' ({frag.elem}) needs an array of {frag.elem}, "
            f"not '{base}' of {base.elem}",
            node,
        )
    at = implicit(b, offset, Elem.U32, node)
    if isinstance(arr, View):
        at = b.emit(Op.ADD, Elem.U32, arr.offset, at)
    return base, at, implicit(b, stride, Elem.U32, node)


def _fill(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "fill", args, (2,), node)
    frag = fragment(b, args[0], "fill", node)
    value = convert(b, args[1], frag.elem, node, f"an element of '{frag.name}'")
    b.append(Instr(Op.CMMA_FILL, None, (frag, value), b.loc))


def _load(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "load", args, (4,), node)
    frag = fragment(b, args[0], "load", node)
    if frag.layout is None:
        b.fail(
            f"the accumulator '{frag.name}' has no layout to load with; declare it with "
            "cmma.ROW_MAJOR or cmma.COL_MAJOR",
            node,
        )
    arr, offset, stride = _tile(b, "load", args[1], args[2], args[3], frag, node)
    layout = Const(frag.layout.value, Elem.U32)
    b.append(Instr(Op.CMMA_LOAD, None, (frag, arr, offset, stride, layout), b.loc))


def _store(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "store", args, (5,), node)
    frag = fragment(b, args[2], "store", node)
    if frag.role is not MatrixRole.ACCUMULATOR:
        b.fail(
            f"cmma.store() writes accumulators; '{frag.name}' is of role {frag.role.value}", node
        )
    layout = _static(b, args[4], MatrixLayout, "the layout (cmma.ROW_MAJOR, cmma.COL_MAJOR)", node)
    arr, offset, stride = _tile(b, "store", args[0], args[1], args[3], frag, node)
    code = Const(layout.value, Elem.U32)
    b.append(Instr(Op.CMMA_STORE, None, (arr, offset, frag, stride, code), b.loc))


def _execute(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> None:
    _count(b, "execute", args, (4,), node)
    frags = [fragment(b, a, "execute", node) for a in args]
    roles = (MatrixRole.A, MatrixRole.B, MatrixRole.ACCUMULATOR, MatrixRole.ACCUMULATOR)
    for frag, role, what in zip(frags, roles, "abcd", strict=True):
        if frag.role is not role:
            b.fail(
                f"cmma.execute(a, b, c, d): {what} must be of role {role.value}, "
                f"'{frag.name}' is {frag.role.value}",
                node,
            )
    if len({(f.m, f.n, f.k) for f in frags}) != 1:
        shapes = ", ".join(f"{f.name} {f.m}x{f.n}x{f.k}" for f in frags)
        b.fail(f"cmma.execute() needs one m, n, k for all four matrices, got {shapes}", node)
    a, bb, c, d = frags
    if a.matrix_elem is not bb.matrix_elem or c.elem is not d.elem:
        b.fail(
            f"cmma.execute() needs a and b of one type and c and d of one type, got "
            f"{a.matrix_elem}, {bb.matrix_elem}, {c.elem}, {d.elem}",
            node,
        )
    b.append(Instr(Op.CMMA_EXECUTE, None, tuple(frags), b.loc))


def _cast(b: ExprBuilder, args: list[Value], node: ast.Call, discard: bool) -> Value:
    _count(b, "cast", args, (2,), node)
    src = fragment(b, args[0], "cast", node)
    if src.role is not MatrixRole.ACCUMULATOR:
        b.fail(f"cmma.cast() converts accumulators; '{src.name}' is of role {src.role.value}", node)
    elem = b.elem_arg(args[1], node)
    if elem not in (Elem.F16, Elem.F32):
        b.fail(f"cmma.cast() gives an accumulator of f16 or f32, not {elem}", node)
    dst = _declare(b, MatrixRole.ACCUMULATOR, (src.m, src.n, src.k), elem, src.layout, False)
    b.append(Instr(Op.CMMA_CAST, None, (dst, src), b.loc))
    return dst


#: Handlers by intrinsic name.
MATRIX_HANDLERS: dict[str, Handler] = {
    "cmma.Matrix": _matrix,
    "cmma.fill": _fill,
    "cmma.load": _load,
    "cmma.store": _store,
    "cmma.execute": _execute,
    "cmma.cast": _cast,
}
