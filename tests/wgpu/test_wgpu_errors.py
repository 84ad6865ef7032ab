"""What wgpu refuses surfaces as a ruda error at the stream's next sync or read, and the
buffers the refused work would have written raise when read instead of giving what they held
before: never a crash, a hang or stale data presented as a result. What wgpu lets through but
a driver may not run (more workgroup memory than the device has), or may take for ever to build
(lavapipe, a long local array), is refused by ruda first."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("wgpu")

from webgpu_kernels import add

import ruda_core as ruda
from ruda_core.errors import RudaPanic
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    Comptime,
    LocalArray,
    Numeric,
    SharedMemory,
    kernel,
    sync_units,
    u8,
    u32,
)
from ruda_core.runtime import LaunchError, TooManyResources
from ruda_wgpu.server import ARENA_NBYTES


def _refused_dispatch(client) -> None:
    """Record into the client's stream a dispatch of more workgroups than WebGPU's 65 535
    per axis, which wgpu refuses when the stream's commands are submitted (a validation error
    of the command encoder)."""
    server = client.server
    with server.streams.lock:
        stream = server.streams.get(client.execution_stream().value)
        stream.pass_().dispatch_workgroups(1 << 17)


def test_work_wgpu_refuses_fails_the_sync_and_poisons_what_it_would_have_written(client):
    n = 1000
    a = ruda.asarray(np.ones(n, np.float32), client)
    b = ruda.asarray(np.ones(n, np.float32), client)
    c = ruda.asarray(np.zeros(n, np.float32), client)
    add.launch(client, -(-n // 64), 64, a, b, c)  # recorded with the refused dispatch
    _refused_dispatch(client)
    with pytest.raises(LaunchError, match=r"submitting queued work failed(?s:.*)Validation"):
        client.sync().result()
    with pytest.raises(RudaPanic) as raised:  # not the zeros c held before
        c.numpy()
    assert isinstance(raised.value.__cause__, LaunchError)
    np.testing.assert_array_equal(a.numpy(), np.ones(n, np.float32))  # untouched inputs


def test_the_stream_runs_again_after_a_refused_submission(client):
    n = 1000
    a = ruda.asarray(np.full(n, 2, np.float32), client)
    _refused_dispatch(client)
    with pytest.raises(LaunchError):
        client.sync().result()
    c = ruda.asarray(np.zeros(n, np.float32), client)
    add.launch(client, -(-n // 64), 64, a, a, c)
    np.testing.assert_array_equal(c.numpy(), np.full(n, 4, np.float32))


def test_a_read_submitted_with_refused_work_raises_instead_of_returning(client):
    n = 1000
    c = ruda.asarray(np.arange(n, dtype=np.float32), client)
    client.sync().result()
    _refused_dispatch(client)
    with pytest.raises(RudaPanic) as raised:  # its copy was in the refused submission
        c.numpy()
    assert isinstance(raised.value.__cause__, LaunchError)
    np.testing.assert_array_equal(c.numpy(), np.arange(n, dtype=np.float32))


@kernel
def put(out: Array[u32], at: u32, value: u32):
    out[at] = value


def test_a_launch_whose_record_submits_the_full_arena_is_poisoned_with_its_own_submission(
    client,
):
    """A launch whose record does not fit the stream's record arena submits the arena first;
    what that launch writes belongs to the next submission, which wgpu then refuses: reading it
    raises rather than giving the zeros it held."""
    n = 1000
    a = ruda.asarray(np.ones(n, np.float32), client)
    c = ruda.asarray(np.zeros(n, np.float32), client)
    marks = ruda.asarray(np.zeros(1, np.uint32), client)
    client.sync().result()
    server = client.server
    stream = server.streams.get(client.execution_stream().value)
    used = stream.arena_used
    put.launch(client, 1, 1, marks, np.uint32(0), np.uint32(1))
    stride = stream.arena_used - used  # no longer than a record of add's
    while stream.arena_used + stride <= ARENA_NBYTES:
        put.launch(client, 1, 1, marks, np.uint32(0), np.uint32(1))
    add.launch(client, -(-n // 64), 64, a, a, c)  # submits the full arena first
    assert stream.arena_used < ARENA_NBYTES // 2  # the full arena went first
    _refused_dispatch(client)
    with pytest.raises(LaunchError):
        client.sync().result()
    with pytest.raises(RudaPanic):
        c.numpy()


@kernel
def swap_bytes(x: Array[u8], out: Array[u8], N: Comptime[int]):
    staged = SharedMemory(u8, N)
    staged[UNIT_POS] = x[ABSOLUTE_POS]
    sync_units()
    out[ABSOLUTE_POS] = staged[UNIT_POS ^ u32(1)]


def test_shared_bytes_wgsl_holds_in_words_are_refused_past_the_device_s_workgroup_memory(
    client,
):
    limit = client.properties().max_shared_memory_nbytes
    x = ruda.asarray(np.arange(64, dtype=np.uint8), client)
    out = ruda.asarray(np.zeros(64, np.uint8), client)
    swap_bytes.launch(client, 1, 64, x, out, N=limit // 4)  # a word each: the whole memory
    np.testing.assert_array_equal(out.numpy(), np.arange(64, dtype=np.uint8) ^ 1)
    # ruda counts a byte each, which fits; wgpu would build the pipeline without a word
    with pytest.raises(TooManyResources, match=r"workgroup memory on WebGPU.* over the device's"):
        swap_bytes.launch(client, 1, 64, x, out, N=limit)
        client.sync().result()


@kernel
def reversed_through_a_local_array(x: Array[Numeric], out: Array[Numeric], N: Comptime[int]):
    held = LocalArray(Numeric, N)
    for k in range(N):
        held[k] = x[(ABSOLUTE_POS + u32(k)) % x.len()]
    for k in range(N):
        out[ABSOLUTE_POS * u32(N) + u32(k)] = held[N - 1 - k]


def test_a_local_array_lavapipe_would_build_for_minutes_is_refused_naming_it(client):
    if "llvmpipe" not in client.properties().name:
        pytest.skip(f"{client.device} is not lavapipe")
    x = ruda.asarray(np.arange(64, dtype=np.uint64), client)
    out = ruda.asarray(np.zeros(64 * 64, np.uint64), client)
    reversed_through_a_local_array.launch(client, 1, 64, x, out, N=64)
    expected = (np.arange(64)[:, None] + np.arange(64)[None, ::-1]) % 64
    np.testing.assert_array_equal(out.numpy().reshape(64, 64), expected)
    # 513 u64 are 1 026 words; the kernel would build for about half a minute
    with pytest.raises(TooManyResources, match=r"local array of 513 u64 \(1026 4-byte words\)"):
        reversed_through_a_local_array.launch(client, 1, 1, x, out, N=513)
        client.sync().result()
    big = ruda.asarray(np.zeros(4096, np.float32), client)
    with pytest.raises(TooManyResources, match="local array of 4096 f32"):
        reversed_through_a_local_array.launch(client, 1, 1, big, big, N=4096)
        client.sync().result()
    with pytest.raises(RudaPanic, match="local array of 513 u64"):  # what it would have written
        out.numpy()
