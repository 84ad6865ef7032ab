"""OpenCL C 1.2 (plus the extensions and OpenCL C 3.0 features a device reports) as a
:class:`Dialect`.

Capabilities come from the :class:`~ruda_opencl.target.OpenCLTarget` in
``CompileOptions.target`` (see :data:`~ruda_opencl.target.CAPABILITIES`). Without ``fp16``,
``f16`` is storage-only: buffers hold ``half`` read and written with
``vload_half``/``vstore_half_rte``, shared and local arrays hold the bits as ``ushort``, values
are ``float`` rounded to half after every operation (exact for + - * /).
``bf16`` (with ``bf16``) is stored as its bits in ``ushort`` and computed as ``float`` rounded to
bf16 (nearest even) after every operation, through Intel's conversion builtins; ``f64`` and
32/64-bit integers are first truncated to ``float`` with a sticky bit (round to odd), so they
are rounded once. ``bool`` cannot be a kernel argument or buffer element in OpenCL C, so bool
buffers, arrays and scalar arguments are ``uchar`` (0 or 1, NumPy's bool layout) converted on
access. Each buffer pointer is followed by its ``ulong`` byte offset.

Planes are subgroups of the fixed width ``CompileOptions.plane_dim`` where any subgroup capability
is on (the server enables one only when it can fix the width); ``PLANE_DIM`` is that constant, and
with ``intel_reqd_subgroup_size`` every kernel requires it from the compiler. ``UNIT_POS_PLANE`` is
``UNIT_POS % PLANE_DIM`` (a driver may form subgroups within each row of a cube, so
``get_sub_group_local_id`` differs from it where rows are not whole planes: the device lacks
``Feature.PLANES_ACROSS_ROWS``, and the client refuses plane operations on such cubes). The last
subgroup of a work-group whose size is not a multiple of the width is smaller
(``get_sub_group_size()``); the ``sub_group_*`` built-ins act over its work-items, which are the
lanes of the plane that exist. Without subgroups a plane is one lane: ``PLANE_DIM`` is 1 and every
plane operation is the unit's own value or what the contract gives a plane of one lane (a sum, scan
or reduction is the value, an exclusive sum 0, a ballot bit 0 set where the predicate holds, an
election true, a read of another lane 0 or the unit's own value), with no subgroup built-in;
``sync_plane()`` is nothing.
``plane_ballot`` is native with ``cl_khr_subgroup_ballot``, else a subgroup sum of bits;
``plane_elect`` is lane 0 (every lane reaches it: Intel's CPU compiler aborts the process on
``sub_group_elect`` in a work-group it runs one work-item at a time); the relative shuffles
use ``cl_khr_subgroup_shuffle_relative`` (else ``sub_group_shuffle`` at a computed lane) and
``sub_group_shuffle_xor``.

Reducing barriers are ``barrier`` then ``work_group_reduce_add``/``work_group_all``/
``work_group_any`` with ``__opencl_c_work_group_collective_functions``, else the emitter's shared
counter. ``fence_units()`` is ``mem_fence`` of local and global memory; ``fence_device()`` is
``read_mem_fence`` then ``write_mem_fence`` of both in an OpenCL C 1.2 program (whose fences
state no scope: NVIDIA's compiler makes ``mem_fence`` a fence of the work-group, ``membar.cta``,
and the other two fences of the device, ``membar.gl``) and a device-scope
``atomic_work_item_fence`` in an OpenCL C 3.0 one (see :data:`OPENCL_C_3`), where ``mem_fence``
is only as wide as the cube (the work-group). The wrapping counters are compare-and-swap loops.

Four forms work around Intel's CPU compiler (2026.2) for every device: integer ``min``/``max``
are ``select()`` of values cast to the element's type, float negation is an XOR of the sign bit
the compiler cannot see through, and so is a negative float constant (its magnitude negated so),
since that compiler turns a product or quotient by -1 into a negation; and in a loop that a
``break`` or ``return`` may leave early, a line is read and written through a pointer to
vectors of at most 16 bytes (its start is aligned to that), not ``vloadN``/``vstoreN``, which
that compiler gets wrong there (``docs/conformance-results.md``). Pure: imports no driver.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ruda_core.codegen import (
    BITS_ELEM,
    C99_KEYWORDS,
    MATH_NAMES,
    Dialect,
    MemSpace,
    Usage,
    words,
)
from ruda_core.ir import ATOMIC_OPS, PLANE_OPS, Elem, Op
from ruda_core.runtime import UnsupportedFeature
from ruda_core.runtime.compiler import CompileOptions

from .target import CAPABILITIES, OPENCL_C_3, SUBGROUPS, Capability, OpenCLTarget

__all__ = ["OpenCLDialect"]

_TYPES = {
    Elem.BOOL: "bool",
    Elem.I8: "char",
    Elem.I16: "short",
    Elem.I32: "int",
    Elem.I64: "long",
    Elem.U8: "uchar",
    Elem.U16: "ushort",
    Elem.U32: "uint",
    Elem.U64: "ulong",
    Elem.F16: "half",
    Elem.F32: "float",
    Elem.F64: "double",
}
_SELECT_MASK = {1: "char", 2: "short", 4: "int", 8: "long"}
_SPACES = {MemSpace.GLOBAL: "__global", MemSpace.SHARED: "__local", MemSpace.LOCAL: "__private"}
_ATOMIC = {
    Op.ATOMIC_ADD: "add",
    Op.ATOMIC_SUB: "sub",
    Op.ATOMIC_SWAP: "xchg",
    Op.ATOMIC_MIN: "min",
    Op.ATOMIC_MAX: "max",
    Op.ATOMIC_AND: "and",
    Op.ATOMIC_OR: "or",
    Op.ATOMIC_XOR: "xor",
}
_SUBGROUP = {
    Op.PLANE_SUM: "sub_group_reduce_add({v})",
    Op.PLANE_MIN: "sub_group_reduce_min({v})",
    Op.PLANE_MAX: "sub_group_reduce_max({v})",
    Op.PLANE_BROADCAST: "sub_group_broadcast({v}, {lane})",
    Op.PLANE_INCLUSIVE_SUM: "sub_group_scan_inclusive_add({v})",
    Op.PLANE_EXCLUSIVE_SUM: "sub_group_scan_exclusive_add({v})",
}
#: Plane operations whose float result must be rounded back to half.
_ROUNDED = frozenset({Op.PLANE_SUM, Op.PLANE_PROD, Op.PLANE_INCLUSIVE_SUM, Op.PLANE_EXCLUSIVE_SUM})
_FENCE_FLAGS = "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE"


def _units_helper(name: str, result: str, reduction: str) -> tuple[str, str]:
    text = f"""\
static inline {result} {name}(bool p) {{
    barrier({_FENCE_FLAGS});
    return {reduction};
}}"""
    return name, text


#: Reducing barriers with work-group collectives: (helper name, helper text).
_UNITS_REDUCE = {
    Op.SYNC_UNITS_COUNT: _units_helper(
        "ruda_sync_units_count", "uint", "work_group_reduce_add(p ? 1u : 0u)"
    ),
    Op.SYNC_UNITS_AND: _units_helper("ruda_sync_units_and", "bool", "work_group_all((int)p) != 0"),
    Op.SYNC_UNITS_OR: _units_helper("ruda_sync_units_or", "bool", "work_group_any((int)p) != 0"),
}
#: An identity byte permutation in PTX between an integer ``min`` or ``max`` and what uses it:
#: NVIDIA's PTX assembler fuses ``max(max(a, -t), b)``, or two ``min``, into one operation that
#: drops the negation (CUDA 13's, and the driver's for OpenCL, on sm_90).
_APART = """\
static inline uint ruda_apart(uint x) {
    uint r;
    asm("prmt.b32 %0, %1, 0, 0x3210;" : "=r"(r) : "r"(x));
    return r;
}"""
_F16_HELPERS = """\
static inline float ruda_f16_round(float x) {
    ushort bits;
    vstore_half_rte(x, 0, (__private half*)&bits);
    return vload_half(0, (__private const half*)&bits);
}
static inline float ruda_f16_from_bits(ushort bits) {
    return vload_half(0, (__private const half*)&bits);
}
static inline ushort ruda_f16_to_bits(float x) {
    ushort bits;
    vstore_half_rte(x, 0, (__private half*)&bits);
    return bits;
}"""
_F16_FROM_F64 = """\
static inline float ruda_f16_round_f64(double x) {
    ushort bits;
    vstore_half_rte(x, 0, (__private half*)&bits);
    return vload_half(0, (__private const half*)&bits);
}"""
#: bf16 conversions as bit arithmetic (round to nearest even; a NaN made quiet, its sign kept),
#: the results of Intel's ``intel_convert_*`` builtins: with those, Intel's CPU compiler took
#: 14.3 s to build a held bf16 LayerNorm kernel, 1.7 s with these
_BF16_HELPERS = """\
static inline float ruda_bf16_from_bits(ushort bits) {
    return as_float((uint)bits << 16);
}
static inline ushort ruda_bf16_to_bits(float x) {
    uint u = as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float ruda_bf16_round(float x) {
    return ruda_bf16_from_bits(ruda_bf16_to_bits(x));
}
static inline float ruda_bf16_round_odd(float truncated, bool inexact) {
    return ruda_bf16_round(as_float(as_uint(truncated) | (uint)inexact));
}"""
_VECTOR_TYPES = frozenset(f"{t}{n}" for t in set(_TYPES.values()) for n in (2, 3, 4, 8, 16))


#: The math functions PoCL 5 folds of a NaN it knows while it builds to a number (``exp(NAN)``
#: to 0, ``tanh(NAN)`` to 1 …): a NaN is taken apart from the call, as their result.
_NAN_FOLDED = frozenset({"exp", "exp2", "expm1", "sinh", "tanh"})


class OpenCLDialect(Dialect):
    """OpenCL C for a device with the given :data:`CAPABILITIES` (a set of their keys)."""

    name = "OpenCL C"
    kernel_prefix = "__kernel void"
    shared_qualifier = "__local"
    dynamic_shared = "argument"
    #: NVIDIA's driver aligns a ``__local uchar*`` argument to one byte: a double carved out of
    #: it at a multiple of 16 bytes then faulted (-9999); a ``uint4`` base is 16-byte aligned
    shared_argument_ctype = "uint4"
    offset_type = "ulong"
    int_suffix = {Elem.U32: "u", Elem.I64: "L", Elem.U64: "UL"}
    reserved = (
        C99_KEYWORDS
        | MATH_NAMES
        | _VECTOR_TYPES
        | frozenset(_TYPES.values())
        | words(
            """
            kernel global local constant private read_only write_only read_write
            uniform pipe image1d_t image2d_t image3d_t sampler_t event_t barrier
            half CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE mem_fence read_mem_fence
            write_mem_fence memory_order_acq_rel
            memory_scope_device
            """
        )
    )
    types = _TYPES
    positions = {
        "unit": "(uint)get_local_id({axis})",
        "cube": "(uint)get_group_id({axis})",
        "dim": "(uint)get_local_size({axis})",
        "count": "(uint)get_num_groups({axis})",
    }
    barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    #: records, not printf: Intel's CPU runtime writes printf a character at a time, and OpenCL
    #: C takes only literal strings for ``%s``
    print_records = True
    bit_casts = {  # as_half takes 16 bits, and C's integer literals are ints
        Elem.F16: ("as_half((ushort)({}))", "as_ushort({})"),
        Elem.F32: ("as_float({})", "as_uint({})"),
        Elem.F64: ("as_double({})", "as_ulong({})"),
    }
    overloaded_math = True
    has_rsqrt = True
    reserved_prefixes = (
        "convert_",
        "as_",
        "vload",
        "vstore",
        "sub_group_",
        "work_group_",
        "atomic_",
        "atom_",
        "get_",
    )

    def __init__(self, capabilities: Iterable[Capability] = (), plane_dim: int = 32) -> None:
        """:raises ValueError: for an unknown capability or a plane width below 1."""
        if plane_dim < 1:
            raise ValueError(f"a plane width is >= 1, not {plane_dim}")
        self.capabilities = frozenset(OpenCLTarget(tuple(capabilities)).capabilities)
        self.plane_width = plane_dim
        if Capability.SHARED_ARGUMENT in self.capabilities:
            self.max_static_shared_nbytes = 0
        if self._planes and Capability.INTEL_REQD_SUBGROUP_SIZE in self.capabilities:
            required = f"__attribute__((intel_reqd_sub_group_size({plane_dim})))"
            self.kernel_prefix = f"__kernel {required} void"

    @classmethod
    def from_options(cls, options: CompileOptions) -> OpenCLDialect:
        """The dialect for the capabilities of ``options.target`` (an
        :class:`~ruda_opencl.target.OpenCLTarget`) and ``options.plane_dim``.

        :raises TypeError: when ``options.target`` is not an ``OpenCLTarget``.
        """
        return cls(options.target_as(OpenCLTarget).capabilities, options.plane_dim)

    def _require(self, capability: Capability, what: str) -> None:
        if capability not in self.capabilities:
            raise UnsupportedFeature(
                f"{what} needs {CAPABILITIES[capability]}, which the OpenCL device lacks "
                f"(OpenCLTarget capability {capability})"
            )

    @property
    def _planes(self) -> bool:
        return any(key in self.capabilities for key in SUBGROUPS)

    @property
    def _opencl_c_3(self) -> bool:
        return any(key in self.capabilities for key in OPENCL_C_3)

    @property
    def _half_storage_only(self) -> bool:
        return Capability.FP16 not in self.capabilities

    def popcount_native(self, word: Elem) -> str | None:
        return "popcount({v})"

    def math_call(self, fn: str, elem: Elem, args: Sequence[str]) -> str:
        call, x = super().math_call(fn, elem, args), args[0]
        if fn == "tanh":  # some drivers (PoCL) return tanh(+-inf) one ulp short of +-1
            call = f"(isinf({x}) ? copysign({self.literal(1.0, elem)}, {x}) : {call})"
        if fn in ("ceil", "floor", "trunc"):  # PoCL 5 folds them of a NaN it knows to 0 or
            # other bits: an infinity or a NaN is its own rounding, taken apart from the call
            return f"(isfinite({x}) ? {call} : ({x}))"
        if fn in _NAN_FOLDED:
            return f"(isnan({x}) ? ({x}) : {call})"
        return call

    def type_name(self, elem: Elem) -> str:
        if elem is Elem.F64:
            self._require(Capability.FP64, "f64")
        if elem is Elem.F16 and self._half_storage_only:
            return "float"
        if elem is Elem.BF16:
            self._require(Capability.BF16, "bf16")
            return "float"
        return _TYPES[elem]

    def storage_type(self, elem: Elem, space: MemSpace) -> str:
        if elem is Elem.BOOL:
            return "uchar"
        if elem is Elem.BF16:
            self._require(Capability.BF16, "bf16")
            return "ushort"
        if elem is Elem.F16 and self._half_storage_only:
            return "half" if space is MemSpace.GLOBAL else "ushort"
        return self.type_name(elem)

    def scalar_arg(self, elem: Elem) -> tuple[str, np.dtype]:
        if elem is Elem.BOOL:
            return "uchar", np.dtype(np.uint8)
        if elem is Elem.F16 and self._half_storage_only:
            return "float", np.dtype(np.float32)
        if elem is Elem.BF16:
            return self.storage_type(elem, MemSpace.LOCAL), self.host_dtype(elem)
        return super().scalar_arg(elem)

    def arg_to_value(self, elem: Elem, expr: str) -> str:
        if elem is Elem.BF16:
            return self.bits_to_value(elem, expr)
        return f"({expr} != 0)" if elem is Elem.BOOL else expr

    def qualified(
        self, space: MemSpace, ctype: str, *, const: bool = False, volatile: bool = False
    ) -> str:
        return (
            ("volatile " if volatile else "")
            + f"{_SPACES[space]} "
            + ("const " if const else "")
            + ctype
        )

    def _half_pointer(self, space: MemSpace, base: str) -> str:
        return base if space is MemSpace.GLOBAL else f"({self.qualified(space, 'half')}*){base}"

    def load(self, elem: Elem, space: MemSpace, base: str, index: str) -> str:
        if elem is Elem.BOOL:
            return f"({base}[{index}] != 0)"
        if elem is Elem.F16 and self._half_storage_only:
            return f"vload_half({index}, {self._half_pointer(space, base)})"
        if elem is Elem.BF16:
            return self.bits_to_value(elem, f"{base}[{index}]")
        return f"{base}[{index}]"

    def store(self, elem: Elem, space: MemSpace, base: str, index: str, value: str) -> str:
        if elem is Elem.BOOL:
            return f"{base}[{index}] = (uchar){value}"
        if elem is Elem.F16 and self._half_storage_only:
            return f"vstore_half_rte({value}, {index}, {self._half_pointer(space, base)})"
        if elem is Elem.BF16:
            return f"{base}[{index}] = {self.value_to_bits(elem, value)}"
        return f"{base}[{index}] = {value}"

    def _line_vector(self, elem: Elem, width: int) -> tuple[str, str]:
        """The vector type of a line as ``vload``/``vstore`` move it, and their name suffix
        (``vload_half4`` for a half that is only stored)."""
        if elem is Elem.F16 and self._half_storage_only:
            return f"float{width}", f"_half{width}"
        return f"{self.storage_type(elem, MemSpace.GLOBAL)}{width}", str(width)

    def _line_base(self, elem: Elem, base: str, space: MemSpace) -> str:
        """``base`` as ``vload``/``vstore`` take it: a shared array of a half that is only
        stored holds its bits as ``ushort``, read and written as ``half``."""
        if elem is Elem.F16 and self._half_storage_only and space is MemSpace.SHARED:
            return f"(__local half*){base}"
        return base

    def _chunks(
        self, elem: Elem, width: int, space: MemSpace, left_early: bool
    ) -> tuple[str, int] | None:
        """Where a line is moved through a pointer to vectors, not ``vloadN``/``vstoreN``: the
        vector type of its chunks of at most 16 bytes (a line's start is aligned to its size up
        to 16 bytes, :func:`~ruda_core.ir.line_alignment`, and so is every chunk) and the lanes
        of a chunk; else None. Only in a loop a ``break`` or ``return`` may leave early:
        Intel's CPU compiler (2026.2) loses the value a unit read through ``vloadN`` at an
        address the same for every unit in such a loop, and it moves lines through
        ``vloadN`` about four times as fast as through a pointer (docs/conformance-results.md).
        A storage-only half always goes through ``vload_halfN``, which converts it."""
        if not left_early or (elem is Elem.F16 and self._half_storage_only):
            return None
        lanes = min(width, 16 // elem.nbytes)
        return f"{self.storage_type(elem, space)}{lanes}", lanes

    def _chunk_pointer(
        self,
        space: MemSpace,
        vector: str,
        temp: str,
        base: str,
        index: str,
        chunks: int,
        const: bool,
    ) -> str:
        """The declaration of ``temp``, a pointer to the first of the ``chunks`` vectors of line
        ``index`` of ``base`` (see :meth:`_chunks`)."""
        chunk = self.qualified(space, vector, const=const)
        return f"{chunk}* {temp} = ({chunk}*){base} + ({index}) * {chunks};"

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
        chunks = self._chunks(elem, width, space, left_early)
        if chunks is None:
            vector, suffix = self._line_vector(elem, width)
            base = self._line_base(elem, base, space)
            stmts = [f"const {vector} {temp} = vload{suffix}({index}, {base});"]
            values = [f"{temp}.s{k}" for k in range(width)]
        else:
            vector, per = chunks
            stmts = [self._chunk_pointer(space, vector, temp, base, index, width // per, True)]
            values = [f"{temp}[{k // per}].s{k % per}" for k in range(width)]
        for lane, value in zip(lanes, values, strict=True):
            if elem is Elem.BOOL:
                value = f"({value} != 0)"
            elif elem is Elem.BF16:
                value = self.bits_to_value(elem, value)
            stmts.append(f"{lane} = {value};")
        return stmts

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
        if elem is Elem.BOOL:
            values = [f"(uchar){lane}" for lane in lanes]
        elif elem is Elem.BF16:
            values = [self.value_to_bits(elem, lane) for lane in lanes]
        else:
            values = list(lanes)
        chunks = self._chunks(elem, width, space, left_early)
        if chunks is None:
            vector, suffix = self._line_vector(elem, width)
            rounding = "_rte" if suffix.startswith("_half") else ""
            line = f"({vector})({', '.join(values)})"
            base = self._line_base(elem, base, space)
            return [f"vstore{suffix}{rounding}({line}, {index}, {base});"]
        vector, per = chunks
        stmts = [self._chunk_pointer(space, vector, temp, base, index, width // per, False)]
        for c in range(width // per):
            stmts.append(f"{temp}[{c}] = ({vector})({', '.join(values[c * per : (c + 1) * per])});")
        return stmts

    def float_negation(self, elem: Elem, value: str) -> str:
        # the sign bit flipped by an XOR with a mask rotated by z, the launch's global offset
        # (always 0, unknown to the compiler), so that no negation is live after it: Intel's
        # CPU compiler (2026.2) gets a negation that is live across a barrier wrong (every
        # sub-group of a work-group of more than 16 items gets the last one's values), and
        # folds both a plain XOR of the sign bit and copysign(x, -x) back into a negation
        bits = _TYPES[BITS_ELEM[elem.nbytes]]
        sign = f"rotate(({bits}){hex(1 << elem.bits - 1)}UL, ({bits})get_global_offset(0))"
        return self.bits_to_value(elem, f"({bits})({self.value_to_bits(elem, value)} ^ {sign})")

    def bit_not(self, elem: Elem, value: str) -> str:
        # ~value rotated by z, the launch's global offset: always 0 (ruda enqueues without
        # one), but unknown to the compiler. Intel's CPU compiler (2026.2), where a
        # work-group's items run one at a time (a size not a multiple of its 16 lanes), drops
        # the complement of a min or a max (~max(a, b) gives max(a, b), in every written form)
        # and gets max(x >> 1, ~x) wrong; a complement it cannot see through keeps both right
        # (an OR with z instead of the rotation is still wrong before a barrier)
        t = _TYPES[elem]
        return f"rotate(({t})~{value}, ({t})get_global_offset(0))"

    def int_extremum(self, op: Op, elem: Elem, a: str, b: str) -> str:
        # select(), not a conditional expression: Intel's CPU compiler (2026.2) folds both
        # min(x, ~x) and max(x, ~x), written either way or with the built-ins, to x
        # both values of the element's type (a literal of a narrow type is an int) and the
        # condition a signed integer of its size: each select() call names one overload
        t, mask = _TYPES[elem], _SELECT_MASK[elem.nbytes]
        compare = "<" if op is Op.MIN else ">"
        chosen = f"select(({t}){b}, ({t}){a}, ({mask})({a} {compare} {b}))"
        if Capability.PTX in self.capabilities and elem.bits <= 32:  # see _APART
            return f"(({t})ruda_apart((uint){chosen}))"
        return chosen

    def literal(self, value: int | float | bool, elem: Elem) -> str:
        if elem is Elem.F16 and self._half_storage_only:  # exact: the constant is a half
            return super().literal(value, Elem.F32)
        if elem is Elem.BF16 and _is_bf16(value):  # bf16 computes as float: nothing to round
            return super().literal(value, Elem.F32)
        return super().literal(value, elem)

    def float_literal(self, value: float, elem: Elem) -> str:
        # a negative constant (-0.0 too) is its magnitude negated as float_negation does: from
        # a constant it sees as -1 (or -0.0 minus a value) Intel's CPU compiler makes a
        # negation of its own, which it gets wrong where it is live across a barrier
        if math.copysign(1.0, value) < 0:
            return self.float_negation(elem, self.float_literal(-value, elem))
        text = super().float_literal(value, elem)
        return f"(half){text}" if elem is Elem.F16 else text

    def float_special(self, value: float, elem: Elem) -> str:
        if value < 0:
            return self.float_negation(elem, self.float_special(-value, elem))
        return super().float_special(value, elem)

    def compute_elem(self, elem: Elem) -> Elem:
        if elem is Elem.BF16 or (elem is Elem.F16 and self._half_storage_only):
            return Elem.F32
        return elem

    def narrow(self, elem: Elem, expr: str, source: Elem) -> str:
        if elem is Elem.BF16:
            return self._to_bf16(expr, source)
        if elem is not Elem.F16 or not self._half_storage_only:
            return super().narrow(elem, expr, source)
        if source is Elem.F64:
            return f"ruda_f16_round_f64({expr})"
        return f"ruda_f16_round({expr if source is Elem.F32 else f'(float){expr}'})"

    @staticmethod
    def _to_bf16(expr: str, source: Elem) -> str:
        """``expr`` (of ``source``) rounded once to bf16: sources ``float`` cannot hold exactly
        are truncated to it with a sticky bit (round to odd keeps the second rounding exact)."""
        if source is Elem.F64 or (source.is_int and source.bits >= 32):
            truncated = f"convert_float_rtz({expr})"
            inexact = f"({_TYPES[source]}){truncated} != ({expr})"
            return f"ruda_bf16_round_odd({truncated}, {inexact})"
        return f"ruda_bf16_round({expr if source is Elem.F32 else f'(float){expr}'})"

    def float_to_int(self, expr: str, source: Elem, target: Elem) -> str:
        if target.bits >= 32:
            return f"convert_{_TYPES[target]}_sat_rtz({expr})"
        return f"({_TYPES[target]})convert_int_sat_rtz({expr})"

    def bits_to_value(self, elem: Elem, expr: str) -> str:
        if elem is Elem.F16 and self._half_storage_only:
            return f"ruda_f16_from_bits({expr})"
        if elem is Elem.BF16:
            return f"ruda_bf16_from_bits({expr})"
        return super().bits_to_value(elem, expr)

    def value_to_bits(self, elem: Elem, expr: str) -> str:
        if elem is Elem.F16 and self._half_storage_only:
            return f"ruda_f16_to_bits({expr})"
        if elem is Elem.BF16:
            return f"ruda_bf16_to_bits({expr})"
        return super().value_to_bits(elem, expr)

    def plane_dim(self) -> str:
        return f"{self.plane_width}u" if self._planes else "1u"

    def plane_lanes(self) -> str:
        return "get_sub_group_size()" if self._planes else "1u"

    def units_reduce(self, op: Op) -> str | None:
        if Capability.WORK_GROUP_COLLECTIVES not in self.capabilities:
            return None
        return _UNITS_REDUCE[op][0] + "({v})"

    def sync_plane(self) -> str | None:
        return f"sub_group_barrier({_FENCE_FLAGS});" if self._planes else None

    def fence_units(self) -> str:
        return f"mem_fence({_FENCE_FLAGS});"

    def fence_device(self) -> str:
        if not self._opencl_c_3:
            return f"read_mem_fence({_FENCE_FLAGS}); write_mem_fence({_FENCE_FLAGS});"
        self._require(Capability.ATOMIC_SCOPE_DEVICE, "fence_device() in an OpenCL C 3.0 program")
        return f"atomic_work_item_fence({_FENCE_FLAGS}, memory_order_acq_rel, memory_scope_device);"

    def atomic_native(self, op: Op, elem: Elem, space: MemSpace) -> str | None:
        if (
            elem.is_int
            and elem.bits >= 32
            and (elem.bits == 32 or Capability.INT64_ATOMICS in self.capabilities)
        ):
            prefix = "atomic_" if elem.bits == 32 else "atom_"
            if op is Op.ATOMIC_CAS:
                return prefix + "cmpxchg({ptr}, {cmp}, {v})"
            if op in _ATOMIC:
                return f"{prefix}{_ATOMIC[op]}({{ptr}}, {{v}})"
            return None  # the wrapping counters
        if elem is Elem.F32 and op is Op.ATOMIC_SWAP:
            return "atomic_xchg({ptr}, {v})"
        return None

    def atomic_cas_word(self, bits: Elem, space: MemSpace) -> str:
        if bits is Elem.U64:
            self._require(Capability.INT64_ATOMICS, "a 64-bit atomic")
            return "atom_cmpxchg({ptr}, {cmp}, {v})"
        return "atomic_cmpxchg({ptr}, {cmp}, {v})"

    def _widened(self, op: Op, elem: Elem, call: str) -> str:
        """``call`` on a type the subgroup builtins take (int for bool and narrow ints)."""
        if elem is Elem.BOOL:
            return f"({call.replace('{v}', '(int){v}')} != 0)"
        if elem.is_int and elem.bits < 32:
            wide = "int" if elem.is_signed else "uint"
            return f"({_TYPES[elem]}){call.replace('{v}', f'({wide}){{v}}')}"
        if self.compute_elem(elem) is not elem and op in _ROUNDED:
            return self.narrow(elem, call, Elem.F32)
        return call

    def plane_native(self, op: Op, elem: Elem) -> str | None:
        if not self._planes:
            self._require(Capability.ONE_LANE_PLANES, "a plane operation")
            return self.one_lane_plane(op, elem)
        if op is Op.PLANE_BALLOT:  # the .x word holds lanes 0 to 31
            return (
                "sub_group_ballot((int){v}).x"
                if Capability.SUBGROUP_BALLOT in self.capabilities
                else None
            )
        if op is Op.PLANE_ELECT:  # lane 0, by the uniform rule: Intel's CPU compiler (2026.2)
            # aborts the process on sub_group_elect where it runs work-items one at a time
            return None
        if op in (Op.PLANE_ALL, Op.PLANE_ANY):
            return f"(sub_group_{'all' if op is Op.PLANE_ALL else 'any'}((int){{v}}) != 0)"
        if op is Op.PLANE_SHUFFLE:
            return self.shuffle("idx", elem, "{v}", "{lane}")
        if op is Op.PLANE_PROD:  # a butterfly over shuffles where there are shuffles: Intel's
            # CPU compiler (2026.2) gives sub_group_non_uniform_reduce_mul the lane's own value
            # where it runs work-items one at a time
            caps = self.capabilities
            if Capability.SUBGROUP_SHUFFLE in caps or Capability.SUBGROUP_ARITH not in caps:
                return None
            return self._widened(op, elem, "sub_group_non_uniform_reduce_mul({v})")
        return self._widened(op, elem, _SUBGROUP[op])

    def shuffle(self, mode: str, elem: Elem, value: str, arg: str) -> str:
        if not self._planes:  # the only lane: callers keep or discard its value as for others
            self._require(Capability.ONE_LANE_PLANES, "a plane shuffle")
            return value
        self._require(Capability.SUBGROUP_SHUFFLE, "a plane shuffle")
        if mode in ("up", "down") and Capability.SUBGROUP_SHUFFLE_RELATIVE in self.capabilities:
            call = f"sub_group_shuffle_{mode}({{v}}, {arg})"
        elif mode in ("up", "down"):  # any lane of the plane: callers discard outside ones
            sign = "-" if mode == "up" else "+"
            call = f"sub_group_shuffle({{v}}, (get_sub_group_local_id() {sign} {arg}) % "
            call += f"{self.plane_dim()})"
        else:
            fn = "sub_group_shuffle_xor" if mode == "xor" else "sub_group_shuffle"
            call = f"{fn}({{v}}, {arg})"
        return self._widened(Op.PLANE_SHUFFLE, elem, call).replace("{v}", value)

    def preamble(self, usage: Usage) -> list[str]:
        lines = ["#pragma OPENCL FP_CONTRACT OFF"]
        extensions: list[str] = []
        if Elem.BF16 in usage.elems:
            self._require(Capability.BF16, "bf16")
        if Elem.F64 in usage.elems:
            self._require(Capability.FP64, "f64")
            extensions.append("cl_khr_fp64")
        if Elem.F16 in usage.elems and not self._half_storage_only:
            extensions.append("cl_khr_fp16")
        if any(op in ATOMIC_OPS and elem.nbytes == 8 for op, elem in usage.ops):
            self._require(Capability.INT64_ATOMICS, "a 64-bit atomic")
            extensions += ["cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"]
        if usage.uses(PLANE_OPS) and Capability.SUBGROUPS in self.capabilities:
            extensions.append("cl_khr_subgroups")  # the other subgroup sources need no pragma
        lines += [f"#pragma OPENCL EXTENSION {ext} : enable" for ext in extensions]
        if Capability.WORK_GROUP_COLLECTIVES in self.capabilities:
            for op, (_, text) in _UNITS_REDUCE.items():
                if usage.uses({op}):
                    lines += ["", text]
        if Capability.PTX in self.capabilities:
            lines += ["", _APART]
        if Elem.F16 in usage.elems and self._half_storage_only:
            lines += ["", _F16_HELPERS]
            if Elem.F64 in usage.elems:
                lines.append(_F16_FROM_F64)
        if Elem.BF16 in usage.elems:
            lines += ["", _BF16_HELPERS]
        return lines


def _is_bf16(value: float) -> bool:
    """Whether ``value`` is a finite bf16 value exactly (its float's low 16 bits are zero)."""
    with np.errstate(over="ignore"):
        single = np.float32(value)
    exact = bool(np.isfinite(single)) and float(single) == value
    return exact and not int(single.view(np.uint32)) & 0xFFFF
