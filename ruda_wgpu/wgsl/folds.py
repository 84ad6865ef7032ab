"""What a shader compiler may know of a kernel's values while it compiles: the locals some
assignment computes from constants and the builtins a launch's pipeline fixes alone, and the
locals it finds equal. WGSL lets a compiler assume that no value is an infinity or a NaN, so it
may fold ``x * c`` to a zero once it has evaluated ``c`` to one (NVIDIA's Vulkan compiler does,
for ``c = floor(0.0)``), and ``a - b`` to a zero once it has found ``a`` and ``b`` equal
(lavapipe does, for two ``floor(x)`` of an infinite ``x``), and ``0.0 / d`` to ``0.0`` (lavapipe
does, whatever the sign of ``d``). A value picked at run time between two such values counts as
one a compiler knows: NVIDIA's folds ``fma(x, z, c)`` of a ``z`` that is one of two zeros. The
emitter writes such operations in a form that keeps IEEE's answer. Reads the IR only; imports
no driver.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable

from ruda_core.ir import (
    LANE_WISE_OPS,
    Builtin,
    BuiltinKind,
    Const,
    Instr,
    KernelDefinition,
    Local,
    Op,
    Param,
    walk,
)

__all__ = ["ValueNumbers", "constant_locals"]

#: Reads of an array's length, shape, strides and rank: the same wherever they are read.
_METADATA = frozenset({Op.LEN, Op.SHAPE, Op.STRIDE, Op.RANK})
#: The builtins a compiler may know while it builds a launch's pipeline: the cube's extents
#: (overrides), the plane width, and a unit's positions, which are 0 in a cube of one unit.
_KNOWN_BUILTINS = frozenset(
    BuiltinKind[f"{name}{axis}"]
    for name in ("UNIT_POS", "RUDA_DIM")
    for axis in ("", "_X", "_Y", "_Z")
) | {BuiltinKind.PLANE_DIM, BuiltinKind.UNIT_POS_PLANE}


def _known(a: object) -> bool:
    """Whether operand ``a`` is a constant or a builtin a compiler may know."""
    return isinstance(a, Const) or (isinstance(a, Builtin) and a.kind in _KNOWN_BUILTINS)


def constant_locals(definition: KernelDefinition) -> frozenset[Local]:
    """The locals at least one assignment of which reads nothing but constants, builtins a
    compiler may know and such locals, or picks one of two such values (a superset of those a
    compiler can evaluate: a local assigned both a constant and a loaded value counts)."""
    assigns = [
        (s.out, s.args[1:] if s.op is Op.SELECT else s.args)
        for s in walk(definition.body)
        if isinstance(s, Instr) and isinstance(s.out, Local) and s.args
    ]
    known: frozenset[Local] = frozenset()
    while True:
        found = {out for out, args in assigns if all(a in known or _known(a) for a in args)}
        if found <= known:
            return known
        known |= found


class ValueNumbers:
    """The value of each local where the statement being written is, as a key: a pure
    operation's result is the operation and its operands' keys, any other result a new token,
    a local read before it has a key a token standing for its value there. Two operands of one
    key hold one value, as a compiler that numbers values finds. The writer calls
    :meth:`assigned` after each instruction, :meth:`fork`, :meth:`switch` and :meth:`join` around
    the branches of an ``if``, and :meth:`forget` around a loop: the locals it assigns, and its
    variable."""

    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[Local, Hashable] = {}

    def of(self, a: object) -> Hashable:
        """The key of operand ``a`` here: a builtin, parameter or constant is its own, but a
        float constant's key holds its sign too, since ``Const(-0.0) == Const(0.0)``."""
        if isinstance(a, Local):
            return self._keys.setdefault(a, object())
        if isinstance(a, Const) and isinstance(a.value, float):
            return a, math.copysign(1.0, a.value)
        return a

    def constant(self, a: object) -> bool:
        """Whether operand ``a`` holds here a value computed from constants and builtins a
        compiler may know alone, which it may evaluate (inside a loop too, where it is computed
        in the same turn)."""
        return _from_constants(self.of(a))

    def assigned(self, ins: Instr) -> None:
        """Record the key of the result of ``ins``, just written."""
        out = ins.out
        if not isinstance(out, Local):
            return
        loads = ins.op is Op.INDEX and isinstance(ins.args[0], Param) and ins.args[0].read_only
        chosen = self._chosen(ins) if ins.op is Op.SELECT else None
        if ins.op is Op.ASSIGN:
            key = self.of(ins.args[0])
        elif chosen is not None:
            key = chosen
        elif ins.op in LANE_WISE_OPS or ins.op in _METADATA or loads:
            key = (ins.op, out.elem, out.width, *map(self.of, ins.args))
        else:
            key = object()
        self._keys[out] = key

    def _chosen(self, select: Instr) -> Hashable | None:
        """The key a ``select`` takes whatever its condition, or by a condition known here."""
        cond, a, b = map(self.of, select.args)
        if a == b:
            return a
        return (a if cond.value else b) if isinstance(cond, Const) else None

    def fork(self) -> dict[Local, Hashable]:
        """The keys here, for each branch of an ``if`` to start from."""
        return dict(self._keys)

    def switch(self, start: dict[Local, Hashable]) -> dict[Local, Hashable]:
        """Start the next branch from ``start``; the keys the last branch left."""
        left, self._keys = self._keys, dict(start)
        return left

    def join(self, left: dict[Local, Hashable]) -> None:
        """After the branches: the keys both left (``left``, and those here)."""
        self._keys = {a: key for a, key in self._keys.items() if a in left and left[a] == key}

    def forget(self, locals_: Iterable[Local]) -> None:
        """Drop the keys of ``locals_`` (those a branch or a loop assigns, a loop's variable)."""
        for local in locals_:
            self._keys.pop(local, None)


def _from_constants(key: Hashable) -> bool:
    """Whether a :class:`ValueNumbers` key stands for a value computed from constants and
    builtins a compiler may know alone."""
    if _known(key):
        return True
    if not isinstance(key, tuple) or not key:
        return False
    if isinstance(key[0], Const):  # a float constant, with its sign
        return True
    operands = key[4:] if key[0] is Op.SELECT else key[3:]  # a choice between two knowns
    return isinstance(key[0], Op) and all(_from_constants(k) for k in operands)
