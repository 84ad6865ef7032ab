"""``CFamilyCompiler``: the shared :class:`~ruda_core.runtime.compiler.Compiler` of C-family
backends. A backend subclass names its target and builds its :class:`Dialect` from the
``CompileOptions``; everything else is here. Pure: no driver is imported or called.
"""

from __future__ import annotations

from abc import abstractmethod

from ..ir import ExecutionMode, KernelDefinition
from ..runtime.compiler import CompiledKernel, CompileOptions, Compiler
from .cfamily import CFamilyEmitter
from .dialect import Dialect

__all__ = ["CFamilyCompiler"]


class CFamilyCompiler(Compiler):
    """Compiles a lowered definition to C-family source with the subclass's dialect.

    ``CompiledKernel.args`` holds the kernel's argument list as
    :class:`~ruda_core.codegen.abi.KernelArg` rows (what the host launcher packs).
    """

    @abstractmethod
    def dialect(self, options: CompileOptions) -> Dialect:
        """The dialect for a device described by ``options``.

        :raises ValueError: when ``options`` holds a malformed setting for this target.
        """

    def compile(
        self, definition: KernelDefinition, options: CompileOptions, mode: ExecutionMode
    ) -> CompiledKernel:
        """Generate source for ``definition``.

        :raises UnsupportedFeature: the device lacks a capability the kernel needs (the message
            names the kernel and the capability).
        :raises CompilationError: the definition cannot be expressed in C.
        """
        emitted = CFamilyEmitter(self.dialect(options)).emit(definition)
        return CompiledKernel(
            entrypoint=emitted.entrypoint,
            source=emitted.source,
            definition=definition,
            mode=mode,
            plane_dim=options.plane_dim,
            args=emitted.args,
        )
