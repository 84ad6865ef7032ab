"""What the WebGPU driver does that the conformance suite does not reach: launches past
WebGPU's 65 535 workgroups per axis, more launches between flushes than a stream's record arena
holds, copies inside one page, byte buffers whose neighbouring bytes are written at once, and
the refusal of more arrays than a dispatch binds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("wgpu")

import ruda_core as ruda
from ruda_core.errors import RudaPanic, RudaWarning
from ruda_core.ir import Elem, Op
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    RUDA_POS_X,
    RUDA_POS_Y,
    RUDA_POS_Z,
    UNIT_POS,
    Array,
    Comptime,
    Numeric,
    SharedMemory,
    atomic_add,
    cos,
    f16,
    f32,
    find_first_set,
    fmod,
    i8,
    i16,
    i32,
    i64,
    kernel,
    leading_zeros,
    lgamma,
    plane_sum,
    popcount,
    remainder,
    sin,
    sync_units,
    tan,
    trailing_zeros,
    u8,
    u16,
    u32,
    u64,
)
from ruda_core.runtime import KernelTask, LaunchError, RudaCount, RudaDim, TooManyResources
from ruda_core.testing.irbuild import KernelBuilder, const
from ruda_wgpu.adapters import all_adapters
from ruda_wgpu.server import ARENA_NBYTES, MAX_DISPATCH, dispatches


@kernel
def cube_ids(out: Array[u32]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = RUDA_POS


@kernel
def byte_ids(out: Array[u8]):
    if ABSOLUTE_POS < out.len():
        out[ABSOLUTE_POS] = u8(ABSOLUTE_POS * u32(7))


@kernel
def cube_axes(out: Array[u32]):
    """Each cube's position, through a barrier (which the spare cubes of a fold never reach)."""
    seen = SharedMemory(u32, 1)
    if UNIT_POS == 0:
        seen[0] = RUDA_POS_X
    sync_units()
    if UNIT_POS == 1:
        out[3 * RUDA_POS] = seen[0]
        out[3 * RUDA_POS + 1] = RUDA_POS_Y
        out[3 * RUDA_POS + 2] = RUDA_POS_Z


def test_a_launch_of_more_cubes_than_an_axis_dispatches_runs_every_cube(client):
    cubes = 70_000  # past 65 535: folded into z, one dispatch
    out = ruda.asarray(np.zeros(cubes, np.uint32), client)
    cube_ids.launch(client, cubes, 1, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(cubes, dtype=np.uint32))


@pytest.mark.parametrize("count", [(70_000, 2, 1), (70_000, 1, 2)], ids=["folded", "split"])
def test_cubes_past_an_axis_see_their_own_positions_on_every_axis(client, count):
    out = ruda.asarray(np.zeros(3 * int(np.prod(count)), np.uint32), client)
    cube_axes.launch(client, RudaCount(*count), RudaDim(2), out)
    z, y, x = np.indices(count[::-1], dtype=np.uint32)
    want = np.stack([x, y, z], -1).reshape(-1, 3)
    np.testing.assert_array_equal(out.numpy().reshape(-1, 3), want)


@pytest.mark.parametrize("cx", [1, MAX_DISPATCH, MAX_DISPATCH + 1, 2**31 - 1])
def test_a_fold_dispatches_every_cube_once_within_the_axis_limit(cx):
    ((first, (gx, gy, gz)),) = dispatches(cx, 3, 1)
    assert first == 0 and gy == 3
    assert max(gx, gz) <= MAX_DISPATCH
    assert gx * gz >= cx > gx * (gz - 1)  # spare cubes in the last row only


@kernel
def put(out: Array[u32], at: u32, value: u32):
    out[at] = value


def test_launches_past_a_full_record_arena_each_read_their_own_arguments(client):
    """More launches between two syncs than a stream's record arena holds (a record takes at
    least 32 bytes, lavapipe's alignment of a uniform offset): the full arena is submitted and
    each launch still reads its own scalars."""
    n = ARENA_NBYTES // 32 + 100
    out = ruda.asarray(np.zeros(n, np.uint32), client)
    for k in range(n):
        put.launch(client, 1, 1, out, np.uint32(k), np.uint32(3 * k + 1))
    np.testing.assert_array_equal(out.numpy(), 3 * np.arange(n, dtype=np.uint32) + 1)


def test_every_unit_writes_its_own_byte_of_shared_words(client):
    n = 4099
    out = ruda.asarray(np.full(n, 255, np.uint8), client)
    byte_ids.launch(client, -(-n // 64), 64, out)
    np.testing.assert_array_equal(out.numpy(), (np.arange(n) * 7).astype(np.uint8))


def test_a_copy_between_handles_of_one_page_arrives(client):
    source = client.create_from_slice(np.arange(64, dtype=np.uint32).tobytes())
    target = client.empty(256)  # both slices of one pooled page
    client.copy(source, target)
    got = np.frombuffer(client.read_one(target), np.uint32)
    np.testing.assert_array_equal(got, np.arange(64, dtype=np.uint32))


@kernel
def constant_counts(out: Array[u32]):
    out[0] = popcount(u64(0xF0F0000000000001))
    out[1] = leading_zeros(i64(-1))
    out[2] = trailing_zeros(u64(0))
    out[3] = find_first_set(u64(1 << 40))
    out[4] = leading_zeros(u32(1))
    out[5] = find_first_set(i32(0))


def test_bit_counts_of_constants_are_the_counts_of_their_bits(client):
    if Elem.U64 not in client.features().elems:
        pytest.skip(f"{client.device} has no 64-bit integers")
    out = ruda.asarray(np.zeros(6, np.uint32), client)
    constant_counts.launch(client, 1, 1, out)
    np.testing.assert_array_equal(out.numpy(), [9, 0, 64, 41, 31, 0])


def test_more_arrays_than_a_dispatch_binds_are_refused_naming_the_limit(client):
    limit = all_adapters()[client.device.index].limits["max-storage-buffers-per-shader-stage"]
    if limit > 256:
        pytest.skip(f"{client.device} binds {limit} storage buffers a dispatch; not built here")
    k = KernelBuilder("too_many_arrays")
    arrays = [k.array(f"a{j}", Elem.U32) for j in range(limit + 1)]
    k.do(Op.INDEX_ASSIGN, None, arrays[0], const(0, Elem.U32), const(1, Elem.U32))
    handles = [client.empty(4) for _ in arrays]
    with pytest.raises(TooManyResources, match="max-storage-buffers-per-shader-stage"):
        client.launch(
            KernelTask(k.build()), 1, 1, [h.binding() for h in handles], (), [1] * len(handles)
        )
        client.sync().result()


def _skip_unless_lavapipe(client) -> None:
    if "llvmpipe" not in client.properties().name:
        pytest.skip(f"{client.device} is not lavapipe, which stops loops")


def _reported_cut_short(client, kernel_name: str) -> None:
    """The next sync raises that ``kernel_name`` may have been cut short."""
    with pytest.raises(LaunchError, match=f"kernel {kernel_name} may have been cut short"):
        client.sync().result()


def test_a_kernel_whose_loops_lavapipe_may_stop_fails_at_the_next_sync(client):
    _skip_unless_lavapipe(client)
    out, none = (ruda.asarray(np.zeros(1, np.uint32), client) for _ in range(2))
    two_loops.launch(client, 1, 1, ruda.asarray(np.array([1000], np.uint32), client), none, out)
    client.sync().result()
    assert out.numpy()[0] == 1000
    many = ruda.asarray(np.array([100_000], np.uint32), client)
    two_loops.launch(client, 1, 1, many, none, out)
    _reported_cut_short(client, "two_loops")
    for _ in range(2):  # its output is poisoned: no read returns the cut-short count
        with pytest.raises(RudaPanic, match="two_loops may have been cut short"):
            out.numpy()


@kernel
def two_loops(first: Array[u32], second: Array[u32], out: Array[u32]):
    i = UNIT_POS
    n = u32(0)
    k = u32(0)
    while k < first[i]:
        n += u32(1)
        k += u32(1)
    k = u32(0)
    while k < second[i]:
        n += u32(3)
        k += u32(1)
    out[i] = n


@kernel
def nested_loops(n: Array[u32], out: Array[u32]):
    total = u32(0)
    i = u32(0)
    while i < n[0]:
        j = u32(0)
        while j < n[0]:
            total += u32(1)
            j += u32(1)
        i += u32(1)
    out[0] = total


def test_a_nest_of_loops_that_lavapipe_stops_is_reported_and_one_within_its_limit_is_not(client):
    """200 x 200 turns run whole; 300 x 300 pass lavapipe's 65 535 in all, which a flag set where
    the inner loop exits did not show (the compiler folded it)."""
    _skip_unless_lavapipe(client)
    out = ruda.asarray(np.zeros(1, np.uint32), client)
    nested_loops.launch(client, 1, 1, ruda.asarray(np.array([200], np.uint32), client), out)
    assert out.numpy()[0] == 40_000
    nested_loops.launch(client, 1, 1, ruda.asarray(np.array([300], np.uint32), client), out)
    _reported_cut_short(client, "nested_loops")


@kernel
def return_after_a_spin(n: Array[u32], out: Array[u32]):
    k = u32(0)
    while k < n[0]:
        k += u32(1)
    j = u32(0)
    while j < u32(10):
        if j == u32(0):
            out[UNIT_POS] = k
            return
        j += u32(1)
    out[UNIT_POS] = u32(0)


def test_units_that_return_inside_a_loop_after_their_loops_were_stopped_are_reported(client):
    """Every unit returns from inside the second loop, after lavapipe stopped the first one:
    the check runs where the return leaves its loops."""
    _skip_unless_lavapipe(client)
    out = ruda.asarray(np.zeros(8, np.uint32), client)
    return_after_a_spin.launch(client, 1, 8, ruda.asarray(np.array([1000], np.uint32), client), out)
    np.testing.assert_array_equal(out.numpy(), np.full(8, 1000, np.uint32))
    many = ruda.asarray(np.array([100_000], np.uint32), client)
    return_after_a_spin.launch(client, 1, 8, many, out)
    _reported_cut_short(client, "return_after_a_spin")


@kernel
def loops_and_returns(spec: Array[u32], out: Array[u32]):
    i = UNIT_POS
    total = u32(0)
    a = u32(0)
    while a < spec[4 * i]:
        total += u32(1)
        a += u32(1)
    b = u32(0)
    while b < spec[4 * i + 1]:
        total += u32(3)
        if b == spec[4 * i + 2]:
            out[i] = total
            return
        b += u32(1)
    out[i] = total + spec[4 * i + 3]


def _loops_and_returns(spec: np.ndarray) -> list[int]:
    """What ``loops_and_returns`` writes, unit by unit."""
    out = []
    for first, second, at, extra in spec.reshape(-1, 4).tolist():
        turns = min(second, at + 1) if at < second else second
        out.append(first + 3 * turns + (0 if at < second else extra))
    return out


def test_a_return_inside_a_long_loop_costs_lavapipe_no_turns_where_no_unit_takes_it(client):
    """Unit 0 returns inside its loop after 50 000 turns, unit 1 (of the same plane) loops on:
    60 000 turns in all run whole (the check of a return made inside the loop would have cost
    a turn of each, and stopped both at 32 768); 100 000 are reported."""
    _skip_unless_lavapipe(client)
    out = ruda.asarray(np.zeros(16, np.uint32), client)
    for second, whole in ((60_000, True), (100_000, False)):
        spec = np.zeros((16, 4), np.uint32)
        spec[0], spec[1] = (0, 100_000, 49_999, 7), (0, second, 100_000, 7)
        loops_and_returns.launch(client, 1, 16, ruda.asarray(spec.ravel(), client), out)
        if whole:
            np.testing.assert_array_equal(out.numpy()[:2], [150_000, 3 * second + 7])
        else:
            _reported_cut_short(client, "loops_and_returns")


@settings(max_examples=30, deadline=None)
@given(
    units=st.lists(
        st.tuples(st.integers(0, 45_000), st.integers(0, 45_000), st.integers(0, 50_000)),
        min_size=16,
        max_size=16,
    )
)
def test_lavapipe_returns_right_results_or_reports_the_kernel_whatever_its_loops(client, units):
    """Two planes of units looping and returning at drawn turns: a launch either writes what
    the model does or raises at the sync, never wrong results; where no unit's loops take
    30 000 turns in all (a plane's loops then take fewer than 65 535), it runs whole."""
    _skip_unless_lavapipe(client)
    spec = np.array([(f, s, at, 7) for f, s, at in units], np.uint32).ravel()
    out = ruda.asarray(np.zeros(16, np.uint32), client)
    loops_and_returns.launch(client, 1, 16, ruda.asarray(spec, client), out)
    try:
        client.sync().result()
    except LaunchError as error:
        assert "loops_and_returns may have been cut short" in str(error)
        assert max(f + min(s, at + 1) for f, s, at in units) >= 30_000
        return
    np.testing.assert_array_equal(out.numpy(), _loops_and_returns(spec))


@pytest.mark.parametrize(
    ("dim", "other", "same"),
    [((16, 1), 1, True), ((16, 1), 8, False), ((5, 3), 1, True), ((5, 3), 5, False)],
)
def test_loops_of_two_units_of_a_plane_that_lavapipe_stops_together_are_reported(
    client, dim, other, same
):
    """lavapipe counts the turns of a plane's units together (its planes are runs of 8 units of
    a row): one unit's loop of 40 000 turns, then another's, stops the second after 25 534
    without a word. In one plane that must raise; in two planes both run whole."""
    if "llvmpipe" not in client.properties().name or client.properties().plane_dim != 8:
        pytest.skip(f"{client.device} is not lavapipe with planes of 8, which stops loops")
    first, second = np.zeros(16, np.uint32), np.zeros(16, np.uint32)
    first[0], second[other] = 40_000, 40_000
    out = ruda.asarray(np.zeros(16, np.uint32), client)
    two_loops.launch(client, 1, dim, ruda.asarray(first, client), ruda.asarray(second, client), out)
    if same:
        _reported_cut_short(client, "two_loops")
    else:
        np.testing.assert_array_equal(out.numpy()[[0, other]], [40_000, 120_000])


@kernel
def float_adds(out: Array[f32], turns: u32):
    k = u32(0)
    while k < turns:
        atomic_add(out, UNIT_POS, f32(1.0))  # a compare-exchange loop in WGSL
        k += u32(1)


def test_the_compare_exchange_loops_of_float_atomics_count_as_loop_turns(client):
    """lavapipe counts a float atomic's compare-exchange turns against its loop limit: 40 000
    adds a unit stopped at 32 768 without a report."""
    _skip_unless_lavapipe(client)
    out = ruda.asarray(np.zeros(8, np.float32), client)
    float_adds.launch(client, 1, 8, out, 30_000)
    np.testing.assert_array_equal(out.numpy(), np.full(8, 30_000, np.float32))
    float_adds.launch(client, 1, 8, out, 40_000)
    _reported_cut_short(client, "float_adds")


@kernel
def plane_sums(out: Array[u64], turns: u32):
    n = u64(0)
    k = u32(0)
    while k < turns:
        n += plane_sum(u64(1))  # a butterfly of shuffles: WGSL's subgroupAdd takes 32 bits
        k += u32(1)
    out[UNIT_POS] = n


def test_a_plane_sum_of_64_bits_in_a_long_loop_runs_whole(client):
    """Its butterfly's steps are written out where the driver stops loops: lavapipe counted
    the butterfly's loop turns too, and 15 000 sums stopped after 10 923 without a report."""
    if Elem.U64 not in client.features().elems or client.properties().plane_dim != 8:
        pytest.skip(f"{client.device} has no 64-bit integers or no planes of 8")
    out = ruda.asarray(np.zeros(8, np.uint64), client)
    plane_sums.launch(client, 1, 8, out, 15_000)
    np.testing.assert_array_equal(out.numpy(), np.full(8, 8 * 15_000, np.uint64))


@kernel
def add_lines(a: Array[Numeric], b: Array[Numeric], c: Array[Numeric], N: Comptime[int]):
    i = ABSOLUTE_POS
    c.store_line(i, a.load_line(i, N) + b.load_line(i, N))
    tail = c.len() // N * N + i  # the elements after the last whole line, one by one
    if i < N and tail < c.len():
        c[tail] = a[tail] - b[tail]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.float16])
@pytest.mark.parametrize("width", [2, 4])
def test_vector_line_accesses_give_exact_results_and_keep_the_bounds(client, dtype, width):
    if dtype is np.float16 and Elem.F16 not in client.features().elems:
        pytest.skip(f"{client.device} has no f16")
    n = 1001  # a partial last line, finished by scalar accesses to the vector bindings
    rng = np.random.default_rng(width)
    a, b = (rng.integers(0, 1000, n).astype(dtype) for _ in range(2))
    c = ruda.asarray(np.full(n, 7, dtype), client)
    lines = n // width
    add_lines.launch(client, -(-(lines + 1) // 64), 64, a, b, c, N=width)  # one cube too many
    want = np.concatenate(
        [a[: lines * width] + b[: lines * width], a[lines * width :] - b[lines * width :]]
    )
    np.testing.assert_array_equal(c.numpy(), want)


@kernel
def narrow_scalars(out: Array[f32], a: i8, b: u8, c: i16, d: u16, e: f16, f: i32, g: bool):
    out[0] = f32(a)
    out[1] = f32(b)
    out[2] = f32(c)
    out[3] = f32(d)
    out[4] = f32(e)
    out[5] = f32(f)
    out[6] = f32(1) if g else f32(0)


def test_scalars_narrower_than_a_word_reach_the_kernel_from_their_record_word(client):
    if Elem.F16 not in client.features().elems:
        pytest.skip(f"{client.device} has no f16")
    out = ruda.asarray(np.zeros(7, np.float32), client)
    args = (np.int8(-100), np.uint8(200), np.int16(-30000), np.uint16(60000), np.float16(-2.5))
    narrow_scalars.launch(client, 1, 1, out, *args, np.int32(-(2**31)), True)
    want = [-100, 200, -30000, 60000, -2.5, -(2**31), 1]
    np.testing.assert_array_equal(out.numpy(), np.array(want, np.float32))


@kernel
def divisions(a: Array[f32], b: Array[f32], mods: Array[f32], rems: Array[f32]):
    i = ABSOLUTE_POS
    if i < a.len():
        mods[i] = fmod(a[i], b[i])
        rems[i] = remainder(a[i], b[i])


def test_fmod_and_remainder_are_exact_beside_subnormal_divisors(client):
    """Bit for bit as the NumPy device, subnormals included: a float loop spun on a divisor the
    driver flushed in some operations only, and lavapipe, counting loop turns for its lanes
    together, then cut short the division of the normal operands beside it."""
    edges = [0.0, -0.0, 1.0, -3.0, 0.5, 7.5, 1e10, -1e-10, 3.4e38, np.inf, np.nan]
    edges += [1e-45, -1e-45, 3e-39, 1.1754942e-38, 1.1754944e-38]  # subnormal, then normal
    values = np.array(edges, np.float32)
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32)
    a = np.concatenate([np.repeat(values, len(values)), bits[:2048].view(np.float32)])
    b = np.concatenate([np.tile(values, len(values)), bits[2048:].view(np.float32)])
    results = []
    for device in (ruda.client("cpu"), client):
        mods, rems = (ruda.asarray(np.zeros_like(a), device) for _ in range(2))
        n = len(a)
        divisions.launch(
            device, -(-n // 64), 64, *(ruda.asarray(x, device) for x in (a, b)), mods, rems
        )
        results.append([mods.numpy().view(np.uint32), rems.numpy().view(np.uint32)])
    (want_mod, want_rem), (got_mod, got_rem) = results
    nan = lambda x: (x & 0x7FFFFFFF) > 0x7F800000  # noqa: E731  # NaN's sign is unspecified
    for want, got in ((want_mod, got_mod), (want_rem, got_rem)):
        np.testing.assert_array_equal(nan(got), nan(want))
        np.testing.assert_array_equal(got[~nan(got)], want[~nan(want)])


@kernel
def floor_divisions(a: Array[f32], b: Array[f32], quotients: Array[f32], mods: Array[f32]):
    i = ABSOLUTE_POS
    if i < a.len():
        quotients[i] = a[i] // b[i]
        mods[i] = a[i] % b[i]


def test_float_floor_division_and_modulo_are_the_references_on_near_whole_quotients(client):
    """``a // b`` and ``a % b`` of floats are ``floor(a / b)`` and ``a - floor(a / b) * b``
    with each step rounded, as on the NumPy device: the quotient by the significands' long
    division (WGSL allows 2.5 ulp, and NVIDIA's division gave floor(1e10 / 3) one high), the
    product kept apart from the difference (NVIDIA's driver fused them). Quotients one ulp
    either side of a whole number are where a coarse division shows."""
    rng = np.random.default_rng(11)
    n = 1 << 14
    b = (rng.uniform(1, 2, n) * 2.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    whole = rng.integers(1, 1 << 24, n).astype(np.float32)
    a = (whole * b).astype(np.float32)
    a[::3] = np.nextafter(a[::3], np.float32(np.inf))
    a[1::3] *= rng.choice(np.array([-1, 1], np.float32), len(a[1::3]))
    a[:4], b[:4] = np.float32([1e10, 1.0, 0.5, -7.25]), np.float32([3.0, 0.001, 0.001, 0.001])
    results = []
    for device in (ruda.client("cpu"), client):
        quotients, mods = (ruda.asarray(np.zeros_like(a), device) for _ in range(2))
        inputs = (ruda.asarray(x, device) for x in (a, b))
        floor_divisions.launch(device, -(-n // 64), 64, *inputs, quotients, mods)
        results.append((quotients.numpy(), mods.numpy()))
    np.testing.assert_array_equal(results[1][0], results[0][0])
    np.testing.assert_array_equal(results[1][1], results[0][1])


@kernel
def log_gammas(a: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < a.len():
        out[i] = lgamma(a[i])


def test_lgamma_is_within_32_ulp_and_near_its_negative_zeros_within_4e_7(client):
    """WGSL has no lgamma: ruda's (Cephes' lgamf) is checked here on its own, over a wider
    range than the float conformance test's. Left of 0 the reflection subtracts lgamma(-a)
    from a logarithm of about its size, and the driver's log is good to a few ulp: there the
    ulp are those of the larger of lgamma(-a) and the result, and near lgamma's zeros the bound
    is absolute."""
    rng = np.random.default_rng(3)
    parts = [
        rng.uniform(-30, 30, 4000),
        rng.uniform(0.7, 2.6, 4000),
        10.0 ** rng.uniform(-30, 30, 2000),
    ]
    a = np.concatenate(parts).astype(np.float32)
    a = a[~((a <= 0) & (a == np.floor(a)))]
    out = ruda.asarray(np.zeros_like(a), client)
    log_gammas.launch(client, -(-len(a) // 64), 64, ruda.asarray(a, client), out)
    got = out.numpy().astype(np.float64)
    want = np.array([math.lgamma(float(x)) for x in a])
    reflected = np.array([abs(math.lgamma(-float(x))) if x < 0 else 0.0 for x in a])
    scale = np.maximum(np.abs(want), reflected).astype(np.float32)
    ulp = np.abs(got - want) / np.spacing(scale).astype(np.float64)
    near_a_zero = (a < 0) & (np.abs(want) < 0.1)
    assert ulp[~near_a_zero].max() <= 32
    assert np.abs(got - want)[near_a_zero].max() <= 4e-7


@kernel
def trigonometry(a: Array[f32], sines: Array[f32], cosines: Array[f32], tangents: Array[f32]):
    i = ABSOLUTE_POS
    if i < a.len():
        sines[i] = sin(a[i])
        cosines[i] = cos(a[i])
        tangents[i] = tan(a[i])


def test_sin_cos_and_tan_reduce_every_finite_argument_exactly(client):
    """The drivers' builtins reduce large arguments coarsely (lavapipe's cos(1e10) was 1.0, not
    0.873) and WGSL promises them only within [-pi, pi]: ruda reduces the argument itself, so
    every finite f32 up to 3.4e38 gives the float table's tolerance, 16 ulp (16 f32 epsilons
    absolutely below 1), signed zeros and NaNs kept."""
    rng = np.random.default_rng(5)
    wide = rng.uniform(-1, 1, 6000) * 10.0 ** rng.integers(-3, 39, 6000)
    edges = [0.0, -0.0, np.pi / 4, 1.5707964, 765.0, 1e10, -1e10, 3.4e38, np.inf, np.nan]
    # the f32 next to multiples of pi/2, where tan's result takes r's relative error, on both
    # sides of the two reductions' boundary (256 pi/2)
    poles = (np.arange(1, 600) * (np.pi / 2)).astype(np.float32)
    beside = [np.nextafter(poles, np.float32(np.inf)), np.nextafter(poles, np.float32(0))]
    a = np.concatenate([edges, wide, poles, *beside]).astype(np.float32)
    outs = [ruda.asarray(np.zeros_like(a), client) for _ in range(3)]
    trigonometry.launch(client, -(-len(a) // 64), 64, ruda.asarray(a, client), *outs)
    exact = a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        wants = (np.sin(exact), np.cos(exact), np.tan(exact))
    for out, want in zip(outs, wants, strict=True):
        got = out.numpy()
        error = np.abs(got.astype(np.float64) - want)
        ulp = np.spacing(np.abs(want.astype(np.float32))).astype(np.float64)
        close = (error <= 16 * ulp) | ((np.abs(want) < 1) & (error <= 16 * 2.0**-23))
        assert (close | (np.isnan(got) & np.isnan(want))).all(), a[~close][:8]
        assert np.signbit(got[:2]).tolist() == np.signbit(want[:2]).tolist()


@kernel
def print_many(n: u32):
    i = ABSOLUTE_POS
    if i < n:
        print("unit", i)


def test_prints_past_the_record_buffer_are_dropped_with_a_warning_and_the_rest_print(client, capfd):
    """A launch printing more than its stream's 16 MiB of records prints those that fit, each
    whole, and warns of the bytes dropped: the record that ran past the buffer's end marks
    where the records end (what follows it is not read; see ``tests/codegen/test_print.py``)."""
    n = 1 << 20  # records of 4 words: 16 MiB holds 1 048 575 of them
    capfd.readouterr()
    with pytest.warns(RudaWarning, match="did not fit the 16 MiB record buffer"):
        print_many.launch(client, n // 256, 256, n)
        client.sync().result()
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) == (16 << 20) // 16 - 1
    assert all(line.startswith("unit ") and line[5:].isdigit() for line in lines)
    assert len(set(lines)) == len(lines)


@kernel
def float_recurrences(out: Array[f32], n: u32, s: f32):
    i = ABSOLUTE_POS
    if i < out.len():
        acc = f32(0)
        for _ in range(n):
            acc = acc + f32(1)
        scaled = f32(1)
        for _ in range(n):
            scaled *= s
        out[i] = acc + scaled


def test_a_float_recurrence_over_a_run_time_count_builds_and_matches_the_reference(client):
    """Where the driver stops loops, a short loop body is written out many times per turn;
    the values of one copy feed the next, which the emitter's analysis must not nest."""
    want = np.zeros(4, np.float32)
    got = np.zeros(4, np.float32)
    float_recurrences.launch(ruda.client("cpu"), 1, 4, want, 10, 0.5)
    float_recurrences.launch(client, 1, 4, got, 10, 0.5)
    np.testing.assert_array_equal(got, want)
    assert want[0] == np.float32(10 + 0.5**10)
