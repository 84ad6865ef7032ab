"""The one exception tree of ruda.

A leaf module: it imports nothing of ruda, so every layer, the IR included, may raise these.
``ruda_core.runtime`` re-exports every name.
A Rust ``Result`` error is a :class:`ServerError`; a Rust panic is a :class:`RudaPanic` raised
``from`` the ``ServerError`` that caused it. The client stays usable after either::

    Exception
    ├── ServerError                       a failed operation; the client stays usable
    │   ├── LaunchError                   a kernel could not be launched or failed while running
    │   │   ├── CompilationError          the kernel could not be compiled (+ SyntaxError-like
    │   │   │                             location: kernel, file, line)
    │   │   ├── OutOfMemory (MemoryError) transient: free memory and retry
    │   │   ├── TooManyResources          the launch exceeds a device limit; shrink it
    │   │   └── LaunchConfigError (ValueError)   malformed RudaCount / RudaDim / arguments
    │   ├── BufferTooBig (MemoryError)    permanent: the allocation can never fit this device
    │   ├── IoError                       a transfer failed
    │   ├── InvalidHandle (ValueError)    freed, foreign (other device) or too small a handle
    │   ├── LayoutError (ValueError)      a tensor layout the runtime cannot read as is
    │   ├── InteropError (BufferError)    memory that cannot be shared with another library
    │   │                                 as is (device, element type, layout, alignment)
    │   ├── ValidationError               Validate mode found an out-of-bounds access
    │   │   └── SanitizerError            the reference device's sanitizer found races,
    │   │                                 uninitialised reads, divergent barriers or
    │   │                                 out-of-bounds accesses in a launch
    │   ├── UnsupportedFeature (NotImplementedError)   the device lacks a capability
    │   ├── AutotuneError                 every candidate of a tunable set failed
    │   ├── CaptureError                  a call a capture cannot record; a graph on another device
    │   ├── ServerUnhealthy               the device is lost; recreate the process
    │   ├── DeviceTimeout (TimeoutError)  a wait ran out of time; names the kernels still running
    │   └── WorkerLost                    the Dask worker that kept device memory left the
    │                                     cluster; compute the memory again on a live worker
    ├── SettingError (ValueError)         an environment variable ruda reads holds a value
    │                                     it cannot use; names the variable and what it takes
    ├── RudaPanic (RuntimeError)          the panicking form of a ServerError
    │   └── DeploymentTagsError           deployment tags changed after their first use
    └── PluginError                       a driver plugin is broken or unavailable
        └── BackendUnavailable            a named backend cannot be used (says what is missing)

Warnings subclass :class:`RudaWarning`; :class:`ExitTimeoutWarning` says what work was
abandoned at interpreter exit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AutotuneError",
    "BackendUnavailable",
    "BufferTooBig",
    "CaptureError",
    "CompilationError",
    "DeploymentTagsError",
    "DeviceTimeout",
    "ExitTimeoutWarning",
    "InteropError",
    "InvalidHandle",
    "IoError",
    "LaunchConfigError",
    "LaunchError",
    "LayoutError",
    "OutOfBoundsReport",
    "OutOfMemory",
    "PluginError",
    "RudaPanic",
    "RudaWarning",
    "SanitizerError",
    "SanitizerFinding",
    "ServerError",
    "ServerUnhealthy",
    "SettingError",
    "TooManyResources",
    "UnsupportedFeature",
    "ValidationError",
    "WorkerLost",
]


class ServerError(Exception):
    """A failed runtime operation. The client that raised it remains usable."""


class LaunchError(ServerError):
    """A kernel could not be launched, or failed while it ran."""


class CompilationError(LaunchError):
    """A kernel could not be compiled. The message names the kernel and, where known, the
    Python file and line (``file``, ``line`` attributes) and the backend's log."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.line = line


class OutOfMemory(LaunchError, MemoryError):
    """Transient: the device has no room now. Drop handles or call ``memory_cleanup()`` and
    retry."""


class TooManyResources(LaunchError):
    """The launch asks for more than the device allows (units per cube, cube count, shared
    memory). Shrink the launch; retrying the same launch will fail again."""


class LaunchConfigError(LaunchError, ValueError):
    """A malformed launch: bad ``RudaCount``/``RudaDim`` or arguments that do not match the
    kernel's parameters."""


class BufferTooBig(ServerError, MemoryError):
    """Permanent: the requested allocation is larger than the device can ever provide."""


class IoError(ServerError):
    """A transfer between host and device failed."""


class InvalidHandle(ServerError, ValueError):
    """A handle that cannot be used here: freed, of another device, or too small."""


class LayoutError(ServerError, ValueError):
    """A tensor layout the runtime refuses to read as is (see ``Runtime.can_read_tensor``)."""


class InteropError(ServerError, BufferError):
    """Memory that cannot be shared with another library (DLPack, the CUDA array interface)
    without a copy: another device, an element type or layout ruda cannot use, a misaligned
    address. ruda never copies instead; the message says what to change."""


@dataclass(frozen=True, slots=True)
class OutOfBoundsReport:
    """The out-of-bounds access Validate mode recorded for one launch: ``kernel`` accessed
    ``buffer[index]`` while ``buffer`` has ``length`` elements."""

    kernel: str
    buffer: str
    index: int
    length: int

    def __str__(self) -> str:
        return (
            f"kernel {self.kernel} accessed {self.buffer}[{self.index}] but {self.buffer} has "
            f"length {self.length}"
        )


class ValidationError(ServerError):
    """Validate mode found out-of-bounds accesses in ``count`` launches since the last sync.

    ``reports`` holds the first of them in launch order (at most ``MAX_REPORTS``), each naming
    the kernel, the buffer, the index and the length; ``kernel``, ``buffer``, ``index`` and
    ``length`` are those of the first. The message lists every report it holds and how many
    more there were.
    """

    #: The most reports one error holds; later faulting launches are only counted.
    MAX_REPORTS = 8

    def __init__(self, reports: Sequence[OutOfBoundsReport], count: int | None = None) -> None:
        if not reports:
            raise ValueError("a ValidationError needs at least one report")
        self.reports = tuple(reports[: self.MAX_REPORTS])
        self.count = max(count if count is not None else len(reports), len(self.reports))
        first = self.reports[0]
        self.kernel = first.kernel
        self.buffer = first.buffer
        self.index = first.index
        self.length = first.length
        super().__init__(self._describe())

    def _describe(self) -> str:
        if self.count == 1:
            return str(self.reports[0])
        lines = [f"{self.count} launches since the last sync accessed memory out of bounds:"]
        lines += [f"  {report}" for report in self.reports]
        if self.count > len(self.reports):
            lines.append(f"  ... and {self.count - len(self.reports)} more launches")
        return "\n".join(lines)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reports, self.count))


@dataclass(frozen=True)
class SanitizerFinding:
    """One access (or barrier) the sanitizer found wrong in kernel ``kernel``.

    ``kind`` is one of ``read-after-write race``, ``write-after-read race``,
    ``write-after-write race``, ``uninitialised read``, ``divergent barrier``,
    ``divergent plane shuffle`` (a broadcast or shuffle that reads an inactive lane) and
    ``out-of-bounds``; ``line`` is the kernel source's ``file:line``; ``array`` and ``index``
    the element (``array`` is ``""`` and ``index`` -1 for a barrier); ``unit`` the unit that
    made the access as ``(cube, unit)`` position triples; ``other`` the unit it conflicts with
    (a race's earlier access, a barrier's absent unit, a shuffle's source), ``"several"``
    (units read it) or None.
    """

    kernel: str
    kind: str
    line: str
    array: str
    index: int
    unit: tuple[tuple[int, int, int], tuple[int, int, int]]
    other: tuple[tuple[int, int, int], tuple[int, int, int]] | str | None = None

    def __str__(self) -> str:
        cube, unit = self.unit
        where = f"{self.array}[{self.index}] " if self.array else ""
        text = f"{self.kind}: kernel {self.kernel} at {self.line}: {where}"
        text += f"by unit {unit} of cube {cube}"
        if isinstance(self.other, tuple):
            theirs = f"unit {self.other[1]} of cube {self.other[0]}"
            if self.kind == "divergent barrier":
                text += f"; {theirs} is not at the barrier"
            elif self.kind == "divergent plane shuffle":
                text += f"; it reads {theirs}, which is not active"
            else:
                text += f"; conflicts with {theirs}"
        elif self.other is not None:
            text += f"; conflicts with {self.other} units"
        return text


class SanitizerError(ValidationError):
    """The reference device's sanitizer (``RUDA_SANITIZE=1`` or ``ruda_cpu.sanitize(True)``)
    found ``count`` wrong accesses or barriers in one launch; ``findings`` holds the first of
    them (at most ``MAX_REPORTS``) in the order the lockstep execution met them, and ``kinds``
    how many of each kind it found. ``kernel``, ``buffer`` and ``index`` are those of the
    first; ``length`` is -1 (not known for shared memory and races). The message lists every
    finding it holds and how many more there were.
    """

    def __init__(
        self,
        findings: Sequence[SanitizerFinding],
        count: int | None = None,
        kinds: Mapping[str, int] | None = None,
    ) -> None:
        if not findings:
            raise ValueError("a SanitizerError needs at least one finding")
        self.findings = tuple(findings[: self.MAX_REPORTS])
        self.reports = ()
        self.count = max(count if count is not None else len(findings), len(self.findings))
        if kinds is None:
            kinds = {f.kind: sum(g.kind == f.kind for g in findings) for f in findings}
        #: kind -> how many findings of that kind
        self.kinds = dict(kinds)
        first = self.findings[0]
        self.kernel = first.kernel
        self.buffer = first.array
        self.index = first.index
        self.length = -1
        tally = ", ".join(f"{n} {kind}" for kind, n in sorted(self.kinds.items()))
        faults = "fault" if self.count == 1 else "faults"
        lines = [f"the sanitizer found {self.count} {faults} in kernel {self.kernel} ({tally}):"]
        lines += [f"  {finding}" for finding in self.findings]
        if self.count > len(self.findings):
            lines.append(f"  ... and {self.count - len(self.findings)} more")
        if any("race" in kind or "barrier" in kind for kind in self.kinds):
            hint = "a kernel's units must order their accesses with sync_units or atomics"
            lines.append(f"  ({hint})")
        ServerError.__init__(self, "\n".join(lines))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.findings, self.count, self.kinds))


class UnsupportedFeature(ServerError, NotImplementedError):
    """The device or runtime lacks the capability that was asked for."""


class AutotuneError(ServerError):
    """Every candidate of a tunable set failed for one key. The message lists each candidate's
    error; ``errors`` maps candidate names to the exceptions, and ``__cause__`` is the first of
    them. The client stays usable."""

    def __init__(self, message: str, errors: Mapping[str, BaseException]) -> None:
        super().__init__(message)
        #: candidate name -> the exception it raised
        self.errors = dict(errors)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.errors))


class CaptureError(ServerError):
    """A call that a capture cannot record (an allocation, a transfer, a sync, a launch on
    another stream) made inside ``client.capture()``, or a graph replayed on a client of
    another device. Raised at once; nothing was enqueued and the capture stays open."""


class ServerUnhealthy(ServerError):
    """The device is in an unrecoverable state (a lost context). Recreate the process."""


class DeviceTimeout(ServerError, TimeoutError):
    """A wait for device work (``result(timeout)`` of a sync or a read) ran out of time. The
    message names the kernels the device is still running and their streams: a kernel that
    never ends holds up every stream of a device that runs one kernel at a time. Not
    remembered by the future: a later ``result`` waits again."""


class WorkerLost(ServerError):
    """The Dask worker that keeps device memory (a ``ruda_core.dask.DeviceRef``) left the
    cluster, and the memory went with it. The message names the worker and the key; compute
    the memory again on a live worker (see ``ruda_core.dask.gather``)."""


class SettingError(ValueError):
    """An environment variable ruda reads (``RUDA_MEMORY_LIMIT``, ``RUDA_PROBE_TIMEOUT_S`` …)
    holds a value it cannot use; the message names the variable and the values it takes."""


class RudaPanic(RuntimeError):
    """The panicking form of a :class:`ServerError`, raised by the seed's panicking methods
    (``read``, ``read_tensor``, ``read_one_unchecked``, ``init``, ``load``). ``__cause__`` is
    the ``ServerError`` where there is one."""


class DeploymentTagsError(RudaPanic):
    """Deployment tags were changed after their first use (they are immutable from then on)."""


class PluginError(Exception):
    """A driver plugin failed to load or validate."""


class BackendUnavailable(PluginError):
    """A backend that was asked for by name cannot be used; the message says what is missing."""


class RudaWarning(UserWarning):
    """Base class of ruda's warnings."""


class ExitTimeoutWarning(RudaWarning):
    """Device work still unfinished when the interpreter exited, after ``RUDA_EXIT_TIMEOUT_S``
    seconds of waiting for it, was abandoned; the message names the streams and kernels."""
