"""Every candidate of ``ops.sum``/``min``/``max``, of ``ops.cumsum`` and of ``ops.bincount``
against NumPy on the local devices, each run directly: small problems run the first candidate
untuned and tuning runs the others only to time them, so this is where every one of them is
checked. Integers (exact) over every element, along the last axis, and in rows of one cube's
tile or many; floats through ``min`` and ``max`` and through sums of small integers (exact);
the line reads of a narrow type too; counts into bins that fit shared memory and bins that do
not."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.ir import Elem
from ruda_core.ops import reduce, scan
from ruda_core.ops.bincount import _TUNER as COUNT_TUNER
from ruda_core.ops.bincount import Counting
from ruda_core.ops.bincount import _tunable_set as count_candidates
from ruda_core.ops.primitive_inputs import UNTUNED, Cubes, sum_elem
from ruda_core.runtime import ComputeClient, TooManyResources, UnsupportedFeature
from ruda_core.tensor import RudaTensor

DEVICES = ["cpu", "opencl:0", "webgpu:0", "cuda:0"]
SHAPES = [(100_003,), (5, 3001), (3, 7)]


@pytest.fixture(params=DEVICES)
def device(
    request: pytest.FixtureRequest, open_device: Callable[[str], ComputeClient]
) -> ComputeClient:
    return open_device(request.param)


def _data(dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(sum(shape))
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def _ran(fn: Callable[[], None]) -> bool:
    """Run ``fn``; False when the device refuses the candidate before it runs (its plane
    operations lack the type, or its shared memory is over the device's), as the tuner then
    leaves it out."""
    try:
        fn()
    except (UnsupportedFeature, TooManyResources):
        return False
    return True


def _reduced_by_every_candidate(
    device: ComputeClient, kind: str, x: np.ndarray, t: RudaTensor
) -> set[str]:
    """Check every reduction candidate's ``kind`` of ``t`` (holding ``x``) over all elements and
    along the last axis against NumPy; the names of those that ran."""
    ran = set()
    elem = Elem.from_dtype(x.dtype)
    out_elem = sum_elem(device, elem) if kind == "sum" else elem
    for whole in (True, False):
        rows, n = (1, x.size) if whole else (x.size // x.shape[-1], x.shape[-1])
        expected = getattr(x, kind)(axis=None if whole else -1)
        out = RudaTensor.empty(device, np.shape(expected), out_elem.numpy)
        problem = reduce.Reduction(kind, rows, n, whole, out_elem)
        for tunable in reduce._tunable_set().tunables:
            if _ran(lambda: tunable.fn(device, problem, t, out)):  # noqa: B023
                ran.add(tunable.name)
                got = out.numpy()
                np.testing.assert_array_equal(
                    got, np.asarray(expected).astype(got.dtype), f"{tunable.name} {x.shape}"
                )
    return ran


@pytest.mark.parametrize("kind", ["sum", "min", "max"])
def test_every_reduction_candidate_matches_numpy(device, kind):
    ran = set()
    for dtype in (np.int32, np.float32):
        for shape in SHAPES:
            x = _data(dtype, shape)
            if kind == "sum" and dtype is np.float32:  # small integers: every order is exact
                x = np.round(x * 4).astype(np.float32)
            ran |= _reduced_by_every_candidate(device, kind, x, ruda.asarray(x, device))
    assert ran, f"no reduction candidate runs on {device.device}"


@pytest.mark.parametrize("dtype", [np.int32, np.int8], ids=["i32", "i8"])
def test_reduction_candidates_read_lines_only_where_the_operand_starts_on_one(device, dtype):
    """Rows of whole lines are read in lines (of 16 bytes, or of 8 elements of a narrower type);
    the same rows one element past a line's start (a view into a handle) are read element by
    element: both match NumPy."""
    x = _data(dtype, (4 * 1000 + 1,))
    whole = ruda.asarray(x, device)
    elem = Elem.from_dtype(x.dtype)
    shifted = RudaTensor(whole.handle.offset(elem.nbytes), (4, 1000), (1000, 1), elem)
    rows = x[1:].reshape(4, 1000)
    for t in (ruda.asarray(rows, device), shifted):
        assert any("lines" in name for name in _reduced_by_every_candidate(device, "max", rows, t))


@pytest.mark.parametrize(
    ("exclusive", "dtype"),
    [(False, np.int32), (True, np.int32), (False, np.float32)],
    ids=["i32", "i32-exclusive", "f32"],
)
def test_every_scan_candidate_matches_numpy(device, exclusive, dtype):
    """Integers, and floats holding small integers (exact sums), which a 32-bit scan through
    planes computes where integers are summed in 64 bits."""
    set_ = scan._tunable_set()
    ran = set()
    for shape in SHAPES:
        x = _data(dtype, shape)
        if dtype is np.float32:
            x = np.round(x * 4).astype(np.float32)  # sums of at most 2**24: exact
        out_elem = sum_elem(device, Elem.from_dtype(x.dtype))
        expected = np.cumsum(x, axis=-1) - (x if exclusive else 0)
        t = ruda.asarray(x, device)
        out = RudaTensor.empty(device, shape, out_elem.numpy)
        problem = scan.Scan(x.size // shape[-1], shape[-1], exclusive, out_elem)
        for tunable in set_.tunables:
            if _ran(lambda: tunable.fn(device, problem, t, out)):  # noqa: B023
                ran.add(tunable.name)
                got = out.numpy()
                np.testing.assert_array_equal(
                    got, expected.astype(got.dtype), f"{tunable.name} {shape}"
                )
    assert ran, f"no scan candidate runs on {device.device}"


@pytest.mark.parametrize("exclusive", [False, True])
def test_chained_scans_look_back_through_windows_of_flags(device, exclusive):
    """Chained scans in cubes of 8 units, so that a cube sums the tiles before its own a window
    of 8 flags at a time, over more tiles than cubes (taken by ticket), in one row and in rows,
    match NumPy."""
    cubes = Cubes.on(device, 8, 4, True)
    for shape in [(20_011,), (3, 4001)]:
        x = _data(np.int32, shape)
        out_elem = sum_elem(device, Elem.I32)
        t = ruda.asarray(x, device)
        out = RudaTensor.empty(device, shape, out_elem.numpy)
        problem = scan.Scan(x.size // shape[-1], shape[-1], exclusive, out_elem)
        if not _ran(lambda: scan.chained(device, t, out, problem, cubes)):  # noqa: B023
            pytest.skip(f"{device.device} runs no chained scan")
        expected = np.cumsum(x, axis=-1) - (x if exclusive else 0)
        got = out.numpy()
        np.testing.assert_array_equal(got, expected.astype(got.dtype), str(shape))


def test_chained_scans_back_to_back_on_inputs_taken_in_turn(device):
    """Chained scans queued back to back over three inputs taken in turn each match NumPy: no
    scan takes a flag or a value published by an earlier one. (A race between a flag and its
    value shows on some runs only: this test is a guard, not a proof.)"""
    cubes = Cubes.on(device, 32, 4, True)
    xs = [_data(np.int32, (50_003,)) + k for k in range(3)]
    out_elem = sum_elem(device, Elem.I32)
    problem = scan.Scan(1, xs[0].size, False, out_elem)
    ts = [ruda.asarray(x, device) for x in xs]
    outs = [RudaTensor.empty(device, xs[0].shape, out_elem.numpy) for _ in range(24)]
    for k, out in enumerate(outs):
        if not _ran(lambda: scan.chained(device, ts[k % 3], out, problem, cubes)):  # noqa: B023
            pytest.skip(f"{device.device} runs no chained scan")
    for k, out in enumerate(outs):
        got = out.numpy()
        np.testing.assert_array_equal(got, np.cumsum(xs[k % 3]).astype(got.dtype), str(k))


def test_every_bincount_candidate_matches_numpy(device):
    """Each candidate counts as NumPy into bins that fit shared memory (the conformance suite
    counts into more bins than fit, through the first candidate's global atomics)."""
    x = np.random.default_rng(3).integers(0, 300, 100_003).astype(np.int32)
    expected = np.bincount(x)
    t = ruda.asarray(x, device)
    out_elem = Elem.I64 if device.features().supports(Elem.I64) else Elem.U32
    out = RudaTensor.empty(device, expected.shape, out_elem.numpy)
    problem = Counting(x.size, expected.size, out_elem)
    ran = set()
    for tunable in count_candidates().tunables:
        if _ran(lambda: tunable.fn(device, problem, t, out)):  # noqa: B023
            ran.add(tunable.name)
            np.testing.assert_array_equal(out.numpy(), expected, tunable.name)
    assert ran, f"no bincount candidate runs on {device.device}"


def test_reductions_scans_and_counts_above_the_untuned_size_are_tuned_once_per_size_class():
    """At most ``UNTUNED`` elements run the first candidate that runs, measuring nothing;
    more are tuned once per device, element type and size class (on the NumPy device: the
    choice does not depend on the device)."""
    client = ruda.client("cpu")
    x = _data(np.int32, (UNTUNED + 1000,))
    for op, tuner, values, expected in (
        (ruda.ops.sum, reduce._TUNER, x, lambda v: v.sum()),
        (ruda.ops.cumsum, scan._TUNER, x, lambda v: np.cumsum(v)),
        (ruda.ops.bincount, COUNT_TUNER, np.abs(x), lambda v: np.bincount(v)),
    ):
        before = tuner.stats.benchmarked + tuner.stats.cache_hits
        for n in (UNTUNED, UNTUNED + 3, UNTUNED + 1000):
            got = op(ruda.asarray(values[:n], client)).numpy()
            np.testing.assert_array_equal(got, expected(values[:n]).astype(got.dtype), f"{n}")
        assert tuner.stats.benchmarked + tuner.stats.cache_hits == before + 1, op.__name__
