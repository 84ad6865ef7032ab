"""Tensor copies (``mbarrier.tensor_copy``): cubes copy 2-D boxes of a row-major matrix into
shared memory in the 128-byte swizzle, through two slots whose barriers the copies complete,
and write each box back unswizzled. Boxes that cross the matrix's right or bottom edge, or lie
wholly past it, arrive padded with zeros. Every device must match NumPy bit for bit; a matrix
whose rows are not a multiple of 16 bytes is refused. A device without
``Feature.ASYNC_BARRIER`` skips these as unsupported, and refuses such a kernel with
``UnsupportedFeature`` naming the device."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ArrayArg, f32, i8, u16
from ruda_core.runtime import ComputeClient, Feature, RudaCount, RudaDim, UnsupportedFeature
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import read_array
from ruda_core.testing.tma_kernels import tensor_boxes

#: The matrix elements: the kernel's and NumPy's; a box row is 128 bytes of them.
ELEMS = {"f32": (f32, np.float32), "u16": (u16, np.uint16), "i8": (i8, np.int8)}
#: ``(rows, cols, box_rows)``: matrices that boxes cover exactly, cross at both edges, or that
#: one box row exceeds; boxes of 1 to 256 rows.
SHAPES = [(64, 128, 64), (37, 208, 16), (5, 48, 8), (300, 64, 256), (9, 16, 1)]


def _arg(client: ComputeClient, x: np.ndarray) -> ArrayArg:
    return ArrayArg(client.create_from_slice(x), x.size, elem=Elem.from_dtype(x.dtype))


def _boxes(x: np.ndarray, box_rows: int, box_cols: int) -> tuple[np.ndarray, int, int]:
    """Every box of ``x`` padded with zeros, in box order, and the boxes down and across."""
    down, across = -(-x.shape[0] // box_rows), -(-x.shape[1] // box_cols)
    padded = np.zeros((down * box_rows, across * box_cols), x.dtype)
    padded[: x.shape[0], : x.shape[1]] = x
    boxes = padded.reshape(down, box_rows, across, box_cols).swapaxes(1, 2)
    return boxes.ravel(), down, across


@requires(Feature.ASYNC_BARRIER)
@pytest.mark.parametrize("elem", sorted(ELEMS))
@pytest.mark.parametrize(("rows", "cols", "box_rows"), SHAPES, ids=lambda v: str(v))
def test_boxes_arrive_swizzled_and_padded_with_zeros(client, elem, rows, cols, box_rows):
    kernel_elem, dtype = ELEMS[elem]
    box_cols = 128 // np.dtype(dtype).itemsize
    x = np.random.default_rng(rows * cols).integers(1, 100, (rows, cols)).astype(dtype)
    want, down, across = _boxes(x, box_rows, box_cols)
    per_cube = 3
    cubes = -(-(down * across + 1) // per_cube)  # one box at least lies wholly past the matrix
    out = np.zeros(cubes * per_cube * box_rows * box_cols, dtype)
    args = [_arg(client, x.ravel()), _arg(client, out)]
    tensor_boxes.launch(
        client,
        RudaCount(cubes),
        RudaDim(64),
        *args,
        np.uint32(rows),
        np.uint32(cols),
        np.uint32(across),
        BOX_ROWS=box_rows,
        BOX_COLS=box_cols,
        BOXES=per_cube,
        SLOTS=1 if box_rows > 128 else 2,  # a box of 256 rows of 128 bytes is 32 KiB
        UNITS=64,
        T=kernel_elem,
    )
    got = read_array(client, args[1].handle, np.dtype(dtype))
    np.testing.assert_array_equal(got[: want.size], want)
    np.testing.assert_array_equal(got[want.size :], 0)


@requires(Feature.ASYNC_BARRIER)
def test_rows_that_are_not_whole_16_byte_chunks_are_refused(client):
    x = np.arange(5 * 6, dtype=np.float32)  # rows of 24 bytes
    args = [_arg(client, x), _arg(client, np.zeros(32 * 8, np.float32))]
    with pytest.raises(Exception, match="multiple of 16 bytes"):
        tensor_boxes.launch(
            client, RudaCount(1), RudaDim(32), *args, np.uint32(5), np.uint32(6), np.uint32(1),
            BOX_ROWS=8, BOX_COLS=32, BOXES=1, SLOTS=1, UNITS=32, T=f32,
        )  # fmt: skip
        read_array(client, args[1].handle, np.float32)  # where a deferred launch error shows


def test_a_device_without_async_barriers_refuses_tensor_copies(client):
    if client.features().has(Feature.ASYNC_BARRIER):
        pytest.skip(f"{client.device} has tensor copies")
    x = np.zeros(8 * 32, np.float32)
    args = [_arg(client, x), _arg(client, np.zeros_like(x))]
    with pytest.raises(UnsupportedFeature, match=str(client.device)):
        tensor_boxes.launch(
            client, RudaCount(1), RudaDim(32), *args, np.uint32(8), np.uint32(32), np.uint32(1),
            BOX_ROWS=8, BOX_COLS=32, BOXES=1, SLOTS=1, UNITS=32, T=f32,
        )  # fmt: skip
        read_array(client, args[1].handle, np.float32)  # where a deferred launch error shows
