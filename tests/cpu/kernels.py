"""What the NumPy driver's tests share about kernels: the source file hand-built kernels claim
(``FILE``, which generated code names), and :func:`cpu_kernel`, the executor's kernel of a
definition, for the tests of what the executor itself promises (argument checks, errors, lane
geometries the client does not launch)."""

from __future__ import annotations

from ruda_core.ir import ExecutionMode, KernelDefinition
from ruda_core.runtime import CompileOptions, KernelTask
from ruda_cpu.compiler import CpuCompiler
from ruda_cpu.executor import CpuKernel, build
from ruda_cpu.server import DEFAULT_PLANE_DIM

__all__ = ["FILE", "cpu_kernel"]

#: The source file the hand-built kernels claim to come from.
FILE = "<test>"


def cpu_kernel(
    defn: KernelDefinition,
    mode: ExecutionMode = ExecutionMode.UNCHECKED,
    plane_dim: int = DEFAULT_PLANE_DIM,
) -> CpuKernel:
    """``defn`` compiled for ``mode`` (bounds pass included) and built, as the NumPy server
    does, for planes of ``plane_dim`` units."""
    compiled = KernelTask(defn).compile(CpuCompiler(), CompileOptions(plane_dim=plane_dim), mode)
    return build(compiled)
