"""``ruda_core.ops.matmul`` on the local devices: every candidate matches NumPy (f16 and bf16
take one FMA tile: see ``_tested``) on shapes that are not
multiples of any tile, the autotuner picks and remembers a winner, and bad operands are
refused before anything runs. The shapes take both the bounds-checked and the interior variant
of every kernel, with and without 16-byte lines. On a CUDA GPU (``cuda:0``) the same tests cover
the tensor-core candidates at bf16, f16 and tf32, and on the reference device and a GPU of
compute capability 9.0 the warpgroup-matrix (``wgmma``) ones at bf16 and f16, those whose
stages tensor copies fill refusing rows that are not whole 16-byte lines."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.autotune import Tunable
from ruda_core.ir import Elem, MatrixConfig, MatrixElem
from ruda_core.ops import matmul
from ruda_core.ops.matmul import _TUNER, _candidates
from ruda_core.runtime import Feature, LaunchConfigError, LayoutError, UnsupportedFeature
from ruda_core.tensor import RudaTensor

DEVICES = ["cpu", "opencl:0", "opencl:1", "cuda:0"]
#: (m, k, n): ragged ones (no multiple of any tile; rows too short or odd for lines; k % 8 but
#: not n % 8), then ones that are interior for every candidate's block tile but 256-wide ones.
SHAPES = [(1, 1, 1), (37, 45, 29), (64, 16, 96), (100, 40, 70), (128, 64, 128), (256, 32, 128)]
#: The shapes the 16-deep FMA tile skips. At (64, 16, 96) (ragged rows and columns, both read in
#: lines, one whole step along k) it runs the code of its 8-deep twin (same block, unit tile and
#: cubes), which is checked on it. The depth changes only the steps along k, which one shape of
#: each kind covers: partial steps unlined (k = 45; 1 is the same kind), read in lines (40), whole
#: ones interior (64; 32 is the same kind); the rows and columns are the twin's to cover.
TWIN_SHAPES = {"fma-128x128x16-8x8-c2": {(1, 1, 1), (64, 16, 96), (256, 32, 128)}}
#: |ruda - f64| <= TOL * sum |a||b|: f32 sums of exact products over k <= 100 terms.
TOL = {"float16": 2e-6 * 100, "bfloat16": 2e-6 * 100, "float32": 2e-6 * 100}


def _inputs(dtype, m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def _dtype(name: str) -> np.dtype:
    return Elem.BF16.numpy if name == "bfloat16" else np.dtype(name)


def _check(got: np.ndarray, a: np.ndarray, b: np.ndarray, tol: float) -> None:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = tol * np.abs(a64) @ np.abs(b64) + 1e-30
    assert got.dtype == np.float32 and got.shape == (a.shape[0], b.shape[1])
    assert (np.abs(got - a64 @ b64) <= bound).all()


def _tested(device: str, dtype: str, tunables: list[Tunable]) -> list[Tunable]:
    """The candidates checked on ``device`` at ``dtype``: all of them at f32. The FMA kernel's
    element type only changes how its fetched lines (of a width set by the shape, not the tile)
    convert to f32, so f16 and bf16 take one FMA tile (the last, the smallest) and every
    tensor-core candidate, whose fragments do depend on it: each FMA tile's code is built for
    the device at f32, each conversion at one tile."""
    if dtype == "float32":
        return tunables
    fma = [t for t in tunables if t.name.startswith("fma")]
    return [t for t in tunables if not t.name.startswith("fma")] + fma[-1:]


@pytest.mark.slow  # builds every candidate: 8-70 s a device on the 2-core box
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("device", DEVICES)
def test_every_candidate_matches_numpy(open_device, device, dtype):
    client = open_device(device)
    dt = _dtype(dtype)
    if not client.features().supports(Elem.from_dtype(dt)):
        pytest.skip(f"{device} has no {dtype}")
    tunables = _tested(device, dtype, _candidates(client, Elem.from_dtype(dt), False).tunables)
    for m, k, n in SHAPES:
        a, b = _inputs(dt, m, k, n)
        ta, tb = RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b)
        for tunable in tunables:
            if (m, k, n) in TWIN_SHAPES.get(tunable.name, ()):
                continue
            if tunable.name.startswith("wgmma-tma") and (k % 8 or n % 8):
                with pytest.raises(UnsupportedFeature, match="whole 16-byte lines"):
                    tunable.fn(client, ta, tb)  # tensor copies read whole lines
                continue
            _check(tunable.fn(client, ta, tb).to_numpy(client), a, b, TOL[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_tf32_is_used_only_when_allowed(open_device, device):
    client = open_device(device)
    names = [t.name for t in _candidates(client, Elem.F32, allow_tf32=False).tunables]
    assert all(name.startswith("fma") for name in names)
    allowed = _candidates(client, Elem.F32, allow_tf32=True)
    tf32 = MatrixConfig(MatrixElem.TF32, MatrixElem.TF32, MatrixElem.F32, 16, 16, 8)
    has_cmma = any(t.name.startswith("cmma") for t in allowed.tunables)
    assert has_cmma == client.features().supports_matrix(tf32)
    a, b = _inputs(np.float32, 48, 40, 24)
    got = matmul(
        client, RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b), allow_tf32=True
    ).to_numpy(client)
    _check(got, a, b, 2.0**-10 if has_cmma else TOL["float32"])


@pytest.mark.parametrize("device", DEVICES)
def test_warpgroup_candidates_only_for_half_types_where_the_device_has_them(open_device, device):
    client = open_device(device)
    has = client.features().has(Feature.WARPGROUP_MMA)
    for elem in (Elem.F16, Elem.BF16, Elem.F32):
        names = [t.name for t in _candidates(client, elem, False).tunables]
        assert any(n.startswith("wgmma") for n in names) == (has and elem is not Elem.F32)


@pytest.mark.parametrize("device", DEVICES)
def test_pipelined_candidates_wrap_their_rings_of_stages(open_device, device):
    client = open_device(device)
    if not client.features().supports(Elem.BF16):
        pytest.skip(f"{device} has no bfloat16")
    tunables = _candidates(client, Elem.BF16, False).tunables
    deep = [(t, int(s[1])) for t in tunables if (s := re.search(r"-s(\d+)", t.name))]
    if not deep:
        pytest.skip(f"{device} has no pipelined candidates")
    k = 64 * (2 * max(slots for _, slots in deep) + 1)  # stages of at most 64: rings wrap twice
    a, b = _inputs(Elem.BF16.numpy, 64, k, 64, seed=5)
    ta, tb = RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b)
    for tunable, _ in deep:
        _check(tunable.fn(client, ta, tb).to_numpy(client), a, b, 2e-6 * k)


def test_the_tuner_records_a_winner_and_reuses_it():
    client = ruda.client("cpu")
    a, b = _inputs(np.float16, 33, 20, 17, seed=3)
    ta, tb = RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b)
    _check(matmul(client, ta, tb).to_numpy(client), a, b, TOL["float16"])
    result = _TUNER.tune(client, _candidates(client, Elem.F16, False), ta, tb)
    assert result.winner in {t.name for t in _candidates(client, Elem.F16, False).tunables}
    benchmarked = _TUNER.stats.benchmarked
    _check(matmul(client, ta, tb).to_numpy(client), a, b, TOL["float16"])
    assert _TUNER.stats.benchmarked == benchmarked  # the same size class: no new measurement


@pytest.mark.parametrize("m, k, n", [(1, 4000, 1), (64, 128, 128), (3, 1000, 5)])
def test_a_product_of_a_small_size_class_runs_untuned(m, k, n):
    """Size classes of at most 2**20 multiply-adds run the smallest FMA block without tuning
    (a skinny product on the NumPy device spent over a minute tuning, then ran in a second)."""
    client = ruda.client("cpu")
    a, b = _inputs(np.float32, m, k, n, seed=m + k + n)
    ta, tb = RudaTensor.from_numpy(client, a), RudaTensor.from_numpy(client, b)
    benchmarked = _TUNER.stats.benchmarked
    _check(matmul(client, ta, tb).to_numpy(client), a, b, TOL["float32"])
    assert _TUNER.stats.benchmarked == benchmarked


def _view_past_a_line(client, x: np.ndarray, skip: int) -> RudaTensor:
    """``x`` on ``client`` as a view into a handle, ``skip`` elements past the handle's start."""
    padded = ruda.asarray(np.concatenate([np.zeros(skip, x.dtype), x.ravel()]), client)
    view = padded.handle.offset(skip * x.itemsize, (skip + x.size) * x.itemsize)
    return RudaTensor(view, x.shape, (x.shape[1], 1), padded.elem)


@pytest.mark.parametrize("device", ["cpu", "opencl:0", "webgpu:0"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_operands_that_do_not_start_on_a_line_are_multiplied(open_device, device, dtype):
    """Views into a handle that start 2 to 8 bytes past a 16-byte line, as ``a`` or as ``b``:
    every candidate, which reads rows in lines from the operand's start, was refused."""
    client = open_device(device)
    a, b = _inputs(np.dtype(dtype).type, 3, 8, 8, seed=5)
    for skip in (1, 2):
        ta, tb = _view_past_a_line(client, a, skip), ruda.asarray(b, client)
        _check(matmul(client, ta, tb).to_numpy(client), a, b, TOL[dtype])
        ta, tb = ruda.asarray(a, client), _view_past_a_line(client, b, skip)
        _check(matmul(client, ta, tb).to_numpy(client), a, b, TOL[dtype])


def test_an_empty_inner_extent_gives_zeros():
    client = ruda.client("cpu")
    a = RudaTensor.from_numpy(client, np.zeros((3, 0), np.float32))
    b = RudaTensor.from_numpy(client, np.zeros((0, 4), np.float32))
    np.testing.assert_array_equal(matmul(client, a, b).to_numpy(client), np.zeros((3, 4)))


def test_bad_operands_are_refused():
    client = ruda.client("cpu")
    f32 = RudaTensor.from_numpy(client, np.zeros((4, 4), np.float32))
    f16 = RudaTensor.from_numpy(client, np.zeros((4, 4), np.float16))
    with pytest.raises(LayoutError, match=r"a is \(4, 4\) and b is \(3, 4\)"):
        matmul(client, f32, RudaTensor.from_numpy(client, np.zeros((3, 4), np.float32)))
    with pytest.raises(LayoutError, match="expected"):
        matmul(client, RudaTensor.from_numpy(client, np.zeros(4, np.float32)), f32)
    with pytest.raises(LaunchConfigError, match="a is f32 and b is f16"):
        matmul(client, f32, f16)
    with pytest.raises(LaunchConfigError, match="expected both f16"):
        i32 = RudaTensor.from_numpy(client, np.zeros((4, 4), np.int32))
        matmul(client, i32, i32)
    with pytest.raises(TypeError):
        matmul(client, np.zeros((4, 4)), f32)


def test_bf16_on_a_device_without_it_is_unsupported():
    lacking = [
        c
        for c in (ruda.client(d) for d in ruda.enumerate_all_devices())
        if not c.features().supports(Elem.BF16)
    ]
    if not lacking:
        pytest.skip("every local device has bf16")
    bf = RudaTensor.from_numpy(lacking[0], np.zeros((4, 4), Elem.BF16.numpy))
    with pytest.raises(UnsupportedFeature, match="bf16"):
        matmul(lacking[0], bf, bf)
