"""Validate mode accounts for every faulting launch since the last sync (a count and the first
reports, each naming kernel, buffer, index and length) with memory bounded however many
launches run without a sync."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, i32, kernel, u32
from ruda_core.runtime import (
    BoundsCheckMode,
    OutOfBoundsReport,
    RudaCount,
    RudaDim,
    ValidationError,
)
from ruda_core.runtime.reports import MAX_FOLDS, REPORT_SLOTS
from ruda_core.testing.runner import TIMEOUT_S

#: These kernels go out of bounds on purpose, to show what Validate reports: not sanitized.
pytestmark = pytest.mark.usefixtures("unsanitized")


@kernel
def poke(out: Array[u32], at: i32):
    if ABSOLUTE_POS == u32(0):
        out[at] = u32(1)


@kernel
def peek(src: Array[u32], dst: Array[u32], at: i32):
    if ABSOLUTE_POS == u32(0):
        dst[0] = src[at]


@pytest.fixture
def validate():
    BoundsCheckMode.configure(BoundsCheckMode.VALIDATE)
    yield
    BoundsCheckMode.configure(None)


def _poke(client, out, length, at):
    poke.launch_unchecked(client, RudaCount(1), RudaDim(1), ArrayArg(out, length), at)


def test_validate_reports_every_faulting_launch_since_the_last_sync(private_client, validate):
    client = private_client
    out = client.empty(64)
    src = client.create_from_slice(np.arange(8, dtype=np.uint32))
    _poke(client, out, 16, 16)
    _poke(client, out, 16, 3)  # in bounds: not reported
    peek.launch_unchecked(client, RudaCount(1), RudaDim(1), ArrayArg(src, 8), ArrayArg(out, 1), 9)
    _poke(client, out, 10, -1)
    _poke(client, out, 4, 100)
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    error = info.value
    assert error.count == 4
    assert error.reports == (
        OutOfBoundsReport("poke", "out", 16, 16),
        OutOfBoundsReport("peek", "src", 9, 8),
        OutOfBoundsReport("poke", "out", 2**32 - 1, 10),
        OutOfBoundsReport("poke", "out", 100, 4),
    )
    assert (error.kernel, error.buffer, error.index, error.length) == ("poke", "out", 16, 16)
    lines = str(error).splitlines()
    assert lines[0] == "4 launches since the last sync accessed memory out of bounds:"
    assert lines[1:] == [f"  {r}" for r in error.reports]
    assert "  kernel peek accessed src[9] but src has length 8" in lines
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.count, copy.reports, str(copy)) == (error.count, error.reports, str(error))
    client.sync().result(timeout=TIMEOUT_S)  # reported once


def test_validate_memory_is_bounded_over_many_launches_without_a_sync(private_client, validate):
    client = private_client
    out = client.empty(64)
    _poke(client, out, 16, 0)
    client.sync().result(timeout=TIMEOUT_S)
    allocs = client.memory_usage().number_allocs  # the output and one report slab
    launches, every = 20_000, 1_500
    faulting = [k for k in range(launches) if k % every == 7]
    most = allocs
    for k in range(launches):
        _poke(client, out, 16, 16 + k if k % every == 7 else k % 16)
        if k % 1000 == 0:
            most = max(most, client.memory_usage().number_allocs)
    assert most == allocs, f"{most - allocs} more allocations while launches were pending"
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    error = info.value
    assert error.count == len(faulting) > ValidationError.MAX_REPORTS
    assert error.reports == tuple(
        OutOfBoundsReport("poke", "out", 16 + k, 16)
        for k in faulting[: ValidationError.MAX_REPORTS]
    )
    hidden = len(faulting) - ValidationError.MAX_REPORTS
    assert str(error).splitlines()[-1] == f"  ... and {hidden} more launches"
    assert launches > (MAX_FOLDS + 1) * REPORT_SLOTS  # the slab was folded and recycled


def test_validate_counts_a_fault_in_every_slot_of_a_slab(private_client, validate):
    client = private_client
    out = client.empty(64)
    launches = 2 * REPORT_SLOTS + 3
    for k in range(launches):
        _poke(client, out, 16, 16 + k)
    with pytest.raises(ValidationError) as info:
        client.sync().result(timeout=TIMEOUT_S)
    assert info.value.count == launches
    assert info.value.reports[-1] == OutOfBoundsReport("poke", "out", 16 + 7, 16)
