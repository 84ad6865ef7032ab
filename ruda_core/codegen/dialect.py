"""The :class:`Dialect` contract: everything that differs between C-family targets.

The :class:`~ruda_core.codegen.cfamily.CFamilyEmitter` writes one C program for every target and
asks its dialect for each target-specific piece: type names, qualifiers, literals, builtins,
barriers, atomics, plane (warp / subgroup) primitives and the conversions of narrow floats. The
defaults are plain C99 (``<stdint.h>`` types, ``<math.h>`` functions); a default that C99 cannot
express raises :class:`~ruda_core.errors.UnsupportedFeature`, like CubeCL's default trait
methods. A dialect is an immutable description of one target with its capabilities; it never
imports a driver and holds no per-kernel state. The syntax hooks (conversions, ``select``,
comparisons, declarations, helper definitions) let a target whose syntax is not C's, WGSL,
reuse the expression and plane lowering with its own emitter.

Templates returned by the atomic, plane and reducing-barrier hooks are ``str.format`` strings
over the fields ``{ptr}`` (element address), ``{v}`` (value), ``{cmp}`` (compared value) and
``{lane}``.
"""

from __future__ import annotations

import enum
import math
from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from ..errors import UnsupportedFeature
from ..ir import (
    DYNAMIC_SHARED_ALIGN,
    SWIZZLE_ALIGN_NBYTES,
    Elem,
    Fragment,
    Instr,
    KernelDefinition,
    MatrixLayout,
    Op,
    SharedArray,
    walk,
)
from .names import C99_KEYWORDS, MATH_NAMES

__all__ = [
    "BITS_ELEM",
    "BUFFERED_SHARED_ALIGN",
    "OPERATORS",
    "Dialect",
    "MemSpace",
    "Usage",
    "buffered_align_nbytes",
    "swizzled_arrays",
]


class MemSpace(enum.Enum):
    """Where an array lives."""

    GLOBAL = "global"  #: a buffer parameter
    SHARED = "shared"  #: one array per cube
    LOCAL = "local"  #: one array per unit


#: Each static shared array placed in the dynamic buffer starts at a multiple of this many bytes
#: (the widest alignment a tile or line access needs, see :meth:`Dialect.buffered_shared_nbytes`).
BUFFERED_SHARED_ALIGN = 32
#: The unsigned integer of each element size: the bit pattern type of atomics and bit casts.
BITS_ELEM = {1: Elem.U8, 2: Elem.U16, 4: Elem.U32, 8: Elem.U64}
#: The infix operator of each operation one computes (C's spelling, which WGSL shares).
OPERATORS = {
    Op.ADD: "+",
    Op.SUB: "-",
    Op.MUL: "*",
    Op.DIV: "/",
    Op.FLOOR_DIV: "/",
    Op.MOD: "%",
    Op.EQ: "==",
    Op.NE: "!=",
    Op.LT: "<",
    Op.LE: "<=",
    Op.GT: ">",
    Op.GE: ">=",
    Op.AND: "&&",
    Op.OR: "||",
    Op.BIT_AND: "&",
    Op.BIT_OR: "|",
    Op.BIT_XOR: "^",
}


def buffered_align_nbytes(definition: KernelDefinition) -> int:
    """The alignment of each static shared array placed in the dynamic buffer: the 1024 bytes of
    the 128-byte swizzle when the kernel multiplies warpgroup matrices (``WGMMA_MMA``), else
    :data:`BUFFERED_SHARED_ALIGN`."""
    if swizzled_arrays(definition):
        return SWIZZLE_ALIGN_NBYTES
    return BUFFERED_SHARED_ALIGN


def swizzled_arrays(definition: KernelDefinition) -> frozenset[SharedArray]:
    """The shared arrays that ``WGMMA_MMA`` reads or ``TENSOR_COPY`` writes: they start
    1024-byte aligned."""
    operands = {Op.WGMMA_MMA: (1, 3), Op.TENSOR_COPY: (0,)}
    return frozenset(
        cast(SharedArray, s.args[k])
        for s in walk(definition.body)
        if isinstance(s, Instr) and s.op in operands
        for k in operands[s.op]
    )


@dataclass(frozen=True, slots=True)
class Usage:
    """What one kernel uses, for :meth:`Dialect.preamble`: its element types, the
    ``(operation, element)`` pairs of its instructions (atomics and plane operations by their
    array or value element), and the units of every cube where the kernel states them
    (``cube_units``; else None)."""

    elems: frozenset[Elem]
    ops: frozenset[tuple[Op, Elem]]
    cube_units: int | None = None

    def uses(self, ops: frozenset[Op] | set[Op]) -> bool:
        """True when any instruction's operation is in ``ops``."""
        return any(op in ops for op, _ in self.ops)


_C99_TYPES = {
    Elem.BOOL: "bool",
    Elem.I8: "int8_t",
    Elem.I16: "int16_t",
    Elem.I32: "int32_t",
    Elem.I64: "int64_t",
    Elem.U8: "uint8_t",
    Elem.U16: "uint16_t",
    Elem.U32: "uint32_t",
    Elem.U64: "uint64_t",
    Elem.F32: "float",
    Elem.F64: "double",
}
_UNSUFFIXED_MATH = frozenset({"isnan", "isinf", "isfinite"})


def _line_element(index: str, width: int, k: int) -> str:
    """The index of element ``k`` of line ``index`` of ``width`` lanes."""
    return f"({index}) * {width} + {k}"


class Dialect(ABC):  # noqa: B024  # every hook has a C99 default; subclasses override some
    """A C-family target. Subclasses override class attributes and the hooks below.

    Every hook is pure. Hooks that cannot express something raise ``UnsupportedFeature`` with a
    message naming the missing capability; the emitter adds the kernel's name.
    """

    #: Human-readable target name, used in the header comment and errors.
    name = "C99"
    #: Text before a kernel's name in its definition.
    kernel_prefix = "void"
    #: Text before a generated helper function's return type.
    function_prefix = "static inline"
    #: The restrict qualifier written on read-only buffer parameters.
    restrict = "restrict"
    #: Storage class of shared arrays.
    shared_qualifier = "static"
    #: How dynamic shared arrays (sized at launch) reach the kernel: one buffer of the launch's
    #: dynamic size that :meth:`dynamic_shared_decls` divides, either passed as one shared byte
    #: pointer argument (``"argument"``) or declared in the kernel (``"extern"``); ``None``:
    #: the target has none.
    dynamic_shared: str | None = None
    #: The C element type of the shared pointer argument with ``dynamic_shared == "argument"``
    #: (None: bytes). A driver may align a shared pointer argument only to its element type:
    #: a 16-byte type makes every array carved at a multiple of 16 bytes aligned.
    shared_argument_ctype: str | None = None
    #: When set, every buffer parameter is followed by a byte offset argument of this C type that
    #: the kernel adds to the pointer in its prologue (the host binds pool pages plus offsets).
    offset_type: str | None = None
    #: Type of integers that hold addresses.
    uintptr = "uintptr_t"
    #: Where set, the plane width the loops of the plane helpers (butterflies and scans, a
    #: step for each power of two below it) are written out for, a step after another: for a
    #: target whose driver stops loops after a number of turns (0: they stay loops).
    unrolled_plane_width = 0
    #: Suffixes of integer literals.
    int_suffix = {Elem.U32: "u", Elem.I64: "LL", Elem.U64: "ULL"}
    #: Names user identifiers must not take (keywords, types, functions the emitter calls).
    reserved = C99_KEYWORDS | MATH_NAMES
    #: Prefixes of target builtins user identifiers must not start with.
    reserved_prefixes: tuple[str, ...] = ()
    #: The C type of each element; an element missing here is unsupported.
    types: Mapping[Elem, str] = _C99_TYPES
    #: Templates of the ``u32`` position builtins by kind (``unit``: position in the cube,
    #: ``cube``: position of the cube, ``dim``: units per cube, ``count``: cubes), with the
    #: fields ``{axis}`` (0, 1, 2) and ``{xyz}`` (x, y, z).
    positions: Mapping[str, str] = {}
    #: The barrier statement of one cube (``None``: the target has none).
    barrier: str | None = None
    #: The device's ``printf`` function (``None``: the target cannot print).
    printf: str | None = None
    #: True where prints are written as records into a buffer the host formats, not with
    #: ``printf`` (see :mod:`~ruda_core.codegen.printf`): the kernel then takes that buffer as
    #: its last argument (``ArgKind.PRINT``).
    print_records = False
    #: The C type of a tensor map argument (``ArgKind.TENSOR_MAP``; ``None``: the target has no
    #: tensor copies).
    tensor_map_type: str | None = None
    #: The printf length modifier of the elements :mod:`~ruda_core.codegen.printf` passes
    #: (``i32``/``u32``/``f32`` need none; C99 passes ``f32`` promoted to ``double``).
    printf_length: Mapping[Elem, str] = {Elem.I64: "ll", Elem.U64: "ll"}
    #: Bit casts of float elements: ``(bits to value, value to bits)`` templates over ``{}``.
    bit_casts: Mapping[Elem, tuple[str, str]] = {}
    #: True when math functions are overloaded on their argument type (no C99 ``f`` suffix).
    overloaded_math = False
    #: True when the target has an ``rsqrt`` function (else ``1 / sqrt``).
    has_rsqrt = False

    # -- the kernel ---------------------------------------------------------------------------

    def kernel_head(self, max_units: int | None, min_cubes: int | None = None) -> str:
        """The text before a kernel's name in its definition, for a kernel whose cubes have at
        most ``max_units`` units (``None``: no bound), ``min_cubes`` of which should fit one
        multiprocessor at once (``None``: not asked). Default: :attr:`kernel_prefix`; a target
        that can fit its code to the bound (CUDA's ``__launch_bounds__``) writes it here."""
        return self.kernel_prefix

    # -- types ------------------------------------------------------------------------------

    def type_name(self, elem: Elem) -> str:
        """The C type of a value of ``elem`` (locals, scalars, expressions)."""
        try:
            return self.types[elem]
        except KeyError:
            raise UnsupportedFeature(f"{self.name} has no {elem} type") from None

    def storage_type(self, elem: Elem, space: MemSpace) -> str:
        """The C element type of an array of ``elem`` in ``space``."""
        return self.type_name(elem)

    def host_dtype(self, elem: Elem) -> np.dtype:
        """The NumPy dtype of one buffer element as the host lays it out (bf16 as raw bits)."""
        return np.dtype(np.uint16) if elem is Elem.BF16 else elem.numpy

    def scalar_arg(self, elem: Elem) -> tuple[str, np.dtype]:
        """The C type and host dtype of a scalar kernel argument of ``elem``."""
        return self.type_name(elem), self.host_dtype(elem)

    def arg_to_value(self, elem: Elem, expr: str) -> str:
        """Converts a scalar argument (of :meth:`scalar_arg`'s type) to a value of ``elem``."""
        return expr

    def qualified(
        self, space: MemSpace, ctype: str, *, const: bool = False, volatile: bool = False
    ) -> str:
        """The pointee type of a pointer to ``ctype`` in ``space``, with qualifiers."""
        quals = ("volatile " if volatile else "") + ("const " if const else "")
        return f"{quals}{ctype}"

    def shared_decl(self, ctype: str, name: str, length: int, align_nbytes: int = 0) -> str:
        """The declaration of a shared array (function scope), starting at a multiple of
        ``align_nbytes`` bytes when it is above 0."""
        align = f" __attribute__((aligned({align_nbytes})))" if align_nbytes else ""
        return f"{self.shared_qualifier} {ctype} {name}[{length}]{align};"

    def dynamic_shared_decls(
        self, buffer: str, arrays: Sequence[tuple[str, str, str]], align_nbytes: int = 0
    ) -> list[str]:
        """The declarations of the dynamic shared arrays ``(ctype, name, byte size expression)``
        as pointers into one buffer of bytes named ``buffer``, each at a multiple of
        :data:`~ruda_core.ir.DYNAMIC_SHARED_ALIGN` bytes, in order. With
        ``dynamic_shared == "argument"`` the buffer is the kernel's shared byte pointer
        argument; a dialect with ``"extern"`` declares it first, starting at a multiple of
        ``align_nbytes`` where that is larger."""
        align = DYNAMIC_SHARED_ALIGN
        byte = f"{self.qualified(MemSpace.SHARED, self.storage_type(Elem.U8, MemSpace.SHARED))}*"
        base = f"(({byte}){buffer})" if self.shared_argument_ctype is not None else buffer
        lines = []
        offset = "0u"
        for ctype, name, nbytes in arrays:
            pointer = f"{self.qualified(MemSpace.SHARED, ctype)}*"
            lines.append(f"{pointer} {name} = ({pointer})({base} + {offset});")
            offset = f"{offset} + ((({nbytes}) + {align - 1}u) / {align}u * {align}u)"
        return lines

    #: The most static shared memory a kernel of the target may declare, in bytes (``None``:
    #: only the device's limit). Past it, a target with dynamic shared memory gets its static
    #: shared arrays in the dynamic buffer (:meth:`buffered_shared_nbytes`): so that a cube may
    #: use all the shared memory its device allows (CUDA: 48 KiB static, up to 227 KiB dynamic
    #: where the function opts in), or, at 0, so that a compiler that mis-builds static arrays
    #: never sees one.
    max_static_shared_nbytes: int | None = None

    def buffered_shared_nbytes(self, definition: KernelDefinition) -> int:
        """The bytes of the dynamic buffer that the static shared arrays of ``definition`` take
        before its dynamic ones: each rounded up to :data:`BUFFERED_SHARED_ALIGN`, when their
        total is over :attr:`max_static_shared_nbytes`; else 0 (they are declared static).
        A launch adds them to the dynamic size of its scalars."""
        limit = self.max_static_shared_nbytes
        static = [s for s in definition.shared if s.size is None]
        total = sum(s.length * s.elem.nbytes for s in static)
        if limit is None or self.dynamic_shared is None or total <= limit:
            return 0
        align = buffered_align_nbytes(definition)
        return sum(-(-s.length * s.elem.nbytes // align) * align for s in static)

    def load(self, elem: Elem, space: MemSpace, base: str, index: str) -> str:
        """An expression reading ``base[index]`` as a value of ``elem``."""
        return f"{base}[{index}]"

    def store(self, elem: Elem, space: MemSpace, base: str, index: str, value: str) -> str:
        """A statement (without ``;``) writing ``value`` (of ``elem``) to ``base[index]``."""
        return f"{base}[{index}] = {value}"

    def record_word(self, buffer: str, index: str, value: str | None = None) -> str:
        """Word ``index`` of a buffer of ``u32`` words the host reads back (print records,
        :mod:`~ruda_core.codegen.printf`; bounds reports, :mod:`~ruda_core.codegen.reports`):
        an expression reading it, or, given ``value``, a statement (without ``;``) writing
        it."""
        return f"{buffer}[{index}]" if value is None else f"{buffer}[{index}] = {value}"

    def load_line(
        self,
        elem: Elem,
        base: str,
        index: str,
        width: int,
        lanes: Sequence[str],
        temp: str,
        space: MemSpace = MemSpace.GLOBAL,
        left_early: bool = False,
    ) -> list[str]:
        """Statements (each ending in ``;``) reading line ``index`` of the buffer ``base`` in
        ``space`` (global or shared), its elements ``index * width + k``, into the variables
        ``lanes`` (values of ``elem``). ``temp`` is a name free for a block-local temporary.
        The buffer's start is aligned to the line's size, at most 16 bytes
        (:func:`~ruda_core.ir.line_alignment`). ``left_early``: the access is in a loop that a
        ``break`` or ``return`` may leave before its end. The default reads element by
        element; targets override it with one vector access."""
        return [
            f"{lane} = {self.load(elem, space, base, _line_element(index, width, k))};"
            for k, lane in enumerate(lanes)
        ]

    def store_line(
        self,
        elem: Elem,
        base: str,
        index: str,
        width: int,
        lanes: Sequence[str],
        temp: str,
        space: MemSpace = MemSpace.GLOBAL,
        left_early: bool = False,
    ) -> list[str]:
        """Statements writing the values ``lanes`` (of ``elem``) to line ``index`` of ``base``,
        as :meth:`load_line` reads it."""
        return [
            self.store(elem, space, base, _line_element(index, width, k), lane) + ";"
            for k, lane in enumerate(lanes)
        ]

    # -- syntax -----------------------------------------------------------------------------

    def convert(self, elem: Elem, expr: str, source: Elem | None = None) -> str:
        """``expr`` (an atom, a value of ``source`` where the caller names it) converted to the
        value type of ``elem`` as a C cast converts: an integer wraps to ``elem``'s width."""
        return f"({self.type_name(elem)}){expr}"

    def select(self, cond: str, a: str, b: str) -> str:
        """An atom: ``a`` where the ``bool`` ``cond`` holds, else ``b``. Both branches may be
        evaluated (each must be safe to evaluate)."""
        return f"({cond} ? {a} : {b})"

    def compare(self, op: Op, elem: Elem, a: str, b: str) -> str:
        """An atom: the comparison ``op`` (``EQ`` … ``GE``) of two values of ``elem``; a float
        ``NE`` is true for a NaN."""
        return f"({a} {OPERATORS[op]} {b})"

    def nonzero(self, elem: Elem, expr: str) -> str:
        """An atom: whether ``expr``, a value of ``elem``, is not zero (a NaN is not zero)."""
        return f"({expr} != {self.literal(0, elem)})"

    def shift_amount(self, elem: Elem, expr: str) -> str:
        """The right operand of a shift of an ``elem`` value by ``expr``, a value of ``elem``
        already below its width."""
        return expr

    def declare(self, ctype: str, *inits: tuple[str, str]) -> str:
        """A declaration (without ``;``) of the mutable variables ``(name, value)`` of the C
        type ``ctype``, which may open a ``for`` loop."""
        return f"{ctype} " + ", ".join(f"{name} = {value}" for name, value in inits)

    def function(
        self, ret: str, name: str, params: Sequence[tuple[str, str]], body: Sequence[str]
    ) -> str:
        """The text of a helper function's definition returning ``ret``, with the parameters
        ``(C type, name)``, which the body may assign. ``body`` lines are indented by their own
        leading spaces plus one level."""
        args = ", ".join(f"{ctype} {param}" for ctype, param in params)
        lines = [f"{self.function_prefix} {ret} {name}({args}) {{"]
        lines.extend(f"    {line}" for line in body)
        lines.append("}")
        return "\n".join(lines)

    def int_native(self, op: Op, elem: Elem) -> str | None:
        """A template over the operands ``{0}``, ``{1}``, ``{2}`` for an integer operation of
        ``elem`` the target computes with a builtin or a helper of its own (its exact IR
        semantics), or ``None`` (the default) for the portable form."""
        return None

    # -- literals and conversions -----------------------------------------------------------

    def float_negation(self, elem: Elem, value: str) -> str:
        """``-value`` of the float type ``elem`` (the sign bit flipped, NaN included)."""
        return f"(-{value})"

    def bit_not(self, elem: Elem, value: str) -> str:
        """The complement ``~value`` of an integer of ``elem`` (the caller converts a narrower
        type's result back to it)."""
        return f"(~{value})"

    def int_extremum(self, op: Op, elem: Elem, a: str, b: str) -> str:
        """The integer ``min(a, b)`` (``op`` is ``Op.MIN``) or ``max(a, b)`` (``Op.MAX``) of
        ``elem``, both operands evaluated once each: a conditional expression."""
        return f"({a} {'<' if op is Op.MIN else '>'} {b} ? {a} : {b})"

    def literal(self, value: int | float | bool, elem: Elem) -> str:
        """A C expression of type :meth:`type_name` ``(elem)`` for a constant."""
        if elem is Elem.BOOL:
            return "true" if value else "false"
        if elem.is_int:
            return self.int_literal(int(value), elem)
        compute = self.compute_elem(elem)
        if compute is not elem:
            return self.narrow(elem, self.literal(value, compute), compute)
        value = float(value)
        if not math.isfinite(value):
            return self.float_special(value, elem)
        return self.float_literal(value, elem)

    def int_literal(self, value: int, elem: Elem) -> str:
        suffix = self.int_suffix.get(elem, "")
        if elem.is_signed and value == -(1 << (elem.bits - 1)) and elem.bits >= 32:
            return f"(-{-value - 1}{suffix} - 1{suffix})"  # the minimum has no literal form
        return f"{value}{suffix}"

    def float_literal(self, value: float, elem: Elem) -> str:
        """A finite float literal; the text round-trips to exactly ``value``."""
        if elem is Elem.F64:
            return repr(value)
        return f"{np.float32(value)!s}f"

    def float_special(self, value: float, elem: Elem) -> str:
        """An infinity or NaN of ``elem``."""
        sign = "-" if value < 0 else ""
        text = "NAN" if math.isnan(value) else f"{sign}INFINITY"
        return text if elem is Elem.F32 else f"(({self.type_name(elem)}){text})"

    def compute_elem(self, elem: Elem) -> Elem:
        """The element whose C operators and math functions compute ``elem``'s arithmetic: ``elem``
        itself, or a wider float for floats the target only stores (converted with
        :meth:`widen` and :meth:`narrow`)."""
        return elem

    def widen(self, elem: Elem, expr: str) -> str:
        """A value of ``elem`` as a value of :meth:`compute_elem` ``(elem)``."""
        return expr

    def narrow(self, elem: Elem, expr: str, source: Elem) -> str:
        """A value of ``source`` (any element) converted to ``elem``, rounding to nearest even.
        ``expr`` may be a bare expression (an operation's text without its parentheses)."""
        return f"({self.type_name(elem)})({expr})"

    def float_to_int(self, expr: str, source: Elem, target: Elem) -> str:
        """A float of ``source`` truncated toward zero to the integer ``target``."""
        return self.convert(target, expr, source)

    def bits_to_value(self, elem: Elem, expr: str) -> str:
        """Reinterprets an unsigned integer of ``elem``'s size as a value of ``elem``."""
        if elem in self.bit_casts:
            return self.bit_casts[elem][0].format(expr)
        if elem.is_float:
            raise UnsupportedFeature(f"{self.name} has no bit cast to {elem}")
        return self.convert(elem, expr)

    def value_to_bits(self, elem: Elem, expr: str) -> str:
        """Reinterprets a value of ``elem`` as the unsigned integer of its size."""
        if elem in self.bit_casts:
            return self.bit_casts[elem][1].format(expr)
        if elem.is_float:
            raise UnsupportedFeature(f"{self.name} has no bit cast from {elem}")
        bits = BITS_ELEM[elem.nbytes]
        return expr if elem is bits else self.convert(bits, expr)

    def math_call(self, fn: str, elem: Elem, args: Sequence[str]) -> str:
        """A call of the C99 math function ``fn`` (``exp``, ``fmin``, ``rint``, ``rsqrt`` …) on
        values of the float ``elem``."""
        if fn == "rsqrt" and not self.has_rsqrt:
            return f"({self.literal(1.0, elem)} / {self.math_call('sqrt', elem, args)})"
        suffixed = elem is Elem.F32 and not self.overloaded_math and fn not in _UNSUFFIXED_MATH
        suffix = "f" if suffixed else ""
        return f"{fn}{suffix}({', '.join(args)})"

    def mul_exact(self, a: str, b: str, elem: Elem) -> str:
        """``a * b`` rounded on its own (never fused into a neighbouring add)."""
        return f"({a} * {b})"

    def quotient(self, elem: Elem, a: str, b: str) -> str:
        """``a / b`` of floats, correctly rounded, as float floor division and modulo take it
        (``a / b`` where the target's division is)."""
        return f"{a} / {b}"

    def popcount_native(self, word: Elem) -> str | None:
        """A template for the set bits of ``{v}``, an unsigned ``word`` (U32 or U64), as a
        native instruction; ``None`` (the default) counts them with portable bit sums."""
        return None

    # -- positions and synchronisation ------------------------------------------------------

    def position(self, what: str, axis: int) -> str:
        """A ``u32`` expression for the position builtin ``what`` (see :attr:`positions`)
        along ``axis``."""
        if what not in self.positions:
            raise UnsupportedFeature(f"{self.name} has no unit-position builtins")
        return self.positions[what].format(axis=axis, xyz="xyz"[axis])

    def plane_dim(self) -> str:
        """A ``u32`` expression for the plane width."""
        raise UnsupportedFeature(f"{self.name} has no planes")

    def plane_lanes(self) -> str:
        """A ``u32`` expression, valid in helper functions too, for the number of lanes of the
        unit's plane that exist: the plane width, fewer in the last plane of a cube whose unit
        count is not a multiple of it."""
        raise UnsupportedFeature(f"{self.name} has no planes")

    def plane_lane(self) -> str | None:
        """A ``u32`` expression for the unit's lane in its plane, or ``None`` to compute it as
        ``UNIT_POS % PLANE_DIM``."""
        return None

    def sync_units(self) -> str:
        """The barrier statement of one cube (with ``;``)."""
        if self.barrier is None:
            raise UnsupportedFeature(f"{self.name} has no barrier")
        return self.barrier

    def units_reduce(self, op: Op) -> str | None:
        """A template over ``{v}`` (a ``bool``) for a native barrier of the cube that also reduces
        ``{v}`` over its units (``SYNC_UNITS_COUNT``: the ``u32`` count of true values;
        ``_AND``/``_OR``: ``bool``), or ``None`` to build it from :meth:`sync_units` and a shared
        counter updated with atomics."""
        return None

    def sync_plane(self) -> str | None:
        """The barrier statement of one plane (with ``;``), or ``None`` where a plane is one
        unit and needs none."""
        raise UnsupportedFeature(f"{self.name} has no planes")

    def fence_units(self) -> str:
        """A statement ordering the unit's shared and global memory accesses before it before
        those after it, as the units of its cube see them."""
        raise UnsupportedFeature(f"{self.name} has no memory fences")

    def fence_device(self) -> str:
        """As :meth:`fence_units`, for global memory as every unit of the device sees it."""
        raise UnsupportedFeature(f"{self.name} has no memory fences")

    # -- atomics ----------------------------------------------------------------------------

    def atomic_native(self, op: Op, elem: Elem, space: MemSpace) -> str | None:
        """A template for a native atomic returning the old value of ``elem``, or ``None`` to
        get a compare-and-swap loop. Asked for every atomic but ``ATOMIC_LOAD``."""
        return None

    def atomic_cas_word(self, bits: Elem, space: MemSpace) -> str:
        """A template ``{ptr}, {cmp}, {v}`` for a compare-and-swap of a ``u32`` or ``u64`` word
        returning the old word; ``{ptr}`` has type :meth:`atomic_word_pointer`."""
        raise UnsupportedFeature(f"{self.name} has no {bits.bits}-bit atomic compare-and-swap")

    def atomic_word_pointer(self, bits: Elem, space: MemSpace) -> str:
        """The pointer type the compare-and-swap template takes."""
        return f"{self.qualified(space, self.type_name(bits), volatile=True)}*"

    # -- plane operations -------------------------------------------------------------------

    def plane_native(self, op: Op, elem: Elem) -> str | None:
        """A template for a native plane operation on ``{v}`` and ``{lane}`` (the lane operand;
        for ``PLANE_ELECT`` the unit's own lane), or ``None`` to build it from :meth:`shuffle`
        (``PLANE_BALLOT`` from ``PLANE_SUM``, ``PLANE_ELECT`` as lane 0). It acts over the lanes
        of the plane that exist (:meth:`plane_lanes`). For ``PLANE_BROADCAST`` and
        ``PLANE_SHUFFLE`` it is the read of lane ``{lane}``, which is always a lane that exists
        (the caller gives 0 for the others). Not asked for the relative shuffles, which are
        built from :meth:`shuffle`."""
        raise UnsupportedFeature(f"{self.name} has no plane operations")

    def one_lane_plane(self, op: Op, elem: Elem) -> str:
        """:meth:`plane_native` on a plane of one lane, without a subgroup built-in (a target
        without subgroups): the lane's own value, or what the only lane gets (an exclusive sum
        0; a ballot bit 0 where ``{v}`` holds; an election true). A broadcast or shuffle reads
        lane 0, the only one that exists; the matching :meth:`shuffle` is the value itself."""
        if op is Op.PLANE_EXCLUSIVE_SUM:
            return self.literal(0, elem)
        if op is Op.PLANE_BALLOT:
            return self.select("({v})", self.literal(1, Elem.U32), self.literal(0, Elem.U32))
        if op is Op.PLANE_ELECT:
            return self.literal(True, Elem.BOOL)
        return "({v})"

    def shuffle(self, mode: str, elem: Elem, value: str, arg: str) -> str:
        """The value of another lane: ``mode`` ``"xor"`` (lane ^ arg), ``"up"`` (lane - arg),
        ``"down"`` (lane + arg) or ``"idx"`` (lane arg). The result is unspecified for a lane
        whose source is outside the plane or does not exist (callers select another value
        there), but the call itself must be safe for every ``arg``."""
        raise UnsupportedFeature(f"{self.name} has no plane shuffles")

    # -- asynchronous copies ------------------------------------------------------------------

    #: Whether the target copies global to shared memory asynchronously (the hooks below).
    #: Without, the emitter first runs :func:`~ruda_core.ir.lower_async_copies`: each copy is a
    #: line load and store done when issued, and commits and waits disappear.
    async_copies = False

    def copy_async(
        self, elem: Elem, dst: str, dst_index: str, src: str, src_index: str, width: int
    ) -> list[str]:
        """Statements queueing the copy of line ``src_index`` of the global buffer ``src`` to
        line ``dst_index`` of the shared array ``dst`` (lines of ``width`` elements of
        ``elem``: 4, 8 or 16 bytes, both starts aligned to that size)."""
        raise UnsupportedFeature(f"{self.name} has no asynchronous copies")

    def async_commit(self) -> str:
        """The statement closing the unit's open group of copies."""
        raise UnsupportedFeature(f"{self.name} has no asynchronous copies")

    def async_wait(self, pending: int) -> str:
        """The statement waiting until at most ``pending`` of the unit's groups are open."""
        raise UnsupportedFeature(f"{self.name} has no asynchronous copies")

    # -- cooperative matrices (cmma) ---------------------------------------------------------

    #: The alignment, in bytes, that matrix loads and stores need of a shared array.
    matrix_align_nbytes = 0

    def matrix_decl(self, frag: Fragment, name: str) -> str:
        """The declaration of the fragment ``frag`` named ``name`` (function scope)."""
        raise UnsupportedFeature(f"{self.name} has no cooperative matrices (cmma)")

    def matrix_fill(self, frag: Fragment, name: str, value: str) -> list[str]:
        """Statements setting every element of ``frag`` to ``value`` (of ``frag.elem``)."""
        raise UnsupportedFeature(f"{self.name} has no cooperative matrices (cmma)")

    def matrix_load(
        self,
        frag: Fragment,
        name: str,
        pointer: str,
        stride: str,
        layout: MatrixLayout,
        space: MemSpace = MemSpace.GLOBAL,
    ) -> list[str]:
        """Statements loading ``frag`` from the tile at ``pointer`` (elements of
        ``frag.elem``) in ``space`` (global or shared), rows or columns ``stride`` elements
        apart."""
        raise UnsupportedFeature(f"{self.name} has no cooperative matrices (cmma)")

    def matrix_store(
        self,
        frag: Fragment,
        name: str,
        pointer: str,
        stride: str,
        layout: MatrixLayout,
        space: MemSpace = MemSpace.GLOBAL,
    ) -> list[str]:
        """Statements storing the accumulator ``frag`` as the tile at ``pointer`` in
        ``space``."""
        raise UnsupportedFeature(f"{self.name} has no cooperative matrices (cmma)")

    def matrix_execute(self, a: str, b: str, c: str, d: str) -> list[str]:
        """Statements computing ``d = a * b + c`` of the named fragments."""
        raise UnsupportedFeature(f"{self.name} has no cooperative matrices (cmma)")

    def matrix_cast(self, dst: Fragment, dst_name: str, src: Fragment, src_name: str) -> list[str]:
        """Statements converting the accumulator ``src`` into the accumulator ``dst``."""
        raise UnsupportedFeature(f"{self.name} has no cooperative matrices (cmma)")

    # -- warpgroup matrices (wgmma) ----------------------------------------------------------

    def warpgroup_decl(self, acc: Fragment, name: str) -> str:
        """The declaration of the warpgroup accumulator ``acc`` named ``name``."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    def warpgroup_fill(self, acc: Fragment, name: str, value: str) -> list[str]:
        """Statements setting every element of the accumulator ``acc`` to ``value``."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    def warpgroup_fence(self, accumulators: Sequence[tuple[Fragment, str]]) -> list[str]:
        """Statements of ``WGMMA_FENCE`` in a kernel with the named ``accumulators``."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    def warpgroup_mma(
        self, acc: Fragment, name: str, elem: Elem, a: str, b: str, block: int
    ) -> list[str]:
        """Statements issuing ``acc += A @ B`` of ``elem`` operands whose first elements are
        the shared pointers ``a`` and ``b`` (``WGMMA_MMA``, blocks of B ``block`` apart)."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    def warpgroup_commit(self) -> list[str]:
        """Statements closing the warpgroup's open group."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    def warpgroup_wait(
        self, pending: int, accumulators: Sequence[tuple[Fragment, str]]
    ) -> list[str]:
        """Statements waiting until at most ``pending`` groups are unfinished, after which the
        named ``accumulators`` hold their products."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    def warpgroup_store(
        self, acc: Fragment, name: str, pointer: str, stride: str, rows: str, cols: str
    ) -> list[str]:
        """Statements writing element ``(r, c)`` of ``acc`` to ``pointer[r * stride + c]``
        (``f32``, global or shared) where ``r < rows`` and ``c < cols``."""
        raise UnsupportedFeature(f"{self.name} has no warpgroup matrices (wgmma)")

    # -- asynchronous barriers and bulk copies (mbarrier) ------------------------------------

    def barrier_op(self, op: Op, bar: str, value: str) -> list[str]:
        """Statements of ``MBAR_INIT``, ``MBAR_ARRIVE``, ``MBAR_EXPECT_TX`` or ``MBAR_WAIT`` on
        the barrier at the shared pointer ``bar`` (a ``uint64_t``) with the ``u32`` operand
        ``value`` (the count, the bytes or the parity; ``""`` for an arrival)."""
        raise UnsupportedFeature(f"{self.name} has no asynchronous barriers (mbarrier)")

    def bulk_copy(self, dst: str, src: str, nbytes: str, bar: str) -> list[str]:
        """Statements of ``BULK_COPY``: ``nbytes`` bytes from the global pointer ``src`` to the
        shared pointer ``dst``, completing on the barrier at the shared pointer ``bar``."""
        raise UnsupportedFeature(f"{self.name} has no bulk copies (mbarrier)")

    def tensor_copy(self, dst: str, tensor_map: str, row: str, col: str, bar: str) -> list[str]:
        """Statements of ``TENSOR_COPY``: the box at ``(row, col)`` of the tensor map argument
        named ``tensor_map`` to the shared pointer ``dst``, completing on the barrier at the
        shared pointer ``bar``."""
        raise UnsupportedFeature(f"{self.name} has no tensor copies (tensor maps)")

    def bulk_store(self, dst: str, src: str, nbytes: str) -> list[str]:
        """Statements of ``BULK_STORE``: ``nbytes`` bytes from the shared pointer ``src`` to the
        global pointer ``dst``, in the unit's open bulk group."""
        raise UnsupportedFeature(f"{self.name} has no bulk copies (mbarrier)")

    def bulk_group(self, op: Op, pending: int) -> list[str]:
        """Statements of ``BULK_FENCE``, ``BULK_COMMIT`` or ``BULK_WAIT`` (with its count
        ``pending``; 0 for the others)."""
        raise UnsupportedFeature(f"{self.name} has no bulk copies (mbarrier)")

    # -- the program ------------------------------------------------------------------------

    def preamble(self, usage: Usage) -> list[str]:
        """Lines before everything else: pragmas, includes and the dialect's own helpers for
        what ``usage`` lists. Raises ``UnsupportedFeature`` for what the target lacks."""
        return ["#include <math.h>", "#include <stdbool.h>", "#include <stdint.h>"]
