"""Progress of one tuning (:class:`TuningProgress`): a line per candidate on the
``ruda.autotune`` logger, and a one-line bar on stderr while candidates are measured.

Each candidate logs ``measuring`` at DEBUG before it runs, then its cost or the error that
excluded it at INFO. The bar is drawn only when ``sys.stderr`` is a terminal, and erased when
the tuning ends; pipes, files, pytest's capture and notebooks get nothing on stderr. This
module measures nothing and never raises for a stderr it cannot write.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
from typing import Self, TextIO

__all__ = ["TuningProgress"]

_log = logging.getLogger("ruda.autotune")
_BAR = 20


def _terminal() -> TextIO | None:
    stream = sys.stderr
    try:
        return stream if stream is not None and stream.isatty() else None
    except (AttributeError, ValueError):  # an object without isatty, or a closed stream
        return None


def _duration(ns: int) -> str:
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns} ns"


class TuningProgress:
    """Reports the measuring of ``total`` candidates of the set ``set_name`` for ``key`` (a
    ``repr``). A context manager: call :meth:`start` before each candidate, then
    :meth:`measured` or :meth:`excluded`; leaving it erases the bar. Used by one thread at a
    time."""

    __slots__ = ("_drawn", "_head", "_terminal", "_total", "_width")

    def __init__(self, set_name: str, key: str, total: int) -> None:
        self._head = f"autotune {set_name} {key}"
        self._total = total
        self._terminal = _terminal()
        self._drawn = False
        self._width = shutil.get_terminal_size().columns - 1 if self._terminal else 0

    def start(self, index: int, name: str) -> None:
        """Candidate ``index`` (from 0), ``name``, is about to be measured."""
        _log.debug("%s: [%d/%d] measuring %s", self._head, index + 1, self._total, name)
        done = _BAR * index // self._total
        self._draw(f"{self._head} [{'#' * done}{'.' * (_BAR - done)}] {index}/{self._total} {name}")

    def measured(self, index: int, name: str, cost_ns: int) -> None:
        self._draw("")  # a log handler on the terminal then writes on a clean line
        _log.info(
            "%s: [%d/%d] %s: %s", self._head, index + 1, self._total, name, _duration(cost_ns)
        )

    def excluded(self, index: int, name: str, error: BaseException) -> None:
        self._draw("")
        _log.info("%s: [%d/%d] %s excluded: %r", self._head, index + 1, self._total, name, error)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._draw("")

    def _draw(self, line: str) -> None:
        """Show ``line`` as the bar; an empty one erases a bar that is shown."""
        if self._terminal is None or not (line or self._drawn):
            return
        self._drawn = bool(line)
        with contextlib.suppress(OSError, ValueError):  # a bar must never fail a tuning
            self._terminal.write(f"\r{line[: self._width]:<{self._width}}\r")
            self._terminal.flush()
