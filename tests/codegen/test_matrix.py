"""Cooperative matrices in generated code: the WMMA lowering builds with NVRTC for sm_80 and
sm_90 (sm_70 for f16) in every mode, tf32 inputs are rounded after loads, shared tiles are
aligned, the CUDA configurations follow the compute capability, and OpenCL C refuses matrices
saying why."""

from __future__ import annotations

import re
from functools import partial

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.ir import (
    BF16_CONFIGS,
    F16_CONFIGS,
    TF32_CONFIGS,
    Elem,
    ExecutionMode,
    KernelDefinition,
    MatrixLayout,
    lower_bounds,
)
from ruda_core.lang import bf16, f16, f32
from ruda_core.ops.matmul import (
    CMMA_SHAPES,
    FMA_SHAPES,
    PIPELINED_SHAPES,
    _cmma_spec,
    _cmma_stages,
    _fma_spec,
    _Limits,
    _pipelined_spec,
    _pipelined_stages,
)
from ruda_core.ops.matmul_kernels import matmul_cmma, matmul_fma, matmul_pipelined
from ruda_core.runtime import UnsupportedFeature
from ruda_core.testing.matrix_kernels import cmma_chain, cmma_fill_store, cmma_shared, cmma_tile
from ruda_cuda.dialect import CudaDialect, wmma_configs
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile, _nvrtc_ptx

ROW, COL = MatrixLayout.ROW_MAJOR, MatrixLayout.COL_MAJOR


def _tile(elem, acc, m, n, k, tf32=False) -> KernelDefinition:
    spec = dict(M=m, N=n, K=k, TF32=tf32, LA=ROW, LB=COL, LC=COL, LOUT=ROW)
    return cmma_tile.definition(In=elem, Acc=acc, **spec)


def _shared(elem, m, n, k, la, lb, lout, pad, tf32=False) -> KernelDefinition:
    """:func:`cmma_shared` of one ``m x n x k`` product, its tiles dense in these layouts."""

    def tile(rows: int, cols: int, layout: MatrixLayout) -> tuple[int, int]:
        return (rows, cols) if layout is ROW else (cols, rows)

    return cmma_shared.definition(
        In=elem,
        Acc=f32,
        M=m,
        N=n,
        K=k,
        LA=la,
        LB=lb,
        LOUT=lout,
        A_TILE=tile(m, k, la),
        B_TILE=tile(k, n, lb),
        O_TILE=tile(m, n, lout),
        PAD=pad,
        TF32=tf32,
    )


def _matmul(elem, tf32: bool, interior: bool) -> KernelDefinition:
    m, n, k = (128, 256, 64) if interior else (100, 70, 33)
    shape, stages = CMMA_SHAPES[0], 2
    return matmul_cmma.definition(In=elem, **_cmma_spec(shape, 32, stages, tf32, elem, m, n, k))


#: name -> (definition, the lowest compute capability that has it)
KERNELS = {
    "f16_f32_16x16x16": (lambda: _tile(f16, f32, 16, 16, 16), 70),
    "f16_f16_32x8x16": (lambda: _tile(f16, f16, 32, 8, 16), 70),
    "bf16_f32_8x32x16": (lambda: _tile(bf16, f32, 8, 32, 16), 80),
    "tf32_f32_16x16x8": (lambda: _tile(f32, f32, 16, 16, 8, tf32=True), 80),
    "shared_f16": (lambda: _shared(f16, 16, 16, 16, COL, ROW, COL, 16), 70),
    "shared_tf32": (lambda: _shared(f32, 16, 16, 8, ROW, COL, ROW, 8, tf32=True), 80),
    "shared_bf16_8x32": (lambda: _shared(bf16, 8, 32, 16, ROW, ROW, ROW, 16), 80),
    "chain_cast": (lambda: cmma_chain.definition(In=f16, M=16, N=16, K=16, STEPS=2, ACC=f32), 70),
    "fill_f16": (lambda: cmma_fill_store.definition(Acc=f16, M=16, N=16, K=16), 70),
    "matmul_bf16": (lambda: _matmul(Elem.BF16, False, True), 80),
    "matmul_bf16_ragged": (lambda: _matmul(Elem.BF16, False, False), 80),
    "matmul_tf32": (lambda: _matmul(Elem.F32, True, False), 80),
    "matmul_f16": (lambda: _matmul(Elem.F16, False, True), 70),
    "matmul_fma": (
        lambda: matmul_fma.definition(In=bf16, **_fma_spec(FMA_SHAPES[0], 100, 70, 33)),
        70,
    ),
}

#: The pipelined candidates also built on a ragged product: the last of each loop's form.
RAGGED_PIPELINED = (
    PIPELINED_SHAPES[-1],
    next(p for p in reversed(PIPELINED_SHAPES) if p[6]),
)
#: (m, n, k) every candidate is built for: interior (with lines) and ragged (without).
PRODUCTS = {"interior": (256, 256, 256), "ragged": (100, 70, 33)}


def _candidate_sources():
    """How to build the definition of every ``ops.matmul`` candidate an H200 (sm_90, 32-wide
    planes, 227 KiB of shared memory per cube, 48 KiB of it static) runs, on each of
    :data:`PRODUCTS`: built when the test runs, not in every process that collects the suite
    (73 definitions take seconds to trace)."""
    limits = _Limits(32, 1024, 48 * 1024)
    optin = _Limits(32, 1024, 227 * 1024)  # the pipelined ones are tuned with the opt-in limit
    for product, (m, n, k) in PRODUCTS.items():
        for elem in (Elem.F16, Elem.BF16, Elem.F32):
            for shape in FMA_SHAPES:
                spec = _fma_spec(shape, m, n, k)
                build = partial(matmul_fma.definition, In=elem, **spec)
                yield pytest.param(build, id=f"fma-{shape}-{elem}-{product}")
            for shape in CMMA_SHAPES:
                stages = _cmma_stages(shape, elem, limits)
                if not stages:  # left out on this device
                    continue
                spec = _cmma_spec(shape, 32, stages, elem is Elem.F32, elem, m, n, k)
                build = partial(matmul_cmma.definition, In=elem, **spec)
                yield pytest.param(build, id=f"cmma-{shape}-{elem}-{product}")
            for pshape in PIPELINED_SHAPES if elem is Elem.BF16 else ():  # f16's code is alike
                if product == "ragged" and pshape not in RAGGED_PIPELINED:
                    continue  # element-wide copies are slow to build: one of each loop is enough
                stages = _pipelined_stages(pshape[:5], pshape[5], elem, optin)
                spec = _pipelined_spec(
                    pshape[:5], 32, stages, False, elem, m, n, k, prefetch=pshape[6]
                )
                build = partial(matmul_pipelined.definition, In=elem, **spec)
                yield pytest.param(build, id=f"pipe-{pshape}-{elem}-{product}")


@pytest.mark.parametrize("build", list(_candidate_sources()))
def test_every_matmul_candidate_builds_for_sm90_without_spills(request, build):
    """What an H200 compiles: ptxas accepts each candidate; the interior variant keeps every
    fragment and register tile in registers (no spills: the ragged one, with element-wide
    loads, may spill a few words of 64 x 64 planes), reads global memory in lines (vector loads: 16
    bytes, 8 for the FMA kernel's f16 and bf16; ``cp.async`` of 16 bytes for the pipelined ones)
    and a tensor-core one multiplies with WMMA, loading its operands with the shared-memory form
    of ``wmma.load``."""
    name = request.node.callspec.id
    defn = build()  # traced and emitted for sm_90 even where NVRTC is missing and it skips
    source = CFamilyEmitter(CudaDialect(90)).emit(lower_bounds(defn, ExecutionMode.UNCHECKED))
    ok, log = _nvrtc_compile(source.source, 90, "sm", ("--ptxas-options=-v",))
    assert ok, f"NVRTC rejected {name}:\n{log}"
    _, ptx = _nvrtc_ptx(source.source, 90)
    if name.endswith("interior"):
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
        lines = "cp.async.cg.shared.global" if name.startswith("pipe") else "ld.global.nc.v4"
        assert lines in ptx or (name.startswith("fma") and "ld.global.nc.v2" in ptx)
    tensor_cores = name.startswith(("cmma", "pipe"))
    assert ("wmma.mma" in ptx) == tensor_cores
    if defn.shared_bytes > 48 * 1024:  # past CUDA's static limit: in the dynamic buffer
        assert "extern __shared__" in source.source
    if name.startswith("pipe") and name.endswith("ragged"):  # rows not on lines: no cp.async
        assert "cp.async.cg" not in ptx and "cp.async.ca" not in ptx
    if tensor_cores:  # operands come from shared stages: ldmatrix, not generic loads
        loads = re.findall(r"wmma\.load\.[ab]\.\S+", ptx)
        assert loads and all(".shared." in op for op in loads), sorted(set(loads))


@pytest.mark.parametrize("mode", [ExecutionMode.UNCHECKED, ExecutionMode.CHECKED], ids=str)
@pytest.mark.parametrize("arch", [70, 80, 90])
@pytest.mark.parametrize("name", list(KERNELS))
def test_matrix_kernels_compile_with_nvrtc(name, arch, mode):
    build, lowest = KERNELS[name]
    if arch < lowest:
        pytest.skip(f"{name} needs sm_{lowest}")
    source = CFamilyEmitter(CudaDialect(arch)).emit(lower_bounds(build(), mode)).source
    ok, log = _nvrtc_compile(source, arch)
    assert ok, f"NVRTC rejected {name} for sm_{arch}:\n{log}\n{source}"


def test_wmma_source_rounds_tf32_after_each_load_and_aligns_shared_tiles():
    tf32 = CFamilyEmitter(CudaDialect(80)).emit(KERNELS["tf32_f32_16x16x8"][0]()).source
    assert "#include <mma.h>" in tf32
    assert "nvcuda::wmma::precision::tf32, nvcuda::wmma::row_major> ma;" in tf32
    assert tf32.count("nvcuda::wmma::__float_to_tf32(ma.x[t])") == 1
    assert "nvcuda::wmma::mma_sync(mc, ma, mb, mc);" in tf32
    assert "nvcuda::wmma::mem_col_major" in tf32  # the accumulator's load layout
    shared = CFamilyEmitter(CudaDialect(80)).emit(KERNELS["shared_f16"][0]()).source
    assert "__shared__ __half sa[2048] __attribute__((aligned(32)));" in shared


def test_cuda_configurations_follow_the_compute_capability():
    assert wmma_configs(61) == frozenset()
    assert wmma_configs(75) == F16_CONFIGS
    assert wmma_configs(90) == F16_CONFIGS | BF16_CONFIGS | TF32_CONFIGS


def test_opencl_c_refuses_matrices():
    with pytest.raises(UnsupportedFeature, match=r"OpenCL C.* has no cooperative matrices"):
        CFamilyEmitter(OpenCLDialect()).emit(KERNELS["f16_f32_16x16x16"][0]())
