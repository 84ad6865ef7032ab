"""Validate-mode report buffers of one stream: :class:`ReportLog`, and :class:`Tally`, the
reports read back for one sync.

A validated launch writes at most one report, 6 ``u32``
``[flag, buffer_no, index_lo, index_hi, length_lo, length_hi]`` (see :mod:`ruda_core.ir.bounds`),
into a slot of its stream's *slab*: one buffer of :data:`REPORT_SLOTS` zeroed reports that every
validated launch of the stream shares. When the slab is full the server *folds* it: it enqueues a
read of the slab and then a write zeroing it, in stream order, so the slab is reused at once and
host memory holds at most the reads still in flight. Memory is therefore bounded however many
launches run between two syncs, and the count of faulting launches stays exact.

A sync folds the slab and *marks* the folds so far. Each fold's reports go to the tally of the
first mark at or after it, and the result of a sync raises its tally with those of the earlier
marks not yet raised: a launch is reported once, by the first sync after it whose result is
taken, and a sync whose future is dropped loses nothing.

Everything here runs under the server's lock and, but for :meth:`ReportLog.settle` (whose reads
are done), never waits for the device; the server owns the driver calls (reads, writes, the
slab's allocation).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from ..errors import OutOfBoundsReport, ServerError, ValidationError
from .future import RudaFuture
from .memory.handle import Binding, Handle

__all__ = ["MAX_FOLDS", "REPORT_SLOTS", "REPORT_WORDS", "SLAB_NBYTES", "ReportLog", "Tally"]

#: ``u32`` words of one launch's report.
REPORT_WORDS = 6
#: Report slots per slab.
REPORT_SLOTS = 256
#: Bytes of one slab.
SLAB_NBYTES = REPORT_SLOTS * REPORT_WORDS * 4
#: Folds whose read may be in flight before a validated launch waits for the oldest.
MAX_FOLDS = 4

#: The kernel and the buffer names (``report_names``) of the launch that took a slot.
Owner = tuple[str, tuple[str, ...]]
#: A fold's number (the first is 1), its read and the owners of its slots.
Fold = tuple[int, RudaFuture[list[memoryview]], list[Owner]]


class Tally:
    """Faulting launches counted so far (``count``) and the first reports, in launch order."""

    __slots__ = ("count", "first")

    def __init__(self) -> None:
        self.count = 0
        self.first: list[OutOfBoundsReport] = []

    def add(self, raw: memoryview, owners: Sequence[Owner]) -> None:
        """Count the set reports of a slab read back as ``raw`` whose slots ``owners`` took."""
        words = np.frombuffer(raw, dtype=np.uint32).reshape(-1, REPORT_WORDS)[: len(owners)]
        hits = np.flatnonzero(words[:, 0]).tolist()
        self.count += len(hits)
        room = ValidationError.MAX_REPORTS - len(self.first)
        self.first += [_report(words[k], *owners[k]) for k in hits[: max(room, 0)]]

    def merge(self, other: Tally) -> None:
        """Count ``other``'s launches after these."""
        self.count += other.count
        self.first += other.first[: max(ValidationError.MAX_REPORTS - len(self.first), 0)]

    def error(self) -> ValidationError | None:
        """The error naming every faulting launch counted, or None when there was none."""
        return ValidationError(self.first, self.count) if self.count else None


class ReportLog:
    """The slab of one stream, the slots taken since the last fold, the folds not yet tallied,
    and the tallies of the syncs' marks not yet raised."""

    __slots__ = ("folded", "folds", "marks", "owners", "slab", "tally")

    def __init__(self, slab: Handle) -> None:
        if slab.nbytes != SLAB_NBYTES:
            raise ValueError(f"a report slab holds {SLAB_NBYTES} bytes, not {slab.nbytes}")
        self.slab = slab
        self.owners: list[Owner] = []
        self.folded = 0  #: folds so far
        self.folds: deque[Fold] = deque()
        #: each unraised mark (the folds before it) with the tally of its folds, oldest first
        self.marks: deque[tuple[int, Tally]] = deque()
        self.tally = Tally()  #: of the folds after the last mark

    @property
    def full(self) -> bool:
        return len(self.owners) == REPORT_SLOTS

    def take_slot(self, owner: Owner) -> Binding:
        """The binding of the next free slot, now owned by ``owner``. The slab must not be full."""
        start = len(self.owners) * REPORT_WORDS * 4
        self.owners.append(owner)
        return self.slab.offset(start, start + REPORT_WORDS * 4).binding()

    def fold(self, read: RudaFuture[list[memoryview]]) -> None:
        """Record that ``read`` (of the whole slab) was enqueued and the slab zeroed after it."""
        self.folded += 1
        self.folds.append((self.folded, read, self.owners))
        self.owners = []

    def harvest(self) -> ServerError | None:
        """Tally the folds whose read is done, oldest first, without waiting. A failed read
        ends the harvest and is returned, for the server to record on the stream."""
        while self.folds and self.folds[0][1].done():
            try:
                self._tally_first()
            except ServerError as exc:
                return exc
        return None

    def _tally_first(self) -> None:
        """Tally the oldest fold (its read done) into the tally of its mark."""
        number, read, owners = self.folds.popleft()
        raw = read.result()[0]
        tally = next((t for mark, t in self.marks if mark >= number), self.tally)
        tally.add(raw, owners)

    def backlog(self) -> RudaFuture[list[memoryview]] | None:
        """The oldest fold's read when more than :data:`MAX_FOLDS` are in flight, else None."""
        return self.folds[0][1] if len(self.folds) > MAX_FOLDS else None

    def mark(self) -> int:
        """Mark the folds so far (a sync; no slot may be taken since the last fold) and
        return the mark, for :meth:`settle`. A mark with nothing to raise is let go."""
        self.marks.append((self.folded, self.tally))
        self.tally = Tally()
        while self.marks and not self.marks[0][1].count:
            if self.folds and self.folds[0][0] <= self.marks[0][0]:
                break  # a fold of its own is still being read
            self.marks.popleft()
        return self.folded

    def settle(self, mark: int) -> ValidationError | None:
        """Once the sync that made ``mark`` is done: tally the folds up to it (their reads are
        done) and return the error of every launch before it not yet raised, forgetting them.
        A failed read is raised."""
        while self.folds and self.folds[0][0] <= mark:
            self._tally_first()
        tally = Tally()
        while self.marks and self.marks[0][0] <= mark:
            tally.merge(self.marks.popleft()[1])
        return tally.error()


def _report(words: np.ndarray, kernel: str, names: tuple[str, ...]) -> OutOfBoundsReport:
    buf = int(words[1])
    name = names[buf] if buf < len(names) else f"buffer #{buf}"
    index = int(words[2]) | int(words[3]) << 32
    length = int(words[4]) | int(words[5]) << 32
    return OutOfBoundsReport(kernel, name, index, length)
