"""A launch through the runtime API that passes more or fewer bindings, scalars or metadata
values than its kernel takes is refused before anything runs, naming what it takes, on every
device (the drivers pack what they are given, so a short list would otherwise fail inside one
of them, or run with values missing); so is a scalar of another type than its parameter's, a
binding off its alignment or shorter than the length its metadata gives, and a plane kernel's
cube of rows that are not whole planes where the device may form planes within rows."""

from __future__ import annotations

import numpy as np
import pytest

from ruda_core.ir import Elem, Op
from ruda_core.runtime import Feature, KernelTask, LaunchConfigError
from ruda_core.testing.irbuild import KernelBuilder, builtin, const
from ruda_core.testing.runner import read_array


def _store_seven() -> KernelTask:
    k = KernelBuilder("store_seven")
    out = k.array("out", Elem.U32)
    k.array("unused", Elem.U32, read_only=True)
    k.scalar("n", Elem.U32)
    k.do(Op.INDEX_ASSIGN, None, out, const(0, Elem.U32), const(7, Elem.U32))
    return KernelTask(k.build())


@pytest.mark.parametrize("call", ["launch", "launch_unchecked", "prepare"])
@pytest.mark.parametrize(
    "drop", ["a binding", "the scalar", "a metadata value"], ids=["bindings", "scalars", "metadata"]
)
def test_a_launch_of_other_arity_is_refused_before_it_runs(client, call, drop):
    task = _store_seven()
    out, unused = client.create_from_slice(np.zeros(1, np.uint32)), client.empty(4)
    bindings, scalars, metadata = [out.binding(), unused.binding()], [np.uint32(1)], [1, 1]
    if drop == "a binding":
        bindings.pop()
    elif drop == "the scalar":
        scalars.pop()
    else:
        metadata.pop()
    with pytest.raises(LaunchConfigError, match=r"store_seven takes 2 bindings, 1 scalars and 2"):
        getattr(client, call)(task, 1, 1, bindings, scalars, metadata)
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [0])  # nothing ran
    client.launch(task, 1, 1, [out.binding(), unused.binding()], [np.uint32(1)], [1, 1])
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [7])


@pytest.mark.parametrize("call", ["launch", "launch_unchecked", "prepare"])
@pytest.mark.parametrize(
    "value", [5, np.int32(5), np.float32(1.5), True], ids=["int", "int32", "float32", "bool"]
)
def test_a_scalar_of_another_type_is_refused_before_it_runs(client, call, value):
    """The launch ABI's scalars are NumPy scalars of their parameters' types: a device would
    otherwise convert another type in its own way (the NumPy device truncated 1.5 to 1) or
    refuse it from inside its driver."""
    task = _store_seven()
    out, unused = client.create_from_slice(np.zeros(1, np.uint32)), client.empty(4)
    bindings = [out.binding(), unused.binding()]
    refused = rf"scalar 0 of kernel store_seven is a numpy\.uint32; the launch passes .*{value}"
    with pytest.raises(LaunchConfigError, match=refused):
        getattr(client, call)(task, 1, 1, bindings, [value], [1, 1])
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [0])  # nothing ran
    client.launch(task, 1, 1, bindings, [np.uint32(5)], [1, 1])
    np.testing.assert_array_equal(read_array(client, out, np.uint32), [7])


@pytest.mark.parametrize("call", ["launch", "launch_unchecked", "prepare"])
@pytest.mark.parametrize("start", [1, 2, 3])
def test_a_binding_off_a_multiple_of_its_element_size_is_refused_before_it_runs(
    client, call, start
):
    """A ``u32`` array bound at byte 1, 2 or 3 of its memory: CUDA would fault on the load and
    WebGPU read the element below, so every device refuses it at the call."""
    task = _store_seven()
    memory = client.create_from_slice(np.zeros(2, np.uint32))
    unused = client.empty(4)
    view = memory.offset(start, start + 4).binding()
    refused = r"argument 'out' of kernel store_seven starts \d+ B into its memory.* multiple of 4 B"
    with pytest.raises(LaunchConfigError, match=refused):
        getattr(client, call)(task, 1, 1, [view, unused.binding()], [np.uint32(1)], [1, 1])
    np.testing.assert_array_equal(read_array(client, memory, np.uint32), [0, 0])  # nothing ran
    at_four = memory.offset(4, 8).binding()
    client.launch(task, 1, 1, [at_four, unused.binding()], [np.uint32(1)], [1, 1])
    np.testing.assert_array_equal(read_array(client, memory, np.uint32), [0, 7])


def _store_sevens() -> KernelTask:
    """``if UNIT_POS < out.len(): out[UNIT_POS] = 7``."""
    k = KernelBuilder("store_sevens")
    out = k.array("out", Elem.U32)
    unit = builtin("UNIT_POS")
    with k.if_(k.let(Op.LT, Elem.BOOL, unit, k.let(Op.LEN, Elem.U32, out))):
        k.store(out, unit, const(7, Elem.U32))
    return KernelTask(k.build())


@pytest.mark.parametrize("call", ["launch", "launch_unchecked", "prepare"])
@pytest.mark.parametrize("length", [4, np.uint32(1 << 30)], ids=["4", "uint32-2**30"])
def test_a_length_past_its_binding_is_refused_before_it_runs(client, call, length):
    """Accesses stop at the length the metadata gives (the kernel's own test, and a checked
    launch's): a length past the binding's bytes would let four units write into the memory
    beyond a two-element view. A NumPy length whose bytes wrap to 0 in 32 bits is no less."""
    task = _store_sevens()
    memory = client.create_from_slice(np.zeros(4, np.uint32))
    view = memory.offset(0, 8).binding()
    refused = rf"argument .out. of kernel store_sevens holds 8 B, .* of {length} elements of 4 B"
    with pytest.raises(LaunchConfigError, match=refused):
        getattr(client, call)(task, 1, 4, [view], [], [length])
    np.testing.assert_array_equal(read_array(client, memory, np.uint32), [0, 0, 0, 0])
    client.launch(task, 1, 4, [view], [], [2])
    np.testing.assert_array_equal(read_array(client, memory, np.uint32), [7, 7, 0, 0])


def _plane_sums() -> KernelTask:
    """``out[UNIT_POS] = plane_sum(UNIT_POS)``."""
    k = KernelBuilder("plane_sums")
    out = k.array("out", Elem.U32)
    unit = builtin("UNIT_POS")
    k.store(out, unit, k.let(Op.PLANE_SUM, Elem.U32, unit))
    return KernelTask(k.build())


@pytest.mark.parametrize("call", ["launch", "launch_unchecked", "prepare"])
def test_a_plane_kernel_on_rows_of_part_planes_runs_as_one_row_or_is_refused_before_it_runs(
    client, call
):
    """A cube of three rows whose width is not whole planes: planes run on across the rows
    where the device has ``PLANES_ACROSS_ROWS``, so the sums are those of one row of as many
    units; elsewhere every raw entry point refuses the launch before anything runs."""
    plane = client.properties().plane_dim
    width = plane // 2 + 1
    if not client.features().has(Feature.PLANE) or width % plane == 0:
        pytest.skip(f"{client.device} has no planes of more than two lanes")
    task, units = _plane_sums(), 3 * width
    rows = client.create_from_slice(np.zeros(units, np.uint32))
    run = getattr(client, call)
    if not client.features().has(Feature.PLANES_ACROSS_ROWS):
        with pytest.raises(LaunchConfigError, match=rf"launch one row of RudaDim\({units}\)"):
            run(task, 1, (width, 3), [rows.binding()], [], [units])
        np.testing.assert_array_equal(read_array(client, rows, np.uint32), 0)  # nothing ran
        return
    launched = run(task, 1, (width, 3), [rows.binding()], [], [units])
    if call == "prepare":
        launched.launch()
    row = client.create_from_slice(np.zeros(units, np.uint32))
    client.launch(task, 1, units, [row.binding()], [], [units])
    np.testing.assert_array_equal(
        read_array(client, rows, np.uint32), read_array(client, row, np.uint32)
    )
