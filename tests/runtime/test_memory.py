"""Pool accounting, stream-ordered reuse, the release policy, back-pressure on a stream that
falls behind, and the memory limit."""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import BufferTooBig, MemoryConfig, OutOfMemory, RudaCount, RudaDim
from ruda_core.testing.workloads import Spin

MIB = 1 << 20


@kernel
def double_into(src: Array[u32], dst: Array[u32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i] * u32(2)


def _double(client, src, dst, n):
    double_into.launch(
        client, RudaCount(-(-n // 64)), RudaDim(64), ArrayArg(src, n), ArrayArg(dst, n)
    )


@pytest.fixture
def client(private_client):
    return private_client


def _settled_usage(client):
    gc.collect()
    client.sync().result(timeout=30)
    return client.memory_usage()


def test_accounting_counts_requested_and_padding(client):
    before = _settled_usage(client)
    handles = [client.empty(n) for n in (1, 63, 64, 65, 1000)]
    usage = client.memory_usage()
    assert usage.number_allocs == before.number_allocs + 5
    assert usage.bytes_in_use == before.bytes_in_use + 1 + 63 + 64 + 65 + 1000
    align = client.properties().alignment_nbytes
    padding = sum(-n % align for n in (1, 63, 64, 65, 1000))
    assert usage.bytes_padding == before.bytes_padding + padding
    assert usage.bytes_reserved >= usage.bytes_in_use + usage.bytes_padding
    del handles
    after = _settled_usage(client)
    assert after.number_allocs == before.number_allocs
    assert after.bytes_in_use == before.bytes_in_use


def test_only_the_padding_after_an_allocation_is_spare(client):
    align = client.properties().alignment_nbytes
    handle = client.empty(5)
    assert handle.binding().spare_nbytes == align - 5  # the rest of its rounded slice
    assert handle.offset(2).binding().spare_nbytes == align - 5  # a view to its end
    assert handle.offset(0, 4).binding().spare_nbytes == 0  # byte 4 is the handle's own
    assert client.empty(align).binding().spare_nbytes == 0


def test_dropped_handle_is_reused(client):
    _settled_usage(client)
    first = client.empty(4096)
    offset = first.binding().offset_bytes
    page = first.binding().resource
    del first
    second = client.empty(4096)  # same stream, same size: reused at once
    assert second.binding().resource is page
    assert second.binding().offset_bytes == offset


def test_memory_reused_at_once_for_another_size_is_counted_at_the_new_size(client):
    before = _settled_usage(client)
    align = client.properties().alignment_nbytes
    first = client.empty(4 * align - 1)
    page, offset = first.binding().resource, first.binding().offset_bytes
    del first
    second = client.empty(3 * align + 1)  # rounds to the same slice: reused at once
    assert (second.binding().resource, second.binding().offset_bytes) == (page, offset)
    usage = client.memory_usage()
    assert usage.number_allocs == before.number_allocs + 1
    assert usage.bytes_in_use == before.bytes_in_use + 3 * align + 1
    assert usage.bytes_padding == before.bytes_padding + align - 1
    del second
    after = _settled_usage(client)
    assert (after.number_allocs, after.bytes_in_use) == (before.number_allocs, before.bytes_in_use)


def test_memory_dropped_while_its_work_is_queued_is_reused_in_stream_order(client):
    """Scratch dropped right after the launches that use it is taken again at once by the next
    request of its size on its stream, before that work has run: the stream runs the work in
    order, so every result is that of its own scratch."""
    n = 1 << 14
    src = client.create_from_slice(np.arange(n, dtype=np.uint32))
    results, places = [], set()
    for _ in range(40):
        scratch = client.empty(4 * n)
        places.add((id(scratch.binding().resource), scratch.binding().offset_bytes))
        _double(client, src, scratch, n)
        results.append(client.empty(4 * n))
        _double(client, scratch, results[-1], n)
        del scratch
    assert len(places) < 40  # the scratch memory was taken again
    expected = np.arange(n, dtype=np.uint32) * 4
    for handle in results:
        got = np.frombuffer(client.read_one(handle, timeout=30), np.uint32)
        np.testing.assert_array_equal(got, expected)


def test_churn_keeps_reserved_bounded_and_cleanup_releases(client):
    config = MemoryConfig()
    rng = random.Random(1234)
    live: list = []
    peak_reserved = 0
    _settled_usage(client)
    for _ in range(10_000):
        if live and (len(live) > 64 or rng.random() < 0.5):
            live.pop(rng.randrange(len(live)))
        else:
            size = rng.choice(
                [rng.randrange(1, 4096), rng.randrange(1, 1 << 20), rng.randrange(1 << 20, 8 << 20)]
            )
            live.append(client.empty(size))
        peak_reserved = max(peak_reserved, client.memory_usage().bytes_reserved)
    # at most 65 live allocations of < 8 MiB each, plus the idle allowance of the policy
    assert peak_reserved <= 65 * (8 << 20) + 2 * config.idle_nbytes + 2 * config.page_nbytes
    keep = live[0]
    del live
    usage = _settled_usage(client)
    client.memory_cleanup()
    usage = client.memory_usage()
    assert usage.number_allocs >= 1
    held = usage.bytes_in_use + usage.bytes_padding
    page = max(config.page_nbytes, keep.nbytes + config.exclusive_granularity)
    assert usage.bytes_reserved <= held + page
    del keep


def test_cleanup_after_everything_dropped_releases_all(client):
    handles = [client.empty(1 << 22) for _ in range(4)]
    assert client.memory_usage().bytes_reserved >= 4 << 22
    del handles
    _settled_usage(client)
    client.memory_cleanup()
    usage = client.memory_usage()
    assert (
        usage.bytes_reserved
        <= usage.bytes_in_use + usage.bytes_padding + MemoryConfig().page_nbytes
    )


def test_negative_size_is_refused(client):
    with pytest.raises(ValueError, match="non-negative"):
        client.empty(-1)


@pytest.mark.usefixtures("unsanitized")  # doubles memory nothing wrote: only accounting matters
def test_uploads_launches_and_frees_ahead_of_the_stream_keep_reserved_within_twice_in_use(
    client,
):
    """10 000 cycles of 1 B - 4 MiB with at most 64 live handles, every 4th an upload and every
    8th a launch, all enqueued behind a busy stream: the host waits for the oldest in-flight
    frees instead of reserving pages for everything it ran ahead."""
    rng = random.Random(7)
    data = np.random.default_rng(7).integers(0, 256, 4 * MIB, dtype=np.uint8)
    spin = Spin(client, target_s=0.3)
    busy = client.empty(4 * spin.units)
    live: list = []
    peak_in_use = peak_reserved = 0
    spin.launch(busy)
    for k in range(10_000):
        if len(live) >= 64 or (live and rng.random() < 0.5):
            live.pop(rng.randrange(len(live)))
            continue
        n = rng.randrange(1, 4 * MIB)
        live.append(client.create_from_slice(data[:n]) if k % 4 == 0 else client.empty(n))
        if k % 8 == 1 and len(live) > 1:
            _double(client, live[-2], live[-1], min(live[-2].nbytes, n) // 4)
        usage = client.memory_usage()
        peak_in_use = max(peak_in_use, usage.bytes_in_use)
        peak_reserved = max(peak_reserved, usage.bytes_reserved)
    page = MemoryConfig().page_nbytes
    assert peak_reserved <= 2 * peak_in_use + page, (peak_reserved, peak_in_use)
    client.sync().result(timeout=60)
    del live
    gc.collect()
    client.memory_cleanup()
    assert client.memory_usage().bytes_reserved <= page


@pytest.fixture
def limited(monkeypatch, new_private_client):
    """A client whose pool may hold 64 MiB in all (``RUDA_MEMORY_LIMIT``)."""
    monkeypatch.setenv("RUDA_MEMORY_LIMIT", "64MiB")
    return new_private_client()


def test_the_memory_limit_is_the_device_memory_by_default(monkeypatch, new_private_client):
    monkeypatch.delenv("RUDA_MEMORY_LIMIT", raising=False)
    client = new_private_client()
    assert client.server.memory.limit_nbytes == client.properties().memory_nbytes


def test_the_memory_limit_comes_from_the_environment(limited):
    assert limited.server.memory.limit_nbytes == 64 * MIB


def test_allocations_past_the_memory_limit_are_out_of_memory_and_the_client_recovers(limited):
    held = [limited.empty(16 * MIB) for _ in range(4)]
    with pytest.raises(OutOfMemory, match="RUDA_MEMORY_LIMIT") as full:
        limited.empty(16 * MIB)
    assert str(full.value).startswith(f"{limited.device} has no room"), full.value
    assert limited.memory_usage().bytes_reserved == 64 * MIB
    held.pop()
    n = 4 * MIB
    src = limited.create_from_slice(np.arange(n, dtype=np.uint32))  # the dropped page
    _double(limited, src, held[0], n)
    got = np.frombuffer(limited.read_one(held[0]), dtype=np.uint32)
    np.testing.assert_array_equal(got, np.arange(n, dtype=np.uint32) * 2)


def test_a_request_larger_than_the_memory_limit_can_never_fit(limited):
    with pytest.raises(BufferTooBig, match="limit"):
        limited.empty(64 * MIB + 1)
    limited.server.memory.limit_nbytes = 128 * MIB  # settable on a live pool
    assert limited.empty(64 * MIB + 1).nbytes == 64 * MIB + 1


def test_requests_within_a_limit_smaller_than_a_page_are_served(monkeypatch, new_private_client):
    """A limit below the pool's page size (8 MiB) still serves what fits it, and a request
    within the limit whose exclusive page would be rounded past it gets a page the limit
    holds: neither is an OutOfMemory that no cleanup can mend."""
    monkeypatch.setenv("RUDA_MEMORY_LIMIT", "4MiB")
    client = new_private_client()
    small = client.create_from_slice(np.arange(25, dtype=np.uint32))
    np.testing.assert_array_equal(np.frombuffer(client.read_one(small), np.uint32), np.arange(25))
    del small
    client.server.memory.limit_nbytes = 9 * MIB
    n = 17 * MIB // 2 // 4  # 8.5 MiB of u32, an exclusive page rounded up to 10 MiB
    big = client.create_from_slice(np.arange(n, dtype=np.uint32))
    np.testing.assert_array_equal(np.frombuffer(client.read_one(big), np.uint32), np.arange(n))
    assert client.memory_usage().bytes_reserved <= 9 * MIB


def test_memory_in_flight_is_waited_for_before_the_limit_is_declared_reached(limited):
    spin = Spin(limited, target_s=0.2)
    busy = limited.empty(4 * spin.units)
    spin.launch(busy)
    for k in range(12):  # 12 x 16 MiB uploads, each dropped while still queued
        h = limited.create_from_slice(np.full(4 * MIB + k, k, dtype=np.uint32))
        del h
    assert limited.memory_usage().bytes_reserved <= 64 * MIB


@pytest.mark.parametrize("value", ["lots", "-1MiB", "1.5GiB", "12 MB"])
def test_a_malformed_memory_limit_is_refused(monkeypatch, new_private_client, value):
    monkeypatch.setenv("RUDA_MEMORY_LIMIT", value)
    with pytest.raises(ValueError, match="RUDA_MEMORY_LIMIT"):
        new_private_client()
