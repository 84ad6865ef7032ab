"""print() on the NumPy device: the exact text of every type and spec, in cube then unit order,
written to sys.stdout when the launch runs and visible by the next sync or read."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    ArrayArg,
    Comptime,
    Numeric,
    f16,
    f32,
    func,
    i64,
    kernel,
    u32,
)
from ruda_core.runtime import RudaCount, RudaDim
from ruda_core.testing.runner import read_array


@kernel
def who_am_i(out: Array[u32]):
    print("cube", RUDA_POS, "unit", UNIT_POS, sep="=")
    if UNIT_POS == 0:
        out[RUDA_POS] = RUDA_POS


def test_units_print_in_cube_then_unit_order_by_the_next_read(cpu, capsys):
    out = cpu.empty(4 * 3)
    who_am_i.launch(cpu, RudaCount(3), RudaDim(4), ArrayArg(out, 3))
    read_array(cpu, out, np.uint32)  # a read is a sync point: the output is there
    want = [f"cube={c}=unit={u}" for c in range(3) for u in range(4)]
    assert capsys.readouterr().out.splitlines() == want


@kernel
def twice_per_unit(n: u32):
    for k in range(n):
        print(f"unit {UNIT_POS_X},{UNIT_POS_Y} step {k}")
    print("done", UNIT_POS)


def test_each_units_records_stay_together_in_program_order(cpu, capsys):
    twice_per_unit.launch(cpu, RudaCount(1), RudaDim(2, 2), 2)
    cpu.sync().result()
    want = []
    for unit in range(4):
        x, y = unit % 2, unit // 2
        want += [f"unit {x},{y} step 0", f"unit {x},{y} step 1", f"done {unit}"]
    assert capsys.readouterr().out.splitlines() == want


@kernel
def print_some(x: Array[i64]):
    i = ABSOLUTE_POS
    if i >= x.len():
        return
    if x[i] % 3 == 0:
        print(i, "divides by three:", x[i])
    elif x[i] < 0:
        print(i, "is negative")


def test_units_on_a_path_not_taken_print_nothing(cpu, capsys):
    values = np.array([3, -1, 4, 9, -7, 5, 0], np.int64)
    x = cpu.create_from_slice(values)
    print_some.launch(cpu, RudaCount(2), RudaDim(8), ArrayArg(x, len(values)))
    cpu.sync().result()
    assert capsys.readouterr().out == (
        "0 divides by three: 3\n1 is negative\n3 divides by three: 9\n4 is negative\n"
        "6 divides by three: 0\n"
    )


@kernel
def print_every_100k(n: u32):
    i = ABSOLUTE_POS
    if i < n and i % 100000 == 0:
        print(i)


def test_order_holds_across_the_batches_of_a_large_launch(cpu, capfd):
    units = 1000 * 256  # more lanes than one batch holds
    print_every_100k.launch(cpu, RudaCount(1000), RudaDim(256), units)
    cpu.sync().result()
    assert capfd.readouterr().out == "0\n100000\n200000\n"  # capfd sees sys.stdout too


@kernel
def print_elem(x: Array[Numeric]):
    i = ABSOLUTE_POS
    if i < x.len():
        print(x[i])


INT_VALUES = {
    Elem.I8: ([-128, 127, 0], ["-128", "127", "0"]),
    Elem.U8: ([255, 0], ["255", "0"]),
    Elem.I16: ([-32768, 32767], ["-32768", "32767"]),
    Elem.U16: ([65535], ["65535"]),
    Elem.I32: ([-(2**31), 2**31 - 1], ["-2147483648", "2147483647"]),
    Elem.U32: ([2**32 - 1], ["4294967295"]),
    Elem.I64: ([-(2**63), 2**63 - 1], ["-9223372036854775808", "9223372036854775807"]),
    Elem.U64: ([2**64 - 1], ["18446744073709551615"]),
    Elem.F16: ([0.1, 65504.0, -0.0, 6.1035156e-05], ["0.0999756", "65504", "-0", "6.10352e-05"]),
    Elem.F32: (
        [0.1, -2.5, 1e-7, 123456789.0, np.inf, -np.inf, 3.0],
        ["0.1", "-2.5", "1e-07", "1.23457e+08", "inf", "-inf", "3"],
    ),
    Elem.F64: ([1e300, 1 / 3, 5e-324, -0.0], ["1e+300", "0.333333", "4.94066e-324", "-0"]),
}


@pytest.mark.parametrize("elem", list(INT_VALUES), ids=str)
def test_each_type_prints_its_documented_default_text(cpu, capsys, elem):
    values, want = INT_VALUES[elem]
    data = np.array(values, elem.numpy)
    x = cpu.create_from_slice(data)
    print_elem.launch(cpu, RudaCount(1), RudaDim(8), ArrayArg(x, len(data), elem=elem))
    cpu.sync().result()
    assert capsys.readouterr().out.splitlines() == want


@kernel
def print_nans(x: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        print(f"[{x[i]}|{x[i]:8.2f}|{f16(x[i])}]")


def test_a_nan_of_either_sign_prints_nan(cpu, capsys):
    data = np.array([np.nan, -np.nan], np.float32)
    assert np.signbit(data).tolist() == [False, True]
    print_nans.launch(cpu, RudaCount(1), RudaDim(2), ArrayArg(cpu.create_from_slice(data), 2))
    cpu.sync().result()
    assert capsys.readouterr().out == "[nan|     nan|nan]\n" * 2


@kernel
def print_specs(x: Array[f32], n: Array[i64], u: Array[u32]):
    print(f"{x[0]:8.3f}|{x[0]:<9.2e}|{x[0]:+G}|{x[0]:.1f}|{x[0]: .0f}|{x[0]:010.4g}|")
    print(f"{n[0]:5d}|{n[0]:<5d}|{n[0]:+d}|{n[0]: d}|{n[0]:06d}|{n[0]:>4}|")
    print(f"{u[0]:x}|{u[0]:X}|{u[0]:o}|{u[0]:08x}|{u[0]:<6d}|{u[0] > 3}|{u[0] > 300}")


def test_format_specs_print_as_printf_and_python_do(cpu, capsys):
    x = cpu.create_from_slice(np.array([-3.14159], np.float32))
    n = cpu.create_from_slice(np.array([-42], np.int64))
    u = cpu.create_from_slice(np.array([255], np.uint32))
    print_specs.launch(
        cpu, RudaCount(1), RudaDim(1), ArrayArg(x, 1), ArrayArg(n, 1), ArrayArg(u, 1)
    )
    cpu.sync().result()
    fx, fn = float(np.float32(-3.14159)), -42
    want = [
        f"{fx:8.3f}|{fx:<9.2e}|{fx:+G}|{fx:.1f}|{fx: .0f}|{fx:010.4g}|",
        f"{fn:5d}|{fn:<5d}|{fn:+d}|{fn: d}|{fn:06d}|{fn:>4}|",
        "ff|FF|377|000000ff|255   |True|False",
    ]
    assert capsys.readouterr().out.splitlines() == want


@func
def report(label: Comptime[str], v: f32):
    print(f"{label}: {v:.2f} ({100 * v:.0f}%)", end=" <\n")


@kernel
def print_literals(x: Array[f32], SCALE: Comptime[float], N: Comptime[int]):
    if UNIT_POS == 0:
        print("Σ ≥ 100%?", N, SCALE, f"{SCALE:.3f}", True, None, sep=" | ")
        report("ratio", x[0] * SCALE)
        print()


def test_compile_time_values_are_python_text_and_percent_signs_are_literal(cpu, capsys):
    x = cpu.create_from_slice(np.array([0.25], np.float32))
    print_literals.launch(cpu, RudaCount(1), RudaDim(4), ArrayArg(x, 1), SCALE=1.5, N=7)
    cpu.sync().result()
    out = capsys.readouterr().out
    assert out == "Σ ≥ 100%? | 7 | 1.5 | 1.500 | True | None\nratio: 0.38 (38%) <\n\n"
