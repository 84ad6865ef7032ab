"""Unit tests of the C-family emitter without a device: determinism, names, the argument list,
capability errors, literals and the compilers."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from ruda_core.codegen import ArgKind, CFamilyEmitter, Dialect, NameTable
from ruda_core.ir import REPORT_PARAM, Elem, KernelDefinition, Op
from ruda_core.runtime import CompilationError, ExecutionMode, UnsupportedFeature
from ruda_core.runtime.compiler import CompiledKernel, CompileOptions
from ruda_core.testing.irbuild import KernelBuilder, const
from ruda_cuda.compiler import CudaCompiler
from ruda_cuda.dialect import CudaDialect, CudaTarget
from ruda_opencl.compiler import OpenCLCompiler
from ruda_opencl.dialect import OpenCLDialect
from ruda_opencl.target import Capability, OpenCLTarget

from .kernels import (
    FILE,
    KERNELS,
    atomics,
    axpy,
    barriers_and_counters,
    half_and_bool,
    plane_lanes,
    plane_ops,
    reserved_names,
    tensor_validate,
)

E = Elem
FULL_OPENCL = OpenCLDialect(
    frozenset({"fp16", "fp64", "int64_atomics", "subgroups", "subgroup_shuffle"})
)


@pytest.mark.parametrize("name", list(KERNELS))
def test_emission_is_deterministic(name: str) -> None:
    for make in (lambda: CudaDialect(90), lambda: FULL_OPENCL):
        first = CFamilyEmitter(make()).emit(KERNELS[name]())
        second = CFamilyEmitter(make()).emit(KERNELS[name]())
        assert first == second


def test_reserved_names_are_mangled_and_others_kept() -> None:
    cuda = CFamilyEmitter(CudaDialect()).emit(reserved_names())
    assert cuda.entrypoint == "kernel"
    for decl in (
        "int* int_,",
        "int new_,",
        "int min_ = 0;",
        "int global = 0;",
        "int UNIT_POS_ = 0;",
    ):
        assert decl in cuda.source
    assert "unsigned int int_len\n" in cuda.source and "int int_len_ = 0;" in cuda.source
    opencl = CFamilyEmitter(OpenCLDialect()).emit(reserved_names())
    assert opencl.entrypoint == "kernel_"
    assert "__kernel void kernel_(" in opencl.source and "int global_ = 0;" in opencl.source
    assert "int new," in opencl.source  # not reserved in OpenCL C


def test_name_table_rules() -> None:
    names = NameTable(frozenset({"int", "min"}), ("get_",))
    claimed = [
        names.claim(w)
        for w in ("x", "x", "int", "int", "__x", "_Up", "ruda_h", "a-b", "2d", "get_id", "min")
    ]
    assert claimed == [
        "x",
        "x_",
        "int_",
        "int_1",
        "v__x",
        "v_Up",
        "vruda_h",
        "a_b",
        "v2d",
        "vget_id",
        "min_",
    ]


def test_arguments_follow_the_abi() -> None:
    defn = tensor_validate()
    args = CFamilyEmitter(CudaDialect()).arguments(defn)
    assert [(a.name, a.kind, a.ctype, a.index) for a in args] == [
        ("t", ArgKind.BUFFER, "const double* __restrict__", 0),
        ("out", ArgKind.BUFFER, "double*", 1),
        ("_ruda_report", ArgKind.BUFFER, "unsigned int*", 2),
        ("t_len", ArgKind.METADATA, "unsigned int", 0),
        ("out_len", ArgKind.METADATA, "unsigned int", 1),
        ("_ruda_report_len", ArgKind.METADATA, "unsigned int", 2),
        ("t_shape0", ArgKind.METADATA, "unsigned int", 3),
        ("t_shape1", ArgKind.METADATA, "unsigned int", 4),
        ("t_stride0", ArgKind.METADATA, "unsigned int", 5),
        ("t_stride1", ArgKind.METADATA, "unsigned int", 6),
    ]
    opencl = CFamilyEmitter(OpenCLDialect(frozenset({"fp64"}))).emit(defn)
    kinds = [a.kind for a in opencl.args[:6]]
    assert kinds == [ArgKind.BUFFER, ArgKind.OFFSET] * 3
    assert opencl.args[1].ctype == "ulong" and opencl.args[1].dtype == np.uint64
    assert opencl.args == CFamilyEmitter(OpenCLDialect(frozenset({"fp64"}))).arguments(defn)


def test_scalar_and_buffer_dtypes_per_dialect() -> None:
    defn = half_and_bool()
    storage_only = {
        a.name: (a.ctype, a.dtype) for a in CFamilyEmitter(OpenCLDialect()).emit(defn).args
    }
    assert storage_only["h"] == ("__global half*", np.float16)
    assert storage_only["flags"] == ("__global uchar*", np.bool_)
    assert storage_only["scale"] == ("float", np.float32)
    assert storage_only["enable_arg"] == ("uchar", np.uint8)
    native = {a.name: (a.ctype, a.dtype) for a in CFamilyEmitter(FULL_OPENCL).emit(defn).args}
    assert native["scale"] == ("half", np.float16)
    cuda = {a.name: (a.ctype, a.dtype) for a in CFamilyEmitter(CudaDialect()).emit(defn).args}
    assert cuda["enable"] == ("bool", np.bool_) and cuda["scale"] == ("__half", np.float16)
    k = KernelBuilder("bf16", file=FILE, line=1)
    x = k.array("x", E.BF16)
    k.do(Op.INDEX_ASSIGN, None, x, const(0, E.U32), const(1.5, E.BF16))
    (arg, _) = CFamilyEmitter(CudaDialect()).emit(k.build()).args
    assert (arg.ctype, arg.dtype) == ("__nv_bfloat16*", np.uint16)


def _f64_kernel() -> KernelDefinition:
    k = KernelBuilder("needs_fp64", file=FILE, line=7)
    x = k.array("x", E.F64)
    k.do(Op.INDEX_ASSIGN, None, x, const(0, E.U32), const(1.0, E.F64))
    return k.build()


@pytest.mark.parametrize(
    ("dialect", "make", "needle"),
    [
        (OpenCLDialect(), _f64_kernel, "cl_khr_fp64"),
        (OpenCLDialect(frozenset({"fp64"})), atomics, "cl_khr_int64_base_atomics"),
        (OpenCLDialect(frozenset({"subgroups"})), plane_ops, "cl_khr_subgroup_shuffle"),
        (OpenCLDialect(frozenset({"subgroups"})), plane_lanes, "cl_khr_subgroup_shuffle"),
        (
            OpenCLDialect(frozenset({"work_group_collectives"})),
            barriers_and_counters,
            "__opencl_c_atomic_scope_device",
        ),
    ],
)
def test_missing_capability_names_kernel_and_extension(dialect: Dialect, make, needle: str) -> None:
    definition = make()
    with pytest.raises(UnsupportedFeature, match=needle) as info:
        CFamilyEmitter(dialect).emit(definition)
    assert f"kernel '{definition.name}'" in str(info.value)


def test_bf16_without_intel_bfloat16_is_refused_with_the_location() -> None:
    k = KernelBuilder("brain", file=FILE, line=42)
    x = k.array("x", E.BF16)
    k.do(Op.INDEX_ASSIGN, None, x, const(0, E.U32), const(1.5, E.BF16))
    with pytest.raises(
        UnsupportedFeature, match=r"kernel 'brain' \(/src/kernels.py:42\).*cl_intel_bfloat16"
    ):
        CFamilyEmitter(OpenCLDialect()).emit(k.build())


def test_bf16_is_ushort_bits_computed_in_float_and_rounded_once() -> None:
    k = KernelBuilder("brain", file=FILE, line=1)
    x = k.array("x", E.BF16)
    d = k.array("d", E.F64, read_only=True)
    n = k.array("n", E.I32, read_only=True)
    i = const(0, E.U32)
    wide = k.let(Op.CAST, E.BF16, k.let(Op.INDEX, E.F64, d, i))
    whole = k.let(Op.CAST, E.BF16, k.let(Op.INDEX, E.I32, n, i))
    k.do(Op.INDEX_ASSIGN, None, x, i, k.let(Op.ADD, E.BF16, wide, whole))
    emitted = CFamilyEmitter(OpenCLDialect(frozenset({"bf16", "fp64"}))).emit(k.build())
    assert emitted.args[0].ctype == "__global ushort*" and emitted.args[0].dtype == np.uint16
    source = emitted.source
    assert "return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);" in source
    # f64 and i32 are truncated to float with a sticky bit, then rounded once
    assert "ruda_bf16_round_odd(convert_float_rtz(_t1), (double)convert_float_rtz(_t1)" in source
    assert "ruda_bf16_round_odd(convert_float_rtz(_t3), (int)convert_float_rtz(_t3)" in source
    assert "_t5 = ruda_bf16_round(_t2 + _t4);\n    x[0u] = ruda_bf16_to_bits(_t5);" in source


def test_bf16_constants_that_are_bf16_values_are_written_as_floats() -> None:
    """bf16 computes as float in OpenCL C: a constant that is a bf16 value needs no rounding
    (a held row's zero initialisers were hundreds of helper calls), one that is not is rounded."""
    dialect = OpenCLDialect(frozenset({"bf16"}))
    assert [dialect.literal(v, E.BF16) for v in (0.0, -2.5, 1, 65280.0)] == [
        "0.0f",
        dialect.float_negation(E.F32, "2.5f"),
        "1.0f",
        "65280.0f",
    ]
    assert dialect.literal(0.1, E.BF16) == "ruda_bf16_round(0.1f)"


def test_f16_floor_div_and_mod_are_computed_in_float_even_with_half_arithmetic() -> None:
    k = KernelBuilder("halves", file=FILE, line=1)
    x = k.array("x", E.F16)
    a, b = (k.let(Op.INDEX, E.F16, x, const(j, E.U32)) for j in (0, 1))
    k.do(Op.INDEX_ASSIGN, None, x, const(2, E.U32), k.let(Op.FLOOR_DIV, E.F16, a, b))
    k.do(Op.INDEX_ASSIGN, None, x, const(3, E.U32), k.let(Op.MOD, E.F16, a, b))
    source = CFamilyEmitter(FULL_OPENCL).emit(k.build()).source
    q = "(float)_t1 / (float)_t2"
    floor = f"isfinite({q}) ? floor({q}) : ({q})"  # an infinity or NaN apart (PoCL 5)
    assert f"_t3 = (half)({floor});" in source
    assert f"_t4 = (half)((float)_t1 - (({floor}) * (float)_t2));" in source


def test_compilers_return_compiled_kernels() -> None:
    defn = tensor_validate()
    compiled = OpenCLCompiler().compile(
        defn, CompileOptions(target=OpenCLTarget((Capability.FP64,))), ExecutionMode.VALIDATE
    )
    assert isinstance(compiled, CompiledKernel)
    assert (compiled.entrypoint, compiled.mode, compiled.plane_dim) == (
        "tensor_validate",
        ExecutionMode.VALIDATE,
        32,
    )
    buffers = {a.name: a.index for a in compiled.args if a.kind is ArgKind.BUFFER}
    assert buffers[REPORT_PARAM] == 2
    assert compiled.source.startswith("// Kernel tensor_validate from /src/kernels.py:70")
    blocks = KERNELS["block_sum"]()
    cuda = CudaCompiler().compile(
        blocks, CompileOptions(target=CudaTarget(90)), ExecutionMode.UNCHECKED
    )
    assert cuda.shared_bytes == 256 * 4
    assert cuda.args == CFamilyEmitter(CudaDialect(90)).arguments(blocks)
    with pytest.raises(UnsupportedFeature, match="cl_khr_fp64"):
        OpenCLCompiler().compile(defn, CompileOptions(), ExecutionMode.VALIDATE)


def test_options_parsing() -> None:
    assert (
        CudaDialect.from_options(CompileOptions(target=CudaTarget.from_name("sm_90a"))).arch == 90
    )
    assert CudaTarget.from_name("compute_80").arch == 80
    assert CudaDialect.from_options(CompileOptions()).arch == 52
    with pytest.raises(ValueError, match="CUDA architecture 'hopper'"):
        CudaTarget.from_name("hopper")
    with pytest.raises(TypeError, match="OpenCLTarget, not the CudaTarget"):
        CudaDialect.from_options(CompileOptions(target=OpenCLTarget()))
    opts = CompileOptions(plane_dim=16, target=OpenCLTarget((Capability.FP64,)))
    dialect = OpenCLDialect.from_options(opts)
    assert dialect.capabilities == {"fp64"} and dialect.plane_dim() == "1u"  # no subgroups
    with_subgroups = CompileOptions(16, OpenCLTarget((Capability.INTEL_SUBGROUPS,)))
    assert OpenCLDialect.from_options(with_subgroups).plane_dim() == "16u"
    with pytest.raises(ValueError, match="unknown OpenCL capabilities"):
        OpenCLDialect(frozenset({"fp128"}))
    extensions = (
        "cl_khr_fp64 cl_khr_int64_base_atomics cl_khr_int64_extended_atomics cl_khr_subgroups"
    )
    assert OpenCLTarget.offered(extensions).capabilities == (
        Capability.FP64,
        Capability.INT64_ATOMICS,
        Capability.SUBGROUPS,
    )
    unordered = OpenCLTarget((Capability.SUBGROUPS, Capability.FP64, Capability.FP64))
    assert unordered == OpenCLTarget((Capability.FP64, Capability.SUBGROUPS))  # a stable key


def test_literals_are_exact() -> None:
    cuda, opencl = CudaDialect(), OpenCLDialect(frozenset({"fp64"}))
    assert cuda.literal(-(2**31), E.I32) == "(-2147483647 - 1)"
    assert opencl.literal(-(2**63), E.I64) == "(-9223372036854775807L - 1L)"
    assert cuda.literal(2**64 - 1, E.U64) == "18446744073709551615ULL"
    assert cuda.literal(float(np.float32(0.1)), E.F32) == "0.1f"
    assert opencl.literal(0.1, E.F64) == "0.1"
    assert cuda.literal(float("inf"), E.F32) == "__uint_as_float(0x7f800000u)"
    assert opencl.literal(float("-inf"), E.F32) == opencl.float_negation(E.F32, "INFINITY")
    assert opencl.literal(float("nan"), E.F64) == "((double)NAN)"
    assert cuda.literal(0.5, E.F16) == "__float2half_rn(0.5f)"
    assert OpenCLDialect().literal(0.5, E.F16) == "0.5f"


def test_opencl_writes_negative_float_constants_as_their_magnitudes_negated() -> None:
    """Intel's CPU compiler makes a negation of a product or quotient by -1 (or of -0.0 minus
    a value) and gets one live across a barrier wrong: no negative constant is in sight."""
    full, storage = OpenCLDialect(frozenset({"fp16", "fp64"})), OpenCLDialect()
    for elem in (E.F16, E.F32, E.F64):
        for value in (1.0, 0.0):
            negated = full.float_negation(elem, full.literal(value, elem))
            assert full.literal(-value, elem) == negated
    assert storage.literal(-0.5, E.F16) == storage.float_negation(E.F32, "0.5f")
    assert "-" not in full.literal(-3.25, E.F64) and "-" not in full.literal(-np.inf, E.F32)
    assert full.literal(0.0, E.F32) == "0.0f" and full.literal(2.0, E.F64) == "2.0"


def test_source_locations_appear_as_comments() -> None:
    source = CFamilyEmitter(CudaDialect()).emit(axpy()).source
    assert source.splitlines()[0] == "// Kernel axpy from /src/kernels.py:10"
    assert "    // kernels.py:11\n    i = ABSOLUTE_POS;" in source


def test_report_without_its_parameter_is_a_compilation_error() -> None:
    k = KernelBuilder("broken", file=FILE, line=3)
    k.array("x", E.F32)
    k.do(Op.REPORT_OOB, None, const(0, E.U32), const(1, E.U64), const(2, E.U64))
    with pytest.raises(CompilationError, match=r"broken.*_ruda_report") as info:
        CFamilyEmitter(CudaDialect()).emit(k.build())
    assert (info.value.file, info.value.line) == ("/src/kernels.py", 3)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_default_dialect_is_plain_c99(tmp_path) -> None:
    k = KernelBuilder("plain", file=FILE, line=1)
    x = k.array("x", E.I32)
    n = k.scalar("n", E.I64)
    i = k.local("i", E.U32)
    with k.range_(i, const(0, E.U32), const(10, E.U32), 3):
        v = k.let(Op.FLOOR_DIV, E.I32, k.let(Op.INDEX, E.I32, x, i), const(-2, E.I32))
        k.do(
            Op.INDEX_ASSIGN,
            None,
            x,
            i,
            k.let(Op.CLAMP, E.I32, v, const(-5, E.I32), const(5, E.I32)),
        )
    k.let(Op.MOD, E.I64, n, const(7, E.I64))
    k.let(Op.ROUND, E.F32, k.let(Op.RSQRT, E.F32, const(2.0, E.F32)))
    path = tmp_path / "kernel.c"
    path.write_text(CFamilyEmitter(Dialect()).emit(k.build()).source)
    result = subprocess.run(
        ["cc", "-std=c99", "-Wall", "-Werror", "-Wno-unused", "-fsyntax-only", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
