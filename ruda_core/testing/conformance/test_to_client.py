"""``to_client`` between the device under test and every other local device (the NumPy
reference device included), both ways: the bytes arrive, the copy reads its source after the
kernel that writes it and before later work overwrites it, a kernel on the destination stream
reads the copy without a sync in between, tensors keep their layout, a failed writer poisons
the copy, and bad input is refused before anything runs."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import ruda_core
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.plugins import REFERENCE_BACKEND
from ruda_core.runtime import (
    ComputeClient,
    InvalidHandle,
    KernelTask,
    RudaCount,
    RudaDim,
    ServerError,
    SettingError,
)
from ruda_core.tensor import RudaTensor
from ruda_core.testing.faults import RefusedTask
from ruda_core.testing.runner import TIMEOUT_S, read_array

N = 256


@kernel
def conformance_plus_one(src: Array[u32], dst: Array[u32]):
    i = ABSOLUTE_POS
    if i < dst.len():
        dst[i] = src[i] + u32(1)


def _peers(client: ComputeClient) -> list[ComputeClient]:
    """A client of every other device this machine can open, the reference device first."""
    peers: list[ComputeClient] = []
    for name in [REFERENCE_BACKEND, *(str(d) for d in ruda_core.enumerate_all_devices())]:
        try:
            other = ruda_core.client(name)
        except Exception:  # a device that cannot be opened is simply not a peer
            continue
        if other.server is not client.server and all(other.server is not p.server for p in peers):
            peers.append(other)
    if not peers:
        pytest.skip(f"needs a second device besides {client.device} to copy to")
    return peers


def _pairs(client: ComputeClient) -> list[tuple[ComputeClient, ComputeClient]]:
    """(source, destination) for every peer, in both directions."""
    return [pair for peer in _peers(client) for pair in ((client, peer), (peer, client))]


def _plus_one(client: ComputeClient, src, dst) -> None:
    conformance_plus_one.launch(
        client, RudaCount(N // 64), RudaDim(64), ArrayArg(src, N), ArrayArg(dst, N)
    )


def test_bytes_arrive_both_ways(client):
    data = np.random.default_rng(7).integers(0, 2**32, N, dtype=np.uint32)
    for source, dest in _pairs(client):
        copy = source.to_client(source.create_from_slice(data), dest)
        assert copy.nbytes == data.nbytes
        np.testing.assert_array_equal(read_array(dest, copy, np.uint32), data)


def test_a_profile_of_the_destination_times_the_copy_as_a_transfer(client):
    """The write a copy enqueues on its destination is device work like any write: a profile
    of the destination's stream lists it and counts its time as a transfer."""
    data = np.arange(N, dtype=np.uint32)
    for source, dest in _pairs(client):
        handle = source.create_from_slice(data)
        source.sync().result(timeout=TIMEOUT_S)
        _, profile = dest.profile(lambda s=source, h=handle, d=dest: s.to_client(h, d))
        names = [(e.name, e.kind) for e in profile.trace.events]
        assert (f"write {data.nbytes} B", "transfer") in names, (source.device, dest.device)


def test_an_empty_handle_copies(client):
    for source, dest in _pairs(client):
        copy = source.to_client(source.empty(0), dest)
        assert copy.nbytes == 0 and read_array(dest, copy, np.uint8).size == 0


def test_the_copy_reads_after_the_writing_kernel(client, spin):
    """The source is written by a long kernel enqueued just before the copy: the copy holds
    what the kernel wrote, not the zeros that were there before."""
    for peer in _peers(client):
        out = client.create_from_slice(np.zeros(spin.units, dtype=np.uint32))
        spin.launch(out, seed=11)
        copy = client.to_client(out, peer)
        np.testing.assert_array_equal(read_array(peer, copy, np.uint32), spin.expected(seed=11))


def test_later_work_on_the_source_waits_for_the_copy(client, spin):
    """A write into the source enqueued right after the copy (while the writer still runs)
    does not reach the copy."""
    for peer in _peers(client):
        out = client.create_from_slice(np.zeros(spin.units, dtype=np.uint32))
        spin.launch(out, seed=5)
        copy = client.to_client(out, peer)
        client.write(out, np.full(spin.units, 7, dtype=np.uint32))
        np.testing.assert_array_equal(read_array(peer, copy, np.uint32), spin.expected(seed=5))
        np.testing.assert_array_equal(read_array(client, out, np.uint32), np.full(spin.units, 7))


def test_a_kernel_on_the_destination_reads_the_copy(client):
    """A kernel enqueued on the destination right after ``to_client`` returns, with no sync in
    between, sees the copied bytes; so does one of the source written by a kernel there."""
    data = np.arange(N, dtype=np.uint32)
    for source, dest in _pairs(client):
        written = source.empty(4 * N)
        _plus_one(source, source.create_from_slice(data), written)  # data + 1, still queued
        copy = source.to_client(written, dest)
        out = dest.empty(4 * N)
        _plus_one(dest, copy, out)
        np.testing.assert_array_equal(read_array(dest, out, np.uint32), data + 2)


def test_a_copy_made_on_another_thread_is_ordered_for_this_one(client):
    """The copy is enqueued on the destination stream of the thread that called ``to_client``;
    a kernel of another thread on the destination is ordered after it through the handle."""
    data = np.arange(N, dtype=np.uint32)
    for source, dest in _pairs(client):
        made: list = []

        def copy(source=source, dest=dest, made=made):
            made.append(source.to_client(source.create_from_slice(data), dest))

        worker = threading.Thread(target=copy)
        worker.start()
        worker.join(TIMEOUT_S)
        out = dest.empty(4 * N)
        _plus_one(dest, made[0], out)
        np.testing.assert_array_equal(read_array(dest, out, np.uint32), data + 1)


def test_tensors_keep_their_layout(client):
    """A pitched view (3 rows of 3 in rows of 4) arrives with its shape, strides and element,
    and reads back as the same values."""
    grid = np.arange(12, dtype=np.float32).reshape(3, 4)
    for source, dest in _pairs(client):
        full = RudaTensor.from_numpy(source, grid)
        view = RudaTensor(full.handle, (3, 3), (4, 1), full.elem)
        moved = view.to_client(dest)
        assert (moved.shape, moved.strides, moved.elem) == (view.shape, view.strides, view.elem)
        assert moved.handle.nbytes == full.handle.nbytes
        np.testing.assert_array_equal(moved.to_numpy(dest), grid[:, :3])
        np.testing.assert_array_equal(full.to_client(dest, source).to_numpy(dest), grid)


def test_a_failed_writer_poisons_the_copy(client):
    """A kernel that could not run leaves its output without valid data: its copy raises on
    the destination instead of returning stale bytes, and a later write there clears it."""
    task = RefusedTask(KernelTask(conformance_plus_one.definition()))
    for source, dest in _pairs(client):
        src = source.create_from_slice(np.arange(N, dtype=np.uint32))
        out = source.create_from_slice(np.zeros(N, dtype=np.uint32))
        bindings = [src.binding(), out.binding()]
        source.launch(task, RudaCount(N // 64), RudaDim(64), bindings, (), (N, N))
        copy = source.to_client(out, dest)
        with pytest.raises(ServerError):
            dest.read_one(copy, timeout=TIMEOUT_S)
        with pytest.raises(ServerError):
            source.read_one(out, timeout=TIMEOUT_S)
        source.sync().result(timeout=TIMEOUT_S)
        dest.sync().result(timeout=TIMEOUT_S)
        dest.write(copy, np.ones(N, dtype=np.uint32))
        np.testing.assert_array_equal(read_array(dest, copy, np.uint32), np.ones(N))


def test_a_failed_writer_stays_pending_on_the_source_after_its_copy(client):
    """The copy of a failed kernel's output raises the failure on the destination and leaves
    it pending on the source's stream too, however soon the copy's read ran: the source's
    next sync raises it, once."""
    task = RefusedTask(KernelTask(conformance_plus_one.definition()))
    for source, dest in _pairs(client):
        src = source.create_from_slice(np.arange(N, dtype=np.uint32))
        out = source.create_from_slice(np.zeros(N, dtype=np.uint32))
        source.launch(
            task, RudaCount(N // 64), RudaDim(64), [src.binding(), out.binding()], (), (N, N)
        )
        copy = source.to_client(out, dest)
        with pytest.raises(ServerError):
            dest.read_one(copy, timeout=TIMEOUT_S)
        with pytest.raises(ServerError):
            source.sync().result(timeout=TIMEOUT_S)
        source.sync().result(timeout=TIMEOUT_S)
        dest.sync().result(timeout=TIMEOUT_S)


def test_bad_input_is_refused_before_anything_runs(client):
    peer = _peers(client)[0]
    mine = client.create_from_slice(np.arange(N, dtype=np.uint32))
    theirs = peer.create_from_slice(np.arange(N, dtype=np.uint32))
    gc.collect()
    before = peer.memory_usage().bytes_in_use
    with pytest.raises(InvalidHandle, match="itself"):
        client.to_client(mine, client)
    with pytest.raises(InvalidHandle, match="itself"):
        client.to_client(mine, client.fixed_execution_queue())  # the same device, pinned
    with pytest.raises(InvalidHandle, match="does not belong"):
        client.to_client(theirs, peer)  # a handle of the peer, through this device's client
    with pytest.raises(TypeError, match="Handle"):
        client.to_client(mine.binding(), peer)
    with pytest.raises(TypeError, match="ComputeClient"):
        client.to_client(mine, peer.server)
    dropped = client.create_from_slice(np.zeros(N, dtype=np.uint32)).binding()  # dropped here
    gc.collect()
    stream = client.execution_stream().value
    with pytest.raises(InvalidHandle, match="dropped"):
        client.server.copy_to(dropped, stream, peer.server, peer.execution_stream().value)
    assert peer.memory_usage().bytes_in_use == before  # nothing was allocated for a copy
    np.testing.assert_array_equal(read_array(client, mine, np.uint32), np.arange(N))


#: the chunk of the chunked copies below (``RUDA_TRANSFER_CHUNK``), small to keep them fast
CHUNK = 4096


def test_a_chunk_of_zero_bytes_is_refused_naming_the_setting(client, monkeypatch):
    monkeypatch.setenv("RUDA_TRANSFER_CHUNK", "0")
    for source, dest in _pairs(client):
        with pytest.raises(SettingError, match="RUDA_TRANSFER_CHUNK=0"):
            source.to_client(source.create_from_slice(np.zeros(8, np.uint32)), dest)


@pytest.mark.parametrize(
    "nbytes", [CHUNK - 4, CHUNK, CHUNK + 4, 2 * CHUNK, 3 * CHUNK - 4, 3 * CHUNK + 4, 7 * CHUNK]
)
def test_a_copy_in_chunks_arrives_exact(client, monkeypatch, nbytes):
    """A copy through the host in chunks of ``RUDA_TRANSFER_CHUNK`` bytes holds every byte of
    its source, around the chunk boundaries too, and a kernel enqueued on the destination
    right after it reads the whole copy."""
    monkeypatch.setenv("RUDA_TRANSFER_CHUNK", str(CHUNK))
    data = np.random.default_rng(nbytes).integers(0, 2**32, nbytes // 4, dtype=np.uint32)
    for source, dest in _pairs(client):
        copy = source.to_client(source.create_from_slice(data), dest)
        out = dest.empty(nbytes)
        conformance_plus_one.launch(
            dest,
            RudaCount(-(-data.size // 64)),
            RudaDim(64),
            ArrayArg(copy, data.size),
            ArrayArg(out, data.size),
        )
        np.testing.assert_array_equal(read_array(dest, copy, np.uint32), data)
        np.testing.assert_array_equal(read_array(dest, out, np.uint32), data + np.uint32(1))


def test_a_copy_in_chunks_reads_after_the_writer_and_before_later_writes(client, monkeypatch):
    """The chunks hold what a kernel queued before the copy wrote, not what the source held
    before it nor what a write enqueued right after the copy puts there."""
    monkeypatch.setenv("RUDA_TRANSFER_CHUNK", str(CHUNK))
    n = 5 * CHUNK // 4 + 3
    data = np.arange(n, dtype=np.uint32)
    for source, dest in _pairs(client):
        written = source.create_from_slice(np.zeros(n, dtype=np.uint32))
        conformance_plus_one.launch(
            source,
            RudaCount(-(-n // 64)),
            RudaDim(64),
            ArrayArg(source.create_from_slice(data), n),
            ArrayArg(written, n),
        )
        copy = source.to_client(written, dest)
        source.write(written, np.full(n, 9, dtype=np.uint32))
        np.testing.assert_array_equal(read_array(dest, copy, np.uint32), data + np.uint32(1))


def test_a_failed_writer_poisons_a_copy_in_chunks(client, monkeypatch):
    """A source a failed kernel left without valid data poisons the whole chunked copy: the
    destination raises on reading it, and a later write there clears it."""
    monkeypatch.setenv("RUDA_TRANSFER_CHUNK", str(CHUNK))
    n = 3 * CHUNK // 4 + 5
    task = RefusedTask(KernelTask(conformance_plus_one.definition()))
    for source, dest in _pairs(client):
        src = source.create_from_slice(np.arange(n, dtype=np.uint32))
        out = source.create_from_slice(np.zeros(n, dtype=np.uint32))
        bindings = [src.binding(), out.binding()]
        source.launch(task, RudaCount(-(-n // 64)), RudaDim(64), bindings, (), (n, n))
        copy = source.to_client(out, dest)
        with pytest.raises(ServerError):
            dest.read_one(copy, timeout=TIMEOUT_S)
        with pytest.raises(ServerError):
            source.read_one(out, timeout=TIMEOUT_S)
        source.sync().result(timeout=TIMEOUT_S)
        dest.sync().result(timeout=TIMEOUT_S)
        dest.write(copy, np.ones(n, dtype=np.uint32))
        np.testing.assert_array_equal(read_array(dest, copy, np.uint32), np.ones(n))


def test_a_malformed_chunk_size_is_refused(client, monkeypatch):
    monkeypatch.setenv("RUDA_TRANSFER_CHUNK", "lots")
    peer = _peers(client)[0]
    with pytest.raises(ValueError, match="RUDA_TRANSFER_CHUNK"):
        client.to_client(client.create_from_slice(np.arange(N, dtype=np.uint32)), peer)
