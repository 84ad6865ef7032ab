"""``ProcessBound``: the base of objects that stand for something of this process alone (a
device's client or server, work queued on a device), which neither pickle nor copy.

A copy, shallow or deep, is the object itself, as for a module or a lock's owner: there is one
connection to a device in a process, and one outcome of queued work. Pickling, which would carry
the object to another process (Dask, ``multiprocessing``), is refused with a ``TypeError`` that
says what to send instead, rather than the pickling of some inner lock or driver object failing
without a word about why.
"""

from __future__ import annotations

from typing import NoReturn, Self

__all__ = ["ProcessBound"]


class ProcessBound:
    """Copies are the object itself; pickling raises ``TypeError`` with :meth:`sent_instead`."""

    __slots__ = ()

    def sent_instead(self) -> str:
        """What to send to another process instead of this object, as a sentence."""
        raise NotImplementedError

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        return self

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            f"{self!r} does not pickle: it belongs to this process. {self.sent_instead()}"
        )
