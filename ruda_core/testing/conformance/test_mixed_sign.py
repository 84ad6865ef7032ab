"""Comparisons of integers of any two types, signed with unsigned included, are exact: each of
``<``, ``<=``, ``>``, ``>=``, ``==`` and ``!=`` gives what Python gives for the two values
(C would convert ``-1`` to a huge unsigned value first), on every device. Arithmetic keeps its
own rule (``i32 + u32`` is ``u32``)."""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    Array,
    ArrayArg,
    ElemVar,
    i8,
    i16,
    i32,
    i64,
    kernel,
    select,
    u8,
    u16,
    u32,
    u64,
)
from ruda_core.testing.runner import read_array

INTS = [i8, i16, i32, i64, u8, u16, u32, u64]
Left = ElemVar("Left", INTS)
Right = ElemVar("Right", INTS)
OPERATORS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]
ELEMS = [Elem.I8, Elem.I16, Elem.I32, Elem.I64, Elem.U8, Elem.U16, Elem.U32, Elem.U64]


@kernel
def conformance_compare_every_way(a: Array[Left], b: Array[Right], out: Array[u8]):
    i = ABSOLUTE_POS
    if i < a.len():
        x = a[i]
        y = b[i]
        at = i * u32(6)
        out[at] = u8(x < y)
        out[at + u32(1)] = u8(x <= y)
        out[at + u32(2)] = u8(x > y)
        out[at + u32(3)] = u8(x >= y)
        out[at + u32(4)] = u8(x == y)
        out[at + u32(5)] = u8(x != y)


def _edges(elem: Elem) -> list[int]:
    """The values where a comparison goes wrong if anywhere: the ends, around 0 and the other
    types' ends."""
    info = np.iinfo(elem.numpy)
    wanted = {0, 1, -1, 5, -3, 127, 128, 255, 256, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1}
    wanted |= {int(info.min), int(info.min) + 1, int(info.max), int(info.max) - 1}
    return sorted(v for v in wanted if int(info.min) <= v <= int(info.max))


@pytest.mark.parametrize(
    ("left", "right"), list(itertools.product(ELEMS, ELEMS)), ids=lambda e: str(e)
)
def test_every_comparison_of_two_integer_types_is_exact(client, left, right):
    pairs = list(itertools.product(_edges(left), _edges(right)))
    n = len(pairs)
    a = client.create_from_slice(np.array([p[0] for p in pairs], dtype=left.numpy))
    b = client.create_from_slice(np.array([p[1] for p in pairs], dtype=right.numpy))
    out = client.empty(6 * n)
    conformance_compare_every_way.launch(
        client,
        (n + 63) // 64,
        64,
        ArrayArg(a, n, elem=left),
        ArrayArg(b, n, elem=right),
        ArrayArg(out, 6 * n),
    )
    got = read_array(client, out, np.uint8).reshape(n, 6)
    want = np.array([[op(x, y) for op in OPERATORS] for x, y in pairs], dtype=np.uint8)
    wrong = [
        (pairs[k], OPERATORS[j].__name__) for k, j in zip(*np.nonzero(got != want), strict=True)
    ]
    assert not wrong, f"{left} vs {right}: wrong for {wrong[:5]} ({len(wrong)} in all)"


@kernel
def conformance_count_below(x: Array[i32], limit: u32, out: Array[u32]):
    if ABSOLUTE_POS == 0:
        n = u32(0)
        for k in range(x.len()):
            if x[k] < limit:
                n += u32(1)
        out[0] = n
        out[1] = u32(x[0] + i32(limit))  # arithmetic: i32 + u32 is u32, and wraps


def test_a_signed_value_below_an_unsigned_limit_counts_as_below(client):
    x = client.create_from_slice(np.array([-3, -1, 0, 2, 7, 9], np.int32))
    out = client.empty(8)
    conformance_count_below.launch(client, 1, 1, ArrayArg(x, 6), np.uint32(5), ArrayArg(out, 2))
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [4, 2])


SignedVar = ElemVar("SignedVar", [i32, i64])
UnsignedVar = ElemVar("UnsignedVar", [u32, u64])


@kernel
def conformance_line_below(a: Array[SignedVar], b: Array[UnsignedVar], out: Array[SignedVar]):
    if ABSOLUTE_POS == 0:
        x = a.load_line(0, 4)
        below = x < b.load_line(0, 4)  # lane by lane, exact
        out.store_line(0, select(below, x, x * SignedVar(0) + SignedVar(7)))


@pytest.mark.parametrize(("signed", "unsigned"), [(Elem.I32, Elem.U32), (Elem.I64, Elem.U64)])
def test_lines_compare_lane_by_lane_exactly(client, signed, unsigned):
    a = client.create_from_slice(np.array([-3, 1, 9, -1], signed.numpy))
    b = client.create_from_slice(np.array([5, 0, 2, 4], unsigned.numpy))
    out = client.empty(4 * signed.nbytes)
    conformance_line_below.launch(
        client, 1, 1, ArrayArg(a, 4, elem=signed), ArrayArg(b, 4, elem=unsigned),
        ArrayArg(out, 4, elem=signed),
    )  # fmt: skip
    np.testing.assert_array_equal(read_array(client, out, signed.numpy), [-3, 7, 7, -1])
