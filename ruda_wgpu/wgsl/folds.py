"""What a shader compiler may know of a kernel's values while it compiles: the locals some
assignment computes from constants alone, and the locals it finds equal. WGSL lets a compiler
assume that no value is an infinity or a NaN, so it may fold ``x * c`` to a zero once it has
evaluated ``c`` to one (NVIDIA's Vulkan compiler does, for ``c = floor(0.0)``), and ``a - b`` to a
zero once it has found ``a`` and ``b`` equal (lavapipe does, for two ``floor(x)`` of an infinite
``x``); the emitter writes such operations in a form that keeps IEEE's answer. Reads the IR only;
imports no driver.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

from ruda_core.ir import LANE_WISE_OPS, Const, Instr, KernelDefinition, Local, Op, Param, walk

__all__ = ["constant_locals", "value_keys"]


def constant_locals(definition: KernelDefinition) -> frozenset[Local]:
    """The locals at least one assignment of which reads nothing but constants and such locals
    (a superset of those a compiler can evaluate: a local assigned both a constant and a
    loaded value counts)."""
    assigns = [
        (s.out, s.args)
        for s in walk(definition.body)
        if isinstance(s, Instr) and isinstance(s.out, Local) and s.args
    ]
    known: frozenset[Local] = frozenset()
    while True:
        found = {
            out for out, args in assigns if all(a in known or isinstance(a, Const) for a in args)
        }
        if found <= known:
            return known
        known |= found


def value_keys(definition: KernelDefinition) -> dict[Local, Hashable]:
    """A key for each local assigned once, by a lane-wise operation or a load of an array the
    kernel never writes: the operation and its operands' keys (an operand without one is its own
    key). Locals of one key hold one value where both are read, as a compiler that numbers
    values finds."""
    instrs = [s for s in walk(definition.body) if isinstance(s, Instr)]
    writes = Counter(s.out for s in instrs)
    keys: dict[Local, Hashable] = {}
    for s in instrs:
        loads = s.op is Op.INDEX and isinstance(s.args[0], Param) and s.args[0].read_only
        if isinstance(s.out, Local) and writes[s.out] == 1 and (s.op in LANE_WISE_OPS or loads):
            args = [keys.get(a, a) if isinstance(a, Local) else a for a in s.args]
            keys[s.out] = args[0] if s.op is Op.ASSIGN else (s.op, s.out.elem, s.out.width, *args)
    return keys
