"""The symbolic lane vectors of the lockstep runtime agree with their materialised arrays."""

from __future__ import annotations

import operator

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ruda_cpu.lockstep import values
from ruda_cpu.lockstep.batch import Segmented
from ruda_cpu.lockstep.memory import _valid_range, load, load_seg, store, store_seg

DTYPES = [np.dtype(t) for t in (np.uint8, np.int16, np.uint32, np.int32, np.int64, np.uint64)]
OPS = ["lt", "le", "gt", "ge", "eq", "ne"]


@st.composite
def lane_vectors(draw: st.DrawFn) -> tuple:
    dtype = draw(st.sampled_from(DTYPES))
    info = np.iinfo(dtype)
    n = draw(st.integers(1, 40))
    step = draw(st.integers(-5, 5))
    start = draw(st.integers(int(info.min), int(info.max)))
    return values.lanes(start, step, n, dtype), dtype, start, step, n


def wrapped(start: int, step: int, n: int, dtype: np.dtype) -> np.ndarray:
    bits = dtype.itemsize * 8
    raw = [(start + step * j) % (1 << bits) for j in range(n)]
    return np.array(raw, dtype=np.uint64).astype(dtype)


@settings(max_examples=300, deadline=None)
@given(v=lane_vectors(), op=st.sampled_from(OPS), data=st.data())
def test_lane_vectors_compare_like_arrays(v: tuple, op: str, data: st.DataObject) -> None:
    x, dtype, start, step, n = v
    ref = wrapped(start, step, n, dtype)
    assert (values.arr(x) == ref).all() if not isinstance(x, np.generic) else (ref == x).all()
    info = np.iinfo(dtype)
    bound = dtype.type(data.draw(st.integers(int(info.min), int(info.max))))
    got = getattr(values, op)(x, bound)
    want = getattr(
        np,
        {
            "lt": "less",
            "le": "less_equal",
            "gt": "greater",
            "ge": "greater_equal",
            "eq": "equal",
            "ne": "not_equal",
        }[op],
    )(ref, bound)
    assert (np.broadcast_to(got, want.shape) == want).all()
    got_mirror = getattr(
        values, {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}[op]
    )(bound, x)
    assert (np.broadcast_to(got_mirror, want.shape) == want).all()


@settings(max_examples=200, deadline=None)
@given(v=lane_vectors(), k=st.integers(-(2**65), 2**65), to=st.sampled_from(DTYPES))
def test_lane_vector_arithmetic_and_casts_wrap(v: tuple, k: int, to: np.dtype) -> None:
    x, dtype, start, step, n = v
    s = values.wrap(k, dtype)
    ref = wrapped(start, step, n, dtype)
    with np.errstate(all="ignore"):
        for fn, want in ((values.add, ref + s), (values.sub, ref - s), (values.mul, ref * s)):
            got = fn(x, s)
            assert (np.broadcast_to(values.arr(got), want.shape) == want).all()
        got = values.cast(x, to.type)
        assert (np.broadcast_to(values.arr(got), (n,)) == ref.astype(to)).all()


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(-50, 80),
    step=st.integers(-6, 6).filter(bool),
    n=st.integers(1, 30),
    length=st.integers(0, 40),
)
def test_valid_range_and_slices(start: int, step: int, n: int, length: int) -> None:
    j0, j1 = _valid_range(start, step, n, length)
    inside = [j for j in range(n) if 0 <= start + step * j < length]
    assert list(range(j0, j1)) == inside
    buf = np.arange(length, dtype=np.int32) + 1
    idx = values.Lanes(start, step, n, np.dtype(np.int64))
    want = [buf[start + step * j] if 0 <= start + step * j < length else 0 for j in range(n)]
    assert values.arr(load(buf, idx)).tolist() == want
    m = np.arange(n) % 3 != 0
    store(buf, idx, np.full(n, -7, np.int32), m)
    for j in range(n):
        if 0 <= start + step * j < length:
            assert buf[start + step * j] == (-7 if m[j] else want[j])


@settings(max_examples=100, deadline=None)
@given(
    start=st.integers(-10, 20),
    step=st.integers(-3, 3).filter(bool),
    units=st.integers(1, 9),
    cubes=st.integers(1, 4),
    length=st.integers(1, 12),
)
def test_unit_vectors_index_shared_memory(
    start: int, step: int, units: int, cubes: int, length: int
) -> None:
    one = values.lanes(start, step, units, np.dtype(np.int64))
    idx = values.Units(one, cubes) if isinstance(one, values.Lanes) else one
    plain = values.arr(idx)
    seg = Segmented(np.dtype(np.int32), length, cubes, units)
    seg.data[:] = np.arange(seg.data.size)
    ref = Segmented(np.dtype(np.int32), length, cubes, units)
    ref.data[:] = seg.data
    assert (np.broadcast_to(load_seg(seg, idx), (cubes * units,)) == load_seg(ref, plain)).all()
    m = np.arange(cubes * units) % 2 == 0
    vals = np.arange(cubes * units, dtype=np.int32) + 1000
    store_seg(seg, idx, vals, m)
    store_seg(ref, plain, vals, m)
    assert (seg.data == ref.data).all()


@st.composite
def unit_conditions(draw: st.DrawFn) -> tuple:
    """A boolean condition over the units of one cube, as a UnitMask over several cubes (or a
    uniform value), and the same as a plain array."""
    units, cubes = draw(st.integers(1, 12)), draw(st.integers(1, 4))
    if draw(st.booleans()):
        v = np.bool_(draw(st.booleans()))
        return v, np.full(units * cubes, bool(v)), units, cubes
    one = np.array(draw(st.lists(st.booleans(), min_size=units, max_size=units)))
    return values.UnitMask.tiled(one, cubes), np.tile(one, cubes), units, cubes


@settings(max_examples=300, deadline=None)
@given(data=st.data(), first=unit_conditions())
def test_unit_conditions_combine_and_merge_like_arrays(data: st.DataObject, first: tuple) -> None:
    a, a_ref, units, cubes = first
    one = np.array(data.draw(st.lists(st.booleans(), min_size=units, max_size=units)))
    b, b_ref = values.UnitMask.tiled(one, cubes), np.tile(one, cubes)
    got_and, got_or = values.logical_and(a, b), values.logical_or(a, b)
    assert np.array_equal(np.broadcast_to(got_and, a_ref.shape), a_ref & b_ref)
    assert np.array_equal(np.broadcast_to(got_or, a_ref.shape), a_ref | b_ref)
    n = units * cubes
    new = np.arange(n, dtype=np.float32) - np.float32(0.0)
    old = data.draw(st.sampled_from([np.float32(-0.0), np.full(n, np.nan, np.float32)]))
    for m, m_ref in ((b, b_ref), (got_or, a_ref | b_ref)):
        if isinstance(m, np.ndarray):
            merged = values.blend(m, new, old)
            want = np.where(m_ref, new, old)
            assert np.array_equal(merged.view(np.uint32), want.view(np.uint32))
            flags = values.blend(m, np.True_, np.zeros(n, bool))
            assert flags.dtype == np.bool_ and np.array_equal(flags, m_ref)


@settings(max_examples=300, deadline=None)
@given(
    dtype=st.sampled_from([np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.uint16)]),
    cubes=st.integers(1, 12),
    units=st.integers(1, 9),
    op=st.sampled_from(OPS),
    data=st.data(),
)
def test_cube_and_unit_parts_compare_like_their_sums(
    dtype: np.dtype, cubes: int, units: int, op: str, data: st.DataObject
) -> None:
    """A cube position plus unit positions (a Split) compared with a bound, decided cube by cube
    where a cube's span allows it, equals the comparison of the summed lanes."""
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    step = data.draw(st.integers(0, 40))
    first = data.draw(st.integers(max(lo, -50), min(hi, 400)))
    cube = (first + step * np.arange(cubes)).clip(lo, hi).astype(dtype)
    unit = np.array(data.draw(st.lists(st.integers(0, 60), min_size=units, max_size=units)))
    x = values.Split(cube, unit.astype(dtype), units)
    bound = dtype.type(data.draw(st.integers(max(lo, -60), min(hi, 900))))
    got = getattr(values, op)(x, bound)
    want = getattr(operator, op)(x.array(), bound)
    assert np.array_equal(np.broadcast_to(got, want.shape), want)
