"""Random well-typed kernels, built directly as IR, for differential fuzzing
(:mod:`.differential`).

:func:`programs` is a Hypothesis strategy of :class:`Program` (a verified kernel, a launch
geometry, its inputs and scalars); :func:`fuzz_elems`, :func:`atomic_elems` and
:meth:`Planes.of` say what a device lets it draw.

Every generated kernel is defined on every device, bit for bit, by construction:

* expressions over the device's numeric types and ``bool``, of locals, constants, the launch's
  positions, cube sizes and cube counts (each axis, and linear), and scalar parameters (launched
  with values like the constants: signed zeros, infinities, NaN, the integer types' extremes;
  some programs launch their kernel a second time with other values): ``+ - *``, ``min max abs
  neg clamp select`` (a float ``min``/``max`` of equal operands gives the first, since the sign
  of the zero it returns for ``-0.0`` and ``0.0`` is unspecified, and a float ``clamp`` that
  gives a zero gives ``0.0``), comparisons, casts, bitwise operations and shifts (any amount:
  the IR takes it modulo the width), integer ``// %`` with a divisor that is never zero,
  ``mul_hi``, saturating ``+ -``, ``reverse_bits`` and the bit counts (``popcount``, leading and
  trailing zeros, ``find_first_set``, as ``u32``), the bits of a float (a NaN counts as
  ``0.0``), ``floor ceil round trunc isnan isinf``, ``fmod remainder`` and ``copysign`` (of a
  sign that is never NaN: the sign of a NaN an operation makes is unspecified) on floats, and
  ``fma`` with an exact product (a power of two or a zero times a value that cannot overflow by
  it), where fused and unfused agree; float constants are values of their type;
* finite floats stay multiples of 1/4 (inputs and constants are; a float product is
  ``x * floor(y)``, a quotient ``x / d`` of a ``d`` among ±1, ±1/2 and ±1/4 picked at run
  time; no transcendental), so no target may flush a subnormal and
  every result is correctly rounded (exact but for bf16's 8 significant bits, where every
  device rounds the f32 result once, to nearest even); float -> int casts go through ``clamp``
  into a range every integer type holds (NaN clamps to the lower bound); int -> float casts
  take the low 11 bits, exact even in f16 (rounded once in bf16);
* control flow: divergent ``if``/``else``, ``for`` and ``loop`` of at most 3 iterations with
  conditional ``break``/``continue``, early ``return`` only after the last barrier;
* reads of an input and of a tensor of a drawn shape (whose shape and strides are among the
  ``u32`` leaves), and reads and writes of a unit's private array (a local array whose
  elements are all written first), at an index of any integer type that may be negative or past
  the end: the bounds checks read a zero there and drop a write; with ``in_bounds``, every
  index is in bounds, as a run under the sanitizer needs (it reports an access past the end);
* lines of 2, 4 or 8 lanes: a line loaded from an input (at a line index that may be past the
  end, so a whole line reads as zeros; with ``in_bounds``, always one of the input's whole
  lines), combined lane by lane with a line built from scalars (``+ - min max``, ``^`` of
  integers, a comparison picking per lane with a scalar broadcast), then one lane kept; and a
  line of some of a unit's results, stored whole at the unit's position;
* in a loop of one to three turns (a scalar), each ending in a barrier: shared memory (of the
  cube's length, or sized at launch by a scalar to that or a little more) written at each
  unit's own slot, a barrier in uniform control flow (plain, or one that counts or reduces a
  ``bool`` over the cube), for 32-bit integers (and the types of the global atomics) maybe an
  atomic update of any slot by every unit (one operation for all, so the order does not
  matter) and a barrier, for integers maybe one unit turning each slot into the sum of those
  before it and a barrier, then a read of another unit's slot; global
  atomics whose final values do not depend on their order (the old values they return are
  discarded): integer ones, wrapping ``u32`` counters among them (each element with one
  constant limit), and ``f32`` sums of values whose sums are exact (within ±64, or infinite or
  NaN) where the device has float atomics;
* where the device has planes (:class:`Planes`, which the reference must run at the device's
  width), plane operations in uniform control flow: integer reductions and scans (a float sum's
  order is unspecified), ``all``/``any``/``ballot`` of a ``bool``, ``elect``, and broadcasts and
  shuffles of any type from lanes in, past and outside the plane; partial planes where the
  device runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from ..ir import (
    ATOMIC_COMBINE,
    BIT_COUNTS,
    LINE_WIDTHS,
    Elem,
    KernelDefinition,
    Local,
    LocalArray,
    Op,
    Operand,
    Param,
    SharedArray,
)
from ..runtime import ComputeClient, Feature
from .irbuild import KernelBuilder, builtin, const
from .runner import run_definition

__all__ = [
    "RESULTS_PER_UNIT",
    "Planes",
    "Program",
    "atomic_elems",
    "fuzz_elems",
    "programs",
]

#: The results of each type a unit stores (its locals of that type).
RESULTS_PER_UNIT = 3
_PRIVATE = 5  # elements of a private array
#: The atomics that combine the old value with another by an operation (add … xor).
_ATOMICS = list(ATOMIC_COMBINE)
#: Wrapping counters of u32 accumulators and the one limit of each: with a single limit per
#: element, a counter's final value depends only on how many updates it received.
_WRAPS = {Op.ATOMIC_INC_WRAP: 5, Op.ATOMIC_DEC_WRAP: 9}
#: The atomics of floats.
_FLOAT_ATOMICS = [Op.ATOMIC_ADD]
_REDUCING_BARRIERS = {
    Op.SYNC_UNITS_COUNT: Elem.U32,
    Op.SYNC_UNITS_AND: Elem.BOOL,
    Op.SYNC_UNITS_OR: Elem.BOOL,
}
#: The plane reductions and scans of integers.
_PLANE_REDUCTIONS = [Op.PLANE_SUM, Op.PLANE_PROD, Op.PLANE_MIN, Op.PLANE_MAX]
_PLANE_REDUCTIONS += [Op.PLANE_INCLUSIVE_SUM, Op.PLANE_EXCLUSIVE_SUM]
#: The plane operations that move a value of any type between lanes.
_PLANE_MOVES = [Op.PLANE_BROADCAST, Op.PLANE_SHUFFLE, Op.PLANE_SHUFFLE_UP, Op.PLANE_SHUFFLE_DOWN]
_PLANE_MOVES += [Op.PLANE_SHUFFLE_XOR]
#: The position builtins among the leaves (the plane's are left out: the reference may run
#: at another plane width).
_POSITIONS = [
    f"{name}{axis}"
    for name in ("UNIT_POS", "RUDA_POS", "ABSOLUTE_POS", "RUDA_DIM", "RUDA_COUNT")
    for axis in ("", "_X", "_Y", "_Z")
]
#: The factors of an ``fma``'s exact products.
_FMA_SCALES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 4.0]
_DIVISORS = [1.0, -1.0, 0.5, -0.5, 0.25, -0.25]  # exact quotients, multiples of 1/4 still
_FLOAT_LEAVES = [
    0.0,
    -0.0,
    0.25,
    -0.5,
    1.0,
    -1.0,
    2.0,
    3.0,
    -7.0,
    64.0,
    1e4,
    np.inf,
    -np.inf,
    np.nan,
]


def fuzz_elems(client: ComputeClient, reference: ComputeClient) -> list[Elem]:
    """Numeric element types both devices support."""
    ok = [e for e in Elem if e.is_numeric]
    return [e for e in ok if client.features().supports(e) and reference.features().supports(e)]


@dataclass(frozen=True)
class Planes:
    """The plane operations a device runs: its plane ``width``, whether it has shuffles and
    broadcasts (``Feature.PLANE_SHUFFLE``), planes cut short by the cube's end
    (``Feature.PARTIAL_PLANE``) and planes across the rows of a cube
    (``Feature.PLANES_ACROSS_ROWS``)."""

    width: int
    shuffles: bool
    partial: bool
    across_rows: bool

    @staticmethod
    def of(client: ComputeClient) -> Planes | None:
        """The plane operations of ``client``'s device; None where it has no planes."""
        features = client.features()
        if not features.has(Feature.PLANE):
            return None
        width = client.properties().plane_dim
        flags = (Feature.PLANE_SHUFFLE, Feature.PARTIAL_PLANE, Feature.PLANES_ACROSS_ROWS)
        return Planes(width, *(features.has(f) for f in flags))


@dataclass(frozen=True, eq=False)
class Program:
    """A generated kernel with its launch. ``inputs`` holds one array per array parameter,
    ``scalars`` one value per scalar parameter, and ``relaunch`` those of a second launch of
    the same kernel (None: launched once)."""

    definition: KernelDefinition
    count: tuple[int, int, int]
    dim: tuple[int, int, int]
    inputs: tuple[np.ndarray, ...]
    #: Array parameters compared after the launch (the outputs and atomic accumulators).
    outputs: tuple[int, ...] = field(default=())
    scalars: tuple[bool | int | float, ...] = field(default=())
    #: Whether every access stays in bounds (so the program may run unchecked).
    in_bounds: bool = False
    relaunch: tuple[bool | int | float, ...] | None = None

    def run(
        self,
        client: ComputeClient,
        unchecked: bool = False,
        scalars: Sequence[bool | int | float] | None = None,
    ) -> list[np.ndarray]:
        """Every array after a launch on ``client`` with ``scalars`` (else :attr:`scalars`):
        Checked, or ``launch_unchecked`` (see :func:`~ruda_core.testing.runner.run_definition`)."""
        return run_definition(
            client,
            self.definition,
            self.inputs,
            self.scalars if scalars is None else scalars,
            count=self.count,
            dim=self.dim,
            unchecked=unchecked,
        )

    def __repr__(self) -> str:
        defn = self.definition
        return "\n".join(
            [
                f"Program(count={self.count}, dim={self.dim})\n{defn.dump()}",
                *(
                    f"  input {p.name} = {a.tolist()!r}"
                    for p, a in zip(defn.array_params, self.inputs, strict=True)
                ),
                *(
                    f"  scalar {p.name} = {v!r}"
                    for p, v in zip(defn.scalar_params, self.scalars, strict=True)
                ),
                *(
                    f"  relaunched with {p.name} = {v!r}"
                    for p, v in zip(defn.scalar_params, self.relaunch or (), strict=False)
                ),
            ]
        )


class _Gen:
    """Builds one kernel from Hypothesis draws."""

    def __init__(
        self, draw: st.DrawFn, elems: list[Elem], atomics: list[Elem], elements: int | None
    ) -> None:
        self.draw = draw
        self.elems = elems
        #: the inputs' length when accesses must stay in bounds, else None
        self.elements = elements
        self.line_widths = [w for w in LINE_WIDTHS if elements is None or elements >= w]
        self.k = KernelBuilder("fuzz")
        self.inputs = {e: self.k.array(f"in_{e}", e, read_only=True) for e in elems}
        #: maybe an input tensor of one of the types, of a drawn shape: read like the inputs,
        #: its shape and strides among the u32 leaves
        self.tensor: Param | None = None
        self.tensor_shape: tuple[int, ...] = ()
        if draw(st.booleans()):
            self.tensor_shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
            elem = draw(st.sampled_from(elems))
            self.tensor = self.k.tensor(f"t_{elem}", elem, len(self.tensor_shape), read_only=True)
        self.outs = {e: self.k.array(f"out_{e}", e) for e in elems}
        self.accs = {e: self.k.array(f"acc_{e}", e) for e in atomics}
        #: a unit's private array of some element types (made with the kernel's locals)
        self.private: dict[Elem, LocalArray] = {}
        #: scalar parameters of some element types, with the values they are launched with
        scalar_elems = draw(st.lists(st.sampled_from([*elems, Elem.BOOL]), max_size=2, unique=True))
        self.scalars = {e: self.k.scalar(f"s_{e}", e) for e in scalar_elems}
        self.scalar_values = [self.value(e) for e in scalar_elems]
        #: those of a second launch
        self.relaunch_values = [self.value(e) for e in scalar_elems]
        #: assignable locals per element; loop variables are readable only (``readable``)
        self.pool: dict[Elem, list[Local]] = {e: [] for e in [*elems, Elem.BOOL]}
        self.loop_vars: list[Local] = []
        self.loops = 0
        self.may_return = False
        self.budget = draw(st.integers(1, 10))
        #: the width of the line of results each unit stores last, 0 for none
        self.stored_line = 0
        self.counter = 0

    # -- expressions --------------------------------------------------------------------------
    def expr(self, elem: Elem, depth: int) -> Operand:
        k = self.k
        if depth <= 0 or self.draw(st.integers(0, 3)) == 0:
            return self.leaf(elem)
        if elem is Elem.BOOL:
            return self.bool_expr(depth)
        kinds = ["unary", "binary", "binary", "select", "clamp", "cast"]
        kinds += ["count"] * (elem is Elem.U32) + ["fma"] * elem.is_float
        kind = self.draw(st.sampled_from(kinds))
        if kind == "unary":
            ops = [Op.NEG, Op.ABS]
            ops += (
                [Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC]
                if elem.is_float
                else [Op.BIT_NOT, Op.REVERSE_BITS]
            )
            return k.let(self.draw(st.sampled_from(ops)), elem, self.expr(elem, depth - 1))
        if kind == "count":  # of the bits of any integer type
            source = self.draw(st.sampled_from([e for e in self.elems if e.is_int]))
            op = self.draw(st.sampled_from(sorted(BIT_COUNTS, key=lambda op: op.value)))
            return k.let(op, elem, self.expr(source, depth - 1))
        if kind == "binary":
            ops = [Op.ADD, Op.SUB, Op.MUL, Op.MIN, Op.MAX]
            if elem.is_int:
                ops += [Op.FLOOR_DIV, Op.MOD, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.SHL, Op.SHR]
                ops += [Op.MUL_HI, Op.SATURATING_ADD, Op.SATURATING_SUB]
            else:
                ops += [Op.COPYSIGN, Op.FMOD, Op.REMAINDER, Op.DIV]  # exactly defined, like + - *
            op = self.draw(st.sampled_from(ops))
            a, b = self.expr(elem, depth - 1), self.expr(elem, depth - 1)
            if op in (Op.FLOOR_DIV, Op.MOD):
                zero = k.let(Op.EQ, Elem.BOOL, b, const(0, elem))
                b = k.let(Op.SELECT, elem, zero, const(1, elem), b)  # never zero
            if op is Op.MUL and elem.is_float:
                b = k.let(Op.FLOOR, elem, b)  # keeps floats multiples of 1/4
            if op is Op.DIV:
                pair = self.draw(st.lists(st.sampled_from(_DIVISORS), min_size=2, max_size=2))
                b = k.let(
                    Op.SELECT, elem, self.bool_expr(depth - 1), *(const(d, elem) for d in pair)
                )
            if op is Op.COPYSIGN:  # the sign of a NaN an operation makes is unspecified
                nan = k.let(Op.ISNAN, Elem.BOOL, b)
                b = k.let(Op.SELECT, elem, nan, const(0.0, elem), b)
            if op in (Op.MIN, Op.MAX) and elem.is_float:
                return self.extremum(op, elem, a, b)
            return k.let(op, elem, a, b)
        if kind == "fma":
            return self.fma(elem, depth - 1)
        if kind == "select":
            cond = self.bool_expr(depth - 1)
            return k.let(
                Op.SELECT, elem, cond, self.expr(elem, depth - 1), self.expr(elem, depth - 1)
            )
        if kind == "clamp":
            args = [self.expr(elem, depth - 1) for _ in range(3)]
            clamped = k.let(Op.CLAMP, elem, *args)
            if not elem.is_float:
                return clamped
            zero = k.let(Op.EQ, Elem.BOOL, clamped, const(0.0, elem))
            return k.let(Op.SELECT, elem, zero, const(0.0, elem), clamped)
        return self.cast_to(elem, depth - 1)

    def fma(self, elem: Elem, depth: int) -> Local:
        """``fma(a, b, c)`` whose product is exact, so fused and unfused agree: ``b`` is one of
        two powers of two (or zeros), picked at run time; ``a`` stays within ±1024 where ``b``
        may scale it, so the product cannot overflow."""
        k = self.k
        scales = self.draw(st.lists(st.sampled_from(_FMA_SCALES), min_size=2, max_size=2))
        a, c = self.expr(elem, depth), self.expr(elem, depth)
        if max(map(abs, scales)) > 1:
            a = k.let(Op.CLAMP, elem, a, const(-1024.0, elem), const(1024.0, elem))
        b = k.let(Op.SELECT, elem, self.bool_expr(depth), *(const(s, elem) for s in scales))
        return k.let(Op.FMA, elem, a, b, c)

    def extremum(self, op: Op, elem: Elem, a: Operand, b: Operand, width: int = 1) -> Local:
        """The float ``min``/``max`` of ``a`` and ``b``, ``a`` where they are equal: one zero of
        each sign gives either on a device."""
        k = self.k
        equal = k.let(Op.EQ, Elem.BOOL, a, b, width=width)
        return k.let(Op.SELECT, elem, equal, a, k.let(op, elem, a, b, width=width), width=width)

    def cast_to(self, elem: Elem, depth: int) -> Operand:
        k = self.k
        source = self.draw(st.sampled_from([*self.elems, Elem.BOOL]))
        x = self.expr(source, depth)
        if source.is_float and source.bits == elem.bits and self.draw(st.booleans()):
            # the bits, signed zeros included; a NaN an operation makes has unspecified bits
            nan = k.let(Op.ISNAN, Elem.BOOL, x)
            return k.let(Op.BITCAST, elem, k.let(Op.SELECT, source, nan, const(0.0, source), x))
        if source.is_float and elem.is_int:
            lo, hi = (0.0, 100.0) if not elem.is_signed else (-100.0, 100.0)
            x = k.let(Op.CLAMP, source, x, const(lo, source), const(hi, source))
        elif source.is_int and elem.is_float:
            low_bits = min(0x7FF, int(np.iinfo(source.numpy).max))  # exact in every float
            x = k.let(Op.BIT_AND, source, x, const(low_bits, source))
        return k.let(Op.CAST, elem, x)

    def bool_expr(self, depth: int) -> Operand:
        k = self.k
        kind = self.draw(st.sampled_from(["compare", "compare", "logic", "predicate", "leaf"]))
        if depth <= 0 or kind == "leaf":
            return self.leaf(Elem.BOOL)
        if kind == "compare":
            elem = self.draw(st.sampled_from(self.elems))
            op = self.draw(st.sampled_from([Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE]))
            return k.let(op, Elem.BOOL, self.expr(elem, depth - 1), self.expr(elem, depth - 1))
        if kind == "logic":
            op = self.draw(st.sampled_from([Op.AND, Op.OR, Op.NOT]))
            args = [self.bool_expr(depth - 1) for _ in range(1 if op is Op.NOT else 2)]
            return k.let(op, Elem.BOOL, *args)
        floats = [e for e in self.elems if e.is_float]
        if not floats:
            return self.leaf(Elem.BOOL)
        elem = self.draw(st.sampled_from(floats))
        op = self.draw(st.sampled_from([Op.ISNAN, Op.ISINF, Op.ISFINITE]))
        return k.let(op, Elem.BOOL, self.expr(elem, depth - 1))

    def readable(self, elem: Elem) -> list[Operand]:
        """The locals, loop variables and scalar parameters an expression may read."""
        scalar = [self.scalars[elem]] if elem in self.scalars else []
        return [*self.pool[elem], *(self.loop_vars if elem is Elem.U32 else []), *scalar]

    def leaf(self, elem: Elem) -> Operand:
        choices = ["const", "builtin"] + ["var"] * 3 * bool(self.readable(elem))
        kind = self.draw(st.sampled_from(choices))
        if kind == "var":
            return self.draw(st.sampled_from(self.readable(elem)))
        if kind == "builtin" and elem is Elem.U32 and self.tensor and self.draw(st.booleans()):
            axis = const(self.draw(st.integers(0, self.tensor.rank - 1)), Elem.U32)
            op = self.draw(st.sampled_from([Op.SHAPE, Op.STRIDE]))
            return self.k.let(op, Elem.U32, self.tensor, axis)
        if kind == "builtin" and elem is not Elem.BOOL:
            name = self.draw(st.sampled_from(_POSITIONS))
            value: Operand = builtin(name)
            if elem is not Elem.U32:
                value = self.k.let(
                    Op.CAST, elem, self.k.let(Op.BIT_AND, Elem.U32, value, const(0x7FF, Elem.U32))
                )
            return value
        return self.constant(elem)

    def constant(self, elem: Elem) -> Operand:
        return const(self.value(elem), elem)

    def value(self, elem: Elem) -> bool | int | float:
        """A value of ``elem``: a float multiple of 1/4 (or a signed zero, an infinity, NaN),
        an integer at an edge of its type or anywhere in it."""
        if elem is Elem.BOOL:
            return self.draw(st.booleans())
        if elem.is_float:
            return float(self.draw(st.sampled_from(_FLOAT_LEAVES)))
        info = np.iinfo(elem.numpy)
        edges = [0, 1, 2, 3, 7, 31, 64, int(info.max), int(info.min)]
        edges += [-1, -2, -100] if elem.is_signed else []
        return self.draw(
            st.one_of(st.sampled_from(edges), st.integers(int(info.min), int(info.max)))
        )

    # -- statements ---------------------------------------------------------------------------
    def block(self, depth: int) -> None:
        for _ in range(self.draw(st.integers(1, 3))):
            if self.budget <= 0:
                return
            self.budget -= 1
            self.statement(depth)

    def statement(self, depth: int) -> None:
        k = self.k
        kinds = ["assign", "assign", "assign", "array", "line" if self.line_widths else "assign"]
        if depth > 0:
            kinds += ["if", "for", "loop"]
        if self.loops:
            kinds += ["break", "continue"]
        if self.may_return:
            kinds.append("return")
        if self.accs:
            kinds.append("atomic")
        kind = self.draw(st.sampled_from(kinds))
        if kind == "assign":
            elem = self.draw(st.sampled_from([*self.elems, Elem.BOOL]))
            var = self.draw(st.sampled_from(self.pool[elem]))
            k.assign(var, self.expr(elem, 3))
        elif kind == "array":
            self.array_statement()
        elif kind == "line":
            self.line_statement()
        elif kind == "if":
            with k.if_(self.bool_expr(2)):
                self.block(depth - 1)
            if self.draw(st.booleans()):
                with k.else_():
                    self.block(depth - 1)
        elif kind == "for":
            self.counter += 1
            var = k.local(f"k{self.counter}", Elem.U32)
            end = k.let(Op.BIT_AND, Elem.U32, self.expr(Elem.U32, 1), const(3, Elem.U32))
            self.loops += 1
            self.loop_vars.append(var)
            with k.range_(var, const(0, Elem.U32), end):
                self.block(depth - 1)
            self.loop_vars.remove(var)
            self.loops -= 1
        elif kind == "loop":
            self.counter += 1
            trips = k.local(f"trips{self.counter}", Elem.U32)
            k.assign(trips, const(0, Elem.U32))
            limit = self.draw(st.integers(0, 3))
            self.loops += 1
            with k.loop():
                with k.if_(k.let(Op.GE, Elem.BOOL, trips, const(limit, Elem.U32))):
                    k.break_()
                k.assign(trips, k.let(Op.ADD, Elem.U32, trips, const(1, Elem.U32)))
                self.block(depth - 1)
            self.loops -= 1
        elif kind in ("break", "continue", "return"):
            with k.if_(self.bool_expr(2)):
                {"break": k.break_, "continue": k.continue_, "return": k.return_}[kind]()
        else:
            elem = self.draw(st.sampled_from(sorted(self.accs, key=lambda e: e.value)))
            ops = _atomics_of(elem)
            slot = self.draw(st.integers(0, len(ops) - 1))
            # each operation has its own two elements: different operations do not commute
            low = k.let(Op.BIT_AND, Elem.U32, self.expr(Elem.U32, 1), const(1, Elem.U32))
            index = k.let(Op.BIT_OR, Elem.U32, low, const(2 * slot, Elem.U32))
            op = ops[slot]
            value = const(_WRAPS[op], elem) if op in _WRAPS else self.addend(elem)
            k.do(op, None, self.accs[elem], index, value)

    def array_statement(self) -> None:
        """A read of an input or of a private array into a local, or a write of a private
        array, at an index that may be out of bounds (:meth:`index`)."""
        k, draw = self.k, self.draw
        elem = draw(st.sampled_from(self.elems))
        arrays: list[Param | LocalArray] = [self.inputs[elem]]
        arrays += [self.private[elem]] if elem in self.private else []
        arrays += [self.tensor] if self.tensor and self.tensor.elem is elem else []
        arr = draw(st.sampled_from(arrays))
        index = self.index(arr)
        if isinstance(arr, LocalArray) and draw(st.booleans()):
            k.store(arr, index, self.expr(elem, 2))
        else:
            k.assign(draw(st.sampled_from(self.pool[elem])), k.load(arr, index))

    def index(self, arr: Param | LocalArray) -> Operand:
        """An index into ``arr``: a few elements past this unit's position in an input (past
        the start of a private array or the tensor), maybe cast to another integer type, or
        any value of any integer type; in bounds where accesses must be."""
        k = self.k
        small = k.let(Op.BIT_AND, Elem.U32, self.expr(Elem.U32, 1), const(7, Elem.U32))
        length: Operand = (
            const(arr.length, Elem.U32)
            if isinstance(arr, LocalArray)
            else k.let(Op.LEN, Elem.U32, arr)
        )
        near: Operand = small
        if arr is self.inputs[arr.elem]:
            near = k.let(Op.ADD, Elem.U32, builtin("ABSOLUTE_POS"), small)
        if self.elements is not None:
            return k.let(Op.MOD, Elem.U32, near, length)
        source = self.draw(st.sampled_from([e for e in self.elems if e.is_int]))
        if self.draw(st.booleans()):
            return self.expr(source, 1)
        return near if source is Elem.U32 else k.let(Op.CAST, source, near)

    def addend(self, elem: Elem) -> Operand:
        """A value an atomic updates with: any integer; a float within ±64 (sums of multiples
        of 1/4 as small are exact, so their order does not matter), or infinite, or NaN."""
        x = self.expr(elem, 2)
        if elem.is_int:
            return x
        k = self.k
        bounded = k.let(Op.CLAMP, elem, x, const(-64.0, elem), const(64.0, elem))
        return k.let(Op.SELECT, elem, k.let(Op.ISFINITE, Elem.BOOL, x), bounded, x)

    def line_statement(self) -> None:
        """A lane of a lane-wise combination of a loaded and a built line, into a local."""
        k, draw = self.k, self.draw
        elem = draw(st.sampled_from(self.elems))
        width = draw(st.sampled_from(self.line_widths))
        at = k.let(Op.BIT_AND, Elem.U32, self.expr(Elem.U32, 1), const(3, Elem.U32))
        if self.elements is not None:
            at = k.let(Op.MOD, Elem.U32, at, const(self.elements // width, Elem.U32))
        loaded = k.let(Op.LOAD_LINE, elem, self.inputs[elem], at, width=width)
        lanes = [self.expr(elem, 1) for _ in range(width)]
        built = k.let(Op.LINE_BUILD, elem, *lanes, width=width)
        ops = [Op.ADD, Op.SUB, Op.MIN, Op.MAX] + [Op.BIT_XOR] * elem.is_int
        op = draw(st.sampled_from(ops))
        if op in (Op.MIN, Op.MAX) and elem.is_float:
            value = self.extremum(op, elem, loaded, built, width)
        else:
            value = k.let(op, elem, loaded, built, width=width)
        if draw(st.booleans()):
            test = k.let(
                draw(st.sampled_from([Op.LT, Op.EQ])), Elem.BOOL, loaded, built, width=width
            )
            value = k.let(Op.SELECT, elem, test, value, self.expr(elem, 1), width=width)
        lane = const(draw(st.integers(0, width - 1)), Elem.U32)
        k.assign(draw(st.sampled_from(self.pool[elem])), k.let(Op.LINE_LANE, elem, value, lane))

    # -- the kernel ---------------------------------------------------------------------------
    def build(
        self, shared: bool, units_per_cube: int, planes: Planes | None = None
    ) -> KernelDefinition:
        k = self.k
        i = k.local("i", Elem.U32)
        k.assign(i, builtin("ABSOLUTE_POS"))
        n = k.let(Op.LEN, Elem.U32, self.inputs[self.elems[0]])
        for elem in [*self.elems, Elem.BOOL]:
            for j in range(RESULTS_PER_UNIT):
                var = k.local(f"v_{elem}_{j}", elem)
                self.pool[elem].append(var)
                if elem is Elem.BOOL:
                    k.assign(var, self.constant(elem))
                    continue
                at = k.let(Op.MOD, Elem.U32, k.let(Op.ADD, Elem.U32, i, const(j * 7, Elem.U32)), n)
                k.assign(var, k.load(self.inputs[elem], at))
        for elem in self.draw(st.lists(st.sampled_from(self.elems), max_size=2, unique=True)):
            private = k.local_array(f"p_{elem}", elem, _PRIVATE)
            for j in range(_PRIVATE):
                k.store(private, const(j, Elem.U32), self.expr(elem, 1))
            self.private[elem] = private
        self.block(2)
        if shared:  # 1 to 3 turns, a scalar, of a loop that its barriers cut into regions
            turn, turns = k.local("turn", Elem.U32), k.scalar("turns", Elem.U32)
            self.scalar_values.append(self.draw(st.integers(1, 3)))
            self.relaunch_values.append(self.draw(st.integers(1, 3)))
            with k.range_(turn, const(0, Elem.U32), turns):
                self.shared_phase(units_per_cube)
                k.sync_units()  # the next turn's stores after this turn's loads
        if planes is not None:
            self.plane_phase(planes)
        self.may_return = True
        self.block(2)
        for elem in self.elems:
            for j, var in enumerate(self.pool[elem]):
                at = k.let(
                    Op.ADD,
                    Elem.U32,
                    k.let(Op.MUL, Elem.U32, i, const(RESULTS_PER_UNIT, Elem.U32)),
                    const(j, Elem.U32),
                )
                k.store(self.outs[elem], at, var)
        if self.draw(st.booleans()) and self.line_widths:  # results stored as one line
            elem = self.draw(st.sampled_from(self.elems))
            self.stored_line = self.draw(st.sampled_from(self.line_widths))
            lanes = [self.draw(st.sampled_from(self.pool[elem])) for _ in range(self.stored_line)]
            line = k.let(Op.LINE_BUILD, elem, *lanes, width=self.stored_line)
            k.do(Op.STORE_LINE, None, k.array(f"lines_{elem}", elem), i, line)
        return k.build()

    def shared_phase(self, units: int) -> None:
        k = self.k
        elem = self.draw(st.sampled_from(self.elems))
        length: int | Param = units
        if self.draw(st.booleans()):  # sized at launch, maybe longer than the cube
            length = k.scalar("tile_length", Elem.U32)
            self.scalar_values.append(units + self.draw(st.integers(0, 3)))
            self.relaunch_values.append(units + self.draw(st.integers(0, 3)))
        smem: SharedArray = k.shared("tile", elem, length)
        unit = builtin("UNIT_POS")
        k.store(smem, unit, self.expr(elem, 2))
        barrier = self.draw(st.sampled_from([Op.SYNC_UNITS, *_REDUCING_BARRIERS]))
        if barrier is Op.SYNC_UNITS:
            k.sync_units()
        else:
            result = _REDUCING_BARRIERS[barrier]
            reduced = k.let(barrier, result, self.bool_expr(2))
            k.assign(self.draw(st.sampled_from(self.pool[result])), reduced)
        if (elem in (Elem.I32, Elem.U32) or elem in self.accs) and self.draw(st.booleans()):
            # every unit updates a slot by one operation (so the order does not matter)
            op = self.draw(st.sampled_from(_ATOMICS if elem.is_int else _FLOAT_ATOMICS))
            slot = k.let(Op.MOD, Elem.U32, self.expr(Elem.U32, 1), const(units, Elem.U32))
            k.do(op, None, smem, slot, self.addend(elem))
            k.sync_units()
        if elem.is_int and self.draw(st.booleans()):  # one unit: each slot the sum before it
            self.counter += 1
            total, p = k.local(f"sum{self.counter}", elem), k.local(f"p{self.counter}", Elem.U32)
            first = k.let(Op.EQ, Elem.BOOL, unit, const(0, Elem.U32))
            with k.if_(first), k.range_(p, const(0, Elem.U32), const(units, Elem.U32)):
                value = k.load(smem, p)
                k.store(smem, p, total)
                k.assign(total, k.let(Op.ADD, elem, total, value))
            k.sync_units()
        shift = self.draw(st.integers(0, max(units - 1, 0)))
        at = k.let(
            Op.MOD,
            Elem.U32,
            k.let(Op.ADD, Elem.U32, unit, const(shift, Elem.U32)),
            const(units, Elem.U32),
        )
        var = self.draw(st.sampled_from(self.pool[elem]))
        k.assign(var, k.load(smem, at))

    def plane_phase(self, planes: Planes) -> None:
        """One or two plane operations, reached by every unit, into locals."""
        k, draw = self.k, self.draw
        for _ in range(draw(st.integers(1, 2))):
            kinds = ["move"] * 2 * planes.shuffles + ["reduce", "reduce", "bool", "elect"]
            kind = draw(st.sampled_from(kinds))
            if kind == "elect":
                result = k.let(Op.PLANE_ELECT, Elem.BOOL)
            elif kind == "bool":
                op = draw(st.sampled_from([Op.PLANE_ALL, Op.PLANE_ANY, Op.PLANE_BALLOT]))
                out = Elem.U32 if op is Op.PLANE_BALLOT else Elem.BOOL
                result = k.let(op, out, self.bool_expr(2))
            elif kind == "reduce" and any(e.is_int for e in self.elems):
                elem = draw(st.sampled_from([e for e in self.elems if e.is_int]))
                result = k.let(draw(st.sampled_from(_PLANE_REDUCTIONS)), elem, self.expr(elem, 2))
            else:
                elem = draw(st.sampled_from([*self.elems, Elem.BOOL]))
                op = draw(st.sampled_from(_PLANE_MOVES))
                if op is Op.PLANE_SHUFFLE:  # per unit: lanes in and past the plane
                    lanes = const(2 * planes.width - 1, Elem.U32)
                    lane: Operand = k.let(Op.BIT_AND, Elem.U32, self.expr(Elem.U32, 1), lanes)
                else:  # uniform: a lane, delta or mask up to the plane's width and beyond
                    lane = const(draw(st.integers(0, planes.width + 1)), Elem.U32)
                result = k.let(op, elem, self.expr(elem, 2), lane)
            k.assign(draw(st.sampled_from(self.pool[result.elem])), result)


def _atomics_of(elem: Elem) -> list[Op]:
    """The atomics of an accumulator of ``elem``, two elements each, in slot order."""
    if elem.is_float:
        return _FLOAT_ATOMICS
    return [*_ATOMICS, *_WRAPS] if elem is Elem.U32 else _ATOMICS


def _accumulators(elem: Elem) -> np.ndarray:
    """The initial elements of an accumulator of ``elem``: each atomic's identity."""
    if elem.is_float:
        return np.zeros(2 * len(_FLOAT_ATOMICS), elem.numpy)
    info = np.iinfo(elem.numpy)
    ones = -1 if elem.is_signed else int(info.max)
    start = {Op.ATOMIC_MIN: int(info.max), Op.ATOMIC_MAX: int(info.min), Op.ATOMIC_AND: ones}
    return np.array([start.get(op, 0) for op in _atomics_of(elem) for _ in range(2)], elem.numpy)


def _input(draw: st.DrawFn, elem: Elem, n: int) -> np.ndarray:
    if elem.is_float:
        values = draw(
            st.lists(
                st.sampled_from([*_FLOAT_LEAVES, 0.5, 5.0, -3.25, 100.0]), min_size=n, max_size=n
            )
        )
        return np.array(values, dtype=elem.numpy)
    info = np.iinfo(elem.numpy)
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).integers(int(info.min), int(info.max), n, elem.numpy, True)


@st.composite
def programs(
    draw: st.DrawFn,
    elems: Sequence[Elem],
    atomic_elems: Sequence[Elem] = (),
    max_units: int = 1024,
    in_bounds: bool = False,
    planes: Planes | None = None,
) -> Program:
    """Random :class:`Program` over ``elems`` (numeric element types; u32 is always used),
    with global atomics on ``atomic_elems`` (32/64-bit integers, f32) and cubes of at most
    ``max_units`` units. With ``in_bounds``, every access is in bounds and every line load
    reads one of its input's whole lines (the sanitizer reports an access past the end, which
    the bounds checks read as zeros or drop).
    With ``planes``, some programs have plane operations of those widths; their results are
    the reference's only where it runs at that plane width."""
    drawn = draw(st.lists(st.sampled_from(list(elems)), max_size=2, unique=True))
    atomics = (
        draw(st.lists(st.sampled_from(list(atomic_elems)), max_size=1)) if atomic_elems else []
    )
    chosen = sorted({Elem.U32, *drawn, *atomics}, key=lambda e: e.value)  # u32 indexes all
    count, dim = _geometry(draw, max_units)
    units_per_cube = int(np.prod(dim))
    total = int(np.prod(count)) * units_per_cube
    gen = _Gen(draw, chosen, atomics, total if in_bounds else None)
    shared = draw(st.booleans())
    if planes is not None and (
        (units_per_cube % planes.width and not planes.partial)
        or (units_per_cube > dim[0] and dim[0] % planes.width and not planes.across_rows)
    ):
        planes = None  # a partial plane, or planes within rows that are not whole planes
    defn = gen.build(shared, units_per_cube, planes if planes and draw(st.booleans()) else None)
    arrays: list[np.ndarray] = []
    outputs = []
    for k, p in enumerate(defn.array_params):
        if p.name.startswith("in_"):
            arrays.append(_input(draw, p.elem, total))
        elif p.name.startswith("t_"):
            shape = gen.tensor_shape
            arrays.append(_input(draw, p.elem, int(np.prod(shape))).reshape(shape))
        elif p.name.startswith(("out_", "lines_")):
            per_unit = RESULTS_PER_UNIT if p.name.startswith("out_") else gen.stored_line
            arrays.append(np.full(total * per_unit, 7, dtype=p.elem.numpy))
            outputs.append(k)
        else:
            arrays.append(_accumulators(p.elem))
            outputs.append(k)
    scalars = tuple(gen.scalar_values)
    again = draw(st.booleans())
    relaunch = tuple(gen.relaunch_values) if scalars and again else None
    return Program(defn, count, dim, tuple(arrays), tuple(outputs), scalars, in_bounds, relaunch)


def _geometry(draw: st.DrawFn, max_units: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """A launch's cube count and cube size, drawn axis by axis: cubes of up to 64 units (odd
    sizes and one unit too), 128 units in all."""
    dim: list[int] = []
    for extents in ([1, 2, 3, 5, 8, 16, 32, 64], [1, 2, 3, 4, 8], [1, 2, 4]):
        room = min(max_units, 64) // int(np.prod(dim))
        dim.append(draw(st.sampled_from([e for e in extents if e <= room])))
    count: list[int] = []
    for _ in range(3):
        room = 128 // int(np.prod(dim)) // int(np.prod(count))
        count.append(draw(st.integers(1, max(1, min(3, room)))))
    return (count[0], count[1], count[2]), (dim[0], dim[1], dim[2])


def atomic_elems(client: ComputeClient, elems: Sequence[Elem]) -> list[Elem]:
    """The types the fuzzer may use atomics on for ``client``: 32-bit integers, 64-bit ones
    and ``f32`` where it has their atomics."""
    features = client.features()
    wide, floats = features.has(Feature.ATOMIC_INT64), features.has(Feature.ATOMIC_FLOAT)
    return [
        e
        for e in elems
        if e in (Elem.I32, Elem.U32)
        or (e.bits == 64 and e.is_int and wide)
        or (e is Elem.F32 and floats)
    ]
