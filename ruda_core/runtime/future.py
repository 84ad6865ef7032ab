"""``RudaFuture``: the result of asynchronous work (``sync()``, ``read_async`` …).

Creating a future never waits. ``result(timeout)`` blocks until the work is done and returns
its value or raises its :class:`~ruda_core.runtime.ServerError`; the outcome is computed
once and remembered, so every caller sees the same value or error. ``await fut`` waits without
blocking the event loop. A future speaks a fence's words too (``done()``, ``wait()``), so a
driver may hand one out as a :class:`~.memory.Fence`, and :meth:`RudaFuture.after` makes a
future of a driver's fence.

No wait blocks in a driver call that a signal cannot end: a driver event is waited for by
polling its status between sleeps (:func:`wait_until`), so Ctrl-C (``KeyboardInterrupt``) reaches
a thread waiting in ``result()`` within a millisecond on every device.
"""

from __future__ import annotations

import asyncio
import contextlib
import numbers
import threading
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from . import fork
from .process_bound import ProcessBound

if TYPE_CHECKING:
    from .memory.management import Fence

__all__ = ["Promise", "RudaFuture", "wait_until"]

T = TypeVar("T")
U = TypeVar("U")

_PENDING = object()
#: The longest wait of one executor call of an ``await``: how soon a cancelled ``await`` lets
#: its thread go (``asyncio.run`` waits for the executor's threads as it ends).
AWAIT_SLICE_S = 0.05
#: The first and the longest sleep between two polls of :func:`wait_until`: a short wait is
#: seen within tens of microseconds, a long one costs a thousand cheap polls a second.
_FIRST_PAUSE_S = 20e-6
_LONGEST_PAUSE_S = 1e-3


def wait_until(done: Callable[[], bool], timeout: float | None = None) -> bool:
    """Poll ``done`` (a non-blocking query, e.g. a driver event's status) between sleeps that
    grow from 20 µs to 1 ms, until it is True or ``timeout`` seconds (``None``: no limit) have
    passed; return its last answer. The sleeps end on a signal, so the main thread's
    ``KeyboardInterrupt`` is raised here at once, unlike in a driver's blocking wait."""
    if done():
        return True
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = _FIRST_PAUSE_S
    while not done():
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            pause = min(pause, left)
        time.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE_S)
    return True


class RudaFuture(ProcessBound, Generic[T]):
    """A value that becomes available when queued device work completes.

    :param wait: blocks up to ``timeout`` seconds (``None``: forever) and returns the value,
        raises ``TimeoutError`` if it is not ready in time, or raises the work's error.
    :param done: returns True once ``wait`` would return without blocking. Must not block.
    """

    __slots__ = ("_born", "_done", "_error", "_lock", "_value", "_wait")

    def __init__(self, wait: Callable[[float | None], T], done: Callable[[], bool]) -> None:
        self._born = fork.generation  # a forked child cannot wait for its parent's work
        self._wait = wait
        self._done = done
        self._lock = threading.Lock()
        self._value: Any = _PENDING
        self._error: BaseException | None = None

    @classmethod
    def ready(cls, value: T) -> RudaFuture[T]:
        """A future that is already complete with ``value``."""
        fut: RudaFuture[T] = cls(lambda _t: value, lambda: True)
        fut._value = value
        return fut

    @classmethod
    def failed(cls, error: BaseException) -> RudaFuture[T]:
        """A future that is already complete with ``error``."""

        def wait(_timeout: float | None) -> T:
            raise error

        fut: RudaFuture[T] = cls(wait, lambda: True)
        fut._error = error
        return fut

    def done(self) -> bool:
        """True when the work has completed (successfully or not), or can never complete in
        this process (it forked after queueing the work). Never blocks."""
        return (
            self._value is not _PENDING
            or self._error is not None
            or self._born != fork.generation
            or self._done()
        )

    def result(self, timeout: float | None = None) -> T:
        """Wait for the work and return its value.

        :raises TimeoutError: when it is not complete within ``timeout`` seconds.
        :raises ServerError: the error of the work, every time ``result`` is called;
            ``ServerUnhealthy`` in a process forked after the work was queued and before it
            completed.
        :raises TypeError: for a ``timeout`` that is not a number of seconds (nothing waits).
        """
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or timeout != timeout
        ):
            raise TypeError(f"timeout must be a number of seconds or None, not {timeout!r}")
        if self._value is not _PENDING:
            return self._value  # type: ignore[no-any-return]  # a T once set
        if self._born != fork.generation and self._error is None:
            raise fork.forked_future()  # before the lock: the parent may have held it
        deadline = None if timeout is None else time.monotonic() + timeout
        # another thread may be waiting with the lock: this call waits no longer than its own
        if not self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0)):
            raise TimeoutError(f"the device work was not complete within {timeout} s")
        try:
            if self._value is _PENDING and self._error is None:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                try:
                    self._value = self._wait(left)
                except (TimeoutError, KeyboardInterrupt, SystemExit):  # the waiter's, not the
                    raise  # work's: a later call waits again
                except BaseException as exc:
                    self._error = exc
            if self._error is not None:
                raise self._error
            return cast(T, self._value)
        finally:
            self._lock.release()

    def wait(self) -> None:
        """Block until the work is done and raise its error, as :meth:`result` does, without
        its value: what a :class:`~.memory.Fence` is asked."""
        self.result()

    @classmethod
    def after(cls, fence: Fence, value: Callable[[], T]) -> RudaFuture[T]:
        """A future of ``value()`` once ``fence`` is done: ``result`` polls ``fence.done()``
        (:func:`wait_until`) until it is True or the timeout has passed, then calls
        ``fence.wait()``, which no longer blocks (and raises the work's error, if any), and
        then ``value()``, once."""

        def timed_wait(timeout: float | None) -> T:
            if not wait_until(fence.done, timeout):
                raise TimeoutError(f"the device work was not complete within {timeout} s")
            fence.wait()
            return value()

        return cls(timed_wait, fence.done)

    def then(self, fn: Callable[[T], U]) -> RudaFuture[U]:
        """A future of ``fn(result)``; ``fn`` runs once, in the thread that first waits."""
        return RudaFuture(lambda timeout: fn(self.result(timeout)), self.done)

    def __await__(self) -> Generator[Any, None, T]:
        loop = asyncio.get_running_loop()
        while not self.done():  # waits of a bounded length: a cancelled await ends soon after
            yield from loop.run_in_executor(None, self._settle).__await__()
        return self.result()

    def _settle(self) -> None:
        # a timeout waits again; the work's error is remembered, and raised by result()
        with contextlib.suppress(Exception):
            self.result(AWAIT_SLICE_S)

    def __repr__(self) -> str:
        return f"<RudaFuture {'done' if self.done() else 'pending'}>"

    def sent_instead(self) -> str:
        return "Wait for it here (future.result()) and send its value"


class Promise(Generic[T]):
    """The producing side of a :class:`RudaFuture`: a worker completes it exactly once. The
    future waits on an outcome the promise shares, never on the promise itself: a promise and
    its future make no reference cycle, so the value (a read's bytes) goes as soon as both are
    dropped, not at the next garbage collection."""

    __slots__ = ("_outcome", "future")

    def __init__(self) -> None:
        self._outcome: _Outcome[T] = _Outcome()
        self.future: RudaFuture[T] = RudaFuture(self._outcome.wait, self._outcome.event.is_set)

    def set_result(self, value: T) -> None:
        self._outcome.value = value
        self._outcome.event.set()

    def set_error(self, error: BaseException) -> None:
        self._outcome.error = error
        self._outcome.event.set()


class _Outcome(Generic[T]):
    """What a :class:`Promise` was completed with, and when."""

    __slots__ = ("error", "event", "value")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def wait(self, timeout: float | None) -> T:
        if not self.event.wait(timeout):
            raise TimeoutError(f"the device work was not complete within {timeout} s")
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[no-any-return]  # set by set_result
