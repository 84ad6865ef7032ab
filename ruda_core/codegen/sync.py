"""Barriers and fences: the dialect's statements, and barriers of the cube that reduce a ``bool``
over its units (``SYNC_UNITS_COUNT``/``_AND``/``_OR``).

A reducing barrier is the dialect's native form where it has one. Otherwise it is a helper over
one shared ``u32`` counter (:attr:`SyncLowering.counter`, declared by the emitter): a barrier
(every earlier read of the counter is done), unit 0 clears it, a barrier, every unit whose value
is true adds one atomically, a barrier, every unit reads it; ``and``/``or`` compare the count
with ``RUDA_DIM``/zero. This module builds statements, expressions and helpers only.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import CompilationError
from ..ir import BuiltinKind, Elem, Op
from .atomics import AtomicLowering
from .dialect import MemSpace

__all__ = ["COUNTER", "SyncLowering"]

#: The C name of the shared counter of reducing barriers without a native form.
COUNTER = "ruda_units_count"


class SyncLowering:
    """Barriers and fences for one emission. ``builtin`` returns the C name of a position
    builtin, marking it used; :attr:`counter` is set once a reducing barrier needs the shared
    counter, which the emitter then declares."""

    __slots__ = ("atomics", "builtin", "counter", "d", "expr")

    def __init__(self, atomics: AtomicLowering, builtin: Callable[[BuiltinKind], str]) -> None:
        self.atomics = atomics
        self.expr = atomics.expr
        self.d = atomics.d
        self.builtin = builtin
        #: ``COUNTER`` once a kernel needs it, else None.
        self.counter: str | None = None

    def statement(self, op: Op) -> str:
        """The C statement (or a comment, where there is nothing to do) of ``SYNC_UNITS``,
        ``SYNC_PLANE``, ``FENCE_UNITS`` or ``FENCE_DEVICE``."""
        d = self.d
        if op is Op.SYNC_UNITS:
            return d.sync_units()
        if op is Op.SYNC_PLANE:
            return d.sync_plane() or "// sync_plane(): a plane is one unit"
        if op is Op.FENCE_UNITS:
            return d.fence_units()
        if op is Op.FENCE_DEVICE:
            return d.fence_device()
        raise CompilationError(f"{op} is not a barrier or a fence")

    def reduce(self, op: Op, value: str) -> str:
        """The C expression of the reducing barrier ``op`` of the ``bool`` ``value``."""
        native = self.d.units_reduce(op)
        if native is not None:
            return native.format(v=value)
        count = f"{self._count_helper()}({value}, {self.builtin(BuiltinKind.UNIT_POS)}, {COUNTER})"
        if op is Op.SYNC_UNITS_COUNT:
            return count
        if op is Op.SYNC_UNITS_AND:
            return f"({count} == {self.builtin(BuiltinKind.RUDA_DIM)})"
        return f"({count} != {self.expr.literal(0, Elem.U32)})"

    def _count_helper(self) -> str:
        name = "ruda_sync_units_count"
        self.counter = COUNTER
        if name in self.expr.prelude:
            return name
        d, lit = self.d, self.expr.literal
        u32 = d.type_name(Elem.U32)
        shared = MemSpace.SHARED
        zero = lit(0, Elem.U32)
        clear = d.store(Elem.U32, shared, "counter", zero, zero)
        add = self.atomics.expression(
            Op.ATOMIC_ADD, Elem.U32, shared, "counter", [lit(1, Elem.U32)]
        )
        read = self.atomics.expression(Op.ATOMIC_LOAD, Elem.U32, shared, "counter", [])
        body = [
            d.sync_units(),
            f"if (unit == {zero}) {{",
            f"    {clear};",
            "}",
            d.sync_units(),
            "if (p) {",
            f"    {add};",
            "}",
            d.sync_units(),
            f"return {read};",
        ]
        pointer = f"{d.qualified(shared, d.storage_type(Elem.U32, shared))}*"
        params = [(d.type_name(Elem.BOOL), "p"), (u32, "unit"), (pointer, "counter")]
        return self.expr.prelude.add(name, d.function(u32, name, params, body))
