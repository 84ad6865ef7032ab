"""``sum``, ``min`` and ``max`` of a tensor: over all its elements, or over its last axis.

Over all elements: per-cube partials over contiguous segments, then one cube over the partials:
two launches of :func:`.reduce_kernels.reduce_segments`, or, for the candidates with few
partials on devices with memory fences, one of :func:`.reduce_kernels.reduce_whole`, whose cube
that finishes last folds them (on the NumPy device, whose cubes run in lockstep, that fold
costs a pass over every cube, so the tuner weighs it there as well). Over the last axis
(``axis=-1``): one launch of ``reduce_segments`` with a cube per row. The cube size,
the reads per unit and the count of partials are chosen by the autotuner
(:mod:`ruda_core.autotune`) per device, operation, element type and size class, and remembered
in its persistent cache. Results follow NumPy: ``sum`` in NumPy's result type
(:func:`.primitive_inputs.sum_elem`), ``min``/``max`` in the input's, a NaN in a float
``min``/``max`` gives NaN, and ``min``/``max`` of nothing is a ``ValueError``. Narrow types are
computed wider (:func:`.primitive_inputs.fold_elem`) and converted once, where written. This
module launches the kernel; it never imports a driver.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..autotune import Tunable, TunableSet, Tuner, anchor
from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import ComputeClient, Feature, LaunchConfigError, RudaCount, RudaDim
from ..tensor import RudaTensor
from .geometry import LINE_NBYTES, line_width
from .primitive_inputs import (
    FOLDED,
    UNTUNED,
    Cubes,
    fold_elem,
    is_last_axis,
    named_elem,
    one_operand,
    sum_elem,
)
from .reduce_kernels import reduce_segments, reduce_whole
from .tickets import ticket_word

__all__ = ["max", "min", "reduce_into", "sum"]

#: Candidates ``(units per cube, reads per unit per step, through planes, in lines, spread)``,
#: tuned per problem class; the first serves untuned problems (one launch where it can be),
#: the one without planes devices whose plane operations lack the element type. ``spread``: a
#: whole-array reduction's partials per compute unit, folded by the last cube in the same
#: launch where the device fences memory (0: as many as :data:`MAX_PARTIALS` allows, folded by
#: a second launch).
SHAPES = (
    (256, 8, True, True, 4),
    (256, 4, True, False, 0),
    (256, 16, True, False, 0),
    (1024, 4, True, False, 0),
    (64, 8, True, False, 0),
    (256, 8, False, False, 0),
    (256, 4, True, True, 0),
)
#: The most per-cube partials of a whole-array reduction: one cube folds them.
MAX_PARTIALS = 2048
#: A whole-array reduction has at least this many running sums (units times lanes) where it has
#: the elements for them, so that no sum's chain of additions exceeds ``n / 65536`` (the float
#: bound ``docs/ops.md`` states).
MIN_SUMS = 65536
#: Sizes up to this one share one tuning result.
SMALL = 1 << 12
_TUNER = Tuner()


@dataclass(frozen=True, slots=True)
class Reduction:
    """One reduction to run: ``kind`` (``"sum"``, ``"min"`` or ``"max"``) over ``rows`` rows of
    ``n`` elements of ``x`` (``rows = 1``, ``whole``: over every element), into ``out``'s
    element type."""

    kind: str
    rows: int
    n: int
    whole: bool
    out: Elem


def sum(*args: Any, axis: int | None = None) -> RudaTensor:
    """The sum of ``x``'s elements (``sum(x)`` or ``sum(client, x)``): over all of them (a 0-d
    tensor), or over the last axis with ``axis=-1`` (shape ``x.shape[:-1]``), on ``x``'s device,
    written asynchronously. The result's element type is NumPy's: i64 for bool, i8, i16 and
    i32, u64 for u8, u16 and u32 (i32 and u32 where the device lacks 64-bit integers), else
    ``x``'s. Integer sums are exact (they wrap as the result type does); float sums stay within
    the bound ``docs/ops.md`` states (f16 sums are f32 sums rounded once to f16). The first
    call of a device, element type and size class above 2**18 elements tunes the kernel
    (blocking).

    :raises TypeError: for an operand that is not a tensor (or, after a client, an array).
    :raises LayoutError: for a non-contiguous tensor or one of ``2**32`` or more elements.
    :raises LaunchConfigError: for another element type than bool, i8, u8, i16, u16, i32, u32,
        i64, u64, f16, f32, f64, or an ``axis`` other than None and -1 (or the last axis'
        index).
    :raises UnsupportedFeature: for an element type the device lacks.
    """
    return _reduce("sum", args, axis)


def min(*args: Any, axis: int | None = None) -> RudaTensor:
    """The least element of ``x``, over all elements or the last axis as :func:`sum`; in ``x``'s
    element type, exact; NaN where a float input holds a NaN (as ``numpy.min``); for bool,
    whether all elements are true.

    :raises ValueError: when there is no element to reduce (an empty ``x``, or rows of 0).
    :raises: the errors of :func:`sum` too.
    """
    return _reduce("min", args, axis)


def max(*args: Any, axis: int | None = None) -> RudaTensor:
    """The greatest element of ``x``, as :func:`min` (for bool, whether any element is
    true)."""
    return _reduce("max", args, axis)


def _reduce(kind: str, args: tuple[Any, ...], axis: int | None) -> RudaTensor:
    client, x = one_operand(kind, args, FOLDED)
    rows, n, shape = _rows(kind, x.shape, axis)
    out_elem = sum_elem(client, x.elem) if kind == "sum" else x.elem
    if n == 0 and kind != "sum":
        raise ValueError(
            f"{kind}: x of shape {x.shape} has no element to reduce (NumPy's 'zero-size array "
            f"to reduction operation'); give a tensor with elements along the axis"
        )
    out = RudaTensor.empty(client, shape, out_elem.numpy)
    if rows == 0:
        return out
    if n == 0:
        return RudaTensor.from_numpy(client, np.zeros(shape, out_elem.numpy))
    problem = Reduction(kind, rows, n, axis is None, out_elem)
    _TUNER.execute(client, _tunable_set(), problem, x, out, tune=rows * n > UNTUNED)
    return out


def _rows(op: str, shape: tuple[int, ...], axis: int | None) -> tuple[int, int, tuple[int, ...]]:
    """``(rows, n, result shape)`` of a reduction of a tensor of ``shape`` over ``axis``."""
    if axis is None:
        return 1, math.prod(shape), ()
    if not is_last_axis(axis, len(shape)):
        raise LaunchConfigError(
            f"{op}: axis={axis} for a tensor of shape {shape}; ruda reduces over all elements "
            "(axis=None) or the last axis (axis=-1) of a tensor of rank 1 or more"
        )
    return math.prod(shape[:-1]), shape[-1], shape[:-1]


def _span(n: int, segs: int, line: int) -> tuple[int, int]:
    """``(span, segs)``: ``n`` elements cut into at most ``segs`` segments of ``span`` elements,
    a whole number of lines of ``line``, none empty."""
    span = -(-n // segs)
    span = -(-span // line) * line  # segments start on lines
    return span, -(-n // span)


def _spec(kind: str, x: ArrayArg, acc: Elem, cubes: Cubes, line: int) -> dict[str, Any]:
    """The compile-time arguments of the reduction kernels computing in ``acc``: lanes of
    running sums where a sum reads lines of ``acc`` itself."""
    lanes = kind == "sum" and line > 1 and x.elem is acc
    return {
        "Acc": acc,
        "KIND": kind,
        "FLOAT": acc.is_float,
        "PLANES": cubes.planes,
        "UNITS": cubes.units,
        "ITEMS": cubes.items,
        "LINE": line,
        "LANES": lanes,
    }


def reduce_into(
    client: ComputeClient,
    kind: str,
    x: ArrayArg,
    out: ArrayArg,
    rows: int,
    n: int,
    segs: int,
    cubes: Cubes,
    line: int = 1,
) -> None:
    """Enqueue one launch of :func:`.reduce_kernels.reduce_segments`: ``out[r * segs + s]`` is
    the ``kind`` reduction of segment ``s`` of row ``r`` (``rows`` rows of ``n > 0`` elements
    of ``x``, ``segs`` segments of ``ceil(n / segs)`` rounded up to ``line``), covered as
    ``cubes`` says, reading lines of ``line`` elements (``x`` must start on a line, and rows of
    several rows be whole lines), computed in ``fold_elem`` of ``out``'s element type. Shared
    with :mod:`.scan` (its tile sums).

    :raises LaunchConfigError: when ``out`` does not name its element type.
    """
    acc = fold_elem(named_elem("reduce", out))
    span, segs = _span(n, segs, line)
    count = builtins.min(rows * segs, client.properties().max_ruda_count[0], 65535)
    nan = float("nan") if acc.is_float else 0
    reduce_segments.launch_unchecked(
        client,
        RudaCount(count),
        RudaDim(cubes.units),
        x,
        out,
        rows,
        n,
        segs,
        span,
        nan,
        **_spec(kind, x, acc, cubes, line),
    )


def _reduce_whole(
    client: ComputeClient,
    kind: str,
    x: ArrayArg,
    out: ArrayArg,
    n: int,
    segs: int,
    cubes: Cubes,
    line: int,
    last_cube: bool,
) -> None:
    """The ``kind`` reduction of ``x``'s ``n`` elements into ``out[0]``, over at most ``segs``
    per-cube partials (in ``fold_elem`` of ``out``'s element type): one launch of
    :func:`.reduce_kernels.reduce_whole` where ``last_cube`` asks for it and the device has
    memory fences, else two of ``reduce_segments``."""
    acc = fold_elem(named_elem("reduce", out))
    span, segs = _span(n, segs, line)
    partials = ArrayArg(client.empty(segs * acc.nbytes), segs, acc)
    if not (last_cube and client.features().has(Feature.MEMORY_FENCE)):
        reduce_into(client, kind, x, partials, 1, n, segs, cubes, line)
        reduce_into(client, kind, partials, out, 1, segs, 1, cubes)
        return
    nan = float("nan") if acc.is_float else 0
    reduce_whole.launch_unchecked(
        client,
        RudaCount(segs),
        RudaDim(cubes.units),
        x,
        out,
        partials,
        ticket_word(client),
        n,
        span,
        nan,
        **_spec(kind, x, acc, cubes, line),
    )


def _runner(shape: tuple[int, int, bool, bool, int]) -> Callable[..., None]:
    """A candidate: ``shape`` is the cube's units, the reads per unit per step, whether cube
    folds go through planes, whether the reads are 16-byte lines where the operand allows
    them (else single elements), and the partials per compute unit (:data:`SHAPES`)."""
    units, items, planes, lines, spread = shape

    def run(client: ComputeClient, p: Reduction, x: RudaTensor, out: RudaTensor) -> None:
        cubes = Cubes.on(client, units, items, planes)
        total = p.rows * p.n
        source = ArrayArg(x.handle, total, x.elem)
        target = ArrayArg(out.handle, p.rows, p.out)
        # a whole reduction's segments start where reduce_into puts them; rows must be lines
        row = LINE_NBYTES if p.whole else p.n
        line = line_width(row, x.elem.nbytes, x.handle.binding().offset_bytes) if lines else 1
        if not p.whole:
            reduce_into(client, p.kind, source, target, p.rows, p.n, 1, cubes, line)
            return
        segs = builtins.min(MAX_PARTIALS, -(-p.n // (cubes.tile * line)))
        if spread:
            enough = -(-MIN_SUMS // (cubes.units * line))
            wanted = spread * client.properties().compute_units
            segs = builtins.min(segs, builtins.max(wanted, enough))
        if segs == 1:
            reduce_into(client, p.kind, source, target, 1, p.n, 1, cubes, line)
            return
        _reduce_whole(client, p.kind, source, target, p.n, segs, cubes, line, spread > 0)

    return run


def _key(p: Reduction, x: RudaTensor, out: RudaTensor) -> tuple[str, str, bool, int, int, bool]:
    # untuned problems keep keys of their own: rounded sizes of the two kinds may meet
    small = p.rows * p.n <= UNTUNED
    rows, n = anchor(p.rows, 1 << 16), anchor(p.n, 1 << 24, SMALL)
    return p.kind, x.elem.value, p.whole, rows, n, small


@functools.cache
def _tunable_set() -> TunableSet:
    """The candidates of every reduction (made once)."""
    tunables = [
        Tunable(
            f"reduce-{u}x{i}{'' if planes else '-shared'}{'-lines' if lines else ''}"
            f"{f'-spread{spread}' if spread else ''}",
            _runner((u, i, planes, lines, spread)),
        )
        for u, i, planes, lines, spread in SHAPES
    ]
    # version 3: whole reductions in one launch where the device fences memory
    return TunableSet("ruda.ops.reduce", _key, tunables, version=3)
