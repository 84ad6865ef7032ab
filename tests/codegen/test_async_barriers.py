"""Asynchronous barriers and bulk copies in generated code: CUDA lowers them to inline PTX of
``sm_90`` (``mbarrier.init`` and its fence, ``mbarrier.arrive`` with and without
``.expect_tx``, a ``mbarrier.try_wait.parity`` loop, ``cp.async.bulk`` completing on the
barrier; bulk stores in bulk groups with their fence, commit and ``wait_group.read``) on 32-bit
shared addresses of ``uint64_t`` barrier words, aligns a bulk copy's shared array to 16 bytes,
and builds with NVRTC for ``sm_90`` and ``sm_90a`` (ptxas checks the operands); OpenCL C has
no lowering and says so."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import ExecutionMode, lower_bounds
from ruda_core.lang import f32, i32
from ruda_core.testing.async_barrier_kernels import (
    barrier_arrivals,
    staged_round_trip,
    staged_tiles,
)
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile


def _staged(elem=f32, nbytes=4):
    return staged_tiles.definition(T=elem, STAGES=7, SLOTS=3, TILE=128, PIECES=2, NBYTES=nbytes)


def _cuda(defn, mode=ExecutionMode.UNCHECKED) -> str:
    return CFamilyEmitter(CudaDialect(90)).emit(lower_bounds(defn, mode)).source


def test_barriers_and_bulk_copies_lower_to_mbarrier_and_cp_async_bulk():
    source = _cuda(_staged())
    assert "uint64_t full[3]" in source or "unsigned long long full[3]" in source
    assert "mbarrier.init.shared::cta.b64 [%0], %1;" in source
    assert "fence.mbarrier_init.release.cluster;" in source
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" in source
    assert "mbarrier.arrive.shared::cta.b64 _, [%0];" in source
    assert "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;" in source
    assert "} while (!ruda_done);" in source
    copy = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
    assert source.count(copy) == 2  # the prologue's and the refill's
    assert "__cvta_generic_to_shared(&full[" in source
    assert "__align__(16)" in source or "aligned(16)" in source


def test_bulk_stores_lower_to_bulk_groups():
    source = _cuda(staged_round_trip.definition(T=f32, TILE=64, STAGES=5, NBYTES=4))
    assert "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" in source
    assert "fence.proxy.async.shared::cta;" in source
    assert "cp.async.bulk.commit_group;" in source
    assert "cp.async.bulk.wait_group.read 1;" in source
    assert "cp.async.bulk.wait_group.read 0;" in source
    assert "float results[128] __attribute__((aligned(16)))" in source


@pytest.mark.parametrize("mode", [ExecutionMode.UNCHECKED, ExecutionMode.CHECKED], ids=str)
@pytest.mark.parametrize("arch", ["90", "90a"])
def test_barrier_kernels_build_with_nvrtc_for_sm_90(mode, arch):
    kernels = [
        _staged(),
        _staged(i32, 4),
        barrier_arrivals.definition(ROUNDS=5, UNITS=64),
        staged_round_trip.definition(T=f32, TILE=64, STAGES=5, NBYTES=4),
    ]
    for defn in kernels:
        source = _cuda(defn, mode)
        ok, log = _nvrtc_compile(source, arch, target="sm")  # type: ignore[arg-type]  # 90a
        assert ok, f"NVRTC rejected {defn.name} for sm_{arch}:\n{log}"


def test_opencl_has_no_lowering():
    with pytest.raises(UnsupportedFeature, match="no asynchronous barriers"):
        CFamilyEmitter(OpenCLDialect()).emit(barrier_arrivals.definition(ROUNDS=2, UNITS=32))
