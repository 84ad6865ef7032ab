"""Memory and transfers: round trips of every size, empty + write + read, writes and copies of
views at any byte offset and size, the pool's accounting,
``memory_cleanup``, reserved memory bounded while a stream lags, the pool's memory limit,
stream-ordered reuse of dropped handles (also of those the cyclic collector frees), and
references to dropped memory (a ``Binding``, a dynamic ``RudaCount``, a prepared launch)
refused however the memory was reused."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import (
    Binding,
    BufferTooBig,
    Feature,
    InvalidHandle,
    KernelTask,
    LaunchConfigError,
    OutOfMemory,
    RudaCount,
    RudaDim,
)
from ruda_core.runtime.stream_table import KEEP_BATCH
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import TIMEOUT_S, assert_same_bytes, read_array, settle

SIZES = [0, 1, 3, 255, 256, 257, 4096, (1 << 20) + 3, 32 << 20]


def _size_id(n: int) -> str:
    return f"{n >> 20}MiB+{n & 0xFFFFF}B" if n >= 1 << 20 else f"{n}B"


@kernel
def conformance_copy(src: Array[u32], dst: Array[u32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i]


@kernel
def conformance_fill(out: Array[u32], value: u32):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = value


FILL = KernelTask(conformance_fill.definition())


def _copy(client, src, dst, n):
    conformance_copy.launch(
        client, RudaCount(-(-n // 64)), RudaDim(64), ArrayArg(src, n), ArrayArg(dst, n)
    )


def _fill(client, out, n, value):
    conformance_fill.launch(client, RudaCount(-(-n // 64)), RudaDim(64), ArrayArg(out, n), value)


@pytest.mark.parametrize("nbytes", SIZES, ids=_size_id)
def test_round_trip(client, nbytes):
    data = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    handle = client.create_from_slice(data)
    assert handle.nbytes == nbytes
    out = client.read_one(handle)
    assert len(out) == nbytes
    assert_same_bytes(out, data)


@settings(max_examples=25)
@given(data=st.binary(max_size=3000))
def test_round_trip_of_any_bytes(client, data):
    assert bytes(client.read_one(client.create_from_slice(data))) == data


@settings(max_examples=25)
@given(
    start=st.integers(0, 24),
    nbytes=st.integers(0, 40),
    there=st.integers(0, 7),
    data=st.binary(min_size=40, max_size=40),
)
def test_writes_and_copies_of_views_change_only_their_bytes(client, start, nbytes, there, data):
    """A write into a view and copies from it, at any byte offset and of any size (some
    devices copy by 4-byte words, which must not spill over the view's edges)."""
    expected = np.arange(128, dtype=np.uint8)
    handle = client.create_from_slice(expected)
    view = handle.offset(start, start + nbytes)
    values = np.frombuffer(data[:nbytes], np.uint8)
    client.write(view, values)
    expected[start : start + nbytes] = values
    at = 64 + there  # the same memory, past the view, in any byte of a word
    client.copy(view, handle.offset(at, at + nbytes))
    expected[at : at + nbytes] = values
    other = client.create_from_slice(np.full(64, 255, np.uint8))
    client.copy(view, other.offset(there, there + nbytes))
    beside = np.full(64, 255, np.uint8)
    beside[there : there + nbytes] = values
    np.testing.assert_array_equal(read_array(client, handle, np.uint8), expected)
    np.testing.assert_array_equal(read_array(client, other, np.uint8), beside)


def test_read_is_a_bytes_like_buffer(client):
    values = np.arange(100, dtype=np.float32)
    raw = client.read_one(client.create_from_slice(values))
    assert memoryview(raw).nbytes == values.nbytes
    np.testing.assert_array_equal(np.frombuffer(raw, dtype=np.float32), values)
    assert bytes(raw) == values.tobytes()


@pytest.mark.parametrize("nbytes", [0, 8, 4096, 3 << 20], ids=_size_id)
def test_empty_then_write_then_read(client, nbytes):
    handle = client.empty(nbytes)
    assert handle.nbytes == nbytes
    assert len(client.read_one(handle)) == nbytes  # readable; the contents are unspecified
    data = np.random.default_rng(nbytes + 1).integers(0, 256, nbytes, dtype=np.uint8)
    client.write(handle, data)
    np.testing.assert_array_equal(np.frombuffer(client.read_one(handle), np.uint8), data)


def test_write_of_the_wrong_size_is_refused(client):
    handle = client.create_from_slice(bytes(range(16)))
    with pytest.raises(InvalidHandle):
        client.write(handle, bytes(8))
    assert bytes(client.read_one(handle)) == bytes(range(16))


def test_create_copies_the_host_data(client):
    data = bytearray(b"abcdefgh" * 64)
    handle = client.create_from_slice(data)
    data[:] = b"z" * len(data)
    assert bytes(client.read_one(handle)) == b"abcdefgh" * 64


def test_write_copies_the_host_data(client):
    handle = client.empty(64)
    data = np.arange(16, dtype=np.uint32)
    client.write(handle, data)
    data[:] = 0
    np.testing.assert_array_equal(read_array(client, handle, np.uint32), np.arange(16))


def test_read_of_many_handles(client):
    handles = [client.create_from_slice(bytes([k]) * (k * 37 + 1)) for k in range(10)]
    future = client.read_async(handles)
    got = [bytes(b) for b in future.result(timeout=TIMEOUT_S)]
    assert got == [bytes([k]) * (k * 37 + 1) for k in range(10)]
    assert [bytes(b) for b in client.read(handles)] == got


def test_offset_handles_view_the_same_memory(client):
    handle = client.create_from_slice(np.arange(64, dtype=np.uint32))
    view = handle.offset(16, 48)
    np.testing.assert_array_equal(read_array(client, view, np.uint32), np.arange(4, 12))
    client.write(view, np.full(8, 7, dtype=np.uint32))
    expected = np.arange(64, dtype=np.uint32)
    expected[4:12] = 7
    np.testing.assert_array_equal(read_array(client, handle, np.uint32), expected)


def test_an_array_off_a_multiple_of_its_element_size_is_refused_before_anything_runs(client):
    handle = client.create_from_slice(np.arange(64, dtype=np.uint32))
    out = client.create_from_slice(np.zeros(8, np.uint32))
    for start in (1, 2, 3):  # GPUs load a u32 at multiples of 4 B only
        with pytest.raises(LaunchConfigError, match="multiple of 4 B"):
            conformance_copy.launch(
                client,
                RudaCount(1),
                RudaDim(8),
                ArrayArg(handle.offset(start), 8),
                ArrayArg(out, 8),
            )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.zeros(8))
    conformance_copy.launch(
        client, RudaCount(1), RudaDim(8), ArrayArg(handle.offset(4), 8), ArrayArg(out, 8)
    )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), np.arange(1, 9))


def test_kernel_output_round_trip(client):
    n = 10_000
    src = client.create_from_slice(np.arange(n, dtype=np.uint32) * 3)
    dst = client.empty(4 * n)
    _copy(client, src, dst, n)
    np.testing.assert_array_equal(read_array(client, dst, np.uint32), np.arange(n) * 3)


def test_memory_of_a_handle_collected_in_a_reference_cycle_is_reused_intact(client):
    """The cyclic collector finalises at once everything that only a garbage cycle reaches. A
    collected handle's page (an exclusive one here) must not be among it: a driver whose buffer
    objects release themselves when finalised (wgpu's) would bind a released buffer when the
    page is reused. Other work and a cleanup come between the handle's use and its collection,
    so that nothing but the handle holds its memory (a driver may keep the buffers it wrote or
    bound last)."""
    n = (2 << 20) // 4
    dropped = client.empty(4 * n)
    _fill(client, dropped, n, 7)
    given_back = client.empty(6 << 20)
    del given_back
    client.memory_usage()  # its release fenced on the stream, then the fence done
    client.sync().result(timeout=TIMEOUT_S)
    client.memory_cleanup()  # the page given back: a driver drops what it kept for pages
    small = client.empty(64)
    for _ in range(2):
        _fill(client, small, 16, 1)
        client.sync()
    cycle: list[object] = [dropped]
    cycle.append(cycle)
    del dropped, cycle
    gc.collect()
    reused = client.empty(4 * n)
    _fill(client, reused, n, 3)
    np.testing.assert_array_equal(read_array(client, reused, np.uint32), np.full(n, 3))


def test_memory_usage_accounts_live_allocations(client):
    before = settle(client)
    sizes = [1, 63, 64, 65, 1000, 5000]
    handles = [client.empty(n) for n in sizes]
    usage = client.memory_usage()
    assert usage.number_allocs == before.number_allocs + len(sizes)
    assert usage.bytes_in_use == before.bytes_in_use + sum(sizes)
    assert usage.bytes_padding >= before.bytes_padding
    assert usage.bytes_reserved >= usage.bytes_in_use + usage.bytes_padding
    del handles
    after = settle(client)
    assert after.number_allocs == before.number_allocs
    assert after.bytes_in_use == before.bytes_in_use
    assert after.bytes_padding == before.bytes_padding


def test_memory_cleanup_gives_pages_back(client):
    settle(client)
    big = 8 << 20
    handles = [client.empty(big) for _ in range(4)]
    with_them = client.memory_usage().bytes_reserved
    assert with_them >= 4 * big
    del handles
    settle(client)
    client.memory_cleanup()
    after = client.memory_usage()
    assert after.bytes_reserved <= with_them - 4 * big, (
        f"memory_cleanup() kept {after.bytes_reserved} bytes reserved; before dropping 4 "
        f"handles of {big} bytes it was {with_them}"
    )


def test_reserved_memory_stays_bounded_under_churn(client):
    settle(client)
    client.memory_cleanup()
    start = client.memory_usage().bytes_reserved
    rng = np.random.default_rng(5)
    for _ in range(300):
        handles = [client.empty(int(n)) for n in rng.integers(1, 3 << 20, 4)]
        del handles
    peak = client.memory_usage().bytes_reserved
    # four live handles of < 3 MiB at any time, the pool's page granularity and its idle cache
    assert peak - start <= 256 << 20, f"reserved grew by {peak - start} bytes under churn"


def test_reserved_memory_stays_within_twice_the_peak_in_use_while_the_stream_lags(client, spin):
    settle(client)
    client.memory_cleanup()
    before = client.memory_usage().bytes_reserved
    rng = np.random.default_rng(11)
    data = rng.integers(0, 256, 2 << 20, dtype=np.uint8)
    busy = client.empty(4 * spin.units)
    uploads: list = []  # live uploaded handles; empty() handles are dropped at once
    peak_in_use = peak_reserved = 0
    spin.launch(busy)  # everything below is queued behind it: the host runs far ahead
    for k in range(400):
        n = int(rng.integers(1, 2 << 20))
        if k % 2:
            uploads.append(client.create_from_slice(data[:n]))
        else:
            scratch = client.empty(n)
            _fill(client, scratch, n // 4, k)  # queued work that holds it
        usage = client.memory_usage()  # right after the allocation: the peak of this step
        peak_in_use = max(peak_in_use, usage.bytes_in_use)
        peak_reserved = max(peak_reserved, usage.bytes_reserved)
        if k % 2 == 0:
            del scratch
        elif len(uploads) > 16:
            uploads.pop(int(rng.integers(len(uploads))))
    page = client.server.memory.config.page_nbytes
    assert peak_reserved <= before + 2 * peak_in_use + page, (
        f"{peak_reserved} bytes reserved for at most {peak_in_use} in use, {before} before"
    )
    for h in uploads:
        np.testing.assert_array_equal(read_array(client, h, np.uint8), data[: h.nbytes])


def test_memory_cleanup_gives_back_memory_whose_work_finished_while_the_stream_runs(client, spin):
    busy = client.empty(4 * spin.units)
    settle(client)
    client.memory_cleanup()
    big = 8 << 20
    handles = [client.create_from_slice(np.zeros(big, dtype=np.uint8)) for _ in range(4)]
    client.sync().result(timeout=TIMEOUT_S)
    with_them = client.memory_usage().bytes_reserved
    del handles
    gc.collect()
    spin.launch(busy)  # queued after the drop; the dropped memory's own work has finished
    deadline = time.monotonic() + spin.seconds / 3  # the spin is still running until then
    client.memory_cleanup()
    while client.memory_usage().bytes_reserved > with_them - 4 * big:
        assert time.monotonic() < deadline, "memory_cleanup() kept memory whose work had finished"
        time.sleep(0.005)
        client.memory_cleanup()
    in_flight = client.create_from_slice(np.ones(big, dtype=np.uint8))  # queued behind the spin
    with_it = client.memory_usage().bytes_reserved
    del in_flight
    gc.collect()
    client.memory_cleanup()  # does not wait; the memory is given back once its upload is done
    client.sync().result(timeout=TIMEOUT_S)
    client.memory_cleanup()
    assert client.memory_usage().bytes_reserved <= with_it - big


def test_allocations_past_the_memory_limit_raise_out_of_memory(client):
    pool = client.server.memory
    settle(client)
    client.memory_cleanup()
    chunk = 16 << 20
    saved = pool.limit_nbytes
    pool.limit_nbytes = client.memory_usage().bytes_reserved + 3 * chunk
    held: list = []
    try:
        with pytest.raises(OutOfMemory, match="limit"):
            for _ in range(8):
                held.append(client.empty(chunk))
        assert 1 <= len(held) <= 3
        assert client.memory_usage().bytes_reserved <= pool.limit_nbytes
        held.clear()  # the client is usable again once memory is dropped
        n = chunk // 4
        src = client.create_from_slice(np.arange(n, dtype=np.uint32))
        dst = client.empty(chunk)
        _copy(client, src, dst, n)
        np.testing.assert_array_equal(read_array(client, dst, np.uint32), np.arange(n))
    finally:
        pool.limit_nbytes = saved


class _Owner:
    """An owner of borrowed memory, as a launch keeps it (weakly referable)."""


def test_kept_owners_outlive_the_work_queued_before_them_batch_after_batch(client, spin):
    """``keep_alive`` fences its owners in batches and lets a batch go once its fence is done;
    a new batch's fence may be a done batch's, recorded again, and must then wait for the work
    queued before it like a new one."""
    server, stream = client.server, client.execution_stream().value
    batch = KEEP_BATCH

    def keep(count: int) -> list[weakref.ref]:
        owners = [_Owner() for _ in range(count)]
        for owner in owners:
            server.sharing.keep_alive(stream, (owner,), None)
        return [weakref.ref(o) for o in owners]

    settle(client)
    first = keep(batch + 1)  # the first batch is fenced; the sync leaves its fence done
    client.sync().result(timeout=TIMEOUT_S)
    busy = client.empty(4 * spin.units)
    spin.launch(busy)
    started = time.perf_counter()
    second = keep(batch + 1)  # lets the first batch go and fences the second behind the spin
    keep(batch)  # fences a third: lets go of every batch whose fence is done
    gc.collect()
    assert all(r() is None for r in first[:batch]), "a batch whose fence is done was kept"
    if time.perf_counter() - started < spin.seconds / 2:  # the spin is still running
        assert all(r() is not None for r in second[:batch]), "let go before its work was done"
    client.sync().result(timeout=TIMEOUT_S)
    keep(batch + 1)  # lets the second batch go: its fence is done after the sync
    gc.collect()
    assert all(r() is None for r in second[:batch])
    np.testing.assert_array_equal(read_array(client, busy, np.uint32), spin.expected())


def test_dropped_input_is_not_reused_before_queued_work_reads_it(client, spin):
    n = 1 << 16
    values = np.arange(n, dtype=np.uint32) ^ 0x5A5A5A5A
    busy = client.empty(4 * spin.units)
    src = client.create_from_slice(values)
    dst = client.empty(4 * n)
    spin.launch(busy)  # keeps this stream busy: the copy below is still queued
    _copy(client, src, dst, n)
    del src
    gc.collect()
    junk = np.full(n, 0xDEAD, dtype=np.uint32)
    same_stream = [client.create_from_slice(junk) for _ in range(4)]

    def other_stream() -> None:
        held = [client.create_from_slice(junk) for _ in range(4)]
        client.sync().result(timeout=TIMEOUT_S)
        same_stream.extend(held)

    worker = threading.Thread(target=other_stream)
    worker.start()
    worker.join(TIMEOUT_S)
    np.testing.assert_array_equal(read_array(client, dst, np.uint32), values)
    assert len(same_stream) == 8  # kept alive until here: they must not alias the source


def test_a_buffer_larger_than_the_device_is_refused_naming_the_device_and_its_sizes(client):
    memory = client.properties().memory_nbytes
    with pytest.raises(BufferTooBig) as refused:
        client.empty(memory + 1)
    message = str(refused.value)
    assert message.startswith(f"a buffer of {memory + 1} bytes can never fit {client.device}: ")
    assert "its largest single allocation is " in message
    assert f"its device memory {memory} bytes" in message
    assert client.empty(16).nbytes == 16  # the client stays usable


def test_negative_and_non_integer_sizes_are_refused(client):
    with pytest.raises(ValueError):
        client.empty(-1)
    with pytest.raises(ValueError):
        client.empty(1.5)  # type: ignore[arg-type]


STALE_N = 64


def _stale_binding_and_reusers(client, spin) -> tuple[Binding, list]:
    """The binding of a handle dropped while its stream is busy, and handles holding 7s made
    right after on that stream, of the same size: the pool may give any of them the dropped
    handle's memory at once, since the stream orders their work after the old."""
    busy = client.empty(4 * spin.units)
    spin.launch(busy)
    dropped = client.empty(4 * STALE_N)
    binding = dropped.binding()
    del dropped
    gc.collect()
    sevens = np.full(STALE_N, 7, dtype=np.uint32)
    return binding, [client.create_from_slice(sevens) for _ in range(4)]


def _assert_still_sevens(client, handles) -> None:
    for h in handles:
        np.testing.assert_array_equal(read_array(client, h, np.uint32), np.full(STALE_N, 7))


def test_binding_of_a_dropped_handle_is_refused_after_its_memory_is_reused(client, spin):
    binding, reusers = _stale_binding_and_reusers(client, spin)
    with pytest.raises(InvalidHandle, match="dropped"):
        client.launch(FILL, RudaCount(1), RudaDim(STALE_N), [binding], [np.uint32(700)], [STALE_N])
    _assert_still_sevens(client, reusers)


@requires(Feature.DYNAMIC_COUNT)
def test_dynamic_count_of_a_dropped_handle_is_refused_after_its_memory_is_reused(client, spin):
    binding, reusers = _stale_binding_and_reusers(client, spin)
    out = client.create_from_slice(np.zeros(STALE_N * STALE_N, dtype=np.uint32))
    with pytest.raises(InvalidHandle, match=r"dynamic count of kernel conformance_fill.*dropped"):
        conformance_fill.launch(
            client, RudaCount.dynamic(binding), RudaDim(STALE_N), ArrayArg(out, STALE_N**2), 9
        )
    np.testing.assert_array_equal(read_array(client, out, np.uint32), 0)
    _assert_still_sevens(client, reusers)


def test_prepared_launch_of_a_dropped_handle_is_refused_after_its_memory_is_reused(client, spin):
    busy = client.empty(4 * spin.units)
    spin.launch(busy)
    target = client.empty(4 * STALE_N)
    prepared = client.prepare(
        FILL, RudaCount(1), RudaDim(STALE_N), [target.binding()], [np.uint32(700)], [STALE_N]
    )
    del target  # the prepared launch holds only the binding, not the handle
    gc.collect()
    sevens = np.full(STALE_N, 7, dtype=np.uint32)
    reusers = [client.create_from_slice(sevens) for _ in range(4)]
    with pytest.raises(InvalidHandle, match="dropped"):
        prepared.launch()
    _assert_still_sevens(client, reusers)


def test_copy_between_handles_is_ordered_as_a_launch(client):
    n = 300
    src = client.create_from_slice(np.arange(n, dtype=np.uint32))
    whole = client.empty(4 * 2 * n)
    dst = whole.offset(4 * n)  # a view at an offset of its page
    client.copy(src, dst)
    conformance_fill.launch(client, RudaCount(5), RudaDim(64), ArrayArg(src, n), 7)  # after
    np.testing.assert_array_equal(read_array(client, dst, np.uint32), np.arange(n))
    client.copy(src, whole.offset(0, 4 * n))
    np.testing.assert_array_equal(read_array(client, whole, np.uint32)[:n], np.full(n, 7))


def test_copy_refuses_other_sizes_and_overlaps_before_anything_runs(client):
    a, b = client.empty(64), client.empty(32)
    with pytest.raises(InvalidHandle, match="equal size"):
        client.copy(a, b)
    with pytest.raises(InvalidHandle, match="overlap"):
        client.copy(a.offset(0, 32), a.offset(16, 48))
    with pytest.raises(TypeError, match="copy takes Handles"):
        client.copy(a, b"x" * 64)
