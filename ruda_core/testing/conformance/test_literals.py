"""Literals take the type their context asks for, also as both arms of a conditional expression
(``out[i] = 30 if flag else 50`` into a ``u8``, ``i64``, ``f64`` … array), on every device."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Numeric, f32, kernel, u32
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
