"""The C-family emitter: one lowered :class:`KernelDefinition` and a :class:`Dialect` in, source
text out.

The output is one translation unit: a header comment naming the kernel and its Python source,
the dialect's preamble, the helper functions the kernel needs, and the kernel. The kernel's
prologue applies buffer offsets, converts raw scalar arguments and computes the position
builtins it uses; then come shared arrays (with the counter of reducing barriers where one is
built, see :mod:`~ruda_core.codegen.sync`), local arrays and locals (zero-initialised), then the
body as structured C with ``// file:line`` comments where the IR has locations. Names are the
user's, mangled only where the target reserves them (see :mod:`~ruda_core.codegen.names`).

A line local is one C variable per lane (``v_0``, ``v_1`` …): a lane-wise instruction is one
statement per lane, and only ``LOAD_LINE``/``STORE_LINE`` touch memory as a whole, through the
dialect's vector access (:meth:`Dialect.load_line`).

``RangeLoop`` keeps Python's meaning: start and end are evaluated once, a hidden counter drives
the loop (so writes to the variable do not change the iteration), and a step other than ±1
stops at the end instead of stepping past it, so the counter can never wrap.

The emitter never asks which dialect it has; it is pure and deterministic, imports no driver,
and its output may serve as a cache key.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TypeVar, cast

from ..errors import CompilationError, UnsupportedFeature
from ..ir import (
    ATOMIC_OPS,
    BARRIER_OPS,
    LANE_WISE_OPS,
    MATRIX_OPS,
    PLANE_OPS,
    SWIZZLE_ALIGN_NBYTES,
    SYNC_REDUCE_OPS,
    WARPGROUP_OPS,
    Block,
    Builtin,
    BuiltinKind,
    Const,
    Elem,
    Fragment,
    If,
    Instr,
    KernelDefinition,
    Local,
    LocalArray,
    Loop,
    MatrixLayout,
    MatrixRole,
    Op,
    Operand,
    Param,
    RangeLoop,
    SharedArray,
    SourceLoc,
    copy_width,
    line_alignment,
    lower_async_copies,
)
from .abi import ArgKind, KernelArg, Signature, build_signature, tensor_map_key
from .atomics import AtomicLowering
from .dialect import Dialect, MemSpace, Usage, buffered_align_nbytes, swizzled_arrays
from .expr import Arg, ExprLowering
from .names import NameTable
from .plane import PlaneLowering
from .prelude import Prelude
from .printf import print_sites, print_statement, record_statement
from .reports import report_param, report_statement
from .structured import DERIVED_POSITIONS, INDENT, StructuredWriter, range_advance
from .sync import SyncLowering

__all__ = ["CFamilyEmitter", "EmittedKernel"]

_T = TypeVar("_T")
_BUILTIN_NAMES = frozenset(kind.value for kind in BuiltinKind)
#: Builtins in declaration order (each after the ones its formula names).
_BUILTIN_ORDER = [
    *(
        f"{what}_{axis}"
        for what in ("UNIT_POS", "RUDA_POS", "RUDA_DIM", "RUDA_COUNT")
        for axis in "XYZ"
    ),
    "UNIT_POS",
    "RUDA_POS",
    "RUDA_DIM",
    "RUDA_COUNT",
    "ABSOLUTE_POS_X",
    "ABSOLUTE_POS_Y",
    "ABSOLUTE_POS_Z",
    "ABSOLUTE_POS",
    "PLANE_DIM",
    "UNIT_POS_PLANE",
]
_AXIS_SOURCE = {"UNIT_POS": "unit", "RUDA_POS": "cube", "RUDA_DIM": "dim", "RUDA_COUNT": "count"}
_LINEAR = dict(DERIVED_POSITIONS)
_IDENT = re.compile(r"[A-Z_]+")
_METADATA_OPS = {Op.LEN: "len", Op.SHAPE: "shape", Op.STRIDE: "stride"}
_SYNC_STATEMENTS = frozenset({Op.SYNC_UNITS, Op.SYNC_PLANE, Op.FENCE_UNITS, Op.FENCE_DEVICE})


@dataclass(frozen=True, slots=True)
class EmittedKernel:
    """Generated source with its entry point and argument list (see
    :mod:`~ruda_core.codegen.abi`)."""

    entrypoint: str
    source: str
    args: tuple[KernelArg, ...]


class CFamilyEmitter:
    """Emits kernels for one dialect. Stateless and reusable; :meth:`emit` is pure."""

    __slots__ = ("dialect",)

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def emit(self, definition: KernelDefinition) -> EmittedKernel:
        """Generate ``definition`` (verified, already lowered by the bounds pass).

        :raises UnsupportedFeature: the target lacks something the kernel uses; the message
            names the kernel, the Python location where known, and the capability.
        :raises CompilationError: the definition uses something no C target can express.
        """
        if not self.dialect.async_copies:
            definition = lower_async_copies(definition)
        writer = _KernelWriter(self.dialect, definition)
        return writer.guarded(writer.run)

    def arguments(self, definition: KernelDefinition) -> tuple[KernelArg, ...]:
        """The argument list :meth:`emit` gives ``definition``, without generating its body.

        :raises UnsupportedFeature: as :meth:`emit`, for the parameters' types.
        """
        writer = _KernelWriter(self.dialect, definition)
        return writer.guarded(lambda: writer.start().args)


def usage_of(definition: KernelDefinition) -> Usage:
    """The element types and ``(operation, element)`` pairs ``definition`` uses."""
    elems = {p.elem for p in definition.params}
    elems |= {v.elem for v in definition.locals}
    elems |= {s.elem for s in definition.shared} | {a.elem for a in definition.local_arrays}
    elems |= {f.elem for f in definition.fragments}
    ops: set[tuple[Op, Elem]] = set()

    def walk(block: Block) -> None:
        for stmt in block:
            if isinstance(stmt, Instr):
                elems.update(a.elem for a in stmt.args if isinstance(a, Const))
                key = stmt.args[0].elem if stmt.args else Elem.U32
                ops.add((stmt.op, key))
                if stmt.op is Op.REPORT_OOB:
                    ops.add((Op.ATOMIC_SWAP, Elem.U32))
            elif isinstance(stmt, If):
                walk(stmt.then)
                walk(stmt.orelse)
            elif isinstance(stmt, RangeLoop | Loop):
                walk(stmt.body)

    walk(definition.body)
    cube = definition.max_units if definition.exact_units else None
    return Usage(frozenset(elems), frozenset(ops), cube)


class _KernelWriter(StructuredWriter):
    """The state of one emission: names, helpers, used builtins and output lines."""

    def __init__(self, dialect: Dialect, definition: KernelDefinition) -> None:
        self.d = dialect
        self.defn = definition
        self.names = NameTable(dialect.reserved | _BUILTIN_NAMES, dialect.reserved_prefixes)
        self.entry = self.names.claim(definition.name)
        self.c: dict[str, str] = {p.name: self.names.claim(p.name) for p in definition.params}
        self.signature: Signature | None = None
        self.prelude = Prelude()
        self.expr = ExprLowering(dialect, self.prelude, self._name_of)
        self.atomics = AtomicLowering(self.expr)
        self.plane = PlaneLowering(self.expr, lambda: self._builtin(BuiltinKind.UNIT_POS_PLANE))
        self.sync = SyncLowering(self.atomics, self._builtin)
        self.builtins: set[str] = set()
        #: the C variables of each line local's lanes
        self.lanes: dict[Local, list[str]] = {}
        self.line_temp: str | None = None
        self.lines: list[str] = []
        self.loc: SourceLoc | None = None
        self._commented: tuple[str, int] | None = None

    def start(self) -> Signature:
        """Declare the parameters (and derived arguments), then the arrays and locals."""
        if self.signature is None:
            dynamic = [s for s, _ in self.defn.dynamic_shared]
            if dynamic and self.d.dynamic_shared is None:
                raise UnsupportedFeature(f"{self.d.name} has no shared memory sized at launch")
            for s in dynamic:  # named before the names the arguments derive
                self.c[s.name] = self.names.claim(s.name)
            self.signature = build_signature(self.defn, self.d, self.c, self.names.claim)
            declared: list[SharedArray | LocalArray | Local | Fragment] = [
                *(s for s in self.defn.shared if s.size is None),
                *self.defn.local_arrays,
                *self.defn.fragments,
                *self.defn.locals,
            ]
            for var in declared:
                if isinstance(var, Local) and var.width > 1:
                    self.lanes[var] = [
                        self.names.claim(f"{var.name}_{k}") for k in range(var.width)
                    ]
                else:
                    self.c[var.name] = self.names.claim(var.name)
        return self.signature

    # -- assembly ---------------------------------------------------------------------------

    def run(self) -> EmittedKernel:
        d, defn = self.d, self.defn
        signature = self.start()
        preamble = d.preamble(usage_of(defn))
        self._block(defn.body, 1)
        body, self.lines = self.lines, []
        self.loc = None
        declarations = self._declarations()
        source = "from " + str(defn.source) if defn.source is not None else "(no source location)"
        out = [f"// Kernel {defn.name} {source}", f"// Generated by ruda for {d.name}.", ""]
        if preamble:
            out += [*preamble, ""]
        out += self.prelude.render()
        args = [f"{INDENT}{a.ctype} {a.name}" for a in signature.args]
        head = d.kernel_head(defn.max_units, defn.min_cubes)
        if args:
            out += [f"{head} {self.entry}(", ",\n".join(args), ") {"]
        else:
            out.append(f"{head} {self.entry}(void) {{")
        out += declarations
        if declarations and body:
            out.append("")
        out += [*body, "}", ""]
        return EmittedKernel(self.entry, "\n".join(out), signature.args)

    def _declarations(self) -> list[str]:
        d, defn = self.d, self.defn
        lines = [INDENT + line for line in self.start().prologue]
        u32 = d.type_name(Elem.U32)
        needed = self._builtin_closure()
        lines += [
            f"{INDENT}const {u32} {name} = {self._builtin_formula(name)};"
            for name in _BUILTIN_ORDER
            if name in needed
        ]
        tiles = d.matrix_align_nbytes if defn.fragments else 0
        lined = line_alignment(defn)
        swizzled = swizzled_arrays(defn)
        buffered = d.buffered_shared_nbytes(defn) > 0  # static arrays in the dynamic buffer
        buffered_align = buffered_align_nbytes(defn)
        arrays: list[tuple[str, str, str]] = []
        for s in defn.shared:
            if s.size is None:
                storage = d.storage_type(s.elem, MemSpace.SHARED)
                if buffered:
                    nbytes = -(-s.length * s.elem.nbytes // buffered_align) * buffered_align
                    arrays.append((storage, self.c[s.name], d.literal(nbytes, Elem.U32)))
                    continue
                align = max(tiles, lined.get(s, 0), SWIZZLE_ALIGN_NBYTES if s in swizzled else 0)
                lines.append(INDENT + d.shared_decl(storage, self.c[s.name], s.length, align))
        if defn.dynamic_shared or buffered:
            arrays += [
                (
                    d.storage_type(s.elem, MemSpace.SHARED),
                    self.c[s.name],
                    f"{self.c[s.size.name]} * {d.literal(s.elem.nbytes, Elem.U32)}",  # type: ignore[union-attr]
                )
                for s, _ in defn.dynamic_shared
            ]
            passed = [a.name for a in self.start().args if a.kind is ArgKind.SHARED]
            buffer = passed[0] if passed else self.names.claim("dynamic_shared")
            align = buffered_align if buffered else 0
            lines += [INDENT + line for line in d.dynamic_shared_decls(buffer, arrays, align)]
        if self.sync.counter is not None:
            storage = d.storage_type(Elem.U32, MemSpace.SHARED)
            lines.append(INDENT + d.shared_decl(storage, self.sync.counter, 1))
        for a in defn.local_arrays:
            storage = d.storage_type(a.elem, MemSpace.LOCAL)
            lines.append(f"{INDENT}{storage} {self.c[a.name]}[{a.length}];")
        lines += [
            INDENT
            + (d.warpgroup_decl if f.role is MatrixRole.WARPGROUP else d.matrix_decl)(
                f, self.c[f.name]
            )
            for f in defn.fragments
        ]
        for v in defn.locals:
            zero = d.literal(False if v.elem is Elem.BOOL else 0, v.elem)
            for name in self.lanes.get(v, [self.c[v.name]] if v.width == 1 else []):
                lines.append(f"{INDENT}{d.type_name(v.elem)} {name} = {zero};")
        return lines

    def _builtin_formula(self, name: str) -> str:
        if name in _LINEAR:
            return _LINEAR[name]
        if name == "PLANE_DIM":
            return self.d.plane_dim()
        if name == "UNIT_POS_PLANE":
            return self.d.plane_lane() or "UNIT_POS % PLANE_DIM"
        return self.d.position(_AXIS_SOURCE[name[:-2]], "XYZ".index(name[-1]))

    def _builtin_closure(self) -> set[str]:
        needed = set(self.builtins)
        for name in reversed(_BUILTIN_ORDER):
            if name in needed:
                needed.update(
                    n for n in _IDENT.findall(self._builtin_formula(name)) if n in _BUILTIN_NAMES
                )
        return needed

    # -- operands ---------------------------------------------------------------------------

    def _builtin(self, kind: BuiltinKind) -> str:
        self.builtins.add(kind.value)
        return kind.value

    def _name_of(self, operand: Operand) -> str:
        if isinstance(operand, Builtin):
            return self._builtin(operand.kind)
        return self.c[operand.name]  # type: ignore[union-attr]  # Local or Param

    # -- statements -------------------------------------------------------------------------

    def _locate(self, loc: SourceLoc, depth: int) -> None:
        """A ``// file:line`` comment where the line changes."""
        self.loc = loc
        key = (loc.file, loc.line)
        if key != self._commented:
            self._commented = key
            self._line(depth, f"// {os.path.basename(loc.file)}:{loc.line}")

    def _condition(self, cond: Operand) -> str:
        return self.expr.text(cond)

    def _loop_head(self, depth: int) -> None:
        self._line(depth, "for (;;) {")

    def _return(self, depth: int) -> None:
        self._line(depth, "return;")

    def _range_loop(self, loop: RangeLoop, depth: int) -> None:
        d, expr = self.d, self.expr
        elem = loop.var.elem
        ctype, var = d.type_name(elem), self.c[loop.var.name]
        counter = self.names.claim(f"{var.rstrip('_')}_it")
        init = f"{ctype} {counter} = {expr.text(loop.start)}"
        end = expr.text(loop.end)
        if isinstance(loop.end, Local):  # the body may assign it; Python reads it once
            end_name = self.names.claim(f"{var.rstrip('_')}_end")
            init += f", {end_name} = {end}"
            end = end_name
        cond, advance = range_advance(d, elem, counter, end, int(loop.step.value))
        self._line(depth, f"for ({init}; {cond}; {advance}) {{")
        self._line(depth + 1, f"{var} = {counter};")
        self._block(loop.body, depth + 1)
        self._line(depth, "}")

    # -- instructions -----------------------------------------------------------------------

    def _array(self, arr: object) -> tuple[str, MemSpace]:
        if isinstance(arr, Param):
            return self.c[arr.name], MemSpace.GLOBAL
        if isinstance(arr, SharedArray):
            return self.c[arr.name], MemSpace.SHARED
        if isinstance(arr, LocalArray):
            return self.c[arr.name], MemSpace.LOCAL
        raise CompilationError(f"{arr!r} is not an array")

    def _instr(self, ins: Instr, depth: int) -> None:
        op, out, args, expr = ins.op, ins.out, ins.args, self.expr
        value: str
        if (out is not None and out.width > 1) or op in (Op.STORE_LINE, Op.LINE_LANE):
            self._line_instr(ins, depth)
            return
        if op is Op.INDEX_ASSIGN:
            base, space = self._array(args[0])
            index, stored = expr.text(args[1]), expr.text(args[2])  # type: ignore[arg-type]
            self._line(depth, self.d.store(args[0].elem, space, base, index, stored) + ";")
            return
        if op in _SYNC_STATEMENTS:
            self._line(depth, self.sync.statement(op))
            return
        if op in MATRIX_OPS:
            for stmt in self._matrix(ins):
                self._line(depth, stmt)
            return
        if op in WARPGROUP_OPS:
            for stmt in self._warpgroup(ins):
                self._line(depth, stmt)
            return
        if op in BARRIER_OPS:
            for stmt in self._barrier(ins):
                self._line(depth, stmt)
            return
        if op is Op.COPY_ASYNC:
            dst, _ = self._array(args[0])
            src, _ = self._array(args[2])
            i, j = expr.text(args[1]), expr.text(args[3])  # type: ignore[arg-type]
            for stmt in self.d.copy_async(args[0].elem, dst, i, src, j, copy_width(ins)):
                self._line(depth, stmt)
            return
        if op is Op.ASYNC_COMMIT:
            self._line(depth, self.d.async_commit())
            return
        if op is Op.ASYNC_WAIT:
            self._line(depth, self.d.async_wait(int(args[0].value)))  # type: ignore[union-attr]
            return
        if op is Op.REPORT_OOB:
            self._report(ins, depth)
            return
        if op is Op.PRINT:
            if self.d.print_records:
                for stmt in self._record(ins):
                    self._line(depth, stmt)
            else:
                self._line(depth, print_statement(self.d, expr, ins))
            return
        if op is Op.INDEX:
            base, space = self._array(args[0])
            value = self.d.load(args[0].elem, space, base, expr.text(args[1]))  # type: ignore[arg-type]
        elif op in _METADATA_OPS:
            axis = int(args[1].value) if op is not Op.LEN else 0  # type: ignore[union-attr]
            value = self.start().metadata[(_METADATA_OPS[op], args[0].name, axis)]  # type: ignore[union-attr]
        elif op is Op.RANK:
            value = expr.literal(args[0].rank, Elem.U32)  # type: ignore[union-attr]
        elif op in ATOMIC_OPS:
            base, space = self._array(args[0])
            ptr = f"&{base}[{expr.text(args[1])}]"  # type: ignore[arg-type]
            values = [expr.text(a) for a in args[2:]]  # type: ignore[arg-type]
            value = self.atomics.expression(op, args[0].elem, space, ptr, values)
        elif op in PLANE_OPS:
            texts = [expr.text(a) for a in args]  # type: ignore[arg-type]
            value = self.plane.expression(op, args[0].elem if args else Elem.BOOL, texts)
        elif op in SYNC_REDUCE_OPS:
            value = self.sync.reduce(op, expr.text(args[0]))  # type: ignore[arg-type]
        elif op in (Op.CAST, Op.BITCAST) and out is None:
            raise CompilationError(f"{op} without a result")
        else:
            value = self._value(ins, list(args))  # type: ignore[arg-type]  # value operands
        if out is None:
            self._line(depth, f"{value};")
        else:
            self._line(depth, f"{self.c[out.name]} = {value};")

    def _matrix(self, ins: Instr) -> list[str]:
        """The statements of a cooperative-matrix operation, from the dialect's hooks."""
        d, args, text = self.d, ins.args, self.expr.text

        def name(x: object) -> str:
            return self.c[cast(Fragment, x).name]

        if ins.op is Op.CMMA_FILL:
            return d.matrix_fill(cast(Fragment, args[0]), name(args[0]), text(args[1]))  # type: ignore[arg-type]
        if ins.op is Op.CMMA_EXECUTE:
            return d.matrix_execute(*(name(a) for a in args))
        if ins.op is Op.CMMA_CAST:
            dst, src = cast(Fragment, args[0]), cast(Fragment, args[1])
            return d.matrix_cast(dst, name(dst), src, name(src))
        load = ins.op is Op.CMMA_LOAD
        frag = cast(Fragment, args[0] if load else args[2])
        base, space = self._array(args[1] if load else args[0])
        offset = cast(Operand, args[2] if load else args[1])
        pointer = f"{base} + {text(offset)}"
        layout = MatrixLayout(cast(Const, args[4]).value)
        hook = d.matrix_load if load else d.matrix_store
        return hook(frag, name(frag), pointer, text(cast(Operand, args[3])), layout, space)

    def _warpgroup(self, ins: Instr) -> list[str]:
        """The statements of a warpgroup matrix operation, from the dialect's hooks."""
        d, args, text = self.d, ins.args, self.expr.text
        accumulators = [
            (f, self.c[f.name]) for f in self.defn.fragments if f.role is MatrixRole.WARPGROUP
        ]
        if ins.op is Op.WGMMA_FENCE:
            return d.warpgroup_fence(accumulators)
        if ins.op is Op.WGMMA_COMMIT:
            return d.warpgroup_commit()
        if ins.op is Op.WGMMA_WAIT:
            return d.warpgroup_wait(int(cast(Const, args[0]).value), accumulators)
        if ins.op is Op.WGMMA_FILL:
            acc = cast(Fragment, args[0])
            return d.warpgroup_fill(acc, self.c[acc.name], text(cast(Operand, args[1])))
        if ins.op is Op.WGMMA_MMA:
            acc, a, b = cast(Fragment, args[0]), cast(SharedArray, args[1]), args[3]
            a_ptr = f"&{self._array(a)[0]}[{text(cast(Operand, args[2]))}]"
            b_ptr = f"&{self._array(b)[0]}[{text(cast(Operand, args[4]))}]"
            block = int(cast(Const, args[5]).value)
            return d.warpgroup_mma(acc, self.c[acc.name], a.elem, a_ptr, b_ptr, block)
        acc = cast(Fragment, args[2])
        base, _ = self._array(args[0])
        pointer = f"{base} + {text(cast(Operand, args[1]))}"
        stride, rows, cols = (text(cast(Operand, x)) for x in args[3:6])
        return d.warpgroup_store(acc, self.c[acc.name], pointer, stride, rows, cols)

    def _barrier(self, ins: Instr) -> list[str]:
        """The statements of an asynchronous barrier operation or a bulk copy, from the
        dialect's hooks."""
        d, args, text = self.d, ins.args, self.expr.text
        if ins.op in (Op.BULK_FENCE, Op.BULK_COMMIT, Op.BULK_WAIT):
            return d.bulk_group(ins.op, int(cast(Const, args[0]).value) if args else 0)
        if ins.op is Op.TENSOR_COPY:
            dst, bar = (
                f"&{self._array(args[k])[0]}[{text(cast(Operand, args[k + 1]))}]" for k in (0, 9)
            )
            tensor_map = self.start().tensor_maps[tensor_map_key(ins)]
            row, col = (text(cast(Operand, args[k])) for k in (5, 6))
            return d.tensor_copy(dst, tensor_map, row, col, bar)
        if ins.op not in (Op.BULK_COPY, Op.BULK_STORE):
            bar = f"&{self._array(args[0])[0]}[{text(cast(Operand, args[1]))}]"
            return d.barrier_op(ins.op, bar, text(cast(Operand, args[2])) if len(args) > 2 else "")
        dst, src = (
            f"&{self._array(args[k])[0]}[{text(cast(Operand, args[k + 1]))}]" for k in (0, 2)
        )
        nbytes = f"({text(cast(Operand, args[4]))}) * {args[0].elem.nbytes}u"
        if ins.op is Op.BULK_STORE:
            return d.bulk_store(dst, src, nbytes)
        return d.bulk_copy(
            dst, src, nbytes, f"&{self._array(args[5])[0]}[{text(cast(Operand, args[6]))}]"
        )

    def _value(self, ins: Instr, operands: list[Arg]) -> str:
        """The expression of the value operation ``ins`` on ``operands`` (its operands, or the
        texts of one lane of them)."""
        op, args, out = ins.op, ins.args, ins.out
        if op is Op.CAST:
            return self.expr.cast(operands[0], args[0].elem, out.elem)  # type: ignore[union-attr]
        if op is Op.BITCAST:
            return self.expr.bitcast(operands[0], args[0].elem, out.elem)  # type: ignore[union-attr]
        elem = args[1].elem if op is Op.SELECT else args[0].elem
        return self.expr.apply(op, elem, operands)

    def _line_instr(self, ins: Instr, depth: int) -> None:
        """An instruction that writes or reads a line: lane by lane, or one line access."""
        op, out, args = ins.op, ins.out, ins.args
        if op is Op.LINE_LANE:
            lane = self.lanes[args[0]][int(args[1].value)]  # type: ignore[index, union-attr]
            self._line(depth, f"{self.c[out.name]} = {lane};")  # type: ignore[union-attr]
            return
        if op in (Op.LOAD_LINE, Op.STORE_LINE):
            base, space = self._array(args[0])
            line = cast(Local, out if op is Op.LOAD_LINE else args[2])
            if self.line_temp is None:
                self.line_temp = self.names.claim("line")
            access = self.d.load_line if op is Op.LOAD_LINE else self.d.store_line
            index = self.expr.text(args[1])  # type: ignore[arg-type]
            lanes = self.lanes[line]
            stmts = access(
                args[0].elem,
                base,
                index,
                len(lanes),
                lanes,
                self.line_temp,
                space,
                left_early=self.left_early > 0,
            )
            self._line(depth, "{")
            for stmt in stmts:
                self._line(depth + 1, stmt)
            self._line(depth, "}")
            return
        lanes = self.lanes[out]  # type: ignore[index]
        if op is Op.LINE_BUILD:
            for lane, arg in zip(lanes, args, strict=True):
                self._line(depth, f"{lane} = {self.expr.text(arg)};")  # type: ignore[arg-type]
            return
        if op not in LANE_WISE_OPS:
            raise CompilationError(f"{op} does not apply to lines")
        for k, lane in enumerate(lanes):
            operands: list[Arg] = [
                self.lanes[a][k] if isinstance(a, Local) and a.width > 1 else a  # type: ignore[misc]
                for a in args
            ]
            self._line(depth, f"{lane} = {self._value(ins, operands)};")

    def _record(self, ins: Instr) -> list[str]:
        """PRINT where the dialect records prints: the record of this print's site."""
        args = self.start().args
        buffer = next(a.name for a in args if a.kind is ArgKind.PRINT)
        base = next(a.name for a in args if a.kind is ArgKind.PRINT_BASE)
        site = next(k for k, p in enumerate(print_sites(self.defn)) if p is ins)
        cube = self._builtin(BuiltinKind.RUDA_POS)
        unit = self._builtin(BuiltinKind.UNIT_POS)
        return record_statement(self.d, self.expr, ins, site, (buffer, base, cube, unit))

    def _report(self, ins: Instr, depth: int) -> None:
        """REPORT_OOB: the first report wins the flag and writes the other five words."""
        buffer = self.c[report_param(self.defn).name]
        for line in report_statement(self.d, self.expr, ins, buffer):
            self._line(depth, line)
