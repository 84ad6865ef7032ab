"""Lines: ``x.load_line(i, N)`` reads elements ``i*N .. i*N+N-1`` and ``x.store_line(i, v)``
writes them, for every numeric element type and N of 2, 4 and 8; lane-wise arithmetic, casts,
comparisons with ``select``, lane reads and reductions give the reference device's results
exactly; a partial last line is out of bounds as a whole (zeros, dropped store, a Validate
report naming its last element), in global and in shared memory."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    Line,
    Numeric,
    SharedMemory,
    f16,
    f32,
    fma,
    i32,
    kernel,
    select,
    sync_units,
    u32,
)
from ruda_core.runtime import (
    BoundsCheckMode,
    LaunchConfigError,
    RudaCount,
    RudaDim,
    ValidationError,
)
from ruda_core.testing.runner import TIMEOUT_S, read_array

WIDTHS = (2, 4, 8)
SENTINEL = 7


@kernel
def conformance_line_arith(x: Array[Numeric], y: Array[Numeric], N: Comptime[int]):
    i = ABSOLUTE_POS
    a = x.load_line(i, N)
    b = y.load_line(i, N)
    y.store_line(i, max(a + b, a * 3) - min(a, b))


@kernel
def conformance_saxpy_lines(x: Array[f32], y: Array[f32], alpha: f32, N: Comptime[int]):
    i = ABSOLUTE_POS
    lines = x.len() // N
    if i < lines:
        y.store_line(i, fma(x.load_line(i, N), Line.splat(alpha, N), y.load_line(i, N)))
    tail = lines * N + i  # the elements after the last whole line, one per unit
    if i < N and tail < x.len():
        y[tail] = fma(x[tail], alpha, y[tail])


@kernel
def conformance_line_mixed(x: Array[f32], ints: Array[i32], halves: Array[f16], out: Array[f32]):
    i = ABSOLUTE_POS
    v = x.load_line(i, 4)
    k = ints.load_line(i, 4)
    big = v > f32(k)  # a bool line
    picked = select(big, v, -v)
    halves.store_line(i, f16(picked * 0.5))
    acc: Line[f32, 4] = 1.0
    acc = acc + Line(v[3], v[2], v[1], v[0])
    out[i * 4] = picked.sum()
    out[i * 4 + 1] = acc.max()
    out[i * 4 + 2] = f32(k.min())
    out[i * 4 + 3] = 1.0 if big.any() and not big.all() else 0.0


@kernel
def conformance_line_copy(x: Array[u32], y: Array[u32], N: Comptime[int]):
    y.store_line(ABSOLUTE_POS, x.load_line(ABSOLUTE_POS, N))


@kernel
def conformance_shared_lines(x: Array[Numeric], y: Array[Numeric], N: Comptime[int]):
    """Each unit's line of ``x`` goes through shared memory to the mirrored unit, doubled."""
    s = SharedMemory(Numeric, 32 * N)
    s.store_line(u32(31) - UNIT_POS, x.load_line(ABSOLUTE_POS, N))
    sync_units()
    v = s.load_line(UNIT_POS, N)
    y.store_line(ABSOLUTE_POS, v + v)


@kernel
def conformance_shared_line_edge(y: Array[u32]):
    """Lines of 4 into a shared array of 14 elements: line 3 (elements 12 to 15) is past its
    end as a whole."""
    s = SharedMemory(u32, 14)
    if UNIT_POS < u32(14):
        s[UNIT_POS] = u32(SENTINEL)
    sync_units()
    if UNIT_POS < u32(4):
        first = UNIT_POS * u32(4)
        s.store_line(UNIT_POS, Line(first + u32(1), first + u32(2), first + u32(3), first + u32(4)))
    sync_units()
    if UNIT_POS < u32(4):
        y.store_line(UNIT_POS, s.load_line(UNIT_POS, 4))


def _numeric_elems(client, reference) -> list[Elem]:
    features, oracle = client.features(), reference.features()
    return [e for e in Elem if e.is_numeric and features.supports(e) and oracle.supports(e)]


def _inputs(elem: Elem, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if elem.is_float:
        return (rng.integers(-64, 64, n) / 4).astype(elem.numpy)
    info = np.iinfo(elem.numpy)
    return rng.integers(int(info.min), int(info.max), n, elem.numpy, endpoint=True)


def _run_arith(client, elem: Elem, width: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xh, yh = client.create_from_slice(x), client.create_from_slice(y)
    conformance_line_arith.launch(
        client,
        RudaCount(3),
        RudaDim(32),
        ArrayArg(xh, x.size, elem=elem),
        ArrayArg(yh, y.size, elem=elem),
        N=width,
    )
    return read_array(client, yh, elem.numpy)


@pytest.mark.parametrize("width", WIDTHS)
def test_lane_wise_arithmetic_of_every_type_matches_the_reference(client, reference, width):
    n = 96 * width + width // 2  # a partial last line, left as it was
    for elem in _numeric_elems(client, reference):
        x, y = _inputs(elem, n, 1), _inputs(elem, n, 2)
        got, want = _run_arith(client, elem, width, x, y), _run_arith(reference, elem, width, x, y)
        np.testing.assert_array_equal(got, want, err_msg=f"{elem} lines of {width}")
        np.testing.assert_array_equal(got[n - width // 2 :], y[n - width // 2 :])


@pytest.mark.parametrize("width", [4, 8])
def test_saxpy_over_lines_and_a_scalar_tail(client, width):
    n = 1000 * width + 3
    x = (np.arange(n) % 17).astype(np.float32)
    y = (np.arange(n) % 5).astype(np.float32) * 0.25
    xh, yh = client.create_from_slice(x), client.create_from_slice(y)
    cubes = -(-(n // width) // 64)
    conformance_saxpy_lines.launch(
        client, RudaCount(cubes), RudaDim(64), ArrayArg(xh, n), ArrayArg(yh, n), 0.5, N=width
    )
    np.testing.assert_array_equal(read_array(client, yh, np.float32), x * np.float32(0.5) + y)


def test_casts_comparisons_selects_and_reductions_match_the_reference(client, reference):
    if not client.features().supports(Elem.F16):
        pytest.skip(f"{client.device} has no f16")
    lines = 64
    x = ((np.arange(4 * lines) * 7) % 23 - 11).astype(np.float32) * 0.5
    ints = ((np.arange(4 * lines) * 5) % 13 - 6).astype(np.int32)

    def run(device):
        xh, ih = device.create_from_slice(x), device.create_from_slice(ints)
        hh, oh = device.empty(2 * x.size), device.empty(4 * x.size)
        conformance_line_mixed.launch(
            device,
            RudaCount(2),
            RudaDim(32),
            ArrayArg(xh, x.size),
            ArrayArg(ih, ints.size),
            ArrayArg(hh, x.size),
            ArrayArg(oh, x.size),
        )
        return read_array(device, hh, np.float16), read_array(device, oh, np.float32)

    (halves, out), (want_halves, want_out) = run(client), run(reference)
    np.testing.assert_array_equal(halves, want_halves)
    np.testing.assert_array_equal(out, want_out)
    v, k = x.reshape(-1, 4), ints.reshape(-1, 4)
    picked = np.where(v > k, v, -v)
    np.testing.assert_array_equal(halves, (picked * 0.5).astype(np.float16).ravel())
    np.testing.assert_array_equal(out[0::4], picked.sum(axis=1))
    np.testing.assert_array_equal(out[1::4], (1 + v[:, ::-1]).max(axis=1))
    np.testing.assert_array_equal(out[2::4], k.min(axis=1))


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_a_partial_last_line_reads_zeros_and_its_store_is_dropped(client):
    n = 4 * 3 + 2  # three whole lines of 4, then two elements
    x = np.arange(1, n + 1, dtype=np.uint32)
    xh = client.create_from_slice(x)
    yh = client.create_from_slice(np.full(n + 2, SENTINEL, np.uint32))
    conformance_line_copy.launch(
        client, RudaCount(1), RudaDim(8), ArrayArg(xh, n), ArrayArg(yh, n + 2), N=4
    )
    want = np.full(n + 2, SENTINEL, np.uint32)
    want[:12] = x[:12]  # line 3 of x (elements 12, 13 and two past the end) reads as zeros
    want[12:16] = 0
    np.testing.assert_array_equal(read_array(client, yh, np.uint32), want)


@pytest.fixture
def bounds_mode() -> Iterator[type[BoundsCheckMode]]:
    """``BoundsCheckMode``, returned to the environment's setting after the test."""
    yield BoundsCheckMode
    BoundsCheckMode.configure(None)


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_validate_reports_a_line_past_the_end_by_its_last_element(client, bounds_mode):
    client.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    xh = client.create_from_slice(np.arange(64, dtype=np.uint32))
    yh = client.create_from_slice(np.zeros(10, np.uint32))
    conformance_line_copy.launch_unchecked(
        client, RudaCount(1), RudaDim(4), ArrayArg(xh, 64), ArrayArg(yh, 10), N=4
    )
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    error = info.value
    assert error.buffer == "y" and error.length == 10
    assert error.index in (11, 15)  # the last element of line 2 or line 3
    got = read_array(client, yh, np.uint32)
    np.testing.assert_array_equal(got, np.r_[np.arange(8), 0, 0].astype(np.uint32))


def test_a_line_accessed_buffer_must_start_at_a_multiple_of_the_line_size(client):
    h = client.create_from_slice(np.arange(64, dtype=np.uint32))
    view = h.offset(4)  # one u32 in: a line of 4 u32 needs 16-byte alignment
    with pytest.raises(LaunchConfigError, match="multiple of 16 B"):
        conformance_line_copy.launch(
            client, RudaCount(1), RudaDim(4), ArrayArg(view, 15), ArrayArg(h, 16), N=4
        )
    conformance_line_copy.launch(
        client, RudaCount(1), RudaDim(4), ArrayArg(h.offset(16), 48), ArrayArg(h, 16), N=4
    )
    np.testing.assert_array_equal(read_array(client, h, np.uint32)[:16], np.arange(4, 20))


def test_u32_lane_reads_are_lane_ordered(client):
    x = np.arange(32, dtype=np.uint32)
    for width in WIDTHS:
        xh, yh = client.create_from_slice(x), client.create_from_slice(np.zeros(32, np.uint32))
        conformance_line_copy.launch(
            client, RudaCount(1), RudaDim(32 // width), ArrayArg(xh, 32), ArrayArg(yh, 32), N=width
        )
        np.testing.assert_array_equal(read_array(client, yh, np.uint32), x)


@pytest.mark.parametrize("width", WIDTHS)
def test_lines_through_shared_memory_match_the_reference(client, reference, width):
    n = 2 * 32 * width  # two cubes of 32 units
    for elem in _numeric_elems(client, reference):
        x = _inputs(elem, n, 3)

        def run(device, elem=elem, x=x):
            xh, yh = device.create_from_slice(x), device.empty(x.nbytes)
            conformance_shared_lines.launch(
                device,
                RudaCount(2),
                RudaDim(32),
                ArrayArg(xh, n, elem=elem),
                ArrayArg(yh, n, elem=elem),
                N=width,
            )
            return read_array(device, yh, elem.numpy)

        got, want = run(client), run(reference)
        np.testing.assert_array_equal(got, want, err_msg=f"{elem} lines of {width}")
        mirrored = x.reshape(2, 32, width)[:, ::-1].reshape(-1)
        np.testing.assert_array_equal(got, mirrored + mirrored, err_msg=f"{elem} lines of {width}")


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_a_shared_line_past_the_end_reads_zeros_and_its_store_is_dropped(client):
    yh = client.create_from_slice(np.full(16, SENTINEL, np.uint32))
    conformance_shared_line_edge.launch(client, RudaCount(1), RudaDim(16), ArrayArg(yh, 16))
    want = np.r_[np.arange(1, 13), np.zeros(4)].astype(np.uint32)
    np.testing.assert_array_equal(read_array(client, yh, np.uint32), want)
