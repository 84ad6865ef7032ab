"""``CudaCompiler``: lowered IR -> CUDA C++ source for NVRTC, for the architecture of the
:class:`~ruda_cuda.dialect.CudaTarget` in ``CompileOptions.target``. Pure: compiling with NVRTC
is the server's job."""

from __future__ import annotations

from ruda_core.codegen import CFamilyCompiler
from ruda_core.runtime.compiler import CompileOptions

from .dialect import CudaDialect

__all__ = ["CudaCompiler"]


class CudaCompiler(CFamilyCompiler):
    """Generates CUDA C++ with ``extern "C"`` entry points named after the kernel (mangled if
    reserved)."""

    name = "cuda"
    source_suffix = "cu"

    def dialect(self, options: CompileOptions) -> CudaDialect:
        return CudaDialect.from_options(options)
