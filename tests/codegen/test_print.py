"""print() on the C targets: one printf per record with each target's length modifiers, literal
text escaped for C, source NVRTC accepts, and the same text as the NumPy device on this
machine's devices (printf writes to file descriptor 1, so the tests read it with capfd)."""

from __future__ import annotations

import numpy as np
import pytest

import ruda_core as ruda
from ruda_core.codegen import CFamilyEmitter, Dialect
from ruda_core.ir import ExecutionMode, lower_bounds
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


def test_opencl_uses_l_for_64_bit_values_and_doubles():
    line = _printf_line(_source(OpenCLDialect(frozenset({"fp64"}))))
    assert 'printf("%d %u %+ld %lx %g %.2f %le %s\\n", (int)' in line
    assert "%ll" not in line  # reserved in OpenCL C


def test_opencl_passes_bools_as_string_literals_only():
    line = _printf_line(_source(OpenCLDialect(frozenset({"fp64"}))))
    # OpenCL C allows only literal strings for %s: one call for each value of the bool
    assert line.count("printf(") == 2 and '"True"));' not in line
    assert line.endswith('"False"));') and ', "True") :' in line
    assert '? "True" : "False"' not in line


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
