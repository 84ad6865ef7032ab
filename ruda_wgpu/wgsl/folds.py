"""The locals of a kernel whose value a shader compiler may know while it compiles: those some
assignment computes from constants alone. WGSL lets a compiler assume that no value is an
infinity or a NaN, so it may fold ``x * c`` to a zero once it has evaluated ``c`` to one (NVIDIA's
Vulkan compiler does, for ``c = floor(0.0)``); the emitter writes such products in a form that
keeps IEEE's answer. Reads the IR only; imports no driver.
"""

from __future__ import annotations

from ruda_core.ir import Const, Instr, KernelDefinition, Local, walk

__all__ = ["constant_locals"]


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
