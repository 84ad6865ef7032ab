"""CUDA's lowering of warpgroup matrices (``WGMMA_*``, see :mod:`ruda_core.ir.ops`) to inline
PTX of ``sm_90a``: ``wgmma.fence``, ``wgmma.mma_async``, ``wgmma.commit_group`` and
``wgmma.wait_group``.

An accumulator of ``64 x n`` is ``n / 2`` ``float`` registers per unit: unit ``t`` of the
warpgroup (warp ``w = t / 32``, lane ``l = t % 32``) holds, as its element ``i``, row
``16w + l/4 + 8((i/2) % 2)`` and column ``8(i/4) + 2(l % 4) + i % 2`` (PTX's layout of the
``m64nNk16`` ``f32`` accumulator).

Operands are read through shared-memory matrix descriptors (64 bits: start address, leading
and stride byte offsets, each ``>> 4``, and the layout, 1 = 128-byte swizzle, in bits 62-63).
``A`` is K-major: rows of 128 bytes, groups of 8 rows 1024 bytes apart (the stride offset; the
leading offset is unused and 1). ``B`` is N-major (``tnspB = 1``): rows of 64 columns (one
``k`` each), groups of 8 ``k`` 1024 bytes apart (the stride offset) and blocks of 64 columns
``2 * block`` bytes apart (the leading offset). A step of 16 along ``k`` within a swizzled row
moves ``A``'s start by 32 bytes (the hardware applies the swizzle to the address it computes,
as CUTLASS's descriptor iterators rely on).

``wgmma.fence`` is preceded by ``fence.proxy.async.shared::cta``, which makes the unit's
earlier generic writes of shared memory (stores and ``cp.async``) visible to the tensor core's
reads, and by an empty ``asm`` on every accumulator register, so that the compiler completes
their writes (a fill) before it and moves none past a product. After ``wgmma.wait_group 0`` the
same ``asm`` tells the compiler that their values changed there, so no read of them moves
above the wait; after a wait that leaves groups pending, ptxas adds a wait before any read of
a register that a pending product writes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ruda_core.ir import Elem, Fragment

__all__ = [
    "DESCRIPTOR_HELPER",
    "accumulator_decl",
    "commit",
    "fence",
    "fill",
    "mma",
    "store",
    "wait",
]

#: The device function building a 128-byte-swizzle descriptor (in the preamble).
DESCRIPTOR_HELPER = """\
static __device__ __forceinline__ unsigned long long ruda_wgmma_desc(
    const void* p, unsigned lead_nbytes, unsigned stride_nbytes) {
  const unsigned address = (unsigned)__cvta_generic_to_shared(p);
  return (unsigned long long)((address & 0x3FFFFu) >> 4)
       | ((unsigned long long)((lead_nbytes & 0x3FFFFu) >> 4) << 16)
       | ((unsigned long long)((stride_nbytes & 0x3FFFFu) >> 4) << 32)
       | (1ull << 62);
}"""

_PTX_TYPES = {Elem.BF16: "bf16", Elem.F16: "f16"}
#: Bytes between groups of 8 rows of a swizzled operand.
_GROUP_NBYTES = 1024


def accumulator_decl(acc: Fragment, name: str) -> str:
    return f"float {name}[{acc.n // 2}];"


def fill(acc: Fragment, name: str, value: str) -> list[str]:
    regs = acc.n // 2
    return [
        "#pragma unroll",
        f"for (int ruda_i = 0; ruda_i < {regs}; ruda_i++) {name}[ruda_i] = {value};",
    ]


def _pin(accumulators: Sequence[tuple[Fragment, str]]) -> list[str]:
    """An empty ``asm`` reading and writing every register of the accumulators: the compiler
    keeps their values in place across it (CUTLASS's ``warpgroup_fence_operand``)."""
    lines = []
    for acc, name in accumulators:
        lines.append("#pragma unroll")
        lines.append(
            f"for (int ruda_i = 0; ruda_i < {acc.n // 2}; ruda_i++) "
            f'asm volatile("" : "+f"({name}[ruda_i]) :: "memory");'
        )
    return lines


def fence(accumulators: Sequence[tuple[Fragment, str]]) -> list[str]:
    return [
        *_pin(accumulators),
        'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");',
        'asm volatile("wgmma.fence.sync.aligned;" ::: "memory");',
    ]


def mma(acc: Fragment, name: str, elem: Elem, a: str, b: str, block: int) -> list[str]:
    regs = acc.n // 2
    t = _PTX_TYPES[elem]
    d = ", ".join(f"%{k}" for k in range(regs))
    ptx = (
        f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
        f"wgmma.mma_async.sync.aligned.m64n{acc.n}k16.f32.{t}.{t} "
        f"{{{d}}}, %{regs}, %{regs + 1}, p, 1, 1, 0, 1;\\n}}\\n"
    )
    outputs = ", ".join(f'"+f"({name}[{k}])' for k in range(regs))
    return [
        "{",
        f"  const unsigned long long ruda_da = ruda_wgmma_desc({a}, 16u, {_GROUP_NBYTES}u);",
        f"  const unsigned long long ruda_db = ruda_wgmma_desc({b}, {2 * block}u, "
        f"{_GROUP_NBYTES}u);",
        f'  asm volatile("{ptx}"',
        f"    : {outputs}",
        '    : "l"(ruda_da), "l"(ruda_db), "r"(1));',
        "}",
    ]


def commit() -> list[str]:
    return ['asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");']


def wait(pending: int, accumulators: Sequence[tuple[Fragment, str]]) -> list[str]:
    lines = [f'asm volatile("wgmma.wait_group.sync.aligned {pending};" ::: "memory");']
    # after wait(0) every accumulator is complete; with groups left pending, ptxas itself holds
    # back a read of a register that a pending product writes (it adds a wait_group there)
    return lines + _pin(accumulators) if pending == 0 else lines


def store(acc: Fragment, name: str, pointer: str, stride: str, rows: str, cols: str) -> list[str]:
    """Each unit's pairs of elements (columns ``c``, ``c + 1`` of one row, ``c`` even): one
    8-byte store where the pair starts 8-byte aligned (the tile's start is, and ``stride`` is
    even) and lies inside ``cols``, else one store per element inside."""
    unit = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
    return [
        "{",
        f"  const unsigned ruda_t = {unit} % 128u;",
        "  const unsigned ruda_r0 = 16u * (ruda_t / 32u) + (ruda_t % 32u) / 4u;",
        "  const unsigned ruda_c0 = 2u * (ruda_t % 4u);",
        f"  const unsigned ruda_stride = {stride};",
        f"  const unsigned ruda_rows = {rows};",
        f"  const unsigned ruda_cols = {cols};",
        f"  float* const ruda_out = {pointer};",
        "  const bool ruda_pairs = ((unsigned long long)ruda_out % 8u == 0u)"
        " && (ruda_stride % 2u == 0u);",
        "  #pragma unroll",
        f"  for (int ruda_i = 0; ruda_i < {acc.n // 2}; ruda_i += 2) {{",
        "    const unsigned ruda_r = ruda_r0 + 8u * ((ruda_i / 2) % 2);",
        "    const unsigned ruda_c = ruda_c0 + 8u * (ruda_i / 4);",
        "    if (ruda_r < ruda_rows) {",
        "      float* const ruda_p = ruda_out + ruda_r * ruda_stride + ruda_c;",
        "      if (ruda_pairs && ruda_c + 1u < ruda_cols) {",
        f"        *(float2*)ruda_p = make_float2({name}[ruda_i], {name}[ruda_i + 1]);",
        "      } else {",
        f"        if (ruda_c < ruda_cols) ruda_p[0] = {name}[ruda_i];",
        f"        if (ruda_c + 1u < ruda_cols) ruda_p[1] = {name}[ruda_i + 1];",
        "      }",
        "    }",
        "  }",
        "}",
    ]
