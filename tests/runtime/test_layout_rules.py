"""One layout rule for every record: NumPy's contiguity (extent-1 axes take any stride, empty
layouts are contiguous), pitched rows as a superset of it, and spans as NumPy's offsets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, TensorArg, f32, kernel
from ruda_core.runtime import CopyDescriptor, RudaCount, RudaDim, is_contiguous_or_pitched
from ruda_core.runtime.layer_norm_args import TensorBuffer
from ruda_core.runtime.layout import contiguous_strides, is_contiguous, span
from ruda_core.tensor import RudaTensor

SMALL = [
    (shape, strides)
    for rank in range(4)
    for shape in itertools.product(range(4), repeat=rank)
    for strides in itertools.product(range(7), repeat=rank)
]


def _numpy_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    base = np.zeros(1 + span(shape, strides), np.int8)
    view = np.lib.stride_tricks.as_strided(base, shape, strides, writeable=False)
    return bool(view.flags.c_contiguous)


@pytest.mark.parametrize("rank", range(4))
def test_contiguity_is_numpys(rank):
    for shape, strides in SMALL:
        if len(shape) == rank:
            expected = _numpy_contiguous(shape, strides)
            assert is_contiguous(shape, strides) == expected, (shape, strides)


def test_span_is_one_more_than_the_largest_offset():
    for shape, strides in SMALL:
        offsets = [
            sum(i * s for i, s in zip(index, strides, strict=True)) for index in np.ndindex(*shape)
        ]
        assert span(shape, strides) == (max(offsets) + 1 if offsets else 0), (shape, strides)


def test_every_contiguous_layout_is_pitched():
    for shape, strides in SMALL:
        if is_contiguous(shape, strides):
            assert is_contiguous_or_pitched(shape, strides), (shape, strides)
    assert is_contiguous_or_pitched((3, 4), (6, 1)) and not is_contiguous((3, 4), (6, 1))
    assert not is_contiguous_or_pitched((3, 4), (1, 3))


def test_contiguous_strides_are_contiguous():
    for shape, _ in SMALL:
        assert is_contiguous(shape, contiguous_strides(shape))


def test_every_record_answers_alike():
    client = ruda.client("cpu")
    handle = client.empty(64)
    shape, strides = (4, 1, 3), (3, 99, 1)  # the middle axis has extent 1: any stride
    records = [
        TensorArg(handle, shape, strides),
        RudaTensor(handle, shape, strides, Elem.F32),
        TensorBuffer(handle, shape, strides, Elem.F32),
        CopyDescriptor(handle, shape, strides, 4),
    ]
    for record in records:
        assert (record.rank, record.size, record.span, record.is_contiguous) == (3, 12, 12, True)
    padded = [TensorArg(handle, (4, 3), (5, 1)), RudaTensor(handle, (4, 3), (5, 1), Elem.F32)]
    assert [r.is_contiguous for r in padded] == [False, False]


@kernel
def double_all(x: Array[f32]):
    if ABSOLUTE_POS < x.len():
        x[ABSOLUTE_POS] = x[ABSOLUTE_POS] * f32(2)


def test_an_array_parameter_takes_a_tensor_whose_extent_1_axis_has_any_stride():
    client = ruda.client("cpu")
    data = np.arange(6, dtype=np.float32)
    handle = client.create_from_slice(data)
    double_all.launch(client, RudaCount(1), RudaDim(8), TensorArg(handle, (1, 6), (7, 1)))
    np.testing.assert_array_equal(np.frombuffer(client.read_one(handle), np.float32), data * 2)
