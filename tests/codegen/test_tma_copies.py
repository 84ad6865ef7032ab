"""Tensor copies in generated code: CUDA lowers ``mbarrier.tensor_copy`` to
``cp.async.bulk.tensor.2d`` of a ``__grid_constant__`` tensor map argument (one per distinct
matrix and box, after every other argument), whose coordinates are the column then the row,
aligns the copy's shared array to the swizzle's 1024 bytes, and builds with NVRTC for ``sm_90``
and ``sm_90a``; OpenCL C has no lowering and says so."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.codegen.abi import ArgKind
from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import ExecutionMode, lower_bounds
from ruda_core.lang import f32, u16
from ruda_core.testing.tma_kernels import tensor_boxes
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile


def _boxes(elem=u16, box_cols=64):
    return tensor_boxes.definition(
        T=elem, BOX_ROWS=16, BOX_COLS=box_cols, BOXES=3, SLOTS=2, UNITS=64
    )


def _cuda(defn, mode=ExecutionMode.UNCHECKED):
    return CFamilyEmitter(CudaDialect(90)).emit(lower_bounds(defn, mode))


def test_tensor_copies_lower_to_a_2d_bulk_tensor_copy_of_a_grid_constant_map():
    emitted = _cuda(_boxes())
    source = emitted.source
    copy = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
    assert source.count(copy) == 1
    assert "[%0], [%1, {%2, %3}], [%4];" in source
    assert "struct __align__(64) ruda_tensor_map { unsigned long long bits[16]; };" in source
    maps = [a for a in emitted.args if a.kind is ArgKind.TENSOR_MAP]
    assert len(maps) == 1 and emitted.args[-1] is maps[0]
    assert maps[0].ctype == "const __grid_constant__ ruda_tensor_map"
    assert maps[0].parts == ((0, 1), (16, 64)) and maps[0].index == 0
    assert f'"l"((unsigned long long)&{maps[0].name})' in source
    assert "__align__(1024)" in source or "aligned(1024)" in source


@pytest.mark.parametrize("mode", [ExecutionMode.UNCHECKED, ExecutionMode.CHECKED], ids=str)
@pytest.mark.parametrize("arch", ["90", "90a"])
def test_tensor_copy_kernels_build_with_nvrtc_for_sm_90(mode, arch):
    for defn in (_boxes(), _boxes(f32, 32)):
        source = _cuda(defn, mode).source
        ok, log = _nvrtc_compile(source, arch, target="sm")  # type: ignore[arg-type]  # 90a
        assert ok, f"NVRTC rejected {defn.name} for sm_{arch}:\n{log}"


def test_opencl_has_no_lowering():
    with pytest.raises(UnsupportedFeature, match="OpenCL C has no tensor copies"):
        CFamilyEmitter(OpenCLDialect()).emit(_boxes())
