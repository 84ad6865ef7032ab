"""``matmul``: the product of two row-major matrices, with f32 sums and an f32 result.

Candidates, chosen per device and problem size by the autotuner (:mod:`ruda_core.autotune`) and
remembered in its persistent cache: warpgroup-matrix kernels (``wgmma``, Hopper's
``wgmma.mma_async``) for f16 and bf16 where the device has ``Feature.WARPGROUP_MMA``,
cooperative-matrix kernels (``cmma``, tensor cores through
WMMA on CUDA) in several block tiles where the device has 16 x 16 matrices of the input type,
with two shared stages staged through registers or three and four filled by asynchronous copies,
and register-blocked fused-multiply-add kernels, which every device runs, each left out where
its cube needs more units or shared memory than the device has. Each launch picks the kernel's
specialisations from the shape: 16-byte global lines where rows allow them, and the unchecked
interior variant where the extents are multiples of the block tile. f32 input uses tf32
matrices only when the caller allows it, since they round the inputs to 10 fraction bits. This
module launches the kernels of :mod:`.matmul_kernels` and :mod:`.matmul_warpgroup`; it never
imports a driver.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple, overload

import numpy as np

from ..autotune import Tunable, TunableSet, Tuner, anchor
from ..ir import Elem, MatrixConfig, MatrixElem
from ..lang import ArrayArg
from ..runtime import (
    ComputeClient,
    Feature,
    LaunchConfigError,
    LayoutError,
    RudaCount,
    RudaDim,
    UnsupportedFeature,
)
from ..runtime.layer_norm_args import TensorBuffer
from ..tensor import RudaTensor
from .matmul_kernels import OUT_PAD, PAD, matmul_cmma, matmul_fma, matmul_pipelined
from .matmul_warpgroup import BK as WARPGROUP_BK
from .matmul_warpgroup import matmul_warpgroup, matmul_warpgroup_tma
from .operands import Operand, as_buffer, check_device, check_float, client_and_operands

__all__ = ["matmul"]

FmaShape = tuple[int, int, int, int, int, int]
#: FMA candidates ``(BM, BN, BK, RM, RN, CUBES)``: a ``BM x BN`` block of the output per cube
#: of ``(BM/RM) x (BN/RN)`` units, each summing ``RM x RN`` outputs over ``BK``-deep stages,
#: built so that ``CUBES`` cubes fit a multiprocessor (:func:`.matmul_fma`).
FMA_SHAPES = (
    (128, 128, 8, 8, 8, 2),
    (128, 128, 16, 8, 8, 2),
    (64, 64, 8, 4, 4, 1),
    (32, 32, 8, 2, 2, 1),
)
#: cmma candidates ``(FM, FN, WM, WN, BK_BYTES)``: ``WM x WN`` planes per cube, each holding
#: ``FM x FN`` accumulators of 16 x 16, so a ``WM*FM*16 x WN*FN*16`` block of the output per
#: cube, over shared stages ``BK_BYTES`` deep in bytes of an input row (64: 32 elements of f16
#: or bf16, 16 of f32, whose stages of 32 would not leave the registers for 64 x 64 per plane).
#: A stage of 128 bytes gives each stage twice the products to hide the next stage's fetch
#: behind: on the H200 it made 64 x 64 tiles 11% faster (two stages), and 128 x 128 ones, which
#: fit only one such stage in 48 KiB of shared memory, 24% slower, so only 64 x 64 has it.
CMMA_SHAPES = (
    (4, 2, 2, 4, 64),
    (4, 4, 2, 2, 64),
    (4, 4, 2, 4, 64),
    (4, 4, 4, 2, 64),
    (2, 2, 2, 2, 64),
    (2, 2, 2, 2, 128),
)
#: Pipelined cmma candidates ``(FM, FN, WM, WN, BK_BYTES, STAGES, PREFETCH)``: the tiles of
#: :data:`CMMA_SHAPES`, with up to ``STAGES`` shared stages filled by asynchronous copies (fewer
#: where the device's shared memory is smaller, at least 2). With the opt-in shared memory of
#: CUDA (227 KiB on the H200) four stages of 128 x 256 (or 256 x 128) blocks of 8 planes fit,
#: and three stages 128 bytes deep; two cubes of 128 x 128 blocks share one multiprocessor.
#:
#: ``PREFETCH`` loads each step's fragments while the step before is multiplied (a second set
#: of fragments, so more registers) and closes a stage's barrier two steps early. On the H200
#: it made the 64-deep 128 x 256 and 256 x 128 blocks of 8 planes the fastest (bf16 at 8192^3:
#: 2.65 ms, against 3.09-3.41 for those blocks without it and 2.88 for the best 128 x 128
#: block); with 32-deep stages, or on 128 x 128 blocks, it came out no faster than that 2.88,
#: so those have no such candidate.
PIPELINED_SHAPES = (
    (4, 4, 2, 4, 64, 4, False),
    (4, 4, 4, 2, 64, 4, False),
    (4, 4, 2, 4, 128, 3, False),
    (4, 4, 2, 4, 128, 4, False),
    (4, 4, 4, 2, 128, 3, False),
    (4, 4, 2, 2, 64, 4, False),
    (4, 4, 2, 2, 128, 3, False),
    (4, 4, 2, 4, 128, 3, True),
    (4, 4, 4, 2, 128, 3, True),
    (4, 2, 2, 4, 64, 4, False),
    (4, 2, 2, 4, 128, 3, False),
)
#: Warpgroup candidates ``(WG, BN, STAGES)`` of :func:`.matmul_warpgroup` (bf16 and f16 on a
#: device with ``Feature.WARPGROUP_MMA``): ``WG`` warpgroups per cube, each a ``64 x BN``
#: accumulator, so a ``64*WG x BN`` block, over ``STAGES`` shared slots of 64-deep stages
#: (``STAGES - 2`` in flight). 128 x 256 in four slots takes 192 KiB, 128 x 128 in five 160 KiB
#: (two cubes do not share a multiprocessor at either); 64 x 64 in three (48 KiB) fits every
#: device that has warpgroup matrices, the NumPy device's 64 KiB included.
WARPGROUP_SHAPES = ((2, 256, 4), (2, 128, 5), (4, 128, 4), (2, 128, 3), (1, 64, 3))
#: The warpgroup shapes also run with stages filled by tensor copies
#: (:func:`.matmul_warpgroup_tma`).
WARPGROUP_TMA_SHAPES = ((2, 256, 4), (2, 128, 5), (4, 128, 4), (1, 64, 3))
#: The block rows of the group within which a pipelined kernel's cubes walk column by column.
GROUP_ROWS = 8
#: The bytes of a cmma kernel's global line (the widest vector access).
LINE_BYTES = 16
#: The elements of an FMA kernel's global line (16 bytes of f32).
FMA_LINE = 4
_TUNER = Tuner()
_MATRIX = {Elem.F16: MatrixElem.F16, Elem.BF16: MatrixElem.BF16}
#: Products whose size class (each extent rounded up to a power of two) has at most this many
#: multiply-adds are not tuned: a few cubes' work, where tuning would build and time every
#: candidate (on the NumPy device a (1, 4000) by (4000, 1) product spent 87 s tuning, then ran
#: in 0.7 s). They run the smallest FMA block (:func:`_untuned_set`).
UNTUNED_FMAS = 1 << 20

Runner = Callable[[ComputeClient, RudaTensor, RudaTensor], RudaTensor]
#: An entry of :data:`CMMA_SHAPES`.
CmmaShape = tuple[int, int, int, int, int]


@overload
def matmul(a: Operand, b: Operand, /, *, allow_tf32: bool = False) -> RudaTensor: ...
@overload
def matmul(
    client: ComputeClient, a: Operand, b: Operand, /, *, allow_tf32: bool = False
) -> RudaTensor: ...
def matmul(*args: Any, allow_tf32: bool = False) -> RudaTensor:
    """``a @ b`` on ``a``'s device (or on a client passed first: ``matmul(client, a, b)``):
    ``a`` is ``(m, k)`` and ``b`` ``(k, n)``, contiguous (row-major), both f16,
    bf16 or f32; the result is a new ``(m, n)`` f32 tensor, written asynchronously. Products are
    exact and summed in f32 (in an order that depends on the kernel chosen: on tensor cores,
    unspecified). The first call for a device, input type and size class (each extent rounded up
    to a power of two) measures the candidates, blocking until they finish; later calls, and
    later processes on the same device and driver, run the recorded winner.

    :param allow_tf32: let f32 input use tf32 tensor cores (inputs rounded to 10 fraction bits,
        as ``torch.backends.cuda.matmul.allow_tf32``); off by default.
    :raises TypeError: for an operand that is not a ``TensorBuffer`` or ``RudaTensor``.
    :raises InvalidHandle: for an operand on another device than the client's (or ``a``'s).
    :raises LayoutError: unless both are 2-D and contiguous with matching inner extents.
    :raises LaunchConfigError: for an element type other than f16, bf16, f32, or two types.
    :raises UnsupportedFeature: when the device lacks the input type.
    """
    op = "matmul"
    client, operands = client_and_operands(op, args)
    if len(operands) != 2:
        raise TypeError(f"{op} takes two operands, a and b; got {len(operands)}")
    x, y = as_buffer(op, "a", operands[0]), as_buffer(op, "b", operands[1])
    check_device(op, "a", x, client)
    check_device(op, "b", y, client)
    if len(x.shape) != 2 or len(y.shape) != 2 or x.shape[1] != y.shape[0]:
        raise LayoutError(f"{op}: a is {x.shape} and b is {y.shape}; expected (m, k) and (k, n)")
    if x.elem is not y.elem or x.elem not in (Elem.F16, Elem.BF16, Elem.F32):
        raise LaunchConfigError(
            f"{op}: a is {x.elem} and b is {y.elem}; expected both f16, both bf16 or both f32"
        )
    check_float(op, "a", x, client)
    if 0 in (*x.shape, y.shape[1]):
        return _zeros(client, x.shape[0], y.shape[1])
    ta, tb = _on_lines(client, x), _on_lines(client, y)
    m, n, k, *_ = _key(ta, tb)
    if m * n * k <= UNTUNED_FMAS:  # by size class: a key is tuned always or never
        small = _untuned_set(x.elem, _limits(client))
        return _TUNER.execute(client, small, ta, tb, tune=False)  # type: ignore[no-any-return]
    tunables = _candidates(client, x.elem, allow_tf32)
    return _TUNER.execute(client, tunables, ta, tb)  # type: ignore[no-any-return]


def _on_lines(client: ComputeClient, x: TensorBuffer) -> RudaTensor:
    """``x`` as a tensor, copied into one of its own where it does not start on a 16-byte line
    (a view into a handle): every candidate reads rows in lines from the operand's start."""
    tensor = RudaTensor(x.handle, x.shape, x.strides, x.elem)
    if x.handle.binding().offset_bytes % LINE_BYTES == 0:
        return tensor
    copy = RudaTensor.empty(client, x.shape, x.elem.numpy)
    client.copy(x.handle.offset(0, copy.handle.nbytes), copy.handle)
    return copy


def _zeros(client: ComputeClient, m: int, n: int) -> RudaTensor:
    return RudaTensor.from_numpy(client, np.zeros((m, n), np.float32))


def _key(a: RudaTensor, b: RudaTensor) -> tuple[int, int, int, str, bool]:
    """The size class, the element and whether rows are whole lines (which some candidates
    need: a winner on whole lines must not be reused on others)."""
    (m, k), n = a.shape, b.shape[1]
    lines = (k * a.elem.nbytes) % LINE_BYTES == 0 and (n * a.elem.nbytes) % LINE_BYTES == 0
    return anchor(m), anchor(n), anchor(k), a.elem.value, lines


def _candidates(client: ComputeClient, elem: Elem, allow_tf32: bool) -> TunableSet:
    matrix = _MATRIX.get(elem, MatrixElem.TF32 if allow_tf32 else None)
    tk = 8 if matrix is MatrixElem.TF32 else 16
    cmma = matrix is not None and client.features().supports_matrix(
        MatrixConfig(matrix, matrix, MatrixElem.F32, 16, 16, tk)
    )
    warpgroup = elem in _MATRIX and client.features().has(Feature.WARPGROUP_MMA)
    return _tunable_set(elem, allow_tf32 and elem is Elem.F32, cmma, warpgroup, _limits(client))


def _limits(client: ComputeClient) -> _Limits:
    props = client.properties()
    return _Limits(props.plane_dim, props.max_units_per_ruda, props.max_shared_memory_nbytes)


class _Limits(NamedTuple):
    """What a device allows a cube: the plane width, units and shared bytes."""

    plane_dim: int
    units: int
    shared: int


@functools.cache
def _untuned_set(elem: Elem, limits: _Limits) -> TunableSet:
    """What runs products too small to tune: the FMA blocks that fit, smallest first (the most
    cubes for a small output, the least work per cube where it is a few elements)."""
    shapes = [shape for shape in reversed(FMA_SHAPES) if _fma_fits(shape, limits)]
    tunables = [Tunable(_fma_name(shape), _fma(shape)) for shape in shapes]
    return TunableSet(f"ruda.matmul.{elem.value}.small", _key, tunables)


def _fma_name(shape: FmaShape) -> str:
    bm, bn, bk, rm, rn, cubes = shape
    return f"fma-{bm}x{bn}x{bk}-{rm}x{rn}" + (f"-c{cubes}" if cubes > 1 else "")


@functools.cache
def _tunable_set(
    elem: Elem, tf32: bool, cmma: bool, warpgroup: bool, limits: _Limits
) -> TunableSet:
    """The candidates a device with ``limits`` can run (see :func:`_fma_fits`,
    :func:`_cmma_stages` and :func:`_warpgroup_fits`)."""
    tunables: list[Tunable] = []
    for shape in FMA_SHAPES:
        if _fma_fits(shape, limits):
            tunables.append(Tunable(_fma_name(shape), _fma(shape)))
    for cshape in CMMA_SHAPES if cmma else ():
        stages = _cmma_stages(cshape, elem, limits)
        if stages:
            fm, fn, wm, wn, depth = cshape
            bk = depth // elem.nbytes
            name = f"cmma-{wm * fm * 16}x{wn * fn * 16}x{bk}-{wm}x{wn}p-s{stages}"
            runner = _tensor_core(matmul_cmma, _cmma_spec, cshape, limits.plane_dim, stages, tf32)
            tunables.append(Tunable(name, runner))
    for pshape in PIPELINED_SHAPES if cmma else ():
        cshape, most, prefetch = pshape[:5], pshape[5], pshape[6]
        stages = _pipelined_stages(cshape, most, elem, limits)
        if stages:
            fm, fn, wm, wn, depth = cshape
            bk = depth // elem.nbytes
            name = f"pipe-{wm * fm * 16}x{wn * fn * 16}x{bk}-{wm}x{wn}p-s{stages}"
            spec = functools.partial(_pipelined_spec, prefetch=prefetch)
            runner = _tensor_core(matmul_pipelined, spec, cshape, limits.plane_dim, stages, tf32)
            tunables.append(Tunable(name + ("-pf" if prefetch else ""), runner))
    for wshape in WARPGROUP_SHAPES if warpgroup else ():
        if _warpgroup_fits(wshape, limits):
            wg, bn, stages = wshape
            name = f"wgmma-{64 * wg}x{bn}x{WARPGROUP_BK}-{wg}wg-s{stages}"
            tunables.append(Tunable(name, _warpgroup(wshape)))
            if wshape in WARPGROUP_TMA_SHAPES:
                tunables.append(Tunable(name.replace("wgmma", "wgmma-tma"), _warpgroup_tma(wshape)))
    kind = "wgmma" if warpgroup else "cmma" if cmma else "fma"
    return TunableSet(f"ruda.matmul.{elem.value}{'.tf32' if tf32 else ''}.{kind}", _key, tunables)


def _fma_fits(shape: FmaShape, limits: _Limits) -> bool:
    """Whether the cube of the FMA candidate ``shape`` (its units, its two shared stages) fits a
    device with ``limits``."""
    bm, bn, bk, rm, rn, _ = shape
    return (bm // rm) * (bn // rn) <= limits.units and _fma_shared(bm, bn, bk) <= limits.shared


def _cmma_stages(shape: CmmaShape, elem: Elem, limits: _Limits) -> int:
    """The shared stages (2, else 1) of the cmma candidate ``shape`` for ``elem`` input on a
    device with ``limits``; 0 when its cube has too many units or one stage does not fit."""
    wm, wn = shape[2], shape[3]
    if wm * wn * limits.plane_dim > limits.units:
        return 0
    return next((s for s in (2, 1) if _cmma_shared(shape, elem.nbytes, s) <= limits.shared), 0)


def _pipelined_stages(shape: CmmaShape, most: int, elem: Elem, limits: _Limits) -> int:
    """The shared stages (``most`` down to 2) of the pipelined candidate ``shape`` for ``elem``
    input on a device with ``limits``; 0 when its cube has too many units or 2 do not fit."""
    wm, wn = shape[2], shape[3]
    if wm * wn * limits.plane_dim > limits.units:
        return 0
    fits = (s for s in range(most, 1, -1) if _cmma_shared(shape, elem.nbytes, s) <= limits.shared)
    return next(fits, 0)


def _warpgroup_fits(shape: tuple[int, int, int], limits: _Limits) -> bool:
    """Whether the cube of the warpgroup candidate ``shape`` (128 units per warpgroup, 16-bit
    stages of ``a`` and ``b``) fits a device with ``limits``."""
    wg, bn, stages = shape
    shared = 2 * stages * WARPGROUP_BK * (64 * wg + bn)
    return 128 * wg <= limits.units and shared <= limits.shared


def _fma_shared(bm: int, bn: int, bk: int) -> int:
    """The shared bytes of :func:`.matmul_fma`: two f32 stages of ``a`` (transposed, padded
    rows) and ``b``."""
    return 4 * 2 * bk * (bm + OUT_PAD + bn)


def _cmma_shared(shape: CmmaShape, nbytes: int, stages: int) -> int:
    """The shared bytes of :func:`.matmul_cmma` on a ragged shape: ``stages`` stages of ``a``
    and ``b`` (padded rows of ``nbytes`` elements) and each plane's f32 staging tile."""
    fm, fn, wm, wn, depth = shape
    bm, bn = wm * fm * 16, wn * fn * 16
    bk = depth // nbytes
    tiles = stages * (bm * (bk + PAD) + bk * (bn + PAD)) * nbytes
    return tiles + 4 * wm * wn * 16 * (16 + OUT_PAD)


def _line(extent: int, width: int) -> int:
    """The elements per global line along rows of ``extent``: ``width`` where every row starts
    on a line, else 1."""
    return width if extent % width == 0 else 1


def _operands(
    client: ComputeClient, a: RudaTensor, b: RudaTensor
) -> tuple[RudaTensor, list[object]]:
    (m, k), n = a.shape, b.shape[1]
    out = RudaTensor.empty(client, (m, n), "float32")
    args: list[object] = [
        ArrayArg(a.handle, m * k, a.elem),
        ArrayArg(b.handle, k * n, b.elem),
        ArrayArg(out.handle, m * n, Elem.F32),
        m,
        n,
        k,
    ]
    return out, args


def _fma_spec(shape: FmaShape, m: int, n: int, k: int) -> dict[str, object]:
    """The compile-time arguments of :func:`.matmul_fma` for the ``FMA_SHAPES`` entry ``shape``
    on an ``(m, k) @ (k, n)`` product."""
    bm, bn, bk, rm, rn, cubes = shape
    interior = m % bm == 0 and n % bn == 0 and k % bk == 0
    return dict(
        BM=bm,
        BN=bn,
        BK=bk,
        RM=rm,
        RN=rn,
        CUBES=cubes,
        INTERIOR=interior,
        VA=_line(k, FMA_LINE),
        VB=_line(n, FMA_LINE),
    )


def _cmma_spec(
    shape: CmmaShape,
    plane_dim: int,
    stages: int,
    tf32: bool,
    elem: Elem,
    m: int,
    n: int,
    k: int,
) -> dict[str, object]:
    """The compile-time arguments of :func:`.matmul_cmma` for the ``CMMA_SHAPES`` entry
    ``shape`` on an ``(m, k) @ (k, n)`` product of ``elem``."""
    fm, fn, wm, wn, depth = shape
    tk = 8 if tf32 else 16
    width = LINE_BYTES // elem.nbytes
    bk = depth // elem.nbytes
    interior = m % (wm * fm * 16) == 0 and n % (wn * fn * 16) == 0 and k % bk == 0
    return dict(
        TK=tk,
        FM=fm,
        FN=fn,
        WM=wm,
        WN=wn,
        KT=bk // tk,
        UNITS=wm * wn * plane_dim,
        VA=_line(k, width),
        VB=_line(n, width),
        STAGES=stages,
        INTERIOR=interior,
        TF32=tf32,
    )


def _pipelined_spec(
    shape: CmmaShape,
    plane_dim: int,
    stages: int,
    tf32: bool,
    elem: Elem,
    m: int,
    n: int,
    k: int,
    *,
    prefetch: bool = False,
) -> dict[str, object]:
    """The compile-time arguments of :func:`.matmul_pipelined`: :func:`_cmma_spec`'s, the
    block rows of a cube group, and whether fragments are loaded a step ahead (``prefetch``,
    taken only where a stage has an even number of steps, which the two sets alternate over)."""
    spec = _cmma_spec(shape, plane_dim, stages, tf32, elem, m, n, k)
    steps = spec["KT"]
    even = isinstance(steps, int) and steps % 2 == 0
    return {**spec, "GROUP": GROUP_ROWS, "PREFETCH": prefetch and even}


def _fma(shape: FmaShape) -> Runner:
    bm, bn, _, rm, rn, _ = shape

    def run(client: ComputeClient, a: RudaTensor, b: RudaTensor) -> RudaTensor:
        out, args = _operands(client, a, b)
        (m, k), n = a.shape, b.shape[1]
        count = RudaCount(math.ceil(n / bn), math.ceil(m / bm))
        spec = _fma_spec(shape, m, n, k)
        matmul_fma.launch_unchecked(client, count, RudaDim((bm // rm) * (bn // rn)), *args, **spec)
        return out

    return run


def _warpgroup(shape: tuple[int, int, int]) -> Runner:
    """A runner of :func:`.matmul_warpgroup` in the ``WARPGROUP_SHAPES`` entry ``shape``."""
    wg, bn, stages = shape
    bm = 64 * wg

    def run(client: ComputeClient, a: RudaTensor, b: RudaTensor) -> RudaTensor:
        out, args = _operands(client, a, b)
        (m, k), n = a.shape, b.shape[1]
        count = RudaCount(math.ceil(n / bn), math.ceil(m / bm))
        interior = m % bm == 0 and n % bn == 0 and k % WARPGROUP_BK == 0
        spec = dict(
            WG=wg,
            BN=bn,
            STAGES=stages,
            VA=_line(k, LINE_BYTES // a.elem.nbytes),
            VB=_line(n, LINE_BYTES // a.elem.nbytes),
            INTERIOR=interior,
            GROUP=GROUP_ROWS,
        )
        matmul_warpgroup.launch_unchecked(client, count, RudaDim(128 * wg), *args, **spec)
        return out

    return run


def _warpgroup_tma(shape: tuple[int, int, int]) -> Runner:
    """A runner of :func:`.matmul_warpgroup_tma` in the ``WARPGROUP_TMA_SHAPES`` entry
    ``shape``; it refuses operands whose rows are not whole 16-byte lines."""
    wg, bn, stages = shape

    def run(client: ComputeClient, a: RudaTensor, b: RudaTensor) -> RudaTensor:
        (m, k), n = a.shape, b.shape[1]
        if (k * a.elem.nbytes) % LINE_BYTES or (n * b.elem.nbytes) % LINE_BYTES:
            raise UnsupportedFeature(
                f"tensor copies read rows of whole {LINE_BYTES}-byte lines; a ({m}, {k}) @ "
                f"({k}, {n}) product of {a.elem} has rows of {k} and {n} elements"
            )
        out, args = _operands(client, a, b)
        count = RudaCount(math.ceil(n / bn), math.ceil(m / (64 * wg)))
        spec = dict(WG=wg, BN=bn, STAGES=stages, GROUP=GROUP_ROWS)
        matmul_warpgroup_tma.launch_unchecked(client, count, RudaDim(128 * wg), *args, **spec)
        return out

    return run


def _tensor_core(
    kernel: Any,
    spec_of: Callable[..., dict[str, object]],
    shape: CmmaShape,
    plane_dim: int,
    stages: int,
    tf32: bool,
) -> Runner:
    """A runner of ``kernel`` (:func:`.matmul_cmma` or :func:`.matmul_pipelined`): a cube of
    ``WM x WN`` planes per block, with the compile-time arguments ``spec_of`` gives."""
    fm, fn, wm, wn, _ = shape

    def run(client: ComputeClient, a: RudaTensor, b: RudaTensor) -> RudaTensor:
        out, args = _operands(client, a, b)
        (m, k), n = a.shape, b.shape[1]
        count = RudaCount(math.ceil(n / (wn * fn * 16)), math.ceil(m / (wm * fm * 16)))
        spec = spec_of(shape, plane_dim, stages, tf32, a.elem, m, n, k)
        kernel.launch_unchecked(client, count, RudaDim(wm * wn * plane_dim), *args, **spec)
        return out

    return run
