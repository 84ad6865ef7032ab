"""Tensor layouts: contiguous creation, ``read_tensor`` of every layout ``can_read_tensor``
accepts (pitched rows included), and a clear ``LayoutError`` before anything runs for the
others."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ruda_core.lang import ABSOLUTE_POS_X, ABSOLUTE_POS_Y, Tensor, TensorArg, kernel, u32
from ruda_core.runtime import (
    CopyDescriptor,
    LayoutError,
    RudaCount,
    RudaDim,
    RudaPanic,
    contiguous_strides,
)
from ruda_core.tensor import RudaTensor
from ruda_core.testing.runner import TIMEOUT_S, settle

SHAPES = [(), (0,), (7,), (2, 3, 4), (1, 1, 5), (3, 0, 2), (2, 2, 2, 2)]


def _gather(raw: bytes, shape, strides, elem_size: int) -> bytes:
    """The elements a strided view addresses, row-major: what read_tensor must return."""
    out = bytearray()
    for index in np.ndindex(*shape):
        at = sum(i * s for i, s in zip(index, strides, strict=True)) * elem_size
        out += raw[at : at + elem_size]
    return bytes(out)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_tensor_created_from_a_slice_reads_back(client, shape):
    data = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    handle, strides = client.create_tensor_from_slice(data, shape, 4)
    assert strides == contiguous_strides(shape)
    assert client.runtime.can_read_tensor(shape, strides), "contiguous layouts must be readable"
    out = client.read_tensor([CopyDescriptor(handle, shape, strides, 4)])[0]
    assert bytes(out) == data.tobytes()


def test_empty_tensor_has_contiguous_strides(client):
    handle, strides = client.empty_tensor((5, 7), 8)
    assert handle.nbytes == 5 * 7 * 8
    assert strides == (7, 1)


def test_tensor_of_the_wrong_size_is_refused_before_anything_runs(client):
    before = settle(client)
    with pytest.raises(LayoutError):
        client.create_tensor_from_slice(bytes(20), (2, 3), 4)
    assert client.memory_usage().number_allocs == before.number_allocs


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    kind = draw(st.sampled_from(["contiguous", "pitched", "any"]))
    if kind == "any":
        strides = tuple(draw(st.lists(st.integers(0, 12), min_size=rank, max_size=rank)))
    else:
        strides_list = [1] * rank
        for k in range(rank - 2, -1, -1):
            pad = draw(st.integers(0, 3)) if kind == "pitched" else 0
            strides_list[k] = strides_list[k + 1] * max(shape[k + 1], 1) + pad
        strides = tuple(strides_list)
    return shape, strides, draw(st.sampled_from([1, 2, 4, 8]))


@settings(max_examples=40)
@given(layout=layouts(), seed=st.integers(0, 2**16))
def test_read_tensor_returns_the_viewed_elements_or_refuses(client, layout, seed):
    shape, strides, elem_size = layout
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else 0
    raw = np.random.default_rng(seed).integers(0, 256, span * elem_size + 16, np.uint8)
    handle = client.create_from_slice(raw)
    desc = CopyDescriptor(handle, shape, strides, elem_size)
    if client.runtime.can_read_tensor(shape, strides):
        out = client.read_tensor_async([desc]).result(timeout=TIMEOUT_S)[0]
        assert bytes(out) == _gather(raw.tobytes(), shape, strides, elem_size)
    else:
        with pytest.raises(LayoutError):
            client.read_tensor_async([desc])


def test_pitched_rows_read_back_compacted(client):
    if not client.runtime.can_read_tensor((3, 4), (6, 1)):
        pytest.skip(f"unsupported: {client.runtime.__name__} does not read pitched layouts")
    padded = np.arange(18, dtype=np.float32).reshape(3, 6)
    handle = client.create_from_slice(padded)
    out = client.read_tensor([CopyDescriptor(handle, (3, 4), (6, 1), 4)])[0]
    np.testing.assert_array_equal(np.frombuffer(out, np.float32).reshape(3, 4), padded[:, :4])


@kernel
def conformance_fill_rows(t: Tensor[u32]):
    col = ABSOLUTE_POS_X
    row = ABSOLUTE_POS_Y
    if row < t.shape(0) and col < t.shape(1):
        t[row * t.stride(0) + col * t.stride(1)] = row * u32(1000) + col


def test_kernel_written_pitched_tensor_reads_back(client):
    rows, cols, pitch = 5, 7, 9
    if not client.runtime.can_read_tensor((rows, cols), (pitch, 1)):
        pytest.skip(f"unsupported: {client.runtime.__name__} does not read pitched layouts")
    handle = client.create_from_slice(np.full(rows * pitch, 0xFFFFFFFF, dtype=np.uint32))
    conformance_fill_rows.launch(
        client, RudaCount(1, 2), RudaDim(8, 4), TensorArg(handle, (rows, cols), (pitch, 1))
    )
    out = client.read_tensor([CopyDescriptor(handle, (rows, cols), (pitch, 1), 4)])[0]
    expected = np.arange(rows)[:, None] * 1000 + np.arange(cols)[None, :]
    np.testing.assert_array_equal(np.frombuffer(out, np.uint32).reshape(rows, cols), expected)


REFUSED_CANDIDATES = [((3, 4), (1, 3)), ((4, 4), (0, 1)), ((2, 3), (3, 2)), ((2, 2), (1, 1))]


def test_refused_layout_raises_before_anything_runs(client):
    refused = [c for c in REFUSED_CANDIDATES if not client.runtime.can_read_tensor(*c)]
    if not refused:
        pytest.skip(f"{client.runtime.__name__} reads every candidate layout as is")
    handle = client.create_from_slice(np.arange(64, dtype=np.uint32))
    before = settle(client)
    for shape, strides in refused:
        desc = CopyDescriptor(handle, shape, strides, 4)
        with pytest.raises(LayoutError, match="contiguous"):
            client.read_tensor_async([desc])
        with pytest.raises(RudaPanic) as info:
            client.read_tensor([desc])
        assert isinstance(info.value.__cause__, LayoutError)
    assert client.memory_usage().number_allocs == before.number_allocs
    client.sync().result(timeout=TIMEOUT_S)  # nothing was enqueued that could fail
    assert bytes(client.read_one(handle)) == np.arange(64, dtype=np.uint32).tobytes()


def test_layout_larger_than_its_handle_is_refused(client):
    handle = client.empty(40)
    with pytest.raises(LayoutError):
        client.read_tensor_async([CopyDescriptor(handle, (3, 4), (4, 1), 4)])


def test_a_zero_dimensional_array_round_trips_as_a_zero_dimensional_tensor(client):
    tensor = RudaTensor.from_numpy(client, np.array(3.5, np.float32))
    assert tensor.shape == () and tensor.strides == ()
    back = tensor.to_numpy(client)
    assert back.shape == () and back == np.float32(3.5)
