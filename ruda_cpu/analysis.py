"""Facts about a kernel definition that the NumPy code generator needs.

Pure functions of the IR: which locals can be assigned without merging under the execution
mask, which may hold a contiguous lane vector, which parameters the kernel writes, which
builtins it reads, and Python names for everything. Nothing here emits code.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from ruda_core.ir import (
    ATOMIC_OPS,
    Block,
    Break,
    Builtin,
    BuiltinKind,
    Continue,
    If,
    Instr,
    KernelDefinition,
    Local,
    Loop,
    Op,
    Param,
    RangeLoop,
    Return,
    Stmt,
    builtins_read,
    operands_read,
    walk,
)

__all__ = [
    "KernelFacts",
    "Namer",
    "analyse",
    "blocks",
    "exits_here",
    "has_return",
    "walk",
]

#: Builtins the batch may hand out as a :class:`~ruda_cpu.lockstep.values.Lanes`.
LANES_BUILTINS = frozenset(
    {
        BuiltinKind.ABSOLUTE_POS,
        BuiltinKind.ABSOLUTE_POS_X,
        BuiltinKind.UNIT_POS,
        BuiltinKind.UNIT_POS_X,
        BuiltinKind.UNIT_POS_Y,
        BuiltinKind.UNIT_POS_Z,
        BuiltinKind.UNIT_POS_PLANE,
        BuiltinKind.RUDA_POS,
        BuiltinKind.RUDA_POS_X,
        BuiltinKind.RUDA_POS_Y,
        BuiltinKind.RUDA_POS_Z,
    }
)
#: Operations that pass a lane vector through, or keep one over a cube's units (the lockstep
#: helpers keep both symbolic).
_LANES_OPS = frozenset(
    {
        Op.ASSIGN,
        Op.ADD,
        Op.SUB,
        Op.MUL,
        Op.CAST,
        Op.SELECT,
        Op.BIT_AND,
        Op.BIT_OR,
        Op.BIT_XOR,
        Op.FLOOR_DIV,
        Op.MOD,
        Op.MIN,
        Op.MAX,
    }
)


def has_return(block: Block) -> bool:
    return any(isinstance(s, Return) for s in walk(block))


def exits_here(stmt: Stmt) -> bool:
    """Whether ``stmt`` may end the current iteration for some lanes of the block holding it
    (a ``break``/``continue`` of the enclosing loop, or a ``return`` anywhere)."""
    if isinstance(stmt, Break | Continue | Return):
        return True
    if isinstance(stmt, If):
        return any(exits_here(s) for s in (*stmt.then, *stmt.orelse))
    if isinstance(stmt, RangeLoop | Loop):
        return has_return(stmt.body)
    return False


@dataclass(frozen=True, slots=True)
class KernelFacts:
    #: ``id()`` of the statements whose assignment needs no merge: the only definition of a
    #: local (or the ``then`` one of a local defined by both branches of one ``if``) that is
    #: read only after it in its block or deeper, so inactive lanes' values are never observed.
    plain: frozenset[int]
    #: Locals always assigned before they are read (no initial value needed).
    defined_first: frozenset[Local]
    #: Locals that may hold a Lanes or Units value.
    lanes_locals: frozenset[Local]
    #: Array parameters that a store or atomic targets.
    written: frozenset[Param]
    builtins: frozenset[BuiltinKind]
    #: Locals that one statement reads, once (a temporary of one expression).
    read_once: frozenset[Local]
    #: How many statements read each local.
    reads: Counter[Local]


def analyse(defn: KernelDefinition) -> KernelFacts:
    plain, single = _plain_definitions(defn.body)
    stmts = list(walk(defn.body))
    written: set[Param] = set()
    for s in stmts:
        if not isinstance(s, Instr):
            continue
        stores = s.op in (Op.INDEX_ASSIGN, Op.CMMA_STORE, Op.WGMMA_STORE)
        if stores or (s.op in ATOMIC_OPS and s.op is not Op.ATOMIC_LOAD):
            target = s.args[0]
            if isinstance(target, Param):
                written.add(target)
    builtins = builtins_read(defn.body)
    reads = Counter(u for s in stmts for u in operands_read(s) if isinstance(u, Local))
    once = frozenset(v for v, count in reads.items() if count == 1)
    lanes = _lanes_locals(stmts)
    return KernelFacts(plain, single, lanes, frozenset(written), builtins, once, reads)


def blocks(body: Block) -> Iterator[Block]:
    """``body`` and every block nested in it."""
    yield body
    for stmt in walk(body):
        if isinstance(stmt, If):
            yield stmt.then
            yield stmt.orelse
        elif isinstance(stmt, Loop | RangeLoop):
            yield stmt.body


def _plain_definitions(body: Block) -> tuple[frozenset[int], frozenset[Local]]:
    """``(plain, single)`` of :class:`KernelFacts`.

    A local is read *safely* when every read follows a definite definition in the same block
    or an enclosing one (an ``if`` defines what both its branches define). Then inactive lanes'
    values are never observed, so the first definition needs no merge when it is the only one,
    or when every definition lies inside one ``if`` that definitely defines the local.
    """
    sites: dict[Local, list[tuple[Stmt, frozenset[int]]]] = {}
    definite_by: dict[int, set[Local]] = {}
    early: set[Local] = set()

    def visit(block: Block, known_before: frozenset[Local], ifs: frozenset[int]) -> set[Local]:
        """Check the reads of ``block``; return what it definitely defines."""
        known = set(known_before)
        definite: set[Local] = set()
        for stmt in block:
            early.update(u for u in operands_read(stmt) if isinstance(u, Local) and u not in known)
            target = stmt.out if isinstance(stmt, Instr) else None
            if isinstance(stmt, RangeLoop):
                sites.setdefault(stmt.var, []).append((stmt, ifs))
                visit(stmt.body, frozenset(known | {stmt.var}), ifs)
            elif isinstance(stmt, Loop):
                visit(stmt.body, frozenset(known), ifs)
            elif isinstance(stmt, If):
                inner = ifs | {id(stmt)}
                both = visit(stmt.then, frozenset(known), inner)
                both &= visit(stmt.orelse, frozenset(known), inner)
                definite_by[id(stmt)] = both
                target_set = both
                known |= target_set
                definite |= target_set
            if target is not None:
                sites.setdefault(target, []).append((stmt, ifs))
                known.add(target)
                definite.add(target)
        return definite

    visit(body, frozenset(), frozenset())
    plain: set[int] = set()
    single: set[Local] = set()
    for var, found in sites.items():
        if var in early:
            continue
        if len(found) == 1:
            single.add(var)
            plain.add(id(found[0][0]))
            continue
        shared = frozenset.intersection(*(ifs for _, ifs in found))
        if any(var in definite_by[s] for s in shared):
            plain.add(id(found[0][0]))
    return frozenset(plain), frozenset(single)


def _lanes_locals(stmts: list[Stmt]) -> frozenset[Local]:
    found: set[Local] = set()

    def lanes(x: object) -> bool:
        if isinstance(x, Builtin):
            return x.kind in LANES_BUILTINS
        return x in found

    changed = True
    while changed:
        changed = False
        for s in stmts:
            out = None
            if isinstance(s, Instr) and s.op in _LANES_OPS and s.out is not None:
                if s.out.elem.is_int and any(lanes(a) for a in s.args):
                    out = s.out
            elif isinstance(s, RangeLoop) and lanes(s.start):
                out = s.var
            if out is not None and out not in found:
                found.add(out)
                changed = True
    return frozenset(found)


_RESERVED = frozenset({"np", "L", "g", "None", "True", "False", "range", "int"}) | frozenset(
    keyword.kwlist
)


class Namer:
    """Python identifiers for IR names: the user's spelling where it is a valid, free name,
    else a close variant; :meth:`fresh` gives internal names that never collide."""

    def __init__(self) -> None:
        self._taken: set[str] = set(_RESERVED)
        self._names: dict[object, str] = {}
        self._counters: dict[str, int] = {}

    def name(self, key: object, wanted: str) -> str:
        """The name of ``key`` (assigned on first request from ``wanted``)."""
        found = self._names.get(key)
        if found is None:
            found = self._names[key] = self.fresh(wanted)
        return found

    def numbered(self, base: str) -> str:
        """A fresh internal name ``base1``, ``base2`` … (the first free one)."""
        n = self._counters.get(base, 0)
        while True:
            n += 1
            name = f"{base}{n}"
            if name not in self._taken:
                self._counters[base] = n
                self._taken.add(name)
                return name

    def fresh(self, wanted: str) -> str:
        base = re.sub(r"\W", "_", wanted) or "_"
        if base[0].isdigit():
            base = "_" + base
        name, n = base, 1
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name
