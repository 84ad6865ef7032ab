"""A line that every unit reads at the same place, in a loop each unit leaves by a break of its
own, keeps the value the unit read: Intel's CPU compiler (2026.2) loses it when the line is
read with ``vloadN`` (the value from before the loop is kept), so the OpenCL dialect reads
lines in loops left early through a pointer to vectors. The kernel around the dialect's line
access is the smallest form of a program the differential fuzzer found."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from ruda_core.ir import Elem
from ruda_opencl.builds_apart import ApartBuilder
from ruda_opencl.capabilities import OpenCLCapabilities
from ruda_opencl.dialect import OpenCLDialect
from ruda_opencl.driver import all_devices, load_program

from .intel_cpu import intel_cpu_index

UNITS = 256
LARGE = 4192934788  # above the 662 the kernel compares with


def _kernel(width: int) -> str:
    lanes = [f"x{k}" for k in range(width)]
    dialect = OpenCLDialect()
    load = dialect.load_line(Elem.U32, "u", "0u", width, lanes, "line", left_early=True)
    return f"""
__kernel void k(__global const uint* n_, __global const uint* b_, __global const uint* u,
                __global uint* out, uint len) {{
    uint i = get_global_id(0);
    uint j = len == 0u ? 0u : i % len;
    bool stop = b_[j] != 0u;
    uint n = n_[j];
    uint v = 0u;
    bool flip = false;
    uint {", ".join(f"{lane} = 0u" for lane in lanes)};
    for (uint t = 0u; t < 2u; t++) {{
        for (uint k = 0u; k < n; k++) {{
            {{ {" ".join(load)} }}
            v = x{width - 1} < 662u ? 0u : len;
            if (stop) {{
                break;
            }}
            flip = !flip;
        }}
    }}
    out[i] = v;
}}
"""


@pytest.mark.parametrize("width", [2, 4, 8])
def test_a_line_read_in_a_loop_left_by_each_units_break_keeps_its_value(width):
    import pyopencl as cl

    index = intel_cpu_index()
    device = all_devices()[index]
    options = list(OpenCLCapabilities.of(device).build_options)
    binary = ApartBuilder().build(index, _kernel(width), options, "k", (None, None))
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    kernel = cl.Kernel(load_program(context, device, binary, options), "k")
    for seed in range(3):
        rng = np.random.default_rng(seed)
        counts = rng.integers(0, 4, UNITS).astype(np.uint32)
        stops = (rng.random(UNITS) < 0.3).astype(np.uint32)
        table = np.full(16, LARGE, np.uint32)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        inputs = [cl.Buffer(context, flags, hostbuf=a) for a in (counts, stops, table)]
        out = np.zeros(UNITS, np.uint32)
        out_buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
        kernel(queue, (UNITS,), (32,), *inputs, out_buffer, np.uint32(UNITS))
        cl.enqueue_copy(queue, out, out_buffer)
        queue.finish()
        # a unit that turns at least once reads the large lane, whether it breaks or not
        expected = np.where(counts > 0, UNITS, 0).astype(np.uint32)
        wrong = np.flatnonzero(out != expected)
        assert wrong.size == 0, f"seed {seed}: units {wrong[:8]} gave {out[wrong[:8]]}"
