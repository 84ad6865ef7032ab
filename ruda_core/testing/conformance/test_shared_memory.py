"""Shared memory and barriers: every cube has its own shared memory (a cube never sees another
cube's values), ``sync_units`` orders the units of a cube (tree reduction, tile transpose);
views of shared and global arrays at an offset (``a[lo:hi]``) read, write and clip; shared
arrays sized at launch by a ``u32`` argument hold what that size says (two or three of them, of
different element types, each apart from the others and aligned for its type), and one past the
device is refused before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.errors import TooManyResources
from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    ArrayArg,
    Comptime,
    LocalArray,
    Numeric,
    SharedMemory,
    atomic_add,
    f32,
    func,
    i32,
    kernel,
    sync_units,
    u8,
    u32,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.markers import need
from ruda_core.testing.runner import read_array


@kernel
def conformance_cube_ids(out: Array[u32], BLOCK: Comptime[int]):
    ids = SharedMemory(u32, BLOCK)
    ids[UNIT_POS] = RUDA_POS
    sync_units()
    first = ids[(UNIT_POS + u32(1)) % u32(BLOCK)]  # another unit's slot
    sync_units()
    ids[UNIT_POS] = RUDA_POS * u32(3) + u32(1)
    sync_units()
    second = ids[(UNIT_POS + u32(BLOCK // 2)) % u32(BLOCK)]
    out[ABSOLUTE_POS * u32(2)] = first
    out[ABSOLUTE_POS * u32(2) + u32(1)] = second


@kernel
def conformance_block_sum(x: Array[u32], out: Array[u32], BLOCK: Comptime[int]):
    smem = SharedMemory(u32, BLOCK)
    i = ABSOLUTE_POS
    smem[UNIT_POS] = x[i] if i < x.len() else u32(0)
    sync_units()
    s = BLOCK // 2
    while s > 0:
        if UNIT_POS < s:
            smem[UNIT_POS] += smem[UNIT_POS + s]
        sync_units()
        s //= 2
    if UNIT_POS == 0:
        out[RUDA_POS] = smem[0]


@kernel
def conformance_transpose(x: Array[u32], out: Array[u32], TILE: Comptime[int]):
    tile = SharedMemory(u32, TILE * TILE)
    wide = SharedMemory(f32, TILE)
    tile[UNIT_POS_Y * u32(TILE) + UNIT_POS_X] = x[RUDA_POS * u32(TILE * TILE) + UNIT_POS]
    if UNIT_POS_Y == u32(0):
        wide[UNIT_POS_X] = f32(UNIT_POS_X) + f32(0.5)
    sync_units()
    value = tile[UNIT_POS_X * u32(TILE) + UNIT_POS_Y] + u32(wide[UNIT_POS_Y] * f32(2))
    out[RUDA_POS * u32(TILE * TILE) + UNIT_POS] = value


def test_each_cube_has_its_own_shared_memory(client):
    block = min(64, client.properties().max_units_per_ruda)
    cubes = 512
    out = client.empty(4 * 2 * block * cubes)
    conformance_cube_ids.launch(
        client, RudaCount(cubes), RudaDim(block), ArrayArg(out, 2 * block * cubes), BLOCK=block
    )
    got = read_array(client, out, np.uint32).reshape(cubes, block, 2)
    cube = np.arange(cubes)[:, None]
    wrong = np.nonzero((got[:, :, 0] != cube) | (got[:, :, 1] != cube * 3 + 1))[0]
    assert not len(wrong), (
        f"{len(set(wrong))} cubes saw another cube's shared memory, e.g. cube {wrong[0]} read "
        f"{got[wrong[0], :4].tolist()}"
    )


def test_tree_reduction_with_barriers(client):
    block = 1 << (min(256, client.properties().max_units_per_ruda).bit_length() - 1)
    n = 100_003
    cubes = -(-n // block)
    x = np.random.default_rng(4).integers(0, 1000, n, dtype=np.uint32)
    xh = client.create_from_slice(x)
    out = client.empty(4 * cubes)
    conformance_block_sum.launch(
        client,
        RudaCount(cubes),
        RudaDim(block),
        ArrayArg(xh, n),
        ArrayArg(out, cubes),
        BLOCK=block,
    )
    padded = np.zeros(cubes * block, dtype=np.uint64)
    padded[:n] = x
    np.testing.assert_array_equal(
        read_array(client, out, np.uint32), padded.reshape(cubes, block).sum(axis=1)
    )


def test_two_dimensional_tile_transpose(client):
    tile = 8
    cubes = 16
    x = np.arange(cubes * tile * tile, dtype=np.uint32)
    xh = client.create_from_slice(x)
    out = client.empty(x.nbytes)
    conformance_transpose.launch(
        client,
        RudaCount(cubes),
        RudaDim(tile, tile),
        ArrayArg(xh, x.size),
        ArrayArg(out, x.size),
        TILE=tile,
    )
    got = read_array(client, out, np.uint32).reshape(cubes, tile, tile)
    expected = x.reshape(cubes, tile, tile).transpose(0, 2, 1) + (np.arange(tile) * 2 + 1)[:, None]
    np.testing.assert_array_equal(got, expected)


@kernel
def conformance_shaped_tiles(x: Array[f32], out: Array[f32]):
    tile = SharedMemory(f32, (8, 9))  # a padded row, as transposes use
    acc = LocalArray(u32, (2, 3))
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    tile[ty, tx] = x[ty * u32(8) + tx]
    acc[1, 2] = u32(5)
    acc[1, 2] += u32(1)
    sync_units()
    outside = tile[ty, u32(9)] + tile[i32(-1), tx]  # an index outside its axis reads 0
    out[ty * u32(8) + tx] = tile[tx, ty] + f32(acc[1, 2]) + outside


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_shaped_shared_and_local_arrays_index_row_major_and_check_each_axis(client):
    x = np.arange(64, dtype=np.float32)
    xh, out = client.create_from_slice(x), client.empty(x.nbytes)
    conformance_shaped_tiles.launch(
        client, RudaCount(1), RudaDim(8, 8), ArrayArg(xh, 64), ArrayArg(out, 64)
    )
    got = read_array(client, out, np.float32).reshape(8, 8)
    np.testing.assert_array_equal(got, x.reshape(8, 8).T + 6)


@func
def conformance_view_sum(v: Array[f32]) -> f32:
    acc = f32(0)
    for k in range(v.len()):
        acc += v[k]
    return acc


@kernel
def conformance_views(
    x: Array[f32], out: Array[f32], counts: Array[u32], lo: u32, hi: u32, BLOCK: Comptime[int]
):
    tile = SharedMemory(f32, BLOCK)
    u = UNIT_POS
    tile[u] = x[RUDA_POS * u32(BLOCK) + u]
    sync_units()
    upper = tile[BLOCK // 2 :]
    window = x[lo:hi]
    inner = window[1:]
    if u == u32(0):
        at = RUDA_POS * u32(6)
        out[at] = conformance_view_sum(upper)
        out[at + u32(1)] = conformance_view_sum(window)
        out[at + u32(2)] = f32(inner.len())
        out[at + u32(3)] = inner[u32(1000)]  # past the view: a checked read gives 0
        out[at + u32(4)] = upper[3]
        out[at + u32(5)] = f32(window.len())
    part = counts[RUDA_POS * u32(8) + u32(2) :]
    atomic_add(part[:4], u % u32(5), u32(1))  # lane 4 of each 5 is past the view: dropped


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_views_at_an_offset_read_write_and_clip_like_python(client):
    block, cubes = 64, 3
    x = np.arange(block * cubes, dtype=np.float32)
    xh = client.create_from_slice(x)
    for lo, hi in [(3, 10), (10, 3), (150, 400), (0, 192)]:
        out = client.empty(4 * 6 * cubes)
        counts = client.create_from_slice(np.zeros(8 * cubes, np.uint32))
        conformance_views.launch(
            client,
            RudaCount(cubes),
            RudaDim(block),
            ArrayArg(xh, x.size),
            ArrayArg(out, 6 * cubes),
            ArrayArg(counts, 8 * cubes),
            lo,
            hi,
            BLOCK=block,
        )
        got = read_array(client, out, np.float32).reshape(cubes, 6)
        window = x[lo:hi]
        for c in range(cubes):
            tile = x[c * block : (c + 1) * block]
            want = [tile[32:].sum(), window.sum(), len(window[1:]), 0, tile[32 + 3], len(window)]
            np.testing.assert_array_equal(got[c], np.array(want, np.float32))
        per_lane = np.bincount(np.arange(block) % 5, minlength=5)[:4]
        want_counts = np.zeros((cubes, 8), np.uint32)
        want_counts[:, 2:6] = per_lane
        np.testing.assert_array_equal(
            read_array(client, counts, np.uint32).reshape(cubes, 8), want_counts
        )


@kernel
def conformance_dynamic_shared(x: Array[f32], out: Array[f32], n: u32, m: u32):
    tile = SharedMemory(f32, n)  # sized at each launch
    flags = SharedMemory(u32, m)
    fixed = SharedMemory(f32, 2)
    u = UNIT_POS
    base = RUDA_POS * n
    tile[u] = x[base + u]  # units past n: a checked write is dropped
    flags[u % m] = u32(1)
    if u == u32(0):
        fixed[0] = f32(tile.len())
    sync_units()
    if u < n:
        mirrored = tile[n - u32(1) - u]
        out[base + u] = mirrored + f32(flags[u % m]) + fixed[0] + tile[n + u]  # past n: 0


@pytest.mark.usefixtures("unsanitized")  # out of bounds on purpose
def test_shared_memory_sized_at_launch(client):
    cubes, units = 3, 128
    for n, m in [(1, 1), (37, 5), (128, 64)]:
        x = np.arange(cubes * n, dtype=np.float32)
        out = client.empty(4 * x.size)
        conformance_dynamic_shared.launch(
            client,
            RudaCount(cubes),
            RudaDim(units),
            ArrayArg(client.create_from_slice(x), x.size),
            ArrayArg(out, x.size),
            n,
            m,
        )
        want = x.reshape(cubes, n)[:, ::-1] + 1 + n
        got = read_array(client, out, np.float32).reshape(cubes, n)
        np.testing.assert_array_equal(got, want)


def test_shared_memory_sized_past_the_device_is_refused_before_anything_runs(client):
    limit = client.properties().max_shared_memory_nbytes
    out = client.empty(4)
    with pytest.raises(TooManyResources, match="with the sizes given at this launch"):
        conformance_dynamic_shared.launch(
            client, RudaCount(1), RudaDim(1), ArrayArg(out, 1), ArrayArg(out, 1), limit // 4, 1
        )


@kernel
def conformance_two_dynamic_shared(
    x: Array[f32], k: Array[i32], out_x: Array[f32], out_k: Array[i32], n: u32, m: u32
):
    floats = SharedMemory(f32, n)  # both sized at each launch
    ints = SharedMemory(i32, m)
    u = UNIT_POS
    if u < n:
        floats[u] = x[RUDA_POS * n + u]
    if u < m:
        ints[u] = k[RUDA_POS * m + u]
    sync_units()
    if u < n:
        out_x[RUDA_POS * n + u] = floats[n - u32(1) - u]
    if u < m:
        out_k[RUDA_POS * m + u] = ints[m - u32(1) - u]


def _cube_reversed(values: np.ndarray, cubes: int) -> np.ndarray:
    """``values`` with each cube's share in reverse order, as the kernels below write them."""
    return values.reshape(cubes, -1)[:, ::-1].reshape(-1)


def test_two_shared_arrays_sized_at_launch_are_apart(client):
    cubes, units = 3, 128
    for n, m in [(1, 1), (3, 5), (37, 128), (128, 2)]:
        x = np.arange(cubes * n, dtype=np.float32) + np.float32(0.5)
        k = -np.arange(cubes * m, dtype=np.int32) - 7
        out_x, out_k = client.empty(x.nbytes), client.empty(k.nbytes)
        conformance_two_dynamic_shared.launch(
            client,
            RudaCount(cubes),
            RudaDim(units),
            ArrayArg(client.create_from_slice(x), x.size),
            ArrayArg(client.create_from_slice(k), k.size),
            ArrayArg(out_x, x.size),
            ArrayArg(out_k, k.size),
            n,
            m,
        )
        np.testing.assert_array_equal(
            read_array(client, out_x, np.float32), _cube_reversed(x, cubes)
        )
        np.testing.assert_array_equal(read_array(client, out_k, np.int32), _cube_reversed(k, cubes))


@kernel
def conformance_three_dynamic_shared(
    b: Array[u8],
    x: Array[Numeric],
    k: Array[i32],
    out_b: Array[u8],
    out_x: Array[Numeric],
    out_k: Array[i32],
    nb: u32,
    nx: u32,
    nk: u32,
):
    small = SharedMemory(u8, nb)  # an odd byte count first: the others must stay aligned
    wide = SharedMemory(Numeric, nx)
    ints = SharedMemory(i32, nk)
    u = UNIT_POS
    if u < nb:
        small[u] = b[RUDA_POS * nb + u]
    if u < nx:
        wide[u] = x[RUDA_POS * nx + u]
    if u < nk:
        ints[u] = k[RUDA_POS * nk + u]
    sync_units()
    if u < nb:
        out_b[RUDA_POS * nb + u] = small[nb - u32(1) - u]
    if u < nx:
        out_x[RUDA_POS * nx + u] = wide[nx - u32(1) - u]
    if u < nk:
        out_k[RUDA_POS * nk + u] = ints[nk - u32(1) - u]


@pytest.mark.parametrize("elem", [Elem.F32, Elem.F64], ids=lambda e: e.value)
def test_three_shared_arrays_of_different_types_sized_at_launch_are_apart(client, elem):
    need(client, Elem.U8, elem)
    cubes, units = 2, 64
    for nb, nx, nk in [(1, 1, 1), (3, 5, 7), (61, 64, 9), (64, 2, 64)]:
        b = (np.arange(cubes * nb) * 7 + 1).astype(np.uint8)
        x = (np.arange(cubes * nx) - 2.25).astype(elem.numpy)
        k = np.arange(cubes * nk, dtype=np.int32) * -3 + 11
        arrays = {Elem.U8: b, elem: x, Elem.I32: k}
        outs = [client.empty(a.nbytes) for a in arrays.values()]
        conformance_three_dynamic_shared.launch(
            client,
            RudaCount(cubes),
            RudaDim(units),
            *(ArrayArg(client.create_from_slice(a), a.size, elem=e) for e, a in arrays.items()),
            *(ArrayArg(o, a.size, elem=e) for o, (e, a) in zip(outs, arrays.items(), strict=True)),
            nb,
            nx,
            nk,
        )
        for out, a in zip(outs, arrays.values(), strict=True):
            got = read_array(client, out, a.dtype)
            np.testing.assert_array_equal(got, _cube_reversed(a, cubes))
