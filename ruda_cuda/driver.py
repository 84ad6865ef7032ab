"""CUDA driver access through CuPy: NVRTC compilation to a cubin, module loading, error
translation and the driver-stack fingerprint. Imports CuPy; the rest of ruda_cuda reaches CuPy
only through this module and the server.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable
from typing import Any, TypeVar

import cupy
from cupy.cuda import function, nvrtc, runtime

from ruda_core.runtime import CompilationError, LaunchError, OutOfMemory, ServerUnhealthy

__all__ = ["build_cubin", "driver_fingerprint", "guard", "include_dirs", "load_module"]

T = TypeVar("T")

# cudaError_t values that leave the context unusable (a faulting kernel)
_STICKY = {700, 701, 702, 714, 715, 716, 717, 718, 719, 720}
_MEMORY_ALLOCATION = 2


def guard(what: str, fn: Callable[[], T]) -> T:
    """Run a CUDA call; its errors become ruda errors naming ``what``."""
    try:
        return fn()
    except runtime.CUDARuntimeError as exc:
        if exc.status == _MEMORY_ALLOCATION:
            raise OutOfMemory(f"{what}: the GPU is out of memory ({exc})") from exc
        if exc.status in _STICKY:
            raise ServerUnhealthy(
                f"{what}: {exc}. A kernel faulted and the CUDA context is lost; restart the "
                "process (run with RUDA_BOUNDS_CHECK=validate to find the access)"
            ) from exc
        raise LaunchError(f"{what} failed: {exc}") from exc
    except cupy.cuda.driver.CUDADriverError as exc:
        raise LaunchError(f"{what} failed: {exc}") from exc


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Folders holding cuda_fp16.h / cuda_bf16.h for NVRTC: the toolkit's, else CuPy's copy."""
    candidates = []
    cuda_path = cupy.cuda.get_cuda_path()
    if cuda_path:
        candidates.append(os.path.join(cuda_path, "include"))
    core = os.path.dirname(cupy._core.__file__)
    candidates += sorted(glob.glob(os.path.join(core, "include", "cupy", "_cuda", "cuda-*")))
    return tuple(c for c in candidates if os.path.isdir(c))


def build_cubin(
    source: str, name: str, arch: str, where: tuple[str | None, int | None] = (None, None)
) -> bytes:
    """Compile CUDA C++ with NVRTC to a cubin for ``arch`` (e.g. ``"sm_90"``), never PTX.
    ``where`` is the kernel's Python file and line, for the error.

    Floating-point contraction is off (``--fmad=false``) so results match the reference device;
    kernels ask for fused multiply-add explicitly with ``fma``.

    :raises CompilationError: with NVRTC's log when the source does not compile.
    """
    options = ["--std=c++17", f"--gpu-architecture={arch}", "--fmad=false"]
    options += [f"-I{path}" for path in include_dirs()]
    program = nvrtc.createProgram(source, f"{name}.cu", [], [])
    try:
        nvrtc.compileProgram(program, options)
        return bytes(nvrtc.getCUBIN(program))
    except nvrtc.NVRTCError as exc:
        log = nvrtc.getProgramLog(program)
        numbered = "\n".join(f"{k:4d}  {line}" for k, line in enumerate(source.splitlines(), 1))
        raise CompilationError(
            f"kernel {name} did not compile with NVRTC ({exc}):\n{log}\n"
            f"--- generated CUDA C++ ---\n{numbered}",
            file=where[0],
            line=where[1],
        ) from exc
    finally:
        nvrtc.destroyProgram(program)


def load_module(cubin: bytes) -> Any:
    """Load a cubin into the current context."""
    module = function.Module()
    guard("loading a CUDA module", lambda: module.load(cubin))
    return module


@functools.cache
def driver_fingerprint() -> str:
    """Driver, runtime, NVRTC and CuPy versions: what can change a cubin or a tuning."""
    major, minor = nvrtc.getVersion()
    return (
        f"cuda driver {runtime.driverGetVersion()} runtime {runtime.runtimeGetVersion()} "
        f"nvrtc {major}.{minor} cupy {cupy.__version__}"
    )
