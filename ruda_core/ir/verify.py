"""The IR verifier: checks that a :class:`KernelDefinition` is well typed and well formed.

:func:`verify` enforces the typing rules written in :mod:`ruda_core.ir.ops` and the structural
rules of :mod:`ruda_core.ir.kernel`: operand counts and element types, result elements, arrays only
where arrays go, lines only where the line rules of :mod:`ruda_core.ir.ops` allow them,
``SHAPE``/``STRIDE`` axes below the tensor's rank, ``Break``/``Continue`` only inside loops, every
variable declared (locals, shared and local arrays listed in the definition, parameters in
``params`` at their index) and every name unique. Compilers may assume a verified definition; the
front end and the bounds pass produce only verified ones. This module
reads IR only; it must not know about any backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

import numpy as np

from ..errors import CompilationError
from .barriers import BARRIER_ELEM, BARRIER_OPERANDS
from .kernel import Block, Break, Continue, If, Instr, KernelDefinition, Loop, RangeLoop, Return
from .matrix import Fragment, MatrixLayout, MatrixRole
from .ops import (
    ARITH_BINARY,
    ATOMIC_OPS,
    BARRIER_OPS,
    BIT_COUNTS,
    BITWISE_BINARY,
    COMPARE_OPS,
    FLOAT_BINARY,
    FLOAT_TESTS,
    FLOAT_UNARY,
    INT_BINARY,
    INT_UNARY,
    LANE_WISE_OPS,
    LINE_OPS,
    PLANE_OPS,
    Op,
)
from .printing import MAX_PRINT_VALUES
from .types import Elem
from .variables import (
    LINE_WIDTHS,
    Builtin,
    Const,
    Local,
    LocalArray,
    Param,
    ParamKind,
    SharedArray,
    SourceLoc,
)
from .warpgroup import WARPGROUP_ELEMS, WARPGROUP_K, WARPGROUP_M, WARPGROUP_NS

__all__ = ["verify"]


def verify(defn: KernelDefinition) -> None:
    """Check ``defn``; return ``None`` when it is valid.

    :raises CompilationError: naming the kernel, the offending statement and, where the statement
        has one, its source location (``file``/``line`` set).
    """
    _Verifier(defn).run()


class _Invalid(Exception):
    pass


def _fail(message: str) -> NoReturn:
    raise _Invalid(message)


class _Verifier:
    __slots__ = ("defn", "fragments", "local_arrays", "locals", "params", "shared")

    def __init__(self, defn: KernelDefinition) -> None:
        self.defn = defn
        self.params = frozenset(defn.params)
        self.locals = frozenset(defn.locals)
        self.shared = frozenset(defn.shared)
        self.local_arrays = frozenset(defn.local_arrays)
        self.fragments = frozenset(defn.fragments)

    def run(self) -> None:
        try:
            self._check_declarations()
        except _Invalid as exc:
            raise self._error(str(exc), self.defn.source) from None
        self._block(self.defn.body, 0)

    def _error(self, message: str, loc: SourceLoc | None) -> CompilationError:
        where = f"{loc}: " if loc is not None else ""
        return CompilationError(
            f"{where}invalid IR in kernel '{self.defn.name}': {message}",
            file=loc.file if loc is not None else None,
            line=loc.line if loc is not None else None,
        )

    def _check_declarations(self) -> None:
        names: set[str] = set()
        declared = [
            *(p.name for p in self.defn.params),
            *(v.name for v in self.defn.locals),
            *(s.name for s in self.defn.shared),
            *(a.name for a in self.defn.local_arrays),
            *(f.name for f in self.defn.fragments),
        ]
        for name in declared:
            if not name.isidentifier():
                _fail(f"name {name!r} is not an identifier")
            if name in names:
                _fail(f"name {name!r} is declared twice")
            names.add(name)
        for i, p in enumerate(self.defn.params):
            if p.index != i:
                _fail(f"parameter '{p.name}' has index {p.index} at position {i}")
            if p.kind is not ParamKind.TENSOR and p.rank != 0:
                _fail(f"{p.kind.value} parameter '{p.name}' has rank {p.rank}; only tensors do")
            if p.rank < 0:
                _fail(f"tensor '{p.name}' has negative rank {p.rank}")
            if p.kind is ParamKind.SCALAR and p.read_only:
                _fail(f"scalar parameter '{p.name}' is marked read_only")
        for v in self.defn.locals:
            if v.width != 1 and v.width not in LINE_WIDTHS:
                _fail(f"local '{v.name}' has width {v.width}; a line has {LINE_WIDTHS} lanes")
        for s in self.defn.shared:
            if s.size is None:
                continue
            if s.size not in self.defn.scalar_params or s.size.elem is not Elem.U32:
                _fail(f"dynamic shared array '{s.name}' is sized by '{s.size}', not a u32 scalar")
            if s.length != 0:
                _fail(f"dynamic shared array '{s.name}' has a static length {s.length}")
        for frag in self.defn.fragments:
            _check_fragment(frag)
        arrays: list[SharedArray | LocalArray] = [*self.defn.shared, *self.defn.local_arrays]
        for arr in arrays:
            if isinstance(arr, SharedArray) and arr.size is not None:
                continue
            if arr.length < 1:
                _fail(f"array '{arr.name}' has length {arr.length}; it must be at least 1")

    # -- statements -------------------------------------------------------------------------

    def _block(self, block: Block, loops: int) -> None:
        for stmt in block:
            try:
                self._stmt(stmt, loops)
            except _Invalid as exc:
                raise self._error(f"{exc} (in `{_describe(stmt)}`)", stmt.loc) from None

    def _stmt(self, stmt: object, loops: int) -> None:
        if isinstance(stmt, Instr):
            self._instr(stmt)
        elif isinstance(stmt, If):
            _no_line(stmt.cond, "an if condition")
            self._expect(self._scalar(stmt.cond), {Elem.BOOL}, "an if condition")
            self._block(stmt.then, loops)
            self._block(stmt.orelse, loops)
        elif isinstance(stmt, RangeLoop):
            self._range_loop(stmt, loops)
        elif isinstance(stmt, Loop):
            self._block(stmt.body, loops + 1)
        elif isinstance(stmt, Break | Continue):
            if loops == 0:
                _fail(f"{type(stmt).__name__.lower()} outside a loop")
        elif not isinstance(stmt, Return):
            _fail(f"{stmt!r} is not a statement")

    def _range_loop(self, stmt: RangeLoop, loops: int) -> None:
        for what, value in (("variable", stmt.var), ("start", stmt.start), ("end", stmt.end)):
            _no_line(value, f"the range {what}")
        elem = self._local(stmt.var)
        if not elem.is_int:
            _fail(f"range loop variable '{stmt.var.name}' is {elem}; it must be an integer")
        for what, operand in (("start", stmt.start), ("end", stmt.end), ("step", stmt.step)):
            self._expect(self._scalar(operand), {elem}, f"the range {what}")
        if not isinstance(stmt.step, Const) or stmt.step.value == 0:
            _fail("the range step must be a non-zero constant")
        self._block(stmt.body, loops + 1)

    # -- instructions -----------------------------------------------------------------------

    def _instr(self, ins: Instr) -> None:
        check = _RULES.get(ins.op)
        if check is None:
            _fail(f"unknown operation {ins.op!r}")
        if (ins.format is None) is (ins.op is Op.PRINT):
            _fail(f"{ins.op} {'needs a' if ins.op is Op.PRINT else 'takes no'} print format")
        if ins.op in LANE_WISE_OPS:
            _lane_widths(ins)
        elif ins.op not in LINE_OPS:
            for value in (*ins.args, ins.out):
                _no_line(value, f"an operand of {ins.op}")
        check(self, ins)

    def _arity(self, ins: Instr, n: int) -> None:
        if len(ins.args) != n:
            _fail(f"{ins.op} takes {n} operands, got {len(ins.args)}")

    def _out(self, ins: Instr, elem: Elem | None, required: bool = True) -> None:
        """Check the result: ``elem`` is its required element (None: there is no result)."""
        if ins.out is None:
            if required and elem is not None:
                _fail(f"{ins.op} needs a result local")
            return
        if elem is None:
            _fail(f"{ins.op} has no result, yet writes '{ins.out.name}'")
        out_elem = self._local(ins.out)
        if out_elem is not elem:
            _fail(f"{ins.op} gives {elem}, but its result '{ins.out.name}' is {out_elem}")

    def _scalar(self, value: object) -> Elem:
        """The element of a scalar operand, after checking it is declared and valid."""
        if isinstance(value, Local):
            return self._local(value)
        if isinstance(value, Const):
            _check_const(value)
            return value.elem
        if isinstance(value, Builtin):
            return Elem.U32
        if isinstance(value, Param):
            if value.is_array:
                _fail(f"array parameter '{value.name}' used as a scalar")
            self._param(value)
            return value.elem
        _fail(f"{value!r} is not a scalar operand")

    def _array(self, value: object, *, global_only: bool = False, no_local: bool = False) -> Elem:
        """The element of an array operand, after checking it is declared and allowed: any
        array, only a global one (``global_only``), or no local array (``no_local``)."""
        if isinstance(value, Param):
            if not value.is_array:
                _fail(f"scalar parameter '{value.name}' used as an array")
            self._param(value)
            return value.elem
        if isinstance(value, SharedArray) and not global_only:
            if value not in self.shared:
                _fail(f"shared array '{value.name}' is not declared in the definition")
            return value.elem
        if isinstance(value, LocalArray) and not (global_only or no_local):
            if value not in self.local_arrays:
                _fail(f"local array '{value.name}' is not declared in the definition")
            return value.elem
        _fail(f"{value!r} is not an array this operation accepts")

    def _fragment(self, value: object, role: MatrixRole | None, what: str) -> Fragment:
        """A declared fragment operand, of ``role`` where one is required."""
        if not isinstance(value, Fragment):
            _fail(f"{what} must be a fragment, got {value!r}")
        if value not in self.fragments:
            _fail(f"fragment '{value.name}' is not declared in the definition")
        if role is not None and value.role is not role:
            _fail(
                f"{what} must be a fragment of role {role.value}, got '{value.name}' of role "
                f"{value.role.value}"
            )
        return value

    def _local(self, var: Local) -> Elem:
        if var not in self.locals:
            _fail(f"local '{var.name}: {var.elem}' is not declared in the definition")
        return var.elem

    def _param(self, p: Param) -> None:
        if p not in self.params:
            _fail(f"parameter '{p.name}' is not one of the kernel's parameters (as declared)")

    def _expect(self, elem: Elem, allowed: set[Elem] | frozenset[Elem], what: str) -> Elem:
        if elem not in allowed:
            names = ", ".join(sorted(e.value for e in allowed))
            _fail(f"{what} is {elem}; expected {names}")
        return elem

    def _same(self, ins: Instr, allowed: frozenset[Elem], n: int, what: str) -> Elem:
        """Check ``n`` scalar operands of one element from ``allowed``; return it."""
        self._arity(ins, n)
        elems = [self._scalar(a) for a in ins.args]
        self._expect(elems[0], allowed, f"the operand of {ins.op} ({what})")
        if any(e is not elems[0] for e in elems):
            _fail(f"{ins.op} needs operands of one type, got {', '.join(map(str, elems))}")
        return elems[0]

    def _index(self, value: object) -> None:
        self._expect(self._scalar(value), _INT, "an index")


_INT = frozenset(e for e in Elem if e.is_int)
_FLOAT = frozenset(e for e in Elem if e.is_float)
_NUMERIC = _INT | _FLOAT
_ANY = frozenset(Elem)
_BOOL = frozenset({Elem.BOOL})
_U32 = frozenset({Elem.U32})
#: The elements of the atomics not defined on every number.
_ATOMIC_ELEMS = {
    Op.ATOMIC_AND: _INT,
    Op.ATOMIC_OR: _INT,
    Op.ATOMIC_XOR: _INT,
    Op.ATOMIC_INC_WRAP: _U32,
    Op.ATOMIC_DEC_WRAP: _U32,
}


def _check_const(c: Const) -> None:
    v, elem = c.value, c.elem
    if elem is Elem.BOOL:
        ok = isinstance(v, bool)
    elif elem.is_int:
        info = np.iinfo(elem.numpy)
        ok = isinstance(v, int) and not isinstance(v, bool) and int(info.min) <= v <= int(info.max)
    else:
        ok = isinstance(v, float)
    if not ok:
        _fail(f"constant {v!r} is not a value of {elem}")


def _width(value: object) -> int:
    return value.width if isinstance(value, Local) else 1


def _no_line(value: object, what: str) -> None:
    if isinstance(value, Local) and value.width > 1:
        _fail(f"{what} must be a scalar; '{value.name}' is the line {value.type_text}")


def _lane_widths(ins: Instr) -> None:
    """A lane-wise operation: its line operands share one width, which its result has (a line
    result of scalar operands holds the scalar result in every lane)."""
    widths = sorted({_width(a) for a in ins.args} - {1})
    if len(widths) > 1:
        _fail(f"{ins.op} mixes lines of widths {', '.join(map(str, widths))}")
    out = ins.out
    if widths and out is not None and out.width != widths[0]:
        _fail(
            f"{ins.op} of lines of width {widths[0]} cannot write '{out.name}' of type "
            f"{out.type_text}"
        )


def _describe(stmt: object) -> str:
    if isinstance(stmt, Instr):
        return str(stmt)
    if isinstance(stmt, If):
        return f"if {stmt.cond}"
    if isinstance(stmt, RangeLoop):
        return f"for {stmt.var} in range({stmt.start}, {stmt.end}, {stmt.step})"
    return type(stmt).__name__.lower()


# -- per-operation rules ---------------------------------------------------------------------

Rule = Callable[[_Verifier, Instr], None]


def _assign(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 1)
    v._out(ins, v._scalar(ins.args[0]))


def _cast(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 1)
    v._scalar(ins.args[0])
    if ins.out is None:
        _fail("cast needs a result local")
    v._local(ins.out)


def _bitcast(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 1)
    source = v._scalar(ins.args[0])
    if ins.out is None:
        _fail("bitcast needs a result local")
    v._local(ins.out)
    target = ins.out.elem
    if Elem.BOOL in (source, target) or source.nbytes != target.nbytes:
        _fail(f"bitcast needs two numeric types of one width, got {source} and {target}")


def _select(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 3)
    v._expect(v._scalar(ins.args[0]), _BOOL, "the select condition")
    a, b = v._scalar(ins.args[1]), v._scalar(ins.args[2])
    if a is not b:
        _fail(f"select needs two values of one type, got {a} and {b}")
    v._out(ins, a)


def _same_rule(allowed: frozenset[Elem], n: int, what: str, result: Elem | None = None) -> Rule:
    def rule(v: _Verifier, ins: Instr) -> None:
        elem = v._same(ins, allowed, n, what)
        v._out(ins, result if result is not None else elem)

    return rule


def _index_op(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    elem = v._array(ins.args[0])
    v._index(ins.args[1])
    v._out(ins, elem)


def _index_assign(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 3)
    elem = v._array(ins.args[0])
    v._index(ins.args[1])
    v._expect(v._scalar(ins.args[2]), {elem}, "the stored value")
    v._out(ins, None)


def _metadata(n: int, tensor_only: bool) -> Rule:
    def rule(v: _Verifier, ins: Instr) -> None:
        v._arity(ins, n)
        arr = ins.args[0]
        v._array(arr, global_only=True)
        if tensor_only and (not isinstance(arr, Param) or arr.kind is not ParamKind.TENSOR):
            _fail(f"{ins.op} needs a tensor parameter")
        if n == 2:
            dim = ins.args[1]
            if not isinstance(dim, Const) or not dim.elem.is_int:
                _fail(f"{ins.op} needs a constant integer axis")
            _check_const(dim)
            rank = arr.rank  # type: ignore[union-attr]  # a tensor Param, checked above
            if not 0 <= int(dim.value) < rank:
                _fail(f"axis {dim.value} is out of range for tensor '{arr}' of rank {rank}")
        v._out(ins, Elem.U32)

    return rule


def _atomic(v: _Verifier, ins: Instr) -> None:
    n = {Op.ATOMIC_LOAD: 2, Op.ATOMIC_CAS: 4}.get(ins.op, 3)
    v._arity(ins, n)
    arr = ins.args[0]
    if isinstance(arr, LocalArray):
        _fail(f"{ins.op} needs a global or shared array, not local array '{arr.name}'")
    elem = v._array(arr)
    allowed = _ATOMIC_ELEMS.get(ins.op, _NUMERIC)
    v._expect(elem, allowed, f"the element of {ins.op}'s array")
    v._index(ins.args[1])
    for value in ins.args[2:]:
        v._expect(v._scalar(value), {elem}, f"the value of {ins.op}")
    v._out(ins, None if ins.op is Op.ATOMIC_STORE else elem, required=False)


def _sync(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 0)
    v._out(ins, None)


def _plane_lane(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    elem = v._scalar(ins.args[0])
    v._expect(v._scalar(ins.args[1]), {Elem.U32}, f"the lane of {ins.op}")
    v._out(ins, elem)


def _elect(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 0)
    v._out(ins, Elem.BOOL)


def _report(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 3)
    buffer_no = ins.args[0]
    if not isinstance(buffer_no, Const) or buffer_no.elem is not Elem.U32:
        _fail("report_oob needs a constant u32 buffer number")
    _check_const(buffer_no)
    v._expect(v._scalar(ins.args[1]), {Elem.U64}, "the reported index")
    v._expect(v._scalar(ins.args[2]), {Elem.U64}, "the reported length")
    v._out(ins, None)


def _print(v: _Verifier, ins: Instr) -> None:
    fmt = ins.format
    if fmt is None or len(fmt.conversions) != len(ins.args):
        _fail("print needs one conversion per value")
    if len(ins.args) > MAX_PRINT_VALUES:
        _fail(f"print writes at most {MAX_PRINT_VALUES} values, got {len(ins.args)}")
    for conv, value in zip(fmt.conversions, ins.args, strict=True):
        problem = conv.problem(v._scalar(value))
        if problem is not None:
            _fail(problem)
    v._out(ins, None)


def _line_of(v: _Verifier, value: object, what: str) -> Local:
    if not isinstance(value, Local) or value.width == 1:
        _fail(f"{what} must be a line, got {value}")
    v._local(value)
    return value


def _load_line(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    elem = v._array(ins.args[0], no_local=True)
    v._index(ins.args[1])
    out = _line_of(v, ins.out, "the result of load_line")
    if out.elem is not elem:
        _fail(f"load_line of {elem} elements cannot write '{out.name}' of type {out.type_text}")


def _store_line(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 3)
    elem = v._array(ins.args[0], no_local=True)
    v._index(ins.args[1])
    value = _line_of(v, ins.args[2], "the stored value")
    v._expect(value.elem, {elem}, "the stored line's element")
    v._out(ins, None)


def _copy_async(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 5)
    dst, src, width = ins.args[0], ins.args[2], ins.args[4]
    if not isinstance(dst, SharedArray):
        _fail(f"copy_async writes a shared array, not {dst}")
    if not isinstance(src, Param):
        _fail(f"copy_async reads a global array parameter, not {src}")
    elem = v._array(dst)
    v._expect(v._array(src, global_only=True), {elem}, "the copied source's element")
    v._index(ins.args[1])
    v._index(ins.args[3])
    if not isinstance(width, Const) or width.elem is not Elem.U32:
        _fail("copy_async needs a constant u32 line width")
    w = int(width.value)
    if w not in (2, 4, 8) or w * elem.nbytes not in (4, 8, 16):
        _fail(f"copy_async moves lines of 2, 4 or 8 elements, 4, 8 or 16 bytes; not {w} {elem}")
    v._out(ins, None)


def _async_wait(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 1)
    n = ins.args[0]
    if not isinstance(n, Const) or n.elem is not Elem.U32 or int(n.value) < 0:
        _fail("async_wait needs a constant u32 count of groups left unfinished")
    v._out(ins, None)


def _line_lane(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    line = _line_of(v, ins.args[0], "the operand of line_lane")
    lane = ins.args[1]
    if not isinstance(lane, Const) or not lane.elem.is_int:
        _fail("line_lane needs a constant integer lane")
    _check_const(lane)
    if not 0 <= int(lane.value) < line.width:
        _fail(f"lane {lane.value} is outside the line '{line.name}' of {line.width} lanes")
    v._out(ins, line.elem)
    _no_line(ins.out, "the result of line_lane")


def _line_build(v: _Verifier, ins: Instr) -> None:
    out = _line_of(v, ins.out, "the result of line_build")
    v._arity(ins, out.width)
    for value in ins.args:
        _no_line(value, "a lane of line_build")
        v._expect(v._scalar(value), {out.elem}, "a lane of line_build")


_FRAGMENT_ELEMS = {
    MatrixRole.A: frozenset({Elem.F16, Elem.BF16, Elem.F32}),
    MatrixRole.B: frozenset({Elem.F16, Elem.BF16, Elem.F32}),
    MatrixRole.ACCUMULATOR: frozenset({Elem.F16, Elem.F32}),
    MatrixRole.WARPGROUP: frozenset({Elem.F32}),
}


def _check_fragment(frag: Fragment) -> None:
    if min(frag.m, frag.n, frag.k) < 1:
        _fail(f"fragment '{frag.name}' has shape {frag.m}x{frag.n}x{frag.k}; each must be >= 1")
    if frag.elem not in _FRAGMENT_ELEMS[frag.role]:
        allowed = ", ".join(sorted(e.value for e in _FRAGMENT_ELEMS[frag.role]))
        _fail(
            f"fragment '{frag.name}' of role {frag.role.value} holds {frag.elem}; it holds "
            f"{allowed}"
        )
    wgmma_shape = frag.m == WARPGROUP_M and frag.k == WARPGROUP_K and frag.n in WARPGROUP_NS
    if frag.role is MatrixRole.WARPGROUP and not wgmma_shape:
        _fail(
            f"warpgroup accumulator '{frag.name}' is 64 x n x 16 (n from 8 to 256 by 8), not "
            f"{frag.m}x{frag.n}x{frag.k}"
        )
    if frag.tf32 and frag.role not in (MatrixRole.A, MatrixRole.B):
        _fail(f"fragment '{frag.name}' is tf32: only an A or B fragment of f32 can be")
    if frag.role in (MatrixRole.A, MatrixRole.B) and frag.layout is None:
        _fail(f"fragment '{frag.name}' of role {frag.role.value} needs a layout")


def _layout(value: object) -> MatrixLayout:
    if not isinstance(value, Const) or value.elem is not Elem.U32:
        _fail(f"the layout must be a constant u32 (MatrixLayout.value), got {value!r}")
    if value.value not in {layout.value for layout in MatrixLayout}:
        _fail(f"{value.value!r} is not a MatrixLayout value")
    return MatrixLayout(value.value)


def _tile_array(v: _Verifier, arr: object, frag: Fragment) -> None:
    if isinstance(arr, LocalArray):
        _fail(f"fragment '{frag.name}' moves from and to global arrays and shared memory only")
    v._expect(v._array(arr), {frag.elem}, f"the array of fragment '{frag.name}' ({frag.elem})")


def _cmma_fill(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    frag = v._fragment(ins.args[0], None, "the filled operand")
    v._expect(v._scalar(ins.args[1]), {frag.elem}, "the fill value")
    v._out(ins, None)


def _cmma_load(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 5)
    frag = v._fragment(ins.args[0], None, "the loaded operand")
    _tile_array(v, ins.args[1], frag)
    v._expect(v._scalar(ins.args[2]), _U32, "the tile offset")
    v._expect(v._scalar(ins.args[3]), _U32, "the tile stride")
    layout = _layout(ins.args[4])
    if frag.role is not MatrixRole.ACCUMULATOR and layout is not frag.layout:
        _fail(f"fragment '{frag.name}' is {frag.layout}; it cannot load a {layout} tile")
    v._out(ins, None)


def _cmma_store(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 5)
    frag = v._fragment(ins.args[2], MatrixRole.ACCUMULATOR, "the stored operand")
    _tile_array(v, ins.args[0], frag)
    v._expect(v._scalar(ins.args[1]), _U32, "the tile offset")
    v._expect(v._scalar(ins.args[3]), _U32, "the tile stride")
    _layout(ins.args[4])
    v._out(ins, None)


def _cmma_execute(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 4)
    roles = (MatrixRole.A, MatrixRole.B, MatrixRole.ACCUMULATOR, MatrixRole.ACCUMULATOR)
    a, b, c, d = (
        v._fragment(x, role, f"operand {name}")
        for x, role, name in zip(ins.args, roles, "abcd", strict=True)
    )
    if len({(f.m, f.n, f.k) for f in (a, b, c, d)}) != 1:
        _fail("the fragments of one execute must have one m, n, k")
    if a.matrix_elem is not b.matrix_elem:
        _fail(f"a is {a.matrix_elem} but b is {b.matrix_elem}; they must be of one type")
    if c.elem is not d.elem:
        _fail(f"c is {c.elem} but d is {d.elem}; they must be of one type")
    v._out(ins, None)


def _cmma_cast(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    dst = v._fragment(ins.args[0], MatrixRole.ACCUMULATOR, "the cast's result")
    src = v._fragment(ins.args[1], MatrixRole.ACCUMULATOR, "the cast's operand")
    if (dst.m, dst.n, dst.k) != (src.m, src.n, src.k):
        _fail(f"cast from '{src.name}' to '{dst.name}' changes the shape")
    v._out(ins, None)


def _wgmma_fill(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 2)
    v._fragment(ins.args[0], MatrixRole.WARPGROUP, "the filled accumulator")
    v._expect(v._scalar(ins.args[1]), {Elem.F32}, "the fill value")
    v._out(ins, None)


def _wgmma_mma(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 6)
    v._fragment(ins.args[0], MatrixRole.WARPGROUP, "the accumulator")
    a, b = ins.args[1], ins.args[3]
    if not isinstance(a, SharedArray) or not isinstance(b, SharedArray):
        _fail(f"wgmma_mma reads its operands from shared arrays, not {a} and {b}")
    v._expect(v._array(a), WARPGROUP_ELEMS, "the A operand's element")
    v._expect(v._array(b), {a.elem}, "the B operand's element (A's)")
    v._expect(v._scalar(ins.args[2]), _U32, "a_at")
    v._expect(v._scalar(ins.args[4]), _U32, "b_at")
    block = ins.args[5]
    if not isinstance(block, Const) or block.elem is not Elem.U32 or int(block.value) % 512:
        _fail(f"wgmma_mma needs a constant u32 block stride, a multiple of 512; got {block}")
    v._out(ins, None)


def _wgmma_wait(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 1)
    n = ins.args[0]
    if not isinstance(n, Const) or n.elem is not Elem.U32 or not 0 <= int(n.value) <= 7:
        _fail(f"wgmma_wait needs a constant u32 count of groups from 0 to 7, got {n}")
    v._out(ins, None)


def _wgmma_store(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, 6)
    v._fragment(ins.args[2], MatrixRole.WARPGROUP, "the stored accumulator")
    v._expect(v._array(ins.args[0], no_local=True), {Elem.F32}, "the stored array")
    for k in (1, 3, 4, 5):
        v._expect(v._scalar(ins.args[k]), _U32, "the offset, stride, rows and cols")
    v._out(ins, None)


def _barrier(v: _Verifier, ins: Instr) -> None:
    v._arity(ins, len(BARRIER_OPERANDS[ins.op]))
    elems = set()  # of the copy's arrays
    for k, (kind, arg) in enumerate(zip(BARRIER_OPERANDS[ins.op], ins.args, strict=True)):
        if kind in ("u32", "dim", "box"):
            v._expect(v._scalar(arg), _U32, f"operand {k} of {ins.op}")
            if kind == "dim" and not (isinstance(arg, Param) and not arg.is_array):
                _fail(f"operand {k} of {ins.op} must be a scalar parameter, not {arg!r}")
            if kind == "box" and not isinstance(arg, Const):
                _fail(f"operand {k} of {ins.op} must be a constant, not {arg!r}")
        elif not isinstance(arg, Param if kind == "global" else SharedArray):
            _fail(f"operand {k} of {ins.op} must be a {kind} array, not {arg!r}")
        elif kind == "barriers" and v._array(arg) is not BARRIER_ELEM:
            _fail(f"the barriers of {ins.op} must be a shared array of {BARRIER_ELEM}, not {arg!r}")
        elif kind != "barriers":
            elems.add(v._array(arg, global_only=kind == "global"))
    if len(elems) > 1:
        _fail(f"{ins.op} copies between arrays of one element type, not {sorted(map(str, elems))}")
    v._out(ins, None)


def _build_rules() -> dict[Op, Rule]:
    rules: dict[Op, Rule] = {
        Op.ASSIGN: _assign,
        Op.CAST: _cast,
        Op.BITCAST: _bitcast,
        Op.SELECT: _select,
        Op.NEG: _same_rule(_NUMERIC, 1, "numbers"),
        Op.ABS: _same_rule(_NUMERIC, 1, "numbers"),
        Op.FMA: _same_rule(_FLOAT, 3, "floats"),
        Op.CLAMP: _same_rule(_NUMERIC, 3, "numbers"),
        Op.AND: _same_rule(_BOOL, 2, "bool"),
        Op.OR: _same_rule(_BOOL, 2, "bool"),
        Op.NOT: _same_rule(_BOOL, 1, "bool"),
        Op.BIT_NOT: _same_rule(_INT, 1, "integers"),
        Op.INDEX: _index_op,
        Op.INDEX_ASSIGN: _index_assign,
        Op.LEN: _metadata(1, tensor_only=False),
        Op.SHAPE: _metadata(2, tensor_only=True),
        Op.STRIDE: _metadata(2, tensor_only=True),
        Op.RANK: _metadata(1, tensor_only=True),
        Op.SYNC_UNITS_COUNT: _same_rule(_BOOL, 1, "bool", Elem.U32),
        Op.SYNC_UNITS_AND: _same_rule(_BOOL, 1, "bool"),
        Op.SYNC_UNITS_OR: _same_rule(_BOOL, 1, "bool"),
        Op.PLANE_ALL: _same_rule(_BOOL, 1, "bool"),
        Op.PLANE_ANY: _same_rule(_BOOL, 1, "bool"),
        Op.PLANE_BALLOT: _same_rule(_BOOL, 1, "bool", Elem.U32),
        Op.PLANE_ELECT: _elect,
        Op.PLANE_BROADCAST: _plane_lane,
        Op.PLANE_SHUFFLE: _plane_lane,
        Op.PLANE_SHUFFLE_UP: _plane_lane,
        Op.PLANE_SHUFFLE_DOWN: _plane_lane,
        Op.PLANE_SHUFFLE_XOR: _plane_lane,
        Op.REPORT_OOB: _report,
        Op.PRINT: _print,
        Op.LOAD_LINE: _load_line,
        Op.STORE_LINE: _store_line,
        Op.LINE_LANE: _line_lane,
        Op.LINE_BUILD: _line_build,
        Op.COPY_ASYNC: _copy_async,
        Op.ASYNC_WAIT: _async_wait,
        Op.CMMA_FILL: _cmma_fill,
        Op.CMMA_LOAD: _cmma_load,
        Op.CMMA_STORE: _cmma_store,
        Op.CMMA_EXECUTE: _cmma_execute,
        Op.CMMA_CAST: _cmma_cast,
        Op.WGMMA_FILL: _wgmma_fill,
        Op.WGMMA_MMA: _wgmma_mma,
        Op.WGMMA_WAIT: _wgmma_wait,
        Op.WGMMA_STORE: _wgmma_store,
    }
    for op in ARITH_BINARY:
        floats_only = op in (Op.DIV, Op.POW)
        rules[op] = _same_rule(
            _FLOAT if floats_only else _NUMERIC, 2, "floats" if floats_only else "numbers"
        )
    for op in FLOAT_UNARY:
        rules[op] = _same_rule(_FLOAT, 1, "floats")
    for op in FLOAT_BINARY:
        rules[op] = _same_rule(_FLOAT, 2, "floats")
    for op in FLOAT_TESTS:
        rules[op] = _same_rule(_FLOAT, 1, "floats", Elem.BOOL)
    for op in COMPARE_OPS:
        rules[op] = _same_rule(_ANY, 2, "any type", Elem.BOOL)
    for op in BITWISE_BINARY | INT_BINARY:
        rules[op] = _same_rule(_INT, 2, "integers")
    for op in INT_UNARY:
        rules[op] = _same_rule(_INT, 1, "integers")
    for op in BIT_COUNTS:
        rules[op] = _same_rule(_INT, 1, "integers", Elem.U32)
    for op in ATOMIC_OPS:
        rules[op] = _atomic
    rules.update(dict.fromkeys(BARRIER_OPS, _barrier) | {Op.BULK_WAIT: _async_wait})
    no_operands = (Op.SYNC_UNITS, Op.SYNC_PLANE, Op.FENCE_UNITS, Op.FENCE_DEVICE, Op.ASYNC_COMMIT)
    rules.update(dict.fromkeys((*no_operands, Op.WGMMA_FENCE, Op.WGMMA_COMMIT), _sync))
    for op in PLANE_OPS - rules.keys():  # the reductions and scans
        rules[op] = _same_rule(_NUMERIC, 1, "numbers")
    return rules


_RULES = _build_rules()
