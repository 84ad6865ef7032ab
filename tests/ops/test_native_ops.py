"""The registry of native operations: what a driver's plugin supplies for its runtime, and what
a runtime registered directly gets."""

from __future__ import annotations

from ruda_core import plugins
from ruda_core.ops import native
from ruda_core.ops.layer_norm import NativeLayerNorm
from ruda_cpu import CpuRuntime
from ruda_cuda import CudaRuntime
from ruda_cuda.ops import layer_norm as cuda_layer_norm
from ruda_opencl import OpenCLRuntime


def test_the_cuda_plugin_supplies_its_layer_norm_without_a_driver():
    """The hook answers on a machine without CuPy: it imports ruda_cuda's own modules alone."""
    assert plugins.native_ops(CudaRuntime) == {"layer_norm": cuda_layer_norm}
    found = native.implementation("layer_norm", CudaRuntime)
    assert found is cuda_layer_norm
    assert isinstance(found, NativeLayerNorm)


def test_the_cpu_plugin_supplies_numpys_sort_and_nothing_else():
    assert set(plugins.native_ops(CpuRuntime)) == {"sort", "argsort"}
    assert native.implementation("layer_norm", CpuRuntime) is None


def test_a_runtime_whose_plugin_supplies_nothing_has_no_native_op():
    assert plugins.native_ops(OpenCLRuntime) == {}
    assert native.implementation("sort", OpenCLRuntime) is None
    assert native.implementation("matmul", CudaRuntime) is None


class UnloadedRuntime(CpuRuntime):
    """A runtime no plugin declares."""


def test_a_runtime_no_plugin_declares_is_registered_directly():
    assert plugins.native_ops(UnloadedRuntime) == {}
    assert native.implementation("layer_norm", UnloadedRuntime) is None
    native.register("layer_norm", UnloadedRuntime, cuda_layer_norm)
    try:
        assert native.implementation("layer_norm", UnloadedRuntime) is cuda_layer_norm
        assert native.implementation("layer_norm", CpuRuntime) is None  # its base keeps none
    finally:
        native.register("layer_norm", UnloadedRuntime, None)
    assert native.implementation("layer_norm", UnloadedRuntime) is None
