"""Pool accounting, stream-ordered reuse and the release policy."""

from __future__ import annotations

import gc
import random

import pytest

from ruda_core.runtime import MemoryConfig


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


def test_dropped_handle_is_reused(client):
    _settled_usage(client)
    first = client.empty(4096)
    offset = first.binding().offset_bytes
    page = first.binding().resource
    del first
    second = client.empty(4096)  # same stream, same size: reused at once
    assert second.binding().resource is page
    assert second.binding().offset_bytes == offset


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
