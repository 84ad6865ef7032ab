"""Barriers of the cube that count or reduce a predicate (``sync_units_count/and/or``), and the
memory fences, against the NumPy reference device: the counts of every cube shape, the
barrier's ordering of shared memory, repeated use in a loop, and the last-cube pattern of a
grid reduction (``fence_device`` before a wrapping ticket), values computed before a
barrier staying each unit's own after it, and a loop over blocks whose barriers cut it into
regions, each unit's values placed through shared arrays of the cube's size (the probe's
kernel of places, a sort's scatter)."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, Op
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_COUNT,
    RUDA_DIM,
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    SharedMemory,
    atomic_add,
    atomic_inc_wrap,
    fence_device,
    fence_units,
    kernel,
    sync_units_and,
    sync_units_count,
    sync_units_or,
    u32,
)
from ruda_core.probe_kernel import ruda_probe_places
from ruda_core.runtime import Feature, RudaCount, RudaDim
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.markers import need, requires
from ruda_core.testing.runner import read_array, run_definition

#: Cube shapes (RudaDim) of the reducing-barrier tests: powers of two or not, 1 to 3 axes.
SHAPES = [(64, 1, 1), (8, 4, 1), (5, 3, 2), (1, 1, 1), (96, 1, 1)]
CUBES = 3


@kernel
def conformance_reducing_barriers(x: Array[u32], out: Array[u32]):
    cache = SharedMemory(u32, 128)
    i = RUDA_POS * RUDA_DIM + UNIT_POS  # cube by cube, whatever the cube's shape
    n = x.len()
    v = x[i]
    cache[UNIT_POS] = v
    count = sync_units_count(v > u32(0))
    neighbour = cache[(UNIT_POS + u32(1)) % RUDA_DIM]  # written before the barrier
    out[i] = count
    out[n + i] = u32(sync_units_and(v > u32(0)))
    out[u32(2) * n + i] = u32(sync_units_or(v > u32(1)))
    out[u32(3) * n + i] = neighbour


@kernel
def conformance_counts_in_a_loop(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    v = x[i]
    total = u32(0)
    for k in range(7):
        total += sync_units_count(v % u32(7) == u32(k)) * u32(k + 1)
        fence_units()
    out[i] = total


@kernel
def conformance_last_cube_sums(x: Array[u32], partial: Array[u32], state: Array[u32]):
    """state[0]: the ticket counter (back to 0 after the launch), state[1]: the total."""
    part = SharedMemory(u32, 1)
    if UNIT_POS == u32(0):
        part[0] = u32(0)
    if sync_units_or(ABSOLUTE_POS < x.len()):  # a barrier: part is cleared
        atomic_add(part, 0, x[ABSOLUTE_POS])  # 0 past the end, in a checked launch
    units = sync_units_count(True)  # a barrier: every add is done
    ticket = u32(0)
    if UNIT_POS == u32(0):
        partial[RUDA_POS] = part[0]
        fence_device()  # the partial is visible device-wide before the ticket is taken
        ticket = atomic_inc_wrap(state, 0, RUDA_COUNT - u32(1))
    if sync_units_or(UNIT_POS == u32(0) and ticket == RUDA_COUNT - u32(1)):
        fence_device()
        k = UNIT_POS
        while k < RUDA_COUNT:
            atomic_add(state, 1, partial[k])
            k += units


def _run(client, kern, x: np.ndarray, outs: list[int], dim, count: int = CUBES) -> list:
    handles = [client.create_from_slice(np.zeros(n, np.uint32)) for n in outs]
    kern.launch(
        client,
        RudaCount(count),
        RudaDim(*dim),
        ArrayArg(client.create_from_slice(x), x.size),
        *(ArrayArg(h, n) for h, n in zip(handles, outs, strict=True)),
    )
    return [read_array(client, h, np.uint32) for h in handles]


@pytest.mark.parametrize("dim", SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_reducing_barriers_match_the_reference(client, reference, dim):
    units = dim[0] * dim[1] * dim[2]
    if units > client.properties().max_units_per_ruda:
        pytest.skip(f"{client.device} has fewer than {units} units per cube")
    n = CUBES * units
    rng = np.random.default_rng(units)
    x = rng.integers(0, 3, n).astype(np.uint32)
    x[:units] = rng.integers(1, 3, units)  # cube 0: every value > 0
    x[units : 2 * units] = 0  # cube 1: none
    (got,) = _run(client, conformance_reducing_barriers, x, [4 * n], dim)
    (want,) = _run(reference, conformance_reducing_barriers, x, [4 * n], dim)
    np.testing.assert_array_equal(got, want)
    cubes = x.reshape(CUBES, units)
    got = got.reshape(4, CUBES, units)
    np.testing.assert_array_equal(
        got[0], np.repeat((cubes > 0).sum(axis=1), units).reshape(CUBES, units)
    )
    np.testing.assert_array_equal(got[1][:, 0], (cubes > 0).all(axis=1))
    np.testing.assert_array_equal(got[2][:, 0], (cubes > 1).any(axis=1))


@requires(Feature.MEMORY_FENCE)
def test_reducing_barriers_repeat_in_a_loop(client, reference):
    dim = (48, 1, 1)
    x = np.random.default_rng(5).integers(0, 1000, CUBES * 48).astype(np.uint32)
    (got,) = _run(client, conformance_counts_in_a_loop, x, [x.size], dim)
    (want,) = _run(reference, conformance_counts_in_a_loop, x, [x.size], dim)
    np.testing.assert_array_equal(got, want)
    per_cube = x.reshape(CUBES, 48) % 7
    totals = sum((per_cube == k).sum(axis=1) * (k + 1) for k in range(7))
    np.testing.assert_array_equal(got, np.repeat(totals, 48))


@requires(Feature.MEMORY_FENCE)
@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
@pytest.mark.parametrize("cubes", [1, 5, 37])
def test_last_cube_of_a_grid_reduction_sees_every_partial(client, reference, cubes):
    dim = (32, 1, 1)
    n = cubes * 32 - 7  # the last cube is partly idle
    x = np.random.default_rng(cubes).integers(0, 1 << 20, n).astype(np.uint32)
    got = _run(client, conformance_last_cube_sums, x, [cubes, 2], dim, cubes)
    want = _run(reference, conformance_last_cube_sums, x, [cubes, 2], dim, cubes)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    partial, state = got
    assert state[0] == 0, "the ticket counter wraps back to 0 after the last cube"
    assert state[1] == np.uint32(x.sum(dtype=np.uint64) % 2**32)
    np.testing.assert_array_equal(partial, np.add.reduceat(x, np.arange(0, n, 32)))


#: Units per cube of the negation test: more than one sub-group of 16 on a CPU.
_NEGATION_DIM = 64


def _negations_across_a_barrier(elem: Elem, n: int):
    """``out[2i] = -x[i]``, ``out[2i + 1] = -(x[i] + x[(i + 1) % n])``, both computed before a
    barrier and stored after it."""
    k = KernelBuilder(f"conformance_negation_across_a_barrier_{elem}")
    x, out = k.array("x", elem, read_only=True), k.array("out", elem)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    v = k.let(Op.INDEX, elem, x, i)
    after = k.let(
        Op.MOD, Elem.U32, k.let(Op.ADD, Elem.U32, i, const(1, Elem.U32)), const(n, Elem.U32)
    )
    w = k.let(Op.INDEX, elem, x, after)
    results = [k.let(Op.NEG, elem, v), k.let(Op.NEG, elem, k.let(Op.ADD, elem, v, w))]
    k.sync_units()
    first = k.let(Op.MUL, Elem.U32, i, const(len(results), Elem.U32))
    for slot, value in enumerate(results):
        at = k.let(Op.ADD, Elem.U32, first, const(slot, Elem.U32))
        k.do(Op.INDEX_ASSIGN, None, out, at, value)
    return k.build()


def _run_negations(client, reference, elem: Elem, defn, **scalars: int):
    """``defn`` over ``x`` (``CUBES`` cubes of :data:`_NEGATION_DIM` values from -14.25 up,
    zeros among them) and two outputs a value, on the device and the reference: ``x`` and the
    outputs of each."""
    n = CUBES * _NEGATION_DIM
    x = (np.arange(n) % 29 - 14.25).astype(elem.numpy)
    x[::7] = 0  # -0.0 as well
    arrays = [x, np.zeros(2 * n, elem.numpy)]
    got, want = (
        run_definition(c, defn, arrays, list(scalars.values()), count=CUBES, dim=_NEGATION_DIM)[1]
        for c in (client, reference)
    )
    return x, got, want


@pytest.mark.parametrize("elem", [Elem.F16, Elem.BF16, Elem.F32, Elem.F64], ids=str)
def test_a_negation_computed_before_a_barrier_is_the_units_own_after_it(client, reference, elem):
    """Intel's CPU OpenCL compiler once gave every sub-group of 16 units of a larger cube the
    last sub-group's values of a float negation that was live across a barrier."""
    need(client, elem, reference=reference)
    defn = _negations_across_a_barrier(elem, CUBES * _NEGATION_DIM)
    x, got, want = _run_negations(client, reference, elem, defn)
    expected = np.stack([-x, -(x + np.roll(x, -1))], axis=1).ravel()
    assert want.tobytes() == expected.astype(elem.numpy).tobytes()
    assert got.tobytes() == want.tobytes(), np.nonzero(got != want)[0][:16]


def _negation_shared_across_a_barrier(elem: Elem):
    """``tile[u] = -x[i]`` before a barrier, ``out[i] = max(tile[u], -x[i])`` after it: the
    second negation is the first one's value, which a compiler may keep live across it."""
    k = KernelBuilder(f"conformance_negation_shared_across_a_barrier_{elem}")
    x, out = k.array("x", elem, read_only=True), k.array("out", elem)
    tile = k.shared("tile", elem, 16)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    v = k.let(Op.INDEX, elem, x, i)
    k.store(tile, builtin("UNIT_POS"), k.let(Op.NEG, elem, v))
    k.sync_units()
    mine = k.load(tile, builtin("UNIT_POS"))
    k.store(out, i, k.let(Op.MAX, elem, mine, k.let(Op.NEG, elem, v)))
    return k.build()


@pytest.mark.parametrize("elem", [Elem.F16, Elem.BF16, Elem.F32, Elem.F64], ids=str)
def test_a_negation_stored_before_a_barrier_and_computed_again_after_it_is_kept(
    client, reference, elem
):
    """Intel's CPU OpenCL compiler took ``max(-v, -v)`` for ``v``, where one ``-v`` went through
    shared memory across a barrier and the other was computed after it, in cubes of 4 x 4."""
    need(client, elem, reference=reference)
    x = np.zeros(64, elem.numpy)
    x[[5, 24, 41]] = [3.0, 0.25, -7.5]
    x[27] = -0.0
    defn = _negation_shared_across_a_barrier(elem)
    got, want = (
        run_definition(c, defn, [x, np.zeros_like(x)], count=(2, 2, 1), dim=(4, 4, 1))[1]
        for c in (client, reference)
    )
    assert want.tobytes() == (-x).tobytes()
    assert got.tobytes() == want.tobytes(), (np.nonzero(got != want)[0], got[got != want])


#: How a value is negated through a constant in the loop test below: the product with -1, the
#: quotient by -1, the difference from -0.0, and the quotient by a choice of two negative
#: constants whose condition a compiler decides (a float is never below itself).
_NEGATING_FORMS = ("mul", "div", "sub", "choice")


def _negated_in_a_loop_of_barriers(elem: Elem, form: str):
    """In each of ``turns`` turns, ``tile[u] = v op c`` (``v = x[i]``, the value negated
    through a negative constant ``c``, the same every turn), a barrier, ``w = tile[(u + 40) %
    64]`` and a barrier; then ``out[2i] = w`` and ``out[2i + 1] = v``."""
    k = KernelBuilder(f"conformance_negated_in_a_loop_of_barriers_{elem}_{form}")
    x, out = k.array("x", elem, read_only=True), k.array("out", elem)
    turns = k.scalar("turns", Elem.U32)
    tile = k.shared("tile", elem, _NEGATION_DIM)
    i = k.let(Op.ASSIGN, Elem.U32, builtin("ABSOLUTE_POS"))
    unit = builtin("UNIT_POS")
    v = k.let(Op.INDEX, elem, x, i)
    w = k.local("w", elem)
    k.assign(w, const(0.0, elem))
    turn = k.local("turn", Elem.U32)
    with k.range_(turn, const(0, Elem.U32), turns):
        if form == "sub":
            negated = k.let(Op.SUB, elem, const(-0.0, elem), v)
        elif form == "choice":
            never = k.let(Op.LT, Elem.BOOL, v, v)
            c = k.let(Op.SELECT, elem, never, const(-0.5, elem), const(-1.0, elem))
            negated = k.let(Op.DIV, elem, v, c)
        else:
            negated = k.let(Op.MUL if form == "mul" else Op.DIV, elem, v, const(-1.0, elem))
        k.store(tile, unit, negated)
        k.sync_units()
        shifted = k.let(Op.ADD, Elem.U32, unit, const(40, Elem.U32))
        k.assign(w, k.load(tile, k.let(Op.MOD, Elem.U32, shifted, const(_NEGATION_DIM, Elem.U32))))
        k.sync_units()
    first = k.let(Op.MUL, Elem.U32, i, const(2, Elem.U32))
    k.store(out, first, w)
    k.store(out, k.let(Op.ADD, Elem.U32, first, const(1, Elem.U32)), v)
    return k.build()


@pytest.mark.parametrize("form", _NEGATING_FORMS)
@pytest.mark.parametrize("elem", [Elem.F16, Elem.BF16, Elem.F32, Elem.F64], ids=str)
def test_a_value_negated_through_a_constant_in_a_loop_of_barriers_is_the_units_own(
    client, reference, elem, form
):
    """Intel's CPU OpenCL compiler makes a negation of ``v * -1``, ``v / -1`` or ``-0.0 - v``,
    hoists it out of the loop, and gives every sub-group of 16 units of the cube the last
    sub-group's values of it after the barriers (its analysis of which values are each
    unit's own has no case for a negation)."""
    need(client, elem, reference=reference)
    defn = _negated_in_a_loop_of_barriers(elem, form)
    x, got, want = _run_negations(client, reference, elem, defn, turns=2)
    units = np.arange(x.size)
    partner = units // _NEGATION_DIM * _NEGATION_DIM + (units + 40) % _NEGATION_DIM
    expected = np.stack([-x[partner], x], axis=1).ravel()
    assert want.tobytes() == expected.astype(elem.numpy).tobytes()
    assert got.tobytes() == want.tobytes(), np.nonzero(got != want)[0][:16]


@pytest.mark.parametrize("units", [1, 3, 4, 8, 16, 32, 64])
def test_values_placed_through_shared_memory_block_by_block_keep_their_places(
    client, reference, units
):
    """The probe's kernel of places (``ruda_probe_places``, whose docstring says which
    compilers got it wrong) at every cube size, not only the probe's."""
    if units > client.properties().max_units_per_ruda:
        pytest.skip(f"{client.device} has fewer than {units} units per cube")
    n = 7 * units - 1  # three whole blocks of two values a unit, then a partial one
    got, want = (_launch_places(c, units, n, cubes) for c, cubes in ((client, 2), (reference, 1)))
    np.testing.assert_array_equal(want, np.arange(n))
    np.testing.assert_array_equal(got, want)


def _launch_places(client, units: int, n: int, cubes: int) -> np.ndarray:
    out = client.create_from_slice(np.zeros(n, np.uint32))
    ruda_probe_places.launch(
        client, RudaCount(cubes), RudaDim(units), ArrayArg(out, n), UNITS=units
    )
    return read_array(client, out, np.uint32)
