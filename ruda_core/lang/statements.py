"""Statements of the kernel language, and the inlining of ``@func`` calls.

* ``name = value``: a name bound once (one plain assignment, never augmented, never a loop
  target) to a compile-time value or an array stays that value; otherwise the name is a local
  whose type is its first value's (a lone literal: int -> i32, float -> f32, bool -> bool) or
  its annotation's (``acc: f32 = 0``). Later writes must have that type (literals adopt it).
  Kernel parameters cannot be assigned.
* ``x, y = f(v)`` unpacks a ``@func`` that returns a tuple, and ``x, y = y, x`` assigns
  several names at once; every value on the right is read before any target is written.
* ``a[i] = v`` and ``a[i] op= v`` store ``v`` of the array's element type (literals adopt it).
* A name is read only where every path to the read assigns it (:mod:`.assignment`).
* ``if``/``elif``/``else`` on a compile-time condition builds only the branch taken; on a runtime
  condition (which must be bool) it is an IR ``If``.
* ``for v in range(...)`` (1 to 3 arguments, the step a compile-time non-zero int) is an IR
  ``RangeLoop``, even when the bounds are compile-time; the variable's type is the bounds'
  common type (``i32`` for literals). ``for v in unroll(range(...))`` and ``for v in <tuple>``
  over compile-time values are unrolled, so ``v`` is a compile-time value; ``break`` and
  ``continue`` cannot leave an unrolled loop.
* ``while cond`` is a ``Loop`` that tests ``cond`` first; ``break``, ``continue``, ``return``
  (no value, ends the unit's kernel) and ``pass`` mean what they mean in Python.
* A call whose result is unused is a statement (``sync_units()``, ``atomic_add(...)``, a device
  function).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from collections.abc import Iterable
from typing import Any

from ..ir import (
    Break,
    Builtin,
    BuiltinKind,
    Const,
    Continue,
    Elem,
    Fragment,
    If,
    Local,
    Loop,
    Op,
    Param,
    ParamKind,
    RangeLoop,
)
from ..ir import Return as ReturnStmt
from . import assignment, views
from .coerce import compile_time_number, convert, default_elem, elem_of, implicit, lossless, operand
from .expressions import ExprBuilder
from .func import Func
from .scope import (
    Fields,
    Frame,
    LiteralPick,
    PyVal,
    Return,
    Several,
    Value,
    is_array,
    width_of,
)
from .types import (
    ArrayType,
    Comptime,
    ComptimeType,
    ElemVar,
    LineType,
    ScalarType,
    TensorType,
    annotation_type,
)

__all__ = ["MAX_UNROLL", "StmtBuilder"]

#: The most turns an ``unroll(range(...))`` writes out (each a copy of the loop's body).
MAX_UNROLL = 4096


class StmtBuilder(ExprBuilder):
    """Builds statements into the current block."""

    def stmts(self, body: Iterable[ast.stmt]) -> None:
        ret = self.frame.ret
        for node in body:
            if ret is not None and ret.finished:
                return  # after a top-level return of a device function: unreachable
            self.stmt(node)

    def stmt(self, node: ast.stmt) -> None:
        self.loc = self.locate(node)
        if isinstance(node, ast.Assign):
            self.name_hint = node.targets[0].id if isinstance(node.targets[0], ast.Name) else None
            unpack = isinstance(node.targets[0], ast.Tuple)
            value = self.expr_or_several(node.value) if unpack else self.expr(node.value)
            self.name_hint = None
            if len(node.targets) > 1:
                self.pin(value)  # read by every target: never retarget it into the first
            for target in node.targets:
                self.assign(target, value, node)
        elif isinstance(node, ast.AnnAssign):
            self.ann_assign(node)
        elif isinstance(node, ast.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, ast.If):
            self.if_stmt(node)
        elif isinstance(node, ast.For):
            self.for_stmt(node)
        elif isinstance(node, ast.While):
            self.while_stmt(node)
        elif isinstance(node, ast.Break | ast.Continue):
            self.jump(node)
        elif isinstance(node, ast.Return):
            self.return_stmt(node)
        elif isinstance(node, ast.Expr):
            self.expr_stmt(node)
        elif not isinstance(node, ast.Pass):
            self.fail(f"{type(node).__name__} is not supported in kernels", node)

    # -- assignment -------------------------------------------------------------------------

    def assign(self, target: ast.expr, value: Value, node: ast.stmt) -> None:
        if isinstance(target, ast.Tuple):
            self.unpack(target, value, node)
        elif isinstance(target, ast.Subscript):
            arr = self.expr(target.value)
            self.store(arr, self.element_index(arr, target.slice), value, target)
        elif isinstance(target, ast.Name):
            self.bind(target.id, value, node)
        else:
            self.fail("assign to a name or an array element", target)

    def unpack(self, target: ast.Tuple, value: Value, node: ast.stmt) -> None:
        """``a, b = value``: every value is read before any target is written (a value an
        earlier target overwrites is copied first)."""
        if isinstance(value, PyVal) and isinstance(value.value, tuple):
            items: tuple[Value, ...] = tuple(PyVal(v) for v in value.value)
        elif isinstance(value, Several):
            items = value.items
        else:
            self.fail("only a tuple or a @func returning one can be unpacked", node)
        if len(items) != len(target.elts):
            self.fail(f"cannot unpack {len(items)} values into {len(target.elts)} targets", node)
        # a value a target before it writes is copied first: `a, b = b, a`
        clobbered = {
            self.frame.locals_by_name.get(t.id) for t in target.elts[:-1] if isinstance(t, ast.Name)
        }
        kept = [
            self.emit(Op.ASSIGN, item.elem, item)
            if isinstance(item, Local) and item in clobbered
            else item
            for item in items
        ]
        for value_kept in kept:
            self.pin(value_kept)
        for elt, item in zip(target.elts, kept, strict=True):
            self.assign(elt, item, node)

    def check_not_param(self, name: str, node: ast.AST) -> None:
        """Kernel parameters are read-only names."""
        if isinstance(self.frame.scope.get(name), Param) and self.frame.parsed.kind == "kernel":
            self.fail(f"cannot assign to the parameter '{name}'; copy it into a new name", node)

    def bind(self, name: str, value: Value, node: ast.AST) -> None:
        frame = self.frame
        self.check_not_param(name, node)
        once = name in frame.parsed.once
        if is_array(value) or isinstance(value, Fragment) or (isinstance(value, PyVal) and once):
            if not once:
                what = "a cmma.Matrix" if isinstance(value, Fragment) else "an array"
                self.fail(
                    f"{what} can be bound only to a name assigned once; '{name}' is "
                    "assigned elsewhere too",
                    node,
                )
            frame.scope[name] = value
            return
        self.write_name(name, value, node)

    def write_name(
        self,
        name: str,
        value: Value,
        node: ast.AST,
        elem: Elem | None = None,
        width: int | None = None,
    ) -> None:
        """Write ``value`` to the local ``name``, declaring it (of ``elem`` and ``width``, else
        of the value's type) at its first write."""
        frame = self.frame
        local = frame.locals_by_name.get(name)
        if local is None:
            if width is None:
                width = width_of(value)
            if elem is None:
                elem = elem_of(value)
            if elem is None:
                if is_array(value):
                    self.fail(f"the array '{value}' cannot be stored in a local", node)
                elem = default_elem(self, compile_time_number(value), node)
            local = self.new_local(name, elem, width)
            frame.locals_by_name[name] = local
        elif elem is not None and (elem is not local.elem or width not in (None, local.width)):
            wanted = f"{elem}x{width}" if width is not None and width > 1 else str(elem)
            self.fail(f"'{name}' is already a local of type {local.type_text}, not {wanted}", node)
        frame.scope[name] = local
        target = f"local '{name}'"
        self.write(local, convert(self, value, local.elem, node, target, local.width))

    def ann_assign(self, node: ast.AnnAssign) -> None:
        ann = self.expr(node.annotation)
        name = node.target.id  # type: ignore[union-attr]  # checked by the syntax pass
        value = self.expr(node.value)  # type: ignore[arg-type]  # checked by the syntax pass
        self.check_not_param(name, node)
        if isinstance(ann, PyVal) and isinstance(ann.value, LineType):
            line = ann.value
            elem = self.elem_arg(PyVal(line.elem), node.annotation)
            self.write_name(name, value, node, elem, line.width)
            return
        self.write_name(name, value, node, self.elem_arg(ann, node.annotation))

    def aug_assign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Subscript):
            arr = self.expr(target.value)
            index = self.element_index(arr, target.slice)
            current = self.load(arr, index, target)
            self.store(
                arr, index, self.binary(node.op, current, self.expr(node.value), node), target
            )
            return
        if not isinstance(target, ast.Name):
            self.fail("assign to a name or an array element", target)
        name = target.id
        current = self.lookup(name, target)
        self.bind(name, self.binary(node.op, current, self.expr(node.value), node), node)

    def load(self, arr: Value, index: Value, node: ast.AST) -> Value:
        if not is_array(arr):
            self.fail(f"'{arr}' is not an array", node)
        base, at = views.address(self, arr, self.index(index, node))
        return self.emit(Op.INDEX, arr.elem, base, at)  # type: ignore[union-attr, arg-type]

    def store(self, arr: Value, index: Value, value: Value, node: ast.AST) -> None:
        if not is_array(arr):
            self.fail(f"'{arr}' is not an array; only array elements can be assigned", node)
        index_op = self.index(index, node)
        v = convert(self, value, arr.elem, node, f"an element of '{arr}'")  # type: ignore[union-attr]
        arr, index_op = views.address(self, arr, index_op)
        self.emit_to(None, Op.INDEX_ASSIGN, arr, index_op, v)  # type: ignore[arg-type]  # array

    # -- control flow -----------------------------------------------------------------------

    def if_stmt(self, node: ast.If) -> None:
        test = self.expr(node.test)
        if isinstance(test, PyVal):
            self.stmts(node.body if test.value else node.orelse)
            return
        cond = self.boolean(test, node.test, "an if condition")
        loc, entry = self.loc, assignment.here(self.frame)
        with self.capture() as then:
            self.stmts(node.body)
        then_end = assignment.here(self.frame)
        assignment.restart(self.frame, entry)
        with self.capture() as orelse:
            self.stmts(node.orelse)
        assignment.join(self.frame, [then_end, assignment.here(self.frame)])
        self.append(If(cond, tuple(then), tuple(orelse), loc))

    def expr_stmt(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self.call(node.value, discard=True)
        elif not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.fail("this expression has no effect", node)

    def jump(self, node: ast.Break | ast.Continue) -> None:
        word = "break" if isinstance(node, ast.Break) else "continue"
        if not self.frame.loops or self.frame.loops[-1] == "unroll":
            self.fail(f"'{word}' cannot leave an unrolled loop", node)
        exits = self.frame.exits[-1]
        assignment.jump(self.frame, exits.breaks if word == "break" else exits.continues)
        self.append(Break(self.loc) if word == "break" else Continue(self.loc))

    def while_stmt(self, node: ast.While) -> None:
        loc, entry = self.loc, assignment.here(self.frame)
        before = self.returns_in_loops()
        with self.loop("loop") as exits, self.capture() as body:
            test = self.expr(node.test)
            if isinstance(test, PyVal) and not test.value:
                return
            if not isinstance(test, PyVal):
                cond = self.boolean(test, node.test, "a while condition")
                self.append(If(self.emit(Op.NOT, Elem.BOOL, cond), (Break(loc),), (), loc))
            self.stmts(node.body)
        self.append(Loop(tuple(body), loc))
        self.after_loop(before)
        tested = not isinstance(test, PyVal)  # else `while True`: only a break leaves it
        assignment.leave_loop(self.frame, entry, exits, tested=tested, runs_once=False)

    def for_stmt(self, node: ast.For) -> None:
        name = node.target.id  # type: ignore[attr-defined]  # a Name, by the syntax pass
        self.check_not_param(name, node.target)
        it = node.iter
        if isinstance(it, ast.Call) and self.callee(it) is range:
            self.range_loop(name, it, node)
            return
        if isinstance(it, ast.Call) and getattr(self.callee(it), "name", None) == "grid_stride":
            if len(it.args) != 1 or it.keywords:
                self.fail("grid_stride() takes the element count n", it)
            launch = self.emit(
                Op.MUL, Elem.U32, Builtin(BuiltinKind.RUDA_COUNT), Builtin(BuiltinKind.RUDA_DIM)
            )
            start = Builtin(BuiltinKind.ABSOLUTE_POS)
            self.strided_loop(name, start, self.expr(it.args[0]), launch, it, node)
            return
        if isinstance(it, ast.Call) and getattr(self.callee(it), "name", None) == "unroll":
            if len(it.args) != 1 or it.keywords:
                self.fail("unroll() takes one iterable", it)
            values = self.unroll_values(it.args[0])
        else:
            iterable = self.expr(it)
            if not isinstance(iterable, PyVal) or not isinstance(iterable.value, tuple):
                self.fail("a for loop iterates range(...), unroll(range(...)) or a tuple", it)
            values = list(iterable.value)
        for value in values:
            self.frame.scope[name] = self.classify(value, name, node)
            with self.loop("unroll"):
                self.stmts(node.body)

    def callee(self, call: ast.Call) -> object:
        value = self.expr(call.func)
        return value.value if isinstance(value, PyVal) else None

    def unroll_values(self, node: ast.expr) -> list[object]:
        if isinstance(node, ast.Call) and self.callee(node) is range:
            bounds = [self.expr(a) for a in node.args]
            if not all(isinstance(b, PyVal) for b in bounds):
                self.fail("unroll(range(...)) needs compile-time bounds", node)
            values: list[Any] = [b.value for b in bounds if isinstance(b, PyVal)]
            turns = self.comptime(lambda: len(range(*values)), node)
            if (
                isinstance(turns, PyVal)
                and isinstance(turns.value, int)
                and turns.value > MAX_UNROLL
            ):
                self.fail(
                    f"unroll(range(...)) of {turns.value} turns: at most {MAX_UNROLL} are "
                    "written out; loop over range(...) instead",
                    node,
                )
            result = self.comptime(lambda: tuple(range(*values)), node)
        else:
            result = self.expr(node)
        if not isinstance(result, PyVal) or not isinstance(result.value, tuple):
            self.fail("unroll() needs range(...) of compile-time ints or a tuple", node)
        return list(result.value)

    def range_loop(self, name: str, call: ast.Call, node: ast.For) -> None:
        if call.keywords or not 1 <= len(call.args) <= 3:
            self.fail("range() takes 1 to 3 positional arguments", call)
        args = [self.expr(a) for a in call.args]
        start, end = (PyVal(0), args[0]) if len(args) == 1 else (args[0], args[1])
        step = args[2] if len(args) == 3 else PyVal(1)
        if not isinstance(step, PyVal):
            self.strided_loop(name, start, end, step, call, node)
            return
        if not isinstance(step.value, int) or step.value == 0:
            self.fail("the step of range() must be a non-zero int", call)
        local = self.frame.locals_by_name.get(name)
        elem = local.elem if local is not None else self.common(start, end, call, "range()")
        if not elem.is_int:
            self.fail(f"range() needs integers, got {elem}", call)
        for bound in (start, end):
            bound_elem = elem_of(bound)
            if bound_elem is not None and not bound_elem.is_int:
                self.fail(f"range() needs integer bounds, got {bound_elem}", call)
        if step.value < 0 and not elem.is_signed:
            self.fail(f"a negative step needs a signed loop variable, not {elem}", call)
        start_op, end_op = implicit(self, start, elem, call), implicit(self, end, elem, call)
        if local is None:
            local = self.new_local(name, elem)
            self.frame.locals_by_name[name] = local
        entry = assignment.here(self.frame)
        self.frame.scope[name] = local
        loc = self.loc
        before = self.returns_in_loops()
        with self.loop("loop") as exits, self.capture() as body:
            self.stmts(node.body)
        step_const = Const(step.value, elem)
        self.append(RangeLoop(local, start_op, end_op, step_const, tuple(body), loc))
        self.after_loop(before)
        runs_once = (
            isinstance(start_op, Const)
            and isinstance(end_op, Const)
            and len(range(int(start_op.value), int(end_op.value), step.value)) > 0
        )
        assignment.leave_loop(self.frame, entry, exits, tested=True, runs_once=runs_once)

    def strided_loop(
        self, name: str, start: Value, end: Value, step: Value, call: ast.Call, node: ast.For
    ) -> None:
        """``range(start, end, step)`` with a run-time ``step`` (a grid-stride loop): a loop
        that checks and advances at its top, so ``continue`` advances too. The remaining
        distance is compared in the unsigned type of the loop's width, so the variable never
        wraps past ``end``. A zero step runs no iteration (Python raises instead)."""
        local = self.frame.locals_by_name.get(name)
        elem = local.elem if local is not None else self.common(start, end, call, "range()")
        if not elem.is_int:
            self.fail(f"range() needs integers, got {elem}", call)
        step_elem = elem_of(step)
        if step_elem is None or not step_elem.is_int:
            self.fail(f"the step of range() must be an integer, got {step_elem}", call)
        if local is None:
            elem = self.common(Const(0, elem), step, call, "range()")
        first = self.temp(Elem.BOOL)
        ends = [self.temp(elem) for _ in range(2)]
        for temp, value in zip(ends, (end, step), strict=True):
            self.write(temp, implicit(self, value, elem, call))
        stop, stride = ends
        if local is None:
            local = self.new_local(name, elem)
            self.frame.locals_by_name[name] = local
        entry = assignment.here(self.frame)
        self.write(local, implicit(self, start, elem, call))
        self.write(first, Const(True, Elem.BOOL))
        self.frame.scope[name] = local
        loc, before = self.loc, self.returns_in_loops()
        with self.loop("loop") as exits, self.capture() as body:
            with self.capture() as on_first:
                self.write(first, Const(False, Elem.BOOL))
                self._break_unless(self._range_enters(elem, local, stop, stride), loc)
            with self.capture() as on_next:
                self._break_unless(self._range_continues(elem, local, stop, stride), loc)
                self.write(local, self.emit(Op.ADD, elem, local, stride))
            self.append(If(first, tuple(on_first), tuple(on_next), loc))
            self.stmts(node.body)
        self.append(Loop(tuple(body), loc))
        self.after_loop(before)
        assignment.leave_loop(self.frame, entry, exits, tested=True, runs_once=False)

    def _break_unless(self, cond: Local, loc: Any) -> None:
        self.append(If(self.emit(Op.NOT, Elem.BOOL, cond), (Break(loc),), (), loc))

    def _range_enters(self, elem: Elem, i: Local, stop: Local, step: Local) -> Local:
        """Whether ``range(i, stop, step)`` has a first iteration."""
        zero, b = Const(0, elem), Elem.BOOL
        up = self.emit(Op.AND, b, self.emit(Op.GT, b, step, zero), self.emit(Op.LT, b, i, stop))
        if not elem.is_signed:
            return up
        down = self.emit(Op.AND, b, self.emit(Op.LT, b, step, zero), self.emit(Op.GT, b, i, stop))
        return self.emit(Op.OR, b, up, down)

    def _range_continues(self, elem: Elem, i: Local, stop: Local, step: Local) -> Local:
        """Whether ``i + step`` is still inside the range, given that ``i`` is: the distance
        to ``stop`` exceeds the step, both as unsigned numbers of ``elem``'s width."""
        u = {8: Elem.U8, 16: Elem.U16, 32: Elem.U32, 64: Elem.U64}[elem.bits]

        def unsigned(x: Local) -> Local:
            return x if elem is u else self.emit(Op.CAST, u, x)

        ahead = self.emit(Op.SUB, u, unsigned(stop), unsigned(i))
        up = self.emit(Op.GT, Elem.BOOL, ahead, unsigned(step))
        if not elem.is_signed:
            return up
        behind = self.emit(Op.SUB, u, unsigned(i), unsigned(stop))
        back = self.emit(Op.NEG, u, unsigned(step))
        down = self.emit(Op.GT, Elem.BOOL, behind, back)
        rising = self.emit(Op.GT, Elem.BOOL, step, Const(0, elem))
        return self.emit(Op.SELECT, Elem.BOOL, rising, up, down)

    def loop(self, kind: str) -> _LoopScope:
        return _LoopScope(self, kind)

    # -- device functions -------------------------------------------------------------------

    def return_stmt(self, node: ast.Return) -> None:
        ret = self.frame.ret
        self.frame.live = False
        if ret is None:  # the kernel itself
            self.append(ReturnStmt(self.loc))
            return
        value = self.expr_or_several(node.value) if node.value is not None else None
        if ret.has_value is not None and ret.has_value != (value is not None):
            self.fail("a function must return a value on every path or on none", node)
        ret.has_value = value is not None
        if value is not None:
            several = isinstance(value, Several)
            if ret.several is not None and ret.several != several:
                want = "a tuple" if ret.several else "one value"
                self.fail(f"every return of this function must give {want}", node)
            ret.several = several
        if ret.direct:
            ret.result = value
        elif value is not None:
            items = value.items if isinstance(value, Several) else (value,)
            if ret.locals is None:
                elems = ret.elems or (None,) * len(items)
                if len(elems) != len(items):
                    self.fail(f"the function returns {len(elems)} values, not {len(items)}", node)
                pairs = zip(elems, items, strict=True)
                ret.locals = tuple(self.result_local(elem, item, node) for elem, item in pairs)
                ret.result = Several(ret.locals) if ret.several else ret.locals[0]
            if len(items) != len(ret.locals):
                self.fail(f"every return of this function must give {len(ret.locals)} values", node)
            for local, item in zip(ret.locals, items, strict=True):
                self.write(local, convert(self, item, local.elem, node, "the result"))
        if len(self.blocks) == ret.depth:
            ret.finished = True
            return
        ret.wrapped = True
        if "loop" in self.frame.loops:
            if ret.done is None:
                ret.done = self.new_local(f"_{self.frame.parsed.name}_done", Elem.BOOL)
            self.write(ret.done, Const(True, Elem.BOOL))
            ret.in_loops += 1
        self.append(Break(self.loc))

    def result_local(self, elem: Elem | None, value: Value, node: ast.AST) -> Local:
        """The local a ``@func`` with several returns writes one result into."""
        elem = elem or elem_of(value)
        if elem is None:
            if not isinstance(value, PyVal | LiteralPick):
                self.fail("a function with several returns cannot return an array", node)
            elem = default_elem(self, compile_time_number(value), node)
        return self.new_local(f"_{self.frame.parsed.name}_result", elem)

    def returns_in_loops(self) -> int:
        ret = self.frame.ret
        return ret.in_loops if ret is not None else 0

    def after_loop(self, before: int) -> None:
        """After an IR loop of a device function that returned from inside it: leave the next
        enclosing loop too (``before`` is :meth:`returns_in_loops` from before the loop)."""
        ret = self.frame.ret
        if ret is not None and ret.done is not None and ret.in_loops > before:
            self.append(If(ret.done, (Break(self.loc),), (), self.loc))

    def call_func(
        self, fn: Func, args: list[Value], kwargs: dict[str, Value], node: ast.Call, discard: bool
    ) -> Value | None:
        if fn in self.inlining:
            self.fail(f"@func '{fn.parsed.name}' calls itself; recursion is not supported", node)
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as exc:
            self.fail(f"bad call of @func '{fn.parsed.name}': {exc}", node)
        bound.apply_defaults()
        annotations = fn.annotations
        bindings = dict(self.frame.bindings)
        params: list[tuple[str, Value]] = []
        for name, raw in bound.arguments.items():
            value = raw if isinstance(raw, Value) else self.classify(raw, name, node)
            ann = annotation_type(annotations.get(name, inspect.Parameter.empty))
            params.append((name, self.check_arg(fn, name, value, ann, bindings, node)))
        ret = Return(
            self.result_elems(fn, annotations.get("return", inspect.Parameter.empty), bindings),
            direct=fn.parsed.returns <= 1 and fn.parsed.tail_return,
        )
        if ret.elems is not None:
            ret.several = typing.get_origin(annotations.get("return")) is tuple
        parsed = fn.parsed
        caller, caller_loc = self.frame, self.loc
        self.frame = Frame(parsed, {}, bindings, ret=ret)
        self.inlining.append(fn)
        try:
            with self.capture() as body:
                ret.depth = len(self.blocks)
                for name, value in params:
                    if name in parsed.assigned and not is_array(value):
                        self.write_name(name, value, node)
                    else:
                        self.pin(value)
                        self.frame.scope[name] = value
                self.stmts(parsed.tree.body)
                if ret.has_value and self.frame.live:
                    self.fail(
                        "it can end without returning a value: a path reaches the end of its "
                        "body; end every path with a return",
                        parsed.tree,
                    )
        finally:
            self.inlining.pop()
            self.frame, self.loc = caller, caller_loc
        if ret.wrapped:
            if ret.done is not None:
                self.write(ret.done, Const(False, Elem.BOOL))
            self.append(Loop((*body, Break(self.loc)), self.loc))
        else:
            self.blocks[-1].extend(body)
        result = ret.result
        if result is None:
            if not discard:
                self.fail(f"@func '{parsed.name}' returns no value", node)
            return None
        if ret.direct and ret.elems is not None:
            return self.convert_result(parsed.name, result, ret.elems, node)
        return result

    def result_elems(
        self, fn: Func, annotation: object, bindings: dict[ElemVar, Elem]
    ) -> tuple[Elem | None, ...] | None:
        """The element types a return annotation names (``f32``, ``T``, ``tuple[f32, T]``)."""
        several = typing.get_origin(annotation) is tuple
        parts = typing.get_args(annotation) if several else (annotation,)
        if several and (not parts or Ellipsis in parts):
            self.fail(f"@func '{fn.parsed.name}': annotate a tuple result as tuple[f32, i32]")
        elems: list[Elem | None] = []
        for part in map(annotation_type, parts):
            if isinstance(part, ScalarType):
                elems.append(part.elem)
            elif isinstance(part, ElemVar):
                elems.append(bindings.get(part))
            elif several:
                self.fail(f"@func '{fn.parsed.name}': a tuple result holds scalar types only")
            else:
                return None
        return tuple(elems)

    def convert_result(
        self, name: str, result: Value, elems: tuple[Elem | None, ...], node: ast.AST
    ) -> Value:
        """A direct result converted to its annotated element types."""
        items = result.items if isinstance(result, Several) else (result,)
        if len(items) != len(elems):
            self.fail(f"@func '{name}' returns {len(items)} values, annotated {len(elems)}", node)
        what = f"the result of @func '{name}'"
        done = tuple(
            item if elem is None else convert(self, item, elem, node, what)
            for item, elem in zip(items, elems, strict=True)
        )
        return Several(done) if isinstance(result, Several) else done[0]

    def check_arg(
        self,
        fn: Func,
        name: str,
        value: Value,
        ann: object,
        bindings: dict[ElemVar, Elem],
        node: ast.AST,
    ) -> Value:
        """Check an argument against its parameter's annotation (binding element variables)."""
        where = f"argument '{name}' of @func '{fn.parsed.name}'"
        if ann is inspect.Parameter.empty:
            return value
        if isinstance(ann, ComptimeType) or ann is Comptime:
            if not isinstance(value, PyVal):
                self.fail(f"{where} must be a compile-time value", node)
            return value
        if isinstance(ann, ArrayType | TensorType):
            tensor = isinstance(ann, TensorType)
            is_tensor = isinstance(value, Param) and value.kind is ParamKind.TENSOR
            if not is_array(value) or (tensor and not is_tensor):
                self.fail(f"{where} must be {'a tensor' if tensor else 'an array'}", node)
            self.bind_elem(ann.elem, value.elem, bindings, where, node)  # type: ignore[union-attr]
            return value
        if isinstance(ann, type) and dataclasses.is_dataclass(ann):
            if not (isinstance(value, PyVal) and isinstance(value.value, Fields)):
                self.fail(f"{where} must be a {ann.__name__} parameter of the kernel", node)
            if value.value.cls is not ann:
                self.fail(f"{where} is a {value.value.cls.__name__}, not a {ann.__name__}", node)
            return value
        if isinstance(ann, ScalarType | ElemVar):
            elem = elem_of(value)
            if isinstance(ann, ElemVar) and ann not in bindings:
                if elem is None:
                    self.fail(f"{where} is a literal; {ann} cannot be inferred from it", node)
                self.bind_elem(ann, elem, bindings, where, node)
            target = ann.elem if isinstance(ann, ScalarType) else bindings[ann]
            if elem is not None and lossless(elem, target):  # an exact widening, as C would do
                return self.emit(Op.CAST, target, operand(self, value, node))
            return convert(self, value, target, node, where)
        self.fail(f"{where} has an unsupported annotation {ann!r}", node)

    def bind_elem(
        self, spec: object, elem: Elem, bindings: dict[ElemVar, Elem], where: str, node: ast.AST
    ) -> None:
        if isinstance(spec, ScalarType):
            if spec.elem is not elem:
                self.fail(f"{where} has {elem} elements; {spec} is declared", node)
            return
        var: ElemVar = spec  # type: ignore[assignment]  # ArrayType/TensorType hold one of two
        bound = bindings.get(var)
        if bound is None:
            if elem not in var.allowed:
                self.fail(f"{where} is {elem}, which {var} does not allow", node)
            bindings[var] = elem
        elif bound is not elem:
            self.fail(f"{where} is {elem}, but {var} is {bound} here", node)


class _LoopScope:
    """``with``: push a loop kind on the current frame for the duration of the block, and for
    an IR loop (``"loop"``) the :class:`~.assignment.LoopExits` that the block's ``break`` and
    ``continue`` statements record (the ``with``'s value)."""

    __slots__ = ("builder", "exits", "frame", "kind")

    def __init__(self, builder: StmtBuilder, kind: str) -> None:
        self.builder = builder
        self.kind = kind
        self.frame = builder.frame
        self.exits = assignment.LoopExits()

    def __enter__(self) -> assignment.LoopExits:
        self.frame.loops.append(self.kind)
        if self.kind == "loop":
            self.frame.exits.append(self.exits)
        return self.exits

    def __exit__(self, *exc: object) -> None:
        self.frame.loops.pop()
        if self.kind == "loop":
            self.frame.exits.pop()
