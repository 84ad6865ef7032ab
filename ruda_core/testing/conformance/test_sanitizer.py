"""The sanitizer (``RUDA_SANITIZE=1``) on the devices that sanitize launches (the NumPy
reference device): a corpus of planted bugs, each kind at least twice, in shared and in global
(or local) memory or in planes, each beside a correct twin that must run clean; and what a
report says (the kernel, the source line, the array, the index, the units)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ruda_core.errors import SanitizerError
from ruda_core.lang import (
    ABSOLUTE_POS,
    PLANE_DIM,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_PLANE,
    Array,
    ArrayArg,
    LocalArray,
    SharedMemory,
    atomic_add,
    atomic_max,
    fence_device,
    kernel,
    plane_broadcast,
    plane_shuffle_down,
    plane_sum,
    sync_plane,
    sync_units,
    u32,
)
from ruda_core.runtime import ComputeClient, Feature, RudaCount, RudaDim
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import read_array

pytestmark = requires(Feature.SANITIZE)

BLOCK = 32
CUBES = 3
N = BLOCK * CUBES

# --- shared memory: races ---------------------------------------------------------------------


@kernel
def planted_scan_without_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    d = u32(1)
    while d < u32(BLOCK):
        v = buf[UNIT_POS]
        if UNIT_POS >= d:
            v += buf[UNIT_POS - d]
        buf[UNIT_POS] = v  # planted: other units still read buf
        d *= u32(2)
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@kernel
def twin_scan_with_barriers(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    d = u32(1)
    while d < u32(BLOCK):
        v = buf[UNIT_POS]
        if UNIT_POS >= d:
            v += buf[UNIT_POS - d]
        sync_units()
        buf[UNIT_POS] = v
        sync_units()
        d *= u32(2)
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@kernel
def planted_neighbour_without_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = buf[(UNIT_POS + u32(1)) % u32(BLOCK)]  # planted: read before the barrier


@kernel
def twin_neighbour_after_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[(UNIT_POS + u32(1)) % u32(BLOCK)]


@kernel
def planted_shift_without_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    v = buf[(UNIT_POS + u32(1)) % u32(BLOCK)]
    buf[UNIT_POS] = v  # planted: the left neighbour has not read its value yet
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@kernel
def twin_shift_with_barrier(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    v = buf[(UNIT_POS + u32(1)) % u32(BLOCK)]
    sync_units()
    buf[UNIT_POS] = v
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@kernel
def planted_shared_last_writer(x: Array[u32], out: Array[u32]):
    total = SharedMemory(u32, 1)
    total[0] = x[ABSOLUTE_POS]  # planted: every unit writes its own value
    sync_units()
    out[ABSOLUTE_POS] = total[0]


@kernel
def twin_shared_atomic_total(x: Array[u32], out: Array[u32]):
    total = SharedMemory(u32, 1)
    if UNIT_POS == u32(0):
        total[0] = u32(0)
    sync_units()
    atomic_add(total, 0, x[ABSOLUTE_POS])
    sync_units()
    out[ABSOLUTE_POS] = total[0]


# --- global memory: races ---------------------------------------------------------------------


@kernel
def planted_global_neighbour(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    out[i] = x[i]
    out[i] += out[(i + u32(1)) % out.len()]  # planted: another unit's element, no ordering


@kernel
def twin_global_neighbour(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    out[i] = x[i] + x[(i + u32(1)) % x.len()]


@kernel
def planted_global_maximum(x: Array[u32], out: Array[u32]):
    if x[ABSOLUTE_POS] > out[0]:  # planted: read and written by every unit
        out[0] = x[ABSOLUTE_POS]


@kernel
def twin_global_atomic_maximum(x: Array[u32], out: Array[u32]):
    atomic_max(out, 0, x[ABSOLUTE_POS])


@kernel
def planted_global_cube_total(x: Array[u32], out: Array[u32]):
    out[RUDA_POS] = x[ABSOLUTE_POS]  # planted: every unit of the cube writes


@kernel
def twin_global_plane_total(x: Array[u32], out: Array[u32]):
    total = plane_sum(x[ABSOLUTE_POS])  # BLOCK is one plane wide on the reference device
    if UNIT_POS == u32(0):
        out[RUDA_POS] = total


@kernel
def planted_last_cube_without_fence(x: Array[u32], out: Array[u32]):
    """out[:CUBES]: the partial sums, out[CUBES]: the ticket, out[CUBES + 1]: the total."""
    ticket = u32(0)
    if UNIT_POS == u32(0):
        out[RUDA_POS] = x[ABSOLUTE_POS]
        ticket = atomic_add(out, CUBES, u32(1))  # planted: no fence_device before the ticket
    if ticket == u32(CUBES - 1):
        total = u32(0)
        for k in range(CUBES):
            total += out[k]
        out[CUBES + 1] = total


@kernel
def twin_last_cube_with_fence(x: Array[u32], out: Array[u32]):
    ticket = u32(0)
    if UNIT_POS == u32(0):
        out[RUDA_POS] = x[ABSOLUTE_POS]
        fence_device()  # the partial is visible device-wide before the ticket is taken
        ticket = atomic_add(out, CUBES, u32(1))
    if ticket == u32(CUBES - 1):
        total = u32(0)
        for k in range(CUBES):
            total += out[k]
        out[CUBES + 1] = total


@kernel
def planted_first_ticket_folds(x: Array[u32], out: Array[u32]):
    ticket = u32(0)
    if UNIT_POS == u32(0):
        out[RUDA_POS] = x[ABSOLUTE_POS]
        fence_device()
        ticket = atomic_add(out, CUBES, u32(1))
    if UNIT_POS == u32(0) and ticket == u32(0):  # planted: the first ticket, not the last
        total = u32(0)
        for k in range(CUBES):
            total += out[k]  # cubes that take their tickets later have not written theirs
        out[CUBES + 1] = total


# --- uninitialised reads ------------------------------------------------------------------------


@kernel
def planted_shared_halo(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK + 1)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS] + buf[UNIT_POS + u32(1)]  # planted: buf[BLOCK] unwritten


@kernel
def twin_shared_halo(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK + 1)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    if UNIT_POS == u32(0):
        buf[BLOCK] = u32(0)
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS] + buf[UNIT_POS + u32(1)]


@kernel
def planted_bins_never_zeroed(x: Array[u32], out: Array[u32]):
    bins = SharedMemory(u32, 4)
    atomic_add(bins, x[ABSOLUTE_POS] % u32(4), u32(1))  # planted: adds to unwritten bins
    sync_units()
    if UNIT_POS < u32(4):
        out[ABSOLUTE_POS] = bins[UNIT_POS]


@kernel
def twin_bins_zeroed(x: Array[u32], out: Array[u32]):
    bins = SharedMemory(u32, 4)
    if UNIT_POS < u32(4):
        bins[UNIT_POS] = u32(0)
    sync_units()
    atomic_add(bins, x[ABSOLUTE_POS] % u32(4), u32(1))
    sync_units()
    if UNIT_POS < u32(4):
        out[ABSOLUTE_POS] = bins[UNIT_POS]


@kernel
def planted_local_partial(x: Array[u32], out: Array[u32]):
    acc = LocalArray(u32, 4)
    acc[0] = x[ABSOLUTE_POS]
    if x[ABSOLUTE_POS] % u32(2) == u32(0):
        acc[1] = u32(1)
    out[ABSOLUTE_POS] = acc[0] + acc[1]  # planted: odd values never wrote acc[1]


@kernel
def twin_local_full(x: Array[u32], out: Array[u32]):
    acc = LocalArray(u32, 4)
    acc[0] = x[ABSOLUTE_POS]
    acc[1] = u32(0)
    if x[ABSOLUTE_POS] % u32(2) == u32(0):
        acc[1] = u32(1)
    out[ABSOLUTE_POS] = acc[0] + acc[1]


# --- barriers every live unit must reach ----------------------------------------------------------


@kernel
def planted_barrier_in_branch(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    if UNIT_POS < u32(BLOCK // 2):
        sync_units()  # planted: half the cube never gets here
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@kernel
def twin_barrier_after_early_return(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    if ABSOLUTE_POS >= x.len():
        return  # units that leave take no part in later barriers
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS]


@kernel
def planted_barrier_in_uneven_loop(x: Array[u32], out: Array[u32]):
    total = u32(0)
    for _ in range(UNIT_POS % u32(3)):
        total += x[ABSOLUTE_POS]
        sync_units()  # planted: units run 0, 1 or 2 trips
    out[ABSOLUTE_POS] = total


@kernel
def twin_barrier_in_even_loop(x: Array[u32], out: Array[u32]):
    total = u32(0)
    for _ in range(RUDA_POS % u32(3)):  # the same trip count for a whole cube
        total += x[ABSOLUTE_POS]
        sync_units()
    out[ABSOLUTE_POS] = total


@kernel
def planted_shuffle_in_branch(x: Array[u32], out: Array[u32]):
    v = x[ABSOLUTE_POS]
    if UNIT_POS_PLANE < PLANE_DIM // u32(2):
        # planted: the lanes of the second quarter read the third, which is not here
        v += plane_shuffle_down(v, PLANE_DIM // u32(4))
    out[ABSOLUTE_POS] = v


@kernel
def twin_shuffle_before_branch(x: Array[u32], out: Array[u32]):
    v = x[ABSOLUTE_POS]
    below = plane_shuffle_down(v, PLANE_DIM // u32(4))
    if UNIT_POS_PLANE < PLANE_DIM // u32(2):
        v += below
    out[ABSOLUTE_POS] = v


@kernel
def planted_broadcast_in_branch(x: Array[u32], out: Array[u32]):
    v = x[ABSOLUTE_POS]
    if UNIT_POS_PLANE > u32(0):
        v = plane_broadcast(v, u32(0))  # planted: lane 0 is not here
    out[ABSOLUTE_POS] = v


@kernel
def twin_broadcast_before_branch(x: Array[u32], out: Array[u32]):
    v = x[ABSOLUTE_POS]
    first = plane_broadcast(v, u32(0))
    if UNIT_POS > u32(0):
        v = first
    out[ABSOLUTE_POS] = v


# --- out of bounds, in checked launches ---------------------------------------------------------


@kernel
def planted_shared_past_end(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[UNIT_POS + u32(1)]  # planted: buf[BLOCK] does not exist


@kernel
def twin_shared_wrapped(x: Array[u32], out: Array[u32]):
    buf = SharedMemory(u32, BLOCK)
    buf[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = buf[(UNIT_POS + u32(1)) % u32(BLOCK)]


@kernel
def planted_global_past_end(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS + u32(1)]  # planted: x[len] does not exist


@kernel
def twin_global_guarded(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i + u32(1) < x.len():
        out[i] = x[i + u32(1)]
    else:
        out[i] = u32(0)


@kernel
def planted_line_past_end(x: Array[u32], out: Array[u32]):
    pair = x.load_line(ABSOLUTE_POS // u32(2) + u32(1), 2)  # planted: the last line is x[N:N+2]
    out[ABSOLUTE_POS] = pair[0] + pair[1]


@kernel
def twin_line_wrapped(x: Array[u32], out: Array[u32]):
    pair = x.load_line((ABSOLUTE_POS // u32(2) + u32(1)) % (x.len() // u32(2)), 2)
    out[ABSOLUTE_POS] = pair[0] + pair[1]


# (planted kernel, correct twin, every kind the planted one must report)
CORPUS = {
    "shared-raw-scan": (
        planted_scan_without_barrier,
        twin_scan_with_barriers,
        {"write-after-read race", "read-after-write race"},
    ),
    "shared-raw-neighbour": (
        planted_neighbour_without_barrier,
        twin_neighbour_after_barrier,
        {"read-after-write race"},
    ),
    "shared-war-shift": (
        planted_shift_without_barrier,
        twin_shift_with_barrier,
        {"write-after-read race"},
    ),
    "shared-waw-total": (
        planted_shared_last_writer,
        twin_shared_atomic_total,
        {"write-after-write race"},
    ),
    "global-raw-neighbour": (
        planted_global_neighbour,
        twin_global_neighbour,
        {"read-after-write race", "write-after-read race"},
    ),
    "global-war-maximum": (
        planted_global_maximum,
        twin_global_atomic_maximum,
        {"write-after-read race"},
    ),
    "global-waw-cube-total": (
        planted_global_cube_total,
        twin_global_plane_total,
        {"write-after-write race"},
    ),
    "global-raw-unfenced-partials": (
        planted_last_cube_without_fence,
        twin_last_cube_with_fence,
        {"read-after-write race"},
    ),
    "global-war-first-ticket": (
        planted_first_ticket_folds,
        twin_last_cube_with_fence,
        {"write-after-read race"},
    ),
    "uninit-shared-halo": (planted_shared_halo, twin_shared_halo, {"uninitialised read"}),
    "uninit-shared-atomic-bins": (
        planted_bins_never_zeroed,
        twin_bins_zeroed,
        {"uninitialised read"},
    ),
    "uninit-local-partial": (planted_local_partial, twin_local_full, {"uninitialised read"}),
    "barrier-in-branch": (
        planted_barrier_in_branch,
        twin_barrier_after_early_return,
        {"divergent barrier"},
    ),
    "barrier-in-uneven-loop": (
        planted_barrier_in_uneven_loop,
        twin_barrier_in_even_loop,
        {"divergent barrier"},
    ),
    "plane-shuffle-in-branch": (
        planted_shuffle_in_branch,
        twin_shuffle_before_branch,
        {"divergent plane shuffle"},
    ),
    "plane-broadcast-in-branch": (
        planted_broadcast_in_branch,
        twin_broadcast_before_branch,
        {"divergent plane shuffle"},
    ),
    "oob-shared": (planted_shared_past_end, twin_shared_wrapped, {"out-of-bounds"}),
    "oob-global": (planted_global_past_end, twin_global_guarded, {"out-of-bounds"}),
    "oob-line": (planted_line_past_end, twin_line_wrapped, {"out-of-bounds"}),
}


@pytest.fixture
def sanitizing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sanitize the test's launches."""
    monkeypatch.setenv("RUDA_SANITIZE", "1")


def _run(client: ComputeClient, k: Callable[..., object] | object) -> np.ndarray:
    """Launch ``k`` over CUBES cubes of BLOCK units (x: 1..N) and read ``out``."""
    x = np.arange(1, N + 1, dtype=np.uint32)
    out = client.create_from_slice(np.zeros(N, dtype=np.uint32))
    k.launch(  # type: ignore[attr-defined]
        client,
        RudaCount(CUBES),
        RudaDim(BLOCK),
        ArrayArg(client.create_from_slice(x), N),
        ArrayArg(out, N),
    )
    return read_array(client, out, np.uint32)


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_planted_bug_is_reported(client, sanitizing, case):
    planted, _twin, kinds = CORPUS[case]
    if case.startswith("plane-") and client.properties().plane_dim < 4:
        pytest.skip(f"planes of {client.properties().plane_dim} lanes leave no lane out")
    with pytest.raises(SanitizerError) as caught:
        _run(client, planted)
    err = caught.value
    assert kinds <= set(err.kinds), f"{case}: expected {kinds}, the report held {err.kinds}"
    assert err.kernel == planted.name
    assert err.count >= len(err.findings) >= 1


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_correct_twin_runs_clean(client, sanitizing, case):
    _planted, twin, _kinds = CORPUS[case]
    _run(client, twin)  # raises SanitizerError on any finding


def _line_of(text: str) -> str:
    """``file:line`` of the first line of this module containing ``text``."""
    path = Path(__file__)
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if text in line:
            return f"{path.name}:{number}"
    raise LookupError(text)


def test_race_report_names_kernel_line_array_index_and_units(client, sanitizing):
    with pytest.raises(SanitizerError) as caught:
        _run(client, planted_neighbour_without_barrier)
    first = caught.value.findings[0]
    assert first.kernel == "planted_neighbour_without_barrier"
    assert first.kind == "read-after-write race"
    assert first.line == _line_of("# planted: read before the barrier")
    assert (first.array, first.index) == ("buf", 1)
    assert first.unit == ((0, 0, 0), (0, 0, 0))  # unit 0 of cube 0 read buf[1] ...
    assert first.other == ((0, 0, 0), (1, 0, 0))  # ... that unit 1 wrote
    assert caught.value.count == N  # every unit of every cube read a neighbour's element
    assert "planted_neighbour_without_barrier" in str(caught.value)


def test_barrier_report_names_a_unit_that_is_not_there(client, sanitizing):
    with pytest.raises(SanitizerError) as caught:
        _run(client, planted_barrier_in_branch)
    first = caught.value.findings[0]
    assert first.kind == "divergent barrier"
    assert first.line == _line_of("# planted: half the cube never gets here")
    assert first.unit[1][0] < BLOCK // 2 <= first.other[1][0]  # type: ignore[index]
    assert caught.value.count == CUBES * BLOCK // 2


def test_out_of_bounds_report_names_the_index_and_reads_zero(client, sanitizing):
    with pytest.raises(SanitizerError) as caught:
        _run(client, planted_global_past_end)
    first = caught.value.findings[0]
    assert (first.kind, first.array, first.index) == ("out-of-bounds", "x", N)
    assert first.unit == ((CUBES - 1, 0, 0), (BLOCK - 1, 0, 0))
    assert caught.value.count == 1


def test_a_line_past_the_end_is_reported_at_its_last_element(client, sanitizing):
    with pytest.raises(SanitizerError) as caught:
        _run(client, planted_line_past_end)
    first = caught.value.findings[0]
    assert (first.kind, first.array, first.index) == ("out-of-bounds", "x", N + 1)
    assert first.line == _line_of("# planted: the last line is x[N:N+2]")
    assert first.unit == ((CUBES - 1, 0, 0), (BLOCK - 2, 0, 0))
    assert caught.value.count == 2  # the last two units share the line past the end


def test_launches_are_not_checked_with_the_sanitizer_off(client, sanitizing, monkeypatch):
    monkeypatch.setenv("RUDA_SANITIZE", "0")
    got = _run(client, planted_global_past_end)
    assert got[-1] == 0 and got[0] == 2  # clamped as the checked contract says, and no report


@kernel
def twin_plane_counter_after_barrier(out: Array[u32]):
    counter = SharedMemory(u32, 1)
    if UNIT_POS == u32(0):
        counter[0] = u32(5)
    sync_units()
    seen = counter[0]  # every plane of the cube reads it
    sync_units()
    if UNIT_POS < PLANE_DIM:  # then the first plane alone, its steps ordered by sync_plane
        v = counter[0]
        sync_plane()
        if UNIT_POS == u32(0):
            counter[0] = v + u32(1)
        sync_plane()
    sync_units()
    out[ABSOLUTE_POS] = seen + counter[0]


def test_a_barrier_orders_the_reads_of_every_plane_before_it(client, sanitizing):
    """Reads by several planes, a barrier, then one plane's reads and, after ``sync_plane``,
    its write: no race (the reads before the barrier are not the plane's to wait for)."""
    plane = client.properties().plane_dim
    units = 2 * plane
    if units > client.properties().max_units_per_ruda:
        pytest.skip(f"{client.device} has no cube of two planes of {plane} lanes")
    out = client.create_from_slice(np.zeros(CUBES * units, dtype=np.uint32))
    twin_plane_counter_after_barrier.launch(
        client, RudaCount(CUBES), RudaDim(units), ArrayArg(out, CUBES * units)
    )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), 11)
