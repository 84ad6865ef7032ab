"""Atomics under contention, on global and shared memory: each applies exactly once and returns
the element's previous value (histograms, unique fetch-add tickets, compare-and-swap loops,
min/max/and/or/xor/sub/swap/store/load), 64-bit and float atomics where the device has them."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    Comptime,
    Int,
    Numeric,
    SharedMemory,
    atomic_add,
    atomic_and,
    atomic_compare_and_swap,
    atomic_load,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_store,
    atomic_sub,
    atomic_swap,
    atomic_xor,
    f32,
    kernel,
    sync_units,
    u32,
)
from ruda_core.runtime import Feature, RudaCount, RudaDim
from ruda_core.testing.markers import need, requires
from ruda_core.testing.runner import read_array

BLOCK = 64


@kernel
def conformance_histogram(x: Array[u32], hist: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len():
        atomic_add(hist, x[i] % hist.len(), u32(1))


@kernel
def conformance_shared_histogram(x: Array[u32], hist: Array[u32], BINS: Comptime[int]):
    local = SharedMemory(u32, BINS)
    if UNIT_POS < u32(BINS):
        local[UNIT_POS] = u32(0)
    sync_units()
    i = ABSOLUTE_POS
    if i < x.len():
        atomic_add(local, x[i] % u32(BINS), u32(1))
    sync_units()
    if UNIT_POS < u32(BINS):
        atomic_add(hist, UNIT_POS, local[UNIT_POS])


@kernel
def conformance_tickets(counter: Array[Numeric], tickets: Array[Numeric]):
    i = ABSOLUTE_POS
    if i < tickets.len():
        tickets[i] = atomic_add(counter, 0, Numeric(1))


@kernel
def conformance_cas_increment(counter: Array[u32], n: u32):
    if ABSOLUTE_POS < n:
        while True:
            old = atomic_load(counter, 0)
            if atomic_compare_and_swap(counter, 0, old, old + u32(1)) == old:
                break


@kernel
def conformance_reductions(x: Array[Int], acc: Array[Int], olds: Array[Int]):
    i = ABSOLUTE_POS
    if i < x.len():
        v = x[i]
        atomic_min(acc, 0, v)
        atomic_max(acc, 1, v)
        atomic_and(acc, 2, v)
        atomic_or(acc, 3, v)
        atomic_xor(acc, 4, v)
        atomic_sub(acc, 5, v)
        olds[i] = atomic_swap(acc, 6, v)


@kernel
def conformance_store_load(a: Array[Numeric], out: Array[Numeric]):
    i = ABSOLUTE_POS
    if i < out.len():
        atomic_store(a, i, Numeric(i * u32(3)))
        out[i] = atomic_load(a, i)
        if atomic_compare_and_swap(a, i, Numeric(12345678), Numeric(1)) == Numeric(12345678):
            out[i] = Numeric(0)  # the comparison fails: never written back


def _cubes(n: int) -> RudaCount:
    return RudaCount(-(-n // BLOCK))


def test_histogram_under_contention(client):
    n, bins = 50_000, 7
    x = np.random.default_rng(1).integers(0, 1 << 20, n, dtype=np.uint32)
    hist = client.create_from_slice(np.zeros(bins, dtype=np.uint32))
    conformance_histogram.launch(
        client,
        _cubes(n),
        RudaDim(BLOCK),
        ArrayArg(client.create_from_slice(x), n),
        ArrayArg(hist, bins),
    )
    np.testing.assert_array_equal(read_array(client, hist, np.uint32), np.bincount(x % bins))


def test_shared_memory_histogram(client):
    n, bins = 20_000, 16
    x = np.random.default_rng(2).integers(0, 1000, n, dtype=np.uint32)
    hist = client.create_from_slice(np.zeros(bins, dtype=np.uint32))
    conformance_shared_histogram.launch(
        client,
        _cubes(n),
        RudaDim(BLOCK),
        ArrayArg(client.create_from_slice(x), n),
        ArrayArg(hist, bins),
        BINS=bins,
    )
    np.testing.assert_array_equal(read_array(client, hist, np.uint32), np.bincount(x % bins))


def _need_atomics(client, elem: Elem) -> None:
    """Skip unless the device has ``elem`` and its atomics (64-bit or float ones)."""
    need(client, elem)
    if elem.bits == 64 and elem.is_int:
        need(client, Feature.ATOMIC_INT64)
    if elem.is_float:
        need(client, Feature.ATOMIC_FLOAT)


@pytest.mark.parametrize("elem", [Elem.U32, Elem.I32, Elem.U64, Elem.I64, Elem.F32], ids=str)
def test_fetch_add_returns_unique_old_values(client, elem):
    _need_atomics(client, elem)
    n = 4096
    counter = client.create_from_slice(np.zeros(1, dtype=elem.numpy))
    tickets = client.empty(n * elem.nbytes)
    conformance_tickets.launch(
        client,
        _cubes(n),
        RudaDim(BLOCK),
        ArrayArg(counter, 1, elem=elem),
        ArrayArg(tickets, n, elem=elem),
    )
    got = np.sort(read_array(client, tickets, elem.numpy))
    np.testing.assert_array_equal(got, np.arange(n))
    assert read_array(client, counter, elem.numpy)[0] == n


def test_compare_and_swap_loop(client):
    n = 2000
    counter = client.create_from_slice(np.zeros(1, dtype=np.uint32))
    conformance_cas_increment.launch(client, _cubes(n), RudaDim(BLOCK), ArrayArg(counter, 1), n)
    assert read_array(client, counter, np.uint32)[0] == n


@pytest.mark.parametrize("elem", [Elem.I32, Elem.U32, Elem.I64, Elem.U64], ids=str)
def test_min_max_and_or_xor_sub_swap(client, elem):
    _need_atomics(client, elem)
    n = 3000
    info = np.iinfo(elem.numpy)
    x = np.random.default_rng(3).integers(int(info.min), int(info.max), n, elem.numpy, True)
    init = np.array(
        [info.max, info.min, -1 if elem.is_signed else info.max, 0, 0, 10**6, 42], dtype=elem.numpy
    )
    acc = client.create_from_slice(init)
    olds = client.empty(x.nbytes)
    conformance_reductions.launch(
        client,
        _cubes(n),
        RudaDim(BLOCK),
        ArrayArg(client.create_from_slice(x), n, elem=elem),
        ArrayArg(acc, 7, elem=elem),
        ArrayArg(olds, n, elem=elem),
    )
    got = read_array(client, acc, elem.numpy)
    with np.errstate(over="ignore"):
        sub = init[5] - x.sum(dtype=elem.numpy)
    assert got[0] == x.min() and got[1] == x.max()
    assert got[2] == np.bitwise_and.reduce(x) and got[3] == np.bitwise_or.reduce(x)
    assert got[4] == np.bitwise_xor.reduce(x) and got[5] == sub
    swapped = np.sort(np.concatenate([read_array(client, olds, elem.numpy), got[6:7]]))
    np.testing.assert_array_equal(swapped, np.sort(np.concatenate([x, init[6:7]])))


@pytest.mark.parametrize("elem", [Elem.U32, Elem.I32, Elem.U64, Elem.I64, Elem.F32], ids=str)
def test_atomic_store_load_and_failed_compare(client, elem):
    _need_atomics(client, elem)
    n = 256
    a = client.create_from_slice(np.zeros(n, dtype=elem.numpy))
    out = client.empty(elem.nbytes * n)
    conformance_store_load.launch(
        client, _cubes(n), RudaDim(BLOCK), ArrayArg(a, n, elem=elem), ArrayArg(out, n, elem=elem)
    )
    want = (np.arange(n) * 3).astype(elem.numpy)
    np.testing.assert_array_equal(read_array(client, out, elem.numpy), want)
    np.testing.assert_array_equal(read_array(client, a, elem.numpy), want)


@requires(Feature.ATOMIC_FLOAT)
def test_float_atomic_add_of_exact_values(client):
    n = 8192
    counter = client.create_from_slice(np.zeros(1, dtype=np.float32))
    tickets = client.empty(4 * n)
    conformance_tickets.launch(
        client,
        _cubes(n),
        RudaDim(BLOCK),
        ArrayArg(counter, 1, elem=Elem.F32),
        ArrayArg(tickets, n, elem=Elem.F32),
    )
    assert read_array(client, counter, np.float32)[0] == n  # integers: exact in any order


@kernel
def conformance_cas_zeros(a: Array[f32], old: Array[f32], cmp: Array[f32]):
    i = ABSOLUTE_POS
    if i < a.len():
        old[i] = atomic_compare_and_swap(a, i, cmp[i], f32(5))


@requires(Feature.ATOMIC_FLOAT)
@pytest.mark.parametrize(
    ("held", "compared", "after"),
    [
        ([0.0, -0.0, 1.0], [-0.0, 0.0, 2.0], [5.0, 5.0, 1.0]),
        ([np.nan, 3.0], [np.nan, 3.0], [np.nan, 5.0]),
    ],
    ids=["zeros", "nan"],
)
def test_float_compare_and_swap_compares_values_and_returns_the_old_bits(
    client, held, compared, after
):
    """Floats compare as values (the two zeros match; NaN matches nothing), and the value
    returned is the element's own from before, bit for bit, not the comparand."""
    a = np.array(held, np.float32)
    old = np.zeros_like(a)
    conformance_cas_zeros.launch(client, 1, a.size, a, old, np.array(compared, np.float32))
    np.testing.assert_array_equal(old.view(np.uint32), np.array(held, np.float32).view(np.uint32))
    np.testing.assert_array_equal(a, np.array(after, np.float32))
