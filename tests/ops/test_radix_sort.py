"""``ops.sort`` and ``ops.argsort`` through the portable radix sort on the local devices (the
NumPy device's own sort set aside), against NumPy's stable sort bit for bit: every element type,
lengths on both sides of a block's edge, floats with and without ``-0.0`` and NaN (the keys alone
give such a float's bits back only where neither occurs), keys whose digits are all alike, and
every tuning candidate, in passes and with chained blocks."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core import ops
from ruda_core.ir import Elem
from ruda_core.ops import native, sorting
from ruda_core.ops.sorting import _TUNER, SMALL, SORT_SHAPES, Sorting, _tunable_set, fitted_block
from ruda_core.ops.sorting_kernels import radix_scatter
from ruda_core.runtime import ComputeClient, Feature, UnsupportedFeature
from ruda_core.tensor import RudaTensor

DEVICES = ["cpu", "opencl:0", "webgpu:0", "cuda:0"]
DTYPES = [np.int32, np.uint32, np.float32, np.int64, np.uint64, np.float64]
#: Lengths around the blocks of the candidates (2048, 4096 and 8192 keys).
EDGES = [2, 255, 2047, 2048, 2049, 8193]


@pytest.fixture(params=DEVICES)
def radix(
    request: pytest.FixtureRequest, open_device: Callable[[str], ComputeClient]
) -> Iterator[ComputeClient]:
    """A client whose ``sort`` and ``argsort`` run the portable kernels."""
    client = open_device(request.param)
    runtime = client.runtime
    kept = {op: native.implementation(op, runtime) for op in ("sort", "argsort")}
    for op in kept:
        native.register(op, runtime, None)
    yield client
    for op, implementation in kept.items():
        native.register(op, runtime, implementation)


def _check(client: ComputeClient, x: np.ndarray) -> None:
    """``sort`` (bit for bit) and ``argsort`` of ``x`` on ``client`` are NumPy's."""
    t = ruda.asarray(x, client)
    got, expected = ops.sort(t).numpy(), np.sort(x, kind="stable")
    assert got.dtype == x.dtype
    bits = f"u{x.itemsize}"
    np.testing.assert_array_equal(got.view(bits), expected.view(bits), f"sort of {x.size}")
    indices = ops.argsort(t).numpy()
    np.testing.assert_array_equal(indices, np.argsort(x, kind="stable"), f"argsort of {x.size}")


def _need(client: ComputeClient, dtype: type) -> None:
    if not client.features().supports(Elem.from_dtype(np.dtype(dtype))):
        pytest.skip(f"{client.device} has no {np.dtype(dtype)}")


def _random(dtype: type, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is None:
        return (rng.standard_normal(n) * 1e3).astype(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_type_sorts_as_numpy_on_both_sides_of_a_block(radix, dtype):
    _need(radix, dtype)
    for n in EDGES:
        _check(radix, _random(dtype, n, seed=n))


@pytest.mark.parametrize("split", [False, True], ids=["one-launch", "two-launches"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_floats_keep_their_bits_with_and_without_signed_zeros_and_nan(
    radix, dtype, split, monkeypatch
):
    """Large float sorts launch a scatter that moves values beside one that does not, each
    running only where the input says it must; here from 0 keys (``split``) or never."""
    _need(radix, dtype)
    monkeypatch.setattr(sorting, "SPLIT_VALUES", 0 if split else 1 << 40)
    plain = _random(dtype, 5003, seed=1)
    plain[::13] = 0.0  # positive zeros alone: the keys give them back
    _check(radix, plain)
    for special in (-0.0, np.nan, -np.nan):
        for at in (0, 2048, 5002):  # one special, in the first block, on an edge, last
            x = plain.copy()
            x[at] = special
            _check(radix, x)
    _check(radix, np.full(3000, -0.0, dtype))
    _check(radix, np.array([np.inf, -np.inf, np.nan, 0.0, -0.0] * 600, dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64], ids=lambda d: np.dtype(d).name)
def test_keys_whose_digits_are_all_alike(radix, dtype):
    _need(radix, dtype)
    rng = np.random.default_rng(2)
    _check(radix, rng.integers(0, 1000, 9000).astype(dtype))  # the high digits alike
    _check(radix, (rng.integers(0, 7, 9000) << 16).astype(dtype))  # the low digits alike
    _check(radix, np.full(9000, 123456, dtype))  # every digit alike
    if np.dtype(dtype).kind == "i":
        _check(radix, rng.integers(-5, 5, 9000).astype(dtype))  # sign bits alike within halves


def test_a_sort_above_the_small_size_is_tuned_once_per_size_class(open_device):
    """Small sorts run the first candidate that runs, untuned; larger ones are tuned (or find a
    stored result) once per device, element type and size class, and each call runs the winner.
    On the NumPy device with its own sort set aside: which sizes are tuned does not depend on
    the device, and every candidate is checked on every device above."""
    radix = open_device("cpu")
    runtime = radix.runtime
    kept = native.implementation("sort", runtime)
    native.register("sort", runtime, None)
    try:
        _sort_sizes_and_tunings(radix)
    finally:
        native.register("sort", runtime, kept)


def _sort_sizes_and_tunings(radix: ComputeClient) -> None:
    def tunings() -> int:
        return _TUNER.stats.benchmarked + _TUNER.stats.cache_hits

    x = _random(np.float32, SMALL + 1000, seed=7)
    before = tunings()
    for n in (SMALL + 3, SMALL + 1000, SMALL):
        got = ops.sort(ruda.asarray(x[:n], radix)).numpy()
        np.testing.assert_array_equal(got, np.sort(x[:n], kind="stable"), f"sort of {n}")
        assert tunings() == before + 1  # the first call tuned; the same class and small not


def _alike(n: int) -> list[np.ndarray]:
    """Keys of which some digits are the same for all: the high ones, the low ones, every one,
    all but one; floats moved by one pass, and by three with a ``-0.0`` among them."""
    rng = np.random.default_rng(6)
    one = np.array([1.0, np.nextafter(np.float32(1.0), np.float32(2.0))], np.float32)
    return [
        rng.integers(0, 1000, n).astype(np.int32),
        (rng.integers(0, 7, n) << 16).astype(np.uint32),
        np.full(n, 123456, np.uint32),
        (rng.integers(0, 256, n) << 8).astype(np.uint32),
        one[rng.integers(0, 2, n)],
        np.append(one[rng.integers(0, 2, n)], np.float32(-0.0)),
    ]


@pytest.mark.slow  # builds a candidate: up to 10 s a device on the 2-core box
@pytest.mark.parametrize("name", _tunable_set().names)  # one item each: spread over workers
def test_every_candidate_sorts_as_numpy(radix, name):
    """In passes everywhere; chained where a kernel may wait on another cube, else refused.
    The first candidate of each way (in passes, chained) sorts every case (8- and 16-bit
    elements among them) but the keys with digits alike, which only the chained one sorts (only
    chained passes skip a digit every key shares); the others, which differ from it only in
    their cube and block sizes, an argsort of floats with NaNs (each key moves with its index,
    the most a block holds)."""
    x = _random(np.float32, 70_001, seed=3)
    x[::101] = np.nan
    u = _random(np.uint32, 70_001, seed=4)
    shapes = [(x, True)]
    # 8- and 16-bit elements: one pass and two (f16 with NaN and -0.0: its values move)
    half = x.astype(np.float16)
    half[::7] = -0.0
    narrow = [(u.astype(np.int8), True), (u.astype(np.int16), False), (half, False)]
    cases = [*shapes, (x, False), (x[x == x], False), (u, False), *narrow]
    if radix.features().supports(Elem.I64):  # eight passes
        wide = _random(np.int64, 9001, seed=5)
        cases += [(wide, False), (wide, True)]
    alike = [(data, indices) for data in _alike(9001) for indices in (False, True)]
    firsts = {"radix-256x8": cases, "radix-256x8-chained": cases + alike}
    index = Elem.I64 if radix.features().supports(Elem.I64) else Elem.U32
    waits = radix.features().has(Feature.UNBOUNDED_LOOPS)
    assert set(firsts) <= set(_tunable_set().names)
    tunable = next(t for t in _tunable_set().tunables if t.name == name)
    for data, indices in firsts.get(name, shapes):
        if indices:
            expected = np.argsort(data, kind="stable").astype(index.numpy)
        else:
            expected = np.sort(data, kind="stable")
        out = RudaTensor.empty(radix, (data.size,), expected.dtype)
        problem = Sorting(data.size, indices, index)
        if name.endswith("chained") and not waits:
            with pytest.raises(UnsupportedFeature, match="UNBOUNDED_LOOPS"):
                tunable.fn(radix, problem, ruda.asarray(data, radix), out)
            continue
        tunable.fn(radix, problem, ruda.asarray(data, radix), out)
        got = out.numpy().view(np.uint8)
        np.testing.assert_array_equal(got, expected.view(np.uint8), name)


@pytest.mark.parametrize("plane, fits", [(1, 24 << 10), (1, 48 << 10), (32, 32 << 10)])
def test_every_candidates_block_fits_the_shared_memory_it_is_sized_for(plane, fits):
    """A candidate's block, sized for a device (NVIDIA's OpenCL: planes of one lane, 48 KiB;
    a WebGPU adapter: 32 KiB; where the cube folds' scratch counts most, 24 KiB), fits its
    shared memory: a refusal at launch would leave the tuner a candidate short. Argsorts of
    f32 and i64, the most bytes staged per key."""
    for wanted, items, chained in SORT_SHAPES:
        for elem, key, per_key in ((Elem.F32, Elem.U32, 8), (Elem.I64, Elem.U64, 12)):
            units, fitted = fitted_block(wanted, items, per_key, plane, fits)
            definition = radix_scatter.definition(
                Numeric=elem, Key=key, Index=Elem.I64, UNITS=units, ITEMS=fitted,
                PLANES=-(-units // plane), BALLOT=plane > 1, VALUES="all", RESULT=True, SIGN=1,
                KIND="float" if elem.is_float else "int", CUBE=plane > 1, PASSES=elem.nbytes,
                LOOKBACK=chained,
            )  # fmt: skip
            assert definition.shared_bytes <= fits, (wanted, items, chained, elem, units, fitted)
