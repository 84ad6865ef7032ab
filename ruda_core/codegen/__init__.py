"""Code generation for C-family targets (CUDA C++, OpenCL C): one emitter, one dialect each.

:class:`CFamilyEmitter` turns a lowered :class:`~ruda_core.ir.KernelDefinition` into source with
a :class:`Dialect`, which holds everything that differs between targets (defaults: plain C99).
:class:`CFamilyCompiler` wraps both as a backend ``Compiler``; :class:`KernelArg` rows describe
the generated kernel's argument list for the host launcher. Nothing here imports a driver.
"""

from .abi import ArgKind, KernelArg
from .cfamily import CFamilyEmitter, EmittedKernel, usage_of
from .compiler import CFamilyCompiler
from .dialect import BITS_ELEM, Dialect, MemSpace, Usage
from .names import C99_KEYWORDS, CXX_KEYWORDS, MATH_NAMES, NameTable, words

__all__ = [
    "BITS_ELEM",
    "C99_KEYWORDS",
    "CXX_KEYWORDS",
    "MATH_NAMES",
    "ArgKind",
    "CFamilyCompiler",
    "CFamilyEmitter",
    "Dialect",
    "EmittedKernel",
    "KernelArg",
    "MemSpace",
    "NameTable",
    "Usage",
    "usage_of",
    "words",
]
