"""The locals of a kernel whose value a shader compiler may know while it compiles: those some
assignment computes from constants alone. WGSL lets a compiler assume that no value is an
infinity or a NaN, so it may fold ``x * c`` to a zero once it has evaluated ``c`` to one (NVIDIA's
Vulkan compiler does, for ``c = floor(0.0)``); the emitter writes such products in a form that
keeps IEEE's answer. Reads the IR only; imports no driver.
"""

from __future__ import annotations

from ruda_core.ir import Const, Instr, KernelDefinition, Local, walk

__all__ = ["constant_locals"]


def constant_locals(definition: KernelDefinition) -> frozenset[str]:
    """The names of the locals at least one assignment of which reads nothing but constants
    and such locals (a superset of those a compiler can evaluate: a local assigned both a
    constant and a loaded value counts)."""
    assigns = [
        (s.out.name, s.args)
        for s in walk(definition.body)
        if isinstance(s, Instr) and isinstance(s.out, Local)
    ]
    known: set[str] = set()
    grown = True
    while grown:
        grown = False
        for name, args in assigns:
            if (
                name not in known
                and args
                and all(
                    isinstance(a, Const) or (isinstance(a, Local) and a.name in known) for a in args
                )
            ):
                known.add(name)
                grown = True
    return frozenset(known)
