"""``matmul``: the product of two row-major matrices, with f32 sums and an f32 result.

Candidates, chosen per device and problem size by the autotuner (:mod:`ruda_core.autotune`) and
remembered in its persistent cache: cooperative-matrix kernels (``cmma``, tensor cores through
WMMA on CUDA) for every tile configuration the device reports for the input type, and the plain
fused-multiply-add kernel, which every device runs. f32 input uses tf32 matrices only when the
caller allows it, since they round the inputs to 10 fraction bits. This module launches the
kernels of :mod:`.matmul_kernels`; it never imports a driver.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ..autotune import Tunable, TunableSet, Tuner, anchor
from ..ir import Elem, MatrixConfig, MatrixElem
from ..lang import ArrayArg
from ..runtime import ComputeClient, LaunchConfigError, LayoutError, RudaCount, RudaDim
from ..tensor import RudaTensor
from .matmul_kernels import matmul_cmma, matmul_fma
from .operands import Operand, as_buffer, check_float

__all__ = ["matmul"]

#: Cube edges of the FMA candidates (cubes of TILE x TILE units).
FMA_TILES = (8, 16)
#: (planes along m, planes along n, k-steps per stage) of the cmma candidates.
CMMA_SHAPES = ((2, 2, 2), (2, 4, 2), (4, 2, 2), (2, 2, 4))
_TUNER = Tuner()
_MATRIX = {Elem.F16: MatrixElem.F16, Elem.BF16: MatrixElem.BF16}

Runner = Callable[[ComputeClient, RudaTensor, RudaTensor], RudaTensor]


def matmul(
    client: ComputeClient, a: Operand, b: Operand, *, allow_tf32: bool = False
) -> RudaTensor:
    """``a @ b``: ``a`` is ``(m, k)`` and ``b`` ``(k, n)``, contiguous (row-major), both f16,
    bf16 or f32; the result is a new ``(m, n)`` f32 tensor, written asynchronously. Products are
    exact and summed in f32 (in an order that depends on the kernel chosen: on tensor cores,
    unspecified). The first call for a device, input type and size class (each extent rounded up
    to a power of two) measures the candidates, blocking until they finish; later calls, and
    later processes on the same device and driver, run the recorded winner.

    :param allow_tf32: let f32 input use tf32 tensor cores (inputs rounded to 10 fraction bits,
        as ``torch.backends.cuda.matmul.allow_tf32``); off by default.
    :raises TypeError: for an operand that is not a ``TensorBuffer`` or ``RudaTensor``.
    :raises LayoutError: unless both are 2-D and contiguous with matching inner extents.
    :raises LaunchConfigError: for an element type other than f16, bf16, f32, or two types.
    :raises UnsupportedFeature: when the device lacks the input type.
    """
    op = "matmul"
    x, y = as_buffer(op, "a", a), as_buffer(op, "b", b)
    if len(x.shape) != 2 or len(y.shape) != 2 or x.shape[1] != y.shape[0]:
        raise LayoutError(f"{op}: a is {x.shape} and b is {y.shape}; expected (m, k) and (k, n)")
    if x.elem is not y.elem or x.elem not in (Elem.F16, Elem.BF16, Elem.F32):
        raise LaunchConfigError(
            f"{op}: a is {x.elem} and b is {y.elem}; expected both f16, both bf16 or both f32"
        )
    check_float(op, "a", x, client)
    ta = RudaTensor(x.handle, x.shape, x.strides, x.elem)
    tb = RudaTensor(y.handle, y.shape, y.strides, y.elem)
    if 0 in (*x.shape, y.shape[1]):
        return _zeros(client, x.shape[0], y.shape[1])
    tunables = _candidates(client, x.elem, allow_tf32)
    return _TUNER.execute(client, tunables, ta, tb)  # type: ignore[no-any-return]


def _zeros(client: ComputeClient, m: int, n: int) -> RudaTensor:
    return RudaTensor.from_numpy(client, np.zeros((m, n), np.float32))


def _key(a: RudaTensor, b: RudaTensor) -> tuple[int, int, int, str]:
    (m, k), n = a.shape, b.shape[1]
    return anchor(m), anchor(n), anchor(k), a.elem.value


def _candidates(client: ComputeClient, elem: Elem, allow_tf32: bool) -> TunableSet:
    matrix = _MATRIX.get(elem, MatrixElem.TF32 if allow_tf32 else None)
    tk = 8 if matrix is MatrixElem.TF32 else 16
    cmma = matrix is not None and client.features().supports_matrix(
        MatrixConfig(matrix, matrix, MatrixElem.F32, 16, 16, tk)
    )
    return _tunable_set(elem.value, allow_tf32 and elem is Elem.F32, cmma)


@functools.cache
def _tunable_set(elem: str, tf32: bool, cmma: bool) -> TunableSet:
    tunables = [Tunable(f"fma-{t}", _fma(t)) for t in FMA_TILES]
    if cmma:
        tunables += [
            Tunable(f"cmma-{wm}x{wn}x{kt}", _cmma(wm, wn, kt, tf32)) for wm, wn, kt in CMMA_SHAPES
        ]
    kind = "cmma" if cmma else "fma"
    return TunableSet(f"ruda.matmul.{elem}{'.tf32' if tf32 else ''}.{kind}", _key, tunables)


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


def _fma(tile: int) -> Runner:
    def run(client: ComputeClient, a: RudaTensor, b: RudaTensor) -> RudaTensor:
        out, args = _operands(client, a, b)
        m, n = out.shape
        count = RudaCount(math.ceil(n / tile), math.ceil(m / tile))
        matmul_fma.launch_unchecked(client, count, RudaDim(tile, tile), *args, TILE=tile)
        return out

    return run


def _cmma(wm: int, wn: int, kt: int, tf32: bool) -> Runner:
    tk = 8 if tf32 else 16

    def run(client: ComputeClient, a: RudaTensor, b: RudaTensor) -> RudaTensor:
        out, args = _operands(client, a, b)
        m, n = out.shape
        count = RudaCount(math.ceil(n / (wn * 32)), math.ceil(m / (wm * 32)))
        dim = RudaDim(wm * wn * client.properties().plane_dim)
        spec = dict(TM=16, TN=16, TK=tk, WM=wm, WN=wn, KT=kt, TF32=tf32)
        matmul_cmma.launch_unchecked(client, count, dim, *args, **spec)
        return out

    return run
