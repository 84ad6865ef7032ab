"""The names of a WGSL module: the words user names must not take (WGSL's keywords and
reserved words, the builtin functions the emitter calls, its own globals) and the position
builtins every kernel declares, each with its formula. Imports no driver.
"""

from __future__ import annotations

from ruda_core.codegen.names import C99_KEYWORDS, CXX_KEYWORDS, MATH_NAMES, words
from ruda_core.codegen.structured import DERIVED_POSITIONS

from .layout import record_word

__all__ = ["BUILTINS", "RESERVED"]

#: WGSL keywords, reserved words (those of C and C++ among them), the builtin functions the
#: emitter calls and the names it declares.
_WGSL = words(
    """
    alias const_assert continuing diagnostic discard enable fn let loop override var array
    atomic f16 f32 f64 i32 i64 u32 u64 mat2x2 mat3x3 mat4x4 ptr sampler texture_2d vec2 vec3
    vec4 Self abstract active as async attribute await become cast coherent column_major common
    compile compile_fragment crate debugger demote demote_to_helper extends external fallthrough
    filter final finally from fxgroup get groupshared highp impl implements import instanceof
    interface layout lowp macro macro_rules match mediump meta mod module move mut nil noinline
    nointerpolation noperspective null of package packoffset partition pass patch pixelfragment
    precise precision premerge priv pub readonly ref regardless require resource self set shared
    smooth snorm std subroutine super target trait type typeof unless unorm unsafe unsized use
    varying wgsl where with writeonly yield clamp countLeadingZeros countOneBits
    countTrailingZeros fract reverseBits round select sign bitcast atomicLoad atomicStore
    atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor atomicExchange
    atomicCompareExchangeWeak workgroupBarrier storageBarrier P WX WY WZ subgroupAdd subgroupMul
    subgroupMin subgroupMax subgroupAll subgroupAny subgroupShuffle subgroupBallot
    subgroupInclusiveAdd subgroupExclusiveAdd subgroupBarrier pack2x16float unpack2x16float
    frexp ldexp lid wid nw SIZES PLANE_DIM UNIT_POS_PLANE sg_width sg_lane
    """
)
#: ``_`` alone (Python's name for an unused loop variable) is no WGSL identifier
RESERVED = C99_KEYWORDS | CXX_KEYWORDS | MATH_NAMES | _WGSL | {"_"}
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
    ("RUDA_DIM_X", "SIZES.x"),
    ("RUDA_DIM_Y", "SIZES.y"),
    ("RUDA_DIM_Z", "SIZES.z"),
    ("RUDA_COUNT_X", record_word(1)),
    ("RUDA_COUNT_Y", record_word(2)),
    ("RUDA_COUNT_Z", record_word(3)),
    *DERIVED_POSITIONS,
]
RESERVED |= {name for name, _ in BUILTINS}
