"""Intel's CPU runtime builds in a child process: a kernel whose build ends Intel's compiler
fails with a ``CompilationError`` naming how the build ended, this process goes on, and later
kernels build and run; a child that ends for any reason is reported and replaced; a build
interrupted while it waits leaves nothing for the next build to take as its own."""

from __future__ import annotations

import signal

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import ruda_core as ruda
from ruda_core.errors import CompilationError, RudaPanic
from ruda_core.lang import ABSOLUTE_POS, Array, kernel, u32
from ruda_opencl.builds_apart import ApartBuilder
from ruda_opencl.driver import all_devices, load_program

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


#: Lines of a kernel Intel's compiler takes seconds to build: 1 000 make a request that the pipe
#: to a new child holds whole (the interruption finds the parent waiting for the answer), 1 500
#: one it does not (the parent is still writing it while the child starts).
@pytest.mark.parametrize("lines", [1000, 1500], ids=["waiting", "writing"])
def test_a_build_interrupted_midway_leaves_nothing_for_the_next_one(lines):
    """Ctrl-C, or a time limit raising from its signal handler, in the middle of a build: what
    the child sends afterwards must not be taken as the next build's answer (the binary of
    another kernel, launched in its place), nor the rest of a request it never got whole hold
    it waiting. Each later build gets its own kernel."""
    import pyopencl as cl

    index = intel_cpu_index()
    builder = ApartBuilder()
    body = "".join(f"    acc = acc * a[(i + {k}u) % n] + (float){k};\n" for k in range(lines))
    slow = (
        "__kernel void slow(__global float* a, uint n) {\n    uint i = get_global_id(0);\n"
        f"    float acc = 0.0f;\n{body}    a[i] = acc;\n}}\n"
    )

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.1)  # a new child takes longer to start
    try:
        with pytest.raises(KeyboardInterrupt):
            builder.build(index, slow, [], "slow", (None, None))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    device = all_devices()[index]
    context = cl.Context([device])
    for name in ("first", "second"):
        source = f"__kernel void {name}(__global uint* a) {{ a[get_global_id(0)] = 1u; }}"
        binary = builder.build(index, source, [], name, (None, None))
        program = load_program(context, device, binary, [])
        assert program.get_info(cl.program_info.KERNEL_NAMES) == name
