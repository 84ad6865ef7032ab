"""Kernels that fail on purpose, to check where and how errors surface.

:class:`RefusedTask` fails in the compiler (a ``CompilationError`` from ``compile``);
:class:`BrokenSourceTask` compiles normally and then appends a line no target language accepts,
so the device's own build step (NVRTC, ``clBuildProgram``, Python's compiler) must fail and the
driver must translate that failure into a ``CompilationError`` naming the kernel. Both keep the
wrapped kernel's parameters, so a launch poisons exactly the buffers the kernel may write.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import ExecutionMode
from ..runtime import CompilationError, CompiledKernel, CompileOptions, Compiler, RudaTask

__all__ = ["BrokenSourceTask", "RefusedTask"]

#: Not valid CUDA C, OpenCL C or Python.
GARBAGE_LINE = "\n@@@ ruda conformance: this line is deliberately not valid source @@@ {{{\n"


class _Wrapped(RudaTask):
    def __init__(self, inner: RudaTask, suffix: str) -> None:
        self.inner = inner
        self._key = f"{inner.key}:{suffix}"

    @property
    def key(self) -> str:
        return self._key

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def shared_bytes(self) -> int:
        return self.inner.shared_bytes

    def writes(self, binding_index: int) -> bool:
        return self.inner.writes(binding_index)


class RefusedTask(_Wrapped):
    """``inner`` with a compiler that refuses it."""

    def __init__(self, inner: RudaTask) -> None:
        super().__init__(inner, "refused")

    def compile(
        self, compiler: Compiler, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        raise CompilationError(f"kernel {self.name} is refused by its compiler on purpose")


class BrokenSourceTask(_Wrapped):
    """``inner`` whose generated source does not build on the device."""

    def __init__(self, inner: RudaTask) -> None:
        super().__init__(inner, "broken-source")

    def compile(
        self, compiler: Compiler, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        compiled = self.inner.compile(compiler, options, mode)
        return replace(compiled, source=compiled.source + GARBAGE_LINE)
