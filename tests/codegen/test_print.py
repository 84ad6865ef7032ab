"""print() on the C targets: one printf per record with each target's length modifiers, literal
text escaped for C, source NVRTC accepts; on OpenCL records that the host formats; and the same
text as the NumPy device on this machine's devices (printf writes to file descriptor 1, so the
tests read it with capfd)."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.codegen import CFamilyEmitter, Dialect
from ruda_core.codegen.abi import ArgKind
from ruda_core.ir import Elem, ExecutionMode, lower_bounds
from ruda_core.ir.printing import RECORD_TERMINATOR
from ruda_core.lang import (
    UNIT_POS,
    Array,
    ArrayArg,
    bf16,
    f16,
    f32,
    f64,
    i8,
    i64,
    kernel,
    u16,
    u64,
)
from ruda_core.runtime import RudaCount, RudaDim, UnsupportedFeature
from ruda_core.runtime.print_records import PrintTable
from ruda_cuda.dialect import CudaDialect
from ruda_opencl.dialect import OpenCLDialect

from .test_compile import _nvrtc_compile


@kernel
def print_every_type(x: Array[f32]):
    v = x[UNIT_POS]
    print(f"{i8(v)} {u16(v)} {i64(v):+d} {u64(v):x} {f16(v)} {v:.2f} {f64(v):e} {v > 0}")


@kernel
def print_bf16(x: Array[f32]):
    print(bf16(x[UNIT_POS]))


def _source(dialect: Dialect, k=print_every_type) -> str:
    return CFamilyEmitter(dialect).emit(lower_bounds(k.definition(), ExecutionMode.CHECKED)).source


def _printf_line(source: str) -> str:
    return next(line.strip() for line in source.splitlines() if "printf(" in line)


def test_cuda_passes_64_bit_values_as_long_long_and_floats_as_double():
    line = _printf_line(_source(CudaDialect(90)))
    assert line.startswith('printf("%d %u %+lld %llx %g %.2f %e %s\\n", (int)')
    assert line.endswith(' ? "True" : "False"));')
    assert "__half2float(" in line  # f16 printed through f32


def test_opencl_records_prints_for_the_host_instead_of_calling_printf():
    emitted = CFamilyEmitter(OpenCLDialect(frozenset({"fp64"}))).emit(
        lower_bounds(print_every_type.definition(), ExecutionMode.CHECKED)
    )
    assert "printf(" not in emitted.source
    # 3 header words; i8 u16 i64 u64 f16 f32 f64 bool as 1 1 2 2 1 1 2 1
    assert "atomic_add(&print_records[0], 14u)" in emitted.source
    assert [a.kind for a in emitted.args[-2:]] == [ArgKind.PRINT, ArgKind.PRINT_BASE]


def test_records_print_in_cube_then_unit_order_with_the_printf_text():
    table = PrintTable()
    table.register([("other kernel %d\n", (Elem.I32,))])
    base = table.register([("u=%u x=%g\n", (Elem.U32, Elem.F64)), ("%s!\n", (Elem.BOOL,))])
    x = np.array([2.5], np.float64).view(np.uint32)
    records = [
        [base, 1, 0, 7, *x],  # cube 1 first in the buffer: it prints after cube 0
        [base + 1, 0, 3, 1],  # unit 3 of cube 0 prints twice
        [base, 0, 3, 4294967295, *x],
    ]
    words = [w for r in records for w in r]
    buffer = np.array([len(words), 100, *words], np.uint32)
    # cube 0 before cube 1; unit 3's two records in the order it wrote them
    assert table.text(buffer) == ("True!\nu=4294967295 x=2.5\nu=7 x=2.5\n", 0)
    full = np.array([len(words), 6, *words], np.uint32)  # room for the first record only
    assert table.text(full) == ("u=7 x=2.5\n", len(words) - 6)


def test_the_records_that_fit_end_where_a_record_ran_past_the_capacity():
    """The record whose place starts within the capacity and ends past it is not written: its
    site word is the terminator, and what follows (a previous sync's records, say) is never
    read as records."""
    table = PrintTable()
    base = table.register([("u=%u\n", (Elem.U32,)), ("%s!\n", (Elem.BOOL,))])
    stale = [base + 1, 9, 9]  # words of an earlier round, left in the buffer
    words = [base, 0, 1, 5, RECORD_TERMINATOR, *stale]
    buffer = np.array([12, 7, *words], np.uint32)  # 12 words asked, room for 7
    assert table.text(buffer) == ("u=5\n", 5)


@kernel
def print_hello(n: u16):
    print("hello", n)


def test_a_target_without_printf_refuses_print_naming_the_kernel():
    with pytest.raises(UnsupportedFeature, match=r"kernel 'print_hello'.*C99 has no printf"):
        _source(Dialect(), print_hello)


@pytest.mark.parametrize("arch", [60, 90])
def test_print_of_every_type_compiles_with_nvrtc(arch: int) -> None:
    for k in (print_every_type, print_bf16):
        source = _source(CudaDialect(arch), k)
        ok, log = _nvrtc_compile(source, arch)
        assert ok, f"NVRTC rejected {k.name} for sm_{arch}:\n{log}\n{source}"


@kernel
def print_odd_text(x: Array[f32]):
    if UNIT_POS < 2:
        print('100% "quoted" \\ back??=slash\tté ≥', x[UNIT_POS], "%d %s", end="|\n")


def test_literal_text_prints_byte_for_byte_as_on_the_reference(device, capfd):
    data = np.array([1.5, -0.25], np.float32)

    def printed(client) -> list[str]:
        capfd.readouterr()
        x = client.create_from_slice(data)
        print_odd_text.launch(client, RudaCount(1), RudaDim(4), ArrayArg(x, 2))
        client.sync().result()
        return sorted(capfd.readouterr().out.splitlines())

    want = printed(ruda.client("cpu"))
    assert want == [
        '100% "quoted" \\ back??=slash\tté ≥ -0.25 %d %s|',
        '100% "quoted" \\ back??=slash\tté ≥ 1.5 %d %s|',
    ]
    assert printed(device.client) == want
