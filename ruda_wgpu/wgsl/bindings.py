"""What a WGSL module binds, and how: the array parameters bound as ``vec2``/``vec4`` arrays,
those bound ``read_write`` rather than ``read``, those held as packed words, the arrays atomics
touch, the workgroup memory a module declares, and whether it binds the kernel-fault word.
Reads the IR only; imports no driver.
"""

from __future__ import annotations

import re
from typing import cast

from ruda_core.ir import (
    ATOMIC_OPS,
    PLANE_OPS,
    SYNC_REDUCE_OPS,
    Elem,
    Instr,
    KernelDefinition,
    Local,
    Op,
    Param,
    walk,
)
from ruda_core.ir.bounds import REPORT_PARAM

from .dialect import NARROW

__all__ = [
    "all_writable",
    "atomic_arrays",
    "binding",
    "checks_planes",
    "packed",
    "reports_faults",
    "vector_widths",
    "workgroup_nbytes",
    "writable_arrays",
]

#: The element types a storage binding may hold as vectors (:func:`vector_widths`).
_VECTOR_ELEMS = frozenset({Elem.F32, Elem.I32, Elem.U32, Elem.F16})


def packed(elem: Elem) -> bool:
    """Whether a buffer of ``elem`` is held as packed words (WGSL has no smaller type)."""
    return elem is Elem.BOOL or elem in NARROW


def checks_planes(definition: KernelDefinition, plane_dim: int) -> bool:
    """Whether ``definition``'s module, generated for planes of ``plane_dim`` units, checks
    the subgroups it runs in: where it uses plane operations over planes of several units."""
    return plane_dim > 1 and any(
        isinstance(s, Instr) and s.op in PLANE_OPS for s in walk(definition.body)
    )


def reports_faults(definition: KernelDefinition, loop_limit: int, plane_dim: int) -> bool:
    """Whether ``definition``'s module binds the kernel-fault word, after its arrays and print
    records: every module where the driver stops loops after ``loop_limit`` turns (0: it stops
    none), and one that checks its subgroups (:func:`checks_planes`)."""
    return bool(loop_limit) or checks_planes(definition, plane_dim)


def vector_widths(definition: KernelDefinition) -> dict[str, int]:
    """The array parameters bound as arrays of ``vec2``/``vec4``, by name, with their width:
    those every line access reads or writes as lines of one width, 2 or 4, of a type a WGSL
    vector holds, and no atomic touches. Each of their line accesses is one vector access; a
    scalar access picks a component."""
    widths: dict[Param, set[int]] = {}
    for stmt in walk(definition.body):
        if isinstance(stmt, Instr) and stmt.op in (Op.LOAD_LINE, Op.STORE_LINE):
            line = stmt.out if stmt.op is Op.LOAD_LINE else stmt.args[2]
            if isinstance(stmt.args[0], Param):
                widths.setdefault(stmt.args[0], set()).add(cast(Local, line).width)
    atomic = atomic_arrays(definition)
    return {
        p.name: min(found)
        for p, found in widths.items()
        if found in ({2}, {4}) and p.elem in _VECTOR_ELEMS and p.name not in atomic
    }


def binding(index: int, name: str, element: str, access: str = "read_write") -> str:
    """The declaration of storage binding ``index`` of group 0, an array of ``element``."""
    return f"@group(0) @binding({index}) var<storage, {access}> {name}: array<{element}>;"


#: An array binding declared ``read`` (binding 0, the launch record, is not one).
_READ_BINDING = re.compile(r"^(@group\(0\) @binding\([1-9]\d*\) var<storage, )read>", re.M)


def writable_arrays(definition: KernelDefinition) -> tuple[int, ...]:
    """The positions among ``definition``'s array parameters of those its module binds
    ``read_write``; the others are ``var<storage, read>``, which lets a driver read them
    through its read-only path. Writable: what a store may target (not ``Param.read_only``,
    derived by the front end), what an atomic touches (WGSL's atomics, loads included, need
    ``read_write``) and what is held as packed words (loaded through ``atomicLoad``)."""
    atomic = atomic_arrays(definition)
    return tuple(
        k
        for k, p in enumerate(definition.array_params)
        if not p.read_only or p.name in atomic or packed(p.elem)
    )


def workgroup_nbytes(definition: KernelDefinition) -> tuple[int, tuple[int, ...]]:
    """The workgroup memory of ``definition``'s module: the bytes of its static shared arrays
    (and of its own counter), and the bytes of an element of each dynamic shared array, in
    :attr:`KernelDefinition.dynamic_shared`'s order. WGSL has no 8- or 16-bit integers and
    keeps a ``bool`` in a word, so a shared element of those takes 4 bytes, not its size in
    ruda (``f16`` takes its 2)."""

    def size(elem: Elem) -> int:
        return elem.nbytes if elem is Elem.F16 else max(elem.nbytes, 4)

    counter = any(isinstance(s, Instr) and s.op in SYNC_REDUCE_OPS for s in walk(definition.body))
    static = sum(s.length * size(s.elem) for s in definition.shared if s.size is None)
    return static + 4 * counter, tuple(size(s.elem) for s, _ in definition.dynamic_shared)


def all_writable(source: str) -> str:
    """``source`` (a module the emitter wrote) with every array binding declared
    ``read_write``: the module for a launch that binds one buffer both to an array it reads
    and to one it writes, which WebGPU refuses for a ``read`` binding (a usage conflict)."""
    return _READ_BINDING.sub(r"\1read_write>", source)


def atomic_arrays(definition: KernelDefinition) -> set[str]:
    """The arrays (parameters and shared) some atomic operation touches."""
    names = {REPORT_PARAM}
    for stmt in walk(definition.body):
        if isinstance(stmt, Instr) and stmt.op in ATOMIC_OPS:
            names.add(stmt.args[0].name)  # type: ignore[union-attr]  # an array
    return names
