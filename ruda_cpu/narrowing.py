"""Which branches the NumPy code generator may also render over their active lanes alone (see
``lockstep.subsets``), and what such a rendering picks and puts back.

A branch qualifies when its every statement works lane by lane: value operations, loads and
stores of memory and array sizes, and nested ``if``s of the same. Loops, exits, barriers,
fences, atomics, plane and matrix operations, ``print`` and bounds reports involve other lanes
or the lanes' order and keep the branch over all lanes. Pure functions of the IR; nothing here
emits code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ruda_core.ir import (
    FLOAT_BINARY,
    FLOAT_UNARY,
    LANE_WISE_OPS,
    Block,
    Builtin,
    If,
    Instr,
    Local,
    LocalArray,
    Op,
    SharedArray,
    operands_read,
)

from .analysis import walk

__all__ = ["Footprint", "footprint", "narrowable", "share"]

#: Operations a branch over some lanes may hold: each lane's result depends on its own values.
_LANE_BY_LANE = LANE_WISE_OPS | {
    Op.INDEX,
    Op.INDEX_ASSIGN,
    Op.LEN,
    Op.SHAPE,
    Op.STRIDE,
    Op.RANK,
}


def narrowable(block: Block) -> bool:
    """Whether ``block`` (not empty) may run over the active lanes alone of its mask."""
    for stmt in walk(block):
        if isinstance(stmt, Instr):
            if stmt.op not in _LANE_BY_LANE:
                return False
        elif not isinstance(stmt, If):
            return False
    return bool(block)


#: Operations that cost many passes' worth of an addition per lane (math functions, division).
_COSTLY = FLOAT_UNARY | FLOAT_BINARY | {Op.POW, Op.DIV, Op.FLOOR_DIV, Op.MOD}
#: The weight (see :func:`share`) from which a block runs over its lanes alone at the largest
#: fraction of lanes.
_FULL_WEIGHT = 16


def share(block: Block) -> float:
    """How much of the largest fraction of active lanes (``SUBSET_FRACTION``) a narrowable
    ``block`` runs over its lanes alone below, from its weight: 8 per costly operation, 2 per
    memory access, 1 per other operation, up to ``_FULL_WEIGHT`` for the whole fraction.
    Picking the lanes and spreading values back cost passes of their own, which a light block
    saves only where very few lanes are active."""
    weight = 0
    for stmt in walk(block):
        if isinstance(stmt, Instr):
            if stmt.op in _COSTLY:
                weight += 8
            elif stmt.op in (Op.INDEX, Op.INDEX_ASSIGN):
                weight += 2
            else:
                weight += 1
    return min(weight, _FULL_WEIGHT) / _FULL_WEIGHT


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a branch reads and writes."""

    #: Locals and builtins it reads or assigns, in first-use order: each is kept before it runs
    #: and put back after it.
    values: tuple[Local | Builtin, ...]
    #: Those of ``values`` whose value from before it may be read in it (builtins, locals read
    #: before it assigns them on every lane, locals that a nested ``if`` assigns under a mask):
    #: picked at its lanes.
    picked: frozenset[Local | Builtin]
    #: Shared and local arrays it accesses: their segments of its lanes.
    memory: tuple[SharedArray | LocalArray, ...]
    #: Locals it assigns whose values may be read after it: spread back over every lane (the
    #: other values get their value from before it back).
    live: frozenset[Local]


def _defines(block: Block) -> set[Local]:
    """The locals that ``block`` assigns on every lane of its mask: at its top level, or in
    both branches of an ``if``."""
    found: set[Local] = set()
    for stmt in block:
        if isinstance(stmt, Instr) and stmt.out is not None:
            found.add(stmt.out)
        elif isinstance(stmt, If):
            found |= _defines(stmt.then) & _defines(stmt.orelse)
    return found


def footprint(block: Block, reads: Counter[Local]) -> Footprint:
    """The footprint of ``block``, given how many statements of the whole kernel read each
    local (``reads``). A local the block assigns is live when a statement outside the block
    reads it, or one inside it reads it before the block has assigned it on every lane (a read
    that may see the value from before the block, or from an earlier pass of a loop)."""
    values: dict[Local | Builtin, None] = {}
    memory: dict[SharedArray | LocalArray, None] = {}
    inside: Counter[Local] = Counter()
    assigned: set[Local] = set()
    exposed: set[Local | Builtin] = set()
    merged: set[Local] = set()
    for top in block:
        for stmt in walk((top,)):
            for u in operands_read(stmt):
                if isinstance(u, Local | Builtin):
                    values[u] = None
                    if u not in assigned:
                        exposed.add(u)
                if isinstance(u, Local):
                    inside[u] += 1
            if isinstance(stmt, Instr):
                for a in stmt.args:
                    if isinstance(a, SharedArray | LocalArray):
                        memory[a] = None
                if stmt.out is not None:
                    values[stmt.out] = None
                    if stmt is not top:  # merged under the nested if's mask
                        merged.add(stmt.out)
        assigned |= _defines((top,))
    written = {s.out for s in walk(block) if isinstance(s, Instr) and s.out is not None}
    live = frozenset(v for v in written if v in exposed or reads[v] > inside[v])
    return Footprint(tuple(values), frozenset(exposed | merged), tuple(memory), live)
