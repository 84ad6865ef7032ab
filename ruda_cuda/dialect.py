"""CUDA C++ (as NVRTC compiles it) as a :class:`Dialect`.

The architecture of the :class:`CudaTarget` in ``CompileOptions.target`` (default ``sm_52``,
NVRTC's default) selects native atomics: ``f64`` add from sm_60, ``f16`` add from
sm_70, ``bf16`` add and ``__reduce_*_sync`` from sm_80; older targets get compare-and-swap
loops and shuffle butterflies. ``f16``/``bf16`` are ``__half``/``__nv_bfloat16`` (cuda_fp16.h,
cuda_bf16.h), computed through ``float`` with one rounding per operation. Planes are warps of
32 lanes; every warp intrinsic (``__shfl_*_sync``, ``__ballot_sync``, ``__all_sync``,
``__any_sync``, ``__reduce_*_sync``, ``__syncwarp``) takes the mask of the warp's lanes that
exist, ``ruda_plane_mask()``: all 32, fewer in a cube's last warp when its unit count is not a
multiple of 32 (a constant where the kernel states cubes of whole warps, ``cube_units``). An
election is the lowest lane of ``__activemask()``. Reducing barriers are
``__syncthreads_count/and/or``, the wrapping counters ``atomicInc``/``atomicDec``, the fences
``__threadfence_block`` and ``__threadfence``. A line moves through memory as raw words, one
access per 16 bytes (``uint4``; ``uint2``, ``unsigned int`` or ``unsigned short`` for smaller
lines), its lanes unpacked from and packed into those words with shifts and bit casts, so every
element type takes the same path. From sm_80 an asynchronous copy is one ``cp.async`` (``.cg``
for 16-byte lines, ``.ca`` for 4 and 8), a commit ``cp.async.commit_group`` and a wait
``cp.async.wait_group n``; older targets copy when issued. Pure: imports no driver.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ruda_core.codegen import (
    BITS_ELEM,
    C99_KEYWORDS,
    CXX_KEYWORDS,
    MATH_NAMES,
    Dialect,
    MemSpace,
    Usage,
    words,
)
from ruda_core.ir import (
    BF16_CONFIGS,
    DYNAMIC_SHARED_ALIGN,
    F16_CONFIGS,
    MATRIX_OPS,
    PLANE_OPS,
    TF32_CONFIGS,
    WARPGROUP_OPS,
    Elem,
    Fragment,
    MatrixConfig,
    MatrixLayout,
    MatrixRole,
    Op,
)
from ruda_core.runtime.compiler import CompileOptions

from . import barrier, warpgroup

__all__ = ["CudaDialect", "CudaTarget", "wmma_configs"]

_TYPES = {
    Elem.BOOL: "bool",
    Elem.I8: "signed char",
    Elem.I16: "short",
    Elem.I32: "int",
    Elem.I64: "long long",
    Elem.U8: "unsigned char",
    Elem.U16: "unsigned short",
    Elem.U32: "unsigned int",
    Elem.U64: "unsigned long long",
    Elem.F16: "__half",
    Elem.BF16: "__nv_bfloat16",
    Elem.F32: "float",
    Elem.F64: "double",
}
#: Source spelling in the names of CUDA's conversion intrinsics (``__int2half_rn`` …).
_SOURCE = {
    Elem.F32: "float",
    Elem.I32: "int",
    Elem.U32: "uint",
    Elem.I64: "ll",
    Elem.U64: "ull",
    Elem.I16: "short",
    Elem.U16: "ushort",
    Elem.I8: "short",
    Elem.U8: "ushort",
    Elem.BOOL: "ushort",
}
_NARROW = {Elem.F16: "half", Elem.BF16: "bfloat16"}
_BIT_CASTS = {
    Elem.F32: ("__uint_as_float({})", "__float_as_uint({})"),
    Elem.F64: (
        "__longlong_as_double((long long){})",
        "(unsigned long long)__double_as_longlong({})",
    ),
    Elem.F16: ("__ushort_as_half({})", "__half_as_ushort({})"),
    Elem.BF16: ("__ushort_as_bfloat16({})", "__bfloat16_as_ushort({})"),
}
_INT_ATOMIC = {
    Op.ATOMIC_ADD: "atomicAdd({ptr}, {v})",
    Op.ATOMIC_SUB: "atomicSub({ptr}, {v})",
    Op.ATOMIC_SWAP: "atomicExch({ptr}, {v})",
    Op.ATOMIC_MIN: "atomicMin({ptr}, {v})",
    Op.ATOMIC_MAX: "atomicMax({ptr}, {v})",
    Op.ATOMIC_AND: "atomicAnd({ptr}, {v})",
    Op.ATOMIC_OR: "atomicOr({ptr}, {v})",
    Op.ATOMIC_XOR: "atomicXor({ptr}, {v})",
    Op.ATOMIC_CAS: "atomicCAS({ptr}, {cmp}, {v})",
}
_U32_ATOMIC = _INT_ATOMIC | {
    Op.ATOMIC_INC_WRAP: "atomicInc({ptr}, {v})",
    Op.ATOMIC_DEC_WRAP: "atomicDec({ptr}, {v})",
}
_ULL = "unsigned long long"
_U64_ATOMIC = _INT_ATOMIC | {Op.ATOMIC_SUB: "atomicAdd({ptr}, 0ULL - {v})"}
#: i64 through the unsigned forms (same bits), except min/max which have long long forms.
_I64_ATOMIC = {
    op: f"(long long){t}".replace("{ptr}", f"({_ULL}*){{ptr}}")
    .replace("{v}", f"({_ULL}){{v}}")
    .replace("{cmp}", f"({_ULL}){{cmp}}")
    for op, t in _U64_ATOMIC.items()
} | {Op.ATOMIC_MIN: "atomicMin({ptr}, {v})", Op.ATOMIC_MAX: "atomicMax({ptr}, {v})"}
#: Float elements with a native atomicAdd: (minimum arch, negated operand for atomic sub).
_FLOAT_ADD = {
    Elem.F32: (20, "-{v}"),
    Elem.F64: (60, "-{v}"),
    Elem.F16: (70, "__hneg({v})"),
    Elem.BF16: (80, "__hneg({v})"),
}
#: The lanes of the unit's warp that exist (a cube's last warp may be partial), and their mask.
_MASK = "ruda_plane_mask()"
_PARTIAL_LANES = """\
    const unsigned int units = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int unit = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    return min(units - (unit & ~31u), 32u);"""
#: In cubes of whole warps (``cube_units``): a constant mask, which NVRTC needs to emit a warp
#: intrinsic without a convergence check around it.
_WHOLE_LANES = "    return 32u;"
_PLANE_HELPERS = """\
static __device__ __forceinline__ unsigned int ruda_plane_lanes() {
{lanes}
}
static __device__ __forceinline__ unsigned int ruda_plane_mask() {
    return 0xffffffffu >> (32u - ruda_plane_lanes());
}"""
_SHUFFLE = {
    "xor": "__shfl_xor_sync",
    "up": "__shfl_up_sync",
    "down": "__shfl_down_sync",
    "idx": "__shfl_sync",
}
_REDUCE = {Op.PLANE_SUM: "add", Op.PLANE_MIN: "min", Op.PLANE_MAX: "max"}
_UNITS_REDUCE = {
    Op.SYNC_UNITS_COUNT: "(unsigned int)__syncthreads_count({v})",
    Op.SYNC_UNITS_AND: "(__syncthreads_and({v}) != 0)",
    Op.SYNC_UNITS_OR: "(__syncthreads_or({v}) != 0)",
}


#: The word type that moves a line of each size (bytes), at most 16 per access.
_LINE_WORDS = {2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}
_UINT = "unsigned int"


def _line_chunks(nbytes: int) -> tuple[str, int, list[str]]:
    """The access type of a line of ``nbytes``, the number of accesses, and the names of the
    32-bit words of one access (its fields; the access itself when it is one word or less)."""
    size = min(nbytes, 16)
    fields = {8: [".x", ".y"], 16: [".x", ".y", ".z", ".w"]}.get(size, [""])
    return _LINE_WORDS[size], nbytes // size, fields


_WMMA = "nvcuda::wmma"
_ROLES = {
    MatrixRole.A: f"{_WMMA}::matrix_a",
    MatrixRole.B: f"{_WMMA}::matrix_b",
    MatrixRole.ACCUMULATOR: f"{_WMMA}::accumulator",
}
_MEM_LAYOUT = {
    MatrixLayout.ROW_MAJOR: f"{_WMMA}::mem_row_major",
    MatrixLayout.COL_MAJOR: f"{_WMMA}::mem_col_major",
}


def wmma_configs(arch: int) -> frozenset[MatrixConfig]:
    """The cooperative-matrix configurations WMMA has for compute capability ``arch`` (e.g. 90):
    f16 from sm_70, bf16 and tf32 from sm_80."""
    configs: frozenset[MatrixConfig] = frozenset()
    if arch >= 70:
        configs |= F16_CONFIGS
    if arch >= 80:
        configs |= BF16_CONFIGS | TF32_CONFIGS
    return configs


def _shared_operand_load(frag: Fragment, name: str, pointer: str, stride: str) -> list[str]:
    """An ``A`` or ``B`` fragment loaded from shared memory by the ``.shared`` form of PTX's
    ``wmma.load`` into the fragment's registers. ``load_matrix_sync`` emits the generic form,
    which ptxas lowers to 32-bit generic loads (and transposes for a row-major ``B``) where the
    ``.shared`` form becomes ``ldmatrix``: a fraction of the instructions of each load."""
    if frag.tf32:
        kind, words = "tf32", frag.rows * frag.cols // 32
    elif frag.elem is Elem.F16:
        kind, words = "f16", 8  # PTX's f16 operands are eight f16x2 registers in every shape
    else:
        kind, words = "bf16", frag.rows * frag.cols // 64
    role = "a" if frag.role is MatrixRole.A else "b"
    order = "row" if frag.layout is MatrixLayout.ROW_MAJOR else "col"
    shape = f"m{frag.m}n{frag.n}k{frag.k}"
    outs = ", ".join(f"%{w}" for w in range(words))
    instr = (
        f"wmma.load.{role}.sync.aligned.{order}.{shape}.shared.{kind} "
        f"{{{outs}}}, [%{words}], %{words + 1};"
    )
    word = f"reinterpret_cast<unsigned*>({name}.x)"  # no temporary: no name to clash with
    regs = ", ".join(f'"=r"({word}[{w}])' for w in range(words))
    address = f"(unsigned)__cvta_generic_to_shared({pointer})"
    return [f'asm volatile("{instr}" : {regs} : "r"({address}), "r"((unsigned)({stride})));']


@dataclass(frozen=True, slots=True)
class CudaTarget:
    """What CUDA code is generated for (``CompileOptions.target``).

    :param arch: the compute capability as major * 10 + minor (``90`` for sm_90); the default is
        NVRTC's, sm_52.
    """

    arch: int = 52

    def __post_init__(self) -> None:
        if self.arch < 10:
            raise ValueError(f"CudaTarget arch={self.arch} is not a compute capability like 90")

    @classmethod
    def from_name(cls, name: str) -> CudaTarget:
        """The target of an architecture named like NVRTC's ``-arch`` (``"sm_90"``,
        ``"sm_90a"``, ``"compute_80"``) or a bare ``"90"``.

        :raises ValueError: for a name of another form.
        """
        match = re.fullmatch(r"(?:sm_|compute_)?(\d+)[a-z]?", name)
        if match is None:
            raise ValueError(f"CUDA architecture {name!r} is not like 'sm_90' or '90'")
        return cls(int(match.group(1)))


class CudaDialect(Dialect):
    """CUDA C++ for compute capability ``arch`` (e.g. 90 for sm_90)."""

    name = "CUDA C++"
    kernel_prefix = 'extern "C" __global__ void'
    function_prefix = "static __device__ __forceinline__"
    restrict = "__restrict__"
    shared_qualifier = "__shared__"
    dynamic_shared = "extern"
    uintptr = _ULL
    types = _TYPES
    positions = {
        "unit": "threadIdx.{xyz}",
        "cube": "blockIdx.{xyz}",
        "dim": "blockDim.{xyz}",
        "count": "gridDim.{xyz}",
    }
    has_rsqrt = True
    barrier = "__syncthreads();"
    printf = "printf"
    tensor_map_type = "const __grid_constant__ ruda_tensor_map"
    bit_casts = _BIT_CASTS
    reserved = (
        C99_KEYWORDS
        | CXX_KEYWORDS
        | MATH_NAMES
        | words(
            """
            threadIdx blockIdx blockDim gridDim warpSize dim3 half atomicAdd atomicSub
            atomicExch atomicMin atomicMax atomicAnd atomicOr atomicXor atomicCAS
            atomicInc atomicDec
            """
        )
    )

    max_static_shared_nbytes = 48 * 1024  # more is dynamic, opted into per function

    def dynamic_shared_decls(
        self, buffer: str, arrays: Sequence[tuple[str, str, str]], align_nbytes: int = 0
    ) -> list[str]:
        start = max(DYNAMIC_SHARED_ALIGN, align_nbytes)
        extern = f"extern __shared__ __align__({start}) unsigned char {buffer}[];"
        return [extern, *super().dynamic_shared_decls(buffer, arrays)]

    def __init__(self, arch: int = 52) -> None:
        self.arch = arch

    @classmethod
    def from_options(cls, options: CompileOptions) -> CudaDialect:
        """The dialect for the architecture of ``options.target`` (a :class:`CudaTarget`).

        :raises TypeError: when ``options.target`` is not a :class:`CudaTarget`.
        """
        return cls(options.target_as(CudaTarget).arch)

    def kernel_head(self, max_units: int | None, min_cubes: int | None = None) -> str:
        """``__launch_bounds__(max_units)`` where the kernel states a bound: NVRTC then keeps
        the registers per unit low enough for a cube of that many units to launch (and for
        ``min_cubes`` of them at once on a multiprocessor, where asked)."""
        if max_units is None:
            return self.kernel_prefix
        bounds = f"{max_units}, {min_cubes}" if min_cubes is not None else f"{max_units}"
        return f"{self.kernel_prefix} __launch_bounds__({bounds})"

    def compute_elem(self, elem: Elem) -> Elem:
        return Elem.F32 if elem in _NARROW else elem

    def widen(self, elem: Elem, expr: str) -> str:
        return f"__{_NARROW[elem]}2float({expr})" if elem in _NARROW else expr

    def narrow(self, elem: Elem, expr: str, source: Elem) -> str:
        if elem not in _NARROW:
            return super().narrow(elem, expr, source)
        if source is Elem.F64:
            return f"__double2{_NARROW[elem]}({expr})"
        spelling = _SOURCE[source]
        if source in (Elem.I8, Elem.U8, Elem.BOOL):
            expr = f"({'short' if source is Elem.I8 else 'unsigned short'}){expr}"
        return f"__{spelling}2{_NARROW[elem]}_rn({expr})"

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
        ctype, count, fields = _line_chunks(width * elem.nbytes)
        stmts = [f"const {ctype}* {temp} = (const {ctype}*){base} + ({index}) * {count};"]
        words = [f"{temp}[{c}]{f}" for c in range(count) for f in fields]
        bits_type = _TYPES[BITS_ELEM[elem.nbytes]]
        per_word = max(4 // elem.nbytes, 1)
        for k, lane in enumerate(lanes):
            if elem.nbytes == 8:
                bits = f"(({_ULL}){words[2 * k + 1]} << 32 | {words[2 * k]})"
            elif elem.nbytes == 4:
                bits = words[k]
            else:
                shift = 8 * elem.nbytes * (k % per_word)
                bits = f"({bits_type})({words[k // per_word]} >> {shift})"
            stmts.append(f"{lane} = {self.bits_to_value(elem, bits)};")
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
        ctype, count, fields = _line_chunks(width * elem.nbytes)
        bits = [self.value_to_bits(elem, lane) for lane in lanes]
        if elem.nbytes == 8:
            words = [w for b in bits for w in (f"({_UINT}){b}", f"({_UINT})({b} >> 32)")]
        elif elem.nbytes == 4:
            words = bits
        else:
            per_word = 4 // elem.nbytes
            words = [
                " | ".join(
                    f"(({_UINT}){b} << {8 * elem.nbytes * m})"
                    for m, b in enumerate(bits[j : j + per_word])
                )
                for j in range(0, len(bits), per_word)
            ]
        stmts = [f"{ctype}* {temp} = ({ctype}*){base} + ({index}) * {count};"]
        per_access = len(fields)
        for c in range(count):
            part = words[c * per_access : (c + 1) * per_access]
            if ctype.startswith("uint"):
                value = f"make_{ctype}({', '.join(part)})"
            else:
                value = f"({ctype})({part[0]})"
            stmts.append(f"{temp}[{c}] = {value};")
        return stmts

    def float_to_int(self, expr: str, source: Elem, target: Elem) -> str:
        src = "float" if source is Elem.F32 else "double"
        if target.bits < 32:
            return f"({_TYPES[target]})__{src}2int_rz({expr})"
        return f"__{src}2{_SOURCE[target]}_rz({expr})"

    def float_special(self, value: float, elem: Elem) -> str:
        if elem is Elem.F32:
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            return f"__uint_as_float(0x{bits:08x}u)"
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"__longlong_as_double(0x{bits:016x}LL)"

    def popcount_native(self, word: Elem) -> str | None:
        return "__popc({v})" if word is Elem.U32 else "__popcll({v})"

    def mul_exact(self, a: str, b: str, elem: Elem) -> str:
        return f"__{'f' if elem is Elem.F32 else 'd'}mul_rn({a}, {b})"

    def int_extremum(self, op: Op, elem: Elem, a: str, b: str) -> str:
        """The conditional expression, through an identity byte permutation (one ``PRMT``) for
        32-bit and narrower integers: NVIDIA's PTX assembler (CUDA 13, sm_90) fuses
        ``max(max(a, -t), b)``, or two ``min``, into one operation that drops the negation;
        the permutation keeps the two apart."""
        extremum = super().int_extremum(op, elem, a, b)
        if elem.bits > 32:
            return extremum
        return f"(({self.type_name(elem)})__byte_perm((unsigned int){extremum}, 0u, 0x3210u))"

    def plane_dim(self) -> str:
        return "warpSize"

    def units_reduce(self, op: Op) -> str | None:
        return _UNITS_REDUCE[op]

    def plane_lanes(self) -> str:
        return "ruda_plane_lanes()"

    def sync_plane(self) -> str:
        return f"__syncwarp({_MASK});"

    def fence_units(self) -> str:
        return "__threadfence_block();"

    def fence_device(self) -> str:
        return "__threadfence();"

    def atomic_native(self, op: Op, elem: Elem, space: MemSpace) -> str | None:
        if elem is Elem.U32:
            return _U32_ATOMIC.get(op)
        if elem is Elem.I32:
            return _INT_ATOMIC.get(op)
        if elem is Elem.U64:
            return _U64_ATOMIC.get(op)
        if elem is Elem.I64:
            return _I64_ATOMIC.get(op)
        if elem is Elem.F32 and op is Op.ATOMIC_SWAP:
            return "atomicExch({ptr}, {v})"
        if elem in _FLOAT_ADD and op in (Op.ATOMIC_ADD, Op.ATOMIC_SUB):
            arch, negated = _FLOAT_ADD[elem]
            if self.arch >= arch:
                return "atomicAdd({ptr}, " + ("{v}" if op is Op.ATOMIC_ADD else negated) + ")"
        return None

    def atomic_cas_word(self, bits: Elem, space: MemSpace) -> str:
        return "atomicCAS({ptr}, {cmp}, {v})"

    def atomic_word_pointer(self, bits: Elem, space: MemSpace) -> str:
        return f"{_TYPES[bits]}*"

    def plane_native(self, op: Op, elem: Elem) -> str | None:
        if op is Op.PLANE_BALLOT:
            return f"__ballot_sync({_MASK}, {{v}})"
        if op is Op.PLANE_ELECT:
            return "(__ffs(__activemask()) - 1 == (int){lane})"
        if op in (Op.PLANE_ALL, Op.PLANE_ANY):
            return f"(__{'all' if op is Op.PLANE_ALL else 'any'}_sync({_MASK}, {{v}}) != 0)"
        if op in (Op.PLANE_BROADCAST, Op.PLANE_SHUFFLE):
            return self.shuffle("idx", elem, "{v}", "{lane}")
        if op in _REDUCE and elem in (Elem.I32, Elem.U32) and self.arch >= 80:
            return f"__reduce_{_REDUCE[op]}_sync({_MASK}, {{v}})"
        return None

    def shuffle(self, mode: str, elem: Elem, value: str, arg: str) -> str:
        fn = _SHUFFLE[mode]
        if elem is Elem.BOOL:
            return f"({fn}({_MASK}, (int){value}, {arg}) != 0)"
        if elem.is_int and elem.bits < 32:
            wide = "int" if elem.is_signed else "unsigned int"
            return f"({_TYPES[elem]}){fn}({_MASK}, ({wide}){value}, {arg})"
        return f"{fn}({_MASK}, {value}, {arg})"

    @property
    def async_copies(self) -> bool:  # type: ignore[override]  # cp.async exists from sm_80
        return self.arch >= 80

    def copy_async(
        self, elem: Elem, dst: str, dst_index: str, src: str, src_index: str, width: int
    ) -> list[str]:
        nbytes = width * elem.nbytes
        # .cg (L2 only) takes 16 bytes alone; L2::128B fetches the whole line the next unit reads
        cache = "cg" if nbytes == 16 else "ca"
        hint = ".L2::128B" if nbytes == 16 else ""
        # the array's shared address once (loop-invariant) plus a 32-bit byte offset: shared
        # memory is under 4 GiB, so no 64-bit generic address is computed per copy
        to = f"(unsigned)__cvta_generic_to_shared({dst}) + ({dst_index}) * {nbytes}u"
        source = f"{src} + ({src_index}) * {width}"
        instr = f"cp.async.{cache}.shared.global{hint} [%0], [%1], {nbytes};"
        return [f'asm volatile("{instr}" :: "r"({to}), "l"({source}) : "memory");']

    def async_commit(self) -> str:
        return 'asm volatile("cp.async.commit_group;" ::: "memory");'

    def async_wait(self, pending: int) -> str:
        return f'asm volatile("cp.async.wait_group {pending};" ::: "memory");'

    matrix_align_nbytes = 32  # load_matrix_sync and store_matrix_sync need 256-bit pointers

    def matrix_decl(self, frag: Fragment, name: str) -> str:
        elem = f"{_WMMA}::precision::tf32" if frag.tf32 else _TYPES[frag.elem]
        layout = f", {_WMMA}::{frag.layout}" if frag.role is not MatrixRole.ACCUMULATOR else ""
        shape = f"{frag.m}, {frag.n}, {frag.k}"
        return f"{_WMMA}::fragment<{_ROLES[frag.role]}, {shape}, {elem}{layout}> {name};"

    def matrix_fill(self, frag: Fragment, name: str, value: str) -> list[str]:
        if frag.tf32:
            value = f"{_WMMA}::__float_to_tf32({value})"
        return [f"{_WMMA}::fill_fragment({name}, {value});"]

    def matrix_load(
        self,
        frag: Fragment,
        name: str,
        pointer: str,
        stride: str,
        layout: MatrixLayout,
        space: MemSpace = MemSpace.GLOBAL,
    ) -> list[str]:
        if frag.role is MatrixRole.ACCUMULATOR:
            return [
                f"{_WMMA}::load_matrix_sync({name}, {pointer}, {stride}, {_MEM_LAYOUT[layout]});"
            ]
        if space is MemSpace.SHARED:
            stmts = _shared_operand_load(frag, name, pointer, stride)
        else:
            stmts = [f"{_WMMA}::load_matrix_sync({name}, {pointer}, {stride});"]
        if frag.tf32:  # WMMA leaves the rounding of f32 inputs to the kernel
            stmts.append(
                f"for (int t = 0; t < {name}.num_elements; t++) "
                f"{name}.x[t] = {_WMMA}::__float_to_tf32({name}.x[t]);"
            )
        return stmts

    def matrix_store(
        self,
        frag: Fragment,
        name: str,
        pointer: str,
        stride: str,
        layout: MatrixLayout,
        space: MemSpace = MemSpace.GLOBAL,
    ) -> list[str]:
        return [f"{_WMMA}::store_matrix_sync({pointer}, {name}, {stride}, {_MEM_LAYOUT[layout]});"]

    def matrix_execute(self, a: str, b: str, c: str, d: str) -> list[str]:
        return [f"{_WMMA}::mma_sync({d}, {a}, {b}, {c});"]

    def matrix_cast(self, dst: Fragment, dst_name: str, src: Fragment, src_name: str) -> list[str]:
        # accumulators of one shape map their elements to lanes alike, whatever their type
        value = self.widen(src.elem, f"{src_name}.x[t]")  # f16 or f32 -> float
        if dst.elem in _NARROW:
            value = self.narrow(dst.elem, value, Elem.F32)
        return [f"for (int t = 0; t < {dst_name}.num_elements; t++) {dst_name}.x[t] = {value};"]

    def warpgroup_decl(self, acc: Fragment, name: str) -> str:
        return warpgroup.accumulator_decl(acc, name)

    def warpgroup_fill(self, acc: Fragment, name: str, value: str) -> list[str]:
        return warpgroup.fill(acc, name, value)

    def warpgroup_fence(self, accumulators: Sequence[tuple[Fragment, str]]) -> list[str]:
        return warpgroup.fence(accumulators)

    def warpgroup_mma(
        self, acc: Fragment, name: str, elem: Elem, a: str, b: str, block: int
    ) -> list[str]:
        return warpgroup.mma(acc, name, elem, a, b, block)

    def warpgroup_commit(self) -> list[str]:
        return warpgroup.commit()

    def warpgroup_wait(
        self, pending: int, accumulators: Sequence[tuple[Fragment, str]]
    ) -> list[str]:
        return warpgroup.wait(pending, accumulators)

    def warpgroup_store(
        self, acc: Fragment, name: str, pointer: str, stride: str, rows: str, cols: str
    ) -> list[str]:
        return warpgroup.store(acc, name, pointer, stride, rows, cols)

    def barrier_op(self, op: Op, bar: str, value: str) -> list[str]:
        return barrier.barrier_op(op, bar, value)

    def bulk_copy(self, dst: str, src: str, nbytes: str, bar: str) -> list[str]:
        return barrier.bulk_copy(dst, src, nbytes, bar)

    def tensor_copy(self, dst: str, tensor_map: str, row: str, col: str, bar: str) -> list[str]:
        return barrier.tensor_copy(dst, tensor_map, row, col, bar)

    def bulk_store(self, dst: str, src: str, nbytes: str) -> list[str]:
        return barrier.bulk_store(dst, src, nbytes)

    def bulk_group(self, op: Op, pending: int) -> list[str]:
        return barrier.bulk_group(op, pending)

    def preamble(self, usage: Usage) -> list[str]:
        lines = []
        if Elem.F16 in usage.elems:
            lines.append("#include <cuda_fp16.h>")
        if Elem.BF16 in usage.elems:
            lines.append("#include <cuda_bf16.h>")
        if usage.uses(MATRIX_OPS):
            lines.append("#include <mma.h>")
        if usage.uses(PLANE_OPS):
            if lines:
                lines.append("")
            whole = usage.cube_units is not None and usage.cube_units % 32 == 0
            lanes = _WHOLE_LANES if whole else _PARTIAL_LANES
            lines.append(_PLANE_HELPERS.replace("{lanes}", lanes))
        if usage.uses(WARPGROUP_OPS):
            if lines:
                lines.append("")
            lines.append(warpgroup.DESCRIPTOR_HELPER)
        if usage.uses({Op.TENSOR_COPY}):
            lines.append(barrier.TENSOR_MAP_STRUCT)
        return lines
