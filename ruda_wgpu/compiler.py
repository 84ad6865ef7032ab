"""``WebGpuCompiler``: lowered IR -> a WGSL module. Pure: building the shader module and its
pipelines is the driver's job.

``CompileOptions.extra`` carries what the adapter offers the code: ``("elems", "f16,f32,…")``,
the element types its WGSL can hold (``shader-f16`` and ``shader-int64`` add types to the core
``bool``, ``i32``, ``u32`` and ``f32``; ``f64`` is never one, see ``server._features``), and
``("loop_limit", "65535")`` where the driver stops a unit's loops after that many turns
(lavapipe), which kernels then report.
"""

from __future__ import annotations

from ruda_core.ir import Elem, ExecutionMode, KernelDefinition
from ruda_core.runtime.compiler import CompiledKernel, CompileOptions, Compiler

from .wgsl import WgslDialect, WgslEmitter, writable_arrays

__all__ = ["CORE_ELEMS", "WebGpuCompiler"]

#: The element types every WebGPU adapter's WGSL holds.
CORE_ELEMS = frozenset({Elem.BOOL, Elem.I32, Elem.U32, Elem.F32})


class WebGpuCompiler(Compiler):
    """Generates WGSL; the entry point is always ``main``. ``CompiledKernel.written`` lists
    the array parameters bound ``read_write`` (every other one is ``read``), even when it is
    empty."""

    name = "wgsl"
    source_suffix = "wgsl"

    def compile(
        self, definition: KernelDefinition, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        """:raises UnsupportedFeature: the kernel uses what the adapter's WGSL lacks (the
        message names the kernel and the capability)."""
        listed = options.get("elems")
        elems = CORE_ELEMS if listed is None else frozenset(Elem(e) for e in listed.split(","))
        dialect = WgslDialect(elems, options.plane_dim, int(options.get("loop_limit") or 0))
        return CompiledKernel(
            entrypoint="main",
            source=WgslEmitter(dialect).emit(definition),
            definition=definition,
            mode=mode,
            plane_dim=options.plane_dim,
            written=writable_arrays(definition),
        )
