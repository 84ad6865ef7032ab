"""The sanitizer follows device memory: on the NumPy device, a sanitized launch reports each
read of an array element that nothing wrote (no host write, copy, earlier launch or unit of the
launch), as an ``uninitialised read`` naming the array and index, and marks what its units
write; memory the pool hands to a new handle is unwritten again. Memory made before the
sanitizer was on, or handed to another library, counts as written. Each test runs on a
server of its own, so that its memory is new."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ruda_cpu
from ruda_core.errors import SanitizerError
from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    ArrayArg,
    atomic_add,
    atomic_store,
    f32,
    kernel,
    u32,
)
from ruda_core.runtime import ComputeClient, DeviceId, Handle, RudaCount, RudaDim
from ruda_core.tensor import RudaTensor
from ruda_core.testing.matrix_kernels import cmma_fill_store
from ruda_core.testing.runner import read_array
from ruda_cpu import CpuRuntime
from ruda_cpu.server import CpuServer

BLOCK = 32
CUBES = 3
N = BLOCK * CUBES


@kernel
def accumulate(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] += x[ABSOLUTE_POS]  # reads out first


@kernel
def copy(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@kernel
def copy_f32(x: Array[f32], out: Array[f32]):
    if ABSOLUTE_POS < x.len():
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS]


@kernel
def first_half(out: Array[u32]):
    if ABSOLUTE_POS < out.len() // u32(2):
        out[ABSOLUTE_POS] = ABSOLUTE_POS


@kernel
def count_by_bin(x: Array[u32], hist: Array[u32]):
    atomic_add(hist, x[ABSOLUTE_POS] % u32(4), u32(1))


@kernel
def store_then_count(x: Array[u32], hist: Array[u32]):
    if ABSOLUTE_POS < u32(4):
        atomic_store(hist, ABSOLUTE_POS, u32(0))


@pytest.fixture
def fresh(
    new_private_client: Callable[[], ComputeClient], monkeypatch: pytest.MonkeyPatch
) -> ComputeClient:
    """A client of a server of its own, made with the sanitizer on."""
    monkeypatch.setenv("RUDA_SANITIZE", "1")
    return new_private_client()


def _launch(client: ComputeClient, k: object, *arrays: Handle) -> None:
    args = [ArrayArg(a, a.nbytes // 4) for a in arrays]
    k.launch(client, RudaCount(CUBES), RudaDim(BLOCK), *args)  # type: ignore[attr-defined]


def _ones(client: ComputeClient) -> Handle:
    return client.create_from_slice(np.ones(N, np.uint32))


def test_a_read_of_memory_nothing_wrote_is_reported(fresh: ComputeClient) -> None:
    out = fresh.empty(4 * N)
    _launch(fresh, accumulate, _ones(fresh), out)
    with pytest.raises(SanitizerError) as caught:
        fresh.sync().result()
    err = caught.value
    assert err.kinds == {"uninitialised read": N}
    first = err.findings[0]
    assert (first.kernel, first.array, first.index) == ("accumulate", "out", 0)
    assert first.line.startswith("test_sanitize_device_memory.py:")
    assert first.unit == ((0, 0, 0), (0, 0, 0))


def test_memory_a_write_a_copy_or_a_launch_wrote_reads_clean(fresh: ComputeClient) -> None:
    x = _ones(fresh)
    written = fresh.create_from_slice(np.full(N, 2, np.uint32))
    copied = fresh.empty(4 * N)
    fresh.copy(written, copied)
    launched = fresh.empty(4 * N)
    _launch(fresh, copy, written, launched)
    for out in (written, copied, launched):
        _launch(fresh, accumulate, x, out)
        np.testing.assert_array_equal(read_array(fresh, out, np.uint32), np.full(N, 3))


def test_a_copy_of_memory_nothing_wrote_is_still_unwritten(fresh: ComputeClient) -> None:
    unwritten, out = fresh.empty(4 * N), fresh.empty(4 * N)
    fresh.copy(unwritten, out)  # a copy is no read: nothing is reported here
    fresh.sync().result()
    _launch(fresh, copy, out, fresh.empty(4 * N))
    with pytest.raises(SanitizerError) as caught:
        fresh.sync().result()
    assert caught.value.kinds == {"uninitialised read": N}
    assert caught.value.findings[0].array == "x"


def test_what_a_launch_left_unwritten_is_reported_element_by_element(
    fresh: ComputeClient,
) -> None:
    out = fresh.empty(4 * N)
    _launch(fresh, first_half, out)
    _launch(fresh, copy, out, fresh.empty(4 * N))
    with pytest.raises(SanitizerError) as caught:
        fresh.sync().result()
    assert caught.value.kinds == {"uninitialised read": N // 2}
    assert caught.value.findings[0].index == N // 2


def test_memory_a_dropped_handle_wrote_is_unwritten_for_the_next(fresh: ComputeClient) -> None:
    old = fresh.create_from_slice(np.ones(N, np.uint32))
    _launch(fresh, accumulate, _ones(fresh), old)  # queued before the drop: still clean
    where = (old.binding().resource, old.binding().offset_bytes)
    del old
    new = fresh.empty(4 * N)
    assert (new.binding().resource, new.binding().offset_bytes) == where  # the same bytes
    _launch(fresh, accumulate, _ones(fresh), new)
    with pytest.raises(SanitizerError) as caught:
        fresh.sync().result()
    assert caught.value.kinds == {"uninitialised read": N}
    assert caught.value.findings[0].array == "out"


def test_an_atomic_update_of_unwritten_memory_is_reported(fresh: ComputeClient) -> None:
    x = fresh.create_from_slice(np.arange(N, dtype=np.uint32))
    hist = fresh.empty(16)
    _launch(fresh, count_by_bin, x, hist)
    with pytest.raises(SanitizerError) as caught:
        fresh.sync().result()
    assert set(caught.value.kinds) == {"uninitialised read"}
    assert caught.value.findings[0].array == "hist"
    stored = fresh.empty(16)  # an atomic store writes the element
    _launch(fresh, store_then_count, x, stored)
    _launch(fresh, count_by_bin, x, stored)
    np.testing.assert_array_equal(read_array(fresh, stored, np.uint32), np.full(4, N // 4))


def test_a_matrix_store_counts_as_writing_its_whole_array(fresh: ComputeClient) -> None:
    size = 16 * (16 + 8)  # a 16 x 16 tile stored with a stride of 24: a third is left out
    out = fresh.empty(4 * size)
    plane = fresh.properties().plane_dim
    tile = ArrayArg(out, size, elem=Elem.F32)
    cmma_fill_store.launch(
        fresh, RudaCount(1), RudaDim(plane), tile, np.float32(1.5), M=16, N=16, K=16
    )
    copied = fresh.empty(4 * size)
    copy_f32.launch(
        fresh, RudaCount(-(-size // 64)), RudaDim(64), ArrayArg(out, size), ArrayArg(copied, size)
    )
    got = read_array(fresh, copied, np.float32)  # no report: the tile's layout is not followed
    assert (got.reshape(16, 24)[:, :16] == 1.5).all()


def test_memory_made_before_the_sanitizer_was_on_counts_as_written(
    new_private_client: Callable[[], ComputeClient],
) -> None:
    client = new_private_client()
    with ruda_cpu.sanitizing(False):
        out = client.empty(4 * N)  # made with the sanitizer off: not followed
    with ruda_cpu.sanitizing():
        _launch(client, accumulate, _ones(client), out)
        client.sync().result()  # no report: what it holds is unknown, not unwritten


def test_memory_handed_out_through_dlpack_counts_as_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUDA_SANITIZE", "1")
    # registered (a DLPack export looks its client up), new (its memory followed)
    client = ComputeClient.init(("sanitized-cpu", 0), CpuServer(DeviceId(0, 900)), CpuRuntime)
    tensor = RudaTensor.empty(client, (N,), np.uint32)
    np.from_dlpack(tensor)[:] = 5  # written by NumPy, unseen by the device
    _launch(client, accumulate, _ones(client), tensor.handle)
    np.testing.assert_array_equal(read_array(client, tensor.handle, np.uint32), np.full(N, 6))
