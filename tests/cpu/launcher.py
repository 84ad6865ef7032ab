"""Compile and launch hand-built IR kernels on the NumPy compiler, for its tests.

``launch`` lowers a definition for a mode, compiles it with ``CpuCompiler``, builds it and runs
it over NumPy arrays; kernels come from :class:`ruda_core.testing.irbuild.KernelBuilder` with
``file=FILE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ruda_core.ir import KernelDefinition
from ruda_core.ir.bounds import lower_bounds
from ruda_core.runtime.compiler import CompileOptions
from ruda_core.runtime.launch import ExecutionMode
from ruda_cpu.compiler import CpuCompiler
from ruda_cpu.executor import CpuKernel, build

__all__ = ["FILE", "compile_kernel", "launch", "metadata_for"]

#: The source file the hand-built kernels claim to come from (generated code names it).
FILE = "<test>"


def compile_kernel(
    defn: KernelDefinition,
    mode: ExecutionMode = ExecutionMode.UNCHECKED,
    plane_dim: int = 32,
) -> CpuKernel:
    lowered = lower_bounds(defn, mode)
    compiled = CpuCompiler().compile(lowered, CompileOptions(plane_dim=plane_dim), mode)
    return build(compiled)


def metadata_for(
    defn: KernelDefinition,
    buffers: Sequence[np.ndarray],
    lengths: dict[str, int] | None = None,
    tensors: dict[str, tuple[Sequence[int], Sequence[int]]] | None = None,
) -> list[int]:
    """The metadata of a launch: each buffer's length (or ``lengths[name]``), then the
    ``tensors[name] = (shape, strides)`` of tensor parameters."""
    lengths = lengths or {}
    tensors = tensors or {}
    by_param = dict(zip(defn.array_params, buffers, strict=True))
    out = []
    for what, p, axis in defn.metadata_layout():
        if what == "len":
            out.append(lengths.get(p.name, by_param[p].shape[0]))
        else:
            shape, strides = tensors[p.name]
            out.append((shape if what == "shape" else strides)[axis])
    return out


def launch(
    defn: KernelDefinition,
    count: int | tuple[int, int, int],
    dim: int | tuple[int, int, int],
    buffers: Sequence[np.ndarray],
    scalars: Sequence[Any] = (),
    mode: ExecutionMode = ExecutionMode.UNCHECKED,
    plane_dim: int = 32,
    lengths: dict[str, int] | None = None,
    tensors: dict[str, tuple[Sequence[int], Sequence[int]]] | None = None,
    kernel: CpuKernel | None = None,
) -> np.ndarray | None:
    """Compile (unless ``kernel`` is given) and run; in VALIDATE mode return the report."""
    count3 = (count, 1, 1) if isinstance(count, int) else count
    dim3 = (dim, 1, 1) if isinstance(dim, int) else dim
    k = kernel or compile_kernel(defn, mode, plane_dim)
    bufs = list(buffers)
    report = None
    lowered = lower_bounds(defn, mode)
    if len(lowered.array_params) > len(defn.array_params):
        report = np.zeros(6, np.uint32)
        bufs.append(report)
    meta = metadata_for(lowered, bufs, lengths, tensors)
    types = [p.elem.numpy.type for p in defn.scalar_params]
    k(count3, dim3, bufs, [t(s) for t, s in zip(types, scalars, strict=True)], meta)
    return report
