"""CUDA driver access through CuPy: NVRTC compilation to a cubin, module loading, error
translation and the driver-stack fingerprint. Imports CuPy; the rest of ruda_cuda reaches CuPy
only through this module, the server and the storage.

Every CUDA error becomes a ruda error here, in :func:`translate` (:func:`guard` runs a call
through it) and :func:`build_cubin`, and nowhere else.
"""

from __future__ import annotations

import functools
import glob
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import cupy
from cupy.cuda import function, nvrtc, runtime

from ruda_core.runtime import (
    CompilationError,
    LaunchError,
    OutOfMemory,
    ServerError,
    ServerUnhealthy,
)

__all__ = [
    "activate",
    "build_cubin",
    "driver_fingerprint",
    "guard",
    "include_dirs",
    "load_module",
    "peer_access",
    "translate",
    "wmma_headers",
]

T = TypeVar("T")

# cudaError_t values that leave the context unusable (a faulting kernel)
_STICKY = {700, 701, 702, 714, 715, 716, 717, 718, 719, 720}
_MEMORY_ALLOCATION = 2
_PEER_ACCESS_ALREADY_ENABLED = 704


def translate(what: str, exc: Exception, hint: str = "") -> ServerError:
    """The ruda error for ``exc``, a CUDA runtime or driver error while ``what``, for the caller
    to raise ``from exc``: ``OutOfMemory`` when the runtime reports the GPU full,
    ``ServerUnhealthy`` when a kernel fault lost the context, else a ``LaunchError`` naming
    ``what``, with ``hint`` after the driver's message."""
    if isinstance(exc, runtime.CUDARuntimeError):
        if exc.status == _MEMORY_ALLOCATION:
            return OutOfMemory(f"{what}: the GPU is out of memory ({exc})")
        if exc.status in _STICKY:
            return ServerUnhealthy(
                f"{what}: {exc}. A kernel faulted and the CUDA context is lost; restart the "
                "process (run with RUDA_BOUNDS_CHECK=validate to find the access)"
            )
    return LaunchError(f"{what} failed: {exc}{hint}")


def guard(what: str, fn: Callable[[], T]) -> T:
    """Run a CUDA call; its errors become ruda errors naming ``what`` (:func:`translate`)."""
    try:
        return fn()
    except (runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError) as exc:
        raise translate(what, exc) from exc


def activate(index: int) -> None:
    """Make GPU ``index`` current on the calling thread (CUDA's current device is per thread).
    CUDA is asked which device is current (``cudaGetDevice``, no driver round trip) rather
    than a cached value: other libraries (``torch.cuda.set_device``, ``cupy.cuda.Device.use``)
    change it without ruda knowing, and work would then go to the wrong GPU."""
    if runtime.getDevice() != index:
        guard("selecting the device", lambda: runtime.setDevice(index))


@functools.cache
def peer_access(device: int, peer: int) -> bool:
    """Whether GPUs ``device`` and ``peer`` reach each other's memory directly
    (``cudaDeviceCanAccessPeer`` both ways); the first call for a pair that can enables the
    access both ways (one another library enabled already counts). Leaves the current
    device changed: callers activate theirs after it."""
    reach = runtime.deviceCanAccessPeer
    if not (reach(device, peer) and reach(peer, device)):
        return False
    for accessor, owner in ((device, peer), (peer, device)):
        activate(accessor)
        try:
            runtime.deviceEnablePeerAccess(owner)
        except runtime.CUDARuntimeError as exc:
            if exc.status != _PEER_ACCESS_ALREADY_ENABLED:
                raise translate(f"enabling access of cuda:{accessor} to cuda:{owner}", exc) from exc
    return True


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Folders holding cuda_fp16.h / cuda_bf16.h for NVRTC: the toolkit's, else CuPy's copy;
    then those of NVIDIA's header wheels (``nvidia/*/include``), one of which may hold the
    ``crt/mma.h`` that WMMA's ``mma.h`` includes where no toolkit is installed."""
    candidates = []
    cuda_path = cupy.cuda.get_cuda_path()
    if cuda_path:
        candidates.append(os.path.join(cuda_path, "include"))
    core = os.path.dirname(cupy._core.__file__)
    candidates += sorted(glob.glob(os.path.join(core, "include", "cupy", "_cuda", "cuda-*")))
    for site in sys.path:
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "include")))
    return tuple(dict.fromkeys(c for c in candidates if os.path.isdir(c)))


def wmma_headers() -> bool:
    """Whether NVRTC can include WMMA's ``mma.h``: some include folder holds ``crt/mma.h``."""
    return any(os.path.isfile(os.path.join(d, "crt", "mma.h")) for d in include_dirs())


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
