"""Intel's CPU runtime builds in a child process: a kernel whose build ends Intel's compiler
fails with a ``CompilationError`` naming how the build ended, this process goes on, and later
kernels build and run; a child that ends for any reason is reported and replaced."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import ruda_core as ruda
from ruda_core.errors import CompilationError, RudaPanic
from ruda_core.lang import ABSOLUTE_POS, Array, kernel, u32
from ruda_opencl.builds_apart import ApartBuilder
from ruda_opencl.driver import all_devices

from .intel_cpu import intel_cpu_index


@kernel
def fibonacci(out: Array[u32]):
    # a loop whose turns differ between units, storing a value carried from the turn before:
    # Intel's vectoriser (intel-opencl-rt 2026.2.0) aborts building it
    if ABSOLUTE_POS == 0:
        a = u32(0)
        b = u32(1)
        for k in range(out.len()):
            a, b = b, a + b
            out[k] = a


@kernel
def doubled(x: Array[u32], out: Array[u32]):
    i = ABSOLUTE_POS
    if i < out.len():
        out[i] = x[i] * u32(2)


def test_a_kernel_that_ends_intels_compiler_fails_and_this_process_goes_on():
    client = ruda.client(f"opencl:{intel_cpu_index()}")
    out = ruda.asarray(np.zeros(10, np.uint32), client)
    fibonacci.launch(client, 1, 32, out)
    try:
        client.sync().result()
    except CompilationError as exc:
        assert "kernel fibonacci did not build" in str(exc)
        assert "ended the process that built it (signal SIG" in str(exc)
        with pytest.raises(RudaPanic, match="fibonacci"):  # what it would have written
            out.numpy()
    else:  # a release of the runtime without the fault
        np.testing.assert_array_equal(out.numpy(), [1, 1, 2, 3, 5, 8, 13, 21, 34, 55])
    x = np.arange(100, dtype=np.uint32)
    y = ruda.asarray(np.zeros(100, np.uint32), client)
    doubled.launch(client, 4, 32, ruda.asarray(x, client), y)
    np.testing.assert_array_equal(y.numpy(), 2 * x)


def test_a_child_that_ends_is_reported_with_its_output_and_the_next_build_starts_another():
    index = intel_cpu_index()
    builder = ApartBuilder()
    source = "__kernel void k(__global uint* a) { a[get_global_id(0)] += 1u; }"
    with pytest.raises(CompilationError, match=r"(?s)exit status 1.*IndexError") as caught:
        builder.build(len(all_devices()), source, [], "k", ("kernels.py", 7))
    assert (caught.value.file, caught.value.line) == ("kernels.py", 7)
    assert builder.build(index, source, [], "k", (None, None))  # a binary, from a new child
    with pytest.raises(CompilationError, match=r"kernel broken did not build for .*error"):
        builder.build(index, "__kernel void broken( {", [], "broken", (None, None))


def test_a_failed_build_leaves_no_file_behind(tmp_path, monkeypatch):
    """PyOpenCL saves the source of a failed build in the temporary folder; ruda's error lists
    the source itself, so the saved copy is removed and the error does not point to it."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the child's temporary folder
    builder = ApartBuilder()
    with pytest.raises(CompilationError, match="kernel broken did not build") as caught:
        builder.build(intel_cpu_index(), "__kernel void broken( {", [], "broken", (None, None))
    assert "source saved as" not in str(caught.value)
    assert "--- generated OpenCL C ---\n   1  __kernel void broken( {" in str(caught.value)
    assert list(tmp_path.iterdir()) == []
