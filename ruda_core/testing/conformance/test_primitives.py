"""The device-wide primitives of ``ruda_core.ops`` on every device, against NumPy: ``sum``,
``min``, ``max`` and ``cumsum`` (exact for integers and for ``min``/``max``, float sums within
the bound ``docs/ops.md`` states; bool, 8- and 16-bit integers and f16 too), ``sort`` and
``argsort`` (exact, NumPy's stable order, NaN, infinities and signed zeros included; bool,
8- and 16-bit integers and f16 too) and
``bincount``; odd lengths, one element, empty input, rows over the last axis, and NumPy's
errors."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core import ops
from ruda_core.ir import Elem
from ruda_core.runtime import LaunchConfigError
from ruda_core.testing.markers import need
from ruda_core.testing.runner import TIMEOUT_S

ELEMS = [Elem.I32, Elem.U32, Elem.I64, Elem.U64, Elem.F32, Elem.F64]
#: The element types of sums, minima, maxima and running sums only, computed wider.
NARROW = [Elem.BOOL, Elem.I8, Elem.U8, Elem.I16, Elem.U16, Elem.F16]
#: Lengths: one element, a few, and one past a power of two that is no multiple of any tile.
LENGTHS = [1, 3, 100_003]


def _data(elem: Elem, shape: tuple[int, ...] | int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if elem is Elem.BOOL:
        return rng.random(shape) < 0.5
    if elem.is_int and elem.bits < 32:  # every value of the type
        info = np.iinfo(elem.numpy)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(elem.numpy)
    if elem.is_float:
        return rng.standard_normal(shape).astype(elem.numpy) * 100
    if elem.is_signed:
        return rng.integers(-(2**30), 2**30, shape).astype(elem.numpy)
    return rng.integers(0, 2**31, shape, dtype=np.uint64).astype(elem.numpy)


def _wide(client, expected: np.dtype, elem: Elem) -> np.dtype:
    """NumPy's result type, or ``elem``'s where the device lacks 64-bit integers (documented)."""
    if expected.kind in "iu" and not client.features().supports(Elem.from_dtype(expected)):
        return elem.numpy
    return expected


def _sum_dtype(client, expected: np.dtype) -> np.dtype:
    """NumPy's sum type, or its 32-bit integer type where the device lacks 64-bit integers."""
    return _wide(client, expected, Elem.I32 if expected.kind == "i" else Elem.U32)


def _fold(plane: int) -> float:
    """The error steps of one cube-wide fold: ``log2(P) + ceil(1024 / P)``."""
    return math.log2(plane) + math.ceil(1024 / plane)


def _sum_bound(x: np.ndarray, plane: int, whole: bool) -> np.ndarray:
    """The float sum's documented bound, ``steps * eps * sum(|x|)`` per sum along the last axis:
    ``steps = ceil(n / 65536) + 48 + 2 * fold`` over all elements, ``ceil(n / 64) + fold`` over
    the last axis."""
    n = x.shape[-1]
    eps = np.finfo(x.dtype).eps
    steps = math.ceil(n / 65536) + 48 + 2 * _fold(plane) if whole else -(-n // 64) + _fold(plane)
    return steps * eps * np.abs(x.astype(np.float64)).sum(axis=-1)


@pytest.mark.parametrize("op", ["sum", "cumsum"])
def test_sums_on_two_streams_at_once(client, spin, op):
    """Whole-array sums and running sums enqueued from two threads (two streams) behind a long
    kernel each, so that they run at once, each give their own input's result: the device
    memory whose tickets and flags let cubes finish a sum or chain a scan in one launch is
    never shared by launches running at once."""
    xs = [(np.arange(100_003, dtype=np.int32) * k) % 1000 for k in (3, 7)]
    fold = np.sum if op == "sum" else np.cumsum
    want = [fold(x.astype(np.int64)) for x in xs]
    got: list[list[np.ndarray]] = [[], []]

    def run(k: int) -> None:
        t = ruda.asarray(xs[k], client)
        spin.launch(client.empty(4 * spin.units))  # holds this stream while both enqueue
        results = [getattr(ops, op)(t) for _ in range(20)]
        got[k] = [r.numpy() for r in results]

    workers = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(TIMEOUT_S)
    for k in (0, 1):
        assert len(got[k]) == 20
        for r in got[k]:
            np.testing.assert_array_equal(r, want[k].astype(r.dtype))


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_sum_min_max_match_numpy(client, elem, n):
    need(client, elem)
    x = _data(elem, n, seed=n)
    t = ruda.asarray(x, client)
    total = ops.sum(t).numpy()
    expected = x.sum()
    assert total.shape == () and total.dtype == _wide(client, expected.dtype, elem)
    if elem.is_float:
        bound = _sum_bound(x, client.properties().plane_dim, whole=True)
        assert abs(float(total) - x.astype(np.float64).sum()) <= bound
    else:
        assert total == expected.astype(total.dtype)
    assert ops.min(t).numpy() == x.min()
    assert ops.max(t).numpy() == x.max()


def test_float_min_max_propagate_nan_and_sums_of_nothing_are_zero(client):
    need(client, Elem.F64)
    x = np.arange(5000, dtype=np.float32)
    x[4321] = np.nan
    t = ruda.asarray(x, client)
    assert np.isnan(ops.min(t).numpy()) and np.isnan(ops.max(t).numpy())
    assert ops.max(ruda.asarray(np.array([-np.inf, np.inf], np.float64), client)).numpy() == np.inf
    empty = ruda.asarray(np.zeros((3, 0), np.int32), client)
    np.testing.assert_array_equal(ops.sum(empty, axis=-1).numpy(), np.zeros(3))
    assert ops.sum(empty).numpy() == 0
    with pytest.raises(ValueError, match="no element"):
        ops.min(empty)


@pytest.mark.parametrize("elem", [Elem.I32, Elem.F32], ids=str)
def test_reductions_over_the_last_axis(client, elem):
    x = _data(elem, (7, 3001), seed=1)
    t = ruda.asarray(x, client)
    total = ops.sum(t, axis=-1).numpy()
    assert total.dtype == _wide(client, x.sum(axis=-1).dtype, elem)
    if elem.is_float:
        bound = _sum_bound(x, client.properties().plane_dim, whole=False)
        assert (np.abs(total - x.astype(np.float64).sum(axis=-1)) <= bound).all()
    else:
        np.testing.assert_array_equal(total, x.sum(axis=-1))
    np.testing.assert_array_equal(ops.min(t, axis=-1).numpy(), x.min(axis=-1))
    np.testing.assert_array_equal(ops.max(t, axis=-1).numpy(), x.max(axis=-1))
    with pytest.raises(LaunchConfigError, match="axis=0"):
        ops.sum(t, axis=0)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("elem", [Elem.I32, Elem.U32, Elem.I64, Elem.F64], ids=str)
def test_cumsum_matches_numpy(client, elem, exclusive):
    need(client, elem)
    for shape in [(1,), (1000,), (100_003,), (5, 3001), (2, 0)]:
        x = _data(elem, shape, seed=shape[-1])
        got = ops.cumsum(ruda.asarray(x, client), exclusive=exclusive).numpy()
        with np.errstate(over="ignore"):
            expected = np.cumsum(x, axis=-1)
            if exclusive:
                expected = expected - x
        assert got.dtype == _wide(client, expected.dtype, elem) and got.shape == expected.shape
        if elem.is_float:
            bound = _scan_bound(x, client.properties().plane_dim)
            assert (np.abs(got - expected) <= bound).all(), shape
        else:
            np.testing.assert_array_equal(got, expected.astype(got.dtype), str(shape))


def _scan_bound(x: np.ndarray, plane: int) -> np.ndarray:
    """The float running sum's documented bound, per element: ``(4 * (16 + 2 * fold) +
    ceil((k + 1) / 512)) * eps * sum(|x[..k]|)``."""
    tiles = -(-np.arange(1, x.shape[-1] + 1) // 512)
    steps = 4 * (16 + 2 * _fold(plane)) + tiles
    return steps * np.finfo(x.dtype).eps * np.cumsum(np.abs(x.astype(np.float64)), axis=-1)


def test_cumsum_of_all_elements_and_of_a_host_array(client):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(ops.cumsum(client, x, axis=None).numpy(), np.cumsum(x))


def _f16_bound(f32_bound: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """An f16 sum's documented bound: the f32 sum's, then one rounding to f16 (half a unit in
    the last place: ``2**-11`` of the magnitude, ``2**-25`` among subnormals)."""
    return f32_bound + 2.0**-11 * (np.abs(exact) + f32_bound) + 2.0**-25


#: The extremum each narrow type is checked with here, one of each for signed and unsigned,
#: one- and two-byte integers (each is a kernel of its own to build); bool's and f16's have
#: tests of their own below.
_EXTREMA = {Elem.I8: "min", Elem.U16: "min", Elem.U8: "max", Elem.I16: "max"}


@pytest.mark.parametrize("elem", NARROW, ids=str)
def test_narrow_sum_min_max_match_numpy(client, elem):
    """bool, 8- and 16-bit integers and f16 over all of a few elements and over the last axis
    of rows longer than a tile: sums in NumPy's type (f16 within the f32 bound plus one
    rounding), ``min`` or ``max`` exact in ``x``'s type."""
    need(client, elem)
    rows = _data(elem, (3, 16_400), seed=3)  # whole 16-byte lines, more than 16384 a tile
    for x, axis in ((rows[0, :203], None), (rows, -1)):
        t = ruda.asarray(x, client)
        total = ops.sum(t, axis=axis).numpy()
        assert total.dtype == _sum_dtype(client, x.sum().dtype), axis
        if elem.is_float:
            exact = x.astype(np.float64).sum(axis=axis)
            wide = _sum_bound(x.astype(np.float32), client.properties().plane_dim, axis is None)
            assert (np.abs(total - exact) <= _f16_bound(wide, exact)).all(), axis
        else:
            np.testing.assert_array_equal(total, x.sum(axis=axis), str(axis))
        if elem in _EXTREMA:
            op = _EXTREMA[elem]
            got = getattr(ops, op)(t, axis=axis).numpy()
            assert got.dtype == x.dtype
            np.testing.assert_array_equal(got, getattr(x, op)(axis=axis), f"{op} {axis}")


@pytest.mark.parametrize("elem", NARROW, ids=str)
def test_narrow_cumsum_matches_numpy(client, elem):
    """Running sums over rows of several tiles of bool, 8- and 16-bit integers (exact, in
    NumPy's type) and f16 (within the f32 bound plus one rounding per element)."""
    need(client, elem)
    x = _data(elem, (3, 3001), seed=4)
    got = ops.cumsum(ruda.asarray(x, client)).numpy()
    assert got.dtype == _sum_dtype(client, np.cumsum(x).dtype)
    if elem.is_float:
        exact = np.cumsum(x.astype(np.float64), axis=-1)
        wide = _scan_bound(x.astype(np.float32), client.properties().plane_dim)
        assert (np.abs(got - exact) <= _f16_bound(wide, exact)).all()
    else:
        np.testing.assert_array_equal(got, np.cumsum(x, axis=-1))


def test_bool_masks_count_and_narrow_sums_pass_their_type(client):
    """A bool mask's sum counts its true elements and its ``min``/``max`` are all and any;
    int8 127s and -128s (over several tiles) and uint8 255s sum and run past their type, in
    64 bits, inclusive and exclusive; narrow inputs with nothing to reduce give NumPy's zeros
    and errors."""
    mask = np.arange(5003) % 7 > 2
    assert ops.sum(client, mask).numpy() == np.count_nonzero(mask)
    for x in (mask, np.ones(5003, bool), np.zeros(5003, bool)):
        t = ruda.asarray(x, client)
        assert ops.min(t).numpy() == x.all() and ops.max(t).numpy() == x.any()
    for value, dtype, n, exclusive in (
        (127, np.int8, 20_000, False),
        (-128, np.int8, 20_000, False),
        (255, np.uint8, 1000, True),
    ):
        x = np.full(n, value, dtype)
        t = ruda.asarray(x, client)
        total = ops.sum(t).numpy()
        assert total.dtype == _sum_dtype(client, x.sum().dtype) and total == n * value
        expected = np.cumsum(x) - (x if exclusive else 0)
        np.testing.assert_array_equal(ops.cumsum(t, exclusive=exclusive).numpy(), expected)
    for dtype in (np.bool_, np.int8, np.float16):
        empty = ruda.asarray(np.zeros((3, 0), dtype), client)
        np.testing.assert_array_equal(ops.sum(empty, axis=-1).numpy(), np.zeros(3))
        assert ops.sum(empty).numpy() == 0
        assert ops.cumsum(empty).numpy().shape == (3, 0)
        with pytest.raises(ValueError, match="no element"):
            ops.max(empty)


def test_f16_min_max_propagate_nan_and_infinities(client):
    """f16 ``min``/``max`` over all elements (several tiles, partials in f32; and a few) and
    over rows: a NaN gives NaN, infinities are ordered."""
    need(client, Elem.F16)
    x = (np.arange(3 * 8000) % 1000 - 500).astype(np.float16).reshape(3, 8000)
    x[0, 5], x[1, 7500], x[2, 7] = -np.inf, np.nan, np.inf
    t = ruda.asarray(x, client)
    got = ops.min(t).numpy()
    assert got.dtype == np.float16 and np.isnan(got)
    assert np.isnan(ops.max(ruda.asarray(x[1, 7000:], client)).numpy())
    for op in ("min", "max"):
        rows = getattr(ops, op)(t, axis=-1).numpy()
        np.testing.assert_array_equal(rows, getattr(x, op)(axis=-1), op)


@pytest.mark.parametrize("elem", ELEMS, ids=str)
def test_sort_and_argsort_match_numpys_stable_sort(client, elem):
    need(client, elem)
    for n in (1, 3, 5003):
        x = _data(elem, n, seed=n)
        if not elem.is_float:
            x = x % 97  # many equal keys: their order shows the sort's stability
        t = ruda.asarray(x, client)
        got = ops.sort(t).numpy()
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, np.sort(x, kind="stable"), str(n))
        if elem in (Elem.I32, Elem.F64):  # argsort shares the passes; two types suffice
            indices = ops.argsort(t).numpy()
            assert indices.dtype == _wide(client, np.dtype(np.int64), Elem.U32)
            np.testing.assert_array_equal(indices, np.argsort(x, kind="stable"), str(n))


@pytest.mark.parametrize("elem", [Elem.F32, Elem.F64], ids=str)
def test_sort_orders_nan_infinities_and_signed_zeros_as_numpy(client, elem):
    need(client, elem)
    specials = [np.nan, -0.0, np.inf, 0.0, -np.inf, -np.nan, -0.0, 1.0, 0.0, -1.0, np.nan]
    x = np.array(specials * 37 + [2.5, -0.0], dtype=elem.numpy)
    t = ruda.asarray(x, client)
    expected = np.sort(x, kind="stable")
    got = ops.sort(t).numpy()
    # bit for bit: -0.0 and 0.0 keep their input order, each NaN keeps its sign
    np.testing.assert_array_equal(got.view(f"u{x.itemsize}"), expected.view(f"u{x.itemsize}"))
    np.testing.assert_array_equal(ops.argsort(t).numpy(), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("elem", [Elem.BOOL, Elem.I8, Elem.I16, Elem.F16], ids=str)
def test_narrow_sort_and_argsort_match_numpys_stable_sort(client, elem):
    """bool and i8 (one pass over keys of 8 bits), i16 and f16 (two passes over keys of 16
    bits): NumPy's stable order and indices (few distinct keys: their order shows the sort's
    stability), f16's NaN, infinities and signed zeros with their bits, all elements of a 2-D
    tensor."""
    need(client, elem)
    x = _data(elem, 5005, seed=7)
    if elem is Elem.F16:
        x[::50] = np.array([np.nan, -0.0, np.inf, 0.0, -np.inf, -np.nan, -0.0], np.float16)[
            np.arange(101) % 7
        ]
    t = ruda.asarray(x.reshape(5, 1001), client)
    got = ops.sort(t, axis=None).numpy()
    expected = np.sort(x, kind="stable")
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    indices = ops.argsort(t, axis=None).numpy()
    assert indices.dtype == _wide(client, np.dtype(np.int64), Elem.U32)
    np.testing.assert_array_equal(indices, np.argsort(x, kind="stable"))


def test_sort_of_equal_keys_and_of_nothing(client):
    x = np.full(5003, 7, np.int32)
    np.testing.assert_array_equal(ops.argsort(ruda.asarray(x, client)).numpy(), np.arange(5003))
    empty = ruda.asarray(np.zeros(0, np.float32), client)
    assert ops.sort(empty).numpy().shape == (0,)
    assert ops.argsort(empty).numpy().shape == (0,)
    with pytest.raises(LaunchConfigError, match="1-D"):
        ops.sort(ruda.asarray(np.zeros((2, 2), np.float32), client))
    grid = np.array([[3, 1], [2, 0]], np.uint32)
    np.testing.assert_array_equal(ops.sort(client, grid, axis=None).numpy(), [0, 1, 2, 3])


@pytest.mark.parametrize("elem", [Elem.BOOL, Elem.U8, Elem.I32, Elem.I64], ids=str)
def test_bincount_matches_numpy(client, elem):
    """Counts of bool, a narrow type and the wider ones, with bins in shared memory and more
    than fit (up to each type's greatest value: a bool is 0 or 1)."""
    need(client, elem)
    rng = np.random.default_rng(5)
    most = 1 if elem is Elem.BOOL else int(np.iinfo(elem.numpy).max)
    for n, top, minlength in [(1, 4, 0), (1001, 10, 30), (100_003, 300, 0), (5003, 70_000, 0)]:
        x = rng.integers(0, min(top, most + 1), n).astype(elem.numpy)
        got = ops.bincount(ruda.asarray(x, client), minlength=minlength).numpy()
        expected = np.bincount(x, minlength=minlength)
        assert got.dtype == _wide(client, expected.dtype, Elem.U32)
        np.testing.assert_array_equal(got, expected, str((n, top)))


def test_bincount_refuses_what_numpy_refuses(client):
    with pytest.raises(ValueError, match="negative value -2"):
        ops.bincount(client, np.array([4, -2, 0], np.int32))
    with pytest.raises(ValueError, match="minlength"):
        ops.bincount(client, np.array([1], np.int32), minlength=-1)
    with pytest.raises(LaunchConfigError, match="f32"):
        ops.bincount(client, np.array([1.0], np.float32))
    empty = ops.bincount(client, np.zeros(0, np.int32), minlength=4).numpy()
    np.testing.assert_array_equal(empty, np.bincount(np.zeros(0, np.int32), minlength=4))
