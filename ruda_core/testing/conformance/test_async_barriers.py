"""Asynchronous barriers and bulk copies (``mbarrier``): cubes stage their tiles of global
memory into a ring of shared slots by bulk copies that complete on a barrier armed with the
tile's bytes, wait for alternating phases of each slot's barrier, and add the tiles up in stage
order; a second ring of barriers counts arrivals alone. The sums are of small integers, so they
are exact: every device must match NumPy bit for bit. Results go back by bulk stores from two
shared slots in groups that are waited for before a slot is reused. A device without
``Feature.ASYNC_BARRIER`` skips these as unsupported, and refuses such a kernel with
``UnsupportedFeature``."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import ArrayArg, f32, i32
from ruda_core.runtime import ComputeClient, Feature, RudaCount, RudaDim, UnsupportedFeature
from ruda_core.testing.async_barrier_kernels import (
    barrier_arrivals,
    staged_round_trip,
    staged_tiles,
)
from ruda_core.testing.markers import requires
from ruda_core.testing.runner import read_array

#: ``(stages, slots, tile, pieces)``: rings of two and three slots over five to nine stages (so
#: every slot is used in both parities, some three times), tiles of one to four bulk copies.
SHAPES = [(5, 2, 64, 1), (7, 3, 128, 2), (9, 2, 32, 4), (6, 3, 256, 1)]
#: The tile elements: the kernel's and NumPy's.
ELEMS = {"f32": (f32, np.float32), "i32": (i32, np.int32)}


def _arg(client: ComputeClient, x: np.ndarray) -> ArrayArg:
    return ArrayArg(client.create_from_slice(x), x.size, elem=Elem.from_dtype(x.dtype))


@requires(Feature.ASYNC_BARRIER)
@pytest.mark.parametrize("elem", sorted(ELEMS))
@pytest.mark.parametrize(("stages", "slots", "tile", "pieces"), SHAPES, ids=lambda v: str(v))
def test_tiles_staged_by_bulk_copies_add_up_exactly(client, elem, stages, slots, tile, pieces):
    kernel_elem, dtype = ELEMS[elem]
    cubes = 3
    x = np.random.default_rng(stages * tile).integers(-50, 51, cubes * stages * tile)
    x = x.astype(dtype)
    args = [_arg(client, x), _arg(client, np.zeros(cubes * tile, dtype))]
    staged_tiles.launch(
        client,
        RudaCount(cubes),
        RudaDim(tile),
        *args,
        STAGES=stages,
        SLOTS=slots,
        TILE=tile,
        PIECES=pieces,
        NBYTES=np.dtype(dtype).itemsize,
        T=kernel_elem,
    )
    got = read_array(client, args[1].handle, np.dtype(dtype))
    np.testing.assert_array_equal(got, x.reshape(cubes, stages, tile).sum(axis=1).ravel())


@requires(Feature.ASYNC_BARRIER)
@pytest.mark.parametrize(("units", "rounds"), [(32, 1), (64, 5), (256, 6)])
def test_a_phase_completes_when_every_unit_has_arrived(client, units, rounds):
    out = _arg(client, np.zeros(2, np.uint32))
    barrier_arrivals.launch(client, RudaCount(2), RudaDim(units), out, ROUNDS=rounds, UNITS=units)
    want = units * sum(range(rounds))
    np.testing.assert_array_equal(read_array(client, out.handle, np.uint32), [want, want])


@requires(Feature.ASYNC_BARRIER)
@pytest.mark.parametrize("elem", sorted(ELEMS))
@pytest.mark.parametrize(("tile", "stages"), [(32, 1), (64, 5), (128, 6)])
def test_results_go_back_by_bulk_stores(client, elem, tile, stages):
    kernel_elem, dtype = ELEMS[elem]
    cubes = 2
    x = np.random.default_rng(tile).integers(-1000, 1001, cubes * stages * tile).astype(dtype)
    args = [_arg(client, x), _arg(client, np.zeros_like(x))]
    nbytes = np.dtype(dtype).itemsize
    staged_round_trip.launch(
        client,
        RudaCount(cubes),
        RudaDim(tile),
        *args,
        TILE=tile,
        STAGES=stages,
        NBYTES=nbytes,
        T=kernel_elem,
    )
    got = read_array(client, args[1].handle, np.dtype(dtype))
    np.testing.assert_array_equal(got, x * dtype(2) + dtype(1))


def test_a_device_without_async_barriers_refuses_them(client):
    if client.features().has(Feature.ASYNC_BARRIER):
        pytest.skip(f"{client.device} has asynchronous barriers")
    out = _arg(client, np.zeros(1, np.uint32))
    with pytest.raises(UnsupportedFeature, match=r"asynchronous barriers.*" + str(client.device)):
        barrier_arrivals.launch(client, RudaCount(1), RudaDim(32), out, ROUNDS=1, UNITS=32)
        read_array(client, out.handle, np.uint32)  # where a deferred launch error shows
