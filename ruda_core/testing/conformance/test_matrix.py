"""Cooperative matrices (``cmma``): fill, loads from global and shared memory in both layouts
with strides, products, accumulation over several products, casts and stores, compared with the
reference device (or, for bf16, which NumPy lacks, with the executable definition
:func:`ruda_core.ir.multiply_accumulate`). The reference device must match that definition bit for
bit; other devices within the accumulator type's rounding over the product's terms, since tensor
cores sum in an unspecified order and width. A configuration the device lacks is skipped as
unsupported; using it anyway must raise ``UnsupportedFeature``."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import (
    BF16_CONFIGS,
    F16_CONFIGS,
    TF32_CONFIGS,
    Elem,
    MatrixConfig,
    MatrixElem,
    MatrixLayout,
    multiply_accumulate,
    round_tf32,
)
from ruda_core.lang import ArrayArg, f16, f32
from ruda_core.runtime import ComputeClient, RudaCount, RudaDim, UnsupportedFeature
from ruda_core.testing.markers import UNSUPPORTED
from ruda_core.testing.matrix_kernels import cmma_chain, cmma_fill_store, cmma_shared, cmma_tile
from ruda_core.testing.runner import read_array

ROW, COL = MatrixLayout.ROW_MAJOR, MatrixLayout.COL_MAJOR
CONFIGS = sorted(F16_CONFIGS | BF16_CONFIGS | TF32_CONFIGS, key=str)
#: (a, b, c, out) layouts: all alike, and mixed.
LAYOUTS = [(ROW, ROW, ROW, ROW), (COL, COL, COL, COL), (ROW, COL, ROW, COL), (COL, ROW, COL, ROW)]
_EPS = {MatrixElem.F16: 2.0**-10, MatrixElem.F32: 2.0**-23}
_SENTINEL = -7.0  # what memory outside the tiles holds; a load that reads it shows in the result


def need_matrix(client: ComputeClient, config: MatrixConfig) -> None:
    if not client.features().supports_matrix(config):
        pytest.skip(f"{UNSUPPORTED} {client.device} ({client.name()}) has no cmma {config}")


def _dtype(elem: MatrixElem) -> np.dtype:
    return elem.memory.numpy


def _host(values: np.ndarray, elem: MatrixElem) -> np.ndarray:
    """``values`` as a fragment of ``elem`` holds them (tf32 rounds)."""
    return round_tf32(values) if elem is MatrixElem.TF32 else values


def _launch(client: ComputeClient, kern, arrays, dim: int, **spec) -> list[np.ndarray]:
    args = [
        ArrayArg(client.create_from_slice(a), a.size, elem=Elem.from_dtype(a.dtype)) for a in arrays
    ]
    kern.launch(client, RudaCount(1), RudaDim(dim), *args, **spec)
    return [read_array(client, arg.handle, a.dtype) for arg, a in zip(args, arrays, strict=True)]


def _check(exact: bool, got, want, config: MatrixConfig, terms: np.ndarray) -> None:
    """``got`` equals ``want`` where ``exact`` (the reference device), else within the
    accumulator's rounding of each of the ``k`` sums over the terms' magnitudes ``terms``."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if exact:
        np.testing.assert_array_equal(got, want)
        return
    bound = (config.k + 2) * _EPS[config.c] * terms + 1e-30
    bad = ~(np.abs(got - want) <= bound)
    assert not bad.any(), f"{bad.sum()} elements off; first {got[bad][:4]} vs {want[bad][:4]}"


class _Tile:
    """One dense-with-padding tile of each plane: ``outer`` rows (or columns) ``stride`` apart
    from ``offset``, in an array of ``part`` elements per plane filled with the sentinel."""

    def __init__(self, rows: int, cols: int, layout: MatrixLayout, dtype: np.dtype, planes: int):
        self.rows, self.cols, self.layout, self.planes = rows, cols, layout, planes
        outer, inner = (rows, cols) if layout is ROW else (cols, rows)
        per32 = 32 // dtype.itemsize  # CUDA needs tiles at 32 bytes and strides of 16
        self.offset = per32
        self.stride = inner + per32 // 2
        self.part = -(-(self.offset + outer * self.stride) // per32) * per32
        self.dtype = dtype

    def pack(self, tiles: np.ndarray) -> np.ndarray:
        mem = np.full((self.planes, self.part), _SENTINEL, dtype=self.dtype)
        for p, tile in enumerate(tiles):
            self.place(mem[p], tile)
        return mem.ravel()

    def place(self, row: np.ndarray, tile: np.ndarray) -> None:
        t = tile if self.layout is ROW else tile.T
        for o in range(t.shape[0]):
            row[self.offset + o * self.stride : self.offset + o * self.stride + t.shape[1]] = t[o]

    def unpack(self, mem: np.ndarray) -> np.ndarray:
        mem = mem.reshape(self.planes, self.part)
        outer, inner = (self.rows, self.cols) if self.layout is ROW else (self.cols, self.rows)
        at = self.offset + np.arange(outer)[:, None] * self.stride + np.arange(inner)[None, :]
        tiles = mem[:, at]
        return tiles if self.layout is ROW else tiles.transpose(0, 2, 1)


def _random(rng: np.random.Generator, shape, elem: MatrixElem) -> np.ndarray:
    return rng.uniform(-2, 2, size=shape).astype(_dtype(elem))


@pytest.mark.parametrize("layouts", LAYOUTS, ids=lambda ls: "".join(str(x)[0] for x in ls))
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_tile_product_with_strides_in_global_memory(client, reference, config, layouts):
    need_matrix(client, config)
    m, n, k, planes = config.m, config.n, config.k, 2
    rng = np.random.default_rng(7)
    a = _random(rng, (planes, m, k), config.a)
    b = _random(rng, (planes, k, n), config.b)
    c = _random(rng, (planes, m, n), config.c)
    ta, tb, tc, to = (
        _Tile(r, q, lay, _dtype(e), planes)
        for (r, q), lay, e in zip(
            [(m, k), (k, n), (m, n), (m, n)],
            layouts,
            [config.a, config.b, config.c, config.c],
            strict=True,
        )
    )
    at = np.array([v for t in (ta, tb, tc, to) for v in (t.offset, t.stride)], dtype=np.uint32)
    arrays = [ta.pack(a), tb.pack(b), tc.pack(c), to.pack(np.zeros_like(c)), at]
    tf32 = config.a is MatrixElem.TF32
    spec = dict(M=m, N=n, K=k, TF32=tf32, LA=layouts[0], LB=layouts[1], LC=layouts[2])
    dim = planes * client.properties().plane_dim
    out = _launch(client, cmma_tile, arrays, dim, LOUT=layouts[3], **spec)[3]
    got = to.unpack(out)
    ha, hb = _host(a, config.a), _host(b, config.b)
    want = multiply_accumulate(ha, hb, c, _dtype(config.c))
    _check(
        client is reference,
        got,
        want,
        config,
        np.abs(c) + np.abs(ha.astype(np.float64)) @ np.abs(hb),
    )
    outside = out.reshape(planes, to.part).copy()
    for p in range(planes):
        to.place(outside[p], np.full((m, n), _SENTINEL))
    assert (outside == _SENTINEL).all(), "a store wrote outside its tile"


@pytest.mark.parametrize("layouts", LAYOUTS[:3], ids=lambda ls: "".join(str(x)[0] for x in ls))
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_tile_product_through_shared_memory(client, reference, config, layouts):
    need_matrix(client, config)
    m, n, k, planes = config.m, config.n, config.k, 2
    rng = np.random.default_rng(11)
    a = _random(rng, (planes, m, k), config.a)
    b = _random(rng, (planes, k, n), config.b)
    la, lb, _, lo = layouts

    def dense(x: np.ndarray, layout: MatrixLayout) -> np.ndarray:
        return (x if layout is ROW else x.transpose(0, 2, 1)).ravel()

    def extents(rows: int, cols: int, layout: MatrixLayout) -> tuple[int, int]:
        return (rows, cols) if layout is ROW else (cols, rows)

    out = np.zeros(planes * m * n, _dtype(config.c))
    tf32 = config.a is MatrixElem.TF32
    spec = dict(M=m, N=n, K=k, LA=la, LB=lb, LOUT=lo, PAD=16, TF32=tf32)
    spec.update(A_TILE=extents(m, k, la), B_TILE=extents(k, n, lb), O_TILE=extents(m, n, lo))
    dim = planes * client.properties().plane_dim
    got = _launch(client, cmma_shared, [dense(a, la), dense(b, lb), out], dim, **spec)[2]
    o_outer, o_inner = extents(m, n, lo)
    got = got.reshape(planes, o_outer, o_inner)
    got = got if lo is ROW else got.transpose(0, 2, 1)
    zero = np.zeros((planes, m, n), _dtype(config.c))
    ha, hb = _host(a, config.a), _host(b, config.b)
    want = multiply_accumulate(ha, hb, zero, _dtype(config.c))
    _check(client is reference, got, want, config, np.abs(ha.astype(np.float64)) @ np.abs(hb))


@pytest.mark.parametrize("acc", [f16, f32], ids=str)
def test_products_accumulate_in_order_then_cast(client, reference, acc):
    accumulator = MatrixElem(acc.elem.value)
    config = MatrixConfig(MatrixElem.F16, MatrixElem.F16, accumulator, 16, 16, 16)
    need_matrix(client, config)
    steps = 4
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (16, steps * 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (steps * 16, 16)).astype(np.float16)
    out = np.zeros(256, np.float16)
    spec = dict(M=16, N=16, K=16, STEPS=steps, ACC=acc)
    got = _launch(client, cmma_chain, [a, b, out], client.properties().plane_dim, **spec)[2]
    want = np.zeros((16, 16), acc.elem.numpy)
    for s in range(steps):
        part = slice(16 * s, 16 * (s + 1))
        want = multiply_accumulate(a[:, part], b[part], want, acc.elem.numpy)
    want = want.astype(np.float16)
    terms = np.abs(a.astype(np.float64)) @ np.abs(b)
    wide = MatrixConfig(config.a, config.b, config.c, 16, 16, 16 * steps)
    if client is reference:
        np.testing.assert_array_equal(got.reshape(16, 16), want)
    else:  # the cast rounds to f16 once more
        _check(False, got.reshape(16, 16), want, wide, terms + np.abs(want) * 2.0**13)


@pytest.mark.parametrize("config", [c for c in CONFIGS if c.a is MatrixElem.F16], ids=str)
def test_fill_sets_every_element(client, config):
    need_matrix(client, config)
    m, n = config.m, config.n
    dtype = _dtype(config.c)
    out = np.full(m * (n + 8), _SENTINEL, dtype)
    spec = dict(M=m, N=n, K=config.k)
    args = [ArrayArg(client.create_from_slice(out), out.size, elem=Elem.from_dtype(dtype))]
    cmma_fill_store.launch(
        client, RudaCount(1), RudaDim(client.properties().plane_dim), *args, dtype.type(1.5), **spec
    )
    got = read_array(client, args[0].handle, dtype).reshape(m, n + 8)
    assert (got[:, :n] == 1.5).all()
    assert (got[:, n:] == _SENTINEL).all()


def test_tiles_out_of_bounds_load_zeros_and_drop_stores(client):
    config = MatrixConfig(MatrixElem.F16, MatrixElem.F16, MatrixElem.F32, 16, 16, 16)
    need_matrix(client, config)
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, 255).astype(np.float16)  # one element short of the tile
    b = rng.uniform(-1, 1, 256).astype(np.float16)
    c = rng.uniform(-1, 1, 256).astype(np.float32)
    short = np.full(255, _SENTINEL, np.float32)
    at = np.array([0, 16, 0, 16, 0, 16, 0, 16], np.uint32)
    spec = dict(M=16, N=16, K=16, TF32=False, LA=ROW, LB=ROW, LC=ROW, LOUT=ROW)
    dim = client.properties().plane_dim
    full = np.zeros(256, np.float32)
    got = _launch(client, cmma_tile, [a, b, c, full, at], dim, **spec)[3]
    np.testing.assert_array_equal(got, c)  # a read as zeros: out = c exactly
    got = _launch(client, cmma_tile, [b, b, c, short, at], dim, **spec)[3]
    assert (got == _SENTINEL).all(), "a store of a tile past the array's end was not dropped"


def test_an_unsupported_configuration_is_refused_at_compile_time(client):
    """8x8x8 is no WMMA shape: every device refuses it, naming the device, shape and types."""
    x = np.zeros(64, np.float16)
    spec = dict(M=8, N=8, K=8, TF32=False, LA=ROW, LB=ROW, LC=ROW, LOUT=ROW)
    at = np.array([0, 8, 0, 8, 0, 8, 0, 8], np.uint32)
    with pytest.raises(
        UnsupportedFeature, match=r"f16 x f16 -> f32 at 8x8x8.*" + str(client.device)
    ):
        _launch(
            client,
            cmma_tile,
            [x, x, np.zeros(64, np.float32), np.zeros(64, np.float32), at],
            client.properties().plane_dim,
            **spec,
        )
