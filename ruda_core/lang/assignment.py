"""Definite assignment: a name may be read only where every path that reaches the read has
assigned it, as in Java, C# and Rust (Python raises ``UnboundLocalError`` at run time instead).

The analysis follows the build, so a compile-time ``if`` counts only the branch it builds and an
unrolled loop each of its iterations. A frame's ``scope`` holds the names assigned on every path
to the point being built, and ``live`` says whether any path reaches it (it does not after a
``break``, ``continue`` or ``return``). Where paths meet, :func:`join` keeps the names that every
live path assigned, to the same value; it records why it dropped each other name, for the
message of a later read (:attr:`~.scope.Frame.unsure`). The paths that meet:

* after an ``if`` on a run-time condition: the end of each branch;
* after an IR loop (:func:`leave_loop`): its ``break`` statements and, unless the loop runs until
  a ``break`` (``while True``), its test failing: before the first iteration, unless the loop is
  known to run once (a ``range`` of compile-time bounds that is not empty), and after any
  iteration (the end of its body, its ``continue`` statements). So what a loop's body assigns
  counts after the loop only where the loop runs at least once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .scope import Frame, Value

__all__ = ["LoopExits", "PathEnd", "here", "join", "jump", "leave_loop", "restart"]


@dataclass(frozen=True, slots=True)
class PathEnd:
    """Where one path ends: the names it assigned (a copy) and whether it is ``live``."""

    scope: dict[str, Value]
    live: bool


@dataclass(slots=True)
class LoopExits:
    """The paths that leave an IR loop by ``break`` and go back to its test by ``continue``."""

    breaks: list[PathEnd] = field(default_factory=list)
    continues: list[PathEnd] = field(default_factory=list)


def here(frame: Frame) -> PathEnd:
    """The path at the point being built."""
    return PathEnd(dict(frame.scope), frame.live)


def restart(frame: Frame, start: PathEnd) -> None:
    """Build on from ``start`` again (the ``else`` branch of an ``if`` from its test)."""
    frame.scope, frame.live = dict(start.scope), start.live


def jump(frame: Frame, to: list[PathEnd]) -> None:
    """A ``break`` or ``continue`` to ``to``: what follows in its block is not reached."""
    to.append(here(frame))
    frame.live = False


def join(frame: Frame, ends: Sequence[PathEnd]) -> None:
    """Build on where the paths ``ends`` meet (none: a point no path reaches)."""
    live = [end for end in ends if end.live]
    frame.live = bool(live)
    if not ends:
        return
    first, *rest = live or ends
    kept = {n: v for n, v in first.scope.items() if all(e.scope.get(n) is v for e in rest)}
    for name in {n for e in (first, *rest) for n in e.scope} - kept.keys():
        if all(name in e.scope for e in (first, *rest)):
            frame.unsure[name] = _DIFFERS
        else:
            frame.unsure[name] = _PARTLY
    frame.scope = kept


_PARTLY = (
    "is not assigned on every path to this read (a branch of an `if` that does not assign it, "
    "or a loop that may run no iteration, comes first); assign it before that `if` or loop"
)
_DIFFERS = (
    "holds different compile-time values on the paths to this read; give it one value before "
    "the `if` or loop that sets it, or read it where it is set"
)


def leave_loop(
    frame: Frame, entry: PathEnd, exits: LoopExits, *, tested: bool, runs_once: bool
) -> None:
    """Build on after an IR loop whose body was just built from ``entry``.

    :param tested: the loop ends when its test fails (``False``: only a ``break`` leaves it).
    :param runs_once: its first iteration always runs (a non-empty compile-time ``range``).
    """
    ends = list(exits.breaks)
    if tested:
        ends += [here(frame), *exits.continues]
        if not runs_once:
            ends.append(entry)
    join(frame, ends)
