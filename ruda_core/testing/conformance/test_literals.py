"""Literals take the type their context asks for, also as both arms of a conditional expression
(``out[i] = 30 if flag else 50`` into a ``u8``, ``i64``, ``f64`` … array) and as the entries of
a compile-time tuple indexed at run time (``TABLE[i]``), on every device, also inside arithmetic
with literals and other tables (``TABLE[i] + 1.0`` into an ``f64`` array is computed in f64)."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Numeric, f32, f64, i32, i64, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.markers import need
from ruda_core.testing.runner import read_array

N = 64
#: every numeric element type whose range holds both arms below
ELEMS = [e for e in Elem if e is not Elem.BOOL]


@kernel
def conformance_literal_choice(out: Array[Numeric], offset: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = 30 if i % u32(3) == u32(0) else 50
        offset[i] = f32(0.5) + (1 if i % u32(2) == u32(0) else 2)


@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_a_choice_of_two_literals_takes_the_type_of_its_target(client, reference, elem):
    need(client, elem, reference=reference)
    want = np.where(np.arange(N) % 3 == 0, 30, 50)
    for c in (client, reference):
        out, offset = c.empty(N * elem.nbytes), c.empty(N * 4)
        conformance_literal_choice.launch(
            c, RudaCount(1), RudaDim(N), ArrayArg(out, N, elem=elem), ArrayArg(offset, N),
            Numeric=elem,
        )  # fmt: skip
        got = read_array(c, out, np.uint16 if elem is Elem.BF16 else elem.numpy)
        if elem is Elem.BF16:
            got = (got.astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_array_equal(got, want.astype(got.dtype), f"{elem} on {c.device}")
        np.testing.assert_array_equal(
            read_array(c, offset, np.float32), np.where(np.arange(N) % 2 == 0, 1.5, 2.5)
        )


TABLE = (3, 1, 4, 1, 5, 9, 2, 6)
HALVES = (0.5, 1, 2.25)


@kernel
def conformance_constant_tables(out: Array[Numeric], small: Array[u32], frac: Array[f32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = TABLE[i % u32(8)]
        small[i] = u32(TABLE[u32(7) - i % u32(8)]) if i > u32(3) else TABLE[i % u32(8)]
        frac[i] = HALVES[i % u32(3)]


@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_a_tuple_indexed_at_run_time_takes_the_type_of_its_target(client, reference, elem):
    need(client, elem, reference=reference)
    i = np.arange(N)
    table = np.array(TABLE)
    want_small = np.where(i > 3, table[7 - i % 8], table[i % 8])
    for c in (client, reference):
        out, small, frac = c.empty(N * elem.nbytes), c.empty(N * 4), c.empty(N * 4)
        conformance_constant_tables.launch(
            c, RudaCount(1), RudaDim(N), ArrayArg(out, N, elem=elem), ArrayArg(small, N),
            ArrayArg(frac, N), Numeric=elem,
        )  # fmt: skip
        got = read_array(c, out, np.uint16 if elem is Elem.BF16 else elem.numpy)
        if elem is Elem.BF16:
            got = (got.astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_array_equal(got, table[i % 8].astype(got.dtype), f"{elem} on {c.device}")
        np.testing.assert_array_equal(read_array(c, small, np.uint32), want_small)
        np.testing.assert_array_equal(
            read_array(c, frac, np.float32), np.array(HALVES, np.float32)[i % 3]
        )


#: not exact in f32: an f64 target must get the f64 results of the arithmetic
THIRDS = (0.1, 0.2, 0.3)


@kernel
def conformance_table_arithmetic(
    wide: Array[f64], mixed: Array[f64], big: Array[i64], negated: Array[i32], near: Array[f32]
):
    i = ABSOLUTE_POS
    if i < wide.len():
        k = i % u32(3)
        j = i % u32(8)
        wide[i] = THIRDS[k] + 1.0
        mixed[i] = 2.0 * THIRDS[k] - THIRDS[k] / 3.0 + HALVES[k]
        big[i] = TABLE[j] * 1_000_000_000_000  # fits only i64
        negated[i] = -TABLE[j] + 1
        near[i] = THIRDS[k] * near[i]  # a typed operand: the table takes its type


def test_a_table_in_arithmetic_takes_the_type_of_its_context(client, reference):
    need(client, Elem.F64, reference=reference)
    k, j = np.arange(N) % 3, np.arange(N) % 8
    thirds, table = np.array(THIRDS), np.array(TABLE)
    for c in (client, reference):
        wide, mixed, big, negated = (c.empty(N * 8) for _ in range(4))
        near = c.create_from_slice(np.full(N, 3.0, np.float32))
        conformance_table_arithmetic.launch(
            c, 1, N, ArrayArg(wide, N), ArrayArg(mixed, N), ArrayArg(big, N),
            ArrayArg(negated, N), ArrayArg(near, N),
        )  # fmt: skip
        np.testing.assert_array_equal(read_array(c, wide, np.float64), thirds[k] + 1.0)
        want = np.array([2.0 * t - t / 3.0 + h for t, h in zip(THIRDS, HALVES, strict=True)])
        np.testing.assert_array_equal(read_array(c, mixed, np.float64), want[k])
        np.testing.assert_array_equal(
            read_array(c, big, np.int64), table[j].astype(np.int64) * 1_000_000_000_000
        )
        np.testing.assert_array_equal(read_array(c, negated, np.int32)[:N], 1 - table[j])
        np.testing.assert_array_equal(
            read_array(c, near, np.float32), np.float32(3.0) * thirds.astype(np.float32)[k]
        )
