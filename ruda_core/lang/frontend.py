"""The front end's entry point: one specialisation of a ``@kernel`` -> a verified
:class:`KernelDefinition`.

The definition keeps the user's names (temporaries start with ``_``), carries a
:class:`SourceLoc` on every statement, lists every local, shared and local array, and marks
``read_only`` the array parameters that no store or atomic targets. Comptime parameters do not
appear in it; their values are folded into the body. Every definition built here passes
:func:`~ruda_core.ir.verify`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..ir import (
    ATOMIC_OPS,
    Block,
    Elem,
    If,
    Instr,
    KernelDefinition,
    Loop,
    Op,
    Param,
    ParamKind,
    RangeLoop,
    SourceLoc,
    Stmt,
    rewrite,
    verify,
)
from .scope import Fields, Frame, PyVal, Value
from .statements import StmtBuilder
from .syntax import KernelParam, ParsedFunction
from .types import ElemVar

__all__ = ["build_kernel"]

_KINDS = {"array": ParamKind.ARRAY, "tensor": ParamKind.TENSOR, "scalar": ParamKind.SCALAR}


def build_kernel(
    parsed: ParsedFunction,
    params: tuple[KernelParam, ...],
    bindings: Mapping[ElemVar, Elem],
    comptime: Mapping[str, object],
    ranks: Mapping[str, int],
) -> KernelDefinition:
    """Build the definition of ``parsed`` for one specialisation.

    :param bindings: an element for every element variable the signature uses.
    :param comptime: a value for every comptime parameter.
    :param ranks: a rank for every tensor parameter.
    :raises CompilationError: naming the kernel, file and line of what cannot be compiled.
    """
    frame = Frame(parsed, {}, dict(bindings))
    builder = StmtBuilder(parsed.name, frame)
    ir_params: list[Param] = []
    groups: dict[tuple[str, type], list[tuple[str, Value]]] = {}
    for kp in params:
        value: Value
        if kp.kind == "comptime":
            value = builder.classify(comptime[kp.name], kp.name, parsed.tree)
        else:
            kind = _KINDS[kp.kind]
            rank = ranks[kp.name] if kind is ParamKind.TENSOR else 0
            value = Param(len(ir_params), kp.name, kind, kp.resolve(frame.bindings), rank)
            ir_params.append(value)
            builder.used.add(kp.name)
        if kp.group is None or kp.struct is None:
            frame.scope[kp.name] = value
        else:
            groups.setdefault((kp.group, kp.struct), []).append((kp.field, value))
    for (name, cls), fields in groups.items():
        frame.scope[name] = PyVal(Fields(cls, tuple(fields)))
    builder.stmts(parsed.tree.body)
    defn = KernelDefinition(
        name=parsed.name,
        params=tuple(ir_params),
        locals=tuple(builder.locals),
        shared=tuple(builder.shared),
        local_arrays=tuple(builder.local_arrays),
        body=tuple(builder.blocks[0]),
        fragments=tuple(builder.fragments),
        source=SourceLoc(parsed.file, parsed.line(parsed.tree)),
        max_units=builder.max_units,
        exact_units=builder.exact_units,
        min_cubes=builder.min_cubes,
    )
    defn = _mark_read_only(defn)
    verify(defn)
    return defn


#: The operations that write their first operand (besides atomics).
_STORES = frozenset({Op.INDEX_ASSIGN, Op.STORE_LINE, Op.CMMA_STORE, Op.WGMMA_STORE})


def _written(block: Block, out: set[Param]) -> None:
    for stmt in block:
        if isinstance(stmt, Instr):
            target = stmt.args[0] if stmt.args else None
            writes = stmt.op in _STORES or stmt.op in ATOMIC_OPS
            if writes and isinstance(target, Param):
                out.add(target)
        elif isinstance(stmt, If):
            _written(stmt.then, out)
            _written(stmt.orelse, out)
        elif isinstance(stmt, RangeLoop | Loop):
            _written(stmt.body, out)


def _substitute(block: Block, mapping: dict[Param, Param]) -> Block:
    def instr(ins: Instr) -> list[Stmt]:
        if not any(a in mapping for a in ins.args if isinstance(a, Param)):
            return [ins]
        args = tuple(mapping.get(a, a) if isinstance(a, Param) else a for a in ins.args)
        return [replace(ins, args=args)]

    return rewrite(block, instr)


def _mark_read_only(defn: KernelDefinition) -> KernelDefinition:
    """Mark array parameters that no store or atomic targets (atomic loads included, so that a
    backend never makes an atomic's buffer ``const``)."""
    written: set[Param] = set()
    _written(defn.body, written)
    mapping = {p: replace(p, read_only=True) for p in defn.array_params if p not in written}
    if not mapping:
        return defn
    params = tuple(mapping.get(p, p) for p in defn.params)
    return replace(defn, params=params, body=_substitute(defn.body, mapping))
