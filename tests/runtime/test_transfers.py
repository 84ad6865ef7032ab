"""Memory and transfers on the NumPy device: round-trips, empty + write, reads from threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ruda_core as ruda
from ruda_core.runtime import InvalidHandle, RudaFuture
from ruda_core.testing.runner import assert_same_bytes


@pytest.fixture(scope="module")
def client():
    return ruda.client("cpu")


@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=0, max_size=5000))
def test_round_trip_small(client, data):
    handle = client.create_from_slice(data)
    assert handle.nbytes == len(data)
    assert bytes(client.read_one(handle)) == data


@pytest.mark.parametrize("nbytes", [0, 1, 255, 256, 257, 1 << 20, (1 << 20) + 3, 64 << 20])
def test_round_trip_sizes(client, nbytes):
    data = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    handle = client.create_from_slice(data)
    out = client.read_one(handle)
    assert len(out) == nbytes
    assert_same_bytes(out, data)


def test_read_returns_zero_copy_buffer(client):
    handle = client.create_from_slice(np.arange(10, dtype=np.float32))
    raw = client.read_one(handle)
    arr = np.frombuffer(raw, dtype=np.float32)
    assert arr.base is not None  # a view over the returned buffer, not a copy
    np.testing.assert_array_equal(arr, np.arange(10, dtype=np.float32))


def test_empty_write_read(client):
    handle = client.empty(4096)
    assert client.read_one(handle) is not None  # readable, contents unspecified
    data = np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)
    client.write(handle, data)
    np.testing.assert_array_equal(np.frombuffer(client.read_one(handle), np.uint8), data)


def test_write_wrong_size_is_refused(client):
    handle = client.empty(16)
    with pytest.raises(InvalidHandle, match="cannot write 8 bytes into a 16-byte handle"):
        client.write(handle, bytes(8))


def test_source_buffer_may_change_after_create(client):
    data = bytearray(b"abcdefgh")
    handle = client.create_from_slice(data)
    data[:] = b"zzzzzzzz"
    assert bytes(client.read_one(handle)) == b"abcdefgh"


def test_read_many_and_async(client):
    handles = [client.create_from_slice(bytes([k]) * (k + 1)) for k in range(8)]
    future = client.read_async(handles)
    assert isinstance(future, RudaFuture)
    results = future.result(timeout=10)
    assert [bytes(r) for r in results] == [bytes([k]) * (k + 1) for k in range(8)]
    assert [bytes(r) for r in client.read(handles)] == [bytes(r) for r in results]


def test_handle_read_from_second_thread(client):
    data = np.random.default_rng(7).random(100_000).astype(np.float64)
    handle = client.create_from_slice(data)
    seen: list[np.ndarray] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            seen.append(np.frombuffer(client.read_one(handle), dtype=np.float64))
        except BaseException as exc:  # reported to the main thread below
            errors.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    t.join(30)
    assert not errors
    np.testing.assert_array_equal(seen[0], data)


def test_offset_handles_view_the_same_memory(client):
    handle = client.create_from_slice(bytes(range(16)))
    view = handle.offset(4, 12)
    assert bytes(client.read_one(view)) == bytes(range(4, 12))
    with pytest.raises(ValueError, match="outside"):
        handle.offset(8, 20)


def test_a_view_keeps_the_memory_after_the_handle_it_came_from_is_dropped(client):
    handle = client.create_from_slice(bytes(range(16)))
    view = handle.offset(4, 12)
    del handle
    for _ in range(2):
        client.create_from_slice(bytes(16))  # would take memory that was released
    assert bytes(client.read_one(view)) == bytes(range(4, 12))
    assert view.nbytes == view.binding().nbytes == 8


def test_sync_future_contract(client):
    client.create_from_slice(bytes(1000))
    future = client.sync()
    assert future.result(timeout=10) is None
    assert future.done()


def test_sync_future_is_awaitable(client):
    import asyncio

    async def main() -> None:
        client.create_from_slice(bytes(10))
        await client.sync()

    asyncio.run(main())
