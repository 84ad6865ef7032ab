"""``CpuCompiler``: a lowered kernel definition -> Python source over NumPy, run in lockstep.

The generated module defines one function, named after the kernel, that runs one batch of whole
cubes: ``fn(g, *buffers, *scalars, *metadata)`` with ``g`` a
:class:`~ruda_cpu.lockstep.batch.Batch`. Every IR value is a vector over the batch's lanes (or
a NumPy scalar when uniform); control flow is an execution mask:

* ``if``: the lanes of the block's mask split by the condition; a branch no lane takes is
  skipped, and one that few lanes take may run over those lanes alone (see ``narrowing``);
* loops run while any lane of their loop mask is active; ``break``, ``continue`` and
  ``return`` remove lanes from the loop, iteration and kernel (``_alive``) masks, and every
  enclosing block re-intersects its mask after a statement that may have removed lanes;
* a local assigned under a partial mask keeps its old value on inactive lanes (``L.merge``),
  unless no read can observe those lanes (see ``analysis``);
* ``sync_units`` is a point every lane reaches together, so it needs no code.

The source is deterministic, one statement per line, and keeps the user's names; comments give
the Python source line of each statement. This module never runs the code (see ``executor``).
"""

from __future__ import annotations

import dataclasses
import linecache
import math
import os

from ruda_core.ir import (
    ATOMIC_OPS,
    BARRIER_OPS,
    MATRIX_OPS,
    WARPGROUP_OPS,
    Block,
    Break,
    Builtin,
    BuiltinKind,
    Const,
    Continue,
    Elem,
    ExecutionMode,
    If,
    Instr,
    KernelDefinition,
    Local,
    LocalArray,
    Loop,
    MatrixRole,
    Op,
    Param,
    RangeLoop,
    Return,
    SharedArray,
    SourceLoc,
    Stmt,
    lower_async_copies,
    operands_read,
    scalarize_lines,
)
from ruda_core.ir.bounds import REPORT_PARAM
from ruda_core.runtime.compiler import CompiledKernel, CompileOptions, Compiler

from .analysis import (
    LANES_BUILTINS,
    KernelFacts,
    Namer,
    analyse,
    blocks,
    exits_here,
    has_return,
    walk,
)
from .checks import SANITIZER, Sites, bounds_guards, check, line_check, line_guards
from .expressions import BARRIERS, WARPGROUPS, dtype, expression, is_fresh, literal
from .narrowing import footprint, narrowable, share

__all__ = ["CpuCompiler"]

_DEAD = "<dead>"  # the mask of code no lane can reach
_INDENT = "    "


class CpuCompiler(Compiler):
    """Generates vectorised NumPy source for the reference device. Pure and deterministic."""

    name = "numpy"
    source_suffix = "py"

    def compile(
        self, definition: KernelDefinition, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        """Asynchronous copies are done when issued (:func:`~ruda_core.ir.lower_async_copies`)
        and lines run as their scalar lowering (:func:`~ruda_core.ir.scalarize_lines`)."""
        definition = scalarize_lines(lower_async_copies(definition))
        emitter = _Emitter(definition, options, mode)
        source = emitter.module()
        return CompiledKernel(
            entrypoint=emitter.entrypoint,
            source=source,
            definition=definition,
            mode=mode,
            plane_dim=options.plane_dim,
            written=tuple(
                i for i, p in enumerate(definition.array_params) if p in emitter.facts.written
            ),
        )

    def compile_sanitizing(self, compiled: CompiledKernel) -> CompiledKernel:
        """``compiled`` (made by :meth:`compile`) with source that checks every access and
        barrier: its function takes the batch's sanitizer after the batch (see ``checks``)
        and the module defines ``SITES``. Pure and deterministic."""
        options = CompileOptions(plane_dim=compiled.plane_dim)
        emitter = _Emitter(compiled.definition, options, compiled.mode, sanitize=True)
        source = emitter.module()
        return dataclasses.replace(compiled, entrypoint=emitter.entrypoint, source=source)


def _uses_bf16(defn: KernelDefinition) -> bool:
    """Whether the generated source names ``bfloat16`` (ml_dtypes' type, imported only then)."""
    elems = [p.elem for p in defn.params] + [v.elem for v in defn.locals]
    elems += [s.elem for s in defn.shared] + [a.elem for a in defn.local_arrays]
    elems += [f.elem for f in defn.fragments]
    for stmt in walk(defn.body):
        if isinstance(stmt, Instr):
            elems += [a.elem for a in stmt.args if isinstance(a, Const)]
    return Elem.BF16 in elems


def _is_plus_zero(x: object) -> bool:
    """Whether ``x`` is the constant 0 (for floats +0.0, the value a load out of bounds reads)."""
    return isinstance(x, Const) and x.value == 0 and math.copysign(1.0, float(x.value)) > 0


def _zero_fills(body: Block, facts: KernelFacts) -> frozenset[int]:
    """The ``id`` of each bounds guard (see ``checks.bounds_guards``) around a load of shared
    memory of fixed length or of a local array, compared with that length, whose load defines
    its result on every lane (no merge) and whose other branch only assigns that result 0.
    Such a load already reads 0 wherever the guard fails, so the other branch need only run
    when the guard holds on no lane."""
    guards = bounds_guards(body)
    found: set[int] = set()
    for stmt in walk(body):
        if not isinstance(stmt, If) or id(stmt) not in guards:
            continue
        load, length = guards[id(stmt)]
        zero = stmt.orelse[0] if len(stmt.orelse) == 1 else None
        target = load.args[0]
        fixed = target if isinstance(target, SharedArray | LocalArray) else None
        if isinstance(fixed, SharedArray) and fixed.size is not None:
            fixed = None
        if (
            load.op is not Op.INDEX
            or load.out is None
            or id(load) not in facts.plain
            or fixed is None
            or not isinstance(length, Const)
            or int(length.value) != fixed.length
            or not isinstance(zero, Instr)
            or zero.op is not Op.ASSIGN
            or zero.out is not load.out
            or not _is_plus_zero(zero.args[0])
        ):
            continue
        found.add(id(stmt))
    return frozenset(found)


#: Operations that write memory (or print, or report): a view of shared memory that a load
#: gave must be used up before any of them.
_WRITES = (
    frozenset({Op.INDEX_ASSIGN, Op.PRINT, Op.REPORT_OOB})
    | ATOMIC_OPS
    | MATRIX_OPS
    | WARPGROUP_OPS
    | BARRIER_OPS
)


def _transient_loads(body: Block, ctx: _Emitter) -> frozenset[int]:
    """The ``id`` of each load of shared memory (alone, or in a bounds guard of
    ``ctx.zero_fills``) whose result is read once, by a later statement of its block that is a
    NumPy operation with a new result (see ``is_fresh``), with only statements that write no
    memory in between (other such guarded loads among them): the load may give a view of the
    memory."""
    guards = bounds_guards(body)

    def load_of(stmt: Stmt) -> Instr | None:
        if isinstance(stmt, If):
            return guards[id(stmt)][0] if id(stmt) in ctx.zero_fills else None
        return stmt if isinstance(stmt, Instr) and stmt.op is Op.INDEX else None

    found: set[int] = set()
    for block in blocks(body):
        for k, stmt in enumerate(block):
            load = load_of(stmt)
            if (
                load is None
                or not isinstance(load.args[0], SharedArray)
                or load.out not in ctx.facts.read_once
            ):
                continue
            for later in block[k + 1 :]:
                if isinstance(later, Instr) and load.out in later.args:
                    if is_fresh(later, ctx):
                        found.add(id(load))
                    break
                if load_of(later) is None and (not isinstance(later, Instr) or later.op in _WRITES):
                    break
    return frozenset(found)


def _guarded_load(stmt: Stmt, guards: dict[int, tuple[Instr, object]]) -> Instr | None:
    """The load of shared memory into a local that ``stmt`` is: the load itself, or a bounds
    guard around it whose other branch only assigns that local constants; else None."""
    load = guards[id(stmt)][0] if isinstance(stmt, If) and id(stmt) in guards else stmt
    if (
        not isinstance(load, Instr)
        or load.op is not Op.INDEX
        or load.out is None
        or not isinstance(load.args[0], SharedArray)
    ):
        return None
    if isinstance(stmt, If) and not all(
        isinstance(s, Instr)
        and s.op is Op.ASSIGN
        and s.out is load.out
        and isinstance(s.args[0], Const)
        for s in stmt.orelse
    ):
        return None
    return load


def _stores_once(stmt: Stmt, guards: dict[int, tuple[Instr, object]]) -> bool:
    """Whether ``stmt`` is a single store: the store, or a bounds guard around it alone."""
    if isinstance(stmt, If) and id(stmt) in guards and not stmt.orelse:
        stmt = guards[id(stmt)][0]
    return isinstance(stmt, Instr) and stmt.op is Op.INDEX_ASSIGN


def _lasting_loads(body: Block, ctx: _Emitter) -> frozenset[int]:
    """The ``id`` of each load of shared memory into a local (alone, or in a bounds guard whose
    other branch only assigns it constants) whose value may stay a view of the memory: every
    statement that reads the local comes later in the load's block and is a NumPy operation
    with a new result (see ``is_fresh``) or a load, before the block's first later statement
    that may write memory (at any depth), or is that statement when it is a single store
    (which reads what it stores before writing it). Masks only narrow within a block, so a lane
    that reads the local loaded it in the same run of the block, and saw the memory unwritten
    since; the values of other lanes, which the view changes with the memory, are never read."""
    guards = bounds_guards(body)
    readers: dict[Local, list[Stmt]] = {}
    for stmt in walk(body):
        for used in operands_read(stmt):
            if isinstance(used, Local):
                readers.setdefault(used, []).append(stmt)
    found: set[int] = set()
    for block in blocks(body):
        for k, stmt in enumerate(block):
            load = _guarded_load(stmt, guards)
            if load is None or load.out is None:
                continue
            value = load.out
            allowed: set[int] = set()
            for later in block[k + 1 :]:
                inner = list(walk((later,)))
                if any(isinstance(s, Instr) and s.op in _WRITES for s in inner):
                    if _stores_once(later, guards):
                        allowed.update(id(s) for s in inner if isinstance(s, Instr))
                    break
                allowed.update(
                    id(s)
                    for s in inner
                    if isinstance(s, Instr) and (s.op is Op.INDEX or is_fresh(s, ctx))
                )
            if all(id(s) in allowed for s in readers.get(value, ())):
                found.add(id(load))
    return frozenset(found)


class _Emitter:
    """Renders one definition. Implements the ``expressions.Context`` protocol."""

    def __init__(
        self,
        defn: KernelDefinition,
        options: CompileOptions,
        mode: ExecutionMode,
        sanitize: bool = False,
    ):
        self.defn = defn
        self.options = options
        self.mode = mode
        self.facts: KernelFacts = analyse(defn)
        self.names = Namer()
        self.lines: list[str] = []
        self.depth = 1
        self.loops: list[tuple[str, str]] = []  # (loop mask, iteration mask), innermost last
        self.last_loc: SourceLoc | None = None
        self.entrypoint = self.names.fresh(defn.name)
        self.alive = self.names.fresh("_alive")  # lanes that have not returned
        self.narrowed = False  # inside a block rendered twice (see ``_branch``)
        #: the locals that a rendering over some lanes keeps and puts back (see ``_over``), so
        #: bound from the start
        self.kept: set[Local | Builtin] = set()
        self.gone = self.names.fresh("_gone")
        self.returns = has_return(defn.body)
        #: whether the kernel uses wgmma (its batches then keep a ``Warpgroups`` state)
        self.warpgroups = any(
            isinstance(s, Instr) and s.op in WARPGROUP_OPS for s in walk(defn.body)
        )
        #: whether the kernel uses mbarrier (its batches then keep a ``Barriers`` state)
        self.barriers = any(isinstance(s, Instr) and s.op in BARRIER_OPS for s in walk(defn.body))
        self.sites = Sites() if sanitize else None
        #: the bounds pass's guards (see ``checks.bounds_guards``) and the accesses they guard,
        #: whose check is made before the guard
        self.guards = bounds_guards(defn.body) if sanitize else {}
        self.guarded = {id(access) for access, _ in self.guards.values()}
        #: the guards of whole lines (see ``checks.line_guards``), checked before the guard
        self.line_guards = line_guards(defn.body) if sanitize else {}
        #: the guards around loads of fixed-length shared and local memory whose other branch
        #: only zeroes the result (see ``_zero_fills``)
        self.zero_fills = _zero_fills(defn.body, self.facts)
        #: the loads of shared memory that may give views (see ``_transient_loads`` and, unless
        #: sanitizing, whose checks keep the values they see, ``_lasting_loads``)
        self.transient = _transient_loads(defn.body, self)
        if not sanitize:
            self.transient |= _lasting_loads(defn.body, self)
        self.args = ["g", SANITIZER] if sanitize else ["g"]
        # then the launch ABI's order: arrays, scalars, metadata
        for p in (*defn.array_params, *defn.scalar_params):
            self.args.append(self.names.name(p, p.name))
        for what, p, axis in defn.metadata_layout():
            wanted = f"{p.name}_len" if what == "len" else f"{p.name}_{what}{axis}"
            key = (what, p) if what == "len" else (what, p, axis)
            self.args.append(self.names.name(key, wanted))

    # --- expressions.Context --------------------------------------------------------------------

    def ref(self, x: object) -> str:
        if isinstance(x, Builtin):
            return self.names.name(x.kind, x.kind.value)
        return self.names.name(x, getattr(x, "name", "_v"))

    def is_lanes(self, x: object) -> bool:
        if isinstance(x, Builtin):
            return x.kind in LANES_BUILTINS
        return x in self.facts.lanes_locals

    def is_written(self, p: Param) -> bool:
        return p in self.facts.written

    def report(self) -> str:
        return self.ref(next(p for p in self.defn.params if p.name == REPORT_PARAM))

    def is_transient(self, ins: Instr) -> bool:
        return id(ins) in self.transient

    # --- text -----------------------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.lines.append(_INDENT * self.depth + text)

    def comment_for(self, loc: SourceLoc | None) -> None:
        if loc is None or loc == self.last_loc:
            return
        self.last_loc = loc
        text = linecache.getline(loc.file, loc.line).strip()
        where = f"{os.path.basename(loc.file)}:{loc.line}"
        self.emit(f"# {where}: {text}" if text else f"# {where}")

    def module(self) -> str:
        body = self._body()
        src = self.defn.source
        header = [
            f"# ruda NumPy kernel {self.defn.name} ({self.mode.value}, plane_dim "
            f"{self.options.plane_dim}{', sanitizing' if self.sites is not None else ''})",
            f"# from {src}" if src is not None else "# from generated IR",
            "# One call runs one batch of whole cubes in lockstep (see ruda_cpu.lockstep).",
            *(["from ml_dtypes import bfloat16"] if _uses_bf16(self.defn) else []),
            "",
            "",
            f"def {self.entrypoint}({', '.join(self.args)}):",
        ]
        footer = ["", "", self.sites.table()] if self.sites is not None else []
        return "\n".join(header + body + footer) + "\n"

    def _body(self) -> list[str]:
        self.lines = []
        self._block(self.defn.body, "None")
        self._kernel_end()
        main, self.lines = self.lines, []
        for kind in sorted(self.facts.builtins, key=lambda k: k.value):
            self.emit(f"{self.ref(Builtin(kind))} = {self._builtin(kind)}")
        for s in self.defn.shared:
            length = str(s.length) if s.size is None else f"max(int({self.ref(s.size)}), 1)"
            self.emit(f"{self.ref(s)} = g.shared({dtype(s.elem)}, {length})")
        for a in self.defn.local_arrays:
            self.emit(f"{self.ref(a)} = g.local_array({dtype(a.elem)}, {a.length})")
        if self.warpgroups:
            self.emit(f"{self.ref(WARPGROUPS)} = L.warpgroups(g, {self.defn.name!r})")
        if self.barriers:
            self.emit(f"{self.ref(BARRIERS)} = L.barriers(g, {self.defn.name!r})")
        for f in self.defn.fragments:
            if f.role is MatrixRole.WARPGROUP:
                self.emit(f"{self.ref(f)} = {self.ref(WARPGROUPS)}.accumulator({f.name!r}, {f.n})")
            else:
                self.emit(f"{self.ref(f)} = L.matrix(g, {f.rows}, {f.cols}, {dtype(f.elem)})")
        for v in self.defn.locals:
            if v not in self.facts.defined_first or v in self.kept:
                zero = Const(False if v.elem is Elem.BOOL else 0, v.elem)
                self.emit(f"{self.ref(v)} = {literal(zero)}")
        if self.returns:
            self.emit(f"{self.alive} = None")
        return self.lines + main

    def _builtin(self, kind: BuiltinKind) -> str:
        if kind is BuiltinKind.PLANE_DIM:
            return literal(Const(self.options.plane_dim, Elem.U32))
        return f"g.{kind.value.lower()}()"

    # --- statements -----------------------------------------------------------------------------

    def _block(self, block: Block, mask: str) -> str:
        """Emit ``block`` for the lanes of ``mask``; return the mask after it (or _DEAD)."""
        start = len(self.lines)
        for stmt in block:
            if mask == _DEAD:
                break
            self.comment_for(stmt.loc)
            mask = self._stmt(stmt, mask)
        if len(self.lines) == start or all(
            line.strip().startswith("#") for line in self.lines[start:]
        ):
            self.emit("pass")
        return mask

    def _stmt(self, stmt: Stmt, mask: str) -> str:
        if isinstance(stmt, Instr):
            self._instr(stmt, mask)
            return mask
        if isinstance(stmt, Break | Continue | Return):
            self._exit(stmt, mask)
            return _DEAD
        if isinstance(stmt, If):
            self._if(stmt, mask)
        elif isinstance(stmt, RangeLoop):
            self._range_loop(stmt, mask)
        else:
            self._loop(stmt, mask)
        return self._refresh(mask) if exits_here(stmt) else mask

    def _check(self, ins: Instr, mask: str, length: object = None) -> None:
        """Emit the sanitizer's check of ``ins`` (when sanitizing and it needs one)."""
        if self.sites is None:
            return
        alive = self.alive if self.returns else "None"
        sites, params = self.sites, self.defn.array_params
        checking = check(ins, self, mask, alive, sites, params, length)
        if checking is not None:
            self.emit(checking)

    def _instr(self, ins: Instr, mask: str) -> None:
        if id(ins) not in self.guarded:
            self._check(ins, mask)
        text = expression(ins, self, mask)
        if ins.out is None:
            self.emit(text)
        else:
            self._assign(ins, ins.out, text, mask)

    def _assign(self, site: Stmt, var: Local, text: str, mask: str) -> None:
        name = self.ref(var)
        if mask == "None" or id(site) in self.facts.plain:
            self.emit(f"{name} = {text}")
        elif isinstance(site, Instr) and is_fresh(site, self):
            self.emit(f"{name} = L.merge_fresh({mask}, {text}, {name})")
        else:
            self.emit(f"{name} = L.merge({mask}, {text}, {name})")

    def _refresh(self, mask: str) -> str:
        """The block's mask after a statement that removed some lanes from the kernel or the
        innermost loop iteration; stops the kernel or iteration once no lane is left."""
        target = self.loops[-1][1] if self.loops else self.alive
        if mask == "None":
            mask = target
        elif mask != target:
            self.emit(f"{mask} = L.mask_and({mask}, {target})")
        if mask == target:
            self.emit(f"if {target} is False:")
            self.depth += 1
            if not self.loops:
                self._kernel_end()
            self.emit("continue" if self.loops else "return")
            self.depth -= 1
        return mask

    def _kernel_end(self) -> None:
        """Before the kernel returns: the warpgroups' products and the bulk copies must all be
        complete."""
        if self.warpgroups:
            self.emit(f"L.warpgroups_end({self.ref(WARPGROUPS)})")
        if self.barriers:
            self.emit(f"L.barriers_end({self.ref(BARRIERS)})")

    def _exit(self, stmt: Stmt, mask: str) -> None:
        if isinstance(stmt, Return) and not self.loops and mask in ("None", self.alive):
            self._kernel_end()
            self.emit("return")
            return
        updates: list[str] = []
        if isinstance(stmt, Return):
            updates.append(self.alive)
            for lm, it in self.loops:
                updates += [lm, it]
        else:
            lm, it = self.loops[-1]
            updates += [lm, it] if isinstance(stmt, Break) else [it]
        if mask in updates:
            self.emit(f"{self.gone} = {mask}")
            mask = self.gone
        self.emit(f"# {type(stmt).__name__.lower()}")
        for var in updates:
            self.emit(f"{var} = L.mask_andnot({var}, {mask})")

    def _if(self, stmt: If, mask: str) -> None:
        if id(stmt) in self.guards:
            access, length = self.guards[id(stmt)]
            self._check(access, mask, length)
        if self.sites is not None and id(stmt) in self.line_guards:
            access, line, width, lines = self.line_guards[id(stmt)]
            self.emit(line_check(access, self, mask, self.sites, line, width, lines))
        cond = self._value(stmt.cond)
        then_mask = self.names.numbered("_m")
        self.emit(f"{then_mask} = L.mask_and({mask}, {cond})")
        if id(stmt) in self.zero_fills:
            # the load reads 0 wherever its index is out of bounds, which is what the other
            # branch assigns: the load runs for all of ``mask``, the other branch only when no
            # lane loaded
            self._nested(f"if {then_mask} is not False:", stmt.then, mask)
            self._nested("else:", stmt.orelse, mask)
            return
        else_mask = None
        if stmt.orelse:
            else_mask = self.names.numbered("_m")
            self.emit(f"{else_mask} = L.mask_andnot({mask}, {cond})")
        if stmt.then:
            self._branch(stmt.then, then_mask)
        if else_mask is not None:
            self._branch(stmt.orelse, else_mask)

    def _branch(self, block: Block, mask: str) -> None:
        """Emit ``block`` for the lanes of ``mask``. Unless sanitizing (whose checks see every
        lane), a block that may run over its active lanes alone (see ``narrowing``) and lies in
        no other such block is rendered twice: over every lane, and over those that ``L.subset``
        picks, which runs when they are few (fewer for a light block: see ``narrowing.share``)."""
        head = f"if {mask} is not False:"
        if self.sites is not None or self.narrowed or not narrowable(block):
            self._nested(head, block, mask)
            return
        lanes = self.names.numbered("_s")
        self.emit(head)
        self.depth += 1
        self.emit(f"{lanes} = L.subset({mask}, {share(block)!r})")
        self.narrowed = True
        self._nested(f"if {lanes} is None:", block, mask)
        self.emit("else:")
        self.depth += 1
        self._over(block, lanes)
        self.depth -= 2
        self.narrowed = False

    def _over(self, block: Block, lanes: str) -> None:
        """Emit ``block`` over the lanes ``lanes`` alone: its values and memory picked at them,
        then every one put back (spread over all lanes where it was assigned and is live)."""
        used = footprint(block, self.facts.reads)
        kept: list[tuple[str, str, bool]] = []
        self.kept.update(used.values)
        for x in (*used.values, *used.memory):
            name, keep = self.ref(x), self.names.numbered("_k")
            self.emit(f"{keep} = {name}")
            if x in used.picked or x in used.memory:
                self.emit(f"{name} = L.pick({lanes}, {name})")
            kept.append((name, keep, x in used.live))
        self._block(block, "None")
        for name, keep, live in kept:
            back = f"L.spread(g, {lanes}, {name}, {keep})" if live else keep
            self.emit(f"{name} = {back}")

    def _nested(self, head: str, block: Block, mask: str) -> None:
        self.emit(head)
        self.depth += 1
        self._block(block, mask)
        self.depth -= 1

    def _value(self, x: object) -> str:
        return literal(x) if isinstance(x, Const) else self.ref(x)

    def _range_loop(self, stmt: RangeLoop, mask: str) -> None:
        start = self.names.numbered("_start")
        trips = self.names.numbered("_trips")
        lm, it = self.names.numbered("_lm"), self.names.numbered("_it")
        j = self.names.numbered("_j")
        step = int(stmt.step.value)
        self.emit(f"{start} = {self._value(stmt.start)}")
        if isinstance(stmt.start, Const) and isinstance(stmt.end, Const):
            count = len(range(int(stmt.start.value), int(stmt.end.value), step))
            self.emit(f"{trips} = {count}")
        else:
            self.emit(f"{trips} = L.trip_count({start}, {self._value(stmt.end)}, {step})")
        self.emit(f"{lm} = {mask}")
        self.emit(f"for {j} in range(L.most({trips})):")
        self.depth += 1
        self.emit(f"{it} = L.iter_mask({lm}, {j}, {trips})")
        self.emit(f"if {it} is False:")
        self.emit(f"{_INDENT}break")
        self._assign(stmt, stmt.var, f"L.range_value({start}, {j}, {step})", it)
        self.loops.append((lm, it))
        self._block(stmt.body, it)
        self.loops.pop()
        self.depth -= 1

    def _loop(self, stmt: Loop, mask: str) -> None:
        lm, it = self.names.numbered("_lm"), self.names.numbered("_it")
        self.emit(f"{lm} = {mask}")
        self.emit(f"while {lm} is not False:")
        self.depth += 1
        self.emit(f"{it} = {lm}")
        self.loops.append((lm, it))
        self._block(stmt.body, it)
        self.loops.pop()
        self.depth -= 1
