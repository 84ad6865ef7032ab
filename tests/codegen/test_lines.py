"""Generated code of lines: one vector access per line on CUDA (raw ``uint4``/``uint2`` words,
unpacked with bit casts) and OpenCL (``vloadN``/``vstoreN``), for every element type and width;
CUDA source compiles with NVRTC, OpenCL source builds on every OpenCL device."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.ir import Elem, ExecutionMode, lower_bounds
from ruda_core.lang import ABSOLUTE_POS, Array, Comptime, ElemVar, kernel, select
from ruda_core.runtime.errors import UnsupportedFeature
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile

Any = ElemVar("Any")
WIDTHS = (2, 4, 8)


@kernel
def line_roundtrip(x: Array[Any], y: Array[Any], N: Comptime[int]):
    i = ABSOLUTE_POS
    v = x.load_line(i, N)
    y.store_line(i, select(v == v, v, y.load_line(i + 1, N)))


def _definition(elem: Elem, width: int, mode: ExecutionMode = ExecutionMode.CHECKED):
    return lower_bounds(line_roundtrip.definition(N=width, Any=elem.value), mode)


@pytest.mark.parametrize("arch", [60, 90])
@pytest.mark.parametrize("width", WIDTHS)
def test_lines_of_every_type_compile_with_nvrtc(arch: int, width: int) -> None:
    for elem in Elem:
        source = CFamilyEmitter(CudaDialect(arch)).emit(_definition(elem, width)).source
        ok, log = _nvrtc_compile(source, arch)
        assert ok, f"NVRTC rejected lines of {width} {elem} for sm_{arch}:\n{log}\n{source}"


def test_cuda_moves_a_line_in_as_few_16_byte_words_as_it_takes() -> None:
    def source(elem: Elem, width: int) -> str:
        return CFamilyEmitter(CudaDialect(90)).emit(_definition(elem, width)).source

    assert "(const uint4*)x + (i) * 1" in source(Elem.F32, 4)
    assert "(const uint4*)x + (i) * 1" in source(Elem.F16, 8)
    assert "__ushort_as_half((unsigned short)(line[0].w >> 16))" in source(Elem.F16, 8)
    assert "(const uint4*)x + (i) * 4" in source(Elem.F64, 8)
    assert "(const uint2*)x + (i) * 1" in source(Elem.F32, 2)
    assert "make_uint4(" in source(Elem.I32, 4)
    assert "(const unsigned short*)x" in source(Elem.U8, 2)


@pytest.mark.parametrize(
    ("elem", "width", "load", "store"),
    [
        (Elem.F32, 4, "vload4(i, x)", "vstore4((float4)("),
        (Elem.I64, 8, "vload8(i, x)", "vstore8((long8)("),
        (Elem.BOOL, 2, "vload2(i, x)", "vstore2((uchar2)((uchar)"),
    ],
)
def test_opencl_uses_vload_and_vstore(elem: Elem, width: int, load: str, store: str) -> None:
    source = CFamilyEmitter(OpenCLDialect()).emit(_definition(elem, width)).source
    assert load in source and store in source


def test_opencl_half_without_fp16_moves_lines_as_floats() -> None:
    storage_only = CFamilyEmitter(OpenCLDialect()).emit(_definition(Elem.F16, 8)).source
    assert "vload_half8(i, x)" in storage_only and "vstore_half8_rte((float8)(" in storage_only
    native = CFamilyEmitter(OpenCLDialect(frozenset({"fp16"}))).emit(_definition(Elem.F16, 8))
    assert "const half8 line = vload8(i, x);" in native.source


@pytest.mark.parametrize("width", WIDTHS)
def test_lines_of_every_supported_type_build_on_opencl(opencl_device, width: int) -> None:
    features = opencl_device.client.features()
    for elem in Elem:
        definition = line_roundtrip.definition(N=width, Any=elem.value)
        if not features.supports(elem):
            with pytest.raises(UnsupportedFeature):
                opencl_device.emit(definition)
            continue
        opencl_device.build(opencl_device.emit(definition))
