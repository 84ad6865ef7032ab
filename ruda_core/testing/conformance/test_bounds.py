"""Bounds: ``launch`` is always Checked (out-of-bounds reads give 0, writes are dropped, negative
indices never wrap); ``launch_unchecked`` follows ``BoundsCheckMode`` (enforce = Checked,
validate = Checked plus a ``ValidationError`` at the next sync counting every faulting launch
since the last one and naming kernel, buffer, index and length of the first, auto =
Unchecked)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    LocalArray,
    SharedMemory,
    i8,
    i32,
    i64,
    kernel,
    sync_units,
    u16,
    u32,
    u64,
)
from ruda_core.runtime import (
    BoundsCheckMode,
    OutOfBoundsReport,
    RudaCount,
    RudaDim,
    ValidationError,
)
from ruda_core.runtime.reports import REPORT_SLOTS
from ruda_core.testing.processes import run_script
from ruda_core.testing.runner import TIMEOUT_S, read_array, sharing_streams

#: These kernels go out of bounds on purpose, to show the checked contract: not sanitized.
pytestmark = pytest.mark.usefixtures("unsanitized")

SENTINEL = 0xABCD1234


@kernel
def conformance_shifted_read(x: Array[u32], out: Array[u32], shift: i32):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i32(i) + shift]


@kernel
def conformance_shifted_write(out: Array[u32], count: u32, shift: i32):
    i = ABSOLUTE_POS
    if i < count:
        out[i32(i) + shift] = i + u32(1)


@kernel
def conformance_shared_overrun(out: Array[u32]):
    a = SharedMemory(u32, 4)
    b = SharedMemory(u32, 8)
    b[UNIT_POS] = u32(500) + UNIT_POS
    sync_units()
    a[UNIT_POS] = u32(100) + UNIT_POS  # units 4..7 write past the end of a
    sync_units()
    out[UNIT_POS] = a[UNIT_POS]  # units 4..7 read past the end of a: 0
    out[UNIT_POS + u32(8)] = b[UNIT_POS]


@kernel
def conformance_constant_indices(x: Array[u32], out: Array[u32]):
    own = LocalArray(u32, 3)
    own[u64(0)] = x[u64(2)]
    own[i8(1)] = x[i64(3)]
    own[u16(2)] = x[i8(1)]
    own[i64(3)] = u32(9)  # past the end: dropped
    out[u64(0)] = own[u64(0)]
    out[i64(1)] = own[i8(1)]
    out[u16(2)] = own[u16(2)]
    out[3] = own[u64(3)]  # past the end: 0
    out[4] = x[i64(-1)]  # negative: 0
    out[5] = x[u64(2**32 + 1)]  # past the end, though its low 32 bits are not
    out[u64(2**32 + 6)] = u32(9)  # past the end: dropped
    out[i8(-1)] = u32(9)  # negative: dropped


@pytest.fixture
def bounds_mode() -> Iterator[type[BoundsCheckMode]]:
    """``BoundsCheckMode``, returned to the environment's setting after the test."""
    yield BoundsCheckMode
    BoundsCheckMode.configure(None)


def _read(client, n, length, shift, unchecked=False):
    x = client.create_from_slice(np.arange(1, n + 1, dtype=np.uint32))
    out = client.create_from_slice(np.full(length, SENTINEL, dtype=np.uint32))
    launch = (
        conformance_shifted_read.launch_unchecked if unchecked else conformance_shifted_read.launch
    )
    launch(
        client,
        RudaCount(-(-length // 32)),
        RudaDim(32),
        ArrayArg(x, n),
        ArrayArg(out, length),
        shift,
    )
    return out


def _write(client, n, length, shift, unchecked=False):
    """A buffer of ``n`` elements seen by the kernel as ``length``; it writes ``count = n``."""
    out = client.create_from_slice(np.full(n, SENTINEL, dtype=np.uint32))
    launch = (
        conformance_shifted_write.launch_unchecked
        if unchecked
        else conformance_shifted_write.launch
    )
    launch(client, RudaCount(-(-n // 32)), RudaDim(32), ArrayArg(out, length), n, shift)
    return out


def _expected_read(n: int, length: int, shift: int) -> np.ndarray:
    j = np.arange(length) + shift
    return np.where((j >= 0) & (j < n), j + 1, 0).astype(np.uint32)


def _expected_write(n: int, length: int, shift: int) -> np.ndarray:
    out = np.full(n, SENTINEL, dtype=np.uint32)
    for i in range(n):
        if 0 <= i + shift < length:
            out[i + shift] = i + 1
    return out


@pytest.mark.parametrize("shift", [0, 5, -3, -(2**31)])
def test_checked_out_of_bounds_reads_give_zero(client, shift):
    n, length = 50, 80
    got = read_array(client, _read(client, n, length, shift), np.uint32)
    np.testing.assert_array_equal(got, _expected_read(n, length, shift))


@pytest.mark.parametrize("shift", [0, 7, -5, -(2**31)])
def test_checked_out_of_bounds_writes_are_dropped(client, shift):
    n, length = 100, 60
    got = read_array(client, _write(client, n, length, shift), np.uint32)
    np.testing.assert_array_equal(got, _expected_write(n, length, shift))


def test_constant_indices_of_every_integer_type_are_checked_in_all_their_bits(client):
    x = client.create_from_slice(np.arange(10, 18, dtype=np.uint32))
    out = client.create_from_slice(np.full(8, SENTINEL, dtype=np.uint32))
    conformance_constant_indices.launch(
        client, RudaCount(1), RudaDim(1), ArrayArg(x, 8), ArrayArg(out, 8)
    )
    got = read_array(client, out, np.uint32)
    np.testing.assert_array_equal(got, [12, 13, 11, 0, 0, 0, SENTINEL, SENTINEL])


def test_checked_shared_memory_accesses_stay_in_their_array(client):
    out = client.create_from_slice(np.full(16, SENTINEL, dtype=np.uint32))
    conformance_shared_overrun.launch(client, RudaCount(1), RudaDim(8), ArrayArg(out, 16))
    got = read_array(client, out, np.uint32)
    np.testing.assert_array_equal(got[:8], [100, 101, 102, 103, 0, 0, 0, 0])
    np.testing.assert_array_equal(got[8:], 500 + np.arange(8))


def test_launch_stays_checked_whatever_the_mode(client, bounds_mode):
    bounds_mode.configure("validate")
    got = read_array(client, _write(client, 100, 60, 7), np.uint32)
    client.sync().result(timeout=TIMEOUT_S)  # launch is Checked, never Validate
    np.testing.assert_array_equal(got, _expected_write(100, 60, 7))
    bounds_mode.configure("auto")
    got = read_array(client, _read(client, 50, 80, 5), np.uint32)
    np.testing.assert_array_equal(got, _expected_read(50, 80, 5))


def test_unchecked_enforce_is_checked(client, bounds_mode):
    bounds_mode.configure(BoundsCheckMode.ENFORCE)
    got = read_array(client, _read(client, 50, 80, -3, unchecked=True), np.uint32)
    np.testing.assert_array_equal(got, _expected_read(50, 80, -3))
    got = read_array(client, _write(client, 100, 60, 7, unchecked=True), np.uint32)
    np.testing.assert_array_equal(got, _expected_write(100, 60, 7))
    client.sync().result(timeout=TIMEOUT_S)


def test_unchecked_auto_runs_in_bounds_kernels(client, bounds_mode):
    bounds_mode.configure(BoundsCheckMode.AUTO)
    got = read_array(client, _read(client, 80, 80, 0, unchecked=True), np.uint32)
    np.testing.assert_array_equal(got, np.arange(1, 81))
    client.sync().result(timeout=TIMEOUT_S)


def test_validate_reports_an_out_of_bounds_write_at_the_next_sync(client, bounds_mode):
    client.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    out = _write(client, 100, 60, 0, unchecked=True)  # units 60..99 write past the end
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    error = info.value
    assert error.kernel == "conformance_shifted_write" and error.buffer == "out"
    assert error.length == 60 and 60 <= error.index < 100
    message = str(error)
    for part in ("conformance_shifted_write", "out", str(error.index), "60"):
        assert part in message, f"{part!r} missing from {message!r}"
    np.testing.assert_array_equal(read_array(client, out, np.uint32), _expected_write(100, 60, 0))
    client.sync().result(timeout=TIMEOUT_S)  # reported once


def test_validate_reports_a_negative_read_index(client, bounds_mode):
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    out = _read(client, 50, 40, -2, unchecked=True)
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    assert info.value.buffer == "x" and info.value.length == 50
    assert info.value.index in (2**32 - 1, 2**32 - 2)  # -1 or -2 compared as u32, never wrapped
    np.testing.assert_array_equal(read_array(client, out, np.uint32), _expected_read(50, 40, -2))


def test_validate_is_silent_for_in_bounds_kernels(client, bounds_mode):
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    got = read_array(client, _read(client, 80, 80, 0, unchecked=True), np.uint32)
    client.sync().result(timeout=TIMEOUT_S)
    np.testing.assert_array_equal(got, np.arange(1, 81))


def test_validate_reports_every_faulting_launch_since_the_last_sync(client, bounds_mode):
    client.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    _write(client, 1, 1, 4, unchecked=True)  # writes out[4] of 1
    _read(client, 50, 32, 0, unchecked=True)  # in bounds: not reported
    _read(client, 8, 1, 20, unchecked=True)  # reads x[20] of 8
    _write(client, 1, 1, -1, unchecked=True)  # writes out[-1]
    _write(client, 1, 1, 9, unchecked=True)  # writes out[9] of 1
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    assert info.value.count == 4
    assert info.value.reports == (
        OutOfBoundsReport("conformance_shifted_write", "out", 4, 1),
        OutOfBoundsReport("conformance_shifted_read", "x", 20, 8),
        OutOfBoundsReport("conformance_shifted_write", "out", 2**32 - 1, 1),
        OutOfBoundsReport("conformance_shifted_write", "out", 9, 1),
    )
    for report in info.value.reports:
        assert f"  {report}" in str(info.value).splitlines()
    client.sync().result(timeout=TIMEOUT_S)  # reported once


def test_validate_reports_of_a_sync_nobody_waited_for_are_raised_by_the_next_one(
    client, bounds_mode
):
    client.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    _write(client, 1, 1, 4, unchecked=True)  # writes out[4] of 1
    client.sync()  # its future dropped: the report is not its alone
    _write(client, 1, 1, 9, unchecked=True)  # writes out[9] of 1
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    assert [(r.index, r.length) for r in info.value.reports] == [(4, 1), (9, 1)]
    assert info.value.count == 2
    client.sync().result(timeout=TIMEOUT_S)  # reported once


def test_validate_reports_each_launch_at_the_first_sync_after_it(client, bounds_mode):
    client.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    _write(client, 1, 1, 4, unchecked=True)  # writes out[4] of 1
    first = client.sync()
    _write(client, 1, 1, 9, unchecked=True)  # writes out[9] of 1
    second = client.sync()
    with pytest.raises(ValidationError) as earlier:
        first.result(timeout=TIMEOUT_S)
    with pytest.raises(ValidationError) as later:
        second.result(timeout=TIMEOUT_S)
    assert [r.index for r in earlier.value.reports] == [4]
    assert [r.index for r in later.value.reports] == [9]


def test_validate_reports_go_to_the_stream_that_launched_where_streams_share_a_queue(
    client, bounds_mode
):
    launching, innocent = sharing_streams(client)
    innocent.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    _write(launching, 1, 1, 4, unchecked=True)  # writes out[4] of 1
    innocent.sync().result(timeout=TIMEOUT_S)  # raises nothing
    with pytest.raises(ValidationError) as reported:
        launching.sync().result(timeout=TIMEOUT_S)
    assert [r.index for r in reported.value.reports] == [4]


_EXITING_CHILD = """
import sys
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import BoundsCheckMode, RudaCount, RudaDim

@kernel
def shift_left(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 1]

client = ruda.client(sys.argv[1])
x = client.create_from_slice(np.arange(8, dtype=np.uint32))
out = client.empty(32)
BoundsCheckMode.configure("validate")
shift_left.launch_unchecked(client, RudaCount(1), RudaDim(8), ArrayArg(x, 8), ArrayArg(out, 8))
"""


def test_validate_reports_no_sync_raised_are_named_when_the_interpreter_exits(
    ruda_device, tmp_path
):
    child = run_script(_EXITING_CHILD, tmp_path, ruda_device)
    assert child.returncode == 0, child.stderr
    assert "RudaWarning" in child.stderr and "no sync() or read raised" in child.stderr
    assert f"of {ruda_device}: kernel shift_left accessed x[8] but x has length 8" in child.stderr


_SHARING_CHILD = """
import sys
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import BoundsCheckMode, RudaCount, RudaDim, ValidationError
from ruda_core.testing.runner import sharing_streams

@kernel
def shift_left(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS + 1]

launching, other = sharing_streams(ruda.client(sys.argv[1]))
x = launching.create_from_slice(np.arange(8, dtype=np.uint32))
out = launching.empty(32)
launching.sync().result(timeout=60)
BoundsCheckMode.configure("validate")
shift_left.launch_unchecked(other, RudaCount(1), RudaDim(7), ArrayArg(x, 8), ArrayArg(out, 8))
shift_left.launch_unchecked(launching, RudaCount(1), RudaDim(8), ArrayArg(x, 8), ArrayArg(out, 8))
try:
    launching.sync().result(timeout=60)
except ValidationError as exc:
    print("raised:", exc)
"""


def test_a_report_raised_by_one_of_streams_sharing_a_queue_is_not_named_at_exit(
    ruda_device, tmp_path
):
    """Reports of a queue two streams had work on are owed to both; once one stream's sync
    raised them, the interpreter's exit does not call them unraised."""
    child = run_script(_SHARING_CHILD, tmp_path, ruda_device)
    assert child.returncode == 0, child.stderr
    assert "raised: " in child.stdout and "x[8]" in child.stdout, child.stdout
    assert "RudaWarning" not in child.stderr, child.stderr


def test_validate_counts_faulting_launches_beyond_one_report_buffer(client, bounds_mode):
    client.sync().result(timeout=TIMEOUT_S)
    bounds_mode.configure(BoundsCheckMode.VALIDATE)
    out = client.create_from_slice(np.zeros(1, dtype=np.uint32))
    launches = 2 * REPORT_SLOTS + 5
    faulting = [k for k in range(launches) if k % 7 == 3]
    for k in range(launches):
        conformance_shifted_write.launch_unchecked(
            client, RudaCount(1), RudaDim(1), ArrayArg(out, 1), 1, k if k % 7 == 3 else 0
        )
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    assert info.value.count == len(faulting)
    first = faulting[: ValidationError.MAX_REPORTS]
    assert [r.index for r in info.value.reports] == first
    client.sync().result(timeout=TIMEOUT_S)
