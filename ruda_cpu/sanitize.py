"""The reference device's sanitizer switch: ``RUDA_SANITIZE`` and :func:`sanitize`.

With the sanitizer on, every launch on the NumPy device runs a variant of its kernel that checks
each access and barrier (see :mod:`ruda_cpu.lockstep.sanitizer`) and fails with a
:class:`~ruda_core.errors.SanitizerError` at the next sync or read when it found shared- or
global-memory races, uninitialised reads, divergent barriers or out-of-bounds accesses. The
switch is read when a launch runs, so it applies to kernels already compiled; the checking
variant of a kernel is built at its first sanitized launch. It is off unless ``RUDA_SANITIZE=1``
is in the environment or :func:`sanitize` (or :func:`sanitizing`) turns it on; the setting is
one per process, shared by every thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ruda_core.runtime import switch_setting

__all__ = ["is_sanitizing", "sanitize", "sanitizing"]

_ENV = "RUDA_SANITIZE"
_set: bool | None = None  # None: as RUDA_SANITIZE says


def sanitize(on: bool | None) -> None:
    """Turn the sanitizer on or off for every later launch of the NumPy device; None returns
    to what ``RUDA_SANITIZE`` says."""
    global _set
    _set = on


def is_sanitizing() -> bool:
    """Whether launches of the NumPy device run sanitized now.

    :raises SettingError: when ``RUDA_SANITIZE`` is set to anything but ``0``, ``1`` or nothing;
        the message names it.
    """
    if _set is not None:
        return _set
    return switch_setting(_ENV, on="sanitize launches on cpu", off="do not")


@contextmanager
def sanitizing(on: bool = True) -> Iterator[None]:
    """Run the block's launches sanitized (or, with ``on=False``, not), then restore the switch.
    Errors surface at the next sync or read, which should then be inside the block too."""
    before = _set
    sanitize(on)
    try:
        yield
    finally:
        sanitize(before)
