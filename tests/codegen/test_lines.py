"""Generated code of lines: one vector access per line on CUDA (raw ``uint4``/``uint2`` words,
unpacked with bit casts) and OpenCL (``vloadN``/``vstoreN``; through a pointer to vectors of at
most 16 bytes in a loop that may be left early), for every element type and width,
in global and shared memory (a line-accessed shared array is declared aligned to the line);
CUDA source compiles with NVRTC, OpenCL source builds on every OpenCL device."""

from __future__ import annotations

import pytest

from ruda_core.codegen import CFamilyEmitter
from ruda_core.ir import Elem, ExecutionMode, lower_bounds
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    Comptime,
    ElemVar,
    SharedMemory,
    kernel,
    select,
    sync_units,
)
from ruda_core.runtime import UnsupportedFeature
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


@kernel
def shared_line_roundtrip(x: Array[Any], y: Array[Any], N: Comptime[int]):
    s = SharedMemory(Any, 64 * N)
    s.store_line(UNIT_POS, x.load_line(ABSOLUTE_POS, N))
    sync_units()
    y.store_line(ABSOLUTE_POS, s.load_line(UNIT_POS ^ 1, N))


@kernel
def lines_in_loops(x: Array[Any], y: Array[Any], N: Comptime[int]):
    i = ABSOLUTE_POS
    for k in range(x.len() // N):  # a loop run to its end
        y.store_line(i, x.load_line(k, N))
    for k in range(x.len() // N):  # left early: its lines through pointers, nested loops too
        for j in range(2):
            y.store_line(j, x.load_line(k + j, N))
        if k == i:
            break
    for k in range(x.len() // N):  # the break first is the loop's test
        if k == i:
            break
        y.store_line(k, x.load_line(i, N))
    for k in range(2):  # only its inner loop is left early
        y.store_line(k + 2, x.load_line(k + 3, N))
        for j in range(x.len()):
            if j == i:
                break


def _definition(elem: Elem, width: int, mode: ExecutionMode = ExecutionMode.CHECKED, k=None):
    return lower_bounds((k or line_roundtrip).definition(N=width, Any=elem.value), mode)


def _shared(elem: Elem, width: int):
    return _definition(elem, width, k=shared_line_roundtrip)


@pytest.mark.parametrize("arch", [60, 90])
@pytest.mark.parametrize("width", WIDTHS)
def test_lines_of_every_type_compile_with_nvrtc(arch: int, width: int) -> None:
    for elem in Elem:
        source = CFamilyEmitter(CudaDialect(arch)).emit(_definition(elem, width)).source
        ok, log = _nvrtc_compile(source, arch)
        assert ok, f"NVRTC rejected lines of {width} {elem} for sm_{arch}:\n{log}\n{source}"


@pytest.mark.parametrize("width", WIDTHS)
def test_shared_lines_of_every_type_compile_with_nvrtc(width: int) -> None:
    for elem in Elem:
        source = CFamilyEmitter(CudaDialect(90)).emit(_shared(elem, width)).source
        ok, log = _nvrtc_compile(source, 90)
        assert ok, f"NVRTC rejected shared lines of {width} {elem}:\n{log}\n{source}"


def test_a_line_accessed_shared_array_starts_at_the_line_size() -> None:
    f32x4 = CFamilyEmitter(CudaDialect(90)).emit(_shared(Elem.F32, 4)).source
    assert "__shared__ float s[256] __attribute__((aligned(16)));" in f32x4
    assert "(const uint4*)s + (" in f32x4 and "(uint4*)s + (" in f32x4
    u8x2 = CFamilyEmitter(OpenCLDialect()).emit(_shared(Elem.U8, 2)).source
    assert "__local uchar s[128] __attribute__((aligned(2)));" in u8x2
    assert "vload2(" in u8x2 and ", s);" in u8x2


def test_opencl_half_without_fp16_moves_shared_lines_as_floats() -> None:
    source = CFamilyEmitter(OpenCLDialect()).emit(_shared(Elem.F16, 8)).source
    assert "__local ushort s[512]" in source  # the bits, as scalar accesses keep them
    assert "vstore_half8_rte((float8)(" in source and ", (__local half*)s);" in source
    assert "vload_half8(" in source


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


@pytest.mark.parametrize(
    ("elem", "width", "chunk", "count"),
    [
        (Elem.F32, 4, "float4", 1),
        (Elem.U32, 8, "uint4", 2),
        (Elem.I64, 8, "long2", 4),
        (Elem.BOOL, 2, "uchar2", 1),
    ],
)
def test_opencl_moves_lines_in_a_loop_left_early_through_pointers_to_vectors(
    elem: Elem, width: int, chunk: str, count: int
) -> None:
    """In a loop a ``break`` or ``return`` may leave early (and the loops inside it), a line is
    moved through a pointer to vectors of at most 16 bytes, not ``vloadN``/``vstoreN``, which
    Intel's CPU compiler gets wrong there; elsewhere, and where the only break is the loop's
    test at the start of its body (a ``while`` loop's), through ``vloadN``/``vstoreN``."""
    definition = lines_in_loops.definition(N=width, Any=elem.value)
    source = CFamilyEmitter(OpenCLDialect()).emit(definition).source
    assert f"vload{width}(k, x)" in source and ", i, y);" in source  # the loop run to its end
    assert f"vload{width}(i, x)" in source and ", k, y);" in source  # the break is its test
    assert f"(__global const {chunk}*)x + (" in source
    assert f"(__global {chunk}*)y + (j) * {count};" in source
    assert f"line[{count - 1}] = ({chunk})(" in source
    # the first loop's, the one whose break is its test, and the last one's
    assert source.count(f"vload{width}(") == 3 and source.count(f"vstore{width}(") == 3


def test_opencl_half_without_fp16_moves_lines_as_floats() -> None:
    storage_only = CFamilyEmitter(OpenCLDialect()).emit(_definition(Elem.F16, 8)).source
    assert "vload_half8(i, x)" in storage_only and "vstore_half8_rte((float8)(" in storage_only
    native = CFamilyEmitter(OpenCLDialect(frozenset({"fp16"}))).emit(_definition(Elem.F16, 8))
    assert "const half8 line = vload8(i, x);" in native.source


@pytest.mark.parametrize("width", WIDTHS)
def test_lines_of_every_supported_type_build_on_opencl(opencl_device, width: int) -> None:
    features = opencl_device.client.features()
    for elem in Elem:
        for k in (line_roundtrip, shared_line_roundtrip):
            definition = k.definition(N=width, Any=elem.value)
            if not features.supports(elem):
                with pytest.raises(UnsupportedFeature):
                    opencl_device.emit(definition)
                continue
            opencl_device.build(opencl_device.emit(definition))
