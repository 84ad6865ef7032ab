"""The WGSL emitter: one lowered :class:`KernelDefinition` in, one WGSL module out.

Values are the shared code generation's: :class:`~ruda_core.codegen.expr.ExprLowering` and
:class:`~ruda_core.codegen.plane.PlaneLowering` with the WGSL dialect (:mod:`.dialect`), the
range loops' stepping, the name table and the walk over structured statements
(:class:`~ruda_core.codegen.structured.StructuredWriter`), after the shared IR lowering passes
(async copies, then lines to scalars, but for the line accesses WGSL makes one vector access).
The module around them is this emitter's own, since WGSL's differs from a C translation unit:
a kernel takes no arguments (its arrays are bindings, its scalars words of a launch record),
there is no pointer arithmetic, atomics are a type rather than an operation, bytes are packed
in words, a shader compiler evaluates constant expressions (where an overflow is an error) and
lavapipe stops a unit's loops after 65 535 turns.

The module is, in order: ``enable`` directives, the launch record ``P`` (binding 0, see
:mod:`~ruda_wgpu.wgsl.layout`), one ``array<T>`` binding per array parameter (declared
``read`` where the kernel never writes it, see :mod:`~ruda_wgpu.wgsl.bindings`; ``T`` is
``vec2<…>`` or ``vec4<…>`` where it is accessed by lines of that width; ``atomic<…>`` where an
atomic touches it, ``f32`` atomics living as ``atomic<u32>`` bits updated through a
compare-exchange loop), ``var<workgroup>`` shared arrays, helper functions, and the entry point
with ``@workgroup_size(WX, WY, WZ)``: the cube shape and every dynamic shared array's length
(``RUDA_SHARED_k``) are override constants, so one module serves every ``RudaDim`` and each
pipeline is specialised at launch. The emitter is pure and deterministic and imports no driver.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import cast

from ruda_core.codegen.dialect import MemSpace
from ruda_core.codegen.expr import Arg, ExprLowering
from ruda_core.codegen.names import NameTable
from ruda_core.codegen.plane import PlaneLowering
from ruda_core.codegen.prelude import Prelude
from ruda_core.codegen.printf import print_sites, record_statement
from ruda_core.codegen.reports import report_param, report_statement
from ruda_core.codegen.structured import INDENT, StructuredWriter, range_advance
from ruda_core.errors import CompilationError, UnsupportedFeature
from ruda_core.ir import (
    ATOMIC_OPS,
    MATRIX_OPS,
    PLANE_OPS,
    Block,
    Builtin,
    Const,
    Elem,
    If,
    Instr,
    KernelDefinition,
    Local,
    LocalArray,
    Loop,
    Op,
    Operand,
    Param,
    RangeLoop,
    Return,
    SharedArray,
    SourceLoc,
    Stmt,
    lower_async_copies,
    scalarize_lines,
    walk,
)

from .bindings import (
    atomic_arrays,
    binding,
    checks_planes,
    packed,
    reports_faults,
    vector_widths,
    writable_arrays,
)
from .dialect import APART, LANE, LANES, WgslDialect, nan_unless_finite
from .folds import ValueNumbers, constant_locals
from .helpers import referenced
from .layout import HEADER_WORDS, RECORD_WORDS, RecordLayout, record_word
from .names import BUILTINS, RESERVED

__all__ = ["FAULT_WIDTH_SHIFT", "PLANE_FAULT", "WgslEmitter"]

#: The cube's reducing barriers, over the ``bool`` ``{0}``: WGSL has none (see the helper).
_UNITS_COUNT = "ruda_units_count({0}, UNIT_POS)"
_UNITS_REDUCE = {
    Op.SYNC_UNITS_COUNT: _UNITS_COUNT,
    Op.SYNC_UNITS_AND: f"({_UNITS_COUNT} == RUDA_DIM)",
    Op.SYNC_UNITS_OR: f"({_UNITS_COUNT} != 0u)",
}
#: The print-record buffer of a printing kernel, and the kernel-fault word
#: (:func:`~.bindings.reports_faults`), which takes the largest of the faults reported into it:
#: the id of a kernel whose loops the driver may have stopped (see
#: :attr:`WgslDialect.loop_limit` and the helper ``ruda_check_loops``), or that id with
#: :data:`PLANE_FAULT` set, by a kernel whose subgroups are not its planes.
PRINTS, TURNED = "ruda_prints", "ruda_turned"
#: The bit of a plane fault: WebGPU lets a driver pick each pipeline's subgroup width (within
#: the adapter's range; wgpu asks Vulkan for a varying one), while a kernel is generated for
#: planes of the width the driver measured when it opened the device, of consecutive units. A
#: kernel with plane operations checks each unit's subgroup width and lane, and reports where
#: either differs, so that its wrong results are never taken for right ones: the bit, the
#: subgroup width's log2 from bit :data:`FAULT_WIDTH_SHIFT`, and the kernel's id.
PLANE_FAULT = 1 << 31
FAULT_WIDTH_SHIFT = 24
#: Where the driver stops loops: set by a ``return`` inside a loop, which leaves its loops
#: first, so that the check where the kernel ends runs outside them (a loop inside a loop costs
#: lavapipe a turn of each turn of the outer one, taken or not).
RETURNING = "ruda_returning"


class WgslEmitter:
    """Emits WGSL for one adapter's dialect. Stateless; :meth:`emit` is pure."""

    __slots__ = ("dialect",)

    def __init__(self, dialect: WgslDialect) -> None:
        self.dialect = dialect

    def emit(self, definition: KernelDefinition) -> str:
        """The WGSL module of ``definition`` (verified, lowered by the bounds pass), whose
        entry point is ``main``.

        :raises UnsupportedFeature: the kernel uses what WGSL or the adapter lacks; the message
            names the kernel, its Python location where known, and the capability.
        """
        lowered = lower_async_copies(definition)
        vectors = vector_widths(lowered)
        flat = scalarize_lines(lowered, lambda access: cast(Param, access.args[0]).name in vectors)
        writer = _Writer(self.dialect, flat, vectors)
        return writer.guarded(writer.run)


#: How many times a short loop body is repeated per turn of its loop, on an adapter whose driver
#: stops loops after a number of turns (:attr:`WgslDialect.loop_limit`); elsewhere loops stay as
#: written. A body of arithmetic alone (a counter, a step of a recurrence) is repeated
#: :data:`UNROLL` times; one that reads or writes an array :data:`UNROLL_LONGER` times, since
#: each access is several lines with its bounds test: 1 024 copies of the cube collectives'
#: folds made a reduction's shader 22 000 lines long, which lavapipe took a quarter of a minute
#: to compile, per candidate of the tuner.
UNROLL = 1024
UNROLL_LONGER = 32
#: The most instructions a loop body repeated per turn may have.
_UNROLLED_INSTRUCTIONS = 4


#: Operations one WGSL operator computes: a body of these is cheap to repeat (a helper
#: function or a plane operation repeated 1 024 times makes a shader the driver compiles for
#: minutes).
_CHEAP = frozenset(
    {Op.ASSIGN, Op.ADD, Op.SUB, Op.MUL, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.SELECT}
    | {Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.INDEX, Op.INDEX_ASSIGN}
)


def _unrollable(body: Block) -> bool:
    """Whether a loop body is a few instructions of one WGSL operator each, on 32-bit values,
    with no control flow: cheap to repeat."""
    cheap = all(
        isinstance(s, Instr)
        and s.op in _CHEAP
        and all(a.elem in (Elem.I32, Elem.U32, Elem.F32, Elem.BOOL) for a in s.args)
        for s in body
    )
    return cheap and 0 < len(body) <= _UNROLLED_INSTRUCTIONS


class _Writer(StructuredWriter):
    """The state of one emission: names, helpers and output lines."""

    def __init__(
        self, dialect: WgslDialect, definition: KernelDefinition, vectors: dict[str, int]
    ) -> None:
        self.d = dialect
        self.defn = definition
        #: the array parameters bound as vectors, with their width (:func:`vector_widths`)
        self.vectors = vectors
        self.names = NameTable(RESERVED)
        self.n: dict[str, str] = {}
        self.prelude = Prelude()
        self.expr = ExprLowering(self.d, self.prelude, self._name_of)
        self.plane = PlaneLowering(self.expr, lambda: "UNIT_POS_PLANE")
        self.atomic = atomic_arrays(definition)
        #: locals a shader compiler may evaluate while it compiles (:mod:`.folds`)
        self.constant = constant_locals(definition)
        #: the value of each local where the writer is (:class:`.folds.ValueNumbers`)
        self.values = ValueNumbers()
        #: the locals assigned in each loop being written whose turns are not counted by
        #: constants: a compiler knows none of them inside it (not even one it knows on entry)
        self.varying: list[frozenset[Local]] = []
        self.lines: list[str] = []
        self.loc: SourceLoc | None = None
        #: the loops the statement being written is inside, counted where the driver stops loops,
        #: and whether a return has left loops (through :data:`RETURNING`)
        self.loops = 0
        self.left_loops = False
        #: the kernel's print sites, in program order (a record names its site's index)
        self.sites = print_sites(definition)
        #: whether the kernel checks the subgroups it runs in (see PLANE_FAULT)
        self.checked = checks_planes(definition, dialect.plane_width)

    @cached_property
    def layout(self) -> RecordLayout:
        """The launch record's layout: made during the emission, whose errors name the
        kernel."""
        return RecordLayout.of(self.defn)

    # -- types ------------------------------------------------------------------------------

    def ty(self, elem: Elem) -> str:
        return self.d.type_name(elem)

    def storage(self, arr: Param | SharedArray, elem: Elem) -> str:
        """The element type an array is declared with: a buffer of bytes or 16-bit values
        (``bool``, ``i8`` …) packs four or two in each ``atomic<u32>`` word, so that a store
        changes its own bytes only."""
        ty = self.ty(elem)
        if arr.name in self.vectors:
            return f"vec{self.vectors[arr.name]}<{ty}>"
        if isinstance(arr, Param) and packed(elem):
            if arr.name in self.atomic:
                raise UnsupportedFeature(f"WGSL has no atomics on {elem}")
            return "atomic<u32>"
        if arr.name not in self.atomic:
            return ty
        if elem in (Elem.I32, Elem.U32):
            return f"atomic<{ty}>"
        if elem is Elem.F32:
            return "atomic<u32>"
        raise UnsupportedFeature(f"WGSL has no atomics on {elem}")

    # -- assembly ---------------------------------------------------------------------------

    def run(self) -> str:
        defn = self.defn
        named: list[Param | SharedArray | LocalArray | Local] = [*defn.params, *defn.shared]
        for var in [*named, *defn.local_arrays, *defn.locals]:
            self.n[var.name] = self.names.claim(var.name)
        module = self._bindings()
        prologue = self._prologue()
        self.lines = []
        self._block(defn.body, 1)
        if self.left_loops:
            prologue.append(f"{INDENT}var {RETURNING} = false;")
        body = [*self.lines, *(INDENT + line for line in self._turns_check())]
        # the print records and the kernel-fault word: bound after the arrays where used
        extra = [("RUDA_PRINT_BASE", PRINTS)] if self.sites else []
        faults = reports_faults(defn, self.d.loop_limit, self.d.plane_width)
        extra += [("RUDA_KERNEL_ID", TURNED)] if faults else []
        for index, (constant, name) in enumerate(extra, start=len(defn.array_params) + 1):
            module += [f"override {constant}: u32 = 0u;", binding(index, name, "atomic<u32>")]
        enables = ["enable f16;"] if Elem.F16 in self.d.types else []
        source = "from " + str(defn.source) if defn.source is not None else "(no source location)"
        out = [f"// Kernel {defn.name} {source}", "// Generated by ruda for WGSL.", *enables, ""]
        out += [f"override W{axis}: u32 = 1u;" for axis in "XYZ"]
        helpers = self.prelude.render()
        helpers += [
            line for text in referenced([*prologue, *body, *helpers]) for line in (text, "")
        ]
        if any(LANE in line for line in helpers):  # plane helpers read the unit's lane
            module += [f"var<private> {LANE}: u32;", f"var<private> {LANES}: u32;"]
            lanes = "min(PLANE_DIM, RUDA_DIM - (UNIT_POS - UNIT_POS_PLANE))"
            prologue += [f"{INDENT}{LANE} = UNIT_POS_PLANE;", f"{INDENT}{LANES} = {lanes};"]
        if any(APART in line for line in [*body, *helpers]):
            module.append(f"var<private> {APART}: u32;")
            prologue.append(f"{INDENT}{APART} = nw.x >> 16u;")
        out += [*module, "", *helpers, "@compute @workgroup_size(WX, WY, WZ)"]
        out.append(
            "fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
            "@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>"
            + (", @builtin(subgroup_size) sg_width: u32" if self.checked else "")
            + ") {"
        )
        return "\n".join([*out, *prologue, *body, "}", ""])

    def _bindings(self) -> list[str]:
        defn = self.defn
        out = [f"@group(0) @binding(0) var<uniform> P: array<vec4<u32>, {RECORD_WORDS // 4}>;"]
        writable = writable_arrays(defn)
        for k, p in enumerate(defn.array_params):
            access = "read_write" if k in writable else "read"
            out.append(binding(k + 1, self.n[p.name], self.storage(p, p.elem), access))
        dynamic = 0
        for s in defn.shared:
            if s.size is None:
                length = str(s.length)
            else:
                length = f"RUDA_SHARED_{dynamic}"
                out.append(f"override {length}: u32 = 1u;")
                dynamic += 1
            storage = self.storage(s, s.elem)
            out.append(f"var<workgroup> {self.n[s.name]}: array<{storage}, {length}>;")
        return out

    def _prologue(self) -> list[str]:
        defn, layout = self.defn, self.layout
        # the cube's extents and the plane width in a variable: naga evaluates an expression of
        # constants and overrides alone while it builds the pipeline, and refuses a shift that
        # overflows there (RUDA_DIM << 31, valid WGSL at run time)
        lines = [f"{INDENT}var SIZES = vec4<u32>(WX, WY, WZ, {self.d.plane_width}u);"]
        lines += [f"{INDENT}let {name} = {formula};" for name, formula in BUILTINS]
        lines.append(f"{INDENT}if (RUDA_POS_X >= RUDA_COUNT_X) {{ return; }}  // spare cubes")
        lines.append(f"{INDENT}let PLANE_DIM = SIZES.w;")
        lines.append(f"{INDENT}let UNIT_POS_PLANE = UNIT_POS % PLANE_DIM;")
        if self.checked:  # its subgroups checked (see PLANE_FAULT); the lane counted by
            # a scan: wgpu 29 refuses the lane builtin in a module with override constants
            width = f"(countTrailingZeros(sg_width) << {FAULT_WIDTH_SHIFT}u)"
            fault = f"atomicMax(&{TURNED}[0], {PLANE_FAULT}u | {width} | RUDA_KERNEL_ID);"
            lines.append(f"{INDENT}let sg_lane = subgroupExclusiveAdd(1u);")
            test = "sg_width != PLANE_DIM || sg_lane != UNIT_POS_PLANE"
            lines.append(f"{INDENT}if ({test}) {{ {fault} }}")
        for k, p in enumerate(defn.array_params):
            per = f" / {self.vectors[p.name]}u" if p.name in self.vectors else ""
            offset = record_word(HEADER_WORDS + k)
            lines.append(f"{INDENT}let {self._offset(p)} = {offset}{per};")
        for p, word in zip(defn.scalar_params, layout.scalars, strict=True):
            lines.append(f"{INDENT}let {self.n[p.name]} = {self._scalar(p.elem, word)};")
        for a in defn.local_arrays:
            lines.append(f"{INDENT}var {self.n[a.name]}: array<{self.ty(a.elem)}, {a.length}>;")
        for v in defn.locals:
            if v.width > 1:  # a vector load's or store's line
                lines.append(f"{INDENT}var {self.n[v.name]}: vec{v.width}<{self.ty(v.elem)}>;")
                continue
            zero = self.d.literal(False if v.elem is Elem.BOOL else 0, v.elem)
            lines.append(f"{INDENT}var {self.n[v.name]}: {self.ty(v.elem)} = {zero};")
        return lines

    def _offset(self, p: Param) -> str:
        return f"{self.n[p.name]}_at"

    def _scalar(self, elem: Elem, word: int) -> str:
        ty = self.ty(elem)
        low, high = record_word(word), record_word(word + 1)
        if elem is Elem.BOOL:
            return f"{low} != 0u"
        if elem.bits <= 32:
            return self.expr.bitcast(low, Elem.U32, elem)
        # i64, u64 (WGSL holds no f64), built unsigned: naga extends a u32 into an i64 by its sign
        bits = f"u64({low}) | (u64({high}) << 32u)"
        return bits if elem is Elem.U64 else f"bitcast<{ty}>({bits})"

    # -- operands ---------------------------------------------------------------------------

    def _name_of(self, a: Operand) -> str:
        if isinstance(a, Builtin):
            return a.kind.value
        return self.n[a.name]  # type: ignore[union-attr]  # a Local or a scalar Param

    def text(self, a: object) -> str:
        return self.expr.text(cast(Operand, a))

    def index(self, index: object) -> str:
        """An index as a ``u32`` (a constant one as a literal: naga converts few literals)."""
        if isinstance(index, Const):
            return self.d.literal(index.cast(Elem.U32).value, Elem.U32)
        i = self.text(index)
        return i if cast(Operand, index).elem is Elem.U32 else f"u32({i})"

    def linear(self, arr: object, index: object) -> str:
        """The position of ``arr[index]`` in its buffer (parameters start at an offset), in
        elements, or in vectors for a line ``index`` of an array bound as vectors."""
        i = self.index(index)
        return f"{self._offset(arr)} + {i}" if isinstance(arr, Param) else i

    def element(self, arr: object, index: object) -> str:
        """The element reference ``arr[index]``: a vector's component in an array bound as
        vectors (whose offset counts vectors)."""
        name = cast(Param | SharedArray | LocalArray, arr).name
        width = self.vectors.get(name)
        if width is None:
            return f"{self.n[name]}[{self.linear(arr, index)}]"
        i = self.index(index)
        return f"{self.n[name]}[{self._offset(cast(Param, arr))} + {i} / {width}u][{i} % {width}u]"

    def vector(self, arr: object, index: object) -> str:
        """The reference of line ``index`` of an array bound as vectors: one vector (the line
        accesses left by :func:`~ruda_core.ir.scalarize_lines` are only those)."""
        return f"{self.n[cast(Param, arr).name]}[{self.linear(arr, index)}]"

    def _packed_word(self, arr: Param, index: object) -> tuple[str, str, str]:
        """The word, bit shift and mask of a packed element."""
        e = f"({self.linear(arr, index)})"
        per_word = 4 // arr.elem.nbytes
        word = f"{self.n[arr.name]}[{e} / {per_word}u]"
        shift = f"(({e} % {per_word}u) * {8 * arr.elem.nbytes}u)"
        return word, shift, self.d.literal((1 << (8 * arr.elem.nbytes)) - 1, Elem.U32)

    # -- statements -------------------------------------------------------------------------

    def _lines(self, depth: int, text: str) -> None:
        """Each line of ``text`` at ``depth`` (and its own indent beyond it)."""
        for line in text.split("\n"):
            self._line(depth, line)

    def _condition(self, cond: Operand) -> str:
        return self.text(cond)

    def _loop_head(self, depth: int) -> None:
        self._line(depth, "loop {")

    def _stmt(self, stmt: Stmt, depth: int) -> None:
        """A statement; where the driver stops loops, a loop a ``return`` leaves is followed by
        the rest of that return (:data:`RETURNING`)."""
        if isinstance(stmt, If):
            self._if(stmt, depth)
            return
        if not isinstance(stmt, Loop | RangeLoop):
            super()._stmt(stmt, depth)
            if isinstance(stmt, Instr):
                self.values.assigned(stmt)
            return
        bounds = (stmt.start, stmt.end) if isinstance(stmt, RangeLoop) else ()
        runtime = not bounds or not all(isinstance(x, Const) for x in bounds)
        assigned = {s.out for s in walk(stmt.body) if isinstance(s, Instr)}
        changed = frozenset(x for x in assigned if isinstance(x, Local))
        self.varying.append(changed if runtime else frozenset())
        counter = [stmt.var] if isinstance(stmt, RangeLoop) else []
        self.values.forget([*changed, *counter])
        self.loops += bool(self.d.loop_limit)
        super()._stmt(stmt, depth)
        self.loops -= bool(self.d.loop_limit)
        self.values.forget([*changed, *counter])
        self.varying.pop()
        if self.d.loop_limit and any(isinstance(s, Return) for s in walk(stmt.body)):
            rest = "break;" if self.loops else " ".join([*self._turns_check(), "return;"])
            self._line(depth, f"if ({RETURNING}) {{ {rest} }}")

    def _if(self, stmt: If, depth: int) -> None:
        """An ``if``, each branch from the values before it; after it, the values both leave."""
        if stmt.loc is not None:
            self._locate(stmt.loc, depth)
        before = self.values.fork()
        self._line(depth, f"if ({self._condition(stmt.cond)}) {{")
        self._block(stmt.then, depth + 1)
        left = self.values.switch(before)
        if stmt.orelse:
            self._line(depth, "} else {")
            self._block(stmt.orelse, depth + 1)
        self._line(depth, "}")
        self.values.join(left)

    def _return(self, depth: int) -> None:
        if self.loops:  # leaves its loops first (see RETURNING)
            self._lines(depth, f"{RETURNING} = true;\nbreak;")
            self.left_loops = True
            return
        for line in self._turns_check():
            self._line(depth, line)
        self._line(depth, "return;")

    def _turns_check(self) -> list[str]:
        """Where the kernel ends, on a driver that stops loops: the check that reports the
        kernel where its loops were stopped."""
        return ["ruda_check_loops();"] if self.d.loop_limit else []

    def _range_loop(self, loop: RangeLoop, depth: int) -> None:
        """Python's ``range``: start and end read once, a hidden counter
        (:func:`~ruda_core.codegen.structured.range_advance`)."""
        elem = loop.var.elem
        var = self.n[loop.var.name]
        counter = self.names.claim(f"{var.rstrip('_')}_it")
        end = self.names.claim(f"{var.rstrip('_')}_end")
        step = int(loop.step.value)
        self._line(depth, "{")
        self._line(depth + 1, f"let {end} = {self.text(loop.end)};")
        cond, advance = range_advance(self.d, elem, counter, end, step)
        start = self.d.declare(self.ty(elem), (counter, self.text(loop.start)))
        # a short straight body, repeated per turn of the loop where the driver stops loops:
        # lavapipe ends a unit's loops after 65 535 turns in all, and a turn costs more than
        # such a body; elsewhere the loop stays as written
        repeated = bool(self.d.loop_limit) and _unrollable(loop.body)
        repeats = 1
        if repeated:
            accesses = any(cast(Instr, i).op in (Op.INDEX, Op.INDEX_ASSIGN) for i in loop.body)
            repeats = UNROLL_LONGER if accesses else UNROLL
            self._lines(depth + 1, f"{start};\nloop {{")
        else:
            self._line(depth + 1, f"for ({start}; {cond}; {advance}) {{")
        changed = [s.out for s in loop.body if isinstance(s, Instr) and isinstance(s.out, Local)]
        for _ in range(repeats):
            if repeated:
                self._line(depth + 2, f"if (!({cond})) {{ break; }}")
                self.values.forget(changed)  # a copy's values are another turn's: not nested
            self._line(depth + 2, f"{var} = {counter};")
            self._block(loop.body, depth + 2)
            if repeated:
                self._line(depth + 2, f"{advance};")
        self._lines(depth, "    }\n}")

    # -- instructions -----------------------------------------------------------------------

    def _instr(self, ins: Instr, depth: int) -> None:
        op, out, args = ins.op, ins.out, ins.args
        if op is Op.INDEX_ASSIGN:
            self._store(args[0], args[1], self.text(args[2]), depth)
            return
        if op is Op.STORE_LINE:
            self._line(depth, f"{self.vector(args[0], args[1])} = {self.text(args[2])};")
            return
        if op is Op.SYNC_PLANE and self.d.plane_width == 1:  # a plane of one unit: its
            return  # accesses are in order
        if op in _REFUSED:
            raise UnsupportedFeature(f"{op}: {_REFUSED[op]}")
        if op in _FIXED:
            self._lines(depth, _FIXED[op])
            return
        if op in _STATEMENTS:
            _STATEMENTS[op](self, ins, depth)
            return
        if out is None:
            raise CompilationError(f"{op} without a result")
        name = self.n[out.name]
        constant = bool(args) and all(isinstance(a, Const) for a in args)
        if constant and op not in (Op.ASSIGN, Op.CAST) and out.elem is args[0].elem:
            # a WGSL expression of literals is evaluated when the shader is made, where an
            # overflow or a non-finite result is an error: the first operand goes through
            # the result variable, so the operation runs as the IR defines it
            self._line(depth, f"{name} = {self.text(args[0])};")
            self._line(depth, f"{name} = {self._value(ins, name)};")
            return
        self._line(depth, f"{name} = {self._value(ins)};")

    def _value(self, ins: Instr, first: str | None = None) -> str:
        """The expression of value instruction ``ins`` (``first``: the text of its first
        operand, where it is not the operand's own)."""
        op, args, out = ins.op, ins.args, cast(Local, ins.out)
        if op is Op.INDEX:
            return self._load(args[0], args[1])
        if op is Op.LOAD_LINE:
            return self.vector(args[0], args[1])
        if op is Op.LINE_LANE:
            return f"{self.text(args[0])}[{int(cast(Const, args[1]).value)}]"
        if op is Op.LINE_BUILD:
            lanes = ", ".join(self.text(a) for a in args)
            return f"vec{out.width}<{self.ty(out.elem)}>({lanes})"
        if op in (Op.LEN, Op.SHAPE, Op.STRIDE):  # a metadata word of the launch record
            axis = int(cast(Const, args[1]).value) if op is not Op.LEN else 0
            slots = self.defn.metadata_layout()
            at = next(k for k, s in enumerate(slots) if s == (op.value, args[0], axis))
            return record_word(self.layout.metadata + at)
        if op is Op.RANK:
            return self.d.literal(cast(Param, args[0]).rank, Elem.U32)
        if op in _UNITS_REDUCE:
            return _UNITS_REDUCE[op].format(self.text(args[0]))
        if op in PLANE_OPS:
            elem = cast(Operand, args[0]).elem if args else Elem.BOOL
            return self.plane.expression(op, elem, [self.text(a) for a in args])
        operands: list[Arg] = [first or cast(Operand, args[0]), *cast(list[Operand], args[1:])]
        source = cast(Operand, args[0]).elem
        if op is Op.CAST and isinstance(args[0], Const):  # naga folds few conversions
            return self.d.literal(args[0].cast(out.elem).value, out.elem)
        if op is Op.CAST:
            return self.expr.cast(operands[0], source, out.elem)
        if op is Op.BITCAST:
            return self.expr.bitcast(operands[0], source, out.elem)
        elem = cast(Operand, args[1] if op is Op.SELECT else args[0]).elem
        if elem in (Elem.F16, Elem.F32) and op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FMA):
            special = self._folded_float(op, elem, args, operands)
            if special is not None:
                return special
        return self.expr.apply(op, elem, operands)

    def _folded_float(
        self, op: Op, elem: Elem, args: tuple[object, ...], operands: list[Arg]
    ) -> str | None:
        """``x - x``, ``x + (-x)`` and ``x / x`` (of values a compiler may find equal), and
        sums, differences, products, quotients and ``fma`` with an operand a compiler may know
        (to be a zero or not finite, where it is a constant), in forms that keep IEEE's zero or
        NaN whatever the compiler folds (``None``: the plain form); such an ``fma`` is a
        product, then a sum, which are exact where it is a zero. A compiler may assume finite
        values and no signed zeros, and fold ``x - x``, ``x + (-x)`` or ``0 * x`` to a zero,
        ``x + 0`` to ``x``, ``0 - x`` to ``-x``, ``0 / x`` to ``0``, ``x / x`` to 1 or
        ``fma(x, 0, c)`` to ``c`` (NVIDIA's Vulkan compiler and lavapipe do some)."""
        w = [self.expr.wide(a, elem) for a in operands]
        varying = frozenset().union(*self.varying)
        known = [
            a.value == 0 or not math.isfinite(a.value)
            if isinstance(a, Const)
            else (a in self.constant and a not in varying) or self.values.constant(a)
            for a in args
        ]
        a, b = (self.values.of(x) for x in args[:2])
        negated = (Op.NEG, elem, 1)
        if (op is Op.SUB and a == b) or (
            op is Op.ADD and (b == (*negated, a) or a == (*negated, b))
        ):
            value = nan_unless_finite("0.0f", w[0])
        elif op is Op.FMA and any(known):
            value = f"ruda_add_f32(ruda_mul_f32({w[0]}, {w[1]}), {w[2]})"
        elif op is Op.DIV and (any(known) or a == b):
            value = f"ruda_quotient_f32({w[0]}, {w[1]})"
        elif any(known):
            value = f"ruda_{op.value}_f32({w[0]}, {w[1]})"
        else:
            return None
        return value if elem is Elem.F32 else self.d.narrow(elem, value, Elem.F32)

    def _is_atomic(self, arr: object) -> bool:
        return cast(Param | SharedArray | LocalArray, arr).name in self.atomic

    def _load(self, arr: object, index: object) -> str:
        if isinstance(arr, Param) and packed(arr.elem):
            word, shift, mask = self._packed_word(arr, index)
            bits = f"((atomicLoad(&{word}) >> {shift}) & {mask})"
            if arr.elem is Elem.BOOL:
                return f"({bits} != 0u)"
            return self.d.convert(arr.elem, bits)
        ref = self.element(arr, index)
        if not self._is_atomic(arr):
            return ref
        value = f"atomicLoad(&{ref})"
        return f"bitcast<f32>({value})" if cast(Param, arr).elem is Elem.F32 else value

    def _store(self, arr: object, index: object, value: str, depth: int) -> None:
        if isinstance(arr, Param) and packed(arr.elem):
            word, shift, mask = self._packed_word(arr, index)
            bits = f"select(0u, 1u, {value})" if arr.elem is Elem.BOOL else f"u32({value})"
            self._line(depth, f"atomicAnd(&{word}, ~({mask} << {shift}));")
            self._line(depth, f"atomicOr(&{word}, ({bits} & {mask}) << {shift});")
            return
        ref = self.element(arr, index)
        if not self._is_atomic(arr):
            self._line(depth, f"{ref} = {value};")
            return
        if cast(Param, arr).elem is Elem.F32:
            value = f"bitcast<u32>({value})"
        self._line(depth, f"atomicStore(&{ref}, {value});")

    def _atomic(self, ins: Instr, depth: int) -> None:
        op, args, out = ins.op, ins.args, ins.out
        elem = cast(Param, args[0]).elem
        self.storage(cast(Param, args[0]), elem)  # refuses what has no atomics
        ref = self.element(args[0], args[1])
        values = [self.text(a) for a in args[2:]]
        target = f"{self.n[out.name]} = " if out is not None else ""
        if op is Op.ATOMIC_LOAD:
            if out is not None:
                self._line(depth, f"{target}{self._load(args[0], args[1])};")
            return
        if op is Op.ATOMIC_STORE:
            self._store(args[0], args[1], values[0], depth)
            return
        native = self.d.atomic_native(op, elem, MemSpace.GLOBAL)
        if native is not None:
            self._line(depth, f"{target}{native.format(ptr=f'&{ref}', v=values[0])};")
            return
        # a compare-exchange loop: the new value computed from the old one, bits for f32
        ty = self.ty(elem)
        old = self.names.claim("old")
        new = self.expr.atomic_update(op, elem, old, values[-1], values[0])
        bits = elem is Elem.F32
        word = f"bitcast<u32>({new})" if bits else new
        seen = f"bitcast<f32>({old}_bits)" if bits else f"{old}_bits"
        self._line(depth, "{")
        self._line(depth + 1, f"var {old}_bits = atomicLoad(&{ref});")
        self._lines(
            depth + 1,
            f"""loop {{
    let {old}: {ty} = {seen};
    let r = atomicCompareExchangeWeak(&{ref}, {old}_bits, {word});
    if (r.exchanged) {{ break; }}
    {old}_bits = r.old_value;
}}""",
        )
        if out is not None:
            self._line(depth + 1, f"{target}{seen};")
        self._line(depth, "}")

    def _record(self, ins: Instr, depth: int) -> None:
        """PRINT: one record appended to the stream's print buffer, as the C targets append
        theirs (:func:`~ruda_core.codegen.printf.record_statement`)."""
        site = next(k for k, p in enumerate(self.sites) if p is ins)
        where = (PRINTS, "RUDA_PRINT_BASE", "RUDA_POS", "UNIT_POS")
        for line in record_statement(self.d, self.expr, ins, site, where):
            self._line(depth, line)

    def _report(self, ins: Instr, depth: int) -> None:
        """REPORT_OOB, as the C targets write it (:mod:`ruda_core.codegen.reports`), into the
        report array at its offset."""
        report = report_param(self.defn)
        at = self._offset(report)
        for line in report_statement(self.d, self.expr, ins, self.n[report.name], at):
            self._line(depth, line)


#: Operations WGSL cannot express, with why.
_REFUSED = dict.fromkeys(MATRIX_OPS, "WGSL has no cooperative matrices")
_REFUSED |= dict.fromkeys(
    (Op.FENCE_UNITS, Op.FENCE_DEVICE), "WGSL has memory fences only inside barriers"
)
#: Statements of one fixed text.
_FIXED = {
    Op.SYNC_UNITS: "storageBarrier();\nworkgroupBarrier();",
    Op.SYNC_PLANE: "subgroupBarrier();",
}
#: Operations written as statements of their own.
_STATEMENTS = {Op.PRINT: _Writer._record, Op.REPORT_OOB: _Writer._report}
_STATEMENTS |= dict.fromkeys(ATOMIC_OPS, _Writer._atomic)
