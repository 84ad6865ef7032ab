"""Plane operations and bf16 on a device (CUDA; OpenCL devices, with subgroups or planes of one
lane without them; bf16 where offered): every plane operation against NumPy per plane of
PLANE_DIM units, on whole planes and on cubes whose last plane is partial (also as built from
shuffles on OpenCL's bare subgroups), bf16 arithmetic
against a bf16 rounding model in NumPy, and conversions to bf16 against exact rounding of the
source value."""

from __future__ import annotations

import numpy as np
import pytest
from bf16_model import BF16_SOURCES, bf16_bits, bf16_of_exact, bf16_value

from ruda_core.ir import Elem, KernelDefinition, Op
from ruda_core.runtime import Feature, UnsupportedFeature
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.plane_model import PlaneModel

from .kernels import FILE, REDUCE, RELATIVE, SCAN, partial_plane_kernel
from .references import wrap

E = Elem
UNITS = 64
#: Unit counts of one cube for the partial-plane test (whole planes on some widths).
PARTIAL_UNITS = [1, 3, 17, 31, 33, 47, 100]


def plane_kernel(elem: Elem) -> KernelDefinition:
    """out[k*UNITS + u] = plane op k of x[u]; then broadcast, shuffle, all and any."""
    k = KernelBuilder(f"plane_{elem}", file=FILE, line=1)
    x = k.array("x", elem, read_only=True)
    out = k.array("out", elem)
    flags = k.array("flags", E.BOOL)
    width = k.array("width", E.U32)
    u = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS"), name="u")
    k.do(Op.INDEX_ASSIGN, None, width, u, builtin("PLANE_DIM"))
    v = k.let(Op.INDEX, elem, x, u, name="v")
    lane = builtin("UNIT_POS_PLANE")
    results = [k.let(op, elem, v) for op in REDUCE + SCAN]
    results.append(k.let(Op.PLANE_BROADCAST, elem, v, const(5, E.U32)))
    last = k.let(Op.SUB, E.U32, builtin("PLANE_DIM"), const(1, E.U32))
    mirror = k.let(Op.SUB, E.U32, last, lane)
    results.append(k.let(Op.PLANE_SHUFFLE, elem, v, mirror))
    for slot, value in enumerate(results):
        at = k.let(Op.ADD, E.U32, const(slot * UNITS, E.U32), u)
        k.do(Op.INDEX_ASSIGN, None, out, at, value)
    odd = k.let(Op.EQ, E.BOOL, k.let(Op.MOD, E.U32, u, const(2, E.U32)), const(1, E.U32))
    big = k.let(Op.GE, E.BOOL, u, builtin("PLANE_DIM"))
    flag_values = [
        k.let(Op.PLANE_ALL, E.BOOL, odd),
        k.let(Op.PLANE_ANY, E.BOOL, odd),
        k.let(Op.PLANE_ALL, E.BOOL, big),
        k.let(Op.PLANE_ANY, E.BOOL, big),
        k.let(Op.PLANE_SHUFFLE, E.BOOL, odd, mirror),
    ]
    for slot, value in enumerate(flag_values):
        at = k.let(Op.ADD, E.U32, const(slot * UNITS, E.U32), u)
        k.do(Op.INDEX_ASSIGN, None, flags, at, value)
    return k.build()


def _reference(op: Op, values: list, elem: Elem, plane: int) -> list:
    def fix(v: object) -> object:  # integer sums and products wrap
        return wrap(int(v), elem) if elem.is_int else v  # type: ignore[call-overload]

    out: list = []
    for start in range(0, len(values), plane):
        part = values[start : start + plane]
        if op is Op.PLANE_SUM:
            out += [fix(sum(part))] * plane
        elif op is Op.PLANE_PROD:
            out += [fix(np.prod(np.array(part, dtype=object)))] * plane
        elif op is Op.PLANE_MIN:
            out += [min(part)] * plane
        elif op is Op.PLANE_MAX:
            out += [max(part)] * plane
        elif op is Op.PLANE_INCLUSIVE_SUM:
            out += [fix(sum(part[: i + 1])) for i in range(plane)]
        else:
            out += [fix(sum(part[:i])) for i in range(plane)]
    return out


@pytest.mark.parametrize("elem", [E.I32, E.U8, E.I64, E.F32, E.F64, E.F16], ids=str)
def test_plane_operations(plane_device, elem: Elem) -> None:
    device = plane_device
    try:
        device.emit(plane_kernel(elem))
    except UnsupportedFeature as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(7)
    if elem.is_int:
        values = [int(v) for v in rng.integers(-3, 4, UNITS)]
        values = [wrap(v, elem) for v in values]
    else:  # small dyadic values: sums and products are exact in any order
        values = [float(v) for v in rng.integers(-4, 5, UNITS) / 2]
        values[3] = 1.5
    x = np.array(values, dtype=elem.numpy)
    out = np.zeros(8 * UNITS, elem.numpy)
    flags = np.zeros(5 * UNITS, bool)
    width = np.zeros(UNITS, np.uint32)
    arrays = [x, out, flags, width]
    _, got, got_flags, got_width = device.run(plane_kernel(elem), arrays, dim=(UNITS, 1, 1))
    plane = int(got_width[0])
    assert plane in (1, 8, 16, 32, 64) and (got_width == plane).all()
    for slot, op in enumerate(REDUCE + SCAN):
        expected = np.array(_reference(op, values, elem, plane)).astype(elem.numpy)
        np.testing.assert_array_equal(got[slot * UNITS : (slot + 1) * UNITS], expected, str(op))
    planes = x.reshape(-1, plane)
    lane_5 = planes[:, 5] if plane > 5 else np.zeros(len(planes), elem.numpy)  # 0: no lane 5
    np.testing.assert_array_equal(got[6 * UNITS : 7 * UNITS], np.repeat(lane_5, plane))
    np.testing.assert_array_equal(got[7 * UNITS :], planes[:, ::-1].ravel())
    odd = np.arange(UNITS) % 2 == 1
    big = np.arange(UNITS) >= plane
    all_big = np.repeat(big.reshape(-1, plane).all(axis=1), plane)
    any_big = np.repeat(big.reshape(-1, plane).any(axis=1), plane)
    expected_flags = [
        np.repeat(odd.reshape(-1, plane).all(axis=1), plane),  # no lane of a wider plane
        np.repeat(odd.reshape(-1, plane).any(axis=1), plane),  # some lane of a wider plane
        all_big,
        any_big,
        odd.reshape(-1, plane)[:, ::-1].ravel(),
    ]
    for slot, expected in enumerate(expected_flags):
        np.testing.assert_array_equal(got_flags[slot * UNITS : (slot + 1) * UNITS], expected)


@pytest.mark.parametrize("elem", [E.I32, E.U8, E.I64, E.F32, E.F64, E.F16], ids=str)
def test_plane_operations_on_partial_planes(plane_device, elem: Elem) -> None:
    device, defn = plane_device, partial_plane_kernel(elem)
    try:
        device.emit(defn)
    except UnsupportedFeature as exc:
        pytest.skip(str(exc))
    if not device.client.features().has(Feature.PARTIAL_PLANE):
        pytest.skip(f"{device.client.device} runs whole planes only")
    plane = device.client.properties().plane_dim
    rng = np.random.default_rng(5)
    for units in PARTIAL_UNITS:
        if elem.is_int:
            x = rng.integers(-3 if elem.is_signed else 0, 4, units).astype(elem.numpy)
        else:  # every partial sum and product is exact in any order
            x = rng.choice(np.array([-1, 1, 0.5, 2], elem.numpy), units, p=[0.4, 0.4, 0.1, 0.1])
        choices = [0, 1, 2, 3, 7, plane - 1, plane, 2**32 - 1, units % plane, units % plane + 1]
        d = rng.choice(np.array(choices, np.uint32), units)
        arrays = [x, d, np.zeros(11 * units, elem.numpy), np.zeros(3 * units, np.uint32)]
        _, _, got, got_lanes = device.run(defn, arrays, dim=(units, 1, 1))
        model = PlaneModel(1, units, plane)
        with np.errstate(over="ignore"):
            want = [
                model.sum(x),
                model.prod(x),
                model.min(x),
                model.max(x),
                model.inclusive_sum(x),
                model.exclusive_sum(x),
                model.broadcast(x, 2),
                model.shuffle(x, d),
                model.shuffle_up(x, d),
                model.shuffle_down(x, d),
                model.shuffle_xor(x, d),
            ]
        names = [str(op) for op in [*REDUCE, *SCAN, Op.PLANE_BROADCAST, Op.PLANE_SHUFFLE]]
        names += [str(op) for op in RELATIVE]
        for name, expected, actual in zip(names, want, got.reshape(11, units), strict=True):
            np.testing.assert_array_equal(actual, expected, f"{name} on {units} units")
        ballot = model.ballot(np.arange(units) % 3 == 0)
        expected_lanes = [ballot, model.elect().astype(np.uint32), model.lanes]
        for name, expected, actual in zip(
            ["plane_ballot", "plane_elect", "plane_sum(1)"],
            expected_lanes,
            got_lanes.reshape(3, units),
            strict=True,
        ):
            np.testing.assert_array_equal(actual, expected, f"{name} on {units} units")


def test_bf16_buffers_and_arithmetic(device) -> None:
    k = KernelBuilder("bf16_ops", file=FILE, line=1)
    a = k.array("a", E.BF16, read_only=True)
    f = k.array("f", E.F32, read_only=True)
    out = k.array("out", E.BF16)
    i = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS"), name="i")
    x = k.let(Op.INDEX, E.BF16, a, i)
    y = k.let(Op.CAST, E.BF16, k.let(Op.INDEX, E.F32, f, i))
    results = [
        k.let(Op.ADD, E.BF16, x, y),
        k.let(Op.MUL, E.BF16, x, y),
        k.let(Op.DIV, E.BF16, x, y),
        k.let(Op.MAX, E.BF16, x, y),
        k.let(Op.CAST, E.BF16, k.let(Op.CAST, E.I32, x)),
        y,
    ]
    n = 16
    for slot, value in enumerate(results):
        at = k.let(Op.ADD, E.U32, const(slot * n, E.U32), i)
        k.do(Op.INDEX_ASSIGN, None, out, at, value)
    try:
        defn = k.build()
        device.emit(defn)
    except UnsupportedFeature as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(3)
    a_bits = bf16_bits(rng.normal(size=n).astype(np.float32) * 100)
    f_values = (rng.normal(size=n) * 7).astype(np.float32)
    arrays = [a_bits.view(E.BF16.numpy), f_values, np.zeros(6 * n, E.BF16.numpy)]
    got = device.run(defn, arrays, dim=(n, 1, 1))[2].view(np.uint16)
    xv, yv = bf16_value(a_bits), bf16_value(bf16_bits(f_values))
    with np.errstate(all="ignore"):
        expected = [xv + yv, xv * yv, xv / yv, np.fmax(xv, yv), np.trunc(xv), yv]
    for slot, want in enumerate(expected):
        np.testing.assert_array_equal(got[slot * n : (slot + 1) * n], bf16_bits(want), str(slot))


@pytest.mark.parametrize("source", list(BF16_SOURCES), ids=str)
def test_conversions_to_bf16_round_once(device, source: Elem) -> None:
    k = KernelBuilder(f"to_bf16_{source}", file=FILE, line=1)
    x = k.array("x", source, read_only=True)
    out = k.array("out", E.BF16)
    i = k.let(Op.ASSIGN, E.U32, builtin("UNIT_POS"), name="i")
    k.do(Op.INDEX_ASSIGN, None, out, i, k.let(Op.CAST, E.BF16, k.let(Op.INDEX, source, x, i)))
    defn = k.build()
    try:
        device.emit(defn)
    except UnsupportedFeature as exc:
        pytest.skip(str(exc))
    values = BF16_SOURCES[source]
    n = len(values)
    arrays = [np.array(values, dtype=source.numpy), np.zeros(n, E.BF16.numpy)]
    got = device.run(defn, arrays, dim=(n, 1, 1))[1].view(np.uint16)
    expected = [bf16_of_exact(int(v) if source.is_int else v) for v in arrays[0]]
    np.testing.assert_array_equal(got, np.array(expected, np.uint16), [hex(b) for b in got])
