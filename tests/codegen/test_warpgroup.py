"""Warpgroup matrices in generated code: CUDA lowers them to inline PTX of ``sm_90a``
(``wgmma.fence``, ``wgmma.mma_async`` with shared-memory descriptors, ``wgmma.commit_group``,
``wgmma.wait_group``), aligns the swizzled shared arrays to 1024 bytes also when they are placed
in the dynamic buffer, and builds with NVRTC for ``sm_90a`` (ptxas checks the operands); OpenCL
C has no lowering and says so."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import ExecutionMode, lower_bounds
from ruda_core.lang import bf16, f16
from ruda_core.ops.matmul_warpgroup import matmul_warpgroup
from ruda_core.testing.warpgroup_kernels import (
    wgmma_groups,
    wgmma_product,
    wgmma_through_shared,
)
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile


def _cuda(defn, mode=ExecutionMode.UNCHECKED) -> str:
    return CFamilyEmitter(CudaDialect(90)).emit(lower_bounds(defn, mode)).source


def test_products_lower_to_wgmma_with_descriptors_of_the_swizzled_layout():
    source = _cuda(wgmma_product.definition(In=bf16, N=128, K=64, GROUPS=2))
    assert source.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4
    assert "p, 1, 1, 0, 1;" in source  # scale-d, scales of a and b, K-major A, N-major B
    assert "__attribute__((aligned(1024)))" in source
    assert "wgmma.fence.sync.aligned" in source and "fence.proxy.async.shared::cta" in source
    # B's blocks of 64 columns: K * 64 = 4096 elements = 8192 bytes apart
    assert "ruda_wgmma_desc(&sb[" in source and "8192u, 1024u)" in source
    half = _cuda(wgmma_product.definition(In=f16, N=256, K=16, GROUPS=1))
    assert "m64n256k16.f32.f16.f16" in half and "%128, %129" in half


def test_waits_keep_their_count_and_fence_the_accumulators_after_the_last():
    source = _cuda(wgmma_groups.definition(In=bf16, N=64, K=64))
    assert source.count("wgmma.commit_group.sync.aligned") == 2
    assert "wgmma.wait_group.sync.aligned 1;" in source
    assert "wgmma.wait_group.sync.aligned 0;" in source
    after_last = source.split("wgmma.wait_group.sync.aligned 0;")[1]
    assert '"+f"(first[ruda_i])' in after_last and '"+f"(second[ruda_i])' in after_last


def test_stages_in_the_dynamic_buffer_start_on_1024_bytes():
    defn = matmul_warpgroup.definition(
        Half=bf16, WG=2, BN=256, STAGES=4, VA=8, VB=8, INTERIOR=True, GROUP=8
    )
    source = _cuda(defn)
    assert "extern __shared__ __align__(1024) unsigned char" in source
    assert "+ (((65536u) + 15u) / 16u * 16u)" in source  # a's 4 stages: whole 1024-byte blocks


@pytest.mark.parametrize("mode", [ExecutionMode.UNCHECKED, ExecutionMode.CHECKED], ids=str)
def test_warpgroup_kernels_build_with_nvrtc_for_sm_90a(mode):
    kernels = [
        wgmma_product.definition(In=bf16, N=128, K=64, GROUPS=2),
        wgmma_product.definition(In=f16, N=256, K=32, GROUPS=1),
        wgmma_groups.definition(In=bf16, N=64, K=64),
        wgmma_through_shared.definition(In=f16, N=64, K=32),
        matmul_warpgroup.definition(
            Half=bf16, WG=2, BN=256, STAGES=4, VA=8, VB=8, INTERIOR=False, GROUP=8
        ),
    ]
    for defn in kernels:
        source = _cuda(defn, mode)
        ok, log = _nvrtc_compile(source, "90a", target="sm")  # type: ignore[arg-type]  # 90a
        assert ok, f"NVRTC rejected {defn.name} for sm_90a:\n{log}"


def test_opencl_has_no_lowering():
    with pytest.raises(UnsupportedFeature, match="no warpgroup matrices"):
        CFamilyEmitter(OpenCLDialect()).emit(wgmma_groups.definition(In=f16, N=64, K=64))
