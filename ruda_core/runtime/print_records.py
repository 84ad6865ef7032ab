"""Print records on the host: :class:`PrintTable` turns the records kernels wrote into a print
buffer (:mod:`ruda_core.codegen.printf`) into the text ``printf`` would have written.

A buffer is ``u32`` words: the words asked for, the capacity, then records back to back, each
``[site, cube, unit, value words …]`` (:data:`~ruda_core.ir.printing.RECORD_HEADER_WORDS`).
Sites are numbered per server: a printing kernel's first site is the base it was given by
:meth:`PrintTable.register`. The records of consecutive launches of one kernel are ordered by
cube, then unit, each unit's in program order, as the NumPy device orders them; the formatting is
Python's ``%`` of the values as Python numbers, C's ``printf`` text for the conversions prints
allow. Decoding is vectorised with NumPy, a run of records of one width at a time.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Sequence

import numpy as np

from ..errors import RudaWarning
from ..ir import Elem
from ..ir.printing import RECORD_HEADER_WORDS, RECORD_TERMINATOR, value_words

__all__ = ["PrintTable"]

#: Record starts a block of :func:`_record_starts` predicts at once.
_BLOCK_RECORDS = 1 << 16

_VIEWS = {
    Elem.I32: np.int32,
    Elem.U32: np.uint32,
    Elem.F32: np.float32,
    Elem.I64: np.int64,
    Elem.U64: np.uint64,
    Elem.F64: np.float64,
}


class PrintTable:
    """The print sites of every printing kernel of one server: each a Python ``%`` format and
    the elements its record holds the values as. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._formats: list[str] = []
        self._elems: list[tuple[Elem, ...]] = []
        self._kernels: list[int] = []  #: the kernel (its first site) of each site

    def register(self, sites: Sequence[tuple[str, tuple[Elem, ...]]]) -> int:
        """Add a kernel's sites (in the order of its records' site numbers); returns the base
        its records' site numbers are offset by."""
        with self._lock:
            base = len(self._formats)
            for fmt, elems in sites:
                self._formats.append(fmt)
                self._elems.append(elems)
                self._kernels.append(base)
            return base

    def text(self, buffer: np.ndarray) -> tuple[str, int]:
        """The text of the records in ``buffer`` (``u32`` words as described above), and the
        number of words asked for that did not fit its capacity (records dropped)."""
        asked, capacity = int(buffer[0]), int(buffer[1])
        data = buffer[2 : 2 + min(asked, capacity)]
        if not data.size:
            return "", max(asked - capacity, 0)
        with self._lock:
            formats, elems, kernels = list(self._formats), list(self._elems), list(self._kernels)
        widths = np.array([RECORD_HEADER_WORDS + sum(map(value_words, e)) for e in elems])
        starts = _record_starts(data, widths)
        sites = data[starts].astype(np.int64)
        kernel = np.asarray(kernels)[sites]
        run = np.concatenate(([0], np.cumsum(kernel[1:] != kernel[:-1])))  # launches of a kernel
        order = np.lexsort((data[starts + 2], data[starts + 1], run))  # stable: program order
        texts = np.empty(starts.size, dtype=object)
        for site in np.unique(sites).tolist():
            mine = np.flatnonzero(sites == site)
            columns = []
            offset = RECORD_HEADER_WORDS
            for elem in elems[site]:
                n = value_words(elem)
                words = data[starts[mine][:, None] + offset + np.arange(n)]
                offset += n
                if elem is Elem.BOOL:
                    columns.append((words[:, 0] != 0).tolist())
                else:
                    column = np.ascontiguousarray(words).view(_VIEWS[elem])[:, 0]
                    columns.append(column.tolist())
            fmt = formats[site]
            texts[mine] = [fmt % row for row in zip(*columns, strict=True)] if columns else fmt
        return "".join(texts[order].tolist()), max(asked - capacity, 0)

    def write_out(self, buffer: np.ndarray) -> None:
        """Write the text of the records in ``buffer`` (a stream's whole print buffer) to
        ``sys.stdout``, with a :class:`~ruda_core.errors.RudaWarning` where records did not fit
        it."""
        text, dropped = self.text(buffer)
        sys.stdout.write(text)
        sys.stdout.flush()
        if dropped:
            warnings.warn(
                f"kernel print records of {dropped * 4} bytes did not fit the "
                f"{buffer.nbytes >> 20} MiB record buffer of their stream and were "
                "dropped; print less in one launch, or sync more often between printing launches",
                RudaWarning,
                stacklevel=2,
            )


def _record_starts(data: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """The word offsets of the records in ``data``: the first at 0, each next one its site's
    width further, up to a :data:`RECORD_TERMINATOR` (where the records that fit end). Runs of
    records of one width (a launch of a kernel with one print) are found a block at a time: the
    starts a run's width predicts are kept up to the first whose site has another width, where
    the next run begins."""
    n = data.size
    width_at = widths[np.minimum(data, widths.size - 1)]  # meaningful at record starts only
    width_at[data == RECORD_TERMINATOR] = 0
    found: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    at = 0
    while at < n:
        width = int(width_at[at])
        if width == 0:
            break
        starts = np.arange(at, min(n, at + width * _BLOCK_RECORDS), width)
        other = np.flatnonzero(width_at[starts] != width)
        if other.size:
            found.append(starts[: other[0]])
            at = int(starts[other[0]])
        else:
            found.append(starts)
            at = int(starts[-1]) + width
    return np.concatenate(found)
