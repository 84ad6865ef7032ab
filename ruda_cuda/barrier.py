"""CUDA's lowering of asynchronous barriers and bulk copies (``MBAR_*`` and ``BULK_COPY``, see
:mod:`ruda_core.ir.ops`) to inline PTX of ``sm_90``: ``mbarrier.init``, ``mbarrier.arrive``
(with ``.expect_tx``), a ``mbarrier.try_wait.parity`` loop and
``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`` and its 2-D tensor form
(``TENSOR_COPY``: ``cp.async.bulk.tensor.2d`` of a ``__grid_constant__`` tensor map argument,
:data:`TENSOR_MAP_STRUCT`, which the host encodes: :mod:`.tensor_map`); bulk stores to
``cp.async.bulk.global.shared::cta.bulk_group`` with ``cp.async.bulk.commit_group``,
``cp.async.bulk.wait_group.read`` and ``fence.proxy.async.shared::cta``.

A barrier is a ``uint64_t`` word of shared memory (8-byte aligned as its type is); every
instruction takes its 32-bit shared address (``__cvta_generic_to_shared``). An init is followed
by ``fence.mbarrier_init.release.cluster``, which makes it visible to the bulk copies' proxy
as well; the kernel's ``sync_units()`` after it publishes it to the other units. A wait spins
on ``try_wait.parity``, which itself suspends the unit for a while before it reports that the
phase is not complete yet.
"""

from __future__ import annotations

from ruda_core.ir import Op

__all__ = [
    "TENSOR_MAP_STRUCT",
    "barrier_op",
    "bulk_copy",
    "bulk_group",
    "bulk_store",
    "tensor_copy",
]

#: The C type of a tensor map argument: the driver's 128 opaque bytes, 64-byte aligned (NVRTC
#: has no ``cuda.h`` to take ``CUtensorMap`` from).
TENSOR_MAP_STRUCT = "struct __align__(64) ruda_tensor_map { unsigned long long bits[16]; };"


def _shared(pointer: str) -> str:
    return f"(unsigned)__cvta_generic_to_shared({pointer})"


def barrier_op(op: Op, bar: str, value: str) -> list[str]:
    addr = _shared(bar)
    if op is Op.MBAR_INIT:
        return [
            f'asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"({addr}), '
            f'"r"((unsigned)({value})) : "memory");',
            'asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");',
        ]
    if op is Op.MBAR_ARRIVE:
        return [
            f'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"({addr}) : "memory");'
        ]
    if op is Op.MBAR_EXPECT_TX:
        return [
            f'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: '
            f'"r"({addr}), "r"((unsigned)({value})) : "memory");'
        ]
    return [
        "{",
        f"  const unsigned ruda_bar = {addr};",
        f"  const unsigned ruda_parity = (unsigned)({value}) & 1u;",
        "  unsigned ruda_done = 0u;",
        "  do {",
        '    asm volatile("{\\n.reg .pred p;\\n'
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n"
        'selp.u32 %0, 1, 0, p;\\n}\\n"',
        '      : "=r"(ruda_done) : "r"(ruda_bar), "r"(ruda_parity) : "memory");',
        "  } while (!ruda_done);",
        "}",
    ]


def bulk_copy(dst: str, src: str, nbytes: str, bar: str) -> list[str]:
    return [
        'asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes '
        '[%0], [%1], %2, [%3];"',
        f'  :: "r"({_shared(dst)}), "l"({src}), "r"((unsigned)({nbytes})), "r"({_shared(bar)})',
        '  : "memory");',
    ]


def tensor_copy(dst: str, tensor_map: str, row: str, col: str, bar: str) -> list[str]:
    return [
        'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes '
        '[%0], [%1, {%2, %3}], [%4];"',
        f'  :: "r"({_shared(dst)}), "l"((unsigned long long)&{tensor_map}), '
        f'"r"((int)({col})), "r"((int)({row})), "r"({_shared(bar)})',
        '  : "memory");',
    ]


def bulk_store(dst: str, src: str, nbytes: str) -> list[str]:
    return [
        'asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"',
        f'  :: "l"({dst}), "r"({_shared(src)}), "r"((unsigned)({nbytes})) : "memory");',
    ]


def bulk_group(op: Op, pending: int) -> list[str]:
    if op is Op.BULK_FENCE:
        return ['asm volatile("fence.proxy.async.shared::cta;" ::: "memory");']
    if op is Op.BULK_COMMIT:
        return ['asm volatile("cp.async.bulk.commit_group;" ::: "memory");']
    return [f'asm volatile("cp.async.bulk.wait_group.read {pending};" ::: "memory");']
