"""``cumsum``: running sums over the last axis of a tensor (or over all its elements), inclusive
as ``numpy.cumsum`` or exclusive.

A row of at most one tile (``units * items`` elements) is one launch of
:func:`.scan_kernels.scan_segments` per row; longer rows are reduce-then-scan, three launches:
the sums of tiles (:func:`.reduce.reduce_into`), an exclusive scan of each row's tile sums (this
same procedure, recursively), and the scan of every tile from its carry; or, in the chained
candidates on devices with memory fences whose cubes may wait on each other, one launch of
:func:`.scan_kernels.scan_chained` (a decoupled look-back). The cube size, the elements per
unit and the form are chosen by the autotuner per device, element type and size class. Sums of
f16 are computed in f32 (:func:`.primitive_inputs.fold_elem`; tile sums and carries too) and
rounded once, where written. :func:`scan_into` is also the exclusive scan of :mod:`.sorting`'s
digit counts. This module never imports a driver.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..autotune import Tunable, TunableSet, Tuner, anchor
from ..ir import Elem
from ..lang import ArrayArg
from ..runtime import (
    ComputeClient,
    Feature,
    LaunchConfigError,
    RudaCount,
    RudaDim,
    UnsupportedFeature,
)
from ..tensor import RudaTensor
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
from .reduce import reduce_into
from .scan_kernels import scan_chained, scan_segments
from .tickets import lookback, ticket_word

__all__ = ["SCAN_SHAPES", "chained", "cumsum", "scan_into"]

#: Candidates ``(units per cube, consecutive elements per unit, through planes, chained)``, tuned
#: per problem class; the first that runs serves untuned problems, the one without planes
#: devices whose plane operations lack the type.
SCAN_SHAPES = (
    (256, 8, True, True),
    (128, 16, True, True),
    (256, 4, True, False),
    (256, 8, True, False),
    (1024, 4, True, False),
    (128, 16, True, False),
    (256, 4, False, False),
)
#: The most cubes a scan launch asks for (cubes stride over the segments).
MAX_CUBES = 65535
#: The cubes per compute unit a chained scan launches at most (they take the tiles by ticket).
CHAINED_CUBES = 16
#: Row lengths up to this one share one tuning result.
SMALL = 1 << 12
_TUNER = Tuner()


@dataclass(frozen=True, slots=True)
class Scan:
    """A scan of ``rows`` rows of ``n`` elements into ``out``'s element type."""

    rows: int
    n: int
    exclusive: bool
    out: Elem


def cumsum(*args: Any, axis: int | None = -1, exclusive: bool = False) -> RudaTensor:
    """The running sums of ``x`` (``cumsum(x)`` or ``cumsum(client, x)``) along its last axis
    (``axis=-1``, the result has ``x``'s shape) or over all elements in row-major order
    (``axis=None``, a 1-D result, as ``numpy.cumsum``), on ``x``'s device, written
    asynchronously. ``exclusive=True`` gives the sums of the elements before each one (the first
    is 0). The element type is :func:`sum`'s (NumPy's: i64 for bool and signed integers, u64 for
    unsigned ones, else ``x``'s). Integer sums are exact (wrapping as the result type does);
    float sums stay within the bound ``docs/ops.md`` states (f16 sums are f32 sums rounded once
    to f16). The first call of a device, element type and size class above
    2**18 elements tunes the kernels (blocking).

    :raises TypeError: for an operand that is not a tensor (or, after a client, an array).
    :raises LayoutError: for a non-contiguous tensor or one of ``2**32`` or more elements.
    :raises LaunchConfigError: for another element type than bool, i8, u8, i16, u16, i32, u32,
        i64, u64, f16, f32, f64, or an ``axis`` other than None and -1 (or the last axis'
        index).
    :raises UnsupportedFeature: for an element type the device lacks.
    """
    client, x = one_operand("cumsum", args, FOLDED)
    if axis is None:
        shape: tuple[int, ...] = (math.prod(x.shape),)
    elif is_last_axis(axis, len(x.shape)):
        shape = x.shape
    else:
        raise LaunchConfigError(
            f"cumsum: axis={axis} for a tensor of shape {x.shape}; ruda scans the last axis "
            "(axis=-1) of a tensor of rank 1 or more, or all elements (axis=None)"
        )
    out_elem = sum_elem(client, x.elem)
    out = RudaTensor.empty(client, shape, out_elem.numpy)
    n = shape[-1]
    rows = math.prod(shape[:-1])
    if rows * n:
        problem = Scan(rows, n, bool(exclusive), out_elem)
        _TUNER.execute(client, _tunable_set(), problem, x, out, tune=rows * n > UNTUNED)
    return out


def scan_into(
    client: ComputeClient,
    x: ArrayArg,
    out: ArrayArg,
    rows: int,
    n: int,
    exclusive: bool,
    cubes: Cubes,
) -> None:
    """Enqueue the scan of ``rows`` rows of ``n > 0`` elements of ``x`` into ``out`` (a distinct
    array of ``rows * n`` elements, whose element type the sums take, computed in its
    ``fold_elem``), covered as ``cubes`` says (``items`` consecutive elements per unit).

    :raises LaunchConfigError: when ``out`` does not name its element type.
    """
    acc = fold_elem(named_elem("cumsum", out))
    tiles = -(-n // cubes.tile)
    if tiles == 1:
        unread = ArrayArg(out.handle, 0, acc)  # no carries: the kernel reads none
        _launch(client, x, unread, out, rows, n, 1, exclusive, False, cubes)
        return
    sums = ArrayArg(client.empty(rows * tiles * acc.nbytes), rows * tiles, acc)
    reduce_into(client, "sum", x, sums, rows, n, tiles, cubes)
    carries = ArrayArg(client.empty(rows * tiles * acc.nbytes), rows * tiles, acc)
    scan_into(client, sums, carries, rows, tiles, True, cubes)
    _launch(client, x, carries, out, rows, n, tiles, exclusive, True, cubes)


def _launch(
    client: ComputeClient,
    x: ArrayArg,
    carries: ArrayArg,
    out: ArrayArg,
    rows: int,
    n: int,
    segs: int,
    exclusive: bool,
    has_carry: bool,
    cubes: Cubes,
) -> None:
    span = -(-n // segs)  # as reduce_into cuts the tiles it sums
    segs = -(-n // span)
    count = builtins.min(rows * segs, MAX_CUBES, client.properties().max_ruda_count[0])
    scan_segments.launch_unchecked(
        client,
        RudaCount(count),
        RudaDim(cubes.units),
        x,
        carries,
        out,
        rows,
        n,
        segs,
        span,
        EXCLUSIVE=exclusive,
        HAS_CARRY=has_carry,
        PLANES=cubes.planes,
        UNITS=cubes.units,
        ITEMS=cubes.items,
    )


def chained(client: ComputeClient, x: RudaTensor, out: RudaTensor, p: Scan, cubes: Cubes) -> None:
    """Enqueue the scan ``p`` of ``x`` into ``out`` as one launch of
    :func:`.scan_kernels.scan_chained` in cubes as ``cubes`` says.

    :raises UnsupportedFeature: on a device without memory fences or whose cubes may not wait
        on each other (``Feature.MEMORY_FENCE``, ``Feature.UNBOUNDED_LOOPS``).
    """
    features = client.features()
    if not (features.has(Feature.MEMORY_FENCE) and features.has(Feature.UNBOUNDED_LOOPS)):
        raise UnsupportedFeature(
            f"cumsum: chained tiles wait on each other, which {client.device} does not run "
            "(no Feature.MEMORY_FENCE or Feature.UNBOUNDED_LOOPS); its scans take the "
            "candidates in three launches"
        )
    segs = -(-p.n // cubes.tile)
    tiles = p.rows * segs
    acc = fold_elem(p.out)
    state = lookback(client, tiles)
    props = client.properties()
    most = builtins.min(CHAINED_CUBES * props.compute_units, MAX_CUBES, props.max_ruda_count[0])
    scan_chained.launch_unchecked(
        client,
        RudaCount(builtins.min(tiles, most)),
        RudaDim(cubes.units),
        ArrayArg(x.handle, p.rows * p.n, x.elem),
        ArrayArg(out.handle, p.rows * p.n, p.out),
        state.flags,
        ArrayArg(state.sums, tiles, acc),
        ArrayArg(state.prefixes, tiles, acc),
        ticket_word(client),
        p.rows,
        p.n,
        segs,
        state.epoch,
        EXCLUSIVE=p.exclusive,
        PLANES=cubes.planes,
        UNITS=cubes.units,
        ITEMS=cubes.items,
    )


def _runner(shape: tuple[int, int, bool, bool]) -> Callable[..., None]:
    units, items, planes, chain = shape

    def run(client: ComputeClient, p: Scan, x: RudaTensor, out: RudaTensor) -> None:
        cubes = Cubes.on(client, units, items, planes)
        if chain and p.n > cubes.tile:
            chained(client, x, out, p, cubes)
            return
        total = p.rows * p.n
        source = ArrayArg(x.handle, total, x.elem)
        target = ArrayArg(out.handle, total, p.out)
        scan_into(client, source, target, p.rows, p.n, p.exclusive, cubes)

    return run


def _key(p: Scan, x: RudaTensor, out: RudaTensor) -> tuple[str, int, int, bool]:
    # untuned problems keep keys of their own: rounded sizes of the two kinds may meet
    small = p.rows * p.n <= UNTUNED
    return x.elem.value, anchor(p.rows, 1 << 16), anchor(p.n, 1 << 24, SMALL), small


@functools.cache
def _tunable_set() -> TunableSet:
    """The candidates of every scan (made once)."""
    tunables = [
        Tunable(
            f"scan-{u}x{i}{'' if planes else '-shared'}{'-chained' if chained else ''}",
            _runner((u, i, planes, chained)),
        )
        for u, i, planes, chained in SCAN_SHAPES
    ]
    # version 2: chained candidates, one launch where the device fences memory
    return TunableSet("ruda.ops.cumsum", _key, tunables, version=2)
