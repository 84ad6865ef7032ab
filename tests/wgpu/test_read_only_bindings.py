"""Arrays a kernel only reads are bound read-only on WebGPU (a GPU may read them through its
read-only path), and a launch that binds one buffer to an array it reads and to one it writes,
which WebGPU refuses for a read-only binding, runs correctly all the same."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("wgpu")

from webgpu_kernels import add

import ruda_core as ruda
from ruda_core.ir import Elem, lower_bounds
from ruda_core.lang import ABSOLUTE_POS, Array, atomic_add, f32, kernel, u8, u32
from ruda_core.runtime import CompileOptions, ExecutionMode
from ruda_wgpu.compiler import WebGpuCompiler, WgslTarget

#: f32 elements of an array over the pool's largest shared slice: it gets a page of its own.
OWN_PAGE = 300_000
#: f32 elements of an array small enough to share a page with its neighbours.
SHARED_PAGE = 1000


@kernel
def tally(x: Array[f32], flags: Array[u8], count: Array[u32], out: Array[f32]):
    i = ABSOLUTE_POS
    if i < x.len():
        out[i] = x[i] * f32(2) if flags[i] != u8(0) else x[i]
        atomic_add(count, 0, u32(1))


def _source(kern) -> str:
    mode = ExecutionMode.CHECKED
    definition = lower_bounds(kern.definition(), mode)
    elems = (Elem.F32, Elem.I32, Elem.U32, Elem.BOOL, Elem.U8)
    options = CompileOptions(plane_dim=8, target=WgslTarget(elems))
    return WebGpuCompiler().compile(definition, options, mode).source


def test_arrays_only_read_are_read_bindings_and_the_rest_read_write():
    source = _source(tally)
    assert "var<storage, read> x: array<f32>;" in source
    assert "var<storage, read_write> out: array<f32>;" in source
    # an atomic's array and packed bytes (loaded through atomicLoad) need read_write
    assert "var<storage, read_write> count: array<atomic<u32>>;" in source
    assert "var<storage, read_write> flags: array<atomic<u32>>;" in source


def _add(client, n: int, same_page: bool) -> None:
    rng = np.random.default_rng(n)
    host_a, host_b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a, b = ruda.asarray(host_a, client), ruda.asarray(host_b, client)
    c = ruda.asarray(np.zeros(n, np.float32), client)
    pages = {h.handle.binding().resource for h in (a, b, c)}
    assert len(pages) == (1 if same_page else 3)  # the case this test means
    add.launch(client, -(-n // 64), 64, a, b, c)
    np.testing.assert_array_equal(c.numpy(), host_a + host_b)


def test_a_launch_over_distinct_buffers_reads_its_inputs_read_only(client):
    _add(client, OWN_PAGE, same_page=False)


def test_a_launch_whose_input_shares_the_output_s_buffer_is_exact(client):
    _add(client, SHARED_PAGE, same_page=True)


@pytest.mark.parametrize("n", [SHARED_PAGE, OWN_PAGE])
def test_an_array_that_is_input_and_output_at_once_is_exact(client, n):
    host_a = np.arange(n, dtype=np.float32)
    host_b = np.full(n, 0.5, np.float32)
    a, b = ruda.asarray(host_a, client), ruda.asarray(host_b, client)
    add.launch(client, -(-n // 64), 64, a, b, a)  # a = a + b in place
    np.testing.assert_array_equal(a.numpy(), host_a + host_b)
    # the launches alternate between both forms of the kernel: each keeps its own pipeline
    add.launch(client, -(-n // 64), 64, b, b, a)  # a = b + b: a read-only pair
    np.testing.assert_array_equal(a.numpy(), host_b + host_b)
