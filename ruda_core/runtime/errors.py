"""The one exception tree of ruda.

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
    │   ├── ValidationError               Validate mode found an out-of-bounds access
    │   ├── UnsupportedFeature (NotImplementedError)   the device lacks a capability
    │   ├── AutotuneError                 every candidate of a tunable set failed
    │   └── ServerUnhealthy               the device is lost; recreate the process
    ├── RudaPanic (RuntimeError)          the panicking form of a ServerError
    │   └── DeploymentTagsError           deployment tags changed after their first use
    └── PluginError                       a driver plugin is broken or unavailable
        └── BackendUnavailable            a named backend cannot be used (says what is missing)

Warnings subclass :class:`RudaWarning`.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "AutotuneError",
    "BackendUnavailable",
    "BufferTooBig",
    "CompilationError",
    "DeploymentTagsError",
    "InvalidHandle",
    "IoError",
    "LaunchConfigError",
    "LaunchError",
    "LayoutError",
    "OutOfMemory",
    "PluginError",
    "RudaPanic",
    "RudaWarning",
    "ServerError",
    "ServerUnhealthy",
    "TooManyResources",
    "UnsupportedFeature",
    "ValidationError",
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


class ValidationError(ServerError):
    """Validate mode found an out-of-bounds access. The message names the kernel, the buffer,
    the index and the length (``kernel``, ``buffer``, ``index``, ``length`` attributes)."""

    def __init__(
        self, message: str, *, kernel: str = "", buffer: str = "", index: int = 0, length: int = 0
    ) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.buffer = buffer
        self.index = index
        self.length = length


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


class ServerUnhealthy(ServerError):
    """The device is in an unrecoverable state (a lost context). Recreate the process."""


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
