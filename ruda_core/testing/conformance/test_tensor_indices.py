"""Several indices on a ``Tensor`` parameter: ``t[r, c]`` (any rank) addresses the element at
those indices through the tensor's strides, and each index is checked against its own axis, as
a shaped ``SharedMemory`` array's are: a checked read outside an axis gives 0 and a checked
write there is dropped, even where the flat offset would land inside the buffer."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import CompilationError
from ruda_core.lang import (
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    ABSOLUTE_POS_Z,
    Tensor,
    TensorArg,
    f32,
    i32,
    kernel,
    u32,
)
from ruda_core.testing.runner import read_array

SENTINEL = 0x5EEDF00D


@kernel
def conformance_tensor_scale_transpose(src: Tensor[f32], dst: Tensor[f32]):
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < src.shape(0) and c < src.shape(1):
        dst[c, r] = src[r, c] * f32(2)


@kernel
def conformance_tensor_mark_3d(t: Tensor[u32]):
    t[ABSOLUTE_POS_Z, ABSOLUTE_POS_Y, ABSOLUTE_POS_X] = (
        ABSOLUTE_POS_Z * u32(100) + ABSOLUTE_POS_Y * u32(10) + ABSOLUTE_POS_X
    )


@kernel
def conformance_tensor_past_the_row(t: Tensor[u32], out: Tensor[u32]):
    """Every unit of a grid wider than the tensor's rows writes and reads ``t[r, c]``."""
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    t[r, c] = u32(7)
    out[r, c] = t[r, c] + u32(1)


@kernel
def conformance_tensor_signed_index(t: Tensor[u32], out: Tensor[u32], shift: i32):
    r = i32(ABSOLUTE_POS_Y) + shift
    c = i32(ABSOLUTE_POS_X)
    t[r, c] = u32(9)
    out[ABSOLUTE_POS_Y, ABSOLUTE_POS_X] = t[r, c] + u32(1)


def _strided(raw: np.ndarray, shape, strides) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(
        raw, shape, tuple(s * raw.itemsize for s in strides), writeable=False
    )


def test_two_indices_follow_both_tensors_strides(client):
    rows, cols, pitch = 5, 7, 9
    src = np.arange(rows * pitch, dtype=np.float32)
    src_h = client.create_from_slice(src)
    dst_h = client.create_from_slice(np.full(cols * rows, -1, dtype=np.float32))
    conformance_tensor_scale_transpose.launch(
        client,
        (1, 2),
        (8, 4),
        TensorArg(src_h, (rows, cols), (pitch, 1)),
        TensorArg(dst_h, (cols, rows), (1, cols)),  # column-major: dst[c, r] at c + r * cols
    )
    got = _strided(read_array(client, dst_h, np.float32), (cols, rows), (1, cols))
    np.testing.assert_array_equal(got, _strided(src, (rows, cols), (pitch, 1)).T * 2)


def test_three_indices_on_a_rank_3_tensor(client):
    shape = (2, 3, 4)
    handle = client.create_from_slice(np.zeros(24, dtype=np.uint32))
    conformance_tensor_mark_3d.launch(
        client, (1, 1, 2), (4, 3, 1), TensorArg(handle, shape, (12, 4, 1))
    )
    z, y, x = np.indices(shape)
    expected = (z * 100 + y * 10 + x).ravel()
    np.testing.assert_array_equal(read_array(client, handle, np.uint32), expected)


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_an_index_past_its_axis_is_out_of_bounds_even_inside_the_buffer(client):
    rows, cols, pitch = 3, 5, 8  # units at c in 5..7 land in the padding of a row
    t = client.create_from_slice(np.full(rows * pitch, SENTINEL, dtype=np.uint32))
    out = client.create_from_slice(np.full(rows * pitch, SENTINEL, dtype=np.uint32))
    conformance_tensor_past_the_row.launch(
        client,
        1,
        (pitch, rows + 1),
        TensorArg(t, (rows, cols), (pitch, 1)),
        TensorArg(out, (rows, pitch), (pitch, 1)),
    )
    inside = np.full((rows, pitch), SENTINEL, dtype=np.uint32)
    inside[:, :cols] = 7
    np.testing.assert_array_equal(read_array(client, t, np.uint32).reshape(rows, pitch), inside)
    seen = np.full((rows, pitch), 1, dtype=np.uint32)  # a read past the row gives 0
    seen[:, :cols] = 8
    np.testing.assert_array_equal(read_array(client, out, np.uint32).reshape(rows, pitch), seen)


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
@pytest.mark.parametrize("shift", [-1, 1])
def test_a_signed_index_outside_its_axis_is_out_of_bounds(client, shift):
    rows, cols = 4, 4
    t = client.create_from_slice(np.full(rows * cols, SENTINEL, dtype=np.uint32))
    out = client.create_from_slice(np.zeros(rows * cols, dtype=np.uint32))
    conformance_tensor_signed_index.launch(
        client,
        1,
        (cols, rows),
        TensorArg(t, (rows, cols), (cols, 1)),
        TensorArg(out, (rows, cols), (cols, 1)),
        shift,
    )
    written = np.full((rows, cols), SENTINEL, dtype=np.uint32)
    seen = np.full((rows, cols), 10, dtype=np.uint32)
    missing = rows - 1 if shift < 0 else 0  # the row no shifted unit writes
    outside = rows - 1 if shift > 0 else 0  # the units whose shifted row is outside
    written[[r for r in range(rows) if r != missing]] = 9
    seen[outside] = 1
    np.testing.assert_array_equal(read_array(client, t, np.uint32).reshape(rows, cols), written)
    np.testing.assert_array_equal(read_array(client, out, np.uint32).reshape(rows, cols), seen)


@kernel
def conformance_tensor_two_indices(t: Tensor[u32]):
    t[ABSOLUTE_POS_Y, ABSOLUTE_POS_X] = u32(1)


def test_as_many_indices_as_the_rank_or_one_flat_index(client):
    handle = client.create_from_slice(np.zeros(8, dtype=np.uint32))
    with pytest.raises(CompilationError, match="has rank 3: give 3 indices"):
        conformance_tensor_two_indices.launch(client, 1, 8, TensorArg(handle, (2, 2, 2), (4, 2, 1)))
