"""``OpenCLCompiler``: lowered IR -> OpenCL C source with the capabilities of the
:class:`~ruda_opencl.target.OpenCLTarget` in ``CompileOptions.target``. Pure: building the
program is the server's job."""

from __future__ import annotations

from ruda_core.codegen import CFamilyCompiler
from ruda_core.runtime.compiler import CompileOptions

from .dialect import OpenCLDialect

__all__ = ["OpenCLCompiler"]


class OpenCLCompiler(CFamilyCompiler):
    """Generates OpenCL C; the entry point is the kernel's name (mangled if reserved)."""

    name = "opencl"
    source_suffix = "cl"

    def dialect(self, options: CompileOptions) -> OpenCLDialect:
        return OpenCLDialect.from_options(options)
