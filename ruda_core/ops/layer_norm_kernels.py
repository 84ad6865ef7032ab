# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The portable LayerNorm kernels, over the last axis of a contiguous (rows, features) tensor.

Data are ``Float`` (f16, bf16, f32, f64); every sum, the mean and the reciprocal standard
deviation are ``Acc`` (f32, or f64 for f64 data, see :data:`.reduction.Acc`). Row kernels run
one row per cube at a time, striding over rows by the cube count, with any power-of-two
``RUDA_DIM`` up to :data:`.geometry.MAX_BLOCK` (a launch value, so one compiled kernel serves
every row length), and reduce with :func:`.reduction.cube_sum`. The weight and bias gradients
are a deterministic two-pass reduction over rows: per (chunk of rows, feature) partial sums, then
one fixed-order sum per feature. Launching, shapes and validation are :mod:`.layer_norm`'s;
nothing here checks arguments.
"""

from __future__ import annotations

from ..lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS,
    RUDA_POS_Y,
    UNIT_POS,
    Array,
    Comptime,
    Float,
    SharedMemory,
    kernel,
    rsqrt,
    u32,
)
from .geometry import MAX_BLOCK
from .reduction import Acc, cube_sum

__all__ = [
    "layer_norm_forward",
    "layer_norm_grad_affine_finish",
    "layer_norm_grad_affine_partials",
    "layer_norm_grad_input",
]


@kernel
def layer_norm_forward(
    x: Array[Float],
    weight: Array[Float],
    bias: Array[Float],
    out: Array[Float],
    mean: Array[Acc],
    rstd: Array[Acc],
    rows: u32,
    features: u32,
    epsilon: Acc,
    has_bias: bool,
    PLANES: Comptime[bool],
):
    """``out = (x - mean) * rstd * weight (+ bias)`` per row, with the biased variance computed
    in a second pass over the row (no cancellation from ``E[x^2] - E[x]^2``). ``bias`` is not
    read when ``has_bias`` is false (pass any ``Float`` array)."""
    scratch = SharedMemory(Acc, MAX_BLOCK)
    n = Acc(features)
    row = RUDA_POS
    while row < rows:
        base = row * features
        total = Acc(0)
        j = UNIT_POS
        while j < features:
            total += Acc(x[base + j])
            j += RUDA_DIM
        mu = cube_sum(total, scratch, PLANES) / n
        squares = Acc(0)
        j = UNIT_POS
        while j < features:
            centred = Acc(x[base + j]) - mu
            squares += centred * centred
            j += RUDA_DIM
        inv = rsqrt(cube_sum(squares, scratch, PLANES) / n + epsilon)
        j = UNIT_POS
        while j < features:
            y = (Acc(x[base + j]) - mu) * inv * Acc(weight[j])
            if has_bias:
                y += Acc(bias[j])
            out[base + j] = Float(y)
            j += RUDA_DIM
        if UNIT_POS == 0:
            mean[row] = mu
            rstd[row] = inv
        row += RUDA_COUNT


@kernel
def layer_norm_grad_input(
    x: Array[Float],
    weight: Array[Float],
    grad: Array[Float],
    mean: Array[Acc],
    rstd: Array[Acc],
    grad_input: Array[Float],
    rows: u32,
    features: u32,
    PLANES: Comptime[bool],
):
    """``grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat))`` per row, where
    ``g = grad * weight`` and ``xhat = (x - mean) * rstd``."""
    scratch = SharedMemory(Acc, MAX_BLOCK)
    n = Acc(features)
    row = RUDA_POS
    while row < rows:
        base = row * features
        mu = mean[row]
        inv = rstd[row]
        sum_g = Acc(0)
        sum_gx = Acc(0)
        j = UNIT_POS
        while j < features:
            xhat = (Acc(x[base + j]) - mu) * inv
            g = Acc(grad[base + j]) * Acc(weight[j])
            sum_g += g
            sum_gx += g * xhat
            j += RUDA_DIM
        mean_g = cube_sum(sum_g, scratch, PLANES) / n
        mean_gx = cube_sum(sum_gx, scratch, PLANES) / n
        j = UNIT_POS
        while j < features:
            xhat = (Acc(x[base + j]) - mu) * inv
            g = Acc(grad[base + j]) * Acc(weight[j])
            grad_input[base + j] = Float(inv * (g - mean_g - xhat * mean_gx))
            j += RUDA_DIM
        row += RUDA_COUNT


@kernel
def layer_norm_grad_affine_partials(
    x: Array[Float],
    grad: Array[Float],
    mean: Array[Acc],
    rstd: Array[Acc],
    partial_weight: Array[Acc],
    partial_bias: Array[Acc],
    rows: u32,
    features: u32,
    rows_per_chunk: u32,
):
    """First pass of the weight and bias gradients: unit ``(feature, chunk)`` (x: feature,
    cube y: chunk) sums ``grad * xhat`` and ``grad`` over its chunk's rows, in row order, into
    ``partial_*[chunk * features + feature]``."""
    j = ABSOLUTE_POS_X
    chunk = RUDA_POS_Y
    if j < features:
        start = chunk * rows_per_chunk
        end = min(start + rows_per_chunk, rows)
        acc_weight = Acc(0)
        acc_bias = Acc(0)
        for r in range(start, end):
            dy = Acc(grad[r * features + j])
            acc_weight += dy * ((Acc(x[r * features + j]) - mean[r]) * rstd[r])
            acc_bias += dy
        partial_weight[chunk * features + j] = acc_weight
        partial_bias[chunk * features + j] = acc_bias


@kernel
def layer_norm_grad_affine_finish(
    partial_weight: Array[Acc],
    partial_bias: Array[Acc],
    grad_weight: Array[Float],
    grad_bias: Array[Float],
    features: u32,
    chunks: u32,
):
    """Second pass: unit ``feature`` adds the chunks' partial sums in chunk order."""
    j = ABSOLUTE_POS
    if j < features:
        acc_weight = Acc(0)
        acc_bias = Acc(0)
        for c in range(chunks):
            acc_weight += partial_weight[c * features + j]
            acc_bias += partial_bias[c * features + j]
        grad_weight[j] = Float(acc_weight)
        grad_bias[j] = Float(acc_bias)
