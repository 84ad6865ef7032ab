"""The names of a WGSL module: the words user names must not take (WGSL's keywords and
reserved words, the builtin functions the emitter calls, its own globals) and the position
builtins every kernel declares, each with its formula. Imports no driver.
"""

from __future__ import annotations

from ruda_core.codegen.names import words

from .layout import record_word

__all__ = ["BUILTINS", "RESERVED"]

#: WGSL keywords, reserved words, the builtin functions the emitter calls and the names it
#: declares.
RESERVED = words(
    """
    alias break case const const_assert continue continuing default diagnostic discard else
    enable false fn for if let loop override requires return struct switch true var while
    array atomic bool f16 f32 f64 i32 i64 u32 u64 mat2x2 mat3x3 mat4x4 ptr sampler texture_2d
    vec2 vec3 vec4 NULL Self abstract active as asm async attribute auto await become cast
    catch class co_await co_return co_yield coherent column_major common compile
    compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype
    delete demote demote_to_helper do dynamic_cast enum explicit export extends extern external
    fallthrough filter final finally friend from fxgroup get goto groupshared highp impl
    implements import inline instanceof interface layout lowp macro macro_rules match mediump
    meta mod module move mut mutable namespace new nil noexcept noinline nointerpolation
    noperspective null nullptr of operator package packoffset partition pass patch pixelfragment
    precise precision premerge priv protected pub public readonly ref regardless register
    reinterpret_cast require resource restrict self set shared sizeof smooth snorm static
    static_assert static_cast std subroutine super target template this thread_local throw trait
    try type typedef typeid typename typeof union unless unorm unsafe unsized use using varying
    virtual volatile wgsl where with writeonly yield
    abs acos acosh asin asinh atan atan2 atanh ceil clamp cos cosh countLeadingZeros
    countOneBits countTrailingZeros exp exp2 floor fma fract log log2 max min pow reverseBits
    round select sign sin sinh sqrt tan tanh trunc bitcast atomicLoad atomicStore atomicAdd
    atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor atomicExchange
    atomicCompareExchangeWeak workgroupBarrier storageBarrier main P WX WY WZ
    subgroupAdd subgroupMul subgroupMin subgroupMax subgroupAll subgroupAny subgroupShuffle
    subgroupBallot subgroupInclusiveAdd subgroupExclusiveAdd subgroupBarrier pack2x16float
    unpack2x16float frexp ldexp lid wid nw PLANE_DIM UNIT_POS_PLANE
    """
)
#: The position builtins in declaration order (each after those its formula names).
BUILTINS = [
    ("UNIT_POS_X", "lid.x"),
    ("UNIT_POS_Y", "lid.y"),
    ("UNIT_POS_Z", "lid.z"),
    # a launch of one cube along z may fold x's cubes beyond a dispatch's into z (the server's
    # ``dispatches``): there z counts rows of ``nw.x`` cubes along x
    ("FOLDED", f"{record_word(3)} == 1u"),
    ("RUDA_POS_X", f"wid.x + {record_word(0)} + select(0u, wid.z * nw.x, FOLDED)"),
    ("RUDA_POS_Y", "wid.y"),
    ("RUDA_POS_Z", "select(wid.z, 0u, FOLDED)"),
    ("RUDA_DIM_X", "WX"),
    ("RUDA_DIM_Y", "WY"),
    ("RUDA_DIM_Z", "WZ"),
    ("RUDA_COUNT_X", record_word(1)),
    ("RUDA_COUNT_Y", record_word(2)),
    ("RUDA_COUNT_Z", record_word(3)),
    ("UNIT_POS", "(UNIT_POS_Z * RUDA_DIM_Y + UNIT_POS_Y) * RUDA_DIM_X + UNIT_POS_X"),
    ("RUDA_POS", "(RUDA_POS_Z * RUDA_COUNT_Y + RUDA_POS_Y) * RUDA_COUNT_X + RUDA_POS_X"),
    ("RUDA_DIM", "RUDA_DIM_X * RUDA_DIM_Y * RUDA_DIM_Z"),
    ("RUDA_COUNT", "RUDA_COUNT_X * RUDA_COUNT_Y * RUDA_COUNT_Z"),
    ("ABSOLUTE_POS_X", "RUDA_POS_X * RUDA_DIM_X + UNIT_POS_X"),
    ("ABSOLUTE_POS_Y", "RUDA_POS_Y * RUDA_DIM_Y + UNIT_POS_Y"),
    ("ABSOLUTE_POS_Z", "RUDA_POS_Z * RUDA_DIM_Z + UNIT_POS_Z"),
    (
        "ABSOLUTE_POS",
        "(ABSOLUTE_POS_Z * RUDA_COUNT_Y * RUDA_DIM_Y + ABSOLUTE_POS_Y) * RUDA_COUNT_X "
        "* RUDA_DIM_X + ABSOLUTE_POS_X",
    ),
]
RESERVED |= {name for name, _ in BUILTINS}
