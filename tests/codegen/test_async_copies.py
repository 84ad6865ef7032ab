"""Asynchronous copies in generated code: from sm_80 the CUDA lowering is ``cp.async`` (``.cg``
for 16-byte lines), ``cp.async.commit_group`` and ``cp.async.wait_group n``, and builds with
NVRTC in every mode; older CUDA targets and OpenCL C copy when issued; the front end refuses
copies it cannot express, saying why."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.errors import CompilationError
from ruda_core.ir import ExecutionMode, lower_bounds
from ruda_core.lang import UNIT_POS, Array, SharedMemory, f32, kernel, pipeline, u32
from ruda_core.testing.conformance.test_async_copies import (
    conformance_copy_edges,
    conformance_copy_ring,
)
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile, _nvrtc_ptx


def _ring(elem: str = "f16", width: int = 8):
    return conformance_copy_ring.definition(Numeric=elem, N=width, STAGES=3)


@pytest.mark.parametrize("mode", [ExecutionMode.UNCHECKED, ExecutionMode.CHECKED], ids=str)
@pytest.mark.parametrize("arch", [70, 80, 90])
def test_copies_build_with_nvrtc_as_cp_async_from_sm80(arch, mode):
    for defn in (_ring(), _ring("f32", 2), conformance_copy_edges.definition(N=4)):
        source = CFamilyEmitter(CudaDialect(arch)).emit(lower_bounds(defn, mode)).source
        ok, log = _nvrtc_compile(source, arch)
        assert ok, f"NVRTC rejected {defn.name} for sm_{arch}:\n{log}\n{source}"
    _, ptx = _nvrtc_ptx(
        CFamilyEmitter(CudaDialect(arch)).emit(lower_bounds(_ring(), mode)).source, arch
    )
    native = arch >= 80 and mode is ExecutionMode.UNCHECKED  # checks copy when issued
    assert ("cp.async.cg.shared.global" in ptx) == native, ptx
    assert ("cp.async.wait_group 1" in ptx) == native
    assert ("cp.async.commit_group" in ptx) == native


def test_short_lines_use_the_l1_form_and_opencl_copies_when_issued():
    source = CFamilyEmitter(CudaDialect(90)).emit(_ring("f32", 2)).source
    assert "cp.async.ca.shared.global [%0], [%1], 8;" in source
    opencl = CFamilyEmitter(OpenCLDialect()).emit(_ring()).source
    assert "cp.async" not in opencl and "_copy_f16x8" in opencl


@kernel
def _into_global(x: Array[f32], y: Array[f32]):
    pipeline.copy_async(y, UNIT_POS, x, UNIT_POS, 4)


@kernel
def _too_wide(x: Array[f32]):
    s = SharedMemory(f32, 64)
    pipeline.copy_async(s, UNIT_POS, x, UNIT_POS, 8)


@kernel
def _waits_at_run_time(x: Array[f32], n: u32):
    pipeline.wait(n)


@pytest.mark.parametrize(
    ("k", "message"),
    [
        (_into_global, "writes a SharedMemory"),
        (_too_wide, "lines of 4, 8 or 16 bytes"),
        (_waits_at_run_time, "compile-time int"),
    ],
)
def test_the_front_end_refuses_what_it_cannot_copy(k, message):
    with pytest.raises(CompilationError, match=message):
        k.definition()
