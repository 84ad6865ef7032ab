"""OpenCL driver access through PyOpenCL: device discovery, program building and loading, error
translation and the driver-stack fingerprint. Imports PyOpenCL; the rest of ruda_opencl reaches
it only through this module, the server, the storage and the capability reader.

Discovery lists every device of every platform, in a stable order; before the first platform
query the ICD loader is shown pip-installed runtimes too (:mod:`ruda_opencl.icd`), and Intel's
CPU compiler is set to avoid its crash (:mod:`ruda_opencl.intel_cpu`). ``type_id``
follows ``Runtime.enumerate_devices``: 0 lists every type; 1 GPU, 2 CPU, 3 accelerator, 4
anything else.

Every PyOpenCL error becomes a ruda error here, in :func:`translate` (:func:`guard` runs a call
through it) and :func:`build_program`, and nowhere else.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyopencl as cl

from ruda_core.runtime import CompilationError, LaunchError, OutOfMemory, ServerError

from .icd import expose_pip_runtimes, sources
from .intel_cpu import avoid_compiler_crash

__all__ = [
    "TYPE_IDS",
    "all_devices",
    "build_failure_summary",
    "build_program",
    "driver_fingerprint",
    "explain_build_log",
    "guard",
    "load_program",
    "platform_runtime",
    "translate",
    "type_id_of",
]

T = TypeVar("T")

#: OpenCL device type bit -> ruda type id
TYPE_IDS = {
    cl.device_type.GPU: 1,
    cl.device_type.CPU: 2,
    cl.device_type.ACCELERATOR: 3,
}


#: Status codes of a driver that had no room for an allocation.
_OUT_OF_MEMORY = {
    cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
    cl.status_code.OUT_OF_RESOURCES,
    cl.status_code.OUT_OF_HOST_MEMORY,
}


def translate(what: str, exc: cl.Error, kind: type[ServerError] = LaunchError) -> ServerError:
    """The ruda error for ``exc``, a PyOpenCL failure while ``what``, for the caller to raise
    ``from exc``: a ``kind`` naming ``what`` and the driver's status. ``kind`` is
    ``LaunchError`` by default, ``IoError`` for a transfer; ``OutOfMemory`` (for an allocation)
    is kept only when the status says the driver had no room, else it is a ``LaunchError``."""
    if kind is OutOfMemory and exc.code not in _OUT_OF_MEMORY:
        kind = LaunchError
    return kind(f"{what} failed on OpenCL: {exc}")


def guard(what: str, fn: Callable[[], T], kind: type[ServerError] = LaunchError) -> T:
    """Run a PyOpenCL call; its errors become ruda errors naming ``what`` (:func:`translate`)."""
    try:
        return fn()
    except cl.Error as exc:
        raise translate(what, exc, kind) from exc


def build_program(
    context: Any,
    device: Any,
    source: str,
    options: Sequence[str],
    name: str,
    where: tuple[str | None, int | None] = (None, None),
) -> Any:
    """Build OpenCL C for ``device`` (a ``pyopencl.Device``) with ``options``. ``name`` is the
    kernel's name and ``where`` its Python file and line, for the error. A driver's
    informational build log is not an error and is not shown. PyOpenCL's own cache of built
    programs is not used: ruda keeps the binary in its cache (``RUDA_CACHE_DIR``, which
    ``ruda cache`` lists and clears), and PyOpenCL's would hold a second copy outside it, with
    no bound. A failed build leaves no file behind: the copy of the source PyOpenCL saves in
    the temporary folder is removed, the error lists the source itself.

    :raises CompilationError: with the first line of the build log explained (a known cause
        with its remedy), the log and the numbered generated source.
    """
    program = cl.Program(context, source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            # False turns PyOpenCL's cache off, which its annotation (str | None) leaves out
            program.build(options=list(options), cache_dir=False)  # type: ignore[arg-type]
    except cl.Error as exc:
        log = _without_saved_source(str(exc))
        numbered = "\n".join(f"{k:4d}  {line}" for k, line in enumerate(source.splitlines(), 1))
        raise CompilationError(
            f"kernel {name} did not build for {device.name}: "
            f"{build_failure_summary(device, log)}\n"
            f"{log}\n--- generated OpenCL C ---\n{numbered}",
            file=where[0],
            line=where[1],
        ) from exc
    return program


_SAVED_SOURCE = re.compile(r"\n\(source saved as (.+?\.cl)\)")


def _without_saved_source(message: str) -> str:
    """PyOpenCL's build error ``message`` less the note of where it saved the source, that file
    deleted."""
    saved = _SAVED_SOURCE.search(message)
    if saved is None:
        return message
    with contextlib.suppress(OSError):
        os.remove(saved.group(1))
    return message[: saved.start()] + message[saved.end() :]


def load_program(context: Any, device: Any, binary: bytes, options: Sequence[str]) -> Any:
    """Rebuild a program for ``device`` from the binary an earlier build gave.

    :raises LaunchError: when the driver does not accept the binary.
    """

    def build() -> Any:
        program = cl.Program(context, [device], [binary])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program.build(options=list(options))
        return program

    return guard("loading a cached program", build)


def type_id_of(device: Any) -> int:
    """The ruda type id of a ``pyopencl.Device``."""
    for bit, type_id in TYPE_IDS.items():
        if device.type & bit:
            return type_id
    return 4


@functools.cache
def all_devices() -> tuple[Any, ...]:
    """Every OpenCL device of every platform, platform by platform. A platform whose query
    fails (a broken ICD) contributes no device."""
    expose_pip_runtimes()
    loaded = os.environ.get("OCL_ICD_FILENAMES", "").split(":")  # opened beside the folder's
    avoid_compiler_crash([*(source.library for source in sources()), *filter(None, loaded)])
    try:
        platforms = cl.get_platforms()
    except cl.LogicError:  # no ICD installed: the loader reports no platform
        return ()
    found: list[Any] = []
    for platform in platforms:
        try:
            found.extend(platform.get_devices())
        except cl.Error:  # a platform without devices raises DEVICE_NOT_FOUND
            continue
    return tuple(found)


def driver_fingerprint(device: Any) -> str:
    """Platform, device and driver versions: what can change a compiled program or a tuning."""
    platform = device.platform
    return (
        f"{platform.name} {platform.version} | {device.name} | {device.version} | "
        f"driver {device.driver_version} | pyopencl {cl.VERSION_TEXT}"
    )


def platform_runtime(device: Any) -> str:
    """The OpenCL runtime a device comes from: its platform's name and version."""
    platform = device.platform
    return f"{platform.name.strip()} ({' '.join(platform.version.split())})"


def build_failure_summary(device: Any, log: str) -> str:
    """Why a program did not build on ``device`` (a ``pyopencl.Device``), in one line."""
    return explain_build_log(platform_runtime(device), device.name.strip(), log)


def explain_build_log(runtime: str, device_name: str, log: str) -> str:
    """One line from a driver's build log: a known cause with its remedy, else the log's first
    error line. ``runtime`` is :func:`platform_runtime`'s text, ``device_name`` the device's."""
    unknown_cpu = re.search(r"unknown target CPU '([^']*)'", log)
    if unknown_cpu:
        llvm = re.search(r"LLVM [0-9.]+", runtime)
        return (
            f"{runtime} cannot build for this CPU ({device_name}): its compiler"
            f"{f' ({llvm.group()})' if llvm else ''} reports unknown target CPU "
            f"'{unknown_cpu.group(1)}', this CPU is newer than it. Install Intel's CPU OpenCL "
            "runtime, which builds for every x86-64 CPU: pip install 'ruda[opencl-cpu]'"
        )
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    after_header = [b for a, b in itertools.pairwise(lines) if a.startswith("Build on")]
    return (errors or after_header or lines or ["(empty build log)"])[0]
