"""``WebGpuCompiler``: lowered IR -> a WGSL module. Pure: building the shader module and its
pipelines is the driver's job.

``CompileOptions.target`` is a :class:`WgslTarget`: what the adapter offers the code.
"""

from __future__ import annotations

from dataclasses import dataclass

from ruda_core.ir import Elem, ExecutionMode, KernelDefinition
from ruda_core.runtime.compiler import CompiledKernel, CompileOptions, Compiler

from .wgsl import WgslDialect, WgslEmitter, writable_arrays

__all__ = ["CORE_ELEMS", "WebGpuCompiler", "WgslTarget"]

#: The element types every WebGPU adapter's WGSL holds.
CORE_ELEMS = frozenset({Elem.BOOL, Elem.I32, Elem.U32, Elem.F32})


@dataclass(frozen=True, slots=True)
class WgslTarget:
    """What WGSL is generated for.

    :param elems: the element types the adapter's WGSL can hold (``shader-f16`` and
        ``shader-int64`` add types to :data:`CORE_ELEMS`; ``f64`` is never one, see
        ``server._features``), kept sorted by name so that the ``repr`` is a stable cache key.
    :param loop_limit: the turns after which the driver stops a unit's loops (lavapipe's
        65 535), which kernels then report; 0 where it stops none.
    """

    elems: tuple[Elem, ...] = tuple(sorted(CORE_ELEMS, key=lambda e: e.value))
    loop_limit: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "elems", tuple(sorted(set(self.elems), key=lambda e: e.value)))


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
        target = options.target_as(WgslTarget)
        dialect = WgslDialect(frozenset(target.elems), options.plane_dim, target.loop_limit)
        return CompiledKernel(
            entrypoint="main",
            source=WgslEmitter(dialect).emit(definition),
            definition=definition,
            mode=mode,
            plane_dim=options.plane_dim,
            written=writable_arrays(definition),
        )
