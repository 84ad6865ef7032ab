"""``bitcast(T, x)``: the bits of ``x`` read as ``T``, a type of the same width, on every device;
the round trip is the identity, signed zeros and subnormals included. A NaN stays a NaN, but its
payload may change where a target computes ``f16`` through ``f32`` (OpenCL without
``cl_khr_fp16``)."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, Op
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, Float, Int, bitcast, kernel
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.markers import need
from ruda_core.testing.opkernels import constant_ops_kernel
from ruda_core.testing.runner import read_array, run_definition

#: (float, the unsigned and signed integers of its width)
PAIRS = [
    (Elem.F16, Elem.U16, Elem.I16),
    (Elem.BF16, Elem.U16, Elem.I16),
    (Elem.F32, Elem.U32, Elem.I32),
    (Elem.F64, Elem.U64, Elem.I64),
]


@kernel
def conformance_bitcast(x: Array[Float], bits: Array[Int], back: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        b = bitcast(Int, x[i])
        bits[i] = b
        back[i] = bitcast(Float, b)


def _values(flt: Elem) -> np.ndarray:
    return np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3.0e-5], flt.numpy)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: str(p[0]))
def test_bitcast_reads_the_same_bits_as_another_type(client, pair):
    flt, *ints = pair
    need(client, flt, *ints)
    values = np.concatenate([_values(flt), np.array([0], ints[0].numpy).view(flt.numpy)])
    nan = np.isnan(values)
    for target in ints:
        n = len(values)
        x = client.create_from_slice(values)
        bits, back = client.empty(n * flt.nbytes), client.empty(n * flt.nbytes)
        _launch(client, x, bits, back, n, flt, target)
        got_bits = read_array(client, bits, target.numpy)
        np.testing.assert_array_equal(got_bits[~nan], values.view(target.numpy)[~nan])
        assert np.isnan(got_bits.view(flt.numpy)[nan]).all()
        round_trip = read_array(client, back, flt.numpy)
        np.testing.assert_array_equal(
            round_trip[~nan].view(ints[0].numpy), values[~nan].view(ints[0].numpy)
        )
        assert np.isnan(round_trip[nan]).all()


def _launch(client, x, bits, back, n, flt, target):
    conformance_bitcast.launch(
        client, RudaCount(1), RudaDim(n), ArrayArg(x, n, elem=flt), ArrayArg(bits, n, elem=target),
        ArrayArg(back, n, elem=flt),
    )  # fmt: skip


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: str(p[0]))
def test_bitcasts_of_constants_read_the_same_bits(client, pair):
    """Bit casts of values written as constants, which a compiler evaluates while it builds
    the kernel, each way between a float and both integers of its width: the same bits, but a
    NaN's payload (a NaN stays a NaN). An integer constant narrower than C's ``int`` is cast
    as one of its own width (OpenCL's ``as_half`` of an ``int`` literal does not build)."""
    flt, *ints = pair
    need(client, flt, *ints)
    floats = _values(flt)
    nan = np.isnan(floats)
    for target in ints:
        bits = floats.view(target.numpy)
        for source, values, result in ((flt, floats, target), (target, bits, flt)):
            cases = [(Op.BITCAST, (value,)) for value in values.tolist()]
            defn = constant_ops_kernel(
                f"conformance_bitcast_{source}_{result}", source, cases, result
            )
            got = run_definition(client, defn, [np.zeros(len(cases), result.numpy)])[0]
            as_floats = got.view(flt.numpy)
            assert np.isnan(as_floats[nan]).all(), (source, result, got)
            np.testing.assert_array_equal(got.view(target.numpy)[~nan], bits[~nan], str(source))
