"""``print()`` in kernels on every device: each unit's records are the reference device's, text
for text, for every element type and format spec; units may interleave, so lines are compared
sorted. Output is on file descriptor 1 (C targets' ``printf``) or ``sys.stdout`` (the NumPy
device and the drivers that write records), and visible once a sync or read of the launch's
stream has completed, even where an earlier sync's future was never waited for, or once the
interpreter has exited."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem
from ruda_core.lang import (
    ABSOLUTE_POS,
    RUDA_POS,
    UNIT_POS,
    Array,
    ArrayArg,
    ElemVar,
    Float,
    bf16,
    f32,
    i8,
    i16,
    i32,
    i64,
    kernel,
    u8,
    u16,
    u32,
    u64,
)
from ruda_core.runtime import ComputeClient, Feature, RudaCount, RudaDim
from ruda_core.testing.markers import need, requires, requires_elem
from ruda_core.testing.processes import run_script
from ruda_core.testing.runner import read_array

pytestmark = requires(Feature.PRINT)

Signed = ElemVar("Signed", [i8, i16, i32, i64])
Unsigned = ElemVar("Unsigned", [u8, u16, u32, u64])


@kernel
def conformance_print_signed(x: Array[Signed]):
    i = ABSOLUTE_POS
    if i < x.len():
        print(
            "cube", RUDA_POS, "unit", UNIT_POS, x[i], f"[{x[i]:6d}|{x[i]:<6d}|{x[i]:+d}|{x[i]:06d}]"
        )


@kernel
def conformance_print_unsigned(x: Array[Unsigned]):
    i = ABSOLUTE_POS
    if i < x.len():
        print(f"{i}: {x[i]} {x[i]:x} {x[i]:X} {x[i]:o} {x[i]:>12d}|{x[i]:<4d}|", sep="")


@kernel
def conformance_print_floats(x: Array[Float]):
    i = ABSOLUTE_POS
    if i < x.len():
        print(i, x[i], f"{x[i]:.3f}|{x[i]:e}|{x[i]:10.4g}|{x[i]:+.2E}|{x[i]:G}", end="!\n")


@kernel
def conformance_print_where(x: Array[u32]):
    i = ABSOLUTE_POS
    if i < x.len() and x[i] % 3 == 0:
        print("unit", i, "of", x.len(), "even:", x[i] % 2 == 0, "100%")


_FLOATS = [0.1, -2.5, 3.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1234.5678]
VALUES = {
    Elem.I8: [-128, 127, 0, -1, 7],
    Elem.I16: [-32768, 32767, -300],
    Elem.I32: [-(2**31), 2**31 - 1, -42],
    Elem.I64: [-(2**63), 2**63 - 1, -(2**40)],
    Elem.U8: [255, 0, 7],
    Elem.U16: [65535, 4096],
    Elem.U32: [2**32 - 1, 123456],
    Elem.U64: [2**64 - 1, 2**40 + 5],
    Elem.F16: [*_FLOATS, 65504.0, 6.103515625e-05],
    Elem.BF16: [*_FLOATS, 3.3895313892515355e38, 1.0078125, 9.183549615799121e-41],
    Elem.F32: [*_FLOATS, 1e-7, 123456789.0, 3.4e38],
    Elem.F64: [*_FLOATS, 1e300, 1e-300, 1 / 3],
}


def _printed(client: ComputeClient, capfd: pytest.CaptureFixture[str], launch) -> list[str]:
    """The sorted lines ``launch(client)`` prints, read once the stream is synchronised."""
    capfd.readouterr()
    launch(client)
    client.sync().result()
    return sorted(capfd.readouterr().out.splitlines())


def _kernel_for(elem: Elem):
    if elem.is_float:
        return conformance_print_floats
    return conformance_print_signed if elem.is_signed else conformance_print_unsigned


@pytest.mark.parametrize("elem", list(VALUES), ids=str)
def test_print_writes_the_reference_text_for_every_type(client, reference, capfd, elem):
    need(client, elem)
    data = np.array(VALUES[elem], elem.numpy)
    n = len(data)
    k = _kernel_for(elem)

    def launch(c: ComputeClient) -> None:
        x = c.create_from_slice(data)
        k.launch(c, RudaCount(2), RudaDim(8), ArrayArg(x, n, elem=elem))

    want = _printed(reference, capfd, launch)
    assert len(want) == n
    assert _printed(client, capfd, launch) == want


def test_units_that_do_not_reach_a_print_write_nothing(client, reference, capfd):
    data = np.arange(100, dtype=np.uint32)

    def launch(c: ComputeClient) -> None:
        x = c.create_from_slice(data)
        conformance_print_where.launch(c, RudaCount(4), RudaDim(32), ArrayArg(x, 100))

    want = _printed(reference, capfd, launch)
    assert len(want) == 34 and "unit 6 of 100 even: True 100%" in want
    assert _printed(client, capfd, launch) == want


@kernel
def conformance_print_and_copy(x: Array[f32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i]
        print(f"copied x[{i}] = {x[i]:.2f}")


def test_output_is_visible_once_a_read_of_the_launch_completes(client, capfd):
    capfd.readouterr()
    x = client.create_from_slice(np.array([0.5, 1.25, -3.0], np.float32))
    out = client.empty(12)
    conformance_print_and_copy.launch(
        client, RudaCount(1), RudaDim(4), ArrayArg(x, 3), ArrayArg(out, 3)
    )
    assert read_array(client, out, np.float32).tolist() == [0.5, 1.25, -3.0]
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == ["copied x[0] = 0.50", "copied x[1] = 1.25", "copied x[2] = -3.00"]


def test_output_of_a_sync_nobody_waits_for_appears_at_the_next_read(client, capfd):
    capfd.readouterr()
    x = client.create_from_slice(np.array([0.5, 1.25], np.float32))
    out = client.empty(8)
    conformance_print_and_copy.launch(
        client, RudaCount(1), RudaDim(2), ArrayArg(x, 2), ArrayArg(out, 2)
    )
    client.sync()  # its future dropped: the output is not its alone
    conformance_print_and_copy.launch(
        client, RudaCount(1), RudaDim(2), ArrayArg(out, 2), ArrayArg(x, 2)
    )
    assert read_array(client, x, np.float32).tolist() == [0.5, 1.25]
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == ["copied x[0] = 0.50"] * 2 + ["copied x[1] = 1.25"] * 2


_EXITING_CHILD = """
import sys
import numpy as np
import ruda_core as ruda
from ruda_core.lang import ABSOLUTE_POS, Array, ArrayArg, kernel, u32
from ruda_core.runtime import RudaCount, RudaDim

@kernel
def says(x: Array[u32]):
    if ABSOLUTE_POS < x.len():
        print("unit", ABSOLUTE_POS, "says", x[ABSOLUTE_POS])

client = ruda.client(sys.argv[1])
x = client.create_from_slice(np.array([7, 8], np.uint32))
print("launching", flush=True)
says.launch(client, RudaCount(1), RudaDim(2), ArrayArg(x, 2))  # never synced
"""


def test_output_printed_before_the_interpreter_exits_is_written(ruda_device, tmp_path):
    child = run_script(_EXITING_CHILD, tmp_path, ruda_device)
    assert child.returncode == 0, child.stderr
    want = ["launching", "unit 0 says 7", "unit 1 says 8"]
    assert child.stdout.splitlines()[0] == want[0], child.stdout + child.stderr
    assert sorted(child.stdout.splitlines()) == want, child.stdout + child.stderr


@kernel
def conformance_print_bf16(x: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        print(i, bf16(x[i]))


@requires_elem(Elem.BF16)
def test_bf16_prints_its_rounded_value_through_f32(client, capfd):
    x = client.create_from_slice(np.array([0.1, 1 / 3, 300.0, -1e-3], np.float32))
    lines = _printed(
        client,
        capfd,
        lambda c: conformance_print_bf16.launch(c, RudaCount(1), RudaDim(4), ArrayArg(x, 4)),
    )
    assert lines == ["0 0.100098", "1 0.333984", "2 300", "3 -0.000999451"]
