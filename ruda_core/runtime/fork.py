"""Servers across ``os.fork()``: what a forked child may use.

A fork copies a process's memory but none of its other threads and no driver state that lives
outside Python: the NumPy device's stream workers, PoCL's worker threads and a CUDA context all
stay behind in the parent, so a server the child inherited would accept work that never runs.
Two rules replace that silent hang with a clear error at first use:

* every server alive at the fork is *retired* in the child: its lock is replaced by one that
  raises :class:`ServerUnhealthy`, so each of its methods that touches the device raises,
  naming the fork and the ``spawn`` start method;
* a server class that had a server before the fork may make new ones in the child only when it
  declares ``fork_safe`` (the NumPy device does: it keeps no state outside Python; CUDA and
  OpenCL do not, since their drivers cannot be used again in a forked child). Otherwise
  creating one raises the same error, before the backend touches its driver.

Futures and reads created before the fork cannot complete in the child either: each notes the
fork :data:`generation` it was made in, and one of an earlier generation raises
:func:`forked_future`'s error instead of waiting for ever. This module never imports a driver;
its fork hook runs in the child only.
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING

from ..errors import ServerUnhealthy
from .device_names import device_name

if TYPE_CHECKING:
    from .server import ComputeServer

__all__ = ["check_new_server", "forked_future", "generation", "track"]

#: Servers alive in this process (retired in a forked child).
_live: weakref.WeakSet[ComputeServer] = weakref.WeakSet()
#: Server classes that had a server in an ancestor process before it forked.
_inherited: set[type[ComputeServer]] = set()
#: How many forks made this process from the first: a future remembers the one it was made in.
generation = 0

_REMEDY = (
    "Start worker processes with the 'spawn' start method instead of fork, e.g. "
    "multiprocessing.get_context('spawn') or ProcessPoolExecutor(mp_context="
    "multiprocessing.get_context('spawn')), or open devices only in the child processes"
)


class _RetiredLock:
    """Stands in for the lock of a server retired by a fork: entering or acquiring it raises."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error

    def __enter__(self) -> None:
        raise ServerUnhealthy(self.error)

    def acquire(self) -> bool:
        raise ServerUnhealthy(self.error)

    def release(self) -> None:
        """Never reached: acquiring raised."""

    def __exit__(self, *exc: object) -> None:
        """Never reached: entering raised."""


def track(server: ComputeServer) -> None:
    """Remember ``server``, to retire it in a process forked from this one. Thread-safe."""
    _live.add(server)


def check_new_server(cls: type[ComputeServer]) -> None:
    """Refuse to make a ``cls`` server in a forked child of a process that had one, unless
    ``cls.fork_safe``.

    :raises ServerUnhealthy: naming the fork and the ``spawn`` start method.
    """
    if cls in _inherited and not cls.fork_safe:
        raise ServerUnhealthy(
            f"{cls.__name__} cannot be used in process {os.getpid()}: it is a fork of a process "
            f"that used it, and this backend's driver does not survive fork(). {_REMEDY}"
        )


def forked_future() -> ServerUnhealthy:
    """The error of a future made before this process forked from its parent: its work runs
    in the parent, and the child never sees it complete."""
    return ServerUnhealthy(
        f"this result was awaited in process {os.getpid()}, a fork of the process that queued "
        "its device work before the fork: the work runs in the parent, so the child never sees "
        f"it complete. {_REMEDY}"
    )


def _retire_in_child() -> None:
    global generation
    generation += 1
    parent = os.getppid()
    for server in list(_live):
        _inherited.add(type(server))
        server.retired = (
            f"{type(server).__name__} of {device_name(server.server_id)} was created in process "
            f"{parent}, and process {os.getpid()} is a fork of it: a forked child cannot use its "
            "parent's servers (their worker threads and driver state stay in the parent). "
            + (
                "Open the device again in the child (ruda_core.client), or: "
                if type(server).fork_safe
                else ""
            )
            + _REMEDY
        )
        server.lock = _RetiredLock(server.retired)
    _live.clear()


if hasattr(os, "register_at_fork"):  # POSIX: elsewhere there is no fork to survive
    os.register_at_fork(after_in_child=_retire_in_child)
