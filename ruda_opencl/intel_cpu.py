"""Intel's CPU OpenCL runtime: a compiler setting that keeps its builds from ending the process.

Its compiler (intel-opencl-rt 2024.2.1, 2025.3.3 and 2026.2.0 at least) corrupts its heap now
and then while it builds a kernel whose barriers cut it into many regions: a kernel of five cube
reductions and scans aborted about one build in a hundred (``double free or corruption``, or a
hang once LLVM's crash handler has armed its alarm). The pass that recomputes, after a barrier,
the values it would otherwise save across it (``ReduceCrossBarrierValues``) keeps a reference
into a map that it then grows. With that recomputation off (its instruction threshold 0) every
such value is saved, as one over the threshold always is, and the pass never reaches that code.

With the recomputation off (or at any threshold up to 8 at least), the compiler mis-builds a
loop whose barriers cut it into regions in a cube of fewer units than its vectors hold (1, 3, 4
and 8 units seen, of 16 lanes on an AVX-512 CPU) where the kernel declares a ``__local`` array
that small: the values one unit placed in it were not those another unit read (garbage, or
zeros), with no error. The same arrays carved out of a ``__local`` pointer argument are read
right, so on this runtime every shared array is (``Capability.SHARED_ARGUMENT``, see
:mod:`ruda_opencl.capabilities`).

The setting travels in ``CL_CONFIG_LLVM_OPTIONS``, which the runtime reads when it first
compiles. An option the runtime does not know ends the process, so :func:`avoid_compiler_crash`
adds it only where every library of Intel's runtime the ICD loader will open names both the
variable and the option. A value already set is kept and the option appended to it, unless it
sets the threshold itself. Imports no driver.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["COMPILER_OPTION", "avoid_compiler_crash"]

_VARIABLE = "CL_CONFIG_LLVM_OPTIONS"
_THRESHOLD = "sycl-barrier-copy-instruction-threshold"
#: The option that turns the recomputation of values across barriers off.
COMPILER_OPTION = f"-{_THRESHOLD}=0"
#: The file name of the runtime's library (``libintelocl.so``, with or without its version).
_LIBRARY = "libintelocl.so"


def _knows_option(library: str) -> bool:
    """Whether the file ``library`` names the variable and the threshold option (False where
    it cannot be read: a bare name the loader resolves, a missing file)."""
    try:
        with open(library, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return all(m.find(word.encode()) >= 0 for word in (_VARIABLE, _THRESHOLD))
    except (OSError, ValueError):
        return False


def avoid_compiler_crash(libraries: Iterable[str]) -> bool:
    """Add :data:`COMPILER_OPTION` to ``CL_CONFIG_LLVM_OPTIONS`` where ``libraries`` (those the
    ICD loader will open) hold Intel's CPU runtime and each of its libraries knows the option.
    Call it before the process's first OpenCL build.

    :returns: whether the variable now turns the recomputation off.
    """
    current = os.environ.get(_VARIABLE, "")
    if _THRESHOLD in current:
        return COMPILER_OPTION in current.split()
    intel = [lib for lib in libraries if Path(lib).name.startswith(_LIBRARY)]
    if not intel or not all(map(_knows_option, intel)):
        return False
    os.environ[_VARIABLE] = f"{current} {COMPILER_OPTION}".strip()
    return True
