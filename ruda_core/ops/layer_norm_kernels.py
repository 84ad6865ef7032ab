# mypy: ignore-errors
# (kernel-language bodies: mypy cannot type ElemVar annotations or builtin arithmetic)
"""The portable LayerNorm kernels, over the last axis of a contiguous (rows, features) tensor.

Data are ``Float`` (f16, bf16, f32, f64); every sum, the mean and the reciprocal standard
deviation are ``Acc`` (f32, or f64 for f64 data, see :data:`.reduction.Acc`).

Row kernels come in two kinds. The *held* kernels (``*_held``) keep a row in registers: a
*group* of units (one plane, ``PLANE_ROWS``, or the whole cube) owns a row; each unit reads
``ITEMS`` lines of ``N`` elements (``N`` = 1: scalar accesses) at line ``item * group + lane``
into a ``LocalArray`` once, and every pass over the row (the sum, the centred squares, the
output) works on those values, so each element is read from memory once (the input gradient
holds ``xhat`` and reads ``grad`` and ``weight`` again, from cache). Groups stride over
the rows by the group count. The *strided* kernels (``layer_norm_forward``,
``layer_norm_grad_input``) re-read the row from memory at each pass and serve rows wider than
registers hold. Both reduce a group with :func:`group_sum` (planes, or
:func:`.reduction.cube_sum`).

The weight and bias gradients are a deterministic two-pass reduction over rows: per (chunk of
rows, line of features) partial sums, then a fixed-order sum per feature (eight shares of its
chunks, then the shares in order). Launch shapes and
validation are :mod:`.layer_norm`'s (:mod:`.layer_norm_plan` chooses the variant); nothing here
checks arguments.
"""

from __future__ import annotations

from ..lang import (
    ABSOLUTE_POS_X,
    PLANE_DIM,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS,
    RUDA_POS_X,
    RUDA_POS_Y,
    UNIT_POS,
    UNIT_POS_PLANE,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    Float,
    Line,
    LocalArray,
    SharedMemory,
    func,
    kernel,
    plane_sum,
    rsqrt,
    sync_units,
    u32,
    unroll,
)
from .geometry import HELD_BLOCK, MAX_BLOCK
from .reduction import Acc, cube_sum

#: The weight and bias gradients' second pass: features per cube (x) and the ways its chunks
#: are split (y).
FINISH_X = 32
FINISH_Y = 8

__all__ = [
    "FINISH_X",
    "FINISH_Y",
    "layer_norm_forward",
    "layer_norm_forward_held",
    "layer_norm_grad_affine_finish",
    "layer_norm_grad_affine_partials",
    "layer_norm_grad_input",
    "layer_norm_grad_input_held",
]


@func
def group_sum(value: Acc, scratch, PLANE_ROWS: Comptime[bool], PLANES: Comptime[bool]) -> Acc:
    """The sum of ``value`` over the units of a row's group, returned to each of them: a plane
    (``PLANE_ROWS``) or the cube (:func:`.reduction.cube_sum` with ``PLANES``)."""
    if PLANE_ROWS:
        return plane_sum(value)
    return cube_sum(value, scratch, PLANES)


@func
def row_group(PLANE_ROWS: Comptime[bool]):
    """``(group, groups, lane, group_units)`` of this unit: which row group it is in, how many
    groups the launch has, its lane in the group and the group's unit count."""
    if PLANE_ROWS:
        planes = RUDA_DIM // PLANE_DIM
        return (
            RUDA_POS * planes + UNIT_POS // PLANE_DIM,
            RUDA_COUNT * planes,
            UNIT_POS_PLANE,
            PLANE_DIM,
        )
    return RUDA_POS, RUDA_COUNT, UNIT_POS, RUDA_DIM


@func
def store_held(out: Array[Float], line: u32, vals, at: Comptime[int], N: Comptime[int]):
    """Store ``vals[at : at + N]`` as line ``line`` of ``out`` (element ``line`` when N = 1)."""
    if N == 1:
        out[line] = Float(vals[at])
    elif N == 2:
        out.store_line(line, Line(Float(vals[at]), Float(vals[at + 1])))
    elif N == 4:
        out.store_line(
            line,
            Line(Float(vals[at]), Float(vals[at + 1]), Float(vals[at + 2]), Float(vals[at + 3])),
        )
    else:
        out.store_line(
            line,
            Line(
                Float(vals[at]),
                Float(vals[at + 1]),
                Float(vals[at + 2]),
                Float(vals[at + 3]),
                Float(vals[at + 4]),
                Float(vals[at + 5]),
                Float(vals[at + 6]),
                Float(vals[at + 7]),
            ),
        )


@kernel
def layer_norm_forward_held(
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
    N: Comptime[int],
    ITEMS: Comptime[int],
    PLANE_ROWS: Comptime[bool],
    PLANES: Comptime[bool],
):
    """:func:`layer_norm_forward` with the row held in registers: ``features`` is a multiple of
    ``N`` and at most ``ITEMS * N`` per unit of the group. The variance is the mean of the
    squared centred held values (two passes over registers, no ``E[x^2] - E[x]^2``)."""
    scratch = SharedMemory(Acc, HELD_BLOCK)
    vals = LocalArray(Acc, ITEMS * N)
    n = Acc(features)
    lines = features // N
    group, groups, lane, units = row_group(PLANE_ROWS)
    row = group
    while row < rows:
        first = row * lines
        total = Acc(0)
        for item in unroll(range(ITEMS)):
            li = item * units + lane
            if li < lines:
                if N == 1:
                    vals[item] = Acc(x[first + li])
                else:
                    v = Acc(x.load_line(first + li, N))
                    for k in unroll(range(N)):
                        vals[item * N + k] = v[k]
            else:
                for k in unroll(range(N)):
                    vals[item * N + k] = Acc(0)
            for k in unroll(range(N)):
                total += vals[item * N + k]
        mu = group_sum(total, scratch, PLANE_ROWS, PLANES) / n
        squares = Acc(0)
        for item in unroll(range(ITEMS)):
            if item * units + lane < lines:
                for k in unroll(range(N)):
                    centred = vals[item * N + k] - mu
                    squares += centred * centred
        inv = rsqrt(group_sum(squares, scratch, PLANE_ROWS, PLANES) / n + epsilon)
        for item in unroll(range(ITEMS)):
            li = item * units + lane
            if li < lines:
                if N == 1:
                    y = (vals[item] - mu) * inv * Acc(weight[li])
                    if has_bias:
                        y += Acc(bias[li])
                    vals[item] = y
                else:
                    w = Acc(weight.load_line(li, N))
                    b = Acc(bias.load_line(li, N)) if has_bias else Line.splat(Acc(0), N)
                    for k in unroll(range(N)):
                        vals[item * N + k] = (vals[item * N + k] - mu) * inv * w[k] + b[k]
                store_held(out, first + li, vals, item * N, N)
        if lane == 0:
            mean[row] = mu
            rstd[row] = inv
        row += groups


@kernel
def layer_norm_grad_input_held(
    x: Array[Float],
    weight: Array[Float],
    grad: Array[Float],
    mean: Array[Acc],
    rstd: Array[Acc],
    grad_input: Array[Float],
    rows: u32,
    features: u32,
    N: Comptime[int],
    ITEMS: Comptime[int],
    PLANE_ROWS: Comptime[bool],
    PLANES: Comptime[bool],
):
    """:func:`layer_norm_grad_input` with ``xhat`` of the row held in registers (the layout of
    :func:`layer_norm_forward_held`): ``x`` is read once; ``grad`` and ``weight`` are read
    again by the second pass, which finds the lines the first one just read in cache, so that
    registers hold one value per element."""
    scratch = SharedMemory(Acc, HELD_BLOCK)
    xhat = LocalArray(Acc, ITEMS * N)
    n = Acc(features)
    lines = features // N
    group, groups, lane, units = row_group(PLANE_ROWS)
    row = group
    while row < rows:
        first = row * lines
        mu = mean[row]
        inv = rstd[row]
        sum_g = Acc(0)
        sum_gx = Acc(0)
        for item in unroll(range(ITEMS)):
            li = item * units + lane
            if li < lines:
                if N == 1:
                    xhat[item] = (Acc(x[first + li]) - mu) * inv
                    g = Acc(grad[first + li]) * Acc(weight[li])
                    sum_g += g
                    sum_gx += g * xhat[item]
                else:
                    xv = Acc(x.load_line(first + li, N))
                    gv = Acc(grad.load_line(first + li, N)) * Acc(weight.load_line(li, N))
                    for k in unroll(range(N)):
                        xhat[item * N + k] = (xv[k] - mu) * inv
                        sum_g += gv[k]
                        sum_gx += gv[k] * xhat[item * N + k]
        mean_g = group_sum(sum_g, scratch, PLANE_ROWS, PLANES) / n
        mean_gx = group_sum(sum_gx, scratch, PLANE_ROWS, PLANES) / n
        for item in unroll(range(ITEMS)):
            li = item * units + lane
            if li < lines:
                if N == 1:
                    g = Acc(grad[first + li]) * Acc(weight[li])
                    xhat[item] = inv * (g - mean_g - xhat[item] * mean_gx)
                else:
                    gv = Acc(grad.load_line(first + li, N)) * Acc(weight.load_line(li, N))
                    for k in unroll(range(N)):
                        at = item * N + k
                        xhat[at] = inv * (gv[k] - mean_g - xhat[at] * mean_gx)
                store_held(grad_input, first + li, xhat, item * N, N)
        row += groups


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
    N: Comptime[int],
):
    """First pass of the weight and bias gradients: unit ``(line, chunk)`` (x: line of ``N``
    features, ``features`` a multiple of ``N``; cube y: chunk) sums ``grad * xhat`` and
    ``grad`` over its chunk's rows, in row order, into ``partial_*[chunk * features +
    feature]``. Each feature's sum is the same for every ``N``."""
    j = ABSOLUTE_POS_X
    chunk = RUDA_POS_Y
    lines = features // N
    if j < lines:
        start = chunk * rows_per_chunk
        end = min(start + rows_per_chunk, rows)
        if N == 1:
            acc_weight = Acc(0)
            acc_bias = Acc(0)
            for r in range(start, end):
                dy = Acc(grad[r * features + j])
                acc_weight += dy * ((Acc(x[r * features + j]) - mean[r]) * rstd[r])
                acc_bias += dy
            partial_weight[chunk * features + j] = acc_weight
            partial_bias[chunk * features + j] = acc_bias
        else:
            line_weight = Line.splat(Acc(0), N)
            line_bias = Line.splat(Acc(0), N)
            for r in range(start, end):
                dy = Acc(grad.load_line(r * lines + j, N))
                line_weight += dy * ((Acc(x.load_line(r * lines + j, N)) - mean[r]) * rstd[r])
                line_bias += dy
            partial_weight.store_line(chunk * lines + j, line_weight)
            partial_bias.store_line(chunk * lines + j, line_bias)


@kernel
def layer_norm_grad_affine_finish(
    partial_weight: Array[Acc],
    partial_bias: Array[Acc],
    grad_weight: Array[Float],
    grad_bias: Array[Float],
    features: u32,
    chunks: u32,
):
    """Second pass, in cubes of :data:`FINISH_X` x :data:`FINISH_Y` units: unit ``(x, y)`` adds
    the partial sums of chunks ``y, y + FINISH_Y, ...`` of feature ``cube * FINISH_X + x`` in
    chunk order, then unit ``(x, 0)`` adds the ``FINISH_Y`` sums in ``y`` order. The order is
    fixed by the two constants, so every device adds the same way."""
    scratch_weight = SharedMemory(Acc, FINISH_X * FINISH_Y)
    scratch_bias = SharedMemory(Acc, FINISH_X * FINISH_Y)
    x = UNIT_POS_X
    y = UNIT_POS_Y
    j = RUDA_POS_X * FINISH_X + x
    acc_weight = Acc(0)
    acc_bias = Acc(0)
    if j < features:
        c = y
        while c < chunks:
            acc_weight += partial_weight[c * features + j]
            acc_bias += partial_bias[c * features + j]
            c += FINISH_Y
    scratch_weight[y * FINISH_X + x] = acc_weight
    scratch_bias[y * FINISH_X + x] = acc_bias
    sync_units()
    if y == 0 and j < features:
        total_weight = Acc(0)
        total_bias = Acc(0)
        for k in unroll(range(FINISH_Y)):
            total_weight += scratch_weight[k * FINISH_X + x]
            total_bias += scratch_bias[k * FINISH_X + x]
        grad_weight[j] = Float(total_weight)
        grad_bias[j] = Float(total_bias)
