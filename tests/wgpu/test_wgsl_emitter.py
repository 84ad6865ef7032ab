"""The WGSL emitter without a device: what a module declares, how values WGSL lacks are held,
and what it refuses, naming the kernel and the capability."""

from __future__ import annotations

import re

import pytest

from ruda_core.errors import UnsupportedFeature
from ruda_core.ir import Const, Elem, Op, lower_bounds
from ruda_core.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    Comptime,
    Numeric,
    SharedMemory,
    atomic_add,
    f32,
    floor,
    i8,
    kernel,
    plane_sum,
    u8,
    u32,
)
from ruda_core.runtime import CompileOptions, ExecutionMode
from ruda_core.testing.irbuild import KernelBuilder, const
from ruda_wgpu.compiler import WebGpuCompiler, WgslTarget
from ruda_wgpu.wgsl import WgslEmitter
from ruda_wgpu.wgsl.dialect import WgslDialect
from ruda_wgpu.wgsl.helpers import HELPERS, referenced

ALL = "bool,i8,i16,i32,i64,u8,u16,u32,u64,f16,f32"


@kernel
def scale_bytes(x: Array[u8], out: Array[i8], k: u32):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = i8(x[i] * u8(k))


@kernel
def staged_sum(x: Array[f32], out: Array[f32], n: u32):
    smem = SharedMemory(f32, n)
    smem[UNIT_POS] = x[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = smem[UNIT_POS] + f32(1.5)


@kernel
def add_lines(a: Array[Numeric], b: Array[Numeric], c: Array[Numeric], N: Comptime[int]):
    i = ABSOLUTE_POS
    c.store_line(i, a.load_line(i, N) + b.load_line(i, N))
    c[i] = a[i]  # a scalar access to an array bound as vectors


@kernel
def products(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    zero = floor(f32(0.25))  # a compiler can evaluate it: 0
    scale = x[0]
    out[i] = x[i] * zero
    out[i + 1] = x[i] * scale


@kernel
def lines_and_atomics(a: Array[u32], b: Array[u32], total: Array[u32]):
    i = ABSOLUTE_POS
    b.store_line(i, a.load_line(i, 2))
    total.store_line(i, a.load_line(i, 4))
    atomic_add(total, 0, u32(1))


def _source(kern, elems: str = ALL, mode: ExecutionMode = ExecutionMode.CHECKED, **bound) -> str:
    definition = lower_bounds(kern.definition(**bound), mode)
    target = WgslTarget(tuple(Elem(e) for e in elems.split(",")))
    options = CompileOptions(plane_dim=8, target=target)
    return WebGpuCompiler().compile(definition, options, mode).source


@kernel
def plane_totals(x: Array[u32], out: Array[u32]):
    out[ABSOLUTE_POS] = plane_sum(x[ABSOLUTE_POS])


def test_only_a_kernel_with_plane_operations_binds_the_fault_word_where_loops_are_not_stopped():
    """The word a kernel reports into costs a binding, which kernels without plane operations
    keep for their arrays (off lavapipe, which stops loops)."""
    planes, plain = _source(plane_totals), _source(scale_bytes)
    assert "@binding(3) var<storage, read_write> ruda_turned" in planes
    assert "@builtin(subgroup_size) sg_width: u32" in planes
    assert "ruda_turned" not in plain and "@binding(3)" not in plain
    assert "subgroup_size" not in plain


@kernel
def named_as_the_check(x: Array[u32], out: Array[u32]):
    sg_lane = x[ABSOLUTE_POS]
    sg_width = plane_sum(sg_lane)
    out[ABSOLUTE_POS] = sg_width


def test_locals_named_as_the_subgroup_checks_values_are_renamed():
    source = _source(named_as_the_check)
    assert source.count("sg_width: u32") == source.count("let sg_lane =") == 1  # the check's
    assert "var sg_lane:" not in source and "var sg_width:" not in source


def test_bytes_are_packed_words_changed_by_atomics_and_narrow_values_wrap():
    source = _source(scale_bytes)
    assert "var<storage, read_write> x: array<atomic<u32>>;" in source
    assert "atomicAnd(&out[" in source and "atomicOr(&out[" in source
    assert "& 255u)" in source  # a u8 product wraps to its width
    assert "<< 24u) >> 24u)" in source  # an i8 keeps its sign in 32 bits


def test_only_products_with_a_factor_a_compiler_can_evaluate_test_for_a_zero():
    source = _source(products, mode=ExecutionMode.UNCHECKED)
    assert source.count("ruda_mul_f32(") == 2  # the helper and the product by `zero`
    assert "= ruda_mul_f32(_t2, zero);" in source
    assert " * scale)" in source  # a loaded factor multiplies as it is


def test_shared_memory_sized_at_launch_is_an_override_constant():
    source = _source(staged_sum)
    assert "override RUDA_SHARED_0: u32 = 1u;" in source
    assert "var<workgroup> smem: array<f32, RUDA_SHARED_0>;" in source
    assert "@compute @workgroup_size(WX, WY, WZ)" in source


def test_a_kernel_of_a_type_the_adapter_lacks_is_refused_naming_it():
    with pytest.raises(UnsupportedFeature, match=r"kernel 'scale_bytes'.*no u8"):
        _source(scale_bytes, elems="bool,i32,u32,f32")


@kernel
def scaled(x: Array[f32], k: Numeric):
    x[ABSOLUTE_POS] = f32(k)


@pytest.mark.parametrize("elem", ["bf16", "f64"])
def test_a_scalar_of_a_type_wgsl_lacks_is_refused_naming_the_kernel(elem):
    with pytest.raises(UnsupportedFeature, match=rf"kernel 'scaled'.*no {elem} type"):
        _source(scaled, elems=f"{ALL},{elem}", Numeric=elem)


@pytest.mark.parametrize(
    ("value", "elem", "text"),
    [
        (-(2**31), Elem.I32, "(-2147483647i - 1i)"),
        (float("inf"), Elem.F32, "bitcast<f32>(2139095040u)"),
        (-1.5, Elem.F32, "-1.5f"),
        (3, Elem.U64, "3lu"),
        (0.1, Elem.F16, "0.0999755859375h"),
    ],
)
def test_literals_wgsl_cannot_spell_directly(value, elem, text):
    assert WgslDialect(frozenset(Elem)).literal(value, elem) == text


@pytest.mark.parametrize(("elem", "width"), [("f32", 4), ("i32", 2), ("u32", 4), ("f16", 2)])
def test_arrays_accessed_by_lines_of_2_or_4_are_bound_as_vectors_and_moved_whole(elem, width):
    source = _source(add_lines, N=width, Numeric=elem)
    vector = f"vec{width}<{elem}>"
    assert f"var<storage, read> a: array<{vector}>;" in source
    assert f"var<storage, read_write> c: array<{vector}>;" in source
    assert f"let a_at = P[1][0] / {width}u;" in source  # record word 4; the offset counts vectors
    assert "= a[a_at + i];" in source  # one load of a whole line
    assert "c[c_at + i] = _t" in source  # one store of a whole line
    assert f"c[c_at + i / {width}u][i % {width}u] =" in source  # a scalar store: a component


def test_lines_of_8_lines_of_two_widths_and_atomic_arrays_stay_scalar_accesses():
    assert "c: array<f32>;" in _source(add_lines, N=8, Numeric="f32")
    source = _source(lines_and_atomics)
    assert "a: array<u32>;" in source  # lines of 2 and of 4
    assert "b: array<vec2<u32>>;" in source
    assert "total: array<atomic<u32>>;" in source


def test_a_cast_of_a_constant_is_the_literal_of_its_value_cast_as_the_ir_casts() -> None:
    k = KernelBuilder("casts")
    small, flags = k.array("small", Elem.I32), k.array("flags", Elem.BOOL)
    for j, (value, source, target) in enumerate(
        [(-1.7, Elem.F32, Elem.I32), (300, Elem.I32, Elem.U8), (200, Elem.I32, Elem.I8)]
    ):
        narrow = k.let(Op.CAST, target, const(value, source))
        k.do(Op.INDEX_ASSIGN, None, small, const(j, Elem.U32), k.let(Op.CAST, Elem.I32, narrow))
    truth = k.let(Op.CAST, Elem.BOOL, const(3, Elem.I32))
    k.do(Op.INDEX_ASSIGN, None, flags, const(0, Elem.U32), truth)
    definition = lower_bounds(k.build(), ExecutionMode.UNCHECKED)
    source = WgslEmitter(WgslDialect(frozenset(Elem))).emit(definition)
    for literal in ("= -1i;", "= 44u;", "= -56i;", "= true;"):
        assert literal in source, literal
    assert Const(-1.7, Elem.F32).cast(Elem.U8) == Const(255, Elem.U8)


def test_every_helper_the_dialect_calls_is_defined_with_the_helpers_it_calls() -> None:
    """The helpers are WGSL text read by name: a name the dialect writes that the text lacks
    would only fail when a kernel using it is built on a device."""
    d = WgslDialect(frozenset(Elem), plane_width=32)
    calls = [d.math_call(op.value, Elem.F32, ["a", "b"]) for op in Op]
    calls += [d.narrow(Elem.F16, "x", Elem.F32)]
    calls += [d.int_native(op, e) or "" for op in Op for e in Elem if e.is_int]
    called = {n for text in calls for n in re.findall(r"\b(ruda_\w+)\(", text)}
    assert {"ruda_fmod_f32", "ruda_round_f16", "ruda_saturating_add_u64"} <= called
    assert called <= set(HELPERS)
    for name, text in HELPERS.items():
        assert re.match(rf"(var<\w+> \w+: [^;\n]+;\n)?fn {name}\(", text), name
        assert text.endswith("\n}")
        assert {n for n in re.findall(r"\b(ruda_\w+)\(", text)} <= set(HELPERS)
    fmod = "\n".join(referenced(["ruda_fmod_f32(a, b)"]))  # and the division it calls
    assert "fn ruda_division_f32(" in fmod and fmod.count("% n;") == 36  # written out, no loop
    assert "loop" not in fmod
