"""``sort`` and ``argsort``: NumPy's stable sort of a 1-D tensor (or of all elements), and the
indices that sort it, by a least-significant-digit radix sort of 8 bits per pass.

The passes are :mod:`.sorting_kernels`': order-preserving keys, then per pass a stable scatter
of each block, whose digits' places come either from a histogram per block and the exclusive
scan of the counts by :func:`.scan.scan_into` (in passes), or, where a device runs kernels that
wait on another cube, from every pass' digit counts made with the keys and the counts of the
blocks before, read back during the scatter (chained; a pass whose digit is the same for every
key is skipped). Integers are sorted as keys and turned back. ``argsort`` carries each
element's index with its key; a float sort does too where the input holds a ``-0.0`` or a NaN,
and then gathers the elements by index, so the result holds the input's own bits (``-0.0`` and
``0.0`` in their input order, each NaN as it was, last); without them the keys are turned back.
``bool``, 8- and 16-bit integers and f16 are read and written as their unsigned bits, their
keys held in ``u32``, and take one pass or two.
The cube size, the keys per unit and passes or chained are chosen by the autotuner per device,
element type and size class above :data:`SMALL` elements; a sort of at most that many takes the
first candidate that runs, untuned (its few blocks make the candidates differ little, and tuning
would build every candidate's kernels for it). This module never imports a driver.

A runtime may supply its own (:mod:`.native`): ``"sort"`` and ``"argsort"``, each a callable
``(client, x) -> RudaTensor`` given a contiguous tensor of at least two elements of a type
above that the device supports (any shape: its elements in row-major order), returning the new
1-D tensor this module's function would, bit for bit and of the same element type. It must
respect the order of the calling thread's stream: read ``x`` after the work queued on it, and
write the result before the work queued after the call.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

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
from .native import implementation
from .primitive_inputs import FOLDED, Cubes, cube_units, is_last_axis, one_operand
from .scan import scan_into
from .sorting_kernels import (
    COUNT,
    DIGITS,
    radix_histogram,
    radix_keys,
    radix_scatter,
    state_size,
)

__all__ = ["argsort", "sort"]

#: Candidates ``(units per cube, keys per unit in a block, chained)``, tuned per problem: passes
#: of a histogram, a scan and a scatter each, or (chained) one histogram of every pass' digits
#: and per pass one scatter whose blocks chain their offsets (where a device runs such waits).
SORT_SHAPES = (
    (256, 8, False),
    (256, 32, False),
    (1024, 8, False),
    (256, 8, True),
    (256, 16, True),
    (512, 16, True),
    (512, 24, True),
)
#: The cube, elements per unit and planes of the scan of the digit counts (4 per unit: NVIDIA's
#: Vulkan driver gets the sums of a 256 x 8 scan through subgroups wrong beyond its first 256
#: elements, ``docs/conformance-results.md``).
COUNT_SCAN = (256, 4, True)
#: The fewest keys a cube counts in the histograms of chained candidates.
KEYS_PER_COUNTER = 8192
#: The fewest keys of a float sort that launches its scatters twice a pass, moving values only
#: where -0.0 or NaN are in the input: below it the launch costs more than the registers save
#: (an H200: 4 more launches cost about 60 us at 2**20 keys; the registers saved 365 us at 2**26).
SPLIT_VALUES = 1 << 24
#: The cubes per compute unit that chained candidates launch (their histograms and scatters).
WIDE_CUBES = 4
#: The shared bytes a scatter's block keeps for its cube folds' scratch where they go through
#: shared memory (planes of one lane): under 4 KiB at every cube size.
FOLDS_NBYTES = 4096
#: The most cubes an elementwise launch or a pass asks for (cubes stride over the rest).
MAX_CUBES = 65535
#: Sizes up to this one run the first candidate that runs, untuned (few blocks: the candidates
#: differ little).
SMALL = 1 << 16
_TUNER = Tuner()


@dataclass(frozen=True, slots=True)
class Sorting:
    """A sort of ``n`` elements: of the values (``indices`` false) or of their indices, with
    the indices written as ``index`` (i64, or u32 where the device lacks it)."""

    n: int
    indices: bool
    index: Elem


def sort(*args: Any, axis: int | None = -1) -> RudaTensor:
    """The elements of ``x`` (``sort(x)`` or ``sort(client, x)``) in ascending order, as
    ``numpy.sort(x, kind="stable")``: of a 1-D ``x`` (``axis=-1``), or of all elements in
    row-major order (``axis=None``), a new 1-D tensor of ``x``'s element type on its device,
    written asynchronously. Exact: floats sort NaN last, infinities in order, and ``-0.0``
    and ``0.0`` (which compare equal) in their input order. The first call of a device,
    element type and size class above 65 536 elements tunes the kernels (blocking).

    :raises TypeError: for an operand that is not a tensor (or, after a client, an array).
    :raises LayoutError: for a non-contiguous tensor or one of ``2**32`` or more elements.
    :raises LaunchConfigError: for another element type than bool, an integer or a float of
        16, 32 or 64 bits (not bf16), or ``axis=-1`` on a tensor of another rank than 1 (flatten
        it, or pass ``axis=None``).
    :raises UnsupportedFeature: for an element type the device lacks.
    """
    return _sort("sort", args, axis, indices=False)


def argsort(*args: Any, axis: int | None = -1) -> RudaTensor:
    """The indices that sort ``x``, as ``numpy.argsort(x, kind="stable")``: equal elements keep
    their input order. i64 (NumPy's ``intp``), or u32 where the device lacks 64-bit integers.
    Otherwise as :func:`sort`."""
    return _sort("argsort", args, axis, indices=True)


def _sort(op: str, args: tuple[Any, ...], axis: int | None, *, indices: bool) -> RudaTensor:
    client, x = one_operand(op, args, FOLDED)
    if axis is not None and (len(x.shape) != 1 or not is_last_axis(axis, 1)):
        raise LaunchConfigError(
            f"{op}: axis={axis} for a tensor of shape {x.shape}; ruda sorts a 1-D tensor "
            "(axis=-1) or all elements in row-major order (axis=None)"
        )
    n = math.prod(x.shape)
    index = Elem.I64 if client.features().supports(Elem.I64) else Elem.U32
    if n <= 1:
        host = np.zeros(n, index.numpy) if indices else x.numpy().reshape(n)
        return RudaTensor.from_numpy(client, host)
    native = implementation(op, client.runtime) if x.elem.nbytes >= 4 else None
    if native is not None:
        return cast(Callable[[ComputeClient, RudaTensor], RudaTensor], native)(client, x)
    out = RudaTensor.empty(client, (n,), (index if indices else x.elem).numpy)
    _TUNER.execute(client, _tunable_set(), Sorting(n, indices, index), x, out, tune=n > SMALL)
    return out


def _runner(shape: tuple[int, int, bool]) -> Callable[..., None]:
    wanted, items, chained = shape

    def run(client: ComputeClient, p: Sorting, x: RudaTensor, out: RudaTensor) -> None:
        if chained and not client.features().has(Feature.UNBOUNDED_LOOPS):
            raise UnsupportedFeature(
                f"sort: chained blocks wait on each other, which {client.device} does not run "
                "(no Feature.UNBOUNDED_LOOPS); its sorts take the candidates in passes"
            )
        props = client.properties()
        ballot = client.features().has(Feature.PLANE) and 1 < props.plane_dim <= 32
        plane = props.plane_dim if ballot else 1
        per_key = builtins.max(4, x.elem.nbytes) + (4 if p.indices or x.elem.is_float else 0)
        fits = props.max_shared_memory_nbytes
        units, fitted = fitted_block(cube_units(client, wanted), items, per_key, plane, fits)
        # a block's published digit count holds 30 bits
        chain = chained and p.n <= COUNT
        _radix_sort(client, p, x, out, units, fitted, ballot, -(-units // plane), chain)

    return run


def fitted_block(units: int, items: int, per_key: int, plane: int, fits: int) -> tuple[int, int]:
    """``(units, items)`` of a scatter's block, as asked where its shared memory fits ``fits``
    bytes (``per_key`` bytes staged per key, planes of ``plane`` lanes); else fewer keys per
    unit down to 8, then fewer units, then fewer keys again."""

    def shared(units: int, items: int) -> int:
        # 256 counters per plane, three arrays of 256 per cube and the plane folds' scratch,
        # the staged block, and without planes the shared-memory folds' scratch
        folds = FOLDS_NBYTES if plane == 1 else 0
        return (-(-units // plane) + 4) * DIGITS * 4 + units * items * per_key + folds

    while items > 8 and shared(units, items) > fits:
        items //= 2
    while units > 1 and shared(units, items) > fits:
        units //= 2
    while items > 1 and shared(units, items) > fits:
        items //= 2
    return units, items


def _radix_sort(
    client: ComputeClient,
    p: Sorting,
    x: RudaTensor,
    out: RudaTensor,
    units: int,
    items: int,
    ballot: bool,
    planes: int,
    lookback: bool,
) -> None:
    """Enqueue the whole sort of ``x`` into ``out`` in cubes of ``units`` (``planes`` planes),
    ``items`` keys per unit in a block, with the blocks chained (``lookback``) or in passes."""
    n, elem = p.n, x.elem
    key = Elem.U32 if elem.nbytes <= 4 else Elem.U64
    # 8- and 16-bit elements are read and written as their unsigned bits (the kernels' SIGN
    # says their width)
    stored = {1: Elem.U8, 2: Elem.U16}.get(elem.nbytes, elem)
    sign = 1 << (8 * elem.nbytes - 1)
    kind = "float" if elem.is_float else "int" if elem.is_signed else "uint"
    # argsort moves every index; a float sort only where -0.0 or NaN make keys ambiguous, from
    # SPLIT_VALUES keys in a second launch per pass that runs only then
    moves = "all" if p.indices else "flagged" if kind == "float" else "none"
    split = moves == "flagged" and n >= SPLIT_VALUES
    modes = ("unless-flagged", "when-flagged") if split else (moves,)
    # planes of one lane fold nothing: their cube folds would take more shared memory
    plane_sums = client.features().has(Feature.PLANE) and client.properties().plane_dim > 1
    passes = elem.nbytes
    blocks = -(-n // (units * items))
    cubes = builtins.min(MAX_CUBES, -(-n // 256))
    keys = [ArrayArg(client.empty(n * key.nbytes), n, key) for _ in range(2)]
    carried = 1 if moves == "none" else n
    values = [ArrayArg(client.empty(carried * 4), carried, Elem.U32) for _ in range(2)]
    zeros = np.zeros(state_size(passes) if lookback else 1, np.uint32)
    state = ArrayArg(client.create_from_slice(zeros), zeros.size, Elem.U32)
    tally = DIGITS * blocks
    unused = ArrayArg(client.empty(4), 1, Elem.U32)
    pair = [ArrayArg(client.empty(tally * 4), tally, Elem.U32) for _ in range(2)]
    status = pair if lookback else [unused, unused]
    counts, offsets = (unused, unused) if lookback else (pair[0], pair[1])
    source = ArrayArg(x.handle, n, stored)
    counters = cubes
    walkers = RudaCount(builtins.min(blocks, MAX_CUBES))
    if lookback:  # few cubes of many keys each: each cube adds its counts with global atomics
        wide = WIDE_CUBES * client.properties().compute_units
        counters = builtins.max(1, builtins.min(cubes, n // KEYS_PER_COUNTER, wide))
        # chained blocks go to cubes by ticket: a few cubes per compute unit walk them all,
        # each finding where the digits start once rather than once per block
        walkers = RudaCount(builtins.min(blocks, wide))
    radix_keys.launch_unchecked(
        client, RudaCount(counters), RudaDim(256), source, keys[0], state, status[0], n,
        tally if lookback else 0, SIGN=sign, KIND=kind, UNITS=256, CUBE=plane_sums,
        PASSES=passes, HISTOGRAMS=lookback, KEYS=not lookback,
    )  # fmt: skip
    scan = Cubes.on(client, *COUNT_SCAN)
    if p.indices:
        indices = ArrayArg(out.handle, n, p.index)
        elements = ArrayArg(client.empty(8), 1, stored)
    else:
        indices, elements = unused, ArrayArg(out.handle, n, stored)
    for k in range(passes):  # the chained passes skip where every key has the same digit
        if not lookback:
            radix_histogram.launch_unchecked(
                client, walkers, RudaDim(units), keys[k % 2], counts, n, 8 * k, blocks,
                UNITS=units, ITEMS=items,
            )  # fmt: skip
            scan_into(client, counts, offsets, 1, tally, True, scan)
        for mode in modes:
            radix_scatter.launch_unchecked(
                client, walkers, RudaDim(units), source, *keys, *values, elements, indices,
                state, counts, offsets, *status, n, 8 * k, blocks, UNITS=units, ITEMS=items,
                PLANES=planes, BALLOT=ballot, VALUES=mode, RESULT=p.indices, SIGN=sign,
                KIND=kind, CUBE=plane_sums, PASSES=passes, LOOKBACK=lookback,
            )  # fmt: skip


def _key(p: Sorting, x: RudaTensor, out: RudaTensor) -> tuple[str, bool, int]:
    return x.elem.value, p.indices, anchor(p.n, 1 << 26, SMALL)


@functools.cache
def _tunable_set() -> TunableSet:
    """The candidates of every sort (made once)."""
    tunables = [
        Tunable(f"radix-{u}x{i}{'-chained' if chained else ''}", _runner((u, i, chained)))
        for u, i, chained in SORT_SHAPES
    ]
    # version 5: 8- and 16-bit elements sorted in their own passes, no longer through 32 bits
    return TunableSet("ruda.ops.sort", _key, tunables, version=5)
